// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of the aggregator slots (bpf/agg.bpf.h, rinx_agg_add) in both
 * placements, through BPF_PROG_TEST_RUN:
 *
 *  - agent: rinx_host on the rack's agent host (rank 0 of rack 2, whose
 *    workers are ranks 0, 1, 2; the agent is one of them);
 *  - ToR:   rinx_switch with ina_mac set, frames addressed to the aggregator
 *    (node 5), via rinx_ina_frame.
 *
 * The cluster (user/plan.c builds the hop tables, rinx_plan_build):
 *
 *   rack 2 (INA): ranks 0 1 2 (bits 0 1 2)    rack 5 (plain): ranks 3 4
 *   ring members: [rack 2's aggregator] -> 3 -> 4 -> back
 *   class 0: starts at the aggregator      CONTRIB AGG_FWD    mask 0x7
 *   class 1: finished at the aggregator    CONTRIB/REDUCE AGG_FINISH
 *                                          mask 0x80000007 (partial from 4)
 *   class 2: the aggregator in the middle  CONTRIB/REDUCE AGG_FWD
 *                                          mask 0x80000007
 *   gather: class 0 MCAST_FWD, class 2 MCAST_END (both from 4)
 *
 * Every case is a sequence of frames into one block; each frame is one TAP
 * line that checks the XDP action, the whole output frame (a drop must leave
 * it untouched), the aggregator slot read back with BPF_F_LOCK, the result
 * map entry (agent) and the exact delta of every counter. Expected sums come
 * from a model of the slot kept here, in 64-bit arithmetic with
 * round-to-nearest-ties-up alignment; with equal exponents the sum must also
 * be the exact 64-bit sum of the contributions.
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
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uapi/rinx.h"
#include "uapi/rinx_switch.h"
#include "user/ctl.h"
#include "user/plan.h"
#include "host.skel.h"
#include "switch.skel.h"
#include "tap.h"

#define WINDOW		12
#define PORT		47321
#define NSLOTS		RINX_MAX_JOBS
#define NENT		(NSLOTS * WINDOW)
#define QBITS		28	/* 4 contributors: 30 - 2 */

#define JOB_ID		0x00a99001
#define JOB_TOKEN	0x7a7a1234
#define JOB_SLOT	1
#define FWD_JOB_ID	0x00a99002	/* plain host reduce hop (timing) */
#define FWD_JOB_SLOT	2

#define AGENT		0	/* node id of the agent (rank 0) */
#define TOR		5	/* node id of the ToR aggregator */
#define RACK_INA	2
#define RACK_PLAIN	5
#define NODE_BIT5	6	/* extra node: rack 2, bit 5 (not in the mask) */
#define NODE_BIT31	7	/* extra node: rack 2, bit 31 (partial's bit) */

#define OFF_IP		14
#define OFF_UDP		34
#define OFF_HDR		42
#define OFF_V		RINX_FRAME_HDR_LEN
#define FLEN		RINX_FRAME_MAX

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ---- placements ---------------------------------------------------------- */

struct place {
	const char *name;
	bool sw;
	struct host_bpf *hs;
	struct switch_bpf *ss;
	int prog, jobs, nodes, hops, aggs, stats, sw_stats, result, share;
	__u16 self;			/* aggregator node id */
	__u8 self_mac[6];		/* frames to the aggregator go here */
	struct rinx_spec spec;
	struct rinx_plan plan;
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

static int read_percpu(int fd, int n, __u64 *out)
{
	__u64 *pc = calloc(ncpus, sizeof(*pc));
	__u32 k;
	int i;

	if (!pc)
		return -ENOMEM;
	for (k = 0; k < (__u32)n; k++) {
		if (bpf_map_lookup_elem(fd, &k, pc)) {
			free(pc);
			return -errno;
		}
		out[k] = 0;
		for (i = 0; i < ncpus; i++)
			out[k] += pc[i];
	}
	free(pc);
	return 0;
}

struct counters {
	__u64 st[RINX_STAT_MAX];
	__u64 sw[RINX_SW_STAT_MAX];
};

static int read_counters(const struct place *p, struct counters *c)
{
	int err = read_percpu(p->stats, RINX_STAT_MAX, c->st);

	memset(c->sw, 0, sizeof(c->sw));
	if (!err && p->sw)
		err = read_percpu(p->sw_stats, RINX_SW_STAT_MAX, c->sw);
	return err;
}

static const char *stat_name(int i)
{
	return rinx_stat_name(i);
}

/* ---- set up -------------------------------------------------------------- */

static int put_job(const struct place *p, __u32 id, __u32 slot, __u16 self,
		   __u32 epoch)
{
	struct rinx_job j = {
		.token = JOB_TOKEN, .slot = slot, .epoch = epoch,
		.nblocks = WINDOW, .last_count = RINX_BLOCK_VALUES,
		.nclasses = (__u16)p->plan.nclasses,
		.nnodes = (__u16)p->plan.nnodes, .self = self, .qbits = QBITS,
		.dtype = RINX_W_FIXED, .window = WINDOW,
#ifdef RINX_NO_CONTRIB
		.contrib = RINX_NO_CONTRIB,
#endif
	};

	return bpf_map_update_elem(p->jobs, &id, &j, BPF_ANY);
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
		if (id == NODE_BIT5 || id == NODE_BIT31) {
			node_addr(id, n.mac, &n.ip);
			n.rack = RACK_INA;
			n.bit = id == NODE_BIT5 ? 5 : 31;
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
		p->hs = host_bpf__open();
		if (!p->hs)
			return -errno;
		p->hs->rodata->rinx_port_be = htons(PORT);
		p->hs->rodata->rinx_window = WINDOW;
		err = bpf_map__set_max_entries(p->hs->maps.share, NENT);
		err = err ?: bpf_map__set_max_entries(p->hs->maps.result, NENT);
		err = err ?: bpf_map__set_max_entries(p->hs->maps.aggs, NENT);
		err = err ?: host_bpf__load(p->hs);
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
		p->sw_stats = -1;
	} else {
		__u32 lo = 1, port[2] = { 1, 0 };	/* ifindex, no prog */
		int id;

		p->ss = switch_bpf__open();
		if (!p->ss)
			return -errno;
		memcpy((void *)p->ss->rodata->ina_mac, p->self_mac, 6);
		p->ss->rodata->ina_port_be = htons(PORT);
		p->ss->rodata->ina_window = WINDOW;
		p->ss->rodata->sw_rack = RACK_INA;
		err = bpf_map__set_max_entries(p->ss->maps.aggs, NENT);
		err = err ?: switch_bpf__load(p->ss);
		if (err)
			return err;
		p->prog = bpf_program__fd(p->ss->progs.rinx_switch);
		p->jobs = fd_of(p->ss->maps.jobs);
		p->nodes = fd_of(p->ss->maps.nodes);
		p->hops = fd_of(p->ss->maps.hops);
		p->aggs = fd_of(p->ss->maps.aggs);
		p->stats = fd_of(p->ss->maps.stats);
		p->sw_stats = fd_of(p->ss->maps.sw_stats);
		p->result = p->share = -1;
		/* every node's MAC leaves by lo (ifindex 1): unicast outputs
		 * of the aggregator are redirected */
		err = bpf_map_update_elem(fd_of(p->ss->maps.ports), &lo, port,
					  BPF_ANY);
		for (id = 0; id < 8 && !err; id++) {
			struct rinx_sw_port sp = { .port = lo };
			__u64 key = 0;
			__be32 ip;

			node_addr(id, (__u8 *)&key, &ip);
			err = bpf_map_update_elem(fd_of(p->ss->maps.macs), &key,
						  &sp, BPF_ANY);
		}
		if (err)
			return -errno;
	}
	err = put_plan(p, &p->plan, JOB_SLOT, true);
	err = err ?: put_job(p, JOB_ID, JOB_SLOT, p->self, 1);
	if (!err && !sw) {
		struct rinx_plan q;

		/* host 3 of the same cluster: a plain ADD_FWD reduce hop */
		err = rinx_plan_build(&q, &p->spec, 3);
		err = err ?: put_plan(p, &q, FWD_JOB_SLOT, false);
		err = err ?: put_job(p, FWD_JOB_ID, FWD_JOB_SLOT, 3, 1);
	}
	return err;
}

/* ---- frames -------------------------------------------------------------- */

static __u16 csum16(const void *p, int len)
{
	const __u8 *b = p;
	__u32 sum = 0;
	int i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)b[i] << 8 | b[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static void put16(__u8 *p, __u16 v) { p[0] = v >> 8; p[1] = v; }

static void ip_fix_csum(__u8 *ip)
{
	put16(ip + 10, 0);
	put16(ip + 10, csum16(ip, 20));
}

static struct rinx_hdr *hdr(__u8 *f)
{
	return (struct rinx_hdr *)(f + OFF_HDR);
}

static __s32 *vals(__u8 *f) { return (__s32 *)(f + OFF_V); }

/* A frame from node `from` (MAC and IP of the node table) to the
 * aggregator, header fields as given; payload left zero. */
static void build(const struct place *p, __u8 *f, __u32 job, __u8 type,
		  __u8 step, __u16 from, __u16 sender, __u32 epoch,
		  __u32 block, __s16 exp, __u8 flags)
{
	const struct rinx_node *src = &p->node[from];
	const struct rinx_node *dst = &p->node[p->self];
	__u8 *ip = f + OFF_IP, *udp = f + OFF_UDP;
	struct rinx_hdr *h = hdr(f);

	memset(f, 0, FLEN);
	memcpy(f, p->self_mac, 6);
	memcpy(f + 6, src->mac, 6);
	put16(f + 12, ETH_P_IP);
	ip[0] = 0x45;
	put16(ip + 2, FLEN - OFF_IP);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &src->ip, 4);
	memcpy(ip + 16, &dst->ip, 4);
	ip_fix_csum(ip);
	put16(udp, PORT);
	put16(udp + 2, PORT);
	put16(udp + 4, FLEN - OFF_UDP);
	h->magic = htonl(RINX_MAGIC);
	h->version = RINX_VERSION;
	h->type = type;
	h->flags = flags;
	h->step = step;
	h->job = htonl(job);
	h->token = htonl(JOB_TOKEN);
	h->epoch = htonl(epoch);
	h->block = htonl(block);
	h->nblocks = htonl(WINDOW);
	h->sender = htons(sender);
	h->count = htons(RINX_BLOCK_VALUES);
	h->klass = htons(block % 3);
	h->exp = htons((__u16)exp);
	h->dtype = htons(RINX_W_FIXED);
}

/* Expected rewrite of a frame leaving the aggregator for node `to`. */
static void readdress(const struct place *p, __u8 *f, __u16 to)
{
	const struct rinx_node *self = &p->node[p->self], *next = &p->node[to];

	memcpy(f, next->mac, 6);
	memcpy(f + 6, self->mac, 6);
	memcpy(f + OFF_IP + 12, &self->ip, 4);
	memcpy(f + OFF_IP + 16, &next->ip, 4);
	ip_fix_csum(f + OFF_IP);
	put16(f + OFF_UDP + 6, 0);
	hdr(f)->sender = htons(p->self);
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
	__u32 epoch, seen;
	__s16 exp;
	__u8 flags, done;
	__u8 final;			/* v holds the finished block */
	bool ce;			/* a contribution arrived marked CE */
	__s32 v[RINX_BLOCK_VALUES];
	__s64 exact[RINX_BLOCK_VALUES];	/* unaligned 64-bit sum */
	bool same_exp;			/* every contribution had one exp */
};

enum mret { M_ADD, M_DONE, M_DUP, M_DUP_DONE, M_STALE };

/* What the slot does with (epoch, bit, exp, flags, x) under mask. A slot
 * holds a round once a contributor was added (seen != 0); a round is older
 * than the one held if it is behind in serial-number order. */
static int model_add(struct mslot *m, __u32 epoch, __u32 bit, __u32 mask,
		     __s16 exp, __u8 flags, bool ce, const __s32 *x,
		     bool *reset)
{
	__u32 b = 1U << bit;
	int i;

	*reset = false;
	if (m->epoch != epoch) {
		if (m->seen && (__s32)(epoch - m->epoch) < 0)
			return M_STALE;
		*reset = m->seen && !m->done;
		m->epoch = epoch;
		m->seen = 0;
		m->done = 0;
		m->final = 0;
	}
	if (m->seen & b)
		return m->done ? M_DUP_DONE : M_DUP;
	if (!m->seen) {
		memcpy(m->v, x, sizeof(m->v));
		m->exp = exp;
		m->flags = flags;
		m->ce = false;
		m->same_exp = true;
		for (i = 0; i < RINX_BLOCK_VALUES; i++)
			m->exact[i] = x[i];
	} else {
		__s32 e = m->exp > exp ? m->exp : exp;

		for (i = 0; i < RINX_BLOCK_VALUES; i++) {
			m->v[i] = (__s32)(__u32)(align(m->v[i], e - m->exp) +
						 align(x[i], e - exp));
			m->exact[i] += x[i];
		}
		m->same_exp = m->same_exp && exp == m->exp;
		m->exp = (__s16)e;
		m->flags |= flags;
	}
	m->ce = m->ce || ce;
	m->seen |= b;
	if ((m->seen & mask) == mask) {
		m->done = 1;
		return M_DONE;
	}
	return M_ADD;
}

/* ---- the cases ----------------------------------------------------------- */

enum who {
	W0, W1, W2,	/* the rack's workers, node ids 0 1 2, bits 0 1 2 */
	P,		/* the partial sum from the previous member (node 4) */
	G,		/* the gather from the previous member */
	X_RACK,		/* node 3: another rack (its bit 0 is in the mask) */
	X_BIT5,		/* node 6: rack 2, bit 5 not in the mask */
	X_BIT31,	/* node 7: rack 2, claims the partial's bit */
	X_HUGE,		/* W1's frame with sender id 200 */
	X_SADDR,	/* W1's frame with W2's source IP */
	X_STEP,		/* W1's frame with step 1 */
	X_PSTEP,	/* the partial with step + 1 */
	X_PFROM,	/* the partial from node 3 (not the planned sender) */
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
};

struct tstep {
	int who;
	int ep;		/* frame epoch - case base */
	int jo;		/* agent's job epoch - case base */
	__s16 exp;
	__u8 flags;
	int vk;		/* enum vkind */
	int ex, ex_sw;	/* enum outcome (agent, ToR: O_SAME = as agent) */
	bool reset;	/* AGG_RESET counted too */
	bool ce;	/* the frame arrives marked CE (else ECT(0)) */
	const char *todo;
};

enum only { BOTH, AGENT_ONLY, TOR_ONLY };

struct tcase {
	const char *name;
	__u32 block;
	__u32 base;	/* 0: assigned */
	int only;
	int n;
	struct tstep s[16];
};

#define C(w, x)		{ .who = w, .exp = 3, .ex = x }
#define CE(w, e, x)	{ .who = w, .exp = e, .ex = x, .vk = V_TIES }

static const struct tcase fixed_cases[] = {
	{ "duplicate before completion (class 2, AGG_FWD)", 5, 0, BOTH, 6, {
		C(W0, O_ADD), C(W1, O_ADD), C(W0, O_DUP), C(P, O_ADD),
		C(P, O_DUP), C(W2, O_DONE) } },
	{ "duplicate before completion (class 1, AGG_FINISH)", 4, 0, BOTH, 5, {
		C(P, O_ADD), C(W2, O_ADD), C(W2, O_DUP), C(W0, O_ADD),
		C(W1, O_DONE) } },
	{ "duplicate before completion (class 0, no partial)", 3, 0, BOTH, 4, {
		C(W2, O_ADD), C(W2, O_DUP), C(W1, O_ADD), C(W0, O_DONE) } },
	{ "retransmission into a finished AGG_FINISH slot", 1, 0, BOTH, 7, {
		C(W0, O_ADD), C(P, O_ADD), C(W2, O_ADD), C(W1, O_DONE),
		C(W1, O_RESEND), C(W2, O_RESEND), C(P, O_REEMIT) } },
	/* the agent holds the finished block itself: its own share again is
	 * a duplicate (a ToR sends it back to worker 0) */
	{ "the agent's own retransmission (AGG_FINISH)", 7, 0, BOTH, 6, {
		C(W1, O_ADD), C(W2, O_ADD), C(P, O_ADD), C(W0, O_DONE),
		{ .who = W0, .exp = 3, .ex = O_DUP, .ex_sw = O_RESEND },
		{ .who = W0, .exp = 3, .ex = O_DUP, .ex_sw = O_RESEND } } },
	{ "retransmission into a finished AGG_FWD slot", 2, 0, BOTH, 7, {
		C(W2, O_ADD), C(W1, O_ADD), C(W0, O_ADD), C(P, O_DONE),
		C(W1, O_REEMIT), C(P, O_REEMIT), C(W0, O_REEMIT) } },
	{ "retransmission into a finished slot (class 0)", 9, 0, BOTH, 4, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE), C(W2, O_REEMIT) } },
	{ "after the gather passed (class 0): a worker gets the finished "
	  "block, a partial is dropped", 6, 0, BOTH, 6, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE), C(G, O_MCAST),
		C(W1, O_RESEND),
		{ .who = W0, .exp = 3, .ex = O_DUP, .ex_sw = O_RESEND } } },
	{ "after the gather passed (class 2): a late partial is dropped", 11,
	  0, BOTH, 7, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_ADD), C(P, O_DONE),
		C(G, O_MCAST), C(P, O_DUP), C(W2, O_RESEND) } },
	{ "stale: the slot holds the next round (incomplete)", 5, 0, BOTH, 5, {
		{ .who = W0, .ep = 1, .exp = 3, .ex = O_ADD },
		C(W1, O_STALE), C(P, O_STALE),
		{ .who = W1, .ep = 1, .exp = 3, .ex = O_ADD },
		{ .who = W1, .ep = -5, .exp = 3, .ex = O_JSTALE,
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
	{ "slot reuse: round e+1 before the agent's trainer gets there", 6, 0,
	  BOTH, 8, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_DONE),
		{ .who = W0, .ep = 1, .exp = 1, .ex = O_ADD },
		{ .who = W1, .ep = 1, .exp = 1, .ex = O_ADD },
		{ .who = W2, .ep = 1, .exp = 1, .ex = O_DONE },
		{ .who = W2, .ep = 2, .exp = 1, .ex = O_JSTALE,
		  .ex_sw = O_ADD },
		{ .who = W2, .ep = 2, .jo = 1, .exp = 1, .ex = O_ADD,
		  .ex_sw = O_DUP } } },
	{ "reset: an incomplete round taken over by the next", 2, 0, BOTH, 8, {
		C(W0, O_ADD), C(W1, O_ADD),
		{ .who = W2, .ep = 1, .exp = 6, .ex = O_ADD, .reset = true },
		{ .who = W0, .ep = 1, .exp = 6, .ex = O_ADD },
		C(P, O_STALE),
		{ .who = W1, .ep = 1, .jo = 1, .exp = 6, .ex = O_ADD },
		{ .who = P, .ep = 1, .jo = 1, .exp = 6, .ex = O_DONE },
		{ .who = W2, .ep = 0, .jo = 1, .exp = 3, .ex = O_JSTALE,
		  .ex_sw = O_STALE } } },
	{ "reset: a round far ahead takes over (class 1)", 1, 0, TOR_ONLY, 5, {
		C(P, O_ADD),
		{ .who = W0, .ep = 1000, .exp = 2, .ex = O_ADD, .reset = true },
		{ .who = W1, .ep = 1000, .exp = 2, .ex = O_ADD },
		{ .who = W2, .ep = 1000, .exp = 2, .ex = O_ADD },
		{ .who = P, .ep = 1000, .exp = 2, .ex = O_DONE } } },
	{ "senders: other rack, bit out of mask, bit 31, ids, IP, step", 5, 0,
	  BOTH, 13, {
		C(X_RACK, O_SENDER), C(W0, O_ADD), C(X_BIT5, O_SENDER),
		C(X_BIT31, O_SENDER), C(X_HUGE, O_SENDER),
		C(X_SADDR, O_SENDER), C(X_STEP, O_SENDER),
		C(X_PSTEP, O_SENDER), C(X_PFROM, O_SENDER), C(W1, O_ADD),
		C(P, O_ADD), C(X_RACK, O_SENDER), C(W2, O_DONE) } },
	{ "senders at AGG_FINISH", 7, 0, BOTH, 6, {
		C(X_BIT5, O_SENDER), C(X_SADDR, O_SENDER), C(W1, O_ADD),
		C(X_PSTEP, O_SENDER), C(X_PFROM, O_SENDER),
		C(X_STEP, O_SENDER) } },
	{ "ECN: a consumed contribution's CE leaves with the sum", 5, 0, BOTH,
	  4, {
		{ .who = W0, .exp = 3, .ex = O_ADD, .ce = true },
		C(W1, O_ADD), C(P, O_ADD), C(W2, O_DONE) } },
	{ "ECN: CE on the partial sum, AGG_FINISH", 4, 0, BOTH, 4, {
		C(W2, O_ADD), { .who = P, .exp = 3, .ex = O_ADD, .ce = true },
		C(W0, O_ADD), C(W1, O_DONE) } },
	{ "ECN: an unmarked round after a marked one leaves unmarked", 5, 0,
	  BOTH, 8, {
		{ .who = W0, .exp = 3, .ex = O_ADD, .ce = true },
		C(W1, O_ADD), C(P, O_ADD), C(W2, O_DONE),
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
	{ "alignment: larger exponent last, shifts 1..6", 4, 0, BOTH, 4, {
		CE(W2, -6, O_ADD), CE(W1, -5, O_ADD), CE(P, -1, O_ADD),
		CE(W0, 0, O_DONE) } },
	{ "alignment: shifts 30, 31 and 32 of the slot", 2, 0, BOTH, 4, {
		CE(W0, -20, O_ADD), CE(W1, 10, O_ADD), CE(P, 41, O_ADD),
		CE(W2, 73, O_DONE) } },
	{ "alignment: contributions shifted by 31, 32 and 40", 1, 0, BOTH, 4, {
		CE(W1, 40, O_ADD), CE(W0, 9, O_ADD), CE(W2, 8, O_ADD),
		CE(P, 0, O_DONE) } },
	{ "alignment: an all-zero block (RINX_EXP_ZERO) first", 1, 0, BOTH, 4, {
		{ .who = W0, .exp = RINX_EXP_ZERO, .vk = V_ZERO, .ex = O_ADD },
		CE(P, -3, O_ADD), CE(W2, -2, O_ADD), CE(W1, -3, O_DONE) } },
	{ "alignment: an all-zero block last, extreme exponents", 8, 0,
	  BOTH, 4, {
		CE(W1, 32767, O_ADD), CE(W2, -32767, O_ADD), CE(P, 32760, O_ADD),
		{ .who = W0, .exp = RINX_EXP_ZERO, .vk = V_ZERO,
		  .ex = O_DONE } } },
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
	{ "epoch wrap: round 0 takes over a done round 0xffffffff", 5,
	  0xffffffffu, AGENT_ONLY, 5, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_ADD), C(P, O_DONE),
		{ .who = W0, .ep = 1, .exp = 3, .ex = O_ADD } } },
	{ "epoch wrap: a late 0xffffffff into a slot holding round 0", 2,
	  0xffffffffu, AGENT_ONLY, 6, {
		C(W0, O_ADD), C(W1, O_ADD), C(W2, O_ADD), C(P, O_DONE),
		{ .who = W0, .ep = 1, .exp = 3, .ex = O_ADD },
		{ .who = W1, .ep = 0, .exp = 3, .ex = O_STALE } } },
	{ "epoch 0 at the ToR (after the wrap): taken", 2, 0xffffffffu,
	  TOR_ONLY, 1, {
		{ .who = W0, .ep = 1, .exp = 3, .ex = O_ADD } } },
};

