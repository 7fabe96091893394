// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What one block costs the host program, per hop kind, and that each of
 * those hops computes the right block while it is measured.
 *
 *   test_hopcost [--profile] [--runs N] [--batches B] [--small]
 *                [--window W]
 *
 * rinx_host is loaded from its skeleton and given one job: node 1 of a
 * 4-node ring, which is also the agent of the rack of nodes 0, 2 and 3.
 * Each kind below sets the job's class pattern so that every block of the
 * window takes the hop measured, then runs frames through
 * BPF_PROG_TEST_RUN, one run per call (a repetition would run the frame
 * the previous one rewrote), cycling over the window's blocks (16, whose
 * maps' entries stay in the caches, or --window W: a trainer's shares
 * written before the round, read by the hops from memory), with data of
 * 16 blocks of distinct data:
 *
 *   fixed      a reduce whose share is not written: parse, job, bounds,
 *              plan, sender and the share lookup, no value touched (slow
 *              path wanted, no socket: a counted drop)
 *   add        ADD_FWD: the local share added into the frame, sent on
 *   add+keep   ADD_FWD with RINX_JOB_KEEP: also the sum kept (partial)
 *   finish     ADD_FINISH: added, the result stored, the gather sent
 *   store      STORE_FWD: the finished block stored, sent on
 *   store+rec  STORE_END: stored, the frame reused for the next own block
 *              (the share copied in)
 *   agg first  AGG_FINISH at the agent: the slot's first contribution
 *   agg add    a second one added under the slot's lock
 *   agg last   the last one: added, the agent's own share added, the sum
 *              copied out and stored, the gather sent into the rack
 *   agg done   the same without a share of its own (every other round):
 *              the slot completes as a ToR's does
 *
 * with equal block exponents ("equal": every operand at one exponent, the
 * case of gradient-like data) and with exponents that differ ("shift":
 * the frame's operand or the share's is aligned by a rounded shift), on
 * fixed point (float32) and, for add, int32 (wrapping sums). Values span
 * the whole range of a contribution, [-2^q, 2^q] (q = 28, 4 ranks), the
 * two ends and the values around zero included; int32 values span all of
 * int32.
 *
 * Every run's output is checked: the action, the counter of the hop, the
 * frame's values and exponent against sums computed here (64-bit, with
 * the alignment's round to nearest, ties up, as floor((x + 2^(d-1)) /
 * 2^d)), and the stored result or kept sum. Without --profile the kinds
 * run a few times each (a test); with --profile they run N times in each
 * of B batches (defaults 2000 and 7) with the kernel's run-time statistics
 * on (BPF_ENABLE_STATS, while this program holds it), and a table gives,
 * per kind, the median over the batches of run_time_ns / run_cnt (and the
 * least batch's, the steadier figure on a busy machine), the median per
 * value, and per value above `fixed`. No figure is asserted: the shared
 * machine decides the times; the table is for before/after comparisons
 * taken in one sitting.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uapi/rinx.h"
#include "host.skel.h"
#include "selftests/lib/testlib.h"

#define PORT		47124
#define DBLOCKS		16	/* blocks of distinct data */
#define WINDOW_MAX	8192
#define JOB_ID		0x00c057ed
#define TOKEN		0x0123456789abcdefULL
#define SLOT		0
#define SELF		1
#define NNODES		4
#define QBITS		28
#define ROUND0		500
#define RACK		3

static int nv = RINX_BLOCK_VALUES;	/* values per frame (--small: MIN) */
/* blocks of the round, cycled by every kind; block b has the data of
 * b % DBLOCKS. The job has slot 0: the maps need no more entries. */
static __u32 window = DBLOCKS;
static int flen;

static struct host_bpf *skel;
static int prog_fd, jobs_fd, nodes_fd, hops_fd, share_fd, result_fd;
static int partial_fd, cursors_fd, aggs_fd, stats_fd;
static int ncpus;

/* ---- values and the reference arithmetic -------------------------------- */

static __u32 rng = 0x2545f491;

static __u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* A contribution's values: the ends of the range, the values around zero
 * (where two's complement lanes carry), random ones in between. */
static void gen_vals(__s32 *v, int dtype)
{
	static const __s32 edge[] = { 1 << QBITS, -(1 << QBITS), -1, 0, 1,
				      -2, 2, (1 << QBITS) - 1 };
	int i;

	for (i = 0; i < nv; i++) {
		if (i < (int)(sizeof(edge) / sizeof(edge[0])))
			v[i] = dtype == RINX_W_INT32 ? (__s32)rnd() : edge[i];
		else if (dtype == RINX_W_INT32)
			v[i] = (__s32)rnd();
		else if (i % 5 == 0)
			v[i] = (__s32)(rnd() % 7) - 3;
		else
			v[i] = (__s32)(rnd() % ((2u << QBITS) + 1)) -
			       (1 << QBITS);
	}
}

static __s64 floor_div(__s64 a, __s64 b)
{
	__s64 q = a / b;

	if ((a % b) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* x / 2^d rounded to nearest, ties up; nothing left of x from 32 on */
static __s64 align(__s32 x, int d)
{
	if (d == 0)
		return x;
	if (d >= 32)
		return 0;
	return floor_div((__s64)x + ((__s64)1 << (d - 1)), (__s64)1 << d);
}

/* dst (exponent *de) += src (exponent se), as a hop must add: the result
 * at the larger exponent, wrapping like int32. */
static void ref_add(__s32 *dst, __s16 *de, const __s32 *src, __s16 se)
{
	int e = *de > se ? *de : se, i;

	for (i = 0; i < nv; i++)
		dst[i] = (__s32)(__u32)(align(dst[i], e - *de) +
					align(src[i], e - se));
	*de = (__s16)e;
}

/* ---- tables -------------------------------------------------------------- */

static void node_of(__u32 id, struct rinx_node *n)
{
	const __u8 m[6] = { 0x02, 0x52, 0x58, 0x24, 0, (__u8)id };

	memset(n, 0, sizeof(*n));
	memcpy(n->mac, m, 6);
	n->ip = htonl(0x0a180001 | id << 8);
	n->rack = RACK;
}

/* The job with every block of the round in class k, at round `round`. */
static int put_job(__u32 round, __u8 k, __u16 dtype, __u32 flags)
{
	struct rinx_job job = {
		.token = TOKEN,
		.slot = SLOT,
		.round = round,
		.nblocks = window,
		.last_count = (__u16)nv,
		.nclasses = NNODES,
		.nnodes = NNODES,
		.self = SELF,
		.qbits = QBITS,
		.dtype = dtype,
		.window = window,
		.plen = 1,
		.nown = 1,
		.flags = flags,
		.bval = (__u16)nv,
	};

	job.cmap[0] = k;
	job.own[0] = 0;	/* its j-th own block is block j */
	memset(job.start_to, 0xff, sizeof(job.start_to));
	/* class 3's gather ends here: the next own block starts class 3's
	 * reduce from here, to node 2 */
	job.start_to[3] = 2;
	job.start_type[3] = RINX_T_REDUCE;
	return bpf_map_update_elem(jobs_fd, &(__u32){ JOB_ID }, &job,
				   BPF_ANY);
}

static int put_hop(__u32 k, __u32 type, const struct rinx_hop *h)
{
	__u32 i = RINX_HOP_INDEX(SLOT, k, type);

	return bpf_map_update_elem(hops_fd, &i, h, BPF_ANY);
}

/* Node 1 as the agent of nodes 0, 2, 3 for class 0's raw shares, adding
 * its own share (own) or not. */
static int agent_hop(int own)
{
	struct rinx_hop h = {
		.action = RINX_A_AGG_FINISH, .from = RINX_NO_SEND, .to = SELF,
		.rack = RACK, .flags = own ? RINX_HOP_SELF : 0,
		.mask = 1ULL << 0 | 1ULL << 2 | 1ULL << 3,
	};

	return put_hop(0, RINX_T_CONTRIB, &h);
}

/* Node 1 of the ring 0 -> 1 -> 2 -> 3 -> 0 (class c starts at node c):
 * class 0 ADD_FWD, class 2 ADD_FINISH, class 1 STORE_FWD, class 3
 * STORE_END; the agent of nodes 0, 2, 3 for class 0's raw shares. */
static int setup_tables(void)
{
	struct rinx_hop h;
	struct rinx_node n;
	__u32 id, k;
	int err = 0;

	for (id = 0; id < NNODES; id++) {
		node_of(id, &n);
		k = SLOT * RINX_MAX_NODES + id;
		err |= bpf_map_update_elem(nodes_fd, &k, &n, BPF_ANY);
	}
	h = (struct rinx_hop){ .action = RINX_A_ADD_FWD, .step = 0,
			       .from = 0, .to = 2 };
	err |= put_hop(0, RINX_T_REDUCE, &h);
	h = (struct rinx_hop){ .action = RINX_A_ADD_FINISH, .step = 2,
			       .from = 0, .to = 2 };
	err |= put_hop(2, RINX_T_REDUCE, &h);
	h = (struct rinx_hop){ .action = RINX_A_STORE_FWD, .step = 0,
			       .from = 0, .to = 2 };
	err |= put_hop(1, RINX_T_GATHER, &h);
	h = (struct rinx_hop){ .action = RINX_A_STORE_END, .step = 2,
			       .from = 0, .to = 2 };
	err |= put_hop(3, RINX_T_GATHER, &h);
	err |= agent_hop(1);
	return err ? -EIO : 0;
}

static int put_share(__u32 b, __u32 round, __s16 exp, const __s32 *v)
{
	struct rinx_slot s = { .round = round, .exp = exp,
			       .count = (__u16)nv };
	__u32 k = SLOT * window + b;

	memcpy(s.v, v, (size_t)nv * 4);
	return bpf_map_update_elem(share_fd, &k, &s, BPF_ANY);
}

static int zero_entry(int fd, __u32 b, size_t size)
{
	void *z = calloc(1, size);
	__u32 k = SLOT * window + b;
	int err;

	if (!z)
		return -ENOMEM;
	err = bpf_map_update_elem(fd, &k, z, BPF_ANY);
	free(z);
	return err;
}

static int read_stat(__u32 what, __u64 *sum)
{
	__u64 all[RINX_STAT_MAX];
	int err = tl_percpu_sum(stats_fd, RINX_STAT_MAX, all);

	*sum = err ? 0 : all[what];
	return err;
}

/* ---- frames -------------------------------------------------------------- */

static void build(__u8 *f, __u8 type, __u8 step, __u32 from, __u32 round,
		  __u32 block, __u8 k, __s16 exp, __u16 dtype, const __s32 *v)
{
	struct rinx_node src, dst;
	struct rinx_hdr *h;

	node_of(from, &src);
	node_of(SELF, &dst);
	h = tf_frame(f, dst.mac, &src, &dst, RINX_ECN_ECT0, PORT);
	put16(f + TF_OFF_IP + 2, flen - TF_OFF_IP);
	put16(f + TF_OFF_UDP + 4, flen - TF_OFF_UDP);
	ip_fix_csum(f + TF_OFF_IP);
	h->type = type;
	h->step = step;
	h->job = htonl(JOB_ID);
	h->token = htobe64(TOKEN);
	h->round = htonl(round);
	h->block = htonl(block);
	h->nblocks = htonl(window);
	h->sender = htons((__u16)from);
	h->count = htons((__u16)nv);
	h->klass = htons(k);
	h->exp = htons((__u16)exp);
	h->dtype = htons(dtype);
	memcpy(f + RINX_FRAME_HDR_LEN, v, (size_t)nv * 4);
}

static __u8 in[RINX_FRAME_MAX], out[RINX_FRAME_MAX + 256];

static int run(__u32 *ret)
{
	struct tl_run r;
	int err = tl_xdp_run(prog_fd, in, flen, 0, out, sizeof(out), &r);

	if (err)
		return err;
	*ret = r.ret;
	return r.len == (__u32)flen ? 0 : -EMSGSIZE;
}

static __s16 out_exp(void)
{
	const struct rinx_hdr *h = (const void *)(out + TF_OFF_HDR);

	return (__s16)ntohs(h->exp);
}

static const __s32 *out_vals(void)
{
	return (const __s32 *)(out + RINX_FRAME_HDR_LEN);
}

/* ---- the kinds ----------------------------------------------------------- */

enum kind {
	K_FIXED, K_ADD, K_ADD_KEEP, K_FINISH, K_STORE, K_STORE_REC,
	K_AGG_FIRST, K_AGG_ADD, K_AGG_LAST, K_AGG_DONE, K_MAX
};

static const char *kname[K_MAX] = {
	"fixed", "add", "add+keep", "finish", "store", "store+rec",
	"agg first", "agg add", "agg last", "agg done",
};

/* The exponents of a case: the frame's, the share's (ring kinds), and
 * the agent's three contributions and own share. */
struct exps {
	const char *name;
	__u16 dtype;
	__s16 fe, se;
	__s16 ce[3], oe;
};

static const struct exps cases[] = {
	{ "equal", RINX_W_FIXED, 4, 4, { 4, 4, 4 }, 4 },
	{ "shift share", RINX_W_FIXED, 6, 4, { 6, 4, 5 }, 3 },
	{ "shift frame", RINX_W_FIXED, 4, 6, { 3, 5, 4 }, 6 },
	{ "int32", RINX_W_INT32, 0, 0, { 0, 0, 0 }, 0 },
};

#define NCASES	(int)(sizeof(cases) / sizeof(cases[0]))

/* Per block of the window: the frame's values, the share's, the agent's
 * three contributions. */
struct data {
	__s32 fv[DBLOCKS][RINX_BLOCK_VALUES];
	__s32 sv[DBLOCKS][RINX_BLOCK_VALUES];
	__s32 cv[3][DBLOCKS][RINX_BLOCK_VALUES];
};

static struct data *dat;
static __s32 want[RINX_BLOCK_VALUES];

static void gen_data(__u16 dtype)
{
	int b, c;

	for (b = 0; b < DBLOCKS; b++) {
		gen_vals(dat->fv[b], dtype);
		gen_vals(dat->sv[b], dtype);
		for (c = 0; c < 3; c++)
			gen_vals(dat->cv[c][b], dtype);
	}
}

/* What went wrong in a kind's runs: the first failure, then a count. */
struct fails {
	long n;
	char first[200];
};

static __attribute__((format(printf, 2, 3)))
void fail(struct fails *fl, const char *fmt, ...)
{
	va_list ap;

	if (!fl->n++) {
		va_start(ap, fmt);
		vsnprintf(fl->first, sizeof(fl->first), fmt, ap);
		va_end(ap);
	}
}

static void expect_vals(struct fails *fl, const char *what, const __s32 *got,
			__s16 got_exp, const __s32 *exp_v, __s16 exp_e)
{
	int i;

	if (got_exp != exp_e) {
		fail(fl, "%s: exponent %d, want %d", what, got_exp, exp_e);
		return;
	}
	for (i = 0; i < nv; i++) {
		if (got[i] != exp_v[i]) {
			fail(fl, "%s: value %d is %d, want %d", what, i, got[i],
			     exp_v[i]);
			return;
		}
	}
}

static void expect_slot(struct fails *fl, int fd, const char *what, __u32 b,
			__u32 round, const __s32 *v, __s16 e)
{
	struct rinx_slot s;
	__u32 k = SLOT * window + b;

	if (bpf_map_lookup_elem(fd, &k, &s)) {
		fail(fl, "%s: read: %s", what, strerror(errno));
		return;
	}
	if (s.round != round || s.count != nv) {
		fail(fl, "%s: round %u count %u, want %u %d", what, s.round,
		     s.count, round, nv);
		return;
	}
	expect_vals(fl, what, s.v, s.exp, v, e);
}

/* The kernel's run time and count of the program so far. */
static int prog_time(__u64 *ns, __u64 *cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
	return 0;
}

/* Timing of one (kind, case): run time and count summed over the batch. */
struct tsum {
	__u64 ns, cnt;
};

static __u32 cur_round = ROUND0;

/* Runs `runs` frames of kind k, case c, each checked; adds the kernel's
 * run time of the runs to *t. */
static void run_kind(enum kind k, const struct exps *c, long runs,
		     struct tsum *t, struct fails *fl)
{
	static const __u8 kclass[K_MAX] = { 0, 0, 0, 2, 1, 3, 0, 0, 0, 0 };
	static const __u8 kstep[K_MAX] = { 0, 0, 0, 2, 0, 2, 0, 0, 0, 0 };
	static const __u32 kstat[K_MAX] = {
		RINX_STAT_DROP_NO_XSK, RINX_STAT_REDUCE_FWD,
		RINX_STAT_REDUCE_FWD, RINX_STAT_REDUCE_FINISH,
		RINX_STAT_GATHER_FWD, RINX_STAT_RECYCLED, RINX_STAT_AGG_ADD,
		RINX_STAT_AGG_ADD, RINX_STAT_AGG_DONE, RINX_STAT_AGG_DONE,
	};
	int agg = k >= K_AGG_FIRST;
	int ci = k == K_AGG_DONE ? 2 : k - K_AGG_FIRST;
	__u64 ns0, cnt0, ns1, cnt1, st0, st1;
	__u32 round = cur_round, b, d, ret = 0, want_ret;
	const __s32 *fv;
	__s16 fe, we;
	long i;

	if (put_job(round, kclass[k], c->dtype,
		    k == K_ADD_KEEP ? RINX_JOB_KEEP : 0)) {
		fail(fl, "job: %s", strerror(errno));
		return;
	}
	/* the shares of the round (for fixed, of the round before), written
	 * before the runs as a trainer writes them: with a window larger
	 * than the caches, the hops read them from memory */
	for (b = 0; b < window && k != K_STORE &&
	     (!agg || k == K_AGG_FIRST); b++)
		put_share(b, k == K_FIXED ? round - 1 : round,
			  agg ? c->oe : c->se, dat->sv[b % DBLOCKS]);
	read_stat(kstat[k], &st0);
	for (i = 0; i < runs; i++) {
		b = (__u32)(i % window);
		d = b % DBLOCKS;
		/* untimed state each run needs: nothing kept, the
		 * cursor's next own block claimable */
		if (k == K_ADD_KEEP)
			zero_entry(partial_fd, b, sizeof(struct rinx_slot));
		if (k == K_STORE_REC) {
			struct rinx_cursor cur = { .round = round, .next = b };
			__u32 s = SLOT;

			bpf_map_update_elem(cursors_fd, &s, &cur, BPF_ANY);
		}
		if (agg) {
			fv = dat->cv[ci][d];
			fe = c->ce[ci];
			build(in, RINX_T_CONTRIB, 0, ci ? ci + 1 : 0, round, b,
			      0, fe, c->dtype, fv);
		} else {
			fv = dat->fv[d];
			fe = c->fe;
			build(in, k >= K_STORE && k <= K_STORE_REC ?
			      RINX_T_GATHER : RINX_T_REDUCE, kstep[k], 0, round,
			      b, kclass[k], fe, c->dtype, fv);
		}
		if (prog_time(&ns0, &cnt0)) {
			fail(fl, "run time: %s", strerror(errno));
			return;
		}
		if (run(&ret)) {
			fail(fl, "test run: %s", strerror(errno));
			return;
		}
		prog_time(&ns1, &cnt1);
		t->ns += ns1 - ns0;
		t->cnt += cnt1 - cnt0;

		want_ret = k == K_FIXED || k == K_AGG_FIRST || k == K_AGG_ADD ?
			   XDP_DROP : XDP_TX;
		if (ret != want_ret) {
			fail(fl, "block %u: action %u, want %u", b, ret,
			     want_ret);
			continue;
		}
		/* the sum this run must leave */
		memcpy(want, fv, (size_t)nv * 4);
		we = fe;
		switch (k) {
		case K_ADD:
		case K_ADD_KEEP:
		case K_FINISH:
			ref_add(want, &we, dat->sv[d], c->se);
			expect_vals(fl, "frame", out_vals(), out_exp(), want,
				    we);
			if (k == K_ADD_KEEP)
				expect_slot(fl, partial_fd, "kept", b, round,
					    want, we);
			if (k == K_FINISH)
				expect_slot(fl, result_fd, "result", b, round,
					    want, we);
			break;
		case K_STORE:
			expect_slot(fl, result_fd, "result", b, round, fv, fe);
			expect_vals(fl, "frame", out_vals(), out_exp(), fv, fe);
			break;
		case K_STORE_REC:
			expect_slot(fl, result_fd, "result", b, round, fv, fe);
			/* the next own block, block b, from its share */
			expect_vals(fl, "recycled", out_vals(), out_exp(),
				    dat->sv[d], c->se);
			break;
		case K_AGG_LAST:
			memcpy(want, dat->cv[0][d], (size_t)nv * 4);
			we = c->ce[0];
			ref_add(want, &we, dat->cv[1][d], c->ce[1]);
			ref_add(want, &we, dat->cv[2][d], c->ce[2]);
			ref_add(want, &we, dat->sv[d], c->oe);
			expect_vals(fl, "sum", out_vals(), out_exp(), want, we);
			expect_slot(fl, result_fd, "result", b, round, want,
				    we);
			break;
		case K_AGG_DONE:
			memcpy(want, dat->cv[0][d], (size_t)nv * 4);
			we = c->ce[0];
			ref_add(want, &we, dat->cv[1][d], c->ce[1]);
			ref_add(want, &we, dat->cv[2][d], c->ce[2]);
			expect_vals(fl, "sum", out_vals(), out_exp(), want, we);
			expect_slot(fl, result_fd, "result", b, round, want,
				    we);
			break;
		default:
			break;
		}
	}
	read_stat(kstat[k], &st1);
	if (st1 - st0 != (__u64)runs)
		fail(fl, "counter %u: +%llu, want +%ld", kstat[k],
		     (unsigned long long)(st1 - st0), runs);
}

/* Does case c run kind k? int32: the ring's kinds (an agent sums int32
 * with the same add). */
static int kind_of(const struct exps *c, int k)
{
	return c->dtype != RINX_W_INT32 || k == K_FIXED || k == K_ADD ||
	       k == K_FINISH || k == K_STORE;
}

/* The agent's kinds run a round's blocks in turn: every block's first
 * contribution, then every second, then every last; in every other round
 * the node adds no share of its own (agg done: the slot completes as a
 * ToR's or a tree node's does). */
static void run_agg(const struct exps *c, long runs, struct tsum *t,
		    struct fails *fl)
{
	long done;
	int k, own;

	for (done = 0; done < runs; done += window) {
		for (own = 1; own >= 0; own--) {
			if (agent_hop(own)) {
				fail(&fl[K_AGG_FIRST], "hop: %s",
				     strerror(errno));
				return;
			}
			for (k = K_AGG_FIRST; k <= K_AGG_LAST; k++)
				run_kind(k == K_AGG_LAST && !own ? K_AGG_DONE :
					 k, c, window, &t[k == K_AGG_LAST &&
					 !own ? K_AGG_DONE : k],
					 &fl[k == K_AGG_LAST && !own ?
					 K_AGG_DONE : k]);
			cur_round++;
		}
	}
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(FILE *to)
{
	fprintf(to,
"usage: test_hopcost [--profile] [--runs N] [--batches B] [--small]\n"
"                    [--window W]\n"
"  Checks every hop kind of the host program on its own frames; with\n"
"  --profile also prints the kernel's run time per run and per value for\n"
"  each kind (N runs in each of B batches, median batch; 2000 and 7).\n"
"  --small: frames of %d values instead of %d.\n"
"  --window: blocks the kinds cycle through (%d..%d, default %d; each\n"
"  block's share, result, kept sum and slot is its own 3 KiB of memory:\n"
"  4096 puts 48 MiB in the maps, beyond the CPUs' own caches).\n",
		RINX_BLOCK_VALUES_MIN, RINX_BLOCK_VALUES, DBLOCKS, WINDOW_MAX,
		DBLOCKS);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "profile", no_argument, NULL, 'p' },
		{ "runs", required_argument, NULL, 'n' },
		{ "batches", required_argument, NULL, 'b' },
		{ "small", no_argument, NULL, 's' },
		{ "window", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	double med[NCASES][K_MAX], least[NCASES][K_MAX], *bt;
	long runs = 0, batches = 1, bi;
	int profile = 0, o, ci, k, stats = -1, err, nplan;

	while ((o = getopt_long(argc, argv, "pn:b:sw:h", lo, NULL)) != -1) {
		switch (o) {
		case 'p': profile = 1; break;
		case 'n': runs = strtol(optarg, NULL, 10); break;
		case 'b': batches = strtol(optarg, NULL, 10); break;
		case 's': nv = RINX_BLOCK_VALUES_MIN; break;
		case 'w': window = strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!runs)
		runs = profile ? 2000 : 3 * DBLOCKS;
	if (profile && batches == 1)
		batches = 7;
	/* whole rounds of the window */
	runs = (runs + window - 1) / window * window;
	if (runs < 1 || batches < 1 || batches > 1000 || window < DBLOCKS ||
	    window > WINDOW_MAX) {
		usage(stderr);
		return 2;
	}
	flen = RINX_FRAME_LEN(nv);
	tl_needs_root("BPF_PROG_TEST_RUN");
	dat = calloc(1, sizeof(*dat));
	bt = calloc(NCASES * K_MAX * batches, sizeof(*bt));
	if (!dat || !bt)
		tap_skip_all("out of memory");
	/* the plan: loading, the tables, the statistics, a check per kind of
	 * every case */
	nplan = 2 + !!profile;
	for (ci = 0; ci < NCASES; ci++)
		for (k = 0; k < K_MAX; k++)
			nplan += !!kind_of(&cases[ci], k);
	tap_plan(nplan);
	skel = tl_host_load(&(struct tl_host_opts){
		.port = PORT, .window = window, .nshare = window,
		.npartial = window, .naggs = window }, &err);
	if (!ASSERT_OK(err, "load rinx_host (window %d, %d values per frame)",
		       window, nv)) {
		return tap_done();
	}
	prog_fd = bpf_program__fd(skel->progs.rinx_host);
	jobs_fd = bpf_map__fd(skel->maps.jobs);
	nodes_fd = bpf_map__fd(skel->maps.nodes);
	hops_fd = bpf_map__fd(skel->maps.hops);
	share_fd = bpf_map__fd(skel->maps.share);
	result_fd = bpf_map__fd(skel->maps.result);
	partial_fd = bpf_map__fd(skel->maps.partial);
	cursors_fd = bpf_map__fd(skel->maps.cursors);
	aggs_fd = bpf_map__fd(skel->maps.aggs);
	stats_fd = bpf_map__fd(skel->maps.stats);
	ncpus = libbpf_num_possible_cpus();
	if (!tap_ok(ncpus > 0 && !setup_tables(),
		    "job, nodes, ring and agent hops")) {
		return tap_done();
	}
	if (profile) {
		/* the kernel times programs while someone holds this */
		stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (!tap_ok(stats >= 0, "run-time statistics on: %s",
			    stats >= 0 ? "yes" : strerror(errno))) {
			return tap_done();
		}
	}

	for (ci = 0; ci < NCASES; ci++) {
		const struct exps *c = &cases[ci];
		struct fails fl[K_MAX] = {};

		gen_data(c->dtype);
		/* the kinds take turns within a batch, so that a busy spell
		 * of the machine falls on all of them */
		for (bi = 0; bi < batches; bi++) {
			struct tsum t[K_MAX] = {};

			for (k = 0; k < K_AGG_FIRST; k++) {
				if (!kind_of(c, k))
					continue;
				run_kind(k, c, runs, &t[k], &fl[k]);
				cur_round++;
			}
			if (kind_of(c, K_AGG_FIRST))
				run_agg(c, runs, t, fl);
			for (k = 0; k < K_MAX; k++)
				bt[(ci * K_MAX + k) * batches + bi] =
					t[k].cnt ? (double)t[k].ns / t[k].cnt :
						   -1;
		}
		for (k = 0; k < K_MAX; k++) {
			double *v = &bt[(ci * K_MAX + k) * batches];

			qsort(v, batches, sizeof(*v), cmp_dbl);
			med[ci][k] = v[batches / 2];
			least[ci][k] = v[0];
			if (!kind_of(c, k))
				continue;
			tap_ok(!fl[k].n, "%s, %s: %ld runs, every output as "
			       "computed here%s%s", kname[k], c->name,
			       runs * batches * (k == K_AGG_FIRST ||
						 k == K_AGG_ADD ? 2 : 1),
			       fl[k].n ? ": " : "",
			       fl[k].first);
			if (fl[k].n > 1)
				tap_diag("  and %ld more failures", fl[k].n - 1);
		}
	}

	if (profile) {
		tap_diag("kernel run time per run (run_time_ns / run_cnt), "
			 "median of %ld batches of %ld runs; %d values per "
			 "frame", batches, runs, nv);
		tap_diag("%-10s %-12s %8s %8s %10s %16s", "kind", "exponents",
			 "ns/run", "min", "ns/value", "ns/value-fixed");
		for (ci = 0; ci < NCASES; ci++) {
			for (k = 0; k < K_MAX; k++) {
				if (med[ci][k] < 0)
					continue;
				tap_diag("%-10s %-12s %8.0f %8.0f %10.3f %16.3f",
					 kname[k], cases[ci].name, med[ci][k],
					 least[ci][k], med[ci][k] / nv,
					 k == K_FIXED ? 0.0 :
					 (med[ci][k] - med[ci][K_FIXED]) / nv);
			}
		}
		close(stats);
	}
	host_bpf__destroy(skel);
	free(dat);
	free(bt);
	return tap_done();
}
