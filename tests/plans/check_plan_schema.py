#!/usr/bin/env python3
"""Validate plan files (tapestry-plan JSON) against docs/tapestry-plan.schema.json.

Each file is validated against the schema (JSON Schema draft 2020-12, the
`jsonschema` package: Debian python3-jsonschema); the embedded "graph" against
docs/tapestry-project.schema.json, which the plan schema refers to by relative
path. A file the schema accepts is then cross-checked for what a schema cannot
say and parse_plan (engine/plan/plan_file.cpp) refuses:

  * as many devices as the cluster's nodes × devices_per_node, each on a node it has;
  * every device, buffer and step index in range, and every dependency on an
    earlier step;
  * every box two coordinate lists of one rank with start <= end, a region's box
    of its buffer's rank;
  * a buffer's bytes equal to its region's size times its dtype's size;
  * buffers and outputs naming tensors of the embedded graph.

Usage:
  check_plan_schema.py PLAN...                      check these plan files
  check_plan_schema.py --make CLI SOURCE_DIR WORKDIR [PLAN...]
                                                    first make plans with the CLI
                                                    (`tapestry plan … -o`) from
                                                    SOURCE_DIR/projects into WORKDIR,
                                                    then check them (and any PLAN)
  check_plan_schema.py --schema FILE …              use another plan schema (the
                                                    project schema is looked for
                                                    beside it)

Exit status 0 and "N plans valid" when everything passes; otherwise one line per
problem, "FILE: JSON-PATH: message", and exit status 1 (2 for a bad schema, a
missing dependency or bad usage).
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "docs" / "tapestry-plan.schema.json"
PROJECT_SCHEMA_NAME = "tapestry-project.schema.json"

DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "bool": 1}

# The plans --make writes: (file, project, arguments after the project). The first
# four are the baselines; the rest reach the schema's optional fields (a fused
# kernel, an all_gather, a reduce_scatter, transfers and a tree all_reduce that
# cross nodes).
MADE_PLANS = [
    ("mlp_dp2.plan.json", "mlp.tapestry.json", ["--devices", "2", "--baseline", "dp"]),
    ("gpt2_block_tp4.plan.json", "gpt2_block.tapestry.json", ["--devices", "4", "--baseline", "tp"]),
    ("gpt2_block_dp2xtp4.plan.json", "gpt2_block.tapestry.json", ["--devices", "8", "--baseline", "dpxtp", "--tp", "4"]),
    ("convnet_pp2.plan.json", "convnet.tapestry.json", ["--devices", "2", "--baseline", "pp"]),
    ("mlp_fused2.plan.json", "mlp.tapestry.json", ["--devices", "2", "--pipeline", "fuse"]),
    ("gpt2_block_all_gather2.plan.json", "gpt2_block.tapestry.json",
     ["--devices", "2", "--pipeline", "shard", "--shard", "ln_1:0=2", "--shard", "c_attn:2=2"]),
    ("mlp_reduce_scatter2.plan.json", "mlp.tapestry.json",
     ["--devices", "2", "--pipeline", "shard", "--shard", "fc4:2=2", "--shard", "fc4.reduce:0=2"]),
    ("gpt2_block_tp16_2nodes.plan.json", "gpt2_block.tapestry.json",
     ["--devices", "16", "--nodes", "2", "--baseline", "tp"]),
]


def json_path(parts):
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(p)):
            out += f".{p}"
        else:
            out += "[" + json.dumps(p) + "]"
    return out


def schema_message(err):
    """jsonschema's message, made readable where it would print the whole instance."""
    if err.validator == "not" and isinstance(err.validator_value, dict) and "anyOf" in err.validator_value:
        names = [n for alt in err.validator_value["anyOf"] for n in alt.get("required", [])
                 if isinstance(err.instance, dict) and n in err.instance]
        kind = err.instance.get("kind") if isinstance(err.instance, dict) else None
        return f"{', '.join(repr(n) for n in names)} does not belong in a {kind} step"
    msg = err.message
    return msg if len(msg) <= 240 else msg[:237] + "..."


