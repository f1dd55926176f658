#!/usr/bin/env python3
"""railcoll trace: the ranks' trace-event files merged, summed up and drawn.

  plot_trace.py DIR [--png FILE] [--call N]
  plot_trace.py --compare MEASURED SIMULATED [--png FILE] [--call N]

DIR holds trace-<comm>-rank<R>.json (RAILCOLL_TRACE=DIR; the runtime's
src/runtime/observe/trace_sink.cpp writes them). Writes DIR/trace.json (every
rank's events in one Chrome/Perfetto trace-event file), prints a summary (time
per rail, per step kind, per rank; the slowest call and its straggler) and
draws DIR/trace.png: the ranks' programs by time in the slowest call (or
--call N) with its critical path, and the rails' utilisation over the run.
"""
import argparse
import glob
import json
import os
import re
import sys
from collections import defaultdict

RAIL_TRACK = 10
KIND_COLOURS = {"put": "tab:blue", "copy": "tab:green", "reduce": "tab:purple", "wait": "lightgrey",
                "signal": "tab:orange", "flush": "tab:brown"}


def load(dirname):
    """Every rank's events of the communicator with the most events: {rank: [event]}, meta events."""
    files = sorted(glob.glob(os.path.join(dirname, "trace-*-rank*.json")))
    if not files:
        sys.exit(f"railcoll trace: no trace-*-rank*.json in {dirname}")
    by_comm = defaultdict(dict)
    for f in files:
        m = re.search(r"trace-([0-9a-z]+)-rank(\d+)\.json$", f)  # <comm id> or "sim"
        try:
            with open(f) as fh:
                doc = json.load(fh)
        except json.JSONDecodeError as e:
            sys.exit(f"railcoll trace: {f}: not JSON ({e}); was the run cut short?")
        by_comm[m.group(1)][int(m.group(2))] = doc
    comm = max(by_comm, key=lambda c: sum(len(d["traceEvents"]) for d in by_comm[c].values()))
    return comm, by_comm[comm]


def spans(docs):
    out = defaultdict(list)
    for rank, doc in docs.items():
        for e in doc["traceEvents"]:
            if e.get("ph") == "X":
                out[rank].append(e)
    return out


def merge(dirname, comm, docs):
    events = []
    for rank in sorted(docs):
        events.extend(docs[rank]["traceEvents"])
    path = os.path.join(dirname, "trace.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns",
                   "otherData": {"railcoll_trace": 1, "comm": comm, "ranks": len(docs)}}, f)
    return path


def union_length(intervals):
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def calls_of(ev):
    """{call: {rank: (start, end, name)}} from the call spans."""
    calls = defaultdict(dict)
    for rank, es in ev.items():
        for e in es:
            if e["tid"] == 0:
                calls[e["args"]["call"]][rank] = (e["ts"], e["ts"] + e["dur"], e["name"])
    return calls


def critical_path(ev, call, calls):
    """Back from the rank that ended the call last: its last wait, the rank it waited
    for, that rank's op before, and so on: [(rank, event)]."""
    spans_of = {r: sorted([e for e in es if e["tid"] == 1 and e["args"].get("call") == call], key=lambda e: e["ts"])
                for r, es in ev.items()}
    rank = max(calls[call], key=lambda r: calls[call][r][1])
    t = calls[call][rank][1]
    path = []
    for _ in range(64):
        ops = [e for e in spans_of.get(rank, []) if e["ts"] < t]
        if not ops:
            break
        waits = [e for e in ops if e["name"] == "wait" and e["args"].get("peer", -1) >= 0 and e["dur"] > 0]
        if not waits:
            path.extend((rank, e) for e in ops)
            break
        w = waits[-1]
        path.extend((rank, e) for e in ops if e["ts"] >= w["ts"])
        rank, t = w["args"]["peer"], w["ts"] + w["dur"]
    return path


