#!/usr/bin/env bash
# Multi-process tests of the prefix reductions (scan, exscan) and of
# user-defined operators through the C API (tests/mp_scan.cpp): every scan
# algorithm x type x count x in place x form, a non-commutative operator in
# every reduction on every algorithm that keeps rank order, each element
# checked against the program's own expected values; odd rank counts, uneven
# pretend nodes, 1-3 rails; bad arguments; and, as root, the emulated cluster.
#   usage: test_scan.sh RAILCOLL MP_SCAN local|cluster (the cluster part: root; SKIPPED otherwise)
set -u
RC=${1:?railcoll}; MP=${2:?mp_scan}; WHERE=${3:?local or cluster}
. "$(dirname "$0")/check_lib.sh"

if [ "$WHERE" = local ]; then
  for cfg in "1" "3" "5 --ppn 2 --rails 2" "7 --ppn 3 --rails 3" "6 --ppn 4 --rails 2"; do
    n=${cfg%% *}
    check "correct, -n $cfg" "calls correct" "$n" -- "$RC" run -n $cfg -- "$MP" correct
  done
  export RAILCOLL_TIMEOUT=5
  check "bad arguments, 5 ranks" "bad arguments rejected" 5 -- "$RC" run -n 5 --ppn 2 --rails 2 -- "$MP" badargs
  unset RAILCOLL_TIMEOUT
fi

# The emulated cluster is shared with the other cluster tests: one user at a time.
cluster_checks() {
  check "cluster: correct, uneven 1,3,2,2, 2 rails" "calls correct" 8 -- \
    "$RC" cluster run --layout 1,3,2,2 --rails 2 -- "$MP" quick
}
[ "$WHERE" = cluster ] && on_cluster "--nodes 4 --ppn 2 --rails 2" cluster_checks
check_no_shm_left
summary
