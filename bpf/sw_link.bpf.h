/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The testbed switch's counters and its ports' link emulation (the switch
 * plays each egress port: tc netem and qdiscs never see XDP frames): per
 * port, from `links` (bpf/switch_kern_user.h), injected loss, the virtual
 * queue (rate, buffer, ECN marks), reordering and duplication. The order
 * and the reasons are in bpf/switch.bpf.c's opening comment; this header
 * holds the mechanics, so that a queue can also stand in front of what is
 * not a port (the aggregator's capacity, bpf/ina_cap.bpf.h).
 *
 * Include once, from the switch program.
 */
#ifndef RINX_SW_LINK_BPF_H
#define RINX_SW_LINK_BPF_H

#include "bpf/tables.bpf.h"
#include "bpf/switch_kern_user.h"

/* RINX_TB_MTU + Ethernet header, rounded */
#define SW_HOLD_MAX	3456
/* An idle gap this long empties any queue (buffer <= 2^30 B, rate >= 1
 * Mbit/s); it also bounds dt * rate below 2^64. */
#define SW_DRAIN_MAX_NS	(1ULL << 43)

/* egress ifindex -> settings, queue and counters of the port; no entry:
 * the port is a perfect link. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct rinx_sw_link);
} links SEC(".maps");

/* egress ifindex -> a devmap holding that port twice: XDP clones a frame
 * only through a devmap broadcast (bpf/switch.bpf.c). */
struct sw_dup_map {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__array(values, struct sw_dup_map);
} dups SEC(".maps");

/* A held frame: buf[cur] holds it (len bytes) when len != 0. */
struct sw_held {
	__u64 ts;
	__u32 len;
	__u32 cur;
	__u8 buf[2][SW_HOLD_MAX];
};

/* egress ifindex -> held frame, per CPU; entries made by the control
 * plane with the links entry. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct sw_held);
} held SEC(".maps");

/* enum rinx_sw_stat -> count, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RINX_SW_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sw_stats SEC(".maps");

static __always_inline int count(__u32 what, int action)
{
	__u64 *c = bpf_map_lookup_elem(&sw_stats, &what);

	if (c)
		*c += 1;
	return action;
}

static __always_inline int drawn(__u32 ppm)
{
	return ppm && (ppm >= RINX_SW_PPM ||
		       bpf_get_prandom_u32() % RINX_SW_PPM < ppm);
}

enum { Q_DROP = -1, Q_OK = 0, Q_MARK = 1 };

/*
 * The port's virtual queue takes a frame of len bytes of class cls (1: a
 * rinx frame; its bytes counted in n_rinx) at time now: drains the
 * backlog for the time since the last frame, then tail-drops (Q_DROP) or
 * admits it, Q_MARK when the backlog it makes is above the threshold.
 * With set.share the port has two classes, each with its own backlog,
 * buffer and threshold (the port's), drained together by rinx_sw_drain2.
 * Without a rate there is no queue: every frame is admitted. No helper
 * may be called under the lock: now and len come from the caller, and
 * rate (the port's rate_mbit, read once: the control plane may change it
 * meanwhile, and a zero now must not meet a non-zero rate).
 *
 * dep (NULL: not asked) gets 0, or for an admitted frame that is not
 * rinx's on a port with set.real the time it leaves the virtual queue:
 * its class's backlog, itself included, over the rate its class drains
 * at now (the port's; with two classes the rest of rinx's share while
 * rinx's class has a backlog). A later change of the other class's
 * backlog does not move it: a frame may leave a little later than the
 * fluid would have let it, never earlier. A frame with at most
 * RINX_SW_REAL_MIN_NS of backlog ahead of it gets 0 (it leaves at once)
 * unless one held before it is still due.
 */
static __always_inline int queue_admit(struct rinx_sw_link *l, __u32 len,
				       __u64 rate, __u64 now, int cls,
				       __u64 *dep)
{
	__u64 wire = ((__u64)len + RINX_SW_WIRE_EXTRA) * RINX_SW_Q_UNIT;
	__u64 q, q1, qc, dt, d, r;
	__u32 share;
	int ret = Q_OK, rinx = cls;

	if (dep)
		*dep = 0;

	if (!rate) {
		__sync_fetch_and_add(&l->n_frames, 1);
		__sync_fetch_and_add(&l->n_bytes, len);
		return Q_OK;
	}
	bpf_spin_lock(&l->lock);
	share = l->set.share;
	if (share > RINX_SW_SHARE_MAX)
		share = RINX_SW_SHARE_MAX;
	q = l->backlog;
	q1 = share ? l->backlog_rinx : 0;
	/* a last_ns ahead of now (set by a test) means no drain yet */
	dt = now > l->last_ns ? now - l->last_ns : 0;
	if (dt > SW_DRAIN_MAX_NS) {
		q = 0;
		q1 = 0;
	} else if (share) {
		rinx_sw_drain2(&q, &q1, dt * rate, share);
	} else {
		d = dt * rate;
		q = q > d ? q - d : 0;
	}
	if (now > l->last_ns)
		l->last_ns = now;
	/* the frame's class: the rinx class's own queue, the port's sizes */
	cls = share && cls;
	qc = cls ? q1 : q;
	if (qc + wire > (__u64)l->set.buffer * RINX_SW_Q_UNIT) {
		l->n_qdrop++;
		ret = Q_DROP;
	} else {
		qc += wire;
		l->n_frames++;
		l->n_bytes += len;
		if (rinx)
			l->n_rinx += len;
		if (qc / RINX_SW_Q_UNIT > l->peak)
			l->peak = qc / RINX_SW_Q_UNIT;
		if (qc > (__u64)l->set.ecn * RINX_SW_Q_UNIT)
			ret = Q_MARK;
		if (dep && !rinx && l->set.real) {
			r = share && q1 ? rate - rate * share / 100 : rate;
			r = r ? r : 1;
			/* the wait for what is ahead of it */
			if ((qc - wire) / r > RINX_SW_REAL_MIN_NS ||
			    l->real_due > now) {
				*dep = now + qc / r;
				l->real_due = *dep;
			}
		}
	}
	if (cls)
		q1 = qc;
	else
		q = qc;
	l->backlog = q;
	l->backlog_rinx = q1;
	bpf_spin_unlock(&l->lock);
	return ret;
}

/* The UDP header of a frame to the rinx port (IPv4 without options), or
 * NULL: a rinx frame for a port's classes (as a switch's rule on the UDP
 * port would class it), and the start of frame_class's parse. */
static __always_inline struct udphdr *rinx_udp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);

	if ((void *)(udp + 1) > data_end ||
	    eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP || udp->dest != ina_port_be)
		return NULL;
	return udp;
}

