#!/usr/bin/env bash
# Planted faults in real processes on the emulated cluster (3 nodes x 2 ranks,
# 2 rails; docs/observability.md), the cluster brought up once for all:
#   C API (railcoll cluster run, planted_fault.c): the last rank (5) skips
#     call 3 (its next call, a barrier, meets the others' all-gather), sleeps
#     outside railcoll before it, passes another size, dies;
#     rail 0 of node 1 stops carrying (its root-side veth taken off the rail's
#     bridge: frames go nowhere, and no carrier is lost for the link monitor to see);
#   the same sleep over libfabric's links (RAILCOLL_TRANSPORT=ofi), when built;
#   the same sleep through the MPI layer (railcoll cluster mpirun --railcoll,
#     planted_fault_mpi.c): MPI_Error_string gives railcoll's words;
#   a traced 1 MiB all-gather (test_trace_format.py cluster).
# Each fault must end every rank's call within the deadline with a message that
# names the rank behind (and the step, the peer and the rail waited for: the
# peer may be the next link of a chain, a node-mate waiting for it), the
# launcher must say where it gathered the ranks' flight records, and
# `railcoll doctor` on them must name the rank behind.
#   usage: test_planted_cluster.sh RAILCOLL PLANTED_FAULT [PLANTED_FAULT_MPI|""] [ofi|no-ofi]
set -u
RC=${1:?railcoll}; PF=${2:?planted_fault}; PFMPI=${3:-}; OFI=${4:-no-ofi}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then echo "SKIPPED: the emulated cluster needs root (network namespaces)"; exit 77; fi
. "$HERE/../cluster_lock.sh"
cluster_lock
export RAILCOLL_TIMEOUT=1.5
LIMIT=4.5  # seconds: the deadline, the probe's answer and the abort's passing on, on a loaded machine
VICTIM=5
work=$(mktemp -d)
records_made=()
cleanup() {
  ip link set rcv1r0 master rcbr0 >/dev/null 2>&1
  "$RC" cluster down >/dev/null 2>&1
  rm -rf "$work" "${records_made[@]}"
}
trap cleanup EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

"$RC" cluster down >/dev/null 2>&1
if ! "$RC" cluster up --nodes 3 --ppn 2 --rails 2 --rate 1gbit >"$work/up" 2>&1; then
  cat "$work/up"
  echo "0 passed, 1 failed (the cluster did not come up)"
  exit 1
fi

# run NAME LAUNCHER-ARGS... -- PROG ARGS: the job's stdout in $work/NAME.out,
# its stderr in $work/NAME.err; $records: the directory the launcher named.
records=
run() {
  local name=$1
  shift
  timeout 120 "$RC" "$@" >"$work/$name.out" 2>"$work/$name.err"
  records=$(sed -n 's/^railcoll .*: the flight records of .* are in \(.*\); railcoll doctor .* reads them$/\1/p' \
    "$work/$name.err" | tail -1)
  [ -n "$records" ] && records_made+=("$records")
}

# The survivors' lines "rank R: call C -> STATUS after S s: MESSAGE" (a
# victim's death may fail call 2 already).
survivors() { grep -E "^rank [0-4]: call [0-9] -> " "$work/$1.out"; }

# check_fault NAME PATTERN-EVERY-SURVIVOR PATTERN-SOME-SURVIVOR DOCTOR-PATTERN
check_fault() {
  local name=$1 every=$2 some=$3 doc=$4 lines n late
  lines=$(survivors "$name")
  n=$(printf '%s\n' "$lines" | grep -c " -> ")
  if [ "$n" -ne 5 ]; then
    bad "$name: $n of 5 survivors reported a failed call: $(head -c 1500 "$work/$name.out" "$work/$name.err")"
    return
  fi
  late=$(printf '%s\n' "$lines" | sed -n 's/.* after \([0-9.]*\) s: .*/\1/p' | awk -v l=$LIMIT '$1 > l' | wc -l)
  [ "$late" -eq 0 ] && ok "$name: every survivor's call ended within $LIMIT s" ||
    bad "$name: $late survivors took longer than $LIMIT s: $lines"
  if [ "$(printf '%s\n' "$lines" | grep -c -- "$every")" -eq 5 ]; then
    ok "$name: every survivor's message says '$every'"
  else
    bad "$name: not every survivor's message says '$every': $lines"
  fi
  if printf '%s\n' "$lines" | grep -q -- "$some"; then
    ok "$name: a survivor's message says '$some'"
    echo "     $(printf '%s\n' "$lines" | grep -- "$some" | head -1 | cut -c 1-900)"
  else
    bad "$name: no survivor's message says '$some': $lines"
  fi
  if [ -z "$records" ]; then
    bad "$name: the launcher named no directory of flight records: $(tail -c 600 "$work/$name.err")"
    return
  fi
  ok "$name: the launcher gathered the records: $(grep -o 'the flight records of .*) are in' "$work/$name.err")"
  "$RC" doctor "$records" >"$work/$name.doctor" 2>&1
  if grep -q -- "$doc" "$work/$name.doctor"; then
    ok "$name: railcoll doctor says '$doc'"
  else
    bad "$name: railcoll doctor does not say '$doc': $(cat "$work/$name.doctor")"
  fi
}

