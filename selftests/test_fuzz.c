// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fuzz test of the XDP programs (rinx_host, rinx_switch, and rinx_switch as
 * an INA ToR) through BPF_PROG_TEST_RUN.
 *
 * Frames are valid frames of the programs' jobs with mutations on top (bit
 * and byte flips, truncation, extension, header fields set to chosen or
 * random values: tokens that differ in any of their 64 bits, senders that
 * are no members, rounds far ahead, sizes and dtypes of another round) and
 * purely random frames. The host holds four ring jobs, one of each block
 * size besides a second full-size one (jumbo blocks of 2,048 values in
 * multi-buffer frames whose payload runs past the test run's linear part
 * into a fragment, the 352 values of an MTU of 1,500; frames cut or
 * extended to another size class, a chain cut short, sent to a job of
 * another size), and an aggregating job (AGG_FWD, AGG_FINISH to a group,
 * on, unicast or ending here, with and without its own share and answers,
 * MCAST_FWD/END, a proportional class pattern); the second switch holds
 * the aggregator of an INA ToR (agg_tab, tor_tab below). Every frame runs
 * once; after each run the counters are read (one batch lookup per map)
 * and checked:
 *
 *  - exactly one outcome counter moved, by one, and RX moved iff the frame
 *    was a rinx frame (at the ToR: for the aggregator); the XDP action
 *    matches that outcome; AGG_RESET and ECN_CE move exactly when the model
 *    says so;
 *  - the outcome is the one a reference model of the job's rules (written
 *    here from uapi/rinx.h and docs/security.md, with the tables the test
 *    itself set up) predicts, refusals included (drop_member, drop_ahead
 *    against the ToR's newest round, which the model follows, drop_shape
 *    against the round and the slot's first contribution);
 *  - no XDP_ABORTED; frames that are not transmitted leave unchanged; the
 *    aggregator's frames (sums, answers, multicasts) are the model's to the
 *    byte;
 *  - the result map changes only where the model says a frame legitimately
 *    completed a block (a shadow copy is compared through an mmap: the
 *    stored slot after each store, the whole map every CHECK_EVERY frames);
 *  - aggregator slots: the fuzzer is their only writer, so it keeps their
 *    whole state (round, contributors, sums, done/final/pend/ce); the slot a
 *    frame reached must equal the model after it, every slot every
 *    CHECK_EVERY frames, and no slot ever holds a contributor outside its
 *    hop's mask. Between frames the test plays the control plane: it
 *    empties slots now and then and completes a slot waiting for the
 *    host's own share as the trainer does;
 *  - share, jobs, hops and nodes (host, ToR) and the MAC table and devmap
 *    (switches) are unchanged at the end; every path of the aggregator was
 *    taken (runs of at least COV_MIN frames); frames of every block size
 *    were finished by a ring hop as the model said, and refused for their
 *    size by a job of another size.
 *
 * RINX_FUZZ_N: frames in all, half for the host, a fifth for the switch,
 * the rest for the INA switch (default 1500000: about 9 us a host frame,
 * 6.5 us a switch frame, 13 us an INA switch frame on 2 cores, ~15 s in
 * all). RINX_FUZZ_SEED: seed (printed). Frame i is generated from (seed,
 * program, i) alone, so a reported frame can be regenerated; what an
 * aggregator does with it also depends on the frames before it (its slot),
 * so such a report is reproduced by the same run.
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
#include "bpf/switch_kern_user.h"
#include "host.skel.h"
#include "switch.skel.h"
#include "selftests/lib/testlib.h"

extern char **environ;

#define WINDOW		16
#define PORT		47123
#define NSLOTS		RINX_DEFAULT_JOBS
#define NRES		(NSLOTS * WINDOW)
#define FULL_LEN	RINX_FRAME_MAX		/* 3168 */
/* 8288 */
#define JUMBO_LEN	RINX_FRAME_LEN(RINX_BLOCK_VALUES_JUMBO)
/* random frames, linear ones extended */
#define MAX_LEN		3500
#define MAX_JLEN	(JUMBO_LEN + 256)	/* extended jumbo ones */
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
	__u32 id;
	__u64 token;
	__u32 slot, round, nblocks;
	__u16 last_count, nclasses, nnodes, self, qbits, dtype;
	__u32 ready;	/* bit b: share of block b written for round */
	/* NULL: the ring below, block b in class b % nclasses; else block b
	 * in class cmap[b % plen] and the hops tab[class][type - 1] */
	const __u8 *cmap;
	__u16 plen;
	const struct rinx_hop (*tab)[RINX_HOP_TYPES];
	bool keep;	/* RINX_JOB_KEEP: ring hops keep partial sums and drop
			 * what they passed on already */
	__u16 bval;	/* values per block; 0: RINX_BLOCK_VALUES */
};

static int jbv(const struct jobcfg *j)
{
	return j->bval ? j->bval : RINX_BLOCK_VALUES;
}

/* Slots of a block of job j in every map (a jumbo block takes three). */
static __u32 jslots(const struct jobcfg *j)
{
	return RINX_BLOCK_SLOTS(jbv(j));
}

#define BIT(n)		(1ULL << (n))
#define NOFROM		RINX_NO_SEND
#define HS		RINX_HOP_SELF
#define HA		RINX_HOP_ANSWER

/*
 * An aggregating host (node 5; an agent, a tree node, a parameter server:
 * the plans install such tables). Proportional class pattern (class 1 gets
 * two of seven blocks). Reduce and contribution share each class's
 * aggregation; the gather column mixes multicast and a ring store.
 *
 *   class  aggregation (contributors)              gather
 *   0      AGG_FWD 1 9 40 63 (9's partial, step 2)  MCAST_FWD from 7 to 8
 *          to 7, own share, answers late shares     rack 4
 *   1      AGG_FINISH 2 3 33, group of rack 4 and   -
 *          on to 8, answers
 *   2      AGG_FINISH 0 6 62 (6's partial), own     MCAST_END from 63
 *          share, ends here (no output)             (into a finishing slot)
 *   3      AGG_FINISH 1 2, own share, answers,      -
 *          every host (RINX_GROUP_EVERY) only
 *   4      AGG_FINISH 12..15, unicast to 11         MCAST_END every host
 *   5      AGG_FWD of one contributor (21) to 20    STORE_FWD from 20 to 22
 *   6      ps-ina's server: AGG_FINISH 12 13 14 by   -
 *          coverage (partial sums from 44), own
 *          share, every host
 */
static const __u8 agg_cmap[] = { 3, 0, 5, 1, 2, 4, 1, 6, 6 };

/* A class's hops: one aggregation for reduce and contribution frames
 * alike, no gather hop. */
#define AGG(...)	{ __VA_ARGS__ }, { 0 }, { __VA_ARGS__ }

static const struct rinx_hop agg_tab[][RINX_HOP_TYPES] = {
	[0] = { { .action = RINX_A_AGG_FWD, .from = 9, .step = 2, .to = 7,
		  .out_step = 3, .rack = 4, .flags = HS | HA,
		  .mask = BIT(1) | BIT(9) | BIT(40) | BIT(63) },
		{ .action = RINX_A_MCAST_FWD, .from = 7, .step = 4, .to = 8,
		  .out_step = 5, .rack = 4 },
		{ .action = RINX_A_AGG_FWD, .from = 9, .step = 2, .to = 7,
		  .out_step = 3, .rack = 4, .flags = HS | HA,
		  .mask = BIT(1) | BIT(9) | BIT(40) | BIT(63) } },
	[1] = { AGG(.action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 8,
		    .rack = 4, .flags = HA,
		    .mask = BIT(2) | BIT(3) | BIT(33)) },
	[2] = { { .action = RINX_A_AGG_FINISH, .from = 6, .step = 1, .to = 5,
		  .rack = RINX_NO_RACK, .flags = HS,
		  .mask = BIT(0) | BIT(6) | BIT(62) },
		{ .action = RINX_A_MCAST_END, .from = 63, .step = 1, .to = 5,
		  .out_step = 2, .rack = 4 },
		{ .action = RINX_A_AGG_FINISH, .from = 6, .step = 1, .to = 5,
		  .rack = RINX_NO_RACK, .flags = HS,
		  .mask = BIT(0) | BIT(6) | BIT(62) } },
	[3] = { AGG(.action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 5,
		    .rack = RINX_GROUP_EVERY, .flags = HS | HA,
		    .mask = BIT(1) | BIT(2)) },
	[4] = { { .action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 11,
		  .rack = RINX_NO_RACK,
		  .mask = BIT(12) | BIT(13) | BIT(14) | BIT(15) },
		{ .action = RINX_A_MCAST_END, .from = 11, .step = 2, .to = 5,
		  .out_step = 3, .rack = RINX_GROUP_EVERY },
		{ .action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 11,
		  .rack = RINX_NO_RACK,
		  .mask = BIT(12) | BIT(13) | BIT(14) | BIT(15) } },
	[5] = { { .action = RINX_A_AGG_FWD, .from = 21, .to = 20,
		  .out_step = 1, .rack = RINX_NO_RACK, .mask = BIT(21) },
		{ .action = RINX_A_STORE_FWD, .from = 20, .step = 3, .to = 22 },
		{ .action = RINX_A_AGG_FWD, .from = 21, .to = 20,
		  .out_step = 1, .rack = RINX_NO_RACK, .mask = BIT(21) } },
	[6] = { AGG(.action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 5,
		    .rack = RINX_GROUP_EVERY, .flags = HS | RINX_HOP_COVER,
		    .mask = BIT(12) | BIT(13) | BIT(14), .via = BIT(44)) },
};

static const struct jobcfg jobs[] = {
	/* 4-node ring seen from node 1, fixed point */
	{ 0x00c0ffee, 0x1dea5eed1234ULL, 2, 1000, 11, 100, 4, 4, 1, 28,
	  RINX_W_FIXED, 0x0000054d, NULL, 0, NULL, true, 0 },
	/* int32 sums, node 2 of 4, round about to wrap */
	{ 0x00000007, 0xf00d00000badf00dULL, 0, 0xffffffff, 5, 1, 4, 4, 2, 30,
	  RINX_W_INT32, 0x00000009, NULL, 0, NULL, false, 0 },
	/* the aggregating host above: 13 blocks, shares of some written */
	{ 0x00a990a9, 0x7a66c0de7a66c0deULL, 1, 5000, 13, 321, 7, 64, 5, 24,
	  RINX_W_FIXED, 0x00000b5b, agg_cmap, sizeof(agg_cmap), agg_tab, true,
	  0 },
	/* jumbo blocks (multi-buffer frames; the payload runs past the
	 * test run's linear part): a 4-node ring seen from node 2, 5
	 * blocks in 15 of the window's 16 slots, a short last one */
	{ 0x00001b16, 0x6a6d626f00000003ULL, 4, 77, 5, 1500, 4, 4, 2, 28,
	  RINX_W_FIXED, 0x0000000b, NULL, 0, NULL, true,
	  RINX_BLOCK_VALUES_JUMBO },
	/* the small blocks of an MTU of 1,500: node 0 of a 3-node ring,
	 * int32, without kept sums */
	{ 0x00000160, 0x736d616c6c000160ULL, 5, 0x42, 16, 200, 3, 3, 0, 30,
	  RINX_W_INT32, 0x0000b6d5, NULL, 0, NULL, false,
	  RINX_BLOCK_VALUES_MIN },
};

#define AGG_JOB		(&jobs[2])

/*
 * The INA ToR's job (node 50 of slot 3; rinx_switch with ina_mac set to
 * node 50's MAC). A ToR has no share: RINX_HOP_SELF means nothing there.
 *
 *   class  aggregation                              gather
 *   0      AGG_FWD 1 2 3 (30's partial, step 2)      MCAST_FWD from 29 to 31
 *          to 31, answers                           rack 7
 *   1      AGG_FINISH 1 2 3 4, rack 7's hosts        -
 *          (to itself), answers
 *   2      AGG_FINISH 1 63, unicast to 31            MCAST_END from 31 rack 7
 *   3      AGG_FINISH 2 3, rack 7 and on to 40,      STORE_END (a host's
 *          answers, SELF set                        action: no route here)
 *   4      ps-ina's pool: AGG_FWD 1 2 3 to 31 in    -
 *          a pool of 2 slots (which are the slots
 *          of blocks 0 and 1: the tables of one
 *          job mix what a plan keeps apart)
 */
static const __u8 tor_cmap[] = { 0, 1, 2, 0, 3, 4, 4, 4 };
static const struct rinx_hop tor_tab[][RINX_HOP_TYPES] = {
	[0] = { { .action = RINX_A_AGG_FWD, .from = 30, .step = 2, .to = 31,
		  .out_step = 3, .rack = 7, .flags = HA,
		  .mask = BIT(1) | BIT(2) | BIT(3) | BIT(30) },
		{ .action = RINX_A_MCAST_FWD, .from = 29, .step = 4, .to = 31,
		  .out_step = 5, .rack = 7 },
		{ .action = RINX_A_AGG_FWD, .from = 30, .step = 2, .to = 31,
		  .out_step = 3, .rack = 7, .flags = HA,
		  .mask = BIT(1) | BIT(2) | BIT(3) | BIT(30) } },
	[1] = { AGG(.action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 50,
		    .rack = 7, .flags = HA,
		    .mask = BIT(1) | BIT(2) | BIT(3) | BIT(4)) },
	[2] = { { .action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 31,
		  .rack = RINX_NO_RACK, .mask = BIT(1) | BIT(63) },
		{ .action = RINX_A_MCAST_END, .from = 31, .step = 1, .to = 50,
		  .out_step = 2, .rack = 7 },
		{ .action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 31,
		  .rack = RINX_NO_RACK, .mask = BIT(1) | BIT(63) } },
	[3] = { { .action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 40,
		  .rack = 7, .flags = HS | HA, .mask = BIT(2) | BIT(3) },
		{ .action = RINX_A_STORE_END, .from = 40, .to = 50 },
		{ .action = RINX_A_AGG_FINISH, .from = NOFROM, .to = 40,
		  .rack = 7, .flags = HS | HA, .mask = BIT(2) | BIT(3) } },
	[4] = { AGG(.action = RINX_A_AGG_FWD, .from = NOFROM, .to = 31,
		    .rack = RINX_NO_RACK, .pool = 2,
		    .flags = RINX_HOP_POOL | RINX_HOP_COVER,
		    .mask = BIT(1) | BIT(2) | BIT(3)) },
#undef AGG
};

static const struct jobcfg tor_job = {
	0x70770001, 0x11aa22bb11aa22bbULL, 3, 77, 12, 500, 5, 64, 50, 24,
	RINX_W_FIXED, 0,
	tor_cmap, sizeof(tor_cmap), tor_tab, false, 0,
};

/* The job's class pattern (the ring's: block b in class b % n); the node
 * starts nothing. */
static void job_classes(struct rinx_job *job, const struct jobcfg *j)
{
	int i, n = j->nclasses;

	job->plen = j->cmap ? j->plen : n < RINX_CMAP_MAX ? n : 0;
	for (i = 0; i < job->plen; i++)
		job->cmap[i] = j->cmap ? j->cmap[i] : i;
	memset(job->start_to, 0xff, sizeof(job->start_to));
}

static __u32 job_class(const struct jobcfg *j, __u32 block)
{
	return j->cmap ? j->cmap[block % j->plen] : block % j->nclasses;
}

static struct rinx_job job_entry(const struct jobcfg *j)
{
	struct rinx_job job = {
		.token = j->token, .slot = j->slot, .round = j->round,
		.nblocks = j->nblocks, .last_count = j->last_count,
		.nclasses = j->nclasses, .nnodes = j->nnodes,
		.self = j->self, .qbits = j->qbits, .dtype = j->dtype,
		.window = WINDOW, .flags = j->keep ? RINX_JOB_KEEP : 0,
		.bval = (__u16)jbv(j),
	};

