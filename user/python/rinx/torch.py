# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""PyTorch DistributedDataParallel communication hook on rinx.

    comm = rinx.Comm.from_env()
    dist.init_process_group("gloo")   # DDP's own setup (parameter broadcast)
    model = DistributedDataParallel(net)
    model.register_comm_hook(comm, rinx.torch.allreduce_hook)

Every gradient bucket is summed by rinx and divided by the number of ranks,
as DDP's default hook averages it; the process group is used only for what
DDP does outside the hook.

librinx makes progress only inside rinx_test/rinx_wait and runs one
allreduce per communicator at a time, while DDP hands over buckets one by
one during the backward pass and waits for all of them at its end. So each
communicator gets one worker thread that reduces the buckets in the order
they come; the backward pass goes on meanwhile (librinx calls release the
interpreter lock), and the futures complete as the sums arrive.

Importing this module also registers the torch.distributed backend "rinx"
(`dist.init_process_group("rinx")`, rinx._backend): all_reduce on rinx,
everything else on a Gloo group it opens itself; DDP needs no hook with it.
"""
import queue
import threading

import torch

from . import Comm

__all__ = ["allreduce_hook", "allreduce_future", "ProcessGroupRinx"]


class _Pipe:
    """The worker thread of one communicator."""

    def __init__(self, comm):
        self.comm = comm
        self.q = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name="rinx-hook-%d" % comm.rank)
        self.thread.start()

    def submit(self, tensor, divide):
        def run():
            self.comm.allreduce(tensor)
            if divide:
                tensor.div_(self.comm.size)
            return tensor
        return self.submit_fn(run)

    def submit_fn(self, fn):
        """Runs fn() in the worker thread after the work queued before it;
        the future completes with its result or its exception."""
        fut = torch.futures.Future()
        self.q.put((fn, fut))
        return fut

    def _run(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            fn, fut = item
            try:
                if self.comm.closed:
                    # raises ClosedError naming the communicator
                    self.comm.stats()
                res = fn()
            except BaseException as e:  # handed to the waiter, not lost
                fut.set_exception(e)
                del item, fn, fut, e
                continue
            fut.set_result(res)
            # nothing of the last job stays referenced by this thread's
            # frame until the interpreter exits (where freeing tensors
            # of a model aborted the process)
            del item, fn, fut, res


_pipes = {}
_pipes_lock = threading.Lock()


def _pipe(comm):
    with _pipes_lock:
        p = _pipes.get(id(comm))
        if p is None or p.comm is not comm:
            p = _Pipe(comm)
            _pipes[id(comm)] = p
            comm._on_close.append(lambda: _unpipe(comm))
        return p


def _unpipe(comm):
    with _pipes_lock:
        p = _pipes.pop(id(comm), None)
    if p is not None:
        p.q.put(None)   # after the buckets already queued


def allreduce_future(comm, tensor, average=True):
    """Starts the in-place SUM (average=True: mean) of a contiguous CPU
    float32/int32 tensor over the ranks of `comm`; returns a
    torch.futures.Future that completes with the tensor, or with the
    rinx.Error that ended the allreduce. Averaging an int32 tensor is a
    TypeError (the mean is not an int32)."""
    if not isinstance(comm, Comm):
        raise TypeError("rinx.torch: state must be a rinx.Comm, got %s"
                        % type(comm).__qualname__)
    # the tensor's problems are reported here, in the caller's thread
    from . import _buffer
    _buffer(tensor, "rinx.torch.allreduce_future")
    if average and tensor.dtype != torch.float32:
        raise TypeError("rinx.torch: averaging needs float32, got %s"
                        % tensor.dtype)
    return _pipe(comm).submit(tensor, average)


def allreduce_hook(state, bucket):
    """DDP communication hook: `ddp.register_comm_hook(comm, allreduce_hook)`
    with `comm` a rinx.Comm over the same ranks as DDP's process group.
    Returns a future of the bucket's gradients averaged over the ranks, as
    DDP's default hook does."""
    return allreduce_future(state, bucket.buffer(), average=True)


from ._backend import ProcessGroupRinx, register as _register  # noqa: E402

_register()
