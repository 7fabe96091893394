// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of the parameter server's data plane (bpf/ps.bpf.h) through
 * BPF_PROG_TEST_RUN of the host program.
 *
 * Job A (slot 2, 4 nodes) serves a store of 3 blocks (the last of 100
 * values) at node 0 with a staleness bound of 1; the test runs the program
 * as node 0 and sends it the frames of workers 1..3. Job B (slot 5) is the
 * same job seen from worker 1, to check that answers go to the trainer.
 * Job C (slot 7) is an asynchronous store that two threads push into at
 * once. Job D (slot 9) is a store of more blocks than a job slot's window
 * (the store map is not sized by it): three workers push into every block
 * and pull those past the window. Every check compares the store with a
 * model kept here (64-bit sums of what was pushed and accepted), the
 * answer frame field by field, and the exact counter deltas.
 */
#include <errno.h>
#include <pthread.h>
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

#define WINDOW		16
#define PORT		47124
#define NSLOTS		RINX_DEFAULT_JOBS
#define NB		3		/* blocks of the stores */
#define LAST		100		/* values of their last block */
#define NV		RINX_BLOCK_VALUES
#define EXP0		5		/* the stores' exponents: block b, */
#define EXP(b)		(EXP0 + (int)(b))	/* all different */
#define THREAD_PUSHES	2000
#define NB_D		(2 * WINDOW + 5)	/* job D's blocks, all full */
#define EXP_D		3

enum { J_A, J_B, J_C, J_MAX };

static const struct {
	__u32 id, slot;
	__u64 token;
} job_d = { 0x00ba5e04, 9, 0x4444ULL };

static const struct {
	__u32 id, slot;
	__u64 token;
	__u16 self;
	__u32 staleness;
} jobs[J_MAX] = {
	[J_A] = { 0x00ba5e01, 2, 0x1122334455667788ULL, 0, 1 },
	[J_B] = { 0x00ba5e02, 5, 0x99aabbccULL, 1, 1 },
	[J_C] = { 0x00ba5e03, 7, 0x5555ULL, 0, RINX_PS_NO_BOUND },
};

static struct host_bpf *skel;
static int prog_fd, stats_fd, store_fd, conf_fd, ncpus;
static __s64 model[J_MAX][NB][NV];	/* what each store must hold */
static __s64 model_d[NB_D][NV];

static __u32 idx_of(int j, __u32 b)
{
	return RINX_PS_KEY(jobs[j].slot, b);
}

static int count_of(__u32 b)
{
	return b == NB - 1 ? LAST : NV;
}

static void node_mac(__u32 slot, __u32 id, __u8 *mac)
{
	const __u8 m[6] = { 0x02, 0x50, 0x53, 0x00, slot, id };

	memcpy(mac, m, 6);
}

static struct rinx_node node_of(__u32 slot, __u32 id)
{
	struct rinx_node n = { .rack = RINX_NO_RACK };

	node_mac(slot, id, n.mac);
	n.ip = htonl(0x0a000001 | slot << 16 | id << 8);
	return n;
}

static int read_stats(__u64 *out)
{
	__u64 pc[256];
	__u32 k;
	int i;

	if (ncpus > 256)
		return -E2BIG;
	for (k = 0; k < RINX_STAT_MAX; k++) {
		if (bpf_map_lookup_elem(stats_fd, &k, pc))
			return -errno;
		out[k] = 0;
		for (i = 0; i < ncpus; i++)
			out[k] += pc[i];
	}
	return 0;
}

/* A PS frame of the job (id, slot, token) from node `from` to its node
 * `to`, for a store of nb blocks: block `block` of `count` values at
 * exponent exp. */
static struct rinx_hdr *ps_hdr(__u8 *f, __u32 id, __u32 slot, __u64 token,
			       __u16 from, __u16 to, __u8 op, __u32 block,
			       __u32 nb, __u32 seq, __u16 count, __s16 exp)
{
	struct rinx_node s = node_of(slot, from);
	struct rinx_node d = node_of(slot, to);
	struct rinx_hdr *h = tf_frame(f, d.mac, &s, &d, RINX_ECN_ECT0, PORT);

	h->type = RINX_T_PS;
	h->step = op;
	h->job = htonl(id);
	h->token = htobe64(token);
	h->sender = htons(from);
	h->block = htonl(block);
	h->nblocks = htonl(nb);
	h->round = htonl(seq);
	h->count = htons(count);
	h->exp = htons((__u16)exp);
	h->dtype = htons(RINX_W_FIXED);
	return h;
}

