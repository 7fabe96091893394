// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Plan compiler: ring allreduce over a ring of members, where a member is a
 * host (adds its share in XDP) or a whole INA rack (Rina: its aggregator sums
 * the rack's contributions and the partial sum from the previous member, and
 * multicasts finished blocks into the rack). With no INA rack this is the
 * plain ring; with every rack INA, a ring of racks.
 *
 * Class k of M classes starts at member k; block b belongs to class b % M.
 * Reduce: member k+j (j = 0..M-1) receives step j-1 from member k+j-1;
 * member k-1 finishes. Gather: member k+j (j = 0..M-2) receives step j from
 * member k+j-1 and passes step j+1 on; an INA member sends the same frame
 * into its rack, so its workers see step j+1 (step 0 at the finishing rack).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "user/ctl.h"
#include "user/plan.h"

static int rack_index(const struct rinx_spec *s, int rack_id)
{
	int i;

	for (i = 0; i < s->nracks; i++)
		if (s->racks[i].id == rack_id)
			return i;
	return -1;
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
	ri = rack_index(s, h->rack);
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

static int build_members(struct rinx_plan *p, const struct rinx_spec *s)
{
	int i, r, ri, m = 0, bits[RINX_MAX_NODES] = { 0 };

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

		memcpy(n->mac, h->mac, 6);
		n->ip = h->ip;
		ri = rack_index(s, h->rack);
		n->rack = ri < 0 ? RINX_NO_RACK : (__u8)h->rack;
		n->bit = ri < 0 ? 0 : bits[ri]++;
	}
	for (i = 0; i < s->nracks; i++) {
		int id = rinx_plan_agg_node(s, i);

		if (id < 0)
			continue;
		memcpy(p->nodes[id].mac, s->racks[i].mac, 6);
		p->nodes[id].ip = s->racks[i].ip;
		p->nodes[id].rack = s->racks[i].id;
		p->nodes[id].bit = 0;
	}
	/* members in rack order; hosts without a declared rack last */
	for (i = 0; i < s->nracks; i++) {
		if (s->racks[i].ina != RINX_INA_NONE) {
			p->member[m++] = rack_member(s, i);
			continue;
		}
		for (r = 0; r < s->nhosts; r++)
			if (rinx_spec_rank(s, r)->rack == s->racks[i].id)
				p->member[m++] = r;
	}
	for (r = 0; r < s->nhosts; r++)
		if (rack_index(s, rinx_spec_rank(s, r)->rack) < 0)
			p->member[m++] = r;
	p->nmembers = m;
	return m > RINX_MAX_CLASSES ? -E2BIG : 0;
}

/* Is member node `node` an INA rack's aggregator? Its rack index or -1. */
static int member_rack(const struct rinx_spec *s, int node)
{
	int i;

	for (i = 0; i < s->nracks; i++)
		if (s->racks[i].ina != RINX_INA_NONE && rack_member(s, i) == node)
			return i;
	return -1;
}

static __u32 workers_mask(const struct rinx_spec *s, int ri)
{
	__u32 mask = 0;
	int r;

	for (r = 0; r < s->nhosts; r++)
		if (rinx_spec_rank(s, r)->rack == s->racks[ri].id)
			mask = (mask << 1) | 1;
	return mask;
}

