#!/usr/bin/env bash
# Point-to-point messages through the C API (railcoll_isend / railcoll_irecv,
# mp_point_to_point.cpp): every pair, sizes up to 1 MiB in parts over the rails,
# order within a tag, any source, messages across collectives; a wrong size, a
# timeout and bad arguments; a dead sender. With and without the progress
# thread, over 1-3 rails, in pretend nodes on this host.
set -u
RC=${1:?railcoll}; MP=${2:?mp_point_to_point}
. "$(dirname "$0")/check_lib.sh"
export RAILCOLL_TIMEOUT=10
for thread in 1 0; do
  export RAILCOLL_PROGRESS_THREAD=$thread
  for cfg in "2" "4 --ppn 2 --rails 2" "5 --ppn 2 --rails 3"; do
    n=${cfg%% *}
    check "correct, thread $thread, -n $cfg" "correct ok" "$n" -- "$RC" run -n $cfg -- "$MP" correct
  done
  check "errors, thread $thread" "errors ok" 4 -- env RAILCOLL_TIMEOUT=2 "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" errors
  check "a dead sender, thread $thread" "die ok" 5 -- env RAILCOLL_TIMEOUT=5 "$RC" run -n 6 --ppn 2 --rails 2 --grace 20 -- "$MP" die
done
check_no_shm_left
summary
