// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The librinx API inside the testbed: one forked process per rank, each in
 * its host's network namespace, calling librinx directly. Every sum is
 * checked against a reference the test computes on its own (int32: exact
 * wrapping sum; float32: double sum within rinx_f32_bound of the block).
 *
 *              <P>t0              ToR: rinx_switch on p0..p3
 *         p0 /  p1|  p2|  \ p3
 *       eth0   eth0  eth0  eth0   host program on eth0, window 64 blocks
 *      <P>h0  <P>h1  <P>h2  <P>h3 one test process per host (rank 0..3)
 *
 * Ranks meet at a barrier (shared memory) after rinx_comm_open, like a
 * trainer's init barrier; one scenario leaves it out on purpose.
 * Each scenario forks the ranks it needs; they report through pipes (one
 * fixed-size record each) and the parent prints one TAP line per check:
 * a check passes when no rank failed it and at least one rank passed it.
 * Every wait is bounded: the communicators' timeouts, a deadline per
 * scenario (children killed past it) and an alarm over the whole program.
 * The testbed (prefix rxA<pid>) is removed at exit, on a signal too.
 *
 *   build/selftests/test_api [builddir]
 *
 * Exit 0 pass, 1 fail, 4 skip (reason printed).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "selftests/lib/testlib.h"
#include "user/ctl.h"
#include "user/librinx.h"
#include "tools/testbed/testbed.h"

#define NR		4	/* ranks (hosts) */
#define WINDOW		64	/* blocks per round */
#define BV		RINX_BLOCK_VALUES
#define MAXCHK		6
#define SCEN_SECS	120	/* deadline of one scenario */
#define ALL_SECS	600	/* of the whole program */
#define OP_TIMEOUT	20000	/* ms, communicators of the normal cases */
#define ERR_TIMEOUT	1500	/* ms, mismatch and dead peer */
#define ERR_SLACK	8000	/* ms past the timeout: a hang, not a delay */

/* ---- parent state, for the exit and signal paths ---- */
static char prefix[RINX_TB_PREFIX_MAX + 1];
static char spec_path[RINX_PATH_MAX];
static struct rinx_spec spec;
static pid_t parent_pid;
static volatile sig_atomic_t tb_up;
static pid_t kids[NR];
static uint32_t job_base;

/* shared with the children: barrier counters, reset per scenario */
struct shm {
	int bar[8];
};
static struct shm *shm;

static void kill_kids(void)
{
	int r;

	for (r = 0; r < NR; r++)
		if (kids[r] > 0) {
			kill(kids[r], SIGKILL);
			waitpid(kids[r], NULL, 0);
			kids[r] = 0;
		}
}

static void teardown(void)
{
	if (getpid() != parent_pid)
		return;
	kill_kids();
	if (tb_up) {
		tb_up = 0;
		rinx_testbed_down(prefix, NULL);
	}
}

static void on_signal(int sig)
{
	/* not async-signal-safe, but the program ends here either way */
	if (getpid() == parent_pid) {
		printf("Bail out! signal %d\n", sig);
		fflush(stdout);
		teardown();
	}
	_exit(1);
}

