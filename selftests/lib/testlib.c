// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The selftests' library: see testlib.h. */
#include <errno.h>
#include <sched.h>
#include <fnmatch.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "selftests/lib/testlib.h"
#include "user/ctl.h"
#include "host.skel.h"
#include "switch.skel.h"

/* ---- TAP ------------------------------------------------------------- */

static int tl_patterns(void (*fn)(const char *sub, void *arg), void *arg);

int tap_n, tap_fail;
static int tap_planned = -1;
static int tl_bad;		/* subtests that ran another number of checks */
static bool tl_table;		/* the plan is tl_plan's */

static void tl_no_table(const char *sub, void *arg)
{
	if (sub)
		snprintf(arg, 128, "%s", sub);
}

void tap_plan(int n)
{
	char sub[128] = "";

	/* asked for a subtest of a program that has none: saying so beats
	 * running it whole or passing silently */
	if (!tl_table && tl_patterns(tl_no_table, sub) > 0 && *sub)
		tap_skip_all("no subtest '%s': %s has none (select it whole)",
			     sub, tl_prog_name());
	printf("1..%d\n", n);
	fflush(stdout);
	/* a plan after checks is one counted from them: it proves nothing */
	if (tap_n || tap_planned >= 0) {
		printf("# plan declared after %d checks (or twice)\n", tap_n);
		tap_fail++;
	}
	tap_planned = n;
}

static void tap_vok(int cond, const char *fmt, va_list ap)
{
	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_fail++;
}

int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vok(cond, fmt, ap);
	va_end(ap);
	return cond;
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void tap_skip(const char *why, const char *fmt, ...)
{
	va_list ap;

	printf("ok %d - ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", why);
	fflush(stdout);
}

void tap_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(4);
}

int tap_done(void)
{
	int bad = tap_fail + tl_bad;

	if (tap_planned < 0) {
		printf("# no plan declared (%d checks ran)\n", tap_n);
		bad++;
	} else if (tap_n != tap_planned) {
		printf("# planned %d checks, ran %d\n", tap_planned, tap_n);
		bad++;
	}
	if (tap_fail)
		printf("# %d of %d failed\n", tap_fail, tap_n);
	fflush(stdout);
	return bad ? 1 : 0;
}

/* ---- ASSERT ------------------------------------------------------------ */

bool tl_assert_int(bool ok, long long a, long long b, const char *as,
		   const char *bs, const char *op, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vok(ok, fmt, ap);
	va_end(ap);
	if (!ok)
		tap_diag("  want %s %s %s: got %lld (0x%llx) and %lld (0x%llx)",
			 as, op, bs, a, (unsigned long long)a, b,
			 (unsigned long long)b);
	return ok;
}

bool tl_assert_err(long long err, const char *es, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vok(err == 0, fmt, ap);
	va_end(ap);
	if (err)
		tap_diag("  %s = %lld (%s), want 0", es, err,
			 err < 0 && err > -4096 ? strerror((int)-err) : "-");
	return err == 0;
}

bool tl_assert_mem(const void *a, const void *b, size_t len, const char *fmt,
		   ...)
{
	const __u8 *x = a, *y = b;
	size_t i = 0;
	va_list ap;

	while (i < len && x[i] == y[i])
		i++;
	va_start(ap, fmt);
	tap_vok(i == len, fmt, ap);
	va_end(ap);
	if (i < len)
		tap_diag("  byte %zu of %zu differs: got 0x%02x, want 0x%02x",
			 i, len, x[i], y[i]);
	return i == len;
}

/* ---- selection --------------------------------------------------------- */

const char *tl_prog_name(void)
{
	const char *p = program_invocation_short_name;

	return strncmp(p, "test_", 5) ? p : p + 5;
}

/* Calls fn(sub, arg) for every pattern of RINX_TEST_SELECT that names this
 * program; sub is NULL for a pattern without "/SUB". Returns the number of
 * such patterns, -1 when nothing is selected (everything runs). */
static int tl_patterns(void (*fn)(const char *sub, void *arg), void *arg)
{
	const char *sel = getenv("RINX_TEST_SELECT");
	char buf[512], *save = NULL, *pat;
	int n = 0;

	if (!sel || !*sel)
		return -1;
	snprintf(buf, sizeof(buf), "%s", sel);
	for (pat = strtok_r(buf, ",", &save); pat;
	     pat = strtok_r(NULL, ",", &save)) {
		char *sub = strchr(pat, '/');

		if (sub)
			*sub++ = '\0';
		if (fnmatch(pat, tl_prog_name(), 0))
			continue;
		n++;
		fn(sub && *sub ? sub : NULL, arg);
	}
	return n;
}

struct tl_match {
	const char *name;
	bool hit, subs;
};

