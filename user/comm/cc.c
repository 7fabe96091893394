// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Congestion control of the own blocks (those a rank starts).
 *
 * Switch ports mark CE above a backlog threshold; the mark stays on the
 * frame for its whole path (and an aggregator passes on the marks of what
 * it consumes), and the host program counts every finished block stored
 * here and the marked ones (cursor.stored, .marked). Every block of a ring
 * crosses every link, so every rank sees the congestion of the whole plan.
 * From that fraction each rank sets the rate of the blocks it starts, in
 * the manner of DCTCP: alpha follows the marked fraction, a marked interval
 * cuts the rate by alpha / 2 (at most once per CC_HOLD_NS, block round
 * trip or CC_HOLD_GAPS own gaps; in Rina, where every rank adds to every
 * block, n times that: cc_cutters; never on a rank that fell behind the
 * others of its job), clean
 * ones bring it back as DCQCN does (halfway to the rate before the cut,
 * then a growing additive step; a cut with no clean interval since the
 * last one lowers that target too, and a calm spell takes it back toward
 * where such a run of cuts began), so the rate finds a link's share
 * quickly and jobs sharing links converge to equal shares. A clean
 * interval raises the rate only if the rank used it, or the pacer held
 * one of its blocks back (a rank that stalls is still limited by it).
 * Where the spec gives link rates, the plan says how fast its busiest link
 * lets every origin go (rinx_plan_ceiling): a rank starts paced at
 * CC_CEIL_UTIL of that ceiling and never goes above it, so a job alone on
 * its links runs near the link rate without a queue to probe for. At the
 * ceiling a few marks are the job's own bursts (its load is below the
 * link's); a competitor (another job, TCP) makes the queue stand, marks
 * most blocks and alpha, or the interval's own marked fraction, rises past
 * CC_CEIL_TOL: only then does it cut, by half the larger of the two.
 * A topology plan's ceiling is the rank's own link (rinx_plan_ceiling):
 * the plan's load on the other links and switches is for congestion
 * control to find, so there every mark counts.
 * Without link rates a rank starts unpaced (line rate) and paces from its
 * first mark, starting from the rate it measured. The pacer (cursor.gap_ns,
 * .next_ns, .burst) is shared with the host program, whose recycling obeys
 * it too (pace_ok in bpf/host.bpf.c follows the same rule as pace_ok
 * below, where the trainer may send at least TRAINER_BURST at once).
 */
#include <string.h>
#include "user/comm/comm.h"
#include "user/plan/plan.h"

/* Own blocks the trainer may send at once when they are due: a recycle the
 * pacer held back in XDP is the trainer's to send, and the trainer naps a
 * burst's time, two gaps at least, between looks (rinx_wait) instead of
 * waking for each block. */
#define TRAINER_BURST	2
#define CC_INTERVAL_NS	1000000ull	/* update at most this often */
/* At most one cut in this long (or a round trip, if longer): after a cut
 * the backlog that set the marks drains at the link's spare rate, from up
 * to a buffer (300 KB, 2.4 ms at 1 Gbit/s) down to the mark threshold, on
 * every port of the plan, and a block's marks reach the ranks only when
 * its result is stored; a cut sooner is a cut for the backlog the last one
 * answered already. The round trip alone does not tell: the testbed's
 * queues are virtual (no frame waits), so an own block's round trip is
 * 0.1 ms there. Two rings sharing 1 Gbit/s links (2 racks x 4): each
 * 0.042-0.044 GB/s with 0.5 ms, 0.050-0.053 with 4 ms (alone: 0.107). */
#define CC_HOLD_NS	4000000ull
/* ... or this many of the rank's own gaps, if longer. An interval holds
 * CC_MIN_STORED blocks at least, so a rank paced at a few hundred blocks/s
 * (the testbed's scaled links) updates every 10-40 ms: every marked
 * interval was past the 4 ms hold and cut, and cuts more than two holds
 * apart did not count as cuts in a row, so top followed the rate down and
 * a calm spell had nothing to return to. On hetero4 at 20 Mbit/s per
 * Gbit/s a forest rank fell from 1,929 blocks/s to the floor in one
 * 200 ms run of marks (13 cuts) and climbed back by additive steps. A
 * port of tens of Mbit/s also takes that long to drain its backlog, and
 * the testbed's queues (virtual: no frame waits) leave the round trip
 * short. A rank of a few thousand blocks/s keeps CC_HOLD_NS. */
