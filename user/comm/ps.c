// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The parameter server on the data plane (docs/rinx.md, "Parameter
 * server"): the store lives in the server rank's host program, which adds
 * pushes and answers pulls in XDP (bpf/ps.bpf.h); this file is the worker's
 * side of it. A push or a pull is one frame per block of the store, sent
 * paced within a window of unanswered frames, resent when its answer does
 * not come (a push carries its number, so a resend is never added twice).
 * The server rank, which cannot send a frame to itself through the
 * network, runs its own requests through its host program directly
 * (BPF_PROG_TEST_RUN), under the same locks and rules as everyone's.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>
#include <bpf/bpf.h>
#include "user/comm/comm.h"

#define PS_QBITS	30	/* value = q * 2^(exp - PS_QBITS) */
#define PS_HEADROOM	6	/* log2 of the range above the largest
				 * initial magnitude */
#define PS_RTO_MIN	2000000ull	/* resend after 2..50 ms */
#define PS_RTO_MAX	50000000ull
#define PS_WAIT_NS	200000		/* SSP: polls of the slowest clock */
/* The server keeps the store this long after the last worker's final
 * leave arrived: the acknowledgment of that leave may be lost, and the
 * worker's resend (2..50 ms, doubling) must still find the store to be
 * answered (a closed store answers nothing: the worker would time out). */
#define PS_LINGER_NS	900000000	/* under a second: one nap */

struct rinx_ps {
	struct rinx_comm *c;
	int server, is_server, staleness;
	size_t count;
	__u32 nb, last;
	__s16 *exp;		/* per block, from the server's answers */
	__s32 *q;		/* the push being sent, per block */
	float *dst;		/* where the pull being made goes */
	__u8 *done;		/* per block: answered in the current call */
	__u8 *resent;
	__u64 *sent_at;
	__u32 ndone;
	__u32 next;		/* blocks [0, next) of the request sent */
	__u32 op_n;		/* the request's blocks */
	__u64 moved;		/* when an answer last came */
	int op;			/* RINX_PS_* being made */
	__u32 op_seq;		/* its push number (the header's `round`) */
	int refused;		/* RINX_PS_STALE/_RANGE answer to it */
	__u32 seq;		/* pushes completed */
	__u32 pulls;		/* pulls started: each pull's number */
	__u64 min_clock;	/* the slowest worker's clock, as last heard */
	int slowest;
	__u64 srtt;
	int prog_fd, fd_conf, fd_store;
	__u8 *buf;		/* the server's own frame */
	struct rinx_ps_stats st;
};

static int ps_err(struct rinx_ps *ps, int ret, const char *what)
{
	return rinx_c_cerr(ps->c, ret, "rank %d: parameter server (rank %d): %s",
			   ps->c->rank, ps->server, what);
}

static int block_vals(const struct rinx_ps *ps, __u32 b)
{
	return b == ps->nb - 1 ? (int)ps->last : ps->c->bval;
}

