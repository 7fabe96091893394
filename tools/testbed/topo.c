// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Topology testbeds: a topology file (user/plan/topo.h) as namespaces,
 * links and switches, its planner's plan installed on them.
 */
#include <sys/wait.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include "tools/testbed/tb.h"
#include "user/plan/plan.h"

/* ---- topology testbeds ----
 *
 * A topology (user/plan/topo.h) as a testbed: every switch and every PS a
 * namespace <prefix>t<i> (switches first, in topology order, then the
 * servers), every worker a host <prefix>h<rank>, one veth per link: eth0
 * of a host or a PS, l<link> on a switch. Every port's queue drains at its
 * link's rate (that direction) times scale_mbit. A switch runs the XDP
 * switch with sw_topo set: unicast by the MAC table (shortest paths, the
 * routes topo_route picks), the plan's routes (per class and per pair) in
 * `flows`, each class's result to the fabric's group along the class's
 * broadcast route (`bcast`), floods and the group of classes without one
 * on a spanning tree (breadth first from the first PS's switch, else from
 * the first switch), so cycles cannot loop a frame. A switch marked
 * ina=yes and every PS carry an aggregator: a PS is a one-port INA node
 * (the switch program on its eth0, its aggregator answering to its MAC,
 * its output back out eth0). In the spec a switch or PS is a rack (named
 * as in the topology, ina=switch when it aggregates), a host is in the
 * rack of its switch; the topology is written beside the spec and named by
 * its topo=.
 */

static void tt_free(struct tt *x)
{
	topo_free(&x->t);
	if (x->have_pp)
		pp_free(&x->pp);
	free(x->rack_of);
	free(x->tree_link);
	free(x->sw);
	memset(x, 0, sizeof(*x));
}

void topo_path_of(const char *spec_path, char *buf, size_t len)
{
	size_t n = strlen(spec_path);

	if (n > 5 && !strcmp(spec_path + n - 5, ".spec"))
		n -= 5;
	snprintf(buf, len, "%.*s.topo", (int)n, spec_path);
}

/* The MAC of a topology node in the spec: a host's, or the aggregator's of
 * its rack (switch or PS); NULL if it has none. */
const __u8 *tt_mac(const struct rinx_spec *s, const struct tt *x,
		   int node)
{
	const struct rinx_spec_host *h;
	int ri;

	if (x->t.node[node].kind == TOPO_HOST) {
		h = rinx_spec_host(s, x->t.node[node].name);
		return h ? h->mac : NULL;
	}
	ri = x->rack_of[node];
	if (ri < 0 || s->racks[ri].ina != RINX_INA_SWITCH)
		return NULL;
	return s->racks[ri].mac;
}

/* Port of switch sw on link l, -1 if none. */
int tt_port(const struct tt_sw *sw, int l)
{
	int i;

	for (i = 0; i < sw->nports; i++)
		if (sw->link[i] == l)
			return i;
	return -1;
}

/* Spanning tree of the switch graph, breadth first from root; every link
 * of a host or a PS is on it. */
static int tt_tree(struct tt *x, int root)
{
	struct topo *t = &x->t;
	int *seen = calloc(t->nnodes, sizeof(int));
	int *q = calloc(t->nnodes, sizeof(int));
	int h = 0, n = 0, i, l;

	if (!seen || !q) {
		free(seen);
		free(q);
		return -ENOMEM;
	}
	for (l = 0; l < t->nlinks; l++)
		x->tree_link[l] = t->node[t->link[l].a].kind != TOPO_SWITCH ||
				  t->node[t->link[l].b].kind != TOPO_SWITCH;
	q[n++] = root;
	seen[root] = 1;
	while (h < n) {
		int u = q[h++];

		for (i = t->off[u]; i < t->off[u + 1]; i++) {
			int arc = t->adj[i], v = topo_arc_to(t, arc);

			if (t->node[v].kind != TOPO_SWITCH || seen[v])
				continue;
			seen[v] = 1;
			x->tree_link[arc >> 1] = 1;
			q[n++] = v;
		}
	}
	free(seen);
	free(q);
	return 0;
}

