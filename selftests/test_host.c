// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of the XDP host hop (rinx_host) through BPF_PROG_TEST_RUN.
 *
 * The program is loaded from its skeleton with a small window and a
 * non-default port. Two jobs get a 4-node ring plan each (hop table, node
 * table); two more jobs are broken on purpose (slot out of range, no
 * classes). Every case of the table below builds one frame, writes the local
 * share of its block, runs the program once and checks, each as one TAP line:
 * the XDP action, the output frame, the result map and the exact delta of
 * every counter. Expected frames and sums are computed here, independently of
 * the BPF code: block alignment is done in 64-bit arithmetic with true
 * round-to-nearest (either neighbour is accepted on an exact tie).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <endian.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uapi/rinx.h"
#include "host.skel.h"
#include "selftests/lib/testlib.h"

#define WINDOW		16
#define PORT		47123	/* not the default: checks the rodata port */
#define NSLOTS		RINX_DEFAULT_JOBS
#define NRES		(NSLOTS * WINDOW)

#define OFF_IP		14
#define OFF_UDP		34
#define OFF_HDR		42
#define OFF_V		RINX_FRAME_HDR_LEN
#define FULL_LEN	RINX_FRAME_MAX

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ---- jobs ---------------------------------------------------------------- */

struct jobcfg {
	__u32 id;
	__u64 token;
	__u32 slot, round, nblocks;
	__u16 last_count, nclasses, nnodes, self, qbits, dtype;
	__u16 bval;		/* values per frame; 0: RINX_BLOCK_VALUES */
};

enum { J_MAIN, J_I32, J_BADSLOT, J_NOCLASS, J_SMALL, J_JUMBO, J_MAX };

static struct jobcfg jobcfg[J_MAX] = {
	/* slot 2, node 1 of 4: class 0 ADD_FWD/STORE_FWD, class 1 -/STORE_FWD,
	 * class 2 ADD_FINISH/-, class 3 ADD_FWD/STORE_END. */
	[J_MAIN] = { 0x00c0ffee, 0x1dea5eed1234ULL, 2, 1000, 11, 100, 4, 4, 1, 28,
		     RINX_W_FIXED },
	/* slot 0, node 2 of 4, int32 sums, round about to wrap. */
	[J_I32] = { 0x00000007, 0x0badf00d, 0, 0xffffffff, 5, 1, 4, 4, 2, 30,
		    RINX_W_INT32 },
	[J_BADSLOT] = { 0x00000009, 0x11111111, RINX_MAX_JOBS, 1, 4, 768,
			4, 4, 1, 28, RINX_W_FIXED },
	[J_NOCLASS] = { 0x0000000a, 0x22222222, 3, 1, 4, 768, 0, 4, 1, 28,
			RINX_W_FIXED },
	/* slot 1, node 1 of 4 as J_MAIN, frames of a 1,500-byte MTU */
	[J_SMALL] = { 0x0000000b, 0x3333333344ULL, 1, 50, 11, 100, 4, 4, 1, 28,
		      RINX_W_FIXED, RINX_BLOCK_VALUES_MIN },
	/* slot 4, node 1 of 4 as J_MAIN, jumbo blocks: 5 of them take 15
	 * of the window's 16 slots */
	[J_JUMBO] = { 0x0000000c, 0x4444444455ULL, 4, 300, 5, 1000, 4, 4, 1,
		      28, RINX_W_FIXED, RINX_BLOCK_VALUES_JUMBO },
};

/* The job's values per frame and its frames' length. */
static int jbv(const struct jobcfg *j)
{
	return j->bval ? j->bval : RINX_BLOCK_VALUES;
}

static int jlen(const struct jobcfg *j)
{
	return RINX_FRAME_LEN(jbv(j));
}

/* The plan of a ring of n nodes seen from node self: class c starts at node
 * c, is reduced along c+1, ..., c-1 (ADD_FINISH) and gathered from there
 * along c, c+1, ..., c-2 (STORE_END). */
static struct rinx_hop ring_hop(int self, int n, int c, int type)
{
	struct rinx_hop h = {};
	int fin = (c + n - 1) % n;

	if (type == RINX_T_REDUCE) {
		if (self == c)
			return h;
		h.action = self == fin ? RINX_A_ADD_FINISH : RINX_A_ADD_FWD;
		h.step = (self - c - 1 + 2 * n) % n;
	} else {
		if (self == fin)
			return h;
		h.action = (self + 1) % n == fin ? RINX_A_STORE_END :
						   RINX_A_STORE_FWD;
		h.step = (self - c + n) % n;
	}
	h.from = (self + n - 1) % n;
	h.to = (self + 1) % n;
	return h;
}

static void node_mac(__u32 slot, __u32 id, __u8 *mac)
{
	const __u8 m[6] = { 0x02, 0x52, 0x58, 0x00, slot, id };

	memcpy(mac, m, 6);
}

static __be32 node_ip(__u32 slot, __u32 id)
{
	return htonl(0x0a000001 | slot << 16 | id << 8);
}

/* ---- frames -------------------------------------------------------------- */

enum tweak {
	TW_NONE,
	TW_LEN,		/* frame length = tv */
	TW_ETHTYPE,
	TW_IPPROTO,
	TW_IHL,
	TW_FRAG,
	TW_SADDR,
	TW_DPORT,
	TW_MAGIC,
	TW_VERSION,
	TW_TYPE,	/* type byte only; the plan of .type is kept */
	TW_STEP,	/* planned step + tv */
	TW_SENDER,
	TW_JOB,
	TW_TOKEN,
	TW_ROUND,	/* job round + tv */
	TW_NBLOCKS,
	TW_COUNT,
	TW_KLASS,
	TW_DTYPE,
	TW_HOP_TO,	/* hop table entry's 'to' = tv for this case */
	TW_HOP_FROM,	/* hop table entry's 'from' = tv for this case */
};

enum share_state { SH_READY, SH_OLD, SH_NEW };
enum vals { V_RAND, V_TIES, V_ZERO, V_BIG };

enum expect {
	EX_SAME,	/* output frame unchanged, result map unchanged */
	EX_ANY,		/* output not checked, result map unchanged */
	EX_ADD_FWD,
	EX_ADD_FIN,
	EX_STORE_FWD,
	EX_STORE_END,
	EX_STORE_ONLY,	/* result stored, output not checked */
	EX_EINVAL,	/* the kernel refuses the input */
};

struct sd {
	int stat, n;
};

struct tcase {
	const char *name;
	int job;		/* index in jobcfg */
	__u8 type;
	__u32 block;
	__s16 exp;
	__u8 flags;
	enum tweak tw;
	long long tv;
	enum share_state sh;
	__s16 sh_exp;
	__u8 sh_flags;
	enum vals vals, sh_vals;
	__u32 nblocks;		/* 0: the job's; else job and frame use it */
	int ret;
	enum expect ex;
	struct sd st[4];	/* counter deltas; every other must stay 0 */
	const char *todo;	/* known program bug: TAP TODO */
};

static __u32 rng;

static __u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* Values of one operand; d is the shift it will get (ties are made). */
static void gen_vals(__s32 *v, int count, enum vals kind, int qbits, int d)
{
	__s64 lim = (1LL << qbits) - 1;
	int i;

	memset(v, 0, RINX_BLOCK_BYTES);
	for (i = 0; i < count; i++) {
		switch (kind) {
		case V_ZERO:
			break;
		case V_BIG:
			v[i] = (__s32)rnd();
			break;
		case V_TIES:
		case V_RAND:
			v[i] = (__s32)((__s64)(rnd() % (__u64)(2 * lim + 1)) -
				       lim);
			if (kind == V_TIES && d >= 1 && d <= 30 && i % 3 == 0) {
				__s32 m = (1 << d) - 1;

				v[i] = (v[i] & ~m) | (1 << (d - 1));
			}
			break;
		}
	}
	/* a few exact extremes */
	if (kind == V_RAND || kind == V_TIES) {
		v[1 % count] = (__s32)lim;
		v[2 % count] = (__s32)-lim;
	}
}

struct built {
	int len;
	struct rinx_hop hop;	/* planned entry of (klass, type) */
	__u16 klass, count;
	__u32 round, nblocks;
	int dshift_in, dshift_sh;
};

static __u16 planned_count(const struct jobcfg *j, __u32 nblocks,
			   __u32 block)
{
	return block == nblocks - 1 ? j->last_count : jbv(j);
}

/* Build the case's frame into buf (payload from the current rng). */
static void build(const struct tcase *c, __u8 *buf, struct built *b)
{
	const struct jobcfg *j = &jobcfg[c->job];
	__u8 plan_type = c->type == RINX_T_GATHER ? RINX_T_GATHER :
						    RINX_T_REDUCE;
	__u8 *ip = buf + OFF_IP, *udp = buf + OFF_UDP;
	struct rinx_hdr *h = (struct rinx_hdr *)(buf + OFF_HDR);
	__s32 *v = (__s32 *)(buf + OFF_V);
	int e = c->exp > c->sh_exp ? c->exp : c->sh_exp;
	__u16 self = j->self;

	__u8 dmac[6], smac[6];
	struct tl_addr a = {
		.dst_mac = dmac, .src_mac = smac, .port = PORT, .ip_id = 0x4242,
	};

	b->nblocks = c->nblocks ? c->nblocks : j->nblocks;
	b->klass = j->nclasses ? c->block % j->nclasses : 0;
	b->count = planned_count(j, b->nblocks, c->block);
	b->round = j->round;
	b->hop = ring_hop(self, j->nnodes, b->klass, plan_type);
	b->len = jlen(j);
	b->dshift_in = e - c->exp;
	b->dshift_sh = e - c->sh_exp;

	node_mac(j->slot, self, dmac);
	node_mac(j->slot, b->hop.from, smac);
	a.saddr = node_ip(j->slot, b->hop.from);
	a.daddr = node_ip(j->slot, self);
	memset(buf, 0, FULL_LEN);
	tl_frame(buf, jlen(j), &a);
	tl_hdr_put(h, &(struct tl_hdr){
		.type = c->type, .flags = c->flags, .step = b->hop.step,
		.job = j->id, .token = j->token, .round = b->round,
		.block = c->block, .nblocks = b->nblocks,
		.sender = b->hop.from, .count = b->count, .klass = b->klass,
		.exp = (__s16)c->exp, .dtype = j->dtype,
	});
	gen_vals(v, b->count, c->vals, j->qbits, b->dshift_in);

	switch (c->tw) {
	case TW_NONE:
	case TW_HOP_TO:
	case TW_HOP_FROM:
		break;
	case TW_LEN:
		b->len = (int)c->tv;
		break;
	case TW_ETHTYPE:
		put16(buf + 12, (__u16)c->tv);
		break;
	case TW_IPPROTO:
		ip[9] = (__u8)c->tv;
		break;
	case TW_IHL:
		ip[0] = 0x40 | (__u8)c->tv;
		break;
	case TW_FRAG:
		put16(ip + 6, (__u16)c->tv);
		break;
	case TW_SADDR:
		memcpy(ip + 12, &(__be32){ htonl((__u32)c->tv) }, 4);
		break;
	case TW_DPORT:
		put16(udp + 2, (__u16)c->tv);
		break;
	case TW_MAGIC:
		h->magic = htonl((__u32)c->tv);
		break;
	case TW_VERSION:
		h->version = (__u8)c->tv;
		break;
	case TW_TYPE:
		h->type = (__u8)c->tv;
		break;
	case TW_STEP:
		h->step = (__u8)(b->hop.step + c->tv);
		break;
	case TW_SENDER:
		h->sender = htons((__u16)c->tv);
		break;
	case TW_JOB:
		h->job = htonl((__u32)c->tv);
		break;
	case TW_TOKEN:
		h->token = htobe64((__u64)c->tv);
		break;
	case TW_ROUND:
		b->round = j->round + (__u32)c->tv;
		h->round = htonl(b->round);
		break;
	case TW_NBLOCKS:
		h->nblocks = htonl((__u32)c->tv);
		break;
	case TW_COUNT:
		h->count = htons((__u16)c->tv);
		break;
	case TW_KLASS:
		h->klass = htons((__u16)c->tv);
		break;
	case TW_DTYPE:
		h->dtype = htons((__u16)c->tv);
		break;
	}
	ip_fix_csum(ip);
}

