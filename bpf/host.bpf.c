// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinx host hop. Runs on the NIC of every host of a job.
 *
 * A rinx frame is checked against the job's tables (job id, token, round,
 * sender and step for the block's class) and then handled as the plan says:
 *  - ring hops: add this host's share and forward, add and finish (store
 *    the result and start the gather), store and forward, store and end;
 *    a gather that ends here becomes this host's next block (recycle);
 *  - aggregations (a rack's agent, a tree node, a parameter server): sum
 *    the declared contributors in a slot, add this host's own share, send
 *    the sum on, or store it and send it into the rack's group and/or on;
 *  - NACK: answer with the stored result (loss repair); RNACK: send the
 *    reduce the asker missed again, from the partial sum kept at the add
 *    and forward hop (or the origin's share), so a loss costs one hop;
 *  - parameter server (bpf/ps.bpf.h): pushes added into the job's store,
 *    pulls answered from it, at the server; its answers to the trainer;
 *  - congestion feedback: every finished block stored here is counted per
 *    job, and so is every one that arrived marked CE; the recycle of a
 *    finished gather into the next own block obeys the job's pacer (both
 *    in the job's cursor, shared with the trainer's rate control).
 * A frame that XDP cannot finish (share not written yet, next round, size
 * disagreement, control frames) goes to the trainer's AF_XDP socket;
 * everything that is not rinx passes.
 */
#include "bpf/tables.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load. */
const volatile __u16 rinx_port_be = bpf_htons(RINX_DEFAULT_PORT);
const volatile __u32 rinx_window = RINX_DEFAULT_WINDOW;

/* (slot, block) -> this host's share, written by the trainer (mmapped). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RINX_DEFAULT_JOBS * RINX_DEFAULT_WINDOW);
	__type(key, __u32);
	__type(value, struct rinx_slot);
} share SEC(".maps");

/* (slot, block) -> finished sum, written here, read by the trainer. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RINX_DEFAULT_JOBS * RINX_DEFAULT_WINDOW);
	__type(key, __u32);
	__type(value, struct rinx_slot);
} result SEC(".maps");

/* (slot, block) -> the partial sum this host sent on at a ring's reduce
 * hop (add and forward), kept to answer its successor's RNACK (a reduce
 * lost on the link between them is sent again from here, not from the
 * block's origin); its epoch tells the trainer the reduce passed here. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RINX_DEFAULT_JOBS * RINX_DEFAULT_WINDOW);
	__type(key, __u32);
	__type(value, struct rinx_slot);
} partial SEC(".maps");

/* job slot -> contribution cursor (mmapped, shared with the trainer). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RINX_DEFAULT_JOBS);
	__type(key, __u32);
	__type(value, struct rinx_cursor);
} cursors SEC(".maps");

/* rx queue -> trainer's AF_XDP socket (slow path). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

static __always_inline int slow_path(struct xdp_md *ctx, __u32 why)
{
	if (bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_DROP) ==
	    XDP_REDIRECT)
		return rinx_count(why, XDP_REDIRECT);
	return rinx_count(RINX_STAT_DROP_NO_XSK, XDP_DROP);
}

/* Congestion feedback: a finished block stored here, and whether its frame
 * saw a marking port on its way (CE stays on a frame for its whole path:
 * hops keep the TOS byte, aggregators OR the marks of what they consume).
 * The trainer's rate control reads the two counts from the cursor. */
static __always_inline struct rinx_cursor *note_stored(struct rinx_frame *f,
						       __u32 slot)
{
	struct rinx_cursor *cur = bpf_map_lookup_elem(&cursors, &slot);

	if (!cur)
		return NULL;
	__sync_fetch_and_add(&cur->stored, 1);
	if ((f->ip->tos & RINX_ECN_MASK) == RINX_ECN_CE) {
		__sync_fetch_and_add(&cur->marked, 1);
		rinx_count(RINX_STAT_ECN_CE, 0);
	}
	return cur;
}

static __always_inline void store(struct rinx_slot *r, struct rinx_frame *f,
				  __u32 epoch, const int nv)
{
	rinx_copy_vals(r->v, f->v, nv);
	r->exp = (__s16)bpf_ntohs(f->h->exp);
	r->flags = f->h->flags;
	r->count = bpf_ntohs(f->h->count);
	/* The trainer polls epoch: it must become visible after the values.
	 * BPF has no fence; the JIT keeps program order and x86 is TSO, and
	 * this barrier keeps the compiler from sinking the stores. */
	asm volatile("" ::: "memory");
	r->epoch = epoch;
}

/* Stores a finished block and counts it; returns the job's cursor. */
static __always_inline struct rinx_cursor *
store_job(struct rinx_slot *r, struct rinx_frame *f, __u32 epoch, __u32 slot,
	  const int nv)
{
	store(r, f, epoch, nv);
	return note_stored(f, slot);
}

static __always_inline int forward(struct rinx_frame *f, struct rinx_job *job,
				   __u32 slot, __u16 to)
{
	struct rinx_node *self, *next;
	__u32 k;

	k = slot * RINX_MAX_NODES + job->self;
	self = bpf_map_lookup_elem(&nodes, &k);
	k = slot * RINX_MAX_NODES + to;
	next = bpf_map_lookup_elem(&nodes, &k);
	/* node ids index one slot's part of the table: never beyond it */
	if (!self || !next || job->self >= RINX_MAX_NODES ||
	    to >= RINX_MAX_NODES)
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	rinx_readdress(f, self, next, job->self);
	return XDP_TX;
}

/* Agent host: a complete slot or an arriving gather leaves for the rack's
 * group (and on to the next member unless `to` is this node). */
static __always_inline int to_group(struct rinx_frame *f, struct rinx_job *job,
				    __u32 slot, __u16 to, __u8 rack)
{
	int ret = forward(f, job, slot, to);

	if (ret == XDP_TX)
		rinx_to_group(f, rack, to != job->self);
	return ret;
}

/* Pacer of the own blocks: may one leave now? Takes its departure time
 * with a compare-and-swap shared with the trainer's sender, which runs the
 * same rule (user/cc.c); losing the race means another sender took the
 * slot, so this one waits. Up to cur->burst blocks may leave back to
 * back after an idle spell. */
static __always_inline int pace_ok(struct rinx_cursor *cur)
{
	__u64 now = bpf_ktime_get_ns(), gap = cur->gap_ns;
	__u64 burst = cur->burst ? cur->burst : RINX_PACE_BURST;
	__u64 t = cur->next_ns, lo = now - burst * gap;

	if (now < t)
		return 0;
	return __sync_val_compare_and_swap(&cur->next_ns, t,
					   (t > lo ? t : lo) + gap) == t;
}

/* The gather that ends here becomes the next block this host starts: its
 * j-th own block is at pattern position own[j % nown] of pattern round
 * j / nown, and goes where the plan starts its class (a ring origin's
 * reduce, a worker's share for its aggregator). Blocks after the first
 * window thus never cross AF_XDP. Returns the action, or -1 when there is
 * nothing to send. */
static __always_inline int recycle(struct rinx_frame *f, struct rinx_job *job,
				   __u32 epoch, struct rinx_cursor *cur,
				   const int nv)
{
	struct rinx_slot *sh;
	__u32 j, b, idx, k, nown = job->nown, plen = job->plen;
	__u16 to;
	__u8 type;

	if (!nown || nown > RINX_CMAP_MAX || !plen || plen > RINX_CMAP_MAX)
		return -1;
	if (!cur || cur->epoch != epoch)
		return -1;
	/* The next own block, claimed only once its share is written: the
	 * trainer converts a round's input while the first blocks travel
	 * (user/allreduce.c), and sends what the host program leaves. */
	j = *(volatile __u32 *)&cur->next;
	b = (j / nown) * plen + job->own[(j % nown) & (RINX_CMAP_MAX - 1)];
	if (b >= job->nblocks || b >= rinx_window)
		return -1;
	k = job->cmap[(b % plen) & (RINX_CMAP_MAX - 1)] & (RINX_MAX_CLASSES - 1);
	to = job->start_to[k];
	type = job->start_type[k];
	if (to == RINX_NO_SEND)
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	idx = job->slot * rinx_window + b;
	sh = bpf_map_lookup_elem(&share, &idx);
	if (!sh || sh->epoch != epoch)
		return -1;
	if (cur->gap_ns && !pace_ok(cur)) {
		rinx_count(RINX_STAT_PACED, 0);
		return -1;
	}
	/* another CPU or the trainer took it meanwhile: theirs to send */
	if (__sync_val_compare_and_swap(&cur->next, j, j + 1) != j)
		return -1;
	rinx_copy_vals(f->v, sh->v, nv);
	f->h->type = type;
	f->h->step = 0;
	f->h->flags = sh->flags;
	/* a new block: the marks of the old one are counted already */
	f->ip->tos = (f->ip->tos & ~RINX_ECN_MASK) | RINX_ECN_ECT0;
	f->h->block = bpf_htonl(b);
	f->h->klass = bpf_htons(k);
	f->h->count = bpf_htons(sh->count);
	f->h->exp = bpf_htons((__u16)sh->exp);
	/* the trainer times the block's round trip from here */
	sh->sent_us = (__u32)(bpf_ktime_get_ns() / 1000);
	return forward(f, job, job->slot, to);
}

/* A stored block's values, exponent and flags into frame f (an answer to
 * a NACK or an RNACK). */
static __always_inline void slot_to_frame(struct rinx_frame *f,
					  const struct rinx_slot *src,
					  const int nv)
{
	rinx_copy_vals(f->v, src->v, nv);
	f->h->exp = bpf_htons((__u16)src->exp);
	f->h->flags = src->flags;
}

/* NACK: the asker (the frame's sender) misses the finished block; answer
 * with the stored result if this node has it for that round. Any node that
 * keeps the block may answer: results stay until the next round's gather,
 * which cannot come before the asker has finished this one. */
static __always_inline int nack(struct rinx_frame *f, struct rinx_job *job,
				__u32 epoch, __u32 block, const int nv)
{
	struct rinx_slot *res;
	__u32 idx, who, bad;
	int ret;

	bad = rinx_check_asker(f, job, &who);
	if (bad)
		return rinx_count(bad, bad == RINX_STAT_ABORTED ? XDP_ABORTED :
								XDP_DROP);
	idx = job->slot * rinx_window + block;
	res = bpf_map_lookup_elem(&result, &idx);
	if (!res)
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	if (res->epoch != epoch || res->count != bpf_ntohs(f->h->count))
		return rinx_count(RINX_STAT_NACK_MISS, XDP_DROP);
	slot_to_frame(f, res, nv);
	f->h->type = RINX_T_GATHER;
	ret = forward(f, job, job->slot, who);
	return ret == XDP_TX ? rinx_count(RINX_STAT_REPAIR, ret) : ret;
}

/* RNACK: the asker (the frame's sender) missed the reduce of the block
 * that this host sends it: send it again, as it left. At an add and
 * forward hop that is the kept partial sum; at the class's origin its
 * share, once the pacer let the block's pattern round start here (the
 * trainer's timers resend what it never sent). The loss costs this one
 * hop, not the block's whole path from its origin. */
static __always_inline int rnack(struct rinx_frame *f, struct rinx_job *job,
				 __u32 epoch, __u32 block, __u32 klass,
				 const int nv)
{
	struct rinx_slot *src = NULL;
	struct rinx_cursor *cur;
	struct rinx_hop *hop;
	__u32 idx, who, bad, k, slot = job->slot;
	__u8 step = 0;
	int ret;

	bad = rinx_check_asker(f, job, &who);
	if (bad)
		return rinx_count(bad, bad == RINX_STAT_ABORTED ? XDP_ABORTED :
								XDP_DROP);
	if (epoch != job->epoch)
		return rinx_count(RINX_STAT_RNACK_MISS, XDP_DROP);
	idx = slot * rinx_window + block;
	k = RINX_HOP_INDEX(slot, klass, RINX_T_REDUCE);
	hop = bpf_map_lookup_elem(&hops, &k);
	if (hop && hop->action == RINX_A_ADD_FWD && hop->to == who) {
		src = bpf_map_lookup_elem(&partial, &idx);
		if (src && src->epoch == epoch)
			step = (__u8)src->step;
		else
			src = NULL;
	} else if (job->start_to[klass & (RINX_MAX_CLASSES - 1)] == who &&
		   job->start_type[klass & (RINX_MAX_CLASSES - 1)] ==
		   RINX_T_REDUCE) {
		cur = bpf_map_lookup_elem(&cursors, &slot);
		src = bpf_map_lookup_elem(&share, &idx);
		if (!cur || cur->epoch != epoch || !src ||
		    src->epoch != epoch ||
		    (block / job->plen) * job->nown >= cur->next)
			src = NULL;
	}
	if (!src || src->count != bpf_ntohs(f->h->count))
		return rinx_count(RINX_STAT_RNACK_MISS, XDP_DROP);
	slot_to_frame(f, src, nv);
	f->h->type = RINX_T_REDUCE;
	f->h->step = step;
	f->ip->tos = (f->ip->tos & ~RINX_ECN_MASK) | RINX_ECN_ECT0;
	ret = forward(f, job, slot, who);
	return ret == XDP_TX ? rinx_count(RINX_STAT_RREPAIR, ret) : ret;
}

#include "bpf/ps.bpf.h"

/* A data frame (reduce, gather, share, NACK, RNACK) of a known job, whose
 * token matched: nv, the frame's values, is a constant in each of the two
 * copies of this code (parse.bpf.h). */
static __always_inline int host_block(struct xdp_md *ctx, struct rinx_frame *fp,
				      struct rinx_job *job, __u32 type,
				      const int nv)
{
	struct rinx_frame f = *fp;
	struct rinx_hop *hop;
	struct rinx_slot *sh, *res;
	struct rinx_cursor *cur;
	__u32 epoch, block, nblocks, klass, k, idx, sender, what, bad;
	struct rinx_agg *a;
	__u16 cnt;
	int ret, agg, reset, keep;

	epoch = bpf_ntohl(f.h->epoch);
	block = bpf_ntohl(f.h->block);
	nblocks = bpf_ntohl(f.h->nblocks);
	klass = bpf_ntohs(f.h->klass);
	cnt = bpf_ntohs(f.h->count);
	bad = rinx_check_bounds(&f, job, rinx_window, nv);
	if (bad)
		return rinx_count(bad, XDP_DROP);

	if (type == RINX_T_NACK)
		return nack(&f, job, epoch, block, nv);
	if (type == RINX_T_RNACK)
		return rnack(&f, job, epoch, block, klass, nv);

	k = RINX_HOP_INDEX(job->slot, klass, type);
	hop = bpf_map_lookup_elem(&hops, &k);
	if (!hop)
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	if (hop->action == RINX_A_NONE)
		return rinx_count(RINX_STAT_DROP_NO_ROUTE, XDP_DROP);
	agg = hop->action >= RINX_A_AGG_FWD;
	bad = rinx_check_sender(&f, job, hop, type, &sender);
	if (bad)
		return rinx_count(bad, bad == RINX_STAT_ABORTED ? XDP_ABORTED :
								XDP_DROP);

	if (epoch != job->epoch) {
		/* an aggregator takes the next round's contributions before
		 * its own trainer gets there: the slot keeps rounds apart */
		if (epoch == job->epoch + 1 && agg && type != RINX_T_GATHER) {
			/* that round is not installed here yet: the frame
			 * says its size and dtype, which must fit a round
			 * (an exponent only on fixed point), and the slot
			 * holds the round to its first contribution's */
			bad = rinx_check_shape(&f, nv);
			if (bad)
				return rinx_count(bad, XDP_DROP);
			goto sized;
		}
		if (epoch == job->epoch + 1)
			return slow_path(ctx, RINX_STAT_SLOW_FUTURE);
		/* no rank runs more than one round ahead of another: a
		 * round starts once the one before finished, which took
		 * this node's share of it */
		if ((__s32)(epoch - job->epoch) > 1)
			return rinx_count(RINX_STAT_DROP_AHEAD, XDP_DROP);
		return rinx_count(RINX_STAT_DROP_STALE, XDP_DROP);
	}
	/* int32 payloads are summed as they are: no exponent may shift them */
	if (job->dtype == RINX_W_INT32 && f.h->exp != 0)
		return rinx_count(RINX_STAT_DROP_BOUNDS, XDP_DROP);
	if (nblocks != job->nblocks || bpf_ntohs(f.h->dtype) != job->dtype ||
	    cnt != (block == nblocks - 1 ? job->last_count : nv))
		return slow_path(ctx, RINX_STAT_SLOW_MISMATCH);
sized:
	idx = job->slot * rinx_window + block;
	switch (hop->action) {
	case RINX_A_ADD_FWD:
	case RINX_A_ADD_FINISH:
		sh = bpf_map_lookup_elem(&share, &idx);
		/* the slot this hop writes: the result where the block
		 * finishes; the kept partial sum only where hops keep it */
		keep = job->flags & RINX_JOB_KEEP;
		res = NULL;
		if (keep || hop->action == RINX_A_ADD_FINISH) {
			res = bpf_map_lookup_elem(hop->action == RINX_A_ADD_FWD ?
						  (void *)&partial :
						  (void *)&result, &idx);
			if (!res)
				return rinx_count(RINX_STAT_ABORTED,
						  XDP_ABORTED);
		}
		if (!sh)
			return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
		/* passed on already this round: a duplicate (a loss further
		 * on is asked for by the node after it, hop by hop) */
		if (keep && res && res->epoch == epoch)
			return rinx_count(RINX_STAT_DROP_DUP, XDP_DROP);
		if (sh->epoch != epoch)
			return slow_path(ctx, RINX_STAT_SLOW_NOT_READY);
		f.h->exp = bpf_htons(rinx_block_add(f.v,
					(__s16)bpf_ntohs(f.h->exp),
					sh->v, sh->exp, nv));
		f.h->flags |= sh->flags;
		f.h->step++;
		if (hop->action == RINX_A_ADD_FWD) {
			if (res) {
				res->step = f.h->step;
				store(res, &f, epoch, nv);
			}
			ret = forward(&f, job, job->slot, hop->to);
			return ret == XDP_TX ?
				rinx_count(RINX_STAT_REDUCE_FWD, ret) : ret;
		}
		if (!res)
			return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
		store_job(res, &f, epoch, job->slot, nv);
		f.h->type = RINX_T_GATHER;
		f.h->step = 0;
		ret = forward(&f, job, job->slot, hop->to);
		return ret == XDP_TX ?
			rinx_count(RINX_STAT_REDUCE_FINISH, ret) : ret;
	case RINX_A_STORE_FWD:
	case RINX_A_STORE_END:
		res = bpf_map_lookup_elem(&result, &idx);
		if (!res)
			return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
		if ((job->flags & RINX_JOB_KEEP) && res->epoch == epoch)
			return rinx_count(RINX_STAT_DROP_DUP, XDP_DROP);
		cur = store_job(res, &f, epoch, job->slot, nv);
		if (hop->action == RINX_A_STORE_END) {
			rinx_count(RINX_STAT_GATHER_END, 0);
			ret = recycle(&f, job, epoch, cur, nv);
			if (ret < 0)
				return XDP_DROP;
			return ret == XDP_TX ? rinx_count(RINX_STAT_RECYCLED, ret) :
					       ret;
		}
		f.h->step++;
		ret = forward(&f, job, job->slot, hop->to);
		return ret == XDP_TX ? rinx_count(RINX_STAT_GATHER_FWD, ret) : ret;
	case RINX_A_AGG_FWD:
	case RINX_A_AGG_FINISH:
		a = bpf_map_lookup_elem(&aggs, &idx);
		sh = NULL;
		if (hop->flags & RINX_HOP_SELF)
			sh = bpf_map_lookup_elem(&share, &idx);
		if (!a || (!sh && (hop->flags & RINX_HOP_SELF)))
			return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
		ret = rinx_agg_add(a, &f, epoch, rinx_cover(&f, hop, sender),
				   hop->mask, hop->action == RINX_A_AGG_FINISH,
				   sh, &reset, nv);
		if (reset)
			rinx_count(RINX_STAT_AGG_RESET, 0);
		if (ret == RINX_AGG_OVERLAP)
			return rinx_count(RINX_STAT_AGG_OVERLAP, XDP_DROP);
		if (ret == RINX_AGG_SHAPE)
			return rinx_count(RINX_STAT_DROP_SHAPE, XDP_DROP);
		/* the others' sum waits for this host's share: the trainer
		 * adds it and completes the slot */
		if (ret == RINX_AGG_NEED_SELF)
			return slow_path(ctx, RINX_STAT_SLOW_SELF);
		if (ret == RINX_AGG_FINAL && type == RINX_T_CONTRIB &&
		    (hop->flags & RINX_HOP_ANSWER)) {
			/* the worker missed the finished block: send it. It
			 * expects the step of this member's gather into the
			 * rack: 0 where the block finishes, else out + 1 */
			f.h->type = RINX_T_GATHER;
			f.h->step = hop->action == RINX_A_AGG_FINISH ?
				    hop->out_step : hop->out_step + 1;
			ret = forward(&f, job, job->slot, sender);
			return ret == XDP_TX ?
			       rinx_count(RINX_STAT_AGG_RESEND, ret) : ret;
		}
		/* a partial sum again after the block finished: whoever
		 * misses it asks for the finished block itself (NACK) */
		if (ret == RINX_AGG_DUP ||
		    (ret == RINX_AGG_FINAL && hop->action == RINX_A_AGG_FWD))
			return rinx_count(RINX_STAT_DROP_AGG_DUP, XDP_DROP);
		if (ret == RINX_AGG_RESEND || ret == RINX_AGG_FINAL)
			reset = -1;	/* sent on again below: a retransmission
					 * repairs a loss further on */
		if (ret == RINX_AGG_STALE)
			return rinx_count(RINX_STAT_DROP_AGG_STALE, XDP_DROP);
		if (ret == RINX_AGG_CONSUMED)
			return rinx_count(RINX_STAT_AGG_ADD, XDP_DROP);
		f.h->step = hop->out_step;
		what = reset < 0 ? RINX_STAT_AGG_REEMIT : RINX_STAT_AGG_DONE;
		if (hop->action == RINX_A_AGG_FWD) {
			f.h->type = RINX_T_REDUCE;
			ret = forward(&f, job, job->slot, hop->to);
			return ret == XDP_TX ? rinx_count(what, ret) : ret;
		}
		/* an aggregating host is one of the workers: it keeps the sum */
		res = bpf_map_lookup_elem(&result, &idx);
		if (!res)
			return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
		f.h->type = RINX_T_GATHER;
		store_job(res, &f, epoch, job->slot, nv);
		if (hop->rack == RINX_NO_RACK && hop->to == job->self)
			return rinx_count(what, XDP_DROP);	/* ends here */
		if (hop->rack == RINX_NO_RACK)
			ret = forward(&f, job, job->slot, hop->to);
		else
			ret = to_group(&f, job, job->slot, hop->to, hop->rack);
		return ret == XDP_TX ? rinx_count(what, ret) : ret;
	case RINX_A_MCAST_FWD:
	case RINX_A_MCAST_END:
		res = bpf_map_lookup_elem(&result, &idx);
		a = bpf_map_lookup_elem(&aggs, &idx);
		if (!res || !a)
			return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
		store_job(res, &f, epoch, job->slot, nv);
		rinx_agg_keep(a, &f, epoch, nv);
		f.h->step = hop->out_step;
		ret = to_group(&f, job, job->slot,
			       hop->action == RINX_A_MCAST_FWD ? hop->to :
			       job->self, hop->rack);
		return ret == XDP_TX ? rinx_count(RINX_STAT_AGG_MCAST, ret) : ret;
	}
	return rinx_count(RINX_STAT_DROP_NO_ROUTE, XDP_DROP);
}

SEC("xdp.frags")
int rinx_host(struct xdp_md *ctx)
{
	struct rinx_frame f = {};
	struct rinx_job *job;
	__u32 jid, type, sender, bad;
	int ret, parsed;

	parsed = rinx_parse(ctx, rinx_port_be, &f);
	if (parsed == RINX_P_OTHER)
		return rinx_count(RINX_STAT_PASS, XDP_PASS);
	rinx_count(RINX_STAT_RX, 0);
	if (parsed == RINX_P_SHORT)
		return rinx_count(RINX_STAT_DROP_SHORT, XDP_DROP);
	if (parsed == RINX_P_VERSION)
		return rinx_count(RINX_STAT_DROP_VERSION, XDP_DROP);

	type = f.h->type;
	if (type != RINX_T_REDUCE && type != RINX_T_GATHER &&
	    type != RINX_T_CONTRIB && type != RINX_T_HELLO &&
	    type != RINX_T_NACK && type != RINX_T_RNACK && type != RINX_T_PS)
		return rinx_count(RINX_STAT_DROP_TYPE, XDP_DROP);
	jid = bpf_ntohl(f.h->job);
	job = bpf_map_lookup_elem(&jobs, &jid);
	if (!job)
		return rinx_count(type == RINX_T_HELLO ? RINX_STAT_HELLO_EARLY :
			     RINX_STAT_DROP_JOB, XDP_DROP);
	if (bpf_be64_to_cpu(f.h->token) != job->token)
		return rinx_count(RINX_STAT_DROP_TOKEN, XDP_DROP);
	/* "do you know the job?": yes, now that it is installed here; the
	 * answer needs no trainer, which may be busy elsewhere after open */
	if (type == RINX_T_HELLO && f.h->step == RINX_HELLO_OPEN) {
		bad = rinx_check_asker(&f, job, &sender);
		if (bad)
			return rinx_count(bad, bad == RINX_STAT_ABORTED ?
					  XDP_ABORTED : XDP_DROP);
		f.h->step = RINX_HELLO_OPEN_YES;
		if (bpf_ntohl(f.h->block) != job->plan_id) {
			/* the asker runs another plan: say which one */
			f.h->step = RINX_HELLO_OPEN_OTHER;
			f.h->block = bpf_htonl(job->plan_id);
		} else if (bpf_ntohs(f.h->count) != job->bval) {
			/* or blocks of another size (another MTU) */
			f.h->step = RINX_HELLO_OPEN_SIZE;
			f.h->count = bpf_htons(job->bval);
		}
		ret = forward(&f, job, job->slot, sender);
		return ret == XDP_TX ? rinx_count(RINX_STAT_HELLO_YES, ret) :
				       ret;
	}
	/* other control frames of a known job are the trainer's business */
	if (type == RINX_T_HELLO)
		return slow_path(ctx, RINX_STAT_SLOW_HELLO);
	if (type == RINX_T_PS)
		return parsed == RINX_P_OK ?
		       rinx_ps(ctx, &f, job, jid, RINX_BLOCK_VALUES) :
		       rinx_ps(ctx, &f, job, jid, RINX_BLOCK_VALUES_MIN);
	/* the data path, built for the frame's size */
	if (parsed == RINX_P_OK)
		return host_block(ctx, &f, job, type, RINX_BLOCK_VALUES);
	return host_block(ctx, &f, job, type, RINX_BLOCK_VALUES_MIN);
}
