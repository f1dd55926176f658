"""mpi4py through the MPI interposition library (docs/mpi.md, "Threads"):
Allgather, Allreduce, Bcast, Barrier, Alltoall, Reduce_scatter_block, Reduce
and Scatter on numpy arrays, and Iallgather, Iallreduce and Ibcast completed
by Waitall together with Isend/Irecv, every result checked.
Run with Debian's interpreter (/usr/bin/python3, whose python3-mpi4py is built
on Open MPI) under mpirun, with lib/librailcoll_mpi.so preloaded. Prints the
thread level and "mpi4py collectives correct" from rank 0 when every rank got
every result.

An unmodified script: mpi4py asks for MPI_THREAD_MULTIPLE by default, and the
library serves it.
"""
import sys

from mpi4py import MPI
import numpy as np

comm = MPI.COMM_WORLD
me, n = comm.Get_rank(), comm.Get_size()
wrong = []

for count in (0, 1, 5, 3000):
    for dtype in (np.int8, np.int32, np.int64, np.float32, np.float64):
        mine = (np.arange(count) * 7 + me * 1000).astype(dtype)
        everyone = np.empty(count * n, dtype=dtype)
        comm.Allgather(mine, everyone)
        want = np.concatenate([(np.arange(count) * 7 + r * 1000).astype(dtype) for r in range(n)])
        if not np.array_equal(everyone, want):
            wrong.append("Allgather %s x %d" % (np.dtype(dtype).name, count))

        root = n - 1
        buf = (np.arange(count) + 11).astype(dtype) if me == root else np.zeros(count, dtype=dtype)
        comm.Bcast(buf, root=root)
        if not np.array_equal(buf, (np.arange(count) + 11).astype(dtype)):
            wrong.append("Bcast %s x %d from %d" % (np.dtype(dtype).name, count, root))

    for dtype in (np.int32, np.int64, np.float32, np.float64):
        for op, combine in ((MPI.SUM, np.sum), (MPI.MIN, np.min), (MPI.MAX, np.max)):
            values = [((np.arange(count) * 3 + r * 5) % 17 - 8).astype(dtype) for r in range(n)]
            result = np.empty(count, dtype=dtype)
            comm.Allreduce(values[me], result, op=op)
            want = combine(np.stack(values), axis=0).astype(dtype) if count else result
            if not np.array_equal(result, want):
                wrong.append("Allreduce %s %s x %d" % (np.dtype(dtype).name, op.Get_name(), count))

    for dtype in (np.int8, np.uint16, np.int32, np.float64):
        name = np.dtype(dtype).name
        blocks = np.array([(np.arange(count) + me * 31 + d * 7) % 100 for d in range(n)], dtype=dtype)
        received = np.empty_like(blocks)
        comm.Alltoall(blocks, received)
        want = np.array([(np.arange(count) + s * 31 + me * 7) % 100 for s in range(n)], dtype=dtype)
        if not np.array_equal(received, want):
            wrong.append("Alltoall %s x %d" % (name, count))

        values = [np.array([(np.arange(count) + r + d) % 5 for d in range(n)], dtype=dtype) for r in range(n)]
        mine_reduced = np.empty(count, dtype=dtype)
        comm.Reduce_scatter_block(values[me], mine_reduced, op=MPI.SUM)
        if not np.array_equal(mine_reduced, np.sum(np.stack(values), axis=0)[me].astype(dtype)):
            wrong.append("Reduce_scatter_block %s x %d" % (name, count))

        root = n // 2
        vector = ((np.arange(count) + me) % 7).astype(dtype)
        total = np.empty(count, dtype=dtype) if me == root else None
        comm.Reduce(vector, total, op=MPI.MAX, root=root)
        if me == root and not np.array_equal(total, np.max([(np.arange(count) + r) % 7 for r in range(n)], axis=0)
                                             .astype(dtype) if count else total):
            wrong.append("Reduce %s MAX x %d to %d" % (name, count, root))

        parts = np.array([(np.arange(count) + d * 3) % 90 for d in range(n)], dtype=dtype) if me == root else None
        part = np.empty(count, dtype=dtype)
        comm.Scatter(parts, part, root=root)
        if not np.array_equal(part, ((np.arange(count) + me * 3) % 90).astype(dtype)):
            wrong.append("Scatter %s x %d from %d" % (name, count, root))

    inplace = np.full(count, me + 1, dtype=np.float64)
    comm.Allreduce(MPI.IN_PLACE, inplace, op=MPI.SUM)
    if not np.array_equal(inplace, np.full(count, n * (n + 1) / 2)):
        wrong.append("Allreduce in place x %d" % count)

    # Nonblocking collectives and point-to-point requests completed together.
    right, left = (me + 1) % n, (me - 1) % n
    mine = (np.arange(count) * 3 + me).astype(np.int32)
    everyone = np.empty(count * n, dtype=np.int32)
    halves, total = np.full(count, me + 0.5), np.empty(count, dtype=np.float64)
    root = count % n
    shared = (np.arange(count) * 5 + 1).astype(np.int64) if me == root else np.zeros(count, dtype=np.int64)
    inbox = np.empty(count + 1, dtype=np.int16)
    outbox = (np.arange(count + 1) + me).astype(np.int16)  # buffers are kept until the requests complete
    requests = [comm.Irecv(inbox, source=left, tag=count),
                comm.Iallgather(mine, everyone),
                comm.Iallreduce(halves, total, op=MPI.SUM),
                comm.Isend(outbox, dest=right, tag=count),
                comm.Ibcast(shared, root=root)]
    MPI.Request.Waitall(requests)
    if not np.array_equal(everyone, np.concatenate([(np.arange(count) * 3 + r).astype(np.int32) for r in range(n)])):
        wrong.append("Iallgather x %d" % count)
    if not np.array_equal(total, np.full(count, n * n / 2.0)):
        wrong.append("Iallreduce x %d" % count)
    if not np.array_equal(shared, (np.arange(count) * 5 + 1).astype(np.int64)):
        wrong.append("Ibcast x %d from %d" % (count, root))
    if not np.array_equal(inbox, (np.arange(count + 1) + left).astype(np.int16)):
        wrong.append("Irecv beside them x %d" % count)

comm.Barrier()
for w in wrong[:5]:
    print("rank %d: wrong result: %s" % (me, w), file=sys.stderr)
bad = comm.allreduce(len(wrong))  # lower case: pickled objects, which MPI serves
if me == 0:
    levels = {MPI.THREAD_SINGLE: "MPI_THREAD_SINGLE", MPI.THREAD_FUNNELED: "MPI_THREAD_FUNNELED",
              MPI.THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED", MPI.THREAD_MULTIPLE: "MPI_THREAD_MULTIPLE"}
    print("thread level: %s" % levels[MPI.Query_thread()])
    print("mpi4py collectives correct" if bad == 0 else "mpi4py collectives FAILED: %d wrong" % bad)
sys.exit(1 if bad else 0)
