// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ATP as ATP deploys it (NSDI'21), where `ps-ina` is ATP as the GRID paper
 * models it in its example (one level, one PS).
 *
 * - Two aggregation levels: a worker's ToR (ATP's "worker switch") sums
 *   its rack, and the ToR of the shard's parameter server (the "PS
 *   switch") sums the racks' partial sums; both must be INA switches.
 *   What a switch cannot sum goes on unaggregated (ATP's best effort: a
 *   packet that finds no aggregator is summed further on, at last by the
 *   PS).
 * - The parameter server sharded, the two ways ATP runs it: one shard per
 *   worker, co-located with it (the worker's host is its shard's PS), and
 *   one shard per dedicated server (the topology's ps nodes). The planner
 *   plans both and keeps the stronger; the note gives both rates.
 *
 * Capacity: a switch of capacity C asked to sum L streams per unit of rate
 * sums the fraction f = min(1, C / (r L)) of them. L counts its rack's
 * workers and, where it is a PS switch, the streams the other racks send it
 * (one partial sum from a ToR that aggregates, its workers' raw streams
 * where it does not), weighted by the shards it serves; f and L depend on
 * each other, so they are iterated from f = 1 down to their fixed point.
 * The tensor then splits into bands at the distinct f (at most
 * ATP_BANDS): in a band a switch sums everything or nothing. The rate r is
 * the largest the simulator confirms: first the plan at the host links'
 * rate, whose simulated rate is feasible (a lower r only raises every f),
 * then bisection between the two.
 *
 * Size: a class per shard and band, each with a transfer per worker. Up to
 * 256 workers every worker is its own shard; above, a rack's workers'
 * shards are one class rooted at the rack's first worker (exact but for
 * that worker's own link, which carries the rack's shards instead of its
 * own: (H - 1) / n more), and where the classes would hold more than
 * ATP_XFERS transfers (racks x workers x ATP_BANDS) neighbouring racks
 * are grouped further, each group's PS switch summing for all of it (said
 * in the note: weaker than ATP at that scale; 26 racks a group at 10,000
 * workers on a k=36 fat-tree).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/plan/pplan.h"

#define ATP_BANDS	4
#define ATP_XFERS	1000000	/* a build per step of the rate search */
#define ATP_XFERS_FAST	4000000	/* one build: the search counts per rack */

struct atp {
	struct topo *t;
	int ns;			/* shards */
	int *root;		/* per shard: the PS (a ps node or a worker) */
	int *ptor;		/* per shard: its PS switch (INA) or -1 */
	double *share;		/* per shard */
	int *tor;		/* per worker (t->hosts order): INA ToR or -1 */
	int *cnt;		/* per node: workers whose INA ToR it is */
	double *s1;		/* per node: shares it is PS switch for */
	double *home;		/* per node: shares whose PS is a worker of
				 * its rack (that worker sends them nothing) */
	double *f;		/* per node: fraction it sums at rate r */
	int nraw;		/* workers without an INA ToR */
	/* caches: the same routes and broadcast trees recur in every band
	 * and every step of the rate search */
	int *rlen;		/* per node: cached route to `rto`, -1 none */
	int *rhop;		/* per node: PP_MAX_HOPS arcs */
	int rto;
	int **bc;		/* per shard: its broadcast tree's arcs */
	int *nbc;
	int nsmax;		/* room for shards */
	/* the fast path (every worker and server hangs off one link): the
	 * plan's loads computed per rack instead of per worker */
	int fast;
	int nr, *rk, *rix;	/* racks: ToRs with workers; node -> index */
	int **rows;		/* per node p: every rack's route to p,
				 * offsets (nr + 1) then arcs */
	double *arc, *agg;	/* loads per unit of rate */
	double *rshare;		/* per node: shares it is the PS of */
	int *wc;		/* per node: workers whose ToR it is */
};

