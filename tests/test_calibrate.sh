#!/usr/bin/env bash
# railcoll calibrate: a quick calibration on a small emulated cluster gives a
# preset the simulator accepts, and --compare computes the error and the
# fastest-algorithm agreement of two hand-made record files. Needs root (the
# cluster); SKIPPED otherwise (exit 77). Takes ~5 s.
#   usage: test_calibrate.sh BUILD_BIN_DIR   (the directory with railcoll)
set -u
BIN=${1:?usage: test_calibrate.sh BUILD_BIN_DIR}
if [ "$(id -u)" != 0 ]; then echo "SKIPPED: the emulated cluster needs root (network namespaces)"; exit 77; fi
BIN=$(cd "$BIN" && pwd) || exit 1
RC="$BIN/railcoll"
. "$(dirname "$0")/cluster_lock.sh"
cluster_lock
pass=0 fail=0
tmp=$(mktemp -d)
# Whatever fails, the cluster goes down and the temp files go.
trap '"$RC" cluster down >/dev/null 2>&1; rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect STATUS NAME CMD...: CMD exits with STATUS (stdout in $tmp/out, stderr in $tmp/err).
expect() {
  local want=$1 name=$2
  shift 2
  timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
  local st=$?
  if [ "$st" -eq "$want" ]; then ok "$name"; else bad "$name: exit $st, expected $want: $(tail -c 600 "$tmp/err" | tr '\n' ' ')"; fi
  return $((st != want))
}
# has NAME PATTERN: the last command's stdout matches the extended regex.
has() {
  if grep -Eq -- "$2" "$tmp/out"; then ok "$1"; else bad "$1: no /$2/ in: $(tail -c 600 "$tmp/out" | tr '\n' ' ')"; fi
}

# ---- calibration on a small cluster
expect 0 "down before starting (idempotent)" "$RC" cluster down
if expect 0 "up --nodes 2 --ppn 2 --rails 2" "$RC" cluster up --nodes 2 --ppn 2 --rails 2 --rate 1gbit; then
  expect 0 "calibrate --quick -o $tmp/x.preset" "$RC" calibrate --quick -o "$tmp/x.preset"
  has "says it ran on the cluster" "on the emulated cluster"
  has "prints the preset path" "wrote $tmp/x.preset"
  for key in name nodes ppn rails topology wire_latency_us hop_latency_us send_overhead_us recv_overhead_us gap_us \
    link_MBps pci_MBps pci_duplex dma_engines copy_MBps membus_MBps membus_shared_by flag_latency_us intranode_put \
    socket_ns_per_byte cores cores_shared_by wakeup_us kernel_ns_per_byte spin_us spin_turn_us link_burst_bytes \
    overhead_shared recv_cpu socket_overhead_us busiest_core_share call_overhead_us; do
    grep -Eq "^$key = [^ ]+ +# source: " "$tmp/x.preset" || bad "preset has no '$key = ...  # source:' line"
  done
  grep -Eq '^nodes = 2 ' "$tmp/x.preset" && grep -Eq '^ppn = 2 ' "$tmp/x.preset" && grep -Eq '^rails = 2 ' "$tmp/x.preset" &&
    ok "shape 2 nodes x 2 ranks, 2 rails" || bad "shape: $(grep -E '^(nodes|ppn|rails) ' "$tmp/x.preset" | tr '\n' ' ')"
  # The cluster's shapers let 128 KiB bursts through (src/cluster/cluster.cpp, choose_shaping).
  grep -Eq "^link_burst_bytes = 131072 " "$tmp/x.preset" && ok "the shapers' bucket is in the preset" ||
    bad "link_burst_bytes: $(grep -E '^link_burst_bytes' "$tmp/x.preset")"
  expect 0 "the simulator accepts the preset" "$RC" sim allgather --preset "$tmp/x.preset" --algo direct -m 8:8
  expect 2 "--nodes-from-cluster with --local is refused" "$RC" calibrate --local --nodes-from-cluster -o "$tmp/y.preset"
  expect 0 "down" "$RC" cluster down
fi

# ---- --compare on hand-made records: errors 25%, 20%, 50%, 100% -> median 37.5%;
# fastest: direct at 8 B in both, direct vs bruck at 16 B -> 1 of 2 sizes. auto and
# Open MPI records are ignored.
rec() { echo "  {\"collective\":\"allgather\",\"algorithm\":\"$1\",\"bytes\":$2,\"ranks\":4,\"nodes\":2,\"rails\":2,\"avg_us\":$3,\"min_us\":$3,\"max_us\":$3,\"p50_us\":$3,\"iterations\":1,\"validated\":false}${4-}"; }
{ echo "["; rec direct 8 10 ,; rec bruck 8 20 ,; rec direct 16 30 ,; rec bruck 16 40 ,; rec auto 16 1 ,; rec mpi:tuned 8 1; echo "]"; } >"$tmp/sim.json"
{ echo "["; rec direct 8 8 ,; rec bruck 8 25 ,; rec direct 16 60 ,; rec bruck 16 20 ,; rec auto 16 99; echo "]"; } >"$tmp/bench.json"
expect 0 "--compare" "$RC" calibrate --compare "$tmp/sim.json" "$tmp/bench.json"
has "median error 37.5% over 4 pairs" "^median absolute relative error: 37.5% over 4 "
has "same fastest algorithm at 1 of 2 sizes" "^same fastest algorithm: 1 of 2 sizes \(50%\)"
expect 2 "--compare with one file is refused" "$RC" calibrate --compare "$tmp/sim.json"
# Two measured runs: a pair's measurement is their median (here the mean): direct
# at 8 B (8+12)/2 = 10 -> 0%; the others as above, 20%, 50%, 100% -> median 35%.
{ echo "["; rec direct 8 12 ,; rec bruck 8 25 ,; rec direct 16 60 ,; rec bruck 16 20; echo "]"; } >"$tmp/bench2.json"
expect 0 "--compare with two measured runs" "$RC" calibrate --compare "$tmp/sim.json" "$tmp/bench.json" "$tmp/bench2.json"
has "median of the runs per pair: 35%" "^median absolute relative error: 35% over 4 "

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
