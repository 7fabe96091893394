// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * GRID: gradient routing with in-network aggregation. Every worker gets a
 * route and one aggregation point (an INA switch, or the PS itself); each
 * switch that aggregates sends one stream on to the PS, which sums the
 * partial sums. All workers send at a common rate r, maximal under:
 *   - a link direction of c Gbps carries at most floor(c / r) streams
 *     (raw worker streams and aggregated streams alike, each r Gbps);
 *   - a switch of capacity C aggregates at most floor(C / r) streams
 *     (C limits the input it sums);
 *   - the PS receives through its own links (its ingress);
 *   - the result goes back down one multicast tree from the PS (a
 *     shortest-path tree, switches replicate), one stream per tree arc,
 *     reserved before anything else is routed.
 * At a fixed r this is an integer problem in stream units, so the best r
 * is one of the values c / k or C / k: binary search over them.
 *
 * Feasibility at r (a heuristic, correct when it says yes): (1) choose the
 * switches that will aggregate, in a priority order, and route their
 * aggregated streams to the PS one by one by augmenting paths (a later
 * one may reroute earlier ones, never drop them), as many as the PS's
 * ingress admits; (2) in what bandwidth is left, route every worker's raw
 * stream to an aggregator with room or to the PS by one max-flow. Six
 * priority orders are tried (lean: fewest switches covering all workers
 * by nearness; all by nearness; by what a switch can absorb; nearest the
 * PS first; biggest capacity first; most workers in the relaxation's
 * max-flow below first; farthest from the workers, i.e. core-most,
 * first); and the other way round: raw streams first, then
 * the aggregated streams of the switches that got workers.
 *
 * Upper bound (a relaxation, exact in stream units): the raw streams alone
 * must reach aggregators within their capacities, and the at most P
 * streams the PS can take must cover every worker (a switch covering no
 * more than its capacity and its incoming links allow). The plan reports both;
 * where they meet the plan is optimal.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/plan/pplan.h"

struct grid {
	struct topo *t;
	int ps, n, nc;
	int *cand;		/* INA switches */
	int *near;		/* per node: workers it is nearest INA for */
	char *bcarc;		/* arcs of the result's multicast tree */
	int *dps;		/* per node: hops to the PS */
	int *dw;		/* per node: hops from the nearest worker */
};

#define GRID_ORDERS	8

static void relax_load(struct grid *g, double r, double *key);

static long long units(double c, double r)
{
	return (long long)floor(c / r + 1e-9);
}

static long long ps_units(const struct grid *g, double r)
{
	struct topo *t = g->t;
	long long p = 0;
	int k;

	for (k = t->off[g->ps]; k < t->off[g->ps + 1]; k++)
		p += units(topo_arc_gbps(g->t, t->adj[k] ^ 1), r);
	return p;
}

static long long in_units(const struct grid *g, int s, double r)
{
	struct topo *t = g->t;
	long long p = 0;
	int k;

	for (k = t->off[s]; k < t->off[s + 1]; k++)
		p += units(topo_arc_gbps(g->t, t->adj[k] ^ 1), r);
	return p;
}

static struct pp_mf *arc_net(struct topo *t, double r, const long long *res)
{
	struct pp_mf *m = pp_mf_new(t->nnodes + 2);
	int i;

	if (!m)
		return NULL;
	for (i = 0; i < 2 * t->nlinks; i++)
		if (pp_mf_edge(m, topo_arc_from(t, i), topo_arc_to(t, i),
			       res ? res[i] : units(topo_arc_gbps(t, i), r)) < 0) {
			pp_mf_free(m);
			return NULL;
		}
	return m;
}

static double *sort_key;

