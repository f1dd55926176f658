"""Sharded data-parallel training (FSDP2, torch.distributed.fsdp.fully_shard)
of a small transformer on CPUs, on synthetic data, once over each backend
named, each from the same initial parameters (docs/torch.md, "Sharded
training"):

    torchrun --nproc-per-node 4 -m railcoll.examples.fsdp --backends railcoll,gloo,one
    railcoll cluster torchrun -- -m railcoll.examples.fsdp

Each rank trains on its share of every global batch; `one` trains the whole
model on the whole batch on this process alone (what FSDP's steps must
match). Prints each backend's losses step by step and steps per second.
"""
import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard

import railcoll  # noqa: F401  (registers the backend)
from railcoll.examples.ddp import gloo_group


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.att = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        a = self.n1(x)
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1)
        x = x + self.att(a, a, a, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.n2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, d, heads, layers, seq):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.zeros(seq, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.emb(tokens) + self.pos[: tokens.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))


def make_model(args):
    torch.manual_seed(0)  # every rank and backend starts from the same parameters
    return TinyLM(args.vocab, args.dim, args.heads, args.layers, args.seq)


def global_batch(step, args):
    """Step `step`'s whole batch: sequences of a fixed random rule (each token
    a function of the one before), so the loss goes down."""
    g = torch.Generator().manual_seed(1000 + step)
    first = torch.randint(args.vocab, (args.batch, 1), generator=g)
    seq = [first]
    for _ in range(args.seq):
        seq.append((seq[-1] * 7 + 3) % args.vocab)
    s = torch.cat(seq, 1)
    return s[:, :-1], s[:, 1:]


def train(group, args, rank, size):
    """Trains over `group` (None: the whole batch on this process); returns
    (losses of the global batch per step, steps/s after the warm-up)."""
    model = make_model(args)
    if group is not None:
        mesh = DeviceMesh.from_group(group, "cpu")
        for b in model.blocks:
            fully_shard(b, mesh=mesh)
        fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    losses, start = [], None
    per = args.batch // (size if group is not None else 1)
    for step in range(args.steps):
        if step == args.warmup:
            start = time.perf_counter()
        x, y = global_batch(step, args)
        if group is not None:
            x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        if group is not None:  # the global batch's loss: the mean of the ranks' equal shares
            dist.all_reduce(mean, group=group)
            mean /= size
        losses.append(mean.item())
    rate = (args.steps - args.warmup) / (time.perf_counter() - start) if start else float("nan")
    return losses, rate


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="railcoll,gloo,one", help="comma-separated: railcoll, gloo, one")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=16, help="sequences per global batch (divisible by the ranks)")
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--json", help="rank 0 writes the results here")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    dist.init_process_group("cpu:railcoll")
    rank, size = dist.get_rank(), dist.get_world_size()
    if args.batch % size:
        raise SystemExit("--batch %d does not split over %d ranks" % (args.batch, size))
    results, groups = {}, {}
    for b in args.backends.split(","):  # a backend named twice runs twice (alternate them: railcoll,gloo,railcoll,gloo)
        if b not in groups:
            groups[b] = {"railcoll": lambda: dist.group.WORLD, "gloo": lambda: gloo_group()[0],
                         "one": lambda: None}[b]()
        losses, rate = train(groups[b], args, rank, size)
        r = results.setdefault(b, {"losses": losses, "runs_steps_per_s": []})
        r["runs_steps_per_s"].append(rate)
        r["steps_per_s"] = statistics.median(r["runs_steps_per_s"])
        if rank == 0:
            print("%-8s %.2f steps/s, loss %s" % (b, rate, " ".join("%.4f" % v for v in losses)), flush=True)
    if rank == 0:
        if "one" in results:
            for b in results:
                if b != "one":
                    d = max(abs(a - o) for a, o in zip(results[b]["losses"], results["one"]["losses"]))
                    print("%s against one process: largest loss difference %.2e" % (b, d), flush=True)
        if "railcoll" in results and "gloo" in results:
            print("railcoll/gloo steps per second (medians): %.2fx" % (
                results["railcoll"]["steps_per_s"] / results["gloo"]["steps_per_s"]), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"ranks": size, "args": vars(args), "results": results}, f, indent=1)
    dist.destroy_process_group()
    return results


if __name__ == "__main__":
    main()
