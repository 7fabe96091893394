// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* rinxctl demo: a whole run on the built-in testbed, torn down at the end
 * (also on failure and on SIGINT/SIGTERM). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tools/bench.h"
#include "tools/cmds.h"
#include "user/plan.h"
#include "tools/testbed.h"

static char demo_prefix[RINX_TB_PREFIX_MAX + 1];
static volatile sig_atomic_t demo_up;

static void demo_signal(int sig)
{
	if (demo_up)
		rinx_testbed_down(demo_prefix, NULL);
	signal(sig, SIG_DFL);
	raise(sig);
}

static const char demo_usage[] =
"[--racks R --per-rack H --ina LIST | --hosts N] [--sizes LIST] [--iters N]\n"
"       [--mode native|generic]\n"
"  builds a testbed, prints its plan, runs a float32 allreduce at each size\n"
"  (default 1M,16M,64M) with every element verified, prints the figures and\n"
"  tears the testbed down. Default: Rina on 2 racks x 4 hosts, rack 0 with\n"
"  an INA ToR, rack 1 plain (--ina switch,none); --hosts N: a plain ring of\n"
"  N hosts on one switch";

int cmd_demo(int argc, char **argv)
{
	struct rinx_testbed_opts to = { 0 };
	int ina[RINX_TB_MAX_RACKS] = { RINX_INA_SWITCH, RINX_INA_NONE };
	char *rest[64];
	struct bench_opts o;
	struct rinx_spec s;
	char spec[RINX_PATH_MAX];
	const char *ignored = NULL;
	int ret, down, i, n = 0, nina = 2, racks = 2, per_rack = 4;

	/* the testbed's options here, the rest is bench's */
	for (i = 0; i < argc && n < 63; i++) {
		const char *a = argv[i];

		if (i + 1 < argc && !strcmp(a, "--racks")) {
			racks = atoi(argv[++i]);
		} else if (i + 1 < argc && !strcmp(a, "--per-rack")) {
			per_rack = atoi(argv[++i]);
		} else if (i + 1 < argc && !strcmp(a, "--ina")) {
			nina = testbed_parse_ina(argv[++i], ina,
						 RINX_TB_MAX_RACKS);
			if (nina < 0) {
				fprintf(stderr, "rinxctl demo: --ina takes "
					"none|switch|agent per rack\n");
				return RINX_EXIT_USAGE;
			}
		} else {
			rest[n++] = argv[i];
		}
	}
	rest[n] = NULL;
	bench_defaults(&o);
	o.iters = 3;
	if (bench_getopt(n, rest, &o, &ignored, demo_usage))
		return RINX_EXIT_USAGE;
	o.verify = 1;	/* the demo always checks every element */
	if (o.hosts) {
		racks = 1;
		per_rack = o.hosts;
		nina = 1;
		ina[0] = RINX_INA_NONE;
	}
	if (racks < 1 || racks > RINX_TB_MAX_RACKS || per_rack < 1 ||
	    per_rack > RINX_TB_MAX_PER_RACK || racks * per_rack < 2 ||
	    racks * per_rack > RINX_MAX_NODES) {
		fprintf(stderr, "rinxctl demo: 2..%d hosts, racks 1..%d, "
			"per rack 1..%d\n", RINX_MAX_NODES, RINX_TB_MAX_RACKS,
			RINX_TB_MAX_PER_RACK);
		return RINX_EXIT_USAGE;
	}
	for (i = nina; i < racks; i++)
		ina[i] = nina == 1 ? ina[0] : RINX_INA_NONE;
	srand(getpid() ^ time(NULL));
	snprintf(demo_prefix, sizeof(demo_prefix), "rxd%04x",
		 rand() & 0xffff);
	to.prefix = demo_prefix;
	to.racks = racks;
	to.hosts_per_rack = per_rack;
	to.ina = ina;
	to.mode = o.mode && !strcmp(o.mode, "generic") ? RINX_XDP_GENERIC :
							 RINX_XDP_NATIVE;
	signal(SIGINT, demo_signal);
	signal(SIGTERM, demo_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("rinx demo: testbed %s: %d rack(s) x %d hosts, XDP switches "
	       "(%s XDP)\n", demo_prefix, racks, per_rack,
	       to.mode == RINX_XDP_GENERIC ? "generic" : "native");
	fflush(stdout);
	demo_up = 1;
	ret = rinx_testbed_up(&to, &s);
	if (ret) {
		demo_up = 0;
		fprintf(stderr, "rinxctl demo: testbed up failed: %s\n",
			strerror(-ret));
		return rinx_exit_code(ret);
	}
	rinx_testbed_spec_path(demo_prefix, spec, sizeof(spec));
	rinx_plan_summary(stdout, &s);
	printf("rinx demo: float32 allreduce SUM, every element checked "
	       "against an independent reference\n");
	fflush(stdout);
	ret = bench_run(&o, spec, &s, stdout);
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
	printf("rinx demo: ok, testbed removed\n");
	return down ? RINX_EXIT_FAIL : 0;
}
