// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinxctl doctor: whether this host can run a spec's job, before anything
 * is attached. Every check prints ok, warn or missing, and how to fix what
 * is not ok; the interface's checks run inside the node's namespace, as
 * `up` attaches there. `up` runs the same checks first (doctor_check).
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tools/cmds.h"
#include "tools/opts.h"
#include "user/ctl.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

/* The oldest kernel with everything the programs use: xdp.frags (XDP
 * multi-buffer), bpf_link for XDP, BPF spin locks in array values. */
#define DOC_KERNEL_MAJOR	5
#define DOC_KERNEL_MINOR	18
/* Since 5.11 BPF memory is charged to the memory cgroup, not to
 * RLIMIT_MEMLOCK. */
#define DOC_MEMCG_MINOR		11
/* The largest MTU a driver takes into one page with XDP (4 KiB pages:
 * 4096 - 256 headroom - 320 skb_shared_info - 14 Ethernet; veth's limit):
 * above it a program must take multi-buffer frames. */
#define DOC_SINGLE_BUF_MTU	3506

enum { DOC_OK, DOC_WARN, DOC_MISSING };

struct doctor {
	FILE *out;
	int missing, warn;
	int kmajor, kminor;
};

static void say(struct doctor *d, int v, const char *check, const char *fix,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void say(struct doctor *d, int v, const char *check, const char *fix,
		const char *fmt, ...)
{
	static const char *const word[] = { "ok", "warn", "missing" };
	va_list ap;

	fprintf(d->out, "  %-8s %-10s ", word[v], check);
	va_start(ap, fmt);
	vfprintf(d->out, fmt, ap);
	va_end(ap);
	fprintf(d->out, "\n");
	if (v != DOC_OK && fix)
		fprintf(d->out, "  %-8s %-10s fix: %s\n", "", "", fix);
	if (v == DOC_MISSING)
		d->missing++;
	else if (v == DOC_WARN)
		d->warn++;
}

static void chk_root(struct doctor *d)
{
	if (geteuid() == 0)
		say(d, DOC_OK, "root", NULL, "euid 0 (BPF, XDP, AF_XDP)");
	else
		say(d, DOC_MISSING, "root", "run rinxctl as root",
		    "euid %d: loading BPF and attaching XDP need root",
		    (int)geteuid());
}

static void chk_kernel(struct doctor *d)
{
	struct utsname u;

	if (uname(&u) || sscanf(u.release, "%d.%d", &d->kmajor,
				&d->kminor) != 2) {
		say(d, DOC_MISSING, "kernel", "a Linux kernel 5.18 or later",
		    "cannot read the kernel's release");
		return;
	}
	if (d->kmajor > DOC_KERNEL_MAJOR ||
	    (d->kmajor == DOC_KERNEL_MAJOR && d->kminor >= DOC_KERNEL_MINOR))
		say(d, DOC_OK, "kernel", NULL, "%s (%d.%d or later: XDP "
		    "multi-buffer, bpf_link)", u.release, DOC_KERNEL_MAJOR,
		    DOC_KERNEL_MINOR);
	else
		say(d, DOC_MISSING, "kernel", "boot a kernel 5.18 or later",
		    "%s is older than %d.%d (XDP multi-buffer, xdp.frags)",
		    u.release, DOC_KERNEL_MAJOR, DOC_KERNEL_MINOR);
}

static void chk_btf(struct doctor *d)
{
	if (!access("/sys/kernel/btf/vmlinux", R_OK))
		say(d, DOC_OK, "btf", NULL, "/sys/kernel/btf/vmlinux");
	else
		say(d, DOC_MISSING, "btf", "a kernel built with "
		    "CONFIG_DEBUG_INFO_BTF=y (Debian's is)",
		    "/sys/kernel/btf/vmlinux: %s", strerror(errno));
}

/* The bpf() syscall, then the host program itself through the verifier. */
static void chk_bpf(struct doctor *d, const struct rinx_spec *s)
{
	int fd, err;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rinx_doctor", 4, 4, 1, NULL);
	if (fd < 0) {
		say(d, DOC_MISSING, "bpf", "run as root; `sysctl "
		    "kernel.unprivileged_bpf_disabled` only matters for users",
		    "bpf() cannot create a map: %s", strerror(errno));
		return;
	}
	close(fd);
	say(d, DOC_OK, "bpf", NULL, "bpf() syscall creates maps");
	err = rinx_node_probe_load(s);
	if (err)
		say(d, DOC_MISSING, "program", "rerun with -v for the "
		    "verifier's log; a kernel 5.18 or later",
		    "the kernel refuses rinx's host program: %s",
		    strerror(-err));
	else
		say(d, DOC_OK, "program", NULL, "the verifier accepts rinx's "
		    "host program");
}

static void chk_bpffs(struct doctor *d, const struct rinx_spec *s, int spec)
{
	char fix[RINX_PATH_MAX * 2 + 96];
	struct statfs st;

	if (!spec) {
		FILE *f = fopen("/proc/filesystems", "r");
		char line[128];
		int found = 0;

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "\tbpf\n"))
				found = 1;
		if (f)
			fclose(f);
		if (found)
			say(d, DOC_OK, "bpffs", NULL, "the kernel has bpffs "
			    "(the spec's pin= must be one)");
		else
			say(d, DOC_MISSING, "bpffs", "a kernel with "
			    "CONFIG_BPF_SYSCALL", "no bpf filesystem in "
			    "/proc/filesystems");
		return;
	}
	snprintf(fix, sizeof(fix), "mkdir -p %s && mount -t bpf bpf %s "
		 "(rinxctl up does this itself)", s->pin, s->pin);
	if (statfs(s->pin, &st))
		say(d, DOC_MISSING, "bpffs", fix, "pin path %s: %s", s->pin,
		    strerror(errno));
	else if (st.f_type != BPF_FS_MAGIC)
		say(d, DOC_MISSING, "bpffs", fix, "pin path %s is not a bpffs "
		    "(filesystem magic 0x%lx)", s->pin,
		    (unsigned long)st.f_type);
	else
		say(d, DOC_OK, "bpffs", NULL, "pin path %s is a bpffs",
		    s->pin);
}