static int tt_check(const struct tt *x, char *err, size_t errlen)
{
	const struct topo *t = &x->t;
	int *deg = calloc(t->nnodes, sizeof(int)), i, l, ret = 0;

	if (!deg)
		return -ENOMEM;
	if (t->nhosts < 1 || t->nhosts > RINX_MAX_NODES)
		ret = rinx_seterr(err, errlen, -EINVAL, "the testbed takes 1..%d "
				  "workers (topology has %d)", RINX_MAX_NODES,
				  t->nhosts);
	for (l = 0; !ret && l < t->nlinks; l++) {
		int a = t->link[l].a, b = t->link[l].b;

		deg[a]++;
		deg[b]++;
		if (t->node[a].kind != TOPO_SWITCH &&
		    t->node[b].kind != TOPO_SWITCH)
			ret = rinx_seterr(err, errlen, -EINVAL, "link %s-%s: the "
					  "testbed joins hosts and servers "
					  "through switches only",
					  t->node[a].name, t->node[b].name);
	}
	for (i = 0; !ret && i < t->nnodes; i++) {
		if (t->node[i].kind == TOPO_SWITCH && deg[i] > TT_MAX_PORTS)
			ret = rinx_seterr(err, errlen, -EINVAL, "switch %s: "
					  "more than %d ports", t->node[i].name,
					  TT_MAX_PORTS);
		else if (t->node[i].kind != TOPO_SWITCH && deg[i] != 1)
			ret = rinx_seterr(err, errlen, -EINVAL, "%s has %d "
					  "links: the testbed's hosts and "
					  "servers have one", t->node[i].name,
					  deg[i]);
		else if (strlen(t->node[i].name) >= RINX_NAME_MAX)
			ret = rinx_seterr(err, errlen, -EINVAL, "name %s too "
					  "long", t->node[i].name);
	}
	if (!ret && t->nnodes - t->nhosts > RINX_MAX_NODES)
		ret = rinx_seterr(err, errlen, -EINVAL, "at most %d switches "
				  "and servers", RINX_MAX_NODES);
	free(deg);
	return ret;
}

static __u32 tt_rate(double gbps, double scale)
{
	double m = gbps * scale;

	if (m < 1)
		m = 1;
	return m > RINX_SW_RATE_MAX ? RINX_SW_RATE_MAX : (__u32)m;
}

