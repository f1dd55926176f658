"""The backend's threads (docs/torch.md, "Asynchronous, as Gloo"): Works
posted on one Python thread and waited for from several others at once
(wait(), wait with a timeout, is_completed() polled, the future), the future
thread completing Works nobody waits for, Works reaped at the next post, a
thread waiting while another posts on the same group, and two groups posted
from two threads at once. Every result exact. Run by run_tests.sh: under
ThreadSanitizer (`threads`, make sanitize) and in torch_local."""
import datetime
import os
import queue
import threading

import torch
import torch.distributed as dist

import lib
import ops


def want_sum(size, i, n):
    return torch.full((n,), float(size * i + sum(range(size))))


def run_threads(targets):
    """Runs each target on a thread of its own; an exception on any fails the run."""
    errors = []

    def guard(f):
        try:
            f()
        except BaseException as e:  # noqa: B036  (reported below, on the main thread)
            errors.append(e)

    threads = [threading.Thread(target=guard, args=(f,)) for f in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_many_waiters(c, rank, size):
    """One poster, four waiters on the same Works: wait() forward and in
    reverse, wait() with a timeout, is_completed() polled, each Work's future."""
    ts = [torch.full((2000 + 100 * i,), float(i + rank)) for i in range(16)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    futs = [w.get_future() for w in works[::2]]  # half of them the future thread completes too

    def forward():
        for w in works:
            w.wait()

    def backward():
        for w in reversed(works):
            w.wait(timeout=datetime.timedelta(seconds=60))

    def polled():
        for w in works:
            while not w.is_completed():
                pass

    def futures():
        torch.futures.wait_all(futs)

    run_threads([forward, backward, polled, futures])
    for i, t in enumerate(ts):
        c.equal(t, want_sum(size, i, t.numel()), "all_reduce %d waited on four threads" % i)
        c.ok(works[i].is_completed(), "Work %d completed" % i)


def test_wait_while_posting(c, rank, size):
    """A thread waits for each Work while another posts the next ones on the
    same group (and drops some unwaited: reaped at the next post)."""
    posted = queue.Queue()
    n = 40
    ts = [torch.full((500 + i,), float(i + rank)) for i in range(n)]

    def poster():
        for i, t in enumerate(ts):
            w = dist.all_reduce(t, async_op=True)
            posted.put(w if i % 3 else w.get_future())
        posted.put(None)

    def waiter():
        while True:
            w = posted.get()
            if w is None:
                return
            w.wait()

    run_threads([poster, waiter])
    for i, t in enumerate(ts):
        c.equal(t, want_sum(size, i, t.numel()), "all_reduce %d waited while the next were posted" % i)


def test_two_groups(c, rank, size):
    """Two groups, each posted from a thread of its own, at once, and waited
    for on a third."""
    groups = [dist.new_group(), dist.new_group()]
    done = queue.Queue()
    results = [[], []]

    def poster(g):
        def run():
            for i in range(20):
                t = torch.full((300 + i,), float(10 * g + i + rank))
                out = torch.empty(size * t.numel()) if i % 2 else None
                results[g].append((i, t, out))
                w = dist.all_gather_into_tensor(out, t, group=groups[g], async_op=True) if i % 2 else \
                    dist.all_reduce(t, group=groups[g], async_op=True)
                done.put(w)
            done.put(None)
        return run

    def waiter():
        ends = 0
        while ends < 2:
            w = done.get()
            if w is None:
                ends += 1
            else:
                w.wait()

    run_threads([poster(0), poster(1), waiter])
    for g in (0, 1):
        for i, t, out in results[g]:
            if out is None:
                c.equal(t, want_sum(size, 10 * g + i, t.numel()), "group %d all_reduce %d" % (g, i))
            else:
                blocks = [torch.full((t.numel(),), float(10 * g + i + r)) for r in range(size)]
                c.equal(out, torch.cat(blocks), "group %d all_gather %d" % (g, i))
    for g in groups:
        dist.destroy_process_group(g)


def main():
    lib.pretend_nodes()
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    c = lib.Checker(rank)
    dist.init_process_group("railcoll", timeout=datetime.timedelta(seconds=120))
    # One thread's ways to complete a Work (the future thread, reaping, timeouts).
    ops.test_async(c, rank, size)
    ops.test_completion(c, rank, size)
    test_many_waiters(c, rank, size)
    test_wait_while_posting(c, rank, size)
    test_two_groups(c, rank, size)
    dist.destroy_process_group()
    # One write with its newline, so the other rank's line cannot land inside it.
    os.write(1, ("torch threads: rank %d: %d checks passed on %d ranks\n" % (rank, c.count, size)).encode())


if __name__ == "__main__":
    main()