	job_classes(&job, j);
	return job;
}

/* Ring plan: class c is reduced from node c along c+1, ..., and finished at
 * c-1, which starts its gather along c, c+1, ..., ending at c-2. */
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

/* The hop of (class, type) the test installs for job j. */
static struct rinx_hop job_hop(const struct jobcfg *j, __u32 c, int type)
{
	if (type < RINX_T_REDUCE || type > RINX_T_CONTRIB)
		return (struct rinx_hop){ 0 };
	if (j->tab)
		return c < j->nclasses ? j->tab[c][type - 1] :
					 (struct rinx_hop){ 0 };
	/* a ring node aggregates nothing: no contribution has a route */
	return type == RINX_T_CONTRIB ? (struct rinx_hop){ 0 } :
					plan(j, c, type);
}

static bool is_agg(int action)
{
	return action == RINX_A_AGG_FWD || action == RINX_A_AGG_FINISH;
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
	H_TOKEN = OFF_HDR + 12, H_ROUND = OFF_HDR + 20,
	H_BLOCK = OFF_HDR + 24, H_NBLOCKS = OFF_HDR + 28,
	H_SENDER = OFF_HDR + 32, H_COUNT = OFF_HDR + 34,
	H_KLASS = OFF_HDR + 36, H_EXP = OFF_HDR + 38, H_DTYPE = OFF_HDR + 40,
	H_RESV = OFF_HDR + 42, H_COVER = OFF_HDR + 46,
};

_Static_assert(H_COVER + 8 == OFF_V, "header offsets (uapi/rinx.h)");

static void put64(__u8 *p, __u64 v)
{
	put32(p, (__u32)(v >> 32));
	put32(p + 4, (__u32)v);
}

static __u64 get64(const __u8 *p)
{
	return (__u64)get32(p) << 32 | get32(p + 4);
}

static void put_cover(__u8 *f, __u64 c)
{
	put64(f + H_COVER, c);
}

static __u64 get_cover(const __u8 *f)
{
	return get64(f + H_COVER);
}

/* ---- host frames --------------------------------------------------------- */

/* A random node of mask (which is not empty). */
static __u16 mask_node(__u64 mask)
{
	int n = __builtin_popcountll(mask), k = (int)below((__u32)n);

	while (k--)
		mask &= mask - 1;
	return (__u16)__builtin_ctzll(mask);
}

/* A valid frame of job j's block for a planned (class, type), addressed to
 * its node j->self. Aggregations: a contributor's raw share (step 0, or a
 * reduce frame with step 0 from any contributor but `from`), or the
 * partial sum of `from`; now and then of the next round (an aggregator
 * takes it) or a NACK. */
static int build_frame(__u8 *buf, const struct jobcfg *j)
{
	struct rinx_hop h;
	__u32 block, cnt, i, round = j->round;
	int type, flen = RINX_FRAME_LEN(jbv(j));
	__u16 from;
	__s32 lim;
	__u8 step, tos = 0;

	/* a planned (class, type); now and then one this node has no
	 * part in (sent as if from the previous node) */
	do {
		block = below(j->nblocks);
		type = below(j->tab ? 4 : 2) ? RINX_T_REDUCE : RINX_T_GATHER;
		if (j->tab && type == RINX_T_REDUCE && below(2))
			type = RINX_T_CONTRIB;
		h = job_hop(j, job_class(j, block), type);
	} while (h.action == RINX_A_NONE && below(16));
	from = h.from;
	step = h.step;
	if (h.action == RINX_A_NONE || from >= RINX_MAX_NODES)
		from = (__u16)((j->self + j->nnodes - 1) % j->nnodes);
	if (is_agg(h.action)) {
		if (h.from >= RINX_MAX_NODES || below(4))
			from = mask_node(h.mask);
		if (h.via && below(2))
			from = mask_node(h.via);
		if (type == RINX_T_CONTRIB || from != h.from)
			step = 0;
	}
	if (j->tab) {
		/* a ToR or an aggregating host takes the next round early;
		 * congestion marks travel with the sums */
		if (!below(32))
			round++;
		else if (!below(64))
			round--;
		tos = below(8) ? RINX_ECN_ECT0 : RINX_ECN_CE;
		if (!below(24)) {
			type = RINX_T_NACK;
			from = (__u16)below(RINX_MAX_NODES);
		} else if (h.action == RINX_A_AGG_FWD && !below(16)) {
			/* the node the sum went to asks for it again (it
			 * pulled: bpf/agg.bpf.h) */
			type = RINX_T_RNACK;
			from = below(8) ? h.to : (__u16)below(RINX_MAX_NODES);
		}
	}
	if (!j->tab && type == RINX_T_REDUCE && !below(12)) {
		/* the successor asks again for the reduce it missed (the
		 * node starts nothing: only an add and forward hop answers) */
		type = RINX_T_RNACK;
		from = below(8) ? h.to : (__u16)below(RINX_MAX_NODES);
		if (below(8))
			round = j->round;
	}
	if (!j->tab && type == RINX_T_GATHER && !below(8)) {
		/* a node asks for a finished block again: any node that
		 * stored it answers */
		type = RINX_T_NACK;
		from = (__u16)below(j->nnodes);
	}
	cnt = block == j->nblocks - 1 ? j->last_count : (__u32)jbv(j);

	memset(buf, 0, flen);
	node_mac(j->slot, j->self, buf);
	node_mac(j->slot, from, buf + 6);
	put16(buf + 12, ETH_P_IP);
	buf[OFF_IP] = 0x45;
	buf[OFF_IP + 1] = tos;
	put16(buf + OFF_IP + 2, flen - OFF_IP);
	put16(buf + OFF_IP + 4, (__u16)rnd());
	put16(buf + OFF_IP + 6, below(2) ? 0x4000 : 0);
	buf[OFF_IP + 8] = 64;
	buf[OFF_IP + 9] = 17;
	put32(buf + OFF_IP + 12, node_ip(j->slot, from));
	put32(buf + OFF_IP + 16, node_ip(j->slot, j->self));
	put16(buf + OFF_UDP, PORT);
	put16(buf + OFF_UDP + 2, PORT);
	put16(buf + OFF_UDP + 4, flen - OFF_UDP);

	put32(buf + H_MAGIC, RINX_MAGIC);
	buf[H_VERSION] = RINX_VERSION;
	buf[H_TYPE] = (__u8)type;
	buf[H_FLAGS] = below(8) || type == RINX_T_NACK ||
		       type == RINX_T_RNACK ? 0 :
		       (__u8)(rnd() & RINX_F_NONFINITE);
	buf[H_STEP] = step;
	put32(buf + H_JOB, j->id);
	put64(buf + H_TOKEN, j->token);
	put32(buf + H_ROUND, round);
	put32(buf + H_BLOCK, block);
	put32(buf + H_NBLOCKS, j->nblocks);
	put16(buf + H_SENDER, from);
	put16(buf + H_COUNT, (__u16)cnt);
	put16(buf + H_KLASS, (__u16)job_class(j, block));
	/* coverage: a part of the hop's contributors, mostly (an aggregator
	 * of `via` declares it; anyone else's is ignored), now and then none
	 * or beyond them */
	put_cover(buf, !below(16) ? (__u64)rnd() << 32 | rnd() :
		       !below(16) ? 0 : h.mask & ((__u64)rnd() << 32 | rnd()));
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
	return flen;
}

/* A valid frame of one of the host's jobs. */
static int build_valid(__u8 *buf, const struct jobcfg **jp)
{
	__u32 r = below(12);

	*jp = &jobs[r < 4 ? 0 : r < 6 ? 1 : r < 10 ? 2 : r < 11 ? 3 : 4];
	return build_frame(buf, *jp);
}

static const __u32 round_deltas[] = { 1, 2, -1u, -2u, 0x80000000u, 1000 };

/* Set one header field to a chosen or random value. */
static void mutate_field(__u8 *b, const struct jobcfg *j, int *len)
{
	const struct jobcfg *o = &jobs[below(ARRAY_SIZE(jobs))];
	__u32 v = rnd();

	if (o == j)	/* another job: the first one of the host's */
		o = &jobs[j == &jobs[0]];

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
		/* a token that differs anywhere, the high half included */
		put64(b + H_TOKEN, below(3) == 0 ? (__u64)v << 32 | rnd() :
			  below(2) ? o->token : j->token ^ 1ULL << below(64));
		break;
	case 5:
	case 6:
		put32(b + H_ROUND, below(6) == 0 ? v : below(5) == 0 ?
			  o->round : j->round + round_deltas[below(6)]);
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
			  j->tab && below(2) ? (__u16)below(RINX_MAX_NODES) :
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
		const int at[] = { 14, 33, 34, 41, 42, OFF_V - 1, OFF_V,
				   RINX_FRAME_MIN - 1, FULL_LEN - 1,
				   JUMBO_LEN - 1, JUMBO_LEN - 96 };

		int l = at[below(ARRAY_SIZE(at))];

		if (below(2))
			*len = 14 + below(*len - 13);
		else if (l < *len)
			*len = l;
		break;
	}
	case 23: {
		/* extend with random bytes (a linear frame to a jumbo
		 * frame's length, now and then) */
		int top = *len > MAX_LEN || (j != &tor_job && !below(8)) ?
			  MAX_JLEN : MAX_LEN;
		int n = *len + below(top - *len + 1);

		rand_bytes(b + *len, n - *len);
		*len = n;
		break;
	}
	}
}

/* Random bytes of random length, with layers of plausibility so that some
 * get past the parser. */
static int gen_random(__u8 *b)
{
	int len = 14 + below(MAX_LEN - 13);

	rand_bytes(b, len);
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

/* One to three mutations of a valid frame of job j; returns the length. */
static int mutate_frame(__u8 *b, const struct jobcfg *j, int len)
{
	int n = 1 + below(3), k;

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

/* Frame i of the host run into buf; returns its length. */
static int gen_host(__u8 *b)
{
	const struct jobcfg *j;
	int len, r = below(100);

	if (r < 8)
		return gen_random(b);
	len = build_valid(b, &j);
	/* intentional valid frames; more of them for the aggregator, whose
	 * slots complete only when every contributor got through */
	if (r < 14 || (j->tab && r < 60))
		return len;
	return mutate_frame(b, j, len);
}

/* ---- host reference model ------------------------------------------------ */

struct pred {
	int stat;	/* outcome counter */
	int act;	/* XDP action (host), V_* verdict (ToR) */
	bool store;	/* a result slot is written */
	bool reset;	/* an unfinished older round left its slot */
	bool want;	/* the whole output frame is known: wantf */
	bool mine;	/* ToR: the frame was for the aggregator */
	int aidx;	/* aggregator slot touched (its model is checked), -1 */
	__u32 idx, round;
	__u8 tos;	/* TOS byte of the stored frame */
	bool keep;	/* the job's hops keep partial sums */
	int nv;		/* values of the block stored or kept (from idx
			 * on, a jumbo block over three slots) */
};

/* The output frame the model expects when pred.want. */
static __u8 wantf[MAX_JLEN + 64];

/* Counters that come with an outcome instead of being one. */
static bool annotation(int stat)
{
	return stat == RINX_STAT_ECN_CE || stat == RINX_STAT_PACED ||
	       stat == RINX_STAT_AGG_RESET;
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
	case RINX_STAT_RREPAIR:
	case RINX_STAT_HELLO_YES:
	case RINX_STAT_AGG_RESEND:
	case RINX_STAT_AGG_MCAST:
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

/* ---- aggregator slot model ----------------------------------------------- */

/*
 * The fuzzer is the only writer of the aggregator slots (one frame runs at
 * a time), so it keeps each slot's whole state, sums included, and the
 * program's slot must equal it after every frame that reaches it. The
 * arithmetic below is written from the rules in bpf/fixed.bpf.h: align the
 * operand with the smaller exponent (round to nearest, ties up; 32 bits or
 * more of shift leave nothing of it), add in 32 bits.
 */
struct mslot {
	__u32 round;
	__u32 block;	/* pool slot: the block it holds */
	__u32 shape;	/* RINX_SHAPE of its round (set with seen) */
	__u64 seen;
	__s16 exp;
	__u8 flags, done, final, ce, pend, dtype;
	__s32 v[RINX_BLOCK_VALUES];
};

enum mret { M_CONSUMED, M_COMPLETE, M_DUP, M_RESEND, M_FINAL, M_STALE,
	    M_NEED_SELF, M_OVERLAP, M_SHAPE };

/* The round's shape frame f declares, and whether slot a (with
 * contributions) holds that shape. */
static __u32 m_shape(const __u8 *f)
{
	return RINX_SHAPE(get32(f + H_NBLOCKS), get16(f + H_COUNT));
}

static bool m_same_shape(const struct mslot *a, const __u8 *f)
{
	return a->shape == m_shape(f) && a->dtype == (__u8)get16(f + H_DTYPE);
}

static void m_take_shape(struct mslot *a, const __u8 *f)
{
	a->shape = m_shape(f);
	a->dtype = (__u8)get16(f + H_DTYPE);
}

/* What a frame from `sender` adds at hop h: its declared coverage if it
 * comes from one of the hop's coverage aggregators, else its bit. */
static __u64 m_cover(const __u8 *b, const struct rinx_hop *h, __u32 sender)
{
	if ((h->flags & RINX_HOP_COVER) && (h->via >> (sender & 63) & 1))
		return get_cover(b);
	return 1ULL << (sender & 63);
}

static __s32 m_align(__s32 x, __u32 d)
{
	if (d == 0)
		return x;
	if (d > 31)
		return 0;
	/* floor((x + 2^(d-1)) / 2^d), exact in 64 bits */
	return (__s32)(((__s64)x + (1LL << (d - 1))) >> d);
}

static __s16 m_block_add(__s32 *dst, __s16 dexp, const __s32 *src, __s16 sexp)
{
	__s16 e = dexp > sexp ? dexp : sexp;
	__u32 dd = (__u32)(e - dexp), ds = (__u32)(e - sexp);
	int i;

	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		dst[i] = (__s32)((__u32)m_align(dst[i], dd) +
				 (__u32)m_align(src[i], ds));
	return e;
}

static void m_slot_to_frame(const struct mslot *a, __u8 *f)
{
	memcpy(f + OFF_V, a->v, RINX_BLOCK_BYTES);
	put16(f + H_EXP, (__u16)a->exp);
	f[H_FLAGS] = a->flags;
}

/* Frame f (round `round`, contributor node) into slot a; f becomes the
 * frame as the program leaves it. own: the node's share (RINX_HOP_SELF). */
static int m_agg_add(struct mslot *a, __u8 *f, __u32 round, __u64 b,
		     __u64 mask, bool finish, const struct rinx_slot *own,
		     bool *reset)
{
	__s32 x[RINX_BLOCK_VALUES];
	__s16 fexp = (__s16)get16(f + H_EXP);
	int ret = M_COMPLETE;

	*reset = false;
	if (a->round != round) {
		if (a->seen && (__s32)(round - a->round) < 0)
			return M_STALE;
		*reset = a->seen && !a->done;
		a->round = round;
		a->seen = 0;
		a->done = a->final = a->pend = 0;
	}
	if (a->seen && !m_same_shape(a, f))
		return M_SHAPE;
	if ((a->seen & b) && (a->seen & b) != b)
		return M_OVERLAP;
	if (a->seen & b) {
		if (!a->done && !a->pend)
			return M_DUP;
		m_slot_to_frame(a, f);
		return a->pend ? M_NEED_SELF : a->final ? M_FINAL : M_RESEND;
	}
	memcpy(x, f + OFF_V, sizeof(x));
	if (!a->seen) {
		memcpy(a->v, x, sizeof(x));
		a->exp = fexp;
		a->flags = f[H_FLAGS];
		a->ce = 0;
		m_take_shape(a, f);
	} else {
		a->exp = m_block_add(a->v, a->exp, x, fexp);
		a->flags |= f[H_FLAGS];
	}
	if ((f[OFF_IP + 1] & RINX_ECN_MASK) == RINX_ECN_CE)
		a->ce = 1;
	a->seen |= b;
	if ((a->seen & mask) != mask)
		return M_CONSUMED;
	if (own && own->round == round) {
		a->exp = m_block_add(a->v, a->exp, own->v, own->exp);
		a->flags |= own->flags;
	} else if (own) {
		a->pend = 1;
		ret = M_NEED_SELF;
	}
	if (ret == M_COMPLETE) {
		a->done = 1;
		a->final = finish;
	}
	m_slot_to_frame(a, f);
	if (a->ce)
		f[OFF_IP + 1] |= RINX_ECN_CE;
	return ret;
}

/* A gather passing the member keeps the finished block (for NACKs). */
static void m_agg_keep(struct mslot *a, const __u8 *f, __u32 round)
{
	if (a->round != round)
		return;
	memcpy(a->v, f + OFF_V, RINX_BLOCK_BYTES);
	a->exp = (__s16)get16(f + H_EXP);
	a->flags = f[H_FLAGS];
	a->final = 1;
}

/* Addresses, sender and step of a frame leaving node self for node to. */
static void m_readdress(__u8 *f, __u32 slot, __u16 self, __u16 to)
{
	node_mac(slot, to, f);
	node_mac(slot, self, f + 6);
	put32(f + OFF_IP + 12, node_ip(slot, self));
	put32(f + OFF_IP + 16, node_ip(slot, to));
	ip_fix_csum(f + OFF_IP);
	put16(f + OFF_UDP + 6, 0);
	put16(f + H_SENDER, self);
}

static void m_group(__u8 *f, __u8 rack, bool onward)
{
	const __u8 every[6] = { RINX_GROUP_MAC0, RINX_GROUP_MAC1,
				RINX_GROUP_MAC2, 0xff, 0xff, 0 };
	const __u8 g[6] = { RINX_GROUP_MAC0, RINX_GROUP_MAC1, RINX_GROUP_MAC2,
			    rack, 0, onward };

	memcpy(f, rack == RINX_GROUP_EVERY ? every : g, 6);
}

/* Paths of the aggregator the models went through (coverage). */
enum cov {
	C_ADD, C_FWD, C_FIN_UNICAST, C_FIN_GROUP_ON, C_FIN_GROUP, C_FIN_END,
	C_NEED_SELF, C_PEND_DUP, C_RESET, C_DUP, C_FINAL_DUP, C_ANSWER,
	C_REEMIT_FWD, C_REEMIT_FIN, C_STALE, C_MCAST_FWD, C_MCAST_END,
	C_MCAST_STALE, C_NACK_REPAIR, C_TRAINER, C_POOL_DONE, C_POOL_PASS,
	C_POOL_FLUSH, C_POOL_RESEND, C_OVERLAP, C_MEMBER, C_AHEAD,
	C_SHAPE_FRAME, C_SHAPE, C_RNACK_SUM, C_PULL, C_NACK_PULL, C_NACK_SUM,
	C_MAX,
};

static const char *cov_name[C_MAX] = {
	"contribution added", "AGG_FWD complete", "AGG_FINISH unicast",
	"AGG_FINISH group and on", "AGG_FINISH group only",
	"AGG_FINISH ends here", "own share missing (pend)",
	"duplicate into a pending slot", "unfinished round reset",
	"duplicate dropped", "partial sum into a finished block",
	"late share answered", "AGG_FWD sum sent again",
	"AGG_FINISH sum sent again", "older round refused", "MCAST_FWD",
	"MCAST_END", "gather before the slot is done",
	"NACK answered from the slot", "pending slot completed by the trainer",
	"pool: sum complete, slot freed", "pool: collision, share passed on",
	"pool: share sent again flushes the slot",
	"pool: share sent again passed on",
	"coverage overlapping the slot's in part",
	"non-member refused", "round too far ahead refused",
	"size or dtype unfit for a round",
	"size or dtype not the slot's round's",
	"RNACK answered with the sum sent on",
	"contribution asking for its earlier block (pull)",
	"NACK answered with a pull",
	"NACK answered: the sum sent on again",
};

/* C_* bits that only a host or only a ToR can reach */
#define COV_HOST_ONLY	(1u << C_OVERLAP | \
			 1u << C_FIN_END | 1u << C_NEED_SELF | \
			 1u << C_PEND_DUP | 1u << C_TRAINER)
#define COV_TOR_ONLY	(1u << C_MCAST_STALE | 1u << C_NACK_REPAIR | \
			 1u << C_POOL_DONE | 1u << C_POOL_PASS | \
			 1u << C_POOL_FLUSH | 1u << C_POOL_RESEND | \
			 1u << C_SHAPE_FRAME | 1u << C_SHAPE)
/* (a host checks the shape of the next round only, which few frames are:
 * both shape paths are required at the ToR, which checks every frame) */

static __u64 host_cov[C_MAX], tor_cov[C_MAX], *cov = host_cov;

/* Aggregator slots of the host (slot, block) and of the ToR. */
static struct mslot host_slots[NRES], tor_slots[NRES];

/* ---- host reference model ------------------------------------------------ */

/* The result map as it must be (the shadow copy), for NACK answers, and
 * the shares as the test wrote them (RINX_HOP_SELF). */
static const struct rinx_slot *res_model, *share_model;
/* The partial sums the host keeps at its add and forward hops. */
static struct rinx_slot *part_model;

static const struct jobcfg *find_job_in(const struct jobcfg *t, size_t n,
					__u32 id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].id == id)
			return &t[i];
	return NULL;
}