/* Spec and layout of the topology testbed. */
static int tt_build(const struct rinx_testbed_opts *o, struct tt *x,
		    struct rinx_spec *s, const char *topo_path, char *err,
		    size_t errlen)
{
	struct topo *t = &x->t;
	double scale = o->scale_mbit > 0 ? o->scale_mbit : RINX_TB_SCALE;
	int i, l, r, nsw = 0, rank = 0, root = -1, ret;

	ret = tt_check(x, err, errlen);
	if (ret)
		return ret;
	x->rack_of = malloc(t->nnodes * sizeof(int));
	x->tree_link = calloc(t->nlinks ? t->nlinks : 1, sizeof(int));
	x->sw = calloc(t->nnodes, sizeof(*x->sw));
	if (!x->rack_of || !x->tree_link || !x->sw)
		return -ENOMEM;
	rinx_spec_init(s);
	s->port = o->port ? o->port : RINX_DEFAULT_PORT;
	s->window = o->window ? o->window : RINX_DEFAULT_WINDOW;
	if (o->jobs)
		s->jobs = o->jobs;
	s->mode = o->mode;
	snprintf(s->pin, sizeof(s->pin), "%s/%s",
		 o->pin ? o->pin : RINX_TB_PIN_ROOT, o->prefix);
	snprintf(s->topo, sizeof(s->topo), "%s", topo_path);
	s->scale_mbit = o->scale_mbit > 0 ? o->scale_mbit : RINX_TB_SCALE;
	ret = rinx_plan_parse(o->plan ? o->plan : "topo:grid", &s->plan,
			      &s->plan_nps, err, errlen);
	if (ret)
		return ret;
	/* racks: switches, then servers */
	for (r = 0; r < 2; r++)
		for (i = 0; i < t->nnodes; i++) {
			struct rinx_spec_rack *k;
			int ps = t->node[i].kind == TOPO_PS;

			x->rack_of[i] = r ? x->rack_of[i] : -1;
			if (t->node[i].kind == TOPO_HOST || ps != r)
				continue;
			k = &s->racks[nsw];
			x->rack_of[i] = nsw;
			k->id = nsw;
			snprintf(k->name, sizeof(k->name), "%s",
				 t->node[i].name);
			tor_ns(k->netns, o->prefix, nsw);
			if (ps || t->node[i].ina) {
				__u8 mac[6] = { 0x02, 0x72, 0x78, 0xfe,
						nsw, 0x01 };

				k->ina = RINX_INA_SWITCH;
				memcpy(k->mac, mac, 6);
				k->ip = htonl(TB_NET_A << 24 | TB_NET_B << 16 |
					      nsw << 8 | TB_AGG_HOST);
			}
			snprintf(x->sw[nsw].ns, NS_NAME_MAX, "%s", k->netns);
			x->sw[nsw].node = i;
			x->sw[nsw].rack = nsw;
			if (ps && root < 0)
				root = t->node[i].tor;
			nsw++;
		}
	s->nracks = x->nsw = nsw;
	for (i = 0; i < t->nhosts; i++, rank++) {
		int w = t->hosts[i], tor = t->node[w].tor, ri = x->rack_of[tor];
		struct rinx_spec_host *h = &s->hosts[rank];
		int k = 0, j;
		__u8 mac[6] = { 0x02, 0x72, 0x78, 0, ri, 0 };

		for (j = 0; j < i; j++)
			k += t->node[t->hosts[j]].tor == tor;
		if (k >= 250)
			return rinx_seterr(err, errlen, -EINVAL, "switch %s: "
					   "too many hosts", t->node[tor].name);
		mac[5] = k + 1;
		snprintf(h->name, sizeof(h->name), "%s", t->node[w].name);
		h->rank = rank;
		h->rack = ri;
		snprintf(h->ifname, sizeof(h->ifname), "eth0");
		memcpy(h->mac, mac, 6);
		h->ip = htonl(TB_NET_A << 24 | TB_NET_B << 16 | ri << 8 | (k + 1));
		host_ns(h->netns, o->prefix, rank);
	}
	s->nhosts = rank;
	/* ports: a switch's on every link it has; a server's eth0 */
	for (l = 0; l < t->nlinks; l++) {
		for (r = 0; r < 2; r++) {
			int u = r ? t->link[l].b : t->link[l].a;
			struct tt_sw *sw;

			if (t->node[u].kind == TOPO_HOST)
				continue;
			sw = &x->sw[x->rack_of[u]];
			if (t->node[u].kind == TOPO_PS)
				snprintf(sw->ifname[sw->nports], IFNAMSIZ,
					 "eth0");
			else
				snprintf(sw->ifname[sw->nports], IFNAMSIZ,
					 "l%d", l);
			sw->link[sw->nports] = l;
			/* egress of u: a->b is gbps[0] */
			sw->rate[sw->nports] = tt_rate(t->link[l].gbps[r],
						       scale);
			sw->real[sw->nports] = tt_rate(t->link[l].gbps[r],
						       1000);
			sw->nports++;
		}
	}
	if (root < 0)
		for (i = 0; i < t->nnodes && root < 0; i++)
			if (t->node[i].kind == TOPO_SWITCH)
				root = i;
	if (root < 0)
		return rinx_seterr(err, errlen, -EINVAL, "topology has no "
				   "switch");
	ret = tt_tree(x, root);
	if (ret)
		return ret;
	for (i = 0; i < nsw; i++)
		for (r = 0; r < x->sw[i].nports; r++)
			x->sw[i].tree[r] = x->tree_link[x->sw[i].link[r]];
	return 0;
}

/* The veths: host eth0 <-> switch l<link>; switch l<link> <-> switch
 * l<link>; server eth0 <-> switch l<link>. */
