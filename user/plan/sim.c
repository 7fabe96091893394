// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Fluid simulation of a plan on a topology. Model in user/plan/sim.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "user/plan/sim.h"
#include "user/log.h"

void sim_res_free(struct sim_res *r)
{
	free(r->arc_gbps);
	free(r->agg_gbps);
	free(r->tx_gbps);
	memset(r, 0, sizeof(*r));
}

static void add_xfer(const struct pp_xfer *x, double w, double *arc,
		     double *tx)
{
	int h;

	for (h = 0; h < x->nhop; h++)
		arc[x->hop[h]] += w * x->vol;
	tx[x->src] += w * x->vol;
}

/* Longest chain of transfers in xs (each node sends at most once). */
static int depth(const struct topo *t, const struct pp_xfer *xs, int n,
		 int *next)
{
	int i, best = 0;

	for (i = 0; i < t->nnodes; i++)
		next[i] = -1;
	for (i = 0; i < n; i++)
		next[xs[i].src] = xs[i].dst;
	for (i = 0; i < n; i++) {
		int u = xs[i].src, d = 0;

		while (next[u] >= 0 && d <= n) {
			u = next[u];
			d++;
		}
		best = d > best ? d : best;
	}
	return best;
}

/* Broadcast depth: a node receives once, so follow receivers upward. */
static int bc_depth(const struct topo *t, const struct pp_xfer *xs, int n,
		    int *from)
{
	int i, best = 0;

	for (i = 0; i < t->nnodes; i++)
		from[i] = -1;
	for (i = 0; i < n; i++)
		from[xs[i].dst] = xs[i].src;
	for (i = 0; i < n; i++) {
		int u = xs[i].dst, d = 0;

		while (from[u] >= 0 && d <= n) {
			u = from[u];
			d++;
		}
		best = d > best ? d : best;
	}
	return best;
}

static int plan_steps(const struct topo *t, const struct pp_plan *p)
{
	int *tmp = malloc(t->nnodes * sizeof(int)), i, best = 0;

	if (!tmp)
		return 0;
	for (i = 0; i < p->ncls; i++) {
		const struct pp_class *c = &p->cls[i];
		int s;

		s = depth(t, c->red, c->nred, tmp) +
		    bc_depth(t, c->bc, c->nbc, tmp);
		if (c->kind == PP_RING)
			s += 2 * (c->nmem - 1);
		best = s > best ? s : best;
	}
	free(tmp);
	return best;
}

static int run_fair(const struct topo *t, const struct pp_plan *p,
		    const struct sim_opts *o, struct sim_res *r);

