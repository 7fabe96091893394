# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Parameter-server synchronization modes: ASP, SSP and InHAD.

    sync = rinx.sync.SSP(comm, model.parameters(), lr=0.05, momentum=0.9,
                         staleness=2, total=steps * comm.size)
    while True:
        model.zero_grad()
        loss_fn(model(x), y).backward()
        if not sync.step():     # push, pull: instead of optimizer.step()
            break
    sync.finish()               # every rank gets the PS's final parameters

A parameter server (PS) runs as a thread in the process of rank `ps_rank`
(default 0) and listens on that host's address of the cluster spec; every
rank, the PS's own included, talks to it over TCP with the framed protocol
below. The PS keeps the parameters and the momentum buffer v and applies
every gradient g it accepts (averaged over the ranks and iterations it
covers) as an update worth f synchronous steps, f = ranks x iterations it
covers / size (or scale x iterations):
    d = momentum^f ;  v = d * v + (1 - d) / (1 - momentum) * g ;
    p = p - lr * f * v                                            (float32)
f = 1 is the synchronous momentum step; the decay in synchronous steps
keeps the steady-state step of a mix of partial updates that of BSP.
Workers replace their parameters with the PS's.

ASP    every push is applied at once, in the order it arrives, and answered
       with the parameters right after it (and every push before it).
SSP    as ASP, but the answer to a rank's push of its iteration t (its clock
       becomes t + 1) is held until every rank that has not finished has a
       clock >= t + 1 - staleness: no rank starts an iteration more than
       `staleness` iterations ahead of the slowest.
InHAD  ranks form groups (the racks of the spec, or `group_size` ranks in
       rank order); a group sums its gradient with a rinx allreduce on a
       communicator of its own every iteration (a group that is a whole
       rack with INA on its rack's aggregator, plan rina; group_ina=False
       or any other group: a ring of its hosts) and takes a local step with
       the group's average, so its members stay bit-identical. Every rank
       reports the group's iteration number to the PS; the PS *pulls* the
       group's gradient (summed over the iterations since its last pull)
       when its count of the group's new iterations reaches `pull_every`,
       applies it, and answers every member with the new parameters. A
       group's report is held while it is more than `staleness` iterations
       ahead of the slowest group.

