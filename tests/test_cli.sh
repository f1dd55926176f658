#!/usr/bin/env bash
# The railcoll command: outputs people and tools rely on, and bad input that
# must give one line naming the problem, exit status 2 and no output on stdout.
set -u
RC=${1:?path to railcoll}
pass=0 fail=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_usage_error "text in message" args...
expect_usage_error() {
  local want=$1; shift
  "$RC" "$@" >"$out" 2>"$err"; local st=$?
  if [ $st -ne 2 ]; then bad "railcoll $* exited $st, expected 2"; return; fi
  if [ -s "$out" ]; then bad "railcoll $* printed to stdout: $(head -c 200 "$out")"; return; fi
  if [ "$(wc -l <"$err")" -ne 1 ]; then bad "railcoll $* printed $(wc -l <"$err") lines on stderr"; return; fi
  if ! grep -qF -- "$want" "$err"; then bad "railcoll $*: stderr '$(cat "$err")' lacks '$want'"; return; fi
  ok
}

expect_usage_error "unknown allgather algorithm 'nope'" show allgather --algo nope --ranks 4
expect_usage_error "unknown collective 'scatter'" show scatter --algo direct --ranks 4
expect_usage_error "--ranks must be between 1 and 65536, got 0" show allgather --algo direct --ranks 0
expect_usage_error "--ranks must be between 1 and 65536, got -3" show allgather --algo direct --ranks -3
expect_usage_error "--rails must be between 1 and 64, got 0" show allgather --algo direct --ranks 4 --rails 0
expect_usage_error "--nodes describes 13 ranks but --ranks is 12" show allgather --algo direct --ranks 12 --nodes 4,4,5
expect_usage_error "every node needs at least 1 rank" show allgather --algo direct --nodes 4,0,5
expect_usage_error "--node-map expects a comma-separated list" show allgather --algo direct --node-map 0,x,1
expect_usage_error "--bytes expects a size in bytes" show allgather --algo direct --ranks 4 --bytes -5
expect_usage_error "absurdly large" show allgather --algo direct --ranks 4 --bytes 99999999999999999
expect_usage_error "absurdly large" show allgather --algo direct --ranks 4 --bytes 2T
expect_usage_error "does not take the option --concurrency" show allgather --algo bruck --ranks 4 --concurrency 2
expect_usage_error "unknown option '--frobnicate'" show allgather --algo bruck --ranks 4 --frobnicate 1
expect_usage_error "--algo NAME is required" show allgather --ranks 4
expect_usage_error "--ranks N is required" show allgather --algo bruck
expect_usage_error "give only one of --ppn, --nodes and --node-map" show allgather --algo bruck --ranks 4 --ppn 2 --nodes 2,2
expect_usage_error "option --rails needs a value" show allgather --algo bruck --ranks 4 --rails
expect_usage_error "unknown command 'frob'" frob
expect_usage_error "--all takes no other arguments" verify --all --ranks 3
expect_usage_error "unknown preset 'nope'" sim allgather --preset nope
expect_usage_error "--preset NAME is required" sim allgather --algo bruck
expect_usage_error "do not fit preset 'qsnet2-4x4-dual'" sim allgather --preset qsnet2-4x4-dual --ranks 64 --ppn 4 --algo bruck
bad=$(mktemp --suffix=.preset); printf 'name = x  # source: y\nnodes = 4\n' >"$bad"
expect_usage_error "has no '# source: ...'" sim allgather --preset "$bad"
rm -f "$bad"

# algos: one line per algorithm, and valid JSON
n=$("$RC" algos | grep -c '^  ')
[ "$n" -ge 12 ] && ok || bad "railcoll algos lists $n algorithms"
"$RC" algos --json | python3 -c 'import json,sys; a=json.load(sys.stdin); assert len(a)>=12 and all("cost" in x for x in a)' && ok || bad "algos --json"

# show --json: the documented fields
"$RC" show allgather --algo bruck --ranks 9 --rails 2 --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["algorithm"] == "bruck" and s["ranks"] == 9 and s["rails"] == 2
ops = s["programs"][0]["ops"]
puts = [o for o in ops if o["op"] == "put"]
assert [(o["step"], o["dst"], o["bytes"], o["rail"]) for o in puts] == [(0, 8, 1, 0), (0, 7, 1, 1), (1, 6, 3, 0), (1, 3, 3, 1)], puts
assert s["totals"]["steps"] == 2 and s["totals"]["messages"] == 36
assert any(o["op"] == "wait" and o["value"] == 2 for o in ops)
' && ok || bad "show --json of bruck 9/2"
"$RC" show allgather --algo direct --ranks 4 --rails 2 --bytes 4K --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert all(o["rail"] == "stripe" for p in s["programs"] for o in p["ops"] if o["op"] == "put")
' && ok || bad "show --json striping"

# text show ends with the totals
"$RC" show allgather --algo smp_bruck --nodes 4,4,5 --rails 2 --bytes 300 | tail -4 | grep -q "^totals:" && ok || bad "show totals"

# sim: every algorithm on a paper machine, with the bench-style summary
"$RC" sim allgather --preset qsnet2-4x4-dual -m 8:64K | grep -q "^# Summary: allgather, 16 ranks on 4 nodes" && ok || bad "sim on qsnet2-4x4-dual"
"$RC" sim presets | grep -c "nodes x" | grep -q "^6$" && ok || bad "sim presets lists the five paper machines and the testbed"

# sim reproduce: one JSON record per compared quantity, with the documented fields
json=$(mktemp)
"$RC" sim reproduce all --json "$json" >/dev/null && python3 -c '
import json, sys
recs = json.load(open(sys.argv[1]))
assert len(recs) >= 10
for r in recs:
    assert set(["paper", "figure", "quantity", "paper_value", "sim_value", "rel_error"]) <= set(r), r
' "$json" && ok || bad "sim reproduce --json records"
rm -f "$json"
expect_usage_error "unknown reproduction 'seed009'" sim reproduce seed009

# verify one case
"$RC" verify allgather --algo concurrent_exchange --ranks 24 --ppn 4 --rails 2 --concurrency 3 --bytes 13 | grep -q "^ok: " && ok || bad "verify one case"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
