// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The trainer's congestion control law (user/comm/cc.c, rinx_c_cc_update), one
 * interval at a time: each case sets the state before the interval (rate,
 * target, alpha, last cut, the round's progress) and what the host
 * program counted in it (blocks stored, marked, own blocks sent), and
 * checks the rate, the target, the cut counter and the pacer's gap that
 * come out, against values worked out here from the law in docs/rinx.md
 * ("Congestion control"). No network: the cursor is a plain struct.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "uapi/rinx.h"
#include "user/comm/comm.h"
#include "selftests/lib/testlib.h"

#define MS	1000000ull
#define T0	(1000 * MS)	/* when the interval starts */

struct ccase {
	const char *name;
	double rate, target, ceiling, alpha;
	__u64 srtt;		/* ns */
	__u64 cut_ago;		/* ns before the interval's end; 0: never */
	__u64 dt;		/* the interval's length, ns */
	__u64 ds, dm;		/* stored, marked in the interval */
	__u32 sent;		/* own blocks sent in the interval */
	__u32 nb, nown;		/* the round */
	__u64 stored_round;	/* stored here this round, at the end */
	__u32 next;		/* own blocks sent this round, at the end */
	int calm;
	/* expected */
	int cut;		/* 1: a cut, 0: none */
	double rate_out;	/* < 0: unchanged */
	double target_out;	/* < 0: unchanged */
};

static const double G = 1.0 / 16;

static double alpha_after(const struct ccase *k)
{
	double f = k->dm > k->ds ? 1.0 : (double)k->dm / (double)k->ds;

	return (1 - G) * k->alpha + G * f;
}

static void run(const struct ccase *k, double want_rate, double want_target)
{
	struct rinx_comm *c = calloc(1, sizeof(*c));
	struct rinx_req *r = calloc(1, sizeof(*r));
	struct rinx_cursor *cur = calloc(RINX_MAX_JOBS, sizeof(*cur));
	__u64 now = T0 + k->dt;
	__u32 gap, want_gap;

	if (!c || !r || !cur) {
		tap_ok(0, "%s: out of memory", k->name);
		return;
	}
	c->cursors = cur;
	c->slot = 3;
	c->round = 7;
	c->srtt = k->srtt;
	r->c = c;
	r->nb = k->nb;
	r->nown = k->nown;
	cur[3].stored = 100000 + k->stored_round;
	cur[3].marked = 500 + k->dm;
	cur[3].next = k->next;
	c->cc.t = T0;
	c->cc.stored = cur[3].stored - k->ds;
	c->cc.marked = cur[3].marked - k->dm;
	c->cc.claimed = k->next - k->sent;
	c->cc.round = c->round;
	c->cc.stored0 = 100000;
	c->cc.rate = k->rate;
	c->cc.target = k->target;
	c->cc.ceiling = k->ceiling;
	c->cc.alpha = k->alpha;
	c->cc.ai = 50;
	c->cc.calm = k->calm;
	c->cc.cut = k->cut_ago ? now - k->cut_ago : 0;
	rinx_c_cc_update(r, now);
	gap = cur[3].gap_ns;
	tap_ok(c->st.cc_cuts == (__u64)k->cut, "%s: %s", k->name,
	       k->cut ? "cuts" : "does not cut");
	tap_ok(fabs(c->cc.rate - want_rate) < 1e-6 * want_rate,
	       "%s: rate %.3f (want %.3f)", k->name, c->cc.rate, want_rate);
	tap_ok(fabs(c->cc.target - want_target) < 1e-6 * want_target,
	       "%s: target %.3f (want %.3f)", k->name, c->cc.target,
	       want_target);
	/* no update: the pacer is left alone (0 here) */
	want_gap = k->dt < MS ? 0 : (__u32)(1e9 / want_rate);
	tap_ok(gap == want_gap, "%s: pacer gap %u ns (want %u)", k->name, gap,
	       want_gap);
	free(c);
	free(r);
	free(cur);
}

int main(void)
{
	/* A round of 800 blocks, 100 of them this rank's; 1.5 ms intervals.
	 * stored 100 of 800 (12.5%): a rank at its peers' pace sent about
	 * 12 of its 100 (the cut cases), one behind by more than 2% of the
	 * round sent 10 or fewer. */
	static const struct ccase cases[] = {
		{ "marks cut by alpha/2", 1000, 1000, 2000, 0.5, 0, 0,
		  1500000, 100, 50, 2, 800, 100, 100, 12, 0, 1, 0, 0 },
		{ "a rank behind its job does not cut", 1000, 1000, 2000, 0.5,
		  0, 0, 1500000, 100, 50, 2, 800, 100, 100, 10, 0, 0, -1, -1 },
		{ "1.9% behind still cuts", 1000, 1000, 2000, 0.5, 0, 0,
		  1500000, 100, 50, 2, 800, 1000, 100, 106, 0, 1, 0, 0 },
		{ "no second cut within 4 ms", 800, 1000, 2000, 0.5, 0,
		  3 * MS, 1500000, 100, 50, 2, 800, 100, 100, 12, 0, 0, -1,
		  -1 },
		{ "a cut after 4 ms, none clean since the last", 800, 1000,
		  2000, 0.5, 0, 5 * MS, 1500000, 100, 50, 2, 800, 100, 100,
		  12, 0, 1, 0, 0 },
		{ "a cut after 4 ms and a clean interval", 800, 1000, 2000,
		  0.5, 0, 5 * MS, 1500000, 100, 50, 2, 800, 100, 100, 12, 1,
		  1, 0, 0 },
		{ "a cut 9 ms after the last", 800, 1000, 2000, 0.5, 0, 9 * MS,
		  1500000, 100, 50, 2, 800, 100, 100, 12, 0, 1, 0, 0 },
		{ "a round trip longer than 4 ms holds longer", 800, 1000,
		  2000, 0.5, 10 * MS, 5 * MS, 1500000, 100, 50, 2, 800, 100,
		  100, 12, 0, 0, -1, -1 },
		{ "clean: halfway back to the target", 500, 1000, 2000, 0.2, 0,
		  0, 1500000, 100, 0, 2, 800, 100, 100, 12, 0, 0, 750, -1 },
		{ "at the ceiling a few marks are its own", 2000, 2000, 2000,
		  0.0, 0, 0, 1500000, 100, 1, 3, 800, 100, 100, 12, 0, 0, -1,
		  -1 },
		{ "shorter than 1 ms: no update", 1000, 1000, 2000, 0.5, 0, 0,
		  800000, 100, 50, 1, 800, 100, 100, 12, 0, 0, -1, -1 },
	};
	size_t i;

	tap_plan((int)(sizeof(cases) / sizeof(cases[0])) * 4);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ccase *k = &cases[i];
		double rate = k->rate_out, target = k->target_out;

		if (k->cut) {
			/* marked again with no clean interval since a cut
			 * within two holds: the target follows the rate */
			__u64 hold = k->srtt > 4 * MS ? k->srtt : 4 * MS;
			int again = k->cut_ago && !k->calm &&
				    k->cut_ago < 2 * hold;

			rate = k->rate * (1 - alpha_after(k) / 2);
			target = again ? rate : k->rate;
		}
		if (rate < 0)
			rate = k->rate;
		if (target < 0)
			target = k->target;
		run(k, rate, target);
	}
	return tap_done();
}
