#!/usr/bin/env python3
"""Bad-input campaign for the `tapestry` command line (issue 14, "How it is checked").

Generates mutated project files, .npy arrays, ONNX models and session files,
deterministically from --seed, and runs each through every CLI command that
reads it, each child under a virtual-memory limit (ulimit -v) and a timeout.
Counts, per command, the exit codes, CRASHES (a signal, exit >= 128, or a
sanitizer / "internal error" / "terminate called" message on stderr), HANGS
(the timeout), SILENT failures (exit 1 with no "tapestry:" line on stderr),
refused session files that were MODIFIED, and files written outside the
export folder (ESCAPED).  Every finding is saved under WORK/findings/ with
its inputs and a one-line reproducer.

Python 3 standard library only.  Case i of seed S is the same in every run,
so a run of N cases is a prefix of a run of M > N cases.

  python3 tests/campaign/bad_inputs.py --cli build/app/tapestry --source . --cases 300

Exit status: 0 when no crash, hang or other finding, 1 otherwise, 2 usage.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import sqlite3
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

# ----------------------------------------------------------------------------
# Interesting values
# ----------------------------------------------------------------------------

BIG_INTS = [0, -1, 1, 2, 3, 7, 2**15, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1,
            2**40, 2**53, 2**53 + 1, 2**61, 2**62, 2**62 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64,
            -2**31, -2**32, -2**62, -2**63, -2**63 - 1, 10**30]
HUGE_SHAPES = [[2**31, 2**31], [2**32, 2**32], [2**62], [2**63 - 1], [2**63], [2**31], [2**40],
               [2**21, 2**21, 2**21], [2**16, 2**16, 2**16, 2**16], [3, 2**61], [2**62, 2],
               [8, 2**27], [2**30, 4], [0], [0, 5], [-1], [-5, 3], [1] * 64, [2] * 70, [],
               [2**33, 2**31], [2**31 - 1, 2**31 - 1]]
DTYPES = ["f32", "f16", "bf16", "i32", "i64", "bool", "f64", "F32", "float32", "u8", "", "f32 ",
          "i8", "complex64", "\u00e9", "null"]
ROLES = ["input", "parameter", "intermediate", "output", "constant", "Input", "", "weight", "state"]
KINDS = ["abs", "add", "attention", "avg_pool2d", "batchnorm", "cast", "clip", "concat", "conv2d",
         "div", "elu", "embedding", "erf", "exp", "fused", "gather", "gelu", "hard_sigmoid",
         "hard_swish", "layernorm", "leaky_relu", "linear", "log", "matmul", "max", "max_pool2d",
         "min", "move", "mul", "neg", "partial_matmul", "pow", "reciprocal", "reduce_max",
         "reduce_mean", "reduce_sum", "relu", "reshape", "rmsnorm", "selu", "sigmoid", "slice",
         "softmax", "softplus", "softsign", "sqrt", "sub", "tanh", "transpose",
         "unknown_kind", "", "RELU", "relu ", "conv3d"]
PARAM_NAMES = ["axis", "axes", "perm", "shape", "starts", "ends", "steps", "kernel", "stride",
               "padding", "dilation", "groups", "heads", "scale", "causal", "to", "epsilon",
               "keepdims", "exponent", "alpha", "beta", "gamma", "min", "max", "approximate",
               "mode", "collective", "count", "bogus"]
RAW_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "-0", "1e-400", "0.0",
               "18446744073709551616", "-9223372036854775809", "9223372036854775807",
               "123456789012345678901234567890", "1.0e+", "0x10", "01", "+1", ".5", "1E400"]
INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                b"\xe2\x82", b"\x80", b"\xfe\xfe\xff\xff", b"\x00"]


def special_data_paths(case_dir):
    return ["/dev/zero", "/dev/urandom", "/dev/null", "/proc/self/environ", "/proc/self/mem",
            "/etc/passwd", "../../../../../../etc/passwd", "../outside.npy", "..", ".", "/",
            "fifo.npy", "missing.npy", "subdir", "link_zero.npy", "link_out.npy",
            "", "a" * 5000, "x\u0000y.npy", "w.npy/", "C:\\\\w.npy", "file:///etc/passwd",
            os.path.join(case_dir, "proj", "w.npy"), "~/w.npy", "*.npy", "w.npy\n"]


# ----------------------------------------------------------------------------
# JSON text with raw pieces (duplicate keys, non-standard numbers, bad UTF-8)
# ----------------------------------------------------------------------------

class Raw:
    """A piece of JSON text inserted as is (bytes)."""

    def __init__(self, data):
        self.data = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")


class DupObj:
    """An object whose key/value pairs may repeat keys."""

    def __init__(self, pairs):
        self.pairs = pairs


def dump(v, out):
    if isinstance(v, Raw):
        out.append(v.data)
    elif isinstance(v, DupObj):
        out.append(b"{")
        for i, (k, x) in enumerate(v.pairs):
            if i:
                out.append(b", ")
            out.append(json.dumps(k).encode())
            out.append(b": ")
            dump(x, out)
        out.append(b"}")
    elif isinstance(v, dict):
        out.append(b"{")
        for i, (k, x) in enumerate(v.items()):
            if i:
                out.append(b", ")
            out.append(json.dumps(k).encode())
            out.append(b": ")
            dump(x, out)
        out.append(b"}")
    elif isinstance(v, list):
        out.append(b"[")
        for i, x in enumerate(v):
            if i:
                out.append(b", ")
            dump(x, out)
        out.append(b"]")
    else:
        out.append(json.dumps(v).encode())


def to_bytes(v):
    out = []
    dump(v, out)
    return b"".join(out)


# ----------------------------------------------------------------------------
# Seeds
# ----------------------------------------------------------------------------

def npy_bytes(descr, shape, data, fortran=False, version=(1, 0), header=None):
    if header is None:
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
            descr, "True" if fortran else "False", repr(tuple(shape)))
    hb = header.encode("latin-1", "replace") if isinstance(header, str) else header
    lenfield = 2 if version[0] == 1 else 4
    pre = 6 + 2 + lenfield
    pad = (64 - (pre + len(hb) + 1) % 64) % 64
    hb = hb + b" " * pad + b"\n"
    lf = struct.pack("<H", len(hb) & 0xFFFF) if lenfield == 2 else struct.pack("<I", len(hb))
    return b"\x93NUMPY" + bytes(version) + lf + hb + data


def tiny_projects():
    """Small valid projects that run in milliseconds; 'data' files named here are written
    beside the project by write_project()."""
    t = lambda i, dt, sh, role, **kw: dict({"id": i, "dtype": dt, "shape": sh, "role": role}, **kw)
    op = lambda i, k, ins, outs, **kw: dict({"id": i, "kind": k, "inputs": ins, "outputs": outs}, **kw)
    P = lambda name, tensors, ops: {"format": "tapestry-project", "version": 1, "name": name,
                                    "tensors": tensors, "operations": ops}
    projects = []
    projects.append(P("tiny_linear", [
        t("x", "f32", [2, 3], "input", name="inp"),
        t("w", "f32", [3, 4], "parameter", data="w.npy"),
        t("b", "f32", [4], "parameter", value=[1, 2, 3, 4]),
        t("h", "f32", [2, 4], "intermediate"),
        t("y", "f32", [2, 4], "output")], [
        op("fc", "linear", {"x": "x", "w": "w", "bias": "b"}, {"y": "h"},
           shards=[{"id": "fc/0", "index": {"start": [0, 0], "end": [1, 4]}},
                   {"id": "fc/1", "index": {"start": [1, 0], "end": [2, 4]}}]),
        op("act", "relu", {"x": "h"}, {"y": "y"})]))
    projects.append(P("tiny_conv", [
        t("x", "f32", [1, 2, 5, 5], "input", name="inp"),
        t("w", "f32", [4, 2, 3, 3], "parameter"),
        t("h", "f32", [1, 4, 3, 3], "intermediate"),
        t("p", "f32", [1, 4, 1, 1], "intermediate"),
        t("y", "f32", [1, 4, 1, 1], "output")], [
        op("conv", "conv2d", {"x": "x", "w": "w"}, {"y": "h"}, params={"stride": [1, 1]}),
        op("pool", "max_pool2d", {"x": "h"}, {"y": "p"}, params={"kernel": [3, 3]}),
        op("sm", "softmax", {"x": "p"}, {"y": "y"}, params={"axis": 1})]))
    projects.append(P("tiny_shape", [
        t("x", "f16", [2, 3, 4], "input", name="inp"),
        t("r", "f16", [6, 4], "intermediate"),
        t("tr", "f16", [4, 6], "intermediate"),
        t("s", "f16", [2, 6], "intermediate"),
        t("y", "f32", [2, 6], "output")], [
        op("rs", "reshape", {"x": "x"}, {"y": "r"}, params={"shape": [6, 4]}),
        op("tp", "transpose", {"x": "r"}, {"y": "tr"}, params={"perm": [1, 0]}),
        op("sl", "slice", {"x": "tr"}, {"y": "s"}, params={"starts": [1], "ends": [3], "axes": [0]}),
        op("cs", "cast", {"x": "s"}, {"y": "y"}, params={"to": "f32"})]))
    projects.append(P("tiny_embed", [
        t("ids", "i64", [2, 3], "input", name="inp"),
        t("table", "f32", [10, 4], "parameter", data="w.npy"),
        t("e", "f32", [2, 3, 4], "intermediate"),
        t("g", "f32", [4], "parameter"),
        t("y", "f32", [2, 3, 4], "output")], [
        op("emb", "embedding", {"ids": "ids", "table": "table"}, {"y": "e"}),
        op("ln", "layernorm", {"x": "e", "gamma": "g"}, {"y": "y"}, params={"axis": -1})]))
    projects.append(P("tiny_attention", [
        t("q", "bf16", [1, 4, 8], "input", name="inp"),
        t("k", "bf16", [1, 4, 8], "parameter"),
        t("v", "bf16", [1, 4, 8], "parameter"),
        t("a", "bf16", [1, 4, 8], "intermediate"),
        t("m", "bf16", [1, 4, 8], "intermediate"),
        t("y", "bf16", [1, 4], "output")], [
        op("att", "attention", {"q": "q", "k": "k", "v": "v"}, {"y": "a"}, params={"heads": 2}),
        op("mm", "mul", {"a": "a", "b": "v"}, {"y": "m"}),
        op("rd", "reduce_sum", {"x": "m"}, {"y": "y"}, params={"axes": [2], "keepdims": False})]))
    return projects


TINY_DATA = {  # the .npy each tiny project's 'data' names (w.npy), valid
    "tiny_linear": ("<f4", (3, 4)),
    "tiny_embed": ("<f4", (10, 4)),
}
TINY_INPUT = {  # the input tensor (name 'inp') of each tiny project
    "tiny_linear": ("<f4", (2, 3)),
    "tiny_conv": ("<f4", (1, 2, 5, 5)),
    "tiny_shape": ("<f2", (2, 3, 4)),
    "tiny_embed": ("<i8", (2, 3)),
    "tiny_attention": ("<f4", (1, 4, 8)),   # bf16 tensors take float32 data? refused or converted
}
ITEMSIZE = {"<f4": 4, "<f2": 2, "<f8": 8, "<i4": 4, "<i8": 8, "|b1": 1, "<u2": 2, "|u1": 1,
            ">f4": 4, "<c8": 8}


def valid_npy(rng, descr, shape):
    n = 1
    for d in shape:
        n *= d
    size = ITEMSIZE.get(descr, 4)
    if descr.endswith("i8") or descr.endswith("i4"):
        data = b"".join(struct.pack("<" + descr[-2:].replace("i8", "q").replace("i4", "i"),
                                    rng.randrange(0, 10)) for _ in range(n))
    elif descr == "<f4":
        data = struct.pack("<%df" % n, *[rng.uniform(-2, 2) for _ in range(n)])
    else:
        data = bytes(rng.randrange(0, 64) for _ in range(n * size))
    return npy_bytes(descr, shape, data)


class Seeds:
    def __init__(self, source):
        self.projects = []        # (label, dict)
        self.project_texts = []   # (label, bytes) unparsable seeds (malformed corpus)
        self.npy = []             # (label, bytes)
        self.onnx = []            # (label, bytes)
        src = os.path.abspath(source)
        for d in ["projects", "tests/fuzz/corpus", "tests/data/malformed"]:
            full = os.path.join(src, d)
            if not os.path.isdir(full):
                continue
            for f in sorted(os.listdir(full)):
                if not f.endswith(".json"):
                    continue
                raw = open(os.path.join(full, f), "rb").read()
                if len(raw) > 4_000_000:
                    continue
                try:
                    self.projects.append((d + "/" + f, json.loads(raw)))
                except Exception:
                    self.project_texts.append((d + "/" + f, raw))
        for p in tiny_projects():
            self.projects.append(("tiny:" + p["name"], p))
        self.tiny = [(l, p) for (l, p) in self.projects if l.startswith("tiny:")]
        self.real = [(l, p) for (l, p) in self.projects if l.startswith("projects/")]
        tests = os.path.join(src, "tests")
        for root, dirs, files in os.walk(tests):
            dirs.sort()
            for f in sorted(files):
                path = os.path.join(root, f)
                try:
                    if os.path.getsize(path) > 2_000_000:
                        continue
                except OSError:
                    continue
                rel = os.path.relpath(path, src)
                if f.endswith(".npy"):
                    self.npy.append((rel, open(path, "rb").read()))
                elif f.endswith(".onnx"):
                    self.onnx.append((rel, open(path, "rb").read()))


# ----------------------------------------------------------------------------
# Project mutations
# ----------------------------------------------------------------------------

def walk(v, path=()):
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from walk(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from walk(x, path + (i,))


def get(root, path):
    for p in path:
        root = root[p]
    return root


def put(root, path, value):
    if not path:
        return value
    get(root, path[:-1])[path[-1]] = value
    return root


def random_value(rng, depth=0):
    r = rng.randrange(10 if depth < 2 else 6)
    if r == 0:
        return None
    if r == 1:
        return rng.choice([True, False])
    if r == 2:
        return rng.choice(BIG_INTS)
    if r == 3:
        return rng.choice([0.5, -1e308, 1e-320, 3.14159, -0.0])
    if r == 4:
        return rng.choice(["", "x", "f32", "input", "w.npy", "fc1", "\u202e\u0000", "A" * 300])
    if r == 5:
        return Raw(rng.choice(RAW_NUMBERS))
    if r in (6, 7):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["start", "end", "tensor", "range", "id", "x", "y", "matrix"]):
            random_value(rng, depth + 1) for _ in range(rng.randrange(3))}


def int_lists(doc):
    return [(p, v) for p, v in walk(doc) if isinstance(v, list) and v and
            all(isinstance(x, int) and not isinstance(x, bool) for x in v)]


def objects(doc):
    return [(p, v) for p, v in walk(doc) if isinstance(v, dict)]


def tensor_ids(doc):
    try:
        return [t["id"] for t in doc["tensors"] if isinstance(t, dict) and isinstance(t.get("id"), str)]
    except Exception:
        return []


def mutate_project_tree(rng, doc, case_dir, notes):
    """One structural mutation of a parsed project; returns the new root."""
    m = rng.randrange(22)
    objs = objects(doc)
    if m == 0 and objs:                              # delete a key
        p, o = rng.choice(objs)
        if o:
            k = rng.choice(list(o))
            del o[k]
            notes.append("delete %s" % "/".join(map(str, p + (k,))))
            return doc
    if m == 1 and objs:                              # duplicate a key
        p, o = rng.choice(objs)
        if o:
            pairs = list(o.items())
            k, v = rng.choice(pairs)
            pairs.insert(rng.randrange(len(pairs) + 1), (k, random_value(rng) if rng.random() < .5 else v))
            notes.append("duplicate key %s" % "/".join(map(str, p + (k,))))
            return put(doc, p, DupObj(pairs))
    if m == 2:                                       # change a type
        nodes = [p for p, _ in walk(doc) if p]
        if nodes:
            p = rng.choice(nodes)
            notes.append("retype %s" % "/".join(map(str, p)))
            return put(doc, p, random_value(rng))
    if m in (3, 4, 5):                               # an interesting dimension / coordinate
        lists = int_lists(doc)
        if lists:
            p, l = rng.choice(lists)
            i = rng.randrange(len(l))
            l[i] = rng.choice(BIG_INTS)
            notes.append("int %s[%d]=%d" % ("/".join(map(str, p)), i, l[i]))
            return doc
    if m == 6:                                       # a huge/odd shape
        ts = [t for t in (doc.get("tensors") or []) if isinstance(t, dict)] if isinstance(doc, dict) else []
        if ts:
            t = rng.choice(ts)
            sh = list(rng.choice(HUGE_SHAPES))
            if "range" in t and rng.random() < .5:
                t["range"] = {"start": [0] * len(sh), "end": sh}
            else:
                t["shape"] = sh
            notes.append("shape %s=%s" % (t.get("id"), sh))
            return doc
    if m == 7:                                       # wrong rank
        lists = int_lists(doc)
        if lists:
            p, l = rng.choice(lists)
            if rng.random() < .5 and l:
                l.pop(rng.randrange(len(l)))
            else:
                for _ in range(rng.choice([1, 1, 2, 60])):
                    l.insert(rng.randrange(len(l) + 1), rng.choice([0, 1, 2, 2**31]))
            notes.append("rank %s" % "/".join(map(str, p)))
            return doc
    if m == 8:                                       # unknown kind / dtype / role
        field, values = rng.choice([("kind", KINDS), ("dtype", DTYPES), ("role", ROLES)])
        cands = [(p, o) for p, o in objs if field in o]
        if cands:
            p, o = rng.choice(cands)
            o[field] = rng.choice(values)
            notes.append("%s=%r" % (field, o[field]))
            return doc
    if m == 9:                                       # dangling / wrong references
        ops = [o for o in (doc.get("operations") or []) if isinstance(o, dict)] if isinstance(doc, dict) else []
        ids = tensor_ids(doc)
        if ops:
            o = rng.choice(ops)
            side = rng.choice(["inputs", "outputs"])
            ports = o.get(side)
            if isinstance(ports, dict) and ports:
                k = rng.choice(list(ports))
                choices = ["ghost", "", None] + ids
                if side == "outputs":
                    # make an operation write its own input (a cycle) or another's output
                    ins = o.get("inputs")
                    if isinstance(ins, dict) and ins:
                        choices.append(rng.choice(list(ins.values())))
                ports[k] = rng.choice(choices)
                if rng.random() < .3:
                    ports[rng.choice(["extra", "b", "mask", "bias"])] = rng.choice(ids + ["ghost"])
                notes.append("ref %s.%s.%s=%r" % (o.get("id"), side, k, ports[k]))
                return doc
    if m in (10, 11):                                # shards: wrong ranks, overlaps, gaps
        ops = [o for o in (doc.get("operations") or []) if isinstance(o, dict)] if isinstance(doc, dict) else []
        if ops:
            o = rng.choice(ops)
            shards = o.get("shards")
            r = rng.randrange(6)
            if not isinstance(shards, list) or not shards:
                isp = o.get("index_space") or {"start": [0, 0], "end": [2, 2]}
                end = isp.get("end", [2]) if isinstance(isp, dict) else [2]
                start = isp.get("start", [0] * len(end)) if isinstance(isp, dict) else [0]
                o["shards"] = [{"id": "%s/%d" % (o.get("id"), i),
                                "index": {"start": list(start), "end": list(end)}} for i in range(2)]
                if rng.random() < .5:
                    o["shards"][0]["index"]["end"] = o["shards"][0]["index"]["end"][:1]
                notes.append("shards added to %s (overlapping)" % o.get("id"))
                return doc
            s = rng.choice(shards)
            if r == 0:
                shards.append(json.loads(json.dumps(s)) if isinstance(s, dict) else s)
                notes.append("shard duplicated (overlap)")
            elif r == 1:
                shards.remove(s)
                notes.append("shard removed (gap)")
            elif r == 2 and isinstance(s, dict) and isinstance(s.get("index"), dict):
                idx = s["index"]
                for key in ("start", "end"):
                    if isinstance(idx.get(key), list):
                        idx[key] = idx[key][:-1] if rng.random() < .5 else idx[key] + [1]
                notes.append("shard index rank changed")
            elif r == 3 and isinstance(s, dict):
                for side in ("inputs", "outputs"):
                    ports = s.get(side)
                    if isinstance(ports, dict):
                        for k in list(ports):
                            v = ports[k]
                            if isinstance(v, dict) and isinstance(v.get("range"), dict):
                                rr = v["range"]
                                rr["start"] = (rr.get("start") or [0])[:1]
                notes.append("shard port range rank changed")
            elif r == 4 and isinstance(s, dict):
                s["index"] = {"start": [rng.choice(BIG_INTS)] * 2, "end": [rng.choice(BIG_INTS)] * 2}
                notes.append("shard index %r" % s["index"])
            else:
                for _ in range(rng.choice([10, 100, 1000])):
                    shards.append(json.loads(json.dumps(s)) if isinstance(s, dict) else s)
                notes.append("many shards")
            return doc
    if m == 12:                                      # very long string
        strs = [p for p, v in walk(doc) if isinstance(v, str)]
        if strs:
            p = rng.choice(strs)
            n = rng.choice([1000, 65536, 200_000, 1_000_000])
            notes.append("long string %s (%d)" % ("/".join(map(str, p)), n))
            return put(doc, p, rng.choice(["A", "é", "\u202e", "<", "&", "\"", "\\", "%s"]) * n)
    if m == 13:                                      # deep nesting
        nodes = [p for p, _ in walk(doc)]
        p = rng.choice(nodes)
        d = rng.choice([64, 256, 1000, 10_000, 100_000, 1_000_000])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        notes.append("nesting %d at %s" % (d, "/".join(map(str, p))))
        return put(doc, p, Raw(opener * d + "1" + closer * d))
    if m == 14:                                      # invalid UTF-8 inside a string
        strs = [p for p, v in walk(doc) if isinstance(v, str)]
        if strs:
            p = rng.choice(strs)
            s = get(doc, p)
            bad = rng.choice(INVALID_UTF8)
            i = rng.randrange(len(s) + 1)
            notes.append("invalid utf-8 %r in %s" % (bad, "/".join(map(str, p))))
            return put(doc, p, Raw(b'"' + s[:i].encode() + bad + s[i:].encode() + b'"'))
    if m == 15:                                      # 'data' paths
        ts = [t for t in (doc.get("tensors") or []) if isinstance(t, dict)] if isinstance(doc, dict) else []
        if ts:
            t = rng.choice(ts)
            t["data"] = rng.choice(special_data_paths(case_dir))
            t.pop("value", None)
            notes.append("data %s=%r" % (t.get("id"), t["data"][:80]))
            notes.append("data-path")
            return doc
    if m == 16:                                      # non-standard numbers
        nums = [p for p, v in walk(doc) if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if nums:
            p = rng.choice(nums)
            notes.append("number %s" % "/".join(map(str, p)))
            return put(doc, p, Raw(rng.choice(RAW_NUMBERS)))
    if m == 17:                                      # params
        ops = [o for o in (doc.get("operations") or []) if isinstance(o, dict)] if isinstance(doc, dict) else []
        if ops:
            o = rng.choice(ops)
            params = o.get("params") if isinstance(o.get("params"), dict) else {}
            k = rng.choice(list(params) + PARAM_NAMES if params else PARAM_NAMES)
            params[k] = rng.choice([rng.choice(BIG_INTS), [rng.choice(BIG_INTS)],
                                    [rng.choice(BIG_INTS) for _ in range(rng.randrange(6))],
                                    "f32", "x", None, 0.0, -1e9, [], {}, True, [1.5]])
            o["params"] = params
            notes.append("param %s.%s=%r" % (o.get("id"), k, params[k]))
            return doc
    if m == 18:                                      # embedded values
        ts = [t for t in (doc.get("tensors") or []) if isinstance(t, dict)] if isinstance(doc, dict) else []
        if ts:
            t = rng.choice(ts)
            t.pop("data", None)
            t["value"] = rng.choice([[], [1], [1e39], [70000], ["a"], [None], [[1, 2]], 5,
                                     [2**63] * 3, [1.5] * rng.choice([1, 7, 100_000]), [True, 1],
                                     [Raw("NaN")], [-2**63 - 1]])
            notes.append("value %s" % t.get("id"))
            return doc
    if m == 19:                                      # duplicate / drop list elements
        lists = [(p, v) for p, v in walk(doc) if isinstance(v, list) and v]
        if lists:
            p, l = rng.choice(lists)
            i = rng.randrange(len(l))
            if rng.random() < .6:
                l.insert(i, json.loads(json.dumps(l[i])) if not isinstance(l[i], (Raw, DupObj)) else l[i])
                notes.append("duplicate element %s[%d]" % ("/".join(map(str, p)), i))
            else:
                l.pop(i)
                notes.append("drop element %s[%d]" % ("/".join(map(str, p)), i))
            return doc
    if m == 20:                                      # header
        if isinstance(doc, dict):
            k, v = rng.choice([("format", "tapestry-session"), ("format", None), ("version", 2),
                               ("version", 0), ("version", -1), ("version", 2**64), ("version", "1"),
                               ("tensors", {}), ("operations", {}), ("layout", []),
                               ("layout", {"ghost": {"x": 1e308, "y": Raw("NaN")}})])
            doc[k] = v
            notes.append("header %s=%r" % (k, v))
            return doc
    if m == 21:                                      # index spaces / signatures
        ops = [o for o in (doc.get("operations") or []) if isinstance(o, dict)] if isinstance(doc, dict) else []
        if ops:
            o = rng.choice(ops)
            r = rng.randrange(4)
            if r == 0:
                o["index_space"] = {"start": [rng.choice(BIG_INTS) for _ in range(2)],
                                    "end": [rng.choice(BIG_INTS) for _ in range(2)]}
            elif r == 1:
                o.pop("signature", None)
                o.pop("index_space", None)
            elif r == 2:
                o["signature"] = {"inputs": {"x": [{"matrix": [[2**62, 2**62]], "offset": [2**62],
                                                    "window": [2**62]}]},
                                  "outputs": {"y": [{"matrix": [[1, 0], [0, 1]], "offset": [0, 0],
                                                     "window": [1, 1]}]}}
            else:
                sig = o.get("signature")
                if isinstance(sig, dict):
                    sig["inputs"] = {}
            notes.append("index space / signature of %s" % o.get("id"))
            return doc
    # Fallback: a random interesting int somewhere
    lists = int_lists(doc)
    if lists:
        p, l = rng.choice(lists)
        l[rng.randrange(len(l))] = rng.choice(BIG_INTS)
        notes.append("int (fallback) %s" % "/".join(map(str, p)))
    return doc


def mutate_bytes(rng, data, notes, max_ops=None):
    data = bytearray(data)
    for _ in range(max_ops or rng.choice([1, 1, 2, 3, 8])):
        r = rng.randrange(6)
        if not data:
            data += bytes(rng.randrange(256) for _ in range(8))
            continue
        if r == 0:                                   # truncate
            n = rng.randrange(len(data))
            del data[n:]
            notes.append("truncate at %d" % n)
        elif r in (1, 2):                            # byte flips
            for _ in range(rng.choice([1, 1, 2, 4, 16])):
                i = rng.randrange(len(data))
                data[i] ^= 1 << rng.randrange(8) if rng.random() < .7 else rng.randrange(1, 256)
            notes.append("byte flips")
        elif r == 3:                                 # set interesting bytes
            i = rng.randrange(len(data))
            v = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f\xff\xff\xff",
                            b"\x80\x00\x00\x00", b"\xff" * 8, b"\x01", b"\x00"])
            data[i:i + len(v)] = v
            notes.append("interesting bytes at %d" % i)
        elif r == 4:                                 # append garbage
            data += bytes(rng.randrange(256) for _ in range(rng.choice([1, 16, 4096])))
            notes.append("append garbage")
        else:                                        # delete / duplicate a chunk
            i = rng.randrange(len(data))
            n = rng.randrange(1, 64)
            if rng.random() < .5:
                del data[i:i + n]
                notes.append("delete chunk")
            else:
                data[i:i] = data[i:i + n]
                notes.append("duplicate chunk")
    return bytes(data)


# ----------------------------------------------------------------------------
# .npy mutations
# ----------------------------------------------------------------------------

NPY_DESCRS = ["<f4", "<f2", "<f8", "<i4", "<i8", "|b1", ">f4", "<c8", "|O", "<u2", "|u1", "<V4",
              "", "f4", "<f4 ", "<f16", "<M8[s]", "=f4", "|f4", "<U3", "[('a', '<f4')]", "\u00e9"]
NPY_SHAPES = [(), (0,), (1,), (2**31,), (2**32,), (2**62,), (2**63,), (2**64,), (-1,), (-2**63,),
              (2**31, 2**31), (2**32, 2**32), (8, 2**27), (2**21,) * 3, (1,) * 40, (3, 4), (2, 3),
              (10**30,), (0, 2**62), (2**62, 0)]


def mutate_npy(rng, base, want_descr, want_shape, notes):
    r = rng.randrange(9)
    if r == 0:                                       # header fields
        descr = rng.choice(NPY_DESCRS + [want_descr] * 3)
        shape = rng.choice(NPY_SHAPES + [want_shape] * 3)
        fortran = rng.choice(["True", "False", "1", "'x'", "None"])
        header = "{'descr': %r, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, repr(tuple(shape)))
        n = 1
        for d in shape:
            n *= max(d, 0)
        size = min(n * ITEMSIZE.get(descr, 4), 1 << 16) if rng.random() < .7 else rng.randrange(64)
        notes.append("header descr=%r fortran=%s shape=%r, %d data bytes" % (descr, fortran, shape, size))
        return npy_bytes(descr, shape, bytes(rng.randrange(256) for _ in range(size)), header=header)
    if r == 1:                                       # broken dict syntax
        header = rng.choice([
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3) }",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'shape': (2, 3), }",
            "{'fortran_order': False, 'shape': (2, 3), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1, }",
            "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3,,), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': ((2, 3)), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5, 3), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': ('2', 3), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }",
            "{'descr': <f4, 'fortran_order': False, 'shape': (2, 3), }",
            "{\"descr\": \"<f4\", \"fortran_order\": false, \"shape\": [2, 3]}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "(" * 5000 + ")" * 5000 + "), }",
            "{'descr': '" + "A" * 60000 + "', 'fortran_order': False, 'shape': (2, 3), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1, " * 10000 + "), }",
            "{'descr': '<f4\\x00', 'fortran_order': False, 'shape': (2, 3), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999999999, 3), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-0, 3), }",
            "", "{", "}", "\n", "{}", "[]", "{'descr'",
        ])
        notes.append("header %r" % header[:100])
        return npy_bytes("<f4", (2, 3), bytes(24), header=header)
    if r == 2:                                       # header length field
        data = bytearray(base)
        v = rng.choice([0, 1, 9, 0xFFFF, 0x7FFF, 118, 10000])
        data[8:10] = struct.pack("<H", v)
        notes.append("header length %d" % v)
        return bytes(data)
    if r == 3:                                       # version bytes, v2/v3 length fields
        data = bytearray(base)
        ver = rng.choice([(2, 0), (3, 0), (0, 0), (9, 9), (1, 1), (255, 255)])
        data[6:8] = bytes(ver)
        if ver[0] in (2, 3) and rng.random() < .6:   # a 4-byte length that is huge or wrong
            hl = rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 0x10000, 0, len(base)])
            data[8:10] = struct.pack("<I", hl)[:2]
            data[10:10] = struct.pack("<I", hl)[2:]
        notes.append("version %r" % (ver,))
        return bytes(data)
    if r == 4:                                       # truncation
        n = rng.randrange(len(base) + 1)
        notes.append("truncate at %d of %d" % (n, len(base)))
        return base[:n]
    if r == 5:                                       # wrong magic
        data = bytearray(base)
        data[0:6] = rng.choice([b"\x93NUMPZ", b"PK\x03\x04\x00\x00", b"\x00" * 6, b"\x93numpy"])
        notes.append("magic")
        return bytes(data)
    if r == 6:                                       # data size mismatch
        extra = rng.choice([-1, -4, 1, 4, 4096, -(len(base) // 2)])
        notes.append("data size %+d" % extra)
        return base[:extra] if extra < 0 else base + bytes(extra)
    if r == 7:                                       # a valid file of another dtype / shape
        descr = rng.choice(["<f4", "<f2", "<f8", "<i4", "<i8", "|b1"])
        shape = rng.choice([want_shape, tuple(reversed(want_shape)), (1,) + tuple(want_shape), (), (0,)])
        notes.append("valid %s %r" % (descr, shape))
        return valid_npy(rng, descr, shape)
    return mutate_bytes(rng, base, notes)


# ----------------------------------------------------------------------------
# ONNX: a tiny protobuf encoder and hand-built models
# ----------------------------------------------------------------------------

def varint(n):
    n &= (1 << 64) - 1                               # negatives as two's complement, like protobuf
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(field, n):
    return varint(field << 3) + varint(n)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def f_float(field, x):
    return varint(field << 3 | 5) + struct.pack("<f", x)


def packed_varints(field, values):
    return f_bytes(field, b"".join(varint(v) for v in values))


ONNX_FLOAT, ONNX_INT32, ONNX_INT64, ONNX_STRING, ONNX_BOOL, ONNX_F16, ONNX_F64, ONNX_BF16 = 1, 6, 7, 8, 9, 10, 11, 16


def tensor_proto(name, dims, data_type=ONNX_FLOAT, floats=None, raw=None, int64s=None, packed=True,
                 external=None):
    b = b""
    if packed:
        b += packed_varints(1, dims) if dims else b""
    else:
        b += b"".join(f_varint(1, d) for d in dims)
    b += f_varint(2, data_type)
    if floats is not None:
        b += f_bytes(4, struct.pack("<%df" % len(floats), *floats))
    if int64s is not None:
        b += packed_varints(7, int64s)
    b += f_bytes(8, name)
    if raw is not None:
        b += f_bytes(9, raw)
    if external is not None:                          # external_data = 13, data_location = 14
        for k, v in external:
            b += f_bytes(13, f_bytes(1, k) + f_bytes(2, v))
        b += f_varint(14, 1)
    return b


def value_info(name, elem_type, dims):
    shape = b"".join(f_bytes(1, f_bytes(2, d) if isinstance(d, str) else f_varint(1, d)) for d in dims or ())
    tensor_type = f_varint(1, elem_type) + (f_bytes(2, shape) if dims is not None else b"")
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))


def attribute(name, kind, value):
    b = f_bytes(1, name)
    if kind == "i":
        b += f_varint(3, value) + f_varint(20, 2)
    elif kind == "f":
        b += f_float(2, value) + f_varint(20, 1)
    elif kind == "ints":
        b += b"".join(f_varint(8, v) for v in value) + f_varint(20, 7)
    elif kind == "s":
        b += f_bytes(4, value) + f_varint(20, 3)
    elif kind == "t":
        b += f_bytes(5, value) + f_varint(20, 4)
    elif kind == "g":
        b += f_bytes(6, value) + f_varint(20, 5)
    return b


def node(op_type, inputs, outputs, name="", attrs=()):
    b = b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs)
    if name:
        b += f_bytes(3, name)
    b += f_bytes(4, op_type)
    b += b"".join(f_bytes(5, a) for a in attrs)
    return b


def graph(nodes, inputs, outputs, initializers=(), name="g"):
    return (b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, name) +
            b"".join(f_bytes(5, t) for t in initializers) +
            b"".join(f_bytes(11, v) for v in inputs) + b"".join(f_bytes(12, v) for v in outputs))


def model(g, opset=17, ir_version=8, domain=""):
    return (f_varint(1, ir_version) + f_bytes(2, "bad_inputs.py") +
            f_bytes(7, g) + f_bytes(8, (f_bytes(1, domain) if domain else b"") + f_varint(2, opset)))


def build_onnx(rng, notes, case_dir):
    """A small hand-built model, usually with something hostile in it."""
    r = rng.randrange(12)
    opset = rng.choice([17, 17, 17, 13, 15, 11, 7, 1, 99, 0, -1])
    ir = rng.choice([8, 8, 8, 3, 7, 10, 0, 99])
    hostile_dims = rng.choice([[2**31, 2**31], [2**32, 2**32], [2**62], [2**63 - 1], [-1], [-2**63],
                               [8, 2**27], [2**40], [3, 2**61], [0], [0, 2**62], [2**21] * 3,
                               [2**64 - 1], [1] * 64, [3, 4], [4, 3]])
    if r in (0, 1, 2):                               # an Add with a hostile initializer
        n = rng.choice([0, 1, 12, 16])
        kind = rng.choice(["floats", "raw", "none", "int64"])
        init = tensor_proto("W", hostile_dims,
                            data_type=ONNX_FLOAT if kind != "int64" else ONNX_INT64,
                            floats=[1.0] * n if kind == "floats" else None,
                            raw=bytes(4 * n) if kind == "raw" else None,
                            int64s=list(range(n)) if kind == "int64" else None,
                            packed=rng.random() < .7)
        g = graph([node("Add", ["x", "W"], ["y"], "add")],
                  [value_info("x", ONNX_FLOAT, [3, 4])], [value_info("y", ONNX_FLOAT, [3, 4])], [init])
        notes.append("initializer dims %r, %s x%d" % (hostile_dims, kind, n))
    elif r == 3:                                     # MatMul with a hostile weight
        init = tensor_proto("W", hostile_dims, raw=bytes(48))
        g = graph([node("MatMul", ["x", "W"], ["y"], "mm")],
                  [value_info("x", ONNX_FLOAT, [3, 4])], [value_info("y", ONNX_FLOAT, None)], [init])
        notes.append("matmul weight dims %r" % (hostile_dims,))
    elif r == 4:                                     # hostile input shape
        dims = rng.choice([hostile_dims, ["batch", 2**62], ["", 3], ["a" * 10000], [0], []])
        g = graph([node(rng.choice(["Relu", "Softmax", "Transpose", "Sigmoid"]), ["x"], ["y"], "n")],
                  [value_info("x", rng.choice([ONNX_FLOAT, ONNX_BF16, ONNX_STRING, 0, 99, ONNX_F64]), dims)],
                  [value_info("y", ONNX_FLOAT, dims)])
        notes.append("input dims %r" % (dims,))
    elif r == 5:                                     # hostile attributes
        op, attrs = rng.choice([
            ("Transpose", [attribute("perm", "ints", [5, -7])]),
            ("Transpose", [attribute("perm", "ints", [0, 0])]),
            ("Softmax", [attribute("axis", "i", rng.choice([99, -99, 2**62]))]),
            ("Flatten", [attribute("axis", "i", 2**40)]),
            ("Gather", [attribute("axis", "i", -2**63)]),
            ("Concat", [attribute("axis", "i", 7)]),
            ("LeakyRelu", [attribute("alpha", "f", float("nan"))]),
            ("Cast", [attribute("to", "i", rng.choice([0, 8, 99, -1]))]),
            ("ReduceSum", [attribute("keepdims", "i", 7), attribute("axes", "ints", [2**62])]),
            ("Relu", [attribute("bogus", "t", tensor_proto("t", [2**62]))]),
            ("If", [attribute("then_branch", "g", b"\xff\xff")]),
            ("Split", [attribute("axis", "i", 1), attribute("split", "ints", [2**62, -2**62])]),
        ])
        inputs = ["x"] if op not in ("Gather", "Concat") else ["x", "x"]
        g = graph([node(op, inputs, ["y"], "n", attrs)],
                  [value_info("x", ONNX_FLOAT, [3, 4])], [value_info("y", ONNX_FLOAT, None)])
        notes.append("%s attributes" % op)
    elif r == 6:                                     # Conv / pools with hostile attributes
        attrs = [attribute("kernel_shape", "ints", rng.choice([[3, 3], [2**31, 2**31], [0, 0], [-1, 3]])),
                 attribute("pads", "ints", rng.choice([[0, 0, 0, 0], [2**62] * 4, [-5] * 4, [1, 1]])),
                 attribute("strides", "ints", rng.choice([[1, 1], [0, 0], [2**40, 1], [-1, -1]])),
                 attribute("dilations", "ints", rng.choice([[1, 1], [0, 1], [2**33, 1]]))]
        op = rng.choice(["Conv", "MaxPool", "AveragePool"])
        init = [tensor_proto("W", [4, 2, 3, 3], raw=bytes(4 * 72))] if op == "Conv" else []
        g = graph([node(op, ["x", "W"] if op == "Conv" else ["x"], ["y"], "c",
                        rng.sample(attrs, rng.randrange(1, 5)))],
                  [value_info("x", ONNX_FLOAT, [1, 2, 5, 5])], [value_info("y", ONNX_FLOAT, None)], init)
        notes.append("%s hostile attributes" % op)
    elif r == 7:                                     # Reshape with a hostile shape initializer
        shape = rng.choice([[-1, -1], [2**62, 2], [0, 0], [-2], [12], [2**63 - 1], [3, -1], [2**31, 2**31]])
        init = tensor_proto("s", [len(shape)], data_type=ONNX_INT64, int64s=shape)
        g = graph([node("Reshape", ["x", "s"], ["y"], "r")],
                  [value_info("x", ONNX_FLOAT, [3, 4])], [value_info("y", ONNX_FLOAT, None)], [init])
        notes.append("reshape to %r" % shape)
    elif r == 8:                                     # graph structure: cycles, dangling, duplicates
        kind = rng.randrange(5)
        if kind == 0:
            nodes = [node("Relu", ["b"], ["a"], "n1"), node("Relu", ["a"], ["b"], "n2")]
            outs = [value_info("b", ONNX_FLOAT, [3, 4])]
        elif kind == 1:
            nodes = [node("Relu", ["ghost"], ["y"], "n1")]
            outs = [value_info("y", ONNX_FLOAT, [3, 4])]
        elif kind == 2:
            nodes = [node("Relu", ["x"], ["y"], "n"), node("Sigmoid", ["x"], ["y"], "n")]
            outs = [value_info("y", ONNX_FLOAT, [3, 4])]
        elif kind == 3:
            nodes = [node("Relu", ["x"], ["x"], "self")]
            outs = [value_info("x", ONNX_FLOAT, [3, 4])]
        else:
            nodes = [node("Relu", ["x" if i == 0 else "t%d" % (i - 1)], ["t%d" % i], "") for i in range(2000)]
            outs = [value_info("t1999", ONNX_FLOAT, [3, 4])]
        g = graph(nodes, [value_info("x", ONNX_FLOAT, [3, 4])], outs)
        notes.append("graph structure %d" % kind)
    elif r == 9:                                     # external data pointing anywhere
        loc = rng.choice(["/dev/zero", "/etc/passwd", "../../../../etc/passwd", "missing.bin",
                          "/proc/self/environ", "fifo.bin", ".", "", "a" * 5000])
        ext = [("location", loc)] + rng.choice([[], [("length", "48")], [("offset", "18446744073709551615")],
                                                [("length", "99999999999999")]])
        init = tensor_proto("W", [3, 4], external=ext)
        g = graph([node("Add", ["x", "W"], ["y"], "add")],
                  [value_info("x", ONNX_FLOAT, [3, 4])], [value_info("y", ONNX_FLOAT, [3, 4])], [init])
        notes.append("external data %r" % (ext,))
        notes.append("onnx-external")
    elif r == 10:                                    # unknown ops / domains / no graph
        what = rng.randrange(4)
        if what == 0:
            notes.append("no graph")
            return f_varint(1, ir) + f_bytes(8, f_varint(2, opset))
        if what == 1:
            notes.append("no opset")
            return f_varint(1, ir) + f_bytes(7, graph([node("Relu", ["x"], ["y"])],
                                                      [value_info("x", ONNX_FLOAT, [2])],
                                                      [value_info("y", ONNX_FLOAT, [2])]))
        g = graph([node(rng.choice(["Hardmax", "Loop", "", "NonZero", "Relu"]), ["x"], ["y"], "n")],
                  [value_info("x", ONNX_FLOAT, [2, 2])], [value_info("y", ONNX_FLOAT, [2, 2])])
        notes.append("op / domain")
        return model(g, opset, ir, domain=rng.choice(["", "com.microsoft", "ai.onnx.ml", "x" * 100]))
    else:                                            # a valid small model, byte-mutated
        g = graph([node("MatMul", ["x", "W"], ["h"], "mm"), node("Relu", ["h"], ["y"], "act")],
                  [value_info("x", ONNX_FLOAT, [2, 3])], [value_info("y", ONNX_FLOAT, [2, 4])],
                  [tensor_proto("W", [3, 4], floats=[0.5] * 12)])
        notes.append("valid matmul+relu, then bytes mutated")
        return mutate_bytes(rng, model(g, 17, 8), notes)
    notes.append("opset %d ir %d" % (opset, ir))
    return model(g, opset, ir)


# ----------------------------------------------------------------------------
# Running commands
# ----------------------------------------------------------------------------

CRASH_MARKERS = ["internal error", "AddressSanitizer", "runtime error:", "terminate called",
                 "Aborted", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                 "stack-overflow"]


class Runner:
    def __init__(self, cli, timeout, memory_mib, asan):
        self.cli = cli
        self.timeout = timeout
        self.memory = memory_mib * 1024 * 1024 if memory_mib and not asan else 0
        self.env = dict(os.environ)
        if asan:   # no ulimit -v under ASan: cap the resident size instead
            self.env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0:hard_rss_limit_mb=%d"
                                % (memory_mib or 8192))
        self.env.setdefault("OMP_NUM_THREADS", "1")

    def _limit(self):
        if self.memory:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def run(self, args, cwd, timeout=None, keep_stdout=False):
        """(exit code, hung, stderr, seconds[, stdout]); stdout is kept only when asked."""
        errpath = os.path.join(cwd, ".stderr")
        outpath = os.path.join(cwd, ".stdout")
        t0 = time.monotonic()
        with open(errpath, "wb") as err, open(outpath if keep_stdout else os.devnull, "wb") as out:
            try:
                p = subprocess.Popen([self.cli] + args, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=err, env=self.env,
                                     preexec_fn=self._limit, start_new_session=True)
            except (OSError, ValueError) as e:       # E2BIG, an argument with a NUL: not run
                return None, False, "not run: %s" % e, 0.0, ""
            hung = False
            try:
                rc = p.wait(timeout=timeout or self.timeout)
            except subprocess.TimeoutExpired:
                hung = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                rc = p.wait()
        with open(errpath, "rb") as f:
            stderr = f.read(256 * 1024).decode("utf-8", "replace")
        os.unlink(errpath)
        if keep_stdout:
            with open(outpath, "rb") as f:           # the head and the tail of a long report
                size = os.fstat(f.fileno()).st_size
                stdout = f.read(4 * 1024 * 1024)
                if size > len(stdout):
                    f.seek(max(len(stdout), size - 256 * 1024))
                    stdout += b"\n" + f.read()
                stdout = stdout.decode("utf-8", "replace")
            os.unlink(outpath)
            return rc, hung, stderr, time.monotonic() - t0, stdout
        return rc, hung, stderr, time.monotonic() - t0


def sha(path):
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):   # never open a FIFO (it blocks)
            return None
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


# ----------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------

class Case:
    def __init__(self, index, kind, directory):
        self.index = index
        self.kind = kind          # project, npy, onnx, session
        self.dir = directory
        self.notes = []
        self.commands = []        # (label, args, cwd, watch_path or None)
        self.inputs = []          # paths to save with a finding
        self.special = False


def write_project(case, rng, seeds, text=None, doc=None, npy_w=None, w_shape=(3, 4)):
    proj = os.path.join(case.dir, "proj")
    os.makedirs(proj, exist_ok=True)
    os.makedirs(os.path.join(proj, "subdir"), exist_ok=True)
    path = os.path.join(proj, "p.tapestry.json")
    with open(path, "wb") as f:
        f.write(text)
    # what 'data' paths may name
    with open(os.path.join(proj, "w.npy"), "wb") as f:
        f.write(npy_w if npy_w is not None else valid_npy(rng, "<f4", w_shape))
    with open(os.path.join(proj, "b.npy"), "wb") as f:     # every_field.tapestry.json's data
        f.write(valid_npy(rng, "<f2", (8, 8)))
    with open(os.path.join(case.dir, "outside.npy"), "wb") as f:
        f.write(valid_npy(rng, "<f4", (3, 4)))
    os.mkfifo(os.path.join(proj, "fifo.npy"))
    os.symlink("/dev/zero", os.path.join(proj, "link_zero.npy"))
    os.symlink(os.path.join(case.dir, "outside.npy"), os.path.join(proj, "link_out.npy"))
    case.inputs += [path, os.path.join(proj, "w.npy")]
    return path


def first_op_id(text):
    try:
        doc = json.loads(text)
        for o in doc.get("operations", []):
            if isinstance(o, dict) and isinstance(o.get("id"), str) and o["id"] and ":" not in o["id"] \
                    and len(o["id"]) < 1000 and "\0" not in o["id"]:
                return o["id"]
    except Exception:
        pass
    return "op"


def project_commands(case, path, op, allow_outside=False):
    d = case.dir
    extra = ["--allow-outside-data"] if allow_outside else []
    case.commands += [
        ("validate", ["validate", path], d, None),
        ("validate --json", ["validate", "--json", path], d, None),
        ("show", ["show", path], d, None),
        ("show --json", ["show", "--json", path], d, None),
        ("export -f dot", ["export", "-f", "dot", path], d, None),
        ("export -f svg", ["export", "-f", "svg", path], d, None),
        ("export -f json", ["export", "-f", "json", "-o", os.path.join(d, "re.tapestry.json"), path], d, None),
        ("run", ["run", path, "--memory-limit", "1G"] + extra, d, None),
        ("verify", ["verify", path, "--memory-limit", "1G"] + extra, d, None),
        ("passes", ["passes", path, "--shard", "%s:0=2" % op, "--out", os.path.join(d, "stages"), "--no-svg"]
         + extra, d, None),
        ("session import (project)", ["session", "import", os.path.join(d, "new.tapestry-session"), path]
         + extra, d, None),
        ("plan --baseline dp", ["plan", path, "--target", "h100", "--devices", "2", "--baseline", "dp",
                                "-o", os.path.join(d, "p.plan.json")], d, None),
        ("plan --placement round-robin", ["plan", path, "--target", "a100", "--devices", "4",
                                          "--placement", "round-robin", "--json"], d, None),
    ]


def make_project_case(case, rng, seeds):
    r = rng.random()
    if r < 0.03:                                     # the project path itself is special
        case.special = True
        proj = os.path.join(case.dir, "proj")
        os.makedirs(proj, exist_ok=True)
        choice = rng.choice(["/dev/zero", "/dev/urandom", "/dev/null", "fifo", "dir", "missing",
                             "/proc/self/environ", "symlink-zero", "empty", "/proc/self/maps"])
        if choice == "fifo":
            path = os.path.join(proj, "p.tapestry.json")
            os.mkfifo(path)
        elif choice == "dir":
            path = os.path.join(proj, "p.tapestry.json")
            os.mkdir(path)
        elif choice == "missing":
            path = os.path.join(proj, "missing.tapestry.json")
        elif choice == "symlink-zero":
            path = os.path.join(proj, "p.tapestry.json")
            os.symlink("/dev/zero", path)
        elif choice == "empty":
            path = os.path.join(proj, "p.tapestry.json")
            open(path, "wb").close()
        else:
            path = choice
        case.notes.append("project path: %s" % choice)
        project_commands(case, path, "op")
        return
    if seeds.project_texts and r < 0.08:             # a malformed seed, byte-mutated
        label, raw = rng.choice(seeds.project_texts)
        case.notes.append("seed %s" % label)
        text = mutate_bytes(rng, raw, case.notes)
        path = write_project(case, rng, seeds, text=text)
        project_commands(case, path, first_op_id(text))
        return
    if r < 0.25:                                     # valid in form, hostile in size
        doc = scaled_project(rng, case.notes)
        text = to_bytes(doc)
        path = write_project(case, rng, seeds, text=text)
        project_commands(case, path, first_op_id(text))
        return
    pool = seeds.tiny if rng.random() < 0.6 else seeds.projects
    label, doc = rng.choice(pool)
    case.notes.append("seed %s" % label)
    doc = json.loads(json.dumps(doc))
    if rng.random() < 0.85:
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            doc = mutate_project_tree(rng, doc, case.dir, case.notes)
        text = to_bytes(doc)
        if rng.random() < 0.12:
            text = mutate_bytes(rng, text, case.notes)
    else:
        text = mutate_bytes(rng, to_bytes(doc), case.notes)
    w_shape = TINY_DATA.get(label[5:], ("<f4", (3, 4)))[1]
    path = write_project(case, rng, seeds, text=text, w_shape=w_shape)
    allow = "data-path" in case.notes and rng.random() < 0.5
    if allow:
        case.notes.append("--allow-outside-data")
    if "data-path" in case.notes and any(x in t for t in case.notes for x in ("fifo", "zero", "urandom", "/proc/")):
        case.special = True
    project_commands(case, path, first_op_id(text), allow)


SIZES = [1, 2, 3, 1024, 2**20, 2**27, 2**30, 2**31 - 1, 2**31, 2**32, 2**33, 2**40, 2**61, 2**62, 2**63 - 1]


def scaled_project(rng, notes):
    """A project that is well formed, its dimensions chosen to stress size arithmetic and the
    memory budget (element counts at and past 2^31, 2^32, 2^62; byte counts past 2^64)."""
    t = lambda i, dt, sh, role: {"id": i, "dtype": dt, "shape": sh, "role": role}
    op = lambda i, k, ins, outs, **kw: dict({"id": i, "kind": k, "inputs": ins, "outputs": outs}, **kw)
    P = lambda name, tensors, ops: {"format": "tapestry-project", "version": 1, "name": name,
                                    "tensors": tensors, "operations": ops}
    z = lambda: rng.choice(SIZES[:3]) if rng.random() < .4 else rng.choice(SIZES)
    dt = rng.choice(["f32", "f32", "f32", "f32", "f16", "bf16", "i64", "bool", "i32"])
    r = rng.randrange(8)
    if r == 0:
        sh = rng.choice([[z(), z()], [z()], [z(), z(), z()], [2**31, 2**31], [2**32, 2**32], [2**62],
                         [2**31 - 1, 2**31 - 1], [2, 2**61], [2**21, 2**21, 2**20]])
        kind = rng.choice(["relu", "neg", "abs", "sigmoid", "exp", "gelu", "tanh"])
        doc = P("scaled_unary", [t("x", dt, sh, "input"), t("y", dt, sh, "output")],
                [op("u", kind, {"x": "x"}, {"y": "y"})])
    elif r == 1:
        B, F, O = z(), z(), z()
        doc = P("scaled_linear", [t("x", dt, [B, F], "input"), t("w", dt, [F, O], "parameter"),
                                  t("y", dt, [B, O], "output")],
                [op("fc", "linear", {"x": "x", "w": "w"}, {"y": "y"})])
        sh = [B, F, O]
    elif r == 2:
        M, K, N = z(), z(), z()
        doc = P("scaled_matmul", [t("a", dt, [M, K], "input"), t("b", dt, [K, N], "input"),
                                  t("y", dt, [M, N], "output")],
                [op("mm", "matmul", {"a": "a", "b": "b"}, {"y": "y"})])
        sh = [M, K, N]
    elif r == 3:
        N, C, H, K = rng.choice([1, 2, 2**31]), rng.choice([1, 4, 2**20, 2**31]), rng.choice([3, 5, 2**16, 2**31]), rng.choice([1, 8, 2**31])
        doc = P("scaled_conv", [t("x", dt, [N, C, H, H], "input"), t("w", dt, [K, C, 3, 3], "parameter"),
                                t("y", dt, [N, K, H - 2, H - 2], "output")],
                [op("conv", "conv2d", {"x": "x", "w": "w"}, {"y": "y"})])
        sh = [N, C, H, K]
    elif r == 4:
        V, E = z(), z()
        doc = P("scaled_embedding", [t("ids", "i64", [2, 3], "input"), t("table", dt, [V, E], "parameter"),
                                     t("y", dt, [2, 3, E], "output")],
                [op("emb", "embedding", {"ids": "ids", "table": "table"}, {"y": "y"})])
        sh = [V, E]
    elif r == 5:
        A = z()
        doc = P("scaled_reshape", [t("x", dt, [A, 2], "input"), t("y", dt, [2 * A], "output")],
                [op("rs", "reshape", {"x": "x"}, {"y": "y"}, params={"shape": [-1]})])
        sh = [A]
    elif r == 6:
        A, Bn = z(), z()
        doc = P("scaled_reduce", [t("x", dt, [A, Bn], "input"), t("y", dt, [A, 1], "output")],
                [op("rd", "reduce_sum", {"x": "x"}, {"y": "y"}, params={"axes": [1]})])
        sh = [A, Bn]
    else:                                            # a small graph with one huge intermediate
        H = rng.choice([2**28, 2**30, 2**31, 2**33, 2**40])
        doc = P("scaled_intermediate", [t("x", "f32", [2, 3], "input"), t("w", "f32", [3, H], "parameter"),
                                        t("h", "f32", [2, H], "intermediate"),
                                        t("y", "f32", [2, 1], "output")],
                [op("fc", "linear", {"x": "x", "w": "w"}, {"y": "h"}),
                 op("rd", "reduce_sum", {"x": "h"}, {"y": "y"}, params={"axes": [1]})])
        sh = [H]
    if rng.random() < .3:                            # shard the first operation
        o = doc["operations"][0]
        first = doc["tensors"][-1]["shape"]
        o["shards"] = [{"id": "%s/%d" % (o["id"], i)} for i in range(2)]
        notes.append("shards without ranges")
        if first and first[0] >= 2:
            h = first[0] // 2
            rest = first[1:]
            o["shards"] = [{"id": "s0", "index": {"start": [0] * len(first), "end": [h] + rest}},
                           {"id": "s1", "index": {"start": [h] + [0] * len(rest), "end": first}}]
    notes.append("scaled %s %s %r" % (doc["name"], dt, sh))
    return doc


def make_npy_case(case, rng, seeds):
    tiny = dict(seeds.tiny)
    proj = os.path.join(case.dir, "proj")
    if rng.random() < 0.35:                          # as a project's 'data'
        name = rng.choice(sorted(TINY_DATA))
        descr, shape = TINY_DATA[name]
        base = valid_npy(rng, descr, shape) if rng.random() < .7 or not seeds.npy else rng.choice(seeds.npy)[1]
        data = mutate_npy(rng, base, descr, shape, case.notes)
        case.notes.insert(0, "as 'data' of %s" % name)
        path = write_project(case, rng, seeds, text=to_bytes(tiny["tiny:" + name]), npy_w=data)
        d = case.dir
        case.commands += [
            ("validate (npy data)", ["validate", path], d, None),
            ("show (npy data)", ["show", path], d, None),
            ("run (npy data)", ["run", path, "--memory-limit", "1G"], d, None),
            ("verify (npy data)", ["verify", path, "--memory-limit", "1G"], d, None),
            ("session import (npy data)", ["session", "import", os.path.join(d, "new.tapestry-session"), path], d, None),
        ]
        return
    name = rng.choice(sorted(TINY_INPUT))
    descr, shape = TINY_INPUT[name]
    if rng.random() < 0.25 and seeds.npy:
        label, base = rng.choice(seeds.npy)
        case.notes.append("seed %s" % label)
    else:
        base = valid_npy(rng, descr, shape)
    inputs = os.path.join(case.dir, "inputs")
    os.makedirs(inputs, exist_ok=True)
    target = os.path.join(inputs, "inp.npy")
    special = rng.random()
    if special < 0.03:
        case.special = True
        kind = rng.choice(["fifo", "dir", "zero", "missing"])
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "dir":
            os.mkdir(target)
        elif kind == "zero":
            os.symlink("/dev/zero", target)
        case.notes.append("input file is %s" % kind)
    else:
        data = mutate_npy(rng, base, descr, shape, case.notes)
        with open(target, "wb") as f:
            f.write(data)
        case.inputs.append(target)
    case.notes.insert(0, "as input 'inp' of %s" % name)
    path = write_project(case, rng, seeds, text=to_bytes(tiny["tiny:" + name]))
    d = case.dir
    case.commands += [
        ("run --inputs", ["run", path, "--inputs", inputs, "--memory-limit", "1G"], d, None),
        ("verify --inputs", ["verify", path, "--inputs", inputs, "--memory-limit", "1G"], d, None),
    ]
    case.inputs.append(inputs)


def make_onnx_case(case, rng, seeds):
    os.makedirs(case.dir, exist_ok=True)
    os.mkfifo(os.path.join(case.dir, "fifo.bin"))
    if rng.random() < 0.45 and seeds.onnx:
        label, base = rng.choice(seeds.onnx)
        case.notes.append("seed %s" % label)
        data = mutate_bytes(rng, base, case.notes)
    else:
        data = build_onnx(rng, case.notes, case.dir)
        if rng.random() < 0.15:
            data = mutate_bytes(rng, data, case.notes, max_ops=1)
    path = os.path.join(case.dir, "m.onnx")
    with open(path, "wb") as f:
        f.write(data)
    case.inputs.append(path)
    if "onnx-external" in case.notes:
        case.special = True
    out = os.path.join(case.dir, "imported.tapestry.json")
    d = case.dir
    args = ["import", path, "-o", out]
    if rng.random() < 0.2:
        args += ["--dim", rng.choice(["batch=%d" % rng.choice(BIG_INTS), "batch=0", "=3", "batch", "a=1"])]
    case.commands += [("import", args, d, None)]
    # then the imported project, if any, through the cheap readers
    case.commands += [
        ("validate (imported)", ["validate", out], d, "if-exists"),
        ("show (imported)", ["show", out], d, "if-exists"),
        ("run (imported)", ["run", out, "--memory-limit", "1G"], d, "if-exists"),
    ]


class SessionBases:
    def __init__(self, runner, work):
        self.paths = []
        base = os.path.join(work, "bases")
        os.makedirs(base, exist_ok=True)
        src_mlp = os.path.join(SOURCE, "projects", "mlp.tapestry.json")
        s1 = os.path.join(base, "mlp.tapestry-session")
        rc, hung, err, _ = runner.run(["session", "import", s1, src_mlp], base)
        if rc == 0:
            self.paths.append(s1)
        else:
            print("warning: cannot make the base session from %s: %s" % (src_mlp, err.strip()), file=sys.stderr)
        # A session holding tensor values (a project with 'data' and 'value'), two projects
        proj = os.path.join(base, "tiny")
        os.makedirs(proj, exist_ok=True)
        rng = random.Random(7)
        with open(os.path.join(proj, "w.npy"), "wb") as f:
            f.write(valid_npy(rng, "<f4", (3, 4)))
        pj = os.path.join(proj, "tiny.tapestry.json")
        with open(pj, "wb") as f:
            f.write(to_bytes(tiny_projects()[0]))
        s2 = os.path.join(base, "tiny.tapestry-session")
        ok = True
        for extra in ([], ["--name", "second"]):
            rc, hung, err, _ = runner.run(["session", "import", s2, pj] + extra, base)
            ok = ok and rc == 0
        if ok:
            self.paths.append(s2)
        else:
            print("warning: cannot make the tiny base session: %s" % err.strip(), file=sys.stderr)
        self.project_text = to_bytes(tiny_projects()[0])


def sql_mutation(rng, path, notes, seeds):
    """Change a copy of a valid session with SQL; the session's own tables stay in place."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        r = rng.randrange(14)
        if r == 0:
            v = rng.choice([0, 1, 3, 99, -1, 2**31 - 1])
            con.execute("pragma user_version=%d" % v)
            notes.append("user_version %d" % v)
        elif r == 1 and tables:
            t = rng.choice(tables)
            con.execute("drop table %s" % t)
            notes.append("drop table %s" % t)
        elif r == 2:
            label, doc = rng.choice(seeds.projects)
            doc = json.loads(json.dumps(doc))
            sub = []
            doc = mutate_project_tree(rng, doc, os.path.dirname(path), sub)
            text = to_bytes(doc)
            con.execute("update graph_versions set graph_json=?", (text.decode("utf-8", "replace")
                                                                    if rng.random() < .8 else text,))
            notes.append("graph_json := mutated %s (%s)" % (label, "; ".join(sub)))
        elif r == 3:
            v = rng.choice(["", "{", "null", "[]", "\u0000", "x" * 100000, '{"format": "tapestry-project"}'])
            con.execute("update graph_versions set graph_json=?", (v,))
            notes.append("graph_json := %r" % v[:40])
        elif r == 4:
            col, v = rng.choice([("number", -1), ("number", 0), ("number", 2**63 - 1), ("node_count", -5),
                                 ("kind", "bogus"), ("saved_at", "not a time"), ("project_id", 999),
                                 ("number", "text"), ("graph_json", 5), ("saved_at", None)])
            try:
                con.execute("update graph_versions set %s=?" % col, (v,))
            except sqlite3.Error:
                pass
            notes.append("graph_versions.%s := %r" % (col, v))
        elif r == 5:
            col, v = rng.choice([("name", ""), ("name", "../escaped_up"), ("name", "../../escaped_up2"),
                                 ("name", os.path.join(os.path.dirname(path), "escaped_abs")),
                                 ("name", "a/b/escaped_sub"), ("name", "x" * 5000), ("name", "\u0000"),
                                 ("name", "."), ("name", ".."), ("id", -1), ("created_at", "")])
            try:
                con.execute("update projects set %s=?" % col, (v,))
            except sqlite3.Error:
                pass
            notes.append("projects.%s := %r" % (col, v[:60] if isinstance(v, str) else v))
            notes.append("name-mutation")
        elif r == 6:
            con.execute("delete from projects")
            notes.append("delete projects (versions dangle)")
        elif r == 7:
            col, v = rng.choice([("byte_count", 2**62), ("byte_count", -1), ("byte_count", 0),
                                 ("shape", "[4611686018427387904]"), ("shape", "[-1]"), ("shape", "x"),
                                 ("shape", "[2147483648, 2147483648]"), ("dtype", "f64"), ("dtype", ""),
                                 ("bytes", b""), ("bytes", b"\x00" * 3), ("hash", "0"), ("bytes", None)])
            try:
                con.execute("update tensor_values set %s=?" % col, (v,))
            except sqlite3.Error:
                pass
            notes.append("tensor_values.%s := %r" % (col, v if not isinstance(v, bytes) else v[:8]))
        elif r == 8:
            try:
                con.execute("update version_values set value_id=value_id+1000")
                con.execute("insert into version_values values (1, 'ghost', 1)")
            except sqlite3.Error:
                pass
            notes.append("version_values dangle")
        elif r == 9:
            con.execute("create table foreign_table (x)")
            con.execute("insert into foreign_table values (1)")
            notes.append("extra table")
        elif r == 10:
            key = rng.choice(["layout", "view", "selection", "x" * 300])
            v = rng.choice(["{", "null", "[1e999]", "{\"a\":" * 5000 + "1" + "}" * 5000, "1"])
            try:
                con.execute("insert into session_state values (?, ?, 'now')", (key, v))
                con.execute("insert into project_state values (1, ?, ?, 'now')", (key, v))
                con.execute("insert into placements values (1, ?, 1e308, -1e308, 7)", (key,))
            except sqlite3.Error:
                pass
            notes.append("state rows %r" % v[:20])
        elif r == 11:
            try:
                con.execute("insert into stages values (1, 1, 0, 'shard', '{', 's', '[', '{', 999)")
            except sqlite3.Error:
                pass
            notes.append("stage row dangling")
        elif r == 12:
            con.execute("pragma journal_mode=delete")
            notes.append("journal_mode delete")
        else:
            for i in range(rng.choice([2, 50])):
                try:
                    con.execute("insert into projects (name, created_at, updated_at) values ('mlp', 'x', 'y')")
                except sqlite3.Error:
                    pass
            notes.append("many projects named mlp")
    finally:
        con.close()
    for suffix in ("-wal", "-shm", "-journal"):
        try:
            os.unlink(path + suffix)
        except OSError:
            pass


