// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Planners and the fluid simulator on topologies whose optimum is known
 * by hand. Pure computation: no root, no namespaces.
 *
 *   GRID toy (ToN'23):      W1-W4   W5-W6   W7-W8  PS (9 Gbps)
 *                             |       |       |   /
 *                            S1 ---- S2 ---- S3      switches: cap 9 Gbps
 *                             \______3______/        inter-switch: 3 Gbps
 *   no INA 1 Gbps, ATP (nearest switch) 2.4375 (the paper: 2.43), GRID 3
 *   with W4 routed S1 -> S2 and aggregated at S2.
 *
 *   ring sanity: n workers on one switch, links B: 2(n-1)/n x S / B.
 *   baselines as deployed (all links 10 Gbps):
 *     a b c d            atp, one INA switch T of capacity 20 and one PS:
 *      \ \ / /           co-located shards: T sums 3 streams of every
 *         T -- PS         shard, f = 20 / 3r; the raw rest lands 3-fold on
 *                         a root's downlink: r (1.5 - 0.5 f) = 10, r = 80/9;
 *                         one dedicated PS: 6.25 (as ps-ina). ATP: 80/9.
 *     the same, T without INA and 4 servers: co-located 20/3 (a root's
 *     downlink takes 3 raw quarters and 3 results), 4 dedicated 10: ATP 10.
 *     a b   c d           switchml-rack: T1 and T2 sum their racks, the
 *     T1 -- C -- T2       root T1 (C's capacity 15 would cap a root C at
 *                         7.5) takes T2's one partial sum: 10 Gbps; one
 *                         switch summing all four raw streams: 5.
 *   forest: K4 of unit links (tree packing 6 edges / 3 = 2), a 5-cycle
 *   (5 / 4 x c), two triangles joined by a 1 Gbps bridge (the bridge).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "selftests/lib/testlib.h"
#include "user/plan/sim.h"

static double run(struct topo *t, const char *scheme, struct pp_plan *keep,
		  double bytes, double *time_s)
{
	const struct pp_planner *pl = pp_planner_find(scheme);
	struct sim_opts o = { .bytes = bytes };
	struct pp_plan p;
	struct sim_res r;
	char err[256] = "";
	double x = -1;

	if (!pl) {
		tap_diag("no planner %s", scheme);
		return -1;
	}
	pp_init(&p, scheme);
	if (pl->plan(t, NULL, &p, err, sizeof(err)) ||
	    pp_finish(t, &p, err, sizeof(err)) ||
	    sim_run(t, &p, &o, &r, err, sizeof(err))) {
		tap_diag("%s: %s", scheme, err);
		pp_free(&p);
		return -1;
	}
	x = r.rate_gbps;
	if (time_s)
		*time_s = r.time_s;
	sim_res_free(&r);
	if (keep)
		*keep = p;
	else
		pp_free(&p);
	return x;
}

static int gen(struct topo *t, const char *spec)
{
	char err[256];
	int ret;

	topo_init(t);
	ret = topo_generate(spec, t, err, sizeof(err));
	if (ret)
		tap_diag("%s: %s", spec, err);
	return ret;
}

static int parse_str(struct topo *t, const char *text, char *err, size_t len)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	topo_init(t);
	if (!f)
		return -errno;
	ret = topo_parse(f, "mem", t, err, len);
	fclose(f);
	return ret;
}

/* The reduce transfer of worker `w` in class 0, or NULL. */
static const struct pp_xfer *red_of(const struct pp_plan *p, int w)
{
	int j;

	for (j = 0; j < p->cls[0].nred; j++)
		if (p->cls[0].red[j].src == w)
			return &p->cls[0].red[j];
	return NULL;
}

