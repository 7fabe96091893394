// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* rinxctl up, down, stats, plan. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/cmds.h"
#include "tools/opts.h"
#include "user/ctl.h"
#include "user/plan/plan.h"

int rinx_exit_code(int err)
{
	switch (err) {
	case 0: return RINX_EXIT_OK;
	case -EINVAL: case -ENOENT: case -ENODEV: case -EEXIST: case -EBUSY:
	case -EPROTO:
		return RINX_EXIT_CONFIG;
	case -EMSGSIZE: return RINX_EXIT_WRONG;
	case -ETIMEDOUT: return RINX_EXIT_TIMEOUT;
	case -EPERM: case -EACCES: case -EOPNOTSUPP:
		return RINX_EXIT_NOPERM;
	default: return RINX_EXIT_FAIL;
	}
}

struct node_args {
	const char *spec;
	const char *node;
	int json;
	int hosts;
	int force;
	const char *plan;
};

#define NODE_SPEC { OPT_STR, "spec", 's', "FILE", \
	OPT_AT(struct node_args, spec), \
	.help = "the cluster's spec (rinxctl testbed up prints one)" }
#define NODE_NODE(what) { OPT_STR, "node", 'n', "NAME", \
	OPT_AT(struct node_args, node), .help = what }

static const struct opt up_opts[] = {
	{ OPT_TEXT, .help = "  runs doctor's checks first and refuses (exit 6) "
	  "when one is missing,\n  with doctor's report; --force attaches "
	  "anyway\n" },
	NODE_SPEC,
	NODE_NODE("the spec's node this host is"),
	{ OPT_FLAG, "force", 'f', OPT_AT(struct node_args, force),
	  .help = "attach even when a check is missing" },
	{ OPT_END },
};

static const struct opt down_opts[] = {
	NODE_SPEC,
	NODE_NODE("the spec's node this host is"),
	{ OPT_REFUSE, "force", 'f', .help = "is up's" },
	{ OPT_END },
};

static const struct opt stats_opts[] = {
	NODE_SPEC,
	NODE_NODE("only this node (default: every node of the spec)"),
	{ OPT_FLAG, "json", 'j', OPT_AT(struct node_args, json),
	  .help = "one JSON object instead of the text" },
	{ OPT_END },
};

static const struct opt plan_opts[] = {
	NODE_SPEC,
	{ OPT_INT, "hosts", 'H', "N", OPT_AT(struct node_args, hosts),
	  .min = 1, .max = RINX_MAX_NODES,
	  .help = "no spec: N hosts h0..hN-1 in one rack" },
	{ OPT_STR, "plan", 'p', "P", OPT_AT(struct node_args, plan),
	  .help = "ring, rina, ps[:N], ps-ina[:N], har, tree, dbtree or\n"
		  "topo:NAME (a planner on the spec's topology)\n"
		  "(default: the spec's plan=, else rina)" },
	{ OPT_END },
};

static const struct opts_cmd up_cmd = {
	.name = "up", .synopsis = "--spec FILE --node NAME [--force]",
	.tab = up_opts, .col = 17,
};
static const struct opts_cmd down_cmd = {
	.name = "down", .synopsis = "--spec FILE --node NAME",
	.tab = down_opts, .col = 17,
};
static const struct opts_cmd stats_cmd = {
	.name = "stats", .synopsis = "--spec FILE [--node NAME] [--json]",
	.tab = stats_opts, .col = 17,
};
static const struct opts_cmd plan_cmd = {
	.name = "plan", .synopsis = "--spec FILE | --hosts N [--plan P]",
	.tab = plan_opts, .col = 15,
};

static int load_spec(const char *cmd, const char *path, struct rinx_spec *s)
{
	char err[256];

	if (!path) {
		fprintf(stderr, "rinxctl %s: --spec FILE is required\n", cmd);
		return RINX_EXIT_USAGE;
	}
	if (rinx_spec_load(path, s, err, sizeof(err))) {
		fprintf(stderr, "rinxctl %s: %s\n", cmd, err);
		return RINX_EXIT_CONFIG;
	}
	return 0;
}

