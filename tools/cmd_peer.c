// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinxctl peer mpi: the same allreduce sweep as `rinxctl bench`, done by
 * Open MPI over TCP on the same testbed, for a side-by-side comparison.
 *
 * Installs Open MPI when missing (tools/deps.sh peers), builds
 * $(OUT)/peers/mpi_bench (`make peers`, kept out of `make` so that the build
 * and the tests do not need MPI), writes a hostfile with one line per host
 * namespace, and runs mpirun inside the first host's namespace with
 * tools/peers/mpi-agent.sh as its launcher: the agent starts the other ranks
 * with `ip netns exec` in a UTS namespace named after the host, so that every
 * namespace is a node of its own. mpi_bench prints JSON lines; they are shown
 * in the table of rinxctl bench with a column naming the algorithm.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tools/bench.h"
#include "tools/cmds.h"
#include "tools/opts.h"
#include "tools/gen.h"
#include "tools/proc.h"
#include "user/ctl.h"

#define PEER_MAX_SIZES	32

struct peer_opts {
	const char *spec;
	const char *sizes;
	int iters, warmup;
	int ring;		/* force the ring algorithm */
	int int32;
	int data;		/* enum gen_data; -1: by dtype */
	int json, verify;
	int timeout_s;
	int no_install;
};

struct peer_row {
	unsigned long long bytes, elements;
	double min_us, median_us, max_us, algbw, busbw, eps, worst;
	long wrong;
	int verified;		/* -1 not checked, 0 wrong, 1 ok */
};

struct peer_run {
	int ranks, runs, warmup, verify, header;
	char dtype[16];
	char data[16];		/* as mpi_bench's header names it */
	struct peer_row rows[PEER_MAX_SIZES];
	int nrows;
};

static volatile sig_atomic_t peer_stop;

static void peer_sig(int sig)
{
	peer_stop = sig;
}

/*
 * The source tree: the parent of the directory holding rinxctl (build/ is
 * $(OUT)), else the current directory. bindir receives rinxctl's directory.
 */
static int find_tree(char *root, size_t rlen, char *bindir, size_t blen)
{
	char exe[PATH_MAX], buf[PATH_MAX + 64];
	ssize_t n;
	char *slash;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -errno;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	snprintf(bindir, blen, "%s", exe);
	slash = strrchr(exe, '/');
	if (slash) {
		*slash = 0;
		snprintf(buf, sizeof(buf), "%s/tools/peers/mpi-agent.sh",
			 *exe ? exe : "/");
		if (proc_is_file(buf)) {
			snprintf(root, rlen, "%s", *exe ? exe : "/");
			return 0;
		}
	}
	if (getcwd(exe, sizeof(exe)) && proc_is_file("tools/peers/mpi-agent.sh")) {
		snprintf(root, rlen, "%s", exe);
		return 0;
	}
	return -ENOENT;
}


/*
 * Runs argv in its own process group with stdout sent to stderr, waits at
 * most timeout_s. Exit status, -ETIMEDOUT, -EINTR or -errno.
 */
static int run_quiet(char *const argv[], int timeout_s)
{
	double deadline = proc_now_s() + timeout_s;
	int status;
	pid_t pid, w;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		setpgid(0, 0);
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "rinxctl peer: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (peer_stop || proc_now_s() > deadline) {
			proc_kill_group(pid);
			waitpid(pid, &status, 0);
			return peer_stop ? -EINTR : -ETIMEDOUT;
		}
		usleep(50000);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

static int ensure_mpi(const struct peer_opts *o, const char *root)
{
	char deps[PATH_MAX + 32];
	char *argv[] = { deps, "peers", NULL };
	int ret;

	if (proc_in_path("mpirun") && proc_in_path("mpicc"))
		return 0;
	snprintf(deps, sizeof(deps), "%s/tools/deps.sh", root);
	if (o->no_install) {
		fprintf(stderr, "rinxctl peer: Open MPI is not installed "
			"(mpirun, mpicc); run %s peers\n", deps);
		return -ENOENT;
	}
	if (!proc_is_file(deps)) {
		fprintf(stderr, "rinxctl peer: Open MPI is not installed and "
			"%s is missing; install the Debian packages "
			"openmpi-bin libopenmpi-dev\n", deps);
		return -ENOENT;
	}
	fprintf(stderr, "rinxctl peer: Open MPI missing, running %s peers\n",
		deps);
	ret = run_quiet(argv, 1800);
	if (ret || !proc_in_path("mpirun") || !proc_in_path("mpicc")) {
		fprintf(stderr, "rinxctl peer: %s peers failed (%d); Open MPI "
			"(openmpi-bin libopenmpi-dev) is needed\n", deps, ret);
		return -ENOENT;
	}
	return 0;
}

