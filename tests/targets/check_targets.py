#!/usr/bin/env python3
"""Validate the hardware targets in resources/targets/.

Every *.json there except target.schema.json is validated against the schema
(JSON Schema draft 2020-12, the `jsonschema` package: Debian python3-jsonschema)
and then cross-checked:

  * "name" equals the file stem;
  * every "source" id (figures, efficiency curves) is a key of "sources";
  * every efficiency curve's sizes strictly increase;
  * link names and cluster names are unique;
  * every link a cluster names (intra_node, inter_node) exists.

A source that nothing cites (no "source" field, and no other source's note
mentions its id) is reported as a warning, not an error.

Usage:
  check_targets.py                 check resources/targets/ of this checkout
  check_targets.py PATH...         check these files, or the *.json in these folders
  check_targets.py --schema FILE   use another schema

Exit status 0 and "N targets valid" when everything passes; otherwise one line
per problem, "FILE: JSON-PATH: message", and exit status 1 (2 for a bad schema
or missing dependency).
"""

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGETS = REPO / "resources" / "targets"
SCHEMA_NAME = "target.schema.json"


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
    if err.validator == "not" and isinstance(err.validator_value, dict) and "required" in err.validator_value:
        names = ", ".join(repr(n) for n in err.validator_value["required"])
        return f"{names} must be absent (it is listed in \"measured\", or the kind does not allow it)"
    msg = err.message
    return msg if len(msg) <= 240 else msg[:237] + "..."


def target_files(paths):
    files = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files += sorted(f for f in p.glob("*.json") if f.name != SCHEMA_NAME)
        else:
            files.append(p)
    return files


def cross_check(doc):
    """Problems the schema cannot express, as (path parts, message)."""
    problems = []
    if not isinstance(doc, dict):
        return problems, []
    sources = doc.get("sources") if isinstance(doc.get("sources"), dict) else {}
    cited = set()

    def cite(value, parts):
        if isinstance(value, str):
            cited.add(value)
            if value not in sources:
                problems.append((parts, f"source {value!r} is not a key of \"sources\""))

    def walk_figures(node, parts):
        # Any object with a "value" and a "source" is a figure.
        if isinstance(node, dict):
            if "value" in node and "source" in node:
                cite(node["source"], parts + ["source"])
            for k, v in node.items():
                if k != "source":
                    walk_figures(v, parts + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk_figures(v, parts + [i])

    device = doc.get("device") if isinstance(doc.get("device"), dict) else {}
    for key in ("peak_flops", "memory_bytes", "memory_bandwidth", "launch_overhead", "workspace"):
        if key in device:
            walk_figures(device[key], ["device", key])

    efficiency = device.get("efficiency") if isinstance(device.get("efficiency"), dict) else {}
    for cls, curve in efficiency.items():
        if not isinstance(curve, dict):
            continue
        base = ["device", "efficiency", cls]
        cite(curve.get("source"), base + ["source"])
        points = curve.get("points")
        if isinstance(points, list):
            prev = None
            for i, pt in enumerate(points):
                if not (isinstance(pt, list) and pt and isinstance(pt[0], (int, float))):
                    continue
                if prev is not None and not pt[0] > prev:
                    problems.append((base + ["points", i, 0],
                                     f"size {pt[0]:g} does not exceed the previous size {prev:g} (sizes must strictly increase)"))
                prev = pt[0]

    links = doc.get("links") if isinstance(doc.get("links"), list) else []
    link_names = set()
    for i, link in enumerate(links):
        if not isinstance(link, dict):
            continue
        name = link.get("name")
        if name in link_names:
            problems.append((["links", i, "name"], f"link name {name!r} is used twice"))
        link_names.add(name)
        for key in ("bandwidth", "latency", "efficiency"):
            if key in link:
                walk_figures(link[key], ["links", i, key])

    clusters = doc.get("clusters") if isinstance(doc.get("clusters"), list) else []
    cluster_names = set()
    for i, cluster in enumerate(clusters):
        if not isinstance(cluster, dict):
            continue
        name = cluster.get("name")
        if name in cluster_names:
            problems.append((["clusters", i, "name"], f"cluster name {name!r} is used twice"))
        cluster_names.add(name)
        for key in ("intra_node", "inter_node"):
            ref = cluster.get(key)
            if isinstance(ref, str) and ref not in link_names:
                problems.append((["clusters", i, key], f"link {ref!r} is not defined in \"links\""))

    warnings = []
    for sid in sources:
        if sid in cited:
            continue
        mentioned = any(isinstance(s, dict) and sid != other and sid in str(s.get("note", ""))
                        for other, s in sources.items())
        if not mentioned:
            warnings.append((["sources", sid], "source is never cited"))
    return problems, warnings


def main(argv):
    ap = argparse.ArgumentParser(description="Validate resources/targets/*.json against the target schema.")
    ap.add_argument("paths", nargs="*", help="target files or folders (default: resources/targets)")
    ap.add_argument("--schema", default=str(TARGETS / SCHEMA_NAME), help="schema file")
    args = ap.parse_args(argv)

    try:
        import jsonschema
    except ImportError:
        print("check_targets: the jsonschema package is missing (Debian: apt-get install python3-jsonschema)",
              file=sys.stderr)
        return 2

    try:
        schema = json.loads(Path(args.schema).read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print(f"{args.schema}: not a usable draft 2020-12 schema: {e}", file=sys.stderr)
        return 2
    validator = jsonschema.Draft202012Validator(schema)

    files = target_files(args.paths or [TARGETS])
    if not files:
        print("check_targets: no target files found", file=sys.stderr)
        return 1

    n_problems = 0
    for f in files:
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            print(f"{f}: $: cannot read as JSON: {e}")
            n_problems += 1
            continue
        problems = []
        for err in validator.iter_errors(doc):
            problems.append((list(err.absolute_path), schema_message(err)))
        if isinstance(doc, dict) and doc.get("name") != f.stem:
            problems.append((["name"], f"name {doc.get('name')!r} does not equal the file stem {f.stem!r}"))
        cross, warnings = cross_check(doc) if isinstance(doc, dict) else ([], [])
        problems += cross
        for parts, msg in sorted(problems, key=lambda p: [str(x) for x in p[0]]):
            print(f"{f}: {json_path(parts)}: {msg}")
        for parts, msg in warnings:
            print(f"{f}: {json_path(parts)}: warning: {msg}")
        n_problems += len(problems)

    if n_problems:
        print(f"{n_problems} problem(s) in {len(files)} target file(s)")
        return 1
    print(f"{len(files)} targets valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
