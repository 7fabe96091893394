// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Topologies: file format, built-in generators, routes. See user/plan/topo.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "user/plan/topo.h"
#include "user/log.h"

void topo_init(struct topo *t)
{
	memset(t, 0, sizeof(*t));
}

void topo_free(struct topo *t)
{
	free(t->node);
	free(t->link);
	free(t->off);
	free(t->adj);
	free(t->hosts);
	free(t->ps);
	if (t->dist)
		for (int i = 0; i < t->ncore; i++)
			free(t->dist[i]);
	free(t->dist);
	free(t->cix);
	free(t->core);
	topo_init(t);
}

int topo_find(const struct topo *t, const char *name)
{
	int i;

	for (i = 0; i < t->nnodes; i++)
		if (!strcmp(t->node[i].name, name))
			return i;
	return -ENOENT;
}

static int name_ok(const char *v)
{
	size_t i, n = strlen(v);

	if (n == 0 || n >= TOPO_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr("-_.", v[i]))
			return 0;
	return 1;
}

int topo_add_node(struct topo *t, const char *name, int kind, int ina,
		  double cap)
{
	struct topo_node *n;

	if (!name_ok(name) || cap < 0 || !isfinite(cap))
		return -EINVAL;
	/* generators add thousands of nodes: the lookup stays linear only
	 * for files, where the duplicate check matters */
	if (t->nnodes < 4096 && topo_find(t, name) >= 0)
		return -EEXIST;
	if (t->nnodes == t->maxnodes) {
		int m = t->maxnodes ? 2 * t->maxnodes : 64;

		n = realloc(t->node, m * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->node = n;
		t->maxnodes = m;
	}
	n = &t->node[t->nnodes];
	memset(n, 0, sizeof(*n));
	strcpy(n->name, name);
	n->kind = kind;
	n->ina = kind == TOPO_SWITCH && ina;
	n->cap = n->ina ? cap : 0;
	n->tor = -1;
	return t->nnodes++;
}

int topo_add_link(struct topo *t, int a, int b, double ab, double ba)
{
	struct topo_link *l;

	if (a < 0 || b < 0 || a >= t->nnodes || b >= t->nnodes || a == b)
		return -EINVAL;
	if (!(ab > 0) || !(ba > 0) || !isfinite(ab) || !isfinite(ba))
		return -EINVAL;
	if (t->nlinks == t->maxlinks) {
		int m = t->maxlinks ? 2 * t->maxlinks : 64;

		l = realloc(t->link, m * sizeof(*l));
		if (!l)
			return -ENOMEM;
		t->link = l;
		t->maxlinks = m;
	}
	l = &t->link[t->nlinks];
	l->a = a;
	l->b = b;
	l->gbps[0] = ab;
	l->gbps[1] = ba;
	return t->nlinks++;
}

static int is_leaf(const struct topo *t, int u)
{
	return t->off[u + 1] - t->off[u] == 1;
}

/* Hop distances from every core node to core node dst (by core index),
 * BFS on reversed arcs through core nodes only, cached per destination. */
static const int *dist_to(struct topo *t, int dst)
{
	int *d = t->dist[dst], *q, qh = 0, qt = 0, i;

	if (d)
		return d;
	d = malloc(t->ncore * sizeof(*d));
	q = malloc(t->ncore * sizeof(*q));
	if (!q || !d) {
		free(d);
		free(q);
		return NULL;
	}
	for (i = 0; i < t->ncore; i++)
		d[i] = -1;
	d[dst] = 0;
	q[qt++] = dst;
	while (qh < qt) {
		int v = t->core[q[qh++]], k;

		/* arcs into v are the reverses of v's out-arcs */
		for (k = t->off[v]; k < t->off[v + 1]; k++) {
			int u = t->cix[topo_arc_to(t, t->adj[k])];

			if (u >= 0 && d[u] < 0) {
				d[u] = d[t->cix[v]] + 1;
				q[qt++] = u;
			}
		}
	}
	free(q);
	t->dist[dst] = d;
	return d;
}

/* Every node reached from src (reach[] set to 1); 0 or -ENOMEM. */
static int reach_from(const struct topo *t, int src, char *reach)
{
	int *q = malloc(t->nnodes * sizeof(*q)), qh = 0, qt = 0;

	if (!q)
		return -ENOMEM;
	memset(reach, 0, t->nnodes);
	reach[src] = 1;
	q[qt++] = src;
	while (qh < qt) {
		int v = q[qh++], k;

		for (k = t->off[v]; k < t->off[v + 1]; k++) {
			int u = topo_arc_to(t, t->adj[k]);

			if (!reach[u]) {
				reach[u] = 1;
				q[qt++] = u;
			}
		}
	}
	free(q);
	return 0;
}

static const struct topo *name_sort_t;

static int by_name(const void *a, const void *b)
{
	return strcmp(name_sort_t->node[*(const int *)a].name,
		      name_sort_t->node[*(const int *)b].name);
}

/* Names must be unique; files small enough are checked line by line in
 * topo_add_node, everything here in n log n. */
static int check_names(const struct topo *t, char *err, size_t errlen)
{
	int *ix = malloc((t->nnodes + 1) * sizeof(int)), i, ret = 0;

	if (!ix)
		return rinx_seterr(err, errlen, -ENOMEM, "out of memory");
	for (i = 0; i < t->nnodes; i++)
		ix[i] = i;
	name_sort_t = t;
	qsort(ix, t->nnodes, sizeof(int), by_name);
	for (i = 1; i < t->nnodes && !ret; i++)
		if (!strcmp(t->node[ix[i]].name, t->node[ix[i - 1]].name))
			ret = rinx_seterr(err, errlen, -EINVAL, "duplicate name '%s'",
					  t->node[ix[i]].name);
	free(ix);
	return ret;
}

int topo_finish(struct topo *t, char *err, size_t errlen)
{
	int i, *cnt, nh = 0, np = 0;

	if (t->nnodes > TOPO_MAX_NODES)
		return rinx_seterr(err, errlen, -E2BIG, "%d nodes: at most %d",
				   t->nnodes, TOPO_MAX_NODES);
	i = check_names(t, err, errlen);
	if (i)
		return i;
	free(t->off);
	free(t->adj);
	free(t->hosts);
	free(t->ps);
	if (t->dist)
		for (i = 0; i < t->ncore; i++)
			free(t->dist[i]);
	free(t->dist);
	free(t->cix);
	free(t->core);
	t->dist = NULL;
	t->cix = t->core = NULL;
	t->ncore = 0;
	t->off = calloc(t->nnodes + 1, sizeof(int));
	t->adj = malloc((2 * t->nlinks + 1) * sizeof(int));
	t->hosts = malloc((t->nnodes + 1) * sizeof(int));
	t->ps = malloc((t->nnodes + 1) * sizeof(int));
	t->cix = malloc((t->nnodes + 1) * sizeof(int));
	t->core = malloc((t->nnodes + 1) * sizeof(int));
	cnt = calloc(t->nnodes + 1, sizeof(int));
	if (!t->off || !t->adj || !t->hosts || !t->ps || !t->cix || !t->core ||
	    !cnt) {
		free(cnt);
		return rinx_seterr(err, errlen, -ENOMEM, "out of memory");
	}
	for (i = 0; i < t->nlinks; i++) {
		t->off[t->link[i].a + 1]++;
		t->off[t->link[i].b + 1]++;
	}
	for (i = 0; i < t->nnodes; i++)
		t->off[i + 1] += t->off[i];
	for (i = 0; i < t->nlinks; i++) {
		int a = t->link[i].a, b = t->link[i].b;

		t->adj[t->off[a] + cnt[a]++] = 2 * i;
		t->adj[t->off[b] + cnt[b]++] = 2 * i + 1;
	}
	free(cnt);
	for (i = 0; i < t->nnodes; i++) {
		t->cix[i] = is_leaf(t, i) ? -1 : t->ncore;
		if (t->cix[i] >= 0)
			t->core[t->ncore++] = i;
	}
	t->dist = calloc(t->ncore + 1, sizeof(int *));
	if (!t->dist)
		return rinx_seterr(err, errlen, -ENOMEM, "out of memory");
	for (i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->node[i];
		int k;

		n->tor = -1;
		for (k = t->off[i]; k < t->off[i + 1] && n->kind != TOPO_SWITCH; k++)
			if (t->node[topo_arc_to(t, t->adj[k])].kind == TOPO_SWITCH) {
				n->tor = topo_arc_to(t, t->adj[k]);
				break;
			}
		if (n->kind == TOPO_HOST)
			t->hosts[nh++] = i;
		else if (n->kind == TOPO_PS)
			t->ps[np++] = i;
	}
	t->nhosts = nh;
	t->nps = np;
	if (nh == 0)
		return rinx_seterr(err, errlen, -EINVAL, "topology has no host");
	/* every link works both ways: one search from the first worker
	 * shows that all workers and servers reach each other */
	{
		char *reach = malloc(t->nnodes + 1);

		if (!reach || reach_from(t, t->hosts[0], reach)) {
			free(reach);
			return rinx_seterr(err, errlen, -ENOMEM, "out of memory");
		}
		for (i = 0; i < t->nnodes; i++)
			if (t->node[i].kind != TOPO_SWITCH && !reach[i]) {
				int ret = rinx_seterr(err, errlen, -EINVAL,
						      "%s cannot reach %s",
						      t->node[i].name,
						      t->node[t->hosts[0]].name);

				free(reach);
				return ret;
			}
		free(reach);
	}
	return 0;
}

static uint32_t mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	x ^= x >> 16;
	return x;
}

