// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* rinxctl testbed up|down|show: the emulated cluster of tools/testbed/. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tools/cmds.h"
#include "tools/opts.h"
#include "tools/testbed/testbed.h"
#include "user/plan/plan.h"

static int parse_ina_one(const char *v)
{
	if (!strcmp(v, "none"))
		return RINX_INA_NONE;
	if (!strcmp(v, "switch"))
		return RINX_INA_SWITCH;
	if (!strcmp(v, "agent"))
		return RINX_INA_AGENT;
	return -1;
}

/* "switch,none,agent" -> kinds; returns how many or -1. */
static int testbed_parse_ina(const char *list, int *kinds, int max)
{
	char buf[256], *save = NULL, *tok;
	int n = 0;

	if (strlen(list) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n >= max || (kinds[n] = parse_ina_one(tok)) < 0)
			return -1;
		n++;
	}
	return n ? n : -1;
}

/* Link settings from the command line: the values and which were given
 * (RINX_TB_F_*); up and fault share them. */
struct tb_link {
	struct rinx_sw_link_set set;
	unsigned int mask;
};

struct tb_up_args {
	struct rinx_testbed_opts o;
	struct tb_link link;
	struct testbed_ina ina;
	int hosts, per_rack;
	const char *prefix;
};

/* The target of down, show and fault: PREFIX|SPEC, and fault's port. */
struct tb_target {
	const char *what, *port;
	int all;
	struct tb_link link;
};

static int parse_ecn(const char *v, void *field, char *why, size_t len)
{
	char *end;
	long x;

	(void)why;
	(void)len;
	if (!strcmp(v, "off")) {
		*(__u32 *)field = RINX_SW_ECN_OFF;
		return 0;
	}
	errno = 0;
	x = strtol(v, &end, 0);
	if (errno || end == v || *end || x < 1 || x > RINX_SW_BUFFER_MAX)
		return -1;
	*(__u32 *)field = x;
	return 0;
}

int testbed_opt_ina(const char *v, void *field, char *why, size_t len)
{
	struct testbed_ina *ina = field;

	(void)why;
	(void)len;
	ina->n = testbed_parse_ina(v, ina->kinds, RINX_TB_MAX_RACKS);
	return ina->n < 0 ? -1 : 0;
}

int testbed_opt_prefix(const char *v, void *field, char *why, size_t len)
{
	if (rinx_testbed_prefix_check(v, why, len))
		return -1;
	*(const char **)field = v;
	return 0;
}

static int parse_pin(const char *v, void *field, char *why, size_t len)
{
	if (v[0] != '/') {
		snprintf(why, len, "needs an absolute path");
		return -1;
	}
	*(const char **)field = v;
	return 0;
}

const struct opt_choice testbed_xdp_modes[] = {
	{ "native", RINX_XDP_NATIVE, 0 },
	{ "generic", RINX_XDP_GENERIC, 0 },
	{ NULL, 0, 0 },
};

static const struct opt_choice testbed_napi_modes[] = {
	{ "softirq", 0, 0 },
	{ "threaded", 1, 0 },
	{ NULL, 0, 0 },
};

static const struct opt_choice testbed_queue_kinds[] = {
	{ "virtual", 0, 0 },
	{ "real", 1, 0 },
	{ NULL, 0, 0 },
};

#define LINK_INT(n, meta, m, lo, hi, b, h) { OPT_INT, n, 0, meta, \
	OPT_AT(struct tb_link, set.m), .min = lo, .max = hi, \
	.bits_off = offsetof(struct tb_link, mask), .bit = b, .help = h }

static const struct opt link_opts[] = {
	LINK_INT("drop", "PPM", drop_ppm, 0, RINX_TB_PPM, RINX_TB_F_DROP,
		 "loss probability, parts per million (0..1000000)"),
	LINK_INT("dup", "PPM", dup_ppm, 0, RINX_TB_PPM, RINX_TB_F_DUP,
		 "duplication probability: the frame leaves twice"),
	LINK_INT("reorder", "PPM", reorder_ppm, 0, RINX_TB_PPM,
		 RINX_TB_F_REORDER, "reorder probability: the frame is held "
		 "back and\nsent in place of the port's next frame so drawn"),
	LINK_INT("hold", "MS", hold_ms, 1, 60000, RINX_TB_F_HOLD,
		 "a held frame older than this is dropped (default\n50)"),
	LINK_INT("rate", "MBIT", rate_mbit, 0, RINX_SW_RATE_MAX,
		 RINX_TB_F_RATE, "rate of the port's queue in Mbit/s (0: "
		 "unlimited,\nno queue; the default). Resets --buffer and "
		 "--ecn\nto the rate's defaults unless they are given"),
	LINK_INT("buffer", "BYTES", buffer, RINX_TB_BUFFER_MIN,
		 RINX_SW_BUFFER_MAX, RINX_TB_F_BUFFER, "queue size: frames "
		 "beyond it are tail-dropped\n(default 10 x K, DCTCP's mark "
		 "threshold: K =\n30000 x sqrt(MBIT / 1000), at least 6876, "
		 "as\nDCTCP's 20 and 65 packets; 300000 at 1000 Mbit/s,\n"
		 "948680 at 10000; at least 3438)"),
	{ OPT_FN, "ecn", 0, "BYTES|off", OPT_AT(struct tb_link, set.ecn),
	  .parse = parse_ecn, .range = "1..1073741824 or off",
	  .bits_off = offsetof(struct tb_link, mask), .bit = RINX_TB_F_ECN,
	  .help = "mark threshold: CE on ECT frames queued above it\n"
		  "(default 4 x K: 120000 at 1000 Mbit/s, 379472 at\n"
		  "10000; 4 x for the bursts of software switches)" },
	LINK_INT("share", "PCT", share, 0, RINX_SW_SHARE_MAX, RINX_TB_F_SHARE,
		 "two classes in the port's queue: rinx frames (UDP\n"
		 "to the rinx port) and the rest, each its own backlog\n"
		 "with --buffer and --ecn, rinx's served at PCT percent\n"
		 "of the rate while both wait, either at all of it\n"
		 "alone (a switch's weighted classes; 0: one queue,\n"
		 "the default)"),
	{ OPT_ENUM, "queue", 0, "KIND", OPT_AT(struct tb_link, set.real),
	  .choices = testbed_queue_kinds,
	  .bits_off = offsetof(struct tb_link, mask), .bit = RINX_TB_F_REAL,
	  .help = "virtual (the default: every frame leaves at once)\n"
		  "or real: frames that are not rinx's wait in a real\n"
		  "queue until the port's queue would send them, held\n"
		  "by the testbed's queue process (started when a port\n"
		  "gets it, stopped by down) as a switch's buffer holds\n"
		  "them, so TCP sees the delay of the queue it is in;\n"
		  "rinx frames still leave at once" },
	{ OPT_REFUSE, "burst", 0, "BYTES", .help = "is gone: a port has a "
	  "queue now, not a token bucket; use --buffer BYTES (and --ecn "
	  "BYTES for the mark threshold)" },
	{ OPT_END },
};