static void test_toy(void)
{
	struct topo t;
	struct pp_plan p;
	const struct pp_xfer *x;
	double ps, atp, grid;
	int s1, s2, w4, ok, i, j;

	if (gen(&t, "grid-toy")) {
		tap_ok(0, "grid-toy generated");
		return;
	}
	ps = run(&t, "ps", NULL, 1e6, NULL);
	atp = run(&t, "ps-ina", NULL, 1e6, NULL);
	grid = run(&t, "grid", &p, 1e6, NULL);
	tap_ok(fabs(ps - 1) < 1e-9, "toy: no INA, every worker at 1 Gbps (got %.6f)", ps);
	tap_ok(atp >= 2.43 && atp < 2.44 && fabs(atp - 2.4375) < 1e-6,
	       "toy: ATP nearest-switch 2.43 Gbps (got %.6f = 9/4 + 0.75/4)", atp);
	tap_ok(fabs(grid - 3) < 1e-9, "toy: GRID 3 Gbps (got %.6f)", grid);
	tap_ok(grid > 0 && fabs(p.rate_gbps - 3) < 1e-9 &&
	       fabs(p.bound_gbps - 3) < 1e-9,
	       "toy: GRID planner's rate and upper bound meet at 3 Gbps");
	s1 = topo_find(&t, "S1");
	s2 = topo_find(&t, "S2");
	w4 = -1;
	/* the worker that S1 cannot hold goes via S2 and is aggregated
	 * there: by symmetry any of W1-W4, the paper's W4 */
	ok = grid > 0;
	for (i = 0; ok && i < 4; i++) {
		char nm[4];

		snprintf(nm, sizeof(nm), "W%d", i + 1);
		x = red_of(&p, topo_find(&t, nm));
		if (!x) {
			ok = 0;
			break;
		}
		if (x->dst == s2) {
			if (w4 >= 0)
				ok = 0;
			w4 = i;
			for (j = 0; j < x->nhop; j++)
				if (topo_arc_from(&t, x->hop[j]) == s1 &&
				    topo_arc_to(&t, x->hop[j]) == s2)
					break;
			ok = ok && j < x->nhop;
		} else if (x->dst != s1) {
			ok = 0;
		}
	}
	tap_ok(ok && w4 >= 0, "toy: S1 aggregates three of W1-W4, the fourth "
	       "goes S1->S2 and is aggregated at S2");
	x = grid > 0 ? red_of(&p, topo_find(&t, "W5")) : NULL;
	tap_ok(x && x->dst == s2, "toy: S2 aggregates W5");
	x = grid > 0 ? red_of(&p, topo_find(&t, "W7")) : NULL;
	tap_ok(x && x->dst == topo_find(&t, "S3"), "toy: S3 aggregates W7");
	if (grid > 0)
		pp_free(&p);
	/* ATP's classes: S1 aggregates 2.25 of 2.4375, the rest goes to PS */
	atp = run(&t, "ps-ina", &p, 1e6, NULL);
	ok = atp > 0 && p.ncls == 2;
	if (ok) {
		double a = fmin(p.cls[0].share, p.cls[1].share);

		ok = fabs(a - 0.1875 / 2.4375) < 1e-6;
		pp_free(&p);
	}
	tap_ok(ok, "toy: ATP overflow class carries 0.1875 of 2.4375");
	topo_free(&t);
}

static void test_ring(void)
{
	static const int ns[] = { 2, 5, 8, 33 };
	unsigned int k;

	for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		char text[8192];
		struct topo t;
		size_t off = 0;
		double tm = 0, x, B = 25, S = 64e6, want;
		char err[256];
		int i;

		off += snprintf(text + off, sizeof(text) - off, "switch name=sw\n");
		for (i = 0; i < ns[k]; i++)
			off += snprintf(text + off, sizeof(text) - off,
					"host name=h%d\nlink a=h%d b=sw gbps=%g\n",
					i, i, B);
		if (parse_str(&t, text, err, sizeof(err))) {
			tap_ok(0, "ring star parses: %s", err);
			continue;
		}
		x = run(&t, "ring", NULL, S, &tm);
		want = 2.0 * (ns[k] - 1) / ns[k] * S * 8 / (B * 1e9);
		tap_ok(x > 0 && fabs(tm - want) < 1e-12 * want,
		       "ring of %d on identical %g Gbps links: %.9f s = "
		       "2(n-1)/n x S / B = %.9f s", ns[k], B, tm, want);
		topo_free(&t);
	}
}