static int build_bench(const char *root, const char *bindir, char *bench,
		       size_t len)
{
	char out[PATH_MAX + 8];
	char *argv[] = { "make", "-s", "-C", (char *)root, "--no-print-directory",
			 out, "peers", NULL };
	int ret;

	snprintf(out, sizeof(out), "OUT=%s", bindir);
	snprintf(bench, len, "%s/peers/mpi_bench", bindir);
	ret = run_quiet(argv, 300);
	if (ret || access(bench, X_OK)) {
		fprintf(stderr, "rinxctl peer: could not build %s "
			"(make -C %s %s peers: %d)\n", bench, root, out, ret);
		return -ENOENT;
	}
	return 0;
}


static void parse_line(struct peer_run *run, const char *line)
{
	struct peer_row *r;
	const char *p;
	double v;

	if (!strncmp(line, "{\"ranks\":", 9)) {
		if (!proc_json_num(line, "ranks", &v))
			run->ranks = (int)v;
		if (!proc_json_num(line, "runs", &v))
			run->runs = (int)v;
		if (!proc_json_num(line, "warmup", &v))
			run->warmup = (int)v;
		run->verify = !!strstr(line, "\"verify\":true");
		p = strstr(line, "\"dtype\":\"");
		if (p)
			sscanf(p + 9, "%15[a-z0-9]", run->dtype);
		p = strstr(line, "\"data\":\"");
		if (p)
			sscanf(p + 8, "%15[a-z0-9]", run->data);
		run->header = 1;
		return;
	}
	if (run->nrows >= PEER_MAX_SIZES)
		return;
	r = &run->rows[run->nrows];
	memset(r, 0, sizeof(*r));
	if (proc_json_num(line, "bytes", &v))
		return;
	r->bytes = (unsigned long long)v;
	if (!proc_json_num(line, "elements", &v))
		r->elements = (unsigned long long)v;
	proc_json_num(line, "min_us", &r->min_us);
	proc_json_num(line, "median_us", &r->median_us);
	proc_json_num(line, "max_us", &r->max_us);
	proc_json_num(line, "algbw_gbs", &r->algbw);
	proc_json_num(line, "busbw_gbs", &r->busbw);
	proc_json_num(line, "elements_per_s", &r->eps);
	proc_json_num(line, "worst", &r->worst);
	if (!proc_json_num(line, "wrong", &v))
		r->wrong = (long)v;
	r->verified = strstr(line, "\"verified\":true") ? 1 :
		      strstr(line, "\"verified\":false") ? 0 : -1;
	run->nrows++;
}

static void print_header(const struct peer_run *run, const char *algo)
{
	int d = gen_data_parse(run->data);

	printf("# %s allreduce (Open MPI, TCP): %d ranks, %s, data %s, median "
	       "of %d runs after %d warm-up, verify %s\n"
	       "# data %s: %s\n"
	       "# %12s %11s %10s %10s %10s %9s %9s %10s %-6s %s\n", algo,
	       run->ranks, run->dtype, run->data, run->runs, run->warmup,
	       run->verify ? "on" : "off", run->data,
	       d < 0 ? "?" : gen_data_about[d], "bytes", "elements", "min_us",
	       "median_us", "max_us", "algbw", "busbw", "Melem/s", "verify",
	       "algo");
	fflush(stdout);
}

static void print_row(const struct peer_row *r, const char *algo)
{
	printf("  %12llu %11llu %10.1f %10.1f %10.1f %9.3f %9.3f %10.1f %-6s "
	       "%s\n", r->bytes, r->elements, r->min_us, r->median_us,
	       r->max_us, r->algbw, r->busbw, r->eps / 1e6,
	       r->verified < 0 ? "-" : r->verified ? "ok" : "WRONG", algo);
	fflush(stdout);
}

