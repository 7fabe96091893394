// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Plan compiler: the tables of every node of a job (user/plan/plan.h), for each
 * plan the one data plane runs.
 *
 * Ring plans (ring, rina, har) go round a ring of members, where a member is
 * a host (adds its share in XDP) or a whole INA rack (Rina: its aggregator
 * sums the rack's contributions and the partial sum from the previous
 * member, and multicasts finished blocks into the rack). Class k of M starts
 * at member k; reduce: member k+j (j = 0..M-1) receives step j-1 from member
 * k+j-1 and member k-1 finishes. Gather: member k+j (j = 0..M-2) receives
 * step j from member k+j-1 and passes step j+1 on; an INA member sends the
 * same frame into its rack, so its workers see step j+1 (step 0 at the
 * finishing rack). H-AR is the same ring over rack leaders that aggregate
 * their rack in their host program (the reduce to the leader, the ring
 * among leaders and the broadcast in the rack pipeline block by block).
 *
 * Star and tree plans (ps, ps-ina, tree, dbtree): every class has a root
 * host. Contributors send their share (step 0) to their aggregator; an
 * aggregator (an INA ToR, a rack's agent, an inner tree node, a server)
 * sums its contributors in a slot, adds its own share when it is a host,
 * and sends the sum on (step 0) or, at the root, stores it and sends it to
 * the fabric's group: the switches replicate it, one copy to every host (a
 * host cannot copy a frame in XDP, so fan-out is the network's job, as
 * multicast is in a fabric that offers it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/log.h"
#include "user/plan/plan.h"
#include "user/plan/pplan.h"
#include "user/plan/spec.h"
#include "user/plan/topo.h"

static const char *const kind_name[RINX_PLAN_MAX] = {
	[RINX_PLAN_RINA] = "rina", [RINX_PLAN_RING] = "ring",
	[RINX_PLAN_PS] = "ps", [RINX_PLAN_PSINA] = "ps-ina",
	[RINX_PLAN_HAR] = "har", [RINX_PLAN_TREE] = "tree",
	[RINX_PLAN_DBTREE] = "dbtree", [RINX_PLAN_TOPO] = "topo",
};

int rinx_plan_parse(const char *name, int *kind, int *nps, char *err,
		    size_t errlen)
{
	const char *colon = strchr(name, ':');
	size_t len = colon ? (size_t)(colon - name) : strlen(name);
	char *end;
	long v = 0;
	int k;

	for (k = 0; k < RINX_PLAN_MAX; k++)
		if (strlen(kind_name[k]) == len &&
		    !strncmp(name, kind_name[k], len))
			break;
	if (k == RINX_PLAN_TOPO) {
		const struct pp_planner *pl;

		pl = colon ? pp_planner_find(colon + 1) : NULL;
		if (!pl)
			return rinx_seterr(err, errlen, -EINVAL, "plan '%s': "
					   "topo:NAME needs a planner NAME "
					   "(rinxctl sim --list)", name);
		*kind = k;
		*nps = (int)(pl - pp_planners) + 1;
		return 0;
	}
	if (k == RINX_PLAN_MAX)
		return rinx_seterr(err, errlen, -EINVAL, "unknown plan '%s' "
				   "(ring, rina, ps[:N], ps-ina[:N], har, tree, "
				   "dbtree)", name);
	if (colon) {
		if (k != RINX_PLAN_PS && k != RINX_PLAN_PSINA)
			return rinx_seterr(err, errlen, -EINVAL, "plan '%s': %s "
					   "takes no :N", name, kind_name[k]);
		errno = 0;
		v = strtol(colon + 1, &end, 10);
		if (errno || *end || end == colon + 1 || v < 1 ||
		    v > RINX_MAX_CLASSES)
			return rinx_seterr(err, errlen, -EINVAL, "plan '%s': N "
					   "of %s:N must be 1..%d servers", name,
					   kind_name[k], RINX_MAX_CLASSES);
	}
	*kind = k;
	*nps = (int)v;
	return 0;
}

const char *rinx_plan_name(int kind, int nps, char *buf, size_t len)
{
	if (kind < 0 || kind >= RINX_PLAN_MAX)
		kind = RINX_PLAN_RINA;
	if (kind == RINX_PLAN_TOPO)
		snprintf(buf, len, "topo:%s", nps >= 1 && nps <= pp_nplanners() ?
			 pp_planners[nps - 1].name : "?");
	else if (nps > 1)
		snprintf(buf, len, "%s:%d", kind_name[kind], nps);
	else
		snprintf(buf, len, "%s", kind_name[kind]);
	return buf;
}

static int rack_hosts(const struct rinx_spec *s, int ri)
{
	int r, n = 0;

	for (r = 0; r < s->nhosts; r++)
		n += s->hosts[r].rack == s->racks[ri].id;
	return n;
}

void rinx_plan_spec(struct rinx_spec *s)
{
	int i;

	/* a topology plan says itself which switch aggregates what */
	if (s->plan == RINX_PLAN_TOPO)
		return;
	for (i = 0; i < s->nracks; i++) {
		struct rinx_spec_rack *r = &s->racks[i];

		switch (s->plan) {
		case RINX_PLAN_RING:
		case RINX_PLAN_PS:
		case RINX_PLAN_TREE:
		case RINX_PLAN_DBTREE:
			r->ina = RINX_INA_NONE;
			break;
		case RINX_PLAN_HAR:
			r->ina = RINX_INA_AGENT;
			break;
		}
		/* an agent alone in its rack has nobody to aggregate */
		if (r->ina == RINX_INA_AGENT && rack_hosts(s, i) < 2)
			r->ina = RINX_INA_NONE;
	}
}

int rinx_plan_agg_node(const struct rinx_spec *s, int ri)
{
	int i, n = 0;

	if (ri < 0 || ri >= s->nracks || s->racks[ri].ina != RINX_INA_SWITCH)
		return -1;
	for (i = 0; i < ri; i++)
		n += s->racks[i].ina == RINX_INA_SWITCH;
	return s->nhosts + n;
}

/* Lowest rank of the rack, -1 if empty. */
static int rack_agent(const struct rinx_spec *s, int rack_id)
{
	int i, best = -1;

	for (i = 0; i < s->nhosts; i++)
		if (s->hosts[i].rack == rack_id &&
		    (best < 0 || s->hosts[i].rank < best))
			best = s->hosts[i].rank;
	return best;
}

int rinx_plan_agent_of_rack(const struct rinx_spec *s, int ri)
{
	if (ri < 0 || ri >= s->nracks)
		return -1;
	return rack_agent(s, s->racks[ri].id);
}

int rinx_plan_agent_of(const struct rinx_spec *s, int rank)
{
	const struct rinx_spec_host *h = rinx_spec_rank(s, rank);
	int ri;

	if (!h)
		return -1;
	ri = rinx_spec_rack_index(s, h->rack);
	if (ri < 0 || s->racks[ri].ina == RINX_INA_NONE)
		return -1;
	return rack_agent(s, h->rack) == rank ? ri : -1;
}

/* The member node of an INA rack. */
static int rack_member(const struct rinx_spec *s, int ri)
{
	return s->racks[ri].ina == RINX_INA_SWITCH ? rinx_plan_agg_node(s, ri) :
	       rack_agent(s, s->racks[ri].id);
}

/* Is node an INA rack's aggregator? Its rack index or -1. */
static int member_rack(const struct rinx_spec *s, int node)
{
	int i;

	for (i = 0; i < s->nracks; i++)
		if (s->racks[i].ina != RINX_INA_NONE && rack_member(s, i) == node)
			return i;
	return -1;
}

/* Hosts of rack index ri (-1: the hosts of no declared rack) as node bits. */
static __u64 rack_bits(const struct rinx_spec *s, int ri)
{
	__u64 m = 0;
	int r;

	for (r = 0; r < s->nhosts; r++)
		if (rinx_spec_rack_index(s, rinx_spec_rank(s, r)->rack) == ri)
			m |= 1ull << r;
	return m;
}

/* ---- the tables of every node, built at once ---- */

struct bld {
	const struct rinx_spec *s;
	struct rinx_plan *p;	/* shared part: nodes, classes, members */
	struct rinx_hop hop[RINX_MAX_NODES][RINX_MAX_CLASSES][RINX_HOP_TYPES];
	int start_to[RINX_MAX_NODES][RINX_MAX_CLASSES];
	int start_type[RINX_MAX_NODES][RINX_MAX_CLASSES];
};

static void set_hop(struct bld *b, int node, int k, int type,
		    const struct rinx_hop *h)
{
	b->hop[node][k][type - 1] = *h;
}

static void start(struct bld *b, int node, int k, int to, int type)
{
	b->start_to[node][k] = to;
	b->start_type[node][k] = type;
}

static int build_nodes(struct rinx_plan *p, const struct rinx_spec *s)
{
	int i, r, ri;

	p->nnodes = s->nhosts;
	for (i = 0; i < s->nracks; i++)
		if (s->racks[i].ina == RINX_INA_SWITCH)
			p->nnodes++;
	if (p->nnodes > RINX_MAX_NODES)
		return -E2BIG;
	/* nodes: hosts, then switch aggregators */
	for (r = 0; r < s->nhosts; r++) {
		const struct rinx_spec_host *h = rinx_spec_rank(s, r);
		struct rinx_node *n = &p->nodes[r];

		if (!h)
			return -EINVAL;
		memcpy(n->mac, h->mac, 6);
		n->ip = h->ip;
		ri = rinx_spec_rack_index(s, h->rack);
		n->rack = ri < 0 ? RINX_NO_RACK : (__u8)h->rack;
	}
	for (i = 0; i < s->nracks; i++) {
		int id = rinx_plan_agg_node(s, i);

		if (id < 0)
			continue;
		memcpy(p->nodes[id].mac, s->racks[i].mac, 6);
		p->nodes[id].ip = s->racks[i].ip;
		p->nodes[id].rack = s->racks[i].id;
	}
	return 0;
}

/* Equal shares: class k gets every k-th block of nclasses. */
static void even_classes(struct rinx_plan *p, int n)
{
	int i;

	p->nclasses = n;
	p->plen = n;
	for (i = 0; i < n; i++)
		p->cmap[i] = i;
}

/* Host ranks in rack order (racks as the spec lists them, then the hosts
 * of no declared rack), each rack in rank order. */
static int rack_order(const struct rinx_spec *s, int *ord)
{
	int i, r, n = 0;

	for (i = 0; i < s->nracks; i++)
		for (r = 0; r < s->nhosts; r++)
			if (rinx_spec_rank(s, r)->rack == s->racks[i].id)
				ord[n++] = r;
	for (r = 0; r < s->nhosts; r++)
		if (rinx_spec_rack_index(s, rinx_spec_rank(s, r)->rack) < 0)
			ord[n++] = r;
	return n;
}

int rinx_plan_ring(const struct rinx_spec *s, struct rinx_plan *p,
		   struct rinx_hop (*hop)[RINX_MAX_CLASSES][RINX_HOP_TYPES],
		   int (*start_to)[RINX_MAX_CLASSES],
		   int (*start_type)[RINX_MAX_CLASSES])
{
	int r, k, j, M = p->nmembers;

	if (M > RINX_MAX_CLASSES || M < 1)
		return -E2BIG;
	even_classes(p, M);
	for (k = 0; k < M; k++) {
		p->root[k] = p->member[(k + M - 1) % M];
		for (j = 0; j < M; j++) {
			int node = p->member[(k + j) % M];
			int prev = p->member[(k + j - 1 + M) % M];
			int next = p->member[(k + j + 1) % M];
			int ri = member_rack(s, node);
			struct rinx_hop h = { 0 };

			if (ri >= 0) {
				h.action = j == M - 1 ? RINX_A_AGG_FINISH :
							RINX_A_AGG_FWD;
				/* an agent adds its own share itself */
				h.mask = rack_bits(s, ri) &
					 ~(node < s->nhosts ? 1ull << node : 0);
				h.flags = RINX_HOP_ANSWER |
					  (node < s->nhosts ? RINX_HOP_SELF : 0);
				h.rack = s->racks[ri].id;
				h.to = M > 1 ? next : node;
				h.out_step = j == M - 1 ? 0 : j;
				h.from = RINX_NO_SEND;
				if (j > 0) {
					h.mask |= 1ull << prev;
					h.from = prev;
					h.step = j - 1;
					hop[node][k][RINX_T_REDUCE - 1] = h;
				}
				hop[node][k][RINX_T_CONTRIB - 1] = h;
			} else if (j > 0) {
				h.action = j == M - 1 ? RINX_A_ADD_FINISH :
							RINX_A_ADD_FWD;
				h.from = prev;
				h.step = j - 1;
				h.to = next;
				hop[node][k][RINX_T_REDUCE - 1] = h;
			} else if (M > 1) {
				start_to[node][k] = next;
				start_type[node][k] = RINX_T_REDUCE;
			}
		}
		/* gather */
		for (j = 0; j <= M - 2; j++) {
			int node = p->member[(k + j) % M];
			int ri = member_rack(s, node);
			struct rinx_hop h = { 0 };

			h.from = p->member[(k + j - 1 + M) % M];
			h.step = j;
			h.to = p->member[(k + j + 1) % M];
			h.rack = RINX_NO_RACK;
			if (ri >= 0) {
				h.action = j == M - 2 ? RINX_A_MCAST_END :
							RINX_A_MCAST_FWD;
				h.out_step = j + 1;
				h.rack = s->racks[ri].id;
				if (j == M - 2)
					h.to = node;
			} else {
				h.action = j == M - 2 ? RINX_A_STORE_END :
							RINX_A_STORE_FWD;
			}
			hop[node][k][RINX_T_GATHER - 1] = h;
		}
		/* the workers (not the agent) of an INA rack send every block
		 * to their aggregator and store what it multicasts into the
		 * rack: the finishing member sends step 0, the gather member
		 * at position pos step pos + 1 */
		for (j = 0; j < M; j++) {
			int agg = p->member[(k + j) % M];
			int ri = member_rack(s, agg);
			struct rinx_hop h = { 0 };

			if (ri < 0)
				continue;
			h.action = RINX_A_STORE_END;
			h.from = agg;
			h.step = j == M - 1 ? 0 : j + 1;
			h.rack = RINX_NO_RACK;
			for (r = 0; r < s->nhosts; r++) {
				if (r == agg || !(rack_bits(s, ri) & (1ull << r)))
					continue;
				h.to = r;
				hop[r][k][RINX_T_GATHER - 1] = h;
				start_to[r][k] = agg;
				start_type[r][k] = RINX_T_CONTRIB;
			}
		}
	}
	return 0;
}

static int build_ring(struct bld *b)
{
	const struct rinx_spec *s = b->s;
	struct rinx_plan *p = b->p;
	int i, r, m = 0;

	/* members in rack order; hosts without a declared rack last */
	for (i = 0; i < s->nracks; i++) {
		if (s->racks[i].ina != RINX_INA_NONE) {
			if (rack_hosts(s, i))
				p->member[m++] = rack_member(s, i);
			continue;
		}
		for (r = 0; r < s->nhosts; r++)
			if (rinx_spec_rank(s, r)->rack == s->racks[i].id)
				p->member[m++] = r;
	}
	for (r = 0; r < s->nhosts; r++)
		if (rinx_spec_rack_index(s, rinx_spec_rank(s, r)->rack) < 0)
			p->member[m++] = r;
	p->nmembers = m;
	return rinx_plan_ring(s, p, b->hop, b->start_to, b->start_type);
}

/* The aggregator `node` of class k sums `mask` (and its own share if it is
 * a host) and sends the sum to `to`. */
static void agg_fwd(struct bld *b, int node, int k, __u64 mask, int to)
{
	struct rinx_hop h = { 0 };

	h.action = RINX_A_AGG_FWD;
	h.mask = mask;
	h.flags = node < b->s->nhosts ? RINX_HOP_SELF : 0;
	h.from = RINX_NO_SEND;
	h.to = to;
	h.rack = RINX_NO_RACK;
	set_hop(b, node, k, RINX_T_CONTRIB, &h);
	set_hop(b, node, k, RINX_T_REDUCE, &h);
}

/* ps-ina: the ToR aggregator `node` of rack r sums class k in the job's
 * pool of r->pool slots (ATP's aggregator pool, hashed by job and block)
 * unless the rack keeps a slot per block (pool=0). A pool larger than the
 * window is the window: the ToR has no more slots for a job. */
static void tor_pool(struct bld *b, int node, int k,
		     const struct rinx_spec_rack *r)
{
	__u32 pool = r->pool ? r->pool : RINX_POOL_DEFAULT;
	int t;

	if (pool > b->s->window)
		pool = b->s->window;
	for (t = RINX_T_REDUCE; t <= RINX_T_CONTRIB; t++) {
		struct rinx_hop *h = &b->hop[node][k][t - 1];

		if (h->action != RINX_A_AGG_FWD)
			continue;
		/* its sums tell the server what they cover */
		h->flags |= RINX_HOP_COVER;
		if (r->pool == RINX_POOL_PER_BLOCK)
			continue;
		h->flags |= RINX_HOP_POOL;
		h->pool = pool;
	}
}

void rinx_plan_store_from(struct rinx_hop
			  (*hop)[RINX_MAX_CLASSES][RINX_HOP_TYPES],
			  int nhosts, int k, int root)
{
	int r;

	for (r = 0; r < nhosts; r++) {
		struct rinx_hop g = { 0 };

		if (r == root)
			continue;
		g.action = RINX_A_STORE_END;
		g.from = root;
		g.to = r;
		g.rack = RINX_NO_RACK;
		hop[r][k][RINX_T_GATHER - 1] = g;
	}
}

/* The root host of class k sums `mask` and its own share, stores the
 * finished block and sends it to every other host at once: to the fabric's
 * group (RINX_GROUP_EVERY), which the switches replicate, one copy per
 * host. Every host stores it (and turns it into its next own block). */
static void root_bcast(struct bld *b, int k, int root, __u64 mask)
{
	const struct rinx_spec *s = b->s;
	struct rinx_hop h = { 0 };

	h.action = RINX_A_AGG_FINISH;
	h.mask = mask;
	h.flags = RINX_HOP_SELF;
	h.from = RINX_NO_SEND;
	h.to = root;
	h.rack = s->nhosts > 1 ? RINX_GROUP_EVERY : RINX_NO_RACK;
	set_hop(b, root, k, RINX_T_CONTRIB, &h);
	set_hop(b, root, k, RINX_T_REDUCE, &h);
	rinx_plan_store_from(b->hop, s->nhosts, k, root);
}

/* Parameter servers spread over the racks: the i-th is the i-th host of a
 * round robin over the racks in rack order. */
static int pick_servers(const struct rinx_spec *s, int want, int *srv)
{
	int ord[RINX_MAX_NODES], n = rack_order(s, ord), i, round, got = 0;
	int ngrp = s->nracks + 1, gi;

	for (round = 0; got < want && round < n; round++)
		for (gi = 0; gi < ngrp && got < want; gi++) {
			int seen = 0;

			for (i = 0; i < n; i++) {
				int ri = rinx_spec_rack_index(s, rinx_spec_rank(s, ord[i])->rack);

				if ((ri < 0 ? s->nracks : ri) != gi)
					continue;
				if (seen++ == round) {
					srv[got++] = ord[i];
					break;
				}
			}
		}
	return got;
}

static int build_ps(struct bld *b)
{
	const struct rinx_spec *s = b->s;
	struct rinx_plan *p = b->p;
	int ina = p->kind == RINX_PLAN_PSINA;
	int srv[RINX_MAX_NODES], nps = s->plan_nps > 0 ? s->plan_nps : 1;
	int k, ri, r;

	if (nps > s->nhosts)
		nps = s->nhosts;
	nps = pick_servers(s, nps, srv);
	even_classes(p, nps);
	for (k = 0; k < nps; k++) {
		int P = srv[k];
		__u64 mask = 0, via = 0;

		p->root[k] = P;
		for (ri = -1; ri < s->nracks; ri++) {
			__u64 w = rack_bits(s, ri) & ~(1ull << P);
			int A = -1;

			if (!w)
				continue;
			if (ina && ri >= 0 && s->racks[ri].ina == RINX_INA_SWITCH)
				A = rinx_plan_agg_node(s, ri);
			if (ina && ri >= 0 && s->racks[ri].ina == RINX_INA_AGENT) {
				A = rack_agent(s, s->racks[ri].id);
				/* the server leads its rack itself */
				if (A == P)
					A = -1;
				else
					w &= ~(1ull << A);
				if (A >= 0 && !w) {
					mask |= 1ull << A;
					start(b, A, k, P, RINX_T_CONTRIB);
					continue;
				}
			}
			if (A >= 0 && A >= s->nhosts) {
				/* an INA ToR: its sum, or what of it its
				 * pool managed, reaches the server with the
				 * coverage it has (ATP) */
				agg_fwd(b, A, k, w, P);
				tor_pool(b, A, k, &s->racks[ri]);
				mask |= w;
				via |= 1ull << A;
			} else if (A >= 0) {
				agg_fwd(b, A, k, w, P);
				mask |= 1ull << A;
			} else {
				mask |= w;
			}
			for (r = 0; r < s->nhosts; r++)
				if (w & (1ull << r))
					start(b, r, k, A >= 0 ? A : P,
					      RINX_T_CONTRIB);
		}
		root_bcast(b, k, P, mask);
		if (via) {
			/* the server sums coverages: a ToR's frame may hold
			 * any part of its rack, the rest comes raw */
			for (r = RINX_T_REDUCE; r <= RINX_T_CONTRIB; r++) {
				struct rinx_hop *h = &b->hop[P][k][r - 1];

				if (r == RINX_T_GATHER)
					continue;
				h->flags |= RINX_HOP_COVER;
				h->via = via;
			}
		}
	}
	return 0;
}

static void one_tree(struct bld *b, int k, const int *ord, int n)
{
	__u64 kids[RINX_MAX_NODES] = { 0 };
	int i;

	b->p->root[k] = ord[0];
	for (i = 1; i < n; i++)
		kids[(i - 1) / 2] |= 1ull << ord[i];
	for (i = n - 1; i >= 1; i--) {
		int parent = ord[(i - 1) / 2];

		if (kids[i])
			agg_fwd(b, ord[i], k, kids[i], parent);
		else
			start(b, ord[i], k, parent, RINX_T_CONTRIB);
	}
	root_bcast(b, k, ord[0], kids[0]);
}

static int build_tree(struct bld *b)
{
	const struct rinx_spec *s = b->s;
	int ord[RINX_MAX_NODES], rev[RINX_MAX_NODES], n = rack_order(s, ord), i;
	int two = b->p->kind == RINX_PLAN_DBTREE && n > 2;

	/* the second tree takes the order backwards: the first tree's
	 * leaves (its back half) become the inner nodes */
	for (i = 0; i < n; i++)
		rev[i] = ord[n - 1 - i];
	even_classes(b->p, two ? 2 : 1);
	one_tree(b, 0, ord, n);
	if (two)
		one_tree(b, 1, rev, n);
	return 0;
}

/* Every node's tables into b (b->p gets the shared part). */
static int build_all(struct bld *b, struct rinx_spec *s, struct rinx_plan *p)
{
	int i, k, err;

	rinx_plan_spec(s);
	memset(b, 0, sizeof(*b));
	memset(p, 0, sizeof(*p));
	b->s = s;
	b->p = p;
	p->kind = s->plan;
	for (i = 0; i < RINX_MAX_NODES; i++)
		for (k = 0; k < RINX_MAX_CLASSES; k++)
			b->start_to[i][k] = -1;
	err = build_nodes(p, s);
	if (err)
		return err;
	if (s->nhosts < 1)
		return -EINVAL;
	switch (p->kind) {
	case RINX_PLAN_TOPO:
		return pp_tables(s, p, b->hop, b->start_to, b->start_type);
	case RINX_PLAN_PS:
	case RINX_PLAN_PSINA:
		return build_ps(b);
	case RINX_PLAN_TREE:
	case RINX_PLAN_DBTREE:
		if (s->nhosts < 2) {
			even_classes(p, 1);
			return 0;
		}
		return build_tree(b);
	default:
		return build_ring(b);
	}
}

static void take(struct rinx_plan *p, const struct bld *b, int self)
{
	int k;

	memcpy(p->hops, b->hop[self], sizeof(p->hops));
	for (k = 0; k < RINX_MAX_CLASSES; k++) {
		p->start_to[k] = b->start_to[self][k];
		p->start_type[k] = b->start_type[self][k];
	}
}

int rinx_plan_build(struct rinx_plan *p, const struct rinx_spec *s_in,
		    int self)
{
	struct rinx_spec *s = malloc(sizeof(*s));
	struct bld *b = malloc(sizeof(*b));
	int err = -ENOMEM;

	if (s && b) {
		*s = *s_in;
		err = build_all(b, s, p);
		if (!err && (self < 0 || self >= p->nnodes))
			err = -EINVAL;
		if (!err)
			take(p, b, self);
	}
	free(s);
	free(b);
	return err;
}

int rinx_plan_next_hosts(const struct rinx_spec *s_in, int self,
			 __u64 reduce[RINX_MAX_CLASSES],
			 __u64 gather[RINX_MAX_CLASSES])
{
	struct rinx_spec *s = malloc(sizeof(*s));
	struct bld *b = malloc(sizeof(*b));
	struct rinx_plan *p = malloc(sizeof(*p));
	int err = -ENOMEM, r, k;

	memset(reduce, 0, RINX_MAX_CLASSES * sizeof(*reduce));
	memset(gather, 0, RINX_MAX_CLASSES * sizeof(*gather));
	if (s && b && p) {
		*s = *s_in;
		err = build_all(b, s, p);
		if (!err && (self < 0 || self >= p->nnodes))
			err = -EINVAL;
	}
	for (r = 0; !err && r < s->nhosts && r < 64; r++) {
		if (r == self)
			continue;
		for (k = 0; k < p->nclasses && k < RINX_MAX_CLASSES; k++) {
			const struct rinx_hop *h =
				&b->hop[r][k][RINX_T_REDUCE - 1];
			const struct rinx_hop *g =
				&b->hop[r][k][RINX_T_GATHER - 1];

			if ((h->action == RINX_A_ADD_FWD ||
			     h->action == RINX_A_ADD_FINISH) && h->from == self)
				reduce[k] |= 1ull << r;
			if (g->action && g->from == self)
				gather[k] |= 1ull << r;
		}
	}
	free(s);
	free(b);
	free(p);
	return err;
}

static const char *action_name(int a)
{
	switch (a) {
	case RINX_A_ADD_FWD: return "add+fwd";
	case RINX_A_ADD_FINISH: return "add+finish";
	case RINX_A_STORE_FWD: return "store+fwd";
	case RINX_A_STORE_END: return "store+end";
	case RINX_A_AGG_FWD: return "agg+fwd";
	case RINX_A_AGG_FINISH: return "agg+finish";
	case RINX_A_MCAST_FWD: return "mcast+fwd";
	case RINX_A_MCAST_END: return "mcast+end";
	default: return "-";
	}
}

static void node_name(const struct rinx_spec *s, int id, char *buf, size_t len)
{
	int i;

	if (id >= 0 && id < s->nhosts) {
		snprintf(buf, len, "%s", rinx_spec_rank(s, id)->name);
		return;
	}
	for (i = 0; i < s->nracks; i++)
		if (rinx_plan_agg_node(s, i) == id) {
			snprintf(buf, len, "%s", s->racks[i].name);
			return;
		}
	snprintf(buf, len, "node%d", id);
}

static void mask_names(const struct rinx_spec *s, __u64 m, char *buf,
		       size_t len)
{
	char a[RINX_NAME_MAX];
	size_t o = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < 64 && o < len; i++)
		if (m & (1ull << i)) {
			node_name(s, i, a, sizeof(a));
			o += snprintf(buf + o, len - o, "%s%s", o ? "," : "", a);
		}
}

