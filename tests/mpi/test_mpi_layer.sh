#!/usr/bin/env bash
# The MPI interposition library (docs/mpi.md) under unmodified MPI programs,
# for every MPI ABI it was built for (openmpi: lib/librailcoll_mpi.so, mpich:
# lib/mpich/librailcoll_mpi.so):
#   local    4 ranks on this machine (mpirun / mpiexec.mpich), on one node and
#            on 2 pretend nodes with 2 loopback rails
#   cluster  6 ranks on the emulated cluster (3 nodes x 2, 2 rails; root and
#            the cluster lock), through `railcoll cluster mpirun --railcoll`
# Every byte checked (tests/mpi/mpi_collectives.c), the library's report
# (RAILCOLL_MPI_VERBOSE=1) compared with what the program knows it should say,
# the fallbacks, RAILCOLL_MPI_COLLS, MPI_THREAD_MULTIPLE, the errors
# (tests/mpi/mpi_errors.c), linking instead of preloading, the exports, the
# wrong ABI, nonblocking and persistent collectives mixed with point-to-point
# requests in every completion call (tests/mpi/mpi_nonblocking.c), threads
# calling collectives on their own communicators at once
# (tests/mpi/mpi_threads.c), typemap order against MPI's own collectives
# (tests/mpi/mpi_typemaps.c), what served calls hold while the program frees
# it (tests/mpi/mpi_lifetimes.c), progress across both libraries on 4, 5 and
# 10 ranks (tests/mpi/mpi_progress.c), Fortran through all three bindings
# (tests/mpi/fortran_collectives.F90), and mpi4py at its default thread level
# (Debian's, on Open MPI). The new tests run under RAILCOLL_TIMEOUT=15: a
# broken route, or a rank stuck in one library, fails in seconds.
#   threads  (make sanitize, under ThreadSanitizer) the threads alone: 3
#            threads on their own communicators at MPI_THREAD_MULTIPLE, and a
#            thread waiting while another posts on the same communicator
#   usage: test_mpi_layer.sh BUILD_DIR local|cluster|threads ABI...
set -u
BUILD=$(cd "${1:?usage: test_mpi_layer.sh BUILD_DIR local|cluster ABI...}" && pwd) || exit 1
MODE=${2:?local or cluster}
shift 2
ABIS=("$@")
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$BUILD/bin
RC=$BIN/railcoll
. "$HERE/../check_lib.sh"
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err" "$log"' EXIT

# Each passing check's report (every line: railcoll=N mpi=M and the reasons,
# rank by rank) with the program that made it, for scripts/mpi_table.py
# (docs/mpi.md's table and the share of our programs' calls railcoll served):
# $BUILD/mpi-served/ABI.log, started afresh by a local run. A launch is noted
# once, however many checks read its output.
served_log=$BUILD/mpi-served
[ "$MODE" = local ] && { mkdir -p "$served_log"; for a in "${ABIS[@]}"; do : >"$served_log/$a.log"; done; }
last_prog='' last_abi=''
note_served() {
  [ "$MODE" = local ] && [ -n "$last_prog" ] || return 0
  sed -nE 's/^railcoll-mpi: rank [0-9]+: (MPI_[A-Za-z_]+) railcoll=([0-9]+) mpi=([0-9]+) ?\(?([^)]*)\)?$/\1\t\2\t\3\t\4/p' "$err" |
    sed "s/^/$last_prog\t/" >>"$served_log/$last_abi.log"
  last_prog=''
}
# The seconds since the previous verdict: where the script's time goes.
check_t0=$SECONDS
ok() { pass=$((pass + 1)); echo "ok   $* [$((SECONDS - check_t0)) s]"; check_t0=$SECONDS; note_served; }
bad() {
  fail=$((fail + 1))
  echo "FAIL $* [$((SECONDS - check_t0)) s]"
  check_t0=$SECONDS
  { grep -v '^railcoll-mpi' "$out" | head -5; grep -v '^railcoll-mpi: rank [0-9]*: MPI_' "$err" | head -15; } | sed 's/^/     /'
}
verdict() {  # verdict CONDITION-STATUS "what": counts the check
  if [ "$1" -eq 0 ]; then ok "$2"; else bad "$2"; fi
}
lib_of() { [ "$1" = mpich ] && echo "$BUILD/lib/mpich/librailcoll_mpi.so" || echo "$BUILD/lib/librailcoll_mpi.so"; }

