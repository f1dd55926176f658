#!/usr/bin/env bash
# Strangers at the door: ranks started by hand (3 pretend nodes, 2 loopback
# rails, a job key) are visited during start-up by processes that are not in
# the job: garbage, the old unauthenticated protocol, a wrong key, another job,
# a silent connection, on the store and on every data listener. Each must be
# closed and logged in exactly one line, and the job must still be byte-exact.
# The rail listeners stay open while the job runs (a failed rail reconnects
# there): strangers then get the same treatment. Then a rank with another key
# makes every rank fail at once, and a job without a key is warned.
#   usage: test_auth.sh RAILCOLL MP_COLLECTIVES
set -u
RC=${1:?railcoll}; MP=${2:?mp_collectives}
HERE=$(cd "$(dirname "$0")" && pwd)
STRANGER="$HERE/stranger.py"
# The system's Python for the strangers (standard library only): a Python
# environment's shim in PATH took 5 s to start here under load, and a stranger
# that comes after the door closed is refused by nobody.
PY=$(command -v /usr/bin/python3 || command -v python3)
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_rank() {  # start_rank RANK EXTRA_ENV...: in the background, output in $dir/out.RANK, err.RANK
  local r=$1; shift
  env RAILCOLL_RANK=$r RAILCOLL_NODE=$r "$@" "$MP" ${MODE:-correct} >"$dir/out.$r" 2>"$dir/err.$r" &
  pids+=($!)
}
# wait_ranks: waits for every rank started; `failed` counts those that did
# not exit 0 (a crash or a hang at destroy, after the verdict line, is one).
wait_ranks() { local p; failed=0; for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done; pids=(); }
listeners() {  # listeners PID...: "addr:port" of the TCP sockets they listen on
  local pat; pat=$(printf 'pid=%s,|' "$@"); pat=${pat%|}
  ss -ltnpH 2>/dev/null | grep -E "$pat" | awk '{print $4}'
}

key=$("$PY" -c 'import os; print(os.urandom(16).hex())')
job=authtest$$
port=$(free_port)
export RAILCOLL_SIZE=3 RAILCOLL_STORE=127.0.0.1:$port RAILCOLL_RAILS=127.0.0.1,127.0.0.2 RAILCOLL_TIMEOUT=30 \
  RAILCOLL_JOB_KEY=$key RAILCOLL_JOB_ID=$job

# ---- ranks 0 and 1 wait in start-up for rank 2; strangers call meanwhile.
start_rank 0; start_rank 1
for _ in $(seq 100); do [ "$(listeners "${pids[@]}" | wc -l)" -ge 5 ] && break; sleep 0.1; done
mapfile -t socks < <(listeners "${pids[@]}")
[ "${#socks[@]}" -eq 5 ] && ok "ranks 0, 1 listen on 2 rails each, rank 0 on the store too" ||
  bad "expected 5 listening sockets, got: ${socks[*]}"
wild=$(printf '%s\n' "${socks[@]}" | grep -cvE '^127\.0\.0\.[12]:')
[ "$wild" -eq 0 ] && ok "every listener is bound to a rail address (none to 0.0.0.0)" ||
  bad "listeners not bound to a rail address: ${socks[*]}"

expect_refused=0
said=$dir/stranger.txt
: >"$said"
"$PY" "$STRANGER" store "$RAILCOLL_STORE" good "$key" "$job" >>"$said"
for kind in garbage nokey wrongkey otherjob; do
  "$PY" "$STRANGER" store "$RAILCOLL_STORE" "$kind" >>"$said"; expect_refused=$((expect_refused + 1))
done
# Data listeners accept once every rank is in the store: these wait in the
# backlog until rank 2 starts, then the ranks read and refuse them.
data_socks=$(printf '%s\n' "${socks[@]}" | grep -v ":$port\$")
first=$(listeners "${pids[1]}" | head -1)  # rank 1's: rank 0 may connect there
visits=()
for s in $data_socks; do visits+=("$s garbage"); done
visits+=("$first wrongkey" "$first otherjob" "$first silent")
strangers=()
for v in "${visits[@]}"; do
  set -- $v
  "$PY" "$STRANGER" data "$1" "$2" "$job" "$dir/ready.${#strangers[@]}" >"$said.${#strangers[@]}" &
  strangers+=($!)
  expect_refused=$((expect_refused + 1))
done
for _ in $(seq 200); do [ "$(ls "$dir" | grep -c '^ready\.')" -ge "${#strangers[@]}" ] && break; sleep 0.05; done
start_rank 2
for p in "${strangers[@]}"; do wait "$p"; done
wait_ranks
cat "$said".* >>"$said"
grep -q "store good: accepted" "$said" && ok "a client with the key and job id is accepted by the store" ||
  bad "the control client was refused: $(cat "$said")"
closed=$(grep -cE "closed by the (store|rank)" "$said")
[ "$closed" -eq "$expect_refused" ] && ok "all $expect_refused strangers were closed" ||
  bad "$closed of $expect_refused strangers closed: $(tr '\n' '|' <"$said")"
