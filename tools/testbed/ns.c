// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Namespaces and veth pairs: ip(8) batches, the names of a testbed's
 * namespaces, the hosts' and switches' interfaces and addresses.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include "tools/testbed/tb.h"

extern char **environ;

void rinx_tb_put(struct rinx_tb_buf *b, const char *fmt, ...)
{
	va_list ap;
	size_t cap;
	char *p;
	int n;

	if (b->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL,
			      b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if (b->p && b->len + n < b->cap) {
			b->len += n;
			return;
		}
		cap = (b->cap ? b->cap * 2 : 4096) + n;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

void rinx_tb_free(struct rinx_tb_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/*
 * The kernel threads that poll an interface by NAPI: a dump of the
 * netdev generic netlink family's NAPI instances of its ifindex, in the
 * caller's network namespace. The numbers are the kernel's UAPI
 * (include/uapi/linux/netdev.h), not in every distribution's headers.
 */
#define NETDEV_FAMILY		"netdev"
#define NETDEV_CMD_NAPI_GET	11
#define NETDEV_A_NAPI_IFINDEX	1
#define NETDEV_A_NAPI_ID	2
#define NETDEV_A_NAPI_PID	4
#define NAPI_MAX		16	/* threads looked up per interface */

struct nlbuf {
	struct nlmsghdr nh;
	struct genlmsghdr gh;
	char attrs[64];
};

static void nl_put(struct nlbuf *m, __u16 type, const void *data, __u16 len)
{
	struct nlattr *a = (struct nlattr *)((char *)m +
					     NLMSG_ALIGN(m->nh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	m->nh.nlmsg_len = NLMSG_ALIGN(m->nh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* Sends m, then calls fn on every attribute of every answer until the
 * dump's end: 0, or -errno (the kernel's error, or a malformed answer). */
static int nl_talk(int fd, struct nlbuf *m,
		   void (*fn)(const struct nlattr *a, void *arg, int first),
		   void *arg)
{
	static char buf[16384];
	int done = 0;

	if (send(fd, m, m->nh.nlmsg_len, 0) < 0)
		return -errno;
	while (!done) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		if (n < 0)
			return -errno;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			struct nlattr *a;
			int left, first = 1;

			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error;
			}
			left = h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
			a = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
			while (left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
			       a->nla_len <= left) {
				fn(a, arg, first);
				first = 0;
				left -= NLA_ALIGN(a->nla_len);
				a = (struct nlattr *)((char *)a +
						      NLA_ALIGN(a->nla_len));
			}
			if (!(h->nlmsg_flags & NLM_F_MULTI))
				done = 1;
		}
	}
	return 0;
}

static void family_id(const struct nlattr *a, void *arg, int first)
{
	(void)first;
	if (a->nla_type == CTRL_ATTR_FAMILY_ID &&
	    a->nla_len >= NLA_HDRLEN + sizeof(__u16))
		memcpy(arg, (const char *)a + NLA_HDRLEN, sizeof(__u16));
}

struct napi_ids {
	int n;
	__u32 id[NAPI_MAX], pid[NAPI_MAX];
};

static void napi_attr(const struct nlattr *a, void *arg, int first)
{
	struct napi_ids *t = arg;
	__u32 v;

	if (first && t->n < NAPI_MAX) {
		t->id[t->n] = t->pid[t->n] = 0;
		t->n++;
	}
	if (!t->n || a->nla_len < NLA_HDRLEN + sizeof(v))
		return;
	memcpy(&v, (const char *)a + NLA_HDRLEN, sizeof(v));
	if (a->nla_type == NETDEV_A_NAPI_ID)
		t->id[t->n - 1] = v;
	else if (a->nla_type == NETDEV_A_NAPI_PID)
		t->pid[t->n - 1] = v;
}

/* The netdev family's id on netlink socket fd (timing out after 2 s):
 * 0, or -errno. */
static int netdev_family(int fd, __u16 *fam)
{
	struct timeval tv = { .tv_sec = 2 };	/* no answer */
	struct nlbuf m;
	int err;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -errno;
	memset(&m, 0, sizeof(m));
	m.nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m.nh.nlmsg_type = GENL_ID_CTRL;
	m.nh.nlmsg_flags = NLM_F_REQUEST;
	m.gh.cmd = CTRL_CMD_GETFAMILY;
	m.gh.version = 1;
	nl_put(&m, CTRL_ATTR_FAMILY_NAME, NETDEV_FAMILY, sizeof(NETDEV_FAMILY));
	*fam = 0;
	err = nl_talk(fd, &m, family_id, fam);
	return err ? err : *fam ? 0 : -ENOENT;
}

/* The pids of the NAPI threads of interface `ifname` (in this namespace)
 * into pid[NAPI_MAX]: how many (0: it polls in softirq), or -errno. Each
 * thread is named napi/IFNAME-ID: a pid whose name says otherwise is not
 * taken. */
static int napi_threads(int fd, __u16 fam, const char *ifname, __u32 *pid)
{
	struct nlbuf m;
	struct napi_ids t = { 0 };
	__u32 ifindex = if_nametoindex(ifname);
	int i, err, n = 0;

	if (!ifindex)
		return -ENODEV;
	memset(&m, 0, sizeof(m));
	m.nh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m.nh.nlmsg_type = fam;
	m.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	m.gh.cmd = NETDEV_CMD_NAPI_GET;
	m.gh.version = 1;
	nl_put(&m, NETDEV_A_NAPI_IFINDEX, &ifindex, sizeof(ifindex));
	err = nl_talk(fd, &m, napi_attr, &t);
	if (err)
		return err;
	for (i = 0; i < t.n; i++) {
		char path[64], comm[64], want[64];
		int cfd;
		ssize_t len;

		if (!t.pid[i])
			continue;
		snprintf(path, sizeof(path), "/proc/%u/comm", t.pid[i]);
		cfd = open(path, O_RDONLY | O_CLOEXEC);
		if (cfd < 0)
			continue;
		len = read(cfd, comm, sizeof(comm) - 1);
		close(cfd);
		comm[len > 0 ? len : 0] = 0;
		/* the kernel cuts a thread's name at 15 characters */
		snprintf(want, 16, "napi/%s-%u", ifname, t.id[i]);
		if (!strncmp(comm, want, strlen(want)))
			pid[n++] = t.pid[i];
	}
	return n;
}

/* The NAPI threads of interface `ifname` (in this namespace) run as the
 * kernel runs threaded interrupt handlers: SCHED_FIFO at RINX_TB_NAPI_PRIO.
 * 0, or -errno (-ESRCH: no thread found). */
static int napi_fifo(int fd, __u16 fam, const char *ifname)
{
	struct sched_param sp = { .sched_priority = RINX_TB_NAPI_PRIO };
	__u32 pid[NAPI_MAX];
	int i, n = napi_threads(fd, fam, ifname, pid);

	if (n < 0)
		return n;
	for (i = 0; i < n; i++)
		if (sched_setscheduler(pid[i], SCHED_FIFO, &sp))
			return -errno;
	return n ? 0 : -ESRCH;
}

int rinx_tb_napi_state(const char *netns, const char *ifname, int *fifo)
{
	__u32 pid[NAPI_MAX];
	int old, fd, n, i;
	__u16 fam;

	*fifo = 0;
	if (rinx_netns_enter(netns, &old))
		return -ENOENT;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	n = fd < 0 ? -errno : netdev_family(fd, &fam);
	if (!n)
		n = napi_threads(fd, fam, ifname, pid);
	for (i = 0; i < n; i++) {
		struct sched_param sp;

		if (sched_getscheduler(pid[i]) == SCHED_FIFO &&
		    !sched_getparam(pid[i], &sp) &&
		    sp.sched_priority == RINX_TB_NAPI_PRIO)
			(*fifo)++;
	}
	if (fd >= 0)
		close(fd);
	rinx_netns_leave(old);
	return n;
}

/* Every interface of namespace netns but lo polled by a kernel thread of
 * its own (threaded NAPI: /sys/class/net/IF/threaded) or in the softirq
 * of the CPU that scheduled it; once their XDP programs are attached (a
 * veth has no NAPI before). In a child: it enters the namespace and
 * mounts a sysfs of it in a mount namespace of its own, as `ip netns
 * exec` does (the caller's /sys shows the namespace it was mounted in).
 * The threads run at real-time priority (napi_fifo): on a host, NAPI
 * runs in softirq, ahead of every user thread. At the default priority a
 * thread got a fair share of the 2 cores beside 16 trainers and 35 other
 * NAPI threads, a switch port's 256-frame ring overflowed while its
 * thread waited, and the losses took the repair into multi-second stalls
 * (Rina, 2 racks x 8, an agent rack: 8 of 60 runs timed out; with the
 * priority, 0 of 150). */
int rinx_tb_napi(const char *netns, int threaded)
{
	int st, err;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		char path[320];
		struct dirent *e;
		int old, fd, bad = 0, nl = -1;
		__u16 fam = 0;
		DIR *d;

		if (rinx_netns_enter(netns, &old) || unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    umount2("/sys", MNT_DETACH) ||
		    mount("sysfs", "/sys", "sysfs", 0, NULL))
			_exit(2);
		if (threaded) {
			nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
				    NETLINK_GENERIC);
			if (nl < 0 || netdev_family(nl, &fam))
				_exit(3);
		}
		d = opendir("/sys/class/net");
		if (!d)
			_exit(2);
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.' || !strcmp(e->d_name, "lo"))
				continue;
			snprintf(path, sizeof(path), "/sys/class/net/%s/threaded",
				 e->d_name);
			fd = open(path, O_WRONLY | O_CLOEXEC);
			/* a veth polls by NAPI only with an XDP program (or
			 * GRO) on it; one without has nothing to set */
			if (fd < 0)
				bad = 1;
			else if (write(fd, threaded ? "1" : "0", 1) == 1) {
				if (threaded && napi_fifo(nl, fam, e->d_name))
					bad = 3;
			} else if (errno != EOPNOTSUPP) {
				bad = 1;
			}
			if (fd >= 0)
				close(fd);
		}
		closedir(d);
		_exit(bad);
	}
	while ((err = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (err < 0)
		return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		pr_warn("namespace %s: cannot set %s NAPI on its interfaces%s\n",
			netns, threaded ? "threaded" : "softirq",
			WIFEXITED(st) && WEXITSTATUS(st) == 3 ?
			" (its threads' priority: no netdev netlink family, "
			"or no thread found)" : "");
		return -EIO;
	}
	return 0;
}

int rinx_tb_batch(const char *tool, const char *netns, struct rinx_tb_buf *b,
		  int flags)
{
	char *av[8];
	posix_spawn_file_actions_t fa;
	int fd, err, st, a = 0, quiet = flags & RINX_TB_QUIET;
	size_t off = 0;
	pid_t pid;

	if (b->err)
		return b->err;
	av[a++] = (char *)tool;
	if (netns) {
		av[a++] = "-n";
		av[a++] = (char *)netns;
	}
	if (flags & RINX_TB_FORCE)
		av[a++] = "-force";
	av[a++] = "-batch";
	av[a++] = "-";
	av[a] = NULL;
	fd = memfd_create("rinx-batch", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (off < b->len) {
		ssize_t n = write(fd, b->p + off, b->len - off);

		if (n < 0) {
			err = -errno;
			close(fd);
			return err;
		}
		off += n;
	}
	lseek(fd, 0, SEEK_SET);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null",
						 O_WRONLY, 0);
	err = posix_spawnp(&pid, tool, &fa, NULL, av, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd);
	if (err) {
		pr_warn("cannot run %s: %s%s\n", tool, strerror(err),
			err == ENOENT ? " (install iproute2)" : "");
		return -err;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		if (!quiet)
			pr_warn("%s%s%s -batch failed\n", tool,
				netns ? " -n " : "", netns ? netns : "");
		return -EIO;
	}
	return 0;
}

int run_ip_batch(const char *netns, struct rinx_tb_buf *b)
{
	return rinx_tb_batch("ip", netns, b, 0);
}

/* Is netns `name` one of testbed `prefix`: <prefix>{h<n>,t<n>,sp}? */
int is_ours(const char *prefix, const char *name)
{
	size_t n = strlen(prefix);
	const char *p;

	if (strncmp(name, prefix, n))
		return 0;
	name += n;
	if (!strcmp(name, "sp"))
		return 1;
	if (*name != 'h' && *name != 't')
		return 0;
	if (!isdigit((unsigned char)name[1]))
		return 0;
	for (p = name + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return 1;
}

/* Adds "netns del" for each namespace of prefix to b; returns how many. */
int ours_to_batch(const char *prefix, struct rinx_tb_buf *b)
{
	struct dirent *e;
	DIR *d = opendir("/run/netns");
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !is_ours(prefix, e->d_name))
			continue;
		if (b)
			rinx_tb_put(b, "netns del %s\n", e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static void write_sysctl(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;	/* no IPv6 in this kernel: nothing to quiet */
	if (write(fd, val, strlen(val)) < 0)
		pr_debug("%s: %s\n", path, strerror(errno));
	close(fd);
}

/* No IPv6 in the testbed: no router/neighbour solicitations or MLD reports
 * on the wire, so the switch and host counters see only real traffic.
 * Hosts ask for ECN on their TCP connections (tcp_ecn=1; the default, 2,
 * only answers): the switch ports mark ECT frames, and TCP peers compared
 * with rinx on these links react to marks as rinx does. /proc/sys/net
 * follows the namespace of the calling thread. */
int ns_quiet(const char *ns, int host)
{
	int old, err;

	err = rinx_netns_enter(ns, &old);
	if (err)
		return err;
	write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
	if (host)
		write_sysctl("/proc/sys/net/ipv4/tcp_ecn", "1");
	return rinx_netns_leave(old);
}

static int ethtool_set(int sock, const char *ifname, __u32 cmd, __u32 val)
{
	struct ethtool_value ev = { .cmd = cmd, .data = val };
	struct ifreq ifr = {};

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ev;
	return ioctl(sock, SIOCETHTOOL, &ifr) ? -errno : 0;
}

/*
 * A frame redirected into a veth is lost unless the peer runs NAPI, i.e.
 * has an XDP program or GRO on: GRO keeps a host reachable while its rinx
 * program is down. Frames leave the host stack with a partial checksum that
 * nobody completes once XDP redirects them, so the host computes checksums
 * itself (tx checksum offload off).
 */
static int host_nic_prepare(const char *ifname)
{
	int sock, err;

	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	err = ethtool_set(sock, ifname, ETHTOOL_SGRO, 1);
	if (!err)
		err = ethtool_set(sock, ifname, ETHTOOL_STXCSUM, 0);
	close(sock);
	return err;
}

/* Loads the switch program in sw's namespace (ToR of rack sw->rack, or the
 * spine), fills its tables and attaches it to every port. An INA ToR also
 * gets its aggregator's identity and pins the aggregator's maps. */
/* Every host's interface readied (GRO, checksum offload) and, unless
 * no_nodes, its host program up, in its namespace. 0 or -errno. */
int hosts_up(const struct rinx_spec *s, int no_nodes)
{
	int i, old, err = 0;

	for (i = 0; i < s->nhosts && !err; i++) {
		const struct rinx_spec_host *h = &s->hosts[i];

		err = rinx_netns_enter(h->netns, &old);
		if (err)
			break;
		err = host_nic_prepare(h->ifname);
		if (err)
			pr_warn("host %s: cannot set GRO/checksum offload on "
				"%s: %s\n", h->name, h->ifname,
				strerror(-err));
		else if (!no_nodes)
			err = rinx_node_up(s, h);
		rinx_netns_leave(old);
	}
	return err;
}

void fmt_mac(char *buf, const __u8 *m)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
}

int make_links(const struct rinx_spec *s, const char *prefix,
	       int queues, int mtu)
{
	char a[NS_NAME_MAX], b[NS_NAME_MAX], mac[18];
	struct rinx_tb_buf cmd = {};
	int i, err;

	/* Both ends get the same queues: XDP on a veth refuses to attach
	 * when its peer has more tx queues than it has rx queues. */
	for (i = 0; i < s->nhosts; i++) {
		tor_ns(b, prefix, s->hosts[i].rack);
		fmt_mac(mac, s->hosts[i].mac);
		rinx_tb_put(&cmd, "link add eth0 netns %s address %s mtu %d "
			    "numtxqueues %d numrxqueues %d type veth "
			    "peer name p%d netns %s mtu %d "
			    "numtxqueues %d numrxqueues %d\n",
			    s->hosts[i].netns, mac, mtu, queues, queues,
			    i, b, mtu, queues, queues);
	}
	if (s->nracks > 1) {
		spine_ns(a, prefix);
		for (i = 0; i < s->nracks; i++) {
			tor_ns(b, prefix, i);
			rinx_tb_put(&cmd, "link add uplink netns %s mtu %d type veth "
				    "peer name t%d netns %s mtu %d\n", b, mtu,
				    i, a, mtu);
		}
	}
	err = run_ip_batch(NULL, &cmd);
	rinx_tb_free(&cmd);
	return err;
}

int config_host(const struct rinx_spec *s, int i)
{
	const struct rinx_spec_host *h = &s->hosts[i];
	char ip[INET_ADDRSTRLEN], mac[18];
	struct rinx_tb_buf cmd = {};
	int j, err;

	inet_ntop(AF_INET, &h->ip, ip, sizeof(ip));
	rinx_tb_put(&cmd, "link set lo up\nlink set dev %s up\n"
		    "addr add %s/16 dev %s\n", h->ifname, ip, h->ifname);
	for (j = 0; j < s->nhosts; j++) {
		if (j == i)
			continue;
		inet_ntop(AF_INET, &s->hosts[j].ip, ip, sizeof(ip));
		fmt_mac(mac, s->hosts[j].mac);
		rinx_tb_put(&cmd, "neigh replace %s lladdr %s nud permanent dev %s\n",
			    ip, mac, h->ifname);
	}
	for (j = 0; j < s->nracks; j++) {
		if (s->racks[j].ina != RINX_INA_SWITCH)
			continue;
		inet_ntop(AF_INET, &s->racks[j].ip, ip, sizeof(ip));
		fmt_mac(mac, s->racks[j].mac);
		rinx_tb_put(&cmd, "neigh replace %s lladdr %s nud permanent dev %s\n",
			    ip, mac, h->ifname);
	}
	err = run_ip_batch(h->netns, &cmd);
	rinx_tb_free(&cmd);
	return err;
}

int config_switch(const struct tb_switch *sw)
{
	struct rinx_tb_buf cmd = {};
	int i, err;

	rinx_tb_put(&cmd, "link set lo up\n");
	for (i = 0; i < sw->nports; i++)
		rinx_tb_put(&cmd, "link set dev %s up\n", sw->ifname[i]);
	err = run_ip_batch(sw->ns, &cmd);
	rinx_tb_free(&cmd);
	return err;
}
