// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Parameter server without INA. One server: every worker pushes its whole
 * gradient to it and pulls the result back along the same route; routes
 * are chosen for the largest common rate r, exactly: at rate r a link of
 * c Gbps carries floor(c / r) worker streams, so r is feasible iff a
 * max-flow with those integer capacities moves one unit from every worker
 * to the server, and the best r is one of the values c / k (binary search
 * over them). Several servers: the tensor is sharded evenly over them,
 * shortest routes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/plan/pplan.h"

/* 1 feasible, 0 not, -errno; with c set, the routes go into c. */
static int ps_flow(struct topo *t, int ps, double r, struct pp_class *c)
{
	int nn = t->nnodes, S = nn, i, ok, edges[PP_MAX_HOPS], arcs[PP_MAX_HOPS];
	struct pp_mf *m = pp_mf_new(nn + 1);

	if (!m)
		return -ENOMEM;
	for (i = 0; i < 2 * t->nlinks; i++)
		pp_mf_edge(m, topo_arc_from(t, i), topo_arc_to(t, i),
			   (long long)floor(topo_arc_gbps(t, i) / r + 1e-9));
	for (i = 0; i < t->nhosts; i++)
		pp_mf_edge(m, S, t->hosts[i], 1);
	ok = pp_mf_run(m, S, ps, t->nhosts) == t->nhosts;
	for (i = 0; ok && c && i < t->nhosts; i++) {
		int k = pp_mf_take_path(m, t->hosts[i], ps, edges, PP_MAX_HOPS), j;

		if (k < 0) {
			ok = -EINVAL;
			break;
		}
		for (j = 0; j < k; j++)
			arcs[j] = edges[j] / 2;
		ok = pp_xfer_arcs(c, 0, t->hosts[i], ps, 1, arcs, k) ? -ENOMEM : 1;
	}
	pp_mf_free(m);
	return ok;
}

int plan_ps(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
	    char *err, size_t errlen)
{
	double *caps, *bp;
	int nb, lo, hi, i, ret;
	struct pp_class *c;

	if (t->nps == 0) {
		snprintf(err, errlen, "%s: the topology has no ps node", p->scheme);
		return -EINVAL;
	}
	if (t->nps > 1) {
		for (i = 0; i < t->nps; i++) {
			int w;

			c = pp_class_new(p, PP_TREE, 1.0 / t->nps);
			if (!c)
				return -ENOMEM;
			c->root = t->ps[i];
			for (w = 0; w < t->nhosts; w++)
				if ((ret = pp_red(t, c, t->hosts[w], t->ps[i], 1)))
					return ret;
			if ((ret = pp_mirror_bc(c)))
				return ret;
		}
		snprintf(p->note, sizeof(p->note), "sharded over %d servers, "
			 "shortest routes", t->nps);
		return 0;
	}
	caps = malloc(2 * t->nlinks * sizeof(double));
	if (!caps)
		return -ENOMEM;
	for (i = 0; i < 2 * t->nlinks; i++)
		caps[i] = topo_arc_gbps(t, i);
	nb = pp_breakpoints(caps, 2 * t->nlinks, t->nhosts, &bp);
	free(caps);
	if (nb < 0)
		return nb;
	/* largest feasible breakpoint; feasibility only shrinks as r grows */
	lo = -1;
	hi = nb;
	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;

		ret = ps_flow(t, t->ps[0], bp[mid], NULL);
		if (ret < 0)
			goto out;
		if (ret)
			lo = mid;
		else
			hi = mid;
	}
	if (lo < 0) {
		snprintf(err, errlen, "%s: no rate is feasible", p->scheme);
		ret = -EINVAL;
		goto out;
	}
	c = pp_class_new(p, PP_TREE, 1);
	ret = -ENOMEM;
	if (!c)
		goto out;
	c->root = t->ps[0];
	ret = ps_flow(t, t->ps[0], bp[lo], c);
	ret = ret == 1 ? pp_mirror_bc(c) : ret < 0 ? ret : -EINVAL;
	p->rate_gbps = p->bound_gbps = bp[lo];
	snprintf(p->note, sizeof(p->note), "max-flow routes, exact optimum "
		 "%.4g Gbps", bp[lo]);
out:
	free(bp);
	return ret;
}
