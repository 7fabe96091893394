# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""One rank of the Python binding's test (selftests/test_python.sh runs one
per host namespace through tools/train/run.sh, environment as torchrun sets
it). Every check prints one line

    check<TAB>name<TAB>1|0<TAB>detail

and the shell passes a check when every rank that reached it passed it.
Sums are compared element by element with a reference computed here with
numpy from every rank's inputs (each rank can generate all of them): int32
exact (wrapping), float32 within rinx.f32_bound of the element's block.
The last phase kills the last rank: the others must raise rinx.TimeoutError
naming it within the communicator's timeout.

    ranks.py --header user/librinx.h --uapi uapi/rinx.h [--dead-timeout-ms N]
"""
import argparse
import errno
import hashlib
import os
import re
import signal
import sys
import time

import numpy as np
import torch

import rinx
from checks import check, phase, raises
import rinx.torch

RANK = int(os.environ["RANK"])
N = int(os.environ["WORLD_SIZE"])
BV = rinx.BLOCK_VALUES




# ---- inputs and references, independent of librinx ----

def gen_f32(seed, r, count):
    """Magnitudes from 2^-12 to 2^9 changing per block and rank, both
    signs, every ninth element zero."""
    g = np.random.default_rng([seed, r])
    v = g.standard_normal(count)
    blk = np.arange(count) // BV
    e = (blk * 5 + r * 3 + seed) % 22 - 12
    v = np.ldexp(v, e)
    v[np.arange(count) % 9 == 4] = 0
    return v.astype(np.float32)


def gen_i32(seed, r, count):
    g = np.random.default_rng([seed, r, 32])
    return g.integers(-2**31, 2**31, count, dtype=np.int64).astype(np.int32)


def ref_i32(seed, count):
    acc = np.zeros(count, dtype=np.int64)
    for r in range(N):
        acc += gen_i32(seed, r, count)
    # wrapping sum, as int32_t addition wraps
    return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)


def ref_f32(seed, count):
    """(exact sum in float64, bound per element)."""
    acc = np.zeros(count, dtype=np.float64)
    amax = np.zeros(count, dtype=np.float64)
    for r in range(N):
        v = gen_f32(seed, r, count).astype(np.float64)
        acc += v
        amax = np.maximum(amax, np.abs(v))
    nb = (count + BV - 1) // BV
    bmax = np.zeros(nb)
    np.maximum.at(bmax, np.arange(count) // BV, amax)
    bounds = np.array([rinx.f32_bound(N, m) for m in bmax])
    return acc, bounds[np.arange(count) // BV], bmax


def cmp_f32(name, got, seed, average=False):
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    exact, bound, bmax = ref_f32(seed, got.size)
    if average:
        exact, bound = exact / N, bound / N
    err = np.abs(got - exact)
    bad = np.nonzero(~(err <= bound))[0]
    # the bound may not be so loose that it hides real errors
    loose = [m for m in bmax if rinx.f32_bound(N, m) > np.ldexp(m, -18)]
    detail = "%d elements, worst %.3f of the bound" % (
        got.size, float(np.max(err / np.maximum(bound, 1e-300)))
        if got.size else 0)
    if bad.size:
        i = bad[0]
        detail = "%d of %d wrong, first %d: got %.9g want %.9g bound %.3g" % (
            bad.size, got.size, i, got[i], exact[i], bound[i])
    elif loose:
        detail = "bound implausibly large for amax %g" % loose[0]
    return check(name, not bad.size and not loose and got.size > 0, detail)


def cmp_i32(name, got, seed):
    got = np.asarray(got).reshape(-1)
    want = ref_i32(seed, got.size)
    bad = np.nonzero(got != want)[0]
    detail = "%d elements exact" % got.size
    if bad.size:
        detail = "%d of %d wrong, first %d: got %d want %d" % (
            bad.size, got.size, bad[0], got[bad[0]], want[bad[0]])
    return check(name, not bad.size and got.size > 0, detail)


# ---- the header, for the ctypes mirror ----

def header_fields(text, struct):
    m = re.search(r"struct %s \{(.*?)\n\};" % struct, text, re.S)
    if not m:
        return None
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    names = []
    for decl in body.split(";"):
        decl = decl.strip()
        if decl:
            names.append(re.findall(r"[A-Za-z_]\w*", decl)[-1])
    return names


def phase_config(spec, job):
    """Errors raised before any collective (no rank waits for another)."""
    raises("ConfigError: WORLD_SIZE that does not match the spec",
           rinx.ConfigError, lambda: rinx.Comm.from_env(world_size=N + 1),
           "world size", str(N + 1), "%d hosts" % N)
    env = dict(os.environ)
    try:
        os.environ["WORLD_SIZE"] = str(N + 3)
        raises("ConfigError: from_env names WORLD_SIZE", rinx.ConfigError,
               rinx.Comm.from_env, "WORLD_SIZE=%d" % (N + 3))
        os.environ["WORLD_SIZE"] = str(N)
        os.environ["RANK"] = "one"
        raises("ConfigError: from_env with RANK not an integer",
               rinx.ConfigError, rinx.Comm.from_env, "RANK")
        os.environ["RANK"] = str(RANK)
        del os.environ["RINX_JOB"]
        raises("ConfigError: from_env without RINX_JOB", rinx.ConfigError,
               rinx.Comm.from_env, "RINX_JOB")
        os.environ["RINX_JOB"] = env["RINX_JOB"]
        os.environ["RINX_PLAN"] = "grid"
        raises("ConfigError: a plan the engine does not have",
               rinx.ConfigError, rinx.Comm.from_env, "'grid'",
               "not one of")
        os.environ["RINX_PLAN"] = "ring"
        os.environ["RINX_BLOCK"] = "big"
        raises("ConfigError: RINX_BLOCK not mtu, jumbo or largest",
               rinx.ConfigError, rinx.Comm.from_env, "'big'")
    finally:
        os.environ.clear()
        os.environ.update(env)
    # the last rank names another plan than the others: every open fails,
    # with the plans named where a rank met one of the other plan (a rank
    # that comes late, when the others have left, times out instead)
    e = raises("ConfigError: ranks naming different plans",
               (rinx.ConfigError, rinx.TimeoutError),
               lambda: rinx.Comm(spec, RANK, job=job, timeout_ms=3000,
                                 plan="ps" if RANK == N - 1 else "ring"))
    check("ConfigError: ... names both plans, or the ranks that did not open",
          e is not None and (("same plan" in str(e) and "ps" in str(e)) or
                             (isinstance(e, rinx.TimeoutError) and
                              "did not open" in str(e))), str(e))
    raises("ConfigError: rank outside the spec", rinx.ConfigError,
           lambda: rinx.Comm(spec, N, job=job), "rank %d" % N)
    raises("ConfigError: missing spec file", rinx.ConfigError,
           lambda: rinx.Comm("/nonexistent/rinx.spec", 0, job=job),
           "/nonexistent/rinx.spec")
    raises("ConfigError: job is required", rinx.ConfigError,
           lambda: rinx.Comm(spec, RANK), "job")
    raises("ConfigError: job id beyond 32 bits", rinx.ConfigError,
           lambda: rinx.Comm(spec, RANK, job=(1 << 32) + job), "32-bit")
    # librinx's own check, its text carried by the exception
    raises("ConfigError from librinx: job 0", rinx.ConfigError,
           lambda: rinx.Comm(spec, RANK, job=0), "rinx_comm_open",
           "job id 0")
    raises("ConfigError: a block size that is not mtu, jumbo or largest",
           rinx.ConfigError, lambda: rinx.Comm(spec, RANK, job=job,
                                               block="huge"),
           "'huge'", "not one of")
    # the testbed's MTU (3,400) cannot carry 8,288-byte frames: every rank
    # refuses jumbo blocks at its own open, naming its interface's MTU
    raises("MismatchError: jumbo blocks below their MTU", rinx.MismatchError,
           lambda: rinx.Comm(spec, RANK, job=job, plan="ring",
                             block="jumbo"), "jumbo", "MTU 3400")


def phase_types(comm):
    op = comm.allreduce
    raises("TypeError: float64 numpy array", TypeError,
           lambda: op(np.zeros(8)), "float64")
    raises("TypeError: big-endian float32 numpy array", TypeError,
           lambda: op(np.zeros(8, dtype=">f4")), "dtype")
    raises("TypeError: int64 tensor", TypeError,
           lambda: op(torch.zeros(8, dtype=torch.int64)), "int64")
    raises("TypeError: a list", TypeError, lambda: op([1.0, 2.0]), "list")
    raises("ValueError: non-contiguous numpy array", ValueError,
           lambda: op(np.zeros((8, 8), np.float32)[:, ::2]), "contiguous")
    raises("ValueError: non-contiguous tensor", ValueError,
           lambda: op(torch.zeros(8, 8).t()), "contiguous")
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    raises("ValueError: read-only numpy array", ValueError,
           lambda: op(ro), "read-only")
    # no GPU here: a tensor on the meta device stands for any non-CPU one
    raises("ValueError: tensor not in host memory", ValueError,
           lambda: op(torch.zeros(8, device="meta")), "meta", ".cpu()")
    raises("ValueError: sparse tensor", ValueError,
           lambda: op(torch.zeros(8).to_sparse()), "layout")
    raises("TypeError: averaging an int32 tensor in the hook", TypeError,
           lambda: rinx.torch.allreduce_future(
               comm, torch.zeros(8, dtype=torch.int32)), "float32")
    raises("TypeError: hook state that is not a rinx.Comm", TypeError,
           lambda: rinx.torch.allreduce_future(None, torch.zeros(8)),
           "rinx.Comm")


def digest(x):
    return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()[:16]


def phase_sums(comm):
    count = 5 * BV + 431     # several blocks, a short last one
    st0 = comm.stats()
    nops = 0

    x = gen_f32(11, RANK, count)
    addr = x.ctypes.data
    y = comm.allreduce(x)
    nops += 1
    check("numpy float32: in place (same object, same memory)",
          y is x and x.ctypes.data == addr)
    cmp_f32("numpy float32: every element within the bound", x, 11)
    print("digest\tnumpy-f32\t%s" % digest(x), flush=True)

    x = gen_i32(12, RANK, count)
    comm.allreduce(x)
    nops += 1
    cmp_i32("numpy int32: exact wrapping sums", x, 12)

    # 2-D, Fortran order: contiguous memory, element-wise sum
    x = gen_f32(13, RANK, 96 * 41).reshape(41, 96).T
    comm.allreduce(x)
    nops += 1
    cmp_f32("numpy float32, 2-D Fortran order",
            x.reshape(-1, order="F") if x.flags.f_contiguous and
            not x.flags.c_contiguous else np.zeros(0), 13)

    t = torch.from_numpy(gen_f32(14, RANK, count))
    p = t.data_ptr()
    r = comm.allreduce(t)
    nops += 1
    check("torch float32: in place", r is t and t.data_ptr() == p)
    cmp_f32("torch float32: every element within the bound", t.numpy(), 14)
    print("digest\ttorch-f32\t%s" % digest(t.numpy()), flush=True)

    t = torch.from_numpy(gen_i32(15, RANK, 37 * 100)).reshape(37, 100)
    comm.allreduce(t)
    nops += 1
    cmp_i32("torch int32 2-D: exact wrapping sums", t.numpy(), 15)

    # a view with an offset into a larger buffer: only the view changes
    big = torch.from_numpy(gen_f32(16, RANK, 3000))
    before = big.clone()
    v = big[1000:2500]
    comm.allreduce(v)
    nops += 1
    got = v.numpy().astype(np.float64)
    # reference of the slice: the same generator, elements 1000..2499;
    # librinx's blocks start at the view's first element
    ins = [gen_f32(16, rr, 3000)[1000:2500].astype(np.float64)
           for rr in range(N)]
    ref = np.sum(ins, axis=0)
    amax = np.max(np.abs(ins), axis=0)
    bound = np.array([rinx.f32_bound(N, amax[i - i % BV:i - i % BV + BV].max())
                      for i in range(1500)])
    err = np.abs(got - ref)
    check("torch view at an offset: summed within the bound, the rest of "
          "the buffer untouched",
          bool(np.all(err <= bound)) and
          torch.equal(big[:1000], before[:1000]) and
          torch.equal(big[2500:], before[2500:]),
          "worst %.3f of the bound" % float(np.max(err / bound)))

    x = np.zeros(0, np.float32)
    comm.allreduce(x)
    nops += 1
    check("empty array: no error", x.size == 0)

    # asynchronous: polled with test() to completion, bounded
    x = gen_f32(17, RANK, count)
    req = comm.start(x)
    t0 = time.time()
    polls = 0
    while not req.test():
        polls += 1
        if time.time() - t0 > 20:
            break
    nops += 1
    check("start + test(): completes", req.done, "%d polls" % polls)
    cmp_f32("start + test(): every element within the bound", x, 17)
    check("wait() after completion returns the tensor", req.wait() is x)

    # one request per communicator: a second start is BusyError
    x = gen_i32(18, RANK, count)
    req = comm.start(x)
    raises("BusyError: start while a request is in flight", rinx.BusyError,
           lambda: comm.start(np.zeros(4, np.float32)), "already in flight")
    raises("BusyError: blocking allreduce while a request is in flight",
           rinx.BusyError, lambda: comm.allreduce(np.zeros(4, np.float32)),
           "in flight")
    # wait(0): done, or TimeoutError with the request still running
    try:
        req.wait(0)
        zero = "done at once"
    except rinx.TimeoutError:
        zero = "TimeoutError"
    check("wait(timeout_ms=0): done, or TimeoutError leaving it running",
          req.done == (zero == "done at once"), zero)
    req.wait()
    nops += 1
    cmp_i32("the first request completes correctly after BusyError", x, 18)

    # a request dropped before any progress is cancelled on every rank
    # alike: the communicator is free again and the next sum is right
    req = comm.start(np.ones(4 * BV, np.float32))
    del req
    x = gen_i32(19, RANK, count)
    try:
        comm.allreduce(x)
        nops += 1
        cmp_i32("a dropped request is cancelled: the next allreduce works",
                x, 19)
    except rinx.Error as e:
        check("a dropped request is cancelled: the next allreduce works",
              False, e)

    # hook path: three tensors queued back to back, averaged
    ts = [torch.from_numpy(gen_f32(20 + k, RANK, n))
          for k, n in enumerate((BV * 3, 5, 20000))]
    futs = [rinx.torch.allreduce_future(comm, t) for t in ts]
    nops += 3
    res = [f.wait() for f in futs]
    ok = all(r is t for r, t in zip(res, ts))
    check("rinx.torch.allreduce_future: three queued, each future holds "
          "its own tensor", ok)
    for k, t in enumerate(ts):
        cmp_f32("rinx.torch.allreduce_future #%d: the mean within "
                "bound/n" % k, t.numpy(), 20 + k, average=True)

    t = torch.from_numpy(gen_i32(25, RANK, 3000))
    f = rinx.torch.allreduce_future(comm, t, average=False)
    nops += 1
    cmp_i32("rinx.torch.allreduce_future, average=False: int32 exact sums",
            f.wait().numpy(), 25)

    class Bucket:      # what the hook uses of dist.GradBucket
        def __init__(self, t):
            self.t = t

        def buffer(self):
            return self.t

    b = torch.from_numpy(gen_f32(30, RANK, 4000))
    fut = rinx.torch.allreduce_hook(comm, Bucket(b))
    nops += 1
    check("allreduce_hook returns a torch.futures.Future",
          isinstance(fut, torch.futures.Future))
    cmp_f32("allreduce_hook: the bucket averaged over the ranks",
            fut.wait().numpy(), 30, average=True)

    st = comm.stats()
    check("stats(): a dict of int counters",
          isinstance(st, dict) and all(isinstance(v, int)
                                       for v in st.values()))
    check("stats(): ops counts every allreduce",
          st["ops"] - st0["ops"] == nops,
          "ops %d -> %d, want +%d" % (st0["ops"], st["ops"], nops))


def phase_osp(comm):
    """rinx.osp against BSP computed in float64 from every rank's
    gradients: stage 1 synchronous, stage 2 one local (LGP) step ahead of
    the agreed value and corrected at the next step, never more than one
    stage-2 sum in flight; split at a tensor's boundary and inside one."""
    import rinx.osp
    lr, mu, steps = 0.1, 0.5, 3

    def dev(d):     # largest |difference|; an empty stage (auto may
        return float(np.max(np.abs(d))) if d.size else 0.0  # take all)

    def nrm(seed, r, n):    # magnitudes of real parameters and gradients
        return np.random.default_rng([seed, r, 7]).standard_normal(
            n).astype(np.float32)

    # the auto split's proposal (n, n2, n1min, window, sum time, its
    # elements, hidden) -> n2: half the way to what fits, growth capped
    # at double, clamped, no growth after an overrun
    for args, want in (((10000, 1000, 1000, 1.0, 0.5, 1000, True), 1350),
                       ((10000, 1000, 1000, 10.0, 0.5, 1000, True), 1500),
                       ((10000, 8000, 1000, 10.0, 0.5, 1000, True), 9000),
                       ((10000, 900, 1000, 0.3, 0.5, 1000, False), 705),
                       ((10000, 900, 1000, 1.0, 0.5, 1000, False), 900),
                       ((10000, 0, 1000, 0.5, 0.1, 10000, True), 78),
                       ((10000, 1000, 1000, 0.0, 0.5, 1000, True), 500),
                       # stage 2 not slower per element than stage 1:
                       # no shrinking, hidden or not; growth as before
                       ((10000, 900, 1000, 0.3, 0.5, 1000, False, False),
                        900),
                       ((10000, 1000, 1000, 0.5, 0.5, 1000, True, False),
                        1000),
                       ((10000, 1000, 1000, 1.0, 0.5, 1000, True, False),
                        1350)):
        got = rinx.osp.OSP.auto_n2(*args)
        check("osp auto_n2%r = %d" % (args, want), got == want,
              "got %d" % got)
    # (split, stage-1 size per step: resplit before the step where it
    # differs; auto: whatever the ranks agree on)
    for split, n1s in ((0.75, (300, 300, 300)), (0.5, (200, 200, 200)),
                       (0.5, (200, 300, 100)), ("auto", None)):
        a = torch.nn.Parameter(torch.from_numpy(nrm(60, 0, 300)))
        b = torch.nn.Parameter(torch.from_numpy(nrm(61, 0, 100)))
        osp = rinx.osp.OSP(comm, [a, b], lr=lr, momentum=mu, split=split,
                           adapt_every=1)
        n1 = osp.n1
        if n1s is None:
            split = "auto"
        else:
            if n1s[0] == n1s[-1]:
                split = "%.2f" % split
            else:
                split = "%.2f, moved to %s" % (split, n1s[1:])
            check("osp split %s: the leading %d of 400 elements in stage 1"
                  % (split, n1s[0]), osp.n1 == n1s[0] and
                  osp.n2 == 400 - n1s[0], "%d + %d" % (osp.n1, osp.n2))
        ref = np.concatenate([a.detach().numpy(),
                              b.detach().numpy()]).astype(np.float64)
        vel = np.zeros(400)
        ok_sync = ok_lgp = True
        worst = 0.0
        # float32 rounding of the updates plus the sums' error, all steps
        gmax = max(np.max(np.abs(nrm(s0 + t, r, m)))
                   for s0, m in ((70, 300), (80, 100))
                   for t in range(steps) for r in range(N))
        pmax = np.max(np.abs(ref)) + steps * lr * gmax / (1 - mu)
        tol = 32 * steps * np.finfo(np.float32).eps * pmax + \
            2 * steps * lr * rinx.f32_bound(N, gmax) / (1 - mu)
        for t in range(steps):
            gs = [np.concatenate([nrm(70 + t, r, 300),
                                  nrm(80 + t, r, 100)]).astype(np.float64)
                  for r in range(N)]
            g32 = gs[RANK].astype(np.float32)
            if t == 1:
                # in place: the backward pass's way (the gradients are
                # views of OSP's buffer after zero_grad)
                osp.zero_grad()
                a.grad.add_(torch.from_numpy(g32[:300]))
                b.grad.add_(torch.from_numpy(g32[300:]))
            else:   # assigned: copied into OSP's buffer
                a.grad = torch.from_numpy(g32[:300].copy())
                b.grad = torch.from_numpy(g32[300:].copy())
            prev = ref.copy()
            if n1s is not None and n1s[t] != osp.n1:
                osp.resplit(n1s[t])
            osp.step()
            n1 = osp.splits[-1]
            vel = mu * vel + np.mean(gs, axis=0)
            ref = ref - lr * vel
            # after step t: stage 1 as BSP; stage 2's agreed value is BSP
            # after t-1 steps, the parameters one local step on from it
            sync = osp.synced().numpy().astype(np.float64)
            e1 = dev(sync[:n1] - ref[:n1])
            e2 = dev(sync[n1:] - prev[n1:])
            # the local step uses the agreed velocity of step t-1
            lgp = prev[n1:] - lr * (vel[n1:] - np.mean(gs, axis=0)[n1:] +
                                    gs[RANK][n1:])
            now = np.concatenate([a.detach().numpy(),
                                  b.detach().numpy()]).astype(np.float64)
            e0 = dev(now[:n1] - ref[:n1])
            e3 = dev(now[n1:] - lgp)
            worst = max(worst, e0, e1, e2, e3)
            ok_sync = ok_sync and e0 <= tol and e1 <= tol and e2 <= tol
            ok_lgp = ok_lgp and e3 <= tol
        check("osp split %s: stage 1 and the agreed stage 2 equal BSP "
              "after every step" % split, ok_sync,
              "worst %.3g, tolerance %.3g" % (worst, tol))
        check("osp split %s: stage 2 runs one local-gradient step ahead "
              "(LGP)" % split, ok_lgp,
              "worst %.3g, tolerance %.3g" % (worst, tol))
        staged = sum(x < 400 for x in osp.splits)   # steps with stage 2
        if n1s is not None:
            staged = steps if staged == steps else -1
        check("osp split %s: staleness bound: each step started a "
              "stage-2 sum after applying the one before, one in flight "
              "at most" % split, osp.started == staged and
              osp.corrections == staged - (osp.splits[-1] < 400) and
              osp.max_inflight == (staged > 0) and
              (osp.fut is not None) == (osp.splits[-1] < 400),
              "%d started of %d, %d applied, at most %d in flight" % (
                  osp.started, staged, osp.corrections, osp.max_inflight))
        check("osp split %s: the step of in-place gradients copied "
              "none, the assigned ones were copied" % split,
              osp.grads_in_place == 1, "%d steps in place of %d"
              % (osp.grads_in_place, steps))
        osp.finish()
        now = np.concatenate([a.detach().numpy(), b.detach().numpy()])
        e = np.max(np.abs(now - ref))
        check("osp split %s: after finish() every parameter equals BSP"
              % split, e <= tol and osp.fut is None and
              osp.corrections == staged,
              "worst %.3g, tolerance %.3g, %d corrections" % (
                  e, tol, osp.corrections))
        if n1s is None:
            # the ranks agreed on every split (resplit checks it) and
            # the steps used it
            try:
                osp.resplit(osp.n1)
                agreed = True
            except ValueError as e:
                agreed = str(e)
            check("osp split auto: every rank took the same split, %s"
                  % osp.splits, agreed is True and len(osp.splits) == steps,
                  agreed)
            continue
        if n1s[0] != n1s[-1]:
            continue
        print("digest\tosp%d\t%s" % (n1, digest(osp.synced().numpy())),
              flush=True)
    # a resplit the ranks disagree on fails on every rank
    a = torch.nn.Parameter(torch.from_numpy(nrm(60, 0, 300)))
    osp = rinx.osp.OSP(comm, [a], lr=lr, momentum=mu)
    try:
        osp.resplit(100 + RANK)
        err = "no error"
    except ValueError as e:
        err = str(e)
    check("osp resplit to different splits fails on every rank",
          "different splits" in err, err)