# launch ABI [NAME=VALUE...] -- PROG ARGS: the job, stdout in $out, stderr in
# $err, its exit status returned; railcoll's collectives unless PRELOAD=0;
# NP ranks locally (default 4; the cluster's are its own).
PRELOAD=1
# Open MPI's own launcher by its own name: `mpirun` follows the system's
# alternatives, which may name MPICH's, and another may come first in PATH (a
# pip package's Intel MPI in a Python environment's bin, say).
OMPI_RUN=mpirun
command -v mpirun.openmpi >/dev/null && OMPI_RUN=mpirun.openmpi
launch() {
  local abi=$1 cmd=()
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  [ -n "${TSAN_OPTIONS:-}" ] && envs+=("TSAN_OPTIONS=$TSAN_OPTIONS")  # mpirun passes on only what it is told
  if [ "$MODE" = cluster ]; then
    cmd=(env "${envs[@]}" "$RC" cluster mpirun --mpi "$abi" --timeout 300)
    [ "$PRELOAD" = 1 ] && cmd+=(--railcoll)
    cmd+=(--)
  elif [ "$abi" = openmpi ]; then
    cmd=("$OMPI_RUN" --allow-run-as-root --oversubscribe -n "${NP:-4}" --mca btl "${OMPI_BTL:-tcp,vader,self}" --mca mpi_yield_when_idle 1
         --bind-to none)
    [ "$PRELOAD" = 1 ] && cmd+=(-x "LD_PRELOAD=$(lib_of openmpi)")
    for e in "${envs[@]}"; do cmd+=(-x "$e"); done
  else
    cmd=(mpiexec.mpich -n "${NP:-4}")
    [ "$PRELOAD" = 1 ] && cmd+=(-genv LD_PRELOAD "$(lib_of mpich)")
    for e in "${envs[@]}"; do cmd+=(-genv "${e%%=*}" "${e#*=}"); done
  fi
  last_abi=$abi last_prog=''
  [ "$PRELOAD" = 1 ] && for a in "$@"; do
    case $a in
      "$BIN"/*) last_prog=${a##*/} last_prog=${last_prog%_"$abi"}; break ;;
      *.py) last_prog=${a##*/} last_prog=${last_prog%.py}; break ;;
    esac
  done
  timeout 400 "${cmd[@]}" "$@" >"$out" 2>"$err"
}

# The library's report (stderr) says, rank by rank, what the program expected (stdout).
report_matches() {
  local got want
  got=$(grep -oE '^railcoll-mpi: rank [0-9]+: MPI_[A-Za-z_]+ railcoll=[0-9]+ mpi=[0-9]+' "$err" |
        sed 's/^railcoll-mpi: //' | sort)
  want=$(grep -oE '^railcoll-mpi-expect: rank [0-9]+: MPI_[A-Za-z_]+ railcoll=[0-9]+ mpi=[0-9]+' "$out" |
         sed 's/^railcoll-mpi-expect: //' | sort)
  [ -n "$want" ] && [ "$got" = "$want" ]
}
correct() { grep -q '^collectives correct: 0 wrong' "$out"; }
# ended_well STATUS: the job exited 0 and no process of it died of a signal
# or was caught by a sanitizer (check_lib.sh's died_re), also after its
# verdict line (at MPI_Finalize, where the library destroys its communicators).
ended_well() { [ "$1" -eq 0 ] && ! grep -qE "$died_re" "$out" "$err"; }
count() { grep -cE "$1" "$2"; }

run_collectives() {  # run_collectives ABI "what" [NAME=VALUE...] -- [WRAPPER...] PROG-SUFFIX [ARGS]: correct + report
  local abi=$1 what=$2
  shift 2
  launch "$abi" RAILCOLL_MPI_VERBOSE=1 "$@"
  local st=$?
  ended_well $st && correct && report_matches
  verdict $? "$abi: $what (exit $st)"
}

# Every rank its own layout of one type signature (tests/mpi/mpi_layouts.c):
# the route is the same on every rank, the bytes and the gaps exact, and no
# call waits for a rank that went elsewhere (RAILCOLL_TIMEOUT short, so a
# split would fail within seconds, not hang).
test_layouts() {
  local abi=$1 prog=$BIN/mpi_layouts_$1 n=4 mpi_own=()
  [ "$MODE" = cluster ] && n=6
  # MPI alone, to check the test (locally: across the emulated nodes both MPIs
  # fail it on their own, Open MPI 4.1 with a segfault in its unpack over TCP,
  # MPICH 4.0 with wrong bytes). Open MPI 4.1's tuned MPI_Allgatherv (its
  # default for these sizes) hangs when ranks' layouts differ, so that run
  # asks for its Bruck algorithm; MPICH 4.0 fails some large cases of its own
  # (--mpi-alone says which and leaves them out).
  if [ "$MODE" = local ]; then
    [ "$abi" = openmpi ] && mpi_own=(OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allgatherv_algorithm=2)
    PRELOAD=0 launch "$abi" "${mpi_own[@]}" -- "$prog" --mpi-alone
    ended_well $? && grep -q '^layouts correct: 0 wrong' "$out"
    verdict $? "$abi: the layouts test itself is right under MPI's own collectives"
  fi

  local t0=$SECONDS
  launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 -- "$prog"
  local st=$?
  ended_well $st && grep -q '^layouts correct: 0 wrong' "$out" && report_matches
  verdict $? "$abi: one type signature, a different layout on every rank (13 constructors, int+double structs, in place, counts 0-262140, split communicators at counts 0-12): every call railcoll's, every byte and gap exact (exit $st, $((SECONDS - t0)) s)"

  t0=$SECONDS
  launch "$abi" RAILCOLL_TIMEOUT=15 -- "$prog" mismatch
  st=$?
  ended_well $st && [ "$(count '^rank [0-9]+: mismatch: error after' "$out")" -eq "$n" ] && [ $((SECONDS - t0)) -lt 60 ]
  verdict $? "$abi: different basic types (4 MPI_INT against 4 MPI_DOUBLE): an error on every rank, no hang (exit $st, $((SECONDS - t0)) s)"
  grep -m1 "mismatch: error" "$out" | cut -c1-200 | sed 's/^/     /'
}

