// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Routes of a topology testbed: the flow and broadcast tables of every
 * switch for the classes of a planner's plan.
 */
#include <sys/wait.h>
#include <bpf/bpf.h>
#include "tools/testbed/tb.h"

/*
 * One class's broadcast route through the switches: the arcs of the
 * plan's broadcast transfers, breadth first from the class's root, where
 * only switches pass the block on (the root sends it once, to the fabric's
 * group, and the switches replicate it: a worker or a server that relays
 * in the plan does not on the testbed, and its switch sends on what it
 * would have), pruned to the arcs that lead to a worker. by[v]: the arc
 * node v gets the block by (-1: the root, -2: not on the route);
 * keep[arc]: the arc is on the route. Every arc kept is one of the plan's
 * and carries one copy of a block, so none carries more than the plan
 * says. -ENOENT when a worker is not reached (the class's broadcast then
 * stays on the spanning tree).
 */
static int tt_bc_route(const struct topo *t, const struct pp_class *c,
		       int *by, char *use, char *keep, int *q)
{
	int h = 0, n = 0, i, j, w;

	memset(use, 0, 2 * t->nlinks);
	memset(keep, 0, 2 * t->nlinks);
	for (i = 0; i < t->nnodes; i++)
		by[i] = -2;
	if (c->kind != PP_TREE || c->root < 0 || c->root >= t->nnodes)
		return -ENOENT;
	for (i = 0; i < c->nbc; i++)
		for (j = 0; j < c->bc[i].nhop; j++)
			use[c->bc[i].hop[j]] = 1;
	by[c->root] = -1;
	q[n++] = c->root;
	while (h < n) {
		int u = q[h++];

		if (u != c->root && t->node[u].kind != TOPO_SWITCH)
			continue;
		for (i = t->off[u]; i < t->off[u + 1]; i++) {
			int arc = t->adj[i], v = topo_arc_to(t, arc);

			if (!use[arc] || by[v] != -2)
				continue;
			by[v] = arc;
			q[n++] = v;
		}
	}
	for (i = 0; i < t->nhosts; i++) {
		w = t->hosts[i];
		if (by[w] == -2)
			return -ENOENT;
		for (; by[w] >= 0 && !keep[by[w]]; w = topo_arc_from(t, by[w]))
			keep[by[w]] = 1;
	}
	return 0;
}

/* One port of one class's broadcast route at a switch. */
struct tt_bc {
	int sw;		/* index in x->sw */
	int in;		/* port the block comes in by; -1: the switch's
			 * own aggregator (the class's root) */
	int out;	/* a port it leaves by */
	int klass;
	const __u8 *src;	/* the root's MAC */
};

/* Empties the map at fd (a flow or broadcast table). */
static void tt_map_clear(int fd, size_t key_size)
{
	__u8 key[64], next[64];
	int n = 0;

	if (key_size > sizeof(key))
		return;
	/* each delete removes the first key: bounded by the map's size */
	while (n++ < 1 << 16 && !bpf_map_get_next_key(fd, NULL, next)) {
		memcpy(key, next, key_size);
		if (bpf_map_delete_elem(fd, key))
			break;
	}
}

/* Ifindex of every port of switch sw (looked up in its namespace). */
static int tt_ifindexes(const struct tt_sw *sw, __u32 *ifindex)
{
	int old, err, i;

	err = rinx_netns_enter(sw->ns, &old);
	if (err)
		return err;
	for (i = 0; i < sw->nports; i++) {
		ifindex[i] = if_nametoindex(sw->ifname[i]);
		if (!ifindex[i]) {
			pr_warn("switch %s: no port %s\n", sw->ns,
				sw->ifname[i]);
			err = -ENODEV;
			break;
		}
	}
	rinx_netns_leave(old);
	return err;
}

/* The broadcast routes bc[0..n) of switch i into its `bcast` table: one
 * devmap of ports per (ingress, class, root), made in the switch's
 * namespace (a devmap resolves its ifindexes there). *nb counts them. */
