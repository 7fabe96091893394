// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fuzz test of the XDP programs (rinx_host, rinx_switch) through
 * BPF_PROG_TEST_RUN.
 *
 * Frames are valid reduce/gather frames of two jobs with mutations on top
 * (bit and byte flips, truncation, extension, header fields set to chosen or
 * random values) and purely random frames. Every frame runs once; after each
 * run the counters are read (one batch lookup) and checked:
 *
 *  - exactly one outcome counter moved, by one, and RX moved iff the frame
 *    was a rinx frame; the XDP action matches that outcome;
 *  - the outcome is the one a reference model of the job's rules (written
 *    here from uapi/rinx.h, with the tables the test itself set up) predicts;
 *  - no XDP_ABORTED; frames that are not transmitted leave unchanged;
 *  - the result map changes only where the model says a frame legitimately
 *    completed a block (a shadow copy is compared through an mmap: the
 *    stored slot after each store, the whole map every CHECK_EVERY frames);
 *  - share, jobs, hops and nodes (host) and the MAC table and devmap (switch)
 *    are unchanged at the end.
 *
 * RINX_FUZZ_N: frames per program (default 1000000: about 9 us a host
 * frame, 4.5 us a switch frame on 2 cores, ~13 s in all). RINX_FUZZ_SEED:
 * seed (printed). Frame i is generated from (seed, program, i) alone, so a
 * reported frame can be regenerated.
 *
 * No AF_XDP socket is bound: every slow-path frame ends as DROP_NO_XSK.
 */
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uapi/rinx.h"
#include "uapi/rinx_switch.h"
#include "host.skel.h"
#include "switch.skel.h"
#include "selftests/tap.h"

extern char **environ;

#define WINDOW		16
#define PORT		47123
#define NSLOTS		RINX_MAX_JOBS
#define NRES		(NSLOTS * WINDOW)
#define FULL_LEN	RINX_FRAME_MAX		/* 3152 */
#define MAX_LEN		3500
#define OFF_IP		14
#define OFF_UDP		34
#define OFF_HDR		42
#define OFF_V		RINX_FRAME_HDR_LEN
#define CHECK_EVERY	1024
#define MAX_REPORTS	4

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ---- random numbers ------------------------------------------------------ */

static __u64 seed = 0x72696e78667a7a31ULL;
static __u64 rs;

static __u64 splitmix(__u64 *x)
{
	__u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static __u32 rnd(void)
{
	return (__u32)(splitmix(&rs) >> 32);
}

static __u32 below(__u32 n)
{
	return (__u32)(((__u64)rnd() * n) >> 32);
}

static void frame_seed(int prog, __u64 i)
{
	rs = seed ^ ((__u64)prog << 56) ^ (i * 0xd1342543de82ef95ULL);
	splitmix(&rs);
}

/* ---- jobs and plan (the test's own copy of what it writes) ------------ */

struct jobcfg {
	__u32 id, token, slot, epoch, nblocks;
	__u16 last_count, nclasses, nnodes, self, qbits, dtype;
	__u32 ready;	/* bit b: share of block b written for epoch */
};

static const struct jobcfg jobs[] = {
	/* 4-node ring seen from node 1, fixed point */
	{ 0x00c0ffee, 0x5eed1234, 2, 1000, 11, 100, 4, 4, 1, 28,
	  RINX_W_FIXED, 0x0000054d },
	/* int32 sums, node 2 of 4, epoch about to wrap */
	{ 0x00000007, 0x0badf00d, 0, 0xffffffff, 5, 1, 4, 4, 2, 30,
	  RINX_W_INT32, 0x00000009 },
};

static const struct jobcfg *find_job(__u32 id)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(jobs); i++)
		if (jobs[i].id == id)
			return &jobs[i];
	return NULL;
}

/* Ring plan: class c is reduced from node c along c+1, ..., and finished at
 * c-1, which starts its gather along c, c+1, ..., ending at c-2. */
/* The ring's classes (block b in class b % n); the node starts nothing. */
static void job_classes(struct rinx_job *job, int n)
{
	int i;

	job->plen = n < RINX_CMAP_MAX ? n : 0;
	for (i = 0; i < job->plen; i++)
		job->cmap[i] = i;
	memset(job->start_to, 0xff, sizeof(job->start_to));
}

static struct rinx_hop plan(const struct jobcfg *j, __u32 c, int type)
{
	int n = j->nnodes, s = j->self, fin = ((int)c + n - 1) % n;
	struct rinx_hop h = {};

	if (c >= j->nclasses)
		return h;
	if (type == RINX_T_REDUCE) {
		if (s == (int)c)
			return h;
		h.action = s == fin ? RINX_A_ADD_FINISH : RINX_A_ADD_FWD;
		h.step = (__u8)((s - (int)c - 1 + 2 * n) % n);
	} else {
		if (s == fin)
			return h;
		h.action = (s + 2) % n == (int)c ? RINX_A_STORE_END :
						   RINX_A_STORE_FWD;
		h.step = (__u8)((s - (int)c + n) % n);
	}
	h.from = (__u16)((s + n - 1) % n);
	h.to = (__u16)((s + 1) % n);
	return h;
}

static void node_mac(__u32 slot, __u32 id, __u8 *mac)
{
	const __u8 m[6] = { 0x02, 0x52, 0x58, 0x00, (__u8)slot, (__u8)id };

	memcpy(mac, m, 6);
}

static __u32 node_ip(__u32 slot, __u32 id)	/* host order */
{
	return 0x0a000001 | slot << 16 | id << 8;
}

/* ---- byte helpers -------------------------------------------------------- */

static void put16(__u8 *p, __u16 v) { p[0] = v >> 8; p[1] = (__u8)v; }
static void put32(__u8 *p, __u32 v) { put16(p, v >> 16); put16(p + 2, v); }
static __u16 get16(const __u8 *p) { return (__u16)(p[0] << 8 | p[1]); }
static __u32 get32(const __u8 *p)
{
	return (__u32)get16(p) << 16 | get16(p + 2);
}