static int node_op(int argc, char **argv, int up)
{
	const struct rinx_spec_host *h;
	struct node_args a;
	struct rinx_spec s;
	int ret, oldfd;

	memset(&a, 0, sizeof(a));
	ret = opts_parse(up ? &up_cmd : &down_cmd, argc, argv, &a, NULL);
	if (ret)
		return opts_exit(ret);
	ret = load_spec(argv[0], a.spec, &s);
	if (ret)
		return ret;
	if (!a.node) {
		fprintf(stderr, "rinxctl %s: --node NAME is required\n", argv[0]);
		return RINX_EXIT_USAGE;
	}
	h = rinx_spec_host(&s, a.node);
	if (!h) {
		fprintf(stderr, "rinxctl %s: node %s is not in %s\n", argv[0],
			a.node, a.spec);
		return RINX_EXIT_CONFIG;
	}
	if (up && !a.force) {
		char *rep = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&rep, &len);
		int missing;

		if (!f)
			return RINX_EXIT_FAIL;
		/* up mounts the bpffs at pin= itself (rinx_node_up): done
		 * first, so that the doctor judges what up would meet; a
		 * mount that fails is the doctor's to report */
		rinx_pin_root_ready(s.pin);
		missing = doctor_check(&s, h, NULL, f);
		fclose(f);
		if (missing) {
			fprintf(stderr, "rinxctl up: node %s cannot run the "
				"job; rinxctl doctor says:\n%s"
				"rinxctl up: refused (--force attaches "
				"anyway)\n", h->name, rep);
			free(rep);
			return RINX_EXIT_NOPERM;
		}
		free(rep);
	}
	ret = rinx_netns_enter(h->netns, &oldfd);
	if (ret) {
		fprintf(stderr, "rinxctl %s: cannot enter netns %s of node %s\n",
			argv[0], h->netns, h->name);
		return RINX_EXIT_CONFIG;
	}
	ret = up ? rinx_node_up(&s, h) : rinx_node_down(&s, h);
	rinx_netns_leave(oldfd);
	if (ret == -ENOENT && !up) {
		fprintf(stderr, "rinxctl down: node %s was not up\n", h->name);
		return 0;
	}
	if (ret) {
		fprintf(stderr, "rinxctl %s: node %s: %s\n", argv[0], h->name,
			strerror(-ret));
		return rinx_exit_code(ret);
	}
	return 0;
}

int cmd_up(int argc, char **argv) { return node_op(argc, argv, 1); }
int cmd_down(int argc, char **argv) { return node_op(argc, argv, 0); }

/* Own blocks per second the pacer lets out; 0: unpaced. */
static double pace_rate(const struct rinx_cursor *c)
{
	return c->gap_ns ? 1e9 / c->gap_ns : 0;
}

/* Frames the host program handed to the trainer's socket (the slow path:
 * every `slow_` counter). */
static __u64 slow_frames(const __u64 v[RINX_STAT_MAX])
{
	__u64 n = 0;
	int k;

	for (k = 0; k < RINX_STAT_MAX; k++)
		if (!strncmp(rinx_stat_name(k), "slow_", 5))
			n += v[k];
	return n;
}

/* What stats reports of one node: computed first, then printed. */
struct node_report {
	const struct rinx_spec_host *h;
	__u64 v[RINX_STAT_MAX];
	struct rinx_node_job jobs[RINX_MAX_JOBS * 2];
	int nj;
	long long mem;		/* bytes pinned in maps */
};

static int node_report(const struct rinx_spec *s,
		       const struct rinx_spec_host *h, struct node_report *r)
{
	char dir[RINX_PATH_MAX + RINX_NAME_MAX];
	int ret;

	r->h = h;
	ret = rinx_node_stats(s, h, r->v);
	if (ret)
		return ret;
	r->nj = rinx_node_jobs(s, h, r->jobs, RINX_MAX_JOBS * 2);
	rinx_node_pin_dir(s, h, dir, sizeof(dir));
	r->mem = rinx_pinned_mem(dir);
	return 0;
}

static void print_stats_json(const struct rinx_spec *s,
			     const struct node_report *r, int first)
{
	const __u64 *v = r->v;
	int k;

	printf("%s{\"node\":\"%s\",\"rank\":%d", first ? "" : ",",
	       r->h->name, r->h->rank);
	for (k = 0; k < RINX_STAT_MAX; k++)
		printf(",\"%s\":%llu", rinx_stat_name(k),
		       (unsigned long long)v[k]);
	printf(",\"kernel_mem\":%lld,\"job_slots\":%u,\"window\":%u", r->mem,
	       s->jobs, s->window);
	printf(",\"slow_path\":%llu,\"slow_share\":%.6f",
	       (unsigned long long)slow_frames(v),
	       v[RINX_STAT_RX] ? (double)slow_frames(v) / v[RINX_STAT_RX] :
				 0.0);
	printf(",\"jobs\":[");
	for (k = 0; k < r->nj; k++) {
		const struct rinx_node_job *j = &r->jobs[k];

		printf("%s{\"job\":%u,\"slot\":%u,\"round\":%u,"
		       "\"pace_gap_ns\":%u,\"pace_rate\":%.0f,"
		       "\"stored\":%llu,\"marked\":%llu}",
		       k ? "," : "", j->id, j->job.slot, j->cursor.round,
		       j->cursor.gap_ns, pace_rate(&j->cursor),
		       (unsigned long long)j->cursor.stored,
		       (unsigned long long)j->cursor.marked);
	}
	printf("]}");
}

