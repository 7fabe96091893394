// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of the aggregator slots (bpf/agg.bpf.h, rinx_agg_add) in both
 * placements, through BPF_PROG_TEST_RUN:
 *
 *  - agent: rinx_host on the rack's agent host (rank 0 of rack 2, whose
 *    workers are ranks 0, 1, 2; the agent is one of them and adds its own
 *    share from the share map, RINX_HOP_SELF);
 *  - ToR:   rinx_switch with ina_mac set, frames addressed to the aggregator
 *    (node 5), via rinx_ina_frame.
 *
 * Two tables per placement. The Rina plan of the cluster (user/plan/plan.c,
 * rinx_plan_build; contributors are node ids, bit i = node i):
 *
 *   rack 2 (INA): ranks 0 1 2                rack 5 (plain): ranks 3 4
 *   ring members: [rack 2's aggregator] -> 3 -> 4 -> back
 *                                  agent (self + share)  ToR
 *   class 0: starts at the aggregator   AGG_FWD     0x06       0x07
 *   class 1: finished there (from 4)    AGG_FINISH  0x16       0x17
 *   class 2: in the middle (from 4)     AGG_FWD     0x16       0x17
 *   gather: class 0 MCAST_FWD, class 2 MCAST_END (both from 4)
 *   every aggregation answers a worker's late share (RINX_HOP_ANSWER)
 *
 * and a star written here (what parameter-server and tree plans install:
 * no rack group, no answer), class pattern 0 1 2 1 (block b in class
 * cmap[b % 4]), contributors nodes 1 2 37 63 (+ 0 at the ToR):
 *
 *   class 0: AGG_FINISH, ends here (the agent stores it; agent only)
 *   class 1: AGG_FINISH, unicast to node 3
 *   class 2: AGG_FWD to node 4, with the partial of node 4 (step 3)
 *
 * Every case is a sequence of frames into one block; each frame is one TAP
 * line that checks the XDP action, the whole output frame (a drop must leave
 * it untouched), the aggregator slot read back with BPF_F_LOCK, the result
 * map entry (agent) and the exact delta of every counter. Expected sums come
 * from a model of the slot kept here, in 64-bit arithmetic with
 * round-to-nearest-ties-up alignment; with equal exponents the sum must also
 * be the exact 64-bit sum of the contributions. At the agent, worker 0's
 * step is its trainer writing the share map (no frame): the model adds what
 * the test wrote when the last contributor arrives, or, if the share is not
 * of the round yet, expects the others' sum on the slow path and the slot
 * waiting (pend); a later step completes it as the trainer does (BPF_F_LOCK
 * update). The slow-path cases run with an empty XSKMAP (counted drop) and
 * again with a socket in it (redirect, RINX_STAT_SLOW_SELF).
 *
 * The fair marks (bpf/fair_kern_user.h): the counting and the decision
 * in user space with chosen epochs and draws, then the host program
 * completing a server's block (the star's class 1) and a rack agent's (a
 * Rina class) with the `fairs` map set for the job and the node (a job
 * below, at and above its share, alone, stale counts): the sum's ECN
 * field as it leaves, RINX_F_SHARED (a rack agent's sums only), the
 * node's jobs in RINX_F_JOBS (every sum), its checksum, and fair_unmark.
 *
 * Then two threads pinned to CPU 0 and 1 contribute distinct workers to the
 * same blocks over many rounds (the spin lock), and the cost of one run is
 * measured with distinct frames (one run per syscall; repeat > 1 re-runs the
 * frame the previous repetition rewrote, which is shown as a diagnostic).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uapi/rinx.h"
#include "bpf/switch_kern_user.h"
#include "bpf/fair_kern_user.h"
#include "user/ctl.h"
#include "user/plan/plan.h"
#include "host.skel.h"
#include "switch.skel.h"
#include "selftests/lib/testlib.h"

#define WINDOW		24
#define PORT		47321
#define NSLOTS		RINX_DEFAULT_JOBS
#define NENT		(NSLOTS * WINDOW)
#define QBITS		28	/* 4 contributors: 30 - 2 */

#define JOB_ID		0x00a99001
#define JOB_TOKEN	0x9e3779b97a7a1234ULL
#define JOB_SLOT	1
#define FWD_JOB_ID	0x00a99002	/* plain host reduce hop (timing) */
#define FWD_JOB_SLOT	2

#define STAR_JOB_ID	0x00a99003	/* the star table (hand-written) */
#define STAR_SLOT	3
#define STAR_PLEN	4

#define AGENT		0	/* node id of the agent (rank 0) */
#define TOR		5	/* node id of the ToR aggregator */
#define RACK_INA	2
#define RACK_PLAIN	5
/* extra nodes with high ids, for the 64-bit contributor mask (in the
 * star's, not in the Rina plan's) */
#define NODE_HI		37
#define NODE_TOP	63

#define OFF_IP		14
#define OFF_UDP		34
#define OFF_HDR		42
#define OFF_V		RINX_FRAME_HDR_LEN
#define FLEN		RINX_FRAME_MAX

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define PULL_ROUND	800000
#define PULL_CHECKS	(2 * 15 + 2 * 2)
#define FAIR_CHECKS	(13 + 2 * 10)	/* fair_unit, fair_cases twice */
#define WK_SLOT		4	/* worker 1 of the agent's plan, at the agent's
				 * program (another job slot of it) */
#define WK_TOR_SLOT	5	/* worker 1 of the ToR's plan, likewise */
#define WK_JOB		0x00a99004

/* ---- placements ---------------------------------------------------------- */

struct place {
	const char *name;
	bool sw;
	struct host_bpf *hs;
	struct switch_bpf *ss;
	int prog, jobs, nodes, hops, aggs, stats, sw_stats, result, share;
	int partial;
	int xsks;			/* agent: the slow path's XSKMAP */
	bool xsk;			/* a socket is in it (else empty) */
	__u16 self;			/* aggregator node id */
	__u8 self_mac[6];		/* frames to the aggregator go here */
	struct rinx_spec spec;
	struct rinx_plan plan;		/* Rina, rinx_plan_build */
	struct rinx_plan star;		/* written here (star_plan) */
	struct rinx_node node[RINX_MAX_NODES];	/* as written to the map */
};

static struct place places[2];
static int ncpus;

static void node_addr(int id, __u8 *mac, __be32 *ip)
{
	const __u8 m[6] = { 0x02, 0x72, 0x78, 0x0a, 0x00, (__u8)(id + 1) };

	memcpy(mac, m, 6);
	*ip = htonl(0x0a090001 + id);
}

static void make_spec(struct rinx_spec *s, int ina)
{
	int r;

	rinx_spec_init(s);
	s->port = PORT;
	s->window = WINDOW;
	s->nhosts = 5;
	for (r = 0; r < 5; r++) {
		struct rinx_spec_host *h = &s->hosts[r];

		snprintf(h->name, sizeof(h->name), "h%d", r);
		h->rank = r;
		h->rack = r < 3 ? RACK_INA : RACK_PLAIN;
		node_addr(r, h->mac, &h->ip);
	}
	s->nracks = 2;
	s->racks[0].id = RACK_INA;
	s->racks[0].ina = ina;
	snprintf(s->racks[0].name, sizeof(s->racks[0].name), "agg2");
	node_addr(TOR, s->racks[0].mac, &s->racks[0].ip);
	s->racks[1].id = RACK_PLAIN;
	s->racks[1].ina = RINX_INA_NONE;
	snprintf(s->racks[1].name, sizeof(s->racks[1].name), "plain5");
}

/* ---- counters ------------------------------------------------------------ */

struct counters {
	__u64 st[RINX_STAT_MAX];
	__u64 sw[RINX_SW_STAT_MAX];
};

static int read_counters(const struct place *p, struct counters *c)
{
	int err = tl_percpu_sum(p->stats, RINX_STAT_MAX, c->st);

	memset(c->sw, 0, sizeof(c->sw));
	if (!err && p->sw)
		err = tl_percpu_sum(p->sw_stats, RINX_SW_STAT_MAX, c->sw);
	return err;
}

static const char *stat_name(int i)
{
	return rinx_stat_name(i);
}

/* ---- set up -------------------------------------------------------------- */

/* The job of plan pl at slot; the aggregator starts no blocks of its own
 * here (recycling is test_host's), so every start_to is RINX_NO_SEND. */
/* The job entry; `ahead`: the ToR's bound on rounds ahead of round (0:
 * none, as for a plan that routes some rounds around it). */
static int put_job_ahead(const struct place *p, const struct rinx_plan *pl,
			 __u32 id, __u32 slot, __u16 self, __u32 round,
			 __u32 ahead)
{
	struct rinx_job j = {
		.ahead = ahead,
		.token = JOB_TOKEN, .slot = slot, .round = round,
		.nblocks = WINDOW, .last_count = RINX_BLOCK_VALUES,
		.nclasses = (__u16)pl->nclasses,
		.nnodes = (__u16)pl->nnodes, .self = self, .qbits = QBITS,
		.dtype = RINX_W_FIXED, .window = WINDOW,
		.plen = (__u16)pl->plen, .bval = RINX_BLOCK_VALUES,
	};

	memcpy(j.cmap, pl->cmap, sizeof(j.cmap));
	memset(j.start_to, 0xff, sizeof(j.start_to));
	return bpf_map_update_elem(p->jobs, &id, &j, BPF_ANY);
}

static int put_job(const struct place *p, const struct rinx_plan *pl,
		   __u32 id, __u32 slot, __u16 self, __u32 round)
{
	return put_job_ahead(p, pl, id, slot, self, round, 0);
}

static int put_plan(struct place *p, const struct rinx_plan *pl, __u32 slot,
		    bool keep)
{
	int err = 0, k, t, id;
	__u32 key;

	for (id = 0; id < RINX_MAX_NODES; id++) {
		struct rinx_node n = {};

		if (id < pl->nnodes)
			n = pl->nodes[id];
		if (id == NODE_HI || id == NODE_TOP) {
			node_addr(id, n.mac, &n.ip);
			n.rack = RACK_INA;
		}
		if (keep)
			p->node[id] = n;
		key = slot * RINX_MAX_NODES + id;
		err |= bpf_map_update_elem(p->nodes, &key, &n, BPF_ANY);
	}
	for (k = 0; k < RINX_MAX_CLASSES; k++)
		for (t = 1; t <= RINX_HOP_TYPES; t++) {
			struct rinx_hop h = {};

			if (k < pl->nclasses)
				h = pl->hops[k][t - 1];
			key = RINX_HOP_INDEX(slot, k, t);
			err |= bpf_map_update_elem(p->hops, &key, &h, BPF_ANY);
		}
	return err ? -EIO : 0;
}

static int fd_of(struct bpf_map *m) { return bpf_map__fd(m); }

/* The star table (see the top of the file): the shape of what the ps,
 * ps-ina and tree planners install, written here so that every new action
 * of the engine has a case whatever the planners choose: unicast and
 * self-ending AGG_FINISH, no RINX_HOP_ANSWER, a class pattern that is not
 * b % nclasses, contributors with high node ids. */
static void star_plan(struct place *p)
{
	static const __u8 cmap[STAR_PLEN] = { 0, 1, 2, 1 };
	struct rinx_plan *st = &p->star;
	struct rinx_hop h = {
		.from = RINX_NO_SEND, .rack = RINX_NO_RACK,
		.flags = p->sw ? 0 : RINX_HOP_SELF,
		.mask = 1ULL << 1 | 1ULL << 2 | 1ULL << NODE_HI |
			1ULL << NODE_TOP | (p->sw ? 1ULL << 0 : 0),
	};

	memset(st, 0, sizeof(*st));
	st->kind = RINX_PLAN_PS;
	st->nclasses = 3;
	st->nnodes = RINX_MAX_NODES;	/* contributors up to NODE_TOP */
	memcpy(st->nodes, p->plan.nodes, sizeof(st->nodes));
	st->plen = STAR_PLEN;
	memcpy(st->cmap, cmap, sizeof(cmap));
	h.action = RINX_A_AGG_FINISH;
	h.to = p->self;				/* ends here */
	st->hops[0][RINX_T_CONTRIB - 1] = h;
	h.to = 3;				/* unicast */
	st->hops[1][RINX_T_CONTRIB - 1] = h;
	h.action = RINX_A_AGG_FWD;		/* with node 4's partial */
	h.mask |= 1ULL << 4;
	h.from = 4;
	h.step = 3;
	h.out_step = 4;
	st->hops[2][RINX_T_CONTRIB - 1] = h;
	st->hops[2][RINX_T_REDUCE - 1] = h;
}

static int open_place(struct place *p, bool sw)
{
	int err;

	p->sw = sw;
	p->name = sw ? "tor" : "agent";
	p->self = sw ? TOR : AGENT;
	make_spec(&p->spec, sw ? RINX_INA_SWITCH : RINX_INA_AGENT);
	err = rinx_plan_build(&p->plan, &p->spec, p->self);
	if (err)
		return err;
	node_addr(p->self, p->self_mac, &(__be32){ 0 });
	if (!sw) {
		p->hs = tl_host_load(&(struct tl_host_opts){
			.port = PORT, .window = WINDOW, .nshare = NENT,
			.naggs = NENT }, &err);
		if (err)
			return err;
		p->prog = bpf_program__fd(p->hs->progs.rinx_host);
		p->jobs = fd_of(p->hs->maps.jobs);
		p->nodes = fd_of(p->hs->maps.nodes);
		p->hops = fd_of(p->hs->maps.hops);
		p->aggs = fd_of(p->hs->maps.aggs);
		p->stats = fd_of(p->hs->maps.stats);
		p->result = fd_of(p->hs->maps.result);
		p->share = fd_of(p->hs->maps.share);
		p->partial = fd_of(p->hs->maps.partial);
		p->xsks = fd_of(p->hs->maps.xsks);
		p->sw_stats = -1;
	} else {
		static const int ids[] = { 0, 1, 2, 3, 4, 5, NODE_HI,
					   NODE_TOP };
		__u32 lo = 1, port[2] = { 1, 0 };	/* ifindex, no prog */
		unsigned int id;

		p->ss = tl_switch_load(&(struct tl_switch_opts){
			.ina_mac = p->self_mac, .port = PORT, .window = WINDOW,
			.rack = RACK_INA, .naggs = NENT }, &err);
		if (err)
			return err;
		p->prog = bpf_program__fd(p->ss->progs.rinx_switch);
		p->jobs = fd_of(p->ss->maps.jobs);
		p->nodes = fd_of(p->ss->maps.nodes);
		p->hops = fd_of(p->ss->maps.hops);
		p->aggs = fd_of(p->ss->maps.aggs);
		p->stats = fd_of(p->ss->maps.stats);
		p->sw_stats = fd_of(p->ss->maps.sw_stats);
		p->result = p->share = p->xsks = p->partial = -1;
		/* every node's MAC leaves by lo (ifindex 1): unicast outputs
		 * of the aggregator are redirected */
		err = bpf_map_update_elem(fd_of(p->ss->maps.ports), &lo, port,
					  BPF_ANY);
		for (id = 0; id < ARRAY_SIZE(ids) && !err; id++) {
			struct rinx_sw_port sp = { .port = lo };
			__u64 key = 0;
			__be32 ip;

			node_addr(ids[id], (__u8 *)&key, &ip);
			err = bpf_map_update_elem(fd_of(p->ss->maps.macs), &key,
						  &sp, BPF_ANY);
		}
		if (err)
			return -errno;
	}
	star_plan(p);
	err = put_plan(p, &p->plan, JOB_SLOT, true);
	err = err ?: put_job(p, &p->plan, JOB_ID, JOB_SLOT, p->self, 1);
	err = err ?: put_plan(p, &p->star, STAR_SLOT, false);
	err = err ?: put_job(p, &p->star, STAR_JOB_ID, STAR_SLOT, p->self, 1);
	if (!err && !sw) {
		struct rinx_plan q;

		/* host 3 of the same cluster: a plain ADD_FWD reduce hop */
		err = rinx_plan_build(&q, &p->spec, 3);
		err = err ?: put_plan(p, &q, FWD_JOB_SLOT, false);
		err = err ?: put_job(p, &q, FWD_JOB_ID, FWD_JOB_SLOT, 3, 1);
	}
	return err;
}

/* ---- frames -------------------------------------------------------------- */

static struct rinx_hdr *hdr(__u8 *f)
{
	return (struct rinx_hdr *)(f + OFF_HDR);
}

static __s32 *vals(__u8 *f) { return (__s32 *)(f + OFF_V); }

/* A frame from node `from` (MAC and IP of the node table) to the
 * aggregator, header fields as given, its class the one plan pl gives the
 * block; payload left zero. */
static void build(const struct place *p, const struct rinx_plan *pl, __u8 *f,
		  __u32 job, __u8 type, __u8 step, __u16 from, __u16 sender,
		  __u32 round, __u32 block, __s16 exp, __u8 flags)
{
	const struct rinx_node *src = &p->node[from];
	const struct rinx_node *dst = &p->node[p->self];
	struct rinx_hdr *h = tf_frame(f, p->self_mac, src, dst, 0, PORT);

	h->type = type;
	h->flags = flags;
	h->step = step;
	h->job = htonl(job);
	h->token = htobe64(JOB_TOKEN);
	h->round = htonl(round);
	h->block = htonl(block);
	h->nblocks = htonl(WINDOW);
	h->sender = htons(sender);
	h->count = htons(RINX_BLOCK_VALUES);
	h->klass = htons(pl->cmap[block % pl->plen]);
	h->exp = htons((__u16)exp);
	h->dtype = htons(RINX_W_FIXED);
}

/* Expected rewrite of a frame leaving node self (id self_id) for next. */
static void readdress_nodes(__u8 *f, const struct rinx_node *self,
			    const struct rinx_node *next, __u16 self_id)
{
	memcpy(f, next->mac, 6);
	memcpy(f + 6, self->mac, 6);
	memcpy(f + OFF_IP + 12, &self->ip, 4);
	memcpy(f + OFF_IP + 16, &next->ip, 4);
	ip_fix_csum(f + OFF_IP);
	put16(f + OFF_UDP + 6, 0);
	hdr(f)->sender = htons(self_id);
}

/* Expected rewrite of a frame leaving the aggregator for node `to`. */
static void readdress(const struct place *p, __u8 *f, __u16 to)
{
	readdress_nodes(f, &p->node[p->self], &p->node[to], p->self);
}

static void to_group(__u8 *f, __u8 rack, bool onward)
{
	const __u8 g[6] = { RINX_GROUP_MAC0, RINX_GROUP_MAC1, RINX_GROUP_MAC2,
			    rack, 0, onward };

	memcpy(f, g, 6);
}

static __u32 rng;

static __u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

enum vkind { V_RAND, V_TIES, V_ZERO };

/* Contributions are bounded by 2^QBITS (4 contributors never overflow). */
static void gen_vals(__s32 *v, enum vkind kind)
{
	const __s64 lim = (1LL << QBITS) - 1;
	int i;

	for (i = 0; i < RINX_BLOCK_VALUES; i++) {
		__s32 x = (__s32)((__s64)(rnd() % (__u64)(2 * lim + 1)) - lim);

		if (kind == V_ZERO)
			x = 0;
		else if (kind == V_TIES) /* low bits 1 0..0: a tie at shift d */
			x = (x & ~63) | (32 >> (i % 6));
		v[i] = x;
	}
	if (kind != V_ZERO) {
		v[1] = (__s32)lim;
		v[2] = (__s32)-lim;
	}
}

/* ---- model of one slot --------------------------------------------------- */

static __s64 floor_div(__s64 a, __s64 b)
{
	__s64 q = a / b;

	if ((a % b) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* x * 2^-d rounded to nearest, ties up (toward +inf) */
static __s64 align(__s64 x, __u32 d)
{
	if (d == 0)
		return x;
	if (d >= 62)	/* |x| <= 2^31: a 2^-31 fraction or less */
		return 0;
	return floor_div(x + (1LL << (d - 1)), 1LL << d);
}

struct mslot {
	__u32 round;
	__u64 seen;			/* node ids added */
	__s16 exp;
	__u8 flags, done;
	__u8 final;			/* v holds the finished block */
	__u8 pend;			/* all in but the own share */
	bool ce;			/* a contribution arrived marked CE */
	__s32 v[RINX_BLOCK_VALUES];
	__s64 exact[RINX_BLOCK_VALUES];	/* unaligned 64-bit sum */
	bool same_exp;			/* every contribution had one exp */
};

/* What the agent's trainer wrote into the share map (the model's copy). */
struct mshare {
	__u32 round;
	__s16 exp;
	__u8 flags;
	__s32 v[RINX_BLOCK_VALUES];
};

enum mret { M_ADD, M_DONE, M_DUP, M_DUP_DONE, M_STALE, M_SELF, M_DUP_PEND };

/* Adds x (exponent exp) into the sum of m. */
static void model_sum(struct mslot *m, __s16 exp, __u8 flags, const __s32 *x)
{
	__s32 e = m->exp > exp ? m->exp : exp;
	int i;

	for (i = 0; i < RINX_BLOCK_VALUES; i++) {
		m->v[i] = (__s32)(__u32)(align(m->v[i], e - m->exp) +
					 align(x[i], e - exp));
		m->exact[i] += x[i];
	}
	m->same_exp = m->same_exp && exp == m->exp;
	m->exp = (__s16)e;
	m->flags |= flags;
}

/* The own share completes a slot: added after the contributors' sum. */
static void model_own(struct mslot *m, const struct mshare *own, bool finish)
{
	model_sum(m, own->exp, own->flags, own->v);
	m->pend = 0;
	m->done = 1;
	m->final = finish;
}

/* What the slot does with (round, node, exp, flags, x) under mask, with
 * the node's own share `own` (NULL: none, RINX_HOP_SELF not set). A slot
 * holds a round once a contributor was added (seen != 0); a round is older
 * than the one held if it is behind in serial-number order. */
static int model_add(struct mslot *m, __u32 round, __u32 node, __u64 mask,
		     bool finish, const struct mshare *own, __s16 exp,
		     __u8 flags, bool ce, const __s32 *x, bool *reset)
{
	__u64 b = 1ULL << node;
	int i;

	*reset = false;
	if (m->round != round) {
		if (m->seen && (__s32)(round - m->round) < 0)
			return M_STALE;
		*reset = m->seen && !m->done;
		m->round = round;
		m->seen = 0;
		m->done = 0;
		m->final = 0;
		m->pend = 0;
	}
	if (m->seen & b)
		return m->pend ? M_DUP_PEND : m->done ? M_DUP_DONE : M_DUP;
	if (!m->seen) {
		memcpy(m->v, x, sizeof(m->v));
		m->exp = exp;
		m->flags = flags;
		m->ce = false;
		m->same_exp = true;
		for (i = 0; i < RINX_BLOCK_VALUES; i++)
			m->exact[i] = x[i];
	} else {
		model_sum(m, exp, flags, x);
	}
	m->ce = m->ce || ce;
	m->seen |= b;
	if ((m->seen & mask) != mask)
		return M_ADD;
	if (own && own->round != round) {
		m->pend = 1;
		return M_SELF;
	}
	if (own) {
		model_own(m, own, finish);
		return M_DONE;
	}
	m->done = 1;
	m->final = finish;
	return M_DONE;
}

/* ---- the cases ----------------------------------------------------------- */

enum who {
	W0,		/* worker 0: at the ToR its frame; at the agent (node
			 * 0 itself) its trainer writing the share map, no
			 * frame (unless the agent's outcome is O_SKIP) */
	W1, W2,		/* the rack's workers, node ids 1 2 */
	P,		/* the partial sum from the hop's `from` (node 4) */
	G,		/* the gather from the previous member */
	T,		/* agent: its trainer completes a waiting slot as
			 * self_complete() does (BPF_F_LOCK) */
	N37, N63,	/* raw shares of nodes 37 and 63 */
	X_SELF,		/* node 0's raw share as a frame */
	X_RACK,		/* node 3: another rack, not in the masks */
	X_PCONTRIB,	/* node 4 (the partial's sender): raw share, step 0 */
	X_HUGE,		/* W1's frame with sender id 200 */
	X_SADDR,	/* W1's frame with W2's source IP */
	X_STEP,		/* W1's frame with step 1 */
	X_PSTEP,	/* the partial with step + 1 */
	X_PFROM,	/* the partial from node 3 (not the planned sender) */
	X_KLASS,	/* W1's frame claiming the class after its own */
	/* refused as a ToR refuses what does not fit the job or the round
	 * (docs/security.md); W2's frame with: */
	X_TOKEN,	/* the token wrong in its high 32 bits only */
	X_COUNT,	/* 100 values in a block that is not the last */
	X_DTYPE,	/* dtype 7 (none) */
	X_NBLOCKS,	/* one block fewer in the round than the slot's */
	X_INT32,	/* int32 (exponent 0) into a fixed-point round */
	X_GNBLOCKS,	/* the gather with one block fewer in the round */
};

enum outcome {
	O_SAME,		/* in ex_sw: as ex */
	O_ADD,		/* consumed: AGG_ADD */
	O_DONE,		/* completed: AGG_DONE, the sum leaves */
	O_DUP,		/* DROP_AGG_DUP */
	O_RESEND,	/* AGG_RESEND: the stored sum back to the worker */
	O_STALE,	/* DROP_AGG_STALE */
	O_SENDER,	/* DROP_SENDER */
	O_NOROUTE,	/* DROP_NO_ROUTE */
	O_MCAST,	/* AGG_MCAST: the gather into the rack */
	O_JSTALE,	/* DROP_STALE */
	O_BOUNDS,	/* DROP_BOUNDS */
	O_REEMIT,	/* AGG_REEMIT: a duplicate into the finished slot
			 * sends the sum on again as at completion */
	O_SELF,		/* the others' sum waits for the own share: slow
			 * path (SLOW_SELF, or DROP_NO_XSK without a socket) */
	O_SHARE,	/* agent, W0: the trainer writes its share (no run) */
	O_TRAIN,	/* agent, T: the trainer completes the slot */
	O_SKIP,		/* the step is not taken in this placement */
	O_MEMBER,	/* DROP_MEMBER: not a node of the job, not from
			 * its address, or not a contributor of the slot */
	O_AHEAD,	/* DROP_AHEAD */
	O_SHAPE,	/* DROP_SHAPE */
	O_TOKEN,	/* DROP_TOKEN */
};

#define RS_A	1	/* AGG_RESET counted at the agent */
#define RS_T	2	/* at the ToR */
#define RS	(RS_A | RS_T)

struct tstep {
	int who;
	int ep;		/* frame round - case base */
	int jo;		/* agent's job round - case base */
	__s16 exp;
	__u8 flags;
	int vk;		/* enum vkind */
	int ex, ex_sw;	/* enum outcome (agent, ToR: O_SAME = as agent) */
	int reset;	/* RS_*: AGG_RESET counted too */
	bool ce;	/* the frame arrives marked CE (else ECT(0)) */
	const char *todo;
};

enum only { BOTH, AGENT_ONLY, TOR_ONLY, PLACES = 3 };
#define STAR	4	/* in tcase.only: the star table (else Rina's) */

struct tcase {
	const char *name;
	__u32 block;
	__u32 base;	/* 0: assigned */
	int only;	/* enum only, | STAR */
	int n;
	struct tstep s[16];
};

#define C(w, x)		{ .who = w, .exp = 3, .ex = x }
#define C2(w, x, xs)	{ .who = w, .exp = 3, .ex = x, .ex_sw = xs }
#define CE(w, e, x)	{ .who = w, .exp = e, .ex = x, .vk = V_TIES }
#define TR		{ .who = T, .ex = O_TRAIN, .ex_sw = O_SKIP }

static const struct tcase fixed_cases[] = {
	{ "duplicate before completion (class 2, AGG_FWD)", 5, 0, BOTH, 6, {
		C(W0, O_ADD), C(W1, O_ADD), C(W0, O_DUP), C(P, O_ADD),
		C(P, O_DUP), C(W2, O_DONE) } },
	{ "duplicate before completion (class 1, AGG_FINISH)", 4, 0, BOTH, 5, {
		C(P, O_ADD), C(W2, O_ADD), C(W2, O_DUP), C(W0, O_ADD),
		C(W1, O_DONE) } },
	{ "duplicate before completion (class 0, no partial)", 3, 0, BOTH, 4, {
		C(W2, O_ADD), C(W2, O_DUP), C(W0, O_ADD), C(W1, O_DONE) } },
	{ "retransmission into a finished AGG_FINISH slot (answered)", 1, 0,
	  BOTH, 7, {
		C(W0, O_ADD), C(P, O_ADD), C(W2, O_ADD), C(W1, O_DONE),
		C(W1, O_RESEND), C(W2, O_RESEND), C(P, O_REEMIT) } },
	/* the agent's share is in its map, not a frame: node 0's raw share
	 * is no contributor there; the ToR answers worker 0 */
	{ "node 0's share as a frame (AGG_FINISH)", 7, 0, BOTH, 7, {
		C(W0, O_ADD), C2(X_SELF, O_MEMBER, O_DUP), C(W1, O_ADD),
		C(W2, O_ADD), C(P, O_DONE), C2(X_SELF, O_MEMBER, O_RESEND),
		C2(X_SELF, O_MEMBER, O_RESEND) } },
	{ "retransmission into a finished AGG_FWD slot", 2, 0, BOTH, 7, {
		C(W2, O_ADD), C(W1, O_ADD), C(W0, O_ADD), C(P, O_DONE),
		C(W1, O_REEMIT), C(P, O_REEMIT), C(W0, O_REEMIT) } },
	{ "retransmission into a finished slot (class 0)", 9, 0, BOTH, 4, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE), C(W2, O_REEMIT) } },
	{ "after the gather passed (class 0): a worker gets the finished "
	  "block", 6, 0, BOTH, 6, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE), C(G, O_MCAST),
		C(W1, O_RESEND), C2(X_SELF, O_MEMBER, O_RESEND) } },
	{ "after the gather passed (class 2): a late partial is dropped", 11,
	  0, BOTH, 7, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_ADD), C(P, O_DONE),
		C(G, O_MCAST), C(P, O_DUP), C(W2, O_RESEND) } },
	{ "stale: the slot holds the next round (incomplete)", 5, 0, BOTH, 5, {
		{ .who = W1, .ep = 1, .exp = 3, .ex = O_ADD },
		C(W2, O_STALE), C(P, O_STALE),
		{ .who = W2, .ep = 1, .exp = 3, .ex = O_ADD },
		{ .who = W2, .ep = -5, .exp = 3, .ex = O_JSTALE,
		  .ex_sw = O_STALE } } },
	{ "stale: round done, next round started, late retransmission", 4, 0,
	  BOTH, 7, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_ADD), C(P, O_DONE),
		{ .who = W2, .ep = 1, .exp = 3, .ex = O_ADD },
		C(W1, O_STALE), C(W2, O_STALE) } },
	{ "slot reuse: round e done, round e+1 sums fresh", 8, 0, BOTH, 10, {
		C(W0, O_ADD), C(W1, O_ADD), C(P, O_ADD), C(W2, O_DONE),
		{ .who = P, .ep = 1, .jo = 1, .exp = -4, .ex = O_ADD },
		{ .who = W2, .ep = 1, .jo = 1, .exp = -4, .ex = O_ADD },
		{ .who = W0, .ep = 1, .jo = 1, .exp = -4, .ex = O_ADD },
		{ .who = W1, .ep = 1, .jo = 1, .exp = -4, .ex = O_DONE },
		{ .who = W1, .ep = 1, .jo = 1, .exp = -4, .ex = O_REEMIT },
		{ .who = W2, .ep = 0, .jo = 1, .exp = 3, .ex = O_JSTALE,
		  .ex_sw = O_STALE } } },
	/* round e+1 before the agent's trainer got there: no share of
	 * that round yet, the slot waits; the round after takes it over */
	{ "slot reuse: round e+1 before the agent's trainer gets there", 6, 0,
	  BOTH, 9, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE),
		{ .who = W0, .ep = 1, .exp = 1, .ex = O_SKIP,
		  .ex_sw = O_ADD },
		{ .who = W1, .ep = 1, .exp = 1, .ex = O_ADD },
		{ .who = W2, .ep = 1, .exp = 1, .ex = O_SELF,
		  .ex_sw = O_DONE },
		{ .who = W1, .ep = 1, .exp = 1, .ex = O_SELF,
		  .ex_sw = O_REEMIT },
		{ .who = W2, .ep = 2, .exp = 1, .ex = O_AHEAD,
		  .ex_sw = O_ADD },
		{ .who = W2, .ep = 2, .jo = 1, .exp = 1, .ex = O_ADD,
		  .ex_sw = O_DUP, .reset = RS_A } } },
	{ "reset: an incomplete round taken over by the next", 2, 0, BOTH, 8, {
		C(W0, O_ADD), C(W1, O_ADD),
		{ .who = W2, .ep = 1, .exp = 6, .ex = O_ADD, .reset = RS },
		{ .who = W0, .ep = 1, .exp = 6, .ex = O_ADD },
		C(P, O_STALE),
		{ .who = W1, .ep = 1, .jo = 1, .exp = 6, .ex = O_ADD },
		{ .who = P, .ep = 1, .jo = 1, .exp = 6, .ex = O_DONE },
		{ .who = W2, .ep = 0, .jo = 1, .exp = 3, .ex = O_JSTALE,
		  .ex_sw = O_STALE } } },
	{ "reset: a round two ahead (the bound) takes over (class 1)", 1, 0,
	  TOR_ONLY, 5, {
		C(P, O_ADD),
		{ .who = W0, .ep = 2, .exp = 2, .ex = O_ADD, .reset = RS },
		{ .who = W1, .ep = 2, .exp = 2, .ex = O_ADD },
		{ .who = W2, .ep = 2, .exp = 2, .ex = O_ADD },
		{ .who = P, .ep = 2, .exp = 2, .ex = O_DONE } } },
	{ "refused: a round far ahead never takes the slot over (class 1)",
	  1, 0, TOR_ONLY, 7, {
		C(P, O_ADD),
		{ .who = W0, .ep = 3, .exp = 2, .ex = O_AHEAD },
		{ .who = W1, .ep = 1000, .exp = 2, .ex = O_AHEAD },
		{ .who = W2, .ep = 1 << 30, .exp = 2, .ex = O_AHEAD },
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE) } },
	/* What a ToR refuses, and an agent of the round after its own
	 * (jo 0, ep 1: the round its tables do not describe yet), counted
	 * and without touching the slot. */
	{ "refused: token, size, dtype, members, rounds ahead (class 2)", 8,
	  0, BOTH, 12, {
		{ .who = W1, .ep = 1, .exp = 3, .ex = O_ADD },
		{ .who = X_TOKEN, .ep = 1, .exp = 3, .ex = O_TOKEN },
		{ .who = X_COUNT, .ep = 1, .exp = 3, .ex = O_SHAPE },
		{ .who = X_DTYPE, .ep = 1, .exp = 3, .ex = O_SHAPE },
		{ .who = X_NBLOCKS, .ep = 1, .exp = 3, .ex = O_SHAPE },
		{ .who = X_INT32, .ep = 1, .exp = 0, .ex = O_SHAPE },
		{ .who = X_INT32, .ep = 1, .exp = 3, .ex = O_BOUNDS },
		{ .who = W2, .ep = 4, .exp = 3, .ex = O_AHEAD },
		{ .who = X_RACK, .ep = 1, .exp = 3, .ex = O_MEMBER },
		{ .who = W0, .ep = 1, .exp = 3, .ex = O_SHARE, .ex_sw = O_ADD },
		{ .who = W2, .ep = 1, .exp = 3, .ex = O_ADD },
		{ .who = P, .ep = 1, .exp = 3, .ex = O_DONE } } },
	{ "refused: a gather whose round has another size (class 2)", 8, 0,
	  TOR_ONLY, 7, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_ADD), C(P, O_DONE),
		C(X_GNBLOCKS, O_SHAPE), C(G, O_MCAST), C(P, O_DUP) } },
	{ "senders: node 3, nodes 37 and 63 (not in the mask), ids, IP, "
	  "step, class", 5, 0, BOTH, 14, {
		C(X_RACK, O_MEMBER), C(W0, O_ADD), C(N37, O_MEMBER),
		C(N63, O_MEMBER), C(X_HUGE, O_MEMBER),
		C(X_SADDR, O_MEMBER), C(X_STEP, O_SENDER),
		C(X_PSTEP, O_SENDER), C(X_PFROM, O_MEMBER),
		C(X_KLASS, O_BOUNDS), C(W1, O_ADD), C(P, O_ADD),
		C(X_RACK, O_MEMBER), C(W2, O_DONE) } },
	{ "senders at AGG_FINISH", 7, 0, BOTH, 8, {
		C(N37, O_MEMBER), C(X_SADDR, O_MEMBER), C(W1, O_ADD),
		C(X_PSTEP, O_SENDER), C(X_PFROM, O_MEMBER),
		C(X_STEP, O_SENDER), C2(X_SELF, O_MEMBER, O_ADD),
		C(X_KLASS, O_BOUNDS) } },
	/* every raw share has step 0, whoever sends it (tables.bpf.h) */
	{ "the partial's node sends a raw share: counted as its node", 4, 0,
	  BOTH, 5, {
		C(W0, O_ADD), C(X_PCONTRIB, O_ADD), C(P, O_DUP), C(W1, O_ADD),
		C(W2, O_DONE) } },
	{ "ECN: a consumed contribution's CE leaves with the sum", 5, 0, BOTH,
	  4, {
		{ .who = W1, .exp = 3, .ex = O_ADD, .ce = true },
		C(W0, O_ADD), C(P, O_ADD), C(W2, O_DONE) } },
	{ "ECN: CE on the partial sum, AGG_FINISH", 4, 0, BOTH, 4, {
		C(W2, O_ADD), { .who = P, .exp = 3, .ex = O_ADD, .ce = true },
		C(W0, O_ADD), C(W1, O_DONE) } },
	{ "ECN: an unmarked round after a marked one leaves unmarked", 5, 0,
	  BOTH, 8, {
		{ .who = W1, .exp = 3, .ex = O_ADD, .ce = true },
		C(W0, O_ADD), C(P, O_ADD), C(W2, O_DONE),
		{ .who = W0, .ep = 1, .jo = 1, .exp = 3, .ex = O_ADD },
		{ .who = W1, .ep = 1, .jo = 1, .exp = 3, .ex = O_ADD },
		{ .who = P, .ep = 1, .jo = 1, .exp = 3, .ex = O_ADD },
		{ .who = W2, .ep = 1, .jo = 1, .exp = 3, .ex = O_DONE } } },
	{ "a partial sum into the class the aggregator starts", 0, 0, BOTH,
	  4, {
		C(P, O_NOROUTE), C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE) } },
	{ "alignment: exponents 3 5 0 4 (ties)", 5, 0, BOTH, 4, {
		CE(W0, 3, O_ADD), CE(W1, 5, O_ADD), CE(W2, 0, O_ADD),
		CE(P, 4, O_DONE) } },
	/* the agent adds its share last whenever it was written: at the
	 * ToR worker 0 comes last */
	{ "alignment: larger exponent last, shifts 1..6", 4, 0, BOTH, 5, {
		CE(W2, -6, O_ADD), CE(W1, -5, O_ADD),
		{ .who = W0, .exp = 0, .vk = V_TIES, .ex = O_SHARE,
		  .ex_sw = O_SKIP },
		{ .who = P, .exp = -1, .vk = V_TIES, .ex = O_DONE,
		  .ex_sw = O_ADD },
		{ .who = W0, .exp = 0, .vk = V_TIES, .ex = O_SKIP,
		  .ex_sw = O_DONE } } },
	{ "alignment: shifts 30, 31 and 32 of the slot", 2, 0, BOTH, 4, {
		CE(W0, -20, O_ADD), CE(W1, 10, O_ADD), CE(P, 41, O_ADD),
		CE(W2, 73, O_DONE) } },
	{ "alignment: contributions shifted by 31, 32 and 40", 1, 0, BOTH, 4, {
		CE(W1, 40, O_ADD), CE(W0, 9, O_ADD), CE(W2, 8, O_ADD),
		CE(P, 0, O_DONE) } },
	{ "alignment: an all-zero block (RINX_EXP_ZERO) first", 1, 0, BOTH, 4, {
		{ .who = W1, .exp = RINX_EXP_ZERO, .vk = V_ZERO, .ex = O_ADD },
		CE(P, -3, O_ADD), CE(W0, -3, O_ADD), CE(W2, -2, O_DONE) } },
	{ "alignment: an all-zero block last, extreme exponents", 8, 0,
	  BOTH, 5, {
		CE(W1, 32767, O_ADD), CE(W2, -32767, O_ADD),
		{ .who = W0, .exp = RINX_EXP_ZERO, .vk = V_ZERO,
		  .ex = O_SHARE, .ex_sw = O_SKIP },
		{ .who = P, .exp = 32760, .vk = V_TIES, .ex = O_DONE,
		  .ex_sw = O_ADD },
		{ .who = W0, .exp = RINX_EXP_ZERO, .vk = V_ZERO,
		  .ex = O_SKIP, .ex_sw = O_DONE } } },
	{ "flags: nonfinite flags are OR'ed into the sum", 10, 0, BOTH, 4, {
		{ .who = W0, .exp = 1, .flags = RINX_F_NAN, .ex = O_ADD },
		{ .who = P, .exp = 1, .flags = RINX_F_PINF, .ex = O_ADD },
		{ .who = W1, .exp = 1, .ex = O_ADD },
		{ .who = W2, .exp = 1, .flags = RINX_F_NINF, .ex = O_DONE } } },
	{ "flags of the stored sum come back with a resend", 4, 0, BOTH, 5, {
		{ .who = W0, .exp = 1, .flags = RINX_F_NAN, .ex = O_ADD },
		{ .who = P, .exp = 2, .flags = RINX_F_PINF, .ex = O_ADD },
		{ .who = W1, .exp = 1, .ex = O_ADD },
		{ .who = W2, .exp = 0, .ex = O_DONE },
		{ .who = W2, .exp = 0, .ex = O_RESEND } } },
	{ "gather: MCAST_FWD after the rack's block completed (class 0)", 6, 0,
	  BOTH, 4, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE), C(G, O_MCAST) } },
	{ "gather: MCAST_END (class 2)", 11, 0, BOTH, 5, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_ADD), C(P, O_DONE),
		C(G, O_MCAST) } },
	{ "gather at the ToR before the block completed: stale", 3, 0,
	  TOR_ONLY, 3, {
		C(W0, O_ADD), C(G, O_JSTALE), C(W1, O_ADD) } },
	{ "gather at the ToR of an older round: stale", 0, 0, TOR_ONLY, 4, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE),
		{ .who = G, .ep = -1, .exp = 3, .ex = O_JSTALE } } },
	{ "round wrap: round 0 takes over a done round 0xffffffff", 5,
	  0xffffffffu, AGENT_ONLY, 5, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_ADD), C(P, O_DONE),
		{ .who = W1, .ep = 1, .exp = 3, .ex = O_ADD } } },
	{ "round wrap: a late 0xffffffff into a slot holding round 0", 2,
	  0xffffffffu, AGENT_ONLY, 6, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_ADD), C(P, O_DONE),
		{ .who = W2, .ep = 1, .exp = 3, .ex = O_ADD },
		{ .who = W1, .ep = 0, .exp = 3, .ex = O_STALE } } },
	{ "round 0 at the ToR (after the wrap): taken", 2, 0xffffffffu,
	  TOR_ONLY, 1, {
		{ .who = W0, .ep = 1, .exp = 3, .ex = O_ADD } } },

	/* the own share (RINX_HOP_SELF) not written when the last
	 * contributor arrives: the case starts with the share of an older
	 * round in the map */
	{ "own share late (class 1, AGG_FINISH): the others' sum to the "
	  "trainer, the slot waits, duplicates too, the trainer completes",
	  4, 0, BOTH, 11, {
		C(W1, O_ADD), C(P, O_ADD), C2(W2, O_SELF, O_ADD),
		C2(W2, O_SELF, O_DUP), C2(P, O_SELF, O_DUP),
		C2(W0, O_SHARE, O_DONE), C2(W1, O_SELF, O_RESEND), TR,
		C(W1, O_RESEND), C(P, O_REEMIT),
		C2(X_SELF, O_MEMBER, O_RESEND) } },
	{ "own share late (class 2, AGG_FWD), CE on the others' sum", 5, 0,
	  BOTH, 7, {
		C(W2, O_ADD), { .who = P, .exp = 2, .ex = O_ADD, .ce = true },
		{ .who = W1, .exp = 4, .vk = V_TIES, .ex = O_SELF,
		  .ex_sw = O_ADD },
		{ .who = W0, .exp = -1, .vk = V_TIES, .ex = O_SHARE,
		  .ex_sw = O_DONE },
		TR, C(W1, O_REEMIT), C(P, O_REEMIT) } },
	{ "own share of the next round only (class 0)", 3, 0, BOTH, 8, {
		{ .who = W0, .ep = 1, .exp = 3, .ex = O_SHARE,
		  .ex_sw = O_SKIP },
		C(W1, O_ADD), C2(W2, O_SELF, O_ADD), C2(W2, O_SELF, O_DUP),
		C2(W0, O_SHARE, O_DONE), C2(W1, O_SELF, O_REEMIT), TR,
		C(W1, O_REEMIT) } },
	{ "own share late, the next round takes the waiting slot over", 9, 0,
	  BOTH, 4, {
		C(W1, O_ADD), C2(W2, O_SELF, O_ADD),
		{ .who = W1, .ep = 1, .exp = 3, .ex = O_ADD, .reset = RS },
		{ .who = W2, .ep = 0, .exp = 3, .ex = O_STALE } } },

	/* the star: unicast and self-ending AGG_FINISH, no answer, the
	 * class pattern, high node ids */
	{ "star: AGG_FINISH ends here (class 0), nodes 1 2 37 63 + own "
	  "share; no answer: duplicates store it again", 0, 0,
	  AGENT_ONLY | STAR, 7, {
		C(W0, O_ADD), C(N63, O_ADD), C(W1, O_ADD), C(N37, O_ADD),
		C(W2, O_DONE), C(W2, O_REEMIT), C(N37, O_REEMIT) } },
	{ "star: AGG_FINISH unicast to node 3 (class 1), no answer", 3, 0,
	  STAR, 7, {
		C(W0, O_ADD), C(W1, O_ADD), C(N37, O_ADD), C(N63, O_ADD),
		C(W2, O_DONE), C(W1, O_REEMIT), C(N63, O_REEMIT) } },
	{ "star: own share late at a unicast AGG_FINISH (class 1)", 7, 0,
	  STAR, 8, {
		C(W1, O_ADD), C(W2, O_ADD), C(N37, O_ADD),
		C2(N63, O_SELF, O_ADD), C2(N63, O_SELF, O_DUP),
		C2(W0, O_SHARE, O_DONE), TR, C(N37, O_REEMIT) } },
	{ "star: own share late where the block ends here (class 0)", 8, 0,
	  AGENT_ONLY | STAR, 8, {
		{ .who = N37, .exp = 2, .ex = O_ADD, .ce = true },
		C(N63, O_ADD), C(W1, O_ADD), C(W2, O_SELF),
		C(W0, O_SHARE), C(W2, O_SELF), TR, C(W2, O_REEMIT) } },
	{ "star: AGG_FWD with node 4's partial at step 3 (class 2)", 2, 0,
	  STAR, 8, {
		CE(P, 1, O_ADD), CE(W0, 2, O_ADD), CE(N37, 0, O_ADD),
		CE(W1, -3, O_ADD), C(P, O_DUP), CE(N63, 5, O_ADD),
		CE(W2, 1, O_DONE), C(P, O_REEMIT) } },
	{ "star: senders outside the mask, steps, the partial's node", 6, 0,
	  STAR, 8, {
		C(X_RACK, O_MEMBER), C2(X_SELF, O_MEMBER, O_ADD),
		C(X_PSTEP, O_SENDER), C(X_PFROM, O_MEMBER),
		C(X_STEP, O_SENDER), C(X_HUGE, O_MEMBER),
		C(X_PCONTRIB, O_ADD), C(P, O_DUP) } },
	/* block 5 is in class cmap[5 % 4] = 1, not 5 % 3 = 2 */
	{ "star: the class pattern decides a block's class (a frame of "
	  "class b % 3 is out of bounds)", 5, 0, STAR, 4, {
		C(X_KLASS, O_BOUNDS), C(W1, O_ADD), C(N63, O_ADD),
		C(X_KLASS, O_BOUNDS) } },
};