/* A PS frame of job j from node `from` to the job's node `to`. */
static struct rinx_hdr *ps_frame(__u8 *f, int j, __u16 from, __u16 to,
				 __u8 op, __u32 block, __u32 seq)
{
	return ps_hdr(f, jobs[j].id, jobs[j].slot, jobs[j].token, from, to,
		      op, block, NB, seq, block < NB ? count_of(block) : NV,
		      block < NB ? EXP(block) : 0);
}

static __s32 *vals(__u8 *f)
{
	return (__s32 *)(f + RINX_FRAME_HDR_LEN);
}

static __u8 out[4096];
static __u32 out_len;	/* the length of the frame in out */

/* Runs the first len bytes of frame f once; the action, d[] the counter
 * deltas. */
static int run_len(const __u8 *f, __u32 len, __u64 *d)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	__u64 a[RINX_STAT_MAX], b[RINX_STAT_MAX];
	int k;

	o.data_in = f;
	o.data_size_in = len;
	o.data_out = out;
	o.data_size_out = sizeof(out);
	o.repeat = 1;
	out_len = 0;
	if (read_stats(a) || bpf_prog_test_run_opts(prog_fd, &o) ||
	    read_stats(b))
		return -1;
	out_len = o.data_size_out;
	for (k = 0; k < RINX_STAT_MAX; k++)
		d[k] = b[k] - a[k];
	return (int)o.retval;
}

static int run(const __u8 *f, __u64 *d)
{
	return run_len(f, RINX_FRAME_MAX, d);
}

/* Frame f cut to len bytes, as its sender makes one that short (IP and
 * UDP lengths, IP checksum), and run. */
static int run_short(__u8 *f, __u32 len, __u64 *d)
{
	__u16 ip_len = htons(len - 14), udp_len = htons(len - 34);

	memcpy(f + TF_OFF_IP + 2, &ip_len, 2);
	memcpy(f + TF_OFF_IP + 20 + 4, &udp_len, 2);
	ip_fix_csum(f + TF_OFF_IP);
	return run_len(f, len, d);
}

/* The frame in out is len bytes long, and its IP and UDP headers say so. */
static int out_is(__u32 len)
{
	__u16 ip_len, udp_len;

	memcpy(&ip_len, out + TF_OFF_IP + 2, 2);
	memcpy(&udp_len, out + TF_OFF_IP + 20 + 4, 2);
	if (out_len != len || ntohs(ip_len) != len - 14 ||
	    ntohs(udp_len) != len - 34) {
		tap_diag("answer of %u bytes, IP %u, UDP %u (want %u)",
			 out_len, ntohs(ip_len), ntohs(udp_len), len);
		return 0;
	}
	return 1;
}

/* Exactly one counter moved, by one: stat. */
static int only(const __u64 *d, int stat, int also)
{
	int k;

	for (k = 0; k < RINX_STAT_MAX; k++)
		if (d[k] != (k == stat || k == also || k == RINX_STAT_RX))
			return 0;
	return 1;
}

/* Does job j's store equal the model, value by value? */
static int store_ok(int j)
{
	struct rinx_ps_block a;
	__u32 b, k;
	int i;

	for (b = 0; b < NB; b++) {
		k = idx_of(j, b);
		if (bpf_map_lookup_elem(store_fd, &k, &a) || a.exp != EXP(b))
			return 0;
		for (i = 0; i < count_of(b); i++)
			if (a.v[i] != model[j][b][i]) {
				tap_diag("job %d block %u value %d: %d, want "
					 "%lld", j, b, i, a.v[i],
					 (long long)model[j][b][i]);
				return 0;
			}
	}
	return 1;
}

/* The answer in `out`: op, to node `to` of job j from its node 0, the
 * slowest clock `clk`. */
