"""CPU data-parallel training with DistributedDataParallel on synthetic data,
the same model, data and seed once over each backend (docs/torch.md):

    torchrun --nproc-per-node 4 -m railcoll.examples.ddp --backends railcoll,gloo --steps 30
    railcoll cluster torchrun -- -m railcoll.examples.ddp --json ddp.json

The default group is railcoll's; gloo runs in a group of its own over the same
ranks (given every rail in GLOO_SOCKET_IFNAME when RAILCOLL_RAILS names
interfaces or when the emulated cluster's rail0,rail1... exist). Prints each
backend's loss curve (rank 0's local loss: the same data on every backend, so
the curves agree within float tolerance) and steps per second.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import railcoll


def make_model(width, depth, inputs, classes):
    torch.manual_seed(0)  # every rank and backend starts from the same parameters
    layers, d = [], inputs
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.ReLU()]
        d = width
    layers.append(nn.Linear(d, classes))
    return nn.Sequential(*layers)


def batch(rank, step, size, inputs, classes):
    """Rank `rank`'s batch of step `step`: random inputs labelled by a fixed
    random linear teacher, so there is something to learn."""
    teacher = torch.randn(inputs, classes, generator=torch.Generator().manual_seed(42))
    x = torch.randn(size, inputs, generator=torch.Generator().manual_seed(1000003 * rank + step))
    return x, (x @ teacher).argmax(1)


def flat_parameters(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def train(group, args, check_every=0, on_check=None):
    """Trains a fresh model over `group`; returns (losses, steps/s). Every
    check_every steps, on_check(model) (e.g. parameters equal on every rank).
    group None: the model alone, no gradient exchange (the compute's own rate)."""
    rank = dist.get_rank()
    model = make_model(args.width, args.depth, args.inputs, args.classes)
    if group is not None:
        model = DDP(model, process_group=group, bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    losses, start = [], None
    for step in range(args.steps):
        if step == args.warmup:
            dist.barrier(group=group)
            start = time.perf_counter()
        x, y = batch(rank, step, args.batch, args.inputs, args.classes)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if check_every and on_check and (step + 1) % check_every == 0:
            on_check(model, step)
    dist.barrier(group=group)
    timed = args.steps - args.warmup
    rate = timed / (time.perf_counter() - start) if start is not None and timed > 0 else float("nan")
    return losses, rate


def gloo_interfaces():
    """GLOO_SOCKET_IFNAME for every rail: the caller's, else RAILCOLL_RAILS when
    it names interfaces, else the emulated cluster's rail0, rail1, ..."""
    if os.environ.get("GLOO_SOCKET_IFNAME"):
        return os.environ["GLOO_SOCKET_IFNAME"]
    rails = [r for r in os.environ.get("RAILCOLL_RAILS", "").split(",") if r]
    if rails and all(os.path.exists("/sys/class/net/" + r) for r in rails):
        return ",".join(rails)
    found = sorted(n for n in os.listdir("/sys/class/net") if n.startswith("rail"))
    return ",".join(found)


def gloo_group():
    ifs = gloo_interfaces()
    if ifs:
        os.environ["GLOO_SOCKET_IFNAME"] = ifs
    return dist.new_group(backend="gloo"), ifs


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="railcoll,gloo",
                   help="comma-separated, in order (railcoll, gloo; none: no gradient exchange, the compute alone)")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--inputs", type=int, default=256)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--json", help="rank 0 writes the results here")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    dist.init_process_group("cpu:railcoll")
    rank = dist.get_rank()
    groups = {}
    for name in args.backends.split(","):
        if name == "railcoll":
            groups[name] = (dist.group.WORLD, "")
        elif name == "gloo":
            groups[name] = gloo_group()
        elif name == "none":
            groups[name] = (None, "")
        else:
            raise SystemExit("unknown backend %r (railcoll, gloo, none)" % name)
    params = sum(p.numel() for p in make_model(args.width, args.depth, args.inputs, args.classes).parameters())
    results = {}
    for name, (group, ifs) in groups.items():
        losses, rate = train(group, args)
        results[name] = {"losses": losses, "steps_per_s": rate, "gloo_socket_ifname": ifs or None}
    if rank == 0:
        print("DDP: %d ranks, %d parameters (%.1f MiB of gradients), batch %d per rank, %d steps (%d warm-up)"
              % (dist.get_world_size(), params, params * 4 / 2**20, args.batch, args.steps, args.warmup))
        for name, r in results.items():
            print("  %-8s %7.2f steps/s   loss %.4f -> %.4f" % (name, r["steps_per_s"], r["losses"][0],
                                                              r["losses"][-1]))
        if "railcoll" in results and "gloo" in results:
            a, b = results["railcoll"], results["gloo"]
            gap = max(abs(x - y) for x, y in zip(a["losses"], b["losses"]))
            print("  railcoll/gloo steps/s: %.2fx; largest loss difference %.2e" %
                  (a["steps_per_s"] / b["steps_per_s"], gap))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"world_size": dist.get_world_size(), "parameters": params, "args": vars(args),
                           "results": results}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