/* generated: every order of the 4 (or 3) contributors of classes 0, 1, 2.
 * At the ToR the last one completes the slot. At the agent worker 0 is the
 * trainer writing its share: the last frame completes the slot if the
 * share came before it, else it goes to the slow path, and then the
 * trainer completes the slot and that frame again is answered or sent on
 * as a duplicate into the finished slot is. */
static struct tcase *cases;
static int ncases;

static void gen_cases(void)
{
	static const int cls[] = { 2, 1, 0 };
	int n = ARRAY_SIZE(fixed_cases), ci, k, perm, i;

	cases = calloc(n + 24 * 2 + 6, sizeof(*cases));
	if (!cases)
		exit(1);
	for (k = 0; k < 3; k++) {
		int c = cls[k], nw = c ? 4 : 3, nperm = c ? 24 : 6;

		for (perm = 0; perm < nperm; perm++) {
			struct tcase *t = &cases[ncases++];
			int pool[4] = { W0, W1, W2, P }, left = nw, r = perm;
			int last = -1, own = -1;
			static char names[60][80];

			snprintf(names[ncases - 1], sizeof(names[0]),
				 "order %d of class %d (%s)%s", perm, c,
				 c == 1 ? "AGG_FINISH" : "AGG_FWD",
				 c == 1 ? ", mixed exponents" : "");
			t->name = names[ncases - 1];
			t->block = c + 3 * (perm % 4);
			t->n = nw;
			for (i = 0; i < nw; i++) {
				int j = r % left, w = pool[j];

				r /= left;
				memmove(&pool[j], &pool[j + 1],
					(left - j - 1) * sizeof(int));
				left--;
				t->s[i].who = w;
				/* class 1: exponents differ per contributor */
				t->s[i].exp = c == 1 ? (__s16)(2 + w) : 3;
				t->s[i].vk = c == 1 ? V_TIES : V_RAND;
				t->s[i].ex = w == W0 ? O_SHARE : O_ADD;
				t->s[i].ex_sw = i == nw - 1 ? O_DONE : O_ADD;
				if (w == W0)
					own = i;
				else
					last = i;
			}
			t->s[last].ex = own < last ? O_DONE : O_SELF;
			if (own > last) {
				struct tstep *d = &t->s[t->n + 1];

				t->s[t->n] = (struct tstep)TR;
				*d = t->s[last];
				d->ex = c == 1 && d->who != P ? O_RESEND :
								O_REEMIT;
				d->ex_sw = O_SAME;
				t->n += 2;
			}
		}
	}
	for (ci = 0; ci < n; ci++)
		cases[ncases++] = fixed_cases[ci];
}