def phase_osp_overlap(comm):
    """Stage 2 of step k is in flight when step k returns (the caller's
    next compute begins) and completes while the caller computes, without
    any call into OSP or the communicator: an ordering check, not a timed
    one. The last rank holds its stage 2 back (a slow copy before its
    start), so no rank's stage-2 sum can be complete before the last rank
    started it: every other rank returns from step() with it in flight."""
    import rinx.osp
    steps, hold = 4, 0.5

    class Held(rinx.osp.OSP):
        def _stage2_copy(self, g2):
            if comm.rank == N - 1:
                time.sleep(hold)
            super()._stage2_copy(g2)

    x = torch.nn.Parameter(torch.zeros(200000))
    osp = Held(comm, [x], lr=0.1, momentum=0.5, split=0.5, trace=True)
    returned = []           # in flight as step() returned
    completed = []          # completed in the compute after it
    for t in range(steps):
        x.grad = torch.from_numpy(gen_f32(90 + t, RANK, 200000))
        osp.step()
        returned.append(osp.pending())
        # "compute": no call into OSP or the communicator; bounded
        end = time.monotonic() + 10
        while osp.pending() and time.monotonic() < end:
            time.sleep(0.005)
        completed.append(not osp.pending())
    osp.finish()
    held = RANK == N - 1    # the others cannot complete before it starts
    check("osp overlap: stage 2 still in flight when step() returned, "
          "every step, and counted so (the last rank holds it back)",
          held or (all(returned) and osp.overlapped == steps),
          "in flight at return %s, overlapped %d" % (returned,
                                                     osp.overlapped))
    check("osp overlap: every stage-2 sum completed during the caller's "
          "compute, no wait called (progress in the background)",
          all(completed) and osp.done_at_begin == steps - 1,
          "completed %s, done as the next step began %d of %d" % (
              completed, osp.done_at_begin, steps - 1))
    # the trace's order on this rank: stage 2 of step k starts before
    # step k ends and ends after it (the in-flight ranks)
    ev = {(e, k): t for e, k, t in osp.events}
    order = [ev[("s2_begin", k)] <= ev[("step_end", k)] <
             ev[("s2_end", k)] for k in range(steps)]
    check("osp overlap: trace order: each stage 2 started inside its "
          "step and ended after it",
          held or all(order), order)
    # every rank's parameters after finish(): the shell compares digests
    print("digest\tosp-overlap\t%s" % digest(x.detach().numpy()),
          flush=True)