static void print_stats_text(const struct rinx_spec *s,
			     const struct node_report *r)
{
	const __u64 *v = r->v;
	int k;

	printf("node %s (rank %d)\n", r->h->name, r->h->rank);
	printf("  kernel memory: %.1f MiB pinned in maps (%u job slots of %u "
	       "blocks; %d in use)\n", r->mem > 0 ? r->mem / 1048576.0 : 0.0,
	       s->jobs, s->window, r->nj);
	for (k = 0; k < RINX_STAT_MAX; k++)
		if (v[k])
			printf("  %-16s %llu\n", rinx_stat_name(k),
			       (unsigned long long)v[k]);
	if (v[RINX_STAT_RX])
		printf("  slow path: %llu of %llu frames to the trainer "
		       "(%.3f%%)\n", (unsigned long long)slow_frames(v),
		       (unsigned long long)v[RINX_STAT_RX],
		       100.0 * slow_frames(v) / v[RINX_STAT_RX]);
	for (k = 0; k < r->nj; k++) {
		const struct rinx_cursor *cu = &r->jobs[k].cursor;

		printf("  job %u (slot %u): round %u, ", r->jobs[k].id,
		       r->jobs[k].job.slot, cu->round);
		if (cu->gap_ns)
			printf("paced at %.0f blocks/s (%.1f Mbit/s)",
			       pace_rate(cu),
			       pace_rate(cu) * RINX_FRAME_MAX * 8 / 1e6);
		else
			printf("unpaced");
		printf(", %llu blocks stored, %llu marked CE (%.2f%%)\n",
		       (unsigned long long)cu->stored,
		       (unsigned long long)cu->marked,
		       cu->stored ? 100.0 * cu->marked / cu->stored : 0.0);
	}
}

int cmd_stats(int argc, char **argv)
{
	static struct node_report r;
	struct node_args a;
	struct rinx_spec s;
	int ret, i, first = 1, bad = 0;

	memset(&a, 0, sizeof(a));
	ret = opts_parse(&stats_cmd, argc, argv, &a, NULL);
	if (ret)
		return opts_exit(ret);
	ret = load_spec(argv[0], a.spec, &s);
	if (ret)
		return ret;
	if (a.node && !rinx_spec_host(&s, a.node)) {
		fprintf(stderr, "rinxctl stats: node %s is not in %s\n", a.node,
			a.spec);
		return RINX_EXIT_CONFIG;
	}
	if (a.json)
		printf("{\"nodes\":[");
	for (i = 0; i < s.nhosts; i++) {
		const struct rinx_spec_host *h = &s.hosts[i];

		if (a.node && strcmp(a.node, h->name))
			continue;
		ret = node_report(&s, h, &r);
		if (ret) {
			fprintf(stderr, "rinxctl stats: node %s: %s\n", h->name,
				ret == -ENOENT ? "not up" : strerror(-ret));
			bad = ret;
			continue;
		}
		if (a.json)
			print_stats_json(&s, &r, first);
		else
			print_stats_text(&s, &r);
		first = 0;
	}
	if (a.json)
		printf("]}\n");
	return bad ? rinx_exit_code(bad) : 0;
}

int cmd_plan(int argc, char **argv)
{
	struct node_args a;
	struct rinx_spec s;
	int ret, n;

	memset(&a, 0, sizeof(a));
	ret = opts_parse(&plan_cmd, argc, argv, &a, NULL);
	if (ret)
		return opts_exit(ret);
	if (a.spec) {
		ret = load_spec(argv[0], a.spec, &s);
		if (ret)
			return ret;
		n = s.nhosts;
	} else if (a.hosts >= 1 && a.hosts <= RINX_MAX_NODES) {
		n = a.hosts;
	} else {
		fprintf(stderr, "rinxctl plan: give --spec FILE or --hosts 1..%d\n",
			RINX_MAX_NODES);
		return RINX_EXIT_USAGE;
	}
	if (!a.spec) {
		rinx_spec_init(&s);
		s.nhosts = n;
		for (ret = 0; ret < n; ret++) {
			snprintf(s.hosts[ret].name, sizeof(s.hosts[ret].name), "h%d", ret);
			s.hosts[ret].rank = ret;
		}
	}
	if (a.plan) {
		char why[160];

		if (rinx_plan_parse(a.plan, &s.plan, &s.plan_nps, why,
				    sizeof(why))) {
			fprintf(stderr, "rinxctl plan: %s\n", why);
			return RINX_EXIT_USAGE;
		}
	}
	return rinx_plan_print(stdout, &s) ? RINX_EXIT_CONFIG : 0;
}
