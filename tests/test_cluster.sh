#!/usr/bin/env bash
# The emulated cluster for real: up, status, run, mpirun (the Open MPI
# baseline), wrong use, down. Needs root (network namespaces); skipped
# otherwise. Takes ~15 s.
#   usage: test_cluster.sh BUILD_BIN_DIR   (the directory with railcoll and railcoll-mpi-bench)
set -u
BIN=${1:?usage: test_cluster.sh BUILD_BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: needs root"
  exit 0
fi
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
  echo "note: no mpirun or railcoll-mpi-bench; the Open MPI checks are skipped"
fi

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

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