static void test_parser(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "host name=a\nswitch name=s ina=maybe cap=3\n", "mem:2:" },
		{ "host name=a\n\n# c\nrouter name=r\n", "mem:4: unknown record" },
		{ "host name=a\nlink a=a b=zz gbps=1\n",
		  "mem:2: link to unknown node 'zz'" },
		{ "host name=a\nhost name=b\nlink a=a b=b\n", "mem:3: link needs" },
		{ "host name=a\nhost name=a\n", "mem:2: duplicate name" },
		{ "switch name=s cap=4\n", "mem:1: cap= without ina=yes" },
		{ "switch name=s ina=yes\n", "mem:1: ina=yes needs cap=" },
		{ "host name=a\nhost name=b\nlink a=a b=b gbps=-3\n", "mem:3: gbps=-3" },
		{ "host name=a\nhost name=b\nlink a=a b=b gbps=1 colour=red\n",
		  "mem:3: unknown key 'colour'" },
		{ "host name=a b\n", "mem:1: 'b' is not key=value" },
		{ "host name=a\nhost name=b\n", "cannot reach" },
		{ "ps name=p\n", "no host" },
	};
	static const char good[] =
		"# two racks\nswitch name=S1 ina=yes cap=9\nswitch name=S2\n"
		"host name=W1\nhost name=W2\nps name=PS\n"
		"link a=W1 b=S1 gbps=10\nlink a=W2 b=S2 gbps=10 back=5\n"
		"link a=S1 b=S2 gbps=3\nlink a=S1 b=S2 gbps=4   # a second path\n"
		"link a=PS b=S2 gbps=9\n";
	char err[256], *buf = NULL;
	struct topo t, u;
	unsigned int i;
	size_t len = 0;
	FILE *f;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret;

		err[0] = 0;
		ret = parse_str(&t, bad[i].text, err, sizeof(err));
		tap_ok(ret < 0 && strstr(err, bad[i].want),
		       "parser rejects bad input %u with '%s' (got '%s')", i,
		       bad[i].want, err);
		topo_free(&t);
	}
	if (parse_str(&t, good, err, sizeof(err))) {
		tap_ok(0, "good file parses: %s", err);
		return;
	}
	tap_ok(t.nhosts == 2 && t.nps == 1 && t.nlinks == 5 &&
	       t.node[topo_find(&t, "S1")].ina &&
	       t.node[topo_find(&t, "S1")].cap == 9 &&
	       !t.node[topo_find(&t, "S2")].ina &&
	       t.link[1].gbps[0] == 10 && t.link[1].gbps[1] == 5,
	       "good file: 2 workers, 1 PS, 5 links, S1 INA cap 9, W2 link 10/5");
	f = open_memstream(&buf, &len);
	if (f) {
		topo_write(f, &t);
		fclose(f);
	}
	tap_ok(buf && !parse_str(&u, buf, err, sizeof(err)) &&
	       u.nnodes == t.nnodes && u.nlinks == t.nlinks &&
	       u.link[1].gbps[1] == 5 && u.node[0].cap == 9,
	       "written topology reads back the same");
	topo_free(&u);
	free(buf);
	topo_free(&t);
}

