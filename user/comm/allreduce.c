// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Allreduce: the trainer's side of the data path, and the public calls.
 *
 * Per round of an allreduce a rank: publishes the round in its job
 * entry, converts its input into the share map (mmapped), claims the blocks
 * it starts from a cursor it shares with the host program and sends the
 * first ones through its AF_XDP socket (at most `inflight` unfinished; XDP
 * turns every gather that ends here into the next one), finishes in user
 * space the frames XDP handed up (slow path, slow.c), collects the finished
 * blocks from the result map (mmapped) as XDP stores them, and repairs
 * losses when nothing finishes for a while (repair.c). A round holds at
 * most `window` blocks; longer tensors take several. Before the first
 * round, an open barrier makes sure every peer knows the job (ctlmsg.c).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include "user/comm/comm.h"
#include "bpf/check_kern_user.h"
#include "user/quant/quant.h"

#define RTO_MAX_NS	1000000000ull

/* Blocks converted when a round opens, at least, on links of known rate:
 * the first window of every class leaves as soon as it is written, and
 * the rest is converted while it travels (a whole 16 MiB window took 2-4
 * ms per rank before the first block could leave, 8 ranks on 2 cores). */
#define CONV_CHUNK	128

/* An int32 block of cnt values into the slots from s on, zero up to bval. */
static void share_ints(struct rinx_slot *s, const int32_t *src, int cnt,
		       int bval)
{
	int k, n, m;

	for (k = 0; k < bval; k += n, s++) {
		n = bval - k < RINX_BLOCK_VALUES ? bval - k : RINX_BLOCK_VALUES;
		m = cnt - k < 0 ? 0 : cnt - k < n ? cnt - k : n;
		memcpy(s->v, src + k, (size_t)m * 4);
		memset(&s->v[m], 0, (size_t)(n - m) * 4);
	}
}

/* Writes the shares of blocks [from, upto) of round `round`, whose input
 * starts at value `base`, nb blocks, the last of `last` values; the round
 * word last: the host program and the slow path add a share only once its
 * round is the frame's. The round word is 0 while the values change: the
 * host program may be adding the slot's old share into a late duplicate
 * of its round on another core (it checked the round before), and it
 * reads the word again after the add, dropping the frame if it moved
 * (hop_add). Without that, a late reduce of round r took some values of
 * round r + 1 (a wrong block, seen once in CI: the MPI test's 16 MiB
 * case). */
