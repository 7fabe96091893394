// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Link emulation: every switch port's rate, delay, loss and queue
 * (struct rinx_sw_link), set at `up` and changed on a running testbed.
 */
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <bpf/bpf.h>
#include "tools/testbed/tb.h"

void link_pin_dir(const struct rinx_spec *s, const char *ns,
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
int host_pace(const struct rinx_spec_host *h, __u32 rate_mbit)
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
	if (f->share > RINX_SW_SHARE_MAX)
		f->share = RINX_SW_SHARE_MAX;
	f->real = !!f->real;
}

/* A fresh link value: settings f (defaults filled), queue empty, counters
 * zero, settings time now. */
void link_fresh(struct rinx_sw_link *v, const struct rinx_sw_link_set *f)
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
int link_port_init(struct switch_bpf *skel, const char *ns,
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

/* A switch's maps the control plane opens later: the ports' links, and
 * the real queue's sockets and their slots (tools/testbed/queue.c). */
static const char *const link_pins[] = { "links", "xsks", "xsk_slot" };

int link_pin(const struct rinx_spec *s, const char *ns,
	     struct switch_bpf *skel)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	struct bpf_map *pins[] = { skel->maps.links, skel->maps.xsks,
				   skel->maps.xsk_slot };
	int err, i;

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
	for (i = 0; i < (int)NELEM(pins); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, link_pins[i]);
		unlink(path);
		if (bpf_obj_pin(bpf_map__fd(pins[i]), path)) {
			err = -errno;
			pr_warn("switch %s: cannot pin %s: %s\n", ns, path,
				strerror(errno));
			while (i-- > 0) {
				snprintf(path, sizeof(path), "%s/%s", dir,
					 link_pins[i]);
				unlink(path);
			}
			rmdir(dir);
			return err;
		}
	}
	return 0;
}

void link_unpin(const struct rinx_spec *s, const char *ns)
{
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	int i;

	link_pin_dir(s, ns, dir, sizeof(dir));
	for (i = 0; i < (int)NELEM(link_pins); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, link_pins[i]);
		unlink(path);
	}
	/* a topology switch's (tt_pins) */
	snprintf(path, sizeof(path), "%s/flows", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bcast", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/port_egress", dir);
	unlink(path);
	rmdir(dir);
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
	if (mask & RINX_TB_F_SHARE)
		n.share = f->share;
	if (mask & RINX_TB_F_REAL)
		n.real = f->real;
	link_fresh(&v, &n);
	return bpf_map_update_elem(fd, &ifindex, &v, BPF_EXIST | BPF_F_LOCK) ?
	       -errno : 0;
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