/* generated: every order of the 4 (or 3) contributors of classes 0, 1, 2 */
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
				t->s[i].ex = i == nw - 1 ? O_DONE : O_ADD;
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
	LIBBPF_OPTS(bpf_test_run_opts, o);

	o.data_in = in;
	o.data_size_in = FLEN;
	o.data_out = out;
	o.data_size_out = FLEN + 256;
	o.repeat = 1;
	if (bpf_prog_test_run_opts(prog, &o))
		return -errno;
	*retval = o.retval;
	if (size_out)
		*size_out = o.data_size_out;
	if (duration)
		*duration = o.duration;
	return 0;
}

static int stat_of(int o)
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
	case O_REEMIT: return RINX_STAT_AGG_REEMIT;
	default: return RINX_STAT_DROP_BOUNDS;
	}
}

static const char *oname(int o)
{
	static const char *n[] = { "-", "ADD", "DONE", "DUP", "RESEND",
				   "STALE", "SENDER", "NOROUTE", "MCAST",
				   "JOB_STALE", "BOUNDS", "REEMIT" };

	return o >= 0 && o < (int)ARRAY_SIZE(n) ? n[o] : "?";
}

static const char *wname(int w)
{
	static const char *n[] = { "w0", "w1", "w2", "partial", "gather",
				   "node3(rack5)", "node6(bit5)",
				   "node7(bit31)", "sender200", "w1/ip-of-w2",
				   "w1/step1", "partial/step+1",
				   "partial-from-node3" };

	return n[w];
}