/* ---- inputs and references, independent of librinx ---- */
static uint64_t hash64(uint64_t x)
{
	x += 0x2545f4914f6cdd1dull;
	x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
	x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t key(uint64_t seed, int r, uint64_t i)
{
	return hash64(seed * 0x100000001b3ull ^ hash64(((uint64_t)r << 48) ^ i));
}

/* Magnitudes from 2^-12 to 2^9, changing from block to block and rank to
 * rank, both signs; every ninth element is zero. */
static float gen_f32(uint64_t seed, int r, uint64_t i)
{
	uint64_t h = key(seed, r, i);
	int e = (int)((i / BV * 5 + r * 3 + seed) % 22) - 12;

	if (i % 9 == 4)
		return 0.0f;
	return (float)ldexp((double)(int64_t)h * 0x1p-63, e);
}

static int32_t gen_i32(uint64_t seed, int r, uint64_t i)
{
	return (int32_t)(uint32_t)(key(seed, r, i) >> 17);
}

static void fill(void *buf, enum rinx_dtype dt, uint64_t seed, int r,
		 size_t count)
{
	size_t i;

	for (i = 0; i < count; i++)
		if (dt == RINX_INT32)
			((int32_t *)buf)[i] = gen_i32(seed, r, i);
		else
			((float *)buf)[i] = gen_f32(seed, r, i);
}

/* Elements [from, to) of the result of all n ranks' gen_*(seed) inputs;
 * returns the number of wrong elements, the first described in msg.
 * Only whole blocks may be skipped (from and to on block boundaries or
 * to == count). */
static int check_range(const void *recv, enum rinx_dtype dt, uint64_t seed,
		       int n, size_t from, size_t to, char *msg, size_t len)
{
	size_t b, i, base, end;
	int r, wrong = 0;

	for (base = from; base < to; base = end) {
		double acc[BV], amax = 0, bound;

		end = (base / BV + 1) * BV;
		if (end > to)
			end = to;
		if (dt == RINX_INT32) {
			for (i = base; i < end; i++) {
				uint32_t s = 0;

				for (r = 0; r < n; r++)
					s += (uint32_t)gen_i32(seed, r, i);
				if ((uint32_t)((const int32_t *)recv)[i] != s &&
				    !wrong++)
					snprintf(msg, len, "int32 element %zu: "
						 "got %d, want %d", i,
						 ((const int32_t *)recv)[i],
						 (int32_t)s);
			}
			continue;
		}
		for (i = base; i < end; i++) {
			acc[i - base] = 0;
			for (r = 0; r < n; r++) {
				double v = gen_f32(seed, r, i);

				acc[i - base] += v;
				if (fabs(v) > amax)
					amax = fabs(v);
			}
		}
		bound = rinx_f32_bound(n, amax);
		/* the bound may not be loose enough to hide real errors */
		if (!(bound <= ldexp(amax, -18)) && !wrong++)
			snprintf(msg, len, "rinx_f32_bound(%d, %g) = %g is "
				 "implausibly large", n, amax, bound);
		for (b = base; b < end; b++) {
			float got = ((const float *)recv)[b];
			double err = fabs((double)got - acc[b - base]);

			if (!(err <= bound) && !wrong++)
				snprintf(msg, len, "float32 element %zu: got "
					 "%.9g, want %.9g (bound %.3g)", b, got,
					 acc[b - base], bound);
		}
	}
	return wrong;
}

static int check_all(const void *recv, enum rinx_dtype dt, uint64_t seed,
		     int n, size_t count, char *msg, size_t len)
{
	return check_range(recv, dt, seed, n, 0, count, msg, len);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* ---- child side ---- */
enum { CK_UNSET, CK_PASS, CK_FAIL, CK_NA };

struct report {
	int st[MAXCHK];
	char msg[MAXCHK][200];
};

struct ctx {
	int rank, n, nprocs;
	uint32_t job;		/* this scenario's job id, job % 4 == 1 */
	struct report *rep;
};

static __attribute__((format(printf, 4, 5)))
int check(struct ctx *x, int k, int cond, const char *fmt, ...)
{
	va_list ap;

	if (x->rep->st[k] == CK_FAIL)
		return cond;	/* keep the first failure */
	x->rep->st[k] = cond ? CK_PASS : CK_FAIL;
	if (!cond) {
		int l = snprintf(x->rep->msg[k], sizeof(x->rep->msg[k]),
				 "rank %d: ", x->rank);

		va_start(ap, fmt);
		vsnprintf(x->rep->msg[k] + l, sizeof(x->rep->msg[k]) - l, fmt,
			  ap);
		va_end(ap);
	}
	return cond;
}

static void na(struct ctx *x, int k)
{
	x->rep->st[k] = CK_NA;
}

/* Waits until `nprocs` ranks arrived at barrier `id` (bounded). */
static int barrier(struct ctx *x, int id, int k)
{
	uint64_t t = now_ms();

	__atomic_add_fetch(&shm->bar[id], 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&shm->bar[id], __ATOMIC_SEQ_CST) < x->nprocs) {
		if (now_ms() - t > SCEN_SECS * 500ull) {
			check(x, k, 0, "barrier %d: only %d of %d ranks came",
			      id, shm->bar[id], x->nprocs);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
	return 0;
}

/* Opens a communicator; then, unless bar < 0, waits for every rank at
 * barrier `bar` (like a trainer's init barrier). */
static int open_comm(struct ctx *x, uint32_t job, int timeout_ms,
		     struct rinx_comm **c, int k, int bar)
{
	struct rinx_comm_opts o = {
		.sz = sizeof(o),
		.spec = spec_path,
		.rank = x->rank,
		.job = job,
		.token = 0x7e57a91u ^ job,
		.timeout_ms = timeout_ms,
	};
	int err = rinx_comm_open(&o, c);

	if (err) {
		check(x, k, 0, "rinx_comm_open(job %u): %d %s", job, err,
		      rinx_comm_error(NULL));
		*c = NULL;
	}
	if (bar >= 0)
		barrier(x, bar, k);
	return err;
}

/* A blocking allreduce of gen(seed) checked against the reference. */
static int reduce_check(struct ctx *x, struct rinx_comm *c, int k,
			enum rinx_dtype dt, uint64_t seed, size_t count,
			int in_place, const char *what)
{
	void *send = malloc(count * 4), *recv = malloc(count * 4);
	char msg[160] = "";
	int err, wrong = -1;

	if (!send || !recv) {
		check(x, k, 0, "%s: out of memory", what);
		goto out;
	}
	fill(send, dt, seed, x->rank, count);
	if (in_place) {
		free(recv);
		recv = send;
	} else {
		memset(recv, 0xa5, count * 4);
	}
	err = rinx_allreduce(c, send, recv, count, dt);
	if (!check(x, k, err == 0, "%s: rinx_allreduce = %d: %s", what, err,
		   rinx_comm_error(c)))
		goto out;
	wrong = check_all(recv, dt, seed, x->n, count, msg, sizeof(msg));
	check(x, k, !wrong, "%s: %d wrong, first %s", what, wrong, msg);
out:
	if (recv != send)
		free(recv);
	free(send);
	return wrong;
}

/* Bad options of rinx_comm_open; rank 0 only. */
static void sc_badopts(struct ctx *x)
{
	struct rinx_comm_opts o = {
		.sz = sizeof(o), .spec = spec_path, .rank = 0, .job = x->job,
	};
	struct rinx_comm *c = (struct rinx_comm *)&o;	/* must become NULL */
	const char *m;
	int err;

	o.job = 0;
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 0, err == -EINVAL && !c && m && strstr(m, "job"),
	      "job 0: err %d, comm %p, message '%s'", err, (void *)c, m);
	o.job = x->job;

	o.spec = NULL;
	c = (struct rinx_comm *)&o;
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 1, err < 0 && !c && m && *m,
	      "spec NULL: err %d, message '%s'", err, m);
	o.spec = "/nonexistent/rinx-test.spec";
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 1, err < 0 && !c && m && *m,
	      "missing spec file: err %d, message '%s'", err, m);
	o.spec = spec_path;

	o.rank = NR;
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 2, err == -ENOENT && !c && m && strstr(m, "rank"),
	      "rank %d: err %d, message '%s'", NR, err, m);
	o.rank = -1;
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 2, err < 0 && !c && m && *m,
	      "rank -1: err %d, message '%s'", err, m);
	o.rank = 0;

	o.node = "nosuchhost";
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 3, err < 0 && !c && m && strstr(m, "nosuchhost"),
	      "node nosuchhost: err %d, message '%s'", err, m);
	o.node = NULL;
	o.sz = offsetof(struct rinx_comm_opts, plan) - 1;
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 3, err == -EINVAL && !c && m && *m,
	      "short opts.sz: err %d, message '%s'", err, m);
	o.sz = sizeof(o);

	/* control: the same options are valid; alone, rank 0 waits in the
	 * open barrier for its peers and names them when it gives up */
	o.timeout_ms = 300;
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 4, err == -ETIMEDOUT && !c && m &&
		    strstr(m, "rank 1 (") && strstr(m, "rank 3 (") &&
		    strstr(m, "did not open"),
	      "valid options, peers absent: err %d, message '%s'", err, m);
}

static void sc_blocking(struct ctx *x)
{
	struct rinx_comm *c;
	size_t count = 6 * BV + 392;

	struct rinx_req *req = NULL;
	float buf[4] = { 1, 2, 3, 4 };
	int err;

	if (open_comm(x, x->job, OP_TIMEOUT, &c, 0, 0))
		return;
	err = rinx_allreduce_start(c, buf, buf, 4, (enum rinx_dtype)7, &req);
	check(x, 4, err == -EINVAL && !req && *rinx_comm_error(c),
	      "dtype 7: err %d", err);
	err = rinx_allreduce_start(c, NULL, buf, 4, RINX_FLOAT32, &req);
	check(x, 4, err == -EINVAL && !req && *rinx_comm_error(c),
	      "NULL send buffer: err %d", err);
	reduce_check(x, c, 0, RINX_FLOAT32, 11, count, 0, "float32");
	reduce_check(x, c, 1, RINX_INT32, 12, count, 0, "int32");
	reduce_check(x, c, 2, RINX_FLOAT32, 13, count, 1, "in-place float32");
	reduce_check(x, c, 3, RINX_INT32, 14, count, 1, "in-place int32");
	rinx_comm_close(c);
}

