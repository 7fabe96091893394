/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The selftests' library, built once (libtest.a) and linked into every C
 * test: TAP output, named subtests, ASSERT macros, frames, per-CPU
 * counters, the two skeletons, and `ip` for the tests that make links.
 *
 * How to write a test (selftests/test_NAME.c, picked up by the Makefile):
 *
 *	static void t_one(void)
 *	{
 *		ASSERT_EQ(got, want, "one: the sum of block 3");
 *		ASSERT_OK(err, "one: table update");
 *	}
 *
 *	static struct tl_subtest subtests[] = {
 *		{ "one", 2, t_one },	   (name, checks it runs, function)
 *		{ "two", N_TWO, t_two },
 *	};
 *
 *	int main(void)
 *	{
 *		tl_needs_root("BPF_PROG_TEST_RUN");   (if it does)
 *		tl_plan(1, subtests, ARRAY_SIZE(subtests));
 *		ASSERT_TRUE(setup() == 0, "set up");   (the 1 check outside)
 *		tl_run(subtests, ARRAY_SIZE(subtests));
 *		return tap_done();
 *	}
 *
 * `selftests/run.sh build -t NAME/one` runs subtest "one" alone (the part
 * after the slash is a glob or a prefix; several patterns separated by
 * commas); run by hand, RINX_TEST_SELECT=NAME/one build/selftests/test_NAME
 * does the same. The plan counts the selected subtests' checks, and a
 * subtest that runs another number of checks than it declares fails. A
 * program without a subtest table calls tap_plan(N) itself and runs whole.
 * Checks count from the cases, never from the checks that ran.
 */
#ifndef RINX_TESTLIB_H
#define RINX_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/types.h>
#include "uapi/rinx.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/* ---- TAP ------------------------------------------------------------- */

/* checks run so far, and those of them that failed */
extern int tap_n, tap_fail;

/* The plan, before the first check, counted from the cases: a check that
 * is left out by mistake then shows as a plan not met. */
