// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Control frames of a job: the open barrier (every peer knows the job
 * before a block moves), the agreement on an INA ToR found gone (only when
 * a collective stalls, none while the ToRs work), the liveness probe after
 * a timeout, and the frame they and the NACKs of loss repair are sent in.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "user/comm/comm.h"

/* A control frame (hello, NACK) of the job to node `to`: header only, the
 * payload zero. 0 or -EAGAIN. */
int rinx_c_send_ctl(struct rinx_comm *c, int to, int type, int step,
		    __u32 round, __u32 block, __u32 nblocks, __u16 count)
{
	struct xctx *x = c->x;
	struct frame f;
	__u64 addr;
	int flen;

	/* hellos are small (every rank reaches every other whatever its
	 * block size); NACKs and FETCHes are answered with a block: the
	 * job's size */
	flen = type == RINX_T_HELLO && step != RINX_HELLO_FETCH ?
	       RINX_FRAME_MIN : RINX_FRAME_LEN(c->bval);
	if (!rinx_c_x_room(x, flen))
		return -EAGAIN;
	addr = rinx_c_x_buf(x, flen);
	rinx_c_frame_at((__u8 *)x->area + addr, &f);
	memset(f.h, 0, sizeof(*f.h));
	rinx_c_frame_addr(c, &f, to, flen);
	f.h->magic = htonl(RINX_MAGIC);
	f.h->version = RINX_VERSION;
	f.h->type = type;
	f.h->step = step;
	f.h->job = htonl(c->job);
	f.h->token = htobe64(c->token);
	f.h->round = htonl(round);
	f.h->block = htonl(block);
	f.h->nblocks = htonl(nblocks);
	f.h->count = htons(count);
	f.h->klass = htons(c->plan.plen ? class_of(c, block) : 0);
	f.h->dtype = htons(c->jobent.dtype);
	memset(f.v, 0, flen - RINX_FRAME_HDR_LEN);
	if (rinx_c_x_send(x, addr, flen))
		return -EAGAIN;
	rinx_c_x_taken(x, addr);
	return 0;
}

static int send_hello(struct rinx_comm *c, int to, int kind)
{
	return rinx_c_send_ctl(c, to, RINX_T_HELLO, kind, 0, 0, 1, 1);
}

__u64 rinx_c_peers_mask(const struct rinx_comm *c)
{
	__u64 all = c->n >= 64 ? ~0ull : (1ull << c->n) - 1;

	return all & ~(1ull << c->rank);
}

void rinx_c_list_ranks(const struct rinx_comm *c, __u64 mask, char *buf,
		       size_t len)
{
	size_t off = 0;
	int r;

	buf[0] = 0;
	for (r = 0; r < c->n && off + 1 < len; r++)
		if (mask & (1ull << r))
			off += snprintf(buf + off, len - off, "%srank %d (%s)",
					off ? ", " : "", r,
					rinx_spec_rank(&c->spec, r)->name);
}

/* Frames sent to a peer before it installed the job would be dropped:
 * every rank returns from open only once every peer's host program has
 * answered "I know the job" (in XDP, so a peer that already returned from
 * open and is busy elsewhere still answers). Asks are repeated every 10 ms,
 * so lost ones do no harm. */