int sim_run(const struct topo *t, const struct pp_plan *p,
	    const struct sim_opts *o, struct sim_res *r, char *err,
	    size_t errlen)
{
	int na = 2 * t->nlinks, i, j;
	double *tx_node, *push, x = INFINITY, xp = INFINITY;

	memset(r, 0, sizeof(*r));
	r->arc_gbps = calloc(na + 1, sizeof(double));
	r->agg_gbps = calloc(t->nnodes, sizeof(double));
	r->tx_gbps = calloc(t->nhosts + 1, sizeof(double));
	tx_node = calloc(t->nnodes, sizeof(double));
	push = calloc(na + 1, sizeof(double));
	if (!r->arc_gbps || !r->agg_gbps || !r->tx_gbps || !tx_node || !push) {
		free(tx_node);
		free(push);
		sim_res_free(r);
		return rinx_seterr(err, errlen, -ENOMEM, "out of memory");
	}
	/* loads per unit of tensor rate first, scaled by x at the end */
	for (i = 0; i < p->ncls; i++) {
		const struct pp_class *c = &p->cls[i];

		for (j = 0; j < c->nred; j++) {
			const struct pp_xfer *xf = &c->red[j];

			add_xfer(xf, c->share, r->arc_gbps, tx_node);
			add_xfer(xf, c->share, push, tx_node);
			tx_node[xf->src] -= c->share * xf->vol;
			r->agg_gbps[xf->dst] += c->share * xf->vol;
		}
		for (j = 0; j < c->nbc; j++)
			add_xfer(&c->bc[j], c->share, r->arc_gbps, tx_node);
		for (j = 0; j < c->nring; j++) {
			const struct pp_xfer *xf = &c->ring[j];

			add_xfer(xf, c->share, r->arc_gbps, tx_node);
			add_xfer(xf, c->share / 2, push, tx_node);
			tx_node[xf->src] -= c->share / 2 * xf->vol;
			/* half of a ring hop is reduce-scatter, summed at
			 * the receiver; the other half is all-gather */
			r->agg_gbps[xf->dst] += c->share * xf->vol / 2;
		}
	}
	r->bott = INT_MIN;
	for (i = 0; i < na; i++)
		if (push[i] > 0)
			xp = fmin(xp, topo_arc_gbps(t, i) / push[i]);
	for (i = 0; i < na; i++)
		if (r->arc_gbps[i] > 0 && topo_arc_gbps(t, i) / r->arc_gbps[i] < x) {
			x = topo_arc_gbps(t, i) / r->arc_gbps[i];
			r->bott = i;
		}
	for (i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->node[i];

		if (n->kind != TOPO_SWITCH || r->agg_gbps[i] <= 0)
			continue;
		if (!n->ina) {
			free(tx_node);
			free(push);
			sim_res_free(r);
			return rinx_seterr(err, errlen, -EINVAL, "%s: switch %s "
					   "cannot aggregate (no INA)", p->scheme,
					   n->name);
		}
		xp = fmin(xp, n->cap / r->agg_gbps[i]);
		if (n->cap / r->agg_gbps[i] < x) {
			x = n->cap / r->agg_gbps[i];
			r->bott = -(i + 1);
		}
	}
	if (!isfinite(x))	/* one worker: nothing to move */
		x = INFINITY;
	r->rate_gbps = x;
	r->push_gbps = isfinite(xp) ? xp : INFINITY;
	r->bott_util = 1.0;
	r->steps = plan_steps(t, p);
	r->time_s = (isfinite(x) ? o->bytes * 8 / (x * 1e9) : 0) +
		    r->steps * o->hop_s;
	r->iter_s = o->compute_s + r->time_s;
	r->agg_tput_gbps = t->nhosts * x;
	for (i = 0; i < na; i++)
		r->arc_gbps[i] *= isfinite(x) ? x : 0;
	for (i = 0; i < t->nnodes; i++) {
		r->agg_gbps[i] *= isfinite(x) ? x : 0;
		if (t->node[i].kind == TOPO_SWITCH)
			r->ina_gbps += r->agg_gbps[i];
	}
	if (o->fair && run_fair(t, p, o, r)) {
		free(tx_node);
		free(push);
		sim_res_free(r);
		return rinx_seterr(err, errlen, -ENOMEM, "out of memory");
	}
	r->tx_min = INFINITY;
	r->tx_max = 0;
	for (i = 0; i < t->nhosts; i++) {
		double v = tx_node[t->hosts[i]] * (isfinite(x) ? x : 0);

		r->tx_gbps[i] = v;
		r->tx_min = v < r->tx_min ? v : r->tx_min;
		r->tx_max = v > r->tx_max ? v : r->tx_max;
	}
	free(tx_node);
	free(push);
	return 0;
}

const char *sim_bott_name(const struct topo *t, const struct sim_res *r,
			  char *buf, size_t len)
{
	if (r->bott == INT_MIN)
		snprintf(buf, len, "-");
	else if (r->bott < 0)
		snprintf(buf, len, "%s(agg)", t->node[-r->bott - 1].name);
	else
		topo_arc_name(t, r->bott, buf, len);
	return buf;
}

/* Per class, its load per unit rate on every resource it uses: arcs
 * 0..na-1, switches na + node. */
struct usage {
	int n;
	int *res;
	double *coef;
};

static int add_use(struct usage *u, double *dense, int *touched, int *nt,
		   int res, double v)
{
	if (dense[res] == 0)
		touched[(*nt)++] = res;
	dense[res] += v;
	return 0;
}

static int class_usage(const struct topo *t, const struct pp_class *c,
		       struct usage *u, double *dense, int *touched)
{
	int na = 2 * t->nlinks, nt = 0, i, j, h;

	for (j = 0; j < c->nred + c->nbc + c->nring; j++) {
		const struct pp_xfer *x = j < c->nred ? &c->red[j] :
			j < c->nred + c->nbc ? &c->bc[j - c->nred] :
			&c->ring[j - c->nred - c->nbc];
		int kind = j < c->nred ? 0 : j < c->nred + c->nbc ? 1 : 2;

		for (h = 0; h < x->nhop; h++)
			add_use(u, dense, touched, &nt, x->hop[h], x->vol);
		if (kind != 1 && t->node[x->dst].kind == TOPO_SWITCH)
			add_use(u, dense, touched, &nt, na + x->dst,
				kind == 2 ? x->vol / 2 : x->vol);
	}
	u->res = malloc((nt + 1) * sizeof(int));
	u->coef = malloc((nt + 1) * sizeof(double));
	if (!u->res || !u->coef)
		return -ENOMEM;
	for (i = 0; i < nt; i++) {
		u->res[i] = touched[i];
		u->coef[i] = dense[touched[i]];
		dense[touched[i]] = 0;
	}
	u->n = nt;
	return 0;
}

