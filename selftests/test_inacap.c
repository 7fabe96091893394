// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The aggregation capacity of an INA switch (bpf/ina_cap.bpf.h), through
 * BPF_PROG_TEST_RUN of the switch program, table-driven. One switch with
 * an aggregator at M_AGG holds one job whose one contributor (node 0)
 * completes a slot, which then goes on to node 1, behind port hx0 (a
 * veth in a private network namespace); frames come in by lo:
 *
 *    node 0 --lo--> [ ina_cap queue -> aggregator ] --hx0--> node 1
 *
 * Every case writes the capacity (rate, buffer, mark threshold) and the
 * queue's backlog into `ina_cap`, with a last drain time ahead of now (no
 * drain: the arithmetic is exact) or long past (drained empty), runs one
 * frame, and checks the verdict, exactly which switch counters moved,
 * the backlog and the admitted frames after, and the ECN bits of what
 * leaves. Frames the aggregator is not to sum (a NACK, a wrong token,
 * another host's frame) must not take capacity; a partial sum (REDUCE)
 * must, as a contribution does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "selftests/lib/testlib.h"
#include "uapi/rinx.h"
#include "bpf/switch_kern_user.h"
#include "switch.skel.h"

#define WINDOW		4
#define JOB		7
#define TOKEN		0x70c0ffee00005eedULL
#define LEN		RINX_FRAME_MAX
#define WIRE		(LEN + RINX_SW_WIRE_EXTRA)
#define IF_LO		1

extern char **environ;

static const __u8 M_AGG[6] = { 0x02, 0x72, 0x78, 0xfe, 0x01, 0x01 };
static const __u8 M_W0[6] = { 0x02, 0x72, 0x78, 0x00, 0x01, 0x01 };
static const __u8 M_NEXT[6] = { 0x02, 0x72, 0x78, 0x00, 0x02, 0x01 };
static const __u32 ips[3] = { 0x0a470101, 0x0a470201, 0x0a4701fe };

enum { DST_AGG, DST_NEXT };
enum { IDLE_NO, IDLE_LONG };

struct cap_case {
	const char *desc;
	__u32 rate, buffer, ecn;	/* the capacity (0 rate: none) */
	__u32 backlog;			/* bytes queued before the frame */
	int idle;			/* IDLE_LONG: drained since */
	__u8 type;			/* RINX_T_* */
	int ect;			/* the frame is ECT(0) */
	int bad_token;
	int dst;			/* DST_AGG or another host */
	int verdict;
	int stat, stat2;		/* switch counters that move (-1) */
	__u32 backlog_after;		/* bytes */
	int admitted;			/* n_frames moved by one */
	int ce_out;			/* the output carries CE */
};

#define CAP	100, 10000, 5000	/* Mbit/s, buffer, mark threshold */

static const struct cap_case cases[] = {
	{ "no capacity set: summed and counted, no queue", 0, 0, 0, 0,
	  IDLE_NO, RINX_T_CONTRIB, 1, 0, DST_AGG, XDP_REDIRECT,
	  RINX_SW_INA_FWD, -1, 0, 1, 0 },
	{ "empty queue: summed, not marked", CAP, 0, IDLE_NO, RINX_T_CONTRIB,
	  1, 0, DST_AGG, XDP_REDIRECT, RINX_SW_INA_FWD, -1, WIRE, 1, 0 },
	{ "backlog up to the threshold exactly: summed, not marked", CAP,
	  5000 - WIRE, IDLE_NO, RINX_T_CONTRIB, 1, 0, DST_AGG, XDP_REDIRECT,
	  RINX_SW_INA_FWD, -1, 5000, 1, 0 },
	{ "backlog past the threshold: summed, the sum leaves with CE", CAP,
	  2000, IDLE_NO, RINX_T_CONTRIB, 1, 0, DST_AGG, XDP_REDIRECT,
	  RINX_SW_INA_FWD, RINX_SW_CAP_MARK, 2000 + WIRE, 1, 1 },
	{ "past the threshold, not ECT: summed unmarked", CAP, 2000, IDLE_NO,
	  RINX_T_CONTRIB, 0, 0, DST_AGG, XDP_REDIRECT, RINX_SW_INA_FWD, -1,
	  2000 + WIRE, 1, 0 },
	{ "fills the buffer exactly: summed (marked)", CAP, 10000 - WIRE,
	  IDLE_NO, RINX_T_CONTRIB, 1, 0, DST_AGG, XDP_REDIRECT,
	  RINX_SW_INA_FWD, RINX_SW_CAP_MARK, 10000, 1, 1 },
	{ "one byte beyond the buffer: dropped, counted, nothing summed", CAP,
	  10000 - WIRE + 1, IDLE_NO, RINX_T_CONTRIB, 1, 0, DST_AGG, XDP_DROP,
	  RINX_SW_CAP_DROP, -1, 10000 - WIRE + 1, 0, 0 },
	{ "a partial sum (reduce) beyond the buffer: dropped like a share",
	  CAP, 10000, IDLE_NO, RINX_T_REDUCE, 1, 0, DST_AGG, XDP_DROP,
	  RINX_SW_CAP_DROP, -1, 10000, 0, 0 },
	{ "full queue idle since long: drained, summed", CAP, 10000,
	  IDLE_LONG, RINX_T_CONTRIB, 1, 0, DST_AGG, XDP_REDIRECT,
	  RINX_SW_INA_FWD, -1, WIRE, 1, 0 },
	{ "full queue: a NACK takes no capacity (answered: a pull of the "
	  "asker's share, which its slot lacks)", CAP, 10000, IDLE_NO,
	  RINX_T_NACK, 1, 0, DST_AGG, XDP_REDIRECT, RINX_SW_INA_FWD, -1,
	  10000, 0, 0 },
	{ "full queue: a wrong token takes no capacity", CAP, 10000, IDLE_NO,
	  RINX_T_CONTRIB, 1, 1, DST_AGG, XDP_DROP, RINX_SW_INA_DROP, -1,
	  10000, 0, 0 },
	{ "full queue: another host's frame is switched, no capacity", CAP,
	  10000, IDLE_NO, RINX_T_CONTRIB, 1, 0, DST_NEXT, XDP_REDIRECT,
	  RINX_SW_FWD, -1, 10000, 0, 0 },
};

#define NCASES	((int)(sizeof(cases) / sizeof(cases[0])))

static int put(int fd, const void *k, const void *v)
{
	return bpf_map_update_elem(fd, k, v, BPF_ANY) ? -errno : 0;
}

/* The job: node 0's contribution completes a slot, which goes on to node 1
 * as a reduce frame. */
static int tables(struct switch_bpf *skel, __u32 out)
{
	struct rinx_job job = {
		.token = TOKEN, .slot = 0, .round = 1, .nblocks = 1,
		.nclasses = 1, .nnodes = 3, .self = 2,
		.dtype = RINX_W_INT32, .window = WINDOW, .plen = 1,
		.bval = RINX_BLOCK_VALUES,
	};
	struct rinx_hop hop = {
		.action = RINX_A_AGG_FWD, .to = 1, .out_step = 1,
		.rack = RINX_NO_RACK, .mask = 1,
	};
	struct bpf_devmap_val dv = { .ifindex = out };
	struct rinx_sw_port p = { .port = out };
	__u32 jid = JOB, k = RINX_HOP_INDEX(0, 0, RINX_T_CONTRIB), n;
	const __u8 *macs[3] = { M_W0, M_NEXT, M_AGG };
	__u64 mk = tl_mac_key(M_NEXT);
	int err;

	err = put(bpf_map__fd(skel->maps.jobs), &jid, &job);
	err = err ?: put(bpf_map__fd(skel->maps.hops), &k, &hop);
	for (n = 0; n < 3 && !err; n++) {
		struct rinx_node nd = { .rack = RINX_NO_RACK,
					.ip = htonl(ips[n]) };

		memcpy(nd.mac, macs[n], 6);
		err = put(bpf_map__fd(skel->maps.nodes), &n, &nd);
	}
	err = err ?: put(bpf_map__fd(skel->maps.ports), &out, &dv);
	err = err ?: put(bpf_map__fd(skel->maps.macs), &mk, &p);
	mk = tl_mac_key(M_W0);	/* the answer to a NACK of node 0 */
	return err ?: put(bpf_map__fd(skel->maps.macs), &mk, &p);
}

/* A frame of node 0, block 0 of round `round`, int32 values. */
static void frame(__u8 *b, const struct cap_case *c, __u32 round)
{
	__u64 token = c->bad_token ? TOKEN ^ 1 : TOKEN;
	__u32 ip, i;

	memset(b, 0, LEN);
	memcpy(b, c->dst == DST_AGG ? M_AGG : M_NEXT, 6);
	memcpy(b + 6, M_W0, 6);
	b[12] = 0x08;
	b[14] = 0x45;
	b[15] = c->ect ? 0x02 : 0;		/* ECT(0) */
	b[16] = (LEN - 14) >> 8;
	b[17] = (LEN - 14) & 0xff;
	b[22] = 64;
	b[23] = 17;				/* UDP */
	ip = htonl(ips[0]);
	memcpy(b + 26, &ip, 4);
	ip = htonl(ips[2]);
	memcpy(b + 30, &ip, 4);
	b[36] = RINX_DEFAULT_PORT >> 8;
	b[37] = RINX_DEFAULT_PORT & 0xff;
	b[42] = 'R', b[43] = 'I', b[44] = 'N', b[45] = 'X';
	b[46] = RINX_VERSION;
	b[47] = c->type;
	b[53] = JOB;
	for (i = 0; i < 8; i++)
		b[54 + i] = (__u8)(token >> (56 - 8 * i));
	for (i = 0; i < 4; i++)
		b[62 + i] = (__u8)(round >> (24 - 8 * i));
	b[73] = 1;				/* nblocks */
	b[76] = RINX_BLOCK_VALUES >> 8;		/* count */
	b[77] = RINX_BLOCK_VALUES & 0xff;
	b[83] = RINX_W_INT32;
	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		memcpy(b + RINX_FRAME_HDR_LEN + 4 * i, &i, 4);
}

static int set_cap(struct switch_bpf *skel, const struct cap_case *c)
{
	struct rinx_sw_link v = {};
	__u32 k = RINX_SW_CAP_KEY;

	v.set.rate_mbit = c->rate;
	v.set.buffer = c->buffer;
	v.set.ecn = c->ecn;
	v.backlog = (__u64)c->backlog * RINX_SW_Q_UNIT;
	/* ahead of now: no drain; 1: drained, whatever it held */
	v.last_ns = c->idle == IDLE_LONG ? 1 : ~0ULL >> 1;
	return put(bpf_map__fd(skel->maps.ina_cap), &k, &v);
}

static int run(struct switch_bpf *skel, const struct cap_case *c,
	       __u32 round)
{
	__u8 in[LEN], out[LEN + 64];
	__u64 before[RINX_SW_STAT_MAX], after[RINX_SW_STAT_MAX];
	struct rinx_sw_link q;
	struct xdp_md ctx = { .data_end = LEN, .ingress_ifindex = IF_LO };
	int fd = bpf_map__fd(skel->maps.sw_stats), i, ok = 1;
	__u32 k = RINX_SW_CAP_KEY;

	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = LEN,
		    .data_out = out, .data_size_out = sizeof(out),
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);

	frame(in, c, round);
	if (set_cap(skel, c) || tl_percpu_sum(fd, RINX_SW_STAT_MAX, before) ||
	    bpf_prog_test_run_opts(bpf_program__fd(skel->progs.rinx_switch),
				   &o) ||
	    tl_percpu_sum(fd, RINX_SW_STAT_MAX, after) ||
	    bpf_map_lookup_elem(bpf_map__fd(skel->maps.ina_cap), &k, &q))
		return tap_ok(0, "%s: test run: %s", c->desc, strerror(errno));
	for (i = 0; i < RINX_SW_STAT_MAX; i++) {
		__u64 want = before[i] + (i == c->stat) + (i == c->stat2);

		if (after[i] != want) {
			tap_diag("counter %d: %llu, want %llu", i,
				 (unsigned long long)after[i],
				 (unsigned long long)want);
			ok = 0;
		}
	}
	if (o.retval != (__u32)c->verdict) {
		tap_diag("verdict %u, want %d", o.retval, c->verdict);
		ok = 0;
	}
	if (q.backlog != (__u64)c->backlog_after * RINX_SW_Q_UNIT ||
	    q.n_frames != (__u64)c->admitted) {
		tap_diag("backlog %llu B, admitted %llu; want %u B, %d",
			 (unsigned long long)(q.backlog / RINX_SW_Q_UNIT),
			 (unsigned long long)q.n_frames, c->backlog_after,
			 c->admitted);
		ok = 0;
	}
	if (c->verdict == XDP_REDIRECT &&
	    (o.data_size_out < 16 || ((out[15] & 3) == 3) != c->ce_out)) {
		tap_diag("ECN bits out %u, want CE %d", out[15] & 3, c->ce_out);
		ok = 0;
	}
	return tap_ok(ok, "%s", c->desc);
}

