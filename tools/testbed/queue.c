// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The testbed's real queue: one process per testbed that holds the frames
 * its switches hand it until their port's virtual queue lets them leave.
 *
 * A switch port is a virtual queue (bpf/sw_link.bpf.h): XDP cannot hold a
 * frame, so a frame admitted to a port's backlog leaves at once. rinx's
 * senders pace themselves by the port's marks and are not hurt by it; a
 * TCP flow is. Its window is clocked by its acknowledgements, and where
 * the bottleneck adds no delay they come back at the pace of the sender's
 * own link: a flow whose bottleneck is slower than its own link overruns
 * the bottleneck's buffer at every window (docs/rinx.md, "TCP on these
 * links"). On a port with set.real (`testbed up|fault --queue real`) the
 * switch hands every admitted frame that is not rinx's, with the time it
 * leaves the virtual queue, to this process (struct rinx_sw_real_hdr in
 * front of it, through the switch's XSKMAP `xsks`), which sends it from
 * the egress port at that time: the frame waits as long as it would in a
 * switch's buffer, and its flow sees the delay.
 *
 * The process binds an AF_XDP socket (copy mode, queue 0) on every port of
 * every switch of the testbed, each with a UMEM of its own: frames come in
 * on the ingress port's socket, are copied into a free frame of the egress
 * port's UMEM at once (the ingress frame goes back to its fill ring) and
 * wait in the egress port's FIFO; when the head's time has come it goes on
 * the port's TX ring. A port's frames leave in the order they came (the
 * virtual queue is a FIFO per class, and the times of one class never go
 * backwards but where its drain rate changed between two frames). One
 * thread, asleep in ppoll() on the receive sockets until the next frame is
 * due or one comes in; sends are late by the wake-up's latency (counted).
 *
 * Files: <spec dir>/<prefix>.queue (the process's pid and counters,
 * rewritten every second) and <prefix>.queue.log (its messages). The
 * process leaves when asked (SIGTERM: `testbed down`) or when its
 * testbed's spec is gone.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include "tools/testbed/tb.h"

#define QP_FRAMES	2048	/* UMEM frames per port */
#define QP_FSIZE	RINX_SW_REAL_FRAME
#define QP_RX		512	/* of them on the fill ring */
#define QP_RING		1024	/* fill, rx, tx, completion rings */
#define QP_MAX		(2 * RINX_TB_MAX_RACKS * \
			 (RINX_TB_MAX_PER_RACK + 2))
#define QP_BATCH	64

struct qent {
	__u64 dep, addr;
	__u32 len;
};

struct qport {
	int sw;				/* its switch's index */
	__u32 ifindex;
	char ifname[IFNAMSIZ];
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	__u64 freel[QP_FRAMES];		/* free frames for the FIFO */
	int nfree;
	struct qent fifo[QP_FRAMES];	/* held for this port, in order */
	unsigned int head, tail;
};

struct qsw {
	char ns[NS_NAME_MAX];
	int slot_fd;			/* its xsk_slot map */
};

struct qstate {
	struct qport *p;
	int np;
	struct qsw sw[RINX_TB_MAX_RACKS + 1];
	int nsw;
	char file[RINX_PATH_MAX], spec[RINX_PATH_MAX];
	struct rinx_tb_queue_stats st;
};

static volatile sig_atomic_t q_stop;

static void q_signal(int sig)
{
	(void)sig;
	q_stop = 1;
}

static __u64 q_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void rinx_testbed_queue_path(const char *prefix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.queue", RINX_TB_SPEC_DIR, prefix);
}

