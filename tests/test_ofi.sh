#!/usr/bin/env bash
# The libfabric transport (RAILCOLL_TRANSPORT=ofi, provider tcp unless
# RAILCOLL_OFI_PROVIDER says otherwise), everything byte-exact, between pretend
# nodes on one machine with 1-3 rails:
#   * every collective of the C API with every algorithm: allgather(v) and
#     barrier (mp_collectives), bcast, gather, allreduce, every barrier
#     (mp_more_collectives), alltoall(v), scatter(v), gatherv (mp_personal),
#     reduce_scatter(_block), reduce, allreduce of every type and operator
#     (mp_reductions), every collective nonblocking -- outstanding together,
#     completed in every order -- and persistent (mp_nonblocking); each by
#     messages and with every data frame between nodes by one-sided writes
#     (RAILCOLL_OFI_RMA_BYTES=1), the writes counted; with the strict
#     memory-registration modes forced on;
#   * the MPI layer under Open MPI and MPICH (tests/mpi/mpi_collectives.c: every
#     served collective; mpi_nonblocking.c: their nonblocking and persistent
#     forms), and the torch backend (tests/torch/ops.py: every operation), both
#     ways;
#   * bad input and faults, each an error on every rank within the deadline.
# As root, on the emulated cluster (4 nodes, 3 and 2 rails, uneven layouts,
# under the cluster lock): the collectives of the C API, blocking,
# nonblocking and persistent, by messages and by writes, and the faults.
# (local: the C API's part; layers: the MPI layer's and torch's; cluster.)
#   usage: test_ofi.sh BUILD_DIR local|layers|cluster [PYTHON]
set -u
BUILD=$(cd "${1:?usage: test_ofi.sh BUILD_DIR local|layers|cluster [PYTHON]}" && pwd) || exit 1
WHERE=${2:-local}; PY=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$BUILD/bin
RC=$BIN/railcoll MP=$BIN/mp_collectives MORE=$BIN/mp_more_collectives PERSONAL=$BIN/mp_personal
REDUCTIONS=$BIN/mp_reductions NONBLOCKING=$BIN/mp_nonblocking
. "$HERE/check_lib.sh"
CHECK_TIMEOUT=600
marks=$(mktemp -d)
cleanup_paths=("$marks")
export RAILCOLL_TRANSPORT=ofi
ofi_used() {  # ofi_used "what" N: N ranks' transports said they closed having written frames
  local n; n=$(grep -cE "closed in .*; [1-9][0-9]* frames by [1-9][0-9]* one-sided writes" "$log")
  if [ "$n" -ge "$2" ]; then pass=$((pass + 1)); echo "ok   $1: frames by one-sided writes on $n ranks"
  else fail=$((fail + 1)); echo "FAIL $1: $n of $2 ranks said they wrote frames one-sided"; fi
}

if [ "$WHERE" = local ]; then
check "railcoll info lists a provider per rail" "rail [01] 127.0.0.[12]: provider " 2 -- "$RC" info --rails 127.0.0.1,127.0.0.2
# Shapes: 1, 2 and 3 rails, uneven nodes, a rank per node (the algorithms'
# own shapes are multiprocess_local's and more_collectives_local's).
for cfg in "6 --ppn 4 --rails 2" "5 --ppn 2 --rails 3" "7 --ppn 3 --rails 1" "3 --ppn 1 --rails 2"; do
  n=${cfg%% *}
  check "correct, -n $cfg" "calls correct" "$n" -- "$RC" run -n $cfg -- "$MP" correct
  check "more collectives correct, -n $cfg" "calls correct" "$n" -- "$RC" run -n $cfg -- "$MORE" correct "$marks/l$n-${cfg##* }"
done
# Every registration path a provider may ask for (FI_MR_LOCAL descriptors,
# FI_MR_ENDPOINT binding, FI_MR_PROV_KEY keys), although tcp asks for none.
check "strict memory-registration modes: correct" "calls correct" 6 -- \
  env RAILCOLL_OFI_STRICT_MR=1 "$RC" run -n 6 --ppn 2 --rails 2 -- "$MP" correct
check "strict memory-registration modes: more collectives" "calls correct" 6 -- \
  env RAILCOLL_OFI_STRICT_MR=1 "$RC" run -n 6 --ppn 2 --rails 2 -- "$MORE" correct "$marks/strict"