struct stepctx {
	struct place *p;
	const struct tcase *c;
	struct mslot *m;
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

static void run_step(struct stepctx *x)
{
	struct place *p = x->p;
	const struct tstep *s = &x->c->s[x->si];
	struct mslot *m = x->m, before = *m;
	__u32 block = x->c->block, klass = block % 3, epoch = x->base + s->ep;
	__u32 idx = JOB_SLOT * WINDOW + block, retval = 0, size = 0, mask;
	int ex = p->sw && s->ex_sw ? s->ex_sw : s->ex, type, w = s->who, i;
	__u16 from = 0, sender;
	const struct rinx_hop *hop;
	struct counters c0, c1;
	struct rinx_slot r0 = {}, r1 = {}, rw = {};
	struct rinx_agg ag = {};
	__s32 x_v[RINX_BLOCK_VALUES];
	bool reset = false, ok = true, frame_ok, slot_ok, res_ok = true;
	bool cnt_ok = true, stores = false, model_ok = true;
	__u8 step = 0, bit = 0;
	int mret = -1, err, want_ret;
	char what[200];

	/* the frame */
	switch (w) {
	case P: case X_PSTEP: case X_PFROM:
		type = RINX_T_REDUCE;
		break;
	case G:
		type = RINX_T_GATHER;
		break;
	default:
		type = RINX_T_CONTRIB;
	}
	hop = &p->plan.hops[klass][type - 1];
	switch (w) {
	case W0: case W1: case W2:
		from = w;
		break;
	case X_RACK: case X_PFROM:
		from = 3;
		break;
	case X_BIT5:
		from = NODE_BIT5;
		break;
	case X_BIT31:
		from = NODE_BIT31;
		break;
	case X_HUGE: case X_SADDR: case X_STEP:
		from = 1;
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
	build(p, fin, JOB_ID, type, step, from, sender, epoch, block, s->exp,
	      s->flags);
	fin[OFF_IP + 1] = s->ce ? RINX_ECN_CE : RINX_ECN_ECT0;
	ip_fix_csum(fin + OFF_IP);
	if (w == X_SADDR) {
		memcpy(fin + OFF_IP + 12, &p->node[2].ip, 4);
		ip_fix_csum(fin + OFF_IP);
	}
	gen_vals(x_v, s->vk);
	memcpy(vals(fin), x_v, RINX_BLOCK_BYTES);

	/* the model */
	mask = hop->mask;
	if (ex == O_ADD || ex == O_DONE || ex == O_DUP || ex == O_RESEND ||
	    ex == O_STALE || ex == O_REEMIT) {
		int want_m;

		bit = type == RINX_T_CONTRIB ? p->node[from].bit :
					       RINX_PARTIAL_BIT;
		mret = model_add(m, epoch, bit, mask, s->exp, s->flags, s->ce,
				 x_v, &reset);
		want_m = ex == O_ADD ? M_ADD : ex == O_DONE ? M_DONE :
			 ex == O_STALE ? M_STALE :
			 ex == O_RESEND || ex == O_REEMIT ? M_DUP_DONE : -1;
		if (ex == O_DUP)
			want_m = m->done ? M_DUP_DONE : M_DUP;
		/* the rules: a worker's duplicate into a slot holding the
		 * finished block gets it back (not the agent's own: it holds
		 * the block); a partial duplicate there is
		 * dropped where the block finished elsewhere; any other
		 * duplicate into a finished slot is sent on again */
		if (mret == M_DONE && hop->action == RINX_A_AGG_FINISH)
			m->final = 1;
		if (mret != want_m || reset != s->reset ||
		    (ex == O_RESEND) != (mret == M_DUP_DONE && m->final &&
					 type == RINX_T_CONTRIB &&
					 (p->sw || from != p->self)) ||
		    (ex == O_REEMIT) != (mret == M_DUP_DONE && !(m->final &&
					 (type == RINX_T_CONTRIB ||
					  hop->action == RINX_A_AGG_FWD)))) {
			model_ok = false;
			tap_diag("  table and model disagree at step %d "
				 "(model %d reset %d)", x->si, mret, reset);
		}
	}

	/* the run */
	err = p->sw ? 0 : put_job(p, JOB_ID, JOB_SLOT, p->self,
				  x->base + s->jo);
	if (!p->sw && !err)
		err = bpf_map_lookup_elem(p->result, &idx, &r0) ? -errno : 0;
	err = err ?: read_counters(p, &c0);
	err = err ?: run_once(p->prog, fin, fout, &retval, &size, NULL);
	err = err ?: read_counters(p, &c1);
	err = err ?: (bpf_map_lookup_elem_flags(p->aggs, &idx, &ag, BPF_F_LOCK) ?
		      -errno : 0);
	if (!p->sw && !err)
		err = bpf_map_lookup_elem(p->result, &idx, &r1) ? -errno : 0;
	snprintf(what, sizeof(what), "%s: %s: step %d: %s epoch %+d -> %s%s",
		 p->name, x->c->name, x->si, wname(w), s->ep, oname(ex),
		 s->reset ? " +RESET" : "");
	if (err) {
		check(s->todo, 0, "%s: test run: %s", what, strerror(-err));
		return;
	}

	/* expected action and frame */
	memcpy(fwant, fin, FLEN);
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
			want_ret = p->sw ? XDP_REDIRECT : XDP_TX;
		} else {
			hdr(fwant)->type = RINX_T_GATHER;
			readdress(p, fwant, hop->to);
			to_group(fwant, hop->rack, hop->to != p->self);
			want_ret = p->sw ? XDP_REDIRECT : XDP_TX;
			stores = true;
		}
		break;
	case O_RESEND:
		memcpy(vals(fwant), m->v, RINX_BLOCK_BYTES);
		hdr(fwant)->exp = htons((__u16)m->exp);
		hdr(fwant)->flags = m->flags;
		hdr(fwant)->type = RINX_T_GATHER;
		hdr(fwant)->step = hop->action == RINX_A_AGG_FINISH ?
				   hop->out_step : hop->out_step + 1;
		readdress(p, fwant, from);
		want_ret = p->sw ? XDP_REDIRECT : XDP_TX;
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
		want_ret = p->sw ? XDP_REDIRECT : XDP_TX;
		stores = !p->sw;
		break;
	default:
		want_ret = XDP_DROP;
	}
	frame_ok = size == FLEN && !memcmp(fout, fwant, FLEN) &&
		   csum16(fout + OFF_IP, 20) == 0;
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
	if (ex == O_DONE && m->same_exp)
		for (i = 0; i < RINX_BLOCK_VALUES; i++)
			if ((__s64)vals(fout)[i] != m->exact[i])
				frame_ok = false;

