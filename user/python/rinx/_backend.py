# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The torch.distributed backend "rinx" (registered by `import rinx.torch`).

    import rinx.torch
    dist.init_process_group("rinx")          # torchrun: RINX_SPEC is enough

all_reduce of a CPU float32 or int32 tensor with SUM (or AVG, float32) runs
on rinx; every other collective, dtype, device and op goes to a Gloo group
the backend opens on the same store. The job id and token come from
RINX_JOB / RINX_TOKEN or, when those are not set, rank 0 draws them at
random and hands them to the others through the rendezvous store, so every
rank of one process group agrees on them and two process groups do not
share a job. A group whose RINX_JOB is open in the process already (a
rinx.Comm, an earlier group) draws its id the same way: a node runs one
communicator of a job.

Two transports, one group: each keeps the order of its own collectives, and
barrier() first waits for the rinx allreduces already started, so a barrier
still means "everything before it is done", as Gloo's does.
"""
import os
import struct
import sys
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroupGloo, \
    _create_work_from_future

from . import Comm, _config_error, _env_int, _read_spec, _open_comms

try:
    # pybind11 trampoline: a Python subclass's wait/get_future are the
    # ones C++ callers (DDP's reducer) use
    from torch._C._distributed_c10d import Work as _WorkBase
except ImportError:  # pragma: no cover (torch without distributed)
    _WorkBase = object

HAS_AVG = hasattr(dist.ReduceOp, "AVG")
_SUM = dist.ReduceOp.SUM
_AVG = dist.ReduceOp.AVG if HAS_AVG else None

# store keys, under the process group's own prefix
_KEY_IDS = "rinx/ids"
_KEY_MODE = "rinx/mode/%d"

# collectives the backend hands to its Gloo group unchanged
_DELEGATED = (
    "broadcast", "allgather", "_allgather_base", "allgather_coalesced",
    "allreduce_coalesced", "gather", "scatter", "reduce", "reduce_scatter",
    "_reduce_scatter_base", "alltoall", "alltoall_base", "send", "recv",
    "recv_anysource", "monitored_barrier",
)


class Work(_WorkBase):
    """A collective the backend runs on rinx: a torch Future whose value is
    the list of tensors, as Gloo's works have."""

    def __init__(self, fut):
        super().__init__()
        self._fut = fut

    def wait(self, timeout=None):
        # the rinx.Error that ended the allreduce is raised here
        self._fut.wait()
        return True

    def get_future(self):
        return self._fut

    def is_completed(self):
        return self._fut.done()

    def is_success(self):
        if not self._fut.done():
            return False
        try:
            self._fut.value()
        except Exception:
            return False
        return True

    def exception(self):
        if not self._fut.done():
            return None
        try:
            self._fut.value()
        except Exception as e:
            return e
        return None

    def result(self):
        return self._fut.wait()

    def synchronize(self):
        pass


# Frames that run the autograd engine: DDP's reducer calls allreduce from
# C++ inside them.
_AUTOGRAD_CODE = (torch.autograd.backward.__code__,
                  torch.autograd.grad.__code__)


def _work(fut, frame):
    """The Work for a rinx allreduce whose result `fut` will carry.

    This torch's Work trampoline forwards wait() to a Python subclass but
    not getFuture(), which DDP's reducer calls from C++. The C++ work made
    from a future has a getFuture() but a wait() that does not raise, and
    the future must carry a C++ error (a callback that raises) for its
    value() to. So DDP's calls, which come from inside the autograd engine,
    get that one; every call from Python gets the Python Work, whose wait()
    and get_future() raise the rinx.Error itself."""
    if frame is not None and frame.f_code in _AUTOGRAD_CODE:
        return _create_work_from_future(fut.then(lambda f: f.wait()))
    return Work(fut)


def _agree_ids(store, rank, timeout):
    """(job, token) every rank of this process group uses: RINX_JOB and
    RINX_TOKEN where set (RINX_JOB unless a communicator of it is open in
    this process), else rank 0's random draw through the store."""
    job = _env_int("RINX_JOB", False)
    token = _env_int("RINX_TOKEN", False)
    # RINX_JOB names one job, and a node runs one communicator of a job:
    # where one of it is open in this process already (Comm.from_env, an
    # earlier rinx group), this group draws an id of its own as without
    # RINX_JOB (every rank makes its groups in the same order, so all
    # ranks decide alike)
    if job is not None and any(c.job == job and not c.closed
                               for c in list(_open_comms)):
        job = None
    if job is not None and token is not None:
        return job, token
    if rank == 0:
        j, t = struct.unpack("<IQ", os.urandom(12))
        # job 0 means "none" to librinx
        j = j or 1
        store.set(_KEY_IDS, "%d %d" % (job if job is not None else j,
                                      token if token is not None else t))
    try:
        store.wait([_KEY_IDS], timeout)
    except RuntimeError as e:
        raise _config_error(
            "rinx backend", "rank %d: rank 0 did not publish the job "
            "id in the rendezvous store within %s (%s)"
            % (rank, timeout, e)) from None
    j, t = (int(w) for w in store.get(_KEY_IDS).decode().split())
    return j, t


def _gloo_group(store, rank, size, timeout, spec, spec_hosts):
    """The Gloo group for everything but rinx's allreduces, on its own
    prefix of the same store. Without GLOO_SOCKET_IFNAME it binds to this
    rank's address in the spec: a host's name need not resolve to an
    address the other ranks reach (a testbed's namespaces)."""
    store = dist.PrefixStore("rinx-gloo/", store)
    ip = spec_hosts.get(rank) if spec_hosts else None
    if os.environ.get("GLOO_SOCKET_IFNAME") or not ip:
        return ProcessGroupGloo(store, rank, size, timeout=timeout)
    opts = ProcessGroupGloo._Options()
    opts._timeout = timeout
    opts._devices = [ProcessGroupGloo.create_device(hostname=ip)]
    return ProcessGroupGloo(store, rank, size, opts)