#define UP_AT(m) OPT_AT(struct tb_up_args, m)

static const struct opt up_opts[] = {
	{ OPT_INT, "hosts", 0, "N", UP_AT(hosts), .min = 1,
	  .max = RINX_MAX_NODES,
	  .help = "N hosts (split evenly over --racks; default 4)" },
	{ OPT_INT, "racks", 0, "R", UP_AT(o.racks), .min = 1,
	  .max = RINX_TB_MAX_RACKS, .def = "1",
	  .help = "racks, 1..8 (default {})" },
	{ OPT_INT, "per-rack", 0, "H", UP_AT(per_rack), .min = 1,
	  .max = RINX_TB_MAX_PER_RACK,
	  .help = "hosts per rack, 1..32 (total at most 64)" },
	{ OPT_FN, "prefix", 0, "P", UP_AT(prefix), .parse = testbed_opt_prefix,
	  .help = "namespace prefix (default rx + 4 random hex digits)" },
	{ OPT_ENUM, "mode", 0, "MODE", UP_AT(o.mode),
	  .choices = testbed_xdp_modes,
	  .def = "native", .help = "XDP mode: {} (default) or generic" },
	{ OPT_INT, "queues", 0, "N", UP_AT(o.queues), .min = 1,
	  .max = RINX_TB_MAX_QUEUES,
	  .help = "rx and tx queues of every host's eth0 and its switch\n"
		  "port, 1..16 (default 1): a multi-queue NIC, frames\n"
		  "spread over the queues by the sending CPU" },
	{ OPT_ENUM, "napi", 0, "MODE", UP_AT(o.threaded_napi),
	  .choices = testbed_napi_modes, .def = "softirq",
	  .help = "how every veth is polled: {} (default: in the softirq\n"
		  "of the core that scheduled it, so the frames of every\n"
		  "host and switch follow one another on one core) or\n"
		  "threaded (a kernel thread per interface, placed by the\n"
		  "scheduler on any core, as separate hosts process frames\n"
		  "at once; docs/rinx.md, \"Testbed NAPI\")" },
	{ OPT_FLAG, "plain", 0, UP_AT(o.plain),
	  .help = "plain switches, as real ones without rinx support: no\n"
		  "aggregation (ina switch refused), group MACs flooded\n"
		  "like any multicast, no frame back out of its ingress\n"
		  "port, no MAC rewrite at the uplink" },
	{ OPT_INT, "mtu", 0, "N", UP_AT(o.mtu), .min = RINX_TB_MTU_MIN,
	  .max = RINX_TB_MTU_MAX,
	  .help = "MTU of every link, 1490..9000 (default 3400); rinx\n"
		  "frames follow it: 3,168 bytes from 3154 up, else\n"
		  "1,504 (a 1,500-byte Ethernet)" },
	{ OPT_STR, "spec", 0, "FILE", UP_AT(o.spec_out),
	  .help = "where to write the spec (default " RINX_TB_SPEC_DIR
		  "/PREFIX.spec)" },
	{ OPT_FN, "pin", 0, "DIR", UP_AT(o.pin), .parse = parse_pin,
	  .help = "bpffs root for pins (default " RINX_TB_PIN_ROOT
		  "; pins go to DIR/PREFIX)" },
	{ OPT_INT, "window", 0, "N", UP_AT(o.window), .min = 1,
	  .max = 1 << 20, .help = "blocks per job slot (default 640)" },
	{ OPT_INT, "jobs", 0, "N", UP_AT(o.jobs), .min = 1,
	  .max = RINX_MAX_JOBS,
	  .help = "job slots per node (default 16); a host pins about\n"
		  "jobs x window x 12,368 B of kernel memory" },
	{ OPT_INT, "port", 0, "N", UP_AT(o.port), .min = 1, .max = 65535,
	  .help = "rinx UDP port (default 47001)" },
	{ OPT_FN, "ina", 0, "LIST", UP_AT(ina), .parse = testbed_opt_ina,
	  .range = TESTBED_INA_RANGE,
	  .help = "INA kind of each rack, comma-separated: none, switch\n"
		  "or agent (one value applies to every rack)" },
	{ OPT_FLAG, "no-nodes", 0, UP_AT(o.no_nodes),
	  .help = "leave the host program off (plain IP testbed)" },
	{ OPT_STR, "topo", 0, "FILE", UP_AT(o.topo),
	  .help = "build a topology (format in docs/sim.md) instead of\n"
		  "racks: a namespace per switch and per PS, a host per\n"
		  "worker, a veth per link; every port's queue at its\n"
		  "link's rate x --scale; unicast on shortest paths or\n"
		  "the plan's routes (per class), each class's result\n"
		  "on its broadcast route, floods on a spanning tree;\n"
		  "ina=yes switches (at most their cap= x --scale,\n"
		  "a queue like a port's: --buffer, --ecn) and every\n"
		  "PS aggregate (--racks, --hosts, --ina and --queues\n"
		  "do not apply)" },
	{ OPT_STR, "gen", 0, "SPEC", UP_AT(o.gen),
	  .help = "the same for a generated topology (grid-toy, ...)" },
	{ OPT_DOUBLE, "scale", 0, "MBIT", UP_AT(o.scale_mbit), .dmin = 0.001,
	  .dmax = 1e5, .range = "0.001..100000 Mbit/s",
	  .help = "Mbit/s of a port per Gbit/s of the topology (default\n"
		  "20: the GRID toy's 3 Gbit/s links run at 60 Mbit/s)" },
	{ OPT_STR, "plan", 0, NULL, UP_AT(o.plan), .label = "--plan topo:NAME",
	  .help = "the spec's plan and the routes the switches get\n"
		  "(default topo:grid; see plan below)" },
	{ OPT_INCLUDE, .label = "LINK", .sub = link_opts, UP_AT(link),
	  .help = "link settings of every switch port (see fault)" },
	{ OPT_END },
};

