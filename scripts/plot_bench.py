#!/usr/bin/env python3
"""Plots railcoll benchmark records (railcoll bench/sim --plot; docs/results.md).

    plot_bench.py RECORDS.json OUT.png [--title T] [--xlabel X] [--metric p50_us|span_p50_us]

RECORDS.json holds records as `railcoll bench --json` writes them (a JSON
array, or one object per line). Latency against size on log-log axes, one line
per algorithm, every algorithm with its own colour and marker (auto black and
thick, the peers dashed); when the records carry nccl-tests' bus bandwidth
("busbw_GBps"), a second panel draws it against size, with the rails' rate
of one node as a line. Records with "samples_us" (barrier) are drawn as
histograms of the per-call latencies instead (seed 004 Figures 11-12). The
output format follows the file's extension (png, svg, pdf).
"""
import argparse
import json
import sys

# Ten strong colours, then ten light ones (matplotlib's tab20, reordered so
# that neighbours in the legend differ most), and twelve markers: algorithm i
# gets colour i mod 20 and marker i mod 12, so up to 60 lines never share both
# and the first 12 share neither.
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
           "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h", "p"]


def styles_for(names):
    """name -> matplotlib line style: distinct colour and marker for each."""
    styles, i = {}, 0
    for name in names:
        if name == "auto":
            styles[name] = dict(color="black", marker="o", lw=2.6, ls="-")
            continue
        style = dict(color=COLOURS[i % len(COLOURS)], marker=MARKERS[i % len(MARKERS)], lw=1.3, ls="-")
        if name.startswith("mpi:") or name.startswith("oneccl"):
            style.update(lw=2.2, ls="--")
        styles[name] = style
        i += 1
    return styles


def read_records(path):
    text = open(path).read()
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except ValueError:
        recs = []
        for line in text.splitlines():
            line = line.strip().rstrip(",")
            if line.startswith("{"):
                recs.append(json.loads(line))
        return recs


def label_of(r):
    label = r["algorithm"]
    if r.get("background"):  # runs under background traffic are lines of their own
        label += " + " + r["background"] + " traffic"
    return label


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records")
    ap.add_argument("out")
    ap.add_argument("--title", default="")
    ap.add_argument("--xlabel", default="bytes per rank")
    ap.add_argument("--metric", default="p50_us", choices=["p50_us", "span_p50_us"],
                    help="the time drawn: median of the slowest rank, or median span (first rank in to last out)")
    a = ap.parse_args(argv)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = [r for r in read_records(a.records) if "algorithm" in r]
    names = []
    for r in recs:
        if label_of(r) not in names:
            names.append(label_of(r))
    styles = styles_for(names)
    sampled = [r for r in recs if r.get("samples_us")]
    with_busbw = not sampled and any(r.get("busbw_GBps", -1) > 0 for r in recs)
    if with_busbw:
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(16, 6.5))
    else:
        fig, ax = plt.subplots(figsize=(10, 6.5))
    if sampled:  # latency distributions: one histogram per algorithm, log-spaced bins
        lo = max(0.1, min(min(r["samples_us"]) for r in sampled))
        hi = max(max(r["samples_us"]) for r in sampled)
        bins = [lo * (hi / lo) ** (i / 60) for i in range(61)] if hi > lo else 20
        for r in sampled:
            s = styles[label_of(r)]
            label = "%s (p50 %.0f, p99 %.0f us)" % (label_of(r), r["p50_us"], r.get("p99_us", -1))
            ax.hist(r["samples_us"], bins=bins, histtype="step", lw=1.6, color=s["color"], ls=s["ls"], label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("latency of one call, slowest rank (us)")
        ax.set_ylabel("calls")
    else:
        for name in names:
            pts = sorted((r["bytes"], r.get(a.metric, r.get("p50_us", r.get("avg_us"))))
                         for r in recs if label_of(r) == name and r["bytes"] > 0)
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], ms=4, label=name, **styles[name])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(a.xlabel)
        ax.set_ylabel("median span, first rank in to last out (us)" if a.metric == "span_p50_us"
                      else "median latency of the slowest rank (us)")
    ax.set_title(a.title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    if with_busbw:
        for name in names:
            pts = sorted((r["bytes"], r["busbw_GBps"]) for r in recs
                         if label_of(r) == name and r.get("busbw_GBps", -1) > 0)
            if pts:
                bx.plot([p[0] for p in pts], [p[1] for p in pts], ms=4, label=name, **styles[name])
        node = [r["rail_bits_per_s"] * r["rails"] / 8e9 for r in recs if r.get("rail_bits_per_s")]
        if node:
            bx.axhline(node[0], ls=":", color="grey", label="one node's rails (%.3g GB/s)" % node[0])
        bx.set_xscale("log", base=2)
        bx.set_yscale("log")
        bx.set_xlabel(a.xlabel)
        bx.set_ylabel("busbw (GB/s, nccl-tests)")
        bx.set_title("bus bandwidth")
        bx.grid(True, which="both", alpha=0.3)
        bx.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