static void print_json(const struct peer_run *run, const char *algo)
{
	int k;

	printf("{\"peer\":\"%s\",\"ranks\":%d,\"dtype\":\"%s\","
	       "\"data\":\"%s\",\"runs\":%d,\"warmup\":%d,\"verify\":%s,"
	       "\"results\":[", algo, run->ranks, run->dtype, run->data,
	       run->runs, run->warmup,
	       run->verify ? "true" : "false");
	for (k = 0; k < run->nrows; k++) {
		const struct peer_row *r = &run->rows[k];

		printf("%s{\"bytes\":%llu,\"elements\":%llu,\"min_us\":%.1f,"
		       "\"median_us\":%.1f,\"max_us\":%.1f,\"algbw_gbs\":%.4f,"
		       "\"busbw_gbs\":%.4f,\"elements_per_s\":%.0f,"
		       "\"verified\":%s,\"algo\":\"%s\"}", k ? "," : "",
		       r->bytes, r->elements, r->min_us, r->median_us,
		       r->max_us, r->algbw, r->busbw, r->eps,
		       r->verified < 0 ? "null" : r->verified ? "true" : "false",
		       algo);
	}
	printf("]}\n");
}

/* Splits buf into lines; hands complete ones to fn, keeps the rest. */

struct out_ctx {
	struct peer_run *run;
	const struct peer_opts *o;
	const char *algo;
};

static void on_stdout(const char *line, void *p)
{
	struct out_ctx *c = p;
	int had = c->run->header, rows = c->run->nrows;

	if (line[0] != '{') {
		if (*line)
			fprintf(stderr, "%s\n", line);
		return;
	}
	parse_line(c->run, line);
	if (c->o->json)
		return;
	if (!had && c->run->header)
		print_header(c->run, c->algo);
	if (c->run->nrows > rows)
		print_row(&c->run->rows[rows], c->algo);
}

/*
 * Runs argv (mpirun wrapped in ip netns exec / unshare) and parses its
 * output. 0, -ETIMEDOUT, -EINTR, -EIO (mpirun failed) or -errno.
 */
static int run_mpirun(char *const argv[], const struct peer_opts *o,
		      struct out_ctx *ctx)
{
	int ret = proc_run_lines("rinxctl peer", argv, o->timeout_s,
				 &peer_stop, on_stdout, proc_stderr, ctx);

	if (ret > 0) {
		fprintf(stderr, "rinxctl peer: mpirun failed (%s %d)\n",
			ret >= 128 ? "signal" : "exit",
			ret >= 128 ? ret - 128 : ret);
		ret = -EIO;
	}
	return ret;
}

static int write_hostfile(const char *path, const struct rinx_spec *s)
{
	FILE *f = fopen(path, "w");
	int r;

	if (!f)
		return -errno;
	for (r = 0; r < s->nhosts; r++)
		fprintf(f, "%s slots=1\n", rinx_spec_rank(s, r)->netns);
	return fclose(f) ? -errno : 0;
}

/* the list goes to mpi_bench as it is: sizes only */
static int opt_sizes(const char *v, void *field, char *why, size_t len)
{
	const char *p;

	(void)why;
	(void)len;
	for (p = v; *p; p++)
		if (!strchr("0123456789.,KkMmGgBb", *p))
			return -1;
	if (!*v || strlen(v) > 400)
		return -1;
	*(const char **)field = v;
	return 0;
}

static const struct opt_choice algos[] = {
	{ "tuned", 0, 0 },
	{ "ring", 1, 0 },
	{ NULL, 0, 0 },
};

static const struct opt_choice dtypes[] = {
	{ "float32", 0, 0 },
	{ "int32", 1, 0 },
	{ "float", 0, 1 },
	{ "int", 1, 1 },
	{ NULL, 0, 0 },
};

#define P_AT(m) OPT_AT(struct peer_opts, m)

