// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinxctl compare: rinx against Open MPI (tuned and ring) and PyTorch Gloo
 * on the same testbed, interleaved, every result verified.
 *
 * Candidates: rinx on every --spec (the first one also carries the peers;
 * a second spec of an INA testbed of the same size adds Rina), Open MPI's
 * MPI_Allreduce with its tuned choice and with the ring forced
 * (tools/peers/mpi_bench.c under mpirun, as `rinxctl peer mpi`), and
 * torch.distributed over Gloo (tools/peers/gloo_bench.py with Debian's
 * /usr/bin/python3), one rank per host namespace for all of them.
 *
 * Networks: rinx runs on the testbed. The peers run on the testbed's hosts
 * copied into a bridge network (tools/peernet.c: kernel bridges, no XDP,
 * so TCP keeps the GSO that XDP on a veth takes from its peer; ports shaped
 * to the testbed's rates and buffers), on the testbed itself, or on both
 * (--peer-net); every row names its network.
 *
 * Interleaving: for run index j = 0..iters-1, every candidate (in an order
 * rotated by j) sweeps every size once: warm-up runs, then one timed run,
 * verified. Machine drift over the minutes of a comparison thus hits every
 * candidate alike; the median, min and max per size are over the j.
 *
 * Inputs: all candidates use the generator of rinxctl bench (tools/gen.h)
 * with run index 0 and the same --data, so every candidate reduces the same
 * numbers; a peer whose header names other data fails.
 *
 * CPU: the busy ticks of /proc/stat (all processes, irq and softirq of the
 * whole machine, so also the XDP switches and the TCP stacks) from just
 * before to just after each timed run: rinx through bench_run's --profile,
 * Open MPI through tools/peers/mpi_cpu.c (PMPI, preloaded), Gloo in its
 * rank 0. Reported as CPU seconds per GiB of the reduced tensor.
 */
#include <errno.h>
#include <stddef.h>
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
#include <arpa/inet.h>
#include "tools/bench.h"
#include "tools/cmds.h"
#include "tools/gen.h"
#include "tools/opts.h"
#include "tools/peernet.h"
#include "tools/proc.h"
#include "user/ctl.h"
#include "user/librinx.h"

#define CMP_MAX_SPECS	4
#define CMP_MAX_CANDS	(CMP_MAX_SPECS + 7)
#define CMP_MAX_RUNS	100
#define GIB		(1024.0 * 1024.0 * 1024.0)

enum cand_kind { K_RINX, K_MPI, K_GLOO };

/* The network a candidate runs on: rinx always on the testbed; the peers
 * on the bridge network (tools/peernet.c), on the testbed, or both. */
enum cand_net { NET_TESTBED, NET_BRIDGE, NET_MAX };
#define PEER_NET_BRIDGE	(1 << NET_BRIDGE)
#define PEER_NET_SAME	(1 << NET_TESTBED)

static const char *const net_name[NET_MAX] = { "testbed", "bridge" };

struct cand {
	char name[32];
	char algo[64];
	int kind;
	int spec;		/* K_RINX: index into the specs */
	int ring;		/* K_MPI: force the ring */
	int shm;		/* K_MPI: every rank in rank 0's namespace,
				 * shared memory (no network) */
	int net;		/* enum cand_net */
	__u64 tx_bytes, tx_pkts;	/* sent by the hosts' interfaces */
	__u64 ce;		/* IPv4 packets the hosts received with CE */
	int failed;
	double us[BENCH_MAX_SIZES][CMP_MAX_RUNS];
	int nus[BENCH_MAX_SIZES];
	double cpu_s[BENCH_MAX_SIZES];	/* summed over the timed runs */
	int ncpu[BENCH_MAX_SIZES];
	int wrong[BENCH_MAX_SIZES];
	int checked[BENCH_MAX_SIZES];
};

struct cmp_opts {
	const char *spec_path[CMP_MAX_SPECS];
	struct rinx_spec spec[CMP_MAX_SPECS];
	int nspecs;
	struct bench_opts b;	/* sizes, warmup, dtype, data */
	char sizes_arg[512];
	int iters;
	int mpi_tuned, mpi_ring, mpi_shm, gloo;
	int peer_net;		/* PEER_NET_* */
	struct peernet pn;	/* the bridge network, while it exists */
	int tso[NET_MAX];	/* hosts' TSO: 1 on, 0 off, -1 unknown */
	int csv, json, no_install;
	const char *plot;
	int timeout_s;
	char root[PATH_MAX], bindir[PATH_MAX];
};

/* one size's figures of a candidate, after the runs */
struct fig {
	int ok;
	double med, min, max, algbw, busbw, eps, cpu_gib;
	double util;		/* busbw / slowest link; -1: no link rates */
	int verified;
};

static volatile sig_atomic_t cmp_stop;

static void cmp_sig(int sig)
{
	cmp_stop = sig;
}




/* The source tree: the parent of rinxctl's directory, else the cwd. */
static int find_tree(struct cmp_opts *o)
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
	snprintf(o->bindir, sizeof(o->bindir), "%s", exe);
	slash = strrchr(exe, '/');
	if (slash) {
		*slash = 0;
		snprintf(buf, sizeof(buf), "%s/tools/peers/gloo_bench.py",
			 *exe ? exe : "/");
		if (proc_is_file(buf)) {
			snprintf(o->root, sizeof(o->root), "%s",
				 *exe ? exe : "/");
			return 0;
		}
	}
	if (getcwd(exe, sizeof(exe)) && proc_is_file("tools/peers/gloo_bench.py")) {
		snprintf(o->root, sizeof(o->root), "%s", exe);
		return 0;
	}
	return -ENOENT;
}


typedef void (*line_fn)(const char *line, void *ctx);

/* Splits what fd delivers into lines for fn; *open = 0 at EOF. */

/*
 * Runs argv in its own process group; stdout lines go to out_fn, stderr is
 * passed on (filtered). Exit status, -ETIMEDOUT, -EINTR or -errno.
 */
static int run_lines(char *const argv[], int timeout_s, line_fn out_fn,
		     void *ctx)
{
	return proc_run_lines("rinxctl compare", argv, timeout_s, &cmp_stop,
			      out_fn, proc_stderr, ctx);
}

static void to_stderr(const char *line, void *ctx)
{
	if (*line)
		fprintf(stderr, "%s\n", line);
}

static int run_quiet(char *const argv[], int timeout_s)
{
	return run_lines(argv, timeout_s, to_stderr, NULL);
}


static int size_index(const struct cmp_opts *o, uint64_t bytes)
{
	int k;

	for (k = 0; k < o->b.nsizes; k++)
		if (o->b.sizes[k] == bytes)
			return k;
	return -1;
}

/* ---- packages and helper builds ---- */

static int torch_ok(void)
{
	char *argv[] = { "/usr/bin/python3", "-c",
			 "import numpy, torch.distributed", NULL };

	return access("/usr/bin/python3", X_OK) == 0 &&
	       run_quiet(argv, 120) == 0;
}

static int run_deps(const struct cmp_opts *o, const char *what)
{
	char deps[PATH_MAX + 32];
	char *argv[] = { deps, (char *)what, NULL };

	snprintf(deps, sizeof(deps), "%s/tools/deps.sh", o->root);
	if (o->no_install) {
		fprintf(stderr, "rinxctl compare: packages missing; run %s %s\n",
			deps, what);
		return -ENOENT;
	}
	fprintf(stderr, "rinxctl compare: installing missing packages: %s %s\n",
		deps, what);
	return run_quiet(argv, 1800) ? -ENOENT : 0;
}

