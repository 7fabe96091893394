/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The testbed switch (bpf/switch.bpf.c) and its control plane
 * (tools/testbed/): counters, MAC table value and the per-port link value
 * (settings, queue state, counters). Included by the switch program, the
 * testbed and the tests that drive the switch, never by librinx: a real
 * cluster's switches are not this program (the group MACs the host
 * program uses stay in uapi/rinx.h).
 */
#ifndef RINX_SWITCH_KERN_USER_H
#define RINX_SWITCH_KERN_USER_H

#include "uapi/rinx.h"

/* Counters of the testbed switch. */
enum rinx_sw_stat {
	RINX_SW_FWD,		/* unicast redirected */
	RINX_SW_FLOOD,		/* broadcast/multicast/unknown flooded */
	RINX_SW_DROP_SHORT,	/* shorter than an Ethernet header */
	RINX_SW_DROP_NO_PORT,	/* known MAC but port missing from devmap */
	RINX_SW_DROP_HAIRPIN,	/* destination is the ingress port */
	RINX_SW_INA_FWD,	/* aggregator output redirected to its MAC */
	RINX_SW_INA_GROUP,	/* aggregator output to the rack's group */
	RINX_SW_INA_DROP,	/* taken by the aggregator: consumed or
				 * dropped (its own counters say which) */
	RINX_SW_INA_ABORTED,	/* aggregator internal error */
	RINX_SW_GROUP,		/* a host's frame to its rack's group */
	RINX_SW_HAIRPIN_SELF,	/* self-addressed: back out the ingress */
	RINX_SW_DROP_NO_NEIGH,	/* group copy to the uplink: IP unknown */
	RINX_SW_FAULT_DROP,	/* injected loss (drop probability) */
	RINX_SW_QUEUE_DROP,	/* the port's queue was full: tail drop */
	RINX_SW_FAULT_DUP,	/* injected duplicate: sent twice */
	RINX_SW_FAULT_HOLD,	/* held back for reordering (slot was free) */
	RINX_SW_FAULT_REORDER,	/* held frame sent in a later frame's place,
				 * that one held in turn */
	RINX_SW_FAULT_HOLD_LOST,/* held frame older than the hold limit:
				 * dropped */
	RINX_SW_FAULT_SKIP,	/* dup or reorder drawn but impossible (no
				 * dup map, frame too big, no tailroom) */
	RINX_SW_ECN_MARK,	/* queued above the mark threshold, leaves
				 * with CE (set here, or set before) */
	RINX_SW_ECN_NOT_ECT,	/* queued above the mark threshold but not
				 * IPv4 ECT: left unmarked */
	RINX_SW_CLASS_GROUP,	/* the fabric's group sent along its class's
				 * broadcast route (`bcast`, topology
				 * testbed) instead of the spanning tree;
				 * an aggregator's output too (then not
				 * counted ina_group) */
	RINX_SW_CAP_DROP,	/* a frame for the aggregator beyond its
				 * capacity's buffer: tail drop (`ina_cap`) */
	RINX_SW_CAP_MARK,	/* a frame for the aggregator queued above
				 * its capacity's mark threshold: CE */
	RINX_SW_REAL_HELD,	/* handed to the testbed's queue process to
				 * leave at its departure time (set.real) */
	RINX_SW_REAL_NONE,	/* to be held, but no queue process took
				 * its ingress port: sent at once */
	RINX_SW_STAT_MAX,
};

/* Switch MAC table value. */
struct rinx_sw_port {
	__u32 port;	/* index in the switch's devmap (= ifindex) */
	__u32 resv;
};

/* Switch flow table key (topology testbed): a (destination, source MAC)
 * pair routed by the plan rather than by the MAC table, for the rinx
 * frames of one plan class (rinx_hdr.klass) or for every frame
 * (RINX_SW_CLASS_ANY). A rinx frame takes its class's entry, else the
 * pair's, else the MAC table. */
struct rinx_sw_flow_key {
	__u8 dst[6];
	__u8 src[6];
	__u16 klass;	/* plan class, host order; RINX_SW_CLASS_ANY */
	__u16 resv;	/* zero */
};

#define RINX_SW_CLASS_ANY	0xffff

