// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* SwitchML: one INA switch aggregates every worker's whole gradient and
 * multicasts the result back down a tree. Of the INA switches, the one giving the
 * highest simulated rate is taken (SwitchML's own setting is a single
 * rack, where that is the ToR). */
#include <errno.h>
#include <stdio.h>
#include "user/pplan.h"

static int build(struct topo *t, int s, struct pp_plan *p)
{
	struct pp_class *c = pp_class_new(p, PP_TREE, 1);
	int i, ret;

	if (!c)
		return -ENOMEM;
	c->root = s;
	for (i = 0; i < t->nhosts; i++)
		if ((ret = pp_red(t, c, t->hosts[i], s, 1)))
			return ret;
	return pp_bc_tree(t, c, s, NULL);
}

int plan_switchml(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
		  char *err, size_t errlen)
{
	double best = 0;
	int s, bs = -1, ret;

	for (s = 0; s < t->nnodes; s++) {
		struct pp_plan q;
		double x;

		if (!t->node[s].ina || !(t->node[s].cap > 0))
			continue;
		pp_init(&q, p->scheme);
		ret = build(t, s, &q);
		x = ret ? 0 : pp_sim_rate(t, &q);
		pp_free(&q);
		if (ret)
			return ret;
		if (x > best) {
			best = x;
			bs = s;
		}
	}
	if (bs < 0) {
		snprintf(err, errlen, "%s: the topology has no INA switch",
			 p->scheme);
		return -EINVAL;
	}
	snprintf(p->note, sizeof(p->note), "%s aggregates all %d workers",
		 t->node[bs].name, t->nhosts);
	return build(t, bs, p);
}
