# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""One rank of the parameter-server push benchmark (tools/ps-bench.sh):
rinx.sync.ASP steps without compute (push a gradient, take the
parameters), on the Python TCP parameter server, on the store in rank
0's host program and (--shards S > 1) on the store split over S servers
(rinx.ps.Shards), one after the other in the same process, REPEAT times
interleaved. Every rank prints per run

    bench<TAB>transport<TAB>run<TAB>pushes<TAB>seconds

the seconds from a barrier before its first push to its last pull; the
driver sums the pushes of every rank over the slowest rank's seconds.

    ps_bench.py --job J [--values N] [--steps K] [--repeat R] [--shards S]
"""
import argparse
import os
import time

import numpy as np
import torch

import rinx
import rinx.sync as rs

RANK = int(os.environ["RANK"])
SPEC = os.environ["RINX_SPEC"]
TOKEN = int(os.environ.get("RINX_TOKEN", "0"))


def one(world, transport, job, n, steps, run, shards=1):
    w = torch.nn.Parameter(torch.from_numpy(np.random.default_rng(
        run).uniform(-0.1, 0.1, n).astype(np.float32)))
    g = torch.from_numpy(np.random.default_rng([RANK, run]).standard_normal(
        n).astype(np.float32) * np.float32(1e-3))
    kw = {"ps_job": job, "ps_shards": shards} if transport == "xdp" else \
        {"port": 41000 + job % 6000}
    sync = rs.ASP(world, [w], lr=1e-3, transport=transport,
                  timeout_ms=30000, **kw)
    world.allreduce(np.zeros(1, dtype=np.float32))      # a barrier
    t0 = time.perf_counter()
    for _ in range(steps):
        w.grad = g
        sync.step()
    dt = time.perf_counter() - t0
    sync.finish()
    sync.close()
    name = transport if shards == 1 else "%s%d" % (transport, shards)
    print("bench\t%s\t%d\t%d\t%.6f" % (name, run, steps, dt), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", type=lambda v: int(v, 0), required=True)
    ap.add_argument("--values", type=int, default=26122)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shards", type=int, default=1)
    a = ap.parse_args()
    world = rinx.Comm(SPEC, RANK, job=a.job, token=TOKEN, timeout_ms=30000)
    cands = [("tcp", 1), ("xdp", 1)] + ([("xdp", a.shards)]
                                        if a.shards > 1 else [])
    for run in range(a.repeat):
        for k, (transport, shards) in enumerate(cands):
            # job ids of their own: a sharded store takes `shards` of them
            one(world, transport, a.job + 8 + (run * 3 + k) * 16, a.values,
                a.steps, run, shards)
    world.close()


if __name__ == "__main__":
    main()
