#!/usr/bin/python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""gloo_bench: torch.distributed all_reduce(SUM) over Gloo, the peer of
`rinxctl bench`, run by `rinxctl compare` with Debian's /usr/bin/python3, one
process per testbed host namespace:

  ip netns exec NS env RANK=r WORLD_SIZE=n MASTER_ADDR=<rank 0 ip> \
      MASTER_PORT=p GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
      /usr/bin/python3 gloo_bench.py --sizes 4K,1M --iters 3 --warmup 1 \
      --data grad

For every size (bytes per rank): warm-up runs, then timed runs, each after a
barrier. The time of a run is the largest elapsed time of any rank (all_reduce
MAX). Inputs come from the generator of rinxctl bench (tools/gen.h: mix64,
gen_f32_grad, gen_f32 for --data worst, gen_i32, run seed
mix64(seed + run * 7919 + count)), bit for bit (selftests/test_gen checks it),
so every candidate reduces the same numbers. After every run each rank checks every
element against a reference it computes on its own: int32 exact (wrapping
sum), float32 within 2 * gamma_(n-1) * sum |x_r| + 2^-126 (any summation
order), as tools/peers/mpi_bench.c.

CPU: rank 0 reads the machine-wide counters of /proc/stat after the barrier
that starts a timed run and again after a barrier that follows it (all ranks
done), so busy time of every process and softirq during the run is counted.

Rank 0 prints JSON lines on stdout: a header
  {"ranks":N,"dtype":"float32","data":"grad","runs":R,"warmup":W,"verify":true}
then one line per size with the fields of `rinxctl bench --json`, plus
"wrong", "worst" and "cpu_s" (busy CPU seconds of all timed runs together).
"""
import argparse
import datetime
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

BLOCK_VALUES = 768          # GEN_BLOCK_VALUES: --data worst's blocks
SCALE_VALUES = 6144         # GEN_SCALE_VALUES: --data grad's blocks
SCALE_MIN_LOG2 = -20        # GEN_SCALE_MIN_LOG2
SCALE_SALT = 0x5ca1ab1e0ddba11
UNIT_SALT = 0x6a09e667f3bcc908
# gen_pow2_16th: 2^(j/16), the same literals as tools/gen.h
POW2_16TH = np.array([
    1.0, 1.0442737824274138, 1.0905077326652577, 1.1387886347566916,
    1.189207115002721, 1.241857812073484, 1.2968395546510096,
    1.3542555469368927, 1.4142135623730951, 1.4768261459394993,
    1.5422108254079407, 1.6104903319492543, 1.681792830507429,
    1.7562521603732995, 1.8340080864093424, 1.9152065613971474])
GOLDEN = 0x9e3779b97f4a7c15
MASK = (1 << 64) - 1
CHUNK = 1 << 20             # elements per generator / check step

U = np.uint64


def mix64_int(x):
    x &= MASK
    x ^= x >> 30
    x = (x * 0xbf58476d1ce4e5b9) & MASK
    x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & MASK
    x ^= x >> 31
    return x


def mix64(x):
    """mix64 of tools/cmd_bench.c on a uint64 array (wrapping)."""
    x = x ^ (x >> U(30))
    x *= U(0xbf58476d1ce4e5b9)
    x ^= x >> U(27)
    x *= U(0x94d049bb133111eb)
    x ^= x >> U(31)
    return x


def gen(data, seed, r, start, cnt):
    """Elements start..start+cnt-1 of rank r: gen_f32_grad (grad), gen_f32
    (worst) or gen_i32 (ints) of tools/gen.h."""
    i = np.arange(start, start + cnt, dtype=np.uint64)
    key = (seed ^ ((r * GOLDEN) & MASK)) & MASK
    if data == "ints":
        h = mix64((i << U(8)) ^ U(key ^ 0x5555))
        return h.astype(np.uint32).view(np.int32)
    if data == "worst":
        h = mix64((i << U(8)) ^ U(key))
        e = ((i // U(BLOCK_VALUES) + U(r)) % U(16)).astype(np.int64) - 8
        u = (h >> U(11)).astype(np.float64) * (2.0 ** -53) * 2.0 - 1.0
        return np.ldexp(u, e).astype(np.float32)
    # grad: ~normal(0, 1) per rank (gen_unit) times the block's scale, which
    # depends on the run seed and the block only (gen_scale)
    h = mix64((i << U(8)) ^ U(key ^ UNIT_SALT))
    s = ((h & U(0xffff)) + ((h >> U(16)) & U(0xffff)) +
         ((h >> U(32)) & U(0xffff)) + (h >> U(48)) + U(2)).astype(np.float64)
    z = (s * 2.0 ** -16 - 2.0) * 1.7320508075688772
    k = mix64(U(seed) ^ mix64((i // U(SCALE_VALUES)) ^ U(SCALE_SALT))) >> U(56)
    sc = np.ldexp(POW2_16TH[(k & U(15)).astype(np.int64)],
                  (k >> U(4)).astype(np.int64) + SCALE_MIN_LOG2)
    return (z * sc).astype(np.float32)


def fill(data, seed, r, count, out):
    for s in range(0, count, CHUNK):
        c = min(CHUNK, count - s)
        out[s:s + c] = gen(data, seed, r, s, c)


def check(data, seed, n, got, count):
    """(wrong elements, worst |error| / bound, first message)."""
    wrong, worst, msg = 0, 0.0, None
    u = 2.0 ** -24
    gamma = (n - 1) * u / (1 - (n - 1) * u)
    for s in range(0, count, CHUNK):
        c = min(CHUNK, count - s)
        g = got[s:s + c]
        if data == "ints":
            acc = np.zeros(c, dtype=np.uint32)
            for r in range(n):
                acc += gen(data, seed, r, s, c).view(np.uint32)
            bad = g.view(np.uint32) != acc
            nb = int(bad.sum())
            if nb and msg is None:
                k = int(np.argmax(bad))
                msg = "element %d: got %d, want %d" % (
                    s + k, int(g[k]), int(acc.view(np.int32)[k]))
            wrong += nb
            continue
        acc = np.zeros(c, dtype=np.float64)
        mag = np.zeros(c, dtype=np.float64)
        for r in range(n):
            v = gen(data, seed, r, s, c).astype(np.float64)
            acc += v
            mag += np.abs(v)
        bound = 2 * gamma * mag + 2.0 ** -126
        err = np.abs(g.astype(np.float64) - acc)
        ratio = err / bound
        worst = max(worst, float(ratio.max()))
        bad = ~(err <= bound)
        nb = int(bad.sum())
        if nb and msg is None:
            k = int(np.argmax(bad))
            msg = "element %d: got %.9g, want %.9g (bound %.3g)" % (
                s + k, float(g[k]), float(acc[k]), float(bound[k]))
        wrong += nb
    return wrong, worst, msg


def busy_ticks():
    """Busy clock ticks of all CPUs: user nice system irq softirq steal."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]


