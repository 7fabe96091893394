// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Topology-adaptive forest packing: spanning trees of the topology, each
 * rooted at a different worker, each reducing toward its root and
 * broadcasting back a share of the tensor proportional to its rate, all
 * at once (reduce and broadcast overlapped: a tree edge carries one stream
 * each way). The rates come from fractional spanning-tree packing, solved
 * with the multiplicative-weights method of Garg and Koenemann: the
 * cheapest spanning tree under lengths l_e (Kruskal) gets its bottleneck
 * capacity, the lengths of its edges grow by (1 + eps * c / c_e), until
 * sum c_e l_e reaches 1; scaled, the trees pack at least (1 - eps)^2 of the
 * largest fractional packing tau. By Nash-Williams and Tutte, tau is at
 * least half the smallest cut between workers on a mesh of workers, and
 * no allreduce beats that cut: the simulator prints rate / cut bound.
 *
 * On graphs with switches the trees are Steiner trees (switch leaves
 * pruned); a switch that cannot aggregate only forwards, so its upward
 * edge carries one stream per contributor below it, which the simulator
 * counts; an INA switch in a tree aggregates.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/plan/pplan.h"

struct ftree {
	int ne;
	int *e;			/* link ids, sorted */
	double f;
};

static const double *g_len;

static int by_len(const void *a, const void *b)
{
	double x = g_len[*(const int *)a], y = g_len[*(const int *)b];

	return x < y ? -1 : x > y ? 1 : *(const int *)a - *(const int *)b;
}

static int by_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int uf_find(int *uf, int x)
{
	while (uf[x] != x)
		x = uf[x] = uf[uf[x]];
	return x;
}

/* Kruskal under len, then prune leaves that are not workers. Returns the
 * number of tree links written to out. */
static int min_tree(const struct topo *t, const double *len, int *ord,
		    int *uf, int *deg, char *in, int *out, double *alpha)
{
	int i, n = 0, changed;

	g_len = len;
	for (i = 0; i < t->nlinks; i++)
		ord[i] = i;
	qsort(ord, t->nlinks, sizeof(int), by_len);
	for (i = 0; i < t->nnodes; i++)
		uf[i] = i, deg[i] = 0;
	memset(in, 0, t->nlinks);
	for (i = 0; i < t->nlinks; i++) {
		int l = ord[i], a = uf_find(uf, t->link[l].a),
		    b = uf_find(uf, t->link[l].b);

		if (a == b)
			continue;
		uf[a] = b;
		in[l] = 1;
		deg[t->link[l].a]++;
		deg[t->link[l].b]++;
	}
	do {
		changed = 0;
		for (i = 0; i < t->nlinks; i++) {
			int a = t->link[i].a, b = t->link[i].b;

			if (!in[i])
				continue;
			if ((deg[a] == 1 && t->node[a].kind != TOPO_HOST) ||
			    (deg[b] == 1 && t->node[b].kind != TOPO_HOST)) {
				in[i] = 0;
				deg[a]--;
				deg[b]--;
				changed = 1;
			}
		}
	} while (changed);
	if (alpha)
		*alpha = 0;
	for (i = 0; i < t->nlinks; i++)
		if (in[i]) {
			out[n++] = i;
			if (alpha)
				*alpha += len[i];
		}
	return n;
}

/* One class from a tree: reduce to root, broadcast mirrored. The tree's
 * adjacency is built once (hd/nx over its ne links), so the walk costs
 * O(nodes + ne), not O(nodes * ne): with 10,000 workers the quadratic walk
 * was 94% of the planner's time. */
