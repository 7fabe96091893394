// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Congestion feedback and pacing in the host program, through
 * BPF_PROG_TEST_RUN: a gather that ends at this host is stored, counted in
 * the job's cursor (stored, and marked when it arrived with CE) and turned
 * into the next own block unless the pacer holds it back.
 *
 * One job, a ring of 4 nodes seen from node 1: class 3's gather ends here
 * (STORE_END from node 0, step 2); this node starts class 1, so its j-th own
 * block is block 4j + 1, sent to node 2. Each case sets the cursor (pacer
 * gap and next departure), runs one gather frame and checks the action, the
 * counters, the cursor and the frame that leaves.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uapi/rinx.h"
#include "user/ctl.h"
#include "host.skel.h"
#include "selftests/lib/testlib.h"

#define WINDOW		16
#define PORT		47124
#define JOB		0x0c0ffee1
#define TOKEN		0x51d3c0de7e57c0deULL
#define SLOT		0
#define ROUND		7
#define NBLOCKS		12
#define SELF		1
#define NNODES		4
#define OFF_IP		14
#define OFF_HDR		42

static int prog_fd, stats_fd, cursors_fd, share_fd, result_fd;
static __u8 fin[RINX_FRAME_MAX], fout[RINX_FRAME_MAX + 256];

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void node_of(int id, struct rinx_node *n)
{
	memset(n, 0, sizeof(*n));
	n->mac[0] = 0x02;
	n->mac[5] = 0x10 + id;
	n->ip = htonl(0x0a630000 + id + 1);	/* 10.99.0.<id+1> */
	n->rack = RINX_NO_RACK;
}

/* The gather of block 3 (class 3) from node 0, step 2, ECN field tos. */
static void build_gather(__u8 tos)
{
	struct rinx_node from, self;
	struct rinx_hdr *h;
	__s32 *v = (__s32 *)(fin + RINX_FRAME_HDR_LEN);
	int i;

	node_of(0, &from);
	node_of(SELF, &self);
	h = tl_frame(fin, sizeof(fin), &(struct tl_addr){
		.dst_mac = self.mac, .src_mac = from.mac, .saddr = from.ip,
		.daddr = self.ip, .tos = tos, .port = PORT, .no_df = true,
	});
	tl_hdr_put(h, &(struct tl_hdr){
		.type = RINX_T_GATHER, .step = 2, .job = JOB, .token = TOKEN,
		.round = ROUND, .block = 3, .nblocks = NBLOCKS, .sender = 0,
		.count = RINX_BLOCK_VALUES, .klass = 3, .dtype = RINX_W_FIXED,
	});
	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		v[i] = i * 3 - 1000;
}

static int setup(struct host_bpf *skel)
{
	struct rinx_job j = {
		.token = TOKEN, .slot = SLOT, .round = ROUND,
		.nblocks = NBLOCKS, .last_count = RINX_BLOCK_VALUES,
		.nclasses = NNODES, .nnodes = NNODES, .self = SELF,
		.qbits = 28, .dtype = RINX_W_FIXED, .window = WINDOW,
		.plen = NNODES, .nown = 1, .bval = RINX_BLOCK_VALUES,
	};
	struct rinx_hop end = { .action = RINX_A_STORE_END, .step = 2,
				.from = 0 };
	struct rinx_slot sh = { .round = ROUND, .count = RINX_BLOCK_VALUES,
				.exp = 5 };
	int i, err = 0;
	__u32 k;

	/* ring classes; this node starts class SELF, sending it to node 2 */
	for (i = 0; i < NNODES; i++)
		j.cmap[i] = i;
	j.own[0] = SELF;
	memset(j.start_to, 0xff, sizeof(j.start_to));
	j.start_to[SELF] = 2;
	j.start_type[SELF] = RINX_T_REDUCE;
	k = JOB;
	err |= bpf_map_update_elem(bpf_map__fd(skel->maps.jobs), &k, &j, 0);
	for (i = 0; i < NNODES; i++) {
		struct rinx_node n;

		node_of(i, &n);
		k = SLOT * RINX_MAX_NODES + i;
		err |= bpf_map_update_elem(bpf_map__fd(skel->maps.nodes), &k,
					   &n, 0);
	}
	k = RINX_HOP_INDEX(SLOT, 3, RINX_T_GATHER);
	err |= bpf_map_update_elem(bpf_map__fd(skel->maps.hops), &k, &end, 0);
	/* the own blocks 1, 5, 9 have their shares */
	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		sh.v[i] = 7 * i;
	for (k = SELF; k < NBLOCKS; k += NNODES)
		err |= bpf_map_update_elem(share_fd, &k, &sh, 0);
	return err ? -EIO : 0;
}