static int answer_ok(int j, __u8 op, __u16 to, __u64 clk)
{
	struct rinx_hdr *h = (struct rinx_hdr *)(out + TF_OFF_HDR);
	struct rinx_node d = node_of(jobs[j].slot, to);
	struct rinx_node s = node_of(jobs[j].slot, jobs[j].self);
	__be32 sip, dip;

	memcpy(&sip, out + TF_OFF_IP + 12, 4);
	memcpy(&dip, out + TF_OFF_IP + 16, 4);
	if (h->type != RINX_T_PS || h->step != op || memcmp(out, d.mac, 6) ||
	    memcmp(out + 6, s.mac, 6) || sip != s.ip || dip != d.ip ||
	    ntohs(h->sender) != jobs[j].self ||
	    be64toh(h->cover) != clk) {
		tap_diag("answer: op %u (want %u), cover %llu (want %llu), "
			 "sender %u", h->step, op,
			 (unsigned long long)be64toh(h->cover),
			 (unsigned long long)clk, ntohs(h->sender));
		return 0;
	}
	return 1;
}

static void fill(__u8 *f, __u32 b, int base)
{
	int i;

	for (i = 0; i < count_of(b); i++)
		vals(f)[i] = base + i * 7 - 300;
}

static void model_add(int j, __u32 b, const __u8 *f)
{
	int i;

	for (i = 0; i < count_of(b); i++)
		model[j][b][i] += vals((__u8 *)f)[i];
}

/* Job D: server node 0 of 4, an asynchronous store of NB_D blocks. */
static int setup_d(struct rinx_ps_block *a)
{
	struct rinx_job job = {
		.token = job_d.token, .slot = job_d.slot, .round = 1,
		.nblocks = 1, .last_count = NV, .nclasses = 1, .nnodes = 4,
		.self = 0, .qbits = 28, .dtype = RINX_W_FIXED,
		.window = WINDOW, .plen = 1, .nown = 0, .bval = NV,
	};
	struct rinx_ps_conf pc = {
		.job = job_d.id, .nblocks = NB_D, .last_count = NV,
		.server = 0, .staleness = RINX_PS_NO_BOUND,
	};
	__u32 k, id, b;
	int i, err = 0;

	memset(job.start_to, 0xff, sizeof(job.start_to));
	err |= bpf_map_update_elem(bpf_map__fd(skel->maps.jobs), &job_d.id,
				   &job, BPF_ANY);
	for (id = 0; id < RINX_MAX_NODES; id++) {
		struct rinx_node n = node_of(job_d.slot, id);

		k = job_d.slot * RINX_MAX_NODES + id;
		err |= bpf_map_update_elem(bpf_map__fd(skel->maps.nodes), &k,
					   &n, BPF_ANY);
	}
	for (b = 0; b < NB_D; b++) {
		memset(a, 0, sizeof(*a));
		a->exp = EXP_D;
		for (i = 0; i < NV; i++)
			model_d[b][i] = a->v[i] = 5 * (int)b - 3 * i;
		k = RINX_PS_KEY(job_d.slot, b);
		err |= bpf_map_update_elem(store_fd, &k, a, BPF_ANY);
	}
	k = job_d.slot;
	err |= bpf_map_update_elem(conf_fd, &k, &pc, BPF_ANY);
	return err;
}

