// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * librinx-mpi.so: an MPI profiling-interface (PMPI) interposer that sends
 * the allreduces of an unmodified MPI program through rinx. Preloaded with
 * LD_PRELOAD=librinx-mpi.so RINX_SPEC=FILE; docs/mpi.md is the user's page.
 *
 * MPI_Allreduce and MPI_Iallreduce with MPI_SUM on MPI_FLOAT, MPI_INT or
 * MPI_INT32_T, on a communicator with the process set of MPI_COMM_WORLD
 * (MPI_Comm_compare: ident, congruent or similar), go to a rinx
 * communicator of their own; every other call goes to PMPI_* and is
 * counted by the reason it was not taken.
 *
 * A rinx communicator is opened at the first eligible call on an MPI
 * communicator, by every rank of it: one PMPI_Allreduce(MAX) agrees on
 * the job id, the token and whether every rank can take part, so that
 * ranks never choose different paths for one call (a rank on rinx and one
 * on MPI would wait for each other forever). State hangs off the MPI
 * communicator as a cached attribute, so a freed communicator whose
 * handle MPI reuses never inherits it.
 *
 * librinx runs one request per communicator and progresses only inside
 * rinx_test/rinx_wait, so nonblocking allreduces are queued per
 * communicator (MPI orders collectives per communicator, so every rank
 * starts them in the same order) and driven from every wait/test call the
 * program makes. An MPI_Iallreduce returns a generalized request, which
 * MPI itself frees and reports; we only complete it.
 *
 * Errors of librinx are printed on stderr and raised on the communicator's
 * error handler with MPI_ERR_OTHER (MPI_ERRORS_ARE_FATAL aborts, as for
 * any MPI error; MPI_ERRORS_RETURN returns the code). A communicator that
 * failed does not fall back to MPI afterwards: its ranks may disagree on
 * where the failed call stood, and a mismatch between rinx and MPI would
 * hang; its later allreduces fail at once.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <mpi.h>
#include "user/plan/spec.h"
#include "user/librinx.h"

/* Why a call went where it went; the order is the order of the checks. */
enum route {
	R_RINX,
	R_OP,		/* not MPI_SUM */
	R_DTYPE,	/* not float / int */
	R_EMPTY,	/* count 0 */
	R_COMM,		/* an intercommunicator or other processes */
	R_OFF,		/* RINX_SPEC not set (on some rank) */
	R_THREADS,	/* MPI_THREAD_MULTIPLE */
	R_SLOTS,	/* every job slot of a node in use */
	R_MAX
};

static const char *const route_name[R_MAX] = {
	[R_RINX] = "rinx", [R_OP] = "op", [R_DTYPE] = "datatype",
	[R_EMPTY] = "empty", [R_COMM] = "communicator", [R_OFF] = "off",
	[R_THREADS] = "threads", [R_SLOTS] = "slots",
};

enum { F_ALLREDUCE, F_IALLREDUCE, F_MAX };
static const char *const fn_name[F_MAX] = { "MPI_Allreduce",
					    "MPI_Iallreduce" };

struct count {
	unsigned long long calls, bytes;
};

enum cs_kind { CS_RINX, CS_MPI, CS_FAILED };
enum op_state { OP_QUEUED, OP_ACTIVE, OP_DONE };

struct cstate;

/* One allreduce taken by rinx. */
struct op {
	struct op *qnext;	/* the communicator's queue */
	struct op *gnext;	/* every op not yet collected */
	struct cstate *cs;
	MPI_Request req;	/* generalized request; NULL: blocking */
	const void *send;
	void *recv;
	size_t count;
	enum rinx_dtype dt;
	struct rinx_req *rr;
	enum op_state state;
	int err;		/* -errno of librinx */
	int freed;		/* MPI_Request_free'd by the program */
	int fn;
};

/* One MPI communicator we have looked at. */
struct cstate {
	struct cstate *next;
	MPI_Comm comm;
	enum cs_kind kind;
	enum route reason;	/* CS_MPI */
	struct rinx_comm *rc;
	uint32_t job;
	struct op *head, *tail;	/* head: the one librinx runs */
	int reported;		/* CS_FAILED: said so once */
};

#define MAX_CLOSED	16