int topo_route(struct topo *t, int src, int dst, int *arcs, int max)
{
	const int *d;
	int u = src, n = 0, last = -1, to = dst;
	uint32_t h = mix32(src * 2654435761u ^ (dst + 0x9e3779b9u));

	if (src < 0 || dst < 0 || src >= t->nnodes || dst >= t->nnodes)
		return -EINVAL;
	if (src == dst)
		return 0;
	if (max < 1)
		return -E2BIG;
	/* a leaf's only way out, and a leaf destination's only way in */
	if (t->cix[src] < 0) {
		h = mix32(h);	/* the step a full walk would hash: same picks */
		arcs[n++] = t->adj[t->off[src]];
		u = topo_arc_to(t, arcs[0]);
		if (u == dst)
			return n;
	}
	if (t->cix[dst] < 0) {
		last = t->adj[t->off[dst]] ^ 1;
		to = topo_arc_from(t, last);
	}
	if (t->cix[u] < 0 || t->cix[to] < 0)	/* two leaves, one link */
		return -EHOSTUNREACH;
	d = dist_to(t, t->cix[to]);
	if (!d)
		return -ENOMEM;
	if (d[t->cix[u]] < 0)
		return -EHOSTUNREACH;
	while (u != to) {
		int k, cand = 0, pick, chosen = -1, du = d[t->cix[u]];

		for (k = t->off[u]; k < t->off[u + 1]; k++) {
			int v = t->cix[topo_arc_to(t, t->adj[k])];

			if (v >= 0 && d[v] == du - 1)
				cand++;
		}
		h = mix32(h + n);
		pick = h % cand;
		for (k = t->off[u]; k < t->off[u + 1]; k++) {
			int v = t->cix[topo_arc_to(t, t->adj[k])];

			if (v >= 0 && d[v] == du - 1 && pick-- == 0) {
				chosen = t->adj[k];
				break;
			}
		}
		if (n == max)
			return -E2BIG;
		arcs[n++] = chosen;
		u = topo_arc_to(t, chosen);
	}
	if (last >= 0) {
		if (n == max)
			return -E2BIG;
		arcs[n++] = last;
	}
	return n;
}