int rinx_plan_build(struct rinx_plan *p, const struct rinx_spec *s, int self)
{
	int M, k, j, err, self_rack = -1, self_ri = -1, myri = -1;
	const struct rinx_spec_host *me = NULL;

	memset(p, 0, sizeof(*p));
	p->contrib_to = -1;
	err = build_members(p, s);
	if (err)
		return err;
	if (self < 0 || self >= p->nnodes)
		return -EINVAL;
	M = p->nmembers;
	p->nclasses = M;
	self_ri = member_rack(s, self);	/* self aggregates a rack */
	if (self < s->nhosts) {
		me = rinx_spec_rank(s, self);
		myri = rack_index(s, me->rack);
		if (myri >= 0 && s->racks[myri].ina != RINX_INA_NONE) {
			self_rack = myri;	/* self is a worker of an INA rack */
			p->contrib_to = rack_member(s, myri);
		}
	}
	for (k = 0; k < M; k++) {
		p->origin[k] = p->member[k];
		p->first_to[k] = M > 1 ? p->member[(k + 1) % M] : p->member[k];
		for (j = 0; j < M; j++) {
			int node = p->member[(k + j) % M];
			int prev = p->member[(k + j - 1 + M) % M];
			int next = p->member[(k + j + 1) % M];
			struct rinx_hop h = { 0 };

			if (node != self)
				continue;
			if (self_ri >= 0) {
				h.action = j == M - 1 ? RINX_A_AGG_FINISH :
							RINX_A_AGG_FWD;
				h.mask = workers_mask(s, self_ri);
				h.rack = s->racks[self_ri].id;
				h.to = M > 1 ? next : self;
				h.out_step = j == M - 1 ? 0 : j;
				p->hops[k][RINX_T_CONTRIB - 1] = h;
				if (j > 0) {
					h.mask |= 1U << RINX_PARTIAL_BIT;
					h.from = prev;
					h.step = j - 1;
					p->hops[k][RINX_T_CONTRIB - 1] = h;
					p->hops[k][RINX_T_REDUCE - 1] = h;
				}
			} else if (j > 0) {
				h.action = j == M - 1 ? RINX_A_ADD_FINISH :
							RINX_A_ADD_FWD;
				h.from = prev;
				h.step = j - 1;
				h.to = next;
				p->hops[k][RINX_T_REDUCE - 1] = h;
			}
		}
		/* gather */
		for (j = 0; j <= M - 2; j++) {
			int node = p->member[(k + j) % M];
			struct rinx_hop h = { 0 };

			if (node != self)
				continue;
			h.from = p->member[(k + j - 1 + M) % M];
			h.step = j;
			h.to = p->member[(k + j + 1) % M];
			if (self_ri >= 0) {
				h.action = j == M - 2 ? RINX_A_MCAST_END :
							RINX_A_MCAST_FWD;
				h.out_step = j + 1;
				h.rack = s->racks[self_ri].id;
				if (j == M - 2)
					h.to = self;
			} else {
				h.action = j == M - 2 ? RINX_A_STORE_END :
							RINX_A_STORE_FWD;
			}
			p->hops[k][RINX_T_GATHER - 1] = h;
		}
		/* a worker (not the agent) of an INA rack stores what its
		 * aggregator multicasts into the rack */
		if (self_rack >= 0 && self != p->contrib_to) {
			int agg = p->contrib_to, pos = -1;
			struct rinx_hop h = { 0 };

			for (j = 0; j < M; j++)
				if (p->member[(k + j) % M] == agg)
					pos = j;
			h.action = RINX_A_STORE_END;
			h.from = agg;
			/* finishing member (pos M-1) sends step 0; gather
			 * member at position pos sends step pos + 1 */
			h.step = pos == M - 1 ? 0 : pos + 1;
			h.to = self;
			p->hops[k][RINX_T_GATHER - 1] = h;
		}
	}
	return 0;
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

	if (id < s->nhosts) {
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

void rinx_plan_summary(FILE *f, const struct rinx_spec *s)
{
	struct rinx_plan p;
	char a[RINX_NAME_MAX];
	int i, ina = 0;

	if (rinx_plan_build(&p, s, 0)) {
		fprintf(f, "plan: cannot build a plan for this spec\n");
		return;
	}
	for (i = 0; i < s->nracks; i++)
		ina += s->racks[i].ina != RINX_INA_NONE;
	fprintf(f, "plan: %s, %d hosts, %d ring members, %d classes "
		"(block b is in class b %% %d)\n",
		ina ? "Rina (ring with INA racks)" : "ring", s->nhosts,
		p.nmembers, p.nclasses, p.nclasses);
	fprintf(f, "members:");
	for (i = 0; i < p.nmembers; i++) {
		int ri = member_rack(s, p.member[i]);

		node_name(s, p.member[i], a, sizeof(a));
		if (ri >= 0)
			fprintf(f, " [rack %d: %s aggregates %s]", s->racks[ri].id,
				a, s->racks[ri].ina == RINX_INA_SWITCH ?
				"on the ToR" : "as agent");
		else
			fprintf(f, " %s", a);
	}
	fprintf(f, "\n");
}

void rinx_plan_print(FILE *f, const struct rinx_spec *s)
{
	static const char *const tname[] = { "reduce", "gather", "contrib" };
	struct rinx_plan p, q;
	char a[RINX_NAME_MAX], b[RINX_NAME_MAX], c[RINX_NAME_MAX];
	int k, t, node;

	if (rinx_plan_build(&p, s, 0)) {
		fprintf(f, "plan: cannot build a plan for this spec\n");
		return;
	}
	rinx_plan_summary(f, s);
	for (node = 0; node < p.nnodes; node++) {
		rinx_plan_build(&q, s, node);
		if (q.contrib_to >= 0) {
			node_name(s, node, a, sizeof(a));
			node_name(s, q.contrib_to, b, sizeof(b));
			fprintf(f, "worker %s sends every block to %s\n", a, b);
		}
	}
	for (k = 0; k < p.nclasses; k++) {
		node_name(s, p.origin[k], a, sizeof(a));
		fprintf(f, "class %d: starts at %s\n", k, a);
		for (t = 1; t <= RINX_HOP_TYPES; t++)
			for (node = 0; node < p.nnodes; node++) {
				const struct rinx_hop *h;

				rinx_plan_build(&q, s, node);
				h = &q.hops[k][t - 1];
				if (h->action == RINX_A_NONE)
					continue;
				node_name(s, node, a, sizeof(a));
				node_name(s, h->from, b, sizeof(b));
				node_name(s, h->to, c, sizeof(c));
				fprintf(f, "  %-7s at %-8s %-10s", tname[t - 1],
					a, action_name(h->action));
				if (t != RINX_T_CONTRIB)
					fprintf(f, " from %s step %d", b, h->step);
				if (h->action >= RINX_A_AGG_FWD)
					fprintf(f, " mask %#x", h->mask);
				if (h->action != RINX_A_STORE_END &&
				    h->action != RINX_A_MCAST_END)
					fprintf(f, " -> %s", c);
				if (h->action >= RINX_A_AGG_FWD)
					fprintf(f, " (sends step %d)", h->out_step);
				fprintf(f, "\n");
			}
	}
}
