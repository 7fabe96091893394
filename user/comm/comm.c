// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Communicators: open (the node's pinned maps, the plan's tables, the job
 * entry, the ToR of an INA rack whose agent this rank is, the AF_XDP
 * context, the open barrier), the INA fallback's re-install, close, and
 * the communicator's accessors and statistics.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <xdp/xsk.h>
#include "user/comm/comm.h"
#include "user/quant/quant.h"
#include "user/comm/torctl.h"

/* Keeps the message for rinx_comm_error() and returns ret: the error
 * reports of every file of the communicator. */
int rinx_c_cerr(struct rinx_comm *c, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	pr_debug("%s\n", c->err);
	return ret;
}

static int open_pinned(struct rinx_comm *c, const char *dir, const char *name)
{
	char path[RINX_PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return rinx_c_cerr(c, -errno, "node %s is not up (cannot open %s: %s);"
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
	if (info.value_size != sizeof(struct rinx_slot) || !c->njobs ||
	    info.max_entries % c->njobs)
		return rinx_c_cerr(c, -EPROTO, "pinned maps of node %s are from an "
				   "incompatible rinx build", c->self->name);
	c->window = info.max_entries / c->njobs;
	bytes = (size_t)info.max_entries * info.value_size;
	bytes = (bytes + 4095) & ~(size_t)4095;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return rinx_c_cerr(c, -errno, "cannot mmap map: %s", strerror(errno));
	c->map_bytes = bytes;
	*out = p;
	return 0;
}

/* A pinned map's entries and entry size (0 and 0: cannot tell). */
static __u32 map_entries_of(int fd, __u32 *value_size)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		memset(&info, 0, sizeof(info));
	if (value_size)
		*value_size = info.value_size;
	return info.max_entries;
}

static __u32 map_entries(int fd)
{
	return map_entries_of(fd, NULL);
}

static int write_tables_at(struct rinx_comm *c, __u32 slot, int fd_nodes,
			   int fd_hops, const struct rinx_plan *p)
{
	__u32 k, cl;
	int i, t;

	for (i = 0; i < p->nnodes; i++) {
		k = slot * RINX_MAX_NODES + i;
		if (bpf_map_update_elem(fd_nodes, &k, &p->nodes[i], 0))
			return rinx_c_cerr(c, -errno, "cannot write node table: %s",
					   strerror(errno));
	}
	for (cl = 0; cl < RINX_MAX_CLASSES; cl++)
		for (t = 1; t <= RINX_HOP_TYPES; t++) {
			struct rinx_hop none = {};
			const struct rinx_hop *h = cl < (__u32)p->nclasses ?
				&p->hops[cl][t - 1] : &none;

			k = RINX_HOP_INDEX(slot, cl, t);
			if (bpf_map_update_elem(fd_hops, &k, h, 0))
				return rinx_c_cerr(c, -errno, "cannot write hop table: %s",
						   strerror(errno));
		}
	return 0;
}

/* Empties this job slot's aggregator slots (an earlier job's rounds would
 * make the new job's contributions look stale). */
static int clear_aggs_at(struct rinx_comm *c, __u32 slot, int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), i, k;
	struct rinx_agg *zero;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.max_entries < (slot + 1) * c->window)
		return rinx_c_cerr(c, -EPROTO, "aggregator of %s has %u slots, the "
				   "job needs %u: was the node brought up as an "
				   "agent/INA ToR with this spec?", c->self->name,
				   info.max_entries, (slot + 1) * c->window);
	zero = calloc(1, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	for (i = 0; i < c->window; i++) {
		k = slot * c->window + i;
		if (bpf_map_update_elem(fd, &k, zero, 0)) {
			free(zero);
			return rinx_c_cerr(c, -errno, "cannot reset aggregator slots: %s",
					   strerror(errno));
		}
	}
	free(zero);
	return 0;
}

/* The ToR's job entry and tables for rack ri (its aggregator node's plan). */
static int tor_job(struct rinx_comm *c, int ri, struct rinx_plan *p,
		   struct rinx_job *j)
{
	int self = rinx_plan_agg_node(&c->spec, ri), k, err;

