// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Differential test of the hop: the host program (bpf/host.bpf.c, run
 * through BPF_PROG_TEST_RUN) against the slow path's handler for a frame
 * (user/comm/slow.c, rinx_c_slow_frame), on identical tables.
 *
 * Cluster (8 hosts, one ToR aggregator), every plan built from it by
 * rinx_plan_build, each plan installed for every host in turn:
 *
 *   rack 0, ina=agent: h0 h1 h2     (h0 aggregates for the rack)
 *   rack 1, ina=switch: h3 h4 h5    (node 8, the ToR, aggregates)
 *   rack 2, ina=none: h6 h7
 *   plans: ring rina ps ps:2 ps-ina ps-ina:2 har tree dbtree, with
 *   full-size blocks (768 values); the ring with jumbo blocks too (2,048
 *   values: frames of 8,288 bytes, several buffers in XDP, the payload
 *   straddling the linear part and a fragment; a block over three slots of
 *   every map, which the handler's mirror of the hop continues alike), and
 *   ring and rina with the 352-value blocks of an MTU of 1,500
 *
 * The frames a host sees in a round are generated from the plans of all
 * the nodes (every share started towards it, every partial sum and gather
 * another node's hop emits towards it or into a group it is in), with
 * random payloads, exponents (all-zero blocks, far ones), flags and ECN
 * marks, int32 and float rounds, full and short last blocks, and random
 * cover fields (which count nowhere but below). A hop that sums coverages
 * (ps-ina's server) gets the frames of its aggregator (the ToR) as the
 * ToR's pool would send them: the rack's whole sum, or the rack split at
 * random into shares passed on alone (a collision in the pool) and
 * partial sums (flushed by a share sent again), each frame with its
 * coverage. A trial feeds them in a random order that keeps causality (a
 * block's gather after its reduce), with duplicates (some sent again after
 * the block's gather went by), stale and far rounds, wrong senders (node
 * id, address, step), bad coverages (0, beyond the contributors, one that
 * overlaps another frame's), frames of another block size (cut short, a
 * jumbo chain among them, or padded to a larger size) and malformed frames
 * mixed in, to two loaded
 * instances of the host program with the same tables:
 *
 *   A  the trainer is ready: its share of the round is written before the
 *      frames arrive; XDP finishes nearly everything, and what it hands up
 *      goes to A's handler at once;
 *   B  the trainer is late: the job entry and the shares are still those of
 *      the round before, so XDP hands up every hop that needs the round
 *      (SLOW_FUTURE) or the share (SLOW_SELF: an aggregation whose
 *      contributors are all in, and every duplicate into it meanwhile); at
 *      a random point of the sequence the trainer opens the round and B's
 *      handler drains what was handed up, in arrival order, as the slow
 *      path does; later frames see B's XDP with the round open.
 *
 * Per frame, what A did must be what B did: the same frame sent (every
 * header field and the payload, byte for byte), nothing sent, consumed into
 * a slot, or dropped (for the same counter when both dropped in XDP); when
 * both finished it in XDP the counter deltas must be equal too. After the
 * sequence: the result map, the aggregator slots (read with BPF_F_LOCK) and
 * the job's cursor counts (finished blocks stored, those marked CE) must be
 * equal. Every plan frame must be taken by the host's tables (a bad frame
 * that took a contributor's place may make it a duplicate or an overlap).
 *
 * Then the handler alone ("direct"): after the round's aggregations, run
 * by XDP on both, every frame of a single-sender hop (add, store,
 * multicast) and every bad frame goes to A's XDP and straight to the
 * handler of a third instance C with the round open, bypassing C's XDP;
 * both must do the same, frame by frame and in the maps (a multicast keeps
 * its block in the slot), and the handler must drop what XDP drops without
 * failing the call. Aggregations, the handler alone: C's trainer late,
 * its XDP leaves every slot waiting for the share; then every bad copy of
 * a contribution that XDP refuses goes straight to C's handler, which must
 * refuse it and leave the slot waiting, also when the slot lacks part of
 * the coverage of the frame it handed up; the handler completes the slots
 * from what XDP handed up as A's XDP completed them.
 *
 * At the end, four checks that the comparisons went through every path:
 * every action of the tables finished by XDP and by the handler, the same
 * for the ring's four hops at every block size (and frames of another size
 * refused by XDP), the
 * coverage paths (whole and partial coverages taken, duplicates, overlaps
 * and bad coverages refused, by XDP and by the handler), and the handler's
 * answers to a duplicate into a slot it completed (the sum sent again, the
 * finished block answered to the worker).
 *
 * Differences by design, checked as such:
 *  - the handler does not aggregate: an aggregation's frame reaches it only
 *    as the sum of a slot that waits for the trainer's share (pend), or as a
 *    duplicate into it, which it completes or answers (the handoff above);
 *    direct mode gives the handler no good contribution but the sums XDP
 *    handed up (and bad ones, which it must refuse);
 *  - rounds: XDP hands up the next round (it drops any later one, and
 *    aggregations take the next round's shares); the handler keeps any
 *    later round for when it opens (direct: "round two ahead");
 *  - a frame whose size disagrees with the round is handed up by XDP, and
 *    the handler fails the call with -EMSGSIZE naming the sender (direct);
 *  - counters: the handler has none (the slow path counts what it
 *    finished); a frame dropped by the handler is compared by outcome;
 *  - recycling (a gather that ends here turned into this host's next own
 *    block) is XDP's alone, the trainer's sender does it in user space: the
 *    cursors stay closed here (test_host covers recycling).
 *
 *   test_diff [builddir [seed]]
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uapi/rinx.h"
#include "user/comm/comm.h"
#include "user/ctl.h"
#include "user/plan/plan.h"
#include "host.skel.h"
#include "selftests/lib/testlib.h"

#define W		12	/* window: slots per job slot (4 jumbo
				 * blocks) */
#define PORT		47431
#define SLOT		1
#define JOB		0x00d1ff01
#define TOKEN		0xdeadbeef5ca1ab1eULL
#define ROUND		0x1000	/* the round of every trial */
#define QBITS		27
#define NHOSTS		8
#define FMAX		RINX_FRAME_LEN(RINX_BLOCK_VALUES_JUMBO)
#define MAXF		1024	/* frames of one trial */
#define TRIALS		3	/* random orders per plan and host */

#define OFF_IP		14
#define OFF_HDR		42

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static int ncpus;
static __u64 rng = 0x9e3779b97f4a7c15ull;
/* The block size of the plan under test: values, map slots per block,
 * frame length (a jumbo block's frame has several buffers in XDP, and its
 * block continues over three slots of every map) */
static int bv = RINX_BLOCK_VALUES;
static __u32 bs = 1, flen = RINX_FRAME_MAX;

static __u32 rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (__u32)(rng >> 16);
}

/* ---- instances of the host program ---------------------------------------- */

struct inst {
	const char *name;
	struct host_bpf *s;
	int prog, jobs, nodes, hops, aggs, stats, xsk;
	struct rinx_slot *share, *result, *partial;
	struct rinx_cursor *cur;
	size_t slot_bytes, cur_bytes;
	struct rinx_comm *c;	/* its slow path's state */
	struct rinx_req req;
};

static void *map_mmap(struct bpf_map *m, size_t *bytes)
{
	size_t b = (size_t)bpf_map__max_entries(m) * bpf_map__value_size(m);
	void *p;

	b = (b + 4095) & ~(size_t)4095;
	p = mmap(NULL, b, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	*bytes = b;
	return p == MAP_FAILED ? NULL : p;
}

static int inst_open(struct inst *in, const char *name)
{
	__u32 q = 0;
	int err;

	in->name = name;
	in->s = tl_host_load(&(struct tl_host_opts){
		.port = PORT, .window = W, .nshare = RINX_DEFAULT_JOBS * W,
		.npartial = RINX_DEFAULT_JOBS * W,
		.naggs = RINX_DEFAULT_JOBS * W }, &err);
	if (err)
		return err;
	in->prog = bpf_program__fd(in->s->progs.rinx_host);
	in->jobs = bpf_map__fd(in->s->maps.jobs);
	in->nodes = bpf_map__fd(in->s->maps.nodes);
	in->hops = bpf_map__fd(in->s->maps.hops);
	in->aggs = bpf_map__fd(in->s->maps.aggs);
	in->stats = bpf_map__fd(in->s->maps.stats);
	in->share = map_mmap(in->s->maps.share, &in->slot_bytes);
	in->result = map_mmap(in->s->maps.result, &in->slot_bytes);
	in->partial = map_mmap(in->s->maps.partial, &in->slot_bytes);
	in->cur = map_mmap(in->s->maps.cursors, &in->cur_bytes);
	if (!in->share || !in->result || !in->partial || !in->cur)
		return -errno;
	/* an unbound AF_XDP socket in the XSKMAP: frames handed up are
	 * redirected (and counted as such) instead of dropped */
	in->xsk = socket(AF_XDP, SOCK_RAW, 0);
	if (in->xsk < 0 || bpf_map_update_elem(bpf_map__fd(in->s->maps.xsks),
					       &q, &in->xsk, BPF_ANY))
		return -errno;
	in->c = calloc(1, sizeof(*in->c));
	return in->c ? 0 : -ENOMEM;
}

static void inst_close(struct inst *in)
{
	if (in->share)
		munmap(in->share, in->slot_bytes);
	if (in->result)
		munmap(in->result, in->slot_bytes);
	if (in->partial)
		munmap(in->partial, in->slot_bytes);
	if (in->cur)
		munmap(in->cur, in->cur_bytes);
	if (in->xsk >= 0)
		close(in->xsk);
	free(in->c);
	host_bpf__destroy(in->s);
}

static int read_stats(const struct inst *in, __u64 *out)
{
	return tl_percpu_sum(in->stats, RINX_STAT_MAX, out);
}

/* ---- the round ------------------------------------------------------------ */

/* One round of a trial: the plans of every node and the shares of the host
 * under test. */
struct round {
	const char *plan_name;
	struct rinx_spec spec;
	struct rinx_plan pl[RINX_MAX_NODES];	/* every node's plan */
	int nnodes, self;
	__u32 nb, last;		/* blocks, values of the last block */
	__u16 dtype;
	int keep;		/* RINX_JOB_KEEP: ring hops keep partial sums */
	struct rinx_slot share[W];	/* by slot: a jumbo block in three */
};

static void make_spec(struct rinx_spec *s, int kind, int nps)
{
	static const int rack_of[NHOSTS] = { 0, 0, 0, 1, 1, 1, 2, 2 };
	int r;

	rinx_spec_init(s);
	s->port = PORT;
	s->window = W;
	s->plan = kind;
	s->plan_nps = nps;
	s->nhosts = NHOSTS;
	for (r = 0; r < NHOSTS; r++) {
		struct rinx_spec_host *h = &s->hosts[r];
		const __u8 mac[6] = { 0x02, 0x72, 0x78, 0x0d, 0, (__u8)(r + 1) };

		snprintf(h->name, sizeof(h->name), "h%d", r);
		h->rank = r;
		h->rack = rack_of[r];
		memcpy(h->mac, mac, 6);
		h->ip = htonl(0x0a0d0001 + r);
	}
	s->nracks = 3;
	for (r = 0; r < 3; r++) {
		snprintf(s->racks[r].name, sizeof(s->racks[r].name), "r%d", r);
		s->racks[r].id = r;
	}
	s->racks[0].ina = RINX_INA_AGENT;
	s->racks[1].ina = RINX_INA_SWITCH;
	memcpy(s->racks[1].mac, (__u8[6]){ 0x02, 0x72, 0x78, 0x0d, 1, 0xfe }, 6);
	s->racks[1].ip = htonl(0x0a0d01fe);
	s->racks[2].ina = RINX_INA_NONE;
	rinx_plan_spec(s);
}

/* The job entry of rd's host at `round`, as the library writes it (its
 * plan part as comm.c's plan_job). Cursors stay closed: no recycling. */
static void job_entry(const struct round *rd, __u32 round, struct rinx_job *j)
{
	const struct rinx_plan *p = &rd->pl[rd->self];
	int i, k;

	memset(j, 0, sizeof(*j));
	j->token = TOKEN;
	j->slot = SLOT;
	j->round = round;
	j->nblocks = rd->nb;
	j->last_count = rd->last;
	j->nclasses = p->nclasses;
	j->nnodes = p->nnodes;
	j->flags = rd->keep ? RINX_JOB_KEEP : 0;
	j->self = rd->self;
	j->qbits = QBITS;
	j->bval = (__u16)bv;
	j->dtype = rd->dtype;
	j->window = W;
	j->plen = p->plen;
	j->plan_id = rinx_plan_id(rd->spec.plan, rd->spec.plan_nps);
	memcpy(j->cmap, p->cmap, sizeof(j->cmap));
	for (k = 0; k < RINX_MAX_CLASSES; k++) {
		j->start_to[k] = p->start_to[k] >= 0 ? p->start_to[k] :
						       RINX_NO_SEND;
		j->start_type[k] = p->start_to[k] >= 0 ? p->start_type[k] : 0;
	}
	for (i = 0; i < p->plen; i++)
		if (j->start_to[p->cmap[i]] != RINX_NO_SEND)
			j->own[j->nown++] = i;
}

static void write_shares(struct inst *in, const struct round *rd, __u32 round)
{
	__u32 b;

	for (b = 0; b < W; b++) {
		struct rinx_slot *s = &in->share[SLOT * W + b];

		if (b < rd->nb * bs) {
			memcpy(s->v, rd->share[b].v, sizeof(s->v));
			s->exp = rd->share[b].exp;
			s->flags = rd->share[b].flags;
			s->count = rd->share[b].count;
		}
		__atomic_store_n(&s->round, b < rd->nb * bs ? round : 0,
				 __ATOMIC_RELEASE);
	}
}

/* Tables of rd's host into instance in: job entry at `round` (shares of
 * that round written), clean slots, results and cursor; its handler's
 * communicator with round ROUND open. */
static int install(struct inst *in, const struct round *rd, __u32 round)
{
	const struct rinx_plan *p = &rd->pl[rd->self];
	struct rinx_agg *zero = calloc(1, sizeof(*zero));
	struct rinx_comm *c = in->c;
	struct rinx_job j;
	__u32 key, k, t, jid = JOB;
	int err = 0, i;

	if (!zero)
		return -ENOMEM;
	for (i = 0; i < RINX_MAX_NODES; i++) {
		struct rinx_node n = {};

		if (i < p->nnodes)
			n = p->nodes[i];
		key = SLOT * RINX_MAX_NODES + i;
		err |= bpf_map_update_elem(in->nodes, &key, &n, BPF_ANY);
	}
	for (k = 0; k < RINX_MAX_CLASSES; k++)
		for (t = 1; t <= RINX_HOP_TYPES; t++) {
			struct rinx_hop h = {};

			if (k < (__u32)p->nclasses)
				h = p->hops[k][t - 1];
			key = RINX_HOP_INDEX(SLOT, k, t);
			err |= bpf_map_update_elem(in->hops, &key, &h, BPF_ANY);
		}
	for (k = 0; k < W; k++) {
		key = SLOT * W + k;
		err |= bpf_map_update_elem(in->aggs, &key, zero, BPF_ANY);
		memset(&in->result[key], 0, sizeof(in->result[key]));
		memset(&in->partial[key], 0, sizeof(in->partial[key]));
	}
	free(zero);
	memset(&in->cur[SLOT], 0, sizeof(in->cur[SLOT]));
	write_shares(in, rd, round);
	job_entry(rd, round, &j);
	err |= bpf_map_update_elem(in->jobs, &jid, &j, BPF_ANY);

	memset(c, 0, sizeof(*c));
	c->spec = rd->spec;
	c->rank = rd->self;
	c->n = rd->spec.nhosts;
	c->job = JOB;
	c->token = TOKEN;
	c->slot = SLOT;
	c->window = W;
	c->qbits = QBITS;
	c->bval = bv;
	c->bslots = bs;
	c->wblocks = W / bs;
	c->fd_aggs = in->aggs;
	c->fd_jobs = c->fd_nodes = c->fd_hops = c->fd_xsks = -1;
	c->tor_jobs_fd = -1;
	c->share = in->share;
	c->result = in->result;
	c->partial = in->partial;
	c->cursors = in->cur;
	c->plan = *p;
	job_entry(rd, ROUND, &c->jobent);
	c->round = ROUND;
	memset(&in->req, 0, sizeof(in->req));
	in->req.c = c;
	in->req.nb = rd->nb;
	in->req.last_count = rd->last;
	in->req.round_open = 1;
	c->active = &in->req;
	return err ? -EIO : 0;
}

/* The trainer of B opens the round: job entry and shares of ROUND. */
static int open_round(struct inst *in, const struct round *rd)
{
	struct rinx_job j;
	__u32 jid = JOB;

	write_shares(in, rd, ROUND);
	job_entry(rd, ROUND, &j);
	return bpf_map_update_elem(in->jobs, &jid, &j, BPF_ANY) ? -errno : 0;
}

/* ---- frames --------------------------------------------------------------- */

struct fr {
	__u8 b[FMAX];
	__u32 len;
	const char *what;	/* "plan", "dup", or the mutation */
	bool plan;		/* one of the plan's frames (or a duplicate) */
	bool agg;		/* for an aggregation hop of the host */
	bool via;		/* ... from one of its coverage aggregators */
	bool part;		/* ... covering part of its aggregator's */
	bool handed;		/* direct mode: XDP hands it up by design */
};

static struct rinx_comm fc;	/* frame_addr's view: node addresses */

static void random_payload(struct fr *f, __u16 dtype, __u32 cnt)
{
	__s32 *v = (__s32 *)(f->b + RINX_FRAME_HDR_LEN);
	struct rinx_hdr *h = (struct rinx_hdr *)(f->b + OFF_HDR);
	__u32 i, r = rnd() % 8;

	for (i = 0; i < (__u32)bv; i++)
		v[i] = i < cnt ? (__s32)(rnd() % (1u << QBITS)) -
				 (1 << (QBITS - 1)) : 0;
	h->exp = 0;
	h->flags = 0;
	if (dtype == RINX_W_FIXED) {
		/* neighbouring exponents, far ones, and all-zero blocks */
		__s16 e = r == 0 ? RINX_EXP_ZERO : r == 1 ? 40 :
			  (__s16)(rnd() % 7) - 3;

		if (e == RINX_EXP_ZERO)
			memset(v, 0, bv * 4);
		h->exp = htons((__u16)e);
		if (rnd() % 8 == 0)
			h->flags = 1u << (rnd() % 3);
	}
}

/* ECN CE on an IPv4 header, checksum fixed. */
static void mark_ce(__u8 *ip)
{
	ip[1] |= RINX_ECN_CE;
	ip_fix_csum(ip);
}

/* A frame from node `from` to node `to` of rd's cluster. */
static void build(struct fr *f, const struct round *rd, int from, int to,
		  int type, int step, __u32 round, __u32 block)
{
	const struct rinx_plan *p = &rd->pl[rd->self];
	struct frame fp;
	__u32 cnt = block == rd->nb - 1 ? rd->last : (__u32)bv;

	memset(f, 0, sizeof(*f));
	f->len = flen;
	fc.spec = rd->spec;
	memcpy(fc.plan.nodes, p->nodes, sizeof(fc.plan.nodes));
	fc.rank = from;
	rinx_c_frame_at(f->b, &fp);
	rinx_c_frame_addr(&fc, &fp, to, flen);
	fp.h->magic = htonl(RINX_MAGIC);
	fp.h->version = RINX_VERSION;
	fp.h->type = type;
	fp.h->step = step;
	fp.h->job = htonl(JOB);
	fp.h->token = htobe64(TOKEN);
	fp.h->round = htonl(round);
	fp.h->block = htonl(block);
	fp.h->nblocks = htonl(rd->nb);
	fp.h->count = htons(cnt);
	fp.h->klass = htons(p->cmap[block % p->plen]);
	fp.h->dtype = htons(rd->dtype);
	random_payload(f, rd->dtype, cnt);
	/* a frame's cover field counts only where a coverage aggregator
	 * sends it to a hop that sums coverages: anywhere else it is
	 * ignored, whatever it holds */
	if (rnd() % 2)
		fp.h->cover = htobe64((__u64)rnd() << 32 | rnd());
	/* some arrive marked: the mark must travel with the sum */
	if (rnd() % 5 == 0)
		mark_ce(fp.ip);
}

static struct rinx_hdr *hdr(struct fr *f)
{
	return (struct rinx_hdr *)(f->b + OFF_HDR);
}

/* The host's hop for frame f, NULL if its class or type has none. */
static const struct rinx_hop *hop_of(const struct round *rd,
				     const struct fr *f)
{
	const struct rinx_hdr *h = (const struct rinx_hdr *)(f->b + OFF_HDR);
	const struct rinx_plan *p = &rd->pl[rd->self];
	__u32 k = ntohs(h->klass);

	if (k >= (__u32)p->nclasses || h->type < RINX_T_REDUCE ||
	    h->type > RINX_T_CONTRIB)
		return NULL;
	return &p->hops[k][h->type - 1];
}

/* Is frame f from a node whose frames the host's hop reads coverages
 * of (RINX_HOP_COVER, via)? */
static bool from_via(const struct round *rd, const struct fr *f)
{
	const struct rinx_hop *hp = hop_of(rd, f);
	__u32 s = ntohs(((const struct rinx_hdr *)(f->b + OFF_HDR))->sender);

	return hp && (hp->flags & RINX_HOP_COVER) && s < 64 &&
	       (hp->via & (1ull << s));
}

/* What a coverage aggregator's frames of one block cover: its hop's
 * contributors `mask` whole (every share met in the block's pool slot), or
 * split as its pool splits them: shares passed on alone (their slot held
 * another block), partial sums flushed by a share sent again, the rest
 * summed. A random partition of mask into parts[]; returns their number. */
static int cover_parts(__u64 mask, __u64 *parts)
{
	int bits[64], nb = 0, np, i, n = 0;

	for (i = 0; i < 64; i++)
		if (mask & (1ull << i))
			bits[nb++] = i;
	if (!nb)
		return 0;
	/* one part (no collision) a third of the time */
	np = rnd() % 3 == 0 ? 1 : 1 + rnd() % nb;
	memset(parts, 0, np * sizeof(*parts));
	for (i = 0; i < nb; i++)
		parts[rnd() % np] |= 1ull << bits[i];
	for (i = 0; i < np; i++)
		if (parts[i])
			parts[n++] = parts[i];
	return n;
}

/* Does node i's hop h (class k) send to node s, and as what? */
static bool emits_to(const struct round *rd, int i, const struct rinx_hop *h,
		     int s, int *type, int *step)
{
	const struct rinx_node *n = &rd->pl[rd->self].nodes[s];
	bool host = s < rd->spec.nhosts;
	bool group = h->rack != RINX_NO_RACK && host &&
		     (h->rack == RINX_GROUP_EVERY || n->rack == h->rack);

	switch (h->action) {
	case RINX_A_ADD_FWD:
		*type = RINX_T_REDUCE;
		*step = h->step + 1;
		return h->to == s;
	case RINX_A_ADD_FINISH:
		*type = RINX_T_GATHER;
		*step = 0;
		return h->to == s;
	case RINX_A_STORE_FWD:
		*type = RINX_T_GATHER;
		*step = h->step + 1;
		return h->to == s;
	case RINX_A_AGG_FWD:
		*type = RINX_T_REDUCE;
		*step = h->out_step;
		return h->to == s;
	case RINX_A_AGG_FINISH:
	case RINX_A_MCAST_FWD:
	case RINX_A_MCAST_END:
		*type = RINX_T_GATHER;
		*step = h->out_step;
		return group || (h->action != RINX_A_MCAST_END &&
				 h->to == s && h->to != i);
	}
	return false;
}

/* Does plan me's hop (class k, type) sum coverages, read from node i? */
static bool via_hop(const struct rinx_plan *me, int k, int type, int i)
{
	const struct rinx_hop *hp = &me->hops[k][type - 1];

	return (hp->flags & RINX_HOP_COVER) && i < 64 &&
	       (hp->via & (1ull << i));
}

/* Every frame the plan sends to the host under test in a round; a
 * coverage aggregator's, for a hop that sums coverages, as the pool may
 * split them (cover_parts). */
static int plan_frames(const struct round *rd, struct fr *out, int max)
{
	const struct rinx_plan *me = &rd->pl[rd->self];
	int n = 0, i, t, type, step, s = rd->self;
	__u32 b;

	for (b = 0; b < rd->nb; b++) {
		int k = me->cmap[b % me->plen];

		for (i = 0; i < rd->nnodes; i++) {
			int seen[8][2], ns = 0, x;

			if (i == s)
				continue;
			if (rd->pl[i].start_to[k] == s && n < max) {
				build(&out[n], rd, i, s, rd->pl[i].start_type[k],
				      0, ROUND, b);
				n++;
			}
			for (t = 0; t < RINX_HOP_TYPES; t++) {
				const struct rinx_hop *h = &rd->pl[i].hops[k][t];
				bool dup = false;

				if (!emits_to(rd, i, h, s, &type, &step))
					continue;
				/* an aggregation is often declared for two
				 * types: it sends once per block */
				for (x = 0; x < ns; x++)
					dup |= seen[x][0] == type &&
					       seen[x][1] == step;
				if (dup || n >= max)
					continue;
				seen[ns][0] = type;
				seen[ns++][1] = step;
				if (via_hop(me, k, type, i)) {
					__u64 part[64];
					int np = cover_parts(h->mask, part), j;

					for (j = 0; j < np && n < max; j++) {
						build(&out[n], rd, i, s, type,
						      step, ROUND, b);
						out[n].part = np > 1;
						hdr(&out[n++])->cover =
							htobe64(part[j]);
					}
					continue;
				}
				build(&out[n], rd, i, s, type, step, ROUND, b);
				n++;
			}
		}
	}
	for (i = 0; i < n; i++) {
		struct rinx_hdr *h = hdr(&out[i]);
		const struct rinx_hop *hp =
			&me->hops[ntohs(h->klass)][h->type - 1];

		out[i].what = "plan";
		out[i].plan = true;
		out[i].agg = hp->action == RINX_A_AGG_FWD ||
			     hp->action == RINX_A_AGG_FINISH;
		out[i].via = from_via(rd, &out[i]);
	}
	return n;
}

enum mut {
	M_STALE, M_FAR, M_FROM_OTHER, M_SADDR, M_STEP, M_SENDER_BIG,
	M_MAGIC, M_VERSION, M_TYPE, M_SHORT, M_SIZE, M_COUNT0, M_COUNT_BIG,
	M_BLOCK, M_KLASS, M_TOKEN, M_JOB, M_I32_EXP,
	M_COVER0, M_COVER_OUT, M_OVERLAP,
	M_HANDOFF_MAX,		/* both XDPs reject the above alike */
	M_NEXT = M_HANDOFF_MAX,	/* the next round */
	M_NBLOCKS, M_DTYPE, M_LASTCOUNT,
	M_MAX,
};

static const char *const mut_name[M_MAX] = {
	"stale round", "round two ahead", "another node", "wrong address",
	"wrong step", "sender id 64+", "bad magic", "bad version",
	"unknown type", "truncated", "another block size", "count 0",
	"count past the block", "block past end",
	"wrong class", "wrong token", "unknown job", "int32 with exponent",
	"coverage 0", "coverage beyond the mask", "coverage overlapping",
	"next round", "other block count", "other dtype", "other last count",
};

/* A bad copy of plan frame src; false if the mutation does not apply. */
static bool mutate(const struct round *rd, const struct fr *src, int m,
		   struct fr *f)
{
	struct rinx_hdr *h;
	__u32 saddr;
	int from, other;

	*f = *src;
	f->plan = false;
	f->agg = src->agg;
	f->handed = false;
	f->what = mut_name[m];
	h = hdr(f);
	from = ntohs(h->sender);
	switch (m) {
	case M_STALE:
		h->round = htonl(ROUND - 3);
		break;
	case M_FAR:
		h->round = htonl(ROUND + 2);
		break;
	case M_FROM_OTHER:
		/* the same frame from another node (its own address) */
		do
			other = rnd() % rd->nnodes;
		while (other == from);
		fc.rank = other;
		{
			struct frame fp;

			rinx_c_frame_at(f->b, &fp);
			rinx_c_frame_addr(&fc, &fp, rd->self, flen);
		}
		break;
	case M_SADDR:
		saddr = htonl(0x0afe0001);
		memcpy(f->b + OFF_IP + 12, &saddr, 4);
		break;
	case M_STEP:
		h->step++;
		break;
	case M_SENDER_BIG:
		h->sender = htons(RINX_MAX_NODES + rnd() % 100);
		break;
	case M_MAGIC:
		h->magic = htonl(RINX_MAGIC ^ 1);
		break;
	case M_VERSION:
		h->version = RINX_VERSION + 1;
		break;
	case M_TYPE:
		h->type = rnd() % 2 ? 0 : RINX_T_MAX + rnd() % 5;
		break;
	case M_SHORT:
		/* a jumbo frame: a chain cut short */
		f->len = rnd() % 2 ? flen - 1 - rnd() % 100 :
			 OFF_HDR + (__u32)sizeof(*h) - 1;
		break;
	case M_SIZE:
		/* the frame of another block size (a rank of another MTU or
		 * block choice): cut to a smaller size, or padded with zeros
		 * to a larger one */
		{
			static const __u32 sz[] = {
				RINX_FRAME_MIN, RINX_FRAME_MAX,
				RINX_FRAME_LEN(RINX_BLOCK_VALUES_JUMBO),
			};

			do
				f->len = sz[rnd() % 3];
			while (f->len == flen);
			if (f->len > flen)
				memset(f->b + flen, 0, f->len - flen);
		}
		break;
	case M_COUNT0:
		h->count = 0;
		break;
	case M_COUNT_BIG:
		h->count = htons(bv + 1);
		break;
	case M_BLOCK:
		h->block = htonl(rd->nb + rnd() % 3);
		break;
	case M_KLASS:
		if (rd->pl[rd->self].nclasses < 2)
			h->klass = htons(RINX_MAX_CLASSES + 1);
		else
			h->klass = htons((ntohs(h->klass) + 1) %
					 rd->pl[rd->self].nclasses);
		break;
	case M_TOKEN:
		h->token = htobe64(TOKEN + (1ULL << 32));
		break;
	case M_JOB:
		h->job = htonl(JOB + 4);	/* same slot, not installed */
		break;
	case M_I32_EXP:
		if (rd->dtype != RINX_W_INT32)
			return false;
		h->exp = htons(1 + rnd() % 3);
		break;
	case M_COVER0:
		if (!src->via)
			return false;
		h->cover = 0;
		break;
	case M_COVER_OUT:
		/* the server itself, the aggregator, a node past the job */
		if (!src->via)
			return false;
		other = rnd() % 3;
		other = other == 0 ? rd->self : other == 1 ? from :
			rd->nnodes + (int)(rnd() % (64 - rd->nnodes));
		h->cover |= htobe64(1ull << other);
		break;
	case M_OVERLAP:
		/* its part and a contributor of another: a duplicate of
		 * both, refused in part, or (first in) an intruder */
		if (!src->via)
			return false;
		{
			__u64 cov = be64toh(h->cover);
			__u64 rest = hop_of(rd, src)->mask & ~cov;
			int b;

			if (!rest)
				return false;
			do
				b = rnd() % 64;
			while (!(rest & (1ull << b)));
			h->cover = htobe64(cov | 1ull << b);
		}
		break;
	case M_NEXT:
		h->round = htonl(ROUND + 1);
		f->handed = !src->agg || h->type == RINX_T_GATHER;
		break;
	case M_NBLOCKS:
		h->nblocks = htonl(rd->nb + 1);
		f->handed = true;
		break;
	case M_DTYPE:
		h->dtype = htons(rd->dtype == RINX_W_INT32 ? RINX_W_FIXED :
							    RINX_W_INT32);
		h->exp = 0;
		f->handed = true;
		break;
	case M_LASTCOUNT:
		if (ntohl(h->block) != rd->nb - 1 || rd->last == 1)
			return false;
		h->count = htons(rd->last - 1);
		f->handed = true;
		break;
	}
	f->via = from_via(rd, f);
	return true;
}

/* ---- running a frame ------------------------------------------------------ */

enum kind {
	K_SENT,		/* a frame left (bytes in out) */
	K_DONE,		/* finished here, nothing sent */
	K_CONSUMED,	/* added into a slot */
	K_DROP,		/* rejected (stat says why; ~0: by the handler) */
	K_KEEP,		/* handed up and kept for later */
	K_UP,		/* handed up, not run yet */
};

static const char *const kind_name[] = {
	"sent", "done", "consumed", "dropped", "kept", "handed up",
};

struct outcome {
	int kind;
	__u32 stat;		/* the drop's counter */
	bool xdp;		/* finished by XDP */
	int sp;			/* the handler's verdict, -1: not run */
	__u64 delta[RINX_STAT_MAX];
	__u8 out[FMAX];
	__u32 len;
};

static const char *stat_name(__u32 s)
{
	return s == ~0u ? "handler" : rinx_stat_name(s);
}

static int xdp_run(struct inst *in, const struct fr *f, struct outcome *o)
{
	__u64 s0[RINX_STAT_MAX], s1[RINX_STAT_MAX];
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = f->b,
		    .data_size_in = f->len, .data_out = o->out,
		    .data_size_out = sizeof(o->out), .repeat = 1);
	int k;

	memset(o, 0, sizeof(*o));
	o->sp = -1;
	if (read_stats(in, s0) || bpf_prog_test_run_opts(in->prog, &t) ||
	    read_stats(in, s1))
		return -errno;
	o->len = t.data_size_out;
	for (k = 0; k < RINX_STAT_MAX; k++)
		o->delta[k] = s1[k] - s0[k];
	o->xdp = true;
	switch (t.retval) {
	case XDP_TX:
		o->kind = K_SENT;
		return 0;
	case XDP_REDIRECT:
		o->kind = K_UP;
		o->xdp = false;
		return 0;
	case XDP_DROP:
		break;
	default:
		o->kind = K_DROP;
		o->stat = RINX_STAT_ABORTED;
		return 0;
	}
	if (o->delta[RINX_STAT_GATHER_END] || o->delta[RINX_STAT_AGG_DONE] ||
	    o->delta[RINX_STAT_AGG_REEMIT]) {
		o->kind = K_DONE;
		return 0;
	}
	if (o->delta[RINX_STAT_AGG_ADD]) {
		o->kind = K_CONSUMED;
		return 0;
	}
	o->kind = K_DROP;
	o->stat = RINX_STAT_MAX;
	for (k = 0; k < RINX_STAT_MAX; k++)
		if (k != RINX_STAT_RX && k != RINX_STAT_AGG_RESET &&
		    o->delta[k])
			o->stat = k;
	return 0;
}

/* The handler on what XDP handed up (o->out), as the slow path runs it. */
static void slow_run(struct inst *in, struct outcome *o)
{
	in->c->err[0] = 0;
	o->sp = rinx_c_slow_frame(in->c, o->out, o->len);
	switch (o->sp) {
	case RINX_SP_SEND:
		o->kind = K_SENT;
		o->len = flen;
		break;
	case RINX_SP_FREE:
		o->kind = K_DONE;
		break;
	case RINX_SP_KEEP:
		o->kind = K_KEEP;
		break;
	default:
		o->kind = K_DROP;
		o->stat = ~0u;
	}
}

/* ---- comparing ------------------------------------------------------------ */

static int nmis;	/* mismatches of the current check, diagnosed */
static bool trace;	/* RINX_TEST_TRACE set: every frame of a failed trial */

static __attribute__((format(printf, 1, 2))) void mis(const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	if (nmis++ >= 6)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tap_diag("  %s", buf);
}

/* First byte where two frames differ, named. */
static const char *first_diff(const __u8 *a, const __u8 *b, __u32 len,
			      char *buf, size_t sz)
{
	__u32 i;

	for (i = 0; i < len && a[i] == b[i]; i++)
		;
	if (i == len)
		return "none";
	snprintf(buf, sz, "byte %u (%s) %02x vs %02x", i,
		 i < 14 ? "ethernet" : i < 34 ? "ip" : i < OFF_HDR ? "udp" :
		 i < RINX_FRAME_HDR_LEN ? "rinx header" : "payload", a[i], b[i]);
	return buf;
}

static void describe(const struct fr *f, int i, char *buf, size_t sz)
{
	const struct rinx_hdr *h = (const struct rinx_hdr *)(f->b + OFF_HDR);

	snprintf(buf, sz, "frame %d (%s): type %u step %u from %u block %u "
		 "class %u round %#x", i, f->what, h->type, h->step,
		 ntohs(h->sender), ntohl(h->block), ntohs(h->klass),
		 ntohl(h->round));
}

/* Is a's outcome for frame f b's? */
static bool same(const struct outcome *a, const struct outcome *b)
{
	if (a->kind == K_SENT && b->kind == K_SENT) {
		if (a->len == b->len && !memcmp(a->out, b->out, a->len))
			return a->xdp != b->xdp ||
			       !memcmp(a->delta, b->delta, sizeof(a->delta));
		return false;
	}
	if (a->kind != b->kind)
		return false;
	if (a->kind == K_DROP)	/* the handler has no counters */
		return a->stat == b->stat || !a->xdp || !b->xdp;
	if (a->xdp && b->xdp)
		return !memcmp(a->delta, b->delta, sizeof(a->delta));
	return true;
}

static void show(const char *who, const struct outcome *o, char *buf,
		 size_t sz)
{
	snprintf(buf, sz, "%s %s%s%s", who, kind_name[o->kind],
		 o->kind == K_DROP ? " by " : "",
		 o->kind == K_DROP ? stat_name(o->stat) :
		 o->xdp ? " in XDP" : " by the handler");
}

static void compare_frame(const struct fr *f, int i, const struct outcome *a,
			  const struct outcome *b, const char *an,
			  const char *bn)
{
	char d[160], sa[96], sb[96], x[96];

	if (same(a, b))
		return;
	describe(f, i, d, sizeof(d));
	show(an, a, sa, sizeof(sa));
	show(bn, b, sb, sizeof(sb));
	if (a->kind == K_SENT && b->kind == K_SENT && a->len == b->len)
		mis("%s: %s, %s; first difference %s", d, sa, sb,
		    first_diff(a->out, b->out, a->len, x, sizeof(x)));
	else
		mis("%s: %s, %s", d, sa, sb);
}

static void compare_maps(const struct inst *a, const struct inst *b,
			 const struct round *rd)
{
	struct rinx_agg ga, gb;
	__u32 k, key;

	for (k = 0; k < rd->nb * bs; k++) {
		const struct rinx_slot *ra = &a->result[SLOT * W + k];
		const struct rinx_slot *rb = &b->result[SLOT * W + k];
		const struct rinx_slot *pa = &a->partial[SLOT * W + k];
		const struct rinx_slot *pb = &b->partial[SLOT * W + k];

		/* k is a slot: a jumbo block's are k / 3 */
		if (memcmp(pa, pb, sizeof(*pa)))
			mis("kept partial sum of slot %u: round %#x/%#x "
			    "step %u/%u%s", k, pa->round, pb->round, pa->step,
			    pb->step, memcmp(pa->v, pb->v, sizeof(pa->v)) ?
			    ", values differ" : "");
		if (memcmp(ra, rb, sizeof(*ra)))
			mis("result of slot %u: round %#x/%#x exp %d/%d "
			    "flags %#x/%#x count %u/%u%s", k, ra->round,
			    rb->round, ra->exp, rb->exp, ra->flags, rb->flags,
			    ra->count, rb->count,
			    memcmp(ra->v, rb->v, sizeof(ra->v)) ?
			    ", values differ" : "");
		key = SLOT * W + k;
		if (bpf_map_lookup_elem_flags(a->aggs, &key, &ga, BPF_F_LOCK) ||
		    bpf_map_lookup_elem_flags(b->aggs, &key, &gb, BPF_F_LOCK)) {
			mis("aggs %u: lookup failed: %s", key, strerror(errno));
			continue;
		}
		memset(&ga.lock, 0, sizeof(ga.lock));
		memset(&gb.lock, 0, sizeof(gb.lock));
		if (memcmp(&ga, &gb, sizeof(ga)))
			mis("aggregator slot %u: round %#x/%#x seen "
			    "%#llx/%#llx done %u/%u final %u/%u pend %u/%u "
			    "ce %u/%u exp %d/%d flags %#x/%#x%s", k, ga.round,
			    gb.round,
			    (unsigned long long)ga.seen,
			    (unsigned long long)gb.seen, ga.done, gb.done,
			    ga.final, gb.final, ga.pend, gb.pend, ga.ce, gb.ce,
			    ga.exp, gb.exp, ga.flags, gb.flags,
			    memcmp(ga.v, gb.v, sizeof(ga.v)) ?
			    ", values differ" : "");
	}
	if (a->cur[SLOT].stored != b->cur[SLOT].stored ||
	    a->cur[SLOT].marked != b->cur[SLOT].marked)
		mis("cursor: stored %llu/%llu, marked %llu/%llu",
		    (unsigned long long)a->cur[SLOT].stored,
		    (unsigned long long)b->cur[SLOT].stored,
		    (unsigned long long)a->cur[SLOT].marked,
		    (unsigned long long)b->cur[SLOT].marked);
}

/* ---- the two modes -------------------------------------------------------- */

/* What the comparisons went through: per action of the host's table,
 * frames finished by XDP and by the handler; and the handler's answers to
 * duplicates (the sum sent again, the finished block answered to a worker,
 * the finished block not sent on as a partial sum). */
static int cov[2][RINX_A_MAX];
/* ... and per block size (small, full, jumbo) the ring's four hops, and
 * frames of another size refused by XDP (DROP_SHAPE) */
static int cov_sz[3][2][RINX_A_STORE_END + 1], cov_shape[3];
enum { D_RESEND, D_ANSWER, D_FINAL_DROP, D_MAX };
static int cov_dup[D_MAX];
static const char *const action_name[RINX_A_MAX] = {
	"none", "add+fwd", "add+finish", "store+fwd", "store+end", "agg+fwd",
	"agg+finish", "mcast+fwd", "mcast+end",
};

static void note(const struct round *rd, const struct fr *f,
		 const struct outcome *o, const struct outcome *xdp)
{
	const struct rinx_hdr *h = (const struct rinx_hdr *)(f->b + OFF_HDR);
	const struct rinx_plan *p = &rd->pl[rd->self];
	__u32 k = ntohs(h->klass);
	int a;

	if (k >= (__u32)p->nclasses || h->type < RINX_T_REDUCE ||
	    h->type > RINX_T_CONTRIB)
		return;
	a = p->hops[k][h->type - 1].action;
	if (o->kind == K_SENT || o->kind == K_DONE)
		cov[!o->xdp][a]++;
	if ((o->kind == K_SENT || o->kind == K_DONE) && f->plan &&
	    a <= RINX_A_STORE_END)
		cov_sz[bs > 1 ? 2 : bv == RINX_BLOCK_VALUES][!o->xdp][a]++;
	if (o->kind == K_DROP && o->xdp && o->stat == RINX_STAT_DROP_SHAPE &&
	    !strcmp(f->what, mut_name[M_SIZE]))
		cov_shape[bs > 1 ? 2 : bv == RINX_BLOCK_VALUES]++;
	if (o->xdp || !xdp)
		return;
	if (o->kind == K_SENT && xdp->delta[RINX_STAT_AGG_REEMIT])
		cov_dup[D_RESEND]++;
	if (o->kind == K_SENT && xdp->delta[RINX_STAT_AGG_RESEND])
		cov_dup[D_ANSWER]++;
	if (o->kind == K_DROP && xdp->delta[RINX_STAT_DROP_AGG_DUP])
		cov_dup[D_FINAL_DROP]++;
}

/* The coverage paths the comparisons went through (a hop that sums
 * coverages, frames of its aggregators): XDP took a whole rack's sum, a
 * part of it (a share passed on, a partial flushed), refused a duplicate
 * coverage or one overlapping the slot's in part, refused a bad coverage
 * (0, beyond the contributors); the handler completed a slot or answered
 * from such a frame, and refused a bad one. */
enum { V_WHOLE, V_PART, V_DUP, V_OVERLAP, V_BAD, V_HANDLER, V_HANDLER_BAD,
       V_MAX };
static int cov_via[V_MAX];
static const char *const via_name[V_MAX] = {
	"whole", "part", "duplicate", "overlap refused", "bad refused",
	"handler finished", "handler refused bad",
};

static bool bad_cover(const struct fr *f)
{
	return f->what == mut_name[M_COVER0] ||
	       f->what == mut_name[M_COVER_OUT];
}

static void note_cover(const struct fr *f, const struct outcome *a,
		       const struct outcome *b)
{
	if (a->delta[RINX_STAT_AGG_OVERLAP])
		cov_via[V_OVERLAP]++;
	if (!f->via)
		return;
	if (f->plan && !strstr(f->what, "dup") &&
	    (a->delta[RINX_STAT_AGG_ADD] || a->delta[RINX_STAT_AGG_DONE]))
		cov_via[f->part ? V_PART : V_WHOLE]++;
	if (strstr(f->what, "dup") && (a->delta[RINX_STAT_DROP_AGG_DUP] ||
				       a->delta[RINX_STAT_AGG_REEMIT]))
		cov_via[V_DUP]++;
	if (bad_cover(f) && a->stat == RINX_STAT_DROP_SENDER)
		cov_via[V_BAD]++;
	if (!b->xdp && (b->kind == K_SENT || b->kind == K_DONE))
		cov_via[V_HANDLER]++;
}

static struct inst ia, ib, ic;
static struct fr seq[MAXF], pf[MAXF];
static struct outcome oa[MAXF], ob[MAXF];

static void shuffle(struct fr *f, int n)
{
	int i, j;
	struct fr t;

	for (i = n - 1; i > 0; i--) {
		j = rnd() % (i + 1);
		t = f[i];
		f[i] = f[j];
		f[j] = t;
	}
}

/* Inserts x at a random position of f[0..*n), at or after `from` and
 * less than `span` after it (0: anywhere after it). */
static void insert_near(struct fr *f, int *n, int from, int span,
			const struct fr *x)
{
	int at, room = *n - from + 1;

	if (*n >= MAXF)
		return;
	at = from + rnd() % (span && span < room ? span : room);
	memmove(&f[at + 1], &f[at], (*n - at) * sizeof(*f));
	f[at] = *x;
	(*n)++;
}

static void insert(struct fr *f, int *n, int from, const struct fr *x)
{
	insert_near(f, n, from, 0, x);
}

/* Where plan frame f is in seq[0..n) (a truncated copy has its bytes). */
static int find(const struct fr *f, int n)
{
	int j;

	for (j = 0; j < n; j++)
		if (seq[j].what == f->what && seq[j].len == f->len &&
		    !memcmp(seq[j].b, f->b, FMAX))
			return j;
	return n - 1;
}

static struct fr *again(const struct fr *f, struct fr *x, const char *what)
{
	*x = *f;
	x->what = what;
	return x;
}

/* Drains what B handed up, in arrival order, until nothing moves. */
static void drain(struct inst *b, int upto)
{
	int i, moved = 1;

	while (moved) {
		moved = 0;
		for (i = 0; i < upto; i++) {
			if (ob[i].kind != K_UP && ob[i].kind != K_KEEP)
				continue;
			slow_run(b, &ob[i]);
			moved |= ob[i].kind != K_KEEP;
			if (ob[i].kind == K_KEEP)
				ob[i].kind = K_UP;
		}
	}
}

static int handoff(struct round *rd, int trial, int np, bool share_late)
{
	int n, i, m, open_at, taken = 0, refused = 0, err;
	bool intruded[W] = { false };
	struct fr x;

	/* The plan's frames in a random order that respects causality. The
	 * reduce phase first, and frames sent again after their original;
	 * bad frames anywhere */
	n = 0;
	for (i = 0; i < np; i++)
		if (hdr(&pf[i])->type != RINX_T_GATHER)
			seq[n++] = pf[i];
	shuffle(seq, n);
	for (i = 0; i < np; i++) {
		int j;

		if (hdr(&pf[i])->type == RINX_T_GATHER ||
		    rnd() % 3 >= (pf[i].agg ? 2u : 1u))
			continue;
		/* into an aggregation: just after its block's last
		 * contribution, while the slot waits for the trainer if it
		 * does (a retransmission the handler answers) */
		j = find(&pf[i], n) + 1;
		if (pf[i].agg) {
			__u32 b = ntohl(hdr(&pf[i])->block);
			int k;

			for (k = 0; k < n; k++)
				if (seq[k].plan && ntohl(hdr(&seq[k])->block) ==
				    b && k + 1 > j)
					j = k + 1;
		}
		insert_near(seq, &n, j, pf[i].agg ? 2 : 0,
			    again(&pf[i], &x, "dup"));
	}
	for (i = 0; i < np; i++)
		for (m = 0; m < M_HANDOFF_MAX; m++)
			if (rnd() % 4 == 0 && mutate(rd, &pf[i], m, &x))
				insert(seq, &n, 0, &x);
	/* B's trainer opens the round here. A block's gather carries every
	 * rank's share, this host's too, which leaves here only once it is
	 * written: gathers come after the opening, and after the block's
	 * reduce passed (an aggregator keeps the gather in its slot) */
	open_at = n / 4 + rnd() % (n - n / 4 + 1);
	for (i = 0; i < np; i++) {
		__u32 b = ntohl(hdr(&pf[i])->block);
		int j, after = open_at;

		if (hdr(&pf[i])->type != RINX_T_GATHER)
			continue;
		for (j = open_at; j < n; j++)
			if (ntohl(hdr(&seq[j])->block) == b &&
			    hdr(&seq[j])->type != RINX_T_GATHER)
				after = j + 1;
		insert(seq, &n, after, &pf[i]);
		if (rnd() % 3 == 0)
			insert(seq, &n, find(&pf[i], n) + 1,
			       again(&pf[i], &x, "dup"));
	}
	/* a share or partial sum sent again after its block's gather went
	 * by (lost on the way): a worker's share is answered with the
	 * finished block, a partial sum is not sent on */
	for (i = 0; i < np; i++) {
		__u32 b = ntohl(hdr(&pf[i])->block);
		int j, last = -1;

		/* every partial sum (rarer than shares) */
		if (!pf[i].agg || (hdr(&pf[i])->type != RINX_T_REDUCE &&
				   rnd() % 3))
			continue;
		for (j = 0; j < n; j++)
			if (ntohl(hdr(&seq[j])->block) == b &&
			    hdr(&seq[j])->type == RINX_T_GATHER)
				last = j;
		if (last >= 0)
			insert(seq, &n, last + 1, again(&pf[i], &x, "late dup"));
	}

	err = install(&ia, rd, ROUND);
	if (share_late) {
		/* the round is in the job entry, the shares are not written
		 * yet (the trainer writes the entry first) */
		err = err ?: install(&ib, rd, ROUND);
		if (!err)
			write_shares(&ib, rd, ROUND - 1);
	} else {
		err = err ?: install(&ib, rd, ROUND - 1);
	}
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		if (i == open_at) {
			err = open_round(&ib, rd);
			if (err)
				return err;
			drain(&ib, i);
		}
		err = xdp_run(&ia, &seq[i], &oa[i]);
		err = err ?: xdp_run(&ib, &seq[i], &ob[i]);
		if (err)
			return err;
		if (oa[i].kind == K_UP)
			slow_run(&ia, &oa[i]);
		if (i >= open_at && ob[i].kind == K_UP)
			slow_run(&ib, &ob[i]);
		/* refused by the tables, not as a duplicate of a
		 * contributor a wrong sender took the place of, nor as an
		 * overlap with what a bad frame put into the block's slot */
		if (!seq[i].plan && seq[i].agg &&
		    (oa[i].delta[RINX_STAT_AGG_ADD] ||
		     oa[i].delta[RINX_STAT_AGG_DONE]))
			intruded[ntohl(hdr(&seq[i])->block) % W] = true;
		if (seq[i].plan && !strstr(seq[i].what, "dup") &&
		    (oa[i].kind != K_DROP ||
		     oa[i].stat == RINX_STAT_DROP_AGG_DUP ||
		     (oa[i].stat == RINX_STAT_AGG_OVERLAP &&
		      intruded[ntohl(hdr(&seq[i])->block) % W])))
			taken++;
		else if (seq[i].plan && !strstr(seq[i].what, "dup") &&
			 refused++ < 6) {
			char d[160], sa[96];

			describe(&seq[i], i, d, sizeof(d));
			show("A", &oa[i], sa, sizeof(sa));
			tap_diag("  not taken: %s, cover %#llx: %s", d,
				 (unsigned long long)
				 be64toh(hdr(&seq[i])->cover), sa);
		}
	}
	if (open_at >= n) {
		err = open_round(&ib, rd);
		if (err)
			return err;
	}
	drain(&ib, n);

	nmis = 0;
	for (i = 0; i < n; i++)
		compare_frame(&seq[i], i, &oa[i], &ob[i], "XDP(ready)",
			      "XDP+handler(late)");
	if (trace && nmis)
		for (i = 0; i < n; i++) {
			char d[160], sa[96], sb[96];

			describe(&seq[i], i, d, sizeof(d));
			show("A", &oa[i], sa, sizeof(sa));
			show("B", &ob[i], sb, sizeof(sb));
			tap_diag("    %s: %s, %s", d, sa, sb);
		}
	for (i = 0; i < n; i++) {
		note(rd, &seq[i], &oa[i], NULL);
		note(rd, &seq[i], &ob[i], &oa[i]);
		note_cover(&seq[i], &oa[i], &ob[i]);
	}
	compare_maps(&ia, &ib, rd);
	tap_ok(!nmis, "%s h%d trial %d: %d frames (%d of the plan, %s until "
	       "frame %d): ready and late nodes agree", rd->plan_name,
	       rd->self, trial, n, np, share_late ? "share" : "round",
	       open_at);
	tap_ok(taken == np, "%s h%d trial %d: every frame the plan sends to "
	       "h%d is taken (%d of %d)", rd->plan_name, rd->self, trial,
	       rd->self, taken, np);
	return 0;
}