static void summary(FILE *f, const struct rinx_spec *s, const struct bld *b)
{
	const struct rinx_plan *p = b->p;
	char a[RINX_NAME_MAX], pl[32], who[512];
	int i, k, n, ina = 0;

	for (i = 0; i < s->nracks; i++)
		ina += s->racks[i].ina != RINX_INA_NONE;
	rinx_plan_name(s->plan, s->plan_nps, pl, sizeof(pl));
	if (p->kind == RINX_PLAN_RINA || p->kind == RINX_PLAN_RING ||
	    p->kind == RINX_PLAN_HAR || p->nmembers) {
		fprintf(f, "plan: %s, %s, %d hosts, %d ring members, %d classes "
			"(block b is in class b %% %d)\n", pl,
			p->kind == RINX_PLAN_TOPO ? "a planner's ring on the "
			"spec's topology" :
			p->kind == RINX_PLAN_HAR ? "hierarchical (rack leaders "
			"in a ring)" : ina ? "Rina (ring with INA racks)" :
			"ring", s->nhosts, p->nmembers, p->nclasses,
			p->nclasses);
		fprintf(f, "members:");
		for (i = 0; i < p->nmembers; i++) {
			int ri = member_rack(s, p->member[i]);

			node_name(s, p->member[i], a, sizeof(a));
			if (ri >= 0)
				fprintf(f, " [rack %d: %s aggregates %s]",
					s->racks[ri].id, a,
					s->racks[ri].ina == RINX_INA_SWITCH ?
					"on the ToR" : "as agent");
			else
				fprintf(f, " %s", a);
		}
		fprintf(f, "\n");
		return;
	}
	fprintf(f, "plan: %s, %s, %d hosts, %d classes (block b is in class "
		"b %% %d)\n", pl,
		p->kind == RINX_PLAN_PS ? "parameter servers" :
		p->kind == RINX_PLAN_PSINA ? "parameter servers, INA racks "
		"aggregate on the way" : p->kind == RINX_PLAN_TOPO ?
		"a planner's plan on the spec's topology" :
		p->kind == RINX_PLAN_TREE ?
		"binary tree" : "double binary tree", s->nhosts, p->nclasses,
		p->nclasses);
	if (p->plen != p->nclasses) {
		/* proportional shares: the pattern says which class a block
		 * is in, and each class's part of it */
		int cnt[RINX_MAX_CLASSES] = { 0 };

		for (i = 0; i < p->plen; i++)
			cnt[p->cmap[i]]++;
		fprintf(f, "  (not b %% %d: block b is in class cmap[b %% %d]; "
			"shares", p->nclasses, p->plen);
		for (k = 0; k < p->nclasses; k++)
			fprintf(f, " %d/%d", cnt[k], p->plen);
		fprintf(f, ")\n");
	}
	for (k = 0; k < p->nclasses; k++) {
		node_name(s, p->root[k], a, sizeof(a));
		fprintf(f, "class %d: root %s; aggregators:", k, a);
		for (n = 0; n < p->nnodes; n++) {
			const struct rinx_hop *h =
				&b->hop[n][k][RINX_T_CONTRIB - 1];

			if (h->action != RINX_A_AGG_FWD &&
			    h->action != RINX_A_AGG_FINISH)
				continue;
			node_name(s, n, a, sizeof(a));
			mask_names(s, h->mask, who, sizeof(who));
			fprintf(f, " %s{%s%s}", a, who,
				h->flags & RINX_HOP_SELF ? ",self" : "");
		}
		fprintf(f, "\n");
	}
}

