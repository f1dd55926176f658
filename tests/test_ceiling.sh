#!/usr/bin/env bash
# The rail rate this machine can feed, on the emulated cluster: `cluster
# ceiling` (the curve, JSON and plot, the rate put back), `cluster up --rate
# auto` (the rate found kept in the cluster's description and said by status),
# and wrong use refused. A short search (2 calls, 1 run a rate, 2 rates): it
# checks the machinery, not the figure. Exit 77 (SKIPPED) without root.
#   usage: test_ceiling.sh PATH/TO/railcoll
set -u
RC=$(cd "$(dirname "${1:?usage: test_ceiling.sh PATH/TO/railcoll}")" && pwd)/$(basename "$1")
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: needs root (network namespaces)"
  exit 77
fi
. "$(dirname "$0")/cluster_lock.sh"
cluster_lock
pass=0 fail=0
tmp=$(mktemp -d)
trap '"$RC" cluster down >/dev/null 2>&1; rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
quick=(--calls 2 --repeats 1 --bytes 1048576 --start 200mbit --low 200mbit --high 400mbit)

"$RC" cluster down >/dev/null 2>&1
"$RC" cluster ceiling "${quick[@]}" >"$tmp/out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "no cluster is up" "$tmp/out" && ok "ceiling without a cluster refused" ||
  bad "ceiling without a cluster (exit $st)"
"$RC" cluster up --rate 1gbit --calls 2 >"$tmp/out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "goes with --rate auto" "$tmp/out" && ok "search options without --rate auto refused" ||
  bad "up --rate 1gbit --calls 2 (exit $st)"

if "$RC" cluster up --nodes 2 --ppn 2 --rails 2 --rate 1gbit >/dev/null; then
  timeout 300 "$RC" cluster ceiling "${quick[@]}" --json "$tmp/c.json" --plot "$tmp/c.png" >"$tmp/out" 2>&1
  st=$?
  if [ $st -eq 0 ]; then
    grep -q "^200 Mbit/s" "$tmp/out" && ok "ceiling measured from 200 Mbit/s" ||
      bad "ceiling's curve: $(head -c 400 "$tmp/out")"
    python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert [p["rate_bps"] for p in c["points"]][:1] == [200000000], c["points"]
assert all(0 < p["pct"] < 200 and len(p["run_pct"]) == 1 for p in c["points"])
' "$tmp/c.json" && ok "the JSON holds each rate with its share of the rail bound" || bad "ceiling JSON"
    [ -s "$tmp/c.png" ] && ok "the curve is plotted" || bad "no plot"
    "$RC" cluster status >"$tmp/st" 2>&1
    grep -q "^rate:    1gbit (1000000000 bit/s)" "$tmp/st" && ok "the rails are back at 1gbit" ||
      bad "rate after ceiling: $(grep rate: "$tmp/st")"
    grep -q "ceiling: .* found in\|ceiling: no rate reached" "$tmp/out" && ok "how long it took is said" ||
      bad "no duration in: $(tail -2 "$tmp/out")"
  else
    bad "ceiling (exit $st): $(tail -c 400 "$tmp/out")"
  fi
  "$RC" cluster down >/dev/null
else
  bad "cluster up --nodes 2"
fi

timeout 300 "$RC" cluster up --nodes 2 --ppn 2 --rails 2 --rate auto "${quick[@]}" >"$tmp/out" 2>&1
st=$?
if [ $st -eq 0 ]; then
  grep -q "^cluster up: .* at [0-9]*mbit (auto: the plain TCP all-to-all reaches [0-9]*% of the rail bound there)" "$tmp/out" &&
    ok "up --rate auto: the rate found, said" || bad "up --rate auto said: $(tail -2 "$tmp/out")"
  grep -q "^rate_source=auto" /run/railcoll/cluster.conf && grep -q "^ceiling_pct=" /run/railcoll/cluster.conf &&
    ok "the cluster's description records it (rate_source=auto, ceiling_pct)" || bad "cluster.conf: $(cat /run/railcoll/cluster.conf)"
  "$RC" cluster status | grep -q "^rate:    [0-9]*mbit (auto:" && ok "status says the rate is auto" || bad "status"
else
  bad "up --rate auto (exit $st): $(tail -c 400 "$tmp/out")"
fi
"$RC" cluster down >/dev/null 2>&1

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