static void sc_async(struct ctx *x)
{
	size_t count = 3 * BV + 5, polls = 0;
	struct rinx_req *req = NULL, *req2 = NULL;
	struct rinx_comm *c;
	char msg[160] = "";
	void *send = malloc(count * 4), *recv = malloc(count * 4);
	uint64_t t;
	int err, wrong;

	if (!send || !recv || open_comm(x, x->job, OP_TIMEOUT, &c, 0, 0))
		goto out;

	/* start + wait */
	fill(send, RINX_FLOAT32, 21, x->rank, count);
	memset(recv, 0xa5, count * 4);
	err = rinx_allreduce_start(c, send, recv, count, RINX_FLOAT32, &req);
	if (check(x, 0, !err && req, "start: %d", err)) {
		err = rinx_wait(req, -1);
		if (err == -ETIMEDOUT)
			rinx_cancel(req);
		if (check(x, 0, !err, "wait: %d %s", err, rinx_comm_error(c))) {
			wrong = check_all(recv, RINX_FLOAT32, 21, x->n, count,
					  msg, sizeof(msg));
			check(x, 0, !wrong, "%d wrong, first %s", wrong, msg);
		}
	}

	/* a second start while one is in flight */
	fill(send, RINX_INT32, 22, x->rank, count);
	memset(recv, 0xa5, count * 4);
	err = rinx_allreduce_start(c, send, recv, count, RINX_INT32, &req);
	if (check(x, 1, !err && req, "start: %d", err)) {
		req2 = (struct rinx_req *)&req;
		err = rinx_allreduce_start(c, send, recv, count, RINX_INT32,
					   &req2);
		check(x, 1, err == -EBUSY && !req2 && *rinx_comm_error(c),
		      "second start: %d (want -EBUSY), req %p, message '%s'",
		      err, (void *)req2, rinx_comm_error(c));
		err = rinx_wait(req, -1);
		if (err == -ETIMEDOUT)
			rinx_cancel(req);
		if (check(x, 1, !err, "first request after -EBUSY: wait %d %s",
			  err, rinx_comm_error(c))) {
			wrong = check_all(recv, RINX_INT32, 22, x->n, count,
					  msg, sizeof(msg));
			check(x, 1, !wrong, "first request: %d wrong, first %s",
			      wrong, msg);
		}
	}

	/* rinx_test polled to completion, bounded by our own deadline */
	fill(send, RINX_INT32, 23, x->rank, count);
	memset(recv, 0xa5, count * 4);
	err = rinx_allreduce_start(c, send, recv, count, RINX_INT32, &req);
	if (check(x, 2, !err && req, "start: %d", err)) {
		t = now_ms();
		do {
			err = rinx_test(req);
			polls++;
			if (!err && now_ms() - t > OP_TIMEOUT) {
				rinx_cancel(req);
				err = -ETIMEDOUT;
			}
			if (!err && polls % 16 == 0)
				usleep(50);
		} while (!err);
		if (check(x, 2, err == 1, "rinx_test = %d after %zu polls: %s",
			  err, polls, rinx_comm_error(c))) {
			wrong = check_all(recv, RINX_INT32, 23, x->n, count,
					  msg, sizeof(msg));
			check(x, 2, !wrong, "%d wrong, first %s", wrong, msg);
		}
	}

	/* rinx_wait(req, 0): 0 or -ETIMEDOUT with req valid; wait again */
	fill(send, RINX_FLOAT32, 24, x->rank, count);
	memset(recv, 0xa5, count * 4);
	err = rinx_allreduce_start(c, send, recv, count, RINX_FLOAT32, &req);
	if (check(x, 3, !err && req, "start: %d", err)) {
		err = rinx_wait(req, 0);
		if (check(x, 3, err == 0 || err == -ETIMEDOUT,
			  "wait(0) = %d", err) && err == -ETIMEDOUT) {
			err = rinx_wait(req, -1);
			if (err == -ETIMEDOUT)
				rinx_cancel(req);
		}
		if (check(x, 3, !err, "wait after wait(0): %d %s", err,
			  rinx_comm_error(c))) {
			wrong = check_all(recv, RINX_FLOAT32, 24, x->n, count,
					  msg, sizeof(msg));
			check(x, 3, !wrong, "%d wrong, first %s", wrong, msg);
		}
	}
	rinx_comm_close(c);
out:
	free(send);
	free(recv);
}

/* Both in flight at once, driven by rinx_wait_any to the end: each index
 * comes back once, with 0 and its request set to NULL, and both sums are
 * right; bad arguments are refused (check 3). */
static void wait_any_two(struct ctx *x, struct rinx_comm *a,
			 struct rinx_comm *b, void *sa, void *qa, void *sb,
			 void *qb, size_t count)
{
	struct rinx_req *rq[3] = { NULL };
	int err, idx, seen = 0, k, wrong;
	char msg[160] = "";

	check(x, 3, rinx_wait_any(rq, 3, 0, &idx) == -EINVAL &&
	      rinx_wait_any(NULL, 1, 0, &idx) == -EINVAL,
	      "rinx_wait_any without a request: not -EINVAL");
	fill(sa, RINX_INT32, 43, x->rank, count);
	fill(sb, RINX_FLOAT32, 44, x->rank, count);
	memset(qa, 0xa5, count * 4);
	memset(qb, 0xa5, count * 4);
	/* a hole at [1]: requests may sit anywhere in the array */
	if (!check(x, 3, !rinx_allreduce_start(a, sa, qa, count, RINX_INT32,
					       &rq[0]) &&
		   !rinx_allreduce_start(b, sb, qb, count, RINX_FLOAT32,
					 &rq[2]), "start A and B"))
		goto out;
	for (k = 0; k < 2; k++) {
		err = rinx_wait_any(rq, 3, OP_TIMEOUT, &idx);
		if (!check(x, 3, !err && (idx == 0 || idx == 2) &&
			   !rq[idx] && !(seen & (1 << idx)),
			   "rinx_wait_any #%d: %d, index %d (%s)", k, err, idx,
			   rinx_comm_error(idx == 2 ? b : a)))
			goto out;
		seen |= 1 << idx;
	}
	wrong = check_all(qa, RINX_INT32, 43, x->n, count, msg, sizeof(msg));
	check(x, 3, !wrong, "wait_any A: %d wrong, first %s", wrong, msg);
	wrong = check_all(qb, RINX_FLOAT32, 44, x->n, count, msg, sizeof(msg));
	check(x, 3, !wrong, "wait_any B: %d wrong, first %s", wrong, msg);
out:
	for (k = 0; k < 3; k++)
		rinx_cancel(rq[k]);
}

