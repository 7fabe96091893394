// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ECN marks for a shaped port of the peers' bridge network (tools/peernet.c).
 *
 * This kernel has no RED, CoDel or fq_codel qdisc, so the tbf queue of a
 * bridge port can only tail-drop. This tc egress program gives the port the
 * testbed switch's mark rule: it keeps the backlog the port's rate would
 * leave of the frames offered to the port (the testbed's virtual queue,
 * wire overhead included, never above the buffer) and sets CE on IPv4 ECT
 * frames that arrive while that backlog is above the mark threshold. It
 * runs before tbf (clsact egress), on the same frames tbf queues; a GSO
 * packet is marked as a whole (its segments copy the IP header).
 *
 * Built by rinxctl compare for each (rate, buffer, threshold):
 *   clang -O2 -target bpf -DRATE_MBIT=.. -DBUFFER=.. -DECN_BYTES=..
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <stddef.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#if !defined(RATE_MBIT) || !defined(BUFFER) || !defined(ECN_BYTES)
#error "RATE_MBIT, BUFFER and ECN_BYTES are required"
#endif

/* 1 Mbit/s drains 1/8000 byte per ns: backlog in 1/8000 byte */
#define Q_UNIT		8000ULL
/* preamble, start delimiter, inter-frame gap, FCS */
#define WIRE_EXTRA	24

struct vq {
	struct bpf_spin_lock lock;
	__u32 resv;
	__u64 backlog;
	__u64 last_ns;
};

/* the port's virtual queue */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vq);
} vq SEC(".maps");

SEC("tc")
int ecn_mark(struct __sk_buff *skb)
{
	void *data, *end;
	struct ethhdr *eth;
	struct iphdr *ip;
	__u64 now = bpf_ktime_get_ns(), drain, wire;
	__u32 key = 0, segs = skb->gso_segs ? skb->gso_segs : 1;
	__u16 old, new;
	struct vq *q;
	int above;

	q = bpf_map_lookup_elem(&vq, &key);
	if (!q)
		return TC_ACT_OK;
	wire = (__u64)skb->len + (__u64)segs * WIRE_EXTRA;
	bpf_spin_lock(&q->lock);
	drain = (now - q->last_ns) * RATE_MBIT;
	q->backlog = q->backlog > drain ? q->backlog - drain : 0;
	q->last_ns = now;
	above = q->backlog > (__u64)ECN_BYTES * Q_UNIT;
	/* what does not fit is dropped by tbf: it never joins the queue */
	if (q->backlog + wire * Q_UNIT <= (__u64)BUFFER * Q_UNIT)
		q->backlog += wire * Q_UNIT;
	bpf_spin_unlock(&q->lock);
	if (!above)
		return TC_ACT_OK;

	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return TC_ACT_OK;
	/* not ECT, or CE already */
	if (!(ip->tos & 3) || (ip->tos & 3) == 3)
		return TC_ACT_OK;
	/* the checksum covers tos as the low byte of the first 16-bit word */
	old = *(__u16 *)ip;
	new = old | bpf_htons(3);
	bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check),
			    old, new, 2);
	bpf_skb_store_bytes(skb, ETH_HLEN, &new, 2, 0);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