/* Every rack's route to node p, computed once per p. */
static const int *row_to(struct atp *a, int p)
{
	struct topo *t = a->t;
	int i, n = 0, cap = a->nr * 8 + 8, *r;

	if (a->rows[p])
		return a->rows[p];
	r = malloc((a->nr + 1 + cap) * sizeof(int));
	if (!r)
		return NULL;
	for (i = 0; i < a->nr; i++) {
		int k;

		if (a->nr + 1 + n + PP_MAX_HOPS > a->nr + 1 + cap) {
			int *g;

			cap = 2 * cap + PP_MAX_HOPS;
			g = realloc(r, (a->nr + 1 + cap) * sizeof(int));
			if (!g) {
				free(r);
				return NULL;
			}
			r = g;
		}
		r[i] = n;
		k = topo_route(t, a->rk[i], p, r + a->nr + 1 + n, PP_MAX_HOPS);
		if (k < 0) {
			free(r);
			return NULL;
		}
		n += k;
	}
	r[a->nr] = n;
	a->rows[p] = r;
	return r;
}

/* Rack q's route to dst, into arcs after `pre` arcs already there; the
 * number of arcs in all, or -errno. Rows are kept per destination, not
 * per destination rack: equal-cost routes are picked per (source,
 * destination) pair, as ECMP hashes flows, and one route per pair of
 * racks would pile every shard of a rack onto one spine. */
static int rack_route(struct atp *a, int q, int dst, int *arcs, int pre)
{
	const int *r = row_to(a, dst);
	int i = a->rix[q], n;

	if (!r)
		return -ENOMEM;
	n = r[i + 1] - r[i];
	if (pre + n > PP_MAX_HOPS)
		return -E2BIG;
	memcpy(arcs + pre, r + a->nr + 1 + r[i], n * sizeof(int));
	return n + pre;
}

/* A worker's raw stream to dst: its one arc to its ToR, then the ToR's
 * route, cached per ToR for the current dst. */
static int red_via_tor(struct atp *a, struct pp_class *c, int w, int dst)
{
	struct topo *t = a->t;
	int q = t->node[w].tor, arcs[PP_MAX_HOPS], n, i;

	if (a->fast) {
		arcs[0] = t->adj[t->off[w]];
		n = q == dst ? 1 : rack_route(a, q, dst, arcs, 1);
		return n < 0 ? n : pp_xfer_arcs(c, 0, w, dst, 1, arcs, n);
	}
	if (q < 0 || q == dst || t->off[w + 1] - t->off[w] != 1)
		return pp_red(t, c, w, dst, 1);
	if (a->rto != dst) {
		for (i = 0; i < t->nnodes; i++)
			a->rlen[i] = -1;
		a->rto = dst;
	}
	if (a->rlen[q] < 0) {
		n = topo_route(t, q, dst, a->rhop + (size_t)q * PP_MAX_HOPS,
			       PP_MAX_HOPS);
		if (n < 0)
			return n;
		a->rlen[q] = n;
	}
	n = a->rlen[q];
	if (n + 1 > PP_MAX_HOPS)
		return -E2BIG;
	arcs[0] = t->adj[t->off[w]];
	memcpy(arcs + 1, a->rhop + (size_t)q * PP_MAX_HOPS, n * sizeof(int));
	return pp_xfer_arcs(c, 0, w, dst, 1, arcs, n + 1);
}

/* The result's multicast tree from shard sh's root, built once. */
static int bc_tree(struct atp *a, struct pp_class *c, int sh)
{
	struct topo *t = a->t;
	int i, ret, n = 0;
	char *flag;

	if (a->bc[sh]) {
		for (i = 0, ret = 0; i < a->nbc[sh] && !ret; i++) {
			int arc = a->bc[sh][i];

			ret = pp_xfer_arcs(c, 1, topo_arc_from(t, arc),
					   topo_arc_to(t, arc), 1, &arc, 1);
		}
		return ret;
	}
	flag = calloc(2 * t->nlinks + 1, 1);
	if (!flag)
		return -ENOMEM;
	ret = pp_bc_tree(t, c, c->root, flag);
	for (i = 0; i < 2 * t->nlinks; i++)
		n += flag[i];
	a->bc[sh] = ret ? NULL : malloc((n + 1) * sizeof(int));
	if (a->bc[sh]) {
		for (i = 0, n = 0; i < 2 * t->nlinks; i++)
			if (flag[i])
				a->bc[sh][n++] = i;
		a->nbc[sh] = n;
	}
	free(flag);
	return ret;
}

