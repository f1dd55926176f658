#!/usr/bin/env bash
# Reproduction checks (issues 4 and 5): `railcoll sim reproduce all` must keep
# every seed result the model meets inside its band, so a model change that
# loses one fails here. Seeds 000-002 (ratios, fractions, shares of sizes) are
# met within 15% of the paper's value, seeds 003-004 (latencies, bandwidths,
# slowdowns) within 20% (issue 4's targets); an "at least" quantity is met when
# the model is at or above it.
# Only the results the model meets are asserted; the others are listed (and
# explained in docs/simulator.md) and must still be reported, so a renamed or
# dropped quantity fails too.
set -u
RC=${1:?path to railcoll}
json=$(mktemp)
trap 'rm -f "$json"' EXIT
"$RC" sim reproduce all --json "$json" >/dev/null || { echo "FAIL: railcoll sim reproduce all"; exit 1; }
python3 - "$json" <<'PY'
import json, sys
records = {r["quantity"]: r for r in json.load(open(sys.argv[1]))}
met = [
    "native / SMP Bruck at 4 KiB",
    "Standard Exchange / Bruck at 4 KiB (a penalty: above 1)",
    # seed 003, asciq-1024
    "broadcast bandwidth per node, 1 MiB, 1024 nodes, MB/s",
    # seed 004, elan3-64
    "hardware barrier (elan_hgsync), 4 nodes, us",
    "hardware barrier (elan_hgsync), 32 nodes, us",
    "hardware barrier (elan_hgsync), 64 nodes, us",
    "software barrier (elan_gsync): growth per 4x nodes, 4-64 nodes, us",
    "broadcast bandwidth of 1 MiB (elan_hbcast), 64 nodes, Elan memory, MB/s",
    "hardware barrier under uniform traffic, 64 nodes: average, us",
    "hardware barrier under uniform traffic: share of calls below 20 us",
]
missed = [  # the headline ratios among them: 1.49, 1.96, 89% and 65%
    "native / Direct at 32 KiB",
    "sizes whose best algorithm is the paper's (SMP G+B <= 256 B, SMP Bruck 512 B-8 KiB, Direct 16 KiB-1 MiB)",
    "sizes up to 2 KiB where native beats Direct, Std. Exchange and Bruck",
    "sizes above 2 KiB where Direct beats Std. Exchange, Bruck and native",
    "elan4-128: improvement over MPI at 128 processes, 32 KiB",
    "elan4-128: smallest improvement over pairwise, 4-128 processes, 512 B-32 KiB",
    "elan4-128: largest improvement over pairwise, 4-128 processes, 512 B-32 KiB",
    "elan4-128: smallest improvement over MPI, 4-128 processes, 512 B-32 KiB",
    "elan4-128: largest improvement over MPI, 4-128 processes, 512 B-32 KiB",
    "ib-128: improvement over MPI at 128 processes, 32 KiB",
    "ib-128: smallest improvement over MPI, 4-128 processes, 512 B-32 KiB",
    "ib-128: largest improvement over MPI, 4-128 processes, 512 B-32 KiB",
    # seed 003 (docs/simulator.md says why)
    "hardware barrier, 1024 nodes, us",
    "software barrier (tree of point-to-point messages), 1024 nodes, us",
    "allreduce of 8 B (float sum, railcoll's choice), 1024 nodes, us",
    # seed 004
    "software barrier (elan_gsync), 64 nodes, us",
    "hardware broadcast (elan_hbcast) of 256 B, 64 nodes, Elan memory, us",
    "broadcast with software sync (elan_bcast) of 256 B, 64 nodes, us",
    "hardware barrier slowdown under uniform traffic, 64 nodes",
    "software barrier under uniform traffic, 64 nodes: average, us",
    "software barrier slowdown under uniform traffic, 64 nodes",
]
fails = 0
for q in met + missed:
    if q not in records:
        print("FAIL: no record for '%s'" % q); fails += 1
unknown = set(records) - set(met) - set(missed)
for q in sorted(unknown):
    print("FAIL: '%s' is neither asserted nor listed as missed" % q); fails += 1
for q in met:
    r = records.get(q)
    if not r: continue
    if r["kind"] == "band":
        inside = min(r["band_lo"], r["band_hi"]) <= r["paper_value"] <= max(r["band_lo"], r["band_hi"])
    elif r["unit"] == "at least":
        inside = r["sim_value"] >= r["paper_value"]
    else:
        inside = abs(r["rel_error"]) <= 0.20
    if inside != r["met"]:
        print("FAIL: %s: the record says met = %s" % (q, r["met"])); fails += 1
    if not inside:
        print("FAIL: %s: paper %.3g, model %.3g, out of its band" % (q, r["paper_value"], r["sim_value"])); fails += 1
for q in missed:
    r = records.get(q)
    if r: print("missed, not asserted: %s: paper %.3g, model %.3g" % (q, r["paper_value"], r["sim_value"]))
print("%d asserted in their bands, %d listed as missed; %d failed" % (len(met), len(missed), fails))
sys.exit(1 if fails else 0)
PY