static __u64 mem_available(void)
{
	char line[128];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

/* The maps one node pins, against the memory left, and the locked-memory
 * limit where it still applies. */
static void chk_memory(struct doctor *d, const struct rinx_spec *s)
{
	__u64 need = 0, avail = mem_available();
	struct rlimit rl = { 0 };
	int memcg = d->kmajor > 5 || (d->kmajor == 5 &&
				      d->kminor >= DOC_MEMCG_MINOR);
	int err = rinx_node_map_bytes(s, &need);
	char lim[32];

	if (err) {
		say(d, DOC_MISSING, "memory", "rerun with -v",
		    "cannot size the host program's maps: %s", strerror(-err));
		return;
	}
	if (!avail)
		say(d, DOC_WARN, "memory", "check /proc/meminfo",
		    "the node's maps take %.0f MiB (window %u, %d jobs); "
		    "available memory unknown", need / 1048576.0, s->window,
		    s->jobs);
	else if (need > avail)
		say(d, DOC_MISSING, "memory", "a smaller window= or jobs= in the "
		    "spec's cluster line (memory scales with both)", "the node's "
		    "maps take %.0f MiB (window %u, %u jobs), more than the "
		    "%.0f MiB available", need / 1048576.0, s->window, s->jobs,
		    avail / 1048576.0);
	else
		say(d, need > avail / 2 ? DOC_WARN : DOC_OK, "memory",
		    "a smaller window= or jobs= in the spec's cluster line",
		    "the node's maps take %.0f MiB (window %u, %u jobs) of "
		    "%.0f MiB available", need / 1048576.0, s->window,
		    s->jobs, avail / 1048576.0);
	getrlimit(RLIMIT_MEMLOCK, &rl);
	if (rl.rlim_cur == RLIM_INFINITY)
		snprintf(lim, sizeof(lim), "unlimited");
	else
		snprintf(lim, sizeof(lim), "%.0f MiB",
			 rl.rlim_cur / 1048576.0);
	/* root has CAP_IPC_LOCK, which the AF_XDP umem's accounting
	 * honours; BPF maps count against memlock only before 5.11 */
	if (rl.rlim_cur == RLIM_INFINITY || (memcg && geteuid() == 0))
		say(d, DOC_OK, "memlock", NULL, "RLIMIT_MEMLOCK %s (%s)", lim,
		    memcg ? "BPF memory is charged to the memory cgroup" :
			    "unlimited");
	else if (!memcg && rl.rlim_cur < need)
		say(d, DOC_MISSING, "memlock", "ulimit -l unlimited (or "
		    "LimitMEMLOCK=infinity in a unit)", "RLIMIT_MEMLOCK %s is "
		    "below the %.0f MiB of maps (kernel before 5.11)", lim,
		    need / 1048576.0);
	else
		say(d, DOC_WARN, "memlock", "ulimit -l unlimited",
		    "RLIMIT_MEMLOCK %s limits the trainers' AF_XDP memory "
		    "when not root", lim);
}

static int if_mtu(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), mtu = -1;

	if (fd < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (!ioctl(fd, SIOCGIFMTU, &ifr))
		mtu = ifr.ifr_mtu;
	close(fd);
	return mtu;
}

/* The spec's MAC and IP on the node's interface. */
static void chk_addr(struct doctor *d, const struct rinx_spec_host *h)
{
	struct ifaddrs *ifa, *a;
	struct ifreq ifr = { 0 };
	char want[INET_ADDRSTRLEN], fix[160];
	const __u8 *m = (const __u8 *)ifr.ifr_hwaddr.sa_data;
	int fd, found = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", h->ifname);
	if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr))
		say(d, DOC_MISSING, "mac", "check the interface",
		    "cannot read the MAC of %s: %s", h->ifname,
		    strerror(errno));
	else if (memcmp(m, h->mac, 6))
		say(d, DOC_MISSING, "mac", "set mac= of the spec's host line "
		    "to the interface's", "%s has %02x:%02x:%02x:%02x:%02x:%02x,"
		    " the spec says %02x:%02x:%02x:%02x:%02x:%02x", h->ifname,
		    m[0], m[1], m[2], m[3], m[4], m[5], h->mac[0], h->mac[1],
		    h->mac[2], h->mac[3], h->mac[4], h->mac[5]);
	else
		say(d, DOC_OK, "mac", NULL, "%s has the spec's MAC",
		    h->ifname);
	if (fd >= 0)
		close(fd);
	inet_ntop(AF_INET, &h->ip, want, sizeof(want));
	if (getifaddrs(&ifa)) {
		say(d, DOC_MISSING, "ip", "check the interface",
		    "cannot list addresses: %s", strerror(errno));
		return;
	}
	for (a = ifa; a; a = a->ifa_next)
		if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
		    !strcmp(a->ifa_name, h->ifname) &&
		    ((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr ==
		    h->ip)
			found = 1;
	freeifaddrs(ifa);
	snprintf(fix, sizeof(fix), "ip addr add %s/PREFIXLEN dev %s, or the "
		 "interface's address as ip= in the spec", want, h->ifname);
	if (found)
		say(d, DOC_OK, "ip", NULL, "%s has the spec's %s", h->ifname,
		    want);
	else
		say(d, DOC_MISSING, "ip", fix, "%s lacks the spec's address %s",
		    h->ifname, want);
}

