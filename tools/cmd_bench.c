// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinxctl bench and rinxctl demo.
 *
 * One trainer process per host of the spec, each inside its host's network
 * namespace, driven over pipes: for every size and run the parent has all
 * ranks prepare their input (not timed), starts them together, and takes the
 * slowest rank's time as the time of the collective. With --verify every
 * rank checks every element against a reference it computes on its own from
 * the generator (int32: exact wrapping sum; float32: double sum within the
 * documented bound).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tools/bench.h"
#include "user/plan/plan.h"
#include "tools/gen.h"
#include "tools/cmds.h"
#include "user/ctl.h"
#include "user/librinx.h"
#include "tools/testbed/testbed.h"

enum { OP_PREP = 1, OP_GO, OP_CHECK, OP_QUIT };

struct cmd_msg {
	int op;
	int iter;
	uint64_t count;
};

struct reply_msg {
	int err;
	int wrong;		/* elements outside the bound / not exact */
	uint64_t ns;
	double worst;		/* largest |error| / bound seen */
	uint64_t ns_quant, ns_dequant;	/* conversion time of this op */
	/* loss repair and congestion control during this op */
	uint64_t sent, retx, nacks, repairs, marked, cuts, rate, ceil;
	uint64_t slow;		/* frames the trainer took from AF_XDP */
	uint64_t lost;		/* frames lost on the way up: the AF_XDP
				 * socket's drops (rx dropped, ring full,
				 * fill ring empty) and the trainer's
				 * (slow_dropped) */
	uint64_t wakeups, tcpu_ns;	/* the trainer process: context
					 * switches and CPU time (user and
					 * system) during the op */
	int bv;			/* the communicator's values per block */
	uint64_t job_ns[BENCH_MAX_JOBS];	/* --jobs: each job's time */
	char msg[240];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t tv_ns(const struct timeval *tv)
{
	return tv->tv_sec * 1000000000ull + tv->tv_usec * 1000ull;
}

static int xread(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

static int xwrite(int fd, const void *buf, size_t len)
{
	size_t put = 0;
	ssize_t n;

	while (put < len) {
		n = write(fd, (const char *)buf + put, len - put);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		put += n;
	}
	return 0;
}

/* Every element against the sum of the generated inputs, within the
 * bound of its block: bv values, the communicator's block size. */
static void verify(const struct bench_opts *o, int n, uint64_t seed,
		   const void *recv, uint64_t count, int bv,
		   struct reply_msg *rep)
{
	uint64_t b, i, base;
	int r, k;

	rep->wrong = 0;
	rep->worst = 0;
	if (o->dtype == RINX_INT32) {
		const int32_t *out = recv;

		for (i = 0; i < count; i++) {
			uint32_t s = 0;

			for (r = 0; r < n; r++)
				s += (uint32_t)gen_i32(seed, r, i);
			if ((uint32_t)out[i] != s) {
				if (!rep->wrong++)
					snprintf(rep->msg, sizeof(rep->msg),
						 "element %llu: got %d, want %d",
						 (unsigned long long)i, out[i],
						 (int32_t)s);
			}
		}
		return;
	}
	if (bv < 1 || bv > RINX_BLOCK_VALUES)
		bv = RINX_BLOCK_VALUES;
	for (b = 0; b * bv < count; b++) {
		double acc[RINX_BLOCK_VALUES], amax = 0, bound;
		int cnt;

		base = b * bv;
		cnt = count - base < (uint64_t)bv ? (int)(count - base) : bv;
		for (k = 0; k < cnt; k++)
			acc[k] = 0;
		for (r = 0; r < n; r++)
			for (k = 0; k < cnt; k++) {
				float v = gen_f32_of(o->data, seed, r,
						     base + k);

				acc[k] += v;
				if (fabs(v) > amax)
					amax = fabs(v);
			}
		bound = rinx_f32_bound(n, amax);
		for (k = 0; k < cnt; k++) {
			float got = ((const float *)recv)[base + k];
			double err = fabs((double)got - acc[k]);

			if (bound > 0 && err / bound > rep->worst)
				rep->worst = err / bound;
			if (!(err <= bound)) {
				if (!rep->wrong++)
					snprintf(rep->msg, sizeof(rep->msg),
						 "element %llu: got %.9g, want "
						 "%.9g (bound %.3g)",
						 (unsigned long long)(base + k),
						 got, acc[k], bound);
			}
		}
	}
}

/* --jobs: every job's collective started at once and driven until all
 * are done; each one's time from t0 into ns[]. */
static int run_jobs(const struct bench_opts *o, struct rinx_comm **cs, int nj,
		    char *sendb, char *recvb, uint64_t count, uint64_t t0,
		    uint64_t *ns)
{
	struct rinx_req *rq[BENCH_MAX_JOBS] = { NULL };
	int j, left = 0, err = 0, ret;

	for (j = 0; j < nj; j++) {
		ns[j] = 0;
		ret = rinx_allreduce_start(cs[j], sendb + o->max_count * 4 * j,
					   recvb + o->max_count * 4 * j, count,
					   o->dtype, &rq[j]);
		if (ret)
			err = err ?: ret;
		else
			left++;
	}
	/* bounded: past the limit, a wait of 0 ms ends a request with the
	 * communicator's own timeout error */
	while (left) {
		int ended = 0;

		for (j = 0; j < nj; j++) {
			if (!rq[j])
				continue;
			ret = rinx_test(rq[j]);
			/* rinx_test has no timeout of its own: give all the
			 * jobs together ten times the per-call one */
			if (ret == 0 && now_ns() - t0 >
			    (uint64_t)(o->timeout_ms > 0 ? o->timeout_ms :
				       10000) * 10000000ull)
				ret = rinx_wait(rq[j], 0);
			if (ret == 0 || ret == -ETIMEDOUT) {
				if (ret == -ETIMEDOUT) {
					rinx_cancel(rq[j]);
					rq[j] = NULL;
					left--;
					err = err ?: ret;
				}
				continue;
			}
			rq[j] = NULL;
			left--;
			ended++;
			ns[j] = now_ns() - t0;
			if (ret < 0)
				err = err ?: ret;
		}
		if (left && !ended) {
			/* the frames are handled in softirq on these cores */
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
	}
	return err;
}

/* A rank's process: its communicators (one per job) and buffers. */
struct child {
	const struct bench_opts *o;
	const struct rinx_spec *s;
	int rank, nj;
	struct rinx_comm *cs[BENCH_MAX_JOBS];
	char *sendb, *recvb;
};

/* Opens the rank's communicators in its namespace and its buffers; the
 * reason of a failure into rep->msg. */
static int child_open(struct child *ch, const char *spec_path,
		      struct reply_msg *rep)
{
	const struct bench_opts *o = ch->o;
	const struct rinx_spec_host *h = rinx_spec_rank(ch->s, ch->rank);
	struct rinx_comm_opts co = { .sz = sizeof(co) };
	int oldfd, err, j;

	err = rinx_netns_enter(h->netns, &oldfd);
	if (err) {
		snprintf(rep->msg, sizeof(rep->msg), "rank %d: cannot enter "
			 "netns %s", ch->rank, h->netns);
		return err;
	}
	co.spec = spec_path;
	co.rank = ch->rank;
	co.token = o->token;
	co.timeout_ms = o->timeout_ms;
	co.inflight = o->inflight;
	co.plan = o->plan;
	co.block_values = o->block;
	/* --jobs: independent jobs (ids job, job + 1, ...) that run their
	 * collectives at once over the same links */
	for (j = 0; j < ch->nj && !err; j++) {
		co.job = o->job + j;
		err = rinx_comm_open(&co, &ch->cs[j]);
		if (err)
			snprintf(rep->msg, sizeof(rep->msg), "rank %d: job %u: "
				 "%s", ch->rank, co.job, rinx_comm_error(NULL));
	}
	if (!err && o->max_count) {
		ch->sendb = malloc(o->max_count * 4 * ch->nj);
		ch->recvb = malloc(o->max_count * 4 * ch->nj);
		if (!ch->sendb || !ch->recvb) {
			err = -ENOMEM;
			snprintf(rep->msg, sizeof(rep->msg), "rank %d: out of "
				 "memory", ch->rank);
		}
	}
	return err;
}

static void child_prep(struct child *ch, const struct cmd_msg *cmd)
{
	const struct bench_opts *o = ch->o;
	uint64_t seed;
	int j;

	for (j = 0; j < ch->nj; j++) {
		void *send = ch->sendb + o->max_count * 4 * j;

		seed = gen_run_seed(o->seed + j, cmd->iter, cmd->count);
		gen_fill(o->data, seed, ch->rank, 0, cmd->count, send);
		memset(ch->recvb + o->max_count * 4 * j, 0xa5, cmd->count * 4);
	}
}

/* One timed collective (of every job), and what the first communicator
 * counted during it. */
static void child_go(struct child *ch, const struct cmd_msg *cmd,
		     struct reply_msg *rep)
{
	struct rinx_comm *c = ch->cs[0];
	struct rinx_comm_stats a, b;
	struct rusage ua, ub;
	uint64_t t;
	int j;

	rinx_comm_stats(c, &a);
	getrusage(RUSAGE_SELF, &ua);
	t = now_ns();
	if (ch->nj == 1)
		rep->err = rinx_allreduce(c, ch->sendb, ch->recvb, cmd->count,
					  ch->o->dtype);
	else
		rep->err = run_jobs(ch->o, ch->cs, ch->nj, ch->sendb, ch->recvb,
				    cmd->count, t, rep->job_ns);
	rep->ns = now_ns() - t;
	getrusage(RUSAGE_SELF, &ub);
	rep->wakeups = (ub.ru_nvcsw + ub.ru_nivcsw) -
		       (ua.ru_nvcsw + ua.ru_nivcsw);
	rep->tcpu_ns = tv_ns(&ub.ru_utime) + tv_ns(&ub.ru_stime) -
		       tv_ns(&ua.ru_utime) - tv_ns(&ua.ru_stime);
	rinx_comm_stats(c, &b);
	rep->ns_quant = b.ns_quant - a.ns_quant;
	rep->ns_dequant = b.ns_dequant - a.ns_dequant;
	rep->sent = b.blocks_sent - a.blocks_sent;
	rep->retx = b.retransmits - a.retransmits;
	rep->nacks = b.nacks - a.nacks;
	rep->repairs = b.repairs - a.repairs;
	rep->slow = b.slow_path - a.slow_path;
	rep->lost = (b.xsk_rx_dropped - a.xsk_rx_dropped) +
		    (b.xsk_rx_ring_full - a.xsk_rx_ring_full) +
		    (b.xsk_fill_empty - a.xsk_fill_empty) +
		    (b.slow_dropped - a.slow_dropped);
	rep->marked = b.ecn_marked - a.ecn_marked;
	rep->cuts = b.cc_cuts - a.cc_cuts;
	rep->rate = b.pace_rate;
	rep->ceil = b.pace_ceiling;
	rep->bv = rinx_comm_block_values(c);
	if (rep->err)
		for (j = 0; j < ch->nj; j++)
			if (*rinx_comm_error(ch->cs[j]))
				snprintf(rep->msg, sizeof(rep->msg), "%s",
					 rinx_comm_error(ch->cs[j]));
}

static void child_check(struct child *ch, const struct cmd_msg *cmd,
			struct reply_msg *rep)
{
	const struct bench_opts *o = ch->o;
	uint64_t seed;
	int j;

	for (j = 0; j < ch->nj; j++) {
		struct reply_msg one = { 0 };

		seed = gen_run_seed(o->seed + j, cmd->iter, cmd->count);
		verify(o, ch->s->nhosts, seed, ch->recvb + o->max_count * 4 * j,
		       cmd->count, rinx_comm_block_values(ch->cs[j]), &one);
		if (one.wrong && !rep->wrong)
			snprintf(rep->msg, sizeof(rep->msg), "job %u: %s",
				 o->job + j, one.msg);
		rep->wrong += one.wrong;
		if (one.worst > rep->worst)
			rep->worst = one.worst;
	}
}

static void child_stats(struct child *ch)
{
	struct rinx_comm_stats st;

	rinx_comm_stats(ch->cs[0], &st);
	fprintf(stderr, "rank %d: ops %llu slow %llu slow_dropped %llu quant "
		"%.1f ms dequant %.1f ms total %.1f ms xsk rx_dropped %llu "
		"ring_full %llu fill_empty %llu\n", ch->rank,
		(unsigned long long)st.ops,
		(unsigned long long)st.slow_path,
		(unsigned long long)st.slow_dropped,
		st.ns_quant / 1e6, st.ns_dequant / 1e6, st.ns_total / 1e6,
		(unsigned long long)st.xsk_rx_dropped,
		(unsigned long long)st.xsk_rx_ring_full,
		(unsigned long long)st.xsk_fill_empty);
}

static void child(const struct bench_opts *o, const char *spec_path,
		  const struct rinx_spec *s, int rank, int in, int out)
{
	struct child ch = { .o = o, .s = s, .rank = rank,
			    .nj = o->jobs > 1 ? o->jobs : 1 };
	struct reply_msg rep;
	struct cmd_msg cmd;
	int j, code = 1;

	memset(&rep, 0, sizeof(rep));
	rep.err = child_open(&ch, spec_path, &rep);
	xwrite(out, &rep, sizeof(rep));	/* open done */
	if (rep.err)
		_exit(1);
	while (!xread(in, &cmd, sizeof(cmd))) {
		memset(&rep, 0, sizeof(rep));
		if (cmd.op == OP_QUIT) {
			if (getenv("RINX_BENCH_STATS"))
				child_stats(&ch);
			code = 0;
			break;
		}
		if (cmd.op == OP_PREP)
			child_prep(&ch, &cmd);
		else if (cmd.op == OP_GO)
			child_go(&ch, &cmd, &rep);
		else if (cmd.op == OP_CHECK)
			child_check(&ch, &cmd, &rep);
		if (xwrite(out, &rep, sizeof(rep)))
			break;
	}
	for (j = 0; j < ch.nj; j++)
		rinx_comm_close(ch.cs[j]);
	_exit(code);
}

/* ---- --profile: where the time goes ----
 * XDP program run time and run count come from the kernel's BPF run-time
 * statistics (enabled only while the bench holds the stats fd); CPU time
 * from /proc/stat, so it includes softirq work done on behalf of any rank. */
struct prof_prog {
	int fd;
	uint64_t ns, cnt;
};

struct prof {
	int stats_fd;
	struct prof_prog host[RINX_MAX_NODES], sw[RINX_MAX_NODES + 1];
	int nhost, nsw;
	uint64_t cpu[8];	/* user nice system idle iowait irq softirq steal */
};

static int prog_fd_of_link(const char *path)
{
	struct bpf_link_info li = {};
	__u32 len = sizeof(li);
	int lfd = bpf_obj_get(path), fd = -1;

	if (lfd < 0)
		return -1;
	if (!bpf_obj_get_info_by_fd(lfd, &li, &len))
		fd = bpf_prog_get_fd_by_id(li.prog_id);
	close(lfd);
	return fd;
}

static int prog_fd_of_xdp(const char *netns, const char *ifname)
{
	__u32 id = 0;
	int old, fd = -1, ifindex;

	if (rinx_netns_enter(netns, &old))
		return -1;
	ifindex = if_nametoindex(ifname);
	if (ifindex && !bpf_xdp_query_id(ifindex, 0, &id) && id)
		fd = bpf_prog_get_fd_by_id(id);
	rinx_netns_leave(old);
	return fd;
}

/* The program on any XDP interface of namespace netns (a topology
 * testbed's switch: its ports are named after its links). */
static int prog_fd_of_ns(const char *netns)
{
	struct if_nameindex *ifs, *it;
	int old, fd = -1;
	__u32 id;

	if (rinx_netns_enter(netns, &old))
		return -1;
	ifs = if_nameindex();
	for (it = ifs; it && it->if_index && fd < 0; it++) {
		id = 0;
		if (!bpf_xdp_query_id(it->if_index, 0, &id) && id)
			fd = bpf_prog_get_fd_by_id(id);
	}
	if (ifs)
		if_freenameindex(ifs);
	rinx_netns_leave(old);
	return fd;
}

static void prof_open(struct prof *p, const struct rinx_spec *s)
{
	char path[RINX_PATH_MAX + 16], dir[RINX_PATH_MAX], prefix[64];
	char ns[RINX_NAME_MAX + 8], ifn[32];
	int i, r, seen[RINX_MAX_NODES] = { 0 };

	memset(p, 0, sizeof(*p));
	p->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	for (i = 0; i < s->nhosts; i++) {
		rinx_node_pin_dir(s, &s->hosts[i], dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/link", dir);
		p->host[p->nhost++].fd = prog_fd_of_link(path);
	}
	/* testbed switches: one program per switch namespace */
	if (rinx_testbed_spec_prefix(s, prefix, sizeof(prefix)))
		return;
	/* a topology testbed: every switch and server is a rack, <prefix>t<i> */
	for (i = 0; s->topo[0] && i < s->nracks && i < RINX_MAX_NODES; i++) {
		snprintf(ns, sizeof(ns), "%st%d", prefix, i);
		p->sw[p->nsw++].fd = prog_fd_of_ns(ns);
	}
	for (i = 0; !s->topo[0] && i < s->nhosts; i++) {
		const struct rinx_spec_host *h = &s->hosts[i];

		r = h->rack;
		if (r < 0 || r >= RINX_MAX_NODES || seen[r]++)
			continue;
		snprintf(ns, sizeof(ns), "%st%d", prefix, r);
		snprintf(ifn, sizeof(ifn), "p%d", i);
		p->sw[p->nsw++].fd = prog_fd_of_xdp(ns, ifn);
	}
	/* a topology testbed has no spine: its switches are all racks */
	if (p->nsw > 1 && !s->topo[0]) {
		snprintf(ns, sizeof(ns), "%ssp", prefix);
		p->sw[p->nsw++].fd = prog_fd_of_xdp(ns, "t0");
	}
}

static void prof_sample(struct prof *p, uint64_t *hns, uint64_t *hcnt,
			uint64_t *sns, uint64_t *scnt, uint64_t cpu[8])
{
	struct bpf_prog_info pi;
	__u32 len;
	FILE *f;
	int i;

	*hns = *hcnt = *sns = *scnt = 0;
	for (i = 0; i < p->nhost + p->nsw; i++) {
		struct prof_prog *g = i < p->nhost ? &p->host[i] :
					&p->sw[i - p->nhost];

		if (g->fd < 0)
			continue;
		memset(&pi, 0, sizeof(pi));
		len = sizeof(pi);
		if (bpf_obj_get_info_by_fd(g->fd, &pi, &len))
			continue;
		if (i < p->nhost) {
			*hns += pi.run_time_ns;
			*hcnt += pi.run_cnt;
		} else {
			*sns += pi.run_time_ns;
			*scnt += pi.run_cnt;
		}
	}
	memset(cpu, 0, 8 * sizeof(cpu[0]));
	f = fopen("/proc/stat", "r");
	if (f) {
		if (fscanf(f, "cpu %lu %lu %lu %lu %lu %lu %lu %lu", &cpu[0],
			   &cpu[1], &cpu[2], &cpu[3], &cpu[4], &cpu[5], &cpu[6],
			   &cpu[7]) != 8)
			memset(cpu, 0, 8 * sizeof(cpu[0]));
		fclose(f);
	}
}

static void prof_close(struct prof *p)
{
	int i;

	for (i = 0; i < p->nhost; i++)
		if (p->host[i].fd >= 0)
			close(p->host[i].fd);
	for (i = 0; i < p->nsw; i++)
		if (p->sw[i].fd >= 0)
			close(p->sw[i].fd);
	if (p->stats_fd >= 0)
		close(p->stats_fd);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct team {
	int n;
	pid_t pid[RINX_MAX_NODES];
	int to[RINX_MAX_NODES], from[RINX_MAX_NODES];
};

static int team_cmd(struct team *t, int op, int iter, uint64_t count,
		    struct reply_msg *reps)
{
	struct cmd_msg cmd = { .op = op, .iter = iter, .count = count };
	int r, bad = 0;

	for (r = 0; r < t->n; r++)
		if (xwrite(t->to[r], &cmd, sizeof(cmd)))
			bad = -EPIPE;
	for (r = 0; r < t->n; r++)
		if (xread(t->from[r], &reps[r], sizeof(reps[r]))) {
			snprintf(reps[r].msg, sizeof(reps[r].msg),
				 "rank %d: trainer process died", r);
			reps[r].err = -EPIPE;
			bad = -EPIPE;
		}
	return bad;
}

static void team_end(struct team *t)
{
	struct cmd_msg cmd = { .op = OP_QUIT };
	int r, status;

	for (r = 0; r < t->n; r++) {
		if (t->to[r] >= 0) {
			xwrite(t->to[r], &cmd, sizeof(cmd));
			close(t->to[r]);
		}
		if (t->from[r] >= 0)
			close(t->from[r]);
	}
	for (r = 0; r < t->n; r++)
		if (t->pid[r] > 0)
			waitpid(t->pid[r], &status, 0);
}

static int team_start(struct team *t, const struct bench_opts *o,
		      const char *spec_path, const struct rinx_spec *s)
{
	struct reply_msg rep;
	int r, p1[2], p2[2], err = 0;

	memset(t, 0, sizeof(*t));
	t->n = s->nhosts;
	for (r = 0; r < t->n; r++)
		t->to[r] = t->from[r] = -1;
	fflush(stdout);
	fflush(stderr);
	for (r = 0; r < t->n; r++) {
		if (pipe(p1) || pipe(p2))
			return -errno;
		t->pid[r] = fork();
		if (t->pid[r] < 0)
			return -errno;
		if (t->pid[r] == 0) {
			int k;

			for (k = 0; k < r; k++) {
				close(t->to[k]);
				close(t->from[k]);
			}
			close(p1[1]);
			close(p2[0]);
			child(o, spec_path, s, r, p1[0], p2[1]);
		}
		close(p1[0]);
		close(p2[1]);
		t->to[r] = p1[1];
		t->from[r] = p2[0];
	}
	for (r = 0; r < t->n; r++) {
		if (xread(t->from[r], &rep, sizeof(rep))) {
			fprintf(stderr, "rinxctl bench: rank %d died while "
				"opening\n", r);
			err = -EPIPE;
		} else if (rep.err) {
			fprintf(stderr, "rinxctl bench: %s\n", rep.msg);
			err = rep.err;
		}
	}
	return err;
}

/* One bench_run: the team, what is known of the run, and what adds up
 * over the sizes. */
struct run {
	const struct bench_opts *o;
	struct team t;
	struct prof prof;
	int n;			/* ranks */
	int bv;			/* values per block of the ranks */
	__u32 link;		/* slowest link, Mbit/s; 0: no rates */
	unsigned long long all_retx, all_nacks;
	double worst;		/* largest |error| / bound */
	int wrong;		/* ranks with wrong elements, all sizes */
};

/* One size's measurements, from the runs to the figures printed. */
struct size_run {
	uint64_t bytes, count, med;
	uint64_t times[BENCH_MAX_ITERS];
	uint64_t jt[BENCH_MAX_JOBS][BENCH_MAX_ITERS];
	/* --profile, summed over the timed runs (and ranks) */
	uint64_t hns, hcnt, sns, scnt, qns, dns;
	uint64_t retx, nacks, repairs, marked, cuts, slow, lost;
	uint64_t wakeups, tcpu_ns;
	uint64_t rates[RINX_MAX_NODES], ceils[RINX_MAX_NODES];
	uint64_t cpu[8];
	double algbw, busbw;
	int bad;		/* ranks with wrong elements */
};

static void print_header(const struct run *ru, FILE *out)
{
	const struct bench_opts *o = ru->o;
	char linkbuf[80] = "";

	/* link utilization: busbw over the slowest link, when the spec
	 * gives link rates */
	if (ru->link)
		snprintf(linkbuf, sizeof(linkbuf), "; slowest link %u Mbit/s "
			 "(util = busbw / link rate)", ru->link);
	if (o->json)
		fprintf(out, "{\"ranks\":%d,\"dtype\":\"%s\",\"data\":\"%s\","
			"\"runs\":%d,\"warmup\":%d,\"verify\":%s,"
			"\"results\":[", ru->n,
			o->dtype == RINX_INT32 ? "int32" : "float32",
			gen_data_name(o->data), o->iters,
			o->warmup, o->verify ? "true" : "false");
	else
		fprintf(out, "# rinx allreduce: %d ranks, %s, data %s, median of "
			"%d runs after %d warm-up, verify %s%s\n"
			"# data %s: %s\n"
			"# %12s %11s %10s %10s %10s %9s %9s %10s %s%s\n", ru->n,
			o->dtype == RINX_INT32 ? "int32" : "float32",
			gen_data_name(o->data), o->iters,
			o->warmup, o->verify ? "on" : "off", linkbuf,
			gen_data_name(o->data), gen_data_about[o->data], "bytes",
			"elements", "min_us", "median_us", "max_us",
			"algbw", "busbw", "Melem/s", ru->link ? "  util " : "",
			"verify");
}

/* The ranks' replies of a timed run into the profile sums. */
static void profile_add(const struct run *ru, struct size_run *sr,
			const struct reply_msg *reps, const uint64_t a[4],
			const uint64_t b[4], const uint64_t ca[8],
			const uint64_t cb[8])
{
	int c, r;

	sr->hns += b[0] - a[0];
	sr->hcnt += b[1] - a[1];
	sr->sns += b[2] - a[2];
	sr->scnt += b[3] - a[3];
	for (c = 0; c < 8; c++)
		sr->cpu[c] += cb[c] - ca[c];
	for (r = 0; r < ru->n; r++) {
		sr->qns += reps[r].ns_quant;
		sr->dns += reps[r].ns_dequant;
		sr->retx += reps[r].retx;
		sr->nacks += reps[r].nacks;
		sr->repairs += reps[r].repairs;
		sr->slow += reps[r].slow;
		sr->lost += reps[r].lost;
		sr->wakeups += reps[r].wakeups;
		sr->tcpu_ns += reps[r].tcpu_ns;
		sr->marked += reps[r].marked;
		sr->cuts += reps[r].cuts;
		sr->rates[r] = reps[r].rate;
		sr->ceils[r] = reps[r].ceil;
	}
}

/* After the collective of run i (err: how the team went): errors, the
 * slowest rank's time, the jobs' times, and with --verify the check. 0 or
 * -errno. */
static int run_done(struct run *ru, struct size_run *sr, int i,
		    struct reply_msg *reps, int err)
{
	const struct bench_opts *o = ru->o;
	int nj = o->jobs > 1 ? o->jobs : 1, j, r;
	uint64_t tmax = 0;

	for (r = 0; r < ru->n; r++) {
		if (reps[r].err && !err)
			err = reps[r].err;
		if (reps[r].err)
			fprintf(stderr, "rinxctl bench: rank %d: %s\n",
				r, reps[r].msg);
		if (reps[r].ns > tmax)
			tmax = reps[r].ns;
	}
	for (j = 0; j < nj && i >= 0; j++) {
		sr->jt[j][i] = 0;
		for (r = 0; r < ru->n; r++)
			if (reps[r].job_ns[j] > sr->jt[j][i])
				sr->jt[j][i] = reps[r].job_ns[j];
	}
	if (err)
		return err;
	if (o->verify) {
		err = team_cmd(&ru->t, OP_CHECK, i, sr->count, reps);
		for (r = 0; r < ru->n; r++) {
			if (reps[r].wrong) {
				fprintf(stderr, "rinxctl bench: rank %d: %d "
					"wrong elements at %llu bytes, first: "
					"%s\n", r, reps[r].wrong,
					(unsigned long long)sr->bytes,
					reps[r].msg);
				sr->bad++;
			}
			if (reps[r].worst > ru->worst)
				ru->worst = reps[r].worst;
		}
	}
	if (i >= 0)
		sr->times[i] = tmax;
	return err;
}

/* Warm-ups and timed runs of one size, into sr. 0 or -errno. */
static int measure_size(struct run *ru, struct size_run *sr)
{
	static struct reply_msg reps[RINX_MAX_NODES];
	const struct bench_opts *o = ru->o;
	int i, r, err = 0;

	for (i = -o->warmup; i < o->iters && !err; i++) {
		uint64_t a[4], b[4], ca[8], cb[8];

		err = team_cmd(&ru->t, OP_PREP, i, sr->count, reps);
		if (o->profile && i >= 0)
			prof_sample(&ru->prof, &a[0], &a[1], &a[2], &a[3], ca);
		if (!err)
			err = team_cmd(&ru->t, OP_GO, i, sr->count, reps);
		if (!err && reps[0].bv > 0)
			ru->bv = reps[0].bv;
		for (r = 0; r < ru->n && !err; r++) {
			ru->all_retx += reps[r].retx;
			ru->all_nacks += reps[r].nacks;
		}
		if (o->profile && i >= 0) {
			prof_sample(&ru->prof, &b[0], &b[1], &b[2], &b[3], cb);
			profile_add(ru, sr, reps, a, b, ca, cb);
		}
		err = run_done(ru, sr, i, reps, err);
	}
	if (err)
		return err;
	qsort(sr->times, o->iters, sizeof(sr->times[0]), cmp_u64);
	sr->med = sr->times[o->iters / 2];
	sr->algbw = (double)sr->bytes / sr->med;	/* bytes/ns = GB/s */
	sr->busbw = sr->algbw * 2.0 * (ru->n - 1) / ru->n;
	return 0;
}

/* The size's row (table or JSON) and its result for the caller. */
static void print_size(const struct run *ru, const struct size_run *sr,
		       int first, struct bench_result *res, FILE *out)
{
	const struct bench_opts *o = ru->o;
	char utilbuf[16];

	/* GB/s * 8000 = Mbit/s */
	if (res) {
		res->bytes = sr->bytes;
		res->median_ns = sr->med;
		res->busbw = sr->busbw;
		res->util = ru->link ? sr->busbw * 8000 / ru->link : 0;
		res->verified = !o->verify ? -1 : !sr->bad;
	}
	if (ru->link)
		snprintf(utilbuf, sizeof(utilbuf), "%5.3f",
			 sr->busbw * 8000 / ru->link);
	else
		snprintf(utilbuf, sizeof(utilbuf), "null");
	if (o->json)
		fprintf(out, "%s{\"bytes\":%llu,\"elements\":%llu,"
			"\"min_us\":%.1f,\"median_us\":%.1f,"
			"\"max_us\":%.1f,\"algbw_gbs\":%.4f,"
			"\"busbw_gbs\":%.4f,\"elements_per_s\":%.0f,"
			"\"util\":%s,\"verified\":%s}", first ? "" : ",",
			(unsigned long long)sr->bytes,
			(unsigned long long)sr->count, sr->times[0] / 1e3,
			sr->med / 1e3, sr->times[o->iters - 1] / 1e3, sr->algbw,
			sr->busbw, sr->count * 1e9 / sr->med, utilbuf,
			!o->verify ? "null" : sr->bad ? "false" : "true");
	else
		fprintf(out, "  %12llu %11llu %10.1f %10.1f %10.1f "
			"%9.3f %9.3f %10.1f%s%s %s\n",
			(unsigned long long)sr->bytes,
			(unsigned long long)sr->count, sr->times[0] / 1e3,
			sr->med / 1e3, sr->times[o->iters - 1] / 1e3, sr->algbw,
			sr->busbw, sr->count * 1e3 / sr->med,
			ru->link ? " " : "", ru->link ? utilbuf : "",
			!o->verify ? "-" : sr->bad ? "WRONG" : "ok");
}

/* --jobs: a line (or JSON object) per job with its own median. */
static void print_jobs(const struct run *ru, struct size_run *sr, FILE *out)
{
	const struct bench_opts *o = ru->o;
	int nj = o->jobs > 1 ? o->jobs : 1, j, n = ru->n;
	char utilbuf[16];

	for (j = 0; j < nj && nj > 1; j++) {
		double jb;

		qsort(sr->jt[j], o->iters, sizeof(sr->jt[j][0]), cmp_u64);
		jb = (double)sr->bytes / sr->jt[j][o->iters / 2] * 2.0 *
		     (n - 1) / n;
		if (o->json)
			fprintf(out, "%s{\"bytes\":%llu,\"job\":%u,"
				"\"median_us\":%.1f,\"busbw_gbs\":%.4f}",
				",", (unsigned long long)sr->bytes,
				o->job + j, sr->jt[j][o->iters / 2] / 1e3, jb);
		else
			fprintf(out, "#   job %u of %d: median %.1f us, "
				"busbw %.3f GB/s%s%s\n", o->job + j, nj,
				sr->jt[j][o->iters / 2] / 1e3, jb,
				ru->link ? ", util " : "",
				ru->link ? (snprintf(utilbuf, sizeof(utilbuf),
						     "%.3f", jb * 8000 /
						     ru->link), utilbuf) : "");
	}
}

/* --profile: where the time went, what the network did, the slow path. */
static void print_profile(const struct run *ru, struct size_run *sr,
			  FILE *out)
{
	const struct bench_opts *o = ru->o;
	int n = ru->n, c;
	double nblk = (double)((sr->count + ru->bv - 1) / ru->bv) * o->iters;
	double tot = 0;
	long hz = sysconf(_SC_CLK_TCK);
	const uint64_t *cpu = sr->cpu;

	for (c = 0; c < 8; c++)
		tot += cpu[c];
	fprintf(out, "#   profile: XDP host %.1f runs/block %.0f ns/run"
		", switch %.1f runs/block %.0f ns/run; float "
		"conversion %.2f+%.2f ns/element/rank\n",
		sr->hcnt / nblk, sr->hcnt ? (double)sr->hns / sr->hcnt : 0,
		sr->scnt / nblk, sr->scnt ? (double)sr->sns / sr->scnt : 0,
		(double)sr->qns / n / (sr->count * (double)o->iters),
		(double)sr->dns / n / (sr->count * (double)o->iters));
	if (tot > 0 && hz > 0)
		fprintf(out, "#   cpu: %.2f of %ld cores busy (user "
			"%.0f%%, system %.0f%%, softirq %.0f%%); "
			"all-core cpu-ms per op: XDP host %.1f, "
			"switch %.1f, conversion %.1f, total %.1f\n",
			(tot - cpu[3] - cpu[4]) / tot *
				sysconf(_SC_NPROCESSORS_ONLN),
			sysconf(_SC_NPROCESSORS_ONLN),
			100.0 * (cpu[0] + cpu[1]) / tot,
			100.0 * cpu[2] / tot,
			100.0 * cpu[6] / tot,
			sr->hns / 1e6 / o->iters, sr->sns / 1e6 / o->iters,
			(sr->qns + sr->dns) / 1e6 / o->iters,
			(tot - cpu[3] - cpu[4]) * 1e3 / hz / o->iters);
	/* what congestion control and loss repair did; each rank stores
	 * every finished block once */
	qsort(sr->rates, n, sizeof(sr->rates[0]), cmp_u64);
	qsort(sr->ceils, n, sizeof(sr->ceils[0]), cmp_u64);
	fprintf(out, "#   network: %.2f%% of finished blocks "
		"marked CE, %.1f rate cuts/op, pace rate "
		"min/median/max %llu/%llu/%llu blocks/s per rank "
		"(0: unpaced), ceiling %llu..%llu (0: none); "
		"per op: %.1f stalls "
		"repaired, %.1f NACKs, %.1f blocks resent (%.2f%% "
		"of blocks)\n",
		100.0 * sr->marked / (nblk * n), (double)sr->cuts / o->iters,
		(unsigned long long)sr->rates[0],
		(unsigned long long)sr->rates[n / 2],
		(unsigned long long)sr->rates[n - 1],
		(unsigned long long)sr->ceils[0],
		(unsigned long long)sr->ceils[n - 1],
		(double)sr->repairs / o->iters, (double)sr->nacks / o->iters,
		(double)sr->retx / o->iters, 100.0 * sr->retx / nblk);
	/* the slow path: frames XDP handed to the trainers (a share not
	 * written yet, a frame of the next round, control frames, an
	 * aggregate waiting for the own share), of all frames the host
	 * programs ran on */
	fprintf(out, "#   slow path: %.1f frames/op to the "
		"trainers, %.3f%% of the frames the host "
		"programs saw; %.1f frames/op lost on the way up (AF_XDP "
		"socket drops, slow_dropped)\n", (double)sr->slow / o->iters,
		sr->hcnt ? 100.0 * sr->slow / sr->hcnt : 0.0,
		(double)sr->lost / o->iters);
	/* the trainers' own share: what they spent and how often they
	 * slept and woke (each wakeup a context switch on the cores the
	 * softirqs need) */
	fprintf(out, "#   trainers: %.1f cpu-ms and %.0f context switches "
		"per op and rank (the process, user and system)\n",
		sr->tcpu_ns / 1e6 / n / o->iters,
		(double)sr->wakeups / n / o->iters);
}

static void print_footer(const struct run *ru, int err, FILE *out)
{
	const struct bench_opts *o = ru->o;

	if (!o->json && !err) {
		fprintf(out, "# frames: %d bytes, %d values per block (%s)\n",
			RINX_FRAME_LEN(ru->bv), ru->bv,
			ru->bv == RINX_BLOCK_VALUES_JUMBO ? "jumbo blocks" :
			"the network's MTU");
		/* an aggregator counts a share sent again into a slot that
		 * has not finished as a duplicate: this says whether any was */
		fprintf(out, "# resends: %llu blocks sent again, %llu NACKs "
			"(every rank and run, warm-ups included)\n",
			ru->all_retx, ru->all_nacks);
	}
	if (o->json)
		fprintf(out, "]}\n");
	else if (o->verify && !err && o->dtype == RINX_INT32)
		fprintf(out, "# verify: %s; int32 sums bit-exact\n",
			ru->wrong ? "FAILED" : "every element ok");
	else if (o->verify && !err)
		fprintf(out, "# verify: %s; float32 worst error %.3f of the "
			"bound\n", ru->wrong ? "FAILED" : "every element ok",
			ru->worst);
}

int bench_run(const struct bench_opts *o, const char *spec_path,
	      const struct rinx_spec *s, FILE *out)
{
	struct bench_opts oo = *o;
	struct size_run *sr;
	struct run ru = {
		.o = &oo, .n = s->nhosts, .bv = RINX_BLOCK_VALUES,
		.link = rinx_spec_min_link(s),
	};
	int k, err;

	/* callers that built their own options (compare) may leave the data
	 * to the dtype */
	if (bench_data_resolve(&oo, "bench"))
		return -EINVAL;
	oo.max_count = 0;
	for (k = 0; k < oo.nsizes; k++)
		if (oo.sizes[k] / 4 > oo.max_count)
			oo.max_count = oo.sizes[k] / 4;
	sr = malloc(sizeof(*sr));
	if (!sr)
		return -ENOMEM;
	err = team_start(&ru.t, &oo, spec_path, s);
	if (err) {
		team_end(&ru.t);
		free(sr);
		return err;
	}
	if (oo.profile)
		prof_open(&ru.prof, s);
	print_header(&ru, out);
	for (k = 0; k < oo.nsizes && !err; k++) {
		memset(sr, 0, sizeof(*sr));
		sr->bytes = oo.sizes[k];
		sr->count = oo.sizes[k] / 4;
		err = measure_size(&ru, sr);
		if (err)
			break;
		ru.wrong += sr->bad;
		print_size(&ru, sr, k == 0, oo.res ? &oo.res[k] : NULL, out);
		print_jobs(&ru, sr, out);
		if (oo.profile && !oo.json)
			print_profile(&ru, sr, out);
		fflush(out);
	}
	print_footer(&ru, err, out);
	if (oo.profile)
		prof_close(&ru.prof);
	team_end(&ru.t);
	free(sr);
	if (err)
		return err;
	return ru.wrong ? -EDOM : 0;
}

int bench_parse_sizes(const char *list, struct bench_opts *o)
{
	int n = gen_parse_sizes(list, o->sizes, BENCH_MAX_SIZES);

	if (n < 0)
		return n;
	o->nsizes = n;
	return 0;
}

int bench_parse_data(const char *name, struct bench_opts *o, const char *cmd)
{
	o->data = gen_data_parse(name);
	if (o->data >= 0)
		return 0;
	fprintf(stderr, "rinxctl %s: --data grad|worst|ints\n", cmd);
	return -1;
}

int bench_data_resolve(struct bench_opts *o, const char *cmd)
{
	if (o->data < 0)
		o->data = o->dtype == RINX_INT32 ? GEN_INTS : GEN_GRAD;
	if ((o->data == GEN_INTS) == (o->dtype == RINX_INT32))
		return 0;
	fprintf(stderr, "rinxctl %s: --data %s is %s data; --dtype %s runs "
		"on %s\n", cmd, gen_data_name(o->data),
		o->data == GEN_INTS ? "int32" : "float32",
		o->dtype == RINX_INT32 ? "int32" : "float32",
		o->dtype == RINX_INT32 ? "ints (the default)" :
		"grad (the default) or worst");
	return -1;
}

int bench_opt_sizes(const char *v, void *field, char *why, size_t len)
{
	struct bench_opts *o = (void *)((char *)field -
					offsetof(struct bench_opts, sizes));

	(void)why;
	(void)len;
	return bench_parse_sizes(v, o) ? -1 : 0;
}

int bench_opt_data(const char *v, void *field, char *why, size_t len)
{
	(void)why;
	(void)len;
	*(int *)field = gen_data_parse(v);
	return *(int *)field < 0 ? -1 : 0;
}

static int opt_plan(const char *v, void *field, char *why, size_t len)
{
	int k, nps;

	if (rinx_plan_parse(v, &k, &nps, why, len))
		return -1;
	*(const char **)field = v;
	return 0;
}

static const struct opt_choice bench_blocks[] = {
	{ "mtu", 0, 0 },
	{ "jumbo", RINX_BLOCK_JUMBO, 0 },
	{ "largest", RINX_BLOCK_LARGEST, 0 },
	{ NULL, 0, 0 },
};

const struct opt_choice bench_dtypes[] = {
	{ "float32", RINX_FLOAT32, 0 },
	{ "int32", RINX_INT32, 0 },
	{ "float", RINX_FLOAT32, 1 },
	{ "int", RINX_INT32, 1 },
	{ NULL, 0, 0 },
};

#define B_AT(m) OPT_AT(struct bench_opts, m)

const struct opt bench_opt_table[] = {
	{ OPT_STR, "spec", 's', "FILE", B_AT(spec) },
	{ OPT_FN, "sizes", 'S', "LIST", B_AT(sizes), .parse = bench_opt_sizes,
	  .def = "1M,16M,64M", .range = BENCH_SIZES_RANGE,
	  .help = "bytes per rank, e.g. 4K,1M,16M,64M (suffix K, M, G; "
		  "multiple of 4)" },
	{ OPT_FN, "size", 0, "LIST", B_AT(sizes), .parse = bench_opt_sizes,
	  .range = BENCH_SIZES_RANGE },
	{ OPT_INT, "iters", 'i', "N", B_AT(iters), .min = 1,
	  .max = BENCH_MAX_ITERS, .def = "5",
	  .help = "timed runs per size (default {}; the median is reported)" },
	{ OPT_INT, "warmup", 'w', "N", B_AT(warmup), .min = 0,
	  .max = INT_MAX, .def = "1",
	  .help = "untimed runs before them (default {})" },
	{ OPT_ENUM, "dtype", 'd', "T", B_AT(dtype), .choices = bench_dtypes,
	  .def = "float32", .help = "{} (default) or int32" },
	{ OPT_FN, "data", 'D', "D", B_AT(data), .parse = bench_opt_data,
	  .range = "grad|worst|ints",
	  .help = "what every rank reduces (the same at every size and run\n"
		  "of a seed, so runs and candidates compare):\n"
		  "grad (float32 default): like gradients; the scale changes\n"
		  "every 6144 values, log-uniform over 2^-20..2^-4, the same\n"
		  "on every rank; each rank draws its own values ~normal\n"
		  "around 0 with that scale;\n"
		  "worst: the scale changes every 768 values and differs\n"
		  "between ranks (exponents up to 15 apart in a block), the\n"
		  "worst case of rinx's block fixed point;\n"
		  "ints (int32 default, int32 only): any 32-bit value" },
	{ OPT_FLAG, "verify", 'V', B_AT(verify),
	  .help = "check every element against an independent reference" },
	{ OPT_FLAG, "json", 'j', B_AT(json),
	  .help = "one JSON object instead of the table" },
	{ OPT_FLAG, "profile", 'P', B_AT(profile),
	  .help = "after each size: XDP runs per block and ns per run (kernel\n"
		  "BPF statistics), conversion ns per element, CPU use,\n"
		  "congestion control and repairs, the slow path's share\n"
		  "and the frames lost on the way up (AF_XDP socket drops,\n"
		  "slow_dropped), the trainers' CPU time and context switches" },
	{ OPT_INT, "timeout", 't', "MS", B_AT(timeout_ms), .min = 1,
	  .max = INT_MAX, .def = "10000",
	  .help = "an allreduce fails after this long without progress\n"
		  "(default {}; with --jobs, 10 x this for all of them)" },
	{ OPT_INT, "inflight", 'f', "N", B_AT(inflight), .min = 0,
	  .max = INT_MAX,
	  .help = "blocks in flight per origin (default 128/ranks, 8..64)" },
	{ OPT_ENUM, "block", 'B', "B", B_AT(block), .choices = bench_blocks,
	  .def = "mtu",
	  .help = "values per block: {} (default: 768, 352 below an IP MTU\n"
		  "of 3154), jumbo (2048 in 8288-byte frames: refused where\n"
		  "an MTU is below 8274 or the plan aggregates) or largest\n"
		  "(jumbo where allowed, else the MTU's)" },
	{ OPT_INT, "jobs", 'N', "N", B_AT(jobs), .min = 1,
	  .max = BENCH_MAX_JOBS,
	  .range = "1..32 (and at most the spec's jobs= slots of a node)",
	  .help = "N jobs (ids job..job+N-1, 1..32) run each collective at\n"
		  "once over the same links; a line per job gives its time" },
	{ OPT_FN, "plan", 'p', "P", B_AT(plan), .parse = opt_plan,
	  .help = "the plan every rank runs: ring, rina, ps[:N], ps-ina[:N],\n"
		  "har, tree, dbtree or topo:NAME (a planner on the spec's\n"
		  "topology; default: the spec's plan=, else rina)" },
	{ OPT_INT, "job", 'J', "ID", B_AT(job), .min = 1, .max = UINT32_MAX,
	  .help = "job id (default random)" },
	{ OPT_FLAG, "convert", 'C', B_AT(convert),
	  .help = "no cluster: float32 <-> fixed point conversion alone on\n"
		  "one thread, every path this CPU runs (portable, avx2,\n"
		  "avx512), ns per element of thread CPU time against memcpy\n"
		  "of the same floats in the same run; every path's slots\n"
		  "checked against the portable path's, its round trip\n"
		  "against the error bound" },
	{ OPT_END },
};

static const struct opt bench_cmd_table[] = {
	{ OPT_INCLUDE, .sub = bench_opt_table, .help = "" },
	{ OPT_TEXT, .help =
"output: min/median/max time of the slowest rank, algbw = bytes / median,\n"
"busbw = algbw * 2(n-1)/n (GB/s = 1e9 B/s), Melem/s = elements / median;\n"
"util = busbw / slowest link rate of the spec (when it gives link rates)\n" },
	{ OPT_END },
};

static const struct opts_cmd bench_cmd = {
	.name = "bench", .synopsis = "--spec FILE [options]\n"
	"       rinxctl bench --convert [--sizes LIST] [--iters N] [--warmup N] "
	"[--json]", .tab = bench_cmd_table, .col = 19,
};

void bench_defaults(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	opts_defaults(bench_opt_table, o);
	o->data = -1;
	srand(getpid() ^ time(NULL));
	o->job = 1 + (rand() & 0x3ffffff);
	o->token = bench_token();
	o->seed = 12345;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_opts o;
	struct rinx_spec s;
	const char *spec = NULL;
	char err[256];
	int ret;

	bench_defaults(&o);
	/* the parser applies the table's defaults again: job, token and
	 * seed are not in it */
	ret = opts_parse(&bench_cmd, argc, argv, &o, NULL);
	if (ret)
		return opts_exit(ret);
	if (bench_data_resolve(&o, "bench"))
		return RINX_EXIT_USAGE;
	spec = o.spec;
	if (o.convert) {
		if (spec) {
			fprintf(stderr, "rinxctl bench: --convert runs no "
				"cluster: leave --spec out\n");
			return RINX_EXIT_USAGE;
		}
		if (o.data == GEN_INTS) {
			fprintf(stderr, "rinxctl bench: --convert converts "
				"float32: --data grad or worst\n");
			return RINX_EXIT_USAGE;
		}
		ret = bench_convert(&o, stdout);
		if (ret == -EDOM) {
			fprintf(stderr, "rinxctl bench: WRONG RESULTS\n");
			return RINX_EXIT_WRONG;
		}
		if (ret) {
			fprintf(stderr, "rinxctl bench: failed: %s\n",
				strerror(-ret));
			return rinx_exit_code(ret);
		}
		return 0;
	}
	if (!spec) {
		fprintf(stderr, "rinxctl bench: --spec FILE is required "
			"(rinxctl testbed up prints one)\n");
		return RINX_EXIT_USAGE;
	}
	if (rinx_spec_load(spec, &s, err, sizeof(err))) {
		fprintf(stderr, "rinxctl bench: %s\n", err);
		return RINX_EXIT_CONFIG;
	}
	signal(SIGPIPE, SIG_IGN);
	ret = bench_run(&o, spec, &s, stdout);
	if (ret == -EDOM) {
		fprintf(stderr, "rinxctl bench: WRONG RESULTS\n");
		return RINX_EXIT_WRONG;
	}
	if (ret) {
		fprintf(stderr, "rinxctl bench: failed: %s\n", strerror(-ret));
		return rinx_exit_code(ret);
	}
	return 0;
}
