#!/usr/bin/env bash
# The instructions one all-gather costs on rank 0, counted by valgrind's
# callgrind (tests/mp_call_cost.c, docs/runtime.md "Cost of a call"), in each
# form: blocking, nonblocking (iallgather + wait) and persistent (start + wait
# of one allgather_init request), the forms alternating ROUNDS times, 4 ranks
# on 2 pretend nodes of this machine (CALL_COST_RANKS, CALL_COST_PPN: other
# ranks and ranks per node; 8 and 8 is one node, shared memory only). Per
# form: every round's instructions per
# call, their minimum and median; then persistent / blocking (issue 21: a
# start does no plan or buffer work, so at most the blocking call's count).
# The count includes the progress rounds a rank spends waiting for its peers,
# so it moves from run to run: compare minima and medians. callgrind counts
# only the thread inside measured_calls, so the progress thread is off
# (RAILCOLL_PROGRESS_THREAD=0 unless set): then every instruction of a
# nonblocking or persistent call runs in the caller, inside wait, and counts.
#   usage: scripts/call_cost.sh [BUILD_DIR] [BYTES] [CALLS] [ROUNDS] [ALGORITHM]
set -eu
BUILD=${1:-build}
BYTES=${2:-8}
CALLS=${3:-2000}
ROUNDS=${4:-3}
ALGO=${5:--}
export RAILCOLL_PROGRESS_THREAD=${RAILCOLL_PROGRESS_THREAD:-0}
RANKS=${CALL_COST_RANKS:-4}
PPN=${CALL_COST_PPN:-2}
RC=$BUILD/bin/railcoll
PROG=$BUILD/bin/mp_call_cost
command -v valgrind >/dev/null || { echo "call_cost.sh: needs valgrind" >&2; exit 2; }
[ -x "$RC" ] && [ -x "$PROG" ] || { echo "call_cost.sh: build railcoll_cli and mp_call_cost in $BUILD first" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One run of FORM: the instructions per call of rank 0's measured calls.
per_call() {
  local form=$1 file=$out/callgrind.$1
  rm -f "$file"
  "$RC" run -n "$RANKS" --ppn "$PPN" --rails 2 --timeout 600 -- sh -c '[ "$RAILCOLL_RANK" = 0 ] &&
    exec valgrind --tool=callgrind --toggle-collect=measured_calls --callgrind-out-file="$0" "$1" "$2" "$3" "$4" "$5" ||
    exec "$1" "$2" "$3" "$4" "$5"' "$file" "$PROG" "$BYTES" "$CALLS" "$ALGO" "$form" >"$out/log" 2>&1 ||
    { echo "call_cost.sh: the $form run failed:" >&2; cat "$out/log" >&2; exit 1; }
  local total
  total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$file")
  [ -n "$total" ] || total=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$file")
  echo $((total / CALLS))
}

forms=(blocking nonblocking persistent)
declare -A runs
for ((r = 0; r < ROUNDS; ++r)); do
  for f in "${forms[@]}"; do runs[$f]+="$(per_call "$f") "; done
done
echo "# all-gather of $BYTES B per rank, $CALLS calls per run, $RANKS ranks in nodes of $PPN, algorithm ${ALGO/-/auto}," \
  "RAILCOLL_PROGRESS_THREAD=$RAILCOLL_PROGRESS_THREAD:"
echo "# instructions per call on rank 0 (callgrind), every round, then min and median"
for f in "${forms[@]}"; do
  sorted=$(tr ' ' '\n' <<<"${runs[$f]}" | grep . | sort -n)
  min=$(head -1 <<<"$sorted")
  median=$(sed -n "$(( (ROUNDS + 1) / 2 ))p" <<<"$sorted")
  printf '%-12s %s  min %s  median %s\n' "$f" "${runs[$f]}" "$min" "$median"
  eval "min_$f=$min median_$f=$median"
done
awk -v pm="$min_persistent" -v bm="$min_blocking" -v pd="$median_persistent" -v bd="$median_blocking" \
  'BEGIN { printf "persistent / blocking: min %.3f, median %.3f\n", pm / bm, pd / bd }'