/* A program that passes every frame, taking multi-buffer frames as
 * rinx's (xdp.frags). */
static int pass_prog(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .prog_flags = BPF_F_XDP_HAS_FRAGS);

	return bpf_prog_load(BPF_PROG_TYPE_XDP, "rinx_doctor", "GPL", insns,
			     2, &po);
}

/* Which XDP mode works on the interface: the attached program's, or a
 * trivial program attached and detached at once. 2 native, 1 generic
 * only, 0 none; *why the native attach's error. */
static int xdp_mode(int ifindex, __u32 *attached, int *why)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int fd, mode = 0;

	*attached = 0;
	*why = 0;
	if (!bpf_xdp_query(ifindex, 0, &q) && q.attach_mode) {
		*attached = q.prog_id;
		if (q.attach_mode == XDP_ATTACHED_DRV ||
		    q.attach_mode == XDP_ATTACHED_HW || q.drv_prog_id)
			return 2;
		return 1;
	}
	fd = pass_prog();
	if (fd < 0) {
		*why = -errno;
		return 0;
	}
	if (!bpf_xdp_attach(ifindex, fd, XDP_FLAGS_DRV_MODE |
			    XDP_FLAGS_UPDATE_IF_NOEXIST, NULL)) {
		bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, NULL);
		mode = 2;
	} else {
		*why = -errno;
		if (!bpf_xdp_attach(ifindex, fd, XDP_FLAGS_SKB_MODE |
				    XDP_FLAGS_UPDATE_IF_NOEXIST, NULL)) {
			bpf_xdp_detach(ifindex, XDP_FLAGS_SKB_MODE, NULL);
			mode = 1;
		}
	}
	close(fd);
	return mode;
}

