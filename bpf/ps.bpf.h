/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The parameter server's data plane (RINX_T_PS frames, docs/rinx.md
 * "Parameter server"): at the job's server, a worker's push is added into
 * the store and acknowledged, a pull is answered with the stored block,
 * both by XDP_TX; at a worker, the server's answers go to the trainer.
 *
 * Part of the host program: included by bpf/host.bpf.c after its maps,
 * slow_path() and forward(), which it uses.
 *
 * The store of a job slot is the store map's entries RINX_PS_KEY(slot, b)
 * (one per block: values, exponent, lock, and the push number each worker
 * last added into it), made by the server's trainer at open: the store's
 * memory follows its size, not the slot's window. Values and push numbers
 * are written here only under the block's lock, so two workers pushing into one block
 * on two CPUs are added one after the other, and a push (its number, the
 * same on every resend) is added once whatever the network repeats.
 * Every block's exponent is fixed when the server opens the store, so
 * pushes add as integers without any agreement: a push must come at that
 * exponent, and one that would overflow a value is refused whole.
 */
#ifndef RINX_PS_BPF_H
#define RINX_PS_BPF_H

/* job slot -> that job's parameter server: its server, the store's size,
 * the staleness bound and the workers' clocks (rinx_ps_conf) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RINX_MAX_JOBS);
	__type(key, __u32);
	__type(value, struct rinx_ps_conf);
} psconf SEC(".maps");

/* RINX_PS_KEY(slot, block) -> a block of that slot's store; entries made
 * and deleted by the server's trainer (user/comm/ps.c), so the kernel
 * memory is what the open stores hold (uapi/rinx.h) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, RINX_PS_MAX_BLOCKS);
	__type(key, __u32);
	__type(value, struct rinx_ps_block);
} store SEC(".maps");

struct ps_min_ctx {
	struct rinx_ps_conf *pc;
	__u64 nb, min;
	__u32 who;
};

static long ps_min_one(__u64 i, void *data)
{
	struct ps_min_ctx *m = data;
	__u64 clk;

	if (i >= RINX_MAX_NODES)
		return 1;
	if (m->pc->left & (1ULL << i))
		return 0;
	clk = m->pc->applied[i] / m->nb;
	if (clk < m->min) {
		m->min = clk;
		m->who = i;
	}
	return 0;
}

/* The clock (pushes completed) of the slowest worker that has not left,
 * and its node id in *who; all ones when every worker left. A worker's
 * clock is the blocks it pushed over the blocks of a push: it pushes the
 * whole store each time, each block once (resends are not counted). A
 * bpf_loop: the verifier walks the body once, where an unrolled loop of
 * 64 branches at every answer's call site exceeds its budget. */
static __always_inline __u64 ps_min_clock(struct rinx_ps_conf *pc,
					  __u32 nnodes, __u32 *who)
{
	struct ps_min_ctx m = {
		.pc = pc, .nb = pc->nblocks ? pc->nblocks : 1,
		.min = ~0ULL, .who = 0xffff,
	};

	bpf_loop(nnodes < RINX_MAX_NODES ? nnodes : RINX_MAX_NODES,
		 ps_min_one, &m, 0);
	*who = m.who;
	return m.min;
}

/* An answer that ps_send is to send: to node `to`, counted as `stat`. */
struct ps_ans {
	__u32 to, stat;
};

/* Not an XDP action: "send the answer in struct ps_ans" (ps_send). */
#define PS_ANSWER	0xff

/* Turns request f into answer `op` to node `to`, with the slowest clock;
 * ps_send sends it. */
static __always_inline int ps_answer(struct rinx_frame *f,
				     struct rinx_job *job,
				     struct rinx_ps_conf *pc, __u32 to,
				     __u8 op, __u32 stat, struct ps_ans *a)
{
	__u32 who;
	__u64 m = ps_min_clock(pc, job->nnodes, &who);

	f->h->step = op;
	f->h->cover = bpf_cpu_to_be64(m);
	f->h->klass = bpf_htons((__u16)who);
	a->to = to;
	a->stat = stat;
	return PS_ANSWER;
}

/* f's headers again after the frame's tail moved (the verifier forgets
 * every packet pointer then), with room for nv values (0: none); the IP
 * and UDP lengths set to the frame's new length. 0, or -1 when too short. */
