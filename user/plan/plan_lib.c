// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The plan IR: building, checking; the planner table; max-flow; the cut
 * bound. One planner per user/plan/plan_<name>.c. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "user/plan/pplan.h"
#include "user/log.h"
#include "user/plan/spec.h"

const struct pp_planner pp_planners[] = {
	{ "ring", "ring allreduce over all workers in rack order",
	  plan_ring },
	{ "tree", "one binary tree over the workers (reduce up, broadcast "
	  "down)", plan_tree },
	{ "dbtree", "double binary tree: two trees, half the tensor each",
	  plan_dbtree },
	{ "har", "hierarchical: intra-rack reduce-scatter, rings across "
	  "racks, intra-rack all-gather", plan_har },
	{ "ps", "parameter server(s), no INA; routes by max-flow", plan_ps },
	{ "ps-ina", "ATP: nearest INA switch aggregates, its overflow goes on "
	  "to the PS", plan_psina },
	{ "switchml", "SwitchML: one INA switch aggregates every worker",
	  plan_switchml },
	{ "rina", "Rina: INA racks as one ring member, other workers as "
	  "members", plan_rina },
	{ "grid", "GRID: per-worker route and aggregating switch, max-min "
	  "rate", plan_grid },
	{ "forest", "forest packing: trees rooted at different workers, "
	  "shares by rate", plan_forest },
	/* new planners go last: specs name planners by their position */
	{ "atp", "ATP as deployed: worker's and PS's ToR aggregate, PS "
	  "sharded (co-located or dedicated, the stronger)", plan_atp },
	{ "switchml-rack", "SwitchML per rack: every INA ToR sums its rack, "
	  "one switch sums the racks", plan_switchml_rack },
	{ NULL, NULL, NULL },
};

const struct pp_planner *pp_planner_find(const char *name)
{
	const struct pp_planner *p;

	for (p = pp_planners; p->name; p++)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

void pp_init(struct pp_plan *p, const char *scheme)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->scheme, sizeof(p->scheme), "%s", scheme);
}

static void free_xfers(struct pp_xfer *x, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(x[i].hop);
	free(x);
}

void pp_free(struct pp_plan *p)
{
	int i, j;

	for (i = 0; i < p->ncls; i++) {
		struct pp_class *c = &p->cls[i];

		free_xfers(c->red, c->nred);
		free_xfers(c->bc, c->nbc);
		free_xfers(c->ring, c->nring);
		free(c->mem);
		for (j = 0; j < c->nagg; j++)
			free(c->agg[j].contrib);
		free(c->agg);
	}
	free(p->cls);
	p->cls = NULL;
	p->ncls = 0;
}

struct pp_class *pp_class_new(struct pp_plan *p, int kind, double share)
{
	struct pp_class *c = realloc(p->cls, (p->ncls + 1) * sizeof(*c));

	if (!c)
		return NULL;
	p->cls = c;
	c = &p->cls[p->ncls++];
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->share = share;
	c->root = -1;
	return c;
}

static int push_xfer(struct pp_xfer **arr, int *n, int src, int dst,
		     double vol, const int *arcs, int nh)
{
	struct pp_xfer *x;

	/* grow in powers of two: planners add thousands of transfers */
	if ((*n & (*n - 1)) == 0) {
		x = realloc(*arr, (*n ? 2 * *n : 1) * sizeof(*x));
		if (!x)
			return -ENOMEM;
		*arr = x;
	}
	x = &(*arr)[*n];
	x->src = src;
	x->dst = dst;
	x->vol = vol;
	x->nhop = nh;
	x->hop = malloc((nh ? nh : 1) * sizeof(int));
	if (!x->hop)
		return -ENOMEM;
	memcpy(x->hop, arcs, nh * sizeof(int));
	(*n)++;
	return 0;
}

int pp_xfer_arcs(struct pp_class *c, int which, int src, int dst, double vol,
		 const int *arcs, int n)
{
	if (which)
		return push_xfer(&c->bc, &c->nbc, src, dst, vol, arcs, n);
	return push_xfer(&c->red, &c->nred, src, dst, vol, arcs, n);
}

static int routed(struct topo *t, struct pp_class *c, int which, int src,
		  int dst, double vol)
{
	int arcs[PP_MAX_HOPS], n = topo_route(t, src, dst, arcs, PP_MAX_HOPS);

	if (n < 0)
		return n;
	return pp_xfer_arcs(c, which, src, dst, vol, arcs, n);
}

int pp_red(struct topo *t, struct pp_class *c, int src, int dst, double vol)
{
	return routed(t, c, 0, src, dst, vol);
}