static int with_plan(FILE *f, const struct rinx_spec *s_in,
		     void (*fn)(FILE *, const struct rinx_spec *,
				const struct bld *))
{
	struct rinx_spec *s = malloc(sizeof(*s));
	struct bld *b = malloc(sizeof(*b));
	struct rinx_plan *p = malloc(sizeof(*p));
	int err = -ENOMEM;

	if (s && b && p) {
		*s = *s_in;
		err = build_all(b, s, p);
		if (err)
			fprintf(f, "plan: cannot build a plan for this spec "
				"(%s)\n", strerror(-err));
		else
			fn(f, s, b);
	}
	free(s);
	free(b);
	free(p);
	return err;
}

void rinx_plan_summary(FILE *f, const struct rinx_spec *s)
{
	with_plan(f, s, summary);
}

static void print_all(FILE *f, const struct rinx_spec *s, const struct bld *b)
{
	static const char *const tname[] = { "reduce", "gather", "contrib" };
	const struct rinx_plan *p = b->p;
	char a[RINX_NAME_MAX], c[RINX_NAME_MAX], who[512];
	int k, t, node;

	summary(f, s, b);
	for (k = 0; k < p->nclasses; k++) {
		node_name(s, p->root[k], a, sizeof(a));
		fprintf(f, "class %d: finishes at %s\n", k, a);
		for (node = 0; node < p->nnodes; node++) {
			if (b->start_to[node][k] < 0)
				continue;
			node_name(s, node, a, sizeof(a));
			node_name(s, b->start_to[node][k], c, sizeof(c));
			fprintf(f, "  start   at %-8s sends its share (%s) -> %s\n",
				a, b->start_type[node][k] == RINX_T_CONTRIB ?
				"contrib" : "reduce", c);
		}
		for (t = 1; t <= RINX_HOP_TYPES; t++)
			for (node = 0; node < p->nnodes; node++) {
				const struct rinx_hop *h = &b->hop[node][k][t - 1];
				int agg = h->action == RINX_A_AGG_FWD ||
					  h->action == RINX_A_AGG_FINISH;

				if (h->action == RINX_A_NONE)
					continue;
				node_name(s, node, a, sizeof(a));
				fprintf(f, "  %-7s at %-8s %-10s", tname[t - 1],
					a, action_name(h->action));
				if (!agg || h->from != RINX_NO_SEND) {
					node_name(s, h->from, c, sizeof(c));
					fprintf(f, " from %s step %d", c, h->step);
				}
				if (agg) {
					mask_names(s, h->mask, who, sizeof(who));
					fprintf(f, " sums {%s%s}", who,
						h->flags & RINX_HOP_SELF ?
						",self" : "");
				}
				if (agg && (h->flags & RINX_HOP_POOL))
					fprintf(f, " in a pool of %u slots",
						h->pool);
				if (agg && (h->flags & RINX_HOP_COVER) &&
				    h->via) {
					mask_names(s, h->via, who, sizeof(who));
					fprintf(f, " by coverage (partial sums "
						"from {%s})", who);
				} else if (agg && (h->flags & RINX_HOP_COVER)) {
					fprintf(f, " (sums tell their "
						"coverage)");
				}
				if (h->to != node && h->action != RINX_A_STORE_END &&
				    h->action != RINX_A_MCAST_END) {
					node_name(s, h->to, c, sizeof(c));
					fprintf(f, " -> %s", c);
				}
				if (h->rack == RINX_GROUP_EVERY &&
				    h->action == RINX_A_AGG_FINISH)
					fprintf(f, " + every host (fabric group)");
				else if (h->rack != RINX_NO_RACK &&
					 (h->action == RINX_A_MCAST_FWD ||
					  h->action == RINX_A_MCAST_END ||
					  h->action == RINX_A_AGG_FINISH))
					fprintf(f, " + rack %d's group", h->rack);
				if (agg || h->action == RINX_A_MCAST_FWD ||
				    h->action == RINX_A_MCAST_END)
					fprintf(f, " (sends step %d)", h->out_step);
				fprintf(f, "\n");
			}
	}
}