	err = rinx_plan_build(p, &c->spec, self);
	if (err)
		return rinx_c_cerr(c, err, "cannot build the plan of ToR %s",
				   c->spec.racks[ri].name);
	memset(j, 0, sizeof(*j));
	j->token = c->token;
	/* slot 0 here: the ToR gives the job its own (rinx_claim_slot) */
	j->nclasses = p->nclasses;
	j->nnodes = p->nnodes;
	j->plen = p->plen;
	memcpy(j->cmap, p->cmap, sizeof(j->cmap));
	memset(j->start_to, 0xff, sizeof(j->start_to));	/* starts nothing */
	j->self = self;
	j->qbits = c->qbits;
	j->bval = c->bval;
	j->window = c->window;
	/* The ToR refuses rounds far ahead of the newest it took a frame
	 * of (RINX_AGG_AHEAD), which it can only know if every round
	 * passes it: block 0 of every round is in class cmap[0]. */
	j->round = c->round;
	for (k = RINX_T_REDUCE; k <= RINX_T_CONTRIB; k++)
		if (p->hops[p->cmap[0]][k - 1].action == RINX_A_AGG_FWD ||
		    p->hops[p->cmap[0]][k - 1].action == RINX_A_AGG_FINISH)
			j->ahead = RINX_AGG_AHEAD;
	return 0;
}

/* A request to rack ri's ToR control daemon (uapi/rinx_torctl.h). */
static int tor_call(struct rinx_comm *c, int ri, int op, void *req,
		    size_t len, int ms)
{
	struct rinx_torctl_hdr *h = req;

	h->op = op;
	h->job = htonl(c->job);
	h->token = htobe64(c->token);
	return rinx_torctl_call(c->spec.racks[ri].ip, RINX_TORCTL_PORT, req,
				len, ms);
}

static const char *tor_why(int err)
{
	switch (err) {
	case -ETIMEDOUT:
		return "no answer";
	case -ECONNREFUSED:
		return "its control daemon is not running";
	case -EACCES:
		return "the job's token was refused";
	case -EBUSY:
		return "its job slot is used by another job";
	case -ENOSPC:
		return "its aggregator has too few slots for the job";
	default:
		return strerror(-err);
	}
}

/* The agent of an ina=switch rack installs the job on its ToR's
 * aggregator (the rack's control point, Rina): by a message to the ToR's
 * control daemon at the ToR's address, resent until answered within the
 * communicator's timeout. */
static int install_tor_net(struct rinx_comm *c, int ri)
{
	const struct rinx_spec_rack *r = &c->spec.racks[ri];
	struct rinx_torctl_hdr *h;
	struct rinx_node *nodes;
	struct rinx_hop *hops;
	struct rinx_plan p;
	struct rinx_job *j;
	char ip[INET_ADDRSTRLEN];
	size_t len;
	int err, cl, t;
	void *req;

	req = calloc(1, RINX_TORCTL_MAX);
	if (!req)
		return -ENOMEM;
	h = req;
	j = (void *)(h + 1);
	err = tor_job(c, ri, &p, j);
	if (err)
		goto out;
	nodes = (void *)(j + 1);
	memcpy(nodes, p.nodes, p.nnodes * sizeof(*nodes));
	hops = (void *)(nodes + p.nnodes);
	for (cl = 0; cl < p.nclasses && cl < RINX_MAX_CLASSES; cl++)
		for (t = 1; t <= RINX_HOP_TYPES; t++)
			hops[cl * RINX_HOP_TYPES + t - 1] = p.hops[cl][t - 1];
	h->nnodes = p.nnodes;
	len = (char *)(hops + RINX_TORCTL_HOPS) - (char *)req;
	err = tor_call(c, ri, RINX_TORCTL_INSTALL, req, len, c->timeout_ms);
	if (err) {
		inet_ntop(AF_INET, &r->ip, ip, sizeof(ip));
		err = rinx_c_cerr(c, err, "the INA ToR %s of rack %d (%s port %d) "
				  "did not take job %u: %s", r->name, r->id, ip,
				  RINX_TORCTL_PORT, c->job, tor_why(err));
		goto out;
	}
	c->tor_rack = ri;
out:
	free(req);
	return err;
}