static int tt_links(const struct rinx_spec *s, const struct tt *x, int mtu)
{
	const struct topo *t = &x->t;
	struct rinx_tb_buf cmd = {};
	char na[NS_NAME_MAX], nb[NS_NAME_MAX], mac[18];
	int l, err;

	for (l = 0; l < t->nlinks; l++) {
		int a = t->link[l].a, b = t->link[l].b, tmp;
		const char *ia = "eth0", *ib;
		char lname[IFNAMSIZ];

		/* the switch on side b, the other node (any kind) on a */
		if (t->node[b].kind != TOPO_SWITCH) {
			tmp = a;
			a = b;
			b = tmp;
		}
		snprintf(lname, sizeof(lname), "l%d", l);
		ib = lname;
		snprintf(nb, sizeof(nb), "%s", x->sw[x->rack_of[b]].ns);
		if (t->node[a].kind == TOPO_HOST) {
			const struct rinx_spec_host *h =
				rinx_spec_host(s, t->node[a].name);

			snprintf(na, sizeof(na), "%s", h->netns);
			fmt_mac(mac, h->mac);
			rinx_tb_put(&cmd, "link add eth0 netns %s address %s mtu %d "
				    "type veth peer name %s netns %s mtu %d\n",
				    na, mac, mtu, ib, nb, mtu);
			continue;
		}
		if (t->node[a].kind == TOPO_SWITCH)
			ia = lname;
		snprintf(na, sizeof(na), "%s", x->sw[x->rack_of[a]].ns);
		rinx_tb_put(&cmd, "link add %s netns %s mtu %d type veth "
			    "peer name %s netns %s mtu %d\n", ia, na, mtu,
			    ib, nb, mtu);
	}
	err = run_ip_batch(NULL, &cmd);
	rinx_tb_free(&cmd);
	return err;
}

/* MAC table of switch sw: every host, aggregator and server, by the port
 * of the first arc of its route from here; a server's one port takes
 * everything. Its own aggregator takes its frames before the table. */
static int tt_macs(const struct rinx_spec *s, struct tt *x,
		   const struct tt_sw *sw, int fd, const int *ifindex)
{
	struct topo *t = &x->t;
	int arcs[PP_MAX_HOPS], d, n, port, err;

	for (d = 0; d < t->nnodes; d++) {
		const __u8 *mac = tt_mac(s, x, d);
		struct rinx_sw_port p = {};
		__u64 k;

		if (!mac || d == sw->node)
			continue;
		if (t->node[sw->node].kind == TOPO_PS) {
			port = 0;
		} else {
			n = topo_route(t, sw->node, d, arcs, PP_MAX_HOPS);
			if (n < 1)
				return n < 0 ? n : -EHOSTUNREACH;
			port = tt_port(sw, arcs[0] >> 1);
			if (port < 0)
				return -EINVAL;
		}
		p.port = ifindex[port];
		k = mac_key(mac);
		err = map_set(fd, &k, &p, sw->ns, "mac table");
		if (err)
			return err;
	}
	return 0;
}

void tt_flows_dir(const struct rinx_spec *s, const char *ns,
		  char *buf, size_t len)
{
	link_pin_dir(s, ns, buf, len);
}

/* What a topology switch pins beside its links for tt_routes: the flow
 * table, the broadcast table and the ports' devmap program. */
const char *const tt_pins[3] = { "flows", "bcast", "port_egress" };

/* The aggregation capacity of topology switch sw (its cap=, scaled as its
 * links are; its buffer and mark threshold those of a port of the
 * unscaled rate, as the links'): the aggregator's queue, `ina_cap`. A
 * switch without cap= (a server) sums whatever reaches it. `testbed up
 * --buffer, --ecn` set them as they set every port's. */
static int tt_cap_set(const struct rinx_spec *s, const struct tt *x,
		      const struct tt_sw *sw, struct switch_bpf *skel,
		      const struct rinx_sw_link_set *link)
{
	double cap = x->t.node[sw->node].cap;
	struct rinx_sw_link_set f = {};
	struct rinx_sw_link v;
	__u32 k = RINX_SW_CAP_KEY;

	if (!(cap > 0))
		return 0;
	f.rate_mbit = tt_rate(cap, s->scale_mbit > 0 ? s->scale_mbit :
						       RINX_TB_SCALE);
	f.buffer = link && link->buffer ? link->buffer :
		   rinx_testbed_buffer_default(tt_rate(cap, 1000));
	f.ecn = link && link->ecn ? link->ecn :
		rinx_testbed_ecn_default(tt_rate(cap, 1000));
	link_fresh(&v, &f);
	return map_set(bpf_map__fd(skel->maps.ina_cap), &k, &v, sw->ns,
		       "ina_cap");
}

