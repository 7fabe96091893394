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
 *
 * The checks and the actions of a data frame are bpf/hop_kern_user.h's,
 * which the slow path compiles too; this file supplies them its maps and
 * XDP_TX (the env_* functions) and what XDP alone does: the HELLO answer,
 * NACK and RNACK, and recycling.
 */
#include "bpf/tables.bpf.h"
#include "bpf/frags.bpf.h"
#include "bpf/fair_kern_user.h"

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
 * block's origin); its round tells the trainer the reduce passed here. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RINX_DEFAULT_JOBS * RINX_DEFAULT_WINDOW);
	__type(key, __u32);
	__type(value, struct rinx_slot);
} partial SEC(".maps");

/* The map of a block (enum hop_map), for the slots of a jumbo block. */
static __always_inline void *block_map(int map)
{
	if (map == HOP_SHARE)
		return &share;
	return map == HOP_RESULT ? (void *)&result : (void *)&partial;
}

/* The payload of frame f from the block whose first slot src is entry idx
 * of map: its values, then exponent and flags. 0, or -1 (internal). */
static __always_inline int slots_to_frame(struct xdp_md *ctx,
					  struct rinx_frame *f,
					  struct rinx_slot *src, int map,
					  __u32 idx, const int nv)
{
	struct rinx_slot *s[RINX_JUMBO_SLOTS];

	if (nv == RINX_BLOCK_VALUES_JUMBO) {
		if (rinx_jumbo_slots(block_map(map), idx, src, s) ||
		    rinx_jumbo_run(ctx, s, RINX_J_TO_FRAME, 0))
			return -1;
	} else {
		rinx_copy_vals(f->v, src->v, nv);
	}
	f->h->exp = bpf_htons((__u16)src->exp);
	f->h->flags = src->flags;
	return 0;
}

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

/* A job slot's receive ring, for a trainer whose process does not own the
 * interface's AF_XDP sockets (struct rinx_ring_frame records). */
struct slot_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RINX_RING_BYTES);
};

/* job slot -> its receive ring; absent: the slot's frames go to the
 * sockets in xsks (set and cleared by the slot's trainer). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, RINX_MAX_JOBS);
	__type(key, __u32);
	__array(values, struct slot_ring);
} rings SEC(".maps");

/* job slot -> its contributions to this host's aggregators in the last
 * two epochs; RINX_MAX_JOBS: the node's (bpf/fair_kern_user.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RINX_MAX_JOBS + 1);
	__type(key, __u32);
	__type(value, struct rinx_fair);
} fairs SEC(".maps");

/* The frame is copied into the ring and dropped: no socket can take it,
 * since a socket only receives from the queue it is bound to. */
static __always_inline int to_ring(struct xdp_md *ctx, void *ring, __u32 why)
{
	__u64 len = bpf_xdp_get_buff_len(ctx);
	struct rinx_ring_frame *r;

	if (len < 1 || len > RINX_FRAME_MAX)
		return rinx_count(RINX_STAT_DROP_NO_XSK, XDP_DROP);
	r = bpf_ringbuf_reserve(ring, sizeof(*r), 0);
	if (!r)
		return rinx_count(RINX_STAT_DROP_NO_XSK, XDP_DROP);
	r->len = len;
	if (bpf_xdp_load_bytes(ctx, 0, r->data, len)) {
		bpf_ringbuf_discard(r, 0);
		return rinx_count(RINX_STAT_DROP_NO_XSK, XDP_DROP);
	}
	/* the trainer polls its ring: no wakeup to pay for */
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return rinx_count(why, XDP_DROP);
}

static __always_inline int slow_path(struct xdp_md *ctx, struct rinx_job *job,
				     __u32 why)
{
	__u32 slot = job->slot;
	void *ring = bpf_map_lookup_elem(&rings, &slot);

	if (ring)
		return to_ring(ctx, ring, why);
	if (bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_DROP) ==
	    XDP_REDIRECT)
		return rinx_count(why, XDP_REDIRECT);
	return rinx_count(RINX_STAT_DROP_NO_XSK, XDP_DROP);
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

