"""mpi4py through the MPI interposition library (docs/mpi.md, "mpi4py"):
Allgather, Allreduce, Bcast and Barrier on numpy arrays, every result checked.
Run with Debian's interpreter (/usr/bin/python3, whose python3-mpi4py is built
on Open MPI) under mpirun, with lib/librailcoll_mpi.so preloaded. Prints
"mpi4py collectives correct" from rank 0 when every rank got every result.

mpi4py asks for MPI_THREAD_MULTIPLE by default, under which the library hands
every call to MPI (calls of several threads could overlap); a program that
makes its MPI calls from one thread at a time says so before importing MPI.
"""
import sys

import mpi4py

mpi4py.rc.thread_level = "serialized"
from mpi4py import MPI  # noqa: E402
import numpy as np  # noqa: E402

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

    inplace = np.full(count, me + 1, dtype=np.float64)
    comm.Allreduce(MPI.IN_PLACE, inplace, op=MPI.SUM)
    if not np.array_equal(inplace, np.full(count, n * (n + 1) / 2)):
        wrong.append("Allreduce in place x %d" % count)

comm.Barrier()
for w in wrong[:5]:
    print("rank %d: wrong result: %s" % (me, w), file=sys.stderr)
bad = comm.allreduce(len(wrong))  # lower case: pickled objects, which MPI serves
if me == 0:
    print("mpi4py collectives correct" if bad == 0 else "mpi4py collectives FAILED: %d wrong" % bad)
sys.exit(1 if bad else 0)