int rinx_c_open_barrier(struct rinx_comm *c)
{
	__u64 deadline = now_ns() + (__u64)c->timeout_ms * 1000000ull;
	__u64 next = 0, t, want = rinx_c_peers_mask(c), clash_t = 0;
	char who[256];
	int r;

	for (;;) {
		t = now_ns();
		pthread_mutex_lock(&c->x->lock);
		rinx_c_x_reclaim(c->x);
		rinx_c_slow_path(c);
		if ((c->heard & want) == want) {
			pthread_mutex_unlock(&c->x->lock);
			return 0;
		}
		/* a rank that runs another plan: stay installed a few hello
		 * periods more, so that it hears our answer too, then fail */
		if ((c->clash || c->clash_bval) && !clash_t)
			clash_t = t + 500000000ull;
		if (c->clash_bval && t >= clash_t &&
		    (c->bval == RINX_BLOCK_VALUES_JUMBO ||
		     c->clash_bval_n == RINX_BLOCK_VALUES_JUMBO)) {
			pthread_mutex_unlock(&c->x->lock);
			return rinx_c_cerr(c, -EMSGSIZE, "rank %d runs blocks of %d "
					   "values, rank %d of %d: jumbo blocks "
					   "need every rank to ask for them "
					   "(block_values) and an MTU of at least "
					   "%d everywhere (mtu= in the spec)",
					   c->rank, c->bval, c->clash_bval - 1,
					   c->clash_bval_n,
					   RINX_IP_MTU(RINX_BLOCK_VALUES_JUMBO));
		}
		if (c->clash_bval && t >= clash_t) {
			pthread_mutex_unlock(&c->x->lock);
			return rinx_c_cerr(c, -EMSGSIZE, "rank %d sends %d-byte frames "
					   "(blocks of %d values), rank %d %d-byte "
					   "(%d): their MTUs differ; set one MTU "
					   "everywhere or mtu= in the spec (at least "
					   "%d)", c->rank, RINX_FRAME_LEN(c->bval),
					   c->bval, c->clash_bval - 1,
					   RINX_FRAME_LEN(c->clash_bval_n),
					   c->clash_bval_n,
					   RINX_IP_MTU(RINX_BLOCK_VALUES_MIN));
		}
		if (c->clash && t >= clash_t) {
			char a[32], b[32];

			pthread_mutex_unlock(&c->x->lock);
			rinx_plan_name(c->spec.plan, c->spec.plan_nps, a,
				       sizeof(a));
			/* the id holds kind and server count (rinx_plan_id) */
			r = (c->clash_id - 1) & 0xff;
			if (!c->clash_id || r >= RINX_PLAN_MAX)
				snprintf(b, sizeof(b), "%s", "another");
			else
				rinx_plan_name(r, c->clash_id >> 8, b, sizeof(b));
			return rinx_c_cerr(c, -EINVAL, "rank %d runs plan %s, rank %d "
					   "plan %s: every rank of job %u must run the "
					   "same plan", c->rank, a, c->clash - 1, b,
					   c->job);
		}
		if (t >= next) {
			for (r = 0; r < c->n; r++)
				if (want & ~c->heard & (1ull << r))
					rinx_c_send_ctl(c, r, RINX_T_HELLO,
							RINX_HELLO_OPEN, 0,
							c->jobent.plan_id, 1,
							c->bval);
			next = t + 10000000ull;
		}
		rinx_c_x_kick(c->x);
		pthread_mutex_unlock(&c->x->lock);
		if (t > deadline) {
			rinx_c_list_ranks(c, want & ~c->heard, who, sizeof(who));
			return rinx_c_cerr(c, -ETIMEDOUT, "rank %d: %s did not open "
					   "job %u within %d ms", c->rank, who,
					   c->job, c->timeout_ms);
		}
		usleep(200);
	}
}

/* Closing: a peer whose last frames of the job's last collective were lost
 * asks this rank for them (NACKs the host program answers while the job is
 * installed here, fetches this trainer answers). Leaving at once left such
 * a peer without an answer, until its timeout. So a rank that completed
 * its last collective stays, answering, until every peer said BYE (it
 * closes, its last collective complete, so it needs nothing more of us),
 * at most CLOSE_LINGER_MS. Every rank says BYE to the peers that have not
 * said they heard it, every CLOSE_BYE_NS; once every peer's BYE is in, it
 * stays CLOSE_GRACE_NS more for a peer whose copy of ours was lost (such a
 * peer's repeated BYE is answered). A peer that never says BYE (dead,
 * gone, or closing much later) costs the linger's bound, no error. A peer
 * still in the collective answers our BYEs with STAY: it may be repairing
 * a block lost at the round's end (under 10% loss that took more than the
 * 2 s at times), and needs our hops and stored blocks for it. While STAYs
 * come, at most CLOSE_STAY_NS apart, the linger goes on past its bound,
 * until that peer's BYE, or its own timeout ends its STAYs; at most twice
 * the communicator's timeout more. */