#define CC_HOLD_GAPS	8
#define CC_MIN_STORED	8		/* ... and after this many blocks */
#define CC_G		(1.0 / 16)	/* DCTCP's gain */
#define CC_AI		50.0		/* blocks/s added per clean update */
#define CC_CALM		8
#define CC_FR		5		/* fast-recovery intervals */
#define CC_AI_DIV	8		/* the step stays below rate / 8 */
#define CC_MIN_RATE	200.0		/* blocks/s: never starve */
/* ... but never a floor above this share of the ceiling: a rank whose own
 * link is slow and whose plan puts several frames per own block on it (a
 * ring of 4 on a topology testbed's 20 Mbit/s link: 6 frames, 30.6 Mbit/s
 * at 200 blocks/s) overloaded its link at the floor, and its rate came
 * from the link's drops (174% of blocks resent), not from marks. Rack
 * plans at 1 Gbit/s have ceilings of thousands of blocks/s: 200 there. */
#define CC_FLOOR_DIV	16

/* The least rate of a rank with ceiling `ceil` (0: none). */
static double cc_floor(double ceil)
{
	return ceil > 0 && ceil / CC_FLOOR_DIV < CC_MIN_RATE ?
	       ceil / CC_FLOOR_DIV : CC_MIN_RATE;
}
/* Of the plan's ceiling, counted in frames as the wire carries them
 * (preamble, gap and FCS too): headroom for repairs and control frames.
 * The ring on 1 Gbit/s links (2 racks x 4, 16 MiB) ran at 0.880-0.890 of
 * the link with 0.95 of a ceiling without the wire's 24 bytes (95.7% of
 * the wire), at 0.901-0.904 with 0.98 of it (98.7%), in one sitting;
 * Rina, two jobs and 1% loss alike within the spread. */
#define CC_CEIL_UTIL	0.98
#define CC_CEIL_TOL	0.1		/* alpha a rank at its ceiling
					 * ignores */
#define CC_BEHIND	0.02		/* of the round: a rank this far
					 * behind its job does not cut */
#define CC_USED		0.8		/* share of the rate that must be
					 * used before it may grow */
/* Where the spec gives link rates (a rack plan's ceiling fills its busiest
 * link), every update without a cut adds CC_AI_LINK of the ceiling per ms
 * of the interval to the rate, in a marked interval too: the same share of
 * the link per unit of time for every job on it, whatever its plan, rate
 * or update interval. Cuts are multiplicative and come to all the jobs on
 * a port together, and the recovery above goes back to each job's own
 * rate before the cut: with nothing else, jobs that share a port keep the
 * ratio of their rates for good (a job cut hard once, at its start or by
 * a burst, stays down), and a slow rank, whose intervals are longer (8
 * blocks stored at least), rarely sees one without a mark. The equal step
 * in time is what makes the shares converge (AIMD: each cut shrinks the
 * difference between two jobs, each step adds the same to both). In the
 * law's model (selftests/test_cclaw, "sharing"), 2 to 4 jobs at the
 * ceiling of one port, feedback delays 0.3 to 2.6 ms: each job 0.02-2.04
 * of its fair share without the step, 0.66-1.23 with 1/256 of the ceiling
 * per ms, the port 0.84-0.95 used (1/384 and 1/512 left a job of 3 or 4
 * at half its share); with cuts by the interval's own fraction (below),
 * 0.68-0.97, the port 0.80-0.94. A topology plan's ceiling is the rank's
 * own link, not its plan's bottleneck: no step there. */
#define CC_AI_LINK	(1.0 / 256)
/* The severity of a cut for marks on shared aggregators' sums, at most:
 * a cut of a fifth. */
#define CC_SHARED_SEV	0.4

/* The pacer's burst after an idle spell: blocks arrive to be recycled in
 * bursts (an aggregator multicasts what it finished together), and at a
 * small gap a burst of one holds most of them back in XDP for the trainer
 * to send, one system call each: at 37,000 blocks/s per host (Rina at 1
 * Gbit/s) that took 2.5x the time. Up to CC_BURST_NS of the rate may leave
 * at once; four workers' bursts into an aggregator's port (about 60 KB)
 * stay under the testbed's mark threshold (120 KB at 1 Gbit/s). */
