#!/usr/bin/env bash
# The launchers as a user meets them, with small shell and Python programs as
# the jobs: `railcoll run` here, and `railcoll cluster run` when given
# "cluster" (root; the caller brings a cluster of at least 3 nodes up and holds
# the lock): whole lines with --tag-output, stdin to rank 0 only, a failed rank
# ending the others at once with every rank's status printed and the first
# failure named, --grace, --layout.
#   usage: test_launcher.sh RAILCOLL [cluster]
set -u
RC=${1:?railcoll}; WHERE=${2:-local}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# launch LAYOUT OPTIONS -- PROG...: a job of that many ranks per node.
if [ "$WHERE" = cluster ]; then
  launch() { local l=$1; shift; "$RC" cluster run --layout "$l" --timeout 60 "$@"; }
else
  launch() { local l=$1; shift; "$RC" run --layout "$l" --timeout 60 "$@"; }
fi
N3=1,1,1 N4=2,1,1 L21=2,1

# ---- --tag-output: every line whole and prefixed, although each rank writes
# its lines in small pieces at the same time as the others.
cat >"$tmp/pieces.py" <<'PY'
import os, sys, time
r = os.environ["RAILCOLL_RANK"]
for line in range(50):
    for piece in range(20):
        os.write(1, ("%s%02d" % (r, piece)).encode())
        if piece % 7 == 0:
            time.sleep(0.0005)
    os.write(1, b"\n")
os.write(2, ("rank %s done" % r).encode())  # no newline: flushed at exit as a line of its own
PY
launch $N4 --tag-output -- python3 "$tmp/pieces.py" >"$tmp/out" 2>"$tmp/err"; st=$?
whole=$(grep -cE '^\[([0-3])\] (\1[0-1][0-9]){20}$' "$tmp/out")
lines=$(wc -l <"$tmp/out")
[ $st -eq 0 ] && [ "$whole" -eq 200 ] && [ "$lines" -eq 200 ] && ok "--tag-output: 200 whole, prefixed lines of 4 ranks" ||
  bad "--tag-output: exit $st, $whole of $lines lines whole: $(grep -vE '^\[([0-3])\] (\1[0-1][0-9]){20}$' "$tmp/out" | head -3)"
[ "$(grep -cE '^\[[0-3]\] rank [0-3] done$' "$tmp/err")" -eq 4 ] && ok "a partial last line (stderr) is flushed as a line at exit" ||
  bad "partial last lines: $(cat "$tmp/err" | head -5)"
launch $N3 -- python3 "$tmp/pieces.py" >"$tmp/out" 2>/dev/null
[ "$(grep -cE '^([0-2])[0-1][0-9](\1[0-1][0-9]){19}$' "$tmp/out")" -eq 150 ] && ok "without --tag-output: lines whole too" ||
  bad "untagged lines interleave: $(grep -vE '^([0-2])[0-1][0-9](\1[0-1][0-9]){19}$' "$tmp/out" | head -2)"

# ---- stdin goes to rank 0 only
printf 'alpha\nbeta\n' | launch $N3 --tag-output -- sh -c 'cat; echo "end $RAILCOLL_RANK"' >"$tmp/out" 2>&1
want='[0] alpha
[0] beta
[0] end 0
[1] end 1
[2] end 2'
[ "$(sort "$tmp/out")" = "$want" ] && ok "stdin reaches rank 0 only; the others read end of file at once" ||
  bad "stdin: $(tr '\n' '|' <"$tmp/out")"

head -c 3000000 /dev/urandom >"$tmp/data"
launch $N3 -- sh -c '[ "$RAILCOLL_RANK" = 0 ] && md5sum || wc -c' <"$tmp/data" >"$tmp/out" 2>&1
[ "$(grep -c '^0$' "$tmp/out")" -eq 2 ] && grep -q "^$(md5sum <"$tmp/data" | cut -d' ' -f1) " "$tmp/out" &&
  ok "3 MB of binary stdin reach rank 0 intact, none the others" || bad "binary stdin: $(tr '\n' '|' <"$tmp/out")"

# ---- a failed rank ends the others at once; every rank's status; the cause
start=$(date +%s%N)
launch $N4 -- sh -c '[ "$RAILCOLL_RANK" = 2 ] && { sleep 0.5; exit 3; }; sleep 60' >"$tmp/out" 2>"$tmp/err"; st=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
[ $st -eq 3 ] && ok "the job's status is the failed rank's (3)" || bad "failed rank: exit $st"
[ "$took_ms" -lt 10000 ] && ok "the others were ended at once (${took_ms} ms, not 60 s)" ||
  bad "the job took $took_ms ms after a rank failed"
grep -q "rank 2 exited with status 3$" "$tmp/err" && [ "$(grep -c "ended by the launcher (SIGTERM)" "$tmp/err")" -eq 3 ] &&
  grep -q "rank 2.*exited with status 3 after .*<- first to fail" "$tmp/err" &&
  ok "every rank's status is printed, the cause marked" || bad "statuses: $(cat "$tmp/err")"

# The first failure in time is the cause, though a lower rank fails later and
# is reaped in the same pass; --grace lets the others finish on their own.
launch $N4 --grace 20 -- sh -c 'case $RAILCOLL_RANK in 3) sleep 0.2; exit 4;; 0) sleep 1; exit 5;; *) sleep 1.5;; esac' \
  >"$tmp/out" 2>"$tmp/err"; st=$?
[ $st -eq 4 ] && grep -q ": rank 3 exited with status 4$" "$tmp/err" && grep -q "rank 0.*: exited with status 5" "$tmp/err" &&
  [ "$(grep -c "exited with status 0" "$tmp/err")" -eq 2 ] && ! grep -q "ended by the launcher" "$tmp/err" &&
  ok "--grace: the cause is the first failure in time; the others finish on their own" ||
  bad "--grace: exit $st: $(cat "$tmp/err")"

# A rank killed by a signal is named with it.
launch $N3 -- sh -c '[ "$RAILCOLL_RANK" = 1 ] && kill -9 $$; sleep 60' >"$tmp/out" 2>"$tmp/err"; st=$?
[ $st -eq 137 ] && grep -q "rank 1 killed by signal 9 (SIGKILL)" "$tmp/err" && ok "a rank killed by SIGKILL: status 137, named" ||
  bad "killed rank: exit $st: $(cat "$tmp/err")"

# ---- --layout: ranks, nodes, local ranks
launch $L21 -- sh -c 'echo "$RAILCOLL_RANK $RAILCOLL_SIZE $RAILCOLL_NODE $RAILCOLL_LOCAL_RANK $RAILCOLL_LOCAL_SIZE"' \
  >"$tmp/out" 2>"$tmp/err"
[ "$(sort -n "$tmp/out")" = "$(printf '0 3 0 0 2\n1 3 0 1 2\n2 3 1 0 1')" ] && ok "--layout 2,1: ranks, nodes, local ranks" ||
  bad "--layout 2,1: $(tr '\n' '|' <"$tmp/out") $(cat "$tmp/err")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
