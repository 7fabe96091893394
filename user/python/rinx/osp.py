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
3. starts the stage-2 sum (a rinx request, started before step() returns)
   and leaves it to the communicator's worker thread, which drives it
   while the caller runs the next forward and backward pass; meanwhile
   moves the stage-2 parameters with this rank's local gradient (LGP).
   `pending()` is True while it is in flight; `overlapped` counts the
   steps that returned with it in flight, `done_at_begin` those that
   found the previous one complete as they began.

How much goes to stage 2 is the split. `split="auto"` lets OSP choose it:
stage 2 as large as the next step's compute hides. Every `adapt_every`
steps (after the first stage 2 is in) each rank proposes a size from what
it measured (85% of what the time its caller spent outside `step()`,
i.e. the forward and backward pass, hides at the time its last stage-2
sum took per element; no growth after a sum that was not done when the
step began; at most a doubling; half the way there) and the ranks take
the largest proposal (in 256ths of the elements: one allreduce of a
histogram), so all split alike, and a straggler's long compute counts.
Stage 1 keeps at least `min_split` of the elements. `resplit(n1)` sets it by
hand (every rank, the same n1; checked).

Consistency, given the gradients each rank computed: stage-1 parameters
get the synchronous (BSP) update and are identical on every rank after every
step; stage 2's agreed value (`synced()`) is identical on every rank and
trails the synchronous update by one step; the stage-2 parameters the next
forward pass sees are one local-gradient step from it (staleness bound 1:
at most one stage-2 sum in flight). After `finish()` everything is agreed.
"""
import time

import torch

from . import Comm, _buffer
from . import torch as rtorch

__all__ = ["OSP"]

AUTO_LEVELS = 256       # split="auto": proposals in 256ths of the elements


class OSP:
    def __init__(self, comm, params, lr, momentum=0.0, split=0.5,
                 min_split=0.1, adapt_every=4, trace=False):
        if not isinstance(comm, Comm):
            raise TypeError("rinx.osp: comm must be a rinx.Comm")
        self.auto = split == "auto"
        if self.auto:
            split = 0.5
        elif isinstance(split, str) or not 0.0 < split <= 1.0:
            raise ValueError("rinx.osp: split must be in (0, 1] or "
                             "\"auto\", got %r" % (split,))
        if not 0.0 < min_split <= 1.0:
            raise ValueError("rinx.osp: min_split must be in (0, 1]")
        if int(adapt_every) < 1:
            raise ValueError("rinx.osp: adapt_every must be at least 1")
        self.min_split = float(min_split)
        self.adapt_every = int(adapt_every)
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
        self.n1min = min(total, max(1, int(round(self.min_split * total))))
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
        # velocity, stage-2 sum in flight and stage 2 before the local
        # step: whole-size buffers, each stage a view (the split may move)
        # zeros, not empty: the pages are faulted in here, not in the
        # first step (0.5 s for 47 MB on a loaded core, paid by every rank
        # at another time, which the next collective then waits for)
        self.v = torch.zeros(total)
        self._s2 = torch.zeros(total)
        self._base2 = torch.zeros(total)
        self._split_at(min(total, max(1, int(round(split * total)))))
        self.fut = None         # stage-2 gradient sum in flight
        self.fut_n1 = 0         # the split it was started with
        self.splits = []        # n1 of every step (auto: what was agreed)
        self.wait_s = 0.0       # time the last step waited for stage 2
        self._t_end = None      # when the last step() returned
        self._s2_span = None    # (start, end) of the last stage-2 sum
        self._t1 = 0.0          # the last stage-1 sum's time
        self.steps = 0
        self.started = 0        # stage-2 sums started
        self.corrections = 0    # stage-2 sums waited for and applied
        # the most stage-2 sums started and not yet applied at once (the
        # staleness bound says 1): counted, not assumed, so that a step
        # that starts a sum before the previous one is in shows as 2
        self.max_inflight = 0
        # steps that returned with their stage-2 sum in flight (it
        # overlaps the caller's next compute), and steps that found the
        # previous one complete as they began (it was hidden): counted,
        # so that a change that waits for stage 2 inside step() or makes
        # progress only inside a wait shows
        self.overlapped = 0
        self.done_at_begin = 0
        # trace=True: (event, step, time.monotonic()) of every stage's
        # start and end, for a timeline across ranks (one clock per host)
        self.events = [] if trace else None
        self._cur = 0           # the step being made (0-based)

    def _ev(self, name, t=None, step=None):
        if self.events is not None:
            self.events.append((name, self._cur if step is None else step,
                                time.monotonic() if t is None else t))

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

    def _split_at(self, n1):
        self.n1 = n1
        self.n2 = self.n - n1
        self.v1 = self.v[:n1]
        self.v2 = self.v[n1:]
        self.s2 = self._s2[:self.n2]
        self.base2 = self._base2[:self.n2]

    def _correct(self):
        """Stage 2 of the previous step: wait for the sum and apply it
        from the state before the local step (at the split it was started
        with)."""
        self.wait_s = 0.0
        if self.fut is None:
            return
        t = time.monotonic()
        # raises the rinx.Error that ended it
        self._ev("wait2_begin", t)
        g, s0, s1 = self.fut.wait()
        self.wait_s = time.monotonic() - t
        self._ev("wait2_end")
        self._ev("s2_begin", s0, self.steps - 1)
        self._ev("s2_end", s1, self.steps - 1)
        self._s2_span = (s0, s1)
        self.fut = None
        self._apply2(g, self.fut_n1)
        self.corrections += 1

    def resplit(self, n1):
        """Stage 1 holds the leading n1 elements from the next step on.
        Collective: every rank calls it with the same n1 (checked: a
        rinx.osp ValueError on every rank otherwise). Waits for the
        stage-2 sum in flight and applies it first."""
        n1 = int(n1)
        if not 1 <= n1 <= self.n:
            raise ValueError("rinx.osp: resplit: n1 must be in 1..%d, got %d"
                             % (self.n, n1))
        with torch.no_grad():
            self._correct()
        # equal on every rank iff, for each 10-bit digit x of n1,
        # sum(x) = N x and sum(x^2) = N x^2 (then sum((x' - x)^2) = 0);
        # digits keep every sum exact in int32 up to 2,048 ranks
        digits = [(n1 >> s) & 1023 for s in (0, 10, 20)]
        mine = digits + [d * d for d in digits]
        t = torch.tensor(mine, dtype=torch.int32)
        self.comm.allreduce(t)
        k = self.comm.size
        if t.tolist() != [k * x for x in mine]:
            raise ValueError("rinx.osp: resplit: the ranks asked for "
                             "different splits (this rank %d)" % n1)
        self._split_at(n1)

    @staticmethod
    def auto_n2(n, n2, n1min, window_s, sum_s, sum_elems, hidden,
                shrink=True):
        """The stage-2 size one rank proposes: 85% of what `window_s` (the
        compute its caller did between two steps) hides at `sum_s` per
        `sum_elems` elements (the last stage-2 sum, else stage 1's), at
        most double the current size (n/64 from none), never more when
        the last stage 2 was not done as the step began (hidden False),
        never less unless `shrink` (its last sum took longer per element
        than stage 1's); half the way from the current size there (the
        times are noisy). Between 0 and n - n1min.

        Why not shrink otherwise: stage 1 runs after the wait for stage 2,
        so an element moved from a stage 2 that was not hidden into stage
        1 is summed in series either way, only in the slower of the two
        sums; and a stage 2 shrunk in a spell of load stayed small for
        steps after it (growth is at most a doubling per choice, and only
        once hidden)."""
        if sum_s <= 0 or sum_elems <= 0:
            want = n2
        else:
            fit = int(0.85 * window_s * sum_elems / sum_s)
            want = min(fit, max(2 * n2, n // 64))
            if not hidden:
                want = min(want, n2)
            if not shrink:
                want = max(want, n2)
        want = n2 + (want - n2) // 2
        return max(0, min(n - n1min, want))

    def _adapt(self, t_start):
        """split="auto": every adapt_every steps, the ranks agree on the
        largest of their proposals, in 256ths of the elements (one
        allreduce of a histogram): a straggler's long compute hides a
        stage 2 the other ranks' shorter one does not, and they wait for
        the straggler in stage 1 anyway."""
        if not self.auto or self._t_end is None or \
                self.steps % self.adapt_every:
            return
        window = t_start - self._t_end - self.wait_s
        if self._s2_span is not None and self.n2:
            s0, s1 = self._s2_span
            hidden = self.wait_s < 0.001 and s1 <= t_start
            # stage 2 slower per element than stage 1: elements moved
            # into stage 1 are summed sooner
            shrink = (s1 - s0) * self.n1 > self._t1 * self.n2
            prop = self.auto_n2(self.n, self.n2, self.n1min, window,
                                s1 - s0, self.n2, hidden, shrink)
        else:
            prop = self.auto_n2(self.n, self.n2, self.n1min, window,
                                self._t1, self.n1, True)
        hist = torch.zeros(AUTO_LEVELS + 1, dtype=torch.int32)
        hist[prop * AUTO_LEVELS // self.n] = 1
        self.comm.allreduce(hist)
        if int(hist.sum()) != self.comm.size:
            raise RuntimeError("rinx.osp: split proposals of %d ranks "
                               "summed to %d" % (self.comm.size,
                                                 int(hist.sum())))
        level = int(torch.nonzero(hist)[-1])
        n2 = level * self.n // AUTO_LEVELS
        self._split_at(self.n - max(0, min(self.n - self.n1min, n2)))

    def step(self):
        t_start = time.monotonic()
        self._cur = self.steps
        self._ev("step_begin", t_start)
        if self.fut is not None and self.fut.done():
            self.done_at_begin += 1
        with torch.no_grad():
            self._correct()
        self._adapt(t_start)
        self.splits.append(self.n1)
        self.steps += 1
        g = self._gather_grads()
        with torch.no_grad():
            # stage 1: what the next forward needs first, synchronously,
            # summed in place in the gradient buffer
            g1 = g[:self.n1]
            t = time.monotonic()
            self._ev("s1_begin", t)
            self.comm.allreduce(g1)
            self._t1 = time.monotonic() - t
            self._ev("s1_end")
            self._apply1(g1)
            if not self.n2:
                self._s2_span = None
                self._t_end = time.monotonic()
                self._ev("step_end", self._t_end)
                return
            # stage 2: its sum started now and driven in the background
            # (own buffer: the next backward pass writes the gradients);
            # meanwhile the local gradient (LGP) from the agreed velocity
            g2 = g[self.n1:]
            self._stage2_copy(g2)
            self.fut = self._start_s2(self.s2)
            self.fut_n1 = self.n1
            self.started += 1
            self.max_inflight = max(self.max_inflight,
                                    self.started - self.corrections)
            self._local_step(g2)
        if self.pending():
            self.overlapped += 1
        self._t_end = time.monotonic()
        self._ev("step_end", self._t_end)

    # The tensor work of a step, apart from the sums: on the host here;
    # a subclass may run it elsewhere (the example's emulated accelerator
    # models it as device time).

    def _apply1(self, g1):
        """Stage 1's synchronous update from its sum."""
        self.v1.mul_(self.mu).add_(g1, alpha=1.0 / self.comm.size)
        self.flat_p[:self.n1].add_(self.v1, alpha=-self.lr)

    def _apply2(self, g, n1):
        """The correction: stage 2 (from n1 on) from its state before the
        local step, with its sum g."""
        v2 = self.v[n1:]
        v2.mul_(self.mu).add_(g, alpha=1.0 / self.comm.size)
        torch.add(self._base2[:self.n - n1], v2, alpha=-self.lr,
                  out=self.flat_p[n1:])

    def _stage2_copy(self, g2):
        """Stage 2's gradient into the buffer that travels, its
        parameters into the state the correction starts from."""
        self.s2.copy_(g2)
        self.base2.copy_(self.flat_p[self.n1:])

    def _local_step(self, g2):
        """LGP: stage 2 moves by this rank's own gradient, with the
        agreed velocity."""
        p2 = self.flat_p[self.n1:]
        p2.add_(self.v2, alpha=-self.lr * self.mu)
        p2.add_(g2, alpha=-self.lr)

    def _start_s2(self, buf):
        """Starts the stage-2 sum here, in the caller's thread (the
        request exists before step() returns: a step never leaves it to
        the next one), and hands it to the communicator's worker thread,
        which drives it to its end: librinx makes progress only inside a
        wait, and the worker waits with the interpreter lock released
        while the caller computes. The future's value is (buf, start,
        end). The closure holds the request (its communicator and
        buffer) only: one that held the OSP object (its parameters) kept
        them alive in the worker thread until the interpreter's exit,
        where freeing them aborted the process."""
        _buffer(buf, "rinx.osp")
        req = self.comm.start(buf)
        t0 = time.monotonic()

        def run():
            req.wait()
            return buf, t0, time.monotonic()
        return rtorch._pipe(self.comm).submit_fn(run)

    def pending(self):
        """True while a stage-2 sum is in flight: started by a step and
        not yet complete (it completes in the background; the next step
        or finish() applies it)."""
        return self.fut is not None and not self.fut.done()

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
