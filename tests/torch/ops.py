"""Every operation, dtype and reduce op of the railcoll backend against a
reference computed here from every rank's input; subgroups; many outstanding
Works completed out of order; destroy and a second process group.
Run under torchrun (tests/torch/run_tests.sh)."""
import datetime
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import railcoll  # noqa: E402

R = dist.ReduceOp
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int8, torch.int16, torch.int32,
          torch.int64, torch.uint8, torch.bool]
OPS = [R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]
FEATURES = set(railcoll.features())


def value(rank, n, dtype, op=None, salt=0):
    """Rank `rank`'s input: small integers, exact in every dtype and sum."""
    i = torch.arange(n, dtype=torch.int64) + salt
    if dtype == torch.bool:
        return ((i + rank) % 3 == 0)
    if op == R.PRODUCT:
        v = (i + rank) % 2 + 1
    elif op in (R.BAND, R.BOR, R.BXOR):
        v = (i * 7 + rank * 13) % 64
    else:
        v = (i % 7) + rank + 1
    return v.to(dtype)


def reference(inputs, op, dtype, size):
    if dtype == torch.bool:
        s = torch.stack([x.to(torch.int64) for x in inputs])
        fold = {R.SUM: s.sum(0) > 0, R.MAX: s.max(0).values > 0, R.BOR: s.max(0).values > 0,
                R.MIN: s.min(0).values > 0, R.PRODUCT: s.min(0).values > 0, R.BAND: s.min(0).values > 0,
                R.BXOR: s.sum(0) % 2 == 1}
        return fold[op]
    s = torch.stack([x.to(torch.float64 if dtype.is_floating_point else torch.int64) for x in inputs])
    if op == R.SUM:
        out = s.sum(0)
    elif op == R.AVG:
        out = s.sum(0) / size
    elif op == R.PRODUCT:
        out = s.prod(0)
    elif op == R.MIN:
        out = s.min(0).values
    elif op == R.MAX:
        out = s.max(0).values
    else:
        out = s[0].clone()
        for x in s[1:]:
            out = {R.BAND: out & x, R.BOR: out | x, R.BXOR: out ^ x}[op]
    return out.to(dtype)


def expected_error(op, dtype):
    """The message parts of an all_reduce this build refuses, or None."""
    if op == R.AVG and not dtype.is_floating_point:
        return ["AVG takes floating-point"]
    if op in (R.BAND, R.BOR, R.BXOR) and dtype.is_floating_point:
        return ["bitwise operator takes integer"]
    if dtype == torch.bool:
        return None
    if op == R.PRODUCT and "prod" not in FEATURES:
        return ["PRODUCT needs railcoll's", "gloo"]
    if op in (R.BAND, R.BOR, R.BXOR) and "bitwise" not in FEATURES:
        return ["needs railcoll's", "operator (this library has none)", "gloo"]
    return None


def test_all_reduce(c, rank, size):
    for n in (1, 37, 70000):
        for dtype in DTYPES:
            for op in OPS:
                what = "all_reduce %s %s n=%d" % (dtype, op, n)
                err = expected_error(op, dtype)
                t = value(rank, n, dtype, op)
                if err:
                    c.raises(lambda: dist.all_reduce(t, op=op), ["railcoll"] + err, what + " refused")
                    continue
                dist.all_reduce(t, op=op)
                want = reference([value(r, n, dtype, op) for r in range(size)], op, dtype, size)
                c.equal(t, want, what)
    # Non-contiguous: a transposed view, reduced and written back through it.
    base = torch.arange(12 * 5, dtype=torch.float32).reshape(12, 5) + rank
    view = base.t()
    dist.all_reduce(view)
    want = (torch.arange(60, dtype=torch.float32).reshape(12, 5) * size + sum(range(size))).t()
    c.equal(view, want, "all_reduce of a non-contiguous view")
    c.equal(base, want.t(), "all_reduce wrote through the view")