static void tl_match_one(const char *sub, void *arg)
{
	struct tl_match *m = arg;

	if (sub)
		m->subs = true;
	if (!sub || !fnmatch(sub, m->name, 0) ||
	    !strncmp(sub, m->name, strlen(sub)))
		m->hit = true;
}

bool tl_selected(const char *name)
{
	struct tl_match m = { .name = name };

	/* a program the runner started names itself in the selection */
	return tl_patterns(tl_match_one, &m) <= 0 || m.hit;
}

void tl_plan(int fixed, const struct tl_subtest *t, size_t n)
{
	int checks = fixed;
	size_t i, sel = 0;

	for (i = 0; i < n; i++) {
		if (!tl_selected(t[i].name))
			continue;
		sel++;
		checks += t[i].checks;
	}
	if (!sel)
		tap_skip_all("no subtest of %s matches '%s'", tl_prog_name(),
			     getenv("RINX_TEST_SELECT"));
	tl_table = true;
	tap_plan(checks);
}

void tl_run(const struct tl_subtest *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int n0 = tap_n, f0 = tap_fail, ran;

		if (!tl_selected(t[i].name))
			continue;
		tap_diag("subtest %s/%s", tl_prog_name(), t[i].name);
		t[i].fn();
		ran = tap_n - n0;
		if (ran != t[i].checks) {
			tl_bad++;
			tap_diag("subtest %s: FAIL (planned %d checks, ran %d)",
				 t[i].name, t[i].checks, ran);
		} else if (tap_fail != f0) {
			tap_diag("subtest %s: FAIL (%d of %d checks failed)",
				 t[i].name, tap_fail - f0, ran);
		} else {
			tap_diag("subtest %s: ok (%d checks)", t[i].name, ran);
		}
	}
}

/* ---- environment ------------------------------------------------------- */

void tl_needs_root(const char *why)
{
	if (geteuid())
		tap_skip_all("needs root (%s)", why);
	if (!getenv("RINX_TEST_VERBOSE"))
		libbpf_set_print(NULL);
}

void tl_unshare_net(void)
{
	if (unshare(CLONE_NEWNET))
		tap_skip_all("cannot create a network namespace: %s",
			     strerror(errno));
}

void tl_ns_prefix(char *buf, size_t len, const char *tag)
{
	const char *env = getenv("RINX_TEST_NS");

	snprintf(buf, len, "%s%s%d", env ? env : "", tag,
		 (int)(getpid() % 100000));
}

int tl_ip(char *const argv[])
{
	extern char **environ;
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, "ip", NULL, NULL, argv, environ))
		return -1;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* ---- counters ---------------------------------------------------------- */

/* One key at a time, where a batch lookup is not to be had. */
static int tl_percpu_keys(int fd, __u32 n, __u64 *pc, int ncpu, __u64 *out)
{
	__u32 k;
	int c;

	for (k = 0; k < n; k++) {
		if (bpf_map_lookup_elem(fd, &k, pc))
			return -errno;
		out[k] = 0;
		for (c = 0; c < ncpu; c++)
			out[k] += pc[c];
	}
	return 0;
}

int tl_percpu_sum(int fd, __u32 n, __u64 *out)
{
	int ncpu = libbpf_num_possible_cpus(), c, err;
	__u32 cnt = n, next, k, *keys;
	__u64 *vals;

	LIBBPF_OPTS(bpf_map_batch_opts, o);

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	keys = calloc(n, sizeof(*keys));
	vals = calloc((size_t)n * ncpu, sizeof(*vals));
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	/* one syscall for the whole array: the fuzzers read it per frame */
	err = bpf_map_lookup_batch(fd, NULL, &next, keys, vals, &cnt, &o);
	if (err && errno != ENOENT) {
		err = tl_percpu_keys(fd, n, vals, ncpu, out);
		goto out;
	}
	err = cnt == n ? 0 : -EIO;
	for (k = 0; !err && k < n; k++) {
		out[k] = 0;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[(size_t)k * ncpu + c];
	}
out:
	free(keys);
	free(vals);
	return err;
}

/* ---- test runs --------------------------------------------------------- */

int tl_xdp_run(int prog, const void *in, __u32 len, __u32 ingress, void *out,
	       __u32 out_size, struct tl_run *r)
{
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = ingress };

	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = in,
		.data_size_in = len,
		.data_out = out,
		.data_size_out = out ? out_size : 0,
		.repeat = 1,
	);

	/* with no context the kernel takes the loopback device as ingress */
	if (ingress) {
		o.ctx_in = &ctx;
		o.ctx_size_in = sizeof(ctx);
	}
	if (bpf_prog_test_run_opts(prog, &o))
		return -errno;
	r->ret = o.retval;
	r->len = o.data_size_out;
	r->duration = o.duration;
	return 0;
}

