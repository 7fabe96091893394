// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * INA ToRs that lose their aggregator: their racks fall back to plain ring
 * members and no sum is wrong (Rina's incremental deployment, the other
 * way round).
 *
 *   h0 h1 --- t0 (INA: agg0) ---+
 *   h2 h3 --- t1 (INA: agg1) --- sp
 *   h4 h5 --- t2 (INA: agg2) ---+
 *
 * 1. ten allreduces on the Rina plan: members agg0, agg1, agg2; h0/h1
 *    contribute and do no ring hop; no rank takes part in an agreement on
 *    the ToRs' health (the steady state has no barrier);
 * 2. one with h3 late by 300 ms: the others stall, the agent h0 asks its
 *    ToR, which still holds the job: no agreement, no plan change;
 * 3. a collective of two rounds, in place, with every frame from t0 to h0
 *    lost: h1..h5 complete round 1 and stall in round 2, h0 lacks round
 *    1's results; agg0 and agg2 taken away at once (rinx_testbed_ina_off),
 *    h0's link heals: the agents h0 (in round 1) and h4 (in round 2) find
 *    their jobs gone and start the same agreement, which every rank joins
 *    once; h0 fetches round 1's blocks from the others and round 2 runs on
 *    the ring h0 h1 agg1 h4 h5 (h0 now does ring hops); int32 bit-exact;
 *    then one float32 allreduce, within rinx_f32_bound;
 * 4. agg1 taken away while a collective of six rounds runs, in place:
 *    whatever the moment, no rank returns a wrong element (a round that
 *    nobody completed runs again from the shares of its first run, whose
 *    inputs are partly overwritten; one that some completed is fetched
 *    from them); the next collective is exact on every rank on the ring
 *    of the six hosts, or, if the ranks could not agree, fails on every
 *    rank (close and reopen).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "selftests/lib/testlib.h"
#include "tools/gen.h"
#include "user/comm/comm.h"
#include "user/ctl.h"
#include "user/librinx.h"
#include "tools/testbed/testbed.h"

#define NR	6
#define COUNT	(5 * 768 + 77)
#define COUNT2	(6 * 64 * 768)	/* phase 5: six rounds of the window */
#define COUNT3	(2 * 64 * 768)	/* phase 3: two rounds */

static char prefix[RINX_TB_PREFIX_MAX + 1];
static int up;

static void cleanup(void)
{
	if (up)
		rinx_testbed_down(prefix, NULL);
	up = 0;
}

static void on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

struct report {
	int err;
	int wrong;		/* elements off the reference */
	uint64_t fallbacks;	/* plan changes seen by this rank */
	unsigned agreed;	/* INA agreements joined */
	unsigned queries;	/* ToR queries (h0, the agent) */
	uint64_t slow_adds;	/* reduce hops done in user space */
	uint64_t fetched;	/* blocks fetched from other ranks */
	char msg[200];
};

/* One collective on every rank: phase 1 (ten times), 2 and 3 int32, 4
 * float32; in phase 2 rank 3 starts late. */
static void collective(struct rinx_comm *c, int rank, int phase,
		       struct report *rep)
{
	static int32_t in[COUNT2], out[COUNT2];
	static float fin[COUNT], fout[COUNT];
	struct rinx_comm_stats st;
	uint64_t seed = 1000 + phase, i;
	int r;