def make_session_case(case, rng, seeds, bases):
    os.makedirs(case.dir, exist_ok=True)
    path = os.path.join(case.dir, "s.tapestry-session")
    r = rng.random()
    if r < 0.12:                                     # foreign / odd SQLite databases and files
        kind = rng.randrange(9)
        if kind <= 4:
            con = sqlite3.connect(path, isolation_level=None)
            if kind == 0:
                con.execute("create table foo (a, b)")
                con.execute("insert into foo values (1, 'x')")
                con.execute("pragma user_version=1")
            elif kind == 1:
                pass                                  # an empty database
            elif kind == 2:
                con.execute("create table projects (x)")
                con.execute("pragma user_version=2")
            elif kind == 3:
                con.execute("pragma journal_mode=wal")
                con.execute("create table t (x)")
            else:
                con.execute("create table projects (id integer primary key, name text)")
                con.execute("pragma user_version=%d" % rng.choice([2, 3, 100]))
            con.close()
            case.notes.append("foreign sqlite db %d" % kind)
        elif kind == 5:
            open(path, "wb").close()
            case.notes.append("empty file")
        elif kind == 6:
            with open(path, "wb") as f:
                f.write(b"SQLite format 3\x00" + bytes(rng.randrange(256) for _ in range(rng.choice([84, 4096]))))
            case.notes.append("sqlite magic then garbage")
        elif kind == 7:
            os.mkfifo(path)
            case.special = True
            case.notes.append("fifo")
        else:
            os.mkdir(path)
            case.notes.append("directory")
    elif bases.paths:
        base = rng.choice(bases.paths)
        case.notes.append("base %s" % os.path.basename(base))
        shutil.copyfile(base, path)
        if rng.random() < 0.4:
            sql_mutation(rng, path, case.notes, seeds)
            if rng.random() < 0.2:
                data = mutate_bytes(rng, open(path, "rb").read(), case.notes)
                open(path, "wb").write(data)
        else:
            data = open(path, "rb").read()
            sub = rng.random()
            if sub < 0.3:                            # the 100-byte header and first page
                data = bytearray(data)
                for _ in range(rng.choice([1, 2, 4])):
                    i = rng.randrange(min(100, len(data)))
                    data[i] = rng.randrange(256)
                data = bytes(data)
                case.notes.append("header bytes")
            elif sub < 0.45:                         # truncate at a page boundary or anywhere
                n = rng.choice([0, 100, 512, 4096, 8192, rng.randrange(len(data) + 1)])
                data = data[:n]
                case.notes.append("truncate at %d" % n)
            elif sub < 0.55:                         # zero a page
                page = rng.randrange(max(1, len(data) // 4096))
                data = data[:page * 4096] + bytes(4096) + data[(page + 1) * 4096:]
                case.notes.append("zero page %d" % page)
            else:
                data = mutate_bytes(rng, data, case.notes)
            with open(path, "wb") as f:
                f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(bytes(rng.randrange(256) for _ in range(4096)))
        case.notes.append("random bytes")
    if os.path.isfile(path):
        case.inputs.append(path)
    d = case.dir
    pj = os.path.join(d, "tiny.tapestry.json")
    with open(pj, "wb") as f:
        f.write(bases.project_text)
    with open(os.path.join(d, "w.npy"), "wb") as f:
        f.write(valid_npy(rng, "<f4", (3, 4)))
    exp = os.path.join(d, "exp", "inner")
    os.makedirs(exp, exist_ok=True)
    case.commands += [
        ("session list", ["session", "list", path], d, path),
        ("session list --json", ["session", "list", "--json", path], d, path),
        ("session export", ["session", "export", path, "-o", exp], d, path),
        ("session export 1 --version 1", ["session", "export", path, "1", "--version", "1", "-o",
                                          os.path.join(exp, "one.tapestry.json")], d, path),
        ("session import", ["session", "import", path, pj, "--wait", "0"], d, path),
    ]


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------

class Stats:
    COLUMNS = ["total", "exit0", "exit1", "exit2", "other", "crash", "hang", "silent", "stdout",
               "modified", "escaped", "skipped"]

    def __init__(self):
        self.lock = threading.Lock()
        self.per_command = {}
        self.findings = []
        self.cmd_seconds = 0.0

    def add(self, label, column):
        with self.lock:
            row = self.per_command.setdefault(label, {c: 0 for c in self.COLUMNS})
            row[column] += 1


def is_asan(cli):
    try:
        with open(cli, "rb") as f:
            tail = b""
            while True:
                chunk = f.read(1 << 22)
                if not chunk:
                    return False
                if b"__asan_init" in tail + chunk:
                    return True
                tail = chunk[-16:]
    except OSError:
        return False


def copy_safely(src, dst):
    """Copy regular files, folders and symbolic links (as links); a FIFO, device or socket is
    recreated as an empty note file, never opened (opening a FIFO blocks)."""
    try:
        st = os.lstat(src)
    except OSError:
        return
    try:
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src), dst)
        elif stat.S_ISDIR(st.st_mode):
            os.makedirs(dst, exist_ok=True)
            for n in sorted(os.listdir(src)):
                copy_safely(os.path.join(src, n), os.path.join(dst, n))
        elif stat.S_ISREG(st.st_mode):
            shutil.copyfile(src, dst)
        else:
            with open(dst + ".special", "w") as f:
                f.write("%s was a %s (mode %o); recreate it (e.g. mkfifo) to reproduce\n"
                        % (os.path.basename(src), "FIFO" if stat.S_ISFIFO(st.st_mode) else "special file",
                           st.st_mode))
    except OSError:
        pass


