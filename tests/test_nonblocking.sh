#!/usr/bin/env bash
# Multi-process tests of nonblocking and persistent calls (C API, every byte
# checked): every collective outstanding at once and completed in five orders,
# two communicators interleaved, blocking calls behind outstanding ones, a
# freed outstanding request; persistent calls started 1,000 times; bad
# arguments; mismatched calls and a rank that dies with calls outstanding (an
# error on every rank within seconds); a request waited for on one thread while
# the next calls are posted on another, on two communicators at once; what an
# outstanding call costs a rank that sleeps (mp_idle_cost, printed). With and
# without the progress thread,
# on 1-3 rails and uneven nodes locally, and, as root, on the emulated cluster.
#   usage: test_nonblocking.sh RAILCOLL MP_NONBLOCKING MP_IDLE_COST local|cluster (the cluster part: root; SKIPPED otherwise)
set -u
RC=${1:?railcoll}; MP=${2:?mp_nonblocking}; IDLE=${3:?mp_idle_cost}; WHERE=${4:?local or cluster}
. "$(dirname "$0")/check_lib.sh"
export RAILCOLL_TIMEOUT=10

if [ "$WHERE" = local ]; then
  for thread in 1 0; do
    export RAILCOLL_PROGRESS_THREAD=$thread
    for cfg in "1" "4 --ppn 2 --rails 2" "7 --ppn 3 --rails 3"; do
      n=${cfg%% *}
      check "correct, thread $thread, -n $cfg" "correct ok" "$n" -- "$RC" run -n $cfg -- "$MP" correct
    done
    check "persistent, thread $thread" "persist ok" 6 -- "$RC" run -n 6 --ppn 3 --rails 2 -- "$MP" persist
    check "bad arguments, thread $thread" "badargs ok" 4 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" badargs
    check "mismatch, thread $thread" "mismatch ok" 4 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" mismatch
    # The launcher ends the job when a rank exits; --grace lets the survivors report.
    check "idle: CPU of an outstanding call, thread $thread" "CPU seconds over 2 s" 1 -- env RAILCOLL_TIMEOUT=30 "$RC" run -n 4 --ppn 2 --rails 2 -- "$IDLE" 2
    check --status 3 "a dead peer, thread $thread" "die ok" 5 -- env RAILCOLL_TIMEOUT=3 "$RC" run -n 6 --ppn 2 --rails 2 --grace 20 -- "$MP" die
    check "threads: one posts, another waits, on each of two communicators, thread $thread" "threads ok" 4 -- \
      "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" threads
  done
  unset RAILCOLL_PROGRESS_THREAD
  # RAILCOLL_PROGRESS_PRIORITY reaches the thread (the kernel's own report) and
  # the calls stay right under it. short needs Linux 6.12+ (else normal);
  # realtime needs root or RLIMIT_RTPRIO (else short).
  kernel=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
  short=normal; [ "$kernel" -ge 6012 ] && short=short
  realtime=$short; [ "$(id -u)" = 0 ] && realtime=realtime
  for want in "normal normal" "short $short" "realtime $realtime"; do
    check "progress priority ${want% *}: the thread runs ${want#* }" "priority ok \\(${want#* }\\)" 4 -- \
      env RAILCOLL_PROGRESS_PRIORITY=${want% *} "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" priority "${want#* }"
  done
  check "correct under realtime priority" "correct ok" 4 -- \
    env RAILCOLL_PROGRESS_PRIORITY=realtime "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" correct
  check --status 1 "a bad priority fails set-up, naming it" "RAILCOLL_PROGRESS_PRIORITY='fifo'" 1 -- \
    env RAILCOLL_PROGRESS_PRIORITY=fifo "$RC" run -n 1 -- "$MP" correct
fi

cluster_checks() {
  check "cluster: correct, 3 nodes x 2, 2 rails" "correct ok" 6 -- "$RC" cluster run -- "$MP" correct
  check "cluster: persistent" "persist ok" 6 -- "$RC" cluster run -- "$MP" persist
  check --status 3 "cluster: a dead peer" "die ok" 5 -- env RAILCOLL_TIMEOUT=3 "$RC" cluster run --grace 20 -- "$MP" die
}
[ "$WHERE" = cluster ] && on_cluster "--nodes 3 --ppn 2 --rails 2" cluster_checks
check_no_shm_left
summary
