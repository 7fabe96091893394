// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The AF_XDP context of a communicator: one umem and a socket per receive
 * queue of its interface, shared by every communicator of the process on
 * that interface (struct xctx, user/comm.h), with the frame pool, fill,
 * transmit and completion rings.
 */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include "user/comm/comm.h"

void rinx_c_xctx_job(struct xctx *x, __u32 job, int add)
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

int rinx_c_xctx_get(struct rinx_comm *c, const char *ifname, const char *pin,
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
		rinx_c_cerr(c, err, "cannot create AF_XDP umem: %s", strerror(-err));
		goto fail;
	}
	for (x->nq = 0; x->nq < nq; x->nq++) {
		err = x_bind(x, ifname, x->nq, &scfg);
		if (err) {
			rinx_c_cerr(c, err, "cannot create AF_XDP socket on %s queue "
				    "%d: %s", ifname, x->nq, strerror(-err));
			goto fail;
		}
		/* the socket map is keyed by the socket's queue */
		err = xsk_socket__update_xskmap(x->q[x->nq].xsk, c->fd_xsks);
		if (err) {
			rinx_c_cerr(c, err, "cannot register the AF_XDP socket of "
				    "queue %d: %s", x->nq, strerror(-err));
			x->nq++;
			goto fail;
		}
	}
	for (i = 0; i < NUM_FRAMES; i++)
		x->free[i] = (__u64)i * FRAME_SIZE;
	x->nfree = NUM_FRAMES;
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

/* Queues frame `addr` of `len` bytes for transmit; 0 or -EAGAIN. */
int rinx_c_x_send(struct xctx *x, __u64 addr, __u32 len)
{
	struct xdp_desc *d;
	__u32 idx;

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
