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
 */
#include <stdlib.h>
#include <string.h>
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
		 (int)(sizeof(stall_cases) / sizeof(stall_cases[0])));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run(&cases[i]);
	for (i = 0; i < sizeof(stall_cases) / sizeof(stall_cases[0]); i++)
		run_stall(&stall_cases[i]);
	return tap_done();
}
