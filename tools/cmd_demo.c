// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinxctl demo: rinx's case in one table. One testbed (2 racks x 4 hosts,
 * both ToRs aggregate), the same verified float32 allreduce run as a plain
 * ring and as Rina, first with every link at 1 Gbit/s (the network is the
 * bottleneck: where INA pays) and then unlimited (the shared cores are).
 * The plan is a per-job choice and the rate a per-port setting of the
 * running switches, so nothing is rebuilt between the four runs. The
 * testbed is torn down at the end, also on failure and on SIGINT/SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tools/bench.h"
#include "tools/cmds.h"
#include "tools/opts.h"
#include "user/plan/plan.h"
#include "tools/testbed/testbed.h"

static char demo_prefix[RINX_TB_PREFIX_MAX + 1];
static volatile sig_atomic_t demo_up;
static pid_t demo_pid;

static void demo_signal(int sig)
{
	/* the trainers forked by bench inherit this handler: only the
	 * process that built the testbed takes it down */
	if (demo_up && getpid() == demo_pid)
		rinx_testbed_down(demo_prefix, NULL);
	signal(sig, SIG_DFL);
	raise(sig);
}

enum { DEMO_RATED, DEMO_FREE, DEMO_REGIMES };
enum { DEMO_RING, DEMO_RINA, DEMO_PLANS };

static const char *const demo_plan[DEMO_PLANS] = { "ring", "rina" };
static const char *const demo_plan_name[DEMO_PLANS] = { "ring", "Rina" };

struct demo {
	struct bench_opts o;
	struct rinx_spec s;
	char spec[RINX_PATH_MAX];
	__u32 rate;
	int racks, per_rack, mode;
	struct testbed_ina ina;
	const char *prefix;
	char ina_desc[RINX_TB_MAX_RACKS * 8];	/* "switch,switch" */
	struct bench_result res[DEMO_REGIMES][DEMO_PLANS][BENCH_MAX_SIZES];
};

static void size_str(uint64_t b, char *buf, size_t len)
{
	if (b >= 1ull << 20 && !(b % (1ull << 20)))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else if (b >= 1024 && !(b % 1024))
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
}

static void links_str(const struct demo *d, int regime, char *buf, size_t len)
{
	if (regime == DEMO_FREE)
		snprintf(buf, len, "unlimited");
	else if (d->rate % 1000 == 0)
		snprintf(buf, len, "%u Gbit/s", d->rate / 1000);
	else
		snprintf(buf, len, "%u Mbit/s", d->rate);
}

/* One plan in one regime: a bench run on the testbed's spec as it is. */
static int demo_run(struct demo *d, int regime, int plan)
{
	char links[32];
	FILE *quiet;
	int ret, k;

	links_str(d, regime, links, sizeof(links));
	printf("  %s links, %s:", links, demo_plan_name[plan]);
	fflush(stdout);
	/* the bench's own table is the demo's raw material, not its
	 * output; its errors still go to stderr */
	quiet = fopen("/dev/null", "w");
	if (!quiet)
		return -errno;
	/* a job of its own per run, as separate bench runs would have: a
	 * job's pace is kept by the nodes between its collectives, and the
	 * ring's would hold Rina back */
	d->o.job = 1 + (rand() & 0x3ffffff);
	d->o.token = bench_token();
	d->o.plan = demo_plan[plan];
	d->o.res = d->res[regime][plan];
	ret = bench_run(&d->o, d->spec, &d->s, quiet);
	fclose(quiet);
	if (ret && ret != -EDOM) {
		printf(" failed\n");
		return ret;
	}
	for (k = 0; k < d->o.nsizes; k++)
		printf(" %.3f GB/s%s", d->res[regime][plan][k].busbw,
		       d->res[regime][plan][k].verified == 1 ? "" : " WRONG");
	printf("\n");
	fflush(stdout);
	return ret;
}

/* words of text wrapped at 76 columns */
static void print_wrapped(const char *text)
{
	const char *p = text;
	int col = 0;

	while (*p) {
		const char *w = p;
		int len;

		while (*p && *p != ' ')
			p++;
		len = p - w;
		if (col && col + 1 + len > 76) {
			printf("\n");
			col = 0;
		} else if (col) {
			printf(" ");
			col++;
		}
		printf("%.*s", len, w);
		col += len;
		while (*p == ' ')
			p++;
	}
	printf("\n");
}