# Nonblocking and persistent collectives (tests/mpi/mpi_nonblocking.c) and
# threads (tests/mpi/mpi_threads.c): every byte, the report (every I-call and
# persistent call railcoll's), with and without railcoll's progress thread.
test_nonblocking() {
  local abi=$1 prog=$BIN/mpi_nonblocking_$1 threads=$BIN/mpi_threads_$1 n=4 starts=1000 t0 served_starts=()
  # 1000 persistent starts locally; 100 on the cluster (the same request restarted).
  [ "$MODE" = cluster ] && n=6 served_starts=(--starts 100)
  if [ "$MODE" = local ]; then
    # MPI alone, to check the test. MPICH 4.0.2's own persistent collectives
    # give wrong data from their second start (and it never returns from
    # MPI_Waitany over inactive ones): one start there.
    [ "$abi" = mpich ] && starts=1
    PRELOAD=0 launch "$abi" -- "$prog" --starts $starts
    ended_well $? && grep -q '^nonblocking correct: 0 wrong' "$out"
    verdict $? "$abi: the nonblocking test itself is right under MPI's own collectives ($starts persistent starts)"
    PRELOAD=0 launch "$abi" -- "$threads" --loops 5
    ended_well $? && grep -q '^threads correct: 0 wrong' "$out"
    verdict $? "$abi: the threads test itself is right under MPI's own collectives"
  fi
  t0=$SECONDS
  launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 -- "$prog" "${served_starts[@]}"
  local st=$?
  ended_well $st && grep -q '^nonblocking correct: 0 wrong' "$out" && report_matches && served_by_railcoll Iallgather Igatherv Ibarrier
  verdict $? "$abi: every nonblocking collective with MPI_Isend/Irecv in one array, 8 completion calls, one and two communicators; ${served_starts[1]:-1000} persistent starts; MPI_Request_free; MPI_Comm_free outstanding: exact, all railcoll's (exit $st, $((SECONDS - t0)) s)"
  grep -m2 "^batches\|^persistent" "$out" | sed 's/^/     /'

  launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 RAILCOLL_PROGRESS_THREAD=0 -- "$prog" --starts 100
  st=$?
  ended_well $st && grep -q '^nonblocking correct: 0 wrong' "$out" && report_matches
  verdict $? "$abi: the same without railcoll's progress thread (the completion calls drive it; exit $st)"

  t0=$SECONDS
  launch "$abi" RAILCOLL_TIMEOUT=15 -- "$prog" leave
  st=$?
  ended_well $st && [ "$(count '^rank [0-9]+: finalized with a request outstanding' "$out")" -eq "$n" ] && [ $((SECONDS - t0)) -lt 40 ]
  verdict $? "$abi: MPI_Finalize with an MPI_Iallreduce outstanding ends cleanly (exit $st, $((SECONDS - t0)) s)"

  t0=$SECONDS
  launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 -- "$threads"
  st=$?
  ended_well $st && grep -q '^threads correct: 0 wrong' "$out" && report_matches
  verdict $? "$abi: MPI_THREAD_MULTIPLE, 3 threads calling collectives on their own communicators at once (and making and freeing communicators): exact, all railcoll's (exit $st, $((SECONDS - t0)) s)"
  grep -m1 "^threads:" "$out" | sed 's/^/     /'

  launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 -- "$BIN/mpi_wait_post_$abi"
  st=$?
  ended_well $st && grep -q '^wait-post correct: 0 wrong' "$out" && report_matches
  verdict $? "$abi: MPI_THREAD_MULTIPLE, MPI_Wait on one thread while another posts the next nonblocking collectives on the same communicator, two communicators at once: exact, all railcoll's (exit $st)"

  if [ "$MODE" = local ]; then  # the same across 2 pretend nodes: railcoll's sockets, several communicators at once
    local pretend=(sh -c 'RAILCOLL_NODE=$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} / 2 )) exec "$0" "$@"')
    launch "$abi" RAILCOLL_MPI_VERBOSE=2 RAILCOLL_TIMEOUT=15 RAILCOLL_RAILS=127.0.0.1,127.0.0.2 -- "${pretend[@]}" "$threads"
    st=$?
    ended_well $st && grep -q '^threads correct: 0 wrong' "$out" && report_matches && grep -q "railcoll communicator of 4 ranks on 2 nodes, 2 rails" "$err"
    verdict $? "$abi: the threads on 2 pretend nodes, 2 loopback rails: exact, all railcoll's (exit $st)"
    launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 RAILCOLL_RAILS=127.0.0.1,127.0.0.2 -- "${pretend[@]}" "$prog" --starts 300
    st=$?
    ended_well $st && grep -q '^nonblocking correct: 0 wrong' "$out" && report_matches
    verdict $? "$abi: the nonblocking test on 2 pretend nodes, 2 loopback rails: exact, all railcoll's (exit $st)"
  fi
}

