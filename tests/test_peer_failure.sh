#!/usr/bin/env bash
# A rank killed (SIGKILL) or stopped (SIGSTOP) in the middle of a loop of
# validated all-gathers, RUNS times each. Every survivor must return an error
# that names the victim within the deadline (RAILCOLL_TIMEOUT=2: at most 3 s
# for the failing call), the next call must say the communicator is broken,
# and the survivors must build a new communicator (railcoll_comm_init_explicit),
# run a validated call on it and end with as many open files as they started
# with; no shared memory may be left. Prints one line per run and a summary.
#   usage: test_peer_failure.sh RAILCOLL MP_COLLECTIVES KILL_RUNS STOP_RUNS [cluster]
# "cluster": on the emulated cluster (root; the caller brings it up, 3 nodes x 2).
# The launchers end a job's other ranks once one dies; --grace lets the survivors recover.
set -u
RC=${1:?railcoll}; MP=${2:?mp_collectives}; KILLS=${3:-3}; STOPS=${4:-2}; WHERE=${5:-local}
N=6 VICTIM=5 LIMIT=3.0
export RAILCOLL_TIMEOUT=2
dir=$(mktemp -d)
launcher=
cleanup() {
  [ -f "$dir/pid" ] && kill -9 "$(cat "$dir/pid")" 2>/dev/null
  [ -n "$launcher" ] && kill "$launcher" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
pass=0 fail=0
. "$(dirname "$0")/shm_lib.sh"
# A free port below the ephemeral range, so no socket of the job takes it first.
free_port() { python3 -c '
import random, socket
while True:
    p = random.randrange(10000, 32768); s = socket.socket()
    try: s.bind(("127.0.0.1", p)); print(p); break
    except OSError: pass'; }

one_run() {  # one_run SIGNAL INDEX
  local sig=$1 i=$2 out=$dir/out
  rm -f "$dir/pid" "$out"
  export MP_PIDFILE=$dir/pid MP_VICTIM=$VICTIM MP_RECOVERY_JOB=recover-$$-$sig-$i
  if [ "$WHERE" = cluster ]; then
    export MP_RECOVERY_STORE=198.18.0.1:$((10000 + RANDOM % 20000))  # below the ephemeral ports
    "$RC" cluster run --timeout 60 --grace 30 -- "$MP" loop 65536 >"$out" 2>&1 &
  else
    export MP_RECOVERY_STORE=127.0.0.1:$(free_port)
    "$RC" run -n $N --ppn 2 --rails 2 --timeout 60 --grace 30 -- "$MP" loop 65536 >"$out" 2>&1 &
  fi
  launcher=$!
  for _ in $(seq 600); do [ -s "$dir/pid" ] && break; sleep 0.05; done  # 30 s: set-up is slow on a loaded machine
  local victim; victim=$(cat "$dir/pid" 2>/dev/null)
  if [ -z "$victim" ]; then echo "FAIL $sig run $i: the victim never started: $(head -5 "$out")"; fail=$((fail + 1)); return; fi
  sleep "0.$((RANDOM % 4 + 1))"  # into the loop, mid-collective
  kill -"$sig" "$victim"
  for _ in $(seq 300); do
    [ "$(grep -c "recovered as rank" "$out")" -ge $((N - 1)) ] && break
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.05
  done
  kill -9 "$victim" 2>/dev/null  # a stopped victim stays until told otherwise
  wait "$launcher" 2>/dev/null
  launcher=
  rm -f "$dir/pid"
  local named slow broken recovered leaks times clean
  # The launcher's status of every rank (printed as the victim failed the
  # job): each survivor exited 0, so none crashed or hung after its report.
  clean=$(grep -cE '^  rank [0-9]+( \([^)]*\))?: exited with status 0 after' "$out")
  named=$(grep -c "names rank $VICTIM: yes" "$out")
  times=$(grep -o "peer failure -> .* after [0-9.]* s" "$out" | grep -o "[0-9.]* s$" | tr -d ' s' | sort -n | tail -1)
  slow=$(grep -o "peer failure -> .* after [0-9.]* s" "$out" | grep -o "[0-9.]* s$" | tr -d ' s' |
    awk -v l=$LIMIT '$1 > l' | wc -l)
  broken=$(grep -c "next call -> communicator is broken" "$out")
  recovered=$(grep -c "recovered as rank" "$out")
  leaks=$(grep "recovered as rank" "$out" | awk '{if ($(NF-4) != $(NF-1)) print}' | wc -l)
  echo "${times:-none}" >>"$dir/times.$sig"
  if [ "$named" -eq $((N - 1)) ] && [ "$slow" -eq 0 ] && [ "$broken" -eq $((N - 1)) ] &&
    [ "$recovered" -eq $((N - 1)) ] && [ "$leaks" -eq 0 ] && [ "$clean" -eq $((N - 1)) ]; then
    pass=$((pass + 1)); echo "ok   SIG$sig run $i: $((N - 1)) survivors named rank $VICTIM within ${times} s, recovered, no leaked files"
  else
    fail=$((fail + 1))
    echo "FAIL SIG$sig run $i: named $named, late $slow, broken $broken, recovered $recovered, leaking $leaks, exited 0 $clean (of $((N - 1)))"
    sed 's/^/     /' "$out" | head -20
  fi
}

for i in $(seq "$KILLS"); do one_run KILL "$i"; done
for i in $(seq "$STOPS"); do one_run STOP "$i"; done
for sig in KILL STOP; do
  [ -f "$dir/times.$sig" ] || continue
  sort -n "$dir/times.$sig" | awk -v s=$sig '{t[NR]=$1} END {printf "SIG%s: slowest survivor per run: median %s s, max %s s over %d runs\n", s, t[int((NR+1)/2)], t[NR], NR}'
done
check_no_shm_left
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