/* ---- expected arithmetic ---------------------------------------------- */

static __s64 floor_div(__s64 a, __s64 b)
{
	__s64 q = a / b;

	if ((a % b) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* x / 2^d rounded to nearest: [lo, hi] (hi = lo + 1 only on an exact tie) */
static void align_nearest(__s32 x, int d, __s64 *lo, __s64 *hi)
{
	__s64 den, fl, rem;

	if (d == 0) {
		*lo = *hi = x;
		return;
	}
	if (d >= 62) {	/* |x| / 2^62 < 1/2 */
		*lo = *hi = 0;
		return;
	}
	den = 1LL << d;
	fl = floor_div(x, den);
	rem = (__s64)x - fl * den;
	if (2 * rem < den) {
		*lo = *hi = fl;
	} else if (2 * rem > den) {
		*lo = *hi = fl + 1;
	} else {
		*lo = fl;
		*hi = fl + 1;
	}
}

/* ---- environment --------------------------------------------------------- */

static struct host_bpf *skel;
static int prog_fd, jobs_fd, nodes_fd, hops_fd, share_fd, result_fd, stats_fd;
static int partial_fd, cursors_fd;
static int ncpus;
static struct rinx_slot *res_before, *res_after;

static int read_stats(__u64 *out)
{
	return tl_percpu_sum(stats_fd, RINX_STAT_MAX, out);
}

static int read_results(struct rinx_slot *out)
{
	__u32 k;

	for (k = 0; k < NRES; k++)
		if (bpf_map_lookup_elem(result_fd, &k, &out[k]))
			return -errno;
	return 0;
}

/* The next round's size put_job gives the job (rinx_job.next_nblocks,
 * next_last_count): 0, none, but in run_next_round. */
static __u32 put_next_nblocks;
static __u16 put_next_last;

static int put_job(const struct jobcfg *j, __u32 nblocks)
{
	struct rinx_job job = {
		.token = j->token,
		.slot = j->slot,
		.round = j->round,
		.nblocks = nblocks,
		.last_count = j->last_count,
		.nclasses = j->nclasses,
		.nnodes = j->nnodes,
		.self = j->self,
		.qbits = j->qbits,
		.dtype = j->dtype,
		.window = WINDOW,
		.flags = RINX_JOB_KEEP,
		.bval = jbv(j),
		.next_nblocks = put_next_nblocks,
		.next_last_count = put_next_last,
	};
	int i;

	/* the ring's classes: block b in class b % nclasses; starts none */
	job.plen = j->nclasses < RINX_CMAP_MAX ? j->nclasses : 0;
	for (i = 0; i < job.plen; i++)
		job.cmap[i] = i;
	memset(job.start_to, 0xff, sizeof(job.start_to));
	return bpf_map_update_elem(jobs_fd, &j->id, &job, BPF_ANY);
}

static int put_hop(__u32 slot, __u32 klass, __u32 type,
		   const struct rinx_hop *h)
{
	__u32 k = RINX_HOP_INDEX(slot, klass, type);

	return bpf_map_update_elem(hops_fd, &k, h, BPF_ANY);
}

static int setup_maps(void)
{
	const struct rinx_hop junk = { .action = RINX_A_ADD_FWD, .step = 77,
					 .from = 3 };
	bool used[NSLOTS] = {};
	struct rinx_slot *s;
	__u32 k, slot, id, c;
	int i, t, err = 0;

	/* Every node of every slot, with slot-specific addresses. */
	for (slot = 0; slot < NSLOTS; slot++) {
		for (id = 0; id < RINX_MAX_NODES; id++) {
			struct rinx_node n = {};

			node_mac(slot, id, n.mac);
			n.ip = node_ip(slot, id);
			k = slot * RINX_MAX_NODES + id;
			err |= bpf_map_update_elem(nodes_fd, &k, &n, BPF_ANY);
		}
	}
	for (i = 0; i < J_MAX; i++) {
		const struct jobcfg *j = &jobcfg[i];

		err |= put_job(j, j->nblocks);
		if (j->slot >= NSLOTS || !j->nclasses)
			continue;
		used[j->slot] = true;
		for (c = 0; c < RINX_MAX_CLASSES; c++) {
			for (t = RINX_T_REDUCE; t <= RINX_T_GATHER; t++) {
				struct rinx_hop h = {};

				if (c < j->nclasses)
					h = ring_hop(j->self, j->nnodes, c, t);
				err |= put_hop(j->slot, c, t, &h);
			}
		}
	}
	/* Slots without a plan get entries that would fail every check: a
	 * lookup in the wrong slot shows as a counter difference. */
	for (slot = 0; slot < NSLOTS; slot++) {
		if (used[slot])
			continue;
		for (c = 0; c < RINX_MAX_CLASSES; c++)
			for (t = RINX_T_REDUCE; t <= RINX_T_GATHER; t++)
				err |= put_hop(slot, c, t, &junk);
	}
	/* Results start as a marker pattern, so any write shows. */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (k = 0; k < NRES; k++) {
		s->round = 0xdead0000 | k;
		s->exp = 0x1234;
		s->flags = 0x80;
		s->resv = 0x5a;
		s->count = 0x7777;
		s->step = 0x6666;
		s->sent_us = 0x55555555;
		for (i = 0; i < RINX_BLOCK_VALUES; i++)
			s->v[i] = (__s32)(0xa5a5a5a5 ^ (k << 12) ^ i);
		err |= bpf_map_update_elem(result_fd, &k, s, BPF_ANY);
	}
	free(s);
	return err ? -EIO : 0;
}

/* ---- TAP with known-bug TODO -------------------------------------------- */

static __attribute__((format(printf, 3, 4)))
int check(const struct tcase *c, int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (c && c->todo)
		printf(" # TODO %s", c->todo);
	else if (!cond)
		tap_fail++;
	printf("\n");
	fflush(stdout);
	return cond;
}

static const char *stat_name[RINX_STAT_MAX] = {
	[RINX_STAT_RX] = "RX",
	[RINX_STAT_PASS] = "PASS",
	[RINX_STAT_REDUCE_FWD] = "REDUCE_FWD",
	[RINX_STAT_REDUCE_FINISH] = "REDUCE_FINISH",
	[RINX_STAT_GATHER_FWD] = "GATHER_FWD",
	[RINX_STAT_GATHER_END] = "GATHER_END",
	[RINX_STAT_SLOW_NOT_READY] = "SLOW_NOT_READY",
	[RINX_STAT_SLOW_FUTURE] = "SLOW_FUTURE",
	[RINX_STAT_SLOW_MISMATCH] = "SLOW_MISMATCH",
	[RINX_STAT_DROP_SHORT] = "DROP_SHORT",
	[RINX_STAT_DROP_VERSION] = "DROP_VERSION",
	[RINX_STAT_DROP_TYPE] = "DROP_TYPE",
	[RINX_STAT_DROP_JOB] = "DROP_JOB",
	[RINX_STAT_DROP_TOKEN] = "DROP_TOKEN",
	[RINX_STAT_DROP_SENDER] = "DROP_SENDER",
	[RINX_STAT_DROP_BOUNDS] = "DROP_BOUNDS",
	[RINX_STAT_DROP_STALE] = "DROP_STALE",
	[RINX_STAT_DROP_NO_ROUTE] = "DROP_NO_ROUTE",
	[RINX_STAT_DROP_NO_XSK] = "DROP_NO_XSK",
	[RINX_STAT_ABORTED] = "ABORTED",
	[RINX_STAT_DROP_MEMBER] = "DROP_MEMBER",
	[RINX_STAT_DROP_AHEAD] = "DROP_AHEAD",
	[RINX_STAT_DROP_SHAPE] = "DROP_SHAPE",
	[RINX_STAT_RREPAIR] = "RREPAIR",
	[RINX_STAT_RNACK_MISS] = "RNACK_MISS",
	[RINX_STAT_DROP_DUP] = "DROP_DUP",
};

static const char *act_name(int a)
{
	static const char *n[] = { "ABORTED", "DROP", "PASS", "TX",
				   "REDIRECT" };

	return a >= 0 && a < 5 ? n[a] : "?";
}

/* ---- the cases ----------------------------------------------------------- */

#define R	RINX_T_REDUCE
#define G	RINX_T_GATHER
#define S(x)	RINX_STAT_##x
#define RXD(x)	{ { S(RX), 1 }, { S(x), 1 } }
#define RX_NO_XSK RXD(DROP_NO_XSK)

static const struct tcase cases[] = {
	/* reduce path */
	{ "reduce ADD_FWD class 0, equal exponents", .type = R, .block = 0,
	  .exp = 3, .sh_exp = 3, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD class 3 (step 1), equal exponents", .type = R,
	  .block = 7, .exp = -5, .sh_exp = -5, .ret = XDP_TX,
	  .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, share exponent 2 lower (ties)", .type = R,
	  .block = 4, .exp = 5, .sh_exp = 3, .sh_vals = V_TIES,
	  .ret = XDP_TX, .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, frame exponent 9 lower (ties)", .type = R,
	  .block = 8, .exp = -2, .sh_exp = 7, .vals = V_TIES,
	  .ret = XDP_TX, .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, shift 1 (ties)", .type = R, .block = 3,
	  .exp = 0, .sh_exp = 1, .vals = V_TIES, .ret = XDP_TX,
	  .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, shift 27", .type = R, .block = 0,
	  .exp = 100, .sh_exp = 73, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, shift 30", .type = R, .block = 0,
	  .exp = -70, .sh_exp = -100, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, shift 31", .type = R, .block = 4,
	  .exp = 10, .sh_exp = 41, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, shift 40", .type = R, .block = 4,
	  .exp = 10, .sh_exp = -30, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, shift 31 of full-range int32", .type = R,
	  .block = 0, .exp = 0, .sh_exp = 31, .vals = V_BIG,
	  .sh_vals = V_ZERO, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, shift 32 of full-range int32", .type = R,
	  .block = 3, .exp = 0, .sh_exp = 32, .vals = V_BIG,
	  .sh_vals = V_ZERO, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, shift 40 of full-range int32 share", .type = R,
	  .block = 7, .exp = 9, .sh_exp = -31, .sh_vals = V_BIG,
	  .ret = XDP_TX, .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, zero frame (RINX_EXP_ZERO)", .type = R,
	  .block = 0, .exp = RINX_EXP_ZERO, .vals = V_ZERO, .sh_exp = 4,
	  .ret = XDP_TX, .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, zero share (RINX_EXP_ZERO)", .type = R,
	  .block = 3, .exp = -9, .sh_exp = RINX_EXP_ZERO, .sh_vals = V_ZERO,
	  .ret = XDP_TX, .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, extreme exponents", .type = R, .block = 7,
	  .exp = 32767, .sh_exp = -32767, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, nonfinite flags OR'ed", .type = R, .block = 0,
	  .flags = RINX_F_NAN, .sh_flags = RINX_F_PINF | RINX_F_NINF,
	  .ret = XDP_TX, .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, IP DF bit is accepted", .type = R, .block = 0,
	  .tw = TW_FRAG, .tv = 0x4000, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FWD, short last block (count 100)", .type = R,
	  .block = 11, .nblocks = 12, .exp = 2, .sh_exp = 1, .ret = XDP_TX,
	  .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "reduce ADD_FINISH class 2, equal exponents", .type = R,
	  .block = 2, .exp = 1, .sh_exp = 1, .ret = XDP_TX,
	  .ex = EX_ADD_FIN, .st = RXD(REDUCE_FINISH) },
	{ "reduce ADD_FINISH, exponents differ, flags", .type = R,
	  .block = 6, .exp = 2, .sh_exp = 6, .vals = V_TIES,
	  .flags = RINX_F_NINF, .sh_flags = RINX_F_NAN, .ret = XDP_TX,
	  .ex = EX_ADD_FIN, .st = RXD(REDUCE_FINISH) },
	{ "reduce ADD_FINISH, short last block (count 100)", .type = R,
	  .block = 10, .exp = -3, .sh_exp = -3, .ret = XDP_TX,
	  .ex = EX_ADD_FIN, .st = RXD(REDUCE_FINISH) },
	/* gather path */
	{ "gather STORE_FWD class 1 (step 0)", .type = G, .block = 1,
	  .exp = 7, .flags = RINX_F_PINF, .ret = XDP_TX, .ex = EX_STORE_FWD,
	  .st = RXD(GATHER_FWD) },
	{ "gather STORE_FWD class 0 (step 1)", .type = G, .block = 8,
	  .exp = -7, .ret = XDP_TX, .ex = EX_STORE_FWD,
	  .st = RXD(GATHER_FWD) },
	{ "gather STORE_FWD needs no local share", .type = G, .block = 5,
	  .sh = SH_OLD, .ret = XDP_TX, .ex = EX_STORE_FWD,
	  .st = RXD(GATHER_FWD) },
	{ "gather STORE_END class 3 (step 2)", .type = G, .block = 3,
	  .exp = 12, .flags = RINX_F_NAN, .ret = XDP_DROP,
	  .ex = EX_STORE_END, .st = RXD(GATHER_END) },
	{ "gather STORE_END, short last block", .type = G, .block = 11,
	  .nblocks = 12, .ret = XDP_DROP, .ex = EX_STORE_END,
	  .st = RXD(GATHER_END) },
	/* a job of small frames (MTU 1,500): the same hops on 352 values,
	 * the slots' values past them untouched */
	{ "small frames: reduce ADD_FWD class 0, equal exponents",
	  .job = J_SMALL, .type = R, .block = 0, .exp = 3, .sh_exp = 3,
	  .ret = XDP_TX, .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "small frames: reduce ADD_FWD, share exponent 2 lower (ties)",
	  .job = J_SMALL, .type = R, .block = 4, .exp = 5, .sh_exp = 3,
	  .sh_vals = V_TIES, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "small frames: reduce ADD_FINISH, exponents differ, flags",
	  .job = J_SMALL, .type = R, .block = 6, .exp = 2, .sh_exp = 6,
	  .vals = V_TIES, .flags = RINX_F_NINF, .ret = XDP_TX,
	  .ex = EX_ADD_FIN, .st = RXD(REDUCE_FINISH) },
	{ "small frames: reduce ADD_FINISH, short last block (count 100)",
	  .job = J_SMALL, .type = R, .block = 10, .exp = -3, .sh_exp = -3,
	  .ret = XDP_TX, .ex = EX_ADD_FIN, .st = RXD(REDUCE_FINISH) },
	{ "small frames: gather STORE_FWD class 1", .job = J_SMALL,
	  .type = G, .block = 1, .exp = 7, .ret = XDP_TX,
	  .ex = EX_STORE_FWD, .st = RXD(GATHER_FWD) },
	{ "small frames: gather STORE_END class 3", .job = J_SMALL,
	  .type = G, .block = 3, .exp = 12, .ret = XDP_DROP,
	  .ex = EX_STORE_END, .st = RXD(GATHER_END) },
	{ "small-frame job: a full-size frame is another size (drop_shape)",
	  .job = J_SMALL, .type = R, .block = 0, .tw = TW_LEN,
	  .tv = FULL_LEN, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_SHAPE) },
	{ "small-frame job: count 353 is more than a frame holds",
	  .job = J_SMALL, .type = R, .block = 10, .tw = TW_COUNT,
	  .tv = RINX_BLOCK_VALUES_MIN + 1, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_BOUNDS) },
	{ "small-frame job: count 351 on a full block (slow path)",
	  .job = J_SMALL, .type = R, .block = 0, .tw = TW_COUNT,
	  .tv = RINX_BLOCK_VALUES_MIN - 1, .ret = XDP_DROP, .ex = EX_SAME,
	  .st = RX_NO_XSK },
	/* int32 job: wrapping sums, round wrap */
	{ "int32 job: ADD_FWD wraps", .job = J_I32, .type = R, .block = 0,
	  .vals = V_BIG, .sh_vals = V_BIG, .ret = XDP_TX, .ex = EX_ADD_FWD,
	  .st = RXD(REDUCE_FWD) },
	{ "int32 job: ADD_FINISH wraps", .job = J_I32, .type = R,
	  .block = 3, .vals = V_BIG, .sh_vals = V_BIG, .ret = XDP_TX,
	  .ex = EX_ADD_FIN, .st = RXD(REDUCE_FINISH) },
	{ "int32 job: ADD_FWD last block of 1 value", .job = J_I32,
	  .type = R, .block = 4, .vals = V_BIG, .sh_vals = V_BIG,
	  .ret = XDP_TX, .ex = EX_ADD_FWD, .st = RXD(REDUCE_FWD) },
	{ "int32 job: gather STORE_FWD class 1 (step 1)", .job = J_I32,
	  .type = G, .block = 1, .vals = V_BIG, .ret = XDP_TX,
	  .ex = EX_STORE_FWD, .st = RXD(GATHER_FWD) },
	{ "int32 job: next round across the wrap -> slow path",
	  .job = J_I32, .type = R, .block = 0, .tw = TW_ROUND, .tv = 1,
	  .ret = XDP_DROP, .ex = EX_SAME, .st = RX_NO_XSK },
	{ "int32 job: previous round -> stale", .job = J_I32, .type = R,
	  .block = 0, .tw = TW_ROUND, .tv = -1, .ret = XDP_DROP,
	  .ex = EX_ANY, .st = RXD(DROP_STALE) },
	/* slow path (no AF_XDP socket bound: dropped and counted) */
	{ "share not ready (older round) at ADD_FWD", .type = R,
	  .block = 0, .sh = SH_OLD, .ret = XDP_DROP, .ex = EX_SAME,
	  .st = RX_NO_XSK },
	{ "share not ready (newer round) at ADD_FWD", .type = R,
	  .block = 3, .sh = SH_NEW, .ret = XDP_DROP, .ex = EX_SAME,
	  .st = RX_NO_XSK },
	{ "share not ready at ADD_FINISH", .type = R, .block = 2,
	  .sh = SH_OLD, .ret = XDP_DROP, .ex = EX_SAME, .st = RX_NO_XSK },
	{ "next-round reduce frame", .type = R, .block = 0, .tw = TW_ROUND,
	  .tv = 1, .ret = XDP_DROP, .ex = EX_SAME, .st = RX_NO_XSK },
	{ "next-round gather frame", .type = G, .block = 1, .tw = TW_ROUND,
	  .tv = 1, .ret = XDP_DROP, .ex = EX_SAME, .st = RX_NO_XSK },
	{ "size mismatch: nblocks differs from the job's", .type = R,
	  .block = 0, .tw = TW_NBLOCKS, .tv = 12, .ret = XDP_DROP,
	  .ex = EX_SAME, .st = RX_NO_XSK },
	{ "size mismatch: count 700 on a full block", .type = R,
	  .block = 0, .tw = TW_COUNT, .tv = 700, .ret = XDP_DROP,
	  .ex = EX_SAME, .st = RX_NO_XSK },
	{ "size mismatch: count 768 on the last block", .type = R,
	  .block = 10, .tw = TW_COUNT, .tv = 768,
	  .ret = XDP_DROP, .ex = EX_SAME, .st = RX_NO_XSK },
	{ "size mismatch: gather count 99 on the last block", .type = G,
	  .block = 11, .nblocks = 12, .tw = TW_COUNT, .tv = 99,
	  .ret = XDP_DROP, .ex = EX_SAME, .st = RX_NO_XSK },
	{ "dtype mismatch", .type = R, .block = 0, .tw = TW_DTYPE,
	  .tv = RINX_W_INT32, .ret = XDP_DROP, .ex = EX_SAME,
	  .st = RX_NO_XSK },
	/* not rinx: passed untouched */
	{ "13-byte frame: refused by the kernel", .type = R, .block = 0,
	  .tw = TW_LEN, .tv = 13, .ex = EX_EINVAL },
	{ "ethernet header only", .type = R, .block = 0, .tw = TW_LEN,
	  .tv = 14, .ret = XDP_PASS, .ex = EX_SAME, .st = { { S(PASS), 1 } } },
	{ "truncated IPv4 header", .type = R, .block = 0, .tw = TW_LEN,
	  .tv = 33, .ret = XDP_PASS, .ex = EX_SAME, .st = { { S(PASS), 1 } } },
	{ "truncated UDP header", .type = R, .block = 0, .tw = TW_LEN,
	  .tv = 41, .ret = XDP_PASS, .ex = EX_SAME, .st = { { S(PASS), 1 } } },
	{ "ARP", .type = R, .block = 0, .tw = TW_ETHTYPE, .tv = ETH_P_ARP,
	  .ret = XDP_PASS, .ex = EX_SAME, .st = { { S(PASS), 1 } } },
	{ "IPv6 ethertype", .type = R, .block = 0, .tw = TW_ETHTYPE,
	  .tv = ETH_P_IPV6, .ret = XDP_PASS, .ex = EX_SAME,
	  .st = { { S(PASS), 1 } } },
	{ "VLAN-tagged", .type = R, .block = 0, .tw = TW_ETHTYPE,
	  .tv = ETH_P_8021Q, .ret = XDP_PASS, .ex = EX_SAME,
	  .st = { { S(PASS), 1 } } },
	{ "TCP to the rinx port", .type = R, .block = 0, .tw = TW_IPPROTO,
	  .tv = IPPROTO_TCP, .ret = XDP_PASS, .ex = EX_SAME,
	  .st = { { S(PASS), 1 } } },
	{ "UDP to another port", .type = R, .block = 0, .tw = TW_DPORT,
	  .tv = 53, .ret = XDP_PASS, .ex = EX_SAME, .st = { { S(PASS), 1 } } },
	{ "UDP to the default port (rodata port is set)", .type = R,
	  .block = 0, .tw = TW_DPORT, .tv = RINX_DEFAULT_PORT,
	  .ret = XDP_PASS, .ex = EX_SAME, .st = { { S(PASS), 1 } } },
	/* malformed rinx frames */
	{ "UDP header, no rinx header", .type = R, .block = 0, .tw = TW_LEN,
	  .tv = OFF_HDR, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_SHORT) },
	{ "truncated rinx header", .type = R, .block = 0, .tw = TW_LEN,
	  .tv = OFF_V - 1, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_SHORT) },
	{ "rinx header, no payload", .type = R, .block = 0, .tw = TW_LEN,
	  .tv = OFF_V, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_SHORT) },
	{ "payload one byte short of a full block: a small frame, not the "
	  "job's size", .type = R, .block = 0, .tw = TW_LEN,
	  .tv = FULL_LEN - 1, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_SHAPE) },
	{ "payload one byte short of a small block", .type = R, .block = 0,
	  .tw = TW_LEN, .tv = OFF_V + RINX_BLOCK_BYTES_MIN - 1,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_SHORT) },
	{ "short last block not padded", .type = R, .block = 10,
	  .tw = TW_LEN, .tv = OFF_V + 4 * 100, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_SHORT) },
	{ "IP options (ihl 6)", .type = R, .block = 0, .tw = TW_IHL, .tv = 6,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_SHORT) },
	{ "IP fragment (MF)", .type = R, .block = 0, .tw = TW_FRAG,
	  .tv = 0x2000, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_SHORT) },
	{ "IP fragment (offset)", .type = R, .block = 0, .tw = TW_FRAG,
	  .tv = 0x0001, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_SHORT) },
	{ "bad magic", .type = R, .block = 0, .tw = TW_MAGIC,
	  .tv = 0x52494e59, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_VERSION) },
	{ "bad version 0", .type = R, .block = 0, .tw = TW_VERSION, .tv = 0,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_VERSION) },
	{ "bad version 1 (32-bit token)", .type = R, .block = 0,
	  .tw = TW_VERSION, .tv = 1, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_VERSION) },
	{ "bad type 0", .type = R, .block = 0, .tw = TW_TYPE, .tv = 0,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_TYPE) },
	{ "bad type 8", .type = R, .block = 0, .tw = TW_TYPE, .tv = RINX_T_MAX,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_TYPE) },
	{ "parameter-server frame of a job without a store", .type = R,
	  .block = 0, .tw = TW_TYPE, .tv = RINX_T_PS, .ret = XDP_DROP,
	  .ex = EX_ANY, .st = RXD(DROP_NO_ROUTE) },
	{ "contribution to a host that aggregates nothing", .type = R,
	  .block = 0, .tw = TW_TYPE, .tv = RINX_T_CONTRIB, .ret = XDP_DROP,
	  .ex = EX_ANY, .st = RXD(DROP_NO_ROUTE) },
	{ "bad type 255", .type = R, .block = 0, .tw = TW_TYPE, .tv = 255,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_TYPE) },
	{ "unknown job", .type = R, .block = 0, .tw = TW_JOB,
	  .tv = 0x00c0ffef, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_JOB) },
	{ "wrong token", .type = R, .block = 0, .tw = TW_TOKEN,
	  .tv = 0x1dea5eed1235LL, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_TOKEN) },
	{ "token wrong in the high 32 bits only", .type = R, .block = 0,
	  .tw = TW_TOKEN, .tv = 0x1deb5eed1234LL, .ret = XDP_DROP,
	  .ex = EX_ANY, .st = RXD(DROP_TOKEN) },
	{ "token of another job", .type = G, .block = 1, .tw = TW_TOKEN,
	  .tv = 0x0badf00d, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_TOKEN) },
	{ "count 0", .type = R, .block = 0, .tw = TW_COUNT, .tv = 0,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "count 769", .type = R, .block = 0, .tw = TW_COUNT, .tv = 769,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "count 65535", .type = G, .block = 1, .tw = TW_COUNT, .tv = 65535,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "block == nblocks", .type = G, .block = 12, .tw = TW_NBLOCKS,
	  .tv = 12, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "block 0xffffffff", .type = R, .block = 0xffffffff,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "nblocks 0", .type = R, .block = 0, .tw = TW_NBLOCKS, .tv = 0,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "nblocks > window", .type = G, .block = 1, .tw = TW_NBLOCKS,
	  .tv = WINDOW + 1, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_BOUNDS) },
	{ "block beyond window", .type = R, .block = WINDOW, .tw = TW_NBLOCKS,
	  .tv = WINDOW + 1, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_BOUNDS) },
	{ "wrong klass (block + 1)", .type = R, .block = 0, .tw = TW_KLASS,
	  .tv = 1, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "klass = nclasses", .type = R, .block = 0, .tw = TW_KLASS,
	  .tv = 4, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "klass >= RINX_MAX_CLASSES", .type = R, .block = 0, .tw = TW_KLASS,
	  .tv = RINX_MAX_CLASSES, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_BOUNDS) },
	{ "job slot out of range", .job = J_BADSLOT, .type = R, .block = 0,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "job without classes", .job = J_NOCLASS, .type = R, .block = 0,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_BOUNDS) },
	{ "reduce of this node's own class: no route", .type = R,
	  .block = 1, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_NO_ROUTE) },
	{ "gather of the class this node finishes: no route", .type = G,
	  .block = 2, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_NO_ROUTE) },
	/* a sender id that is not the source address's node: no member */
	{ "wrong sender id (self)", .type = R, .block = 0, .tw = TW_SENDER,
	  .tv = 1, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_MEMBER) },
	{ "wrong sender id (next)", .type = G, .block = 1, .tw = TW_SENDER,
	  .tv = 2, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_MEMBER) },
	{ "sender id 64 + planned", .type = R, .block = 0, .tw = TW_SENDER,
	  .tv = 64, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_MEMBER) },
	{ "sender id 4: not a node of the 4-node job", .type = R,
	  .block = 0, .tw = TW_SENDER, .tv = 4, .ret = XDP_DROP,
	  .ex = EX_ANY, .st = RXD(DROP_MEMBER) },
	{ "wrong step (+1)", .type = R, .block = 3, .tw = TW_STEP, .tv = 1,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_SENDER) },
	{ "wrong step (-1)", .type = G, .block = 3, .tw = TW_STEP, .tv = -1,
	  .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_SENDER) },
	{ "wrong step at ADD_FINISH", .type = R, .block = 2, .tw = TW_STEP,
	  .tv = 1, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_SENDER) },
	{ "wrong source IP (other node)", .type = R, .block = 0,
	  .tw = TW_SADDR, .tv = 0x0a020301, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_MEMBER) },
	{ "wrong source IP (same node id, other slot)", .type = R,
	  .block = 0, .tw = TW_SADDR, .tv = 0x0a000001, .ret = XDP_DROP,
	  .ex = EX_ANY, .st = RXD(DROP_MEMBER) },
	{ "stale round (previous)", .type = R, .block = 0, .tw = TW_ROUND,
	  .tv = -1, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_STALE) },
	{ "stale round (long ago)", .type = G, .block = 1, .tw = TW_ROUND,
	  .tv = -1000, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_STALE) },
	{ "far-future round (+2)", .type = R, .block = 0, .tw = TW_ROUND,
	  .tv = 2, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_AHEAD) },
	{ "far-future round (+1000)", .type = G, .block = 1, .tw = TW_ROUND,
	  .tv = 1000, .ret = XDP_DROP, .ex = EX_ANY, .st = RXD(DROP_AHEAD) },
	{ "far-future round (+2^31)", .type = G, .block = 1, .tw = TW_ROUND,
	  .tv = 0x80000000LL, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_STALE) },
	/* broken plan entries */
	{ "hop 'from' outside the node table", .type = R, .block = 0,
	  .tw = TW_HOP_FROM, .tv = 1000, .ret = XDP_DROP, .ex = EX_ANY,
	  .st = RXD(DROP_SENDER) },
	{ "hop 'to' outside the node table (ADD_FWD)", .type = R,
	  .block = 0, .tw = TW_HOP_TO, .tv = 1000, .ret = XDP_ABORTED,
	  .ex = EX_ANY, .st = RXD(ABORTED) },
	{ "hop 'to' outside the node table (STORE_FWD)", .type = G,
	  .block = 1, .tw = TW_HOP_TO, .tv = 1000, .ret = XDP_ABORTED,
	  .ex = EX_STORE_ONLY, .st = RXD(ABORTED) },
};