static int setup(void)
{
	struct rinx_ps_block *a = calloc(1, sizeof(*a));
	__u32 k, id, b;
	int j, i, err = 0;

	if (!a)
		return -ENOMEM;
	for (j = 0; j < J_MAX; j++) {
		struct rinx_job job = {
			.token = jobs[j].token, .slot = jobs[j].slot,
			.round = 1, .nblocks = NB, .last_count = LAST,
			.nclasses = 1, .nnodes = 4, .self = jobs[j].self,
			.qbits = 28, .dtype = RINX_W_FIXED, .window = WINDOW,
			.plen = 1, .nown = 0, .bval = NV,
		};
		struct rinx_ps_conf pc = {
			.job = jobs[j].id, .nblocks = NB, .last_count = LAST,
			.server = 0, .staleness = jobs[j].staleness,
		};

		memset(job.start_to, 0xff, sizeof(job.start_to));
		err |= bpf_map_update_elem(bpf_map__fd(skel->maps.jobs),
					   &jobs[j].id, &job, BPF_ANY);
		for (id = 0; id < RINX_MAX_NODES; id++) {
			struct rinx_node n = node_of(jobs[j].slot, id);

			k = jobs[j].slot * RINX_MAX_NODES + id;
			err |= bpf_map_update_elem(bpf_map__fd(skel->maps.nodes),
						   &k, &n, BPF_ANY);
		}
		for (b = 0; b < NB; b++) {
			memset(a, 0, sizeof(*a));
			a->exp = EXP(b);
			for (i = 0; i < NV; i++) {
				a->v[i] = i < count_of(b) ? 1000 * (int)b - i : 0;
				model[j][b][i] = a->v[i];
			}
			k = idx_of(j, b);
			err |= bpf_map_update_elem(store_fd, &k, a, BPF_ANY);
		}
		k = jobs[j].slot;
		err |= bpf_map_update_elem(conf_fd, &k, &pc, BPF_ANY);
	}
	err |= setup_d(a);
	free(a);
	return err ? -EIO : 0;
}

/* ---- job A: the server ------------------------------------------------- */

static __u8 f[RINX_FRAME_MAX];

/* A push of worker w (push number seq) into block b of job A, values from
 * base: the action and the counters. */
static int push(int j, __u16 w, __u32 b, __u32 seq, int base, __u64 *d)
{
	ps_frame(f, j, w, 0, RINX_PS_PUSH, b, seq);
	fill(f, b, base);
	return run(f, d);
}

#define SERVER_CHECKS	29