/* An answer of the server (XDP handed it up, or the server's own run). */
int rinx_c_ps_frame(struct rinx_comm *c, __u8 *p, __u32 len)
{
	struct rinx_ps *ps = c->ps;
	struct frame f;
	__u32 b, seq;
	__u64 clk;
	__be32 saddr;
	int i, n;

	if (!ps || len < RINX_FRAME_HDR_LEN)
		return RINX_SP_DROP;
	rinx_c_frame_at(p, &f);
	/* a block's values come in a frame of the job's size; the other
	 * answers are a header (or, from a driver that could not cut the
	 * request's tail, the request's size) */
	if (f.h->step == RINX_PS_VALUE &&
	    (len < RINX_FRAME_MIN ||
	     rinx_c_frame_len(len) != RINX_FRAME_LEN(c->bval)))
		return RINX_SP_DROP;
	memcpy(&saddr, f.ip + 12, 4);
	b = ntohl(f.h->block);
	seq = ntohl(f.h->round);
	if (ntohs(f.h->sender) != ps->server ||
	    saddr != c->plan.nodes[ps->server].ip || b >= ps->nb)
		return RINX_SP_DROP;
	clk = be64toh(f.h->cover);
	if (clk > ps->min_clock)	/* clocks only grow */
		ps->min_clock = clk;
	ps->slowest = ntohs(f.h->klass);
	switch (f.h->step) {
	case RINX_PS_ACK:
		if (ps->op == RINX_PS_PULL || seq != ps->op_seq || ps->done[b])
			return RINX_SP_FREE;
		break;
	case RINX_PS_VALUE:
		/* an answer to an earlier pull (late, or a duplicate) may hold
		 * older values than the store has now: only this pull's */
		if ((ps->op != RINX_PS_PULL && ps->op != RINX_PS_PUSHPULL) ||
		    seq != ps->op_seq || ps->done[b])
			return RINX_SP_FREE;
		ps->exp[b] = (__s16)ntohs(f.h->exp);
		n = block_vals(ps, b);
		if (ps->dst) {
			double s = ldexp(1.0, ps->exp[b] - PS_QBITS);
			float *o = ps->dst + (size_t)b * c->bval;

			for (i = 0; i < n; i++)
				o[i] = (float)(f.v[i] * s);
		}
		break;
	case RINX_PS_STALE:
	case RINX_PS_RANGE:
		if ((ps->op == RINX_PS_PUSH || ps->op == RINX_PS_PUSHPULL) &&
		    seq == ps->op_seq)
			ps->refused = f.h->step;
		return RINX_SP_FREE;
	default:
		return RINX_SP_DROP;
	}
	if (!ps->resent[b] && ps->sent_at[b]) {
		__u64 rtt = now_ns() - ps->sent_at[b];

		ps->srtt = ps->srtt ? (7 * ps->srtt + rtt) / 8 : rtt;
	}
	ps->done[b] = 1;
	ps->ndone++;
	return RINX_SP_FREE;
}

/* The length of request `op`: a push and a pull carry a
 * block (a pull's room is where the server writes its answer), a leave
 * is a header. The server's host program could grow a pull sent as a
 * header alone into its answer (bpf/ps.bpf.h), but a small frame has no
 * tailroom on veth: the frames a host sends come to XDP in page-pool
 * fragments sized to the frame, and 49,908 of 66,596 header-only pulls
 * failed to grow (drop_short) in one ASP run of 8 ranks, each answered
 * only when resent whole. */
static int ps_len(const struct rinx_ps *ps)
{
	return ps->op == RINX_PS_LEAVE ? RINX_FRAME_HDR_LEN :
					 RINX_FRAME_LEN(ps->c->bval);
}

/* Request `op` for block b, into frame bytes p (ps_len of them). */
static void ps_fill(struct rinx_ps *ps, __u8 *p, __u32 b)
{
	struct rinx_comm *c = ps->c;
	struct frame f;
	int flen = ps_len(ps);

	rinx_c_frame_at(p, &f);
	memset(f.h, 0, flen - (int)((__u8 *)f.h - p));
	rinx_c_frame_addr(c, &f, ps->server, flen);
	f.h->magic = htonl(RINX_MAGIC);
	f.h->version = RINX_VERSION;
	f.h->type = RINX_T_PS;
	f.h->step = ps->op;
	f.h->job = htonl(c->job);
	f.h->token = htobe64(c->token);
	f.h->round = htonl(ps->op_seq);
	f.h->block = htonl(b);
	f.h->nblocks = htonl(ps->nb);
	f.h->count = htons(block_vals(ps, b));
	f.h->exp = htons((__u16)ps->exp[b]);
	f.h->dtype = htons(RINX_W_FIXED);
	if (ps->op == RINX_PS_PUSH || ps->op == RINX_PS_PUSHPULL)
		memcpy(f.v, ps->q + (size_t)b * c->bval, (size_t)c->bval * 4);
}