static __always_inline int ps_reframe(struct xdp_md *ctx, struct rinx_frame *f,
				      const int nv)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + RINX_FRAME_HDR_LEN + nv * 4 > data_end)
		return -1;
	f->eth = data;
	f->ip = (void *)(f->eth + 1);
	f->udp = (void *)(f->ip + 1);
	f->h = (void *)(f->udp + 1);
	f->v = (void *)(f->h + 1);
	f->ip->tot_len = bpf_htons((__u16)(data_end - data - sizeof(*f->eth)));
	f->udp->len = bpf_htons((__u16)(data_end - data - sizeof(*f->eth) -
					sizeof(*f->ip)));
	return 0;
}

/* Sends answer a (the frame made by ps_answer). An answer without values
 * (all but VALUE) leaves as its header alone: a push's acknowledgment
 * does not carry the push back, so the server's link carries each block
 * once each way (a push in, a pulled block out) and a worker's link the
 * same. Where the driver cannot cut the tail, the answer leaves whole
 * (the worker takes both). */
static __always_inline int ps_send(struct xdp_md *ctx, struct rinx_frame *f,
				   struct rinx_job *job, struct ps_ans *a)
{
	long len = (long)ctx->data_end - (long)ctx->data;
	int ret;

	if (f->h->step != RINX_PS_VALUE && len > RINX_FRAME_HDR_LEN)
		bpf_xdp_adjust_tail(ctx, (int)(RINX_FRAME_HDR_LEN - len));
	if (ps_reframe(ctx, f, 0))
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	ret = forward(f, job, job->slot, a->to);
	return ret == XDP_TX ? rinx_count(a->stat, ret) : ret;
}

/* Would dst + src overflow a value? Summed as unsigned (wrapping): a sum
 * whose sign differs from both operands' overflowed. Read-only, so a
 * refused push leaves the block untouched. */
static __always_inline int ps_overflows(const __s32 *dst, const __s32 *src,
					const int nv)
{
	__s32 o = 0, s;
	int i;

#pragma clang loop unroll_count(8)
	for (i = 0; i < nv; i++) {
		s = (__s32)((__u32)dst[i] + (__u32)src[i]);
		o |= (dst[i] ^ s) & (src[i] ^ s);
	}
	return o < 0;
}

static __always_inline void ps_add(__s32 *dst, const __s32 *src, const int nv)
{
	int i;

#pragma clang loop unroll_count(8)
	for (i = 0; i < nv; i++)
		dst[i] += src[i];
}

/* A push of worker `who` into block `block`: refused past the staleness
 * bound (its iteration, round - 1, more than the bound ahead of the
 * slowest clock) or when a value would overflow; a push number the block
 * has from this worker already is acknowledged again, not added. */
static __always_inline int ps_push(struct rinx_frame *f, struct rinx_job *job,
				   struct rinx_ps_conf *pc, __u32 who,
				   __u32 idx, const int nv, const int pull,
				   struct ps_ans *ans)
{
	__u32 seq = bpf_ntohl(f->h->round), slowest, last;
	struct rinx_ps_block *a = bpf_map_lookup_elem(&store, &idx);
	__u64 m;
	int bad;

