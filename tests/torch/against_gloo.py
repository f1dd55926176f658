"""Every c10d operation a CPU program calls, on railcoll and on gloo side by
side in one job, with the same inputs: the results must be equal (exactly:
inputs are small integers, so sums are exact in every dtype). Every dtype
torch uses on the CPU, contiguous, strided and channels-last tensors. Where
gloo lacks an operation, the reference is computed here from every rank's
input (gather_into_tensor) or the operation's own definition. Run under
torchrun (tests/torch/run_tests.sh)."""
import datetime
import os
import warnings
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.distributed_c10d import _coalescing_manager  # noqa: E402

from railcoll.examples.ddp import gloo_group  # noqa: E402

R = dist.ReduceOp
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]
LAYOUTS = ["contiguous", "strided", "channels_last"]


def value(rank, shape, dtype, salt=0):
    """Rank `rank`'s input: small integers (exact in every dtype and sum)."""
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(n, dtype=torch.int64).reshape(shape) + salt
    if dtype == torch.bool:
        return (i + rank) % 3 == 0
    v = (i % 5) + rank + 1
    if dtype.is_complex:
        return torch.complex(v.double(), (v % 3).double() - rank).to(dtype)
    return v.to(dtype)


def shaped(rank, dtype, layout, salt=0):
    """A 2x3x4x5 tensor of rank's values in the layout: contiguous, a strided
    view (every other column of a wider tensor) or channels-last."""
    if layout == "contiguous":
        return value(rank, (2, 3, 4, 5), dtype, salt)
    if layout == "strided":
        wide = value(rank, (2, 3, 4, 10), dtype, salt)
        return wide[..., ::2]
    return value(rank, (2, 3, 4, 5), dtype, salt).contiguous(memory_format=torch.channels_last)


def fold(inputs, op, size):
    """The reduction of every rank's input, on this process."""
    dtype = inputs[0].dtype
    if dtype == torch.bool:
        s = torch.stack([x.to(torch.int64) for x in inputs])
        return {R.SUM: s.sum(0) > 0, R.MAX: s.max(0).values > 0, R.MIN: s.min(0).values > 0,
                R.PRODUCT: s.min(0).values > 0}[op]
    wide = torch.complex128 if dtype.is_complex else torch.float64 if dtype.is_floating_point else torch.int64
    s = torch.stack([x.to(wide) for x in inputs])
    if op in (R.SUM, R.AVG):
        out = s.sum(0) / (size if op == R.AVG else 1)
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


def ops_for(dtype):
    if dtype == torch.bool:
        return [R.SUM, R.MAX, R.MIN, R.PRODUCT]
    if dtype.is_complex:
        return [R.SUM, R.AVG]
    ops = [R.SUM, R.MAX, R.MIN, R.PRODUCT]
    if dtype.is_floating_point:
        ops.append(R.AVG)
    else:
        ops += [R.BAND, R.BOR, R.BXOR]
    return ops


class Both:
    """Runs an operation on the railcoll group and on the gloo group with
    fresh, equal inputs, and compares what each returns."""

    def __init__(self, c, rank, size, gloo):
        self.c, self.rank, self.size, self.gloo = c, rank, size, gloo
        self.gloo_lacks = {}  # what gloo refused, and why: the reference stood in

    def same(self, what, fn, skip_gloo=False, reference=None):
        """fn(group) returns what to compare. Where gloo refuses the operation
        (every rank alike), or its result differs from `reference()` (the
        operation computed here from every rank's input) while railcoll's
        equals it, the reference stands in, and the summary says so."""
        got = fn(dist.group.WORLD)
        if skip_gloo:
            return got
        try:
            want = fn(self.gloo)
        except RuntimeError as e:
            if reference is None:
                raise
            self.gloo_lacks.setdefault(what, "refused: " + str(e).splitlines()[0][:100])
            want = reference()
        if reference is not None and not self.equal(got, want):
            ref = reference()
            if self.equal(got, ref):
                self.gloo_lacks.setdefault(what, "gloo's result differs from the reference")
                want = ref
        for i, (a, b) in enumerate(zip(got, want)):
            if isinstance(a, torch.Tensor):
                if not self.equal([a], [b]):
                    bad = (a != b).nonzero()[:4].tolist() if a.shape == b.shape else "shapes"
                    print("rank %d: %s [%d]: railcoll %s %s %s, gloo %s %s %s; differ at %s: %s, %s" % (
                        self.rank, what, i, a.dtype, tuple(a.shape), a.stride(), b.dtype, tuple(b.shape), b.stride(),
                        bad, a.flatten()[:6], b.flatten()[:6]), flush=True)
                self.c.ok(self.equal([a], [b]), what)
            else:
                self.c.ok(a == b, "%s [%d]: railcoll %r, gloo %r" % (what, i, a, b))
        return got

    @staticmethod
    def equal(xs, ys):
        for a, b in zip(xs, ys):
            if isinstance(a, torch.Tensor):
                if not (a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride() and (
                        torch.equal(a, b) if not a.dtype.is_floating_point else torch.allclose(a, b, equal_nan=True))):
                    return False
            elif a != b:
                return False
        return len(xs) == len(ys)