#define TARGET_AT(m) OPT_AT(struct tb_target, m)

static const struct opt fault_opts[] = {
	{ OPT_STR, "port", 0, "NS:IF", TARGET_AT(port),
	  .help = "one switch port, e.g. t0:p1, t1:uplink, sp:t0" },
	{ OPT_FLAG, "all", 0, TARGET_AT(all),
	  .help = "every port of every switch (default)" },
	{ OPT_STR, "prefix", 0, "P", TARGET_AT(what) },
	{ OPT_STR, "spec", 0, "FILE", TARGET_AT(what) },
	{ OPT_INCLUDE, .sub = link_opts, TARGET_AT(link), .help = "" },
	{ OPT_END },
};

static const struct opt down_opts[] = {
	{ OPT_STR, "prefix", 0, "P", TARGET_AT(what) },
	{ OPT_STR, "spec", 0, "FILE", TARGET_AT(what) },
	{ OPT_FLAG, "all", 0, TARGET_AT(all) },
	{ OPT_END },
};

static const struct opt show_opts[] = {
	{ OPT_STR, "prefix", 0, "P", TARGET_AT(what) },
	{ OPT_STR, "spec", 0, "FILE", TARGET_AT(what) },
	{ OPT_END },
};

static const struct opt no_opts[] = {
	{ OPT_END },
};

/* testbed's --help: every action, with up's and fault's tables */
static const struct opt testbed_help[] = {
	{ OPT_TEXT, .help =
"usage: rinxctl testbed up [options]\n"
"       rinxctl testbed down PREFIX|SPEC | --all\n"
"       rinxctl testbed show PREFIX|SPEC\n"
"       rinxctl testbed fault PREFIX|SPEC [--port NS:IF | --all] LINK\n"
"       rinxctl testbed ina-off PREFIX|SPEC RACK\n"
"       rinxctl testbed plan PREFIX|SPEC [topo:NAME]\n"
"       rinxctl testbed queue PREFIX|SPEC\n"
"\n"
"up: build the emulated cluster: one network namespace per host, one per\n"
"rack's ToR switch and a spine when there are several racks, joined by\n"
"veth pairs; XDP switches on the ToRs and the spine, the rinx host program\n"
"on every host's eth0; TCP of the hosts asks for ECN (tcp_ecn=1). Prints\n"
"the prefix and the spec file.\n" },
	{ OPT_INCLUDE, .sub = up_opts, .help = "" },
	{ OPT_TEXT, .help =
"down: host programs off, namespaces deleted, pins and spec removed.\n"
"  Succeeds when nothing is left. --all: every testbed with a spec in\n"
"  " RINX_TB_SPEC_DIR ".\n"
"show: how the hosts' interfaces are polled (napi: softirq, or threaded and\n"
"  how many threads at SCHED_FIFO 50), racks (INA kind; for ina=switch the\n"
"  ToR aggregator's name, MAC, IP\n"
"  and its non-zero counters), hosts (rank, namespace, interface, MAC, IP,\n"
"  host program state), the counters of every switch and, per switch port,\n"
"  its link settings and what they did since they were set: frames and\n"
"  bytes sent, tail drops, ECN marks, frames above the mark threshold that\n"
"  were not ECT, the peak backlog, utilization (bytes x 8 / (rate x time\n"
"  since set), Ethernet overhead not counted), the faults injected and\n"
"  the frames that waited in the real queue; then the real queue's\n"
"  process, if it runs: frames held and sent, dropped, and how late.\n"
"plan: a topology testbed changes plan: the planner NAME (rinxctl sim\n"
"  --list) plans on the testbed's topology, its reduce routes (per class;\n"
"  a ring's hops, topo:ring, per pair of neighbours in any class) replace\n"
"  the switches' flow tables, each class's broadcast route (the\n"
"  plan's, where switches replicate) their broadcast tables, and it becomes\n"
"  the spec's plan= (without NAME: the spec's plan again). Ranks that run\n"
"  another plan than the routes' still get exact sums, on the routes of\n"
"  the pairs, shortest paths and the spanning tree.\n"
"queue: the testbed's real queue in the foreground (up and fault start it\n"
"  in the background for --queue real, down stops it): holds the frames\n"
"  the switches hand it, those of ports with --queue real that are not\n"
"  rinx's, until their port's queue would send them, then sends them from\n"
"  the port. Its counters are in show. It leaves on SIGTERM or when the\n"
"  testbed is gone.\n"
"ina-off: rack RACK's ToR loses its aggregator (it goes on switching);\n"
"  running jobs fall back to ring members for that rack at their next\n"
"  collective.\n"
"fault: change the links of a running testbed. Each switch port acts as\n"
"  the egress port of a switch (XDP: tc never sees these frames): injected\n"
"  loss, then a queue, then reordering and duplication. The queue is\n"
"  virtual (XDP cannot hold frames, so none is delayed, unless --queue\n"
"  real hands those that are not rinx's to a process): the port keeps the\n"
"  backlog its rate would leave, tail-drops what does not fit the buffer\n"
"  and sets CE on IPv4 ECT frames queued above the mark threshold, for\n"
"  every frame alike (rinx, TCP, ARP). Options not given keep their value;\n"
"  the port's queue and counters start afresh. A --rate is written into\n"
"  the spec (link= of a host, uplink= of a rack); a host's link rate also\n"
"  paces what the host's own stack sends (tc tbf on its eth0), as its NIC\n"
"  would; frames of XDP and AF_XDP (rinx) bypass it.\n" },
	{ OPT_INCLUDE, .sub = fault_opts, .help = "" },
	{ OPT_TEXT, .help =
"  (--burst is gone: the token bucket became this queue; use --buffer)\n" },
	{ OPT_END },
};

