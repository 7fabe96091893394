// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The plan compiler (user/plan/plan_ir.c): planners' plans on the GRID toy
 * turned into the engine's per-node tables, checked entry by entry against
 * the plans worked out by hand. Pure computation: no root, no namespaces.
 *
 * The spec is the one the testbed writes for `--gen grid-toy`: hosts W1-W8
 * (ranks 0-7), racks S1, S2, S3 and PS, all ina=switch, so the aggregator
 * node ids are S1 8, S2 9, S3 10, PS 11.
 *
 *   grid:   W1-W3 -> S1, W4-W6 -> S2 (W4 routed S1-S2), W7-W8 -> S3;
 *           S1, S2, S3 -> PS, which finishes and sends to every host
 *   ps-ina: class 0 (12/13 of the blocks): W1-W4 -> S1, the rest as grid;
 *           class 1 (1/13): W1-W4 straight to the PS (S1 is full)
 *   ps:     every worker -> PS
 *   switchml-rack: S1 sums W1-W4, S3 W7-W8, each on to S2, which sums
 *           them with W5, W6 and finishes
 *   atp:    co-located shards: every class finishes at a worker
 *   ring:   one ring of workers, compiled to the rack plans' ring tables
 *           in the planner's member order (on the toy and on a hand-made
 *           topology whose ring is not the ranks' order)
 * and what must fail: a plan whose aggregator the spec cannot run (S2
 * without INA), rings whose members aggregate racks (rina, har), a spec
 * whose hosts are not the topology's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "selftests/lib/testlib.h"
#include "user/ctl.h"
#include "user/plan/plan.h"

enum { S1 = 8, S2 = 9, S3 = 10, PS = 11 };

static void toy_spec(struct rinx_spec *s, const char *plan)
{
	static const char *const sw[4] = { "S1", "S2", "S3", "PS" };
	static const int at[8] = { 0, 0, 0, 0, 1, 1, 2, 2 };
	char err[160];
	int i;

	rinx_spec_init(s);
	snprintf(s->topo, sizeof(s->topo), "grid-toy");
	if (rinx_plan_parse(plan, &s->plan, &s->plan_nps, err, sizeof(err)))
		tap_diag("%s: %s", plan, err);
	s->nracks = 4;
	for (i = 0; i < 4; i++) {
		struct rinx_spec_rack *r = &s->racks[i];
		__u8 mac[6] = { 0x02, 0x72, 0x78, 0xfe, i, 1 };

		r->id = i;
		r->ina = RINX_INA_SWITCH;
		snprintf(r->name, sizeof(r->name), "%s", sw[i]);
		memcpy(r->mac, mac, 6);
		r->ip = htonl(0x0a470000 | i << 8 | 254);
	}
	s->nhosts = 8;
	for (i = 0; i < 8; i++) {
		struct rinx_spec_host *h = &s->hosts[i];
		__u8 mac[6] = { 0x02, 0x72, 0x78, 0, at[i], i + 1 };

		snprintf(h->name, sizeof(h->name), "W%d", i + 1);
		h->rank = i;
		h->rack = at[i];
		memcpy(h->mac, mac, 6);
		h->ip = htonl(0x0a470000 | at[i] << 8 | (i + 1));
	}
}

/* 2 racks x 4 hosts (ranks 0-3, 4-7), each rack's ina, host links and
 * uplinks at the rates given (Mbit/s, 0: none). */
static void racks_spec(struct rinx_spec *s, const char *plan, int ina,
		       __u32 link, __u32 uplink)
{
	char err[160];
	int i;

	rinx_spec_init(s);
	if (rinx_plan_parse(plan, &s->plan, &s->plan_nps, err, sizeof(err)))
		tap_diag("%s: %s", plan, err);
	s->nracks = 2;
	for (i = 0; i < 2; i++) {
		struct rinx_spec_rack *r = &s->racks[i];
		__u8 mac[6] = { 0x02, 0x72, 0x78, 0xfe, i, 1 };

		r->id = i;
		r->ina = ina;
		snprintf(r->name, sizeof(r->name), "agg%d", i);
		memcpy(r->mac, mac, 6);
		r->ip = htonl(0x0a470000 | i << 8 | 254);
		r->uplink_mbit = uplink;
	}
	s->nhosts = 8;
	for (i = 0; i < 8; i++) {
		struct rinx_spec_host *h = &s->hosts[i];
		__u8 mac[6] = { 0x02, 0x72, 0x78, 0, i / 4, i + 1 };

		snprintf(h->name, sizeof(h->name), "h%d", i);
		h->rank = i;
		h->rack = i / 4;
		memcpy(h->mac, mac, 6);
		h->ip = htonl(0x0a470000 | (i / 4) << 8 | (i + 1));
		h->link_mbit = link;
	}
}