/* MP_HDR: the header whole, less payload than a small block (only a
 * parameter server's frame may be one) */
enum { MP_OK, MP_OTHER, MP_SHORT, MP_VERSION, MP_OK_MIN, MP_HDR,
       MP_OK_JUMBO };

/* rinx_parse of frame b, written from the frame format. */
static int parse_model(const __u8 *b, int len)
{
	if (get16(b + 12) != ETH_P_IP || len < OFF_UDP ||
	    b[OFF_IP + 9] != 17 || len < OFF_HDR ||
	    get16(b + OFF_UDP + 2) != PORT)
		return MP_OTHER;
	if ((b[OFF_IP] & 0xf) != 5 || (get16(b + OFF_IP + 6) & 0x3fff) ||
	    len < OFF_V)
		return MP_SHORT;
	if (get32(b + H_MAGIC) != RINX_MAGIC || b[H_VERSION] != RINX_VERSION)
		return MP_VERSION;
	/* the payload's length says the frame's size: jumbo (the whole
	 * frame, fragments included), full, small (a 1,500-byte MTU's) or a
	 * header alone */
	if (len >= JUMBO_LEN)
		return MP_OK_JUMBO;
	if (len >= FULL_LEN)
		return MP_OK;
	return len >= OFF_V + RINX_BLOCK_BYTES_MIN ? MP_OK_MIN : MP_HDR;
}

/* Values of the block a frame of len bytes carries, by its size class. */
static int frame_nv(int len)
{
	return len >= JUMBO_LEN ? RINX_BLOCK_VALUES_JUMBO :
	       len >= FULL_LEN ? RINX_BLOCK_VALUES : RINX_BLOCK_VALUES_MIN;
}

/* The frame's size (the job's block size), counts, block, class within
 * the round and the window (a jumbo block takes three of its slots): 0 or
 * the drop. */
static int bounds_model(const __u8 *b, int len, const struct jobcfg *j)
{
	__u32 block = get32(b + H_BLOCK), nblocks = get32(b + H_NBLOCKS);
	__u32 cnt = get16(b + H_COUNT);

	if (frame_nv(len) != jbv(j))
		return RINX_STAT_DROP_SHAPE;
	if (cnt == 0 || cnt > (__u32)jbv(j) || block >= nblocks ||
	    nblocks > WINDOW / jslots(j) ||
	    get16(b + H_KLASS) != job_class(j, block))
		return RINX_STAT_DROP_BOUNDS;
	return 0;
}

/* The sender the hop accepts (an aggregation: any contributor with a raw
 * share, step 0, or `from` with its partial sum): 0 or the drop. */
static int sender_model(const __u8 *b, const struct jobcfg *j,
			const struct rinx_hop *h, __u32 type, __u32 *sender)
{
	bool agg = is_agg(h->action);

	*sender = get16(b + H_SENDER);
	if (*sender >= RINX_MAX_NODES || *sender >= j->nnodes)
		return RINX_STAT_DROP_MEMBER;
	if (type == RINX_T_CONTRIB && !agg)
		return RINX_STAT_DROP_SENDER;
	if (get32(b + OFF_IP + 12) != node_ip(j->slot, *sender))
		return RINX_STAT_DROP_MEMBER;
	if (agg) {
		if ((h->flags & RINX_HOP_COVER) && (h->via >> *sender & 1)) {
			__u64 c = get_cover(b);

			return !c || (c & ~h->mask) || b[H_STEP] ?
			       RINX_STAT_DROP_SENDER : 0;
		}
		if (!(h->mask >> *sender & 1))
			return RINX_STAT_DROP_MEMBER;
		if (type == RINX_T_CONTRIB || *sender != h->from)
			return b[H_STEP] == 0 ? 0 : RINX_STAT_DROP_SENDER;
	} else if (*sender != h->from) {
		return RINX_STAT_DROP_SENDER;
	}
	return b[H_STEP] == h->step ? 0 : RINX_STAT_DROP_SENDER;
}

/* rinx_check_shape: what an aggregator checks of a round it has no table
 * of. 0 or the drop. */
static int shape_model(const __u8 *b)
{
	__u32 block = get32(b + H_BLOCK), nblocks = get32(b + H_NBLOCKS);
	__u16 dtype = get16(b + H_DTYPE);

	if (dtype == RINX_W_INT32 && get16(b + H_EXP))
		return RINX_STAT_DROP_BOUNDS;
	if (nblocks >= RINX_SHAPE_MAX_BLOCKS)
		return RINX_STAT_DROP_BOUNDS;
	if ((dtype != RINX_W_INT32 && dtype != RINX_W_FIXED) ||
	    (block + 1 < nblocks && get16(b + H_COUNT) != RINX_BLOCK_VALUES)) {
		cov[C_SHAPE_FRAME]++;
		return RINX_STAT_DROP_SHAPE;
	}
	return 0;
}

/* NACK's asker: a node of the job sending from its own address. */
static bool asker_ok(const __u8 *b, const struct jobcfg *j)
{
	__u16 who = get16(b + H_SENDER);

	return who < RINX_MAX_NODES && !b[H_FLAGS] &&
	       get32(b + OFF_IP + 12) == node_ip(j->slot, who);
}

/* The partial sum slot a sent on (hop h, agg+fwd), again, if the slot
 * sent it in round `round` and holds it still (rinx_agg_get_sent): wantf
 * becomes that reduce, to h->to. */
static bool m_sum_out(const struct mslot *a, const struct rinx_hop *h,
		      const __u8 *b, const struct jobcfg *j, __u32 round)
{
	if (h->action != RINX_A_AGG_FWD || a->round != round || !a->done ||
	    a->final || a->pend || !m_same_shape(a, b))
		return false;
	m_slot_to_frame(a, wantf);
	put_cover(wantf, a->seen);
	wantf[OFF_IP + 1] = (wantf[OFF_IP + 1] & ~RINX_ECN_MASK) |
			    (a->ce ? RINX_ECN_CE : RINX_ECN_ECT0);
	wantf[H_TYPE] = RINX_T_REDUCE;
	wantf[H_STEP] = h->out_step;
	m_readdress(wantf, j->slot, j->self, h->to);
	return true;
}

/* RNACK at an aggregator from the node its partial sum of the block went
 * to (hop h, the class's contribution hop): the slot's sum again, if the
 * slot sent it this round and holds it still. true: wantf is the answer. */
static bool m_sum_again(const struct mslot *a, const struct rinx_hop *h,
			const __u8 *b, const struct jobcfg *j, __u32 round)
{
	return h->to == get16(b + H_SENDER) &&
	       !(h->flags & (RINX_HOP_POOL | RINX_HOP_COVER)) &&
	       m_sum_out(a, h, b, j, round);
}

/* The pull rule (bpf/agg.bpf.h): the block frame b (of job j, hop h) asks
 * its sender for, or -1. */
static long m_pull_block(const __u8 *b, const struct jobcfg *j,
			 const struct rinx_hop *h)
{
	__u32 plen = j->cmap ? j->plen :
		     j->nclasses < RINX_CMAP_MAX ? j->nclasses : 0;
	__u32 block = get32(b + H_BLOCK), d;

	if ((h->flags & (RINX_HOP_POOL | RINX_HOP_COVER)) || !plen ||
	    (b[H_FLAGS] & RINX_F_RESEND))
		return -1;
	d = (RINX_PULL_BEHIND + plen - 1) / plen * plen;
	if (block < d || block + 1 >= get32(b + H_NBLOCKS))
		return -1;
	return (long)(block - d);
}

static bool m_lacks(const struct mslot *a, __u32 round, __u64 bit)
{
	if (a->round != round)
		return (__s32)(a->round - round) < 0;
	return !(a->seen & bit) && !a->done;
}


/* wantf: frame b going back to `who` as the pull (RNACK) of block pb. */
static void m_pull_frame(const __u8 *b, const struct jobcfg *j, __u32 pb,
			 __u16 who)
{
	wantf[H_TYPE] = RINX_T_RNACK;
	put32(wantf + H_BLOCK, pb);
	wantf[H_FLAGS] = 0;
	wantf[H_STEP] = 0;
	put_cover(wantf, 0);
	wantf[OFF_IP + 1] = (b[OFF_IP + 1] & ~RINX_ECN_MASK) | RINX_ECN_ECT0;
	m_readdress(wantf, j->slot, j->self, who);
}

/* A NACK at an aggregator without the finished block (rinx_agg_nack):
 * 0 nothing, 1 a pull of the asker's share, 2 the partial sum sent on
 * again; wantf is what leaves. */
static int m_agg_nack(const __u8 *b, const struct jobcfg *j,
		      const struct rinx_hop *h, const struct mslot *a,
		      __u32 round, __u32 block)
{
	__u16 who = get16(b + H_SENDER);

	if ((h->action != RINX_A_AGG_FWD && h->action != RINX_A_AGG_FINISH) ||
	    (h->flags & (RINX_HOP_POOL | RINX_HOP_COVER)) || who >= 64 ||
	    !(h->mask >> who & 1))
		return 0;
	if (m_lacks(a, round, 1ULL << who)) {
		m_pull_frame(b, j, block, who);
		return 1;
	}
	if (m_sum_out(a, h, b, j, round))
		return 2;
	return 0;
}

