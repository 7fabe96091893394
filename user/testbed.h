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

#endif