/* Switch broadcast table key (topology testbed): the rinx frames of one
 * plan class to the fabric's group (RINX_GROUP_EVERY) from one source (the
 * class's root: a worker, or an aggregator) that came in by port
 * `ingress` (ifindex; 0: sent by this switch's own aggregator) leave by
 * the ports of the devmap the entry holds: the class's broadcast route.
 * Without an entry the group goes on the spanning tree. */
struct rinx_sw_bcast_key {
	__u32 ingress;
	__u16 klass;	/* host order */
	__u8 src[6];
};

/* Ports of a switch's devmaps (a broadcast route's is made by the control
 * plane, and must be this size). */
#define RINX_SW_MAX_PORTS	64

/* Probabilities are in parts per million. */
#define RINX_SW_PPM		1000000U
/* Queue arithmetic: 1 Mbit/s drains 1/8000 byte per ns, so the backlog is
 * kept in units of 1/8000 byte and drains by rate_mbit units per ns. */
#define RINX_SW_Q_UNIT		8000ULL
/* What a frame occupies on the link beyond the bytes XDP sees. */
#define RINX_SW_WIRE_EXTRA	RINX_WIRE_EXTRA
/* ecn threshold that never marks (the backlog never exceeds the buffer). */
#define RINX_SW_ECN_OFF		0xffffffffU
#define RINX_SW_BUFFER_MAX	(1U << 30)
#define RINX_SW_RATE_MAX	1000000U	/* Mbit/s */
#define RINX_SW_SHARE_MAX	99U		/* percent */

/*
 * Two classes of a port drained for cap (the rate times the time since
 * the last frame, RINX_SW_Q_UNIT units): q[1] at share percent of the
 * rate and q[0] at the rest while both have a backlog; a class that
 * empties gives the rest of the time to the other (work-conserving, as a
 * switch's weighted round robin over two queues, taken as a fluid). No
 * arrival falls in the time, so the exact drain has one breakpoint at
 * most: where the class that empties first empties.
 */
static __inline void rinx_sw_drain2(__u64 *q0, __u64 *q1, __u64 cap,
				    __u32 share)
{
	__u64 c1 = cap / 100 * share + cap % 100 * share / 100;
	__u64 c0 = cap - c1, a = *q0, b = *q1, x;

	if (a <= c0) {
		x = c1 + (c0 - a);
		*q0 = 0;
		*q1 = b > x ? b - x : 0;
	} else if (b <= c1) {
		x = c0 + (c1 - b);
		*q1 = 0;
		*q0 = a > x ? a - x : 0;
	} else {
		*q0 = a - c0;
		*q1 = b - c1;
	}
}

/* Settings of one switch port, written by the control plane. */
struct rinx_sw_link_set {
	__u32 drop_ppm;		/* loss probability */
	__u32 dup_ppm;		/* duplication probability */
	__u32 reorder_ppm;	/* reorder probability */
	__u32 hold_ms;		/* a frame held for reordering longer than
				 * this is lost */
	__u32 rate_mbit;	/* drain rate of the queue; 0: no queue */
	__u32 buffer;		/* bytes the queue holds */
	__u32 ecn;		/* CE on ECT frames above this backlog
				 * (bytes); RINX_SW_ECN_OFF: never */
	__u32 share;		/* 0: one queue for every frame; 1..99: two
				 * classes, rinx frames (UDP to the rinx
				 * port) and the rest, each with its own
				 * backlog, buffer and threshold, rinx's
				 * draining at this percent of the rate
				 * while both have a backlog (as a switch's
				 * weighted classes); rinx_sw_drain2 */
	__u32 real;		/* 1: the frames that are not rinx's wait in
				 * a real queue for the time this port's
				 * virtual queue lets them leave (the
				 * testbed's queue process,
				 * tools/testbed/queue.c); 0: they leave at
				 * once */
	__u32 resv;
};

/*
 * Value of the switch's `links` map, per egress port (ifindex). The control
 * plane writes the whole value (settings, set_ns, everything else zero)
 * with BPF_F_LOCK whenever a setting changes, so the state and counters
 * below always belong to the settings beside them. The queue fields are
 * changed under `lock` only; the other counters with atomic adds.
 */