#define CLOSE_LINGER_MS	2000
#define CLOSE_BYE_NS	5000000ull
#define CLOSE_GRACE_NS	10000000ull
#define CLOSE_STAY_NS	100000000ull

/* Past the linger's bound `end` at time t, and no STAY within
 * CLOSE_STAY_NS (or past `cap`): leave. */
int rinx_c_linger_over(const struct rinx_comm *c, __u64 t, __u64 end,
		       __u64 cap)
{
	if (t < end)
		return 0;
	if (!c->stay_at || t >= cap)
		return 1;
	/* a STAY taken after t was read (in this turn) is later than t */
	return (__s64)(t - c->stay_at) > (__s64)CLOSE_STAY_NS;
}

void rinx_c_close_linger(struct rinx_comm *c)
{
	__u64 want = rinx_c_peers_mask(c), next = 0, all_t = 0, t, end, cap;
	int ms = c->timeout_ms < CLOSE_LINGER_MS ? c->timeout_ms :
						   CLOSE_LINGER_MS;
	int r;

	end = now_ns() + (__u64)ms * 1000000ull;
	cap = end + 2 * (__u64)c->timeout_ms * 1000000ull;
	c->closing = 1;
	c->stay_at = 0;
	for (;;) {
		t = now_ns();
		pthread_mutex_lock(&c->x->lock);
		rinx_c_x_reclaim(c->x);
		rinx_c_slow_path(c);
		rinx_c_x_kick(c->x);	/* its answers go before we leave */
		if ((c->bye & want) == want && !all_t)
			all_t = t;
		if (all_t && ((c->bye_heard & want) == want ||
			      t - all_t >= CLOSE_GRACE_NS)) {
			pthread_mutex_unlock(&c->x->lock);
			break;
		}
		if (t >= next) {
			for (r = 0; r < c->n; r++)
				if (want & ~c->bye_heard & (1ull << r))
					rinx_c_send_ctl(c, r, RINX_T_HELLO,
							RINX_HELLO_BYE, 0,
							!!(c->bye & (1ull << r)),
							1, 1);
			next = t + CLOSE_BYE_NS;
		}
		rinx_c_x_kick(c->x);
		pthread_mutex_unlock(&c->x->lock);
		if (rinx_c_linger_over(c, t, end, cap))
			break;
		rinx_c_x_sleep(c, 200000);
	}
}

/* A barrier of agreement `coll` (kind 0: STATUS, 1: READY) that waits for
 * the ranks in `want` and ORs their words (and takes the least and most of
 * their positions, with this rank's `pos`), sending this rank's to the
 * ranks in `to`. Hellos are repeated until all in `want` were heard; a
 * peer that lost ours says so in its own (count 0) and is answered
 * (ctl_hello), even after we left. */