def save_finding(args_, case, label, cmd_args, cwd, what, rc, stderr, stats):
    fdir = os.path.join(args_.work, "findings", "%05d-%s-%s" % (case.index, what, label.replace(" ", "_")
                                                                    .replace("/", "_").replace("(", "")
                                                                    .replace(")", "")))
    os.makedirs(fdir, exist_ok=True)
    for p in case.inputs:
        copy_safely(p, os.path.join(fdir, os.path.basename(p)))
    # The whole case folder too (projects name files beside them)
    copy_safely(case.dir, os.path.join(fdir, "case"))
    cmdline = "cd %s && %s %s" % (shlex.quote(cwd), shlex.quote(args_.cli), " ".join(shlex.quote(a) for a in cmd_args))
    with open(os.path.join(fdir, "reproduce.sh"), "w") as f:
        f.write("#!/bin/sh\n# %s (exit %s) case %d: %s\nulimit -v %d\n%s\n" % (
            what, rc, case.index, "; ".join(case.notes)[:2000], args_.memory_mib * 1024, cmdline))
    with open(os.path.join(fdir, "stderr.txt"), "w") as f:
        f.write(stderr)
    line = "FINDING %-8s %-28s case %5d exit %-5s %s | %s | %s" % (
        what, label, case.index, rc, "; ".join(case.notes)[:300], cmdline[:400],
        stderr.strip().replace("\n", " ⏎ ")[:300])
    with stats.lock:
        stats.findings.append(line)
        print(line, flush=True)


