"""Shared by the torch backend's test programs (tests/torch/*.py)."""
import os
import sys
import time

import torch
import torch.distributed as dist

import railcoll  # noqa: F401  (registers the backend)


def pretend_nodes():
    """RAILCOLL_TEST_PPN=P: ranks r*P..r*P+P-1 pretend to be one node (as
    `railcoll run --ppn` does), so a local job also uses the rails."""
    ppn = int(os.environ.get("RAILCOLL_TEST_PPN", "0"))
    if ppn > 0:
        os.environ["RAILCOLL_NODE"] = "pretend%d" % (int(os.environ["RANK"]) // ppn)


class Checker:
    """Counts checks; a failed one is printed with the rank and ends the run."""

    def __init__(self, rank):
        self.rank, self.count, self.t0 = rank, 0, time.time()

    def ok(self, cond, what):
        self.count += 1
        if not cond:
            print("rank %d: FAILED: %s" % (self.rank, what), flush=True)
            sys.exit(1)

    def equal(self, got, want, what, atol=0.0, rtol=0.0):
        same = got.shape == want.shape and got.dtype == want.dtype
        if same:
            if got.dtype.is_floating_point:
                same = torch.allclose(got.double(), want.double(), atol=atol, rtol=rtol)
            else:
                same = torch.equal(got, want)
        if not same:
            print("rank %d: %s: got %s, want %s" % (self.rank, what, got.flatten()[:8], want.flatten()[:8]),
                  flush=True)
        self.ok(same, what)

    def raises(self, fn, needles, what):
        """fn() must raise an exception whose text holds every needle."""
        try:
            fn()
        except Exception as e:  # the backend's errors are RuntimeError subclasses
            text = str(e)
            good = all(n in text for n in needles)
            if not good:
                print("rank %d: %s: message %r lacks %r" % (self.rank, what, text, needles), flush=True)
            self.ok(good, what)
            return
        self.ok(False, what + " (no exception)")
