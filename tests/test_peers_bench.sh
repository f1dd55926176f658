#!/usr/bin/env bash
# The peers of railcoll bench, locally: railcoll-mpi-bench over the bench
# library (every record validated, a wrong usage refused), like-for-like
# rounds (railcoll and every peer time as many calls, interleaved, each record
# saying how many), Intel oneCCL as a peer (railcoll-oneccl-bench; its rows
# are left out, said, when it is not built), and the tables' bus bandwidth and
# bounds. Exit 77 (SKIPPED) without Open MPI's mpirun or railcoll-mpi-bench.
#   usage: test_peers_bench.sh PATH/TO/railcoll
set -u
RC=$(cd "$(dirname "${1:?usage: test_peers_bench.sh PATH/TO/railcoll}")" && pwd)/$(basename "$1")
BIN=$(dirname "$RC")
if ! command -v mpirun >/dev/null || [ ! -x "$BIN/railcoll-mpi-bench" ]; then
  echo "SKIPPED: needs Open MPI's mpirun and railcoll-mpi-bench"
  exit 77
fi
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# Fields of every record of a JSON file, one line per record (python: the records are JSON).
fields() {
  python3 -c '
import json, sys
recs = [r for r in json.load(open(sys.argv[1])) if "algorithm" in r]
for r in recs:
    print(" ".join(str(r.get(k, "-")) for k in sys.argv[2:]))' "$@"
}

# ---- railcoll-mpi-bench itself
timeout 120 mpirun --allow-run-as-root --oversubscribe -n 4 --mca btl self,vader,tcp \
  "$BIN/railcoll-mpi-bench" --coll allreduce -m 8:1024 -i 5 -x 1 -c --label mpi:test >"$tmp/out" 2>"$tmp/err"
st=$?
n=$(grep -c '"algorithm":"mpi:test"' "$tmp/out")
v=$(grep -c '"validated":true' "$tmp/out")
[ $st -eq 0 ] && [ "$n" -eq 8 ] && [ "$v" -eq 8 ] && ok "railcoll-mpi-bench: 8 allreduce sizes (8 B - 1 KiB), each validated" ||
  bad "railcoll-mpi-bench allreduce (exit $st, $n records, $v validated): $(tail -c 300 "$tmp/err")"
timeout 60 mpirun --allow-run-as-root --oversubscribe -n 2 "$BIN/railcoll-mpi-bench" -m 0:8 >"$tmp/out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q -- "-m expects MIN:MAX" "$tmp/out" && ok "railcoll-mpi-bench -m 0:8 refused (exit 2)" ||
  bad "railcoll-mpi-bench -m 0:8 (exit $st): $(head -c 300 "$tmp/out")"

# ---- like for like: railcoll and the peers in 2 rounds
have_ccl=0
[ -x "$BIN/railcoll-oneccl-bench" ] && have_ccl=1
peers=mpi
[ $have_ccl = 1 ] && peers=mpi,oneccl
timeout 600 "$RC" bench allgather --local -n 4 --ppn 2 --algo auto -m 64:4K --factor 4 -i 6 -x 2 --rounds 2 -c \
  --peer "$peers" --json "$tmp/ag.json" >"$tmp/out" 2>"$tmp/err"