def test_reductions(b, rank, size):
    for dtype in DTYPES:
        for layout in LAYOUTS:
            for op in ops_for(dtype):
                if dtype in (torch.bool,) and op == R.PRODUCT:
                    continue  # gloo's bool product is its own (and AND on railcoll); checked below

                def all_reduce(g):
                    t = shaped(rank, dtype, layout)
                    dist.all_reduce(t, op=op, group=g)
                    return [t]

                def reference():
                    t = shaped(rank, dtype, layout)
                    t.copy_(fold([shaped(r, dtype, layout) for r in range(size)], op, size))
                    return [t]
                b.same("all_reduce %s %s %s" % (dtype, layout, op), all_reduce, reference=reference)
        for op in ops_for(dtype)[:2]:
            for root in (0, size - 1):
                def reduce(g):
                    t = shaped(rank, dtype, "strided")
                    dist.reduce(t, dst=root, op=op, group=g)
                    return [t]

                def reduce_reference():
                    t = shaped(rank, dtype, "strided")
                    if rank == root:
                        t.copy_(fold([shaped(r, dtype, "strided") for r in range(size)], op, size))
                    return [t]
                b.same("reduce %s %s to %d" % (dtype, op, root), reduce, reference=reduce_reference)

            def reduce_scatter_tensor(g):
                x = value(rank, (size * 6,), dtype)
                out = torch.empty(6, dtype=dtype)
                dist.reduce_scatter_tensor(out, x, op=op, group=g)
                return [out, x]

            def rst_reference():
                every = fold([value(r, (size * 6,), dtype) for r in range(size)], op, size)
                return [every[rank * 6:(rank + 1) * 6].clone(), value(rank, (size * 6,), dtype)]
            b.same("reduce_scatter_tensor %s %s" % (dtype, op), reduce_scatter_tensor, reference=rst_reference)

            def reduce_scatter(g):
                ins = [value(rank, (3, 2), dtype, salt=7 * j) for j in range(size)]
                out = torch.empty(3, 2, dtype=dtype)
                dist.reduce_scatter(out, ins, op=op, group=g)
                return [out]

            def rs_reference():
                return [fold([value(r, (3, 2), dtype, salt=7 * rank) for r in range(size)], op, size)]
            b.same("reduce_scatter %s %s" % (dtype, op), reduce_scatter, reference=rs_reference)
    # bool PRODUCT is AND (railcoll, gloo) on 0/1 values.
    t = value(rank, (40,), torch.bool)
    dist.all_reduce(t, op=R.PRODUCT)
    want = torch.stack([value(r, (40,), torch.bool) for r in range(size)]).all(0)
    b.c.equal(t, want, "all_reduce bool PRODUCT is and")


