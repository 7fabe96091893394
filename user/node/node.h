/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Nodes (user/node/): load, attach, pin and read the host program of one
 * node, its job slots, network namespaces. Privileged setup, apart from
 * the data path.
 */
#ifndef RINX_NODE_H
#define RINX_NODE_H

#include <stddef.h>
#include <linux/types.h>
#include "uapi/rinx.h"
#include "user/plan/spec.h"

/* ---- nodes: attach / detach the host program ----
 * Must run in the node's network namespace (see rinx_netns_enter). The
 * program, its link and its maps are pinned under <pin>/<node name>/. */
int rinx_node_up(const struct rinx_spec *s, const struct rinx_spec_host *h);
int rinx_node_down(const struct rinx_spec *s, const struct rinx_spec_host *h);
/* The values per frame of the spec's jobs on interface `ifname` (in the
 * calling thread's namespace), into *bval if not NULL: from the spec's mtu
 * if set, else from the interface's MTU (RINX_IP_MTU(RINX_BLOCK_VALUES)
 * and up: RINX_BLOCK_VALUES; from RINX_IP_MTU(RINX_BLOCK_VALUES_MIN):
 * RINX_BLOCK_VALUES_MIN). 0, or -EMSGSIZE with a message naming the MTU
 * needed in err when the interface's MTU is below what the frames need
 * (-errno when it cannot be read). */
int rinx_check_mtu(const struct rinx_spec *s, const char *node,
		   const char *ifname, int *bval, char *err, size_t errlen);
/* Sum over CPUs of the host program's counters. */
int rinx_node_stats(const struct rinx_spec *s, const struct rinx_spec_host *h,
		    __u64 out[RINX_STAT_MAX]);
const char *rinx_stat_name(int stat);
/* The jobs installed on a node and their cursors (round in progress, the
 * pacer's gap, finished blocks stored and those marked CE). */
struct rinx_node_job {
	__u32 id;
	struct rinx_job job;
	struct rinx_cursor cursor;
};
/* The kernel memory the maps pinned in dir hold (their fdinfo memlock,
 * summed), or -errno. */
long long rinx_pinned_mem(const char *dir);
struct bpf_map;
/* Sizes a program's job tables for njobs job slots. */
void rinx_size_tables(struct bpf_map *jobs, struct bpf_map *claims,
		      struct bpf_map *nodes, struct bpf_map *hops, __u32 njobs);
/* Job slots (user/node/claim.c): the lowest free slot of a node's claims map
 * for job, held by process pid (0: a job installed from elsewhere), or
 * -EBUSY with the holders' job ids in why. A slot whose holder died is
 * taken over, its job entry in fd_jobs deleted. The job's own slot if it
 * holds one: kept where pid or its holder's is 0 (installed again) or the
 * holder died, else -EALREADY with the live holder's pid in why (the job
 * is open on this node already). */
int rinx_claim_slot(int fd_claims, int fd_jobs, __u32 njobs, __u32 job,
		    __u32 pid, char *why, size_t len);
void rinx_claim_release(int fd_claims, __u32 slot, __u32 job);
/* Deletes job's entry in fd_jobs if it is on slot. */
void rinx_claim_drop_job(int fd_jobs, __u32 job, __u32 slot);
/* Start time of process pid (clock ticks after boot), 0: no such process. */
__u64 rinx_proc_start(__u32 pid);
int rinx_node_jobs(const struct rinx_spec *s, const struct rinx_spec_host *h,
		   struct rinx_node_job *out, int max);
void rinx_node_pin_dir(const struct rinx_spec *s,
		       const struct rinx_spec_host *h, char *buf, size_t len);
/* The kernel memory the host program's maps take on one node of spec s,
 * sized as rinx_node_up sizes them (bytes, an estimate per map type). */
int rinx_node_map_bytes(const struct rinx_spec *s, __u64 *bytes);
/* Loads the host program (not attached, small maps): 0 when this kernel
 * accepts it, else -errno (the verifier log with -v). */
int rinx_node_probe_load(const struct rinx_spec *s);
/* Receive queues of interface ifname (in the calling thread's namespace):
 * its channels, else its sysfs rx-N entries, else 1. A trainer opens a
 * socket on each, at most RINX_RX_QUEUES_MAX. */
#define RINX_RX_QUEUES_MAX	64
int rinx_if_rx_queues(const char *ifname, int ifindex);
/* Makes sure s->pin is on a bpffs, mounting one if needed. */
int rinx_pin_root_ready(const char *pin);

/* ---- network namespaces ---- */
/* Moves the calling thread into netns `name` (NULL or "" = stay).
 * *oldfd receives a handle to return with rinx_netns_leave. */
int rinx_netns_enter(const char *name, int *oldfd);
int rinx_netns_leave(int oldfd);

#endif
