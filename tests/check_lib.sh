# Sourced by the multi-process test scripts: `check` runs one command, counts
# the output lines that match a pattern, and keeps the tally that `summary`
# prints as "N passed, N failed" (the line CI shows). CHECK_TIMEOUT bounds
# each command (default 600 s).
pass=0 fail=0
log=$(mktemp)
# On exit, whatever fails: the emulated cluster goes down if on_cluster brought
# it up, $log and the paths in cleanup_paths go. A script that needs more sets
# its own EXIT trap (and removes $log itself).
cleanup_paths=()
cluster_used=0
check_cleanup() {
  [ "$cluster_used" = 1 ] && "$RC" cluster down >/dev/null 2>&1
  rm -rf "$log" "${cleanup_paths[@]}"
}
trap check_cleanup EXIT
. "$(dirname "${BASH_SOURCE[0]}")/shm_lib.sh"
# Jobs started here without rails of their own run on loopback: the default
# (every interface that is up, but lo) changes while a cluster test beside this
# one brings its bridges up or down, and ranks that started a moment apart then
# disagree on their rail count. The launchers give every rank its rails anyway.
export RAILCOLL_RAILS=${RAILCOLL_RAILS:-127.0.0.1}
# A line that says a process of the command died or was caught misbehaving:
# the launchers' (railcoll's, Open MPI's, Hydra's, the shell's), the crash
# handler libfabric's psm2 provider brings in (libinfinipath: it prints this
# and exits 1 instead of dying of the signal), and the sanitizers'. Never one
# of the lines a check counts.
died_re='killed by signal|exited on signal|KILLED BY SIGNAL|BAD TERMINATION|terminated with signal|Segmentation fault|[Cc]ore dumped|ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer|runtime error: '
# check [--status N] "description" regex count -- command...: passes when
# `count` output lines match `regex` AND the command ended as it should: exit
# status 0 (--status N: exactly N, a status the command gives on purpose),
# within CHECK_TIMEOUT, no process killed by a signal, no sanitizer report. A
# crash or a hang anywhere -- also at destroy or finalize, after the counted
# lines -- fails the check.
check() {
  local want_st=0
  if [ "$1" = --status ]; then want_st=$2; shift 2; fi
  local what=$1 regex=$2 want=$3 t0=$SECONDS; shift 4
  timeout -k 10 "${CHECK_TIMEOUT:-600}" "$@" >"$log" 2>&1; local st=$?
  local got died why=
  got=$(grep -vE "$died_re" "$log" | grep -cE "$regex")
  died=$(grep -cE "$died_re" "$log")
  if [ "$st" -eq 124 ]; then why="timed out after ${CHECK_TIMEOUT:-600} s"
  elif [ "$st" -gt 128 ] && [ "$st" -ne "$want_st" ]; then why="ended by signal $((st - 128)) (exit $st)"
  elif [ "$st" -ne "$want_st" ]; then why="exit $st, expected $want_st"
  elif [ "$died" -gt 0 ]; then why="a process died: $(grep -m1 -E "$died_re" "$log")"
  elif [ "$got" -ne "$want" ]; then why="$got of $want lines match '$regex' (exit $st)"
  fi
  # The seconds each took: where a script's time goes (make test's wall time).
  if [ -z "$why" ]; then pass=$((pass + 1)); echo "ok   $what ($((SECONDS - t0)) s)"
  else fail=$((fail + 1)); echo "FAIL $what: $why"; sed 's/^/     /' "$log" | head -20; fi
}
summary() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}

# skip "why": this test cannot run here. Exit status 77, which ctest reports
# as SKIPPED (SKIP_RETURN_CODE in tests/CMakeLists.txt), the reason on the
# line before.
skip() { echo "SKIPPED: $*"; exit 77; }
# on_cluster "UP ARGS" FUNCTION: as root, under the cluster lock, a fresh
# emulated cluster (`railcoll cluster up UP ARGS --rate 1gbit`) for FUNCTION's
# checks, taken down after; a failed bring-up counts as a failure. The caller's
# EXIT trap takes the cluster down too while cluster_used is 1 (a script that
# dies half-way). Not root: the test is skipped (the scripts run their cluster
# part as a test of its own).
on_cluster() {
  local up=$1 body=$2
  [ "$(id -u)" = 0 ] || skip "the emulated cluster needs root (network namespaces)"
  . "$(dirname "${BASH_SOURCE[0]}")/cluster_lock.sh"
  cluster_lock
  cluster_used=1
  "$RC" cluster down >/dev/null 2>&1
  # shellcheck disable=SC2086  # UP ARGS are words
  if "$RC" cluster up $up --rate 1gbit >"$log" 2>&1; then
    "$body"
  else
    fail=$((fail + 1)); echo "FAIL cluster up"; cat "$log"
  fi
  "$RC" cluster down >/dev/null 2>&1
  cluster_used=0
  cluster_unlock
}
