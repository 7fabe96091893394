/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The hop: what a host does with a data frame of one of its jobs, one
 * definition compiled into the host program (bpf/host.bpf.c, in XDP) and
 * into the slow path (user/comm/slow.c, the frames XDP hands up to the
 * trainer). Acceptance (bounds, sender, round, shape), the dispatch on the
 * hop's action, and one function per action with its effect on the maps.
 * selftests/test_diff runs both builds on the same frames.
 *
 * The includer says how its side reaches the tables and sends a frame,
 * before including this file: a `struct hop_env` with at least the members
 *	f	the frame: f->h its rinx header, f->v its values
 *	job	the job entry (struct rinx_job *)
 *	window	blocks per job slot of the node's maps
 * and these functions of it (x), each a few lines:
 *   map entries (NULL if none):
 *	env_share(x, idx), env_result(x, idx), env_partial(x, idx)
 *				struct rinx_slot * of the job's block idx
 *	env_cursor(x)		the job's struct rinx_cursor *
 *	env_hop(x, klass, type)	the job's struct rinx_hop *
 *	env_node(x, id)		the job's node id, struct rinx_node *
 *   the frame, its values and the round words of the slots:
 *	env_saddr(x), env_ce(x)	its source address; marked CE?
 *	env_put_vals(x, r, map, idx, nv)
 *				the frame's values into the block whose
 *				first slot r is entry idx of map (enum
 *				hop_map): 0, or -1 (an internal error)
 *	env_add_share(x, sh, idx, dexp, &e, nv)
 *				the share of block idx (first slot sh) added
 *				into the frame's values at exponent dexp;
 *				the sum's exponent in e: 0 or -1 as above
 *	env_load_round(p), env_store_round(p, round)
 *				a slot's round word, read before its values,
 *				written after them
 *   outcomes, each returns the side's verdict:
 *	env_drop(x, stat)	refused (RINX_STAT_ABORTED: an internal
 *				error)
 *	env_done(x, stat)	finished here, nothing to send
 *	env_slow(x, stat)	needs the trainer (its share, its round)
 *	env_send(x, to, stat)	readdressed to node `to`, sent
 *	env_group(x, to, rack, onward, stat)
 *				the same, to the rack's group address
 *	env_count(x, stat)	counts an event, no verdict
 *   where the sides differ by design:
 *	env_other_tensor(x)	the frame's round has another size or dtype
 *	env_repair(x, type, round, block, klass, nv)
 *				a NACK or RNACK (XDP answers them)
 *	env_agg_slot(x, hop, idx, round, cov, nv)
 *				the frame into the block's aggregator slot
 *				(XDP adds it; the slow path completes a slot
 *				that waits for the trainer's share): an enum
 *				rinx_agg_ret
 *	env_pull(x, hop, round, sender)
 *				a frame the slot consumed: 1 if it became
 *				an RNACK for the sender's block that the
 *				slot RINX_PULL_BEHIND blocks earlier lacks
 *				(XDP; the slow path consumes nothing)
 *	env_keep_final(x, idx, round, nv)
 *				the finished block into the aggregator slot
 *				(0, or -1: no slot)
 *	env_gather_end(x, cur, round, nv)
 *				a gather ended here, stored (XDP recycles
 *				the frame into this host's next block)
 *	env_added(x)		the own share was added into a frame
 *
 * nv, the frame's values, is a constant at every call in XDP (the loops
 * on values are unrolled for it, parse.bpf.h) and the job's in user space.
 * A jumbo block (RINX_BLOCK_VALUES_JUMBO) takes RINX_BLOCK_SLOTS(nv)
 * consecutive slots of a map; the first one's header speaks for it. It
 * runs the ring's actions (add, store, repair); an aggregation refuses it
 * (RINX_STAT_DROP_SHAPE) until aggregator slots hold it.
 */
#ifndef RINX_HOP_KERN_USER_H
#define RINX_HOP_KERN_USER_H

#include "bpf/check_kern_user.h"

#define HOP_GO	(-1)	/* accepted: go on (no verdict is negative) */

/* A block into slot r (entry idx of map), as the frame carries it, for
 * the round `round`: the round word last, since readers (the trainer, a
 * NACK's answer) take the slot as that round's once they see it. 0, or -1
 * on an internal error (the round word stays). */
static __always_inline int hop_write(struct hop_env *x, struct rinx_slot *r,
				     int map, __u32 idx, __u32 round,
				     const int nv)
{
	struct rinx_hdr *h = x->f->h;

	if (env_put_vals(x, r, map, idx, nv))
		return -1;
	r->exp = (__s16)bpf_ntohs(h->exp);
	r->flags = h->flags;
	r->count = bpf_ntohs(h->count);
	env_store_round(&r->round, round);
	return 0;
}

/* A finished block into result slot r (entry idx), counted in the job's
 * cursor with its congestion mark (CE stays on a frame for its whole
 * path: hops keep the TOS byte, aggregators OR the marks of what they
 * consume); the trainer's rate control reads both counts. The cursor in
 * *curp (NULL: none); 0, or -1 as hop_write. */
static __always_inline int hop_finished(struct hop_env *x, struct rinx_slot *r,
					__u32 idx, __u32 round, const int nv,
					struct rinx_cursor **curp)
{
	struct rinx_cursor *cur;
	__u32 jobs;

	*curp = NULL;
	if (hop_write(x, r, HOP_RESULT, idx, round, nv))
		return -1;
	cur = env_cursor(x);
	*curp = cur;
	if (!cur)
		return 0;
	__sync_fetch_and_add(&cur->stored, 1);
	/* the jobs sharing the aggregator of its sum (RINX_F_JOBS): a
	 * bit each, taken by the trainer; written only when new */
	jobs = 1u << ((x->f->h->flags & RINX_F_JOBS) >> RINX_F_JOBS_SHIFT);
	if (!(cur->jobs & jobs))
		__sync_fetch_and_or(&cur->jobs, jobs);
	if (env_ce(x)) {
		__sync_fetch_and_add(&cur->marked, 1);
		env_count(x, RINX_STAT_ECN_CE);
		if (x->f->h->flags & RINX_F_SHARED)
			__sync_fetch_and_add(&cur->shared, 1);
	}
	return 0;
}

/* A ring hop's frame of the next round, early: its block's share is
 * written for that round, which the trainer does only once the block's
 * slots are done with this one here (its result copied out), so the hop
 * may add the share and overwrite the block's kept sum and result. */
static __always_inline int hop_next_ready(struct hop_env *x,
					  const struct rinx_hop *hop,
					  __u32 round, __u32 idx)
{
	struct rinx_slot *sh;

	if (hop->action != RINX_A_ADD_FWD && hop->action != RINX_A_ADD_FINISH &&
	    hop->action != RINX_A_STORE_FWD && hop->action != RINX_A_STORE_END)
		return 0;
	sh = env_share(x, idx);
	return sh && env_load_round(&sh->round) == round;
}

/* A frame of round + 1 taken early: its sender finished this round (the
 * trainer's gather repair asks it for this round's missing blocks at once,
 * as it did when such frames reached it). The cursor's word is of one
 * round: a newer round starts it afresh. */
static __always_inline void hop_note_ahead(struct hop_env *x, __u32 round)
{
	struct rinx_cursor *cur = env_cursor(x);
	__u32 sender = bpf_ntohs(x->f->h->sender);

	if (!cur || sender >= 64)
		return;
	if (env_load_round(&cur->ahead_round) != round) {
		cur->ahead = 0;
		env_store_round(&cur->ahead_round, round);
	}
	/* once per sender and round: the locked OR only when the bit is
	 * new (a round's every early frame would take the line) */
	if (!(cur->ahead & (1ull << sender)))
		__sync_fetch_and_or(&cur->ahead, 1ull << sender);
}

/* ... and of that round's size and dtype (HOP_GO); anything else waits
 * for the trainer's round as before (SLOW_FUTURE: it judges the frame
 * once the round is open). */
static __always_inline int hop_next_shape(struct hop_env *x, __u32 round,
					  const int nv)
{
	const struct rinx_job *job = x->job;
	const struct rinx_hdr *h = x->f->h;
	__u32 block = bpf_ntohl(h->block);

	if ((job->dtype == RINX_W_INT32 && h->exp != 0) ||
	    bpf_ntohl(h->nblocks) != job->next_nblocks ||
	    bpf_ntohs(h->dtype) != job->dtype ||
	    bpf_ntohs(h->count) != (block == job->next_nblocks - 1 ?
				    job->next_last_count : nv))
		return env_slow(x, RINX_STAT_SLOW_FUTURE);
	return HOP_GO;
}

/* The frame's round against the job's: the round in progress, of the
 * job's size and dtype (HOP_GO); the next one, which a ring hop takes
 * where its block's share is written for it (hop_next_ready) and an
 * aggregator into its slot before its own trainer gets there (HOP_GO,
 * shape checked), and anything else hands to the trainer; older or
 * further ahead: drop. */
static __always_inline int hop_round(struct hop_env *x,
				     const struct rinx_hop *hop, __u32 type,
				     __u32 round, __u32 idx, const int nv)
{
	const struct rinx_job *job = x->job;
	const struct rinx_hdr *h = x->f->h;
	__u32 block = bpf_ntohl(h->block), nblocks = bpf_ntohl(h->nblocks);
	__u32 bad;

	if (round != job->round) {
		if (round == job->round + 1 && job->next_nblocks &&
		    hop_next_ready(x, hop, round, idx)) {
			int ret = hop_next_shape(x, round, nv);

			if (ret == HOP_GO)
				hop_note_ahead(x, round);
			return ret;
		}
		if (round == job->round + 1 && rinx_is_agg(hop) &&
		    type != RINX_T_GATHER) {
			/* that round is not installed here yet: the frame
			 * says its size and dtype, which must fit a round
			 * (an exponent only on fixed point), and the slot
			 * holds the round to its first contribution's */
			bad = rinx_hdr_shape(h, nv);
			return bad ? env_drop(x, bad) : HOP_GO;
		}
		if (round == job->round + 1)
			return env_slow(x, RINX_STAT_SLOW_FUTURE);
		/* no rank runs more than one round ahead of another: a
		 * round starts once the one before finished, which took
		 * this node's share of it */
		if ((__s32)(round - job->round) > 1)
			return env_drop(x, RINX_STAT_DROP_AHEAD);
		return env_drop(x, RINX_STAT_DROP_STALE);
	}
	/* int32 payloads are summed as they are: no exponent may shift them */
	if (job->dtype == RINX_W_INT32 && h->exp != 0)
		return env_drop(x, RINX_STAT_DROP_BOUNDS);
	if (nblocks != job->nblocks || bpf_ntohs(h->dtype) != job->dtype ||
	    bpf_ntohs(h->count) != (block == nblocks - 1 ? job->last_count :
							   nv))
		return env_other_tensor(x);
	return HOP_GO;
}

/* add+fwd, add+finish: the own share added into the frame; sent on (the
 * sum kept where the job keeps them, for the successor's RNACK), or
 * stored as the finished block and sent on as its gather. */
static __always_inline int hop_add(struct hop_env *x,
				   const struct rinx_hop *hop, __u32 round,
				   __u32 idx, const int nv)
{
	struct rinx_hdr *h = x->f->h;
	struct rinx_slot *sh = env_share(x, idx), *res = NULL;
	int fwd = hop->action == RINX_A_ADD_FWD;
	int keep = x->job->flags & RINX_JOB_KEEP;
	struct rinx_cursor *cur;
	__s16 e;

	/* the slot this hop writes: the result where the block finishes;
	 * the kept partial sum only where hops keep it */
	if (keep || !fwd) {
		res = fwd ? env_partial(x, idx) : env_result(x, idx);
		if (!res)
			return env_drop(x, RINX_STAT_ABORTED);
	}
	if (!sh)
		return env_drop(x, RINX_STAT_ABORTED);
	/* passed on already this round: a duplicate (a loss further on is
	 * asked for by the node after it, hop by hop). `res &&`: for the
	 * verifier, which does not tie res to keep */
	if (keep && res && env_load_round(&res->round) == round)
		return env_drop(x, RINX_STAT_DROP_DUP);
	if (env_load_round(&sh->round) != round)
		return env_slow(x, RINX_STAT_SLOW_NOT_READY);
	if (env_add_share(x, sh, idx, (__s16)bpf_ntohs(h->exp), &e, nv))
		return env_drop(x, RINX_STAT_ABORTED);
	/* the trainer rewrote the share meanwhile (its round word is 0
	 * while it does, then the next round's): the frame was a late
	 * duplicate of a round finished here, and its sum may hold values
	 * of both */
	if (env_load_round(&sh->round) != round)
		return env_drop(x, RINX_STAT_DROP_STALE);
	h->exp = bpf_htons(e);
	h->flags |= sh->flags;
	h->step++;
	env_added(x);
	if (fwd) {
		if (res) {
			res->step = h->step;
			if (hop_write(x, res, HOP_PARTIAL, idx, round, nv))
				return env_drop(x, RINX_STAT_ABORTED);
		}
		return env_send(x, hop->to, RINX_STAT_REDUCE_FWD);
	}
	if (!res)	/* for the verifier: set above when !fwd */
		return env_drop(x, RINX_STAT_ABORTED);
	if (hop_finished(x, res, idx, round, nv, &cur))
		return env_drop(x, RINX_STAT_ABORTED);
	h->type = RINX_T_GATHER;
	h->step = 0;
	return env_send(x, hop->to, RINX_STAT_REDUCE_FINISH);
}

/* store+fwd, store+end: the finished block stored; sent on, or the
 * gather ends here. */
static __always_inline int hop_store(struct hop_env *x,
				     const struct rinx_hop *hop, __u32 round,
				     __u32 idx, const int nv)
{
	struct rinx_slot *res = env_result(x, idx);
	struct rinx_cursor *cur;

	if (!res)
		return env_drop(x, RINX_STAT_ABORTED);
	if ((x->job->flags & RINX_JOB_KEEP) &&
	    env_load_round(&res->round) == round)
		return env_drop(x, RINX_STAT_DROP_DUP);
	if (hop_finished(x, res, idx, round, nv, &cur))
		return env_drop(x, RINX_STAT_ABORTED);
	if (hop->action == RINX_A_STORE_END)
		return env_gather_end(x, cur, round, nv);
	x->f->h->step++;
	return env_send(x, hop->to, RINX_STAT_GATHER_FWD);
}

/* agg+fwd, agg+finish: the frame into the block's aggregator slot; what
 * the slot says of it decides: wait for more, the trainer's share, a
 * duplicate answered or dropped, or the sum leaves (agg+finish: stored
 * as the finished block first, and sent into the rack and on). */
static __always_inline int hop_agg(struct hop_env *x,
				   const struct rinx_hop *hop, __u32 type,
				   __u32 round, __u32 idx, __u32 sender,
				   const int nv)
{
	struct rinx_hdr *h = x->f->h;
	int fwd = hop->action == RINX_A_AGG_FWD, ret;
	struct rinx_cursor *cur;
	struct rinx_slot *res;
	__u32 what, self = x->job->self;

	ret = env_agg_slot(x, hop, idx, round,
			   rinx_hdr_cover(h, hop, sender), nv);
	if (ret == RINX_AGG_NO_SLOT)
		return env_drop(x, RINX_STAT_ABORTED);
	if (ret == RINX_AGG_OVERLAP)
		return env_drop(x, RINX_STAT_AGG_OVERLAP);
	if (ret == RINX_AGG_SHAPE)
		return env_drop(x, RINX_STAT_DROP_SHAPE);
	/* the others' sum waits for this host's share: the trainer adds it
	 * and completes the slot */
	if (ret == RINX_AGG_NEED_SELF)
		return env_slow(x, RINX_STAT_SLOW_SELF);
	if (ret == RINX_AGG_FINAL && type == RINX_T_CONTRIB &&
	    (hop->flags & RINX_HOP_ANSWER)) {
		/* the worker missed the finished block: send it. It expects
		 * the step of this member's gather into the rack: 0 where
		 * the block finishes, else out + 1 */
		h->type = RINX_T_GATHER;
		h->step = fwd ? hop->out_step + 1 : hop->out_step;
		return env_send(x, sender, RINX_STAT_AGG_RESEND);
	}
	/* a partial sum again after the block finished: whoever misses it
	 * asks for the finished block itself (NACK) */
	if (ret == RINX_AGG_DUP || (ret == RINX_AGG_FINAL && fwd))
		return env_drop(x, RINX_STAT_DROP_AGG_DUP);
	if (ret == RINX_AGG_STALE)
		return env_drop(x, RINX_STAT_DROP_AGG_STALE);
	if (ret == RINX_AGG_CONSUMED) {
		/* the sender's earlier block, lost on the way: asked for in
		 * this frame (bpf/agg.bpf.h, pulls) */
		if (env_pull(x, hop, round, sender))
			return env_send(x, sender, RINX_STAT_AGG_PULL);
		return env_done(x, RINX_STAT_AGG_ADD);
	}
	/* sent on again: a retransmission repairs a loss further on */
	what = ret == RINX_AGG_RESEND || ret == RINX_AGG_FINAL ?
	       RINX_STAT_AGG_REEMIT : RINX_STAT_AGG_DONE;
	h->step = hop->out_step;
	if (fwd) {
		h->type = RINX_T_REDUCE;
		return env_send(x, hop->to, what);
	}
	/* an aggregating host is one of the workers: it keeps the sum */
	res = env_result(x, idx);
	if (!res)
		return env_drop(x, RINX_STAT_ABORTED);
	h->type = RINX_T_GATHER;
	if (hop_finished(x, res, idx, round, nv, &cur))
		return env_drop(x, RINX_STAT_ABORTED);
	if (hop->rack == RINX_NO_RACK && hop->to == self)
		return env_done(x, what);	/* ends here */
	if (hop->rack == RINX_NO_RACK)
		return env_send(x, hop->to, what);
	return env_group(x, hop->to, hop->rack, hop->to != self, what);
}

/* mcast+fwd, mcast+end: a gather reaching an INA member, stored and kept
 * in the aggregator slot (a worker's late share is answered with it),
 * sent into the rack's group (and on). */
static __always_inline int hop_mcast(struct hop_env *x,
				     const struct rinx_hop *hop, __u32 round,
				     __u32 idx, const int nv)
{
	struct rinx_slot *res = env_result(x, idx);
	__u32 self = x->job->self;
	__u16 to = hop->action == RINX_A_MCAST_FWD ? hop->to : self;
	struct rinx_cursor *cur;

	if (!res || env_keep_final(x, idx, round, nv) ||
	    hop_finished(x, res, idx, round, nv, &cur))
		return env_drop(x, RINX_STAT_ABORTED);
	x->f->h->step = hop->out_step;
	return env_group(x, to, hop->rack, to != self, RINX_STAT_AGG_MCAST);
}

/* A data frame (reduce, gather, share, NACK, RNACK) of a known job whose
 * token matched: checked against the tables, then handled as the hop of
 * its (class, type) says. */
static __always_inline int hop_block(struct hop_env *x, __u32 type,
				     const int nv)
{
	const struct rinx_hdr *h = x->f->h;
	const struct rinx_job *job = x->job;
	__u32 round = bpf_ntohl(h->round), block = bpf_ntohl(h->block);
	__u32 klass = bpf_ntohs(h->klass), sender, idx, bad;
	const struct rinx_hop *hop;
	int ret;

	bad = rinx_hdr_bounds(h, job, x->window, nv);
	if (bad)
		return env_drop(x, bad);
	if (type == RINX_T_NACK || type == RINX_T_RNACK)
		return env_repair(x, type, round, block, klass, nv);
	if (type < RINX_T_REDUCE || type > RINX_T_CONTRIB)
		return env_drop(x, RINX_STAT_DROP_TYPE);
	hop = env_hop(x, klass, type);
	if (!hop)
		return env_drop(x, RINX_STAT_ABORTED);
	if (hop->action == RINX_A_NONE)
		return env_drop(x, RINX_STAT_DROP_NO_ROUTE);
	sender = bpf_ntohs(h->sender);
	bad = rinx_hdr_sender(h, env_saddr(x), env_node(x, sender), job, hop,
			      type);
	if (bad)
		return env_drop(x, bad);
	idx = job->slot * x->window + block * RINX_BLOCK_SLOTS(nv);
	ret = hop_round(x, hop, type, round, idx, nv);
	if (ret != HOP_GO)
		return ret;
	/* aggregator slots hold blocks of one slot's values */
	if (nv > RINX_BLOCK_VALUES && (rinx_is_agg(hop) ||
				       hop->action == RINX_A_MCAST_FWD ||
				       hop->action == RINX_A_MCAST_END))
		return env_drop(x, RINX_STAT_DROP_SHAPE);
	switch (hop->action) {
	case RINX_A_ADD_FWD:
	case RINX_A_ADD_FINISH:
		return hop_add(x, hop, round, idx, nv);
	case RINX_A_STORE_FWD:
	case RINX_A_STORE_END:
		return hop_store(x, hop, round, idx, nv);
	case RINX_A_AGG_FWD:
	case RINX_A_AGG_FINISH:
		return hop_agg(x, hop, type, round, idx, sender, nv);
	case RINX_A_MCAST_FWD:
	case RINX_A_MCAST_END:
		return hop_mcast(x, hop, round, idx, nv);
	}
	return env_drop(x, RINX_STAT_DROP_NO_ROUTE);
}

#endif
