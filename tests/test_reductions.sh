#!/usr/bin/env bash
# Multi-process tests of the reduction family (reduce_scatter_block,
# reduce_scatter, reduce; allreduce over every type): every type and operator,
# every algorithm, every root, in place, zero and uneven counts, each byte
# checked against the program's own expected values; locally (pretend nodes,
# uneven, 1-3 rails) and, as root, on the emulated cluster.
#   usage: test_reductions.sh RAILCOLL MP_REDUCTIONS local|cluster (the cluster part: root; SKIPPED otherwise)
set -u
RC=${1:?railcoll}; MP=${2:?mp_reductions}; WHERE=${3:?local or cluster}
. "$(dirname "$0")/check_lib.sh"

if [ "$WHERE" = local ]; then
  for cfg in "1" "3" "8 --ppn 4 --rails 2" "7 --ppn 3 --rails 2" "5 --ppn 2 --rails 3"; do
    n=${cfg%% *}
    check "correct, -n $cfg" "calls correct" "$n" -- "$RC" run -n $cfg -- "$MP" correct
  done
  export RAILCOLL_TIMEOUT=5
  check "bad type or operator" "bad arguments rejected" 4 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" badargs
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
