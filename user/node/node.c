// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Attaching the host program to a node and pinning it.
 *
 * Layout under <pin>/<node>/: link (the XDP bpf_link: unpinning it detaches),
 * jobs, claims, nodes, hops, share, result, partial, aggs, cursors, xsks,
 * rings, stats, psconf, store (the maps the trainers and rinxctl open).
 * Nothing is left behind by rinx_node_down.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/log.h"
#include "user/node/node.h"
#include "user/plan/plan.h"
#include "host.skel.h"

static const char *const pinned_maps[] = {
	"jobs", "claims", "nodes", "hops", "share", "result", "partial", "xsks",
	"rings", "stats", "aggs", "cursors", "psconf", "store",
};

static const char *const stat_names[RINX_STAT_MAX] = {
	[RINX_STAT_RX] = "rx",
	[RINX_STAT_PASS] = "pass",
	[RINX_STAT_REDUCE_FWD] = "reduce_fwd",
	[RINX_STAT_REDUCE_FINISH] = "reduce_finish",
	[RINX_STAT_GATHER_FWD] = "gather_fwd",
	[RINX_STAT_GATHER_END] = "gather_end",
	[RINX_STAT_SLOW_NOT_READY] = "slow_not_ready",
	[RINX_STAT_SLOW_FUTURE] = "slow_future",
	[RINX_STAT_SLOW_MISMATCH] = "slow_mismatch",
	[RINX_STAT_DROP_SHORT] = "drop_short",
	[RINX_STAT_DROP_VERSION] = "drop_version",
	[RINX_STAT_DROP_TYPE] = "drop_type",
	[RINX_STAT_DROP_JOB] = "drop_job",
	[RINX_STAT_DROP_TOKEN] = "drop_token",
	[RINX_STAT_DROP_SENDER] = "drop_sender",
	[RINX_STAT_DROP_BOUNDS] = "drop_bounds",
	[RINX_STAT_DROP_STALE] = "drop_stale",
	[RINX_STAT_DROP_NO_ROUTE] = "drop_no_route",
	[RINX_STAT_DROP_NO_XSK] = "drop_no_xsk",
	[RINX_STAT_ABORTED] = "aborted",
	[RINX_STAT_AGG_ADD] = "agg_add",
	[RINX_STAT_AGG_DONE] = "agg_done",
	[RINX_STAT_AGG_MCAST] = "agg_mcast",
	[RINX_STAT_DROP_AGG_DUP] = "drop_agg_dup",
	[RINX_STAT_DROP_AGG_STALE] = "drop_agg_stale",
	[RINX_STAT_AGG_RESET] = "agg_reset",
	[RINX_STAT_AGG_RESEND] = "agg_resend",
	[RINX_STAT_SLOW_HELLO] = "slow_hello",
	[RINX_STAT_RECYCLED] = "recycled",
	[RINX_STAT_REPAIR] = "repair",
	[RINX_STAT_NACK_MISS] = "nack_miss",
	[RINX_STAT_AGG_REEMIT] = "agg_reemit",
	[RINX_STAT_HELLO_EARLY] = "hello_early",
	[RINX_STAT_HELLO_YES] = "hello_yes",
	[RINX_STAT_ECN_CE] = "ecn_ce",
	[RINX_STAT_PACED] = "paced",
	[RINX_STAT_SLOW_SELF] = "slow_self",
	[RINX_STAT_POOL_PASS] = "pool_pass",
	[RINX_STAT_POOL_FLUSH] = "pool_flush",
	[RINX_STAT_POOL_RESEND] = "pool_resend",
	[RINX_STAT_AGG_OVERLAP] = "agg_overlap",
	[RINX_STAT_DROP_MEMBER] = "drop_member",
	[RINX_STAT_DROP_AHEAD] = "drop_ahead",
	[RINX_STAT_DROP_SHAPE] = "drop_shape",
	[RINX_STAT_RREPAIR] = "rrepair",
	[RINX_STAT_RNACK_MISS] = "rnack_miss",
	[RINX_STAT_DROP_DUP] = "drop_dup",
	[RINX_STAT_PS_PUSH] = "ps_push",
	[RINX_STAT_PS_DUP] = "ps_dup",
	[RINX_STAT_PS_PULL] = "ps_pull",
	[RINX_STAT_PS_STALE] = "ps_stale",
	[RINX_STAT_PS_RANGE] = "ps_range",
	[RINX_STAT_PS_LEAVE] = "ps_leave",
	[RINX_STAT_SLOW_PS] = "slow_ps",
	[RINX_STAT_AGG_PULL] = "agg_pull",
	[RINX_STAT_NACK_PULL] = "nack_pull",
	[RINX_STAT_NACK_SUM] = "nack_sum",
	[RINX_STAT_FAIR_UNMARK] = "fair_unmark",
};