With transport="xdp" (or RINX_PS=xdp) the modes run on rinx's data
plane instead: the parameters are a store in rank ps_rank's host program
(rinx.ps), pushes added and pulls answered there in XDP; each worker
computes the update above with its own momentum buffer and pushes
-lr f v. InHAD's workers of the store are the groups' agents (a
communicator of their hosts; the store at the agent of ps_rank's group):
an agent pushes its group's update every pull_every = k iterations, so
the store's clock of an agent counts its group's iterations k at a time,
and the bound s is the store's bound (s + 1) // k - 1 in pushes, refused
and counted in XDP; the agent's pull (after the bound) goes to its
members by an int32 allreduce of its bits in the group (s >= k - 1 is
required). The TCP server stays as the reference (docs/python.md).

A dead worker ends the waits of the others with rinx.TimeoutError naming
it; a dead PS (connection lost) raises rinx.sync.PSError, one that does not
answer rinx.TimeoutError within timeout_ms (+ 2 s); nothing waits for ever.

Wire format (TCP, little-endian): a 32-byte header
    magic "RXPS", version u8, type u8, rank u16, group u16, flags u16,
    iter u32, aux u32, aux2 u32, samples u32, length u32
and `length` bytes of payload: float32 values, or UTF-8 text (JSON, an
error message) for HELLO, STATS and ERROR.
"""
import errno as _errno
import json
import os
import socket
import struct
import tempfile
import threading
import time

import numpy as np

from . import Comm, Error, TimeoutError, MismatchError, BusyError, _raise


__all__ = ["ASP", "SSP", "InHAD", "Server", "PSError", "MODES"]

MODES = ("asp", "ssp", "inhad")
# where the PS runs: a TCP server in rank ps_rank's process (the reference),
# or a store in its host program, pushes and pulls in XDP (rinx.ps)
TRANSPORTS = ("tcp", "xdp")

HDR = struct.Struct("<4sBBHHHIIIII")
MAGIC = b"RXPS"
VERSION = 1
# message types
T_HELLO, T_WELCOME, T_PUSH, T_PARAMS, T_REPORT, T_GO, T_PULL, T_GRAD, \
    T_DONE, T_STATS, T_ERROR = range(1, 12)
# reply flags
F_HELD = 1      # the answer was held for the staleness bound
F_STOP = 2      # the PS has the `total` samples it was asked for
MAX_PAYLOAD = 1 << 30

# default TCP port: derived from the job so that two jobs on one host differ
PORT_BASE = 41000
PORT_SPAN = 6000
# how much longer a worker waits for an answer than the PS waits for its
# peers: a PS that holds an answer times out first and says why
CLIENT_SLACK_MS = 2000


class PSError(Error):
    """The connection to the parameter server failed or was lost (the PS
    died, refused the connection or broke the protocol)."""


class _Fail(Exception):
    """An error the PS sends back to a worker as ERROR."""

    def __init__(self, err, text):
        super().__init__(text)
        self.err = err
        self.text = text


def _err(op, err, text):
    """The rinx.Error subclass for errno `err`."""
    if err in (_errno.ECONNRESET, _errno.ECONNREFUSED, _errno.EPROTO,
               _errno.EPIPE):
        return PSError(op, err, text)
    try:
        _raise(op, -err, text)
    except Error as e:
        return e


def _recv_exact(sock, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionResetError(_errno.ECONNRESET, "connection closed")
        got += k
    return buf


def _send(sock, typ, rank=0, group=0, flags=0, it=0, aux=0, aux2=0,
          samples=0, payload=b""):
    if isinstance(payload, np.ndarray):
        payload = payload.astype("<f4", copy=False).tobytes()
    sock.sendall(HDR.pack(MAGIC, VERSION, typ, rank, group, flags,
                          it & 0xffffffff, aux & 0xffffffff,
                          aux2 & 0xffffffff, samples & 0xffffffff,
                          len(payload)) + payload)


def _recv(sock):
    """(header fields dict, payload bytes)."""
    raw = _recv_exact(sock, HDR.size)
    magic, ver, typ, rank, group, flags, it, aux, aux2, samples, length = \
        HDR.unpack(raw)
    if magic != MAGIC or ver != VERSION:
        raise _Fail(_errno.EPROTO, "not a rinx PS message (magic %r, "
                    "version %d)" % (magic, ver))
    if length > MAX_PAYLOAD:
        raise _Fail(_errno.EMSGSIZE, "payload of %d bytes" % length)
    payload = bytes(_recv_exact(sock, length)) if length else b""
    return dict(type=typ, rank=rank, group=group, flags=flags, iter=it,
                aux=aux, aux2=aux2, samples=samples), payload


def _floats(payload, n, what):
    if len(payload) != 4 * n:
        raise _Fail(_errno.EMSGSIZE, "%s of %d values, the PS holds %d"
                    % (what, len(payload) // 4, n))
    return np.frombuffer(payload, dtype="<f4").astype(np.float32)


# ---- the parameter server ----

class Server:
    """The PS: keeps the parameters, applies gradients, enforces the mode's
    staleness bound. Started by the sync object of rank `ps_rank`; usable on
    its own (Server(...).start()).

    groups: InHAD's groups (lists of ranks, the first is the group's agent).
    total: rank-iterations (samples / batch) after which every answer
    carries the stop flag (None: never).
    """

    def __init__(self, mode, size, params, lr, momentum=0.0, scale=None,
                 staleness=None, groups=None, pull_every=1, token=0,
                 host="0.0.0.0", port=0, timeout_ms=10000, total=None):
        if mode not in MODES:
            raise ValueError("rinx.sync: mode %r is not one of %s"
                             % (mode, ", ".join(MODES)))
        self.mode = mode
        self.size = int(size)
        self.p = np.array(params, dtype=np.float32).reshape(-1)
        self.v = np.zeros_like(self.p)
        self.lr = float(lr)
        self.mu = float(momentum)
        self.staleness = staleness
        self.token = int(token)
        self.timeout = timeout_ms / 1000.0
        self.total = total
        if mode == "inhad":
            self.groups = [list(g) for g in groups]
            self.group_of = {r: i for i, g in enumerate(self.groups)
                             for r in g}
            self.pull_every = int(pull_every)
            ng = len(self.groups)
            self.gclock = [0] * ng      # iterations the group reported
            self.pulled = [0] * ng      # ... as of the PS's last pull
            self.decision = [dict() for _ in range(ng)]  # iter -> answer
            self.pulls = [0] * ng
        else:
            self.groups = [[r] for r in range(self.size)]
            self.group_of = {r: r for r in range(self.size)}
        # None: an update's weight is its share of one synchronous step
        self.scale = None if scale is None else float(scale)
        self.clock = [0] * len(self.groups)     # per unit of the bound
        self.version = 0        # updates applied
        self.samples = 0        # rank-iterations applied
        self.held = [0] * self.size     # answers held for the bound
        self.max_lead = 0       # largest clock - min clock at an answer
        self.waiting = {}       # rank -> the clock it is held at
        self.hello = set()
        self.done = set()
        self.dead = set()
        self.frozen = False
        self.closed = False
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        self.conns = []
        self.threads = []
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((host, port))
        self.lsock.listen(max(self.size, 8) * 2)
        self.address = self.lsock.getsockname()

    def start(self):
        t = threading.Thread(target=self._accept, daemon=True,
                             name="rinx-ps-accept")
        t.start()
        self.threads.append(t)
        return self

    # -- state (lock held) --

    def _unit(self, rank):
        return self.group_of[rank]

    def _finished_unit(self, u):
        return all(r in self.done for r in self.groups[u])

    def _min_clock(self):
        live = [self.clock[u] for u in range(len(self.groups))
                if not self._finished_unit(u)]
        return min(live) if live else max(self.clock)

    def _dead_check(self, who):
        if self.closed:
            raise _Fail(_errno.ECONNRESET, "the parameter server is "
                        "shutting down")
        if self.dead:
            raise _Fail(_errno.ETIMEDOUT, "rank %s lost its connection to "
                        "the parameter server (dead) while rank %d waited"
                        % (",".join(map(str, sorted(self.dead))), who))

    def _wait(self, pred, rank, what):
        """Waits (lock held) until pred() or fails: a dead rank, the
        timeout (naming the slowest units)."""
        deadline = time.monotonic() + self.timeout
        while True:
            self._dead_check(rank)
            if pred():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                m = self._min_clock()
                slow = [r for u in range(len(self.groups))
                        if self.clock[u] == m and not self._finished_unit(u)
                        for r in self.groups[u]]
                raise _Fail(_errno.ETIMEDOUT, "rank %d waited %d ms for %s; "
                            "slowest: rank %s at iteration %d" % (
                                rank, self.timeout * 1000, what,
                                ",".join(map(str, slow)), m))
            self.cv.wait(min(left, 0.5))

    def _bound(self, rank):
        """SSP / InHAD: holds the caller while its unit is more than
        `staleness` iterations ahead of the slowest unit. Returns the
        flag."""
        if self.staleness is None:
            return 0
        u = self._unit(rank)
        s = self.staleness

        def ok():
            return self.clock[u] - self._min_clock() <= s
        flags = 0
        if not ok():
            flags = F_HELD
            self.held[rank] += 1
            self.waiting[rank] = self.clock[u]
            try:
                self._wait(ok, rank, "the staleness bound %d (its clock "
                           "%d)" % (s, self.clock[u]))
            finally:
                self.waiting.pop(rank, None)
        self.max_lead = max(self.max_lead, self.clock[u] - self._min_clock())
        return flags

    def _apply(self, g, k, ranks):
        """Applies g, the sum of k iterations' gradients of `ranks` ranks
        (averaged over them): an update worth f = k * ranks / size
        synchronous steps (or scale * k). Momentum is kept in synchronous
        steps: the buffer decays by mu^f and the parameters move by lr * f
        times it, so that any mix of updates worth one step in all moves
        the parameters as one synchronous step would in the steady state,
        and f = 1 is exactly the synchronous (BSP) momentum step."""
        f = k * ranks / self.size if self.scale is None else self.scale * k
        if k > 1:
            g = g / np.float32(k)
        if self.mu:
            d = self.mu ** f
            self.v *= np.float32(d)
            self.v += g * np.float32((1.0 - d) / (1.0 - self.mu))
        else:
            self.v = g.copy()
        self.p -= np.float32(self.lr * f) * self.v
        self.version += 1
        self.samples += k * ranks
        self.cv.notify_all()

    def _stop(self):
        return F_STOP if self.total is not None and \
            self.samples >= self.total else 0

    def stats(self):
        with self.lock:
            return {
                "mode": self.mode, "version": self.version,
                "samples": self.samples, "clock": list(self.clock),
                "min_clock": self._min_clock(), "held": list(self.held),
                "max_lead": self.max_lead,
                "waiting": {str(r): c for r, c in self.waiting.items()},
                "staleness": self.staleness, "done": sorted(self.done),
                "dead": sorted(self.dead), "hello": sorted(self.hello),
                "pulls": list(getattr(self, "pulls", [])),
            }

    # -- connections --

    def _accept(self):
        while not self.closed:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                if self.closed:
                    s.close()
                    return
                self.conns.append(s)
            t = threading.Thread(target=self._serve, args=(s,), daemon=True,
                                 name="rinx-ps-conn")
            t.start()
            self.threads.append(t)

    def _serve(self, s):
        rank = None
        failed = False
        try:
            h, payload = _recv(s)
            if h["type"] == T_STATS:
                _send(s, T_STATS, payload=json.dumps(self.stats()).encode())
                return
            rank = self._hello(s, h, payload)
            while True:
                try:
                    h, payload = _recv(s)
                except ConnectionResetError:
                    break
                with self.lock:
                    while self.frozen and not self.closed:
                        self.cv.wait(0.1)
                if h["type"] == T_STATS:
                    _send(s, T_STATS,
                          payload=json.dumps(self.stats()).encode())
                elif h["type"] == T_PUSH:
                    self._push(s, rank, h, payload)
                elif h["type"] == T_REPORT:
                    self._report(s, rank, h)
                elif h["type"] == T_GRAD:
                    self._flush(s, rank, h, payload)
                elif h["type"] == T_DONE:
                    self._done(s, rank)
                    rank = None     # a clean end, not a death
                    return
                else:
                    raise _Fail(_errno.EPROTO, "unexpected message type "
                                "%d from rank %d" % (h["type"], rank))
        except _Fail as f:
            failed = True   # told why: its end is not a death
            try:
                _send(s, T_ERROR, aux=f.err, payload=f.text.encode())
            except OSError:
                pass
        except OSError:
            pass
        finally:
            with self.lock:
                if rank is not None and rank not in self.done and \
                        not failed:
                    self.dead.add(rank)
                self.cv.notify_all()
                if s in self.conns:
                    self.conns.remove(s)
            s.close()

    def _hello(self, s, h, payload):
        try:
            d = json.loads(payload.decode())
        except ValueError:
            raise _Fail(_errno.EPROTO, "malformed HELLO") from None
        rank = d.get("rank")
        if not isinstance(rank, int) or not 0 <= rank < self.size:
            raise _Fail(_errno.EINVAL, "rank %r is not in 0..%d"
                        % (rank, self.size - 1))
        if d.get("token") != self.token:
            raise _Fail(_errno.EACCES, "rank %d: wrong job token" % rank)
        if d.get("mode") != self.mode or d.get("size") != self.size or \
                d.get("staleness") != self.staleness:
            raise _Fail(_errno.EINVAL, "rank %d runs %s (%s ranks, "
                        "staleness %s), the PS %s (%d ranks, staleness %s)"
                        % (rank, d.get("mode"), d.get("size"),
                           d.get("staleness"), self.mode, self.size,
                           self.staleness))
        if d.get("n") != self.p.size:
            raise _Fail(_errno.EMSGSIZE, "rank %d has %s parameters, the "
                        "PS %d" % (rank, d.get("n"), self.p.size))
        if self.mode == "inhad" and d.get("groups") != self.groups:
            raise _Fail(_errno.EINVAL, "rank %d has groups %s, the PS %s"
                        % (rank, d.get("groups"), self.groups))
        with self.lock:
            if rank in self.hello:
                raise _Fail(_errno.EEXIST, "rank %d is connected already"
                            % rank)
            self.hello.add(rank)
            p = self.p.copy()
            v = self.version
        _send(s, T_WELCOME, rank=rank, it=v, payload=p)
        return rank

    def _push(self, s, rank, h, payload):
        """ASP/SSP: one rank's gradient of its iteration h.iter."""
        if self.mode == "inhad":
            raise _Fail(_errno.EPROTO, "PUSH in InHAD mode")
        g = _floats(payload, self.p.size, "rank %d pushed a gradient"
                    % rank)
        with self.lock:
            if h["iter"] != self.clock[rank]:
                raise _Fail(_errno.EPROTO, "rank %d pushed iteration %d, "
                            "expected %d" % (rank, h["iter"],
                                             self.clock[rank]))
            self._apply(g, 1, 1)
            self.clock[rank] += 1
            flags = self._bound(rank)
            p = self.p.copy()
            reply = dict(flags=flags | self._stop(), it=self.version,
                         aux=self._min_clock(), aux2=self.clock[rank],
                         samples=self.samples)
        _send(s, T_PARAMS, rank=rank, payload=p, **reply)

    def _report(self, s, rank, h):
        """InHAD: rank reports its group's iteration h.iter done. The agent's
        report decides (pull or go on); the members get the same answer."""
        if self.mode != "inhad":
            raise _Fail(_errno.EPROTO, "REPORT outside InHAD mode")
        u = self._unit(rank)
        t = h["iter"]
        agent = self.groups[u][0] == rank
        with self.lock:
            if agent:
                if t != self.clock[u]:
                    raise _Fail(_errno.EPROTO, "group %d reported iteration "
                                "%d, expected %d" % (u, t, self.clock[u]))
                self.clock[u] = t + 1
                self.cv.notify_all()
                flags = self._bound(rank)
                pull = self.clock[u] - self.pulled[u] >= self.pull_every
            else:
                self._wait(lambda: t in self.decision[u], rank,
                           "its group's agent (rank %d) at iteration %d"
                           % (self.groups[u][0], t))
        if agent and pull:
            _send(s, T_PULL, rank=rank, group=u, it=t)
            h2, payload = _recv(s)
            if h2["type"] != T_GRAD:
                raise _Fail(_errno.EPROTO, "group %d: expected its gradient "
                            "after PULL, got type %d" % (u, h2["type"]))
            g = _floats(payload, self.p.size, "group %d's gradient" % u)
            k = h2["aux"]
            if k != self.clock[u] - self.pulled[u]:
                raise _Fail(_errno.EPROTO, "group %d sent %d iterations, "
                            "the PS counted %d" % (u, k, self.clock[u] -
                                                   self.pulled[u]))
            with self.lock:
                self._apply(g, k, len(self.groups[u]))
                self.pulled[u] = self.clock[u]
                self.pulls[u] += 1
                ans = (flags | self._stop(), self.p.copy(), self.version,
                       self._min_clock(), self.samples)
                self._decide(u, t, ans)
        elif agent:
            with self.lock:
                ans = (flags | self._stop(), None, self.version,
                       self._min_clock(), self.samples)
                self._decide(u, t, ans)
        else:
            with self.lock:
                ent = self.decision[u][t]
                ans = ent[0]
                ent[1] -= 1
                if ent[1] <= 0:
                    del self.decision[u][t]
        flags, p, version, mn, samples = ans
        _send(s, T_PARAMS if p is not None else T_GO, rank=rank, group=u,
              flags=flags, it=version, aux=mn, aux2=t + 1, samples=samples,
              payload=p if p is not None else b"")

    def _decide(self, u, t, ans):
        """The answer to group u's iteration t, kept (lock held) for the
        members still to ask."""
        if len(self.groups[u]) > 1:
            self.decision[u][t] = [ans, len(self.groups[u]) - 1]
        self.cv.notify_all()

    def _flush(self, s, rank, h, payload):
        """InHAD: an agent's gradients not pulled yet, handed over when its
        group finishes."""
        if self.mode != "inhad" or self.groups[self._unit(rank)][0] != rank:
            raise _Fail(_errno.EPROTO, "rank %d: GRAD from a rank that is "
                        "no group's agent" % rank)
        u = self._unit(rank)
        g = _floats(payload, self.p.size, "group %d's gradient" % u)
        with self.lock:
            k = h["aux"]
            if k != self.clock[u] - self.pulled[u]:
                raise _Fail(_errno.EPROTO, "group %d sent %d iterations, "
                            "the PS counted %d" % (u, k, self.clock[u] -
                                                   self.pulled[u]))
            if k:
                self._apply(g, k, len(self.groups[u]))
                self.pulled[u] = self.clock[u]
            _send(s, T_GO, rank=rank, group=u, it=self.version,
                  samples=self.samples)

    def _done(self, s, rank):
        with self.lock:
            self.done.add(rank)
            self.cv.notify_all()
            self._wait(lambda: len(self.done) == self.size, rank,
                       "every rank to finish (finished: %s)"
                       % sorted(self.done))
            p = self.p.copy()
            v = self.version
        _send(s, T_PARAMS, rank=rank, it=v, samples=self.samples, payload=p)

    # -- test hooks and shutdown --

    def freeze(self, on=True):
        """Stops answering (a PS that hangs): for tests of the timeout."""
        with self.lock:
            self.frozen = on
            self.cv.notify_all()

    def kill(self):
        """Stops at once, cutting every connection (a PS that dies)."""
        self.close(0)

    def close(self, wait_s=5.0):
        """Stops the PS. Waits up to wait_s for connections still running
        (finished workers' last answers) before it cuts them."""
        end = time.monotonic() + wait_s
        with self.lock:
            while self.conns and time.monotonic() < end and not self.frozen:
                self.cv.wait(0.05)
            self.closed = True
            self.cv.notify_all()
            conns = list(self.conns)
        try:
            self.lsock.close()
        except OSError:
            pass
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# ---- the spec: addresses and racks ----