refused=$(cat "$dir"/err.* | grep -c "refused a connection from")
[ "$refused" -eq "$expect_refused" ] && ok "one log line per stranger ($refused)" ||
  bad "$refused refusal lines, expected $expect_refused: $(cat "$dir"/err.* | head -20)"
for why in "does not speak the railcoll store protocol" "wrong job key or job id" "wrong job key \\(RAILCOLL_JOB_KEY\\)" \
  "belongs to another job or communicator" "it does not speak the railcoll protocol" "it sent no complete hello|already connected"; do
  cat "$dir"/err.* | grep -qE "$why" && ok "logged: $why" || bad "no log line says '$why': $(cat "$dir"/err.* | grep refused)"
done
correct=$(cat "$dir"/out.* | grep -c "calls correct")
[ "$correct" -eq 3 ] && [ "$failed" -eq 0 ] && ok "the job is byte-exact after the visits" ||
  bad "$correct of 3 ranks correct, $failed exited non-zero: $(cat "$dir"/err.* | tail -5)"

# ---- strangers while the job runs: 3 ranks of steady all-gathers for 6 s,
# 2 visits to each of ranks 1 and 2's rail listeners (all at once) after 1 s.
rm -f "$dir"/out.* "$dir"/err.* "$said".*
port=$(free_port)
export RAILCOLL_STORE=127.0.0.1:$port MODE="steady 65536 direct 6"
start_rank 0; start_rank 1; start_rank 2
for _ in $(seq 100); do grep -q . "$dir"/err.* 2>/dev/null; [ "$(listeners "${pids[1]}" | wc -l)" -ge 2 ] && break; sleep 0.1; done
sleep 1  # into the calls
visits=0 strangers=()
for s in $(listeners "${pids[1]}" "${pids[2]}"); do
  for kind in garbage wrongkey; do
    "$PY" "$STRANGER" data "$s" "$kind" "$job" >"$said.run.$visits" &
    strangers+=($!)
    visits=$((visits + 1))
  done
done
for p in "${strangers[@]}"; do wait "$p"; done
wait_ranks
cat "$said".run.* >"$said.run"
unset MODE
closed=$(grep -c "closed by the rank" "$said.run")
refused=$(cat "$dir"/err.* | grep -c "refused a connection from")
steady=$(cat "$dir"/out.* | grep -c "calls correct, 0 failed")
[ "$visits" -eq 8 ] && [ "$closed" -eq "$visits" ] && [ "$refused" -eq "$visits" ] && [ "$steady" -eq 3 ] &&
  [ "$failed" -eq 0 ] &&
  ok "strangers during the calls: $visits closed and logged, the job exact" ||
  bad "strangers during the calls: $closed closed, $refused logged of $visits, $steady of 3 ranks correct, $failed exited non-zero"

# ---- a rank with another key: every rank fails start-up at once with the hint
# (the deadline is 30 s), the odd rank a non-zero one or rank 0 itself; rank 0
# logs the refusals; nothing about the key is said.
wrong_key() {  # wrong_key ODD_RANK
  rm -f "$dir"/out.* "$dir"/err.*
  port=$(free_port)
  export RAILCOLL_SIZE=3 RAILCOLL_STORE=127.0.0.1:$port RAILCOLL_TIMEOUT=30
  local start; start=$(date +%s%N)
  for r in 0 1 2; do
    if [ "$r" = "$1" ]; then start_rank $r RAILCOLL_JOB_KEY=not-$key; else start_rank $r; fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  pids=()
  local ms=$((($(date +%s%N) - start) / 1000000))
  local hinted; hinted=$(cat "$dir"/err.* | grep "railcoll_comm_init" | grep -c "the ranks' RAILCOLL_JOB_KEY differ")
  local leaked; leaked=$(cat "$dir"/err.* | grep -c -- "$key")
  if [ "$hinted" -eq 3 ] && [ "$leaked" -eq 0 ] && [ "$ms" -lt 5000 ] &&
    grep -q "refused a connection from .*wrong job key" "$dir/err.0"; then
    ok "rank $1 with another key: all 3 ranks fail with the hint within $ms ms; rank 0 logs the refusal"
  else
    bad "rank $1 with another key: $hinted of 3 hinted, key leaked $leaked times, $ms ms: $(cat "$dir"/err.* | head -8)"
  fi
}
wrong_key 1
wrong_key 0

# ---- no key at all (another launcher): works, and rank 0 says once that nothing is authenticated.
rm -f "$dir"/out.* "$dir"/err.*
port=$(free_port)
export RAILCOLL_SIZE=2 RAILCOLL_STORE=127.0.0.1:$port RAILCOLL_TIMEOUT=30
unset RAILCOLL_JOB_KEY
start_rank 0; start_rank 1
wait_ranks
warned=$(cat "$dir"/err.* | grep -c "RAILCOLL_JOB_KEY is not set")
correct=$(cat "$dir"/out.* | grep -c "calls correct")
[ "$warned" -eq 1 ] && [ "$correct" -eq 2 ] && [ "$failed" -eq 0 ] && ok "without a key: correct, and one warning line" ||
  bad "without a key: $warned warnings, $correct correct, $failed exited non-zero"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
