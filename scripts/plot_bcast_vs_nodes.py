#!/usr/bin/env python3
"""Broadcast latency and bandwidth against the number of nodes (make bcast-vs-nodes).

    plot_bcast_vs_nodes.py OUT.png NODES=RECORDS.json ...

Each RECORDS.json is `railcoll bench bcast --json` at one node count. The time
is the median span (first rank in to last rank out) where the records have it,
else the median of the slowest rank; railcoll's auto solid, Open MPI HAN dashed.
"""
import sys

from plot_bench import read_records, styles_for


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out, runs = argv[0], [a.split("=", 1) for a in argv[1:]]
    fig, (lat, bw) = plt.subplots(1, 2, figsize=(13, 5))
    labels = ["%s, %s nodes" % (label, nodes) for nodes, _ in runs for label in ("auto", "mpi:han")]
    styles = styles_for(labels)
    metric = "median latency of the slowest rank"
    for nodes, path in runs:
        recs = read_records(path)
        for label in ("auto", "mpi:han"):
            mine = [r for r in recs if r["algorithm"] == label and r["bytes"] > 0]
            if not mine:
                continue
            span = all("span_p50_us" in r for r in mine)
            if span:
                metric = "median span, first rank in to last out"
            pts = sorted((r["bytes"], r["span_p50_us"] if span else r["p50_us"]) for r in mine)
            name = "%s, %s nodes" % (label, nodes)
            style = dict(styles[name], ls="--" if label.startswith("mpi:") else "-")
            xs = [p[0] for p in pts]
            lat.plot(xs, [p[1] for p in pts], ms=3, label=name, **style)
            bw.plot(xs, [p[0] / p[1] for p in pts], ms=3, label=name, **style)
    for ax, ylabel in ((lat, metric + " (us)"), (bw, "bandwidth (MB/s = bytes / us)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message bytes")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("bcast vs nodes: emulated cluster, 2 ranks per node, 2 rails x 1 Gbit/s")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote " + out)


if __name__ == "__main__":
    main(sys.argv[1:])