/* The server's own request: through its host program, answer included. */
static int ps_local(struct rinx_ps *ps, __u32 b)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	int flen = ps_len(ps);
	__u8 *in = ps->buf, *out = ps->buf + RINX_FRAME_MAX;

	ps_fill(ps, in, b);
	o.data_in = in;
	o.data_size_in = flen;
	o.data_out = out;
	o.data_size_out = RINX_FRAME_MAX;
	if (bpf_prog_test_run_opts(ps->prog_fd, &o))
		return ps_err(ps, -errno, "cannot run the host program");
	ps->st.frames++;
	if (o.retval != XDP_TX)
		return ps_err(ps, -EPROTO, "the host program refused this "
			      "rank's own request (see rinxctl stats)");
	rinx_c_ps_frame(ps->c, out, o.data_size_out);
	return 0;
}

static int ps_send(struct rinx_ps *ps, __u32 b, __u64 now)
{
	struct xctx *x = ps->c->x;
	__u64 addr;

	if (x->nfree <= 0 || xsk_prod_nb_free(&x->tx, 1) < 1)
		return -EAGAIN;
	addr = x->free[x->nfree - 1];
	ps_fill(ps, (__u8 *)x->area + addr, b);
	if (rinx_c_x_send(x, addr, ps_len(ps)))
		return -EAGAIN;
	x->nfree--;
	ps->sent_at[b] = now;
	ps->st.frames++;
	return 0;
}

/* Nothing answered: sleep in the kernel until a frame comes (up to 1 ms,
 * below the shortest resend timeout), or a short nap when the pacer holds
 * a frame back. Polling with naps instead starves the other trainers of
 * a busy host. */
static void ps_wait(struct rinx_comm *c, int paced)
{
	if (paced)
		nap_ns(20000);
	else
		rinx_c_x_sleep(c, 1000000);
}

static __u64 ps_rto(const struct rinx_ps *ps)
{
	__u64 rto = 4 * ps->srtt;

	return rto < PS_RTO_MIN ? PS_RTO_MIN : rto > PS_RTO_MAX ? PS_RTO_MAX :
									rto;
}

/* Starts request `op` for blocks [0, n): the server's own runs at once
 * (answered: ps->ndone == n), a worker's frames by ps_turn. */
static int ps_begin(struct rinx_ps *ps, int op, __u32 seq, __u32 n)
{
	__u32 b;
	int err;

	ps->op = op;
	ps->op_seq = seq;
	ps->op_n = n;
	ps->refused = 0;
	ps->ndone = 0;
	ps->next = 0;
	ps->moved = now_ns();
	memset(ps->done, 0, ps->nb);
	memset(ps->resent, 0, ps->nb);
	memset(ps->sent_at, 0, ps->nb * sizeof(*ps->sent_at));
	if (!ps->is_server)
		return 0;
	for (b = 0; b < n && !ps->refused; b++) {
		err = ps_local(ps, b);
		if (err)
			return err;
	}
	ps->ndone = n;
	return 0;
}

/* Is the request answered (or refused)? */
static int ps_over(const struct rinx_ps *ps)
{
	return ps->ndone >= ps->op_n || ps->refused;
}

/* One turn of a worker's request at `now`: new frames within the window
 * and the pacer, the ones unanswered for too long again, the answers
 * that came. 1: answers came; 0: none (*paced: the pacer holds a frame
 * back); < 0: an error (no answer for the communicator's timeout). */
static int ps_turn(struct rinx_ps *ps, __u64 now, int *paced)
{
	struct rinx_comm *c = ps->c;
	struct rinx_cursor *cur = &c->cursors[c->slot];
	__u32 n = ps->op_n, win = (__u32)c->inflight, had = ps->ndone, b;
	char msg[160];

	rinx_c_x_reclaim(c->x);
	while (ps->next < n && ps->next - ps->ndone < win &&
	       rinx_c_pace_ok(cur, now) && !ps_send(ps, ps->next, now))
		ps->next++;
	/* the answers missing for longer than the timeout: again */
	for (b = 0; b < ps->next; b++) {
		if (ps->done[b] || now - ps->sent_at[b] <
		    (ps_rto(ps) << (ps->resent[b] < 4 ? ps->resent[b] : 4)))
			continue;
		if (ps_send(ps, b, now))
			break;
		ps->resent[b]++;
		ps->st.resent++;
	}
	rinx_c_x_kick(c->x);
	rinx_c_slow_path(c);
	*paced = ps->next < n && ps->next - ps->ndone < win;
	if (ps->ndone != had) {
		ps->moved = now_ns();
		return 1;
	}
	if (now_ns() - ps->moved > (__u64)c->timeout_ms * 1000000ull) {
		snprintf(msg, sizeof(msg), "%u of %u blocks unanswered after "
			 "%d ms", n - ps->ndone, n, c->timeout_ms);
		return ps_err(ps, -ETIMEDOUT, msg);
	}
	return 0;
}

