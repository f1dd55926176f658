"""The same torch program over gloo and over railcoll, side by side
(docs/torch.md, "Beside Gloo"):

    railcoll cluster torchrun -- -m railcoll.bench --colls all_reduce --json torch.json
    torchrun --nproc-per-node 4 -m railcoll.bench --sizes 8,1K,1M

One job holds both process groups over the same ranks: the default group is
railcoll's, gloo's is a group of its own with GLOO_SOCKET_IFNAME = every rail
(its best multi-NIC setting). For every collective and size the backends take
turns, round by round; a call's time is the slowest rank's (each rank times
the call from a barrier to its wait(), then the ranks take the maximum), and
the table gives the median (p50) and p99 of those per backend and their ratio.
Every result is checked against what it must hold on the first call of each
(collective, size, backend). Sizes are bytes per rank: the tensor each rank
gives (all_reduce, broadcast, all_gather_into_tensor's input, all_to_all_single's
whole input, reduce_scatter_tensor's output).
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import railcoll
from railcoll.examples.ddp import gloo_group

COLLS = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast", "all_to_all_single",
         "barrier"]


def parse_size(text):
    text = text.strip().upper()
    for suffix, mult in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * mult)
    return int(text)


def default_sizes():
    return [8] + [16 << (2 * i) for i in range(12)]  # 8 B, 16 B, 64 B, ... 1 MiB, 4 MiB, 16 MiB, 64 MiB


class Case:
    """One collective at one size: its tensors, the call, and the check."""

    def __init__(self, coll, nbytes, rank, size):
        self.coll, self.rank, self.size = coll, rank, size
        n = max(1, nbytes // 4)
        if coll == "all_to_all_single":
            n = max(size, n // size * size)
        self.n = n
        self.x = torch.full((n,), float(rank + 1))
        if coll == "all_gather_into_tensor":
            self.out = torch.empty(n * size)
        elif coll == "reduce_scatter_tensor":
            self.x = torch.full((n * size,), float(rank + 1))
            self.out = torch.empty(n)
        elif coll == "all_to_all_single":
            self.x = torch.arange(n, dtype=torch.float32).remainder_(1024) + 1024 * rank
            self.out = torch.empty(n)
        self.bytes = 0 if coll == "barrier" else n * 4

    def reset(self):
        if self.coll in ("all_reduce", "broadcast"):
            self.x.fill_(float(self.rank + 1))

    def run(self, group):
        c = self.coll
        if c == "all_reduce":
            return dist.all_reduce(self.x, group=group, async_op=True)
        if c == "broadcast":
            return dist.broadcast(self.x, src=0, group=group, async_op=True)
        if c == "all_gather_into_tensor":
            return dist.all_gather_into_tensor(self.out, self.x, group=group, async_op=True)
        if c == "reduce_scatter_tensor":
            return dist.reduce_scatter_tensor(self.out, self.x, group=group, async_op=True)
        if c == "all_to_all_single":
            return dist.all_to_all_single(self.out, self.x, group=group, async_op=True)
        return dist.barrier(group=group, async_op=True)

    def check(self):
        c, s = self.coll, self.size
        if c == "all_reduce":
            return torch.all(self.x == s * (s + 1) / 2).item()
        if c == "broadcast":
            return torch.all(self.x == 1.0).item()
        if c == "all_gather_into_tensor":
            want = torch.arange(1, s + 1, dtype=torch.float32).repeat_interleave(self.n)
            return torch.equal(self.out, want)
        if c == "reduce_scatter_tensor":
            return torch.all(self.out == s * (s + 1) / 2).item()
        if c == "all_to_all_single":
            block = self.n // s
            want = torch.cat([(torch.arange(self.rank * block, (self.rank + 1) * block, dtype=torch.float32)
                               .remainder_(1024) + 1024 * r) for r in range(s)])
            return torch.equal(self.out, want)
        return True


def time_calls(case, group, iters, stats_group):
    """Per call: the slowest rank's seconds from a barrier to its wait()."""
    mine = torch.empty(iters, dtype=torch.float64)
    for i in range(iters):
        case.reset()
        dist.barrier(group=group)
        t0 = time.perf_counter()
        case.run(group).wait()
        mine[i] = time.perf_counter() - t0
        if i == 0 and not case.check():
            raise SystemExit("rank %d: %s of %d bytes over %s: wrong result" %
                             (case.rank, case.coll, case.bytes, dist.get_backend(group)))
    dist.all_reduce(mine, op=dist.ReduceOp.MAX, group=stats_group)
    return mine.tolist()


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def iterations(nbytes, budget, most=200):
    # Fewer calls for large sizes: about `budget` bytes per backend and size.
    return max(5, min(most, budget // max(1, nbytes)))


def call_cost(rank, iters=200, rounds=5):
    """What the backend adds per call: 8 B all_reduces back to back, rank 0's
    mean per call, through torch and on the C API directly (blocking, and
    nonblocking post + wait as the backend calls it), the three taking turns
    for `rounds` rounds; medians of the rounds."""
    t = torch.ones(2)
    runs = {"capi_blocking": [], "capi_nonblocking": [], "torch": []}
    for _ in range(rounds):
        runs["capi_blocking"].append(railcoll.capi_allreduce_us(t, iters=iters))
        try:
            runs["capi_nonblocking"].append(railcoll.capi_allreduce_us(t, iters=iters, nonblocking=True))
        except TypeError:  # an extension from before the nonblocking backend
            pass
        dist.barrier()
        t1 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        runs["torch"].append((time.perf_counter() - t1) / iters * 1e6)
    cost = {k + "_8B_us": statistics.median(v) for k, v in runs.items() if v}
    cost["added_us"] = cost["torch_8B_us"] - cost["capi_blocking_8B_us"]
    if "capi_nonblocking_8B_us" in cost:
        cost["added_over_nonblocking_us"] = cost["torch_8B_us"] - cost["capi_nonblocking_8B_us"]
    if rank == 0:
        print("per call (8 B all_reduce back to back, rank 0, median of %d rounds): C API blocking %.1f us, "
              "nonblocking %s, through torch %.1f us: the backend adds %.1f us over the blocking call%s" % (
                  rounds, cost["capi_blocking_8B_us"],
                  "%.1f us" % cost["capi_nonblocking_8B_us"] if "capi_nonblocking_8B_us" in cost else "n/a",
                  cost["torch_8B_us"], cost["added_us"],
                  ", %.1f us over post + wait" % cost["added_over_nonblocking_us"]
                  if "added_over_nonblocking_us" in cost else ""), flush=True)
    return cost


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--colls", default=",".join(COLLS), help="comma-separated: " + ", ".join(COLLS))
    p.add_argument("--sizes", help="bytes per rank, comma-separated (K, M suffixes); default 8 B - 64 MiB by 4x")
    p.add_argument("--min-size", default="8", help="smallest default size")
    p.add_argument("--max-size", default="64M", help="largest default size")
    p.add_argument("--rounds", type=int, default=3, help="turns each backend takes per size")
    p.add_argument("--budget", default="256M", help="about this many bytes per backend, size and round")
    p.add_argument("--max-iters", type=int, default=200, help="calls per backend, size and round at most")
    p.add_argument("--backends", default="gloo,railcoll")
    p.add_argument("--json", help="rank 0 writes the records here")
    p.add_argument("--call-cost", action="store_true",
                   help="also: what the backend adds per call over railcoll_allreduce itself (8 B)")
    args = p.parse_args(argv)
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else \
        [s for s in default_sizes() if parse_size(args.min_size) <= s <= parse_size(args.max_size)]
    colls = args.colls.split(",")
    for c in colls:
        if c not in COLLS:
            raise SystemExit("unknown collective %r (%s)" % (c, ", ".join(COLLS)))
    dist.init_process_group("cpu:railcoll")
    rank, size = dist.get_rank(), dist.get_world_size()
    groups, ifname = {}, ""
    for b in args.backends.split(","):
        if b == "railcoll":
            groups[b] = dist.group.WORLD
        elif b == "gloo":
            groups[b], ifname = gloo_group()
        else:
            raise SystemExit("unknown backend %r" % b)
    stats = dist.group.WORLD
    budget = parse_size(args.budget)
    records = []
    if rank == 0:
        print("torch %s, %d ranks, railcoll %s, GLOO_SOCKET_IFNAME=%s, RAILCOLL_RAILS=%s" %
              (torch.__version__, size, railcoll.library_version(), ifname or "(unset)",
               os.environ.get("RAILCOLL_RAILS", "(discovered)")), flush=True)
        print("%-24s %10s %12s %12s %12s %12s %8s" % ("collective", "bytes", "gloo p50 us", "gloo p99 us",
                                                     "railcoll p50", "railcoll p99", "ratio"), flush=True)
    for coll in colls:
        for nbytes in (sizes if coll != "barrier" else [0]):
            case = Case(coll, nbytes, rank, size)
            iters = iterations(max(case.bytes, 8), budget, args.max_iters)
            times = {b: [] for b in groups}
            refused = {}
            for r in range(args.rounds):
                for b, g in groups.items():
                    if b in refused:
                        continue
                    try:
                        times[b] += time_calls(case, g, iters, stats)
                    except RuntimeError as e:  # an operation the backend refuses at the call, on every rank
                        if "needs railcoll's" not in str(e):
                            raise
                        refused[b] = str(e).splitlines()[0]
            rec = {"collective": coll, "bytes": case.bytes, "ranks": size, "calls": iters * args.rounds}
            for b, why in refused.items():
                rec[b] = {"refused": why}
                del times[b]
            for b, t in times.items():
                rec[b] = {"p50_us": percentile(t, 50) * 1e6, "p99_us": percentile(t, 99) * 1e6,
                          "mean_us": statistics.fmean(t) * 1e6}
            if "p50_us" in rec.get("gloo", {}) and "p50_us" in rec.get("railcoll", {}):
                rec["speedup_p50"] = rec["gloo"]["p50_us"] / rec["railcoll"]["p50_us"]
            records.append(rec)
            if rank == 0 and refused:
                print("%-24s %10d %s" % (coll, case.bytes, "; ".join(refused.values())), flush=True)
            elif rank == 0:
                g, rc = rec.get("gloo", {}), rec.get("railcoll", {})
                print("%-24s %10d %12.1f %12.1f %12.1f %12.1f %7.2fx" % (
                    coll, case.bytes, g.get("p50_us", float("nan")), g.get("p99_us", float("nan")),
                    rc.get("p50_us", float("nan")), rc.get("p99_us", float("nan")), rec.get("speedup_p50", float("nan"))),
                    flush=True)
    cost = None
    if args.call_cost:
        cost = call_cost(rank)
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "ranks": size, "gloo_socket_ifname": ifname,
                       "railcoll_rails": os.environ.get("RAILCOLL_RAILS"), "records": records, "call_cost": cost},
                      f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
