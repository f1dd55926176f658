"""DDP over the railcoll backend for a few steps: after every step the
parameters are identical on every rank (compared through a gloo group), and
the loss curve matches the same training over gloo within float tolerance.
Run under torchrun (tests/torch/run_tests.sh)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from railcoll.examples import ddp  # noqa: E402


def main():
    lib.pretend_nodes()
    dist.init_process_group("cpu:railcoll")
    rank, size = dist.get_rank(), dist.get_world_size()
    c = lib.Checker(rank)
    gloo, _ = ddp.gloo_group()  # GLOO_SOCKET_IFNAME: the rails (a cluster node's hostname resolves to nothing)
    args = ddp.parser().parse_args(["--steps", "6", "--warmup", "1", "--width", "64", "--depth", "2",
                                    "--inputs", "32", "--batch", "32", "--bucket-mb", "0.01", "--lr", "0.3"])

    def same_everywhere(model, step):
        mine = ddp.flat_parameters(model)
        every = torch.empty(size * mine.numel())
        dist.all_gather_into_tensor(every, mine, group=gloo)
        for r in range(size):
            c.ok(torch.equal(every[r * mine.numel():(r + 1) * mine.numel()], mine),
                 "parameters after step %d equal to rank %d's" % (step, r))

    rc_losses, _ = ddp.train(dist.group.WORLD, args, check_every=1, on_check=same_everywhere)
    gloo_losses, _ = ddp.train(gloo, args)
    for step, (a, b) in enumerate(zip(rc_losses, gloo_losses)):
        c.ok(abs(a - b) <= 1e-5 * max(1.0, abs(b)), "loss of step %d: railcoll %.7f, gloo %.7f" % (step, a, b))
    c.ok(rc_losses[-1] < rc_losses[0] or size == 1, "the loss went down (%.4f -> %.4f)" % (rc_losses[0], rc_losses[-1]))
    dist.destroy_process_group()
    if rank == 0:
        print("torch ddp: %d checks passed on %d ranks" % (c.count, size), flush=True)


if __name__ == "__main__":
    main()