static int tree_class(struct topo *t, const struct ftree *tr, int root,
		      double share, struct pp_plan *p, int *par, int *q,
		      int *hd, int *nx)
{
	struct pp_class *c = pp_class_new(p, PP_TREE, share);
	int i, qh = 0, qt = 0, arcs[PP_MAX_HOPS];

	if (!c)
		return -ENOMEM;
	c->root = root;
	/* par[v]: the arc from v to its parent; hd[v]: v's first tree
	 * half-edge (2k or 2k+1: link e[k] seen from its a or b end) */
	for (i = 0; i < t->nnodes; i++) {
		par[i] = -2;
		hd[i] = -1;
	}
	for (i = 0; i < tr->ne; i++) {
		const struct topo_link *l = &t->link[tr->e[i]];

		nx[2 * i] = hd[l->a];
		hd[l->a] = 2 * i;
		nx[2 * i + 1] = hd[l->b];
		hd[l->b] = 2 * i + 1;
	}
	par[root] = -1;
	q[qt++] = root;
	while (qh < qt) {
		int u = q[qh++], h;

		for (h = hd[u]; h >= 0; h = nx[h]) {
			int e = tr->e[h >> 1], from_a = !(h & 1);
			const struct topo_link *l = &t->link[e];
			int v = from_a ? l->b : l->a;

			if (par[v] != -2)
				continue;
			/* the arc v -> u: b->a (2e+1) when u is the a end */
			par[v] = 2 * e + (from_a ? 1 : 0);
			q[qt++] = v;
		}
	}
	for (i = 0; i < qt; i++) {
		int v = q[i], u = v, n = 0, ret;

		if (v == root || !(t->node[v].kind == TOPO_HOST ||
				   t->node[v].ina))
			continue;
		do {
			if (n == PP_MAX_HOPS)
				return -E2BIG;
			arcs[n++] = par[u];
			u = topo_arc_to(t, par[u]);
		} while (u != root && t->node[u].kind != TOPO_HOST &&
			 !t->node[u].ina);
		ret = pp_xfer_arcs(c, 0, v, u, 1, arcs, n);
		if (ret)
			return ret;
	}
	return pp_mirror_bc(c);
}

static void free_trees(struct ftree *tr, int n)
{
	int k;

	for (k = 0; k < n; k++) {
		free(tr[k].e);
		tr[k].e = NULL;
		tr[k].ne = 0;
		tr[k].f = 0;
	}
}

static const struct ftree *g_tr;

static int by_weight(const void *a, const void *b)
{
	double x = g_tr[*(const int *)a].f, y = g_tr[*(const int *)b].f;

	return x > y ? -1 : x < y ? 1 : *(const int *)a - *(const int *)b;
}

/* GK's trees, heaviest first, each given what its thinnest link has
 * left; into gr[]. Number of trees kept or -ENOMEM. */
static int refill(const struct topo *t, const double *cap,
		  const struct ftree *tr, int nt, struct ftree *gr, int maxt,
		  double *res)
{
	int *ix = malloc((nt + 1) * sizeof(int)), i, k, n = 0;
	double top = 0;

	if (!ix)
		return -ENOMEM;
	for (i = 0; i < t->nlinks; i++) {
		res[i] = cap[i];
		top = fmax(top, cap[i]);
	}
	for (k = 0; k < nt; k++)
		ix[k] = k;
	g_tr = tr;
	qsort(ix, nt, sizeof(int), by_weight);
	for (k = 0; k < nt && n < maxt; k++) {
		const struct ftree *a = &tr[ix[k]];
		double b = INFINITY;

		for (i = 0; i < a->ne; i++)
			b = fmin(b, res[a->e[i]]);
		if (!(b > 1e-9 * top))
			continue;
		for (i = 0; i < a->ne; i++)
			res[a->e[i]] -= b;
		gr[n].e = malloc((a->ne + 1) * sizeof(int));
		if (!gr[n].e) {
			free(ix);
			return -ENOMEM;
		}
		memcpy(gr[n].e, a->e, a->ne * sizeof(int));
		gr[n].ne = a->ne;
		gr[n].f = b;
		n++;
	}
	free(ix);
	return n;
}

