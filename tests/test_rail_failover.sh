#!/usr/bin/env bash
# Rail failover on the emulated cluster (root; the cluster is made here and
# taken down on every exit). 3 nodes x 2 ranks, 2 rails at 1gbit:
#  1. validated 1 MiB all-gathers for 9 s while rail 1 of node 1 goes down at
#     2 s and up at 5 s: no call fails, every byte is right, every rank saw a
#     rail down (railcoll_comm_rails_up) and uses both again at the end, and
#     each rank logs the outage at most once;
#  2. rail 1's TCP connections of node 1 destroyed (ss -K: they break rather
#     than stall): no call fails, the rail is reconnected;
#  3. both rails of node 1 down for longer than the deadline: every rank gets
#     an error within it (no rail to a peer is left), none hangs;
#  4. railcoll bench --fault rail-down@T:D and kill@T report their phases.
# Calls per second are printed (measured, not asserted).
#   usage: test_rail_failover.sh RAILCOLL MP_COLLECTIVES
set -u
RC=${1:?railcoll}; MP=${2:?mp_collectives}
if [ "$(id -u)" != 0 ]; then echo "skipped: needs root (network namespaces)"; echo "0 passed, 0 failed"; exit 0; fi
. "$(dirname "$0")/cluster_lock.sh"
cluster_lock
pass=0 fail=0
out=$(mktemp)
cleanup() { "$RC" cluster down >/dev/null 2>&1; rm -f "$out"; }
trap cleanup EXIT
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; sed 's/^/     /' "$out" | head -30; }
rail() { ip netns exec rc-n1 ip link set "rail$1" "$2"; }

"$RC" cluster down >/dev/null 2>&1
"$RC" cluster up --nodes 3 --ppn 2 --rails 2 --rate 1gbit >/dev/null || { echo "FAIL cluster up"; exit 1; }

# ---- 1. one rail down and up again during the calls
( sleep 2; rail 1 down; sleep 3; rail 1 up ) &
flapper=$!
RAILCOLL_TIMEOUT=10 timeout 120 "$RC" cluster run --timeout 100 -- "$MP" steady 1048576 direct 9 >"$out" 2>&1
st=$?
wait "$flapper"
rail 1 up
correct=$(grep -c "steady [0-9]* calls correct, 0 failed" "$out")
saw=$(grep -c "rails up: fewest 1, at the end 2" "$out")
[ "$st" -eq 0 ] && [ "$correct" -eq 6 ] && ok "rail 1 down and up during the calls: all 6 ranks correct, no call failed" ||
  bad "rail down/up: exit $st, $correct of 6 ranks correct"
[ "$saw" -ge 1 ] && [ "$(grep -c "at the end 2" "$out")" -eq 6 ] &&
  ok "rails_up fell to 1 on $saw ranks and is 2 on all at the end" || bad "rails_up: $saw ranks saw 1 rail"
most=$(grep -o "rank [0-9]*: rail 1 .* is down" "$out" | sort | uniq -c | sort -rn | head -1 | awk '{print $1}')
back=$(grep -c "rail 1 .* is up again" "$out")
[ "${most:-0}" -eq 1 ] && [ "$back" -ge 1 ] && ok "the outage is logged once per rank, and the return" ||
  bad "log lines: at most ${most:-0} 'down' per rank, $back 'up again'"
grep "calls per second" "$out"

# ---- 2. connections that break instead of stalling
( sleep 2; ip netns exec rc-n1 ss -K dst 198.18.1.0/24 >/dev/null 2>&1 ) &
flapper=$!
RAILCOLL_TIMEOUT=10 timeout 120 "$RC" cluster run --timeout 100 -- "$MP" steady 1048576 direct 5 >"$out" 2>&1
st=$?
wait "$flapper"
correct=$(grep -c "steady [0-9]* calls correct, 0 failed" "$out")
[ "$st" -eq 0 ] && [ "$correct" -eq 6 ] && grep -q "was closed" "$out" && [ "$(grep -c "at the end 2" "$out")" -eq 6 ] &&
  ok "rail 1's connections reset: all 6 ranks correct, no call failed, the rail reconnected" ||
  bad "connections reset: exit $st, $correct of 6 ranks correct"

# ---- 3. no rail left: an error within the deadline on every rank
( sleep 1; rail 0 down; rail 1 down; sleep 6; rail 0 up; rail 1 up ) &
flapper=$!
# --grace: the first rank to fail must not end the others before they report.
RAILCOLL_TIMEOUT=2 timeout 120 "$RC" cluster run --timeout 60 --grace 30 -- "$MP" steady 1048576 direct 30 >"$out" 2>&1
wait "$flapper"
failed=$(grep -cE "call [0-9]+ failed: (deadline passed|a peer failed)" "$out")
[ "$failed" -eq 6 ] && ok "both rails of a node down: all 6 ranks return an error" || bad "no rail left: $failed of 6 ranks failed"
# ---- 4. the bench's fault runs, as a user sees them
timeout 120 "$RC" bench allgather --fault rail-down@1.5:1.5 -m 256K >"$out" 2>&1
grep -q "^during " "$out" && grep -q "0 wrong results, 0 failed calls" "$out" &&
  ok "bench --fault rail-down: before/during/after, nothing wrong or failed" || bad "bench --fault rail-down"
grep -E "^(before|during|after)|throughput" "$out"
RAILCOLL_TIMEOUT=2 timeout 120 "$RC" bench allgather --fault kill@1 -m 64K >"$out" 2>&1
grep -q "5 of 5 survivors returned an error" "$out" && ok "bench --fault kill: every survivor returned an error" ||
  bad "bench --fault kill"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
