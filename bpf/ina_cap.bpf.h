/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The aggregation capacity of an INA switch: how many bytes per second of
 * input its aggregator can sum (a topology's cap=, GRID's model of a
 * switch). Every frame the aggregator is to sum (a contribution or a
 * partial sum, of a known job with its token) first passes a virtual
 * queue that drains at that rate, the same queue a port has
 * (bpf/sw_link.bpf.h), so the switch behaves as if its aggregation units
 * sat behind a port of that rate:
 *  - above the mark threshold the frame is marked CE before it is summed:
 *    the slot ORs the marks of what it consumed into the sum it sends, so
 *    every rank of the job sees the switch's congestion in its results
 *    and its congestion control slows down, as for a port;
 *  - beyond the buffer the frame is dropped and counted (cap_drop); the
 *    sender's repair sends it again, as after any loss.
 * A frame is not passed on unaggregated instead (ATP's fallback to the
 * parameter server): ATP falls back when no aggregator slot is free, a
 * matter of memory, which the pool of ps-ina plans models (bpf/agg.bpf.h);
 * a rate beyond the capacity is not a full pool, and in the other plans
 * the next aggregator expects this switch's sum, not a worker's share
 * (only a hop that sums coverages could take it, and the slot left
 * without it would wait for a retransmission to flush it).
 *
 * Include once, from the switch program (through bpf/ina.bpf.h).
 */
#ifndef RINX_INA_CAP_BPF_H
#define RINX_INA_CAP_BPF_H

#include "bpf/sw_link.bpf.h"

/* RINX_SW_CAP_KEY -> the aggregator's capacity: settings, queue and
 * counters (bpf/switch_kern_user.h); zero settings: no limit. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rinx_sw_link);
} ina_cap SEC(".maps");

/* 1 if the aggregator may sum the frame (marked CE when the queue says
 * so), 0 if it is beyond the capacity: drop it. */
static __always_inline int ina_cap_admit(struct xdp_md *ctx)
{
	__u32 key = RINX_SW_CAP_KEY, len, rate;
	struct rinx_sw_link *l = bpf_map_lookup_elem(&ina_cap, &key);
	int q;

	if (!l)
		return 1;
	len = bpf_xdp_get_buff_len(ctx);
	rate = l->set.rate_mbit;
	q = queue_admit(l, len, rate, rate ? bpf_ktime_get_ns() : 0, 0,
			NULL);
	if (q == Q_DROP)
		return 0;
	if (q == Q_MARK) {
		if (ecn_set_ce(ctx)) {
			__sync_fetch_and_add(&l->n_mark, 1);
			count(RINX_SW_CAP_MARK, 0);
		} else {
			__sync_fetch_and_add(&l->n_nect, 1);
		}
	}
	return 1;
}

#endif
