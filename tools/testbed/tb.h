/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The testbed's files among themselves only (the door for rinxctl and the
 * tests is tools/testbed/testbed.h).
 */
#ifndef RINX_TB_H
#define RINX_TB_H

#include "tools/testbed/testbed.h"
#include <net/if.h>
#include "user/plan/pplan.h"
#include "switch.skel.h"

#define TB_NET_A	10	/* hosts are 10.71.<rack>.<h+1>/16 */
#define TB_NET_B	71
#define TB_AGG_HOST	254	/* an INA ToR's aggregator: 10.71.<rack>.254 */
#define NS_NAME_MAX	(RINX_TB_PREFIX_MAX + 8)
#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

struct tb_switch {
	char ns[NS_NAME_MAX];
	int rack;			/* index in s->racks; -1: the spine */
	int nports;
	int uplink;			/* index in ifname; -1: none */
	char ifname[RINX_TB_MAX_PER_RACK + 1][IFNAMSIZ];
	int host_port[RINX_MAX_NODES];	/* host index -> index in ifname */
	int agg_port[RINX_TB_MAX_RACKS];/* rack -> port to its aggregator */
	int plain;			/* a plain switch (sw_plain) */
};

#define TT_MAX_PORTS	64

struct tt_sw {
	char ns[NS_NAME_MAX];
	int node;			/* topology node */
	int rack;			/* index in s->racks */
	int nports;
	char ifname[TT_MAX_PORTS][IFNAMSIZ];
	int link[TT_MAX_PORTS];		/* topology link of each port */
	__u32 rate[TT_MAX_PORTS];	/* egress Mbit/s */
	__u32 real[TT_MAX_PORTS];	/* ... of the topology (unscaled) */
	int tree[TT_MAX_PORTS];		/* on the spanning tree */
};

struct tt {
	struct topo t;
	struct pp_plan pp;
	int have_pp;
	int nsw;			/* switches + servers */
	int *rack_of;			/* topology node -> rack index or -1 */
	int *tree_link;			/* link -> on the spanning tree */
	struct tt_sw *sw;
};


/* ---- namespaces and veth (ns.c) ---- */
int run_ip_batch(const char *netns, struct rinx_tb_buf *b);
int is_ours(const char *prefix, const char *name);
int ours_to_batch(const char *prefix, struct rinx_tb_buf *b);
int ns_quiet(const char *ns, int host);
int hosts_up(const struct rinx_spec *s, int no_nodes);
void fmt_mac(char *buf, const __u8 *m);
int make_links(const struct rinx_spec *s, const char *prefix,
	       int queues, int mtu);
int config_host(const struct rinx_spec *s, int i);
int config_switch(const struct tb_switch *sw);

/* ---- names and the spec (spec.c) ---- */
void host_ns(char *buf, const char *prefix, int i);
void tor_ns(char *buf, const char *prefix, int r);
void spine_ns(char *buf, const char *prefix);
void build_spec(const struct rinx_testbed_opts *o,
		struct rinx_spec *s);
int check_opts(const struct rinx_testbed_opts *o);

/* ---- switches (switch.c) ---- */
__u64 mac_key(const __u8 mac[6]);
/* A link's fresh value (counters zero) from its settings. */
void link_fresh(struct rinx_sw_link *v, const struct rinx_sw_link_set *f);
int map_set(int fd, const void *k, const void *v, const char *ns,
	    const char *what);
int switch_pin(const struct rinx_spec *s,
	       const struct rinx_spec_rack *ina, const char *ns,
	       struct switch_bpf *skel, int *pinned);
void switch_unpin(const struct rinx_spec *s,
		  const struct rinx_spec_rack *ina, const char *ns,
		  int pinned);
int switch_load(const struct rinx_spec *s, const char *ns, __u8 rack,
		int topo, int plain, const __u8 *ina_mac,
		struct switch_bpf **skel);
int attach_ports(const struct rinx_spec *s, const char *ns,
		 const char (*ifname)[IFNAMSIZ], const int *ifindex,
		 int n, int prog, __u32 flags);
int switch_attach(const struct rinx_spec *s, const struct tb_switch *sw,
		  const struct rinx_sw_link_set *link);
void switch_layout(const struct rinx_spec *s, const char *prefix,
		   int r, struct tb_switch *sw);
int switch_ns(const struct rinx_spec *s, const char *prefix, int i,
	      char *buf);

/* ---- link emulation (link.c) ---- */
void link_pin_dir(const struct rinx_spec *s, const char *ns,
		  char *buf, size_t len);
int host_pace(const struct rinx_spec_host *h, __u32 rate_mbit);
int link_port_init(struct switch_bpf *skel, const char *ns,
		   __u32 ifindex, int egress_fd,
		   const struct rinx_sw_link_set *f);
int link_pin(const struct rinx_spec *s, const char *ns,
	     struct switch_bpf *skel);
void link_unpin(const struct rinx_spec *s, const char *ns);

/* ---- INA ToRs (ina.c) ---- */
void agg_unpin(const struct rinx_spec *s,
	       const struct rinx_spec_rack *r);
int agg_pin(const struct rinx_spec *s, const struct rinx_spec_rack *r,
	    struct switch_bpf *skel);
int torctl_up(const struct rinx_spec *s);

/* ---- up and down (testbed.c) ---- */
int mkdir_parent(const char *path);
int teardown(const struct rinx_spec *s, const char *prefix,
	     const char *spec_path, int *removed);
int tb_load(const char *what, struct rinx_spec *s, char *prefix,
	    size_t plen, char *spec_path);

/* ---- topology testbeds (topo.c) ---- */
void topo_path_of(const char *spec_path, char *buf, size_t len);
const __u8 *tt_mac(const struct rinx_spec *s, const struct tt *x,
		   int node);
int tt_port(const struct tt_sw *sw, int l);
void tt_flows_dir(const struct rinx_spec *s, const char *ns,
		  char *buf, size_t len);
/* the maps a topology switch pins beside its links */
extern const char *const tt_pins[3];
int topo_up(const struct rinx_testbed_opts *o,
	    struct rinx_spec *spec_out);

/* ---- their routes (route.c) ---- */
int tt_routes(const struct rinx_spec *s, struct tt *x, int *nflows,
	      int *nbcast);

#endif