static struct {
	int ready;
	int wrank, wsize;
	int verbose;
	int off;			/* no RINX_SPEC */
	int conf_err;			/* bad configuration, said why */
	const char *spec;
	int rank;			/* our rank in the spec */
	int nhosts;
	uint32_t job_base;	/* proposals, then agreed */
	uint64_t token;
	int agreed;
	long long next_seq;
	int timeout_ms, inflight;
	const char *plan;	/* RINX_PLAN, NULL: the spec's */
	int block_values;	/* RINX_BLOCK: rinx_comm_opts.block_values */
	int keyval;
	struct cstate *states;
	struct op *ops;			/* not yet collected */
	int nlive;			/* queued or active ops */
	struct count cnt[F_MAX][R_MAX];
	/* the statistics of closed rinx communicators, for the verbose
	 * report */
	struct {
		uint32_t job;
		char name[MPI_MAX_OBJECT_NAME];
		struct rinx_comm_stats st;
	} closed[MAX_CLOSED];
	int nclosed;
	unsigned long long errors;
} g = { .keyval = MPI_KEYVAL_INVALID };

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "rinx-mpi: rank %d: ", g.wrank);
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	/* one write, so that the lines of ranks sharing a terminal do not
	 * interleave mid-line */
	fprintf(stderr, "%s\n", buf);
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int env_int(const char *name, int def, int min, int max)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtol(v, &end, 0);
	if (errno || *end || x < min || x > max) {
		say("%s=%s is not a number in %d..%d", name, v, min, max);
		g.conf_err = 1;
		return def;
	}
	return (int)x;
}

/* Unsigned number of `bits` bits from the environment (0x.. allowed). */
static uint64_t env_unum(const char *name, int bits, int *set)
{
	const char *v = getenv(name);
	unsigned long long x;
	char *end;

	*set = 0;
	if (!v || !*v)
		return 0;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end || v[0] == '-' ||
	    (bits < 64 && x >> bits)) {
		say("%s=%s is not a %d-bit number", name, v, bits);
		g.conf_err = 1;
		return 0;
	}
	*set = 1;
	return x;
}

/* RINX_BLOCK: mtu (default), jumbo or largest, as rinx_comm_opts'
 * block_values takes them. */
static int env_block(void)
{
	const char *v = getenv("RINX_BLOCK");

	if (!v || !*v || !strcmp(v, "mtu"))
		return 0;
	if (!strcmp(v, "jumbo"))
		return RINX_BLOCK_JUMBO;
	if (!strcmp(v, "largest"))
		return RINX_BLOCK_LARGEST;
	say("RINX_BLOCK=%s is not mtu, jumbo or largest", v);
	g.conf_err = 1;
	return 0;
}

static uint32_t env_u32(const char *name, int *set)
{
	return (uint32_t)env_unum(name, 32, set);
}

static uint64_t env_u64(const char *name, int *set)
{
	return env_unum(name, 64, set);
}

static int spec_rank_of(const struct rinx_spec *s, const char *ent)
{
	const struct rinx_spec_host *h;
	char *end;
	long r;

	errno = 0;
	r = strtol(ent, &end, 10);
	if (*ent && !*end && !errno)
		return r >= 0 && r < s->nhosts ? (int)r : -1;
	h = rinx_spec_host(s, ent);
	return h ? h->rank : -1;
}

/*
 * RINX_RANKMAP: unset, MPI world rank i is spec rank i; "hostname", the
 * spec host named like this machine (gethostname); else a comma-separated
 * list with one entry per world rank, each a spec rank or host name.
 */
static int map_rank(const struct rinx_spec *s)
{
	const char *map = getenv("RINX_RANKMAP");
	char *buf, *tok, *save = NULL, name[256];
	int i = 0, r, mine = -1, err = 0;
	unsigned char *seen;

	if (!map || !*map)
		return g.wrank;
	if (!strcmp(map, "hostname")) {
		if (gethostname(name, sizeof(name))) {
			say("RINX_RANKMAP=hostname: gethostname: %s",
			    strerror(errno));
			return -1;
		}
		name[sizeof(name) - 1] = 0;
		r = spec_rank_of(s, name);
		if (r < 0)
			say("RINX_RANKMAP=hostname: no host named '%s' in %s",
			    name, g.spec);
		return r;
	}
	buf = strdup(map);
	seen = calloc(s->nhosts ? s->nhosts : 1, 1);
	if (!buf || !seen) {
		free(buf);
		free(seen);
		say("out of memory");
		return -1;
	}
	for (tok = strtok_r(buf, ",", &save); tok && !err;
	     tok = strtok_r(NULL, ",", &save), i++) {
		r = spec_rank_of(s, tok);
		if (r < 0) {
			say("RINX_RANKMAP entry %d '%s' is neither a rank "
			    "(0..%d) nor a host of %s", i, tok, s->nhosts - 1,
			    g.spec);
			err = 1;
		} else if (seen[r]) {
			say("RINX_RANKMAP names spec rank %d twice (entry %d "
			    "'%s')", r, i, tok);
			err = 1;
		} else {
			seen[r] = 1;
			if (i == g.wrank)
				mine = r;
		}
	}
	free(buf);
	free(seen);
	if (!err && i != g.wsize) {
		say("RINX_RANKMAP has %d entries, MPI_COMM_WORLD %d ranks", i,
		    g.wsize);
		err = 1;
	}
	return err ? -1 : mine;
}