# Scans, user-defined operators and MPI_Alltoallw (tests/mpi/mpi_scan.c): the
# test checked under MPI alone first, then through the library at odd rank
# counts, one node and uneven or round-robin pretend nodes: every element
# right, the same digest of the results as MPI alone, the report's counts.
test_scan() {
  local abi=$1 prog=$BIN/mpi_scan_$1 starts=3 st want
  [ "$abi" = mpich ] && starts=1  # MPICH 4.0.2's own persistent collectives are wrong from their second start
  local -A digests=()
  local sizes=(6)  # the cluster's 3 nodes x 2
  [ "$MODE" = local ] && sizes=(3 5 7)
  for np in "${sizes[@]}"; do
    if [ "$MODE" = local ]; then
      NP=$np PRELOAD=0 launch "$abi" -- "$prog" --starts $starts
      st=$?
      grep -q '^scan correct: 0 wrong' "$out"
      verdict $? "$abi: the scan test itself is right under MPI's own collectives, $np ranks (exit $st)"
      digests[$np]=$(grep '^digest:' "$out" | sort | md5sum)
    fi
    # Each odd size on one layout of its own (3 ranks on one node, 5 on
    # uneven nodes, 7 round-robin): every size and every layout once, not
    # the nine pairs (scan_local runs every scan algorithm at every shape).
    local layouts=("one node")
    case $np in 5) layouts=("uneven nodes") ;; 7) layouts=("round-robin nodes") ;; esac
    [ "$MODE" = cluster ] && layouts=("the cluster")
    for layout in "${layouts[@]}"; do
      local wrap=() envs=(RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15)
      case $layout in
        "uneven nodes") wrap=(sh -c 'RAILCOLL_NODE=$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} / 2 )) exec "$0" "$@"')
                        envs+=(RAILCOLL_RAILS=127.0.0.1,127.0.0.2) ;;
        "round-robin nodes") wrap=(sh -c 'RAILCOLL_NODE=$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} % 2 )) exec "$0" "$@"')
                             envs+=(RAILCOLL_RAILS=127.0.0.1,127.0.0.2) ;;
      esac
      NP=$np launch "$abi" "${envs[@]}" -- "${wrap[@]}" "$prog" --starts $starts
      st=$?
      want=${digests[$np]:-}
      grep -q '^scan correct: 0 wrong' "$out" && report_matches &&
        served_by_railcoll Scan Exscan Iscan Iexscan Alltoallw Ialltoallw &&
        { [ -z "$want" ] || [ "$(grep '^digest:' "$out" | sort | md5sum)" = "$want" ]; }
      verdict $? "$abi: MPI_Scan/Exscan (every form), a non-commutative user operator in every reduction, MPI_Alltoallw with a datatype per peer: $np ranks, $layout: exact, the same bytes as MPI alone, all railcoll's but the one MPI must serve (exit $st)"
    done
  done
  grep -E "^railcoll-mpi: rank 0: MPI_(Scan|Exscan|Alltoallw|Allreduce) " "$err" | sed 's/^/     /'
}

# served_everywhere N COLL...: on each of N ranks the report has every COLL
# served by railcoll alone (railcoll >= 1, mpi=0).
served_everywhere() {
  local n=$1 c
  shift
  for c in "$@"; do
    [ "$(count "^railcoll-mpi: rank [0-9]+: MPI_$c railcoll=[1-9][0-9]* mpi=0\$" "$err")" -eq "$n" ] || return 1
  done
}

# Typemap order (tests/mpi/mpi_typemaps.c): in place only where the typemap
# runs in memory order, every call against MPI's own on copies of its buffers.
test_typemaps() {
  local abi=$1 n=4 t0 st mpi_own=()
  [ "$MODE" = cluster ] && n=6
  # The reference MPI_Allgatherv with layouts differing between ranks: Open
  # MPI 4.1's default tuned one hangs (test_layouts), its Bruck does not.
  [ "$abi" = openmpi ] && mpi_own=(OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allgatherv_algorithm=2)
  t0=$SECONDS
  launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 "${mpi_own[@]}" -- "$BIN/mpi_typemaps_$abi"
  st=$?
  [ $st -eq 0 ] && grep -q '^typemaps correct: 0 wrong' "$out" &&
    served_everywhere $n Bcast Allgather Gather Scatter Alltoall Allgatherv Gatherv Scatterv Alltoallv Ibcast Iallgather
  verdict $? "$abi: typemap order: 27 layouts (every constructor, reversed, permuted, negative, nested, MPI_BOTTOM) x 11 collectives x counts 1-3, every byte as MPI's own collective gives it, all railcoll's (exit $st, $((SECONDS - t0)) s)"
  grep -E "^(case|typemaps)" "$out" | head -4 | sed 's/^/     /'
}

