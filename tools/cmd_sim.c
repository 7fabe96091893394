// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinxctl sim: plan an allreduce with any planner on a topology (a file, a
 * generator or a named scenario) and run it in the fluid simulator. No
 * root, no BPF: pure computation.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tools/cmds.h"
#include "tools/gen.h"
#include "tools/opts.h"
#include "tools/proc.h"
#include "user/plan/sim.h"

struct scenario {
	const char *name;
	const char *desc;
	int workers;		/* default */
	const char *schemes;
	const char *paper;	/* the seed paper's figure */
	int (*spec)(char *buf, size_t len, int workers);
};

static int sc_toy(char *b, size_t l, int n)
{
	snprintf(b, l, "grid-toy");
	return n == 8 ? 0 : -EINVAL;
}

static int sc_fat100(char *b, size_t l, int n)
{
	int k = 4;

	/* GRID's setting: one PS, which the PS baseline and ATP's dedicated
	 * sharding get too (ATP's co-located sharding needs none) */
	while (k * k * k / 4 < n)
		k += 2;
	snprintf(b, l, "fattree:k=%d,gbps=100,cap=400,workers=%d,ps=1",
		 k < 8 ? 8 : k, n);
	return 0;
}

static int sc_leaf(char *b, size_t l, int n)
{
	/* 8 racks, 2 of them INA (Rina and ATP get the same switches); one
	 * dedicated server per rack for ATP's and the PS's sharding */
	if (n % 8)
		return -EINVAL;
	snprintf(b, l, "leafspine:leaves=8,spines=4,hosts=%d,gbps=100,"
		 "oversub=2,ina=2,cap=1600,ps=8", n / 8);
	return 0;
}

static int sc_forest(char *b, size_t l, int n)
{
	snprintf(b, l, "random:hosts=%d,deg=6,min=10,max=100,seed=3", n);
	return 0;
}

static int sc_scale(char *b, size_t l, int n)
{
	int k = 4;

	while (k * k * k / 4 < n)
		k += 2;
	snprintf(b, l, "fattree:k=%d,gbps=100,cap=400,workers=%d", k, n);
	return 0;
}

static int sc_scale_ls(char *b, size_t l, int n)
{
	/* racks of 40 workers, 16 spines, 3:1: the leaf-spine of scale */
	int leaves = (n + 39) / 40;

	snprintf(b, l, "leafspine:leaves=%d,spines=16,hosts=%d,gbps=100,"
		 "oversub=3,ina=all,cap=1600", leaves, (n + leaves - 1) / leaves);
	return 0;
}

static const struct scenario scenarios[] = {
	{ "grid-toy", "the GRID paper's example: 8 workers, 3 switches, PS",
	  8, "ps,ps-ina,grid,atp",
	  "GRID (ToN'23) min rate: no INA 1 Gbps, ATP 2.43 Gbps, GRID 3 Gbps",
	  sc_toy },
	{ "grid-fattree", "GRID at 100 workers on a k=8 fat-tree, all switches INA",
	  100, "grid,atp,switchml-rack,ps-ina,switchml,ps",
	  "GRID (ToN'23) aggregation throughput: GRID 465, ATP 148, SwitchML 178 Gbps",
	  sc_fat100 },
	{ "rina-leafspine", "partial INA: 8 racks of a 2:1 leaf-spine, 2 INA ToRs",
	  64, "rina,atp,ps-ina,ps,ring,har",
	  "Rina (ICNP'24): more than 50% over ATP at partial INA deployment",
	  sc_leaf },
	{ "forest-hetero", "a random mesh of workers, 10-100 Gbps links",
	  16, "forest,ring,tree",
	  "topology-adaptive forest (INFOCOM'21): up to 18.3x over ring / tree",
	  sc_forest },
	{ "scale", "every scheme at 1,000 workers on a k=16 fat-tree",
	  1000, "ring,tree,dbtree,har,ps,ps-ina,switchml,rina,grid,forest,atp,"
	  "switchml-rack", NULL, sc_scale },
	{ "scale-leafspine", "every scheme at 1,000 workers on a 3:1 leaf-spine "
	  "of 40-worker racks, all ToRs INA",
	  1000, "ring,tree,dbtree,har,ps,ps-ina,switchml,rina,grid,forest,atp,"
	  "switchml-rack", NULL, sc_scale_ls },
	{ NULL, NULL, 0, NULL, NULL, NULL },
};

