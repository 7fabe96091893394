// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ps-ina as ATP designs it, through BPF_PROG_TEST_RUN: the ToR's bounded
 * pool of aggregator slots (bpf/ina.bpf.h ina_pool, bpf/agg.bpf.h
 * rinx_pool_add) in the testbed switch, and the parameter server that sums
 * coverages (RINX_HOP_COVER, rinx_agg_add) in the host program. The tables
 * are the ones the planner writes (user/plan/plan.c, rinx_plan_build):
 *
 *   rack 5 (plain): rank 3 = the PS      rack 2 (INA ToR, node 4): ranks 0 1 2
 *
 *   ToR: AGG_FWD {0,1,2} -> PS, a pool of POOL slots hashed by (job, block)
 *   PS:  AGG_FINISH {0,1,2} + own share, by coverage (partials from {4}),
 *        the result to every host (fabric group)
 *
 * Every step is one frame and one TAP line that checks the verdict, the
 * whole output (type, sender, coverage, flags, addresses, every value), the
 * exact delta of every counter (the aggregator's and, at the ToR, the
 * switch's), and the slot read back with BPF_F_LOCK. Outputs of the ToR
 * that go to the PS are run through the PS next, so the chain of the
 * design is checked end to end: collision -> share passed on raw with its
 * coverage; full set -> the sum with the full coverage, slot freed; the
 * stuck case (a slot holding part of a block whose other share passed on)
 * -> the share sent again (RINX_F_RESEND) flushes the partial with its
 * coverage; the PS finishes every block exactly (int32, results compared
 * with sums computed here). Then the PS alone: overlap refused and counted,
 * duplicates, bad coverages, a worker's cover field ignored.
 */
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uapi/rinx.h"
#include "bpf/switch_kern_user.h"
#include "user/ctl.h"
#include "user/plan/plan.h"
#include "host.skel.h"
#include "switch.skel.h"
#include "selftests/lib/testlib.h"

#define WINDOW		16
#define POOL		4
#define PORT		47377
#define NENT		(RINX_DEFAULT_JOBS * WINDOW)
#define JOB_ID		0x00a7b001
#define JOB_TOKEN	0xa7b1c3d5600d1deaULL
#define SLOT		1
#define ROUND		7

#define PS		3	/* rank of the parameter server */
#define TOR		4	/* node id of the rack's aggregator */
#define RACK_INA	2
#define RACK_PLAIN	5

#define OFF_IP		14
#define OFF_UDP		34
#define OFF_HDR		42
#define OFF_V		RINX_FRAME_HDR_LEN
#define FLEN		RINX_FRAME_MAX

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static int ncpus;
static struct rinx_spec spec;
static struct rinx_plan plan_ps, plan_tor;

struct prog {
	int prog, jobs, nodes, hops, aggs, stats, sw_stats, result, share;
};

static struct prog tor, ps;

static void node_addr(int id, __u8 *mac, __be32 *ip)
{
	const __u8 m[6] = { 0x02, 0x72, 0x78, 0x0b, 0x00, (__u8)(id + 1) };

	memcpy(mac, m, 6);
	*ip = htonl(0x0a0b0001 + id);
}

static void make_spec(void)
{
	int r;

	rinx_spec_init(&spec);
	spec.port = PORT;
	spec.window = WINDOW;
	spec.plan = RINX_PLAN_PSINA;
	spec.nhosts = 4;
	for (r = 0; r < 4; r++) {
		struct rinx_spec_host *h = &spec.hosts[r];

		snprintf(h->name, sizeof(h->name), "h%d", r);
		h->rank = r;
		h->rack = r == PS ? RACK_PLAIN : RACK_INA;
		node_addr(r, h->mac, &h->ip);
	}
	/* the plain rack first: the PS is picked from it */
	spec.nracks = 2;
	spec.racks[0].id = RACK_PLAIN;
	spec.racks[0].ina = RINX_INA_NONE;
	spec.racks[1].id = RACK_INA;
	spec.racks[1].ina = RINX_INA_SWITCH;
	spec.racks[1].pool = POOL;
	snprintf(spec.racks[1].name, sizeof(spec.racks[1].name), "agg2");
	node_addr(TOR, spec.racks[1].mac, &spec.racks[1].ip);
}

/* ---- counters ------------------------------------------------------------ */

struct counters {
	__u64 st[RINX_STAT_MAX];
	__u64 sw[RINX_SW_STAT_MAX];
};

static int read_counters(const struct prog *p, struct counters *c)
{
	int err = tl_percpu_sum(p->stats, RINX_STAT_MAX, c->st);

	memset(c->sw, 0, sizeof(c->sw));
	if (!err && p->sw_stats >= 0)
		err = tl_percpu_sum(p->sw_stats, RINX_SW_STAT_MAX, c->sw);
	return err;
}

/* ---- set up -------------------------------------------------------------- */

static int put_tables(const struct prog *p, const struct rinx_plan *pl,
		      __u16 self)
{
	struct rinx_job j = {
		.token = JOB_TOKEN, .slot = SLOT, .round = ROUND,
		.nblocks = WINDOW, .last_count = RINX_BLOCK_VALUES,
		.nclasses = (__u16)pl->nclasses, .nnodes = (__u16)pl->nnodes,
		.self = self, .qbits = 28, .dtype = RINX_W_INT32,
		.window = WINDOW, .plen = (__u16)pl->plen,
		.bval = RINX_BLOCK_VALUES,
	};
	__u32 key, id = JOB_ID;
	int err = 0, k, t;

	memcpy(j.cmap, pl->cmap, sizeof(j.cmap));
	memset(j.start_to, 0xff, sizeof(j.start_to));
	for (k = 0; k < RINX_MAX_NODES; k++) {
		struct rinx_node n = {};

		if (k < pl->nnodes)
			n = pl->nodes[k];
		key = SLOT * RINX_MAX_NODES + k;
		err |= bpf_map_update_elem(p->nodes, &key, &n, BPF_ANY);
	}
	for (k = 0; k < RINX_MAX_CLASSES; k++)
		for (t = 1; t <= RINX_HOP_TYPES; t++) {
			struct rinx_hop h = {};

			if (k < pl->nclasses)
				h = pl->hops[k][t - 1];
			key = RINX_HOP_INDEX(SLOT, k, t);
			err |= bpf_map_update_elem(p->hops, &key, &h, BPF_ANY);
		}
	err |= bpf_map_update_elem(p->jobs, &id, &j, BPF_ANY);
	return err ? -EIO : 0;
}

static __s32 val(int w, __u32 b, int i)
{
	return (w + 1) * 100000 + (int)b * 1000 + i;
}

static int open_all(void)
{
	struct host_bpf *hs;
	struct switch_bpf *ss;
	__u32 lo = 1, port[2] = { 1, 0 }, b;
	__u8 mac[6];
	__be32 ip;
	int err, id;

	node_addr(TOR, mac, &ip);
	ss = tl_switch_load(&(struct tl_switch_opts){
		.ina_mac = mac, .port = PORT, .window = WINDOW,
		.rack = RACK_INA, .naggs = NENT }, &err);
	if (err)
		return err;
	tor.prog = bpf_program__fd(ss->progs.rinx_switch);
	tor.jobs = bpf_map__fd(ss->maps.jobs);
	tor.nodes = bpf_map__fd(ss->maps.nodes);
	tor.hops = bpf_map__fd(ss->maps.hops);
	tor.aggs = bpf_map__fd(ss->maps.aggs);
	tor.stats = bpf_map__fd(ss->maps.stats);
	tor.sw_stats = bpf_map__fd(ss->maps.sw_stats);
	tor.result = tor.share = -1;
	/* every node's MAC leaves by lo: unicast outputs are redirected */
	err = bpf_map_update_elem(bpf_map__fd(ss->maps.ports), &lo, port,
				  BPF_ANY);
	for (id = 0; id <= TOR && !err; id++) {
		struct rinx_sw_port sp = { .port = lo };
		__u64 key = 0;

		node_addr(id, (__u8 *)&key, &ip);
		err = bpf_map_update_elem(bpf_map__fd(ss->maps.macs), &key,
					  &sp, BPF_ANY);
	}
	if (err)
		return -errno;

	hs = tl_host_load(&(struct tl_host_opts){
		.port = PORT, .window = WINDOW, .nshare = NENT,
		.naggs = NENT }, &err);
	if (err)
		return err;
	ps.prog = bpf_program__fd(hs->progs.rinx_host);
	ps.jobs = bpf_map__fd(hs->maps.jobs);
	ps.nodes = bpf_map__fd(hs->maps.nodes);
	ps.hops = bpf_map__fd(hs->maps.hops);
	ps.aggs = bpf_map__fd(hs->maps.aggs);
	ps.stats = bpf_map__fd(hs->maps.stats);
	ps.result = bpf_map__fd(hs->maps.result);
	ps.share = bpf_map__fd(hs->maps.share);
	ps.sw_stats = -1;

	err = put_tables(&tor, &plan_tor, TOR);
	err = err ?: put_tables(&ps, &plan_ps, PS);
	/* the PS's own share of every block, written for the round */
	for (b = 0; b < WINDOW && !err; b++) {
		struct rinx_slot s = { .round = ROUND, .count = RINX_BLOCK_VALUES };
		__u32 k = SLOT * WINDOW + b;
		int i;

		for (i = 0; i < RINX_BLOCK_VALUES; i++)
			s.v[i] = val(PS, b, i);
		err = bpf_map_update_elem(ps.share, &k, &s, BPF_ANY) ? -errno : 0;
	}
	return err;
}

/* ---- frames -------------------------------------------------------------- */

static struct rinx_hdr *hdr(__u8 *f) { return (struct rinx_hdr *)(f + OFF_HDR); }
static __s32 *vals(__u8 *f) { return (__s32 *)(f + OFF_V); }

/* A frame from node `from` to node `to` of the plan. */
static void build(__u8 *f, int from, int to, __u8 type, __u32 round,
		  __u32 block, __u8 flags, __u64 cover)
{
	const struct rinx_node *s = &plan_ps.nodes[from], *d = &plan_ps.nodes[to];
	struct rinx_hdr *h = tf_frame(f, d->mac, s, d, RINX_ECN_ECT0, PORT);

	h->type = type;
	h->flags = flags;
	h->job = htonl(JOB_ID);
	h->token = htobe64(JOB_TOKEN);
	h->round = htonl(round);
	h->block = htonl(block);
	h->nblocks = htonl(WINDOW);
	h->sender = htons(from);
	h->count = htons(RINX_BLOCK_VALUES);
	h->klass = htons(plan_ps.cmap[block % plan_ps.plen]);
	h->dtype = htons(RINX_W_INT32);
	h->cover = htobe64(cover);
}

/* Worker w's share of block b. */
static void share(__u8 *f, int w, __u32 round, __u32 b, __u8 flags)
{
	int i;

	build(f, w, TOR, RINX_T_CONTRIB, round, b, flags, 0);
	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		vals(f)[i] = val(w, b, i);
}

static int run(const struct prog *p, __u8 *in, __u8 *out, __u32 *outlen,
	       __u32 *ret)
{
	struct tl_run r;
	int err = tl_xdp_run(p->prog, in, FLEN, 1, out, FLEN + 64, &r);

	if (err)
		return err;
	*outlen = r.len;
	*ret = r.ret;
	return 0;
}

/* ---- steps --------------------------------------------------------------- */

enum out_kind {
	O_NONE,		/* dropped: the frame must come back untouched */
	O_TO_PS,	/* REDUCE from the ToR to the PS */
	O_RESULT,	/* the PS's finished block to every host */
};

struct step {
	const char *desc;
	const struct prog *at;	/* &tor or &ps */
	int from;		/* worker (ToR steps), or the sender at the PS */
	__u32 round, block;
	__u8 flags;		/* RINX_F_RESEND */
	__u8 type;		/* 0: CONTRIB (or REDUCE from the ToR at the PS) */
	__u64 cover;		/* PS steps from the ToR: declared coverage;
				 * ToR steps: the cover field the worker puts
				 * there (ignored) */
	__u8 step_no;		/* rinx_hdr.step */
	int verdict;
	int stat;		/* outcome counter (+1); RX +1 always */
	int stat2;		/* another one (+1), or -1 */
	int out;		/* enum out_kind */
	__u64 out_cover;	/* O_TO_PS: coverage of the output */
	__u64 out_sum;		/* O_TO_PS/O_RESULT: workers whose shares the
				 * output sums (bit w) */
	bool deliver;		/* O_TO_PS: run the output through the PS */
	int ps_stat;		/* deliver: the PS's outcome counter */
	int ps_out;		/* deliver: the PS's output kind */
	/* slot after the step: pool slot (ToR) or the block's slot (PS) */
	__u32 slot_round, slot_block;
	__u64 slot_seen;
};

#define NO	-1

static __u32 bA, bB, bC, bD, bE;	/* picked by their pool slots */

static void expect_sum(__s32 *want, __u64 who, __u32 b)
{
	int w, i;

	for (i = 0; i < RINX_BLOCK_VALUES; i++) {
		__s64 s = 0;

		for (w = 0; w < 4; w++)
			if (who & (1ULL << w))
				s += val(w, b, i);
		want[i] = (__s32)s;
	}
}

static bool counters_moved(const char *desc, const struct counters *a,
			   const struct counters *b, const int *want_st,
			   const int *want_sw)
{
	bool ok = true;
	int i;

	for (i = 0; i < RINX_STAT_MAX; i++)
		if (b->st[i] - a->st[i] != (__u64)want_st[i]) {
			tap_diag("%s: counter %s moved %llu, want %d", desc,
				 rinx_stat_name(i),
				 (unsigned long long)(b->st[i] - a->st[i]),
				 want_st[i]);
			ok = false;
		}
	for (i = 0; i < RINX_SW_STAT_MAX; i++)
		if (b->sw[i] - a->sw[i] != (__u64)want_sw[i]) {
			tap_diag("%s: switch counter %d moved %llu, want %d",
				 desc, i,
				 (unsigned long long)(b->sw[i] - a->sw[i]),
				 want_sw[i]);
			ok = false;
		}
	return ok;
}

/* Checks an output of kind k against what the step says. */
static bool check_out(const char *desc, const __u8 *in, __u8 *out,
		      __u32 len, int k, __u64 cover, __u64 sum, __u32 b)
{
	static __s32 want[RINX_BLOCK_VALUES];
	const struct rinx_node *tn = &plan_ps.nodes[TOR];
	const struct rinx_node *pn = &plan_ps.nodes[PS];
	const __u8 every[6] = { RINX_GROUP_MAC0, RINX_GROUP_MAC1,
				RINX_GROUP_MAC2, 0xff, 0xff, 0 };
	struct rinx_hdr *h = hdr(out);
	bool ok = true;

	if (k == O_NONE) {
		if (len != FLEN || memcmp(in, out, FLEN)) {
			tap_diag("%s: a dropped frame changed", desc);
			return false;
		}
		return true;
	}
	if (len != FLEN) {
		tap_diag("%s: output of %u bytes", desc, len);
		return false;
	}
	expect_sum(want, sum, b);
	if (k == O_TO_PS) {
		ok = h->type == RINX_T_REDUCE && ntohs(h->sender) == TOR &&
		     be64toh(h->cover) == cover && h->step == 0 &&
		     !memcmp(out, pn->mac, 6) && !memcmp(out + 6, tn->mac, 6) &&
		     !memcmp(out + OFF_IP + 12, &tn->ip, 4) &&
		     !memcmp(out + OFF_IP + 16, &pn->ip, 4);
		if (!ok)
			tap_diag("%s: output type %u sender %u cover %#llx step "
				 "%u, want REDUCE from %d cover %#llx to the PS",
				 desc, h->type, ntohs(h->sender),
				 (unsigned long long)be64toh(h->cover),
				 h->step, TOR, (unsigned long long)cover);
		/* the PS's own share is added there, not here */
	} else {
		ok = h->type == RINX_T_GATHER && ntohs(h->sender) == PS &&
		     !memcmp(out, every, 6);
		if (!ok)
			tap_diag("%s: result type %u sender %u, want a gather "
				 "from the PS to every host", desc, h->type,
				 ntohs(h->sender));
		expect_sum(want, sum | 1ULL << PS, b);
	}
	if (h->flags != 0) {
		tap_diag("%s: output flags %#x, want 0 (RINX_F_RESEND is the "
			 "ToR's only)", desc, h->flags);
		ok = false;
	}
	if (csum16(out + OFF_IP, 20) != 0) {
		tap_diag("%s: IPv4 checksum wrong", desc);
		ok = false;
	}
	if (memcmp(vals(out), want, sizeof(want))) {
		int i;

		for (i = 0; i < RINX_BLOCK_VALUES && vals(out)[i] == want[i]; i++)
			;
		tap_diag("%s: value %d is %d, want %d", desc, i, vals(out)[i],
			 want[i]);
		ok = false;
	}
	return ok;
}

static bool check_slot(const char *desc, const struct prog *p, __u32 idx,
		       __u32 round, __u32 block, __u64 seen, bool pool)
{
	static struct rinx_agg a;

	if (bpf_map_lookup_elem_flags(p->aggs, &idx, &a, BPF_F_LOCK)) {
		tap_diag("%s: slot %u: %s", desc, idx, strerror(errno));
		return false;
	}
	if (a.seen != seen || (seen && a.round != round) ||
	    (seen && pool && a.block != block)) {
		tap_diag("%s: slot %u holds round %u block %u seen %#llx, want "
			 "%u %u %#llx", desc, idx, a.round, a.block,
			 (unsigned long long)a.seen, round, block,
			 (unsigned long long)seen);
		return false;
	}
	return true;
}

static bool check_result(const char *desc, __u32 b, __u64 who)
{
	static struct rinx_slot r;
	static __s32 want[RINX_BLOCK_VALUES];
	__u32 k = SLOT * WINDOW + b;

	if (bpf_map_lookup_elem(ps.result, &k, &r) || r.round != ROUND) {
		tap_diag("%s: no result of block %u stored", desc, b);
		return false;
	}
	expect_sum(want, who | 1ULL << PS, b);
	if (memcmp(r.v, want, sizeof(want))) {
		tap_diag("%s: stored result of block %u differs", desc, b);
		return false;
	}
	return true;
}

/* Step s with the frame's dtype set to `dtype` (0: the job's, int32). */
static void run_step_dt(const struct step *s, __u16 dtype)
{
	static __u8 in[FLEN], out[FLEN + 64], out2[FLEN + 64];
	int want_st[RINX_STAT_MAX] = {}, want_sw[RINX_SW_STAT_MAX] = {};
	struct counters c0, c1;
	bool tor_step = s->at == &tor, ok;
	__u32 len, ret, idx;

	if (tor_step) {
		share(in, s->from, s->round, s->block, s->flags);
		hdr(in)->cover = htobe64(s->cover);
		if (dtype)
			hdr(in)->dtype = htons(dtype);
		if (s->type)
			hdr(in)->type = s->type;
	} else {
		build(in, s->from, PS, s->type ? s->type : RINX_T_REDUCE,
		      s->round, s->block, s->flags, s->cover);
		hdr(in)->step = s->step_no;
		/* a partial sum of the workers it covers */
		expect_sum(vals(in), s->from == TOR ? s->cover :
				     1ULL << s->from, s->block);
	}
	if (read_counters(s->at, &c0) || run(s->at, in, out, &len, &ret) ||
	    read_counters(s->at, &c1)) {
		tap_ok(0, "%s: test run: %s", s->desc, strerror(errno));
		return;
	}
	want_st[RINX_STAT_RX] = 1;
	want_st[s->stat]++;
	if (s->stat2 >= 0)
		want_st[s->stat2]++;
	if (tor_step)
		want_sw[s->verdict == XDP_REDIRECT ? RINX_SW_INA_FWD :
						     RINX_SW_INA_DROP] = 1;
	ok = (int)ret == s->verdict;
	if (!ok)
		tap_diag("%s: verdict %u, want %d", s->desc, ret, s->verdict);
	ok &= counters_moved(s->desc, &c0, &c1, want_st, want_sw);
	ok &= check_out(s->desc, in, out, len, s->out, s->out_cover,
			s->out_sum, s->block);
	idx = SLOT * WINDOW + (tor_step ?
	      rinx_pool_index(JOB_ID, s->block, POOL) : s->block);
	ok &= check_slot(s->desc, s->at, idx, s->slot_round, s->slot_block,
			 s->slot_seen, tor_step);
	if (s->out == O_RESULT)
		ok &= check_result(s->desc, s->block, s->out_sum);
	if (s->deliver && ok) {
		/* the ToR's output, as the PS receives it */
		int ps_st[RINX_STAT_MAX] = {}, ps_sw[RINX_SW_STAT_MAX] = {};

		if (read_counters(&ps, &c0) || run(&ps, out, out2, &len, &ret) ||
		    read_counters(&ps, &c1)) {
			tap_ok(0, "%s: PS run: %s", s->desc, strerror(errno));
			return;
		}
		ps_st[RINX_STAT_RX] = 1;
		ps_st[s->ps_stat] = 1;
		ok &= counters_moved(s->desc, &c0, &c1, ps_st, ps_sw);
		if (s->ps_out == O_RESULT) {
			ok &= ret == XDP_TX;
			ok &= check_out(s->desc, out, out2, len, O_RESULT, 0,
					0x7, s->block);
			ok &= check_result(s->desc, s->block, 0x7);
		} else if (ret != XDP_DROP) {
			tap_diag("%s: the PS's verdict %u, want a drop", s->desc,
				 ret);
			ok = false;
		}
	}
	tap_ok(ok, "%s", s->desc);
}

/* ---- the plan ------------------------------------------------------------ */

static void check_plan(void)
{
	const struct rinx_hop *t = &plan_tor.hops[0][RINX_T_CONTRIB - 1];
	const struct rinx_hop *p = &plan_ps.hops[0][RINX_T_CONTRIB - 1];
	const struct rinx_hop *pr = &plan_ps.hops[0][RINX_T_REDUCE - 1];
	struct rinx_spec s2 = spec;
	struct rinx_plan q;

	tap_ok(plan_ps.nnodes == 5 && plan_ps.nclasses == 1 &&
	       plan_ps.root[0] == PS,
	       "plan: 5 nodes, one class finished at the PS (rank %d)", PS);
	tap_ok(t->action == RINX_A_AGG_FWD && t->mask == 0x7 && t->to == PS &&
	       (t->flags & (RINX_HOP_POOL | RINX_HOP_COVER)) ==
	       (RINX_HOP_POOL | RINX_HOP_COVER) && t->pool == POOL,
	       "plan: the ToR sums {0,1,2} in a pool of %d slots, sums tell "
	       "their coverage (flags %#x, pool %u)", POOL, t->flags, t->pool);
	tap_ok(p->action == RINX_A_AGG_FINISH && p->mask == 0x7 &&
	       p->via == 1ULL << TOR &&
	       (p->flags & (RINX_HOP_COVER | RINX_HOP_SELF)) ==
	       (RINX_HOP_COVER | RINX_HOP_SELF) && p->rack == RINX_GROUP_EVERY &&
	       !memcmp(p, pr, sizeof(*p)),
	       "plan: the PS sums coverages {0,1,2} (partials from the ToR) and "
	       "its own share, reduce and contrib alike");
	/* pool=0: a slot per block, coverage still told; pool beyond the
	 * window: the window */
	s2.racks[1].pool = RINX_POOL_PER_BLOCK;
	tap_ok(!rinx_plan_build(&q, &s2, TOR) &&
	       !(q.hops[0][RINX_T_CONTRIB - 1].flags & RINX_HOP_POOL) &&
	       (q.hops[0][RINX_T_CONTRIB - 1].flags & RINX_HOP_COVER),
	       "plan: pool=0 keeps a slot per block");
	s2.racks[1].pool = 100000;
	tap_ok(!rinx_plan_build(&q, &s2, TOR) &&
	       q.hops[0][RINX_T_CONTRIB - 1].pool == WINDOW,
	       "plan: a pool larger than the window is the window");
	s2.racks[1].pool = 0;
	tap_ok(!rinx_plan_build(&q, &s2, TOR) &&
	       q.hops[0][RINX_T_CONTRIB - 1].pool ==
	       (RINX_POOL_DEFAULT < WINDOW ? RINX_POOL_DEFAULT : WINDOW),
	       "plan: pool not set: the default (%d, at most the window)",
	       RINX_POOL_DEFAULT);
	/* other plans: no pool, no coverage anywhere */
	s2 = spec;
	s2.plan = RINX_PLAN_RINA;
	tap_ok(!rinx_plan_build(&q, &s2, TOR) &&
	       !(q.hops[0][RINX_T_CONTRIB - 1].flags &
		 (RINX_HOP_POOL | RINX_HOP_COVER)) &&
	       !q.hops[0][RINX_T_CONTRIB - 1].via,
	       "plan: rina's ToR has neither pool nor coverage");
}

/* Blocks by pool slot: bA and bB share one, bC and bD have two others;
 * bE is another block (used at the PS only). */
static int pick_blocks(void)
{
	__u32 b, c, sa;

	for (b = 0; b < WINDOW; b++)
		for (c = b + 1; c < WINDOW; c++)
			if (rinx_pool_index(JOB_ID, b, POOL) ==
			    rinx_pool_index(JOB_ID, c, POOL)) {
				bA = b;
				bB = c;
				goto found;
			}
	return -1;
found:
	sa = rinx_pool_index(JOB_ID, bA, POOL);
	bC = bD = bE = WINDOW;
	for (b = 0; b < WINDOW; b++) {
		__u32 sb = rinx_pool_index(JOB_ID, b, POOL);

		if (b == bA || b == bB)
			continue;
		if (bC == WINDOW && sb != sa)
			bC = b;
		else if (bD == WINDOW && sb != sa &&
			 sb != rinx_pool_index(JOB_ID, bC, POOL))
			bD = b;
		else if (bE == WINDOW && bC != WINDOW && bD != WINDOW)
			bE = b;	/* the PS's alone: any other block */
	}
	return bE < WINDOW ? 0 : -1;
}

int main(void)
{
	int err, i;

	tl_needs_root("BPF_PROG_TEST_RUN");
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		tap_skip_all("CPU count not found");
	tl_unshare_net();
	make_spec();
	if (rinx_plan_build(&plan_ps, &spec, PS) ||
	    rinx_plan_build(&plan_tor, &spec, TOR))
		tap_skip_all("cannot build the ps-ina plan");
	if (pick_blocks())
		tap_skip_all("no two blocks of %d share a pool slot", WINDOW);

	{
		const struct step steps[] = {
	/* ---- the ToR, and the PS behind it ---- */
	{ "tor: a share takes a free pool slot", &tor, 0, ROUND, bA, 0, 0, 0,
	  0, XDP_DROP, RINX_STAT_AGG_ADD, NO, O_NONE, 0, 0, false, 0, 0,
	  ROUND, bA, 0x1 },
	{ "tor: collision: a share of another block in that slot passes on "
	  "unaggregated, with its coverage; the PS takes it", &tor, 1, ROUND,
	  bB, 0, 0, 0, 0, XDP_REDIRECT, RINX_STAT_POOL_PASS, NO, O_TO_PS, 0x2,
	  0x2, true, RINX_STAT_AGG_ADD, O_NONE, ROUND, bA, 0x1 },
	{ "tor: the same share again (a network duplicate) is dropped", &tor,
	  0, ROUND, bA, 0, 0, 0, 0, XDP_DROP, RINX_STAT_DROP_AGG_DUP, NO,
	  O_NONE, 0, 0, false, 0, 0, ROUND, bA, 0x1 },
	{ "tor: a worker's cover field is not its coverage (ignored)", &tor,
	  1, ROUND, bA, 0, 0, 0x7, 0, XDP_DROP, RINX_STAT_AGG_ADD, NO, O_NONE,
	  0, 0, false, 0, 0, ROUND, bA, 0x3 },
	{ "tor: the full set: the sum leaves with coverage {0,1,2}, the slot "
	  "is free; the PS finishes the block (own share added, to every "
	  "host)", &tor, 2, ROUND, bA, 0, 0, 0, 0, XDP_REDIRECT,
	  RINX_STAT_AGG_DONE, NO, O_TO_PS, 0x7, 0x7, true, RINX_STAT_AGG_DONE,
	  O_RESULT, 0, 0, 0 },
	{ "tor: the freed slot takes the block that collided", &tor, 0, ROUND,
	  bB, 0, 0, 0, 0, XDP_DROP, RINX_STAT_AGG_ADD, NO, O_NONE, 0, 0,
	  false, 0, 0, ROUND, bB, 0x1 },
	{ "tor: stuck case: the slot waits for a share the PS already has",
	  &tor, 2, ROUND, bB, 0, 0, 0, 0, XDP_DROP, RINX_STAT_AGG_ADD, NO,
	  O_NONE, 0, 0, false, 0, 0, ROUND, bB, 0x5 },
	{ "tor: a share sent again flushes the held partial with coverage "
	  "{0,2}, the slot is free; the PS finishes the block exactly", &tor,
	  2, ROUND, bB, RINX_F_RESEND, 0, 0, 0, XDP_REDIRECT,
	  RINX_STAT_POOL_FLUSH, NO, O_TO_PS, 0x5, 0x5, true,
	  RINX_STAT_AGG_DONE, O_RESULT, 0, 0, 0 },
	{ "tor: a share sent again whose block holds no slot passes on; the "
	  "PS, finished, sends the block again", &tor, 0, ROUND, bB,
	  RINX_F_RESEND, 0, 0, 0, XDP_REDIRECT, RINX_STAT_POOL_RESEND, NO,
	  O_TO_PS, 0x1, 0x1, true, RINX_STAT_AGG_REEMIT, O_RESULT, 0, 0, 0 },
	{ "tor: a share of block C takes its slot", &tor, 0, ROUND, bC, 0, 0,
	  0, 0, XDP_DROP, RINX_STAT_AGG_ADD, NO, O_NONE, 0, 0, false, 0, 0,
	  ROUND, bC, 0x1 },
	{ "tor: a share of the next round takes a slot of an older round",
	  &tor, 1, ROUND + 1, bC, 0, 0, 0, 0, XDP_DROP, RINX_STAT_AGG_ADD,
	  RINX_STAT_AGG_RESET, O_NONE, 0, 0, false, 0, 0, ROUND + 1, bC,
	  0x2 },
	{ "tor: a share of an older round than its slot's passes on", &tor, 2,
	  ROUND, bC, 0, 0, 0, 0, XDP_REDIRECT, RINX_STAT_POOL_PASS, NO,
	  O_TO_PS, 0x4, 0x4, false, 0, 0, ROUND + 1, bC, 0x2 },
	{ "tor: a share of block D takes its slot",
	  &tor, 0, ROUND, bD, 0, 0, 0, 0, XDP_DROP, RINX_STAT_AGG_ADD, NO,
	  O_NONE, 0, 0, false, 0, 0, ROUND, bD, 0x1 },
	{ "tor: a partial sum (reduce) is not a pool aggregation's", &tor, 1,
	  ROUND, bD, 0, RINX_T_REDUCE, 0, 0, XDP_DROP, RINX_STAT_DROP_NO_ROUTE,
	  NO, O_NONE, 0, 0, false, 0, 0, ROUND, bD, 0x1 },
	{ "tor: a share from the PS (not a contributor) is dropped", &tor, PS,
	  ROUND, bD, 0, 0, 0, 0, XDP_DROP, RINX_STAT_DROP_MEMBER, NO, O_NONE,
	  0, 0, false, 0, 0, ROUND, bD, 0x1 },
	{ "tor: block A takes the shared slot again", &tor, 0, ROUND, bA, 0,
	  0, 0, 0, XDP_DROP, RINX_STAT_AGG_ADD, NO, O_NONE, 0, 0, false, 0, 0,
	  ROUND, bA, 0x1 },
	{ "tor: a share sent again into a slot held by another block passes "
	  "on unaggregated", &tor, 1, ROUND, bB, RINX_F_RESEND, 0, 0, 0,
	  XDP_REDIRECT, RINX_STAT_POOL_RESEND, NO, O_TO_PS, 0x2, 0x2, false, 0,
	  0, ROUND, bA, 0x1 },
	/* ---- the PS alone: coverages ---- */
	{ "ps: a partial covering {0,1} from the ToR", &ps, TOR, ROUND, bE, 0,
	  0, 0x3, 0, XDP_DROP, RINX_STAT_AGG_ADD, NO, O_NONE, 0, 0, false, 0,
	  0, ROUND, bE, 0x3 },
	{ "ps: a partial covering {1,2} overlaps in part: refused, counted, "
	  "the slot unchanged", &ps, TOR, ROUND, bE, 0, 0, 0x6, 0, XDP_DROP,
	  RINX_STAT_AGG_OVERLAP, NO, O_NONE, 0, 0, false, 0, 0, ROUND, bE,
	  0x3 },
	{ "ps: a partial wholly in the slot is a duplicate", &ps, TOR, ROUND,
	  bE, 0, 0, 0x1, 0, XDP_DROP, RINX_STAT_DROP_AGG_DUP, NO, O_NONE, 0, 0,
	  false, 0, 0, ROUND, bE, 0x3 },
	{ "ps: coverage 0 is refused", &ps, TOR, ROUND, bE, 0, 0, 0, 0,
	  XDP_DROP, RINX_STAT_DROP_SENDER, NO, O_NONE, 0, 0, false, 0, 0,
	  ROUND, bE, 0x3 },
	{ "ps: coverage beyond the contributors is refused", &ps, TOR, ROUND,
	  bE, 0, 0, 0x8, 0, XDP_DROP, RINX_STAT_DROP_SENDER, NO, O_NONE, 0, 0,
	  false, 0, 0, ROUND, bE, 0x3 },
	{ "ps: a partial with a step is refused", &ps, TOR, ROUND, bE, 0, 0,
	  0x4, 1, XDP_DROP, RINX_STAT_DROP_SENDER, NO, O_NONE, 0, 0, false, 0,
	  0, ROUND, bE, 0x3 },
	{ "ps: worker 2's own share, straight to the PS, completes the set: "
	  "the exact sum of all four to every host", &ps, 2, ROUND, bE, 0,
	  RINX_T_CONTRIB, 0x1, 0, XDP_TX, RINX_STAT_AGG_DONE, NO, O_RESULT, 0,
	  0x7, false, 0, 0, ROUND, bE, 0x7 },
	{ "ps: a worker's cover field is its own bit, whatever it says", &ps,
	  1, ROUND, bD, 0, RINX_T_CONTRIB, 0x7, 0, XDP_DROP, RINX_STAT_AGG_ADD,
	  NO, O_NONE, 0, 0, false, 0, 0, ROUND, bD, 0x2 },
		};

		/* the job's frames are int32: a fixed-point share of the
		 * same block and round is another tensor's (after the steps
		 * above, block D's pool slot holds worker 0's share) */
		const struct step shape_steps[] = {
	{ .desc = "tor: a share of block D as fixed point into its int32 "
	  "slot is refused (drop_shape), the slot unchanged", .at = &tor,
	  .from = 1, .round = ROUND, .block = bD, .verdict = XDP_DROP,
	  .stat = RINX_STAT_DROP_SHAPE, .stat2 = NO, .out = O_NONE,
	  .slot_round = ROUND, .slot_block = bD, .slot_seen = 0x1 },
	{ .desc = "tor: the same share sent again (a resend) is refused too, "
	  "the slot is not flushed", .at = &tor, .from = 1, .round = ROUND,
	  .block = bD, .flags = RINX_F_RESEND, .verdict = XDP_DROP,
	  .stat = RINX_STAT_DROP_SHAPE, .stat2 = NO, .out = O_NONE,
	  .slot_round = ROUND, .slot_block = bD, .slot_seen = 0x1 },
		};

		tap_plan(7 + 1 + (int)ARRAY_SIZE(steps) +
			 (int)ARRAY_SIZE(shape_steps));
		check_plan();
		err = open_all();
		if (!tap_ok(!err, "ToR (switch) and PS (host) programs load, "
			    "tables of the plan written")) {
			tap_diag("%s", strerror(-err));
			return tap_done();
		}
		tap_diag("pool of %d: blocks %u and %u share slot %u; %u, %u, %u "
			 "elsewhere", POOL, bA, bB,
			 rinx_pool_index(JOB_ID, bA, POOL), bC, bD, bE);
		for (i = 0; i < (int)ARRAY_SIZE(steps); i++)
			run_step_dt(&steps[i], 0);
		for (i = 0; i < (int)ARRAY_SIZE(shape_steps); i++)
			run_step_dt(&shape_steps[i], RINX_W_FIXED);
	}
	return tap_done();
}
