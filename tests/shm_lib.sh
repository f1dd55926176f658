# Sourced by the multi-process test scripts (check_lib.sh sources it): how many
# railcoll segments in /dev/shm this test left behind. Those there when the
# test began belong to other jobs on this machine (several people test here at
# once, and a job killed while it started can leave its segments) and are not
# counted.
shm_at_start=$(ls /dev/shm 2>/dev/null | grep '^railcoll-')
# A new segment that a live process still maps belongs to a job that is
# running -- another test of the same ctest run (they run side by side), or
# another person's -- and is not counted either: left behind is what nobody maps.
# Nor is one that goes within 2 s: a job beside this test has it between its
# creation and its mapping, or between its unmapping and its removal (three
# such were once counted while three tests ran at a time).
unmapped_segments() {
  local s
  for s in $(ls /dev/shm 2>/dev/null | grep '^railcoll-' | grep -vxF -f <(printf '%s\n' "$shm_at_start")); do
    grep -qsF "/dev/shm/$s" /proc/[0-9]*/maps || echo "$s"
  done
}
shm_left() {
  local first n=0 s
  first=$(unmapped_segments)
  [ -n "$first" ] || { echo 0; return; }
  sleep 2
  for s in $(unmapped_segments); do grep -qxF "$s" <<<"$first" && n=$((n + 1)); done
  echo "$n"
}
# Counts one check (the caller's pass/fail): none of this test's segments left.
check_no_shm_left() {
  local left
  left=$(shm_left)
  if [ "$left" -eq 0 ]; then pass=$((pass + 1)); echo "ok   no shared-memory segments left"
  else fail=$((fail + 1)); echo "FAIL $left railcoll segments left in /dev/shm"; fi
}