/* A ToR without hosts (a topology's PS, an aggregating spine) has no
 * agent: rank 0 installs the job in its pinned maps. */
static int install_tor(struct rinx_comm *c, int ri)
{
	const struct rinx_spec_rack *r = &c->spec.racks[ri];
	char dir[RINX_PATH_MAX + RINX_NAME_MAX];
	struct rinx_plan p;
	struct rinx_job j;
	int fd_jobs = -1, fd_nodes = -1, fd_hops = -1, fd_aggs = -1;
	int fd_claims = -1, err;
	char holders[256];
	__u32 key, slot = 0;

	snprintf(dir, sizeof(dir), "%s/%s", c->spec.pin, r->name);
	if ((fd_jobs = err = open_pinned(c, dir, "jobs")) < 0 ||
	    (fd_nodes = err = open_pinned(c, dir, "nodes")) < 0 ||
	    (fd_hops = err = open_pinned(c, dir, "hops")) < 0 ||
	    (fd_aggs = err = open_pinned(c, dir, "aggs")) < 0) {
		rinx_c_cerr(c, err, "the INA ToR %s of rack %d is not up (no pinned "
			    "maps in %s)", r->name, r->id, dir);
		goto out;
	}
	if ((fd_claims = err = open_pinned(c, dir, "claims")) < 0)
		goto out;
	err = rinx_claim_slot(fd_claims, fd_jobs, map_entries(fd_claims),
			      c->job, getpid(), holders, sizeof(holders));
	if (err == -EALREADY) {
		rinx_c_cerr(c, -EBUSY, "job %u is open on the INA ToR %s already "
			    "(process %s)", c->job, r->name, holders);
		err = -EBUSY;
		goto out;
	}
	if (err < 0) {
		rinx_c_cerr(c, err, "the INA ToR %s has no free job slot: "
			    "jobs %s hold them all", r->name, holders);
		goto out;
	}
	slot = err;
	err = tor_job(c, ri, &p, &j);
	j.slot = slot;
	if (!err)
		err = write_tables_at(c, slot, fd_nodes, fd_hops, &p);
	if (!err)
		err = clear_aggs_at(c, slot, fd_aggs);
	if (err) {
		rinx_claim_release(fd_claims, slot, c->job);
		goto out;
	}
	key = c->job;
	if (bpf_map_update_elem(fd_jobs, &key, &j, 0))
		err = rinx_c_cerr(c, -errno, "cannot write the ToR's job entry: %s",
				  strerror(errno));
	if (err) {
		rinx_claim_release(fd_claims, slot, c->job);
	} else {
		c->tor_jobs_fd = fd_jobs, fd_jobs = -1;
		c->tor_claims_fd = fd_claims, fd_claims = -1;
		c->tor_slot = slot;
	}
out:
	if (fd_claims >= 0)
		close(fd_claims);
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

/* Is the job still on rack ri's ToR (0), or gone (an error)? The ToR's
 * answer, or none within a quarter of the communicator's timeout (at least
 * 500 ms): a busy control CPU is not a dead aggregator. */
int rinx_c_tor_query(struct rinx_comm *c, int ri)
{
	struct rinx_torctl_hdr h = {};
	int ms = c->timeout_ms / 4 > 500 ? c->timeout_ms / 4 : 500;

	return tor_call(c, ri, RINX_TORCTL_QUERY, &h, sizeof(h), ms);
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
	j->flags = c->keep ? RINX_JOB_KEEP : 0;
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

/* Racks in `down` run as plain ring members from now on (Rina's incremental
 * deployment the other way round): every rank rebuilds the same plan, and
 * the agents of the INA racks left install it on their ToRs. */
int rinx_c_ina_replan(struct rinx_comm *c, __u32 down)
{
	__u32 key = c->job;
	int i, ri, err;

	for (i = 0; i < c->spec.nracks && i < 32; i++)
		if (down & (1U << i))
			c->spec.racks[i].ina = RINX_INA_NONE;
	c->tor_rack = -1;
	err = rinx_plan_build(&c->plan, &c->spec, c->rank);
	if (err)
		return rinx_c_cerr(c, err, "cannot rebuild the plan");
	rinx_c_reduce_peers(c);
	err = write_tables_at(c, c->slot, c->fd_nodes, c->fd_hops, &c->plan);
	if (err)
		return err;
	plan_job(c);
	if (bpf_map_update_elem(c->fd_jobs, &key, &c->jobent, 0))
		return rinx_c_cerr(c, -errno, "cannot write job entry: %s",
				   strerror(errno));
	ri = rinx_plan_agent_of(&c->spec, c->rank);
	if (ri >= 0 && c->spec.racks[ri].ina == RINX_INA_SWITCH) {
		err = install_tor_net(c, ri);
		if (err)
			return err;
	}
	c->down = down;
	c->st.ina_fallbacks++;
	pr_info("rank %d: INA racks %#x fell back to ring members\n", c->rank,
		down);
	return 0;
}

/* An aggregator with no host in its rack (a topology's PS, an aggregating
 * spine: only a topology spec has one) has no agent: rank 0 installs it,
 * before its own job entry, so no peer passes the open barrier first. */
static int install_hostless(struct rinx_comm *c)
{
	int ri, r, n, err, keep;

	if (c->rank != 0)
		return 0;
	for (ri = 0; ri < c->spec.nracks && ri < RINX_MAX_NODES; ri++) {
		if (c->spec.racks[ri].ina != RINX_INA_SWITCH)
			continue;
		for (r = n = 0; r < c->spec.nhosts; r++)
			n += c->spec.hosts[r].rack == c->spec.racks[ri].id;
		if (n)
			continue;
		keep = c->tor_jobs_fd;
		c->tor_jobs_fd = c->tor_claims_fd = -1;
		err = install_tor(c, ri);
		if (c->hostless_fd[ri] >= 0)
			close(c->hostless_fd[ri]);
		if (c->hostless_claims[ri] >= 0)
			close(c->hostless_claims[ri]);
		c->hostless_fd[ri] = c->tor_jobs_fd;
		c->hostless_claims[ri] = c->tor_claims_fd;
		c->hostless_slot[ri] = c->tor_slot;
		c->tor_jobs_fd = keep;
		c->tor_claims_fd = -1;
		if (err)
			return err;
	}
	return 0;
}

static int install(struct rinx_comm *c)
{
	char holders[256];
	__u32 key;
	int i, err, ri;

	/* the lowest free job slot of this node, whatever the job's id */
	err = rinx_claim_slot(c->fd_claims, c->fd_jobs, c->njobs, c->job,
			      getpid(), holders, sizeof(holders));
	if (err == -EALREADY)
		return rinx_c_cerr(c, -EBUSY, "job %u is open on node %s already "
				   "(process %s): one communicator per job and "
				   "node; close that one, or give this one "
				   "another job id", c->job, c->self->name,
				   holders);
	if (err < 0)
		return rinx_c_cerr(c, err, "node %s has no free job slot: its %u "
				   "slots are held by jobs %s (close one, or "
				   "bring the node up with more: spec jobs=)",
				   c->self->name, c->njobs, holders);
	c->slot = err;
	c->slot_held = 1;
	/* before the job entry: its first frames must find their way up */
	err = rinx_c_ring_set(c);
	if (err)
		return err;
	err = rinx_plan_build(&c->plan, &c->spec, c->rank);
	if (err)
		return rinx_c_cerr(c, err, "cannot build a plan for spec (%s)",
				   strerror(-err));
	rinx_c_reduce_peers(c);
	err = write_tables_at(c, c->slot, c->fd_nodes, c->fd_hops, &c->plan);
	if (err)
		return err;
	memset(&c->jobent, 0, sizeof(c->jobent));
	c->jobent.token = c->token;
	c->jobent.slot = c->slot;
	c->jobent.nclasses = c->plan.nclasses;
	c->jobent.nnodes = c->plan.nnodes;
	c->jobent.self = c->rank;
	c->jobent.qbits = c->qbits;
	c->jobent.bval = c->bval;
	c->jobent.window = c->window;
	c->jobent.plan_id = rinx_plan_id(c->spec.plan, c->spec.plan_nps);
	plan_job(c);
	memset(&c->cursors[c->slot], 0, sizeof(c->cursors[c->slot]));
	rinx_c_cc_init(c);
	/* Every rank starts at round 0 of a clean slot: results and shares
	 * are recognised by round, so whatever an earlier job left is wiped. */
	c->round = 0;
	for (i = 0; i < (int)c->window; i++) {
		c->result[c->slot * c->window + i].round = 0;
		c->share[c->slot * c->window + i].round = 0;
		c->partial[c->slot * c->window + i].round = 0;
	}
	if (c->fd_aggs >= 0) {
		err = clear_aggs_at(c, c->slot, c->fd_aggs);
		if (err)
			return err;
	}
	c->jobent.round = c->round;
	/* The ToR first: once this host's job entry exists, its program tells
	 * the peers the job is known here, and they start sending. */
	ri = rinx_plan_agent_of(&c->spec, c->rank);
	if (ri >= 0 && c->spec.racks[ri].ina == RINX_INA_SWITCH) {
		err = install_tor_net(c, ri);
		if (err)
			return err;
	}
	err = install_hostless(c);
	if (err)
		return err;
	key = c->job;
	if (bpf_map_update_elem(c->fd_jobs, &key, &c->jobent, 0))
		return rinx_c_cerr(c, -errno, "cannot write job entry: %s",
				   strerror(errno));
	return 0;
}

static struct rinx_comm open_fail_comm;

/* Why the plan cannot run jumbo blocks, or NULL: the host program runs
 * them through the ring's hops only (docs/rinx.md, "Jumbo blocks");
 * aggregator slots, INA ToRs and stores hold blocks of one slot. Decided
 * on the spec, so every rank comes to the same answer. */
static const char *plan_no_jumbo(const struct rinx_comm *c, char *buf,
				 size_t len)
{
	char name[32];
	int i;

	if (c->spec.plan != RINX_PLAN_RING && c->spec.plan != RINX_PLAN_RINA) {
		rinx_plan_name(c->spec.plan, c->spec.plan_nps, name,
			       sizeof(name));
		snprintf(buf, len, "plan %s aggregates or stores blocks "
			 "(only ring hops run jumbo blocks)", name);
		return buf;
	}
	for (i = 0; i < c->spec.nracks; i++)
		if (c->spec.racks[i].ina != RINX_INA_NONE) {
			snprintf(buf, len, "rack %d aggregates (ina=%s), and "
				 "aggregations hold blocks of at most %d values",
				 c->spec.racks[i].id,
				 c->spec.racks[i].ina == RINX_INA_SWITCH ?
				 "switch" : "agent", RINX_BLOCK_VALUES);
			return buf;
		}
	return NULL;
}

/* The IP MTU of this rank's interface, or -errno. */
static int if_mtu(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		err = -errno;
	close(fd);
	return err ? err : ifr.ifr_mtu;
}

/* The block size asked for (rinx_comm_opts.block_values) where it is not
 * the MTU's, in c->bval already (rinx_check_mtu): jumbo blocks where every
 * rank's network carries them (the spec's mtu=, else each interface's MTU:
 * ranks that come to different sizes fail at the open barrier), the plan
 * runs them and the AF_XDP sockets take frames of several buffers. Asked
 * for (RINX_BLOCK_JUMBO): refused otherwise; RINX_BLOCK_LARGEST: the MTU's
 * size then. */
static int choose_block(struct rinx_comm *c, int want)
{
	const int need = RINX_IP_MTU(RINX_BLOCK_VALUES_JUMBO);
	const char *why;
	char buf[200];
	int mtu;

	c->bslots = 1;
	c->wblocks = c->window;
	if (!want)
		return 0;
	if (want != RINX_BLOCK_JUMBO && want != RINX_BLOCK_LARGEST)
		return rinx_c_cerr(c, -EINVAL, "block_values %d: 0 (the MTU's), "
				   "%d (jumbo) or %d (the largest allowed)",
				   want, RINX_BLOCK_JUMBO, RINX_BLOCK_LARGEST);
	why = plan_no_jumbo(c, buf, sizeof(buf));
	if (!why && c->n > 1) {
		mtu = if_mtu(c->self->ifname);
		why = buf;
		if (c->spec.mtu && c->spec.mtu < need)
			snprintf(buf, sizeof(buf), "the spec's mtu=%d is below "
				 "the %d they need", c->spec.mtu, need);
		else if (mtu < need)
			snprintf(buf, sizeof(buf), "interface %s has MTU %d, "
				 "below the %d they need", c->self->ifname, mtu,
				 need);
		else if (c->x->ringed)
			snprintf(buf, sizeof(buf), "this process runs ringed "
				 "(another one holds the node's AF_XDP sockets), "
				 "and its ring takes frames of at most %d bytes",
				 RINX_FRAME_MAX);
		else if (!c->x->sg)
			snprintf(buf, sizeof(buf), "the AF_XDP sockets on %s "
				 "take no frames of several buffers",
				 c->self->ifname);
		else
			why = NULL;
	}
	if (!why && c->window / RINX_JUMBO_SLOTS == 0)
		why = "the job slot's window is below three slots";
	if (why && want == RINX_BLOCK_LARGEST) {
		pr_info("rank %d: blocks of %d values: no jumbo blocks, %s\n",
			c->rank, c->bval, why);
		return 0;
	}
	if (why)
		return rinx_c_cerr(c, strstr(why, "MTU") || strstr(why, "mtu=") ?
				   -EMSGSIZE : -EOPNOTSUPP,
				   "rank %d: jumbo blocks (%d values, %d-byte "
				   "frames) refused: %s", c->rank,
				   RINX_BLOCK_VALUES_JUMBO,
				   RINX_FRAME_LEN(RINX_BLOCK_VALUES_JUMBO), why);
	c->bval = RINX_BLOCK_VALUES_JUMBO;
	c->bslots = RINX_JUMBO_SLOTS;
	c->wblocks = c->window / RINX_JUMBO_SLOTS;
	return 0;
}

static void trace_open(struct rinx_comm *c);

RINX_API int rinx_comm_open(const struct rinx_comm_opts *o,
			    struct rinx_comm **out)
{
	char dir[RINX_PATH_MAX];
	struct rinx_comm *c;
	int err, fd_share = -1, fd_result = -1, fd_partial = -1;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd_jobs = c->fd_nodes = c->fd_hops = c->fd_xsks = -1;
	c->fd_aggs = c->tor_jobs_fd = c->fd_claims = c->tor_claims_fd = -1;
	c->fd_rings = c->fd_ring = -1;
	memset(c->hostless_claims, 0xff, sizeof(c->hostless_claims));
	c->tor_rack = -1;
	memset(c->hostless_fd, 0xff, sizeof(c->hostless_fd));
	/* options of an older caller end before `plan` */
	if (!o || o->sz < offsetof(struct rinx_comm_opts, plan) || !o->spec) {
		err = rinx_c_cerr(c, -EINVAL, "missing options or spec");
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
			err = rinx_c_cerr(c, -ENOENT, "node %s is not in spec %s",
					  o->node, o->spec);
		else
			err = rinx_c_cerr(c, -ENOENT, "rank %d is not in spec %s "
					  "(%d hosts)", o->rank, o->spec,
					  c->spec.nhosts);
		goto fail;
	}
	if (!o->job) {
		err = rinx_c_cerr(c, -EINVAL, "job id 0 is reserved");
		goto fail;
	}
	c->rank = c->self->rank;
	c->n = c->spec.nhosts;
	c->job = o->job;
	trace_open(c);
	c->token = o->token;
	c->qbits = rinx_qbits(c->n);
	/* a single rank sends nothing; others take the MTU's (open below) */
	c->bval = c->spec.mtu && c->spec.mtu < RINX_IP_MTU(RINX_BLOCK_VALUES) ?
		  RINX_BLOCK_VALUES_MIN : RINX_BLOCK_VALUES;
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
	    (fd_result = err = open_pinned(c, dir, "result")) < 0 ||
	    (fd_partial = err = open_pinned(c, dir, "partial")) < 0)
		goto fail;
	/* any host may aggregate: an agent, a tree node, a server */
	if ((c->fd_aggs = err = open_pinned(c, dir, "aggs")) < 0 ||
	    (c->fd_claims = err = open_pinned(c, dir, "claims")) < 0)
		goto fail;
	c->njobs = map_entries(c->fd_claims);
	/* absent on a node brought up by an older build: no ringed jobs */
	{
		char path[RINX_PATH_MAX + 16];

		snprintf(path, sizeof(path), "%s/rings", dir);
		c->fd_rings = bpf_obj_get(path);
	}
	err = map_share(c, fd_share, &c->share);
	if (err)
		goto fail;
	err = map_share(c, fd_result, &c->result);
	if (err)
		goto fail;
	err = map_share(c, fd_partial, &c->partial);
	if (err)
		goto fail;
	close(fd_share);
	close(fd_result);
	close(fd_partial);
	fd_share = fd_result = fd_partial = -1;
	{
		int fd = open_pinned(c, dir, "cursors");
		__u32 vsize;
		void *p;

		if (fd < 0) {
			err = fd;
			goto fail;
		}
		c->cursor_bytes = ((size_t)c->njobs * sizeof(*c->cursors) +
				   4095) & ~(size_t)4095;
		if (map_entries_of(fd, &vsize) != c->njobs ||
		    vsize != sizeof(*c->cursors)) {
			close(fd);
			err = rinx_c_cerr(c, -EPROTO, "pinned maps of node %s are "
					  "from an incompatible rinx build",
					  c->self->name);
			goto fail;
		}
		p = mmap(NULL, c->cursor_bytes, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, 0);
		close(fd);
		if (p == MAP_FAILED) {
			err = rinx_c_cerr(c, -errno, "cannot mmap cursors: %s",
					  strerror(errno));
			goto fail;
		}
		c->cursors = p;
	}
	if (c->n > 1) {
		err = rinx_check_mtu(&c->spec, c->self->name, c->self->ifname,
				     &c->bval, c->err, sizeof(c->err));
		if (err)
			goto fail;
		err = rinx_c_xctx_get(c, c->self->ifname, dir, &c->x);
		if (err)
			goto fail;
		/* registered here, unregistered at close; a job that another
		 * communicator of this process runs is refused by its node's
		 * claim (install), and stays registered for that one */
		c->xjob = !rinx_c_xctx_job(c->x, c->job, 1);
	}
	err = choose_block(c, o->sz >= offsetof(struct rinx_comm_opts,
						 block_values) +
			      sizeof(o->block_values) ? o->block_values : 0);
	if (err)
		goto fail;
	err = install(c);
	if (err)
		goto fail;
	if (c->n > 1) {
		err = rinx_c_open_barrier(c);
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
	if (fd_partial >= 0)
		close(fd_partial);
	/* keep the message reachable for the caller through a NULL comm */
	memcpy(open_fail_comm.err, c->err, sizeof(c->err));
	rinx_comm_close(c);
	return err;
}

/* RINX_TRACE=DIR in the environment: every communicator writes its
 * repair events to DIR/rinx-trace.JOB.RANK (appended; docs/rinx.md,
 * "Tracing repairs"). A directory that cannot take it leaves the trace
 * off, with a warning. */
static void trace_open(struct rinx_comm *c)
{
	const char *dir = getenv("RINX_TRACE");
	char path[512];

	if (!dir || !*dir)
		return;
	snprintf(path, sizeof(path), "%s/rinx-trace.%u.%d", dir, c->job,
		 c->rank);
	c->trace = fopen(path, "ae");	/* not inherited by an exec */
	if (!c->trace)
		pr_warn("RINX_TRACE: cannot open %s: %s: no trace", path,
			strerror(errno));
}

void rinx_c_trace(struct rinx_comm *c, const char *fmt, ...)
{
	struct timespec ts;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(c->trace, "%llu %d ",
		(unsigned long long)ts.tv_sec * 1000000000ull +
		(unsigned long long)ts.tv_nsec, c->rank);
	va_start(ap, fmt);
	vfprintf(c->trace, fmt, ap);
	va_end(ap);
	fputc('\n', c->trace);
}

RINX_API void rinx_comm_close(struct rinx_comm *c)
{
	__u32 key;
	int i;

	if (!c)
		return;
	if (c->active) {
		rinx_cancel(c->active);
		c->clean = 0;
	}
	/* peers may still need this rank's part of the last collective */
	if (c->x && c->n > 1 && c->clean && c->st.ops && !c->ps && !c->broken)
		rinx_c_close_linger(c);
	rinx_c_ps_detach(c);
	rinx_c_req_release(c->spare);
	c->spare = NULL;
	/* only a slot this communicator claimed: a refused open of a job
	 * open elsewhere on the node must leave that one's entry */
	if (c->fd_jobs >= 0 && c->slot_held && c->jobent.token == c->token &&
	    c->job) {
		struct rinx_job cur;

		key = c->job;
		if (!bpf_map_lookup_elem(c->fd_jobs, &key, &cur) &&
		    cur.slot == c->slot)
			bpf_map_delete_elem(c->fd_jobs, &key);
	}
	/* the job entry first: no frame of the job finds the slot after */
	rinx_c_ring_put(c);
	if (c->slot_held)
		rinx_claim_release(c->fd_claims, c->slot, c->job);
	if (c->fd_claims >= 0)
		close(c->fd_claims);
	if (c->tor_rack >= 0) {
		struct rinx_torctl_hdr h = {};

		/* unanswered, the job stays on the ToR and holds its slot
		 * (another job's INSTALL there gets EBUSY) */
		tor_call(c, c->tor_rack, RINX_TORCTL_REMOVE, &h, sizeof(h),
			 c->timeout_ms / 4 > 500 ? c->timeout_ms / 4 : 500);
	}
	for (i = 0; i < RINX_MAX_NODES; i++)
		if (c->hostless_fd[i] >= 0) {
			key = c->job;
			bpf_map_delete_elem(c->hostless_fd[i], &key);
			close(c->hostless_fd[i]);
			rinx_claim_release(c->hostless_claims[i],
					   c->hostless_slot[i], c->job);
		}
	for (i = 0; i < RINX_MAX_NODES; i++)
		if (c->hostless_claims[i] >= 0)
			close(c->hostless_claims[i]);
	if (c->fd_aggs >= 0)
		close(c->fd_aggs);
	if (c->x) {
		if (c->xjob)
			rinx_c_xctx_job(c->x, c->job, 0);
		rinx_c_xctx_put(c->x);
	}
	if (c->trace)
		fclose(c->trace);
	if (c->cursors)
		munmap(c->cursors, c->cursor_bytes);
	if (c->share)
		munmap(c->share, c->map_bytes);
	if (c->result)
		munmap(c->result, c->map_bytes);
	if (c->partial)
		munmap(c->partial, c->map_bytes);
	if (c->fd_jobs >= 0)
		close(c->fd_jobs);
	if (c->fd_nodes >= 0)
		close(c->fd_nodes);
	if (c->fd_hops >= 0)
		close(c->fd_hops);
	if (c->fd_xsks >= 0)
		close(c->fd_xsks);
	if (c->fd_rings >= 0)
		close(c->fd_rings);
	free(c);
}

RINX_API int rinx_comm_rank(const struct rinx_comm *c) { return c->rank; }
RINX_API int rinx_comm_size(const struct rinx_comm *c) { return c->n; }
RINX_API int rinx_comm_block_values(const struct rinx_comm *c)
{
	return c->bval;
}

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
