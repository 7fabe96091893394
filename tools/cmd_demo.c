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
#include "user/testbed.h"

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
"[--hosts N] [--sizes LIST] [--iters N] [--mode native|generic] [--verify]\n"
"  builds a testbed of N hosts (default 4) on one ToR switch, runs a\n"
"  verified float32 allreduce at each size (default 1M,16M,64M), prints\n"
"  the figures and tears the testbed down";

int cmd_demo(int argc, char **argv)
{
	struct rinx_testbed_opts to = { 0 };
	struct bench_opts o;
	struct rinx_spec s;
	char spec[RINX_PATH_MAX];
	const char *ignored = NULL;
	int ret, down;

	bench_defaults(&o);
	o.hosts = 4;
	o.iters = 3;
	if (bench_getopt(argc, argv, &o, &ignored, demo_usage))
		return RINX_EXIT_USAGE;
	o.verify = 1;	/* the demo always checks every element */
	if (o.hosts < 2 || o.hosts > RINX_TB_MAX_PER_RACK) {
		fprintf(stderr, "rinxctl demo: --hosts 2..%d\n",
			RINX_TB_MAX_PER_RACK);
		return RINX_EXIT_USAGE;
	}
	srand(getpid() ^ time(NULL));
	snprintf(demo_prefix, sizeof(demo_prefix), "rxd%04x",
		 rand() & 0xffff);
	to.prefix = demo_prefix;
	to.racks = 1;
	to.hosts_per_rack = o.hosts;
	to.mode = o.mode && !strcmp(o.mode, "generic") ? RINX_XDP_GENERIC :
							 RINX_XDP_NATIVE;
	signal(SIGINT, demo_signal);
	signal(SIGTERM, demo_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("rinx demo: testbed %s: %d hosts on one XDP switch (%s XDP)\n",
	       demo_prefix, o.hosts,
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
	printf("rinx demo: float32 allreduce SUM, every element checked "
	       "against an independent reference\n");
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