# The one-sided path: every data frame between nodes by fi_writedata
# (RAILCOLL_OFI_RMA_BYTES=1), every collective byte-exact; with the strict
# registration modes (FI_MR_LOCAL sources, FI_MR_PROV_KEY keys, FI_MR_ENDPOINT
# regions); and the writes counted, so a path that fell back to messages fails.
check "one-sided writes: correct, every frame written" "calls correct" 6 -- \
  env RAILCOLL_OFI_RMA_BYTES=1 "$RC" run -n 6 --ppn 2 --rails 2 -- "$MP" correct
check "one-sided writes: more collectives" "calls correct" 5 -- \
  env RAILCOLL_OFI_RMA_BYTES=1 "$RC" run -n 5 --ppn 2 --rails 3 -- "$MORE" correct "$marks/rma"
check "one-sided writes with the strict registration modes" "calls correct" 6 -- \
  env RAILCOLL_OFI_RMA_BYTES=1 RAILCOLL_OFI_STRICT_MR=1 "$RC" run -n 6 --ppn 2 --rails 2 -- "$MP" correct
check "one-sided writes are used: frames written, none declined" \
  "closed in .*; [1-9][0-9]* frames by [1-9][0-9]* one-sided writes, [0-9]+ announced frames by messages" 4 -- \
  env RAILCOLL_OFI_RMA_BYTES=32768 RAILCOLL_OFI_VERBOSE=1 RAILCOLL_OFI_STRICT_MR=1 "$RC" run -n 4 --ppn 1 --rails 2 -- \
  "$MP" steady 4194304 direct 1
# A frame cut into many chunks: large all-gathers in a loop, validated.
check "steady 4 MiB all-gathers, 2 rails" "steady [0-9]+ calls correct, 0 failed" 4 -- "$RC" run -n 4 --ppn 1 --rails 2 -- "$MP" steady 4194304 direct 2

# The rest of the C API's collectives, by messages, then with every frame
# between nodes by one-sided writes (the reductions' writes counted).
# Persistent calls started 200 times here (nonblocking_local starts them
# 1,000 times on the native transport).
for rma in "" 1; do
  how=${rma:+, every frame by writes}
  by=(env ${rma:+RAILCOLL_OFI_RMA_BYTES=1})
  check "alltoall(v), scatter(v), gatherv$how" "personalised calls correct" 5 -- \
    "${by[@]}" "$RC" run -n 5 --ppn 2 --rails 2 -- "$PERSONAL" correct
  check "reduce_scatter(_block), reduce, allreduce, every type and operator$how" "calls correct" 5 -- \
    "${by[@]}" ${rma:+RAILCOLL_OFI_VERBOSE=1} "$RC" run -n 5 --ppn 2 --rails 3 -- "$REDUCTIONS" correct
  [ -n "$rma" ] && ofi_used "reductions by writes" 5
  check "every collective nonblocking, outstanding together$how" "correct ok" 4 -- \
    "${by[@]}" RAILCOLL_TIMEOUT=20 "$RC" run -n 4 --ppn 2 --rails 2 -- "$NONBLOCKING" correct
  check "persistent collectives started 200 times$how" "persist ok" 6 -- \
    "${by[@]}" RAILCOLL_TIMEOUT=20 "$RC" run -n 6 --ppn 3 --rails 2 -- "$NONBLOCKING" persist 200
done

export RAILCOLL_TIMEOUT=3
check "sizes differ between ranks" "allgather with mismatched sizes -> " 4 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" mismatch
check "allreduce counts differ between ranks" "allreduce with mismatched counts -> " 4 -- \
  "$RC" run -n 4 --ppn 2 --rails 2 -- "$MORE" mismatch allreduce
# The failed call's frames and writes still in flight when the ranks close
# (a write that lands after the call was given up crashed the rank once):
# every rank reports the error and none dies of a signal (check fails on
# one), three times.
for i in 1 2 3; do
  check "sizes differ, every frame by writes, run $i: errors, no crash" "allgather with mismatched sizes -> " 4 -- \
    env RAILCOLL_OFI_RMA_BYTES=1 "$RC" run -n 4 --ppn 1 --rails 2 -- "$MP" mismatch
done
check "a peer exits in the middle" "dead peer -> a peer failed" 3 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" peer-exit
# A peer on another node dies: rxm only refuses sends to it, so the transport
# asks its endpoint (a refused connect: gone) and every rank fails within a few
# seconds although the deadline is 20 s.
check "a remote peer exits: every rank within 4 s, deadline 20 s" "dead peer -> a peer failed after [0-3]\." 3 -- \
  env RAILCOLL_TIMEOUT=20 "$RC" run -n 4 --ppn 1 --rails 2 -- "$MP" peer-exit