static void sc_two(struct ctx *x)
{
	struct rinx_comm *a, *b = NULL;
	size_t count = 2 * BV + 77, i;
	struct rinx_req *ra = NULL, *rb = NULL;
	void *sa = malloc(count * 4), *qa = malloc(count * 4);
	void *sb = malloc(count * 4), *qb = malloc(count * 4);
	char msg[160] = "";
	int err, ea = 0, eb = 0, wrong;
	uint64_t t;

	if (!sa || !qa || !sb || !qb)
		goto out;
	/* job and job + 1: slots job % 4 = 1 and 2 */
	if (open_comm(x, x->job, OP_TIMEOUT, &a, 0, -1))
		goto out;
	if (open_comm(x, x->job + 1, OP_TIMEOUT, &b, 0, 0)) {
		rinx_comm_close(a);
		goto out;
	}
	check(x, 0, rinx_comm_size(a) == NR && rinx_comm_size(b) == NR,
	      "sizes %d %d", rinx_comm_size(a), rinx_comm_size(b));
	{
		/* job J again while A holds it: refused with a message, and
		 * A (used below) left whole */
		struct rinx_comm_opts o = {
			.sz = sizeof(o), .spec = spec_path, .rank = x->rank,
			.job = x->job, .token = 0x7e57a91u ^ x->job,
			.timeout_ms = OP_TIMEOUT,
		};
		struct rinx_comm *a2 = NULL;
		const char *m;

		err = rinx_comm_open(&o, &a2);
		m = rinx_comm_error(NULL);
		check(x, 4, err == -EBUSY && !a2 && m &&
		      strstr(m, "is open on node"),
		      "job %u opened again: %d, %s", x->job, err, m ? m : "");
		if (a2)
			rinx_comm_close(a2);
	}
	for (i = 0; i < 4; i++) {
		enum rinx_dtype dt = i % 3 ? RINX_INT32 : RINX_FLOAT32;

		reduce_check(x, i % 2 ? b : a, 1, dt, 31 + i, count + i, 0,
			     i % 2 ? "comm B" : "comm A");
	}

	/* both in flight at once, progressed alternately */
	fill(sa, RINX_FLOAT32, 41, x->rank, count);
	fill(sb, RINX_INT32, 42, x->rank, count);
	memset(qa, 0xa5, count * 4);
	memset(qb, 0xa5, count * 4);
	err = rinx_allreduce_start(a, sa, qa, count, RINX_FLOAT32, &ra);
	if (!check(x, 2, !err, "start A: %d", err))
		goto close;
	err = rinx_allreduce_start(b, sb, qb, count, RINX_INT32, &rb);
	if (!check(x, 2, !err, "start B: %d", err)) {
		rinx_cancel(ra);
		goto close;
	}
	t = now_ms();
	while (!ea || !eb) {
		if (!ea)
			ea = rinx_test(ra);
		if (!eb)
			eb = rinx_test(rb);
		if (now_ms() - t > OP_TIMEOUT) {
			if (!ea)
				rinx_cancel(ra);
			if (!eb)
				rinx_cancel(rb);
			ea = ea ? ea : -ETIMEDOUT;
			eb = eb ? eb : -ETIMEDOUT;
		}
		usleep(20);
	}
	if (check(x, 2, ea == 1 && eb == 1, "rinx_test: A %d (%s), B %d (%s)",
		  ea, rinx_comm_error(a), eb, rinx_comm_error(b))) {
		wrong = check_all(qa, RINX_FLOAT32, 41, x->n, count, msg,
				  sizeof(msg));
		check(x, 2, !wrong, "A: %d wrong, first %s", wrong, msg);
		wrong = check_all(qb, RINX_INT32, 42, x->n, count, msg,
				  sizeof(msg));
		check(x, 2, !wrong, "B: %d wrong, first %s", wrong, msg);
	}
	wait_any_two(x, a, b, sa, qa, sb, qb, count);
close:
	rinx_comm_close(b);
	rinx_comm_close(a);
out:
	free(sa);
	free(qa);
	free(sb);
	free(qb);
}

static void sc_rounds(struct ctx *x)
{
	struct rinx_comm_stats st;
	size_t count = (1 << 20) / 4;
	uint64_t want = (count + WINDOW * BV - 1) / (WINDOW * BV);
	struct rinx_comm *c;

	if (open_comm(x, x->job, OP_TIMEOUT, &c, 0, 0))
		return;
	reduce_check(x, c, 0, RINX_FLOAT32, 51, count, 0, "1 MiB float32");
	reduce_check(x, c, 1, RINX_INT32, 52, count, 0, "1 MiB int32");
	memset(&st, 0, sizeof(st));
	rinx_comm_stats(c, &st);
	check(x, 2, st.ops == 2 && st.rounds == 2 * want &&
	      st.bytes == 2 * count * 4 && !st.timeouts,
	      "stats: ops %llu rounds %llu (want %llu) bytes %llu "
	      "timeouts %llu", (unsigned long long)st.ops,
	      (unsigned long long)st.rounds, (unsigned long long)(2 * want),
	      (unsigned long long)st.bytes, (unsigned long long)st.timeouts);
	rinx_comm_close(c);
}

