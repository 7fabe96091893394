# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""rinx: allreduce for data-parallel training, from Python.

    import rinx
    with rinx.Comm.from_env() as comm:       # RANK, WORLD_SIZE, RINX_SPEC, ...
        comm.allreduce(grad)                 # in place, float32 or int32
        req = comm.start(other)              # asynchronous
        ...
        req.wait()

Tensors are numpy arrays or torch tensors: contiguous, in host memory,
float32 or int32. librinx works on their memory directly; nothing is copied
in Python. `rinx.torch.allreduce_hook` is a DistributedDataParallel
communication hook. docs/python.md has the details.
"""
import atexit
import ctypes
import errno as _errno
import os
import threading
import weakref

from . import _lib

__all__ = [
    "Comm", "Request", "Error", "TimeoutError", "MismatchError",
    "BusyError", "ConfigError", "ClosedError", "f32_bound", "BLOCK_VALUES",
    "PLANS",
]

# values per block on a network of MTU 3,154 and up: the unit of float32
# scaling (rinx_f32_bound's amax is taken over one block of this many
# elements); a communicator's own is Comm.block_values (fewer on a smaller
# MTU)
BLOCK_VALUES = 768

# plans librinx runs (rinx_comm_opts.plan); "ps" and "ps-ina" also take a
# server count, "ps:2"
PLANS = ("ring", "rina", "ps", "ps-ina", "har", "tree", "dbtree")

_lib_handle = _lib.load()

# Communicators still open. A process that exits without closing one
# (sys.exit, an uncaught exception) would leave its job installed on the
# node, and the job's slot busy for the next job: close them at exit.
_open_comms = weakref.WeakSet()


@atexit.register
def _close_all():
    for c in list(_open_comms):
        try:
            c.close()
        except Exception:
            pass


# ---- errors ----

class Error(Exception):
    """A librinx call failed. `errno` is the positive errno, `text` the
    library's own explanation (rinx_comm_error), `op` the call."""

    def __init__(self, op, err, text):
        self.op = op
        self.errno = err
        self.text = text
        name = _errno.errorcode.get(err, "errno %d" % err)
        self.message = "%s: %s (%s)" % (op, text or os.strerror(err), name)
        super().__init__(self.message)

    def __str__(self):
        # OSError (TimeoutError's base) would format its own args
        return self.message

    # OSError parses its constructor arguments itself
    def __new__(cls, op, err, text):
        return super().__new__(cls, op)


class TimeoutError(Error, TimeoutError):  # noqa: A001 (a builtin's subclass)
    """-ETIMEDOUT: a peer did not open, did not answer or is dead; the text
    names the ranks that were missing."""


class MismatchError(Error):
    """-EMSGSIZE: another rank reduces a tensor of a different size or
    type in the same collective."""


class BusyError(Error):
    """-EBUSY: an allreduce is already in flight on this communicator, or
    every job slot of a node is held by other jobs (the message names
    them)."""


class ConfigError(Error, ValueError):
    """Bad options, a bad spec, or an environment that does not match it."""


class ClosedError(Error, ValueError):
    """The communicator or request was closed or cancelled."""


_BY_ERRNO = {
    _errno.ETIMEDOUT: TimeoutError,
    _errno.EMSGSIZE: MismatchError,
    _errno.EBUSY: BusyError,
    _errno.EINVAL: ConfigError,
    _errno.ENOENT: ConfigError,
}


def _raise(op, ret, text):
    err = -ret
    raise _BY_ERRNO.get(err, Error)(op, err, text)


def _config_error(op, text):
    return ConfigError(op, _errno.EINVAL, text)


def f32_bound(nranks, amax):
    """Largest |result - exact sum| of a float32 element reduced over
    `nranks` ranks, when `amax` is the largest |input| of its block
    (BLOCK_VALUES elements) on any rank (rinx_f32_bound)."""
    return _lib_handle.rinx_f32_bound(int(nranks), float(amax))


# ---- buffers ----