const char *topo_arc_name(const struct topo *t, int arc, char *buf,
			  size_t len)
{
	snprintf(buf, len, "%s->%s", t->node[topo_arc_from(t, arc)].name,
		 t->node[topo_arc_to(t, arc)].name);
	return buf;
}

/* ---- file format ---- */

static int parse_num(const char *v, double lo, double hi, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(x) || x < lo || x > hi)
		return -EINVAL;
	*out = x;
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "true"))
		*out = 1;
	else if (!strcmp(v, "no") || !strcmp(v, "0") || !strcmp(v, "false"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

#define BAD(...) rinx_seterr(err, errlen, -EINVAL, __VA_ARGS__)

static int parse_line(struct topo *t, char *line, const char *fn, int ln,
		      char *err, size_t errlen)
{
	char *save = NULL, *tok, *kw;
	char name[TOPO_NAME_MAX] = "", a[TOPO_NAME_MAX] = "",
	     b[TOPO_NAME_MAX] = "";
	double cap = 0, gbps = 0, back = 0;
	int ina = 0, has_cap = 0, has_ina = 0, kind, ret, ia, ib;

	kw = strtok_r(line, " \t\r\n", &save);
	if (!kw)
		return 0;
	if (!strcmp(kw, "switch"))
		kind = TOPO_SWITCH;
	else if (!strcmp(kw, "host"))
		kind = TOPO_HOST;
	else if (!strcmp(kw, "ps"))
		kind = TOPO_PS;
	else if (!strcmp(kw, "link"))
		kind = -1;
	else
		return BAD("%s:%d: unknown record '%s' (switch, host, ps, link)",
			   fn, ln, kw);
	while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
		char *eq = strchr(tok, '='), *v;

		if (!eq)
			return BAD("%s:%d: '%s' is not key=value", fn, ln, tok);
		*eq = 0;
		v = eq + 1;
		if (kind >= 0 && !strcmp(tok, "name")) {
			if (!name_ok(v))
				return BAD("%s:%d: bad name '%s'", fn, ln, v);
			strcpy(name, v);
		} else if (kind == TOPO_SWITCH && !strcmp(tok, "ina")) {
			if (parse_bool(v, &ina))
				return BAD("%s:%d: ina=%s: yes or no", fn, ln, v);
			has_ina = 1;
		} else if (kind == TOPO_SWITCH && !strcmp(tok, "cap")) {
			if (parse_num(v, 0, 1e9, &cap))
				return BAD("%s:%d: cap=%s: a capacity in Gbps",
					   fn, ln, v);
			has_cap = 1;
		} else if (kind < 0 && (!strcmp(tok, "a") || !strcmp(tok, "b"))) {
			if (!name_ok(v))
				return BAD("%s:%d: bad node name '%s'", fn, ln, v);
			strcpy(tok[0] == 'a' ? a : b, v);
		} else if (kind < 0 && !strcmp(tok, "gbps")) {
			if (parse_num(v, 1e-9, 1e9, &gbps))
				return BAD("%s:%d: gbps=%s: a bandwidth > 0", fn,
					   ln, v);
		} else if (kind < 0 && !strcmp(tok, "back")) {
			if (parse_num(v, 1e-9, 1e9, &back))
				return BAD("%s:%d: back=%s: a bandwidth > 0", fn,
					   ln, v);
		} else {
			return BAD("%s:%d: unknown key '%s' for %s", fn, ln, tok,
				   kw);
		}
	}
	if (kind < 0) {
		if (!a[0] || !b[0] || !(gbps > 0))
			return BAD("%s:%d: link needs a=, b= and gbps=", fn, ln);
		ia = topo_find(t, a);
		ib = topo_find(t, b);
		if (ia < 0 || ib < 0)
			return BAD("%s:%d: link to unknown node '%s'", fn, ln,
				   ia < 0 ? a : b);
		if (ia == ib)
			return BAD("%s:%d: link from %s to itself", fn, ln, a);
		ret = topo_add_link(t, ia, ib, gbps, back > 0 ? back : gbps);
		return ret < 0 ? BAD("%s:%d: cannot add link", fn, ln) : 0;
	}
	if (!name[0])
		return BAD("%s:%d: %s needs name=", fn, ln, kw);
	if (kind == TOPO_SWITCH && has_ina && ina && !has_cap)
		return BAD("%s:%d: ina=yes needs cap= (Gbps it can aggregate)",
			   fn, ln);
	if (kind == TOPO_SWITCH && has_cap && !ina)
		return BAD("%s:%d: cap= without ina=yes", fn, ln);
	ret = topo_add_node(t, name, kind, ina, cap);
	if (ret == -EEXIST)
		return BAD("%s:%d: duplicate name '%s'", fn, ln, name);
	return ret < 0 ? BAD("%s:%d: cannot add node", fn, ln) : 0;
}

int topo_parse(FILE *f, const char *fname, struct topo *t, char *err,
	       size_t errlen)
{
	char line[1024];
	int ln = 0, ret;

	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#');

		ln++;
		if (!strchr(line, '\n') && !feof(f))
			return BAD("%s:%d: line too long", fname, ln);
		if (hash)
			*hash = 0;
		ret = parse_line(t, line, fname, ln, err, errlen);
		if (ret)
			return ret;
	}
	return topo_finish(t, err, errlen);
}

