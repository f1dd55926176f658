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