/* ---- running a step ------------------------------------------------------ */

static __u8 fin[FLEN], fout[FLEN + 256], fwant[FLEN], falt[FLEN];
static int dup_rewritten;	/* dropped duplicates carrying the stored sum */

static __attribute__((format(printf, 3, 4)))
int check(const char *todo, int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (todo)
		printf(" # TODO %s", todo);
	else if (!cond)
		tap_fail++;
	printf("\n");
	fflush(stdout);
	return cond;
}

static int run_once(int prog, __u8 *in, __u8 *out, __u32 *retval,
		    __u32 *size_out, __u32 *duration)
{
	struct tl_run r;
	int err = tl_xdp_run(prog, in, FLEN, 0, out, FLEN + 256, &r);

	if (err)
		return err;
	*retval = r.ret;
	if (size_out)
		*size_out = r.len;
	if (duration)
		*duration = r.duration;
	return 0;
}

static int stat_of(const struct place *p, int o)
{
	switch (o) {
	case O_ADD: return RINX_STAT_AGG_ADD;
	case O_DONE: return RINX_STAT_AGG_DONE;
	case O_DUP: return RINX_STAT_DROP_AGG_DUP;
	case O_RESEND: return RINX_STAT_AGG_RESEND;
	case O_STALE: return RINX_STAT_DROP_AGG_STALE;
	case O_SENDER: return RINX_STAT_DROP_SENDER;
	case O_NOROUTE: return RINX_STAT_DROP_NO_ROUTE;
	case O_MCAST: return RINX_STAT_AGG_MCAST;
	case O_JSTALE: return RINX_STAT_DROP_STALE;
	case O_MEMBER: return RINX_STAT_DROP_MEMBER;
	case O_AHEAD: return RINX_STAT_DROP_AHEAD;
	case O_SHAPE: return RINX_STAT_DROP_SHAPE;
	case O_TOKEN: return RINX_STAT_DROP_TOKEN;
	case O_REEMIT: return RINX_STAT_AGG_REEMIT;
	/* slow_path(): counted as what it is only when a socket takes it */
	case O_SELF: return p->xsk ? RINX_STAT_SLOW_SELF :
				     RINX_STAT_DROP_NO_XSK;
	default: return RINX_STAT_DROP_BOUNDS;
	}
}

