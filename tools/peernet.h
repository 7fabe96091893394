/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The peers' own network for `rinxctl compare --peer-net bridge`
 * (tools/peernet.c): the hosts of a testbed spec copied into fresh
 * namespaces (same interface names, MACs, IPs and MTU) and joined by kernel
 * bridges, one bridge namespace per switch of the testbed, no XDP on any
 * veth, so that TCP keeps software GSO/TSO. Switch ports with a rate get a
 * tbf queue of the port's buffer.
 */
#ifndef RINX_PEERNET_H
#define RINX_PEERNET_H

#include <stddef.h>
#include <linux/types.h>
#include "user/ctl.h"
#include "tools/testbed/testbed.h"

#define PN_MAX_SW	(RINX_TB_MAX_RACKS + 1)
#define PN_MAX_PORTS	(RINX_MAX_NODES + 2 * RINX_TB_MAX_RACKS)

/* Rate and queue of one switch port, named as in the testbed: sw "t<r>"
 * (ToR of rack r) or "sp" (spine), ifname "p<host index>", "uplink" or
 * "t<r>". */
struct pn_port {
	char sw[8];
	char ifname[16];
	__u32 rate_mbit;	/* 0: not shaped */
	__u32 buffer;		/* bytes the queue holds */
	/* tc program that marks CE above the port's threshold
	 * (tools/peers/ecn_mark.bpf.c built for it); "": no marks */
	char mark_obj[256];
};

struct peernet {
	char base[RINX_NAME_MAX];	/* <testbed prefix>-b<pid> */
	struct rinx_spec spec;		/* the testbed's, hosts' netns ours */
	int nsw;
	char sw_ns[PN_MAX_SW][RINX_NAME_MAX];
	char sw_name[PN_MAX_SW][8];	/* "t<r>", "sp" */
	int mtu;
	int made;			/* namespaces exist */
	int nshaped;			/* ports with a tbf */
	int nmarking;			/* ports that mark CE */
};

/*
 * Builds the bridge network of testbed spec s; ports (nports of them) are
 * shaped as given. 0, or -errno with the reason in err and nothing left
 * behind.
 */
int peernet_up(struct peernet *pn, const struct rinx_spec *s,
	       const struct pn_port *ports, int nports, char *err,
	       size_t errlen);
/* Deletes every namespace of pn (idempotent). */
int peernet_down(struct peernet *pn);
/* Deletes the bridge networks of runs whose process is gone (killed before
 * their cleanup); returns how many namespaces went. */
int peernet_reap(void);
/* TSO of ifname in netns ns as the kernel reports it (ETHTOOL_GTSO): 1 on,
 * 0 off, or -errno. */
int peernet_tso(const char *ns, const char *ifname);
/* IPv4 packets ns has received with CE (IpExt InCEPkts: every segment of
 * a GSO/GRO packet counts). */
int peernet_ce(const char *ns, __u64 *ce);
/* Bytes and packets ifname in ns has sent (/proc/net/dev of ns). */
int peernet_tx(const char *ns, const char *ifname, __u64 *bytes,
	       __u64 *packets);

#endif