/* Coverage of one m_agg_add outcome r under hop h (frame type). */
static void cov_add(int r, bool reset, const struct rinx_hop *h, __u32 type,
		    __u16 self)
{
	bool finish = h->action == RINX_A_AGG_FINISH;

	if (reset)
		cov[C_RESET]++;
	switch (r) {
	case M_CONSUMED:
		cov[C_ADD]++;
		break;
	case M_COMPLETE:
		cov[!finish ? C_FWD :
		    h->rack == RINX_NO_RACK ? (h->to == self ? C_FIN_END :
						C_FIN_UNICAST) :
		    h->to == self ? C_FIN_GROUP : C_FIN_GROUP_ON]++;
		break;
	case M_DUP:
		cov[C_DUP]++;
		break;
	case M_STALE:
		cov[C_STALE]++;
		break;
	case M_OVERLAP:
		cov[C_OVERLAP]++;
		break;
	case M_RESEND:
	case M_FINAL:
		if (r == M_FINAL && type == RINX_T_CONTRIB &&
		    (h->flags & RINX_HOP_ANSWER))
			cov[C_ANSWER]++;
		else if (r == M_FINAL && !finish)
			cov[C_FINAL_DUP]++;
		else
			cov[finish ? C_REEMIT_FIN : C_REEMIT_FWD]++;
		break;
	}
}

/* An aggregation or multicast of the host (the frame is in wantf). */
static void host_agg(struct pred *p, const struct jobcfg *j,
		     const struct rinx_hop *h, __u32 type, __u32 sender)
{
	struct mslot *a = &host_slots[p->idx];
	bool finish = h->action == RINX_A_AGG_FINISH, pend;
	int r;

	p->want = true;
	p->aidx = (int)p->idx;
	if (h->action == RINX_A_MCAST_FWD || h->action == RINX_A_MCAST_END) {
		/* stores the gather as it came, keeps it, sends it into the
		 * rack (and on) */
		__u16 to = h->action == RINX_A_MCAST_FWD ? h->to : j->self;

		p->store = true;
		p->tos = wantf[OFF_IP + 1];
		m_agg_keep(a, wantf, p->round);
		wantf[H_STEP] = h->out_step;
		m_readdress(wantf, j->slot, j->self, to);
		m_group(wantf, h->rack, to != j->self);
		p->stat = RINX_STAT_AGG_MCAST;
		p->act = XDP_TX;
		cov[h->action == RINX_A_MCAST_FWD ? C_MCAST_FWD :
						    C_MCAST_END]++;
		return;
	}
	pend = a->pend && a->round == p->round;
	r = m_agg_add(a, wantf, p->round, m_cover(wantf, h, sender), h->mask,
		      finish,
		      h->flags & RINX_HOP_SELF ? &share_model[p->idx] : NULL,
		      &p->reset);
	cov_add(r, p->reset, h, type, j->self);
	p->act = XDP_DROP;
	if (r == M_OVERLAP) {
		p->stat = RINX_STAT_AGG_OVERLAP;
		return;
	}
	if (r == M_SHAPE) {
		cov[C_SHAPE]++;
		p->stat = RINX_STAT_DROP_SHAPE;
		return;
	}
	if (r == M_NEED_SELF) {
		cov[pend ? C_PEND_DUP : C_NEED_SELF]++;
		p->stat = RINX_STAT_DROP_NO_XSK;	/* for the trainer */
		return;
	}
	if (r == M_FINAL && type == RINX_T_CONTRIB &&
	    (h->flags & RINX_HOP_ANSWER)) {
		wantf[H_TYPE] = RINX_T_GATHER;
		wantf[H_STEP] = finish ? h->out_step : h->out_step + 1;
		m_readdress(wantf, j->slot, j->self, (__u16)sender);
		p->stat = RINX_STAT_AGG_RESEND;
		p->act = XDP_TX;
		return;
	}
	if (r == M_DUP || (r == M_FINAL && !finish)) {
		p->stat = RINX_STAT_DROP_AGG_DUP;
		return;
	}
	if (r == M_STALE) {
		p->stat = RINX_STAT_DROP_AGG_STALE;
		return;
	}
	if (r == M_CONSUMED) {
		long pb = m_pull_block(wantf, j, h);

		p->stat = RINX_STAT_AGG_ADD;
		if (pb >= 0 && m_lacks(&host_slots[j->slot * WINDOW + pb],
				       p->round, 1ULL << (sender & 63))) {
			m_pull_frame(wantf, j, (__u32)pb, (__u16)sender);
			p->stat = RINX_STAT_AGG_PULL;
			p->act = XDP_TX;
			cov[C_PULL]++;
		}
		return;
	}
	p->stat = r == M_COMPLETE ? RINX_STAT_AGG_DONE : RINX_STAT_AGG_REEMIT;
	wantf[H_STEP] = h->out_step;
	p->act = XDP_TX;
	if (!finish) {
		wantf[H_TYPE] = RINX_T_REDUCE;
		m_readdress(wantf, j->slot, j->self, h->to);
		return;
	}
	wantf[H_TYPE] = RINX_T_GATHER;
	p->store = true;
	p->tos = wantf[OFF_IP + 1];
	if (h->rack == RINX_NO_RACK && h->to == j->self) {
		p->act = XDP_DROP;	/* ends here */
		return;
	}
	m_readdress(wantf, j->slot, j->self, h->to);
	if (h->rack != RINX_NO_RACK)
		m_group(wantf, h->rack, h->to != j->self);
}

/* What the job's rules say about frame b (no AF_XDP socket is bound, so
 * every slow-path frame is dropped as NO_XSK). The aggregator slots of the
 * model move with it: call it once per frame, in order. */
static struct pred host_model(const __u8 *b, int len)
{
	struct pred p = { .stat = RINX_STAT_DROP_NO_XSK, .aidx = -1 };
	const struct jobcfg *j;
	struct rinx_hop h;
	__u32 round, block, nblocks, cnt, type, sender, q;
	bool agg;
	int bad, nv;