#define TESTBED_CMD(n, t, args) { .name = "testbed", .tab = t, .col = 22, \
	.max_args = args, .help_tab = testbed_help }

static const struct opts_cmd up_cmd = TESTBED_CMD("up", up_opts, 0);
static const struct opts_cmd down_cmd = TESTBED_CMD("down", down_opts, 1);
static const struct opts_cmd show_cmd = TESTBED_CMD("show", show_opts, 1);
static const struct opts_cmd fault_cmd = TESTBED_CMD("fault", fault_opts, 1);
static const struct opts_cmd ina_off_cmd = TESTBED_CMD("ina-off", no_opts, 2);
static const struct opts_cmd plan_cmd = TESTBED_CMD("plan", no_opts, 2);
static const struct opts_cmd queue_cmd = TESTBED_CMD("queue", no_opts, 1);

static const char *ina_str(int ina)
{
	return ina == RINX_INA_SWITCH ? "switch" :
	       ina == RINX_INA_AGENT ? "agent" : "none";
}

static int random_prefix(char *buf, size_t len)
{
	char path[RINX_PATH_MAX], ns[64];
	unsigned short r;
	int tries;

	for (tries = 0; tries < 64; tries++) {
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (unsigned short)(getpid() * 31 + tries);
		snprintf(buf, len, "rx%04x", r);
		rinx_testbed_spec_path(buf, path, sizeof(path));
		snprintf(ns, sizeof(ns), "/run/netns/%sh0", buf);
		if (access(path, F_OK) && access(ns, F_OK))
			return 0;
	}
	return -1;
}

/* The queue part of settings as given (zero: the rate's default). */
static void show_rate(const struct rinx_sw_link_set *f)
{
	__u32 r = f->rate_mbit;

	if (!r) {
		printf("rate unlimited (no queue)\n");
		return;
	}
	printf("rate %u Mbit/s, buffer %u B, ", r,
	       f->buffer ? f->buffer : rinx_testbed_buffer_default(r));
	if (f->ecn == RINX_SW_ECN_OFF)
		printf("ecn off");
	else
		printf("ecn %u B", f->ecn ? f->ecn :
		       rinx_testbed_ecn_default(r));
	if (f->share)
		printf(", rinx frames' class %u%%", f->share);
	printf("\n");
}

/* What getopt cannot see alone: options that exclude or must match each
 * other; then the racks' INA kinds and hosts per rack. 0 or an exit code. */
static int up_check(struct tb_up_args *a)
{
	struct rinx_testbed_opts *o = &a->o;
	int i;

	if (o->topo && o->gen) {
		fprintf(stderr, "rinxctl testbed: --topo or --gen, not both\n");
		return RINX_EXIT_USAGE;
	}
	if ((o->topo || o->gen) && (a->link.mask & RINX_TB_F_RATE)) {
		fprintf(stderr, "rinxctl testbed: a topology's links have "
			"their own rates: use --scale, not --rate\n");
		return RINX_EXIT_USAGE;
	}
	/* a port without a rate has no queue, so nothing to class */
	if (a->link.set.share && !o->topo && !o->gen &&
	    !a->link.set.rate_mbit) {
		fprintf(stderr, "rinxctl testbed: --share needs --rate: a "
			"port without a rate has no queue to class\n");
		return RINX_EXIT_USAGE;
	}
	if (a->link.set.real && (o->topo || o->gen)) {
		fprintf(stderr, "rinxctl testbed: --queue real is for racks, "
			"not --topo or --gen\n");
		return RINX_EXIT_USAGE;
	}
	if (a->link.set.real && !a->link.set.rate_mbit) {
		fprintf(stderr, "rinxctl testbed: --queue real needs --rate: "
			"a port without a rate has no queue to wait in\n");
		return RINX_EXIT_USAGE;
	}
	if (o->plain && (o->topo || o->gen)) {
		fprintf(stderr, "rinxctl testbed: --plain is for racks, not "
			"--topo or --gen\n");
		return RINX_EXIT_USAGE;
	}
	if ((o->scale_mbit > 0 || o->plan) && !o->topo && !o->gen) {
		fprintf(stderr, "rinxctl testbed: --scale and --plan need "
			"--topo or --gen\n");
		return RINX_EXIT_USAGE;
	}
	if (a->hosts && a->per_rack && a->hosts != a->per_rack * o->racks) {
		fprintf(stderr, "rinxctl testbed: --hosts %d does not match "
			"--racks %d x --per-rack %d\n", a->hosts, o->racks,
			a->per_rack);
		return RINX_EXIT_USAGE;
	}
	if (a->hosts && a->hosts % o->racks) {
		fprintf(stderr, "rinxctl testbed: %d hosts do not split "
			"evenly over %d racks\n", a->hosts, o->racks);
		return RINX_EXIT_USAGE;
	}
	o->hosts_per_rack = a->per_rack ? a->per_rack :
			    a->hosts ? a->hosts / o->racks : 4;
	if (o->hosts_per_rack > RINX_TB_MAX_PER_RACK ||
	    o->racks * o->hosts_per_rack > RINX_MAX_NODES) {
		fprintf(stderr, "rinxctl testbed: at most %d hosts per rack "
			"and %d in all\n", RINX_TB_MAX_PER_RACK,
			RINX_MAX_NODES);
		return RINX_EXIT_USAGE;
	}
	if (a->ina.n > 1 && a->ina.n != o->racks) {
		fprintf(stderr, "rinxctl testbed: --ina has %d entries for "
			"%d racks\n", a->ina.n, o->racks);
		return RINX_EXIT_USAGE;
	}
	for (i = a->ina.n; a->ina.n == 1 && i < o->racks; i++)
		a->ina.kinds[i] = a->ina.kinds[0];
	o->ina = a->ina.n ? a->ina.kinds : NULL;
	if (a->link.mask)
		o->link = &a->link.set;
	return 0;
}