def _buffer(x, op):
    """(address, count, dtype) of a tensor librinx may reduce in place, or
    TypeError / ValueError saying what is wrong with it."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        return _torch_buffer(x, op)
    if mod == "numpy":
        return _numpy_buffer(x, op)
    raise TypeError("%s: expected a numpy array or a torch tensor, got %s"
                    % (op, type(x).__qualname__))


def _numpy_buffer(x, op):
    import numpy as np

    if not isinstance(x, np.ndarray):
        raise TypeError("%s: expected a numpy array or a torch tensor, got "
                        "numpy %s" % (op, type(x).__qualname__))
    if x.dtype == np.float32:
        dt = _lib.RINX_FLOAT32
    elif x.dtype == np.int32:
        dt = _lib.RINX_INT32
    else:
        raise TypeError("%s: numpy array of dtype %s: rinx reduces float32 "
                        "and int32 (native byte order)" % (op, x.dtype))
    # the sum is element by element: any single block of memory will do
    if not (x.flags.c_contiguous or x.flags.f_contiguous):
        raise ValueError("%s: numpy array is not contiguous (strides %s): "
                         "reduce np.ascontiguousarray(x) and copy back"
                         % (op, x.strides))
    if not x.flags.writeable:
        raise ValueError("%s: numpy array is read-only: the result is "
                         "written in place" % op)
    return x.ctypes.data, x.size, dt


def _torch_buffer(x, op):
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError("%s: expected a numpy array or a torch tensor, got "
                        "torch %s" % (op, type(x).__qualname__))
    if x.device.type != "cpu":
        raise ValueError("%s: tensor is on %s: rinx reduces host memory "
                         "(move it with .cpu())" % (op, x.device))
    if x.layout != torch.strided:
        raise ValueError("%s: tensor layout %s: rinx reduces dense "
                         "tensors" % (op, x.layout))
    if x.dtype == torch.float32:
        dt = _lib.RINX_FLOAT32
    elif x.dtype == torch.int32:
        dt = _lib.RINX_INT32
    else:
        raise TypeError("%s: tensor of dtype %s: rinx reduces "
                        "torch.float32 and torch.int32" % (op, x.dtype))
    if not x.is_contiguous():
        raise ValueError("%s: tensor is not contiguous (stride %s): reduce "
                         "x.contiguous() and copy back" % (op, x.stride()))
    return x.data_ptr(), x.numel(), dt


# ---- spec ----

def _read_spec(path):
    """(number of hosts, plan the spec names or implies) of a cluster spec
    file, for the checks librinx cannot make before it waits for its
    peers."""
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError as e:
        raise _config_error("rinx.Comm", "cannot read spec %s: %s"
                            % (path, e.strerror)) from None
    hosts = 0
    plan = None
    for line in lines:
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "host":
            hosts += 1
        elif words[0] == "cluster":
            for w in words[1:]:
                if w.startswith("plan="):
                    plan = w[5:]
    # the default: Rina, which is the ring when no rack aggregates
    return hosts, plan or "rina"


# Comm(block=): the values per block every rank asks for
# (rinx_comm_opts.block_values)
BLOCKS = {"mtu": 0, "jumbo": 2048, "largest": -1}


def _block_values(block):
    if block is None:
        return 0
    if block not in BLOCKS:
        raise _config_error(
            "rinx.Comm", "block %r is not one of %s (mtu: the MTU's blocks, "
            "jumbo: 2048 values in 8,288-byte frames, refused where they "
            "cannot run, largest: jumbo where they can)"
            % (block, ", ".join(BLOCKS)))
    return BLOCKS[block]


def _check_plan(plan):
    if plan is None:
        return
    name, _, n = str(plan).partition(":")
    if name in PLANS and (not n or (name.startswith("ps") and n.isdigit()
                                    and 1 <= int(n) <= 64)):
        return
    raise _config_error(
        "rinx.Comm", "plan %r is not one of %s (ps and ps-ina take :N "
        "servers, 1..64)" % (plan, ", ".join(PLANS)))


def _env_int(name, required, default=None):
    v = os.environ.get(name)
    if v is None or v == "":
        if required:
            raise _config_error("rinx.Comm.from_env",
                                "environment variable %s is not set" % name)
        return default
    try:
        return int(v, 0)
    except ValueError:
        raise _config_error("rinx.Comm.from_env", "%s=%r is not an integer"
                            % (name, v)) from None


# ---- communicator ----

class Comm:
    """A communicator: the ranks of one cluster spec running one job.

    Comm(spec, rank, job=..., token=0, plan=None, timeout_ms=0, inflight=0,
    block=None) opens it; every rank must open it with the same job and
    token (a 64-bit secret: frames with another one are refused;
    docs/security.md). It returns once every rank has opened it (or raises
    TimeoutError naming the ranks that did not). timeout_ms bounds each
    allreduce (0: librinx's default, 10 s). block: "mtu" (None: the MTU's
    blocks), "jumbo" (2,048 values a frame; the open fails where they
    cannot run: an MTU below 8,274, a plan that aggregates) or "largest"
    (jumbo where they can run); block_values is what it runs.
    """

    def __init__(self, spec, rank, job=None, token=0, plan=None,
                 timeout_ms=0, inflight=0, world_size=None, block=None):
        spec = os.fspath(spec)
        bv = _block_values(block)
        if job is None:
            raise _config_error("rinx.Comm", "job= is required: a job id "
                                "!= 0, the same on every rank")
        if not 0 <= int(job) < 1 << 32 or not 0 <= int(token) < 1 << 64:
            raise _config_error("rinx.Comm", "job %d / token %d: the job "
                                "is an unsigned 32-bit number, the token "
                                "an unsigned 64-bit one" % (job, token))
        hosts, implied = _read_spec(spec)
        _check_plan(plan)
        if world_size is not None and world_size != hosts:
            raise _config_error(
                "rinx.Comm", "world size %d does not match spec %s, which "
                "has %d hosts: start one rank per host" % (world_size, spec,
                                                           hosts))
        if not 0 <= int(rank) < max(hosts, 1):
            raise _config_error("rinx.Comm", "rank %d is not in spec %s "
                                "(%d hosts: ranks 0..%d)"
                                % (rank, spec, hosts, hosts - 1))
        # reentrant: a request freed by the garbage collector inside a
        # locked section cancels itself under the same lock
        self._lock = threading.RLock()
        self._c = None
        self._active = None     # weak reference to the request in flight
        self._on_close = []     # callables run once the comm is closed
        self.plan = plan or implied
        self.spec = spec
        opts = _lib.CommOpts()
        opts.sz = ctypes.sizeof(opts)
        opts.spec = spec.encode()
        opts.node = None
        opts.rank = int(rank)
        opts.job = int(job)
        opts.token = int(token)
        opts.timeout_ms = int(timeout_ms)
        opts.inflight = int(inflight)
        opts.plan = plan.encode() if plan else None
        opts.block_values = bv
        c = ctypes.c_void_p()
        ret = _lib_handle.rinx_comm_open(ctypes.byref(opts), ctypes.byref(c))
        if ret:
            _raise("rinx_comm_open", ret, _text(None))
        self._c = c
        _open_comms.add(self)
        self.rank = _lib_handle.rinx_comm_rank(c)
        self.size = _lib_handle.rinx_comm_size(c)
        # values per block on this network: BLOCK_VALUES, or fewer where
        # the MTU is below 3,154 (the unit of f32_bound's amax)
        self.block_values = _lib_handle.rinx_comm_block_values(c)
        self.job = opts.job
        self.token = opts.token

    @classmethod
    def from_env(cls, **kw):
        """Opens the communicator the environment describes, as torchrun
        and the rinx launchers set it: RANK, WORLD_SIZE, RINX_SPEC, RINX_JOB,
        RINX_TOKEN (default 0), RINX_PLAN (default: the spec's),
        RINX_BLOCK (mtu, jumbo or largest; default mtu) and RINX_TIMEOUT_MS
        (default 0: librinx's). Keyword arguments win."""
        spec = kw.pop("spec", None) or os.environ.get("RINX_SPEC")
        if not spec:
            raise _config_error("rinx.Comm.from_env", "environment "
                                "variable RINX_SPEC (cluster spec file) is "
                                "not set")
        rank = kw.pop("rank", None)
        if rank is None:
            rank = _env_int("RANK", True)
        world = kw.pop("world_size", None)
        if world is None:
            world = _env_int("WORLD_SIZE", True)
            hosts = _read_spec(spec)[0]
            if world != hosts:
                raise _config_error(
                    "rinx.Comm.from_env", "WORLD_SIZE=%d but spec %s has %d "
                    "hosts: rinx runs one rank per host of the spec"
                    % (world, spec, hosts))
        job = kw.pop("job", None)
        if job is None:
            job = _env_int("RINX_JOB", True)
        token = kw.pop("token", None)
        if token is None:
            token = _env_int("RINX_TOKEN", False, 0)
        plan = kw.pop("plan", None) or os.environ.get("RINX_PLAN") or None
        if "timeout_ms" not in kw:
            kw["timeout_ms"] = _env_int("RINX_TIMEOUT_MS", False, 0)
        if "block" not in kw:
            kw["block"] = os.environ.get("RINX_BLOCK") or None
        return cls(spec, rank, job=job, token=token, plan=plan,
                   world_size=world, **kw)

    # -- life cycle --

    def close(self):
        """Ends a request still in flight and leaves the job. Idempotent."""
        with self._lock:
            if self._c is None:
                return
            r = self._active() if self._active is not None else None
            if r is not None:
                # librinx frees the request with the communicator
                r._forget()
            self._active = None
            _lib_handle.rinx_comm_close(self._c)
            self._c = None
            hooks, self._on_close = self._on_close, []
        for f in hooks:
            f()

    @property
    def closed(self):
        return self._c is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        if self._c is None:
            return "<rinx.Comm closed>"
        return "<rinx.Comm rank %d of %d, job %d, %s plan>" % (
            self.rank, self.size, self.job, self.plan)

    def _forget(self, req):
        if self._active is not None and self._active() in (req, None):
            self._active = None

    def _handle(self, op):
        if self._c is None:
            raise ClosedError(op, _errno.EBADF, "the communicator is closed")
        return self._c

    # -- collectives --

    def allreduce(self, x):
        """SUM of x over all ranks, written into x; returns x."""
        op = "rinx.Comm.allreduce"
        addr, count, dt = _buffer(x, op)
        with self._lock:
            c = self._handle(op)
            ret = _lib_handle.rinx_allreduce(c, addr, addr, count, dt)
            if ret:
                _raise("rinx_allreduce", ret, _text(c))
        return x

    def start(self, x):
        """Starts the SUM of x over all ranks into x and returns a Request.
        One request per communicator at a time. Progress is made while the
        request is tested or waited for; x must not change until then."""
        op = "rinx.Comm.start"
        addr, count, dt = _buffer(x, op)
        req = ctypes.c_void_p()
        with self._lock:
            c = self._handle(op)
            ret = _lib_handle.rinx_allreduce_start(c, addr, addr, count, dt,
                                                   ctypes.byref(req))
            if ret:
                _raise("rinx_allreduce_start", ret, _text(c))
            r = Request(self, req, x)
            # weak: a request nobody holds any more is cancelled (__del__)
            self._active = weakref.ref(r)
        return r

    def stats(self):
        """The communicator's counters (struct rinx_comm_stats) as a dict."""
        buf = ctypes.create_string_buffer(_lib.STATS_BUF_BYTES)
        with self._lock:
            c = self._handle("rinx.Comm.stats")
            ret = _lib_handle.rinx_comm_stats(c, buf)
            if ret:
                _raise("rinx_comm_stats", ret, _text(c))
        st = _lib.CommStats.from_buffer_copy(buf)
        return {name: getattr(st, name) for name in _lib.STATS_FIELDS}

    def error(self):
        """librinx's explanation of the last failure (rinx_comm_error)."""
        with self._lock:
            return _text(self._c) if self._c is not None else ""


def _text(c):
    t = _lib_handle.rinx_comm_error(c)
    return t.decode(errors="replace") if t else ""


class Request:
    """An allreduce in flight (Comm.start). It keeps its tensor alive."""

    def __init__(self, comm, req, x):
        self._comm = comm
        self._req = req
        self._x = x
        self._done = False

    @property
    def tensor(self):
        return self._x

    @property
    def done(self):
        """True once the result is in the tensor."""
        return self._done

    def _forget(self):
        self._req = None

    def _end(self, ret, op):
        """Called with the communicator's lock held, after librinx freed
        the request (any return but -ETIMEDOUT from rinx_wait)."""
        self._req = None
        self._comm._forget(self)
        if ret < 0:
            _raise(op, ret, _text(self._comm._c))
        self._done = True

    def _check(self, op):
        if self._done:
            return False
        if self._req is None:
            raise ClosedError(op, _errno.ECANCELED, "the request was "
                              "cancelled, failed, or its communicator closed")
        return True

    def test(self):
        """True when done (the result is in the tensor), False while still
        running; raises when the allreduce failed."""
        op = "rinx_test"
        with self._comm._lock:
            if not self._check(op):
                return True
            ret = _lib_handle.rinx_test(self._req)
            if ret == 0:
                return False
            self._end(ret, op)
        return True

    def wait(self, timeout_ms=None):
        """Waits until done and returns the tensor.

        timeout_ms=None waits as long as the communicator's timeout; if it
        passes, the allreduce failed: the request is cancelled and
        TimeoutError raised. With a number, TimeoutError after that long
        leaves the request running: wait or test again, or cancel()."""
        op = "rinx_wait"
        with self._comm._lock:
            if not self._check(op):
                return self._x
            t = -1 if timeout_ms is None else max(int(timeout_ms), 0)
            ret = _lib_handle.rinx_wait(self._req, t)
            if ret == -_errno.ETIMEDOUT:
                text = _text(self._comm._c)
                if timeout_ms is None:
                    self._cancel_locked()
                _raise(op, ret, text)
            self._end(ret, op)
        return self._x

    def _cancel_locked(self):
        if self._req is not None:
            _lib_handle.rinx_cancel(self._req)
            self._req = None
        self._comm._forget(self)

    def cancel(self):
        """Abandons the request; the tensor's contents are undefined."""
        with self._comm._lock:
            self._cancel_locked()

    def __del__(self):
        # librinx writes into the tensor until the request ends: end it
        # before the tensor can be freed
        try:
            if self._req is not None and self._comm._c is not None:
                self.cancel()
        except Exception:
            pass


def __getattr__(name):
    # rinx.torch imports torch (slow): only when used
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'rinx' has no attribute %r" % name)