def test_coalesced(b, rank, size):
    dtypes = [torch.float32, torch.bfloat16, torch.int64, torch.complex64]

    def all_reduce_coalesced(g):
        ts = [value(rank, (5 + i,), dtypes[0], salt=i) for i in range(3)]
        dist.all_reduce_coalesced(ts, group=g)
        return ts
    b.same("all_reduce_coalesced", all_reduce_coalesced)

    for dtype in dtypes:
        def manager_all_reduce(g):
            ts = [value(rank, (7 + i,), dtype, salt=i) for i in range(3)]
            with _coalescing_manager(group=g):
                for t in ts:
                    dist.all_reduce(t, group=g)
            return ts
        b.same("_coalescing_manager all_reduce %s" % dtype, manager_all_reduce)

        def manager_all_gather(g):
            ins = [value(rank, (3 + i,), dtype, salt=i) for i in range(3)]
            outs = [torch.empty(size * (3 + i), dtype=dtype) for i in range(3)]
            with _coalescing_manager(group=g, async_ops=True) as cm:
                for o, x in zip(outs, ins):
                    dist.all_gather_into_tensor(o, x, group=g)
            cm.wait()
            return outs
        b.same("_coalescing_manager all_gather_into_tensor (all_gather_into_tensor_coalesced) %s" % dtype,
               manager_all_gather)

        def manager_reduce_scatter(g):
            ins = [value(rank, (size * (2 + i),), dtype, salt=i) for i in range(3)]
            outs = [torch.empty(2 + i, dtype=dtype) for i in range(3)]
            with _coalescing_manager(group=g):
                for o, x in zip(outs, ins):
                    dist.reduce_scatter_tensor(o, x, group=g)
            return outs
        b.same("_coalescing_manager reduce_scatter_tensor (reduce_scatter_tensor_coalesced) %s" % dtype,
               manager_reduce_scatter)

        def all_gather_coalesced(g):
            ins = [value(rank, (2, 3), dtype), value(rank, (4,), dtype, salt=1)]
            outs = [[torch.empty_like(x) for x in ins] for _ in range(size)]
            dist.all_gather_coalesced(outs, ins, group=g)
            return [t for per_rank in outs for t in per_rank]
        b.same("all_gather_coalesced %s" % dtype, all_gather_coalesced)

    # The manager with a device: each operation posted, one Work for them all.
    def manager_with_device(g):
        ts = [value(rank, (9,), torch.float32, salt=i) for i in range(3)]
        with _coalescing_manager(group=g, device=torch.device("cpu"), async_ops=True) as cm:
            dist.broadcast(ts[0], src=0, group=g)
            dist.all_reduce(ts[1], group=g)
            dist.all_reduce(ts[2], op=R.MAX, group=g)
        cm.wait()
        return ts
    ts = b.same("_coalescing_manager(device=cpu)", manager_with_device, skip_gloo=True)
    b.c.equal(ts[0], value(0, (9,), torch.float32, salt=0), "coalesced broadcast")
    b.c.equal(ts[1], sum(value(r, (9,), torch.float32, salt=1) for r in range(size)), "coalesced all_reduce")


def test_gathers(b, rank, size):
    for dtype in DTYPES:
        for layout in LAYOUTS:
            def all_gather(g):
                x = shaped(rank, dtype, layout)
                outs = [torch.empty_like(x) for _ in range(size)]
                dist.all_gather(outs, x, group=g)
                return outs
            def all_gather_reference():
                x = shaped(rank, dtype, layout)
                return [torch.empty_like(x).copy_(shaped(r, dtype, layout)) for r in range(size)]
            b.same("all_gather %s %s" % (dtype, layout), all_gather, reference=all_gather_reference)

            def all_gather_into_tensor(g):
                x = shaped(rank, dtype, layout)
                out = torch.empty((size * x.shape[0],) + tuple(x.shape[1:]), dtype=dtype)
                dist.all_gather_into_tensor(out, x, group=g)
                return [out]
            def all_gather_into_tensor_reference():
                return [torch.cat([shaped(r, dtype, layout) for r in range(size)]).contiguous()]
            b.same("all_gather_into_tensor %s %s" % (dtype, layout), all_gather_into_tensor,
                   reference=all_gather_into_tensor_reference)

            def broadcast(g):
                t = shaped(rank, dtype, layout)
                dist.broadcast(t, src=size - 1, group=g)
                return [t]
            def broadcast_reference():
                return [shaped(rank, dtype, layout).copy_(shaped(size - 1, dtype, layout))]
            b.same("broadcast %s %s" % (dtype, layout), broadcast, reference=broadcast_reference)

        def gather(g):
            x = value(rank, (11,), dtype)
            outs = [torch.empty_like(x) for _ in range(size)] if rank == 1 else None
            dist.gather(x, outs, dst=1, group=g)
            return outs or []
        b.same("gather %s" % dtype, gather,
               reference=lambda: [value(r, (11,), dtype) for r in range(size)] if rank == 1 else [])

        def scatter(g):
            out = torch.empty(6, dtype=dtype)
            ins = [value(r, (6,), dtype, salt=3) for r in range(size)] if rank == 0 else None
            dist.scatter(out, ins, src=0, group=g)
            return [out]
        b.same("scatter %s" % dtype, scatter, reference=lambda: [value(rank, (6,), dtype, salt=3)])

        def all_to_all_single(g):
            x = value(rank, (size * 3,), dtype)
            out = torch.empty_like(x)
            dist.all_to_all_single(out, x, group=g)
            return [out]
        b.same("all_to_all_single %s" % dtype, all_to_all_single,
               reference=lambda: [torch.cat([value(r, (size * 3,), dtype)[rank * 3:rank * 3 + 3] for r in range(size)])])

        # gather_into_tensor: gloo has none; the reference is every rank's input in rank order.
        x = value(rank, (4, 3), dtype)
        for root in range(size):
            out = torch.empty(size * 4, 3, dtype=dtype) if rank == root else None
            dist.gather_into_tensor(x, out, dst=root)
            if rank == root:
                b.c.equal(out, torch.cat([value(r, (4, 3), dtype) for r in range(size)]),
                          "gather_into_tensor %s to %d" % (dtype, root))