def test_broadcast(c, rank, size):
    for dtype in DTYPES:
        for root in range(size):
            t = value(rank, 1000, dtype) if rank == root else torch.zeros(1000, dtype=dtype)
            dist.broadcast(t, src=root)
            c.equal(t, value(root, 1000, dtype), "broadcast %s from %d" % (dtype, root))
    t = torch.zeros(8, 6)
    if rank == 0:
        t.copy_(torch.arange(48, dtype=torch.float32).reshape(8, 6))
    v = t[:, ::2]
    dist.broadcast(v, src=0)
    c.equal(v, torch.arange(48, dtype=torch.float32).reshape(8, 6)[:, ::2], "broadcast of a strided view")


def test_gathers(c, rank, size):
    for dtype in DTYPES:
        x = value(rank, 333, dtype)
        outs = [torch.empty(333, dtype=dtype) for _ in range(size)]
        dist.all_gather(outs, x)
        for r in range(size):
            c.equal(outs[r], value(r, 333, dtype), "all_gather %s block %d" % (dtype, r))
        flat = torch.empty(333 * size, dtype=dtype)
        dist.all_gather_into_tensor(flat, x)
        c.equal(flat, torch.cat([value(r, 333, dtype) for r in range(size)]), "all_gather_into_tensor %s" % dtype)
    # Uneven sizes (all-gatherv) and shapes.
    x = value(rank, 10 + rank, torch.float32).reshape(1, -1)
    outs = [torch.empty(1, 10 + r) for r in range(size)]
    dist.all_gather(outs, x)
    for r in range(size):
        c.equal(outs[r], value(r, 10 + r, torch.float32).reshape(1, -1), "all_gather uneven block %d" % r)
    for root in range(size):
        x = value(rank, 50, torch.int64)
        outs = [torch.empty(50, dtype=torch.int64) for _ in range(size)] if rank == root else None
        dist.gather(x, outs, dst=root)
        if rank == root:
            for r in range(size):
                c.equal(outs[r], value(r, 50, torch.int64), "gather to %d block %d" % (root, r))


def test_reduce(c, rank, size):
    for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.int8):
        for root in range(size):
            t = value(rank, 100, dtype)
            mine = t.clone()
            dist.reduce(t, dst=root, op=R.SUM)
            if rank == root:
                c.equal(t, reference([value(r, 100, dtype) for r in range(size)], R.SUM, dtype, size),
                        "reduce %s to %d" % (dtype, root))
            else:
                c.equal(t, mine, "reduce leaves a non-root's tensor as it was")


def test_reduce_scatter(c, rank, size):
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64, torch.float16, torch.uint8):
        for op in (R.SUM, R.MAX, R.MIN):
            n = 29
            ins = [value(rank, n, dtype, salt=100 * j) for j in range(size)]
            out = torch.empty(n, dtype=dtype)
            dist.reduce_scatter(out, ins, op=op)
            want = reference([value(r, n, dtype, salt=100 * rank) for r in range(size)], op, dtype, size)
            c.equal(out, want, "reduce_scatter %s %s" % (dtype, op))
            flat = torch.cat(ins)
            keep = flat.clone()
            out2 = torch.empty(n, dtype=dtype)
            dist.reduce_scatter_tensor(out2, flat, op=op)
            c.equal(out2, want, "reduce_scatter_tensor %s %s" % (dtype, op))
            c.equal(flat, keep, "reduce_scatter_tensor leaves its input as it was")


def test_all_to_all(c, rank, size):
    n = 6
    x = torch.arange(size * n, dtype=torch.float32) + 1000 * rank
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    want = torch.cat([torch.arange(rank * n, rank * n + n, dtype=torch.float32) + 1000 * r for r in range(size)])
    c.equal(out, want, "all_to_all_single")
    # Splits: rank r sends j+1 rows to rank j; receives r+1 rows from each.
    ins = [torch.full((j + 1, 3), float(rank * 10 + j)) for j in range(size)]
    x = torch.cat(ins)
    out = torch.empty((rank + 1) * size, 3)
    dist.all_to_all_single(out, x, [(rank + 1)] * size, [j + 1 for j in range(size)])
    want = torch.cat([torch.full((rank + 1, 3), float(r * 10 + rank)) for r in range(size)])
    c.equal(out, want, "all_to_all_single with splits")
    outs = [torch.empty(rank + 1, 3) for _ in range(size)]
    dist.all_to_all(outs, ins)
    for r in range(size):
        c.equal(outs[r], torch.full((rank + 1, 3), float(r * 10 + rank)), "all_to_all from %d" % r)