static const struct opt peer_opts[] = {
	{ OPT_TEXT, .help =
"Open MPI's MPI_Allreduce(SUM) over TCP on the hosts of a testbed spec, one\n"
"rank per host namespace, in the table of `rinxctl bench`.\n" },
	{ OPT_STR, "spec", 0, "FILE", P_AT(spec) },
	{ OPT_FN, "sizes", 0, "LIST", P_AT(sizes), .parse = opt_sizes,
	  .def = "1M,16M,64M", .range = BENCH_SIZES_RANGE,
	  .help = "bytes per rank, e.g. {} (default; suffix K, M, G)" },
	{ OPT_FN, "size", 0, "LIST", P_AT(sizes), .parse = opt_sizes,
	  .range = BENCH_SIZES_RANGE },
	{ OPT_INT, "iters", 0, "N", P_AT(iters), .min = 1, .max = 1000,
	  .def = "5",
	  .help = "timed runs per size (default {}; the median is reported)" },
	{ OPT_INT, "warmup", 0, "N", P_AT(warmup), .min = 0, .max = INT_MAX,
	  .def = "1", .help = "untimed runs before them (default {})" },
	{ OPT_ENUM, "algo", 0, "A", P_AT(ring), .choices = algos,
	  .def = "tuned",
	  .help = "{} (Open MPI's choice, default) or ring" },
	{ OPT_ENUM, "dtype", 0, "T", P_AT(int32), .choices = dtypes,
	  .def = "float32", .help = "{} (default) or int32" },
	{ OPT_FN, "data", 0, "D", P_AT(data), .parse = bench_opt_data,
	  .range = "grad|worst|ints",
	  .help = "grad (float32 default), worst or ints (int32): the data\n"
		  "of rinxctl bench --data (see its --help)" },
	{ OPT_CLEAR, "no-verify", 0, P_AT(verify),
	  .help = "skip the check of every element after every run" },
	{ OPT_FLAG, "json", 0, P_AT(json),
	  .help = "one JSON object instead of the table" },
	{ OPT_INT, "timeout", 0, "S", P_AT(timeout_s), .min = 1,
	  .max = INT_MAX, .def = "900",
	  .help = "limit of the whole mpirun, seconds (default {})" },
	{ OPT_FLAG, "no-install", 0, P_AT(no_install),
	  .help = "fail instead of installing missing packages" },
	{ OPT_TEXT, .help =
"Needs Open MPI (installed with tools/deps.sh peers when missing) and builds\n"
"$(OUT)/peers/mpi_bench with `make peers`.\n"
"output: min/median/max time of the slowest rank, algbw = bytes / median,\n"
"busbw = algbw * 2(n-1)/n (GB/s = 1e9 B/s), Melem/s = elements / median\n" },
	{ OPT_END },
};

static const struct opts_cmd peer_cmd = {
	.name = "peer", .synopsis = "mpi --spec FILE [options]",
	.tab = peer_opts, .col = 19,
};

/* The table, then what it cannot say alone. OPTS_OK, _HELP or _USAGE. */
static int peer_args(int argc, char **argv, struct peer_opts *o)
{
	int ret;

	ret = opts_parse(&peer_cmd, argc, argv, o, NULL);
	if (ret)
		return ret;
	if (o->data < 0)
		o->data = o->int32 ? GEN_INTS : GEN_GRAD;
	if ((o->data == GEN_INTS) != o->int32) {
		fprintf(stderr, "rinxctl peer: --data ints goes with --dtype "
			"int32, grad and worst with float32\n");
		return OPTS_USAGE;
	}
	if (!o->spec) {
		fprintf(stderr, "rinxctl peer: --spec FILE is required "
			"(rinxctl testbed up prints one)\n");
		return OPTS_USAGE;
	}
	return OPTS_OK;
}

/* Open MPI is given one interface name, and mpirun runs in host 0's
 * namespace. 0 or an exit code. */
static int check_spec(const struct peer_opts *o, const struct rinx_spec *s)
{
	const char *ifname;
	int r;

	if (s->nhosts < 1) {
		fprintf(stderr, "rinxctl peer: no hosts in %s\n", o->spec);
		return RINX_EXIT_CONFIG;
	}
	ifname = rinx_spec_rank(s, 0)->ifname;
	for (r = 1; r < s->nhosts; r++)
		if (strcmp(rinx_spec_rank(s, r)->ifname, ifname)) {
			fprintf(stderr, "rinxctl peer: hosts use different "
				"interface names (%s, %s); Open MPI is given "
				"one\n", ifname, rinx_spec_rank(s, r)->ifname);
			return RINX_EXIT_CONFIG;
		}
	if (!rinx_spec_rank(s, 0)->netns[0]) {
		fprintf(stderr, "rinxctl peer: host 0 has no netns in %s\n",
			o->spec);
		return RINX_EXIT_CONFIG;
	}
	return 0;
}

/* The rows mpi_bench printed: the summary, and the exit code. */
static int peer_report(const struct peer_opts *o, const struct peer_run *run,
		       const char *algo, int ret)
{
	double worst = 0;
	int r, wrong = 0;

	for (r = 0; r < run->nrows; r++) {
		if (run->rows[r].verified == 0)
			wrong++;
		if (run->rows[r].worst > worst)
			worst = run->rows[r].worst;
	}
	if (o->json && run->header)
		print_json(run, algo);
	else if (!o->json && run->verify && run->nrows)
		printf("# verify: %s; %s worst error %.3f of the bound\n",
		       wrong ? "FAILED" : "every element ok", run->dtype, worst);
	if (ret == -ETIMEDOUT)
		return RINX_EXIT_TIMEOUT;
	if (ret)
		return RINX_EXIT_FAIL;
	if (wrong) {
		fprintf(stderr, "rinxctl peer: WRONG RESULTS\n");
		return RINX_EXIT_WRONG;
	}
	if (!run->header || !run->nrows) {
		fprintf(stderr, "rinxctl peer: mpi_bench printed no results\n");
		return RINX_EXIT_FAIL;
	}
	return 0;
}

