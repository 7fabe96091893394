/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Aggregator slots: an INA ToR, an agent host, a tree node or a parameter
 * server sums the contributions of its declared contributors (a rack's
 * workers, the partial sum arriving from the previous ring member, a tree
 * node's children, every worker) in one slot per block. The contribution that completes the slot leaves
 * carrying the sum; the others are consumed. Shared by the host program
 * (agent placement) and the testbed switch (ToR placement).
 *
 * Concurrency: contributions to one slot may arrive on several CPUs at once
 * (one per ingress port or queue); a bpf_spin_lock serializes them. The sum
 * is copied into the completing frame under the lock, so no later writer can
 * tear it. Idempotence: a contributor's bit is set once per round; a
 * duplicate is never added twice: it is dropped and counted, or, when the
 * slot is finished at the member that finishes the block, answered with the
 * stored sum.
 */
#ifndef RINX_AGG_BPF_H
#define RINX_AGG_BPF_H

#include "bpf/fixed.bpf.h"
#include "bpf/check_kern_user.h"

/* The shape (RINX_SHAPE, dtype) of frame f's round. */
static __always_inline __u32 rinx_frame_shape(struct rinx_frame *f)
{
	return RINX_SHAPE(bpf_ntohl(f->h->nblocks), bpf_ntohs(f->h->count));
}

/* Does slot a, holding contributions, hold them for f's shape? Every
 * contribution of a round has its size and dtype: one that differs is
 * another tensor (a rank's bug, a stray job) and would be summed into the
 * wrong block. Under the slot's lock. */
static __always_inline int agg_same_shape(struct rinx_agg *a,
					  struct rinx_frame *f)
{
	return a->shape == rinx_frame_shape(f) &&
	       a->dtype == (__u8)bpf_ntohs(f->h->dtype);
}

/* The functions below take nv, the values of f's payload: a constant at
 * every call (RINX_BLOCK_VALUES or RINX_BLOCK_VALUES_MIN, parse.bpf.h).
 * A slot has room for RINX_BLOCK_VALUES; a job of small frames uses the
 * first nv. */

/* Folds frame f's payload (exponent fexp) into slot a, under its lock: the
 * first contribution (nothing seen) is copied, later ones are added. The
 * congestion a consumed contribution met must reach the ranks with the sum
 * (ATP's aggregators forward ECN the same way). */
static __always_inline void agg_fold(struct rinx_agg *a, struct rinx_frame *f,
				    __s16 fexp, const int nv)
{
	if (!a->seen) {
		rinx_copy_vals(a->v, f->v, nv);
		a->exp = fexp;
		a->flags = f->h->flags;
		a->ce = 0;
		/* the first contribution sets the round's shape */
		a->shape = rinx_frame_shape(f);
		a->dtype = (__u8)bpf_ntohs(f->h->dtype);
	} else {
		a->exp = rinx_block_add(a->v, a->exp, f->v, fexp, nv);
		a->flags |= f->h->flags;
	}
	if ((f->ip->tos & RINX_ECN_MASK) == RINX_ECN_CE)
		a->ce = 1;
}

/* Adds frame f (round `round`, covering the contributor nodes `cov`: the
 * sender's bit, or the coverage an aggregator's frame declares) into slot
 * a. A coverage already wholly in the slot is a duplicate; one that is in
 * part is refused (RINX_AGG_OVERLAP): adding it would count some
 * contributors twice, leaving it out loses none that another frame cannot
 * bring. A frame whose round size or dtype is not that of the slot's first
 * contribution of the round is refused (RINX_AGG_SHAPE). *reset
 * is set when an unfinished older round had to give the slot up. A
 * duplicate into the finished slot gets the stored sum (RINX_AGG_RESEND):
 * the caller sends it on again or back. With `finish`, the completed sum
 * is the finished block and stays marked so (NACKs). With `own` (the
 * node's share of the block, RINX_HOP_SELF), the share is added when the
 * last contributor arrives if it is written for this round; if not, the
 * slot waits (pend) and the frame, carrying the others' sum, goes to the
 * trainer, which adds the share and completes the slot from user space
 * (the slot's contributors are all in, so nothing else writes it). */
static __always_inline int rinx_agg_add(struct rinx_agg *a,
					struct rinx_frame *f, __u32 round,
					__u64 b, __u64 mask, int finish,
					struct rinx_slot *own, int *reset,
					const int nv)
{
	__s16 fexp = (__s16)bpf_ntohs(f->h->exp);
	int ret = RINX_AGG_CONSUMED, fused;

	*reset = 0;
	bpf_spin_lock(&a->lock);
	if (a->round != round) {
		/* a slot never used (seen 0) takes any round; rounds wrap */
		if (a->seen && (__s32)(round - a->round) < 0) {
			bpf_spin_unlock(&a->lock);
			return RINX_AGG_STALE;
		}
		*reset = a->seen && !a->done;
		a->round = round;
		a->seen = 0;
		a->done = 0;
		a->final = 0;
		a->pend = 0;
	}
	if (a->seen && !agg_same_shape(a, f)) {
		bpf_spin_unlock(&a->lock);
		return RINX_AGG_SHAPE;
	}
	if ((a->seen & b) && (a->seen & b) != b) {
		bpf_spin_unlock(&a->lock);
		return RINX_AGG_OVERLAP;
	}
	if (a->seen & b) {
		/* A retransmission into a finished slot: hand the stored sum
		 * back (SwitchML's answer to a lost result). Into a slot that
		 * waits for the trainer: the sum again, for the trainer (the
		 * first one may have been lost on its way there). */
		if (a->done || a->pend) {
			rinx_copy_vals(f->v, a->v, nv);
			f->h->exp = bpf_htons((__u16)a->exp);
			f->h->flags = a->flags;
			ret = a->pend ? RINX_AGG_NEED_SELF :
			      a->final ? RINX_AGG_FINAL : RINX_AGG_RESEND;
		} else {
			ret = RINX_AGG_DUP;
		}
		bpf_spin_unlock(&a->lock);
		return ret;
	}
	/* The last contribution, the slot and the node's own share at one
	 * exponent (the common case where the ranks agree on it): the three
	 * summed into the frame in one pass and the sum kept in the slot,
	 * two passes over the block fewer than adding twice into the slot
	 * and copying it out (test_hopcost: agg last). */
	fused = a->seen && ((a->seen | b) & mask) == mask && own &&
		own->round == round && a->exp == fexp && own->exp == fexp;
	if (fused) {
		rinx_add2_vals(f->v, a->v, own->v, nv);
		rinx_copy_vals(a->v, f->v, nv);
		a->flags |= f->h->flags | own->flags;
		if ((f->ip->tos & RINX_ECN_MASK) == RINX_ECN_CE)
			a->ce = 1;
	} else {
		agg_fold(a, f, fexp, nv);
	}
	a->seen |= b;
	if ((a->seen & mask) == mask) {
		ret = RINX_AGG_COMPLETE;
		if (own && own->round == round) {
			if (!fused) {
				a->exp = rinx_block_add(a->v, a->exp, own->v,
							own->exp, nv);
				a->flags |= own->flags;
			}
		} else if (own) {
			a->pend = 1;
			ret = RINX_AGG_NEED_SELF;
		}
		if (ret == RINX_AGG_COMPLETE) {
			a->done = 1;
			a->final = !!finish;
		}
		if (!fused)
			rinx_copy_vals(f->v, a->v, nv);
		f->h->exp = bpf_htons((__u16)a->exp);
		f->h->flags = a->flags;
		if (a->ce)
			f->ip->tos |= RINX_ECN_CE;	/* readdress fixes
							 * the checksum */
	}
	bpf_spin_unlock(&a->lock);
	return ret;
}

/* Copies slot a's sum, exponent, flags, marks and coverage into f. */
static __always_inline void rinx_agg_out(struct rinx_agg *a,
					 struct rinx_frame *f, const int nv)
{
	rinx_copy_vals(f->v, a->v, nv);
	f->h->exp = bpf_htons((__u16)a->exp);
	f->h->flags = a->flags;
	f->h->cover = bpf_cpu_to_be64(a->seen);
	if (a->ce)
		f->ip->tos |= RINX_ECN_CE;	/* readdress fixes the checksum */
}

/*
 * A raw share (contributor node `bit`) of block `block` of round `round`
 * into pool slot a (RINX_HOP_POOL, ATP's aggregator pool):
 *  - a free slot (seen == 0), or one whose block belongs to an older round
 *    (its sender finished that round, so the server did: what it holds is
 *    not needed; *reset is set), takes the block;
 *  - the slot of the same block adds the share; complete (mask), the frame
 *    carries the sum and its coverage and the slot is free again;
 *  - a slot that holds another block: RINX_AGG_PASS, the share goes on to
 *    the server unaggregated (a collision; a full pool is the same case);
 *  - the share again (a network duplicate): RINX_AGG_DUP;
 *  - a share of the slot's block and round with another size or dtype
 *    than the slot's first: RINX_AGG_SHAPE.
 * A share sent again by its worker (`resend`, RINX_F_RESEND: the block did
 * not finish, typically because another share of it passed on while the
 * slot held another block, so the slot waits for a share the server has)
 * never enters a slot: if the slot holds the block, its partial sum leaves
 * with its coverage (RINX_AGG_FLUSH) and the slot is free; else the share
 * passes on (RINX_AGG_PASS). So a share reaches the server once, in a sum
 * or alone, unless the network duplicates it; and every block finishes
 * once each of its missing contributors has sent again.
 * A slot is freed when its sum leaves, not when the result comes back (the
 * result is multicast past the aggregator).
 */
static __always_inline int rinx_pool_add(struct rinx_agg *a,
					 struct rinx_frame *f, __u32 round,
					 __u32 block, __u32 bit, __u64 mask,
					 int resend, int *reset, const int nv)
{
	__u64 b = 1ULL << (bit & 63);
	__s16 fexp = (__s16)bpf_ntohs(f->h->exp);
	int ret = RINX_AGG_CONSUMED;

	*reset = 0;
	bpf_spin_lock(&a->lock);
	if (a->seen && (a->round != round || a->block != block)) {
		if ((__s32)(round - a->round) <= 0) {
			bpf_spin_unlock(&a->lock);
			return RINX_AGG_PASS;
		}
		*reset = 1;
		a->seen = 0;
	}
	if (a->seen && !agg_same_shape(a, f)) {
		bpf_spin_unlock(&a->lock);
		return RINX_AGG_SHAPE;
	}
	if (resend) {
		if (a->seen) {
			rinx_agg_out(a, f, nv);
			a->seen = 0;
			ret = RINX_AGG_FLUSH;
		} else {
			ret = RINX_AGG_PASS;
		}
		bpf_spin_unlock(&a->lock);
		return ret;
	}
	if (a->seen & b) {
		bpf_spin_unlock(&a->lock);
		return RINX_AGG_DUP;
	}
	if (!a->seen) {
		a->round = round;
		a->block = block;
		a->done = 0;
		a->final = 0;
		a->pend = 0;
	}
	agg_fold(a, f, fexp, nv);
	a->seen |= b;
	if ((a->seen & mask) == mask) {
		rinx_agg_out(a, f, nv);
		a->seen = 0;
		ret = RINX_AGG_COMPLETE;
	}
	bpf_spin_unlock(&a->lock);
	return ret;
}

/* Keeps the finished block of a gather passing an INA member, for NACKs. */
static __always_inline void rinx_agg_keep(struct rinx_agg *a,
					  struct rinx_frame *f, __u32 round,
					  const int nv)
{
	bpf_spin_lock(&a->lock);
	if (a->round == round) {
		rinx_copy_vals(a->v, f->v, nv);
		a->exp = (__s16)bpf_ntohs(f->h->exp);
		a->flags = f->h->flags;
		a->final = 1;
	}
	bpf_spin_unlock(&a->lock);
}

/* Copies the finished block of round `round` into f; 0 if not held. */
static __always_inline int rinx_agg_get_final(struct rinx_agg *a,
					      struct rinx_frame *f,
					      __u32 round, const int nv)
{
	int ok = 0;

	bpf_spin_lock(&a->lock);
	if (a->round == round && a->final) {
		rinx_copy_vals(f->v, a->v, nv);
		f->h->exp = bpf_htons((__u16)a->exp);
		f->h->flags = a->flags;
		ok = 1;
	}
	bpf_spin_unlock(&a->lock);
	return ok;
}

/* The partial sum a slot of round `round` sent on (its node forwards the
 * block: agg+fwd), into f, for the node it went to, which lost it; 0 if
 * the slot does not hold it (not complete, another round, or the finished
 * block kept over it from the gather), f untouched. */
static __always_inline int rinx_agg_get_sent(struct rinx_agg *a,
					     struct rinx_frame *f,
					     __u32 round, const int nv)
{
	int ok = 0;

	bpf_spin_lock(&a->lock);
	if (a->round == round && a->done && !a->final && !a->pend &&
	    agg_same_shape(a, f)) {
		/* marked as the sum left (a->ce), not as the ask came */
		f->ip->tos = (f->ip->tos & ~RINX_ECN_MASK) | RINX_ECN_ECT0;
		rinx_agg_out(a, f, nv);
		ok = 1;
	}
	bpf_spin_unlock(&a->lock);
	return ok;
}

/*
 * Pulls: a contributor's lost block asked for by the aggregator. A
 * contributor sends its blocks in block order (a worker its shares, as its
 * cursor claims them; an aggregator before this one its sums, as its slots
 * complete, which they do in the order of its slowest worker). So when one
 * of its blocks reaches this aggregator while the slot of its block
 * RINX_PULL_BEHIND blocks earlier (rounded up to whole class patterns, so
 * the same class and path; RINX_PULL_BEHIND: uapi/rinx.h) still lacks it
 * this round, that one was lost on the way. The frame, consumed here, goes
 * back as an RNACK for it, and the contributor answers in XDP: a worker
 * from its share, an aggregator from its slot's sum (rinx_agg_get_sent).
 * Only the contributor that lost it sends again, one link's round trip
 * after the loss shows; without the pull every worker of every rack timed
 * the block out and sent its share again. The distance absorbs reordering
 * by a few frames (two CPUs sending a node's frames); a frame held back
 * longer (the testbed's reorder fault sends it in place of the port's next
 * one so drawn) is repaired as if lost. A pull that was not needed costs
 * one frame each way and a dropped duplicate. Not for pools (a slot
 * holds any block) nor coverage sums (not one sender's blocks). A round's
 * last block may be short, and the RNACK keeps the frame's value count,
 * which the answer must match: it pulls nothing; nor does a share sent
 * again (RINX_F_RESEND), which is out of order.
 */
/* The block frame f may pull for, or -1. */
static __always_inline __s64 rinx_pull_block(const struct rinx_hdr *h,
					     const struct rinx_job *job,
					     const struct rinx_hop *hop)
{
	__u32 block = bpf_ntohl(h->block), plen = job->plen, d;

	if ((hop->flags & (RINX_HOP_POOL | RINX_HOP_COVER)) || !plen ||
	    plen > RINX_CMAP_MAX || (h->flags & RINX_F_RESEND))
		return -1;
	d = (RINX_PULL_BEHIND + plen - 1) / plen * plen;
	if (block < d || block + 1 >= bpf_ntohl(h->nblocks))
		return -1;
	return block - d;
}

/* Does slot a lack contributor bits b in round `round` (not done, and
 * nothing of the round in it, or not b)? Read without the lock: a stale
 * read costs a pull not needed, or one not made (the timers repair). */
static __always_inline int rinx_agg_lacks(const struct rinx_agg *a,
					  __u32 round, __u64 b)
{
	__u32 r = *(const volatile __u32 *)&a->round;

	if (r != round)
		return (__s32)(r - round) < 0;
	return !(*(const volatile __u64 *)&a->seen & b) &&
	       !*(const volatile __u8 *)&a->done;
}

/* Frame f becomes the RNACK for block pb (same class, round and size). */
static __always_inline void rinx_pull_frame(struct rinx_frame *f, __u32 pb)
{
	f->h->type = RINX_T_RNACK;
	f->h->block = bpf_htonl(pb);
	f->h->flags = 0;
	f->h->step = 0;
	f->h->cover = 0;
	f->ip->tos = (f->ip->tos & ~RINX_ECN_MASK) | RINX_ECN_ECT0;
}

/*
 * A NACK for a block an aggregator has not finished (it holds no finished
 * copy to answer with). A worker's timer asks its aggregator before it
 * sends its share again (user/comm/repair.c), so the aggregator, which
 * knows what its slot lacks, decides (hop: the class's aggregation here):
 *  - the slot lacks the asker's share this round: the NACK goes back as a
 *    pull of it (RINX_NACK_PULL, *to = the asker);
 *  - the slot's partial sum left (agg+fwd) and the finished block has not
 *    come back: the sum is sent on again (RINX_NACK_SUM, *to = hop->to),
 *    as a share sent again into the finished slot would send it: a loss
 *    past this node is repaired (the next aggregator adds what it lacked,
 *    or, finished, sends the finished block on again);
 *  - else another worker's loss holds the block (its own timer asks), and
 *    this worker's share is not sent again (RINX_NACK_MISS, f untouched).
 * Per-block aggregations only (not pools, nor coverage sums).
 */
enum { RINX_NACK_MISS, RINX_NACK_PULL, RINX_NACK_SUM };

static __always_inline int rinx_agg_nack(struct rinx_frame *f,
					 const struct rinx_hop *hop,
					 struct rinx_agg *a, __u32 round,
					 __u32 block, __u32 who, __u16 *to,
					 const int nv)
{
	if (!rinx_is_agg(hop) ||
	    (hop->flags & (RINX_HOP_POOL | RINX_HOP_COVER)) || who >= 64 ||
	    !((hop->mask >> who) & 1))
		return RINX_NACK_MISS;
	if (rinx_agg_lacks(a, round, 1ULL << who)) {
		rinx_pull_frame(f, block);
		*to = (__u16)who;
		return RINX_NACK_PULL;
	}
	if (hop->action == RINX_A_AGG_FWD &&
	    rinx_agg_get_sent(a, f, round, nv)) {
		f->h->type = RINX_T_REDUCE;
		f->h->step = hop->out_step;
		*to = hop->to;
		return RINX_NACK_SUM;
	}
	return RINX_NACK_MISS;
}

/* Addresses, sender and step of a frame leaving node self for node next. */
static __always_inline void rinx_readdress(struct rinx_frame *f,
					   const struct rinx_node *self,
					   const struct rinx_node *next,
					   __u16 self_id)
{
	__builtin_memcpy(f->eth->h_dest, next->mac, ETH_ALEN);
	__builtin_memcpy(f->eth->h_source, self->mac, ETH_ALEN);
	f->ip->saddr = self->ip;
	f->ip->daddr = next->ip;
	rinx_csum_ip(f->ip);
	f->udp->check = 0;
	f->h->sender = bpf_htons(self_id);
}

/* A gather for a rack's group: the rack's ToR floods it to the rack's host
 * ports, and with `onward` also to its uplink, where the copy gets the MAC
 * of its IP destination (next). RINX_GROUP_EVERY: to every host. */
static __always_inline void rinx_to_group(struct rinx_frame *f, __u8 rack,
					  int onward)
{
	f->eth->h_dest[0] = RINX_GROUP_MAC0;
	f->eth->h_dest[1] = RINX_GROUP_MAC1;
	f->eth->h_dest[2] = RINX_GROUP_MAC2;
	if (rack == RINX_GROUP_EVERY) {
		f->eth->h_dest[3] = 0xff;
		f->eth->h_dest[4] = 0xff;
		f->eth->h_dest[5] = 0;
		return;
	}
	f->eth->h_dest[3] = rack;
	f->eth->h_dest[4] = 0;
	f->eth->h_dest[5] = onward ? 1 : 0;
}

#endif