/* Pacer of the own blocks: may one leave now? Takes its departure time
 * with a compare-and-swap shared with the trainer's sender, which runs the
 * same rule (user/comm/cc.c); losing the race means another sender took the
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
static __always_inline int recycle(struct xdp_md *ctx, struct rinx_frame *f,
				   struct rinx_job *job, __u32 round,
				   struct rinx_cursor *cur, const int nv)
{
	struct rinx_slot *sh;
	__u32 j, b, idx, k, nown = job->nown, plen = job->plen;
	__u16 to;
	__u8 type;

	if (!nown || nown > RINX_CMAP_MAX || !plen || plen > RINX_CMAP_MAX)
		return -1;
	if (!cur || cur->round != round)
		return -1;
	/* The next own block, claimed only once its share is written: the
	 * trainer converts a round's input while the first blocks travel
	 * (user/comm/allreduce.c), and sends what the host program leaves. */
	j = *(volatile __u32 *)&cur->next;
	b = (j / nown) * plen + job->own[(j % nown) & (RINX_CMAP_MAX - 1)];
	if (b >= job->nblocks || b >= rinx_window / RINX_BLOCK_SLOTS(nv))
		return -1;
	k = job->cmap[(b % plen) & (RINX_CMAP_MAX - 1)] & (RINX_MAX_CLASSES - 1);
	to = job->start_to[k];
	type = job->start_type[k];
	if (to == RINX_NO_SEND)
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	idx = job->slot * rinx_window + b * RINX_BLOCK_SLOTS(nv);
	sh = bpf_map_lookup_elem(&share, &idx);
	if (!sh || sh->round != round)
		return -1;
	if (cur->gap_ns && !pace_ok(cur)) {
		rinx_count(RINX_STAT_PACED, 0);
		return -1;
	}
	/* another CPU or the trainer took it meanwhile: theirs to send */
	if (__sync_val_compare_and_swap(&cur->next, j, j + 1) != j)
		return -1;
	/* claimed: a failure now loses the block (the trainer's timers
	 * resend it), so it must show */
	if (slots_to_frame(ctx, f, sh, HOP_SHARE, idx, nv))
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	f->h->type = type;
	f->h->step = 0;
	/* a new block: the marks of the old one are counted already */
	f->ip->tos = (f->ip->tos & ~RINX_ECN_MASK) | RINX_ECN_ECT0;
	f->h->block = bpf_htonl(b);
	f->h->klass = bpf_htons(k);
	f->h->count = bpf_htons(sh->count);
	/* the trainer times the block's round trip from here */
	sh->sent_us = (__u32)(bpf_ktime_get_ns() / 1000);
	return forward(f, job, job->slot, to);
}

/* A NACK for a block not finished here, at an aggregating host: what its
 * slot holds decides (rinx_agg_nack). */
static __always_inline int nack_agg(struct rinx_frame *f,
				    struct rinx_job *job, __u32 round,
				    __u32 block, __u32 who, const int nv)
{
	struct rinx_agg *a = rinx_agg_slot(job, rinx_window, block);
	__u16 to = 0;
	int ret, what;

	what = rinx_agg_nack_at(f, job, a, round, block, who, &to, nv);
	if (what == RINX_NACK_MISS)
		return rinx_count(RINX_STAT_NACK_MISS, XDP_DROP);
	ret = forward(f, job, job->slot, to);
	return ret != XDP_TX ? ret :
	       rinx_count(what == RINX_NACK_PULL ? RINX_STAT_NACK_PULL :
			  RINX_STAT_NACK_SUM, ret);
}

/* NACK: the asker (the frame's sender) misses the finished block; answer
 * with the stored result if this node has it for that round (else an
 * aggregator that lacks the asker's share asks for it, nack_agg). Any
 * node that keeps the block may answer: results stay until the next
 * round's gather, which cannot come before the asker has finished this
 * one. */