static int tt_switch_attach(const struct rinx_spec *s, struct tt *x,
			    const struct tt_sw *sw,
			    const struct rinx_sw_link_set *link)
{
	__u32 flags = XDP_FLAGS_UPDATE_IF_NOEXIST |
		      (s->mode == RINX_XDP_GENERIC ? XDP_FLAGS_SKB_MODE :
						     XDP_FLAGS_DRV_MODE);
	const struct rinx_spec_rack *r = &s->racks[sw->rack];
	int ina = r->ina == RINX_INA_SWITCH;
	int ifindex[TT_MAX_PORTS];
	struct switch_bpf *skel = NULL;
	int old, err, i, port_egress, pinned = 0;
	char path[RINX_PATH_MAX + 16], dir[RINX_PATH_MAX];

	err = rinx_netns_enter(sw->ns, &old);
	if (err)
		return err;
	err = switch_load(s, sw->ns, r->id, 1, 0, ina ? r->mac : NULL, &skel);
	if (err)
		goto out;
	port_egress = bpf_program__fd(skel->progs.rinx_port_egress);
	for (i = 0; i < sw->nports; i++) {
		__u32 idx = if_nametoindex(sw->ifname[i]);
		struct bpf_devmap_val v = { .ifindex = idx,
					    .bpf_prog.fd = port_egress };
		struct rinx_sw_link_set f = {};

		if (!idx) {
			err = -ENODEV;
			pr_warn("switch %s: no port %s\n", sw->ns,
				sw->ifname[i]);
			goto out;
		}
		ifindex[i] = idx;
		if (link)
			f = *link;
		/* A scaled port keeps the queue of the port it stands for,
		 * in bytes: as many frames fit and mark as at line rate (a
		 * default sized for the scaled rate would hold a few frames,
		 * less than one window of the ranks' first blocks). */
		f.rate_mbit = sw->rate[i];
		f.buffer = link && link->buffer ? link->buffer :
			   rinx_testbed_buffer_default(sw->real[i]);
		f.ecn = link && link->ecn ? link->ecn :
			rinx_testbed_ecn_default(sw->real[i]);
		err = map_set(bpf_map__fd(skel->maps.ports), &idx, &v, sw->ns,
			      "devmap");
		/* floods and the group on the tree; a group finished here
		 * (the aggregator of a server, or a switch's that is a
		 * class's root) goes out of every tree port */
		if (!err && sw->tree[i])
			err = map_set(bpf_map__fd(skel->maps.flood), &idx, &v,
				      sw->ns, "flood");
		if (!err && sw->tree[i])
			err = map_set(bpf_map__fd(skel->maps.group_hosts), &idx,
				      &v, sw->ns, "group_hosts");
		if (!err)
			err = link_port_init(skel, sw->ns, idx, port_egress, &f);
		if (err)
			goto out;
	}
	err = ina ? tt_cap_set(s, x, sw, skel, link) : 0;
	if (!err)
		err = tt_macs(s, x, sw, bpf_map__fd(skel->maps.macs), ifindex);
	if (err) {
		pr_warn("switch %s: mac table: %s\n", sw->ns, strerror(-err));
		goto out;
	}
	err = switch_pin(s, ina ? r : NULL, sw->ns, skel, &pinned);
	if (err)
		goto out;
	/* the plan's routes are written later (tt_routes), into these:
	 * the broadcast routes' devmaps name the ports' program */
	tt_flows_dir(s, sw->ns, dir, sizeof(dir));
	for (i = 0; i < (int)NELEM(tt_pins); i++) {
		int fd = i == 0 ? bpf_map__fd(skel->maps.flows) :
			 i == 1 ? bpf_map__fd(skel->maps.bcast) : port_egress;

		snprintf(path, sizeof(path), "%s/%s", dir, tt_pins[i]);
		unlink(path);
		if (bpf_obj_pin(fd, path)) {
			err = -errno;
			pr_warn("switch %s: cannot pin %s: %s\n", sw->ns, path,
				strerror(errno));
			goto out;
		}
	}
	err = attach_ports(s, sw->ns, sw->ifname, ifindex, sw->nports,
			   bpf_program__fd(skel->progs.rinx_switch), flags);
out:
	if (err)
		switch_unpin(s, ina ? r : NULL, sw->ns, pinned);
	switch_bpf__destroy(skel);
	rinx_netns_leave(old);
	return err;
}