	/* the entry is made before the conf lets frames in: none, the
	 * store is being closed */
	if (!a)
		return rinx_count(RINX_STAT_DROP_NO_ROUTE, XDP_DROP);
	if (!seq)
		return rinx_count(RINX_STAT_DROP_BOUNDS, XDP_DROP);
	/* the block's exponent was fixed at open: set once, read unlocked */
	if ((__s16)bpf_ntohs(f->h->exp) != a->exp)
		return rinx_count(RINX_STAT_DROP_SHAPE, XDP_DROP);
	if (pc->staleness != RINX_PS_NO_BOUND) {
		/* clocks only grow: a push that passed once passes again */
		m = ps_min_clock(pc, job->nnodes, &slowest);
		if (m != ~0ULL && seq - 1 > m + pc->staleness)
			return ps_answer(f, job, pc, who, RINX_PS_STALE,
					 RINX_STAT_PS_STALE, ans);
	}
	bpf_spin_lock(&a->lock);
	last = (__u32)a->seq[who & (RINX_MAX_NODES - 1)];
	if ((__s32)(seq - last) <= 0) {
		/* PUSHPULL: the block as it is, this push in it */
		if (pull)
			rinx_copy_vals(f->v, a->v, nv);
		bpf_spin_unlock(&a->lock);
		return ps_answer(f, job, pc, who,
				 pull ? RINX_PS_VALUE : RINX_PS_ACK,
				 RINX_STAT_PS_DUP, ans);
	}
	bad = ps_overflows(a->v, f->v, nv);
	if (!bad) {
		ps_add(a->v, f->v, nv);
		a->seq[who & (RINX_MAX_NODES - 1)] = (__s32)seq;
		/* PUSHPULL: the block right after this push, under the
		 * same lock (no other push between them) */
		if (pull)
			rinx_copy_vals(f->v, a->v, nv);
	}
	bpf_spin_unlock(&a->lock);
	if (bad)
		return ps_answer(f, job, pc, who, RINX_PS_RANGE,
				 RINX_STAT_PS_RANGE, ans);
	__sync_fetch_and_add(&pc->applied[who & (RINX_MAX_NODES - 1)], 1);
	return ps_answer(f, job, pc, who, pull ? RINX_PS_VALUE : RINX_PS_ACK,
			 RINX_STAT_PS_PUSH, ans);
}

/* A pull: the block as one push left it (copied under its lock). */
static __always_inline int ps_pull(struct rinx_frame *f, struct rinx_job *job,
				   struct rinx_ps_conf *pc, __u32 who,
				   __u32 idx, const int nv, struct ps_ans *ans)
{
	struct rinx_ps_block *a = bpf_map_lookup_elem(&store, &idx);
	__s16 exp;

	if (!a)
		return rinx_count(RINX_STAT_DROP_NO_ROUTE, XDP_DROP);
	bpf_spin_lock(&a->lock);
	rinx_copy_vals(f->v, a->v, nv);
	exp = a->exp;
	bpf_spin_unlock(&a->lock);
	f->h->exp = bpf_htons((__u16)exp);
	return ps_answer(f, job, pc, who, RINX_PS_VALUE, RINX_STAT_PS_PULL, ans);
}

/* Not an XDP action: the frame may go on (ps_check). */
#define PS_GO		0xfe

/* What every RINX_T_PS frame must pass: a store of job jid open here, a
 * sender of the job at its own address. Answers (server to worker) go to
 * the trainer; requests must have reached the server. PS_GO with *pcp
 * and *whop set, or the frame's action. */
static __always_inline int ps_check(struct xdp_md *ctx, struct rinx_frame *f,
				    struct rinx_job *job, __u32 jid,
				    struct rinx_ps_conf **pcp, __u32 *whop)
{
	__u32 slot = job->slot, who = bpf_ntohs(f->h->sender), k;
	struct rinx_ps_conf *pc = bpf_map_lookup_elem(&psconf, &slot);
	__u8 op = f->h->step;
	struct rinx_node *from;

	/* no store of this job here (not opened yet, or closed) */
	if (!pc || pc->job != jid || !pc->nblocks)
		return rinx_count(RINX_STAT_DROP_NO_ROUTE, XDP_DROP);
	/* a node of the job, sending from its own address */
	if (who >= RINX_MAX_NODES || who >= job->nnodes)
		return rinx_count(RINX_STAT_DROP_MEMBER, XDP_DROP);
	k = slot * RINX_MAX_NODES + who;
	from = bpf_map_lookup_elem(&nodes, &k);
	if (!from)
		return rinx_count(RINX_STAT_ABORTED, XDP_ABORTED);
	if (f->ip->saddr != from->ip)
		return rinx_count(RINX_STAT_DROP_MEMBER, XDP_DROP);
	if (op >= RINX_PS_ACK && op <= RINX_PS_RANGE) {
		/* an answer: only the server gives them, to a worker */
		if (who != pc->server || job->self == pc->server)
			return rinx_count(RINX_STAT_DROP_SENDER, XDP_DROP);
		return slow_path(ctx, job, RINX_STAT_SLOW_PS);
	}
	if ((op > RINX_PS_LEAVE && op != RINX_PS_PUSHPULL) ||
	    job->self != pc->server)
		return rinx_count(RINX_STAT_DROP_NO_ROUTE, XDP_DROP);
	*pcp = pc;
	*whop = who;
	return PS_GO;
}