int topo_load(const char *path, struct topo *t, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	int ret;

	if (!f)
		return rinx_seterr(err, errlen, -errno, "%s: %s", path,
				   strerror(errno));
	ret = topo_parse(f, path, t, err, errlen);
	fclose(f);
	return ret;
}

void topo_write(FILE *f, const struct topo *t)
{
	static const char *kw[] = { "host", "switch", "ps" };
	int i;

	for (i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->node[i];

		fprintf(f, "%s name=%s", kw[n->kind], n->name);
		if (n->ina)
			fprintf(f, " ina=yes cap=%g", n->cap);
		fprintf(f, "\n");
	}
	for (i = 0; i < t->nlinks; i++) {
		const struct topo_link *l = &t->link[i];

		fprintf(f, "link a=%s b=%s gbps=%g", t->node[l->a].name,
			t->node[l->b].name, l->gbps[0]);
		if (l->gbps[1] != l->gbps[0])
			fprintf(f, " back=%g", l->gbps[1]);
		fprintf(f, "\n");
	}
}

/* ---- generators ---- */

struct genopt {
	const char *key;
	double val;
	int set;
};

static double opt(struct genopt *o, const char *key)
{
	for (; o->key; o++)
		if (!strcmp(o->key, key))
			return o->val;
	return 0;
}