/* Every rank's ceiling within 1e-9 of want (frames of RINX_FRAME_MAX). */
static int ceilings_are(const struct rinx_spec *s, int from, int to,
			double want)
{
	int r, ok = 1;

	for (r = from; r < to; r++) {
		double c = rinx_plan_ceiling(s, r, RINX_FRAME_MAX);

		if (c < want * (1 - 1e-9) || c > want * (1 + 1e-9)) {
			tap_diag("rank %d: ceiling %.3f blocks/s, want %.3f",
				 r, c, want);
			ok = 0;
		}
	}
	return ok;
}

static __u64 bits(const int *ids, int n)
{
	__u64 m = 0;
	int i;

	for (i = 0; i < n; i++)
		m |= 1ull << ids[i];
	return m;
}

/* The hop of node at (class k, type) has action a, mask m, next node to. */
static int hop_is(const struct rinx_spec *s, int node, int k, int type,
		  int a, __u64 m, int to)
{
	struct rinx_plan p;
	const struct rinx_hop *h;

	if (rinx_plan_build(&p, s, node))
		return 0;
	h = &p.hops[k][type - 1];
	if (h->action != a || h->mask != m || h->to != to) {
		tap_diag("node %d class %d type %d: action %d mask %#llx to %d",
			 node, k, type, h->action, (unsigned long long)h->mask,
			 h->to);
		return 0;
	}
	return 1;
}

static int starts(const struct rinx_spec *s, int node, int k, int to)
{
	struct rinx_plan p;

	if (rinx_plan_build(&p, s, node))
		return 0;
	if (p.start_to[k] != to || (to >= 0 &&
				    p.start_type[k] != RINX_T_CONTRIB)) {
		tap_diag("node %d class %d starts at %d type %d", node, k,
			 p.start_to[k], p.start_type[k]);
		return 0;
	}
	return 1;
}

/* A topology made by hand, its ring known: switches A and B, hosts H1-H4
 * in that order, H1 and H3 on B, H2 and H4 on A. The ring planner keeps
 * racks together, racks in the order of their first worker: B's H1, H3,
 * then A's H2, H4, so in ranks (H<i> is rank i - 1) the ring is
 * 0 -> 2 -> 1 -> 3 -> 0, not the ranks' order. */
static const int two_racks_ring[4] = { 0, 2, 1, 3 };

static int two_racks_spec(struct rinx_spec *s, const char *plan, char *path,
			  size_t len)
{
	static const int at[4] = { 1, 0, 1, 0 };
	char err[160];
	FILE *f;
	int i, fd;

	snprintf(path, len, "/tmp/rinx-plan-ir-XXXXXX");
	fd = mkstemp(path);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f)
		return -1;
	fprintf(f, "switch name=A\nswitch name=B\n");
	for (i = 0; i < 4; i++)
		fprintf(f, "host name=H%d\n", i + 1);
	for (i = 0; i < 4; i++)
		fprintf(f, "link a=H%d b=%s gbps=10\n", i + 1,
			at[i] ? "B" : "A");
	fprintf(f, "link a=A b=B gbps=10\n");
	if (fclose(f))
		return -1;
	rinx_spec_init(s);
	snprintf(s->topo, sizeof(s->topo), "%s", path);
	if (rinx_plan_parse(plan, &s->plan, &s->plan_nps, err, sizeof(err)))
		tap_diag("%s: %s", plan, err);
	s->nracks = 2;
	for (i = 0; i < 2; i++) {
		struct rinx_spec_rack *r = &s->racks[i];

		r->id = i;
		r->ina = RINX_INA_NONE;
		snprintf(r->name, sizeof(r->name), "%s", i ? "B" : "A");
	}
	s->nhosts = 4;
	for (i = 0; i < 4; i++) {
		struct rinx_spec_host *h = &s->hosts[i];
		__u8 mac[6] = { 0x02, 0x72, 0x78, 0, at[i], i + 1 };

		snprintf(h->name, sizeof(h->name), "H%d", i + 1);
		h->rank = i;
		h->rack = at[i];
		memcpy(h->mac, mac, 6);
		h->ip = htonl(0x0a470000 | at[i] << 8 | (i + 1));
	}
	return 0;
}