static void test_forest(void)
{
	static const struct {
		const char *text;
		double tau;
		const char *what;
	} g[] = {
		{ "host name=A\nhost name=B\nhost name=C\nhost name=D\n"
		  "link a=A b=B gbps=1\nlink a=A b=C gbps=1\nlink a=A b=D gbps=1\n"
		  "link a=B b=C gbps=1\nlink a=B b=D gbps=1\nlink a=C b=D gbps=1\n",
		  2, "K4 of 1 Gbps links: 6 links / 3 = 2" },
		{ "host name=A\nhost name=B\nhost name=C\nhost name=D\nhost name=E\n"
		  "link a=A b=B gbps=4\nlink a=B b=C gbps=4\nlink a=C b=D gbps=4\n"
		  "link a=D b=E gbps=4\nlink a=E b=A gbps=4\n",
		  5, "5-cycle of 4 Gbps: 5 x 4 / 4 = 5" },
		{ "host name=A\nhost name=B\nhost name=C\nhost name=D\nhost name=E\n"
		  "host name=F\nlink a=A b=B gbps=10\nlink a=B b=C gbps=10\n"
		  "link a=C b=A gbps=10\nlink a=D b=E gbps=10\nlink a=E b=F gbps=10\n"
		  "link a=F b=D gbps=10\nlink a=C b=D gbps=1\n",
		  1, "two triangles and a 1 Gbps bridge: the bridge" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		struct topo t;
		struct pp_plan p;
		char err[256];
		double x, ring, cut;

		if (parse_str(&t, g[i].text, err, sizeof(err))) {
			tap_ok(0, "forest graph %u parses: %s", i, err);
			continue;
		}
		x = run(&t, "forest", &p, 1e6, NULL);
		ring = run(&t, "ring", NULL, 1e6, NULL);
		cut = pp_cut_bound(&t, 64);
		/* eps = 0.1: the packing reaches (1 - eps)^2 of tau at least */
		tap_ok(x <= g[i].tau * (1 + 1e-9) && x >= 0.81 * g[i].tau,
		       "forest on %s: %.4f Gbps (ring %.4f, cut bound %.4g)",
		       g[i].what, x, ring, cut);
		/* the certificate: a dual bound at or above tau, and GK's
		 * packing proved within eps of it */
		tap_ok(x > 0 && p.bound_gbps >= g[i].tau * (1 - 1e-9) &&
		       p.rate_gbps >= 0.9 * p.bound_gbps * (1 - 1e-9) &&
		       p.rate_gbps <= g[i].tau * (1 + 1e-9),
		       "forest %u: packing %.4f <= tau %.4g <= dual bound %.4f, "
		       "within eps", i, x > 0 ? p.rate_gbps : 0, g[i].tau,
		       x > 0 ? p.bound_gbps : 0);
		if (x > 0)
			pp_free(&p);
		tap_ok(x >= ring - 1e-9 && x <= cut + 1e-9,
		       "forest %u: at least the ring, at most the cut bound", i);
		topo_free(&t);
	}
}

/* GK's forest reduced: at most one tree per link, and the guarantee
 * (1-eps)^2 / 2 of the cut bound on a mesh of workers. */
static void test_forest_sparse(void)
{
	struct topo t;
	struct pp_plan p;
	double x, cut;

	if (gen(&t, "random:hosts=24,deg=6,min=10,max=100,seed=11")) {
		tap_ok(0, "random mesh generated");
		return;
	}
	cut = pp_cut_bound(&t, 64);
	x = run(&t, "forest", &p, 1e6, NULL);
	tap_ok(x >= 0.81 / 2 * cut && x <= cut * (1 + 1e-9) &&
	       p.ncls <= t.nlinks,
	       "forest on a 24-worker mesh: %.4g Gbps of cut bound %.4g, "
	       "%d trees for %d links (%s)", x, cut, x > 0 ? p.ncls : -1,
	       t.nlinks, x > 0 ? p.note : "");
	if (x > 0)
		pp_free(&p);
	topo_free(&t);
}

static void test_single_switch(void)
{
	/* 4 workers on one INA switch (cap 20), PS behind it on 10 Gbps:
	 * GRID and SwitchML aggregate all at 20 / 4 = 5 Gbps (the PS link
	 * carries one stream); ATP also lets what the switch cannot sum
	 * overflow to the PS: 5 aggregated + 4 x 1.25 overflow fill the PS
	 * link at 6.25; without INA the PS link carries 4 streams: 2.5 */
	static const char text[] =
		"switch name=T ina=yes cap=20\nps name=PS\n"
		"host name=a\nhost name=b\nhost name=c\nhost name=d\n"
		"link a=a b=T gbps=10\nlink a=b b=T gbps=10\nlink a=c b=T gbps=10\n"
		"link a=d b=T gbps=10\nlink a=PS b=T gbps=10\n";
	struct topo t;
	char err[256];
	double g, a, s, p;

	if (parse_str(&t, text, err, sizeof(err))) {
		tap_ok(0, "single switch parses: %s", err);
		return;
	}
	g = run(&t, "grid", NULL, 1e6, NULL);
	a = run(&t, "ps-ina", NULL, 1e6, NULL);
	s = run(&t, "switchml", NULL, 1e6, NULL);
	p = run(&t, "ps", NULL, 1e6, NULL);
	tap_ok(fabs(g - 5) < 1e-9 && fabs(s - 5) < 1e-9,
	       "one INA switch: grid %.4g, switchml %.4g = 20/4", g, s);
	tap_ok(fabs(a - 6.25) < 1e-6, "one INA switch: ps-ina %.9g = 5 + "
	       "overflow 5/4", a);
	tap_ok(fabs(p - 2.5) < 1e-9, "one INA switch: ps %.6g = 10/4", p);
	topo_free(&t);
}

static void test_generators(void)
{
	struct topo t, u;
	double up;
	int i, same, sym;

	if (!gen(&t, "fattree:k=8")) {
		int sw = 0;

		for (i = 0; i < t.nnodes; i++)
			sw += t.node[i].kind == TOPO_SWITCH;
		tap_ok(t.nhosts == 128 && sw == 80 && t.nps == 1 &&
		       t.nlinks == 128 + 256 + 1,
		       "fat-tree k=8: 128 workers, 80 switches, 385 links");
		topo_free(&t);
	} else {
		tap_ok(0, "fat-tree k=8 generated");
	}
	if (!gen(&t, "leafspine:leaves=4,spines=2,hosts=6,gbps=10,oversub=3,ina=1")) {
		up = t.link[0].gbps[0];
		tap_ok(t.nhosts == 24 && fabs(up - 6 * 10 / (2 * 3.0)) < 1e-12 &&
		       t.node[topo_find(&t, "leaf0")].ina &&
		       !t.node[topo_find(&t, "leaf1")].ina,
		       "leaf-spine 3:1: uplinks %.4g Gbps, first leaf INA", up);
		topo_free(&t);
	} else {
		tap_ok(0, "leaf-spine generated");
	}
	if (!gen(&t, "random:hosts=20,switches=6,seed=3") &&
	    !gen(&u, "random:hosts=20,switches=6,seed=3")) {
		same = t.nlinks == u.nlinks;
		sym = 1;
		for (i = 0; same && i < t.nlinks; i++) {
			same = t.link[i].a == u.link[i].a &&
			       t.link[i].gbps[0] == u.link[i].gbps[0];
			sym = sym && t.link[i].gbps[0] == t.link[i].gbps[1];
		}
		tap_ok(same && sym, "random graph: same seed, same graph; "
		       "links symmetric");
		topo_free(&t);
		topo_free(&u);
	} else {
		tap_ok(0, "random graphs generated");
	}
	tap_ok(gen(&t, "fattree:k=7") < 0, "fat-tree with odd k is refused");
	topo_free(&t);
	tap_ok(gen(&t, "mesh:n=3") < 0, "unknown generator is refused");
	topo_free(&t);
}

/* Every planner on a few topologies: a valid plan, and none beats the
 * allreduce cut bound. */
static void test_deployed(void)
{
	static const char star[] =
		"switch name=T ina=yes cap=20\nps name=PS\n"
		"host name=a\nhost name=b\nhost name=c\nhost name=d\n"
		"link a=a b=T gbps=10\nlink a=b b=T gbps=10\nlink a=c b=T gbps=10\n"
		"link a=d b=T gbps=10\nlink a=PS b=T gbps=10\n";
	static const char servers[] =
		"switch name=T\nps name=P1\nps name=P2\nps name=P3\nps name=P4\n"
		"host name=a\nhost name=b\nhost name=c\nhost name=d\n"
		"link a=a b=T gbps=10\nlink a=b b=T gbps=10\nlink a=c b=T gbps=10\n"
		"link a=d b=T gbps=10\nlink a=P1 b=T gbps=10\n"
		"link a=P2 b=T gbps=10\nlink a=P3 b=T gbps=10\n"
		"link a=P4 b=T gbps=10\n";
	static const char racks[] =
		"switch name=T1 ina=yes cap=1000\nswitch name=T2 ina=yes cap=1000\n"
		"switch name=C ina=yes cap=15\n"
		"host name=a\nhost name=b\nhost name=c\nhost name=d\n"
		"link a=a b=T1 gbps=10\nlink a=b b=T1 gbps=10\n"
		"link a=c b=T2 gbps=10\nlink a=d b=T2 gbps=10\n"
		"link a=T1 b=C gbps=10\nlink a=T2 b=C gbps=10\n";
	struct topo t;
	struct pp_plan p;
	char err[256];
	double x, y;

	if (parse_str(&t, star, err, sizeof(err))) {
		tap_ok(0, "star parses: %s", err);
	} else {
		x = run(&t, "atp", &p, 1e6, NULL);
		tap_ok(fabs(x - 80 / 9.0) < 1e-6 && strstr(p.note, "co-located wins") &&
		       strstr(p.note, "dedicated 6.25 "),
		       "atp on one INA switch of capacity 20: co-located %.9g "
		       "= 80/9, one PS 6.25 (%s)", x, x > 0 ? p.note : "-");
		if (x > 0)
			pp_free(&p);
		topo_free(&t);
	}
	if (parse_str(&t, servers, err, sizeof(err))) {
		tap_ok(0, "four servers parse: %s", err);
	} else {
		x = run(&t, "atp", &p, 1e6, NULL);
		y = run(&t, "ps", NULL, 1e6, NULL);
		tap_ok(fabs(x - 10) < 1e-9 && strstr(p.note, "dedicated wins") &&
		       strstr(p.note, "6.667"),
		       "atp, no INA, 4 servers: dedicated %.6g = 10, co-located "
		       "20/3 (%s)", x, x > 0 ? p.note : "-");
		tap_ok(fabs(y - 10) < 1e-9, "ps sharded over 4 servers: %.6g = 10",
		       y);
		if (x > 0)
			pp_free(&p);
		topo_free(&t);
	}
	if (parse_str(&t, racks, err, sizeof(err))) {
		tap_ok(0, "two racks parse: %s", err);
	} else {
		x = run(&t, "switchml-rack", &p, 1e6, NULL);
		y = run(&t, "switchml", NULL, 1e6, NULL);
		tap_ok(fabs(x - 10) < 1e-9 && x > 0 &&
		       p.cls[0].root == topo_find(&t, "T1"),
		       "switchml-rack: racks summed at T1 and T2, root T1: "
		       "%.6g = 10", x);
		tap_ok(fabs(y - 5) < 1e-9, "switchml, one switch for all: "
		       "%.6g = 5", y);
		if (x > 0)
			pp_free(&p);
		topo_free(&t);
	}
}

/* atp's rate search counts loads per rack instead of building each plan:
 * the rate it finds must be the simulated rate of the plan it builds, on
 * graphs where racks differ (INA or not, the PS's rack, servers). */
static void test_atp_counts(void)
{
	static const char *topos[] = {
		"fattree:k=8,gbps=100,cap=400,workers=100,ps=1",
		"leafspine:leaves=8,spines=4,hosts=8,gbps=100,oversub=2,ina=2,"
		"cap=1600,ps=8",
		"leafspine:leaves=6,spines=3,hosts=5,gbps=40,oversub=3,ina=4,"
		"cap=90,ps=2" };
	unsigned int i;

	for (i = 0; i < sizeof(topos) / sizeof(topos[0]); i++) {
		struct topo t;
		struct pp_plan p;
		double x;

		if (gen(&t, topos[i])) {
			tap_ok(0, "%s generated", topos[i]);
			continue;
		}
		x = run(&t, "atp", &p, 1e6, NULL);
		tap_ok(x > 0 && fabs(x - p.rate_gbps) < 1e-9 * x,
		       "atp on %s: the rate counted per rack %.9g is the plan's "
		       "simulated %.9g", topos[i], x > 0 ? p.rate_gbps : 0, x);
		if (x > 0)
			pp_free(&p);
		topo_free(&t);
	}
}

static void test_all(void)
{
	static const char *topos[] = { "grid-toy",
		"fattree:k=4,gbps=10,cap=40",
		"leafspine:leaves=4,spines=2,hosts=4,oversub=2,ina=2,cap=40",
		"random:hosts=10,switches=4,seed=5,ina=2,ps=1" };
	const struct pp_planner *pl;
	unsigned int i;

	for (i = 0; i < sizeof(topos) / sizeof(topos[0]); i++) {
		struct topo t;
		double cut;
		int bad = 0, n = 0;

		if (gen(&t, topos[i])) {
			tap_ok(0, "%s generated", topos[i]);
			continue;
		}
		cut = pp_cut_bound(&t, 256);
		for (pl = pp_planners; pl->name; pl++) {
			double x = run(&t, pl->name, NULL, 1e6, NULL);

			n++;
			if (!(x > 0) || x > cut * (1 + 1e-9)) {
				tap_diag("%s on %s: %.6g (cut %.6g)", pl->name,
					 topos[i], x, cut);
				bad++;
			}
		}
		tap_ok(!bad, "%s: all %d planners give a valid plan under the "
		       "cut bound %.4g Gbps", topos[i], n, cut);
		topo_free(&t);
	}
}

static void test_scale(void)
{
	struct topo t;
	struct pp_plan p;
	double x;

	if (gen(&t, "fattree:k=16,gbps=100,cap=400,workers=1000")) {
		tap_ok(0, "1,000-worker fat-tree generated");
		return;
	}
	x = run(&t, "grid", &p, 1e8, NULL);
	tap_ok(x > 0 && p.rate_gbps > 0 && fabs(x - p.rate_gbps) < 1e-9 * x &&
	       p.bound_gbps >= p.rate_gbps,
	       "GRID at 1,000 workers: simulator %.4g = planner %.4g <= bound %.4g",
	       x, x > 0 ? p.rate_gbps : 0, x > 0 ? p.bound_gbps : 0);
	if (x > 0)
		pp_free(&p);
	topo_free(&t);
}

/* Mutated topology files: each is read or refused with a message; every
 * planner on every one read gives a checked plan or a message. */
static void test_fuzz(void)
{
	static const char seed[] =
		"switch name=S1 ina=yes cap=9\nswitch name=S2\nps name=PS\n"
		"host name=W1\nhost name=W2\nhost name=W3\n"
		"link a=W1 b=S1 gbps=10\nlink a=W2 b=S1 gbps=5 back=7\n"
		"link a=W3 b=S2 gbps=10\nlink a=S1 b=S2 gbps=3\n"
		"link a=S2 b=S1 gbps=2\nlink a=PS b=S2 gbps=9\n";
	static const char alphabet[] = "=# \n\tabSWP12390.-xyzlinkhostswitchps";
	uint64_t st = 0x5eed;
	int it, parsed = 0, planned = 0, silent = 0;

	for (it = 0; it < 3000; it++) {
		char text[sizeof(seed) + 64], err[256];
		size_t len = sizeof(seed) - 1;
		int k, edits;
		struct topo t;
		const struct pp_planner *pl;

		memcpy(text, seed, len);
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		edits = 1 + (st >> 61) % 2;
		for (k = 0; k < edits; k++) {
			size_t at;

			st = st * 6364136223846793005ull + 1442695040888963407ull;
			at = (st >> 33) % len;
			switch ((st >> 20) % 5) {
			case 3:	/* a digit for another: other bandwidths */
				if (text[at] >= '0' && text[at] <= '9')
					text[at] = '0' + (st >> 8) % 10;
				break;
			case 4:	/* drop a whole line */
				while (at > 0 && text[at - 1] != '\n')
					at--;
				{
					char *nl = memchr(text + at, '\n', len - at);
					size_t e = nl ? (size_t)(nl - text) + 1 : len;

					memmove(text + at, text + e, len - e);
					len -= e - at;
				}
				if (len == 0)
					len = 1, text[0] = '\n';
				break;
			case 0:	/* replace */
				text[at] = alphabet[(st >> 8) %
						    (sizeof(alphabet) - 1)];
				break;
			case 1:	/* delete */
				memmove(text + at, text + at + 1, len - at - 1);
				len--;
				break;
			default: /* insert */
				if (len + 1 < sizeof(text)) {
					memmove(text + at + 1, text + at,
						len - at);
					text[at] = alphabet[(st >> 8) %
							    (sizeof(alphabet) - 1)];
					len++;
				}
			}
		}
		text[len] = 0;
		err[0] = 0;
		if (parse_str(&t, text, err, sizeof(err))) {
			silent += !err[0];
			topo_free(&t);
			continue;
		}
		parsed++;
		for (pl = pp_planners; pl->name; pl++) {
			struct pp_plan p;
			struct sim_opts o = { .bytes = 1e6 };
			struct sim_res r;
			int ret;

			err[0] = 0;
			pp_init(&p, pl->name);
			ret = pl->plan(&t, NULL, &p, err, sizeof(err));
			if (!ret)
				ret = pp_finish(&t, &p, err, sizeof(err));
			if (!ret) {
				ret = sim_run(&t, &p, &o, &r, err, sizeof(err));
				if (!ret) {
					planned += r.rate_gbps > 0;
					sim_res_free(&r);
				}
			}
			silent += ret && !err[0];
			pp_free(&p);
		}
		topo_free(&t);
	}
	tap_ok(!silent && parsed > 0 && planned > 0,
	       "fuzz: 3000 mutated files, %d read, %d plans simulated, %d "
	       "failures without a message", parsed, planned, silent);
}

/* The event model by hand: two classes (1/4 and 3/4) over one 10 Gbps
 * link A->B share it 5/5 until the small one ends at 0.25 S / 5, then the
 * big one runs alone: the same 8 S / 10 as paced by shares, in 2 events;
 * on the GRID toy ATP's two classes unpaced take longer than paced. */
static void test_fair(void)
{
	static const char text[] = "host name=A\nhost name=B\n"
				   "link a=A b=B gbps=10\n";
	struct sim_opts o = { .bytes = 1e8, .fair = 1 };
	struct topo t;
	struct pp_plan p;
	struct sim_res r;
	char err[256];
	int arc = 0, back = 1, k, ok = 0;
	double want = 8e8 / 10e9;

	if (parse_str(&t, text, err, sizeof(err))) {
		tap_ok(0, "two hosts parse: %s", err);
		return;
	}
	pp_init(&p, "hand");
	for (k = 0; k < 2; k++) {
		struct pp_class *c = pp_class_new(&p, PP_TREE, k ? 0.75 : 0.25);

		c->root = 1;
		pp_xfer_arcs(c, 0, 0, 1, 1, &arc, 1);
		pp_xfer_arcs(c, 1, 1, 0, 1, &back, 1);
	}
	if (!pp_finish(&t, &p, err, sizeof(err)) &&
	    !sim_run(&t, &p, &o, &r, err, sizeof(err))) {
		ok = fabs(r.time_s - want) < 1e-12 &&
		     fabs(r.fair_time_s - want) < 1e-12 && r.fair_events == 2;
		tap_diag("paced %.9f s, fair %.9f s, %d events", r.time_s,
			 r.fair_time_s, r.fair_events);
		sim_res_free(&r);
	} else {
		tap_diag("%s", err);
	}
	tap_ok(ok, "fair model: two classes on one link end at 8 S / B, "
	       "in two events");
	pp_free(&p);
	topo_free(&t);
	ok = 0;
	if (!gen(&t, "grid-toy")) {
		const struct pp_planner *pl = pp_planner_find("ps-ina");

		pp_init(&p, "ps-ina");
		if (!pl->plan(&t, NULL, &p, err, sizeof(err)) &&
		    !pp_finish(&t, &p, err, sizeof(err)) &&
		    !sim_run(&t, &p, &o, &r, err, sizeof(err))) {
			ok = r.fair_time_s > r.time_s * 1.01;
			tap_diag("ATP on the toy: paced %.4f s, fair %.4f s",
				 r.time_s, r.fair_time_s);
			sim_res_free(&r);
		}
		pp_free(&p);
		topo_free(&t);
	}
	tap_ok(ok, "fair model: ATP's classes unpaced take longer than paced");
}

/* min_rate_gbps of `scheme` in rinxctl's JSON, or -1. */
static double json_rate(const char *js, const char *scheme)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\"scheme\":\"%s\"", scheme);
	p = strstr(js, key);
	p = p ? strstr(p, "\"min_rate_gbps\":") : NULL;
	return p ? strtod(p + strlen("\"min_rate_gbps\":"), NULL) : -1;
}

