#!/usr/bin/env bash
# The railcoll command: outputs people and tools rely on, and bad input that
# must give one line naming the problem, exit status 2 and no output on stdout;
# every verb's --help, --version, the benchmark's layouts and the plot's styles.
set -u
RC=${1:?path to railcoll}
HERE=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0
out=$(mktemp) err=$(mktemp) tmp=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$tmp"' EXIT

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
expect_usage_error "unknown collective 'alltoallw'" show alltoallw --algo direct --ranks 4
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

# Flags are named as they were typed: -n, not --n.
expect_usage_error "-n expects a whole number, got 'x'" bench allgather -n x
expect_usage_error "unknown option '-q'" bench allgather -q
expect_usage_error "-i must be between 1 and 1000000, got 0" bench allgather -i 0
expect_usage_error "option -m needs a value" bench allgather -m
expect_usage_error "-n must be between 1 and 1024, got 0" run -n 0 -- true
expect_usage_error "give only one of --ppn and --layout" run -n 4 --ppn 2 --layout 2,2 -- true
expect_usage_error "--layout expects ranks per node" run --layout 2,0 -- true
expect_usage_error "-n 5 but --layout 2,2 holds 4 ranks" bench allgather --layout 2,2 -n 5
expect_usage_error "--background must be one of complement, uniform, hotspot" bench barrier --background random
# --fault: options it cannot honour are refused, not ignored; it needs the cluster.
expect_usage_error "--mpi does not go with --fault" bench allgather --fault kill@1 --mpi
expect_usage_error "--plot does not go with --fault" bench allgather --fault kill@1 --plot x.png
expect_usage_error "--skew does not go with --fault" bench allgather --fault kill@1 --skew 200
expect_usage_error "--skew expects a whole number, got 'x'" bench allgather --skew x
expect_usage_error "--fault expects rail-down@T[:D], flap@T:D[:P] or kill@T" bench allgather --fault crash@1
expect_usage_error "--fault flap@T:D[:P] needs how long the rail flaps" bench allgather --fault flap@1
expect_usage_error "P must be between 0.01 s and D" bench allgather --fault flap@1:2:5
expect_usage_error "--fault needs the emulated cluster" bench allgather --fault kill@1 --local --json "$tmp/f.json"
# traffic: usage without arguments (it used to run for a minute), an error outside a job.
timeout 10 "$RC" traffic >"$out" 2>"$err"; st=$?
[ $st -eq 2 ] && [ ! -s "$out" ] && grep -q "^usage: railcoll traffic --pattern" "$err" && ok ||
  bad "traffic without arguments: exit $st, stderr $(head -c 200 "$err")"
(unset RAILCOLL_RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID RANK
 expect_usage_error "the generator runs as the ranks of a job" traffic --pattern uniform --seconds 1)

# Every verb answers --help and -h with its usage on stdout, exit 0, nothing on stderr.
for verb in algos show verify run bench sim goal calibrate cluster traffic; do
  for h in --help -h; do
    "$RC" $verb $h >"$out" 2>"$err"; st=$?
    if [ $st -eq 0 ] && [ ! -s "$err" ] && head -1 "$out" | grep -q "^usage: railcoll $verb"; then ok
    else bad "railcoll $verb $h: exit $st, stdout '$(head -c 120 "$out")', stderr '$(head -c 200 "$err")'"; fi
  done
done
# ... also after a sub-verb or other options, and the launchers pass a program's own --help on.
for args in "goal export --help" "sim reproduce --help" "cluster run --help" "show allgather --algo bruck -h" \
    "bench allgather -m 8:16 --help"; do
  "$RC" $args >"$out" 2>"$err" && grep -q "^usage: railcoll ${args%% *}" "$out" && [ ! -s "$err" ] && ok ||
    bad "railcoll $args: $(head -c 200 "$err")"