const char *rinx_stat_name(int stat)
{
	if (stat < 0 || stat >= RINX_STAT_MAX || !stat_names[stat])
		return "?";
	return stat_names[stat];
}

void rinx_node_pin_dir(const struct rinx_spec *s,
		       const struct rinx_spec_host *h, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", s->pin, h->name);
}

void rinx_size_tables(struct bpf_map *jobs, struct bpf_map *claims,
		      struct bpf_map *nodes, struct bpf_map *hops, __u32 njobs)
{
	bpf_map__set_max_entries(jobs, njobs);
	bpf_map__set_max_entries(claims, njobs);
	bpf_map__set_max_entries(nodes, njobs * RINX_MAX_NODES);
	bpf_map__set_max_entries(hops, njobs * RINX_MAX_CLASSES *
				 RINX_HOP_TYPES);
}

/* The kernel's own account of the memory a map pins (its fdinfo's
 * memlock line), or -errno. */
static long long map_memlock(int fd)
{
	char path[64], line[128];
	long long v = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

long long rinx_pinned_mem(const char *dir)
{
	char path[RINX_PATH_MAX + RINX_NAME_MAX + 16];
	long long sum = 0, v;
	DIR *d = opendir(dir);
	struct dirent *e;
	int fd;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "link"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;	/* not a map (a program, a link) */
		v = map_memlock(fd);
		close(fd);
		if (v > 0)
			sum += v;
	}
	closedir(d);
	return sum;
}

static int mkdir_p(const char *path)
{
	char tmp[RINX_PATH_MAX];
	char *p;

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

int rinx_pin_root_ready(const char *pin)
{
	struct statfs st;
	int err;

	err = mkdir_p(pin);
	if (err) {
		pr_warn("cannot create pin directory %s: %s\n", pin,
			strerror(-err));
		return err;
	}
	if (statfs(pin, &st))
		return -errno;
	if (st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", pin, "bpf", 0, "mode=0700")) {
		err = -errno;
		pr_warn("cannot mount bpffs on %s: %s\n", pin, strerror(errno));
		return err;
	}
	return 0;
}

static void unpin_all(const char *dir)
{
	char path[RINX_PATH_MAX + 16];
	size_t i;

	snprintf(path, sizeof(path), "%s/link", dir);
	unlink(path);
	for (i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, pinned_maps[i]);
		unlink(path);
	}
	rmdir(dir);
}

