// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The AF_XDP context of a communicator: one umem and a socket per receive
 * queue of its interface, shared by every communicator of the process on
 * that interface (struct xctx, user/comm/comm.h), with the frame pool, fill,
 * transmit and completion rings.
 *
 * A socket binds a receive queue and receives only what arrives there, and
 * a queue takes one umem: the sockets serve one process per interface. A
 * process that finds them held by another one on its node (a trainer per
 * job) runs "ringed": the host program copies the slow-path frames of its
 * job slot into a ring of the slot's own (rinx_c_ring_set) and the process
 * sends through a packet socket. Frames still live in a private area with
 * the same free list, so the rest of the communicator does not tell the
 * two apart (docs/rinx.md, "Jobs in separate processes").
 */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>
#include "user/comm/comm.h"

/* Multi-buffer AF_XDP (kernel 6.6 on), for headers that predate it. */
#ifndef XDP_USE_SG
#define XDP_USE_SG	(1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD	(1 << 0)
#endif

int rinx_c_xctx_job(struct xctx *x, __u32 job, int add)
{
	int i, ret = 0;

	pthread_mutex_lock(&x->lock);
	for (i = 0; i < x->njobs; i++)
		if (x->jobs[i] == job)
			break;
	if (add && i < x->njobs)
		ret = -EALREADY;	/* a communicator of it is open here */
	else if (add && x->njobs < RINX_MAX_JOBS)
		x->jobs[x->njobs++] = job;
	else if (!add && i < x->njobs)
		x->jobs[i] = x->jobs[--x->njobs];
	pthread_mutex_unlock(&x->lock);
	return ret;
}

int rinx_c_xctx_has_job(const struct xctx *x, __u32 job)
{
	int i;

	for (i = 0; i < x->njobs; i++)
		if (x->jobs[i] == job)
			return 1;
	return 0;
}

static struct xctx *xctx_list;
static pthread_mutex_t xctx_list_lock = PTHREAD_MUTEX_INITIALIZER;

/* Sockets and umem (every socket before the umem: libxdp refuses to free
 * a umem in use): at close, or of a failed x_sockets, so that the context
 * can run ringed instead. */
static void x_unsocket(struct xctx *x)
{
	int q;

	for (q = 1; q < x->nq; q++)
		if (x->q[q].xsk)
			xsk_socket__delete(x->q[q].xsk);
	if (x->xsk)
		xsk_socket__delete(x->xsk);
	if (x->umem)
		xsk_umem__delete(x->umem);
	memset(x->q, 0, sizeof(x->q));
	memset(&x->fq, 0, sizeof(x->fq));
	memset(&x->tx, 0, sizeof(x->tx));
	memset(&x->cq, 0, sizeof(x->cq));
	memset(&x->rx, 0, sizeof(x->rx));
	x->xsk = NULL;
	x->umem = NULL;
	x->nq = 0;
}

static void x_close(struct xctx *x)
{
	x_unsocket(x);
	if (x->pkt_fd >= 0)
		close(x->pkt_fd);
	if (x->area)
		munmap(x->area, AREA_BYTES);
}

/* Receive queues of the interface: its channels (rx-only plus combined),
 * else its rx-N entries in sysfs when sysfs shows this namespace's device,
 * else 1. */
int rinx_if_rx_queues(const char *ifname, int ifindex)
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

/* Does a live process other than this one hold a job slot of the node? */
static int others_here(const struct rinx_comm *c)
{
	struct rinx_claim h;
	__u32 slot;

	for (slot = 0; c->fd_claims >= 0 && slot < c->njobs; slot++)
		if (!bpf_map_lookup_elem(c->fd_claims, &slot, &h) && h.pid &&
		    h.pid != (__u32)getpid() &&
		    rinx_proc_start(h.pid) == h.start)
			return 1;
	return 0;
}

/* The kernel unbinds a closed socket from its queue in a work item: right
 * after another process on this host closed its communicator the queue can
 * still be busy for a moment, so a busy queue is tried again for up to 2 s
 * unless `wait` is 0 (another process holds it and keeps it). */
static int x_bind(struct xctx *x, const char *ifname, int q,
		  const struct xsk_socket_config *scfg, int wait)
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
		if (err != -EBUSY || i >= 200 || !wait)
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