static void bc_forget(struct atp *a)
{
	int i;

	for (i = 0; i < a->nsmax; i++) {
		free(a->bc[i]);
		a->bc[i] = NULL;
	}
}

static int ina_switch(const struct topo *t, int s)
{
	return s >= 0 && t->node[s].kind == TOPO_SWITCH && t->node[s].ina &&
	       t->node[s].cap > 0;
}

/* f at rate r: the fixed point of f_s = min(1, C_s / (r L_s(f))). */
static void fractions(struct atp *a, double r)
{
	struct topo *t = a->t;
	int i, it;

	for (i = 0; i < t->nnodes; i++)
		a->f[i] = 1;
	for (it = 0; it < 50; it++) {
		double sum = 0, moved = 0;

		/* what every ToR sends up: a partial sum where it aggregates,
		 * its workers' raw streams where it does not */
		for (i = 0; i < t->nnodes; i++)
			if (a->cnt[i])
				sum += a->f[i] + (1 - a->f[i]) * a->cnt[i];
		for (i = 0; i < t->nnodes; i++) {
			double l, nf, own = a->cnt[i] ?
				a->f[i] + (1 - a->f[i]) * a->cnt[i] : 0;

			if (!a->cnt[i] && !(a->s1[i] > 0))
				continue;
			l = a->cnt[i] - a->home[i] +
			    a->s1[i] * (sum - own + a->nraw);
			nf = fmin(1, t->node[i].cap / (r * l));
			moved = fmax(moved, a->f[i] - nf);
			a->f[i] = fmin(a->f[i], nf);
		}
		if (moved < 1e-12)
			break;
	}
}

static int cmp_dbl(const void *x, const void *y)
{
	double u = *(const double *)x, v = *(const double *)y;

	return u < v ? -1 : u > v;
}

/* Band edges (ascending, the last 1); at most ATP_BANDS. A switch's f is
 * rounded down to an edge: it sums a little less than it could, which
 * the simulator then counts. */
static int bands(struct atp *a, double *lv)
{
	struct topo *t = a->t;
	double *v = malloc((t->nnodes + 2) * sizeof(double));
	int n = 0, i, k, nb = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < t->nnodes; i++)
		if (a->cnt[i] || a->s1[i] > 0)
			v[n++] = a->f[i];
	v[n++] = 1;
	qsort(v, n, sizeof(double), cmp_dbl);
	for (i = 0, k = 0; i < n; i++)
		if (k == 0 || v[i] > v[k - 1] * (1 + 1e-9))
			v[k++] = v[i];
	/* keep the smallest, the largest and evenly spaced ones between */
	for (i = 0; i < ATP_BANDS && i < k; i++)
		lv[nb++] = v[k <= ATP_BANDS ? i : (int)((double)i * (k - 1) /
							(ATP_BANDS - 1))];
	for (i = 0; i < t->nnodes; i++) {
		double g = 0;

		if (!a->cnt[i] && !(a->s1[i] > 0))
			continue;
		for (k = 0; k < nb; k++)
			if (lv[k] <= a->f[i] * (1 + 1e-9))
				g = lv[k];
		a->f[i] = g;
	}
	free(v);
	return nb;
}

static int aggs(const struct atp *a, int s, double hi)
{
	return s >= 0 && a->f[s] >= hi * (1 - 1e-9) && a->f[s] > 0;
}