static int counters(__u64 out[RINX_STAT_MAX])
{
	return tl_percpu_sum(stats_fd, RINX_STAT_MAX, out);
}

struct tcase {
	const char *name;
	__u8 tos;		/* ECN field of the arriving gather */
	__u32 gap_ns;		/* pacer */
	__s64 next_rel;		/* next departure - now; INT64_MIN: 0 */
	bool recycled;		/* the next own block leaves */
	bool unwritten;		/* its share is not written yet */
};

static const struct tcase cases[] = {
	{ "unpaced, ECT(0): stored, counted, recycled", RINX_ECN_ECT0, 0, 0,
	  true, false },
	{ "unpaced, CE: counted as marked, the new block leaves as ECT(0)",
	  RINX_ECN_CE, 0, 0, true, false },
	{ "not ECN-capable: stored, not marked, recycled", 0, 0, 0, true, false },
	{ "paced, departure 10 s ahead: held back (PACED), stored",
	  RINX_ECN_ECT0, 1000000, 10000000000ll, false, false },
	{ "paced, CE, departure ahead: held back, marked", RINX_ECN_CE,
	  1000000, 10000000000ll, false, false },
	{ "paced, idle since long: leaves, departure = now - burst + gap",
	  RINX_ECN_ECT0, 1000000, INT64_MIN, true, false },
	{ "paced, departure just passed: leaves, departure += gap",
	  RINX_ECN_ECT0, 1000000, -1000, true, false },
	{ "unpaced, the next own block's share not written yet: not "
	  "claimed (the trainer sends it)", RINX_ECN_ECT0, 0, 0, false,
	  true },
	{ "paced and due, share not written yet: not claimed, the pacer "
	  "untouched", RINX_ECN_ECT0, 1000000, -1000, false, true },
};

/* the checks run_case makes of T: test run, action, counters, cursor,
 * departure, and the frame that leaves when a block is recycled */
static int case_checks(const struct tcase *t)
{
	return 5 + t->recycled;
}