int rinx_plan_print(FILE *f, const struct rinx_spec *s)
{
	return with_plan(f, s, print_all);
}

/* ---- the rate the links allow a plan (the pacer's ceiling) ----
 * Topology plans: the rank's own links, at the spec's scale (a frame per
 * own block at most), never the planner's or the simulator's rate of the
 * plan: the testbed checks a plan independently, its ranks start at the
 * rate their links allow and congestion control finds what the plan's
 * routes and switches carry (docs/sim.md). Rack plans: the frames per
 * pattern round
 * on every directed link of the spec: a host's
 * access link (up: host -> ToR, down: ToR -> host) and a rack's uplink (up:
 * ToR -> spine, down). A frame from a to b crosses a's link up (a host),
 * both uplinks when the racks differ, b's link down (a host); an aggregator
 * is its rack's ToR; a group frame crosses the sender's way to the rack's
 * ToR once and then every other host's link down. */
struct load {
	const struct rinx_spec *s;
	int n;
	double *l;	/* [2 * n + 2 * nracks] */
	double w;	/* frames of this class per pattern round */
};

static int node_rack(const struct load *d, int v)
{
	int i;

	if (v < d->n) {
		const struct rinx_spec_host *h = rinx_spec_rank(d->s, v);

		return h ? rinx_spec_rack_index(d->s, h->rack) : -1;
	}
	for (i = 0; i < d->s->nracks; i++)
		if (rinx_plan_agg_node(d->s, i) == v)
			return i;
	return -1;
}

