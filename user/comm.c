// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Communicators and the trainer's side of the data path.
 *
 * Per round (epoch) of an allreduce a rank: publishes the round in its job
 * entry, converts its input into the share map (mmapped), claims the blocks
 * it starts from a cursor it shares with the host program and sends the
 * first ones through its AF_XDP socket (at most `inflight` unfinished; XDP
 * turns every gather that ends here into the next one), finishes in user
 * space the frames XDP handed up (slow path), collects the finished blocks
 * from the result map (mmapped) as XDP stores them, and repairs losses when
 * nothing finishes for a while. A round holds at most `window` blocks;
 * longer tensors take several. Before the first round, an open barrier
 * makes sure every peer knows the job.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>
#include "user/ctl.h"
#include "user/librinx.h"
#include "user/plan.h"
#include "user/quant.h"

#define FRAME_SIZE	4096
#define NUM_FRAMES	4096
#define RING_SIZE	2048
#define MAX_PENDING	NUM_FRAMES
#define XQ_MAX		64	/* receive queues served (the xsks map's size) */

/* ---- AF_XDP sockets per (process, interface), shared by comms ----
 * One socket per receive queue, all on one umem: the host program hands a
 * frame up on the queue it arrived on, and a NIC with RSS spreads frames
 * over its queues. Queue 0's socket also transmits. */
struct xctx {
	struct xctx *next;
	int refs;
	int ifindex;
	char pin[RINX_PATH_MAX];
	pthread_mutex_t lock;
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	int nq;			/* receive queues, a socket on each */
	struct xq {
		struct xsk_socket *xsk;		/* [0]: xsk */
		struct xsk_ring_prod *fq;	/* [0]: &fq, else &own_fq */
		struct xsk_ring_cons *rx;	/* [0]: &rx, else &own_rx */
		/* rings of queues 1..: receive only, but the kernel wants
		 * a completion ring for every queue sharing the umem */
		struct xsk_ring_prod own_fq;
		struct xsk_ring_cons own_cq, own_rx;
	} q[XQ_MAX];
	__u64 free[NUM_FRAMES];
	int nfree;
	/* slow-path frames waiting for their round or their share */
	__u64 pend_addr[MAX_PENDING];
	__u32 pend_len[MAX_PENDING];
	int npend;
	int tx_unkicked;
	/* jobs of the communicators using this socket */
	__u32 jobs[RINX_MAX_JOBS];
	int njobs;
};

static void xctx_job(struct xctx *x, __u32 job, int add)
{
	int i;

	pthread_mutex_lock(&x->lock);
	for (i = 0; i < x->njobs; i++)
		if (x->jobs[i] == job)
			break;
	if (add && i == x->njobs && x->njobs < RINX_MAX_JOBS)
		x->jobs[x->njobs++] = job;
	else if (!add && i < x->njobs)
		x->jobs[i] = x->jobs[--x->njobs];
	pthread_mutex_unlock(&x->lock);
}

static int xctx_has_job(const struct xctx *x, __u32 job)
{
	int i;

	for (i = 0; i < x->njobs; i++)
		if (x->jobs[i] == job)
			return 1;
	return 0;
}

static struct xctx *xctx_list;
static pthread_mutex_t xctx_list_lock = PTHREAD_MUTEX_INITIALIZER;

struct rinx_req {
	struct rinx_comm *c;
	const void *send;
	void *recv;
	size_t count;
	int dtype;
	size_t done_vals;	/* values finished in earlier rounds */
	/* the round in progress */
	__u32 nb, last_count;
	__u32 *own;		/* blocks this rank starts, in claim order */
	__u32 nown, head;	/* own[0..head) finished */
	/* loss repair of own blocks: when own[j] was claimed (sent) last,
	 * and how often it was sent again; own[0..stamped) are stamped */
	__u64 *sent_at;
	__u8 *resent;
	__u32 stamped, sampled;
	__u32 fin_ahead;	/* own blocks finished beyond head */
	__u64 cursor_t;		/* when the cursor last moved */
	__u64 first_fin;	/* when an own block first finished */
	int holes;		/* hole repairs since */
	__u32 cursor;		/* blocks < cursor are copied out */
	int round_open;
	__u64 last_progress;	/* when a block last finished */
	__u64 moved_at;		/* ... not reset by a repair */
	__u32 last_claimed;
	__u64 rto;		/* repair after this long without one */
	__u64 t0;
	int err;
};

struct rinx_comm {
	struct rinx_spec spec;
	const struct rinx_spec_host *self;
	int rank, n;
	__u32 job, token, slot, window;
	int qbits;
	int timeout_ms, inflight;
	int fd_jobs, fd_nodes, fd_hops, fd_xsks;
	int fd_aggs;		/* agent host: its aggregator slots */
	int tor_jobs_fd;	/* agent of an INA ToR: the ToR's job table */
	struct rinx_slot *share, *result;
	size_t map_bytes;
	struct rinx_cursor *cursors;	/* mmapped, RINX_MAX_JOBS entries */
	struct xctx *x;
	struct rinx_plan plan;
	struct rinx_job jobent;
	int ownidx[RINX_CMAP_MAX];	/* pattern position -> index among
					 * the own positions, -1: not own */
	__u32 epoch;
	__u64 heard;		/* ranks whose OPEN hello arrived */
	int clash;		/* 1 + a rank that runs another plan */
	__u32 clash_id;		/* ... its plan id */
	__u64 alive;		/* ranks that answered a PROBE */
	/* INA health, agreed at the start of each collective (Rina racks
	 * whose aggregator is gone run as plain ring members) */
	__u32 coll;		/* collectives started */
	__u32 down;		/* racks (bit = index) that fell back */
	struct ctlbar {
		__u32 coll;	/* collective of the barrier */
		__u64 from;	/* ranks heard */
		__u32 or;	/* OR of their words */
	} bar[2][2];		/* [STATUS/READY][this one, the next one] */
	__u32 done_coll[2], done_word[2];	/* last completed, to answer */
	struct rinx_req *active;
	__u64 srtt, rttvar;	/* own blocks: claim to finished here */
	struct cc {
		__u64 t;		/* last update */
		__u64 stored, marked;	/* cursor counts at t */
		__u32 claimed;		/* cursor next at t */
		double rate;		/* own blocks per second; 0: unpaced */
		double alpha;		/* smoothed fraction of marked blocks */
		double target;		/* rate before the last cut */
		double ai;		/* additive increase per update */
		__u64 cut;		/* time of the last cut */
		int calm;		/* updates in a row without a mark */
	} cc;
	struct rinx_comm_stats st;
	char err[320];
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cerr(struct rinx_comm *c, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int cerr(struct rinx_comm *c, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	pr_debug("%s\n", c->err);
	return ret;
}

/* ---- AF_XDP context ---- */

/* Every socket before the umem: libxdp refuses to free a umem in use. */
static void x_close(struct xctx *x)
{
	int q;

	for (q = 1; q < x->nq; q++)
		if (x->q[q].xsk)
			xsk_socket__delete(x->q[q].xsk);
	if (x->xsk)
		xsk_socket__delete(x->xsk);
	if (x->umem)
		xsk_umem__delete(x->umem);
	if (x->area)
		munmap(x->area, (size_t)NUM_FRAMES * FRAME_SIZE);
}

/* Receive queues of the interface: its channels (rx-only plus combined),
 * else its rx-N entries in sysfs when sysfs shows this namespace's device,
 * else 1. */
static int if_rx_queues(const char *ifname, int ifindex)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	char path[96];
	struct dirent *e;
	struct ifreq ifr;
	int fd, n = 0, idx;
	FILE *f;
	DIR *d;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		ifr.ifr_data = (void *)&ch;
		if (!ioctl(fd, SIOCETHTOOL, &ifr))
			n = ch.rx_count + ch.combined_count;
		close(fd);
	}
	if (n > 0)
		return n;
	snprintf(path, sizeof(path), "/sys/class/net/%s/ifindex", ifname);
	f = fopen(path, "r");
	if (!f)
		return 1;
	if (fscanf(f, "%d", &idx) != 1 || idx != ifindex) {
		fclose(f);
		return 1;
	}
	fclose(f);
	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
	d = opendir(path);
	if (!d)
		return 1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "rx-", 3))
			n++;
	closedir(d);
	return n > 0 ? n : 1;
}

/* The kernel unbinds a closed socket from its queue in a work item: right
 * after another process on this host closed its communicator the queue can
 * still be busy for a moment. */
static int x_bind(struct xctx *x, const char *ifname, int q,
		  const struct xsk_socket_config *scfg)
{
	struct xq *xq = &x->q[q];
	int err, i;

	for (i = 0;; i++) {
		if (!q)
			err = xsk_socket__create(&x->xsk, ifname, 0, x->umem,
						 &x->rx, &x->tx, scfg);
		else
			err = xsk_socket__create_shared(&xq->xsk, ifname, q,
							x->umem, &xq->own_rx,
							NULL, &xq->own_fq,
							&xq->own_cq, scfg);
		if (err != -EBUSY || i >= 200)
			break;
		usleep(10000);
	}
	if (err)
		return err;
	if (!q) {
		xq->xsk = x->xsk;
		xq->fq = &x->fq;
		xq->rx = &x->rx;
	} else {
		xq->fq = &xq->own_fq;
		xq->rx = &xq->own_rx;
	}
	return 0;
}

static void x_refill(struct xctx *x);