static __always_inline int nack(struct xdp_md *ctx, struct rinx_frame *f,
				struct rinx_job *job, __u32 round, __u32 block,
				const int nv)
{
	struct rinx_slot *res;
	__u32 idx, who, bad;
	int ret;

	bad = rinx_check_asker(f, job, &who);
	if (bad)
		return rinx_count(bad, bad == RINX_STAT_ABORTED ? XDP_ABORTED :
								XDP_DROP);
	idx = job->slot * rinx_window + block * RINX_BLOCK_SLOTS(nv);
	res = bpf_map_lookup_elem(&result, &idx);
	if (!res)
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	if (res->round != round || res->count != bpf_ntohs(f->h->count))
		return nack_agg(f, job, round, block, who, nv);
	if (slots_to_frame(ctx, f, res, HOP_RESULT, idx, nv))
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	f->h->type = RINX_T_GATHER;
	ret = forward(f, job, job->slot, who);
	return ret == XDP_TX ? rinx_count(RINX_STAT_REPAIR, ret) : ret;
}

/* RNACK: the asker (the frame's sender) missed the reduce of the block
 * that this host sends it: send it again, as it left. At an add and
 * forward hop that is the kept partial sum; at the class's origin its
 * share, once the pacer let the block's pattern round start here (the
 * trainer's timers resend what it never sent); a worker's share the same
 * way when its aggregator pulls it (bpf/agg.bpf.h), and an aggregator's
 * partial sum when the next one pulls it (rinx_agg_rnack). The loss costs this
 * one hop, not the block's whole path from its origin. */
static __always_inline int rnack(struct xdp_md *ctx, struct rinx_frame *f,
				 struct rinx_job *job, __u32 round, __u32 block,
				 __u32 klass, const int nv)
{
	struct rinx_slot *src = NULL;
	struct rinx_cursor *cur;
	struct rinx_hop *hop;
	__u32 idx, who, bad, k, slot = job->slot;
	__u8 step = 0, type = RINX_T_REDUCE;
	__u8 start = job->start_type[klass & (RINX_MAX_CLASSES - 1)];
	int ret, map = HOP_PARTIAL;

	bad = rinx_check_asker(f, job, &who);
	if (bad)
		return rinx_count(bad, bad == RINX_STAT_ABORTED ? XDP_ABORTED :
								XDP_DROP);
	if (round != job->round)
		return rinx_count(RINX_STAT_RNACK_MISS, XDP_DROP);
	idx = slot * rinx_window + block * RINX_BLOCK_SLOTS(nv);
	k = RINX_HOP_INDEX(slot, klass, RINX_T_REDUCE);
	hop = bpf_map_lookup_elem(&hops, &k);
	if (hop && hop->action == RINX_A_ADD_FWD && hop->to == who) {
		src = bpf_map_lookup_elem(&partial, &idx);
		if (src && src->round == round)
			step = (__u8)src->step;
		else
			src = NULL;
	} else if (job->start_to[klass & (RINX_MAX_CLASSES - 1)] == who &&
		   (start == RINX_T_REDUCE || start == RINX_T_CONTRIB)) {
		/* a ring origin's reduce, or a worker's share its
		 * aggregator pulls (bpf/agg.bpf.h) */
		type = start;
		cur = bpf_map_lookup_elem(&cursors, &slot);
		src = bpf_map_lookup_elem(&share, &idx);
		map = HOP_SHARE;
		if (!cur || cur->round != round || !src ||
		    src->round != round ||
		    (block / job->plen) * job->nown >= cur->next)
			src = NULL;
	} else {
		/* an aggregation's partial sum, for the next one that
		 * pulled it (rinx_agg_rnack) */
		if (!rinx_agg_rnack(f, job, rinx_window, round, block, who,
				    nv))
			return rinx_count(RINX_STAT_RNACK_MISS, XDP_DROP);
		ret = forward(f, job, slot, who);
		return ret == XDP_TX ? rinx_count(RINX_STAT_RREPAIR, ret) :
				       ret;
	}
	if (!src || src->count != bpf_ntohs(f->h->count))
		return rinx_count(RINX_STAT_RNACK_MISS, XDP_DROP);
	if (slots_to_frame(ctx, f, src, map, idx, nv))
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	/* a late duplicate of the ask can come after the block finished
	 * here, when its slot may be rewritten for the next round (the
	 * trainer's early share, the next round's kept sum taken early): a
	 * copy that met the rewrite holds values of both rounds */
	if (*(const volatile __u32 *)&src->round != round)
		return rinx_count(RINX_STAT_RNACK_MISS, XDP_DROP);
	f->h->type = type;
	f->h->step = step;
	f->ip->tos = (f->ip->tos & ~RINX_ECN_MASK) | RINX_ECN_ECT0;
	ret = forward(f, job, slot, who);
	return ret == XDP_TX ? rinx_count(RINX_STAT_RREPAIR, ret) : ret;
}