/* ---- frames ------------------------------------------------------------ */

__u16 csum16(const void *p, int len)
{
	const __u8 *b = p;
	__u32 sum = 0;
	int i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)b[i] << 8 | b[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

void ip_fix_csum(__u8 *ip)
{
	put16(ip + 10, 0);
	put16(ip + 10, csum16(ip, 20));
}

struct rinx_hdr *tl_frame(__u8 *f, int len, const struct tl_addr *a)
{
	__u8 *ip = f + TF_OFF_IP, *udp = f + TF_OFF_UDP;
	struct rinx_hdr *h = (struct rinx_hdr *)(f + TF_OFF_HDR);

	memset(f, 0, len);
	memcpy(f, a->dst_mac, 6);
	memcpy(f + 6, a->src_mac, 6);
	put16(f + 12, ETH_P_IP);
	ip[0] = 0x45;
	ip[1] = a->tos;
	put16(ip + 2, len - TF_OFF_IP);
	put16(ip + 4, a->ip_id);
	put16(ip + 6, a->no_df ? 0 : 0x4000);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &a->saddr, 4);
	memcpy(ip + 16, &a->daddr, 4);
	ip_fix_csum(ip);
	put16(udp, a->port);
	put16(udp + 2, a->port);
	put16(udp + 4, len - TF_OFF_UDP);
	h->magic = htonl(RINX_MAGIC);
	h->version = RINX_VERSION;
	return h;
}

void tl_hdr_put(struct rinx_hdr *h, const struct tl_hdr *v)
{
	h->type = v->type;
	h->flags = v->flags;
	h->step = v->step;
	h->job = htonl(v->job);
	h->token = htobe64(v->token);
	h->round = htonl(v->round);
	h->block = htonl(v->block);
	h->nblocks = htonl(v->nblocks);
	h->sender = htons(v->sender);
	h->count = htons(v->count);
	h->klass = htons(v->klass);
	h->exp = htons((__u16)v->exp);
	h->dtype = htons(v->dtype);
}

struct rinx_hdr *tf_frame(__u8 *f, const __u8 *dst_mac,
			  const struct rinx_node *src,
			  const struct rinx_node *dst, __u8 tos, __u16 port)
{
	struct tl_addr a = {
		.dst_mac = dst_mac, .src_mac = src->mac,
		.saddr = src->ip, .daddr = dst->ip,
		.tos = tos, .port = port,
	};

	return tl_frame(f, RINX_FRAME_MAX, &a);
}

/* ---- skeletons --------------------------------------------------------- */

static int tl_size(struct bpf_map *m, __u32 n)
{
	return n ? bpf_map__set_max_entries(m, n) : 0;
}

struct host_bpf *tl_host_open(const struct tl_host_opts *o)
{
	struct host_bpf *s = host_bpf__open();
	int err;

	if (!s)
		return NULL;
	if (o->port)
		s->rodata->rinx_port_be = htons(o->port);
	if (o->window)
		s->rodata->rinx_window = o->window;
	err = tl_size(s->maps.share, o->nshare);
	err = err ?: tl_size(s->maps.result, o->nshare);
	err = err ?: tl_size(s->maps.partial, o->npartial);
	err = err ?: tl_size(s->maps.aggs, o->naggs);
	err = err ?: tl_size(s->maps.jobs, o->njobs);
	if (err) {
		host_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

struct switch_bpf *tl_switch_open(const struct tl_switch_opts *o)
{
	struct switch_bpf *s = switch_bpf__open();
	int err;

	if (!s)
		return NULL;
	/* a plain switch keeps the built defaults */
	if (o->ina_mac) {
		memcpy((void *)s->rodata->ina_mac, o->ina_mac, 6);
		s->rodata->ina_port_be = htons(o->port);
		s->rodata->ina_window = o->window;
		s->rodata->sw_rack = o->rack;
	}
	err = tl_size(s->maps.aggs, o->naggs);
	if (err) {
		switch_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

struct host_bpf *tl_host_load(const struct tl_host_opts *o, int *err)
{
	struct host_bpf *s = tl_host_open(o);

	*err = s ? host_bpf__load(s) : -errno;
	if (s && *err) {
		host_bpf__destroy(s);
		s = NULL;
	}
	return s;
}

struct switch_bpf *tl_switch_load(const struct tl_switch_opts *o, int *err)
{
	struct switch_bpf *s = tl_switch_open(o);

	*err = s ? switch_bpf__load(s) : -errno;
	if (s && *err) {
		switch_bpf__destroy(s);
		s = NULL;
	}
	return s;
}