/* What up built, in the lines scripts read (prefix, spec). */
static void up_print(const struct tb_up_args *a, const struct rinx_spec *s,
		     const char *spec_path)
{
	const struct rinx_testbed_opts *o = &a->o;
	const char *prefix = o->prefix;
	char pl[40];

	if (o->topo || o->gen)
		printf("testbed %s: topology %s, %d hosts, %d switches and "
		       "servers, %g Mbit/s per topology Gbit/s, plan %s, %s "
		       "XDP%s", prefix, o->topo ? o->topo : o->gen, s->nhosts,
		       s->nracks, o->scale_mbit > 0 ? o->scale_mbit :
		       RINX_TB_SCALE, rinx_plan_name(s->plan, s->plan_nps, pl,
						     sizeof(pl)),
		       o->mode == RINX_XDP_GENERIC ? "generic" : "native",
		       o->no_nodes ? ", host program off" : "");
	else
		printf("testbed %s: %d rack%s x %d host%s, %s XDP%s", prefix,
		       o->racks, o->racks > 1 ? "s" : "", o->hosts_per_rack,
		       o->hosts_per_rack > 1 ? "s" : "",
		       o->mode == RINX_XDP_GENERIC ? "generic" : "native",
		       o->no_nodes ? ", host program off" : "");
	if (o->queues > 1)
		printf(", %d queues per host", o->queues);
	if (o->mtu)
		printf(", MTU %d", o->mtu);
	if (o->plain)
		printf(", plain switches");
	printf("\n");
	if (a->link.mask) {
		printf("every switch port: drop %u dup %u reorder %u ppm, ",
		       a->link.set.drop_ppm, a->link.set.dup_ppm,
		       a->link.set.reorder_ppm);
		show_rate(&a->link.set);
	}
	printf("spec: %s\n", spec_path);
	printf("next: rinxctl testbed show %s; rinxctl testbed down %s\n",
	       prefix, prefix);
}

static int testbed_up(int argc, char **argv)
{
	static struct tb_up_args a;
	char prefix[RINX_TB_PREFIX_MAX + 1], spec_path[RINX_PATH_MAX];
	struct rinx_spec *s;
	int ret;

	ret = opts_parse(&up_cmd, argc, argv, &a, NULL);
	if (ret)
		return opts_exit(ret);
	ret = up_check(&a);
	if (ret)
		return ret;
	if (a.prefix)
		snprintf(prefix, sizeof(prefix), "%s", a.prefix);
	else if (random_prefix(prefix, sizeof(prefix))) {
		fprintf(stderr, "rinxctl testbed: no free prefix found\n");
		return RINX_EXIT_FAIL;
	}
	a.o.prefix = prefix;
	if (a.o.spec_out)
		snprintf(spec_path, sizeof(spec_path), "%s", a.o.spec_out);
	else
		rinx_testbed_spec_path(prefix, spec_path, sizeof(spec_path));

	s = calloc(1, sizeof(*s));
	if (!s)
		return RINX_EXIT_FAIL;
	ret = rinx_testbed_up(&a.o, s);
	if (ret) {
		fprintf(stderr, "rinxctl testbed up: %s\n", strerror(-ret));
		free(s);
		return ret == -EEXIST ? RINX_EXIT_CONFIG : rinx_exit_code(ret);
	}
	if (a.link.set.real) {
		ret = rinx_testbed_queue_start(spec_path);
		if (ret) {
			fprintf(stderr, "rinxctl testbed up: the real queue's "
				"process: %s (the testbed is up, its ports' "
				"queues virtual until it runs: testbed fault "
				"--queue real)\n", strerror(-ret));
			free(s);
			return rinx_exit_code(ret);
		}
	}
	up_print(&a, s, spec_path);
	free(s);
	return 0;
}

/* PREFIX or SPEC from --prefix/--spec or the one positional argument;
 * OPTS_OK or what opts_parse said. */
static int get_target(const struct opts_cmd *c, int argc, char **argv,
		      struct tb_target *t)
{
	int ret, i;

	memset(t, 0, sizeof(*t));
	ret = opts_parse(c, argc, argv, t, &i);
	if (ret)
		return ret;
	if (i < argc && t->what) {
		fprintf(stderr, "rinxctl testbed: %s and %s: one testbed\n",
			t->what, argv[i]);
		return OPTS_USAGE;
	}
	if (i < argc)
		t->what = argv[i];
	return OPTS_OK;
}

static int down_one(const char *what)
{
	int ret, n = 0;

	ret = rinx_testbed_down(what, &n);
	if (ret) {
		fprintf(stderr, "rinxctl testbed down %s: %s\n", what,
			strerror(-ret));
		return ret;
	}
	printf("testbed %s: %d namespace%s removed\n", what, n,
	       n == 1 ? "" : "s");
	return 0;
}

static int testbed_down(int argc, char **argv)
{
	char path[RINX_PATH_MAX + 256];
	struct tb_target t;
	struct dirent *e;
	int ret;
	DIR *d;

	ret = get_target(&down_cmd, argc, argv, &t);
	if (ret)
		return opts_exit(ret);
	if (!t.what == !t.all) {
		fprintf(stderr, "rinxctl testbed down: PREFIX|SPEC or --all\n");
		return RINX_EXIT_USAGE;
	}
	if (t.what)
		return down_one(t.what) ? RINX_EXIT_FAIL : 0;
	d = opendir(RINX_TB_SPEC_DIR);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (n <= 5 || strcmp(e->d_name + n - 5, ".spec"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", RINX_TB_SPEC_DIR,
			 e->d_name);
		if (down_one(path))
			ret = RINX_EXIT_FAIL;
	}
	closedir(d);
	return ret;
}

static int load_target(const char *what, char *path, size_t len,
		       struct rinx_spec *s)
{
	char err[200];
	size_t n = strlen(what);
	int ret;

	if (strchr(what, '/') || (n > 5 && !strcmp(what + n - 5, ".spec")))
		snprintf(path, len, "%s", what);
	else
		rinx_testbed_spec_path(what, path, len);
	ret = rinx_spec_load(path, s, err, sizeof(err));
	if (ret)
		fprintf(stderr, "rinxctl testbed show: %s: %s\n", path,
			ret == -ENOENT ? "no such testbed spec" : err);
	return ret;
}

