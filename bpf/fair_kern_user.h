/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fair marks at an aggregator host (an agent, a parameter server): jobs
 * whose contributions share the port into one aggregator meet the same
 * queue, but a sum is marked if any of its contributions was, and the
 * contributions of a job that fell behind lie further apart in time and
 * sample more of the queue's states: its sums come back marked more often
 * than those of the job ahead, it cuts deeper and stays behind
 * (docs/benchmark.md, "where agent Rina's two jobs split"). The rate laws
 * of the trainers cannot tell that job's marks from a competitor that
 * holds the queue (TCP) without giving way to TCP too.
 *
 * So the aggregator, which sees every job's contributions, takes marks
 * off the job below its share, as fair-share queueing in a switch treats
 * a flow below its share (approximate fair dropping drops only the flows
 * above it). Time is cut into epochs of 2^RINX_FAIR_SHIFT ns; per job
 * slot and for the node the values contributed in the last two epochs
 * are counted, and the node counts the jobs that contributed. A marked
 * sum that completes in epoch e leaves unmarked when, in epoch e - 1, at
 * least two jobs contributed and its job contributed x < f, the fair
 * share (the node's values over its jobs): with probability g (f - x) /
 * f, at most 1, g = RINX_FAIR_GAIN at a server, RINX_FAIR_GAIN_RACK at a
 * rack's agent. A job at or above its share
 * keeps every mark; a job alone, or beside TCP (not counted), too: one
 * job's behaviour does not change. Taking every mark of a job below its
 * share let the jobs below it at once grow unchecked (four ps-ina jobs
 * overran their server's port); taking marks in proportion (gain 1)
 * left two agent-Rina jobs apart, and so did gain 4 once the trainers cut
 * less deep for shared aggregators' marks (below; docs/benchmark.md).
 *
 * A rack agent's sum that completes in epoch e after at least two jobs
 * contributed in e - 1 leaves flagged RINX_F_SHARED: its marks are a
 * queue the jobs share, and the trainers cut at most a fifth for them
 * (user/comm/cc.c), where cuts of up to half, the jobs cutting at once,
 * left the port idle. A server's sums are not flagged (host.bpf.c).
 *
 * Counts are approximate: the epoch's reset of a count may race with an
 * add on another CPU and lose it. The host program reads the coarse
 * clock (a tick of 1-10 ms is within an epoch); epoch 0 (the first 8 ms
 * after boot) looks like no epoch. The trainer's slow path, which
 * completes a slot that waited for its own share, keeps the slot's mark
 * and stamps no jobs (its sums count as one job's; the trainer takes the
 * most jobs among an interval's sums).
 */
#ifndef RINX_FAIR_KERN_USER_H
#define RINX_FAIR_KERN_USER_H

#define RINX_FAIR_SHIFT		23	/* epochs of 8.4 ms */
/* (f - x) / f times this: at a server, whose port takes every worker of
 * every job (four ps-ina jobs with 8 resent 1.52-1.87 of their blocks,
 * against 0.41-0.50 with 4), and at a rack's agent */
#define RINX_FAIR_GAIN		4
#define RINX_FAIR_GAIN_RACK	8

/* One job slot's counts, or (at index RINX_MAX_JOBS) the node's. */
struct rinx_fair {
	__u32 tag[2];	/* the epoch counted in [e & 1] */
	__u32 vals[2];	/* values contributed in it */
	__u32 jobs[2];	/* node: jobs that contributed in it */
	__u32 pad[2];
};

/* A contribution of nv values of job `job` in epoch e. */
static inline void rinx_fair_note(struct rinx_fair *job,
				  struct rinx_fair *node, __u32 e, __u32 nv)
{
	__u32 i = e & 1;

	if (node->tag[i] != e) {
		node->tag[i] = e;
		node->vals[i] = 0;
		node->jobs[i] = 0;
	}
	if (job->tag[i] != e) {
		job->tag[i] = e;
		job->vals[i] = 0;
		__sync_fetch_and_add(&node->jobs[i], 1);
	}
	__sync_fetch_and_add(&job->vals[i], nv);
	__sync_fetch_and_add(&node->vals[i], nv);
}

/* The jobs that contributed in the epoch before e (0: none counted in
 * it). */
static inline __u32 rinx_fair_prev_jobs(const struct rinx_fair *node,
					__u32 e)
{
	__u32 p = e - 1, i = p & 1;

	return node->tag[i] == p ? node->jobs[i] : 0;
}

/* 1: in the epoch before e another job contributed (n jobs in all,
 * rinx_fair_prev_jobs: the caller reads it once for every use), and this
 * one contributed x, less than its fair share f: a marked sum of it
 * completing in e leaves unmarked with probability gain (f - x) / f (at
 * most 1), drawn by r (uniform in 0..255). */
static inline int rinx_fair_unmark(const struct rinx_fair *job,
				   const struct rinx_fair *node, __u32 e,
				   __u32 n, __u32 r, __u32 gain)
{
	__u32 p = e - 1, i = p & 1;
	__u64 mine, all;

	if (n < 2)
		return 0;
	mine = job->tag[i] == p ? (__u64)job->vals[i] * n : 0;
	all = node->vals[i];
	if (mine >= all)
		return 0;
	return (r & 255) < ((all - mine) << 8) * gain / all;
}

/* A sum's flags with RINX_F_JOBS raised to n jobs (at most
 * RINX_F_JOBS_MAX; kept where the sum carries more already). A sum
 * completing in epoch e after n >= 2 jobs contributed in e - 1
 * (rinx_fair_prev_jobs) is also flagged RINX_F_SHARED at a rack's
 * agent (host.bpf.c). */
static inline __u8 rinx_fair_jobs(__u8 flags, __u32 n)
{
	__u32 v;

	if (n > RINX_F_JOBS_MAX)
		n = RINX_F_JOBS_MAX;
	v = n ? n - 1 : 0;
	if (v <= (__u32)(flags & RINX_F_JOBS) >> RINX_F_JOBS_SHIFT)
		return flags;
	return (flags & ~RINX_F_JOBS) | v << RINX_F_JOBS_SHIFT;
}

#endif /* RINX_FAIR_KERN_USER_H */
