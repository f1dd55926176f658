#!/usr/bin/env bash
# Issue 34 item 7, one command: the small-message floor. Back to back (OSU's
# loop, --idle-us 0), every collective at 8 B - 4 KiB, railcoll's auto against
# Open MPI's tuned and HAN and oneCCL, 3 alternated rounds; then what one call
# costs: railcoll's instructions per all-gather (callgrind, scripts/call_cost.sh)
# and each side's system calls per call (strace -c on rank 0 of 1000 calls of 8 B).
#   scripts/small-floor.sh            on the cluster that is up
#   scripts/small-floor.sh --local    like for like on this machine: ONE node of 8
#                                     ranks, shared memory on both sides (Open MPI's
#                                     vader, oneCCL's libfabric shm, railcoll's node
#                                     segment); about 5 minutes
#   scripts/small-floor.sh --local --two-pretend-nodes
#                                     also 8 ranks as 2 pretend nodes of 4: NOT like
#                                     for like (railcoll crosses loopback TCP between
#                                     its pretend nodes, Open MPI's ranks share memory
#                                     across them); labelled so in its files
# Into results/floor/ (two pretend nodes: results/floor/two-pretend-nodes/); the
# load averages beside the numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
RC=build/bin/railcoll
out=results/floor
local=0 two=0
for a in "$@"; do
  case $a in
    --local) local=1 ;;
    --two-pretend-nodes) two=1 ;;
    *) echo "usage: scripts/small-floor.sh [--local [--two-pretend-nodes]]" >&2; exit 2 ;;
  esac
done
rm -rf "$out" && mkdir -p "$out"

# sweep DIR LABEL [where...]: the nine collectives into DIR.
sweep() {
  local dir=$1 label=$2
  shift 2
  mkdir -p "$dir"
  echo "$label; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$dir/NOTE"
  for c in allgather bcast gather scatter allreduce reduce reduce_scatter_block alltoall barrier; do
    local extra=(-m 8:4K)
    [ "$c" = barrier ] && extra=(-i 3000)
    echo "=== $c ($label)"
    "$RC" bench "$c" --algo auto "${extra[@]}" --idle-us 0 -c --rounds 3 --peer mpi,oneccl "${oneccl[@]}" "$@" \
      --json "$dir/$c.json" | tee "$dir/$c.txt" | sed -n '/The field.s figures/,$p'
  done
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$dir/NOTE"
}

if [ $local = 1 ]; then
  # One node: oneCCL with libfabric's shared memory (w1-shm) beside its tcp one.
  oneccl=(--oneccl-settings w1,w1-shm)
  sweep "$out" "one node of 8 ranks, shared memory on both sides (like for like)" --local -n 8 --ppn 8 --rails 2
  ranks=8 ppn=8
else
  oneccl=()
  sweep "$out" "the emulated cluster"
  ranks=4 ppn=2
fi
if [ $two = 1 ]; then
  oneccl=()
  sweep "$out/two-pretend-nodes" "8 ranks as 2 pretend nodes of 4: NOT like for like (railcoll crosses loopback TCP between the pretend nodes, Open MPI shares memory across them)" \
    --local -n 8 --ppn 4 --rails 2
fi

# What a call costs: instructions (railcoll) and system calls (both sides), on
# the ranks and nodes of the sweep above (--local: one node of 8).
CALL_COST_RANKS=$ranks CALL_COST_PPN=$ppn scripts/call_cost.sh build 8 2000 1 | tee "$out/call-cost.txt"
strace_rank0() {  # LABEL CMD...: strace -c -f of rank 0 only
  local label=$1
  shift
  "$@" >/dev/null 2>"$out/strace-$label.txt" || true
  echo "# $label: $(grep -E 'total' "$out/strace-$label.txt" | tail -1)"
}
echo "# system calls of rank 0, 1000 all-gathers of 8 B (+10 warm-up), $ranks ranks in nodes of $ppn:"
strace_rank0 railcoll "$RC" run -n $ranks --ppn $ppn --rails 2 -- sh -c '[ "$RAILCOLL_RANK" = 0 ] &&
  exec strace -c -f -o /dev/stderr "$0" bench allgather --worker --algo auto -m 8:8 -i 1000 -x 10 --idle-us 0 ||
  exec "$0" bench allgather --worker --algo auto -m 8:8 -i 1000 -x 10 --idle-us 0' "$RC"
strace_rank0 openmpi mpirun --allow-run-as-root --oversubscribe -n $ranks sh -c '[ "$OMPI_COMM_WORLD_RANK" = 0 ] &&
  exec strace -c -f -o /dev/stderr "$0" --coll allgather -m 8:8 -i 1000 -x 10 ||
  exec "$0" --coll allgather -m 8:8 -i 1000 -x 10' build/bin/railcoll-mpi-bench
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/NOTE"