/* ---- one case ------------------------------------------------------------ */

static __u8 in[FULL_LEN], out[4096], want[FULL_LEN];
static __s64 lo[RINX_BLOCK_VALUES], hi[RINX_BLOCK_VALUES];

static void diag_bytes(const __u8 *got, const __u8 *exp, int len)
{
	int i, n = 0;

	for (i = 0; i < len && n < 8; i++) {
		if (got[i] == exp[i])
			continue;
		tap_diag("  byte %d: got 0x%02x want 0x%02x", i, got[i],
			 exp[i]);
		n++;
	}
}

/* Block idx not passed here this round: no partial sum kept, the result
 * slot back to its marker (setup_maps). */
static int fresh_block(__u32 idx)
{
	struct rinx_slot *z = calloc(1, sizeof(*z));
	int err;

	if (!z)
		return -ENOMEM;
	err = bpf_map_update_elem(partial_fd, &idx, z, BPF_ANY);
	if (!err && !bpf_map_lookup_elem(result_fd, &idx, z) &&
	    (z->round >> 16) != 0xdead) {
		z->round = 0xdead0000 | idx;
		err = bpf_map_update_elem(result_fd, &idx, z, BPF_ANY);
	}
	free(z);
	return err;
}

/* the checks run_case makes of C: the action, the output frame when it is
 * compared (unchanged, rewritten, or its length kept), the result map and
 * the counters */
