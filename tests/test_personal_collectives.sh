#!/usr/bin/env bash
# Multi-process tests of alltoall, alltoallv, scatter, scatterv and gatherv (C
# API, every byte checked): every algorithm x sizes x roots, in place, zero and
# uneven counts, blocks at displacements; 1-3 rails, uneven nodes, locally
# (pretend nodes) and, as root, once on the emulated cluster; then bad arguments,
# an error on every rank within the deadline.
#   usage: test_personal_collectives.sh RAILCOLL MP_PERSONAL local|cluster (the cluster part: root; SKIPPED otherwise)
set -u
RC=${1:?railcoll}; MP=${2:?mp_personal}; WHERE=${3:?local or cluster}
. "$(dirname "$0")/check_lib.sh"

if [ "$WHERE" = local ]; then
  for cfg in "1" "3" "8 --ppn 4 --rails 2" "7 --ppn 3 --rails 3" "5 --ppn 2 --rails 1"; do
    n=${cfg%% *}
    check "correct, -n $cfg" "personalised calls correct" "$n" -- "$RC" run -n $cfg -- "$MP" correct
  done
  check "bad arguments" "bad arguments rejected" 4 -- env RAILCOLL_TIMEOUT=3 "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" badargs
fi

cluster_checks() {
  check "cluster: correct, 3 nodes x 2, 2 rails" "personalised calls correct" 6 -- "$RC" cluster run -- "$MP" correct
}
[ "$WHERE" = cluster ] && on_cluster "--nodes 3 --ppn 2 --rails 2" cluster_checks
check_no_shm_left
summary