def test_objects(b, rank, size):
    def all_gather_object(g):
        out = [None] * size
        dist.all_gather_object(out, {"rank": rank, "list": list(range(rank + 2))}, group=g)
        return out
    b.same("all_gather_object", all_gather_object)

    def broadcast_object_list(g):
        objs = [{"from": rank, "x": [1, 2, 3]}, "text", rank * 1.5] if rank == 1 else [None, None, None]
        dist.broadcast_object_list(objs, src=1, group=g)
        return objs
    b.same("broadcast_object_list", broadcast_object_list)

    def scatter_object_list(g):
        out = [None]
        ins = [{"to": r, "payload": "x" * (r + 1)} for r in range(size)] if rank == 0 else None
        dist.scatter_object_list(out, ins, src=0, group=g)
        return out
    b.same("scatter_object_list", scatter_object_list)

    def gather_object(g):
        out = [None] * size if rank == 0 else None
        dist.gather_object(("rank", rank), out, dst=0, group=g)
        return out or []
    b.same("gather_object", gather_object)


def test_sparse(b, rank, size):
    def sparse(g):
        i = torch.tensor([[0, 2, rank % 4], [1, rank % 3, 0]])
        v = torch.tensor([1.0 + rank, 10.0, -2.0])
        t = torch.sparse_coo_tensor(i, v, (4, 3))
        dist.all_reduce(t, group=g)
        return [t.to_dense()]
    b.same("all_reduce of a sparse tensor", sparse)

    def sparse_2d_values(g):  # a hybrid tensor: sparse rows, dense columns
        i = torch.tensor([[rank % 3, 4]])
        v = torch.ones(2, 5) * (rank + 1)
        t = torch.sparse_coo_tensor(i, v, (6, 5))
        dist.all_reduce(t, group=g)
        return [t.to_dense()]
    b.same("all_reduce of a hybrid sparse tensor", sparse_2d_values)
    b.c.raises(lambda: dist.all_reduce(torch.sparse_coo_tensor(torch.tensor([[0]]), torch.tensor([1.0]), (2,)),
                                       op=R.MAX), ["railcoll", "sparse", "SUM"], "sparse MAX refused")


def test_groups(b, rank, size):
    # split_group: the ranks in halves.
    half = size // 2
    g = dist.split_group(split_ranks=[list(range(half)), list(range(half, size))])
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=g)
    mine = range(half) if rank < half else range(half, size)
    b.c.equal(t, torch.tensor([float(sum(mine))]), "all_reduce in a split_group half")
    outs = [torch.empty(1) for _ in range(len(mine))]
    dist.all_gather(outs, torch.tensor([float(rank)]), group=g)
    b.c.equal(torch.cat(outs), torch.tensor([float(r) for r in mine]), "all_gather in a split_group half")
    # new_subgroups by enumeration.
    sub, subs = dist.new_subgroups_by_enumeration(ranks_per_subgroup_list=[[r for r in range(size) if r % 2 == k]
                                                                           for k in range(2)])
    t = torch.tensor([1.0])
    dist.all_reduce(t, group=sub)
    b.c.equal(t, torch.tensor([float(len([r for r in range(size) if r % 2 == rank % 2]))]),
              "all_reduce in new_subgroups_by_enumeration")
    dist.destroy_process_group(g)