def parse_size(s):
    m = 1
    t = s.strip()
    if t[-1:] in "bB":
        t = t[:-1]
    if t[-1:] in "kK":
        m, t = 1024, t[:-1]
    elif t[-1:] in "mM":
        m, t = 1 << 20, t[:-1]
    elif t[-1:] in "gG":
        m, t = 1 << 30, t[:-1]
    v = int(float(t) * m)
    if v <= 0 or v % 4:
        raise ValueError("bad size " + s)
    return v


def main():
    ap = argparse.ArgumentParser(description="Gloo allreduce sweep")
    ap.add_argument("--sizes", default="1M,16M,64M")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--dtype", default="float32",
                    choices=["float32", "int32"])
    ap.add_argument("--data", choices=["grad", "worst", "ints"],
                    help="grad or worst (float32; default grad), ints "
                    "(int32, its only data): as rinxctl bench --data")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--timeout", type=int, default=600,
                    help="seconds per collective")
    ap.add_argument("--no-verify", action="store_true")
    a = ap.parse_args()
    sizes = [parse_size(s) for s in a.sizes.split(",") if s]
    if a.iters < 1 or a.warmup < 0 or not sizes:
        ap.error("--iters >= 1, --warmup >= 0, --sizes non-empty")
    if a.data is None:
        a.data = "ints" if a.dtype == "int32" else "grad"
    if (a.data == "ints") != (a.dtype == "int32"):
        ap.error("--data ints goes with --dtype int32, grad and worst with "
                 "float32")

    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    n = int(os.environ["WORLD_SIZE"])
    url = "tcp://%s:%s" % (os.environ["MASTER_ADDR"],
                           os.environ["MASTER_PORT"])
    dist.init_process_group("gloo", init_method=url, rank=rank,
                            world_size=n,
                            timeout=datetime.timedelta(seconds=a.timeout))
    hz = os.sysconf("SC_CLK_TCK")
    npdt = np.int32 if a.dtype == "int32" else np.float32
    verify = not a.no_verify
    if rank == 0:
        print(json.dumps({"ranks": n, "dtype": a.dtype, "data": a.data,
                          "runs": a.iters,
                          "warmup": a.warmup, "verify": verify},
                         separators=(",", ":")), flush=True)
    maxc = max(sizes) // 4
    src = np.empty(maxc, dtype=npdt)
    buf = torch.empty(maxc, dtype=torch.int32 if a.dtype == "int32"
                      else torch.float32)
    tmax = torch.zeros(1, dtype=torch.float64)
    for size in sizes:
        count = size // 4
        t = buf[:count]
        times, wrong, worst, cpu = [], 0, 0.0, 0
        for it in range(-a.warmup, a.iters):
            seed = mix64_int(a.seed + it * 7919 + count)
            fill(a.data, seed, rank, count, src)
            t.copy_(torch.from_numpy(src[:count]))
            dist.barrier()
            if rank == 0:
                c0 = busy_ticks()
            t0 = time.perf_counter()
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
            el = time.perf_counter() - t0
            dist.barrier()
            if rank == 0 and it >= 0:
                cpu += busy_ticks() - c0
            tmax[0] = el
            dist.all_reduce(tmax, op=dist.ReduceOp.MAX)
            if it >= 0:
                times.append(float(tmax[0]))
            if verify:
                w, wo, msg = check(a.data, seed, n, t.numpy(), count)
                if w:
                    print("gloo_bench: rank %d: %d wrong elements at %d "
                          "bytes, first: %s" % (rank, w, size, msg),
                          file=sys.stderr, flush=True)
                wrong += w
                worst = max(worst, wo)
        res = torch.tensor([float(wrong), worst], dtype=torch.float64)
        dist.all_reduce(res[:1], op=dist.ReduceOp.SUM)
        dist.all_reduce(res[1:], op=dist.ReduceOp.MAX)
        if rank:
            continue
        times.sort()
        med = times[len(times) // 2]
        algbw = size / med / 1e9
        print(json.dumps({
            "bytes": size, "elements": count,
            "min_us": round(times[0] * 1e6, 1),
            "median_us": round(med * 1e6, 1),
            "max_us": round(times[-1] * 1e6, 1),
            "algbw_gbs": round(algbw, 4),
            "busbw_gbs": round(algbw * 2.0 * (n - 1) / n, 4),
            "elements_per_s": round(count / med),
            "verified": (None if not verify else res[0].item() == 0),
            "wrong": int(res[0].item()), "worst": round(res[1].item(), 4),
            "cpu_s": cpu / hz}, separators=(",", ":")), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
