"""FSDP2 (fully_shard) over the railcoll backend: a small transformer made
here trains for a few steps with the same losses, step by step, as the whole
model trained on the whole batch by one process (float tolerance), and the
loss goes down. Run under torchrun (tests/torch/run_tests.sh)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

import torch.distributed as dist  # noqa: E402

from railcoll.examples import fsdp  # noqa: E402


def main():
    lib.pretend_nodes()
    dist.init_process_group("cpu:railcoll")
    rank, size = dist.get_rank(), dist.get_world_size()
    c = lib.Checker(rank)
    args = fsdp.parser().parse_args(["--steps", "6", "--warmup", "1", "--dim", "64", "--heads", "4", "--layers", "2",
                                     "--seq", "16", "--vocab", "128", "--batch", str(2 * size)])
    sharded, _ = fsdp.train(dist.group.WORLD, args, rank, size)
    whole, _ = fsdp.train(None, args, rank, size)
    for step, (a, b) in enumerate(zip(sharded, whole)):
        c.ok(abs(a - b) <= 1e-4 * max(1.0, abs(b)), "loss of step %d: FSDP on railcoll %.6f, one process %.6f" % (
            step, a, b))
    c.ok(sharded[-1] < sharded[0], "the loss went down (%.4f -> %.4f)" % (sharded[0], sharded[-1]))
    dist.destroy_process_group()
    if rank == 0:
        print("torch fsdp: %d checks passed on %d ranks" % (c.count, size), flush=True)


if __name__ == "__main__":
    main()
