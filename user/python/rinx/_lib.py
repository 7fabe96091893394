# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""ctypes view of librinx (user/librinx.h), the only place that knows its ABI.

The structures below mirror the public header field for field; the binding's
test compares these field lists with the header, so a change there that is
not made here fails the test instead of corrupting memory. rinx_comm_stats()
writes a whole struct: it gets a buffer larger than the struct we know, so an
older binding on a newer library loses fields instead of overrunning.
"""
import ctypes
import os

RINX_INT32 = 1
RINX_FLOAT32 = 2


class CommOpts(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("spec", ctypes.c_char_p),
        ("node", ctypes.c_char_p),
        ("rank", ctypes.c_int),
        ("job", ctypes.c_uint32),
        ("token", ctypes.c_uint64),
        ("timeout_ms", ctypes.c_int),
        ("inflight", ctypes.c_int),
        ("plan", ctypes.c_char_p),
        ("block_values", ctypes.c_int),  # 0: the MTU's blocks
    ]


STATS_FIELDS = (
    "ops", "rounds", "bytes", "blocks_sent", "slow_path", "slow_dropped",
    "nonfinite", "timeouts", "repairs", "nacks", "retransmits",
    "ina_fallbacks", "ns_quant", "ns_dequant", "ns_total",
    "xsk_rx_dropped", "xsk_rx_ring_full", "xsk_fill_empty",
    "xsk_tx_invalid", "ecn_marked", "cc_cuts", "pace_rate",
    "pace_ceiling",
)


class CommStats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in STATS_FIELDS]


class PsOpts(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("server", ctypes.c_int),
        ("count", ctypes.c_size_t),
        ("init", ctypes.c_void_p),
        ("staleness", ctypes.c_int),
        ("headroom", ctypes.c_int),
    ]


PS_STATS_FIELDS = ("pushes", "pulls", "frames", "resent", "held", "clipped",
                   "clock", "min_clock")


class PsStats(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t)] + \
        [(name, ctypes.c_uint64) for name in PS_STATS_FIELDS]


# room for fields a newer library may add after the ones above
STATS_BUF_BYTES = 4096


def _candidates():
    env = os.environ.get("RINX_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    # the copy `make` puts beside the package, then the build tree it
    # came from, then the loader's search path
    return [os.path.join(here, "librinx.so"),
        os.path.join(here, "..", "..", "librinx.so"),
        "librinx.so"]


def load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    else:
        raise ImportError("rinx: cannot load librinx.so (build it with "
                  "make, or set RINX_LIBRARY); tried: " +
                  "; ".join(tried))

    P = ctypes.c_void_p
    lib.rinx_comm_open.argtypes = [ctypes.POINTER(CommOpts),
                       ctypes.POINTER(P)]
    lib.rinx_comm_open.restype = ctypes.c_int
    lib.rinx_comm_close.argtypes = [P]
    lib.rinx_comm_close.restype = None
    lib.rinx_comm_rank.argtypes = [P]
    lib.rinx_comm_rank.restype = ctypes.c_int
    lib.rinx_comm_size.argtypes = [P]
    lib.rinx_comm_size.restype = ctypes.c_int
    lib.rinx_comm_block_values.argtypes = [P]
    lib.rinx_comm_block_values.restype = ctypes.c_int
    lib.rinx_comm_error.argtypes = [P]
    lib.rinx_comm_error.restype = ctypes.c_char_p
    lib.rinx_comm_stats.argtypes = [P, P]
    lib.rinx_comm_stats.restype = ctypes.c_int
    lib.rinx_allreduce.argtypes = [P, P, P, ctypes.c_size_t, ctypes.c_int]
    lib.rinx_allreduce.restype = ctypes.c_int
    lib.rinx_allreduce_start.argtypes = [P, P, P, ctypes.c_size_t,
                         ctypes.c_int, ctypes.POINTER(P)]
    lib.rinx_allreduce_start.restype = ctypes.c_int
    lib.rinx_test.argtypes = [P]
    lib.rinx_test.restype = ctypes.c_int
    lib.rinx_wait.argtypes = [P, ctypes.c_int]
    lib.rinx_wait.restype = ctypes.c_int
    lib.rinx_cancel.argtypes = [P]
    lib.rinx_cancel.restype = None
    lib.rinx_ps_open.argtypes = [P, ctypes.POINTER(PsOpts), ctypes.POINTER(P)]
    lib.rinx_ps_open.restype = ctypes.c_int
    for name in ("rinx_ps_push", "rinx_ps_pull", "rinx_ps_finish",
                 "rinx_ps_stats"):
        getattr(lib, name).argtypes = [P, P]
        getattr(lib, name).restype = ctypes.c_int
    lib.rinx_ps_pushpull.argtypes = [P, P, P]
    lib.rinx_ps_pushpull.restype = ctypes.c_int
    lib.rinx_ps_pushpull_many.argtypes = [P, ctypes.c_int, P, P]
    lib.rinx_ps_pushpull_many.restype = ctypes.c_int
    lib.rinx_ps_close.argtypes = [P]
    lib.rinx_ps_close.restype = None
    lib.rinx_f32_bound.argtypes = [ctypes.c_int, ctypes.c_double]
    lib.rinx_f32_bound.restype = ctypes.c_double
    return lib