static void chk_xdp(struct doctor *d, const struct rinx_spec *s,
		    const char *ifname, int ifindex)
{
	int native = s->mode != RINX_XDP_GENERIC, why, mtu = if_mtu(ifname);
	int mode;
	__u32 id = 0;
	char fix[160];

	mode = xdp_mode(ifindex, &id, &why);
	if (mode == 2)
		say(d, DOC_OK, "xdp", NULL, "%s: native%s", ifname,
		    id ? " (a program is attached)" : " (probe attached and "
		    "detached)");
	else if (mode == 1)
		say(d, native ? DOC_MISSING : DOC_OK, "xdp", "mode=generic in "
		    "the spec's cluster line (slower), or a driver with "
		    "native XDP", "%s: generic only (native: %s)", ifname,
		    id ? "a generic program is attached" : strerror(-why));
	else
		say(d, DOC_MISSING, "xdp", "a kernel with XDP; no other XDP "
		    "program on the interface", "%s: no XDP mode attaches: %s",
		    ifname, strerror(-why));
	/* multi-buffer: a driver takes frames above one page only for
	 * programs that say they can (rinx's do); the probe above asked
	 * for it, so a refusal there is a refusal here too */
	snprintf(fix, sizeof(fix), "ip link set dev %s mtu %d, or "
		 "mode=generic", ifname, DOC_SINGLE_BUF_MTU);
	if (mtu <= DOC_SINGLE_BUF_MTU)
		say(d, DOC_OK, "multibuf", NULL, "not needed: MTU %d fits one "
		    "buffer (up to %d)", mtu, DOC_SINGLE_BUF_MTU);
	else if (mode == 2 || (mode == 1 && !native))
		say(d, DOC_OK, "multibuf", NULL, "needed for MTU %d (above "
		    "%d): the driver takes multi-buffer XDP programs", mtu,
		    DOC_SINGLE_BUF_MTU);
	else
		say(d, DOC_MISSING, "multibuf", fix, "needed for MTU %d (above "
		    "%d), and the driver refused a multi-buffer program", mtu,
		    DOC_SINGLE_BUF_MTU);
}

static void chk_afxdp(struct doctor *d)
{
	int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		say(d, DOC_MISSING, "af_xdp", "a kernel with CONFIG_XDP_SOCKETS",
		    "no AF_XDP socket: %s", strerror(errno));
		return;
	}
	close(fd);
	say(d, DOC_OK, "af_xdp", NULL, "AF_XDP sockets can be created");
}

static void chk_queues(struct doctor *d, const char *ifname, int ifindex)
{
	int nq = rinx_if_rx_queues(ifname, ifindex);
	char fix[96];

	snprintf(fix, sizeof(fix), "ethtool -L %s combined %d", ifname,
		 RINX_RX_QUEUES_MAX);
	if (nq > RINX_RX_QUEUES_MAX)
		say(d, DOC_MISSING, "queues", fix, "%s has %d receive queues; "
		    "a trainer serves at most %d", ifname, nq,
		    RINX_RX_QUEUES_MAX);
	else
		say(d, DOC_OK, "queues", NULL, "%s: %d receive queue%s, an "
		    "AF_XDP socket on each", ifname, nq, nq == 1 ? "" : "s");
}

/* The interface's checks, in the namespace the caller entered. */
static void chk_iface(struct doctor *d, const struct rinx_spec *s,
		      const struct rinx_spec_host *h, const char *ifname)
{
	char why[256], fix[96];
	int ifindex = if_nametoindex(ifname), bv;

	if (!ifindex) {
		say(d, DOC_MISSING, "interface", "ifname= of the spec's host "
		    "line: an interface of this host (ip link)",
		    "%s does not exist%s%s", ifname,
		    h && h->netns[0] ? " in netns " : "",
		    h ? h->netns : "");
		chk_afxdp(d);
		return;
	}
	say(d, DOC_OK, "interface", NULL, "%s (ifindex %d)", ifname, ifindex);
	if (rinx_check_mtu(s, h ? h->name : "-", ifname, &bv, why,
			   sizeof(why))) {
		snprintf(fix, sizeof(fix), "ip link set dev %s mtu %d", ifname,
			 RINX_IP_MTU(s->mtu >= RINX_IP_MTU(RINX_BLOCK_VALUES) ?
				     RINX_BLOCK_VALUES :
				     RINX_BLOCK_VALUES_MIN));
		say(d, DOC_MISSING, "mtu", fix, "%s", why);
	} else {
		say(d, DOC_OK, "mtu", NULL, "%s: MTU %d carries %d-byte rinx "
		    "frames (%d values)", ifname, if_mtu(ifname),
		    RINX_FRAME_LEN(bv), bv);
	}
	if (h)
		chk_addr(d, h);
	chk_xdp(d, s, ifname, ifindex);
	chk_afxdp(d);
	chk_queues(d, ifname, ifindex);
}

