# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""OSP: two-stage overlapped synchronization with Local-Gradient-based
Parameter correction (LGP), for SGD with momentum, on rinx.

    osp = rinx.osp.OSP(comm, model.parameters(), lr=0.05, momentum=0.9)
    for x, y in batches:
        osp.zero_grad()     # in place (model.zero_grad() works too)
        loss_fn(model(x), y).backward()
        osp.step()          # instead of allreduce + optimizer.step()
    osp.finish()            # the last stage 2 in, parameters corrected

OSP works in place on two flat buffers, one of the parameters and one of
their gradients: the parameters become views into the first (they stay
where they are when they already are consecutive views of one flat
tensor), their .grad views into the second, so backward accumulates there
and a step copies no gradient (a gradient replaced by an assignment or by
zero_grad(set_to_none=True) is copied in once). A step makes about five
passes over the gradient's size on the host: stage 1 is summed in place,
stage 2 copied once into the buffer that travels in the background.

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
        # One flat buffer each for the parameters and the gradients, the
        # parameters' and gradients' storage from now on (views into
        # them), so that a step works on them in place: flattening and
        # writing back every step cost more host time than the overlap
        # saved (docs/python.md).
        self.flat_p = self._adopt_params()
        self.flat_g = torch.zeros(total)
        # steps whose gradients were the buffer's views already (no copy)
        self.grads_in_place = 0
        self._gather_grads()    # gradients computed before keep their values
        self.v1 = torch.zeros(self.n1)
        self.v2 = torch.zeros(self.n2)
        self.s2 = torch.empty(self.n2)      # stage-2 sum, in flight
        self.base2 = torch.empty(self.n2)   # stage 2 before the local step
        self.fut = None         # stage-2 gradient sum in flight
        self.steps = 0
        self.started = 0        # stage-2 sums started
        self.corrections = 0    # stage-2 sums waited for and applied
        # the most stage-2 sums started and not yet applied at once (the
        # staleness bound says 1): counted, not assumed, so that a step
        # that starts a sum before the previous one is in shows as 2
        self.max_inflight = 0

    def _adopt_params(self):
        """The parameters' storage as one flat tensor in their order:
        theirs when they already are consecutive views of one (nothing
        moves), else a new buffer they are moved into."""
        first = self.params[0]
        base = first._base if first._base is not None else first
        if base.dim() == 1 and base.is_contiguous():
            off = first.storage_offset() - base.storage_offset()
            o = off
            for p in self.params:
                if (p._base is not base and p is not base) or \
                        p.storage_offset() - base.storage_offset() != o:
                    break
                o += p.numel()
            else:
                return base.detach()[off:o]
        flat = torch.empty(self.n)
        o = 0
        with torch.no_grad():
            for p in self.params:
                k = p.numel()
                flat[o:o + k].copy_(p.reshape(-1))
                p.data = flat[o:o + k].view_as(p)
                o += k
        return flat

    def _grads_to_views(self):
        """Gives every parameter a gradient that is a view into flat_g,
        so that the next backward pass accumulates into it in place."""
        o = 0
        for p in self.params:
            k = p.numel()
            p.grad = self.flat_g[o:o + k].view_as(p)
            o += k

    def _gather_grads(self):
        """flat_g holds this step's gradients: a copy only of those that
        are not its views (a zero_grad(set_to_none=True) or an assignment
        replaced them)."""
        o = 0
        moved = False
        for p in self.params:
            k = p.numel()
            view = self.flat_g[o:o + k]
            if p.grad is None:
                view.zero_()
                moved = True
            elif p.grad.data_ptr() != view.data_ptr():
                view.copy_(p.grad.reshape(-1))
                moved = True
            o += k
        if moved:
            self._grads_to_views()
        else:
            self.grads_in_place += 1
        return self.flat_g

    def zero_grad(self):
        """Zeroes the gradients in place (they stay views: the next step
        copies nothing)."""
        self.flat_g.zero_()
        self._grads_to_views()

    def _correct(self):
        """Stage 2 of the previous step: wait for the sum and apply it
        from the state before the local step."""
        if self.fut is None:
            return
        g = self.fut.wait()     # raises the rinx.Error that ended it
        self.fut = None
        self.v2.mul_(self.mu).add_(g, alpha=1.0 / self.comm.size)
        torch.add(self.base2, self.v2, alpha=-self.lr,
                  out=self.flat_p[self.n1:])
        self.corrections += 1

    def step(self):
        self._correct()
        self.steps += 1
        g = self._gather_grads()
        p = self.flat_p
        with torch.no_grad():
            # stage 1: what the next forward needs first, synchronously,
            # summed in place in the gradient buffer
            g1 = g[:self.n1]
            self.comm.allreduce(g1)
            self.v1.mul_(self.mu).add_(g1, alpha=1.0 / self.comm.size)
            p[:self.n1].add_(self.v1, alpha=-self.lr)
            if not self.n2:
                return
            # stage 2: its sum in the background (own buffer: the next
            # backward pass writes the gradients); meanwhile the local
            # gradient (LGP) from the agreed velocity
            g2 = g[self.n1:]
            self.s2.copy_(g2)
            self.base2.copy_(p[self.n1:])
            self.fut = rtorch.allreduce_future(self.comm, self.s2,
                                               average=False)
            self.started += 1
            self.max_inflight = max(self.max_inflight,
                                    self.started - self.corrections)
            p2 = p[self.n1:]
            p2.add_(self.v2, alpha=-self.lr * self.mu)
            p2.add_(g2, alpha=-self.lr)

    def finish(self):
        """Waits for the last stage 2 and corrects: afterwards every
        parameter is identical on every rank."""
        with torch.no_grad():
            self._correct()

    def synced(self):
        """The parameters as every rank agrees on them: stage 1 as they
        are, stage 2 before the pending local step (flat float32)."""
        p = self.flat_p.clone()
        if self.fut is not None:
            p[self.n1:] = self.base2
        return p