	/* the slot: contents of the model (after a dropped frame: as before
	 * the step; MCAST and sender drops never touch it) */
	if (mret < 0 && ex != O_MCAST)
		*m = before;
	slot_ok = ag.epoch == m->epoch && ag.seen == m->seen &&
		  ag.done == m->done && ag.final == m->final && !ag.resv &&
		  (!m->seen || ag.ce == m->ce) && !ag.resv8[0] &&
		  !ag.resv8[1];
	if (m->seen)
		slot_ok = slot_ok && ag.exp == m->exp && ag.flags == m->flags &&
			  !memcmp(ag.v, m->v, sizeof(m->v));

	/* the result map entry (agent) */
	if (!p->sw) {
		rw = r0;
		if (stores) {
			const struct rinx_hdr *h = hdr(fwant);

			rw.epoch = epoch;
			rw.exp = (__s16)ntohs(h->exp);
			rw.flags = h->flags;
			rw.count = ntohs(h->count);
			memcpy(rw.v, vals(fwant), RINX_BLOCK_BYTES);
		}
		res_ok = !memcmp(&rw, &r1, sizeof(rw));
	}

	/* counters */
	for (i = 0; i < RINX_STAT_MAX; i++) {
		__u64 want = i == RINX_STAT_RX || i == stat_of(ex) ||
			     (i == RINX_STAT_AGG_RESET && s->reset) ||
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
					     hop->action == RINX_A_AGG_FWD) ?
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
			tap_diag("  slot: epoch %u seen %#x done %u exp %d "
				 "flags %#x; want epoch %u seen %#x done %u "
				 "exp %d flags %#x", ag.epoch, ag.seen, ag.done,
				 ag.exp, ag.flags, m->epoch, m->seen, m->done,
				 m->exp, m->flags);
		if (!res_ok)
			tap_diag("  result entry: epoch %u exp %d (want "
				 "epoch %u exp %d)", r1.epoch, r1.exp,
				 rw.epoch, rw.exp);
	}
	/* the program is the truth from here on: keep later steps
	 * meaningful after a known bug */
	if (!ok && s->todo) {
		m->epoch = ag.epoch;
		m->seen = ag.seen;
		m->done = ag.done;
		m->exp = ag.exp;
		m->flags = ag.flags;
		memcpy(m->v, ag.v, sizeof(m->v));
	}
}