int doctor_check(const struct rinx_spec *s, const struct rinx_spec_host *h,
		 const char *ifname, FILE *out)
{
	struct doctor d = { .out = out };
	struct rinx_spec def;
	int oldfd = -1, err;

	if (!s) {
		rinx_spec_init(&def);
		s = &def;
	}
	chk_root(&d);
	chk_kernel(&d);
	chk_btf(&d);
	chk_bpf(&d, s);
	chk_bpffs(&d, s, s != &def);
	chk_memory(&d, s);
	if (h) {
		ifname = h->ifname;
		err = rinx_netns_enter(h->netns, &oldfd);
		if (err) {
			say(&d, DOC_MISSING, "netns", "the node's netns= must "
			    "exist (ip netns list)", "cannot enter %s: %s",
			    h->netns, strerror(-err));
			return d.missing;
		}
	}
	if (ifname)
		chk_iface(&d, s, h, ifname);
	else
		chk_afxdp(&d);
	rinx_netns_leave(oldfd);
	fprintf(out, "rinx doctor: %d missing, %d warning%s: %s\n",
		d.missing, d.warn, d.warn == 1 ? "" : "s",
		d.missing ? "this host cannot run the job" :
		h ? "this host can run the job" : "this host can run rinx");
	return d.missing;
}

struct doctor_args {
	const char *spec, *node, *ifname;
};

static const struct opt doctor_opts[] = {
	{ OPT_TEXT, .help =
	  "  checks, before anything is attached, that this host can run the spec's\n"
	  "  job as node NAME (its checks of the interface run in the node's netns),\n"
	  "  each printed as ok, warn or missing with how to fix it: root; kernel\n"
	  "  version (5.18 or later) and BTF; the bpf() syscall and the verifier on\n"
	  "  rinx's host program; bpffs at the spec's pin path; the kernel memory\n"
	  "  the node's maps will take (from the spec's window) against the memory\n"
	  "  available, and RLIMIT_MEMLOCK; the spec's interface, its MTU against the\n"
	  "  job's frames, its MAC and IP against the spec's; XDP native or generic\n"
	  "  (a trivial program attached and detached, or the attached program's\n"
	  "  mode); multi-buffer XDP where the MTU needs it; AF_XDP; the receive\n"
	  "  queues. Without --spec it checks the host itself (and interface IF).\n"
	  "  Exit 0 when nothing is missing, 6 otherwise. `rinxctl up` runs these\n"
	  "  checks first and refuses (exit 6) unless given --force."
	  "\n" },
	{ OPT_STR, "spec", 's', "FILE", OPT_AT(struct doctor_args, spec),
	  .help = "the cluster's spec (with --node)" },
	{ OPT_STR, "node", 'n', "NAME", OPT_AT(struct doctor_args, node),
	  .help = "the spec's node this host is" },
	{ OPT_STR, "ifname", 'i', "IF", OPT_AT(struct doctor_args, ifname),
	  .help = "without a spec: check this interface too" },
	{ OPT_END },
};

static const struct opts_cmd doctor_cmd = {
	.name = "doctor", .synopsis = "[--spec FILE --node NAME] [--ifname IF]",
	.tab = doctor_opts, .col = 17,
};

int cmd_doctor(int argc, char **argv)
{
	const struct rinx_spec_host *h = NULL;
	struct doctor_args a = { NULL };
	const char *spec, *node, *ifname;
	static struct rinx_spec s;
	char err[256];
	int ret;

	ret = opts_parse(&doctor_cmd, argc, argv, &a, NULL);
	if (ret)
		return opts_exit(ret);
	spec = a.spec;
	node = a.node;
	ifname = a.ifname;
	if (!spec != !node || (node && ifname)) {
		fprintf(stderr, "rinxctl doctor: --spec and --node go together, "
			"--ifname without them\n");
		return RINX_EXIT_USAGE;
	}
	if (spec) {
		if (rinx_spec_load(spec, &s, err, sizeof(err))) {
			fprintf(stderr, "rinxctl doctor: %s\n", err);
			return RINX_EXIT_CONFIG;
		}
		h = rinx_spec_host(&s, node);
		if (!h) {
			fprintf(stderr, "rinxctl doctor: node %s is not in %s\n",
				node, spec);
			return RINX_EXIT_CONFIG;
		}
		printf("rinx doctor: node %s of %s (%s%s%s)\n", node, spec,
		       h->ifname, h->netns[0] ? " in netns " : "", h->netns);
	} else {
		printf("rinx doctor: this host%s%s\n", ifname ? ", " : "",
		       ifname ? ifname : "");
	}
	return doctor_check(spec ? &s : NULL, h, ifname, stdout) ?
	       RINX_EXIT_NOPERM : 0;
}