def phase_closed(comm, spec, job):
    comm.close()
    comm.close()
    check("close() twice: no error", comm.closed)
    raises("ClosedError: allreduce on a closed communicator",
           rinx.ClosedError, lambda: comm.allreduce(np.zeros(4, np.float32)),
           "closed")
    raises("ClosedError: stats of a closed communicator", rinx.ClosedError,
           comm.stats, "closed")


def phase_dead(spec, job, timeout_ms):
    """The last rank dies after one good allreduce; the others must raise
    TimeoutError naming it, within the timeout (plus slack: a hang is not
    a delay)."""
    # the open barrier has the same short timeout: ranks that arrive far
    # apart on a busy machine try again (the caller synchronized them)
    for attempt in range(6):
        try:
            comm = rinx.Comm(spec, RANK, job=job, timeout_ms=timeout_ms)
            break
        except rinx.TimeoutError as e:
            print("# open attempt %d: %s" % (attempt + 1, e), flush=True)
    else:
        check("dead peer: communicator opened", False, "6 attempts")
        return
    x = gen_f32(40, RANK, 2 * BV)
    comm.allreduce(x)
    cmp_f32("dead peer: the allreduce before the death is right", x, 40)
    if RANK == N - 1:
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.3)
    t0 = time.time()
    e = raises("dead peer: allreduce raises rinx.TimeoutError naming rank "
               "%d" % (N - 1), rinx.TimeoutError,
               lambda: comm.allreduce(gen_f32(41, RANK, 2 * BV)),
               "rank %d" % (N - 1), "timed out")
    dt = (time.time() - t0) * 1000
    check("dead peer: raised after the timeout, not a hang",
          timeout_ms - 20 <= dt < timeout_ms + 8000,
          "%.0f ms, timeout %d ms" % (dt, timeout_ms))
    check("dead peer: the exception carries librinx's text and errno",
          e is not None and e.errno == errno.ETIMEDOUT and
          e.text and e.text in str(e) and e.text == comm.error(),
          repr(getattr(e, "text", None)))
    # through the hook: the future ends with the error, it does not hang
    t0 = time.time()
    fut = rinx.torch.allreduce_future(comm, torch.zeros(3 * BV))
    try:
        fut.wait()
        check("dead peer: the hook's future raises", False, "no exception")
    except Exception as e2:
        check("dead peer: the hook's future raises", "timed out" in str(e2)
              and time.time() - t0 < (timeout_ms + 8000) / 1000,
              "%s: %s" % (type(e2).__name__, str(e2)[:200]))
    comm.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--header", required=True, help="user/librinx.h")
    ap.add_argument("--uapi", required=True, help="uapi/rinx.h")
    ap.add_argument("--dead-timeout-ms", type=int, default=1500)
    a = ap.parse_args()
    spec = os.environ["RINX_SPEC"]
    job = int(os.environ["RINX_JOB"])

    text = open(a.header).read()
    f = header_fields(text, "rinx_comm_stats")
    check("ctypes mirror of struct rinx_comm_stats matches the header",
          f == list(rinx._lib.STATS_FIELDS), "header %s" % f)
    f = header_fields(text, "rinx_comm_opts")
    check("ctypes mirror of struct rinx_comm_opts matches the header",
          f == [n for n, _ in rinx._lib.CommOpts._fields_], "header %s" % f)
    m = re.search(r"#define RINX_BLOCK_VALUES\s+(\d+)", open(a.uapi).read())
    check("rinx.BLOCK_VALUES is the block size of the wire format",
          m is not None and int(m.group(1)) == rinx.BLOCK_VALUES,
          m.group(0) if m else "RINX_BLOCK_VALUES not found")

    phase('phase_config')
    phase_config(spec, job)
    phase("open")
    os.environ["RINX_PLAN"] = "ring"
    # jumbo blocks where they can run: not at this MTU, so the MTU's
    os.environ["RINX_BLOCK"] = "largest"
    t0 = time.time()
    comm = rinx.Comm.from_env()
    check("from_env: rank, size, plan as the environment and spec say",
          comm.rank == RANK and comm.size == N and comm.plan == "ring",
          "%r, open %.2f s" % (comm, time.time() - t0))
    check("block_values: RINX_BLOCK=largest takes full-size frames of the "
          "MTU's size on the testbed's MTU (3,400)",
          comm.block_values == rinx.BLOCK_VALUES, comm.block_values)
    phase('phase_types')
    phase_types(comm)
    phase('phase_sums')
    phase_sums(comm)
    phase('phase_osp')
    phase_osp(comm)
    phase('phase_osp_overlap')
    phase_osp_overlap(comm)
    phase('phase_closed')
    phase_closed(comm, spec, job)
    with rinx.Comm(spec, RANK, job=job + 1, timeout_ms=20000,
                   plan="tree") as c2:
        x = gen_i32(50, RANK, 1000)
        c2.allreduce(x)
        cmp_i32("context manager: a second communicator (plan tree) works",
                x, 50)
        check("plan= names the communicator's plan", c2.plan == "tree",
              c2.plan)
        phase('phase_dead')
        c2.allreduce(x)     # a barrier before the short-timeout open
        phase_dead(spec, job + 2, a.dead_timeout_ms)
    check("context manager: closed on exit", c2.closed)
    phase("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