/*
 * CE into an IPv4 ECT frame: 1 if the frame leaves with CE (set here or
 * before), 0 if it is not ECT. The header checksum is updated for the one
 * 16-bit word that changed (RFC 1624, eqn. 3); one's complement sums do
 * not depend on byte order, so the words are used as they lie in memory.
 */
static __always_inline int ecn_set_ce(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u16 *w = (__u16 *)ip, old;
	__u32 sum;

	if ((void *)(ip + 1) > data_end ||
	    eth->h_proto != bpf_htons(ETH_P_IP) || ip->version != 4 ||
	    !(ip->tos & 3))
		return 0;
	if ((ip->tos & 3) == 3)
		return 1;
	old = *w;
	ip->tos |= 3;
	sum = (__u16)~ip->check;
	sum += (__u16)~old;
	sum += *w;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = (__u16)~sum;
	return 1;
}

/* Drop and queue: XDP_DROP (counted) or XDP_PASS (the frame leaves,
 * marked if the queue says so); on XDP_PASS *dep as queue_admit's (dep
 * NULL: the frame cannot be held). */
static __always_inline int link_admit(struct xdp_md *ctx,
				      struct rinx_sw_link *l, __u64 *dep)
{
	__u32 len, rate;
	int q;

	if (drawn(l->set.drop_ppm)) {
		__sync_fetch_and_add(&l->n_drop, 1);
		return count(RINX_SW_FAULT_DROP, XDP_DROP);
	}
	len = bpf_xdp_get_buff_len(ctx);
	rate = l->set.rate_mbit;
	/* the clock only for a queue: reading it costs more than the rest
	 * of an unlimited port */
	q = queue_admit(l, len, rate, rate ? bpf_ktime_get_ns() : 0,
			rate && rinx_udp(ctx), dep);
	if (q == Q_DROP)
		return count(RINX_SW_QUEUE_DROP, XDP_DROP);
	if (q == Q_MARK) {
		if (ecn_set_ce(ctx)) {
			__sync_fetch_and_add(&l->n_mark, 1);
			count(RINX_SW_ECN_MARK, 0);
		} else {
			__sync_fetch_and_add(&l->n_nect, 1);
			count(RINX_SW_ECN_NOT_ECT, 0);
		}
	}
	return XDP_PASS;
}

