#!/usr/bin/env python3
"""RAILCOLL_TRACE's files are Chrome/Perfetto trace-event JSON (checked against a
JSON schema of the format's object form), a 1 MiB all-gather over 2 rails shows
frames arriving on both rails, and `railcoll trace` merges the ranks, sums them
up and draws a PNG; `railcoll sim --trace` writes the same format for the same
call, and `railcoll trace --compare` draws the two side by side.   usage: test_trace_format.py RAILCOLL [cluster]
(cluster: on the emulated cluster, which the caller brings up)."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema

RC = sys.argv[1]
WHERE = sys.argv[2] if len(sys.argv) > 2 else "local"
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what)
    passed, failed = passed + ok, failed + (not ok)


# The trace-event format (Chrome's "Trace Event Format" document, JSON object
# form): complete events need ts and dur, metadata events name processes and
# threads.
EVENT = {
    "type": "object",
    "required": ["name", "ph", "pid"],
    "properties": {
        "name": {"type": "string"},
        "ph": {"enum": ["X", "M", "B", "E", "i", "C"]},
        "pid": {"type": "integer", "minimum": 0},
        "tid": {"type": "integer", "minimum": 0},
        "ts": {"type": "number"},
        "dur": {"type": "number", "minimum": 0},
        "cat": {"type": "string"},
        "args": {"type": "object"},
    },
    "allOf": [
        {"if": {"properties": {"ph": {"const": "X"}}},
         "then": {"required": ["ts", "dur", "tid", "cat", "args"],
                  "properties": {"args": {"required": ["call"], "properties": {"call": {"type": "integer"}}}}}},
        {"if": {"properties": {"ph": {"const": "M"}}},
         "then": {"required": ["args"], "properties": {"name": {
             "enum": ["process_name", "thread_name", "process_sort_index", "thread_sort_index"]}}}},
    ],
}
SCHEMA = {"type": "object", "required": ["traceEvents"],
          "properties": {"traceEvents": {"type": "array", "items": EVENT},
                         "displayTimeUnit": {"enum": ["ms", "ns"]}, "otherData": {"type": "object"}}}

d = tempfile.mkdtemp(prefix="railcoll-trace-")
env = dict(os.environ, RAILCOLL_TRACE=d)
cmd = [RC, "bench", "allgather", "--algo", "direct", "-m", "1M:1M", "-i", "3", "-x", "1"]
if WHERE != "cluster":
    cmd += ["--local", "-n", "4", "--ppn", "2", "--rails", "2"]
r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
check(r.returncode == 0, "a traced 1 MiB all-gather runs: " + r.stderr[-300:])
files = sorted(glob.glob(os.path.join(d, "trace-*-rank*.json")))
check(len(files) >= 4, f"one trace file per rank ({len(files)})")
rails_seen = set()
for f in files:
    doc = json.load(open(f))
    try:
        jsonschema.validate(doc, SCHEMA)
        check(True, os.path.basename(f) + " is trace-event JSON")
    except jsonschema.ValidationError as e:
        check(False, os.path.basename(f) + ": " + e.message)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "rail" and e["args"].get("bytes", 0) > 0:
            rails_seen.add(e["args"]["rail"])
check(rails_seen >= {0, 1}, f"frames arrived on both rails ({sorted(rails_seen)})")
r = subprocess.run([RC, "trace", d], capture_output=True, text=True, timeout=300)
check(r.returncode == 0 and "slowest call" in r.stdout and "rail 1:" in r.stdout, "railcoll trace sums up: " +
      (r.stdout + r.stderr)[-400:])
# Both rails busy: the summary gives each rail time ("rail R: B B, busy T rank-us"), as the PNG draws it.
busy = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"rail (\d+): \d+ B, busy ([0-9.]+) rank-us", r.stdout)}
check(busy.get(0, 0) > 0 and busy.get(1, 0) > 0, f"both rails were busy, in rank-us: {busy}")
merged = os.path.join(d, "trace.json")
ok = os.path.exists(merged)
if ok:
    try:
        jsonschema.validate(json.load(open(merged)), SCHEMA)
    except jsonschema.ValidationError as e:
        ok = False
check(ok, "the merged trace.json is trace-event JSON")
png = os.path.join(d, "trace.png")
check(os.path.exists(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "railcoll trace draws " + png)

# The simulator's trace of the same call (4 ranks on 2 nodes, 2 rails, the
# testbed preset): the same format, and --compare sets it beside the measured one.
sim_dir = tempfile.mkdtemp(prefix="railcoll-simtrace-")
n_ranks = max(4, len(files))
r = subprocess.run([RC, "sim", "allgather", "--preset", "testbed", "--ranks", str(n_ranks), "--ppn", "2",
                    "--rails", "2", "--algo", "direct", "-m", "1M:1M", "--trace", sim_dir],
                   capture_output=True, text=True, timeout=300)
check(r.returncode == 0, "railcoll sim --trace runs: " + (r.stdout + r.stderr)[-300:])
sim_files = sorted(glob.glob(os.path.join(sim_dir, "trace-sim-rank*.json")))
check(len(sim_files) == n_ranks, f"the simulator writes one trace file per rank ({len(sim_files)} of {n_ranks})")
sim_rails, sim_calls = set(), 0
for f in sim_files:
    doc = json.load(open(f))
    try:
        jsonschema.validate(doc, SCHEMA)
        check(True, "simulated " + os.path.basename(f) + " is trace-event JSON")
    except jsonschema.ValidationError as e:
        check(False, "simulated " + os.path.basename(f) + ": " + e.message)
    check(doc.get("otherData", {}).get("source") == "simulated", os.path.basename(f) + " says it is simulated")
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "rail" and e["args"].get("bytes", 0) > 0:
            sim_rails.add(e["args"]["rail"])
        if e.get("ph") == "X" and e.get("cat") == "call" and "allgather/direct with 1048576 B" in e["name"]:
            sim_calls += 1
check(sim_rails >= {0, 1}, f"the model's frames arrive on both rails ({sorted(sim_rails)})")
check(sim_calls == n_ranks, f"every simulated rank has the call's span, named as the runtime names it ({sim_calls})")
png = os.path.join(sim_dir, "compare.png")
r = subprocess.run([RC, "trace", "--compare", d, sim_dir, "--png", png], capture_output=True, text=True, timeout=300)
check(r.returncode == 0 and os.path.exists(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
      "railcoll trace --compare MEASURED SIMULATED draws them side by side: " + (r.stdout + r.stderr)[-300:])
print(f"{passed} passed, {failed} failed (kept: {d}, {sim_dir})")
sys.exit(1 if failed else 0)