/* Rank 1 puts non-finite values into blocks 0..3; blocks 4..6 are finite. */
static void sc_nonfinite(struct ctx *x)
{
	size_t count = 6 * BV + 100, i;
	float *send = malloc(count * 4), *recv = malloc(count * 4);
	struct rinx_comm_stats st;
	struct rinx_comm *c;
	char msg[160] = "";
	int err, wrong, b;

	if (!send || !recv || open_comm(x, x->job, OP_TIMEOUT, &c, 0, 0))
		goto out;
	fill(send, RINX_FLOAT32, 61, x->rank, count);
	if (x->rank == 1) {
		send[0 * BV + 5] = NAN;
		send[1 * BV + 700] = INFINITY;
		send[1 * BV + 3] = INFINITY;
		send[2 * BV + 0] = INFINITY;
		send[2 * BV + 767] = -INFINITY;
		send[3 * BV + 10] = -INFINITY;
	}
	memset(recv, 0xa5, count * 4);
	err = rinx_allreduce(c, send, recv, count, RINX_FLOAT32);
	if (!check(x, 0, !err, "allreduce: %d %s", err, rinx_comm_error(c))) {
		check(x, 1, 0, "no result");
		check(x, 2, 0, "no result");
		check(x, 3, 0, "no result");
		goto close;
	}
	for (b = 0; b < 4; b++)
		for (i = b * BV; i < (size_t)(b + 1) * BV; i++) {
			float v = recv[i];

			switch (b) {
			case 0:
				check(x, 0, isnan(v), "block 0 (NaN): element "
				      "%zu is %g", i, v);
				break;
			case 1:
				check(x, 1, isinf(v) && v > 0, "block 1 "
				      "(+Inf): element %zu is %g", i, v);
				break;
			case 2:
				check(x, 2, isnan(v), "block 2 (+Inf and "
				      "-Inf): element %zu is %g", i, v);
				break;
			case 3:
				check(x, 1, isinf(v) && v < 0, "block 3 "
				      "(-Inf): element %zu is %g", i, v);
				break;
			}
		}
	wrong = check_range(recv, RINX_FLOAT32, 61, x->n, 4 * BV, count, msg,
			    sizeof(msg));
	check(x, 3, !wrong, "finite blocks: %d wrong, first %s", wrong, msg);
	rinx_comm_stats(c, &st);
	check(x, 3, st.nonfinite == 4, "stats.nonfinite %llu, want 4",
	      (unsigned long long)st.nonfinite);
close:
	rinx_comm_close(c);
out:
	free(send);
	free(recv);
}

/* The last rank's tensor has one block more. */
static void sc_mismatch(struct ctx *x)
{
	size_t count = x->rank == NR - 1 ? 1000 + BV : 1000;
	void *send = calloc(count, 4), *recv = calloc(count, 4);
	struct rinx_comm *c;
	uint64_t t;
	int err;

	if (!send || !recv || open_comm(x, x->job, ERR_TIMEOUT, &c, 0, 0))
		goto out;
	fill(send, RINX_INT32, 71, x->rank, count);
	t = now_ms();
	err = rinx_allreduce(c, send, recv, count, RINX_INT32);
	t = now_ms() - t;
	check(x, 0, (err == -EMSGSIZE || err == -ETIMEDOUT) &&
	      t < ERR_TIMEOUT + ERR_SLACK,
	      "err %d after %llu ms (timeout %d ms): %s", err,
	      (unsigned long long)t, ERR_TIMEOUT, rinx_comm_error(c));
	check(x, 1, err && strlen(rinx_comm_error(c)) > 10,
	      "err %d, message '%s'", err, rinx_comm_error(c));
	rinx_comm_close(c);
out:
	free(send);
	free(recv);
}

/* The last rank opens and closes its communicator and exits: no
 * allreduce. Slot 3 (job + 2), so the other slots stay clean. */
static void sc_dead(struct ctx *x)
{
	size_t count = 4 * BV;
	void *send = calloc(count, 4), *recv = calloc(count, 4);
	char name[64];
	struct rinx_comm *c;
	const char *m;
	uint64_t t;
	int err;

	if (!send || !recv || open_comm(x, x->job + 2, ERR_TIMEOUT, &c, 0, 0))
		goto out;
	if (x->rank == NR - 1) {
		rinx_comm_close(c);
		na(x, 0);
		na(x, 1);
		goto out;
	}
	usleep(200 * 1000);	/* the dead rank is gone by now, mostly */
	fill(send, RINX_FLOAT32, 81, x->rank, count);
	t = now_ms();
	err = rinx_allreduce(c, send, recv, count, RINX_FLOAT32);
	t = now_ms() - t;
	check(x, 0, err == -ETIMEDOUT && t + 20 >= ERR_TIMEOUT &&
	      t < ERR_TIMEOUT + ERR_SLACK,
	      "err %d after %llu ms (timeout %d ms)", err,
	      (unsigned long long)t, ERR_TIMEOUT);
	m = rinx_comm_error(c);
	snprintf(name, sizeof(name), "rank %d", NR - 1);
	check(x, 1, strstr(m, name) && strstr(m, spec.hosts[NR - 1].name),
	      "message does not name %s (%s): '%s'", name,
	      spec.hosts[NR - 1].name, m);
	rinx_comm_close(c);
out:
	free(send);
	free(recv);
}

/* New communicators in the slot of the failed job of sc_dead. */
static void sc_after_dead(struct ctx *x)
{
	struct rinx_comm *c;

	if (open_comm(x, x->job + 2, OP_TIMEOUT, &c, 0, 0))
		return;
	reduce_check(x, c, 0, RINX_INT32, 91, 3 * BV, 0, "int32");
	rinx_comm_close(c);
}

/* No init barrier: rank r opens 300 r ms after rank 0 and calls allreduce
 * at once; the early ranks' frames reach nodes whose communicator is not
 * open yet. Slot 0 (job + 3), so a failure leaves the other slots alone. */
/* Plans chosen per communicator: tree and ps:2 give correct sums; ranks
 * that name different plans fail at open with a message naming both; an
 * unknown plan name is refused before anything is installed. */
static void sc_plans(struct ctx *x)
{
	static const char *const plans[] = { "tree", "ps:2" };
	size_t count = 3 * BV + 5;
	void *send = calloc(count, 4), *recv = calloc(count, 4);
	struct rinx_comm_opts o = {
		.sz = sizeof(o), .spec = spec_path, .rank = x->rank,
		.timeout_ms = ERR_TIMEOUT,
	};
	struct rinx_comm *c = NULL;
	const char *m;
	int err, i, wrong;
	char msg[160];

	if (!send || !recv)
		goto out;
	for (i = 0; i < 2; i++) {
		o.job = x->job + i;
		o.token = 0x7e57a91u ^ o.job;
		o.plan = plans[i];
		err = rinx_comm_open(&o, &c);
		if (!check(x, i, !err, "open with plan %s: %d %s", plans[i], err,
			   rinx_comm_error(NULL)))
			continue;
		fill(send, RINX_FLOAT32, 90 + i, x->rank, count);
		err = rinx_allreduce(c, send, recv, count, RINX_FLOAT32);
		wrong = err ? -1 : check_all(recv, RINX_FLOAT32, 90 + i, NR,
					     count, msg, sizeof(msg));
		check(x, i, !err && !wrong, "plan %s: allreduce %d (%s), %d "
		      "wrong, first %s", plans[i], err, rinx_comm_error(c), wrong,
		      wrong ? msg : "-");
		rinx_comm_close(c);
		c = NULL;
		barrier(x, 1 + i, i);
	}
	/* rank 3 names another plan than the others */
	o.job = x->job + 2;
	o.token = 0x7e57a91u ^ o.job;
	o.plan = x->rank == NR - 1 ? "ps" : "ring";
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 2, err == -EINVAL && !c && m && strstr(m, "same plan") &&
	      strstr(m, "ps") && strstr(m, "ring"),
	      "plans ring and ps in one job: err %d, message '%s'", err, m);
	if (c)
		rinx_comm_close(c);
	c = NULL;
	barrier(x, 3, 2);
	o.plan = "ring:2";
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 3, err == -EINVAL && !c && m && strstr(m, "ring:2"),
	      "plan ring:2: err %d, message '%s'", err, m);
	o.plan = "mesh";
	err = rinx_comm_open(&o, &c);
	m = rinx_comm_error(NULL);
	check(x, 3, err == -EINVAL && !c && m && strstr(m, "mesh"),
	      "plan mesh: err %d, message '%s'", err, m);