static int ensure_peers(const struct cmp_opts *o)
{
	int need_mpi = o->mpi_tuned || o->mpi_ring || o->mpi_shm;

	if ((!need_mpi || (proc_in_path("mpirun") && proc_in_path("mpicc"))) &&
	    (!o->gloo || torch_ok()))
		return 0;
	if (run_deps(o, "peers") ||
	    (need_mpi && (!proc_in_path("mpirun") || !proc_in_path("mpicc"))) ||
	    (o->gloo && !torch_ok())) {
		fprintf(stderr, "rinxctl compare: the peers need the Debian "
			"packages openmpi-bin libopenmpi-dev python3-torch "
			"(tools/deps.sh peers failed or was not allowed); "
			"or leave them out with --peers\n");
		return -ENOENT;
	}
	return 0;
}

static int build_mpi(const struct cmp_opts *o, char *bench, size_t blen,
		     char *shim, size_t slen)
{
	char out[PATH_MAX + 8], src[PATH_MAX + 32], dir[PATH_MAX + 8];
	char *make[] = { "make", "-s", "-C", (char *)o->root,
			 "--no-print-directory", out, "peers", NULL };
	char *cc[] = { "mpicc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra",
		       "-Werror", "-o", shim, src, NULL };
	struct stat a, b;
	int ret;

	snprintf(out, sizeof(out), "OUT=%s", o->bindir);
	snprintf(bench, blen, "%s/peers/mpi_bench", o->bindir);
	snprintf(shim, slen, "%s/peers/mpi_cpu.so", o->bindir);
	snprintf(src, sizeof(src), "%s/tools/peers/mpi_cpu.c", o->root);
	snprintf(dir, sizeof(dir), "%s/peers", o->bindir);
	ret = run_quiet(make, 300);
	if (ret || access(bench, X_OK)) {
		fprintf(stderr, "rinxctl compare: could not build %s (make "
			"peers: %d)\n", bench, ret);
		return -ENOENT;
	}
	if (!stat(shim, &a) && !stat(src, &b) && a.st_mtime >= b.st_mtime)
		return 0;
	mkdir(dir, 0755);
	ret = run_quiet(cc, 120);
	if (ret) {
		fprintf(stderr, "rinxctl compare: could not build %s (%d)\n",
			shim, ret);
		return -ENOENT;
	}
	return 0;
}

/* ---- candidates ---- */

/* The hosts a peer candidate runs on. */
static const struct rinx_spec *cand_spec(const struct cmp_opts *o,
					 const struct cand *c)
{
	return c->net == NET_BRIDGE ? &o->pn.spec : &o->spec[0];
}

/* Bytes and packets the hosts of s have sent so far, CE packets they
 * received. */
static void tx_sum(const struct rinx_spec *s, __u64 *bytes, __u64 *pkts,
		   __u64 *ce)
{
	__u64 b, p;
	int i;

	*bytes = *pkts = *ce = 0;
	for (i = 0; i < s->nhosts; i++) {
		if (!peernet_tx(s->hosts[i].netns, s->hosts[i].ifname, &b,
				&p)) {
			*bytes += b;
			*pkts += p;
		}
		if (!peernet_ce(s->hosts[i].netns, &b))
			*ce += b;
	}
}

/* TSO of the hosts of s: 1 when on for all, 0 when off for all, -1 mixed
 * or unknown. */
static int tso_of(const struct rinx_spec *s)
{
	int i, t, all = -2;

	for (i = 0; i < s->nhosts; i++) {
		t = peernet_tso(s->hosts[i].netns, s->hosts[i].ifname);
		if (t < 0 || (all != -2 && t != all))
			return -1;
		all = t;
	}
	return all < 0 ? -1 : all;
}

struct launch {
	const struct cmp_opts *o;
	struct cand *c;
	int size_seen[BENCH_MAX_SIZES];	/* runs seen (cpu lines) */
	int results;
	int header;		/* the peer's header named our data */
};

static void record(struct launch *l, uint64_t bytes, double us, int verified,
		   double cpu_s, int have_cpu)
{
	struct cand *c = l->c;
	int k = size_index(l->o, bytes);

	if (k < 0 || c->nus[k] >= CMP_MAX_RUNS)
		return;
	c->us[k][c->nus[k]++] = us;
	c->checked[k]++;
	if (!verified)
		c->wrong[k]++;
	if (have_cpu) {
		c->cpu_s[k] += cpu_s;
		c->ncpu[k]++;
	}
	l->results++;
}

/* rinxctl bench --profile text: table rows, then "#   cpu: ... total X" */
static int run_rinx(const struct cmp_opts *o, struct cand *c)
{
	struct bench_opts b = o->b;
	struct launch l = { .o = o, .c = c };
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *mem;
	uint64_t last = 0;
	double last_us = 0;
	int ret, pending = 0, last_ok = 0;

	b.iters = 1;
	b.verify = 1;
	b.profile = 1;
	b.json = 0;
	b.job = 1 + (rand() & 0x3ffffff);
	b.token = bench_token();
	mem = open_memstream(&buf, &len);
	if (!mem)
		return -ENOMEM;
	ret = bench_run(&b, o->spec_path[c->spec], &o->spec[c->spec], mem);
	fclose(mem);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long bytes, el;
		double mn, md, mx, ab, bb, me;
		char v[16];
		const char *p;

		/* the row: 8 numbers, util when the spec has link rates,
		 * verify last */
		if (sscanf(line, " %llu %llu %lf %lf %lf %lf %lf %lf %15s",
			   &bytes, &el, &mn, &md, &mx, &ab, &bb, &me, v) == 9) {
			if (pending)
				record(&l, last, last_us, last_ok, 0, 1);
			p = strrchr(line, ' ');
			last = bytes;
			last_us = md;
			last_ok = p && !strcmp(p + 1, "ok");
			pending = 1;
		} else if (pending && (p = strstr(line, "#   cpu:")) &&
			   (p = strstr(line, " total "))) {
			record(&l, last, last_us, last_ok, atof(p + 7) / 1e3,
			       1);
			pending = 0;
		}
	}
	/* no cpu line: not one clock tick passed, 0 busy ticks */
	if (pending)
		record(&l, last, last_us, last_ok, 0, 1);
	free(buf);
	if (ret == -EDOM)
		return 0;	/* counted as wrong per size */
	return ret;
}

static void on_peer_line(const char *line, void *ctx)
{
	struct launch *l = ctx;
	double v, us, cpu = 0, hz;
	int k;

	if (line[0] != '{') {
		if (*line)
			fprintf(stderr, "%s\n", line);
		return;
	}
	if (!proc_json_num(line, "ranks", &v)) {	/* the peer's header */
		char want[48];

		snprintf(want, sizeof(want), "\"data\":\"%s\"",
			 gen_data_name(l->o->b.data));
		if (strstr(line, want))
			l->header = 1;
		else
			fprintf(stderr, "rinxctl compare: %s reduced other data "
				"than %s: %s\n", l->c->name,
				gen_data_name(l->o->b.data), line);
		return;
	}
	if (!proc_json_num(line, "cpu_bytes", &v)) {	/* mpi_cpu.so, per run */
		k = size_index(l->o, (uint64_t)v);
		if (k < 0 || proc_json_num(line, "busy_ticks", &cpu) ||
		    proc_json_num(line, "hz", &hz) || hz <= 0)
			return;
		/* the runs of a size: warm-up first, then the timed one */
		if (l->size_seen[k]++ >= l->o->b.warmup) {
			l->c->cpu_s[k] += cpu / hz;
			l->c->ncpu[k]++;
		}
		return;
	}
	if (proc_json_num(line, "bytes", &v) || proc_json_num(line, "median_us", &us))
		return;
	if (!proc_json_num(line, "cpu_s", &cpu))
		record(l, (uint64_t)v, us, !!strstr(line, "\"verified\":true"),
		       cpu, 1);
	else
		record(l, (uint64_t)v, us, !!strstr(line, "\"verified\":true"),
		       0, 0);
}