def test_scatter(c, rank, size):
    out = torch.empty(40, dtype=torch.int32)
    ins = [value(r, 40, torch.int32) for r in range(size)] if rank == 0 else None
    for root in range(size):
        ins = [value(r, 40, torch.int32) for r in range(size)] if rank == root else None
        dist.scatter(out, ins, src=root)
        c.equal(out, value(rank, 40, torch.int32), "scatter from %d" % root)


def test_misc(c, rank, size):
    dist.barrier()
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    got = torch.empty(3)
    w = dist.irecv(got, prv)
    dist.send(torch.full((3,), float(rank)), nxt)
    w.wait()
    c.equal(got, torch.full((3,), float(prv)), "send and recv around the ring")
    w = dist.all_reduce(torch.ones(3), async_op=True)
    w.wait()
    c.ok(w.is_completed(), "a waited Work is completed")


def test_async(c, rank, size):
    """Many outstanding Works of mixed kinds, waited in reverse order and through
    futures: each result must be its own, in issue order on every rank."""
    ts, works = [], []
    for i in range(24):
        t = torch.full((1000 * (i % 4 + 1),), float(i + rank))
        ts.append(t)
        works.append(dist.all_reduce(t, async_op=True))
    g = [torch.empty(5) for _ in range(size)]
    gw = dist.all_gather(g, torch.full((5,), float(rank)), async_op=True)
    chained = works[3].get_future().then(lambda f: f.value()[0].sum().item())
    for i in reversed(range(len(works))):
        works[i].wait()
        want = torch.full_like(ts[i], float(size * i + sum(range(size))))
        c.equal(ts[i], want, "outstanding all_reduce %d" % i)
    gw.wait()
    for r in range(size):
        c.equal(g[r], torch.full((5,), float(r)), "outstanding all_gather block %d" % r)
    c.ok(chained.wait() == 4000 * (size * 3 + sum(range(size))), "a future's callback saw the result")


def test_chunked_all_reduce(c, rank, size):
    """All-reduces cut into chunks (RAILCOLL_TORCH_CHUNK_MIB, here 40 KiB: a
    remainder, an element type of 8 bytes, a carried int8, AVG, a coalesced
    call and several outstanding at once) equal the reference."""
    os.environ["RAILCOLL_TORCH_CHUNK_MIB"] = str(40 / 1024)
    g = dist.new_group()
    del os.environ["RAILCOLL_TORCH_CHUNK_MIB"]
    for dtype, op in ((torch.float32, R.SUM), (torch.float64, R.MAX), (torch.int8, R.SUM), (torch.float32, R.AVG)):
        n = 70001
        t = value(rank, n, dtype, op)
        dist.all_reduce(t, op=op, group=g)
        c.equal(t, reference([value(r, n, dtype, op) for r in range(size)], op, dtype, size),
                "chunked all_reduce %s %s" % (dtype, op), rtol=1e-6)
    ts = [value(rank, 30000 + i, torch.float32) for i in range(3)]
    works = [dist.all_reduce(t, group=g, async_op=True) for t in ts]
    for i in reversed(range(3)):
        works[i].wait()
        c.equal(ts[i], reference([value(r, 30000 + i, torch.float32) for r in range(size)], R.SUM, torch.float32,
                                 size), "outstanding chunked all_reduce %d" % i)
    ts = [value(rank, 20000, torch.float32, salt=i) for i in range(3)]
    dist.all_reduce_coalesced(ts, group=g)
    for i in range(3):
        c.equal(ts[i], reference([value(r, 20000, torch.float32, salt=i) for r in range(size)], R.SUM, torch.float32,
                                 size), "chunked all_reduce_coalesced tensor %d" % i)
    dist.destroy_process_group(g)