/* Every single-sender hop's frame and every bad frame: A's XDP against C's
 * handler alone. */
static int direct(struct round *rd, int np)
{
	int n = 0, i, m, designed = 0, err;
	struct fr x;

	for (i = 0; i < np; i++) {
		/* the handler does not aggregate (handoff tests those) */
		if (pf[i].agg)
			continue;
		if (n < MAXF)
			seq[n++] = pf[i];
		for (m = 0; m < M_MAX; m++)
			if ((m >= M_HANDOFF_MAX || rnd() % 3 == 0) &&
			    n < MAXF && mutate(rd, &pf[i], m, &x))
				seq[n++] = x;
	}
	shuffle(seq, n);
	err = install(&ia, rd, ROUND);
	err = err ?: install(&ic, rd, ROUND);
	if (err)
		return err;
	nmis = 0;
	/* the round's aggregations first, by XDP on both: a gather then
	 * finds its slot, where XDP and the handler keep its block */
	for (i = 0; i < np; i++) {
		if (!pf[i].agg)
			continue;
		err = xdp_run(&ia, &pf[i], &oa[0]);
		err = err ?: xdp_run(&ic, &pf[i], &ob[0]);
		if (err)
			return err;
		compare_frame(&pf[i], i, &oa[0], &ob[0], "XDP", "XDP");
	}
	for (i = 0; i < n; i++) {
		err = xdp_run(&ia, &seq[i], &oa[i]);
		if (err)
			return err;
		memset(&ob[i], 0, sizeof(ob[i]));
		memcpy(ob[i].out, seq[i].b, FMAX);
		ob[i].len = seq[i].len;
		slow_run(&ic, &ob[i]);
		if (seq[i].handed) {
			/* XDP hands it up by design: the handler decides */
			char d[160];
			bool next = ntohl(hdr(&seq[i])->round) == ROUND + 1;

			if (oa[i].kind != K_UP ||
			    (next ? ob[i].kind != K_KEEP :
			     ob[i].kind != K_DROP || !ic.c->err[0])) {
				describe(&seq[i], i, d, sizeof(d));
				mis("%s: XDP %s (%s), handler %s%s", d,
				    kind_name[oa[i].kind],
				    stat_name(oa[i].stat), kind_name[ob[i].kind],
				    next || ic.c->err[0] ? "" :
				    " without an error");
			}
			designed++;
			continue;
		}
		if (!strcmp(seq[i].what, mut_name[M_FAR]) &&
		    oa[i].kind == K_DROP && oa[i].stat == RINX_STAT_DROP_AHEAD &&
		    ob[i].kind == K_KEEP) {
			designed++;	/* a later round: kept for it */
			continue;
		}
		/* XDP rejects it: the handler must too, without blaming
		 * the sender's tensor */
		if (oa[i].kind == K_DROP && ob[i].kind == K_DROP &&
		    !ic.c->err[0])
			continue;
		if (ic.c->err[0]) {
			char d[160];

			describe(&seq[i], i, d, sizeof(d));
			mis("%s: XDP %s (%s), the handler fails the call: %s",
			    d, kind_name[oa[i].kind], stat_name(oa[i].stat),
			    ic.c->err);
			continue;
		}
		compare_frame(&seq[i], i, &oa[i], &ob[i], "XDP", "handler");
	}
	for (i = 0; i < n; i++)
		note(rd, &seq[i], &ob[i], NULL);
	compare_maps(&ia, &ic, rd);
	tap_ok(!nmis, "%s h%d direct: %d frames to XDP and to the handler "
	       "alone agree (%d handed up or kept by design)", rd->plan_name,
	       rd->self, n, designed);
	return 0;
}