def json_reports_failure(stdout):
    """--json output of a refusal: a JSON object that says what is wrong."""
    try:
        doc = json.loads(stdout)
    except ValueError:   # a report past what was read (head and tail): look for the verdict
        return bool(re.search(r'"valid":\s*false', stdout))
    if not isinstance(doc, dict):
        return False
    issues = doc.get("issues")
    if isinstance(issues, list) and issues:
        return True
    validation = doc.get("validation")
    if isinstance(validation, dict) and validation.get("valid") is False:
        return True
    return doc.get("valid") is False or doc.get("ok") is False or doc.get("pass") is False \
        or bool(doc.get("error"))


def explains(stdout):
    low = stdout.lower()
    return any(w in low for w in ("invalid", "fail", "error", "refuse", "cannot"))


def run_case(args_, runner, case, stats):
    hangs = 0
    imported_ok = False
    keep = False
    for label, cmd_args, cwd, watch in case.commands:
        if watch == "if-exists":
            if not imported_ok:
                continue
            watch = None
        if case.special and hangs >= 2:
            stats.add(label, "total")
            stats.add(label, "skipped")
            continue
        before = sha(watch) if watch else None
        timeout = min(args_.timeout, 10) if case.special else args_.timeout
        json_mode = "--json" in cmd_args
        rc, hung, stderr, secs, stdout = runner.run(cmd_args, cwd, timeout, keep_stdout=True)
        with stats.lock:
            stats.cmd_seconds += secs
        stats.add(label, "total")
        if rc is None:
            stats.add(label, "skipped")
            continue
        what = None
        if hung:
            stats.add(label, "hang")
            hangs += 1
            what = "hang"
        elif rc < 0 or rc >= 128 or any(m in stderr for m in CRASH_MARKERS):
            stats.add(label, "crash")
            what = "crash"
        else:
            stats.add(label, {0: "exit0", 1: "exit1", 2: "exit2"}.get(rc, "other"))
            if rc not in (0, 1, 2):
                what = "exit%d" % rc
            elif rc == 1 and not any(l.startswith("tapestry:") for l in stderr.splitlines()):
                if (json_mode and json_reports_failure(stdout)) or (not json_mode and explains(stdout)):
                    # The reason is in the report on standard output (show on an invalid project,
                    # passes with a failed certificate, --json): documented, not silent.
                    stats.add(label, "stdout")
                else:
                    stats.add(label, "silent")
                    what = "silent"
        if what is None and watch and rc != 0 and before is not None and sha(watch) != before:
            stats.add(label, "modified")
            what = "modified"
        if what is None and label.startswith("session export"):
            exp_root = os.path.join(case.dir, "exp")
            escaped = []
            for root, dirs, files in os.walk(case.dir):
                if root.startswith(os.path.join(exp_root, "inner")):
                    continue
                escaped += [os.path.join(root, f) for f in files + dirs if "escaped" in f]
            if escaped:
                stats.add(label, "escaped")
                what = "escaped"
                stderr += "\nfiles written outside the export folder: %s" % escaped
        if label == "import" and rc == 0:
            imported_ok = True
        if what:
            keep = True
            save_finding(args_, case, label, cmd_args, cwd, what, rc, stderr, stats)
    if not keep and not args_.keep:
        shutil.rmtree(case.dir, ignore_errors=True)