static int run_mpi(const struct cmp_opts *o, struct cand *c,
		   const char *bench, const char *shim)
{
	const struct rinx_spec *s = cand_spec(o, c);
	const char *ns0 = rinx_spec_rank(s, 0)->netns;
	const char *ifname = rinx_spec_rank(s, 0)->ifname;
	char agent[PATH_MAX + 64], dir[] = "/tmp/rinx-compare-XXXXXX";
	char hostfile[64], np[16], warmup[16], preload[PATH_MAX + 16];
	struct launch l = { .o = o, .c = c };
	char *av[80];
	FILE *f;
	int a = 0, r, ret;

	snprintf(agent, sizeof(agent), "%s/tools/peers/mpi-agent.sh", o->root);
	if (!mkdtemp(dir))
		return -errno;
	snprintf(hostfile, sizeof(hostfile), "%s/hostfile", dir);
	f = fopen(hostfile, "w");
	if (!f) {
		rmdir(dir);
		return -errno;
	}
	/* shm: every rank on the first host, the no-network reference */
	for (r = 0; r < (c->shm ? 1 : s->nhosts); r++)
		fprintf(f, "%s slots=%d\n", rinx_spec_rank(s, r)->netns,
			c->shm ? s->nhosts : 1);
	fclose(f);
	snprintf(np, sizeof(np), "%d", s->nhosts);
	snprintf(warmup, sizeof(warmup), "%d", o->b.warmup);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", shim);

	a = proc_mpirun_argv(av, a, &(struct proc_mpirun){
		.ns0 = ns0, .np = np, .hostfile = hostfile, .agent = agent,
		.ifname = ifname, .env = preload, .shm = c->shm,
		.ring = c->ring });
	av[a++] = (char *)bench;
	av[a++] = "--sizes"; av[a++] = (char *)o->sizes_arg;
	av[a++] = "--iters"; av[a++] = "1";
	av[a++] = "--warmup"; av[a++] = warmup;
	av[a++] = "--dtype";
	av[a++] = o->b.dtype == RINX_INT32 ? "int32" : "float32";
	av[a++] = "--data"; av[a++] = (char *)gen_data_name(o->b.data);
	av[a] = NULL;
	ret = run_lines(av, o->timeout_s, on_peer_line, &l);
	unlink(hostfile);
	rmdir(dir);
	if (ret > 0)
		fprintf(stderr, "rinxctl compare: %s: mpirun exit %d\n",
			c->name, ret);
	if (!ret && (l.results != o->b.nsizes || !l.header))
		ret = -EIO;
	return ret > 0 ? -EIO : ret;
}

static int run_gloo(const struct cmp_opts *o, struct cand *c)
{
	const struct rinx_spec *s = cand_spec(o, c);
	struct launch l = { .o = o, .c = c };
	char ip[INET_ADDRSTRLEN], *script, *av[4];
	size_t cap = 4096 + s->nhosts * 1024, n = 0;
	int r, port = 20000 + rand() % 20000, ret;
	struct in_addr ia;

	ia.s_addr = rinx_spec_rank(s, 0)->ip;
	inet_ntop(AF_INET, &ia, ip, sizeof(ip));
	script = malloc(cap);
	if (!script)
		return -ENOMEM;
	/* every rank in the background; the exit status is the worst one */
	n += snprintf(script + n, cap - n, "pids=\n");
	for (r = 0; r < s->nhosts; r++) {
		const struct rinx_spec_host *h = rinx_spec_rank(s, r);

		n += snprintf(script + n, cap - n,
			      "ip netns exec '%s' env RANK=%d WORLD_SIZE=%d "
			      "MASTER_ADDR=%s MASTER_PORT=%d "
			      "GLOO_SOCKET_IFNAME='%s' OMP_NUM_THREADS=1 "
			      "/usr/bin/python3 '%s/tools/peers/gloo_bench.py' "
			      "--sizes '%s' --iters 1 --warmup %d --dtype %s "
			      "--data %s --timeout %d %s &\npids=\"$pids $!\"\n",
			      h->netns, r, s->nhosts, ip, port, h->ifname,
			      o->root, o->sizes_arg, o->b.warmup,
			      o->b.dtype == RINX_INT32 ? "int32" : "float32",
			      gen_data_name(o->b.data), o->timeout_s,
			      r ? ">/dev/null" : "");
	}
	snprintf(script + n, cap - n,
		 "rc=0\nfor p in $pids; do wait $p || rc=1; done\nexit $rc\n");
	av[0] = "sh";
	av[1] = "-c";
	av[2] = script;
	av[3] = NULL;
	ret = run_lines(av, o->timeout_s, on_peer_line, &l);
	free(script);
	if (ret > 0)
		fprintf(stderr, "rinxctl compare: %s: a rank failed\n",
			c->name);
	if (!ret && (l.results != o->b.nsizes || !l.header))
		ret = -EIO;
	return ret > 0 ? -EIO : ret;
}

/* ---- the peers' bridge network ---- */

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#else
#define MULTIARCH "."
#endif

/*
 * The CE marker of a bridge port (tools/peers/ecn_mark.bpf.c) built for
 * one rate, buffer and threshold into <bindir>/peers/ (once; again when the
 * source is newer). 0, or -errno and out = "".
 */
static int build_marker(const struct cmp_opts *o, const struct pn_port *p,
			__u32 ecn, char *out, size_t len)
{
	char src[PATH_MAX + 64], dir[PATH_MAX + 8], dr[32], db[32], de[32];
	char *cc[] = { "clang", "-O2", "-g", "-target", "bpf", "-mcpu=v3",
		       "-Wall", "-Werror", "-I/usr/include/" MULTIARCH, dr, db,
		       de, "-c", src, "-o", out, NULL };
	struct stat a, b;
	int ret;

	snprintf(src, sizeof(src), "%s/tools/peers/ecn_mark.bpf.c", o->root);
	snprintf(dir, sizeof(dir), "%s/peers", o->bindir);
	snprintf(dr, sizeof(dr), "-DRATE_MBIT=%u", p->rate_mbit);
	snprintf(db, sizeof(db), "-DBUFFER=%u", p->buffer);
	snprintf(de, sizeof(de), "-DECN_BYTES=%u", ecn);
	ret = snprintf(out, len, "%s/ecn_mark-%u-%u-%u.o", dir, p->rate_mbit,
		       p->buffer, ecn);
	if (ret < 0 || (size_t)ret >= len) {
		*out = 0;
		return -ENAMETOOLONG;
	}
	if (!stat(out, &a) && !stat(src, &b) && a.st_mtime >= b.st_mtime)
		return 0;
	mkdir(dir, 0755);
	ret = proc_in_path("clang") ? run_quiet(cc, 120) : -ENOENT;
	if (ret) {
		unlink(out);
		*out = 0;
		return ret < 0 ? ret : -EIO;
	}
	return 0;
}

/*
 * The ports of the bridge network get the rate and buffer of the testbed's
 * ports of the same name (read from the switches, so `testbed fault
 * --rate/--buffer` on one port is mirrored too); a testbed whose switches
 * cannot be read is shaped from the spec's link= and uplink= with the
 * testbed's default buffers.
 */