/* The topology of opts o (file or generator) into x. */
static int tt_load(const struct rinx_testbed_opts *o, struct tt *x,
		   char *err, size_t errlen)
{
	int ret;

	memset(x, 0, sizeof(*x));
	topo_init(&x->t);
	if (o->topo)
		ret = topo_load(o->topo, &x->t, err, errlen);
	else
		ret = topo_generate(o->gen, &x->t, err, errlen);
	return ret;
}

/* The plan of spec s on x's topology, for its routes. */
static int tt_plan(const struct rinx_spec *s, struct tt *x, char *err,
		   size_t errlen)
{
	struct rinx_plan *p;
	struct topo t2;
	int ret;

	if (s->plan != RINX_PLAN_TOPO)
		return 0;
	ret = pp_load(s->topo, pp_planners[s->plan_nps - 1].name, &t2,
		      &x->pp, err, errlen);
	x->have_pp = 1;
	/* the same file as x->t: node and link ids agree */
	topo_free(&t2);
	if (ret)
		return ret;
	/* what the ranks will compile at open must compile now (a ring
	 * whose members aggregate racks, rina and har, does not: the
	 * compiler says why) */
	p = malloc(sizeof(*p));
	ret = p ? rinx_plan_build(p, s, 0) : -ENOMEM;
	free(p);
	if (ret)
		return rinx_seterr(err, errlen, ret, "plan %s does not compile "
				   "for this testbed (%s)", x->pp.scheme,
				   strerror(-ret));
	return 0;
}

int topo_up(const struct rinx_testbed_opts *o,
	    struct rinx_spec *spec_out)
{
	char spec_path[RINX_PATH_MAX], topo_path[RINX_PATH_MAX + 8];
	char msg[256];
	struct rinx_spec *s;
	struct tt x;
	struct rinx_tb_buf cmd = {};
	int i, err, made = 0, nflows = 0, nbcast = 0;
	FILE *f;

