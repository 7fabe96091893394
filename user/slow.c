// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Frames (Ethernet/IPv4/UDP and the rinx header, built in place in the
 * umem) and the slow path: the frames the host program hands up to the
 * trainer because they need this rank's share before it was written, a
 * waiting aggregation slot of this host, or a control answer.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include "user/comm.h"
#include "user/quant.h"

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

/* A STATUS or READY hello of agreement `epoch` from rank `from` (its word
 * in `block`, its position in `nblocks`): noted in the barrier it belongs
 * to. Returns 1 when the frame was turned into our answer (the peer lacks
 * our word for a barrier we completed). */
static int ctl_hello(struct rinx_comm *c, struct frame *f, int from)
{
	int kind = f->h->step == RINX_HELLO_STATUS ? 0 : 1, i;
	__u32 coll = ntohl(f->h->epoch), pos = ntohl(f->h->nblocks);

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

/* Stores a finished block and counts it in the job's cursor, with its
 * mark, as the host program does (the trainer's rate control reads both). */
static void store_result(struct rinx_comm *c, struct rinx_slot *res,
			 const struct frame *f, __u32 epoch, __u32 cnt, int ce)
{
	struct rinx_cursor *cur = &c->cursors[c->slot];

	memcpy(res->v, f->v, (size_t)c->bval * 4);
	res->exp = (__s16)ntohs(f->h->exp);
	res->flags = f->h->flags;
	res->count = cnt;
	__atomic_store_n(&res->epoch, epoch, __ATOMIC_RELEASE);
	__atomic_fetch_add(&cur->stored, 1, __ATOMIC_RELAXED);
	if (ce)
		__atomic_fetch_add(&cur->marked, 1, __ATOMIC_RELAXED);
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

/* What the handler found in an aggregation's slot (rinx_agg_ret's). */
enum { SELF_COMPLETE, SELF_RESEND, SELF_FINAL };

/* The contributors a frame into an aggregation stands for, as the host
 * program counts them (rinx_cover): the coverage a frame of one of the
 * hop's coverage aggregators (via) declares, else its sender's bit, whatever
 * its cover field holds. */
static __u64 frame_cover(const struct frame *f, const struct rinx_hop *hop)
{
	__u64 bit = 1ULL << (ntohs(f->h->sender) & 63);

	if ((hop->flags & RINX_HOP_COVER) && (hop->via & bit))
		return be64toh(f->h->cover);
	return bit;
}

/* An aggregation of this host (RINX_HOP_SELF) whose contributors are all
 * in while its share was not written yet: the host program left the slot
 * waiting (pend) and sent its sum here. Adds the share to the slot and
 * marks it done, so that the host program answers duplicates with the
 * whole sum from now on, and puts the sum into f (SELF_COMPLETE). A
 * duplicate handed up while the slot waited finds it done: it gets the
 * slot's sum, SELF_RESEND, or SELF_FINAL if the slot holds the finished
 * block, as a duplicate into a finished slot gets it in XDP. Nothing else
 * writes the slot meanwhile: its contributors are all in, and the next
 * round's cannot come before this block has finished. `cov`: what f
 * covers (frame_cover). The handler adds no contribution, it only completes
 * or answers, so a frame whose coverage the slot does not hold wholly is
 * refused: in part, as XDP refuses an overlap (it would count a contributor
 * twice); not at all, as a contribution the handler cannot add. XDP hands
 * up neither (a waiting or done slot holds its whole mask, and the hop's
 * checks keep a frame within it): the check keeps the handler from
 * completing a slot for a frame that is not the slot's. -1 (stale or
 * refused: drop) or -errno. */
static int self_complete(struct rinx_comm *c, const struct rinx_hop *hop,
			 __u32 idx, __u32 epoch, const struct rinx_slot *sh,
			 __u64 cov, struct frame *f, int *ce)
{
	struct rinx_agg a;
	int ret = SELF_COMPLETE;

	if (c->fd_aggs < 0 ||
	    bpf_map_lookup_elem_flags(c->fd_aggs, &idx, &a, BPF_F_LOCK))
		return -EIO;
	if (a.epoch != epoch || (!a.pend && !a.done) || (a.seen & cov) != cov)
		return -1;
	if (a.pend) {
		a.exp = rinx_payload_add_n(a.v, a.exp, sh->v, sh->exp,
					   c->bval);
		a.flags |= sh->flags;
		a.pend = 0;
		a.done = 1;
		a.final = hop->action == RINX_A_AGG_FINISH;
		if (bpf_map_update_elem(c->fd_aggs, &idx, &a, BPF_F_LOCK))
			return -EIO;
		/* the sum leaves marked if a contribution was, as the one
		 * that completes a slot in XDP; a sum sent again (the slot
		 * was done) keeps the mark of the frame that asked, as the
		 * host program's answer to a duplicate does */
		*ce |= a.ce;
	} else {
		ret = a.final ? SELF_FINAL : SELF_RESEND;
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
static void agg_keep(struct rinx_comm *c, __u32 idx, __u32 epoch,
		     const struct frame *f)
{
	struct rinx_agg a;

	if (c->fd_aggs < 0 ||
	    bpf_map_lookup_elem_flags(c->fd_aggs, &idx, &a, BPF_F_LOCK) ||
	    a.epoch != epoch)
		return;
	memcpy(a.v, f->v, (size_t)c->bval * 4);
	a.exp = (__s16)ntohs(f->h->exp);
	a.flags = f->h->flags;
	a.final = 1;
	bpf_map_update_elem(c->fd_aggs, &idx, &a, BPF_F_LOCK);
}

/* The host program's check of a frame against the hop (rinx_check_sender):
 * from the node the hop names, at its address and step, or, into an
 * aggregation, from one of its contributors (a raw share at step 0, the
 * partial sum of `from` at its step), or from one of the aggregators whose
 * frames carry a coverage (RINX_HOP_COVER, via): at step 0, covering part
 * of the contributors and no one else. */
static int sender_ok(const struct rinx_comm *c, const struct frame *f,
		     const struct rinx_hop *hop, int agg, __u32 type)
{
	__u32 s = ntohs(f->h->sender);
	__be32 saddr;

	memcpy(&saddr, f->ip + 12, 4);
	if (s >= RINX_MAX_NODES || (type == RINX_T_CONTRIB && !agg))
		return 0;
	/* nodes past the plan's are zero in the host program's table */
	if (saddr != (s < (__u32)c->plan.nnodes ? c->plan.nodes[s].ip : 0))
		return 0;
	if (agg) {
		__u64 cov = be64toh(f->h->cover);

		if ((hop->flags & RINX_HOP_COVER) && (hop->via & (1ULL << s)))
			return cov && !(cov & ~hop->mask) && f->h->step == 0;
		if (!(hop->mask & (1ULL << s)))
			return 0;
		if (type == RINX_T_CONTRIB || s != hop->from)
			return f->h->step == 0;
	} else if (s != hop->from) {
		return 0;
	}
	return f->h->step == hop->step;
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

/* FETCH: a rank that lacks a finished block of a round that this one
 * completed (an INA ToR was found gone, ina_agree) asks for it; answered
 * from the result map while it holds that round's block. BLOCK: the
 * answer, stored while this rank fetches that round (rinx_c_fetch_round).
 * Both are block-sized. */
static int fetch_hello(struct rinx_comm *c, struct rinx_req *r,
		       struct frame *f, __u32 len, int from)
{
	__u32 epoch = ntohl(f->h->epoch), b = ntohl(f->h->block);
	__u32 cnt = ntohs(f->h->count);
	struct rinx_slot *res;

	if (rinx_c_frame_len(len) != RINX_FRAME_LEN(c->bval) ||
	    b >= (__u32)c->window || !cnt || cnt > (__u32)c->bval)
		return RINX_SP_DROP;
	res = &c->result[c->slot * c->window + b];
	if (f->h->step == RINX_HELLO_FETCH) {
		if (__atomic_load_n(&res->epoch, __ATOMIC_ACQUIRE) != epoch ||
		    res->count != cnt)
			return RINX_SP_FREE;	/* not here: another has it */
		memcpy(f->v, res->v, (size_t)c->bval * 4);
		f->h->exp = htons((__u16)res->exp);
		f->h->flags = res->flags;
		/* a block of the next round cannot finish here before the
		 * asker has this one; should it have, send nothing */
		if (__atomic_load_n(&res->epoch, __ATOMIC_ACQUIRE) != epoch)
			return RINX_SP_FREE;
		f->h->step = RINX_HELLO_BLOCK;
		rinx_c_frame_addr(c, f, from, rinx_c_frame_len(len));
		return RINX_SP_SEND;
	}
	if (!r || !r->fetch || epoch != c->epoch || b >= r->nb ||
	    cnt != (__u32)block_count(r, b) ||
	    (c->jobent.dtype == RINX_W_INT32 && f->h->exp))
		return RINX_SP_DROP;
	if (__atomic_load_n(&res->epoch, __ATOMIC_ACQUIRE) != epoch) {
		store_result(c, res, f, epoch, cnt, 0);
		c->ina_fetched++;
	}
	return RINX_SP_FREE;
}

/* The slow path's hop: one frame the host program handed up, at p (len
 * bytes), rewritten in place into what this node sends (RINX_SP_SEND: the
 * caller transmits the frame as long as it came, rinx_c_frame_len(len)).
 * A block of another size than the job's is dropped, as the host program
 * drops it. Needs no socket, so the
 * differential test runs it on the same tables as the host program. */
int rinx_c_slow_frame(struct rinx_comm *c, __u8 *p, __u32 len)
{
	struct xctx *x = c->x;
	struct rinx_req *r = c->active;
	struct rinx_slot *sh, *res;
	const struct rinx_hop *hop;
	struct frame f;
	__u32 epoch, block, nblocks, klass, cnt, type, idx;
	int agg, ret, ce = 0;

	if (len < RINX_FRAME_MIN)
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
	if (f.h->type == RINX_T_HELLO) {
		__u16 from = ntohs(f.h->sender);
		__be32 saddr;

		memcpy(&saddr, f.ip + 12, 4);
		if (from >= c->n || from == c->rank ||
		    saddr != c->plan.nodes[from].ip)
			return RINX_SP_DROP;
		if (f.h->step == RINX_HELLO_OPEN_YES)
			c->heard |= 1ull << from;
		if (f.h->step == RINX_HELLO_OPEN_OTHER) {
			c->clash = from + 1;
			c->clash_id = ntohl(f.h->block);
		}
		if (f.h->step == RINX_HELLO_OPEN_SIZE) {
			c->clash_bval = from + 1;
			c->clash_bval_n = ntohs(f.h->count);
		}
		/* a peer that answers or probes is alive */
		if (f.h->step == RINX_HELLO_ALIVE ||
		    f.h->step == RINX_HELLO_PROBE)
			c->alive |= 1ull << from;
		if (f.h->step == RINX_HELLO_STATUS ||
		    f.h->step == RINX_HELLO_READY)
			return ctl_hello(c, &f, from) ? RINX_SP_SEND : RINX_SP_FREE;
		if (f.h->step == RINX_HELLO_FETCH ||
		    f.h->step == RINX_HELLO_BLOCK)
			return fetch_hello(c, r, &f, len, from);
		if (f.h->step == RINX_HELLO_PROBE) {
			f.h->step = RINX_HELLO_ALIVE;
		} else {
			return RINX_SP_FREE;
		}
		rinx_c_frame_addr(c, &f, from, rinx_c_frame_len(len));
		return RINX_SP_SEND;
	}
	if (rinx_c_frame_len(len) != RINX_FRAME_LEN(c->bval))
		return RINX_SP_DROP;
	epoch = ntohl(f.h->epoch);
	if ((__s32)(epoch - c->epoch) < 0)
		return RINX_SP_DROP;
	/* the round being fetched takes no frame of its old or new plan */
	if (r && r->fetch && epoch == c->epoch)
		return RINX_SP_DROP;
	if (epoch != c->epoch || !r || !r->round_open)
		return RINX_SP_KEEP;
	block = ntohl(f.h->block);
	nblocks = ntohl(f.h->nblocks);
	cnt = ntohs(f.h->count);
	klass = ntohs(f.h->klass);
	type = f.h->type;
	/* What the host program drops as malformed or misaddressed is
	 * dropped here alike, before a size that differs from this rank's
	 * can blame the sender's tensor (rinx_check_bounds, _sender). */
	if (cnt == 0 || cnt > (__u32)c->bval || block >= nblocks ||
	    nblocks > c->window || klass >= (__u32)c->plan.nclasses ||
	    (int)klass != class_of(c, block) || type < RINX_T_REDUCE ||
	    type > RINX_T_CONTRIB)
		return RINX_SP_DROP;
	hop = &c->plan.hops[klass][type - 1];
	agg = hop->action == RINX_A_AGG_FWD || hop->action == RINX_A_AGG_FINISH;
	if (hop->action == RINX_A_NONE || !sender_ok(c, &f, hop, agg, type))
		return RINX_SP_DROP;
	/* int32 payloads are summed as they are: no exponent may shift them */
	if (c->jobent.dtype == RINX_W_INT32 && f.h->exp)
		return RINX_SP_DROP;
	if (nblocks != r->nb || block >= nblocks ||
	    cnt != (__u32)block_count(r, block) ||
	    ntohs(f.h->dtype) != c->jobent.dtype) {
		r->err = rinx_c_cerr(c, -EMSGSIZE,
				     "rank %d: rank %u sends a different tensor "
				     "(round %u: %u blocks, block %u has %u values, "
				     "dtype %u) than this rank (%u blocks, dtype %u)",
				     c->rank, ntohs(f.h->sender), epoch, nblocks,
				     block, cnt, ntohs(f.h->dtype), r->nb,
				     c->jobent.dtype);
		return RINX_SP_DROP;
	}
	/* what reaches the trainer from an aggregation is the sum of a slot
	 * that waits for this host's share: the slot is what counts */
	if (agg && !(hop->flags & RINX_HOP_SELF))
		return RINX_SP_DROP;
	idx = c->slot * c->window + block;
	sh = &c->share[idx];
	res = &c->result[idx];
	/* the host program keeps the TOS byte of a frame it forwards: a
	 * mark (congestion on its way) stays on the block to its end */
	ce = (f.ip[1] & RINX_ECN_MASK) == RINX_ECN_CE;
	switch (hop->action) {
	case RINX_A_ADD_FWD:
	case RINX_A_ADD_FINISH:
		/* passed on already this round: a duplicate (as in XDP) */
		if ((c->jobent.flags & RINX_JOB_KEEP) &&
		    __atomic_load_n(hop->action == RINX_A_ADD_FWD ?
				    &c->partial[idx].epoch : &res->epoch,
				    __ATOMIC_ACQUIRE) == epoch)
			return RINX_SP_DROP;
		if (__atomic_load_n(&sh->epoch, __ATOMIC_ACQUIRE) != epoch)
			return RINX_SP_KEEP;
		f.h->exp = htons((__u16)rinx_payload_add_n(f.v,
				(__s16)ntohs(f.h->exp), sh->v, sh->exp,
				c->bval));
		f.h->flags |= sh->flags;
		f.h->step++;
		c->slow_adds++;
		if (hop->action == RINX_A_ADD_FWD &&
		    (c->jobent.flags & RINX_JOB_KEEP)) {
			/* kept for the successor's RNACK, as XDP keeps it */
			struct rinx_slot *k = &c->partial[idx];

			memcpy(k->v, f.v, (size_t)c->bval * 4);
			k->exp = (__s16)ntohs(f.h->exp);
			k->flags = f.h->flags;
			k->count = cnt;
			k->step = f.h->step;
			__atomic_store_n(&k->epoch, epoch, __ATOMIC_RELEASE);
		}
		if (hop->action == RINX_A_ADD_FINISH) {
			store_result(c, res, &f, epoch, cnt, ce);
			f.h->type = RINX_T_GATHER;
			f.h->step = 0;
		}
		break;
	case RINX_A_STORE_FWD:
	case RINX_A_STORE_END:
		if ((c->jobent.flags & RINX_JOB_KEEP) &&
		    __atomic_load_n(&res->epoch, __ATOMIC_ACQUIRE) == epoch)
			return RINX_SP_DROP;
		store_result(c, res, &f, epoch, cnt, ce);
		if (hop->action == RINX_A_STORE_END)
			return RINX_SP_FREE;
		f.h->step++;
		break;
	case RINX_A_AGG_FWD:
	case RINX_A_AGG_FINISH:
		if (__atomic_load_n(&sh->epoch, __ATOMIC_ACQUIRE) != epoch)
			return RINX_SP_KEEP;
		ret = self_complete(c, hop, idx, epoch, sh,
				    frame_cover(&f, hop), &f, &ce);
		if (ret < 0)
			return ret == -1 ? RINX_SP_DROP : RINX_SP_KEEP;
		/* a duplicate: what the host program does with one into a
		 * finished slot. A worker's share into the finished block is
		 * answered with it, at the step of this node's gather into
		 * the rack (0 where the block finishes, else out + 1) */
		if (ret == SELF_FINAL && type == RINX_T_CONTRIB &&
		    (hop->flags & RINX_HOP_ANSWER)) {
			f.h->type = RINX_T_GATHER;
			f.h->step = hop->action == RINX_A_AGG_FINISH ?
				    hop->out_step : hop->out_step + 1;
			rinx_c_frame_addr(c, &f, ntohs(f.h->sender),
					  RINX_FRAME_LEN(c->bval));
			if (ce)
				frame_ce(&f);
			return RINX_SP_SEND;
		}
		/* the finished block is no partial sum to send on: whoever
		 * misses it asks for it (NACK) */
		if (ret == SELF_FINAL && hop->action == RINX_A_AGG_FWD)
			return RINX_SP_DROP;
		f.h->step = hop->out_step;
		if (hop->action == RINX_A_AGG_FWD) {
			f.h->type = RINX_T_REDUCE;
			break;
		}
		store_result(c, res, &f, epoch, cnt, ce);
		f.h->type = RINX_T_GATHER;
		if (hop->rack == RINX_NO_RACK && hop->to == c->rank)
			return RINX_SP_FREE;
		rinx_c_frame_addr(c, &f, hop->to, RINX_FRAME_LEN(c->bval));
		if (ce)
			frame_ce(&f);
		if (hop->rack != RINX_NO_RACK)
			frame_group(&f, hop->rack, hop->to != c->rank);
		return RINX_SP_SEND;
	case RINX_A_MCAST_FWD:
	case RINX_A_MCAST_END:
		store_result(c, res, &f, epoch, cnt, ce);
		agg_keep(c, idx, epoch, &f);
		f.h->step = hop->out_step;
		rinx_c_frame_addr(c, &f, hop->action == RINX_A_MCAST_FWD ? hop->to :
				  c->rank, RINX_FRAME_LEN(c->bval));
		if (ce)
			frame_ce(&f);
		frame_group(&f, hop->rack, hop->action == RINX_A_MCAST_FWD);
		return RINX_SP_SEND;
	default:
		return RINX_SP_DROP;
	}
	rinx_c_frame_addr(c, &f, hop->to, RINX_FRAME_LEN(c->bval));
	if (ce)
		frame_ce(&f);
	return RINX_SP_SEND;
}

/* Runs the slow path over pending and newly received frames. Returns the
 * number of frames finished. Called with x->lock held. */
int rinx_c_slow_path(struct rinx_comm *c)
{
	struct xctx *x = c->x;
	__u32 idx, n, i;
	int done = 0, j, keep = 0, ret, q;

	for (q = 0; q < x->nq; q++) {
		struct xsk_ring_cons *rx = x->q[q].rx;

		n = xsk_ring_cons__peek(rx, RING_SIZE, &idx);
		for (i = 0; i < n; i++) {
			const struct xdp_desc *d =
				xsk_ring_cons__rx_desc(rx, idx + i);

			if (x->npend < MAX_PENDING) {
				x->pend_addr[x->npend] = d->addr;
				x->pend_len[x->npend++] = d->len;
			} else {
				x->free[x->nfree++] = d->addr;
				c->st.slow_dropped++;
			}
		}
		if (n)
			xsk_ring_cons__release(rx, n);
	}
	for (j = 0; j < x->npend; j++) {
		__u64 a = x->pend_addr[j];

		/* the frame is rewritten in place: only start when it can
		 * leave */
		if (x->pend_len[j] >= RINX_FRAME_MIN &&
		    xsk_prod_nb_free(&x->tx, 1) < 1)
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
		} else if (ret == RINX_SP_FREE) {
			done++;
			c->st.slow_path++;
			x->free[x->nfree++] = a;
		} else if (ret == RINX_SP_DROP) {
			c->st.slow_dropped++;
			x->free[x->nfree++] = a;
		} else {
			x->pend_addr[keep] = a;
			x->pend_len[keep++] = x->pend_len[j];
		}
	}
	x->npend = keep;
	rinx_c_x_refill(x);
	return done;
}