struct rinx_sw_link {
	struct bpf_spin_lock lock;
	__u32 resv;
	struct rinx_sw_link_set set;
	__u64 set_ns;		/* CLOCK_MONOTONIC (bpf_ktime_get_ns) of the
				 * settings */
	/* the virtual queue (under lock) */
	__u64 backlog;		/* 1/RINX_SW_Q_UNIT bytes, wire overhead
				 * included; with set.share, of the class
				 * of other frames */
	__u64 backlog_rinx;	/* with set.share: the rinx class's */
	__u64 last_ns;		/* time the backlog was last drained to */
	__u64 peak;		/* highest backlog, bytes */
	__u64 n_frames;		/* frames admitted: they leave */
	__u64 n_bytes;		/* their bytes (without wire overhead) */
	__u64 n_qdrop;		/* tail drops: queue full */
	__u64 n_rinx;		/* with a rate: bytes of rinx frames
				 * admitted (without wire overhead) */
	__u64 real_due;		/* with set.real: when the last frame
				 * held for the real queue is due */
	/* atomic adds */
	__u64 n_mark;		/* admitted above the threshold with CE */
	__u64 n_nect;		/* admitted above the threshold, not ECT */
	__u64 n_drop;		/* injected loss */
	__u64 n_dup;		/* duplicated */
	__u64 n_hold;		/* held for reordering */
	__u64 n_reorder;	/* sent in a later frame's place */
	__u64 n_lost;		/* held too long: lost */
	__u64 n_skip;		/* dup or reorder drawn but not possible */
	__u64 n_real;		/* with set.real: frames handed to the real
				 * queue's process */
};

/*
 * The aggregation capacity of an INA switch (the topology's cap=, Gbps of
 * input it can sum; on the testbed scaled as its links are): the
 * aggregator takes the frames it is to sum through a virtual queue that
 * drains at that rate, a `struct rinx_sw_link` in the switch's one-entry
 * array `ina_cap` (key 0), written by the control plane with BPF_F_LOCK.
 * Its settings are rate_mbit (0: no limit, frames only counted), buffer
 * and ecn; the fault settings do not apply. A frame that does not fit is
 * dropped (RINX_SW_CAP_DROP), one queued above ecn is marked CE before it
 * is summed (RINX_SW_CAP_MARK), so the sum carries the mark to the ranks.
 */
#define RINX_SW_CAP_KEY		0

/*
 * A frame the switch hands to the testbed's queue process (set.real):
 * through the XSKMAP `xsks`, at the socket the process bound to the port
 * the frame came in by (`xsk_slot`), with this header in front of it.
 * The process sends the frame (without the header) from its socket on
 * port `egress` at dep_ns (CLOCK_MONOTONIC): when the port's virtual
 * queue would have sent its last bit, at the drain rate of the frame's
 * class when it was admitted.
 */
struct rinx_sw_real_hdr {
	__u64 dep_ns;
	__u32 egress;		/* ifindex */
	__u32 magic;		/* RINX_SW_REAL_MAGIC */
};

#define RINX_SW_REAL_MAGIC	0x72786871U	/* "rxhq" */
/* A frame with this little backlog ahead of it (ns at its class's rate)
 * leaves at once, unless frames held before it are still due (they keep
 * their order): the process wakes up about this late (tens of
 * microseconds), and every frame through it costs CPU. */
#define RINX_SW_REAL_MIN_NS	60000ULL
/* The process's frames are 4,096 bytes with the kernel's 256 of headroom:
 * a larger frame is sent at once (counted RINX_SW_REAL_NONE). */
#define RINX_SW_REAL_FRAME	4096
#define RINX_SW_REAL_MAX	(RINX_SW_REAL_FRAME - 256 - 16)

_Static_assert(sizeof(struct rinx_sw_port) == 8, "sw port");
_Static_assert(sizeof(struct rinx_sw_flow_key) == 16, "sw flow key");
_Static_assert(sizeof(struct rinx_sw_bcast_key) == 12, "sw bcast key");
_Static_assert(sizeof(struct rinx_sw_link_set) == 40, "sw link settings");
_Static_assert(sizeof(struct rinx_sw_real_hdr) == 16, "sw real queue hdr");
_Static_assert(__builtin_offsetof(struct rinx_sw_link, set) == 8,
	       "sw link: settings after the lock");
_Static_assert(sizeof(struct rinx_sw_link) == 200, "sw link");
/* tools/share-bench.sh reads these two from the pinned map */
_Static_assert(__builtin_offsetof(struct rinx_sw_link, n_bytes) == 96 &&
	       __builtin_offsetof(struct rinx_sw_link, n_rinx) == 112,
	       "sw link: the counters share-bench reads");

#endif /* RINX_SWITCH_KERN_USER_H */
