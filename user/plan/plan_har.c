// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Hierarchical allreduce (H-AR). With racks of equal size H (2D, as in
 * hierarchical/torus allreduce): the tensor is cut into H shards; shard j
 * is reduced inside every rack along a chain ending at the rack's j-th
 * worker (intra-rack reduce-scatter), those workers run a ring across the
 * racks, and the result runs back along the chain (intra-rack all-gather).
 * Otherwise each rack's first worker (the leader) gathers its rack, the
 * leaders run a ring and hand the result back. Workers without a switch
 * are racks of one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/plan/pplan.h"

int pp_rack_ring(struct topo *t, struct pp_plan *p, int ina, char *err,
		 size_t errlen)
{
	int *ord = malloc(3 * t->nhosts * sizeof(int)), *mem, *rep;
	int n, i, nm = 0, ret = 0, nsw = 0;
	struct pp_class *c;

	if (!ord)
		return -ENOMEM;
	mem = ord + t->nhosts;
	rep = mem + t->nhosts;
	n = pp_rack_order(t, ord);
	c = pp_class_new(p, PP_RING, 1);
	if (!c) {
		free(ord);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		int tor = t->node[ord[i]].tor;
		int first = i == 0 || tor < 0 || t->node[ord[i - 1]].tor != tor;

		if (ina && tor >= 0 && t->node[tor].ina) {
			if (first) {
				mem[nm++] = tor;
				nsw++;
			}
			rep[i] = tor;
		} else if (ina || first) {
			/* Rina: a worker of a plain rack; H-AR: a leader */
			mem[nm++] = ord[i];
			rep[i] = ord[i];
		} else {
			rep[i] = rep[i - 1];
		}
	}
	ret = pp_ring(t, c, mem, nm);
	for (i = 0; !ret && i < n; i++)
		if (rep[i] != ord[i]) {
			ret = pp_red(t, c, ord[i], rep[i], 1);
			if (!ret)
				ret = pp_bc(t, c, rep[i], ord[i], 1);
		}
	free(ord);
	if (ret)
		snprintf(err, errlen, "%s: cannot route the plan", p->scheme);
	else
		snprintf(p->note, sizeof(p->note), "ring of %d members, %d of "
			 "them INA switches", nm, nsw);
	return ret;
}

/* The 2D form; -EAGAIN when the racks are not all of one size >= 2. */
static int har_2d(struct topo *t, struct pp_plan *p)
{
	int *ord = malloc((t->nhosts + 1) * sizeof(int)), *mem = NULL;
	int n = pp_rack_order(t, ord), H = 0, R, i, j, r, ret = 0;

	if (n < 0) {
		free(ord);
		return n;
	}
	/* racks are contiguous in ord: all of one size, every worker in one */
	for (i = 0; i < n; i++) {
		if (t->node[ord[i]].tor < 0) {
			ret = -EAGAIN;
			break;
		}
		if (i > 0 && t->node[ord[i]].tor != t->node[ord[i - 1]].tor) {
			if (!H)
				H = i;
			else if (i % H)
				ret = -EAGAIN;
		}
	}
	if (!H)
		H = n;
	if (ret || H < 2 || n % H) {
		free(ord);
		return -EAGAIN;
	}
	R = n / H;
	mem = malloc(R * sizeof(int));
	if (!mem) {
		free(ord);
		return -ENOMEM;
	}
	for (j = 0; j < H && !ret; j++) {
		struct pp_class *c = pp_class_new(p, PP_RING, 1.0 / H);

		if (!c) {
			ret = -ENOMEM;
			break;
		}
		for (r = 0; r < R; r++)
			mem[r] = ord[r * H + j];
		ret = pp_ring(t, c, mem, R);
		/* chain j+1 -> j+2 -> ... -> j inside every rack, and the
		 * result back the other way */
		for (r = 0; r < R && !ret; r++)
			for (i = 1; i < H && !ret; i++) {
				int a = ord[r * H + (j + i) % H];
				int b = ord[r * H + (j + i + 1) % H];

				ret = pp_red(t, c, a, b, 1);
				if (!ret)
					ret = pp_bc(t, c, b, a, 1);
			}
	}
	free(mem);
	free(ord);
	if (!ret)
		snprintf(p->note, sizeof(p->note), "2D: %d racks x %d, %d "
			 "shards", R, H, H);
	return ret;
}

int plan_har(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
	     char *err, size_t errlen)
{
	int ret = har_2d(t, p);

	if (ret != -EAGAIN) {
		if (ret)
			snprintf(err, errlen, "%s: cannot route the plan",
				 p->scheme);
		return ret;
	}
	pp_free(p);
	return pp_rack_ring(t, p, 0, err, errlen);
}
