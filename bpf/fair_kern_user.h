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
 * So the aggregator, which sees every job's contributions, marks the
 * job that takes more than its share, as fair-share marking in a switch
 * does (approximate fair dropping: a flow above its share loses packets,
 * one below does not). Time is cut into epochs of 2^RINX_FAIR_SHIFT ns;
 * per job slot and for the node the values contributed in the last two
 * epochs are counted, and the node counts the jobs that contributed and
 * the contributions that arrived marked. A sum that completes unmarked in
 * epoch e leaves marked CE when, in epoch e - 1, at least two jobs
 * contributed, some contribution arrived marked (the port into the
 * aggregator held a queue), and its job contributed more than the fair
 * share f (the node's values over its jobs): with probability 1 - f / (the
 * job's values), a share of its sums that would bring it to f. No mark is taken away: a job alone, or at its share, sees
 * the port's marks as before, and so does a job beside TCP.
 *
 * Counts are approximate: the epoch's reset of a count may race with an
 * add on another CPU and lose it. The host program reads the coarse
 * clock (a tick of 1-10 ms is within an epoch); epoch 0 (the first 8 ms
 * after boot) looks like no epoch. The trainer's slow path, which
 * completes a slot that waited for its own share, adds no mark.
 */
#ifndef RINX_FAIR_KERN_USER_H
#define RINX_FAIR_KERN_USER_H

#define RINX_FAIR_SHIFT		23	/* epochs of 8.4 ms */
#ifndef RINX_FAIR_GAIN
#define RINX_FAIR_GAIN		4
#endif

/* One job slot's counts, or (at index RINX_MAX_JOBS) the node's. */
struct rinx_fair {
	__u32 tag[2];	/* the epoch counted in [e & 1] */
	__u32 vals[2];	/* values contributed in it */
	__u32 jobs[2];	/* node: jobs that contributed in it */
	__u32 marks[2];	/* node: contributions that arrived marked CE */
};

/* A contribution of nv values of job `job` in epoch e, arrived marked CE
 * (ce). */
static inline void rinx_fair_note(struct rinx_fair *job,
				  struct rinx_fair *node, __u32 e, __u32 nv,
				  int ce)
{
	__u32 i = e & 1;

	if (node->tag[i] != e) {
		node->tag[i] = e;
		node->vals[i] = 0;
		node->jobs[i] = 0;
		node->marks[i] = 0;
	}
	if (job->tag[i] != e) {
		job->tag[i] = e;
		job->vals[i] = 0;
		__sync_fetch_and_add(&node->jobs[i], 1);
	}
	__sync_fetch_and_add(&job->vals[i], nv);
	__sync_fetch_and_add(&node->vals[i], nv);
	if (ce)
		__sync_fetch_and_add(&node->marks[i], 1);
}

/* 1: in the epoch before e another job contributed, and this one
 * contributed less than its fair share f: a marked sum of it completing
 * in e leaves unmarked with probability 1 - (its values) / f, drawn by r
 * (uniform in 0..255). */
static inline int rinx_fair_unmark(const struct rinx_fair *job,
				   const struct rinx_fair *node, __u32 e,
				   __u32 r)
{
	__u32 p = e - 1, i = p & 1;
	__u64 mine, all;

	if (node->tag[i] != p || node->jobs[i] < 2)
		return 0;
	mine = job->tag[i] == p ? (__u64)job->vals[i] * node->jobs[i] : 0;
	all = node->vals[i];
	if (mine >= all)
		return 0;
	return (r & 255) < ((all - mine) << 8) * RINX_FAIR_GAIN / all;
}

#endif /* RINX_FAIR_KERN_USER_H */