int rinx_check_mtu(const struct rinx_spec *s, const char *node,
		   const char *ifname, int *bval, char *err, size_t errlen)
{
	const int small = RINX_IP_MTU(RINX_BLOCK_VALUES_MIN);
	const int big = RINX_IP_MTU(RINX_BLOCK_VALUES);
	struct ifreq ifr = { 0 };
	int fd, mtu, bv, need;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rinx_seterr(err, errlen, -errno, "node %s: no socket to "
				   "read the MTU of %s: %s", node, ifname,
				   strerror(errno));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr)) {
		int e = errno;

		close(fd);
		return rinx_seterr(err, errlen, -e, "node %s: cannot read the "
				   "MTU of %s: %s", node, ifname, strerror(e));
	}
	close(fd);
	mtu = ifr.ifr_mtu;
	if (s && s->mtu) {
		bv = s->mtu >= big ? RINX_BLOCK_VALUES : RINX_BLOCK_VALUES_MIN;
		need = RINX_IP_MTU(bv);
		if (mtu < need)
			return rinx_seterr(err, errlen, -EMSGSIZE, "node %s: "
					   "interface %s has MTU %d; the spec's "
					   "mtu=%d gives %d-byte frames, which "
					   "need an MTU of %d (ip link set dev "
					   "%s mtu %d, or a smaller mtu= in the "
					   "spec, down to %d)", node, ifname, mtu,
					   s->mtu, RINX_FRAME_LEN(bv), need,
					   ifname, need, small);
	} else {
		if (mtu < small)
			return rinx_seterr(err, errlen, -EMSGSIZE, "node %s: "
					   "interface %s has MTU %d; rinx frames "
					   "need an MTU of at least %d (%d-byte "
					   "frames; %d for %d-byte frames): ip "
					   "link set dev %s mtu %d", node, ifname,
					   mtu, small, RINX_FRAME_MIN, big,
					   RINX_FRAME_MAX, ifname, small);
		bv = mtu >= big ? RINX_BLOCK_VALUES : RINX_BLOCK_VALUES_MIN;
	}
	if (bval)
		*bval = bv;
	return 0;
}

/* The group MACs a host receives (uapi/rinx.h): its rack's two
 * (03:72:78:<rack>:00:00 and :01) and the fabric's (03:72:78:ff:ff:00),
 * joined on its interface (add) or left: a real NIC's filter drops a
 * multicast address nobody joined, and a plain switch floods a rack's
 * gather to every port. 0 or -errno. */
static int node_groups(const struct rinx_spec_host *h, int add)
{
	static const __u8 tail[3][3] = { { 0, 0, 0 }, { 0, 0, 1 },
					 { 0xff, 0xff, 0 } };
	struct ifreq ifr;
	int fd, i, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	for (i = 0; i < 3; i++) {
		__u8 *m = (__u8 *)ifr.ifr_hwaddr.sa_data;

		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", h->ifname);
		ifr.ifr_hwaddr.sa_family = AF_UNSPEC;
		m[0] = RINX_GROUP_MAC0;
		m[1] = RINX_GROUP_MAC1;
		m[2] = RINX_GROUP_MAC2;
		m[3] = i < 2 ? (__u8)h->rack : tail[i][0];
		m[4] = tail[i][1];
		m[5] = tail[i][2];
		if (ioctl(fd, add ? SIOCADDMULTI : SIOCDELMULTI, &ifr) &&
		    !err)
			err = -errno;
	}
	close(fd);
	return err;
}

/* The host program's knobs and map sizes for a spec (with window as the
 * window): one place for rinx_node_up and the doctor's estimates. The
 * spec's jobs slots of a window each: the kernel memory a node pins
 * follows the spec (rinx_spec_mem), whatever the tensors. */
static void host_size(struct host_bpf *skel, const struct rinx_spec *s,
		      __u32 window)
{
	skel->rodata->rinx_port_be = htons(s->port);
	skel->rodata->rinx_window = window;
	bpf_map__set_max_entries(skel->maps.share, s->jobs * window);
	bpf_map__set_max_entries(skel->maps.result, s->jobs * window);
	bpf_map__set_max_entries(skel->maps.partial, s->jobs * window);
	/* any host may aggregate (a rack's agent, a tree node, a parameter
	 * server: the plan is the job's choice): a window of slots per job */
	bpf_map__set_max_entries(skel->maps.aggs, s->jobs * window);
	bpf_map__set_max_entries(skel->maps.cursors, s->jobs);
	rinx_size_tables(skel->maps.jobs, skel->maps.claims, skel->maps.nodes,
			 skel->maps.hops, s->jobs);
}

static __u64 round8(__u64 x)
{
	return (x + 7) & ~7ull;
}

