#!/usr/bin/env bash
# What railcoll says about a job on this host (docs/observability.md):
#  1. ranks whose rails differ: set-up fails on each, naming its rails and the peer's;
#  2. `railcoll run` gathers a failed job's flight records in one directory,
#     asks a rank still running for its record (SIGUSR1), says where they are,
#     and railcoll doctor names the rank behind (the last rank sleeps outside
#     railcoll before call 3: planted_fault.c);
#  3. a job that succeeds leaves no directory of records behind.
#   usage: test_planted_local.sh RAILCOLL PLANTED_FAULT
set -u
RC=${1:?railcoll}; PF=${2:?planted_fault}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work  # where the launcher makes a job's directory of records
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# ---- 1. rails that differ: rank 1 has one, rank 0 two
RAILCOLL_TIMEOUT=10 "$RC" run -n 2 --ppn 1 --rails 2 --timeout 60 -- \
  sh -c 'if [ "$RAILCOLL_RANK" = 1 ]; then export RAILCOLL_RAILS=127.0.0.1; fi; exec "$0" none' "$PF" >"$work/rails" 2>&1
if grep -q "rank 1 has 1 rail (.*127.0.0.1) and this rank (0) has 2 rails (.*127.0.0.1, .*127.0.0.2)" "$work/rails" &&
  grep -q "rank 0 has 2 rails (.*127.0.0.1, .*127.0.0.2) and this rank (1) has 1 rail (.*127.0.0.1)" "$work/rails"; then
  ok "rails that differ: each rank names its rails and the peer's"
  grep -m1 "rank 1 has" "$work/rails" | sed 's/^/     /'
else
  bad "rails that differ are not named on both sides: $(head -c 1000 "$work/rails")"
fi

# ---- 2. a failed job's records, gathered
RAILCOLL_TIMEOUT=1.5 "$RC" run -n 4 --ppn 2 --rails 2 --timeout 60 -- "$PF" sleep >"$work/sleep" 2>&1
records=$(sed -n 's/^railcoll run: the flight records of ranks 0-3 (4 of 4) are in \(.*\); railcoll doctor .* reads them$/\1/p' \
  "$work/sleep")
if [ -n "$records" ] && [ -d "$records" ]; then
  ok "railcoll run gathered every rank's record in $records"
  "$RC" doctor "$records" >"$work/doctor" 2>&1
  grep -q "likely culprit: rank 3" "$work/doctor" && ok "railcoll doctor names rank 3: $(grep culprit "$work/doctor")" ||
    bad "railcoll doctor does not name rank 3: $(cat "$work/doctor")"
  grep -q "reason SIGUSR1" "$records"/flight-*-rank3.txt && ok "the sleeping rank wrote its record when asked (SIGUSR1)" ||
    bad "rank 3's record was not written on SIGUSR1: $(head -2 "$records"/flight-*-rank3.txt)"
else
  bad "railcoll run named no directory with every rank's record: $(tail -c 1500 "$work/sleep")"
fi

# ---- 3. a job that succeeds: nothing left
before=$(ls -d "$work"/railcoll-records-* 2>/dev/null | wc -l)
RAILCOLL_TIMEOUT=10 "$RC" run -n 2 --ppn 1 --timeout 60 -- "$PF" none >"$work/none" 2>&1
st=$?
after=$(ls -d "$work"/railcoll-records-* 2>/dev/null | wc -l)
[ "$st" -eq 0 ] && [ "$after" -eq "$before" ] && ok "a job that succeeds leaves no records behind" ||
  bad "a good job: exit $st, $((after - before)) directories of records left: $(tail -c 600 "$work/none")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