static void server(void)
{
	__u64 d[RINX_STAT_MAX];
	struct rinx_hdr *h;
	int ret, i, k, ok;
	__u32 b;

	ret = push(J_A, 1, 0, 1, 10, d);
	model_add(J_A, 0, f);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_PUSH, -1) &&
	       answer_ok(J_A, RINX_PS_ACK, 1, 0) && store_ok(J_A),
	       "push: added, acknowledged to its worker (PS_PUSH)");
	tap_ok(out_is(RINX_FRAME_HDR_LEN), "the acknowledgment is a header "
	       "alone (%u bytes): the push is not carried back", out_len);
	ret = push(J_A, 1, 0, 1, 10, d);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_DUP, -1) &&
	       answer_ok(J_A, RINX_PS_ACK, 1, 0) && store_ok(J_A),
	       "the same push again: acknowledged, not added (PS_DUP)");
	ret = push(J_A, 2, 0, 1, -77, d);
	model_add(J_A, 0, f);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_PUSH, -1) &&
	       store_ok(J_A), "another worker's push into the same block: "
	       "added");
	ret = push(J_A, 1, 2, 1, 5, d);
	model_add(J_A, 2, f);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_PUSH, -1) &&
	       store_ok(J_A), "push into the short last block: added");

	/* pull: the block as it is, with its exponent */
	ps_frame(f, J_A, 3, 0, RINX_PS_PULL, 0, 0);
	ret = run(f, d);
	h = (struct rinx_hdr *)(out + TF_OFF_HDR);
	ok = ret == XDP_TX && only(d, RINX_STAT_PS_PULL, -1) &&
	     answer_ok(J_A, RINX_PS_VALUE, 3, 0) &&
	     (__s16)ntohs(h->exp) == EXP(0);
	for (i = 0; ok && i < NV; i++)
		ok = vals(out)[i] == model[J_A][0][i];
	tap_ok(ok, "pull: the stored block and its exponent (PS_PULL)");

	/* a pull as its header alone: grown into the block it asks for */
	for (b = 0; b < NB; b += NB - 1) {
		ps_frame(f, J_A, 3, 0, RINX_PS_PULL, b, 0);
		memset(out, 0xa5, sizeof(out));
		ret = run_short(f, RINX_FRAME_HDR_LEN, d);
		ok = ret == XDP_TX && only(d, RINX_STAT_PS_PULL, -1) &&
		     answer_ok(J_A, RINX_PS_VALUE, 3, 0) &&
		     out_is(RINX_FRAME_LEN(NV)) &&
		     (__s16)ntohs(h->exp) == EXP(b) &&
		     ntohs(h->count) == count_of(b);
		for (i = 0; ok && i < count_of(b); i++)
			ok = vals(out)[i] == model[J_A][b][i];
		tap_ok(ok, "a pull of block %u as a header alone (%d bytes): "
		       "answered with the whole block (%u bytes), its values "
		       "and exponent", b, RINX_FRAME_HDR_LEN, out_len);
	}
	/* a push carries values: as a header alone it is short */
	ps_frame(f, J_A, 1, 0, RINX_PS_PUSH, 1, 9);
	ret = run_short(f, RINX_FRAME_HDR_LEN, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_SHORT, -1) &&
	       store_ok(J_A), "a push without its values: DROP_SHORT, the "
	       "store untouched");
	/* a header and part of a block is neither */
	ps_frame(f, J_A, 3, 0, RINX_PS_PULL, 0, 0);
	ret = run_short(f, RINX_FRAME_HDR_LEN + 16, d);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_PULL, -1) &&
	       out_is(RINX_FRAME_LEN(NV)), "a pull with 16 bytes of payload: "
	       "grown to the block too");

	/* bad input: refused and counted, the store untouched */
	ps_frame(f, J_A, 1, 0, RINX_PS_PUSH, 1, 1);
	fill(f, 1, 1);
	((struct rinx_hdr *)(f + TF_OFF_HDR))->token ^= htobe64(1);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_TOKEN, -1) &&
	       store_ok(J_A), "push with another job's token: DROP_TOKEN");
	ps_frame(f, J_A, 1, 0, RINX_PS_PUSH, 1, 1);
	((struct rinx_hdr *)(f + TF_OFF_HDR))->job = htonl(0x00ba5e09);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_JOB, -1) &&
	       store_ok(J_A), "push of an unknown job: DROP_JOB");
	ps_frame(f, J_A, 1, 0, RINX_PS_PUSH, 1, 1);
	memcpy(f + TF_OFF_IP + 12, &(__be32){ htonl(0x0a630001) }, 4);
	ip_fix_csum(f + TF_OFF_IP);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_MEMBER, -1) &&
	       store_ok(J_A), "push from another host's address (a worker "
	       "of another job): DROP_MEMBER");
	ps_frame(f, J_A, 4, 0, RINX_PS_PUSH, 1, 1);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_MEMBER, -1) &&
	       store_ok(J_A), "push from node 4 of a 4-node job: DROP_MEMBER");
	ps_frame(f, J_A, 1, 0, RINX_PS_PUSH, 1, 1);
	((struct rinx_hdr *)(f + TF_OFF_HDR))->exp = htons(EXP(1) + 1);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_SHAPE, -1) &&
	       store_ok(J_A), "push at another exponent: DROP_SHAPE");
	ps_frame(f, J_A, 1, 0, RINX_PS_PUSH, NB, 1);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_BOUNDS, -1),
	       "push past the store's blocks: DROP_BOUNDS");
	ps_frame(f, J_A, 1, 0, RINX_PS_PUSH, 2, 1);
	((struct rinx_hdr *)(f + TF_OFF_HDR))->count = htons(LAST + 1);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_BOUNDS, -1) &&
	       store_ok(J_A), "push with the wrong count: DROP_BOUNDS");
	ps_frame(f, J_A, 1, 0, RINX_PS_PUSH, 1, 0);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_BOUNDS, -1) &&
	       store_ok(J_A), "push number 0: DROP_BOUNDS");
	ps_frame(f, J_A, 1, 0, RINX_PS_ACK, 0, 1);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_SENDER, -1),
	       "an answer sent to the server: DROP_SENDER");

	/* overflow: refused whole, nothing of the block changes */
	ps_frame(f, J_A, 3, 0, RINX_PS_PUSH, 1, 1);
	fill(f, 1, 3);
	vals(f)[600] = INT32_MAX;	/* the store holds 1000 - 600 there */
	ret = run(f, d);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_RANGE, -1) &&
	       answer_ok(J_A, RINX_PS_RANGE, 3, 0) && store_ok(J_A),
	       "push that overflows a value: refused whole (PS_RANGE)");

	/* staleness 1: worker 1 has completed no push (one block of three
	 * in), every clock is 0: its push 2 (iteration 1) passes, push 3
	 * (iteration 2) is refused */
	ret = push(J_A, 1, 1, 3, 9, d);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_STALE, -1) &&
	       answer_ok(J_A, RINX_PS_STALE, 1, 0) && store_ok(J_A),
	       "push of iteration 2 with the slowest at clock 0, bound 1: "
	       "refused (PS_STALE)");
	ret = push(J_A, 1, 1, 2, 9, d);
	model_add(J_A, 1, f);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_PUSH, -1) &&
	       store_ok(J_A), "push of iteration 1: within the bound, added");
	/* the others complete push 1 (worker 1 has 3 blocks in, block 1
	 * by its push 2: clock 1 too), so iteration 2 passes now */
	for (b = 0; b < NB; b++) {
		push(J_A, 0, b, 1, 2, d);
		model_add(J_A, b, f);
		if (b) {
			push(J_A, 2, b, 1, 4, d);
			model_add(J_A, b, f);
		}
		push(J_A, 3, b, 1, 6, d);
		model_add(J_A, b, f);
	}
	ret = push(J_A, 1, 1, 3, 9, d);
	model_add(J_A, 1, f);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_PUSH, -1) &&
	       answer_ok(J_A, RINX_PS_ACK, 1, 1) && store_ok(J_A),
	       "every worker at clock 1: iteration 2 passes, the answer "
	       "carries clock 1");
	/* a worker that leaves bounds nobody; when all left, no one */
	ps_frame(f, J_A, 2, 0, RINX_PS_LEAVE, 0, 0);
	ret = run(f, d);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_LEAVE, -1) &&
	       answer_ok(J_A, RINX_PS_ACK, 2, 1), "leave: acknowledged "
	       "(PS_LEAVE)");
	ps_frame(f, J_A, 2, 0, RINX_PS_LEAVE, 0, 0);
	ret = run_short(f, RINX_FRAME_HDR_LEN, d);
	tap_ok(ret == XDP_TX && only(d, RINX_STAT_PS_LEAVE, -1) &&
	       answer_ok(J_A, RINX_PS_ACK, 2, 1) &&
	       out_is(RINX_FRAME_HDR_LEN), "a leave as a header alone: "
	       "acknowledged by a header");
	for (i = 0; i < 4; i++) {
		ps_frame(f, J_A, i, 0, RINX_PS_LEAVE, 0, 0);
		run(f, d);
	}
	tap_ok(answer_ok(J_A, RINX_PS_ACK, 3, ~0ULL),
	       "every worker left: the slowest clock is all ones");

	/* a push answered with the block right after it (PUSHPULL) */
	for (i = 0; i < 2; i++) {
		ps_frame(f, J_A, 2, 0, RINX_PS_PUSHPULL, 1, 50);
		fill(f, 1, 1000);
		if (!i)
			model_add(J_A, 1, f);
		memset(out, 0, sizeof(out));
		ret = run(f, d);
		ok = ret == XDP_TX &&
		     only(d, i ? RINX_STAT_PS_DUP : RINX_STAT_PS_PUSH, -1) &&
		     answer_ok(J_A, RINX_PS_VALUE, 2, ~0ULL) &&
		     out_is(RINX_FRAME_LEN(NV)) && store_ok(J_A) &&
		     (__s16)ntohs(h->exp) == EXP(1) &&
		     ntohl(h->round) == 50;
		for (k = 0; ok && k < count_of(1); k++)
			ok = vals(out)[k] == model[J_A][1][k];
		tap_ok(ok, "%s: answered with the block %s",
		       i ? "the same push-and-pull again: not added twice"
			 : "push-and-pull: added", i ? "as it is" :
		       "right after it, this push in it (PS_PUSH)");
	}
	ps_frame(f, J_A, 2, 0, RINX_PS_PUSHPULL, 1, 51);
	ret = run_short(f, RINX_FRAME_HDR_LEN, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_SHORT, -1) &&
	       store_ok(J_A), "a push-and-pull without its values: "
	       "DROP_SHORT");
}