static int case_checks(const struct tcase *c)
{
	bool fwd = c->ex == EX_ADD_FWD || c->ex == EX_ADD_FIN ||
		   c->ex == EX_STORE_FWD;

	return 3 + (c->ex == EX_SAME || fwd || c->ex == EX_STORE_END);
}

/* the checks of run_ring_repair */
#define RING_REPAIR_CHECKS 15

static void run_case(int ci)
{
	const struct tcase *c = &cases[ci];
	const struct jobcfg *j = &jobcfg[c->job];
	struct rinx_hdr *wh = (struct rinx_hdr *)(want + OFF_HDR);
	const __s32 *ov = (const __s32 *)(out + OFF_V);
	__s32 *wv = (__s32 *)(want + OFF_V);
	__u64 st0[RINX_STAT_MAX], st1[RINX_STAT_MAX];
	__s64 want_st[RINX_STAT_MAX] = {};
	struct rinx_slot *sh = NULL;
	struct rinx_hop saved_hop = {};
	bool add, fwd, stores, ok;
	__u32 idx = ~0u, hk = 0;
	struct built b;
	int err, i, e;

	LIBBPF_OPTS(bpf_test_run_opts, opts);

	rng = 0x9e3779b9u * (ci + 1);
	build(c, in, &b);
	add = c->ex == EX_ADD_FWD || c->ex == EX_ADD_FIN;
	fwd = c->ex == EX_ADD_FWD || c->ex == EX_ADD_FIN ||
	      c->ex == EX_STORE_FWD;
	stores = c->ex == EX_ADD_FIN || c->ex == EX_STORE_FWD ||
		 c->ex == EX_STORE_END || c->ex == EX_STORE_ONLY;

	/* Local state of the case. */
	err = 0;
	if (c->nblocks)
		err |= put_job(j, c->nblocks);
	if (j->slot < NSLOTS && c->block < WINDOW) {
		idx = j->slot * WINDOW + c->block;
		/* every case is the block's first pass here this round: a
		 * ring hop drops what it passed on already (run_ring_repair) */
		err |= fresh_block(idx);
		sh = calloc(1, sizeof(*sh));
		if (!sh)
			exit(1);
		sh->round = j->round + (c->sh == SH_OLD ? -1 :
					c->sh == SH_NEW ? 1 : 0);
		sh->exp = c->sh_exp;
		sh->flags = c->sh_flags;
		sh->count = b.count;
		gen_vals(sh->v, b.count, c->sh_vals, j->qbits, b.dshift_sh);
		err |= bpf_map_update_elem(share_fd, &idx, sh, BPF_ANY);
	}
	if (c->tw == TW_HOP_TO || c->tw == TW_HOP_FROM) {
		struct rinx_hop h = b.hop;

		hk = RINX_HOP_INDEX(j->slot, b.klass, c->type);
		saved_hop = h;
		if (c->tw == TW_HOP_TO)
			h.to = (__u16)c->tv;
		else
			h.from = (__u16)c->tv;
		err |= bpf_map_update_elem(hops_fd, &hk, &h, BPF_ANY);
	}
	err |= read_stats(st0);
	err |= read_results(res_before);
	if (err) {
		check(NULL, 0, "%s: set up state", c->name);
		free(sh);
		return;
	}

	opts.data_in = in;
	opts.data_size_in = b.len;
	opts.data_out = out;
	opts.data_size_out = sizeof(out);
	opts.repeat = 1;
	memset(out, 0xee, sizeof(out));
	err = bpf_prog_test_run_opts(prog_fd, &opts);
	if (err)
		err = -errno;

	/* 1. action */
	if (c->ex == EX_EINVAL) {
		check(c, err == -EINVAL, "%s: test run refused (%d)", c->name,
		      err);
	} else if (!check(c, !err && (int)opts.retval == c->ret,
			  "%s: %s", c->name, act_name(c->ret))) {
		tap_diag("  test run %d, retval %u (%s)", err, opts.retval,
			 act_name(opts.retval));
	}

	/* 2. output frame */
	memcpy(want, in, b.len);
	if (add) {
		const __s32 *iv = (const __s32 *)(in + OFF_V);

		e = c->exp > c->sh_exp ? c->exp : c->sh_exp;
		for (i = 0; i < jbv(j); i++) {
			__s64 al, ah, bl, bh;

			if (b.dshift_in == 0 && b.dshift_sh == 0) {
				/* equal exponents: exact (wrapping) sum */
				lo[i] = hi[i] = (__s32)((__u32)iv[i] +
							(__u32)sh->v[i]);
				continue;
			}
			align_nearest(iv[i], b.dshift_in, &al, &ah);
			align_nearest(sh->v[i], b.dshift_sh, &bl, &bh);
			lo[i] = al + bl;
			hi[i] = ah + bh;
		}
		wh->exp = htons((__u16)e);
		wh->flags |= c->sh_flags;
	}
	if (fwd) {
		__u16 to = b.hop.to;
		__u8 *wip = want + OFF_IP;

		node_mac(j->slot, to, want);
		node_mac(j->slot, j->self, want + 6);
		memcpy(wip + 12, &(__be32){ node_ip(j->slot, j->self) }, 4);
		memcpy(wip + 16, &(__be32){ node_ip(j->slot, to) }, 4);
		ip_fix_csum(wip);
		put16(want + OFF_UDP + 6, 0);
		wh->sender = htons(j->self);
		if (c->ex == EX_ADD_FIN) {
			wh->type = RINX_T_GATHER;
			wh->step = 0;
		} else {
			wh->step++;
		}
	}
	if (c->ex == EX_SAME) {
		ok = opts.data_size_out == (__u32)b.len &&
		     !memcmp(out, in, b.len);
		if (!check(c, ok, "%s: frame unchanged", c->name))
			diag_bytes(out, in, b.len);
	} else if (fwd) {
		int bad = -1;

		ok = opts.data_size_out == (__u32)b.len &&
		     !memcmp(out, want, OFF_V);
		for (i = 0; i < jbv(j); i++) {
			__s64 w = add ? lo[i] : wv[i];
			__s64 wh2 = add ? hi[i] : wv[i];

			if (ov[i] < w || ov[i] > wh2) {
				bad = i;
				break;
			}
		}
		ok = ok && bad < 0 &&
		     csum16(out + OFF_IP, 20) == 0;	/* valid checksum */
		if (!check(c, ok, "%s: frame rewritten to node %u", c->name,
			   b.hop.to)) {
			tap_diag("  size out %u (want %d)", opts.data_size_out,
				 b.len);
			diag_bytes(out, want, OFF_V);
			if (bad >= 0)
				tap_diag("  v[%d] = %d, want [%lld, %lld]",
					 bad, ov[bad], (long long)lo[bad],
					 (long long)hi[bad]);
		}
		/* the verified payload is the one to expect in the result */
		memcpy(wv, ov, jbv(j) * 4);
	} else if (c->ex == EX_STORE_END) {
		check(c, opts.data_size_out == (__u32)b.len,
		      "%s: frame length kept", c->name);
	}

	/* 3. result map: only the stored slot changes, exactly */
	if (read_results(res_after)) {
		check(c, 0, "%s: read result map", c->name);
	} else {
		int bad = -1;
		__u32 k;

		for (k = 0; k < NRES; k++) {
			struct rinx_slot w = res_before[k];

			if (stores && k == idx) {
				const struct rinx_hdr *ih;

				ih = (const struct rinx_hdr *)
				     (fwd ? want + OFF_HDR : in + OFF_HDR);
				w.round = b.round;
				w.exp = (__s16)ntohs(ih->exp);
				w.flags = ih->flags;
				w.count = ntohs(ih->count);
				/* a small frame writes its values only */
				memcpy(w.v, fwd ? want + OFF_V : in + OFF_V,
				       jbv(j) * 4);
			}
			if (memcmp(&w, &res_after[k], sizeof(w))) {
				bad = k;
				break;
			}
		}
		if (!check(c, bad < 0, "%s: result map %s", c->name,
			   stores ? "slot stored" : "unchanged"))
			tap_diag("  result slot %d differs (round %u, exp %d, "
				 "count %u)", bad, res_after[bad].round,
				 res_after[bad].exp, res_after[bad].count);
	}

	/* 4. counters */
	for (i = 0; i < (int)ARRAY_SIZE(c->st); i++)
		if (c->st[i].n)
			want_st[c->st[i].stat] += c->st[i].n;
	if (read_stats(st1)) {
		check(c, 0, "%s: read counters", c->name);
	} else {
		ok = true;
		for (i = 0; i < RINX_STAT_MAX; i++)
			if ((__s64)(st1[i] - st0[i]) != want_st[i])
				ok = false;
		if (!check(c, ok, "%s: counters", c->name)) {
			for (i = 0; i < RINX_STAT_MAX; i++)
				if ((__s64)(st1[i] - st0[i]) != want_st[i])
					tap_diag("  %s: +%lld, want +%lld",
						 stat_name[i],
						 (long long)(st1[i] - st0[i]),
						 (long long)want_st[i]);
		}
	}

	/* Undo case-only state. */
	if (c->nblocks)
		put_job(j, j->nblocks);
	if (c->tw == TW_HOP_TO || c->tw == TW_HOP_FROM)
		bpf_map_update_elem(hops_fd, &hk, &saved_hop, BPF_ANY);
	free(sh);
}