check "a remote peer exits, every frame by writes: every rank within 4 s" "dead peer -> a peer failed after [0-3]\." 3 -- \
  env RAILCOLL_TIMEOUT=20 RAILCOLL_OFI_RMA_BYTES=1 "$RC" run -n 4 --ppn 1 --rails 2 -- "$MP" peer-exit
check "a replayed frame from an earlier call is refused" "replayed frame refused" 4 -- \
  env RAILCOLL_TEST_REPLAY_CALL=1 "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" replay
check "a deadline passes" "sleeping peer -> (deadline passed|a peer failed) after [3-7]\." 3 -- "$RC" run -n 4 --ppn 2 -- "$MP" deadline
# Set-up refusals: found as soon as every rank is in the store, so the deadline
# only has to outlast a loaded machine's start of rank 0 (3 s did not, at load 18).
export RAILCOLL_TIMEOUT=20
check --status 1 "one rank on the native transport: refused on every rank" "RAILCOLL_TRANSPORT=(ofi|tcp), this rank" 4 -- \
  "$RC" run --grace 10 -n 4 --ppn 2 --rails 2 -- sh -c '[ $RAILCOLL_RANK = 1 ] && export RAILCOLL_TRANSPORT=tcp; exec "$0" correct' "$MP"
check --status 1 "one rank with another job key: every rank fails set-up with the hint" "RAILCOLL_JOB_KEY differ" 4 -- \
  "$RC" run --grace 10 -n 4 --ppn 2 --rails 2 -- sh -c '[ $RAILCOLL_RANK = 1 ] && export RAILCOLL_JOB_KEY=another-key; exec "$0" correct' "$MP"
check --status 1 "no such provider: a clear error" "libfabric offers no RDM endpoint .* from provider 'no-such-provider'" 2 -- \
  env RAILCOLL_OFI_PROVIDER=no-such-provider "$RC" run --grace 10 -n 2 --ppn 1 -- "$MP" correct
unset RAILCOLL_TIMEOUT
fi

if [ "$WHERE" = layers ]; then
# The MPI layer over libfabric: 4 ranks of an unmodified MPI program on 2
# pretend nodes, 2 loopback rails, under each MPI; by messages and by writes.
mpi_over_ofi() {  # mpi_over_ofi ABI PROGRAM VERDICT "what" [NAME=VALUE...]
  local abi=$1 prog=$2 verdict=$3 what=$4 cmd
  shift 4
  local envs=(RAILCOLL_TRANSPORT=ofi RAILCOLL_RAILS=127.0.0.1,127.0.0.2 RAILCOLL_MPI_VERBOSE=2 RAILCOLL_TIMEOUT=20 "$@")
  local pretend=(sh -c 'RAILCOLL_NODE=$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} / 2 )) exec "$0" "$@"')
  if [ "$abi" = openmpi ]; then
    cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe -n 4 --mca btl tcp,vader,self --bind-to none
         -x "LD_PRELOAD=$BUILD/lib/librailcoll_mpi.so")
    for e in "${envs[@]}"; do cmd+=(-x "$e"); done
  else
    cmd=(mpiexec.mpich -n 4 -genv LD_PRELOAD "$BUILD/lib/mpich/librailcoll_mpi.so")
    for e in "${envs[@]}"; do cmd+=(-genv "${e%%=*}" "${e#*=}"); done
  fi
  check "MPI layer, $abi: $what" "$verdict" 1 -- "${cmd[@]}" "${pretend[@]}" "$BIN/${prog}_$abi"
  if grep -q "railcoll communicator of 4 ranks on 2 nodes, 2 rails (ofi:" "$log"; then
    pass=$((pass + 1)); echo "ok   MPI layer, $abi: $what: the railcoll communicators are libfabric's"
  else
    fail=$((fail + 1)); echo "FAIL MPI layer, $abi: $what: no railcoll communicator over libfabric between the nodes"
  fi
}
for abi in openmpi mpich; do
  [ -x "$BIN/mpi_collectives_$abi" ] || { fail=$((fail + 1)); echo "FAIL no $BIN/mpi_collectives_$abi"; continue; }
  mpi_over_ofi "$abi" mpi_collectives "^collectives correct: 0 wrong" "every served collective, by messages"
  mpi_over_ofi "$abi" mpi_collectives "^collectives correct: 0 wrong" "every served collective, by writes" \
    RAILCOLL_OFI_RMA_BYTES=1
  mpi_over_ofi "$abi" mpi_nonblocking "^nonblocking correct: 0 wrong" "nonblocking and persistent, by writes" \
    RAILCOLL_OFI_RMA_BYTES=1
