#!/usr/bin/env bash
# What RAILCOLL_TRACE costs in wall-clock time (issue 31; docs/results-log.md,
# "Cost of watching calls"): back-to-back 64 KiB all-gathers, 4 local ranks on
# 2 pretend nodes, 2 rails, tracing off and on alternated ROUNDS times; each
# line: round, mode, OSU's mean and the median of the slowest rank (us), and
# the trace files written. Compare the medians of the rounds' medians.
#   usage: scripts/trace-cost.sh [ROUNDS]
set -u
cd "$(dirname "$0")/.."
RC=build/bin/railcoll
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "${1:-6}"); do
  for mode in off on; do
    rm -rf "${dir:?}"/*
    if [ $mode = on ]; then export RAILCOLL_TRACE=$dir; else unset RAILCOLL_TRACE; fi
    line=$("$RC" bench allgather --local -n 4 --ppn 2 --rails 2 --algo auto -m 64K:64K -i 400 -x 20 --idle-us 0 2>/dev/null | grep -E '^65536' | head -1)
    echo "$r $mode $(echo "$line" | awk '{print $2, $3}') files=$(find "$dir" -name '*.json' | wc -l)"
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