static int by_key(const void *a, const void *b)
{
	double x = sort_key[*(const int *)a], y = sort_key[*(const int *)b];

	if (x != y)
		return x > y ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

/* Raw streams first (one max-flow to any aggregator with room or the
 * PS), then the aggregated streams of the switches that got workers, in
 * what is left. 1 feasible (plan into p if set), 0 not, -errno. */
static int try_raw_first(struct grid *g, double r, struct pp_plan *p)
{
	struct topo *t = g->t;
	int nn = t->nnodes, S = nn, T = nn + 1, i, j, ok = 0, nu = 0;
	int *sink = malloc((g->nc + 1) * sizeof(int));
	int *agg = malloc((g->n + 1) * sizeof(int));
	int *wpath = malloc(((size_t)g->n + 1) * PP_MAX_HOPS * sizeof(int));
	int *wlen = malloc((g->n + 1) * sizeof(int));
	int *used = calloc(nn, sizeof(int));
	long long *res = malloc((2 * t->nlinks + 1) * sizeof(long long));
	struct pp_mf *m = NULL, *m2 = NULL;
	int edges[PP_MAX_HOPS], arcs[PP_MAX_HOPS];
	struct pp_class *c;

	if (!sink || !agg || !wpath || !wlen || !used || !res) {
		ok = -ENOMEM;
		goto out;
	}
	m = arc_net(t, r, NULL);
	if (!m) {
		ok = -ENOMEM;
		goto out;
	}
	for (i = 0; i < 2 * t->nlinks; i++)
		if (g->bcarc[i]) {
			if (pp_mf_cap(m, 2 * i) < 1)
				goto out;
			pp_mf_set_cap(m, 2 * i, pp_mf_cap(m, 2 * i) - 1);
		}
	for (i = 0; i < g->n; i++)
		pp_mf_edge(m, S, t->hosts[i], 1);
	for (i = 0; i < g->nc; i++)
		sink[i] = pp_mf_edge(m, g->cand[i], T,
				     units(t->node[g->cand[i]].cap, r));
	pp_mf_edge(m, g->ps, T, g->n);
	if (pp_mf_run(m, S, T, g->n) < g->n)
		goto out;
	for (i = 0; i < 2 * t->nlinks; i++)
		res[i] = pp_mf_cap(m, 2 * i) - pp_mf_flow(m, 2 * i);
	for (i = 0; i < g->n; i++) {
		int k = pp_mf_take_path(m, t->hosts[i], T, edges, PP_MAX_HOPS);

		if (k < 1) {
			ok = -EINVAL;
			goto out;
		}
		for (j = 0; j < k - 1; j++)
			wpath[i * PP_MAX_HOPS + j] = edges[j] / 2;
		wlen[i] = k - 1;
		agg[i] = k > 1 ? topo_arc_to(t, edges[k - 2] / 2) : t->hosts[i];
		if (agg[i] != g->ps && !used[agg[i]]++)
			nu++;
	}
	/* the aggregated streams in what is left */
	m2 = arc_net(t, r, res);
	if (!m2) {
		ok = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nn; i++)
		if (used[i])
			pp_mf_edge(m2, S, i, 1);
	if (pp_mf_run(m2, S, g->ps, nu) < nu)
		goto out;
	ok = 1;
	if (!p)
		goto out;
	c = pp_class_new(p, PP_TREE, 1);
	if (!c) {
		ok = -ENOMEM;
		goto out;
	}
	c->root = g->ps;
	for (i = 0; i < g->n && ok == 1; i++)
		if (pp_xfer_arcs(c, 0, t->hosts[i], agg[i], 1,
				 wpath + i * PP_MAX_HOPS, wlen[i]))
			ok = -ENOMEM;
	for (i = 0; i < nn && ok == 1; i++) {
		int k;

		if (!used[i])
			continue;
		k = pp_mf_take_path(m2, i, g->ps, edges, PP_MAX_HOPS);
		if (k < 0) {
			ok = -EINVAL;
			break;
		}
		for (j = 0; j < k; j++)
			arcs[j] = edges[j] / 2;
		if (pp_xfer_arcs(c, 0, i, g->ps, 1, arcs, k))
			ok = -ENOMEM;
	}
	if (ok == 1 && pp_bc_tree(t, c, g->ps, NULL))
		ok = -ENOMEM;
out:
	pp_mf_free(m);
	pp_mf_free(m2);
	free(sink);
	free(agg);
	free(wpath);
	free(wlen);
	free(used);
	free(res);
	return ok;
}

/* 1 feasible (plan written to p if set), 0 not, -errno. */
static int try_rate(struct grid *g, double r, int strategy, struct pp_plan *p)
{
	struct topo *t = g->t;
	int nn = t->nnodes, S = nn, T = nn + 1, i, j, nacc = 0, ok = 0;
	int *ord = malloc((g->nc + 1) * sizeof(int));
	int *acc = malloc((g->nc + 1) * sizeof(int));
	int *apath = malloc(((size_t)g->nc + 1) * PP_MAX_HOPS * sizeof(int));
	int *alen = malloc((g->nc + 1) * sizeof(int));
	int *used = calloc(nn, sizeof(int));
	double *key = calloc(nn, sizeof(double));
	long long *res = malloc((2 * t->nlinks + 1) * sizeof(long long));
	long long P = ps_units(g, r), cover = 0;
	struct pp_mf *m = NULL, *m2 = NULL;
	int edges[PP_MAX_HOPS], arcs[PP_MAX_HOPS], nord = 0;
	struct pp_class *c;

	if (strategy == 6) {	/* raw streams first */
		ok = try_raw_first(g, r, p);
		goto out;
	}
	if (!ord || !acc || !apath || !alen || !used || !key || !res) {
		ok = -ENOMEM;
		goto out;
	}
	for (i = 0; i < g->nc; i++) {
		int s = g->cand[i];
		long long k = units(t->node[s].cap, r);

		if (k < 1)
			continue;
		ord[nord++] = s;
		if (strategy == 2) {
			long long in = in_units(g, s, r);

			key[s] = (in < k ? in : k) + 1e-6 * g->near[s];
		} else if (strategy == 3) {	/* nearest the PS first */
			key[s] = -g->dps[s] + 1e-6 * g->near[s];
		} else if (strategy == 7) {	/* core-most first */
			long long in = in_units(g, s, r);

			key[s] = g->dw[s] + 1e-3 * (in < k ? in : k);
		} else if (strategy == 5) {
			/* filled below from the relaxation's flows */
		} else if (strategy == 4) {	/* biggest first */
			key[s] = (k < 1e9 ? k : 1e9) + 1e-6 * g->near[s];
		} else {
			key[s] = g->near[s] + 1e-9 * (k < 1e9 ? k : 1e9);
		}
	}
	if (strategy == 5)	/* what the relaxation sends each switch */
		relax_load(g, r, key);
	sort_key = key;
	qsort(ord, nord, sizeof(int), by_key);
	if (strategy == 0)	/* lean: just enough switches */
		for (i = 0; i < nord; i++) {
			cover += units(t->node[ord[i]].cap, r);
			if (cover >= g->n) {
				nord = i + 1;
				break;
			}
		}
	/* (1) aggregated streams to the PS, in priority order */
	m = arc_net(t, r, NULL);
	if (!m) {
		ok = -ENOMEM;
		goto out;
	}
	/* the result's multicast tree first */
	for (i = 0; i < 2 * t->nlinks; i++)
		if (g->bcarc[i]) {
			if (pp_mf_cap(m, 2 * i) < 1)
				goto out;
			pp_mf_set_cap(m, 2 * i, pp_mf_cap(m, 2 * i) - 1);
		}
	for (i = 0; i < nord && nacc < P; i++) {
		int e = pp_mf_edge(m, S, ord[i], 1);

		if (e < 0) {
			ok = -ENOMEM;
			goto out;
		}
		if (pp_mf_run(m, S, g->ps, 1) == 1)
			acc[nacc++] = ord[i];
		else
			pp_mf_set_cap(m, e, 0);
	}
	for (i = 0; i < 2 * t->nlinks; i++)
		res[i] = pp_mf_cap(m, 2 * i) - pp_mf_flow(m, 2 * i);
	for (i = 0; p && i < nacc; i++) {
		alen[i] = pp_mf_take_path(m, acc[i], g->ps,
					  apath + i * PP_MAX_HOPS, PP_MAX_HOPS);
		if (alen[i] < 0) {
			ok = -EINVAL;
			goto out;
		}
	}
	/* (2) raw streams to aggregators with room, or to the PS */
	m2 = arc_net(t, r, res);
	if (!m2) {
		ok = -ENOMEM;
		goto out;
	}
	for (i = 0; i < g->n; i++)
		pp_mf_edge(m2, S, t->hosts[i], 1);
	for (i = 0; i < nacc; i++)
		pp_mf_edge(m2, acc[i], T, units(t->node[acc[i]].cap, r));
	pp_mf_edge(m2, g->ps, T, g->n);
	if (pp_mf_run(m2, S, T, g->n) < g->n)
		goto out;
	ok = 1;
	if (!p)
		goto out;
	c = pp_class_new(p, PP_TREE, 1);
	if (!c) {
		ok = -ENOMEM;
		goto out;
	}
	c->root = g->ps;
	for (i = 0; i < g->n && ok == 1; i++) {
		int w = t->hosts[i], k, agg;

		k = pp_mf_take_path(m2, w, T, edges, PP_MAX_HOPS);
		if (k < 1) {
			ok = -EINVAL;
			break;
		}
		for (j = 0; j < k - 1; j++)
			arcs[j] = edges[j] / 2;
		agg = k > 1 ? topo_arc_to(t, arcs[k - 2]) : w;
		used[agg] = 1;
		if (pp_xfer_arcs(c, 0, w, agg, 1, arcs, k - 1))
			ok = -ENOMEM;
	}
	for (i = 0; i < nacc && ok == 1; i++) {
		if (!used[acc[i]])
			continue;
		for (j = 0; j < alen[i]; j++)
			arcs[j] = apath[i * PP_MAX_HOPS + j] / 2;
		if (pp_xfer_arcs(c, 0, acc[i], g->ps, 1, arcs, alen[i]))
			ok = -ENOMEM;
	}
	if (ok == 1 && pp_bc_tree(t, c, g->ps, NULL))
		ok = -ENOMEM;
out:
	pp_mf_free(m);
	pp_mf_free(m2);
	free(ord);
	free(acc);
	free(apath);
	free(alen);
	free(used);
	free(key);
	free(res);
	return ok;
}

static int cmp_ll_desc(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The relaxation: 1 if r may be feasible, 0 if it surely is not. */
static int relax_ok(struct grid *g, double r)
{
	struct topo *t = g->t;
	int nn = t->nnodes, S = nn, T = nn + 1, i, ok;
	long long P = ps_units(g, r), cover = 0;
	long long *k = malloc((g->nc + 1) * sizeof(long long));
	struct pp_mf *m;

	if (!k)
		return 1;
	/* a switch sums no more streams than its links can bring it (less
	 * the result's multicast tree) */
	for (i = 0; i < g->nc; i++) {
		int s = g->cand[i], a;
		long long in = 0;

		for (a = t->off[s]; a < t->off[s + 1]; a++) {
			int arc = t->adj[a] ^ 1;	/* into s */

			in += units(topo_arc_gbps(t, arc), r) - !!g->bcarc[arc];
		}
		k[i] = units(t->node[s].cap, r);
		k[i] = in < k[i] ? in : k[i];
	}
	qsort(k, g->nc, sizeof(long long), cmp_ll_desc);
	/* every stream into the PS covers one switch's workers or one
	 * worker; the best P streams must cover all */
	for (i = 0; i < P && cover < g->n; i++)
		cover += i < g->nc && k[i] > 1 ? k[i] : 1;
	free(k);
	if (cover < g->n)
		return 0;
	m = arc_net(t, r, NULL);
	if (!m)
		return 1;
	for (i = 0; i < 2 * t->nlinks; i++)
		if (g->bcarc[i]) {
			if (pp_mf_cap(m, 2 * i) < 1) {
				pp_mf_free(m);
				return 0;
			}
			pp_mf_set_cap(m, 2 * i, pp_mf_cap(m, 2 * i) - 1);
		}
	for (i = 0; i < g->n; i++)
		pp_mf_edge(m, S, t->hosts[i], 1);
	for (i = 0; i < g->nc; i++)
		pp_mf_edge(m, g->cand[i], T, units(t->node[g->cand[i]].cap, r));
	pp_mf_edge(m, g->ps, T, g->n);
	ok = pp_mf_run(m, S, T, g->n) == g->n;
	pp_mf_free(m);
	return ok;
}

/* key[s] = workers the relaxation's max-flow sends to switch s. */
static void relax_load(struct grid *g, double r, double *key)
{
	struct topo *t = g->t;
	int nn = t->nnodes, S = nn, T = nn + 1, i;
	int *e = malloc((g->nc + 1) * sizeof(int));
	struct pp_mf *m = arc_net(t, r, NULL);

	if (!m || !e)
		goto out;
	for (i = 0; i < 2 * t->nlinks; i++)
		if (g->bcarc[i] && pp_mf_cap(m, 2 * i) >= 1)
			pp_mf_set_cap(m, 2 * i, pp_mf_cap(m, 2 * i) - 1);
	for (i = 0; i < g->n; i++)
		pp_mf_edge(m, S, t->hosts[i], 1);
	for (i = 0; i < g->nc; i++)
		e[i] = pp_mf_edge(m, g->cand[i], T,
				  units(t->node[g->cand[i]].cap, r));
	pp_mf_edge(m, g->ps, T, g->n);
	pp_mf_run(m, S, T, g->n);
	for (i = 0; i < g->nc; i++)
		key[g->cand[i]] = e[i] >= 0 ? pp_mf_flow(m, e[i]) +
			1e-6 * g->near[g->cand[i]] : 0;
out:
	pp_mf_free(m);
	free(e);
}

int plan_grid(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
	      char *err, size_t errlen)
{
	struct grid g = { .t = t, .n = t->nhosts };
	int i, j, nb, lo, hi, ret = -ENOMEM, strat = -1, ncap = 0, ub;
	int rt[PP_MAX_HOPS];
	double *caps = NULL, *bp = NULL;

	if (t->nps == 0) {
		snprintf(err, errlen, "%s: the topology has no ps node", p->scheme);
		return -EINVAL;
	}
	g.ps = t->ps[0];
	g.cand = malloc((t->nnodes + 1) * sizeof(int));
	g.near = calloc(t->nnodes, sizeof(int));
	g.bcarc = calloc(2 * t->nlinks + 1, 1);
	g.dps = calloc(t->nnodes, sizeof(int));
	g.dw = malloc((t->nnodes + 1) * sizeof(int));
	caps = malloc((2 * t->nlinks + t->nnodes + 1) * sizeof(double));
	if (!g.cand || !g.near || !g.bcarc || !g.dps || !g.dw || !caps)
		goto out;
	{	/* hops from the nearest worker: BFS from all of them */
		int qh = 0, qt = 0, *q = malloc((t->nnodes + 1) * sizeof(int));

		if (!q)
			goto out;
		for (i = 0; i < t->nnodes; i++)
			g.dw[i] = -1;
		for (i = 0; i < g.n; i++) {
			g.dw[t->hosts[i]] = 0;
			q[qt++] = t->hosts[i];
		}
		while (qh < qt) {
			int u = q[qh++], a;

			for (a = t->off[u]; a < t->off[u + 1]; a++) {
				int v = topo_arc_to(t, t->adj[a]);

				if (g.dw[v] < 0) {
					g.dw[v] = g.dw[u] + 1;
					q[qt++] = v;
				}
			}
		}
		free(q);
	}
	{
		struct pp_plan tmp;
		struct pp_class *c;

		pp_init(&tmp, "grid");
		c = pp_class_new(&tmp, PP_TREE, 1);
		ret = c ? pp_bc_tree(t, c, g.ps, g.bcarc) : -ENOMEM;
		pp_free(&tmp);
		if (ret)
			goto out;
		ret = -ENOMEM;
	}
	for (i = 0; i < t->nnodes; i++)
		if (t->node[i].ina && t->node[i].cap > 0) {
			g.cand[g.nc++] = i;
			caps[ncap++] = t->node[i].cap;
			g.dps[i] = topo_route(t, i, g.ps, rt, PP_MAX_HOPS);
		}
	for (i = 0; i < 2 * t->nlinks; i++)
		caps[ncap++] = topo_arc_gbps(t, i);
	/* nearness: the first INA switch on a worker's shortest route */
	for (i = 0; i < g.n; i++) {
		int n = topo_route(t, t->hosts[i], g.ps, rt, PP_MAX_HOPS);

		for (j = 0; j < n; j++)
			if (t->node[topo_arc_to(t, rt[j])].ina) {
				g.near[topo_arc_to(t, rt[j])]++;
				break;
			}
	}
	nb = pp_breakpoints(caps, ncap, g.n + 1, &bp);
	if (nb < 0) {
		ret = nb;
		goto out;
	}
	/* the bound first: the largest breakpoint the relaxation admits. No
	 * plan beats it, so the search for a plan starts there and stops at
	 * once where they meet (every scenario): at 10,000 workers each
	 * rate the heuristic rejects costs all its orders, each a chain of
	 * max-flows over the whole network */
	{
		int l2 = -1, h2 = nb;

		while (h2 - l2 > 1) {
			int mid = (l2 + h2) / 2;

			if (relax_ok(&g, bp[mid]))
				l2 = mid;
			else
				h2 = mid;
		}
		ub = l2;
	}
	lo = -1;
	hi = ub + 1;
	for (strat = 0; ub >= 0 && strat < GRID_ORDERS; strat++) {
		int f = try_rate(&g, bp[ub], strat, NULL);

		if (f < 0) {
			ret = f;
			goto out;
		}
		if (f) {
			lo = ub;
			break;
		}
	}
	while (lo < ub && hi - lo > 1) {
		int mid = (lo + hi) / 2, s, f = 0;

		for (s = 0; s < GRID_ORDERS && !f; s++) {
			f = try_rate(&g, bp[mid], s, NULL);
			if (f < 0) {
				ret = f;
				goto out;
			}
		}
		if (f)
			lo = mid;
		else
			hi = mid;
	}
	if (lo < 0) {
		snprintf(err, errlen, "%s: no rate is feasible", p->scheme);
		ret = -EINVAL;
		goto out;
	}
	for (strat = 0; strat < GRID_ORDERS; strat++)
		if (try_rate(&g, bp[lo], strat, NULL) == 1)
			break;
	ret = try_rate(&g, bp[lo], strat, p);
	ret = ret == 1 ? 0 : ret < 0 ? ret : -EINVAL;
	p->rate_gbps = bp[lo];
	if (ub < lo)	/* cannot be: a plan passes the relaxation */
		ub = lo;
	p->bound_gbps = bp[ub];
	snprintf(p->note, sizeof(p->note), "rate %.4g Gbps, bound %.4g Gbps "
		 "(%.1f%%), order %d", bp[lo], bp[ub],
		 100 * bp[lo] / bp[ub], strat);
out:
	free(g.cand);
	free(g.near);
	free(g.bcarc);
	free(g.dps);
	free(g.dw);
	free(caps);
	free(bp);
	return ret;
}