static void config_init(void)
{
	struct rinx_spec *s;
	char err[256];
	int set;

	if (g.ready)
		return;
	g.ready = 1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &g.wrank);
	PMPI_Comm_size(MPI_COMM_WORLD, &g.wsize);
	g.verbose = env_int("RINX_MPI_VERBOSE", 0, 0, 9);
	g.timeout_ms = env_int("RINX_TIMEOUT", 10000, 1, INT_MAX);
	g.inflight = env_int("RINX_INFLIGHT", 0, 0, 4096);
	g.plan = getenv("RINX_PLAN");
	g.block_values = env_block();
	g.job_base = env_u32("RINX_JOB", &set);
	if (set && (!g.job_base || g.job_base > UINT32_MAX - 4096)) {
		say("RINX_JOB=%s: a job id of 1..%u", getenv("RINX_JOB"),
		    UINT32_MAX - 4096);
		g.conf_err = 1;
	}
	if (!set && getrandom(&g.job_base, sizeof(g.job_base), 0) !=
	    sizeof(g.job_base))
		g.job_base = (uint32_t)now_ns() ^ (uint32_t)getpid() << 8;
	if (!set)
		g.job_base = 1 + g.job_base % 0x40000000u;
	g.token = env_u64("RINX_TOKEN", &set);
	if (!set && getrandom(&g.token, sizeof(g.token), 0) != sizeof(g.token))
		g.token = now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	g.spec = getenv("RINX_SPEC");
	if (!g.spec || !*g.spec) {
		g.off = 1;
		return;
	}
	s = malloc(sizeof(*s));
	if (!s) {
		say("out of memory");
		g.conf_err = 1;
		return;
	}
	if (rinx_spec_load(g.spec, s, err, sizeof(err))) {
		say("RINX_SPEC: %s", err);
		g.conf_err = 1;
	} else if (s->nhosts != g.wsize && !getenv("RINX_RANKMAP")) {
		/* caught here, not as a timeout of the open: the spec and the
		 * MPI job must have the same ranks */
		say("RINX_SPEC %s has %d hosts, MPI_COMM_WORLD %d ranks",
		    g.spec, s->nhosts, g.wsize);
		g.conf_err = 1;
	} else if (s->nhosts < g.wsize) {
		say("RINX_SPEC %s has %d hosts, fewer than the %d ranks of "
		    "MPI_COMM_WORLD", g.spec, s->nhosts, g.wsize);
		g.conf_err = 1;
	} else {
		g.rank = map_rank(s);
		g.nhosts = s->nhosts;
		if (g.rank < 0)
			g.conf_err = 1;
		else if (s->nhosts != g.wsize) {
			say("RINX_SPEC %s has %d hosts, MPI_COMM_WORLD %d "
			    "ranks: every host of the spec must be a rank",
			    g.spec, s->nhosts, g.wsize);
			g.conf_err = 1;
		}
	}
	free(s);
}

/* ---- requests ---- */

static int gq_query(void *extra, MPI_Status *st)
{
	(void)extra;
	PMPI_Status_set_elements(st, MPI_BYTE, 0);
	PMPI_Status_set_cancelled(st, 0);
	st->MPI_SOURCE = MPI_UNDEFINED;
	st->MPI_TAG = MPI_UNDEFINED;
	return MPI_SUCCESS;
}

static int gq_free(void *extra)
{
	(void)extra;
	return MPI_SUCCESS;
}

/* A started collective cannot be cancelled (MPI says so); completing it
 * is the only way out. */
static int gq_cancel(void *extra, int complete)
{
	(void)extra;
	(void)complete;
	return MPI_SUCCESS;
}

static struct op *op_find(MPI_Request req)
{
	struct op *o;

	if (req == MPI_REQUEST_NULL)
		return NULL;
	for (o = g.ops; o; o = o->gnext)
		if (o->req == req)
			return o;
	return NULL;
}

/* Forgets an op whose request the program has collected (or freed). */
static void op_release(struct op *op)
{
	struct op **p;

	for (p = &g.ops; *p; p = &(*p)->gnext)
		if (*p == op) {
			*p = op->gnext;
			break;
		}
	free(op);
}

static const char *comm_label(MPI_Comm comm, char *buf)
{
	int len = 0;

	buf[0] = 0;
	PMPI_Comm_get_name(comm, buf, &len);
	if (!buf[0])
		snprintf(buf, MPI_MAX_OBJECT_NAME, "a communicator");
	return buf;
}

static void cs_fail(struct cstate *cs);
static void op_start(struct op *op);

/* The op has ended (err 0 or -errno); the next one of its communicator
 * starts. */