struct row {
	const char *scheme;
	struct pp_plan plan;
	struct sim_res res;
	double plan_s;
	int ok;
	char err[256];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* A JSON number; null where the model gives none (one worker: no
 * transfer, an infinite rate). */
static void json_num(const char *key, double v)
{
	if (isfinite(v))
		printf(",\"%s\":%.6g", key, v);
	else
		printf(",\"%s\":null", key);
}

static void json_xfers(const struct topo *t, const char *key,
		       const struct pp_xfer *x, int n)
{
	int i, h;

	printf(",\"%s\":[", key);
	for (i = 0; i < n; i++) {
		printf("%s{\"src\":\"%s\",\"dst\":\"%s\",\"vol\":%.6g,"
		       "\"route\":[", i ? "," : "", t->node[x[i].src].name,
		       t->node[x[i].dst].name, x[i].vol);
		for (h = 0; h < x[i].nhop; h++)
			printf("%s\"%s\"", h ? "," : "",
			       t->node[topo_arc_to(t, x[i].hop[h])].name);
		printf("]}");
	}
	printf("]");
}

/* The plan IR of one scheme: what a data-plane compiler would read.
 * Routes list the nodes after the source. */
static void json_plan(const struct topo *t, const struct pp_plan *p)
{
	int i, j, k;

	printf(",\"plan\":[");
	for (i = 0; i < p->ncls; i++) {
		const struct pp_class *c = &p->cls[i];

		printf("%s{\"kind\":\"%s\",\"share\":%.9g", i ? "," : "",
		       c->kind == PP_RING ? "ring" : "tree", c->share);
		if (c->root >= 0)
			printf(",\"root\":\"%s\"", t->node[c->root].name);
		if (c->kind == PP_RING) {
			printf(",\"members\":[");
			for (j = 0; j < c->nmem; j++)
				printf("%s\"%s\"", j ? "," : "",
				       t->node[c->mem[j]].name);
			printf("]");
		}
		printf(",\"aggregators\":[");
		for (j = 0; j < c->nagg; j++) {
			const struct pp_agg *a = &c->agg[j];

			printf("%s{\"node\":\"%s\",\"self\":%s,\"parent\":",
			       j ? "," : "", t->node[a->node].name,
			       a->self ? "true" : "false");
			if (a->parent >= 0)
				printf("\"%s\"", t->node[a->parent].name);
			else
				printf("null");
			printf(",\"contributors\":[");
			for (k = 0; k < a->ncontrib; k++)
				printf("%s\"%s\"", k ? "," : "",
				       t->node[a->contrib[k]].name);
			printf("]}");
		}
		printf("]");
		json_xfers(t, "reduce", c->red, c->nred);
		json_xfers(t, "broadcast", c->bc, c->nbc);
		json_xfers(t, "ring", c->ring, c->nring);
		printf("}");
	}
	printf("]");
}

static int cmp_load(const void *a, const void *b, void *ctx)
{
	const double *u = ctx;
	double x = u[*(const int *)a], y = u[*(const int *)b];

	return x < y ? 1 : x > y ? -1 : 0;
}

static int write_plot(const char *png, const char *title, struct row *rows,
		      int nr)
{
	char dir[] = "/tmp/rinx-sim-XXXXXX", dat[64], gp[64];
	FILE *f;
	int i, st;
	pid_t pid;

	if (!proc_in_path("gnuplot")) {
		fprintf(stderr, "rinxctl sim: --plot needs gnuplot (Debian "
			"gnuplot-nox; tools/deps.sh plot installs it)\n");
		return -ENOENT;
	}
	if (!mkdtemp(dir))
		return -errno;
	snprintf(dat, sizeof(dat), "%s/rate.dat", dir);
	snprintf(gp, sizeof(gp), "%s/rate.gp", dir);
	f = fopen(dat, "w");
	if (!f)
		return -errno;
	for (i = 0; i < nr; i++)
		if (rows[i].ok)
			fprintf(f, "\"%s\" %.6f\n", rows[i].scheme,
				rows[i].res.rate_gbps);
	fclose(f);
	f = fopen(gp, "w");
	if (!f)
		return -errno;
	fprintf(f, "set terminal png size 900,560 noenhanced\n"
		"set output '%s'\nset title '%s'\nset style fill solid 0.6\n"
		"set boxwidth 0.6\nset ylabel 'rate per worker, Gbps'\n"
		"set yrange [0:*]\nset offsets 0.5, 0.5, graph 0.12, 0\n"
		"set grid ytics\n"
		"plot '%s' using 0:2:xtic(1) with boxes notitle, '' using "
		"0:2:(sprintf('%%.3g', $2)) with labels offset 0,1 notitle\n",
		png, title, dat);
	fclose(f);
	pid = fork();
	if (pid == 0) {
		execlp("gnuplot", "gnuplot", gp, (char *)NULL);
		_exit(127);
	}
	st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	unlink(dat);
	unlink(gp);
	rmdir(dir);
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "rinxctl sim: gnuplot failed\n");
		return -EIO;
	}
	fprintf(stderr, "rinxctl sim: wrote %s\n", png);
	return 0;
}

