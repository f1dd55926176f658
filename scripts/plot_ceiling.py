#!/usr/bin/env python3
"""Plots the ceiling curve of `railcoll cluster ceiling --json` (docs/cluster.md).

    plot_ceiling.py CEILING.json OUT.png

The share of the rail bound a plain TCP all-to-all reaches against the rate of
each rail (log axis): the median of the runs as the line, every run as a dot,
the target as a dashed line and the ceiling marked.
"""
import json
import sys


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    c = json.load(open(argv[0]))
    pts = sorted(c["points"], key=lambda p: p["rate_bps"])
    fig, ax = plt.subplots(figsize=(8, 5))
    x = [p["rate_bps"] / 1e6 for p in pts]
    ax.plot(x, [p["pct"] for p in pts], "o-", color="black", lw=2, label="median of %d runs" % c["repeats"])
    for p in pts:
        ax.plot([p["rate_bps"] / 1e6] * len(p["run_pct"]), p["run_pct"], ".", color="#1f77b4", alpha=0.6)
    ax.axhline(c["target_pct"], ls="--", color="#d62728", label="target %g%%" % c["target_pct"])
    if c["ceiling_bps"]:
        ax.axvline(c["ceiling_bps"] / 1e6, ls=":", color="#2ca02c",
                   label="ceiling %d Mbit/s" % (c["ceiling_bps"] / 1e6))
    elif c.get("knee_bps"):
        ax.axvline(c["knee_bps"] / 1e6, ls=":", color="#ff7f0e",
                   label="no rate reached the target; knee %d Mbit/s" % (c["knee_bps"] / 1e6))
    ax.set_xscale("log")
    ax.set_xlabel("rate of each rail (Mbit/s)")
    ax.set_ylabel("rail bound / time of the TCP all-to-all (%)")
    title = "What this machine can feed: %d nodes x %d ranks x %d rails" % (c["nodes"], c["ppn"], c["rails"])
    if c.get("load"):
        title += "\n(load average %s)" % c["load"]
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
