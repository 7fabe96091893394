// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A planner's plan (user/plan/pplan.h) on the data plane: the per-node tables of
 * the one engine (user/plan/plan.h) for the spec's cluster, when the spec names a
 * topology (topo=FILE) and plan=topo:NAME.
 *
 * Names tie the two together: a topology host is the spec host of that
 * name (its rank is its node id), a topology switch or PS that aggregates is
 * the spec rack of that name with ina=switch (its aggregator's node id
 * follows the ranks, in rack order: rinx_plan_agg_node). A PS contributes
 * no gradient: it is an aggregating node that is not a rank, run as a
 * one-port INA node (the testbed loads the switch program with the
 * aggregator on its interface) whose job table the control plane installs
 * as it installs an INA ToR's (user/comm/comm.c: rank 0 installs the aggregators
 * of racks without hosts).
 *
 * Tree classes (PP_TREE: ps, ps-ina, grid, switchml, tree, dbtree,
 * forest), or one ring of workers (ring: compile_ring, the rack plans'
 * ring tables over the planner's members). Rings whose members aggregate
 * racks (rina, har) stay with the rack plans.
 * Class k of a tree plan is class k of the tables:
 *  - an aggregator with contributors sums them in a slot (AGG_FWD to its
 *    parent, a worker adding its own share when the plan says `self`);
 *  - the root finishes (AGG_FINISH) and sends the block to the fabric's
 *    group (RINX_GROUP_EVERY), which the switches replicate along the
 *    class's broadcast route (the testbed writes it, by the frame's class
 *    and root), else along a spanning tree: one copy per host;
 *  - a worker that aggregates nothing sends its share (CONTRIB) to its
 *    aggregator and stores the finished block from the root.
 * Which way a transfer goes through the fabric is the switches' business:
 * the testbed installs each reduce transfer's route and each class's
 * broadcast route (tools/testbed/route.c).
 * Shares become the class pattern: block b is in class cmap[b % plen],
 * plen <= RINX_CMAP_MAX chosen so that every class's part of the pattern
 * is within 0.2% of its share when it can be.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/log.h"
#include "user/plan/plan.h"
#include "user/plan/pplan.h"

int pp_nplanners(void)
{
	int n = 0;

	while (pp_planners[n].name)
		n++;
	return n;
}

int pp_node_id(const struct rinx_spec *s, const struct topo *t, int tn)
{
	const struct rinx_spec_host *h;
	int i;

	if (tn < 0 || tn >= t->nnodes)
		return -1;
	if (t->node[tn].kind == TOPO_HOST) {
		h = rinx_spec_host(s, t->node[tn].name);
		return h ? h->rank : -1;
	}
	for (i = 0; i < s->nracks; i++)
		if (!strcmp(s->racks[i].name, t->node[tn].name))
			return rinx_plan_agg_node(s, i);
	return -1;
}

int pp_load(const char *topo, const char *planner, struct topo *t,
	    struct pp_plan *p, char *err, size_t errlen)
{
	const struct pp_planner *pl = pp_planner_find(planner);
	struct pp_opts o = { .eps = 0.1, .max_trees = 4096 };
	int ret;

	topo_init(t);
	pp_init(p, planner);
	if (!pl)
		return rinx_seterr(err, errlen, -EINVAL, "unknown planner '%s'",
				   planner);
	/* a file, or a generator's name ("grid-toy") */
	if (strchr(topo, '/') || !access(topo, F_OK))
		ret = topo_load(topo, t, err, errlen);
	else
		ret = topo_generate(topo, t, err, errlen);
	if (ret)
		return ret;
	ret = pl->plan(t, &o, p, err, errlen);
	if (ret)
		return ret;
	return pp_finish(t, p, err, errlen);
}

/* Pattern of classes for shares sh[0..n): the smallest length whose
 * counts (largest remainder, at least one each) are all within 0.2% of
 * the shares, else the best length up to RINX_CMAP_MAX; the positions of
 * each class spread evenly (smooth weighted round robin). */
static int share_pattern(const double *sh, int n, __u8 *cmap)
{
	int best = -1, cnt[RINX_MAX_CLASSES], bc[RINX_MAX_CLASSES];
	double berr = 1e9, cur[RINX_MAX_CLASSES];
	int L, k, i;

	for (L = n; L <= RINX_CMAP_MAX; L++) {
		double rem[RINX_MAX_CLASSES], e = 0;
		int used = 0;

		for (k = 0; k < n; k++) {
			double x = sh[k] * L;

			cnt[k] = (int)floor(x);
			if (cnt[k] < 1)
				cnt[k] = 1;
			rem[k] = x - cnt[k];
			used += cnt[k];
		}
		while (used < L) {
			int m = 0;

			for (k = 1; k < n; k++)
				if (rem[k] > rem[m])
					m = k;
			cnt[m]++;
			rem[m] -= 1;
			used++;
		}
		if (used > L)
			continue;
		for (k = 0; k < n; k++)
			e = fmax(e, fabs((double)cnt[k] / L - sh[k]));
		if (e < berr - 1e-12) {
			berr = e;
			best = L;
			memcpy(bc, cnt, sizeof(int) * n);
		}
		if (e <= 0.002)
			break;
	}
	if (best < 0)
		return -E2BIG;
	for (k = 0; k < n; k++)
		cur[k] = 0;
	for (i = 0; i < best; i++) {
		int m = 0;

		for (k = 0; k < n; k++)
			cur[k] += bc[k];
		for (k = 1; k < n; k++)
			if (cur[k] > cur[m])
				m = k;
		cur[m] -= best;
		cmap[i] = m;
	}
	return best;
}

