// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * PS with INA, as ATP does it: a worker's gradient goes on its shortest
 * route to the PS and the first INA switch on that route (the nearest)
 * aggregates it. A switch of capacity C holding n workers sums at most C
 * Gbps of their input, C / n each; what a worker sends beyond that
 * overflows and goes on to the PS unaggregated. Aggregated streams go on
 * to the PS, which sums everything.
 *
 * The plan is a set of rate bands: at common rate r switch s aggregates
 * a_s = min(r, C_s / n_s) of each worker's stream, so the tensor splits at
 * the distinct a_s into classes; in a class a switch aggregates iff its
 * a_s covers the class. The largest feasible r is found by bisection,
 * checking each candidate with the simulator.
 *
 * Several PSs: the tensor is sharded evenly over them, each shard planned
 * the same way toward its own PS with 1/nps of every switch's capacity.
 * The PS returns the result down a multicast tree (switches replicate).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/plan/pplan.h"

struct atp {
	int n, ps, nps;
	int *agg;		/* per worker: aggregating switch or -1 */
	int *pre;		/* per worker: arcs of its route up to agg */
	int *nh;		/* per worker: arcs of its whole route */
	int *route;		/* per worker: PP_MAX_HOPS arcs */
	int *cnt;		/* per node: workers it aggregates */
};

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double share_rate(const struct topo *t, const struct atp *a, int s,
			 double r)
{
	return fmin(r, t->node[s].cap / a->nps / a->cnt[s]);
}

static int build_shard(struct topo *t, struct atp *a, double r,
		       struct pp_plan *p, int sh)
{
	double *lv = malloc((t->nnodes + 2) * sizeof(double)), lo = 0;
	int nl = 0, i, j, k, ret = 0, ps = t->ps[sh];
	int *agg = a->agg + sh * a->n, *pre = a->pre + sh * a->n;
	int *nh = a->nh + sh * a->n, *cnt = a->cnt + sh * t->nnodes;
	struct atp one = *a;

	one.cnt = cnt;
	if (!lv)
		return -ENOMEM;
	for (i = 0; i < t->nnodes; i++)
		if (cnt[i])
			lv[nl++] = share_rate(t, &one, i, r);
	lv[nl++] = r;
	qsort(lv, nl, sizeof(double), cmp_dbl);
	for (k = 0; k < nl && !ret; k++) {
		double hi = lv[k];
		struct pp_class *c;

		if (hi <= lo * (1 + 1e-12))
			continue;
		c = pp_class_new(p, PP_TREE, (hi - lo) / r / a->nps);
		if (!c) {
			ret = -ENOMEM;
			break;
		}
		c->root = ps;
		for (i = 0; i < a->n && !ret; i++) {
			int s = agg[i], w = t->hosts[i];
			int *rt = a->route + ((size_t)sh * a->n + i) * PP_MAX_HOPS;

			if (s >= 0 && share_rate(t, &one, s, r) >= hi * (1 - 1e-12))
				ret = pp_xfer_arcs(c, 0, w, s, 1, rt, pre[i]);
			else
				ret = pp_xfer_arcs(c, 0, w, ps, 1, rt, nh[i]);
		}
		for (j = 0; j < t->nnodes && !ret; j++)
			if (cnt[j] && share_rate(t, &one, j, r) >= hi * (1 - 1e-12))
				ret = pp_red(t, c, j, ps, 1);
		if (!ret)
			ret = pp_bc_tree(t, c, ps, NULL);
		lo = hi;
	}
	free(lv);
	return ret;
}

static int build(struct topo *t, struct atp *a, double r, struct pp_plan *p)
{
	int sh, ret = 0;

	for (sh = 0; sh < a->nps && !ret; sh++)
		ret = build_shard(t, a, r, p, sh);
	return ret;
}

int plan_psina(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
	       char *err, size_t errlen)
{
	struct atp a = { .n = t->nhosts };
	double lo = 0, hi = 0;
	int i, j, it, ret = -ENOMEM, nagg = 0;

	if (t->nps == 0) {
		snprintf(err, errlen, "%s: the topology has no ps node", p->scheme);
		return -EINVAL;
	}
	a.nps = t->nps;
	a.agg = malloc((size_t)a.n * a.nps * sizeof(int));
	a.pre = malloc((size_t)a.n * a.nps * sizeof(int));
	a.nh = malloc((size_t)a.n * a.nps * sizeof(int));
	a.route = malloc((size_t)a.n * a.nps * PP_MAX_HOPS * sizeof(int));
	a.cnt = calloc((size_t)t->nnodes * a.nps, sizeof(int));
	if (!a.agg || !a.pre || !a.nh || !a.route || !a.cnt)
		goto out;
	for (i = 0; i < a.n * a.nps; i++) {
		int sh = i / a.n, w = t->hosts[i % a.n];
		int *rt = a.route + (size_t)i * PP_MAX_HOPS;
		double out = 0;

		ret = topo_route(t, w, t->ps[sh], rt, PP_MAX_HOPS);
		if (ret < 0)
			goto out;
		a.nh[i] = ret;
		a.agg[i] = -1;
		for (j = 0; j < ret; j++) {
			int v = topo_arc_to(t, rt[j]);

			if (t->node[v].ina && t->node[v].cap > 0) {
				a.agg[i] = v;
				a.pre[i] = j + 1;
				if (!a.cnt[sh * t->nnodes + v]++ && sh == 0)
					nagg++;
				break;
			}
		}
		for (j = t->off[w]; j < t->off[w + 1]; j++)
			out += topo_arc_gbps(t, t->adj[j]);
		hi = fmax(hi, out);
	}
	/* bisection on the common rate; 60 halvings reach double precision */
	for (it = 0; it < 60; it++) {
		double mid = (lo + hi) / 2;
		struct pp_plan q;

		pp_init(&q, "ps-ina");
		ret = build(t, &a, mid, &q);
		if (!ret && pp_sim_rate(t, &q) >= mid * (1 - 1e-12))
			lo = mid;
		else
			hi = mid;
		pp_free(&q);
		if (ret)
			goto out;
	}
	if (!(lo > 0)) {
		snprintf(err, errlen, "%s: no rate is feasible", p->scheme);
		ret = -EINVAL;
		goto out;
	}
	ret = build(t, &a, lo, p);
	p->rate_gbps = lo;
	snprintf(p->note, sizeof(p->note), "%d aggregating switches, %d PS, "
		 "%d class%s, bisection", nagg, a.nps, p->ncls,
		 p->ncls > 1 ? "es" : "");
out:
	free(a.agg);
	free(a.pre);
	free(a.nh);
	free(a.route);
	free(a.cnt);
	return ret;
}
