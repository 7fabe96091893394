# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""One rank of the torch.distributed backend's test (selftests/
test_backend.sh starts one torchrun per host namespace, or one process per
host with torchrun's environment). The environment has torchrun's
variables and RINX_SPEC only: no RINX_JOB, no RINX_TOKEN. Every check
prints one line

    check<TAB>name<TAB>1|0<TAB>detail

Sums are compared element by element with a reference computed here from
every rank's inputs (ranks.py's generators and bounds): int32 exact,
float32 within rinx.f32_bound of the element's block. The last phase gives
the ranks allreduces of different sizes: each must raise rinx.Error (not
hang) within the communicator's timeout.
"""
import hashlib
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import rinx
import rinx._backend
import rinx.torch
from checks import check, phase
from ranks import RANK, N, BV, gen_f32, gen_i32, ref_f32, cmp_f32, cmp_i32


def phase_init():
    check("environment: torchrun's rank, no RINX_JOB or RINX_TOKEN",
          "RINX_JOB" not in os.environ and "RINX_TOKEN" not in os.environ
          and os.environ.get("RINX_SPEC"),
          "RANK=%s WORLD_SIZE=%s" % (RANK, N))
    dist.init_process_group("rinx")
    pg = dist.distributed_c10d._get_default_group()
    check("init_process_group(\"rinx\"): the default group is rinx's",
          dist.get_backend() == "rinx" and
          isinstance(pg, rinx.torch.ProcessGroupRinx) and
          pg.comm is not None and pg.comm.rank == RANK and pg.comm.size == N,
          "backend %s, %r" % (dist.get_backend(), pg))
    ids = [None] * N
    dist.all_gather_object(ids, (pg.comm.job, pg.comm.token))
    check("job id from the rendezvous: the same on every rank, not 0",
          len(set(ids)) == 1 and ids[0][0] != 0,
          "jobs %s" % [j for j, _ in ids])
    check("token from the rendezvous: the same on every rank, not 0",
          len(set(ids)) == 1 and ids[0][1] != 0, "")
    return pg


def phase_sums(pg):
    st0 = pg.comm.stats()["ops"]
    on0 = pg.counts["rinx"]
    nops = 0
    for count in (1, BV, 5 * BV + 431, 300000):
        seed = 40 + count % 97
        t = torch.from_numpy(gen_f32(seed, RANK, count))
        p = t.data_ptr()
        dist.all_reduce(t)
        nops += 1
        check("all_reduce SUM float32 %d: in place" % count,
              t.data_ptr() == p)
        cmp_f32("all_reduce SUM float32 %d: every element within the bound"
                % count, t.numpy(), seed)

    t = torch.from_numpy(gen_i32(51, RANK, 3 * BV + 7))
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    nops += 1
    cmp_i32("all_reduce SUM int32: exact wrapping sums", t.numpy(), 51)

    if rinx._backend.HAS_AVG:
        t = torch.from_numpy(gen_f32(52, RANK, 2 * BV + 5))
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        nops += 1
        cmp_f32("all_reduce AVG float32: the mean within bound / N",
                t.numpy(), 52, average=True)
        t = torch.arange(8, dtype=torch.int32)
        try:
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            check("all_reduce AVG int32 refused", False, "no exception")
        except ValueError as e:
            check("all_reduce AVG int32 refused", "AVG" in str(e), str(e))

    # asynchronous, a future with the tensors as value
    t = torch.from_numpy(gen_f32(53, RANK, 4 * BV))
    w = dist.all_reduce(t, async_op=True)
    val = w.get_future().wait()
    w.wait()
    nops += 1
    check("async_op: work completes, future's value is [tensor]",
          w.is_completed() and isinstance(val, list) and val[0] is t)
    cmp_f32("async_op: every element within the bound", t.numpy(), 53)

    # a strided view: the sum of its elements, the rest untouched
    base = torch.from_numpy(gen_f32(54, RANK, 2 * 3000)).reshape(3000, 2)
    keep = base[:, 1].clone()
    v = base[:, 0]
    dist.all_reduce(v)
    nops += 1
    want, bound, _ = ref_strided(54, 3000)
    err = np.abs(v.numpy().astype(np.float64) - want)
    check("strided view: every element within the bound, the rest unchanged",
          bool(np.all(err <= bound)) and torch.equal(base[:, 1], keep),
          "worst %.3f of the bound" % float(np.max(err / bound)))

    st1 = pg.comm.stats()["ops"]
    check("those all_reduces ran on rinx (librinx ops %d -> %d, backend "
          "%d)" % (st0, st1, pg.counts["rinx"] - on0),
          st1 - st0 == nops and pg.counts["rinx"] - on0 == nops)


def ref_strided(seed, rows):
    """Reference of column 0 of gen_f32(seed, r, 2 * rows) viewed as
    (rows, 2), over every rank; bound from its blocks in the contiguous
    copy rinx reduces."""
    acc = np.zeros(rows)
    amax = np.zeros(rows)
    for r in range(N):
        c = gen_f32(seed, r, 2 * rows).reshape(rows, 2)[:, 0]
        acc += c.astype(np.float64)
        amax = np.maximum(amax, np.abs(c))
    blk = np.arange(rows) // BV
    bmax = np.zeros(blk[-1] + 1)
    np.maximum.at(bmax, blk, amax)
    b = np.array([rinx.f32_bound(N, m) for m in bmax])[blk]
    return acc, np.maximum(b, 1e-30), bmax


def phase_delegated(pg):
    g0 = pg.counts["gloo_allreduce"]
    t = torch.full((1000,), float(RANK + 1), dtype=torch.float64)
    if RANK == 0:
        t = torch.arange(1000, dtype=torch.float64) * 0.5
    dist.broadcast(t, src=0)
    check("broadcast (Gloo): rank 0's tensor everywhere",
          torch.equal(t, torch.arange(1000, dtype=torch.float64) * 0.5))

    t = torch.tensor([float(RANK)] * 5, dtype=torch.float64)
    dist.all_reduce(t)
    check("all_reduce float64 (Gloo): exact sum",
          torch.equal(t, torch.full((5,), float(sum(range(N))),
                                    dtype=torch.float64)), str(t.tolist()))
    t = torch.tensor([RANK * 7 % 5, RANK], dtype=torch.int32)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    check("all_reduce MAX int32 (Gloo)",
          t.tolist() == [max(r * 7 % 5 for r in range(N)), N - 1],
          str(t.tolist()))
    out = [torch.zeros(3, dtype=torch.int64) for _ in range(N)]
    dist.all_gather(out, torch.tensor([RANK, RANK * 2, 7]))
    check("all_gather (Gloo)", all(o.tolist() == [r, 2 * r, 7]
                                   for r, o in enumerate(out)))
    check("float64 and MAX went to Gloo (2 allreduces)",
          pg.counts["gloo_allreduce"] - g0 == 2)
    dist.barrier()
    check("barrier", True)


def digest(module):
    h = hashlib.sha256()
    for p in module.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()


def phase_ddp(pg):
    torch.manual_seed(5 + RANK)   # DDP must broadcast rank 0's parameters
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ops0 = pg.comm.stats()["ops"]
    g = torch.Generator().manual_seed(100 + RANK)
    steps = 20
    same = 0
    for _ in range(steps):
        x = torch.randn(32, 64, generator=g)
        y = torch.randint(0, 10, (32,), generator=g)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        ds = [None] * N
        dist.all_gather_object(ds, digest(net))
        same += len(set(ds)) == 1
    ops = pg.comm.stats()["ops"] - ops0
    check("DDP without a hook: parameters identical on every rank after "
          "each of %d steps" % steps, same == steps,
          "%d of %d steps" % (same, steps))
    check("DDP's gradient buckets went to rinx", ops >= steps,
          "%d librinx allreduces over %d steps" % (ops, steps))

    # one step's averaged gradient against the mean of every rank's own
    torch.manual_seed(0)
    lin = nn.Linear(16, 4)
    m = DDP(lin)
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(RANK))
    m(x).sum().backward()
    want = torch.zeros_like(lin.weight, dtype=torch.float64)
    for r in range(N):
        xr = torch.randn(8, 16, generator=torch.Generator().manual_seed(r))
        # d(sum(W x + b))/dW = sum over the batch of x
        want += xr.sum(0).double().expand(4, 16)
    want /= N
    err = (lin.weight.grad.double() - want).abs().max().item()
    check("DDP's gradient is the mean of every rank's (within 1e-4)",
          err < 1e-4, "max error %.3g" % err)


def phase_mismatch(pg):
    # rank r reduces BV * (r + 1) + 3 values: a sender's block count does
    # not match the receiver's
    t = torch.ones(BV * (RANK + 1) + 3)
    t0 = time.time()
    err = None
    try:
        dist.all_reduce(t)
    except Exception as e:   # torch may wrap it; the text must say why
        err = e
    dt = time.time() - t0
    # rinx's timeout (10 s) bounds it: a rank that sees another's frames
    # says which at once, the ones it then stops answering time out
    check("mismatched sizes: all_reduce raises rinx.MismatchError or "
          "rinx.TimeoutError, no hang",
          isinstance(err, (rinx.MismatchError, rinx.TimeoutError)) and
          dt < 30, "%.1f s: %s: %s" % (dt, type(err).__name__, err))
    # the Gloo group still works: every rank learns what the others saw
    seen = [None] * N
    dist.all_gather_object(seen, (type(err).__name__, str(err)))
    named = [r for r, (k, m) in enumerate(seen)
             if k == "MismatchError" and "different tensor" in m]
    check("mismatched sizes: a rank names the mismatch", named,
          "ranks %s" % named)


def main():
    phase("start")
    pg = phase_init()
    phase("sums")
    phase_sums(pg)
    phase("delegated")
    phase_delegated(pg)
    phase("ddp")
    phase_ddp(pg)
    phase("mismatch")
    phase_mismatch(pg)
    phase("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