static int build(struct atp *a, double r, struct pp_plan *p)
{
	struct topo *t = a->t;
	double lv[ATP_BANDS + 1], lo = 0;
	int nb, b, sh, i, ret = 0;

	fractions(a, r);
	nb = bands(a, lv);
	if (nb < 0)
		return nb;
	for (b = 0; b < nb && !ret; b++) {
		double hi = lv[b];

		if (hi <= lo * (1 + 1e-12))
			continue;
		for (sh = 0; sh < a->ns && !ret; sh++) {
			int root = a->root[sh], ps = a->ptor[sh], up;
			int psum = aggs(a, ps, hi), into_ps = 0;
			struct pp_class *c = pp_class_new(p, PP_TREE,
							  a->share[sh] * (hi - lo));

			if (!c)
				return -ENOMEM;
			c->root = root;
			up = psum ? ps : root;
			for (i = 0; i < t->nhosts && !ret; i++) {
				int w = t->hosts[i], q = a->tor[i];

				if (w == root)
					continue;	/* summed at home */
				if (aggs(a, q, hi) && q != up) {
					int arc = t->adj[t->off[w]];

					ret = a->fast ? pp_xfer_arcs(c, 0, w, q, 1,
								     &arc, 1) :
						pp_red(t, c, w, q, 1);
				} else {
					ret = red_via_tor(a, c, w, up);
					into_ps += up == ps;
				}
			}
			for (i = 0; i < t->nnodes && !ret; i++)
				if (a->cnt[i] && i != up && aggs(a, i, hi) &&
				    !(a->cnt[i] == 1 && t->node[root].tor == i &&
				      t->node[root].kind == TOPO_HOST)) {
					int arcs[PP_MAX_HOPS], n;

					if (a->fast) {
						n = rack_route(a, i, up, arcs, 0);
						ret = n < 0 ? n : pp_xfer_arcs(c, 0, i,
							up, 1, arcs, n);
					} else {
						ret = pp_red(t, c, i, up, 1);
					}
					into_ps += up == ps;
				}
			if (!ret && psum && into_ps)
				ret = pp_red(t, c, ps, root, 1);
			if (!ret)
				ret = bc_tree(a, c, sh);
		}
		lo = hi;
	}
	return ret;
}

static void add_route(double *arc, const int *arcs, int n, double v)
{
	int i;

	for (i = 0; i < n; i++)
		arc[arcs[i]] += v;
}

/*
 * What the simulator gives plan(r), without building it: the same
 * transfers, counted per rack (a rack's workers all take their one link
 * to the ToR, then the ToR's route), so O(classes x racks) instead of
 * O(classes x workers). Rate, or 0 if a plan cannot be had; -errno.
 */
