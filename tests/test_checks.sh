#!/usr/bin/env bash
# The checks themselves (tests/check_lib.sh) fail when they should. A job whose
# calls all went right but whose railcoll_comm_destroy then crashes, hangs or
# fails (tests/destroy_fault.c, preloaded) must fail the check that runs it:
# a railcoll job, and an Open MPI job through the MPI layer, whose MPI_Finalize
# destroys its communicators. So must a command that exits non-zero, one that
# outlives CHECK_TIMEOUT, and output where a process was killed by a signal,
# whatever lines it printed. The same jobs without the fault pass.
#   usage: test_checks.sh RAILCOLL MP_COLLECTIVES LIBDESTROY_FAULT [MPI_LAYER MPI_COLLECTIVES]
set -u
RC=${1:?railcoll}; MP=${2:?mp_collectives}; FAULT=${3:?libdestroy_fault.so}; LAYER=${4:-}; MPIPROG=${5:-}
. "$(dirname "$0")/check_lib.sh"
verdicts=0 wrong=0
# expect pass|fail CHECK-ARGUMENTS...: the check, run apart, must give that verdict.
expect() {
  local want=$1 said got; shift
  said=$(pass=0 fail=0; check "$@"; echo "verdict $pass $fail")
  case $said in *"verdict 1 0") got=pass ;; *) got=fail ;; esac
  if [ "$got" = "$want" ]; then verdicts=$((verdicts + 1)); echo "ok   the check must $want and did: $(head -1 <<<"$said")"
  else wrong=$((wrong + 1)); echo "FAIL the check must $want but did not:"; grep -v '^verdict' <<<"$said" | sed 's/^/     /'; fi
}
job=("$RC" run -n 3 --ppn 2 --rails 2 -- "$MP" correct)
expect pass "railcoll job, no fault" "calls correct" 3 -- "${job[@]}"
expect fail "railcoll job, abort() in railcoll_comm_destroy" "calls correct" 3 -- \
  env LD_PRELOAD="$FAULT" DESTROY_FAULT=abort "${job[@]}"
CHECK_TIMEOUT=30 expect fail "railcoll job, railcoll_comm_destroy never returns" "calls correct" 3 -- \
  env LD_PRELOAD="$FAULT" DESTROY_FAULT=hang "${job[@]}"
expect fail "railcoll job, railcoll_comm_destroy fails" "calls correct" 3 -- \
  env LD_PRELOAD="$FAULT" DESTROY_FAULT=error "${job[@]}"
expect fail "every line there, exit status 3" "calls correct" 1 -- sh -c 'echo "rank 0: 9 calls correct"; exit 3'
expect pass --status 3 "every line there, exit status 3 expected" "calls correct" 1 -- sh -c 'echo "rank 0: 9 calls correct"; exit 3'
CHECK_TIMEOUT=2 expect fail "every line there, then a hang" "calls correct" 1 -- sh -c 'echo "rank 0: 9 calls correct"; exec sleep 60'
expect fail "every line there and a rank killed by a signal, exit 0" "calls correct|signal" 2 -- \
  sh -c 'echo "rank 0: 9 calls correct"; echo "railcoll run: rank 1 killed by signal 6 (SIGABRT)"'
expect fail "a sanitizer's report, exit 0" "calls correct" 1 -- \
  sh -c 'echo "rank 0: 9 calls correct"; echo "==1==ERROR: AddressSanitizer: heap-use-after-free"'
if [ -n "$LAYER" ] && command -v mpirun.openmpi >/dev/null; then
  mpi=(mpirun.openmpi --allow-run-as-root --oversubscribe -n 4 --mca btl tcp,vader,self --bind-to none)
  expect pass "Open MPI job through the MPI layer, no fault" "^collectives correct: 0 wrong" 1 -- \
    "${mpi[@]}" -x LD_PRELOAD="$LAYER" "$MPIPROG" --loops 0
  expect fail "Open MPI job through the MPI layer, abort() in railcoll_comm_destroy inside MPI_Finalize" \
    "^collectives correct: 0 wrong" 1 -- \
    "${mpi[@]}" -x LD_PRELOAD="$FAULT:$LAYER" -x DESTROY_FAULT=finalize "$MPIPROG" --loops 0
fi
echo "$verdicts passed, $wrong failed"
[ "$wrong" -eq 0 ]