	memset(rep, 0, sizeof(*rep));
	if (phase == 2 && rank == 3)
		usleep(300000);
	if (phase != 4) {
		int k, times = phase == 1 ? 10 : 1;
		uint64_t n = phase == 5 ? COUNT2 : phase == 3 ? COUNT3 : COUNT;

		for (k = 0; k < times && !rep->err; k++) {
			for (i = 0; i < n; i++)
				in[i] = gen_i32(seed + k * 10, rank, i);
			/* phases 3 and 5 in place: a round that runs again
			 * after blocks of it finished has their inputs
			 * overwritten */
			int inplace = phase == 3 || phase == 5;

			rep->err = rinx_allreduce(c, in, inplace ? in : out,
						  n, RINX_INT32);
			for (i = 0; !rep->err && i < n; i++) {
				uint32_t want = 0;

				for (r = 0; r < NR; r++)
					want += (uint32_t)gen_i32(seed + k * 10,
								  r, i);
				rep->wrong += (uint32_t)(inplace ? in[i] :
							 out[i]) != want;
			}
		}
	} else {
		for (i = 0; i < COUNT; i++)
			fin[i] = gen_f32(seed, rank, i);
		rep->err = rinx_allreduce(c, fin, fout, COUNT, RINX_FLOAT32);
		for (i = 0; !rep->err && i < COUNT; i++) {
			double want = 0, amax = 0;

			for (r = 0; r < NR; r++) {
				double v = gen_f32(seed, r, i);

				want += v;
				/* the bound takes the block's amax; the
				 * element's own is a stricter check */
				amax = fabs(v) > amax ? fabs(v) : amax;
			}
			for (r = 0; r < NR; r++) {
				uint64_t b = i / 768 * 768, k;

				for (k = b; k < b + 768 && k < COUNT; k++)
					if (fabs(gen_f32(seed, r, k)) > amax)
						amax = fabs(gen_f32(seed, r, k));
			}
			rep->wrong += !(fabs(fout[i] - want) <=
					rinx_f32_bound(NR, amax));
		}
	}
	if (rep->err)
		snprintf(rep->msg, sizeof(rep->msg), "%s", rinx_comm_error(c));
	rinx_comm_stats(c, &st);
	rep->fallbacks = st.ina_fallbacks;
	rep->agreed = c->ina_agreed;
	rep->queries = c->ina_queries;
	rep->slow_adds = c->slow_adds;
	rep->fetched = c->ina_fetched;
}

static void child(const char *spec, const struct rinx_spec *s, int rank,
		  int in, int out)
{
	struct rinx_comm_opts o = { .sz = sizeof(o), .spec = spec,
				    .rank = rank, .job = 4242, .token = 77,
				    .timeout_ms = 8000, .inflight = 64 };
	struct rinx_comm *c = NULL;
	struct report rep = { 0 };
	int oldfd, phase;

	/* the testbed is the parent's to take down */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	rep.err = rinx_netns_enter(rinx_spec_rank(s, rank)->netns, &oldfd);
	if (!rep.err)
		rep.err = rinx_comm_open(&o, &c);
	if (rep.err)
		snprintf(rep.msg, sizeof(rep.msg), "open: %s",
			 rinx_comm_error(NULL));
	if (write(out, &rep, sizeof(rep)) != sizeof(rep) || rep.err)
		_exit(1);
	while (read(in, &phase, sizeof(phase)) == sizeof(phase) && phase) {
		collective(c, rank, phase, &rep);
		if (write(out, &rep, sizeof(rep)) != sizeof(rep))
			break;
	}
	rinx_comm_close(c);
	_exit(0);
}

static __u64 host_stat(const struct rinx_spec *s, int rank, int stat)
{
	__u64 v[RINX_STAT_MAX];

	if (rinx_node_stats(s, rinx_spec_rank(s, rank), v))
		return ~0ull;
	return v[stat];
}

static int to_c[NR], from_c[NR];

/* Tells every rank to run `phase`. The ranks that could not be told. */
static int start_phase(int phase)
{
	int r, bad = 0;

	for (r = 0; r < NR; r++)
		if (write(to_c[r], &phase, sizeof(phase)) != sizeof(phase))
			bad++;
	return bad;
}

/* Rank r's report of the phase it ran: 0, or -1 if none came. */
static int read_report(int r, struct report *rep)
{
	return read(from_c[r], rep, sizeof(*rep)) == sizeof(*rep) ? 0 : -1;
}

/* Phase 3's fault: every frame from rack 0's ToR to h0 lost (on), or
 * none (off). The number of failures (0 or 1). */
static int phase3_fault(const char *spec, int on)
{
	struct rinx_sw_link_set f = { .drop_ppm = on ? 1000000 : 0 };
	int n = 0, err;

	err = rinx_testbed_fault_set(spec, "t0:p0", &f, RINX_TB_F_DROP, &n);
	if (err || n != 1)
		tap_diag("fault on t0:p0: %d (%d ports)", err, n);
	return err || n != 1;
}