/* ---- job B: answers at a worker ------------------------------------------ */

#define WORKER_CHECKS	5

static void worker(void)
{
	__u64 d[RINX_STAT_MAX];
	int ret;

	/* from the server (node 0) to node 1: for the trainer; no socket is
	 * bound here, so the redirect fails and says so */
	ps_frame(f, J_B, 0, 1, RINX_PS_ACK, 0, 1);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_NO_XSK, -1),
	       "answer from the server: to the trainer's socket (none bound: "
	       "DROP_NO_XSK)");
	ps_frame(f, J_B, 0, 1, RINX_PS_ACK, 0, 1);
	ret = run_short(f, RINX_FRAME_HDR_LEN, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_NO_XSK, -1),
	       "an acknowledgment as a header alone: to the trainer too");
	/* only a parameter server's frames may be a header alone */
	ps_frame(f, J_B, 0, 1, RINX_PS_ACK, 0, 1);
	((struct rinx_hdr *)(f + TF_OFF_HDR))->type = RINX_T_GATHER;
	ret = run_short(f, RINX_FRAME_HDR_LEN, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_SHORT, -1),
	       "a gather as a header alone: DROP_SHORT");
	ps_frame(f, J_B, 2, 1, RINX_PS_VALUE, 0, 1);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_SENDER, -1),
	       "an answer from a node that is not the server: DROP_SENDER");
	ps_frame(f, J_B, 2, 1, RINX_PS_PUSH, 0, 1);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_NO_ROUTE, -1),
	       "a push to a worker: DROP_NO_ROUTE");
}

