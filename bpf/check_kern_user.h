/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The checks of a rinx frame against a node's job tables, one definition
 * for every place that takes data frames: the XDP programs (through
 * tables.bpf.h, which looks the tables up: the host program and an INA
 * ToR) and librinx's slow path (user/comm/slow.c, on the tables it installed).
 * Pure functions of the frame's header and of table entries the caller
 * looked up, so that both sides compile them unchanged; each returns 0 or
 * the counter (enum rinx_stat) of the drop.
 */
#ifndef RINX_CHECK_KERN_USER_H
#define RINX_CHECK_KERN_USER_H

#include <bpf/bpf_endian.h>
#include "uapi/rinx.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* What became of a frame in an aggregator slot (rinx_agg_add and
 * rinx_pool_add in XDP; the slow path's completion of a waiting slot
 * answers with the same words, bpf/hop_kern_user.h). */
enum rinx_agg_ret {
	RINX_AGG_CONSUMED,	/* added; the slot waits for more */
	RINX_AGG_COMPLETE,	/* added; the frame now carries the sum */
	RINX_AGG_DUP,		/* contributor already counted this round */
	RINX_AGG_RESEND,	/* duplicate into a finished slot: the frame
				 * now carries the stored partial sum */
	RINX_AGG_FINAL,		/* duplicate into a slot that holds the
				 * finished block: the frame carries it */
	RINX_AGG_STALE,		/* the slot holds a newer round */
	RINX_AGG_NEED_SELF,	/* every contributor is in, the node's own
				 * share is not: the frame carries the sum
				 * of the others, for the trainer */
	RINX_AGG_OVERLAP,	/* the frame's coverage overlaps the slot's
				 * in part: refused */
	RINX_AGG_PASS,		/* pool: the slot holds another block; the
				 * frame is untouched, for the server */
	RINX_AGG_FLUSH,		/* pool: a share sent again; the frame
				 * carries the slot's partial sum and its
				 * coverage, the slot is free */
	RINX_AGG_SHAPE,		/* the frame's size or dtype is not that of
				 * the round the slot holds: refused */
	RINX_AGG_NO_SLOT,	/* the node has no slot for the block (the
				 * host program: an internal error) */
};

/* The maps of a host's blocks (bpf/hop_kern_user.h's env_put_vals): the
 * first slot of a jumbo block is looked up by the hop, the others by the
 * side that moves its values. */
enum hop_map {
	HOP_SHARE,
	HOP_RESULT,
	HOP_PARTIAL,
};

static __always_inline int rinx_is_agg(const struct rinx_hop *hop)
{
	return hop->action == RINX_A_AGG_FWD ||
	       hop->action == RINX_A_AGG_FINISH;
}

/* The header fields of frame h (a frame of nv values) that every node
 * checks against the job: counts, block and class within the round and
 * the window (a jumbo block takes RINX_JUMBO_SLOTS of its slots). A frame of another block size than the job's is another
 * job's or a misconfigured rank's (another MTU): RINX_STAT_DROP_SHAPE. */
static __always_inline __u32 rinx_hdr_bounds(const struct rinx_hdr *h,
					     const struct rinx_job *job,
					     __u32 window, const int nv)
{
	__u32 block = bpf_ntohl(h->block), nblocks = bpf_ntohl(h->nblocks);
	__u32 klass = bpf_ntohs(h->klass), plen = job->plen;
	__u16 cnt = bpf_ntohs(h->count);

	if (job->bval != nv)
		return RINX_STAT_DROP_SHAPE;
	/* the masks keep the verifier's index in the pattern; plen is
	 * checked to fit it the line before */
	if (cnt == 0 || cnt > nv || block >= nblocks ||
	    nblocks > window / RINX_BLOCK_SLOTS(nv) || job->slot >= RINX_MAX_JOBS ||
	    klass >= RINX_MAX_CLASSES || plen == 0 || plen > RINX_CMAP_MAX ||
	    klass != job->cmap[(block % plen) & (RINX_CMAP_MAX - 1)])
		return RINX_STAT_DROP_BOUNDS;
	return 0;
}

