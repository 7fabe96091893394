// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The INA ToR's control-plane daemon, the testbed's stand-in for a
 * programmable switch's control CPU: it checks a job's token and writes the
 * aggregator's maps (uapi/rinx_torctl.h). A trainer only ever sends the
 * requests (rinx_torctl_call, user/comm/torctl.c).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include "uapi/rinx_torctl.h"
#include "tools/testbed/testbed.h"

struct tor_maps {
	int jobs, nodes, hops, aggs, claims;
	__u32 aggs_max, njobs;
};

static int tor_install(struct tor_maps *m, const struct rinx_torctl_hdr *h,
		       const void *body, size_t blen)
{
	const struct rinx_job *j = body;
	const struct rinx_node *nodes = (const void *)(j + 1);
	const struct rinx_hop *hops;
	struct rinx_job cur, mine;
	struct rinx_agg *zero;
	__u32 key = ntohl(h->job), k, i, cl, t, slot;
	unsigned nn = h->nnodes;
	int err = 0;

	if (nn > RINX_MAX_NODES || blen != sizeof(*j) + nn * sizeof(*nodes) +
	    RINX_TORCTL_HOPS * sizeof(*hops))
		return EINVAL;
	hops = (const void *)(nodes + nn);
	if (j->token != be64toh(h->token) || j->nnodes != nn || !j->window)
		return EINVAL;
	if (!bpf_map_lookup_elem(m->jobs, &key, &cur) && cur.token != j->token)
		return EACCES;
	/* The ToR's own slot (the sender's is its host's): the job's old
	 * one if it installs again, else the lowest free; held (pid 0) until
	 * the job's REMOVE. */
	err = rinx_claim_slot(m->claims, m->jobs, m->njobs, key, 0, NULL, 0);
	if (err < 0)
		return -err;
	slot = err;
	mine = *j;
	mine.slot = slot;
	j = &mine;
	if (m->aggs_max < (j->slot + 1) * j->window) {
		rinx_claim_release(m->claims, slot, key);
		return ENOSPC;
	}
	for (i = 0; i < nn; i++) {
		k = j->slot * RINX_MAX_NODES + i;
		if (bpf_map_update_elem(m->nodes, &k, &nodes[i], 0))
			return errno;
	}
	for (cl = 0; cl < RINX_MAX_CLASSES; cl++)
		for (t = 1; t <= RINX_HOP_TYPES; t++) {
			k = RINX_HOP_INDEX(j->slot, cl, t);
			if (bpf_map_update_elem(m->hops, &k,
					&hops[cl * RINX_HOP_TYPES + t - 1], 0))
				return errno;
		}
	zero = calloc(1, sizeof(*zero));
	if (!zero)
		return ENOMEM;
	for (i = 0; i < j->window; i++) {
		k = j->slot * j->window + i;
		if (bpf_map_update_elem(m->aggs, &k, zero, 0)) {
			free(zero);
			return errno;
		}
	}
	free(zero);
	if (bpf_map_update_elem(m->jobs, &key, j, 0))
		return errno;
	return 0;
}

static int tor_apply(struct tor_maps *m, const void *buf, size_t len)
{
	const struct rinx_torctl_hdr *h = buf;
	struct rinx_job cur;
	__u32 key;

	key = ntohl(h->job);
	switch (h->op) {
	case RINX_TORCTL_INSTALL:
		return tor_install(m, h, h + 1, len - sizeof(*h));
	case RINX_TORCTL_REMOVE:
	case RINX_TORCTL_QUERY:
		if (len != sizeof(*h))
			return EINVAL;
		if (bpf_map_lookup_elem(m->jobs, &key, &cur))
			return ENOENT;
		if (cur.token != be64toh(h->token))
			return EACCES;
		if (h->op == RINX_TORCTL_REMOVE) {
			if (bpf_map_delete_elem(m->jobs, &key))
				return errno;
			rinx_claim_release(m->claims, cur.slot, key);
		}
		return 0;
	}
	return EOPNOTSUPP;
}

static int open_map(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_obj_get(path);
}

int rinx_torctl_serve(const char *pin_dir, __be32 ip, __u16 port,
		      volatile int *stop)
{
	struct sockaddr_in sa = { .sin_family = AF_INET }, from;
	struct tor_maps m = { -1, -1, -1, -1, -1, 0, 0 };
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	char path[512];
	void *buf;
	int fd, err = 0, one = 1;

	buf = malloc(RINX_TORCTL_MAX + 1);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (!buf || fd < 0) {
		err = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	if ((m.jobs = open_map(pin_dir, "jobs")) < 0 ||
	    (m.nodes = open_map(pin_dir, "nodes")) < 0 ||
	    (m.hops = open_map(pin_dir, "hops")) < 0 ||
	    (m.aggs = open_map(pin_dir, "aggs")) < 0 ||
	    (m.claims = open_map(pin_dir, "claims")) < 0 ||
	    bpf_obj_get_info_by_fd(m.aggs, &info, &ilen)) {
		err = -errno;
		goto out;
	}
	m.aggs_max = info.max_entries;
	memset(&info, 0, sizeof(info));
	ilen = sizeof(info);
	if (bpf_obj_get_info_by_fd(m.claims, &info, &ilen)) {
		err = -errno;
		goto out;
	}
	m.njobs = info.max_entries;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_addr.s_addr = ip;
	sa.sin_port = htons(port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/jobs", pin_dir);
	while (!(stop && *stop)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct rinx_torctl_hdr *h = buf, a;
		socklen_t fl = sizeof(from);
		ssize_t n;

		/* the ToR's aggregator went (testbed down, ina-off): so do we */
		if (access(path, F_OK))
			break;
		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recvfrom(fd, buf, RINX_TORCTL_MAX + 1, 0,
			     (struct sockaddr *)&from, &fl);
		if (n < (ssize_t)sizeof(*h) ||
		    h->magic != htonl(RINX_TORCTL_MAGIC) ||
		    (h->op & RINX_TORCTL_ANSWER))
			continue;	/* not ours: no answer */
		a = *h;
		a.op |= RINX_TORCTL_ANSWER;
		a.nnodes = 0;
		a.token = 0;
		a.status = htonl(h->version != RINX_TORCTL_VERSION ?
				 EPROTO : tor_apply(&m, buf, n));
		sendto(fd, &a, sizeof(a), 0, (struct sockaddr *)&from, fl);
	}
out:
	if (m.jobs >= 0)
		close(m.jobs);
	if (m.nodes >= 0)
		close(m.nodes);
	if (m.hops >= 0)
		close(m.hops);
	if (m.aggs >= 0)
		close(m.aggs);
	if (m.claims >= 0)
		close(m.claims);
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}
