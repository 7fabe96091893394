/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* rinxctl subcommands. Each takes argv with argv[0] = its name. */
#ifndef RINX_CMDS_H
#define RINX_CMDS_H

#include <stdio.h>
#include "tools/opts.h"
#include "tools/testbed/testbed.h"

enum rinx_exit {
	RINX_EXIT_OK = 0,
	RINX_EXIT_FAIL = 1,
	RINX_EXIT_USAGE = 2,
	RINX_EXIT_CONFIG = 3,
	RINX_EXIT_WRONG = 4,
	RINX_EXIT_TIMEOUT = 5,
	RINX_EXIT_NOPERM = 6,
};

struct rinx_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *args;
	const char *help;
};

int cmd_testbed(int argc, char **argv);
int cmd_up(int argc, char **argv);
int cmd_down(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_peer(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

struct rinx_spec;
struct rinx_spec_host;
/* The doctor's checks of this host for node h of spec s (both NULL: the
 * host itself, and interface ifname if given), each printed to out; the
 * number of checks missing (0: the host can run the job). */
int doctor_check(const struct rinx_spec *s, const struct rinx_spec_host *h,
		 const char *ifname, FILE *out);

/* testbed's option parsers that demo shares (tools/opts.h): --ina LIST
 * into the INA kind of each rack (enum rinx_ina), --prefix P checked and
 * kept, --mode native|generic. */
struct testbed_ina {
	int kinds[RINX_TB_MAX_RACKS];
	int n;			/* given; 1: one for every rack */
};
#define TESTBED_INA_RANGE "none|switch|agent per rack, comma-separated"
int testbed_opt_ina(const char *v, void *field, char *why, size_t len);
int testbed_opt_prefix(const char *v, void *field, char *why, size_t len);
extern const struct opt_choice testbed_xdp_modes[];

/* Maps a negative errno to an exit code. */
int rinx_exit_code(int err);

#endif