/* A port of switch namespace ns of a topology testbed, "eth0" if none. */
static void topo_port(const struct rinx_spec *s, const char *ns, char *buf,
		      size_t len)
{
	struct rinx_tb_port_link *pl = calloc(256, sizeof(*pl));
	int n = pl ? rinx_testbed_link_get(s, pl, 256) : 0, i;

	snprintf(buf, len, "eth0");
	for (i = 0; i < n; i++)
		if (!strcmp(pl[i].ns, ns)) {
			snprintf(buf, len, "%s", pl[i].ifname);
			break;
		}
	free(pl);
}

static void show_switch(const char *ns, const char *ifname, const char *what)
{
	__u64 c[RINX_SW_STAT_MAX];
	int i, ret;

	ret = rinx_testbed_switch_stats(ns, ifname, c);
	printf("  %-20s %-8s", ns, what);
	if (ret) {
		printf(" (no switch: %s)\n", strerror(-ret));
		return;
	}
	for (i = 0; i < RINX_SW_STAT_MAX; i++)
		printf(" %s=%llu", rinx_sw_stat_name(i),
		       (unsigned long long)c[i]);
	printf("\n");
}

/* Sum over CPUs of the counters the ToR aggregator of rack r pinned. */
static int agg_stats(const struct rinx_spec *s, const struct rinx_spec_rack *r,
		     __u64 out[RINX_STAT_MAX])
{
	char path[RINX_PATH_MAX + RINX_NAME_MAX + 16];
	int ncpu = libbpf_num_possible_cpus();
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	int fd, i, c, err = 0;

	if (ncpu <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s/stats", s->pin, r->name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	memset(out, 0, sizeof(__u64) * RINX_STAT_MAX);
	/* A program built with fewer counters has a shorter map. */
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen)) {
		err = -errno;
		close(fd);
		return err;
	}
	for (i = 0; i < RINX_STAT_MAX && (__u32)i < info.max_entries; i++) {
		__u64 v[ncpu];
		__u32 k = i;

		if (bpf_map_lookup_elem(fd, &k, v)) {
			err = -errno;
			break;
		}
		for (c = 0; c < ncpu; c++)
			out[i] += v[c];
	}
	close(fd);
	return err;
}

static void show_rack(const struct rinx_spec *s,
		      const struct rinx_spec_rack *r)
{
	__u64 c[RINX_STAT_MAX];
	char ip[INET_ADDRSTRLEN];
	const __u8 *m = r->mac;
	int i, ret, any = 0;

	printf("rack %d  ina %s", r->id, ina_str(r->ina));
	if (r->ina != RINX_INA_SWITCH) {
		printf("\n");
		return;
	}
	inet_ntop(AF_INET, &r->ip, ip, sizeof(ip));
	printf("  aggregator %s %02x:%02x:%02x:%02x:%02x:%02x %s%s%s\n",
	       r->name, m[0], m[1], m[2], m[3], m[4], m[5], ip,
	       r->netns[0] ? " in " : "", r->netns);
	ret = agg_stats(s, r, c);
	if (ret) {
		printf("  %s counters: (not pinned: %s)\n", r->name,
		       strerror(-ret));
		return;
	}
	printf("  %s counters:", r->name);
	for (i = 0; i < RINX_STAT_MAX; i++) {
		if (!c[i])
			continue;
		printf(" %s=%llu", rinx_stat_name(i),
		       (unsigned long long)c[i]);
		any = 1;
	}
	printf("%s\n", any ? "" : " all zero");
}

static void show_links(const struct rinx_spec *s);
static void show_queue(const char *prefix);

/* How the hosts' interfaces are polled (testbed up --napi): in softirq,
 * or by threads, and how many of those run at the testbed's priority. */
static void show_napi(const struct rinx_spec *s)
{
	int i, n = 0, threads = 0, fifo = 0, f, k;

	for (i = 0; i < s->nhosts; i++) {
		if (!s->hosts[i].netns[0])
			continue;
		k = rinx_tb_napi_state(s->hosts[i].netns, s->hosts[i].ifname,
				       &f);
		if (k < 0) {
			printf("napi: unknown (%s: %s)\n", s->hosts[i].name,
			       strerror(-k));
			return;
		}
		n++;
		threads += k > 0;
		fifo += k > 0 && f == k;
	}
	if (!n)
		return;
	if (!threads)
		printf("napi: softirq\n");
	else
		printf("napi: threaded on %d of %d hosts, %d of them at "
		       "SCHED_FIFO %d\n", threads, n, fifo, RINX_TB_NAPI_PRIO);
}