#define CC_BURST_NS	150000ull
/* ... times the jobs that share the rank's aggregator (cc.jobs): each
 * paces at its share of the ceiling, a gap of hundreds of us, and a
 * trainer among 32 on 2 cores woke late often enough that a burst of two
 * gaps lost the rest: four ps-ina jobs paced at a quarter each finished a
 * collective in 1.39-1.66 s, with this burst in 1.28-1.31 (one job alone:
 * 0.33). The same blocks leave at once as from one job alone at its
 * ceiling. */

static void set_pace(struct rinx_comm *c, double rate)
{
	struct rinx_cursor *cur = &c->cursors[c->slot];
	__u32 gap = rate ? (__u32)(1e9 / rate) : 0;
	__u64 k = c->cc.jobs > 1 ? (__u64)c->cc.jobs : 1;
	__u32 burst = gap ? (__u32)(CC_BURST_NS * k / gap) : 0;

	__atomic_store_n(&cur->burst, burst ? burst : 1, __ATOMIC_RELAXED);
	__atomic_store_n(&cur->gap_ns, gap, __ATOMIC_RELAXED);
}

/* The pacer's next send time after one block leaves at `now`, its last
 * one due at t: a gap after t, or after the burst an idle spell allows. */
static __u64 pace_after(const struct rinx_cursor *cur, __u64 t, __u64 now,
			__u64 gap)
{
	__u32 burst = __atomic_load_n(&cur->burst, __ATOMIC_RELAXED);
	__u64 lo = now - (burst > TRAINER_BURST ? burst : TRAINER_BURST) * gap;

	return (t > lo ? t : lo) + gap;
}

