# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""OSP: two-stage overlapped synchronization with Local-Gradient-based
Parameter correction (LGP), for SGD with momentum, on rinx.

    osp = rinx.osp.OSP(comm, model.parameters(), lr=0.05, momentum=0.9)
    for x, y in batches:
        loss_fn(model(x), y).backward()
        osp.step()          # instead of allreduce + optimizer.step()
        model.zero_grad()
    osp.finish()            # the last stage 2 in, parameters corrected

The parameters are split in forward order, element by element: stage 1
holds the leading `split` of the elements (a tensor may straddle the two
stages), which the next forward pass needs first; stage 2 the rest. A split
at tensor boundaries would put a model's large first layer in stage 1
whatever `split` says (a 64-512-10 network: 295,424 of 301,066 elements),
leaving stage 2 nothing to overlap. Each step:

1. waits for the previous step's stage 2 sum and corrects the stage-2
   parameters with it: they become exactly what a synchronous (BSP) step
   from the same state would have made them;
2. sums stage 1 (blocking) and updates stage-1 parameters with it;
3. starts the stage-2 sum in the background (a worker thread, overlapped
   with the next forward and backward pass) and meanwhile moves the stage-2
   parameters with this rank's local gradient (LGP).

Consistency, given the gradients each rank computed: stage-1 parameters
get the synchronous (BSP) update and are identical on every rank after every
step; stage 2's agreed value (`synced()`) is identical on every rank and
trails the synchronous update by one step; the stage-2 parameters the next
forward pass sees are one local-gradient step from it (staleness bound 1:
at most one stage-2 sum in flight). After `finish()` everything is agreed.
"""
import torch

from . import Comm
from . import torch as rtorch

__all__ = ["OSP"]


class OSP:
    def __init__(self, comm, params, lr, momentum=0.0, split=0.5):
        if not isinstance(comm, Comm):
            raise TypeError("rinx.osp: comm must be a rinx.Comm")
        if not 0.0 < split <= 1.0:
            raise ValueError("rinx.osp: split must be in (0, 1]")
        self.comm = comm
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("rinx.osp: no parameters")
        for p in self.params:
            if p.dtype != torch.float32 or p.device.type != "cpu":
                raise TypeError("rinx.osp: parameters must be float32 on "
                                "the CPU, got %s on %s" % (p.dtype, p.device))
            if not p.is_contiguous():
                raise TypeError("rinx.osp: parameters must be contiguous")
        self.lr = float(lr)
        self.mu = float(momentum)
        total = sum(p.numel() for p in self.params)
        self.n = total
        self.n1 = min(total, max(1, int(round(split * total))))
        self.n2 = total - self.n1
        self.v1 = torch.zeros(self.n1)
        self.v2 = torch.zeros(self.n2)
        self.base2 = None       # stage-2 parameters before the local step
        self.fut = None         # stage-2 gradient sum in flight
        self.steps = 0
        self.started = 0        # stage-2 sums started
        self.corrections = 0    # stage-2 sums waited for and applied
        # the most stage-2 sums started and not yet applied at once (the
        # staleness bound says 1): counted, not assumed, so that a step
        # that starts a sum before the previous one is in shows as 2
        self.max_inflight = 0

    def _flat_grad(self):
        out = torch.empty(self.n)
        o = 0
        for p in self.params:
            k = p.numel()
            if p.grad is None:
                out[o:o + k].zero_()
            else:
                out[o:o + k].copy_(p.grad.reshape(-1))
            o += k
        return out

    def _flat(self):
        out = torch.empty(self.n)
        o = 0
        for p in self.params:
            k = p.numel()
            out[o:o + k].copy_(p.detach().reshape(-1))
            o += k
        return out

    def _assign(self, flat, start):
        """Writes flat into the elements [start, start + len(flat)) of
        the parameters taken in order."""
        end = start + flat.numel()
        o = 0
        with torch.no_grad():
            for p in self.params:
                k = p.numel()
                lo, hi = max(o, start), min(o + k, end)
                if lo < hi:
                    p.view(-1)[lo - o:hi - o].copy_(flat[lo - start:
                                                        hi - start])
                o += k

    def _correct(self):
        """Stage 2 of the previous step: wait for the averaged sum and
        apply it from the state before the local step."""
        if self.fut is None:
            return
        g = self.fut.wait()     # raises the rinx.Error that ended it
        self.fut = None
        self.v2.mul_(self.mu).add_(g)
        self._assign(self.base2 - self.lr * self.v2, self.n1)
        self.base2 = None
        self.corrections += 1

    def step(self):
        self._correct()
        self.steps += 1
        g = self._flat_grad()
        p = self._flat()
        # stage 1: what the next forward needs first, synchronously
        g1 = g[:self.n1].clone()
        self.comm.allreduce(g1)
        g1.div_(self.comm.size)
        self.v1.mul_(self.mu).add_(g1)
        self._assign(p[:self.n1] - self.lr * self.v1, 0)
        if not self.n2:
            return
        # stage 2: in the background; meanwhile the local gradient (LGP)
        g2 = g[self.n1:].clone()
        local = g2.clone()
        self.base2 = p[self.n1:].clone()
        self.fut = rtorch.allreduce_future(self.comm, g2, average=True)
        self.started += 1
        self.max_inflight = max(self.max_inflight,
                                self.started - self.corrections)
        self._assign(self.base2 - self.lr * (self.v2 * self.mu + local),
                     self.n1)

    def finish(self):
        """Waits for the last stage 2 and corrects: afterwards every
        parameter is identical on every rank."""
        self._correct()

    def synced(self):
        """The parameters as every rank agrees on them: stage 1 as they
        are, stage 2 before the pending local step (flat float32)."""
        p = self._flat()
        if self.base2 is not None:
            p[self.n1:] = self.base2
        return p