/* The counters, written whole (a new file renamed over the old). */
static void q_write(struct qstate *q, int ports)
{
	char tmp[RINX_PATH_MAX + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", q->file);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "pid %d\nports %d\nheld %llu\nsent %llu\nfull %llu\n"
		"bad %llu\nlate_max_ns %llu\nlate_sum_ns %llu\n", (int)getpid(),
		ports, (unsigned long long)q->st.held,
		(unsigned long long)q->st.sent,
		(unsigned long long)q->st.full,
		(unsigned long long)q->st.bad,
		(unsigned long long)q->st.late_max_ns,
		(unsigned long long)q->st.late_sum_ns);
	if (fclose(f) || rename(tmp, q->file))
		unlink(tmp);
}

/* A process that runs: not gone, and not a zombie its parent (init, for
 * a process whose starter left) has not reaped yet. */
static int pid_alive(int pid)
{
	char path[32], buf[256], *p;
	ssize_t n;
	int fd;

	if (pid <= 0 || kill(pid, 0))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "pid (comm) S ...": the state after the last ')' */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

int rinx_testbed_queue_read(const char *prefix, struct rinx_tb_queue_stats *st)
{
	char path[RINX_PATH_MAX], key[32];
	unsigned long long v;
	FILE *f;

	memset(st, 0, sizeof(*st));
	rinx_testbed_queue_path(prefix, path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fscanf(f, "%31s %llu", key, &v) == 2) {
		if (!strcmp(key, "pid"))
			st->pid = (int)v;
		else if (!strcmp(key, "ports"))
			st->ports = (int)v;
		else if (!strcmp(key, "held"))
			st->held = v;
		else if (!strcmp(key, "sent"))
			st->sent = v;
		else if (!strcmp(key, "full"))
			st->full = v;
		else if (!strcmp(key, "bad"))
			st->bad = v;
		else if (!strcmp(key, "late_max_ns"))
			st->late_max_ns = v;
		else if (!strcmp(key, "late_sum_ns"))
			st->late_sum_ns = v;
	}
	fclose(f);
	if (!pid_alive(st->pid))
		return -ESRCH;
	return 0;
}

/* Port p's socket on queue 0 of its interface (the caller is in its
 * switch's namespace), the fill ring stocked, the rest free for FIFO. */
static int q_port_open(struct qport *p)
{
	struct xsk_umem_config ucfg = {
		.fill_size = QP_RING, .comp_size = QP_RING,
		.frame_size = QP_FSIZE,
	};
	struct xsk_socket_config scfg = {
		.rx_size = QP_RING, .tx_size = QP_RING,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_COPY,
	};
	size_t sz = (size_t)QP_FRAMES * QP_FSIZE;
	__u32 idx;
	int err, i;

	p->area = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->area == MAP_FAILED) {
		p->area = NULL;
		return -errno;
	}
	err = xsk_umem__create(&p->umem, p->area, sz, &p->fq, &p->cq, &ucfg);
	if (err)
		return err;
	err = xsk_socket__create(&p->xsk, p->ifname, 0, p->umem, &p->rx,
				 &p->tx, &scfg);
	if (err)
		return err;
	if (xsk_ring_prod__reserve(&p->fq, QP_RX, &idx) != QP_RX)
		return -ENOSPC;
	for (i = 0; i < QP_RX; i++)
		*xsk_ring_prod__fill_addr(&p->fq, idx + i) =
			(__u64)i * QP_FSIZE;
	xsk_ring_prod__submit(&p->fq, QP_RX);
	for (i = QP_RX; i < QP_FRAMES; i++)
		p->freel[p->nfree++] = (__u64)i * QP_FSIZE;
	return 0;
}

static void q_port_close(struct qport *p)
{
	if (p->xsk)
		xsk_socket__delete(p->xsk);
	if (p->umem)
		xsk_umem__delete(p->umem);
	if (p->area)
		munmap(p->area, (size_t)QP_FRAMES * QP_FSIZE);
}

/* Every port of switch namespace w->ns: a socket, in xsks at slot k and
 * in xsk_slot by its ifindex. */