/*
 * Reorder at port: XDP_DROP when the frame was taken into the free slot,
 * XDP_PASS to send what the buffer now holds (the frame itself, or the
 * frame held before it).
 */
static __noinline int fault_reorder(struct xdp_md *ctx,
				    struct rinx_sw_link *f, __u32 port)
{
	struct sw_held *h = bpf_map_lookup_elem(&held, &port);
	/* the coarse clock (a tick, 1-10 ms) is enough for a hold limit of
	 * tens of ms, and the fine one cost more than the rest of a lossy
	 * port: it is read for every frame (the slot nearly always holds
	 * one) */
	__u64 now = bpf_ktime_get_coarse_ns(), len, hl;
	__u32 cur, nxt;
	int draw;

	if (!h)
		return XDP_PASS;
	if (h->len && now - h->ts > (__u64)f->set.hold_ms * 1000000) {
		h->len = 0;
		__sync_fetch_and_add(&f->n_lost, 1);
		count(RINX_SW_FAULT_HOLD_LOST, 0);
	}
	draw = drawn(f->set.reorder_ppm);
	if (!draw)
		return XDP_PASS;
	len = bpf_xdp_get_buff_len(ctx);
	cur = h->cur & 1;
	nxt = cur ^ 1;
	if (len < ETH_HLEN || len > SW_HOLD_MAX)
		goto skip;
	if (!h->len) {
		if (bpf_xdp_load_bytes(ctx, 0, h->buf[cur], len))
			goto skip;
		h->len = len;
		h->ts = now;
		__sync_fetch_and_add(&f->n_hold, 1);
		return count(RINX_SW_FAULT_HOLD, XDP_DROP);
	}
	hl = h->len;
	if (hl < ETH_HLEN || hl > SW_HOLD_MAX)
		goto skip;
	/* The current frame into the other buffer before the tail moves. */
	if (bpf_xdp_load_bytes(ctx, 0, h->buf[nxt], len))
		goto skip;
	if (hl != len && bpf_xdp_adjust_tail(ctx, (int)hl - (int)len))
		goto skip;
	if (bpf_xdp_store_bytes(ctx, 0, h->buf[cur], hl)) {
		/* cannot happen once the size fits; the frame is garbage */
		h->len = 0;
		return count(RINX_SW_FAULT_HOLD_LOST, XDP_DROP);
	}
	h->cur = nxt;
	h->len = len;
	h->ts = now;
	__sync_fetch_and_add(&f->n_reorder, 1);
	count(RINX_SW_FAULT_REORDER, 0);
	return XDP_PASS;
skip:
	__sync_fetch_and_add(&f->n_skip, 1);
	return count(RINX_SW_FAULT_SKIP, XDP_PASS);
}

#endif