static __u16 csum16(const __u8 *b, int len)
{
	__u32 sum = 0;
	int i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)b[i] << 8 | b[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static void ip_fix_csum(__u8 *ip)
{
	put16(ip + 10, 0);
	put16(ip + 10, csum16(ip, 20));
}

static void rand_bytes(__u8 *p, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (__u8)rnd();
}

/* header field offsets (frame) */
enum {
	H_MAGIC = OFF_HDR + 0, H_VERSION = OFF_HDR + 4, H_TYPE = OFF_HDR + 5,
	H_FLAGS = OFF_HDR + 6, H_STEP = OFF_HDR + 7, H_JOB = OFF_HDR + 8,
	H_TOKEN = OFF_HDR + 12, H_EPOCH = OFF_HDR + 16,
	H_BLOCK = OFF_HDR + 20, H_NBLOCKS = OFF_HDR + 24,
	H_SENDER = OFF_HDR + 28, H_COUNT = OFF_HDR + 30,
	H_KLASS = OFF_HDR + 32, H_EXP = OFF_HDR + 34, H_DTYPE = OFF_HDR + 36,
};

/* ---- host frames --------------------------------------------------------- */

/* A valid frame of a job's block for a planned (class, type). */
static int build_valid(__u8 *buf, const struct jobcfg **jp)
{
	const struct jobcfg *j = &jobs[below(10) < 7 ? 0 : 1];
	struct rinx_hop h;
	__u32 block, cnt, i;
	__s32 lim;
	int type;

	/* a planned (class, type); now and then one this node has no
	 * part in (sent as if from the previous node) */
	do {
		block = below(j->nblocks);
		type = below(2) ? RINX_T_GATHER : RINX_T_REDUCE;
		h = plan(j, block % j->nclasses, type);
	} while (h.action == RINX_A_NONE && below(16));
	if (h.action == RINX_A_NONE)
		h.from = (__u16)((j->self + j->nnodes - 1) % j->nnodes);
	cnt = block == j->nblocks - 1 ? j->last_count : RINX_BLOCK_VALUES;

	memset(buf, 0, FULL_LEN);
	node_mac(j->slot, j->self, buf);
	node_mac(j->slot, h.from, buf + 6);
	put16(buf + 12, ETH_P_IP);
	buf[OFF_IP] = 0x45;
	put16(buf + OFF_IP + 2, FULL_LEN - OFF_IP);
	put16(buf + OFF_IP + 4, (__u16)rnd());
	put16(buf + OFF_IP + 6, below(2) ? 0x4000 : 0);
	buf[OFF_IP + 8] = 64;
	buf[OFF_IP + 9] = 17;
	put32(buf + OFF_IP + 12, node_ip(j->slot, h.from));
	put32(buf + OFF_IP + 16, node_ip(j->slot, j->self));
	put16(buf + OFF_UDP, PORT);
	put16(buf + OFF_UDP + 2, PORT);
	put16(buf + OFF_UDP + 4, FULL_LEN - OFF_UDP);

	put32(buf + H_MAGIC, RINX_MAGIC);
	buf[H_VERSION] = RINX_VERSION;
	buf[H_TYPE] = (__u8)type;
	buf[H_FLAGS] = below(8) ? 0 : (__u8)(rnd() & RINX_F_NONFINITE);
	buf[H_STEP] = h.step;
	put32(buf + H_JOB, j->id);
	put32(buf + H_TOKEN, j->token);
	put32(buf + H_EPOCH, j->epoch);
	put32(buf + H_BLOCK, block);
	put32(buf + H_NBLOCKS, j->nblocks);
	put16(buf + H_SENDER, h.from);
	put16(buf + H_COUNT, (__u16)cnt);
	put16(buf + H_KLASS, (__u16)(block % j->nclasses));
	put16(buf + H_EXP, j->dtype == RINX_W_INT32 ? 0 :
			   (__u16)(below(4) ? (__s16)(below(64) - 32) :
					      (__s16)rnd()));
	put16(buf + H_DTYPE, j->dtype);
	lim = (1 << j->qbits) - 1;
	for (i = 0; i < cnt; i++) {
		__s32 v = j->dtype == RINX_W_INT32 ? (__s32)rnd() :
			  (__s32)(rnd() % (2u * lim + 1)) - lim;

		memcpy(buf + OFF_V + 4 * i, &v, 4);
	}
	ip_fix_csum(buf + OFF_IP);
	*jp = j;
	return FULL_LEN;
}

static const __u32 epoch_deltas[] = { 1, 2, -1u, -2u, 0x80000000u, 1000 };

/* Set one header field to a chosen or random value. */
static void mutate_field(__u8 *b, const struct jobcfg *j, int *len)
{
	const struct jobcfg *o = &jobs[j == &jobs[0]];
	__u32 v = rnd();

	switch (below(24)) {
	case 0:
		put32(b + H_MAGIC, below(2) ? v : RINX_MAGIC ^ 1u << below(32));
		break;
	case 1:
		b[H_VERSION] = below(2) ? (__u8)below(3) : (__u8)v;
		break;
	case 2: {
		static const __u8 t[] = { 0, 1, 2, 3, 255 };

		b[H_TYPE] = below(3) ? t[below(5)] : (__u8)v;
		break;
	}
	case 3:
		put32(b + H_JOB, below(3) == 0 ? v : below(2) ? o->id :
			  j->id ^ 1u << below(32));
		break;
	case 4:
		put32(b + H_TOKEN, below(3) == 0 ? v : below(2) ? o->token :
			  j->token ^ 1u << below(32));
		break;
	case 5:
	case 6:
		put32(b + H_EPOCH, below(6) == 0 ? v : below(5) == 0 ?
			  o->epoch : j->epoch + epoch_deltas[below(6)]);
		break;
	case 7:
		put32(b + H_BLOCK, below(4) == 0 ? v : below(WINDOW + 4));
		break;
	case 8: {
		const __u32 n[] = { 0, 1, j->nblocks - 1, j->nblocks + 1,
				    WINDOW, WINDOW + 1, v };

		put32(b + H_NBLOCKS, n[below(ARRAY_SIZE(n))]);
		break;
	}
	case 9: {
		const __u16 c[] = { 0, 1, 100, 767, 768, 769, 65535,
				    (__u16)v };

		put16(b + H_COUNT, c[below(ARRAY_SIZE(c))]);
		break;
	}
	case 10:
		put16(b + H_KLASS, below(3) == 0 ? (__u16)v : below(2) ?
			  (__u16)below(5) : (__u16)(RINX_MAX_CLASSES +
						    below(2) - 1));
		break;
	case 11:
		put16(b + H_SENDER, below(3) == 0 ? (__u16)v :
			  (__u16)(below(5) + (below(4) ? 0 : 64)));
		break;
	case 12:
		b[H_STEP] = below(2) ? (__u8)below(4) : (__u8)v;
		break;
	case 13: {
		const __u16 e[] = { 0, 1, 0x7fff, 0x8000, 0x8001, 0xffff,
				    (__u16)v };

		put16(b + H_EXP, e[below(ARRAY_SIZE(e))]);
		break;
	}
	case 14:
		put16(b + H_DTYPE, below(2) ? (__u16)below(4) : (__u16)v);
		break;
	case 15:
		b[H_FLAGS] = (__u8)v;
		break;
	case 16:
		b[OFF_IP] = (__u8)(below(2) ? 0x40 | below(16) : v);
		break;
	case 17: {
		const __u16 f[] = { 0x2000, 0x0001, 0x4000, 0x1fff, 0x8000,
				    (__u16)v };

		put16(b + OFF_IP + 6, f[below(ARRAY_SIZE(f))]);
		break;
	}
	case 18: {
		const __u8 p[] = { 6, 17, 1, 0, (__u8)v };

		b[OFF_IP + 9] = p[below(ARRAY_SIZE(p))];
		break;
	}
	case 19:
		put32(b + OFF_IP + 12, below(3) == 0 ? v :
			  node_ip(below(2) ? j->slot : below(NSLOTS),
				  below(6)));
		break;
	case 20: {
		const __u16 p[] = { RINX_DEFAULT_PORT, PORT + 1, PORT - 1, 0,
				    PORT, (__u16)v };

		put16(b + OFF_UDP + 2, p[below(ARRAY_SIZE(p))]);
		break;
	}
	case 21: {
		const __u16 e[] = { 0x86dd, 0x0806, 0x8100, 0x0008, 0x0800,
				    (__u16)v };

		put16(b + 12, e[below(ARRAY_SIZE(e))]);
		break;
	}
	case 22: {
		/* truncate: anywhere, or around a parser boundary */
		const int at[] = { 14, 33, 34, 41, 42, 79, 80, FULL_LEN - 1 };

		int l = at[below(ARRAY_SIZE(at))];

		if (below(2))
			*len = 14 + below(*len - 13);
		else if (l < *len)
			*len = l;
		break;
	}
	case 23: {
		/* extend with random bytes */
		int n = *len + below(MAX_LEN - *len + 1);

		rand_bytes(b + *len, n - *len);
		*len = n;
		break;
	}
	}
}

/* Frame i of the host run into buf; returns its length. */
static int gen_host(__u8 *b)
{
	const struct jobcfg *j;
	int len, r = below(100), n, k;

	if (r < 8) {
		len = 14 + below(MAX_LEN - 13);
		rand_bytes(b, len);
		/* layers of plausibility, so some get past the parser */
		if (below(2) && len >= 14)
			put16(b + 12, ETH_P_IP);
		if (below(2) && len >= 34)
			b[OFF_IP + 9] = 17;
		if (below(2) && len >= 42)
			put16(b + OFF_UDP + 2, PORT);
		if (below(2) && len >= 34)
			b[OFF_IP] = 0x45, put16(b + OFF_IP + 6, 0);
		if (below(2) && len >= OFF_V) {
			put32(b + H_MAGIC, RINX_MAGIC);
			b[H_VERSION] = RINX_VERSION;
		}
		return len;
	}
	len = build_valid(b, &j);
	if (r < 14)
		return len;	/* an intentional valid frame */
	n = 1 + below(3);
	for (k = 0; k < n; k++) {
		int m = below(100), i, c;

		if (m < 55) {
			mutate_field(b, j, &len);
		} else if (m < 72) {
			/* bit flips, mostly in the headers */
			c = 1 + below(8);
			for (i = 0; i < c; i++) {
				int at = below(4) ? below(OFF_V) : below(len);

				if (at < len)
					b[at] ^= (__u8)(1 << below(8));
			}
		} else if (m < 84) {
			/* random bytes */
			c = 1 + below(4);
			for (i = 0; i < c; i++) {
				int at = below(3) ? below(OFF_V) : below(len);

				if (at < len)
					b[at] = (__u8)rnd();
			}
		} else if (m < 92) {
			len = 14 + below(len - 13);
		} else {
			/* payload flips: still a valid frame */
			c = 1 + below(16);
			for (i = 0; i < c && len > OFF_V; i++)
				b[OFF_V + below(len - OFF_V)] ^=
					(__u8)(1 << below(8));
		}
	}
	if (len >= OFF_UDP && below(4))
		ip_fix_csum(b + OFF_IP);
	return len;
}

/* ---- host reference model ------------------------------------------------ */

struct pred {
	int stat;	/* outcome counter */
	bool store;	/* a result slot is written */
	__u32 idx, epoch;
};

/* Counters that come with an outcome instead of being one. */
static bool annotation(int stat)
{
	return stat == RINX_STAT_ECN_CE || stat == RINX_STAT_PACED;
}

/* Outcomes of the host program that store a finished block. */
static bool stores_block(int stat)
{
	return stat == RINX_STAT_REDUCE_FINISH || stat == RINX_STAT_GATHER_FWD ||
	       stat == RINX_STAT_GATHER_END || stat == RINX_STAT_RECYCLED;
}

static int stat_action(int stat)
{
	switch (stat) {
	case RINX_STAT_PASS:
		return XDP_PASS;
	case RINX_STAT_REDUCE_FWD:
	case RINX_STAT_REDUCE_FINISH:
	case RINX_STAT_GATHER_FWD:
	case RINX_STAT_REPAIR:
	case RINX_STAT_HELLO_YES:
		return XDP_TX;
	case RINX_STAT_SLOW_NOT_READY:
	case RINX_STAT_SLOW_FUTURE:
	case RINX_STAT_SLOW_MISMATCH:
		return XDP_REDIRECT;
	case RINX_STAT_ABORTED:
		return XDP_ABORTED;
	default:
		return XDP_DROP;
	}
}

/* The result map as it must be (the shadow copy), for NACK answers. */
static const struct rinx_slot *res_model;

/* What the job's rules say about frame b (no AF_XDP socket is bound, so
 * every slow-path frame is dropped as NO_XSK). */
static struct pred host_model(const __u8 *b, int len)
{
	struct pred p = { .stat = RINX_STAT_DROP_NO_XSK };
	const struct jobcfg *j;
	struct rinx_hop h;
	__u32 epoch, block, nblocks, klass, cnt, type;

	if (get16(b + 12) != ETH_P_IP || len < OFF_UDP ||
	    b[OFF_IP + 9] != 17 || len < OFF_HDR ||
	    get16(b + OFF_UDP + 2) != PORT) {
		p.stat = RINX_STAT_PASS;
		return p;
	}
	if ((b[OFF_IP] & 0xf) != 5 || (get16(b + OFF_IP + 6) & 0x3fff) ||
	    len < OFF_V) {
		p.stat = RINX_STAT_DROP_SHORT;
		return p;
	}
	if (get32(b + H_MAGIC) != RINX_MAGIC || b[H_VERSION] != RINX_VERSION) {
		p.stat = RINX_STAT_DROP_VERSION;
		return p;
	}
	if (len < FULL_LEN) {
		p.stat = RINX_STAT_DROP_SHORT;
		return p;
	}
	type = b[H_TYPE];
	if (type != RINX_T_REDUCE && type != RINX_T_GATHER &&
	    type != RINX_T_CONTRIB && type != RINX_T_HELLO &&
	    type != RINX_T_NACK) {
		p.stat = RINX_STAT_DROP_TYPE;
		return p;
	}
	j = find_job(get32(b + H_JOB));
	if (!j) {
		p.stat = type == RINX_T_HELLO ? RINX_STAT_HELLO_EARLY :
						RINX_STAT_DROP_JOB;
		return p;
	}
	if (get32(b + H_TOKEN) != j->token) {
		p.stat = RINX_STAT_DROP_TOKEN;
		return p;
	}
	/* "do you know the job?" is answered in XDP; other control frames go
	 * to the slow path (dropped here: no socket) */
	if (type == RINX_T_HELLO && b[H_STEP] == RINX_HELLO_OPEN) {
		__u16 who = get16(b + H_SENDER);

		p.stat = who >= RINX_MAX_NODES || b[H_FLAGS] ||
			 get32(b + OFF_IP + 12) != node_ip(j->slot, who) ?
			 RINX_STAT_DROP_SENDER : RINX_STAT_HELLO_YES;
		return p;
	}
	if (type == RINX_T_HELLO)
		return p;
	epoch = get32(b + H_EPOCH);
	block = get32(b + H_BLOCK);
	nblocks = get32(b + H_NBLOCKS);
	klass = get16(b + H_KLASS);
	cnt = get16(b + H_COUNT);
	if (cnt == 0 || cnt > RINX_BLOCK_VALUES || block >= nblocks ||
	    nblocks > WINDOW || klass != block % j->nclasses) {
		p.stat = RINX_STAT_DROP_BOUNDS;
		return p;
	}
	/* NACK: answered from the result map when it holds that round */
	if (type == RINX_T_NACK) {
		__u16 who = get16(b + H_SENDER);
		const struct rinx_slot *r;

		if (who >= RINX_MAX_NODES || b[H_FLAGS] ||
		    get32(b + OFF_IP + 12) != node_ip(j->slot, who)) {
			p.stat = RINX_STAT_DROP_SENDER;
			return p;
		}
		r = &res_model[j->slot * WINDOW + block];
		p.stat = r->epoch == epoch && r->count == cnt ?
			 RINX_STAT_REPAIR : RINX_STAT_NACK_MISS;
		return p;
	}
	/* this node aggregates nothing: no contribution has a route */
	h = type == RINX_T_CONTRIB ? (struct rinx_hop){ 0 } :
				     plan(j, klass, (int)type);
	if (h.action == RINX_A_NONE) {
		p.stat = RINX_STAT_DROP_NO_ROUTE;
		return p;
	}
	if (get16(b + H_SENDER) != h.from || b[H_STEP] != h.step ||
	    get32(b + OFF_IP + 12) != node_ip(j->slot, h.from)) {
		p.stat = RINX_STAT_DROP_SENDER;
		return p;
	}
	if (epoch != j->epoch) {
		/* next round: slow path (dropped here, no socket) */
		p.stat = epoch == j->epoch + 1 ? RINX_STAT_DROP_NO_XSK :
						 RINX_STAT_DROP_STALE;
		return p;
	}
	if (j->dtype == RINX_W_INT32 && get16(b + H_EXP)) {
		p.stat = RINX_STAT_DROP_BOUNDS;
		return p;
	}
	if (nblocks != j->nblocks || get16(b + H_DTYPE) != j->dtype ||
	    cnt != (block == nblocks - 1 ? j->last_count : RINX_BLOCK_VALUES))
		return p;	/* size mismatch: slow path */
	p.idx = j->slot * WINDOW + block;
	p.epoch = epoch;
	switch (h.action) {
	case RINX_A_ADD_FWD:
	case RINX_A_ADD_FINISH:
		if (!(j->ready >> block & 1))
			return p;	/* share not ready: slow path */
		if (h.action == RINX_A_ADD_FWD) {
			p.stat = RINX_STAT_REDUCE_FWD;
		} else {
			p.stat = RINX_STAT_REDUCE_FINISH;
			p.store = true;
		}
		break;
	case RINX_A_STORE_FWD:
		p.stat = RINX_STAT_GATHER_FWD;
		p.store = true;
		break;
	default:
		p.stat = RINX_STAT_GATHER_END;
		p.store = true;
		break;
	}
	return p;
}

/* ---- reporting ----------------------------------------------------------- */

static const char *host_stat_name[RINX_STAT_MAX] = {
	"RX", "PASS", "REDUCE_FWD", "REDUCE_FINISH", "GATHER_FWD",
	"GATHER_END", "SLOW_NOT_READY", "SLOW_FUTURE", "SLOW_MISMATCH",
	"DROP_SHORT", "DROP_VERSION", "DROP_TYPE", "DROP_JOB", "DROP_TOKEN",
	"DROP_SENDER", "DROP_BOUNDS", "DROP_STALE", "DROP_NO_ROUTE",
	"DROP_NO_XSK", "ABORTED", "AGG_ADD", "AGG_DONE", "AGG_MCAST",
	"DROP_AGG_DUP", "DROP_AGG_STALE", "AGG_RESET", "AGG_RESEND", "SLOW_HELLO",
	"RECYCLED", "REPAIR", "NACK_MISS", "AGG_REEMIT", "HELLO_EARLY",
	"HELLO_YES", "ECN_CE", "PACED",
};

static const char *sw_stat_name[RINX_SW_STAT_MAX] = {
	"FWD", "FLOOD", "DROP_SHORT", "DROP_NO_PORT", "DROP_HAIRPIN",
};

static const char *act_name(__u32 a)
{
	static const char *n[] = { "ABORTED", "DROP", "PASS", "TX",
				   "REDIRECT" };

	return a < 5 ? n[a] : "?";
}

enum fail_kind {
	F_RUN,		/* test run failed */
	F_COUNTERS,	/* not exactly one outcome (+ RX) */
	F_ACTION,	/* action does not match the outcome counter */
	F_ABORTED,
	F_MODEL,	/* outcome differs from the reference model */
	F_FRAME,	/* dropped/passed frame modified, or bad TX frame */
	F_RESULT,	/* result map differs from the shadow */
	F_MAX,
};

static const char *fail_name[F_MAX] = {
	"test run", "counters", "action/counter", "XDP_ABORTED", "model",
	"output frame", "result map",
};

struct fails {
	__u64 n[F_MAX];
};

static void hexdump(const __u8 *b, int len)
{
	char line[2 * 32 + 1];
	int i, k, shown = len;

	/* the headers and the start of the payload; the rest regenerates
	 * from seed and frame number */
	if (shown > 256)
		shown = 256;
	for (i = 0; i < shown; i += 32) {
		for (k = 0; k < 32 && i + k < shown; k++)
			sprintf(line + 2 * k, "%02x", b[i + k]);
		tap_diag("    %04x: %s", i, line);
	}
	if (shown < len)
		tap_diag("    ... %d more bytes", len - shown);
}

/* Count a violation; describe the first few. */
static __attribute__((format(printf, 6, 7)))
void fail(struct fails *f, enum fail_kind k, const char *prog, __u64 i,
	  const __u8 *b, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (f->n[k]++ >= MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tap_diag("%s frame %llu (seed 0x%llx): %s: %s", prog,
		 (unsigned long long)i, (unsigned long long)seed, fail_name[k],
		 msg);
	(void)b;
}

/* ---- counters ------------------------------------------------------------ */

static int ncpus;

/* Sum of a per-CPU counter array, one syscall. */
static int read_counters(int fd, __u32 n, __u64 *out)
{
	static __u64 vals[RINX_STAT_MAX * 256];
	static __u32 keys[RINX_STAT_MAX];
	__u32 cnt = n, k;
	int c, err;

	LIBBPF_OPTS(bpf_map_batch_opts, o);
	__u32 out_batch;

	err = bpf_map_lookup_batch(fd, NULL, &out_batch, keys, vals, &cnt, &o);
	if (err && errno != ENOENT)
		return -errno;
	if (cnt != n)
		return -EIO;
	for (k = 0; k < n; k++) {
		out[k] = 0;
		for (c = 0; c < ncpus; c++)
			out[k] += vals[k * ncpus + c];
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- host run ------------------------------------------------------------ */

static __u8 in[MAX_LEN + 64], out[4096];

struct host_env {
	struct host_bpf *skel;
	int prog, jobs, nodes, hops, share, result, stats;
	struct rinx_slot *res_map;	/* mmap of the result map */
	struct rinx_slot *shadow, *share_want;
};

static int host_setup(struct host_env *e)
{
	struct rinx_slot *s;
	__u32 k, slot, id, c;
	size_t i;
	int t, err = 0;

	for (slot = 0; slot < NSLOTS; slot++) {
		for (id = 0; id < RINX_MAX_NODES; id++) {
			struct rinx_node n = { .ip = htonl(node_ip(slot, id)) };

			node_mac(slot, id, n.mac);
			k = slot * RINX_MAX_NODES + id;
			err |= bpf_map_update_elem(e->nodes, &k, &n, BPF_ANY);
		}
	}
	for (i = 0; i < ARRAY_SIZE(jobs); i++) {
		const struct jobcfg *j = &jobs[i];
		struct rinx_job job = {
			.token = j->token, .slot = j->slot, .epoch = j->epoch,
			.nblocks = j->nblocks, .last_count = j->last_count,
			.nclasses = j->nclasses, .nnodes = j->nnodes,
			.self = j->self, .qbits = j->qbits, .dtype = j->dtype,
			.window = WINDOW,
		};

		job_classes(&job, j->nclasses);
		err |= bpf_map_update_elem(e->jobs, &j->id, &job, BPF_ANY);
		for (c = 0; c < RINX_MAX_CLASSES; c++) {
			for (t = RINX_T_REDUCE; t <= RINX_T_GATHER; t++) {
				struct rinx_hop h = plan(j, c, t);

				k = RINX_HOP_INDEX(j->slot, c, t);
				err |= bpf_map_update_elem(e->hops, &k, &h,
							   BPF_ANY);
			}
		}
		/* shares: ready blocks carry the round's epoch, the others
		 * the previous one; values random, exponent small */
		for (k = 0; k < WINDOW; k++) {
			__u32 idx = j->slot * WINDOW + k, v;
			__s32 lim = (1 << j->qbits) - 1;

			s = &e->share_want[idx];
			s->epoch = j->ready >> k & 1 ? j->epoch : j->epoch - 1;
			s->exp = j->dtype == RINX_W_INT32 ? 0 :
				 (__s16)(below(64) - 32);
			s->flags = below(8) ? 0 : RINX_F_NAN;
			s->count = RINX_BLOCK_VALUES;
			for (v = 0; v < RINX_BLOCK_VALUES; v++)
				s->v[v] = j->dtype == RINX_W_INT32 ?
					  (__s32)rnd() :
					  (__s32)(rnd() % (2u * lim + 1)) - lim;
			err |= bpf_map_update_elem(e->share, &idx, s, BPF_ANY);
		}
	}
	/* result: a marker in every slot, so any write shows */
	for (k = 0; k < NRES; k++) {
		s = &e->shadow[k];
		s->epoch = 0xdead0000 | k;
		s->exp = 0x5a5a;
		s->flags = 0xa5;
		s->resv = 0x3c;
		s->count = 0xc3c3;
		s->resv2 = 0x7777;
		s->resv3 = 0x12345678;
		for (id = 0; id < RINX_BLOCK_VALUES; id++)
			s->v[id] = (__s32)(0x5a000000 | k << 12 | id);
		err |= bpf_map_update_elem(e->result, &k, s, BPF_ANY);
	}
	return err ? -1 : 0;
}

/* Tables other than result: read back and compare with what was written. */
static int host_tables_same(struct host_env *e)
{
	struct rinx_slot *s = malloc(sizeof(*s));
	int bad = 0;
	__u32 k, c;
	size_t i;
	int t;

	if (!s)
		return 0;
	for (k = 0; k < NRES; k++) {
		if (bpf_map_lookup_elem(e->share, &k, s) ||
		    memcmp(s, &e->share_want[k], sizeof(*s))) {
			tap_diag("share slot %u changed", k);
			bad++;
		}
	}
	free(s);
	for (k = 0; k < NSLOTS * RINX_MAX_NODES; k++) {
		__u32 slot = k / RINX_MAX_NODES, id = k % RINX_MAX_NODES;
		struct rinx_node n, w = { .ip = htonl(node_ip(slot, id)) };

		node_mac(slot, id, w.mac);
		if (bpf_map_lookup_elem(e->nodes, &k, &n) ||
		    memcmp(&n, &w, sizeof(n))) {
			tap_diag("node entry %u changed", k);
			bad++;
		}
	}
	for (k = 0; k < NSLOTS * RINX_MAX_CLASSES * 2; k++) {
		struct rinx_hop h, w = {};

		for (i = 0; i < ARRAY_SIZE(jobs); i++) {
			for (c = 0; c < RINX_MAX_CLASSES; c++)
				for (t = 1; t <= 2; t++)
					if (RINX_HOP_INDEX(jobs[i].slot, c,
							   t) == k)
						w = plan(&jobs[i], c, t);
		}
		if (bpf_map_lookup_elem(e->hops, &k, &h) ||
		    memcmp(&h, &w, sizeof(h))) {
			tap_diag("hop entry %u changed", k);
			bad++;
		}
	}
	for (i = 0; i < ARRAY_SIZE(jobs); i++) {
		const struct jobcfg *j = &jobs[i];
		struct rinx_job job, w = {
			.token = j->token, .slot = j->slot, .epoch = j->epoch,
			.nblocks = j->nblocks, .last_count = j->last_count,
			.nclasses = j->nclasses, .nnodes = j->nnodes,
			.self = j->self, .qbits = j->qbits, .dtype = j->dtype,
			.window = WINDOW,
		};

		job_classes(&w, j->nclasses);
		if (bpf_map_lookup_elem(e->jobs, &j->id, &job) ||
		    memcmp(&job, &w, sizeof(job))) {
			tap_diag("job %#x changed", j->id);
			bad++;
		}
	}
	{
		__u32 key, next, n = 0;

		if (!bpf_map_get_next_key(e->jobs, NULL, &key)) {
			n = 1;
			while (!bpf_map_get_next_key(e->jobs, &key, &next)) {
				key = next;
				n++;
			}
		}
		if (n != ARRAY_SIZE(jobs)) {
			tap_diag("jobs map holds %u entries", n);
			bad++;
		}
	}
	return !bad;
}

static int result_diff(struct host_env *e)
{
	__u32 k;

	for (k = 0; k < NRES; k++)
		if (memcmp(&e->res_map[k], &e->shadow[k], sizeof(e->shadow[k])))
			return (int)k;
	return -1;
}

static void run_host(__u64 nframes, struct fails *f, __u64 *hist,
		     double *secs)
{
	struct host_env e = {};
	__u64 c0[RINX_STAT_MAX], c1[RINX_STAT_MAX], cs[RINX_STAT_MAX], sum;
	size_t map_sz;
	double t0;
	__u64 i, stores = 0, last_ok = 0;
	int err, k;

	e.skel = host_bpf__open();
	if (!tap_ok(e.skel != NULL, "open host skeleton"))
		return;
	e.skel->rodata->rinx_port_be = htons(PORT);
	e.skel->rodata->rinx_window = WINDOW;
	err = bpf_map__set_max_entries(e.skel->maps.share, NRES);
	err = err ?: bpf_map__set_max_entries(e.skel->maps.result, NRES);
	err = err ?: host_bpf__load(e.skel);
	if (!tap_ok(!err, "load rinx_host (window %d, port %d)", WINDOW, PORT))
		goto out;
	e.prog = bpf_program__fd(e.skel->progs.rinx_host);
	e.jobs = bpf_map__fd(e.skel->maps.jobs);
	e.nodes = bpf_map__fd(e.skel->maps.nodes);
	e.hops = bpf_map__fd(e.skel->maps.hops);
	e.share = bpf_map__fd(e.skel->maps.share);
	e.result = bpf_map__fd(e.skel->maps.result);
	e.stats = bpf_map__fd(e.skel->maps.stats);
	map_sz = (size_t)NRES * sizeof(struct rinx_slot);
	map_sz = (map_sz + 4095) & ~(size_t)4095;
	e.res_map = mmap(NULL, map_sz, PROT_READ, MAP_SHARED, e.result, 0);
	e.shadow = calloc(NRES, sizeof(*e.shadow));
	res_model = e.shadow;
	e.share_want = calloc(NRES, sizeof(*e.share_want));
	frame_seed(0, ~0ULL);
	if (!tap_ok(e.res_map != MAP_FAILED && e.shadow && e.share_want &&
		    !host_setup(&e) && !read_counters(e.stats, RINX_STAT_MAX,
						      c0),
		    "host: jobs, plan, nodes, shares, result markers set up"))
		goto out;
	tap_ok(result_diff(&e) < 0, "host: result map readable via mmap");
	memcpy(cs, c0, sizeof(cs));

	t0 = now();
	for (i = 0; i < nframes; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o);
		int len, outcome = -1, moved = 0, rx, ce;
		struct pred p;

		frame_seed(0, i);
		len = gen_host(in);
		p = host_model(in, len);
		o.data_in = in;
		o.data_size_in = len;
		o.data_out = out;
		o.data_size_out = sizeof(out);
		o.repeat = 1;
		err = bpf_prog_test_run_opts(e.prog, &o);
		if (err) {
			fail(&f[0], F_RUN, "host", i, in, "error %d", -errno);
			continue;
		}
		if (read_counters(e.stats, RINX_STAT_MAX, c1)) {
			fail(&f[0], F_RUN, "host", i, in, "read counters");
			break;
		}
		for (k = RINX_STAT_PASS; k < RINX_STAT_MAX; k++) {
			__u64 d = c1[k] - c0[k];

			if (d && !annotation(k)) {
				moved += (int)d;
				outcome = k;
			}
		}
		rx = (int)(c1[RINX_STAT_RX] - c0[RINX_STAT_RX]);
		ce = (int)(c1[RINX_STAT_ECN_CE] - c0[RINX_STAT_ECN_CE]);
		memcpy(c0, c1, sizeof(c0));
		/* a mark is counted with a stored block, and only then */
		if (moved != 1 || rx != (outcome != RINX_STAT_PASS) ||
		    ce != (stores_block(outcome) && len > OFF_IP + 1 &&
			   (in[OFF_IP + 1] & RINX_ECN_MASK) == RINX_ECN_CE)) {
			fail(&f[0], F_COUNTERS, "host", i, in,
			     "%d outcome counters moved, RX +%d, ECN_CE +%d, "
			     "action %s", moved, rx, ce, act_name(o.retval));
			hexdump(in, len);
			continue;
		}
		hist[outcome]++;
		if (o.retval == XDP_ABORTED)
			fail(&f[0], F_ABORTED, "host", i, in, "%s",
			     host_stat_name[outcome]);
		if ((int)o.retval != stat_action(outcome)) {
			fail(&f[0], F_ACTION, "host", i, in,
			     "action %s, counter %s", act_name(o.retval),
			     host_stat_name[outcome]);
			hexdump(in, len);
		}
		if (outcome != p.stat) {
			if (f[0].n[F_MODEL] < MAX_REPORTS) {
				fail(&f[0], F_MODEL, "host", i, in,
				     "program %s, model %s (len %d)",
				     host_stat_name[outcome],
				     host_stat_name[p.stat], len);
				hexdump(in, len);
			} else {
				f[0].n[F_MODEL]++;
			}
		}
		if (o.retval != XDP_TX) {
			if (o.data_size_out != (__u32)len ||
			    memcmp(out, in, len))
				fail(&f[0], F_FRAME, "host", i, in,
				     "%s frame modified", act_name(o.retval));
		} else if (o.data_size_out != (__u32)len ||
			   csum16(out + OFF_IP, 20) != 0) {
			fail(&f[0], F_FRAME, "host", i, in,
			     "TX frame: %u bytes, IP checksum %s",
			     o.data_size_out,
			     csum16(out + OFF_IP, 20) ? "bad" : "ok");
		}
		if (outcome == p.stat && p.store) {
			/* the stored block is the one that leaves (reduce
			 * finish: the sum) or, at the end of the path, the
			 * one that came in */
			const __u8 *src = o.retval == XDP_TX ? out : in;
			struct rinx_slot *w = &e.shadow[p.idx];

			w->epoch = p.epoch;
			w->exp = (__s16)get16(src + H_EXP);
			w->flags = src[H_FLAGS];
			w->count = get16(src + H_COUNT);
			memcpy(w->v, src + OFF_V, RINX_BLOCK_BYTES);
			stores++;
			if (memcmp(&e.res_map[p.idx], w, sizeof(*w))) {
				fail(&f[0], F_RESULT, "host", i, in,
				     "stored slot %u differs", p.idx);
				hexdump(in, len);
				*w = e.res_map[p.idx];
			}
		}
		if ((i + 1) % CHECK_EVERY == 0 || i + 1 == nframes) {
			k = result_diff(&e);
			if (k >= 0) {
				fail(&f[0], F_RESULT, "host", i, in,
				     "slot %d written by a frame in %llu..%llu",
				     k, (unsigned long long)last_ok,
				     (unsigned long long)i);
				memcpy(e.shadow, e.res_map,
				       NRES * sizeof(*e.shadow));
			}
			last_ok = i + 1;
		}
	}
	*secs = now() - t0;
	tap_diag("host: %llu frames in %.1f s (%.1f us/frame), %llu result "
		 "stores", (unsigned long long)i, *secs, *secs * 1e6 / (i ?: 1),
		 (unsigned long long)stores);
	tap_ok(i == nframes && !f[0].n[F_RUN], "host: %llu frames run",
	       (unsigned long long)nframes);
	if (!read_counters(e.stats, RINX_STAT_MAX, c1)) {
		sum = 0;
		for (k = RINX_STAT_PASS; k < RINX_STAT_MAX; k++)
			if (!annotation(k))
				sum += c1[k] - cs[k];
		tap_ok(sum == nframes && c1[RINX_STAT_RX] - cs[RINX_STAT_RX] ==
		       nframes - (c1[RINX_STAT_PASS] - cs[RINX_STAT_PASS]),
		       "host: counter deltas: outcomes %llu == frames %llu, "
		       "RX %llu == frames - PASS", (unsigned long long)sum,
		       (unsigned long long)nframes,
		       (unsigned long long)(c1[RINX_STAT_RX] -
					    cs[RINX_STAT_RX]));
	}
	for (k = 0; k < F_MAX; k++) {
		if (k == F_RUN)
			continue;
		tap_ok(!f[0].n[k], "host: %s invariant (%llu violations)",
		       fail_name[k], (unsigned long long)f[0].n[k]);
	}
	tap_ok(result_diff(&e) < 0,
	       "host: result map == shadow (only legitimate stores)");
	tap_ok(host_tables_same(&e),
	       "host: share, jobs, hops and nodes maps unchanged");
out:
	if (e.res_map && e.res_map != MAP_FAILED)
		munmap(e.res_map, map_sz);
	free(e.shadow);
	free(e.share_want);
	host_bpf__destroy(e.skel);
}

/* ---- switch run ---------------------------------------------------------- */

#define IF_GONE		999

static const __u8 M_A[6] = { 0x02, 0x72, 0x78, 0x00, 0x00, 0x01 };
static const __u8 M_B[6] = { 0x02, 0x72, 0x78, 0x00, 0x00, 0x04 };
static const __u8 M_LO[6] = { 0x02, 0x72, 0x78, 0x00, 0x00, 0x02 };
static const __u8 M_GONE[6] = { 0x02, 0x72, 0x78, 0x00, 0x00, 0x03 };

struct sw_mac {
	const __u8 *mac;
	__u32 port;
};

static struct sw_mac sw_tab[4];
static __u32 sw_ports[3];

static int run_ip(char *const argv[])
{
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, "ip", NULL, NULL, argv, environ))
		return -1;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static __u64 mac_key(const __u8 *mac)
{
	__u64 k = 0;

	memcpy(&k, mac, 6);
	return k;
}

/* Outcome of the switch for destination d arriving on ifindex ingress. */
static int sw_model(const __u8 *d, __u32 ingress)
{
	size_t i, p;

	if (d[0] & 1)
		return RINX_SW_FLOOD;
	for (i = 0; i < ARRAY_SIZE(sw_tab); i++) {
		if (memcmp(d, sw_tab[i].mac, 6))
			continue;
		if (sw_tab[i].port == ingress)
			return RINX_SW_DROP_HAIRPIN;
		for (p = 0; p < ARRAY_SIZE(sw_ports); p++)
			if (sw_ports[p] == sw_tab[i].port)
				return RINX_SW_FWD;
		return RINX_SW_DROP_NO_PORT;
	}
	return RINX_SW_FLOOD;
}

static int gen_switch(__u8 *b, __u32 *ingress)
{
	int len, r = below(100);

	*ingress = sw_ports[below(ARRAY_SIZE(sw_ports))];
	if (r < 1)
		return (int)below(14);	/* refused by the kernel */
	if (r < 30) {
		len = gen_host(b);	/* rinx-shaped */
	} else {
		len = below(3) ? 14 + below(128) : 14 + below(MAX_LEN - 13);
		if (below(8) == 0)
			len = FULL_LEN;
		rand_bytes(b, len);
	}
	r = below(100);
	if (r < 30)
		memcpy(b, sw_tab[below(ARRAY_SIZE(sw_tab))].mac, 6);
	else if (r < 40)
		memset(b, 0xff, 6);
	else if (r < 50)
		b[0] |= 1;
	else if (r < 60) {
		memcpy(b, sw_tab[below(ARRAY_SIZE(sw_tab))].mac, 6);
		b[below(6)] ^= (__u8)(1 << below(8));
	} else if (r < 70)
		b[0] &= ~1;
	return len;
}

static int sw_tables_same(int macs, int ports)
{
	__u64 key, next;
	__u32 pk, pn, pv, n = 0;
	struct rinx_sw_port v;
	size_t i;
	int bad = 0;

	for (i = 0; i < ARRAY_SIZE(sw_tab); i++) {
		key = mac_key(sw_tab[i].mac);
		if (bpf_map_lookup_elem(macs, &key, &v) ||
		    v.port != sw_tab[i].port || v.resv) {
			tap_diag("MAC entry %zu changed", i);
			bad++;
		}
	}
	if (!bpf_map_get_next_key(macs, NULL, &key)) {
		n = 1;
		while (!bpf_map_get_next_key(macs, &key, &next)) {
			key = next;
			n++;
		}
	}
	if (n != ARRAY_SIZE(sw_tab)) {
		tap_diag("MAC table holds %u entries", n);
		bad++;
	}
	n = 0;
	if (!bpf_map_get_next_key(ports, NULL, &pk)) {
		do {
			if (bpf_map_lookup_elem(ports, &pk, &pv) || pv != pk)
				bad++;
			n++;
		} while (!bpf_map_get_next_key(ports, &pk, &pn) &&
			 (pk = pn, 1));
	}
	if (n != ARRAY_SIZE(sw_ports)) {
		tap_diag("devmap holds %u entries", n);
		bad++;
	}
	return !bad;
}

static void run_switch(__u64 nframes, struct fails *f, __u64 *hist,
		       __u64 *einval, double *secs)
{
	char *add[] = { "ip", "link", "add", "fza", "type", "veth", "peer",
			"name", "fzb", NULL };
	__u64 c0[RINX_SW_STAT_MAX], c1[RINX_SW_STAT_MAX], i;
	__u64 cs[RINX_SW_STAT_MAX], sum;
	struct switch_bpf *skel;
	int prog, stats, macs, ports, err = 0, k;
	double t0;
	size_t n;

	if (run_ip(add) || !if_nametoindex("fza") || !if_nametoindex("fzb")) {
		tap_ok(1, "switch # SKIP cannot create a veth pair");
		return;
	}
	sw_ports[0] = 1;
	sw_ports[1] = if_nametoindex("fza");
	sw_ports[2] = if_nametoindex("fzb");
	sw_tab[0] = (struct sw_mac){ M_A, sw_ports[1] };
	sw_tab[1] = (struct sw_mac){ M_B, sw_ports[2] };
	sw_tab[2] = (struct sw_mac){ M_LO, 1 };
	sw_tab[3] = (struct sw_mac){ M_GONE, IF_GONE };

	skel = switch_bpf__open_and_load();
	if (!tap_ok(skel != NULL, "load rinx_switch"))
		return;
	prog = bpf_program__fd(skel->progs.rinx_switch);
	stats = bpf_map__fd(skel->maps.sw_stats);
	macs = bpf_map__fd(skel->maps.macs);
	ports = bpf_map__fd(skel->maps.ports);
	for (n = 0; n < ARRAY_SIZE(sw_ports); n++) {
		struct bpf_devmap_val v = { .ifindex = sw_ports[n] };

		err |= bpf_map_update_elem(ports, &sw_ports[n], &v, BPF_ANY);
	}
	for (n = 0; n < ARRAY_SIZE(sw_tab); n++) {
		struct rinx_sw_port p = { .port = sw_tab[n].port };
		__u64 key = mac_key(sw_tab[n].mac);

		err |= bpf_map_update_elem(macs, &key, &p, BPF_NOEXIST);
	}
	if (!tap_ok(!err && !read_counters(stats, RINX_SW_STAT_MAX, c0),
		    "switch: ports and MAC table set up"))
		goto out;

	memcpy(cs, c0, sizeof(cs));
	t0 = now();
	for (i = 0; i < nframes; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o);
		struct xdp_md ctx = {};
		int len, outcome = -1, moved = 0, want;
		__u32 ingress;

		frame_seed(1, i);
		len = gen_switch(in, &ingress);
		ctx.data_end = len;
		ctx.ingress_ifindex = ingress;
		o.data_in = in;
		o.data_size_in = len;
		o.data_out = out;
		o.data_size_out = sizeof(out);
		o.ctx_in = &ctx;
		o.ctx_size_in = sizeof(ctx);
		o.repeat = 1;
		err = bpf_prog_test_run_opts(prog, &o);
		err = err ? -errno : 0;
		if (len < ETH_HLEN) {
			if (err == -EINVAL)
				(*einval)++;
			else
				fail(f, F_RUN, "switch", i, in,
				     "%d-byte frame: %d, want -EINVAL", len,
				     err);
			if (!err)
				read_counters(stats, RINX_SW_STAT_MAX, c0);
			continue;
		}
		if (err) {
			fail(f, F_RUN, "switch", i, in, "error %d", err);
			continue;
		}
		if (read_counters(stats, RINX_SW_STAT_MAX, c1)) {
			fail(f, F_RUN, "switch", i, in, "read counters");
			break;
		}
		for (k = 0; k < RINX_SW_STAT_MAX; k++) {
			if (c1[k] != c0[k]) {
				moved += (int)(c1[k] - c0[k]);
				outcome = k;
			}
		}
		memcpy(c0, c1, sizeof(c0));
		if (moved != 1) {
			fail(f, F_COUNTERS, "switch", i, in,
			     "%d counters moved, action %s", moved,
			     act_name(o.retval));
			hexdump(in, len);
			continue;
		}
		hist[outcome]++;
		want = outcome == RINX_SW_FWD || outcome == RINX_SW_FLOOD ?
		       XDP_REDIRECT : XDP_DROP;
		if (o.retval == XDP_ABORTED)
			fail(f, F_ABORTED, "switch", i, in, "%s",
			     sw_stat_name[outcome]);
		if ((int)o.retval != want)
			fail(f, F_ACTION, "switch", i, in,
			     "action %s, counter %s", act_name(o.retval),
			     sw_stat_name[outcome]);
		want = sw_model(in, ingress);
		if (outcome != want) {
			fail(f, F_MODEL, "switch", i, in,
			     "program %s, model %s (ingress %u)",
			     sw_stat_name[outcome], sw_stat_name[want],
			     ingress);
			hexdump(in, len < 64 ? len : 64);
		}
		if (o.data_size_out != (__u32)len || memcmp(out, in, len))
			fail(f, F_FRAME, "switch", i, in, "frame modified");
	}
	*secs = now() - t0;
	tap_diag("switch: %llu frames in %.1f s (%.1f us/frame)",
		 (unsigned long long)i, *secs, *secs * 1e6 / (i ?: 1));
	tap_ok(i == nframes && !f->n[F_RUN],
	       "switch: %llu frames run, %llu shorter than 14 B refused "
	       "with EINVAL", (unsigned long long)nframes,
	       (unsigned long long)*einval);
	if (!read_counters(stats, RINX_SW_STAT_MAX, c1)) {
		sum = 0;
		for (k = 0; k < RINX_SW_STAT_MAX; k++)
			sum += c1[k] - cs[k];
		tap_ok(sum + *einval == nframes,
		       "switch: counter deltas %llu + EINVAL %llu == frames "
		       "%llu", (unsigned long long)sum,
		       (unsigned long long)*einval,
		       (unsigned long long)nframes);
	}
	for (k = 0; k < F_MAX; k++) {
		if (k == F_RUN || k == F_RESULT)
			continue;
		tap_ok(!f->n[k], "switch: %s invariant (%llu violations)",
		       fail_name[k], (unsigned long long)f->n[k]);
	}
	tap_ok(sw_tables_same(macs, ports),
	       "switch: MAC table and devmap unchanged");
out:
	switch_bpf__destroy(skel);
}

/* ---- main ---------------------------------------------------------------- */

int main(void)
{
	__u64 total = 1000000, nh, ns, hh[RINX_STAT_MAX] = {};
	__u64 hs[RINX_SW_STAT_MAX] = {}, einval = 0, sum;
	struct fails fh = {}, fs = {};
	double th = 0, ts = 0;
	const char *env;
	int k;

	if (geteuid())
		tap_skip_all("needs root (BPF_PROG_TEST_RUN)");
	if (!getenv("RINX_TEST_VERBOSE"))
		libbpf_set_print(NULL);
	env = getenv("RINX_FUZZ_N");
	if (env && *env)
		total = strtoull(env, NULL, 0);
	env = getenv("RINX_FUZZ_SEED");
	if (env && *env)
		seed = strtoull(env, NULL, 0);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0 || ncpus > 256)
		tap_skip_all("cannot count CPUs");
	if (unshare(CLONE_NEWNET))
		tap_skip_all("cannot create a network namespace: %s",
			     strerror(errno));
	nh = total;
	ns = total;
	tap_diag("seed 0x%llx (RINX_FUZZ_SEED), %llu frames per program "
		 "(RINX_FUZZ_N)", (unsigned long long)seed,
		 (unsigned long long)total);

	run_host(nh, &fh, hh, &th);
	sum = 0;
	for (k = RINX_STAT_PASS; k < RINX_STAT_MAX; k++) {
		sum += hh[k];
		if (hh[k])
			tap_diag("  host %-15s %9llu", host_stat_name[k],
				 (unsigned long long)hh[k]);
	}
	tap_ok(sum == nh, "host: outcome counters sum to the frames sent "
	       "(%llu of %llu)", (unsigned long long)sum,
	       (unsigned long long)nh);

	run_switch(ns, &fs, hs, &einval, &ts);
	sum = einval;
	for (k = 0; k < RINX_SW_STAT_MAX; k++) {
		sum += hs[k];
		if (hs[k])
			tap_diag("  switch %-13s %9llu", sw_stat_name[k],
				 (unsigned long long)hs[k]);
	}
	tap_diag("  switch %-13s %9llu", "EINVAL (<14 B)",
		 (unsigned long long)einval);
	tap_ok(sum == ns, "switch: counters + EINVAL sum to the frames sent "
	       "(%llu of %llu)", (unsigned long long)sum,
	       (unsigned long long)ns);
	tap_diag("total %.1f s", th + ts);
	tap_plan(tap_n);
	return tap_done();
}