static int peer_mpi(int argc, char **argv)
{
	/* the rest from the table's defaults */
	struct peer_opts o = { .verify = 1, .data = -1 };
	char root[PATH_MAX], bindir[PATH_MAX], bench[PATH_MAX + 32];
	char agent[PATH_MAX + 64], dir[] = "/tmp/rinx-peer-XXXXXX";
	char hostfile[64], np[16], iters[16], warmup[16], err[256];
	const char *algo, *ifname, *ns0;
	struct peer_run run;
	struct out_ctx ctx;
	struct rinx_spec s;
	char *av[80];
	int a = 0, ret;

	ret = peer_args(argc, argv, &o);
	if (ret)
		return opts_exit(ret);
	if (rinx_spec_load(o.spec, &s, err, sizeof(err))) {
		fprintf(stderr, "rinxctl peer: %s\n", err);
		return RINX_EXIT_CONFIG;
	}
	ret = check_spec(&o, &s);
	if (ret)
		return ret;
	ns0 = rinx_spec_rank(&s, 0)->netns;
	ifname = rinx_spec_rank(&s, 0)->ifname;
	if (find_tree(root, sizeof(root), bindir, sizeof(bindir))) {
		fprintf(stderr, "rinxctl peer: cannot find the rinx source tree "
			"(tools/peers/mpi-agent.sh) next to rinxctl or in the "
			"current directory\n");
		return RINX_EXIT_CONFIG;
	}
	signal(SIGINT, peer_sig);
	signal(SIGTERM, peer_sig);
	signal(SIGPIPE, SIG_IGN);
	if (ensure_mpi(&o, root))
		return RINX_EXIT_CONFIG;
	if (build_bench(root, bindir, bench, sizeof(bench)))
		return RINX_EXIT_FAIL;
	snprintf(agent, sizeof(agent), "%s/tools/peers/mpi-agent.sh", root);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "rinxctl peer: mkdtemp: %s\n", strerror(errno));
		return RINX_EXIT_FAIL;
	}
	snprintf(hostfile, sizeof(hostfile), "%s/hostfile", dir);
	ret = write_hostfile(hostfile, &s);
	if (ret) {
		fprintf(stderr, "rinxctl peer: %s: %s\n", hostfile,
			strerror(-ret));
		rmdir(dir);
		return RINX_EXIT_FAIL;
	}
	algo = o.ring ? "ompi-ring" : "ompi-tuned";
	snprintf(np, sizeof(np), "%d", s.nhosts);
	snprintf(iters, sizeof(iters), "%d", o.iters);
	snprintf(warmup, sizeof(warmup), "%d", o.warmup);

	/* mpirun's own node is host 0: same namespace, hostname */
	a = proc_mpirun_argv(av, a, &(struct proc_mpirun){
		.ns0 = ns0, .np = np, .hostfile = hostfile, .agent = agent,
		.ifname = ifname, .ring = o.ring });
	av[a++] = bench;
	av[a++] = "--sizes"; av[a++] = (char *)o.sizes;
	av[a++] = "--iters"; av[a++] = iters;
	av[a++] = "--warmup"; av[a++] = warmup;
	av[a++] = "--dtype"; av[a++] = o.int32 ? "int32" : "float32";
	av[a++] = "--data"; av[a++] = (char *)gen_data_name(o.data);
	if (!o.verify)
		av[a++] = "--no-verify";
	av[a] = NULL;

	memset(&run, 0, sizeof(run));
	ctx = (struct out_ctx){ .run = &run, .o = &o, .algo = algo };
	ret = run_mpirun(av, &o, &ctx);
	unlink(hostfile);
	rmdir(dir);
	return peer_report(&o, &run, algo, ret);
}

int cmd_peer(int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "--help") ||
				  !strcmp(argv[1], "-h"))) {
			opts_help(stdout, &peer_cmd);
			return 0;
		}
		opts_help(stderr, &peer_cmd);
		return RINX_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "mpi"))
		return peer_mpi(argc - 1, argv + 1);
	fprintf(stderr, "rinxctl peer: unknown peer '%s' (known: mpi)\n",
		argv[1]);
	return RINX_EXIT_USAGE;
}
