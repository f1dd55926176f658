#!/usr/bin/env bash
# The torch backend's tests (docs/torch.md). `local`: torchrun jobs on this
# host (4 ranks on 2 pretend nodes over 2 loopback rails, and 2 ranks on one
# node in shared memory): every operation, dtype and reduce op, subgroups,
# outstanding Works, DDP, every operation, dtype and layout against gloo's
# results, FSDP2 against one process, a rank killed mid-job, and `railcoll
# bench --torch` on small sizes. `cluster` (root): the same
# operations and DDP through `railcoll cluster torchrun` on the emulated
# cluster, created here and taken down on every exit path. `threads` (make
# sanitize, in build-tsan): the backend's threads (tests/torch/threads.py)
# under ThreadSanitizer, which local runs too, uninstrumented.
# Without torch (or, on the cluster, without root) the test is SKIPPED
# (exit 77), saying why: scripts/install-deps.sh installs torch.
set -u
MODE=${1:?local|cluster|threads}; PY=${2:?python}; PYDIR=${3:?the built package}; RC=${4:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../check_lib.sh"
[ "$MODE" != cluster ] || [ "$(id -u)" = 0 ] || skip "the emulated cluster needs root (network namespaces)"
CHECK_TIMEOUT=400
export PYTHONPATH="$PYDIR${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c "import torch" 2>/dev/null ||
  skip "torch is not installed for $PY (scripts/install-deps.sh installs it; make build runs it)"
if [ "$MODE" = threads ]; then
  # ThreadSanitizer's build (make sanitize, build-tsan): its extension needs
  # libtsan loaded first, so the interpreter itself (not a shell shim in
  # front of it: bash dies under ThreadSanitizer) runs with it preloaded.
  ext=$(ls "$PYDIR"/railcoll/_C*.so 2>/dev/null | head -1)
  tsan=$( [ -n "$ext" ] && ldd "$ext" | awk '/libtsan/ {print $3; exit}')
  [ -n "$tsan" ] || { echo "FAIL: no ThreadSanitizer-built extension in $PYDIR/railcoll (${ext:-none})"; echo "0 passed, 1 failed"; exit 1; }
  wrapped=$(mktemp -d)
  printf '#!/bin/sh\nLD_PRELOAD=%s exec %s "$@"\n' "$tsan" "$("$PY" -c 'import sys; print(sys.executable)')" >"$wrapped/python"
  chmod +x "$wrapped/python"
  PY=$wrapped/python
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ignore_noninstrumented_modules=1 ${TSAN_OPTIONS:-}"
fi
if ! out=$("$PY" -c "import railcoll" 2>&1); then
  echo "FAIL: the railcoll torch backend does not import from $PYDIR:"; echo "$out"
  echo "0 passed, 1 failed"; exit 1
fi
TORCHRUN=("$PY" -m torch.distributed.run)

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# by_hand N SCRIPT: N ranks started without torchrun, env:// rendezvous at rank
# 0; the status of the last rank that failed (waited for by pid: `wait -n`
# could answer 127, no child left, for one reaped already).
by_hand() {
  local n=$1 script=$2 port pids=() st=0; port=$(free_port)
  for r in $(seq 0 $((n - 1))); do
    env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$PY" "$script" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || st=$?; done
  return $st
}

# The backend's threads (tests/torch/threads.py): Works waited for on
# several threads at once, a thread waiting while another posts, two groups
# posted from two threads; under ThreadSanitizer (make sanitize) any report
# fails the check (check_lib.sh's died_re).
threads_check() {
  check "threads: Works waited for on 4 threads at once, waits beside posts, 2 groups from 2 threads, 2 ranks" \
    "^torch threads: rank [01]: [0-9]+ checks passed on 2 ranks" 2 -- \
    env RAILCOLL_RAILS=127.0.0.1 RAILCOLL_TIMEOUT=120 bash -c "$(declare -f by_hand free_port); PY=$PY; by_hand 2 $HERE/threads.py"
}
if [ "$MODE" = threads ]; then
  trap 'rm -rf "$log" "$wrapped"' EXIT
  threads_check
  summary; exit $?
fi

if [ "$MODE" = local ]; then
  trap 'rm -f "$log"' EXIT
  threads_check
  two_nodes=(env RAILCOLL_TEST_PPN=2 RAILCOLL_RAILS=127.0.0.1,127.0.0.2)
  # ops, DDP and FSDP2 in one job per layout (tests/torch/suite.py: one
  # start-up), each with its own verdict line. The comparison with gloo runs
  # alone: gloo cannot make its group again in processes that made one and
  # destroyed it (DDP's), as the store keeps the first one's keys.
  check "ops, DDP (parameters equal, loss as gloo's), FSDP2 (losses as one process's): 4 ranks on 2 pretend nodes, 2 rails" \
    "^torch (ops|ddp|fsdp): [0-9]+ checks passed on 4 ranks" 3 -- \
    "${two_nodes[@]}" "${TORCHRUN[@]}" --standalone --nproc-per-node 4 "$HERE/suite.py" ops ddp fsdp
  check "every operation, dtype and layout against gloo, 4 ranks on 2 pretend nodes" \
    "^torch against gloo: [0-9]+ checks passed on 4 ranks" 1 -- \
    "${two_nodes[@]}" "${TORCHRUN[@]}" --standalone --nproc-per-node 4 "$HERE/against_gloo.py"
  check "ops, FSDP2: 2 ranks on one node (shared memory)" "^torch (ops|fsdp): [0-9]+ checks passed on 2 ranks" 2 -- \
    env RAILCOLL_RAILS=127.0.0.1 "${TORCHRUN[@]}" --standalone --nproc-per-node 2 "$HERE/suite.py" ops fsdp
  for victim in 1 3; do
    check --status 17 "rank $victim of 4 killed: the 3 others raise railcoll's error within the timeout" \
      "^rank [0-9]: exception after" 3 -- env "${two_nodes[@]}" RAILCOLL_TEST_VICTIM=$victim \
      bash -c "$(declare -f by_hand free_port); PY=$PY; by_hand 4 $HERE/peer_failure.py"
  done
  if [ -n "$RC" ]; then
    check "railcoll bench --torch: gloo and railcoll side by side, results checked" \
      "^(all_reduce|broadcast) +(8|64) +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x$" 4 -- \
      "$RC" bench --torch all_reduce,broadcast --local -n 2 -m 8:64 --rounds 1
  fi
  summary; exit $?
fi

# ---- cluster
[ -n "$RC" ] || { echo "usage: $0 cluster PYTHON PYDIR RAILCOLL"; exit 2; }
. "$HERE/../cluster_lock.sh"
cluster_lock
cleanup() { "$RC" cluster down >/dev/null 2>&1; rm -f "$log"; }
trap cleanup EXIT
"$RC" cluster down >/dev/null 2>&1
if "$RC" cluster up --nodes 2 --ppn 2 --rails 2 >"$log" 2>&1; then
  TR=$(dirname "$(command -v "$PY")")/torchrun
  [ -x "$TR" ] || TR=torchrun
  check "cluster torchrun: ops and DDP, 2 nodes x 2, 2 rails" "^torch (ops|ddp): [0-9]+ checks passed on 4 ranks" 2 -- \
    "$RC" cluster torchrun --torchrun "$TR" --timeout 300 -- "$HERE/suite.py" ops ddp
else
  fail=$((fail + 1)); echo "FAIL cluster up"; cat "$log"
fi
summary; exit $?