int main(void)
{
	int ina[3] = { RINX_INA_SWITCH, RINX_INA_SWITCH, RINX_INA_SWITCH };
	struct rinx_testbed_opts to = { 0 };
	int r, phase, status;
	char spec[RINX_PATH_MAX];
	struct report rep[NR];
	pid_t pid[NR];
	struct rinx_spec s;
	__u64 fwd0, fwd1, g0[NR];

	tl_needs_root("namespaces, XDP");
	tl_ns_prefix(prefix, sizeof(prefix), "rxI");
	to.prefix = prefix;
	to.racks = 3;
	to.hosts_per_rack = 2;
	to.ina = ina;
	to.window = 64;
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* a reader gone (the output piped to a pager) must not stop the
	 * test before it takes its testbed down */
	signal(SIGPIPE, SIG_IGN);
	alarm(300);
	tap_plan(21);
	up = 1;
	if (!tap_ok(!rinx_testbed_up(&to, &s), "testbed %s: 3 racks x 2, "
		    "INA ToRs", prefix))
		return tap_done();
	rinx_testbed_spec_path(prefix, spec, sizeof(spec));
	fflush(stdout);
	for (r = 0; r < NR; r++) {
		int a[2], b[2];

		if (pipe(a) || pipe(b))
			return 1;
		pid[r] = fork();
		if (pid[r] == 0) {
			close(a[1]);
			close(b[0]);
			child(spec, &s, r, a[0], b[1]);
		}
		close(a[0]);
		close(b[1]);
		to_c[r] = a[1];
		from_c[r] = b[0];
	}
	for (r = 0; r < NR; r++)
		if (read_report(r, &rep[r]) || rep[r].err)
			tap_diag("rank %d: %s", r, rep[r].msg);

	fwd0 = host_stat(&s, 0, RINX_STAT_REDUCE_FWD) +
	       host_stat(&s, 0, RINX_STAT_REDUCE_FINISH);
	for (phase = 1; phase <= 4; phase++) {
		int bad = 0, fb_ok = 1, ag_ok = 1;
		unsigned q0 = rep[0].queries;

		if (phase == 3) {
			bad += phase3_fault(spec, 1);
			for (r = 0; r < NR; r++)
				g0[r] = host_stat(&s, r, RINX_STAT_GATHER_END);
		}
		bad += start_phase(phase);
		if (phase == 3) {
			/* h1..h5 complete round 1 (its 64 results end at
			 * each) and stall in round 2, h0 never gets round 1's
			 * results; then two ToRs lose the job at once, whose
			 * agents h0 and h4 find it in different rounds, and
			 * h0's link heals */
			struct timespec ts = { 0, 5000000 };
			int k, done = 0;

			for (k = 0; k < 1000 && !done; k++) {
				nanosleep(&ts, NULL);
				done = 1;
				for (r = 0; r < NR; r++)
					if (r != 0 &&
					    host_stat(&s, r, RINX_STAT_GATHER_END) <
					    g0[r] + 64)
						done = 0;
			}
			nanosleep(&ts, NULL);
			tap_ok(!rinx_testbed_ina_off(spec, 0) &&
			       !rinx_testbed_ina_off(spec, 2),
			       "racks 0 and 2 lose their aggregators at once "
			       "while h0 misses round 1's results");
			bad += phase3_fault(spec, 0);
		}
		for (r = 0; r < NR; r++) {
			if (read_report(r, &rep[r])) {
				bad++;
				continue;
			}
			if (rep[r].err || rep[r].wrong) {
				tap_diag("phase %d rank %d: err %d, %d wrong: %s",
					 phase, r, rep[r].err, rep[r].wrong,
					 rep[r].msg);
				bad++;
			}
			fb_ok &= rep[r].fallbacks == (phase < 3 ? 0 : 1);
			ag_ok &= rep[r].agreed == (phase < 3 ? 0 : 1);
		}
		tap_ok(!bad, "phase %d (%s): every element of every rank %s",
		       phase, phase < 4 ? "int32" : "float32",
		       phase < 4 ? "bit-exact" : "within the bound");
		tap_ok(fb_ok, "phase %d: every rank ran %s", phase,
		       phase < 3 ? "the Rina plan (no fallback)" :
		       "the fallen-back plan (one plan change)");
		if (phase != 4)
			tap_ok(ag_ok, "phase %d: every rank joined %s", phase,
			       phase < 3 ? "no INA agreement" :
			       "one INA agreement");
		if (phase == 3) {
			int others = 0;

			for (r = 1; r < NR; r++)
				others += rep[r].fetched != 0;
			tap_ok(rep[0].fetched > 0 && !others,
			       "phase 3: h0 fetched the round it lacked (%llu "
			       "blocks), the others went on", (unsigned long long)
			       rep[0].fetched);
		}
		if (phase == 2)
			tap_ok(rep[0].queries > q0, "phase 2: the agent h0 "
			       "asked its ToR while h3 was late (%u queries)",
			       rep[0].queries - q0);
		if (phase == 1) {
			fwd1 = host_stat(&s, 0, RINX_STAT_REDUCE_FWD) +
			       host_stat(&s, 0, RINX_STAT_REDUCE_FINISH);
			tap_ok(fwd1 == fwd0 && !rep[0].slow_adds &&
			       host_stat(&s, 0, RINX_STAT_GATHER_END) > 0,
			       "with INA, h0 contributed and did no ring hop");
		}
	}
	fwd1 = host_stat(&s, 0, RINX_STAT_REDUCE_FWD) +
	       host_stat(&s, 0, RINX_STAT_REDUCE_FINISH);
	/* its hops are done in XDP, or in user space when a block arrives
	 * before its share is written (the first round after the plan
	 * change) */
	tap_ok(fwd1 != ~0ull && fwd1 - fwd0 + rep[0].slow_adds > 0,
	       "after the fallback h0 is a ring member (%llu reduce hops in "
	       "XDP, %llu in user space)", (unsigned long long)(fwd1 - fwd0),
	       (unsigned long long)rep[0].slow_adds);
	{
		struct timespec ts = { 0, 3000000 };
		int bad = 0, failed = 0, wrong = 0, ok6 = 0, fail6 = 0, odd = 0;
		int fb_ok = 1, during = 0;

		phase = 5;
		bad += start_phase(phase);
		nanosleep(&ts, NULL);
		tap_ok(!rinx_testbed_ina_off(spec, 1), "phase 5: rack 1's ToR "
		       "loses its aggregator while a collective of six rounds "
		       "runs");
		for (r = 0; r < NR; r++) {
			if (read_report(r, &rep[r])) {
				bad++;
				continue;
			}
			failed += rep[r].err != 0;
			/* a rank fails only when another had completed the
			 * round (the communicator fails on all: close and
			 * reopen) or had returned already (no agreement) */
			odd += rep[r].err &&
			       !strstr(rep[r].msg, "close and reopen") &&
			       !strstr(rep[r].msg, "did not join the agreement");
			wrong += rep[r].wrong;
			during += rep[r].fallbacks == 2;
			if (rep[r].err)
				tap_diag("phase 5 rank %d: %s", r, rep[r].msg);
		}
		tap_ok(!bad && !wrong && !odd, "phase 5: no rank returned a "
		       "wrong element, no other error (%d of %d ranks failed, "
		       "%d fell back during it)", failed, NR, during);
		phase = 6;
		bad += start_phase(phase);
		for (r = 0; r < NR; r++) {
			if (read_report(r, &rep[r])) {
				bad++;
				continue;
			}
			ok6 += !rep[r].err && !rep[r].wrong;
			fail6 += rep[r].err && !rep[r].wrong;
			fb_ok &= rep[r].fallbacks == 2;
			if (rep[r].err)
				tap_diag("phase 6 rank %d: %s", r, rep[r].msg);
		}
		tap_ok(!bad && (ok6 == NR || (fail6 == NR && failed)),
		       "phase 6: %s", ok6 == NR ? "every element of every "
		       "rank bit-exact" : "every rank failed alike (the ranks "
		       "disagreed on phase 5)");
		tap_ok(fb_ok, "phase 6: every rank ran without agg0, agg1, agg2 "
		       "(two plan changes)");
	}
	phase = 0;
	for (r = 0; r < NR; r++) {
		if (write(to_c[r], &phase, sizeof(phase)) < 0)
			kill(pid[r], SIGKILL);
		close(to_c[r]);
		waitpid(pid[r], &status, 0);
	}
	cleanup();
	return tap_done();
}
