#!/usr/bin/env bash
# Broadcast latency and bandwidth against the number of nodes (seed 004 §4.2,
# seed 003 §4.2): the emulated cluster with 2, 4 and 8 nodes of 2 ranks and 2
# rails of 1 Gbit/s, `railcoll bench bcast` (auto) and Open MPI at each, then
# results/bcast-vs-nodes.{txt,png}. Needs root; takes the cluster down at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
RC=build/bin/railcoll
[ "$(id -u)" = 0 ] || { echo "bcast-vs-nodes: needs root (network namespaces)"; exit 2; }
mkdir -p results
exec 9>/tmp/railcoll-cluster.lock
flock 9
trap '"$RC" cluster down >/dev/null 2>&1 || true' EXIT
for nodes in 2 4 8; do
  "$RC" cluster down >/dev/null 2>&1 || true
  "$RC" cluster up --nodes "$nodes" --ppn 2 --rails 2 --rate 1gbit >/dev/null
  "$RC" bench bcast --algo auto -m 8:1M -i 40 -c --mpi --json "results/bcast-nodes-$nodes.json" |
    sed -n '/# Summary/,$p'
done | tee results/bcast-vs-nodes.txt
python3 - <<'PY'
import json
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, (lat, bw) = plt.subplots(1, 2, figsize=(13, 5))
for nodes in (2, 4, 8):
    recs = json.load(open(f"results/bcast-nodes-{nodes}.json"))
    for label, style in (("auto", "-"), ("mpi:han", "--")):
        pts = sorted((r["bytes"], r["p50_us"]) for r in recs if r["algorithm"] == label and r["bytes"] > 0)
        if not pts:
            continue
        xs = [p[0] for p in pts]
        lat.plot(xs, [p[1] for p in pts], style, marker="o", ms=3, label=f"{label}, {nodes} nodes")
        bw.plot(xs, [p[0] / p[1] for p in pts], style, marker="o", ms=3, label=f"{label}, {nodes} nodes")
for ax, ylabel in ((lat, "median latency (us)"), (bw, "bandwidth (MB/s = bytes / median us)")):
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message bytes")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
fig.suptitle("bcast vs nodes: emulated cluster, 2 ranks per node, 2 rails x 1 Gbit/s")
fig.tight_layout()
fig.savefig("results/bcast-vs-nodes.png", dpi=110)
print("wrote results/bcast-vs-nodes.png")
PY
