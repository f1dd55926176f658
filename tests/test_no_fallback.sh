#!/usr/bin/env bash
# No silent fallbacks (issue 32, item 4): a command that would measure something
# other than what was asked refuses and says what to do instead.
#  * bench, calibrate, tune and bench --torch with no emulated cluster and no
#    --local: exit 2, naming `railcoll cluster up` and `--local`, nothing run;
#    not root: the same, saying the cluster needs root;
#  * bench --mpi without Open MPI's mpirun: refused before anything runs;
#  * a hardware algorithm (bcast/hw_multicast) is refused at the call, naming
#    its software form, instead of running that form under its name.
# Holds the cluster lock so that no other test's cluster is up meanwhile.
set -u
RC=${1:?path to railcoll}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/check_lib.sh"
. "$HERE/cluster_lock.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$log"' EXIT

# refused NAME WANT... -- COMMAND: exit 2, stderr has every WANT, stdout nothing
# that says a measurement started.
refused() {
  local name=$1; shift
  local wants=()
  while [ "$1" != "--" ]; do wants+=("$1"); shift; done
  shift
  timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
  local st=$? miss=""
  for w in "${wants[@]}"; do grep -qF -- "$w" "$tmp/err" || miss="$miss '$w'"; done
  if [ $st -eq 2 ] && [ -z "$miss" ] && ! grep -q "local processes\|on the emulated cluster" "$tmp/out"; then
    pass=$((pass + 1)); echo "ok   $name"
  else
    fail=$((fail + 1)); echo "FAIL $name: exit $st (want 2), missing:$miss"; head -c 600 "$tmp/out" "$tmp/err"
  fi
}

if [ "$(id -u)" = 0 ]; then
  cluster_lock
  "$RC" cluster down >/dev/null 2>&1
  for cmd in "bench allgather -m 8:8" "calibrate --quick -o $tmp/x.preset" "bench --torch all_reduce"; do
    # shellcheck disable=SC2086  # words
    refused "railcoll $cmd, no cluster: refused" "no emulated cluster is up" "railcoll cluster up" "--local" -- \
      "$RC" $cmd
  done
  timeout 120 "$RC" tune --collectives barrier -i 1 -x 0 -o "$tmp/t.json" >"$tmp/out" 2>&1
  st=$?
  if [ $st -ne 0 ] && grep -qF -- "--local" "$tmp/out" && [ ! -e "$tmp/t.json" ]; then
    pass=$((pass + 1)); echo "ok   railcoll tune, no cluster: fails, no file"
  else
    fail=$((fail + 1)); echo "FAIL railcoll tune, no cluster: exit $st"; head -c 600 "$tmp/out"
  fi
  cluster_unlock
  if command -v setpriv >/dev/null; then
    refused "railcoll bench as nobody: refused, the cluster needs root" "needs root" "--local" -- \
      setpriv --reuid=65534 --regid=65534 --clear-groups "$RC" bench allgather -m 8:8
  fi
else
  refused "railcoll bench, not root: refused" "needs root" "--local" -- "$RC" bench allgather -m 8:8
fi

# Open MPI missing (PATH without mpirun): --mpi is refused before any rank starts.
refused "bench --mpi without mpirun: refused" "cannot find mpirun" "leave out --mpi" -- \
  env PATH="$tmp/empty" "$RC" bench allgather --local -n 2 -m 8:8 -i 1 -x 0 --mpi

# A hardware algorithm: the call fails on every rank naming the software form.
check --status 1 "bcast/hw_multicast is refused on both ranks, naming bcast/smp" \
  "rank [01]: .*bcast/hw_multicast \(the call's options\) needs network hardware this cluster lacks; ask for its software form, bcast/smp" \
  2 -- "$RC" bench bcast --local --algo hw_multicast -n 2 --ppn 1 -m 8:8 -i 1 -x 0
check "bcast/smp, asked by name, runs validated" "^railcoll bench: local processes \(--local\)" 1 -- \
  "$RC" bench bcast --local --algo smp -n 2 --ppn 1 -m 8:8 -i 1 -x 0 -c
summary