static int bridge_ports(const struct cmp_opts *o, struct pn_port *ports,
			int max, int *faults)
{
	const struct rinx_spec *s = &o->spec[0];
	__u32 ecn[PN_MAX_PORTS];
	struct rinx_tb_port_link *pl;
	char prefix[RINX_NAME_MAX];
	int n, i, np = 0;
	size_t plen;

	*faults = 0;
	pl = calloc(max, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	n = rinx_testbed_spec_prefix(s, prefix, sizeof(prefix)) ? -EINVAL :
	    rinx_testbed_link_get(s, pl, max);
	plen = strlen(prefix);
	for (i = 0; i < n && np < max; i++) {
		const struct rinx_sw_link_set *f = &pl[i].v.set;

		if (strncmp(pl[i].ns, prefix, plen))
			continue;
		if (f->drop_ppm || f->dup_ppm || f->reorder_ppm)
			(*faults)++;
		if (!f->rate_mbit)
			continue;
		snprintf(ports[np].sw, sizeof(ports[np].sw), "%s",
			 pl[i].ns + plen);
		snprintf(ports[np].ifname, sizeof(ports[np].ifname), "%s",
			 pl[i].ifname);
		ports[np].rate_mbit = f->rate_mbit;
		ports[np].buffer = f->buffer;
		ecn[np] = f->ecn;
		np++;
	}
	free(pl);
	if (n >= 0)
		goto markers;
	/* from the spec */
	for (i = 0; i < s->nhosts && np < max; i++) {
		const struct rinx_spec_host *h = &s->hosts[i];

		if (!h->link_mbit)
			continue;
		snprintf(ports[np].sw, sizeof(ports[np].sw), "t%d", h->rack);
		snprintf(ports[np].ifname, sizeof(ports[np].ifname), "p%d", i);
		ports[np].rate_mbit = h->link_mbit;
		ports[np].buffer = rinx_testbed_buffer_default(h->link_mbit);
		ecn[np] = rinx_testbed_ecn_default(h->link_mbit);
		np++;
	}
	for (i = 0; s->nracks > 1 && i < s->nracks && np + 1 < max; i++) {
		const struct rinx_spec_rack *r = &s->racks[i];

		if (!r->uplink_mbit)
			continue;
		snprintf(ports[np].sw, sizeof(ports[np].sw), "t%d", r->id);
		snprintf(ports[np].ifname, sizeof(ports[np].ifname), "uplink");
		snprintf(ports[np + 1].sw, sizeof(ports[np].sw), "sp");
		snprintf(ports[np + 1].ifname, sizeof(ports[np].ifname), "t%d",
			 r->id);
		ports[np].rate_mbit = ports[np + 1].rate_mbit = r->uplink_mbit;
		ports[np].buffer = ports[np + 1].buffer =
			rinx_testbed_buffer_default(r->uplink_mbit);
		ecn[np] = ecn[np + 1] = rinx_testbed_ecn_default(r->uplink_mbit);
		np += 2;
	}
markers:
	for (i = 0; i < np; i++) {
		int ret;

		if (ecn[i] == RINX_SW_ECN_OFF || ecn[i] >= ports[i].buffer)
			continue;	/* this port never marks */
		ret = build_marker(o, &ports[i], ecn[i], ports[i].mark_obj,
				   sizeof(ports[i].mark_obj));
		if (ret) {
			fprintf(stderr, "rinxctl compare: cannot build the ECN "
				"marker of the bridge ports (clang, "
				"tools/peers/ecn_mark.bpf.c: %s): their queues "
				"drop but do not mark\n", strerror(-ret));
			break;
		}
	}
	return np;
}

static int bridge_up(struct cmp_opts *o, char *err, size_t len)
{
	static struct pn_port ports[PN_MAX_PORTS];
	int np, faults, n;

	n = peernet_reap();
	if (n > 0)
		fprintf(stderr, "rinxctl compare: deleted %d namespaces left "
			"by an earlier compare that was killed\n", n);
	memset(ports, 0, sizeof(ports));
	np = bridge_ports(o, ports, PN_MAX_PORTS, &faults);
	if (np < 0) {
		snprintf(err, len, "reading the testbed's links");
		return np;
	}
	if (faults)
		fprintf(stderr, "rinxctl compare: %d testbed ports inject "
			"loss, duplication or reordering; the bridge network "
			"does not (rates and buffers only): use --peer-net "
			"same or both for the peers on those links\n", faults);
	return peernet_up(&o->pn, &o->spec[0], ports, np, err, len);
}

/* ---- figures and output ---- */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct fig figure(const struct cmp_opts *o, const struct cand *c,
			 int k)
{
	int n = o->spec[0].nhosts, m = c->nus[k];
	double t[CMP_MAX_RUNS], bytes = o->b.sizes[k];
	struct fig f = { 0 };
	__u32 link;

	if (!m)
		return f;
	memcpy(t, c->us[k], m * sizeof(t[0]));
	qsort(t, m, sizeof(t[0]), cmp_dbl);
	f.ok = 1;
	f.min = t[0];
	f.max = t[m - 1];
	f.med = m % 2 ? t[m / 2] : (t[m / 2 - 1] + t[m / 2]) / 2;
	f.algbw = f.med > 0 ? bytes / (f.med * 1e3) : 0;
	f.busbw = f.algbw * 2.0 * (n - 1) / n;
	f.eps = f.med > 0 ? bytes / 4 / (f.med * 1e-6) : 0;
	f.cpu_gib = c->ncpu[k] ? c->cpu_s[k] / c->ncpu[k] / (bytes / GIB) : -1;
	f.verified = c->checked[k] && !c->wrong[k];
	/* the bridge's ports have the testbed's rates: the same links */
	link = rinx_spec_min_link(&o->spec[c->kind == K_RINX ? c->spec : 0]);
	f.util = link ? f.busbw * 1e9 * 8 / (link * 1e6) : -1;
	return f;
}

static const char *cand_net(const struct cand *c)
{
	return c->shm ? "shm" : net_name[c->net];
}

/* Does any candidate run on links with a rate (util column)? */
static int have_util(const struct cmp_opts *o)
{
	int i;

	for (i = 0; i < o->nspecs; i++)
		if (rinx_spec_min_link(&o->spec[i]))
			return 1;
	return 0;
}

/* Mean size of what the hosts' interfaces sent during a peer's launches
 * (TCP payload and acks); with GSO a packet is a whole superpacket. */
static double mean_pkt(const struct cand *c)
{
	return c->tx_pkts ? (double)c->tx_bytes / c->tx_pkts : 0;
}

static const char *tso_name(int t)
{
	return t < 0 ? "unknown" : t ? "on" : "off";
}

static void size_name(uint64_t b, char *buf, size_t len)
{
	if (b >= 1 << 20 && !(b % (1 << 20)))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else if (b >= 1024 && !(b % 1024))
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
}

/* The lines above the tables: data, networks, candidates. */
static void print_table_head(const struct cmp_opts *o, struct cand *cs,
			     int nc, int util)
{
	int i, n = o->spec[0].nhosts, net;


	printf("# rinxctl compare: %d ranks, %s, data %s, %d interleaved runs "
	       "per size (%d warm-up per launch), every result verified\n"
	       "# data %s (every candidate the same numbers): %s\n"
	       "# time = slowest rank; algbw = bytes/time; busbw = algbw * "
	       "2(n-1)/n; GB/s = 1e9 B/s; cpu = busy CPU s of the whole "
	       "machine per GiB reduced\n", n,
	       o->b.dtype == RINX_INT32 ? "int32" : "float32",
	       gen_data_name(o->b.data), o->iters, o->b.warmup,
	       gen_data_name(o->b.data), gen_data_about[o->b.data]);
	for (net = 0; net < NET_MAX; net++)
		if (o->tso[net] >= 0 || (net == NET_BRIDGE && o->pn.made))
			printf("# net %-7s %s; TSO on the hosts' interfaces: "
			       "%s\n", net_name[net], net == NET_BRIDGE ?
			       "peers' namespaces joined by kernel bridges, no "
			       "XDP" : "the rinx testbed: XDP switches and host "
			       "programs", tso_name(o->tso[net]));
	if (util)
		printf("# util = busbw / slowest link of the spec (%u Mbit/s)"
		       "%s\n", rinx_spec_min_link(&o->spec[0]),
		       !o->pn.nshaped ? "" : o->pn.nmarking ?
		       "; bridge ports shaped alike (tbf, CE marks)" :
		       "; bridge ports shaped alike (tbf, no CE marks)");
	for (i = 0; i < nc; i++) {
		printf("#   %-11s %-7s %s", cs[i].name, cand_net(&cs[i]),
		       cs[i].algo);
		if (cs[i].tx_pkts)
			printf("; hosts sent %.0f B per packet", mean_pkt(&cs[i]));
		if (util && cs[i].kind != K_RINX)
			printf(", received %llu CE", (unsigned long long)cs[i].ce);
		printf("\n");
	}
}

/* One size's heading and a row per candidate. */
static void print_size_rows(const struct cmp_opts *o, struct cand *cs,
			    int nc, int k, int util)
{
	char sz[32];
	int i, j;

	size_name(o->b.sizes[k], sz, sizeof(sz));
	printf("\n## %s per rank (%llu bytes, %llu elements)\n"
	       "  %-11s %-7s %10s %10s %10s %8s %8s %9s %9s %-6s", sz,
	       (unsigned long long)o->b.sizes[k],
	       (unsigned long long)o->b.sizes[k] / 4, "candidate",
	       "net", "median_us", "min_us", "max_us", "algbw", "busbw",
	       "Melem/s", "cpu_s/GiB", "verify");
	if (util)
		printf(" %6s", "util");
	for (j = 0; j < nc; j++)
		if (cs[j].kind == K_RINX)
			printf(" %9.9s/%-4s", cs[j].name, "bus");
	printf("\n");
	for (i = 0; i < nc; i++) {
		struct fig f = figure(o, &cs[i], k);

		if (!f.ok) {
			printf("  %-11s %-7s %s\n", cs[i].name,
			       cand_net(&cs[i]),
			       cs[i].failed ? "failed" : "-");
			continue;
		}
		printf("  %-11s %-7s %10.1f %10.1f %10.1f %8.3f %8.3f "
		       "%9.1f ", cs[i].name, cand_net(&cs[i]), f.med,
		       f.min, f.max, f.algbw, f.busbw, f.eps / 1e6);
		if (f.cpu_gib >= 0)
			printf("%9.3f", f.cpu_gib);
		else
			printf("%9s", "-");
		printf(" %-6s", f.verified ? "ok" : "WRONG");
		if (util && f.util >= 0)
			printf(" %6.3f", f.util);
		else if (util)
			printf(" %6s", "-");
		for (j = 0; j < nc; j++) {
			struct fig r;

			if (cs[j].kind != K_RINX)
				continue;
			r = figure(o, &cs[j], k);
			if (i == j || !r.ok || f.busbw <= 0)
				printf(" %14s", "");
			else
				printf(" %13.2fx", r.busbw / f.busbw);
		}
		printf("\n");
	}
}

/* ratios: rinx busbw / peer busbw, peer cpu / rinx cpu */
static void print_ratios(const struct cmp_opts *o, struct cand *cs, int nc,
			 int k)
{
	int i, j;

	for (j = 0; j < nc; j++) {
		struct fig r = figure(o, &cs[j], k);
		int first = 1;

		if (cs[j].kind != K_RINX || !r.ok)
			continue;
		for (i = 0; i < nc; i++) {
			struct fig f = figure(o, &cs[i], k);

			if (cs[i].kind == K_RINX || !f.ok)
				continue;
			if (first)
				printf("  # %s vs", cs[j].name);
			printf("%s %s (%s): busbw %.2fx, CPU/GiB "
			       "peer/rinx ", first ? "" : ";", cs[i].name,
			       cand_net(&cs[i]),
			       f.busbw > 0 ? r.busbw / f.busbw : 0);
			if (r.cpu_gib > 0 && f.cpu_gib >= 0)
				printf("%.2fx", f.cpu_gib / r.cpu_gib);
			else
				printf("n/a");
			first = 0;
		}
		if (!first)
			printf("\n");
	}
}

static void print_table(const struct cmp_opts *o, struct cand *cs, int nc)
{
	int k, util = have_util(o);

	print_table_head(o, cs, nc, util);
	for (k = 0; k < o->b.nsizes; k++) {
		print_size_rows(o, cs, nc, k, util);
		print_ratios(o, cs, nc, k);
	}
	fflush(stdout);
}

static void print_csv(const struct cmp_opts *o, struct cand *cs, int nc)
{
	int k, i, j;

	printf("bytes,candidate,network,algorithm,data,ranks,runs,median_us,min_us,"
	       "max_us,algbw_gbs,busbw_gbs,elements_per_s,cpu_s_per_gib,"
	       "verified,util");
	for (j = 0; j < nc; j++)
		if (cs[j].kind == K_RINX)
			printf(",%s_busbw_ratio,%s_cpu_ratio", cs[j].name,
			       cs[j].name);
	printf("\n");
	for (k = 0; k < o->b.nsizes; k++)
		for (i = 0; i < nc; i++) {
			struct fig f = figure(o, &cs[i], k);

			if (!f.ok)
				continue;
			printf("%llu,%s,%s,\"%s\",%s,%d,%d,%.1f,%.1f,%.1f,"
			       "%.4f,%.4f,%.0f,", (unsigned long long)o->b.sizes[k],
			       cs[i].name, cand_net(&cs[i]), cs[i].algo,
			       gen_data_name(o->b.data), o->spec[0].nhosts,
			       cs[i].nus[k], f.med, f.min, f.max, f.algbw,
			       f.busbw, f.eps);
			if (f.cpu_gib >= 0)
				printf("%.4f", f.cpu_gib);
			printf(",%s,", f.verified ? "true" : "false");
			if (f.util >= 0)
				printf("%.4f", f.util);
			for (j = 0; j < nc; j++) {
				struct fig r;

				if (cs[j].kind != K_RINX)
					continue;
				r = figure(o, &cs[j], k);
				printf(",");
				if (i != j && r.ok && f.busbw > 0)
					printf("%.3f", r.busbw / f.busbw);
				printf(",");
				if (i != j && r.ok && r.cpu_gib > 0 &&
				    f.cpu_gib >= 0)
					printf("%.3f", f.cpu_gib / r.cpu_gib);
			}
			printf("\n");
		}
}

static void print_json(const struct cmp_opts *o, struct cand *cs, int nc)
{
	int k, i, j, first = 1;

	printf("{\"ranks\":%d,\"dtype\":\"%s\",\"data\":\"%s\",\"runs\":%d,"
	       "\"warmup\":%d,\"interleaved\":true,\"slowest_link_mbit\":%u,"
	       "\"networks\":{", o->spec[0].nhosts,
	       o->b.dtype == RINX_INT32 ? "int32" : "float32",
	       gen_data_name(o->b.data), o->iters,
	       o->b.warmup, rinx_spec_min_link(&o->spec[0]));
	for (i = 0; i < NET_MAX; i++)
		printf("%s\"%s\":{\"tso\":%s%s}", i ? "," : "", net_name[i],
		       o->tso[i] < 0 ? "null" : o->tso[i] ? "true" : "false",
		       i == NET_BRIDGE && o->pn.nshaped ? (o->pn.nmarking ?
		       ",\"shaped\":\"tbf\",\"ecn_marks\":true" :
		       ",\"shaped\":\"tbf\",\"ecn_marks\":false") : "");
	printf("},\"candidates\":[");
	for (i = 0; i < nc; i++) {
		printf("%s{\"name\":\"%s\",\"network\":\"%s\","
		       "\"algorithm\":\"%s\",\"failed\":%s", i ? "," : "",
		       cs[i].name, cand_net(&cs[i]), cs[i].algo,
		       cs[i].failed ? "true" : "false");
		if (cs[i].tx_pkts)
			printf(",\"tx_bytes_per_packet\":%.0f", mean_pkt(&cs[i]));
		if (cs[i].kind != K_RINX)
			printf(",\"ce_packets\":%llu",
			       (unsigned long long)cs[i].ce);
		printf("}");
	}
	printf("],\"results\":[");
	for (k = 0; k < o->b.nsizes; k++)
		for (i = 0; i < nc; i++) {
			struct fig f = figure(o, &cs[i], k);
			int fr = 1;

			if (!f.ok)
				continue;
			printf("%s{\"bytes\":%llu,\"candidate\":\"%s\","
			       "\"network\":\"%s\",\"runs\":%d,"
			       "\"median_us\":%.1f,\"min_us\":%.1f,"
			       "\"max_us\":%.1f,\"algbw_gbs\":%.4f,"
			       "\"busbw_gbs\":%.4f,\"elements_per_s\":%.0f,",
			       first ? "" : ",",
			       (unsigned long long)o->b.sizes[k], cs[i].name,
			       cand_net(&cs[i]), cs[i].nus[k], f.med, f.min, f.max, f.algbw,
			       f.busbw, f.eps);
			if (f.cpu_gib >= 0)
				printf("\"cpu_s_per_gib\":%.4f,", f.cpu_gib);
			else
				printf("\"cpu_s_per_gib\":null,");
			if (f.util >= 0)
				printf("\"util\":%.4f,", f.util);
			else
				printf("\"util\":null,");
			printf("\"verified\":%s,\"vs\":{",
			       f.verified ? "true" : "false");
			for (j = 0; j < nc; j++) {
				struct fig r;

				if (cs[j].kind != K_RINX || i == j)
					continue;
				r = figure(o, &cs[j], k);
				if (!r.ok || f.busbw <= 0)
					continue;
				printf("%s\"%s\":{\"busbw_ratio\":%.3f", fr ?
				       "" : ",", cs[j].name, r.busbw / f.busbw);
				if (r.cpu_gib > 0 && f.cpu_gib >= 0)
					printf(",\"cpu_ratio\":%.3f",
					       f.cpu_gib / r.cpu_gib);
				printf("}");
				fr = 0;
			}
			printf("}}");
			first = 0;
		}
	printf("]}\n");
}

static int gnuplot_ok(void)
{
	return proc_in_path("gnuplot");
}

static int write_plot(const struct cmp_opts *o, struct cand *cs, int nc)
{
	char dir[] = "/tmp/rinx-plot-XXXXXX", dat[64], gp[64];
	char *argv[] = { "gnuplot", gp, NULL };
	FILE *f;
	int i, k, ret, first = 1;

	if (!gnuplot_ok() && (run_deps(o, "plot") || !gnuplot_ok())) {
		fprintf(stderr, "rinxctl compare: --plot needs gnuplot (Debian "
			"gnuplot-nox; tools/deps.sh plot)\n");
		return -ENOENT;
	}
	if (!mkdtemp(dir))
		return -errno;
	snprintf(dat, sizeof(dat), "%s/busbw.dat", dir);
	snprintf(gp, sizeof(gp), "%s/busbw.gp", dir);
	f = fopen(dat, "w");
	if (!f)
		return -errno;
	for (i = 0; i < nc; i++) {
		fprintf(f, "# %s\n", cs[i].name);
		for (k = 0; k < o->b.nsizes; k++) {
			struct fig g = figure(o, &cs[i], k);

			if (g.ok)
				fprintf(f, "%llu %.6f\n",
					(unsigned long long)o->b.sizes[k],
					g.busbw);
		}
		fprintf(f, "\n\n");
	}
	fclose(f);
	f = fopen(gp, "w");
	if (!f)
		return -errno;
	fprintf(f, "set terminal pngcairo size 1000,640 noenhanced\n"
		"set output '%s'\n"
		"set title 'allreduce busbw, %d ranks, %s, data %s (median "
		"of %d interleaved runs)'\n"
		"set logscale x 2\nset format x '%%.0b%%B'\n"
		"set xlabel 'bytes per rank'\nset ylabel 'busbw GB/s'\n"
		"set key top left\nset grid\nplot ", o->plot,
		o->spec[0].nhosts,
		o->b.dtype == RINX_INT32 ? "int32" : "float32",
		gen_data_name(o->b.data), o->iters);
	for (i = 0; i < nc; i++) {
		fprintf(f, "%s'%s' index %d using 1:2 with linespoints lw 2 "
			"title '%s%s%s'", first ? "" : ", ", dat, i, cs[i].name,
			cs[i].kind == K_RINX ? "" : " on ",
			cs[i].kind == K_RINX ? "" : cand_net(&cs[i]));
		first = 0;
	}
	fprintf(f, "\n");
	fclose(f);
	ret = run_quiet(argv, 120);
	if (ret) {	/* no cairo: the libgd terminal */
		char sed[] = "s/^set terminal pngcairo/set terminal png/";
		char *sv[] = { "sed", "-i", sed, gp, NULL };

		if (!run_quiet(sv, 10))
			ret = run_quiet(argv, 120);
	}
	unlink(dat);
	unlink(gp);
	rmdir(dir);
	if (ret) {
		fprintf(stderr, "rinxctl compare: gnuplot failed (%d)\n", ret);
		return -EIO;
	}
	fprintf(stderr, "rinxctl compare: wrote %s\n", o->plot);
	return 0;
}

#define CMP_OF(field, m) ((struct cmp_opts *)((char *)(field) - \
					      offsetof(struct cmp_opts, m)))