void tap_plan(int n);
/* One check; returns cond. */
int tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A check that cannot run here: passed as skipped, with the reason. */
void tap_skip(const char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Skips the whole program (exit 4), reason printed. */
void tap_skip_all(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
/* The exit status: 0 when every check passed and the plan was met. */
int tap_done(void);

/* ---- ASSERT: a check that shows both sides when it fails ------------- */

bool tl_assert_int(bool ok, long long a, long long b, const char *as,
		   const char *bs, const char *op, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
bool tl_assert_err(long long err, const char *es, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool tl_assert_mem(const void *a, const void *b, size_t len, const char *fmt,
		   ...) __attribute__((format(printf, 4, 5)));

#define TL_CMP(a, op, b, ...) ({					\
	long long __a = (long long)(a), __b = (long long)(b);		\
	tl_assert_int(__a op __b, __a, __b, #a, #b, #op, __VA_ARGS__);	\
})
/* ASSERT_EQ(got, want, "what", ...): got == want, else both printed */
#define ASSERT_EQ(a, b, ...)	TL_CMP(a, ==, b, __VA_ARGS__)
#define ASSERT_NEQ(a, b, ...)	TL_CMP(a, !=, b, __VA_ARGS__)
#define ASSERT_LE(a, b, ...)	TL_CMP(a, <=, b, __VA_ARGS__)
#define ASSERT_GE(a, b, ...)	TL_CMP(a, >=, b, __VA_ARGS__)
#define ASSERT_LT(a, b, ...)	TL_CMP(a, <, b, __VA_ARGS__)
#define ASSERT_GT(a, b, ...)	TL_CMP(a, >, b, __VA_ARGS__)
/* ASSERT_OK(err, ...): err == 0 (an -errno return), else err and its text */
#define ASSERT_OK(err, ...)	tl_assert_err((long long)(err), #err, __VA_ARGS__)
#define ASSERT_TRUE(c, ...)	TL_CMP(!!(c), ==, 1, __VA_ARGS__)
#define ASSERT_FALSE(c, ...)	TL_CMP(!!(c), ==, 0, __VA_ARGS__)
/* ASSERT_MEMEQ(got, want, len, ...): else the first byte that differs */
#define ASSERT_MEMEQ(a, b, n, ...) tl_assert_mem(a, b, n, __VA_ARGS__)

/* ---- named subtests ---------------------------------------------------- */

struct tl_subtest {
	const char *name;	/* selected by -t PROG/NAME */
	int checks;		/* the checks it runs, counted from its cases */
	void (*fn)(void);
};

/* This program's name in selections: test_host -> "host". */
const char *tl_prog_name(void);
/* Whether subtest name of this program is selected (RINX_TEST_SELECT). */
bool tl_selected(const char *name);
/* The plan: fixed checks of main plus those of the selected subtests.
 * Skips the program (exit 4) when the selection names none of them. */
void tl_plan(int fixed, const struct tl_subtest *t, size_t n);
/* Runs the selected subtests in order; each must run its checks. */
void tl_run(const struct tl_subtest *t, size_t n);

/* ---- environment ------------------------------------------------------- */

/* Skips the program unless it runs as root ("needs root (why)"); libbpf's
 * messages are shown only with RINX_TEST_VERBOSE set. */
void tl_needs_root(const char *why);
/* Moves the program into a network namespace of its own (skips if it
 * cannot): its links and names are then its own, whoever runs alongside. */
void tl_unshare_net(void);
/* A testbed prefix unique to this run: $RINX_TEST_NS, tag, the pid. */
void tl_ns_prefix(char *buf, size_t len, const char *tag);
/* Runs `ip ARGS...` (argv[0] is "ip"); 0 when it exited 0. */
int tl_ip(char *const argv[]);
/* The nodes' MAC as the switch's macs map keys it. */
static inline __u64 tl_mac_key(const __u8 mac[6])
{
	__u64 k = 0;

	memcpy(&k, mac, 6);
	return k;
}

/* ---- counters ---------------------------------------------------------- */

/* out[k] = the sum over the possible CPUs of per-CPU array fd's key k,
 * k < n; 0 or -errno. */
int tl_percpu_sum(int fd, __u32 n, __u64 *out);

/* ---- test runs --------------------------------------------------------- */

struct tl_run {
	__u32 ret;		/* the XDP action */
	__u32 len;		/* the output frame's length */
	__u32 duration;		/* ns of the run, as the kernel measured */
};

/* One BPF_PROG_TEST_RUN of XDP program prog on len bytes of in, arriving
 * on ifindex ingress (0: none said), its output into out (out_size bytes;
 * out NULL: not wanted). 0 or -errno. */
int tl_xdp_run(int prog, const void *in, __u32 len, __u32 ingress, void *out,
	       __u32 out_size, struct tl_run *r);

/* ---- frames ------------------------------------------------------------ */

#define TF_OFF_IP	14
#define TF_OFF_UDP	34
#define TF_OFF_HDR	42

static inline void put16(__u8 *p, __u16 v) { p[0] = v >> 8; p[1] = (__u8)v; }
static inline void put32(__u8 *p, __u32 v) { put16(p, v >> 16); put16(p + 2, v); }
static inline __u16 get16(const __u8 *p) { return (__u16)(p[0] << 8 | p[1]); }
static inline __u32 get32(const __u8 *p)
{
	return (__u32)get16(p) << 16 | get16(p + 2);
}

/* The Internet checksum of len bytes (an odd last byte is left out). */
__u16 csum16(const void *p, int len);
/* Sets the checksum of the 20-byte IPv4 header at ip. */
void ip_fix_csum(__u8 *ip);

/* The addresses of a test frame. */
struct tl_addr {
	const __u8 *dst_mac, *src_mac;
	__be32 saddr, daddr;
	__u8 tos;
	__u16 port;		/* UDP, both ways */
	__u16 ip_id;
	bool no_df;		/* IPv4 DF clear */
};

/* Zeroes len bytes of f (at least a rinx header's) and makes them an
 * Ethernet/IPv4/UDP frame as a says, checksum set; returns the rinx
 * header, magic and version set. */
struct rinx_hdr *tl_frame(__u8 *f, int len, const struct tl_addr *a);

/* A rinx header's fields in host order, for tl_hdr_put. */
struct tl_hdr {
	__u8 type, flags, step;
	__u32 job;
	__u64 token;
	__u32 round, block, nblocks;
	__u16 sender, count, klass;
	__s16 exp;
	__u16 dtype;
};

/* Writes v into h in network order (magic, version and cover untouched). */
void tl_hdr_put(struct rinx_hdr *h, const struct tl_hdr *v);

/* A full-size frame from src to dst (Ethernet to dst_mac): tl_frame. */
struct rinx_node;
struct rinx_hdr *tf_frame(__u8 *f, const __u8 *dst_mac,
			  const struct rinx_node *src,
			  const struct rinx_node *dst, __u8 tos, __u16 port);

/* ---- skeletons --------------------------------------------------------- */

/* Sizes and knobs of a test's host program; 0 keeps the built value. */
struct tl_host_opts {
	__u16 port;
	__u32 window;
	__u32 nshare;		/* share and result */
	__u32 npartial, naggs, njobs;
};

/* Knobs of a test's switch program: the INA ToR's when ina_mac is set
 * (else the built values), its aggregator slots (0: the built number). */
struct tl_switch_opts {
	const __u8 *ina_mac;
	__u16 port;
	__u32 window;
	__u32 rack;
	__u32 naggs;
};

struct host_bpf;
struct switch_bpf;
/* Opened with o set, not loaded (the test sets more first): NULL + errno */
struct host_bpf *tl_host_open(const struct tl_host_opts *o);
struct switch_bpf *tl_switch_open(const struct tl_switch_opts *o);
/* Opened with o set and loaded; NULL with *err = -errno. */
struct host_bpf *tl_host_load(const struct tl_host_opts *o, int *err);
struct switch_bpf *tl_switch_load(const struct tl_switch_opts *o, int *err);

#endif