static int q_switch_open(struct qstate *q, const struct rinx_spec *s, int w)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	struct qsw *sw = &q->sw[w];
	struct if_nameindex *ifs = NULL, *it;
	int xfd, old, err, fd;
	__u32 k = 0;

	link_pin_dir(s, sw->ns, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/xsks", dir);
	xfd = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/xsk_slot", dir);
	sw->slot_fd = bpf_obj_get(path);
	if (xfd < 0 || sw->slot_fd < 0) {
		pr_warn("queue: switch %s: its sockets' maps are not pinned "
			"(a switch from before real queues?)\n", sw->ns);
		err = -ENOENT;
		goto out;
	}
	err = rinx_netns_enter(sw->ns, &old);
	if (err)
		goto out;
	ifs = if_nameindex();
	for (it = ifs; it && it->if_index && !err; it++) {
		struct qport *p;

		if (!strcmp(it->if_name, "lo"))
			continue;
		if (q->np >= QP_MAX || k >= RINX_SW_MAX_PORTS) {
			err = -E2BIG;
			break;
		}
		p = &q->p[q->np++];
		p->sw = w;
		p->ifindex = it->if_index;
		snprintf(p->ifname, sizeof(p->ifname), "%s", it->if_name);
		err = q_port_open(p);
		if (err) {
			pr_warn("queue: %s:%s: socket: %s\n", sw->ns,
				p->ifname, strerror(-err));
			break;
		}
		fd = xsk_socket__fd(p->xsk);
		if (bpf_map_update_elem(xfd, &k, &fd, BPF_ANY) ||
		    bpf_map_update_elem(sw->slot_fd, &p->ifindex, &k,
					BPF_ANY)) {
			err = -errno;
			pr_warn("queue: %s:%s: into xsks: %s\n", sw->ns,
				p->ifname, strerror(errno));
		}
		k++;
	}
	if (ifs)
		if_freenameindex(ifs);
	rinx_netns_leave(old);
out:
	if (xfd >= 0)
		close(xfd);
	return err;
}

static struct qport *q_egress(struct qstate *q, int sw, __u32 ifindex)
{
	int i;

	for (i = 0; i < q->np; i++)
		if (q->p[i].sw == sw && q->p[i].ifindex == ifindex)
			return &q->p[i];
	return NULL;
}

/* What came in on p: each frame into its egress port's FIFO. Frames. */
static int q_rx(struct qstate *q, struct qport *p)
{
	const struct rinx_sw_real_hdr *h;
	__u32 idx, fidx, i, n, len;
	struct qport *e;
	__u8 *data;
	__u64 a;

	n = xsk_ring_cons__peek(&p->rx, QP_BATCH, &idx);
	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&p->rx,
								  idx + i);

		data = xsk_umem__get_data(p->area, d->addr);
		len = d->len;
		h = (const void *)data;
		if (len < sizeof(*h) + ETH_HLEN || len > QP_FSIZE ||
		    h->magic != RINX_SW_REAL_MAGIC ||
		    !(e = q_egress(q, p->sw, h->egress))) {
			q->st.bad++;
			continue;
		}
		if (!e->nfree || e->tail - e->head >= QP_FRAMES) {
			q->st.full++;
			continue;
		}
		a = e->freel[--e->nfree];
		memcpy((__u8 *)e->area + a, data + sizeof(*h),
		       len - sizeof(*h));
		e->fifo[e->tail++ % QP_FRAMES] = (struct qent){
			.dep = h->dep_ns, .addr = a,
			.len = len - (__u32)sizeof(*h) };
		q->st.held++;
	}
	/* the ring holds every frame of the fill ring, so this fits */
	if (xsk_ring_prod__reserve(&p->fq, n, &fidx) == n) {
		for (i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&p->fq, fidx + i) =
				xsk_ring_cons__rx_desc(&p->rx, idx + i)->addr &
				~(__u64)(QP_FSIZE - 1);
		xsk_ring_prod__submit(&p->fq, n);
	}
	xsk_ring_cons__release(&p->rx, n);
	return n;
}