static double res_cap(const struct topo *t, int res)
{
	int na = 2 * t->nlinks;

	return res < na ? topo_arc_gbps(t, res) : t->node[res - na].cap;
}

/* The event model: progressive filling, advance to the next class end. */
static int run_fair(const struct topo *t, const struct pp_plan *p,
		    const struct sim_opts *o, struct sim_res *r)
{
	int na = 2 * t->nlinks, nres = na + t->nnodes, n = p->ncls, i, k;
	int left = 0, ret = -ENOMEM;
	struct usage *u = calloc(n + 1, sizeof(*u));
	double *dense = calloc(nres, sizeof(double));
	int *touched = malloc(nres * sizeof(int));
	double *rem = malloc((n + 1) * sizeof(double));
	double *y = malloc((n + 1) * sizeof(double));
	double *capl = malloc(nres * sizeof(double));
	double *dem = malloc(nres * sizeof(double));
	char *frozen = malloc(n + 1), *done = calloc(n + 1, 1);
	double now = 0;

	if (!u || !dense || !touched || !rem || !y || !capl || !dem ||
	    !frozen || !done)
		goto out;
	for (i = 0; i < n; i++) {
		if (class_usage(t, &p->cls[i], &u[i], dense, touched))
			goto out;
		rem[i] = p->cls[i].share * o->bytes * 8 / 1e9;	/* Gbit */
		if (u[i].n == 0 || rem[i] <= 0)
			done[i] = 1;
		else
			left++;
	}
	r->fair_events = 0;
	while (left > 0) {
		double dt = INFINITY, last = -1;
		int active = 0;

		for (k = 0; k < nres; k++)
			capl[k] = res_cap(t, k);
		for (i = 0; i < n; i++) {
			frozen[i] = done[i];
			y[i] = 0;
			active += !done[i];
		}
		/* progressive filling: raise every unfrozen class alike
		 * until a resource fills, freeze its classes, repeat */
		while (active > 0) {
			double d = INFINITY;

			for (k = 0; k < nres; k++)
				dem[k] = 0;
			for (i = 0; i < n; i++)
				if (!frozen[i])
					for (k = 0; k < u[i].n; k++)
						dem[u[i].res[k]] += u[i].coef[k];
			for (k = 0; k < nres; k++)
				if (dem[k] > 0)
					d = fmin(d, capl[k] / dem[k]);
			if (!isfinite(d))
				break;
			for (k = 0; k < nres; k++)
				capl[k] -= d * dem[k];
			for (i = 0; i < n; i++) {
				int full = 0;

				if (frozen[i])
					continue;
				y[i] += d;
				for (k = 0; k < u[i].n; k++)
					if (capl[u[i].res[k]] <=
					    1e-12 * res_cap(t, u[i].res[k]))
						full = 1;
				if (full) {
					frozen[i] = 1;
					active--;
				}
			}
		}
		for (i = 0; i < n; i++)
			if (!done[i] && y[i] > 0)
				dt = fmin(dt, rem[i] / y[i]);
		if (!isfinite(dt))
			break;
		now += dt;
		for (i = 0; i < n; i++) {
			if (done[i])
				continue;
			rem[i] -= y[i] * dt;
			if (rem[i] <= 1e-12 * o->bytes * 8 / 1e9) {
				done[i] = 1;
				left--;
				if (now != last)
					r->fair_events++;
				last = now;
			}
		}
	}
	r->fair_time_s = now + r->steps * o->hop_s;
	ret = 0;
out:
	if (u)
		for (i = 0; i < n; i++) {
			free(u[i].res);
			free(u[i].coef);
		}
	free(u);
	free(dense);
	free(touched);
	free(rem);
	free(y);
	free(capl);
	free(dem);
	free(frozen);
	free(done);
	return ret;
}

double pp_sim_rate(const struct topo *t, const struct pp_plan *p)
{
	struct sim_opts o = { .bytes = 1 };
	struct sim_res r;
	double x;

	if (sim_run(t, p, &o, &r, NULL, 0))
		return 0;
	x = r.rate_gbps;
	sim_res_free(&r);
	return x;
}
