# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""One rank of the test of rinx.sync (ASP, SSP, InHAD on a parameter
server); selftests/test_sync.sh runs one per host namespace of a testbed of
2 racks x 2 hosts through tools/train/run.sh. Every check prints

    check<TAB>name<TAB>1|0<TAB>detail

and the shell passes a check when every rank that reached it passed it.
Gradients are generated here from (rank, iteration) so that every rank can
compute every reference itself; the PS (rank 0) must apply them exactly as
its mode's definition says. Blocking is checked with the PS's iteration
counters (its STATS answer), never with timing.

    sync_ranks.py [--timeout-ms N]
"""
import argparse
import errno
import hashlib
import os
import socket
import sys
import time

import numpy as np
import torch

import rinx
from checks import check, phase, raises
import rinx.sync as rs

RANK = int(os.environ["RANK"])
N = int(os.environ["WORLD_SIZE"])
NP = 1000               # parameters of the toy model


def p0():
    return (np.arange(NP, dtype=np.float32) % 97 - 48) / np.float32(8)


def grad_f(r, t):
    """float32 gradient of rank r at iteration t (any values)."""
    g = np.random.default_rng([7, r, t]).standard_normal(NP)
    return g.astype(np.float32)


def grad_i(r, t):
    """Small integers: sums of them are exact in float32 in any order."""
    g = np.random.default_rng([11, r, t]).integers(-20, 21, NP)
    return g.astype(np.float32)


def model(init):
    w = torch.nn.Parameter(torch.from_numpy(init.copy()))
    return [w]


def set_grad(ps, g):
    ps[0].grad = torch.from_numpy(g.copy())


def flat(ps):
    return ps[0].detach().numpy().copy()


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def wait_for(sync, pred, what, limit=30.0):
    """Polls the PS's counters until pred(stats) (bounded)."""
    end = time.time() + limit
    st = None
    while time.time() < end:
        st = sync.server_stats()
        if pred(st):
            return True, st
        time.sleep(0.002)
    return False, st


def barrier(comm):
    comm.allreduce(np.zeros(1, dtype=np.int32))


def mine_or_zero():
    return p0() if RANK == 0 else np.zeros(NP, dtype=np.float32)


# ---- ASP: pushes in a known order ----

