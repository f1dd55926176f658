#!/usr/bin/env bash
# Broadcast latency and bandwidth against the number of nodes (seed 004 §4.2,
# seed 003 §4.2): the emulated cluster with 2, 4 and 8 nodes of 2 ranks and 2
# rails of 1 Gbit/s, `railcoll bench bcast` (auto) and Open MPI at each, then
# results/bcast-vs-nodes.{txt,png} (the median span: first rank in to last rank
# out). Needs root; takes the cluster down at the end.
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
python3 scripts/plot_bcast_vs_nodes.py results/bcast-vs-nodes.png \
  2=results/bcast-nodes-2.json 4=results/bcast-nodes-4.json 8=results/bcast-nodes-8.json
