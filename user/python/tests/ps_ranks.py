# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""One rank of the test of the parameter server on rinx's data plane
(rinx.ps, and rinx.sync's ASP, SSP and InHAD on it; a push past the bound
and one of another job's worker refused); selftests/test_ps_net.sh runs one
per host namespace through tools/train/run.sh, with and without injected
loss and duplication. Every check prints

    check<TAB>name<TAB>1|0<TAB>detail

Pushes are generated from (rank, iteration) as multiples of 1/16, so that
the store's sums are exact in its fixed point and in float32 whatever the
order: every rank computes the final store itself and compares it element
by element.

    ps_ranks.py --job J [--tag TAG] [--steps N]
"""
import argparse
import hashlib
import os
import time

import numpy as np
import torch

import rinx
import rinx.ps
import rinx.sync as rs
from checks import check, phase, raises

RANK = int(os.environ["RANK"])
N = int(os.environ["WORLD_SIZE"])
SPEC = os.environ["RINX_SPEC"]
TOKEN = int(os.environ.get("RINX_TOKEN", "0"))
NP = 2000               # three blocks of 768, the last one short


def p0():
    return (np.arange(NP, dtype=np.float32) % 97 - 48) / np.float32(8)


def delta(r, t):
    g = np.random.default_rng([5, r, t]).integers(-40, 41, NP)
    return (g / 16.0).astype(np.float32)


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def barrier(world):
    world.allreduce(np.zeros(1, dtype=np.float32))


def check_final(name, out, steps):
    """The final store `out` must be p0 plus `steps` pushes of every rank,
    element by element."""
    want = p0().astype(np.float64)
    for r in range(N):
        for t in range(steps):
            want += delta(r, t)
    bad = np.flatnonzero(out.astype(np.float64) != want)
    check("%s: final store equals p0 + every push, element by element"
          % name, bad.size == 0, "%d differ, first %s" % (
              bad.size, bad[:3].tolist()))


def store_phase(world, tag, job, steps, staleness):
    """Every rank pushes `steps` deltas and pulls after each, as fast as
    it can (rank N-1 slowest); the final store must be p0 plus every
    push, exactly, on every rank."""
    name = "%s %s" % (tag, "ssp" if staleness is not None else "asp")
    comm = rinx.Comm(SPEC, RANK, job=job, token=TOKEN, plan="ps",
                     timeout_ms=20000)
    st = rinx.ps.Store(comm, NP, server=0, init=p0(), staleness=staleness)
    out = np.zeros(NP, dtype=np.float32)
    st.pull(out)
    barrier(world)      # no push before every rank's first pull
    check("%s: the first pull is the server's initial values" % name,
          np.array_equal(out, p0()), digest(out))
    lead = 0
    for t in range(steps):
        st.push(delta(RANK, t))
        st.pull(out)
        s = st.stats()
        if s["min_clock"] != (1 << 64) - 1:
            lead = max(lead, t + 1 - s["min_clock"])
        if RANK == N - 1:
            time.sleep(0.01)    # the straggler
    st.finish(out)
    check_final(name, out, steps)
    s = st.stats()
    check("%s: %d pushes and %d pulls made" % (name, steps, steps + 1),
          s["pushes"] == steps and s["pulls"] == steps + 1, s)
    if staleness is not None:
        check("%s: no pull returned more than %d iterations ahead of the "
              "slowest rank" % (name, staleness), lead <= staleness,
              "lead %d" % lead)
    print("psstats\t%s\t%d\t%d\t%d" % (name, s["frames"], s["resent"],
                                       s["held"]), flush=True)
    if RANK == 0:
        raises("%s: an allreduce on the store's communicator is refused"
               % name, rinx.BusyError,
               lambda: comm.allreduce(np.zeros(4, dtype=np.float32)),
               "parameter server")
    st.close()
    comm.close()


def shards_phase(world, tag, job, steps, staleness):
    """The store split over ranks 0 and 2 (rinx.ps.Shards), every rank
    pushing and pulling through Shards.pushpull (without a bound every
    part's frames at once, rinx_ps_pushpull_many; with one part by part):
    the final store must be p0 plus every push, exactly, and every part
    must have taken each push once."""
    name = "%s shards %s" % (tag, "ssp" if staleness is not None else "asp")
    comms = [rinx.Comm(SPEC, RANK, job=job + i, token=TOKEN, plan="ps",
                       timeout_ms=20000) for i in range(2)]
    st = rinx.ps.Shards(comms, NP, servers=[0, 2], init=p0(),
                        staleness=staleness)
    out = np.zeros(NP, dtype=np.float32)
    barrier(world)
    for t in range(steps):
        st.pushpull(delta(RANK, t), out)
        if RANK == N - 1:
            time.sleep(0.005)   # the straggler
    st.finish(out)
    check_final(name, out, steps)
    parts = [p.stats() for p in st.stores]
    check("%s: each of the 2 parts took %d pushes" % (name, steps),
          all(s["pushes"] == steps and s["clock"] == steps for s in parts),
          [(s["pushes"], s["clock"]) for s in parts])
    if RANK == 0 and staleness is None:
        import errno
        from rinx import _lib_handle
        bad_k = [_lib_handle.rinx_ps_pushpull_many(None, k, None, None)
                 for k in (0, 17)]
        check("%s: rinx_ps_pushpull_many with 0 or 17 parts: EINVAL, "
              "refused" % name, bad_k == [-errno.EINVAL] * 2, bad_k)
    st.close()
    for c in comms:
        c.close()


def lsq_problem():
    """The least-squares problem both training phases learn: the true
    weights, every rank's data, this rank's rows, a fresh model."""
    torch.manual_seed(0)
    rng = np.random.default_rng(17)
    w_true = rng.standard_normal(64).astype(np.float32)
    x = torch.from_numpy(rng.standard_normal((256, 64)).astype(np.float32))
    y = x @ torch.from_numpy(w_true)
    mine = slice(RANK * 64, RANK * 64 + 64)
    return w_true, x, y, mine, torch.nn.Linear(64, 1, bias=False)


def train_phase(tag, job, mode, steps):
    """rinx.sync on the store: a small least-squares problem with real
    gradients (torch autograd) must converge, every rank ending with the
    same parameters."""
    w_true, x, y, mine, model = lsq_problem()

    def loss():
        with torch.no_grad():
            return float(((model(x).squeeze(1) - y) ** 2).mean())
    # the start: every rank's model is rank 0's, the store's first values
    # (the pull in the constructor may already bring the others' pushes)
    l0 = loss()
    world = rinx.Comm(SPEC, RANK, job=job, token=TOKEN, timeout_ms=20000)
    kw = {"staleness": 2} if mode == "ssp" else {}
    sync = (rs.SSP if mode == "ssp" else rs.ASP)(
        world, model.parameters(), lr=0.1, momentum=0.5, transport="xdp",
        total=steps * N, **kw)
    while True:
        model.zero_grad()
        ((model(x[mine]).squeeze(1) - y[mine]) ** 2).mean().backward()
        if not sync.step():
            break
    sync.finish()
    l1 = loss()
    name = "%s %s training" % (tag, mode)
    check("%s: the loss below 1%% of its start" % name, l1 < 0.01 * l0,
          "%.4g -> %.4g" % (l0, l1))
    print("digest\t%s\t%s" % (name, digest(
        model.weight.detach().numpy())), flush=True)
    check("%s: transport xdp, %d steps" % (name, sync.steps),
          sync.stats()["transport"] == "xdp" and sync.steps == steps,
          sync.stats())
    world.close()


def momentum_phase(tag, job, steps=12, lr=0.1, mu=0.5, shards=1):
    """ASP on the store with momentum: each rank pushes its own constant
    gradient (multiples of 1/16) `steps` times through its own momentum
    buffer, which must forget as fast as BSP's (decay mu per push: N
    pushes of f = 1/N per synchronous step). The final parameters do not
    depend on the order of the pushes: every rank computes them in
    float64 from every rank's gradient and compares them element by
    element (the store's fixed point and float32 stay far below the
    tolerance; a decay of mu^f misses it by orders of magnitude). With
    shards > 1 the store is split over that many servers (rinx.ps.Shards)
    and every part must be right."""
    n = 1000
    grads = [((np.arange(n) % 7 - 3 + r) / 16.0) for r in range(N)]
    w = torch.nn.Parameter(torch.from_numpy(p0()[:n].copy()))
    world = rinx.Comm(SPEC, RANK, job=job, token=TOKEN, timeout_ms=20000)
    sync = rs.ASP(world, [w], lr=lr, momentum=mu, transport="xdp",
                  total=steps * N, ps_shards=shards)
    g = torch.from_numpy(grads[RANK].astype(np.float32))
    while True:
        w.grad = g
        if not sync.step():
            break
    want = p0()[:n].astype(np.float64)
    f = 1.0 / N
    for r in range(N):
        v = np.zeros(n)
        for _ in range(steps):
            v = mu * v + grads[r]
            want -= lr * f * v
    err_pp = 0.0
    if shards > 1:
        # every rank's pushes are in: a push of zeros answers every part
        # with the final values (a push more per part and rank)
        world.allreduce(np.zeros(1, dtype=np.float32))
        out = np.zeros(n, dtype=np.float32)
        sync._store.pushpull(np.zeros(n, dtype=np.float32), out)
        err_pp = float(np.max(np.abs(out.astype(np.float64) - want)))
    sync.finish()
    err = max(err_pp, float(np.max(np.abs(
        w.detach().numpy().astype(np.float64) - want))))
    on = "" if shards == 1 else ", the store on %d servers" % shards
    check("%s asp momentum%s: every parameter as BSP's momentum would make "
          "it, %d pushes per rank" % (tag, on, sync.steps),
          err < 1e-4 and sync.steps == steps, "max error %.3g" % err)
    sync.close()
    world.close()


def foreign_push(job, block, nblocks, count):
    """A push into job `job`'s store at rank 0 from a worker of another job
    (the same job id, another token), sent as a plain UDP datagram: the
    server's host program must drop it (drop_token) and leave the store."""
    import socket
    import struct
    port = ip0 = None
    with open(SPEC) as f:
        for line in f:
            w = line.split()
            kv = dict(x.split("=", 1) for x in w[1:] if "=" in x)
            if w and w[0] == "cluster":
                port = int(kv.get("port", 47000))
            if w and w[0] == "host" and kv.get("rank") == "0":
                ip0 = kv["ip"]
    hdr = struct.pack(">IBBBBIQIIIHHHhHIQ", 0x52494e58, 2, 7, 0, 0, job,
                      (TOKEN ^ 0x5a5a) & ((1 << 64) - 1), 1, block, nblocks,
                      RANK, count, 0, 0, 2, 0, 0)
    vals = np.full(768, 1 << 20, dtype="<i4").tobytes()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _ in range(5):
            s.sendto(hdr + vals, (ip0, port))
    finally:
        s.close()


def refusal_phase(world, tag, job):
    """A store with bound 0: rank 3 pushes iteration 0 (added), then
    iteration 1 while the others are at clock 0 (refused: ESTALE, counted
    by the server as ps_stale), and a worker of another job pushes into
    block 0 (dropped: drop_token); after the others' first push rank 3's
    iteration 1 passes. The final store must be p0 plus the added pushes
    exactly: the refused ones left nothing."""
    import errno
    name = "%s refusals" % tag
    comm = rinx.Comm(SPEC, RANK, job=job, token=TOKEN, plan="ps",
                     timeout_ms=20000)
    st = rinx.ps.Store(comm, NP, server=0, init=p0(), staleness=0)
    out = np.zeros(NP, dtype=np.float32)
    st.pull(out)
    barrier(world)
    if RANK == 3:
        st.push(delta(3, 0))
        e = raises("%s: a push of iteration 1 with the others at clock 0, "
                   "bound 0: refused" % name, rinx.Error,
                   lambda: st.push(delta(3, 1)), "staleness")
        check("%s: its errno ESTALE, the push refused" % name,
              getattr(e, "errno", None) == errno.ESTALE, repr(e))
        foreign_push(job, 0, (NP + 767) // 768, 768)
    barrier(world)
    if RANK != 3:
        st.push(delta(RANK, 0))
    barrier(world)
    if RANK == 3:
        st.push(delta(3, 1))
    st.finish(out)
    want = p0().astype(np.float64) + delta(3, 1)
    for r in range(N):
        want += delta(r, 0)
    bad = np.flatnonzero(out.astype(np.float64) != want)
    check("%s: final store equals p0 plus the added pushes only" % name,
          bad.size == 0, "%d differ, first %s" % (bad.size,
                                                  bad[:3].tolist()))
    st.close()
    comm.close()


def inhad_phase(tag, job, steps, k=2, s=1):
    """rinx.sync.InHAD on the store (groups: the racks {0,1} and {2,3}),
    least squares with real gradients, rank 3 slow (its group behind):
    the loss below 1% of its start; the members of a group bit-identical
    after every step (digests for the shell); at every step of an agent
    its store holds the group's iterations but fewer than k; no pull
    answered while the group was more than s iterations ahead of the
    slowest group's pushed ones (the lead from the server's clocks); the
    faster group's agent held at least once (the bound bites)."""
    w_true, x, y, mine, model = lsq_problem()
    world = rinx.Comm(SPEC, RANK, job=job, token=TOKEN, timeout_ms=20000)
    raises("%s inhad: a bound below pull_every - 1 raises ValueError" % tag,
           ValueError, lambda: rs.InHAD(
               world, model.parameters(), lr=0.1, staleness=1,
               pull_every=3, transport="xdp", group_job=job + 2,
               ps_job=job + 6), "pull_every")
    sync = rs.InHAD(world, model.parameters(), lr=0.1, momentum=0.5,
                    staleness=s, pull_every=k, transport="xdp",
                    total=steps * N, group_job=job + 1, ps_job=job + 5)
    name = "%s inhad training" % tag
    barrier(world)

    def loss():
        with torch.no_grad():
            return float(((model(x).squeeze(1) - y) ** 2).mean())
    l0 = loss()
    behind = 0
    while True:
        model.zero_grad()
        ((model(x[mine]).squeeze(1) - y[mine]) ** 2).mean().backward()
        if RANK == 3:
            time.sleep(0.004)   # its group is the slow one
        more = sync.step()
        print("gdigest\t%s %d\t%d\t%s" % (name, sync.steps, sync.group,
                                           digest(model.weight.detach()
                                                  .numpy())), flush=True)
        if sync.agent:
            behind = max(behind, sync.steps - sync.pushed)
        if not more:
            break
    st = sync.stats()
    sync.finish()
    l1 = loss()
    check("%s: the loss below 1%% of its start" % name, l1 < 0.01 * l0,
          "%.4g -> %.4g" % (l0, l1))
    print("digest\t%s\t%s" % (name, digest(
        model.weight.detach().numpy())), flush=True)
    check("%s: transport xdp, %d steps, %d pulls" % (name, steps,
                                                     steps // k),
          st["transport"] == "xdp" and sync.steps == steps and
          st["pulls"] == steps // k, st)
    if sync.agent:
        check("%s: an agent's store has its group's iterations but fewer "
              "than %d" % (name, k), behind < k, "at most %d behind" % behind)
        check("%s: no agent's pull answered more than %d iterations ahead "
              "of the slowest group" % (name, s), st["max_lead"] <= s,
              "lead %d" % st["max_lead"])
        print("inhadstats\t%d\t%s" % (sync.group, st["store"]), flush=True)
        if sync.group == 0:
            check("%s: the faster group's agent was held for the bound"
                  % name, st["held"] > 0, st["store"])
    world.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", type=lambda v: int(v, 0), required=True)
    ap.add_argument("--tag", default="clean")
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    phase("start")
    world = rinx.Comm(SPEC, RANK, job=a.job + 3, token=TOKEN,
                      timeout_ms=20000)
    store_phase(world, a.tag, a.job, a.steps, None)
    phase("asp")
    store_phase(world, a.tag, a.job + 1, a.steps, 1)
    phase("ssp")
    shards_phase(world, a.tag, a.job + 40, a.steps, None)
    shards_phase(world, a.tag, a.job + 42, a.steps, 1)
    phase("shards")
    world.close()
    train_phase(a.tag, a.job + 2, "asp", 120)
    train_phase(a.tag, a.job + 8, "ssp", 120)
    momentum_phase(a.tag, a.job + 24)
    momentum_phase(a.tag, a.job + 32, shards=2)
    phase("training")
    world = rinx.Comm(SPEC, RANK, job=a.job + 3, token=TOKEN,
                      timeout_ms=20000)
    refusal_phase(world, a.tag, a.job + 14)
    world.close()
    phase("refusals")
    inhad_phase(a.tag, a.job + 16, 120)
    phase("done")


if __name__ == "__main__":
    main()