static int opt_spec(const char *v, void *field, char *why, size_t len)
{
	struct cmp_opts *o = CMP_OF(field, spec_path);

	if (o->nspecs >= CMP_MAX_SPECS) {
		snprintf(why, len, "at most %d of them", CMP_MAX_SPECS);
		return -1;
	}
	o->spec_path[o->nspecs++] = v;
	return 0;
}

/* the list goes to mpi_bench and gloo_bench.py as it is: sizes only */
static int opt_sizes(const char *v, void *field, char *why, size_t len)
{
	struct cmp_opts *o = CMP_OF(field, sizes_arg);
	const char *p;

	for (p = v; *p; p++)
		if (!strchr("0123456789.,KkMmGgBb", *p))
			return -1;
	if (strlen(v) >= sizeof(o->sizes_arg) ||
	    bench_opt_sizes(v, o->b.sizes, why, len))
		return -1;
	snprintf(o->sizes_arg, sizeof(o->sizes_arg), "%s", v);
	return 0;
}

static int opt_peers(const char *list, void *field, char *why, size_t len)
{
	struct cmp_opts *o = CMP_OF(field, mpi_tuned);
	char buf[128], *save = NULL, *t;

	(void)why;
	(void)len;
	o->mpi_tuned = o->mpi_ring = o->mpi_shm = o->gloo = 0;
	snprintf(buf, sizeof(buf), "%s", list);
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "mpi"))
			o->mpi_tuned = o->mpi_ring = 1;
		else if (!strcmp(t, "mpi-tuned") || !strcmp(t, "ompi-tuned"))
			o->mpi_tuned = 1;
		else if (!strcmp(t, "mpi-ring") || !strcmp(t, "ompi-ring"))
			o->mpi_ring = 1;
		else if (!strcmp(t, "mpi-shm") || !strcmp(t, "ompi-shm"))
			o->mpi_shm = 1;
		else if (!strcmp(t, "gloo"))
			o->gloo = 1;
		else if (strcmp(t, "none"))
			return -1;
	}
	return 0;
}