/* Frames on p's TX ring the kernel has not taken yet. */
static __u32 q_unsent(const struct qport *p)
{
	return p->tx.cached_prod - __atomic_load_n(p->tx.consumer,
						   __ATOMIC_ACQUIRE);
}

/* p's frames due by now onto its TX ring, started; sent ones freed. */
static void q_tx(struct qstate *q, struct qport *p, __u64 now)
{
	struct xdp_desc *d;
	struct qent *x;
	__u32 idx, n, i;
	int k;

	while (p->head != p->tail) {
		x = &p->fifo[p->head % QP_FRAMES];
		if (x->dep > now)
			break;
		if (xsk_ring_prod__reserve(&p->tx, 1, &idx) != 1)
			break;
		d = xsk_ring_prod__tx_desc(&p->tx, idx);
		d->addr = x->addr;
		d->len = x->len;
		d->options = 0;
		xsk_ring_prod__submit(&p->tx, 1);
		p->head++;
		q->st.sent++;
		q->st.late_sum_ns += now - x->dep;
		if (now - x->dep > q->st.late_max_ns)
			q->st.late_max_ns = now - x->dep;
	}
	/* copy mode sends at most 32 frames a call (EAGAIN: more to go);
	 * what the kernel could not take yet (the next port's ring full:
	 * EBUSY, ENOBUFS) is started again on the next pass */
	for (k = 0; q_unsent(p) && k < QP_RING / 32 + 1; k++)
		if (sendto(xsk_socket__fd(p->xsk), NULL, 0, MSG_DONTWAIT,
			   NULL, 0) < 0 && errno != EAGAIN)
			break;
	n = xsk_ring_cons__peek(&p->cq, QP_RING, &idx);
	for (i = 0; i < n && p->nfree < QP_FRAMES; i++)
		p->freel[p->nfree++] = *xsk_ring_cons__comp_addr(&p->cq,
								 idx + i);
	xsk_ring_cons__release(&p->cq, n);
}

static void q_close(struct qstate *q)
{
	int i;

	for (i = 0; i < q->np; i++) {
		if (q->sw[q->p[i].sw].slot_fd >= 0)
			bpf_map_delete_elem(q->sw[q->p[i].sw].slot_fd,
					    &q->p[i].ifindex);
		q_port_close(&q->p[i]);
	}
	for (i = 0; i < q->nsw; i++)
		if (q->sw[i].slot_fd >= 0)
			close(q->sw[i].slot_fd);
}

int rinx_testbed_queue_run(const char *what)
{
	char prefix[RINX_TB_PREFIX_MAX + 1];
	struct rinx_spec *s = calloc(1, sizeof(*s));
	struct qstate *q = calloc(1, sizeof(*q));
	struct pollfd *pfd = NULL;
	struct sigaction sa = { .sa_handler = q_signal };
	__u64 now, next, last = 0;
	struct timespec ts;
	int err, i, got;

	if (!s || !q) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < (int)NELEM(q->sw); i++)
		q->sw[i].slot_fd = -1;
	err = tb_load(what, s, prefix, sizeof(prefix), q->spec);
	if (err)
		goto out;
	if (s->topo[0]) {
		pr_warn("queue: testbed %s is a topology testbed: real queues "
			"are for the rack testbed\n", prefix);
		err = -EOPNOTSUPP;
		goto out;
	}
	rinx_testbed_queue_path(prefix, q->file, sizeof(q->file));
	q->p = calloc(QP_MAX, sizeof(*q->p));
	if (!q->p) {
		err = -ENOMEM;
		goto out;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	/* ppoll's wake-ups as close to the frames' times as the timer
	 * allows (the default slack is 50 us) */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	for (i = 0; i < (int)NELEM(q->sw) && switch_ns(s, prefix, i,
							q->sw[i].ns); i++) {
		q->nsw = i + 1;
		err = q_switch_open(q, s, i);
		if (err)
			goto out;
	}
	pfd = calloc(q->np, sizeof(*pfd));
	if (!pfd) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < q->np; i++) {
		pfd[i].fd = xsk_socket__fd(q->p[i].xsk);
		pfd[i].events = POLLIN;
	}
	q_write(q, q->np);
	pr_info("queue: testbed %s: %d ports of %d switches\n", prefix, q->np,
		q->nsw);
	while (!q_stop) {
		got = 0;
		for (i = 0; i < q->np; i++)
			got += q_rx(q, &q->p[i]);
		now = q_now();
		next = ~0ULL;
		for (i = 0; i < q->np; i++) {
			struct qport *p = &q->p[i];

			q_tx(q, p, now);
			if (p->head != p->tail &&
			    p->fifo[p->head % QP_FRAMES].dep < next)
				next = p->fifo[p->head % QP_FRAMES].dep;
			/* the ring to start again soon */
			if (q_unsent(p) && now + 50000 < next)
				next = now + 50000;
		}
		if (now - last >= 1000000000ULL) {
			last = now;
			q_write(q, q->np);
			/* the testbed is gone: so is its queue */
			if (access(q->spec, F_OK))
				break;
		}
		if (got)
			continue;
		if (next == ~0ULL)
			next = now + 200000000ULL;
		if (next <= now)
			continue;
		ts.tv_sec = (next - now) / 1000000000ULL;
		ts.tv_nsec = (next - now) % 1000000000ULL;
		ppoll(pfd, q->np, &ts, NULL);
	}
	err = 0;
