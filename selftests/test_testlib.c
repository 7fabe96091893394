// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The tests' library tested (selftests/lib/testlib.c), without root: the
 * checksum against a worked example and an independent sum, the frame
 * builder's fields, and the TAP machinery through this program run again
 * as a child (RINX_TESTLIB_CHILD names its case): an ASSERT that fails
 * shows both sides, a subtest that runs fewer checks than it declares
 * fails its program, a selection picks one subtest and plans its checks
 * only, a selection that names none skips saying so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "selftests/lib/testlib.h"
#include "user/ctl.h"

/* ---- checksum and frame ---------------------------------------------- */

/* The sum of the checksum's RFC (1071, section 3): 00 01 f2 03 f4 f5 f6 f7
 * add up to 0xddf2, so their checksum is 0x220d. */
static void t_csum(void)
{
	static const __u8 b[] = { 0x00, 0x01, 0xf2, 0x03,
				  0xf4, 0xf5, 0xf6, 0xf7 };

	ASSERT_EQ(csum16(b, sizeof(b)), 0x220d, "csum16 of the RFC's example");
	ASSERT_EQ(csum16(b, 3), (__u16)~0x0001, "csum16 leaves an odd byte out");
}

/* 32-bit words folded at the end: another way to the same sum */
static __u16 fold32(const __u8 *p, int len)
{
	__u64 sum = 0;
	int i;

	for (i = 0; i + 3 < len; i += 4)
		sum += (__u32)p[i] << 24 | p[i + 1] << 16 | p[i + 2] << 8 |
		       p[i + 3];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

static void t_frame(void)
{
	static const __u8 dmac[6] = { 2, 0, 0, 0, 0, 2 };
	static const __u8 smac[6] = { 2, 0, 0, 0, 0, 1 };
	static __u8 f[RINX_FRAME_MAX];
	struct tl_addr a = {
		.dst_mac = dmac, .src_mac = smac,
		.saddr = htonl(0x0a000001), .daddr = htonl(0x0a000002),
		.tos = RINX_ECN_ECT0, .port = 4791, .ip_id = 7,
	};
	struct rinx_hdr *h = tl_frame(f, 1000, &a);

	tl_hdr_put(h, &(struct tl_hdr){ .type = RINX_T_GATHER, .job = 9,
					.token = 0x0102030405060708ULL,
					.block = 3, .count = 5, .exp = -2 });
	ASSERT_EQ(fold32(f + TF_OFF_IP, 20), 0xffff,
		  "frame: IPv4 header sums to 0xffff with its checksum");
	ASSERT_EQ(get16(f + TF_OFF_IP + 2), 1000 - TF_OFF_IP,
		  "frame: IPv4 total length");
	ASSERT_EQ(get16(f + TF_OFF_UDP + 2), 4791, "frame: UDP port");
	ASSERT_EQ(get16(f + TF_OFF_UDP + 4), 1000 - TF_OFF_UDP,
		  "frame: UDP length");
	ASSERT_MEMEQ(f, dmac, 6, "frame: Ethernet destination");
	ASSERT_EQ(ntohl(h->magic), RINX_MAGIC, "frame: rinx magic");
	ASSERT_EQ(be64toh(h->token), 0x0102030405060708ULL,
		  "frame: token in network order");
	ASSERT_EQ((__s16)ntohs(h->exp), -2, "frame: negative exponent");
}

/* ---- TAP through a child ----------------------------------------------- */

static void c_one(void)
{
	ASSERT_TRUE(1, "child: one");
}

static void c_short(void)
{
	ASSERT_TRUE(1, "child: declares two, runs one");
}

static struct tl_subtest child_tests[] = {
	{ "one", 1, c_one },
	{ "short", 2, c_short },
};

/* The child's cases: what it does, then exits with tap_done's status. */
static int child(const char *c)
{
	if (!strcmp(c, "assert")) {
		tap_plan(1);
		ASSERT_EQ(2 + 2, 5, "child: four is five");
	} else {
		tl_plan(0, child_tests, ARRAY_SIZE(child_tests));
		tl_run(child_tests, ARRAY_SIZE(child_tests));
	}
	return tap_done();
}

/* Runs this program as child case c with selection sel (NULL: none); its
 * output in out, its exit status returned (-1: did not run). */
static int run_child(const char *c, const char *sel, char *out, size_t len)
{
	int fd[2], st;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		setenv("RINX_TESTLIB_CHILD", c, 1);
		if (sel)
			setenv("RINX_TEST_SELECT", sel, 1);
		else
			unsetenv("RINX_TEST_SELECT");
		execl("/proc/self/exe", "test_testlib", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (pid > 0 && (n = read(fd[0], out + got, len - 1 - got)) > 0)
		got += n;
	out[got] = '\0';
	close(fd[0]);
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void t_assert(void)
{
	char out[4096];
	int rc = run_child("assert", NULL, out, sizeof(out));

	/* tap_ok, not the ASSERTs under test */
	tap_ok(rc == 1, "a failed ASSERT_EQ fails its program (exit %d)", rc);
	tap_ok(strstr(out, "not ok 1 - child: four is five") &&
	       strstr(out, "got 4 (0x4) and 5 (0x5)"),
	       "the failed ASSERT_EQ prints both sides");
}

static void t_plan(void)
{
	char out[4096];
	int rc = run_child("table", NULL, out, sizeof(out));

	ASSERT_EQ(rc, 1, "a subtest short of its checks fails its program");
	ASSERT_TRUE(strstr(out, "subtest short: FAIL (planned 2 checks, "
				"ran 1)") && strstr(out, "1..3\n"),
		    "it is named, with both counts, under a plan of 3");
}

static void t_select(void)
{
	char out[4096];
	int rc = run_child("table", "testlib/on", out, sizeof(out));

	ASSERT_EQ(rc, 0, "-t testlib/on (a prefix) runs subtest one alone");
	ASSERT_TRUE(!strncmp(out, "1..1\n", 5) && !strstr(out, "short"),
		    "its plan is its own check, the other one not run");
	rc = run_child("table", "testlib/nothing", out, sizeof(out));
	ASSERT_EQ(rc, 4, "a selection that names no subtest skips");
	ASSERT_TRUE(strstr(out, "# SKIP no subtest of testlib matches") != NULL,
		    "saying so");
}

static struct tl_subtest subtests[] = {
	{ "csum", 2, t_csum },
	{ "frame", 8, t_frame },
	{ "assert", 2, t_assert },
	{ "plan", 2, t_plan },
	{ "select", 4, t_select },
};

int main(void)
{
	const char *c = getenv("RINX_TESTLIB_CHILD");

	if (c)
		return child(c);
	tl_plan(0, subtests, ARRAY_SIZE(subtests));
	tl_run(subtests, ARRAY_SIZE(subtests));
	return tap_done();
}
