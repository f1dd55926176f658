"""railcoll's torch.distributed backend for CPU tensors (docs/torch.md).

Importing this package registers the backend "railcoll" for CPU tensors:

    import railcoll, torch.distributed as dist
    dist.init_process_group("railcoll")            # or "cpu:railcoll,cuda:nccl"

The communicator of each process group is set up through the group's Store;
rails and the rest of the configuration come from RAILCOLL_* as for the C API.
"""
import torch
import torch.distributed as dist

from ._build import TORCH_VERSION as _BUILT_FOR

# A C++ extension runs only with the torch it was compiled against; another one
# fails in the loader with a missing symbol, or worse, loads.
if torch.__version__ != _BUILT_FOR:
    raise ImportError("railcoll was built against torch %s, but this is torch %s: rebuild it "
                      "(pip install ./python, or make build)" % (_BUILT_FOR, torch.__version__))

from . import _C  # noqa: E402  (after the check)

__all__ = ["BACKEND", "features", "library_version", "capi_allreduce_us"]

BACKEND = "railcoll"


def _create_backend(backend_opts, pg_options):
    # Extended API: the Store (prefixed for this group), the group's own rank and
    # size, its timeout and its name (unique per group, so the Store keys of two
    # groups never meet).
    return _C.create_backend(backend_opts.store, backend_opts.group_rank, backend_opts.group_size,
                             backend_opts.timeout.total_seconds(), str(backend_opts.group_id))


def features():
    """The optional C API parts (collectives, datatypes, operators) this build uses."""
    return list(_C.features())


def library_version():
    """The version of the librailcoll this extension is linked with."""
    return _C.library_version()


def capi_allreduce_us(tensor, iters=100, group=None, nonblocking=False):
    """Mean microseconds of railcoll_allreduce itself (SUM, in place) on the group's
    communicator, called on this thread: the C API's cost without the backend's
    Work, future and staging. nonblocking: railcoll_iallreduce + railcoll_wait,
    as the backend calls it. Every rank of the group calls it."""
    pg = group if group is not None else dist.group.WORLD
    backend = pg._get_backend(torch.device("cpu"))
    return _C.capi_allreduce_us(backend, tensor, iters, nonblocking)


if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create_backend, extended_api=True, devices=["cpu"])