static void op_end(struct op *op, int err)
{
	struct cstate *cs = op->cs;
	char name[MPI_MAX_OBJECT_NAME];

	op->rr = NULL;
	op->state = OP_DONE;
	op->err = err;
	g.nlive--;
	cs->head = op->qnext;
	if (!cs->head)
		cs->tail = NULL;
	op->qnext = NULL;
	if (err) {
		g.errors++;
		say("%s on %s (rinx job %u, %zu %s): %s", fn_name[op->fn],
		    comm_label(cs->comm, name), cs->job, op->count,
		    op->dt == RINX_FLOAT32 ? "float" : "int",
		    rinx_comm_error(cs->rc) ?: strerror(-err));
		cs_fail(cs);
	} else if (cs->head) {
		op_start(cs->head);
	}
	if (op->req != MPI_REQUEST_NULL)
		PMPI_Grequest_complete(op->req);
	/* blocking ops are released by their caller */
	if (op->freed)
		op_release(op);
}

static void op_start(struct op *op)
{
	int err;

	err = rinx_allreduce_start(op->cs->rc, op->send, op->recv, op->count,
				   op->dt, &op->rr);
	if (err) {
		op_end(op, err);
		return;
	}
	op->state = OP_ACTIVE;
}

/* Every op still queued on a failed communicator fails with it. */
static void cs_fail(struct cstate *cs)
{
	struct op *o;

	cs->kind = CS_FAILED;
	while ((o = cs->head)) {
		if (o->rr)
			rinx_cancel(o->rr);
		o->rr = NULL;
		o->state = OP_DONE;
		o->err = -ECANCELED;
		g.nlive--;
		cs->head = o->qnext;
		o->qnext = NULL;
		if (o->req != MPI_REQUEST_NULL)
			PMPI_Grequest_complete(o->req);
		if (o->freed)
			op_release(o);
	}
	cs->tail = NULL;
}

/* One step of every running op; how many ended. */
static int poll_once(void)
{
	struct cstate *cs;
	int ended = 0, r;

	for (cs = g.states; cs; cs = cs->next) {
		struct op *op = cs->head;

		if (!op || op->state != OP_ACTIVE)
			continue;
		r = rinx_test(op->rr);
		if (r == 0)
			continue;
		op->rr = NULL;	/* freed by librinx */
		op_end(op, r < 0 ? r : 0);
		ended++;
	}
	return ended;
}

static struct op *oldest_active(void)
{
	struct cstate *cs;

	for (cs = g.states; cs; cs = cs->next)
		if (cs->head && cs->head->state == OP_ACTIVE)
			return cs->head;
	return NULL;
}

static int nactive(void)
{
	struct cstate *cs;
	int n = 0;

	for (cs = g.states; cs; cs = cs->next)
		n += cs->head && cs->head->state == OP_ACTIVE;
	return n;
}

/* Runs op to its end inside librinx's own wait, with its timeout. */
static void judge(struct op *op)
{
	int r = rinx_wait(op->rr, -1);

	if (r == -ETIMEDOUT)
		rinx_cancel(op->rr);
	op->rr = NULL;
	op_end(op, r);
}

/*
 * The state of a loop that waits while rinx ops run: it polls them, naps
 * when nothing moves (the frames are handled in softirq on the same
 * cores), and when no op has ended for the communicators' timeout hands
 * the oldest to rinx_wait, which tells a slow collective from a dead peer.
 */
struct waiter {
	unsigned long long last;
	int idle;
};

static void waiter_init(struct waiter *w)
{
	w->last = now_ns();
	w->idle = 0;
}

static void waiter_step(struct waiter *w)
{
	struct op *a;

	if (poll_once()) {
		w->last = now_ns();
		w->idle = 0;
		return;
	}
	if (++w->idle > 8) {
		struct timespec ts = { 0, 20000 };

		nanosleep(&ts, NULL);
	}
	if (now_ns() - w->last > g.timeout_ms * 1000000ull) {
		a = oldest_active();
		if (a)
			judge(a);
		w->last = now_ns();
	}
}

/* Until op has ended. */
static void wait_op(struct op *op)
{
	struct waiter w;
	int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);

	/* the naps pace the loop: the default timer slack (50 us) would
	 * stretch each of them */
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
	waiter_init(&w);
	while (op->state != OP_DONE) {
		struct op *a = oldest_active();

		if (!a) {
			/* cannot be: a queue's head is always running */
			op->err = -EPROTO;
			break;
		}
		/* alone: librinx's own wait is the fastest and has the
		 * right timeout */
		if (a && nactive() == 1)
			judge(a);
		else
			waiter_step(&w);
	}
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
}

/* ---- communicators ---- */

static void cs_close(struct cstate *cs)
{
	struct cstate **p;
	int len = 0;

	while (cs->head)
		wait_op(cs->tail);
	if (cs->rc) {
		if (g.nclosed < MAX_CLOSED) {
			g.closed[g.nclosed].job = cs->job;
			PMPI_Comm_get_name(cs->comm, g.closed[g.nclosed].name,
					   &len);
			rinx_comm_stats(cs->rc, &g.closed[g.nclosed].st);
			g.nclosed++;
		}
		rinx_comm_close(cs->rc);
		cs->rc = NULL;
	}
	for (p = &g.states; *p; p = &(*p)->next)
		if (*p == cs) {
			*p = cs->next;
			break;
		}
	free(cs);
}

