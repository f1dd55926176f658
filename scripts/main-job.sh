#!/usr/bin/env bash
# `make run`: the project's main job (README, "The main job"). The verifier on
# every algorithm, then every collective against every peer on the emulated cluster
# (4 nodes x 4 ranks, 2 rails) in both regimes, one after the other:
#   faithful  rails at the rate this machine can feed (`cluster up --rate auto`:
#             the highest rate at which a plain TCP all-to-all reaches 95% of
#             the rail bound; docs/cluster.md), where the network is the bound;
#   1gbit     rails at 1 Gbit/s, more than 16 ranks on this machine's cores
#             can push through the kernel: the regime where the CPU binds.
# For each collective (allgather, bcast, gather, scatter, allreduce, reduce,
# reduce_scatter_block, alltoall, barrier): railcoll's auto against Open MPI's
# tuned and HAN and Intel oneCCL (the best of its settings), on the same ranks,
# in interleaved rounds (like for like: railcoll, then each peer, twice), every
# call validated; tables with algbw/busbw (nccl-tests) and the binding bound
# (rail or compute). Writes results/<regime>/<collective>.{json,csv,png,txt},
# and results/results.md: the table docs/results.md opens with
# (`railcoll report results`). The cluster needs root; without root the job
# stops, unless asked for local processes (`make run LOCAL=1`, or --local
# here): it never measures something other than the cluster unasked.
#
#   FULL=1 make run (or scripts/main-job.sh --full): the full sweep instead:
#   every algorithm of every collective, every oneCCL setting, 3 rounds, the
#   all-gather back to back (OSU's loop) and the barrier under background traffic.
set -euo pipefail
cd "$(dirname "$0")/.."
RC=build/bin/railcoll
full=${FULL:-0}
for arg in "$@"; do [ "$arg" = --full ] && full=1; done
start=$(date +%s)

"$RC" show allgather --algo bruck --ranks 9 --rails 2 | tail -4
# Every algorithm proven by the verifier in the shape the benchmarks run (16
# ranks, 4 nodes of 4, 2 rails, an odd size); the whole sweep over every
# topology is `railcoll verify --all` (make test runs it).
"$RC" algos --json | python3 -c '
import json, sys
for a in json.load(sys.stdin):
    print(a["collective"], a["algorithm"])' | {
  proven=0 wrong=0
  while read -r coll algo; do
    if "$RC" verify "$coll" --algo "$algo" --ranks 16 --ppn 4 --rails 2 --bytes 1000 >/dev/null 2>&1; then
      proven=$((proven + 1))
    else
      wrong=$((wrong + 1))
      echo "verify: $coll/$algo FAILED at 16 ranks, 4 per node, 2 rails, 1000 B"
    fi
  done
  echo "verify: $proven passed, $wrong failed (every algorithm at the benchmarks' shape)"
}

collectives=(allgather bcast gather scatter allreduce reduce reduce_scatter_block alltoall barrier)
if [ "$full" = 1 ]; then
  sweep=(--algo all --rounds 3 --oneccl-settings all)
  sizes=8:1M per_pair_sizes=8:1M
else
  # 5 sizes, 16 B to 1 MiB, each 16 times the last; 40 calls a size at most
  # (the 9 sizes of factor 4 made the job take 34 min: docs/results.md, item 8).
  sweep=(--algo auto --factor 16 -i 40 -x 4 --rounds 2)
  # alltoall's size is per pair, reduce_scatter_block's per block: 1 MiB is
  # 16 MiB a rank, a second a call at the faithful rate; they stop at 64 KiB.
  sizes=16:1M per_pair_sizes=16:64K
fi
peers=(--peer mpi,oneccl --timeout 600)  # a job that hangs fails its row after 10 minutes

# One regime: every collective at `where`, into results/$1.
run_regime() {
  local name=$1
  shift
  local dir=results/$name
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "measured by scripts/main-job.sh$([ "$full" = 1 ] && echo ' --full') on $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" >"$dir/NOTE"
  for c in "${collectives[@]}"; do
    local how=("${sweep[@]}" -m "$sizes")
    case $c in
      barrier) how=(--algo "${sweep[1]}" -i 1000 -x 20 --rounds 2) ;;
      alltoall | reduce_scatter_block) how=("${sweep[@]}" -m "$per_pair_sizes") ;;
    esac
    echo
    echo "=== $name: $c"
    local t0=$SECONDS
    "$RC" bench "$c" "${how[@]}" -c "${peers[@]}" "$@" \
      --json "$dir/$c.json" --csv "$dir/$c.csv" --plot "$dir/$c.png" | tee "$dir/$c.txt"
    # Where the job's time goes, so the default sweep can be kept under 20 minutes.
    echo "$c: $((SECONDS - t0)) s" | tee -a "$dir/NOTE"
  done
  if [ "$full" = 1 ] && [ "$(id -u)" = 0 ]; then
    "$RC" bench allgather --algo auto -m 8:1M -c --mpi --idle-us 0 | tee "$dir/allgather-back-to-back.txt"
    "$RC" bench barrier --algo all -c --mpi --background uniform | tee "$dir/barrier-background.txt"
  fi
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$dir/NOTE"
}

local=0
for arg in "$@"; do
  case "$arg" in
    --local) local=1 ;;
    --full) ;;
    *) echo "usage: scripts/main-job.sh [--local] [--full]" >&2; exit 2 ;;
  esac
done
if [ "$local" = 0 ] && [ "$(id -u)" != 0 ]; then
  echo "make run: the emulated cluster needs root (network namespaces); run as root, or ask for" >&2
  echo "          8 local processes in 2 pretend nodes with 2 loopback rails: make run LOCAL=1" >&2
  exit 2
fi

mkdir -p results
if [ "$local" = 0 ]; then
  # The cluster is one machine-wide resource: held under the lock while it is up.
  exec 9>/tmp/railcoll-cluster.lock
  flock 9
  trap '"$RC" cluster down >/dev/null 2>&1 || true' EXIT
  trap 'exit 130' INT TERM  # the EXIT trap takes the cluster down then too
  "$RC" cluster down >/dev/null 2>&1 || true
  "$RC" cluster up --nodes 4 --ppn 4 --rails 2 --rate auto
  run_regime faithful
  "$RC" cluster down >/dev/null
  "$RC" cluster up --nodes 4 --ppn 4 --rails 2 --rate 1gbit
  run_regime 1gbit
  "$RC" cluster down >/dev/null
  regimes=(results/faithful results/1gbit)
else
  echo "make run: local processes, as asked (LOCAL=1): 8 in 2 pretend nodes with 2 loopback rails"
  run_regime local --local -n 8 --ppn 4 --rails 2
  regimes=(results/local)
fi
"$RC" report results "${regimes[@]}" --into results/results.md
echo
cat results/results.md
echo
echo "make run: done in $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s; results/ holds every table, record and plot"
