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

/* The header fields of f (a frame of nv values) that every node checks
 * against the job: counts, block and class within the round and the
 * window. A frame of another block size than the job's is another job's
 * or a misconfigured rank's (another MTU): RINX_STAT_DROP_SHAPE. 0 or the
 * drop stat. */
static __always_inline __u32 rinx_check_bounds(struct rinx_frame *f,
					       struct rinx_job *job,
					       __u32 window, const int nv)
{
	__u32 block = bpf_ntohl(f->h->block), nblocks = bpf_ntohl(f->h->nblocks);
	__u32 klass = bpf_ntohs(f->h->klass), plen = job->plen;
	__u16 cnt = bpf_ntohs(f->h->count);

	if (job->bval != nv)
		return RINX_STAT_DROP_SHAPE;
	if (cnt == 0 || cnt > nv || block >= nblocks ||
	    nblocks > window || job->slot >= RINX_MAX_JOBS ||
	    klass >= RINX_MAX_CLASSES || plen == 0 || plen > RINX_CMAP_MAX ||
	    klass != job->cmap[(block % plen) & (RINX_CMAP_MAX - 1)])
		return RINX_STAT_DROP_BOUNDS;
	return 0;
}

/* What an aggregator can check of a round it has no table of (an INA ToR
 * never has; an agent for the next round): a dtype it knows, no exponent on
 * int32 values (they are summed as they are), every block but the last
 * full, and a size a slot can keep (RINX_SHAPE). The slot then holds every
 * contribution of the round to the shape of its first (rinx_agg_add). 0 or
 * the drop stat. */
static __always_inline __u32 rinx_check_shape(struct rinx_frame *f,
					      const int nv)
{
	__u32 block = bpf_ntohl(f->h->block), nblocks = bpf_ntohl(f->h->nblocks);
	__u16 dtype = bpf_ntohs(f->h->dtype), cnt = bpf_ntohs(f->h->count);

	if (dtype == RINX_W_INT32 && f->h->exp)
		return RINX_STAT_DROP_BOUNDS;
	if (nblocks >= RINX_SHAPE_MAX_BLOCKS)
		return RINX_STAT_DROP_BOUNDS;
	if ((dtype != RINX_W_INT32 && dtype != RINX_W_FIXED) ||
	    (block + 1 < nblocks && cnt != nv))
		return RINX_STAT_DROP_SHAPE;
	return 0;
}

/* Is f from the node the hop names (sender, step, source IP), or, for an
 * aggregation, from one of its contributors (a raw share with step 0, or
 * the partial sum of `from` with its step)? Sets *sender. 0 or the drop
 * stat. */
static __always_inline __u32 rinx_check_sender(struct rinx_frame *f,
					       struct rinx_job *job,
					       struct rinx_hop *hop, __u32 type,
					       __u32 *sender)
{
	int agg = hop->action == RINX_A_AGG_FWD ||
		  hop->action == RINX_A_AGG_FINISH;
	struct rinx_node *from;
	__u32 k;

	*sender = bpf_ntohs(f->h->sender);
	/* a node of the job, sending from its own address: anything else
	 * is no member (a stray host, a spoofed or misconfigured one) */
	if (*sender >= RINX_MAX_NODES || *sender >= job->nnodes)
		return RINX_STAT_DROP_MEMBER;
	if (type == RINX_T_CONTRIB && !agg)
		return RINX_STAT_DROP_SENDER;
	k = job->slot * RINX_MAX_NODES + *sender;
	from = bpf_map_lookup_elem(&nodes, &k);
	if (!from)
		return RINX_STAT_ABORTED;
	if (f->ip->saddr != from->ip)
		return RINX_STAT_DROP_MEMBER;
	if (agg) {
		__u64 bit = 1ULL << (*sender & 63), cov;

		if ((hop->flags & RINX_HOP_COVER) && (hop->via & bit)) {
			/* an aggregator's frame: whatever part of the
			 * contributors it sums, never anyone else */
			cov = bpf_be64_to_cpu(f->h->cover);
			if (!cov || (cov & ~hop->mask) || f->h->step)
				return RINX_STAT_DROP_SENDER;
			return 0;
		}
		/* a node of the job, but not one this slot sums */
		if (!(hop->mask & bit))
			return RINX_STAT_DROP_MEMBER;
		if (type == RINX_T_CONTRIB || *sender != hop->from)
			return f->h->step == 0 ? 0 : RINX_STAT_DROP_SENDER;
	} else if (*sender != hop->from) {
		return RINX_STAT_DROP_SENDER;
	}
	return f->h->step == hop->step ? 0 : RINX_STAT_DROP_SENDER;
}

/* What frame f from `sender` (checked by rinx_check_sender) adds to an
 * aggregation slot: the coverage it declares if it comes from one of the
 * hop's coverage aggregators (via), else its sender's bit. */
static __always_inline __u64 rinx_cover(struct rinx_frame *f,
					struct rinx_hop *hop, __u32 sender)
{
	__u64 bit = 1ULL << (sender & 63);

	if ((hop->flags & RINX_HOP_COVER) && (hop->via & bit))
		return bpf_be64_to_cpu(f->h->cover);
	return bit;
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

#endif