/* The request's outcome once over. */
static int ps_end(struct rinx_ps *ps)
{
	if (ps->refused == RINX_PS_STALE)
		return ps_err(ps, -ESTALE, "push refused: past the staleness "
			      "bound");
	if (ps->refused == RINX_PS_RANGE)
		return ps_err(ps, -ERANGE, "push refused: a value would leave "
			      "the store's range (see headroom)");
	return 0;
}

/* Sends request `op` for blocks [0, n) and waits for every answer. */
static int ps_call(struct rinx_ps *ps, int op, __u32 seq, __u32 n)
{
	int err, ret, paced;

	err = ps_begin(ps, op, seq, n);
	while (!err && !ps_over(ps)) {
		ret = ps_turn(ps, now_ns(), &paced);
		if (ret < 0)
			err = ret;
		else if (!ret && !ps_over(ps))
			ps_wait(ps->c, paced);
	}
	return err ? err : ps_end(ps);
}

/* Block b's exponent for initial values whose largest magnitude is amax
 * there and gmax over the whole store: room for PS_HEADROOM doublings
 * above the larger of the two and of 1, so that a block that starts small
 * (a bias at zero, a store of zeros) can grow as large as the largest
 * initial values or 2^headroom. */
static __s16 ps_exp(double amax, double gmax, int headroom)
{
	double m = amax > gmax ? amax : gmax;
	int e;

	if (!(m > 1.0))
		m = 1.0;
	frexp(m, &e);		/* m < 2^e */
	return (__s16)(e + headroom);
}

static void ps_quant(struct rinx_ps *ps, const float *x)
{
	struct rinx_comm *c = ps->c;
	__u32 b;
	int i, n;

	for (b = 0; b < ps->nb; b++) {
		double s = ldexp(1.0, PS_QBITS - ps->exp[b]);
		const float *in = x + (size_t)b * c->bval;
		__s32 *q = ps->q + (size_t)b * c->bval;

		n = block_vals(ps, b);
		for (i = 0; i < n; i++) {
			double v = nearbyint(in[i] * s);

			if (!(v < 2147483647.0 && v > -2147483647.0)) {
				ps->st.clipped++;
				v = v > 0 ? 2147483647.0 : -2147483647.0;
			}
			q[i] = (__s32)v;
		}
		for (; i < c->bval; i++)
			q[i] = 0;
	}
}

/* Deletes this slot's store entries from block `from` on (a closed
 * store's, or what a larger store left here when its process died). */
static void ps_drop(struct rinx_ps *ps, __u32 from)
{
	__u32 key, next, *del = NULL;
	size_t n = 0, cap = 0, i;
	void *prev = NULL;

	while (!bpf_map_get_next_key(ps->fd_store, prev, &next)) {
		key = next;
		prev = &key;
		if (next >> 24 != ps->c->slot || (next & 0xffffff) < from)
			continue;
		if (n == cap) {
			__u32 *m = realloc(del, (cap = cap ? 2 * cap : 256) *
					   sizeof(*del));

			if (!m)
				break;
			del = m;
		}
		del[n++] = next;
	}
	/* deleted after the walk: a deletion would restart it */
	for (i = 0; i < n; i++)
		bpf_map_delete_elem(ps->fd_store, &del[i]);
	free(del);
}

/* The server: the store's entries with its first values and exponents,
 * push numbers cleared, before the conf entry that lets frames in. */