/* ---- job C: two workers push into one block at once ---------------------- */

#define CONC_CHECKS	2

struct pusher {
	__u16 w;
	int ok;
};

static void *pusher(void *arg)
{
	struct pusher *p = arg;
	__u8 *g = malloc(RINX_FRAME_MAX), *o = malloc(4096);
	__u32 seq;
	int i;

	p->ok = 0;
	if (!g || !o)
		goto out;
	for (seq = 1; seq <= THREAD_PUSHES; seq++) {
		LIBBPF_OPTS(bpf_test_run_opts, t);

		ps_frame(g, J_C, p->w, 0, RINX_PS_PUSH, 0, seq);
		for (i = 0; i < NV; i++)
			vals(g)[i] = p->w * 1000 + i;
		t.data_in = g;
		t.data_size_in = RINX_FRAME_MAX;
		t.data_out = o;
		t.data_size_out = 4096;
		if (bpf_prog_test_run_opts(prog_fd, &t) || t.retval != XDP_TX)
			goto out;
	}
	p->ok = 1;
out:
	free(g);
	free(o);
	return NULL;
}

static void concurrent(void)
{
	struct pusher p[2] = { { .w = 1 }, { .w = 2 } };
	pthread_t t[2];
	int i, k, started = 0;

	for (k = 0; k < 2; k++)
		started += !pthread_create(&t[k], NULL, pusher, &p[k]);
	for (k = 0; k < started; k++)
		pthread_join(t[k], NULL);
	tap_ok(started == 2 && p[0].ok && p[1].ok, "two threads, %d pushes "
	       "each into block 0 of job C: every push acknowledged",
	       THREAD_PUSHES);
	for (k = 0; k < 2; k++)
		for (i = 0; i < NV; i++)
			model[J_C][0][i] += (__s64)THREAD_PUSHES *
					    (p[k].w * 1000 + i);
	tap_ok(store_ok(J_C), "the block holds every push once, exactly");
}

/* ---- job D: a store larger than a job slot's window ----------------------- */

#define BIG_CHECKS	4

/* A frame of job D from node `from` to node 0, block b (of NB_D). */
static void frame_d(__u8 *g, __u16 from, __u8 op, __u32 b, __u32 seq)
{
	ps_hdr(g, job_d.id, job_d.slot, job_d.token, from, 0, op, b, NB_D,
	       seq, NV, EXP_D);
}

static int store_d_ok(void)
{
	struct rinx_ps_block a;
	__u32 b, k;
	int i;

	for (b = 0; b < NB_D; b++) {
		k = RINX_PS_KEY(job_d.slot, b);
		if (bpf_map_lookup_elem(store_fd, &k, &a) || a.exp != EXP_D)
			return 0;
		for (i = 0; i < NV; i++)
			if (a.v[i] != model_d[b][i]) {
				tap_diag("job D block %u value %d: %d, want "
					 "%lld", b, i, a.v[i],
					 (long long)model_d[b][i]);
				return 0;
			}
	}
	return 1;
}