/* Every node's tables of the ring m[0..M) checked against the ring's
 * definition: class k starts at m[k], which sends its share to m[k+1]; m[k+j]
 * (j = 1..M-1) adds step j - 1 from m[k+j-1] and sends it on to m[k+j+1],
 * m[k-1] finishing; then m[k+j] (j = 0..M-2) stores step j from m[k+j-1],
 * passing it on but at the last. */
static int ring_is(const struct rinx_spec *s, const int *m, int M)
{
	struct rinx_plan p;
	int k, j, ok = 1;

	for (k = 0; k < M; k++)
		for (j = 0; j < M; j++) {
			int node = m[(k + j) % M], prev = m[(k + j + M - 1) % M];
			int next = m[(k + j + 1) % M];
			const struct rinx_hop *h, *g;

			if (rinx_plan_build(&p, s, node) || p.nclasses != M ||
			    p.plen != M || p.cmap[k] != k ||
			    p.root[k] != m[(k + M - 1) % M]) {
				tap_diag("node %d: %d classes, root of %d: %d",
					 node, p.nclasses, k, p.root[k]);
				return 0;
			}
			h = &p.hops[k][RINX_T_REDUCE - 1];
			g = &p.hops[k][RINX_T_GATHER - 1];
			if (j == 0)
				ok &= p.start_to[k] == next &&
				      p.start_type[k] == RINX_T_REDUCE &&
				      h->action == RINX_A_NONE;
			else
				ok &= p.start_to[k] == -1 &&
				      h->action == (j == M - 1 ?
						    RINX_A_ADD_FINISH :
						    RINX_A_ADD_FWD) &&
				      h->from == prev && h->step == j - 1 &&
				      h->to == next;
			if (j <= M - 2)
				ok &= g->action == (j == M - 2 ?
						    RINX_A_STORE_END :
						    RINX_A_STORE_FWD) &&
				      g->from == prev && g->step == j &&
				      (j == M - 2 || g->to == next);
			else
				ok &= g->action == RINX_A_NONE;
			if (!ok) {
				tap_diag("class %d, node %d (position %d): start "
					 "-> %d, reduce %d from %d step %d -> "
					 "%d, gather %d from %d step %d", k,
					 node, j, p.start_to[k], h->action,
					 h->from, h->step, h->to, g->action,
					 g->from, g->step);
				return 0;
			}
		}
	return ok;
}