int pp_bc(struct topo *t, struct pp_class *c, int src, int dst, double vol)
{
	return routed(t, c, 1, src, dst, vol);
}

int pp_ring(struct topo *t, struct pp_class *c, const int *mem, int n)
{
	int i, arcs[PP_MAX_HOPS];

	c->mem = malloc(n * sizeof(int));
	if (!c->mem)
		return -ENOMEM;
	memcpy(c->mem, mem, n * sizeof(int));
	c->nmem = n;
	for (i = 0; n > 1 && i < n; i++) {
		int nh = topo_route(t, mem[i], mem[(i + 1) % n], arcs,
				    PP_MAX_HOPS), ret;

		if (nh < 0)
			return nh;
		ret = push_xfer(&c->ring, &c->nring, mem[i], mem[(i + 1) % n],
				2.0 * (n - 1) / n, arcs, nh);
		if (ret)
			return ret;
	}
	return 0;
}

int pp_mirror_bc(struct pp_class *c)
{
	int i, j, n = c->nred, ret;
	int arcs[PP_MAX_HOPS];

	for (i = 0; i < n; i++) {
		struct pp_xfer *x = &c->red[i];

		for (j = 0; j < x->nhop; j++)
			arcs[j] = x->hop[x->nhop - 1 - j] ^ 1;
		ret = pp_xfer_arcs(c, 1, x->dst, x->src, x->vol, arcs, x->nhop);
		if (ret)
			return ret;
	}
	return 0;
}

static int check_route(const struct topo *t, const struct pp_xfer *x)
{
	int i, u = x->src;

	for (i = 0; i < x->nhop; i++) {
		if (x->hop[i] < 0 || x->hop[i] >= 2 * t->nlinks ||
		    topo_arc_from(t, x->hop[i]) != u)
			return -EINVAL;
		u = topo_arc_to(t, x->hop[i]);
	}
	return u == x->dst ? 0 : -EINVAL;
}

static struct pp_agg *agg_of(struct pp_class *c, int node, int *idx)
{
	struct pp_agg *a;

	if (idx[node] >= 0)
		return &c->agg[idx[node]];
	a = realloc(c->agg, (c->nagg + 1) * sizeof(*a));
	if (!a)
		return NULL;
	c->agg = a;
	a = &c->agg[c->nagg];
	memset(a, 0, sizeof(*a));
	a->node = node;
	a->parent = -1;
	idx[node] = c->nagg++;
	return a;
}

static int add_contrib(struct pp_agg *a, int node)
{
	int *c = realloc(a->contrib, (a->ncontrib + 1) * sizeof(int));

	if (!c)
		return -ENOMEM;
	a->contrib = c;
	c[a->ncontrib++] = node;
	return 0;
}

