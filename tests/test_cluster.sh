#!/usr/bin/env bash
# The emulated cluster for real: up, status, run, mpirun (the Open MPI
# baseline), wrong use, down. Needs root (network namespaces); SKIPPED
# otherwise (exit 77). Takes ~55 s.
#   usage: test_cluster.sh BUILD_BIN_DIR   (the directory with railcoll and railcoll-mpi-bench)
set -u
BIN=${1:?usage: test_cluster.sh BUILD_BIN_DIR}
if [ "$(id -u)" != 0 ]; then echo "SKIPPED: the emulated cluster needs root (network namespaces)"; exit 77; fi
BIN=$(cd "$BIN" && pwd) || exit 1
RC="$BIN/railcoll"
. "$(dirname "$0")/cluster_lock.sh"
cluster_lock
export PATH="$BIN:$PATH"
pass=0 fail=0
out=$(mktemp) err=$(mktemp)
# Whatever fails, the cluster goes down and the temp files go.
trap '"$RC" cluster down >/dev/null 2>&1; rm -f "$out" "$err"' EXIT

ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
said() { echo "$(tail -c 600 "$err" | tr '\n' ' ')"; }

# expect STATUS NAME CMD...: CMD exits with STATUS (stdout in $out, stderr in $err).
# `timeout` is a last guard; every run below also has railcoll's own --timeout.
expect() {
  local want=$1 name=$2
  shift 2
  timeout 120 "$@" >"$out" 2>"$err"
  local st=$?
  if [ "$st" -eq "$want" ]; then ok "$name"; else bad "$name: exit $st, expected $want: $(said)"; fi
  return $((st != want))
}

# ---- up, status
expect 0 "down before starting (idempotent)" "$RC" cluster down
if ! expect 0 "up --nodes 3 --ppn 2 --rails 2 --rate 1gbit" \
  "$RC" cluster up --nodes 3 --ppn 2 --rails 2 --rate 1gbit; then
  echo "$pass passed, $fail failed (the cluster did not come up; the rest is not run)"
  exit 1
fi
if expect 0 "status exits 0" "$RC" cluster status; then
  grep -q '^healthy$' "$out" || bad "status does not say healthy: $(cat "$out")"
fi

# ---- run: hostnames, rail addresses, rail 1 of node 0 reaches rail 1 of node 2
# (ping if there is one; else a TCP connect from 198.18.1.1: "refused" means
# node 2's stack answered over rail 1).
rank_check='
n=$RAILCOLL_NODE; h=$(hostname)
[ "$h" = "rc-n$n" ] || { echo "rank $RAILCOLL_RANK: hostname $h, expected rc-n$n" >&2; exit 1; }
addrs=$(ip -o -4 addr show)
for r in 0 1; do
  echo "$addrs" | grep -Eq "rail$r +inet 198\.18\.$r\.$((n + 1))/24" ||
    { echo "rank $RAILCOLL_RANK: rail$r lacks 198.18.$r.$((n + 1))/24" >&2; exit 1; }
done
if [ "$RAILCOLL_RANK" = 0 ]; then
  if command -v ping >/dev/null; then
    ping -c1 -W1 -I 198.18.1.1 198.18.1.3 >/dev/null || { echo "ping 198.18.1.3 failed" >&2; exit 1; }
  else
    python3 -c "