static const struct opt_choice peer_nets[] = {
	{ "bridge", PEER_NET_BRIDGE, 0 },
	{ "same", PEER_NET_SAME, 0 },
	{ "both", PEER_NET_BRIDGE | PEER_NET_SAME, 0 },
	{ NULL, 0, 0 },
};

#define C_AT(m) OPT_AT(struct cmp_opts, m)

static const struct opt compare_opts[] = {
	{ OPT_TEXT, .help =
"rinx against Open MPI (TCP; tuned choice and forced ring) and PyTorch Gloo\n"
"on the same hosts, one rank per host namespace, interleaved: for every run\n"
"index each candidate sweeps every size once (warm-up, one timed run), so\n"
"drift hits all alike; every result of every candidate is verified.\n" },
	{ OPT_FN, "spec", 0, "FILE", C_AT(spec_path), .parse = opt_spec,
	  .help = "testbed spec; repeat it for more rinx candidates of the\n"
		  "same size (an --ina testbed: Rina); peers use the first" },
	{ OPT_FN, "sizes", 0, "LIST", C_AT(sizes_arg), .parse = opt_sizes,
	  .def = "4K,64K,1M,16M,64M,256M", .range = BENCH_SIZES_RANGE,
	  .help = "bytes per rank (default {})" },
	{ OPT_INT, "iters", 0, "N", C_AT(iters), .min = 1,
	  .max = CMP_MAX_RUNS, .def = "3",
	  .help = "interleaved runs (default {}; median, min, max over them)" },
	{ OPT_INT, "warmup", 0, "N", C_AT(b.warmup), .min = 0, .max = INT_MAX,
	  .def = "1", .help = "untimed runs per size and launch (default {})" },
	{ OPT_FN, "peers", 0, "LIST", C_AT(mpi_tuned), .parse = opt_peers,
	  .def = "mpi,gloo",
	  .range = "mpi, mpi-tuned, mpi-ring, mpi-shm, gloo, none",
	  .help = "mpi, mpi-tuned, mpi-ring, mpi-shm, gloo or none (default\n"
		  "{}); mpi-shm: Open MPI with every rank in the first\n"
		  "host's namespace over shared memory, the no-network\n"
		  "reference (net shm)" },
	{ OPT_ENUM, "peer-net", 0, "NET", C_AT(peer_net), .choices = peer_nets,
	  .def = "bridge",
	  .help = "where the peers run: {} (default; the hosts copied\n"
		  "into namespaces joined by kernel bridges, no XDP, so TCP\n"
		  "keeps GSO; links shaped to the testbed's rates and\n"
		  "buffers), same (the rinx testbed itself) or both" },
	{ OPT_ENUM, "dtype", 0, "T", C_AT(b.dtype), .choices = bench_dtypes,
	  .def = "float32", .help = "{} (default) or int32" },
	{ OPT_FN, "data", 0, "D", C_AT(b.data), .parse = bench_opt_data,
	  .range = "grad|worst|ints",
	  .help = "what every candidate reduces, the same numbers for all:\n"
		  "grad (float32 default: gradient-like, per-block scales\n"
		  "shared by the ranks), worst (float32: block exponents\n"
		  "that differ between ranks) or ints (int32); as rinxctl\n"
		  "bench --data (see its --help)" },
	{ OPT_FLAG, "csv", 0, C_AT(csv), .label = "--csv, --json",
	  .help = "machine-readable output instead of the tables" },
	{ OPT_FLAG, "json", 0, C_AT(json) },
	{ OPT_STR, "plot", 0, "FILE.png", C_AT(plot),
	  .help = "busbw against size for all candidates (gnuplot)" },
	{ OPT_INT, "timeout", 0, "S", C_AT(timeout_s), .min = 1,
	  .max = INT_MAX, .def = "1800",
	  .help = "limit of one candidate's sweep, seconds (default {})" },
	{ OPT_FLAG, "no-install", 0, C_AT(no_install),
	  .help = "fail instead of installing missing packages" },
	{ OPT_TEXT, .help =
"Missing packages are installed with tools/deps.sh peers (and plot for\n"
"--plot). Tables: min/median/max time of the slowest rank, algbw = bytes /\n"
"median, busbw = algbw * 2(n-1)/n, Melem/s, cpu_s/GiB = busy CPU seconds of\n"
"the whole machine (all processes, irq, softirq) during the timed run per\n"
"GiB reduced; <rinx>/bus = that rinx candidate's busbw / this row's busbw;\n"
"net = the network of the row; util = busbw / the slowest link of the spec\n"
"(when it has link rates).\n"
"See docs/benchmark.md.\n" },
	{ OPT_END },
};