/* ---- the hop (bpf/hop_kern_user.h) on this program's maps ---- */

struct hop_env {
	struct xdp_md *ctx;
	struct rinx_frame *f;
	struct rinx_job *job;
	__u32 window;
};

static __always_inline struct rinx_slot *env_share(struct hop_env *x,
						   __u32 idx)
{
	return bpf_map_lookup_elem(&share, &idx);
}

static __always_inline struct rinx_slot *env_result(struct hop_env *x,
						    __u32 idx)
{
	return bpf_map_lookup_elem(&result, &idx);
}

static __always_inline struct rinx_slot *env_partial(struct hop_env *x,
						     __u32 idx)
{
	return bpf_map_lookup_elem(&partial, &idx);
}

static __always_inline struct rinx_cursor *env_cursor(struct hop_env *x)
{
	__u32 k = x->job->slot;

	return bpf_map_lookup_elem(&cursors, &k);
}

static __always_inline struct rinx_hop *env_hop(struct hop_env *x,
						__u32 klass, __u32 type)
{
	__u32 k = RINX_HOP_INDEX(x->job->slot, klass, type);

	return bpf_map_lookup_elem(&hops, &k);
}

/* An id past the table finds another slot's entry or none: the sender
 * check refuses it before reading the entry. */
static __always_inline struct rinx_node *env_node(struct hop_env *x, __u32 id)
{
	__u32 k = x->job->slot * RINX_MAX_NODES + id;

	return bpf_map_lookup_elem(&nodes, &k);
}

static __always_inline __be32 env_saddr(struct hop_env *x)
{
	return x->f->ip->saddr;
}

static __always_inline int env_ce(struct hop_env *x)
{
	return (x->f->ip->tos & RINX_ECN_MASK) == RINX_ECN_CE;
}

static __always_inline int env_put_vals(struct hop_env *x,
					struct rinx_slot *r, int map,
					__u32 idx, const int nv)
{
	struct rinx_slot *s[RINX_JUMBO_SLOTS];

	if (nv != RINX_BLOCK_VALUES_JUMBO) {
		rinx_copy_vals(r->v, x->f->v, nv);
		return 0;
	}
	if (rinx_jumbo_slots(block_map(map), idx, r, s))
		return -1;
	return rinx_jumbo_run(x->ctx, s, RINX_J_TO_SLOTS, 0);
}

static __always_inline int env_add_share(struct hop_env *x,
					 struct rinx_slot *sh, __u32 idx,
					 __s16 dexp, __s16 *e, const int nv)
{
	struct rinx_slot *s[RINX_JUMBO_SLOTS];

	if (nv != RINX_BLOCK_VALUES_JUMBO) {
		*e = rinx_block_add(x->f->v, dexp, sh->v, sh->exp, nv);
		return 0;
	}
	if (rinx_jumbo_slots(&share, idx, sh, s))
		return -1;
	return rinx_jumbo_add(x->ctx, s, dexp, sh->exp, e);
}

/* volatile: a second read after the values (hop_add) is a real load */
static __always_inline __u32 env_load_round(const __u32 *p)
{
	return *(const volatile __u32 *)p;
}

/* The trainer polls a slot's round: it must become visible after the
 * values. BPF has no fence; the JIT keeps program order and x86 is TSO,
 * and this barrier keeps the compiler from sinking the stores. */
static __always_inline void env_store_round(__u32 *p, __u32 round)
{
	asm volatile("" ::: "memory");
	*p = round;
}