# ---- through the C API
run skip cluster run --timeout 60 -- "$PF" skip
check_fault skip "rank $VICTIM" "rank $VICTIM.* is in a different call than this rank" \
  "likely culprit: rank $VICTIM (called barrier/"

run sleep cluster run --timeout 60 -- "$PF" sleep
check_fault sleep "rank $VICTIM" \
  "(wait, step [0-9]*), waiting for rank [0-9]* on .*rank $VICTIM did not answer a liveness probe.*likely cause: rank $VICTIM is gone" \
  "likely culprit: rank $VICTIM"
# The victim slept through the failure: its record came from SIGUSR1, sent by the launcher.
[ -n "$records" ] && grep -q "reason SIGUSR1" "$records"/flight-*-rank$VICTIM.txt 2>/dev/null &&
  ok "sleep: the sleeping rank wrote its record when the launcher asked (SIGUSR1)" ||
  bad "sleep: no record of rank $VICTIM written on SIGUSR1: $(ls "$records" 2>&1)"

run size cluster run --timeout 60 --grace 10 -- "$PF" size
check_fault size "rank $VICTIM" "rank $VICTIM.* is in a different call than this rank" \
  "likely culprit: rank $VICTIM (called allgather/[a-z_]* with 32768 B per rank)"

run die cluster run --timeout 60 --grace 10 -- "$PF" die
check_fault die "rank $VICTIM" "rank $VICTIM .*closed its connection without saying goodbye" \
  "likely culprit: rank $VICTIM (left no record"

# Rail 0 of node 1 stops carrying, silently, for longer than the deadline and
# than the rails layer's own (RAILCOLL_RAIL_TIMEOUT, which would otherwise give
# the rail up and go on over rail 1): the call's wait names the rail. 512 B per
# rank: not striped, each message has its rail; direct: every rank waits for
# every other, so each rank across the cut is waited for on it.
hold=$work/hold
RAILCOLL_ALLGATHER_ALGO=direct RAILCOLL_RAIL_TIMEOUT=30 HOLD_FILE=$hold timeout 120 "$RC" cluster run --timeout 60 --grace 10 -- "$PF" hold 512 \
  >"$work/rail.out" 2>"$work/rail.err" &
job=$!
for _ in $(seq 600); do [ "$(ls "$hold".* 2>/dev/null | wc -l)" -eq 6 ] && break; sleep 0.1; done
ip link set rcv1r0 nomaster 2>"$work/cut.err" || bad "rail: cannot cut the rail: $(cat "$work/cut.err")"
touch "$hold"
wait $job
ip link set rcv1r0 master rcbr0
records=$(sed -n 's/^railcoll .*: the flight records of .* are in \(.*\); railcoll doctor .* reads them$/\1/p' "$work/rail.err" | tail -1)
[ -n "$records" ] && records_made+=("$records")
grep -q "call [12] -> " "$work/rail.out" && bad "rail: the rail was cut before call 3: $(head -3 "$work/rail.out")"
check_fault rail "rail 0\|rank [2-3]" "on rail 0; .*likely cause: rail 0 between this rank and rank [0-9] stopped carrying" \
  "likely culprit: rank [0-9] on rail 0"

# ---- over libfabric's links
if [ "$OFI" = ofi ]; then
  RAILCOLL_TRANSPORT=ofi run ofi cluster run --timeout 60 -- "$PF" sleep
  check_fault ofi "rank $VICTIM" "waiting for rank [0-9]* on .*rank $VICTIM did not answer a liveness probe" \
    "likely culprit: rank $VICTIM"
else
  echo "note: railcoll built without libfabric: no ofi case"
fi

# ---- through the MPI layer
if [ -n "$PFMPI" ]; then
  run mpi cluster mpirun --railcoll --timeout 60 -- "$PFMPI"
  check_fault mpi "railcoll: MPI_Allgather: .*rank $VICTIM" \
    "waiting for rank [0-9]* on .*likely cause: rank $VICTIM is gone" "likely culprit: rank $VICTIM"
else
  echo "note: no Open MPI build of the MPI layer: no MPI case"
fi

# ---- a traced 1 MiB all-gather on the cluster: Perfetto's format, both rails busy
if python3 "$HERE/../test_trace_format.py" "$RC" cluster >"$work/trace" 2>&1; then
  ok "a traced 1 MiB all-gather on the cluster: $(grep -c '^ok' "$work/trace") checks of test_trace_format.py passed"
else
  bad "test_trace_format.py cluster: $(grep -v '^ok' "$work/trace" | head -20)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