static void xctx_put(struct xctx *x)
{
	struct xctx **pp;

	pthread_mutex_lock(&xctx_list_lock);
	if (--x->refs > 0) {
		pthread_mutex_unlock(&xctx_list_lock);
		return;
	}
	for (pp = &xctx_list; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	pthread_mutex_unlock(&xctx_list_lock);
	x_close(x);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

static int xctx_get(struct rinx_comm *c, const char *ifname, const char *pin,
		    struct xctx **out)
{
	struct xsk_umem_config ucfg = {
		.fill_size = RING_SIZE,
		.comp_size = RING_SIZE,
		.frame_size = FRAME_SIZE,
		.frame_headroom = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = RING_SIZE,
		.tx_size = RING_SIZE,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	int ifindex = if_nametoindex(ifname), err, i, nq;
	struct bpf_map_info mi = {};
	__u32 milen = sizeof(mi);
	struct xctx *x;

	if (!ifindex)
		return cerr(c, -ENODEV, "interface %s not found in this "
			    "network namespace", ifname);
	pthread_mutex_lock(&xctx_list_lock);
	for (x = xctx_list; x; x = x->next)
		if (x->ifindex == ifindex && !strcmp(x->pin, pin)) {
			x->refs++;
			pthread_mutex_unlock(&xctx_list_lock);
			*out = x;
			return 0;
		}
	pthread_mutex_unlock(&xctx_list_lock);

	nq = if_rx_queues(ifname, ifindex);
	err = bpf_obj_get_info_by_fd(c->fd_xsks, &mi, &milen);
	if (err)
		return cerr(c, err, "cannot read the AF_XDP socket map: %s",
			    strerror(-err));
	if (nq > XQ_MAX || (__u32)nq > mi.max_entries)
		return cerr(c, -E2BIG, "%s has %d receive queues; rinx serves "
			    "at most %d: lower the interface's queue count",
			    ifname, nq, XQ_MAX < (int)mi.max_entries ? XQ_MAX :
			    (int)mi.max_entries);

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->refs = 1;
	x->ifindex = ifindex;
	snprintf(x->pin, sizeof(x->pin), "%s", pin);
	pthread_mutex_init(&x->lock, NULL);
	x->area = mmap(NULL, (size_t)NUM_FRAMES * FRAME_SIZE,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (x->area == MAP_FAILED) {
		x->area = NULL;
		err = -ENOMEM;
		goto fail;
	}
	err = xsk_umem__create(&x->umem, x->area,
			       (__u64)NUM_FRAMES * FRAME_SIZE, &x->fq, &x->cq,
			       &ucfg);
	if (err) {
		cerr(c, err, "cannot create AF_XDP umem: %s", strerror(-err));
		goto fail;
	}
	for (x->nq = 0; x->nq < nq; x->nq++) {
		err = x_bind(x, ifname, x->nq, &scfg);
		if (err) {
			cerr(c, err, "cannot create AF_XDP socket on %s queue "
			     "%d: %s", ifname, x->nq, strerror(-err));
			goto fail;
		}
		/* the socket map is keyed by the socket's queue */
		err = xsk_socket__update_xskmap(x->q[x->nq].xsk, c->fd_xsks);
		if (err) {
			cerr(c, err, "cannot register the AF_XDP socket of "
			     "queue %d: %s", x->nq, strerror(-err));
			x->nq++;
			goto fail;
		}
	}
	for (i = 0; i < NUM_FRAMES; i++)
		x->free[i] = (__u64)i * FRAME_SIZE;
	x->nfree = NUM_FRAMES;
	x_refill(x);

	pthread_mutex_lock(&xctx_list_lock);
	x->next = xctx_list;
	xctx_list = x;
	pthread_mutex_unlock(&xctx_list_lock);
	*out = x;
	return 0;
fail:
	x->refs = 1;
	x_close(x);
	pthread_mutex_destroy(&x->lock);
	free(x);
	return err;
}

static void x_reclaim(struct xctx *x)
{
	__u32 idx, n, i;

	n = xsk_ring_cons__peek(&x->cq, RING_SIZE, &idx);
	for (i = 0; i < n; i++)
		x->free[x->nfree++] = *xsk_ring_cons__comp_addr(&x->cq, idx + i);
	if (n)
		xsk_ring_cons__release(&x->cq, n);
}

/* Fill rings of every queue: each holds at most its part of three quarters
 * of the frames (a quarter is kept for transmit). */
static void x_refill(struct xctx *x)
{
	__u32 idx, n, free_slots, i, cap;
	int q;

	cap = (NUM_FRAMES - NUM_FRAMES / 4) / x->nq;
	if (cap > RING_SIZE)
		cap = RING_SIZE;
	for (q = 0; q < x->nq; q++) {
		struct xsk_ring_prod *fq = x->q[q].fq;

		free_slots = xsk_prod_nb_free(fq, RING_SIZE);
		n = free_slots > RING_SIZE - cap ?
		    free_slots - (RING_SIZE - cap) : 0;
		if ((int)n > x->nfree - NUM_FRAMES / 4)
			n = x->nfree > NUM_FRAMES / 4 ?
			    x->nfree - NUM_FRAMES / 4 : 0;
		if (!n)
			continue;
		n = xsk_ring_prod__reserve(fq, n, &idx);
		for (i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(fq, idx + i) =
				x->free[--x->nfree];
		xsk_ring_prod__submit(fq, n);
		/* a zero-copy driver that ran dry waits to be told */
		if (xsk_ring_prod__needs_wakeup(fq))
			recvfrom(xsk_socket__fd(x->q[q].xsk), NULL, 0,
				 MSG_DONTWAIT, NULL, NULL);
	}
}

/* Copy mode transmits at most a small batch per sendto() and leaves the rest
 * of the ring for the next call: keep kicking while the kernel has not taken
 * every descriptor, or frames sit in the ring with nobody to send them. */
static void x_kick(struct xctx *x)
{
	int i;

	x->tx_unkicked = 0;
	for (i = 0; i < RING_SIZE / 16; i++) {
		if (xsk_prod_nb_free(&x->tx, RING_SIZE) >= RING_SIZE)
			return;
		if (!xsk_ring_prod__needs_wakeup(&x->tx))
			return;
		if (sendto(xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT,
			   NULL, 0) < 0 && errno != EAGAIN && errno != EBUSY &&
		    errno != ENOBUFS)
			return;
	}
}

/* Queues frame `addr` of `len` bytes for transmit; 0 or -EAGAIN. */
static int x_send(struct xctx *x, __u64 addr, __u32 len)
{
	struct xdp_desc *d;
	__u32 idx;

	if (xsk_ring_prod__reserve(&x->tx, 1, &idx) != 1) {
		x_kick(x);
		return -EAGAIN;
	}
	d = xsk_ring_prod__tx_desc(&x->tx, idx);
	d->addr = addr;
	d->len = len;
	d->options = 0;
	xsk_ring_prod__submit(&x->tx, 1);
	if (++x->tx_unkicked >= 32)
		x_kick(x);
	return 0;
}

/* ---- frames ---- */

static __u16 ip_csum(const void *hdr)
{
	const __u16 *w = hdr;
	__u32 sum = 0;
	int i;

	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

struct frame {
	__u8 *eth;
	__u8 *ip;
	__u8 *udp;
	struct rinx_hdr *h;
	__s32 *v;
};

static void frame_at(__u8 *p, struct frame *f)
{
	f->eth = p;
	f->ip = p + 14;
	f->udp = p + 34;
	f->h = (struct rinx_hdr *)(p + 42);
	f->v = (__s32 *)(p + RINX_FRAME_HDR_LEN);
}

/* Ethernet/IPv4/UDP headers from node `from` to node `to`. */
static void frame_addr(struct rinx_comm *c, struct frame *f, int to)
{
	const struct rinx_node *s = &c->plan.nodes[c->rank];
	const struct rinx_node *d = &c->plan.nodes[to];
	__u16 len_ip = htons(RINX_FRAME_MAX - 14);
	__u16 len_udp = htons(RINX_FRAME_MAX - 34);
	__u16 sport = htons(c->spec.port), csum;

	memcpy(f->eth, d->mac, 6);
	memcpy(f->eth + 6, s->mac, 6);
	f->eth[12] = 0x08;
	f->eth[13] = 0x00;
	f->ip[0] = 0x45;
	f->ip[1] = RINX_ECN_ECT0;	/* ECN-capable: ports mark, not drop */
	memcpy(f->ip + 2, &len_ip, 2);
	memset(f->ip + 4, 0, 4);	/* id, DF off, no fragment */
	f->ip[8] = 64;
	f->ip[9] = 17;
	memset(f->ip + 10, 0, 2);
	memcpy(f->ip + 12, &s->ip, 4);
	memcpy(f->ip + 16, &d->ip, 4);
	csum = ip_csum(f->ip);
	memcpy(f->ip + 10, &csum, 2);
	memcpy(f->udp, &sport, 2);
	memcpy(f->udp + 2, &sport, 2);
	memcpy(f->udp + 4, &len_udp, 2);
	memset(f->udp + 6, 0, 2);
	f->h->sender = htons(c->rank);
}

/* Class of block b in the plan. */
static int class_of(const struct rinx_comm *c, __u32 b)
{
	return c->plan.cmap[b % c->plan.plen];
}

/* Index of own block b among this rank's own blocks (the cursor counts
 * them), -1 if b is not one. */
static long own_index(const struct rinx_comm *c, __u32 b)
{
	int i = c->ownidx[b % c->plan.plen];

	return i < 0 ? -1 : (long)(b / c->plan.plen) * c->jobent.nown + i;
}

static int block_count(const struct rinx_req *r, __u32 b)
{
	return b == r->nb - 1 ? (int)r->last_count : RINX_BLOCK_VALUES;
}

/* ---- slow path: what XDP could not finish, done the same way here ---- */

/* A STATUS or READY hello of collective `epoch` from rank `from`: noted in
 * the barrier it belongs to. Returns 1 when the frame was turned into our
 * answer (the peer lacks our word for a barrier we completed). */
static int ctl_hello(struct rinx_comm *c, struct frame *f, int from)
{
	int kind = f->h->step == RINX_HELLO_STATUS ? 0 : 1, i;
	__u32 coll = ntohl(f->h->epoch);

	for (i = 0; i < 2; i++) {
		struct ctlbar *b = &c->bar[kind][i];

		if (b->coll != coll && i == 1 && !b->from)
			b->coll = coll;	/* a peer a barrier ahead */
		if (b->coll == coll) {
			b->from |= 1ull << from;
			b->or |= ntohl(f->h->block);
			break;
		}
	}
	if (ntohs(f->h->count) || coll != c->done_coll[kind] || !coll)
		return 0;
	f->h->block = htonl(c->done_word[kind]);
	f->h->count = htons(1);
	frame_addr(c, f, from);
	return 1;
}

static void store_result(struct rinx_slot *res, const struct frame *f,
			 __u32 epoch, __u32 cnt)
{
	memcpy(res->v, f->v, RINX_BLOCK_BYTES);
	res->exp = (__s16)ntohs(f->h->exp);
	res->flags = f->h->flags;
	res->count = cnt;
	__atomic_store_n(&res->epoch, epoch, __ATOMIC_RELEASE);
}

/* A rack's group address (what the ToR replicates into the rack; with
 * `onward` also to the uplink, readdressed to the IP destination). */
static void frame_group(struct frame *f, int rack, int onward)
{
	f->eth[0] = RINX_GROUP_MAC0;
	f->eth[1] = RINX_GROUP_MAC1;
	f->eth[2] = RINX_GROUP_MAC2;
	f->eth[3] = rack == RINX_GROUP_EVERY ? 0xff : rack;
	f->eth[4] = rack == RINX_GROUP_EVERY ? 0xff : 0;
	f->eth[5] = onward && rack != RINX_GROUP_EVERY;
}

/* An aggregation of this host (RINX_HOP_SELF) whose contributors are all
 * in while its share was not written yet: the host program left the slot
 * waiting (pend) and sent its sum here. Adds the share to the slot and
 * marks it done, so that the host program answers duplicates with the
 * whole sum from now on, and puts the sum into f. Nothing else writes the
 * slot meanwhile: its contributors are all in, and the next round's cannot
 * come before this block has finished. 0, 1 (stale: drop) or -errno. */
static int self_complete(struct rinx_comm *c, const struct rinx_hop *hop,
			 __u32 idx, __u32 epoch, const struct rinx_slot *sh,
			 struct frame *f, int *ce)
{
	struct rinx_agg a;

	if (c->fd_aggs < 0 ||
	    bpf_map_lookup_elem_flags(c->fd_aggs, &idx, &a, BPF_F_LOCK))
		return -EIO;
	if (a.epoch != epoch || (!a.pend && !a.done))
		return 1;
	if (a.pend) {
		a.exp = rinx_payload_add(a.v, a.exp, sh->v, sh->exp);
		a.flags |= sh->flags;
		a.pend = 0;
		a.done = 1;
		a.final = hop->action == RINX_A_AGG_FINISH;
		if (bpf_map_update_elem(c->fd_aggs, &idx, &a, BPF_F_LOCK))
			return -EIO;
	}
	memcpy(f->v, a.v, RINX_BLOCK_BYTES);
	f->h->exp = htons((__u16)a.exp);
	f->h->flags = a.flags;
	*ce = a.ce;
	return 0;
}

/* Marks a readdressed frame CE (its sum met congestion on the way). */
static void frame_ce(struct frame *f)
{
	__u16 csum;

	f->ip[1] |= RINX_ECN_CE;
	memset(f->ip + 10, 0, 2);
	csum = ip_csum(f->ip);
	memcpy(f->ip + 10, &csum, 2);
}

/* What became of a slow-path frame. */
enum {
	SP_SENT,	/* finished here and transmitted (the frame is in TX) */
	SP_FREE,	/* finished here, nothing to send: the frame is free */
	SP_KEEP,	/* not yet: its round, its share or a TX slot is missing */
	SP_DROP,	/* rejected: the frame is free */
};

static int slow_frame(struct rinx_comm *c, __u8 *p, __u32 len)
{
	struct xctx *x = c->x;
	struct rinx_req *r = c->active;
	struct rinx_slot *sh, *res;
	const struct rinx_hop *hop;
	struct frame f;
	__u32 epoch, block, nblocks, klass, cnt, type, idx;
	int agg, ret, ce = 0;

	if (len < RINX_FRAME_MAX)
		return SP_DROP;
	/* The frame is rewritten in place: only start when it can leave. */
	if (xsk_prod_nb_free(&x->tx, 1) < 1)
		return SP_KEEP;
	frame_at(p, &f);
	if (ntohl(f.h->job) != c->job)	/* another communicator's, or late */
		return xctx_has_job(x, ntohl(f.h->job)) ? SP_KEEP : SP_DROP;
	if (ntohl(f.h->token) != c->token)
		return SP_DROP;
	if (f.h->type == RINX_T_HELLO) {
		__u16 from = ntohs(f.h->sender);
		__be32 saddr;

		memcpy(&saddr, f.ip + 12, 4);
		if (from >= c->n || from == c->rank ||
		    saddr != c->plan.nodes[from].ip)
			return SP_DROP;
		if (f.h->step == RINX_HELLO_OPEN_YES)
			c->heard |= 1ull << from;
		if (f.h->step == RINX_HELLO_OPEN_OTHER) {
			c->clash = from + 1;
			c->clash_id = ntohl(f.h->block);
		}
		/* a peer that answers or probes is alive */
		if (f.h->step == RINX_HELLO_ALIVE ||
		    f.h->step == RINX_HELLO_PROBE)
			c->alive |= 1ull << from;
		if (f.h->step == RINX_HELLO_STATUS ||
		    f.h->step == RINX_HELLO_READY)
			return ctl_hello(c, &f, from) ?
			       (x_send(x, p - (__u8 *)x->area, RINX_FRAME_MAX) ?
				SP_KEEP : SP_SENT) : SP_FREE;
		if (f.h->step == RINX_HELLO_PROBE) {
			f.h->step = RINX_HELLO_ALIVE;
		} else {
			return SP_FREE;
		}
		frame_addr(c, &f, from);
		return x_send(x, p - (__u8 *)x->area, RINX_FRAME_MAX) ?
		       SP_KEEP : SP_SENT;
	}
	epoch = ntohl(f.h->epoch);
	if ((__s32)(epoch - c->epoch) < 0)
		return SP_DROP;
	if (epoch != c->epoch || !r || !r->round_open)
		return SP_KEEP;
	block = ntohl(f.h->block);
	nblocks = ntohl(f.h->nblocks);
	cnt = ntohs(f.h->count);
	klass = ntohs(f.h->klass);
	type = f.h->type;
	if (nblocks != r->nb || block >= nblocks ||
	    cnt != (__u32)block_count(r, block) ||
	    ntohs(f.h->dtype) != c->jobent.dtype) {
		r->err = cerr(c, -EMSGSIZE,
			      "rank %d: rank %u sends a different tensor "
			      "(round %u: %u blocks, block %u has %u values, "
			      "dtype %u) than this rank (%u blocks, dtype %u)",
			      c->rank, ntohs(f.h->sender), epoch, nblocks,
			      block, cnt, ntohs(f.h->dtype), r->nb,
			      c->jobent.dtype);
		return SP_DROP;
	}
	if (klass >= (__u32)c->plan.nclasses || (int)klass != class_of(c, block) ||
	    type < RINX_T_REDUCE || type > RINX_T_CONTRIB)
		return SP_DROP;
	hop = &c->plan.hops[klass][type - 1];
	agg = hop->action == RINX_A_AGG_FWD || hop->action == RINX_A_AGG_FINISH;
	/* XDP checked the sender of an aggregation's frame; what reaches
	 * the trainer from one is the sum of a slot that waits for this
	 * host's share, and the slot is what counts */
	if (hop->action == RINX_A_NONE || (agg && !(hop->flags & RINX_HOP_SELF)) ||
	    (!agg && (ntohs(f.h->sender) != hop->from || f.h->step != hop->step)))
		return SP_DROP;
	idx = c->slot * c->window + block;
	sh = &c->share[idx];
	res = &c->result[idx];
	switch (hop->action) {
	case RINX_A_ADD_FWD:
	case RINX_A_ADD_FINISH:
		if (__atomic_load_n(&sh->epoch, __ATOMIC_ACQUIRE) != epoch)
			return SP_KEEP;
		f.h->exp = htons((__u16)rinx_payload_add(f.v,
				(__s16)ntohs(f.h->exp), sh->v, sh->exp));
		f.h->flags |= sh->flags;
		f.h->step++;
		if (hop->action == RINX_A_ADD_FINISH) {
			store_result(res, &f, epoch, cnt);
			f.h->type = RINX_T_GATHER;
			f.h->step = 0;
		}
		break;
	case RINX_A_STORE_FWD:
	case RINX_A_STORE_END:
		store_result(res, &f, epoch, cnt);
		if (hop->action == RINX_A_STORE_END)
			return SP_FREE;
		f.h->step++;
		break;
	case RINX_A_AGG_FWD:
	case RINX_A_AGG_FINISH:
		if (__atomic_load_n(&sh->epoch, __ATOMIC_ACQUIRE) != epoch)
			return SP_KEEP;
		ret = self_complete(c, hop, idx, epoch, sh, &f, &ce);
		if (ret)
			return ret < 0 ? SP_KEEP : SP_DROP;
		f.h->step = hop->out_step;
		if (hop->action == RINX_A_AGG_FWD) {
			f.h->type = RINX_T_REDUCE;
			break;
		}
		store_result(res, &f, epoch, cnt);
		f.h->type = RINX_T_GATHER;
		if (hop->rack == RINX_NO_RACK && hop->to == c->rank)
			return SP_FREE;
		frame_addr(c, &f, hop->to);
		if (ce)
			frame_ce(&f);
		if (hop->rack != RINX_NO_RACK)
			frame_group(&f, hop->rack, hop->to != c->rank);
		return x_send(x, p - (__u8 *)x->area, RINX_FRAME_MAX) ?
		       SP_KEEP : SP_SENT;
	case RINX_A_MCAST_FWD:
	case RINX_A_MCAST_END:
		store_result(res, &f, epoch, cnt);
		f.h->step = hop->out_step;
		frame_addr(c, &f, hop->action == RINX_A_MCAST_FWD ? hop->to :
				  c->rank);
		frame_group(&f, hop->rack, hop->action == RINX_A_MCAST_FWD);
		return x_send(x, p - (__u8 *)x->area, RINX_FRAME_MAX) ?
		       SP_KEEP : SP_SENT;
	default:
		return SP_DROP;
	}
	frame_addr(c, &f, hop->to);
	if (ce)
		frame_ce(&f);
	return x_send(x, p - (__u8 *)x->area, RINX_FRAME_MAX) ? SP_KEEP :
								 SP_SENT;
}

/* Runs the slow path over pending and newly received frames. Returns the
 * number of frames finished. Called with x->lock held. */
static int slow_path(struct rinx_comm *c)
{
	struct xctx *x = c->x;
	__u32 idx, n, i;
	int done = 0, j, keep = 0, ret, q;

	for (q = 0; q < x->nq; q++) {
		struct xsk_ring_cons *rx = x->q[q].rx;

		n = xsk_ring_cons__peek(rx, RING_SIZE, &idx);
		for (i = 0; i < n; i++) {
			const struct xdp_desc *d =
				xsk_ring_cons__rx_desc(rx, idx + i);

			if (x->npend < MAX_PENDING) {
				x->pend_addr[x->npend] = d->addr;
				x->pend_len[x->npend++] = d->len;
			} else {
				x->free[x->nfree++] = d->addr;
				c->st.slow_dropped++;
			}
		}
		if (n)
			xsk_ring_cons__release(rx, n);
	}
	for (j = 0; j < x->npend; j++) {
		__u64 a = x->pend_addr[j];

		ret = slow_frame(c, (__u8 *)x->area + a, x->pend_len[j]);
		if (ret == SP_SENT) {
			done++;
			c->st.slow_path++;
		} else if (ret == SP_FREE) {
			done++;
			c->st.slow_path++;
			x->free[x->nfree++] = a;
		} else if (ret == SP_DROP) {
			c->st.slow_dropped++;
			x->free[x->nfree++] = a;
		} else {
			x->pend_addr[keep] = a;
			x->pend_len[keep++] = x->pend_len[j];
		}
	}
	x->npend = keep;
	x_refill(x);
	return done;
}

/* ---- control: open barrier and liveness probe ---- */

/* A control frame (hello, NACK) of the job to node `to`: header only, the
 * payload zero. 0 or -EAGAIN. */
static int send_ctl(struct rinx_comm *c, int to, int type, int step,
		    __u32 epoch, __u32 block, __u32 nblocks, __u16 count)
{
	struct xctx *x = c->x;
	struct frame f;
	__u64 addr;

	if (x->nfree <= 0 || xsk_prod_nb_free(&x->tx, 1) < 1)
		return -EAGAIN;
	addr = x->free[x->nfree - 1];
	frame_at((__u8 *)x->area + addr, &f);
	memset(f.h, 0, sizeof(*f.h));
	frame_addr(c, &f, to);
	f.h->magic = htonl(RINX_MAGIC);
	f.h->version = RINX_VERSION;
	f.h->type = type;
	f.h->step = step;
	f.h->job = htonl(c->job);
	f.h->token = htonl(c->token);
	f.h->epoch = htonl(epoch);
	f.h->block = htonl(block);
	f.h->nblocks = htonl(nblocks);
	f.h->count = htons(count);
	f.h->klass = htons(c->plan.plen ? class_of(c, block) : 0);
	f.h->dtype = htons(c->jobent.dtype);
	memset(f.v, 0, RINX_BLOCK_BYTES);
	if (x_send(x, addr, RINX_FRAME_MAX))
		return -EAGAIN;
	x->nfree--;
	return 0;
}

static int send_hello(struct rinx_comm *c, int to, int kind)
{
	return send_ctl(c, to, RINX_T_HELLO, kind, 0, 0, 1, 1);
}

static __u64 peers_mask(const struct rinx_comm *c)
{
	__u64 all = c->n >= 64 ? ~0ull : (1ull << c->n) - 1;

	return all & ~(1ull << c->rank);
}

static void list_ranks(const struct rinx_comm *c, __u64 mask, char *buf,
		       size_t len)
{
	size_t off = 0;
	int r;

	buf[0] = 0;
	for (r = 0; r < c->n && off + 1 < len; r++)
		if (mask & (1ull << r))
			off += snprintf(buf + off, len - off, "%srank %d (%s)",
					off ? ", " : "", r,
					rinx_spec_rank(&c->spec, r)->name);
}

/* Frames sent to a peer before it installed the job would be dropped:
 * every rank returns from open only once every peer's host program has
 * answered "I know the job" (in XDP, so a peer that already returned from
 * open and is busy elsewhere still answers). Asks are repeated every 10 ms,
 * so lost ones do no harm. */
static int open_barrier(struct rinx_comm *c)
{
	__u64 deadline = now_ns() + (__u64)c->timeout_ms * 1000000ull;
	__u64 next = 0, t, want = peers_mask(c), clash_t = 0;
	char who[256];
	int r;

	for (;;) {
		t = now_ns();
		pthread_mutex_lock(&c->x->lock);
		x_reclaim(c->x);
		slow_path(c);
		if ((c->heard & want) == want) {
			pthread_mutex_unlock(&c->x->lock);
			return 0;
		}
		/* a rank that runs another plan: stay installed a few hello
		 * periods more, so that it hears our answer too, then fail */
		if (c->clash && !clash_t)
			clash_t = t + 500000000ull;
		if (c->clash && t >= clash_t) {
			char a[32], b[32];

			pthread_mutex_unlock(&c->x->lock);
			rinx_plan_name(c->spec.plan, c->spec.plan_nps, a,
				       sizeof(a));
			snprintf(b, sizeof(b), "%s", "another");
			for (r = 0; r < 64 * RINX_PLAN_MAX; r++)
				if (rinx_plan_id(r % RINX_PLAN_MAX,
						 r / RINX_PLAN_MAX) == c->clash_id)
					rinx_plan_name(r % RINX_PLAN_MAX,
						       r / RINX_PLAN_MAX, b,
						       sizeof(b));
			return cerr(c, -EINVAL, "rank %d runs plan %s, rank %d "
				    "plan %s: every rank of job %u must run the "
				    "same plan", c->rank, a, c->clash - 1, b,
				    c->job);
		}
		if (t >= next) {
			for (r = 0; r < c->n; r++)
				if (want & ~c->heard & (1ull << r))
					send_ctl(c, r, RINX_T_HELLO,
						 RINX_HELLO_OPEN, 0,
						 c->jobent.plan_id, 1, 1);
			next = t + 10000000ull;
		}
		x_kick(c->x);
		pthread_mutex_unlock(&c->x->lock);
		if (t > deadline) {
			list_ranks(c, want & ~c->heard, who, sizeof(who));
			return cerr(c, -ETIMEDOUT, "rank %d: %s did not open "
				    "job %u within %d ms", c->rank, who,
				    c->job, c->timeout_ms);
		}
		usleep(200);
	}
}

/* A barrier at the start of collective `coll` (kind 0: STATUS, 1: READY)
 * that waits for the ranks in `want` and ORs their words, sending this
 * rank's word to the ranks in `to`. Hellos are repeated until all in `want`
 * were heard; a peer that lost ours says so in its own (count 0) and is
 * answered (ctl_hello), even after we left. */
static int ctl_barrier(struct rinx_comm *c, int kind, __u32 coll, __u32 word,
		       __u64 want, __u64 to, __u32 *or)
{
	struct ctlbar *b = &c->bar[kind][0], *nx = &c->bar[kind][1];
	__u64 deadline = now_ns() + (__u64)c->timeout_ms * 1000000ull;
	__u64 next = 0, t;
	int step = kind ? RINX_HELLO_READY : RINX_HELLO_STATUS, r, done;
	char who[256];

	pthread_mutex_lock(&c->x->lock);
	if (nx->coll == coll) {
		*b = *nx;
	} else {
		b->coll = coll;
		b->from = 0;
		b->or = 0;
	}
	memset(nx, 0, sizeof(*nx));
	pthread_mutex_unlock(&c->x->lock);
	for (;;) {
		t = now_ns();
		pthread_mutex_lock(&c->x->lock);
		x_reclaim(c->x);
		slow_path(c);
		done = (b->from & want) == want;
		if (done || t >= next) {
			for (r = 0; r < c->n; r++)
				if (to & (1ull << r))
					send_ctl(c, r, RINX_T_HELLO, step, coll,
						 word, 1, done);
			next = t + 10000000ull;
		}
		x_kick(c->x);
		if (done) {
			c->done_coll[kind] = coll;
			c->done_word[kind] = word;
			*or = b->or | word;
		}
		pthread_mutex_unlock(&c->x->lock);
		if (done)
			return 0;
		if (t > deadline) {
			list_ranks(c, want & ~b->from, who, sizeof(who));
			return cerr(c, -ETIMEDOUT, "rank %d: %s did not start "
				    "collective %u within %d ms", c->rank, who,
				    coll, c->timeout_ms);
		}
		{
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
	}
}

/* The racks (bit = index) whose aggregator this rank, as their agent,
 * finds gone: the INA ToR no longer holds the job. */
static __u32 ina_health(struct rinx_comm *c)
{
	int ri = rinx_plan_agent_of(&c->spec, c->rank), fd;
	char path[RINX_PATH_MAX + RINX_NAME_MAX + 8];
	struct rinx_job j;
	__u32 key = c->job, down = 0;

	if (ri < 0 || c->spec.racks[ri].ina != RINX_INA_SWITCH || ri >= 32)
		return 0;
	snprintf(path, sizeof(path), "%s/%s/jobs", c->spec.pin,
		 c->spec.racks[ri].name);
	fd = bpf_obj_get(path);
	if (fd < 0 || bpf_map_lookup_elem(fd, &key, &j) || j.token != c->token)
		down = 1U << ri;
	if (fd >= 0)
		close(fd);
	return down;
}

static int install_tor(struct rinx_comm *c, int ri);
static int write_tables(struct rinx_comm *c, int fd_nodes, int fd_hops,
			const struct rinx_plan *p);
static void plan_job(struct rinx_comm *c);

/* Racks in `down` run as plain ring members from now on (Rina's incremental
 * deployment the other way round): every rank rebuilds the same plan, and
 * the agents of the INA racks left install it on their ToRs. */
static int ina_replan(struct rinx_comm *c, __u32 down)
{
	__u32 key = c->job;
	int i, ri, err;

	for (i = 0; i < c->spec.nracks && i < 32; i++)
		if (down & (1U << i))
			c->spec.racks[i].ina = RINX_INA_NONE;
	if (c->tor_jobs_fd >= 0) {
		close(c->tor_jobs_fd);
		c->tor_jobs_fd = -1;
	}
	err = rinx_plan_build(&c->plan, &c->spec, c->rank);
	if (err)
		return cerr(c, err, "cannot rebuild the plan");
	err = write_tables(c, c->fd_nodes, c->fd_hops, &c->plan);
	if (err)
		return err;
	plan_job(c);
	if (bpf_map_update_elem(c->fd_jobs, &key, &c->jobent, 0))
		return cerr(c, -errno, "cannot write job entry: %s",
			    strerror(errno));
	ri = rinx_plan_agent_of(&c->spec, c->rank);
	if (ri >= 0 && c->spec.racks[ri].ina == RINX_INA_SWITCH) {
		err = install_tor(c, ri);
		if (err)
			return err;
	}
	c->down = down;
	c->st.ina_fallbacks++;
	pr_info("rank %d: INA racks %#x fell back to ring members\n", c->rank,
		down);
	return 0;
}

/* At the start of a collective on a plan with INA ToRs: agree on which of
 * them are gone, and fall back where needed before any block moves. */
static int ina_check(struct rinx_comm *c)
{
	__u32 word, all;
	__u64 agents = 0;
	int i, any = 0, err;

	for (i = 0; i < c->spec.nracks; i++)
		any |= c->spec.racks[i].ina == RINX_INA_SWITCH;
	if (!any || c->n < 2)
		return 0;
	/* only the agents of INA ToR racks have something to say */
	for (i = 0; i < c->spec.nracks; i++) {
		int a = rinx_plan_agent_of_rack(&c->spec, i);

		if (c->spec.racks[i].ina == RINX_INA_SWITCH && a >= 0 &&
		    a != c->rank)
			agents |= 1ull << a;
	}
	/* the agents tell everybody; the others ask the agents (their hello
	 * is what gets a lost answer repeated) */
	word = ina_health(c);
	i = rinx_plan_agent_of(&c->spec, c->rank);
	err = ctl_barrier(c, 0, ++c->coll, word, agents,
			  i >= 0 && c->spec.racks[i].ina == RINX_INA_SWITCH ?
			  peers_mask(c) : agents, &all);
	if (err)
		return err;
	all |= c->down;
	if (all == c->down)
		return 0;
	err = ina_replan(c, all);
	if (err)
		return err;
	/* nobody sends a block before every rank runs the new plan */
	return ctl_barrier(c, 1, c->coll, 0, peers_mask(c), peers_mask(c),
			   &all);
}

/* Which peers answer within `ms`? Called when an allreduce timed out. */
static __u64 probe_peers(struct rinx_comm *c, int ms)
{
	__u64 deadline = now_ns() + (__u64)ms * 1000000ull;
	int r;

	c->alive = 0;
	pthread_mutex_lock(&c->x->lock);
	for (r = 0; r < c->n; r++)
		if (r != c->rank)
			send_hello(c, r, RINX_HELLO_PROBE);
	x_kick(c->x);
	pthread_mutex_unlock(&c->x->lock);
	while (now_ns() < deadline && (c->alive & peers_mask(c)) !=
					      peers_mask(c)) {
		pthread_mutex_lock(&c->x->lock);
		x_reclaim(c->x);
		slow_path(c);
		x_kick(c->x);
		pthread_mutex_unlock(&c->x->lock);
		usleep(200);
	}
	return c->alive;
}

/* ---- communicator ---- */

static int open_pinned(struct rinx_comm *c, const char *dir, const char *name)
{
	char path[RINX_PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return cerr(c, -errno, "node %s is not up (cannot open %s: %s);"
			    " run rinxctl up", c->self->name, path,
			    strerror(errno));
	return fd;
}

static int map_share(struct rinx_comm *c, int fd, struct rinx_slot **out)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	size_t bytes;
	void *p;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.value_size != sizeof(struct rinx_slot) ||
	    info.max_entries % RINX_MAX_JOBS)
		return cerr(c, -EPROTO, "pinned maps of node %s are from an "
			    "incompatible rinx build", c->self->name);
	c->window = info.max_entries / RINX_MAX_JOBS;
	bytes = (size_t)info.max_entries * info.value_size;
	bytes = (bytes + 4095) & ~(size_t)4095;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return cerr(c, -errno, "cannot mmap map: %s", strerror(errno));
	c->map_bytes = bytes;
	*out = p;
	return 0;
}

static int write_tables(struct rinx_comm *c, int fd_nodes, int fd_hops,
			const struct rinx_plan *p)
{
	__u32 k, cl;
	int i, t;

	for (i = 0; i < p->nnodes; i++) {
		k = c->slot * RINX_MAX_NODES + i;
		if (bpf_map_update_elem(fd_nodes, &k, &p->nodes[i], 0))
			return cerr(c, -errno, "cannot write node table: %s",
				    strerror(errno));
	}
	for (cl = 0; cl < RINX_MAX_CLASSES; cl++)
		for (t = 1; t <= RINX_HOP_TYPES; t++) {
			struct rinx_hop none = {};
			const struct rinx_hop *h = cl < (__u32)p->nclasses ?
				&p->hops[cl][t - 1] : &none;

			k = RINX_HOP_INDEX(c->slot, cl, t);
			if (bpf_map_update_elem(fd_hops, &k, h, 0))
				return cerr(c, -errno, "cannot write hop table: %s",
					    strerror(errno));
		}
	return 0;
}

/* Empties this job slot's aggregator slots (an earlier job's rounds would
 * make the new job's contributions look stale). */
static int clear_aggs(struct rinx_comm *c, int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), i, k;
	struct rinx_agg *zero;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.max_entries < (c->slot + 1) * c->window)
		return cerr(c, -EPROTO, "aggregator of %s has %u slots, the "
			    "job needs %u: was the node brought up as an "
			    "agent/INA ToR with this spec?", c->self->name,
			    info.max_entries, (c->slot + 1) * c->window);
	zero = calloc(1, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	for (i = 0; i < c->window; i++) {
		k = c->slot * c->window + i;
		if (bpf_map_update_elem(fd, &k, zero, 0)) {
			free(zero);
			return cerr(c, -errno, "cannot reset aggregator slots: %s",
				    strerror(errno));
		}
	}
	free(zero);
	return 0;
}

/* The agent of an ina=switch rack installs the job on its ToR's
 * aggregator (the rack's control point, Rina). */
static int install_tor(struct rinx_comm *c, int ri)
{
	const struct rinx_spec_rack *r = &c->spec.racks[ri];
	char dir[RINX_PATH_MAX + RINX_NAME_MAX];
	struct rinx_plan p;
	struct rinx_job j, other;
	int fd_jobs = -1, fd_nodes = -1, fd_hops = -1, fd_aggs = -1, err;
	int self = rinx_plan_agg_node(&c->spec, ri);
	__u32 key, next;

	snprintf(dir, sizeof(dir), "%s/%s", c->spec.pin, r->name);
	if ((fd_jobs = err = open_pinned(c, dir, "jobs")) < 0 ||
	    (fd_nodes = err = open_pinned(c, dir, "nodes")) < 0 ||
	    (fd_hops = err = open_pinned(c, dir, "hops")) < 0 ||
	    (fd_aggs = err = open_pinned(c, dir, "aggs")) < 0) {
		cerr(c, err, "the INA ToR %s of rack %d is not up (no pinned "
		     "maps in %s)", r->name, r->id, dir);
		goto out;
	}
	for (err = bpf_map_get_next_key(fd_jobs, NULL, &next); !err;
	     err = bpf_map_get_next_key(fd_jobs, &key, &next)) {
		key = next;
		if (key != c->job && !bpf_map_lookup_elem(fd_jobs, &key, &other) &&
		    other.slot == c->slot) {
			err = cerr(c, -EBUSY, "job slot %u of ToR %s is used by "
				   "job %u", c->slot, r->name, key);
			goto out;
		}
	}
	err = rinx_plan_build(&p, &c->spec, self);
	if (!err)
		err = write_tables(c, fd_nodes, fd_hops, &p);
	if (!err)
		err = clear_aggs(c, fd_aggs);
	if (err)
		goto out;
	memset(&j, 0, sizeof(j));
	j.token = c->token;
	j.slot = c->slot;
	j.nclasses = p.nclasses;
	j.nnodes = p.nnodes;
	j.plen = p.plen;
	memcpy(j.cmap, p.cmap, sizeof(j.cmap));
	memset(j.start_to, 0xff, sizeof(j.start_to));	/* starts nothing */
	j.self = self;
	j.qbits = c->qbits;
	j.window = c->window;
	key = c->job;
	if (bpf_map_update_elem(fd_jobs, &key, &j, 0))
		err = cerr(c, -errno, "cannot write the ToR's job entry: %s",
			   strerror(errno));
	else
		c->tor_jobs_fd = fd_jobs, fd_jobs = -1;
out:
	if (fd_jobs >= 0)
		close(fd_jobs);
	if (fd_nodes >= 0)
		close(fd_nodes);
	if (fd_hops >= 0)
		close(fd_hops);
	if (fd_aggs >= 0)
		close(fd_aggs);
	return err < 0 ? err : 0;
}

/* The plan's part of the job entry: classes, nodes, and the blocks this
 * rank starts (for the host program's recycling): the pattern positions of
 * the classes it starts, and where each class starts. */
static void plan_job(struct rinx_comm *c)
{
	const struct rinx_plan *p = &c->plan;
	struct rinx_job *j = &c->jobent;
	int i, k;

	j->nclasses = p->nclasses;
	j->nnodes = p->nnodes;
	j->plen = p->plen;
	memcpy(j->cmap, p->cmap, sizeof(j->cmap));
	for (k = 0; k < RINX_MAX_CLASSES; k++) {
		j->start_to[k] = p->start_to[k] >= 0 && c->n > 1 ?
				 p->start_to[k] : RINX_NO_SEND;
		j->start_type[k] = p->start_to[k] >= 0 ? p->start_type[k] : 0;
	}
	j->nown = 0;
	for (i = 0; i < p->plen; i++) {
		c->ownidx[i] = -1;
		if (j->start_to[p->cmap[i]] != RINX_NO_SEND) {
			c->ownidx[i] = j->nown;
			j->own[j->nown++] = i;
		}
	}
}

static int install(struct rinx_comm *c)
{
	struct rinx_job other;
	__u32 key, next;
	int i, err, ri;

	/* A slot belongs to one job; job % RINX_MAX_JOBS picks it. */
	c->slot = c->job % RINX_MAX_JOBS;
	for (err = bpf_map_get_next_key(c->fd_jobs, NULL, &next); !err;
	     err = bpf_map_get_next_key(c->fd_jobs, &key, &next)) {
		key = next;
		if (key == c->job || bpf_map_lookup_elem(c->fd_jobs, &key, &other))
			continue;
		if (other.slot == c->slot)
			return cerr(c, -EBUSY, "job slot %u of node %s is used by "
				    "job %u; pick a job id with a different "
				    "value mod %d", c->slot, c->self->name,
				    key, RINX_MAX_JOBS);
	}
	err = rinx_plan_build(&c->plan, &c->spec, c->rank);
	if (err)
		return cerr(c, err, "cannot build a plan for spec (%s)",
			    strerror(-err));
	err = write_tables(c, c->fd_nodes, c->fd_hops, &c->plan);
	if (err)
		return err;
	memset(&c->jobent, 0, sizeof(c->jobent));
	c->jobent.token = c->token;
	c->jobent.slot = c->slot;
	c->jobent.nclasses = c->plan.nclasses;
	c->jobent.nnodes = c->plan.nnodes;
	c->jobent.self = c->rank;
	c->jobent.qbits = c->qbits;
	c->jobent.window = c->window;
	c->jobent.plan_id = rinx_plan_id(c->spec.plan, c->spec.plan_nps);
	plan_job(c);
	memset(&c->cursors[c->slot], 0, sizeof(c->cursors[c->slot]));
	memset(&c->cc, 0, sizeof(c->cc));
	/* Every rank starts at epoch 0 of a clean slot: results and shares
	 * are recognised by epoch, so whatever an earlier job left is wiped. */
	c->epoch = 0;
	for (i = 0; i < (int)c->window; i++) {
		c->result[c->slot * c->window + i].epoch = 0;
		c->share[c->slot * c->window + i].epoch = 0;
	}
	if (c->fd_aggs >= 0) {
		err = clear_aggs(c, c->fd_aggs);
		if (err)
			return err;
	}
	c->jobent.epoch = c->epoch;
	/* The ToR first: once this host's job entry exists, its program tells
	 * the peers the job is known here, and they start sending. */
	ri = rinx_plan_agent_of(&c->spec, c->rank);
	if (ri >= 0 && c->spec.racks[ri].ina == RINX_INA_SWITCH) {
		err = install_tor(c, ri);
		if (err)
			return err;
	}
	key = c->job;
	if (bpf_map_update_elem(c->fd_jobs, &key, &c->jobent, 0))
		return cerr(c, -errno, "cannot write job entry: %s",
			    strerror(errno));
	return 0;
}

static struct rinx_comm open_fail_comm;

RINX_API int rinx_comm_open(const struct rinx_comm_opts *o,
			    struct rinx_comm **out)
{
	char dir[RINX_PATH_MAX];
	struct rinx_comm *c;
	int err, fd_share = -1, fd_result = -1;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd_jobs = c->fd_nodes = c->fd_hops = c->fd_xsks = -1;
	c->fd_aggs = c->tor_jobs_fd = -1;
	/* options of an older caller end before `plan` */
	if (!o || o->sz < offsetof(struct rinx_comm_opts, plan) || !o->spec) {
		err = cerr(c, -EINVAL, "missing options or spec");
		goto fail;
	}
	err = rinx_spec_load(o->spec, &c->spec, c->err, sizeof(c->err));
	if (err)
		goto fail;
	/* the plan: the spec's plan= unless the caller names one; every rank
	 * must name the same */
	if (o->sz >= offsetof(struct rinx_comm_opts, plan) + sizeof(o->plan) &&
	    o->plan && o->plan[0]) {
		err = rinx_plan_parse(o->plan, &c->spec.plan, &c->spec.plan_nps,
				      c->err, sizeof(c->err));
		if (err)
			goto fail;
	}
	rinx_plan_spec(&c->spec);
	c->self = o->node ? rinx_spec_host(&c->spec, o->node) :
			    rinx_spec_rank(&c->spec, o->rank);
	if (!c->self) {
		if (o->node)
			err = cerr(c, -ENOENT, "node %s is not in spec %s",
				   o->node, o->spec);
		else
			err = cerr(c, -ENOENT, "rank %d is not in spec %s "
				   "(%d hosts)", o->rank, o->spec,
				   c->spec.nhosts);
		goto fail;
	}
	if (!o->job) {
		err = cerr(c, -EINVAL, "job id 0 is reserved");
		goto fail;
	}
	c->rank = c->self->rank;
	c->n = c->spec.nhosts;
	c->job = o->job;
	c->token = o->token;
	c->qbits = rinx_qbits(c->n);
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
	/* Default: all origins together keep at most ~128 frames in flight,
	 * half of a veth ring (256 frames): without retransmission a ring
	 * overflow on the way would cost a timeout. */
	c->inflight = o->inflight > 0 ? o->inflight :
		      c->n >= 16 ? 8 : 128 / c->n > 64 ? 64 : 128 / c->n;
	if (c->inflight > NUM_FRAMES / 4)
		c->inflight = NUM_FRAMES / 4;

	rinx_node_pin_dir(&c->spec, c->self, dir, sizeof(dir));
	if ((c->fd_jobs = err = open_pinned(c, dir, "jobs")) < 0 ||
	    (c->fd_nodes = err = open_pinned(c, dir, "nodes")) < 0 ||
	    (c->fd_hops = err = open_pinned(c, dir, "hops")) < 0 ||
	    (c->fd_xsks = err = open_pinned(c, dir, "xsks")) < 0 ||
	    (fd_share = err = open_pinned(c, dir, "share")) < 0 ||
	    (fd_result = err = open_pinned(c, dir, "result")) < 0)
		goto fail;
	/* any host may aggregate: an agent, a tree node, a server */
	if ((c->fd_aggs = err = open_pinned(c, dir, "aggs")) < 0)
		goto fail;
	err = map_share(c, fd_share, &c->share);
	if (err)
		goto fail;
	err = map_share(c, fd_result, &c->result);
	if (err)
		goto fail;
	close(fd_share);
	close(fd_result);
	fd_share = fd_result = -1;
	{
		int fd = open_pinned(c, dir, "cursors");
		void *p;

		if (fd < 0) {
			err = fd;
			goto fail;
		}
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (p == MAP_FAILED) {
			err = cerr(c, -errno, "cannot mmap cursors: %s",
				   strerror(errno));
			goto fail;
		}
		c->cursors = p;
	}
	if (c->n > 1) {
		err = xctx_get(c, c->self->ifname, dir, &c->x);
		if (err)
			goto fail;
		xctx_job(c->x, c->job, 1);
	}
	err = install(c);
	if (err)
		goto fail;
	if (c->n > 1) {
		err = open_barrier(c);
		if (err)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	if (fd_share >= 0)
		close(fd_share);
	if (fd_result >= 0)
		close(fd_result);
	/* keep the message reachable for the caller through a NULL comm */
	memcpy(open_fail_comm.err, c->err, sizeof(c->err));
	rinx_comm_close(c);
	return err;
}

RINX_API void rinx_comm_close(struct rinx_comm *c)
{
	__u32 key;

	if (!c)
		return;
	if (c->active)
		rinx_cancel(c->active);
	if (c->fd_jobs >= 0 && c->jobent.token == c->token && c->job) {
		struct rinx_job cur;

		key = c->job;
		if (!bpf_map_lookup_elem(c->fd_jobs, &key, &cur) &&
		    cur.slot == c->slot)
			bpf_map_delete_elem(c->fd_jobs, &key);
	}
	if (c->tor_jobs_fd >= 0) {
		key = c->job;
		bpf_map_delete_elem(c->tor_jobs_fd, &key);
		close(c->tor_jobs_fd);
	}
	if (c->fd_aggs >= 0)
		close(c->fd_aggs);
	if (c->x) {
		xctx_job(c->x, c->job, 0);
		xctx_put(c->x);
	}
	if (c->cursors)
		munmap(c->cursors, 4096);
	if (c->share)
		munmap(c->share, c->map_bytes);
	if (c->result)
		munmap(c->result, c->map_bytes);
	if (c->fd_jobs >= 0)
		close(c->fd_jobs);
	if (c->fd_nodes >= 0)
		close(c->fd_nodes);
	if (c->fd_hops >= 0)
		close(c->fd_hops);
	if (c->fd_xsks >= 0)
		close(c->fd_xsks);
	free(c);
}

RINX_API int rinx_comm_rank(const struct rinx_comm *c) { return c->rank; }
RINX_API int rinx_comm_size(const struct rinx_comm *c) { return c->n; }

RINX_API const char *rinx_comm_error(const struct rinx_comm *c)
{
	return c ? c->err : open_fail_comm.err;
}

RINX_API int rinx_comm_stats(const struct rinx_comm *c,
			     struct rinx_comm_stats *st)
{
	struct xdp_statistics xs;
	socklen_t len;
	int q;

	if (!c || !st)
		return -EINVAL;
	*st = c->st;
	/* summed over the sockets of every receive queue */
	st->xsk_rx_dropped = st->xsk_rx_ring_full = 0;
	st->xsk_fill_empty = st->xsk_tx_invalid = 0;
	for (q = 0; c->x && q < c->x->nq; q++) {
		len = sizeof(xs);
		if (getsockopt(xsk_socket__fd(c->x->q[q].xsk), SOL_XDP,
			       XDP_STATISTICS, &xs, &len))
			continue;
		st->xsk_rx_dropped += xs.rx_dropped;
		st->xsk_rx_ring_full += xs.rx_ring_full;
		st->xsk_fill_empty += xs.rx_fill_ring_empty_descs;
		st->xsk_tx_invalid += xs.tx_invalid_descs;
	}
	return 0;
}

/* ---- allreduce ---- */

#define RTO_FIRST_NS	10000000ull	/* no progress for 10 ms: repair */
/* Blocks asked for or sent again per repair: enough for every block a
 * round loses at a few percent, few enough for the AF_XDP rings. */
#define REPAIR_MAX	32
#define REPAIR_AHEAD	2	/* ... per class past its last finished one */
#define RTO_MAX_NS	1000000000ull

static int round_open(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	size_t left = r->count - r->done_vals;
	size_t vals = left < (size_t)c->window * RINX_BLOCK_VALUES ?
		      left : (size_t)c->window * RINX_BLOCK_VALUES;
	__u64 t;
	__u32 b, key = c->job;

	r->nb = (vals + RINX_BLOCK_VALUES - 1) / RINX_BLOCK_VALUES;
	r->last_count = vals - (size_t)(r->nb - 1) * RINX_BLOCK_VALUES;
	c->epoch++;
	c->jobent.epoch = c->epoch;
	c->jobent.nblocks = r->nb;
	c->jobent.last_count = r->last_count;
	c->jobent.dtype = r->dtype == RINX_FLOAT32 ? RINX_W_FIXED :
						     RINX_W_INT32;
	if (bpf_map_update_elem(c->fd_jobs, &key, &c->jobent, 0))
		return cerr(c, -errno, "cannot update job entry: %s",
			    strerror(errno));
	t = now_ns();
	for (b = 0; b < r->nb; b++) {
		struct rinx_slot *s = &c->share[c->slot * c->window + b];
		int cnt = block_count(r, b);
		size_t off = r->done_vals + (size_t)b * RINX_BLOCK_VALUES;

		if (r->dtype == RINX_FLOAT32) {
			rinx_quant_block(s, (const float *)r->send + off, cnt,
					 c->qbits);
		} else {
			memcpy(s->v, (const int32_t *)r->send + off, cnt * 4);
			if (cnt < RINX_BLOCK_VALUES)
				memset(&s->v[cnt], 0,
				       (RINX_BLOCK_VALUES - cnt) * 4);
			s->exp = 0;
			s->flags = 0;
			s->count = cnt;
		}
		__atomic_store_n(&s->epoch, c->epoch, __ATOMIC_RELEASE);
	}
	c->st.ns_quant += now_ns() - t;
	/* Peers convert their input too before anything can finish: a round
	 * that has not started moving is not a loss. Wait a few times this
	 * rank's conversion before the first repair. */
	r->last_progress = now_ns();
	r->rto = 4 * (r->last_progress - t);
	if (r->rto < RTO_FIRST_NS)
		r->rto = RTO_FIRST_NS;
	{
		struct rinx_cursor *cur = &c->cursors[c->slot];

		/* every share of the round is written: open the cursor */
		__atomic_store_n(&cur->next, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&cur->epoch, c->epoch, __ATOMIC_RELEASE);
	}
	/* the blocks of the classes this rank starts, in the order of the
	 * cursor (the host program claims the same sequence) */
	r->nown = 0;
	for (b = 0; b < r->nb; b++)
		if (c->ownidx[b % c->plan.plen] >= 0)
			r->own[r->nown++] = b;
	r->head = r->cursor = r->stamped = r->sampled = r->fin_ahead = 0;
	r->cursor_t = r->first_fin = 0;
	memset(r->resent, 0, r->nown);
	r->round_open = 1;
	return 0;
}

/* Builds and queues the frame of block b (reduce from its origin, or a
 * contribution to the rack's aggregator). 0 or -EAGAIN. */
static int send_block(struct rinx_req *r, __u32 b)
{
	struct rinx_comm *c = r->c;
	struct xctx *x = c->x;
	__u32 klass = class_of(c, b);
	struct rinx_slot *s = &c->share[c->slot * c->window + b];
	__u64 addr = x->free[x->nfree - 1];
	struct frame f;

	frame_at((__u8 *)x->area + addr, &f);
	frame_addr(c, &f, c->plan.start_to[klass]);
	f.h->magic = htonl(RINX_MAGIC);
	f.h->version = RINX_VERSION;
	f.h->type = c->plan.start_type[klass];
	f.h->flags = s->flags;
	f.h->step = 0;
	f.h->job = htonl(c->job);
	f.h->token = htonl(c->token);
	f.h->epoch = htonl(c->epoch);
	f.h->block = htonl(b);
	f.h->nblocks = htonl(r->nb);
	f.h->count = htons(block_count(r, b));
	f.h->klass = htons(klass);
	f.h->exp = htons((__u16)s->exp);
	f.h->dtype = htons(c->jobent.dtype);
	memcpy(f.v, s->v, RINX_BLOCK_BYTES);
	if (x_send(x, addr, RINX_FRAME_MAX))
		return -EAGAIN;
	x->nfree--;
	return 0;
}

/* ---- congestion control ----
 *
 * Switch ports mark CE above a backlog threshold; the mark stays on the
 * frame for its whole path (and an aggregator passes on the marks of what
 * it consumes), and the host program counts every finished block stored
 * here and the marked ones (cursor.stored, .marked). Every block of a ring
 * crosses every link, so every rank sees the congestion of the whole plan.
 * From that fraction each rank sets the rate of the blocks it starts, in
 * the manner of DCTCP: alpha follows the marked fraction, a marked interval
 * cuts the rate by alpha / 2 (at most once per block round trip), clean
 * ones bring it back as DCQCN does (halfway to the rate before the cut,
 * then a growing additive step), so the rate finds a link's share quickly
 * and jobs sharing links converge to equal shares.
 * A rank starts unpaced (line rate) and paces from its first mark, starting
 * from the rate it measured. The pacer (cursor.gap_ns, .next_ns) is shared
 * with the host program, whose recycling obeys it too (pace_ok in
 * bpf/host.bpf.c follows the same rule as pace_ok below).
 */
#define CC_INTERVAL_NS	500000ull	/* update at most this often */
#define CC_MIN_STORED	8		/* ... and after this many blocks */
#define CC_G		(1.0 / 16)	/* DCTCP's gain */
#define CC_AI		50.0		/* blocks/s added per clean update */
#define CC_CALM		8
#define CC_FR		5		/* fast-recovery intervals */
#define CC_AI_DIV	8		/* the step stays below rate / 8 */
#define CC_MIN_RATE	200.0		/* blocks/s: never starve */
#define CC_USED		0.8		/* share of the rate that must be
					 * used before it may grow */

static int pace_ok(struct rinx_cursor *cur, __u64 now)
{
	__u64 gap = __atomic_load_n(&cur->gap_ns, __ATOMIC_RELAXED);
	__u64 t = __atomic_load_n(&cur->next_ns, __ATOMIC_ACQUIRE);
	__u64 lo = now - RINX_PACE_BURST * gap;

	if (!gap)
		return 1;
	if (now < t)
		return 0;
	return __atomic_compare_exchange_n(&cur->next_ns, &t,
					   (t > lo ? t : lo) + gap, 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static void cc_update(struct rinx_req *r, __u64 now)
{
	struct rinx_comm *c = r->c;
	struct rinx_cursor *cur = &c->cursors[c->slot];
	struct cc *cc = &c->cc;
	__u64 stored = __atomic_load_n(&cur->stored, __ATOMIC_RELAXED);
	__u64 marked = __atomic_load_n(&cur->marked, __ATOMIC_RELAXED);
	__u64 ds = stored - cc->stored, dm = marked - cc->marked;
	__u32 next = __atomic_load_n(&cur->next, __ATOMIC_RELAXED);
	/* own blocks that left in the interval (the cursor restarts with
	 * every round) */
	__u32 sent = next >= cc->claimed ? next - cc->claimed : next;
	__u64 hold = c->srtt > CC_INTERVAL_NS ? c->srtt : CC_INTERVAL_NS;
	double dt = (double)(now - cc->t) * 1e-9, f;

	if (!cc->t || now - cc->t > 100 * CC_INTERVAL_NS) {
		/* first call, or after an idle spell: a fresh interval */
		cc->t = now;
		cc->stored = stored;
		cc->marked = marked;
		cc->claimed = next;
		return;
	}
	if (now - cc->t < CC_INTERVAL_NS || ds < CC_MIN_STORED)
		return;
	f = dm > ds ? 1.0 : (double)dm / (double)ds;
	cc->alpha = (1 - CC_G) * cc->alpha + CC_G * f;
	if (dm && now - cc->cut > hold) {
		/* at most one cut per block round trip: marks seen sooner
		 * still tell of the backlog before the last cut */
		if (!cc->rate) {
			/* start pacing at the rate this rank's blocks went:
			 * its share of the blocks finished here */
			cc->rate = (double)ds / dt *
				   (r->nb ? (double)r->nown / r->nb : 1.0);
			cc->alpha = 1;	/* DCTCP's initial alpha */
		}
		cc->target = cc->rate;
		cc->rate *= 1 - cc->alpha / 2;
		cc->ai = CC_AI;
		cc->calm = 0;
		cc->cut = now;
		c->st.cc_cuts++;
	} else if (!dm && cc->rate &&
		   (double)sent / dt < CC_USED * cc->rate) {
		/* the rank did not send at its rate (the round's tail, a
		 * slow trainer): a clean interval proves nothing about a
		 * higher one (as TCP validates its window, RFC 7661) */
	} else if (!dm && cc->rate) {
		/* DCQCN's recovery: halfway back to the rate before the cut
		 * for CC_FR clean intervals, then the target grows by a step
		 * that doubles every CC_CALM clean intervals */
		if (++cc->calm > CC_FR) {
			cc->target += cc->ai;
			if ((cc->calm - CC_FR) % CC_CALM == 0 &&
			    cc->ai < cc->target / CC_AI_DIV)
				cc->ai *= 2;
		}
		cc->rate = (cc->rate + cc->target) / 2;
	}
	if (cc->rate && cc->rate < CC_MIN_RATE)
		cc->rate = CC_MIN_RATE;
	__atomic_store_n(&cur->gap_ns, cc->rate ? (__u32)(1e9 / cc->rate) : 0,
			 __ATOMIC_RELAXED);
	c->st.ecn_marked += dm;
	c->st.pace_rate = (uint64_t)cc->rate;
	cc->t = now;
	cc->stored = stored;
	cc->marked = marked;
	cc->claimed = next;
}

static int send_own(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	struct xctx *x = c->x;
	struct rinx_cursor *cur = &c->cursors[c->slot];
	int sent = 0;

	/* Own blocks are claimed from the cursor the host program shares: it
	 * turns every gather that ends here into the next own block, so after
	 * the first window the trainer only fills gaps. In flight: claimed
	 * beyond the finished prefix of own blocks. */
	while (x->nfree > 0) {
		__u32 next = __atomic_load_n(&cur->next, __ATOMIC_ACQUIRE), j;

		if (next >= r->nown ||
		    next - r->head - r->fin_ahead >= (__u32)c->inflight ||
		    xsk_prod_nb_free(&x->tx, 1) < 1 || !pace_ok(cur, now_ns()))
			break;
		j = __atomic_fetch_add(&cur->next, 1, __ATOMIC_ACQ_REL);
		if (j >= r->nown)
			break;
		if (send_block(r, r->own[j])) {
			/* cannot happen: a TX slot was checked */
			r->err = cerr(c, -EIO, "AF_XDP transmit ring full");
			break;
		}
		sent++;
	}
	c->st.blocks_sent += sent;
	return sent;
}

/* Time from claiming an own block to finding it finished here, smoothed
 * as TCP smooths its RTT (RFC 6298): its timer is srtt + 4 rttvar. Only
 * blocks sent once give samples (Karn). */
static void rtt_sample(struct rinx_comm *c, __u64 m)
{
	__u64 d;

	if (!c->srtt) {
		c->srtt = m;
		c->rttvar = m / 2;
		return;
	}
	d = m > c->srtt ? m - c->srtt : c->srtt - m;
	c->rttvar = (3 * c->rttvar + d) / 4;
	c->srtt = (7 * c->srtt + m) / 8;
}

#define RTO_BLK_MIN_NS	2000000ull	/* own block timer: 2 ms .. */
#define RTO_BLK_MAX_NS	50000000ull	/* .. 50 ms, then backoff */

static __u64 rto_blk(const struct rinx_comm *c)
{
	__u64 t = c->srtt + 4 * c->rttvar;

	if (!c->srtt)
		return RTO_FIRST_NS;
	return t < RTO_BLK_MIN_NS ? RTO_BLK_MIN_NS :
	       t > RTO_BLK_MAX_NS ? RTO_BLK_MAX_NS : t;
}

/* Selective repair of own blocks, in the manner of RACK (RFC 8985): an
 * own block not finished here is taken for lost when one claimed after it
 * has finished and it is older than its timer (doubled for every resend);
 * only that block is sent again, while the round goes on. A machine that
 * is merely slow finishes nothing out of order, so it sends nothing again;
 * a block lost at the end of a round is left to the stall repair. Every
 * hop is idempotent: a block that was only late costs a duplicate, never a
 * wrong sum. Claims are stamped here, when the trainer first sees them
 * (the host program claims in XDP). */
#define OWN_SCAN	256	/* own blocks looked at per call */

static void own_timers(struct rinx_req *r, __u64 now)
{
	struct rinx_comm *c = r->c;
	__u32 claimed = __atomic_load_n(&c->cursors[c->slot].next,
					__ATOMIC_ACQUIRE), j, hi;
	__u64 rto = rto_blk(c);
	int n = 0;

	if (claimed > r->nown)
		claimed = r->nown;
	for (; r->stamped < claimed; r->stamped++)
		r->sent_at[r->stamped] = now;
	/* the last own block finished here, within the scan, and how many
	 * finished beyond the head (they no longer count as in flight) */
	hi = r->head;
	r->fin_ahead = 0;
	for (j = r->head; j < r->stamped && j < r->head + OWN_SCAN; j++)
		if (__atomic_load_n(&c->result[c->slot * c->window +
					       r->own[j]].epoch,
				    __ATOMIC_ACQUIRE) == c->epoch) {
			hi = j + 1;
			r->fin_ahead++;
		}
	/* the round trip of the newest finished block (it finished since
	 * the last call, or about): blocks waiting behind a hole would
	 * measure the hole */
	if (hi && !r->first_fin)
		r->first_fin = now;
	if (hi && hi > r->sampled) {
		/* blocks sent before the round's first one finished here
		 * also measure how late the peers started the round */
		if (!r->resent[hi - 1] && r->sent_at[hi - 1] >= r->first_fin)
			rtt_sample(c, now - r->sent_at[hi - 1]);
		r->sampled = hi;
	}
	for (j = r->head; j + 1 < hi && n < REPAIR_MAX; j++) {
		__u32 b = r->own[j];

		if (now - r->sent_at[j] < rto << (r->resent[j] < 6 ?
						   r->resent[j] : 6))
			continue;
		if (__atomic_load_n(&c->result[c->slot * c->window + b].epoch,
				    __ATOMIC_ACQUIRE) == c->epoch)
			continue;
		if (xsk_prod_nb_free(&c->x->tx, 1) < 1 || c->x->nfree <= 0 ||
		    send_block(r, b))
			break;
		r->sent_at[j] = now;
		if (r->resent[j] < 255)
			r->resent[j]++;
		c->st.retransmits++;
		n++;
	}
}

static int collect(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	int got = 0;
	__u64 t = 0;

	{
		__u32 claimed = __atomic_load_n(&c->cursors[c->slot].next,
						__ATOMIC_ACQUIRE);

		if (claimed > r->nown)
			claimed = r->nown;
		while (r->head < claimed &&
		       __atomic_load_n(&c->result[c->slot * c->window +
						  r->own[r->head]].epoch,
				       __ATOMIC_ACQUIRE) == c->epoch)
			r->head++;
	}
	while (r->cursor < r->nb) {
		const struct rinx_slot *s =
			&c->result[c->slot * c->window + r->cursor];
		size_t off = r->done_vals +
			     (size_t)r->cursor * RINX_BLOCK_VALUES;
		int cnt = block_count(r, r->cursor);

		if (__atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE) != c->epoch)
			break;
		if (!t)
			t = now_ns();
		if (r->dtype == RINX_FLOAT32) {
			rinx_dequant_block(s, (float *)r->recv + off, cnt,
					   c->qbits);
			if (s->flags & RINX_F_NONFINITE)
				c->st.nonfinite++;
		} else {
			memcpy((int32_t *)r->recv + off, s->v, cnt * 4);
		}
		r->cursor++;
		got++;
	}
	if (t)
		c->st.ns_dequant += now_ns() - t;
	return got;
}

/* "rank 3 (h3)" or "aggregator agg1" for messages. */
static const char *node_label(struct rinx_comm *c, int id)
{
	static __thread char buf[RINX_NAME_MAX + 32];
	int i;

	if (id >= 0 && id < c->n) {
		snprintf(buf, sizeof(buf), "rank %d (%s)", id,
			 rinx_spec_rank(&c->spec, id)->name);
		return buf;
	}
	for (i = 0; i < c->spec.nracks; i++)
		if (rinx_plan_agg_node(&c->spec, i) == id) {
			snprintf(buf, sizeof(buf), "the aggregator %s of rack %d",
				 c->spec.racks[i].name, c->spec.racks[i].id);
			return buf;
		}
	snprintf(buf, sizeof(buf), "node %d", id);
	return buf;
}

static int timeout_error(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	int missing = 0, first = -1, origin = -1, one_origin = 1;
	__u32 b;

	for (b = r->cursor; b < r->nb; b++) {
		if (c->result[c->slot * c->window + b].epoch == c->epoch)
			continue;
		if (first < 0) {
			first = b;
			origin = c->plan.root[class_of(c, b)];
		} else if (c->plan.root[class_of(c, b)] != origin) {
			one_origin = 0;
		}
		missing++;
	}
	c->st.timeouts++;
	{
		__u64 dead = peers_mask(c) & ~probe_peers(c, 200);
		char who[256];

		if (dead) {
			list_ranks(c, dead, who, sizeof(who));
			return cerr(c, -ETIMEDOUT, "rank %d: allreduce timed "
				    "out (%d ms without progress): %d of %u "
				    "blocks of round %u missing; no answer "
				    "from %s (dead or cut off)", c->rank,
				    c->timeout_ms,
				    missing, r->nb, c->epoch, who);
		}
	}
	if (one_origin && origin >= 0)
		return cerr(c, -ETIMEDOUT, "rank %d: allreduce timed out (%d "
			    "ms without progress): %d of %u blocks of round "
			    "%u missing, all of classes finishing at %s: is "
			    "its %s running?", c->rank,
			    c->timeout_ms, missing, r->nb, c->epoch,
			    node_label(c, origin), origin < c->n ?
			    "trainer" : "INA ToR (or a worker of its rack)");
	return cerr(c, -ETIMEDOUT, "rank %d: allreduce timed out (%d ms "
		    "without progress): %d of %u blocks of round %u missing "
		    "(first: block %d, finishing at %s); a peer is dead, "
		    "unreachable or not started",
		    c->rank, c->timeout_ms, missing, r->nb, c->epoch, first,
		    first >= 0 ? node_label(c, origin) : "?");
}

static void req_free(struct rinx_req *r)
{
	if (r->c && r->c->active == r)
		r->c->active = NULL;
	free(r->own);
	free(r->sent_at);
	free(r->resent);
	free(r);
}

static int send_nack(struct rinx_req *r, __u32 b, int to, int step)
{
	return send_ctl(r->c, to, RINX_T_NACK, step, r->c->epoch, b, r->nb,
			block_count(r, b));
}

/* Per class, one past the last block of the class finished here (0: none
 * beyond the cursor). The blocks of a class follow one path from one
 * origin, so they finish in order unless one was lost; blocks of different
 * classes drift apart freely (every origin has its own pacer). */
static void class_ends(const struct rinx_req *r, __u32 *hi)
{
	const struct rinx_comm *c = r->c;
	__u32 ncl = c->plan.nclasses, left = ncl, b, k;

	memset(hi, 0, ncl * sizeof(*hi));
	for (b = r->nb; b > r->cursor && left; b--) {
		k = class_of(c, b - 1);
		if (!hi[k] && __atomic_load_n(&c->result[c->slot * c->window +
							 b - 1].epoch,
					      __ATOMIC_ACQUIRE) == c->epoch) {
			hi[k] = b;
			left--;
		}
	}
}

/* Is the next block in order a hole: a later block of its class finished? */
static int cursor_hole(const struct rinx_req *r)
{
	const struct rinx_comm *c = r->c;
	__u32 b;

	/* the same position of the class pattern: the same class */
	for (b = r->cursor + c->plan.plen; b < r->nb; b += c->plan.plen)
		if (__atomic_load_n(&c->result[c->slot * c->window + b].epoch,
				    __ATOMIC_ACQUIRE) == c->epoch)
			return 1;
	return 0;
}

/* How long the next block in order may be missing while later ones
 * finish before it is taken for lost. */
static __u64 hole_wait(const struct rinx_comm *c)
{
	__u64 t = 2 * rto_blk(c);

	return t > RTO_BLK_MIN_NS ? t : RTO_BLK_MIN_NS;
}

/* A frame was lost (or a peer is slow): ask the node this one gets the
 * finished block from for it (NACK, answered in XDP from its stored copy)
 * and send the own ones again where that cannot help (every hop is
 * idempotent: a re-driven block only repeats sums and stores). Asks for
 * the holes (missing blocks with a later block of their class finished
 * here) and, after a stall, for the next REPAIR_AHEAD missing blocks of
 * every class too: blocks past the last finished one of their class may
 * simply not be done yet. */
static void repair(struct rinx_req *r, int first, int stall)
{
	struct rinx_comm *c = r->c;
	__u32 b, claimed = __atomic_load_n(&c->cursors[c->slot].next,
					   __ATOMIC_ACQUIRE);
	__u32 hi[RINX_MAX_CLASSES];
	int n = 0;

	class_ends(r, hi);
	for (b = r->cursor; b < r->nb && n < REPAIR_MAX; b++) {
		__u32 klass = class_of(c, b);
		__u32 last = hi[klass] > r->cursor ? hi[klass] : r->cursor;
		const struct rinx_hop *g = &c->plan.hops[klass][RINX_T_GATHER - 1];
		long oi = own_index(c, b);

		/* where the finished block arrives by a gather, its sender
		 * (a ring member, an agent, an INA ToR) keeps it until this
		 * rank has finished the round: ask it. An INA member must
		 * too: the next member may already be a round further, its
		 * slot taken, and only its stored result still holds it */
		int nackable = g->action == RINX_A_STORE_FWD ||
			       g->action == RINX_A_STORE_END ||
			       g->action == RINX_A_MCAST_FWD ||
			       g->action == RINX_A_MCAST_END;

		if (b >= last + (stall ? REPAIR_AHEAD * c->plan.plen : 0))
			continue;
		if (__atomic_load_n(&c->result[c->slot * c->window + b].epoch,
				    __ATOMIC_ACQUIRE) == c->epoch)
			continue;
		n++;
		if (nackable && !send_nack(r, b, g->from, g->step))
			c->st.nacks++;
		/* own blocks: only those already claimed (sent once). Where a
		 * NACK can bring the block, it is sent again only when the
		 * last repair brought nothing (it was lost before finishing,
		 * at the end of the round where RACK cannot see it): a
		 * rack's workers would otherwise all resend their shares of
		 * a block that one of them lost */
		if (oi >= 0 && (!nackable || !first) && oi < claimed &&
		    xsk_prod_nb_free(&c->x->tx, 1) >= 1 &&
		    c->x->nfree > 0 && !send_block(r, b))
			c->st.retransmits++;
	}
	x_kick(c->x);
}

/* One step of progress; 1 = finished, 0 = running, < 0 = error. */
static int progress(struct rinx_req *r, int *moved)
{
	struct rinx_comm *c = r->c;
	struct xctx *x = c->x;
	int err = 0;

	*moved = 0;
	if (r->err)
		return r->err;
	pthread_mutex_lock(&x->lock);
	if (!r->round_open) {
		err = round_open(r);
		if (err)
			goto out;
		*moved = 1;
	}
	x_reclaim(x);
	*moved += slow_path(c);
	if (r->err) {
		err = r->err;
		goto out;
	}
	*moved += send_own(r);
	x_kick(x);
	{
		int got = collect(r);
		__u32 claimed = __atomic_load_n(&c->cursors[c->slot].next,
						__ATOMIC_RELAXED);
		__u64 t = now_ns();

		*moved += got;
		cc_update(r, t);
		own_timers(r, t);
		/* a hole: the next block in order is missing for a while
		 * though a later one of its class finished here - ask for
		 * the holes now, before the round drains (RACK's reasoning
		 * for the blocks of every origin: a NACK is answered from a
		 * stored copy) */
		if (got || !r->cursor_t) {
			r->cursor_t = t;
			r->holes = 0;
		} else if (t - r->cursor_t > hole_wait(c) << (r->holes < 6 ?
							      r->holes : 6) &&
			   cursor_hole(r)) {
			repair(r, !r->holes, 0);
			c->st.repairs++;
			r->holes++;
			r->cursor_t = t;
		}
		/* a stall: blocks finished in order, or own blocks claimed
		 * (the host program claims one per finished gather) */
		if (got || claimed != r->last_claimed || !r->last_progress) {
			r->moved_at = t;
			r->last_claimed = claimed;
			r->last_progress = t;
			r->rto = RTO_FIRST_NS;
		} else if (t - r->last_progress > r->rto) {
			repair(r, r->rto <= RTO_FIRST_NS, 1);
			c->st.repairs++;
			r->last_progress = t;
			r->rto = r->rto * 2 > RTO_MAX_NS ? RTO_MAX_NS :
							   r->rto * 2;
		}
	}
	if (r->cursor == r->nb) {
		r->done_vals += (size_t)r->nb * RINX_BLOCK_VALUES;
		if (r->done_vals > r->count)
			r->done_vals = r->count;
		r->round_open = 0;
		c->st.rounds++;
		if (r->done_vals == r->count) {
			pthread_mutex_unlock(&x->lock);
			return 1;
		}
		/* frames of the next round may already be pending */
		err = round_open(r);
		if (err)
			goto out;
		*moved = 1;
	}
out:
	pthread_mutex_unlock(&x->lock);
	return err;
}

RINX_API int rinx_allreduce_start(struct rinx_comm *c, const void *send,
				  void *recv, size_t count,
				  enum rinx_dtype dtype, struct rinx_req **out)
{
	struct rinx_req *r;

	*out = NULL;
	if (!c)
		return -EINVAL;
	if (dtype != RINX_FLOAT32 && dtype != RINX_INT32)
		return cerr(c, -EINVAL, "unsupported dtype %d", dtype);
	if (count && (!send || !recv))
		return cerr(c, -EINVAL, "NULL buffer");
	if (c->active)
		return cerr(c, -EBUSY, "an allreduce is already in flight on "
			    "this communicator");
	if (count) {
		int err = ina_check(c);

		if (err)
			return err;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->c = c;
	r->send = send;
	r->recv = recv;
	r->count = count;
	r->dtype = dtype;
	r->t0 = now_ns();
	r->own = calloc(c->window, sizeof(*r->own));
	r->sent_at = calloc(c->window, sizeof(*r->sent_at));
	r->resent = calloc(c->window, sizeof(*r->resent));
	if (!r->own || !r->sent_at || !r->resent) {
		free(r->own);
		free(r->sent_at);
		free(r->resent);
		free(r);
		return -ENOMEM;
	}
	c->active = r;
	*out = r;
	return 0;
}

static int finish(struct rinx_req *r, int ret)
{
	struct rinx_comm *c = r->c;

	if (ret == 1) {
		c->st.ops++;
		c->st.bytes += r->count * 4;
		ret = 0;
	}
	c->st.ns_total += now_ns() - r->t0;
	req_free(r);
	return ret;
}

static int trivial(struct rinx_req *r)
{
	if (r->count && r->send != r->recv)
		memmove(r->recv, r->send, r->count * 4);
	return 1;
}

RINX_API int rinx_test(struct rinx_req *r)
{
	int moved, ret;

	if (!r)
		return -EINVAL;
	if (r->count == 0 || r->c->n == 1)
		return finish(r, trivial(r));
	ret = progress(r, &moved);
	if (ret == 0)
		return 0;
	ret = finish(r, ret);
	return ret ? ret : 1;
}

RINX_API int rinx_wait(struct rinx_req *r, int timeout_ms)
{
	struct rinx_comm *c;
	__u64 deadline, t, tmo;
	int moved, ret, idle = 0, slack, idle_timeout;

	if (!r)
		return -EINVAL;
	c = r->c;
	if (r->count == 0 || c->n == 1)
		return finish(r, trivial(r));
	idle_timeout = timeout_ms < 0;
	if (timeout_ms < 0)
		timeout_ms = c->timeout_ms;
	tmo = (__u64)timeout_ms * 1000000ull;
	deadline = now_ns() + tmo;
	/* the naps below pace own blocks: the default timer slack (50 us)
	 * would stretch each of them */
	slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
	for (;;) {
		ret = progress(r, &moved);
		if (ret)
			break;
		if (moved) {
			idle = 0;
			continue;
		}
		/* Nothing to do: the other ranks' frames are being processed
		 * in softirq context on the same cores, so yield instead of
		 * spinning once a few polls came back empty. */
		if (++idle > 8) {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
		t = now_ns();
		/* the communicator's timeout counts time without progress:
		 * a large collective on slow links is not a dead peer */
		if (idle_timeout && r->moved_at + tmo > deadline)
			deadline = r->moved_at + tmo;
		if (t > deadline) {
			ret = timeout_error(r);	/* request still valid */
			if (slack > 0)
				prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
			return ret;
		}
	}
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
	return finish(r, ret);
}

RINX_API void rinx_cancel(struct rinx_req *r)
{
	if (r)
		req_free(r);
}

RINX_API int rinx_allreduce(struct rinx_comm *c, const void *send,
			    void *recv, size_t count, enum rinx_dtype dtype)
{
	struct rinx_req *r;
	int err;

	err = rinx_allreduce_start(c, send, recv, count, dtype, &r);
	if (err)
		return err;
	err = rinx_wait(r, -1);
	if (err == -ETIMEDOUT)
		rinx_cancel(r);
	return err;
}
