/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The job tables every rinx data-plane node holds (host program and INA
 * ToR), their counters, and the checks of a frame against them. Include
 * once per program: it defines the maps the control plane pins (jobs,
 * claims, nodes, hops, aggs, stats).
 */
#ifndef RINX_TABLES_BPF_H
#define RINX_TABLES_BPF_H

#include "bpf/agg.bpf.h"

/* Job id -> job (token, slot, round in progress, this node's id). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_DEFAULT_JOBS);
	__type(key, __u32);
	__type(value, struct rinx_job);
} jobs SEC(".maps");

/* Job slot -> the job holding it (control plane only: slots are claimed
 * by inserting here, never by the programs). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_DEFAULT_JOBS);
	__type(key, __u32);
	__type(value, struct rinx_claim);
} claims SEC(".maps");

/* (slot, node id) -> how that node is reached, its rack and bit. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RINX_DEFAULT_JOBS * RINX_MAX_NODES);
	__type(key, __u32);
	__type(value, struct rinx_node);
} nodes SEC(".maps");

/* (slot, class, type) -> what this node does (the plan). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RINX_DEFAULT_JOBS * RINX_MAX_CLASSES * RINX_HOP_TYPES);
	__type(key, __u32);
	__type(value, struct rinx_hop);
} hops SEC(".maps");

/* (slot, block) -> aggregator slot; the loader sizes it for the whole
 * window on an aggregating node (agent host, INA ToR), one entry elsewhere. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rinx_agg);
} aggs SEC(".maps");

/* enum rinx_stat -> count, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RINX_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline int rinx_count(__u32 what, int ret)
{
	__u64 *c = bpf_map_lookup_elem(&stats, &what);

	if (c)
		*c += 1;
	return ret;
}

/* The checks of frame f against the job's tables (bpf/check_kern_user.h,
 * where the slow path takes the same ones): bounds, the shape of a round
 * without a table, the sender for the hop (looked up here in the node
 * table; *sender set), and what it adds to an aggregation. 0 or the drop
 * stat. */
static __always_inline __u32 rinx_check_bounds(struct rinx_frame *f,
					       struct rinx_job *job,
					       __u32 window, const int nv)
{
	return rinx_hdr_bounds(f->h, job, window, nv);
}

static __always_inline __u32 rinx_check_shape(struct rinx_frame *f,
					      const int nv)
{
	return rinx_hdr_shape(f->h, nv);
}

static __always_inline __u32 rinx_check_sender(struct rinx_frame *f,
					       struct rinx_job *job,
					       struct rinx_hop *hop, __u32 type,
					       __u32 *sender)
{
	__u32 k;

	*sender = bpf_ntohs(f->h->sender);
	/* an id past the table finds another slot's entry or none: the
	 * check refuses it before reading the entry */
	k = job->slot * RINX_MAX_NODES + *sender;
	return rinx_hdr_sender(f->h, f->ip->saddr,
			       bpf_map_lookup_elem(&nodes, &k), job, hop, type);
}

static __always_inline __u64 rinx_cover(struct rinx_frame *f,
					struct rinx_hop *hop, __u32 sender)
{
	return rinx_hdr_cover(f->h, hop, sender);
}

/* A NACK's asker: a node of the job, sending from its own address. */
static __always_inline __u32 rinx_check_asker(struct rinx_frame *f,
					      struct rinx_job *job, __u32 *who)
{
	struct rinx_node *n;
	__u32 k;

	*who = bpf_ntohs(f->h->sender);
	if (*who >= RINX_MAX_NODES || f->h->flags)
		return RINX_STAT_DROP_SENDER;
	k = job->slot * RINX_MAX_NODES + *who;
	n = bpf_map_lookup_elem(&nodes, &k);
	if (!n)
		return RINX_STAT_ABORTED;
	return f->ip->saddr == n->ip ? 0 : RINX_STAT_DROP_SENDER;
}

/* ---- an aggregator's repairs (bpf/agg.bpf.h) on this program's maps;
 * window: its blocks per job slot. The host program and an INA ToR
 * differ only in how they send the frame and count. ---- */

/* The class's aggregation hop here, or NULL. */
static __always_inline struct rinx_hop *rinx_agg_hop(const struct rinx_job *job,
						     __u32 klass)
{
	__u32 k = RINX_HOP_INDEX(job->slot, klass, RINX_T_CONTRIB);

	return bpf_map_lookup_elem(&hops, &k);
}

/* The aggregator slot of block, or NULL. */
static __always_inline struct rinx_agg *
rinx_agg_slot(const struct rinx_job *job, __u32 window, __u32 block)
{
	__u32 idx = job->slot * window + block;

	return bpf_map_lookup_elem(&aggs, &idx);
}

/* A contribution its slot consumed: 1 if frame f became the pull of the
 * sender's earlier block that a slot lacks (rinx_pull_block). */
static __always_inline int rinx_agg_pull(struct rinx_frame *f,
					 const struct rinx_job *job,
					 const struct rinx_hop *hop,
					 __u32 window, __u32 round,
					 __u32 sender)
{
	__s64 pb = rinx_pull_block(f->h, job, hop);
	struct rinx_agg *a;

	if (pb < 0)
		return 0;
	a = rinx_agg_slot(job, window, (__u32)pb);
	if (!a || !rinx_agg_lacks(a, round, 1ULL << (sender & 63)))
		return 0;
	rinx_pull_frame(f, (__u32)pb);
	return 1;
}

/* An RNACK from `who`, the node this aggregation (agg+fwd) sends the
 * block's partial sum to: 1 if frame f became that sum again (it lacks
 * it: it pulled), the reduce to send back to `who`. */
static __always_inline int rinx_agg_rnack(struct rinx_frame *f,
					  const struct rinx_job *job,
					  __u32 window, __u32 round,
					  __u32 block, __u32 who, const int nv)
{
	struct rinx_hop *hop = rinx_agg_hop(job, bpf_ntohs(f->h->klass));
	struct rinx_agg *a = rinx_agg_slot(job, window, block);

	/* aggregator slots hold one slot's values */
	if (nv > RINX_BLOCK_VALUES || !hop || !a ||
	    hop->action != RINX_A_AGG_FWD || hop->to != who ||
	    (hop->flags & (RINX_HOP_POOL | RINX_HOP_COVER)) ||
	    !rinx_agg_get_sent(a, f, round, nv))
		return 0;
	f->h->type = RINX_T_REDUCE;
	f->h->step = hop->out_step;
	return 1;
}

/* A NACK of `who` for a block this aggregator has not finished (its
 * slot a): rinx_agg_nack's verdict, *to where f goes. */
static __always_inline int rinx_agg_nack_at(struct rinx_frame *f,
					    const struct rinx_job *job,
					    struct rinx_agg *a, __u32 round,
					    __u32 block, __u32 who, __u16 *to,
					    const int nv)
{
	struct rinx_hop *hop = rinx_agg_hop(job, bpf_ntohs(f->h->klass));

	if (nv > RINX_BLOCK_VALUES || !hop || !a)
		return RINX_NACK_MISS;
	return rinx_agg_nack(f, hop, a, round, block, who, to, nv);
}

#endif