static const char *oname(int o)
{
	static const char *n[] = { "-", "ADD", "DONE", "DUP", "RESEND",
				   "STALE", "SENDER", "NOROUTE", "MCAST",
				   "JOB_STALE", "BOUNDS", "REEMIT", "SELF",
				   "SHARE", "TRAIN", "SKIP", "MEMBER", "AHEAD",
				   "SHAPE", "TOKEN" };

	return o >= 0 && o < (int)ARRAY_SIZE(n) ? n[o] : "?";
}

static const char *wname(int w)
{
	static const char *n[] = { "w0", "w1", "w2", "partial", "gather",
				   "trainer", "node37", "node63",
				   "node0-frame", "node3(rack5)",
				   "node4-raw-share", "sender200",
				   "w1/ip-of-w2", "w1/step1", "partial/step+1",
				   "partial-from-node3", "w1/next-class",
				   "w2/token-high-bit", "w2/count100",
				   "w2/dtype7", "w2/nblocks-1", "w2/int32",
				   "gather/nblocks-1" };

	return w >= 0 && w < (int)ARRAY_SIZE(n) ? n[w] : "?";
}

struct stepctx {
	struct place *p;
	const struct tcase *c;
	const struct rinx_plan *pl;	/* the case's table */
	__u32 job, slot;
	struct mslot *m;
	struct mshare *own;		/* what the share map holds */
	__u32 base;
	int si;
};

static void diag_frame(const __u8 *got, const __u8 *want, int len)
{
	int i, n = 0;

	for (i = 0; i < len && n < 6; i++) {
		if (got[i] == want[i])
			continue;
		tap_diag("  byte %d (%s): got 0x%02x want 0x%02x", i,
			 i < OFF_V ? "header" : "payload", got[i], want[i]);
		n++;
	}
}

static void diag_slot(const struct rinx_agg *ag, const struct mslot *m)
{
	tap_diag("  slot: round %u seen %#llx done %u final %u pend %u exp %d "
		 "flags %#x; want round %u seen %#llx done %u final %u pend "
		 "%u exp %d flags %#x", ag->round,
		 (unsigned long long)ag->seen, ag->done, ag->final, ag->pend,
		 ag->exp, ag->flags, m->round, (unsigned long long)m->seen,
		 m->done, m->final, m->pend, m->exp, m->flags);
}

/* The slot as read back (BPF_F_LOCK) against the model. */
static bool slot_same(const struct rinx_agg *ag, const struct mslot *m)
{
	bool ok = ag->round == m->round && ag->seen == m->seen &&
		  ag->done == m->done && ag->final == m->final &&
		  ag->pend == m->pend && (!m->seen || ag->ce == m->ce);

	/* every frame the cases add has the rounds' one shape, which the
	 * first contribution sets and nothing refused changes */
	if (m->seen)
		ok = ok && ag->shape == RINX_SHAPE(WINDOW, RINX_BLOCK_VALUES) &&
		     ag->dtype == RINX_W_FIXED;
	if (m->seen)
		ok = ok && ag->exp == m->exp && ag->flags == m->flags &&
		     !memcmp(ag->v, m->v, sizeof(m->v));
	return ok;
}

/* The agent's trainer writes its share of the block for round `round` (the
 * model keeps what was written; rinx_agg_add must add exactly that). */
static int write_share(struct stepctx *x, __u32 round, __s16 exp, __u8 flags,
		       int vk)
{
	struct rinx_slot *sh = calloc(1, sizeof(*sh));
	__u32 idx = x->slot * WINDOW + x->c->block;
	int err;

	if (!sh)
		return -ENOMEM;
	sh->round = round;
	sh->exp = exp;
	sh->flags = flags;
	sh->count = RINX_BLOCK_VALUES;
	gen_vals(sh->v, vk);
	err = bpf_map_update_elem(x->p->share, &idx, sh, BPF_ANY) ? -errno : 0;
	if (!err) {
		x->own->round = round;
		x->own->exp = exp;
		x->own->flags = flags;
		memcpy(x->own->v, sh->v, sizeof(sh->v));
	}
	free(sh);
	return err;
}

/* The trainer completes a waiting slot the way user/comm/slow.c's
 * self_complete() does: under the slot's lock from user space, the share
 * added to the others' sum, done (and final at AGG_FINISH). Only the model
 * computes the sum; the slot must have held the model's before. */
static void trainer_step(struct stepctx *x, const struct rinx_hop *hop)
{
	struct place *p = x->p;
	struct mslot *m = x->m;
	__u32 idx = x->slot * WINDOW + x->c->block;
	struct rinx_agg ag = {};
	bool was, ok = false;
	int err;

	err = bpf_map_lookup_elem_flags(p->aggs, &idx, &ag, BPF_F_LOCK) ?
	      -errno : 0;
	was = !err && ag.pend && m->pend && slot_same(&ag, m) &&
	      x->own->round == m->round;
	if (was) {
		model_own(m, x->own, hop->action == RINX_A_AGG_FINISH);
		memcpy(ag.v, m->v, sizeof(ag.v));
		ag.exp = m->exp;
		ag.flags = m->flags;
		ag.pend = 0;
		ag.done = 1;
		ag.final = m->final;
		err = bpf_map_update_elem(p->aggs, &idx, &ag, BPF_F_LOCK) ?
		      -errno : 0;
		memset(&ag, 0, sizeof(ag));
		if (!err && bpf_map_lookup_elem_flags(p->aggs, &idx, &ag,
						      BPF_F_LOCK))
			err = -errno;
		ok = !err && slot_same(&ag, m);
	}
	if (!check(x->c->s[x->si].todo, ok, "%s: %s: step %d: the trainer "
		   "completes the waiting slot with its share", p->name,
		   x->c->name, x->si)) {
		if (err)
			tap_diag("  %s", strerror(-err));
		else if (!was)
			tap_diag("  the slot was not waiting as modelled, or "
				 "the share is not of its round");
		diag_slot(&ag, m);
	}
}

