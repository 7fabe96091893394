// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * INA ToRs: the aggregator's pinned maps and the control-plane daemon
 * each ToR runs (tools/testbed/torctl.c) in its namespace.
 */
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "tools/testbed/tb.h"
#include "user/plan/plan.h"
#include "uapi/rinx_torctl.h"

/* Maps of an INA ToR's aggregator, pinned under <pin>/<rack name>/. */
static const char *const agg_pinned_maps[] = {
	"jobs", "claims", "nodes", "hops", "aggs", "stats",
};

static void agg_pin_dir(const struct rinx_spec *s,
			const struct rinx_spec_rack *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", s->pin, r->name);
}

/* Removes the pins of rack r's aggregator; idempotent. */
void agg_unpin(const struct rinx_spec *s,
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

int agg_pin(const struct rinx_spec *s, const struct rinx_spec_rack *r,
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
int torctl_up(const struct rinx_spec *s)
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