static int testbed_show(int argc, char **argv)
{
	char path[RINX_PATH_MAX], prefix[64], ns[64], ifname[16], ip[16];
	char dir[RINX_PATH_MAX], link[RINX_PATH_MAX + 8];
	struct rinx_spec *s;
	long long mem;
	struct tb_target t;
	int i, r, ret;

	ret = get_target(&show_cmd, argc, argv, &t);
	if (ret)
		return opts_exit(ret);
	if (!t.what) {
		fprintf(stderr, "rinxctl testbed show: PREFIX|SPEC\n");
		return RINX_EXIT_USAGE;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return RINX_EXIT_FAIL;
	ret = load_target(t.what, path, sizeof(path), s);
	if (ret) {
		free(s);
		return ret == -ENOENT ? RINX_EXIT_FAIL : RINX_EXIT_CONFIG;
	}
	if (rinx_testbed_spec_prefix(s, prefix, sizeof(prefix)))
		snprintf(prefix, sizeof(prefix), "-");
	printf("testbed %s  spec %s\n", prefix, path);
	printf("port %u  window %u  jobs %u  mode %s  pin %s\n", s->port,
	       s->window, s->jobs,
	       s->mode == RINX_XDP_GENERIC ? "generic" : "native", s->pin);
	printf("kernel memory per host: %.1f MiB of block slots (%u job slots "
	       "x %u blocks x %zu B) plus tables\n",
	       rinx_spec_mem(s) / 1048576.0, s->jobs, s->window,
	       (size_t)RINX_NODE_BLOCK_BYTES);
	if (rinx_spec_min_link(s))
		printf("slowest link: %u Mbit/s\n", rinx_spec_min_link(s));
	else
		printf("slowest link: unlimited\n");
	if (strcmp(prefix, "-"))
		show_napi(s);
	for (r = 0; r < s->nracks; r++)
		show_rack(s, &s->racks[r]);
	printf("%-4s %-6s %-4s %-20s %-6s %-17s %-15s %-4s %s\n", "rank",
	       "host", "rack", "netns", "if", "mac", "ip", "xdp", "kmem");
	for (i = 0; i < s->nhosts; i++) {
		const struct rinx_spec_host *h = rinx_spec_rank(s, i);
		const __u8 *m;

		if (!h)
			h = &s->hosts[i];
		m = h->mac;
		inet_ntop(AF_INET, &h->ip, ip, sizeof(ip));
		rinx_node_pin_dir(s, h, dir, sizeof(dir));
		snprintf(link, sizeof(link), "%s/link", dir);
		mem = access(link, F_OK) ? -1 : rinx_pinned_mem(dir);
		printf("%-4d %-6s %-4d %-20s %-6s "
		       "%02x:%02x:%02x:%02x:%02x:%02x %-15s %-4s ", h->rank,
		       h->name, h->rack, h->netns[0] ? h->netns : "-",
		       h->ifname, m[0], m[1], m[2], m[3], m[4], m[5], ip,
		       mem < 0 ? "down" : "up");
		if (mem >= 0)
			printf("%.1f MiB\n", mem / 1048576.0);
		else
			printf("-\n");
	}
	if (strcmp(prefix, "-")) {
		printf("switches:\n");
		for (r = 0; r < s->nracks; r++) {
			/* All ports of a switch share one program and its
			 * counters: ask any of them. */
			snprintf(ns, sizeof(ns), "%st%d", prefix, r);
			if (s->topo[0]) {
				/* a topology's switch or server: named as
				 * there, ports named by link */
				topo_port(s, ns, ifname, sizeof(ifname));
				show_switch(ns, ifname, s->racks[r].name);
				continue;
			}
			for (i = 0; i < s->nhosts; i++)
				if (s->hosts[i].rack == s->racks[r].id)
					break;
			if (i < s->nhosts)
				snprintf(ifname, sizeof(ifname), "p%d", i);
			else
				snprintf(ifname, sizeof(ifname), "uplink");
			show_switch(ns, ifname, "tor");
		}
		if (s->nracks > 1 && !s->topo[0]) {
			snprintf(ns, sizeof(ns), "%ssp", prefix);
			show_switch(ns, "t0", "spine");
		}
		show_links(s);
		show_queue(prefix);
	}
	free(s);
	return 0;
}

static int port_cmp(const void *a, const void *b)
{
	const struct rinx_tb_port_link *x = a, *y = b;
	int c = strcmp(x->ns, y->ns);

	return c ? c : strcmp(x->ifname, y->ifname);
}

/* The real queue's process, if it runs. */
static void show_queue(const char *prefix)
{
	struct rinx_tb_queue_stats q;

	if (rinx_testbed_queue_read(prefix, &q)) {
		printf("real queue: not running\n");
		return;
	}
	printf("real queue: pid %d, %d ports: held=%llu sent=%llu "
	       "dropped_full=%llu dropped_bad=%llu late_mean_us=%.1f "
	       "late_max_us=%.1f\n", q.pid, q.ports,
	       (unsigned long long)q.held, (unsigned long long)q.sent,
	       (unsigned long long)q.full, (unsigned long long)q.bad,
	       q.sent ? q.late_sum_ns / 1e3 / q.sent : 0.0,
	       q.late_max_ns / 1e3);
}

static void show_links(const struct rinx_spec *s)
{
	struct rinx_tb_port_link *pl;
	int i, n, max = 4 * RINX_MAX_NODES;
	char ecn[16], util[16], rinx[24];

	pl = calloc(max, sizeof(*pl));
	if (!pl)
		return;
	n = rinx_testbed_link_get(s, pl, max);
	if (n < 0) {
		printf("links: (cannot read: %s)\n", strerror(-n));
		free(pl);
		return;
	}
	qsort(pl, n, sizeof(*pl), port_cmp);
	printf("links (rate Mbit/s, buffer and ecn B, rinx class %%, faults "
	       "ppm, hold ms; then since set: sent, rinx's bytes, drops, "
	       "marks, peak B, utilization):%s\n",
	       n ? "" : " (none pinned)");
	for (i = 0; i < n; i++) {
		const struct rinx_sw_link *v = &pl[i].v;
		double dt = (pl[i].now_ns - v->set_ns) / 1e9;

		/* counted by class on a port with a queue */
		if (v->set.rate_mbit)
			snprintf(rinx, sizeof(rinx), "%llu",
				 (unsigned long long)v->n_rinx);
		else
			snprintf(rinx, sizeof(rinx), "-");
		if (v->set.ecn == RINX_SW_ECN_OFF)
			snprintf(ecn, sizeof(ecn), "off");
		else
			snprintf(ecn, sizeof(ecn), "%u", v->set.ecn);
		/* frame bytes over what the rate could carry in the time */
		if (v->set.rate_mbit && pl[i].now_ns > v->set_ns)
			snprintf(util, sizeof(util), "%.1f%%", 100.0 *
				 v->n_bytes * 8 / (v->set.rate_mbit * 1e6 * dt));
		else
			snprintf(util, sizeof(util), "-");
		printf("  %-20s %-8s rate=%u buffer=%u ecn=%s share=%u "
		       "queue=%s drop=%u dup=%u reorder=%u hold=%u  for=%.1fs "
		       "frames=%llu bytes=%llu rinx_bytes=%s "
		       "tail_drops=%llu marks=%llu not_ect=%llu peak=%llu "
		       "util=%s dropped=%llu duplicated=%llu held=%llu "
		       "reordered=%llu lost=%llu skipped=%llu real_held=%llu\n",
		       pl[i].ns,
		       pl[i].ifname, v->set.rate_mbit, v->set.buffer, ecn,
		       v->set.share, v->set.real ? "real" : "virtual",
		       v->set.drop_ppm, v->set.dup_ppm,
		       v->set.reorder_ppm, v->set.hold_ms, dt,
		       (unsigned long long)v->n_frames,
		       (unsigned long long)v->n_bytes, rinx,
		       (unsigned long long)v->n_qdrop,
		       (unsigned long long)v->n_mark,
		       (unsigned long long)v->n_nect,
		       (unsigned long long)v->peak, util,
		       (unsigned long long)v->n_drop,
		       (unsigned long long)v->n_dup,
		       (unsigned long long)v->n_hold,
		       (unsigned long long)v->n_reorder,
		       (unsigned long long)v->n_lost,
		       (unsigned long long)v->n_skip,
		       (unsigned long long)v->n_real);
	}
	free(pl);
}

static int testbed_fault(int argc, char **argv)
{
	struct tb_target t;
	int ret, n = 0;

	ret = get_target(&fault_cmd, argc, argv, &t);
	if (ret)
		return opts_exit(ret);
	if (!t.what || (t.all && t.port) || !t.link.mask) {
		fprintf(stderr, "rinxctl testbed fault: want PREFIX|SPEC, "
			"--port NS:IF or --all, and at least one of --drop "
			"--dup --reorder --hold --rate --buffer --ecn "
			"--share --queue\n");
		return RINX_EXIT_USAGE;
	}
	ret = rinx_testbed_fault_set(t.what, t.port, &t.link.set, t.link.mask,
				     &n);
	if (!ret && t.link.set.real)
		ret = rinx_testbed_queue_start(t.what);
	if (ret) {
		fprintf(stderr, "rinxctl testbed fault: %s\n",
			strerror(-ret));
		return ret == -EINVAL || ret == -ENODEV || ret == -ENOENT ?
		       RINX_EXIT_CONFIG : rinx_exit_code(ret);
	}
	printf("testbed %s: links set on %d port%s\n", t.what, n,
	       n == 1 ? "" : "s");
	return 0;
}

static int testbed_ina_off(int argc, char **argv)
{
	char *end;
	long rack;
	int ret, i;

	ret = opts_parse(&ina_off_cmd, argc, argv, NULL, &i);
	if (ret)
		return opts_exit(ret);
	if (i != 1 || argc != 3) {
		fprintf(stderr, "usage: rinxctl testbed ina-off PREFIX|SPEC "
			"RACK\n");
		return RINX_EXIT_USAGE;
	}
	rack = strtol(argv[2], &end, 10);
	if (*end || end == argv[2] || rack < 0 || rack >= RINX_TB_MAX_RACKS) {
		fprintf(stderr, "rinxctl testbed ina-off: bad rack '%s'\n",
			argv[2]);
		return RINX_EXIT_USAGE;
	}
	ret = rinx_testbed_ina_off(argv[1], rack);
	if (ret) {
		fprintf(stderr, "rinxctl testbed ina-off: %s\n",
			strerror(-ret));
		return ret == -ENOENT || ret == -EINVAL ? RINX_EXIT_CONFIG :
							  rinx_exit_code(ret);
	}
	printf("testbed %s: rack %ld's ToR no longer aggregates\n", argv[1],
	       rack);
	return 0;
}

static int testbed_plan(int argc, char **argv)
{
	int ret, n = 0, nb = 0, i;

	ret = opts_parse(&plan_cmd, argc, argv, NULL, &i);
	if (ret)
		return opts_exit(ret);
	if (i != 1 || argc < 2 || argc > 3) {
		fprintf(stderr, "usage: rinxctl testbed plan PREFIX|SPEC "
			"[topo:NAME]\n");
		return RINX_EXIT_USAGE;
	}
	ret = rinx_testbed_topo_plan(argv[1], argc == 3 ? argv[2] : NULL, &n,
				     &nb);
	if (ret) {
		fprintf(stderr, "rinxctl testbed plan: %s\n", strerror(-ret));
		return ret == -ENOENT || ret == -EINVAL ||
		       ret == -EOPNOTSUPP ? RINX_EXIT_CONFIG :
					    rinx_exit_code(ret);
	}
	printf("testbed %s: plan %s, %d flow entries, %d broadcast entries\n",
	       argv[1], argc == 3 ? argv[2] : "of the spec", n, nb);
	return 0;
}

static int testbed_queue(int argc, char **argv)
{
	int ret, i;

	ret = opts_parse(&queue_cmd, argc, argv, NULL, &i);
	if (ret)
		return opts_exit(ret);
	if (i != 1 || argc != 2) {
		fprintf(stderr, "usage: rinxctl testbed queue PREFIX|SPEC\n");
		return RINX_EXIT_USAGE;
	}
	ret = rinx_testbed_queue_run(argv[1]);
	if (ret) {
		fprintf(stderr, "rinxctl testbed queue: %s\n", strerror(-ret));
		return ret == -ENOENT || ret == -EINVAL ||
		       ret == -EOPNOTSUPP ? RINX_EXIT_CONFIG :
					    rinx_exit_code(ret);
	}
	return 0;
}

int cmd_testbed(int argc, char **argv)
{
	const char *act = argc > 1 ? argv[1] : "";

	/* the action is argv[0] of its parser */
	if (!strcmp(act, "up"))
		return testbed_up(argc - 1, argv + 1);
	if (!strcmp(act, "down"))
		return testbed_down(argc - 1, argv + 1);
	if (!strcmp(act, "show"))
		return testbed_show(argc - 1, argv + 1);
	if (!strcmp(act, "fault"))
		return testbed_fault(argc - 1, argv + 1);
	if (!strcmp(act, "ina-off"))
		return testbed_ina_off(argc - 1, argv + 1);
	if (!strcmp(act, "plan"))
		return testbed_plan(argc - 1, argv + 1);
	if (!strcmp(act, "queue"))
		return testbed_queue(argc - 1, argv + 1);
	if (!strcmp(act, "-h") || !strcmp(act, "--help")) {
		opts_help(stdout, &up_cmd);
		return 0;
	}
	opts_help(stderr, &up_cmd);
	return RINX_EXIT_USAGE;
}