def summary(ev, calls, rails, label):
    print(f"{label}: {len(ev)} ranks, {len(calls)} calls")
    t0 = min(e["ts"] for es in ev.values() for e in es)
    t1 = max(e["ts"] + e["dur"] for es in ev.values() for e in es)
    print(f"  span {t1 - t0:.1f} us")
    print("  per rail (frames arriving; busy = union of arrivals per rank, summed over ranks):")
    for r in range(rails):
        busy = sum(union_length([(e["ts"], e["ts"] + e["dur"]) for e in es if e["tid"] == RAIL_TRACK + r])
                   for es in ev.values())
        nbytes = sum(e["args"].get("bytes", 0) for es in ev.values() for e in es if e["tid"] == RAIL_TRACK + r)
        print(f"    rail {r}: {nbytes} B, busy {busy:.1f} rank-us")
    local = sum(e["args"].get("bytes", 0) for es in ev.values() for e in es if e["tid"] == 2)
    print(f"    from this node (local sockets): {local} B")
    kinds = defaultdict(float)
    for es in ev.values():
        for e in es:
            if e["tid"] == 1:
                kinds[e["name"]] += e["dur"]
    print("  per step kind (us, summed over ranks): " +
          ", ".join(f"{k} {v:.1f}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])))
    per_rank = {r: sum(e["dur"] for e in es if e["tid"] == 0) for r, es in ev.items()}
    print("  per rank (us in calls): " + ", ".join(f"{r}: {per_rank[r]:.1f}" for r in sorted(per_rank)))
    slow = max(calls, key=lambda c: max(v[1] for v in calls[c].values()) - min(v[0] for v in calls[c].values()))
    c = calls[slow]
    first = min(v[0] for v in c.values())
    straggler = max(c, key=lambda r: c[r][0])
    name = next(iter(c.values()))[2]
    print(f"  slowest call: {slow} ({name}), {max(v[1] for v in c.values()) - first:.1f} us; "
          f"straggler: rank {straggler}, entered {c[straggler][0] - first:.1f} us after the first")
    return slow


def draw_call(ax, ev, calls, call, title):
    c = calls[call]
    t0 = min(v[0] for v in c.values())
    ranks = sorted(ev)
    for r in ranks:
        for e in ev[r]:
            if e["args"].get("call") != call:
                continue
            x = e["ts"] - t0
            if e["tid"] == 1:
                ax.broken_barh([(x, max(e["dur"], 0.05))], (r - 0.35, 0.7),
                               facecolors=KIND_COLOURS.get(e["name"], "black"))
            elif e["tid"] >= RAIL_TRACK:
                ax.broken_barh([(x, max(e["dur"], 0.05))], (r + 0.37, 0.1), facecolors=f"C{e['tid'] - RAIL_TRACK + 3}")
    for rank, e in critical_path(ev, call, calls):
        ax.broken_barh([(e["ts"] - t0, max(e["dur"], 0.05))], (rank - 0.45, 0.1), facecolors="red")
    ax.set_yticks(ranks)
    ax.set_yticklabels([f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("us from the call's first entry")
    ax.set_title(title)
    from matplotlib.patches import Patch
    handles = [Patch(color=v, label=k) for k, v in KIND_COLOURS.items()] + [Patch(color="red", label="critical path")]
    ax.legend(handles=handles, fontsize=7, loc="lower right", ncol=2)


def draw_rails(ax, ev, rails):
    t0 = min(e["ts"] for es in ev.values() for e in es)
    t1 = max(e["ts"] + e["dur"] for es in ev.values() for e in es)
    bins = 200
    width = max((t1 - t0) / bins, 1e-3)
    for r in range(rails):
        busy = [0.0] * bins
        for es in ev.values():
            for e in es:
                if e["tid"] != RAIL_TRACK + r:
                    continue
                a, b = e["ts"] - t0, e["ts"] - t0 + e["dur"]
                for i in range(int(a // width), min(bins, int(b // width) + 1)):
                    lo, hi = i * width, (i + 1) * width
                    busy[i] += max(0.0, min(b, hi) - max(a, lo)) / width
        ax.plot([(i + 0.5) * width for i in range(bins)], [x / max(1, len(ev)) for x in busy], label=f"rail {r}")
    ax.set_xlabel("us from the trace's start")
    ax.set_ylabel("arrivals in flight per rank")
    ax.set_title("rails' utilisation")
    ax.legend(fontsize=8)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--png")
    ap.add_argument("--call", type=int)
    a = ap.parse_args()
    if a.compare and len(a.dirs) != 2:
        sys.exit("usage: railcoll trace --compare MEASURED SIMULATED")
    loaded = []
    for d in a.dirs[:2] if a.compare else a.dirs[:1]:
        comm, docs = load(d)
        ev = spans(docs)
        rails = max(doc.get("otherData", {}).get("rails", 1) for doc in docs.values())
        calls = calls_of(ev)
        if not calls:
            sys.exit(f"railcoll trace: {d}: no call in the trace")
        print(f"merged: {merge(d, comm, docs)}")
        slow = summary(ev, calls, rails, d)
        loaded.append((d, ev, calls, rails, a.call if a.call in calls else slow))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if a.compare and a.call is None:
        # The first trace's call like the second's (a measured run holds many,
        # a simulated one the one modeled): of those, the median one.
        (d, ev, calls, rails, call), other = loaded[0], loaded[1]
        name = next(iter(other[2][other[4]].values()))[2]
        like = sorted((max(e for _, e, _ in calls[c].values()) - min(s for s, _, _ in calls[c].values()), c)
                      for c in calls if next(iter(calls[c].values()))[2] == name)
        if like:
            loaded[0] = (d, ev, calls, rails, like[len(like) // 2][1])
    if a.compare:
        fig, axes = plt.subplots(1, 2, figsize=(16, 6))
        for ax, (d, ev, calls, rails, call) in zip(axes, loaded):
            name = next(iter(calls[call].values()))[2]
            draw_call(ax, ev, calls, call, f"{os.path.basename(os.path.normpath(d))}: call {call}: {name}")
    else:
        d, ev, calls, rails, call = loaded[0]
        fig, axes = plt.subplots(2, 1, figsize=(12, 4 + 0.4 * len(ev)),
                                 gridspec_kw={"height_ratios": [max(2, len(ev) // 2), 2]})
        name = next(iter(calls[call].values()))[2]
        draw_call(axes[0], ev, calls, call, f"call {call}: {name} (red: critical path)")
        draw_rails(axes[1], ev, rails)
    fig.tight_layout()
    png = a.png or os.path.join(a.dirs[0], "trace.png")
    fig.savefig(png, dpi=110)
    print(f"picture: {png}")


if __name__ == "__main__":
    main()