def test_asp(comm, port):
    phase("asp")
    lr, mu, scale = 0.5, 0.5, 0.25
    ps = model(mine_or_zero())
    s = rs.ASP(comm, ps, lr=lr, momentum=mu, scale=scale, port=port,
               timeout_ms=TMO)
    check("asp: every rank starts from the PS's parameters (rank 0's)",
          np.array_equal(flat(ps), p0()), "")
    # every rank has its start before the first push: a rank that
    # connected after it would start from the pushed-to parameters
    barrier(comm)
    order = [2, 0, 3, 1]
    rounds = 3
    seq = [(order[i % N], i // N) for i in range(rounds * N)]
    # the reference: the PS's update, in float32, push after push
    ref_p, ref_v, refs = p0(), np.zeros(NP, dtype=np.float32), []
    d = mu ** scale     # each push worth `scale` synchronous steps
    for r, t in seq:
        ref_v *= np.float32(d)
        ref_v += grad_f(r, t) * np.float32((1 - d) / (1 - mu))
        ref_p = ref_p - np.float32(lr * scale) * ref_v
        refs.append(ref_p.copy())
    good, vers = True, []
    for k, (r, t) in enumerate(seq):
        if r != RANK:
            continue
        ok, st = wait_for(s, lambda st: st["version"] == k, "turn %d" % k)
        if not ok:
            check("asp: turn %d comes" % k, False, st)
            return
        set_grad(ps, grad_f(RANK, t))
        s.step()
        vers.append(s.version)
        if s.version != k + 1 or not np.array_equal(flat(ps), refs[k]):
            good = False
    check("asp: each push applied at once in arrival order, the answer is "
          "the sequentially updated parameters (bit-exact)", good and
          len(vers) == rounds, "versions %s" % vers)
    s.finish()
    check("asp: after finish every rank holds the final parameters",
          np.array_equal(flat(ps), refs[-1]) and s.version == len(seq),
          "version %d" % s.version)
    print("digest\tasp\t%s" % digest(flat(ps)), flush=True)


# ---- SSP: the fast ranks are held at the bound ----

def test_ssp(comm, port, sb=2, iters=6):
    phase("ssp")
    ps = model(mine_or_zero())
    s = rs.SSP(comm, ps, lr=1.0, staleness=sb, scale=1.0, port=port,
               timeout_ms=TMO)
    slow = N - 1
    if RANK == slow:
        # the others must stop at clock sb + 1 while this rank is at 0
        want = {str(r): sb + 1 for r in range(N - 1)}
        ok, st = wait_for(s, lambda st: st["waiting"] == want,
                          "fast ranks held")
        check("ssp: ranks 0-%d held at clock %d (staleness %d) while rank "
              "%d has pushed nothing" % (N - 2, sb + 1, sb, slow),
              ok and st["clock"] == [sb + 1] * (N - 1) + [0] and
              st["min_clock"] == 0, st)
    for t in range(iters):
        set_grad(ps, grad_i(RANK, t))
        s.step()
        if RANK == slow and t == 0:
            # one push of the slow rank lets the others take one more
            # step, not two
            want = {str(r): sb + 2 for r in range(N - 1)}
            ok, st = wait_for(s, lambda st: st["waiting"] == want,
                              "fast ranks held again")
            check("ssp: after the slow rank's first push the others are "
                  "held again at clock %d" % (sb + 2), ok and
                  st["clock"] == [sb + 2] * (N - 1) + [1], st)
    check("ssp: no answer more than %d iterations ahead of the slowest "
          "rank (max lead %d, held %d times)" % (sb, s.max_lead, s.held),
          s.max_lead <= sb and (RANK == slow or (s.held >= 1 and
                                                 s.max_lead == sb)),
          s.stats())
    s.finish()
    ref = p0() - sum(grad_i(r, t) for r in range(N) for t in range(iters))
    check("ssp: final parameters = start - every pushed gradient (exact)",
          np.array_equal(flat(ps), ref.astype(np.float32)) and
          s.version == N * iters, "version %d" % s.version)


# ---- InHAD: groups (racks) sum by rinx, the PS pulls by counts ----

def test_inhad(comm, port, sb=1, pull=2, iters=6):
    phase("inhad")
    ps = model(mine_or_zero())
    s = rs.InHAD(comm, ps, lr=1.0, staleness=sb, pull_every=pull,
                 port=port, timeout_ms=TMO)
    groups = [[0, 1], [2, 3]]
    check("inhad: groups are the spec's racks", [s.members] ==
          [g for g in groups if RANK in g], s.members)
    # a whole rack with INA sums on its ToR (plan rina), else a ring
    want = os.environ.get("RINX_TEST_GROUP_PLAN", "ring")
    check("inhad: the group sums with plan %s" % want,
          s.group_plan == want and s.gcomm.plan == want,
          (s.group_plan, s.gcomm.plan))
    gi = s.group

    def gavg(g, t):
        return (sum(grad_i(r, t).astype(np.float64) for r in groups[g]) /
                len(groups[g]))
    if gi == 1:
        # group 0 runs ahead until its agent is held at clock sb + 1
        if RANK == 2:
            ok, st = wait_for(s, lambda st: st["waiting"] == {"0": sb + 1},
                              "group 0 held")
            check("inhad: group 0's agent held at clock %d (staleness %d) "
                  "while group 1 reported nothing" % (sb + 1, sb),
                  ok and st["clock"] == [sb + 1, 0], st)
        barrier(s.gcomm)
    kinds, good = [], True
    for t in range(iters):
        before = flat(ps).astype(np.float64)
        set_grad(ps, grad_i(RANK, t))
        s.step()
        kind = "pull" if s.pulls > len([k for k in kinds if k == "pull"]) \
            else "go"
        kinds.append(kind)
        a = gavg(gi, t)
        if kind == "go":
            # a local step with the group's average
            exp = before - a
            if np.abs(flat(ps) - exp).max() > 1e-4:
                good = False
        print("digest\tinhad-%d-%d\t%s" % (gi, t, digest(flat(ps))),
              flush=True)
    check("inhad: the PS pulls every %d iterations of a group (counts), "
          "the group steps locally in between" % pull,
          kinds == ["pull" if (t + 1) % pull == 0 else "go"
                    for t in range(iters)], kinds)
    check("inhad: local steps = parameters - the group's averaged "
          "gradient (group sum by rinx)", good, "")
    check("inhad: no group more than %d iterations ahead of the slowest "
          "(max lead %d, held %d)" % (sb, s.max_lead, s.held),
          s.max_lead <= sb and (gi == 1 or RANK != 0 or s.held >= 1),
          s.stats())
    s.finish()
    ref = p0().astype(np.float64) - sum(
        gavg(g, t) for g in range(2) for t in range(iters)) / 2
    err = np.abs(flat(ps) - ref).max()
    check("inhad: final parameters = start - every group's average, "
          "scaled 1/groups (max error %.3g)" % err, err <= 1e-3, "")
    print("digest\tinhad-final\t%s" % digest(flat(ps)), flush=True)


# ---- bad input ----

def test_bad(comm, port):
    phase("bad")
    ps = model(p0())
    raises("bad: SSP without staleness raises ValueError", ValueError,
           lambda: rs.SSP(comm, ps, lr=1.0, port=port), "staleness")
    raises("bad: negative staleness raises ValueError", ValueError,
           lambda: rs.SSP(comm, ps, lr=1.0, staleness=-1, port=port),
           "staleness")
    raises("bad: float64 parameters raise TypeError", TypeError,
           lambda: rs.ASP(comm, [torch.nn.Parameter(torch.zeros(
               3, dtype=torch.float64))], lr=1.0, port=port), "float32")
    raises("bad: lr 0 raises ValueError", ValueError,
           lambda: rs.ASP(comm, ps, lr=0.0, port=port), "lr")
    raises("bad: groups not covering the ranks raise ValueError", ValueError,
           lambda: rs.InHAD(comm, ps, lr=1.0, staleness=1,
                            groups=[[0, 1], [2]], port=port), "cover")
    raises("bad: a group size that does not divide the ranks raises "
           "ValueError", ValueError,
           lambda: rs.InHAD(comm, ps, lr=1.0, staleness=1, group_size=3,
                            port=port), "divide")
    # rank 1 brings a model of another size: the PS refuses it
    n = NP + 5 if RANK == 1 else NP
    ps2 = model(np.zeros(n, dtype=np.float32))
    s = None
    if RANK == 1:
        raises("bad: a model of another size raises rinx.MismatchError",
               rinx.MismatchError, lambda: rs.ASP(
                   comm, ps2, lr=1.0, port=port, timeout_ms=TMO),
               "1005 parameters", "1000")
    else:
        s = rs.ASP(comm, ps2, lr=1.0, port=port, timeout_ms=TMO)
    if RANK == 2:
        # a push of the wrong size, on the wire
        c = socket.create_connection((PS_IP, port), timeout=5)
        import json
        rs._send(c, rs.T_HELLO, payload=json.dumps({
            "rank": 1, "size": N, "n": NP, "mode": "asp",
            "staleness": None, "token": comm.token,
            "groups": None}).encode())
        h, _ = rs._recv(c)
        rs._send(c, rs.T_PUSH, rank=1, payload=np.zeros(7, np.float32))
        h2, text = rs._recv(c)
        c.close()
        check("bad: a push of 7 values is refused with EMSGSIZE, naming "
              "both sizes", h["type"] == rs.T_WELCOME and
              h2["type"] == rs.T_ERROR and h2["aux"] == errno.EMSGSIZE and
              b"7 values" in text and b"1000" in text, text)
    barrier(comm)
    if s is not None:
        s.close()
    barrier(comm)


# ---- a dead PS, a hung PS, a dead worker ----

def test_dead(comm, port):
    phase("dead-ps")
    ps = model(p0())
    s = rs.ASP(comm, ps, lr=1.0, port=port, timeout_ms=TMO)
    set_grad(ps, grad_f(RANK, 0))
    s.step()
    barrier(comm)
    if RANK == 0:
        s.server.kill()
    barrier(comm)
    t = time.time()
    raises("dead PS: the next step raises rinx.sync.PSError", rs.PSError,
           s.step, "parameter server", "lost")
    el = time.time() - t
    check("dead PS: raised within 3 s (%.2f s)" % el, el < 3.0, "")
    s.close()
    barrier(comm)

    phase("hung-ps")
    tmo = 1000
    s = rs.ASP(comm, ps, lr=1.0, port=port + 1, timeout_ms=tmo)
    barrier(comm)
    if RANK == 0:
        s.server.freeze()
    barrier(comm)
    t = time.time()
    raises("hung PS: the next step raises rinx.TimeoutError naming it",
           rinx.TimeoutError, s.step, "did not answer")
    el = time.time() - t
    bound = (tmo + rs.CLIENT_SLACK_MS) / 1000.0
    check("hung PS: raised after the timeout, %.2f s (bound %.1f s)"
          % (el, bound), bound - 0.2 <= el <= bound + 3.0, "")
    barrier(comm)
    if RANK == 0:
        s.server.kill()
    s.close()
    barrier(comm)

    phase("dead-worker")
    s = rs.SSP(comm, ps, lr=1.0, staleness=0, port=port + 2,
               timeout_ms=10000)
    barrier(comm)
    if RANK == N - 1:
        s._drop()       # as a killed process: the connection ends
    barrier(comm)
    if RANK != N - 1:
        t = time.time()
        set_grad(ps, grad_f(RANK, 0))
        raises("dead worker: the others' next step raises "
               "rinx.TimeoutError naming rank %d" % (N - 1),
               rinx.TimeoutError, s.step, "rank %d lost" % (N - 1), "dead")
        el = time.time() - t
        check("dead worker: raised at once, not after the 10 s timeout "
              "(%.2f s)" % el, el < 3.0, "")
    # nobody leaves before every survivor has seen the dead one
    barrier(comm)
    s.close()


def main():
    global TMO, PS_IP
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout-ms", type=int, default=15000)
    a = ap.parse_args()
    TMO = a.timeout_ms
    comm = rinx.Comm.from_env(timeout_ms=TMO)
    PS_IP = rs._spec_hosts(comm.spec)[0][0]["ip"]
    port = 42000 + (comm.job % 500) * 16
    test_asp(comm, port)
    barrier(comm)
    test_ssp(comm, port + 1)
    barrier(comm)
    test_inhad(comm, port + 2)
    barrier(comm)
    test_bad(comm, port + 3)
    test_dead(comm, port + 4)
    phase("done")
    comm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