int rinx_c_pace_ok(struct rinx_cursor *cur, __u64 now)
{
	__u64 gap = __atomic_load_n(&cur->gap_ns, __ATOMIC_RELAXED);
	__u64 t = __atomic_load_n(&cur->next_ns, __ATOMIC_ACQUIRE);

	if (!gap)
		return 1;
	if (now < t)
		return 0;
	return __atomic_compare_exchange_n(&cur->next_ns, &t,
					   pace_after(cur, t, now, gap), 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* A block sent again (a repair, not a new block) takes its gap from the
 * pacer as a new one would: the next own block, here or recycled in XDP,
 * leaves a gap later. Resends do not wait (a stall's repair goes at
 * once), but a rank's blocks, new and sent again, stay at its rate on
 * average. Without it a loss fed itself: ps-ina's shares sent again pass
 * their rack's pool unaggregated (up to a frame per worker where a sum is
 * one), and four ps-ina jobs on 2 racks x 4 resent 45-59% of their blocks
 * on top of their rates into the server's port (docs/benchmark.md). */
void rinx_c_pace_charge(struct rinx_cursor *cur, __u64 now)
{
	__u64 gap = __atomic_load_n(&cur->gap_ns, __ATOMIC_RELAXED);
	__u64 t = __atomic_load_n(&cur->next_ns, __ATOMIC_ACQUIRE);

	if (!gap)
		return;
	while (!__atomic_compare_exchange_n(&cur->next_ns, &t,
					    pace_after(cur, t, now, gap), 0,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

void rinx_c_cc_init(struct rinx_comm *c)
{
	struct cc *cc = &c->cc;
	double ceil = rinx_plan_ceiling(&c->spec, c->rank,
					RINX_FRAME_LEN(c->bval) +
					RINX_WIRE_EXTRA);

	memset(cc, 0, sizeof(*cc));
	if (ceil <= 0)
		return;
	cc->jobs = 1;
	cc->ceiling = cc->rate = cc->target = cc->top = CC_CEIL_UTIL * ceil;
	/* the pacer's gap (ns) fits 32 bits */
	if (cc->rate < 1)
		cc->ceiling = cc->rate = cc->target = cc->top = 1;
	cc->full = cc->ceiling;
	set_pace(c, cc->rate);
	c->st.pace_rate = (uint64_t)cc->rate;
	c->st.pace_ceiling = (uint64_t)cc->ceiling;
}

/* An own block is ready to leave (claimed next, its share written, room
 * in the window) and the pacer holds it back: the rate, not the trainer,
 * the round's tail or the window (a stall, a repair), is what limits this
 * rank now. */
static int pacer_holds(const struct rinx_req *r, __u32 next, __u64 now)
{
	const struct rinx_comm *c = r->c;
	struct rinx_cursor *cur = &c->cursors[c->slot];

	return r->own && next < r->nown && r->own[next] < r->conv &&
	       next - r->head - r->fin_ahead < (__u32)c->inflight &&
	       now < __atomic_load_n(&cur->next_ns, __ATOMIC_RELAXED);
}

/* How many times its hold a rank waits between cuts: the ranks whose cuts
 * each slow every block of the round. Where every rank adds to every
 * block (Rina, a member of a rack whose ToR or agent sums: its own blocks
 * are all the round's), a block finishes at the pace of the job's slowest rank,
 * and each rank's cut slows the whole job until it recovers: k ranks
 * cutting on the same marks, each at most once per hold at its own time,
 * cut the job k times as often as one sender would. In a ring a rank's
 * cut slows only its own blocks, 1/k of what crosses a link, and a rank
 * behind its job does not cut. So: k = ranks x own blocks / blocks, n for
 * such a Rina member, 1 in a ring. Rina on 2 racks x 2, both ToRs INA,
 * beside a ring job on the same 400 Mbit/s links (share-bench): its
 * ranks' pace averaged 0.45 of their ceiling against the ring's 0.83,
 * three of its four ranks waited with their window full for the fourth
 * in 16% of the time, and it got 0.28 of the port against the ring's
 * 0.72; with the longer hold it gets an even share at 1 Gbit/s and more
 * than the ring at 400 Mbit/s (docs/benchmark.md). A member of an
 * agent rack as well: one agent-Rina job beside a TCP flow on 2 racks x
 * 2 got 0.04 of the port with the plain hold (TCP 0.88-0.90), 0.37 with
 * this one (TCP 0.32-0.46; alone it puts 0.44 there). Jobs that share
 * the agent pace at their share of the ceiling (cc_jobs), so its marks
 * are few: two and four such jobs were level with and without it (0.025
 * and 0.013 GB/s each). Not a parameter server's workers (ps-ina, tree
 * plans): with holds 8 times as long, two and four ps-ina jobs on 2 racks
 * x 4 had 46-63% of their blocks marked and resent 10,000-21,000 blocks
 * per collective (10-18% and 380-1,050 before) at 52-65% of the busbw
 * (measured before cc_jobs). */
static __u64 cc_cutters(const struct rinx_comm *c, const struct rinx_req *r)
{
	int ri;
	__u64 k;

	if (c->spec.plan != RINX_PLAN_RINA || !r->nb || !c->self)
		return 1;
	ri = rinx_spec_rack_index(&c->spec, c->self->rack);
	if (ri < 0 || c->spec.racks[ri].ina == RINX_INA_NONE)
		return 1;
	k = (__u64)c->n * r->nown / r->nb;
	return k > 1 ? k : 1;
}

/* DCQCN's recovery on a clean interval: halfway back to the target for
 * CC_FR clean intervals, then the target grows by a step that doubles
 * every CC_CALM clean intervals. A target that cuts in a row lowered
 * (below top) goes halfway back to top instead while that is the larger
 * step: a spell of CC_FR clean intervals says the marks that lowered it
 * have gone (a job alone whose own bursts, or the machine's, marked a few
 * intervals in a row), where a competitor that keeps the queue standing
 * leaves few such spells. */
static void cc_recover(struct cc *cc)
{
	if (++cc->calm > CC_FR) {
		double half = (cc->target + cc->top) / 2;

		cc->target += cc->ai;
		if (half > cc->target)
			cc->target = half;
		if ((cc->calm - CC_FR) % CC_CALM == 0 &&
		    cc->ai < cc->target / CC_AI_DIV)
			cc->ai *= 2;
	}
	cc->rate = (cc->rate + cc->target) / 2;
}

/* k jobs (1 to RINX_F_JOBS_MAX) share the aggregator host of this rank's
 * sums lately (RINX_F_JOBS, bpf/fair_kern_user.h): the ceiling is the
 * job's share of the rate that fills the plan's busiest link, the port
 * into that aggregator, and the rate, its target and top follow by the
 * same factor, up or down, as an explicit rate would: each job of k at
 * its ceiling left the port at k times its rate, where k ps-ina jobs
 * tail-dropped at their server's port until their cuts caught up, and
 * the rates that cuts had divided came back by additive steps when a
 * job left. Marks still cut below it (a port shared with TCP or a ring
 * job, or an aggregator that is not the busiest link). Rack plans at
 * known link rates only (a topology plan's ceiling is its own link). */
static void cc_jobs(struct rinx_comm *c, int k)
{
	struct cc *cc = &c->cc;
	double s = (double)(cc->jobs > 0 ? cc->jobs : 1) / k;

	/* a topology plan's ceiling is the rank's own link, not the port
	 * into an aggregator */
	if (k == cc->jobs || c->spec.plan == RINX_PLAN_TOPO)
		return;
	cc->jobs = k;
	if (cc->full <= 0)
		return;
	cc->ceiling = cc->full / k;
	cc->rate *= s;
	cc->target *= s;
	cc->top *= s;
	c->st.pace_ceiling = (uint64_t)cc->ceiling;
}

void rinx_c_cc_update(struct rinx_req *r, __u64 now)
{
	struct rinx_comm *c = r->c;
	struct rinx_cursor *cur = &c->cursors[c->slot];
	struct cc *cc = &c->cc;
	__u64 stored = __atomic_load_n(&cur->stored, __ATOMIC_RELAXED);
	__u64 marked = __atomic_load_n(&cur->marked, __ATOMIC_RELAXED);
	__u64 shared = __atomic_load_n(&cur->shared, __ATOMIC_RELAXED);
	__u64 ds = stored - cc->stored, dm = marked - cc->marked;
	__u64 dsh = shared - cc->shared;
	__u32 next = __atomic_load_n(&cur->next, __ATOMIC_RELAXED);
	/* own blocks that left in the interval (the cursor restarts with
	 * every round) */
	__u32 sent = next >= cc->claimed ? next - cc->claimed : next;
	__u64 hold = c->srtt > CC_HOLD_NS ? c->srtt : CC_HOLD_NS;
	double dt = (double)(now - cc->t) * 1e-9, f, sev;
	__u32 jobs;
	int behind, again, used, rack, own, cut = 0;

	if (cc->rate > 0 && CC_HOLD_GAPS * 1e9 / cc->rate > hold)
		hold = (__u64)(CC_HOLD_GAPS * 1e9 / cc->rate);
	hold *= cc_cutters(c, r);
	if (cc->round != c->round) {
		/* a new round: the blocks stored here count from now */
		cc->round = c->round;
		cc->stored0 = stored;
	}
	if (pacer_holds(r, next, now))
		cc->held++;
	if (!cc->t || now - cc->t > 100 * CC_INTERVAL_NS) {
		/* first call, or after an idle spell: a fresh interval */
		__atomic_exchange_n(&cur->jobs, 0, __ATOMIC_RELAXED);
		cc->held = 0;
		cc->t = now;
		cc->stored = stored;
		cc->marked = marked;
		cc->shared = shared;
		cc->claimed = next;
		return;
	}
	if (now - cc->t < CC_INTERVAL_NS || ds < CC_MIN_STORED)
		return;
	/* the most jobs an aggregator of the interval's sums had */
	jobs = __atomic_exchange_n(&cur->jobs, 0, __ATOMIC_RELAXED);
	if (jobs)
		cc_jobs(c, 32 - __builtin_clz(jobs));
	/* Behind: this rank's own blocks left slower than the job's blocks
	 * finished here (every block's result is stored at every rank). The
	 * collective ends with its slowest origin: a rank that fell behind
	 * its peers, whose marks are its peers' blocks as much as its own,
	 * does not cut, so the ranks of a job keep one pace. */
	behind = r->nb && r->nown &&
		 (double)(stored - cc->stored0) / r->nb >
		 (double)next / r->nown + CC_BEHIND;
	/* the rank sent at its rate, or the pacer held it back */
	used = cc->held || (double)sent / dt >= CC_USED * cc->rate;
	f = dm > ds ? 1.0 : (double)dm / (double)ds;
	cc->alpha = (1 - CC_G) * cc->alpha + CC_G * f;
	/* How deep a cut goes: alpha, or this interval's own fraction
	 * where that is more. alpha follows the marks slowly (1/16 per
	 * update) and starts at 0, so k jobs at their ceilings (k times a
	 * shared port's rate: at a start, or after a calm spell took them
	 * back) cut by a few percent after 2 ms of a standing queue and
	 * filled the buffer first: ps-ina's server port on 2 racks x 4
	 * tail-dropped more blocks than it marked (docs/benchmark.md). A
	 * queue that stands now marks most of an interval and cuts by up
	 * to half at once; marks in the law's model of a shared port then
	 * come well before its drops (selftests/test_cclaw, "sharing").
	 * Rack plans only, as the step below: a topology plan's ceiling
	 * is its own link, and its cuts were not measured with it. */
	rack = cc->ceiling > 0 && c->spec.plan != RINX_PLAN_TOPO;
	sev = rack && f > cc->alpha ? f : cc->alpha;
	/* Most marks on sums of an aggregator that other rinx jobs share
	 * (RINX_F_SHARED): their port's queue is the jobs' together, and
	 * they cut on it at once. Cuts of up to half left two agent-Rina
	 * jobs' port idle a fifth of the time (together 0.79 of one job;
	 * with at most a fifth 0.96, docs/benchmark.md); the aggregator's
	 * fair marks keep their shares even. Only there: a cap for every
	 * mark took a ring's share beside a TCP flow from 0.48-0.50 of the
	 * port to 0.74-0.75. */
	if (dm && 2 * dsh >= dm && sev > CC_SHARED_SEV)
		sev = CC_SHARED_SEV;
	/* own: this rank starts blocks of the round. A Rina agent adds its
	 * share into its rack's sum in its own host program and starts
	 * none: unpaced, nothing to cut (it counted 60 "cuts" a second of
	 * a rate of 0, 2 racks x 4 agents at 1 Gbit/s, in `rate cuts/op`) */
	own = !r->nb || r->nown;
	if (dm && own && now - cc->cut > hold && !behind &&
	    !(rack && cc->rate >= 0.99 * cc->ceiling && sev < CC_CEIL_TOL)) {
		/* at most one cut per block round trip: marks seen sooner
		 * still tell of the backlog before the last cut */
		if (!cc->rate) {
			/* start pacing at the rate this rank's blocks went:
			 * its share of the blocks finished here */
			cc->rate = (double)ds / dt *
				   (r->nb ? (double)r->nown / r->nb : 1.0);
			cc->alpha = 1;	/* DCTCP's initial alpha */
		}
		/* A cut with no clean interval since the last one: the rate
		 * the last cut would have recovered to was marked as well.
		 * Back to it again, this pacer would hardly slow down while a
		 * flow that cuts on every marked round trip (TCP) gives way:
		 * the target goes down with the rate, as DCTCP's window. */
		again = cc->cut && !cc->calm && now - cc->cut < 2 * hold;
		if (!again)
			cc->target = cc->top = cc->rate;
		cc->rate *= 1 - sev / 2;
		if (again)
			cc->target = cc->rate;
		cc->ai = CC_AI;
		cc->calm = 0;
		cc->cut = now;
		c->st.cc_cuts++;
		cut = 1;
	} else if (!dm && cc->rate && !used) {
		/* the rank did not send at its rate and the pacer never held
		 * it back (the round's tail, a slow trainer): a clean
		 * interval proves nothing about a higher one (as TCP
		 * validates its window, RFC 7661). A rank the pacer held
		 * while stalls and repairs kept it below its rate on
		 * average does grow: at the floor it would stay there. */
	} else if (!dm && cc->rate) {
		cc_recover(cc);
	}
	if (!cut && used && cc->rate && rack) {
		cc->rate += cc->ceiling * CC_AI_LINK * dt * 1e3;
		if (cc->target < cc->rate)
			cc->target = cc->rate;
	}
	if (cc->ceiling > 0 && cc->target > cc->ceiling)
		cc->target = cc->ceiling;
	if (cc->ceiling > 0 && cc->rate > cc->ceiling)
		cc->rate = cc->ceiling;
	if (cc->rate && cc->rate < cc_floor(cc->ceiling))
		cc->rate = cc_floor(cc->ceiling);
	set_pace(c, cc->rate);
	c->st.ecn_marked += dm;
	c->st.pace_rate = (uint64_t)cc->rate;
	cc->held = 0;
	cc->t = now;
	cc->stored = stored;
	cc->marked = marked;
	cc->shared = shared;
	cc->claimed = next;
}