/* The communicator goes away (MPI_Comm_free, or ours at MPI_Finalize). */
static int cs_delete(MPI_Comm comm, int key, void *val, void *extra)
{
	(void)comm;
	(void)key;
	(void)extra;
	cs_close(val);
	return MPI_SUCCESS;
}

static struct cstate *cs_new(MPI_Comm comm, enum cs_kind kind,
			     enum route reason)
{
	struct cstate *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	cs->comm = comm;
	cs->kind = kind;
	cs->reason = reason;
	if (PMPI_Comm_set_attr(comm, g.keyval, cs) != MPI_SUCCESS) {
		free(cs);
		return NULL;
	}
	cs->next = g.states;
	g.states = cs;
	return cs;
}

enum { A_JOB, A_TOKEN, A_SEQ, A_VETO, A_CONF, A_N };

/*
 * The state of comm, set up at its first eligible call: collective over
 * comm. NULL only when out of memory.
 */
static struct cstate *cs_get(MPI_Comm comm)
{
	struct rinx_comm_opts o = { .sz = sizeof(o) };
	char name[MPI_MAX_OBJECT_NAME];
	long long a[A_N];
	struct cstate *cs;
	int flag = 0, inter = 0, cmp = MPI_UNEQUAL, lvl, err, bad;
	long long seq;
	void *val;

	if (g.keyval == MPI_KEYVAL_INVALID &&
	    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, cs_delete,
				    &g.keyval, NULL) != MPI_SUCCESS)
		return NULL;
	if (PMPI_Comm_get_attr(comm, g.keyval, &val, &flag) == MPI_SUCCESS &&
	    flag)
		return val;
	/* local and the same on every rank of comm */
	PMPI_Comm_test_inter(comm, &inter);
	if (!inter)
		PMPI_Comm_compare(MPI_COMM_WORLD, comm, &cmp);
	if (inter || cmp == MPI_UNEQUAL)
		return cs_new(comm, CS_MPI, R_COMM);

	/* what every rank can do, agreed */
	memset(a, 0, sizeof(a));
	a[A_JOB] = g.job_base;
	a[A_TOKEN] = (long long)g.token;	/* all 64 bits: MAX agrees on one */
	a[A_SEQ] = g.next_seq;
	PMPI_Query_thread(&lvl);
	a[A_VETO] = g.off ? R_OFF : lvl == MPI_THREAD_MULTIPLE ? R_THREADS : 0;
	a[A_CONF] = g.conf_err;
	PMPI_Allreduce(MPI_IN_PLACE, a, A_N, MPI_LONG_LONG, MPI_MAX, comm);
	if (a[A_CONF]) {
		if (!g.conf_err)
			say("another rank's rinx configuration is wrong (its "
			    "message says why)");
		cs = cs_new(comm, CS_FAILED, R_RINX);
		if (cs)
			cs->reported = 1;
		return cs;
	}
	if (a[A_VETO])
		return cs_new(comm, CS_MPI, a[A_VETO]);
	g.job_base = (uint32_t)a[A_JOB];
	g.token = (uint64_t)a[A_TOKEN];
	/* the next id (never used twice); each node gives it its lowest
	 * free job slot */
	seq = a[A_SEQ];
	g.next_seq = seq + 1;

	cs = cs_new(comm, CS_RINX, R_RINX);
	if (!cs)
		return NULL;
	cs->job = g.job_base + (uint32_t)seq;
	o.spec = g.spec;
	o.rank = g.rank;
	o.job = cs->job;
	o.token = g.token;
	o.timeout_ms = g.timeout_ms;
	o.inflight = g.inflight;
	o.plan = g.plan;
	o.block_values = g.block_values;
	err = rinx_comm_open(&o, &cs->rc);
	if (err)
		say("opening rinx job %u for %s (spec %s, rank %d): %s",
		    cs->job, comm_label(comm, name), g.spec, g.rank,
		    rinx_comm_error(NULL) ?: strerror(-err));
	/* 1: a node had no free job slot (this communicator runs on MPI),
	 * 2: another failure */
	bad = !err ? 0 : err == -EBUSY ? 1 : 2;
	PMPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
	if (bad == 1) {
		rinx_comm_close(cs->rc);
		cs->rc = NULL;
		cs->kind = CS_MPI;
		cs->reason = R_SLOTS;
	} else if (bad) {
		if (!err)
			say("another rank could not open rinx job %u for %s "
			    "(its message says why)", cs->job,
			    comm_label(comm, name));
		g.errors++;
		cs->kind = CS_FAILED;
		cs->reported = 1;
	} else if (g.verbose > 1) {
		say("%s: rinx job %u, spec rank %d of %d",
		    comm_label(comm, name), cs->job, rinx_comm_rank(cs->rc),
		    rinx_comm_size(cs->rc));
	}
	return cs;
}