static void list_all(void)
{
	const struct scenario *s;
	const struct pp_planner *p;

	printf("scenarios:\n");
	for (s = scenarios; s->name; s++)
		printf("  %-15s %s (%d workers; %s)\n", s->name, s->desc,
		       s->workers, s->schemes);
	printf("schemes:\n");
	for (p = pp_planners; p->name; p++)
		printf("  %-15s %s\n", p->name, p->desc);
}

#define SIM_SCHEMES_LEN	512

/* What the command line asks for. */
struct sim_args {
	const char *scen, *topo_file, *gen, *plot, *wtopo;
	char schemes[SIM_SCHEMES_LEN];
	int workers, links, json, dump, list;
	uint64_t size;
	double compute_ms, hop_us;
	struct sim_opts so;
};

/* What the simulation found: one row per scheme, on topology t. */
struct sim_out {
	const char *name;		/* scenario, file or generator */
	const struct scenario *sc;	/* NULL: not a scenario */
	struct topo t;
	struct row rows[32];
	int nr;
	double cut;			/* the cut bound; 0: none */
};

static int sim_opt_size(const char *arg, void *field, char *why, size_t len)
{
	uint64_t v;

	(void)why;
	(void)len;
	if (gen_parse_sizes(arg, &v, 1) != 1 || !v)
		return -1;
	*(uint64_t *)field = v;
	return 0;
}

/* a longer list would be cut short, naming other schemes than asked */
static int sim_opt_schemes(const char *arg, void *field, char *why,
			   size_t len)
{
	if (strlen(arg) >= SIM_SCHEMES_LEN) {
		snprintf(why, len, "at most %d characters",
			 SIM_SCHEMES_LEN - 1);
		return -1;
	}
	snprintf(field, SIM_SCHEMES_LEN, "%s", arg);
	return 0;
}

#define S_AT(m) OPT_AT(struct sim_args, m)