def _records(path):
    """(words, {key: value}) of every record of the spec, in order."""
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                yield words, dict(w.split("=", 1) for w in words[1:]
                                  if "=" in w)


def _spec_hosts(path):
    """{rank: {"ip", "rack", "words"}} of the spec's host records, and the
    cluster record's words."""
    hosts = {}
    cluster = None
    for words, kv in _records(path):
        if words[0] == "cluster":
            cluster = words
        elif words[0] == "host":
            hosts[int(kv["rank"])] = {"ip": kv.get("ip"),
                                      "rack": int(kv.get("rack", 0)),
                                      "words": words}
    return hosts, cluster


def _rack_lines(path):
    """{rack id: its record's words} of the spec's rack records."""
    return {int(kv.get("id", 0)): words for words, kv in _records(path)
            if words[0] == "rack"}


def _write_spec(prefix, lines):
    """The lines into a new temporary file; its path."""
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".spec")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    return name


def _group_plan(path, ranks):
    """The rack whose record the group's communicator keeps, or None: a
    group that is one whole rack with INA (a switch or an agent) sums on
    its rack's aggregator (plan rina with one rack: every member sends its
    block up once and takes the sum back, where a ring moves 2 (n - 1) / n
    of it over every link); any other group is a ring of its hosts."""
    hosts, _ = _spec_hosts(path)
    racks = {hosts[r]["rack"] for r in ranks}
    if len(racks) != 1:
        return None
    rack = racks.pop()
    words = _rack_lines(path).get(rack, [])
    ina = next((w[4:] for w in words if w.startswith("ina=")), "none")
    whole = sorted(r for r in hosts if hosts[r]["rack"] == rack)
    return rack if ina not in ("none", "") and sorted(ranks) == whole \
        else None