int pp_finish(const struct topo *t, struct pp_plan *p, char *err,
	      size_t errlen)
{
	int *idx, *seen, i, j, ret = 0;
	double sum = 0;

	idx = malloc(t->nnodes * sizeof(int));
	seen = malloc(t->nnodes * sizeof(int));
	if (!idx || !seen) {
		ret = rinx_seterr(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < p->ncls && !ret; i++) {
		struct pp_class *c = &p->cls[i];
		struct pp_agg *a;

		sum += c->share;
		if (!(c->share > 0)) {
			ret = rinx_seterr(err, errlen, -EINVAL, "%s: class %d has "
					  "share %g", p->scheme, i, c->share);
			break;
		}
		for (j = 0; j < t->nnodes; j++)
			idx[j] = -1, seen[j] = 0;
		for (j = 0; j < c->nred + c->nbc + c->nring; j++) {
			struct pp_xfer *x = j < c->nred ? &c->red[j] :
				j < c->nred + c->nbc ? &c->bc[j - c->nred] :
				&c->ring[j - c->nred - c->nbc];

			if (check_route(t, x)) {
				ret = rinx_seterr(err, errlen, -EINVAL, "%s: class "
						  "%d: route %s -> %s is broken",
						  p->scheme, i, t->node[x->src].name,
						  t->node[x->dst].name);
				break;
			}
		}
		if (ret)
			break;
		/* who aggregates whom */
		for (j = 0; j < c->nred; j++) {
			struct pp_xfer *x = &c->red[j];

			a = agg_of(c, x->dst, idx);
			if (!a || add_contrib(a, x->src))
				goto nomem;
			seen[x->src]++;
		}
		for (j = 0; j < c->nring; j++) {
			a = agg_of(c, c->ring[j].dst, idx);
			if (!a || add_contrib(a, c->ring[j].src))
				goto nomem;
		}
		for (j = 0; j < c->nmem; j++) {
			if (!agg_of(c, c->mem[j], idx))
				goto nomem;
			seen[c->mem[j]]++;
		}
		if (c->kind == PP_TREE) {
			if (c->root < 0 || !agg_of(c, c->root, idx))
				goto nomem_or_root;
			seen[c->root]++;
		}
		for (j = 0; j < c->nagg; j++) {
			a = &c->agg[j];
			a->self = t->node[a->node].kind == TOPO_HOST;
		}
		for (j = 0; j < c->nred; j++) {
			a = agg_of(c, c->red[j].src, idx);
			if (!a)
				goto nomem;
			a->parent = c->red[j].dst;
		}
		for (j = 0; j < c->nring; j++)
			c->agg[idx[c->ring[j].src]].parent = c->ring[j].dst;
		for (j = 0; j < t->nhosts; j++)
			if (seen[t->hosts[j]] != 1) {
				ret = rinx_seterr(err, errlen, -EINVAL, "%s: class %d: "
						  "worker %s contributes %d times",
						  p->scheme, i,
						  t->node[t->hosts[j]].name,
						  seen[t->hosts[j]]);
				break;
			}
		continue;
nomem_or_root:
		if (c->root < 0) {
			ret = rinx_seterr(err, errlen, -EINVAL, "%s: class %d has no "
					  "root", p->scheme, i);
			break;
		}
nomem:
		ret = rinx_seterr(err, errlen, -ENOMEM, "out of memory");
	}
	if (!ret && fabs(sum - 1) > 1e-6)
		ret = rinx_seterr(err, errlen, -EINVAL, "%s: shares sum to %g",
				  p->scheme, sum);
out:
	free(idx);
	free(seen);
	return ret;
}

int pp_racks(const struct topo *t, int *rack_of, int *racks, int *nracks)
{
	int i, j, n = 0;

	for (i = 0; i < t->nhosts; i++) {
		int tor = t->node[t->hosts[i]].tor;

		rack_of[i] = tor;
		if (tor < 0)
			continue;
		for (j = 0; j < n && racks[j] != tor; j++)
			;
		if (j == n)
			racks[n++] = tor;
	}
	*nracks = n;
	return 0;
}

/* ---- Dinic ---- */

/*
 * Planners run thousands of tiny max-flows on one big network (GRID adds
 * one switch and pushes one unit at a time), so no step may cost O(nodes)
 * when the flow is small: levels and positions carry a generation stamp
 * instead of being cleared, a node's edge iterator starts when it is
 * labelled, and the BFS stops at the level of the sink.
 */
struct pp_mf {
	int n, m, maxm;
	int *head, *nxt, *to, *level, *it, *q;
	unsigned *seen;		/* level[v] is valid iff seen[v] == gen */
	unsigned gen;
	long long *cap, *orig;
};

struct pp_mf *pp_mf_new(int n)
{
	struct pp_mf *m = calloc(1, sizeof(*m));
	int i;

	if (!m)
		return NULL;
	m->n = n;
	m->head = malloc(n * sizeof(int));
	m->level = malloc(n * sizeof(int));
	m->it = malloc(n * sizeof(int));
	m->q = malloc(n * sizeof(int));
	m->seen = calloc(n, sizeof(unsigned));
	if (!m->head || !m->level || !m->it || !m->q || !m->seen) {
		pp_mf_free(m);
		return NULL;
	}
	for (i = 0; i < n; i++)
		m->head[i] = -1;
	return m;
}

void pp_mf_free(struct pp_mf *m)
{
	if (!m)
		return;
	free(m->head);
	free(m->nxt);
	free(m->to);
	free(m->level);
	free(m->it);
	free(m->q);
	free(m->seen);
	free(m->cap);
	free(m->orig);
	free(m);
}

int pp_mf_edge(struct pp_mf *m, int u, int v, long long cap)
{
	int k;

	if (m->m + 2 > m->maxm) {
		int nm = m->maxm ? 2 * m->maxm : 256;

		m->nxt = realloc(m->nxt, nm * sizeof(int));
		m->to = realloc(m->to, nm * sizeof(int));
		m->cap = realloc(m->cap, nm * sizeof(long long));
		m->orig = realloc(m->orig, nm * sizeof(long long));
		if (!m->nxt || !m->to || !m->cap || !m->orig)
			return -ENOMEM;
		m->maxm = nm;
	}
	k = m->m;
	m->to[k] = v;
	m->cap[k] = m->orig[k] = cap;
	m->nxt[k] = m->head[u];
	m->head[u] = k;
	m->to[k + 1] = u;
	m->cap[k + 1] = m->orig[k + 1] = 0;
	m->nxt[k + 1] = m->head[v];
	m->head[v] = k + 1;
	m->m += 2;
	return k;
}

static void mf_stamp(struct pp_mf *m)
{
	if (++m->gen == 0) {	/* wrapped: stale stamps could match */
		memset(m->seen, 0, m->n * sizeof(unsigned));
		m->gen = 1;
	}
}

static int mf_level(const struct pp_mf *m, int v)
{
	return m->seen[v] == m->gen ? m->level[v] : -1;
}

static void mf_label(struct pp_mf *m, int v, int lv)
{
	m->seen[v] = m->gen;
	m->level[v] = lv;
	m->it[v] = m->head[v];
}

static int mf_bfs(struct pp_mf *m, int s, int t)
{
	int qh = 0, qt = 0, e;

	mf_stamp(m);
	mf_label(m, s, 0);
	m->q[qt++] = s;
	while (qh < qt) {
		int u = m->q[qh++];

		/* every node below the sink's level is labelled by now:
		 * the rest cannot be on a shortest augmenting path */
		if (mf_level(m, t) >= 0 && m->level[u] >= m->level[t])
			break;
		for (e = m->head[u]; e >= 0; e = m->nxt[e])
			if (m->cap[e] > 0 && mf_level(m, m->to[e]) < 0) {
				mf_label(m, m->to[e], m->level[u] + 1);
				m->q[qt++] = m->to[e];
			}
	}
	return mf_level(m, t) >= 0;
}

static long long mf_dfs(struct pp_mf *m, int u, int t, long long f)
{
	if (u == t)
		return f;
	for (; m->it[u] >= 0; m->it[u] = m->nxt[m->it[u]]) {
		int e = m->it[u], v = m->to[e];

		if (m->cap[e] > 0 && mf_level(m, v) == m->level[u] + 1) {
			long long d = mf_dfs(m, v, t, f < m->cap[e] ? f : m->cap[e]);

			if (d > 0) {
				m->cap[e] -= d;
				m->cap[e ^ 1] += d;
				return d;
			}
		}
	}
	return 0;
}

long long pp_mf_run(struct pp_mf *m, int s, int t, long long limit)
{
	long long total = 0, f;

	while (total < limit && mf_bfs(m, s, t))
		while (total < limit &&
		       (f = mf_dfs(m, s, t, limit - total)) > 0)
			total += f;
	return total;
}

long long pp_mf_flow(const struct pp_mf *m, int e)
{
	return m->orig[e] - m->cap[e];
}

long long pp_mf_cap(const struct pp_mf *m, int e)
{
	return m->orig[e];
}

void pp_mf_set_cap(struct pp_mf *m, int e, long long cap)
{
	long long f = pp_mf_flow(m, e);

	m->orig[e] = cap;
	m->cap[e] = cap - f;
}

void pp_mf_reset(struct pp_mf *m)
{
	int e;

	for (e = 0; e < m->m; e++)
		m->cap[e] = m->orig[e];
}

int pp_mf_take_path(struct pp_mf *m, int u, int t, int *edges, int max)
{
	int n = 0, *pos = m->it, i, guard = 0;

	/* it[] doubles as "position of this node on the walk", valid where
	 * stamped in this generation */
	mf_stamp(m);
	m->seen[u] = m->gen;
	pos[u] = 0;
	while (u != t) {
		int e;

		for (e = m->head[u]; e >= 0; e = m->nxt[e])
			if (!(e & 1) && pp_mf_flow(m, e) > 0)
				break;
		if (e < 0 || ++guard > 4 * m->n)
			return -1;
		m->cap[e] += 1;
		m->cap[e ^ 1] -= 1;
		u = m->to[e];
		if (m->seen[u] == m->gen && pos[u] >= 0) {
			/* a cycle of flow: it carries nothing anywhere, drop
			 * it from the path (its unit is already removed) */
			for (i = pos[u]; i < n; i++)
				pos[m->to[edges[i]]] = -1;
			n = pos[u];
			pos[u] = n;
			continue;
		}
		if (n == max)
			return -1;
		edges[n++] = e;
		m->seen[u] = m->gen;
		pos[u] = n;
	}
	return n;
}

double pp_cut_bound(struct topo *t, int maxw)
{
	struct pp_mf *m;
	double best = 1e9;	/* Gbps: above any link */
	int i, j, dir;

	if (t->nhosts > maxw)
		return -1;
	if (t->nhosts < 2)
		return 0;
	m = pp_mf_new(t->nnodes);
	if (!m)
		return -1;
	/* kbit/s units keep the flow integral and exact enough */
	for (i = 0; i < 2 * t->nlinks; i++)
		if (pp_mf_edge(m, topo_arc_from(t, i), topo_arc_to(t, i),
			       llround(topo_arc_gbps(t, i) * 1e6)) < 0) {
			pp_mf_free(m);
			return -1;
		}
	for (j = 1; j < t->nhosts; j++)
		for (dir = 0; dir < 2; dir++) {
			int s = dir ? t->hosts[j] : t->hosts[0];
			int d = dir ? t->hosts[0] : t->hosts[j];
			double f;

			pp_mf_reset(m);
			f = pp_mf_run(m, s, d, (long long)(best * 1e6) + 1) / 1e6;
			if (f < best)
				best = f;
		}
	pp_mf_free(m);
	return best;
}

int pp_rack_order(const struct topo *t, int *order)
{
	int *rack_of = malloc((t->nhosts + 1) * sizeof(int));
	int *racks = malloc((t->nhosts + 1) * sizeof(int));
	int nr, i, j, n = 0;

	if (!rack_of || !racks) {
		free(rack_of);
		free(racks);
		return -ENOMEM;
	}
	pp_racks(t, rack_of, racks, &nr);
	for (j = 0; j < nr; j++)
		for (i = 0; i < t->nhosts; i++)
			if (rack_of[i] == racks[j])
				order[n++] = t->hosts[i];
	for (i = 0; i < t->nhosts; i++)
		if (rack_of[i] < 0)
			order[n++] = t->hosts[i];
	free(rack_of);
	free(racks);
	return n;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int pp_breakpoints(const double *caps, int ncaps, int kmax, double **out)
{
	double *c = malloc((ncaps + 1) * sizeof(double)), *r;
	int nc = 0, i, k, n = 0;

	if (!c)
		return -ENOMEM;
	memcpy(c, caps, ncaps * sizeof(double));
	qsort(c, ncaps, sizeof(double), cmp_dbl);
	for (i = 0; i < ncaps; i++)
		if (c[i] > 0 && (nc == 0 || c[i] != c[nc - 1]))
			c[nc++] = c[i];
	r = malloc(((size_t)nc * kmax + 1) * sizeof(double));
	if (!r) {
		free(c);
		return -ENOMEM;
	}
	for (i = 0; i < nc; i++)
		for (k = 1; k <= kmax; k++)
			r[n++] = c[i] / k;
	qsort(r, n, sizeof(double), cmp_dbl);
	for (i = 0, k = 0; i < n; i++)
		if (k == 0 || r[i] > r[k - 1] * (1 + 1e-12))
			r[k++] = r[i];
	free(c);
	*out = r;
	return k;
}

int pp_bc_tree(struct topo *t, struct pp_class *c, int root, char *arcs)
{
	int *par = malloc(t->nnodes * sizeof(int)), *q = malloc(t->nnodes * sizeof(int));
	char *need = calloc(2 * t->nlinks + 1, 1);
	int qh = 0, qt = 0, i, ret = 0;

	if (!par || !q || !need) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < t->nnodes; i++)
		par[i] = -2;
	par[root] = -1;
	q[qt++] = root;
	while (qh < qt) {
		int u = q[qh++], k;

		/* workers do not pass the result on: only the root and
		 * switches fan out */
		if (u != root && t->node[u].kind != TOPO_SWITCH)
			continue;
		for (k = t->off[u]; k < t->off[u + 1]; k++) {
			int v = topo_arc_to(t, t->adj[k]);

			if (par[v] != -2)
				continue;
			par[v] = t->adj[k];
			q[qt++] = v;
		}
	}
	for (i = 0; i < t->nhosts; i++) {
		int u = t->hosts[i];

		if (par[u] == -2) {
			ret = -EHOSTUNREACH;
			goto out;
		}
		while (par[u] >= 0 && !need[par[u]]) {
			need[par[u]] = 1;
			u = topo_arc_from(t, par[u]);
		}
	}
	for (i = 0; i < 2 * t->nlinks && !ret; i++)
		if (need[i]) {
			ret = pp_xfer_arcs(c, 1, topo_arc_from(t, i),
					   topo_arc_to(t, i), 1, &i, 1);
			if (arcs)
				arcs[i] = 1;
		}
out:
	free(par);
	free(q);
	free(need);
	return ret;
}