static const struct opt sim_opts_tab[] = {
	{ OPT_TEXT, .help =
"Plan an allreduce with each scheme and run it in the fluid simulator: all\n"
"transfers of a plan stream at once, classes in proportion to their shares;\n"
"links (per direction) and aggregating switches (their capacity) limit the\n"
"common rate. No root needed.\n" },
	{ OPT_STR, "scenario", 0, "NAME", S_AT(scen),
	  .help = "a built-in setup with the seed paper's figure beside\n"
		  "ours: grid-toy, grid-fattree, rina-leafspine,\n"
		  "forest-hetero, scale, scale-leafspine (--list shows\n"
		  "them)" },
	{ OPT_STR, "topo", 0, "FILE", S_AT(topo_file),
	  .help = "a topology file (format in docs/sim.md)" },
	{ OPT_STR, "gen", 0, "SPEC", S_AT(gen),
	  .help = "a generated topology: grid-toy, fattree:k=8,...,\n"
		  "leafspine:..., random:... (docs/sim.md)" },
	{ OPT_FN, "scheme", 0, "LIST", S_AT(schemes),
	  .parse = sim_opt_schemes,
	  .help = "comma-separated: ring,tree,dbtree,har,ps,ps-ina,\n"
		  "switchml,rina,grid,forest,atp,switchml-rack (default:\n"
		  "the scenario's, or all that apply)" },
	{ OPT_FN, "size", 0, "BYTES", S_AT(size), .parse = sim_opt_size,
	  .def = "100M",
	  .range = "a nonzero multiple of 4 bytes (suffix K, M, G)",
	  .help = "tensor size, a multiple of 4, suffixes K M G\n"
		  "(default {})" },
	{ OPT_INT, "workers", 0, "N", S_AT(workers), .min = 1,
	  .max = 100000,
	  .help = "scenario size (default: the scenario's)" },
	{ OPT_DOUBLE, "compute", 0, "MS", S_AT(compute_ms), .dmin = 0,
	  .dmax = DBL_MAX, .range = "a number of ms >= 0",
	  .help = "compute time of an iteration, added to the allreduce" },
	{ OPT_FLAG, "fair", 0, S_AT(so.fair),
	  .help = "also run the classes as independent flows sharing\n"
		  "links max-min fairly, event by event (fair ms)" },
	{ OPT_DOUBLE, "hop-us", 0, "US", S_AT(hop_us), .dmin = 0,
	  .dmax = DBL_MAX, .def = "0", .range = "a number of us >= 0",
	  .help = "latency of one step (alpha): time adds US for every\n"
		  "step of the plan's longest chain (default {})" },
	{ OPT_FLAG, "links", 0, S_AT(links),
	  .help = "per-link loads (table: busiest 10; JSON: all)" },
	{ OPT_FLAG, "plan", 0, S_AT(dump),
	  .help = "with --json: each scheme's plan (classes, shares,\n"
		  "aggregators and contributors, routes)" },
	{ OPT_FLAG, "json", 0, S_AT(json),
	  .help = "one JSON object on stdout" },
	{ OPT_STR, "plot", 0, "FILE.png", S_AT(plot),
	  .help = "bar chart of the rate per scheme (gnuplot; Debian\n"
		  "gnuplot-nox, tools/deps.sh plot installs it)" },
	{ OPT_STR, "write-topo", 0, "FILE", S_AT(wtopo),
	  .help = "write the topology in the file format" },
	{ OPT_FLAG, "list", 0, S_AT(list),
	  .help = "scenarios and schemes" },
	{ OPT_TEXT, .help =
"Columns: rate = every worker's gradient rate (min_rate_gbps), push = the\n"
"same counting the reduce alone (the papers' sending rate), time = one\n"
"allreduce (8 x size / rate + steps x hop), aggtput = workers x rate,\n"
"bottleneck = the link direction or switch (agg) that limits it, cut = rate\n"
"/ the allreduce cut bound (up to 256 workers).\n" },
	{ OPT_END },
};

static const struct opts_cmd sim_cmd = {
	.name = "sim",
	.synopsis = "(--scenario NAME | --topo FILE | --gen SPEC) [options]",
	.tab = sim_opts_tab, .col = 20,
};

/* -1: go on; else the exit code (0 after --help or --list). */
static int sim_parse(int argc, char **argv, struct sim_args *a)
{
	int ret = opts_parse(&sim_cmd, argc, argv, a, NULL);

	if (ret)
		return opts_exit(ret);
	if (a->list) {
		list_all();
		return 0;
	}
	if (!!a->scen + !!a->topo_file + !!a->gen != 1) {
		fprintf(stderr, "rinxctl sim: give one of --scenario, --topo, "
			"--gen\n");
		opts_help(stderr, &sim_cmd);
		return RINX_EXIT_USAGE;
	}
	a->so.bytes = a->size;
	a->so.compute_s = a->compute_ms / 1e3;
	a->so.hop_s = a->hop_us / 1e6;
	return -1;
}

/* The scenario's generator spec (into spec) and schemes, when one is
 * named: 0 or the exit code. */
