// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Ring allreduce: every worker a ring member, racks kept together so that
 * a ring crosses each rack's uplink once each way. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/plan/pplan.h"

int plan_ring(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
	      char *err, size_t errlen)
{
	int *mem = malloc(t->nhosts * sizeof(int)), n, ret = -ENOMEM;
	struct pp_class *c;

	if (!mem)
		return ret;
	n = pp_rack_order(t, mem);
	c = n > 0 ? pp_class_new(p, PP_RING, 1) : NULL;
	if (c)
		ret = pp_ring(t, c, mem, n);
	free(mem);
	if (ret)
		snprintf(err, errlen, "ring: cannot route the ring");
	else
		snprintf(p->note, sizeof(p->note), "%d members", n);
	return ret;
}