/* Runs frame f (len bytes) once: the action, the output in out, and the
 * counter deltas in d. */
static int run_frame(const __u8 *f, int len, __u64 *d)
{
	__u64 a[RINX_STAT_MAX], b[RINX_STAT_MAX];
	struct tl_run r;
	int k;

	if (read_stats(a) ||
	    tl_xdp_run(prog_fd, f, len, 0, out, sizeof(out), &r) ||
	    read_stats(b))
		return -1;
	for (k = 0; k < RINX_STAT_MAX; k++)
		d[k] = b[k] - a[k];
	return (int)r.ret;
}

/* Frame f as an RNACK from node `who` of job j (round + de). */
static void as_rnack(__u8 *f, const struct jobcfg *j, __u16 who, __u32 de)
{
	struct rinx_hdr *h = (struct rinx_hdr *)(f + OFF_HDR);

	h->type = RINX_T_RNACK;
	h->flags = 0;
	h->sender = htons(who);
	h->round = htonl(j->round + de);
	node_mac(j->slot, who, f + 6);
	memcpy(f + OFF_IP + 12, &(__be32){ node_ip(j->slot, who) }, 4);
	memset(f + OFF_V, 0, RINX_BLOCK_BYTES);
	ip_fix_csum(f + OFF_IP);
}

/* Frame `first` as an RNACK from `who` (round `round` + de), run once. */
static int run_rnack(const __u8 *first, const struct jobcfg *j, __u16 who,
		     __u32 de, __u64 *d)
{
	memcpy(in, first, FULL_LEN);
	as_rnack(in, j, who, de);
	return run_frame(in, FULL_LEN, d);
}

/*
 * Per-hop repair of a ring's reduce, and the drop of what a ring hop
 * passed on already. J_MAIN's node 1 of 4: class 0 is ADD_FWD from 0 to
 * 2 (block 0), class 1 starts here (block 1, to node 2).
 */
