#!/bin/bash
# Raw TCP all-to-all on the emulated cluster (railcoll cluster up first): what
# the shaped rails give a plain program, to compare railcoll's all-gather with
# (docs/runtime.md, "Rails kept full"). Holds the cluster lock while it runs.
#   scripts/tcp-alltoall.sh [--ppn P] [--steps] [--lowat B] [--calls N] BYTES
# Every process l of every node sends BYTES to process l of every other node on
# each of its rails: with --ppn 1 on every rail, else on rail l mod (rails).
# Prints the median over calls of the slowest process's time and its share of
# the rail bound (bytes a node receives per rail / the rail's rate).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
probe=${PROBE:-$here/build/bin/railcoll-tcp-alltoall}
rc=${RC:-$here/build/bin/railcoll}
ppn=1 calls=30 mode=once lowat=0
while [ $# -gt 1 ]; do
  case $1 in
    --ppn) ppn=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --steps) mode=steps; shift ;;
    --lowat) lowat=$2; shift 2 ;;
    *) echo "tcp-alltoall: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -eq 1 ] || { echo "usage: scripts/tcp-alltoall.sh [--ppn P] [--steps] [--lowat B] [--calls N] BYTES" >&2; exit 2; }
bytes=$1
exec 9>/tmp/railcoll-cluster.lock
flock 9
"$rc" cluster status >/dev/null 2>&1 || { echo "tcp-alltoall: no cluster is up (railcoll cluster up)" >&2; exit 1; }
conf=/run/railcoll/cluster.conf  # written by railcoll cluster up (docs/cluster.md)
value() { sed -n "s/^$1=//p" "$conf"; }
nodes=$(value nodes) rails=$(value rails) bps=$(value rate_bps)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Long enough between calls for the slowest to end and the shapers to refill.
per_rail=$(( (nodes - 1) * bytes * (ppn == 1 ? 1 : (ppn + rails - 1) / rails) ))
period_ms=$(( per_rail * 8 * 3 / (bps / 1000) + 20 ))
t0=$(python3 -c 'import time; print(int((time.clock_gettime(time.CLOCK_MONOTONIC) + 2) * 1e9))')
for n in $(seq 0 $((nodes - 1))); do
  for l in $(seq 0 $((ppn - 1))); do
    if [ "$ppn" -eq 1 ]; then first=0 use=$rails; else first=$((l % rails)) use=1; fi
    TCP_A2A_MODE=$mode TCP_A2A_LOWAT=$lowat ip netns exec "rc-n$n" "$probe" "$n" "$nodes" "$l" "$first" "$use" "$bytes" "$calls" \
      "$period_ms" "$t0" >"$out/$n.$l" &
  done
done
wait
# The slowest process's time per call, then the median over calls.
cat "$out"/* | awk '{ if ($3 > t[$2]) t[$2] = $3 } END { for (c in t) print t[c] }' | sort -n |
  awk -v per_rail="$per_rail" -v bps="$bps" -v mode="$mode" -v ppn="$ppn" '
  { t[NR] = $1 }
  END {
    p50 = t[int((NR + 1) / 2)]; bound = per_rail * 8 / bps * 1e6
    printf "raw TCP all-to-all (%s), %d process(es) per node: p50 %.0f us (min %.0f, max %.0f) over %d calls; rail bound %.0f us: %.0f%%\n",
      mode, ppn, p50, t[1], t[NR], NR, bound, 100 * bound / p50 }'
