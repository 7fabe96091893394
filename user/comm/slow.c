// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Frames (Ethernet/IPv4/UDP and the rinx header, built in place in the
 * umem) and the slow path: the frames the host program hands up to the
 * trainer because they need this rank's share before it was written, a
 * waiting aggregation slot of this host, or a control answer. A data frame
 * takes the host program's hop, compiled here from the same source
 * (bpf/hop_kern_user.h) over the trainer's views of the maps.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include "bpf/check_kern_user.h"
#include "user/comm/comm.h"
#include "user/quant/quant.h"

/* ---- frames ---- */

static __u16 ip_csum(const void *hdr)
{
	const __u16 *w = hdr;
	__u32 sum = 0;
	int i;

	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

void rinx_c_frame_at(__u8 *p, struct frame *f)
{
	f->eth = p;
	f->ip = p + 14;
	f->udp = p + 34;
	f->h = (struct rinx_hdr *)(p + 42);
	f->v = (__s32 *)(p + RINX_FRAME_HDR_LEN);
}

/* Ethernet/IPv4/UDP headers from node `from` to node `to`. */
void rinx_c_frame_addr(struct rinx_comm *c, struct frame *f, int to,
		       int flen)
{
	const struct rinx_node *s = &c->plan.nodes[c->rank];
	const struct rinx_node *d = &c->plan.nodes[to];
	__u16 len_ip = htons(flen - 14);
	__u16 len_udp = htons(flen - 34);
	__u16 sport = htons(c->spec.port), csum;

	memcpy(f->eth, d->mac, 6);
	memcpy(f->eth + 6, s->mac, 6);
	f->eth[12] = 0x08;
	f->eth[13] = 0x00;
	f->ip[0] = 0x45;
	f->ip[1] = RINX_ECN_ECT0;	/* ECN-capable: ports mark, not drop */
	memcpy(f->ip + 2, &len_ip, 2);
	memset(f->ip + 4, 0, 4);	/* id, DF off, no fragment */
	f->ip[8] = 64;
	f->ip[9] = 17;
	memset(f->ip + 10, 0, 2);
	memcpy(f->ip + 12, &s->ip, 4);
	memcpy(f->ip + 16, &d->ip, 4);
	csum = ip_csum(f->ip);
	memcpy(f->ip + 10, &csum, 2);
	memcpy(f->udp, &sport, 2);
	memcpy(f->udp + 2, &sport, 2);
	memcpy(f->udp + 4, &len_udp, 2);
	memset(f->udp + 6, 0, 2);
	f->h->sender = htons(c->rank);
}

/* ---- slow path: what XDP could not finish, done the same way here ---- */

/* A STATUS or READY hello of agreement `coll` (the header's round field)
 * from rank `from` (its word in `block`, its position in `nblocks`): noted
 * in the barrier it belongs to. Returns 1 when the frame was turned into
 * our answer (the peer lacks our word for a barrier we completed). */
static int ctl_hello(struct rinx_comm *c, struct frame *f, int from)
{
	int kind = f->h->step == RINX_HELLO_STATUS ? 0 : 1, i;
	__u32 coll = ntohl(f->h->round), pos = ntohl(f->h->nblocks);

	for (i = 0; i < 2; i++) {
		struct ctlbar *b = &c->bar[kind][i];

		if (b->coll != coll && i == 1 && !b->from)
			b->coll = coll;	/* a peer a barrier ahead */
		if (b->coll == coll) {
			ctlbar_add(b, 1ull << from, ntohl(f->h->block), pos);
			break;
		}
	}
	if (ntohs(f->h->count) || coll != c->done_coll[kind] || !coll)
		return 0;
	f->h->block = htonl(c->done_word[kind]);
	f->h->nblocks = htonl(c->done_pos[kind]);
	f->h->count = htons(1);
	rinx_c_frame_addr(c, f, from, RINX_FRAME_MIN);
	return 1;
}

/* A rack's group address (what the ToR replicates into the rack; with
 * `onward` also to the uplink, readdressed to the IP destination). */
static void frame_group(struct frame *f, int rack, int onward)
{
	f->eth[0] = RINX_GROUP_MAC0;
	f->eth[1] = RINX_GROUP_MAC1;
	f->eth[2] = RINX_GROUP_MAC2;
	f->eth[3] = rack == RINX_GROUP_EVERY ? 0xff : rack;
	f->eth[4] = rack == RINX_GROUP_EVERY ? 0xff : 0;
	f->eth[5] = onward && rack != RINX_GROUP_EVERY;
}

/* An aggregation of this host (RINX_HOP_SELF) whose contributors are all
 * in while its share was not written yet: the host program left the slot
 * waiting (pend) and sent its sum here. Adds the share to the slot and
 * marks it done, so that the host program answers duplicates with the
 * whole sum from now on, and puts the sum into f (RINX_AGG_COMPLETE). A
 * duplicate handed up while the slot waited finds it done: it gets the
 * slot's sum, RINX_AGG_RESEND, or RINX_AGG_FINAL if the slot holds the
 * finished block, as a duplicate into a finished slot gets it in XDP.
 * Nothing else writes the slot meanwhile: its contributors are all in, and
 * the next round's cannot come before this block has finished. `cov`: what
 * f covers (rinx_hdr_cover). The handler adds no contribution, it only
 * completes or answers, so a frame whose coverage the slot does not hold
 * wholly is refused: in part, as XDP refuses an overlap (it would count a
 * contributor twice); not at all, as a contribution the handler cannot
 * add. XDP hands up neither (a waiting or done slot holds its whole mask,
 * and the hop's checks keep a frame within it): the check keeps the
 * handler from completing a slot for a frame that is not the slot's
 * (RINX_AGG_STALE: dropped). A slot it cannot read: RINX_AGG_NEED_SELF
 * (the frame waits). */
static int self_complete(struct rinx_comm *c, const struct rinx_hop *hop,
			 __u32 idx, __u32 round, const struct rinx_slot *sh,
			 __u64 cov, struct frame *f)
{
	struct rinx_agg a;
	int ret = RINX_AGG_COMPLETE;

	if (c->fd_aggs < 0 ||
	    bpf_map_lookup_elem_flags(c->fd_aggs, &idx, &a, BPF_F_LOCK))
		return RINX_AGG_NEED_SELF;
	if (a.round != round || (!a.pend && !a.done) || (a.seen & cov) != cov)
		return RINX_AGG_STALE;
	if (a.pend) {
		a.exp = rinx_payload_add_n(a.v, a.exp, sh->v, sh->exp,
					   c->bval);
		a.flags |= sh->flags;
		a.pend = 0;
		a.done = 1;
		a.final = hop->action == RINX_A_AGG_FINISH;
		if (bpf_map_update_elem(c->fd_aggs, &idx, &a, BPF_F_LOCK))
			return RINX_AGG_NEED_SELF;
		/* the sum leaves marked if a contribution was, as the one
		 * that completes a slot in XDP; a sum sent again (the slot
		 * was done) keeps the mark of the frame that asked, as the
		 * host program's answer to a duplicate does */
		if (a.ce)
			f->ip[1] |= RINX_ECN_CE;
	} else {
		ret = a.final ? RINX_AGG_FINAL : RINX_AGG_RESEND;
	}
	memcpy(f->v, a.v, (size_t)c->bval * 4);
	f->h->exp = htons((__u16)a.exp);
	f->h->flags = a.flags;
	return ret;
}

/* A gather passing this aggregating host: its finished block is kept in
 * the slot of its round, as the host program does (rinx_agg_keep), to
 * answer a worker's late share with it. Like self_complete, reads and
 * writes the slot under its lock in two steps: the block passed this slot
 * on its way, and no rank starts the next round's share of it before this
 * gather has reached the rack. */
static void agg_keep(struct rinx_comm *c, __u32 idx, __u32 round,
		     const struct frame *f)
{
	struct rinx_agg a;

	if (c->fd_aggs < 0 ||
	    bpf_map_lookup_elem_flags(c->fd_aggs, &idx, &a, BPF_F_LOCK) ||
	    a.round != round)
		return;
	memcpy(a.v, f->v, (size_t)c->bval * 4);
	a.exp = (__s16)ntohs(f->h->exp);
	a.flags = f->h->flags;
	a.final = 1;
	bpf_map_update_elem(c->fd_aggs, &idx, &a, BPF_F_LOCK);
}

/* Marks a readdressed frame CE (it or a sum it carries met congestion on
 * the way). */
static void frame_ce(struct frame *f)
{
	__u16 csum;

	f->ip[1] |= RINX_ECN_CE;
	memset(f->ip + 10, 0, 2);
	csum = ip_csum(f->ip);
	memcpy(f->ip + 10, &csum, 2);
}

/* ---- the hop (bpf/hop_kern_user.h) on the trainer's views of the maps ---- */

struct hop_env {
	struct rinx_comm *c;
	struct rinx_req *r;
	struct frame *f;
	const struct rinx_job *job;	/* the entry this rank installed */
	__u32 window;
};

static inline struct rinx_slot *env_share(struct hop_env *x, __u32 idx)
{
	return &x->c->share[idx];
}

static inline struct rinx_slot *env_result(struct hop_env *x, __u32 idx)
{
	return &x->c->result[idx];
}

static inline struct rinx_slot *env_partial(struct hop_env *x, __u32 idx)
{
	return x->c->partial ? &x->c->partial[idx] : NULL;
}

static inline struct rinx_cursor *env_cursor(struct hop_env *x)
{
	return &x->c->cursors[x->c->slot];
}

/* klass is within RINX_MAX_CLASSES (rinx_hdr_bounds), type a hop type */
static inline const struct rinx_hop *env_hop(struct hop_env *x, __u32 klass,
					     __u32 type)
{
	return &x->c->plan.hops[klass][type - 1];
}

/* Nodes past the plan's are zero in the host program's table. */
static inline const struct rinx_node *env_node(struct hop_env *x, __u32 id)
{
	static const struct rinx_node none;

	return id < (__u32)x->c->plan.nnodes ? &x->c->plan.nodes[id] : &none;
}

static inline __be32 env_saddr(struct hop_env *x)
{
	__be32 saddr;

	memcpy(&saddr, x->f->ip + 12, 4);
	return saddr;
}

static inline int env_ce(struct hop_env *x)
{
	return (x->f->ip[1] & RINX_ECN_MASK) == RINX_ECN_CE;
}

/* Slot k of block idx in map (enum hop_map, declared with the hop): a
 * jumbo block's values continue in the slots after its first. */
static inline struct rinx_slot *env_slot(struct hop_env *x, int map,
					 __u32 idx)
{
	if (map == HOP_SHARE)
		return env_share(x, idx);
	return map == HOP_RESULT ? env_result(x, idx) : env_partial(x, idx);
}

static inline int env_put_vals(struct hop_env *x, struct rinx_slot *r,
			       int map, __u32 idx, int nv)
{
	int k, n;

	for (k = 0; k < nv; k += n, idx++) {
		r = k ? env_slot(x, map, idx) : r;
		if (!r)
			return -1;
		n = nv - k < RINX_BLOCK_VALUES ? nv - k : RINX_BLOCK_VALUES;
		memcpy(r->v, x->f->v + k, (size_t)n * 4);
	}
	return 0;
}

/* Each slot's part at the block's exponents: every part shifts alike. */
static inline int env_add_share(struct hop_env *x, struct rinx_slot *sh,
				__u32 idx, __s16 dexp, __s16 *e, int nv)
{
	struct rinx_slot *s = sh;
	int k, n;

	*e = dexp;
	for (k = 0; k < nv; k += n, idx++) {
		s = k ? env_share(x, idx) : s;
		n = nv - k < RINX_BLOCK_VALUES ? nv - k : RINX_BLOCK_VALUES;
		*e = rinx_payload_add_n(x->f->v + k, dexp, s->v, sh->exp, n);
	}
	return 0;
}

/* The host program and the trainer read and write these slots meanwhile:
 * the round word orders the values. */
static inline __u32 env_load_round(const __u32 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void env_store_round(__u32 *p, __u32 round)
{
	__atomic_store_n(p, round, __ATOMIC_RELEASE);
}

static inline int env_drop(struct hop_env *x, __u32 stat)
{
	return RINX_SP_DROP;
}

static inline int env_done(struct hop_env *x, __u32 stat)
{
	return RINX_SP_FREE;
}

/* The trainer's share (or a slot it cannot read yet): the frame waits. */
static inline int env_slow(struct hop_env *x, __u32 stat)
{
	return RINX_SP_KEEP;
}

/* The host program keeps the TOS byte of a frame it forwards: a mark
 * (congestion on its way) stays on the block to its end. */
static inline int env_send(struct hop_env *x, __u16 to, __u32 stat)
{
	int ce = env_ce(x);

	rinx_c_frame_addr(x->c, x->f, to, RINX_FRAME_LEN(x->c->bval));
	if (ce)
		frame_ce(x->f);
	return RINX_SP_SEND;
}

static inline int env_group(struct hop_env *x, __u16 to, __u8 rack,
			    int onward, __u32 stat)
{
	env_send(x, to, stat);
	frame_group(x->f, rack, onward);
	return RINX_SP_SEND;
}

/* The slow path counts what it finished, not why (rinx_c_slow_path). */
static inline void env_count(struct hop_env *x, __u32 stat)
{
}

/* Another size or dtype than this rank's round: the sender's tensor is
 * another, which fails the allreduce with its name. */
static inline int env_other_tensor(struct hop_env *x)
{
	struct rinx_comm *c = x->c;
	const struct rinx_hdr *h = x->f->h;

	x->r->err = rinx_c_cerr(c, -EMSGSIZE,
				"rank %d: rank %u sends a different tensor "
				"(round %u: %u blocks, block %u has %u values, "
				"dtype %u) than this rank (%u blocks, dtype %u)",
				c->rank, ntohs(h->sender), ntohl(h->round),
				ntohl(h->nblocks), ntohl(h->block),
				ntohs(h->count), ntohs(h->dtype), x->r->nb,
				c->jobent.dtype);
	return RINX_SP_DROP;
}

/* XDP answers NACKs and RNACKs; it hands none up. */
static inline int env_repair(struct hop_env *x, __u32 type, __u32 round,
			     __u32 block, __u32 klass, int nv)
{
	return RINX_SP_DROP;
}

/* What reaches the trainer from an aggregation is the sum of a slot that
 * waits for this host's share (or a duplicate into it): the slot is what
 * counts, and the handler completes it, adding no contribution. */
static inline int env_agg_slot(struct hop_env *x, const struct rinx_hop *hop,
			       __u32 idx, __u32 round, __u64 cov, int nv)
{
	struct rinx_slot *sh = &x->c->share[idx];

	if (!(hop->flags & RINX_HOP_SELF))
		return RINX_AGG_STALE;
	if (env_load_round(&sh->round) != round)
		return RINX_AGG_NEED_SELF;
	return self_complete(x->c, hop, idx, round, sh, cov, x->f);
}

/* Nothing reaches the handler consumed: no pull from here. */
static inline int env_pull(struct hop_env *x, const struct rinx_hop *hop,
			   __u32 round, __u32 sender)
{
	return 0;
}

static inline int env_keep_final(struct hop_env *x, __u32 idx, __u32 round,
				 int nv)
{
	agg_keep(x->c, idx, round, x->f);
	return 0;
}

/* The trainer's sender starts the next own block (XDP recycles). */
static inline int env_gather_end(struct hop_env *x, struct rinx_cursor *cur,
				 __u32 round, int nv)
{
	return RINX_SP_FREE;
}

static inline void env_added(struct hop_env *x)
{
	x->c->slow_adds++;
}

#include "bpf/hop_kern_user.h"

/* FETCH: a rank that lacks a finished block of a round that this one
 * completed (an INA ToR was found gone, ina_agree) asks for it; answered
 * from the result map while it holds that round's block. BLOCK: the
 * answer, stored while this rank fetches that round (rinx_c_fetch_round).
 * Both are block-sized. */
static int fetch_hello(struct rinx_comm *c, struct rinx_req *r,
		       struct frame *f, __u32 len, int from)
{
	__u32 round = ntohl(f->h->round), b = ntohl(f->h->block);
	__u32 cnt = ntohs(f->h->count);
	struct rinx_slot *res;

	if (rinx_c_frame_len(len) != RINX_FRAME_LEN(c->bval) ||
	    b >= c->wblocks || !cnt || cnt > (__u32)c->bval)
		return RINX_SP_DROP;
	res = &c->result[blk_idx(c, b)];
	if (f->h->step == RINX_HELLO_FETCH) {
		if (__atomic_load_n(&res->round, __ATOMIC_ACQUIRE) != round ||
		    res->count != cnt)
			return RINX_SP_FREE;	/* not here: another has it */
		rinx_c_slots_get(res, f->v, c->bval);
		f->h->exp = htons((__u16)res->exp);
		f->h->flags = res->flags;
		/* a block of the next round cannot finish here before the
		 * asker has this one; should it have, send nothing */
		if (__atomic_load_n(&res->round, __ATOMIC_ACQUIRE) != round)
			return RINX_SP_FREE;
		f->h->step = RINX_HELLO_BLOCK;
		rinx_c_frame_addr(c, f, from, rinx_c_frame_len(len));
		return RINX_SP_SEND;
	}
	if (!r || !(r->fetch || r->fetch_some) || round != c->round ||
	    b >= r->nb ||
	    cnt != (__u32)block_count(r, b) ||
	    (c->jobent.dtype == RINX_W_INT32 && f->h->exp))
		return RINX_SP_DROP;
	if (__atomic_load_n(&res->round, __ATOMIC_ACQUIRE) != round) {
		struct hop_env x = { .c = c, .f = f };

		/* counted as finished here, without the answer's mark */
		if (hop_write(&x, res, HOP_RESULT, blk_idx(c, b),
			      round, c->bval))
			return RINX_SP_DROP;
		__atomic_fetch_add(&c->cursors[c->slot].stored, 1,
				   __ATOMIC_RELAXED);
		c->ina_fetched++;
	}
	return RINX_SP_FREE;
}

/* A hello of this job: an answer to open, a peer's word for a barrier,
 * a probe, a FETCH or its BLOCK. */
static int slow_hello(struct rinx_comm *c, struct rinx_req *r,
		      struct frame *f, __u32 len)
{
	__u16 from = ntohs(f->h->sender);
	__be32 saddr;

	memcpy(&saddr, f->ip + 12, 4);
	if (from >= c->n || from == c->rank ||
	    saddr != c->plan.nodes[from].ip)
		return RINX_SP_DROP;
	if (f->h->step == RINX_HELLO_OPEN_YES)
		c->heard |= 1ull << from;
	if (f->h->step == RINX_HELLO_OPEN_OTHER) {
		c->clash = from + 1;
		c->clash_id = ntohl(f->h->block);
	}
	if (f->h->step == RINX_HELLO_OPEN_SIZE) {
		c->clash_bval = from + 1;
		c->clash_bval_n = ntohs(f->h->count);
	}
	/* a peer that answers or probes is alive */
	if (f->h->step == RINX_HELLO_ALIVE || f->h->step == RINX_HELLO_PROBE)
		c->alive |= 1ull << from;
	if (f->h->step == RINX_HELLO_STATUS || f->h->step == RINX_HELLO_READY)
		return ctl_hello(c, f, from) ? RINX_SP_SEND : RINX_SP_FREE;
	if (f->h->step == RINX_HELLO_FETCH || f->h->step == RINX_HELLO_BLOCK)
		return fetch_hello(c, r, f, len, from);
	/* the node before passed on a class's last block of this round, or
	 * finished the round (rinx_c_tail_notices); of another round, or
	 * with no round open here, it says nothing */
	if (f->h->step == RINX_HELLO_TAIL || f->h->step == RINX_HELLO_DONE) {
		__u32 b = ntohl(f->h->block), stage = ntohs(f->h->count);

		if (!r || !r->round_open || ntohl(f->h->round) != c->round)
			return RINX_SP_FREE;
		if (f->h->step == RINX_HELLO_DONE) {
			RINX_TRACE(c, "done-heard %u from=%d", c->round, from);
			if (from < 64)
				rinx_c_ahead(r, 1ull << from);
		} else if (b < r->nb && (stage == 1 || stage == 2)) {
			rinx_c_tail_heard(r, b, (int)stage, from);
		}
		return RINX_SP_FREE;
	}
	if (f->h->step == RINX_HELLO_BYE) {
		__u32 k = ntohl(f->h->block);

		c->bye |= 1ull << from;
		if (k)
			c->bye_heard |= 1ull << from;
		/* A rank still in its collective says its BYE when it
		 * closes; until then it may need the sender's hops (its
		 * own blocks sent again) and stored blocks (NACKs): it
		 * asks the sender to stay. */
		if (!c->closing) {
			if (!r)
				return RINX_SP_FREE;
			f->h->step = RINX_HELLO_STAY;
			f->h->block = 0;
			rinx_c_frame_addr(c, f, from, rinx_c_frame_len(len));
			return RINX_SP_SEND;
		}
		/* closing here too: answer (0: I heard yours; 1: so did I,
		 * the last word) */
		if (k >= 2)
			return RINX_SP_FREE;
		f->h->block = htonl(k + 1);
		rinx_c_frame_addr(c, f, from, rinx_c_frame_len(len));
		return RINX_SP_SEND;
	}
	if (f->h->step == RINX_HELLO_STAY) {
		if (c->closing)
			c->stay_at = now_ns();
		return RINX_SP_FREE;
	}
	if (f->h->step != RINX_HELLO_PROBE)
		return RINX_SP_FREE;
	f->h->step = RINX_HELLO_ALIVE;
	rinx_c_frame_addr(c, f, from, rinx_c_frame_len(len));
	return RINX_SP_SEND;
}

/* The slow path's hop: one frame the host program handed up, at p (len
 * bytes), rewritten in place into what this node sends (RINX_SP_SEND: the
 * caller transmits the frame as long as it came, rinx_c_frame_len(len)).
 * A data frame goes through the host program's hop (hop_block), on this
 * rank's tables, once the trainer has its round open. Needs no socket, so
 * the differential test runs it on the same tables as the host program. */
int rinx_c_slow_frame(struct rinx_comm *c, __u8 *p, __u32 len)
{
	struct xctx *x = c->x;
	struct rinx_req *r = c->active;
	struct hop_env env;
	struct frame f;
	__u32 round;
	int nv;

	if (len < RINX_FRAME_HDR_LEN)
		return RINX_SP_DROP;
	rinx_c_frame_at(p, &f);
	if (ntohl(f.h->magic) != RINX_MAGIC || f.h->version != RINX_VERSION)
		return RINX_SP_DROP;
	if (ntohl(f.h->job) != c->job)	/* another communicator's, or late */
		return x && rinx_c_xctx_has_job(x, ntohl(f.h->job)) ? RINX_SP_KEEP :
								      RINX_SP_DROP;
	if (be64toh(f.h->token) != c->token)
		return RINX_SP_DROP;
	if (f.h->type == RINX_T_PS)
		return rinx_c_ps_frame(c, p, len);
	/* only a parameter server's frames may be a header alone */
	if (len < RINX_FRAME_MIN)
		return RINX_SP_DROP;
	if (f.h->type == RINX_T_HELLO)
		return slow_hello(c, r, &f, len);
	/* the values the host program reads of a frame this long (a frame
	 * of another size than the job's waits for no round: dropped now,
	 * as hop_block would) */
	nv = rinx_c_frame_values(len);
	if (nv != c->bval)
		return RINX_SP_DROP;
	/* The trainer's own gate, before the hop's: an older round is over,
	 * the round being fetched takes no frame of its old or new plan,
	 * and a later one waits until it is open here (the job entry is
	 * then that round's). */
	round = ntohl(f.h->round);
	if ((__s32)(round - c->round) < 0)
		return RINX_SP_DROP;
	if (r && r->fetch && round == c->round)
		return RINX_SP_DROP;
	if (round != c->round || !r || !r->round_open) {
		/* its sender runs the next round: it finished this one and
		 * holds every block of it (rinx_c_gather_holes asks it) */
		if (r && r->round_open && round == c->round + 1 &&
		    ntohs(f.h->sender) < 64)
			rinx_c_ahead(r, 1ull << ntohs(f.h->sender));
		return RINX_SP_KEEP;
	}
	env.c = c;
	env.r = r;
	env.f = &f;
	env.job = &c->jobent;
	env.window = c->window;
	return hop_block(&env, f.h->type, nv);
}

/* Runs the slow path over pending and newly received frames. Returns the
 * number of frames finished. Called with x->lock held. */
int rinx_c_slow_path(struct rinx_comm *c)
{
	struct xctx *x = c->x;
	int done = 0, j, keep = 0, ret;

	rinx_c_ring_rx(c);	/* a ringed context's frames (xsk.c) */
	rinx_c_x_rx(c);
	for (j = 0; j < x->npend; j++) {
		__u64 a = x->pend_addr[j];

		/* the frame is rewritten in place: only start when it can
		 * leave */
		if (x->pend_len[j] >= RINX_FRAME_MIN &&
		    xsk_prod_nb_free(&x->tx, x_descs(x->pend_len[j])) <
		    x_descs(x->pend_len[j]))
			ret = RINX_SP_KEEP;
		else
			ret = rinx_c_slow_frame(c, (__u8 *)x->area + a,
						x->pend_len[j]);
		if (ret == RINX_SP_SEND)
			ret = rinx_c_x_send(x, a,
					    rinx_c_frame_len(x->pend_len[j])) ?
			      RINX_SP_KEEP :
								    RINX_SP_SEND;
		if (ret == RINX_SP_SEND) {
			done++;
			c->st.slow_path++;
			/* a whole-frame buffer left as umem frames */
			if (a >= UMEM_BYTES)
				rinx_c_x_free(x, a);
		} else if (ret == RINX_SP_FREE) {
			done++;
			c->st.slow_path++;
			rinx_c_x_free(x, a);
		} else if (ret == RINX_SP_DROP) {
			c->st.slow_dropped++;
			rinx_c_x_free(x, a);
		} else {
			x->pend_addr[keep] = a;
			x->pend_len[keep++] = x->pend_len[j];
		}
	}
	x->npend = keep;
	rinx_c_x_refill(x);
	return done;
}