static void run_step(struct stepctx *x)
{
	struct place *p = x->p;
	const struct rinx_plan *pl = x->pl;
	const struct tstep *s = &x->c->s[x->si];
	struct mslot *m = x->m, before = *m;
	__u32 block = x->c->block, klass = pl->cmap[block % pl->plen];
	__u32 round = x->base + s->ep;
	__u32 idx = x->slot * WINDOW + block, retval = 0, size = 0;
	int ex = p->sw && s->ex_sw ? s->ex_sw : s->ex, type, w = s->who, i;
	__u16 from = 0, sender;
	const struct rinx_hop *hop;
	struct counters c0, c1;
	struct rinx_slot r0 = {}, r1 = {}, rw = {};
	struct rinx_agg ag = {};
	__s32 x_v[RINX_BLOCK_VALUES];
	bool reset = false, ok = true, frame_ok, slot_ok, res_ok = true;
	bool cnt_ok = true, stores = false, model_ok = true, csum = true;
	bool want_reset = s->reset & (p->sw ? RS_T : RS_A);
	const struct mshare *own = NULL;
	__u8 step = 0;
	int mret = -1, err, want_ret;
	char what[240];

	if (ex == O_SKIP)
		return;
	/* the frame */
	switch (w) {
	case P: case X_PSTEP: case X_PFROM:
		type = RINX_T_REDUCE;
		break;
	case G: case X_GNBLOCKS:
		type = RINX_T_GATHER;
		break;
	default:
		type = RINX_T_CONTRIB;
	}
	hop = &pl->hops[klass][type - 1];
	if (w == T) {
		trainer_step(x, hop);
		return;
	}
	if (w == W0 && !p->sw) {
		/* (the step's outcome is the ToR's) */
		err = write_share(x, round, s->exp, s->flags, s->vk);
		if (err)
			check(s->todo, 0, "%s: %s: step %d: the trainer writes "
			      "its share: %s", p->name, x->c->name, x->si,
			      strerror(-err));
		return;
	}
	switch (w) {
	case W0: case X_SELF:
		from = 0;
		break;
	case W1: case W2:
		from = w == W1 ? 1 : 2;
		break;
	case N37:
		from = NODE_HI;
		break;
	case N63:
		from = NODE_TOP;
		break;
	case X_RACK:
		from = 3;
		break;
	case X_PFROM:
		from = 3;
		step = hop->step;
		break;
	case X_PCONTRIB:
		from = 4;
		break;
	case X_HUGE: case X_SADDR: case X_STEP: case X_KLASS:
		from = 1;
		break;
	case X_TOKEN: case X_COUNT: case X_DTYPE: case X_NBLOCKS:
	case X_INT32:
		from = 2;
		break;
	default:	/* the partial and the gather: the planned sender */
		from = hop->from;
		step = hop->step;
	}
	sender = w == X_HUGE ? 200 : from;
	if (w == X_STEP)
		step = 1;
	if (w == X_PSTEP)
		step = hop->step + 1;
	build(p, pl, fin, x->job, type, step, from, sender, round, block,
	      s->exp, s->flags);
	if (w == X_KLASS)
		hdr(fin)->klass = htons((klass + 1) % pl->nclasses);
	if (w == X_TOKEN)
		hdr(fin)->token = htobe64(JOB_TOKEN ^ 1ULL << 40);
	if (w == X_COUNT)
		hdr(fin)->count = htons(100);
	if (w == X_DTYPE)
		hdr(fin)->dtype = htons(7);
	if (w == X_NBLOCKS || w == X_GNBLOCKS)
		hdr(fin)->nblocks = htonl(WINDOW - 1);
	if (w == X_INT32)
		hdr(fin)->dtype = htons(RINX_W_INT32);
	fin[OFF_IP + 1] = s->ce ? RINX_ECN_CE : RINX_ECN_ECT0;
	ip_fix_csum(fin + OFF_IP);
	if (w == X_SADDR) {
		memcpy(fin + OFF_IP + 12, &p->node[2].ip, 4);
		ip_fix_csum(fin + OFF_IP);
	}
	gen_vals(x_v, s->vk);
	memcpy(vals(fin), x_v, RINX_BLOCK_BYTES);

	/* the model: contributors are node ids; an aggregating host adds
	 * its own share (what write_share put in the map) at completion */
	if (!p->sw && (hop->flags & RINX_HOP_SELF))
		own = x->own;
	if (ex == O_ADD || ex == O_DONE || ex == O_DUP || ex == O_RESEND ||
	    ex == O_STALE || ex == O_REEMIT || ex == O_SELF) {
		bool answer = hop->flags & RINX_HOP_ANSWER, resend, dropped;
		int want_m;

		mret = model_add(m, round, from, hop->mask,
				 hop->action == RINX_A_AGG_FINISH, own, s->exp,
				 s->flags, s->ce, x_v, &reset);
		want_m = ex == O_ADD ? M_ADD : ex == O_DONE ? M_DONE :
			 ex == O_STALE ? M_STALE :
			 ex == O_SELF ? (before.pend ? M_DUP_PEND : M_SELF) :
			 ex == O_RESEND || ex == O_REEMIT ? M_DUP_DONE : -1;
		if (ex == O_DUP)
			want_m = m->done ? M_DUP_DONE : M_DUP;
		/* the rules: a raw share into a slot holding the finished
		 * block is answered with it where the hop says so
		 * (RINX_HOP_ANSWER); a duplicate where the block finished
		 * further on (the gather passed an AGG_FWD) is dropped; any
		 * other duplicate into a finished slot is sent on again */
		resend = mret == M_DUP_DONE && m->final &&
			 type == RINX_T_CONTRIB && answer;
		dropped = mret == M_DUP_DONE && !resend && m->final &&
			  hop->action == RINX_A_AGG_FWD;
		if (mret != want_m || reset != want_reset ||
		    (ex == O_RESEND) != resend ||
		    (ex == O_REEMIT) != (mret == M_DUP_DONE && !resend &&
					 !dropped) ||
		    (ex == O_DUP && mret == M_DUP_DONE && !dropped)) {
			model_ok = false;
			tap_diag("  table and model disagree at step %d "
				 "(model %d reset %d)", x->si, mret, reset);
		}
	}

	/* the run; the node's fair counts cleared, so that what other
	 * steps and scenarios contributed in the last epoch neither flags
	 * the sum's jobs (RINX_F_JOBS) nor takes its mark: the fair cases
	 * (run_fair) set them */
	err = p->sw ? 0 : put_job(p, pl, x->job, x->slot, p->self,
				  x->base + s->jo);
	if (!p->sw && !err) {
		struct rinx_fair none = {};
		__u32 node = RINX_MAX_JOBS;

		err = bpf_map_update_elem(fd_of(p->hs->maps.fairs), &node,
					  &none, BPF_ANY) ? -errno : 0;
	}
	if (!p->sw && !err)
		err = bpf_map_lookup_elem(p->result, &idx, &r0) ? -errno : 0;
	err = err ?: read_counters(p, &c0);
	err = err ?: run_once(p->prog, fin, fout, &retval, &size, NULL);
	err = err ?: read_counters(p, &c1);
	err = err ?: (bpf_map_lookup_elem_flags(p->aggs, &idx, &ag, BPF_F_LOCK) ?
		      -errno : 0);
	if (!p->sw && !err)
		err = bpf_map_lookup_elem(p->result, &idx, &r1) ? -errno : 0;
	snprintf(what, sizeof(what), "%s: %s: step %d: %s round %+d -> %s%s",
		 p->name, x->c->name, x->si, wname(w), s->ep, oname(ex),
		 want_reset ? " +RESET" : "");
	if (err) {
		check(s->todo, 0, "%s: test run: %s", what, strerror(-err));
		return;
	}

	/* expected action and frame */
	memcpy(fwant, fin, FLEN);
	want_ret = p->sw ? XDP_REDIRECT : XDP_TX;
	switch (ex) {
	case O_DONE:
	case O_REEMIT:
		/* the sum carries the marks of every contribution */
		if (ex == O_DONE && m->ce)
			fwant[OFF_IP + 1] |= RINX_ECN_CE;
		memcpy(vals(fwant), m->v, RINX_BLOCK_BYTES);
		hdr(fwant)->exp = htons((__u16)m->exp);
		hdr(fwant)->flags = m->flags;
		hdr(fwant)->step = hop->out_step;
		if (hop->action == RINX_A_AGG_FWD) {
			hdr(fwant)->type = RINX_T_REDUCE;
			readdress(p, fwant, hop->to);
			break;
		}
		hdr(fwant)->type = RINX_T_GATHER;
		stores = true;
		if (hop->rack == RINX_NO_RACK && hop->to == p->self &&
		    !p->sw) {
			/* the block ends here: kept, nothing leaves (and
			 * nothing readdressed the frame) */
			want_ret = XDP_DROP;
			csum = false;
			break;
		}
		readdress(p, fwant, hop->to);
		if (hop->rack != RINX_NO_RACK)
			to_group(fwant, hop->rack, hop->to != p->self);
		break;
	case O_RESEND:
		memcpy(vals(fwant), m->v, RINX_BLOCK_BYTES);
		hdr(fwant)->exp = htons((__u16)m->exp);
		hdr(fwant)->flags = m->flags;
		hdr(fwant)->type = RINX_T_GATHER;
		hdr(fwant)->step = hop->action == RINX_A_AGG_FINISH ?
				   hop->out_step : hop->out_step + 1;
		readdress(p, fwant, from);
		break;
	case O_SELF:
		/* the others' sum, as it arrived otherwise, for the trainer
		 * (which readdresses it); the completing frame also carries
		 * the marks of what the slot consumed */
		if (mret == M_SELF && m->ce)
			fwant[OFF_IP + 1] |= RINX_ECN_CE;
		memcpy(vals(fwant), m->v, RINX_BLOCK_BYTES);
		hdr(fwant)->exp = htons((__u16)m->exp);
		hdr(fwant)->flags = m->flags;
		want_ret = p->xsk ? XDP_REDIRECT : XDP_DROP;
		csum = false;
		break;
	case O_MCAST:
		/* the slot keeps the finished block */
		memcpy(m->v, x_v, RINX_BLOCK_BYTES);
		m->exp = s->exp;
		m->flags = s->flags;
		m->final = 1;
		m->same_exp = false;
		hdr(fwant)->step = hop->out_step;
		readdress(p, fwant, hop->action == RINX_A_MCAST_FWD ?
				     hop->to : p->self);
		to_group(fwant, hop->rack, hop->action == RINX_A_MCAST_FWD);
		stores = !p->sw;
		break;
	default:
		want_ret = XDP_DROP;
	}
	frame_ok = size == FLEN && !memcmp(fout, fwant, FLEN) &&
		   (!csum || csum16(fout + OFF_IP, 20) == 0);
	/* A duplicate into a finished slot that is dropped may carry the
	 * stored sum (rinx_agg_add fills it in before the caller decides);
	 * the frame is dropped, so it is counted, not failed. */
	if (!frame_ok && ex == O_DUP && mret == M_DUP_DONE && size == FLEN) {
		memcpy(falt, fin, FLEN);
		memcpy(vals(falt), m->v, RINX_BLOCK_BYTES);
		hdr(falt)->exp = htons((__u16)m->exp);
		hdr(falt)->flags = m->flags;
		if (!memcmp(fout, falt, FLEN)) {
			frame_ok = true;
			dup_rewritten++;
		}
	}
	/* with equal exponents the sum is the exact sum of the inputs */
	if ((ex == O_DONE || (ex == O_SELF && mret == M_SELF)) && m->same_exp)
		for (i = 0; i < RINX_BLOCK_VALUES; i++)
			if ((__s64)vals(fout)[i] != m->exact[i])
				frame_ok = false;

	/* the slot: contents of the model (after a dropped frame: as before
	 * the step; MCAST and sender drops never touch it) */
	if (mret < 0 && ex != O_MCAST)
		*m = before;
	slot_ok = slot_same(&ag, m);

	/* the result map entry (agent) */
	if (!p->sw) {
		rw = r0;
		if (stores) {
			const struct rinx_hdr *h = hdr(fwant);

			rw.round = round;
			rw.exp = (__s16)ntohs(h->exp);
			rw.flags = h->flags;
			rw.count = ntohs(h->count);
			memcpy(rw.v, vals(fwant), RINX_BLOCK_BYTES);
		}
		res_ok = !memcmp(&rw, &r1, sizeof(rw));
	}

	/* counters */
	for (i = 0; i < RINX_STAT_MAX; i++) {
		__u64 want = i == RINX_STAT_RX || i == stat_of(p, ex) ||
			     (i == RINX_STAT_AGG_RESET && want_reset) ||
			     (i == RINX_STAT_ECN_CE && stores && !p->sw &&
			      (fwant[OFF_IP + 1] & RINX_ECN_MASK) ==
			      RINX_ECN_CE);

		if (c1.st[i] - c0.st[i] != want) {
			tap_diag("  %s: +%llu, want +%llu", stat_name(i),
				 (unsigned long long)(c1.st[i] - c0.st[i]),
				 (unsigned long long)want);
			cnt_ok = false;
		}
	}
	if (p->sw) {
		int sws = want_ret == XDP_DROP ? RINX_SW_INA_DROP :
			  ex == O_RESEND || ((ex == O_DONE || ex == O_REEMIT) &&
					     (hop->action == RINX_A_AGG_FWD ||
					      hop->rack == RINX_NO_RACK)) ?
			  RINX_SW_INA_FWD : RINX_SW_INA_GROUP;

		for (i = 0; i < RINX_SW_STAT_MAX; i++) {
			__u64 want = i == sws;

			if (c1.sw[i] - c0.sw[i] != want) {
				tap_diag("  switch counter %d: +%llu, want "
					 "+%llu", i, (unsigned long long)
					 (c1.sw[i] - c0.sw[i]),
					 (unsigned long long)want);
				cnt_ok = false;
			}
		}
	}

	ok = retval == (__u32)want_ret && frame_ok && slot_ok && res_ok &&
	     cnt_ok && model_ok;
	if (!check(s->todo, ok, "%s", what)) {
		if (retval != (__u32)want_ret)
			tap_diag("  action %u, want %d", retval, want_ret);
		if (!frame_ok) {
			tap_diag("  output frame differs (%u bytes)", size);
			diag_frame(fout, fwant, FLEN);
		}
		if (!slot_ok)
			diag_slot(&ag, m);
		if (!res_ok)
			tap_diag("  result entry: round %u exp %d (want "
				 "round %u exp %d)", r1.round, r1.exp,
				 rw.round, rw.exp);
	}
	/* the program is the truth from here on: keep later steps
	 * meaningful after a known bug */
	if (!ok && s->todo) {
		m->round = ag.round;
		m->seen = ag.seen;
		m->done = ag.done;
		m->final = ag.final;
		m->pend = ag.pend;
		m->exp = ag.exp;
		m->flags = ag.flags;
		memcpy(m->v, ag.v, sizeof(m->v));
	}
}

static bool has_self(const struct tcase *c)
{
	int i;

	for (i = 0; i < c->n; i++)
		if (c->s[i].ex == O_SELF)
			return true;
	return false;
}

/* the checks run_case makes of C at the ToR (SW) or the agent: one per
 * step but the skipped ones and, at the agent, its trainer's share being
 * written (run_step) */
static int case_checks(bool sw, const struct tcase *c)
{
	int i, n = 0;

	for (i = 0; i < c->n; i++) {
		const struct tstep *s = &c->s[i];
		int ex = sw && s->ex_sw ? s->ex_sw : s->ex;

		n += ex != O_SKIP && !(s->who == W0 && !sw);
	}
	return n;
}

/* the checks of a run of this program, from its cases: loads and plans
 * (2 + 2), the cases at the agent and the ToR, the agent's cases with an
 * AF_XDP socket (1 + those with its own share), concurrency (3 a place),
 * the empty program and the timed runs (1 + 1 a place) */
static int plan_checks(void)
{
	int n = 2 + 2 + 1 + 3 * 2 + 1 + 2 + PULL_CHECKS + FAIR_CHECKS, ci, i;

	for (i = 0; i < 2; i++)
		for (ci = 0; ci < ncases; ci++) {
			const struct tcase *c = &cases[ci];

			if (((c->only & PLACES) == AGENT_ONLY && i == 1) ||
			    ((c->only & PLACES) == TOR_ONLY && i == 0))
				continue;
			n += case_checks(i == 1, c);
		}
	for (ci = 0; ci < ncases; ci++)
		if ((cases[ci].only & PLACES) != TOR_ONLY &&
		    has_self(&cases[ci]))
			n += case_checks(false, &cases[ci]);
	return n;
}

static void run_case(struct place *p, const struct tcase *c, __u32 base)
{
	struct stepctx x = { .p = p, .c = c, .base = base };
	__u32 idx;
	struct rinx_agg zero = {};
	struct mslot *m = calloc(1, sizeof(*m));
	struct mshare *own = calloc(1, sizeof(*own));

	if (!m || !own)
		exit(1);
	if (c->only & STAR) {
		x.pl = &p->star;
		x.job = STAR_JOB_ID;
		x.slot = STAR_SLOT;
	} else {
		x.pl = &p->plan;
		x.job = JOB_ID;
		x.slot = JOB_SLOT;
	}
	x.m = m;
	x.own = own;
	idx = x.slot * WINDOW + c->block;
	/* every case starts from an unused slot and, at the agent, with the
	 * share of a round long gone in the share map; the ToR's job as the
	 * control plane installs it for a plan every round passes: at the
	 * case's round, bounded RINX_AGG_AHEAD ahead */
	if (bpf_map_update_elem(p->aggs, &idx, &zero, BPF_ANY) ||
	    (p->sw && put_job_ahead(p, x.pl, x.job, x.slot, p->self, base,
				    RINX_AGG_AHEAD)) ||
	    (!p->sw && write_share(&x, base - 50, 0, 0, V_RAND))) {
		check(NULL, 0, "%s: %s: clear slot and share", p->name,
		      c->name);
		free(m);
		free(own);
		return;
	}
	/* these cases are not about pulls (run_pulls): the slot a pull
	 * would look at holds a round far ahead, so none is made */
	{
		__u32 plen = x.pl->plen;
		__u32 d = (RINX_PULL_BEHIND + plen - 1) / plen * plen;
		struct rinx_agg ahead = { .round = base + 1000 };
		__u32 pidx = x.slot * WINDOW + c->block - d;

		if (c->block >= d &&
		    bpf_map_update_elem(p->aggs, &pidx, &ahead, BPF_ANY))
			tap_diag("  %s: %s: the pull's slot: %s", p->name,
				 c->name, strerror(errno));
	}
	for (x.si = 0; x.si < c->n; x.si++)
		run_step(&x);
	put_job(p, x.pl, x.job, x.slot, p->self, 1);
	free(m);
	free(own);
}

/* ---- concurrency --------------------------------------------------------- */

#define CC_ROUNDS	2000
#define CC_NB		4
#define CC_BASE		50000

static const __u32 cc_blocks[CC_NB] = { 1, 2, 4, 5 };	/* classes 1 2 1 2 */

struct cc {
	struct place *p;
	pthread_barrier_t bar;
	unsigned int done[CC_ROUNDS][CC_NB];
	long bad_sum, bad_ret, errs, by_thread[2], pinned[2];
};

static __s32 cc_val(int w, __u32 r, int b, int i)
{
	__u32 h = (__u32)w * 0x9e3779b1u ^ r * 0x85ebca6bu ^
		  (__u32)b * 0xc2b2ae35u ^ (__u32)i * 0x27d4eb2fu;

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return (__s32)(h % (2u << QBITS)) - (1 << QBITS) + 1;
}

struct cc_arg {
	struct cc *cc;
	int tid;
};

static void *cc_thread(void *arg)
{
	struct cc_arg *a = arg;
	struct cc *cc = a->cc;
	struct place *p = cc->p;
	static __thread __u8 in[FLEN], out[FLEN + 256];
	/* the agent's own share is in its share map, not a frame */
	const int mine[2][2][2] = { { { W1, -1 }, { W2, P } },
				    { { W0, W1 }, { W2, P } } };
	static __thread struct rinx_slot shb;
	struct rinx_slot *sh = &shb;
	cpu_set_t set;
	__u32 r;
	int bi, k, i;

	CPU_ZERO(&set);
	CPU_SET(a->tid, &set);
	cc->pinned[a->tid] = !sched_setaffinity(0, sizeof(set), &set);
	for (r = 0; r < CC_ROUNDS; r++) {
		__u32 round = CC_BASE + r;
		__s16 exp = (__s16)(r % 7) - 3;

		if (a->tid == 0 && !p->sw) {
			if (put_job(p, &p->plan, JOB_ID, JOB_SLOT, p->self,
				    round))
				__atomic_fetch_add(&cc->errs, 1,
						   __ATOMIC_RELAXED);
			for (bi = 0; bi < CC_NB; bi++) {
				__u32 idx = JOB_SLOT * WINDOW + cc_blocks[bi];

				sh->round = round;
				sh->exp = exp;
				sh->count = RINX_BLOCK_VALUES;
				for (i = 0; i < RINX_BLOCK_VALUES; i++)
					sh->v[i] = cc_val(W0, r, bi, i);
				if (bpf_map_update_elem(p->share, &idx, sh,
							BPF_ANY))
					__atomic_fetch_add(&cc->errs, 1,
							   __ATOMIC_RELAXED);
			}
		}
		pthread_barrier_wait(&cc->bar);
		for (bi = 0; bi < CC_NB; bi++) {
			int b = a->tid ? CC_NB - 1 - bi : bi;
			__u32 block = cc_blocks[b];

			for (k = 0; k < 2; k++) {
				int w = mine[p->sw][a->tid][(k + r) & 1];
				const struct rinx_hop *hop;
				__u32 ret = 0;

				if (w < 0)
					continue;
				hop = &p->plan.hops[p->plan.cmap[block %
								 p->plan.plen]]
					[(w == P ? RINX_T_REDUCE :
					  RINX_T_CONTRIB) - 1];
				build(p, &p->plan, in, JOB_ID,
				      w == P ? RINX_T_REDUCE :
				      RINX_T_CONTRIB, w == P ? hop->step : 0,
				      w == P ? hop->from : w,
				      w == P ? hop->from : w, round, block,
				      exp, 0);
				for (i = 0; i < RINX_BLOCK_VALUES; i++)
					vals(in)[i] = cc_val(w, r, b, i);
				if (run_once(p->prog, in, out, &ret, NULL,
					     NULL)) {
					__atomic_fetch_add(&cc->errs, 1,
							   __ATOMIC_RELAXED);
					continue;
				}
				if (ret == XDP_DROP)
					continue;
				if (ret != (p->sw ? XDP_REDIRECT : XDP_TX) ||
				    hdr(out)->exp != htons((__u16)exp)) {
					__atomic_fetch_add(&cc->bad_ret, 1,
							   __ATOMIC_RELAXED);
					continue;
				}
				__atomic_fetch_add(&cc->done[r][b], 1,
						   __ATOMIC_RELAXED);
				cc->by_thread[a->tid]++;
				for (i = 0; i < RINX_BLOCK_VALUES; i++) {
					__s64 sum = (__s64)cc_val(W0, r, b, i) +
						    cc_val(W1, r, b, i) +
						    cc_val(W2, r, b, i) +
						    cc_val(P, r, b, i);

					if (vals(out)[i] != sum) {
						__atomic_fetch_add(
							&cc->bad_sum, 1,
							__ATOMIC_RELAXED);
						break;
					}
				}
			}
		}
		pthread_barrier_wait(&cc->bar);
	}
	return NULL;
}