void rinx_c_xctx_put(struct xctx *x)
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

/* A context without sockets: frames leave by a packet socket that skips
 * the interface's queueing discipline, as an AF_XDP socket's do. */
static int x_ringed(struct rinx_comm *c, struct xctx *x, const char *ifname)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_ifindex = x->ifindex,
	};
	struct timeval tmo = { .tv_usec = 20000 };
	int one = 1, buf = 8 << 20;

	/* protocol 0: the socket sends and receives nothing */
	x->pkt_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (x->pkt_fd < 0)
		return rinx_c_cerr(c, -errno, "cannot open a packet socket: %s",
				   strerror(errno));
	if (bind(x->pkt_fd, (struct sockaddr *)&sll, sizeof(sll)) ||
	    setsockopt(x->pkt_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one,
		       sizeof(one)))
		return rinx_c_cerr(c, -errno, "cannot bind a packet socket to "
				   "%s: %s", ifname, strerror(errno));
	/* A send waits while the device holds a full socket buffer of frames
	 * (a window's worth: 8 MiB, or the most allowed), then gives up on
	 * the frame: a loss. */
	if (setsockopt(x->pkt_fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)))
		setsockopt(x->pkt_fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(x->pkt_fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof(tmo));
	/* no transmit ring: one that always has room, never read */
	x->tx.cached_cons = RING_SIZE;
	x->tx.size = RING_SIZE;
	x->ringed = 1;
	pr_info("rank %d (%s): its AF_XDP sockets are another process's: "
		"this one runs ringed\n", c->rank, ifname);
	return 0;
}

/* The sockets of every receive queue, on one umem. */
static int x_sockets(struct rinx_comm *c, struct xctx *x, const char *ifname,
		     int nq, int wait)
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
		.bind_flags = XDP_USE_NEED_WAKEUP | XDP_USE_SG,
	};
	int err;

	err = xsk_umem__create(&x->umem, x->area,
			       (__u64)NUM_FRAMES * FRAME_SIZE, &x->fq, &x->cq,
			       &ucfg);
	if (err)
		return rinx_c_cerr(c, err, "cannot create AF_XDP umem: %s",
				   strerror(-err));
	for (x->nq = 0; x->nq < nq; x->nq++) {
		err = x_bind(x, ifname, x->nq, &scfg, wait);
		/* a kernel or driver without multi-buffer sockets: frames of
		 * one buffer still pass, jumbo blocks are refused at open */
		if (!x->nq && (err == -EINVAL || err == -EOPNOTSUPP)) {
			scfg.bind_flags &= ~XDP_USE_SG;
			err = x_bind(x, ifname, x->nq, &scfg, wait);
		}
		x->sg = !!(scfg.bind_flags & XDP_USE_SG);
		if (err)
			return rinx_c_cerr(c, err, "cannot create AF_XDP socket on "
					   "%s queue %d: %s", ifname, x->nq,
					   strerror(-err));
		/* the socket map is keyed by the socket's queue */
		err = xsk_socket__update_xskmap(x->q[x->nq].xsk, c->fd_xsks);
		if (err) {
			rinx_c_cerr(c, err, "cannot register the AF_XDP socket of "
				    "queue %d: %s", x->nq, strerror(-err));
			x->nq++;
			return err;
		}
	}
	return 0;
}

int rinx_c_xctx_get(struct rinx_comm *c, const char *ifname, const char *pin,
		    struct xctx **out)
{
	int ifindex = if_nametoindex(ifname), err, i, nq, wait;
	struct bpf_map_info mi = {};
	__u32 milen = sizeof(mi);
	struct xctx *x;