static void test_cli(void)
{
	const char *b = getenv("RINX_BUILD");
	char cmd[512], js[8192], path[] = "/tmp/rinx-sim-XXXXXX";
	size_t n = 0;
	FILE *f;
	int st, fd;

	snprintf(cmd, sizeof(cmd), "%s/rinxctl sim --scenario grid-toy --json",
		 b ? b : "build");
	f = popen(cmd, "r");
	if (f) {
		n = fread(js, 1, sizeof(js) - 1, f);
		st = pclose(f);
	} else {
		st = -1;
	}
	js[n] = 0;
	tap_ok(st == 0 && fabs(json_rate(js, "ps") - 1) < 1e-6 &&
	       fabs(json_rate(js, "ps-ina") - 2.4375) < 1e-4 &&
	       fabs(json_rate(js, "grid") - 3) < 1e-6,
	       "rinxctl sim --scenario grid-toy --json: min_rate_gbps 1, "
	       "2.4375, 3 (exit %d)", st);
	fd = mkstemp(path);
	if (fd < 0 || write(fd, "host name=a\nhost name=b gbps=3\n", 31) != 31) {
		tap_ok(0, "temporary topology file");
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s/rinxctl sim --topo %s 2>&1",
		 b ? b : "build", path);
	f = popen(cmd, "r");
	n = 0;
	if (f) {
		n = fread(js, 1, sizeof(js) - 1, f);
		st = pclose(f);
	} else {
		st = -1;
	}
	js[n] = 0;
	snprintf(cmd, sizeof(cmd), "%s:2: unknown key 'gbps' for host", path);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 3 && strstr(js, cmd),
	       "rinxctl sim --topo with a bad line 2: exit 3, '%s'", cmd);
	unlink(path);
}

