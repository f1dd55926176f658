#!/usr/bin/env bash
# The nonblocking benchmark (railcoll bench --nonblocking / --persistent, and
# railcoll-mpi-bench --nonblocking through the driver's --mpi rows: Open MPI's
# libnbc as mpi:tuned and mpi:han, and the preloaded librailcoll_mpi.so as
# mpi:railcoll), on local processes in 2 pretend nodes, small sizes, every call
# of every kind validated (-c): every run exits 0, every row is there at every
# size, and every record holds the overlap figures, consistent with each other.
#   usage: test_nonblocking_bench.sh RAILCOLL_BINARY
set -u
RC=${1:?usage: test_nonblocking_bench.sh RAILCOLL_BINARY}
BIN=$(dirname "$RC")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; tail -20 "$tmp/out" | sed 's/^/     /'; }

# records_hold JSON FORM SIZES LABELS: every label has a validated record of
# FORM at every size, with every overlap figure, and they agree: the overlap
# run's overall time is at least its compute, compute is about as long as the
# nonblocking latency it was set to (OSU), overlap % in 0..100.
records_hold() {
  python3 - "$@" <<'EOF'
import json, sys
path, form, sizes, labels = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4].split(",")
recs = json.load(open(path))
fields = ["blocking_avg_us", "blocking_p50_us", "blocking_p99_us", "overall_avg_us", "overall_p50_us",
          "overall_p99_us", "compute_avg_us", "post_avg_us", "wait_avg_us", "overlap_pct", "overlap_p50_pct"]
problems = []
for label in labels:
    for size in sizes:
        mine = [r for r in recs if r["algorithm"] == label and r["bytes"] == size]
        if len(mine) != 1:
            problems.append(f"{label} at {size} B: {len(mine)} records")
            continue
        r = mine[0]
        if r.get("form") != form: problems.append(f"{label} at {size} B: form {r.get('form')}")
        if r.get("validated") is not True: problems.append(f"{label} at {size} B: not validated")
        missing = [f for f in fields if f not in r or r[f] < 0]
        if missing:
            problems.append(f"{label} at {size} B: no {', '.join(missing)}")
            continue
        if not (0 <= r["overlap_pct"] <= 100 and 0 <= r["overlap_p50_pct"] <= 100):
            problems.append(f"{label} at {size} B: overlap {r['overlap_pct']} / {r['overlap_p50_pct']} %")
        if r["overall_avg_us"] + 0.01 < r["compute_avg_us"]:
            problems.append(f"{label} at {size} B: overall {r['overall_avg_us']} < compute {r['compute_avg_us']}")
        if r["compute_avg_us"] < 0.5 * r["avg_us"]:  # it computes for its own mean post + wait
            problems.append(f"{label} at {size} B: compute {r['compute_avg_us']} us for a latency of {r['avg_us']} us")
for p in problems: print(p)
sys.exit(1 if problems else 0)
EOF
}

run_bench() {  # run_bench NAME ARGS...: railcoll bench, output in $tmp/out
  local name=$1
  shift
  timeout 600 "$RC" bench "$@" --local -n 4 --ppn 2 --rails 2 -i 4 -x 1 -c --json "$tmp/$name.json" >"$tmp/out" 2>&1
}

# The issue's three with Open MPI and the MPI layer beside railcoll's own.
for coll in allgather allreduce bcast; do
  run_bench "$coll" "$coll" --nonblocking --mpi -m 4K:16K
  st=$?
  if [ $st -eq 0 ] && grep -q "^# nonblocking $coll, 4 ranks" "$tmp/out" &&
     records_hold "$tmp/$coll.json" nonblocking 4096,8192,16384 auto,mpi:tuned,mpi:han,mpi:railcoll >>"$tmp/out"; then
    ok "bench $coll --nonblocking --mpi: railcoll, Open MPI (libnbc) and the MPI layer, every call validated, overlap figures in every record"
  else
    bad "bench $coll --nonblocking --mpi (exit $st)"
  fi
done

# Every other collective the C API has, railcoll's and through the MPI layer
# (railcoll-mpi-bench's nonblocking code for the collective, validated), one
# size. Open MPI's own rows (mpi:tuned, mpi:han: the same program under
# libnbc, which serves both) are the three above's and barrier's.
for coll in gather reduce_scatter_block reduce_scatter reduce alltoall alltoallv scatter scatterv gatherv; do
  labels=auto,mpi:railcoll mpi=(--peer mpi-layer)
  [ "$coll" = reduce_scatter ] && labels=auto mpi=()  # railcoll-mpi-bench has no MPI_Reduce_scatter
  run_bench "$coll" "$coll" --nonblocking "${mpi[@]}" -m 1K:1K
  st=$?
  if [ $st -eq 0 ] && records_hold "$tmp/$coll.json" nonblocking 1024 "$labels" >>"$tmp/out"; then
    ok "bench $coll --nonblocking (${labels//,/, })"
  else
    bad "bench $coll --nonblocking (exit $st)"
  fi
done
run_bench barrier barrier --nonblocking --mpi
st=$?
if [ $st -eq 0 ] && records_hold "$tmp/barrier.json" nonblocking 0 auto,mpi:tuned,mpi:han,mpi:railcoll >>"$tmp/out"; then
  ok "bench barrier --nonblocking --mpi"
else
  bad "bench barrier --nonblocking --mpi (exit $st)"
fi

# Persistent: start + wait of one allgather_init request against the blocking call.
for coll in allgather allreduce; do
  run_bench "p$coll" "$coll" --persistent -m 4K:8K
  st=$?
  if [ $st -eq 0 ] && grep -q "^# persistent $coll" "$tmp/out" &&
     records_hold "$tmp/p$coll.json" persistent 4096,8192 auto >>"$tmp/out"; then
    ok "bench $coll --persistent: start + wait beside the blocking call, every call validated"
  else
    bad "bench $coll --persistent (exit $st)"
  fi
done

# What does not go together is refused before anything starts.
refused() {  # refused "message" ARGS...
  local want=$1
  shift
  timeout 60 "$RC" bench "$@" >"$tmp/out" 2>&1
  local st=$?
  if [ $st -eq 2 ] && grep -qF -- "$want" "$tmp/out"; then ok "refused: $*"; else bad "not refused as '$want': $* (exit $st)"; fi
}
refused "give --nonblocking or --persistent, not both" allgather --nonblocking --persistent --local
refused "--persistent does not go with --mpi" allgather --persistent --mpi --local
refused "--skew does not go with --nonblocking" allgather --nonblocking --skew 10 --local
refused "--nonblocking does not go with --fault" allgather --nonblocking --fault kill@1 --local

# railcoll-mpi-bench itself: --skew and --nonblocking refused, the usage says --nonblocking.
if command -v mpirun >/dev/null && [ -x "$BIN/railcoll-mpi-bench" ]; then
  timeout 60 "$BIN/railcoll-mpi-bench" --help >"$tmp/out" 2>&1
  grep -q -- "--nonblocking" "$tmp/out" && ok "railcoll-mpi-bench --help lists --nonblocking" || bad "railcoll-mpi-bench --help"
  timeout 60 mpirun --allow-run-as-root --oversubscribe -n 2 "$BIN/railcoll-mpi-bench" --nonblocking --skew 5 >"$tmp/out" 2>&1
  st=$?
  [ $st -eq 2 ] && grep -q "skew does not go with --nonblocking" "$tmp/out" && ok "railcoll-mpi-bench --nonblocking --skew refused" ||
    bad "railcoll-mpi-bench --nonblocking --skew (exit $st)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