int main(void)
{
	static const int w123[] = { 0, 1, 2 }, w456[] = { 3, 4, 5 };
	static const int w78[] = { 6, 7 }, sws[] = { S1, S2, S3 };
	static const int w1234[] = { 0, 1, 2, 3 }, w56[] = { 4, 5 };
	struct rinx_spec s;
	struct rinx_plan p;
	int ok, i, k, cnt[2];

	tap_plan(32);

	toy_spec(&s, "topo:grid");
	ok = !rinx_plan_build(&p, &s, PS) && p.nnodes == 12 &&
	     p.nclasses == 1 && p.root[0] == PS;
	tap_ok(ok, "grid: 12 nodes (8 ranks, S1-S3, PS), one class, root PS");
	tap_ok(starts(&s, 3, 0, S2) && starts(&s, 0, 0, S1) &&
	       starts(&s, 6, 0, S3) && starts(&s, S1, 0, -1),
	       "grid: W4 sends its share to S2, W1 to S1, W7 to S3; a switch "
	       "starts nothing");
	tap_ok(hop_is(&s, S2, 0, RINX_T_CONTRIB, RINX_A_AGG_FWD,
		      bits(w456, 3), PS) &&
	       hop_is(&s, S1, 0, RINX_T_CONTRIB, RINX_A_AGG_FWD,
		      bits(w123, 3), PS) &&
	       hop_is(&s, S3, 0, RINX_T_CONTRIB, RINX_A_AGG_FWD,
		      bits(w78, 2), PS),
	       "grid: S2 sums {W4,W5,W6}, S1 {W1,W2,W3}, S3 {W7,W8}, each on "
	       "to the PS");
	ok = hop_is(&s, PS, 0, RINX_T_REDUCE, RINX_A_AGG_FINISH,
		    bits(sws, 3), PS) && !rinx_plan_build(&p, &s, PS) &&
	     p.hops[0][RINX_T_REDUCE - 1].rack == RINX_GROUP_EVERY &&
	     !(p.hops[0][RINX_T_REDUCE - 1].flags & RINX_HOP_SELF);
	tap_ok(ok, "grid: the PS sums {S1,S2,S3} without a share of its own "
	       "and sends the block to every host");
	ok = 1;
	for (i = 0; i < 8; i++) {
		const struct rinx_hop *g;

		ok &= !rinx_plan_build(&p, &s, i);
		g = &p.hops[0][RINX_T_GATHER - 1];
		ok &= g->action == RINX_A_STORE_END && g->from == PS &&
		      g->step == 0;
	}
	tap_ok(ok, "grid: every worker stores the block the PS sends");

	toy_spec(&s, "topo:ps-ina");
	ok = !rinx_plan_build(&p, &s, 0) && p.nclasses == 2 && p.plen == 13;
	cnt[0] = cnt[1] = 0;
	for (i = 0; ok && i < p.plen; i++)
		cnt[p.cmap[i] & 1]++;
	tap_ok(ok && cnt[0] == 12 && cnt[1] == 1,
	       "ps-ina: shares 12/13 and 1/13 as a pattern of 13 (%d, %d)",
	       cnt[0], cnt[1]);
	/* which class is the big one: the one S1 aggregates */
	k = p.start_to[0] == S1 ? 0 : 1;
	tap_ok(starts(&s, 0, k, S1) && starts(&s, 3, k, S1) &&
	       starts(&s, 0, !k, PS) && starts(&s, 3, !k, PS),
	       "ps-ina: W1-W4 send to S1 in the big class, to the PS in the "
	       "small one");
	tap_ok(hop_is(&s, S1, k, RINX_T_CONTRIB, RINX_A_AGG_FWD,
		      bits(w1234, 4), PS) &&
	       hop_is(&s, S2, !k, RINX_T_CONTRIB, RINX_A_AGG_FWD,
		      bits(w56, 2), PS),
	       "ps-ina: S1 sums W1-W4 (big class), S2 sums W5-W6 (both)");
	{
		int ps1[] = { 0, 1, 2, 3, S2, S3 };

		tap_ok(hop_is(&s, PS, !k, RINX_T_CONTRIB, RINX_A_AGG_FINISH,
			      bits(ps1, 6), PS) &&
		       hop_is(&s, S1, !k, RINX_T_CONTRIB, RINX_A_NONE, 0, 0),
		       "ps-ina: in the small class the PS sums W1-W4, S2, S3 "
		       "and S1 takes no part");
	}

	toy_spec(&s, "topo:ps");
	tap_ok(hop_is(&s, PS, 0, RINX_T_CONTRIB, RINX_A_AGG_FINISH, 0xff, PS) &&
	       starts(&s, 0, 0, PS) && starts(&s, 7, 0, PS) &&
	       hop_is(&s, S1, 0, RINX_T_CONTRIB, RINX_A_NONE, 0, 0),
	       "ps: every worker to the PS, which sums all 8; no switch "
	       "aggregates");

	toy_spec(&s, "topo:switchml-rack");
	ok = !rinx_plan_build(&p, &s, S2) && p.nclasses == 1 &&
	     p.root[0] == S2 &&
	     hop_is(&s, S1, 0, RINX_T_CONTRIB, RINX_A_AGG_FWD,
		    bits(w1234, 4), S2) &&
	     hop_is(&s, S3, 0, RINX_T_CONTRIB, RINX_A_AGG_FWD,
		    bits(w78, 2), S2) && starts(&s, 4, 0, S2) &&
	     starts(&s, 0, 0, S1);
	tap_ok(ok, "switchml-rack: S1 sums W1-W4 and S3 W7-W8 for S2, which "
	       "finishes (W5 sends to S2)");

	toy_spec(&s, "topo:atp");
	ok = !rinx_plan_build(&p, &s, 0) && p.nclasses > 1;
	for (k = 0; ok && k < p.nclasses; k++)
		ok = p.root[k] >= 0 && p.root[k] < 8;
	for (i = 0; ok && i < 12; i++) {
		struct rinx_plan r;

		ok = !rinx_plan_build(&r, &s, i) &&
		     r.nclasses == p.nclasses;
	}
	tap_ok(ok, "atp: %d classes compile on every node, each finishing "
	       "at a worker (its co-located shard)", p.nclasses);

	toy_spec(&s, "topo:forest");
	ok = !rinx_plan_build(&p, &s, 0) && p.nclasses >= 1;
	for (k = 0; ok && k < p.nclasses; k++) {
		struct rinx_plan r;
		const struct rinx_hop *h;

		ok = p.root[k] >= 0 && p.root[k] < 8 &&
		     !rinx_plan_build(&r, &s, p.root[k]);
		h = &r.hops[k][RINX_T_CONTRIB - 1];
		ok = ok && h->action == RINX_A_AGG_FINISH &&
		     (h->flags & RINX_HOP_SELF) && h->to == p.root[k];
	}
	tap_ok(ok, "forest: every class finishes at a worker that adds its "
	       "own share");

	/* a worker never starts a class it aggregates itself */
	ok = 1;
	for (k = 0; k < p.nclasses; k++) {
		struct rinx_plan r;

		ok &= !rinx_plan_build(&r, &s, p.root[k]) &&
		      r.start_to[k] == -1;
	}
	tap_ok(ok, "forest: a root sends no share of its own class");

	/* The pacer's ceiling: the own blocks per second at which the
	 * busiest link of the plan runs full. Link frames per second at 1
	 * Gbit/s: 1e9 / 8 / RINX_FRAME_MAX. */
	{
		double lf = 1e9 / 8 / RINX_FRAME_MAX;

		/* ring of 8: a block makes 14 hops, each host sends 14 frames
		 * per 8 blocks (one own), the rack boundary 3->4 carries as
		 * many */
		racks_spec(&s, "ring", RINX_INA_NONE, 1000, 1000);
		tap_ok(ceilings_are(&s, 0, 8, lf / 14),
		       "ceiling: ring of 8 at 1 Gbit/s, one own block per 14 "
		       "frames of a host's link");
		racks_spec(&s, "ring", RINX_INA_NONE, 1000, 500);
		tap_ok(ceilings_are(&s, 0, 8, lf / 2 / 14),
		       "ceiling: the uplinks at 500 Mbit/s are the busiest "
		       "(the ring's rack boundary)");
		/* Rina, both ToRs aggregating: a host sends its share of
		 * every block and gets the block back; each uplink carries
		 * one partial sum and one finished block per block */
		racks_spec(&s, "rina", RINX_INA_SWITCH, 1000, 1000);
		tap_ok(ceilings_are(&s, 0, 8, lf),
		       "ceiling: all-INA Rina, every block one frame each way "
		       "on every link");
		racks_spec(&s, "rina", RINX_INA_SWITCH, 1000, 250);
		tap_ok(ceilings_are(&s, 0, 8, lf / 4),
		       "ceiling: all-INA Rina with 250 Mbit/s uplinks");
		/* agents (ranks 0 and 4) add their own share on the way:
		 * they start nothing (no ceiling); an agent's link down
		 * carries per block the 3 shares of its rack and the other
		 * agent's partial or finished block */
		racks_spec(&s, "rina", RINX_INA_AGENT, 1000, 1000);
		tap_ok(ceilings_are(&s, 1, 4, lf / 4) &&
		       ceilings_are(&s, 5, 8, lf / 4) &&
		       ceilings_are(&s, 0, 1, 0) && ceilings_are(&s, 4, 5, 0),
		       "ceiling: agent Rina, the agents' links down are the "
		       "busiest (4 frames per block)");
		racks_spec(&s, "ring", RINX_INA_NONE, 0, 0);
		tap_ok(ceilings_are(&s, 0, 8, 0),
		       "ceiling: none without link rates");
		/* the GRID toy at 20 Mbit/s per Gbit/s: a topology plan's
		 * ceiling is every worker's own link (10 Gbit/s), whatever
		 * the plan (the simulator's rates: GRID 3, ps 1) */
		toy_spec(&s, "topo:grid");
		s.scale_mbit = 20;
		tap_ok(ceilings_are(&s, 0, 8, 10 * lf * 20 / 1000),
		       "ceiling: GRID on the toy at scale 20, the workers' "
		       "links: 200 Mbit/s of frames, not GRID's 60");
		toy_spec(&s, "topo:ps");
		s.scale_mbit = 20;
		tap_ok(ceilings_are(&s, 0, 8, 10 * lf * 20 / 1000),
		       "ceiling: no INA on the toy, the same links, the same "
		       "ceiling (not the plan's 20 Mbit/s)");
	}

	/* topo:ring: the rack plans' ring over the planner's members */
	{
		static const int toy[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
		char path[64];

		ok = !two_racks_spec(&s, "topo:ring", path, sizeof(path));
		ok = ok && !rinx_plan_build(&p, &s, 0) && p.nmembers == 4;
		for (i = 0; ok && i < 4; i++)
			ok = p.member[i] == two_racks_ring[i];
		tap_ok(ok, "ring on a hand-made topology: members H1 H3 H2 H4 "
		       "(ranks 0 2 1 3), the planner's order");
		tap_ok(ok && ring_is(&s, two_racks_ring, 4),
		       "ring on a hand-made topology: every node's tables are "
		       "the ring 0 -> 2 -> 1 -> 3 -> 0, 4 classes");
		s.racks[0].ina = RINX_INA_AGENT;
		tap_ok(rinx_plan_build(&p, &s, 0) == -EINVAL,
		       "ring on a spec whose rack A aggregates by an agent: "
		       "refused (the ring tables would make H2 sum its rack)");
		unlink(path);
		toy_spec(&s, "topo:ring");
		tap_ok(ring_is(&s, toy, 8),
		       "ring on the toy: W1..W8 in rack order, 8 classes, "
		       "every node's tables");
	}

	/* what cannot run */
	toy_spec(&s, "topo:grid");
	s.racks[1].ina = RINX_INA_NONE;
	tap_ok(rinx_plan_build(&p, &s, 0) == -EINVAL,
	       "grid with S2 not aggregating in the spec: refused");
	toy_spec(&s, "topo:rina");
	tap_ok(rinx_plan_build(&p, &s, 0) == -EOPNOTSUPP,
	       "a ring whose members are the toy's aggregating switches "
	       "(topo:rina): refused (-EOPNOTSUPP)");
	toy_spec(&s, "topo:har");
	tap_ok(rinx_plan_build(&p, &s, 0) == -EOPNOTSUPP,
	       "a ring of rack leaders (topo:har): refused (-EOPNOTSUPP)");
	toy_spec(&s, "topo:grid");
	snprintf(s.hosts[7].name, sizeof(s.hosts[7].name), "X8");
	tap_ok(rinx_plan_build(&p, &s, 0) == -EINVAL,
	       "a spec host that is not a topology worker: refused");
	toy_spec(&s, "topo:grid");
	s.topo[0] = 0;
	tap_ok(rinx_plan_build(&p, &s, 0) == -EINVAL,
	       "topo:NAME without topo= in the spec: refused");
	{
		char err[160] = "";
		int kind, nps;

		tap_ok(rinx_plan_parse("topo:nosuch", &kind, &nps, err,
				       sizeof(err)) == -EINVAL &&
		       strstr(err, "planner"),
		       "an unknown planner: refused by name (%s)", err);
	}
	return tap_done();
}