static double gain(const struct demo *d, int regime, int k)
{
	double ring = d->res[regime][DEMO_RING][k].busbw;

	return ring > 0 ? d->res[regime][DEMO_RINA][k].busbw / ring : 0;
}

/* The one-minute load average, or -1: the cores are shared with whatever
 * else runs, and the figures say so. */
static double load_avg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* The sentence under the table, from the figures: what limits each
 * regime and what INA did there. */
static void demo_meaning(const struct demo *d, double load)
{
	int last = d->o.nsizes - 1;
	const struct bench_result *ring = &d->res[DEMO_RATED][DEMO_RING][last];
	const struct bench_result *rina = &d->res[DEMO_RATED][DEMO_RINA][last];
	char links[32], rated[512], text[1024], lbuf[48] = "";
	double g = gain(d, DEMO_RATED, last);

	links_str(d, DEMO_RATED, links, sizeof(links));
	if (load >= 0)
		snprintf(lbuf, sizeof(lbuf), ", load average %.1f", load);
	if (g >= 1.1)
		snprintf(rated, sizeof(rated),
			 "On %s links the wire is the limit: the ring fills "
			 "%.0f%% of it, while Rina's ToRs add up their rack's "
			 "shares in the switch, so fewer bytes cross each link "
			 "per byte reduced%s and Rina moves %.2fx the ring's "
			 "busbw", links, 100 * ring->util,
			 rina->util > 1 ? " (util above 1)" : "", g);
	else
		snprintf(rated, sizeof(rated),
			 "On %s links the ring fills %.0f%% of the wire, but "
			 "Rina, which sends fewer bytes per link, gained only "
			 "%.2fx: the shared cores, not the links, held it back "
			 "in this run", links, 100 * ring->util, g);
	snprintf(text, sizeof(text),
		 "%s; on unlimited links the CPU is the limit: every emulated "
		 "host, switch and ToR aggregator shares this machine's %ld "
		 "cores (with anything else running%s at the start), so the ToRs' adds "
		 "take cycles from the hosts (INA gain %.2fx) where a real "
		 "switch would add in its own silicon.", rated,
		 sysconf(_SC_NPROCESSORS_ONLN), lbuf, gain(d, DEMO_FREE, last));
	print_wrapped(text);
}

static void demo_table(const struct demo *d, double load)
{
	char size[32], links[32], util[16], g[16];
	int k, regime, plan;

	printf("\nrinx demo: %d ranks (%d racks x %d, INA %s), float32 "
	       "allreduce SUM, median of %d, every element verified\n",
	       d->racks * d->per_rack, d->racks, d->per_rack, d->ina_desc,
	       d->o.iters);
	printf("  %-8s %-10s %-5s %11s %6s %9s\n", "size", "links", "plan",
	       "busbw GB/s", "util", "INA gain");
	for (k = 0; k < d->o.nsizes; k++) {
		size_str(d->o.sizes[k], size, sizeof(size));
		for (regime = 0; regime < DEMO_REGIMES; regime++) {
			links_str(d, regime, links, sizeof(links));
			for (plan = 0; plan < DEMO_PLANS; plan++) {
				const struct bench_result *r =
					&d->res[regime][plan][k];

				snprintf(util, sizeof(util), "%.2f", r->util);
				snprintf(g, sizeof(g), "%9.2fx",
					 gain(d, regime, k));
				printf("  %-8s %-10s %-5s %11.3f %6s%s\n",
				       size, links, demo_plan_name[plan],
				       r->busbw, r->util > 0 ? util : "-",
				       plan == DEMO_RINA ? g : "");
			}
		}
	}
	demo_meaning(d, load);
}

#define D_AT(m) OPT_AT(struct demo, m)
#define BENCHS "is bench's; the demo runs ring and rina on --racks x --per-rack"

