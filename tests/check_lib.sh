# Sourced by the multi-process test scripts: `check` runs one command, counts
# the output lines that match a pattern, and keeps the tally that `summary`
# prints as "N passed, N failed" (the line CI shows). CHECK_TIMEOUT bounds
# each command (default 600 s).
pass=0 fail=0
log=$(mktemp)
. "$(dirname "${BASH_SOURCE[0]}")/shm_lib.sh"
check() {  # check "description" regex count -- command...
  local what=$1 regex=$2 want=$3; shift 4
  timeout "${CHECK_TIMEOUT:-600}" "$@" >"$log" 2>&1; local st=$?
  local got; got=$(grep -cE "$regex" "$log")
  if [ "$got" -eq "$want" ]; then pass=$((pass + 1)); echo "ok   $what"
  else fail=$((fail + 1)); echo "FAIL $what: $got of $want lines match '$regex' (exit $st)"; sed 's/^/     /' "$log" | head -20; fi
}
summary() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}

# on_cluster "UP ARGS" FUNCTION: as root, under the cluster lock, a fresh
# emulated cluster (`railcoll cluster up UP ARGS --rate 1gbit`) for FUNCTION's
# checks, taken down after; a failed bring-up counts as a failure. The caller's
# EXIT trap takes the cluster down too while cluster_used is 1 (a script that
# dies half-way). Not root: says the cluster was skipped.
cluster_used=0
on_cluster() {
  local up=$1 body=$2
  if [ "$(id -u)" != 0 ]; then echo "skipped the emulated cluster: needs root (network namespaces)"; return 0; fi
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