static int parse_opts(const char *s, struct genopt *o, const char *gen,
		      char *err, size_t errlen)
{
	char buf[512], *save = NULL, *tok;

	if (!s)
		return 0;
	if (strlen(s) >= sizeof(buf))
		return BAD("%s: options too long", gen);
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		struct genopt *p;

		if (!eq)
			return BAD("%s: '%s' is not key=value", gen, tok);
		*eq = 0;
		for (p = o; p->key; p++)
			if (!strcmp(p->key, tok))
				break;
		if (!p->key)
			return BAD("%s: unknown option '%s'", gen, tok);
		if (!strcmp(tok, "ina") && (!strcmp(eq + 1, "all") ||
					    !strcmp(eq + 1, "edge") ||
					    !strcmp(eq + 1, "none"))) {
			p->val = eq[1] == 'a' ? -1 : eq[1] == 'e' ? -2 : 0;
		} else if (parse_num(eq + 1, 0, 1e9, &p->val)) {
			return BAD("%s: %s=%s is not a number", gen, tok, eq + 1);
		}
		p->set = 1;
	}
	return 0;
}

#define ADD(nm, kind, ina, cap) ({					\
	int __id = topo_add_node(t, nm, kind, ina, cap);		\
	if (__id < 0)							\
		return rinx_seterr(err, errlen, __id, "cannot add %s", nm);	\
	__id; })
#define LINK(x, y, g) do {						\
	double __g = (g);	/* once: g may draw a random number */	\
	int __r = topo_add_link(t, x, y, __g, __g);			\
	if (__r < 0)							\
		return rinx_seterr(err, errlen, __r, "cannot add a link");	\
} while (0)

static int gen_grid_toy(struct topo *t, char *err, size_t errlen)
{
	static const int at[8] = { 0, 0, 0, 0, 1, 1, 2, 2 };
	int s[3], ps, i;
	char nm[8];

	for (i = 0; i < 3; i++) {
		snprintf(nm, sizeof(nm), "S%d", i + 1);
		s[i] = ADD(nm, TOPO_SWITCH, 1, 9);
	}
	for (i = 0; i < 8; i++) {
		int w;

		snprintf(nm, sizeof(nm), "W%d", i + 1);
		w = ADD(nm, TOPO_HOST, 0, 0);
		LINK(w, s[at[i]], 10);
	}
	ps = ADD("PS", TOPO_PS, 0, 0);
	LINK(s[0], s[2], 3);
	LINK(s[0], s[1], 3);
	LINK(s[1], s[2], 3);
	LINK(ps, s[2], 9);
	return 0;
}