static void run_case(struct place *p, const struct tcase *c, __u32 base)
{
	struct stepctx x = { .p = p, .c = c, .base = base };
	__u32 idx = JOB_SLOT * WINDOW + c->block;
	struct rinx_agg zero = {};
	struct mslot *m = calloc(1, sizeof(*m));

	if (!m)
		exit(1);
	/* every case starts from an unused slot */
	if (bpf_map_update_elem(p->aggs, &idx, &zero, BPF_ANY)) {
		check(NULL, 0, "%s: %s: clear slot", p->name, c->name);
		free(m);
		return;
	}
	x.m = m;
	for (x.si = 0; x.si < c->n; x.si++)
		run_step(&x);
	free(m);
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
	const int mine[2][2] = { { W0, W1 }, { W2, P } };
	cpu_set_t set;
	__u32 r;
	int bi, k, i;

	CPU_ZERO(&set);
	CPU_SET(a->tid, &set);
	cc->pinned[a->tid] = !sched_setaffinity(0, sizeof(set), &set);
	for (r = 0; r < CC_ROUNDS; r++) {
		__u32 epoch = CC_BASE + r;
		__s16 exp = (__s16)(r % 7) - 3;

		if (a->tid == 0 && !p->sw &&
		    put_job(p, JOB_ID, JOB_SLOT, p->self, epoch))
			__atomic_fetch_add(&cc->errs, 1, __ATOMIC_RELAXED);
		pthread_barrier_wait(&cc->bar);
		for (bi = 0; bi < CC_NB; bi++) {
			int b = a->tid ? CC_NB - 1 - bi : bi;
			__u32 block = cc_blocks[b];

			for (k = 0; k < 2; k++) {
				int w = mine[a->tid][(k + r) & 1];
				const struct rinx_hop *hop =
					&p->plan.hops[block % 3]
					[(w == P ? RINX_T_REDUCE :
					  RINX_T_CONTRIB) - 1];
				__u32 ret = 0;

				build(p, in, JOB_ID, w == P ? RINX_T_REDUCE :
				      RINX_T_CONTRIB, w == P ? hop->step : 0,
				      w == P ? hop->from : w,
				      w == P ? hop->from : w, epoch, block,
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
		__u64 want = i == RINX_STAT_RX ? 4ULL * CC_ROUNDS * CC_NB :
			     i == RINX_STAT_AGG_ADD ? 3ULL * CC_ROUNDS * CC_NB :
			     i == RINX_STAT_AGG_DONE ? 1ULL * CC_ROUNDS * CC_NB :
			     0;

		if (c1.st[i] - c0.st[i] != want) {
			tap_diag("  %s: +%llu, want +%llu", stat_name(i),
				 (unsigned long long)(c1.st[i] - c0.st[i]),
				 (unsigned long long)want);
			cnt_ok = false;
		}
	}
	tap_diag("%s: %d rounds x %d blocks x 4 contributions on 2 CPUs "
		 "(pinned %ld/%ld) in %.0f ms; completions by CPU0 %ld, CPU1 "
		 "%ld", p->name, CC_ROUNDS, CC_NB, cc->pinned[0], cc->pinned[1],
		 (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
		 cc->by_thread[0], cc->by_thread[1]);
	check(NULL, !cc->errs && once == CC_ROUNDS * CC_NB && !never && !twice,
	      "%s: concurrency: every (round, block) completed exactly once "
	      "(%ld once, %ld never, %ld more than once, %ld errors)",
	      p->name, once, never, twice, cc->errs);
	check(NULL, !cc->bad_sum && !cc->bad_ret,
	      "%s: concurrency: every completed sum exact (%ld bad sums, %ld "
	      "bad actions/exponents)", p->name, cc->bad_sum, cc->bad_ret);
	check(NULL, cnt_ok, "%s: concurrency: counters (3 ADD + 1 DONE per "
	      "block and round, nothing else)", p->name);
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
	struct rinx_agg zero = {};
	struct counters c0, c1;
	long bad = 0;
	int w;

	if (!tb) {
		check(NULL, 0, "%s: timing: allocate", p->name);
		return;
	}
	bpf_map_update_elem(p->aggs, &idx, &zero, BPF_ANY);
	rng = 0x5eed;
	build(p, fin, JOB_ID, RINX_T_CONTRIB, 0, 0, 0, 1, block, 0, 0);
	gen_vals(vals(fin), V_RAND);
	for (i = 0; i < T_N; i++)
		bad += timed(efd, fin, base, &ret) || ret != XDP_DROP;
	read_counters(p, &c0);
	for (i = 0; i < T_N; i++) {
		__u32 epoch = T_BASE + i;

		if (!p->sw)
			put_job(p, JOB_ID, JOB_SLOT, p->self, epoch);
		for (w = W0; w <= P; w++) {
			build(p, fin, JOB_ID, w == P ? RINX_T_REDUCE :
			      RINX_T_CONTRIB, w == P ? hop->step : 0,
			      w == P ? hop->from : w, w == P ? hop->from : w,
			      epoch, block, 0, 0);
			gen_vals(vals(fin), V_RAND);
			bad += timed(p->prog, fin, w == W0 ? first :
				     w == P ? done : add, &ret) ||
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
	report("AGG_DONE completing (add, copy out, send)", done, base);
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
			sh->epoch = 7;
			sh->count = RINX_BLOCK_VALUES;
			gen_vals(sh->v, V_RAND);
			bpf_map_update_elem(p->share, &sidx, sh, BPF_ANY);
			put_job(p, FWD_JOB_ID, FWD_JOB_SLOT, 3, 7);
			hp.self = 3;
			node_addr(3, hp.self_mac, &(__be32){ 0 });
			build(&hp, fin, FWD_JOB_ID, RINX_T_REDUCE, fh->step,
			      fh->from, fh->from, 7, 0, 0, 0);
			gen_vals(vals(fin), V_RAND);
			read_counters(p, &f0);
			for (i = 0; i < T_N; i++)
				bad += timed(p->prog, fin, fwd, &ret) ||
				       ret != XDP_TX;
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
		put_job(p, FWD_JOB_ID, FWD_JOB_SLOT, 3, 1);
	}
	{
		/* and for the aggregator: every repetition after the first
		 * is a duplicate */
		LIBBPF_OPTS(bpf_test_run_opts, o);
		struct counters d0, d1;

		if (!p->sw)
			put_job(p, JOB_ID, JOB_SLOT, p->self, T_BASE + T_N);
		build(p, fin, JOB_ID, RINX_T_CONTRIB, 0, 1, 1, T_BASE + T_N,
		      block, 0, 0);
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
	check(NULL, !bad && c1.st[RINX_STAT_AGG_ADD] - c0.st[RINX_STAT_AGG_ADD]
	      == 3 * T_N && c1.st[RINX_STAT_AGG_DONE] -
	      c0.st[RINX_STAT_AGG_DONE] == T_N,
	      "%s: timed runs did what they were timed for (%ld wrong)",
	      p->name, bad);
}

/* ---- the plan the cases assume ------------------------------------------ */

static void check_plan(const struct place *p)
{
	const struct rinx_hop (*h)[RINX_HOP_TYPES] = p->plan.hops;
	const __u32 full = 0x80000007;
	bool ok;

	ok = p->plan.nclasses == 3 &&
	     h[0][RINX_T_CONTRIB - 1].action == RINX_A_AGG_FWD &&
	     h[0][RINX_T_CONTRIB - 1].mask == 0x7 &&
	     h[0][RINX_T_REDUCE - 1].action == RINX_A_NONE &&
	     h[1][RINX_T_CONTRIB - 1].action == RINX_A_AGG_FINISH &&
	     h[1][RINX_T_CONTRIB - 1].mask == full &&
	     h[1][RINX_T_REDUCE - 1].action == RINX_A_AGG_FINISH &&
	     h[1][RINX_T_REDUCE - 1].mask == full &&
	     h[1][RINX_T_REDUCE - 1].from == 4 &&
	     h[2][RINX_T_CONTRIB - 1].action == RINX_A_AGG_FWD &&
	     h[2][RINX_T_CONTRIB - 1].mask == full &&
	     h[2][RINX_T_REDUCE - 1].action == RINX_A_AGG_FWD &&
	     h[2][RINX_T_REDUCE - 1].mask == full &&
	     h[2][RINX_T_REDUCE - 1].to == 3 &&
	     h[0][RINX_T_GATHER - 1].action == RINX_A_MCAST_FWD &&
	     h[2][RINX_T_GATHER - 1].action == RINX_A_MCAST_END &&
	     h[1][RINX_T_GATHER - 1].action == RINX_A_NONE &&
	     p->node[0].bit == 0 && p->node[1].bit == 1 &&
	     p->node[2].bit == 2 && p->node[0].rack == RACK_INA &&
	     p->node[3].rack == RACK_PLAIN;
	check(NULL, ok, "%s: plan (rinx_plan_build): class 0 AGG_FWD mask 0x7, "
	      "class 1 AGG_FINISH and class 2 AGG_FWD mask %#x, gathers "
	      "MCAST_FWD/MCAST_END", p->name, full);
}

int main(void)
{
	int i, ci, efd;
	__u32 base;

	if (geteuid())
		tap_skip_all("needs root (BPF_PROG_TEST_RUN)");
	if (!getenv("RINX_TEST_VERBOSE"))
		libbpf_set_print(NULL);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		tap_skip_all("cannot count CPUs");
	gen_cases();

	for (i = 0; i < 2; i++) {
		int err = open_place(&places[i], i == 1);

		if (!check(NULL, !err, "%s: load %s, fill jobs/nodes/hops",
			   places[i].name, i ? "rinx_switch (ina_mac set)" :
			   "rinx_host (aggs resized)")) {
			tap_diag("  %s", strerror(err < 0 ? -err : err));
			tap_plan(tap_n);
			return tap_done();
		}
		check_plan(&places[i]);
	}
	for (i = 0; i < 2; i++) {
		struct place *p = &places[i];

		base = 1000;
		for (ci = 0; ci < ncases; ci++, base += 100) {
			const struct tcase *c = &cases[ci];

			if ((c->only == AGENT_ONLY && p->sw) ||
			    (c->only == TOR_ONLY && !p->sw))
				continue;
			rng = 0x9e3779b9u * (ci + 1) + i;
			run_case(p, c, c->base ? c->base : base);
		}
	}
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

	tap_plan(tap_n);
	host_bpf__destroy(places[0].hs);
	switch_bpf__destroy(places[1].ss);
	free(cases);
	return tap_done();
}