done
[ "$("$RC" run -n 1 -- sh -c 'echo "$1"' sh --help)" = "--help" ] && ok || bad "run -- PROG --help must reach PROG"
"$RC" help bench | grep -q "^usage: railcoll bench" && ok || bad "railcoll help bench"
"$RC" --help | grep -q "^  traffic --pattern" && ok || bad "railcoll --help lists traffic"
"$RC" --version | grep -Eq "^railcoll [0-9]+\.[0-9]+" && ok || bad "railcoll --version: $("$RC" --version 2>&1)"

# bench: -n not a multiple of --ppn is an uneven layout, never more ranks;
# --layout likewise; every record and the context say so.
bench_local() {  # NAME EXPECTED-PLACEMENT EXPECTED-RANKS ARGS...
  local name=$1 where=$2 ranks=$3; shift 3
  timeout 120 "$RC" bench allgather --local --algo direct -m 8:16 -i 3 -x 1 -c --json "$tmp/u.json" "$@" >"$out" 2>"$err"
  local st=$?
  if [ $st -ne 0 ]; then bad "$name: exit $st: $(tail -c 300 "$err")"; return; fi
  grep -qF "$where" "$out" || { bad "$name: no '$where' in: $(head -2 "$out")"; return; }
  python3 -c '
import json, sys
recs = json.load(open(sys.argv[1]))
assert len(recs) == 2 and all(r["ranks"] == int(sys.argv[2]) and r["validated"] for r in recs), recs
' "$tmp/u.json" "$ranks" && ok || bad "$name: records"
}
bench_local "bench -n 5 --ppn 2" "5 ranks on 3 pretend nodes (2,2,1)" 5 -n 5 --ppn 2 --rails 1
bench_local "bench --layout 2,1" "3 ranks on 2 pretend nodes (2,1)" 3 --layout 2,1
# Spans: measured (one host clock); the bcast summary compares them.
timeout 120 "$RC" bench bcast --local --algo binomial -m 64:64 -i 5 -n 3 --ppn 1 --json "$tmp/b.json" >"$out" 2>"$err" &&
  grep -q "median span in us (first rank in to last rank out)" "$out" &&
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[0]; assert r["span_p50_us"] >= r["p50_us"] > 0, r' "$tmp/b.json" &&
  ok || bad "bench bcast: span in the records and the summary: $(tail -c 300 "$out") $(tail -c 300 "$err")"

# The plot: every algorithm its own colour and marker (direct and smp_bruck
# used to share a colour), and a PNG drawn from records.
python3 - "$HERE/../scripts" <<'PY' && ok || bad "plot styles are not distinct"
import sys
sys.path.insert(0, sys.argv[1])
import plot_bench
names = ["direct", "recursive_doubling", "ring", "bruck", "stdex", "gather_bcast", "smp_gather_bcast", "smp_direct",
         "smp_bruck", "smp_multileader", "concurrent_exchange", "concurrent_exchange_split", "pairwise_exchange",
         "extra1", "extra2", "auto", "mpi:tuned", "mpi:han"]
s = plot_bench.styles_for(names)
pairs = [(v["color"], v["marker"]) for v in s.values()]
assert len(set(pairs)) == len(names), pairs
colours = [v["color"] for v in s.values()]
assert len(set(colours)) == len(names), colours            # up to 20 lines: no colour twice
assert len(set(v["marker"] for k, v in s.items() if k != "auto" and names.index(k) < 12)) == 12
PY
if python3 -c "import matplotlib" 2>/dev/null; then
  "$RC" bench allgather --local --algo all -m 8:16 -i 2 -x 1 -n 2 --plot "$tmp/p.png" >"$out" 2>"$err" &&
    [ "$(head -c 4 "$tmp/p.png" | od -An -c | tr -d ' ')" = "211PNG" ] && ok || bad "bench --plot: $(tail -c 300 "$err")"
else
  bad "bench --plot: no matplotlib for python3 (scripts/install-deps.sh installs it)"
fi

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