def _group_spec(path, ranks, ina=True):
    """A spec of the hosts `ranks` only (ranked 0.. in that order): the
    group's own communicator. A whole rack with INA keeps its rack record
    and runs plan rina on it (_group_plan) unless ina is false; else one
    rack without INA, plan ring. Returns the path of a temporary file."""
    hosts, cluster = _spec_hosts(path)
    rack = _group_plan(path, ranks) if ina else None
    out = ["# rinx.sync: group %s of %s" % (ranks, path)]
    cl = [w for w in cluster if not w.startswith(("plan=", "topo="))]
    out.append(" ".join(cl + ["plan=ring" if rack is None else
                              "plan=rina"]))
    if rack is None:
        out.append("rack id=0 ina=none")
    else:
        out.append(" ".join(_rack_lines(path)[rack]))
    for i, r in enumerate(ranks):
        ws = []
        for w in hosts[r]["words"]:
            if w.startswith("rank="):
                w = "rank=%d" % i
            elif w.startswith("rack=") and rack is None:
                w = "rack=0"
            ws.append(w)
        out.append(" ".join(ws))
    return _write_spec("rinx-group-", out)


def _agents_spec(path, ranks):
    """A spec of the hosts `ranks` only, ranked 0.. in that order, each in
    its own rack as in `path` (those racks' lines kept): the communicator
    of InHAD's store on rinx's data plane, whose workers are the groups'
    agents. Returns the path of a temporary file."""
    hosts, cluster = _spec_hosts(path)
    racks = sorted({hosts[r]["rack"] for r in ranks})
    out = ["# rinx.sync: the agents %s of %s" % (ranks, path)]
    out.append(" ".join(w for w in cluster
                        if not w.startswith(("plan=", "topo="))))
    rl = _rack_lines(path)
    out += [" ".join(rl[k]) for k in racks if k in rl]
    for i, r in enumerate(ranks):
        out.append(" ".join("rank=%d" % i if w.startswith("rank=") else w
                            for w in hosts[r]["words"]))
    return _write_spec("rinx-agents-", out)