def make_validator(schema_path):
    """A draft 2020-12 validator for the plan schema, the project schema registered beside it."""
    import jsonschema

    schema = json.loads(Path(schema_path).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    project_path = Path(schema_path).parent / PROJECT_SCHEMA_NAME
    project = json.loads(project_path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(project)
    base = schema.get("$id", "")
    uris = {project.get("$id", ""), base.rsplit("/", 1)[0] + "/" + PROJECT_SCHEMA_NAME if "/" in base else PROJECT_SCHEMA_NAME}
    uris.discard("")
    try:  # jsonschema >= 4.18
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        resource = Resource.from_contents(project, default_specification=DRAFT202012)
        registry = Registry().with_resources([(u, resource) for u in uris])
        return jsonschema.Draft202012Validator(schema, registry=registry)
    except ImportError:  # older jsonschema (Debian bookworm's 4.10)
        resolver = jsonschema.RefResolver.from_schema(schema, store={u: project for u in uris})
        return jsonschema.Draft202012Validator(schema, resolver=resolver)


def box_problem(box):
    start, end = box
    if len(start) != len(end):
        return "expected [start, end], two coordinate lists of one rank"
    if any(e < s for s, e in zip(start, end)):
        return "coordinates must have start <= end"
    return None


def box_size(box):
    n = 1
    for s, e in zip(*box):
        n *= e - s
    return n


def cross_check(doc):
    """What the schema cannot express and parse_plan refuses, as (path parts, message)."""
    problems = []
    cluster = doc["cluster"]
    devices, buffers, steps = doc["devices"], doc["buffers"], doc["steps"]
    ndev, nbuf, nsteps = len(devices), len(buffers), len(steps)
    want = cluster["nodes"] * cluster["devices_per_node"]
    if ndev != want:  # parse_plan stops here too: every device index would be suspect
        return [(["devices"], f"{ndev} devices, but the cluster has {want}")]
    tensors = {t.get("id") for t in doc["graph"].get("tensors", []) if isinstance(t, dict)}

    def index(value, limit, parts, what):
        if value >= limit:
            problems.append((parts, f"{what} {value} is out of range (the plan has {limit})"))
            return False
        return True

    def check_box(box, parts):
        p = box_problem(box)
        if p:
            problems.append((parts, p))
        return p is None

    for d, dev in enumerate(devices):
        if dev["node"] >= cluster["nodes"]:
            problems.append((["devices", d, "node"], f"node {dev['node']} is out of range (the cluster has {cluster['nodes']})"))
        for k, s in enumerate(dev["steps"]):
            index(s, nsteps, ["devices", d, "steps", k], "step")
    for b, buf in enumerate(buffers):
        base = ["buffers", b]
        index(buf["device"], ndev, base + ["device"], "device")
        if buf["kind"] != "workspace" and buf["tensor"] not in tensors:
            problems.append((base + ["tensor"], f"'{buf['tensor']}' is not a tensor of the plan's graph"))
        if check_box(buf["region"], base + ["region"]):
            size = box_size(buf["region"]) * DTYPE_BYTES[buf["dtype"]]
            if buf["bytes"] != size:
                problems.append((base + ["bytes"], f"{buf['bytes']} is not the size of its region ({size} bytes)"))
        for key in ("first", "last"):
            if buf[key] > nsteps:
                problems.append((base + [key], f"step {buf[key]} is out of range (the plan has {nsteps})"))
    for i, step in enumerate(steps):
        base = ["steps", i]
        index(step["device"], ndev, base + ["device"], "device")
        if "peer" in step:
            index(step["peer"], ndev, base + ["peer"], "device")
        for k, d in enumerate(step.get("participants", [])):
            index(d, ndev, base + ["participants", k], "device")
        for k, d in enumerate(step["deps"]):
            if d >= i:
                problems.append((base + ["deps", k], f"step {d} does not come before step {i}"))
        for key in ("reads", "writes"):
            for k, r in enumerate(step[key]):
                rp = base + [key, k]
                if index(r["buffer"], nbuf, rp + ["buffer"], "buffer") and check_box(r["box"], rp + ["box"]):
                    if len(r["box"][0]) != len(buffers[r["buffer"]]["region"][0]):
                        problems.append((rp + ["box"], f"rank differs from buffer {r['buffer']}'s"))
    for o, out in enumerate(doc["outputs"]):
        base = ["outputs", o]
        index(out["buffer"], nbuf, base + ["buffer"], "buffer")
        check_box(out["box"], base + ["box"])
        if out["tensor"] not in tensors:
            problems.append((base + ["tensor"], f"'{out['tensor']}' is not a tensor of the plan's graph"))
    return problems


def make_plans(cli, source_dir, workdir):
    """Runs `tapestry plan` for MADE_PLANS; returns (files, problems as (file, message))."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    files, problems = [], []
    for name, project, args in MADE_PLANS:
        out = workdir / name
        if out.exists():
            out.unlink()
        cmd = [cli, "plan", str(Path(source_dir) / "projects" / project), "--target", "h100", *args, "-o", str(out)]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            problems.append((out, f"`{' '.join(cmd)}` did not run: {e}"))
            continue
        if run.returncode != 0 or not out.is_file():
            last = (run.stderr.strip() or run.stdout.strip()).splitlines()[-1:] or ["no output"]
            problems.append((out, f"`{' '.join(cmd)}` exited {run.returncode}, no certified plan: {last[0]}"))
            continue
        files.append(out)
    return files, problems


def main(argv):
    ap = argparse.ArgumentParser(description="Validate plan files against docs/tapestry-plan.schema.json.")
    ap.add_argument("paths", nargs="*", help="plan files")
    ap.add_argument("--make", nargs=3, metavar=("CLI", "SOURCE_DIR", "WORKDIR"),
                    help="first make plans with the tapestry CLI from SOURCE_DIR/projects into WORKDIR")
    ap.add_argument("--schema", default=str(SCHEMA), help="plan schema file (the project schema beside it)")
    args = ap.parse_args(argv)
    if not args.paths and not args.make:
        ap.error("give plan files, or --make CLI SOURCE_DIR WORKDIR")

    try:
        import jsonschema
    except ImportError:
        print("check_plan_schema: the jsonschema package is missing (Debian: apt-get install python3-jsonschema)",
              file=sys.stderr)
        return 2
    try:
        validator = make_validator(args.schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print(f"{args.schema}: not a usable draft 2020-12 schema (with {PROJECT_SCHEMA_NAME} beside it): {e}",
              file=sys.stderr)
        return 2

    files = [Path(p) for p in args.paths]
    n_problems = 0
    if args.make:
        made, failures = make_plans(*args.make)
        for f, msg in failures:
            print(f"{f}: $: {msg}")
        n_problems += len(failures)
        files = made + files

    for f in files:
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            print(f"{f}: $: cannot read as JSON: {e}")
            n_problems += 1
            continue
        problems = [(list(err.absolute_path), schema_message(err)) for err in validator.iter_errors(doc)]
        if not problems:
            problems = cross_check(doc)
        for parts, msg in sorted(problems, key=lambda p: [(0, x, "") if isinstance(x, int) else (1, 0, str(x)) for x in p[0]]):
            print(f"{f}: {json_path(parts)}: {msg}")
        n_problems += len(problems)

    checked = len(files) + (len(failures) if args.make else 0)
    if n_problems:
        print(f"{n_problems} problem(s) in {checked} plan file(s)")
        return 1
    if not files:
        print("check_plan_schema: no plan files", file=sys.stderr)
        return 1
    print(f"{len(files)} plans valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