static double fast_rate(struct atp *a, double r)
{
	struct topo *t = a->t;
	double lv[ATP_BANDS + 1], lo = 0, x = INFINITY;
	int na = 2 * t->nlinks, nb, b, sh, i, arcs[PP_MAX_HOPS];

	fractions(a, r);
	nb = bands(a, lv);
	if (nb < 0)
		return nb;
	memset(a->arc, 0, na * sizeof(double));
	memset(a->agg, 0, t->nnodes * sizeof(double));
	for (b = 0; b < nb; b++) {
		double hi = lv[b];

		if (hi <= lo * (1 + 1e-12))
			continue;
		for (sh = 0; sh < a->ns; sh++) {
			int root = a->root[sh], ps = a->ptor[sh], up, n;
			int psum = aggs(a, ps, hi), into_ps = 0;
			int home = t->node[root].kind == TOPO_HOST ?
				   t->node[root].tor : -1;
			double v = a->share[sh] * (hi - lo);

			up = psum ? ps : root;
			for (i = 0; i < a->nr; i++) {
				int q = a->rk[i], c = a->wc[q] - (q == home);

				if (c == 0)
					continue;
				/* a->cnt: workers of an INA ToR only */
				if (a->cnt[q] && aggs(a, q, hi) && q != up) {
					a->agg[q] += v * c;
					n = rack_route(a, q, up, arcs, 0);
					if (n < 0)
						return n;
					add_route(a->arc, arcs, n, v);
					a->agg[up] += v;
				} else {
					n = q == up ? 0 : rack_route(a, q, up, arcs, 0);
					if (n < 0)
						return n;
					add_route(a->arc, arcs, n, v * c);
					a->agg[up] += v * c;
				}
				into_ps += up == ps;
			}
			if (psum && into_ps) {
				n = topo_route(t, ps, root, arcs, PP_MAX_HOPS);
				if (n < 0)
					return n;
				add_route(a->arc, arcs, n, v);
			}
			if (!a->bc[sh]) {	/* fill the cache */
				struct pp_plan q;
				struct pp_class *c;
				int ret;

				pp_init(&q, "atp");
				c = pp_class_new(&q, PP_TREE, 1);
				if (c)
					c->root = root;
				ret = c ? bc_tree(a, c, sh) : -ENOMEM;
				pp_free(&q);
				if (ret)
					return ret;
			}
			for (i = 0; i < a->nbc[sh]; i++)
				a->arc[a->bc[sh][i]] += v;
		}
		lo = hi;
	}
	/* every worker's one link carries its gradient to every class but
	 * its own shards */
	for (i = 0; i < t->nhosts; i++) {
		int w = t->hosts[i];

		a->arc[t->adj[t->off[w]]] += 1 - a->rshare[w];
	}
	for (i = 0; i < na; i++)
		if (a->arc[i] > 0)
			x = fmin(x, topo_arc_gbps(t, i) / a->arc[i]);
	for (i = 0; i < t->nnodes; i++)
		if (a->agg[i] > 0 && t->node[i].kind == TOPO_SWITCH) {
			if (!t->node[i].ina)
				return 0;
			x = fmin(x, t->node[i].cap / a->agg[i]);
		}
	return isfinite(x) ? x : 0;
}

/* plan(r)'s simulated rate: counted per rack where it can be, else built
 * and simulated. */
static double rate_of(struct atp *a, double r, int *err)
{
	struct pp_plan q;
	double x;

	*err = 0;
	if (a->fast) {
		x = fast_rate(a, r);
		if (x < 0)
			*err = (int)x;
		return x < 0 ? 0 : x;
	}
	pp_init(&q, "atp");
	*err = build(a, r, &q);
	x = *err ? 0 : pp_sim_rate(a->t, &q);
	pp_free(&q);
	return x;
}