	if (o->spec_out)
		snprintf(spec_path, sizeof(spec_path), "%s", o->spec_out);
	else
		rinx_testbed_spec_path(o->prefix, spec_path,
				       sizeof(spec_path));
	topo_path_of(spec_path, topo_path, sizeof(topo_path));
	if (strlen(topo_path) >= RINX_PATH_MAX) {
		pr_warn("spec path too long\n");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = tt_load(o, &x, msg, sizeof(msg));
	if (!err)
		err = tt_build(o, &x, s, topo_path, msg, sizeof(msg));
	if (err) {
		pr_warn("testbed topology: %s\n", msg);
		goto out;
	}
	err = mkdir_parent(topo_path);
	f = err ? NULL : fopen(topo_path, "w");
	if (!f) {
		err = err ? err : -errno;
		pr_warn("cannot write %s: %s\n", topo_path, strerror(-err));
		goto out;
	}
	topo_write(f, &x.t);
	if (fclose(f)) {
		err = -errno;
		goto out;
	}
	err = rinx_spec_check(s, msg, sizeof(msg));
	if (!err)
		err = tt_plan(s, &x, msg, sizeof(msg));
	if (err) {
		pr_warn("testbed spec: %s\n", msg);
		goto out;
	}
	made = 1;
	for (i = 0; i < s->nhosts; i++)
		rinx_tb_put(&cmd, "netns add %s\n", s->hosts[i].netns);
	for (i = 0; i < x.nsw; i++)
		rinx_tb_put(&cmd, "netns add %s\n", x.sw[i].ns);
	err = run_ip_batch(NULL, &cmd);
	rinx_tb_free(&cmd);
	for (i = 0; i < s->nhosts && !err; i++)
		err = ns_quiet(s->hosts[i].netns, 1);
	for (i = 0; i < x.nsw && !err; i++)
		err = ns_quiet(x.sw[i].ns, 0);
	if (!err)
		err = tt_links(s, &x, o->mtu ? o->mtu : RINX_TB_MTU);
	for (i = 0; i < s->nhosts && !err; i++)
		err = config_host(s, i);
	for (i = 0; i < x.nsw && !err; i++) {
		struct tb_switch one = {};
		int p;

		/* config_switch wants the rack switch's layout: names only */
		snprintf(one.ns, sizeof(one.ns), "%s", x.sw[i].ns);
		for (p = 0; p < x.sw[i].nports && p <= RINX_TB_MAX_PER_RACK;
		     p++)
			snprintf(one.ifname[p], IFNAMSIZ, "%s",
				 x.sw[i].ifname[p]);
		one.nports = p;
		if (x.sw[i].nports > p) {
			struct rinx_tb_buf up = {};

			for (; p < x.sw[i].nports; p++)
				rinx_tb_put(&up, "link set dev %s up\n",
					    x.sw[i].ifname[p]);
			err = run_ip_batch(x.sw[i].ns, &up);
			rinx_tb_free(&up);
		}
		if (!err)
			err = config_switch(&one);
		if (!err)
			err = tt_switch_attach(s, &x, &x.sw[i], o->link);
	}
	if (!err)
		err = tt_routes(s, &x, &nflows, &nbcast);
	if (!err)
		err = hosts_up(s, o->no_nodes);
	if (!err)
		err = torctl_up(s);
	if (err)
		goto out;
	err = mkdir_parent(spec_path);
	if (!err)
		err = rinx_spec_save(spec_path, s);
	if (err) {
		pr_warn("cannot write %s: %s\n", spec_path, strerror(-err));
		unlink(spec_path);
		goto out;
	}
	pr_debug("topology testbed %s: %d flow entries, %d broadcast "
		 "entries\n", o->prefix, nflows, nbcast);
	if (spec_out)
		*spec_out = *s;
out:
	if (err && made)
		teardown(s, o->prefix, NULL, NULL);
	if (err)
		unlink(topo_path);
	tt_free(&x);
	free(s);
	return err;
}

int rinx_testbed_topo_plan(const char *what, const char *plan, int *nflows,
			   int *nbcast)
{
	char prefix[RINX_TB_PREFIX_MAX + 1], spec_path[RINX_PATH_MAX];
	char msg[256];
	struct rinx_spec *s = calloc(1, sizeof(*s));
	struct tt x;
	int err;

	memset(&x, 0, sizeof(x));
	topo_init(&x.t);
	if (!s)
		return -ENOMEM;
	err = tb_load(what, s, prefix, sizeof(prefix), spec_path);
	if (err)
		goto out;
	if (!s->topo[0]) {
		pr_warn("%s is not a topology testbed (no topo= in its spec)\n",
			what);
		err = -EINVAL;
		goto out;
	}
	if (plan) {
		err = rinx_plan_parse(plan, &s->plan, &s->plan_nps, msg,
				      sizeof(msg));
		if (!err && s->plan != RINX_PLAN_TOPO)
			err = rinx_seterr(msg, sizeof(msg), -EINVAL, "a "
					  "topology testbed runs topo:NAME "
					  "plans");
		if (err) {
			pr_warn("%s\n", msg);
			goto out;
		}
	}
	err = topo_load(s->topo, &x.t, msg, sizeof(msg));
	if (!err) {
		struct rinx_testbed_opts o = { .prefix = prefix,
					       .plan = NULL };
		struct rinx_spec *s2 = calloc(1, sizeof(*s2));

		/* the layout again (the same function made the testbed) */
		o.scale_mbit = 1;
		err = s2 ? tt_build(&o, &x, s2, s->topo, msg, sizeof(msg)) :
			   -ENOMEM;
		free(s2);
	}
	if (!err)
		err = tt_plan(s, &x, msg, sizeof(msg));
	if (err) {
		pr_warn("%s\n", msg);
		goto out;
	}
	err = tt_routes(s, &x, nflows, nbcast);
	if (!err && plan) {
		err = rinx_spec_save(spec_path, s);
		if (err)
			pr_warn("cannot write %s: %s\n", spec_path,
				strerror(-err));
	}
out:
	tt_free(&x);
	free(s);
	return err;
}