static int sim_scenario(struct sim_args *a, struct sim_out *o, char *spec,
			size_t len)
{
	const struct scenario *sc;

	if (!a->scen) {
		if (!a->workers)
			return 0;
		fprintf(stderr,
			"rinxctl sim: --workers goes with --scenario\n");
		return RINX_EXIT_USAGE;
	}
	for (sc = scenarios; sc->name && strcmp(sc->name, a->scen); sc++)
		;
	if (!sc->name) {
		fprintf(stderr, "rinxctl sim: unknown scenario '%s' "
			"(--list)\n", a->scen);
		return RINX_EXIT_USAGE;
	}
	if (sc->spec(spec, len, a->workers ? a->workers : sc->workers)) {
		fprintf(stderr, "rinxctl sim: scenario %s cannot have "
			"%d workers\n", sc->name, a->workers);
		return RINX_EXIT_USAGE;
	}
	a->gen = spec;
	if (!a->schemes[0])
		snprintf(a->schemes, sizeof(a->schemes), "%s", sc->schemes);
	o->sc = sc;
	return 0;
}

/* Every planner that applies to topology t, comma-separated. */
static void sim_all_schemes(const struct topo *t, char *schemes, size_t len)
{
	const struct pp_planner *p;
	int i, ina = 0, loose = 0;

	for (i = 0; i < t->nnodes; i++)
		ina |= t->node[i].ina && t->node[i].cap > 0;
	for (i = 0; i < t->nhosts; i++)
		loose |= t->node[t->hosts[i]].tor < 0;
	for (p = pp_planners; p->name; p++) {
		if ((!strcmp(p->name, "ps") || !strcmp(p->name, "ps-ina") ||
		     !strcmp(p->name, "grid")) && !t->nps)
			continue;
		if (!strncmp(p->name, "switchml", 8) && !ina)
			continue;
		if (!strcmp(p->name, "atp") && loose)
			continue;
		snprintf(schemes + strlen(schemes), len - strlen(schemes),
			 "%s%s", schemes[0] ? "," : "", p->name);
	}
}

/* The topology the arguments name, written out with --write-topo. 0 or
 * the exit code. */
static int sim_topo(struct sim_args *a, struct sim_out *o, char *spec,
		    size_t len)
{
	char err[512];
	FILE *f;
	int ret;

	ret = sim_scenario(a, o, spec, len);
	if (ret)
		return ret;
	o->name = o->sc ? o->sc->name : a->topo_file ? a->topo_file : a->gen;
	ret = a->topo_file ? topo_load(a->topo_file, &o->t, err, sizeof(err)) :
			     topo_generate(a->gen, &o->t, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "rinxctl sim: %s\n", err);
		return RINX_EXIT_CONFIG;
	}
	if (a->wtopo) {
		f = fopen(a->wtopo, "w");
		if (!f) {
			fprintf(stderr, "rinxctl sim: %s: %s\n", a->wtopo,
				strerror(errno));
			return RINX_EXIT_FAIL;
		}
		topo_write(f, &o->t);
		fclose(f);
	}
	if (!a->schemes[0])
		sim_all_schemes(&o->t, a->schemes, sizeof(a->schemes));
	return 0;
}

/* Plans and simulates one scheme into r; its failure stays in r. */
static void sim_scheme(struct topo *t, const struct pp_planner *pl,
		       const struct sim_opts *so, struct row *r)
{
	double t0 = now_s();
	int ret;

	memset(r, 0, sizeof(*r));
	r->scheme = pl->name;
	pp_init(&r->plan, pl->name);
	ret = pl->plan(t, NULL, &r->plan, r->err, sizeof(r->err));
	if (!ret)
		ret = pp_finish(t, &r->plan, r->err, sizeof(r->err));
	if (!ret)
		ret = sim_run(t, &r->plan, so, &r->res, r->err, sizeof(r->err));
	r->plan_s = now_s() - t0;
	r->ok = !ret;
	if (ret && !r->err[0])
		snprintf(r->err, sizeof(r->err), "%s", strerror(-ret));
}

/* Every scheme of a->schemes on o->t: 0, or the exit code of a scheme
 * that is not known or one too many. */