static void run_case(const struct tcase *t)
{
	struct rinx_cursor cur = { .round = ROUND }, after;
	const struct rinx_hdr *h = (const struct rinx_hdr *)(fout + OFF_HDR);
	__u64 c0[RINX_STAT_MAX], c1[RINX_STAT_MAX], t0, t1, lo, hi;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = fin,
		    .data_size_in = RINX_FRAME_MAX, .data_out = fout,
		    .data_size_out = sizeof(fout), .repeat = 1);
	bool ce = t->tos == RINX_ECN_CE, ok;
	__u32 k = SLOT, want;
	int err, i;

	build_gather(t->tos);
	/* the gather's first pass here this round (a ring hop drops what
	 * it passed on already) */
	for (i = 0; i < RINX_DEFAULT_JOBS * WINDOW; i++) {
		struct rinx_slot z = { 0 };
		__u32 key = (__u32)i;

		if (bpf_map_update_elem(result_fd, &key, &z, 0))
			tap_diag("result %d: cannot clear", i);
	}
	{
		/* the own block 1 (class SELF): its share of this round, or
		 * of the round before (the trainer converts while the first
		 * blocks travel) */
		struct rinx_slot sh;
		__u32 b = SELF;

		if (bpf_map_lookup_elem(share_fd, &b, &sh) ||
		    (sh.round = t->unwritten ? ROUND - 1 : ROUND,
		     bpf_map_update_elem(share_fd, &b, &sh, 0)))
			tap_diag("share %u: cannot set", b);
	}
	cur.gap_ns = t->gap_ns;
	cur.stored = 100;
	cur.marked = 10;
	t0 = mono_ns();
	cur.next_ns = t->next_rel == INT64_MIN ? 0 : t0 + t->next_rel;
	err = bpf_map_update_elem(cursors_fd, &k, &cur, 0);
	err = err ?: counters(c0);
	err = err ?: (bpf_prog_test_run_opts(prog_fd, &o) ? -errno : 0);
	t1 = mono_ns();
	err = err ?: counters(c1);
	err = err ?: (bpf_map_lookup_elem(cursors_fd, &k, &after) ? -errno : 0);
	if (!tap_ok(!err, "%s: test run", t->name))
		return;
	tap_ok(o.retval == (t->recycled ? XDP_TX : XDP_DROP),
	       "%s: action %u", t->name, o.retval);
	ok = true;
	for (i = 0; i < RINX_STAT_MAX; i++) {
		__u64 w = i == RINX_STAT_RX || i == RINX_STAT_GATHER_END ||
			  (i == RINX_STAT_RECYCLED && t->recycled) ||
			  (i == RINX_STAT_PACED && !t->recycled &&
			   !t->unwritten) ||
			  (i == RINX_STAT_ECN_CE && ce);

		if (c1[i] - c0[i] != w) {
			tap_diag("  %s: +%llu, want +%llu", rinx_stat_name(i),
				 (unsigned long long)(c1[i] - c0[i]),
				 (unsigned long long)w);
			ok = false;
		}
	}
	tap_ok(ok, "%s: counters", t->name);
	tap_ok(after.stored == 101 && after.marked == 10u + ce &&
	       after.next == (t->recycled ? 1u : 0u) &&
	       after.round == ROUND && after.gap_ns == t->gap_ns,
	       "%s: cursor stored %llu marked %llu next %u", t->name,
	       (unsigned long long)after.stored,
	       (unsigned long long)after.marked, after.next);
	/* the pacer's departure: untouched when held back or unpaced; else
	 * max(old, now - RINX_PACE_BURST gaps) + one gap, now in [t0, t1] */
	if (!t->gap_ns || !t->recycled) {
		lo = hi = cur.next_ns;
	} else if (t->next_rel == INT64_MIN) {
		lo = t0 - RINX_PACE_BURST * (__u64)t->gap_ns + t->gap_ns;
		hi = t1 - RINX_PACE_BURST * (__u64)t->gap_ns + t->gap_ns;
	} else {
		lo = hi = cur.next_ns + t->gap_ns;
	}
	tap_ok(after.next_ns >= lo && after.next_ns <= hi,
	       "%s: next departure %+lld ns from the start (want %+lld..%+lld)",
	       t->name, (long long)(after.next_ns - t0), (long long)(lo - t0),
	       (long long)(hi - t0));
	if (!t->recycled)
		return;
	/* the block that leaves: own block 1 of class 1 to node 2, a new
	 * frame for congestion purposes (ECT(0), however the gather came) */
	want = 1;
	tap_ok(h->type == RINX_T_REDUCE && ntohl(h->block) == want &&
	       ntohs(h->klass) == SELF && h->step == 0 &&
	       (fout[OFF_IP + 1] & RINX_ECN_MASK) == RINX_ECN_ECT0 &&
	       fout[5] == 0x12,
	       "%s: the own block leaves (block %u, ECN %u)", t->name,
	       ntohl(h->block), fout[OFF_IP + 1] & RINX_ECN_MASK);
}

int main(void)
{
	struct host_bpf *skel;
	size_t i;
	int err, plan = 2;

	tl_needs_root("BPF_PROG_TEST_RUN");
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		plan += case_checks(&cases[i]);
	tap_plan(plan);
	skel = tl_host_load(&(struct tl_host_opts){
		.port = PORT, .window = WINDOW,
		.nshare = RINX_DEFAULT_JOBS * WINDOW,
		.npartial = RINX_DEFAULT_JOBS * WINDOW,
	}, &err);
	if (!ASSERT_OK(err, "load rinx_host"))
		return tap_done();
	prog_fd = bpf_program__fd(skel->progs.rinx_host);
	stats_fd = bpf_map__fd(skel->maps.stats);
	cursors_fd = bpf_map__fd(skel->maps.cursors);
	share_fd = bpf_map__fd(skel->maps.share);
	result_fd = bpf_map__fd(skel->maps.result);
	if (tap_ok(!setup(skel), "job, ring of 4, shares of the own blocks"))
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			run_case(&cases[i]);
	host_bpf__destroy(skel);
	return tap_done();
}