out:
	free(send);
	free(recv);
}

static void sc_stagger(struct ctx *x)
{
	struct rinx_comm *c;

	usleep(300000 * x->rank);
	if (open_comm(x, x->job + 3, OP_TIMEOUT, &c, 0, -1))
		return;
	reduce_check(x, c, 0, RINX_FLOAT32, 95, 5 * BV + 1, 0, "float32");
	rinx_comm_close(c);
}

/* Lossy links (the scenario's drop_ppm on every port), and ranks that
 * close their communicator as soon as their allreduce returns, CLOSE_ITERS
 * times (a new job each time, no barrier): a rank whose last frames were
 * lost asks peers that are closing for them. */
#define CLOSE_ITERS	16
#define CLOSE_TIMEOUT	8000	/* ms: a peer that never answers fails */

static void sc_close_lossy(struct ctx *x)
{
	size_t count = 3 * BV + 5;
	struct rinx_comm_stats st;
	uint64_t repaired = 0;
	struct rinx_comm *c;
	int i, wrong;

	for (i = 0; i < CLOSE_ITERS; i++) {
		if (open_comm(x, x->job + ((uint32_t)(i + 1) << 27),
			      CLOSE_TIMEOUT, &c, 0, -1))
			return;
		wrong = reduce_check(x, c, 0, RINX_FLOAT32, 200 + i, count, 0,
				     "float32 then close");
		if (!rinx_comm_stats(c, &st))
			repaired += st.repairs + st.nacks + st.retransmits;
		rinx_comm_close(c);
		if (wrong)
			return;
	}
	/* the loss was real: some rank repaired something */
	if (repaired)
		check(x, 1, 1, "repairs");
	else
		na(x, 1);
}

/* The repair trace (RINX_TRACE=DIR) under 10% loss: an allreduce of 700
 * blocks (11 rounds of the testbed's window), then the rank's own file
 * read back. Every line is "time_ns
 * rank event round ...", times not going back, the rank its own; every
 * round has its open and its close; the asks, resends and repairs that
 * rinx_comm_stats counts are the trace's nack + rnack + fetch, resend,
 * and hole + stall lines, one for one. */
static void sc_trace(struct ctx *x)
{
	const char *tmp = getenv("TMPDIR");
	size_t count = 700 * (size_t)BV;
	unsigned long long t, last = 0;
	unsigned rd, opens = 0, closes = 0, lines = 0;
	unsigned asks = 0, resends = 0, repairs = 0, bad = 0;
	struct rinx_comm_stats st;
	struct rinx_comm *c;
	char dir[256], path[320], ev[32], line[256];
	int rank;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/rinx-test-trace.%u",
		 tmp && *tmp ? tmp : "/tmp", x->job);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		check(x, 0, 0, "mkdir %s: %s", dir, strerror(errno));
		return;
	}
	setenv("RINX_TRACE", dir, 1);
	if (open_comm(x, x->job, OP_TIMEOUT, &c, 0, 0))
		return;
	unsetenv("RINX_TRACE");
	reduce_check(x, c, 0, RINX_FLOAT32, 77, count, 0, "float32, traced");
	memset(&st, 0, sizeof(st));
	rinx_comm_stats(c, &st);
	rinx_comm_close(c);
	snprintf(path, sizeof(path), "%s/rinx-trace.%u.%d", dir, x->job,
		 x->rank);
	f = fopen(path, "r");
	if (!check(x, 1, f != NULL, "%s: %s", path, strerror(errno)))
		return;
	while (fgets(line, sizeof(line), f)) {
		lines++;
		if (sscanf(line, "%llu %d %31s %u", &t, &rank, ev, &rd) != 4 ||
		    rank != x->rank || t < last) {
			bad++;
			continue;
		}
		last = t;
		if (!strcmp(ev, "open"))
			opens++;
		else if (!strcmp(ev, "close"))
			closes++;
		else if (!strcmp(ev, "nack") || !strcmp(ev, "rnack") ||
			 !strcmp(ev, "fetch"))
			asks++;
		else if (!strcmp(ev, "resend"))
			resends++;
		else if (!strcmp(ev, "hole") || !strcmp(ev, "stall"))
			repairs++;
	}
	fclose(f);
	unlink(path);
	rmdir(dir);	/* the last rank's removes it */
	check(x, 1, lines && !bad && opens == st.rounds &&
	      closes == st.rounds, "%u lines, %u malformed or out of order; "
	      "%u opens and %u closes for %llu rounds", lines, bad, opens,
	      closes, (unsigned long long)st.rounds);
	check(x, 2, asks + resends + repairs > 0 && asks == st.nacks &&
	      resends == st.retransmits && repairs == st.repairs,
	      "traced %u asks, %u resends, %u repairs (none: the loss not "
	      "met); "
	      "counted %llu, %llu, %llu", asks, resends, repairs,
	      (unsigned long long)st.nacks,
	      (unsigned long long)st.retransmits,
	      (unsigned long long)st.repairs);
}

struct scenario {
	const char *name;
	void (*fn)(struct ctx *x);
	int nprocs;
	int nchecks;
	const char *checks[MAXCHK];
	__u32 drop_ppm;		/* on every port while it runs */
};