int main(void)
{
	char *add[] = { "ip", "link", "add", "hx0", "type", "veth", "peer",
			"name", "hx1", NULL };
	struct switch_bpf *skel;
	int i;
	__u32 out;

	tl_needs_root("BPF_PROG_TEST_RUN, network namespace");
	tl_unshare_net();
	if (tl_ip(add) || !(out = if_nametoindex("hx0")))
		tap_skip_all("cannot create a veth pair (ip link add)");
	tap_plan(2 + NCASES);
	skel = switch_bpf__open();
	if (skel) {
		memcpy((void *)skel->rodata->ina_mac, M_AGG, 6);
		skel->rodata->ina_window = WINDOW;
		if (bpf_map__set_max_entries(skel->maps.aggs,
					     RINX_DEFAULT_JOBS * WINDOW) ||
		    switch_bpf__load(skel)) {
			switch_bpf__destroy(skel);
			skel = NULL;
		}
	}
	if (!tap_ok(skel != NULL, "switch program with an aggregator loads")) {
		tap_diag("%s", strerror(errno));
		return tap_done();
	}
	tap_ok(!tables(skel, out), "job, nodes, ports and MAC table written");
	/* a round per case: each admitted share completes a fresh slot */
	for (i = 0; i < NCASES; i++)
		run(skel, &cases[i], 2 + i);
	switch_bpf__destroy(skel);
	return tap_done();
}
