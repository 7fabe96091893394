// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The emulated cluster (topology in tools/testbed.h).
 *
 * Namespaces, veths, addresses and neighbours are made by ip(8) in batch
 * mode: one process for the root namespace and one per testbed namespace,
 * each fed its commands on stdin (a memfd), never through a shell. The
 * switches are loaded and attached with libbpf from inside their namespace,
 * because a devmap resolves ifindexes in the namespace of the caller. They
 * are attached through netlink (no bpf_link): they stay when rinxctl exits
 * and go away with their namespace.
 */
#include <ctype.h>
#include <math.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tools/testbed.h"
#include "user/plan.h"
#include "user/pplan.h"
#include "user/torctl.h"
#include "switch.skel.h"

extern char **environ;

#define TB_NET_A	10	/* hosts are 10.71.<rack>.<h+1>/16 */
#define TB_NET_B	71
#define TB_AGG_HOST	254	/* an INA ToR's aggregator: 10.71.<rack>.254 */
#define NS_NAME_MAX	(RINX_TB_PREFIX_MAX + 8)

static const char *const sw_stat_names[RINX_SW_STAT_MAX] = {
	[RINX_SW_FWD] = "fwd",
	[RINX_SW_FLOOD] = "flood",
	[RINX_SW_DROP_SHORT] = "drop_short",
	[RINX_SW_DROP_NO_PORT] = "drop_no_port",
	[RINX_SW_DROP_HAIRPIN] = "drop_hairpin",
	[RINX_SW_INA_FWD] = "ina_fwd",
	[RINX_SW_INA_GROUP] = "ina_group",
	[RINX_SW_INA_DROP] = "ina_drop",
	[RINX_SW_INA_ABORTED] = "ina_aborted",
	[RINX_SW_GROUP] = "group",
	[RINX_SW_HAIRPIN_SELF] = "hairpin_self",
	[RINX_SW_DROP_NO_NEIGH] = "drop_no_neigh",
	[RINX_SW_FAULT_DROP] = "fault_drop",
	[RINX_SW_QUEUE_DROP] = "queue_drop",
	[RINX_SW_FAULT_DUP] = "fault_dup",
	[RINX_SW_FAULT_HOLD] = "fault_hold",
	[RINX_SW_FAULT_REORDER] = "fault_reorder",
	[RINX_SW_FAULT_HOLD_LOST] = "fault_hold_lost",
	[RINX_SW_FAULT_SKIP] = "fault_skip",
	[RINX_SW_ECN_MARK] = "ecn_mark",
	[RINX_SW_ECN_NOT_ECT] = "ecn_not_ect",
	[RINX_SW_CLASS_GROUP] = "class_group",
	[RINX_SW_CAP_DROP] = "cap_drop",
	[RINX_SW_CAP_MARK] = "cap_mark",
};

/* Maps of an INA ToR's aggregator, pinned under <pin>/<rack name>/. */
static const char *const agg_pinned_maps[] = {
	"jobs", "claims", "nodes", "hops", "aggs", "stats",
};

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

const char *rinx_sw_stat_name(int stat)
{
	if (stat < 0 || stat >= RINX_SW_STAT_MAX || !sw_stat_names[stat])
		return "?";
	return sw_stat_names[stat];
}

/* ---- growing text buffer for ip batches ---- */

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

static int run_ip_batch(const char *netns, struct rinx_tb_buf *b)
{
	return rinx_tb_batch("ip", netns, b, 0);
}

/* ---- names ---- */

int rinx_testbed_prefix_check(const char *prefix, char *err, size_t errlen)
{
	size_t i, n = prefix ? strlen(prefix) : 0;

	if (n < 1 || n > RINX_TB_PREFIX_MAX) {
		snprintf(err, errlen, "prefix must have 1..%d characters",
			 RINX_TB_PREFIX_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)prefix[i]) && prefix[i] != '_') {
			snprintf(err, errlen, "prefix '%s': only letters, "
				 "digits and '_' are allowed", prefix);
			return -EINVAL;
		}
	}
	return 0;
}

void rinx_testbed_spec_path(const char *prefix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.spec", RINX_TB_SPEC_DIR, prefix);
}

static void host_ns(char *buf, const char *prefix, int i)
{
	snprintf(buf, NS_NAME_MAX, "%sh%d", prefix, i);
}

static void tor_ns(char *buf, const char *prefix, int r)
{
	snprintf(buf, NS_NAME_MAX, "%st%d", prefix, r);
}

static void spine_ns(char *buf, const char *prefix)
{
	snprintf(buf, NS_NAME_MAX, "%ssp", prefix);
}

/* Is netns `name` one of testbed `prefix`: <prefix>{h<n>,t<n>,sp}? */
static int is_ours(const char *prefix, const char *name)
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
static int ours_to_batch(const char *prefix, struct rinx_tb_buf *b)
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

int rinx_testbed_spec_prefix(const struct rinx_spec *s, char *buf,
			     size_t len)
{
	const char *ns;
	size_t n;

	if (s->nhosts < 1 || !s->hosts[0].netns[0])
		return -EINVAL;
	/* Host 0's namespace is <prefix>h<digits>. */
	ns = s->hosts[0].netns;
	n = strlen(ns);
	while (n && isdigit((unsigned char)ns[n - 1]))
		n--;
	if (n < 2 || n == strlen(ns) || ns[n - 1] != 'h' || n - 1 >= len)
		return -EINVAL;
	memcpy(buf, ns, n - 1);
	buf[n - 1] = 0;
	return is_ours(buf, ns) ? 0 : -EINVAL;
}

/* ---- inside a namespace ---- */

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
static int ns_quiet(const char *ns, int host)
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

/* ---- switches ---- */

struct tb_switch {
	char ns[NS_NAME_MAX];
	int rack;			/* index in s->racks; -1: the spine */
	int nports;
	int uplink;			/* index in ifname; -1: none */
	char ifname[RINX_TB_MAX_PER_RACK + 1][IFNAMSIZ];
	int host_port[RINX_MAX_NODES];	/* host index -> index in ifname */
	int agg_port[RINX_TB_MAX_RACKS];/* rack -> port to its aggregator */
	int plain;			/* a plain switch (sw_plain) */
};

static __u64 mac_key(const __u8 mac[6])
{
	__u64 k = 0;

	memcpy(&k, mac, 6);
	return k;
}

static void agg_pin_dir(const struct rinx_spec *s,
			const struct rinx_spec_rack *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", s->pin, r->name);
}

/* Removes the pins of rack r's aggregator; idempotent. */
static void agg_unpin(const struct rinx_spec *s,
		      const struct rinx_spec_rack *r)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	size_t i;

	if (r->ina != RINX_INA_SWITCH || !r->name[0])
		return;
	agg_pin_dir(s, r, dir, sizeof(dir));
	for (i = 0; i < NELEM(agg_pinned_maps); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, agg_pinned_maps[i]);
		unlink(path);
	}
	rmdir(dir);
}

static int agg_pin(const struct rinx_spec *s, const struct rinx_spec_rack *r,
		   struct switch_bpf *skel)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	struct bpf_map *map;
	size_t i;
	int err;

	err = rinx_pin_root_ready(s->pin);
	if (err)
		return err;
	agg_pin_dir(s, r, dir, sizeof(dir));
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	for (i = 0; i < NELEM(agg_pinned_maps); i++) {
		map = bpf_object__find_map_by_name(skel->obj,
						   agg_pinned_maps[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, agg_pinned_maps[i]);
		if (!map || bpf_obj_pin(bpf_map__fd(map), path)) {
			err = map ? -errno : -ENOENT;
			pr_warn("aggregator %s: cannot pin %s: %s\n", r->name,
				path, strerror(-err));
			agg_unpin(s, r);
			return err;
		}
	}
	return 0;
}

static int map_set(int fd, const void *k, const void *v, const char *ns,
		   const char *what)
{
	if (bpf_map_update_elem(fd, k, v, BPF_ANY)) {
		int err = -errno;

		pr_warn("switch %s: %s: %s\n", ns, what, strerror(errno));
		return err;
	}
	return 0;
}

/* ---- links ---- */

static void link_pin_dir(const struct rinx_spec *s, const char *ns,
			 char *buf, size_t len)
{
	snprintf(buf, len, "%s/sw-%s", s->pin, ns);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * The host's side of its access link. A NIC sends its frames one after the
 * other at line rate; a veth sends them at once, so without this a host
 * stack's burst (a TCP window) would reach its ToR port in one instant and
 * fill the port's virtual queue, where on real links it arrives spaced and
 * leaves no queue, and TCP, whose ACKs the queue never delays, would not
 * be clocked to the link. A token bucket on the host's interface (burst
 * max(2 frames, 50 us of the rate), queue of 1000 frames as a NIC's
 * txqueuelen) serializes what the host's stack sends at the link's rate.
 * Frames sent by XDP or AF_XDP (rinx) bypass it: rinx paces itself.
 * rate 0: the bucket goes (its absence is no error).
 */
static int host_pace(const struct rinx_spec_host *h, __u32 rate_mbit)
{
	struct rinx_tb_buf cmd = {};
	__u32 burst = rate_mbit * 25 / 4;	/* 50 us at rate_mbit */
	int err;

	/* a burst of at least a frame of the largest MTU (tbf drops
	 * larger ones) */
	if (burst < RINX_TB_MTU_MAX + 14)
		burst = RINX_TB_MTU_MAX + 14;
	if (rate_mbit)
		rinx_tb_put(&cmd, "qdisc replace dev %s root tbf rate %umbit burst %u "
			    "limit %u\n", h->ifname, rate_mbit, burst,
			    1000 * (RINX_TB_MTU_MAX + 14));
	else
		rinx_tb_put(&cmd, "qdisc del dev %s root\n", h->ifname);
	err = rinx_tb_batch("tc", h->netns, &cmd,
			    !rate_mbit ? RINX_TB_QUIET : 0);
	rinx_tb_free(&cmd);
	if (!rate_mbit)
		return 0;
	if (err)
		pr_warn("host %s: cannot pace %s at %u Mbit/s (tc tbf)\n",
			h->name, h->ifname, rate_mbit);
	return err;
}

/* DCTCP's marking thresholds, 20 packets (30 KB) at 1 Gbit/s and 65 (~97
 * KB) at 10 Gbit/s, grow with the square root of the rate; below 1 Gbit/s
 * the same law, but never under two full frames. */
static __u32 dctcp_k(__u32 rate_mbit)
{
	double k = 30000.0 * sqrt(rate_mbit / 1000.0);

	return (__u32)(k < 2.0 * RINX_TB_BUFFER_MIN ? 2.0 * RINX_TB_BUFFER_MIN :
						      k);
}

/* The testbed marks at RINX_TB_ECN_JITTER times DCTCP's threshold: its
 * switches are programs on shared cores that take frames in bursts of up
 * to about a millisecond (a backlog that built up while they waited for a
 * core), which a hardware port would have seen spread out. At DCTCP's 20
 * packets those bursts alone marked 13-24% of a ring's blocks at 95% of
 * the link; at 4x (120 KB, about 1 ms at 1 Gbit/s) 1-2%, so a mark means
 * a backlog that lasts (docs/rinx.md). */
#define RINX_TB_ECN_JITTER	4
__u32 rinx_testbed_ecn_default(__u32 rate_mbit)
{
	return RINX_TB_ECN_JITTER * dctcp_k(rate_mbit);
}

/* Ten times DCTCP's threshold: 300 KB at 1 Gbit/s, 949 KB at 10 Gbit/s,
 * within what one port of a shallow-buffer ToR gets from its shared pool
 * (docs/rinx.md). */
__u32 rinx_testbed_buffer_default(__u32 rate_mbit)
{
	__u64 b = 10ULL * dctcp_k(rate_mbit);

	return b > RINX_SW_BUFFER_MAX ? RINX_SW_BUFFER_MAX : (__u32)b;
}