static void convert_blocks(struct rinx_req *r, __u32 from, __u32 upto,
			   size_t base, __u32 nb, __u32 last, __u32 round)
{
	struct rinx_comm *c = r->c;
	__u64 t = thread_ns();
	__u32 b;

	for (b = from; b < upto; b++) {
		struct rinx_slot *s = &c->share[blk_idx(c, b)];
		int cnt = b == nb - 1 ? (int)last : c->bval;
		size_t off = base + (size_t)b * c->bval;

		__atomic_store_n(&s->round, 0, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (r->dtype == RINX_FLOAT32 && c->bslots > 1) {
			rinx_quant_jumbo(s, (const float *)r->send + off, cnt,
					 c->qbits);
		} else if (r->dtype == RINX_FLOAT32) {
			rinx_quant_block_n(s, (const float *)r->send + off, cnt,
					   c->qbits, c->bval);
		} else {
			share_ints(s, (const int32_t *)r->send + off, cnt,
				   c->bval);
			s->exp = 0;
			s->flags = 0;
			s->count = cnt;
		}
		if (c->lossy_left)
			s->flags |= RINX_F_LOSSY;
		__atomic_store_n(&s->round, round, __ATOMIC_RELEASE);
	}
	c->st.ns_quant += thread_ns() - t;
}

/* Writes the shares of blocks [r->conv, upto) of the round; no own block
 * is claimed before its share is written. */
static void convert(struct rinx_req *r, __u32 upto)
{
	if (upto > r->nb)
		upto = r->nb;
	if (upto <= r->conv)
		return;
	convert_blocks(r, r->conv, upto, r->done_vals, r->nb, r->last_count,
		       r->c->round);
	r->conv = upto;
}

/* May the next round's shares be written while this one runs, and the
 * host program take that round's frames early (rinx_job.next_nblocks)?
 * Only where a round is converted whole before it opens (unlimited
 * links), on plans whose hops only add and store (a ring: no aggregator
 * slot waits for a share) on a cluster without INA ToRs (where one is
 * found gone, a round runs again, or is fetched, from the shares of its
 * first run, and the ranks' round numbers are agreed anew). */
static int pre_ok(const struct rinx_comm *c)
{
	int k, t;

	if (c->rated)
		return 0;
	for (k = 0; k < c->spec.nracks; k++)
		if (c->spec.racks[k].ina == RINX_INA_SWITCH)
			return 0;
	for (k = 0; k < c->plan.nclasses && k < RINX_MAX_CLASSES; k++)
		for (t = 0; t < RINX_HOP_TYPES; t++)
			if (rinx_is_agg(&c->plan.hops[k][t]))
				return 0;
	return 1;
}

/* The round after the open one: its first value, blocks and last block's
 * values; 0 when there is none. */
static __u32 next_round(const struct rinx_req *r, size_t *base, __u32 *last)
{
	const struct rinx_comm *c = r->c;
	size_t vals;
	__u32 nb;

	*base = r->done_vals + (size_t)r->nb * c->bval;
	*last = 0;
	if (*base >= r->count)
		return 0;
	vals = r->count - *base;
	if (vals > (size_t)c->wblocks * c->bval)
		vals = (size_t)c->wblocks * c->bval;
	nb = (__u32)((vals + c->bval - 1) / c->bval);
	*last = (__u32)(vals - (size_t)(nb - 1) * c->bval);
	return nb;
}

/* Blocks < r->cursor of the open round are copied out: their slots are
 * done with it here (its reduce passed, its result is in and copied), so
 * the next round's shares of those blocks may be written now. The host
 * program then takes that round's frames of them before the trainer
 * opens it (bpf/hop_kern_user.h, hop_next_ready), where they went to the
 * trainer, late, and the next hops took them for lost; and the round
 * opens without converting them. A block's slots serve the same block
 * number in every round. */
static void preconvert(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	__u32 nb, upto, last;
	size_t base;

	if (!r->pre_ok)
		return;
	nb = next_round(r, &base, &last);
	upto = r->cursor < nb ? r->cursor : nb;
	if (upto <= r->pre)
		return;
	convert_blocks(r, r->pre, upto, base, nb, last, c->round + 1);
	r->pre = upto;
}

static int round_open(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	size_t left = r->count - r->done_vals;
	size_t vals = left < (size_t)c->wblocks * c->bval ?
		      left : (size_t)c->wblocks * c->bval;
	struct rinx_cursor *cur = &c->cursors[c->slot];
	__u32 b, key = c->job, first, nlast;
	size_t nbase;
	__u64 t;

	r->nb = (vals + c->bval - 1) / c->bval;
	r->last_count = vals - (size_t)(r->nb - 1) * c->bval;
	/* Close the cursor before anything of the new round is written: the
	 * host program claims no own block of a closed cursor (a late gather
	 * of the round before is not recycled into this one's blocks). Once
	 * open, it and the trainer claim only blocks whose share is
	 * written. */
	__atomic_store_n(&cur->round, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&cur->next, 0, __ATOMIC_RELEASE);
	c->round++;
	rinx_c_keep_round(c);
	/* the shares written early carry the LOSSY flag of the round they
	 * are for (convert_blocks) */
	for (b = 0; c->lossy_left && b < r->pre && b < r->nb; b++)
		c->share[blk_idx(c, b)].flags |= RINX_F_LOSSY;
	r->pre_ok = pre_ok(c);
	c->jobent.round = c->round;
	c->jobent.nblocks = r->nb;
	c->jobent.last_count = r->last_count;
	c->jobent.next_nblocks = r->pre_ok ? next_round(r, &nbase, &nlast) : 0;
	c->jobent.next_last_count = c->jobent.next_nblocks ? (__u16)nlast : 0;
	c->jobent.dtype = r->dtype == RINX_FLOAT32 ? RINX_W_FIXED :
						     RINX_W_INT32;
	if (bpf_map_update_elem(c->fd_jobs, &key, &c->jobent, 0))
		return rinx_c_cerr(c, -errno, "cannot update job entry: %s",
				   strerror(errno));
	/* the blocks of the classes this rank starts, in the order of the
	 * cursor (the host program claims the same sequence) */
	r->nown = 0;
	for (b = 0; b < r->nb; b++)
		if (c->ownidx[b % c->plan.plen] >= 0)
			r->own[r->nown++] = b;
	/* first the blocks of the first window of every class: what the
	 * peers send first needs them */
	r->conv = 0;
	/* the shares written while the round before ran (preconvert) */
	if (r->pre) {
		r->conv = r->pre < r->nb ? r->pre : r->nb;
		r->pre = 0;
	}
	/* A round that runs again after an INA ToR was found gone keeps the
	 * shares of its first run: the input of blocks that finished there
	 * may be overwritten by their result (in place), and none of their
	 * shares changed since (XDP and the slow path only read them). */
	if (r->reuse) {
		__u32 n = r->reuse < r->nb ? r->reuse : r->nb;

		for (b = 0; b < n; b++)
			__atomic_store_n(&c->share[blk_idx(c, b)].round,
					 c->round, __ATOMIC_RELEASE);
		r->conv = n;
		r->reuse = 0;
	}
	first = (__u32)rinx_c_window_blocks(c);
	if (first < CONV_CHUNK)
		first = CONV_CHUNK;
	/* Only where links have known rates (c->rated): there the first
	 * window takes milliseconds to leave, paced, and the rest is written
	 * long before the peers' blocks need it. On unlimited links the
	 * ring's first blocks came back before the trainer, sharing the
	 * cores with the host programs, had converted the rest: 8% of frames
	 * went to the slow path and a 1 MiB ring on 4 hosts fell from 0.29
	 * to 0.11 GB/s; there a round is converted before it opens. */
	t = now_ns();
	convert(r, c->rated ? first : r->nb);
	__atomic_store_n(&cur->round, c->round, __ATOMIC_RELEASE);
	/* Peers convert their input too before anything can finish: a round
	 * that has not started moving is not a loss. Wait a few times this
	 * rank's conversion before the first repair. */
	r->last_progress = now_ns();
	r->opened_at = r->last_progress;
	r->lag_sampled = 0;
	r->rto = 4 * (r->last_progress - t);
	/* and twice what rounds took to get going lately: with many short
	 * rounds on busy cores a late peer at every round start looked like
	 * a loss */
	if (r->rto < 2 * c->open_lag)
		r->rto = 2 * c->open_lag;
	if (r->rto < RTO_FIRST_NS)
		r->rto = RTO_FIRST_NS;
	if (r->rto > RTO_MAX_NS)
		r->rto = RTO_MAX_NS;
	r->rto_base = rinx_c_rto_stall(c);
	r->head = r->cursor = r->stamped = r->sampled = r->fin_ahead = 0;
	r->cursor_t = r->first_fin = 0;
	memset(r->resent, 0, r->nown);
	memset(r->rasked, 0, r->nb);
	memset(r->ghole_at, 0, r->nb * sizeof(*r->ghole_at));
	memset(r->gasked, 0, r->nb);
	r->gscan_t = 0;
	r->ahead = r->ahead_fresh = 0;
	rinx_c_reduce_init(r);
	r->round_open = 1;
	RINX_TRACE(c, "open %u nb=%u keep=%d", c->round, r->nb, c->keep);
	return 0;
}

/* Builds and queues the frame of block b (reduce from its origin, or a
 * contribution to the rack's aggregator). 0 or -EAGAIN. */
int rinx_c_send_block(struct rinx_req *r, __u32 b, int again)
{
	struct rinx_comm *c = r->c;
	struct xctx *x = c->x;
	__u32 klass = class_of(c, b);
	struct rinx_slot *s = &c->share[blk_idx(c, b)];
	__u64 addr = rinx_c_x_buf(x, RINX_FRAME_LEN(c->bval));
	struct frame f;

	if (addr == X_NONE)
		return -EAGAIN;
	rinx_c_frame_at((__u8 *)x->area + addr, &f);
	rinx_c_frame_addr(c, &f, c->plan.start_to[klass],
			  RINX_FRAME_LEN(c->bval));
	f.h->magic = htonl(RINX_MAGIC);
	f.h->version = RINX_VERSION;
	f.h->type = c->plan.start_type[klass];
	f.h->flags = s->flags;
	/* ps-ina: a share sent again to the rack's ToR says so; its pool
	 * then flushes what it holds of the block (docs/rinx.md) */
	if (again && c->plan.kind == RINX_PLAN_PSINA &&
	    c->plan.start_to[klass] >= c->n)
		f.h->flags |= RINX_F_RESEND;
	f.h->step = 0;
	f.h->job = htonl(c->job);
	f.h->token = htobe64(c->token);
	f.h->round = htonl(c->round);
	f.h->block = htonl(b);
	f.h->nblocks = htonl(r->nb);
	f.h->count = htons(block_count(r, b));
	f.h->klass = htons(klass);
	f.h->exp = htons((__u16)s->exp);
	f.h->dtype = htons(c->jobent.dtype);
	rinx_c_slots_get(s, f.v, c->bval);
	if (rinx_c_x_send(x, addr, RINX_FRAME_LEN(c->bval)))
		return -EAGAIN;
	rinx_c_x_taken(x, addr);
	if (!again)
		__atomic_store_n(&s->sent_us, (__u32)(now_ns() / 1000),
				 __ATOMIC_RELAXED);
	else	/* sent again: its gap from the pacer (user/comm/cc.c) */
		rinx_c_pace_charge(&c->cursors[c->slot], now_ns());
	return 0;
}

static int send_own(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	struct xctx *x = c->x;
	struct rinx_cursor *cur = &c->cursors[c->slot];
	int sent = 0;

	/* Own blocks are claimed from the cursor the host program shares: it
	 * turns every gather that ends here into the next own block, so after
	 * the first window the trainer only fills gaps. In flight: claimed
	 * beyond the finished prefix of own blocks. */
	for (;;) {
		__u32 next = __atomic_load_n(&cur->next, __ATOMIC_ACQUIRE), j;

		if (next >= r->nown || r->own[next] >= r->conv ||
		    next - r->head - r->fin_ahead >= (__u32)c->inflight ||
		    !rinx_c_x_room(x, RINX_FRAME_LEN(c->bval)) ||
		    !rinx_c_pace_ok(cur, now_ns()))
			break;
		j = __atomic_fetch_add(&cur->next, 1, __ATOMIC_ACQ_REL);
		if (j >= r->nown)
			break;
		if (rinx_c_send_block(r, r->own[j], 0)) {
			/* cannot happen: a TX slot was checked */
			r->err = rinx_c_cerr(c, -EIO, "AF_XDP transmit ring full");
			break;
		}
		sent++;
	}
	c->st.blocks_sent += sent;
	return sent;
}

static int collect(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	int got = 0;
	__u64 t = 0;

	{
		__u32 claimed = __atomic_load_n(&c->cursors[c->slot].next,
						__ATOMIC_ACQUIRE);

		if (claimed > r->nown)
			claimed = r->nown;
		while (r->head < claimed &&
		       __atomic_load_n(&c->result[blk_idx(c,
							  r->own[r->head])].round,
				       __ATOMIC_ACQUIRE) == c->round)
			r->head++;
	}
	while (r->cursor < r->nb) {
		const struct rinx_slot *s =
			&c->result[blk_idx(c, r->cursor)];
		size_t off = r->done_vals +
			     (size_t)r->cursor * c->bval;
		int cnt = block_count(r, r->cursor);

		if (__atomic_load_n(&s->round, __ATOMIC_ACQUIRE) != c->round)
			break;
		if (!t)
			t = thread_ns();
		if (r->dtype == RINX_FLOAT32 && c->bslots > 1) {
			rinx_dequant_jumbo(s, (float *)r->recv + off, cnt,
					   c->qbits);
			if (s->flags & RINX_F_NONFINITE)
				c->st.nonfinite++;
			c->keep_next |= !!(s->flags & RINX_F_LOSSY);
		} else if (r->dtype == RINX_FLOAT32) {
			rinx_dequant_block(s, (float *)r->recv + off, cnt,
					   c->qbits);
			if (s->flags & RINX_F_NONFINITE)
				c->st.nonfinite++;
			c->keep_next |= !!(s->flags & RINX_F_LOSSY);
		} else {
			rinx_c_slots_get(s, (int32_t *)r->recv + off, cnt);
			c->keep_next |= !!(s->flags & RINX_F_LOSSY);
		}
		r->cursor++;
		got++;
	}
	if (t)
		c->st.ns_dequant += thread_ns() - t;
	if (got)
		preconvert(r);
	return got;
}

/* Every block of the open round is copied out: the collective moves past
 * it. Returns 1 when that was its last round. */
static int round_close(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	__u64 t = now_ns();

	if (r->nb && t > r->opened_at) {
		__u64 per = (t - r->opened_at) / r->nb;

		c->blk_ns = c->blk_ns ? (7 * c->blk_ns + per) / 8 : per;
	}
	r->done_vals += (size_t)r->nb * r->c->bval;
	if (r->done_vals > r->count)
		r->done_vals = r->count;
	r->round_open = 0;
	r->c->st.rounds++;
	return r->done_vals == r->count;
}

#define FETCH_BURST	256	/* FETCHes per period */
#define FETCH_PERIOD_NS	10000000ull

int rinx_c_fetch_round(struct rinx_req *r, __u32 e)
{
	struct rinx_comm *c = r->c;
	struct xctx *x = c->x;
	__u64 deadline = now_ns() + (__u64)c->timeout_ms * 1000000ull;
	__u64 next = 0, t;
	__u32 key = c->job, b, tries = 0, missing = 0;
	int sent, err = 0, to;

	/* From now on the host program takes no frame of round e (nor of
	 * e + 1, which the ranks that completed e may have started under the
	 * old plan) and claims no own block: frames of e + 2, the next round
	 * of every rank, wait in the slow path. */
	pthread_mutex_lock(&x->lock);
	__atomic_store_n(&c->cursors[c->slot].round, 0, __ATOMIC_RELEASE);
	c->jobent.round = e + 2;
	if (bpf_map_update_elem(c->fd_jobs, &key, &c->jobent, 0))
		err = rinx_c_cerr(c, -errno, "cannot update job entry: %s",
				  strerror(errno));
	r->fetch = 1;
	pthread_mutex_unlock(&x->lock);
	while (!err) {
		t = now_ns();
		pthread_mutex_lock(&x->lock);
		rinx_c_x_reclaim(x);
		rinx_c_slow_path(c);
		collect(r);
		if (r->cursor == r->nb) {
			pthread_mutex_unlock(&x->lock);
			break;
		}
		if (t >= next) {
			/* each missing block from the next peer in turn: the
			 * ranks that completed the round answer */
			missing = sent = 0;
			for (b = r->cursor; b < r->nb; b++) {
				const struct rinx_slot *s =
					&c->result[blk_idx(c, b)];

				if (__atomic_load_n(&s->round,
						    __ATOMIC_ACQUIRE) == e)
					continue;
				missing++;
				to = (int)((c->rank + 1 + (b + tries) %
					    (c->n - 1)) % c->n);
				if (sent < FETCH_BURST &&
				    !rinx_c_send_ctl(c, to, RINX_T_HELLO,
						     RINX_HELLO_FETCH, e, b, r->nb,
						     block_count(r, b)))
					sent++;
			}
			tries++;
			next = t + FETCH_PERIOD_NS;
		}
		rinx_c_x_kick(x);
		pthread_mutex_unlock(&x->lock);
		if (t > deadline) {
			err = rinx_c_cerr(c, -ETIMEDOUT, "rank %d: an INA ToR lost "
					  "the job in round %u, which other ranks "
					  "had completed; %u of its %u blocks "
					  "could not be fetched from them within "
					  "%d ms", c->rank, e, missing, r->nb,
					  c->timeout_ms);
			break;
		}
		nap_ns(20000);
	}
	r->fetch = 0;
	if (err) {
		c->broken = err;
		return err;
	}
	/* round e is complete here too; e + 1 is skipped by every rank */
	c->round = e + 1;
	return round_close(r) ? 2 : 1;
}

/* "rank 3 (h3)" or "aggregator agg1" for messages. */
static const char *node_label(struct rinx_comm *c, int id)
{
	static __thread char buf[RINX_NAME_MAX + 32];
	int i;

	if (id >= 0 && id < c->n) {
		snprintf(buf, sizeof(buf), "rank %d (%s)", id,
			 rinx_spec_rank(&c->spec, id)->name);
		return buf;
	}
	for (i = 0; i < c->spec.nracks; i++)
		if (rinx_plan_agg_node(&c->spec, i) == id) {
			snprintf(buf, sizeof(buf), "the aggregator %s of rack %d",
				 c->spec.racks[i].name, c->spec.racks[i].id);
			return buf;
		}
	snprintf(buf, sizeof(buf), "node %d", id);
	return buf;
}

static int timeout_error(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	int missing = 0, first = -1, origin = -1, one_origin = 1;
	__u32 b;

	for (b = r->cursor; b < r->nb; b++) {
		if (c->result[blk_idx(c, b)].round == c->round)
			continue;
		if (first < 0) {
			first = b;
			origin = c->plan.root[class_of(c, b)];
		} else if (c->plan.root[class_of(c, b)] != origin) {
			one_origin = 0;
		}
		missing++;
	}
	c->st.timeouts++;
	{
		__u64 dead = rinx_c_peers_mask(c) & ~rinx_c_probe_peers(c, 200);
		char who[256];

		if (dead) {
			rinx_c_list_ranks(c, dead, who, sizeof(who));
			return rinx_c_cerr(c, -ETIMEDOUT, "rank %d: allreduce timed "
					   "out (%d ms without progress): %d of %u "
					   "blocks of round %u missing; no answer "
					   "from %s (dead or cut off)", c->rank,
					   c->timeout_ms,
					   missing, r->nb, c->round, who);
		}
	}
	if (one_origin && origin >= 0)
		return rinx_c_cerr(c, -ETIMEDOUT, "rank %d: allreduce timed out (%d "
				   "ms without progress): %d of %u blocks of round "
				   "%u missing, all of classes finishing at %s: is "
				   "its %s running?", c->rank,
				   c->timeout_ms, missing, r->nb, c->round,
				   node_label(c, origin), origin < c->n ?
				   "trainer" : "INA ToR (or a worker of its rack)");
	return rinx_c_cerr(c, -ETIMEDOUT, "rank %d: allreduce timed out (%d ms "
			   "without progress): %d of %u blocks of round %u missing "
			   "(first: block %d, finishing at %s); a peer is dead, "
			   "unreachable or not started",
			   c->rank, c->timeout_ms, missing, r->nb, c->round, first,
			   first >= 0 ? node_label(c, origin) : "?");
}

static void req_free(struct rinx_req *r)
{
	__u32 b;

	/* shares written for a round that will not run (the collective
	 * failed or was cancelled): the next collective's first round has
	 * that number, and must not take them for its own */
	for (b = 0; r->c && b < r->pre; b++)
		__atomic_store_n(&r->c->share[blk_idx(r->c, b)].round, 0,
				 __ATOMIC_RELEASE);
	r->pre = 0;
	if (r->c && r->c->active == r)
		r->c->active = NULL;
	/* the next collective reuses the window's arrays: allocating them
	 * (700 KB at a window of 32768) cost every small collective mmap,
	 * page faults and munmap */
	if (r->c && !r->c->spare && r->own && r->sent_at && r->resent &&
	    r->rhole_at && r->rasked && r->ghole_at && r->gasked) {
		r->c->spare = r;
		return;
	}
	rinx_c_req_release(r);
}

void rinx_c_req_release(struct rinx_req *r)
{
	if (!r)
		return;
	free(r->own);
	free(r->sent_at);
	free(r->resent);
	free(r->rhole_at);
	free(r->rasked);
	free(r->ghole_at);
	free(r->gasked);
	free(r);
}

/* One step of progress; 1 = finished, 0 = running, < 0 = error. */
static int progress(struct rinx_req *r, int *moved)
{
	struct rinx_comm *c = r->c;
	struct xctx *x = c->x;
	int err = 0;

	*moved = 0;
	if (r->err)
		return r->err;
	/* an INA ToR found gone: every rank agrees, and the round starts
	 * again under the plan without it, or is completed from the ranks
	 * that had completed it (ina_agree) */
	err = rinx_c_ina_watch(r, now_ns());
	if (err < 0)
		return r->err = err;
	*moved = err != 0;
	if (err == 2)
		return 1;
	err = 0;
	pthread_mutex_lock(&x->lock);
	if (!r->round_open) {
		err = round_open(r);
		if (err)
			goto out;
		*moved = 1;
	}
	rinx_c_x_reclaim(x);
	*moved += rinx_c_slow_path(c);
	if (r->err) {
		err = r->err;
		goto out;
	}
	*moved += send_own(r);
	rinx_c_x_kick(x);
	if (r->conv < r->nb) {
		/* links of known rate: the first blocks are on their way, the
		 * rest of the round's shares at once (in slices between the
		 * trainer's other work, the peers' blocks came back before
		 * their shares were written and went to the slow path) */
		convert(r, r->nb);
		*moved = 1;
	}
	{
		int got = collect(r);
		__u32 claimed = __atomic_load_n(&c->cursors[c->slot].next,
						__ATOMIC_RELAXED);
		__u64 t = now_ns();

		*moved += got;
		rinx_c_cc_update(r, t);
		rinx_c_own_timers(r, t);
		rinx_c_reduce_holes(r, t);
		rinx_c_gather_holes(r, t);
		rinx_c_tail_notices(r);
		/* a hole: the next block in order is missing for a while
		 * though a later one of its class finished here - ask for
		 * the holes now, before the round drains (RACK's reasoning
		 * for the blocks of every origin: a NACK is answered from a
		 * stored copy) */
		if (got || !r->cursor_t) {
			r->cursor_t = t;
			r->holes = 0;
		} else if (t - (r->cursor_t > r->first_fin ? r->cursor_t :
				r->first_fin) > rinx_c_hole_wait(r) <<
					(r->holes < 6 ? r->holes : 6) &&
			   rinx_c_cursor_hole(r)) {
			/* (the wait starts when the round got going here at
			 * the earliest: see rinx_c_own_timers) */
			RINX_TRACE(c, "hole %u cursor=%u", c->round, r->cursor);
			rinx_c_repair(r, !r->holes, 0);
			c->st.repairs++;
			r->holes++;
			r->cursor_t = t;
		}
		/* how long this round took to get going here (open_lag) */
		if (got && !r->lag_sampled) {
			__u64 lag = t - r->opened_at;

			r->lag_sampled = 1;
			c->open_lag = c->open_lag ? (7 * c->open_lag + lag) / 8 :
						    lag;
		}
		/* a stall: blocks finished in order, or own blocks claimed
		 * (the host program claims one per finished gather) */
		if (got || claimed != r->last_claimed || !r->last_progress) {
			r->moved_at = t;
			r->last_claimed = claimed;
			r->last_progress = t;
			r->rto = r->rto_base = rinx_c_stall_wait(r, t);
		} else if (t - r->last_progress > r->rto) {
			RINX_TRACE(c, "stall %u cursor=%u wait_us=%llu",
				   c->round, r->cursor,
				   (unsigned long long)r->rto / 1000);
			rinx_c_repair(r, r->rto <= r->rto_base, 1);
			c->st.repairs++;
			r->last_progress = t;
			r->rto = r->rto * 2 > RTO_MAX_NS ? RTO_MAX_NS :
							   r->rto * 2;
		}
	}
	if (r->cursor == r->nb) {
		/* before the round's number moves on */
		RINX_TRACE(c, "close %u", c->round);
		rinx_c_round_done(r);
		if (round_close(r)) {
			pthread_mutex_unlock(&x->lock);
			return 1;
		}
		/* frames of the next round may already be pending */
		err = round_open(r);
		if (err)
			goto out;
		*moved = 1;
	}
out:
	pthread_mutex_unlock(&x->lock);
	return err;
}

RINX_API int rinx_allreduce_start(struct rinx_comm *c, const void *send,
				  void *recv, size_t count,
				  enum rinx_dtype dtype, struct rinx_req **out)
{
	struct rinx_req *r;

	*out = NULL;
	if (!c)
		return -EINVAL;
	if (dtype != RINX_FLOAT32 && dtype != RINX_INT32)
		return rinx_c_cerr(c, -EINVAL, "unsupported dtype %d", dtype);
	if (count && (!send || !recv))
		return rinx_c_cerr(c, -EINVAL, "NULL buffer");
	if (c->ps)
		return rinx_c_cerr(c, -EBUSY, "the communicator serves a "
				   "parameter server's store (rinx_ps_open)");
	if (c->active)
		return rinx_c_cerr(c, -EBUSY, "an allreduce is already in flight on "
				   "this communicator");
	if (c->broken)
		return rinx_c_cerr(c, c->broken, "rank %d: this communicator failed "
				   "(an INA ToR lost the job and the ranks could "
				   "not complete the round): close and reopen it",
				   c->rank);
	r = c->spare;
	c->spare = NULL;
	if (r) {
		struct rinx_req keep = *r;

		memset(r, 0, sizeof(*r));
		r->own = keep.own;
		r->sent_at = keep.sent_at;
		r->resent = keep.resent;
		r->rhole_at = keep.rhole_at;
		r->rasked = keep.rasked;
		r->ghole_at = keep.ghole_at;
		r->gasked = keep.gasked;
		goto ready;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->own = calloc(c->window, sizeof(*r->own));
	r->sent_at = calloc(c->window, sizeof(*r->sent_at));
	r->resent = calloc(c->window, sizeof(*r->resent));
	r->rhole_at = calloc(c->window, sizeof(*r->rhole_at));
	r->rasked = calloc(c->window, sizeof(*r->rasked));
	r->ghole_at = calloc(c->window, sizeof(*r->ghole_at));
	r->gasked = calloc(c->window, sizeof(*r->gasked));
	if (!r->own || !r->sent_at || !r->resent || !r->rhole_at ||
	    !r->rasked || !r->ghole_at || !r->gasked) {
		r->c = NULL;
		req_free(r);
		return -ENOMEM;
	}
ready:
	r->c = c;
	r->send = send;
	r->recv = recv;
	r->count = count;
	r->dtype = dtype;
	r->t0 = now_ns();
	c->active = r;
	*out = r;
	return 0;
}

static int finish(struct rinx_req *r, int ret)
{
	struct rinx_comm *c = r->c;

	c->clean = ret == 1;
	if (ret == 1) {
		c->st.ops++;
		c->st.bytes += r->count * 4;
		ret = 0;
	}
	c->st.ns_total += now_ns() - r->t0;
	req_free(r);
	return ret;
}

static int trivial(struct rinx_req *r)
{
	if (r->count && r->send != r->recv)
		memmove(r->recv, r->send, r->count * 4);
	return 1;
}

RINX_API int rinx_test(struct rinx_req *r)
{
	int moved, ret;

	if (!r)
		return -EINVAL;
	if (r->count == 0 || r->c->n == 1)
		return finish(r, trivial(r));
	ret = progress(r, &moved);
	if (ret == 0)
		return 0;
	ret = finish(r, ret);
	return ret ? ret : 1;
}

/* How long an idle trainer of an unpaced round sleeps (a frame for its
 * slow path wakes it sooner): a quarter of what the round still needs at
 * the pace it has moved at here (the rounds before, until its first block
 * is in), 20 to 400 us. On unlimited links the cores are the bottleneck and
 * every wakeup is a context switch taken from the softirqs that move the
 * frames: a fixed 20 us nap woke each trainer thousands of times per
 * collective to find a block or two. Near the end of a round the naps
 * shorten, and the last IDLE_NAP_TAIL blocks of a round (all of a small
 * collective's, which are latency, not rate) are waited for as before, so
 * the next round still opens promptly; the repair timers (2 ms and more)
 * are not delayed beyond their own slack. */
#define IDLE_NAP_TAIL	64
static long idle_nap(const struct rinx_req *r)
{
	const struct rinx_comm *c = r->c;
	__u64 t = now_ns(), per = c->blk_ns;
	long nap;

	if (r->nb - r->cursor < IDLE_NAP_TAIL)
		return 20000;
	if (r->cursor && t > r->opened_at)
		per = (t - r->opened_at) / r->cursor;
	nap = (long)(per * (r->nb - r->cursor) / 4);
	return nap < 20000 ? 20000 : nap > 400000 ? 400000 : nap;
}

/* How long an idle trainer naps before it polls request r again (*poll:
 * the nap may end early on a frame for its slow path). Paced: a recycle
 * the pacer held back in XDP is the trainer's to send, one per gap.
 * Waking for each of them (8 trainers on 2 cores, every 20 us) cost Rina
 * at 1 Gbit/s 5x the CPU of its collective. The pacer lets a burst of due
 * blocks go at once (user/comm/cc.c), so a nap of a burst's time (two gaps
 * at least) loses no rate: Rina at 1 Gbit/s (gap 26 us) went 0.158-0.169
 * GB/s napping two gaps, 0.172-0.182 napping the burst's 150 us, with less
 * CPU. Unpaced: idle_nap. */
static long wait_nap(const struct rinx_req *r, int *poll)
{
	const struct rinx_comm *c = r->c;
	__u32 gap = __atomic_load_n(&c->cursors[c->slot].gap_ns,
				    __ATOMIC_RELAXED);
	__u32 burst = __atomic_load_n(&c->cursors[c->slot].burst,
				      __ATOMIC_RELAXED);
	long nap = (long)gap * (burst > 2 ? burst : 2);

	*poll = !gap;
	if (!gap)
		return idle_nap(r);
	return nap < 20000 ? 20000 : nap > 200000 ? 200000 : nap;
}

/* Naps for `nap` ns, on the sockets of c when `poll`. */
static void wait_idle(struct rinx_comm *c, long nap, int poll)
{
	if (poll)
		rinx_c_x_sleep(c, nap);
	else
		nap_ns(nap);
}

/* The naps pace own blocks: the default timer slack (50 us) would stretch
 * each of them. Returns the slack to give back (rinx_wait_end). */
static int wait_begin(void)
{
	int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);

	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
	return slack;
}

static void wait_end(int slack)
{
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
}

/* Has request r gone without progress for its communicator's timeout?
 * (A large collective on slow links is not a dead peer.) */
static int idle_too_long(const struct rinx_req *r, __u64 t)
{
	return t > r->moved_at + (__u64)r->c->timeout_ms * 1000000ull;
}

RINX_API int rinx_wait(struct rinx_req *r, int timeout_ms)
{
	struct rinx_comm *c;
	__u64 deadline, t, tmo;
	int moved, ret, idle = 0, slack, idle_timeout, poll;
	long nap;

	if (!r)
		return -EINVAL;
	c = r->c;
	if (r->count == 0 || c->n == 1)
		return finish(r, trivial(r));
	idle_timeout = timeout_ms < 0;
	if (timeout_ms < 0)
		timeout_ms = c->timeout_ms;
	tmo = (__u64)timeout_ms * 1000000ull;
	deadline = now_ns() + tmo;
	slack = wait_begin();
	for (;;) {
		ret = progress(r, &moved);
		if (ret)
			break;
		if (moved) {
			idle = 0;
			continue;
		}
		/* Nothing to do: the other ranks' frames are being processed
		 * in softirq context on the same cores, so yield instead of
		 * spinning once a few polls came back empty. */
		if (++idle > 8) {
			nap = wait_nap(r, &poll);
			wait_idle(c, nap, poll);
		}
		t = now_ns();
		/* the communicator's timeout counts time without progress */
		if (idle_timeout && r->moved_at + tmo > deadline)
			deadline = r->moved_at + tmo;
		if (t > deadline) {
			ret = timeout_error(r);	/* request still valid */
			wait_end(slack);
			return ret;
		}
	}
	wait_end(slack);
	return finish(r, ret);
}

RINX_API int rinx_wait_any(struct rinx_req **reqs, int n, int timeout_ms,
			   int *index)
{
	__u64 deadline, t;
	int i, moved, ret, idle = 0, slack, any = 0, poll, p;
	struct rinx_comm *pc = NULL;
	long nap, mn;

	if (!reqs || n <= 0 || !index)
		return -EINVAL;
	*index = -1;
	for (i = 0; i < n; i++)
		any |= reqs[i] != NULL;
	if (!any)
		return -EINVAL;
	deadline = timeout_ms < 0 ? ~0ull :
		   now_ns() + (__u64)timeout_ms * 1000000ull;
	slack = wait_begin();
	for (;;) {
		int still = 0;

		for (i = 0; i < n; i++) {
			struct rinx_req *r = reqs[i];

			if (!r)
				continue;
			if (r->count == 0 || r->c->n == 1)
				ret = trivial(r);
			else
				ret = progress(r, &moved);
			if (ret) {
				*index = i;
				reqs[i] = NULL;
				wait_end(slack);
				return finish(r, ret);
			}
			still |= moved;
		}
		t = now_ns();
		for (i = 0; timeout_ms < 0 && i < n; i++)
			if (reqs[i] && idle_too_long(reqs[i], t)) {
				*index = i;	/* request still valid */
				wait_end(slack);
				return timeout_error(reqs[i]);
			}
		if (t > deadline) {
			wait_end(slack);
			return -ETIMEDOUT;
		}
		if (still) {
			idle = 0;
			continue;
		}
		if (++idle <= 8)
			continue;
		/* the shortest nap any of them wants; polling the sockets
		 * only when all nap unpaced on one context */
		mn = 0;
		poll = 1;
		for (i = 0; i < n; i++) {
			if (!reqs[i])
				continue;
			nap = wait_nap(reqs[i], &p);
			if (!mn || nap < mn)
				mn = nap;
			if (!pc)
				pc = reqs[i]->c;
			poll &= p && reqs[i]->c->x == pc->x;
		}
		wait_idle(pc, mn, poll);
	}
}

RINX_API void rinx_cancel(struct rinx_req *r)
{
	if (r)
		req_free(r);
}

RINX_API int rinx_allreduce(struct rinx_comm *c, const void *send,
			    void *recv, size_t count, enum rinx_dtype dtype)
{
	struct rinx_req *r;
	int err;

	err = rinx_allreduce_start(c, send, recv, count, dtype, &r);
	if (err)
		return err;
	err = rinx_wait(r, -1);
	if (err == -ETIMEDOUT)
		rinx_cancel(r);
	return err;
}