# ---- the workers' side ----

class _PSMode:
    mode = None

    def __init__(self, comm, params, lr, momentum=0.0, staleness=None,
                 scale=None, ps_rank=0, port=None, timeout_ms=10000,
                 total=None, groups=None, pull_every=1, listen=None,
                 transport=None, ps_job=None, ps_shards=1):
        import torch
        op = "rinx.sync.%s" % type(self).__name__
        self._op = op
        if not isinstance(comm, Comm):
            raise TypeError("%s: comm must be a rinx.Comm" % op)
        self.comm = comm
        self.rank = comm.rank
        self.size = comm.size
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("%s: no parameters" % op)
        for p in self.params:
            if p.dtype != torch.float32 or p.device.type != "cpu":
                raise TypeError("%s: parameters must be float32 on the CPU, "
                                "got %s on %s" % (op, p.dtype, p.device))
        if staleness is not None and (int(staleness) != staleness or
                                      staleness < 0):
            raise ValueError("%s: staleness must be an integer >= 0, not %r"
                             % (op, staleness))
        if not lr > 0:
            raise ValueError("%s: lr must be > 0" % op)
        if timeout_ms <= 0:
            raise ValueError("%s: timeout_ms must be > 0" % op)
        if not 0 <= ps_rank < self.size:
            raise ValueError("%s: ps_rank %d is not a rank (0..%d)"
                             % (op, ps_rank, self.size - 1))
        self.n = sum(p.numel() for p in self.params)
        self.staleness = None if staleness is None else int(staleness)
        self.timeout_ms = int(timeout_ms)
        self.ps_rank = ps_rank
        hosts, _ = _spec_hosts(comm.spec)
        ip = hosts[ps_rank]["ip"]
        if port is None:
            port = PORT_BASE + (comm.job * 3 + MODES.index(self.mode)) % \
                PORT_SPAN
        self.ps_addr = (ip, int(port))
        self.groups = groups
        self.pull_every = int(pull_every)
        self.server = None
        self.steps = 0          # this rank's iterations
        self.held = 0           # answers the PS held for the bound
        self.max_lead = 0       # own clock - min clock seen in answers
        self.version = 0
        self.samples = 0
        self.stopped = False
        self.finished = False
        self.s_ps = 0.0         # seconds spent in exchanges with the PS
        self._sock = None
        self.transport = transport or os.environ.get("RINX_PS", "tcp")
        if self.transport not in TRANSPORTS:
            raise ValueError("%s: transport %r is not one of %s" % (
                op, self.transport, ", ".join(TRANSPORTS)))
        self._store = None
        self._pscomms = []
        if int(ps_shards) != ps_shards or not 1 <= ps_shards <= self.size:
            raise ValueError("%s: ps_shards must be an integer in 1..%d"
                             % (op, self.size))
        if ps_shards > 1 and (self.transport != "xdp" or
                              self.mode == "inhad"):
            raise ValueError("%s: ps_shards > 1 splits the store on rinx's "
                             "data plane: ASP and SSP with transport='xdp'"
                             % op)
        self.ps_shards = int(ps_shards)
        if self.transport == "xdp":
            self._xdp_open(comm, lr, momentum, scale, total, ps_job)
            return
        if self.rank == ps_rank:
            try:
                self.server = Server(self.mode, self.size, self._flat(), lr,
                                     momentum, scale, self.staleness, groups,
                                     pull_every, comm_token(comm),
                                     host=listen or ip, port=int(port),
                                     timeout_ms=self.timeout_ms,
                                     total=total).start()
            except OSError as e:
                # the port is taken (another job's PS) or the address is
                # not this host's
                raise BusyError(op, e.errno or _errno.EADDRINUSE,
                                "rank %d: the parameter server cannot listen "
                                "on %s:%d: %s (choose port=)" % (
                                    self.rank, listen or ip, int(port),
                                    e.strerror or e)) from None
        self._connect(comm_token(comm))

    # -- the store on rinx's data plane (transport "xdp") --

    def _xdp_open(self, comm, lr, momentum, scale, total, ps_job):
        """The PS as a store in rank ps_rank's host program (rinx.ps): a
        communicator of its own (job ps_job, default the comm's + 5), the
        parameters as the store's first values. With ps_shards = S > 1 the
        store is split in S parts (rinx.ps.Shards), part i on job + i
        served by rank ps_rank + i size / S. The optimizer runs at
        the workers: each pushes its update -lr f v, v its own momentum
        buffer of its gradients in synchronous steps (as Server._apply,
        f = 1 / size or scale), and pulls the parameters."""
        from . import ps as _ps
        if self.mode == "inhad":
            return self._xdp_open_groups(comm, lr, momentum, scale, total,
                                         ps_job)
        job = comm.job + 5 if ps_job is None else int(ps_job)
        self.lr = float(lr)
        self.mu = float(momentum)
        self.f = 1.0 / self.size if scale is None else float(scale)
        self.total = total
        self._v = np.zeros(self.n, dtype=np.float32)
        self._p = self._flat()
        try:
            for i in range(self.ps_shards):
                self._pscomms.append(Comm(comm.spec, comm.rank, job=job + i,
                                          token=comm_token(comm), plan="ps",
                                          timeout_ms=self.timeout_ms))
            if self.ps_shards == 1:
                self._store = _ps.Store(self._pscomms[0], self.n,
                                        self.ps_rank, init=self._p,
                                        staleness=self.staleness)
            else:
                self._store = _ps.Shards(
                    self._pscomms, self.n, _ps.shard_servers(
                        self.ps_rank, self.size, self.ps_shards),
                    init=self._p, staleness=self.staleness)
            self._store.pull(self._p)
        except Exception:
            self._close_store()
            raise
        self._assign(self._p)

    def _xdp_step(self):
        g = self._flat_grad()
        t0 = time.perf_counter()
        self._own_momentum(g, self.f, self.size)
        delta = np.ascontiguousarray(self._v * np.float32(-self.lr * self.f))
        # one frame per block each way on an asynchronous store
        self._store.pushpull(delta, self._p)
        self.s_ps += time.perf_counter() - t0
        self._assign(self._p)
        self.steps += 1
        st = self._store.stats()
        self.held = st["held"]
        if st["min_clock"] != (1 << 64) - 1:
            self.max_lead = max(self.max_lead, self.steps - 1 -
                                st["min_clock"])
        self.version = st["min_clock"]
        # the store counts pushes per worker, not in all: every rank does
        # its share of `total` rank-iterations, so this rank's steps x
        # ranks stand for the store's (as InHAD on the store counts them)
        self.samples = self.steps * self.size
        if self.total is not None and self.samples >= self.total:
            self.stopped = True
        return not self.stopped

    def _own_momentum(self, g, f, units):
        """This worker's momentum buffer self._v on the store (where each
        of `units` pushing workers keeps its own, unlike Server._apply's
        one for all), with gradient g worth f synchronous steps. Between
        two of its own pushes the store takes about f x units synchronous
        steps (one, in ASP's steady state), so the buffer decays by
        momentum^(f units): decayed by momentum^f as Server._apply's
        shared buffer is, it kept a gradient for `units` times as many
        synchronous steps as BSP's momentum does and built up as slowly
        (8 ranks: ASP at 15% after 27 steps each, where the TCP PS was at
        53%)."""
        if not self.mu:
            self._v = g
            return
        d = self.mu ** (f * units)
        self._v *= np.float32(d)
        self._v += g * np.float32((1.0 - d) / (1.0 - self.mu))

    # -- tensors --

    def _flat(self):
        return np.concatenate([p.detach().reshape(-1).numpy()
                               for p in self.params]).astype(np.float32)

    def _flat_grad(self):
        out = np.empty(self.n, dtype=np.float32)
        o = 0
        for p in self.params:
            k = p.numel()
            if p.grad is None:
                out[o:o + k] = 0
            else:
                out[o:o + k] = p.grad.reshape(-1).numpy()
            o += k
        return out

    def _assign(self, flat):
        import torch
        o = 0
        with torch.no_grad():
            for p in self.params:
                k = p.numel()
                p.copy_(torch.from_numpy(flat[o:o + k]).view_as(p))
                o += k

    # -- the connection --

    def _fail(self, e, what):
        if isinstance(e, socket.timeout):
            return TimeoutError(self._op, _errno.ETIMEDOUT, "rank %d: the "
                                "parameter server %s:%d did not answer %s "
                                "within %d ms" % (self.rank, *self.ps_addr,
                                                  what, self.timeout_ms +
                                                  CLIENT_SLACK_MS))
        err = getattr(e, "errno", None) or _errno.ECONNRESET
        return PSError(self._op, err, "rank %d: connection to the parameter "
                       "server %s:%d lost %s: %s" % (
                           self.rank, *self.ps_addr, what,
                           getattr(e, "strerror", None) or e))

    def _connect(self, token):
        deadline = time.monotonic() + self.timeout_ms / 1000.0
        last = None
        while True:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout((self.timeout_ms + CLIENT_SLACK_MS) / 1000.0)
            try:
                s.connect(self.ps_addr)
                break
            except OSError as e:
                s.close()
                last = e
                if time.monotonic() >= deadline:
                    raise TimeoutError(
                        self._op, _errno.ETIMEDOUT, "rank %d: no parameter "
                        "server at %s:%d (rank %d) within %d ms: %s" % (
                            self.rank, *self.ps_addr, self.ps_rank,
                            self.timeout_ms, last.strerror or last)) from None
                time.sleep(0.05)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = s
        hello = {"rank": self.rank, "size": self.size, "n": self.n,
                 "mode": self.mode, "staleness": self.staleness,
                 "token": token, "groups": self.groups}
        h, payload = self._call(T_HELLO, "to HELLO",
                                payload=json.dumps(hello).encode())
        self._expect(h, T_WELCOME, "HELLO")
        self._assign(_floats_client(payload, self.n, self._op))
        self.version = h["iter"]

    def _call(self, typ, what, **kw):
        if self._sock is None:
            raise PSError(self._op, _errno.EBADF, "rank %d: not connected "
                          "to the parameter server (closed or failed "
                          "before)" % self.rank)
        t0 = time.perf_counter()
        try:
            if typ is not None:
                _send(self._sock, typ, rank=self.rank, **kw)
            h, payload = _recv(self._sock)
            self.s_ps += time.perf_counter() - t0
        except _Fail as f:
            self._drop()
            raise _err(self._op, f.err, f.text) from None
        except OSError as e:
            self._drop()
            raise self._fail(e, what) from None
        if h["type"] == T_ERROR:
            self._drop()
            raise _err(self._op, h["aux"] or _errno.EIO,
                       "parameter server: " + payload.decode(
                           errors="replace"))
        return h, payload

    def _expect(self, h, typ, what):
        if h["type"] != typ:
            self._drop()
            raise PSError(self._op, _errno.EPROTO, "unexpected answer type "
                          "%d to %s" % (h["type"], what))

    def _drop(self):
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None

    def _note(self, h):
        self.version = h["iter"]
        self.samples = h["samples"]
        if h["flags"] & F_HELD:
            self.held += 1
        self.max_lead = max(self.max_lead, h["aux2"] - h["aux"])
        if h["flags"] & F_STOP:
            self.stopped = True

    # -- public --

    def server_stats(self):
        """The PS's state (a dict: clocks, held answers, waiting ranks,
        version, samples), over a connection of its own."""
        if self.transport == "xdp":
            raise ValueError("%s.server_stats: the TCP PS's only (with "
                             "transport='xdp', stats()['store'] and "
                             "rinxctl stats)" % self._op)
        s = socket.create_connection(self.ps_addr, timeout=(
            self.timeout_ms + CLIENT_SLACK_MS) / 1000.0)
        try:
            _send(s, T_STATS, rank=self.rank)
            h, payload = _recv(s)
        except OSError as e:
            raise self._fail(e, "to STATS") from None
        finally:
            s.close()
        return json.loads(payload.decode())

    def finish(self):
        """Waits until every rank finished and takes the PS's final
        parameters: afterwards every rank holds the same ones."""
        if self.finished:
            return
        if self._store is not None:
            self._store.finish(self._p)
            self._assign(self._p)
            self.finished = True
            self.close()
            return
        h, payload = self._call(T_DONE, "to DONE (waiting for every rank "
                                "to finish)")
        self._expect(h, T_PARAMS, "DONE")
        self._assign(_floats_client(payload, self.n, self._op))
        self.version = h["iter"]
        self.samples = h["samples"]
        self.finished = True
        self.close()

    def _close_store(self):
        if self._store is not None:
            self._store.close()
            self._store = None
        for c in self._pscomms:
            c.close()
        self._pscomms = []

    def close(self):
        self._close_store()
        self._drop()
        if self.server is not None:
            self.server.close()
            self.server = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def stats(self):
        d = {"mode": self.mode, "steps": self.steps, "held": self.held,
             "max_lead": self.max_lead, "version": self.version,
             "samples": self.samples, "staleness": self.staleness,
             "s_ps": self.s_ps, "transport": self.transport}
        if self._store is not None:
            d["store"] = self._store.stats()
        return d