static const struct opts_cmd compare_cmd = {
	.name = "compare", .synopsis = "--spec FILE [options]",
	.tab = compare_opts, .col = 19,
};

/* The table, then what it cannot say alone. OPTS_OK, _HELP or _USAGE. */
static int compare_args(int argc, char **argv, struct cmp_opts *o)
{
	int ret;

	bench_defaults(&o->b);
	ret = opts_parse(&compare_cmd, argc, argv, o, NULL);
	if (ret)
		return ret;
	if (bench_data_resolve(&o->b, "compare"))
		return OPTS_USAGE;
	if (o->csv && o->json) {
		fprintf(stderr, "rinxctl compare: one of --csv and --json\n");
		return OPTS_USAGE;
	}
	if (!o->nspecs) {
		fprintf(stderr, "rinxctl compare: --spec FILE is required "
			"(rinxctl testbed up prints one)\n");
		return OPTS_USAGE;
	}
	return OPTS_OK;
}

static void name_rinx(struct cand *c, const struct rinx_spec *s,
		      struct cand *cs, int nc)
{
	const char *kind = NULL;
	int r, i, dup = 0;

	for (r = 0; r < s->nracks; r++)
		if (s->racks[r].ina == RINX_INA_SWITCH)
			kind = "switch";
		else if (s->racks[r].ina == RINX_INA_AGENT && !kind)
			kind = "agent";
	if (kind) {
		snprintf(c->name, sizeof(c->name), "rinx-rina");
		snprintf(c->algo, sizeof(c->algo), "rinx Rina (INA racks, "
			 "ina=%s), XDP hops", kind);
	} else {
		snprintf(c->name, sizeof(c->name), "rinx-ring");
		snprintf(c->algo, sizeof(c->algo), "rinx ring, XDP hops");
	}
	for (i = 0; i < nc; i++)
		if (!strcmp(cs[i].name, c->name))
			dup++;
	if (dup)
		snprintf(c->name + strlen(c->name),
			 sizeof(c->name) - strlen(c->name), "%d", dup + 1);
}

/* Every spec loaded, of one size, and the first a testbed the peers can
 * run on. 0 or an exit code. */
static int load_specs(struct cmp_opts *o)
{
	char err[256];
	int i;

	for (i = 0; i < o->nspecs; i++) {
		if (rinx_spec_load(o->spec_path[i], &o->spec[i], err,
				   sizeof(err))) {
			fprintf(stderr, "rinxctl compare: %s\n", err);
			return RINX_EXIT_CONFIG;
		}
		if (o->spec[i].nhosts != o->spec[0].nhosts ||
		    o->spec[i].nhosts < 2) {
			fprintf(stderr, "rinxctl compare: %s: every spec needs "
				"the same number of hosts (>= 2)\n",
				o->spec_path[i]);
			return RINX_EXIT_CONFIG;
		}
	}
	for (i = 0; i < o->spec[0].nhosts; i++) {
		const struct rinx_spec_host *h = rinx_spec_rank(&o->spec[0], i);

		if (!h->netns[0] || strchr(h->netns, '\'') ||
		    strcmp(h->ifname, rinx_spec_rank(&o->spec[0], 0)->ifname)) {
			fprintf(stderr, "rinxctl compare: the peers need a "
				"testbed spec (every host in a namespace, one "
				"interface name)\n");
			return RINX_EXIT_CONFIG;
		}
	}
	return 0;
}