done

# The torch backend over libfabric: every operation of tests/torch/ops.py,
# 4 ranks on 2 pretend nodes, 2 rails; by messages and by writes.
if [ -n "$PY" ] && "$PY" -c "import torch" 2>/dev/null; then
  for rma in "" 1; do
    check "torch backend: every operation, 4 ranks on 2 pretend nodes${rma:+, every frame by writes}" \
      "^torch ops: [0-9]+ checks passed on 4 ranks" 1 -- \
      env PYTHONPATH="$BUILD/python" RAILCOLL_TEST_PPN=2 RAILCOLL_RAILS=127.0.0.1,127.0.0.2 ${rma:+RAILCOLL_OFI_RMA_BYTES=1} \
      RAILCOLL_OFI_VERBOSE=1 "$PY" -m torch.distributed.run --standalone --nproc-per-node 4 "$HERE/torch/ops.py"
    [ -n "$rma" ] && ofi_used "torch backend by writes" 4
  done
else
  fail=$((fail + 1)); echo "FAIL torch backend over libfabric: no torch for '${PY:-python3}' (scripts/install-deps.sh installs it)"
fi

fi

cluster_checks() {
  check "cluster: correct, 4 nodes x 2, 3 rails" "calls correct" 8 -- "$RC" cluster run -- "$MP" correct
  check "cluster: correct, 4 nodes x 2, 2 rails" "calls correct" 8 -- "$RC" cluster run --rails 2 -- "$MP" correct
  check "cluster: correct, uneven 1,3,2,2, 3 rails" "calls correct" 8 -- "$RC" cluster run --layout 1,3,2,2 -- "$MP" correct
  check "cluster: more collectives, 4 nodes x 2, 3 rails" "calls correct" 8 -- \
    "$RC" cluster run -- "$MORE" correct "$marks/c1"
  check "cluster: more collectives, uneven 1,3,2,2, 2 rails" "calls correct" 8 -- \
    "$RC" cluster run --layout 1,3,2,2 --rails 2 -- "$MORE" correct "$marks/c2"
  check "cluster: strict memory-registration modes" "calls correct" 8 -- \
    env RAILCOLL_OFI_STRICT_MR=1 "$RC" cluster run --rails 2 -- "$MP" correct
  check "cluster: one-sided writes, strict modes, uneven 1,3,2,2" "calls correct" 8 -- \
    env RAILCOLL_OFI_RMA_BYTES=1 RAILCOLL_OFI_STRICT_MR=1 "$RC" cluster run --layout 1,3,2,2 --rails 2 -- "$MP" correct
  check "cluster: a peer exits in the middle" "dead peer -> a peer failed" 7 -- \
    env RAILCOLL_TIMEOUT=5 "$RC" cluster run -- "$MP" peer-exit
  check "cluster: sizes differ between ranks" "mismatched sizes -> " 8 -- \
    env RAILCOLL_TIMEOUT=5 "$RC" cluster run -- "$MP" mismatch
  check "cluster: railcoll info on every node" "rail 1 198.18.1.[0-9]+: provider " 4 -- \
    "$RC" cluster run --ppn 1 -- "$RC" info
  check "cluster: alltoall(v), scatter(v), gatherv, every frame by writes" "personalised calls correct" 8 -- \
    env RAILCOLL_OFI_RMA_BYTES=1 "$RC" cluster run --rails 2 -- "$PERSONAL" correct
  check "cluster: reductions, uneven 1,3,2,2" "calls correct" 8 -- \
    "$RC" cluster run --layout 1,3,2,2 -- "$REDUCTIONS" quick
  check "cluster: every collective nonblocking, every frame by writes" "correct ok" 8 -- \
    env RAILCOLL_OFI_RMA_BYTES=1 RAILCOLL_TIMEOUT=20 "$RC" cluster run -- "$NONBLOCKING" correct
  check "cluster: persistent collectives" "persist ok" 8 -- \
    env RAILCOLL_TIMEOUT=20 "$RC" cluster run -- "$NONBLOCKING" persist
}
[ "$WHERE" != cluster ] || on_cluster "--nodes 4 --ppn 2 --rails 3" cluster_checks

check_no_shm_left
summary