/* The testbed's options, then bench's (the demo's --sizes first) */
static const struct opt demo_opts[] = {
	{ OPT_TEXT, .help =
"  builds one testbed (default 2 racks x 4 hosts, both ToRs aggregate:\n"
"  --ina switch,switch) and runs the same float32 allreduce (default 16M\n"
"  per rank, median of 5 after 1 warm-up, every element checked against an\n"
"  independent reference) four times: as a plain ring and as Rina (each\n"
"  INA rack one ring member), with every switch port at --rate (default\n"
"  1000 Mbit/s) and then unlimited. Prints one table (busbw, util = busbw /\n"
"  link rate, INA gain = Rina busbw / ring busbw) and tears the testbed\n"
"  down, also on failure and Ctrl-C. About a minute on 2 cores.\n" },
	{ OPT_INT, "racks", 0, "R", D_AT(racks), .min = 1,
	  .max = RINX_TB_MAX_RACKS, .def = "2", .help = "racks (default {})" },
	{ OPT_INT, "per-rack", 0, "H", D_AT(per_rack), .min = 1,
	  .max = RINX_TB_MAX_PER_RACK, .def = "4",
	  .help = "hosts per rack (default {}; 2..64 hosts in all)" },
	{ OPT_FN, "ina", 0, "LIST", D_AT(ina), .parse = testbed_opt_ina,
	  .def = "switch,switch",
	  .range = TESTBED_INA_RANGE,
	  .help = "INA kind per rack: none, switch or agent (default\n"
		  "{}; racks not named get none)" },
	{ OPT_INT, "rate", 0, "MBIT", D_AT(rate), .min = 1,
	  .max = RINX_SW_RATE_MAX, .def = "1000",
	  .help = "every switch port's rate of the first runs (default\n"
		  "{} Mbit/s)" },
	{ OPT_FN, "sizes", 'S', "LIST", D_AT(o.sizes),
	  .parse = bench_opt_sizes, .def = "16M", .range = BENCH_SIZES_RANGE,
	  .help = "bytes per rank (default {}); --iters, --warmup and\n"
		  "bench's other options as there (rinxctl bench --help)" },
	{ OPT_ENUM, "mode", 0, "MODE", D_AT(mode),
	  .choices = testbed_xdp_modes,
	  .def = "native", .help = "XDP mode: {} (default) or generic" },
	{ OPT_FN, "prefix", 0, "P", D_AT(prefix), .parse = testbed_opt_prefix,
	  .help = "namespace prefix (default rxd + 4 random hex digits)" },
	{ OPT_REFUSE, "hosts", 0, "N", .help = BENCHS },
	{ OPT_REFUSE, "plan", 0, "P", .help = BENCHS },
	{ OPT_REFUSE, "jobs", 0, "N", .help = BENCHS },
	{ OPT_REFUSE, "json", 0, NULL, .help = BENCHS },
	{ OPT_INCLUDE, .sub = bench_opt_table, D_AT(o) },
	{ OPT_TEXT, .help =
"larger comparisons:\n"
"  rinxctl testbed up --racks 2 --per-rack 4 --ina switch,switch --rate 1000\n"
"  rinxctl compare --spec SPEC --sizes 16M --peers mpi-ring,gloo\n"
"      rinx against Open MPI and Gloo on the same hosts (docs/benchmark.md)\n"
"  rinxctl bench --spec SPEC --plan P --verify --profile\n"
"      any plan: ring, rina, ps[:N], ps-ina[:N], har, tree, dbtree\n"
"      (tools/plans-bench.sh runs every plan side by side)\n"
"  rinxctl sim --scenario scale\n"
"      the planners and a fluid simulator at 1,000 workers (docs/sim.md)\n" },
	{ OPT_END },
};

static const struct opts_cmd demo_cmd = {
	.name = "demo", .synopsis = "[--racks R --per-rack H --ina LIST] "
	"[--rate MBIT] [--sizes LIST]\n"
	"       [--iters N] [--warmup N] [--mode native|generic] [--prefix P]",
	.tab = demo_opts, .col = 19,
};

/* The demo's options and bench's into d; OPTS_OK, OPTS_HELP or
 * OPTS_USAGE. */
static int demo_args(struct demo *d, int argc, char **argv)
{
	int i, ret;

	bench_defaults(&d->o);
	ret = opts_parse(&demo_cmd, argc, argv, d, NULL);
	if (ret)
		return ret;
	if (bench_data_resolve(&d->o, "demo"))
		return OPTS_USAGE;
	d->o.verify = 1;	/* the demo always checks every element */
	if (d->racks * d->per_rack < 2 ||
	    d->racks * d->per_rack > RINX_MAX_NODES) {
		fprintf(stderr, "rinxctl demo: 2..%d hosts, racks 1..%d, "
			"per rack 1..%d\n", RINX_MAX_NODES, RINX_TB_MAX_RACKS,
			RINX_TB_MAX_PER_RACK);
		return OPTS_USAGE;
	}
	for (i = d->ina.n; i < d->racks; i++)
		d->ina.kinds[i] = d->ina.n == 1 ? d->ina.kinds[0] :
			RINX_INA_NONE;
	for (i = 0; i < d->racks; i++)
		snprintf(d->ina_desc + strlen(d->ina_desc),
			 sizeof(d->ina_desc) - strlen(d->ina_desc), "%s%s",
			 i ? "," : "", d->ina.kinds[i] == RINX_INA_SWITCH ?
			 "switch" : d->ina.kinds[i] == RINX_INA_AGENT ?
			 "agent" : "none");
	return 0;
}