def test_completion(c, rank, size):
    """The ways a Work completes besides wait(): its future alone (DDP's way,
    the Work dropped), is_completed() polled, nobody at all (a dropped Work
    whose buffers the backend keeps), and wait() with a timeout that passes
    before the peers have posted, then a wait that completes."""
    want = lambda i, n: torch.full((n,), float(size * i + sum(range(size))))  # noqa: E731
    ts = [torch.full((3000,), float(i + rank)) for i in range(8)]
    futs = [dist.all_reduce(t, async_op=True).get_future() for t in ts]
    torch.futures.wait_all(futs)
    for i, t in enumerate(ts):
        c.equal(t, want(i, 3000), "all_reduce %d completed through its future alone" % i)
        c.equal(futs[i].value()[0], want(i, 3000), "future %d's value is the result" % i)
    for i in range(6):  # dropped at once: the tensors go with them, not their buffers
        dist.all_reduce(torch.full((5000 + i,), float(i + rank)), async_op=True)
    t = torch.full((7,), float(rank))
    w = dist.all_reduce(t, async_op=True)
    deadline = time.time() + 30
    while not w.is_completed() and time.time() < deadline:
        time.sleep(0.001)
    c.ok(w.is_completed(), "is_completed() polled turns true")
    c.equal(t, want(0, 7), "all_reduce completed by is_completed()")
    c.ok(w.get_future().done(), "its future is done too")
    # Rank 0 posts 1 s before the others: its wait with a 0.2 s timeout must
    # raise, and a second wait then complete with the right result.
    t = torch.full((11,), float(rank))
    if rank == 0:
        w = dist.all_reduce(t, async_op=True)
        c.raises(lambda: w.wait(timeout=datetime.timedelta(seconds=0.2)), ["railcoll", "timed out"],
                 "wait() with a timeout raises when it passes")
    else:
        time.sleep(1.0)
        w = dist.all_reduce(t, async_op=True)
    w.wait()
    c.equal(t, want(0, 11), "the Work completes after a timed-out wait")


def test_subgroups(c, rank, size):
    evens = list(range(0, size, 2))
    odds = list(range(1, size, 2))
    ge = dist.new_group(evens)
    go = dist.new_group(odds)
    mine, members = (ge, evens) if rank % 2 == 0 else (go, odds)
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=mine)
    c.equal(t, torch.tensor([float(sum(members))]), "all_reduce in the even/odd subgroup")
    # broadcast's src is a global rank: the group's last member.
    t = torch.tensor([float(rank)])
    dist.broadcast(t, src=members[-1], group=mine)
    c.equal(t, torch.tensor([float(members[-1])]), "broadcast from a subgroup's global rank")
    # Split into halves (new_subgroups): both groups at once, then the world again.
    sub, _ = dist.new_subgroups(group_size=size // 2)
    t = torch.tensor([1.0])
    dist.all_reduce(t, group=sub)
    c.equal(t, torch.tensor([float(size // 2)]), "all_reduce in a split subgroup")
    outs = [torch.empty(1) for _ in range(size // 2)]
    dist.all_gather(outs, torch.tensor([float(rank)]), group=sub)
    first = (rank // (size // 2)) * (size // 2)
    c.equal(torch.cat(outs), torch.arange(first, first + size // 2, dtype=torch.float32), "all_gather in a split subgroup")
    t = torch.tensor([1.0])
    dist.all_reduce(t)
    c.equal(t, torch.tensor([float(size)]), "the world after subgroups")
    for g in (ge, go, sub):
        if g is not None and g != dist.GroupMember.NON_GROUP_MEMBER:
            dist.destroy_process_group(g)


def main():
    lib.pretend_nodes()
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    c = lib.Checker(rank)
    # The device-qualified form, as beside another backend for other devices.
    dist.init_process_group("cpu:railcoll", timeout=datetime.timedelta(seconds=60))
    c.ok(dist.get_backend() == "cpu:railcoll" or "railcoll" in dist.get_backend(), "the group's backend is railcoll")
    for test in (test_all_reduce, test_broadcast, test_gathers, test_reduce, test_reduce_scatter, test_all_to_all,
                 test_scatter, test_misc, test_async, test_completion, test_chunked_all_reduce,
                 test_subgroups):
        test(c, rank, size)
    dist.destroy_process_group()
    # A second process group in the same processes, after destroy.
    dist.init_process_group("railcoll")
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    c.equal(t, torch.tensor([float(sum(range(size)))]), "all_reduce after destroy and a new init")
    dist.destroy_process_group()
    if rank == 0:
        print("torch ops: %d checks passed on %d ranks (features: %s)" % (c.count, size, ",".join(sorted(FEATURES)) or "none"),
              flush=True)


if __name__ == "__main__":
    main()