def comm_token(comm):
    """The job token every rank of the comm was opened with."""
    return getattr(comm, "token", 0)


def _floats_client(payload, n, op):
    if len(payload) != 4 * n:
        raise MismatchError(op, _errno.EMSGSIZE, "the parameter server sent "
                            "%d values, expected %d" % (len(payload) // 4, n))
    return np.frombuffer(payload, dtype="<f4").astype(np.float32)


class ASP(_PSMode):
    """Asynchronous parallel: each step pushes this rank's gradient, the PS
    applies it at once and answers with its current parameters."""
    mode = "asp"

    def __init__(self, comm, params, lr, momentum=0.0, **kw):
        if kw.get("staleness") is not None:
            raise ValueError("rinx.sync.ASP: no staleness bound (use SSP)")
        kw.pop("staleness", None)
        super().__init__(comm, params, lr, momentum, None, **kw)

    def step(self):
        """Pushes the gradient (p.grad), takes the PS's parameters. Returns
        False once the PS has the `total` rank-iterations asked for."""
        if self._store is not None:
            return self._xdp_step()
        g = self._flat_grad()
        h, payload = self._call(T_PUSH, "to the push of iteration %d"
                                % self.steps, it=self.steps, payload=g)
        self._expect(h, T_PARAMS, "PUSH")
        self._assign(_floats_client(payload, self.n, self._op))
        self.steps += 1
        self._note(h)
        return not self.stopped


class SSP(ASP):
    """Stale synchronous parallel: ASP whose answers are held while this
    rank is more than `staleness` iterations ahead of the slowest."""
    mode = "ssp"

    def __init__(self, comm, params, lr, momentum=0.0, staleness=None, **kw):
        if staleness is None:
            raise ValueError("rinx.sync.SSP: staleness= is required (an "
                             "integer >= 0)")
        _PSMode.__init__(self, comm, params, lr, momentum, staleness, **kw)


class InHAD(_PSMode):
    """Iteration-number-based hierarchical aggregation: group sums by rinx,
    iteration numbers to the PS, the PS pulls by its counts, bounded
    staleness between groups."""
    mode = "inhad"

    def __init__(self, comm, params, lr, momentum=0.0, staleness=None,
                 groups=None, group_size=None, pull_every=1,
                 group_job=None, group_ina=True, **kw):
        op = "rinx.sync.InHAD"
        if staleness is None:
            raise ValueError("%s: staleness= is required (an integer >= 0)"
                             % op)
        if int(pull_every) != pull_every or pull_every < 1:
            raise ValueError("%s: pull_every must be an integer >= 1" % op)
        if not isinstance(comm, Comm):
            raise TypeError("%s: comm must be a rinx.Comm" % op)
        # before any communicator opens: a rank that raises after its
        # open may leave the others waiting for its part of the open
        if (kw.get("transport") or os.environ.get("RINX_PS", "tcp")) == \
                "xdp" and staleness < pull_every - 1:
            raise ValueError("%s: with transport='xdp' staleness (%s) must "
                             "be >= pull_every - 1 (%d): the store counts a "
                             "group's iterations by its pushes, %d at a "
                             "time" % (op, staleness, pull_every - 1,
                                       pull_every))
        size = comm.size
        if groups is None:
            if group_size:
                if size % group_size:
                    raise ValueError("%s: group_size %d does not divide %d "
                                     "ranks" % (op, group_size, size))
                groups = [list(range(i, i + group_size))
                          for i in range(0, size, group_size)]
            else:
                hosts, _ = _spec_hosts(comm.spec)
                racks = {}
                for r in sorted(hosts):
                    racks.setdefault(hosts[r]["rack"], []).append(r)
                groups = [racks[k] for k in sorted(racks)]
        groups = [sorted(int(r) for r in g) for g in groups]
        flat = sorted(r for g in groups for r in g)
        if flat != list(range(size)) or any(not g for g in groups):
            raise ValueError("%s: groups %s must cover every rank 0..%d "
                             "once" % (op, groups, size - 1))
        self.group = next(i for i, g in enumerate(groups) if comm.rank in g)
        self.members = groups[self.group]
        self.gcomm = None
        self._gspec = None
        self.group_plan = None  # the group's sum: "rina" (its rack's INA)
        self.s_group = 0.0      # seconds in the group's allreduce
        self.lr_local = float(lr)
        self.mu = float(momentum)
        if len(self.members) > 1:
            # the group's own communicator: a job id of its own, beside
            # the world's on these nodes
            gjob = comm.job + 1 if group_job is None else int(group_job)
            self._gspec = _group_spec(comm.spec, self.members,
                                      ina=group_ina)
            try:
                self.gcomm = Comm(self._gspec, self.members.index(comm.rank),
                                  job=gjob, token=comm_token(comm),
                                  timeout_ms=kw.get("timeout_ms", 10000))
            except Exception:
                os.unlink(self._gspec)
                raise
            # the plan its spec names: rina where its rack's INA sums
            self.group_plan = self.gcomm.plan
        try:
            super().__init__(comm, params, lr, momentum, staleness,
                             groups=groups, pull_every=pull_every, **kw)
        except Exception:
            self._close_group()
            raise
        self.acc = np.zeros(self.n, dtype=np.float32)
        self.k = 0
        self.vloc = np.zeros(self.n, dtype=np.float32)
        self.pulls = 0
        if self.transport == "xdp":
            try:
                self._xdp_start()
            except Exception:
                self.close()
                raise

    def step(self):
        """Sums the gradient in the group (rinx), takes a local step with
        the group's average, reports the iteration to the PS; when the PS
        pulls, hands it the group's gradients since the last pull and takes
        the PS's parameters. Returns False once the PS has `total`."""
        g = self._flat_grad()
        if self.gcomm is not None:
            t0 = time.perf_counter()
            self.gcomm.allreduce(g)
            self.s_group += time.perf_counter() - t0
            g /= np.float32(len(self.members))
        self.acc += g
        self.k += 1
        if self.transport == "xdp":
            return self._xdp_group_step(g)
        t = self.steps
        agent = self.members[0] == self.rank
        h, payload = self._call(T_REPORT, "to the report of iteration %d"
                                % t, group=self.group, it=t)
        if h["type"] == T_PULL and agent:
            h, payload = self._call(T_GRAD, "to the group's gradient",
                                    group=self.group, it=t, aux=self.k,
                                    payload=self.acc)
            self.acc[:] = 0
            self.k = 0
        if h["type"] == T_PARAMS:
            self._assign(_floats_client(payload, self.n, self._op))
            self.vloc[:] = 0
            self.pulls += 1
            if not agent:
                self.acc[:] = 0
                self.k = 0
        elif h["type"] == T_GO:
            # the group's own step until the PS pulls: local momentum SGD
            # with the group's average, identical on every member
            self.vloc *= np.float32(self.mu)
            self.vloc += g
            flat = self._flat()
            flat -= np.float32(self.lr_local) * self.vloc
            self._assign(flat)
        else:
            self._expect(h, T_PARAMS, "REPORT")
        self.steps += 1
        self._note(h)
        return not self.stopped

    # -- on rinx's data plane (transport "xdp") --

    def _xdp_open_groups(self, comm, lr, momentum, scale, total, ps_job):
        """The store (rinx.ps) in the host program of the agent of rank
        ps_rank's group, on a communicator of the groups' agents only (job
        comm.job + 5, or ps_job; a spec of their hosts): each agent is one
        worker of the store and pushes its group's update every k =
        pull_every group iterations, so the store's clock of a worker (its
        pushes, counted and bounded in XDP) is its group's iterations / k.
        The bound s in iterations is the store's bound S = (s + 1) // k - 1
        in pushes: a push of iteration t is refused past it, and a pull
        waits until the group is at most S k <= s iterations ahead of the
        slowest group's pushed iterations. Needs s >= k - 1 (else the
        slowest group's own next push would be past the bound)."""
        from . import ps as _ps
        k = self.pull_every
        s = self.staleness
        self.lr = float(lr)
        self.scale = None if scale is None else float(scale)
        self.total = total
        self.agents = [grp[0] for grp in self.groups]
        self.agent = self.rank == self.members[0]
        self.store_staleness = (s + 1) // k - 1
        self.pushed = 0         # group iterations the store has
        self._p = self._flat()
        self._aspec = None
        if not self.agent:
            return
        server = next(i for i, grp in enumerate(self.groups)
                      if self.ps_rank in grp)
        job = comm.job + 5 if ps_job is None else int(ps_job)
        self._v = np.zeros(self.n, dtype=np.float32)
        self._aspec = _agents_spec(comm.spec, self.agents)
        try:
            self._pscomms.append(Comm(self._aspec, self.group, job=job,
                                      token=comm_token(comm), plan="ps",
                                      timeout_ms=self.timeout_ms))
            try:
                self._store = _ps.Store(self._pscomms[0], self.n, server,
                                        init=self._p,
                                        staleness=self.store_staleness)
                self._store.pull(self._p)
            except Exception:
                self._close_store()
                raise
        except Exception:
            os.unlink(self._aspec)
            self._aspec = None
            raise

    def _xdp_start(self):
        """Every member starts from the agent's first pull."""
        self._group_bcast()
        self._assign(self._p)

    def _group_bcast(self):
        """The agent's self._p to every member, bit for bit: a rinx
        allreduce of its bits as int32 (exact, wrapping) against zeros."""
        if self.gcomm is None:
            return
        if self.agent:
            self.gcomm.allreduce(self._p.view(np.int32))
            return
        b = self._p.view(np.int32)
        b.fill(0)
        self.gcomm.allreduce(b)

    def _xdp_push(self):
        """The agent: the update of the group's k iterations since its
        last push (as Server._apply, with this agent's momentum buffer,
        f = k x members / size or scale x k) into the store."""
        k = self.k
        f = (k * len(self.members) / self.size if self.scale is None
             else self.scale * k)
        g = self.acc / np.float32(k)
        self._own_momentum(g, f, len(self.groups))
        self._store.push(np.ascontiguousarray(
            self._v * np.float32(-self.lr * f)))
        self.pushed += k

    def _xdp_group_step(self, g):
        """k new iterations in: the agent pushes them and pulls (the pull
        waits for the bound), every member takes its parameters; else the
        group's local momentum step."""
        if self.k >= self.pull_every:
            t0 = time.perf_counter()
            if self.agent:
                self._xdp_push()
                self._store.pull(self._p)
                st = self._store.stats()
                self.held = st["held"]
                if st["min_clock"] != (1 << 64) - 1:
                    self.version = st["min_clock"]
                    self.max_lead = max(self.max_lead, (
                        st["clock"] - st["min_clock"]) * self.pull_every)
            self._group_bcast()
            self.s_ps += time.perf_counter() - t0
            self._assign(self._p)
            self.vloc[:] = 0
            self.acc[:] = 0
            self.k = 0
            self.pulls += 1
        else:
            self.vloc *= np.float32(self.mu)
            self.vloc += g
            flat = self._flat()
            flat -= np.float32(self.lr_local) * self.vloc
            self._assign(flat)
        self.steps += 1
        # every rank does its share of `total` rank-iterations
        self.samples = self.steps * self.size
        if self.total is not None and self.samples >= self.total:
            self.stopped = True
        return not self.stopped

    def _xdp_finish(self):
        """The agent pushes what the store has not got yet and takes the
        final store (once every agent left); its members take it from it."""
        if self.agent:
            if self.k:
                self._xdp_push()
            self._store.finish(self._p)
        self.acc[:] = 0
        self.k = 0
        self._group_bcast()
        self._assign(self._p)
        self.finished = True
        # A member whose result of that last group allreduce was lost
        # asks the others for it: the group communicator's close stays
        # until every member closed (rinx_comm_close)
        self.close()

    def _close_group(self):
        if getattr(self, "_aspec", None) is not None:
            try:
                os.unlink(self._aspec)
            except OSError:
                pass
            self._aspec = None
        if self.gcomm is not None:
            self.gcomm.close()
            self.gcomm = None
        if self._gspec is not None:
            try:
                os.unlink(self._gspec)
            except OSError:
                pass
            self._gspec = None

    def finish(self):
        """Hands the PS the group's gradients it has not pulled yet (the
        agent), then as ASP.finish."""
        if self.finished:
            return
        if self.transport == "xdp":
            return self._xdp_finish()
        if self.members[0] == self.rank:
            h, _ = self._call(T_GRAD, "to the group's last gradient",
                              group=self.group, it=self.steps, aux=self.k,
                              payload=self.acc)
            self._expect(h, T_GO, "GRAD")
            self.acc[:] = 0
            self.k = 0
        super().finish()

    def close(self):
        super().close()
        self._close_group()

    def stats(self):
        d = super().stats()
        d.update(group=self.group, members=self.members, pulls=self.pulls,
                 s_group=self.s_group, group_plan=self.group_plan)
        if self.transport == "xdp":
            d.update(pushed=self.pushed, agent=self.agent,
                     store_staleness=self.store_staleness)
        return d