static __u64 rinx_pow2(__u64 x)
{
	__u64 p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

int rinx_node_map_bytes(const struct rinx_spec *s, __u64 *bytes)
{
	int ncpu = libbpf_num_possible_cpus();
	struct host_bpf *skel;
	struct bpf_map *m;

	*bytes = 0;
	skel = host_bpf__open();
	if (!skel)
		return -errno;
	host_size(skel, s, s->window);
	/* what the kernel allocates per map type (kernel/bpf/arraymap.c,
	 * hashtab.c): values rounded to 8 bytes, per CPU for per-CPU maps;
	 * a hash element carries about 48 bytes of its own; other maps a
	 * pointer per entry */
	bpf_object__for_each_map(m, skel->obj) {
		__u64 n = bpf_map__max_entries(m);
		__u64 v = round8(bpf_map__value_size(m));
		__u64 k = round8(bpf_map__key_size(m));

		/* a hash without preallocation (the PS's store) pins its
		 * buckets; its entries come and go with the stores */
		if (bpf_map__map_flags(m) & BPF_F_NO_PREALLOC) {
			*bytes += rinx_pow2(n) * 16;
			continue;
		}
		switch (bpf_map__type(m)) {
		case BPF_MAP_TYPE_ARRAY:
			*bytes += n * v;
			break;
		case BPF_MAP_TYPE_PERCPU_ARRAY:
			*bytes += n * v * (ncpu > 0 ? ncpu : 1);
			break;
		case BPF_MAP_TYPE_PERCPU_HASH:
			*bytes += n * (k + 48 + v * (ncpu > 0 ? ncpu : 1));
			break;
		case BPF_MAP_TYPE_HASH:
		case BPF_MAP_TYPE_LRU_HASH:
			*bytes += n * (k + v + 48);
			break;
		default:
			*bytes += n * 8;
		}
	}
	host_bpf__destroy(skel);
	return 0;
}

int rinx_node_probe_load(const struct rinx_spec *s)
{
	struct host_bpf *skel;
	int err;

	skel = host_bpf__open();
	if (!skel)
		return -errno;
	/* a window of 64: the verifier's work does not depend on the window
	 * (a run-time bound, rinx_window), and the spec's could take hundreds
	 * of MiB for a moment; the maps' memory is rinx_node_map_bytes' */
	host_size(skel, s, 64);
	err = host_bpf__load(skel);
	host_bpf__destroy(skel);
	return err;
}

int rinx_node_up(const struct rinx_spec *s, const struct rinx_spec_host *h)
{
	char why[256];
	LIBBPF_OPTS(bpf_link_create_opts, lopts);
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	struct host_bpf *skel = NULL;
	struct bpf_map *map;
	int ifindex, link_fd = -1, err;
	size_t i;

	ifindex = if_nametoindex(h->ifname);
	if (!ifindex) {
		pr_warn("node %s: interface %s not found%s%s\n", h->name,
			h->ifname, h->netns[0] ? " in netns " : "", h->netns);
		return -ENODEV;
	}
	err = rinx_check_mtu(s, h->name, h->ifname, NULL, why, sizeof(why));
	if (err) {
		pr_warn("%s\n", why);
		return err;
	}
	err = rinx_pin_root_ready(s->pin);
	if (err)
		return err;
	rinx_node_pin_dir(s, h, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/link", dir);
	if (access(path, F_OK) == 0) {
		pr_warn("node %s is already up (%s exists); run down first\n",
			h->name, dir);
		return -EEXIST;
	}
	err = mkdir_p(dir);
	if (err)
		return err;

	skel = host_bpf__open();
	if (!skel) {
		err = -errno;
		pr_warn("node %s: cannot open the host program\n", h->name);
		goto fail;
	}
	host_size(skel, s, s->window);
	err = host_bpf__load(skel);
	if (err) {
		pr_warn("node %s: host program rejected by the kernel: %s "
			"(rerun with -v for the verifier log)\n", h->name,
			strerror(-err));
		goto fail;
	}
	lopts.flags = s->mode == RINX_XDP_GENERIC ? XDP_FLAGS_SKB_MODE :
						    XDP_FLAGS_DRV_MODE;
	link_fd = bpf_link_create(bpf_program__fd(skel->progs.rinx_host),
				  ifindex, BPF_XDP, &lopts);
	if (link_fd < 0) {
		err = -errno;
		pr_warn("node %s: cannot attach XDP (%s mode) to %s: %s\n",
			h->name, s->mode == RINX_XDP_GENERIC ? "generic" :
			"native", h->ifname, strerror(errno));
		goto fail;
	}
	for (i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++) {
		map = bpf_object__find_map_by_name(skel->obj, pinned_maps[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, pinned_maps[i]);
		if (!map || bpf_obj_pin(bpf_map__fd(map), path)) {
			err = map ? -errno : -ENOENT;
			pr_warn("node %s: cannot pin %s: %s\n", h->name, path,
				strerror(-err));
			goto fail;
		}
	}
	/* The link goes last: its pin is what "up" means. */
	snprintf(path, sizeof(path), "%s/link", dir);
	if (bpf_obj_pin(link_fd, path)) {
		err = -errno;
		pr_warn("node %s: cannot pin %s: %s\n", h->name, path,
			strerror(errno));
		goto fail;
	}
	close(link_fd);
	host_bpf__destroy(skel);
	err = node_groups(h, 1);
	if (err)
		pr_warn("node %s: cannot join the rinx group MACs on %s: %s "
			"(agent racks and tree results need them on a NIC "
			"that filters multicast)\n", h->name, h->ifname,
			strerror(-err));
	return 0;
fail:
	if (link_fd >= 0)
		close(link_fd);
	host_bpf__destroy(skel);
	unpin_all(dir);
	return err;
}

int rinx_node_down(const struct rinx_spec *s, const struct rinx_spec_host *h)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	int was_up;

	rinx_node_pin_dir(s, h, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/link", dir);
	was_up = access(path, F_OK) == 0;
	unpin_all(dir);
	if (was_up)
		node_groups(h, 0);
	if (access(dir, F_OK) == 0) {
		pr_warn("node %s: %s could not be removed\n", h->name, dir);
		return -EBUSY;
	}
	return was_up ? 0 : -ENOENT;
}

int rinx_node_stats(const struct rinx_spec *s, const struct rinx_spec_host *h,
		    __u64 out[RINX_STAT_MAX])
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	int ncpu = libbpf_num_possible_cpus();
	__u64 vals[ncpu > 0 ? ncpu : 1];
	int fd, i, c, err = 0;

	if (ncpu <= 0)
		return -EINVAL;
	rinx_node_pin_dir(s, h, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/stats", dir);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		err = -errno;
		return err;
	}
	for (i = 0; i < RINX_STAT_MAX; i++) {
		__u32 k = i;

		out[i] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals)) {
			err = -errno;
			break;
		}
		for (c = 0; c < ncpu; c++)
			out[i] += vals[c];
	}
	close(fd);
	return err;
}

int rinx_node_jobs(const struct rinx_spec *s, const struct rinx_spec_host *h,
		   struct rinx_node_job *out, int max)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	__u32 key, next, *prev = NULL;
	int fj, fc, n = 0, err = 0;

	rinx_node_pin_dir(s, h, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/jobs", dir);
	fj = bpf_obj_get(path);
	if (fj < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/cursors", dir);
	fc = bpf_obj_get(path);
	if (fc < 0) {
		err = -errno;
		close(fj);
		return err;
	}
	/* read-only walk: the library may install or remove jobs meanwhile,
	 * so a job may be missed or seen twice; bounded by the table size */
	while (n < max && n < 2 * RINX_MAX_JOBS &&
	       !bpf_map_get_next_key(fj, prev, &next)) {
		struct rinx_node_job *o = &out[n];

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fj, &key, &o->job))
			continue;
		o->id = key;
		if (o->job.slot >= RINX_MAX_JOBS ||
		    bpf_map_lookup_elem(fc, &o->job.slot, &o->cursor))
			memset(&o->cursor, 0, sizeof(o->cursor));
		n++;
	}
	close(fc);
	close(fj);
	return n;
}