def test_monitored_barrier(b, rank, size):
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    b.c.ok(True, "monitored_barrier passes when every rank comes")
    # The last rank comes 3 s late: rank 0 names it after 1 s; with
    # wait_all_ranks too. The late rank's own wait then fails (rank 0 gave up).
    for wait_all in (False, True):
        if rank == size - 1:
            time.sleep(3)
        if rank == 0:
            b.c.raises(lambda: dist.monitored_barrier(timeout=datetime.timedelta(seconds=1), wait_all_ranks=wait_all),
                       ["railcoll", "monitored_barrier", "rank %d" % (size - 1), "did not reach"],
                       "monitored_barrier names the late rank (wait_all_ranks=%s)" % wait_all)
        else:
            try:
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=1 if rank == size - 1 else 10),
                                       wait_all_ranks=wait_all)
            except RuntimeError as e:
                b.c.ok("rank 0 did not answer" in str(e) or rank == size - 1, "a waiting rank's error: %s" % e)
        dist.barrier()


def test_point_to_point(b, rank, size):
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    for dtype in DTYPES:
        for layout in ("contiguous", "strided"):
            def ring(g):
                x = shaped(rank, dtype, layout)
                y = torch.zeros_like(shaped(prv, dtype, layout))
                ops = [dist.P2POp(dist.isend, x, nxt, group=g), dist.P2POp(dist.irecv, y, prv, group=g)]
                for w in dist.batch_isend_irecv(ops):
                    w.wait()
                return [y]
            got = b.same("batch_isend_irecv ring %s %s" % (dtype, layout), ring,
                         reference=lambda: [torch.zeros_like(shaped(prv, dtype, layout)).copy_(shaped(prv, dtype, layout))])
            b.c.equal(got[0], shaped(prv, dtype, layout), "ring %s %s holds the previous rank's tensor" % (dtype, layout))
    # Blocking send/recv of 4 MiB (in parts over the rails between nodes), and tags.
    if rank == 0:
        for r in range(1, size):
            dist.send(torch.full((1 << 20,), float(r)), dst=r, tag=7)
            dist.send(torch.full((3,), float(-r)), dst=r, tag=8)
    else:
        small, big = torch.empty(3), torch.empty(1 << 20)
        w = dist.irecv(small, src=0, tag=8)  # tag 8 first, though tag 7 was sent first
        dist.recv(big, src=0, tag=7)
        w.wait()
        b.c.equal(big, torch.full((1 << 20,), float(rank)), "4 MiB recv")
        b.c.equal(small, torch.full((3,), float(-rank)), "recv by tag")
    # Any source: rank 0 receives one message from every other rank.
    if rank == 0:
        seen = set()
        for _ in range(size - 1):
            t = torch.empty(2)
            src = dist.recv(t)
            seen.add(src)
            b.c.equal(t, torch.full((2,), float(src)), "any-source message of rank %d" % src)
        b.c.ok(seen == set(range(1, size)), "any-source receives name every sender: %s" % sorted(seen))
    else:
        dist.send(torch.full((2,), float(rank)), dst=0)
    # A recv of the wrong size fails, naming both sizes; the group goes on.
    if rank == 0:
        dist.send(torch.ones(10), dst=1, tag=3)
    elif rank == 1:
        b.c.raises(lambda: dist.recv(torch.empty(5), src=0, tag=3), ["railcoll", "40 bytes", "20"],
                   "recv of the wrong size")
    t = torch.ones(1)
    dist.all_reduce(t)
    b.c.equal(t, torch.tensor([float(size)]), "all_reduce after point-to-point")


def main():
    warnings.filterwarnings("ignore", message="Sparse invariant checks")
    lib.pretend_nodes()
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    c = lib.Checker(rank)
    dist.init_process_group("cpu:railcoll", timeout=datetime.timedelta(seconds=60))
    gloo, _ = gloo_group()
    b = Both(c, rank, size, gloo)
    only = os.environ.get("RAILCOLL_TEST_ONLY")
    for test in (test_reductions, test_coalesced, test_gathers, test_objects, test_sparse, test_point_to_point,
                 test_groups, test_monitored_barrier):
        if only and test.__name__ != only:
            continue
        t0 = time.time()
        test(b, rank, size)
        if rank == 0:
            print("%s: %.1f s" % (test.__name__, time.time() - t0), flush=True)
    dist.destroy_process_group()
    if rank == 0:
        for why in sorted(set(b.gloo_lacks.values())):
            cases = [w for w, y in b.gloo_lacks.items() if y == why]
            print("gloo: %s in %d cases (%s%s): railcoll's result compared with the reference computed here" % (
                why, len(cases), "; ".join(cases[:4]), "; ..." if len(cases) > 4 else ""), flush=True)
        print("torch against gloo: %d checks passed on %d ranks" % (c.count, size), flush=True)


if __name__ == "__main__":
    main()