import socket, sys
s = socket.socket(); s.settimeout(1); s.bind((\"198.18.1.1\", 0))
try: s.connect((\"198.18.1.3\", 9))
except ConnectionRefusedError: sys.exit(0)
except OSError as e: sys.exit(\"198.18.1.1 -> 198.18.1.3: %s\" % e)
" || exit 1
  fi
fi
echo "rank $RAILCOLL_RANK on $h ok"'
if expect 0 "run: each rank has its node's hostname and rail addresses; rail 1 reaches node 2" \
  "$RC" cluster run --timeout 60 -- sh -c "$rank_check"; then
  [ "$(grep -c ' ok$' "$out")" -eq 6 ] || bad "run: expected 6 ranks to report, got: $(cat "$out")"
fi

timeout 120 "$RC" cluster run --layout 1,2,3 --timeout 60 -- \
  sh -c 'echo "$RAILCOLL_RANK $RAILCOLL_SIZE $RAILCOLL_NODE $RAILCOLL_LOCAL_RANK $RAILCOLL_LOCAL_SIZE $(hostname)"' \
  >"$out" 2>"$err"
want='0 6 0 0 1 rc-n0
1 6 1 0 2 rc-n1
2 6 1 1 2 rc-n1
3 6 2 0 3 rc-n2
4 6 2 1 3 rc-n2
5 6 2 2 3 rc-n2'
got=$(sort -n "$out")
[ "$got" = "$want" ] && ok "run --layout 1,2,3: ranks, nodes, local ranks" ||
  bad "run --layout 1,2,3 gave: $(echo "$got" | tr '\n' '|') $(said)"

if expect 3 "run: a failing rank's status is the job's status" "$RC" cluster run --timeout 60 -- \
  sh -c '[ "$RAILCOLL_RANK" != 4 ] || exit 3'; then
  grep -q "rank 4 exited with status 3" "$err" || bad "run: failure line missing: $(said)"
fi

# ---- mpirun: the Open MPI baseline, tuned and HAN collectives
check_records() {  # NAME LABEL: 8 validated records (8..1024 bytes) on 6 ranks, 3 nodes, 2 rails
  local n
  local head="^{\"collective\":\"allgather\",\"algorithm\":\"$2\",\"bytes\":[0-9]*,\"ranks\":6,\"nodes\":3,\"rails\":2,"
  n=$(grep -c "$head.*\"validated\":true}$" "$out")
  [ "$n" -eq 8 ] && ok "$1: 8 validated records" || bad "$1: $n validated records of 8: $(head -c 600 "$out" | tr '\n' ' ')"
}
if command -v mpirun >/dev/null && [ -x "$BIN/railcoll-mpi-bench" ]; then
  expect 0 "mpirun railcoll-mpi-bench" "$RC" cluster mpirun --timeout 90 -- \
    railcoll-mpi-bench -m 8:1024 -i 5 -x 1 -c --label mpi:tuned && check_records "mpirun" "mpi:tuned"
  expect 0 "mpirun --han railcoll-mpi-bench" "$RC" cluster mpirun --han --timeout 90 -- \
    railcoll-mpi-bench -m 8:1024 -i 5 -x 1 -c --label mpi:han && check_records "mpirun --han" "mpi:han"
else
  bad "no mpirun or railcoll-mpi-bench for the Open MPI checks (scripts/install-deps.sh installs Open MPI)"
fi

# ---- the launcher's behaviour on the cluster: whole lines, stdin to rank 0,
# a failed rank ending the others, statuses (tests/test_launcher.sh)
if "$(dirname "$0")/test_launcher.sh" "$RC" cluster >"$out" 2>&1; then ok "launcher behaviour on the cluster ($(tail -1 "$out"))"
else bad "launcher behaviour on the cluster: $(grep FAIL "$out" | head -5 | tr '\n' ' ')"; fi

# ---- bench: an uneven layout runs exactly the ranks asked for; too many is an error
if expect 0 "bench -n 5 --ppn 2 on 3 nodes" "$RC" bench allgather --algo direct -m 8:64 -i 3 -x 1 -c -n 5 --ppn 2 \
  --json "$out.json"; then
  grep -q "on the emulated cluster: 5 ranks on 3 nodes (2,2,1)" "$out" &&
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert len(r) == 4 and all(x["ranks"] == 5 and x["nodes"] == 3 and x["validated"] and x["span_p50_us"] > 0 for x in r), r' "$out.json" &&
    ok "bench -n 5 --ppn 2: 5 ranks as 2,2,1, validated, spans measured" || bad "bench -n 5 --ppn 2: $(head -c 400 "$out")"
fi
if expect 2 "bench -n 7 --ppn 2 needs 4 nodes: an error, not 8 ranks" "$RC" bench allgather -n 7 --ppn 2; then
  grep -q "need 4 nodes (2,2,2,1) but the cluster has 3" "$err" || bad "bench -n 7 --ppn 2: $(said)"
fi
expect 0 "bench --layout 1,2 --mpi: Open MPI on the same layout" "$RC" bench gather --algo auto -m 8:8 -i 3 -x 1 \
  --layout 1,2 --mpi --json "$out.json" &&
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert sorted(x["algorithm"] for x in r) == ["auto", "mpi:han", "mpi:railcoll", "mpi:tuned"] and all(x["ranks"] == 3 for x in r), r' "$out.json" &&
  grep -q "median span in us" "$out" && ok "gather with Open MPI on layout 1,2: spans compared" ||
  bad "bench --layout 1,2 --mpi: $(head -c 400 "$out")"
# --fault honours --json: the phases and the verdict as a file.
if expect 0 "bench --fault rail-down@1:1 --json" "$RC" bench allgather --fault rail-down@1:1 -m 64K --json "$out.json"; then
  python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))
assert f["fault"] == "rail-down@1:1" and f["ok"] and f["wrong_results"] == 0 and f["ranks"] == 6, f
assert [p["phase"] for p in f["phases"]] == ["before", "during", "after"] and all(p["calls"] > 0 for p in f["phases"]), f
' "$out.json" && ok "--fault --json: before/during/after, nothing wrong" || bad "--fault --json: $(cat "$out.json")"
fi
rm -f "$out.json"

# ---- wrong use
if expect 2 "up while up exits 2" "$RC" cluster up --nodes 2; then
  [ "$(wc -l <"$err")" -eq 1 ] && grep -q "already up" "$err" || bad "up while up: not one line saying so: $(said)"
fi
expect 2 "run --rails 3 on a 2-rail cluster exits 2" "$RC" cluster run --rails 3 -- true

# ---- down leaves nothing
expect 0 "down" "$RC" cluster down
left=$( (ip netns list | grep -o '^rc-n[0-9]*'; ls /sys/class/net | grep -E '^(rcbr|rcv[0-9]+r[0-9]+$)') | tr '\n' ' ')
[ -z "$left" ] && ok "nothing left after down" || bad "left after down: $left"
expect 3 "status after down exits 3" "$RC" cluster status
[ ! -e /run/railcoll/cluster.conf ] && ok "state file removed" || bad "state file /run/railcoll/cluster.conf remains"

# ---- --shaper wire: no message faster than the rate, even after an idle
# moment. A 256 KiB broadcast between 2 nodes over 1 rail at 100 Mbit/s is
# 21 ms on a wire; the default bucket passes its first 128 KiB at memory speed
# (about half that). A lower bound: a loaded machine only makes it slower.
shaper=${RAILCOLL_TEST_SHAPER:-wire}  # bucket: shows the check failing
if expect 0 "up --shaper $shaper" "$RC" cluster up --nodes 2 --ppn 1 --rails 1 --rate 100mbit --shaper "$shaper"; then
  "$RC" cluster status >"$out" 2>&1
  grep -q "tbf burst 3028 B (wire)" "$out" && ok "status: a bucket of two frames" || bad "status: $(grep rate: "$out")"
  if expect 0 "bench bcast 256 KiB on the wire" "$RC" bench bcast --algo auto -m 256K:256K -i 5 -x 1 -c \
    --json "$out.json"; then
    python3 -c '
import json, sys
r = [x for x in json.load(open(sys.argv[1])) if x["algorithm"] == "auto"][0]
wire_us = 256 * 1024 * 8 / 100e6 * 1e6
assert r["shaper"] == "wire", r.get("shaper")
assert r["span_p50_us"] >= 0.9 * wire_us, "span p50 %.0f us, the wire needs %.0f" % (r["span_p50_us"], wire_us)
print("span p50 %.0f us, the wire %.0f us" % (r["span_p50_us"], wire_us))
' "$out.json" >"$err" 2>&1 && ok "wire: 256 KiB takes its wire time ($(tail -1 "$err"))" ||
      bad "wire: $(tail -2 "$err" | tr '\n' ' ')"
  fi
  expect 0 "down (wire)" "$RC" cluster down
fi
rm -f "$out.json"
expect 2 "up --shaper foo exits 2" "$RC" cluster up --nodes 2 --shaper foo

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