/* The route of a call, and its state when rinx takes it. */
static enum route route_of(const void *send, int count, MPI_Datatype dt,
			   MPI_Op op, MPI_Comm comm, enum rinx_dtype *rdt,
			   struct cstate **csp)
{
	struct cstate *cs;

	(void)send;
	*csp = NULL;
	if (op != MPI_SUM)
		return R_OP;
	if (dt == MPI_FLOAT)
		*rdt = RINX_FLOAT32;
	else if (dt == MPI_INT || dt == MPI_INT32_T)
		*rdt = RINX_INT32;
	else
		return R_DTYPE;
	if (count <= 0)
		return R_EMPTY;
	if (comm == MPI_COMM_NULL)
		return R_COMM;
	config_init();
	cs = cs_get(comm);
	if (!cs)
		return R_OFF;
	if (cs->kind == CS_MPI)
		return cs->reason;
	*csp = cs;
	return R_RINX;
}

static void count_call(int fn, enum route r, int count, MPI_Datatype dt)
{
	int sz = 0;

	if (count > 0 && dt != MPI_DATATYPE_NULL)
		PMPI_Type_size(dt, &sz);
	g.cnt[fn][r].calls++;
	g.cnt[fn][r].bytes += count > 0 ? (unsigned long long)count * sz : 0;
}

/* An error of a call on comm, raised on its error handler. */
static int raise_err(MPI_Comm comm)
{
	PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
	return MPI_ERR_OTHER;
}

static int failed_call(struct cstate *cs, int fn)
{
	char name[MPI_MAX_OBJECT_NAME];

	if (!cs->reported) {
		say("%s on %s: its rinx communicator failed earlier; every "
		    "allreduce rinx would take there fails", fn_name[fn],
		    comm_label(cs->comm, name));
		cs->reported = 1;
	}
	return raise_err(cs->comm);
}

static struct op *op_new(struct cstate *cs, int fn, const void *send,
			 void *recv, int count, enum rinx_dtype dt)
{
	struct op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->cs = cs;
	op->fn = fn;
	op->req = MPI_REQUEST_NULL;
	op->send = send == MPI_IN_PLACE ? recv : send;
	op->recv = recv;
	op->count = count;
	op->dt = dt;
	op->state = OP_QUEUED;
	return op;
}

static void op_enqueue(struct op *op)
{
	struct cstate *cs = op->cs;

	op->gnext = g.ops;
	g.ops = op;
	g.nlive++;
	if (cs->tail)
		cs->tail->qnext = op;
	else
		cs->head = op;
	cs->tail = op;
	if (cs->head == op)
		op_start(op);
}

/* ---- the interposed calls ---- */

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype dt,
		  MPI_Op mop, MPI_Comm comm)
{
	enum rinx_dtype rdt = RINX_INT32;
	char name[MPI_MAX_OBJECT_NAME];
	struct cstate *cs;
	enum route r;
	struct op *op;
	int err;

	r = route_of(send, count, dt, mop, comm, &rdt, &cs);
	count_call(F_ALLREDUCE, r, count, dt);
	if (r != R_RINX)
		return PMPI_Allreduce(send, recv, count, dt, mop, comm);
	if (cs->kind == CS_FAILED)
		return failed_call(cs, F_ALLREDUCE);
	if (!g.nlive) {
		/* nothing else running: librinx's own blocking call */
		err = rinx_allreduce(cs->rc, send == MPI_IN_PLACE ? recv : send,
				     recv, count, rdt);
		if (!err)
			return MPI_SUCCESS;
		g.errors++;
		say("MPI_Allreduce on %s (rinx job %u, %d %s): %s",
		    comm_label(comm, name), cs->job, count,
		    rdt == RINX_FLOAT32 ? "float" : "int",
		    rinx_comm_error(cs->rc) ?: strerror(-err));
		cs_fail(cs);
		return raise_err(comm);
	}
	/* nonblocking ones run: this one queues behind those of comm and
	 * the others keep moving while it runs */
	op = op_new(cs, F_ALLREDUCE, send, recv, count, rdt);
	if (!op) {
		say("MPI_Allreduce: out of memory");
		return raise_err(comm);
	}
	op_enqueue(op);
	wait_op(op);
	err = op->err;
	op_release(op);
	if (err)
		return raise_err(comm);
	return MPI_SUCCESS;
}