/* rinxctl sim ARGS with stdout and stderr into out: the exit code, or -1. */
static int run_sim(const char *args, char *out, size_t len)
{
	const char *b = getenv("RINX_BUILD");
	char cmd[1024];
	size_t n = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s/rinxctl sim %s 2>&1", b ? b : "build",
		 args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The option table's names, ranges, defaults and errors: a bad value
 * exits 2 naming the option; the values at the ends of a range get past
 * the parser (the scenario then refuses the worker count, in its words). */
static const struct {
	const char *args;
	int code;
	const char *says;
} sim_usage_cases[] = {
	{ "--scenario grid-toy --workers 0", 2, "--workers must be 1..100000" },
	{ "--scenario grid-toy --workers 100001", 2,
	  "--workers must be 1..100000" },
	{ "--scenario grid-toy --workers 1", 2, "cannot have 1 workers" },
	{ "--scenario grid-toy --workers 100000", 2,
	  "cannot have 100000 workers" },
	{ "--scenario grid-toy --size 6", 2, "--size must be" },
	{ "--scenario grid-toy --size 0", 2, "--size must be" },
	{ "--scenario grid-toy --compute -0.5", 2, "--compute must be" },
	{ "--scenario grid-toy --hop-us inf", 2, "--hop-us must be" },
	{ "--scenario grid-toy --hop-us -1", 2, "--hop-us must be" },
	{ "--scenario grid-toy --hop-us", 2, "--hop-us needs an argument" },
	{ "--scenario grid-toy --bogus", 2, "unknown option --bogus" },
	{ "--scenario grid-toy extra", 2, "unexpected argument extra" },
	{ "--scheme ring", 2, "give one of --scenario, --topo, --gen" },
	{ "--scenario grid-toy --gen grid-toy", 2, "give one of" },
	{ "--scenario grid-toy --size 4K --compute 0 --hop-us 0 --scheme ring",
	  0, "tensor 4096 bytes" },
	{ "--scenario grid-toy --json --scheme ps", 0,
	  "\"size_bytes\":104857600," },
	{ "--list", 0, "  scale-leafspine " },
	{ "--help", 0, "  --write-topo FILE write the topology" },
};

static void test_cli_usage(void)
{
	char out[8192], args[700];
	size_t i;
	int code;

	for (i = 0; i < sizeof(sim_usage_cases) / sizeof(sim_usage_cases[0]);
	     i++) {
		code = run_sim(sim_usage_cases[i].args, out, sizeof(out));
		tap_ok(code == sim_usage_cases[i].code &&
		       strstr(out, sim_usage_cases[i].says),
		       "rinxctl sim %s: exit %d, '%s' (exit %d)",
		       sim_usage_cases[i].args, sim_usage_cases[i].code,
		       sim_usage_cases[i].says, code);
	}
	/* a scheme list longer than the buffer is refused, not cut short */
	snprintf(args, sizeof(args), "--scenario grid-toy --scheme ");
	while (strlen(args) + 5 < sizeof(args))
		strcat(args, "ring,");
	code = run_sim(args, out, sizeof(out));
	tap_ok(code == 2 && strstr(out, "--scheme: at most 511 characters"),
	       "rinxctl sim --scheme with over 511 characters: exit 2 "
	       "(exit %d)",
	       code);
}

int main(void)
{
	tap_plan(8 + 4 + 14 + 9 + 1 + 3 + 5 + 3 + 4 + 1 + 2 + 1 + 2 + 5 + 19);
	test_toy();
	test_ring();
	test_parser();
	test_forest();
	test_forest_sparse();
	test_single_switch();
	test_deployed();
	test_atp_counts();
	test_generators();
	test_all();
	test_scale();
	test_cli();
	test_cli_usage();
	test_fuzz();
	test_fair();
	return tap_done();
}