static int ps_serve(struct rinx_ps *ps, const float *init, int headroom)
{
	struct rinx_comm *c = ps->c;
	struct rinx_ps_block *a = calloc(1, sizeof(*a));
	double gmax = 0, amax;
	char msg[96];
	__u32 b, k;
	size_t i;
	int err = 0;

	if (!a)
		return -ENOMEM;
	for (i = 0; init && i < ps->count; i++)
		gmax = fmax(gmax, fabs(init[i]));
	for (b = 0; b < ps->nb; b++) {
		amax = 0;
		for (i = 0; init && i < (size_t)block_vals(ps, b); i++)
			amax = fmax(amax, fabs(init[(size_t)b * c->bval + i]));
		ps->exp[b] = ps_exp(amax, gmax, headroom);
	}
	if (init)
		ps_quant(ps, init);
	ps_drop(ps, ps->nb);
	for (b = 0; b < ps->nb && !err; b++) {
		memset(a, 0, sizeof(*a));
		a->exp = ps->exp[b];
		memcpy(a->v, ps->q + (size_t)b * c->bval, (size_t)c->bval * 4);
		k = RINX_PS_KEY(c->slot, b);
		if (!bpf_map_update_elem(ps->fd_store, &k, a, BPF_ANY))
			continue;
		if (errno == E2BIG) {
			snprintf(msg, sizeof(msg), "this host's stores are "
				 "full (%u blocks of all its open stores at "
				 "most)", RINX_PS_MAX_BLOCKS);
			err = ps_err(ps, -E2BIG, msg);
		} else {
			err = ps_err(ps, -errno, "cannot write the store");
		}
		ps_drop(ps, 0);
	}
	free(a);
	return err;
}