static void path(struct load *d, int a, int b, int from_tor)
{
	int ra = node_rack(d, a), rb = node_rack(d, b);

	if (a < d->n && !from_tor)
		d->l[2 * a] += d->w;
	if (ra != rb) {
		if (ra >= 0)
			d->l[2 * d->n + 2 * ra] += d->w;
		if (rb >= 0)
			d->l[2 * d->n + 2 * rb + 1] += d->w;
	}
	if (b < d->n)
		d->l[2 * b + 1] += d->w;
}

static void group(struct load *d, int v, int rack_id)
{
	int rv = node_rack(d, v), r, ri, up = 0;

	if (v < d->n)
		d->l[2 * v] += d->w;
	for (r = 0; r < d->n; r++) {
		const struct rinx_spec_host *h = rinx_spec_rank(d->s, r);

		if (r != v && h && (rack_id == RINX_GROUP_EVERY ||
				    h->rack == rack_id))
			d->l[2 * r + 1] += d->w;
	}
	/* one copy leaves the sender's rack, the spine copies it to every
	 * other rack of the group */
	for (ri = 0; ri < d->s->nracks; ri++)
		if (ri != rv && (rack_id == RINX_GROUP_EVERY ||
				 d->s->racks[ri].id == rack_id)) {
			d->l[2 * d->n + 2 * ri + 1] += d->w;
			up = 1;
		}
	if (up && rv >= 0)
		d->l[2 * d->n + 2 * rv] += d->w;
}