# Handle lifetimes (tests/mpi/mpi_lifetimes.c): types, the communicator and
# requests freed while served calls run; MPI_Request_free and MPI_Cancel of
# a collective refused as MPI does.
test_lifetimes() {
  local abi=$1 n=4 st
  [ "$MODE" = cluster ] && n=6
  if [ "$MODE" = local ]; then
    PRELOAD=0 launch "$abi" -- "$BIN/mpi_lifetimes_$abi" --mpi-alone
    st=$?
    [ $st -eq 0 ] && grep -q '^lifetimes correct: 0 wrong' "$out"
    verdict $? "$abi: the lifetimes test itself holds under MPI's own collectives (exit $st)"
  fi
  launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 -- "$BIN/mpi_lifetimes_$abi"
  st=$?
  [ $st -eq 0 ] && grep -q '^lifetimes correct: 0 wrong' "$out" && served_everywhere $n Ibcast Iallgather Igatherv Ibarrier
  verdict $? "$abi: types and a communicator freed under served MPI_Ibcast/Iallgather/Igatherv/Ibarrier (and a persistent MPI_Bcast_init where declared), handles reused: exact, no crash; MPI_Request_free and MPI_Cancel of an active collective refused, the request completing as usual (exit $st)"
  grep -E "^(free|cancel):" "$out" | sed 's/^/     /'
}

# Progress across both libraries (tests/mpi/mpi_progress.c): served and MPI's
# own nonblocking collectives and point-to-point outstanding at once, completed
# in every order, staggered between ranks; then served blocking calls and
# waits beside MPI's pending 1 MiB send (over TCP alone, so the sender's MPI
# must progress it).
test_progress() {
  local abi=$1 np st t0 served=(RAILCOLL_MPI_COLLS=gatherv,barrier,allgather,scatterv,bcast RAILCOLL_TIMEOUT=15)
  local sizes=(4 5 10)
  [ "$MODE" = cluster ] && sizes=(6)
  if [ "$MODE" = local ]; then
    PRELOAD=0 launch "$abi" -- "$BIN/mpi_progress_$abi" --rounds 12
    st=$?
    [ $st -eq 0 ] && grep -q '^progress correct: 0 wrong' "$out"
    verdict $? "$abi: the progress test itself is right under MPI's own collectives (exit $st)"
  fi
  for np in "${sizes[@]}"; do
    t0=$SECONDS
    NP=$np launch "$abi" RAILCOLL_MPI_VERBOSE=1 "${served[@]}" -- "$BIN/mpi_progress_$abi" --rounds 30
    st=$?
    [ $st -eq 0 ] && grep -q '^progress correct: 0 wrong' "$out" &&
      served_everywhere "$np" Igatherv Ibarrier Iallgather Iscatterv Ibcast
    verdict $? "$abi: $np ranks: served MPI_Igatherv/Ibarrier/Iallgather/Iscatterv/Ibcast and MPI's MPI_Iscan/Iexscan/Ialltoallw/Ireduce (user operator)/Isend/Irecv outstanding together, completed by every wait and test in every order, staggered between ranks: exact, no hang (exit $st, $((SECONDS - t0)) s)"
  done
  if [ "$MODE" = local ]; then
    launch "$abi" "${served[@]}" RAILCOLL_PROGRESS_THREAD=0 -- "$BIN/mpi_progress_$abi" --rounds 15
    st=$?
    [ $st -eq 0 ] && grep -q '^progress correct: 0 wrong' "$out"
    verdict $? "$abi: the same without railcoll's progress thread: the completion calls over MPI's requests drive railcoll's (exit $st)"
  fi
  OMPI_BTL=tcp,self launch "$abi" "${served[@]}" -- "$BIN/mpi_progress_$abi" blocking --rounds 10
  st=$?
  [ $st -eq 0 ] && grep -q '^progress correct: 0 wrong' "$out"
  verdict $? "$abi: a served blocking MPI_Allgather and a served MPI_Wait while a peer waits in MPI_Recv for this rank's 1 MiB MPI_Isend: railcoll's wait turns MPI's progress (exit $st)"
}

# Fortran (tests/mpi/fortran_collectives.F90) through mpif.h, use mpi and
# use mpi_f08, each built with this MPI's mpifort: the test itself under
# MPI's collectives, then preloaded: every result exact and the report the
# program expects, every call railcoll's (blocking, nonblocking, persistent),
# the report coming from MPI_FINALIZE called from Fortran.
test_fortran() {
  local abi=$1 binding prog st
  for binding in mpif mpi f08; do
    prog=$BIN/fortran_collectives_${binding}_$abi
    if [ ! -x "$prog" ]; then
      bad "$abi: no Fortran program $prog (no mpifort for $abi? scripts/install-deps.sh installs gfortran)"
      continue
    fi
    if [ "$MODE" = local ]; then
      PRELOAD=0 launch "$abi" -- "$prog" --mpi-alone
      ended_well $? && grep -q '^fortran collectives correct: 0 wrong' "$out"
      verdict $? "$abi: the Fortran test ($binding) itself is right under MPI's own collectives"
    fi
    launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 -- "$prog"
    st=$?
    ended_well $st && grep -q '^fortran collectives correct: 0 wrong' "$out" && report_matches &&
      served_by_railcoll Allgather Iallgather Barrier Ibarrier Allreduce
    verdict $? "$abi: Fortran $binding: every served collective, blocking, nonblocking (8 completion calls) and persistent, MPI_IN_PLACE, MPI_BOTTOM, 7 Fortran types reduced: exact, every call railcoll's (exit $st)"
  done
}