	if (!ifindex)
		return rinx_c_cerr(c, -ENODEV, "interface %s not found in this "
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

	nq = rinx_if_rx_queues(ifname, ifindex);
	err = bpf_obj_get_info_by_fd(c->fd_xsks, &mi, &milen);
	if (err)
		return rinx_c_cerr(c, err, "cannot read the AF_XDP socket map: %s",
				   strerror(-err));
	if (nq > XQ_MAX || (__u32)nq > mi.max_entries)
		return rinx_c_cerr(c, -E2BIG, "%s has %d receive queues; rinx serves "
				   "at most %d: lower the interface's queue count",
				   ifname, nq, XQ_MAX < (int)mi.max_entries ? XQ_MAX :
				   (int)mi.max_entries);

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->refs = 1;
	x->pkt_fd = -1;
	x->ifindex = ifindex;
	snprintf(x->pin, sizeof(x->pin), "%s", pin);
	pthread_mutex_init(&x->lock, NULL);
	x->area = mmap(NULL, AREA_BYTES,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (x->area == MAP_FAILED) {
		x->area = NULL;
		err = -ENOMEM;
		goto fail;
	}
	/* queues held by another live process stay held: no waiting */
	wait = c->fd_rings < 0 || !others_here(c);
	err = x_sockets(c, x, ifname, nq, wait);
	if (err == -EBUSY && c->fd_rings >= 0) {
		x_unsocket(x);
		err = x_ringed(c, x, ifname);
	}
	if (err)
		goto fail;
	for (i = 0; i < NUM_FRAMES; i++)
		x->free[i] = (__u64)i * FRAME_SIZE;
	x->nfree = NUM_FRAMES;
	for (i = 0; i < NUM_BIG; i++)
		x->big_free[i] = UMEM_BYTES + (__u64)i * BIG_SIZE;
	x->nbig = NUM_BIG;
	rinx_c_x_refill(x);

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

void rinx_c_x_reclaim(struct xctx *x)
{
	__u32 idx, n, i;

	if (x->ringed) {
		while (x->nsent > 0)
			x->free[x->nfree++] = x->sent[--x->nsent];
		return;
	}
	n = xsk_ring_cons__peek(&x->cq, RING_SIZE, &idx);
	for (i = 0; i < n; i++)
		x->free[x->nfree++] = *xsk_ring_cons__comp_addr(&x->cq, idx + i);
	if (n)
		xsk_ring_cons__release(&x->cq, n);
}

/* Fill rings of every queue: each holds at most its part of three quarters
 * of the frames (a quarter is kept for transmit). */
void rinx_c_x_refill(struct xctx *x)
{
	__u32 idx, n, free_slots, i, cap;
	int q;

	if (x->ringed)
		return;
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
void rinx_c_x_kick(struct xctx *x)
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

/* Sleeps up to `ns`, or until a frame reaches one of the sockets of the
 * k communicators cs (each socket polled once: communicators of one
 * interface share them): the trainer's work then is a slow-path frame. A
 * ringed communicator (its frames come through a BPF ring, submitted
 * without a wakeup) naps 20 us at most, as every trainer did before. */
void rinx_c_x_sleep_many(struct rinx_comm *const *cs, int k, long ns)
{
	struct timespec ts = { ns / 1000000000l, ns % 1000000000l };
	struct pollfd fds[RINX_PS_PARTS_MAX * XQ_MAX];
	int i, q, n = 0;

	for (i = 0; i < k; i++) {
		struct xctx *x = cs[i]->x;
		int j;

		/* communicators of one interface share its sockets */
		for (j = 0; j < i && cs[j]->x != x; j++)
			;
		if (j < i)
			continue;
		if (!x || x->ringed || !x->xsk ||
		    n + x->nq > (int)(sizeof(fds) / sizeof(fds[0]))) {
			nap_ns(ns < 20000 ? ns : 20000);
			return;
		}
		for (q = 0; q < x->nq; q++) {
			fds[n].fd = xsk_socket__fd(x->q[q].xsk);
			fds[n].events = POLLIN;
			fds[n++].revents = 0;
		}
	}
	ppoll(fds, n, &ts, NULL);
}

void rinx_c_x_sleep(struct rinx_comm *c, long ns)
{
	rinx_c_x_sleep_many(&c, 1, ns);
}

__u64 rinx_c_x_buf(struct xctx *x, __u32 len)
{
	if (len <= FRAME_SIZE)
		return x->nfree > 0 ? x->free[x->nfree - 1] : X_NONE;
	return x->nbig > 0 && len <= BIG_SIZE ? x->big_free[x->nbig - 1] :
						X_NONE;
}

/* A whole-frame buffer stays free: its frame was copied into the umem. */
void rinx_c_x_taken(struct xctx *x, __u64 addr)
{
	if (addr < UMEM_BYTES)
		x->nfree--;
}

void rinx_c_x_free(struct xctx *x, __u64 addr)
{
	if (addr < UMEM_BYTES)
		x->free[x->nfree++] = addr;
	else
		x->big_free[x->nbig++] = addr;
}

int rinx_c_x_room(struct xctx *x, __u32 len)
{
	__u32 n = x_descs(len);

	if (rinx_c_x_buf(x, len) == X_NONE)
		return 0;
	if (x->ringed)
		return 1;
	/* a jumbo frame takes n umem frames besides its buffer */
	return xsk_prod_nb_free(&x->tx, n) >= n &&
	       (len <= FRAME_SIZE || x->nfree >= (int)n);
}

/* A frame of several buffers (a whole-frame buffer at addr) into umem
 * frames chained by XDP_PKT_CONTD; 0 or -EAGAIN. */
static int x_send_chain(struct xctx *x, __u64 addr, __u32 len)
{
	__u32 n = x_descs(len), idx, i, part;
	struct xdp_desc *d;
	__u64 a;

	if (!x->sg || len > BIG_SIZE)
		return -EINVAL;
	if (x->nfree < (int)n)
		return -EAGAIN;
	if (xsk_ring_prod__reserve(&x->tx, n, &idx) != n) {
		rinx_c_x_kick(x);
		return -EAGAIN;
	}
	for (i = 0; i < n; i++) {
		/* a frame's base: received ones come back with headroom */
		a = x->free[--x->nfree] & ~(__u64)(FRAME_SIZE - 1);
		part = len - i * FRAME_SIZE < FRAME_SIZE ?
		       len - i * FRAME_SIZE : FRAME_SIZE;
		memcpy((__u8 *)x->area + a,
		       (__u8 *)x->area + addr + i * FRAME_SIZE, part);
		d = xsk_ring_prod__tx_desc(&x->tx, idx + i);
		d->addr = a;
		d->len = part;
		d->options = i + 1 < n ? XDP_PKT_CONTD : 0;
	}
	xsk_ring_prod__submit(&x->tx, n);
	x->tx_unkicked += n;
	if (x->tx_unkicked >= 32)
		rinx_c_x_kick(x);
	return 0;
}

/* Queues frame `addr` of `len` bytes for transmit; 0 or -EAGAIN. */
int rinx_c_x_send(struct xctx *x, __u64 addr, __u32 len)
{
	struct xdp_desc *d;
	__u32 idx;

	if (x->ringed && addr >= UMEM_BYTES)
		return -EINVAL;	/* a ringed communicator runs no jumbo */
	if (addr >= UMEM_BYTES)
		return x_send_chain(x, addr, len);
	if (x->ringed) {
		/* a full device queue is a full transmit ring: try again */
		/* sent, or lost as on a wire (repaired like any loss): the
		 * callers count on a frame leaving once the ring had room */
		send(x->pkt_fd, (__u8 *)x->area + addr, len, 0);
		x->sent[x->nsent++] = addr;
		return 0;
	}
	if (xsk_ring_prod__reserve(&x->tx, 1, &idx) != 1) {
		rinx_c_x_kick(x);
		return -EAGAIN;
	}
	d = xsk_ring_prod__tx_desc(&x->tx, idx);
	d->addr = addr;
	d->len = len;
	d->options = 0;
	xsk_ring_prod__submit(&x->tx, 1);
	if (++x->tx_unkicked >= 32)
		rinx_c_x_kick(x);
	return 0;
}

/* Descriptors [i, j) of rx, one frame in several buffers: copied whole into
 * a whole-frame buffer, pending; its buffers are free again. */
static void x_rx_chain(struct rinx_comm *c, struct xsk_ring_cons *rx,
		       __u32 i, __u32 j)
{
	struct xctx *x = c->x;
	const struct xdp_desc *d;
	__u32 len = 0, k;
	__u64 big = X_NONE;

	for (k = i; k < j; k++)
		len += xsk_ring_cons__rx_desc(rx, k)->len;
	if (len <= BIG_SIZE && x->nbig > 0 && x->npend < MAX_PENDING)
		big = x->big_free[--x->nbig];
	for (k = i, len = 0; k < j; k++) {
		d = xsk_ring_cons__rx_desc(rx, k);
		if (big != X_NONE)
			memcpy((__u8 *)x->area + big + len,
			       (__u8 *)x->area + d->addr, d->len);
		len += d->len;
		x->free[x->nfree++] = d->addr;
	}
	if (big == X_NONE) {
		c->st.slow_dropped++;
		return;
	}
	x->pend_addr[x->npend] = big;
	x->pend_len[x->npend++] = len;
}

void rinx_c_x_rx(struct rinx_comm *c)
{
	struct xctx *x = c->x;
	__u32 idx, n, i, j;
	int q;

	for (q = 0; q < x->nq; q++) {
		struct xsk_ring_cons *rx = x->q[q].rx;

		n = xsk_ring_cons__peek(rx, RING_SIZE, &idx);
		for (i = 0; i < n; i = j) {
			const struct xdp_desc *d;

			/* a frame: descriptors up to one without CONTD */
			for (j = i; j < n; j++)
				if (!(xsk_ring_cons__rx_desc(rx, idx + j)->
				      options & XDP_PKT_CONTD))
					break;
			if (j == n)	/* its end not yet in: next time */
				break;
			if (j++ > i) {
				x_rx_chain(c, rx, idx + i, idx + j);
				continue;
			}
			d = xsk_ring_cons__rx_desc(rx, idx + i);
			if (x->npend < MAX_PENDING) {
				x->pend_addr[x->npend] = d->addr;
				x->pend_len[x->npend++] = d->len;
			} else {
				x->free[x->nfree++] = d->addr;
				c->st.slow_dropped++;
			}
		}
		if (i < n)
			xsk_ring_cons__cancel(rx, n - i);
		if (i)
			xsk_ring_cons__release(rx, i);
	}
}

/* One frame of a slot ring into a free frame of the context, pending for
 * the slow path; a quarter of the frames stays for transmit, as the fill
 * rings leave it. */
static int ring_frame(void *ctx, void *data, size_t size)
{
	const struct rinx_ring_frame *rf = data;
	struct rinx_comm *c = ctx;
	struct xctx *x = c->x;
	__u64 a;

	if (size < sizeof(*rf) || rf->len > RINX_FRAME_MAX ||
	    x->nfree <= NUM_FRAMES / 4 || x->npend >= MAX_PENDING) {
		c->st.slow_dropped++;
		return 0;
	}
	a = x->free[--x->nfree];
	memcpy((__u8 *)x->area + a, rf->data, rf->len);
	x->pend_addr[x->npend] = a;
	x->pend_len[x->npend++] = rf->len;
	return 0;
}

void rinx_c_ring_rx(struct rinx_comm *c)
{
	if (c->rx_ring)
		ring_buffer__consume(c->rx_ring);
}

int rinx_c_ring_set(struct rinx_comm *c)
{
	int err;

	if (c->fd_rings < 0 || !c->x)
		return 0;
	if (!c->x->ringed) {
		/* a dead ringed process may have left its ring in the slot */
		bpf_map_delete_elem(c->fd_rings, &c->slot);
		return 0;
	}
	c->fd_ring = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "rinx_slot_rx", 0, 0,
				    RINX_RING_BYTES, NULL);
	if (c->fd_ring < 0)
		return rinx_c_cerr(c, -errno, "cannot create the receive ring of "
				   "job slot %u: %s", c->slot, strerror(errno));
	c->rx_ring = ring_buffer__new(c->fd_ring, ring_frame, c, NULL);
	if (!c->rx_ring)
		return rinx_c_cerr(c, -errno, "cannot map the receive ring of "
				   "job slot %u: %s", c->slot, strerror(errno));
	if (bpf_map_update_elem(c->fd_rings, &c->slot, &c->fd_ring, BPF_ANY)) {
		err = -errno;
		return rinx_c_cerr(c, err, "cannot give job slot %u its receive "
				   "ring: %s", c->slot, strerror(-err));
	}
	return 0;
}

void rinx_c_ring_put(struct rinx_comm *c)
{
	/* while the slot is still held: its next holder sets its own */
	if (c->rx_ring && c->fd_rings >= 0)
		bpf_map_delete_elem(c->fd_rings, &c->slot);
	ring_buffer__free(c->rx_ring);
	c->rx_ring = NULL;
	if (c->fd_ring >= 0)
		close(c->fd_ring);
	c->fd_ring = -1;
}
