// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Hierarchical allreduce (H-AR): in every rack the lowest worker (the
 * leader) sums its rack, the leaders run a ring, each leader hands the
 * result back into its rack. Workers without a switch are racks of one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/pplan.h"

/* Shared with Rina: a ring whose members are rack representatives. With
 * ina set, a rack whose ToR aggregates is represented by the ToR. */
int pp_rack_ring(struct topo *t, struct pp_plan *p, int ina, char *err,
		 size_t errlen);

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

int plan_har(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
	     char *err, size_t errlen)
{
	return pp_rack_ring(t, p, 0, err, errlen);
}