/*
 * Carathéodory reduction: while the link-incidence vectors of the trees
 * are linearly dependent, a null vector lambda (sum of lambda_T times T's
 * vector = 0) lets weight move between trees without changing any link's
 * load; moving it in the direction that does not lower the total weight,
 * until a tree's weight reaches 0, drops that tree. What is left has
 * independent vectors, so at most one tree per link, with every load as
 * before and at least the same total: the same rate, far fewer classes.
 * Trees are taken in chunks of m next to the independent set kept so
 * far; each round is one Gaussian elimination of an m x (<= 2m) matrix.
 * Returns the number of trees left in tr[] (compacted), or -ENOMEM.
 */
static int reduce_forest(const struct topo *t, struct ftree *tr, int nt)
{
	int m = t->nlinks, kept = 0, next = 0, i, j, k;
	int *col = malloc(2 * (m + 1) * sizeof(int));
	int *piv = malloc((m + 1) * sizeof(int));
	char *isb = malloc(2 * (m + 1));
	double *a = malloc((size_t)m * 2 * (m + 1) * sizeof(double));
	double ymax = 0;

	if (!col || !piv || !a || !isb) {
		free(col);
		free(piv);
		free(a);
		free(isb);
		return -ENOMEM;
	}
	for (k = 0; k < nt; k++)
		ymax = fmax(ymax, tr[k].f);
	/* col[0..kept) are independent trees; append a chunk and reduce */
	while (next < nt || kept < 0) {
		int nc, r, w = 2 * (m + 1), progress;

		nc = kept;
		while (next < nt && nc < kept + m + 1)
			col[nc++] = next++;
		do {
			/* the incidence matrix, row per link */
			for (i = 0; i < m; i++)
				for (j = 0; j < nc; j++)
					a[(size_t)i * w + j] = 0;
			for (j = 0; j < nc; j++)
				for (k = 0; k < tr[col[j]].ne; k++)
					a[(size_t)tr[col[j]].e[k] * w + j] = 1;
			/* reduced row echelon form, partial pivoting */
			r = 0;
			for (j = 0; j < nc && r < m; j++) {
				int best = r;

				for (i = r + 1; i < m; i++)
					if (fabs(a[(size_t)i * w + j]) >
					    fabs(a[(size_t)best * w + j]))
						best = i;
				if (fabs(a[(size_t)best * w + j]) < 1e-9) {
					continue;
				}
				for (k = 0; k < nc; k++) {
					double tmp = a[(size_t)r * w + k];

					a[(size_t)r * w + k] = a[(size_t)best * w + k];
					a[(size_t)best * w + k] = tmp;
				}
				for (k = nc - 1; k >= j; k--)
					a[(size_t)r * w + k] /= a[(size_t)r * w + j];
				for (i = 0; i < m; i++) {
					double f = a[(size_t)i * w + j];

					if (i == r || f == 0)
						continue;
					for (k = j; k < nc; k++)
						a[(size_t)i * w + k] -=
							f * a[(size_t)r * w + k];
				}
				piv[r++] = j;
			}
			/* a null vector per free column f: e_f minus the
			 * pivot columns' coefficients. Moving weight along
			 * it zeroes f (f dropped) or a pivot column, which
			 * f then replaces in the basis by one pivot step; so
			 * one pass leaves only basic, independent columns. */
			for (j = 0; j < nc; j++)
				isb[j] = 0;
			for (k = 0; k < r; k++)
				isb[piv[k]] = 1;
			for (j = 0; j < nc; j++) {
				double sum = 1, theta, sgn, l;
				int out = -1;

				if (isb[j] || tr[col[j]].f <= 0)
					continue;
				for (k = 0; k < r; k++)
					sum -= a[(size_t)k * w + j];
				sgn = sum >= 0 ? 1 : -1;
				theta = sgn < 0 ? tr[col[j]].f : INFINITY;
				for (k = 0; k < r; k++) {
					l = -a[(size_t)k * w + j] * sgn;
					if (l < -1e-9 &&
					    tr[col[piv[k]]].f / -l < theta) {
						theta = tr[col[piv[k]]].f / -l;
						out = k;
					}
				}
				if (!isfinite(theta))
					continue;	/* cannot happen: A >= 0 */
				tr[col[j]].f += sgn * theta;
				for (k = 0; k < r; k++)
					tr[col[piv[k]]].f -= sgn * theta *
							     a[(size_t)k * w + j];
				if (out < 0) {
					tr[col[j]].f = 0;
					continue;
				}
				/* column j enters the basis in row out */
				tr[col[piv[out]]].f = 0;
				isb[piv[out]] = 0;
				{
					double d = a[(size_t)out * w + j];

					for (k = 0; k < nc; k++)
						a[(size_t)out * w + k] /= d;
				}
				for (i = 0; i < m; i++) {
					double f = a[(size_t)i * w + j];

					if (i == out || f == 0)
						continue;
					for (k = 0; k < nc; k++)
						a[(size_t)i * w + k] -=
							f * a[(size_t)out * w + k];
				}
				piv[out] = j;
				isb[j] = 1;
			}
			/* drop trees whose weight reached 0 */
			for (j = 0, k = 0; j < nc; j++)
				if (tr[col[j]].f > 1e-12 * ymax)
					col[k++] = col[j];
				else
					tr[col[j]].f = 0;
			progress = k < nc;
			nc = k;
		} while (nc > r && progress);
		kept = nc;
		if (next >= nt)
			break;
	}
	/* compact: kept trees first */
	for (j = 0; j < kept; j++) {
		struct ftree tmp = tr[j];

		tr[j] = tr[col[j]];
		tr[col[j]] = tmp;
		for (k = j + 1; k < kept; k++)
			if (col[k] == j)
				col[k] = col[j];
	}
	free(col);
	free(piv);
	free(a);
	free(isb);
	return kept;
}