static void run_ring_repair(void)
{
	const struct jobcfg *j = &jobcfg[J_MAIN];
	const struct tcase red = { "ring repair", J_MAIN, RINX_T_REDUCE, 0,
				   .vals = V_RAND, .sh_vals = V_RAND };
	const struct tcase gat = { "ring repair", J_MAIN, RINX_T_GATHER, 0,
				   .vals = V_RAND };
	__u32 idx = j->slot * WINDOW, idx1 = idx + 1, slot = j->slot;
	struct rinx_slot sh = { .round = j->round, .count = RINX_BLOCK_VALUES };
	struct rinx_slot kept, res;
	struct rinx_cursor cur = { .round = j->round };
	struct rinx_job job;
	struct rinx_hdr *oh = (struct rinx_hdr *)(out + OFF_HDR);
	__u8 first[FULL_LEN];
	__u64 d[RINX_STAT_MAX];
	struct built b;
	int ret, i;

	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		sh.v[i] = i * 3 - 1000;
	if (!check(NULL, !fresh_block(idx) && !fresh_block(idx1) &&
			 !bpf_map_update_elem(share_fd, &idx, &sh, BPF_ANY) &&
			 !bpf_map_update_elem(share_fd, &idx1, &sh, BPF_ANY) &&
			 !put_job(j, j->nblocks),
		   "ring repair: state set up"))
		return;
	rng = 0x1234567;
	build(&red, in, &b);
	ret = run_frame(in, b.len, d);
	memcpy(first, out, FULL_LEN);
	check(NULL, ret == XDP_TX && d[RINX_STAT_REDUCE_FWD] == 1,
	      "ring repair: reduce added and sent on (%s)", act_name(ret));
	memset(&kept, 0, sizeof(kept));
	bpf_map_lookup_elem(partial_fd, &idx, &kept);
	check(NULL, kept.round == j->round && kept.step == first[OFF_HDR +
		    offsetof(struct rinx_hdr, step)] && kept.step == 1 &&
		    kept.count == b.count &&
		    !memcmp(kept.v, first + OFF_V, RINX_BLOCK_BYTES),
	      "ring repair: the sum sent on is kept with its step (%u, sent "
	      "%u)", kept.step, first[OFF_HDR + offsetof(struct rinx_hdr,
							step)]);
	ret = run_frame(in, b.len, d);
	check(NULL, ret == XDP_DROP && d[RINX_STAT_DROP_DUP] == 1 &&
		    d[RINX_STAT_REDUCE_FWD] == 0,
	      "ring repair: the same reduce again is a duplicate, dropped "
	      "(%s)", act_name(ret));

	/* the successor (node 2) asks for it again */
	ret = run_rnack(first, j, 2, 0, d);
	check(NULL, ret == XDP_TX && d[RINX_STAT_RREPAIR] == 1 &&
		    oh->type == RINX_T_REDUCE && oh->step == kept.step &&
		    ntohs(oh->sender) == j->self &&
		    !memcmp(out + OFF_V, kept.v, RINX_BLOCK_BYTES) &&
		    !memcmp(out, first, 12) &&
		    (out[OFF_IP + 1] & RINX_ECN_MASK) == RINX_ECN_ECT0,
	      "ring repair: RNACK of the successor answered with the kept "
	      "sum, to it (%s)", act_name(ret));
	ret = run_rnack(first, j, 3, 0, d);
	check(NULL, ret == XDP_DROP && d[RINX_STAT_RNACK_MISS] == 1,
	      "ring repair: RNACK of a node this hop does not send to: "
	      "missed (%s)", act_name(ret));
	ret = run_rnack(first, j, 2, 1, d);
	check(NULL, ret == XDP_DROP && d[RINX_STAT_RNACK_MISS] == 1,
	      "ring repair: RNACK of another round: missed (%s)",
	      act_name(ret));

	/* the origin of class 1 answers from its share what it sent */
	job = (struct rinx_job){ 0 };
	check(NULL, !bpf_map_lookup_elem(jobs_fd, &j->id, &job),
	      "ring repair: job read");
	job.start_to[1] = 2;
	job.start_type[1] = RINX_T_REDUCE;
	job.nown = 1;
	job.own[0] = 1;
	memcpy(in, first, FULL_LEN);
	as_rnack(in, j, 2, 0);
	((struct rinx_hdr *)(in + OFF_HDR))->block = htonl(1);
	((struct rinx_hdr *)(in + OFF_HDR))->klass = htons(1);
	ip_fix_csum(in + OFF_IP);
	check(NULL, !bpf_map_update_elem(jobs_fd, &j->id, &job, BPF_ANY) &&
		    !bpf_map_update_elem(cursors_fd, &slot, &cur, BPF_ANY),
	      "ring repair: node 1 starts class 1, nothing claimed");
	ret = run_frame(in, FULL_LEN, d);
	check(NULL, ret == XDP_DROP && d[RINX_STAT_RNACK_MISS] == 1,
	      "ring repair: RNACK for an own block not sent yet: missed (%s)",
	      act_name(ret));
	cur.next = 1;
	bpf_map_update_elem(cursors_fd, &slot, &cur, BPF_ANY);
	ret = run_frame(in, FULL_LEN, d);
	check(NULL, ret == XDP_TX && d[RINX_STAT_RREPAIR] == 1 &&
		    oh->type == RINX_T_REDUCE && oh->step == 0 &&
		    ntohl(oh->block) == 1 &&
		    !memcmp(out + OFF_V, sh.v, RINX_BLOCK_BYTES),
	      "ring repair: RNACK for an own block sent: answered from the "
	      "share, step 0 (%s)", act_name(ret));
	memset(&cur, 0, sizeof(cur));
	bpf_map_update_elem(cursors_fd, &slot, &cur, BPF_ANY);
	put_job(j, j->nblocks);

	/* a gather stored and sent on once */
	build(&gat, in, &b);
	ret = run_frame(in, b.len, d);
	check(NULL, ret == XDP_TX && d[RINX_STAT_GATHER_FWD] == 1 &&
		    !bpf_map_lookup_elem(result_fd, &idx, &res) &&
		    res.round == j->round,
	      "ring repair: gather stored and sent on (%s)", act_name(ret));
	ret = run_frame(in, b.len, d);
	check(NULL, ret == XDP_DROP && d[RINX_STAT_DROP_DUP] == 1,
	      "ring repair: the same gather again is a duplicate, dropped "
	      "(%s)", act_name(ret));
	/* without RINX_JOB_KEEP a hop keeps nothing and drops nothing: the
	 * origin's resend drives the block along its path again */
	job = (struct rinx_job){ 0 };
	bpf_map_lookup_elem(jobs_fd, &j->id, &job);
	job.flags = 0;
	fresh_block(idx);
	check(NULL, !bpf_map_update_elem(jobs_fd, &j->id, &job, BPF_ANY),
	      "ring repair: job without RINX_JOB_KEEP");
	build(&red, in, &b);
	ret = run_frame(in, b.len, d);
	i = run_frame(in, b.len, d);
	memset(&kept, 0, sizeof(kept));
	bpf_map_lookup_elem(partial_fd, &idx, &kept);
	check(NULL, ret == XDP_TX && i == XDP_TX &&
		    d[RINX_STAT_REDUCE_FWD] == 1 && kept.round == 0,
	      "ring repair: without it the same reduce is sent on twice, "
	      "nothing kept (%s, %s)", act_name(ret), act_name(i));
	put_job(j, j->nblocks);
	fresh_block(idx);
	fresh_block(idx1);
}

/* ---- jumbo blocks ------------------------------------------------------- */

#define JUMBO_LEN	RINX_FRAME_LEN(RINX_BLOCK_VALUES_JUMBO)
#define JUMBO_CHECKS	30

static __u8 jin[JUMBO_LEN], jout[JUMBO_LEN + 64];
static __s32 jsh[RINX_BLOCK_VALUES_JUMBO];

/* A jumbo frame of job j for block `block` of plan type `type` at exp,
 * as the ring's node before this one sends it; values into v. */
static void jumbo_frame(const struct jobcfg *j, __u8 type, __u32 block,
			__s16 exp, __u16 count, __u32 nblocks)
{
	__u16 klass = block % j->nclasses;
	struct rinx_hop hop = ring_hop(j->self, j->nnodes, klass, type);
	__u8 dmac[6], smac[6];
	struct tl_addr a = {
		.dst_mac = dmac, .src_mac = smac, .port = PORT, .ip_id = 7,
	};
	__s32 *v = (__s32 *)(jin + OFF_V);

	node_mac(j->slot, j->self, dmac);
	node_mac(j->slot, hop.from, smac);
	a.saddr = node_ip(j->slot, hop.from);
	a.daddr = node_ip(j->slot, j->self);
	tl_frame(jin, JUMBO_LEN, &a);
	tl_hdr_put((struct rinx_hdr *)(jin + OFF_HDR), &(struct tl_hdr){
		.type = type, .step = hop.step, .job = j->id,
		.token = j->token, .round = j->round, .block = block,
		.nblocks = nblocks, .sender = hop.from, .count = count,
		.klass = klass, .exp = exp, .dtype = j->dtype,
	});
	gen_vals(v, count, V_RAND, j->qbits, 0);
}

/* The share of jumbo block `block` (values jsh, count, exp) into its
 * RINX_JUMBO_SLOTS slots; the first one's header speaks for it. */
static int jumbo_share(const struct jobcfg *j, __u32 block, __u16 count,
		       __s16 exp)
{
	struct rinx_slot sl;
	__u32 idx = j->slot * WINDOW + block * RINX_JUMBO_SLOTS, k;
	int err = 0;

	gen_vals(jsh, count, V_RAND, j->qbits, 0);
	memset(jsh + count, 0, (RINX_BLOCK_VALUES_JUMBO - count) * 4);
	for (k = 0; k < RINX_JUMBO_SLOTS; k++, idx++) {
		memset(&sl, 0, sizeof(sl));
		sl.round = j->round;
		sl.exp = exp;
		sl.count = count;
		memcpy(sl.v, jsh + k * RINX_BLOCK_VALUES,
		       (k + 1 < RINX_JUMBO_SLOTS ? RINX_BLOCK_VALUES :
			RINX_BLOCK_VALUES_JUMBO - k * RINX_BLOCK_VALUES) * 4);
		err |= bpf_map_update_elem(share_fd, &idx, &sl, BPF_ANY);
	}
	return err;
}

/* Values of the jumbo block in map fd from its first slot idx differ from
 * want[] at how many places (-1: not readable)? */
static int jumbo_slots_diff(int fd, __u32 idx, const __s32 *want,
			    __u32 round)
{
	struct rinx_slot sl;
	int k, i, n, bad = 0;

	for (k = 0; k < RINX_JUMBO_SLOTS; k++) {
		__u32 key = idx + k;

		if (bpf_map_lookup_elem(fd, &key, &sl))
			return -1;
		if (k == 0 && sl.round != round)
			return -1;
		n = k + 1 < RINX_JUMBO_SLOTS ? RINX_BLOCK_VALUES :
		    RINX_BLOCK_VALUES_JUMBO - k * RINX_BLOCK_VALUES;
		for (i = 0; i < n; i++)
			bad += sl.v[i] != want[k * RINX_BLOCK_VALUES + i];
	}
	return bad;
}

static int jrun(int len, __u64 *d, __u32 *olen)
{
	__u64 a[RINX_STAT_MAX], b[RINX_STAT_MAX];
	struct tl_run r;
	int k;

	if (read_stats(a) ||
	    tl_xdp_run(prog_fd, jin, len, 0, jout, sizeof(jout), &r) ||
	    read_stats(b))
		return -1;
	for (k = 0; k < RINX_STAT_MAX; k++)
		d[k] = b[k] - a[k];
	*olen = r.len;
	return (int)r.ret;
}

