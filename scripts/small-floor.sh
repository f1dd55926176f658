#!/usr/bin/env bash
# Issue 34 item 7, one command: the small-message floor. Back to back (OSU's
# loop, --idle-us 0), every collective at 8 B - 4 KiB, railcoll's auto against
# Open MPI's tuned and HAN and oneCCL, 3 alternated rounds, on the cluster
# that is up or (without one) on 8 local processes; then what one call costs:
# railcoll's instructions per all-gather (callgrind, scripts/call_cost.sh) and
# each side's system calls per call (strace -c on rank 0 of 1000 calls of 8 B).
# Into results/floor/; the load averages beside the numbers.
#   scripts/small-floor.sh [--local]
set -euo pipefail
cd "$(dirname "$0")/.."
RC=build/bin/railcoll
out=results/floor
rm -rf "$out" && mkdir -p "$out"
where=()
[ "${1:-}" = --local ] && where=(--local -n 8 --ppn 4 --rails 2)
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/NOTE"
for c in allgather bcast gather scatter allreduce reduce reduce_scatter_block alltoall barrier; do
  extra=(-m 8:4K)
  [ "$c" = barrier ] && extra=(-i 3000)
  echo "=== $c"
  "$RC" bench "$c" --algo auto "${extra[@]}" --idle-us 0 -c --rounds 3 --peer mpi,oneccl "${where[@]}" \
    --json "$out/$c.json" | tee "$out/$c.txt" | sed -n '/The field.s figures/,$p'
done
# What a call costs: instructions (railcoll) and system calls (both sides).
scripts/call_cost.sh build 8 2000 3 | tee "$out/call-cost.txt"
strace_rank0() {  # LABEL CMD...: strace -c -f of rank 0 only
  local label=$1
  shift
  "$@" >/dev/null 2>"$out/strace-$label.txt" || true
  echo "# $label: $(grep -E 'total' "$out/strace-$label.txt" | tail -1)"
}
strace_rank0 railcoll "$RC" run -n 4 --ppn 2 --rails 2 -- sh -c '[ "$RAILCOLL_RANK" = 0 ] &&
  exec strace -c -f -o /dev/stderr "$0" bench allgather --worker --algo auto -m 8:8 -i 1000 -x 10 --idle-us 0 ||
  exec "$0" bench allgather --worker --algo auto -m 8:8 -i 1000 -x 10 --idle-us 0' "$RC"
strace_rank0 openmpi mpirun --allow-run-as-root --oversubscribe -n 4 sh -c '[ "$OMPI_COMM_WORLD_RANK" = 0 ] &&
  exec strace -c -f -o /dev/stderr "$0" --coll allgather -m 8:8 -i 1000 -x 10 ||
  exec "$0" --coll allgather -m 8:8 -i 1000 -x 10' build/bin/railcoll-mpi-bench
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/NOTE"