int MPI_Iallreduce(const void *send, void *recv, int count, MPI_Datatype dt,
		   MPI_Op mop, MPI_Comm comm, MPI_Request *req)
{
	enum rinx_dtype rdt = RINX_INT32;
	struct cstate *cs;
	enum route r;
	struct op *op;
	int ret;

	r = route_of(send, count, dt, mop, comm, &rdt, &cs);
	count_call(F_IALLREDUCE, r, count, dt);
	if (r != R_RINX)
		return PMPI_Iallreduce(send, recv, count, dt, mop, comm, req);
	if (cs->kind == CS_FAILED) {
		*req = MPI_REQUEST_NULL;
		return failed_call(cs, F_IALLREDUCE);
	}
	op = op_new(cs, F_IALLREDUCE, send, recv, count, rdt);
	if (!op) {
		say("MPI_Iallreduce: out of memory");
		*req = MPI_REQUEST_NULL;
		return raise_err(comm);
	}
	ret = PMPI_Grequest_start(gq_query, gq_free, gq_cancel, NULL, &op->req);
	if (ret != MPI_SUCCESS) {
		free(op);
		*req = MPI_REQUEST_NULL;
		return ret;
	}
	*req = op->req;
	op_enqueue(op);
	/* the first window goes out now, not at the first test */
	poll_once();
	if (op->state == OP_DONE && op->err) {
		/* failed at once: no request to hand out */
		op_release(op);
		PMPI_Request_free(req);
		*req = MPI_REQUEST_NULL;
		return raise_err(comm);
	}
	return MPI_SUCCESS;
}

/*
 * The wait and test calls. With no rinx op about, each is the PMPI call
 * itself. Otherwise they poll rinx while testing with PMPI (so that MPI
 * progresses too), then collect the ops whose requests MPI has freed and
 * raise the error of a failed one.
 */
#define REQ_STACK	64

struct reqset {
	MPI_Request stack[REQ_STACK];
	MPI_Request *saved;
	int n;
	int ours;
};

static int reqset_init(struct reqset *s, int n, const MPI_Request *reqs)
{
	int i;

	s->n = n > 0 ? n : 0;
	s->ours = 0;
	s->saved = s->n <= REQ_STACK ? s->stack :
		   malloc(sizeof(MPI_Request) * s->n);
	if (!s->saved)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		s->saved[i] = reqs[i];
		s->ours += !!op_find(reqs[i]);
	}
	return 0;
}

/* Releases the ops whose requests MPI has freed; MPI_SUCCESS or the
 * error raised for a failed one. */
static int reqset_collect(struct reqset *s, const MPI_Request *reqs, int rc)
{
	MPI_Comm ecomm = MPI_COMM_NULL;
	struct op *op;
	int i;

	for (i = 0; i < s->n && s->ours; i++) {
		op = op_find(s->saved[i]);
		if (!op || op->state != OP_DONE || reqs[i] != MPI_REQUEST_NULL)
			continue;
		if (op->err && ecomm == MPI_COMM_NULL)
			ecomm = op->cs->comm;
		op_release(op);
	}
	if (s->saved != s->stack)
		free(s->saved);
	if (ecomm != MPI_COMM_NULL && rc == MPI_SUCCESS)
		return raise_err(ecomm);
	return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
	struct reqset s;
	struct waiter w;
	struct op *op;
	int flag = 0, rc;

	if (!g.ops)
		return PMPI_Wait(req, status);
	op = op_find(*req);
	if (op) {
		wait_op(op);
	} else if (g.nlive) {
		waiter_init(&w);
		for (;;) {
			rc = PMPI_Test(req, &flag, status);
			if (rc != MPI_SUCCESS || flag)
				return rc;
			waiter_step(&w);
		}
	}
	reqset_init(&s, 1, req);
	rc = PMPI_Wait(req, status);
	return reqset_collect(&s, req, rc);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
	struct reqset s;
	int rc;

	if (!g.ops)
		return PMPI_Test(req, flag, status);
	poll_once();
	reqset_init(&s, 1, req);
	rc = PMPI_Test(req, flag, status);
	return reqset_collect(&s, req, rc);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
	struct reqset s;
	struct waiter w;
	int flag = 0, rc;

	if (!g.ops)
		return PMPI_Waitall(n, reqs, sts);
	if (reqset_init(&s, n, reqs))
		return PMPI_Waitall(n, reqs, sts);
	if (!g.nlive) {
		rc = PMPI_Waitall(n, reqs, sts);
		return reqset_collect(&s, reqs, rc);
	}
	waiter_init(&w);
	for (;;) {
		rc = PMPI_Testall(n, reqs, &flag, sts);
		if (rc != MPI_SUCCESS || flag)
			break;
		waiter_step(&w);
	}
	return reqset_collect(&s, reqs, rc);
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
	struct reqset s;
	int rc;

	if (!g.ops)
		return PMPI_Testall(n, reqs, flag, sts);
	poll_once();
	if (reqset_init(&s, n, reqs))
		return PMPI_Testall(n, reqs, flag, sts);
	rc = PMPI_Testall(n, reqs, flag, sts);
	return reqset_collect(&s, reqs, rc);
}

int MPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *st)
{
	struct reqset s;
	struct waiter w;
	int flag = 0, rc;

	if (!g.ops)
		return PMPI_Waitany(n, reqs, idx, st);
	if (reqset_init(&s, n, reqs))
		return PMPI_Waitany(n, reqs, idx, st);
	if (!g.nlive) {
		rc = PMPI_Waitany(n, reqs, idx, st);
		return reqset_collect(&s, reqs, rc);
	}
	waiter_init(&w);
	for (;;) {
		rc = PMPI_Testany(n, reqs, idx, &flag, st);
		if (rc != MPI_SUCCESS || flag)
			break;
		waiter_step(&w);
	}
	return reqset_collect(&s, reqs, rc);
}

int MPI_Testany(int n, MPI_Request reqs[], int *idx, int *flag,
		MPI_Status *st)
{
	struct reqset s;
	int rc;

	if (!g.ops)
		return PMPI_Testany(n, reqs, idx, flag, st);
	poll_once();
	if (reqset_init(&s, n, reqs))
		return PMPI_Testany(n, reqs, idx, flag, st);
	rc = PMPI_Testany(n, reqs, idx, flag, st);
	return reqset_collect(&s, reqs, rc);
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idx[],
		 MPI_Status sts[])
{
	struct reqset s;
	struct waiter w;
	int rc;

	if (!g.ops)
		return PMPI_Waitsome(n, reqs, outcount, idx, sts);
	if (reqset_init(&s, n, reqs))
		return PMPI_Waitsome(n, reqs, outcount, idx, sts);
	if (!g.nlive) {
		rc = PMPI_Waitsome(n, reqs, outcount, idx, sts);
		return reqset_collect(&s, reqs, rc);
	}
	waiter_init(&w);
	for (;;) {
		rc = PMPI_Testsome(n, reqs, outcount, idx, sts);
		if (rc != MPI_SUCCESS || *outcount != 0)
			break;
		waiter_step(&w);
	}
	return reqset_collect(&s, reqs, rc);
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int idx[],
		 MPI_Status sts[])
{
	struct reqset s;
	int rc;

	if (!g.ops)
		return PMPI_Testsome(n, reqs, outcount, idx, sts);
	poll_once();
	if (reqset_init(&s, n, reqs))
		return PMPI_Testsome(n, reqs, outcount, idx, sts);
	rc = PMPI_Testsome(n, reqs, outcount, idx, sts);
	return reqset_collect(&s, reqs, rc);
}

int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *st)
{
	if (g.nlive)
		poll_once();
	return PMPI_Request_get_status(req, flag, st);
}

int MPI_Request_free(MPI_Request *req)
{
	struct op *op = g.ops ? op_find(*req) : NULL;

	if (op) {
		/* the collective goes on; its op is forgotten when it ends */
		if (op->state == OP_DONE)
			op_release(op);
		else
			op->freed = 1;
	}
	return PMPI_Request_free(req);
}

static void report(void)
{
	unsigned long long calls, bytes;
	char line[512];
	int f, r, k, l;

	for (f = 0; f < F_MAX; f++) {
		struct count *c = g.cnt[f];

		say("%s -> rinx %llu calls %llu bytes", fn_name[f],
		    c[R_RINX].calls, c[R_RINX].bytes);
		calls = bytes = 0;
		l = 0;
		line[0] = 0;
		for (r = R_RINX + 1; r < R_MAX; r++) {
			calls += c[r].calls;
			bytes += c[r].bytes;
			if (c[r].calls)
				l += snprintf(line + l, sizeof(line) - l,
					      "%s%s %llu", l ? ", " : " (",
					      route_name[r], c[r].calls);
		}
		say("%s -> MPI %llu calls %llu bytes%s%s", fn_name[f], calls,
		    bytes, line, l ? ")" : "");
	}
	for (k = 0; k < g.nclosed; k++) {
		const struct rinx_comm_stats *st = &g.closed[k].st;

		say("rinx job %u (%s): %llu ops %llu bytes, %.3f s inside, "
		    "%llu timeouts, %llu retransmits, %llu slow-path frames",
		    g.closed[k].job, g.closed[k].name[0] ? g.closed[k].name :
		    "a communicator", (unsigned long long)st->ops,
		    (unsigned long long)st->bytes, st->ns_total / 1e9,
		    (unsigned long long)st->timeouts,
		    (unsigned long long)st->retransmits,
		    (unsigned long long)st->slow_path);
	}
	if (g.errors)
		say("%llu rinx errors", g.errors);
}

int MPI_Finalize(void)
{
	/* collectives still running finish first, as in MPI */
	while (g.states) {
		struct cstate *cs = g.states;

		if (PMPI_Comm_delete_attr(cs->comm, g.keyval) != MPI_SUCCESS)
			cs_close(cs);
	}
	while (g.ops)
		op_release(g.ops);
	if (g.keyval != MPI_KEYVAL_INVALID)
		PMPI_Comm_free_keyval(&g.keyval);
	config_init();
	if (g.verbose)
		report();
	return PMPI_Finalize();
}