static struct cand *add_cand(struct cand *cs, int *nc, int kind, int net,
			     const char *name, const char *algo)
{
	struct cand *c = &cs[(*nc)++];

	c->kind = kind;
	c->net = net;
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->algo, sizeof(c->algo), "%s", algo);
	return c;
}

/* The candidates: rinx on every spec, then the peers on each network
 * (the bridge first: their best), then Open MPI on shared memory. */
static int candidates(const struct cmp_opts *o, struct cand *cs)
{
	int nc = 0, i, net;

	for (i = 0; i < o->nspecs; i++) {
		cs[nc].kind = K_RINX;
		cs[nc].spec = i;
		name_rinx(&cs[nc], &o->spec[i], cs, nc);
		nc++;
	}
	for (net = NET_MAX - 1; net >= 0; net--) {
		if (!(o->peer_net & (1 << net)))
			continue;
		if (o->mpi_tuned)
			add_cand(cs, &nc, K_MPI, net, "ompi-tuned", "Open MPI "
				 "MPI_Allreduce, TCP, tuned fixed rules");
		if (o->mpi_ring)
			add_cand(cs, &nc, K_MPI, net, "ompi-ring", "Open MPI "
				 "MPI_Allreduce, TCP, ring (tuned algorithm "
				 "4)")->ring = 1;
		if (o->gloo)
			add_cand(cs, &nc, K_GLOO, net, "gloo-ring", "PyTorch "
				 "Gloo all_reduce, TCP, ring");
	}
	/* its first host's namespace */
	if (o->mpi_shm)
		add_cand(cs, &nc, K_MPI, NET_TESTBED, "ompi-shm", "Open MPI "
			 "MPI_Allreduce, shared memory (vader), tuned "
			 "rules")->shm = 1;
	return nc;
}

/* The peers' networks: the bridge network made, TSO of each read. */
static int peer_networks(struct cmp_opts *o, const struct cand *cs, int nc)
{
	char err[256];
	int i, ret, peers = 0;

	for (i = 0; i < nc; i++)
		peers += cs[i].kind != K_RINX;
	o->tso[NET_BRIDGE] = o->tso[NET_TESTBED] = -1;
	if (peers && (o->peer_net & PEER_NET_BRIDGE)) {
		ret = bridge_up(o, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "rinxctl compare: the peers' bridge "
				"network: %s: %s\n", err, strerror(-ret));
			return RINX_EXIT_FAIL;
		}
		o->tso[NET_BRIDGE] = tso_of(&o->pn.spec);
	}
	if (peers && (o->peer_net & PEER_NET_SAME))
		o->tso[NET_TESTBED] = tso_of(&o->spec[0]);
	return 0;
}

/* The interleaved runs: for every run index each candidate once, in an
 * order rotated by the index. How many candidates failed. */
static int run_all(const struct cmp_opts *o, struct cand *cs, int nc,
		   char *bench, char *shim, double t0)
{
	__u64 b0, p0, ce0, b1, p1, ce1;
	int j, k, ret, failed = 0;

	for (j = 0; j < o->iters && !cmp_stop; j++) {
		for (k = 0; k < nc && !cmp_stop; k++) {
			struct cand *c = &cs[(j + k) % nc];

			if (c->failed)
				continue;
			fprintf(stderr, "rinxctl compare: run %d/%d: %s "
				"(%.0f s)\n", j + 1, o->iters, c->name,
				proc_now_s() - t0);
			if (c->kind != K_RINX && !c->shm)
				tx_sum(cand_spec(o, c), &b0, &p0, &ce0);
			if (c->kind == K_RINX)
				ret = run_rinx(o, c);
			else if (c->kind == K_MPI)
				ret = run_mpi(o, c, bench, shim);
			else
				ret = run_gloo(o, c);
			if (c->kind != K_RINX && !c->shm) {
				tx_sum(cand_spec(o, c), &b1, &p1, &ce1);
				c->tx_bytes += b1 - b0;
				c->tx_pkts += p1 - p0;
				c->ce += ce1 - ce0;
			}
			if (ret) {
				fprintf(stderr, "rinxctl compare: %s failed: "
					"%s\n", c->name, strerror(-ret));
				c->failed = 1;
				failed++;
			}
		}
	}
	return failed;
}

/* What the comparison needs on this host: the source tree, the peers'
 * packages, mpi_bench and its shim, gnuplot. 0 or an exit code. */
static int prepare(struct cmp_opts *o, char *bench, size_t blen, char *shim,
		   size_t slen)
{
	if (find_tree(o)) {
		fprintf(stderr, "rinxctl compare: cannot find the rinx source "
			"tree (tools/peers/gloo_bench.py) next to rinxctl or "
			"in the current directory\n");
		return RINX_EXIT_CONFIG;
	}
	signal(SIGINT, cmp_sig);
	signal(SIGTERM, cmp_sig);
	signal(SIGPIPE, SIG_IGN);
	if (ensure_peers(o))
		return RINX_EXIT_CONFIG;
	if ((o->mpi_tuned || o->mpi_ring || o->mpi_shm) &&
	    build_mpi(o, bench, blen, shim, slen))
		return RINX_EXIT_FAIL;
	if (o->plot && !gnuplot_ok() && (run_deps(o, "plot") || !gnuplot_ok())) {
		fprintf(stderr, "rinxctl compare: --plot needs gnuplot (Debian "
			"gnuplot-nox; tools/deps.sh plot)\n");
		return RINX_EXIT_CONFIG;
	}
	return 0;
}

int cmd_compare(int argc, char **argv)
{
	static struct cmp_opts o;
	static struct cand cs[CMP_MAX_CANDS];
	char bench[PATH_MAX + 32], shim[PATH_MAX + 32];
	int nc, i, k, ret, wrong = 0, failed;
	double t0 = proc_now_s();

	ret = compare_args(argc, argv, &o);
	if (ret)
		return opts_exit(ret);
	ret = load_specs(&o) ?: prepare(&o, bench, sizeof(bench), shim,
					 sizeof(shim));
	if (ret)
		return ret;
	nc = candidates(&o, cs);
	ret = peer_networks(&o, cs, nc);
	if (ret)
		return ret;
	failed = run_all(&o, cs, nc, bench, shim, t0);
	if (o.pn.made && peernet_down(&o.pn))
		fprintf(stderr, "rinxctl compare: could not delete every "
			"namespace of %s\n", o.pn.base);
	if (o.csv)
		print_csv(&o, cs, nc);
	else if (o.json)
		print_json(&o, cs, nc);
	else
		print_table(&o, cs, nc);
	for (i = 0; i < nc; i++)
		for (k = 0; k < o.b.nsizes; k++)
			wrong += cs[i].wrong[k];
	if (o.plot && write_plot(&o, cs, nc))
		failed++;
	if (cmp_stop)
		return RINX_EXIT_FAIL;
	if (wrong) {
		fprintf(stderr, "rinxctl compare: WRONG RESULTS (%d runs)\n",
			wrong);
		return RINX_EXIT_WRONG;
	}
	return failed ? RINX_EXIT_FAIL : 0;
}