static int build_forest(struct topo *t, const struct ftree *tr, int nt,
			struct pp_plan *p, int *par, int *q)
{
	int *hd = malloc((t->nnodes + 1) * sizeof(int));
	int *nx = malloc((2 * t->nlinks + 1) * sizeof(int));
	double sum = 0;
	int k, ret = 0;

	if (!hd || !nx) {
		free(hd);
		free(nx);
		return -ENOMEM;
	}
	for (k = 0; k < nt; k++)
		sum += tr[k].f;
	for (k = 0; k < nt && !ret; k++)
		ret = tree_class(t, &tr[k], t->hosts[k % t->nhosts],
				 tr[k].f / sum, p, par, q, hd, nx);
	free(hd);
	free(nx);
	return ret;
}

/* Greedy packing into gr[]: number of trees, 0 if none, -ENOMEM. */
static int greedy(const struct topo *t, const double *cap, struct ftree *gr,
		  int maxt, double *res, int *ord, int *uf, int *deg, char *in,
		  int *buf)
{
	double top = 0;
	int i, n = 0;

	for (i = 0; i < t->nlinks; i++) {
		res[i] = cap[i];
		top = fmax(top, cap[i]);
	}
	while (n < maxt) {
		double b = INFINITY;
		int ne, w, root;

		/* widest tree: Kruskal on -residual; a spent link is left
		 * out by an infinite length */
		for (i = 0; i < t->nlinks; i++)
			res[i] = res[i] > 1e-9 * top ? -res[i] : INFINITY;
		ne = min_tree(t, res, ord, uf, deg, in, buf, NULL);
		for (i = 0; i < t->nlinks; i++)
			res[i] = isinf(res[i]) ? 0 : -res[i];
		/* every worker still joined to the first? */
		root = uf_find(uf, t->hosts[0]);
		for (w = 1; w < t->nhosts; w++)
			if (uf_find(uf, t->hosts[w]) != root)
				break;
		for (i = 0; i < ne; i++)
			if (res[buf[i]] <= 0)
				w = -1;
		if (w != t->nhosts || ne == 0)
			break;
		for (i = 0; i < ne; i++)
			b = fmin(b, res[buf[i]]);
		for (i = 0; i < ne; i++)
			res[buf[i]] -= b;
		gr[n].e = malloc(ne * sizeof(int));
		if (!gr[n].e)
			return -ENOMEM;
		memcpy(gr[n].e, buf, ne * sizeof(int));
		gr[n].ne = ne;
		gr[n].f = b;
		n++;
	}
	return n;
}