static void link_defaults(struct rinx_sw_link_set *f)
{
	if (!f->hold_ms)
		f->hold_ms = RINX_TB_HOLD_MS;
	if (f->drop_ppm > RINX_TB_PPM)
		f->drop_ppm = RINX_TB_PPM;
	if (f->dup_ppm > RINX_TB_PPM)
		f->dup_ppm = RINX_TB_PPM;
	if (f->reorder_ppm > RINX_TB_PPM)
		f->reorder_ppm = RINX_TB_PPM;
	if (f->rate_mbit > RINX_SW_RATE_MAX)
		f->rate_mbit = RINX_SW_RATE_MAX;
	if (f->buffer > RINX_SW_BUFFER_MAX)
		f->buffer = RINX_SW_BUFFER_MAX;
	if (f->rate_mbit && !f->buffer)
		f->buffer = rinx_testbed_buffer_default(f->rate_mbit);
	if (f->rate_mbit && !f->ecn)
		f->ecn = rinx_testbed_ecn_default(f->rate_mbit);
	f->resv = 0;
}

/* A fresh link value: settings f (defaults filled), queue empty, counters
 * zero, settings time now. */
static void link_fresh(struct rinx_sw_link *v, const struct rinx_sw_link_set *f)
{
	memset(v, 0, sizeof(*v));
	if (f)
		v->set = *f;
	link_defaults(&v->set);
	v->set_ns = mono_ns();
}

/*
 * Link state of port ifindex of a switch being attached: its `links`
 * entry, its held-frame slot (per CPU) and its duplication devmap (the
 * port under two keys, with the port's egress program: see `ports`).
 */
static int link_port_init(struct switch_bpf *skel, const char *ns,
			  __u32 ifindex, int egress_fd,
			  const struct rinx_sw_link_set *f)
{
	struct rinx_sw_link v;
	struct bpf_devmap_val dv = { .ifindex = ifindex };
	int ncpu = libbpf_num_possible_cpus(), err, fd;
	size_t hsz = bpf_map__value_size(skel->maps.held);
	void *held;
	__u32 k;

	if (ncpu <= 0)
		return -EINVAL;
	link_fresh(&v, f);
	err = map_set(bpf_map__fd(skel->maps.links), &ifindex, &v, ns,
		      "links");
	if (err)
		return err;
	held = calloc(ncpu, (hsz + 7) & ~(size_t)7);
	if (!held)
		return -ENOMEM;
	err = map_set(bpf_map__fd(skel->maps.held), &ifindex, held, ns,
		      "held");
	free(held);
	if (err)
		return err;
	fd = bpf_map_create(BPF_MAP_TYPE_DEVMAP_HASH, "sw_dup", sizeof(__u32),
			    sizeof(dv), 2, NULL);
	if (fd < 0) {
		err = -errno;
		pr_warn("switch %s: dup devmap: %s\n", ns, strerror(errno));
		return err;
	}
	dv.bpf_prog.fd = egress_fd;
	for (k = 0; k < 2 && !err; k++)
		err = map_set(fd, &k, &dv, ns, "dup devmap");
	if (!err)
		err = map_set(bpf_map__fd(skel->maps.dups), &ifindex, &fd, ns,
			      "dups");
	close(fd);
	return err;
}

static int link_pin(const struct rinx_spec *s, const char *ns,
		    struct switch_bpf *skel)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	int err;

	if (bpf_map__value_size(skel->maps.links) !=
	    sizeof(struct rinx_sw_link)) {
		pr_warn("switch %s: links value is %u bytes, want %zu\n", ns,
			bpf_map__value_size(skel->maps.links),
			sizeof(struct rinx_sw_link));
		return -EINVAL;
	}
	err = rinx_pin_root_ready(s->pin);
	if (err)
		return err;
	link_pin_dir(s, ns, dir, sizeof(dir));
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/links", dir);
	unlink(path);
	if (bpf_obj_pin(bpf_map__fd(skel->maps.links), path)) {
		err = -errno;
		pr_warn("switch %s: cannot pin %s: %s\n", ns, path,
			strerror(errno));
		rmdir(dir);
		return err;
	}
	return 0;
}

static void link_unpin(const struct rinx_spec *s, const char *ns)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];

	link_pin_dir(s, ns, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/links", dir);
	unlink(path);
	/* a topology switch's (tt_pins) */
	snprintf(path, sizeof(path), "%s/flows", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bcast", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/port_egress", dir);
	unlink(path);
	rmdir(dir);
}

/* Loads the switch program in sw's namespace (ToR of rack sw->rack, or the
 * spine), fills its tables and attaches it to every port. An INA ToR also
 * gets its aggregator's identity and pins the aggregator's maps. */
/* Every host's interface readied (GRO, checksum offload) and, unless
 * no_nodes, its host program up, in its namespace. 0 or -errno. */
static int hosts_up(const struct rinx_spec *s, int no_nodes)
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

/* Pins a loaded switch's maps: the aggregator's of rack ina (NULL: it
 * does not aggregate) and the links'. *pinned says what was pinned (1:
 * the aggregator's, 2: both) for switch_unpin. 0 or -errno. */
static int switch_pin(const struct rinx_spec *s,
		      const struct rinx_spec_rack *ina, const char *ns,
		      struct switch_bpf *skel, int *pinned)
{
	int err;

	*pinned = 0;
	if (ina) {
		err = agg_pin(s, ina, skel);
		if (err)
			return err;
		*pinned = 1;
	}
	err = link_pin(s, ns, skel);
	if (!err)
		*pinned = 2;
	return err;
}

/* Undoes what switch_pin pinned (a switch that failed to come up). */
static void switch_unpin(const struct rinx_spec *s,
			 const struct rinx_spec_rack *ina, const char *ns,
			 int pinned)
{
	if (pinned && ina)
		agg_unpin(s, ina);
	if (pinned == 2)
		link_unpin(s, ns);
}

/* Opens and loads the switch program for switch namespace ns (the caller
 * is in it): rack id (0xff: the spine), a topology switch or not, the
 * aggregator's MAC if it aggregates (NULL: not). 0 or -errno, with a
 * message; *skel is set whenever it was opened (the caller destroys it). */
static int switch_load(const struct rinx_spec *s, const char *ns, __u8 rack,
		       int topo, int plain, const __u8 *ina_mac,
		       struct switch_bpf **skel)
{
	struct switch_bpf *k;
	int err;

	*skel = k = switch_bpf__open();
	if (!k) {
		err = -errno;
		pr_warn("switch %s: cannot open the switch program: %s\n", ns,
			strerror(errno));
		return err;
	}
	k->rodata->sw_rack = rack;
	k->rodata->sw_topo = topo;
	k->rodata->sw_plain = plain;
	k->rodata->ina_port_be = htons(s->port);
	k->rodata->ina_window = s->window;
	if (ina_mac) {
		memcpy((void *)k->rodata->ina_mac, ina_mac, 6);
		err = bpf_map__set_max_entries(k->maps.aggs,
					       s->jobs * s->window);
		if (err)
			return err;
	}
	rinx_size_tables(k->maps.jobs, k->maps.claims, k->maps.nodes,
			 k->maps.hops, s->jobs);
	err = switch_bpf__load(k);
	if (err)
		pr_warn("switch %s: switch program rejected by the kernel: %s "
			"(rerun with -v for the verifier log)\n", ns,
			strerror(-err));
	return err;
}

/* Attaches the switch program prog to the n ports of switch namespace ns
 * (the caller is in it). 0 or -errno, with a message. */
static int attach_ports(const struct rinx_spec *s, const char *ns,
			const char (*ifname)[IFNAMSIZ], const int *ifindex,
			int n, int prog, __u32 flags)
{
	int i, err;

	for (i = 0; i < n; i++) {
		err = bpf_xdp_attach(ifindex[i], prog, flags, NULL);
		if (err) {
			pr_warn("switch %s: cannot attach XDP (%s mode) to %s: "
				"%s\n", ns, s->mode == RINX_XDP_GENERIC ?
				"generic" : "native", ifname[i], strerror(-err));
			return err;
		}
	}
	return 0;
}

static int switch_attach(const struct rinx_spec *s, const struct tb_switch *sw,
			 const struct rinx_sw_link_set *link)
{
	__u32 flags = XDP_FLAGS_UPDATE_IF_NOEXIST |
		      (s->mode == RINX_XDP_GENERIC ? XDP_FLAGS_SKB_MODE :
						     XDP_FLAGS_DRV_MODE);
	const struct rinx_spec_rack *ina = NULL;
	int ifindex[RINX_TB_MAX_PER_RACK + 1];
	struct switch_bpf *skel = NULL;
	int old, err, i, fd, port_egress, group_egress;
	int pinned = 0;

	if (sw->rack >= 0 && s->racks[sw->rack].ina == RINX_INA_SWITCH)
		ina = &s->racks[sw->rack];
	err = rinx_netns_enter(sw->ns, &old);
	if (err)
		return err;
	err = switch_load(s, sw->ns,
			  sw->rack >= 0 ? s->racks[sw->rack].id : 0xff, 0,
			  sw->plain, ina ? ina->mac : NULL, &skel);
	if (err)
		goto out;
	port_egress = bpf_program__fd(skel->progs.rinx_port_egress);
	group_egress = bpf_program__fd(skel->progs.rinx_group_egress);
	for (i = 0; i < sw->nports; i++) {
		__u32 idx = if_nametoindex(sw->ifname[i]);
		struct bpf_devmap_val v = { .ifindex = idx };

		if (!idx) {
			err = -ENODEV;
			pr_warn("switch %s: no port %s\n", sw->ns,
				sw->ifname[i]);
			goto out;
		}
		ifindex[i] = idx;
		/* see `ports` in switch.bpf.c: a port's egress program must
		 * be the same in every map (ports, groups, dups) */
		v.bpf_prog.fd = i == sw->uplink && sw->rack >= 0 ?
				group_egress : port_egress;
		err = map_set(bpf_map__fd(skel->maps.ports), &idx, &v, sw->ns,
			      "devmap");
		if (!err)
			err = link_port_init(skel, sw->ns, idx,
					     v.bpf_prog.fd, link);
		if (err)
			goto out;
	}
	/* MAC table: every host, and the aggregators of the other racks
	 * (a ToR's own aggregator takes its frames before the table). */
	fd = bpf_map__fd(skel->maps.macs);
	for (i = 0; i < s->nhosts; i++) {
		struct rinx_sw_port p = {
			.port = ifindex[sw->host_port[i]],
		};
		__u64 k = mac_key(s->hosts[i].mac);

		err = map_set(fd, &k, &p, sw->ns, "mac table");
		if (err)
			goto out;
	}
	for (i = 0; i < s->nracks; i++) {
		const struct rinx_spec_rack *r = &s->racks[i];
		struct rinx_sw_port p = {};
		__u64 k = mac_key(r->mac);

		if (r->ina != RINX_INA_SWITCH || i == sw->rack ||
		    sw->agg_port[i] < 0)
			continue;
		p.port = ifindex[sw->agg_port[i]];
		err = map_set(fd, &k, &p, sw->ns, "mac table");
		if (err)
			goto out;
	}
	/* IP -> MAC of every node, for the uplink copy of a group frame. */
	fd = bpf_map__fd(skel->maps.neigh);
	for (i = 0; i < s->nhosts; i++) {
		__u64 m = mac_key(s->hosts[i].mac);

		err = map_set(fd, &s->hosts[i].ip, &m, sw->ns, "neigh");
		if (err)
			goto out;
	}
	for (i = 0; i < s->nracks; i++) {
		__u64 m = mac_key(s->racks[i].mac);

		if (s->racks[i].ina != RINX_INA_SWITCH)
			continue;
		err = map_set(fd, &s->racks[i].ip, &m, sw->ns, "neigh");
		if (err)
			goto out;
	}
	/* The rack's groups: host ports, and host ports + uplink. */
	for (i = 0; sw->rack >= 0 && i < sw->nports; i++) {
		struct bpf_devmap_val v = {
			.ifindex = ifindex[i],
			.bpf_prog.fd = port_egress,
		};

		if (i == sw->uplink) {
			v.bpf_prog.fd = group_egress;
		} else {
			err = map_set(bpf_map__fd(skel->maps.group_hosts),
				      &ifindex[i], &v, sw->ns, "group_hosts");
			if (err)
				goto out;
		}
		err = map_set(bpf_map__fd(skel->maps.group_all), &ifindex[i],
			      &v, sw->ns, "group_all");
		if (err)
			goto out;
	}
	err = switch_pin(s, ina, sw->ns, skel, &pinned);
	if (err)
		goto out;
	err = attach_ports(s, sw->ns, sw->ifname, ifindex, sw->nports,
			   bpf_program__fd(skel->progs.rinx_switch), flags);
out:
	if (err)
		switch_unpin(s, ina, sw->ns, pinned);
	/* The attached program holds itself and its maps. */
	switch_bpf__destroy(skel);
	rinx_netns_leave(old);
	return err;
}