/* What an aggregator can check of a round it has no table of (an INA ToR
 * never has; an agent for the next round): a dtype it knows, no exponent on
 * int32 values (they are summed as they are), every block but the last
 * full, and a size a slot can keep (RINX_SHAPE). The slot then holds every
 * contribution of the round to the shape of its first (rinx_agg_add). */
static __always_inline __u32 rinx_hdr_shape(const struct rinx_hdr *h,
					    const int nv)
{
	__u32 block = bpf_ntohl(h->block), nblocks = bpf_ntohl(h->nblocks);
	__u16 dtype = bpf_ntohs(h->dtype), cnt = bpf_ntohs(h->count);

	if (dtype == RINX_W_INT32 && h->exp)
		return RINX_STAT_DROP_BOUNDS;
	if (nblocks >= RINX_SHAPE_MAX_BLOCKS)
		return RINX_STAT_DROP_BOUNDS;
	if ((dtype != RINX_W_INT32 && dtype != RINX_W_FIXED) ||
	    (block + 1 < nblocks && cnt != nv))
		return RINX_STAT_DROP_SHAPE;
	return 0;
}

/* Is frame h, from source address saddr, from the node the hop names
 * (sender, step, address), or, for an aggregation, from one of its
 * contributors (a raw share with step 0, or the partial sum of `from` with
 * its step), or from one of the aggregators whose frames carry a coverage
 * (RINX_HOP_COVER, via)? `from`: the node table's entry of the frame's
 * sender, looked up by the caller (NULL: none; not read unless the sender
 * is a node of the job). */
static __always_inline __u32 rinx_hdr_sender(const struct rinx_hdr *h,
					     __be32 saddr,
					     const struct rinx_node *from,
					     const struct rinx_job *job,
					     const struct rinx_hop *hop,
					     __u32 type)
{
	__u32 sender = bpf_ntohs(h->sender);
	int agg = rinx_is_agg(hop);

	/* a node of the job, sending from its own address: anything else
	 * is no member (a stray host, a spoofed or misconfigured one) */
	if (sender >= RINX_MAX_NODES || sender >= job->nnodes)
		return RINX_STAT_DROP_MEMBER;
	if (type == RINX_T_CONTRIB && !agg)
		return RINX_STAT_DROP_SENDER;
	if (!from)
		return RINX_STAT_ABORTED;
	if (saddr != from->ip)
		return RINX_STAT_DROP_MEMBER;
	if (agg) {
		__u64 bit = 1ULL << (sender & 63), cov;

		if ((hop->flags & RINX_HOP_COVER) && (hop->via & bit)) {
			/* an aggregator's frame: whatever part of the
			 * contributors it sums, never anyone else */
			cov = bpf_be64_to_cpu(h->cover);
			if (!cov || (cov & ~hop->mask) || h->step)
				return RINX_STAT_DROP_SENDER;
			return 0;
		}
		/* a node of the job, but not one this slot sums */
		if (!(hop->mask & bit))
			return RINX_STAT_DROP_MEMBER;
		if (type == RINX_T_CONTRIB || sender != hop->from)
			return h->step == 0 ? 0 : RINX_STAT_DROP_SENDER;
	} else if (sender != hop->from) {
		return RINX_STAT_DROP_SENDER;
	}
	return h->step == hop->step ? 0 : RINX_STAT_DROP_SENDER;
}

/* What frame h from `sender` (checked by rinx_hdr_sender) adds to an
 * aggregation slot: the coverage it declares if it comes from one of the
 * hop's coverage aggregators (via), else its sender's bit. */
static __always_inline __u64 rinx_hdr_cover(const struct rinx_hdr *h,
					    const struct rinx_hop *hop,
					    __u32 sender)
{
	__u64 bit = 1ULL << (sender & 63);

	if ((hop->flags & RINX_HOP_COVER) && (hop->via & bit))
		return bpf_be64_to_cpu(h->cover);
	return bit;
}

#endif