/*
 * The round budget. Every GK round is one Kruskal (O(m log m)) and every
 * tree becomes a class of n reduce and n broadcast transfers, so on big
 * graphs the trees, not the rounds, cost: at most ~3 million transfers
 * (300 trees at 10,000 workers, 30 at 100,000). Small graphs run until
 * GK's own end or the certificate below.
 */
static int round_budget(const struct topo *t)
{
	int b = 3000000 / (2 * t->nhosts);

	if (t->nlinks <= 2000)
		return 200000;
	return b < 20 ? 20 : b > 300 ? 300 : b;
}

int plan_forest(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
		char *err, size_t errlen)
{
	double eps = o && o->eps > 0 ? o->eps : 0.1, delta, total = 0, full;
	double worst = 0, dual = INFINITY, primal = 0;
	int ng, won = -1, nwon = 0, pass, nfull, nred, mesh = 1, proved = 0;
	int maxt = o && o->max_trees > 0 ? o->max_trees : 4096;
	int m = t->nlinks, nt = 0, i, k, it, ret = -ENOMEM, capped = 0;
	int maxit = round_budget(t);
	double *len = malloc(m * sizeof(double)), *cap = malloc(m * sizeof(double));
	double *load = calloc(m + 1, sizeof(double));
	int *ord = malloc(m * sizeof(int)), *buf = malloc(m * sizeof(int));
	int *uf = malloc(t->nnodes * sizeof(int)), *deg = malloc(t->nnodes * sizeof(int));
	int *par = malloc(t->nnodes * sizeof(int)), *q = malloc(t->nnodes * sizeof(int));
	char *in = malloc(m + 1);
	struct ftree *tr = calloc(maxt, sizeof(*tr));
	struct ftree *gr = calloc(maxt, sizeof(*gr));

	if (!len || !cap || !load || !ord || !buf || !uf || !deg || !par || !q ||
	    !in || !tr || !gr)
		goto out;
	if (t->nhosts < 2 || m == 0) {	/* nothing to move */
		struct pp_class *c = pp_class_new(p, PP_TREE, 1);

		ret = c ? 0 : -ENOMEM;
		if (c)
			c->root = t->hosts[0];
		snprintf(p->note, sizeof(p->note), "one worker");
		goto out;
	}
	/* on a mesh of workers Kruskal's tree is the cheapest spanning tree,
	 * which makes the dual bound below valid; a switch makes it a
	 * Steiner tree, which Kruskal and pruning only approximate */
	for (i = 0; i < t->nnodes; i++)
		if (t->node[i].kind != TOPO_HOST)
			mesh = 0;
	delta = (1 + eps) * pow((1 + eps) * m, -1 / eps);
	for (i = 0; i < m; i++) {
		cap[i] = fmin(t->link[i].gbps[0], t->link[i].gbps[1]);
		len[i] = delta / cap[i];
	}
	for (it = 0; it < maxit; it++) {
		double d = 0, cmin = INFINITY, alpha;
		int ne;

		for (i = 0; i < m; i++)
			d += cap[i] * len[i];
		if (d >= 1)
			break;
		ne = min_tree(t, len, ord, uf, deg, in, buf, &alpha);
		/*
		 * A certificate instead of GK's worst-case round count. LP
		 * duality: for any lengths l, every packing y has
		 * sum_T y_T * alpha(l) <= sum_T y_T l(T) <= sum_e c_e l_e = D(l),
		 * so D(l) / alpha(l) bounds the best packing tau from above.
		 * The trees found so far, scaled down by their most loaded
		 * link, are a feasible packing (primal). Once primal is within
		 * eps of the smallest dual seen, the packing is proved within
		 * eps of tau and more rounds cannot gain more than that.
		 */
		if (mesh && alpha > 0)
			dual = fmin(dual, d / alpha);
		if (mesh && primal >= (1 - eps) * dual) {
			proved = 1;
			break;
		}
		for (i = 0; i < ne; i++)
			cmin = fmin(cmin, cap[buf[i]]);
		qsort(buf, ne, sizeof(int), by_int);
		for (k = 0; k < nt; k++)
			if (tr[k].ne == ne && !memcmp(tr[k].e, buf, ne * sizeof(int)))
				break;
		if (k == nt) {
			if (nt == maxt) {
				capped = 1;
				break;
			}
			tr[nt].e = malloc((ne + 1) * sizeof(int));
			if (!tr[nt].e)
				goto out;
			memcpy(tr[nt].e, buf, ne * sizeof(int));
			tr[nt].ne = ne;
			nt++;
		}
		tr[k].f += cmin;
		total += cmin;
		for (i = 0; i < ne; i++) {
			len[buf[i]] *= 1 + eps * cmin / cap[buf[i]];
			load[buf[i]] += cmin;
			worst = fmax(worst, load[buf[i]] / cap[buf[i]]);
		}
		primal = total / worst;
	}
	if (it == maxit && !proved)
		capped = 1;
	/* GK spreads its weight over many trees, one class each. Two sparse
	 * packings have at most one tree per link: greedy (saturate the
	 * widest spanning tree of what is left) and GK's trees refilled in
	 * the order of their GK weight, each taking what its thinnest link
	 * has left. The sparsest within 1% of GK's simulated rate wins. */
	nfull = nt;
	ret = build_forest(t, tr, nt, p, par, q);
	if (ret)
		goto fail;
	full = pp_sim_rate(t, p);
	/* the reduction's elimination is O(m nt^2): on big graphs with their
	 * few hundred trees the refill below does the same job */
	nred = (double)m * nt * nt <= 2e9 ? reduce_forest(t, tr, nt) : 0;
	if (nred > 0 && nred < nt) {
		struct pp_plan g2;

		pp_init(&g2, p->scheme);
		ret = build_forest(t, tr, nred, &g2, par, q);
		if (!ret && pp_sim_rate(t, &g2) >= full * (1 - 1e-9)) {
			pp_free(p);
			p->ncls = g2.ncls;
			p->cls = g2.cls;
			nt = nred;
		} else {
			pp_free(&g2);
		}
		ret = 0;
	}
	for (pass = 0; pass < 2; pass++) {
		struct pp_plan g2;

		ng = pass ? refill(t, cap, tr, nt, gr, maxt, len) :
			    greedy(t, cap, gr, maxt, len, ord, uf, deg, in, buf);
		if (ng <= 0 || ng >= (won >= 0 ? nwon : p->ncls)) {
			free_trees(gr, maxt);
			continue;
		}
		pp_init(&g2, p->scheme);
		ret = build_forest(t, gr, ng, &g2, par, q);
		if (!ret && pp_sim_rate(t, &g2) >= 0.99 * full) {
			pp_free(p);
			p->ncls = g2.ncls;
			p->cls = g2.cls;
			won = pass;
			nwon = ng;
		} else {
			pp_free(&g2);
		}
		free_trees(gr, maxt);
		ret = 0;
	}
	p->rate_gbps = capped ? 0 : primal;
	if (mesh && isfinite(dual))
		p->bound_gbps = dual;
	snprintf(p->note, sizeof(p->note), "%s: %d trees; GK packing %.4g Gbps "
		 "(%d trees, %d rounds, eps %.2g%s)", won == 0 ? "greedy" :
		 won == 1 ? "GK refilled" : nt < nfull ? "GK reduced" : "GK",
		 won >= 0 ? nwon : nt, primal, nfull, it, eps,
		 proved ? ", proved within eps" : capped ?
		 ", stopped early: no guarantee" : "");
	goto out;
fail:
	snprintf(err, errlen, "%s: cannot build the trees", p->scheme);
out:
	free(len);
	free(cap);
	free(load);
	free(ord);
	free(buf);
	free(uf);
	free(deg);
	free(par);
	free(q);
	free(in);
	if (tr)
		free_trees(tr, maxt);
	if (gr)
		free_trees(gr, maxt);
	free(tr);
	free(gr);
	return ret;
}
