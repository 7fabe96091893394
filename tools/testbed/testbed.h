/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The emulated cluster: hosts, ToR switches and a spine as network
 * namespaces joined by veth pairs, the switches running bpf/switch.bpf.c.
 *
 *   <prefix>sp                     spine (only when racks > 1)
 *    |t0         |t1 ...           one port per rack
 *    |uplink     |uplink
 *   <prefix>t0  <prefix>t1 ...     ToR of each rack
 *    |p0  |p1    |p2  |p3          one port per host (global host index)
 *    |eth0|eth0  |eth0|eth0
 *   <prefix>h0 <prefix>h1 ...      hosts: eth0 = 10.71.<rack>.<h+1>/16,
 *                                  mac 02:72:78:00:<rack>:<h+1>
 *
 * Every veth has MTU RINX_TB_MTU; a host link (eth0 and its port) has
 * `queues` rx and tx queues (a NIC with RSS: XDP frames redirected into a
 * veth arrive on the rx queue of the sending CPU, modulo the queues). Hosts have static neighbours for every
 * other host and IPv6 off, so nothing but the traffic of the job crosses the
 * switches. A topology testbed (opts.topo/gen) lays out a topology's
 * switches, servers and hosts instead (tools/testbed/topo.c, "topology
 * testbeds"). Internal to rinxctl and the selftests: built into
 * build/libtestbed.a, never into librinx (a trainer does not build
 * clusters, and the switch program has no place in its library).
 */
#ifndef RINX_TESTBED_H
#define RINX_TESTBED_H

#include <stddef.h>
#include <linux/types.h>
#include "user/ctl.h"
#include "bpf/switch_kern_user.h"

#define RINX_TB_MAX_RACKS	8
#define RINX_TB_MAX_PER_RACK	32
#define RINX_TB_PREFIX_MAX	16	/* characters of a prefix */
#define RINX_TB_MTU		3400	/* rinx frames are 3168 B */
/* --mtu: from the 1,490 that small frames need (uapi/rinx.h) to a jumbo
 * 9,000; the XDP programs take multi-buffer frames (xdp.frags), which veth
 * asks for above about 3,500 */
#define RINX_TB_MTU_MIN		RINX_IP_MTU(RINX_BLOCK_VALUES_MIN)
#define RINX_TB_MTU_MAX		9000
#define RINX_TB_PIN_ROOT	"/run/rinx"	/* spec pin = <root>/<prefix> */
#define RINX_TB_SPEC_DIR	"/run/rinx-testbed"	/* <prefix>.spec */
#define RINX_TB_MAX_QUEUES	16	/* queues of a host link */

/*
 * Links: every switch port has a struct rinx_sw_link (bpf/switch_kern_user.h)
 * in its switch's `links` map: drop, duplicate and reorder probabilities
 * (parts per million), the hold limit of reordering, and a virtual queue
 * (rate, buffer, ECN mark threshold) for the frames the switch sends out
 * of the port. Zero buffer, ecn or hold_ms in the settings given to the
 * functions below mean the default.
 */
#define RINX_TB_HOLD_MS		50
#define RINX_TB_PPM		RINX_SW_PPM
/* The smallest buffer: one full-size frame on the wire. */
#define RINX_TB_BUFFER_MIN	(RINX_TB_MTU + 14 + RINX_SW_WIRE_EXTRA)

/* Default ECN mark threshold and buffer of a port of rate_mbit (> 0):
 * 30 KB x sqrt(rate / 1 Gbit/s), at least two frames; buffer 10 x that
 * (reasons in docs/rinx.md, "Testbed links"). */
__u32 rinx_testbed_ecn_default(__u32 rate_mbit);
__u32 rinx_testbed_buffer_default(__u32 rate_mbit);

/* Which settings rinx_testbed_fault_set changes. */
enum {
	RINX_TB_F_DROP = 1 << 0,
	RINX_TB_F_DUP = 1 << 1,
	RINX_TB_F_REORDER = 1 << 2,
	RINX_TB_F_RATE = 1 << 3,
	RINX_TB_F_BUFFER = 1 << 4,
	RINX_TB_F_ECN = 1 << 5,
	RINX_TB_F_HOLD = 1 << 6,
	RINX_TB_F_SHARE = 1 << 7,
	RINX_TB_F_REAL = 1 << 8,
	RINX_TB_F_ALL = (1 << 9) - 1,
};

/* One switch port: its settings, queue and counters; now_ns is the
 * CLOCK_MONOTONIC time it was read (for rates since set_ns). */
struct rinx_tb_port_link {
	char ns[RINX_TB_PREFIX_MAX + 8];
	char ifname[16];
	__u64 now_ns;
	struct rinx_sw_link v;
};

struct rinx_testbed_opts {
	const char *prefix;	/* namespace prefix: [A-Za-z0-9_], 1..16 chars */
	int racks;		/* 1..RINX_TB_MAX_RACKS */
	int hosts_per_rack;	/* 1..RINX_TB_MAX_PER_RACK, total <= 64 */
	int mode;		/* enum rinx_xdp_mode of switches and hosts */
	__u32 window;		/* 0: RINX_DEFAULT_WINDOW */
	__u32 jobs;		/* job slots per node, 0: RINX_DEFAULT_JOBS */
	__u16 port;		/* 0: RINX_DEFAULT_PORT */
	const char *spec_out;	/* NULL: RINX_TB_SPEC_DIR/<prefix>.spec */
	const char *pin;	/* pin root, NULL: RINX_TB_PIN_ROOT */
	const int *ina;		/* racks entries of enum rinx_ina, NULL: none */
	int no_nodes;		/* leave the host program off (plain IP only) */
	int queues;		/* rx and tx queues of every host link (eth0
				 * and its switch port); 0: 1 */
	int plain;		/* plain switches: no aggregation, hairpin or
				 * group handling (bpf/switch.bpf.c sw_plain);
				 * racks must not be ina=switch */
	int mtu;		/* MTU of every veth, RINX_TB_MTU_MIN..
				 * RINX_TB_MTU_MAX; 0: RINX_TB_MTU */
	int threaded_napi;	/* every veth with an XDP program polled by
				 * a kernel thread of its own (threaded
				 * NAPI); 0: in the softirq of the CPU that
				 * scheduled it (the kernel's default) */
	const struct rinx_sw_link_set *link;	/* every switch port; NULL:
						 * a perfect link */
	/* A topology testbed (tools/testbed/topo.c, "topology testbeds") instead
	 * of racks: a topology file, or a generator spec ("grid-toy"); racks,
	 * hosts_per_rack, ina and queues are not used then. */
	const char *topo;
	const char *gen;
	double scale_mbit;	/* Mbit/s of a port per topology Gbit/s;
				 * 0: RINX_TB_SCALE */
	const char *plan;	/* plan= of the spec (topo:NAME), whose reduce
				 * routes the switches get; NULL: topo:grid */
};

/* Default scale of a topology testbed: 1 Gbit/s of the topology is 20
 * Mbit/s here (the GRID toy's 3 Gbit/s switch links: 60 Mbit/s), what two
 * shared cores carry for 8 workers with room to spare. */
#define RINX_TB_SCALE		20.0

/* A growing text buffer of commands for `ip`/`tc -batch`; on failure to
 * grow it keeps the error (err) and every later call is a no-op. */
struct rinx_tb_buf {
	char *p;
	size_t len, cap;
	int err;
};

void rinx_tb_put(struct rinx_tb_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rinx_tb_free(struct rinx_tb_buf *b);

enum {
	RINX_TB_QUIET = 1 << 0,	/* failures expected: stderr silenced */
	RINX_TB_FORCE = 1 << 1,	/* go on past failing commands */
};

/* Threaded NAPI (1) or softirq NAPI (0) on every interface of netns but
 * lo; 0 or -errno (said). */
int rinx_tb_napi(const char *netns, int threaded);
/* Threaded NAPI's threads run SCHED_FIFO at this priority (as threaded
 * interrupt handlers do). */
#define RINX_TB_NAPI_PRIO	50
/* Interface ifname of namespace netns: how many NAPI threads poll it (0:
 * it polls in softirq), *fifo of them at SCHED_FIFO RINX_TB_NAPI_PRIO; or
 * -errno (the namespace, or no netdev netlink family). */
int rinx_tb_napi_state(const char *netns, const char *ifname, int *fifo);
/* Runs `tool [-n netns] [-force] -batch -` (tool: ip or tc) with the
 * commands of b on stdin. Without RINX_TB_FORCE the tool stops at the
 * first failing command and names it on stderr (unless RINX_TB_QUIET).
 * 0, or -EIO when a command failed. */
int rinx_tb_batch(const char *tool, const char *netns, struct rinx_tb_buf *b,
		  int flags);

/* 0 if prefix is usable, else -EINVAL with the reason in err. */
int rinx_testbed_prefix_check(const char *prefix, char *err, size_t errlen);
void rinx_testbed_spec_path(const char *prefix, char *buf, size_t len);

/* Builds the testbed, attaches the switches and (unless no_nodes) the host
 * program on every host, and writes the spec. Refuses (-EEXIST) when a
 * namespace of the prefix exists. On failure everything it made is removed.
 * spec_out (may be NULL) receives the spec. */
int rinx_testbed_up(const struct rinx_testbed_opts *o,
		    struct rinx_spec *spec_out);

/* A topology testbed (PREFIX or SPEC) changes plan: plan (topo:NAME; NULL:
 * the spec's own) is planned on the testbed's topology, its reduce routes
 * (per class and per pair) replace the switches' flow tables, its classes'
 * broadcast routes their broadcast tables, and it becomes the spec's
 * plan=. *nflows and *nbcast (may be NULL) get the flow entries and the
 * broadcast entries (devmaps of ports) written. */
int rinx_testbed_topo_plan(const char *what, const char *plan, int *nflows,
			   int *nbcast);

/* Tears down the testbed named by a spec file path (contains '/' or ends in
 * ".spec") or by its prefix: host programs, namespaces, pins, spec file.
 * Idempotent: 0 also when nothing was left. *removed (may be NULL) receives
 * the number of namespaces deleted. */
int rinx_testbed_down(const char *what, int *removed);

/* The prefix of a testbed spec (from its hosts' netns names). */
int rinx_testbed_spec_prefix(const struct rinx_spec *s, char *buf,
			     size_t len);

/* Sum over CPUs of the counters of the switch attached to ifname in netns. */
int rinx_testbed_switch_stats(const char *netns, const char *ifname,
			      __u64 out[RINX_SW_STAT_MAX]);
const char *rinx_sw_stat_name(int stat);

/* Takes the aggregator of rack `rack`'s INA ToR away (the ToR goes on
 * switching): its job tables are emptied and its pins removed, as when a
 * programmable switch loses its INA program. */
int rinx_testbed_ina_off(const char *what, int rack);

/*
 * Links of a running testbed (PREFIX or SPEC as for down), through the
 * switches' `links` maps pinned at <pin>/sw-<netns>/links. port: "NS:IF"
 * (NS the switch's namespace with or without the prefix: t0, sp, rxFt0) or
 * NULL for every port of every switch. Sets the settings named by mask
 * (RINX_TB_F_RATE without RINX_TB_F_BUFFER or _ECN: those go to the new
 * rate's defaults); the port's queue and counters start afresh. A rate
 * change is written into the spec's link= and uplink= too, and a host whose
 * link rate changed gets its stack paced at the new rate (tc tbf on its
 * interface; none for 0). *nports (may be NULL) receives the ports
 * changed.
 */
int rinx_testbed_fault_set(const char *what, const char *port,
			   const struct rinx_sw_link_set *f, unsigned int mask,
			   int *nports);

/* Links of every port of every switch of testbed s (max entries of out);
 * returns how many or -errno. */
int rinx_testbed_link_get(const struct rinx_spec *s,
			  struct rinx_tb_port_link *out, int max);

/* The real queue (tools/testbed/queue.c): the process that holds the
 * frames of ports with set.real until they are due. Its counters, from
 * the file it rewrites every second. */
struct rinx_tb_queue_stats {
	int pid, ports;
	__u64 held;		/* frames taken in */
	__u64 sent;		/* frames sent at their time */
	__u64 full;		/* dropped: the egress port's frames all
				 * in use */
	__u64 bad;		/* dropped: no header, or an unknown port */
	__u64 late_max_ns;	/* sends after their time: the latest */
	__u64 late_sum_ns;	/* ... and all, summed */
};

void rinx_testbed_queue_path(const char *prefix, char *buf, size_t len);
/* Serves testbed what's real queues until SIGTERM or the testbed is gone
 * (rinxctl testbed queue): 0 or -errno. */
int rinx_testbed_queue_run(const char *what);
/* Starts the process in the background unless it runs (testbed up and
 * fault with --queue real): 0 once it serves, or -errno. */
int rinx_testbed_queue_start(const char *what);
void rinx_testbed_queue_stop(const char *prefix);
/* 0 and its counters if it runs; -ESRCH or -ENOENT if not. */
int rinx_testbed_queue_read(const char *prefix,
			    struct rinx_tb_queue_stats *st);

/* The INA ToR's control-plane daemon (tools/testbed/torctl.c), which a
 * testbed ToR runs in its namespace: applies requests on ip:port to the
 * aggregator maps pinned in pin_dir (jobs, nodes, hops, aggs) until
 * pin_dir's jobs map is gone or *stop is set. Returns 0 or -errno (cannot
 * bind or open the maps). */
int rinx_torctl_serve(const char *pin_dir, __be32 ip, __u16 port,
		      volatile int *stop);

#endif