/* The largest rate the simulator confirms for this sharding; 0 if none. */
static double best_rate(struct atp *a, double top, int *err)
{
	double lo, hi = top, x;
	int it, steps = a->fast ? 30 : 7;

	x = rate_of(a, top, err);
	if (*err || !(x > 0))
		return 0;
	if (x >= top * (1 - 1e-12))
		return top;
	/* f only grows as r falls, so the plan at x should carry x; the
	 * quantized bands may not quite: walk down until it does */
	for (it = 0; it < 8; it++) {
		double y = rate_of(a, x, err);

		if (*err)
			return 0;
		if (y >= x * (1 - 1e-12))
			break;
		x = y;
	}
	if (it == 8)
		return 0;
	lo = x;
	/* geometric halving: 7 steps (building each plan) leave hi / lo <=
	 * (top / x)^(1/128), within 1.3% when the first plan got a fifth of
	 * the host links; 30 (counting per rack) leave nothing to see */
	for (it = 0; it < steps; it++) {
		double mid = sqrt(lo * hi);

		x = rate_of(a, mid, err);
		if (*err)
			return 0;
		if (x >= mid * (1 - 1e-12))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void shard_ps(struct atp *a)
{
	struct topo *t = a->t;
	int i;

	memset(a->s1, 0, t->nnodes * sizeof(double));
	memset(a->home, 0, t->nnodes * sizeof(double));
	for (i = 0; i < a->ns; i++) {
		int s = t->node[a->root[i]].tor;

		a->ptor[i] = ina_switch(t, s) ? s : -1;
		if (a->ptor[i] >= 0)
			a->s1[s] += a->share[i];
		if (a->ptor[i] >= 0 && t->node[a->root[i]].kind == TOPO_HOST)
			a->home[s] += a->share[i];
	}
	memset(a->rshare, 0, t->nnodes * sizeof(double));
	for (i = 0; i < a->ns; i++)
		a->rshare[a->root[i]] += a->share[i];
}

/* Co-located shards: per worker, or per rack group (header). Number of
 * shards; *grouped set when racks had to share a class. */
static int colocated(struct atp *a, int *grouped)
{
	struct topo *t = a->t;
	int n = t->nhosts, *ord = malloc((n + 1) * sizeof(int));
	int i, ns = 0, nr = 0, per, j;

	if (!ord)
		return -ENOMEM;
	*grouped = 0;
	if (n <= 256) {
		for (i = 0; i < n; i++) {
			a->root[i] = t->hosts[i];
			a->share[i] = 1.0 / n;
		}
		free(ord);
		return n;
	}
	n = pp_rack_order(t, ord);
	for (i = 0; i < n; i++)
		if (i == 0 || t->node[ord[i]].tor < 0 ||
		    t->node[ord[i]].tor != t->node[ord[i - 1]].tor)
			nr++;
	per = (int)ceil((double)nr * n * ATP_BANDS /
			(a->fast ? ATP_XFERS_FAST : ATP_XFERS));
	per = per < 1 ? 1 : per;
	*grouped = per > 1;
	for (i = 0, j = -1; i < n; i++) {
		if (i == 0 || t->node[ord[i]].tor < 0 ||
		    t->node[ord[i]].tor != t->node[ord[i - 1]].tor) {
			if (++j % per == 0) {
				a->root[ns] = ord[i];
				a->share[ns++] = 0;
			}
		}
		a->share[ns - 1] += 1.0 / n;
	}
	free(ord);
	return ns;
}

int plan_atp(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
	     char *err, size_t errlen)
{
	struct atp a = { .t = t };
	double top = 0, xc = 0, xd = 0;
	int i, ret = -ENOMEM, nsc, grouped = 0, e = 0, best;
	int m = (t->nhosts > t->nps ? t->nhosts : t->nps) + 1;

	a.root = malloc(m * sizeof(int));
	a.ptor = malloc(m * sizeof(int));
	a.share = malloc(m * sizeof(double));
	a.tor = malloc((t->nhosts + 1) * sizeof(int));
	a.cnt = calloc(t->nnodes + 1, sizeof(int));
	a.s1 = calloc(t->nnodes + 1, sizeof(double));
	a.home = calloc(t->nnodes + 1, sizeof(double));
	a.f = malloc((t->nnodes + 1) * sizeof(double));
	a.rlen = malloc((t->nnodes + 1) * sizeof(int));
	a.rhop = malloc(((size_t)t->nnodes + 1) * PP_MAX_HOPS * sizeof(int));
	a.bc = calloc(m, sizeof(int *));
	a.nbc = calloc(m, sizeof(int));
	a.rto = -1;
	a.nsmax = m;
	a.rk = malloc((t->nnodes + 1) * sizeof(int));
	a.rix = malloc((t->nnodes + 1) * sizeof(int));
	a.rows = calloc(t->nnodes + 1, sizeof(int *));
	a.arc = malloc((2 * t->nlinks + 1) * sizeof(double));
	a.agg = malloc((t->nnodes + 1) * sizeof(double));
	a.rshare = calloc(t->nnodes + 1, sizeof(double));
	a.wc = calloc(t->nnodes + 1, sizeof(int));
	if (!a.root || !a.ptor || !a.share || !a.tor || !a.cnt || !a.s1 ||
	    !a.home || !a.f || !a.rlen || !a.rhop || !a.bc || !a.nbc ||
	    !a.rk || !a.rix || !a.rows || !a.arc || !a.agg || !a.rshare ||
	    !a.wc)
		goto out;
	for (i = 0; i < t->nhosts; i++) {
		int w = t->hosts[i], s = t->node[w].tor, k;
		double bw = 0;

		if (s < 0) {
			/* results come back through switches (PS semantics:
			 * workers do not relay), so a mesh of workers has no
			 * ATP */
			snprintf(err, errlen, "%s: worker %s hangs off no "
				 "switch", p->scheme, t->node[w].name);
			ret = -EINVAL;
			goto out;
		}
		a.tor[i] = ina_switch(t, s) ? s : -1;
		if (a.tor[i] >= 0)
			a.cnt[s]++;
		else
			a.nraw++;
		if (!a.wc[s]++) {
			a.rix[s] = a.nr;
			a.rk[a.nr++] = s;
		}
		for (k = t->off[w]; k < t->off[w + 1]; k++)
			bw += topo_arc_gbps(t, t->adj[k]);
		top = fmax(top, bw);
	}
	/* counting per rack needs every worker and server on one link */
	a.fast = 1;
	for (i = 0; i < t->nhosts; i++)
		a.fast &= t->off[t->hosts[i] + 1] - t->off[t->hosts[i]] == 1;
	for (i = 0; i < t->nps; i++)
		a.fast &= t->off[t->ps[i] + 1] - t->off[t->ps[i]] == 1 &&
			  t->node[t->ps[i]].tor >= 0;
	/* co-located */
	nsc = colocated(&a, &grouped);
	if (nsc < 0) {
		ret = nsc;
		goto out;
	}
	a.ns = nsc;
	shard_ps(&a);
	xc = t->nhosts > 1 ? best_rate(&a, top, &e) : 0;
	if (e) {
		ret = e;
		goto out;
	}
	/* dedicated servers */
	bc_forget(&a);
	if (t->nps) {
		for (i = 0; i < t->nps; i++) {
			a.root[i] = t->ps[i];
			a.share[i] = 1.0 / t->nps;
		}
		a.ns = t->nps;
		shard_ps(&a);
		xd = best_rate(&a, top, &e);
		if (e) {
			ret = e;
			goto out;
		}
	}
	best = xd > xc;		/* 1: dedicated */
	if (!(fmax(xc, xd) > 0)) {
		snprintf(err, errlen, "%s: no rate is feasible", p->scheme);
		ret = -EINVAL;
		goto out;
	}
	if (!best) {
		bc_forget(&a);
		a.ns = colocated(&a, &grouped);
		shard_ps(&a);
	}
	ret = build(&a, fmax(xc, xd), p);
	p->rate_gbps = fmax(xc, xd);
	snprintf(p->note, sizeof(p->note), "%s wins: co-located %d shard%s "
		 "%.4g Gbps%s, %d dedicated %.4g Gbps; %d classes",
		 best ? "dedicated" : "co-located", nsc, nsc > 1 ? "s" : "", xc,
		 grouped ? " (racks grouped)" : "", t->nps, xd, p->ncls);
out:
	if (a.rows)
		for (i = 0; i < t->nnodes; i++)
			free(a.rows[i]);
	free(a.rows);
	free(a.rk);
	free(a.rix);
	free(a.arc);
	free(a.agg);
	free(a.rshare);
	free(a.wc);
	if (a.bc)
		bc_forget(&a);
	free(a.bc);
	free(a.nbc);
	free(a.rlen);
	free(a.rhop);
	free(a.root);
	free(a.ptor);
	free(a.share);
	free(a.tor);
	free(a.cnt);
	free(a.s1);
	free(a.home);
	free(a.f);
	return ret;
}
