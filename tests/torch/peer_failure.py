"""A rank dies in the middle of a job: every other rank's next operation must
raise an exception carrying railcoll's message, which names the dead rank,
within the group's timeout, never hang. Started by tests/torch/run_tests.sh without torchrun (whose agent
would end the survivors itself): RANK, WORLD_SIZE, MASTER_ADDR/PORT by hand.
The dying rank exits with status 17; a survivor prints its exception."""
import datetime
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

TIMEOUT_S = 30


def main():
    lib.pretend_nodes()
    victim = int(os.environ.get("RAILCOLL_TEST_VICTIM", "1"))
    dist.init_process_group("railcoll", timeout=datetime.timedelta(seconds=TIMEOUT_S))
    rank = dist.get_rank()
    t = torch.ones(1 << 16)
    dist.all_reduce(t)
    dist.barrier()
    if rank == victim:
        os._exit(17)
    start = time.time()
    try:
        # Outstanding Works queued behind the failing one fail too.
        works = [dist.all_reduce(torch.ones(1 << 16), async_op=True) for _ in range(4)]
        for w in works:
            w.wait()
        print("rank %d: FAILED: the operations after rank %d died completed" % (rank, victim), flush=True)
        os._exit(1)
    except Exception as e:  # noqa: BLE001 (what it is is part of the check)
        took = time.time() - start
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        # railcoll's words, naming the rank that died (not a bare "timed out").
        ok = "railcoll" in str(e) and ("rank %d " % victim) in str(e) and took < TIMEOUT_S + 10
        line = "rank %d: %s after %.1f s: %s: %s\n" % (rank, "exception" if ok else "FAILED: wrong exception",
                                                      took, type(e).__name__, msg)
        os.write(1, line.encode())  # one write: the survivors' lines must not interleave

        # No destroy_process_group: the communicator is broken; leave at once.
        os._exit(0 if ok else 1)


if __name__ == "__main__":
    main()