static const struct scenario scenarios[] = {
	{ "bad options", sc_badopts, 1, 5, {
		"rinx_comm_open with job 0: -EINVAL, no comm, message names the job",
		"rinx_comm_open with no spec / a missing spec file: -errno and a message",
		"rinx_comm_open with a rank not in the spec (4, -1): -errno, message names the rank",
		"rinx_comm_open with an unknown node / short opts.sz: -errno and a message",
		"valid options with the peers absent: the open barrier ends in -ETIMEDOUT naming the missing ranks",
	}, 0 },
	{ "blocking", sc_blocking, NR, 5, {
		"blocking float32, 5000 elements (6 blocks + 392): within rinx_f32_bound",
		"blocking int32, 5000 elements: bit-exact wrapping sum",
		"in-place float32 (send == recv): within the bound",
		"in-place int32 (send == recv): exact",
		"start with a bad dtype or a NULL buffer: -EINVAL with a message",
	}, 0 },
	{ "async", sc_async, NR, 4, {
		"rinx_allreduce_start + rinx_wait: float32 correct",
		"rinx_allreduce_start while one is in flight: -EBUSY with a message; the first completes correctly",
		"rinx_test polled to completion: int32 correct",
		"rinx_wait(req, 0): 0 or -ETIMEDOUT with req valid; waiting again completes correctly",
	}, 0 },
	{ "two communicators", sc_two, NR, 5, {
		"two communicators (jobs J, J+1: slots 1, 2) open in one process",
		"used alternately (float32, int32, int32, float32): every sum correct",
		"both in flight at once, polled alternately with rinx_test: both correct",
		"both in flight, rinx_wait_any to the end: each index once, both correct; no request: -EINVAL",
		"job J opened again while its communicator is open: -EBUSY with a message, no comm (the first one then sums correctly)",
	}, 0 },
	{ "rounds", sc_rounds, NR, 3, {
		"1 MiB float32 with a 64-block window (6 rounds): within the bound",
		"1 MiB int32 with a 64-block window (6 rounds): exact",
		"rinx_comm_stats: 2 ops, 12 rounds, 2 MiB, no timeout",
	}, 0 },
	{ "non-finite", sc_nonfinite, NR, 4, {
		"NaN on rank 1 in block 0: the whole block is NaN",
		"+Inf (block 1) / -Inf (block 3) on rank 1: the whole block is that infinity",
		"+Inf and -Inf on rank 1 in block 2: the whole block is NaN",
		"the finite blocks 4..6 stay within the bound; stats count 4 non-finite blocks",
	}, 0 },
	{ "mismatch", sc_mismatch, NR, 2, {
		"mismatched sizes (1000 vs 1768 int32 on rank 3): every rank gets -EMSGSIZE or -ETIMEDOUT, bounded",
		"mismatched sizes: rinx_comm_error() explains",
	}, 0 },
	{ "dead peer", sc_dead, NR, 2, {
		"dead peer (rank 3 exits without allreduce): the others get -ETIMEDOUT after the 1500 ms timeout, bounded",
		"dead peer: the error message names the missing rank (rank 3 and its host)",
	}, 0 },
	{ "after dead peer", sc_after_dead, NR, 1, {
		"new communicators in the failed job's slot, all 4 ranks: allreduce correct",
	}, 0 },
	{ "plans", sc_plans, NR, 4, {
		"plan tree per communicator (rinx_comm_opts.plan): float32 correct",
		"plan ps:2 per communicator: float32 correct",
		"ranks naming different plans (ring, ps): every open fails with -EINVAL naming both",
		"plan names ring:2 and mesh: -EINVAL naming them",
	}, 0 },
	{ "staggered open", sc_stagger, NR, 1, {
		"no init barrier, ranks open 0.3 s apart and call allreduce at once: correct",
	}, 0 },
	{ "trace", sc_trace, NR, 3, {
		"RINX_TRACE under 10% loss: a float32 allreduce of 700 blocks (11 rounds) within the bound",
		"its trace: one line per event, times in order, each round opened and closed",
		"its asks, resends and repairs (some: the loss is met) are the ones rinx_comm_stats counts, one line each",
	}, 100000 },
	{ "close under loss", sc_close_lossy, NR, 2, {
		"10% loss on every port, each rank closes as soon as its allreduce returns (16 jobs in a row): every sum correct, none times out",
		"... and the loss was met: some rank repaired, NACKed or resent blocks",
	}, 100000 },
};

#define NSCEN (sizeof(scenarios) / sizeof(scenarios[0]))

static void child(const struct scenario *s, int idx, int rank, int wfd)
{
	struct report rep;
	struct ctx x = {
		.rank = rank, .n = NR, .nprocs = s->nprocs, .rep = &rep,
		.job = job_base + 4 * (uint32_t)idx,
	};
	const char *p;
	size_t off = 0;
	ssize_t w;
	int oldfd, err;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	alarm(0);
	memset(&rep, 0, sizeof(rep));
	err = rinx_netns_enter(spec.hosts[rank].netns, &oldfd);
	if (err) {
		snprintf(rep.msg[0], sizeof(rep.msg[0]), "rank %d: cannot "
			 "enter netns %s: %d", rank, spec.hosts[rank].netns,
			 err);
		rep.st[0] = CK_FAIL;
	} else {
		s->fn(&x);
	}
	for (p = (const char *)&rep; off < sizeof(rep); off += w) {
		w = write(wfd, p + off, sizeof(rep) - off);
		if (w <= 0)
			_exit(1);
	}
	_exit(0);
}

static void node_stats(__u64 v[NR][RINX_STAT_MAX])
{
	int r;

	for (r = 0; r < NR; r++)
		if (rinx_node_stats(&spec, &spec.hosts[r], v[r]))
			memset(v[r], 0, sizeof(v[r]));
}

/* Host program drops during a scenario, as a diagnostic. */
static void drops_diag(__u64 a[NR][RINX_STAT_MAX], __u64 b[NR][RINX_STAT_MAX])
{
	char line[512];
	int r, k, l;

	for (r = 0; r < NR; r++) {
		l = 0;
		line[0] = 0;
		for (k = 0; k < RINX_STAT_MAX; k++) {
			const char *name = rinx_stat_name(k);

			if (b[r][k] == a[r][k] || (strncmp(name, "drop_", 5) &&
			    strcmp(name, "aborted") &&
			    strcmp(name, "slow_mismatch")))
				continue;
			l += snprintf(line + l, sizeof(line) - l, " %s=%llu",
				      name, (unsigned long long)(b[r][k] -
								 a[r][k]));
			if (l >= (int)sizeof(line))
				break;
		}
		if (line[0])
			tap_diag("  %s:%s", spec.hosts[r].name, line);
	}
}