/* Both plans on the links as they are; then the spec is read again (a
 * rate change rewrites its link= and uplink=, which util is taken from). */
static int demo_regime(struct demo *d, int regime)
{
	char err[256];
	int ret, plan;

	if (rinx_spec_load(d->spec, &d->s, err, sizeof(err))) {
		fprintf(stderr, "rinxctl demo: %s\n", err);
		return -EINVAL;
	}
	for (plan = 0; plan < DEMO_PLANS; plan++) {
		ret = demo_run(d, regime, plan);
		if (ret)
			return ret;
	}
	return 0;
}

int cmd_demo(int argc, char **argv)
{
	static struct demo d;
	struct rinx_testbed_opts to = { 0 };
	struct rinx_sw_link_set link = { 0 }, free_link = { 0 };
	int ret, down, nports = 0;
	time_t t0 = time(NULL);
	double load = load_avg();

	ret = demo_args(&d, argc, argv);
	if (ret)
		return opts_exit(ret);
	if (d.prefix) {
		snprintf(demo_prefix, sizeof(demo_prefix), "%s", d.prefix);
	} else {
		srand(getpid() ^ time(NULL));
		snprintf(demo_prefix, sizeof(demo_prefix), "rxd%04x",
			 rand() & 0xffff);
	}
	link.rate_mbit = d.rate;	/* buffer and ECN: the rate's defaults */
	to.prefix = demo_prefix;
	to.racks = d.racks;
	to.hosts_per_rack = d.per_rack;
	to.ina = d.ina.kinds;
	to.link = &link;
	to.mode = d.mode;
	demo_pid = getpid();
	signal(SIGINT, demo_signal);
	signal(SIGTERM, demo_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("rinx demo: testbed %s: %d rack(s) x %d hosts, XDP switches "
	       "(%s XDP), every port at %u Mbit/s\n", demo_prefix, d.racks,
	       d.per_rack, to.mode == RINX_XDP_GENERIC ? "generic" : "native",
	       d.rate);
	fflush(stdout);
	demo_up = 1;
	ret = rinx_testbed_up(&to, &d.s);
	if (ret) {
		demo_up = 0;
		fprintf(stderr, "rinxctl demo: testbed up failed: %s\n",
			strerror(-ret));
		return rinx_exit_code(ret);
	}
	rinx_testbed_spec_path(demo_prefix, d.spec, sizeof(d.spec));
	rinx_plan_summary(stdout, &d.s);
	printf("rinx demo: the same float32 allreduce as a ring and as Rina, "
	       "busbw per run (every element checked):\n");
	fflush(stdout);
	ret = demo_regime(&d, DEMO_RATED);
	if (!ret || ret == -EDOM) {
		/* rate 0: no queue, the ports forward at veth speed */
		int r2 = rinx_testbed_fault_set(demo_prefix, NULL, &free_link,
						RINX_TB_F_RATE, &nports);

		if (r2)
			ret = ret ?: r2;
		else
			ret = demo_regime(&d, DEMO_FREE) ?: ret;
	}
	down = rinx_testbed_down(demo_prefix, NULL);
	demo_up = 0;
	if (down)
		fprintf(stderr, "rinxctl demo: testbed down: %s\n",
			strerror(-down));
	if (ret == -EDOM) {
		fprintf(stderr, "rinxctl demo: WRONG RESULTS\n");
		return RINX_EXIT_WRONG;
	}
	if (ret) {
		fprintf(stderr, "rinxctl demo: failed: %s\n", strerror(-ret));
		return rinx_exit_code(ret);
	}
	demo_table(&d, load);
	printf("rinx demo: ok in %ld s, testbed removed; `rinxctl demo "
	       "--help` shows how to run the larger comparisons\n",
	       (long)(time(NULL) - t0));
	return down ? RINX_EXIT_FAIL : 0;
}