static int gen_fattree(struct genopt *o, struct topo *t, char *err,
		       size_t errlen)
{
	int k = opt(o, "k"), h = k / 2, p, i, j, nw, w = 0;
	double g = opt(o, "gbps"), cap = opt(o, "cap");
	int ina = opt(o, "ina"), nps = opt(o, "ps");
	int core0, *edge;
	char nm[TOPO_NAME_MAX];

	if (k < 2 || k % 2 || k > 80)
		return BAD("fattree: k=%d must be even, 2..80", k);
	nw = o[2].set ? (int)opt(o, "workers") : k * k * k / 4;
	if (nw < 1 || nw > k * k * k / 4)
		return BAD("fattree: workers=%d: 1..%d for k=%d", nw,
			   k * k * k / 4, k);
	edge = malloc(k * h * sizeof(int));
	if (!edge)
		return -ENOMEM;
	core0 = t->nnodes;
	for (i = 0; i < h * h; i++) {
		snprintf(nm, sizeof(nm), "c%d", i);
		ADD(nm, TOPO_SWITCH, ina == -1, cap);
	}
	for (p = 0; p < k; p++) {
		int agg0 = t->nnodes;

		for (i = 0; i < h; i++) {
			snprintf(nm, sizeof(nm), "a%d_%d", p, i);
			ADD(nm, TOPO_SWITCH, ina == -1, cap);
			for (j = 0; j < h; j++)
				LINK(agg0 + i, core0 + i * h + j, g);
		}
		for (i = 0; i < h; i++) {
			snprintf(nm, sizeof(nm), "e%d_%d", p, i);
			edge[p * h + i] = ADD(nm, TOPO_SWITCH, ina != 0, cap);
			for (j = 0; j < h; j++)
				LINK(edge[p * h + i], agg0 + j, g);
		}
	}
	/* workers spread over the pods round robin so that a partial
	 * fat-tree still crosses the core */
	for (i = 0; i < h && w < nw; i++)
		for (j = 0; j < h && w < nw; j++)
			for (p = 0; p < k && w < nw; p++) {
				int id;

				snprintf(nm, sizeof(nm), "W%d", w++);
				id = ADD(nm, TOPO_HOST, 0, 0);
				LINK(id, edge[p * h + j], g);
			}
	for (i = 0; i < nps; i++) {
		int id;

		snprintf(nm, sizeof(nm), nps > 1 ? "PS%d" : "PS", i);
		id = ADD(nm, TOPO_PS, 0, 0);
		LINK(id, edge[(k * h - 1 - i) % (k * h)], g);
	}
	free(edge);
	return 0;
}

static int gen_leafspine(struct genopt *o, struct topo *t, char *err,
			 size_t errlen)
{
	int L = opt(o, "leaves"), S = opt(o, "spines"), H = opt(o, "hosts");
	int nina = opt(o, "ina"), nps = opt(o, "ps"), i, j, s0, l0, w = 0;
	double g = opt(o, "gbps"), over = opt(o, "oversub"), up;
	char nm[TOPO_NAME_MAX];

	if (L < 1 || S < 1 || H < 1 || L * H > 100000 || S > 1024)
		return BAD("leafspine: leaves, spines, hosts must be >= 1");
	if (!(over > 0))
		return BAD("leafspine: oversub must be > 0");
	if (nina < 0)	/* ina=all */
		nina = L;
	if (nina > L)
		return BAD("leafspine: ina=%d > leaves=%d", nina, L);
	/* a leaf's uplinks carry 1/oversub of what its hosts can send */
	up = H * g / (S * over);
	s0 = t->nnodes;
	for (i = 0; i < S; i++) {
		snprintf(nm, sizeof(nm), "sp%d", i);
		ADD(nm, TOPO_SWITCH, 0, 0);
	}
	l0 = t->nnodes;
	for (i = 0; i < L; i++) {
		snprintf(nm, sizeof(nm), "leaf%d", i);
		ADD(nm, TOPO_SWITCH, i < nina, opt(o, "cap"));
		for (j = 0; j < S; j++)
			LINK(l0 + i, s0 + j, up);
	}
	for (i = 0; i < L; i++)
		for (j = 0; j < H; j++) {
			int id;

			snprintf(nm, sizeof(nm), "W%d", w++);
			id = ADD(nm, TOPO_HOST, 0, 0);
			LINK(id, l0 + i, g);
		}
	for (i = 0; i < nps; i++) {
		int id;

		snprintf(nm, sizeof(nm), nps > 1 ? "PS%d" : "PS", i);
		id = ADD(nm, TOPO_PS, 0, 0);
		LINK(id, l0 + L - 1 - i % L, g);
	}
	return 0;
}

