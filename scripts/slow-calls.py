#!/usr/bin/env python3
"""Where the slow calls of a `railcoll bench ... --timeline F` went.

Per algorithm and size: the slowest rank's time of every call (its median, p99
and p99/p50), then the slow calls (slowest rank's time > 3x the median): how
many, their median excess over the median, and the median over them of the
longest wait for a core (runnable, on a run queue) of any rank inside the call
and of the slowest rank itself; the same longest wait in the calls within 1.5x
of the median. A rank's wait counts what it waited inside the call and, of what
it waited before it (in the barrier before the call), as much as it entered
after the first rank: a rank that enters late holds the others. An excess the waits match is a rank descheduled (docs/
observability.md, "Which rank waited for a core"); an excess with no wait
behind it is the network or a sleep that was not woken.

    scripts/slow-calls.py F [F ...]
"""
import collections
import statistics
import sys


def calls_of(path):
    """(algorithm, bytes) -> [[(rank, entry, exit, runq_in, runq_before), ...] per call]."""
    calls, part, last = collections.OrderedDict(), collections.Counter(), {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            w = line.split()
            if len(w) < 8:
                sys.exit(f"{path}: no wait-for-a-core columns (a timeline written before they were added)")
            algo, size, call, rank = w[0], int(w[1]), int(w[2]), int(w[3])
            entry, exit_, runq_in, runq_before = map(float, w[4:8])
            key = (algo, size)
            if key in last and call < last[key]:
                part[key] += 1  # the next round's calls of this size
            last[key] = call
            calls.setdefault((algo, size, part[key], call), []).append((rank, entry, exit_, runq_in, runq_before))
    by_size = collections.OrderedDict()
    for (algo, size, _, _), ranks in calls.items():
        by_size.setdefault((algo, size), []).append(ranks)
    return by_size


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(f"{'algorithm':<26} {'bytes':>7} {'calls':>5} {'p50 us':>8} {'p99 us':>8} {'p99/p50':>7} | "
          f"{'slow':>4} {'excess':>7} {'wait any':>8} {'wait slowest':>12} | {'fast: wait any':>14}")
    for path in sys.argv[1:]:
        for (algo, size), calls in calls_of(path).items():
            slowest = [max(x - e for _, e, x, _, _ in c) for c in calls]
            ordered = sorted(slowest)
            p50 = statistics.median(ordered)
            p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
            slow = [(t, c) for t, c in zip(slowest, calls) if t > 3 * p50]
            fast = [c for t, c in zip(slowest, calls) if t <= 1.5 * p50]
            def waited(c, r):
                first = min(e for _, e, _, _, _ in c)
                return r[3] + min(r[4], r[1] - first)

            wait_any = lambda c: max(waited(c, r) for r in c)
            wait_slowest = lambda c: waited(c, max(c, key=lambda r: r[2] - r[1]))
            if slow:
                cols = (f"{len(slow):>4} {statistics.median(t - p50 for t, _ in slow):>7.0f} "
                        f"{statistics.median(wait_any(c) for _, c in slow):>8.0f} "
                        f"{statistics.median(wait_slowest(c) for _, c in slow):>12.0f}")
            else:
                cols = f"{0:>4} {'-':>7} {'-':>8} {'-':>12}"
            fast_wait = statistics.median(wait_any(c) for c in fast) if fast else float("nan")
            print(f"{algo:<26} {size:>7} {len(calls):>5} {p50:>8.0f} {p99:>8.0f} {p99 / p50:>7.1f} | {cols} | "
                  f"{fast_wait:>14.0f}")


if __name__ == "__main__":
    main()