static int tt_bc_write(const struct tt *x, int i, const struct tt_bc *bc,
		       int n, const __u32 *ifindex, int outer, int egress,
		       int *nb)
{
	const struct tt_sw *sw = &x->sw[i];
	int old, err, a, b;

	err = rinx_netns_enter(sw->ns, &old);
	if (err)
		return err;
	for (a = 0; a < n && !err; a++) {
		struct rinx_sw_bcast_key key = {};
		int fd, first = 1;

		if (bc[a].sw != i)
			continue;
		/* the first entry of its (ingress, class, root) makes it */
		for (b = 0; b < a && first; b++)
			first = !(bc[b].sw == i && bc[b].in == bc[a].in &&
				  bc[b].klass == bc[a].klass &&
				  bc[b].src == bc[a].src);
		if (!first)
			continue;
		fd = bpf_map_create(BPF_MAP_TYPE_DEVMAP_HASH, "sw_bcast",
				    sizeof(__u32),
				    sizeof(struct bpf_devmap_val),
				    RINX_SW_MAX_PORTS, NULL);
		if (fd < 0) {
			err = -errno;
			pr_warn("switch %s: broadcast devmap: %s\n", sw->ns,
				strerror(errno));
			break;
		}
		for (b = a; b < n && !err; b++) {
			struct bpf_devmap_val v = { .bpf_prog.fd = egress };

			if (bc[b].sw != i || bc[b].in != bc[a].in ||
			    bc[b].klass != bc[a].klass || bc[b].src != bc[a].src)
				continue;
			v.ifindex = ifindex[bc[b].out];
			err = map_set(fd, &v.ifindex, &v, sw->ns,
				      "broadcast devmap");
		}
		key.ingress = bc[a].in < 0 ? 0 : ifindex[bc[a].in];
		key.klass = bc[a].klass;
		memcpy(key.src, bc[a].src, 6);
		if (!err)
			err = map_set(outer, &key, &fd, sw->ns,
				      "broadcast table");
		close(fd);
		if (!err)
			(*nb)++;
	}
	rinx_netns_leave(old);
	return err;
}

/*
 * The route of transfer xf into the flow tables fds of the switches on it:
 * each sends the (dst, src) pair out by the route's next link, in class
 * klass and in any class (frames without a class entry: other plans',
 * control frames; a pair two classes route differently keeps the last
 * one). klass -1: in any class only. *n counts the entries.
 */
static int tt_flow(const struct rinx_spec *s, const struct tt *x,
		   const struct pp_xfer *xf, int klass, const int *fds,
		   __u32 (*ifx)[TT_MAX_PORTS], int *n)
{
	const struct topo *t = &x->t;
	const __u8 *src = tt_mac(s, x, xf->src);
	const __u8 *dst = tt_mac(s, x, xf->dst);
	struct rinx_sw_flow_key key = {};
	int h, err;

	if (!src || !dst)
		return 0;
	memcpy(key.dst, dst, 6);
	memcpy(key.src, src, 6);
	for (h = 0; h < xf->nhop; h++) {
		int u = topo_arc_from(t, xf->hop[h]), ri, port;
		struct rinx_sw_port p = {}, had;

		if (t->node[u].kind != TOPO_SWITCH)
			continue;
		ri = x->rack_of[u];
		port = tt_port(&x->sw[ri], xf->hop[h] >> 1);
		if (port < 0)
			return -EINVAL;
		p.port = ifx[ri][port];
		/* one route per (dst, src) pair of a class */
		key.klass = klass < 0 ? RINX_SW_CLASS_ANY : klass;
		if (!bpf_map_lookup_elem(fds[ri], &key, &had) &&
		    had.port != p.port)
			pr_warn("switch %s: %s -> %s is routed two ways in "
				"class %d; the last route wins\n", x->sw[ri].ns,
				t->node[xf->src].name, t->node[xf->dst].name,
				klass);
		err = map_set(fds[ri], &key, &p, x->sw[ri].ns, "flow table");
		if (!err && klass >= 0) {
			key.klass = RINX_SW_CLASS_ANY;
			err = map_set(fds[ri], &key, &p, x->sw[ri].ns,
				      "flow table");
		}
		if (err)
			return err;
		*n += klass >= 0 ? 2 : 1;
	}
	return 0;
}

/*
 * The plan's routes into the switches' tables (emptied first):
 *  - every reduce transfer's route (tt_flow), in its class and any class.
 *    Transfers that follow the MAC table anyway need no entry, but an
 *    entry does no harm;
 *  - a ring's hops (mem[i] -> mem[i + 1], the planner's routes), in any
 *    class: every class of its tables sends every hop's pair;
 *  - every class's broadcast route (tt_bc_route): the switches on it send
 *    the class's blocks from its root to the fabric's group out by the
 *    route's ports; a class whose route misses a worker keeps the
 *    spanning tree.
 * *nflows and *nbcast get the entries written.
 */