/* Aggregations, the handler alone. C's trainer is late (its shares are
 * the round before's): C's XDP takes the round's contributions and hands
 * up the sum of every slot that then waits for the share (pend); the
 * trainer writes it. Every bad copy of a contribution that C's XDP refuses
 * (a wrong sender, address or step, a coverage of 0 or beyond the hop's
 * contributors, ...) goes straight to C's handler too, which must refuse
 * it without failing the call and leave the waiting slot as it is: the
 * handler completes a slot for the frames XDP hands up, never for one XDP
 * would not take. A frame whose coverage a waiting slot lacks in part (a
 * slot filled under other tables: the slot is made so here) must not
 * complete it either. Last, the sums handed up run through C's handler:
 * each must leave as the same frame left A's XDP (ready), and the maps
 * must be A's. */
static int direct_agg(struct round *rd, int np)
{
	static struct rinx_agg snap[W], g, got;
	struct outcome *xo = &oa[MAXF - 1], *co = &ob[MAXF - 1];
	int n = 0, i, m, refused = 0, waiting = 0, lacking = 0, err;
	__u32 b, key;
	struct fr x;

	for (i = 0; i < np && n < MAXF - 1; i++)
		if (pf[i].agg)
			seq[n++] = pf[i];
	if (!n) {
		/* one check either way (the plan counts it): a host with
		 * nothing to aggregate is one whose tables say so */
		const struct rinx_plan *me = &rd->pl[rd->self];
		int k, t, aggs = 0;

		for (k = 0; k < me->nclasses; k++)
			for (t = 0; t < RINX_HOP_TYPES; t++)
				aggs += me->hops[k][t].action ==
					RINX_A_AGG_FWD ||
					me->hops[k][t].action ==
					RINX_A_AGG_FINISH;
		tap_ok(!aggs, "%s h%d aggregates nothing: no aggregation "
		       "hop in its tables (%d)", rd->plan_name, rd->self,
		       aggs);
		return 0;
	}
	err = install(&ia, rd, ROUND);
	err = err ?: install(&ic, rd, ROUND);
	if (err)
		return err;
	write_shares(&ic, rd, ROUND - 1);
	nmis = 0;
	for (i = 0; i < n; i++) {
		err = xdp_run(&ia, &seq[i], &oa[i]);
		err = err ?: xdp_run(&ic, &seq[i], &ob[i]);
		if (err)
			return err;
		waiting += ob[i].kind == K_UP;
	}
	write_shares(&ic, rd, ROUND);
	for (b = 0; b < rd->nb; b++) {
		key = SLOT * W + b;
		if (bpf_map_lookup_elem_flags(ic.aggs, &key, &snap[b],
					      BPF_F_LOCK))
			return -errno;
	}
	for (i = 0; i < n; i++)
		for (m = 0; m < M_HANDOFF_MAX; m++) {
			char d[160];

			/* a later round is kept for when it opens (direct) */
			if (m == M_FAR || (m < M_COVER0 && rnd() % 3) ||
			    !mutate(rd, &seq[i], m, &x))
				continue;
			err = xdp_run(&ic, &x, xo);
			if (err)
				return err;
			/* taken after all (from another contributor: a
			 * duplicate into the waiting slot) */
			if (xo->kind != K_DROP)
				continue;
			memset(co, 0, sizeof(*co));
			memcpy(co->out, x.b, FMAX);
			co->len = x.len;
			slow_run(&ic, co);
			if (co->kind == K_DROP && !ic.c->err[0]) {
				refused++;
				cov_via[V_HANDLER_BAD] += bad_cover(&x);
				continue;
			}
			describe(&x, i, d, sizeof(d));
			mis("%s, cover %#llx: XDP refuses it (%s), the "
			    "handler: %s%s%s", d,
			    (unsigned long long)be64toh(hdr(&x)->cover),
			    stat_name(xo->stat), kind_name[co->kind],
			    ic.c->err[0] ? ", failing the call: " : "",
			    ic.c->err);
		}
	for (b = 0; b < rd->nb; b++) {
		key = SLOT * W + b;
		if (bpf_map_lookup_elem_flags(ic.aggs, &key, &g, BPF_F_LOCK))
			return -errno;
		memset(&g.lock, 0, sizeof(g.lock));
		memset(&snap[b].lock, 0, sizeof(snap[b].lock));
		if (memcmp(&g, &snap[b], sizeof(g)))
			mis("slot of block %u changed by refused frames: seen "
			    "%#llx, pend %u, done %u", b,
			    (unsigned long long)g.seen, g.pend, g.done);
	}
	/* a waiting slot that lacks one contributor of the frame handed
	 * up for it */
	for (i = 0; i < n; i++) {
		struct frame fp;
		__u64 cov;

		if (ob[i].kind != K_UP)
			continue;
		b = ntohl(hdr(&seq[i])->block);
		key = SLOT * W + b;
		rinx_c_frame_at(ob[i].out, &fp);
		cov = seq[i].via ? be64toh(fp.h->cover) :
			1ull << ntohs(fp.h->sender);
		g = snap[b];
		g.seen &= ~(cov & -cov);
		memset(co, 0, sizeof(*co));
		memcpy(co->out, ob[i].out, FMAX);
		co->len = ob[i].len;
		if (bpf_map_update_elem(ic.aggs, &key, &g, BPF_F_LOCK))
			return -errno;
		slow_run(&ic, co);
		if (bpf_map_lookup_elem_flags(ic.aggs, &key, &got, BPF_F_LOCK))
			return -errno;
		memset(&got.lock, 0, sizeof(got.lock));
		memset(&g.lock, 0, sizeof(g.lock));
		if (co->kind != K_DROP || memcmp(&got, &g, sizeof(g)))
			mis("block %u: a waiting slot without %#llx of the "
			    "coverage %#llx: the handler %s it%s", b,
			    (unsigned long long)(cov & -cov),
			    (unsigned long long)cov, kind_name[co->kind],
			    memcmp(&got, &g, sizeof(g)) ?
			    ", the slot changed" : "");
		else
			lacking++;
		if (bpf_map_update_elem(ic.aggs, &key, &snap[b], BPF_F_LOCK))
			return -errno;
	}
	memset(xo, 0, sizeof(*xo));	/* counts the handler's part only */
	for (i = 0; i < n; i++) {
		if (ob[i].kind != K_UP)
			continue;
		slow_run(&ic, &ob[i]);
		note(rd, &seq[i], &ob[i], NULL);
		note_cover(&seq[i], xo, &ob[i]);
		compare_frame(&seq[i], i, &oa[i], &ob[i], "XDP(ready)",
			      "handler");
	}
	compare_maps(&ia, &ic, rd);
	tap_ok(!nmis && refused && lacking == waiting, "%s h%d aggregations, "
	       "the handler alone: %d bad frames XDP refuses refused, %d "
	       "waiting slots kept, and not completed for a coverage they "
	       "lack (%d), then completed as XDP completes them",
	       rd->plan_name, rd->self, refused, waiting, lacking);
	return 0;
}