static uint64_t rnd_next(uint64_t *s)
{
	/* splitmix64: seeded, portable, good enough for test graphs */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rnd_bw(uint64_t *s, double lo, double hi)
{
	/* whole Gbps, so that files written back read the same */
	return floor(lo + (double)(rnd_next(s) % 1000000) / 1000000.0 *
		     (hi - lo + 1));
}

static int gen_random(struct genopt *o, struct topo *t, char *err,
		      size_t errlen)
{
	int n = opt(o, "hosts"), m = opt(o, "switches"), deg = opt(o, "deg");
	int nina = opt(o, "ina"), nps = opt(o, "ps"), i, base, nb, extra;
	double lo = opt(o, "min"), hi = opt(o, "max");
	uint64_t seed = (uint64_t)opt(o, "seed");
	char nm[TOPO_NAME_MAX];
	int h0, s0;

	if (n < 2 || n > 100000 || m < 0 || m > 100000)
		return BAD("random: hosts >= 2, switches >= 0");
	if (!(lo > 0) || hi < lo)
		return BAD("random: need 0 < min <= max");
	if (nina < 0)
		nina = m;
	s0 = t->nnodes;
	for (i = 0; i < m; i++) {
		snprintf(nm, sizeof(nm), "s%d", i);
		ADD(nm, TOPO_SWITCH, i < nina, opt(o, "cap"));
	}
	h0 = t->nnodes;
	for (i = 0; i < n; i++) {
		snprintf(nm, sizeof(nm), "W%d", i);
		ADD(nm, TOPO_HOST, 0, 0);
	}
	/* the backbone: switches if any, else the hosts themselves */
	base = m ? s0 : h0;
	nb = m ? m : n;
	for (i = 1; i < nb; i++)	/* a random spanning tree: connected */
		LINK(base + i, base + (int)(rnd_next(&seed) % i),
		     rnd_bw(&seed, lo, hi));
	extra = nb * (deg > 0 ? deg : 2) / 2 - (nb - 1);
	for (i = 0; i < extra; i++) {
		int x = rnd_next(&seed) % nb, y = rnd_next(&seed) % nb;

		if (x != y)
			LINK(base + x, base + y, rnd_bw(&seed, lo, hi));
	}
	if (m)
		for (i = 0; i < n; i++)
			LINK(h0 + i, s0 + (int)(rnd_next(&seed) % m),
			     rnd_bw(&seed, lo, hi));
	for (i = 0; i < nps; i++) {
		int id;

		snprintf(nm, sizeof(nm), nps > 1 ? "PS%d" : "PS", i);
		id = ADD(nm, TOPO_PS, 0, 0);
		LINK(id, base + (int)(rnd_next(&seed) % nb), hi);
	}
	return 0;
}

int topo_generate(const char *spec, struct topo *t, char *err,
		  size_t errlen)
{
	const char *colon = strchr(spec, ':');
	size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *args = colon ? colon + 1 : NULL;
	int ret;

	topo_free(t);
	if (nl == 8 && !strncmp(spec, "grid-toy", nl)) {
		if (args && *args)
			return BAD("grid-toy takes no options");
		ret = gen_grid_toy(t, err, errlen);
	} else if (nl == 7 && !strncmp(spec, "fattree", nl)) {
		struct genopt o[] = { { "k", 8, 0 }, { "gbps", 10, 0 },
			{ "workers", 0, 0 }, { "ina", -1, 0 }, { "cap", 100, 0 },
			{ "ps", 1, 0 }, { NULL, 0, 0 } };

		ret = parse_opts(args, o, "fattree", err, errlen);
		if (!ret)
			ret = gen_fattree(o, t, err, errlen);
	} else if (nl == 9 && !strncmp(spec, "leafspine", nl)) {
		struct genopt o[] = { { "leaves", 8, 0 }, { "spines", 4, 0 },
			{ "hosts", 8, 0 }, { "gbps", 10, 0 }, { "oversub", 1, 0 },
			{ "ina", 2, 0 }, { "cap", 100, 0 }, { "ps", 1, 0 },
			{ NULL, 0, 0 } };

		ret = parse_opts(args, o, "leafspine", err, errlen);
		if (!ret)
			ret = gen_leafspine(o, t, err, errlen);
	} else if (nl == 6 && !strncmp(spec, "random", nl)) {
		struct genopt o[] = { { "hosts", 16, 0 }, { "switches", 0, 0 },
			{ "deg", 3, 0 }, { "min", 1, 0 }, { "max", 40, 0 },
			{ "seed", 1, 0 }, { "ina", 0, 0 }, { "cap", 100, 0 },
			{ "ps", 0, 0 }, { NULL, 0, 0 } };

		ret = parse_opts(args, o, "random", err, errlen);
		if (!ret)
			ret = gen_random(o, t, err, errlen);
	} else {
		return BAD("unknown topology '%.*s' (grid-toy, fattree, "
			   "leafspine, random)", (int)nl, spec);
	}
	if (ret)
		return ret;
	return topo_finish(t, err, errlen);
}