st=$?
if [ $st -eq 0 ]; then
  fields "$tmp/ag.json" algorithm bytes iterations rounds validated >"$tmp/f"
  labels=$(cut -d' ' -f1 "$tmp/f" | sort -u | tr '\n' ' ')
  want="auto mpi:han mpi:tuned "
  [ $have_ccl = 1 ] && want="auto mpi:han mpi:tuned oneccl oneccl:w1 oneccl:w2-mnic "
  [ "$labels" = "$want" ] && ok "bench --rounds 2 --peer $peers: rows $labels" || bad "rows '$labels', expected '$want'"
  # 64 B - 4 KiB, each 4 times the last: 4 sizes on every side; every row times
  # 3 + 3 calls of each, in 2 rounds, every one validated.
  sizes=$(cut -d' ' -f2 "$tmp/f" | sort -un | tr '\n' ' ')
  [ "$sizes" = "64 256 1024 4096 " ] && ok "--factor 4: the same 4 sizes on every side" || bad "sizes '$sizes'"
  if awk '$3 != 6 || $4 != 2 || $5 != "True" { bad = 1 } END { exit bad }' "$tmp/f" && [ "$(wc -l <"$tmp/f")" -ge 12 ]; then
    ok "every record: 6 calls from 2 rounds, validated, on both sides alike"
  else
    bad "iterations/rounds/validated: $(head -5 "$tmp/f" | tr '\n' ';')"
  fi
  grep -q "# round 2 of 2" "$tmp/out" && ok "the rounds are said" || bad "no '# round 2 of 2' in the output"
  grep -q "algbw(GB/s)  busbw(GB/s)" "$tmp/out" && grep -q "^# Bus bandwidth: allgather, busbw = algbw x (n-1)/n" "$tmp/out" &&
    ok "tables with algbw and busbw, and the bus bandwidth summary" || bad "no busbw columns or summary"
  grep -q "this machine: copy (memcpy)" "$tmp/out" && ok "the compute bound's rates are measured and said" ||
    bad "no work rates in the output"
  python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
assert all(r.get("busbw_GBps", -1) > 0 and "raw_own_us" not in r for r in rows), "busbw missing or raw times left"
assert all(r.get("compute_bound_us", -1) > 0 and r["binding"] in ("rail", "compute") for r in rows), "no bounds"
' "$tmp/ag.json" && ok "every record has its busbw, compute bound and binding bound, no raw times" ||
    bad "the JSON records"
else
  bad "bench --rounds 2 --peer $peers (exit $st): $(tail -c 600 "$tmp/err")"
fi

# ---- oneCCL
if [ $have_ccl = 1 ]; then
  timeout 300 "$RC" bench allreduce --local -n 4 --ppn 2 --algo auto -m 4:64K -i 4 -x 1 -c --peer oneccl \
    --oneccl-settings all --json "$tmp/ar.json" >"$tmp/out" 2>"$tmp/err"
  st=$?
  if [ $st -eq 0 ]; then
    fields "$tmp/ar.json" algorithm validated >"$tmp/f"
    n=$(grep -c "^oneccl:" "$tmp/f")
    [ "$n" -eq 60 ] && ! grep -q "False" "$tmp/f" && ok "oneCCL allreduce, 4 settings x 15 sizes, every call validated" ||
      bad "oneCCL allreduce: $n records of its settings; $(grep -c False "$tmp/f") not validated"
  else
    bad "bench allreduce --peer oneccl (exit $st): $(tail -c 600 "$tmp/err")"
  fi
  timeout 120 "$RC" bench gather --local -n 4 --ppn 2 --algo auto -m 8:8 -i 2 --peer oneccl >"$tmp/out" 2>&1
  st=$?
  [ $st -eq 0 ] && grep -q "oneCCL has no gather: no oneccl row" "$tmp/out" && ok "gather: oneCCL has none, said" ||
    bad "bench gather --peer oneccl (exit $st): $(tail -c 300 "$tmp/out")"
else
  echo "note: railcoll-oneccl-bench is not built (scripts/install-deps.sh installs oneCCL); its checks are left out"
fi
timeout 60 "$RC" bench allgather --local --oneccl-settings w1 >"$tmp/out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "oneccl-settings goes with --peer oneccl" "$tmp/out" && ok "--oneccl-settings without the peer refused" ||
  bad "--oneccl-settings alone (exit $st)"
timeout 60 "$RC" bench allgather --local --peer gloo >"$tmp/out" 2>&1
st=$?
[ $st -eq 2 ] && grep -q "peer takes" "$tmp/out" && ok "--peer gloo refused" || bad "--peer gloo (exit $st)"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
