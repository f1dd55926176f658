#!/usr/bin/env bash
# Multi-process tests of bcast, gather, allreduce and every barrier: every
# algorithm, roots other than 0, uneven nodes, 1-3 rails, locally (pretend nodes)
# and, as root, on the emulated cluster; then bad arguments and counts that
# differ between ranks, each an error on every rank within the deadline; and the
# background-traffic generator on the cluster.
#   usage: test_more_collectives.sh RAILCOLL MP_MORE_COLLECTIVES local|cluster (the cluster part: root; SKIPPED otherwise)
set -u
RC=${1:?railcoll}; MP=${2:?mp_more_collectives}; WHERE=${3:?local or cluster}
. "$(dirname "$0")/check_lib.sh"
marks=$(mktemp -d)
cleanup_paths=("$marks")

if [ "$WHERE" = local ]; then
  for cfg in "1" "3" "8 --ppn 4 --rails 2" "6 --ppn 4 --rails 2" "5 --ppn 2 --rails 3"; do
    n=${cfg%% *}
    check "correct, -n $cfg" "calls correct" "$n" -- "$RC" run -n $cfg -- "$MP" correct "$marks/l${n}"
  done
  export RAILCOLL_TIMEOUT=3
  check "bad arguments" "bad arguments rejected" 4 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" badargs
  check "allreduce counts differ between ranks" "allreduce with mismatched counts -> " 4 -- \
    "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" mismatch allreduce
  check "bcast counts differ between ranks" "bcast with mismatched counts -> " 4 -- \
    "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" mismatch bcast
  unset RAILCOLL_TIMEOUT
fi

# The emulated cluster is shared with the other cluster tests: one user at a time.
cluster_checks() {
  check "cluster: correct, 4 nodes x 2, 3 rails" "calls correct" 8 -- "$RC" cluster run -- "$MP" correct "$marks/c1"
  check "cluster: correct, uneven 1,3,2,2, 2 rails" "calls correct" 8 -- \
    "$RC" cluster run --layout 1,3,2,2 --rails 2 -- "$MP" correct "$marks/c2"
  check "cluster: allreduce counts differ" "allreduce with mismatched counts -> " 8 -- \
    env RAILCOLL_TIMEOUT=5 "$RC" cluster run -- "$MP" mismatch allreduce
  # The background-traffic generator moves data from every node over every rail.
  check "cluster: traffic generator, uniform" "\(uniform\) sent [1-9][0-9]* MiB" 4 -- \
    "$RC" cluster run --ppn 1 -- "$RC" traffic --pattern uniform --seconds 2
  check "cluster: traffic generator, hotspot" "\(hotspot\) sent [0-9]+ MiB" 4 -- \
    "$RC" cluster run --ppn 1 -- "$RC" traffic --pattern hotspot --seconds 2
}
[ "$WHERE" = cluster ] && on_cluster "--nodes 4 --ppn 2 --rails 3" cluster_checks
check_no_shm_left
summary
