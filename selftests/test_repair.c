// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The trainer's repair timers (user/comm/repair.c), one state at a time:
 * each case sets the smoothed round trip of own blocks (srtt, rttvar) and
 * the gather step of the block at the cursor, and checks how long a hole
 * waits (rinx_c_hole_wait) and the stall timer of a moving round
 * (rinx_c_rto_stall), and the stall timer of a round paced slowly
 * (rinx_c_stall_wait: at least STALL_BLOCKS times a block's time), against
 * values worked out by hand from the rules in docs/rinx.md ("Loss and
 * duplicates"). No network: the communicator is a plain struct.
 *
 * Then the per-hop repair of a ring's reduce (rinx_c_reduce_holes) at the
 * rank where a class finishes, when the class stopped passing there
 * before the round's last window: every block of its origin's window was
 * lost past the origin's next hop, so nothing follows and only this hop
 * can ask. The RNACKs it sends are read back from a socket pair standing
 * in for the wire (a communicator without AF_XDP sockets sends by a
 * packet socket).
 *
 * Then the holes of finished blocks asked for one by one
 * (rinx_c_gather_holes): each hole's NACK on its own clock and backoff,
 * the first window's long wait only until a later block of its class
 * past that window finished here, a quarter more per gather step; and
 * every missing block asked at once when the node its gather comes from
 * sends a frame of the next round (it finished this one).
 *
 * Then own blocks at a round's tail (rinx_c_own_timers): sent again on
 * their timer alone, or first asked of an aggregator that also sends the
 * finished block.
 *
 * Then the hellos of closing: a closing peer's BYE answered with STAY by a
 * rank still in its collective, and when a closing rank's linger ends.
 *
 * Then tail notices (rinx_c_tail_notices): the notice a rank sends when it
 * passed on a class's last block of the round (its reduce, or the finished
 * block), once per class and round, to the node that block went to; and
 * at the receiving end, the reduce's and the finished block's tails asked
 * for after a hole's wait instead of a tail's, and a DONE taken as the
 * word that every missing block of its sender is to be asked for at once.
 *
 * Then which asks count as losses (rinx_c_count_ask, rinx_c_keep_round):
 * only those for blocks past the round's first window, once per run of a
 * class's blocks asked in a row, mark a ring's next rounds to keep partial
 * sums; RNACKs and a stall's asks for blocks not seen missing never; the
 * tail notices' gate opens on the asks past the first window, and on any
 * ask in a round wholly in it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include "uapi/rinx.h"
#include "user/comm/comm.h"
#include "selftests/lib/testlib.h"

#define US	1000ull
#define MS	1000000ull

struct tcase {
	const char *name;
	__u64 srtt, rttvar;	/* ns; srtt 0: no sample yet */
	__u8 step;		/* gather step of the cursor's class */
	int at;			/* the cursor: 0 past the round's first
				 * window, 1 in it, 2 past the last block */
	/* expected, ns */
	__u64 hole;
	__u64 stall;
};

static void run(const struct tcase *k)
{
	struct rinx_comm *c = calloc(1, sizeof(*c));
	struct rinx_req *r = calloc(1, sizeof(*r));
	__u64 hole, stall;

	if (!c || !r) {
		tap_ok(0, "%s: out of memory", k->name);
		tap_ok(0, "%s: out of memory", k->name);
		free(c);
		free(r);
		return;
	}
	/* two classes alternating, 2 blocks of each in flight: the round's
	 * first window is blocks 0-3. The cursor's block (5, or 3 in the
	 * first window) is class 1, whose gather reaches this rank at the
	 * case's step; class 0's step is one that no case expects */
	c->plan.plen = 2;
	c->plan.cmap[0] = 0;
	c->plan.cmap[1] = 1;
	c->plan.hops[0][RINX_T_GATHER - 1].step = 6;
	c->plan.hops[1][RINX_T_GATHER - 1].step = k->step;
	c->inflight = 2;
	c->srtt = k->srtt;
	c->rttvar = k->rttvar;
	r->c = c;
	r->nb = 10;
	r->cursor = k->at == 2 ? r->nb : k->at == 1 ? 3 : 5;
	hole = rinx_c_hole_wait(r);
	stall = rinx_c_rto_stall(c);
	tap_ok(hole == k->hole, "%s: a hole waits %llu us (want %llu)",
	       k->name, (unsigned long long)(hole / US),
	       (unsigned long long)(k->hole / US));
	tap_ok(stall == k->stall, "%s: stall timer %llu us (want %llu)",
	       k->name, (unsigned long long)(stall / US),
	       (unsigned long long)(k->stall / US));
	free(c);
	free(r);
}

/* rinx_c_stall_wait: the round's time per finished block so far (or the
 * rounds before, at the round's start) times 8, within the block time's
 * cap of 10 ms, never under rinx_c_rto_stall. */
struct scase {
	const char *name;
	__u64 srtt, rttvar;	/* ns */
	__u64 blk_ns;		/* the rounds before: ns per block */
	__u32 cursor;		/* blocks finished in order this round */
	__u64 elapsed;		/* ns since the round opened */
	__u64 want;		/* ns */
};

static void run_stall(const struct scase *k)
{
	struct rinx_comm *c = calloc(1, sizeof(*c));
	struct rinx_req *r = calloc(1, sizeof(*r));
	__u64 now = 5000 * MS, got;

	if (!c || !r) {
		tap_ok(0, "%s: out of memory", k->name);
		free(c);
		free(r);
		return;
	}
	c->srtt = k->srtt;
	c->rttvar = k->rttvar;
	c->blk_ns = k->blk_ns;
	r->c = c;
	r->nb = 640;
	r->cursor = k->cursor;
	r->opened_at = now - k->elapsed;
	got = rinx_c_stall_wait(r, now);
	tap_ok(got == k->want, "%s: stall timer %llu us (want %llu)", k->name,
	       (unsigned long long)(got / US),
	       (unsigned long long)(k->want / US));
	free(c);
	free(r);
}

static const struct scase stall_cases[] = {
	{ "a fast round keeps the 2 ms floor", 300 * US, 100 * US, 0, 500,
	  10 * MS, 2 * MS },
	{ "a fast round keeps the round trip's timer", 1300 * US, 1100 * US,
	  0, 500, 10 * MS, 7000 * US },
	{ "a block per 5 ms: 8 of them", 300 * US, 100 * US, 0, 100,
	  500 * MS, 40 * MS },
	{ "a block per 1.5 ms: 12 ms, over the round trip's 10", 8 * MS,
	  1 * MS, 0, 200, 300 * MS, 12 * MS },
	{ "the round trip's timer over 8 blocks", 8 * MS, 1 * MS, 0, 200,
	  200 * MS, 10 * MS },
	{ "the round's start: the rounds before", 300 * US, 100 * US,
	  2 * MS, 0, 50 * MS, 16 * MS },
	{ "the first round's start: the floor", 300 * US, 100 * US, 0, 0,
	  50 * MS, 2 * MS },
	{ "a block's time counts at most 10 ms", 300 * US, 100 * US, 0, 1,
	  1000 * MS, 80 * MS },
	{ "the round's own time, not the rounds before", 300 * US,
	  100 * US, 5 * MS, 400, 200 * MS, 4 * MS },
};


/*
 * A ring of 4 seen from W4 (rank 3), 4 classes in turn, 40 blocks, 2 own
 * blocks in flight per origin (the round's last window: blocks 32-39).
 * Class 0 (origin W1) finishes here (add and finish, from W3 at step 2);
 * classes 1 and 2 are added and forwarded here; class 3 starts here.
 * Classes 1 and 2 passed every block; class 0 blocks 0, 4 and 8 only:
 * 12-36 were lost on the way, the whole of W1's window, so none of its
 * blocks comes after them.
 */
#define SNB	40
#define SWIN	64

struct stopped {
	struct rinx_comm *c;
	struct rinx_req *r;
	struct xctx *x;
	int wire[2];		/* [0] the rank's packet socket, [1] read */
};

static void stopped_free(struct stopped *t)
{
	if (t->x) {
		free(t->x->area);
		if (t->wire[0] >= 0)
			close(t->wire[0]);
		if (t->wire[1] >= 0)
			close(t->wire[1]);
	}
	if (t->r) {
		free(t->r->rhole_at);
		free(t->r->rasked);
		free(t->r->ghole_at);
		free(t->r->gasked);
	}
	if (t->c) {
		free(t->c->result);
		free(t->c->partial);
		free(t->c->cursors);
	}
	free(t->x);
	free(t->r);
	free(t->c);
}

static int stopped_init(struct stopped *t, __u64 t0)
{
	struct rinx_comm *c;
	struct rinx_req *r;
	struct xctx *x;
	__u32 b, k;
	int i;

	memset(t, 0, sizeof(*t));
	t->wire[0] = t->wire[1] = -1;
	t->c = c = calloc(1, sizeof(*c));
	t->r = r = calloc(1, sizeof(*r));
	t->x = x = calloc(1, sizeof(*x));
	if (!c || !r || !x)
		return -1;
	c->result = calloc(SWIN, sizeof(*c->result));
	c->partial = calloc(SWIN, sizeof(*c->partial));
	c->cursors = calloc(1, sizeof(*c->cursors));
	r->rhole_at = calloc(SNB, sizeof(*r->rhole_at));
	r->rasked = calloc(SNB, sizeof(*r->rasked));
	x->area = calloc(64, FRAME_SIZE);
	if (!c->result || !c->partial || !c->cursors || !r->rhole_at ||
	    !r->rasked || !x->area ||
	    socketpair(AF_UNIX, SOCK_DGRAM, 0, t->wire))
		return -1;
	/* no AF_XDP socket: frames leave by the packet socket; the
	 * transmit ring, unused then, always has room */
	x->ringed = 1;
	x->pkt_fd = t->wire[0];
	x->tx.cached_cons = 1u << 30;
	for (i = 0; i < 64; i++)
		x->free[x->nfree++] = (__u64)i * FRAME_SIZE;
	c->x = x;
	c->rank = 3;
	c->n = 4;
	c->window = SWIN;
	c->bslots = 1;
	c->wblocks = SWIN;
	c->inflight = 2;
	c->round = 1;
	c->bval = 4;
	c->plan.nclasses = 4;
	c->plan.plen = 4;
	for (k = 0; k < 4; k++)
		c->plan.cmap[k] = k;
	c->plan.hops[0][RINX_T_REDUCE - 1] = (struct rinx_hop){
		.action = RINX_A_ADD_FINISH, .from = 2, .to = 0, .step = 2 };
	c->plan.hops[1][RINX_T_REDUCE - 1] = (struct rinx_hop){
		.action = RINX_A_ADD_FWD, .from = 2, .to = 0, .step = 1 };
	c->plan.hops[2][RINX_T_REDUCE - 1] = (struct rinx_hop){
		.action = RINX_A_ADD_FWD, .from = 2, .to = 0, .step = 0 };
	r->c = c;
	r->nb = SNB;
	r->last_count = 4;
	r->opened_at = t0;
	r->rmine = 7;		/* classes 0-2: their hop before answers */
	r->rfin = 1;		/* class 0 finishes here */
	for (k = 0; k < 4; k++)
		r->rpass_t[k] = t0;
	for (b = 0; b < SNB; b++) {
		if (b % 4 == 1 || b % 4 == 2)
			c->partial[b].round = 1;
		if (b % 4 == 0 && b < 12)
			c->result[b].round = 1;
	}
	return 0;
}

/* The RNACKs on the wire since the last look: blocks into asked[] (by
 * count), anything else counted in *other. */
static int read_asks(struct stopped *t, int *asked, int *other)
{
	__u8 buf[FRAME_SIZE];
	struct frame f;
	ssize_t len;
	int n = 0;

	while ((len = recv(t->wire[1], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		__u32 b;

		rinx_c_frame_at(buf, &f);
		b = ntohl(f.h->block);
		if (f.h->type == RINX_T_RNACK && ntohl(f.h->round) == 1 &&
		    f.h->step == 2 && ntohs(f.h->klass) == 0 && b < SNB &&
		    !memcmp(f.ip + 16, &t->c->plan.nodes[2].ip, 4))
			asked[b]++;
		else
			(*other)++;
		n++;
	}
	/* frames sent are free again, as a reclaim makes them */
	t->x->nfree += t->x->nsent;
	t->x->nsent = 0;
	return n;
}

static void run_stopped(void)
{
	struct stopped t;
	__u64 t0 = 1000 * MS, now;
	int asked[SNB] = { 0 }, other = 0, early, b, bad = 0;

	if (stopped_init(&t, t0)) {
		for (b = 0; b < 4; b++)
			tap_ok(0, "a class stopped mid-round: setup failed");
		stopped_free(&t);
		return;
	}
	t.c->plan.nodes[2].ip = htonl(0x0a000203);
	/* blocks 0, 4 and 8 of class 0 pass at 10 ms (in order: no hole),
	 * then 10 ms more: the class may merely wait for its origin, and the
	 * wait counts from its last block, not from the round's start */
	for (b = 0; b < 12; b += 4)
		t.c->result[b].round = 0;
	for (now = t0 + 100 * US; now <= t0 + 20 * MS; now += 100 * US) {
		if (now == t0 + 10 * MS)
			for (b = 0; b < 12; b += 4)
				t.c->result[b].round = 1;
		rinx_c_reduce_holes(t.r, now);
	}
	early = read_asks(&t, asked, &other);
	tap_ok(early == 0, "a class stopped mid-round: nothing asked within "
	       "10 ms of its last block (%d frames sent)", early);
	/* a second on: far past a stall's time */
	for (now = t0 + 1000 * MS; now <= t0 + 1005 * MS; now += 100 * US)
		rinx_c_reduce_holes(t.r, now);
	read_asks(&t, asked, &other);
	for (b = 0; b < SNB; b++)
		if (asked[b] != (b == 12 || b == 16))
			bad = 1;
	tap_ok(!bad && !other, "a class stopped mid-round: its next missing "
	       "blocks up to its origin's window (12, 16) asked of W3 once "
	       "each, nothing else (12: %d, 16: %d, 20: %d; %d other frames)",
	       asked[12], asked[16], asked[20], other);
	/* the answer to 12 arrives: 16 is still asked for, after twice the
	 * wait, 20 too now that the window moved on */
	t.c->result[12].round = 1;
	memset(asked, 0, sizeof(asked));
	for (now = t0 + 1006 * MS; now <= t0 + 3000 * MS; now += 1 * MS)
		rinx_c_reduce_holes(t.r, now);
	read_asks(&t, asked, &other);
	tap_ok(!asked[12] && asked[16] >= 1 && asked[20] >= 1 && !other,
	       "a class stopped mid-round: after block 12 came, 16 asked "
	       "again and 20 for the first time, 12 no more (12: %d, 16: %d, "
	       "20: %d; %d other frames)", asked[12], asked[16], asked[20],
	       other);
	/* every block of the class in: nothing more to ask */
	for (b = 16; b < SNB; b += 4)
		t.c->result[b].round = 1;
	memset(asked, 0, sizeof(asked));
	for (now = t0 + 3001 * MS; now <= t0 + 6000 * MS; now += 1 * MS)
		rinx_c_reduce_holes(t.r, now);
	b = read_asks(&t, asked, &other);
	tap_ok(b == 0, "a class stopped mid-round: once its blocks passed, "
	       "nothing asked (%d frames)", b);
	stopped_free(&t);
}

/*
 * A block sent again takes its gap from the job's pacer (rinx_c_pace_charge
 * in rinx_c_send_block); a first send does not (its gap was taken by
 * rinx_c_pace_ok before it was claimed). Without the charge a rank's
 * resends went out on top of its rate.
 */
static void run_resend_paced(void)
{
	struct stopped t;
	struct rinx_cursor *cur;
	__u64 t0 = 1000 * MS, before;
	int got, other = 0, asked[SNB] = { 0 }, ok;

	if (stopped_init(&t, t0) ||
	    !(t.c->share = calloc(SWIN, sizeof(*t.c->share)))) {
		tap_ok(0, "a resend is paced: setup failed");
		tap_ok(0, "a first send is not charged twice: setup failed");
		stopped_free(&t);
		return;
	}
	t.c->plan.nodes[0].ip = htonl(0x0a000201);
	cur = &t.c->cursors[0];
	cur->gap_ns = 10 * US;
	cur->burst = 1;
	/* the pacer's next send is due in 5 ms: a resend pushes it on by
	 * one gap */
	cur->next_ns = now_ns() + 5 * MS;
	before = cur->next_ns;
	ok = !rinx_c_send_block(t.r, 5, 1);
	got = read_asks(&t, asked, &other);
	tap_ok(ok && got == 1 && cur->next_ns == before + 10 * US,
	       "a resend is paced: sent %d (%d frames), the next send due "
	       "%lld ns later than before (want 10000)", ok, got,
	       (long long)(cur->next_ns - before));
	before = cur->next_ns;
	ok = !rinx_c_send_block(t.r, 6, 0);
	got = read_asks(&t, asked, &other);
	tap_ok(ok && got == 1 && cur->next_ns == before,
	       "a first send is not charged twice: sent %d (%d frames), the "
	       "next send moved %lld ns (want 0)", ok, got,
	       (long long)(cur->next_ns - before));
	free(t.c->share);
	stopped_free(&t);
}

/*
 * Own blocks at a round's tail (rinx_c_own_timers): W4 starts every block
 * of class 3 (3, 7, ..., 39), each a contribution to W1's aggregator (an
 * agent rack's member); its own block timer is 2 ms (srtt 1 ms, rttvar
 * 250 us), doubled per resend. Mid-round (6 of its 10 claimed) an own
 * block with nothing later of its class finished is left alone: more of
 * the class will come and show it lost, or the stall timer will. Once all
 * 10 are claimed and one of the round finished here, nothing can come
 * after the last: it is sent again on its timer alone. A round where
 * nothing finished here yet (its peers may be late to open it) sends
 * nothing.
 */
#define OWN_N	10

static int own_type, own_step;	/* the last frame own_sent saw */

/* the frames sent since the last look; *block: the last one's block (-2:
 * not a contribution or NACK of round 1 to node 0), unchanged if none */
static int own_sent(struct stopped *t, int *block)
{
	__u8 buf[FRAME_SIZE];
	struct frame f;
	ssize_t len;
	int n = 0;

	while ((len = recv(t->wire[1], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		rinx_c_frame_at(buf, &f);
		if ((f.h->type == RINX_T_CONTRIB ||
		     f.h->type == RINX_T_NACK) && ntohl(f.h->round) == 1 &&
		    !memcmp(f.ip + 16, &t->c->plan.nodes[0].ip, 4))
			*block = (int)ntohl(f.h->block);
		else
			*block = -2;
		own_type = f.h->type;
		own_step = f.h->step;
		n++;
	}
	t->x->nfree += t->x->nsent;
	t->x->nsent = 0;
	return n;
}

/* claimed of OWN_N own blocks, `fin` of them finished (the first ones);
 * returns the frames sent from t0 to t0 + until (100 us steps), the first
 * at *first (ns after t0) and the block of the last in *block. With
 * `agg`, node 0, where this worker's class 3 starts (its aggregator),
 * also sends it the finished blocks (a gather ending here, step 1). */
static int own_run_agg(__u32 claimed, __u32 fin, __u64 until, __u64 *first,
		       int *block, int agg)
{
	struct stopped t;
	__u64 t0 = 1000 * MS, now;
	__u32 j, own[OWN_N];
	__u64 sent_at[OWN_N];
	__u8 resent[OWN_N];
	int n = 0, got;

	*first = 0;
	*block = -1;
	if (stopped_init(&t, t0) ||
	    !(t.c->share = calloc(SWIN, sizeof(*t.c->share)))) {
		stopped_free(&t);
		return -1;
	}
	t.c->plan.nodes[0].ip = htonl(0x0a000201);
	t.c->plan.start_to[3] = 0;
	t.c->plan.start_type[3] = RINX_T_CONTRIB;
	if (agg)
		t.c->plan.hops[3][RINX_T_GATHER - 1] = (struct rinx_hop){
			.action = RINX_A_STORE_END, .from = 0, .step = 1,
			.to = 3, .rack = RINX_NO_RACK };
	t.c->srtt = 1 * MS;
	t.c->rttvar = 250 * US;
	t.c->keep = 0;
	for (j = 0; j < OWN_N; j++) {
		own[j] = 4 * j + 3;
		t.c->result[own[j]].round = j < fin ? 1 : 0;
	}
	t.r->own = own;
	t.r->nown = OWN_N;
	t.r->sent_at = sent_at;
	t.r->resent = resent;
	memset(resent, 0, sizeof(resent));
	/* the round trip of the finished ones is sampled already */
	t.r->sampled = fin;
	t.c->cursors[0].next = claimed;
	for (now = t0; now <= t0 + until; now += 100 * US) {
		rinx_c_own_timers(t.r, now);
		got = own_sent(&t, block);
		if (got && !n)
			*first = now - t0;
		n += got;
	}
	t.c->share = (free(t.c->share), NULL);
	t.r->own = NULL;
	t.r->sent_at = NULL;
	t.r->resent = NULL;
	stopped_free(&t);
	return n;
}

static int own_run(__u32 claimed, __u32 fin, __u64 until, __u64 *first,
		   int *block)
{
	return own_run_agg(claimed, fin, until, first, block, 0);
}

static void run_own_tail(void)
{
	__u64 first;
	int n, block;

	n = own_run(6, 5, 1000 * MS, &first, &block);
	tap_ok(n == 0, "own blocks mid-round (6 of 10 claimed, 5 finished): "
	       "the sixth, nothing later of its class finished, not sent "
	       "again in a second (%d frames)", n);
	n = own_run(OWN_N, OWN_N - 1, 5 * MS, &first, &block);
	tap_ok(n == 1 && block == 39 && first >= 2 * MS && first <= 2100 * US,
	       "own blocks at the round's tail (all claimed, 9 of 10 "
	       "finished): the last sent again at its timer, 2 ms, once "
	       "within 5 ms (%d frames, the first at %llu us, block %d)", n,
	       (unsigned long long)(first / US), block);
	n = own_run(OWN_N, OWN_N - 1, 6100 * US, &first, &block);
	tap_ok(n == 2 && block == 39,
	       "own blocks at the round's tail: sent again after twice the "
	       "timer more, at 6 ms (%d frames by 6.1 ms, block %d)", n,
	       block);
	n = own_run(OWN_N, 0, 1000 * MS, &first, &block);
	tap_ok(n == 0, "own blocks at the round's tail, nothing of the round "
	       "finished here yet: none sent again in a second (%d frames)",
	       n);
	/* a worker whose aggregator also sends it the finished block asks
	 * it first (it answers with the block, a pull of the share, or the
	 * sum sent on again: bpf/agg.bpf.h) */
	n = own_run_agg(OWN_N, OWN_N - 1, 5 * MS, &first, &block, 1);
	tap_ok(n == 1 && block == 39 && own_type == RINX_T_NACK &&
	       own_step == 1 && first >= 2 * MS && first <= 2100 * US,
	       "own blocks at the round's tail, the aggregator also sends the "
	       "finished block: at the timer, 2 ms, a NACK to it with the "
	       "gather's step, not the share (%d frames, the first at %llu "
	       "us, block %d, type %d, step %d)", n,
	       (unsigned long long)(first / US), block, own_type, own_step);
	n = own_run_agg(OWN_N, OWN_N - 1, 6100 * US, &first, &block, 1);
	tap_ok(n == 2 && block == 39 && own_type == RINX_T_CONTRIB,
	       "... and after twice the timer more, at 6 ms, the share itself "
	       "(%d frames by 6.1 ms, block %d, type %d)", n, block,
	       own_type);
}

/*
 * Holes of finished blocks (rinx_c_gather_holes), seen from W4 of the same
 * ring of 4: every class's gather comes from W3, class 2's at step 2, the
 * others' at step 0. srtt 4 ms: a hole waits a quarter of it, 1 ms (a
 * quarter more per step), and in the round's first window (blocks 0-7)
 * twice the own block timer, 8 ms, unless a block of its class past that
 * window finished here. Finished at the start:
 *   class 0: only block 4 (block 0 a hole in the first window, unproven;
 *            8, 12, ... past the class's last finished: not holes);
 *   class 1: all but 1 (first window, proven) and 13 (answered at 2 ms);
 *   class 2: all but 6 (first window, proven, step 2);
 *   class 3: 3, 11, 15, 19 (7 a hole, proven); at 3.5 ms 27 finishes,
 *            making 23 a hole then.
 * The cursor stays at block 0 throughout.
 */
#define GASKS	4

static void gather_asks(struct stopped *t, __u64 now,
			__u64 at[SNB][GASKS], int *n, int *other)
{
	__u8 buf[FRAME_SIZE];
	struct frame f;
	ssize_t len;

	while ((len = recv(t->wire[1], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		__u32 b, k;

		rinx_c_frame_at(buf, &f);
		b = ntohl(f.h->block);
		k = ntohs(f.h->klass);
		if (f.h->type == RINX_T_NACK && ntohl(f.h->round) == 1 &&
		    b < SNB && k == b % 4 && f.h->step == (k == 2 ? 2 : 0) &&
		    !memcmp(f.ip + 16, &t->c->plan.nodes[2].ip, 4)) {
			if (n[b] < GASKS)
				at[b][n[b]] = now;
			n[b]++;
		} else {
			(*other)++;
		}
	}
	t->x->nfree += t->x->nsent;
	t->x->nsent = 0;
}

/* A frame of round `round` from node `from`, through the slow path's
 * gate: RINX_SP_KEEP for a later round. */
static int slow_from(struct stopped *t, __u32 round, __u16 from)
{
	__u8 buf[RINX_FRAME_LEN(RINX_BLOCK_VALUES_MIN)];
	__u32 bval = t->c->bval;
	struct frame f;
	int ret;

	memset(buf, 0, sizeof(buf));
	rinx_c_frame_at(buf, &f);
	f.h->magic = htonl(RINX_MAGIC);
	f.h->version = RINX_VERSION;
	f.h->type = RINX_T_GATHER;
	f.h->round = htonl(round);
	f.h->block = htonl(3);
	f.h->nblocks = htonl(SNB);
	f.h->sender = htons(from);
	/* a frame of the network's smallest block: this rank's size */
	t->c->bval = RINX_BLOCK_VALUES_MIN;
	t->c->active = t->r;
	t->r->round_open = 1;
	ret = rinx_c_slow_frame(t->c, buf, sizeof(buf));
	t->c->bval = bval;
	return ret;
}

/*
 * The same rank at 10 ms: the node its gathers come from (W3) sends a
 * frame of the next round, so it finished this one and holds every
 * block of it: every missing block is asked at once, a class's last
 * ones too (class 0's 8-36, class 3's 31-39), and the holes asked before
 * once more (W3 may have lacked them then); after that they keep their
 * own clocks. A frame of a later round from another node (W2)
 * says nothing about W3.
 */
static void run_ahead(struct stopped *t, __u64 t0, __u64 at[SNB][GASKS],
		      int *n)
{
	int before[SNB], other = 0, b, got, bad = 0;
	__u64 now = t0;

	memcpy(before, n, sizeof(before));
	got = slow_from(t, 2, 1) == RINX_SP_KEEP &&
	      slow_from(t, 3, 2) == RINX_SP_KEEP;
	for (; now <= t0 + 1 * MS; now += 50 * US) {
		rinx_c_gather_holes(t->r, now);
		gather_asks(t, now, at, n, &other);
	}
	for (b = 0; b < SNB; b++)
		if (n[b] != before[b] && b != 0 && b != 1 && b != 6 &&
		    b != 7 && b != 23)
			bad++;
	tap_ok(got && !bad && !other, "the next round's frames: W2's, and "
	       "W3's of the round after, ask for nothing new (%d blocks, "
	       "%d other frames)", bad, other);
	memcpy(before, n, sizeof(before));
	got = slow_from(t, 2, 2) == RINX_SP_KEEP;
	t0 = now;
	for (; now <= t0 + 150 * US; now += 50 * US) {
		rinx_c_gather_holes(t->r, now);
		gather_asks(t, now, at, n, &other);
	}
	for (b = 0; b < SNB; b++) {
		int tail = (b % 4 == 0 && b >= 8) || (b % 4 == 3 && b >= 31);

		/* the holes asked before, when W3 lacked them, too */
		if (b == 0 || b == 1 || b == 6 || b == 7 || b == 23)
			tail = 1;
		if (n[b] - before[b] != tail)
			bad++;
	}
	tap_ok(got && !bad && !other, "W3 runs the next round: every block "
	       "past its class's last finished one asked of it at once, "
	       "once, the holes asked before once more, and no other (%d "
	       "blocks wrong, %d other frames)", bad, other);
}

static int in_ms(__u64 v, __u64 t0, __u64 lo_us, __u64 hi_us)
{
	return v >= t0 + lo_us * US && v <= t0 + hi_us * US;
}

/* The same word from the host program: the senders of next-round frames
 * it took itself (the cursor's ahead, of round + 1 only). */
static void run_ahead_cursor(struct stopped *t, __u64 now)
{
	struct rinx_cursor *cur = &t->c->cursors[t->c->slot];
	__u64 stale, got;

	t->r->ahead = 0;
	cur->ahead = 1ull << 2;
	cur->ahead_round = t->c->round;
	rinx_c_gather_holes(t->r, now);
	stale = t->r->ahead;
	cur->ahead_round = t->c->round + 1;
	rinx_c_gather_holes(t->r, now + 10 * MS);
	got = t->r->ahead;
	tap_ok(!stale && got == 1ull << 2, "the host program's word: W3 "
	       "noted ahead for the next round is taken, for this round "
	       "not (%#llx, %#llx)", (unsigned long long)got,
	       (unsigned long long)stale);
	cur->ahead = 0;
	cur->ahead_round = 0;
}

static void run_gather_holes(void)
{
	static __u64 at[SNB][GASKS];
	struct stopped t;
	__u64 t0 = 1000 * MS, now;
	int n[SNB] = { 0 }, other = 0, b, k, stray = 0;

	memset(at, 0, sizeof(at));
	if (stopped_init(&t, t0) ||
	    !(t.r->ghole_at = calloc(SNB, sizeof(*t.r->ghole_at))) ||
	    !(t.r->gasked = calloc(SNB, sizeof(*t.r->gasked)))) {
		for (b = 0; b < 9; b++)
			tap_ok(0, "holes one by one: setup failed");
		stopped_free(&t);
		return;
	}
	t.c->plan.nodes[2].ip = htonl(0x0a000203);
	t.c->srtt = 4 * MS;
	t.c->rttvar = 0;
	t.r->rmine = 0;		/* the reduce's repair is not looked at */
	for (k = 0; k < 4; k++)
		t.c->plan.hops[k][RINX_T_GATHER - 1] = (struct rinx_hop){
			.action = RINX_A_STORE_FWD, .from = 2, .to = 0,
			.step = k == 2 ? 2 : 0 };
	for (b = 0; b < SNB; b++)
		t.c->result[b].round =
			b % 4 == 0 ? b == 4 :
			b % 4 == 3 ? (b <= 19 && b != 7) :
			b != 1 && b != 13 && b != 6;
	t.r->cursor = 0;
	for (now = t0; now <= t0 + 10 * MS; now += 50 * US) {
		if (now == t0 + 2 * MS)
			t.c->result[13].round = 1;
		if (now == t0 + 3500 * US)
			t.c->result[27].round = 1;
		rinx_c_gather_holes(t.r, now);
		gather_asks(&t, now, at, n, &other);
	}
	tap_ok(n[1] && n[7] && in_ms(at[1][0], t0, 1000, 1300) &&
	       in_ms(at[7][0], t0, 1000, 1300),
	       "holes one by one: a first-window hole whose class finished a "
	       "block past that window waits 1 ms, not 8 (block 1 at %lld us, "
	       "7 at %lld us)", n[1] ? (long long)((at[1][0] - t0) / US) : -1,
	       n[7] ? (long long)((at[7][0] - t0) / US) : -1);
	tap_ok(n[6] && in_ms(at[6][0], t0, 1500, 1800),
	       "holes one by one: two gather steps on, 1.5 ms (block 6 at "
	       "%lld us)", n[6] ? (long long)((at[6][0] - t0) / US) : -1);
	tap_ok(n[13] == 1 && n[1] >= 2 && in_ms(at[1][1], at[1][0], 2000,
						2300),
	       "holes one by one: asked again after twice the wait until "
	       "it came (block 13 asked %d times, block 1 again after %lld "
	       "us)", n[13], n[1] >= 2 ?
	       (long long)((at[1][1] - at[1][0]) / US) : -1);
	tap_ok(n[23] && in_ms(at[23][0], t0, 4500, 4800),
	       "holes one by one: a hole seen at 3.5 ms is asked 1 ms later, "
	       "whatever the others' backoff (block 23 at %lld us)",
	       n[23] ? (long long)((at[23][0] - t0) / US) : -1);
	tap_ok(n[0] && in_ms(at[0][0], t0, 8000, 8300),
	       "holes one by one: a first-window hole with nothing of its "
	       "class past that window waits twice the own block timer, 8 ms "
	       "(block 0 at %lld us)",
	       n[0] ? (long long)((at[0][0] - t0) / US) : -1);
	for (b = 0; b < SNB; b++)
		if (n[b] && b != 0 && b != 1 && b != 6 && b != 7 && b != 13 &&
		    b != 23)
			stray++;
	tap_ok(!stray && !other, "holes one by one: no block past its "
	       "class's last finished one asked (%d blocks, %d other frames)",
	       stray, other);
	/* the first window is blocks 0-7 (2 in flight x 4 classes): only
	 * the asks for blocks 13 and 23 are losses */
	for (b = 0, k = 0, stray = 0; b < SNB; b++) {
		k += n[b];
		stray += b >= 8 ? n[b] : 0;
	}
	tap_ok(t.c->st.nacks == (__u64)k && t.c->loss_runs == 2 &&
	       stray == n[13] + n[23] && k > stray,
	       "holes one by one: every NACK counted, those past the first "
	       "window as losses, once per block (%llu NACKs, %d sent; "
	       "%llu losses, %d asks past the window)",
	       (unsigned long long)t.c->st.nacks, k,
	       (unsigned long long)t.c->loss_runs, stray);
	run_ahead(&t, now, at, n);
	run_ahead_cursor(&t, now + 100 * MS);
	stopped_free(&t);
}

/*
 * Closing (rinx_c_close_linger's hellos, through the slow path): a rank
 * still in the job's collective answers a closing peer's BYE with STAY
 * (it may need that peer's hops and stored blocks to repair a lost
 * block); one that is not answers nothing; a closing rank takes a STAY
 * as the word to stay, and answers a BYE with "I heard yours".
 */
/* A hello of kind `step` (round, block k, count) from node `node` into
 * buf, through the slow path. */
static int hello_at(struct stopped *t, __u8 *buf, __u8 step, __u32 round,
		    __u32 k, __u16 cnt, __u16 node)
{
	struct frame f;

	memset(buf, 0, RINX_FRAME_MIN);
	rinx_c_frame_at(buf, &f);
	f.h->magic = htonl(RINX_MAGIC);
	f.h->version = RINX_VERSION;
	f.h->type = RINX_T_HELLO;
	f.h->step = step;
	f.h->round = htonl(round);
	f.h->block = htonl(k);
	f.h->count = htons(cnt);
	f.h->sender = htons(node);
	memcpy(f.ip + 12, &t->c->plan.nodes[node].ip, 4);
	return rinx_c_slow_frame(t->c, buf, RINX_FRAME_MIN);
}

static int hello_from(struct stopped *t, __u8 step, __u32 k, __u8 *buf)
{
	return hello_at(t, buf, step, 0, k, 0, 2);
}

static void run_close(void)
{
	__u8 buf[RINX_FRAME_MIN];
	struct stopped t;
	struct frame f;
	int ret;

	if (stopped_init(&t, 1000 * MS)) {
		for (ret = 0; ret < 5; ret++)
			tap_ok(0, "close: setup failed");
		stopped_free(&t);
		return;
	}
	t.c->plan.nodes[2].ip = htonl(0x0a000203);
	rinx_c_frame_at(buf, &f);
	t.c->active = t.r;
	ret = hello_from(&t, RINX_HELLO_BYE, 0, buf);
	tap_ok(ret == RINX_SP_SEND && f.h->step == RINX_HELLO_STAY &&
	       !memcmp(f.ip + 16, &t.c->plan.nodes[2].ip, 4) &&
	       (t.c->bye & 4), "close: a BYE while the collective runs here "
	       "is answered with STAY, to its sender (%d, step %u)", ret,
	       f.h->step);
	t.c->active = NULL;
	ret = hello_from(&t, RINX_HELLO_BYE, 0, buf);
	tap_ok(ret == RINX_SP_FREE, "close: a BYE after the collective "
	       "completed is not answered (%d)", ret);
	t.c->closing = 1;
	ret = hello_from(&t, RINX_HELLO_STAY, 0, buf);
	tap_ok(ret == RINX_SP_FREE && t.c->stay_at, "close: a STAY while "
	       "closing is taken (%d, stay_at %llu)", ret,
	       (unsigned long long)t.c->stay_at);
	{
		/* linger's bound at 2 s, cap at 18 s; STAYs keep it 100 ms */
		__u64 end = 2000 * MS, cap = 18000 * MS, s = t.c->stay_at;
		int over[6];

		t.c->stay_at = 0;
		over[0] = rinx_c_linger_over(t.c, 1999 * MS, end, cap);
		over[1] = rinx_c_linger_over(t.c, 2000 * MS, end, cap);
		t.c->stay_at = 1950 * MS;
		over[2] = rinx_c_linger_over(t.c, 2040 * MS, end, cap);
		over[3] = rinx_c_linger_over(t.c, 2051 * MS, end, cap);
		/* taken in this turn, after t was read */
		t.c->stay_at = 2041 * MS;
		over[4] = rinx_c_linger_over(t.c, 2040 * MS, end, cap);
		t.c->stay_at = 17990 * MS;
		over[5] = rinx_c_linger_over(t.c, 18000 * MS, end, cap);
		t.c->stay_at = s;
		tap_ok(!over[0] && over[1] && !over[2] && over[3] &&
		       !over[4] && over[5], "close: the linger ends at its "
		       "bound without STAY, goes on within 100 ms of one (one "
		       "taken after the turn's clock too), ends at its cap "
		       "(%d %d %d %d %d %d; want 0 1 0 1 0 1)", over[0],
		       over[1], over[2], over[3], over[4], over[5]);
	}
	ret = hello_from(&t, RINX_HELLO_BYE, 0, buf);
	tap_ok(ret == RINX_SP_SEND && f.h->step == RINX_HELLO_BYE &&
	       ntohl(f.h->block) == 1, "close: closing too, a BYE is "
	       "answered: heard (%d, step %u, word %u)", ret, f.h->step,
	       ntohl(f.h->block));
	stopped_free(&t);
}

/*
 * Tail notices, from W4 of the ring of 4 (rank 3; SNB 40 blocks, classes
 * 0-3 in turn, so the classes' last blocks are 36-39). Class 0 finishes
 * here and its finished block goes on to W1 (node 0); classes 1 and 2 are
 * added and forwarded to W1; class 3 starts here, its first hop W1 too.
 */
struct tail_seen {
	int n;			/* frames */
	int tail[SNB][3];	/* TAIL hellos to W1 per block, by count */
	int done;		/* DONE hellos to W1 (or W3, dest_ok) */
	int nack[SNB], rnack[SNB];	/* asks of W3 (node 2) */
	int other;
};

static void tail_read(struct stopped *t, struct tail_seen *s)
{
	__u8 buf[FRAME_SIZE];
	struct frame f;
	ssize_t len;

	while ((len = recv(t->wire[1], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		__u32 b, cnt;
		int to0, to2;

		rinx_c_frame_at(buf, &f);
		b = ntohl(f.h->block);
		cnt = ntohs(f.h->count);
		to0 = !memcmp(f.ip + 16, &t->c->plan.nodes[0].ip, 4);
		to2 = !memcmp(f.ip + 16, &t->c->plan.nodes[2].ip, 4);
		s->n++;
		if (f.h->type == RINX_T_HELLO && f.h->step == RINX_HELLO_TAIL &&
		    to0 && ntohl(f.h->round) == t->c->round && b < SNB &&
		    cnt >= 1 && cnt <= 2)
			s->tail[b][cnt]++;
		else if (f.h->type == RINX_T_HELLO &&
			 f.h->step == RINX_HELLO_DONE && to0 &&
			 ntohl(f.h->round) == t->c->round)
			s->done++;
		else if (f.h->type == RINX_T_NACK && to2 && b < SNB)
			s->nack[b]++;
		else if (f.h->type == RINX_T_RNACK && to2 && b < SNB)
			s->rnack[b]++;
		else
			s->other++;
	}
	t->x->nfree += t->x->nsent;
	t->x->nsent = 0;
}

static int tail_init(struct stopped *t, __u64 t0)
{
	__u32 k;

	if (stopped_init(t, t0) ||
	    !(t->r->ghole_at = calloc(SNB, sizeof(*t->r->ghole_at))) ||
	    !(t->r->gasked = calloc(SNB, sizeof(*t->r->gasked))))
		return -1;
	t->c->plan.nodes[0].ip = htonl(0x0a000201);
	t->c->plan.nodes[2].ip = htonl(0x0a000203);
	for (k = 0; k < 4; k++)
		t->c->ownidx[k] = k == 3 ? 0 : -1;
	t->c->jobent.nown = 1;
	t->c->plan.start_to[3] = 0;
	t->c->plan.start_type[3] = RINX_T_REDUCE;
	t->c->keep = 1;
	t->c->srtt = 4 * MS;
	/* as rinx_plan_next_hosts finds them: W1 takes the reduce of
	 * classes 1-3 from here and class 0's finished block */
	for (k = 1; k < 4; k++)
		t->c->tail_rto[k] = 1;
	t->c->tail_gto[0] = 1;
	rinx_c_reduce_init(t->r);
	t->c->tail_asks = 1;	/* it repairs: notices go out */
	return 0;
}

static void run_tail_send(void)
{
	struct stopped t;
	struct tail_seen s;
	__u32 b;
	int bad = 0;

	memset(&s, 0, sizeof(s));
	if (tail_init(&t, 1000 * MS)) {
		for (b = 0; b < 6; b++)
			tap_ok(0, "tail notices: setup failed");
		stopped_free(&t);
		return;
	}
	/* classes 1 and 2 passed every block here; class 0's last block
	 * has not finished, class 3's last own block is not claimed. A
	 * rank that asked for nothing in this round or the one before
	 * sends no notice */
	t.c->cursors[0].next = 9;
	t.c->tail_asks = 0;
	rinx_c_tail_notices(t.r);
	rinx_c_round_done(t.r);
	tail_read(&t, &s);
	tap_ok(s.n == 0, "tail notices: none from a rank that repaired "
	       "nothing in this round or the one before (%d frames)", s.n);
	t.c->tail_asks = 1;
	memset(&s, 0, sizeof(s));
	rinx_c_tail_notices(t.r);
	tail_read(&t, &s);
	for (b = 0; b < SNB; b++)
		if (s.tail[b][1] != (b == 37 || b == 38) || s.tail[b][2])
			bad++;
	tap_ok(t.r->lastb[0] == 36 && t.r->lastb[3] == 39 && !bad &&
	       !s.other && s.n == 2, "tail notices: the reduce of the "
	       "classes added and forwarded here (37, 38) told to the next "
	       "hop once each, nothing of a class whose last block did not "
	       "pass (%d frames, %d wrong, lastb %u..%u)", s.n, bad,
	       t.r->lastb[0], t.r->lastb[3]);
	memset(&s, 0, sizeof(s));
	rinx_c_tail_notices(t.r);
	tail_read(&t, &s);
	tap_ok(s.n == 0, "tail notices: once per class and round (%d frames "
	       "the second time)", s.n);
	/* class 3's last own block claimed (sent), class 0's finished */
	t.c->cursors[0].next = 10;
	t.c->result[36].round = 1;
	rinx_c_tail_notices(t.r);
	tail_read(&t, &s);
	tap_ok(s.n == 2 && s.tail[39][1] == 1 && s.tail[36][2] == 1 &&
	       !s.other, "tail notices: the origin's last block once sent, "
	       "the finished block of the class that finishes here, each "
	       "told to the node it went to (%d frames: 39 reduce %d, 36 "
	       "finished %d)", s.n, s.tail[39][1], s.tail[36][2]);
	/* a finished block passed on by a gather hop, and the round done */
	t.c->plan.hops[1][RINX_T_GATHER - 1] = (struct rinx_hop){
		.action = RINX_A_STORE_FWD, .from = 2, .to = 0, .step = 1 };
	t.c->tail_gto[1] = 1;
	t.r->tleft[1][1] = 1;
	t.c->result[37].round = 1;
	memset(&s, 0, sizeof(s));
	rinx_c_tail_notices(t.r);
	rinx_c_round_done(t.r);
	tail_read(&t, &s);
	tap_ok(s.n == 2 && s.tail[37][2] == 1 && s.done == 1 && !s.other,
	       "tail notices: a gather hop's finished block told on; DONE "
	       "once to W1, the one node this rank sends finished blocks "
	       "(%d frames: 37 finished %d, DONE %d)", s.n, s.tail[37][2],
	       s.done);
	/* the next round, the hops not keeping sums: no reduce notice (the
	 * next hop would not ask); the finished block's still */
	t.c->round = 2;
	t.c->keep = 0;
	rinx_c_reduce_init(t.r);
	t.c->tail_asks++;
	for (b = 0; b < SNB; b++) {
		t.c->partial[b].round = 2;
		t.c->result[b].round = 0;
	}
	t.c->result[36].round = 2;
	memset(&s, 0, sizeof(s));
	rinx_c_tail_notices(t.r);
	tail_read(&t, &s);
	tap_ok(s.n == 1 && s.tail[36][2] == 1 && !s.other,
	       "tail notices: hops not keeping sums: no reduce notice, the "
	       "finished block's still (%d frames)", s.n);
	/* a multicast's receivers: every one told, once */
	t.c->round = 3;
	t.c->tail_gto[0] = 1 | 2;
	t.c->plan.nodes[1].ip = htonl(0x0a000202);
	rinx_c_reduce_init(t.r);
	t.c->tail_asks++;
	t.c->result[36].round = 3;
	memset(&s, 0, sizeof(s));
	rinx_c_tail_notices(t.r);
	rinx_c_tail_notices(t.r);
	tail_read(&t, &s);
	tap_ok(s.n == 2 && s.tail[36][2] == 1 && s.other == 1 &&
	       !t.r->tleft[1][0], "tail notices: a finished block passed on "
	       "to two hosts (a rack's multicast) told to each, once (%d "
	       "frames)", s.n);
	stopped_free(&t);
}

/* A hello of kind `step` for round `round`, block b, count `cnt`, from
 * node `node` (tail_from: W3, node 2), with this rank's round open. */
static int tail_from_node(struct stopped *t, __u8 step, __u32 round,
			  __u32 b, __u16 cnt, __u16 node)
{
	__u8 buf[RINX_FRAME_MIN];

	t->c->active = t->r;
	t->r->round_open = 1;
	return hello_at(t, buf, step, round, b, cnt, node);
}

static int tail_from(struct stopped *t, __u8 step, __u32 round, __u32 b,
		     __u16 cnt)
{
	return tail_from_node(t, step, round, b, cnt, 2);
}

/*
 * Heard: class 1's reduce comes from W3 and its last block, 37, has not
 * passed here (the blocks before it did); class 3's finished blocks come
 * from W3 too, and 31 and 39 are missing (35 and the rest finished). The
 * reduce's tail waits 2 ms after its class last passed, the finished
 * block's the stall timer: neither is asked in 1.5 ms without a notice.
 * A notice makes them holes: 37's RNACK after the hole's 300 us, 31 and
 * 39's NACKs after a quarter of srtt (1 ms).
 */
static void run_tail_heard(void)
{
	struct stopped t;
	struct tail_seen s;
	__u64 t0 = 1000 * MS, now, at37 = 0, at39 = 0;
	__u32 b;
	int ret[4];

	memset(&s, 0, sizeof(s));
	if (tail_init(&t, t0)) {
		for (b = 0; b < 4; b++)
			tap_ok(0, "tail notices heard: setup failed");
		stopped_free(&t);
		return;
	}
	t.r->rmine = 1u << 1;
	t.c->plan.hops[3][RINX_T_GATHER - 1] = (struct rinx_hop){
		.action = RINX_A_STORE_FWD, .from = 2, .to = 0, .step = 0 };
	t.c->partial[37].round = 0;
	for (b = 3; b < SNB; b += 4)
		t.c->result[b].round = b != 31 && b != 39;
	t.c->result[35].round = 0;	/* 35 too: 31 is not a hole yet */
	for (b = 0; b < 4; b++)
		t.r->rpass_t[b] = t0;
	for (now = t0; now <= t0 + 1500 * US; now += 50 * US) {
		rinx_c_reduce_holes(t.r, now);
		rinx_c_gather_holes(t.r, now);
	}
	tail_read(&t, &s);
	tap_ok(s.n == 0, "tail notices heard: without one, neither class's "
	       "tail asked within 1.5 ms (%d frames)", s.n);
	/* notices of another round, or of a block past the round, or from
	 * a node the class does not come from: nothing */
	t.c->plan.nodes[1].ip = htonl(0x0a000202);
	ret[0] = tail_from_node(&t, RINX_HELLO_TAIL, 1, 37, 1, 1) |
		 tail_from_node(&t, RINX_HELLO_TAIL, 1, 39, 2, 1);
	for (now = t0; now <= t0 + 1500 * US; now += 50 * US) {
		rinx_c_reduce_holes(t.r, now);
		rinx_c_gather_holes(t.r, now);
	}
	tail_read(&t, &s);
	tap_ok(ret[0] == RINX_SP_FREE && s.n == 0, "tail notices heard: "
	       "one from a node the classes do not come from asks nothing "
	       "(%d frames)", s.n);
	ret[0] = tail_from(&t, RINX_HELLO_TAIL, 2, 37, 1);
	ret[1] = tail_from(&t, RINX_HELLO_TAIL, 1, SNB, 2);
	ret[2] = tail_from(&t, RINX_HELLO_TAIL, 1, 37, 1);
	ret[3] = tail_from(&t, RINX_HELLO_TAIL, 1, 39, 2);
	t0 = now;
	for (; now <= t0 + 3 * MS; now += 50 * US) {
		rinx_c_reduce_holes(t.r, now);
		rinx_c_gather_holes(t.r, now);
		b = (__u32)s.rnack[37];
		tail_read(&t, &s);
		if (!b && s.rnack[37])
			at37 = now - t0;
		if (!at39 && s.nack[39])
			at39 = now - t0;
	}
	tap_ok(ret[0] == RINX_SP_FREE && ret[1] == RINX_SP_FREE &&
	       ret[2] == RINX_SP_FREE && ret[3] == RINX_SP_FREE &&
	       s.rnack[37] >= 1 && at37 >= 300 * US && at37 <= 500 * US,
	       "tail notices heard: the reduce's last block asked of the hop "
	       "before after a hole's wait (RNACK for 37 at %llu us, want "
	       "300-500)", (unsigned long long)(at37 / US));
	tap_ok(s.nack[39] >= 1 && s.nack[31] >= 1 && at39 >= 1 * MS &&
	       at39 <= 1300 * US, "tail notices heard: the finished block's "
	       "last one and the hole before it asked after a hole's wait "
	       "(NACK for 39 at %llu us, want 1000-1300; 31 asked %d times)",
	       (unsigned long long)(at39 / US), s.nack[31]);
	b = 0;
	for (now = 0; now < SNB; now++)
		if ((s.nack[now] && now != 31 && now != 39 && now != 35) ||
		    (s.rnack[now] && now != 37))
			b++;
	{
		__u64 before = t.r->ahead;

		ret[0] = tail_from(&t, RINX_HELLO_DONE, 2, 0, 1);
		ret[1] = t.r->ahead == before;
		ret[2] = tail_from(&t, RINX_HELLO_DONE, 1, 0, 1);
		/* its copy is no notice of block 0's reduce */
		t.c->plan.hops[0][RINX_T_REDUCE - 1].from = 2;
		t.r->rmine |= 1;
		t.r->rhi[0] = 0;
		ret[3] = tail_from(&t, RINX_HELLO_DONE, 1, 0, 1);
		tap_ok(!b && !s.other && ret[0] == RINX_SP_FREE && ret[1] &&
		       ret[2] == RINX_SP_FREE && (t.r->ahead & 4) &&
		       ret[3] == RINX_SP_FREE && !t.r->rhi[0],
		       "tail notices heard: nothing else asked (%d blocks, %d "
		       "other frames); a DONE of this round marks W3 as done "
		       "with it (ahead %#llx), of another round not, and a "
		       "copy of it is no tail notice (rhi %u)",
		       (int)b, s.other, (unsigned long long)t.r->ahead,
		       t.r->rhi[0]);
	}
	stopped_free(&t);
}

/*
 * The receivers of tail notices from the plans themselves
 * (rinx_plan_next_hosts): on a ring of 4 (ranks in order, class k from
 * rank k), rank 1 passes every class's reduce and finished block to rank
 * 2, except the reduce of the class that finishes at rank 1 (class 2)
 * and the finished block of the class whose gather ends there (class
 * 3, whose reduce rank 2 adds and finishes: rank 1 started it). With an
 * agent rack of 3 (ranks 0-2, agent 0) and two plain ranks, the agent
 * multicasts every finished block into its rack: ranks 1 and 2 get it
 * from the agent for every class.
 */
static void run_next_hosts(void)
{
	struct rinx_spec *s = calloc(1, sizeof(*s));
	__u64 red[RINX_MAX_CLASSES], gat[RINX_MAX_CLASSES];
	int r, k, bad = 0, err;

	if (!s) {
		tap_ok(0, "next hosts: out of memory");
		tap_ok(0, "next hosts: out of memory");
		return;
	}
	rinx_spec_init(s);
	s->nhosts = 4;
	for (r = 0; r < 4; r++) {
		snprintf(s->hosts[r].name, sizeof(s->hosts[r].name), "h%d", r);
		s->hosts[r].rank = r;
		s->hosts[r].rack = RINX_NO_RACK;
		s->hosts[r].ip = htonl(0x0a000201 + r);
	}
	s->plan = RINX_PLAN_RING;
	rinx_plan_spec(s);
	err = rinx_plan_next_hosts(s, 1, red, gat);
	for (k = 0; k < 4; k++)
		if (red[k] != (k == 2 ? 0 : 4ull) ||
		    gat[k] != (k == 3 ? 0 : 4ull))
			bad++;
	tap_ok(!err && !bad, "next hosts: a ring of 4: rank 1 passes the "
	       "reduce and the finished block to rank 2, but the reduce "
	       "finishing at 1 and the gather ending at 2 (%d, %d wrong: "
	       "%#llx %#llx %#llx %#llx / %#llx %#llx %#llx %#llx)", err, bad,
	       (unsigned long long)red[0], (unsigned long long)red[1],
	       (unsigned long long)red[2], (unsigned long long)red[3],
	       (unsigned long long)gat[0], (unsigned long long)gat[1],
	       (unsigned long long)gat[2], (unsigned long long)gat[3]);
	rinx_spec_init(s);
	s->nhosts = 5;
	for (r = 0; r < 5; r++) {
		snprintf(s->hosts[r].name, sizeof(s->hosts[r].name), "h%d", r);
		s->hosts[r].rank = r;
		s->hosts[r].rack = r < 3 ? 1 : 2;
		s->hosts[r].ip = htonl(0x0a000201 + r);
	}
	s->nracks = 2;
	s->racks[0].id = 1;
	s->racks[0].ina = RINX_INA_AGENT;
	snprintf(s->racks[0].name, sizeof(s->racks[0].name), "a");
	s->racks[1].id = 2;
	s->racks[1].ina = RINX_INA_NONE;
	snprintf(s->racks[1].name, sizeof(s->racks[1].name), "p");
	s->plan = RINX_PLAN_RINA;
	rinx_plan_spec(s);
	err = rinx_plan_next_hosts(s, 0, red, gat);
	bad = 0;
	for (k = 0; k < 3; k++)
		if ((gat[k] & 6) != 6)
			bad++;
	tap_ok(!err && !bad, "next hosts: an agent passes every finished "
	       "block to its rack's workers (%d, %d classes without: %#llx "
	       "%#llx %#llx)", err, bad, (unsigned long long)gat[0],
	       (unsigned long long)gat[1], (unsigned long long)gat[2]);
	free(s);
}

/*
 * Which asks mark a ring's rounds lossy (rinx_c_keep_round: partial sums
 * kept for the next rounds) and which open the tail notices' gate: the
 * asks past the round's first window (blocks 0-7 here: 2 in flight x 4
 * classes), once per run of a class's blocks asked in a row, more than a
 * fortieth of the window (400 blocks here: more than 10 runs); never
 * RNACKs, nor a stall's asks for blocks not seen missing; for the gate,
 * any other ask, and in a round that lies wholly in its first window
 * those too. The n asks are for blocks b, b + stride, b + 2 stride, ...
 */
struct kcase {
	const char *name;
	__u32 nb;		/* the round's blocks */
	int what;		/* RINX_ASK_* */
	__u32 b, n, stride;
	int rated;		/* links of known rate */
	__u32 lossy_left;	/* expected */
	int keep, gate;		/* the next round keeps sums; notices */
};

static const struct kcase keep_cases[] = {
	{ "first-window NACKs are no loss", SNB, RINX_ASK_NACK, 0, 8, 1, 0,
	  0, 0, 0 },
	{ "first-window resends are no loss", SNB, RINX_ASK_RESEND, 0, 8, 1,
	  0, 0, 0, 0 },
	{ "ten blocks apart past the window are not more than a fortieth",
	  SNB, RINX_ASK_NACK, 8, 10, 8, 0, 0, 0, 1 },
	{ "eleven blocks apart mark the next rounds", SNB, RINX_ASK_NACK, 8,
	  11, 8, 0, 8, 0, 1 },
	{ "eleven resends apart mark them", SNB, RINX_ASK_RESEND, 9, 11, 8, 0,
	  8, 0, 1 },
	{ "40 blocks in two runs do not (a late peer's streams of two "
	  "classes)", SNB, RINX_ASK_NACK, 8, 40, 2, 0, 0, 0, 1 },
	{ "one block asked 20 times is one run", SNB, RINX_ASK_NACK, 8, 20,
	  0, 0, 0, 0, 1 },
	{ "RNACKs past the window are no loss, but repairs", SNB,
	  RINX_ASK_RNACK, 8, 20, 8, 0, 0, 0, 1 },
	{ "a round wholly in its first window: asks open the gate only",
	  8, RINX_ASK_NACK, 0, 8, 1, 0, 0, 0, 1 },
	{ "a stall's NACKs past their class's last finished block are no "
	  "loss", SNB, RINX_ASK_NACK | RINX_ASK_PROBE, 8, 20, 8, 0, 0, 0, 0 },
	{ "... nor its resends", SNB, RINX_ASK_RESEND | RINX_ASK_PROBE, 8, 20,
	  8, 0, 0, 0, 0 },
	{ "... even in a round wholly in its first window", 8,
	  RINX_ASK_NACK | RINX_ASK_PROBE, 0, 8, 1, 0, 0, 0, 0 },
	{ "links of known rate keep sums whatever was asked", SNB,
	  RINX_ASK_NACK, 3, 1, 1, 1, 0, 1, 0 },
};

static void run_keep(const struct kcase *k)
{
	struct stopped t;
	__u32 i;
	__u64 nacks, resends;
	int gate, what = k->what & ~RINX_ASK_PROBE;

	if (stopped_init(&t, 1000 * MS)) {
		tap_ok(0, "losses: %s: setup failed", k->name);
		stopped_free(&t);
		return;
	}
	t.c->adapt_keep = 1;
	t.c->rated = k->rated;
	t.r->nb = k->nb;
	t.c->window = 400;
	/* the round opens (as rinx_c_reduce_init keeps the gate's count) */
	rinx_c_keep_round(t.c);
	rinx_c_reduce_init(t.r);
	for (i = 0; i < k->n; i++)
		rinx_c_count_ask(t.r, k->b + i * k->stride, k->what);
	nacks = t.c->st.nacks;
	resends = t.c->st.retransmits;
	gate = t.c->tail_asks > t.c->asks_open;
	/* the next round opens: the results carry what the round marked */
	t.c->keep_next = 0;
	rinx_c_keep_round(t.c);
	tap_ok(t.c->lossy_left == k->lossy_left && t.c->keep == k->keep &&
	       gate == k->gate &&
	       nacks == (what == RINX_ASK_RESEND ? 0 : k->n) &&
	       resends == (what == RINX_ASK_RESEND ? k->n : 0),
	       "losses: %s (marks %u rounds, keeps %d, notices %d; %llu "
	       "NACKs, %llu resends)", k->name, t.c->lossy_left, t.c->keep,
	       gate, (unsigned long long)nacks, (unsigned long long)resends);
	stopped_free(&t);
}

/* A marked rank's next rounds: it marks its shares for LOSSY_ROUNDS
 * rounds, one fewer per clean round; every rank keeps sums in a round
 * whose results carried the mark, and only then. */
static void run_keep_rounds(void)
{
	struct stopped t;
	int ok = 1, r;

	if (stopped_init(&t, 1000 * MS)) {
		tap_ok(0, "losses: marked rounds: setup failed");
		stopped_free(&t);
		return;
	}
	t.c->adapt_keep = 1;
	rinx_c_keep_round(t.c);
	rinx_c_count_ask(t.r, 29, RINX_ASK_NACK);
	rinx_c_count_ask(t.r, 30, RINX_ASK_NACK);
	rinx_c_count_ask(t.r, 31, RINX_ASK_NACK);
	for (r = 0; r < 10; r++) {
		t.c->keep_next = r % 2;
		rinx_c_keep_round(t.c);
		ok &= t.c->lossy_left == (r < 8 ? 8u - (__u32)r : 0u);
		ok &= t.c->keep == r % 2;
		ok &= !!(t.c->jobent.flags & RINX_JOB_KEEP) == r % 2;
	}
	tap_ok(ok, "losses: a mark lasts 8 rounds, one fewer per clean "
	       "round; sums kept in a round whose results carried one (%u "
	       "left)", t.c->lossy_left);
	stopped_free(&t);
}

/* A stall's repair (rinx_c_repair): every class finished its blocks up to
 * 20-23 but class 1's block 13 (a hole past the first window), and nothing
 * from 24 on. It asks for 13 and for the next 2 blocks of every class: only
 * 13 is evidence of a loss. */
static void run_stall_asks(void)
{
	static __u64 at[SNB][GASKS];
	struct stopped t;
	int n[SNB] = { 0 }, other = 0, b, k, asked = 0;

	memset(at, 0, sizeof(at));
	if (stopped_init(&t, 1000 * MS) ||
	    !(t.r->ghole_at = calloc(SNB, sizeof(*t.r->ghole_at))) ||
	    !(t.r->gasked = calloc(SNB, sizeof(*t.r->gasked)))) {
		tap_ok(0, "losses: a stall's repair: setup failed");
		stopped_free(&t);
		return;
	}
	t.c->plan.nodes[2].ip = htonl(0x0a000203);
	for (k = 0; k < 4; k++) {
		t.c->plan.hops[k][RINX_T_GATHER - 1] = (struct rinx_hop){
			.action = RINX_A_STORE_FWD, .from = 2, .to = 0,
			.step = k == 2 ? 2 : 0 };
		t.c->ownidx[k] = -1;
	}
	for (b = 0; b < SNB; b++)
		t.c->result[b].round = b < 24 && b != 13;
	rinx_c_repair(t.r, 0, 1);
	gather_asks(&t, 1000 * MS, at, n, &other);
	for (b = 0; b < SNB; b++)
		asked += n[b];
	tap_ok(n[13] == 1 && n[24] == 1 && n[28] == 1 && asked == 9 &&
	       !other && t.c->st.nacks == 9 && t.c->loss_runs == 1 &&
	       t.c->tail_asks == 1,
	       "losses: a stall's repair asks for the hole and 2 blocks of "
	       "every class after it; the hole alone is a loss (%d asked, "
	       "%llu NACKs counted, %llu losses)", asked,
	       (unsigned long long)t.c->st.nacks,
	       (unsigned long long)t.c->loss_runs);
	stopped_free(&t);
}

int main(void)
{
	/* hole: srtt / 4 within 1 ms .. 2 x the own block timer (srtt + 4
	 * rttvar within 2..50 ms; 10 ms before a sample), in the round's
	 * first window that limit itself; plus a quarter of it per gather
	 * step. stall: 2 srtt + 4 rttvar within 2..10 ms;
	 * 10 ms before a sample. */
	static const struct tcase cases[] = {
		{ "no sample yet: the floor", 0, 0, 0, 0, 1 * MS, 10 * MS },
		{ "a busy machine's round trip: 1 ms, not 2 timers", 1300 * US,
		  1100 * US, 0, 0, 1 * MS, 7000 * US },
		{ "a quarter of the round trip above the floor", 8 * MS,
		  1 * MS, 0, 0, 2 * MS, 10 * MS },
		{ "a quarter more per gather step", 8 * MS, 1 * MS, 3, 0,
		  3500 * US, 10 * MS },
		{ "the floor, 2 steps on", 2 * MS, 0, 2, 0, 1500 * US,
		  4 * MS },
		{ "a long round trip", 40 * MS, 0, 0, 0, 10 * MS, 10 * MS },
		{ "never more than twice the own block timer", 800 * MS, 0,
		  0, 0, 100 * MS, 10 * MS },
		{ "... plus its steps", 800 * MS, 0, 1, 0, 125 * MS, 10 * MS },
		{ "the stall timer's floor", 300 * US, 100 * US, 0, 0, 1 * MS,
		  2 * MS },
		{ "the cursor at the round's end: no step", 8 * MS, 1 * MS, 3,
		  2, 2 * MS, 10 * MS },
		{ "the first window: two own block timers", 8 * MS, 1 * MS, 0,
		  1, 24 * MS, 10 * MS },
		{ "... plus its steps", 8 * MS, 1 * MS, 2, 1, 36 * MS,
		  10 * MS },
		{ "the first window, a busy machine", 1300 * US, 1100 * US, 0,
		  1, 11400 * US, 7000 * US },
		{ "the first window, no sample yet", 0, 0, 0, 1, 20 * MS,
		  10 * MS },
	};
	size_t i;

	tap_plan((int)(sizeof(cases) / sizeof(cases[0])) * 2 +
		 (int)(sizeof(stall_cases) / sizeof(stall_cases[0])) + 6 + 9 + 5 + 4 +
		 2 + 7 + 5 + 2 + 1 +
		 (int)(sizeof(keep_cases) / sizeof(keep_cases[0])) + 2);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run(&cases[i]);
	for (i = 0; i < sizeof(stall_cases) / sizeof(stall_cases[0]); i++)
		run_stall(&stall_cases[i]);
	run_stopped();
	run_resend_paced();
	run_own_tail();
	run_gather_holes();
	run_close();
	run_tail_send();
	run_tail_heard();
	run_next_hosts();
	for (i = 0; i < sizeof(keep_cases) / sizeof(keep_cases[0]); i++)
		run_keep(&keep_cases[i]);
	run_keep_rounds();
	run_stall_asks();
	return tap_done();
}
