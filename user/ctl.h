/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * librinx internals shared by the library, rinxctl and the selftests:
 * cluster spec, node attach/detach, namespaces, logging. Not installed;
 * the public interface is librinx.h.
 */
#ifndef RINX_CTL_H
#define RINX_CTL_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "uapi/rinx.h"

#define RINX_API __attribute__((visibility("default")))

/* ---- logging: the library never prints to stdout ---- */
enum rinx_log_level { RINX_LOG_WARN, RINX_LOG_INFO, RINX_LOG_DEBUG };
void rinx_log(enum rinx_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rinx_set_log_level(enum rinx_log_level lvl);
/* Puts the message into err (when given) and returns ret: the error
 * reports of the parsers and planners. */
int rinx_seterr(char *err, size_t len, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define pr_warn(...)  rinx_log(RINX_LOG_WARN, __VA_ARGS__)
#define pr_info(...)  rinx_log(RINX_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) rinx_log(RINX_LOG_DEBUG, __VA_ARGS__)

/* ---- cluster spec ----
 * A text file, one record per line, '#' starts a comment:
 *   cluster port=47001 window=640 jobs=16 pin=/run/rinx mode=native \
 *           plan=rina
 *           [topo=FILE]                (plan=topo:NAME: the planner NAME on
 *                                       the topology FILE, whose hosts,
 *                                       switches and PS are the spec's
 *                                       hosts and racks by name)
 *   rack id=0 ina=none                 (or ina=agent: the rack's lowest
 *                                       rank aggregates in its host program)
 *   rack id=1 ina=switch name=agg1 mac=02:72:78:fe:01:01 ip=10.71.1.254 \
 *        netns=rxab12t1                (the ToR aggregates; its own node)
 *   host name=h0 rank=0 rack=0 ifname=eth0 mac=02:72:78:00:00:01 \
 *        ip=10.71.0.1 netns=rxab12-h0 link=1000
 * The same format describes the testbed (netns= set) and real hosts
 * (netns= absent: the host is the machine itself). Link rates in Mbit/s,
 * absent or 0 when not known or unlimited: a host's link= is its access
 * link (host <-> ToR), a rack's uplink= its ToR <-> spine link (the slower
 * direction of each); `rinxctl bench` relates bandwidth to the slowest.
 * An ina=switch rack's pool=N: the slots its ToR gives a ps-ina job (ATP's
 * pool, default RINX_POOL_DEFAULT, at most the window; 0: a slot per
 * block).
 * The cluster's jobs=N (1..RINX_MAX_JOBS, default RINX_DEFAULT_JOBS): the
 * job slots of every node, each of window= blocks; a host pins about
 * jobs x window x RINX_NODE_BLOCK_BYTES of kernel memory (rinx_spec_mem).
 * The cluster's mtu=N (1490..65535): the IP MTU of the job's network,
 * which sets the values per frame (RINX_BLOCK_VALUES from 3154 up, else
 * RINX_BLOCK_VALUES_MIN); absent, each rank takes its interface's MTU
 * (rinx_check_mtu), and ranks that come to different sizes fail at open.
 */
#define RINX_NAME_MAX	48
#define RINX_PATH_MAX	200

enum rinx_ina { RINX_INA_NONE, RINX_INA_SWITCH, RINX_INA_AGENT };
enum rinx_xdp_mode { RINX_XDP_NATIVE, RINX_XDP_GENERIC };

struct rinx_spec_host {
	char name[RINX_NAME_MAX];
	int rank;
	int rack;
	char ifname[16];
	__u8 mac[6];
	__be32 ip;
	char netns[RINX_NAME_MAX];
	__u32 link_mbit;	/* access link rate; 0: not known/unlimited */
};

struct rinx_spec_rack {
	int id;
	int ina;	/* enum rinx_ina */
	/* ina=switch: the aggregator on the rack's ToR, a node of its own */
	char name[RINX_NAME_MAX];	/* pins under <pin>/<name>/ */
	__u8 mac[6];
	__be32 ip;
	char netns[RINX_NAME_MAX];	/* the ToR's namespace (testbed) */
	__u32 uplink_mbit;	/* ToR <-> spine rate; 0: not known/unlimited */
	/* ina=switch, plan ps-ina: aggregator slots of a job's pool (ATP);
	 * 0: not set (RINX_POOL_DEFAULT), RINX_POOL_PER_BLOCK: a slot per
	 * block of the window (spec pool=0). At most the window is used. */
	__u32 pool;
};

#define RINX_POOL_DEFAULT	1024
#define RINX_POOL_PER_BLOCK	0xffffffffu
#define RINX_POOL_MAX		(1 << 20)

struct rinx_spec {
	__u16 port;
	__u32 window;		/* blocks per job slot on every node */
	__u32 jobs;		/* job slots of every node */
	int mode;		/* enum rinx_xdp_mode */
	char pin[RINX_PATH_MAX];/* bpffs directory; one subdirectory per node */
	int plan;		/* enum rinx_plan_kind (user/plan.h) */
	int plan_nps;		/* parameter servers of the ps plans; 0: 1 */
	/* topology file of plan=topo:NAME (user/topo.h format), "" none */
	char topo[RINX_PATH_MAX];
	/* Mbit/s a link runs at per Gbit/s of the topology's rate (a testbed
	 * scales them down to what it sustains); 0: not set, the topology's
	 * rates are the links' (1000) */
	double scale_mbit;
	int mtu;		/* IP MTU of the job's network; 0: the interface's */
	int nhosts;
	struct rinx_spec_host hosts[RINX_MAX_NODES];
	int nracks;
	struct rinx_spec_rack racks[RINX_MAX_NODES];
};

void rinx_spec_init(struct rinx_spec *s);
/* 0 or -errno; on error a message naming the line is put in err. */
int rinx_spec_load(const char *path, struct rinx_spec *s, char *err,
		   size_t errlen);
int rinx_spec_save(const char *path, const struct rinx_spec *s);
/* Checks ranks 0..n-1 once each, unique names/MACs/IPs, racks known. */
int rinx_spec_check(const struct rinx_spec *s, char *err, size_t errlen);
/* The slowest link of the spec (hosts' link=, racks' uplink=) in Mbit/s;
 * 0 when none is set. */
__u32 rinx_spec_min_link(const struct rinx_spec *s);
const struct rinx_spec_host *rinx_spec_host(const struct rinx_spec *s,
					    const char *name);
const struct rinx_spec_host *rinx_spec_rank(const struct rinx_spec *s,
					    int rank);
int rinx_parse_mac(const char *str, __u8 mac[6]);

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
/* Kernel memory of the block slots a host of spec s pins (share, result,
 * partial, aggregator: jobs x window x RINX_NODE_BLOCK_BYTES); the tables
 * add well under 1 MiB at the default 16 jobs. */
unsigned long long rinx_spec_mem(const struct rinx_spec *s);
/* The kernel memory the maps pinned in dir hold (their fdinfo memlock,
 * summed), or -errno. */
long long rinx_pinned_mem(const char *dir);
struct bpf_map;
/* Sizes a program's job tables for njobs job slots. */
void rinx_size_tables(struct bpf_map *jobs, struct bpf_map *claims,
		      struct bpf_map *nodes, struct bpf_map *hops, __u32 njobs);
/* Job slots (user/claim.c): the lowest free slot of a node's claims map
 * for job, held by process pid (0: a job installed from elsewhere), or
 * -EBUSY with the holders' job ids in why. A slot whose holder died is
 * taken over, its job entry in fd_jobs deleted. */
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
