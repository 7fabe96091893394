// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinxctl: one tool, subcommands from one table (parsing, --help, man page).
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 usage error, 3 bad spec or config,
 * 4 verification failed (wrong sum), 5 timeout / dead peer, 6 not root or a
 * kernel feature missing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tools/cmds.h"
#include "user/ctl.h"

static const struct rinx_cmd cmds[] = {
	{ "testbed", cmd_testbed, "up|down|show|fault|ina-off|plan [options]",
	  "build, inspect, fault or tear down the emulated cluster (namespaces, veth,\n           XDP switches): racks, or a topology (--topo FILE, --gen grid-toy)" },
	{ "doctor", cmd_doctor, "[--spec FILE --node NAME] [--ifname IF]",
	  "check that this host can run the spec's job (kernel, BPF, XDP, AF_XDP,\n"
	  "           bpffs, memory, MTU, addresses, queues): ok/missing and how to fix" },
	{ "up", cmd_up, "--spec FILE --node NAME [--force]",
	  "doctor's checks, then attach the host program on a node and pin its maps" },
	{ "down", cmd_down, "--spec FILE --node NAME",
	  "detach the host program and remove its pins" },
	{ "stats", cmd_stats, "--spec FILE [--node NAME] [--json]",
	  "per-node counters of the host program" },
	{ "plan", cmd_plan, "--spec FILE | --hosts N [--plan P]",
	  "print the plan (per-node tables) of a cluster: ring, rina, ps[:N],\n"
	  "           ps-ina[:N], har, tree, dbtree, or topo:NAME (a planner on the\n"
	  "           spec's topology: topo:grid, topo:ps-ina, ...)" },
	{ "bench", cmd_bench, "--spec FILE [options]",
	  "allreduce benchmark: size sweep, verify, time and bandwidth" },
	{ "demo", cmd_demo, "[--racks R --per-rack H --ina LIST] [--rate MBIT] [--sizes LIST]",
	  "one testbed (2 racks x 4, both ToRs INA): the same verified float32\n"
	  "           allreduce as a ring and as Rina, on 1 Gbit/s and unlimited links,\n"
	  "           in one table (busbw, util, INA gain); testbed down" },
	{ "peer", cmd_peer, "mpi --spec FILE [options]", "the same sweep by Open MPI over TCP" },
	{ "compare", cmd_compare, "--spec FILE [options]",
	  "rinx vs Open MPI and Gloo on the testbed: interleaved, verified, CPU" },
	{ "sim", cmd_sim, "(--scenario NAME | --topo FILE | --gen SPEC) [options]",
	  "plan with ring, tree, H-AR, PS, ATP, SwitchML, Rina, GRID or forest and\n"
	  "           simulate the allreduce (fluid model); no root needed" },
	{ NULL, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	const struct rinx_cmd *c;

	fprintf(f, "usage: rinxctl [-v] COMMAND [options]\n\n");
	fprintf(f, "rinx: allreduce with the per-hop work in XDP.\n\n");
	fprintf(f, "commands:\n");
	for (c = cmds; c->name; c++)
		fprintf(f, "  %-8s %s\n           %s\n", c->name, c->args,
			c->help);
	fprintf(f, "\n`rinxctl COMMAND --help` shows the options of a command.\n");
	fprintf(f, "exit codes: 0 ok, 1 failure, 2 usage, 3 bad spec/config, "
		"4 wrong result, 5 timeout/dead peer, 6 not root/no kernel support\n");
}

int main(int argc, char **argv)
{
	const struct rinx_cmd *c;
	int help;
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "-v")) {
			rinx_set_log_level(RINX_LOG_DEBUG);
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "rinxctl: unknown option %s\n", argv[i]);
			usage(stderr);
			return RINX_EXIT_USAGE;
		}
		i++;
	}
	if (i >= argc) {
		usage(stderr);
		return RINX_EXIT_USAGE;
	}
	/* a command's help is text, not an act: shown without root too (the
	 * man page and test_docs read it) */
	help = i + 1 < argc && (!strcmp(argv[i + 1], "--help") ||
				!strcmp(argv[i + 1], "-h"));
	for (c = cmds; c->name; c++)
		if (!strcmp(c->name, argv[i])) {
			/* doctor runs as anyone: it says what is missing */
			if (geteuid() != 0 && !help && strcmp(c->name, "plan") &&
			    strcmp(c->name, "sim") && strcmp(c->name, "doctor")) {
				fprintf(stderr, "rinxctl %s: must run as root "
					"(BPF, XDP, namespaces)\n", c->name);
				return RINX_EXIT_NOPERM;
			}
			optind = 1;
			return c->fn(argc - i, argv + i);
		}
	fprintf(stderr, "rinxctl: unknown command '%s'\n", argv[i]);
	usage(stderr);
	return RINX_EXIT_USAGE;
}
