"""Tensor-parallel inference on CPUs: a small transformer's layers sharded
Megatron-style over the ranks (column-parallel QKV and first MLP layer,
row-parallel output and second MLP layer), so every layer of every decoded
token makes two all-reduces of batch x hidden elements, back to back and
latency-bound; and a sweep of such all-reduces alone, 8 KiB to 32 MiB. Each
over the backends named, taking turns round by round (docs/torch.md,
"Tensor-parallel inference"):

    torchrun --nproc-per-node 4 -m railcoll.examples.tp_decode --backends railcoll,gloo
    torchrun --nproc-per-node 4 -m railcoll.examples.tp_decode --sweep --dtypes bfloat16,float32
    railcoll cluster torchrun -- -m railcoll.examples.tp_decode

Backends: railcoll (the default group), gloo (a group of its own), deepspeed
(DeepSpeed's CPU shared-memory all-reduce, deepspeed.comm.inference_all_reduce,
when `pip install deepspeed` works here and every rank is on one node).
The decoded hidden states are compared with the same model run whole on one
process (float tolerance). Rank 0 prints the table and writes --json.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import railcoll  # noqa: F401  (registers the backend)
from railcoll.examples.ddp import gloo_group


def parse_size(text):
    text = text.strip().upper()
    for suffix, mult in (("K", 1 << 10), ("M", 1 << 20)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * mult)
    return int(text)


class AllReduce:
    """One backend's in-place SUM all-reduce of a tensor, blocking."""

    def __init__(self, name):
        self.name = name
        if name == "railcoll":
            self.group = dist.group.WORLD
        elif name == "gloo":
            self.group, _ = gloo_group()
        elif name == "deepspeed":
            self.ds = deepspeed_comm()
        else:
            raise SystemExit("unknown backend %r (railcoll, gloo, deepspeed)" % name)

    def __call__(self, t):
        if self.name == "deepspeed":
            self.ds.inference_all_reduce(t, op=dist.ReduceOp.SUM)
        else:
            dist.all_reduce(t, group=self.group)


def deepspeed_comm():
    """deepspeed.comm with its CPU shared-memory all-reduce loaded, or SystemExit saying why not."""
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    # Its shared memory is set up only when LOCAL_SIZE (DeepSpeed's launcher
    # sets it) equals the world size; without it inference_all_reduce_
    # crashes (SIGSEGV, deepspeed 0.19.8).
    local = os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("LOCAL_SIZE"))
    if local != os.environ.get("WORLD_SIZE"):
        raise SystemExit("deepspeed: its shared-memory all-reduce serves the ranks of one node (here %s of %s)" % (
            local, os.environ.get("WORLD_SIZE")))
    os.environ.setdefault("LOCAL_SIZE", local)
    try:
        import deepspeed
        import deepspeed.comm as ds_comm
        from deepspeed.accelerator import get_accelerator
    except Exception as e:  # noqa: BLE001  (any import failure is the answer)
        raise SystemExit("deepspeed: cannot import: %s: %s" % (type(e).__name__, e))
    if get_accelerator().device_name() != "cpu":
        raise SystemExit("deepspeed: its accelerator is %s, not cpu" % get_accelerator().device_name())
    ds_comm.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)
    if not (hasattr(torch.ops, "deepspeed") and hasattr(torch.ops.deepspeed, "inference_all_reduce_")):
        raise SystemExit("deepspeed %s: its shared-memory all-reduce (ShareMemCommBuilder) did not load: "
                         "inference_all_reduce would be gloo's" % deepspeed.__version__)
    return ds_comm