static int ps_prog_fd(struct rinx_ps *ps)
{
	struct rinx_comm *c = ps->c;
	char dir[RINX_PATH_MAX + RINX_NAME_MAX], path[sizeof(dir) + 8];
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	int fd, pfd = -1;

	rinx_node_pin_dir(&c->spec, c->self, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/link", dir);
	fd = bpf_obj_get(path);
	if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
		pfd = bpf_prog_get_fd_by_id(info.prog_id);
	if (pfd < 0)
		pfd = ps_err(ps, -errno, "cannot reach this node's host program "
			     "(its pinned link)");
	if (fd >= 0)
		close(fd);
	return pfd;
}

static int ps_conf_fd(struct rinx_ps *ps, const char *name)
{
	struct rinx_comm *c = ps->c;
	char dir[RINX_PATH_MAX + RINX_NAME_MAX], path[sizeof(dir) + 16];
	int fd;

	rinx_node_pin_dir(&c->spec, c->self, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return ps_err(ps, -errno, "cannot open this node's maps (is the "
			      "node up with this rinx build?)");
	return fd;
}

static void ps_free(struct rinx_ps *ps)
{
	if (ps->prog_fd >= 0)
		close(ps->prog_fd);
	if (ps->fd_store >= 0)
		close(ps->fd_store);
	if (ps->fd_conf >= 0)
		close(ps->fd_conf);
	free(ps->exp);
	free(ps->q);
	free(ps->done);
	free(ps->resent);
	free(ps->sent_at);
	free(ps->buf);
	free(ps);
}

RINX_API int rinx_ps_open(struct rinx_comm *c, const struct rinx_ps_opts *o,
		 struct rinx_ps **out)
{
	struct rinx_ps_conf pc = {};
	struct rinx_ps *ps;
	__u32 key;
	int err;

	*out = NULL;
	if (!o || o->sz < sizeof(*o) || !o->count || o->server < 0 ||
	    o->server >= c->n)
		return rinx_c_cerr(c, -EINVAL, "rinx_ps_open: bad options");
	if (c->active || c->ps)
		return rinx_c_cerr(c, -EBUSY, "rinx_ps_open: the communicator "
				   "is busy (a collective, or a store open)");
	/* the host program's store takes frames of one slot (bpf/ps.bpf.h):
	 * a communicator opened for jumbo blocks cannot serve one */
	if (c->bslots > 1)
		return rinx_c_cerr(c, -EOPNOTSUPP, "rinx_ps_open: this "
				   "communicator runs jumbo blocks (%d values), "
				   "a store blocks of %d: open it with plan ps or "
				   "the MTU's blocks (block_values 0)", c->bval,
				   RINX_BLOCK_VALUES);
	if ((o->count + c->bval - 1) / c->bval > RINX_PS_MAX_BLOCKS)
		return rinx_c_cerr(c, -E2BIG, "rinx_ps_open: %zu values need "
				   "%zu blocks, a store holds at most %u",
				   o->count, (o->count + c->bval - 1) / c->bval,
				   RINX_PS_MAX_BLOCKS);
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->c = c;
	ps->prog_fd = ps->fd_conf = ps->fd_store = -1;
	ps->server = o->server;
	ps->is_server = c->rank == o->server;
	ps->staleness = o->staleness;
	ps->count = o->count;
	ps->nb = (o->count + c->bval - 1) / c->bval;
	ps->last = o->count - (size_t)(ps->nb - 1) * c->bval;
	ps->min_clock = 0;
	ps->exp = calloc(ps->nb, sizeof(*ps->exp));
	ps->q = calloc((size_t)ps->nb * c->bval, sizeof(*ps->q));
	ps->done = calloc(ps->nb, 1);
	ps->resent = calloc(ps->nb, 1);
	ps->sent_at = calloc(ps->nb, sizeof(*ps->sent_at));
	ps->buf = malloc(2 * RINX_FRAME_MAX);
	if (!ps->exp || !ps->q || !ps->done || !ps->resent || !ps->sent_at ||
	    !ps->buf) {
		ps_free(ps);
		return -ENOMEM;
	}
	err = ps->fd_conf = ps_conf_fd(ps, "psconf");
	if (err >= 0 && ps->is_server) {
		err = ps->fd_store = ps_conf_fd(ps, "store");
		if (err >= 0)
			err = ps->prog_fd = ps_prog_fd(ps);
	}
	if (err < 0) {
		ps_free(ps);
		return err;
	}
	key = c->slot;
	pc.nblocks = ps->nb;
	pc.last_count = ps->last;
	pc.server = ps->server;
	pc.staleness = o->staleness < 0 ? RINX_PS_NO_BOUND :
					  (__u32)o->staleness;
	/* the entry is what lets frames in: written last, job id included */
	if (bpf_map_update_elem(ps->fd_conf, &key, &pc, 0) ||
	    (ps->is_server && ps_serve(ps, o->init,
				       o->headroom > 0 ? o->headroom :
				       PS_HEADROOM))) {
		err = rinx_c_cerr(c, -EIO, "rinx_ps_open: cannot set up the "
				  "store: %s", strerror(errno));
		ps_free(ps);
		return err;
	}
	pc.job = c->job;
	if (bpf_map_update_elem(ps->fd_conf, &key, &pc, 0)) {
		err = rinx_c_cerr(c, -errno, "rinx_ps_open: cannot write the "
				  "store's entry: %s", strerror(errno));
		ps_free(ps);
		return err;
	}
	c->ps = ps;
	/* every block's exponent, and a server that answers: until then
	 * its host program drops the pulls and they are sent again */
	err = ps_call(ps, RINX_PS_PULL, ++ps->pulls, ps->nb);
	if (err) {
		rinx_ps_close(ps);
		return err;
	}
	*out = ps;
	return 0;
}

RINX_API int rinx_ps_push(struct rinx_ps *ps, const float *delta)
{
	int err;

	ps_quant(ps, delta);
	err = ps_call(ps, RINX_PS_PUSH, ps->seq + 1, ps->nb);
	if (err)
		return err;
	ps->seq++;
	ps->st.pushes++;
	return 0;
}

/* Every worker that has not left is within the bound of this rank's next
 * iteration (ps->seq): SSP holds this rank until then. */
static int ps_bound_ok(const struct rinx_ps *ps)
{
	return ps->staleness < 0 || ps->min_clock == ~0ull ||
	       ps->seq <= ps->min_clock + (__u64)ps->staleness;
}

/* A push and then a pull. On an asynchronous store one frame per block
 * does both (RINX_PS_PUSHPULL: the server answers the push with the block
 * right after it), so the server's link carries a block each way per
 * block pushed, where a push and a pull carried two into it (and, before
 * the acknowledgment became a header, two out). With a staleness bound
 * the pull may have to wait for the slowest worker after the push:
 * rinx_ps_push and rinx_ps_pull. */
RINX_API int rinx_ps_pushpull(struct rinx_ps *ps, const float *delta,
			      float *out)
{
	int err;

	if (!ps || !delta || !out)
		return -EINVAL;
	if (ps->staleness >= 0) {
		err = rinx_ps_push(ps, delta);
		return err ? err : rinx_ps_pull(ps, out);
	}
	ps_quant(ps, delta);
	ps->dst = out;
	err = ps_call(ps, RINX_PS_PUSHPULL, ps->seq + 1, ps->nb);
	ps->dst = NULL;
	if (err)
		return err;
	ps->seq++;
	ps->st.pushes++;
	ps->st.pulls++;
	return 0;
}

/* Parts of one store (rinx.ps.Shards: each on its own communicator and
 * server) pushed and pulled at once: every part's frames go out before
 * any answer is waited for, and one sleep waits for all of them, where
 * one part after the other took a round trip and a wake-up each. */
RINX_API int rinx_ps_pushpull_many(struct rinx_ps *const *ps, int k,
				   const float *const *delta,
				   float *const *out)
{
	struct rinx_comm *cs[RINX_PS_PARTS_MAX];
	int i, err = 0, ret, paced, any, over, moved, begun;

	if (!ps || !delta || !out || k < 1 || k > RINX_PS_PARTS_MAX)
		return -EINVAL;
	for (i = 0; i < k; i++) {
		if (!ps[i] || !delta[i] || !out[i])
			return -EINVAL;
		cs[i] = ps[i]->c;
	}
	for (i = 0; i < k; i++) {
		if (ps[i]->staleness < 0)
			continue;
		/* a bound: the pull may wait for the slowest worker after
		 * the push, part by part as rinx_ps_pushpull does */
		for (i = 0; i < k && !err; i++)
			err = rinx_ps_pushpull(ps[i], delta[i], out[i]);
		return err;
	}
	for (begun = 0; begun < k && !err; begun++) {
		ps_quant(ps[begun], delta[begun]);
		ps[begun]->dst = out[begun];
		err = ps_begin(ps[begun], RINX_PS_PUSHPULL,
			       ps[begun]->seq + 1, ps[begun]->nb);
	}
	while (!err) {
		over = 1;
		any = moved = 0;
		for (i = 0; i < k && !err; i++) {
			if (ps_over(ps[i]))
				continue;
			ret = ps_turn(ps[i], now_ns(), &paced);
			err = ret < 0 ? ret : 0;
			moved |= ret > 0;
			any |= paced;
			over &= ps_over(ps[i]);
		}
		if (err || over)
			break;
		if (moved)
			continue;
		if (any)
			nap_ns(20000);
		else
			rinx_c_x_sleep_many(cs, k, 1000000);
	}
	/* every part answered whole took its push, whatever the others
	 * did: its next push carries the next number */
	for (i = 0; i < begun; i++) {
		ps[i]->dst = NULL;
		if (ps[i]->refused || ps[i]->ndone < ps[i]->op_n)
			continue;
		ps[i]->seq++;
		ps[i]->st.pushes++;
		ps[i]->st.pulls++;
	}
	for (i = 0; i < begun && !err; i++)
		err = ps_end(ps[i]);
	return err;
}

RINX_API int rinx_ps_pull(struct rinx_ps *ps, float *out)
{
	struct rinx_comm *c = ps->c;
	__u64 t0 = now_ns();
	char msg[160];
	int err;

	/* clocks only grow: once within the bound, a rank stays so */
	while (!ps_bound_ok(ps)) {
		/* the slowest clock, again (one block's answer says it) */
		err = ps_call(ps, RINX_PS_PULL, ++ps->pulls, 1);
		if (err)
			return err;
		if (ps_bound_ok(ps))
			break;
		if (now_ns() - t0 > (__u64)c->timeout_ms * 1000000ull) {
			snprintf(msg, sizeof(msg), "waited %d ms for the "
				 "staleness bound %d: slowest rank %d at "
				 "iteration %llu, this one at %u",
				 c->timeout_ms, ps->staleness, ps->slowest,
				 (unsigned long long)ps->min_clock, ps->seq);
			return ps_err(ps, -ETIMEDOUT, msg);
		}
		nap_ns(PS_WAIT_NS);
	}
	if (now_ns() - t0 > PS_WAIT_NS)
		ps->st.held++;
	ps->dst = out;
	err = ps_call(ps, RINX_PS_PULL, ++ps->pulls, ps->nb);
	ps->dst = NULL;
	if (!err)
		ps->st.pulls++;
	return err;
}

/* Tells the server this rank is done (phase 0: done pushing; 1: done
 * with the store). */
static int ps_leave(struct rinx_ps *ps, __u32 phase)
{
	return ps_call(ps, RINX_PS_LEAVE, phase, 1);
}

RINX_API int rinx_ps_finish(struct rinx_ps *ps, float *out)
{
	struct rinx_comm *c = ps->c;
	struct rinx_ps_conf pc;
	__u64 t0, all = c->n >= 64 ? ~0ull : (1ull << c->n) - 1;
	__u32 key = c->slot;
	int err;

	err = ps_leave(ps, 0);
	/* the store is final once every worker left */
	t0 = now_ns();
	while (!err && ps->min_clock != ~0ull) {
		err = ps_call(ps, RINX_PS_PULL, ++ps->pulls, 1);
		if (err || ps->min_clock == ~0ull)
			break;
		if (now_ns() - t0 > (__u64)c->timeout_ms * 1000000ull)
			return ps_err(ps, -ETIMEDOUT, "not every rank finished "
				      "(slowest: rank below)");
		nap_ns(PS_WAIT_NS);
	}
	if (!err) {
		ps->dst = out;
		err = ps_call(ps, RINX_PS_PULL, ++ps->pulls, ps->nb);
		ps->dst = NULL;
	}
	if (!err)
		err = ps_leave(ps, 1);
	/* the server keeps the store until every rank took it */
	t0 = now_ns();
	while (!err && ps->is_server) {
		if (bpf_map_lookup_elem(ps->fd_conf, &key, &pc))
			return ps_err(ps, -errno, "cannot read the store's entry");
		if ((pc.done & all) == all) {
			nap_ns(PS_LINGER_NS);
			break;
		}
		if (now_ns() - t0 > (__u64)c->timeout_ms * 1000000ull)
			return ps_err(ps, -ETIMEDOUT, "not every rank took the "
				      "final values");
		nap_ns(PS_WAIT_NS);
	}
	return err;
}

RINX_API int rinx_ps_stats(const struct rinx_ps *ps, struct rinx_ps_stats *st)
{
	if (!ps || !st || st->sz < sizeof(*st))
		return -EINVAL;
	*st = ps->st;
	st->sz = sizeof(*st);
	st->clock = ps->seq;
	st->min_clock = ps->min_clock;
	return 0;
}

/* The entry that lets the store's frames in goes first: nothing is
 * answered from a closed store. */
void rinx_c_ps_detach(struct rinx_comm *c)
{
	struct rinx_ps *ps = c->ps;
	struct rinx_ps_conf zero = {};
	__u32 key = c->slot;

	if (!ps)
		return;
	bpf_map_update_elem(ps->fd_conf, &key, &zero, 0);
	/* then the server's store itself: its memory goes back */
	if (ps->is_server && ps->fd_store >= 0)
		ps_drop(ps, 0);
	c->ps = NULL;
	ps_free(ps);
}

RINX_API void rinx_ps_close(struct rinx_ps *ps)
{
	if (ps)
		rinx_c_ps_detach(ps->c);
}