int rinx_testbed_switch_stats(const char *netns, const char *ifname,
			      __u64 out[RINX_SW_STAT_MAX])
{
	struct bpf_prog_info pinfo = {};
	__u32 map_ids[64], plen = sizeof(pinfo), prog_id = 0, i;
	int old, err, ifindex, fd = -1, mfd = -1, ncpu;

	memset(out, 0, sizeof(__u64) * RINX_SW_STAT_MAX);
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	err = rinx_netns_enter(netns, &old);
	if (err)
		return err;
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		err = -ENODEV;
		goto out;
	}
	err = bpf_xdp_query_id(ifindex, 0, &prog_id);
	if (!err && !prog_id)
		err = -ENOENT;
	if (err)
		goto out;
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	pinfo.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
	pinfo.map_ids = (__u64)(unsigned long)map_ids;
	if (bpf_obj_get_info_by_fd(fd, &pinfo, &plen)) {
		err = -errno;
		goto out;
	}
	err = -ENOENT;
	for (i = 0; i < pinfo.nr_map_ids && i < 64; i++) {
		struct bpf_map_info minfo = {};
		__u32 mlen = sizeof(minfo);

		mfd = bpf_map_get_fd_by_id(map_ids[i]);
		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &minfo, &mlen) &&
		    !strcmp(minfo.name, "sw_stats"))
			break;
		close(mfd);
		mfd = -1;
	}
	if (mfd >= 0) {
		__u64 v[ncpu];
		__u32 k;
		int c;

		err = 0;
		for (k = 0; k < RINX_SW_STAT_MAX; k++) {
			if (bpf_map_lookup_elem(mfd, &k, v)) {
				err = -errno;
				break;
			}
			for (c = 0; c < ncpu; c++)
				out[k] += v[c];
		}
		close(mfd);
	}
out:
	if (fd >= 0)
		close(fd);
	rinx_netns_leave(old);
	return err;
}

/* ---- pins and spec files ---- */

/* Removes <pin>/<node>/<files> left under the testbed's own pin
 * directory, then the directory (and its bpffs mount, if it has one). */
static void pin_dir_remove(const char *pin)
{
	char path[RINX_PATH_MAX + 2 * 256 + 2];
	struct dirent *e, *f;
	struct stat st, pst;
	char parent[RINX_PATH_MAX];
	char *slash;
	DIR *d, *sub;

	d = opendir(pin);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin, e->d_name);
		sub = opendir(path);
		if (!sub) {
			unlink(path);
			continue;
		}
		while ((f = readdir(sub))) {
			if (f->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", pin,
				 e->d_name, f->d_name);
			unlink(path);
		}
		closedir(sub);
		snprintf(path, sizeof(path), "%s/%s", pin, e->d_name);
		rmdir(path);
	}
	closedir(d);
	snprintf(parent, sizeof(parent), "%s", pin);
	slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = 0;
	if (!stat(pin, &st) && !stat(parent, &pst) && st.st_dev != pst.st_dev)
		umount2(pin, MNT_DETACH);
	rmdir(pin);
}

static int pin_is_ours(const struct rinx_spec *s, const char *prefix)
{
	const char *base = strrchr(s->pin, '/');

	return base && !strcmp(base + 1, prefix);
}