class Shard:
    """This rank's part of a small transformer (pre-norm, no bias): heads and
    the MLP's inner columns split over the ranks."""

    def __init__(self, hidden, layers, heads, rank, size, dtype, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.h, self.heads, self.rank, self.size = hidden, heads, rank, size
        self.hd = hidden // heads
        self.local_heads = heads // size
        inner = 4 * hidden
        self.layers = []
        for _ in range(layers):
            full = {"qkv": torch.randn(hidden, 3 * hidden, generator=g) / hidden ** 0.5,
                    "out": torch.randn(hidden, hidden, generator=g) / hidden ** 0.5,
                    "fc1": torch.randn(hidden, inner, generator=g) / hidden ** 0.5,
                    "fc2": torch.randn(inner, hidden, generator=g) / inner ** 0.5}
            self.layers.append(self.shard(full, inner, dtype))

    def shard(self, full, inner, dtype):
        r, s, h = self.rank, self.size, self.h
        cols = lambda w, n: w[:, r * n // s:(r + 1) * n // s]  # noqa: E731
        rows = lambda w, n: w[r * n // s:(r + 1) * n // s, :]  # noqa: E731
        q, k, v = full["qkv"].split(h, dim=1)
        return {"qkv": torch.cat([cols(q, h), cols(k, h), cols(v, h)], dim=1).to(dtype).contiguous(),
                "out": rows(full["out"], h).to(dtype).contiguous(),
                "fc1": cols(full["fc1"], inner).to(dtype).contiguous(),
                "fc2": rows(full["fc2"], inner).to(dtype).contiguous()}

    def decode(self, x, steps, all_reduce):
        """`steps` tokens from hidden states x [batch, hidden]: each step's
        output is the next step's input (no vocabulary: the all-reduces and
        matmuls of a decode step are what is measured). Returns the last x."""
        b = x.shape[0]
        cache = [([], []) for _ in self.layers]
        for _ in range(steps):
            for li, w in enumerate(self.layers):
                a = torch.nn.functional.layer_norm(x, (self.h,))
                q, k, v = (a @ w["qkv"]).split(self.local_heads * self.hd, dim=1)
                ks, vs = cache[li]
                ks.append(k.view(b, self.local_heads, self.hd))
                vs.append(v.view(b, self.local_heads, self.hd))
                kk, vv = torch.stack(ks, 2), torch.stack(vs, 2)  # [b, heads, t, hd]
                att = torch.softmax(torch.einsum("bhd,bhtd->bht", q.view(b, self.local_heads, self.hd), kk)
                                    / self.hd ** 0.5, dim=-1)
                o = torch.einsum("bht,bhtd->bhd", att, vv).reshape(b, -1) @ w["out"]
                all_reduce(o)
                x = x + o
                m = torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (self.h,)) @ w["fc1"]) @ w["fc2"]
                all_reduce(m)
                x = x + m
        return x


def sweep(backends, sizes, dtypes, rounds, budget, rank):
    """Back-to-back all-reduces of each size: microseconds per all-reduce on
    rank 0 (calls timed together, from a barrier), median of the rounds."""
    rows = []
    for dtype in dtypes:
        for nbytes in sizes:
            n = max(1, nbytes // torch.tensor([], dtype=dtype).element_size())
            calls = max(5, min(400, budget // nbytes))
            t = torch.ones(n, dtype=dtype)
            per = {b.name: [] for b in backends}
            for _ in range(rounds):
                for b in backends:
                    b(t)  # warm: first use of this size
                    dist.barrier()
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        b(t)
                    per[b.name].append((time.perf_counter() - t0) / calls * 1e6)
                    t.fill_(1)
            row = {"dtype": str(dtype).replace("torch.", ""), "bytes": nbytes, "calls": calls,
                   "us": {k: statistics.median(v) for k, v in per.items()}, "rounds_us": per}
            rows.append(row)
            if rank == 0:
                us = row["us"]
                ratios = "  ".join("%s/railcoll %.2fx" % (k, us[k] / us["railcoll"]) for k in us
                                   if k != "railcoll" and "railcoll" in us)
                print("%-9s %10d  %s  %s" % (row["dtype"], nbytes,
                                             "  ".join("%s %9.1f us" % (k, v) for k, v in us.items()), ratios),
                      flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="railcoll,gloo", help="comma-separated: railcoll, gloo, deepspeed")
    p.add_argument("--sweep", action="store_true", help="the all-reduce sweep instead of the decode loop")
    p.add_argument("--sizes", default="8K,32K,128K,256K,1M,4M,16M,32M", help="sweep: bytes per all-reduce")
    p.add_argument("--dtypes", default="bfloat16,float32")
    p.add_argument("--rounds", type=int, default=3, help="turns each backend takes")
    p.add_argument("--budget", default="64M", help="sweep: about this many bytes all-reduced per size and round")
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--batch", type=int, default=2, help="tokens decoded at once (2 x 2048 bfloat16: 8 KiB all-reduces)")
    p.add_argument("--tokens", type=int, default=32, help="decoded per round")
    p.add_argument("--json", help="rank 0 writes the results here")
    args = p.parse_args(argv)
    dist.init_process_group("cpu:railcoll")
    rank, size = dist.get_rank(), dist.get_world_size()
    backends = [AllReduce(b) for b in args.backends.split(",")]
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    out = {"ranks": size, "torch": torch.__version__, "threads": torch.get_num_threads(), "backends": args.backends}
    if rank == 0:
        print("tp_decode: %d ranks, torch %s, %d threads per rank, load average %s" % (
            size, torch.__version__, torch.get_num_threads(), " ".join("%.1f" % v for v in os.getloadavg())),
            flush=True)
    if args.sweep:
        out["sweep"] = sweep(backends, [parse_size(s) for s in args.sizes.split(",")], dtypes, args.rounds,
                             parse_size(args.budget), rank)
    else:
        if args.heads % size or args.hidden % args.heads:
            raise SystemExit("the heads must split evenly over %d ranks" % size)
        out["decode"] = []
        for dtype in dtypes:
            model = Shard(args.hidden, args.layers, args.heads, rank, size, dtype)
            x0 = torch.randn(args.batch, args.hidden, generator=torch.Generator().manual_seed(1)).to(dtype)
            ref = Shard(args.hidden, args.layers, args.heads, 0, 1, torch.float32).decode(
                x0.float(), 2, lambda t: None)  # the whole model on one process
            tps = {b.name: [] for b in backends}
            for r in range(args.rounds):
                for b in backends:
                    first = model.decode(x0.clone(), 2, b)
                    err = (first.float() - ref).abs().max().item() / max(1.0, ref.abs().max().item())
                    tol = 0.05 if dtype in (torch.bfloat16, torch.float16) else 1e-3
                    if err > tol:
                        raise SystemExit("rank %d: %s %s: decoded states differ from one process by %.3g" % (
                            rank, b.name, dtype, err))
                    dist.barrier()
                    t0 = time.perf_counter()
                    model.decode(x0.clone(), args.tokens, b)
                    tps[b.name].append(args.tokens / (time.perf_counter() - t0))
            allreduce_bytes = args.batch * args.hidden * torch.tensor([], dtype=dtype).element_size()
            row = {"dtype": str(dtype).replace("torch.", ""), "hidden": args.hidden, "layers": args.layers,
                   "batch": args.batch, "allreduce_bytes": allreduce_bytes,
                   "tokens_per_s": {k: statistics.median(v) for k, v in tps.items()}, "rounds": tps}
            out["decode"].append(row)
            if rank == 0:
                t = row["tokens_per_s"]
                print("decode %-9s hidden %d x %d layers, batch %d (all-reduces of %d B): %s%s" % (
                    row["dtype"], args.hidden, args.layers, args.batch, allreduce_bytes,
                    "  ".join("%s %.1f tokens/s" % (k, v) for k, v in t.items()),
                    "".join("  railcoll/%s %.2fx" % (k, t["railcoll"] / t[k]) for k in t
                            if k != "railcoll" and "railcoll" in t)), flush=True)
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