/* A plan of one ring class whose members are workers (plan_ring): the
 * rack plans' ring tables (rinx_plan_ring) over the members in the
 * planner's order, so each ring hop is a pair of ranks, mem[i] ->
 * mem[i + 1], that the testbed routes along the planner's route. Members
 * that aggregate a rack (Rina's ToRs, H-AR's leaders, whose rack reaches
 * them by reduce transfers) are refused: their racks are the rack plans'. */
static int compile_ring(const struct topo *t, const struct pp_plan *pp,
			const struct rinx_spec *s, struct rinx_plan *p,
			struct rinx_hop (*hop)[RINX_MAX_CLASSES][RINX_HOP_TYPES],
			int (*start_to)[RINX_MAX_CLASSES],
			int (*start_type)[RINX_MAX_CLASSES], char *err,
			size_t errlen)
{
	const struct pp_class *c = &pp->cls[0];
	int i, id, ret;

	if (pp->ncls != 1)
		return rinx_seterr(err, errlen, -EOPNOTSUPP, "plan %s: a ring "
				   "class beside %d others; the topology "
				   "compiler takes one ring or tree classes",
				   pp->scheme, pp->ncls - 1);
	if (c->nred || c->nbc)
		return rinx_seterr(err, errlen, -EOPNOTSUPP, "plan %s: ring "
				   "members aggregate racks; the topology "
				   "compiler takes rings of workers (topo:ring; "
				   "rack plans: plan=rina|har)", pp->scheme);
	if (c->nmem != s->nhosts || c->nmem > RINX_MAX_CLASSES)
		return rinx_seterr(err, errlen, -EINVAL, "plan %s: a ring of %d "
				   "members for %d hosts (at most %d)",
				   pp->scheme, c->nmem, s->nhosts,
				   RINX_MAX_CLASSES);
	for (i = 0; i < s->nracks; i++)
		if (s->racks[i].ina == RINX_INA_AGENT)
			return rinx_seterr(err, errlen, -EINVAL, "plan %s: rack "
					   "%s aggregates by an agent; a "
					   "topology's ring takes none",
					   pp->scheme, s->racks[i].name);
	for (i = 0; i < c->nmem; i++) {
		id = pp_node_id(s, t, c->mem[i]);
		if (id < 0 || id >= s->nhosts)
			return rinx_seterr(err, errlen, -EINVAL, "plan %s: ring "
					   "member %s is no host of the spec",
					   pp->scheme, t->node[c->mem[i]].name);
		p->member[i] = id;
	}
	p->nmembers = c->nmem;
	ret = rinx_plan_ring(s, p, hop, start_to, start_type);
	if (ret)
		return rinx_seterr(err, errlen, ret, "plan %s: no ring tables",
				   pp->scheme);
	return 0;
}