static __always_inline int env_drop(struct hop_env *x, __u32 stat)
{
	return rinx_count(stat, stat == RINX_STAT_ABORTED ? XDP_ABORTED :
							    XDP_DROP);
}

static __always_inline int env_done(struct hop_env *x, __u32 stat)
{
	return rinx_count(stat, XDP_DROP);
}

static __always_inline int env_slow(struct hop_env *x, __u32 stat)
{
	return slow_path(x->ctx, x->job, stat);
}

static __always_inline int env_send(struct hop_env *x, __u16 to, __u32 stat)
{
	int ret = forward(x->f, x->job, x->job->slot, to);

	return ret == XDP_TX ? rinx_count(stat, ret) : ret;
}

/* Agent host: a complete slot or an arriving gather leaves for the rack's
 * group (and on to the next member with `onward`). */
static __always_inline int env_group(struct hop_env *x, __u16 to, __u8 rack,
				     int onward, __u32 stat)
{
	int ret = forward(x->f, x->job, x->job->slot, to);

	if (ret != XDP_TX)
		return ret;
	rinx_to_group(x->f, rack, onward);
	return rinx_count(stat, ret);
}

static __always_inline void env_count(struct hop_env *x, __u32 stat)
{
	rinx_count(stat, 0);
}

/* A round whose size disagrees with the job's: the trainer names the
 * sender (its tensor is another). */
static __always_inline int env_other_tensor(struct hop_env *x)
{
	return slow_path(x->ctx, x->job, RINX_STAT_SLOW_MISMATCH);
}

static __always_inline int env_repair(struct hop_env *x, __u32 type,
				      __u32 round, __u32 block, __u32 klass,
				      const int nv)
{
	if (type == RINX_T_NACK)
		return nack(x->ctx, x->f, x->job, round, block, nv);
	return rnack(x->ctx, x->f, x->job, round, block, klass, nv);
}

/* The frame added into the slot, with this host's share if the hop adds
 * it (rinx_agg_add). */
static __always_inline int env_agg_slot(struct hop_env *x,
					const struct rinx_hop *hop, __u32 idx,
					__u32 round, __u64 cov, const int nv)
{
	struct rinx_agg *a = bpf_map_lookup_elem(&aggs, &idx);
	struct rinx_slot *sh = NULL;
	struct rinx_fair *fj, *fn;
	__u32 e = (__u32)(bpf_ktime_get_coarse_ns() >> RINX_FAIR_SHIFT);
	__u32 node = RINX_MAX_JOBS;
	/* a rack's agent (its sum goes to its rack), not a server or a
	 * tree's root (to every host) or a tree node (to its parent) */
	int agent = hop->rack != RINX_NO_RACK && hop->rack != RINX_GROUP_EVERY;
	int ret, reset;

	if (nv > RINX_BLOCK_VALUES)	/* refused before (hop_block) */
		return RINX_AGG_SHAPE;
	if (hop->flags & RINX_HOP_SELF) {
		sh = bpf_map_lookup_elem(&share, &idx);
		if (!sh)
			return RINX_AGG_NO_SLOT;
	}
	if (!a)
		return RINX_AGG_NO_SLOT;
	fj = bpf_map_lookup_elem(&fairs, &x->job->slot);
	fn = bpf_map_lookup_elem(&fairs, &node);
	if (fj && fn)
		rinx_fair_note(fj, fn, e, nv);
	ret = rinx_agg_add(a, x->f, round, cov, hop->mask,
			   hop->action == RINX_A_AGG_FINISH, sh, &reset, nv);
	if (reset)
		rinx_count(RINX_STAT_AGG_RESET, 0);
	if (ret == RINX_AGG_COMPLETE && fn) {
		/* the jobs that contributed here in the epoch before, read
		 * once for the three uses below */
		__u32 n = rinx_fair_prev_jobs(fn, e);

		/* a job below its fair share of this aggregator's
		 * contributions: its marked sum may leave unmarked (the
		 * frame is readdressed after this, which fixes the
		 * checksum, or only stored here) */
		if (fj && env_ce(x) &&
		    rinx_fair_unmark(fj, fn, e, n, bpf_get_prandom_u32(),
				     agent ? RINX_FAIR_GAIN_RACK :
					     RINX_FAIR_GAIN)) {
			x->f->ip->tos = (x->f->ip->tos & ~RINX_ECN_MASK) |
					RINX_ECN_ECT0;
			rinx_count(RINX_STAT_FAIR_UNMARK, 0);
		}
		/* jobs share this agent's rack aggregation: the trainers
		 * cut less deep for the marks on its sums (user/comm/cc.c).
		 * Not a server's or a tree root's: its port takes every
		 * worker of every job, and four ps-ina jobs cutting at most
		 * a fifth overran it */
		if (agent && n >= 2)
			x->f->h->flags |= RINX_F_SHARED;
		/* and how many: the trainers' ceilings divide */
		x->f->h->flags = rinx_fair_jobs(x->f->h->flags, n);
	}
	return ret;
}