SOURCE = "."


def main():
    global SOURCE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True, help="the tapestry binary")
    ap.add_argument("--source", required=True, help="repository root (seeds)")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20, help="seconds per command")
    ap.add_argument("--memory-mib", type=int, default=4096, help="ulimit -v of each command (0: none)")
    ap.add_argument("--work", help="work folder (default: a new temporary one)")
    ap.add_argument("--report", help="write a JSON summary here")
    ap.add_argument("--jobs", type=int, default=2, help="cases run at once")
    ap.add_argument("--only", choices=["project", "npy", "onnx", "session"], help="one kind of input")
    ap.add_argument("--case", type=int, action="append", help="run only this case index (repeatable)")
    ap.add_argument("--keep", action="store_true", help="keep every case folder")
    args_ = ap.parse_args()
    args_.cli = os.path.abspath(args_.cli)
    SOURCE = os.path.abspath(args_.source)
    if not os.access(args_.cli, os.X_OK):
        print("bad_inputs.py: %s is not an executable" % args_.cli, file=sys.stderr)
        return 2
    if args_.work:
        args_.work = os.path.abspath(args_.work)
        if os.path.isdir(args_.work):
            shutil.rmtree(args_.work)
        os.makedirs(args_.work)
    else:
        args_.work = tempfile.mkdtemp(prefix="tapestry-campaign-")
    asan = is_asan(args_.cli)
    if asan:
        pass
    runner = Runner(args_.cli, args_.timeout, args_.memory_mib, asan)
    if asan:
        print("note: %s is built with AddressSanitizer: no ulimit -v (ASan reserves terabytes of "
              "address space); ASAN_OPTIONS=%s" % (args_.cli, runner.env["ASAN_OPTIONS"]))
    seeds = Seeds(SOURCE)
    print("bad-input campaign: %d cases, seed %d, %s, timeout %gs, ulimit -v %s, work %s" % (
        args_.cases, args_.seed, args_.cli, args_.timeout,
        "%d MiB" % args_.memory_mib if runner.memory else "none", args_.work))
    print("seeds: %d projects (%d unparsable), %d npy, %d onnx" % (
        len(seeds.projects), len(seeds.project_texts), len(seeds.npy), len(seeds.onnx)), flush=True)
    bases = SessionBases(runner, args_.work)
    stats = Stats()
    t0 = time.monotonic()
    kinds = [("project", 0.45), ("npy", 0.20), ("onnx", 0.20), ("session", 0.15)]

    def build(i):
        rng = random.Random("tapestry-campaign/%d/%d" % (args_.seed, i))
        x = rng.random()
        kind = "session"
        for k, w in kinds:
            if x < w:
                kind = k
                break
            x -= w
        if args_.only:
            kind = args_.only
        case = Case(i, kind, os.path.join(args_.work, "cases", "%05d" % i))
        os.makedirs(case.dir, exist_ok=True)
        if kind == "project":
            make_project_case(case, rng, seeds)
        elif kind == "npy":
            make_npy_case(case, rng, seeds)
        elif kind == "onnx":
            make_onnx_case(case, rng, seeds)
        else:
            make_session_case(case, rng, seeds, bases)
        return case

    indices = args_.case if args_.case else range(args_.cases)
    done = [0]
    counts = {}

    def job(i):
        case = build(i)
        with stats.lock:
            counts[case.kind] = counts.get(case.kind, 0) + 1
        run_case(args_, runner, case, stats)
        with stats.lock:
            done[0] += 1
            if done[0] % 50 == 0:
                print("  %d cases done, %.0f s" % (done[0], time.monotonic() - t0), flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args_.jobs)) as pool:
        for f in [pool.submit(job, i) for i in indices]:
            f.result()
    wall = time.monotonic() - t0

    cols = Stats.COLUMNS
    width = max([len(k) for k in stats.per_command] + [10])
    print()
    print("%-*s " % (width, "command") + " ".join("%8s" % c for c in cols))
    totals = {c: 0 for c in cols}
    for label in sorted(stats.per_command):
        row = stats.per_command[label]
        print("%-*s " % (width, label) + " ".join("%8d" % row[c] for c in cols))
        for c in cols:
            totals[c] += row[c]
    print("%-*s " % (width, "all") + " ".join("%8d" % totals[c] for c in cols))
    print("cases by kind: %s; %d commands, %.0f s wall (%.0f s in commands, %d jobs)" % (
        ", ".join("%s %d" % kv for kv in sorted(counts.items())), totals["total"], wall,
        stats.cmd_seconds, args_.jobs))
    n = len(list(indices))
    crashes, hangs, silent = totals["crash"], totals["hang"], totals["silent"]
    other = totals["other"] + totals["modified"] + totals["escaped"]
    if stats.findings:
        print("findings saved under %s" % os.path.join(args_.work, "findings"))
    if other:
        print("campaign: %d other findings (%d unexpected exit codes, %d refused files modified, "
              "%d files written outside the export folder)" % (other, totals["other"], totals["modified"],
                                                                totals["escaped"]))
    if args_.report:
        with open(args_.report, "w") as f:
            json.dump({"cases": n, "seed": args_.seed, "wall_s": round(wall, 1), "crashes": crashes,
                       "hangs": hangs, "silent_failures": silent, "other_findings": other,
                       "cases_by_kind": counts, "per_command": stats.per_command,
                       "findings": stats.findings, "work": args_.work}, f, indent=2)
    print("campaign: %d cases, %d crashes, %d hangs, %d silent failures" % (n, crashes, hangs, silent))
    return 1 if crashes + hangs + silent + other > 0 else 0


if __name__ == "__main__":
    sys.exit(main())