/* A leave: its phase's bit set; acknowledged. */
static __always_inline int ps_leave(struct rinx_frame *f, struct rinx_job *job,
				    struct rinx_ps_conf *pc, __u32 who,
				    struct ps_ans *ans)
{
	if (f->h->round)
		__sync_fetch_and_or(&pc->done, 1ULL << who);
	else
		__sync_fetch_and_or(&pc->left, 1ULL << who);
	return ps_answer(f, job, pc, who, RINX_PS_ACK, RINX_STAT_PS_LEAVE,
			 ans);
}

/* The store's key of the block f asks for, if the block and its count fit
 * the store and the job's block size is nv; else -1, counted. */
static __always_inline long ps_block(struct rinx_frame *f,
				     struct rinx_job *job,
				     struct rinx_ps_conf *pc, const int nv)
{
	__u32 block = bpf_ntohl(f->h->block), slot = job->slot;

	if (job->bval != nv) {
		rinx_count(RINX_STAT_DROP_SHAPE, 0);
		return -1;
	}
	if (block >= pc->nblocks || block >= RINX_PS_MAX_BLOCKS ||
	    slot >= RINX_MAX_JOBS ||
	    bpf_ntohs(f->h->count) != (block == pc->nblocks - 1 ?
				       pc->last_count : nv)) {
		rinx_count(RINX_STAT_DROP_BOUNDS, 0);
		return -1;
	}
	return RINX_PS_KEY(slot, block);
}

/* A pull of nv values that came as a header alone (no values to carry):
 * the frame grows by the block it is answered with. */
static __always_inline int ps_grow_pull(struct xdp_md *ctx,
					struct rinx_frame *f,
					struct rinx_job *job,
					struct rinx_ps_conf *pc, __u32 who,
					const int nv, struct ps_ans *ans)
{
	long k = ps_block(f, job, pc, nv), len;

	if (k < 0)
		return XDP_DROP;
	len = (long)ctx->data_end - (long)ctx->data;
	/* a driver without the tailroom: the worker's resend is whole */
	if (bpf_xdp_adjust_tail(ctx, (int)(RINX_FRAME_LEN(nv) - len)) ||
	    ps_reframe(ctx, f, nv))
		return rinx_count(RINX_STAT_DROP_SHORT, XDP_DROP);
	return ps_pull(f, job, pc, who, (__u32)k, nv, ans);
}

/* A RINX_T_PS frame of job `job` (id and token checked), nv values; nv 0:
 * its header alone (RINX_P_HDR), a pull, a leave or an answer (a push
 * carries values: short). */
static __always_inline int rinx_ps(struct xdp_md *ctx, struct rinx_frame *f,
				   struct rinx_job *job, __u32 jid,
				   const int nv)
{
	struct rinx_ps_conf *pc = NULL;
	struct ps_ans ans = {};
	__u32 who = 0;
	__u8 op;
	long k;
	int ret;

	ret = ps_check(ctx, f, job, jid, &pc, &who);
	if (ret != PS_GO || !pc)
		return ret;
	op = f->h->step;
	if (op == RINX_PS_LEAVE) {
		ret = ps_leave(f, job, pc, who, &ans);
	} else if (!nv) {
		if (op == RINX_PS_PUSH || op == RINX_PS_PUSHPULL)
			return rinx_count(RINX_STAT_DROP_SHORT, XDP_DROP);
		ret = job->bval == RINX_BLOCK_VALUES ?
		      ps_grow_pull(ctx, f, job, pc, who, RINX_BLOCK_VALUES,
				   &ans) :
		      ps_grow_pull(ctx, f, job, pc, who,
				   RINX_BLOCK_VALUES_MIN, &ans);
	} else {
		k = ps_block(f, job, pc, nv);
		if (k < 0)
			return XDP_DROP;
		ret = op == RINX_PS_PULL ?
		      ps_pull(f, job, pc, who, (__u32)k, nv, &ans) :
		      ps_push(f, job, pc, who, (__u32)k, nv,
			      op == RINX_PS_PUSHPULL, &ans);
	}
	return ret == PS_ANSWER ? ps_send(ctx, f, job, &ans) : ret;
}

#endif