/* Every switch port drops ppm of its frames (0: none). */
static void scenario_drop(__u32 ppm)
{
	struct rinx_sw_link_set f = { .drop_ppm = ppm };
	int n = 0, err;

	err = rinx_testbed_fault_set(prefix, NULL, &f, RINX_TB_F_DROP, &n);
	if (err || n != NR)
		tap_diag("drop %u ppm on every port: %d (%d ports)", ppm, err,
			 n);
}

static void run_scenario(int idx)
{
	const struct scenario *s = &scenarios[idx];
	__u64 before[NR][RINX_STAT_MAX], after[NR][RINX_STAT_MAX];
	struct report rep[NR];
	struct pollfd pfd[NR];
	size_t got[NR];
	int r, k, left, fds[2];
	uint64_t deadline = now_ms() + SCEN_SECS * 1000ull, t0 = now_ms();
	char late[64] = "";

	memset(rep, 0, sizeof(rep));
	memset(shm, 0, sizeof(*shm));
	if (s->drop_ppm)
		scenario_drop(s->drop_ppm);
	node_stats(before);
	fflush(stdout);
	fflush(stderr);
	for (r = 0; r < s->nprocs; r++) {
		got[r] = 0;
		pfd[r].fd = -1;
		if (pipe(fds)) {
			snprintf(rep[r].msg[0], sizeof(rep[r].msg[0]),
				 "pipe: %s", strerror(errno));
			continue;
		}
		kids[r] = fork();
		if (kids[r] == 0) {
			close(fds[0]);
			child(s, idx, r, fds[1]);
		}
		close(fds[1]);
		if (kids[r] < 0) {
			kids[r] = 0;
			close(fds[0]);
			snprintf(rep[r].msg[0], sizeof(rep[r].msg[0]),
				 "fork: %s", strerror(errno));
			continue;
		}
		pfd[r].fd = fds[0];
		pfd[r].events = POLLIN;
	}
	for (;;) {
		int64_t wait_ms = (int64_t)(deadline - now_ms());

		left = 0;
		for (r = 0; r < s->nprocs; r++)
			left += pfd[r].fd >= 0;
		if (!left)
			break;
		if (wait_ms <= 0) {
			snprintf(late, sizeof(late), "no report within %d s "
				 "(killed)", SCEN_SECS);
			break;
		}
		if (poll(pfd, s->nprocs, wait_ms) < 0 && errno != EINTR)
			break;
		for (r = 0; r < s->nprocs; r++) {
			ssize_t n;

			if (pfd[r].fd < 0 || !pfd[r].revents)
				continue;
			n = read(pfd[r].fd, (char *)&rep[r] + got[r],
				 sizeof(rep[r]) - got[r]);
			if (n > 0)
				got[r] += n;
			if (n <= 0 || got[r] == sizeof(rep[r])) {
				if (got[r] != sizeof(rep[r])) {
					memset(&rep[r], 0, sizeof(rep[r]));
					snprintf(rep[r].msg[0],
						 sizeof(rep[r].msg[0]),
						 "rank %d died without a "
						 "report", r);
				}
				close(pfd[r].fd);
				pfd[r].fd = -1;
			}
		}
	}
	for (r = 0; r < s->nprocs; r++)
		if (pfd[r].fd >= 0) {
			close(pfd[r].fd);
			memset(&rep[r], 0, sizeof(rep[r]));
		}
	kill_kids();
	if (s->drop_ppm)
		scenario_drop(0);
	tap_diag("scenario %s: %.1f s", s->name, (now_ms() - t0) / 1e3);
	node_stats(after);
	drops_diag(before, after);
	for (k = 0; k < s->nchecks; k++) {
		int pass = 0, bad = 0;

		for (r = 0; r < s->nprocs; r++) {
			if (rep[r].st[k] == CK_PASS)
				pass++;
			else if (rep[r].st[k] != CK_NA)
				bad++;
		}
		tap_ok(pass && !bad, "%s", s->checks[k]);
		for (r = 0; r < s->nprocs; r++) {
			if (rep[r].st[k] == CK_FAIL)
				tap_diag("%s", rep[r].msg[k]);
			else if (rep[r].st[k] == CK_UNSET)
				tap_diag("rank %d: %s", r, late[0] ? late :
					 rep[r].msg[0][0] && k ?
					 "not reached" : rep[r].msg[0][0] ?
					 rep[r].msg[0] : "not reached");
		}
	}
}

int main(int argc, char **argv)
{
	struct rinx_testbed_opts o = {
		.racks = 1,
		.hosts_per_rack = NR,
		.mode = RINX_XDP_NATIVE,
		.window = WINDOW,
	};
	struct tl_subtest subtests[NSCEN];
	int i, err;

	(void)argc;
	(void)argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	tl_needs_root("namespaces, XDP");
	parent_pid = getpid();
	tl_ns_prefix(prefix, sizeof(prefix), "rxA");
	srand(getpid() ^ time(NULL));
	/* job_base % 4 == 1; scenario i uses job_base + 4 i (slot 1), + 1
	 * (slot 2), + 2 (slot 3), + 3 (slot 0) */
	job_base = 0x1000001u + ((uint32_t)rand() % 0x100000u) * 64;
	/* the scenarios are the subtests (-t 'api/close under loss') */
	for (i = 0; i < (int)NSCEN; i++) {
		subtests[i].name = scenarios[i].name;
		subtests[i].checks = scenarios[i].nchecks;
	}

	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		tap_skip_all("mmap: %s", strerror(errno));
	atexit(teardown);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGALRM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	alarm(ALL_SECS);

	o.prefix = prefix;
	rinx_testbed_spec_path(prefix, spec_path, sizeof(spec_path));
	tb_up = 1;	/* from here a partial testbed is removed too */
	err = rinx_testbed_up(&o, &spec);
	if (err == -EPERM || err == -EOPNOTSUPP)
		tap_skip_all("testbed up: %s", strerror(-err));
	tl_plan(2, subtests, NSCEN);
	tap_diag("testbed %s: 1 rack x %d hosts, window %d, spec %s", prefix,
		 NR, WINDOW, spec_path);
	if (!tap_ok(!err && spec.nhosts == NR && spec.window == WINDOW,
		    "testbed up (%d hosts, window %u): %d", spec.nhosts,
		    spec.window, err)) {
		printf("Bail out! no testbed\n");
		return 1;
	}
	for (i = 0; i < (int)NSCEN; i++)
		if (tl_selected(scenarios[i].name))
			run_scenario(i);

	tb_up = 0;
	err = rinx_testbed_down(prefix, NULL);
	tap_ok(!err && access(spec_path, F_OK), "testbed down: %d", err);
	return tap_done();
}