/* Only counter `stat` moved (by one), besides RX? */
static int only(const __u64 *d, int stat)
{
	int k;

	for (k = 0; k < RINX_STAT_MAX; k++)
		if (k != RINX_STAT_RX && d[k] != (__u64)(k == stat))
			return 0;
	return d[RINX_STAT_RX] == 1;
}

/*
 * Jumbo blocks (J_JUMBO, node 1 of 4): multi-buffer frames, whose payload
 * runs past the linear part of the test run's frame (a page less head and
 * tail room) into a fragment, so one slice of the program straddles the
 * two and goes through its copy; every value of the output and of the
 * slots is compared with sums computed here.
 */
static void run_jumbo(void)
{
	const struct jobcfg *j = &jobcfg[J_JUMBO];
	const __s32 *ov = (const __s32 *)(jout + OFF_V);
	const __s32 *iv = (const __s32 *)(jin + OFF_V);
	const struct rinx_hdr *oh = (const struct rinx_hdr *)(jout + OFF_HDR);
	__u32 base = j->slot * WINDOW, olen;
	__s32 want[RINX_BLOCK_VALUES_JUMBO];
	__s64 lo, hi;
	__u64 d[RINX_STAT_MAX];
	int ret, i, bad;

	/* block 0, class 0: add and forward; the frame's exponent 3 is
	 * aligned to the share's 5 (rounded to nearest) */
	jumbo_frame(j, RINX_T_REDUCE, 0, 3, RINX_BLOCK_VALUES_JUMBO,
		    j->nblocks);
	ASSERT_OK(jumbo_share(j, 0, RINX_BLOCK_VALUES_JUMBO, 5),
		  "jumbo add+fwd: share written");
	ret = jrun(JUMBO_LEN, d, &olen);
	ASSERT_EQ(ret, XDP_TX, "jumbo add+fwd: action");
	ASSERT_EQ(olen, JUMBO_LEN, "jumbo add+fwd: the whole frame leaves");
	ASSERT_EQ((__s16)ntohs(oh->exp), 5, "jumbo add+fwd: exponent");
	ASSERT_EQ(oh->step, 1, "jumbo add+fwd: step");
	for (i = 0, bad = 0; i < RINX_BLOCK_VALUES_JUMBO; i++) {
		align_nearest(iv[i], 2, &lo, &hi);
		bad += ov[i] < lo + jsh[i] || ov[i] > hi + jsh[i];
	}
	ASSERT_EQ(bad, 0, "jumbo add+fwd: values off the aligned sum");
	memcpy(want, ov, sizeof(want));
	ASSERT_EQ(jumbo_slots_diff(partial_fd, base, want, j->round), 0,
		  "jumbo add+fwd: kept sum in the partial slots");
	ASSERT_TRUE(only(d, RINX_STAT_REDUCE_FWD), "jumbo add+fwd: counters");

	/* block 2, class 2: add and finish, one exponent: exact sums */
	jumbo_frame(j, RINX_T_REDUCE, 2, 4, RINX_BLOCK_VALUES_JUMBO,
		    j->nblocks);
	ASSERT_OK(jumbo_share(j, 2, RINX_BLOCK_VALUES_JUMBO, 4),
		  "jumbo add+finish: share written");
	for (i = 0; i < RINX_BLOCK_VALUES_JUMBO; i++)
		want[i] = iv[i] + jsh[i];
	ret = jrun(JUMBO_LEN, d, &olen);
	ASSERT_EQ(ret, XDP_TX, "jumbo add+finish: action");
	ASSERT_EQ(oh->type, RINX_T_GATHER, "jumbo add+finish: a gather leaves");
	ASSERT_MEMEQ(ov, want, sizeof(want), "jumbo add+finish: values");
	ASSERT_EQ(jumbo_slots_diff(result_fd, base + 2 * RINX_JUMBO_SLOTS,
				   want, j->round), 0,
		  "jumbo add+finish: result slots");
	ASSERT_TRUE(only(d, RINX_STAT_REDUCE_FINISH),
		    "jumbo add+finish: counters");

	/* node 3 asks for finished block 2 (NACK): the stored block is
	 * sent back from the result slots, into a frame of zeroes */
	jumbo_frame(j, RINX_T_REDUCE, 2, 0, RINX_BLOCK_VALUES_JUMBO,
		    j->nblocks);
	{
		struct rinx_hdr *h = (struct rinx_hdr *)(jin + OFF_HDR);

		h->type = RINX_T_NACK;
		h->sender = htons(3);
		h->step = 0;
		node_mac(j->slot, 3, jin + 6);
		memcpy(jin + OFF_IP + 12, &(__be32){ node_ip(j->slot, 3) },
		       4);
		memset(jin + OFF_V, 0, RINX_BLOCK_BYTES_JUMBO);
		ip_fix_csum(jin + OFF_IP);
	}
	ret = jrun(JUMBO_LEN, d, &olen);
	ASSERT_EQ(ret, XDP_TX, "jumbo NACK: action");
	ASSERT_EQ(olen, JUMBO_LEN, "jumbo NACK: the whole frame leaves");
	ASSERT_MEMEQ(ov, want, sizeof(want), "jumbo NACK: the stored values");
	ASSERT_TRUE(only(d, RINX_STAT_REPAIR), "jumbo NACK: counters");

	/* block 3, class 3: a gather that ends here is stored */
	jumbo_frame(j, RINX_T_GATHER, 3, -2, RINX_BLOCK_VALUES_JUMBO,
		    j->nblocks);
	memcpy(want, iv, sizeof(want));
	ret = jrun(JUMBO_LEN, d, &olen);
	ASSERT_EQ(ret, XDP_DROP, "jumbo store+end: action (nothing to send)");
	ASSERT_EQ(jumbo_slots_diff(result_fd, base + 3 * RINX_JUMBO_SLOTS,
				   want, j->round), 0,
		  "jumbo store+end: result slots");
	ASSERT_TRUE(only(d, RINX_STAT_GATHER_END), "jumbo store+end: counters");

	/* the last block (4, class 0) is short: its tail stays zero; the
	 * share's exponent 1 is aligned to the frame's 6 */
	jumbo_frame(j, RINX_T_REDUCE, 4, 6, j->last_count, j->nblocks);
	ASSERT_OK(jumbo_share(j, 4, j->last_count, 1),
		  "jumbo last block: share written");
	ret = jrun(JUMBO_LEN, d, &olen);
	for (i = 0, bad = 0; i < RINX_BLOCK_VALUES_JUMBO; i++) {
		align_nearest(jsh[i], 5, &lo, &hi);
		bad += ov[i] < iv[i] + lo || ov[i] > iv[i] + hi ||
		       (i >= j->last_count && ov[i]);
	}
	ASSERT_EQ(ret, XDP_TX, "jumbo last block: action");
	ASSERT_EQ(bad, 0, "jumbo last block: values (tail zero)");

	/* shapes: a round too large for the window in jumbo blocks, a
	 * full-size frame for a jumbo job, a jumbo frame for a full-size
	 * job */
	jumbo_frame(j, RINX_T_REDUCE, 0, 0, RINX_BLOCK_VALUES_JUMBO,
		    WINDOW / RINX_JUMBO_SLOTS + 1);
	ret = jrun(JUMBO_LEN, d, &olen);
	ASSERT_EQ(ret, XDP_DROP, "jumbo: round past the window: action");
	ASSERT_TRUE(only(d, RINX_STAT_DROP_BOUNDS),
		    "jumbo: round past the window: DROP_BOUNDS");
	jumbo_frame(j, RINX_T_REDUCE, 0, 0, RINX_BLOCK_VALUES, j->nblocks);
	ret = jrun(FULL_LEN, d, &olen);
	ASSERT_EQ(ret, XDP_DROP, "jumbo job, full-size frame: action");
	ASSERT_TRUE(only(d, RINX_STAT_DROP_SHAPE),
		    "jumbo job, full-size frame: DROP_SHAPE");
	jumbo_frame(&jobcfg[J_MAIN], RINX_T_REDUCE, 0, 0,
		    RINX_BLOCK_VALUES_JUMBO, jobcfg[J_MAIN].nblocks);
	ret = jrun(JUMBO_LEN, d, &olen);
	ASSERT_EQ(ret, XDP_DROP, "full-size job, jumbo frame: action");
	ASSERT_TRUE(only(d, RINX_STAT_DROP_SHAPE),
		    "full-size job, jumbo frame: DROP_SHAPE");
}

static void run_cases(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(i);
}

/*
 * The next round's frames, early (bpf/hop_kern_user.h, hop_next_ready):
 * where the trainer wrote a block's share for round + 1 (its slots are
 * done with this round here) and the job entry gives that round's size,
 * a ring hop takes the block's frame of round + 1 at once, and notes its
 * sender in the cursor as one that finished this round; anything else
 * of round + 1 goes to the trainer as before (the slow path: no socket is
 * bound here, so it is dropped as DROP_NO_XSK).
 */
#define NEXT_ROUND_CHECKS 9

/* Frame `in` (b) runs and goes to the trainer, not added here. */
static void to_trainer(const struct built *b, const char *what)
{
	__u64 d[RINX_STAT_MAX];
	int ret = run_frame(in, b->len, d);

	check(NULL, ret == XDP_DROP && d[RINX_STAT_DROP_NO_XSK] == 1 &&
		    d[RINX_STAT_REDUCE_FWD] == 0,
	      "next round: %s: to the trainer (%s)", what, act_name(ret));
}