static int sim_compute(struct sim_args *a, struct sim_out *o)
{
	char *save = NULL, *tok;

	for (tok = strtok_r(a->schemes, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		const struct pp_planner *pl = pp_planner_find(tok);

		if (!pl) {
			fprintf(stderr, "rinxctl sim: unknown scheme '%s' "
				"(--list)\n", tok);
			return RINX_EXIT_USAGE;
		}
		if (o->nr == (int)(sizeof(o->rows) / sizeof(o->rows[0]))) {
			fprintf(stderr, "rinxctl sim: at most %d schemes\n",
				o->nr);
			return RINX_EXIT_USAGE;
		}
		sim_scheme(&o->t, pl, &a->so, &o->rows[o->nr++]);
	}
	o->cut = pp_cut_bound(&o->t, 256);
	return 0;
}

static void json_links(const struct topo *t, const struct sim_res *res)
{
	char b[96];
	int k;

	printf(",\"links\":[");
	for (k = 0; k < 2 * t->nlinks; k++)
		printf("%s{\"arc\":\"%s\",\"gbps\":%.6g,\"util\":%.4f}",
		       k ? "," : "", topo_arc_name(t, k, b, sizeof(b)),
		       res->arc_gbps[k],
		       res->arc_gbps[k] / topo_arc_gbps(t, k));
	printf("]");
}

static void json_row(const struct sim_args *a, const struct sim_out *o,
		     const struct row *r)
{
	const struct topo *t = &o->t;
	char b[96];
	int k;

	json_num("min_rate_gbps", r->res.rate_gbps);
	json_num("push_rate_gbps", r->res.push_gbps);
	json_num("time_s", r->res.time_s);
	json_num("iter_s", r->res.iter_s);
	json_num("agg_tput_gbps", r->res.agg_tput_gbps);
	json_num("ina_gbps", r->res.ina_gbps);
	if (a->so.fair)
		json_num("fair_time_s", r->res.fair_time_s);
	printf(",\"bottleneck\":");
	json_str(sim_bott_name(t, &r->res, b, sizeof(b)));
	json_num("tx_min_gbps", r->res.tx_min);
	json_num("tx_max_gbps", r->res.tx_max);
	printf(",\"classes\":%d,\"steps\":%d,\"plan_s\":%.4g",
	       r->plan.ncls, r->res.steps, r->plan_s);
	if (r->plan.rate_gbps > 0)
		printf(",\"planner_rate_gbps\":%.6g", r->plan.rate_gbps);
	if (r->plan.bound_gbps > 0)
		printf(",\"planner_bound_gbps\":%.6g", r->plan.bound_gbps);
	if (o->cut > 0)
		json_num("cut_ratio", r->res.rate_gbps / o->cut);
	printf(",\"note\":");
	json_str(r->plan.note);
	if (t->nhosts <= 64) {
		printf(",\"tx_gbps\":{");
		for (k = 0; k < t->nhosts; k++)
			printf("%s\"%s\":%.6g", k ? "," : "",
			       t->node[t->hosts[k]].name, r->res.tx_gbps[k]);
		printf("}");
	}
	if (a->dump)
		json_plan(t, &r->plan);
	if (a->links)
		json_links(t, &r->res);
}

static void print_json(const struct sim_args *a, const struct sim_out *o)
{
	const struct topo *t = &o->t;
	int i;

	printf("{\"scenario\":");
	json_str(o->name);
	printf(",\"topology\":{\"nodes\":%d,\"workers\":%d,\"links\":%d,"
	       "\"ps\":%d},\"size_bytes\":%llu,\"compute_s\":%g",
	       t->nnodes, t->nhosts, t->nlinks, t->nps,
	       (unsigned long long)a->size, a->so.compute_s);
	if (o->cut > 0)
		printf(",\"cut_bound_gbps\":%.6g", o->cut);
	if (o->sc && o->sc->paper) {
		printf(",\"paper\":");
		json_str(o->sc->paper);
	}
	printf(",\"schemes\":[");
	for (i = 0; i < o->nr; i++) {
		const struct row *r = &o->rows[i];

		printf("%s{\"scheme\":\"%s\",\"ok\":%s", i ? "," : "",
		       r->scheme, r->ok ? "true" : "false");
		if (!r->ok) {
			printf(",\"error\":");
			json_str(r->err);
		} else {
			json_row(a, o, r);
		}
		printf("}");
	}
	printf("]}\n");
}

/* The ten busiest link directions of a scheme. */
static void table_links(const struct topo *t, const struct sim_res *res)
{
	int na = 2 * t->nlinks, *ix = malloc(na * sizeof(int)), k;
	double *u = malloc(na * sizeof(double));
	char b[96];

	if (!ix || !u) {
		free(ix);
		free(u);
		return;
	}
	for (k = 0; k < na; k++) {
		ix[k] = k;
		u[k] = res->arc_gbps[k] / topo_arc_gbps(t, k);
	}
	qsort_r(ix, na, sizeof(int), cmp_load, u);
	for (k = 0; k < na && k < 10 && u[ix[k]] > 0; k++)
		printf("    %-20s %9.4g Gbps %5.1f%%\n",
		       topo_arc_name(t, ix[k], b, sizeof(b)),
		       res->arc_gbps[ix[k]], 100 * u[ix[k]]);
	free(ix);
	free(u);
}

static void table_row(const struct sim_args *a, const struct sim_out *o,
		      const struct row *r)
{
	char b[96], cr[16] = "-";

	if (!r->ok) {
		printf("%-13s error: %s\n", r->scheme, r->err);
		return;
	}
	if (o->cut > 0)
		snprintf(cr, sizeof(cr), "%.3f", r->res.rate_gbps / o->cut);
	printf("%-13s %10.4g %9.4g %11.4g ", r->scheme, r->res.rate_gbps,
	       r->res.push_gbps,
	       1e3 * (a->compute_ms > 0 ? r->res.iter_s : r->res.time_s));
	if (a->so.fair)
		printf("%9.4g ", 1e3 * (r->res.fair_time_s + a->so.compute_s));
	printf("%11.5g %-16s %6s %8.3f  %s\n", r->res.agg_tput_gbps,
	       sim_bott_name(&o->t, &r->res, b, sizeof(b)), cr, r->plan_s,
	       r->plan.note);
	if (a->links)
		table_links(&o->t, &r->res);
}

static void print_table(const struct sim_args *a, const struct sim_out *o)
{
	const struct topo *t = &o->t;
	int i;

	printf("topology: %d nodes, %d workers, %d links, %d ps; "
	       "tensor %llu bytes", t->nnodes, t->nhosts, t->nlinks, t->nps,
	       (unsigned long long)a->size);
	if (o->cut > 0)
		printf("; cut bound %.4g Gbps", o->cut);
	printf("\n");
	if (o->sc && o->sc->paper)
		printf("paper: %s\n", o->sc->paper);
	printf("%-13s %10s %9s %11s ", "scheme", "rate Gbps", "push",
	       a->compute_ms > 0 ? "iter ms" : "time ms");
	if (a->so.fair)
		printf("%9s ", "fair ms");
	printf("%11s %-16s %6s %8s  %s\n", "aggtput", "bottleneck",
	       "cut", "plan s", "planner");
	for (i = 0; i < o->nr; i++)
		table_row(a, o, &o->rows[i]);
}

int cmd_sim(int argc, char **argv)
{
	struct sim_args a = { 0 };
	struct sim_out *o;
	char spec[256], title[160];
	int i, ret;

	ret = sim_parse(argc, argv, &a);
	if (ret >= 0)
		return ret;
	o = calloc(1, sizeof(*o));
	if (!o)
		return RINX_EXIT_FAIL;
	topo_init(&o->t);
	ret = sim_topo(&a, o, spec, sizeof(spec));
	if (!ret)
		ret = sim_compute(&a, o);
	if (ret)
		goto out;
	if (a.json)
		print_json(&a, o);
	else
		print_table(&a, o);
	if (a.plot) {
		snprintf(title, sizeof(title), "%s: %d workers", o->name,
			 o->t.nhosts);
		if (write_plot(a.plot, title, o->rows, o->nr))
			ret = RINX_EXIT_FAIL;
	}
	for (i = 0; i < o->nr; i++)
		if (!o->rows[i].ok && !ret)
			ret = RINX_EXIT_FAIL;
out:
	for (i = 0; i < o->nr; i++) {
		pp_free(&o->rows[i].plan);
		sim_res_free(&o->rows[i].res);
	}
	topo_free(&o->t);
	free(o);
	return ret;
}
