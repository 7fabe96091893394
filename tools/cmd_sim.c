// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinxctl sim: plan an allreduce with any planner on a topology (a file, a
 * generator or a named scenario) and run it in the fluid simulator. No
 * root, no BPF: pure computation.
 */
#include <errno.h>
#include <getopt.h>
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

static const char sim_usage[] =
"(--scenario NAME | --topo FILE | --gen SPEC) [options]\n"
"Plan an allreduce with each scheme and run it in the fluid simulator: all\n"
"transfers of a plan stream at once, classes in proportion to their shares;\n"
"links (per direction) and aggregating switches (their capacity) limit the\n"
"common rate. No root needed.\n"
"  --scenario NAME   a built-in setup with the seed paper's figure beside\n"
"                    ours: grid-toy, grid-fattree, rina-leafspine,\n"
"                    forest-hetero, scale, scale-leafspine (--list shows\n"
"                    them)\n"
"  --topo FILE       a topology file (format in docs/sim.md)\n"
"  --gen SPEC        a generated topology: grid-toy, fattree:k=8,...,\n"
"                    leafspine:..., random:... (docs/sim.md)\n"
"  --scheme LIST     comma-separated: ring,tree,dbtree,har,ps,ps-ina,\n"
"                    switchml,rina,grid,forest,atp,switchml-rack (default:\n"
"                    the scenario's, or all that apply)\n"
"  --size BYTES      tensor size, a multiple of 4, suffixes K M G\n"
"                    (default 100M)\n"
"  --workers N       scenario size (default: the scenario's)\n"
"  --compute MS      compute time of an iteration, added to the allreduce\n"
"  --fair            also run the classes as independent flows sharing\n"
"                    links max-min fairly, event by event (fair ms)\n"
"  --hop-us US       latency of one step (alpha): time adds US for every\n"
"                    step of the plan's longest chain (default 0)\n"
"  --links           per-link loads (table: busiest 10; JSON: all)\n"
"  --plan            with --json: each scheme's plan (classes, shares,\n"
"                    aggregators and contributors, routes)\n"
"  --json            one JSON object on stdout\n"
"  --plot FILE.png   bar chart of the rate per scheme (gnuplot; Debian\n"
"                    gnuplot-nox, tools/deps.sh plot installs it)\n"
"  --write-topo FILE write the topology in the file format\n"
"  --list            scenarios and schemes\n"
"Columns: rate = every worker's gradient rate (min_rate_gbps), push = the\n"
"same counting the reduce alone (the papers' sending rate), time = one\n"
"allreduce (8 x size / rate + steps x hop), aggtput = workers x rate,\n"
"bottleneck = the link direction or switch (agg) that limits it, cut = rate\n"
"/ the allreduce cut bound (up to 256 workers).\n";

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

enum { O_SCEN = 256, O_TOPO, O_GEN, O_SCHEME, O_SIZE, O_WORKERS, O_COMPUTE,
       O_LINKS, O_JSON, O_PLOT, O_WRITE, O_LIST, O_HELP, O_HOP, O_PLAN,
       O_FAIR };

