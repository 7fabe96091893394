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

#endif