	memcpy(wantf, b, len);
	switch (parse_model(b, len)) {
	case MP_OTHER:
		p.stat = RINX_STAT_PASS;
		return p;
	case MP_SHORT:
		p.stat = RINX_STAT_DROP_SHORT;
		return p;
	case MP_VERSION:
		p.stat = RINX_STAT_DROP_VERSION;
		return p;
	case MP_HDR:
		if (b[H_TYPE] != RINX_T_PS) {
			p.stat = RINX_STAT_DROP_SHORT;
			return p;
		}
	}
	type = b[H_TYPE];
	nv = frame_nv(len);
	if (type != RINX_T_REDUCE && type != RINX_T_GATHER &&
	    type != RINX_T_CONTRIB && type != RINX_T_HELLO &&
	    type != RINX_T_NACK && type != RINX_T_RNACK && type != RINX_T_PS) {
		p.stat = RINX_STAT_DROP_TYPE;
		return p;
	}
	j = find_job_in(jobs, ARRAY_SIZE(jobs), get32(b + H_JOB));
	if (!j) {
		p.stat = type == RINX_T_HELLO ? RINX_STAT_HELLO_EARLY :
						RINX_STAT_DROP_JOB;
		return p;
	}
	if (get64(b + H_TOKEN) != j->token) {
		p.stat = RINX_STAT_DROP_TOKEN;
		return p;
	}
	/* "do you know the job?" is answered in XDP; other control frames go
	 * to the slow path (dropped here: no socket) */
	if (type == RINX_T_HELLO && b[H_STEP] == RINX_HELLO_OPEN) {
		p.stat = asker_ok(b, j) ? RINX_STAT_HELLO_YES :
					  RINX_STAT_DROP_SENDER;
		return p;
	}
	if (type == RINX_T_HELLO)
		return p;
	/* the parameter server's frames: no job here serves a store */
	if (type == RINX_T_PS) {
		p.stat = nv == RINX_BLOCK_VALUES_JUMBO ? RINX_STAT_DROP_SHAPE :
			 RINX_STAT_DROP_NO_ROUTE;
		return p;
	}
	round = get32(b + H_ROUND);
	block = get32(b + H_BLOCK);
	nblocks = get32(b + H_NBLOCKS);
	cnt = get16(b + H_COUNT);
	bad = bounds_model(b, len, j);
	if (bad) {
		p.stat = bad;
		return p;
	}
	/* NACK: answered from the result map when it holds that round */
	if (type == RINX_T_NACK) {
		const struct rinx_slot *r;

		r = &res_model[j->slot * WINDOW + block * jslots(j)];
		if (!asker_ok(b, j))
			p.stat = RINX_STAT_DROP_SENDER;
		else
			p.stat = r->round == round && r->count == cnt ?
				 RINX_STAT_REPAIR : RINX_STAT_NACK_MISS;
		/* an aggregation asks for what its slot lacks */
		if (p.stat == RINX_STAT_NACK_MISS && nv <= RINX_BLOCK_VALUES) {
			int w;

			h = job_hop(j, get16(b + H_KLASS), RINX_T_CONTRIB);
			memcpy(wantf, b, len);
			w = m_agg_nack(b, j, &h,
				       &host_slots[j->slot * WINDOW + block],
				       round, block);
			if (w) {
				p.stat = w == 1 ? RINX_STAT_NACK_PULL :
						  RINX_STAT_NACK_SUM;
				p.want = true;
				p.act = XDP_TX;
				cov[w == 1 ? C_NACK_PULL : C_NACK_SUM]++;
			}
		}
		return p;
	}
	/* RNACK: answered from the kept partial sum by the add and forward
	 * hop that sends the asker the class's reduce (the test's nodes
	 * start nothing, so no share answers), or by an aggregation that
	 * sends it its sum, from the slot */
	if (type == RINX_T_RNACK) {
		const struct rinx_slot *k;

		h = job_hop(j, get16(b + H_KLASS), RINX_T_REDUCE);
		k = &part_model[j->slot * WINDOW + block * jslots(j)];
		if (!asker_ok(b, j)) {
			p.stat = RINX_STAT_DROP_SENDER;
		} else if (round == j->round && h.action != RINX_A_ADD_FWD &&
			   nv <= RINX_BLOCK_VALUES) {
			h = job_hop(j, get16(b + H_KLASS), RINX_T_CONTRIB);
			if (m_sum_again(&host_slots[j->slot * WINDOW + block],
					&h, b, j, round)) {
				p.stat = RINX_STAT_RREPAIR;
				p.want = true;
				p.act = XDP_TX;
				cov[C_RNACK_SUM]++;
			} else {
				p.stat = RINX_STAT_RNACK_MISS;
			}
		} else if (round != j->round || h.action != RINX_A_ADD_FWD ||
			   h.to != get16(b + H_SENDER) || k->round != round ||
			   k->count != cnt) {
			p.stat = RINX_STAT_RNACK_MISS;
		} else {
			p.stat = RINX_STAT_RREPAIR;
			p.want = true;
			p.act = XDP_TX;
			/* a jumbo block from its three slots */
			for (q = 0; q < (__u32)nv; q += RINX_BLOCK_VALUES)
				memcpy(wantf + OFF_V + 4 * q,
				       k[q / RINX_BLOCK_VALUES].v,
				       4 * (nv - q < RINX_BLOCK_VALUES ?
					    nv - q : RINX_BLOCK_VALUES));
			put16(wantf + H_EXP, (__u16)k->exp);
			wantf[H_FLAGS] = k->flags;
			wantf[H_TYPE] = RINX_T_REDUCE;
			wantf[H_STEP] = (__u8)k->step;
			wantf[OFF_IP + 1] = (wantf[OFF_IP + 1] &
					     ~RINX_ECN_MASK) | RINX_ECN_ECT0;
			m_readdress(wantf, j->slot, j->self,
				    get16(b + H_SENDER));
		}
		return p;
	}
	h = job_hop(j, get16(b + H_KLASS), (int)type);
	if (h.action == RINX_A_NONE) {
		p.stat = RINX_STAT_DROP_NO_ROUTE;
		return p;
	}
	bad = sender_model(b, j, &h, type, &sender);
	if (bad) {
		if (bad == RINX_STAT_DROP_MEMBER)
			cov[C_MEMBER]++;
		p.stat = bad;
		return p;
	}
	agg = h.action >= RINX_A_AGG_FWD;
	if (round != j->round) {
		/* an aggregator takes the next round's contributions; the
		 * rest of the next round goes to the slow path (dropped
		 * here, no socket) */
		if (round == j->round + 1 && agg && type != RINX_T_GATHER) {
			/* its round is not installed: the frame's size
			 * and dtype must fit a round */
			bad = shape_model(b);
			if (bad) {
				p.stat = bad;
				return p;
			}
			goto sized;
		}
		if (round != j->round + 1 && (__s32)(round - j->round) > 1)
			cov[C_AHEAD]++;
		p.stat = round == j->round + 1 ? RINX_STAT_DROP_NO_XSK :
			 (__s32)(round - j->round) > 1 ? RINX_STAT_DROP_AHEAD :
							 RINX_STAT_DROP_STALE;
		return p;
	}
	if (j->dtype == RINX_W_INT32 && get16(b + H_EXP)) {
		p.stat = RINX_STAT_DROP_BOUNDS;
		return p;
	}
	if (nblocks != j->nblocks || get16(b + H_DTYPE) != j->dtype ||
	    cnt != (block == nblocks - 1 ? j->last_count : (__u32)jbv(j)))
		return p;	/* size mismatch: slow path */
sized:
	p.idx = j->slot * WINDOW + block * jslots(j);
	p.nv = nv;
	p.round = round;
	p.keep = j->keep;
	switch (h.action) {
	case RINX_A_ADD_FWD:
	case RINX_A_ADD_FINISH:
		/* passed on already this round: a duplicate */
		if (j->keep && (h.action == RINX_A_ADD_FWD ? part_model :
						  res_model)[p.idx].round ==
		    round) {
			p.stat = RINX_STAT_DROP_DUP;
			return p;
		}
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
	case RINX_A_STORE_END:
		if (j->keep && res_model[p.idx].round == round) {
			p.stat = RINX_STAT_DROP_DUP;
			return p;
		}
		p.stat = h.action == RINX_A_STORE_FWD ? RINX_STAT_GATHER_FWD :
							RINX_STAT_GATHER_END;
		p.store = true;
		break;
	default:
		host_agg(&p, j, &h, type, sender);
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
	"HELLO_YES", "ECN_CE", "PACED", "SLOW_SELF", "POOL_PASS",
	"POOL_FLUSH", "POOL_RESEND", "AGG_OVERLAP", "DROP_MEMBER",
	"DROP_AHEAD", "DROP_SHAPE", "RREPAIR", "RNACK_MISS", "DROP_DUP",
	"PS_PUSH", "PS_DUP", "PS_PULL", "PS_STALE", "PS_RANGE", "PS_LEAVE",
	"SLOW_PS", "AGG_PULL", "NACK_PULL", "NACK_SUM", "FAIR_UNMARK",
};

_Static_assert(RINX_STAT_FAIR_UNMARK == 57 && RINX_STAT_MAX == 58,
	       "host_stat_name follows enum rinx_stat");

static const char *sw_stat_name[RINX_SW_STAT_MAX] = {
	"FWD", "FLOOD", "DROP_SHORT", "DROP_NO_PORT", "DROP_HAIRPIN",
	"INA_FWD", "INA_GROUP", "INA_DROP", "INA_ABORTED", "GROUP",
	"HAIRPIN_SELF", "DROP_NO_NEIGH", "FAULT_DROP", "QUEUE_DROP",
	"FAULT_DUP", "FAULT_HOLD", "FAULT_REORDER", "FAULT_HOLD_LOST",
	"FAULT_SKIP", "ECN_MARK", "ECN_NOT_ECT",
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
	F_SLOT,		/* aggregator slot differs from its model, or holds
			 * a contributor outside its hop's mask */
	F_MAX,
};

/* the checks of each place (run_host, run_switch, run_ina), main's own
 * (3) and the coverage reports (2): the plan, whatever the runs do */
#define HOST_CHECKS	(F_MAX + 10)
#define SW_CHECKS	(F_MAX + 3)
#define INA_CHECKS	(F_MAX + 4)

/* N checks of PLACE that cannot run, skipped for WHY */
static const char *fail_name[F_MAX] = {
	"test run", "counters", "action/counter", "XDP_ABORTED", "model",
	"output frame", "result map", "aggregator slot",
};

struct fails {
	__u64 n[F_MAX];
};

/* Was the last violation described? (its frame is dumped only then) */
static bool fail_shown;

static void hexdump(const __u8 *b, int len)
{
	char line[2 * 32 + 1];
	int i, k, shown = len;

	if (!fail_shown)
		return;

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

	fail_shown = f->n[k]++ < MAX_REPORTS;
	if (!fail_shown)
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


static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- aggregator slots: checks and the control plane's writes ------------ */

/* The contributors slot idx may hold: its class's aggregation (none for a
 * slot of a job that aggregates nothing, or no job). Blocks beyond the
 * job's round count too: a frame of the next round (host) or of any round
 * (ToR) is not held to the current round's size. */
static __u64 slot_mask(const struct jobcfg *j, size_t nj, __u32 idx)
{
	__u32 slot = idx / WINDOW, block = idx % WINDOW, c;
	size_t i;

	for (i = 0; i < nj; i++) {
		if (j[i].slot != slot || !j[i].tab)
			continue;
		c = job_class(&j[i], block);
		return job_hop(&j[i], c, RINX_T_REDUCE).mask |
		       job_hop(&j[i], c, RINX_T_CONTRIB).mask;
	}
	return 0;
}

/* The program's slot idx against the model m; 0 or -1 (described). */
static int slot_check(int fd, const struct mslot *m, __u32 idx, __u64 mask,
		      char *why, size_t n)
{
	static struct rinx_agg a;

	if (bpf_map_lookup_elem_flags(fd, &idx, &a, BPF_F_LOCK)) {
		snprintf(why, n, "slot %u: lookup %d", idx, -errno);
		return -1;
	}
	if (a.seen & ~mask) {
		snprintf(why, n, "slot %u: seen %#llx outside mask %#llx", idx,
			 (unsigned long long)a.seen, (unsigned long long)mask);
		return -1;
	}
	if (a.block != m->block) {
		snprintf(why, n, "slot %u: block %u, model %u", idx, a.block,
			 m->block);
		return -1;
	}
	if (a.round != m->round || a.seen != m->seen || a.exp != m->exp ||
	    a.flags != m->flags || a.done != m->done || a.final != m->final ||
	    a.ce != m->ce || a.pend != m->pend ||
	    (m->seen && (a.shape != m->shape || a.dtype != m->dtype)) ||
	    memcmp(a.v, m->v, sizeof(a.v))) {
		snprintf(why, n, "slot %u: round %u seen %#llx exp %d flags "
			 "%#x done %u final %u ce %u pend %u, model round %u "
			 "seen %#llx exp %d flags %#x done %u final %u ce %u "
			 "pend %u%s",
			 idx, a.round, (unsigned long long)a.seen, a.exp,
			 a.flags, a.done, a.final, a.ce, a.pend, m->round,
			 (unsigned long long)m->seen, m->exp, m->flags, m->done,
			 m->final, m->ce, m->pend,
			 memcmp(a.v, m->v, sizeof(a.v)) ? ", sums differ" : "");
		return -1;
	}
	return 0;
}

/* Every slot against the model; the first bad one, or -1. */
static int slots_check(int fd, const struct mslot *ms, const struct jobcfg *j,
		       size_t nj, char *why, size_t n)
{
	__u32 k;

	for (k = 0; k < NRES; k++)
		if (slot_check(fd, &ms[k], k, slot_mask(j, nj, k), why, n))
			return (int)k;
	return -1;
}

/* After a reported difference: the model takes the program's slot, so
 * one fault is reported once. */
static void slot_read(int fd, struct mslot *m, __u32 idx)
{
	static struct rinx_agg a;

	if (bpf_map_lookup_elem_flags(fd, &idx, &a, BPF_F_LOCK))
		return;
	m->round = a.round;
	m->block = a.block;
	m->seen = a.seen;
	m->exp = a.exp;
	m->flags = a.flags;
	m->done = a.done;
	m->final = a.final;
	m->ce = a.ce;
	m->pend = a.pend;
	m->shape = a.shape;
	m->dtype = a.dtype;
	memcpy(m->v, a.v, sizeof(a.v));
}

static void slots_read(int fd, struct mslot *ms)
{
	__u32 k;

	for (k = 0; k < NRES; k++)
		slot_read(fd, &ms[k], k);
}

static int first_diff(const __u8 *a, const __u8 *b, int len)
{
	int i;

	for (i = 0; i < len && a[i] == b[i]; i++)
		;
	return i;
}

static int slot_write(int fd, const struct mslot *m, __u32 idx)
{
	struct rinx_agg a = {
		.round = m->round, .block = m->block, .seen = m->seen,
		.exp = m->exp,
		.flags = m->flags, .done = m->done, .final = m->final,
		.ce = m->ce, .pend = m->pend, .shape = m->shape,
		.dtype = m->dtype,
	};

	memcpy(a.v, m->v, sizeof(a.v));
	return bpf_map_update_elem(fd, &idx, &a, BPF_F_LOCK);
}

/*
 * The control plane's writes between frames, drawn from the frame's random
 * numbers: now and then a slot of job j is emptied (as a plan change
 * does), so that rounds keep completing all run long; at a host, a slot
 * that waits for the trainer (pend) is completed as the trainer does it
 * (its share added, done, final after AGG_FINISH: self_complete of the
 * trainer's slow path) with the share the test wrote. -1 if a write
 * failed.
 */
static int slot_maint(int fd, struct mslot *ms, const struct jobcfg *j,
		      const struct rinx_slot *share)
{
	__u32 r = below(1024), block = below(j->nblocks);
	__u32 idx = j->slot * WINDOW + block;
	struct mslot *m = &ms[idx];
	struct rinx_hop h;

	/* a slot done, or taken by the next round, is emptied sooner:
	 * otherwise it refuses most frames of the round for long */
	if (r < 6 || (r < 160 && (m->done || m->round != j->round))) {
		memset(m, 0, sizeof(*m));
	} else if (share && r < 64 && m->pend) {
		h = job_hop(j, job_class(j, block), RINX_T_REDUCE);
		m->exp = m_block_add(m->v, m->exp, share[idx].v,
				     share[idx].exp);
		m->flags |= share[idx].flags;
		m->pend = 0;
		m->done = 1;
		m->final = h.action == RINX_A_AGG_FINISH;
		cov[C_TRAINER]++;
	} else {
		return 0;
	}
	return slot_write(fd, m, idx) ? -1 : 1;
}

/* ---- host run ------------------------------------------------------------ */

static __u8 in[MAX_JLEN + 64], out[MAX_JLEN + 64];

/* The nv values at v into the slots of a block from m (a jumbo block
 * continues over three); the rest of a slot stays. */
static void vals_to_slots(struct rinx_slot *m, const __u8 *v, int nv)
{
	int q;

	for (q = 0; q < nv; q += RINX_BLOCK_VALUES)
		memcpy(m[q / RINX_BLOCK_VALUES].v, v + 4 * q,
		       4 * (nv - q < RINX_BLOCK_VALUES ? nv - q :
			    RINX_BLOCK_VALUES));
}

/* Do the slots of a block of nv values from idx differ between map and
 * model? */
static bool slots_differ(const struct rinx_slot *map,
			 const struct rinx_slot *model, __u32 idx, int nv)
{
	return memcmp(&map[idx], &model[idx],
		      RINX_BLOCK_SLOTS(nv) * sizeof(*model)) != 0;
}

struct host_env {
	struct host_bpf *skel;
	int prog, jobs, nodes, hops, share, result, stats, aggs, partial;
	struct rinx_slot *res_map;	/* mmap of the result map */
	struct rinx_slot *part_map;	/* ... and of the partial map */
	struct rinx_slot *shadow, *share_want;
};

/* A ring hop drops what it passed on already this round (a duplicate):
 * the trainer's next round frees the block again. Now and then a kept
 * partial sum or a stored result is forgotten, in the map and the model,
 * so forwarding stays as likely as the duplicate. -1 if a write failed. */
static int ring_maint(struct host_env *e)
{
	__u32 idx = below(NRES);

	if (below(2))
		return 0;
	if (below(2)) {
		e->shadow[idx].round = 0;
		return bpf_map_update_elem(e->result, &idx, &e->shadow[idx],
					   BPF_ANY) ? -1 : 1;
	}
	part_model[idx].round = 0;
	return bpf_map_update_elem(e->partial, &idx, &part_model[idx],
				   BPF_ANY) ? -1 : 1;
}

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
		struct rinx_job job = job_entry(j);

		err |= bpf_map_update_elem(e->jobs, &j->id, &job, BPF_ANY);
		for (c = 0; c < RINX_MAX_CLASSES; c++) {
			for (t = RINX_T_REDUCE; t <= RINX_T_CONTRIB; t++) {
				struct rinx_hop h = job_hop(j, c, t);

				k = RINX_HOP_INDEX(j->slot, c, t);
				err |= bpf_map_update_elem(e->hops, &k, &h,
							   BPF_ANY);
			}
		}
		/* shares: ready blocks carry the job's round, the others
		 * the previous one; values random, exponent small */
		for (k = 0; k < WINDOW; k++) {
			__u32 idx = j->slot * WINDOW + k, v;
			__s32 lim = (1 << j->qbits) - 1;

			/* a jumbo block's first slot speaks for it */
			s = &e->share_want[idx];
			s->round = j->ready >> (k / jslots(j)) & 1 ?
				   j->round : j->round - 1;
			s->exp = j->dtype == RINX_W_INT32 ? 0 :
				 (__s16)(below(64) - 32);
			s->flags = below(8) ? 0 : RINX_F_NAN;
			s->count = (__u16)jbv(j);
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
		s->round = 0xdead0000 | k;
		s->exp = 0x5a5a;
		s->flags = 0xa5;
		s->resv = 0x3c;
		s->count = 0xc3c3;
		s->step = 0x7777;
		s->sent_us = 0x12345678;
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
	for (k = 0; k < NSLOTS * RINX_MAX_CLASSES * RINX_HOP_TYPES; k++) {
		struct rinx_hop h, w = {};

		for (i = 0; i < ARRAY_SIZE(jobs); i++) {
			for (c = 0; c < RINX_MAX_CLASSES; c++)
				for (t = 1; t <= RINX_HOP_TYPES; t++)
					if (RINX_HOP_INDEX(jobs[i].slot, c,
							   t) == k)
						w = job_hop(&jobs[i], c, t);
		}
		if (bpf_map_lookup_elem(e->hops, &k, &h) ||
		    memcmp(&h, &w, sizeof(h))) {
			tap_diag("hop entry %u changed", k);
			bad++;
		}
	}
	for (i = 0; i < ARRAY_SIZE(jobs); i++) {
		const struct jobcfg *j = &jobs[i];
		struct rinx_job job, w = job_entry(j);

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
	__u64 i, stores = 0, last_ok = 0, aggs_seen = 0, kept = 0;
	__u64 slot_stored[NSLOTS] = {}, slot_marked[NSLOTS] = {};
	/* per block size (small, full, jumbo): frames a ring hop finished
	 * as the model said (forwarded, finished, stored, answered), and
	 * frames of that size refused for their size */
	__u64 sz_done[3] = {}, sz_shape[3] = {};
	char why[320];
	int err, k;

	e.skel = tl_host_open(&(struct tl_host_opts){
		.port = PORT, .window = WINDOW, .nshare = NRES, .naggs = NRES });
	if (!tap_ok(e.skel != NULL, "open host skeleton"))
		return;
	err = host_bpf__load(e.skel);
	if (!tap_ok(!err, "load rinx_host (window %d, port %d)", WINDOW, PORT))
		goto out;
	e.prog = bpf_program__fd(e.skel->progs.rinx_host);
	e.jobs = bpf_map__fd(e.skel->maps.jobs);
	e.nodes = bpf_map__fd(e.skel->maps.nodes);
	e.hops = bpf_map__fd(e.skel->maps.hops);
	e.share = bpf_map__fd(e.skel->maps.share);
	e.result = bpf_map__fd(e.skel->maps.result);
	e.stats = bpf_map__fd(e.skel->maps.stats);
	e.aggs = bpf_map__fd(e.skel->maps.aggs);
	e.partial = bpf_map__fd(e.skel->maps.partial);
	map_sz = (size_t)NRES * sizeof(struct rinx_slot);
	map_sz = (map_sz + 4095) & ~(size_t)4095;
	e.res_map = mmap(NULL, map_sz, PROT_READ, MAP_SHARED, e.result, 0);
	e.part_map = mmap(NULL, map_sz, PROT_READ, MAP_SHARED, e.partial, 0);
	part_model = calloc(NRES, sizeof(*part_model));
	e.shadow = calloc(NRES, sizeof(*e.shadow));
	res_model = e.shadow;
	e.share_want = calloc(NRES, sizeof(*e.share_want));
	share_model = e.share_want;
	frame_seed(0, ~0ULL);
	if (!tap_ok(e.res_map != MAP_FAILED && e.part_map != MAP_FAILED &&
		    part_model && e.shadow && e.share_want &&
		    !host_setup(&e) && !tl_percpu_sum(e.stats, RINX_STAT_MAX,
						      c0),
		    "host: jobs, plan, nodes, shares, result markers set up"))
		goto out;
	tap_ok(result_diff(&e) < 0, "host: result map readable via mmap");
	memcpy(cs, c0, sizeof(cs));

	t0 = now();
	for (i = 0; i < nframes; i++) {
		int len, outcome = -1, moved = 0, rx, ce, reset;
		struct tl_run r;
		struct pred p;
		__u8 tos;

		frame_seed(0, i);
		if (slot_maint(e.aggs, host_slots, AGG_JOB, e.share_want) < 0 ||
		    ring_maint(&e) < 0)
			fail(&f[0], F_RUN, "host", i, in, "slot write %d",
			     -errno);
		len = gen_host(in);
		p = host_model(in, len);
		err = tl_xdp_run(e.prog, in, len, 0, out, sizeof(out), &r);
		if (err) {
			fail(&f[0], F_RUN, "host", i, in, "error %d", err);
			continue;
		}
		if (tl_percpu_sum(e.stats, RINX_STAT_MAX, c1)) {
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
		reset = (int)(c1[RINX_STAT_AGG_RESET] -
			      c0[RINX_STAT_AGG_RESET]);
		memcpy(c0, c1, sizeof(c0));
		/* a mark is counted with a stored block, and only then; a
		 * reset with a slot that an unfinished round left */
		tos = p.want ? wantf[OFF_IP + 1] :
		      len > OFF_IP + 1 ? in[OFF_IP + 1] : 0;
		if (moved != 1 || rx != (outcome != RINX_STAT_PASS) ||
		    (outcome == p.stat &&
		     (ce != (p.store && (tos & RINX_ECN_MASK) == RINX_ECN_CE) ||
		      reset != p.reset))) {
			fail(&f[0], F_COUNTERS, "host", i, in,
			     "%d outcome counters moved, RX +%d, ECN_CE +%d, "
			     "AGG_RESET +%d, action %s", moved, rx, ce, reset,
			     act_name(r.ret));
			hexdump(in, len);
			continue;
		}
		hist[outcome]++;
		k = len < OFF_V ? -1 :
		    frame_nv(len) == RINX_BLOCK_VALUES_JUMBO ? 2 :
		    frame_nv(len) == RINX_BLOCK_VALUES;
		if (k >= 0 && outcome == p.stat &&
		    (outcome == RINX_STAT_REDUCE_FWD ||
		     outcome == RINX_STAT_REDUCE_FINISH ||
		     outcome == RINX_STAT_GATHER_FWD ||
		     outcome == RINX_STAT_GATHER_END ||
		     outcome == RINX_STAT_REPAIR ||
		     outcome == RINX_STAT_RREPAIR))
			sz_done[k]++;
		if (k >= 0 && outcome == RINX_STAT_DROP_SHAPE)
			sz_shape[k]++;
		if (r.ret == XDP_ABORTED)
			fail(&f[0], F_ABORTED, "host", i, in, "%s",
			     host_stat_name[outcome]);
		if ((int)r.ret != (outcome == p.stat && p.want ? p.act :
				      stat_action(outcome))) {
			fail(&f[0], F_ACTION, "host", i, in,
			     "action %s, counter %s", act_name(r.ret),
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
		} else if (p.want) {
			/* the aggregator's frames are known to the byte */
			if (r.len != (__u32)len ||
			    memcmp(out, wantf, len)) {
				fail(&f[0], F_FRAME, "host", i, in,
				     "%s frame differs from the model's at "
				     "byte %d", act_name(r.ret),
				     first_diff(out, wantf, len));
				hexdump(in, len);
			}
		} else if (r.ret != XDP_TX) {
			if (r.len != (__u32)len ||
			    memcmp(out, in, len))
				fail(&f[0], F_FRAME, "host", i, in,
				     "%s frame modified", act_name(r.ret));
		} else if (r.len != (__u32)len ||
			   csum16(out + OFF_IP, 20) != 0) {
			fail(&f[0], F_FRAME, "host", i, in,
			     "TX frame: %u bytes, IP checksum %s",
			     r.len,
			     csum16(out + OFF_IP, 20) ? "bad" : "ok");
		}
		if (outcome == p.stat && p.store) {
			/* the stored block is the one that leaves (reduce
			 * finish: the sum; an aggregation: the sum as the
			 * model has it) or, at the end of the path, the one
			 * that came in */
			const __u8 *src = p.want ? wantf :
					  r.ret == XDP_TX ? out : in;
			struct rinx_slot *w = &e.shadow[p.idx];

			w->round = p.round;
			w->exp = (__s16)get16(src + H_EXP);
			w->flags = src[H_FLAGS];
			w->count = get16(src + H_COUNT);
			vals_to_slots(w, src + OFF_V, p.nv);
			stores++;
			slot_stored[p.idx / WINDOW]++;
			if ((src[OFF_IP + 1] & RINX_ECN_MASK) == RINX_ECN_CE)
				slot_marked[p.idx / WINDOW]++;
			if (slots_differ(e.res_map, e.shadow, p.idx, p.nv)) {
				fail(&f[0], F_RESULT, "host", i, in,
				     "stored slot %u (%d values) differs",
				     p.idx, p.nv);
				hexdump(in, len);
				memcpy(w, &e.res_map[p.idx],
				       RINX_BLOCK_SLOTS(p.nv) * sizeof(*w));
			}
		}
		if (outcome == p.stat && outcome == RINX_STAT_REDUCE_FWD &&
		    p.keep) {
			/* the sum that left is kept, with its step */
			struct rinx_slot *w = &part_model[p.idx];

			w->round = p.round;
			w->exp = (__s16)get16(out + H_EXP);
			w->flags = out[H_FLAGS];
			w->count = get16(out + H_COUNT);
			w->step = out[H_STEP];
			vals_to_slots(w, out + OFF_V, p.nv);
			kept++;
			if (slots_differ(e.part_map, part_model, p.idx, p.nv)) {
				fail(&f[0], F_RESULT, "host", i, in,
				     "kept partial sum %u (%d values) differs",
				     p.idx, p.nv);
				memcpy(w, &e.part_map[p.idx],
				       RINX_BLOCK_SLOTS(p.nv) * sizeof(*w));
			}
		}
		if (p.aidx >= 0) {
			__u64 mask = slot_mask(jobs, ARRAY_SIZE(jobs),
					       p.aidx);

			aggs_seen++;
			if (slot_check(e.aggs, &host_slots[p.aidx], p.aidx,
				       mask, why, sizeof(why))) {
				fail(&f[0], F_SLOT, "host", i, in, "%s", why);
				slot_read(e.aggs, &host_slots[p.aidx], p.aidx);
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
			k = slots_check(e.aggs, host_slots, jobs,
					ARRAY_SIZE(jobs), why, sizeof(why));
			if (k >= 0) {
				fail(&f[0], F_SLOT, "host", i, in,
				     "frames %llu..%llu: %s",
				     (unsigned long long)last_ok,
				     (unsigned long long)i, why);
				slots_read(e.aggs, host_slots);
			}
			last_ok = i + 1;
		}
	}
	*secs = now() - t0;
	tap_diag("host: %llu frames in %.1f s (%.1f us/frame), %llu result "
		 "stores, %llu into aggregator slots", (unsigned long long)i,
		 *secs, *secs * 1e6 / (i ?: 1), (unsigned long long)stores,
		 (unsigned long long)aggs_seen);
	tap_ok(i == nframes && !f[0].n[F_RUN], "host: %llu frames run",
	       (unsigned long long)nframes);
	if (!tl_percpu_sum(e.stats, RINX_STAT_MAX, c1)) {
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
	} else {
		tap_ok(0, "host: read the counters after the run");
	}
	for (k = 0; k < F_MAX; k++) {
		if (k == F_RUN)
			continue;
		tap_ok(!f[0].n[k], "host: %s invariant (%llu violations)",
		       fail_name[k], (unsigned long long)f[0].n[k]);
	}
	tap_ok(result_diff(&e) < 0,
	       "host: result map == shadow (only legitimate stores)");
	tap_ok(kept && hist[RINX_STAT_RREPAIR] && hist[RINX_STAT_RNACK_MISS] &&
	       !memcmp(e.part_map, part_model, NRES * sizeof(*part_model)),
	       "host: %llu partial sums kept == the model's; RNACKs answered "
	       "%llu, missed %llu", (unsigned long long)kept,
	       (unsigned long long)hist[RINX_STAT_RREPAIR],
	       (unsigned long long)hist[RINX_STAT_RNACK_MISS]);
	for (k = 0, sum = 0; k < NSLOTS; k++) {
		struct rinx_cursor cur;
		__u32 key = k;

		if (bpf_map_lookup_elem(bpf_map__fd(e.skel->maps.cursors),
					&key, &cur) ||
		    cur.stored != slot_stored[k] || cur.marked != slot_marked[k]) {
			tap_diag("job slot %d: cursor stored %llu marked %llu, "
				 "model %llu %llu", k,
				 (unsigned long long)cur.stored,
				 (unsigned long long)cur.marked,
				 (unsigned long long)slot_stored[k],
				 (unsigned long long)slot_marked[k]);
			sum++;
		}
	}
	tap_ok(!sum, "host: the cursors count every stored block and every "
	       "marked one");
	tap_ok(sz_done[0] && sz_done[1] && sz_done[2] && sz_shape[0] &&
	       sz_shape[1] && sz_shape[2],
	       "host: every block size ran the ring's hops and was refused "
	       "where it is not the job's (small %llu/%llu, full %llu/%llu, "
	       "jumbo %llu/%llu)", (unsigned long long)sz_done[0],
	       (unsigned long long)sz_shape[0], (unsigned long long)sz_done[1],
	       (unsigned long long)sz_shape[1], (unsigned long long)sz_done[2],
	       (unsigned long long)sz_shape[2]);
	tap_ok(host_tables_same(&e),
	       "host: share, jobs, hops and nodes maps unchanged");
out:
	if (e.res_map && e.res_map != MAP_FAILED)
		munmap(e.res_map, map_sz);
	if (e.part_map && e.part_map != MAP_FAILED)
		munmap(e.part_map, map_sz);
	free(part_model);
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

/* Outcome of the switch with MAC table tab[n] for destination d arriving
 * on ifindex ingress. */
static int sw_model_in(const struct sw_mac *tab, size_t n, const __u8 *d,
		       __u32 ingress)
{
	size_t i, p;

	if (d[0] & 1)
		return RINX_SW_FLOOD;
	for (i = 0; i < n; i++) {
		if (memcmp(d, tab[i].mac, 6))
			continue;
		/* a self-addressed frame goes back out (an agent's
		 * contribution to itself) */
		if (tab[i].port == ingress)
			return memcmp(d, d + 6, 6) ? RINX_SW_DROP_HAIRPIN :
						     RINX_SW_HAIRPIN_SELF;
		for (p = 0; p < ARRAY_SIZE(sw_ports); p++)
			if (sw_ports[p] == tab[i].port)
				return RINX_SW_FWD;
		return RINX_SW_DROP_NO_PORT;
	}
	return RINX_SW_FLOOD;
}

static int sw_model(const __u8 *d, __u32 ingress)
{
	return sw_model_in(sw_tab, ARRAY_SIZE(sw_tab), d, ingress);
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

static int sw_tables_same(int macs, int ports, const struct sw_mac *tab,
			  size_t ntab)
{
	__u64 key, next;
	__u32 pk, pn, pv, n = 0;
	struct rinx_sw_port v;
	size_t i;
	int bad = 0;

	for (i = 0; i < ntab; i++) {
		key = tl_mac_key(tab[i].mac);
		if (bpf_map_lookup_elem(macs, &key, &v) ||
		    v.port != tab[i].port || v.resv) {
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
	if (n != ntab) {
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

/* The veth pair and MAC table of both switches (made once: either runs
 * alone too); 0 when its ports are there. */
static int sw_veth(void)
{
	char *add[] = { "ip", "link", "add", "fza", "type", "veth", "peer",
			"name", "fzb", NULL };

	if (!sw_ports[1] && tl_ip(add))
		return -1;
	sw_ports[0] = 1;
	sw_ports[1] = if_nametoindex("fza");
	sw_ports[2] = if_nametoindex("fzb");
	sw_tab[0] = (struct sw_mac){ M_A, sw_ports[1] };
	sw_tab[1] = (struct sw_mac){ M_B, sw_ports[2] };
	sw_tab[2] = (struct sw_mac){ M_LO, 1 };
	sw_tab[3] = (struct sw_mac){ M_GONE, IF_GONE };
	return sw_ports[1] && sw_ports[2] ? 0 : -1;
}

static void run_switch(__u64 nframes, struct fails *f, __u64 *hist,
		       __u64 *einval, double *secs)
{
	__u64 c0[RINX_SW_STAT_MAX], c1[RINX_SW_STAT_MAX], i;
	__u64 cs[RINX_SW_STAT_MAX], sum;
	struct switch_bpf *skel;
	int prog, stats, macs, ports, err = 0, k;
	double t0;
	size_t n;

	if (sw_veth()) {
		for (n = 0; n < SW_CHECKS; n++)
			tap_skip("cannot create a veth pair", "switch");
		return;
	}

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
		__u64 key = tl_mac_key(sw_tab[n].mac);

		err |= bpf_map_update_elem(macs, &key, &p, BPF_NOEXIST);
	}
	if (!tap_ok(!err && !tl_percpu_sum(stats, RINX_SW_STAT_MAX, c0),
		    "switch: ports and MAC table set up"))
		goto out;

	memcpy(cs, c0, sizeof(cs));
	t0 = now();
	for (i = 0; i < nframes; i++) {
		struct tl_run r;
		int len, outcome = -1, moved = 0, want;
		__u32 ingress;

		frame_seed(1, i);
		len = gen_switch(in, &ingress);
		err = tl_xdp_run(prog, in, len, ingress, out, sizeof(out), &r);
		if (len < ETH_HLEN) {
			if (err == -EINVAL)
				(*einval)++;
			else
				fail(f, F_RUN, "switch", i, in,
				     "%d-byte frame: %d, want -EINVAL", len,
				     err);
			if (!err)
				tl_percpu_sum(stats, RINX_SW_STAT_MAX, c0);
			continue;
		}
		if (err) {
			fail(f, F_RUN, "switch", i, in, "error %d", err);
			continue;
		}
		if (tl_percpu_sum(stats, RINX_SW_STAT_MAX, c1)) {
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
			     act_name(r.ret));
			hexdump(in, len);
			continue;
		}
		hist[outcome]++;
		want = outcome == RINX_SW_FWD || outcome == RINX_SW_FLOOD ||
		       outcome == RINX_SW_HAIRPIN_SELF ? XDP_REDIRECT :
							 XDP_DROP;
		if (r.ret == XDP_ABORTED)
			fail(f, F_ABORTED, "switch", i, in, "%s",
			     sw_stat_name[outcome]);
		if ((int)r.ret != want)
			fail(f, F_ACTION, "switch", i, in,
			     "action %s, counter %s", act_name(r.ret),
			     sw_stat_name[outcome]);
		want = sw_model(in, ingress);
		if (outcome != want) {
			fail(f, F_MODEL, "switch", i, in,
			     "program %s, model %s (ingress %u)",
			     sw_stat_name[outcome], sw_stat_name[want],
			     ingress);
			hexdump(in, len < 64 ? len : 64);
		}
		if (r.len != (__u32)len || memcmp(out, in, len))
			fail(f, F_FRAME, "switch", i, in, "frame modified");
	}
	*secs = now() - t0;
	tap_diag("switch: %llu frames in %.1f s (%.1f us/frame)",
		 (unsigned long long)i, *secs, *secs * 1e6 / (i ?: 1));
	tap_ok(i == nframes && !f->n[F_RUN],
	       "switch: %llu frames run, %llu shorter than 14 B refused "
	       "with EINVAL", (unsigned long long)nframes,
	       (unsigned long long)*einval);
	if (!tl_percpu_sum(stats, RINX_SW_STAT_MAX, c1)) {
		sum = 0;
		for (k = 0; k < RINX_SW_STAT_MAX; k++)
			sum += c1[k] - cs[k];
		tap_ok(sum + *einval == nframes,
		       "switch: counter deltas %llu + EINVAL %llu == frames "
		       "%llu", (unsigned long long)sum,
		       (unsigned long long)*einval,
		       (unsigned long long)nframes);
	} else {
		tap_ok(0, "switch: read the counters after the run");
	}
	for (k = 0; k < F_MAX; k++) {
		if (k == F_RUN || k == F_RESULT)
			continue;
		tap_ok(!f->n[k], "switch: %s invariant (%llu violations)",
		       fail_name[k], (unsigned long long)f->n[k]);
	}
	tap_ok(sw_tables_same(macs, ports, sw_tab, ARRAY_SIZE(sw_tab)),
	       "switch: MAC table and devmap unchanged");
out:
	switch_bpf__destroy(skel);
}

/* ---- INA ToR run --------------------------------------------------------- */

/*
 * A second switch, the ToR of rack 7 with its aggregator (node 50 of
 * tor_job, ina_mac = node 50's MAC): frames to that MAC go through
 * rinx_ina_frame, whose counters are the ToR's `stats` (enum rinx_stat);
 * what comes out is switched (RINX_SW_INA_*), the rest is switched as on
 * any switch. Besides the plain table, some nodes of the job: 31 and 1 by
 * lo, 2 by fza, 3 by a port that is gone; 4, 40 and 63 unknown.
 */
static struct sw_mac ina_tab[8];
static __u8 ina_mac[6], ina_node_mac[4][6];
/* The ToR's job->round as the model has it: the newest round it took a
 * member's frame of (the one field of its tables the ToR writes). */
static __u32 tor_round;

/* What rinx_ina_frame returns (bpf/ina.bpf.h). */
enum { V_NOT_MINE, V_DROP, V_ABORTED, V_UNICAST, V_GROUP_HOSTS,
       V_GROUP_ALL };

/* A pool aggregation (bpf/ina.bpf.h ina_pool, rinx_pool_add), frame b
 * from `sender` (checked) into p. */
static struct pred pool_model(const __u8 *b, const struct jobcfg *j,
			      const struct rinx_hop *h, __u32 sender,
			      struct pred p)
{
	__u32 round = get32(b + H_ROUND), block = get32(b + H_BLOCK), idx;
	__u64 bit = 1ULL << (sender & 63);
	__s32 x[RINX_BLOCK_VALUES];
	enum { P_ADD, P_DONE, P_DUP, P_PASS, P_FLUSH } r = P_ADD;
	bool resend;
	struct mslot *a;

	if (h->action != RINX_A_AGG_FWD || (h->flags & RINX_HOP_SELF) ||
	    !h->pool || h->pool > WINDOW || b[H_TYPE] != RINX_T_CONTRIB) {
		p.stat = RINX_STAT_DROP_NO_ROUTE;
		return p;
	}
	idx = j->slot * WINDOW + rinx_pool_index(j->id, block, h->pool);
	a = &tor_slots[idx];
	p.aidx = (int)idx;
	resend = wantf[H_FLAGS] & RINX_F_RESEND;
	if (a->seen && (a->round != round || a->block != block)) {
		if ((__s32)(round - a->round) <= 0) {
			r = P_PASS;
			goto out;
		}
		p.reset = true;
		a->seen = 0;
	}
	if (a->seen && !m_same_shape(a, wantf)) {
		cov[C_SHAPE]++;
		p.stat = RINX_STAT_DROP_SHAPE;
		return p;
	}
	if (resend) {
		r = a->seen ? P_FLUSH : P_PASS;
		goto out;
	}
	if (a->seen & bit) {
		r = P_DUP;
		goto out;
	}
	memcpy(x, wantf + OFF_V, sizeof(x));
	if (!a->seen) {
		a->round = round;
		a->block = block;
		memcpy(a->v, x, sizeof(x));
		a->exp = (__s16)get16(wantf + H_EXP);
		a->flags = wantf[H_FLAGS];
		a->ce = a->done = a->final = a->pend = 0;
		m_take_shape(a, wantf);
	} else {
		a->exp = m_block_add(a->v, a->exp, x,
				     (__s16)get16(wantf + H_EXP));
		a->flags |= wantf[H_FLAGS];
	}
	if ((wantf[OFF_IP + 1] & RINX_ECN_MASK) == RINX_ECN_CE)
		a->ce = 1;
	a->seen |= bit;
	if ((a->seen & h->mask) == h->mask)
		r = P_DONE;
out:
	if (r == P_ADD || r == P_DUP) {
		if (r == P_ADD)
			cov[C_ADD]++;
		else
			cov[C_DUP]++;
		p.stat = r == P_ADD ? RINX_STAT_AGG_ADD : RINX_STAT_DROP_AGG_DUP;
		return p;
	}
	if (r == P_PASS) {
		wantf[H_FLAGS] &= ~RINX_F_RESEND;
		put_cover(wantf, bit);
		p.stat = resend ? RINX_STAT_POOL_RESEND : RINX_STAT_POOL_PASS;
		cov[resend ? C_POOL_RESEND : C_POOL_PASS]++;
	} else {
		m_slot_to_frame(a, wantf);
		put_cover(wantf, a->seen);
		if (a->ce)
			wantf[OFF_IP + 1] |= RINX_ECN_CE;
		a->seen = 0;
		p.stat = r == P_FLUSH ? RINX_STAT_POOL_FLUSH :
					RINX_STAT_AGG_DONE;
		cov[r == P_FLUSH ? C_POOL_FLUSH : C_POOL_DONE]++;
	}
	wantf[H_TYPE] = RINX_T_REDUCE;
	wantf[H_STEP] = h->out_step;
	m_readdress(wantf, j->slot, j->self, h->to);
	p.act = V_UNICAST;
	return p;
}

/* The aggregator's rules for frame b (wantf: the frame it leaves). */
static struct pred tor_model(const __u8 *b, int len)
{
	const struct jobcfg *j = &tor_job;
	struct pred p = { .act = V_DROP, .aidx = -1 };
	struct mslot *a;
	struct rinx_hop h;
	__u32 type, round, block, sender;
	bool finish;
	int bad, r;

	memcpy(wantf, b, len);
	p.want = true;
	r = parse_model(b, len);
	if (r == MP_OTHER || memcmp(b, ina_mac, 6)) {
		p.act = V_NOT_MINE;
		return p;
	}
	p.mine = true;
	if (r != MP_OK && r != MP_OK_MIN) {
		p.stat = r == MP_SHORT || r == MP_HDR ? RINX_STAT_DROP_SHORT :
							RINX_STAT_DROP_VERSION;
		return p;
	}
	type = b[H_TYPE];
	if (type != RINX_T_REDUCE && type != RINX_T_GATHER &&
	    type != RINX_T_CONTRIB && type != RINX_T_NACK &&
	    type != RINX_T_RNACK) {
		p.stat = RINX_STAT_DROP_TYPE;
		return p;
	}
	if (get32(b + H_JOB) != j->id) {
		p.stat = RINX_STAT_DROP_JOB;
		return p;
	}
	if (get64(b + H_TOKEN) != j->token) {
		p.stat = RINX_STAT_DROP_TOKEN;
		return p;
	}
	bad = bounds_model(b, len, j);
	if (bad) {
		p.stat = bad;
		return p;
	}
	round = get32(b + H_ROUND);
	block = get32(b + H_BLOCK);
	p.idx = j->slot * WINDOW + block;
	a = &tor_slots[p.idx];
	if (type == RINX_T_NACK) {
		/* answered with the finished block if the slot keeps it */
		if (!asker_ok(b, j)) {
			p.stat = RINX_STAT_DROP_SENDER;
		} else if (a->round == round && a->final) {
			m_slot_to_frame(a, wantf);
			wantf[H_TYPE] = RINX_T_GATHER;
			m_readdress(wantf, j->slot, j->self,
				    get16(b + H_SENDER));
			p.stat = RINX_STAT_REPAIR;
			p.act = V_UNICAST;
			cov[C_NACK_REPAIR]++;
		} else {
			int w;

			p.stat = RINX_STAT_NACK_MISS;
			h = job_hop(j, get16(b + H_KLASS), RINX_T_CONTRIB);
			w = m_agg_nack(b, j, &h, a, round, block);
			if (w) {
				p.stat = w == 1 ? RINX_STAT_NACK_PULL :
						  RINX_STAT_NACK_SUM;
				p.act = V_UNICAST;
				cov[w == 1 ? C_NACK_PULL : C_NACK_SUM]++;
			}
		}
		return p;
	}
	if (type == RINX_T_RNACK) {
		/* the sum this ToR sent on, again, for the node it went to */
		h = job_hop(j, get16(b + H_KLASS), RINX_T_CONTRIB);
		if (!asker_ok(b, j)) {
			p.stat = RINX_STAT_DROP_SENDER;
		} else if (m_sum_again(a, &h, b, j, round)) {
			p.stat = RINX_STAT_RREPAIR;
			p.act = V_UNICAST;
			cov[C_RNACK_SUM]++;
		} else {
			p.stat = RINX_STAT_RNACK_MISS;
		}
		return p;
	}
	h = job_hop(j, get16(b + H_KLASS), (int)type);
	if (h.action < RINX_A_AGG_FWD || h.action >= RINX_A_MAX) {
		p.stat = RINX_STAT_DROP_NO_ROUTE;
		return p;
	}
	bad = sender_model(b, j, &h, type, &sender);
	if (bad == RINX_STAT_DROP_MEMBER)
		cov[C_MEMBER]++;
	if (!bad)
		bad = shape_model(b);
	if (bad) {
		p.stat = bad;
		return p;
	}
	/* the newest round a member's frame reached it, RINX_AGG_AHEAD at
	 * most behind any frame it takes */
	if ((__s32)(round - tor_round) > RINX_AGG_AHEAD) {
		cov[C_AHEAD]++;
		p.stat = RINX_STAT_DROP_AHEAD;
		return p;
	}
	if ((__s32)(round - tor_round) > 0)
		tor_round = round;
	if (h.flags & RINX_HOP_POOL)
		return pool_model(b, j, &h, sender, p);
	p.aidx = (int)p.idx;
	if (h.action == RINX_A_MCAST_FWD || h.action == RINX_A_MCAST_END) {
		/* the rack contributed to the block: its slot holds the
		 * finished round, or the gather is stale */
		if (a->round != round || !a->done) {
			p.stat = RINX_STAT_DROP_STALE;
			cov[C_MCAST_STALE]++;
			return p;
		}
		if (!m_same_shape(a, wantf)) {
			p.stat = RINX_STAT_DROP_SHAPE;
			return p;
		}
		cov[h.action == RINX_A_MCAST_FWD ? C_MCAST_FWD : C_MCAST_END]++;
		m_agg_keep(a, wantf, round);
		wantf[H_STEP] = h.out_step;
		m_readdress(wantf, j->slot, j->self,
			    h.action == RINX_A_MCAST_FWD ? h.to : j->self);
		m_group(wantf, h.rack, h.action == RINX_A_MCAST_FWD);
		p.stat = RINX_STAT_AGG_MCAST;
		p.act = h.action == RINX_A_MCAST_FWD ? V_GROUP_ALL :
						       V_GROUP_HOSTS;
		return p;
	}
	finish = h.action == RINX_A_AGG_FINISH;
	/* a ToR has no share: RINX_HOP_SELF is not its business */
	r = m_agg_add(a, wantf, round, m_cover(b, &h, sender), h.mask, finish,
		      NULL, &p.reset);
	if (r == M_OVERLAP) {
		cov[C_OVERLAP]++;
		p.stat = RINX_STAT_AGG_OVERLAP;
		return p;
	}
	if (r == M_SHAPE) {
		cov[C_SHAPE]++;
		p.stat = RINX_STAT_DROP_SHAPE;
		return p;
	}
	cov_add(r, p.reset, &h, type, j->self);
	if (r == M_FINAL && type == RINX_T_CONTRIB &&
	    (h.flags & RINX_HOP_ANSWER)) {
		wantf[H_TYPE] = RINX_T_GATHER;
		wantf[H_STEP] = finish ? h.out_step : h.out_step + 1;
		m_readdress(wantf, j->slot, j->self, (__u16)sender);
		p.stat = RINX_STAT_AGG_RESEND;
		p.act = V_UNICAST;
		return p;
	}
	if (r == M_DUP || (r == M_FINAL && !finish)) {
		p.stat = RINX_STAT_DROP_AGG_DUP;
		return p;
	}
	if (r == M_CONSUMED) {
		long pb = m_pull_block(b, j, &h);

		p.stat = RINX_STAT_AGG_ADD;
		if (pb >= 0 && m_lacks(&tor_slots[j->slot * WINDOW + pb], round,
				       1ULL << (sender & 63))) {
			m_pull_frame(b, j, (__u32)pb, (__u16)sender);
			p.stat = RINX_STAT_AGG_PULL;
			p.act = V_UNICAST;
			cov[C_PULL]++;
		}
		return p;
	}
	if (r == M_STALE || r == M_NEED_SELF) {
		p.stat = r == M_STALE ? RINX_STAT_DROP_AGG_STALE :
			 RINX_STAT_ABORTED;
		p.act = r == M_NEED_SELF ? V_ABORTED : V_DROP;
		return p;
	}
	p.stat = r == M_COMPLETE ? RINX_STAT_AGG_DONE : RINX_STAT_AGG_REEMIT;
	wantf[H_STEP] = h.out_step;
	wantf[H_TYPE] = finish ? RINX_T_GATHER : RINX_T_REDUCE;
	m_readdress(wantf, j->slot, j->self, h.to);
	p.act = V_UNICAST;
	if (finish && h.rack != RINX_NO_RACK) {
		m_group(wantf, h.rack, h.to != j->self);
		p.act = h.to != j->self ? V_GROUP_ALL : V_GROUP_HOSTS;
	}
	return p;
}

/* The switch counter of what the aggregator decided (p), or of the plain
 * switch for a frame that is not the aggregator's. */
static int ina_sw_model(const struct pred *p, const __u8 *in, __u32 ingress)
{
	switch (p->act) {
	case V_NOT_MINE:
		return sw_model_in(ina_tab, ARRAY_SIZE(ina_tab), in, ingress);
	case V_DROP:
		return RINX_SW_INA_DROP;
	case V_UNICAST:
		/* switched by its new MAC, back out its ingress too */
		switch (sw_model_in(ina_tab, ARRAY_SIZE(ina_tab), wantf, 0)) {
		case RINX_SW_FWD:
			return RINX_SW_INA_FWD;
		default:	/* unknown, or its port is gone */
			return RINX_SW_DROP_NO_PORT;
		}
	case V_GROUP_HOSTS:
	case V_GROUP_ALL:
		return RINX_SW_INA_GROUP;
	default:
		return RINX_SW_INA_ABORTED;
	}
}

static int gen_ina(__u8 *b, __u32 *ingress)
{
	int len, r = below(100);

	*ingress = sw_ports[below(ARRAY_SIZE(sw_ports))];
	if (r < 1)
		return (int)below(14);	/* refused by the kernel */
	if (r < 20) {
		/* anything, to the aggregator or to a known MAC */
		len = gen_random(b);
		memcpy(b, below(2) ? ina_mac :
			  ina_tab[below(ARRAY_SIZE(ina_tab))].mac, 6);
		return len;
	}
	len = build_frame(b, &tor_job);
	if (r < 65)
		return len;
	len = mutate_frame(b, &tor_job, len);
	if (!below(8))	/* the aggregator's frame to someone else */
		memcpy(b, ina_tab[below(ARRAY_SIZE(ina_tab))].mac, 6);
	return len;
}

/* The ToR's job, nodes and hops: read back and compared. */
static int tor_tables_same(struct switch_bpf *skel)
{
	const struct jobcfg *j = &tor_job;
	struct rinx_job job, wj = job_entry(j);
	__u32 k, id, c;
	int t, bad = 0;

	wj.ahead = RINX_AGG_AHEAD;
	wj.round = tor_round;
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.jobs), &j->id, &job) ||
	    memcmp(&job, &wj, sizeof(job)))
		bad++;
	for (id = 0; id < RINX_MAX_NODES; id++) {
		struct rinx_node n, w = { .ip = htonl(node_ip(j->slot, id)) };

		node_mac(j->slot, id, w.mac);
		k = j->slot * RINX_MAX_NODES + id;
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.nodes), &k,
					&n) || memcmp(&n, &w, sizeof(n)))
			bad++;
	}
	for (c = 0; c < RINX_MAX_CLASSES; c++) {
		for (t = 1; t <= RINX_HOP_TYPES; t++) {
			struct rinx_hop h, w = job_hop(j, c, t);

			k = RINX_HOP_INDEX(j->slot, c, t);
			if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.hops),
						&k, &h) ||
			    memcmp(&h, &w, sizeof(h)))
				bad++;
		}
	}
	return !bad;
}

static int tor_setup(struct switch_bpf *skel)
{
	const struct jobcfg *j = &tor_job;
	struct rinx_job job = job_entry(j);
	int err = 0, t;

	job.ahead = RINX_AGG_AHEAD;
	tor_round = job.round;
	__u32 k, id, c;
	size_t n;

	for (n = 0; n < ARRAY_SIZE(sw_ports); n++) {
		struct bpf_devmap_val v = { .ifindex = sw_ports[n] };

		err |= bpf_map_update_elem(bpf_map__fd(skel->maps.ports),
					   &sw_ports[n], &v, BPF_ANY);
	}
	for (n = 0; n < ARRAY_SIZE(ina_tab); n++) {
		struct rinx_sw_port p = { .port = ina_tab[n].port };
		__u64 key = tl_mac_key(ina_tab[n].mac);

		err |= bpf_map_update_elem(bpf_map__fd(skel->maps.macs), &key,
					   &p, BPF_NOEXIST);
	}
	err |= bpf_map_update_elem(bpf_map__fd(skel->maps.jobs), &j->id, &job,
				   BPF_ANY);
	for (id = 0; id < RINX_MAX_NODES; id++) {
		struct rinx_node nd = { .ip = htonl(node_ip(j->slot, id)) };

		node_mac(j->slot, id, nd.mac);
		k = j->slot * RINX_MAX_NODES + id;
		err |= bpf_map_update_elem(bpf_map__fd(skel->maps.nodes), &k,
					   &nd, BPF_ANY);
	}
	for (c = 0; c < RINX_MAX_CLASSES; c++) {
		for (t = 1; t <= RINX_HOP_TYPES; t++) {
			struct rinx_hop h = job_hop(j, c, t);

			k = RINX_HOP_INDEX(j->slot, c, t);
			err |= bpf_map_update_elem(bpf_map__fd(skel->maps.hops),
						   &k, &h, BPF_ANY);
		}
	}
	return err ? -1 : 0;
}

static void run_ina(__u64 nframes, struct fails *f, __u64 *hist,
		    __u64 *thist, __u64 *einval, double *secs)
{
	__u64 c0[RINX_SW_STAT_MAX], c1[RINX_SW_STAT_MAX];
	__u64 t0c[RINX_STAT_MAX], t1c[RINX_STAT_MAX], i, last_ok = 0;
	__u64 cs[RINX_SW_STAT_MAX], ts[RINX_STAT_MAX], sum, tsum, mine = 0;
	struct switch_bpf *skel;
	int prog, stats, tstats, aggs, err, k;
	char why[320];
	double t0;

	if (sw_veth()) {
		for (k = 0; k < INA_CHECKS; k++)
			tap_skip("no veth pair", "INA switch");
		return;
	}
	node_mac(tor_job.slot, tor_job.self, ina_mac);
	node_mac(tor_job.slot, 31, ina_node_mac[0]);
	node_mac(tor_job.slot, 1, ina_node_mac[1]);
	node_mac(tor_job.slot, 2, ina_node_mac[2]);
	node_mac(tor_job.slot, 3, ina_node_mac[3]);
	memcpy(ina_tab, sw_tab, sizeof(sw_tab));
	ina_tab[4] = (struct sw_mac){ ina_node_mac[0], 1 };
	ina_tab[5] = (struct sw_mac){ ina_node_mac[1], 1 };
	ina_tab[6] = (struct sw_mac){ ina_node_mac[2], sw_ports[1] };
	ina_tab[7] = (struct sw_mac){ ina_node_mac[3], IF_GONE };

	skel = tl_switch_open(&(struct tl_switch_opts){
		.ina_mac = ina_mac, .port = PORT, .window = WINDOW, .rack = 7,
		.naggs = NRES });
	if (!tap_ok(skel != NULL, "open switch skeleton (INA)"))
		return;
	err = switch_bpf__load(skel);
	if (!tap_ok(!err, "load rinx_switch with the aggregator (ina_mac "
		    "%02x:..:%02x, rack 7)", ina_mac[0], ina_mac[5]))
		goto out;
	prog = bpf_program__fd(skel->progs.rinx_switch);
	stats = bpf_map__fd(skel->maps.sw_stats);
	tstats = bpf_map__fd(skel->maps.stats);
	aggs = bpf_map__fd(skel->maps.aggs);
	if (!tap_ok(!tor_setup(skel) &&
		    !tl_percpu_sum(stats, RINX_SW_STAT_MAX, c0) &&
		    !tl_percpu_sum(tstats, RINX_STAT_MAX, t0c),
		    "INA switch: ports, MAC table, job, nodes, hops set up"))
		goto out;
	memcpy(cs, c0, sizeof(cs));
	memcpy(ts, t0c, sizeof(ts));

	cov = tor_cov;
	t0 = now();
	for (i = 0; i < nframes; i++) {
		struct tl_run r;
		int len, outcome = -1, moved = 0, toutc = -1, tmoved = 0;
		int rx, reset, want, ta;
		__u32 ingress;
		struct pred p;

		frame_seed(2, i);
		if (slot_maint(aggs, tor_slots, &tor_job, NULL) < 0)
			fail(f, F_RUN, "ina", i, in, "slot write %d", -errno);
		len = gen_ina(in, &ingress);
		err = tl_xdp_run(prog, in, len, ingress, out, sizeof(out), &r);
		if (len < ETH_HLEN) {
			if (err == -EINVAL)
				(*einval)++;
			else
				fail(f, F_RUN, "ina", i, in,
				     "%d-byte frame: %d, want -EINVAL", len,
				     err);
			continue;
		}
		p = tor_model(in, len);
		if (err) {
			fail(f, F_RUN, "ina", i, in, "error %d", err);
			continue;
		}
		if (tl_percpu_sum(stats, RINX_SW_STAT_MAX, c1) ||
		    tl_percpu_sum(tstats, RINX_STAT_MAX, t1c)) {
			fail(f, F_RUN, "ina", i, in, "read counters");
			break;
		}
		for (k = 0; k < RINX_SW_STAT_MAX; k++) {
			if (c1[k] != c0[k]) {
				moved += (int)(c1[k] - c0[k]);
				outcome = k;
			}
		}
		for (k = RINX_STAT_PASS; k < RINX_STAT_MAX; k++) {
			if (t1c[k] != t0c[k] && !annotation(k)) {
				tmoved += (int)(t1c[k] - t0c[k]);
				toutc = k;
			}
		}
		rx = (int)(t1c[RINX_STAT_RX] - t0c[RINX_STAT_RX]);
		reset = (int)(t1c[RINX_STAT_AGG_RESET] -
			      t0c[RINX_STAT_AGG_RESET]);
		memcpy(c0, c1, sizeof(c0));
		memcpy(t0c, t1c, sizeof(t0c));
		/* one switch outcome per frame; one aggregator outcome (and
		 * RX) for a frame to its MAC that is rinx, none otherwise;
		 * the ToR never stores, so never counts a mark */
		if (moved != 1 || tmoved != (int)p.mine || rx != (int)p.mine ||
		    t1c[RINX_STAT_ECN_CE] != ts[RINX_STAT_ECN_CE] ||
		    (toutc == p.stat && reset != p.reset)) {
			fail(f, F_COUNTERS, "ina", i, in,
			     "%d switch and %d aggregator counters moved, RX "
			     "+%d, AGG_RESET +%d, action %s", moved, tmoved,
			     rx, reset, act_name(r.ret));
			hexdump(in, len);
			continue;
		}
		hist[outcome]++;
		if (p.mine) {
			thist[toutc]++;
			mine++;
		}
		want = outcome == RINX_SW_FWD || outcome == RINX_SW_FLOOD ||
		       outcome == RINX_SW_INA_FWD ||
		       outcome == RINX_SW_HAIRPIN_SELF ||
		       outcome == RINX_SW_INA_GROUP ? XDP_REDIRECT :
		       outcome == RINX_SW_INA_ABORTED ? XDP_ABORTED : XDP_DROP;
		if (r.ret == XDP_ABORTED)
			fail(f, F_ABORTED, "ina", i, in, "%s / %s",
			     sw_stat_name[outcome],
			     p.mine ? host_stat_name[toutc] : "-");
		if ((int)r.ret != want)
			fail(f, F_ACTION, "ina", i, in,
			     "action %s, counter %s", act_name(r.ret),
			     sw_stat_name[outcome]);
		want = ina_sw_model(&p, in, ingress);
		ta = p.mine && toutc != p.stat;
		if (outcome != want || ta) {
			fail(f, F_MODEL, "ina", i, in,
			     "program %s / %s, model %s / %s (ingress %u)",
			     sw_stat_name[outcome],
			     p.mine ? host_stat_name[toutc] : "-",
			     sw_stat_name[want],
			     p.mine ? host_stat_name[p.stat] : "-", ingress);
			hexdump(in, len < 128 ? len : 128);
		} else if (r.len != (__u32)len ||
			   memcmp(out, wantf, len)) {
			fail(f, F_FRAME, "ina", i, in,
			     "%s frame differs from the model's at byte %d",
			     act_name(r.ret), first_diff(out, wantf, len));
			hexdump(in, len < 128 ? len : 128);
		}
		if (p.aidx >= 0 &&
		    slot_check(aggs, &tor_slots[p.aidx], p.aidx,
			       slot_mask(&tor_job, 1, p.aidx), why,
			       sizeof(why))) {
			fail(f, F_SLOT, "ina", i, in, "%s", why);
			slot_read(aggs, &tor_slots[p.aidx], p.aidx);
		}
		if ((i + 1) % CHECK_EVERY == 0 || i + 1 == nframes) {
			k = slots_check(aggs, tor_slots, &tor_job, 1, why,
					sizeof(why));
			if (k >= 0) {
				fail(f, F_SLOT, "ina", i, in,
				     "frames %llu..%llu: %s",
				     (unsigned long long)last_ok,
				     (unsigned long long)i, why);
				slots_read(aggs, tor_slots);
			}
			last_ok = i + 1;
		}
	}
	*secs = now() - t0;
	tap_diag("INA switch: %llu frames in %.1f s (%.1f us/frame), %llu "
		 "for the aggregator", (unsigned long long)i, *secs,
		 *secs * 1e6 / (i ?: 1), (unsigned long long)mine);
	tap_ok(i == nframes && !f->n[F_RUN],
	       "INA switch: %llu frames run, %llu shorter than 14 B refused "
	       "with EINVAL", (unsigned long long)nframes,
	       (unsigned long long)*einval);
	if (!tl_percpu_sum(stats, RINX_SW_STAT_MAX, c1) &&
	    !tl_percpu_sum(tstats, RINX_STAT_MAX, t1c)) {
		sum = 0;
		tsum = 0;
		for (k = 0; k < RINX_SW_STAT_MAX; k++)
			sum += c1[k] - cs[k];
		for (k = RINX_STAT_PASS; k < RINX_STAT_MAX; k++)
			if (!annotation(k))
				tsum += t1c[k] - ts[k];
		tap_ok(sum + *einval == nframes && tsum == mine &&
		       t1c[RINX_STAT_RX] - ts[RINX_STAT_RX] == mine,
		       "INA switch: counter deltas %llu + EINVAL %llu == "
		       "frames %llu; aggregator outcomes %llu == RX == frames "
		       "for it %llu", (unsigned long long)sum,
		       (unsigned long long)*einval,
		       (unsigned long long)nframes, (unsigned long long)tsum,
		       (unsigned long long)mine);
	} else {
		tap_ok(0, "INA switch: read the counters after the run");
	}
	for (k = 0; k < F_MAX; k++) {
		if (k == F_RUN || k == F_RESULT)
			continue;
		tap_ok(!f->n[k], "INA switch: %s invariant (%llu violations)",
		       fail_name[k], (unsigned long long)f->n[k]);
	}
	tap_ok(sw_tables_same(bpf_map__fd(skel->maps.macs),
			      bpf_map__fd(skel->maps.ports), ina_tab,
			      ARRAY_SIZE(ina_tab)) && tor_tables_same(skel),
	       "INA switch: MAC table, devmap, job, nodes and hops unchanged");
out:
	switch_bpf__destroy(skel);
}

/* Every path of the aggregator the place can take was taken (with fewer
 * than COV_MIN frames this is only shown). */
#define COV_MIN		100000

static void cov_report(const char *place, const __u64 *c, __u32 skip,
		       __u64 nframes)
{
	int k, missing = 0;

	for (k = 0; k < C_MAX; k++) {
		if (skip >> k & 1)
			continue;
		tap_diag("  %s aggregator: %-38s %9llu", place, cov_name[k],
			 (unsigned long long)c[k]);
		missing += !c[k];
	}
	if (nframes < COV_MIN)
		tap_ok(1, "%s: aggregator paths reached # SKIP %llu frames, "
		       "fewer than %d", place, (unsigned long long)nframes,
		       COV_MIN);
	else
		tap_ok(!missing, "%s: every aggregator path reached (%d "
		       "missing)", place, missing);
}

/* ---- main ---------------------------------------------------------------- */

/* frames for each part, and the seconds each took */
static __u64 nh, ns, ni;
static double th, ts, tt;

static void t_host(void)
{
	__u64 hh[RINX_STAT_MAX] = {}, sum = 0;
	struct fails fh = {};
	int k;

	run_host(nh, &fh, hh, &th);
	for (k = RINX_STAT_PASS; k < RINX_STAT_MAX; k++) {
		sum += hh[k];
		if (hh[k])
			tap_diag("  host %-15s %9llu", host_stat_name[k],
				 (unsigned long long)hh[k]);
	}
	ASSERT_EQ(sum, nh, "host: outcome counters sum to the frames sent");
	cov_report("host", host_cov, COV_TOR_ONLY, nh);
}

static void t_switch(void)
{
	__u64 hs[RINX_SW_STAT_MAX] = {}, einval = 0, sum;
	struct fails fs = {};
	int k;

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
	ASSERT_EQ(sum, ns, "switch: counters + EINVAL sum to the frames sent");
}

static void t_ina(void)
{
	__u64 hi[RINX_SW_STAT_MAX] = {}, ti[RINX_STAT_MAX] = {};
	__u64 einval_i = 0, sum;
	struct fails fi = {};
	int k;

	run_ina(ni, &fi, hi, ti, &einval_i, &tt);
	sum = einval_i;
	for (k = 0; k < RINX_SW_STAT_MAX; k++) {
		sum += hi[k];
		if (hi[k])
			tap_diag("  INA switch %-13s %9llu", sw_stat_name[k],
				 (unsigned long long)hi[k]);
	}
	for (k = RINX_STAT_PASS; k < RINX_STAT_MAX; k++)
		if (ti[k])
			tap_diag("  INA aggregator %-15s %9llu",
				 host_stat_name[k], (unsigned long long)ti[k]);
	ASSERT_EQ(sum, ni, "INA switch: counters + EINVAL sum to the frames "
		  "sent");
	cov_report("INA switch", tor_cov, COV_HOST_ONLY, ni);
}

/* each part: its checks, the sum of its counters, its coverage (host and
 * INA switch) */
static struct tl_subtest subtests[] = {
	{ "host", HOST_CHECKS + 2, t_host },
	{ "switch", SW_CHECKS + 1, t_switch },
	{ "ina", INA_CHECKS + 2, t_ina },
};

int main(void)
{
	__u64 total = 1500000;
	const char *env;

	tl_needs_root("BPF_PROG_TEST_RUN");
	env = getenv("RINX_FUZZ_N");
	if (env && *env)
		total = strtoull(env, NULL, 0);
	env = getenv("RINX_FUZZ_SEED");
	if (env && *env)
		seed = strtoull(env, NULL, 0);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0 || ncpus > 256)
		tap_skip_all("cannot count CPUs");
	tl_unshare_net();
	tl_plan(0, subtests, ARRAY_SIZE(subtests));
	/* half for the host, the rest for the switches, more for the INA
	 * one, whose frames reach many more paths (and cost twice as much) */
	nh = total / 2;
	ns = total / 5;
	ni = total - nh - ns;
	tap_diag("seed 0x%llx (RINX_FUZZ_SEED), %llu frames (RINX_FUZZ_N): "
		 "%llu for the host, %llu for the switch, %llu for the INA "
		 "switch", (unsigned long long)seed, (unsigned long long)total,
		 (unsigned long long)nh, (unsigned long long)ns,
		 (unsigned long long)ni);
	tl_run(subtests, ARRAY_SIZE(subtests));
	tap_diag("total %.1f s", th + ts + tt);
	return tap_done();
}