static int ctl_barrier(struct rinx_comm *c, int kind, __u32 coll, __u32 word,
		       __u32 pos, __u64 want, __u64 to, struct ctlbar *out)
{
	struct ctlbar *b = &c->bar[kind][0], *nx = &c->bar[kind][1];
	__u64 deadline = now_ns() + (__u64)c->timeout_ms * 1000000ull;
	__u64 next = 0, t;
	int step = kind ? RINX_HELLO_READY : RINX_HELLO_STATUS, r, done;
	char who[256];

	pthread_mutex_lock(&c->x->lock);
	if (nx->coll == coll) {
		*b = *nx;
	} else {
		memset(b, 0, sizeof(*b));
		b->coll = coll;
	}
	memset(nx, 0, sizeof(*nx));
	pthread_mutex_unlock(&c->x->lock);
	for (;;) {
		t = now_ns();
		pthread_mutex_lock(&c->x->lock);
		rinx_c_x_reclaim(c->x);
		rinx_c_slow_path(c);
		done = (b->from & want) == want;
		if (done || t >= next) {
			for (r = 0; r < c->n; r++)
				if (to & (1ull << r))
					rinx_c_send_ctl(c, r, RINX_T_HELLO, step, coll,
							word, pos, done);
			next = t + 10000000ull;
		}
		rinx_c_x_kick(c->x);
		if (done) {
			c->done_coll[kind] = coll;
			c->done_word[kind] = word;
			c->done_pos[kind] = pos;
			*out = *b;
			ctlbar_add(out, 1ull << c->rank, word, pos);
		}
		pthread_mutex_unlock(&c->x->lock);
		if (done)
			return 0;
		if (t > deadline) {
			rinx_c_list_ranks(c, want & ~b->from, who, sizeof(who));
			return rinx_c_cerr(c, -ETIMEDOUT, "rank %d: %s did not join "
					   "the agreement (INA agreement %u) within "
					   "%d ms", c->rank, who, coll, c->timeout_ms);
		}
		nap_ns(20000);
	}
}

/* The INA ToR racks (bit = index) still aggregating for this job. */
static __u32 ina_live(const struct rinx_comm *c)
{
	__u32 live = 0;
	int i;

	for (i = 0; i < c->spec.nracks && i < RINX_INA_RACKS; i++)
		if (c->spec.racks[i].ina == RINX_INA_SWITCH &&
		    rinx_plan_agent_of_rack(&c->spec, i) >= 0)
			live |= 1U << i;
	return live & ~c->down;
}

/* The racks (bit = index) whose aggregator this rank, as their agent,
 * finds gone: the INA ToR's control daemon says it no longer holds the job
 * (or does not answer). */
static __u32 ina_health(struct rinx_comm *c)
{
	int ri = rinx_plan_agent_of(&c->spec, c->rank);

	c->ina_query_at = now_ns();
	if (ri < 0 || ri >= RINX_INA_RACKS || !(ina_live(c) & (1U << ri)))
		return 0;
	c->ina_queries++;
	return rinx_c_tor_query(c, ri) ? 1U << ri : 0;
}

/* A failed INA ToR, agreed on: every rank joins agreement `k` (the
 * k-th of the communicator, started by the agent that found its ToR gone,
 * or by several at once) with the racks it finds gone and its position:
 * 2e while in round e, 2e + 1 once round e is complete here. No two ranks
 * are further apart than 2e - 1 .. 2e + 1 or 2e .. 2e + 2: a round
 * completes only once every rank has opened it. All rebuild the same plan
 * without those racks, and a second barrier makes sure that no block
 * moves before every rank runs it. Then, with X the round to finish:
 *  - no rank completed X (every rank is in it, or has not opened it): X
 *    runs again under the new plan, from the shares its first run wrote
 *    (round_open): blocks that finished in the first run are summed again
 *    from the same inputs and stored over their first result;
 *  - some ranks completed X: those still in it fetch the blocks they lack
 *    from them (rinx_c_fetch_round), and every rank goes on with the
 *    next collective, from its own shares where it had started it, as
 *    round X + 2 (its frames sent as X + 1 under the old plan are stale).
 * 1: the round (re)starts, 2: the collective is complete, < 0: error. */
