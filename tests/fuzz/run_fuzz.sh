#!/usr/bin/env bash
# Runs the libFuzzer target for SECONDS on a copy of the corpus kept in the
# repo (tests/fuzz/corpus is not changed; `MERGE=1` merges what was found back
# into it, minimised). Exit 0: no crash; else the crashing input is kept in
# ARTIFACTS (default: a temporary directory, printed).
#   usage: run_fuzz.sh FUZZ_WIRE SECONDS
set -u
FUZZ=${1:?fuzz_wire binary}; SECONDS_=${2:-25}
HERE=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work/corpus"' EXIT
cp -r "$HERE/corpus" "$work/corpus"
artifacts=${ARTIFACTS:-$work}
"$FUZZ" -max_total_time="$SECONDS_" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$work/corpus" >"$work/log" 2>&1
st=$?
grep -E "^Done|stat::number_of_executed_units|new_units_added" "$work/log"
if [ "$st" -ne 0 ]; then
  echo "FAIL: the fuzzer found a crash (exit $st); input and log in $artifacts"
  tail -40 "$work/log"
  exit 1
fi
[ -n "${MERGE:-}" ] && "$FUZZ" -merge=1 "$HERE/corpus" "$work/corpus" >/dev/null 2>&1 && echo "merged into $HERE/corpus"
rm -rf "$work"
echo "no crash in $SECONDS_ s"