static void node_load(struct load *d, const struct bld *b, int v, int k)
{
	int t, agg = 0;

	if (b->start_to[v][k] >= 0)
		path(d, v, b->start_to[v][k], 0);
	for (t = 0; t < RINX_HOP_TYPES; t++) {
		const struct rinx_hop *h = &b->hop[v][k][t];

		switch (h->action) {
		case RINX_A_ADD_FWD:
		case RINX_A_ADD_FINISH:
		case RINX_A_STORE_FWD:
			path(d, v, h->to, 0);
			break;
		case RINX_A_AGG_FWD:
		case RINX_A_AGG_FINISH:
			/* one slot per class, whatever the contributors'
			 * types: its sum leaves once */
			if (agg++)
				break;
			if (h->action == RINX_A_AGG_FWD) {
				path(d, v, h->to, 0);
				break;
			}
			if (h->rack != RINX_NO_RACK)
				group(d, v, h->rack);
			if (h->to != v && (h->rack == RINX_NO_RACK ||
					   h->rack != RINX_GROUP_EVERY))
				path(d, v, h->to, h->rack != RINX_NO_RACK);
			break;
		case RINX_A_MCAST_FWD:
			group(d, v, h->rack);
			path(d, v, h->to, 1);
			break;
		case RINX_A_MCAST_END:
			group(d, v, h->rack);
			break;
		}
	}
}