static void run_concurrency(struct place *p)
{
	struct cc *cc = calloc(1, sizeof(*cc));
	struct cc_arg args[2];
	pthread_t th[2];
	struct counters c0, c1;
	struct rinx_agg zero = {};
	long once = 0, never = 0, twice = 0;
	struct timespec t0, t1;
	int i, b, r, created = 0;
	bool cnt_ok = true;

	if (!cc) {
		check(NULL, 0, "%s: concurrency: allocate", p->name);
		return;
	}
	cc->p = p;
	pthread_barrier_init(&cc->bar, NULL, 2);
	for (b = 0; b < CC_NB; b++) {
		__u32 idx = JOB_SLOT * WINDOW + cc_blocks[b];

		bpf_map_update_elem(p->aggs, &idx, &zero, BPF_ANY);
	}
	read_counters(p, &c0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 2; i++) {
		args[i].cc = cc;
		args[i].tid = i;
		if (!pthread_create(&th[i], NULL, cc_thread, &args[i]))
			created++;
	}
	if (created != 2) {
		/* a lone thread would wait at the barrier forever */
		check(NULL, 0, "%s: concurrency: create threads", p->name);
		exit(1);
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	read_counters(p, &c1);
	for (r = 0; r < CC_ROUNDS; r++)
		for (b = 0; b < CC_NB; b++) {
			once += cc->done[r][b] == 1;
			never += cc->done[r][b] == 0;
			twice += cc->done[r][b] > 1;
		}
	for (i = 0; i < RINX_STAT_MAX; i++) {
		/* the agent's own share is no frame */
		__u64 nf = p->sw ? 4 : 3;
		__u64 want = i == RINX_STAT_RX ? nf * CC_ROUNDS * CC_NB :
			     i == RINX_STAT_AGG_ADD ?
			     (nf - 1) * CC_ROUNDS * CC_NB :
			     i == RINX_STAT_AGG_DONE ? 1ULL * CC_ROUNDS * CC_NB :
			     0;

		if (c1.st[i] - c0.st[i] != want) {
			tap_diag("  %s: +%llu, want +%llu", stat_name(i),
				 (unsigned long long)(c1.st[i] - c0.st[i]),
				 (unsigned long long)want);
			cnt_ok = false;
		}
	}
	tap_diag("%s: %d rounds x %d blocks x 4 contributions%s on 2 CPUs "
		 "(pinned %ld/%ld) in %.0f ms; completions by CPU0 %ld, CPU1 "
		 "%ld", p->name, CC_ROUNDS, CC_NB,
		 p->sw ? "" : " (the agent's own from its share map)",
		 cc->pinned[0], cc->pinned[1],
		 (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
		 cc->by_thread[0], cc->by_thread[1]);
	check(NULL, !cc->errs && once == CC_ROUNDS * CC_NB && !never && !twice,
	      "%s: concurrency: every (round, block) completed exactly once "
	      "(%ld once, %ld never, %ld more than once, %ld errors)",
	      p->name, once, never, twice, cc->errs);
	check(NULL, !cc->bad_sum && !cc->bad_ret,
	      "%s: concurrency: every completed sum exact (%ld bad sums, %ld "
	      "bad actions/exponents)", p->name, cc->bad_sum, cc->bad_ret);
	check(NULL, cnt_ok, "%s: concurrency: counters (%d ADD + 1 DONE per "
	      "block and round, nothing else)", p->name, p->sw ? 3 : 2);
	pthread_barrier_destroy(&cc->bar);
	free(cc);
}

/* ---- timing -------------------------------------------------------------- */

#define T_N	2000
#define T_BASE	900000

struct tacc {
	__u32 dur[T_N];
	__u64 wall[T_N];
	long n;
};

static __u64 now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (__u64)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static int timed(int prog, __u8 *in, struct tacc *a, __u32 *ret)
{
	__u32 dur = 0;
	__u64 t0 = now_ns();
	int err = run_once(prog, in, fout, ret, NULL, &dur);
	__u64 t1 = now_ns();

	if (a->n < T_N) {
		a->wall[a->n] = t1 - t0;
		a->dur[a->n] = dur;
		a->n++;
	}
	return err;
}

static int empty_prog(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = XDP_DROP },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_XDP, "rinx_empty", "GPL", insns,
			     ARRAY_SIZE(insns), NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* median and mean of the kernel's per-run duration and of the syscall */
static void stats_of(const struct tacc *a, double *dmed, double *dmean,
		     double *wmed)
{
	__u64 *t = calloc(a->n ? a->n : 1, sizeof(*t));
	double sum = 0;
	long i;

	*dmed = *dmean = *wmed = 0;
	if (!t || !a->n) {
		free(t);
		return;
	}
	for (i = 0; i < a->n; i++) {
		t[i] = a->dur[i];
		sum += a->dur[i];
	}
	qsort(t, a->n, sizeof(*t), cmp_u64);
	*dmed = t[a->n / 2];
	*dmean = sum / a->n;
	memcpy(t, a->wall, a->n * sizeof(*t));
	qsort(t, a->n, sizeof(*t), cmp_u64);
	*wmed = t[a->n / 2];
	free(t);
}

static void report(const char *what, const struct tacc *a,
		   const struct tacc *base)
{
	double dmed, dmean, wmed, bdmed, bdmean, bwmed;

	stats_of(a, &dmed, &dmean, &wmed);
	stats_of(base, &bdmed, &bdmean, &bwmed);
	tap_diag("  %-42s %5.0f ns (mean %5.0f) - empty = %5.0f ns; "
		 "syscall %5.0f - empty = %5.0f ns", what, dmed, dmean,
		 dmed - bdmed, wmed, wmed - bwmed);
}

static void run_timing(struct place *p, int efd)
{
	struct tacc *tb = calloc(5, sizeof(*tb));
	struct tacc *base = &tb[0], *first = &tb[1], *add = &tb[2];
	struct tacc *done = &tb[3], *fwd = &tb[4];
	const __u32 block = 5;	/* class 2: AGG_FWD with the partial */
	const struct rinx_hop *hop = &p->plan.hops[2][RINX_T_REDUCE - 1];
	__u32 idx = JOB_SLOT * WINDOW + block, ret, i;
	struct rinx_slot *own = calloc(1, sizeof(*own));
	struct rinx_agg zero = {};
	struct counters c0, c1;
	long bad = 0;
	int w;

	if (!tb || !own) {
		free(tb);
		free(own);
		check(NULL, 0, "%s: timing: allocate", p->name);
		return;
	}
	bpf_map_update_elem(p->aggs, &idx, &zero, BPF_ANY);
	rng = 0x5eed;
	build(p, &p->plan, fin, JOB_ID, RINX_T_CONTRIB, 0, 0, 0, 1, block, 0,
	      0);
	gen_vals(vals(fin), V_RAND);
	for (i = 0; i < T_N; i++)
		bad += timed(efd, fin, base, &ret) || ret != XDP_DROP;
	own->count = RINX_BLOCK_VALUES;
	gen_vals(own->v, V_RAND);
	read_counters(p, &c0);
	for (i = 0; i < T_N; i++) {
		__u32 round = T_BASE + i;

		/* the agent's share (untimed): worker 0 is no frame there */
		if (!p->sw) {
			put_job(p, &p->plan, JOB_ID, JOB_SLOT, p->self, round);
			own->round = round;
			bad += !!bpf_map_update_elem(p->share, &idx, own,
						     BPF_ANY);
		}
		for (w = p->sw ? W0 : W1; w <= P; w++) {
			build(p, &p->plan, fin, JOB_ID, w == P ?
			      RINX_T_REDUCE : RINX_T_CONTRIB,
			      w == P ? hop->step : 0,
			      w == P ? hop->from : w, w == P ? hop->from : w,
			      round, block, 0, 0);
			gen_vals(vals(fin), V_RAND);
			bad += timed(p->prog, fin, w == (p->sw ? W0 : W1) ?
				     first : w == P ? done : add, &ret) ||
			       ret != (w == P ? (p->sw ? XDP_REDIRECT : XDP_TX) :
				       XDP_DROP);
		}
	}
	read_counters(p, &c1);
	tap_diag("%s: one run per syscall, %d distinct frames each, equal "
		 "exponents; median kernel duration per run (opts.duration) "
		 "and median syscall (clock_gettime):", p->name, T_N);
	report("empty XDP program (baseline)", base, base);
	report("AGG first contribution (slot reset, copy)", first, base);
	report("AGG_ADD consumed (add under the lock)", add, base);
	report(p->sw ? "AGG_DONE completing (add, copy out, send)" :
	       "AGG_DONE completing (add, own share, copy out, send)", done,
	       base);
	if (!p->sw) {
		const struct rinx_hop *fh;
		struct rinx_plan q;
		struct rinx_slot *sh = calloc(1, sizeof(*sh));
		__u32 sidx = FWD_JOB_SLOT * WINDOW + 0;
		struct counters f0, f1;
		struct place hp = *p;

		/* node 3's ADD_FWD of class 0: the agent's output arrives */
		rinx_plan_build(&q, &p->spec, 3);
		fh = &q.hops[0][RINX_T_REDUCE - 1];
		if (sh && fh->action == RINX_A_ADD_FWD) {
			sh->round = 7;
			sh->count = RINX_BLOCK_VALUES;
			gen_vals(sh->v, V_RAND);
			bpf_map_update_elem(p->share, &sidx, sh, BPF_ANY);
			put_job(p, &q, FWD_JOB_ID, FWD_JOB_SLOT, 3, 7);
			hp.self = 3;
			node_addr(3, hp.self_mac, &(__be32){ 0 });
			build(&hp, &q, fin, FWD_JOB_ID, RINX_T_REDUCE, fh->step,
			      fh->from, fh->from, 7, 0, 0, 0);
			gen_vals(vals(fin), V_RAND);
			read_counters(p, &f0);
			for (i = 0; i < T_N; i++) {
				/* its first pass (a ring hop drops what it
				 * passed on already): no kept partial sum */
				struct rinx_slot z = { 0 };

				bad += bpf_map_update_elem(p->partial, &sidx,
							   &z, BPF_ANY) != 0;
				bad += timed(p->prog, fin, fwd, &ret) ||
				       ret != XDP_TX;
			}
			read_counters(p, &f1);
			report("ADD_FWD plain host reduce hop (no lock)", fwd,
			       base);
			if (f1.st[RINX_STAT_REDUCE_FWD] -
			    f0.st[RINX_STAT_REDUCE_FWD] != T_N)
				bad++;
			/* what repeat does: the rewritten frame runs again */
			{
				LIBBPF_OPTS(bpf_test_run_opts, o);

				o.data_in = fin;
				o.data_size_in = FLEN;
				o.repeat = T_N;
				read_counters(p, &f0);
				bpf_prog_test_run_opts(p->prog, &o);
				read_counters(p, &f1);
				tap_diag("  repeat=%d of one ADD_FWD frame: %u "
					 "ns/run, but REDUCE_FWD +%llu, "
					 "DROP_SENDER +%llu: repetitions see "
					 "the frame the previous one rewrote",
					 T_N, o.duration,
					 (unsigned long long)
					 (f1.st[RINX_STAT_REDUCE_FWD] -
					  f0.st[RINX_STAT_REDUCE_FWD]),
					 (unsigned long long)
					 (f1.st[RINX_STAT_DROP_SENDER] -
					  f0.st[RINX_STAT_DROP_SENDER]));
			}
		} else {
			bad++;
		}
		free(sh);
		put_job(p, &q, FWD_JOB_ID, FWD_JOB_SLOT, 3, 1);
	}
	{
		/* and for the aggregator: every repetition after the first
		 * is a duplicate */
		LIBBPF_OPTS(bpf_test_run_opts, o);
		struct counters d0, d1;

		if (!p->sw)
			put_job(p, &p->plan, JOB_ID, JOB_SLOT, p->self,
				T_BASE + T_N);
		build(p, &p->plan, fin, JOB_ID, RINX_T_CONTRIB, 0, 1, 1,
		      T_BASE + T_N, block, 0, 0);
		o.data_in = fin;
		o.data_size_in = FLEN;
		o.repeat = T_N;
		read_counters(p, &d0);
		bpf_prog_test_run_opts(p->prog, &o);
		read_counters(p, &d1);
		tap_diag("  repeat=%d of one contribution: %u ns/run, but "
			 "AGG_ADD +%llu, DROP_AGG_DUP +%llu (+%llu reset)",
			 T_N, o.duration, (unsigned long long)
			 (d1.st[RINX_STAT_AGG_ADD] - d0.st[RINX_STAT_AGG_ADD]),
			 (unsigned long long)(d1.st[RINX_STAT_DROP_AGG_DUP] -
					      d0.st[RINX_STAT_DROP_AGG_DUP]),
			 (unsigned long long)(d1.st[RINX_STAT_AGG_RESET] -
					      d0.st[RINX_STAT_AGG_RESET]));
	}
	free(tb);
	free(own);
	/* the agent's first frame is w1's (its own share is in the map) */
	check(NULL, !bad && c1.st[RINX_STAT_AGG_ADD] - c0.st[RINX_STAT_AGG_ADD]
	      == (p->sw ? 3 : 2) * T_N && c1.st[RINX_STAT_AGG_DONE] -
	      c0.st[RINX_STAT_AGG_DONE] == T_N,
	      "%s: timed runs did what they were timed for (%ld wrong)",
	      p->name, bad);
}

/* ---- the plan the cases assume ------------------------------------------ */

static void check_plan(const struct place *p)
{
	const struct rinx_plan *pl = &p->plan;
	const bool ag = !p->sw;
	/* contributors by node id: the rack's workers but the agent itself,
	 * whose share is added from its map (RINX_HOP_SELF), and node 4,
	 * the member before the aggregator, with its partial sum */
	const __u64 rack = 1ULL << 1 | 1ULL << 2 | (ag ? 0 : 1ULL << 0);
	const __u8 fl = RINX_HOP_ANSWER | (ag ? RINX_HOP_SELF : 0);
	struct rinx_hop want[3][RINX_HOP_TYPES] = {
		{ [RINX_T_CONTRIB - 1] = {
			.action = RINX_A_AGG_FWD, .from = RINX_NO_SEND,
			.to = 3, .out_step = 0, .rack = RACK_INA,
			.flags = fl, .mask = rack },
		  [RINX_T_GATHER - 1] = {
			.action = RINX_A_MCAST_FWD, .from = 4, .step = 0,
			.to = 3, .out_step = 1, .rack = RACK_INA } },
		{ [RINX_T_CONTRIB - 1] = {
			.action = RINX_A_AGG_FINISH, .from = 4, .step = 1,
			.to = 3, .out_step = 0, .rack = RACK_INA,
			.flags = fl, .mask = rack | 1ULL << 4 } },
		{ [RINX_T_CONTRIB - 1] = {
			.action = RINX_A_AGG_FWD, .from = 4, .step = 0,
			.to = 3, .out_step = 1, .rack = RACK_INA,
			.flags = fl, .mask = rack | 1ULL << 4 },
		  [RINX_T_GATHER - 1] = {
			.action = RINX_A_MCAST_END, .from = 4, .step = 1,
			.to = p->self, .out_step = 2, .rack = RACK_INA } },
	};
	bool ok = pl->nclasses == 3 && pl->plen == 3 && pl->cmap[0] == 0 &&
		  pl->cmap[1] == 1 && pl->cmap[2] == 2 &&
		  p->node[0].rack == RACK_INA && p->node[3].rack == RACK_PLAIN;
	int k, t;

	/* a partial sum arrives where the partial's slot is */
	want[1][RINX_T_REDUCE - 1] = want[1][RINX_T_CONTRIB - 1];
	want[2][RINX_T_REDUCE - 1] = want[2][RINX_T_CONTRIB - 1];
	for (k = 0; k < 3; k++) {
		for (t = 0; t < RINX_HOP_TYPES; t++) {
			const struct rinx_hop *h = &pl->hops[k][t];

			if (!memcmp(h, &want[k][t], sizeof(*h)))
				continue;
			ok = false;
			tap_diag("  class %d type %d: action %u from %u "
				 "step %u to %u out %u rack %u flags %#x "
				 "mask %#llx",
				 k, t + 1, h->action, h->from, h->step, h->to,
				 h->out_step, h->rack, h->flags,
				 (unsigned long long)h->mask);
		}
		/* the aggregator never sends a share of its own */
		ok = ok && pl->start_to[k] == -1;
	}
	check(NULL, ok, "%s: plan (rinx_plan_build): class 0 AGG_FWD mask "
	      "%#llx, classes 1 and 2 AGG_FINISH/AGG_FWD mask %#llx (node "
	      "ids), flags %s, gathers MCAST_FWD/MCAST_END, pattern 0 1 2",
	      p->name, (unsigned long long)rack,
	      (unsigned long long)(rack | 1ULL << 4),
	      ag ? "ANSWER|SELF" : "ANSWER");
}

/* The slow path with a socket to take it: the agent's cases that reach it
 * run again, now redirected and counted as RINX_STAT_SLOW_SELF. An
 * unbound AF_XDP socket is enough for bpf_redirect_map() to find an entry
 * (BPF_PROG_TEST_RUN sends nothing anywhere). */
static void run_with_socket(struct place *p)
{
	__u32 q = 0, base = 500000;	/* the queue test runs come in by */
	int sk = socket(AF_XDP, SOCK_RAW, 0), ci;

	if (!check(NULL, sk >= 0 &&
		   !bpf_map_update_elem(p->xsks, &q, &sk, BPF_ANY),
		   "agent: an AF_XDP socket in the XSKMAP (queue 0)")) {
		tap_diag("  %s", strerror(errno));
		if (sk >= 0)
			close(sk);
		return;
	}
	p->xsk = true;
	p->name = "agent+xsk";
	for (ci = 0; ci < ncases; ci++, base += 100) {
		const struct tcase *c = &cases[ci];

		if ((c->only & PLACES) == TOR_ONLY || !has_self(c))
			continue;
		rng = 0x7f4a7c15u * (ci + 1);
		run_case(p, c, c->base ? c->base : base);
	}
	bpf_map_delete_elem(p->xsks, &q);
	p->xsk = false;
	p->name = "agent";
	close(sk);
}

/* ---- pulls (bpf/agg.bpf.h) ------------------------------------------------
 *
 * A contributor's block that reaches the aggregator while the slot of its
 * block d earlier (RINX_PULL_BEHIND rounded up to whole class patterns)
 * lacks it this round turns into an RNACK for that block, back to it; the
 * contributor answers from its share (a worker) or from its slot's sum (an
 * aggregator forwarding the block). Each step is one frame, checked as
 * above: action, whole output frame, exact counter deltas.
 */
static int pull_run(const struct place *p, __u32 *ret, __u64 *d)
{
	struct counters c0, c1;
	__u32 size = 0;
	int err, i;

	if (read_counters(p, &c0))
		return -EIO;
	err = run_once(p->prog, fin, fout, ret, &size, NULL);
	if (!err && read_counters(p, &c1))
		err = -EIO;
	if (err)
		return err;
	for (i = 0; i < RINX_STAT_MAX; i++)
		d[i] = c1.st[i] - c0.st[i];
	return size == FLEN ? 0 : -EMSGSIZE;
}

/* The frame in fin through p: action want, output fwant (a drop: fin as
 * it was), RX and the stats s1 and s2 (-1: none) +1, every other +0. */
static void pull_step(const struct place *p, int want, int s1, int s2,
		      const char *what)
{
	__u64 d[RINX_STAT_MAX];
	__u32 ret = 0;
	bool ok;
	int err = pull_run(p, &ret, d), i;

	if (want == XDP_DROP)
		memcpy(fwant, fin, FLEN);
	ok = !err && ret == (__u32)want && !memcmp(fout, fwant, FLEN);
	for (i = 0; !err && i < RINX_STAT_MAX; i++) {
		__u64 w = i == RINX_STAT_RX || i == s1 || i == s2;

		if (d[i] != w) {
			tap_diag("  %s: +%llu, want +%llu", stat_name(i),
				 (unsigned long long)d[i],
				 (unsigned long long)w);
			ok = false;
		}
	}
	if (!check(NULL, ok, "%s: pull: %s", p->name, what)) {
		if (err)
			tap_diag("  test run: %s", strerror(-err));
		else if (ret != (__u32)want)
			tap_diag("  action %u, want %d", ret, want);
		else
			diag_frame(fout, fwant, FLEN);
	}
}

/* Worker `from`'s share of block b into the aggregator, round r. */
static void pull_contrib(const struct place *p, __u16 from, __u32 b,
			 __u32 r, __u8 flags)
{
	build(p, &p->plan, fin, JOB_ID, RINX_T_CONTRIB, 0, from, from, r, b,
	      3, flags);
	gen_vals(vals(fin), V_RAND);
}

/* fwant: fin asking `to` for block pb (the pull). */
static void want_pull(const struct place *p, __u16 to, __u32 pb)
{
	memcpy(fwant, fin, FLEN);
	hdr(fwant)->type = RINX_T_RNACK;
	hdr(fwant)->block = htonl(pb);
	hdr(fwant)->flags = 0;
	hdr(fwant)->step = 0;
	hdr(fwant)->cover = 0;
	fwant[OFF_IP + 1] = RINX_ECN_ECT0;
	readdress(p, fwant, to);
}

static int put_slot(const struct place *p, __u32 b, const struct rinx_agg *a)
{
	__u32 idx = JOB_SLOT * WINDOW + b;

	return bpf_map_update_elem(p->aggs, &idx, a, BPF_ANY) ? -errno : 0;
}

/* The n-th block of class k from block `from` on. */
static __u32 pull_blk(const struct rinx_plan *pl, int k, __u32 from, int n)
{
	__u32 b;

	for (b = from; b < WINDOW - 1; b++)
		if (pl->cmap[b % pl->plen] == k && n-- == 0)
			return b;
	tap_diag("  no block of class %d past %u in the window", k, from);
	return WINDOW - 2;
}

static void run_pulls_at(struct place *p)
{
	const struct rinx_plan *pl = &p->plan;
	__u32 plen = pl->plen, b, r;
	__u32 d = (RINX_PULL_BEHIND + plen - 1) / plen * plen;
	int tx = p->sw ? XDP_REDIRECT : XDP_TX, err = 0;
	struct rinx_agg z = {}, a = {};
	const struct rinx_hop *h;
	__u16 to;
	int k;

	r = PULL_ROUND + (p->sw ? 100 : 0);
	for (b = 0; b < WINDOW; b++)
		err |= put_slot(p, b, &z);
	err |= put_job(p, pl, JOB_ID, JOB_SLOT, p->self, r);
	if (err || d + 5 >= WINDOW - 1)
		tap_diag("  %s: pull set-up failed (err %d, distance %u of "
			 "%u blocks)", p->name, err, d, WINDOW);

	pull_contrib(p, 1, d, r, 0);
	want_pull(p, 1, 0);
	pull_step(p, tx, RINX_STAT_AGG_PULL, -1,
		  "worker 1's block d came, slot 0 has nothing of the round: "
		  "the frame asks worker 1 for block 0");
	pull_contrib(p, 1, 1, r, 0);
	pull_step(p, XDP_DROP, RINX_STAT_AGG_ADD, -1,
		  "worker 1's block 1 (before d): added, nothing asked");
	pull_contrib(p, 1, d + 1, r, 0);
	pull_step(p, XDP_DROP, RINX_STAT_AGG_ADD, -1,
		  "worker 1's block d + 1, slot 1 has worker 1: nothing asked");
	pull_contrib(p, 2, d + 1, r, 0);
	want_pull(p, 2, 1);
	pull_step(p, tx, RINX_STAT_AGG_PULL, -1,
		  "worker 2's block d + 1, slot 1 lacks worker 2: asked for "
		  "block 1");
	a = z;
	a.round = r;
	a.done = 1;
	err = put_slot(p, 2, &a);
	pull_contrib(p, 1, d + 2, r, 0);
	pull_step(p, XDP_DROP, RINX_STAT_AGG_ADD, -1,
		  "slot 2 done without worker 1's bit: nothing asked");
	a.round = r + 1;
	a.done = 0;
	a.seen = 1ULL << 2;
	err |= put_slot(p, 3, &a);
	pull_contrib(p, 1, d + 3, r, 0);
	pull_step(p, XDP_DROP, RINX_STAT_AGG_ADD, -1,
		  "slot 3 holds a newer round: nothing asked");
	pull_contrib(p, 1, d + 4, r, RINX_F_RESEND);
	pull_step(p, XDP_DROP, RINX_STAT_AGG_ADD, -1,
		  "a share sent again (out of order): nothing asked");
	pull_contrib(p, 1, WINDOW - 1, r, 0);
	pull_step(p, XDP_DROP, RINX_STAT_AGG_ADD, -1,
		  "the round's last block (maybe short): nothing asked");
	/* a worker's NACK for a block not finished here (its timer asks
	 * before it sends the share again): a pull if the slot lacks its
	 * share (rinx_agg_nack); blocks past d + 4 */
	k = pl->cmap[(d + 5) % plen];
	b = pull_blk(pl, k, d + 5, 0);
	build(p, pl, fin, JOB_ID, RINX_T_NACK, 0, 1, 1, r, b, 0, 0);
	want_pull(p, 1, b);
	pull_step(p, tx, RINX_STAT_NACK_PULL, -1,
		  "worker 1's NACK, the slot lacks its share: asked for it");
	a = z;
	a.round = r;
	a.seen = 1ULL << 1;
	err |= put_slot(p, b, &a);
	pull_step(p, XDP_DROP, RINX_STAT_NACK_MISS, -1,
		  "worker 1's NACK, the slot has its share, lacks worker 2's: "
		  "nothing (worker 2's timer asks)");
	build(p, pl, fin, JOB_ID, RINX_T_NACK, 0, 3, 3, r, b, 0, 0);
	pull_step(p, XDP_DROP, RINX_STAT_NACK_MISS, -1,
		  "a NACK of node 3, no contributor here: nothing");
	/* the slot's sum left (agg+fwd): sent on again */
	k = pl->cmap[6 % plen];
	b = pull_blk(pl, k, d + 5, 1);
	h = &pl->hops[k][RINX_T_CONTRIB - 1];
	a.seen = h->mask;
	a.done = 1;
	a.exp = 4;
	a.shape = RINX_SHAPE(WINDOW, RINX_BLOCK_VALUES);
	a.dtype = RINX_W_FIXED;
	gen_vals(a.v, V_RAND);
	err |= put_slot(p, b, &a);
	build(p, pl, fin, JOB_ID, RINX_T_NACK, 0, 1, 1, r, b, 0, 0);
	memcpy(fwant, fin, FLEN);
	memcpy(vals(fwant), a.v, RINX_BLOCK_BYTES);
	hdr(fwant)->exp = htons(4);
	hdr(fwant)->type = RINX_T_REDUCE;
	hdr(fwant)->step = h->out_step;
	hdr(fwant)->cover = htobe64(h->mask);
	fwant[OFF_IP + 1] = RINX_ECN_ECT0;
	readdress(p, fwant, h->to);
	pull_step(p, h->action == RINX_A_AGG_FWD ? tx : XDP_DROP,
		  h->action == RINX_A_AGG_FWD ? RINX_STAT_NACK_SUM :
		  RINX_STAT_NACK_MISS, -1,
		  "worker 1's NACK, the slot's sum left, the finished block "
		  "not back: the sum sent on again");
	if (err)
		tap_diag("  %s: slot writes failed", p->name);

	/* the answer of an aggregator that sent block 6's sum on (class
	 * cmap[0], which starts here: agg+fwd) */
	k = pl->cmap[6 % plen];
	h = &pl->hops[k][RINX_T_CONTRIB - 1];
	to = h->to;
	a = z;
	a.round = r;
	a.done = 1;
	a.seen = h->mask;
	a.exp = 5;
	a.flags = RINX_F_NONFINITE;
	a.ce = 1;
	a.shape = RINX_SHAPE(WINDOW, RINX_BLOCK_VALUES);
	a.dtype = RINX_W_FIXED;
	gen_vals(a.v, V_RAND);
	err = put_slot(p, 6, &a);
	build(p, pl, fin, JOB_ID, RINX_T_RNACK, 0, to, to, r, 6, 0, 0);
	memcpy(fwant, fin, FLEN);
	memcpy(vals(fwant), a.v, RINX_BLOCK_BYTES);
	hdr(fwant)->exp = htons(5);
	hdr(fwant)->flags = RINX_F_NONFINITE;
	hdr(fwant)->type = RINX_T_REDUCE;
	hdr(fwant)->step = h->out_step;
	hdr(fwant)->cover = htobe64(h->mask);
	fwant[OFF_IP + 1] = RINX_ECN_CE;
	readdress(p, fwant, to);
	pull_step(p, h->action == RINX_A_AGG_FWD ? tx : XDP_DROP,
		  h->action == RINX_A_AGG_FWD ? RINX_STAT_RREPAIR :
		  RINX_STAT_RNACK_MISS, -1,
		  "RNACK from the node the sum went to: the slot's sum again, "
		  "marked as it left");
	build(p, pl, fin, JOB_ID, RINX_T_RNACK, 0, 4, 4, r, 6, 0, 0);
	pull_step(p, to == 4 ? tx : XDP_DROP,
		  to == 4 ? RINX_STAT_RREPAIR : RINX_STAT_RNACK_MISS, -1,
		  "RNACK from a node the sum does not go to: refused");
	a.final = 1;
	err |= put_slot(p, 6, &a);
	build(p, pl, fin, JOB_ID, RINX_T_RNACK, 0, to, to, r, 6, 0, 0);
	pull_step(p, XDP_DROP, RINX_STAT_RNACK_MISS, -1,
		  "RNACK once the slot keeps the finished block: refused");
	if (err || h->action != RINX_A_AGG_FWD || to == 4)
		tap_diag("  %s: class %d's hop is not the agg+fwd to a node "
			 "other than 4 the test expects", p->name, k);
}

/* Worker 1's answer to its aggregator's pull, at a host program (the
 * agent place's, another job slot): its share of the block as it left, if
 * its cursor claimed it. */
static void run_pull_worker(struct place *p, const struct place *of,
			    __u32 slot)
{
	struct rinx_plan *q = calloc(1, sizeof(*q));
	struct rinx_cursor cur = {};
	struct rinx_slot sh = {};
	struct rinx_job j = {};
	__u32 id = WK_JOB + slot, r = PULL_ROUND + 7, idx, i, agg;
	int err, k, cfd = fd_of(p->hs->maps.cursors);
	const struct rinx_node *me, *them;
	char what[160];

	err = q ? rinx_plan_build(q, &of->spec, 1) : -ENOMEM;
	err = err ?: put_plan(p, q, slot, false);
	if (err) {
		for (i = 0; i < 2; i++)
			check(NULL, 0, "%s: pull: worker 1 of the %s's plan: "
			      "set-up: %s", p->name, of->name,
			      strerror(-err));
		free(q);
		return;
	}
	agg = (__u32)q->start_to[q->cmap[1]];
	j = (struct rinx_job){
		.token = JOB_TOKEN, .slot = slot, .round = r,
		.nblocks = WINDOW, .last_count = RINX_BLOCK_VALUES,
		.nclasses = (__u16)q->nclasses, .nnodes = (__u16)q->nnodes,
		.self = 1, .qbits = QBITS, .dtype = RINX_W_FIXED,
		.window = WINDOW, .plen = (__u16)q->plen,
		.bval = RINX_BLOCK_VALUES,
	};
	memcpy(j.cmap, q->cmap, sizeof(j.cmap));
	for (k = 0; k < RINX_MAX_CLASSES; k++) {
		j.start_to[k] = q->start_to[k] >= 0 ? q->start_to[k] :
						      RINX_NO_SEND;
		j.start_type[k] = q->start_to[k] >= 0 ? q->start_type[k] : 0;
	}
	for (i = 0; i < (__u32)q->plen; i++)
		if (j.start_to[q->cmap[i]] != RINX_NO_SEND)
			j.own[j.nown++] = (__u8)i;
	cur.round = r;
	cur.next = 2 * j.nown;	/* blocks of the first two patterns */
	sh.round = r;
	sh.exp = -2;
	sh.flags = 0;
	sh.count = RINX_BLOCK_VALUES;
	gen_vals(sh.v, V_RAND);
	idx = slot * WINDOW + 1;
	err = bpf_map_update_elem(p->jobs, &id, &j, BPF_ANY) ||
	      bpf_map_update_elem(cfd, &slot, &cur, BPF_ANY) ||
	      bpf_map_update_elem(p->share, &idx, &sh, BPF_ANY);
	idx = slot * WINDOW + 3 * q->plen;
	err = err || bpf_map_update_elem(p->share, &idx, &sh, BPF_ANY);
	if (err || agg >= RINX_MAX_NODES || j.nown != q->plen ||
	    q->start_type[q->cmap[1]] != RINX_T_CONTRIB)
		tap_diag("  worker set-up: err %d, aggregator %u, %u own of "
			 "%u", err, agg, j.nown, q->plen);
	me = &q->nodes[1];
	them = &q->nodes[agg < RINX_MAX_NODES ? agg : 0];

	/* block 1: claimed; its share answers */
	tf_frame(fin, me->mac, them, me, 0, PORT);
	{
		struct rinx_hdr *h = hdr(fin);

		h->type = RINX_T_RNACK;
		h->job = htonl(id);
		h->token = htobe64(JOB_TOKEN);
		h->round = htonl(r);
		h->block = htonl(1);
		h->nblocks = htonl(WINDOW);
		h->sender = htons((__u16)agg);
		h->count = htons(RINX_BLOCK_VALUES);
		h->klass = htons(q->cmap[1]);
		h->dtype = htons(RINX_W_FIXED);
	}
	memcpy(fwant, fin, FLEN);
	memcpy(vals(fwant), sh.v, RINX_BLOCK_BYTES);
	hdr(fwant)->type = RINX_T_CONTRIB;
	hdr(fwant)->exp = htons((__u16)sh.exp);
	hdr(fwant)->flags = 0;
	hdr(fwant)->step = 0;
	fwant[OFF_IP + 1] = RINX_ECN_ECT0;
	readdress_nodes(fwant, me, them, 1);
	snprintf(what, sizeof(what), "worker 1 of the %s's plan: its "
		 "aggregator's RNACK for a claimed block: the share again",
		 of->name);
	pull_step(p, XDP_TX, RINX_STAT_RREPAIR, -1, what);
	/* block 3 plen: written, not claimed (its pacer has not let it go;
	 * the trainer's timers send it) */
	hdr(fin)->block = htonl(3 * q->plen);
	hdr(fin)->klass = htons(q->cmap[0]);
	snprintf(what, sizeof(what), "worker 1 of the %s's plan: an RNACK "
		 "for a block not claimed yet: refused", of->name);
	pull_step(p, XDP_DROP, RINX_STAT_RNACK_MISS, -1, what);
	free(q);
}

static void run_pulls(void)
{
	run_pulls_at(&places[0]);
	run_pulls_at(&places[1]);
	run_pull_worker(&places[0], &places[0], WK_SLOT);
	run_pull_worker(&places[0], &places[1], WK_TOR_SLOT);
}

/* ---- fair marks at an aggregator host (bpf/fair_kern_user.h) ------------ */

/* rinx_fair_unmark as the host program calls it: the node's jobs of the
 * epoch before e read first. */
static int fair_unmark(const struct rinx_fair *job,
		       const struct rinx_fair *node, __u32 e, __u32 r)
{
	return rinx_fair_unmark(job, node, e, rinx_fair_prev_jobs(node, e),
				r, RINX_FAIR_GAIN);
}

/* The counting and the decision in user space, epochs and draws chosen. */
static void fair_unit(void)
{
	struct rinx_fair a = {}, b = {}, c = {}, n = {};
	__u32 thr;

	rinx_fair_note(&a, &n, 10, 768);
	rinx_fair_note(&a, &n, 10, 768);
	rinx_fair_note(&a, &n, 10, 768);
	rinx_fair_note(&b, &n, 10, 768);
	check(NULL, n.tag[0] == 10 && n.vals[0] == 4 * 768 && n.jobs[0] == 2 &&
	      a.vals[0] == 3 * 768 && b.vals[0] == 768,
	      "fair: two jobs' contributions in epoch 10 counted (node %u "
	      "values, %u jobs; jobs %u and %u values)",
	      n.vals[0], n.jobs[0], a.vals[0], b.vals[0]);
	check(NULL, fair_unmark(&b, &n, 11, 255) &&
	      !fair_unmark(&a, &n, 11, 0) &&
	      rinx_fair_prev_jobs(&n, 11) == 2,
	      "fair: in epoch 11, the job at half its share has its marks "
	      "taken whatever the draw, the one above never; sums shared");
	check(NULL, !fair_unmark(&b, &n, 10, 0) &&
	      !fair_unmark(&b, &n, 12, 0),
	      "fair: only the epoch just before counts (none in 10 for 10, "
	      "none in 11 for 12)");
	c.tag[0] = 2;
	c.vals[0] = 5 * 768;
	check(NULL, fair_unmark(&c, &n, 11, 255),
	      "fair: a job whose counts are of an older epoch contributed "
	      "nothing in 10: below its share");
	rinx_fair_note(&a, &n, 12, 768);
	check(NULL, n.tag[0] == 12 && n.vals[0] == 768 && n.jobs[0] == 1 &&
	      a.vals[0] == 768 && b.tag[0] == 10,
	      "fair: epoch 12 starts the counts of its parity again (node "
	      "%u values, %u jobs)", n.vals[0], n.jobs[0]);
	check(NULL, !fair_unmark(&a, &n, 13, 0) &&
	      rinx_fair_prev_jobs(&n, 13) < 2,
	      "fair: a job alone in its epoch keeps its marks, its sums not "
	      "shared");
	/* 970 of 2,000 values, two jobs: 3% below the share; taken with
	 * probability RINX_FAIR_GAIN x 0.03, draws below 7.68 x the gain of
	 * 256 */
	memset(&n, 0, sizeof(n));
	memset(&a, 0, sizeof(a));
	n.tag[1] = a.tag[1] = 21;
	n.vals[1] = 2000;
	n.jobs[1] = 2;
	a.vals[1] = 970;
	thr = (__u32)(768 * RINX_FAIR_GAIN / 100);	/* 7.68 x gain, down */
	check(NULL, thr >= 1 && thr < 255 &&
	      fair_unmark(&a, &n, 22, thr - 1) &&
	      !fair_unmark(&a, &n, 22, thr) &&
	      !fair_unmark(&a, &n, 22, 255),
	      "fair: 3%% below the share, a mark is taken for draws 0..%u "
	      "of 256 (RINX_FAIR_GAIN %d)", thr - 1, RINX_FAIR_GAIN);
	a.vals[1] = 1000;
	check(NULL, !fair_unmark(&a, &n, 22, 0),
	      "fair: at the share exactly: no mark taken");
	a.vals[1] = 0;
	n.jobs[1] = 4;
	check(NULL, fair_unmark(&a, &n, 22, 255),
	      "fair: four jobs, this one nothing: every mark taken");
	a.vals[1] = 375;
	check(NULL, fair_unmark(&a, &n, 22, 255) &&
	      fair_unmark(&a, &n, 22, 0),
	      "fair: four jobs, this one at 0.75 of its share: every draw "
	      "takes the mark (gain %d)", RINX_FAIR_GAIN);
	a.vals[1] = 700;
	check(NULL, !fair_unmark(&a, &n, 22, 0),
	      "fair: four jobs, this one at 1.4 of its share: never");
	/* the jobs a sum carries (RINX_F_JOBS: jobs - 1, four at most),
	 * the larger of what it had and the node's count */
	n.jobs[1] = 3;
	check(NULL, rinx_fair_jobs(RINX_F_NAN, rinx_fair_prev_jobs(&n, 22)) ==
		    (RINX_F_NAN | 2 << RINX_F_JOBS_SHIFT) &&
	      rinx_fair_jobs(3 << RINX_F_JOBS_SHIFT,
			     rinx_fair_prev_jobs(&n, 22)) ==
		    3 << RINX_F_JOBS_SHIFT &&
	      rinx_fair_jobs(RINX_F_SHARED, rinx_fair_prev_jobs(&n, 23)) ==
		    RINX_F_SHARED,
	      "fair: three jobs in the epoch before: a sum leaves with "
	      "RINX_F_JOBS 2, keeps a larger one, and none of a stale epoch");
	n.jobs[1] = 9;
	check(NULL, rinx_fair_jobs(0, rinx_fair_prev_jobs(&n, 22)) ==
		    3 << RINX_F_JOBS_SHIFT &&
	      rinx_fair_jobs(0, 1) == 0,
	      "fair: nine jobs: RINX_F_JOBS 3 (four or more); one job: 0");
}

/* The host program completing a star block (class 1: agg+finish, unicast
 * to node 3) with the fairs map set for its job slot and the node: the
 * sum's mark as it leaves, and fair_unmark. */
struct fcase {
	const char *what;
	__u32 job_vals;		/* the job slot's values in the epoch before */
	bool job_in;		/* ... counted there (else an older epoch) */
	__u32 node_vals, jobs;	/* the node's */
	bool ce_in, want_ce;
};

static const struct fcase fair_cases[] = {
	{ "a quarter of its share, marked: leaves unmarked",
	  12500, true, 100000, 2, true, false },
	{ "nothing in the last epoch, another job did: unmarked",
	  0, false, 100000, 2, true, false },
	{ "half its share among four jobs: unmarked",
	  12500, true, 100000, 4, true, false },
	{ "at its share: keeps the mark", 50000, true, 100000, 2, true, true },
	{ "above its share: keeps the mark", 70000, true, 100000, 2, true,
	  true },
	{ "alone: keeps the mark", 100000, true, 100000, 1, true, true },
	{ "the node's counts of an older epoch: keeps the mark",
	  12500, false, 0, 0, true, true },
	{ "below its share, not marked: nothing to take",
	  12500, true, 100000, 2, false, false },
	{ "three jobs, above its share: keeps the mark",
	  40000, true, 100000, 3, true, true },
	{ "six jobs, not marked: nothing to take",
	  20000, true, 100000, 6, false, false },
};

_Static_assert(ARRAY_SIZE(fair_cases) == 10, "FAIR_CHECKS");

static int fair_put(int fd, __u32 key, __u32 e, __u32 vals, __u32 jobs,
		    bool in)
{
	struct rinx_fair f = {};
	int i;

	for (i = 0; i < 2; i++) {
		__u32 ep = e - 1 + i;	/* the epoch before, and this one */

		f.tag[ep & 1] = in ? ep : 0;
		f.vals[ep & 1] = vals;
		f.jobs[ep & 1] = jobs;
	}
	return bpf_map_update_elem(fd, &key, &f, BPF_ANY) ? -errno : 0;
}

/* The cases through one aggregation: the star's class 1 (a server's:
 * agg+finish, unicast, no rack) or a Rina class at the agent (a rack's:
 * its sums flagged RINX_F_SHARED when jobs share it). */
static void run_fair_at(struct place *p, const struct rinx_plan *pl,
			__u32 slot, __u32 job, __u32 base)
{
	const struct rinx_hop *h = NULL;
	int fd = fd_of(p->hs->maps.fairs), err, i, k = -1;
	__u32 b, idx;
	bool rack;

	for (b = 0; b < WINDOW - 1 && k < 0; b++) {
		h = &pl->hops[pl->cmap[b % pl->plen]][RINX_T_CONTRIB - 1];
		if ((h->action == RINX_A_AGG_FINISH ||
		     h->action == RINX_A_AGG_FWD) && (h->mask & 2) &&
		    (pl == &p->star ? b == 1 : h->rack != RINX_NO_RACK))
			k = pl->cmap[b % pl->plen];
	}
	b--;
	idx = slot * WINDOW + b;
	rack = h->rack != RINX_NO_RACK && h->rack != RINX_GROUP_EVERY;
	for (i = 0; i < (int)ARRAY_SIZE(fair_cases); i++) {
		const struct fcase *c = &fair_cases[i];
		__u32 r = base + i, ret = 0, size = 0, e;
		bool want_sh = rack && c->jobs >= 2;
		/* RINX_F_JOBS: jobs - 1, four at most, on every sum */
		__u32 want_j = c->jobs > 4 ? 3 : c->jobs ? c->jobs - 1 : 0;
		struct counters c0, c1;
		struct rinx_slot sh = {};
		struct rinx_agg a = {};
		struct timespec ts;
		__u8 tos;
		bool ok;

		sh.round = r;
		sh.exp = 4;
		sh.count = RINX_BLOCK_VALUES;
		gen_vals(sh.v, V_RAND);
		a.round = r;
		a.seen = h->mask & ~(1ULL << 1);
		a.exp = 4;
		a.shape = RINX_SHAPE(WINDOW, RINX_BLOCK_VALUES);
		a.dtype = RINX_W_FIXED;
		gen_vals(a.v, V_RAND);
		build(p, pl, fin, job, RINX_T_CONTRIB, 0, 1, 1, r, b, 4, 0);
		gen_vals(vals(fin), V_RAND);
		fin[OFF_IP + 1] = c->ce_in ? RINX_ECN_CE : RINX_ECN_ECT0;
		ip_fix_csum(fin + OFF_IP);
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		e = (__u32)(((__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec) >>
			    RINX_FAIR_SHIFT);
		err = k < 0 ? -ENOENT : 0;
		err = err ?: (bpf_map_update_elem(p->share, &idx, &sh,
						  BPF_ANY) ? -errno : 0);
		err = err ?: (bpf_map_update_elem(p->aggs, &idx, &a, BPF_ANY) ?
			      -errno : 0);
		err = err ?: put_job(p, pl, job, slot, p->self, r);
		err = err ?: fair_put(fd, slot, e, c->job_vals, 0, c->job_in);
		err = err ?: fair_put(fd, RINX_MAX_JOBS, e, c->node_vals,
				      c->jobs, c->jobs > 0);
		err = err ?: read_counters(p, &c0);
		err = err ?: run_once(p->prog, fin, fout, &ret, &size, NULL);
		err = err ?: read_counters(p, &c1);
		tos = fout[OFF_IP + 1] & RINX_ECN_MASK;
		ok = !err && ret == XDP_TX &&
		     tos == (c->want_ce ? RINX_ECN_CE : RINX_ECN_ECT0) &&
		     csum16(fout + OFF_IP, 20) == 0 &&
		     !(hdr(fout)->flags & RINX_F_SHARED) == !want_sh &&
		     (__u32)(hdr(fout)->flags & RINX_F_JOBS) >>
		     RINX_F_JOBS_SHIFT == want_j &&
		     c1.st[RINX_STAT_FAIR_UNMARK] - c0.st[RINX_STAT_FAIR_UNMARK] ==
		     (__u64)(c->ce_in && !c->want_ce) &&
		     c1.st[RINX_STAT_AGG_DONE] - c0.st[RINX_STAT_AGG_DONE] == 1;
		if (!check(NULL, ok, "%s: fair, %s (%s): %s%s, jobs field %u",
			   p->name, rack ? "a rack's agent" : "a server",
			   rack ? "Rina" : "star", c->what,
			   want_sh ? ", flagged shared" : "", want_j)) {
			int j;

			for (j = 0; !err && j < RINX_STAT_MAX; j++)
				if (c1.st[j] != c0.st[j])
					tap_diag("  %s +%llu", stat_name(j),
						 (unsigned long long)(c1.st[j] -
						 c0.st[j]));
			if (err)
				tap_diag("  %s", strerror(-err));
			else
				tap_diag("  action %u, ECN %u, flags 0x%x",
					 ret, tos, hdr(fout)->flags);
		}
	}
}

static void run_fair(struct place *p)
{
	fair_unit();
	run_fair_at(p, &p->star, STAR_SLOT, STAR_JOB_ID, 7000);
	run_fair_at(p, &p->plan, JOB_SLOT, JOB_ID, 8000);
}

int main(void)
{
	int i, ci, efd;
	__u32 base;

	tl_needs_root("BPF_PROG_TEST_RUN");
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		tap_skip_all("cannot count CPUs");
	gen_cases();
	tap_plan(plan_checks());

	for (i = 0; i < 2; i++) {
		int err = open_place(&places[i], i == 1);

		if (!check(NULL, !err, "%s: load %s, fill jobs/nodes/hops",
			   places[i].name, i ? "rinx_switch (ina_mac set)" :
			   "rinx_host (aggs resized)")) {
			tap_diag("  %s", strerror(err < 0 ? -err : err));
			return tap_done();
		}
		check_plan(&places[i]);
	}
	for (i = 0; i < 2; i++) {
		struct place *p = &places[i];

		base = 1000;
		for (ci = 0; ci < ncases; ci++, base += 100) {
			const struct tcase *c = &cases[ci];

			if (((c->only & PLACES) == AGENT_ONLY && p->sw) ||
			    ((c->only & PLACES) == TOR_ONLY && !p->sw))
				continue;
			rng = 0x9e3779b9u * (ci + 1) + i;
			run_case(p, c, c->base ? c->base : base);
		}
	}
	run_with_socket(&places[0]);
	run_pulls();
	run_fair(&places[0]);
	if (dup_rewritten)
		tap_diag("%d dropped duplicates into a finished slot were "
			 "rewritten with the stored sum first (a 3 KiB copy "
			 "under the lock for a frame that is dropped)",
			 dup_rewritten);
	for (i = 0; i < 2; i++)
		run_concurrency(&places[i]);
	efd = empty_prog();
	if (!check(NULL, efd >= 0, "load an empty XDP program (baseline)"))
		tap_diag("  %s", strerror(errno));
	else
		for (i = 0; i < 2; i++)
			run_timing(&places[i], efd);

	host_bpf__destroy(places[0].hs);
	switch_bpf__destroy(places[1].ss);
	free(cases);
	return tap_done();
}
