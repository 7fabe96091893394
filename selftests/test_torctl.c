// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The INA ToR's control plane (uapi/rinx_torctl.h): the daemon on
 * loopback, serving maps of the aggregator's shapes pinned in a bpffs of
 * the test's own; requests by rinx_torctl_call. The job entry and tables
 * are read back and compared with what was sent; a wrong token, a taken
 * job slot, a wrong version and a request to a port nobody serves are
 * answered (or fail) with their errors, within bounded time.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <bpf/bpf.h>
#include "user/comm/torctl.h"
#include "tools/testbed/testbed.h"
#include "selftests/lib/testlib.h"

#define PORT	(RINX_TORCTL_PORT + 101)
#define WINDOW	8
#define NJOBS	2	/* a ToR of two job slots: the third job finds it full */

static char dir[64];
static volatile int stop;
static int serve_err;

static void *serve(void *arg)
{
	(void)arg;
	serve_err = rinx_torctl_serve(dir, htonl(INADDR_LOOPBACK), PORT, &stop);
	return NULL;
}

static int mkpin(const char *name, enum bpf_map_type t, __u32 ks, __u32 vs,
		 __u32 n)
{
	char path[128];
	int fd = bpf_map_create(t, name, ks, vs, n, NULL);

	if (fd < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (bpf_obj_pin(fd, path))
		return -1;
	return fd;
}

/* An INSTALL request of job `job` with token `tok` in slot `slot`: three
 * nodes and hop entries that differ by class and type. */
static size_t build(void *req, __u32 job, __u64 tok, __u32 slot)
{
	struct rinx_torctl_hdr *h = req;
	struct rinx_job *j = (void *)(h + 1);
	struct rinx_node *nd = (void *)(j + 1);
	struct rinx_hop *hp = (void *)(nd + 3);
	int i;

	memset(req, 0, RINX_TORCTL_MAX);
	h->op = RINX_TORCTL_INSTALL;
	h->job = htonl(job);
	h->token = htobe64(tok);
	h->nnodes = 3;
	j->token = tok;
	j->slot = slot;
	j->nnodes = 3;
	j->window = WINDOW;
	j->self = 2;
	for (i = 0; i < 3; i++) {
		nd[i].mac[5] = 0x10 + i;
		nd[i].ip = htonl(0x0a000001 + i);
		nd[i].rack = i;
	}
	for (i = 0; i < RINX_TORCTL_HOPS; i++) {
		hp[i].action = 1 + i % 5;
		hp[i].to = i;
		hp[i].mask = 0x100000000ull * i + 7;
	}
	return (char *)(hp + RINX_TORCTL_HOPS) - (char *)req;
}

static int call(void *req, size_t len, int op, __u32 job, __u64 tok)
{
	struct rinx_torctl_hdr *h = req;

	h->op = op;
	h->job = htonl(job);
	h->token = htobe64(tok);
	return rinx_torctl_call(htonl(INADDR_LOOPBACK), PORT, req, len, 2000);
}

int main(void)
{
	int fjobs, fnodes, fhops, faggs, fclaims, err, i, same;
	struct rinx_torctl_hdr q = {};
	struct rinx_job got;
	struct rinx_agg agg;
	pthread_t th;
	size_t len;
	void *req;
	__u32 k;

	tl_needs_root("a bpffs mount, BPF maps");
	tap_plan(20);
	snprintf(dir, sizeof(dir), "/tmp/rxNtorctl.XXXXXX");
	if (!mkdtemp(dir) || mount("bpf", dir, "bpf", 0, "mode=0700")) {
		printf("1..0 # SKIP cannot mount a bpffs: %s\n", strerror(errno));
		return 4;
	}
	req = malloc(RINX_TORCTL_MAX);
	fjobs = mkpin("jobs", BPF_MAP_TYPE_HASH, 4, sizeof(struct rinx_job),
		      NJOBS);
	fnodes = mkpin("nodes", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct rinx_node),
		       NJOBS * RINX_MAX_NODES);
	fhops = mkpin("hops", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct rinx_hop),
		      NJOBS * RINX_TORCTL_HOPS);
	faggs = mkpin("aggs", BPF_MAP_TYPE_ARRAY, 4, sizeof(struct rinx_agg),
		      NJOBS * WINDOW);
	fclaims = mkpin("claims", BPF_MAP_TYPE_HASH, 4, sizeof(struct rinx_claim),
			NJOBS);
	if (!req || fjobs < 0 || fnodes < 0 || fhops < 0 || faggs < 0 ||
	    fclaims < 0) {
		tap_ok(0, "maps created and pinned");
		goto out;
	}
	/* a stale aggregator slot the install must clear */
	memset(&agg, 0, sizeof(agg));
	agg.round = 99;
	k = 3;
	bpf_map_update_elem(faggs, &k, &agg, 0);

	/* nobody serves yet: a clear error, within the time given */
	len = build(req, 5, 0x1122334455667788ull, 1);
	err = rinx_torctl_call(htonl(INADDR_LOOPBACK), PORT, req, len, 500);
	tap_ok(err == -ECONNREFUSED, "no daemon: connection refused (%d)", err);

	pthread_create(&th, NULL, serve, NULL);
	err = call(req, len, RINX_TORCTL_INSTALL, 5, 0x1122334455667788ull);
	tap_ok(err == 0, "install of a new job accepted (%d)", err);
	k = 5;
	/* the sender asked for slot 1 (its host's); the ToR takes its own
	 * lowest free one */
	tap_ok(!bpf_map_lookup_elem(fjobs, &k, &got) &&
	       got.token == 0x1122334455667788ull && got.slot == 0 &&
	       got.window == WINDOW && got.self == 2,
	       "job entry written as sent, in the ToR's lowest free slot (%u)",
	       got.slot);
	{
		struct rinx_torctl_hdr *h = req;
		struct rinx_job *j = (void *)(h + 1);
		struct rinx_node *nd = (void *)(j + 1), n;
		struct rinx_hop *hp = (void *)(nd + 3), hop;

		same = 1;
		for (i = 0; i < 3; i++) {
			k = 0 * RINX_MAX_NODES + i;
			same &= !bpf_map_lookup_elem(fnodes, &k, &n) &&
				!memcmp(&n, &nd[i], sizeof(n));
		}
		tap_ok(same, "node table of slot 0 as sent");
		same = 1;
		for (i = 0; i < RINX_TORCTL_HOPS; i++) {
			k = RINX_HOP_INDEX(0, i / RINX_HOP_TYPES,
					   i % RINX_HOP_TYPES + 1);
			same &= !bpf_map_lookup_elem(fhops, &k, &hop) &&
				!memcmp(&hop, &hp[i], sizeof(hop));
		}
		tap_ok(same, "hop table of slot 0 as sent");
	}
	k = 3;
	tap_ok(!bpf_map_lookup_elem(faggs, &k, &agg) && agg.round == 0,
	       "aggregator slots of slot 0 cleared");
	{
		struct rinx_claim cl;

		k = 0;
		tap_ok(!bpf_map_lookup_elem(fclaims, &k, &cl) && cl.job == 5 &&
		       cl.pid == 0, "slot 0 claimed for job 5, held remotely");
	}

	err = call(&q, sizeof(q), RINX_TORCTL_QUERY, 5, 0x1122334455667788ull);
	tap_ok(err == 0, "query with the token: held (%d)", err);
	err = call(&q, sizeof(q), RINX_TORCTL_QUERY, 5, 0x1122334455667789ull);
	tap_ok(err == -EACCES, "query with a wrong token refused (%d)", err);
	len = build(req, 5, 0x99, 1);
	err = call(req, len, RINX_TORCTL_INSTALL, 5, 0x99);
	tap_ok(err == -EACCES, "install over a job with a wrong token refused (%d)",
	       err);
	k = 5;
	tap_ok(!bpf_map_lookup_elem(fjobs, &k, &got) &&
	       got.token == 0x1122334455667788ull, "the job entry is unchanged");
	/* job 9 = 5 mod 4 (the old slot rule) and asking for the same
	 * slot: it gets the next free one */
	len = build(req, 9, 0x77, 1);
	err = call(req, len, RINX_TORCTL_INSTALL, 9, 0x77);
	k = 9;
	tap_ok(!err && !bpf_map_lookup_elem(fjobs, &k, &got) && got.slot == 1,
	       "a second job takes the next slot (%d, slot %u)", err, got.slot);
	len = build(req, 6, 0x66, 1);
	err = call(req, len, RINX_TORCTL_INSTALL, 6, 0x66);
	k = 6;
	tap_ok(err == -EBUSY && bpf_map_lookup_elem(fjobs, &k, &got),
	       "a third job on a full ToR (%d slots) refused, nothing written "
	       "(%d)", NJOBS, err);
	len = build(req, 5, 0x1122334455667788ull, 1);
	err = call(req, len, RINX_TORCTL_INSTALL, 5, 0x1122334455667788ull);
	k = 5;
	tap_ok(!err && !bpf_map_lookup_elem(fjobs, &k, &got) && got.slot == 0,
	       "a job installed again keeps its slot (%d, slot %u)", err,
	       got.slot);
	err = call(&q, sizeof(q), RINX_TORCTL_REMOVE, 5, 0x5);
	tap_ok(err == -EACCES, "remove with a wrong token refused (%d)", err);
	err = call(&q, sizeof(q), RINX_TORCTL_REMOVE, 5, 0x1122334455667788ull);
	tap_ok(err == 0, "remove with the token (%d)", err);
	err = call(&q, sizeof(q), RINX_TORCTL_QUERY, 5, 0x1122334455667788ull);
	tap_ok(err == -ENOENT, "removed job: not held (%d)", err);
	len = build(req, 6, 0x66, 1);
	err = call(req, len, RINX_TORCTL_INSTALL, 6, 0x66);
	k = 6;
	tap_ok(!err && !bpf_map_lookup_elem(fjobs, &k, &got) && got.slot == 0,
	       "the removed job's slot is free again (%d, slot %u)", err,
	       got.slot);
	q.version = 0;
	{
		/* rinx_torctl_call sets the version: a bad one sent by hand */
		len = build(req, 7, 0x1, 0);
		((struct rinx_torctl_hdr *)req)->nnodes = 60;	/* size lies */
		err = call(req, len, RINX_TORCTL_INSTALL, 7, 0x1);
		tap_ok(err == -EINVAL, "install whose size does not match refused (%d)",
		       err);
	}
	stop = 1;
	pthread_join(th, NULL);
	tap_ok(serve_err == 0, "daemon ended cleanly (%d)", serve_err);
out:
	umount(dir);
	rmdir(dir);
	free(req);
	return tap_fail ? 1 : 0;
}