int pp_compile(const struct topo *t, const struct pp_plan *pp,
	       const struct rinx_spec *s, struct rinx_plan *p,
	       struct rinx_hop (*hop)[RINX_MAX_CLASSES][RINX_HOP_TYPES],
	       int (*start_to)[RINX_MAX_CLASSES],
	       int (*start_type)[RINX_MAX_CLASSES], char *err, size_t errlen)
{
	double sh[RINX_MAX_CLASSES];
	int k, i, j, len;

	if (pp->ncls < 1 || pp->ncls > RINX_MAX_CLASSES)
		return rinx_seterr(err, errlen, -E2BIG, "plan %s: %d classes, "
				   "the data plane takes 1..%d", pp->scheme,
				   pp->ncls, RINX_MAX_CLASSES);
	/* every worker of the topology is a rank of the spec and back */
	if (t->nhosts != s->nhosts)
		return rinx_seterr(err, errlen, -EINVAL, "topology has %d "
				   "workers, the spec %d hosts", t->nhosts,
				   s->nhosts);
	for (i = 0; i < t->nhosts; i++)
		if (pp_node_id(s, t, t->hosts[i]) < 0)
			return rinx_seterr(err, errlen, -EINVAL, "worker %s of "
					   "the topology is not a host of the "
					   "spec", t->node[t->hosts[i]].name);
	if (pp->cls[0].kind == PP_RING)
		return compile_ring(t, pp, s, p, hop, start_to, start_type,
				    err, errlen);
	for (k = 0; k < pp->ncls; k++) {
		const struct pp_class *c = &pp->cls[k];
		int root = -1;

		if (c->kind != PP_TREE)
			return rinx_seterr(err, errlen, -EOPNOTSUPP, "plan %s: "
					   "class %d is a ring among tree "
					   "classes; the topology compiler "
					   "takes one ring or tree classes",
					   pp->scheme, k);
		sh[k] = c->share;
		for (i = 0; i < c->nagg; i++) {
			const struct pp_agg *a = &c->agg[i];
			int id = pp_node_id(s, t, a->node), par;
			struct rinx_hop h = { 0 };

			if (id < 0)
				return rinx_seterr(err, errlen, -EINVAL,
						   "plan %s: %s takes part in "
						   "class %d but is no host or "
						   "ina=switch rack of the "
						   "spec", pp->scheme,
						   t->node[a->node].name, k);
			par = a->parent >= 0 ? pp_node_id(s, t, a->parent) : -1;
			if (a->parent >= 0 && par < 0)
				return rinx_seterr(err, errlen, -EINVAL,
						   "plan %s: %s aggregates in "
						   "class %d but is no ina="
						   "switch rack of the spec",
						   pp->scheme,
						   t->node[a->parent].name, k);
			if (!a->ncontrib) {
				/* a leaf: a worker sending its share */
				if (id >= s->nhosts || par < 0)
					return rinx_seterr(err, errlen, -EINVAL,
							   "plan %s: class %d: "
							   "leaf %s has no "
							   "aggregator", pp->scheme,
							   k, t->node[a->node].name);
				start_to[id][k] = par;
				start_type[id][k] = RINX_T_CONTRIB;
				continue;
			}
			if (a->self && id >= s->nhosts)
				return rinx_seterr(err, errlen, -EINVAL,
						   "plan %s: %s is no worker "
						   "but adds a share", pp->scheme,
						   t->node[a->node].name);
			for (j = 0; j < a->ncontrib; j++) {
				int cid = pp_node_id(s, t, a->contrib[j]);

				if (cid < 0)
					return rinx_seterr(err, errlen, -EINVAL,
							   "plan %s: contributor "
							   "%s is not in the "
							   "spec", pp->scheme,
							   t->node[a->contrib[j]].name);
				h.mask |= 1ull << cid;
			}
			h.flags = a->self ? RINX_HOP_SELF : 0;
			h.from = RINX_NO_SEND;
			if (par >= 0) {
				h.action = RINX_A_AGG_FWD;
				h.to = par;
				h.rack = RINX_NO_RACK;
			} else {
				if (root >= 0)
					return rinx_seterr(err, errlen, -EINVAL,
							   "plan %s: class %d "
							   "has two roots",
							   pp->scheme, k);
				root = id;
				h.action = RINX_A_AGG_FINISH;
				h.to = id;
				h.rack = RINX_GROUP_EVERY;
			}
			hop[id][k][RINX_T_CONTRIB - 1] = h;
			hop[id][k][RINX_T_REDUCE - 1] = h;
		}
		if (root < 0)
			return rinx_seterr(err, errlen, -EINVAL, "plan %s: class "
					   "%d has no root", pp->scheme, k);
		p->root[k] = root;
		/* every worker but a root one stores the finished block */
		rinx_plan_store_from(hop, s->nhosts, k, root);
	}
	len = share_pattern(sh, pp->ncls, p->cmap);
	if (len < 0)
		return rinx_seterr(err, errlen, len, "plan %s: no class pattern "
				   "for its shares", pp->scheme);
	p->nclasses = pp->ncls;
	p->plen = len;
	return 0;
}

int pp_tables(const struct rinx_spec *s, struct rinx_plan *p,
	      struct rinx_hop (*hop)[RINX_MAX_CLASSES][RINX_HOP_TYPES],
	      int (*start_to)[RINX_MAX_CLASSES],
	      int (*start_type)[RINX_MAX_CLASSES])
{
	struct topo t;
	struct pp_plan pp;
	char err[256];
	int ret;

	if (!s->topo[0]) {
		pr_warn("plan topo:NAME needs topo= in the spec\n");
		return -EINVAL;
	}
	if (s->plan_nps < 1 || s->plan_nps > pp_nplanners())
		return -EINVAL;
	ret = pp_load(s->topo, pp_planners[s->plan_nps - 1].name, &t, &pp,
		      err, sizeof(err));
	if (!ret)
		ret = pp_compile(&t, &pp, s, p, hop, start_to, start_type, err,
				 sizeof(err));
	if (ret)
		pr_warn("%s\n", err);
	pp_free(&pp);
	topo_free(&t);
	return ret;
}

double pp_spec_rate_gbps(const struct rinx_spec *s)
{
	struct topo t;
	struct pp_plan pp;
	char err[256];
	double x = 0;

	if (!s->topo[0] || s->plan != RINX_PLAN_TOPO || s->plan_nps < 1 ||
	    s->plan_nps > pp_nplanners())
		return 0;
	if (!pp_load(s->topo, pp_planners[s->plan_nps - 1].name, &t, &pp, err,
		     sizeof(err)))
		x = pp_sim_rate(&t, &pp);
	pp_free(&pp);
	topo_free(&t);
	return x;
}