test_abi() {
  local abi=$1 prog=$BIN/mpi_collectives_$1 errs=$BIN/mpi_errors_$1 n=4
  [ "$MODE" = cluster ] && n=6

  # MPI alone, to check the test (locally, as for the other programs: on the
  # cluster it only ran MPI's own collectives across the nodes).
  if [ "$MODE" = local ]; then
    PRELOAD=0 launch "$abi" -- "$prog"
    ended_well $? && correct
    verdict $? "$abi: the test itself is right under MPI's own collectives"
  fi

  launch "$abi" RAILCOLL_MPI_VERBOSE=2 -- "$prog"
  ended_well $? && correct && report_matches && grep -q "MPI_Allreduce railcoll=[0-9]* mpi=[0-9]* (operator" "$err" &&
    grep -q "railcoll communicator of $n ranks" "$err"
  verdict $? "$abi: every collective exact through railcoll, the report counts what railcoll and MPI served and why"
  grep -m1 "^free loop" "$out" | sed 's/^/     /'

  if [ "$MODE" = local ]; then
    launch "$abi" RAILCOLL_MPI_VERBOSE=2 RAILCOLL_RAILS=127.0.0.1,127.0.0.2 -- \
      sh -c 'RAILCOLL_NODE=$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} / 2 )) exec "$0" "$@"' "$prog"
    ended_well $? && correct && report_matches && grep -q "railcoll communicator of 4 ranks on 2 nodes, 2 rails" "$err"
    verdict $? "$abi: 2 pretend nodes (RAILCOLL_NODE), 2 loopback rails: exact, sockets between the nodes"
  fi

  # Collectives left to MPI on request (locally: on the cluster this only ran
  # MPI's own collectives across the nodes).
  if [ "$MODE" = local ]; then
    run_collectives "$abi" "RAILCOLL_MPI_COLLS=allgather,bcast" RAILCOLL_MPI_COLLS=allgather,bcast -- "$prog"
    grep -q "MPI_Gather railcoll=0 mpi=[1-9][0-9]* (not in RAILCOLL_MPI_COLLS" "$err"
    verdict $? "$abi: collectives left out by RAILCOLL_MPI_COLLS go to MPI and the report says why"
  fi

  run_collectives "$abi" "MPI_THREAD_MULTIPLE: served by railcoll" -- "$prog" --thread-multiple
  grep -q "MPI_Allgather railcoll=[1-9][0-9]* mpi=0" "$err" && ! grep -q "MPI_THREAD_MULTIPLE" "$err"
  verdict $? "$abi: under MPI_THREAD_MULTIPLE the report shows railcoll serving"

  [ "$MODE" = local ] && PRELOAD=0 run_collectives "$abi" "linked with -lrailcoll_mpi before MPI's library, no preload" -- \
    "$BIN/mpi_collectives_linked_$abi" --loops 2

  # Errors: every rank gets one, the string is railcoll's; the fatal handler ends the job.
  launch "$abi" RAILCOLL_TIMEOUT=30 -- "$errs" mismatch return
  ended_well $? && [ "$(count '^rank [0-9]+: error returned: class [0-9]+: railcoll: MPI_Allgather' "$out")" -eq "$n" ] &&
    [ "$(count '^rank [0-9]+: next call: class [0-9]+: railcoll: MPI_Barrier: communicator is broken' "$out")" -eq "$n" ]
  verdict $? "$abi: mismatched counts, MPI_ERRORS_RETURN: an MPI error on every rank, MPI_Error_string says what railcoll saw"
  grep -m1 "error returned" "$out" | cut -c1-200 | sed 's/^/     /'

  launch "$abi" RAILCOLL_TIMEOUT=30 -- "$errs" mismatch fatal
  [ $? -ne 0 ] && grep -qE '^railcoll-mpi: rank [0-9]+: railcoll: MPI_Allgather: .*(different call|aborted)' "$err"
  verdict $? "$abi: mismatched counts, MPI_ERRORS_ARE_FATAL: the job ends with railcoll's message"

  launch "$abi" RAILCOLL_TIMEOUT=15 -- "$errs" nonblocking return
  ended_well $? && [ "$(count '^rank [0-9]+: error in status: class [0-9]+: railcoll: MPI_Iallgather' "$out")" -eq "$n" ] &&
    [ "$(count '^rank [0-9]+: next call: class [0-9]+: railcoll: MPI_Ibarrier: communicator is broken' "$out")" -eq "$n" ]
  verdict $? "$abi: mismatched counts in MPI_Iallgather beside MPI_Isend/Irecv, MPI_ERRORS_RETURN: MPI_Waitall gives MPI_ERR_IN_STATUS with railcoll's error in the collective's status on every rank, the point-to-point ones done"

  launch "$abi" RAILCOLL_TIMEOUT=15 -- "$errs" nonblocking fatal
  [ $? -ne 0 ] && grep -qE '^railcoll-mpi: rank [0-9]+: railcoll: MPI_Iallgather: .*(different call|aborted)' "$err"
  verdict $? "$abi: the same with MPI_ERRORS_ARE_FATAL: the job ends with railcoll's message"

  launch "$abi" RAILCOLL_ALLGATHER_ALGO=nonsense -- "$errs" setup
  ended_well $? && [ "$(count "error returned: .*setting up railcoll.*RAILCOLL_ALLGATHER_ALGO" "$out")" -eq "$n" ] &&
    [ "$(count 'MPI served it: ok' "$out")" -eq "$n" ]
  verdict $? "$abi: a failed set-up is an error on every rank, then MPI serves the communicator"

  test_layouts "$abi"

  run_collectives "$abi" "every reduction: every predefined type MPI's operators take, every operator on it, every root, in place, uneven MPI_Reduce_scatter counts" -- "$BIN/mpi_reductions_$abi"

  test_nonblocking "$abi"

  test_typemaps "$abi"
  test_lifetimes "$abi"
  test_progress "$abi"
  test_fortran "$abi"
  test_scan "$abi"

  [ "$MODE" = cluster ] && return
  launch "$abi" RAILCOLL_MPI_COLLS=allgathr -- "$prog"
  [ $? -ne 0 ] && grep -q "RAILCOLL_MPI_COLLS=allgathr: unknown collective 'allgathr'" "$err"
  verdict $? "$abi: a wrong name in RAILCOLL_MPI_COLLS ends the job at MPI_Init, saying which"

  local exports
  exports=$(nm -D --defined-only "$(lib_of "$abi")" | awk '$3 !~ /^(MPIX?_|mpix?_)/ {print $3}' | tr '\n' ' ')
  [ -z "$exports" ] && nm -D --defined-only "$(lib_of "$abi")" | grep -q ' T MPI_Allgatherv$'
  verdict $? "$abi: the library exports MPI_* (and Open MPI's MPIX_*_init) and their Fortran entry points alone ${exports:+(also: $exports)}"

  # Every row of the one list of served collectives has its C entry points and,
  # where this MPI's Fortran binding goes around them, its Fortran ones.
  local syms missing=() name iname lower buffers want
  syms=" $(nm -D --defined-only "$(lib_of "$abi")" | awk '{print $3}' | tr '\n' ' ') "
  while IFS=', ' read -r name iname lower buffers; do
    want=("MPI_$name" "MPI_$iname")
    if [ "$abi" = openmpi ]; then
      want+=("mpi_${lower}_" "mpi_${lower}__" "mpi_$lower" "MPI_${lower^^}" "mpi_${lower}_f08_" "mpi_i${lower}_"
             "MPI_I${lower^^}" "mpi_i${lower}_f08_" "mpix_${lower}_init_" "MPIX_${lower^^}_INIT" "mpix_${lower}_init_f08_")
    elif [ "$buffers" = none ]; then
      want+=("mpi_${lower}_f08_" "mpi_i${lower}_f08_" "mpi_${lower}_init_f08_")
    fi
    for w in "${want[@]}"; do [[ $syms == *" $w "* ]] || missing+=("$w"); done
  done < <(sed -n 's/^RAILCOLL_MPI_SERVED(\([A-Za-z_]*\), \([A-Za-z_]*\), \([a-z_]*\), [A-Z_]*, [0-9]*, \([a-z]*\))$/\1, \2, \3, \4/p' \
             "$HERE/../../src/mpi/served.def")
  [ ${#missing[@]} -eq 0 ] && [ "$(grep -c '^RAILCOLL_MPI_SERVED(' "$HERE/../../src/mpi/served.def")" -ge 14 ]
  verdict $? "$abi: every served collective of src/mpi/served.def has its C and Fortran entry points ${missing[*]:+(missing: ${missing[*]})}"
}

wrong_abi() {  # each library refuses a program of the other ABI, naming the right one
  local abi=$1 other=$2
  PRELOAD=0 launch "$abi" LD_PRELOAD="$(lib_of "$other")" -- "$BIN/mpi_collectives_$abi" --loops 0
  [ $? -ne 0 ] && grep -q "was built for .* but the program runs" "$err"
  verdict $? "$other's library preloaded into an $abi program: a clear refusal"
}

# make install puts every library under the prefix; each finds the C API there.
test_install() {
  local prefix
  prefix=$(mktemp -d)
  if ! cmake --install "$BUILD" --prefix "$prefix" >"$out" 2>"$err"; then
    bad "make install into a temporary prefix"
    rm -rf "$prefix"
    return
  fi
  local all=0
  for abi in "${ABIS[@]}"; do
    local lib=$prefix/lib/librailcoll_mpi.so
    [ "$abi" = mpich ] && lib=$prefix/lib/mpich/librailcoll_mpi.so
    ldd "$lib" | grep -q "librailcoll.so.0 => $prefix/lib/" || all=1
  done
  PRELOAD=0 launch openmpi RAILCOLL_MPI_VERBOSE=1 LD_PRELOAD="$prefix/lib/librailcoll_mpi.so" -- \
    "$BIN/mpi_collectives_openmpi" --loops 0
  ended_well $? && [ $all -eq 0 ] && correct && report_matches
  verdict $? "installed (${ABIS[*]}): each library finds the installed librailcoll.so.0, and serves from there"
  rm -rf "$prefix"
}

# cluster mpirun picks the launcher from the program: Hydra for an MPICH one.
test_launcher_choice() {
  local abi=$1 want=$2
  "$RC" cluster mpirun --railcoll --verbose --timeout 120 -- "$BIN/mpi_collectives_$abi" --loops 0 >"$out" 2>"$err"
  ended_well $? && correct && grep -q "^railcoll cluster mpirun: [^ ]*/$want " "$err"
  verdict $? "cluster mpirun --railcoll without --mpi runs an $abi program with $want"
}

served_by_railcoll() {  # served_by_railcoll COLL...: rank 0's report says railcoll served some of each
  for c in "$@"; do grep -qE "^railcoll-mpi: rank 0: MPI_$c railcoll=[1-9]" "$err" || return 1; done
}

test_mpi4py() {
  if ! /usr/bin/python3 -c 'import mpi4py, numpy' 2>/dev/null; then
    bad "no mpi4py with numpy for /usr/bin/python3 (scripts/install-deps.sh installs python3-mpi4py, python3-numpy)"
    return
  fi
  launch openmpi RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=15 -- /usr/bin/python3 "$HERE/mpi4py_collectives.py"
  local st=$?
  ended_well $st && grep -q '^mpi4py collectives correct' "$out" && grep -q '^thread level: MPI_THREAD_MULTIPLE' "$out" &&
    served_by_railcoll Allgather Allreduce Bcast Barrier Alltoall Reduce_scatter_block Reduce Scatter Iallgather \
      Iallreduce Ibcast && ! grep -q "MPI_THREAD_MULTIPLE [0-9]" "$err"
  verdict $? "mpi4py, unmodified (default thread level MPI_THREAD_MULTIPLE): Allgather, Allreduce, Bcast, Barrier, Alltoall, Reduce_scatter_block, Reduce, Scatter, Iallgather, Iallreduce, Ibcast on numpy arrays served by railcoll, results exact (exit $st)"
}

if [ "$MODE" = cluster ]; then
  [ "$(id -u)" -eq 0 ] || skip "the emulated cluster needs root (network namespaces)"
  . "$HERE/../cluster_lock.sh"
  cluster_lock
  "$RC" cluster down >/dev/null 2>&1
  trap '"$RC" cluster down >/dev/null 2>&1; rm -f "$out" "$err" "$log"' EXIT
  if ! "$RC" cluster up --nodes 3 --ppn 2 --rails 2 --rate 1gbit >"$out" 2>"$err"; then
    cat "$err"
    echo "0 passed, 1 failed (the cluster did not come up)"
    exit 1
  fi
fi

if [ "$MODE" = threads ]; then
  for abi in "${ABIS[@]}"; do
    # MPICH's UCX hooks madvise (libucm's memory events), which glibc calls as
    # a thread exits, after ThreadSanitizer let go of that thread: every rank
    # dies of SIGSEGV inside ThreadSanitizer, with or without railcoll. Its
    # registration cache is not needed here.
    launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=60 UCX_MEM_EVENTS=no -- "$BIN/mpi_threads_$abi" --loops 5
    st=$?
    ended_well $st && grep -q '^threads correct: 0 wrong' "$out" && report_matches
    verdict $? "$abi: MPI_THREAD_MULTIPLE, 3 threads on their own communicators: exact, all railcoll's, no report (exit $st)"
    launch "$abi" RAILCOLL_MPI_VERBOSE=1 RAILCOLL_TIMEOUT=60 UCX_MEM_EVENTS=no -- "$BIN/mpi_wait_post_$abi" --rounds 5
    st=$?
    ended_well $st && grep -q '^wait-post correct: 0 wrong' "$out" && report_matches
    verdict $? "$abi: MPI_Wait on one thread while another posts on the same communicator, two at once: exact, no report (exit $st)"
  done
  summary
  exit
fi
for abi in "${ABIS[@]}"; do test_abi "$abi"; done
case " ${ABIS[*]} " in *" openmpi "*) test_mpi4py ;; esac
if [ "$MODE" = local ]; then  # (ctest runs each MPI as a test of its own)
  for abi in "${ABIS[@]}"; do
    other=openmpi
    [ "$abi" = openmpi ] && other=mpich
    [ -f "$(lib_of "$other")" ] && wrong_abi "$abi" "$other"
  done
fi
case " ${ABIS[*]} " in *" openmpi "*) [ "$MODE" = local ] && test_install ;; esac
if [ "$MODE" = cluster ]; then
  for abi in "${ABIS[@]}"; do
    case $abi in openmpi) test_launcher_choice openmpi mpirun ;; mpich) test_launcher_choice mpich mpiexec.mpich ;; esac
  done
fi
# The layer's cost tool (tools/mpi_bench/mpi_layer_cost.c, built against Open
# MPI): both sides of every size measured and their results right.
if [ -x "$BIN/railcoll-mpi-layer-cost" ] && case " ${ABIS[*]} " in *" openmpi "*) true ;; *) false ;; esac; then
  for coll in allgather bcast gather allreduce; do
    cpu=()
    [ $coll = gather ] && cpu=(--cpu-us 2)  # the calibration's CPU before each C API call
    launch openmpi -- "$BIN/railcoll-mpi-layer-cost" --coll $coll -m 8:65536 -i 5 "${cpu[@]}" >"$out" 2>"$err"
    st=$?
    ended_well $st && [ "$(grep -c '^  [0-9]' "$out")" -eq 14 ] && ! grep -q WRONG "$out" &&
      { [ ${#cpu[@]} = 0 ] || grep -q "spends 2.00 us of CPU" "$out"; }
    verdict $? "railcoll-mpi-layer-cost --coll $coll ${cpu[*]}: 14 sizes, both sides, right results"
  done
fi
summary