int cmd_sim(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "scenario", required_argument, NULL, O_SCEN },
		{ "topo", required_argument, NULL, O_TOPO },
		{ "gen", required_argument, NULL, O_GEN },
		{ "scheme", required_argument, NULL, O_SCHEME },
		{ "size", required_argument, NULL, O_SIZE },
		{ "workers", required_argument, NULL, O_WORKERS },
		{ "compute", required_argument, NULL, O_COMPUTE },
		{ "hop-us", required_argument, NULL, O_HOP },
		{ "links", no_argument, NULL, O_LINKS },
		{ "plan", no_argument, NULL, O_PLAN },
		{ "fair", no_argument, NULL, O_FAIR },
		{ "json", no_argument, NULL, O_JSON },
		{ "plot", required_argument, NULL, O_PLOT },
		{ "write-topo", required_argument, NULL, O_WRITE },
		{ "list", no_argument, NULL, O_LIST },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *scen = NULL, *topo_file = NULL, *gen = NULL, *plot = NULL;
	const char *wtopo = NULL;
	const struct scenario *sc = NULL;
	char schemes[512] = "", spec[256], err[512], *save = NULL, *tok;
	int workers = 0, links = 0, json = 0, dump = 0, c, nr = 0, i, ret = 0;
	uint64_t size = 100ull << 20;
	double compute_ms = 0, hop_us = 0, cut, t0;
	struct sim_opts so = { 0 };
	struct row rows[32];
	struct topo t;
	char *end;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_SCEN: scen = optarg; break;
		case O_TOPO: topo_file = optarg; break;
		case O_GEN: gen = optarg; break;
		case O_SCHEME:
			snprintf(schemes, sizeof(schemes), "%s", optarg);
			break;
		case O_SIZE:
			if (gen_parse_sizes(optarg, &size, 1) != 1 || !size) {
				fprintf(stderr, "rinxctl sim: bad --size %s\n",
					optarg);
				return RINX_EXIT_USAGE;
			}
			break;
		case O_WORKERS:
			workers = strtol(optarg, &end, 10);
			if (*end || workers < 1 || workers > 100000) {
				fprintf(stderr, "rinxctl sim: bad --workers %s\n",
					optarg);
				return RINX_EXIT_USAGE;
			}
			break;
		case O_COMPUTE:
			compute_ms = strtod(optarg, &end);
			if (*end || !(compute_ms >= 0) || !isfinite(compute_ms)) {
				fprintf(stderr, "rinxctl sim: bad --compute %s\n",
					optarg);
				return RINX_EXIT_USAGE;
			}
			break;
		case O_HOP:
			hop_us = strtod(optarg, &end);
			if (*end || !(hop_us >= 0) || !isfinite(hop_us)) {
				fprintf(stderr, "rinxctl sim: bad --hop-us %s\n",
					optarg);
				return RINX_EXIT_USAGE;
			}
			break;
		case O_LINKS: links = 1; break;
		case O_PLAN: dump = 1; break;
		case O_FAIR: so.fair = 1; break;
		case O_JSON: json = 1; break;
		case O_PLOT: plot = optarg; break;
		case O_WRITE: wtopo = optarg; break;
		case O_LIST: list_all(); return 0;
		case 'h':
		case O_HELP:
			printf("usage: rinxctl sim %s", sim_usage);
			return 0;
		default:
			fprintf(stderr, "usage: rinxctl sim %s", sim_usage);
			return RINX_EXIT_USAGE;
		}
	}
	if (optind < argc || !!scen + !!topo_file + !!gen != 1) {
		fprintf(stderr, "rinxctl sim: give one of --scenario, --topo, "
			"--gen\nusage: rinxctl sim %s", sim_usage);
		return RINX_EXIT_USAGE;
	}
	topo_init(&t);
	if (scen) {
		for (sc = scenarios; sc->name && strcmp(sc->name, scen); sc++)
			;
		if (!sc->name) {
			fprintf(stderr, "rinxctl sim: unknown scenario '%s' "
				"(--list)\n", scen);
			return RINX_EXIT_USAGE;
		}
		if (sc->spec(spec, sizeof(spec), workers ? workers : sc->workers)) {
			fprintf(stderr, "rinxctl sim: scenario %s cannot have "
				"%d workers\n", sc->name, workers);
			return RINX_EXIT_USAGE;
		}
		gen = spec;
		if (!schemes[0])
			snprintf(schemes, sizeof(schemes), "%s", sc->schemes);
	} else if (workers) {
		fprintf(stderr, "rinxctl sim: --workers goes with --scenario\n");
		return RINX_EXIT_USAGE;
	}
	ret = topo_file ? topo_load(topo_file, &t, err, sizeof(err)) :
			  topo_generate(gen, &t, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "rinxctl sim: %s\n", err);
		topo_free(&t);
		return RINX_EXIT_CONFIG;
	}
	if (wtopo) {
		FILE *f = fopen(wtopo, "w");

		if (!f) {
			fprintf(stderr, "rinxctl sim: %s: %s\n", wtopo,
				strerror(errno));
			topo_free(&t);
			return RINX_EXIT_FAIL;
		}
		topo_write(f, &t);
		fclose(f);
	}
	if (!schemes[0]) {
		const struct pp_planner *p;
		int ina = 0, loose = 0;

		for (i = 0; i < t.nnodes; i++)
			ina |= t.node[i].ina && t.node[i].cap > 0;
		for (i = 0; i < t.nhosts; i++)
			loose |= t.node[t.hosts[i]].tor < 0;
		for (p = pp_planners; p->name; p++) {
			/* all that apply to this topology */
			if ((!strcmp(p->name, "ps") || !strcmp(p->name, "ps-ina") ||
			     !strcmp(p->name, "grid")) && !t.nps)
				continue;
			if (!strncmp(p->name, "switchml", 8) && !ina)
				continue;
			if (!strcmp(p->name, "atp") && loose)
				continue;
			strcat(schemes, schemes[0] ? "," : "");
			strcat(schemes, p->name);
		}
	}
	so.bytes = size;
	so.compute_s = compute_ms / 1e3;
	so.hop_s = hop_us / 1e6;
	for (tok = strtok_r(schemes, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		const struct pp_planner *pl = pp_planner_find(tok);
		struct row *r;

		if (!pl) {
			fprintf(stderr, "rinxctl sim: unknown scheme '%s' "
				"(--list)\n", tok);
			ret = RINX_EXIT_USAGE;
			goto out;
		}
		if (nr == (int)(sizeof(rows) / sizeof(rows[0]))) {
			fprintf(stderr, "rinxctl sim: at most %d schemes\n", nr);
			ret = RINX_EXIT_USAGE;
			goto out;
		}
		r = &rows[nr++];
		memset(r, 0, sizeof(*r));
		r->scheme = pl->name;
		pp_init(&r->plan, pl->name);
		t0 = now_s();
		ret = pl->plan(&t, NULL, &r->plan, r->err, sizeof(r->err));
		if (!ret)
			ret = pp_finish(&t, &r->plan, r->err, sizeof(r->err));
		if (!ret)
			ret = sim_run(&t, &r->plan, &so, &r->res, r->err,
				      sizeof(r->err));
		r->plan_s = now_s() - t0;
		r->ok = !ret;
		if (ret && !r->err[0])
			snprintf(r->err, sizeof(r->err), "%s", strerror(-ret));
		ret = 0;
	}
	cut = pp_cut_bound(&t, 256);
	if (json) {
		printf("{\"scenario\":");
		json_str(sc ? sc->name : topo_file ? topo_file : gen);
		printf(",\"topology\":{\"nodes\":%d,\"workers\":%d,\"links\":%d,"
		       "\"ps\":%d},\"size_bytes\":%llu,\"compute_s\":%g",
		       t.nnodes, t.nhosts, t.nlinks, t.nps,
		       (unsigned long long)size, so.compute_s);
		if (cut > 0)
			printf(",\"cut_bound_gbps\":%.6g", cut);
		if (sc && sc->paper) {
			printf(",\"paper\":");
			json_str(sc->paper);
		}
		printf(",\"schemes\":[");
		for (i = 0; i < nr; i++) {
			struct row *r = &rows[i];
			char b[96];
			int k;

			printf("%s{\"scheme\":\"%s\",\"ok\":%s", i ? "," : "",
			       r->scheme, r->ok ? "true" : "false");
			if (!r->ok) {
				printf(",\"error\":");
				json_str(r->err);
				printf("}");
				continue;
			}
			json_num("min_rate_gbps", r->res.rate_gbps);
			json_num("push_rate_gbps", r->res.push_gbps);
			json_num("time_s", r->res.time_s);
			json_num("iter_s", r->res.iter_s);
			json_num("agg_tput_gbps", r->res.agg_tput_gbps);
			json_num("ina_gbps", r->res.ina_gbps);
			if (so.fair)
				json_num("fair_time_s", r->res.fair_time_s);
			printf(",\"bottleneck\":");
			json_str(sim_bott_name(&t, &r->res, b, sizeof(b)));
			json_num("tx_min_gbps", r->res.tx_min);
			json_num("tx_max_gbps", r->res.tx_max);
			printf(",\"classes\":%d,\"steps\":%d,\"plan_s\":%.4g",
			       r->plan.ncls, r->res.steps, r->plan_s);
			if (r->plan.rate_gbps > 0)
				printf(",\"planner_rate_gbps\":%.6g",
				       r->plan.rate_gbps);
			if (r->plan.bound_gbps > 0)
				printf(",\"planner_bound_gbps\":%.6g",
				       r->plan.bound_gbps);
			if (cut > 0)
				json_num("cut_ratio", r->res.rate_gbps / cut);
			printf(",\"note\":");
			json_str(r->plan.note);
			if (t.nhosts <= 64) {
				printf(",\"tx_gbps\":{");
				for (k = 0; k < t.nhosts; k++)
					printf("%s\"%s\":%.6g", k ? "," : "",
					       t.node[t.hosts[k]].name,
					       r->res.tx_gbps[k]);
				printf("}");
			}
			if (dump)
				json_plan(&t, &r->plan);
			if (links) {
				printf(",\"links\":[");
				for (k = 0; k < 2 * t.nlinks; k++)
					printf("%s{\"arc\":\"%s\",\"gbps\":%.6g,"
					       "\"util\":%.4f}", k ? "," : "",
					       topo_arc_name(&t, k, b, sizeof(b)),
					       r->res.arc_gbps[k],
					       r->res.arc_gbps[k] /
					       topo_arc_gbps(&t, k));
				printf("]");
			}
			printf("}");
		}
		printf("]}\n");
	} else {
		printf("topology: %d nodes, %d workers, %d links, %d ps; "
		       "tensor %llu bytes", t.nnodes, t.nhosts, t.nlinks, t.nps,
		       (unsigned long long)size);
		if (cut > 0)
			printf("; cut bound %.4g Gbps", cut);
		printf("\n");
		if (sc && sc->paper)
			printf("paper: %s\n", sc->paper);
		printf("%-13s %10s %9s %11s ", "scheme", "rate Gbps", "push",
		       compute_ms > 0 ? "iter ms" : "time ms");
		if (so.fair)
			printf("%9s ", "fair ms");
		printf("%11s %-16s %6s %8s  %s\n", "aggtput", "bottleneck",
		       "cut", "plan s", "planner");
		for (i = 0; i < nr; i++) {
			struct row *r = &rows[i];
			char b[96], cr[16] = "-";

			if (!r->ok) {
				printf("%-13s error: %s\n", r->scheme, r->err);
				continue;
			}
			if (cut > 0)
				snprintf(cr, sizeof(cr), "%.3f",
					 r->res.rate_gbps / cut);
			printf("%-13s %10.4g %9.4g %11.4g ", r->scheme,
			       r->res.rate_gbps, r->res.push_gbps,
			       1e3 * (compute_ms > 0 ? r->res.iter_s : r->res.time_s));
			if (so.fair)
				printf("%9.4g ", 1e3 * (r->res.fair_time_s +
						       so.compute_s));
			printf("%11.5g %-16s %6s %8.3f  %s\n",
			       r->res.agg_tput_gbps,
			       sim_bott_name(&t, &r->res, b, sizeof(b)), cr,
			       r->plan_s, r->plan.note);
			if (links) {
				int na = 2 * t.nlinks, *ix = malloc(na * sizeof(int)), k;
				double *u = malloc(na * sizeof(double));

				if (!ix || !u) {
					free(ix);
					free(u);
					continue;
				}
				for (k = 0; k < na; k++) {
					ix[k] = k;
					u[k] = r->res.arc_gbps[k] / topo_arc_gbps(&t, k);
				}
				qsort_r(ix, na, sizeof(int), cmp_load, u);
				for (k = 0; k < na && k < 10 && u[ix[k]] > 0; k++)
					printf("    %-20s %9.4g Gbps %5.1f%%\n",
					       topo_arc_name(&t, ix[k], b, sizeof(b)),
					       r->res.arc_gbps[ix[k]], 100 * u[ix[k]]);
				free(ix);
				free(u);
			}
		}
	}
	if (plot) {
		char title[160];

		snprintf(title, sizeof(title), "%s: %d workers",
			 sc ? sc->name : topo_file ? topo_file : gen, t.nhosts);
		if (write_plot(plot, title, rows, nr))
			ret = RINX_EXIT_FAIL;
	}
	for (i = 0; i < nr; i++)
		if (!rows[i].ok && !ret)
			ret = RINX_EXIT_FAIL;
out:
	for (i = 0; i < nr; i++) {
		pp_free(&rows[i].plan);
		sim_res_free(&rows[i].res);
	}
	topo_free(&t);
	return ret;
}