static __always_inline int env_pull(struct hop_env *x,
				    const struct rinx_hop *hop, __u32 round,
				    __u32 sender)
{
	return rinx_agg_pull(x->f, x->job, hop, rinx_window, round, sender);
}

static __always_inline int env_keep_final(struct hop_env *x, __u32 idx,
					  __u32 round, const int nv)
{
	struct rinx_agg *a = bpf_map_lookup_elem(&aggs, &idx);

	if (!a || nv > RINX_BLOCK_VALUES)	/* as env_agg_slot */
		return -1;
	rinx_agg_keep(a, x->f, round, nv);
	return 0;
}

/* The gather that ends here becomes this host's next block (recycle). */
static __always_inline int env_gather_end(struct hop_env *x,
					  struct rinx_cursor *cur,
					  __u32 round, const int nv)
{
	int ret;

	rinx_count(RINX_STAT_GATHER_END, 0);
	ret = recycle(x->ctx, x->f, x->job, round, cur, nv);
	if (ret == XDP_ABORTED)
		return ret;
	if (ret < 0)
		return XDP_DROP;
	return ret == XDP_TX ? rinx_count(RINX_STAT_RECYCLED, ret) : ret;
}

static __always_inline void env_added(struct hop_env *x)
{
}

#include "bpf/hop_kern_user.h"

#include "bpf/ps.bpf.h"

/* A data frame of a known job, whose token matched: nv, the frame's
 * values, is a constant in each of the two copies of this code
 * (parse.bpf.h). */
static __always_inline int host_block(struct xdp_md *ctx, struct rinx_frame *fp,
				      struct rinx_job *job, __u32 type,
				      const int nv)
{
	struct rinx_frame f = *fp;
	struct hop_env x = {
		.ctx = ctx, .f = &f, .job = job, .window = rinx_window,
	};

	return hop_block(&x, type, nv);
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
	/* a header alone: only a parameter server's frame without values */
	if (parsed == RINX_P_HDR && f.h->type != RINX_T_PS)
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
		return slow_path(ctx, job, RINX_STAT_SLOW_HELLO);
	/* one test of the type: a second one would let the verifier walk
	 * a jumbo frame into a store's code (it keeps no "type != PS") */
	if (type == RINX_T_PS) {
		/* a store's blocks hold one slot's values */
		if (parsed == RINX_P_OK_JUMBO)
			return rinx_count(RINX_STAT_DROP_SHAPE, XDP_DROP);
		return parsed == RINX_P_OK ?
		       rinx_ps(ctx, &f, job, jid, RINX_BLOCK_VALUES) :
		       parsed == RINX_P_OK_MIN ?
		       rinx_ps(ctx, &f, job, jid, RINX_BLOCK_VALUES_MIN) :
		       rinx_ps(ctx, &f, job, jid, 0);
	}
	/* the data path, built for the frame's size */
	if (parsed == RINX_P_OK_JUMBO)
		return host_block(ctx, &f, job, type, RINX_BLOCK_VALUES_JUMBO);
	if (parsed == RINX_P_OK)
		return host_block(ctx, &f, job, type, RINX_BLOCK_VALUES);
	return host_block(ctx, &f, job, type, RINX_BLOCK_VALUES_MIN);
}