int tt_routes(const struct rinx_spec *s, struct tt *x, int *nflows,
	      int *nbcast)
{
	struct topo *t = &x->t;
	char dir[RINX_PATH_MAX], path[RINX_PATH_MAX + 16];
	int na = 2 * t->nlinks, i, k, j, err = 0, n = 0, nb = 0, nbc = 0;
	int *fds = calloc(x->nsw, sizeof(int)), *bfd = calloc(x->nsw, sizeof(int));
	int *efd = calloc(x->nsw, sizeof(int)), *by = calloc(t->nnodes, sizeof(int));
	int *q = calloc(t->nnodes, sizeof(int));
	__u32 (*ifx)[TT_MAX_PORTS] = calloc(x->nsw, sizeof(*ifx));
	char *use = calloc(na + 1, 1), *keep = calloc(na + 1, 1);
	struct tt_bc *bc = calloc((size_t)(x->pp.ncls + 1) * (na + 1),
				  sizeof(*bc));

	for (i = 0; fds && bfd && efd && i < x->nsw; i++)
		fds[i] = bfd[i] = efd[i] = -1;
	if (!fds || !bfd || !efd || !by || !q || !ifx || !use || !keep || !bc) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < x->nsw; i++) {
		int *fdp[] = { &fds[i], &bfd[i], &efd[i] };

		tt_flows_dir(s, x->sw[i].ns, dir, sizeof(dir));
		for (j = 0; j < (int)NELEM(tt_pins); j++) {
			snprintf(path, sizeof(path), "%s/%s", dir, tt_pins[j]);
			*fdp[j] = bpf_obj_get(path);
			if (*fdp[j] < 0) {
				err = -errno;
				pr_warn("switch %s: no %s at %s: %s\n",
					x->sw[i].ns, tt_pins[j], path,
					strerror(errno));
				goto out;
			}
		}
		err = tt_ifindexes(&x->sw[i], ifx[i]);
		if (err)
			goto out;
		tt_map_clear(fds[i], sizeof(struct rinx_sw_flow_key));
		tt_map_clear(bfd[i], sizeof(struct rinx_sw_bcast_key));
	}
	for (k = 0; k < x->pp.ncls; k++) {
		const struct pp_class *c = &x->pp.cls[k];
		const __u8 *root;

		for (j = 0; j < c->nred && !err; j++)
			err = tt_flow(s, x, &c->red[j], k, fds, ifx, &n);
		/* a ring's hops: every class of the tables (one per member)
		 * sends each hop's pair, so the pair's entry of any class */
		for (j = 0; c->kind == PP_RING && j < c->nring && !err; j++)
			err = tt_flow(s, x, &c->ring[j], -1, fds, ifx, &n);
		if (err)
			goto out;
		if (c->kind != PP_TREE)
			continue;
		root = tt_mac(s, x, c->root);
		if (!root || t->nhosts < 2 ||
		    tt_bc_route(t, c, by, use, keep, q)) {
			pr_debug("class %d: broadcast on the spanning tree\n",
				 k);
			continue;
		}
		for (j = 0; j < na; j++) {
			int u = topo_arc_from(t, j), ri;

			if (!keep[j] || t->node[u].kind != TOPO_SWITCH)
				continue;
			ri = x->rack_of[u];
			bc[nbc].sw = ri;
			bc[nbc].out = tt_port(&x->sw[ri], j >> 1);
			bc[nbc].in = by[u] < 0 ? -1 :
				     tt_port(&x->sw[ri], by[u] >> 1);
			bc[nbc].klass = k;
			bc[nbc].src = root;
			if (bc[nbc].out < 0 || (by[u] >= 0 && bc[nbc].in < 0)) {
				err = -EINVAL;
				goto out;
			}
			nbc++;
		}
	}
	for (i = 0; i < x->nsw && !err; i++)
		err = tt_bc_write(x, i, bc, nbc, ifx[i], bfd[i], efd[i], &nb);
out:
	for (i = 0; fds && bfd && efd && i < x->nsw; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		if (bfd[i] >= 0)
			close(bfd[i]);
		if (efd[i] >= 0)
			close(efd[i]);
	}
	free(fds);
	free(bfd);
	free(efd);
	free(by);
	free(q);
	free(ifx);
	free(use);
	free(keep);
	free(bc);
	if (nflows)
		*nflows = n;
	if (nbcast)
		*nbcast = nb;
	return err;
}