static int mkdir_parent(const char *path)
{
	char dir[RINX_PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Removes everything of testbed prefix that s (may be NULL) describes. */
static int teardown(const struct rinx_spec *s, const char *prefix,
		    const char *spec_path, int *removed)
{
	char pin[RINX_PATH_MAX];
	struct rinx_tb_buf b = {};
	int i, n, err = 0;

	if (s) {
		/* Unpinning the link detaches the host program. */
		for (i = 0; i < s->nhosts; i++)
			rinx_node_down(s, &s->hosts[i]);
		for (i = 0; i < s->nracks; i++)
			agg_unpin(s, &s->racks[i]);
		if (pin_is_ours(s, prefix))
			pin_dir_remove(s->pin);
	} else {
		snprintf(pin, sizeof(pin), "%s/%s", RINX_TB_PIN_ROOT, prefix);
		pin_dir_remove(pin);
	}
	n = ours_to_batch(prefix, &b);
	if (n)
		err = run_ip_batch(NULL, &b);
	rinx_tb_free(&b);
	if (removed)
		*removed = err ? 0 : n;
	if (spec_path)
		unlink(spec_path);
	return err;
}

/* ---- up ---- */

static void build_spec(const struct rinx_testbed_opts *o,
		       struct rinx_spec *s)
{
	int r, h, i = 0;

	rinx_spec_init(s);
	s->port = o->port ? o->port : RINX_DEFAULT_PORT;
	/* The spec's defaults (window, jobs): the memory a host pins stays
	 * within RINX_NODE_MEM_BUDGET whatever the tensors. */
	s->window = o->window ? o->window : RINX_DEFAULT_WINDOW;
	if (o->jobs)
		s->jobs = o->jobs;
	s->mode = o->mode;
	snprintf(s->pin, sizeof(s->pin), "%s/%s",
		 o->pin ? o->pin : RINX_TB_PIN_ROOT, o->prefix);
	s->nracks = o->racks;
	for (r = 0; r < o->racks; r++) {
		struct rinx_spec_rack *k = &s->racks[r];

		k->id = r;
		k->ina = o->ina ? o->ina[r] : RINX_INA_NONE;
		if (k->ina == RINX_INA_SWITCH) {
			/* The aggregator lives in the ToR: 10.71.<r>.254,
			 * 02:72:78:fe:<r>:01 (hosts use .1-.32, 00:<r>). */
			__u8 mac[6] = { 0x02, 0x72, 0x78, 0xfe, r, 0x01 };

			snprintf(k->name, sizeof(k->name), "agg%d", r);
			memcpy(k->mac, mac, 6);
			k->ip = htonl(TB_NET_A << 24 | TB_NET_B << 16 | r << 8 |
				      TB_AGG_HOST);
			tor_ns(k->netns, o->prefix, r);
		}
		for (h = 0; h < o->hosts_per_rack; h++, i++) {
			struct rinx_spec_host *x = &s->hosts[i];
			__u8 mac[6] = { 0x02, 0x72, 0x78, 0, r, h + 1 };

			snprintf(x->name, sizeof(x->name), "h%d", i);
			x->rank = i;
			x->rack = r;
			snprintf(x->ifname, sizeof(x->ifname), "eth0");
			memcpy(x->mac, mac, 6);
			x->ip = htonl(TB_NET_A << 24 | TB_NET_B << 16 | r << 8 |
				      (h + 1));
			host_ns(x->netns, o->prefix, i);
			x->link_mbit = o->link ? o->link->rate_mbit : 0;
		}
		if (o->racks > 1)
			k->uplink_mbit = o->link ? o->link->rate_mbit : 0;
	}
	s->nhosts = i;
}

static void fmt_mac(char *buf, const __u8 *m)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
}

static int make_links(const struct rinx_spec *s, const char *prefix,
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

static int config_host(const struct rinx_spec *s, int i)
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

static int config_switch(const struct tb_switch *sw)
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

/* Switch r of the racks (r == nracks: the spine). */
static void switch_layout(const struct rinx_spec *s, const char *prefix,
			  int r, struct tb_switch *sw)
{
	int i, up = -1;

	memset(sw, 0, sizeof(*sw));
	sw->uplink = -1;
	if (r == s->nracks) {
		sw->rack = -1;
		spine_ns(sw->ns, prefix);
		for (i = 0; i < s->nracks; i++) {
			snprintf(sw->ifname[sw->nports++], IFNAMSIZ, "t%d", i);
			sw->agg_port[i] = i;
		}
		for (i = 0; i < s->nhosts; i++)
			sw->host_port[i] = s->hosts[i].rack;
		return;
	}
	sw->rack = r;
	tor_ns(sw->ns, prefix, r);
	for (i = 0; i < s->nhosts; i++) {
		if (s->hosts[i].rack != r)
			continue;
		sw->host_port[i] = sw->nports;
		snprintf(sw->ifname[sw->nports++], IFNAMSIZ, "p%d", i);
	}
	if (s->nracks > 1) {
		up = sw->nports;
		sw->uplink = up;
		snprintf(sw->ifname[sw->nports++], IFNAMSIZ, "uplink");
	}
	for (i = 0; i < s->nhosts; i++)
		if (s->hosts[i].rack != r)
			sw->host_port[i] = up;
	/* Another rack's aggregator is behind the uplink; this rack's own
	 * is the switch itself (no table entry). */
	for (i = 0; i < s->nracks; i++)
		sw->agg_port[i] = i == r ? -1 : up;
}

static int check_opts(const struct rinx_testbed_opts *o)
{
	char err[128];
	int r;

	if (rinx_testbed_prefix_check(o->prefix, err, sizeof(err))) {
		pr_warn("%s\n", err);
		return -EINVAL;
	}
	if (o->racks < 1 || o->racks > RINX_TB_MAX_RACKS) {
		pr_warn("racks must be 1..%d\n", RINX_TB_MAX_RACKS);
		return -EINVAL;
	}
	if (o->hosts_per_rack < 1 ||
	    o->hosts_per_rack > RINX_TB_MAX_PER_RACK) {
		pr_warn("hosts per rack must be 1..%d\n",
			RINX_TB_MAX_PER_RACK);
		return -EINVAL;
	}
	if (o->racks * o->hosts_per_rack > RINX_MAX_NODES) {
		pr_warn("at most %d hosts (asked for %d x %d)\n",
			RINX_MAX_NODES, o->racks, o->hosts_per_rack);
		return -EINVAL;
	}
	if (o->mode != RINX_XDP_NATIVE && o->mode != RINX_XDP_GENERIC) {
		pr_warn("mode must be native or generic\n");
		return -EINVAL;
	}
	if (o->mtu && (o->mtu < RINX_TB_MTU_MIN || o->mtu > RINX_TB_MTU_MAX)) {
		pr_warn("mtu must be %d..%d (rinx frames need at least %d)\n",
			RINX_TB_MTU_MIN, RINX_TB_MTU_MAX, RINX_TB_MTU_MIN);
		return -EINVAL;
	}
	if (o->queues < 0 || o->queues > RINX_TB_MAX_QUEUES) {
		pr_warn("queues must be 1..%d\n", RINX_TB_MAX_QUEUES);
		return -EINVAL;
	}
	if (o->pin && (o->pin[0] != '/' ||
		       strlen(o->pin) + RINX_TB_PREFIX_MAX + 2 >
		       RINX_PATH_MAX - RINX_NAME_MAX)) {
		pr_warn("pin root must be a short absolute path\n");
		return -EINVAL;
	}
	if (o->spec_out && strlen(o->spec_out) >= RINX_PATH_MAX) {
		pr_warn("spec path too long\n");
		return -EINVAL;
	}
	for (r = 0; o->ina && r < o->racks; r++) {
		if (o->ina[r] < RINX_INA_NONE || o->ina[r] > RINX_INA_AGENT) {
			pr_warn("rack %d: bad INA kind\n", r);
			return -EINVAL;
		}
		if (o->plain && o->ina[r] == RINX_INA_SWITCH) {
			pr_warn("rack %d: a plain ToR cannot aggregate (ina "
				"switch); use agent or none\n", r);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- the INA ToRs' control plane ---- */

/* The control daemon of rack r's ToR, in the ToR's namespace: detached
 * (double fork), it serves until the ToR's pins go (down, ina-off). */
static int torctl_spawn(const struct rinx_spec *s, const char *ns,
			const struct rinx_spec_rack *r)
{
	char dir[RINX_PATH_MAX];
	pid_t pid, w;
	int st, old, fd;

	agg_pin_dir(s, r, dir, sizeof(dir));
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		if (fork())
			_exit(0);
		setsid();
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		for (fd = 3; fd < 1024; fd++)
			close(fd);
		if (rinx_netns_enter(ns, &old))
			_exit(1);
		/* a switch's control CPU is its own; here it shares the
		 * cores with trainers that poll: it answers first */
		setpriority(PRIO_PROCESS, 0, -10);
		prctl(PR_SET_NAME, "rinx-torctl");
		_exit(rinx_torctl_serve(dir, r->ip, RINX_TORCTL_PORT, NULL) ?
		      1 : 0);
	}
	do
		w = waitpid(pid, &st, 0);
	while (w < 0 && errno == EINTR);
	return 0;
}

/* Every INA ToR gets a management link to its rack's agent (the ToR's
 * address on the ToR's side, a route to it on the agent's) and its control
 * daemon: the job's configuration travels to the ToR in messages. */
static int torctl_up(const struct rinx_spec *s)
{
	char ns[NS_NAME_MAX], ip[INET_ADDRSTRLEN], hip[INET_ADDRSTRLEN];
	const struct rinx_spec_host *h;
	struct rinx_tb_buf cmd = {};
	int i, a, err = 0;

	for (i = 0; i < s->nracks && !err; i++) {
		const struct rinx_spec_rack *r = &s->racks[i];

		if (r->ina != RINX_INA_SWITCH)
			continue;
		a = rinx_plan_agent_of_rack(s, i);
		h = a >= 0 ? rinx_spec_rank(s, a) : NULL;
		if (!h)
			continue;	/* hostless: rank 0 writes its maps */
		snprintf(ns, sizeof(ns), "%s", r->netns);
		inet_ntop(AF_INET, &r->ip, ip, sizeof(ip));
		inet_ntop(AF_INET, &h->ip, hip, sizeof(hip));
		rinx_tb_put(&cmd, "link add ctl netns %s type veth peer name "
			    "torctl netns %s\n", ns, h->netns);
		err = run_ip_batch(NULL, &cmd);
		rinx_tb_free(&cmd);
		if (err)
			break;
		rinx_tb_put(&cmd, "link set ctl up\naddr add %s/32 dev ctl\n"
			    "route add %s/32 dev ctl\n", ip, hip);
		err = run_ip_batch(ns, &cmd);
		rinx_tb_free(&cmd);
		if (err)
			break;
		rinx_tb_put(&cmd, "link set torctl up\nroute add %s/32 dev "
			    "torctl\n", ip);
		err = run_ip_batch(h->netns, &cmd);
		rinx_tb_free(&cmd);
		if (!err)
			err = torctl_spawn(s, ns, r);
	}
	return err;
}

static int topo_up(const struct rinx_testbed_opts *o,
		   struct rinx_spec *spec_out);
static void topo_path_of(const char *spec_path, char *buf, size_t len);

int rinx_testbed_up(const struct rinx_testbed_opts *o,
		    struct rinx_spec *spec_out)
{
	char spec_path[RINX_PATH_MAX], ns[NS_NAME_MAX], msg[160];
	struct rinx_spec *s;
	struct tb_switch *sw;
	struct rinx_tb_buf cmd = {};
	int i, n, err;

	err = check_opts(o);
	if (err)
		return err;
	n = ours_to_batch(o->prefix, NULL);
	if (n) {
		pr_warn("testbed %s exists (%d namespaces); run "
			"'rinxctl testbed down %s' first\n", o->prefix, n,
			o->prefix);
		return -EEXIST;
	}
	if (o->topo || o->gen)
		return topo_up(o, spec_out);
	if (o->spec_out)
		snprintf(spec_path, sizeof(spec_path), "%s", o->spec_out);
	else
		rinx_testbed_spec_path(o->prefix, spec_path,
				       sizeof(spec_path));
	s = calloc(1, sizeof(*s));
	sw = calloc(1, sizeof(*sw));
	if (!s || !sw) {
		free(s);
		free(sw);
		return -ENOMEM;
	}
	build_spec(o, s);
	err = rinx_spec_check(s, msg, sizeof(msg));
	if (err) {
		pr_warn("testbed spec: %s\n", msg);
		goto out;
	}

	/* From here on a failure removes what was made, newest first:
	 * host programs and pins, then the namespaces (which takes the
	 * veths and the switches with them). */
	for (i = 0; i < s->nhosts; i++)
		rinx_tb_put(&cmd, "netns add %s\n", s->hosts[i].netns);
	for (i = 0; i < s->nracks; i++) {
		tor_ns(ns, o->prefix, i);
		rinx_tb_put(&cmd, "netns add %s\n", ns);
	}
	if (s->nracks > 1) {
		spine_ns(ns, o->prefix);
		rinx_tb_put(&cmd, "netns add %s\n", ns);
	}
	err = run_ip_batch(NULL, &cmd);
	rinx_tb_free(&cmd);
	if (err)
		goto fail;
	for (i = 0; i < s->nhosts && !err; i++)
		err = ns_quiet(s->hosts[i].netns, 1);
	for (i = 0; i <= s->nracks && !err; i++) {
		if (i == s->nracks && s->nracks == 1)
			break;
		switch_layout(s, o->prefix, i, sw);
		err = ns_quiet(sw->ns, 0);
	}
	if (err)
		goto fail;
	err = make_links(s, o->prefix, o->queues ? o->queues : 1,
			 o->mtu ? o->mtu : RINX_TB_MTU);
	if (err)
		goto fail;
	for (i = 0; i < s->nhosts; i++) {
		err = config_host(s, i);
		if (!err && s->hosts[i].link_mbit)
			err = host_pace(&s->hosts[i], s->hosts[i].link_mbit);
		if (err)
			goto fail;
	}
	for (i = 0; i <= s->nracks; i++) {
		if (i == s->nracks && s->nracks == 1)
			break;
		switch_layout(s, o->prefix, i, sw);
		sw->plain = o->plain;
		err = config_switch(sw);
		if (!err)
			err = switch_attach(s, sw, o->link);
		if (err)
			goto fail;
	}
	err = hosts_up(s, o->no_nodes);
	if (!err)
		err = torctl_up(s);
	if (err)
		goto fail;
	if (!o->spec_out) {
		err = mkdir_parent(spec_path);
		if (err) {
			pr_warn("cannot create the directory of %s: %s\n",
				spec_path, strerror(-err));
			goto fail;
		}
	}
	err = rinx_spec_save(spec_path, s);
	if (err) {
		pr_warn("cannot write %s: %s\n", spec_path, strerror(-err));
		unlink(spec_path);
		goto fail;
	}
	if (spec_out)
		*spec_out = *s;
	goto out;
fail:
	teardown(s, o->prefix, NULL, NULL);
out:
	free(sw);
	free(s);
	return err;
}

/* ---- down ---- */

int rinx_testbed_down(const char *what, int *removed)
{
	char prefix[RINX_TB_PREFIX_MAX + 1], path[RINX_PATH_MAX], msg[160];
	struct rinx_spec *s = NULL;
	size_t n = what ? strlen(what) : 0;
	int by_path, err;

	if (removed)
		*removed = 0;
	if (!n)
		return -EINVAL;
	by_path = strchr(what, '/') || (n > 5 && !strcmp(what + n - 5,
							   ".spec"));
	if (by_path) {
		if (n >= sizeof(path))
			return -ENAMETOOLONG;
		snprintf(path, sizeof(path), "%s", what);
	} else {
		if (rinx_testbed_prefix_check(what, msg, sizeof(msg))) {
			pr_warn("%s\n", msg);
			return -EINVAL;
		}
		snprintf(prefix, sizeof(prefix), "%s", what);
		rinx_testbed_spec_path(prefix, path, sizeof(path));
	}
	if (access(path, F_OK) == 0) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		err = rinx_spec_load(path, s, msg, sizeof(msg));
		if (err) {
			pr_warn("%s: %s\n", path, msg);
			goto out;
		}
		if (rinx_testbed_spec_prefix(s, msg, sizeof(msg)) ||
		    strlen(msg) > RINX_TB_PREFIX_MAX ||
		    (!by_path && strcmp(msg, prefix))) {
			pr_warn("%s does not describe testbed %s\n", path,
				by_path ? "namespaces" : prefix);
			err = -EINVAL;
			goto out;
		}
		snprintf(prefix, sizeof(prefix), "%s", msg);
	} else if (by_path) {
		err = -errno;
		pr_warn("%s: %s\n", path, strerror(-err));
		return err;
	}
	/* a topology testbed's topology file, written beside its spec */
	if (s && s->topo[0]) {
		char tp[RINX_PATH_MAX + 8];

		topo_path_of(path, tp, sizeof(tp));
		if (!strcmp(tp, s->topo))
			unlink(tp);
	}
	err = teardown(s, prefix, s ? path : NULL, removed);
out:
	free(s);
	return err;
}

/* ---- links of a running testbed ---- */

/* The spec of testbed `what` (PREFIX or SPEC), its prefix and (path, may be
 * NULL; RINX_PATH_MAX bytes) the spec's file. */
static int tb_load(const char *what, struct rinx_spec *s, char *prefix,
		   size_t plen, char *spec_path)
{
	char path[RINX_PATH_MAX], msg[160];
	size_t n = what ? strlen(what) : 0;
	int err;

	if (!n)
		return -EINVAL;
	if (strchr(what, '/') || (n > 5 && !strcmp(what + n - 5, ".spec"))) {
		if (n >= sizeof(path))
			return -ENAMETOOLONG;
		snprintf(path, sizeof(path), "%s", what);
	} else {
		if (rinx_testbed_prefix_check(what, msg, sizeof(msg))) {
			pr_warn("%s\n", msg);
			return -EINVAL;
		}
		rinx_testbed_spec_path(what, path, sizeof(path));
	}
	err = rinx_spec_load(path, s, msg, sizeof(msg));
	if (err) {
		pr_warn("%s: %s\n", path, err == -ENOENT ?
			"no such testbed spec" : msg);
		return err;
	}
	if (rinx_testbed_spec_prefix(s, prefix, plen)) {
		pr_warn("%s is not a testbed spec\n", path);
		return -EINVAL;
	}
	if (spec_path)
		memcpy(spec_path, path, RINX_PATH_MAX);
	return 0;
}

/* Namespace of switch i (racks, then the spine); 0 when there is none. */
static int switch_ns(const struct rinx_spec *s, const char *prefix, int i,
		     char *buf)
{
	if (i < s->nracks) {
		tor_ns(buf, prefix, i);
		return 1;
	}
	/* a topology testbed's switches and servers are all racks */
	if (i == s->nracks && s->nracks > 1 && !s->topo[0]) {
		spine_ns(buf, prefix);
		return 1;
	}
	return 0;
}

static int link_map_open(const struct rinx_spec *s, const char *ns)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];

	link_pin_dir(s, ns, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/links", dir);
	return bpf_obj_get(path);
}

/*
 * New settings for one port: the whole value is written under the value's
 * lock (BPF_F_LOCK), so the program never sees new settings with the old
 * queue, and counters restart with them.
 */
static int link_update(int fd, __u32 ifindex, const struct rinx_sw_link_set *f,
		       unsigned int mask)
{
	struct rinx_sw_link v;
	struct rinx_sw_link_set n;

	if (bpf_map_lookup_elem_flags(fd, &ifindex, &v, BPF_F_LOCK))
		return -errno;
	n = v.set;
	if (mask & RINX_TB_F_DROP)
		n.drop_ppm = f->drop_ppm;
	if (mask & RINX_TB_F_DUP)
		n.dup_ppm = f->dup_ppm;
	if (mask & RINX_TB_F_REORDER)
		n.reorder_ppm = f->reorder_ppm;
	if (mask & RINX_TB_F_RATE) {
		n.rate_mbit = f->rate_mbit;
		/* the old rate's defaults would not fit the new rate */
		if (!(mask & RINX_TB_F_BUFFER))
			n.buffer = 0;
		if (!(mask & RINX_TB_F_ECN))
			n.ecn = 0;
	}
	if (mask & RINX_TB_F_BUFFER)
		n.buffer = f->buffer;
	if (mask & RINX_TB_F_ECN)
		n.ecn = f->ecn;
	if (mask & RINX_TB_F_HOLD)
		n.hold_ms = f->hold_ms;
	link_fresh(&v, &n);
	return bpf_map_update_elem(fd, &ifindex, &v, BPF_EXIST | BPF_F_LOCK) ?
	       -errno : 0;
}

int rinx_testbed_ina_off(const char *what, int rack)
{
	char prefix[RINX_TB_PREFIX_MAX + 1], dir[RINX_PATH_MAX];
	char path[RINX_PATH_MAX + 16];
	struct rinx_spec *s;
	int i, fd, err = -ENOENT;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = tb_load(what, s, prefix, sizeof(prefix), NULL);
	if (err)
		goto out;
	err = -ENOENT;
	for (i = 0; i < s->nracks; i++) {
		const struct rinx_spec_rack *r = &s->racks[i];
		__u32 key, next;

		if (r->id != rack || r->ina != RINX_INA_SWITCH)
			continue;
		/* the ToR keeps switching; its aggregator forgets every job
		 * (frames to it are dropped) and its pins go */
		agg_pin_dir(s, r, dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/jobs", dir);
		fd = bpf_obj_get(path);
		if (fd < 0) {
			err = -errno;
			pr_warn("rack %d: its aggregator is not up\n", rack);
			goto out;
		}
		while (!bpf_map_get_next_key(fd, NULL, &next)) {
			key = next;
			if (bpf_map_delete_elem(fd, &key))
				break;
		}
		close(fd);
		agg_unpin(s, r);
		err = 0;
	}
	if (err)
		pr_warn("rack %d has no INA ToR\n", rack);
out:
	free(s);
	return err;
}

/* Rate of port ifname of switch ns (full name) among the n of pl, or 0. */
static __u32 port_rate(const struct rinx_tb_port_link *pl, int n,
		       const char *ns, const char *ifname)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(pl[i].ns, ns) && !strcmp(pl[i].ifname, ifname))
			return pl[i].v.set.rate_mbit;
	return 0;
}

/* The slower of two rates, 0 meaning unlimited. */
static __u32 rate_min(__u32 a, __u32 b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/* The spec's link= and uplink= from the ports' rates: a host's link is its
 * ToR port, a rack's uplink the slower of the ToR's uplink and the spine's
 * port to it. */
static int spec_rates_write(struct rinx_spec *s, const char *prefix,
			    const char *path)
{
	int max = 4 * RINX_MAX_NODES, n, i, err;
	struct rinx_tb_port_link *pl;
	char ns[NS_NAME_MAX], sp[NS_NAME_MAX], ifname[IFNAMSIZ];

	pl = calloc(max, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	n = rinx_testbed_link_get(s, pl, max);
	if (n < 0) {
		free(pl);
		return n;
	}
	spine_ns(sp, prefix);
	for (i = 0; i < s->nhosts; i++) {
		struct rinx_spec_host *h = &s->hosts[i];

		__u32 was = h->link_mbit;

		/* host i's ToR port is p<i> (switch_layout) */
		tor_ns(ns, prefix, h->rack);
		snprintf(ifname, sizeof(ifname), "p%d", i);
		h->link_mbit = port_rate(pl, n, ns, ifname);
		if (h->link_mbit != was)
			host_pace(h, h->link_mbit);
	}
	for (i = 0; i < s->nracks && s->nracks > 1; i++) {
		struct rinx_spec_rack *r = &s->racks[i];

		tor_ns(ns, prefix, r->id);
		snprintf(ifname, sizeof(ifname), "t%d", r->id);
		r->uplink_mbit = rate_min(port_rate(pl, n, ns, "uplink"),
					  port_rate(pl, n, sp, ifname));
	}
	free(pl);
	err = rinx_spec_save(path, s);
	if (err)
		pr_warn("cannot rewrite %s: %s\n", path, strerror(-err));
	return err;
}

int rinx_testbed_fault_set(const char *what, const char *port,
			   const struct rinx_sw_link_set *f, unsigned int mask,
			   int *nports)
{
	char prefix[RINX_TB_PREFIX_MAX + 1], ns[NS_NAME_MAX];
	char path[RINX_PATH_MAX];
	char want_ns[NS_NAME_MAX], want_if[IFNAMSIZ];
	struct rinx_spec *s;
	int i, fd, err = 0, n = 0, found = 0, old;
	const char *colon;

	if (nports)
		*nports = 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = tb_load(what, s, prefix, sizeof(prefix), path);
	if (err)
		goto out;
	if (port) {
		colon = strchr(port, ':');
		if (!colon || colon == port || !colon[1] ||
		    strlen(colon + 1) >= IFNAMSIZ ||
		    (size_t)(colon - port) >= sizeof(want_ns)) {
			pr_warn("port '%s': want NS:IF (e.g. t0:p1)\n", port);
			err = -EINVAL;
			goto out;
		}
		snprintf(want_if, sizeof(want_if), "%s", colon + 1);
		if (!strncmp(port, prefix, strlen(prefix)) &&
		    (size_t)(colon - port) > strlen(prefix))
			snprintf(want_ns, sizeof(want_ns), "%.*s",
				 (int)(colon - port), port);
		else
			snprintf(want_ns, sizeof(want_ns), "%s%.*s", prefix,
				 (int)(colon - port), port);
	}
	for (i = 0; !err && switch_ns(s, prefix, i, ns); i++) {
		__u32 key, next, *prev = NULL;

		if (port && strcmp(ns, want_ns))
			continue;
		found = 1;
		fd = link_map_open(s, ns);
		if (fd < 0) {
			err = -errno;
			pr_warn("switch %s: links map not pinned: %s\n", ns,
				strerror(errno));
			break;
		}
		if (port) {
			err = rinx_netns_enter(ns, &old);
			if (!err) {
				key = if_nametoindex(want_if);
				rinx_netns_leave(old);
				err = key ? link_update(fd, key, f, mask) :
					    -ENODEV;
				if (err)
					pr_warn("switch %s: port %s: %s\n", ns,
						want_if, strerror(-err));
				else
					n++;
			}
			close(fd);
			break;
		}
		while (!bpf_map_get_next_key(fd, prev, &next)) {
			err = link_update(fd, next, f, mask);
			if (err)
				break;
			n++;
			key = next;
			prev = &key;
		}
		close(fd);
	}
	if (!err && port && !found) {
		pr_warn("no switch %s in testbed %s\n", want_ns, prefix);
		err = -ENOENT;
	}
	/* a topology testbed's rates are its topology's, scaled: the spec
	 * has none to rewrite */
	if (!err && (mask & RINX_TB_F_RATE) && !s->topo[0])
		err = spec_rates_write(s, prefix, path);
out:
	if (nports)
		*nports = n;
	free(s);
	return err;
}

int rinx_testbed_link_get(const struct rinx_spec *s,
			  struct rinx_tb_port_link *out, int max)
{
	char prefix[RINX_TB_PREFIX_MAX + 1], ns[NS_NAME_MAX];
	int i, fd, n = 0, old, err;

	if (rinx_testbed_spec_prefix(s, prefix, sizeof(prefix)))
		return -EINVAL;
	for (i = 0; switch_ns(s, prefix, i, ns); i++) {
		__u32 key, next, *prev = NULL;

		fd = link_map_open(s, ns);
		if (fd < 0)
			continue;
		err = rinx_netns_enter(ns, &old);
		if (err) {
			close(fd);
			return err;
		}
		while (n < max && !bpf_map_get_next_key(fd, prev, &next)) {
			struct rinx_tb_port_link *p = &out[n];

			key = next;
			prev = &key;
			/* under the lock: queue and counters of one moment */
			if (bpf_map_lookup_elem_flags(fd, &key, &p->v,
						      BPF_F_LOCK))
				continue;
			p->now_ns = mono_ns();
			snprintf(p->ns, sizeof(p->ns), "%s", ns);
			if (!if_indextoname(key, p->ifname))
				snprintf(p->ifname, sizeof(p->ifname), "#%u",
					 key);
			n++;
		}
		rinx_netns_leave(old);
		close(fd);
	}
	return n;
}

/* ---- topology testbeds ----
 *
 * A topology (user/topo.h) as a testbed: every switch and every PS a
 * namespace <prefix>t<i> (switches first, in topology order, then the
 * servers), every worker a host <prefix>h<rank>, one veth per link: eth0
 * of a host or a PS, l<link> on a switch. Every port's queue drains at its
 * link's rate (that direction) times scale_mbit. A switch runs the XDP
 * switch with sw_topo set: unicast by the MAC table (shortest paths, the
 * routes topo_route picks), the plan's routes (per class and per pair) in
 * `flows`, each class's result to the fabric's group along the class's
 * broadcast route (`bcast`), floods and the group of classes without one
 * on a spanning tree (breadth first from the first PS's switch, else from
 * the first switch), so cycles cannot loop a frame. A switch marked
 * ina=yes and every PS carry an aggregator: a PS is a one-port INA node
 * (the switch program on its eth0, its aggregator answering to its MAC,
 * its output back out eth0). In the spec a switch or PS is a rack (named
 * as in the topology, ina=switch when it aggregates), a host is in the
 * rack of its switch; the topology is written beside the spec and named by
 * its topo=.
 */

#define TT_MAX_PORTS	64

struct tt_sw {
	char ns[NS_NAME_MAX];
	int node;			/* topology node */
	int rack;			/* index in s->racks */
	int nports;
	char ifname[TT_MAX_PORTS][IFNAMSIZ];
	int link[TT_MAX_PORTS];		/* topology link of each port */
	__u32 rate[TT_MAX_PORTS];	/* egress Mbit/s */
	__u32 real[TT_MAX_PORTS];	/* ... of the topology (unscaled) */
	int tree[TT_MAX_PORTS];		/* on the spanning tree */
};

struct tt {
	struct topo t;
	struct pp_plan pp;
	int have_pp;
	int nsw;			/* switches + servers */
	int *rack_of;			/* topology node -> rack index or -1 */
	int *tree_link;			/* link -> on the spanning tree */
	struct tt_sw *sw;
};

static void tt_free(struct tt *x)
{
	topo_free(&x->t);
	if (x->have_pp)
		pp_free(&x->pp);
	free(x->rack_of);
	free(x->tree_link);
	free(x->sw);
	memset(x, 0, sizeof(*x));
}

static void topo_path_of(const char *spec_path, char *buf, size_t len)
{
	size_t n = strlen(spec_path);

	if (n > 5 && !strcmp(spec_path + n - 5, ".spec"))
		n -= 5;
	snprintf(buf, len, "%.*s.topo", (int)n, spec_path);
}

/* The MAC of a topology node in the spec: a host's, or the aggregator's of
 * its rack (switch or PS); NULL if it has none. */
static const __u8 *tt_mac(const struct rinx_spec *s, const struct tt *x,
			  int node)
{
	const struct rinx_spec_host *h;
	int ri;

	if (x->t.node[node].kind == TOPO_HOST) {
		h = rinx_spec_host(s, x->t.node[node].name);
		return h ? h->mac : NULL;
	}
	ri = x->rack_of[node];
	if (ri < 0 || s->racks[ri].ina != RINX_INA_SWITCH)
		return NULL;
	return s->racks[ri].mac;
}

/* Port of switch sw on link l, -1 if none. */
static int tt_port(const struct tt_sw *sw, int l)
{
	int i;

	for (i = 0; i < sw->nports; i++)
		if (sw->link[i] == l)
			return i;
	return -1;
}

/* Spanning tree of the switch graph, breadth first from root; every link
 * of a host or a PS is on it. */
static int tt_tree(struct tt *x, int root)
{
	struct topo *t = &x->t;
	int *seen = calloc(t->nnodes, sizeof(int));
	int *q = calloc(t->nnodes, sizeof(int));
	int h = 0, n = 0, i, l;

	if (!seen || !q) {
		free(seen);
		free(q);
		return -ENOMEM;
	}
	for (l = 0; l < t->nlinks; l++)
		x->tree_link[l] = t->node[t->link[l].a].kind != TOPO_SWITCH ||
				  t->node[t->link[l].b].kind != TOPO_SWITCH;
	q[n++] = root;
	seen[root] = 1;
	while (h < n) {
		int u = q[h++];

		for (i = t->off[u]; i < t->off[u + 1]; i++) {
			int arc = t->adj[i], v = topo_arc_to(t, arc);

			if (t->node[v].kind != TOPO_SWITCH || seen[v])
				continue;
			seen[v] = 1;
			x->tree_link[arc >> 1] = 1;
			q[n++] = v;
		}
	}
	free(seen);
	free(q);
	return 0;
}

static int tt_check(const struct tt *x, char *err, size_t errlen)
{
	const struct topo *t = &x->t;
	int *deg = calloc(t->nnodes, sizeof(int)), i, l, ret = 0;

	if (!deg)
		return -ENOMEM;
	if (t->nhosts < 1 || t->nhosts > RINX_MAX_NODES)
		ret = rinx_seterr(err, errlen, -EINVAL, "the testbed takes 1..%d "
				  "workers (topology has %d)", RINX_MAX_NODES,
				  t->nhosts);
	for (l = 0; !ret && l < t->nlinks; l++) {
		int a = t->link[l].a, b = t->link[l].b;

		deg[a]++;
		deg[b]++;
		if (t->node[a].kind != TOPO_SWITCH &&
		    t->node[b].kind != TOPO_SWITCH)
			ret = rinx_seterr(err, errlen, -EINVAL, "link %s-%s: the "
					  "testbed joins hosts and servers "
					  "through switches only",
					  t->node[a].name, t->node[b].name);
	}
	for (i = 0; !ret && i < t->nnodes; i++) {
		if (t->node[i].kind == TOPO_SWITCH && deg[i] > TT_MAX_PORTS)
			ret = rinx_seterr(err, errlen, -EINVAL, "switch %s: "
					  "more than %d ports", t->node[i].name,
					  TT_MAX_PORTS);
		else if (t->node[i].kind != TOPO_SWITCH && deg[i] != 1)
			ret = rinx_seterr(err, errlen, -EINVAL, "%s has %d "
					  "links: the testbed's hosts and "
					  "servers have one", t->node[i].name,
					  deg[i]);
		else if (strlen(t->node[i].name) >= RINX_NAME_MAX)
			ret = rinx_seterr(err, errlen, -EINVAL, "name %s too "
					  "long", t->node[i].name);
	}
	if (!ret && t->nnodes - t->nhosts > RINX_MAX_NODES)
		ret = rinx_seterr(err, errlen, -EINVAL, "at most %d switches "
				  "and servers", RINX_MAX_NODES);
	free(deg);
	return ret;
}

static __u32 tt_rate(double gbps, double scale)
{
	double m = gbps * scale;

	if (m < 1)
		m = 1;
	return m > RINX_SW_RATE_MAX ? RINX_SW_RATE_MAX : (__u32)m;
}

/* Spec and layout of the topology testbed. */
static int tt_build(const struct rinx_testbed_opts *o, struct tt *x,
		    struct rinx_spec *s, const char *topo_path, char *err,
		    size_t errlen)
{
	struct topo *t = &x->t;
	double scale = o->scale_mbit > 0 ? o->scale_mbit : RINX_TB_SCALE;
	int i, l, r, nsw = 0, rank = 0, root = -1, ret;

	ret = tt_check(x, err, errlen);
	if (ret)
		return ret;
	x->rack_of = malloc(t->nnodes * sizeof(int));
	x->tree_link = calloc(t->nlinks ? t->nlinks : 1, sizeof(int));
	x->sw = calloc(t->nnodes, sizeof(*x->sw));
	if (!x->rack_of || !x->tree_link || !x->sw)
		return -ENOMEM;
	rinx_spec_init(s);
	s->port = o->port ? o->port : RINX_DEFAULT_PORT;
	s->window = o->window ? o->window : RINX_DEFAULT_WINDOW;
	if (o->jobs)
		s->jobs = o->jobs;
	s->mode = o->mode;
	snprintf(s->pin, sizeof(s->pin), "%s/%s",
		 o->pin ? o->pin : RINX_TB_PIN_ROOT, o->prefix);
	snprintf(s->topo, sizeof(s->topo), "%s", topo_path);
	s->scale_mbit = o->scale_mbit > 0 ? o->scale_mbit : RINX_TB_SCALE;
	ret = rinx_plan_parse(o->plan ? o->plan : "topo:grid", &s->plan,
			      &s->plan_nps, err, errlen);
	if (ret)
		return ret;
	/* racks: switches, then servers */
	for (r = 0; r < 2; r++)
		for (i = 0; i < t->nnodes; i++) {
			struct rinx_spec_rack *k;
			int ps = t->node[i].kind == TOPO_PS;

			x->rack_of[i] = r ? x->rack_of[i] : -1;
			if (t->node[i].kind == TOPO_HOST || ps != r)
				continue;
			k = &s->racks[nsw];
			x->rack_of[i] = nsw;
			k->id = nsw;
			snprintf(k->name, sizeof(k->name), "%s",
				 t->node[i].name);
			tor_ns(k->netns, o->prefix, nsw);
			if (ps || t->node[i].ina) {
				__u8 mac[6] = { 0x02, 0x72, 0x78, 0xfe,
						nsw, 0x01 };

				k->ina = RINX_INA_SWITCH;
				memcpy(k->mac, mac, 6);
				k->ip = htonl(TB_NET_A << 24 | TB_NET_B << 16 |
					      nsw << 8 | TB_AGG_HOST);
			}
			snprintf(x->sw[nsw].ns, NS_NAME_MAX, "%s", k->netns);
			x->sw[nsw].node = i;
			x->sw[nsw].rack = nsw;
			if (ps && root < 0)
				root = t->node[i].tor;
			nsw++;
		}
	s->nracks = x->nsw = nsw;
	for (i = 0; i < t->nhosts; i++, rank++) {
		int w = t->hosts[i], tor = t->node[w].tor, ri = x->rack_of[tor];
		struct rinx_spec_host *h = &s->hosts[rank];
		int k = 0, j;
		__u8 mac[6] = { 0x02, 0x72, 0x78, 0, ri, 0 };

		for (j = 0; j < i; j++)
			k += t->node[t->hosts[j]].tor == tor;
		if (k >= 250)
			return rinx_seterr(err, errlen, -EINVAL, "switch %s: "
					   "too many hosts", t->node[tor].name);
		mac[5] = k + 1;
		snprintf(h->name, sizeof(h->name), "%s", t->node[w].name);
		h->rank = rank;
		h->rack = ri;
		snprintf(h->ifname, sizeof(h->ifname), "eth0");
		memcpy(h->mac, mac, 6);
		h->ip = htonl(TB_NET_A << 24 | TB_NET_B << 16 | ri << 8 | (k + 1));
		host_ns(h->netns, o->prefix, rank);
	}
	s->nhosts = rank;
	/* ports: a switch's on every link it has; a server's eth0 */
	for (l = 0; l < t->nlinks; l++) {
		for (r = 0; r < 2; r++) {
			int u = r ? t->link[l].b : t->link[l].a;
			struct tt_sw *sw;

			if (t->node[u].kind == TOPO_HOST)
				continue;
			sw = &x->sw[x->rack_of[u]];
			if (t->node[u].kind == TOPO_PS)
				snprintf(sw->ifname[sw->nports], IFNAMSIZ,
					 "eth0");
			else
				snprintf(sw->ifname[sw->nports], IFNAMSIZ,
					 "l%d", l);
			sw->link[sw->nports] = l;
			/* egress of u: a->b is gbps[0] */
			sw->rate[sw->nports] = tt_rate(t->link[l].gbps[r],
						       scale);
			sw->real[sw->nports] = tt_rate(t->link[l].gbps[r],
						       1000);
			sw->nports++;
		}
	}
	if (root < 0)
		for (i = 0; i < t->nnodes && root < 0; i++)
			if (t->node[i].kind == TOPO_SWITCH)
				root = i;
	if (root < 0)
		return rinx_seterr(err, errlen, -EINVAL, "topology has no "
				   "switch");
	ret = tt_tree(x, root);
	if (ret)
		return ret;
	for (i = 0; i < nsw; i++)
		for (r = 0; r < x->sw[i].nports; r++)
			x->sw[i].tree[r] = x->tree_link[x->sw[i].link[r]];
	return 0;
}

/* The veths: host eth0 <-> switch l<link>; switch l<link> <-> switch
 * l<link>; server eth0 <-> switch l<link>. */
static int tt_links(const struct rinx_spec *s, const struct tt *x, int mtu)
{
	const struct topo *t = &x->t;
	struct rinx_tb_buf cmd = {};
	char na[NS_NAME_MAX], nb[NS_NAME_MAX], mac[18];
	int l, err;

	for (l = 0; l < t->nlinks; l++) {
		int a = t->link[l].a, b = t->link[l].b, tmp;
		const char *ia = "eth0", *ib;
		char lname[IFNAMSIZ];

		/* the switch on side b, the other node (any kind) on a */
		if (t->node[b].kind != TOPO_SWITCH) {
			tmp = a;
			a = b;
			b = tmp;
		}
		snprintf(lname, sizeof(lname), "l%d", l);
		ib = lname;
		snprintf(nb, sizeof(nb), "%s", x->sw[x->rack_of[b]].ns);
		if (t->node[a].kind == TOPO_HOST) {
			const struct rinx_spec_host *h =
				rinx_spec_host(s, t->node[a].name);

			snprintf(na, sizeof(na), "%s", h->netns);
			fmt_mac(mac, h->mac);
			rinx_tb_put(&cmd, "link add eth0 netns %s address %s mtu %d "
				    "type veth peer name %s netns %s mtu %d\n",
				    na, mac, mtu, ib, nb, mtu);
			continue;
		}
		if (t->node[a].kind == TOPO_SWITCH)
			ia = lname;
		snprintf(na, sizeof(na), "%s", x->sw[x->rack_of[a]].ns);
		rinx_tb_put(&cmd, "link add %s netns %s mtu %d type veth "
			    "peer name %s netns %s mtu %d\n", ia, na, mtu,
			    ib, nb, mtu);
	}
	err = run_ip_batch(NULL, &cmd);
	rinx_tb_free(&cmd);
	return err;
}

/* MAC table of switch sw: every host, aggregator and server, by the port
 * of the first arc of its route from here; a server's one port takes
 * everything. Its own aggregator takes its frames before the table. */
static int tt_macs(const struct rinx_spec *s, struct tt *x,
		   const struct tt_sw *sw, int fd, const int *ifindex)
{
	struct topo *t = &x->t;
	int arcs[PP_MAX_HOPS], d, n, port, err;

	for (d = 0; d < t->nnodes; d++) {
		const __u8 *mac = tt_mac(s, x, d);
		struct rinx_sw_port p = {};
		__u64 k;

		if (!mac || d == sw->node)
			continue;
		if (t->node[sw->node].kind == TOPO_PS) {
			port = 0;
		} else {
			n = topo_route(t, sw->node, d, arcs, PP_MAX_HOPS);
			if (n < 1)
				return n < 0 ? n : -EHOSTUNREACH;
			port = tt_port(sw, arcs[0] >> 1);
			if (port < 0)
				return -EINVAL;
		}
		p.port = ifindex[port];
		k = mac_key(mac);
		err = map_set(fd, &k, &p, sw->ns, "mac table");
		if (err)
			return err;
	}
	return 0;
}

static void tt_flows_dir(const struct rinx_spec *s, const char *ns,
			 char *buf, size_t len)
{
	link_pin_dir(s, ns, buf, len);
}

/* What a topology switch pins beside its links for tt_routes: the flow
 * table, the broadcast table and the ports' devmap program. */
static const char *const tt_pins[] = { "flows", "bcast", "port_egress" };

/* The aggregation capacity of topology switch sw (its cap=, scaled as its
 * links are; its buffer and mark threshold those of a port of the
 * unscaled rate, as the links'): the aggregator's queue, `ina_cap`. A
 * switch without cap= (a server) sums whatever reaches it. `testbed up
 * --buffer, --ecn` set them as they set every port's. */
static int tt_cap_set(const struct rinx_spec *s, const struct tt *x,
		      const struct tt_sw *sw, struct switch_bpf *skel,
		      const struct rinx_sw_link_set *link)
{
	double cap = x->t.node[sw->node].cap;
	struct rinx_sw_link_set f = {};
	struct rinx_sw_link v;
	__u32 k = RINX_SW_CAP_KEY;

	if (!(cap > 0))
		return 0;
	f.rate_mbit = tt_rate(cap, s->scale_mbit > 0 ? s->scale_mbit :
						       RINX_TB_SCALE);
	f.buffer = link && link->buffer ? link->buffer :
		   rinx_testbed_buffer_default(tt_rate(cap, 1000));
	f.ecn = link && link->ecn ? link->ecn :
		rinx_testbed_ecn_default(tt_rate(cap, 1000));
	link_fresh(&v, &f);
	return map_set(bpf_map__fd(skel->maps.ina_cap), &k, &v, sw->ns,
		       "ina_cap");
}

static int tt_switch_attach(const struct rinx_spec *s, struct tt *x,
			    const struct tt_sw *sw,
			    const struct rinx_sw_link_set *link)
{
	__u32 flags = XDP_FLAGS_UPDATE_IF_NOEXIST |
		      (s->mode == RINX_XDP_GENERIC ? XDP_FLAGS_SKB_MODE :
						     XDP_FLAGS_DRV_MODE);
	const struct rinx_spec_rack *r = &s->racks[sw->rack];
	int ina = r->ina == RINX_INA_SWITCH;
	int ifindex[TT_MAX_PORTS];
	struct switch_bpf *skel = NULL;
	int old, err, i, port_egress, pinned = 0;
	char path[RINX_PATH_MAX + 16], dir[RINX_PATH_MAX];

	err = rinx_netns_enter(sw->ns, &old);
	if (err)
		return err;
	err = switch_load(s, sw->ns, r->id, 1, 0, ina ? r->mac : NULL, &skel);
	if (err)
		goto out;
	port_egress = bpf_program__fd(skel->progs.rinx_port_egress);
	for (i = 0; i < sw->nports; i++) {
		__u32 idx = if_nametoindex(sw->ifname[i]);
		struct bpf_devmap_val v = { .ifindex = idx,
					    .bpf_prog.fd = port_egress };
		struct rinx_sw_link_set f = {};

		if (!idx) {
			err = -ENODEV;
			pr_warn("switch %s: no port %s\n", sw->ns,
				sw->ifname[i]);
			goto out;
		}
		ifindex[i] = idx;
		if (link)
			f = *link;
		/* A scaled port keeps the queue of the port it stands for,
		 * in bytes: as many frames fit and mark as at line rate (a
		 * default sized for the scaled rate would hold a few frames,
		 * less than one window of the ranks' first blocks). */
		f.rate_mbit = sw->rate[i];
		f.buffer = link && link->buffer ? link->buffer :
			   rinx_testbed_buffer_default(sw->real[i]);
		f.ecn = link && link->ecn ? link->ecn :
			rinx_testbed_ecn_default(sw->real[i]);
		err = map_set(bpf_map__fd(skel->maps.ports), &idx, &v, sw->ns,
			      "devmap");
		/* floods and the group on the tree; a group finished here
		 * (the aggregator of a server, or a switch's that is a
		 * class's root) goes out of every tree port */
		if (!err && sw->tree[i])
			err = map_set(bpf_map__fd(skel->maps.flood), &idx, &v,
				      sw->ns, "flood");
		if (!err && sw->tree[i])
			err = map_set(bpf_map__fd(skel->maps.group_hosts), &idx,
				      &v, sw->ns, "group_hosts");
		if (!err)
			err = link_port_init(skel, sw->ns, idx, port_egress, &f);
		if (err)
			goto out;
	}
	err = ina ? tt_cap_set(s, x, sw, skel, link) : 0;
	if (!err)
		err = tt_macs(s, x, sw, bpf_map__fd(skel->maps.macs), ifindex);
	if (err) {
		pr_warn("switch %s: mac table: %s\n", sw->ns, strerror(-err));
		goto out;
	}
	err = switch_pin(s, ina ? r : NULL, sw->ns, skel, &pinned);
	if (err)
		goto out;
	/* the plan's routes are written later (tt_routes), into these:
	 * the broadcast routes' devmaps name the ports' program */
	tt_flows_dir(s, sw->ns, dir, sizeof(dir));
	for (i = 0; i < (int)NELEM(tt_pins); i++) {
		int fd = i == 0 ? bpf_map__fd(skel->maps.flows) :
			 i == 1 ? bpf_map__fd(skel->maps.bcast) : port_egress;

		snprintf(path, sizeof(path), "%s/%s", dir, tt_pins[i]);
		unlink(path);
		if (bpf_obj_pin(fd, path)) {
			err = -errno;
			pr_warn("switch %s: cannot pin %s: %s\n", sw->ns, path,
				strerror(errno));
			goto out;
		}
	}
	err = attach_ports(s, sw->ns, sw->ifname, ifindex, sw->nports,
			   bpf_program__fd(skel->progs.rinx_switch), flags);
out:
	if (err)
		switch_unpin(s, ina ? r : NULL, sw->ns, pinned);
	switch_bpf__destroy(skel);
	rinx_netns_leave(old);
	return err;
}

/*
 * One class's broadcast route through the switches: the arcs of the
 * plan's broadcast transfers, breadth first from the class's root, where
 * only switches pass the block on (the root sends it once, to the fabric's
 * group, and the switches replicate it: a worker or a server that relays
 * in the plan does not on the testbed, and its switch sends on what it
 * would have), pruned to the arcs that lead to a worker. by[v]: the arc
 * node v gets the block by (-1: the root, -2: not on the route);
 * keep[arc]: the arc is on the route. Every arc kept is one of the plan's
 * and carries one copy of a block, so none carries more than the plan
 * says. -ENOENT when a worker is not reached (the class's broadcast then
 * stays on the spanning tree).
 */
static int tt_bc_route(const struct topo *t, const struct pp_class *c,
		       int *by, char *use, char *keep, int *q)
{
	int h = 0, n = 0, i, j, w;

	memset(use, 0, 2 * t->nlinks);
	memset(keep, 0, 2 * t->nlinks);
	for (i = 0; i < t->nnodes; i++)
		by[i] = -2;
	if (c->kind != PP_TREE || c->root < 0 || c->root >= t->nnodes)
		return -ENOENT;
	for (i = 0; i < c->nbc; i++)
		for (j = 0; j < c->bc[i].nhop; j++)
			use[c->bc[i].hop[j]] = 1;
	by[c->root] = -1;
	q[n++] = c->root;
	while (h < n) {
		int u = q[h++];

		if (u != c->root && t->node[u].kind != TOPO_SWITCH)
			continue;
		for (i = t->off[u]; i < t->off[u + 1]; i++) {
			int arc = t->adj[i], v = topo_arc_to(t, arc);

			if (!use[arc] || by[v] != -2)
				continue;
			by[v] = arc;
			q[n++] = v;
		}
	}
	for (i = 0; i < t->nhosts; i++) {
		w = t->hosts[i];
		if (by[w] == -2)
			return -ENOENT;
		for (; by[w] >= 0 && !keep[by[w]]; w = topo_arc_from(t, by[w]))
			keep[by[w]] = 1;
	}
	return 0;
}

/* One port of one class's broadcast route at a switch. */
struct tt_bc {
	int sw;		/* index in x->sw */
	int in;		/* port the block comes in by; -1: the switch's
			 * own aggregator (the class's root) */
	int out;	/* a port it leaves by */
	int klass;
	const __u8 *src;	/* the root's MAC */
};

/* Empties the map at fd (a flow or broadcast table). */
static void tt_map_clear(int fd, size_t key_size)
{
	__u8 key[64], next[64];
	int n = 0;

	if (key_size > sizeof(key))
		return;
	/* each delete removes the first key: bounded by the map's size */
	while (n++ < 1 << 16 && !bpf_map_get_next_key(fd, NULL, next)) {
		memcpy(key, next, key_size);
		if (bpf_map_delete_elem(fd, key))
			break;
	}
}

/* Ifindex of every port of switch sw (looked up in its namespace). */
static int tt_ifindexes(const struct tt_sw *sw, __u32 *ifindex)
{
	int old, err, i;

	err = rinx_netns_enter(sw->ns, &old);
	if (err)
		return err;
	for (i = 0; i < sw->nports; i++) {
		ifindex[i] = if_nametoindex(sw->ifname[i]);
		if (!ifindex[i]) {
			pr_warn("switch %s: no port %s\n", sw->ns,
				sw->ifname[i]);
			err = -ENODEV;
			break;
		}
	}
	rinx_netns_leave(old);
	return err;
}

/* The broadcast routes bc[0..n) of switch i into its `bcast` table: one
 * devmap of ports per (ingress, class, root), made in the switch's
 * namespace (a devmap resolves its ifindexes there). *nb counts them. */
static int tt_bc_write(const struct tt *x, int i, const struct tt_bc *bc,
		       int n, const __u32 *ifindex, int outer, int egress,
		       int *nb)
{
	const struct tt_sw *sw = &x->sw[i];
	int old, err, a, b;

	err = rinx_netns_enter(sw->ns, &old);
	if (err)
		return err;
	for (a = 0; a < n && !err; a++) {
		struct rinx_sw_bcast_key key = {};
		int fd, first = 1;

		if (bc[a].sw != i)
			continue;
		/* the first entry of its (ingress, class, root) makes it */
		for (b = 0; b < a && first; b++)
			first = !(bc[b].sw == i && bc[b].in == bc[a].in &&
				  bc[b].klass == bc[a].klass &&
				  bc[b].src == bc[a].src);
		if (!first)
			continue;
		fd = bpf_map_create(BPF_MAP_TYPE_DEVMAP_HASH, "sw_bcast",
				    sizeof(__u32),
				    sizeof(struct bpf_devmap_val),
				    RINX_SW_MAX_PORTS, NULL);
		if (fd < 0) {
			err = -errno;
			pr_warn("switch %s: broadcast devmap: %s\n", sw->ns,
				strerror(errno));
			break;
		}
		for (b = a; b < n && !err; b++) {
			struct bpf_devmap_val v = { .bpf_prog.fd = egress };

			if (bc[b].sw != i || bc[b].in != bc[a].in ||
			    bc[b].klass != bc[a].klass || bc[b].src != bc[a].src)
				continue;
			v.ifindex = ifindex[bc[b].out];
			err = map_set(fd, &v.ifindex, &v, sw->ns,
				      "broadcast devmap");
		}
		key.ingress = bc[a].in < 0 ? 0 : ifindex[bc[a].in];
		key.klass = bc[a].klass;
		memcpy(key.src, bc[a].src, 6);
		if (!err)
			err = map_set(outer, &key, &fd, sw->ns,
				      "broadcast table");
		close(fd);
		if (!err)
			(*nb)++;
	}
	rinx_netns_leave(old);
	return err;
}

/*
 * The plan's routes into the switches' tables (emptied first):
 *  - every reduce transfer's route: each switch on it sends the (dst, src)
 *    pair of the transfer's class out by the route's next link, and the
 *    pair of any class too (frames without a class entry: other plans',
 *    control frames; a pair two classes route differently keeps the last
 *    one). Transfers that follow the MAC table anyway need no entry, but
 *    an entry does no harm;
 *  - every class's broadcast route (tt_bc_route): the switches on it send
 *    the class's blocks from its root to the fabric's group out by the
 *    route's ports; a class whose route misses a worker keeps the
 *    spanning tree.
 * *nflows and *nbcast get the entries written.
 */
static int tt_routes(const struct rinx_spec *s, struct tt *x, int *nflows,
		     int *nbcast)
{
	struct topo *t = &x->t;
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	int na = 2 * t->nlinks, i, k, j, h, err = 0, n = 0, nb = 0, nbc = 0;
	int *fds = calloc(x->nsw, sizeof(int)), *bfd = calloc(x->nsw, sizeof(int));
	int *efd = calloc(x->nsw, sizeof(int)), *by = calloc(t->nnodes, sizeof(int));
	int *q = calloc(t->nnodes, sizeof(int));
	__u32 (*ifx)[TT_MAX_PORTS] = calloc(x->nsw, sizeof(*ifx));
	char *use = calloc(na + 1, 1), *keep = calloc(na + 1, 1);
	struct tt_bc *bc = calloc((size_t)(x->pp.ncls + 1) * (na + 1),
				  sizeof(*bc));

	for (i = 0; fds && bfd && efd && i < x->nsw; i++)
		fds[i] = bfd[i] = efd[i] = -1;
	if (!fds || !bfd || !efd || !by || !q || !ifx || !use || !keep || !bc) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < x->nsw; i++) {
		int *fdp[] = { &fds[i], &bfd[i], &efd[i] };

		tt_flows_dir(s, x->sw[i].ns, dir, sizeof(dir));
		for (j = 0; j < (int)NELEM(tt_pins); j++) {
			snprintf(path, sizeof(path), "%s/%s", dir, tt_pins[j]);
			*fdp[j] = bpf_obj_get(path);
			if (*fdp[j] < 0) {
				err = -errno;
				pr_warn("switch %s: no %s at %s: %s\n",
					x->sw[i].ns, tt_pins[j], path,
					strerror(errno));
				goto out;
			}
		}
		err = tt_ifindexes(&x->sw[i], ifx[i]);
		if (err)
			goto out;
		tt_map_clear(fds[i], sizeof(struct rinx_sw_flow_key));
		tt_map_clear(bfd[i], sizeof(struct rinx_sw_bcast_key));
	}
	for (k = 0; k < x->pp.ncls; k++) {
		const struct pp_class *c = &x->pp.cls[k];
		const __u8 *root;

		for (j = 0; j < c->nred; j++) {
			const struct pp_xfer *xf = &c->red[j];
			const __u8 *src = tt_mac(s, x, xf->src);
			const __u8 *dst = tt_mac(s, x, xf->dst);
			struct rinx_sw_flow_key key = {};

			if (!src || !dst)
				continue;
			memcpy(key.dst, dst, 6);
			memcpy(key.src, src, 6);
			for (h = 0; h < xf->nhop; h++) {
				int u = topo_arc_from(t, xf->hop[h]), ri, port;
				struct rinx_sw_port p = {}, had;

				if (t->node[u].kind != TOPO_SWITCH)
					continue;
				ri = x->rack_of[u];
				port = tt_port(&x->sw[ri], xf->hop[h] >> 1);
				if (port < 0) {
					err = -EINVAL;
					goto out;
				}
				p.port = ifx[ri][port];
				/* one route per (dst, src) pair of a class */
				key.klass = k;
				if (!bpf_map_lookup_elem(fds[ri], &key, &had) &&
				    had.port != p.port)
					pr_warn("switch %s: %s -> %s is routed "
						"two ways in class %d; the last "
						"route wins\n", x->sw[ri].ns,
						t->node[xf->src].name,
						t->node[xf->dst].name, k);
				err = map_set(fds[ri], &key, &p, x->sw[ri].ns,
					      "flow table");
				key.klass = RINX_SW_CLASS_ANY;
				if (!err)
					err = map_set(fds[ri], &key, &p,
						      x->sw[ri].ns,
						      "flow table");
				if (err)
					goto out;
				n += 2;
			}
		}
		root = tt_mac(s, x, c->root);
		if (!root || t->nhosts < 2 ||
		    tt_bc_route(t, c, by, use, keep, q)) {
			pr_debug("class %d: broadcast on the spanning tree\n",
				 k);
			continue;
		}
		for (j = 0; j < na; j++) {
			int u = topo_arc_from(t, j), ri;

			if (!keep[j] || t->node[u].kind != TOPO_SWITCH)
				continue;
			ri = x->rack_of[u];
			bc[nbc].sw = ri;
			bc[nbc].out = tt_port(&x->sw[ri], j >> 1);
			bc[nbc].in = by[u] < 0 ? -1 :
				     tt_port(&x->sw[ri], by[u] >> 1);
			bc[nbc].klass = k;
			bc[nbc].src = root;
			if (bc[nbc].out < 0 || (by[u] >= 0 && bc[nbc].in < 0)) {
				err = -EINVAL;
				goto out;
			}
			nbc++;
		}
	}
	for (i = 0; i < x->nsw && !err; i++)
		err = tt_bc_write(x, i, bc, nbc, ifx[i], bfd[i], efd[i], &nb);
out:
	for (i = 0; fds && bfd && efd && i < x->nsw; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		if (bfd[i] >= 0)
			close(bfd[i]);
		if (efd[i] >= 0)
			close(efd[i]);
	}
	free(fds);
	free(bfd);
	free(efd);
	free(by);
	free(q);
	free(ifx);
	free(use);
	free(keep);
	free(bc);
	if (nflows)
		*nflows = n;
	if (nbcast)
		*nbcast = nb;
	return err;
}

/* The topology of opts o (file or generator) into x. */
static int tt_load(const struct rinx_testbed_opts *o, struct tt *x,
		   char *err, size_t errlen)
{
	int ret;

	memset(x, 0, sizeof(*x));
	topo_init(&x->t);
	if (o->topo)
		ret = topo_load(o->topo, &x->t, err, errlen);
	else
		ret = topo_generate(o->gen, &x->t, err, errlen);
	return ret;
}

/* The plan of spec s on x's topology, for its routes. */
static int tt_plan(const struct rinx_spec *s, struct tt *x, char *err,
		   size_t errlen)
{
	struct topo t2;
	int ret;

	if (s->plan != RINX_PLAN_TOPO)
		return 0;
	ret = pp_load(s->topo, pp_planners[s->plan_nps - 1].name, &t2,
		      &x->pp, err, errlen);
	x->have_pp = 1;
	/* the same file as x->t: node and link ids agree */
	topo_free(&t2);
	if (!ret && x->pp.ncls > 0 && x->pp.cls[0].kind != PP_TREE)
		ret = rinx_seterr(err, errlen, -EOPNOTSUPP, "plan %s: ring "
				  "classes do not run on a topology testbed",
				  x->pp.scheme);
	return ret;
}

static int topo_up(const struct rinx_testbed_opts *o,
		   struct rinx_spec *spec_out)
{
	char spec_path[RINX_PATH_MAX], topo_path[RINX_PATH_MAX + 8];
	char msg[256];
	struct rinx_spec *s;
	struct tt x;
	struct rinx_tb_buf cmd = {};
	int i, err, made = 0, nflows = 0, nbcast = 0;
	FILE *f;

	if (o->spec_out)
		snprintf(spec_path, sizeof(spec_path), "%s", o->spec_out);
	else
		rinx_testbed_spec_path(o->prefix, spec_path,
				       sizeof(spec_path));
	topo_path_of(spec_path, topo_path, sizeof(topo_path));
	if (strlen(topo_path) >= RINX_PATH_MAX) {
		pr_warn("spec path too long\n");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = tt_load(o, &x, msg, sizeof(msg));
	if (!err)
		err = tt_build(o, &x, s, topo_path, msg, sizeof(msg));
	if (err) {
		pr_warn("testbed topology: %s\n", msg);
		goto out;
	}
	err = mkdir_parent(topo_path);
	f = err ? NULL : fopen(topo_path, "w");
	if (!f) {
		err = err ? err : -errno;
		pr_warn("cannot write %s: %s\n", topo_path, strerror(-err));
		goto out;
	}
	topo_write(f, &x.t);
	if (fclose(f)) {
		err = -errno;
		goto out;
	}
	err = rinx_spec_check(s, msg, sizeof(msg));
	if (!err)
		err = tt_plan(s, &x, msg, sizeof(msg));
	if (err) {
		pr_warn("testbed spec: %s\n", msg);
		goto out;
	}
	made = 1;
	for (i = 0; i < s->nhosts; i++)
		rinx_tb_put(&cmd, "netns add %s\n", s->hosts[i].netns);
	for (i = 0; i < x.nsw; i++)
		rinx_tb_put(&cmd, "netns add %s\n", x.sw[i].ns);
	err = run_ip_batch(NULL, &cmd);
	rinx_tb_free(&cmd);
	for (i = 0; i < s->nhosts && !err; i++)
		err = ns_quiet(s->hosts[i].netns, 1);
	for (i = 0; i < x.nsw && !err; i++)
		err = ns_quiet(x.sw[i].ns, 0);
	if (!err)
		err = tt_links(s, &x, o->mtu ? o->mtu : RINX_TB_MTU);
	for (i = 0; i < s->nhosts && !err; i++)
		err = config_host(s, i);
	for (i = 0; i < x.nsw && !err; i++) {
		struct tb_switch one = {};
		int p;

		/* config_switch wants the rack switch's layout: names only */
		snprintf(one.ns, sizeof(one.ns), "%s", x.sw[i].ns);
		for (p = 0; p < x.sw[i].nports && p <= RINX_TB_MAX_PER_RACK;
		     p++)
			snprintf(one.ifname[p], IFNAMSIZ, "%s",
				 x.sw[i].ifname[p]);
		one.nports = p;
		if (x.sw[i].nports > p) {
			struct rinx_tb_buf up = {};

			for (; p < x.sw[i].nports; p++)
				rinx_tb_put(&up, "link set dev %s up\n",
					    x.sw[i].ifname[p]);
			err = run_ip_batch(x.sw[i].ns, &up);
			rinx_tb_free(&up);
		}
		if (!err)
			err = config_switch(&one);
		if (!err)
			err = tt_switch_attach(s, &x, &x.sw[i], o->link);
	}
	if (!err)
		err = tt_routes(s, &x, &nflows, &nbcast);
	if (!err)
		err = hosts_up(s, o->no_nodes);
	if (!err)
		err = torctl_up(s);
	if (err)
		goto out;
	err = mkdir_parent(spec_path);
	if (!err)
		err = rinx_spec_save(spec_path, s);
	if (err) {
		pr_warn("cannot write %s: %s\n", spec_path, strerror(-err));
		unlink(spec_path);
		goto out;
	}
	pr_debug("topology testbed %s: %d flow entries, %d broadcast "
		 "entries\n", o->prefix, nflows, nbcast);
	if (spec_out)
		*spec_out = *s;
out:
	if (err && made)
		teardown(s, o->prefix, NULL, NULL);
	if (err)
		unlink(topo_path);
	tt_free(&x);
	free(s);
	return err;
}

int rinx_testbed_topo_plan(const char *what, const char *plan, int *nflows,
			   int *nbcast)
{
	char prefix[RINX_TB_PREFIX_MAX + 1], spec_path[RINX_PATH_MAX];
	char msg[256];
	struct rinx_spec *s = calloc(1, sizeof(*s));
	struct tt x;
	int err;

	memset(&x, 0, sizeof(x));
	topo_init(&x.t);
	if (!s)
		return -ENOMEM;
	err = tb_load(what, s, prefix, sizeof(prefix), spec_path);
	if (err)
		goto out;
	if (!s->topo[0]) {
		pr_warn("%s is not a topology testbed (no topo= in its spec)\n",
			what);
		err = -EINVAL;
		goto out;
	}
	if (plan) {
		err = rinx_plan_parse(plan, &s->plan, &s->plan_nps, msg,
				      sizeof(msg));
		if (!err && s->plan != RINX_PLAN_TOPO)
			err = rinx_seterr(msg, sizeof(msg), -EINVAL, "a "
					  "topology testbed runs topo:NAME "
					  "plans");
		if (err) {
			pr_warn("%s\n", msg);
			goto out;
		}
	}
	err = topo_load(s->topo, &x.t, msg, sizeof(msg));
	if (!err) {
		struct rinx_testbed_opts o = { .prefix = prefix,
					       .plan = NULL };
		struct rinx_spec *s2 = calloc(1, sizeof(*s2));

		/* the layout again (the same function made the testbed) */
		o.scale_mbit = 1;
		err = s2 ? tt_build(&o, &x, s2, s->topo, msg, sizeof(msg)) :
			   -ENOMEM;
		free(s2);
	}
	if (!err)
		err = tt_plan(s, &x, msg, sizeof(msg));
	if (err) {
		pr_warn("%s\n", msg);
		goto out;
	}
	err = tt_routes(s, &x, nflows, nbcast);
	if (!err && plan) {
		err = rinx_spec_save(spec_path, s);
		if (err)
			pr_warn("cannot write %s: %s\n", spec_path,
				strerror(-err));
	}
out:
	tt_free(&x);
	free(s);
	return err;
}