out:
	if (q) {
		if (q->p)
			q_close(q);
		if (q->file[0])
			unlink(q->file);
		free(q->p);
	}
	free(pfd);
	free(q);
	free(s);
	return err;
}

/* Starts testbed what's queue process unless one runs: 0 once it serves
 * the ports, or -errno (its messages in the log). */
int rinx_testbed_queue_start(const char *what)
{
	char prefix[RINX_TB_PREFIX_MAX + 1], log[RINX_PATH_MAX + 8];
	struct rinx_tb_queue_stats st;
	struct rinx_spec *s = calloc(1, sizeof(*s));
	int err, i, fd, status;
	pid_t pid;

	if (!s)
		return -ENOMEM;
	err = tb_load(what, s, prefix, sizeof(prefix), NULL);
	free(s);
	if (err)
		return err;
	if (!rinx_testbed_queue_read(prefix, &st))
		return 0;
	rinx_testbed_queue_path(prefix, log, sizeof(log));
	strcat(log, ".log");
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		setsid();
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		/* nothing of the caller's (a test's pipes) stays open */
		for (fd = 3; fd < 1024; fd++)
			close(fd);
		execl("/proc/self/exe", "rinxctl", "testbed", "queue", what,
		      (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 1000; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			pr_warn("queue: the process for %s ended (see %s)\n",
				prefix, log);
			return -ECHILD;
		}
		if (!rinx_testbed_queue_read(prefix, &st) && st.pid == pid)
			return 0;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	pr_warn("queue: the process for %s did not start in 10 s (see %s)\n",
		prefix, log);
	return -ETIMEDOUT;
}

/* Stops testbed prefix's queue process, if one runs (SIGTERM, then
 * SIGKILL after 2 s). */
void rinx_testbed_queue_stop(const char *prefix)
{
	char path[RINX_PATH_MAX + 8];
	struct rinx_tb_queue_stats st;
	int i;

	if (!rinx_testbed_queue_read(prefix, &st)) {
		kill(st.pid, SIGTERM);
		/* reaped here if this process started it */
		for (i = 0; i < 200 && waitpid(st.pid, NULL, WNOHANG) <= 0 &&
			    pid_alive(st.pid); i++)
			usleep(10000);
		if (pid_alive(st.pid))
			kill(st.pid, SIGKILL);
	}
	rinx_testbed_queue_path(prefix, path, sizeof(path));
	unlink(path);
	strcat(path, ".log");
	unlink(path);
}
