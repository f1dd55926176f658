#!/usr/bin/env python3
"""The floors of the source tree (docs/extending.md, "Layout"): a folder includes
only folders on floors below it, and the rooms of the runtime
(src/runtime/bootstrap, engine, transport and its own folders) make no circle.
Reads every #include "..." under src/; prints one line per wrong arrow and
"N passed, N failed"."""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
# src/<folder>: its floor. A folder may include only folders on lower floors.
FLOORS = {"core": 0, "algos": 1, "select": 2, "verify": 3, "sim": 3, "runtime": 3,
          "capi": 4, "testbed": 4, "bench": 5, "mpi": 5}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    for top, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            if f.endswith((".c", ".cpp", ".h", ".hpp")):
                path = os.path.join(top, f)
                yield os.path.relpath(path, ROOT), open(path, errors="replace").read()


def room(path):  # "src/runtime/engine/plan.hpp" -> "src/runtime/engine"; every folder is a room
    return os.path.dirname(path)


edges = {}  # (from room, to room) -> an example
wrong = []
for path, text in sources():
    for inc in INCLUDE.findall(text):
        target = os.path.join("src", inc)
        if not os.path.exists(os.path.join(ROOT, target)):
            continue  # a system or generated header, or one beside the file
        a, b = path.split("/")[1], target.split("/")[1]
        if a != b and not (a in FLOORS and b in FLOORS and FLOORS[a] > FLOORS[b]):
            wrong.append(f"{path} includes {inc}: src/{a} may not include src/{b}")
        ra, rb = room(path), room(target)
        if ra != rb and ra.startswith("src/runtime") and rb.startswith("src/runtime"):
            edges.setdefault((ra, rb), f"{path} includes {inc}")

# Circles among the runtime's rooms: a room that reaches itself.
graph = {}
for a, b in edges:
    graph.setdefault(a, set()).add(b)
for start in sorted(graph):
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt == start:
                back = [edges[(a, b)] for (a, b) in edges if a in seen | {start} and b == start][:1]
                wrong.append(f"{start} is in a circle ({'; '.join(back)})")
                todo = []
                break
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)

for w in wrong:
    print("FAIL", w)
passed = 0 if wrong else 1
print(f"{passed} passed, {len(wrong)} failed")
sys.exit(1 if wrong else 0)