/* Gbit/s the links of rank self leave its node by in the spec's topology
 * (a testbed worker has one); 0 if unknown. */
static double topo_link_gbps(const struct rinx_spec *s, int self)
{
	const struct rinx_spec_host *h = rinx_spec_rank(s, self);
	struct topo t;
	char err[256];
	double x = 0;
	int v, a;

	topo_init(&t);
	/* a file, or a generator's name ("grid-toy"), as pp_load takes it */
	if (h && !(strchr(s->topo, '/') || !access(s->topo, F_OK) ?
		   topo_load(s->topo, &t, err, sizeof(err)) :
		   topo_generate(s->topo, &t, err, sizeof(err)))) {
		v = topo_find(&t, h->name);
		for (a = v >= 0 ? t.off[v] : 0; v >= 0 && a < t.off[v + 1];
		     a++)
			x += topo_arc_gbps(&t, t.adj[a]);
	}
	topo_free(&t);
	return x;
}

double rinx_plan_ceiling(const struct rinx_spec *s_in, int self,
			 double frame_bytes)
{
	struct rinx_spec *s = malloc(sizeof(*s));
	struct bld *b = malloc(sizeof(*b));
	struct rinx_plan *p = malloc(sizeof(*p));
	struct load d = { 0 };
	double best = 0, cnt[RINX_MAX_CLASSES] = { 0 }, nown = 0;
	int i, k, v, nl;

	if (!s || !b || !p)
		goto out;
	*s = *s_in;
	if (build_all(b, s, p) || self < 0 || self >= p->nnodes)
		goto out;
	for (i = 0; i < p->plen; i++)
		cnt[p->cmap[i] % RINX_MAX_CLASSES]++;
	for (k = 0; k < p->nclasses; k++)
		if (b->start_to[self][k] >= 0)
			nown += cnt[k];
	if (p->kind == RINX_PLAN_TOPO) {
		double x = topo_link_gbps(s, self) *
			   (s->scale_mbit > 0 ? s->scale_mbit : 1000) * 1e6;

		if (x > 0 && nown)
			best = x / 8 / frame_bytes;
		goto out;
	}
	d.s = s;
	d.n = s->nhosts;
	nl = 2 * s->nhosts + 2 * s->nracks;
	d.l = calloc(nl, sizeof(*d.l));
	if (!d.l)
		goto out;
	for (k = 0; k < p->nclasses; k++) {
		d.w = cnt[k];
		for (v = 0; v < p->nnodes; v++)
			node_load(&d, b, v, k);
	}
	/* pattern rounds per second each link allows; the least of them */
	for (i = 0; i < nl; i++) {
		__u32 mbit = i < 2 * s->nhosts ?
			     rinx_spec_rank(s, i / 2)->link_mbit :
			     s->racks[(i - 2 * s->nhosts) / 2].uplink_mbit;
		double r;

		if (!mbit || d.l[i] <= 0)
			continue;
		r = mbit * 1e6 / 8 / frame_bytes / d.l[i];
		if (!best || r < best)
			best = r;
	}
	best *= nown;
	free(d.l);
out:
	free(s);
	free(b);
	free(p);
	return best;
}