/* Every plan with full-size blocks; the ring, the one plan that runs
 * jumbo blocks, with those too; the ring and rina (aggregations) with the
 * small blocks of an MTU of 1,500. */
static const struct {
	const char *name;
	int kind, nps, bval;
} plans[] = {
	{ "ring", RINX_PLAN_RING, 0, RINX_BLOCK_VALUES },
	{ "rina", RINX_PLAN_RINA, 0, RINX_BLOCK_VALUES },
	{ "ps", RINX_PLAN_PS, 0, RINX_BLOCK_VALUES },
	{ "ps:2", RINX_PLAN_PS, 2, RINX_BLOCK_VALUES },
	{ "ps-ina", RINX_PLAN_PSINA, 0, RINX_BLOCK_VALUES },
	{ "ps-ina:2", RINX_PLAN_PSINA, 2, RINX_BLOCK_VALUES },
	{ "har", RINX_PLAN_HAR, 0, RINX_BLOCK_VALUES },
	{ "tree", RINX_PLAN_TREE, 0, RINX_BLOCK_VALUES },
	{ "dbtree", RINX_PLAN_DBTREE, 0, RINX_BLOCK_VALUES },
	{ "ring/jumbo", RINX_PLAN_RING, 0, RINX_BLOCK_VALUES_JUMBO },
	{ "ring/352", RINX_PLAN_RING, 0, RINX_BLOCK_VALUES_MIN },
	{ "rina/352", RINX_PLAN_RINA, 0, RINX_BLOCK_VALUES_MIN },
};

