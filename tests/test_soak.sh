#!/usr/bin/env bash
# The soak: CALLS mixed collectives (all-gather and all-gatherv of random sizes
# up to 256 KiB with random algorithms, in place or not, and barriers), every
# byte of every call checked, on every rank; open files must be the same after
# the first 10% of the calls and at the end, and the peak RSS of the second half
# may not exceed the first half's by more than RSS_SLACK_KIB (default 4096; the
# first half meets the large sizes and fills the plan cache; the test's own
# random-size buffers move single ranks' peaks by up to +-2 MiB over 10,000
# calls; a leak of 1 KiB a call shows at 8,000). Prints each rank's numbers.
#   usage: test_soak.sh RAILCOLL MP_COLLECTIVES CALLS [local|cluster] [SEED]
# cluster: on the emulated cluster that is up (root); local: 8 ranks, 2 pretend nodes, 2 rails.
set -u
RC=${1:?railcoll}; MP=${2:?mp_collectives}; CALLS=${3:-300}; WHERE=${4:-local}; SEED=${5:-$RANDOM}
SLACK=${RSS_SLACK_KIB:-4096}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
if [ "$WHERE" = cluster ]; then
  "$RC" cluster run --timeout 3600 -- "$MP" soak "$CALLS" "$SEED" >"$out" 2>&1
else
  "$RC" run -n 8 --ppn 4 --rails 2 --timeout 3600 -- "$MP" soak "$CALLS" "$SEED" >"$out" 2>&1
fi
st=$?
secs=$(($(date +%s) - start))
cat "$out"
ranks=$(grep -c "soak $CALLS calls correct" "$out")
# "open files A -> B, peak RSS C -> D KiB": A = B, D - C <= slack
numbers() { grep "soak $CALLS calls correct" "$out" |
  sed 's/.*open files \([0-9]*\) -> \([0-9]*\), peak RSS \([0-9]*\) -> \([0-9]*\) KiB.*/\1 \2 \3 \4/'; }
grep -q "under AddressSanitizer" "$out" && SLACK=999999999  # leaks: LeakSanitizer fails the rank at exit
bad=$(numbers | awk -v s="$SLACK" '$1 != $2 || $4 - $3 > s' | wc -l)
growth=$(numbers | awk 'BEGIN {m = -1e9} {d = $4 - $3; if (d > m) m = d} END {print m}')
echo "soak: $CALLS calls (seed $SEED) on $ranks ranks in $secs s, exit $st; largest rise of the peak RSS in the second half ${growth} KiB; ranks with more open files or RSS growth > $SLACK KiB: $bad"
if [ "$st" -eq 0 ] && [ "$ranks" -gt 0 ] && [ "$bad" -eq 0 ]; then echo "1 passed, 0 failed"; exit 0; fi
echo "0 passed, 1 failed"
exit 1
