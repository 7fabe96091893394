# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Data-parallel training of a small classifier with PyTorch DDP, gradients
reduced by rinx (--backend rinx, the default) or by Gloo (--backend gloo),
or with rinx's OSP in place of DDP and the optimizer (--backend osp), or on
a parameter server with rinx.sync's ASP, SSP or InHAD (--backend
asp|ssp|inhad on the Python TCP PS, asp-xdp|ssp-xdp|inhad-xdp on rinx's data
plane); a comma-separated list runs them one after the other in the same
processes.

One process per rank, started as torchrun starts them: RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT in the environment (tools/train/run.sh does that on
the testbed), plus RINX_SPEC, RINX_JOB (and RINX_TOKEN) for rinx. Nothing is
downloaded: the data set is scikit-learn's bundled 8x8 digits (1797 images)
when scikit-learn is installed, else a synthetic 10-class problem.

Both backends see the same initial parameters (DDP broadcasts rank 0's), the
same data order and the same batches, so with the same --seed they differ
only in how the gradient sums are rounded. After every step (--check step,
the default) or every epoch (--check epoch) each rank hashes its parameters
and the digests are all-gathered through the Gloo process group: any
difference between ranks fails the run (exit 3). For OSP the parameters
compared after a step are the agreed ones (rinx.osp.OSP.synced), and all
of them at every epoch end.

ASP, SSP and InHAD have no per-step agreement to check: every rank trains
until the PS has as many rank-iterations as the synchronous runs take
(epochs x steps per epoch x ranks; a fast rank takes more of them than a
slow one), then all take the PS's final parameters, which are compared.
Rank 0 measures the accuracy of its parameters each time the PS's count
passes an epoch's worth of samples.

--straggler R makes rank R take twice its compute time: before training it
measures its forward and backward pass (median of 20) and then sleeps that
long every step, between forward and backward pass.

--backend rinx-backend is DDP without a hook on a process group of the
torch.distributed backend "rinx" (rinx.torch), made with new_group.

--compute-ms X emulates an accelerator for timing runs: no model runs on
the host; each step sleeps X ms as its forward and backward pass and takes
a synthetic gradient of --grad-params values (a ResNet-18's 11.7 M by
default), so the host CPU does only what it does beside a GPU (the
synchronization and the update). Every output of such a run says that its
compute is emulated, and it has no accuracy (every backend; --steps steps,
10 by default; for the PS backends samples/s counts the PS's
rank-iterations). With --device-gbps B the optimizer's passes over the
parameters (BSP's momentum update; OSP's updates, correction, stage-2
copies and local step) and the gradient's copy out of the device
(--pcie-gbps) are the accelerator's too: each sleeps its bytes at that
bandwidth, the parameters stay where they are, and the ranks' last sums
are compared instead. --warmup N steps run before the clock starts;
--timeline DIR has every rank write when each phase of its steps began
and ended (tools/train/timeline.py prints them).

Rank 0 prints one line `result {json}` per backend: accuracy on the held-out set after
every epoch, final loss, steps, seconds per step, parameter digest, and for
rinx the communicator's counters.
"""
import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="rinx",
                   help="rinx (DDP with the rinx hook), rinx-backend "
                        "(DDP on the backend \"rinx\"), gloo, osp, asp, "
                        "ssp, inhad (on the TCP parameter server), "
                        "asp-xdp, ssp-xdp, inhad-xdp (on rinx's data "
                        "plane), or a comma-separated list run one "
                        "after the other in the same processes")
    p.add_argument("--data", choices=("auto", "digits", "synthetic"),
                   default="auto")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--steps", type=int, default=0,
                   help="stop after this many steps (0: all epochs)")
    p.add_argument("--batch", type=int, default=16, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bucket-mb", type=float, default=0.01,
                   help="DDP bucket size (small: several buckets per step)")
    p.add_argument("--check", choices=("step", "epoch"), default="step",
                   help="compare the ranks' parameters after every step "
                        "or every epoch")
    p.add_argument("--timeout-ms", type=int, default=20000,
                   help="rinx: bound of one allreduce")
    p.add_argument("--osp-split", type=split_arg, default=0.5,
                   help="osp: share of the parameters in stage 1, or auto "
                        "(stage 2 as large as the compute hides)")
    p.add_argument("--osp-adapt-every", type=int, default=4,
                   help="osp, split auto: steps between two choices")
    p.add_argument("--slow-rank", type=int, default=-1,
                   help="a straggler: this rank sleeps --slow-ms every "
                        "step between forward and backward pass")
    p.add_argument("--slow-ms", type=float, default=5.0)
    p.add_argument("--straggler", type=int, default=-1,
                   help="this rank takes twice its compute time: it sleeps "
                        "its measured forward+backward time every step")
    p.add_argument("--ps-rank", type=int, default=0,
                   help="asp, ssp, inhad: the rank whose process runs the "
                        "parameter server")
    p.add_argument("--ps-shards", type=int, default=1,
                   choices=range(1, 5), metavar="1..4",
                   help="asp-xdp, ssp-xdp: the store split over this many "
                        "server ranks (rinx.ps.Shards; a backend's job ids "
                        "leave room for 4 parts)")
    p.add_argument("--ps-momentum", type=float, default=0.9,
                   help="asp, ssp, inhad: the PS's momentum (BSP's "
                        "momentum)")
    p.add_argument("--ssp-staleness", type=int, default=2,
                   help="ssp: iterations a rank may be ahead of the slowest")
    p.add_argument("--inhad-staleness", type=int, default=2,
                   help="inhad: iterations a group may be ahead of the "
                        "slowest group")
    p.add_argument("--inhad-group", type=int, default=2,
                   help="inhad: ranks per group (0: the spec's racks)")
    p.add_argument("--inhad-ring", action="store_true",
                   help="inhad: a group that is a whole rack with INA sums "
                        "as a ring of its hosts, not on its rack's "
                        "aggregator")
    p.add_argument("--inhad-pull", type=int, default=1,
                   help="inhad: the PS pulls a group's gradient every this "
                        "many of its iterations")
    p.add_argument("--compute-ms", type=float, default=0.0,
                   help="emulated accelerator (timing runs): no model runs "
                        "on the host; every step sleeps this many ms as "
                        "its forward and backward pass (the straggler "
                        "twice that) and takes a synthetic gradient of "
                        "--grad-params values; every backend; no accuracy "
                        "(0: real compute)")
    p.add_argument("--device-gbps", type=float, default=0.0,
                   help="with --compute-ms: the optimizer's passes run on "
                        "the emulated accelerator at this memory "
                        "bandwidth in GB/s, slept (0: on the host)")
    p.add_argument("--pcie-gbps", type=float, default=25.0,
                   help="with --device-gbps: the gradient's copy out of "
                        "the device at this rate in GB/s, slept")
    p.add_argument("--grad-params", type=int, default=11689512,
                   help="with --compute-ms: parameters of the emulated "
                        "model (default: a ResNet-18's 11,689,512)")
    p.add_argument("--warmup", type=int, default=1,
                   help="with --compute-ms, BSP and OSP: steps run "
                        "before the clock starts (the first allocates "
                        "and faults in buffers on every rank)")
    p.add_argument("--timeline", default="",
                   help="with --compute-ms: every rank writes the times "
                        "of its steps' phases (compute, sums, waits) to "
                        "DIR/BACKEND-rRANK.json (tools/train/timeline.py "
                        "prints them)")
    p.add_argument("--skew-step", type=int, default=-1,
                   help="test of the check: after this step the last rank "
                        "changes one parameter by one ulp")
    return p.parse_args()


def load_data(kind, seed):
    """(x_train, y_train, x_test, y_test, name), the same on every rank."""
    if kind in ("auto", "digits"):
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            if kind == "digits":
                sys.exit("train: --data digits needs scikit-learn "
                         "(tools/deps.sh python)")
        else:
            d = load_digits()
            x = d.data.astype(np.float32) / 16.0
            y = d.target.astype(np.int64)
            name = "digits"
            kind = None
    if kind is not None:
        # ten Gaussian clusters in 64 dimensions with overlapping tails
        g = np.random.RandomState(1234)
        centers = g.normal(0, 1, (10, 64)).astype(np.float32)
        y = g.randint(0, 10, 4000).astype(np.int64)
        x = centers[y] + g.normal(0, 1.6, (4000, 64)).astype(np.float32)
        name = "synthetic"
    perm = np.random.RandomState(seed).permutation(len(y))
    ntest = len(y) * 3 // 10
    te, tr = perm[:ntest], perm[ntest:]
    return (torch.from_numpy(x[tr]), torch.from_numpy(y[tr]),
            torch.from_numpy(x[te]), torch.from_numpy(y[te]), name)


def param_digest(model):
    """SHA-256 of a model's parameters (or of a list of tensors)."""
    h = hashlib.sha256()
    ts = model.parameters() if hasattr(model, "parameters") else model
    for p in ts:
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.digest()


def same_everywhere(model, world):
    """True when every rank's parameters hash alike (all-gather of the
    first 8 bytes of each rank's SHA-256 through Gloo)."""
    mine = torch.tensor([int.from_bytes(param_digest(model)[:8], "little",
                                        signed=True)], dtype=torch.int64)
    all_ = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(all_, mine)
    return all(int(t) == int(mine) for t in all_), [int(t) for t in all_]


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def check_the_check(net, rank, world):
    """The parameter check must be able to fail: with one parameter one ulp
    off on the last rank (put back right after) every rank has to see a
    difference, and none without it."""
    with torch.no_grad():
        w = next(net.parameters()).view(-1)
        saved = w[0].item()
        if rank == world - 1:
            w[0] = float(np.nextafter(np.float32(saved), np.float32(np.inf)))
        skewed, _ = same_everywhere(net, world)
        w[0] = saved
    same, _ = same_everywhere(net, world)
    return (not skewed) and same


def make_net(a, xtr, rank):
    torch.manual_seed(a.seed + rank)    # rank 0's wins (DDP, the PS)
    return nn.Sequential(nn.Linear(xtr.shape[1], a.hidden), nn.ReLU(),
                         nn.Linear(a.hidden, a.hidden), nn.ReLU(),
                         nn.Linear(a.hidden, 10))


def compute_time(a, net, xtr, ytr):
    """Median seconds of one forward and backward pass of a copy of the
    model on a batch: what the straggler sleeps every step."""
    import copy
    m = copy.deepcopy(net)
    ts = []
    for i in range(21):
        idx = torch.arange(i * a.batch, (i + 1) * a.batch) % len(ytr)
        t = time.perf_counter()
        m.zero_grad()
        F.cross_entropy(m(xtr[idx]), ytr[idx]).backward()
        ts.append(time.perf_counter() - t)
    return sorted(ts[1:])[len(ts) // 2]


def straggler_sleep(a, net, xtr, ytr, rank):
    """Seconds the straggler sleeps every step (0 on the other ranks); every
    rank learns it (for the result) through Gloo."""
    mine = compute_time(a, net, xtr, ytr) if rank == a.straggler else 0.0
    t = torch.tensor([mine], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    a.straggle_s = t.item()
    return mine


def train(a, backend, comm, data, rank, world, pg=None):
    """One training run; returns its result dict or exits 3 when the ranks'
    parameters differ. rinx-backend: DDP on `pg`, a group of the backend
    "rinx" (no hook)."""
    if backend == "rinx-backend":
        comm = pg.comm      # its counters are the ones to report
    if ps_mode(backend):
        return train_ps(a, backend, comm, data, rank, world)
    xtr, ytr, xte, yte, name = data
    net = make_net(a, xtr, rank)
    straggle = straggler_sleep(a, net, xtr, ytr, rank)
    # DDP keeps its first bucket at 1 MiB unless told (the module's own
    # comment invites setting this): small buckets, several per step, so
    # that the hook's pipeline is exercised
    dist._DEFAULT_FIRST_BUCKET_BYTES = int(a.bucket_mb * (1 << 20))
    osp = None
    if backend == "osp":
        # no DDP: OSP reduces and updates itself; rank 0's start, as DDP
        import rinx.osp
        for p in net.parameters():
            dist.broadcast(p.data, 0)
        model = net
        osp = rinx.osp.OSP(comm, net.parameters(), lr=a.lr, momentum=0.9,
                           split=a.osp_split,
                           adapt_every=a.osp_adapt_every)
        opt = None
    else:
        model = DDP(net, bucket_cap_mb=a.bucket_mb,
                    process_group=pg if backend == "rinx-backend" else None)
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    if backend == "rinx":
        import rinx.torch
        model.register_comm_hook(comm, rinx.torch.allreduce_hook)
    if comm is not None:
        st0 = comm.stats()
    check_ok = check_the_check(net, rank, world)
    if not check_ok:
        print("train: rank %d: the parameter check did not see a one-ulp "
              "change" % rank, file=sys.stderr)
        sys.exit(3)

    per_rank = len(ytr) // world
    steps_per_epoch = per_rank // a.batch
    step = 0
    checks = 0
    accs = []
    times = []
    loss_v = float("nan")
    t0 = time.time()
    t_train = 0.0
    done = False
    for epoch in range(a.epochs):
        # the same permutation on every rank, each takes its own slice
        g = torch.Generator().manual_seed(a.seed * 1000 + epoch)
        order = torch.randperm(len(ytr), generator=g)
        mine = order[rank * per_rank:(rank + 1) * per_rank]
        model.train()
        for s in range(steps_per_epoch):
            idx = mine[s * a.batch:(s + 1) * a.batch]
            ts = time.time()
            if osp is not None:
                osp.zero_grad()     # in place: OSP's flat gradient buffer
            else:
                model.zero_grad()
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            if rank == a.slow_rank:
                time.sleep(a.slow_ms / 1000)
            if straggle:
                time.sleep(straggle)
            loss.backward()
            if osp is not None:
                osp.step()
            else:
                opt.step()
            t_train += time.time() - ts
            loss_v = loss.item()
            if step == a.skew_step and rank == world - 1:
                with torch.no_grad():
                    w = next(net.parameters()).view(-1)
                    w[0] = float(np.nextafter(np.float32(w[0].item()),
                                              np.float32(np.inf)))
            step += 1
            if a.check == "step":
                # OSP: the parameters all ranks agree on (stage 2 before
                # its pending local step)
                ok, digs = same_everywhere(
                    net if osp is None else [osp.synced()], world)
                checks += 1
                if not ok:
                    print("train: %s: rank %d: parameters differ between "
                          "ranks after step %d: %s" % (backend, rank, step,
                                                       digs),
                          file=sys.stderr)
                    sys.exit(3)
            if a.steps and step >= a.steps:
                done = True
                break
        if osp is not None:
            osp.finish()    # every parameter synchronized at epoch ends
        if a.check == "epoch" or osp is not None:
            ok, digs = same_everywhere(net, world)
            checks += 1
            if not ok:
                print("train: %s: rank %d: parameters differ between ranks "
                      "after epoch %d: %s" % (backend, rank, epoch + 1, digs),
                      file=sys.stderr)
                sys.exit(3)
        model.eval()
        accs.append(accuracy(net, xte, yte))
        times.append(time.time() - t0)
        if done:
            break

    result = {
        "backend": backend, "ranks": world, "data": name,
        "train": len(ytr), "test": len(yte), "seed": a.seed,
        "epochs": len(accs), "steps": step, "batch_per_rank": a.batch,
        "accuracy": accs[-1] if accs else None, "accuracy_by_epoch": accs,
        "loss": loss_v, "check": a.check, "checks_passed": checks,
        "check_detects_one_ulp": check_ok,
        "digest": param_digest(net).hex(),
        "s_per_step": t_train / max(step, 1),
        "slow_rank": a.slow_rank, "slow_ms": a.slow_ms,
        "straggler": a.straggler, "straggle_s": a.straggle_s,
        "seconds": time.time() - t0, "time_by_epoch": times,
        "wall_per_step": times[-1] / max(step, 1) if times else None,
    }
    if osp is not None:
        result["osp"] = {"split": a.osp_split, "stage1_elements": osp.n1,
                         "stage2_elements": osp.n2, "steps": osp.steps,
                         "corrections": osp.corrections,
                         "overlapped": osp.overlapped,
                         "done_at_begin": osp.done_at_begin,
                         "splits": osp.splits if osp.auto else None,
                         "max_inflight": osp.max_inflight,
                         "grads_in_place": osp.grads_in_place}
    if comm is not None:
        st = comm.stats()
        d = {k: st[k] - st0[k] for k in ("ops", "bytes", "timeouts",
                                         "repairs", "slow_path")}
        d["ops_per_step"] = d["ops"] / max(step, 1)
        result["rinx"] = d
    return result


def emulated_note(a):
    note = ("compute emulated: %g ms per step slept (no model on the "
            "host), %d-parameter synthetic gradient" % (a.compute_ms,
                                                         a.grad_params))
    if a.device_gbps > 0:
        note += ("; optimizer passes on the emulated device at %g GB/s "
                 "and the gradient's copy out at %g GB/s, slept"
                 % (a.device_gbps, a.pcie_gbps))
    return note


def device_sleep(elems, accesses, gbps):
    """An emulated accelerator's memory pass: `accesses` reads or writes
    of `elems` float32 values at `gbps` GB/s."""
    time.sleep(elems * 4 * accesses / (gbps * 1e9))


def device_osp(gbps):
    """rinx.osp.OSP whose tensor work besides the sums runs on the emulated
    accelerator: every pass sleeps (reads and writes of the elements at
    gbps); the parameters do not move. The buffer stage 2 travels in gets
    the gradient once, then carries its own sums again."""
    import rinx.osp

    class DeviceOSP(rinx.osp.OSP):
        def _apply1(self, g1):              # v = mu v + g / N; p -= lr v
            device_sleep(self.n1, 8, gbps)

        def _apply2(self, g, n1):           # v and p from base2
            device_sleep(self.n - n1, 8, gbps)

        def _stage2_copy(self, g2):         # s2 and base2
            if not getattr(self, "_s2_filled", False):
                self._s2.copy_(self.flat_g)
                self._s2_filled = True
            device_sleep(self.n2, 4, gbps)

        def _local_step(self, g2):          # p -= lr (mu v + g)
            device_sleep(self.n2, 6, gbps)
    return DeviceOSP


def write_timeline(a, backend, rank, ev, osp):
    """--timeline: this rank's events (name, step, seconds on the host's
    monotonic clock, which every rank's namespace shares) as JSON; the
    warm-up steps are negative."""
    if osp is not None:
        ev = ev + [(e, k - a.warmup, t) for e, k, t in osp.events]
    os.makedirs(a.timeline, exist_ok=True)
    path = os.path.join(a.timeline, "%s-r%d.json" % (backend, rank))
    with open(path, "w") as f:
        json.dump({"backend": backend, "rank": rank,
                   "compute_ms": a.compute_ms, "straggler": a.straggler,
                   "events": sorted(ev, key=lambda e: e[2])}, f)


def train_emulated(a, backend, comm, rank, world, pg=None):
    """A timing run with an emulated accelerator: the step's forward and
    backward pass are a sleep of --compute-ms (the host CPU stays free for
    what it does beside a GPU: the gradient's synchronization and the
    update), the gradient a synthetic one of --grad-params values (fixed
    per rank, copied in every step, as a GPU's gradient is copied out).
    BSP (rinx, rinx-backend, gloo) sums the whole flat gradient in one
    allreduce after the compute, then steps SGD with momentum; OSP runs
    rinx.osp. No accuracy: nothing is learned. Parameters are compared
    across ranks at the end."""
    import rinx.osp
    if backend == "rinx-backend":
        comm = pg.comm
    n = a.grad_params
    # eight "layers", so that OSP's split falls inside one as in a model
    sizes = [len(c) for c in np.array_split(np.arange(n), 8)]
    flat_p = torch.zeros(n)
    params = []
    o = 0
    for k in sizes:
        t = flat_p[o:o + k]
        t.requires_grad_(True)
        params.append(t)
        o += k
    g = torch.Generator().manual_seed(a.seed * 100 + rank)
    base = torch.randn(n, generator=g).mul_(1e-3)
    flat_g = torch.empty(n)
    o = 0
    for p, k in zip(params, sizes):
        p.grad = flat_g[o:o + k]
        o += k
    straggle = a.compute_ms / 1000 if rank == a.straggler else 0.0
    compute_s = a.compute_ms / 1000 + straggle
    a.straggle_s = a.compute_ms / 1000 if a.straggler >= 0 else 0.0
    osp = None
    dev = a.device_gbps > 0
    if backend == "osp":
        cls = device_osp(a.device_gbps) if dev else rinx.osp.OSP
        osp = cls(comm, params, lr=a.lr, momentum=0.9,
                  split=a.osp_split, adapt_every=a.osp_adapt_every,
                  trace=bool(a.timeline))
        # OSP keeps the gradients in a buffer of its own (the parameters'
        # .grad are its views): the device's gradient is copied into that
        flat_g = osp.flat_g
    vel = torch.zeros(n)
    # the gradient buffer's pages touched before the clock starts: a
    # fresh buffer's first copy (page faults, 47 MB) is not a step's work
    # and, over a few steps, tilted BSP's time against OSP's, whose
    # buffer rinx.osp had allocated and filled already
    flat_g.copy_(base)
    steps = a.steps or 10
    dist.barrier()
    t_sleep = t_copy = t_sync = t_wait = t_upd = 0.0
    ev = []                              # --timeline: (event, step, time)
    # --warmup steps first, the same as the timed ones but not counted:
    # a step's first run allocates and faults in buffers (0.5 s for a
    # fresh 47 MB one on this machine's cores) and ends on every rank at
    # another time, which the next collective then waits for
    for step in range(-a.warmup, steps):
        if step == 0:
            # before the clock: stats() waits for the communicator, which
            # OSP's stage 2 of the warm-up holds while in flight
            st0 = comm.stats() if comm is not None else None
        t = time.perf_counter()
        if step == 0:
            t0 = t
            t_sleep = t_copy = t_sync = t_wait = t_upd = 0.0
        time.sleep(compute_s)            # the accelerator's fwd + bwd
        t1 = time.perf_counter()
        ev += [("compute_begin", step, t), ("compute_end", step, t1)]
        if dev and step > -a.warmup:     # the gradient out of the device
            device_sleep(n, 1, a.pcie_gbps)
        else:
            flat_g.copy_(base)
        t2 = time.perf_counter()
        if osp is not None:
            osp.step()
            t4 = t5 = time.perf_counter()
            # the wait for stage 2 not hidden by compute, inside step()
            t3 = t2 + osp.wait_s
        else:
            t3 = t2
            ev.append(("sum_begin", step, t2))
            if backend == "gloo":
                dist.all_reduce(flat_g)
            elif backend == "rinx-backend":
                dist.all_reduce(flat_g, group=pg)
            else:
                comm.allreduce(flat_g)
            t4 = time.perf_counter()
            ev.append(("sum_end", step, t4))
            if dev:
                device_sleep(n, 8, a.device_gbps)
            else:
                with torch.no_grad():
                    vel.mul_(0.9).add_(flat_g, alpha=1.0 / world)
                    flat_p.sub_(vel, alpha=a.lr)
            t5 = time.perf_counter()
        t_sleep += t1 - t
        t_copy += t2 - t1
        t_wait += t3 - t2
        t_sync += t4 - t3
        t_upd += t5 - t4
    wall = time.perf_counter() - t0
    if osp is not None:
        osp.finish()
    if a.timeline:
        write_timeline(a, backend, rank, ev, osp)
    if dev:
        # the parameters did not move: the last sums must agree (OSP:
        # stage 1's in the gradient buffer, stage 2's in its own)
        last = [flat_g] if osp is None else \
            [flat_g[:osp.n1], osp._s2[:osp.n2]]
        same, digs = same_everywhere(last, world)
    else:
        same, digs = same_everywhere(params, world)
    if not same:
        print("train: %s: rank %d: %s differ between ranks after "
              "%d emulated steps: %s" % (backend, rank, "the last sums" if
                                         dev else "parameters", steps, digs),
              file=sys.stderr)
        sys.exit(3)
    ms = lambda x: x * 1000 / steps  # noqa: E731
    result = {
        "backend": backend, "ranks": world, "emulated": True,
        "compute": emulated_note(a), "compute_ms": a.compute_ms,
        "grad_params": n, "grad_mb": n * 4 / 1e6, "steps": steps,
        "warmup": a.warmup,
        "batch_per_rank": a.batch, "accuracy": None, "seed": a.seed,
        "straggler": a.straggler, "straggle_s": a.straggle_s,
        "slow_rank": -1, "slow_ms": 0,
        "wall_per_step": wall / steps, "seconds": wall,
        "samples_per_s": world * a.batch * steps / wall,
        # rank 0's step: the sleep, the gradient copy, waiting for OSP's
        # stage 2 of the step before, the allreduce (OSP: its whole step,
        # stage 1 and the local update included), BSP's update
        "ms": {"compute": ms(t_sleep), "grad_copy": ms(t_copy),
               "osp_stage2_wait": ms(t_wait), "sync": ms(t_sync),
               "update": ms(t_upd)},
        "digest": param_digest(params).hex(),
    }
    if osp is not None:
        result["osp"] = {"split": a.osp_split, "stage1_elements": osp.n1,
                         "stage2_elements": osp.n2, "steps": osp.steps,
                         "corrections": osp.corrections,
                         "overlapped": osp.overlapped,
                         "done_at_begin": osp.done_at_begin,
                         "splits": osp.splits if osp.auto else None}
    if comm is not None and backend != "gloo":
        st = comm.stats()
        d = {k: st[k] - st0[k] for k in ("ops", "bytes", "timeouts",
                                         "repairs", "retransmits",
                                         "ns_total", "ns_quant",
                                         "ns_dequant")}
        d["ms_per_op"] = d["ns_total"] / 1e6 / max(d["ops"], 1)
        result["rinx"] = d
    return result


def ps_mode(backend):
    """(mode, transport) of a parameter-server backend (asp, ssp, inhad on
    the TCP PS; asp-xdp, ssp-xdp, inhad-xdp on rinx's data plane), or
    None."""
    mode, _, tr = backend.partition("-")
    if mode in ("asp", "ssp", "inhad") and tr in ("", "xdp"):
        return mode, tr or "tcp"
    return None


def make_sync(a, backend, comm, params, total):
    """The rinx.sync object of a PS backend. Each backend of the list has
    job ids of its own for the communicators it opens beside comm (InHAD's
    group, the store): ones that follow each other must differ."""
    import rinx.sync as rs
    mode, transport = ps_mode(backend)
    i = a.backend.split(",").index(backend)
    kw = dict(lr=a.lr, momentum=a.ps_momentum, total=total, ps_rank=a.ps_rank,
              timeout_ms=a.timeout_ms, transport=transport,
              ps_job=comm.job + 5 + 8 * i)
    if mode in ("asp", "ssp") and transport == "xdp":
        kw["ps_shards"] = a.ps_shards
    if mode == "asp":
        return rs.ASP(comm, params, **kw)
    if mode == "ssp":
        return rs.SSP(comm, params, staleness=a.ssp_staleness, **kw)
    return rs.InHAD(comm, params, staleness=a.inhad_staleness,
                    group_size=a.inhad_group or None,
                    pull_every=a.inhad_pull, group_job=comm.job + 1 + 8 * i,
                    group_ina=not a.inhad_ring,
                    **kw)


def train_ps_emulated(a, backend, comm, rank, world):
    """A timing run of a PS backend with an emulated accelerator (as
    train_emulated): every rank sleeps --compute-ms, copies its synthetic
    gradient and calls the sync's step() for --steps steps; then finish()
    and the parameters compared across ranks. samples/s counts the PS's
    rank-iterations (TCP: the PS's count; xdp: steps x ranks, every rank
    doing its share) over the wall time, finish() included."""
    n = a.grad_params
    flat_p = torch.zeros(n)
    params = []
    o = 0
    for k in [len(c) for c in np.array_split(np.arange(n), 8)]:
        t = flat_p[o:o + k]
        t.requires_grad_(True)
        t.grad = torch.zeros(k)
        params.append(t)
        o += k
    g = torch.Generator().manual_seed(a.seed * 100 + rank)
    base = torch.randn(n, generator=g).mul_(1e-3)
    straggle = a.compute_ms / 1000 if rank == a.straggler else 0.0
    compute_s = a.compute_ms / 1000 + straggle
    a.straggle_s = a.compute_ms / 1000 if a.straggler >= 0 else 0.0
    o = 0
    for p in params:                     # pages touched (as train_emulated)
        p.grad.copy_(base[o:o + p.numel()])
        o += p.numel()
    steps = a.steps or 10
    sync = make_sync(a, backend, comm, params, steps * world)
    dist.barrier()
    t_sleep = t_copy = t_sync = 0.0
    done = 0
    t0 = time.perf_counter()
    more = True
    while more and done < steps:
        t = time.perf_counter()
        time.sleep(compute_s)            # the accelerator's fwd + bwd
        t1 = time.perf_counter()
        o = 0
        for p in params:                 # the gradient out of the device
            p.grad.copy_(base[o:o + p.numel()])
            o += p.numel()
        t2 = time.perf_counter()
        more = sync.step()
        t3 = time.perf_counter()
        t_sleep += t1 - t
        t_copy += t2 - t1
        t_sync += t3 - t2
        done += 1
    sync.finish()
    wall = time.perf_counter() - t0
    same, digs = same_everywhere(params, world)
    if not same:
        print("train: %s: rank %d: parameters differ between ranks after "
              "%d emulated steps: %s" % (backend, rank, done, digs),
              file=sys.stderr)
        sys.exit(3)
    st = sync.stats()
    samples = sync.samples if ps_mode(backend)[1] == "tcp" else \
        done * world
    ms = lambda x: x * 1000 / max(done, 1)  # noqa: E731
    return {
        "backend": backend, "ranks": world, "emulated": True,
        "compute": emulated_note(a), "compute_ms": a.compute_ms,
        "grad_params": n, "grad_mb": n * 4 / 1e6, "steps": done,
        "batch_per_rank": a.batch, "accuracy": None, "seed": a.seed,
        "straggler": a.straggler, "straggle_s": a.straggle_s,
        "slow_rank": -1, "slow_ms": 0,
        # one synchronous step's worth of samples per "step"
        "wall_per_step": wall / max(samples / world, 1), "seconds": wall,
        "samples_per_s": samples * a.batch / wall,
        "ms": {"compute": ms(t_sleep), "grad_copy": ms(t_copy),
               "sync": ms(t_sync)},
        "digest": param_digest(params).hex(), "sync": st,
    }


def train_ps(a, backend, comm, data, rank, world):
    """ASP, SSP or InHAD on rinx.sync's parameter server (rank a.ps_rank).
    Every rank steps until the PS has the synchronous runs' number of
    rank-iterations, then all take its final parameters."""
    xtr, ytr, xte, yte, name = data
    net = make_net(a, xtr, rank)
    straggle = straggler_sleep(a, net, xtr, ytr, rank)
    per_rank = len(ytr) // world
    steps_per_epoch = per_rank // a.batch
    epoch_samples = steps_per_epoch * world
    total = (a.steps * world if a.steps else a.epochs * epoch_samples)
    sync = make_sync(a, backend, comm, net.parameters(), total)
    # every rank starts from the PS's parameters (rank 0's)
    check_ok = check_the_check(net, rank, world)
    same, digs = same_everywhere(net, world)
    if not (check_ok and same):
        print("train: %s: rank %d: the ranks do not start alike (%s) or "
              "the check is blind" % (backend, rank, digs), file=sys.stderr)
        sys.exit(3)
    accs, times = [], []
    loss_v = float("nan")
    t0 = time.time()
    t_train = 0.0
    step = 0
    epoch = 0
    next_eval = epoch_samples
    more = True
    while more:
        g = torch.Generator().manual_seed(a.seed * 1000 + epoch)
        order = torch.randperm(len(ytr), generator=g)
        mine = order[rank * per_rank:(rank + 1) * per_rank]
        for s in range(steps_per_epoch):
            idx = mine[s * a.batch:(s + 1) * a.batch]
            ts = time.time()
            net.zero_grad()
            loss = F.cross_entropy(net(xtr[idx]), ytr[idx])
            if rank == a.slow_rank:
                time.sleep(a.slow_ms / 1000)
            if straggle:
                time.sleep(straggle)
            loss.backward()
            more = sync.step()
            t_train += time.time() - ts
            loss_v = loss.item()
            step += 1
            if rank == 0 and sync.samples >= next_eval and \
                    len(accs) < a.epochs - 1:
                accs.append(accuracy(net, xte, yte))
                times.append(time.time() - t0)
                next_eval += epoch_samples
            if not more:
                break
        epoch += 1
    sync.finish()
    wall = time.time() - t0
    same, digs = same_everywhere(net, world)
    if not same:
        print("train: %s: rank %d: parameters differ between ranks after "
              "finish: %s" % (backend, rank, digs), file=sys.stderr)
        sys.exit(3)
    accs.append(accuracy(net, xte, yte))
    times.append(wall)
    st = sync.stats()
    return {
        "backend": backend, "ranks": world, "data": name,
        "train": len(ytr), "test": len(yte), "seed": a.seed,
        "epochs": len(accs), "steps": step, "batch_per_rank": a.batch,
        "accuracy": accs[-1], "accuracy_by_epoch": accs,
        "time_by_epoch": times, "loss": loss_v, "check": "finish",
        "checks_passed": 1, "check_detects_one_ulp": check_ok,
        "digest": param_digest(net).hex(),
        # the PS's rank-iterations over the ranks: one synchronous step's
        # worth of samples per "step"
        "global_steps": sync.samples / world,
        "s_per_step": t_train / max(step, 1),
        "wall_per_step": wall / max(sync.samples / world, 1),
        "slow_rank": a.slow_rank, "slow_ms": a.slow_ms,
        "straggler": a.straggler, "straggle_s": a.straggle_s,
        "seconds": wall, "sync": st,
    }


def split_arg(v):
    """--osp-split: a number or "auto"."""
    if v == "auto":
        return v
    try:
        return float(v)
    except ValueError:
        raise argparse.ArgumentTypeError("a number in (0, 1] or auto, "
                                         "got %r" % v)


def main():
    a = parse_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    backends = a.backend.split(",")
    known = ("rinx", "rinx-backend", "gloo", "osp", "asp", "ssp", "inhad",
             "asp-xdp", "ssp-xdp", "inhad-xdp")
    for b in backends:
        if b not in known:
            sys.exit("train: --backend: %s or a list of them, not %r"
                     % (", ".join(known), b))
    torch.set_num_threads(1)    # one core per rank at most, no oversubscription
    if a.compute_ms > 0 and rank == 0:
        # every output of an emulated run says so
        print("# " + emulated_note(a), flush=True)

    dist.init_process_group("gloo", rank=rank, world_size=world)
    comm = None
    if set(backends) - {"gloo", "rinx-backend"}:
        import rinx
        comm = rinx.Comm.from_env(timeout_ms=a.timeout_ms)
    pg = None
    if "rinx-backend" in backends:
        # the backend "rinx" in a group of every rank: its own job, its
        # own communicator (RINX_TIMEOUT_MS from --timeout-ms)
        import rinx.torch
        os.environ.setdefault("RINX_TIMEOUT_MS", str(a.timeout_ms))
        pg = dist.new_group(backend="rinx")
    data = load_data(a.data, a.seed) if a.compute_ms <= 0 else None
    for b in backends:
        if a.compute_ms > 0 and ps_mode(b):
            result = train_ps_emulated(a, b, comm, rank, world)
        elif a.compute_ms > 0:
            result = train_emulated(a, b, comm, rank, world, pg)
        else:
            result = train(a, b, comm, data, rank, world, pg)
        if rank == 0:
            print("result " + json.dumps(result), flush=True)
    if comm is not None:
        comm.close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
