// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Rina: a rack whose ToR can aggregate joins the ring as one member (the
 * ToR sums its rack and the partial sum coming round, and multicasts the
 * result into the rack); workers of other racks are ring members of their
 * own. */
#include "user/plan/pplan.h"

int plan_rina(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
	      char *err, size_t errlen)
{
	return pp_rack_ring(t, p, 1, err, errlen);
}