static void big(void)
{
	__u64 d[RINX_STAT_MAX];
	struct rinx_hdr *h;
	int ret, ok = 1, i;
	__u16 w;
	__u32 b;

	for (w = 1; w <= 3 && ok; w++)
		for (b = 0; b < NB_D && ok; b++) {
			frame_d(f, w, RINX_PS_PUSH, b, 1);
			for (i = 0; i < NV; i++) {
				vals(f)[i] = w * 1000 - (int)b * 7 + i;
				model_d[b][i] += vals(f)[i];
			}
			ret = run(f, d);
			h = (struct rinx_hdr *)(out + TF_OFF_HDR);
			ok = ret == XDP_TX && only(d, RINX_STAT_PS_PUSH, -1) &&
			     h->step == RINX_PS_ACK;
			if (!ok)
				tap_diag("worker %u block %u: action %d, op %u",
					 w, b, ret, h->step);
		}
	tap_ok(ok, "store of %d blocks in a window of %d: every worker's "
	       "push into every block added and acknowledged", NB_D, WINDOW);
	tap_ok(store_d_ok(), "every block holds its first values and the "
	       "three pushes, exactly");
	for (b = WINDOW; b < NB_D && ok; b++) {
		frame_d(f, 2, RINX_PS_PULL, b, 1);
		ret = run(f, d);
		h = (struct rinx_hdr *)(out + TF_OFF_HDR);
		ok = ret == XDP_TX && only(d, RINX_STAT_PS_PULL, -1) &&
		     h->step == RINX_PS_VALUE &&
		     (__s16)ntohs(h->exp) == EXP_D;
		for (i = 0; ok && i < NV; i++)
			ok = vals(out)[i] == model_d[b][i];
	}
	tap_ok(ok, "pulls of the blocks past the window: the stored values");
	frame_d(f, 1, RINX_PS_PUSH, NB_D, 2);
	ret = run(f, d);
	tap_ok(ret == XDP_DROP && only(d, RINX_STAT_DROP_BOUNDS, -1) &&
	       store_d_ok(), "push past the store's %d blocks: DROP_BOUNDS",
	       NB_D);
}

int main(void)
{
	int err;

	if (geteuid())
		tap_skip_all("needs root (BPF_PROG_TEST_RUN)");
	if (!getenv("RINX_TEST_VERBOSE"))
		libbpf_set_print(NULL);
	skel = host_bpf__open();
	if (!skel)
		tap_skip_all("cannot open the host skeleton: %s",
			     strerror(errno));
	tap_plan(2 + SERVER_CHECKS + WORKER_CHECKS + CONC_CHECKS + BIG_CHECKS);
	skel->rodata->rinx_port_be = htons(PORT);
	skel->rodata->rinx_window = WINDOW;
	err = bpf_map__set_max_entries(skel->maps.share, NSLOTS * WINDOW);
	err = err ?: bpf_map__set_max_entries(skel->maps.result,
					      NSLOTS * WINDOW);
	err = err ?: bpf_map__set_max_entries(skel->maps.partial,
					      NSLOTS * WINDOW);
	err = err ?: bpf_map__set_max_entries(skel->maps.aggs, NSLOTS * WINDOW);
	err = err ?: host_bpf__load(skel);
	tap_ok(!err, "load rinx_host (window %d)", WINDOW);
	if (err)
		return tap_done();
	prog_fd = bpf_program__fd(skel->progs.rinx_host);
	stats_fd = bpf_map__fd(skel->maps.stats);
	store_fd = bpf_map__fd(skel->maps.store);
	conf_fd = bpf_map__fd(skel->maps.psconf);
	ncpus = libbpf_num_possible_cpus();
	if (!tap_ok(ncpus > 0 && !setup(), "set up four jobs and stores"))
		return tap_done();
	server();
	worker();
	concurrent();
	big();
	host_bpf__destroy(skel);
	return tap_done();
}
