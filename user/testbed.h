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
 * Every veth has MTU RINX_TB_MTU. Hosts have static neighbours for every
 * other host and IPv6 off, so nothing but the traffic of the job crosses the
 * switches. Internal to rinxctl and the selftests (not in librinx.map).
 */
#ifndef RINX_TESTBED_H
#define RINX_TESTBED_H

#include <stddef.h>
#include <linux/types.h>
#include "user/ctl.h"

#define RINX_TB_MAX_RACKS	8
#define RINX_TB_MAX_PER_RACK	32
#define RINX_TB_PREFIX_MAX	16	/* characters of a prefix */
#define RINX_TB_MTU		3400	/* rinx frames are 3152 B; veth XDP <= ~3500 */
#define RINX_TB_PIN_ROOT	"/run/rinx"	/* spec pin = <root>/<prefix> */
#define RINX_TB_SPEC_DIR	"/run/rinx-testbed"	/* <prefix>.spec */

/*
 * Link faults of a switch port (bpf/switch.bpf.c), applied to the frames
 * the switch sends out of it. Probabilities in parts per million.
 */
struct rinx_tb_fault {
	__u32 drop_ppm;
	__u32 dup_ppm;
	__u32 reorder_ppm;
	__u32 rate_mbit;	/* 0: no limit */
	__u32 burst;		/* token bucket, bytes; 0: RINX_TB_BURST */
	__u32 hold_ms;		/* held frame lost after; 0: default */
};

#define RINX_TB_BURST		32768
#define RINX_TB_HOLD_MS		50
#define RINX_TB_PPM		1000000

/* Which fields of struct rinx_tb_fault rinx_testbed_fault_set changes. */
enum {
	RINX_TB_F_DROP = 1 << 0,
	RINX_TB_F_DUP = 1 << 1,
	RINX_TB_F_REORDER = 1 << 2,
	RINX_TB_F_RATE = 1 << 3,
	RINX_TB_F_BURST = 1 << 4,
	RINX_TB_F_HOLD = 1 << 5,
	RINX_TB_F_ALL = (1 << 6) - 1,
};

/* The value of a switch's `faults` map (struct rinx_sw_fault in
 * bpf/switch.bpf.c): the settings, then state and counters kept by the
 * program (per port: frames dropped, over the rate, duplicated, held,
 * reordered, lost in the hold, dup/reorder not possible). */
struct rinx_tb_fault_val {
	struct rinx_tb_fault set;
	__u64 tokens;
	__u64 last_ns;
	__u64 n_drop, n_rate, n_dup, n_hold, n_reorder, n_lost, n_skip;
};

/* One port of a switch and its faults. */
struct rinx_tb_port_fault {
	char ns[RINX_TB_PREFIX_MAX + 8];
	char ifname[16];
	struct rinx_tb_fault_val v;
};

struct rinx_testbed_opts {
	const char *prefix;	/* namespace prefix: [A-Za-z0-9_], 1..16 chars */
	int racks;		/* 1..RINX_TB_MAX_RACKS */
	int hosts_per_rack;	/* 1..RINX_TB_MAX_PER_RACK, total <= 64 */
	int mode;		/* enum rinx_xdp_mode of switches and hosts */
	__u32 window;		/* 0: RINX_DEFAULT_WINDOW */
	__u16 port;		/* 0: RINX_DEFAULT_PORT */
	const char *spec_out;	/* NULL: RINX_TB_SPEC_DIR/<prefix>.spec */
	const char *pin;	/* pin root, NULL: RINX_TB_PIN_ROOT */
	const int *ina;		/* racks entries of enum rinx_ina, NULL: none */
	int no_nodes;		/* leave the host program off (plain IP only) */
	const struct rinx_tb_fault *fault;	/* every switch port; NULL:
						 * none */
};

/* 0 if prefix is usable, else -EINVAL with the reason in err. */
int rinx_testbed_prefix_check(const char *prefix, char *err, size_t errlen);
void rinx_testbed_spec_path(const char *prefix, char *buf, size_t len);

/* Builds the testbed, attaches the switches and (unless no_nodes) the host
 * program on every host, and writes the spec. Refuses (-EEXIST) when a
 * namespace of the prefix exists. On failure everything it made is removed.
 * spec_out (may be NULL) receives the spec. */
int rinx_testbed_up(const struct rinx_testbed_opts *o,
		    struct rinx_spec *spec_out);

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

/*
 * Faults of a running testbed (PREFIX or SPEC as for down), through the
 * switches' `faults` maps pinned at <pin>/sw-<netns>/faults. port: "NS:IF"
 * (NS the switch's namespace with or without the prefix: t0, sp, rxFt0) or
 * NULL for every port of every switch. Sets the fields named by mask;
 * resets the token bucket. *nports (may be NULL) receives the ports
 * changed.
 */
/* Takes the aggregator of rack `rack`'s INA ToR away (the ToR goes on
 * switching): its job tables are emptied and its pins removed, as when a
 * programmable switch loses its INA program. */
int rinx_testbed_ina_off(const char *what, int rack);

int rinx_testbed_fault_set(const char *what, const char *port,
			   const struct rinx_tb_fault *f, unsigned int mask,
			   int *nports);

/* Faults and fault counters of every port of every switch of testbed s
 * (max entries of out); returns how many or -errno. */
int rinx_testbed_fault_get(const struct rinx_spec *s,
			   struct rinx_tb_port_fault *out, int max);

#endif
