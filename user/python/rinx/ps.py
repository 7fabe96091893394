# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The parameter server's store on rinx's data plane (rinx_ps_*).

    comm = rinx.Comm(spec, rank, job=J, token=T, plan="ps")
    store = rinx.ps.Store(comm, n, server=0, init=p0, staleness=2)
    store.push(delta)           # adds delta into the store (XDP, at the server)
    store.pull(out)             # the store's values (SSP: after the bound)
    store.finish(out)           # every rank done: the final values
    store.close()
    shards = rinx.ps.Shards([c0, c1], n, servers=[0, 4], init=p0)
                                # one store split over two servers (below)

The store lives in the server rank's host program: every push is added and
every pull answered there in XDP (docs/rinx.md, "Parameter server"). The
communicator serves the store only (no allreduce on it). Values are block
fixed point at an exponent per block chosen from `init` (headroom: log2 of
the range above the largest initial magnitude, default 6); a push that
would leave the range raises rinx.Error (ERANGE). A rank's i-th push is its
iteration i - 1; with `staleness`, pull waits while a rank that has not
finished is more than that many iterations behind this one.

Every push and pull of a store crosses its server's link, which bounds the
store's pushes per second. Shards splits one store into contiguous parts,
each a Store of its own on a communicator of its own (its own job id)
served by a rank of its own: each part's traffic crosses its own server's
link. pushpull on a store without a staleness bound sends every part's
frames before it waits for any answer (rinx_ps_pushpull_many, up to 16
parts); push, pull, a bounded store's pushpull and more parts take them
one after the other. Every
part keeps its own push numbers, clocks and staleness bound.
"""
import ctypes

import numpy as np

from . import Comm, _lib, _lib_handle, _raise, _text

__all__ = ["Store", "Shards", "shard_servers"]

PARTS_MAX = 16          # RINX_PS_PARTS_MAX: parts rinx_ps_pushpull_many takes


class Store:
    def __init__(self, comm, count, server=0, init=None, staleness=None,
                 headroom=0):
        if not isinstance(comm, Comm):
            raise TypeError("rinx.ps.Store: comm must be a rinx.Comm")
        if staleness is not None and (int(staleness) != staleness or
                                      staleness < 0):
            raise ValueError("rinx.ps.Store: staleness must be an integer "
                             ">= 0 or None, not %r" % (staleness,))
        self.comm = comm
        self.count = int(count)
        self._init = None
        o = _lib.PsOpts()
        o.sz = ctypes.sizeof(o)
        o.server = int(server)
        o.count = self.count
        o.init = None
        if init is not None and comm.rank == server:
            self._init = np.ascontiguousarray(init, dtype=np.float32)
            if self._init.size != self.count:
                raise ValueError("rinx.ps.Store: init has %d values, not %d"
                                 % (self._init.size, self.count))
            o.init = self._init.ctypes.data
        o.staleness = -1 if staleness is None else int(staleness)
        o.headroom = int(headroom)
        h = ctypes.c_void_p()
        c = comm._handle("rinx.ps.Store")
        ret = _lib_handle.rinx_ps_open(c, ctypes.byref(o), ctypes.byref(h))
        if ret:
            _raise("rinx_ps_open", ret, _text(c))
        self._h = h
        comm._on_close.append(self._forget)

    def _forget(self):
        self._h = None

    def _buf(self, x, op):
        if not (isinstance(x, np.ndarray) and x.dtype == np.float32 and
                x.flags.c_contiguous and x.size == self.count):
            raise TypeError("%s: a C-contiguous float32 numpy array of %d "
                            "values" % (op, self.count))
        return x.ctypes.data

    def _call(self, fn, x, op):
        if self._h is None:
            raise ValueError("%s: the store is closed" % op)
        ret = getattr(_lib_handle, fn)(self._h, self._buf(x, op))
        if ret:
            _raise(fn, ret, _text(self.comm._c))
        return x

    def push(self, delta):
        return self._call("rinx_ps_push", delta, "rinx.ps.Store.push")

    def pull(self, out):
        return self._call("rinx_ps_pull", out, "rinx.ps.Store.pull")

    def pushpull(self, delta, out):
        """push(delta), then pull(out); on a store without a staleness
        bound one frame per block does both."""
        op = "rinx.ps.Store.pushpull"
        if self._h is None:
            raise ValueError("%s: the store is closed" % op)
        ret = _lib_handle.rinx_ps_pushpull(self._h, self._buf(delta, op),
                                           self._buf(out, op))
        if ret:
            _raise("rinx_ps_pushpull", ret, _text(self.comm._c))
        return out

    def finish(self, out):
        return self._call("rinx_ps_finish", out, "rinx.ps.Store.finish")

    def stats(self):
        st = _lib.PsStats()
        st.sz = ctypes.sizeof(st)
        if self._h is None:
            raise ValueError("rinx.ps.Store.stats: the store is closed")
        ret = _lib_handle.rinx_ps_stats(self._h, ctypes.byref(st))
        if ret:
            _raise("rinx_ps_stats", ret, "")
        return {n: getattr(st, n) for n in _lib.PS_STATS_FIELDS}

    def close(self):
        if self._h is not None and self.comm._c is not None:
            _lib_handle.rinx_ps_close(self._h)
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def shard_servers(ps_rank, size, shards):
    """The server ranks of `shards` parts, spread evenly over the ranks
    from ps_rank on (2 parts of 8 ranks from 0: ranks 0 and 4, one server
    in each rack of 2 x 4)."""
    return [(ps_rank + i * size // shards) % size for i in range(shards)]


class Shards:
    """One store of `count` values split over len(comms) servers: part i
    is a Store on comms[i] served by rank servers[i]. The calls of a
    Store; stats() sums the parts' counters (clock: the least part's,
    min_clock: the slowest rank's in any part)."""

    def __init__(self, comms, count, servers, init=None, staleness=None,
                 headroom=0):
        if len(comms) != len(servers) or not comms:
            raise ValueError("rinx.ps.Shards: one server per communicator "
                             "(%d communicators, %d servers)"
                             % (len(comms), len(servers)))
        self.count = int(count)
        if self.count < len(comms):
            raise ValueError("rinx.ps.Shards: %d values cannot be split "
                             "into %d parts" % (self.count, len(comms)))
        cut = np.linspace(0, self.count, len(comms) + 1).astype(int)
        self.parts = list(zip(cut[:-1], cut[1:]))
        self.servers = list(servers)
        self.stores = []
        try:
            for (lo, hi), c, srv in zip(self.parts, comms, servers):
                self.stores.append(Store(
                    c, hi - lo, server=srv, staleness=staleness,
                    headroom=headroom,
                    init=None if init is None else init[lo:hi]))
        except Exception:
            self.close()
            raise

    def _check(self, x, name):
        if not (isinstance(x, np.ndarray) and x.dtype == np.float32 and
                x.flags.c_contiguous and x.size == self.count):
            raise TypeError("%s: a C-contiguous float32 numpy array of %d "
                            "values" % (name, self.count))

    def _each(self, op, x, name):
        self._check(x, name)
        for (lo, hi), st in zip(self.parts, self.stores):
            getattr(st, op)(x[lo:hi])
        return x

    def push(self, delta):
        return self._each("push", delta, "rinx.ps.Shards.push")

    def pull(self, out):
        return self._each("pull", out, "rinx.ps.Shards.pull")

    def pushpull(self, delta, out):
        """Every part's pushpull at once (one after the other on a store
        with a staleness bound)."""
        op = "rinx.ps.Shards.pushpull"
        self._check(delta, op)
        self._check(out, op)
        if any(st._h is None for st in self.stores):
            raise ValueError("%s: the store is closed" % op)
        k = len(self.stores)
        if k > PARTS_MAX:
            for (lo, hi), st in zip(self.parts, self.stores):
                st.pushpull(delta[lo:hi], out[lo:hi])
            return out
        hs = (ctypes.c_void_p * k)(*[st._h.value for st in self.stores])
        ds = (ctypes.c_void_p * k)(*[delta[lo:].ctypes.data
                                     for lo, _ in self.parts])
        os_ = (ctypes.c_void_p * k)(*[out[lo:].ctypes.data
                                      for lo, _ in self.parts])
        ret = _lib_handle.rinx_ps_pushpull_many(hs, k, ds, os_)
        if ret:
            bad = [st.comm._c for st in self.stores
                   if _text(st.comm._c)] or [self.stores[0].comm._c]
            _raise("rinx_ps_pushpull_many", ret, _text(bad[0]))
        return out

    def finish(self, out):
        return self._each("finish", out, "rinx.ps.Shards.finish")

    def stats(self):
        parts = [st.stats() for st in self.stores]
        d = {n: sum(p[n] for p in parts) for n in _lib.PS_STATS_FIELDS}
        d["clock"] = min(p["clock"] for p in parts)
        d["min_clock"] = min(p["min_clock"] for p in parts)
        return d

    def close(self):
        for st in self.stores:
            st.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