static void run_next_round(void)
{
	const struct jobcfg *j = &jobcfg[J_MAIN];
	const struct tcase red = { "next round", J_MAIN, RINX_T_REDUCE, 0,
				   .exp = 5, .sh_exp = 5, .vals = V_RAND };
	const struct tcase gat = { "next round", J_MAIN, RINX_T_GATHER, 1,
				   .exp = 7, .vals = V_RAND };
	__u32 idx = j->slot * WINDOW, idx1 = idx + 1, nr = j->round + 1;
	__u32 slot = j->slot;
	struct rinx_cursor cur;
	struct rinx_slot sh = { .round = nr, .exp = 5,
				.count = RINX_BLOCK_VALUES };
	struct rinx_slot sh1 = { .round = nr, .count = RINX_BLOCK_VALUES };
	struct rinx_slot kept, res;
	struct rinx_hdr *h = (struct rinx_hdr *)(in + OFF_HDR);
	const __s32 *iv = (const __s32 *)(in + OFF_V);
	const __s32 *ov = (const __s32 *)(out + OFF_V);
	__u64 d[RINX_STAT_MAX];
	struct built b;
	int ret, i, bad = 0;

	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		sh.v[i] = i * 5 - 2000;
	put_next_nblocks = j->nblocks;
	put_next_last = j->last_count;
	if (!check(NULL, !fresh_block(idx) && !fresh_block(idx1) &&
			 !bpf_map_update_elem(share_fd, &idx, &sh, BPF_ANY) &&
			 !bpf_map_update_elem(share_fd, &idx1, &sh1,
					      BPF_ANY) &&
			 !put_job(j, j->nblocks),
		   "next round: state set up"))
		goto out;
	rng = 0x7654321;
	build(&red, in, &b);
	h->round = htonl(nr);
	/* the cursor's word of senders ahead, of an older round */
	memset(&cur, 0, sizeof(cur));
	bpf_map_lookup_elem(cursors_fd, &slot, &cur);
	cur.ahead_round = j->round;
	cur.ahead = 1ull << 9;
	bpf_map_update_elem(cursors_fd, &slot, &cur, BPF_ANY);
	ret = run_frame(in, b.len, d);
	for (i = 0; i < b.count; i++)
		bad += ov[i] != iv[i] + sh.v[i];
	memset(&kept, 0, sizeof(kept));
	bpf_map_lookup_elem(partial_fd, &idx, &kept);
	check(NULL, ret == XDP_TX && d[RINX_STAT_REDUCE_FWD] == 1 &&
		    d[RINX_STAT_DROP_NO_XSK] == 0 && !bad && kept.round == nr,
	      "next round: a reduce of round + 1 whose share is written for "
	      "it is added at once and sent on (%s, %d values wrong, kept "
	      "round %u)", act_name(ret), bad, kept.round);
	memset(&cur, 0, sizeof(cur));
	bpf_map_lookup_elem(cursors_fd, &slot, &cur);
	check(NULL, cur.ahead_round == nr &&
		    cur.ahead == 1ull << ntohs(h->sender),
	      "next round: its sender (%u) noted ahead in the cursor, for "
	      "round + 1 alone (round %u, senders %#llx)", ntohs(h->sender),
	      cur.ahead_round, (unsigned long long)cur.ahead);
	sh.round = j->round;
	bpf_map_update_elem(share_fd, &idx, &sh, BPF_ANY);
	fresh_block(idx);
	to_trainer(&b, "its share not written for round + 1");
	sh.round = nr;
	bpf_map_update_elem(share_fd, &idx, &sh, BPF_ANY);
	put_next_nblocks = 0;
	put_job(j, j->nblocks);
	to_trainer(&b, "a job entry without the next round's size");
	put_next_nblocks = j->nblocks - 6;
	put_job(j, j->nblocks);
	to_trainer(&b, "a frame of another size than the next round's");
	put_next_nblocks = j->nblocks;
	put_job(j, j->nblocks);
	h->round = htonl(nr + 1);
	ip_fix_csum(in + OFF_IP);
	sh.round = nr + 1;
	bpf_map_update_elem(share_fd, &idx, &sh, BPF_ANY);
	ret = run_frame(in, b.len, d);
	check(NULL, ret == XDP_DROP && d[RINX_STAT_DROP_AHEAD] == 1,
	      "next round: round + 2 is still ahead, dropped (%s)",
	      act_name(ret));

	/* a gather: the result of round + 1 overwrites the slot's */
	build(&gat, in, &b);
	h->round = htonl(nr);
	ret = run_frame(in, b.len, d);
	memset(&res, 0, sizeof(res));
	bpf_map_lookup_elem(result_fd, &idx1, &res);
	check(NULL, ret == XDP_TX && d[RINX_STAT_GATHER_FWD] == 1 &&
		    res.round == nr && !memcmp(res.v, iv, b.count * 4),
	      "next round: a gather of round + 1 whose share is written for "
	      "it is stored and sent on (%s, result round %u)", act_name(ret),
	      res.round);
	fresh_block(idx1);
	sh1.round = j->round;
	bpf_map_update_elem(share_fd, &idx1, &sh1, BPF_ANY);
	ret = run_frame(in, b.len, d);
	memset(&res, 0, sizeof(res));
	bpf_map_lookup_elem(result_fd, &idx1, &res);
	check(NULL, ret == XDP_DROP && d[RINX_STAT_DROP_NO_XSK] == 1 &&
		    res.round != nr,
	      "next round: a gather of round + 1 before its share: to the "
	      "trainer, the result slot untouched (%s)", act_name(ret));
out:
	put_next_nblocks = 0;
	put_next_last = 0;
	put_job(j, j->nblocks);
	sh.round = sh1.round = j->round;
	bpf_map_update_elem(share_fd, &idx, &sh, BPF_ANY);
	bpf_map_update_elem(share_fd, &idx1, &sh1, BPF_ANY);
	fresh_block(idx);
	fresh_block(idx1);
}

/*
 * A share rewritten while the program adds it (allreduce.c, convert_blocks:
 * round word 0, the values, then the new round; hop_add reads the word
 * again after the add). Trials: block 0's share holds values A of the
 * round, and a thread rewrites it through the trainer's mapping to values
 * B of round + 1, as the trainer writes the next round's share of a block
 * whose late duplicates may still come, while reduce frames of the round
 * run. Each one the program sends on must carry exactly its values plus
 * A. Before the second read, some carried part of B (a wrong block, seen
 * once in CI).
 */
#define SHARE_REWRITE_CHECKS 2
#define REWRITE_RUNS 6000
#define REWRITE_PER 6		/* reduces per rewrite */

struct rewriter {
	struct rinx_slot *s;
	__u32 round;
	const struct rinx_slot *b;
	volatile int go, stop;
	long turns;
};

/* As convert_blocks writes a share: round word 0, the values, the round. */
static void *rewriter_main(void *arg)
{
	struct rewriter *w = arg;

	while (!w->stop) {
		struct timespec t0, t;
		long wait = (w->turns * 7919) % 30000;	/* 0..30 us */

		if (!w->go)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000000000l + t.tv_nsec -
		       t0.tv_nsec < wait);
		__atomic_store_n(&w->s->round, 0, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		memcpy(w->s->v, w->b->v, sizeof(w->s->v));
		__atomic_store_n(&w->s->round, w->round + 1, __ATOMIC_RELEASE);
		w->turns++;
		w->go = 0;
	}
	return NULL;
}

static void run_share_rewrite(void)
{
	const struct jobcfg *j = &jobcfg[J_MAIN];
	const struct tcase red = { "rewrite", J_MAIN, RINX_T_REDUCE, 0,
				   .exp = 5, .sh_exp = 5, .vals = V_RAND };
	struct rinx_slot a = { .round = j->round, .exp = 5,
			       .count = RINX_BLOCK_VALUES }, b;
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), idx = j->slot * WINDOW;
	const __s32 *ov = (const __s32 *)(out + OFF_V);
	__s32 iv[RINX_BLOCK_VALUES];
	struct rewriter w = { 0 };
	size_t bytes = 0;
	pthread_t th;
	void *map = MAP_FAILED;
	long sent = 0, wrong = 0, held = 0;
	struct built bb;
	struct tl_run r;
	int i, k, bad;

	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		a.v[i] = i * 5 - 2000;
	b = a;
	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		b.v[i] = a.v[i] + 1000;
	if (!bpf_obj_get_info_by_fd(share_fd, &info, &len)) {
		bytes = (size_t)info.max_entries * info.value_size;
		bytes = (bytes + 4095) & ~(size_t)4095;
		map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			   share_fd, 0);
	}
	if (!check(NULL, map != MAP_FAILED && !put_job(j, j->nblocks) &&
			 !bpf_map_update_elem(share_fd, &idx, &a, BPF_ANY) &&
			 !fresh_block(idx),
		   "share rewrite: the share map mapped, state set up")) {
		check(NULL, 0, "share rewrite: not run");
		if (map != MAP_FAILED)
			munmap(map, bytes);
		return;
	}
	rng = 0x5eed;
	build(&red, in, &bb);
	memcpy(iv, in + OFF_V, sizeof(iv));
	w.s = (struct rinx_slot *)map + idx;
	w.round = j->round;
	w.b = &b;
	if (pthread_create(&th, NULL, rewriter_main, &w)) {
		check(NULL, 0, "share rewrite: no thread");
		munmap(map, bytes);
		return;
	}
	/* trials: the round's share A back in place, then one rewrite to
	 * round + 1 while reduces of the round run */
	for (k = 0; k < REWRITE_RUNS; k++) {
		if (k % REWRITE_PER == 0) {
			while (w.go)
				;
			memcpy(w.s->v, a.v, sizeof(a.v));
			__atomic_store_n(&w.s->round, j->round,
					 __ATOMIC_RELEASE);
			w.go = 1;
		}
		if (fresh_block(idx) ||
		    tl_xdp_run(prog_fd, in, bb.len, 0, out, sizeof(out), &r))
			break;
		if (r.ret != XDP_TX) {
			held++;
			continue;
		}
		sent++;
		for (i = 0, bad = 0; i < bb.count; i++)
			bad += ov[i] != iv[i] + a.v[i];
		wrong += bad > 0;
	}
	w.stop = 1;
	pthread_join(th, NULL);
	check(NULL, k == REWRITE_RUNS && sent > 0 && !wrong && held > 0,
	      "share rewrite: of %d reduces run while the share was rewritten "
	      "%ld times, %ld sent on, every one with the round's share alone "
	      "(%ld wrong), %ld dropped or handed up mid-rewrite", k, w.turns,
	      sent, wrong, held);
	bpf_map_update_elem(share_fd, &idx, &a, BPF_ANY);
	fresh_block(idx);
	munmap(map, bytes);
}

static struct tl_subtest subtests[] = {
	{ "cases", 0, run_cases },	/* checks: case_checks of each */
	{ "ring_repair", RING_REPAIR_CHECKS, run_ring_repair },
	{ "jumbo", JUMBO_CHECKS, run_jumbo },
	{ "next_round", NEXT_ROUND_CHECKS, run_next_round },
	{ "share_rewrite", SHARE_REWRITE_CHECKS, run_share_rewrite },
};

int main(void)
{
	struct tl_host_opts o = {
		.port = PORT, .window = WINDOW, .nshare = NRES,
		.npartial = NRES,
		/* one more job than a node runs at once (J_BADSLOT holds no
		 * slot) */
		.njobs = J_MAX,
	};
	size_t i;
	int err;

	tl_needs_root("BPF_PROG_TEST_RUN");
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		subtests[0].checks += case_checks(&cases[i]);
	tl_plan(2, subtests, ARRAY_SIZE(subtests));
	skel = tl_host_load(&o, &err);
	if (!ASSERT_OK(err, "load rinx_host (window %d, port %d)", WINDOW,
		       PORT))
		return tap_done();
	prog_fd = bpf_program__fd(skel->progs.rinx_host);
	jobs_fd = bpf_map__fd(skel->maps.jobs);
	nodes_fd = bpf_map__fd(skel->maps.nodes);
	hops_fd = bpf_map__fd(skel->maps.hops);
	share_fd = bpf_map__fd(skel->maps.share);
	result_fd = bpf_map__fd(skel->maps.result);
	partial_fd = bpf_map__fd(skel->maps.partial);
	cursors_fd = bpf_map__fd(skel->maps.cursors);
	stats_fd = bpf_map__fd(skel->maps.stats);
	ncpus = libbpf_num_possible_cpus();
	res_before = calloc(NRES, sizeof(*res_before));
	res_after = calloc(NRES, sizeof(*res_after));
	if (!tap_ok(ncpus > 0 && res_before && res_after && !setup_maps(),
		    "set up jobs, nodes, hop plan, result markers"))
		return tap_done();
	tl_run(subtests, ARRAY_SIZE(subtests));

	host_bpf__destroy(skel);
	free(res_before);
	free(res_after);
	return tap_done();
}