def _spec_addresses(spec):
    """rank -> ip= of the spec's host records (those that have both)."""
    out = {}
    try:
        with open(spec) as f:
            for line in f:
                w = line.split("#", 1)[0].split()
                if not w or w[0] != "host":
                    continue
                kv = dict(x.split("=", 1) for x in w[1:] if "=" in x)
                if "rank" in kv and "ip" in kv:
                    out[int(kv["rank"])] = kv["ip"].split("/")[0]
    except (OSError, ValueError):
        pass
    return out


class ProcessGroupRinx(dist.ProcessGroup):
    """torch.distributed process group: allreduce on rinx, the rest on
    Gloo. Made by init_process_group("rinx") / new_group(backend="rinx");
    `comm` is its rinx.Comm (None for a group that is not every host of
    the spec: such a group runs everything on Gloo)."""

    def __init__(self, store, rank, size, timeout, global_ranks=None):
        super().__init__(rank, size)
        spec = os.environ.get("RINX_SPEC")
        if not spec:
            raise _config_error(
                "rinx backend", "environment variable RINX_SPEC "
                "(the cluster spec file) is not set")
        hosts = _read_spec(spec)[0]
        whole = not global_ranks or list(global_ranks) == list(range(hosts))
        if whole and size != hosts:
            raise _config_error(
                "rinx backend", "world size %d but spec %s has %d "
                "hosts: rinx runs one rank per host of the spec"
                % (size, spec, hosts))
        self._gloo = _gloo_group(store, rank, size, timeout, spec,
                                 _spec_addresses(spec) if whole else None)
        self.comm = None
        self._lock = threading.Lock()
        if whole:
            job, token = _agree_ids(store, rank, timeout)
            self.comm = Comm(
                spec, rank, job=job, token=token,
                plan=os.environ.get("RINX_PLAN") or None,
                timeout_ms=_env_int("RINX_TIMEOUT_MS", False, 0),
                world_size=size)
        # the stats of what went where, for tests and benchmarks
        self.counts = {"rinx": 0, "gloo_allreduce": 0}

    def getBackendName(self):
        return "rinx"

    def __repr__(self):
        return "<rinx ProcessGroup rank %d of %d, %r>" % (
            self.rank(), self.size(), self.comm)

    def _on_rinx(self, tensors, op):
        """True when this allreduce is rinx's. Every rank decides alike
        from what all ranks share: the op, the dtype and the device."""
        if self.comm is None or len(tensors) != 1:
            return False
        t = tensors[0]
        if (t.device.type != "cpu" or t.layout != torch.strided or
            t.dtype not in (torch.float32, torch.int32)):
            return False
        return op == _SUM or (HAS_AVG and op == _AVG and
                              t.dtype == torch.float32)

    def allreduce(self, tensors, opts=None):
        if opts is None:
            opts = dist.AllreduceOptions()
        op = opts.reduceOp
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        if not self._on_rinx(tensors, op):
            if HAS_AVG and op == _AVG:
                raise ValueError(
                    "rinx backend: ReduceOp.AVG needs one CPU float32 "
                    "tensor (got %s); the Gloo group has no AVG"
                    % ", ".join("%s %s" % (t.dtype, t.device)
                                for t in tensors))
            self.counts["gloo_allreduce"] += 1
            return self._gloo.allreduce(tensors, opts)
        self.counts["rinx"] += 1
        t = tensors[0]
        from .torch import _pipe
        divide = HAS_AVG and op == _AVG
        comm = self.comm

        def run():
            # the sum is element by element: a contiguous copy of a
            # strided tensor reduces the same values
            buf = t if t.is_contiguous() else t.contiguous()
            comm.allreduce(buf)
            if divide:
                buf.div_(comm.size)
            if buf is not t:
                t.copy_(buf)
            return [t]

        return _work(_pipe(comm).submit_fn(run), sys._getframe(1))

    def barrier(self, opts=None):
        if self.comm is not None:
            from .torch import _pipe
            # the rinx allreduces started before the barrier end first
            _pipe(self.comm).submit_fn(lambda: None).wait()
        if opts is None:
            return self._gloo.barrier()
        return self._gloo.barrier(opts)

    def close(self):
        """Leaves the rinx job (the communicator closes; it does at exit
        anyway)."""
        if self.comm is not None:
            self.comm.close()


def _delegate(name):
    def f(self, *args):
        return getattr(self._gloo, name)(*args)
    f.__name__ = name
    f.__doc__ = "Runs on the backend's Gloo group."
    return f


for _n in _DELEGATED:
    if hasattr(ProcessGroupGloo, _n):
        setattr(ProcessGroupRinx, _n, _delegate(_n))


def _create(opts, pg_options=None):
    """Backend.register_backend's extended creator: it sees which ranks
    of the world the new group has."""
    return ProcessGroupRinx(opts.store, opts.group_rank, opts.group_size,
                            opts.timeout, opts.global_ranks_in_group)


def _create_plain(store, rank, size, timeout):
    return ProcessGroupRinx(store, rank, size, timeout)


def register():
    """Makes "rinx" a torch.distributed backend (idempotent)."""
    if "RINX" in dist.Backend._plugins:
        return
    try:
        dist.Backend.register_backend("rinx", _create, extended_api=True)
    except TypeError:
        # a torch whose register_backend takes no extended_api
        dist.Backend.register_backend("rinx", _create_plain)


__all__ = ["ProcessGroupRinx", "Work", "register", "HAS_AVG"]
