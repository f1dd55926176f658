#!/usr/bin/env bash
# railcoll sim: bad input (issue 4, "Bad input"). Every case must exit with
# status 2, print nothing on stdout and one line on stderr naming the field or
# the limit. Cases: "text the message must contain<TAB>arguments".
set -u
RC=${1:?path to railcoll}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
good="$dir/good.preset"
"$RC" sim presets >/dev/null || { echo "FAIL: railcoll sim presets"; exit 1; }
cp "$(dirname "$0")/../presets/qsnet2-4x4-dual.preset" "$good"

# A copy of the good preset with one line replaced (or dropped when the
# replacement is empty): bad_preset NAME KEY 'NEW LINE'.
bad_preset() {
  grep -v "^$2 " "$good" >"$dir/$1.preset"
  [ -n "$3" ] && echo "$3    # source: test" >>"$dir/$1.preset"
  echo "$dir/$1.preset"
}
negative=$(bad_preset negative link_MBps "link_MBps = -5")
no_ports=$(bad_preset no_ports switch_ports "switch_ports = 0")
missing=$(bad_preset missing pci_MBps "")
few_ports=$(bad_preset few_ports switch_ports "switch_ports = 2")
duplex=$(bad_preset duplex pci_duplex "pci_duplex = sometimes")
tree=$(bad_preset tree topology "topology = fattree")
recv_cpu=$(bad_preset recv_cpu recv_cpu "recv_cpu = maybe")
noise=$(bad_preset noise noise_1 "noise_1 = 10 20")
echo "fattree_arity = 5    # source: test" >>"$tree"

pass=0 fail=0
while IFS=$'\t' read -r want args; do
  [ -z "$want" ] && continue
  # shellcheck disable=SC2086  # the arguments are meant to split
  "$RC" $args >"$dir/out" 2>"$dir/err"
  st=$?
  if [ $st -ne 2 ] || [ -s "$dir/out" ] || [ "$(wc -l <"$dir/err")" -ne 1 ] || ! grep -qF -- "$want" "$dir/err"; then
    fail=$((fail + 1))
    echo "FAIL: railcoll $args: status $st, stdout $(wc -c <"$dir/out") bytes, stderr: $(cat "$dir/err") (wanted: $want)"
  else
    pass=$((pass + 1))
  fi
done <<CASES
unknown preset 'nope'	sim allgather --preset nope
parameter 'link_MBps' = -5 is out of range	sim allgather --preset $negative
parameter 'switch_ports' = 0 is out of range	sim allgather --preset $no_ports
missing parameter 'pci_MBps'	sim allgather --preset $missing
'nodes' = 4 does not fit one crossbar of 'switch_ports' = 2 ports	sim allgather --preset $few_ports
parameter 'pci_duplex' = 'sometimes' is not one of: full, half	sim allgather --preset $duplex
'fattree_arity' = 5 needs switches of at least 10 ports	sim allgather --preset $tree
parameter 'recv_cpu' = 'maybe' is not one of: event, loggp	sim allgather --preset $recv_cpu
parameter 'noise_1' = '10 20' needs 0 <= duration < period	sim allgather --preset $noise
8 nodes do not fit preset 'qsnet2-4x4-dual' (4 nodes)	sim allgather --preset qsnet2-4x4-dual --ranks 32 --ppn 4
8 ranks on a node do not fit preset 'qsnet2-4x4-dual' (4 per node)	sim allgather --preset qsnet2-4x4-dual --ranks 16 --ppn 8
2 rails do not fit preset 'elan4-128' (1)	sim allgather --preset elan4-128 --rails 2
unknown allgather algorithm 'bogus'	sim allgather --preset elan4-128 --algo bogus
unknown background traffic 'storm' (none, complement, uniform, hotspot)	sim allgather --preset elan4-128 --algo bruck --background storm
background messages need at least 1 byte	sim allgather --preset elan4-128 --algo bruck --background uniform --background-bytes 0
--seed must be between 0 and	sim allgather --preset elan4-128 --algo bruck --background uniform --seed -1
needs the hardware multicast, which preset 'ib-128' does not have (hw_multicast = no)	sim bcast --preset ib-128 --algo hw_multicast
needs the hardware barrier, which preset 'ib-128' does not have (hw_barrier = no)	sim barrier --preset ib-128 --algo hw_combining
--root must be between 0 and 15, got 16	sim bcast --preset qsnet2-4x4-dual --root 16
unknown gather algorithm 'bogus'	sim gather --preset elan4-128 --algo bogus
cannot read '$dir/none.json'	calibrate --compare $dir/none.json $dir/none.json
CASES

# A machine whose processes' cores are drawn per call (the testbed's
# busiest_core_share): a quiet call is sampled, and says so; the slowest
# sample is no faster than the median.
if "$RC" sim allgather --preset testbed --algo smp_direct -m 8:8 --samples 9 --json "$dir/drawn.json" >"$dir/out" 2>&1 &&
  grep -q "drawn anew for each call: 9 samples (seeds 1..9)" "$dir/out" &&
  grep -q '"iterations":9' "$dir/drawn.json" &&
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; sys.exit(0 if r['p99_us']>=r['p50_us']>0 else 1)" \
    "$dir/drawn.json"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
  echo "FAIL: sim on the testbed: placements not sampled: $(head -3 "$dir/out")"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