/* the checks run_plan makes of each plan: at every host, two per trial,
 * and in the first trial one for the handler alone and one for its
 * aggregations */
#define PLAN_CHECKS	(NHOSTS * (2 * TRIALS + 2))

static int run_plan(int pi)
{
	static struct round rd;
	int self, trial, i, np, err;
	__u32 b, k, wb, n;

	memset(&rd, 0, sizeof(rd));
	rd.plan_name = plans[pi].name;
	bv = plans[pi].bval;
	bs = RINX_BLOCK_SLOTS(bv);
	flen = RINX_FRAME_LEN(bv);
	wb = W / bs;
	make_spec(&rd.spec, plans[pi].kind, plans[pi].nps);
	err = rinx_plan_build(&rd.pl[0], &rd.spec, 0);
	if (err)
		return err;
	rd.nnodes = rd.pl[0].nnodes;
	for (i = 1; i < rd.nnodes; i++) {
		err = rinx_plan_build(&rd.pl[i], &rd.spec, i);
		if (err)
			return err;
	}
	for (self = 0; self < rd.spec.nhosts; self++) {
		rd.self = self;
		for (trial = 0; trial < TRIALS; trial++) {
			rd.nb = trial == 0 ? wb - 1 : 1 + rnd() % wb;
			rd.keep = trial % 2 == 0;
			rd.last = trial == 1 ? 1 : 1 + rnd() % bv;
			/* float and int32 rounds, late in either way */
			rd.dtype = trial == 1 || (trial == 2 && rnd() % 2) ?
				   RINX_W_INT32 : RINX_W_FIXED;
			for (b = 0; b < rd.nb; b++) {
				struct fr t;

				build(&t, &rd, self, self, 1, 0, ROUND, b);
				/* a jumbo block over its slots, each with
				 * the block's header as the library's */
				for (k = 0; k < bs; k++) {
					struct rinx_slot *sl =
						&rd.share[b * bs + k];

					n = bv - k * RINX_BLOCK_VALUES;
					if (n > RINX_BLOCK_VALUES)
						n = RINX_BLOCK_VALUES;
					memset(sl->v, 0, sizeof(sl->v));
					memcpy(sl->v, t.b + RINX_FRAME_HDR_LEN +
					       k * RINX_BLOCK_BYTES, n * 4);
					sl->exp = (__s16)ntohs(hdr(&t)->exp);
					sl->flags = hdr(&t)->flags;
					sl->count = ntohs(hdr(&t)->count);
				}
			}
			np = plan_frames(&rd, pf, MAXF / 4);
			err = handoff(&rd, trial, np, trial == 2);
			if (!err && trial == 0)
				err = direct(&rd, np);
			if (!err && trial == 0)
				err = direct_agg(&rd, np);
			if (err)
				return err;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int err, i;

	tl_needs_root("BPF_PROG_TEST_RUN");
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 1)
		tap_skip_all("cannot count CPUs");
	ia.xsk = ib.xsk = ic.xsk = -1;
	err = inst_open(&ia, "A");
	err = err ?: inst_open(&ib, "B");
	err = err ?: inst_open(&ic, "C");
	if (err)
		tap_skip_all("cannot load the host program: %s", strerror(-err));
	/* a fixed seed by default (runs are repeatable); another one as the
	 * second argument */
	if (argc > 2)
		rng = strtoull(argv[2], NULL, 0) | 1;
	tap_plan((int)ARRAY_SIZE(plans) * PLAN_CHECKS + 4);
	tap_diag("seed %#llx", (unsigned long long)rng);
	trace = getenv("RINX_TEST_TRACE");
	for (i = 0; i < (int)ARRAY_SIZE(plans); i++) {
		err = run_plan(i);
		if (err) {
			tap_ok(0, "%s: set up: %s", plans[i].name,
			       strerror(err < 0 ? -err : err));
			break;
		}
	}
	if (!err) {
		char buf[512];
		int a, len = 0;
		bool all = true;

		for (a = RINX_A_NONE + 1; a < RINX_A_MAX; a++) {
			len += snprintf(buf + len, sizeof(buf) - len,
					"%s%s %d/%d", a > 1 ? ", " : "",
					action_name[a], cov[0][a], cov[1][a]);
			all &= cov[0][a] > 0 && cov[1][a] > 0;
		}
		tap_ok(all, "every action finished by XDP and by the handler "
		       "(XDP/handler): %s", buf);
		/* a partial sum handed up again that finds the finished
		 * block in its slot (not sent on) needs the gather back
		 * before the handler ran: the gather carries this host's
		 * share, which the handler adds, so it is not required */
		len = 0;
		all = true;
		for (a = 0; a < V_MAX; a++) {
			len += snprintf(buf + len, sizeof(buf) - len,
					"%s%s %d", a ? ", " : "", via_name[a],
					cov_via[a]);
			all &= cov_via[a] > 0;
		}
		tap_ok(all, "coverages met as the pool gives them: %s", buf);
		len = 0;
		all = true;
		for (i = 0; i < 3; i++) {
			len += snprintf(buf + len, sizeof(buf) - len, "%s%s:",
					i ? "; " : "", i == 0 ? "352" : i == 1 ?
					"768" : "2048");
			for (a = RINX_A_ADD_FWD; a <= RINX_A_STORE_END; a++) {
				len += snprintf(buf + len, sizeof(buf) - len,
						" %d/%d", cov_sz[i][0][a],
						cov_sz[i][1][a]);
				all &= cov_sz[i][0][a] > 0 &&
				       cov_sz[i][1][a] > 0;
			}
			len += snprintf(buf + len, sizeof(buf) - len,
					", %d of another size refused",
					cov_shape[i]);
			all &= cov_shape[i] > 0;
		}
		tap_ok(all, "every block size: the ring's hops (add+fwd, "
		       "add+finish, store+fwd, store+end) finished by XDP and "
		       "by the handler (XDP/handler), frames of another size "
		       "refused: %s", buf);
		tap_ok(cov_dup[D_RESEND] && cov_dup[D_ANSWER],
		       "the handler met duplicates as XDP does: sum sent "
		       "again %d, finished block answered %d (finished "
		       "block not sent on %d)", cov_dup[D_RESEND],
		       cov_dup[D_ANSWER], cov_dup[D_FINAL_DROP]);
	}
	inst_close(&ia);
	inst_close(&ib);
	inst_close(&ic);
	return tap_done();
}
