#!/usr/bin/env bash
# `make run`: the project's main job. Brings up the default emulated cluster
# (4 nodes x 4 ranks, 2 rails x 1 Gbit/s) and benchmarks, against Open MPI
# (tuned and HAN) on the same ranks, and railcoll reached through the same MPI
# benchmark binary (mpi:railcoll: librailcoll_mpi.so preloaded, docs/mpi.md),
# with every result validated:
#   every all-gather algorithm from 8 B to 1 MiB per rank, and auto again with
#   calls back to back as OSU times them (mean and p99 of each rank's own time),
#   every barrier over 10,000 back-to-back calls, quiet and under uniform
#   background traffic (seed 004 §5),
#   every broadcast and allreduce from 8 B (4 B) to 1 MiB;
#   every alltoall algorithm from 8 B to 1 MiB per pair of ranks;
# prints the summaries, writes results/<collective>.{json,csv,png,txt} and takes
# the cluster down again. The cluster needs root; without root it stops, unless
# asked for local processes (`make run LOCAL=1`, or --local here): it never
# measures something other than the cluster unasked.
set -euo pipefail
cd "$(dirname "$0")/.."
RC=build/bin/railcoll
mkdir -p results
out() { echo --json "results/$1.json" --csv "results/$1.csv" --plot "results/$1.png"; }

"$RC" show allgather --algo bruck --ranks 9 --rails 2 | tail -4
"$RC" verify --all | tail -1

local=0
case "${1:-}" in
  --local) local=1 ;;
  "") ;;
  *) echo "usage: scripts/main-job.sh [--local]" >&2; exit 2 ;;
esac
if [ "$local" = 0 ] && [ "$(id -u)" != 0 ]; then
  echo "make run: the emulated cluster needs root (network namespaces); run as root, or ask for" >&2
  echo "          8 local processes in 2 pretend nodes with 2 loopback rails: make run LOCAL=1" >&2
  exit 2
fi

where=()
if [ "$local" = 0 ]; then
  "$RC" cluster down >/dev/null 2>&1 || true
  trap '"$RC" cluster down >/dev/null 2>&1 || true' EXIT
  "$RC" cluster up --nodes 4 --ppn 4 --rails 2 --rate 1gbit
  background=(--background uniform)
else
  echo "make run: local processes, as asked (LOCAL=1): 8 in 2 pretend nodes with 2 loopback rails"
  where=(--local -n 8 --ppn 4 --rails 2)
  background=()
fi
"$RC" bench allgather --algo all -m 8:1M -c --mpi "${where[@]}" $(out allgather) | tee results/allgather.txt
# The field's way (OSU): calls back to back, a barrier between them; the
# summary's second table has each side's mean of every rank's own time and p99.
"$RC" bench allgather --algo auto -m 8:1M -c --mpi --idle-us 0 "${where[@]}" $(out allgather-back-to-back) |
  tee results/allgather-back-to-back.txt
"$RC" bench barrier --algo all -c --mpi "${background[@]}" "${where[@]}" $(out barrier) | tee results/barrier.txt
"$RC" bench bcast --algo all -m 8:1M -c --mpi "${where[@]}" $(out bcast) | tee results/bcast.txt
"$RC" bench allreduce --algo all -m 4:1M -c --mpi "${where[@]}" $(out allreduce) | tee results/allreduce.txt
"$RC" bench alltoall --algo all -m 8:1M -c --mpi "${where[@]}" $(out alltoall) | tee results/alltoall.txt