static int ina_agree(struct rinx_req *r, __u32 k, __u32 word)
{
	struct rinx_comm *c = r->c;
	__u32 pos = 2 * c->round + !r->round_open, down, x;
	struct ctlbar all, ready;
	int err;
	char who[64];

	c->ina_agreed++;
	c->ina_seq = k;
	err = ctl_barrier(c, 0, k, word, pos, rinx_c_peers_mask(c),
			  rinx_c_peers_mask(c), &all);
	if (err)
		return err;
	down = (all.or & ((1U << RINX_INA_RACKS) - 1)) | c->down;
	if (down != c->down) {
		err = rinx_c_ina_replan(c, down);
		if (err)
			return err;
	}
	/* nobody sends a block before every rank runs the new plan */
	err = ctl_barrier(c, 1, k, 0, 0, rinx_c_peers_mask(c),
			  rinx_c_peers_mask(c), &ready);
	if (err)
		return err;
	snprintf(who, sizeof(who), "%#x", down);
	if (all.hi - all.lo > 2 - (all.lo & 1)) {
		c->broken = -ECONNRESET;
		return rinx_c_cerr(c, -ECONNRESET, "rank %d: an INA ToR (racks %s) "
				   "lost the job, and the ranks are more than "
				   "one round apart (rounds %u to %u): close and "
				   "reopen the communicator", c->rank, who,
				   all.lo / 2, all.hi / 2);
	}
	x = (all.lo + 1) / 2;
	if (!(all.lo & 1) && all.hi > all.lo) {
		/* some ranks completed round x */
		if (r->round_open && c->round == x)
			return rinx_c_fetch_round(r, x);
		r->reuse = r->round_open && c->round == x + 1 ? r->conv : 0;
		r->round_open = 0;
		c->round = x + 1;
		return 1;
	}
	/* nobody completed round x: it runs again, as x + 1 */
	r->reuse = r->round_open && c->round == x ? r->conv : 0;
	r->round_open = 0;
	c->round = x;
	return 1;
}

/* Watches the INA ToRs of a collective's plan, with no cost while they
 * work: an agent that sees no progress for a while asks its ToR's control
 * daemon (at most every INA_QUERY_NS); if the job is gone there, it starts
 * the agreement of ina_agree, which every other rank joins as soon as it
 * hears of it (here, at its next step). 0: go on, 1: a round starts under
 * the new plan, 2: the collective is complete, < 0: error. */
int rinx_c_ina_watch(struct rinx_req *r, __u64 t)
{
	struct rinx_comm *c = r->c;
	struct ctlbar *nx = &c->bar[0][1];
	__u32 e = 0, word;

	if (!ina_live(c) || c->n < 2)
		return 0;
	pthread_mutex_lock(&c->x->lock);
	if (nx->from && nx->coll == c->ina_seq + 1)
		e = nx->coll;
	pthread_mutex_unlock(&c->x->lock);
	if (e)
		return ina_agree(r, e, ina_health(c));
	if (!r->round_open || t - r->moved_at < INA_STALL_NS ||
	    t - c->ina_query_at < INA_QUERY_NS)
		return 0;
	word = ina_health(c);
	return word ? ina_agree(r, c->ina_seq + 1, word) : 0;
}

/* Which peers answer within `ms`? Called when an allreduce timed out. */
__u64 rinx_c_probe_peers(struct rinx_comm *c, int ms)
{
	__u64 deadline = now_ns() + (__u64)ms * 1000000ull;
	int r;

	c->alive = 0;
	pthread_mutex_lock(&c->x->lock);
	for (r = 0; r < c->n; r++)
		if (r != c->rank)
			send_hello(c, r, RINX_HELLO_PROBE);
	rinx_c_x_kick(c->x);
	pthread_mutex_unlock(&c->x->lock);
	while (now_ns() < deadline && (c->alive & rinx_c_peers_mask(c)) !=
					      rinx_c_peers_mask(c)) {
		pthread_mutex_lock(&c->x->lock);
		rinx_c_x_reclaim(c->x);
		rinx_c_slow_path(c);
		rinx_c_x_kick(c->x);
		pthread_mutex_unlock(&c->x->lock);
		usleep(200);
	}
	return c->alive;
}
