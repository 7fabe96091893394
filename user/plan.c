// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Plan compilers. The ring is the first; every plan fills the same tables. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "user/ctl.h"
#include "user/plan.h"

int rinx_plan_ring(struct rinx_plan *p, int n, int self)
{
	int k, j, node;

	if (n < 1 || n > RINX_MAX_NODES || self < 0 || self >= n)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->nclasses = n;
	p->nnodes = n;
	for (k = 0; k < n; k++) {
		p->origin[k] = k;
		p->first_to[k] = (k + 1) % n;
		if (n == 1)
			continue;
		/* reduce: hop j (1..n-1) is node k+j, arriving with step j-1 */
		for (j = 1; j < n; j++) {
			struct rinx_hop *h;

			node = (k + j) % n;
			if (node != self)
				continue;
			h = &p->hops[k][RINX_T_REDUCE - 1];
			h->action = j == n - 1 ? RINX_A_ADD_FINISH :
						 RINX_A_ADD_FWD;
			h->step = j - 1;
			h->from = (k + j - 1) % n;
			h->to = (k + j + 1) % n;
		}
		/* gather: node k+j (0..n-2) gets step j from node k+j-1 */
		for (j = 0; j <= n - 2; j++) {
			struct rinx_hop *h;

			node = (k + j) % n;
			if (node != self)
				continue;
			h = &p->hops[k][RINX_T_GATHER - 1];
			h->action = j == n - 2 ? RINX_A_STORE_END :
						 RINX_A_STORE_FWD;
			h->step = j;
			h->from = (k + j - 1 + n) % n;
			h->to = (k + j + 1) % n;
		}
	}
	return 0;
}

static const char *action_name(int a)
{
	switch (a) {
	case RINX_A_ADD_FWD: return "add+fwd";
	case RINX_A_ADD_FINISH: return "add+finish";
	case RINX_A_STORE_FWD: return "store+fwd";
	case RINX_A_STORE_END: return "store+end";
	default: return "-";
	}
}

void rinx_plan_ring_print(FILE *f, int n)
{
	struct rinx_plan p;
	int k, self, t;

	fprintf(f, "plan: ring, %d nodes, %d classes (class k = blocks b with b %% %d == k)\n",
		n, n, n);
	for (k = 0; k < n && n > 1; k++) {
		fprintf(f, "class %d: origin node %d -> node %d\n", k, k,
			(k + 1) % n);
		for (t = RINX_T_REDUCE; t <= RINX_T_GATHER; t++) {
			for (self = 0; self < n; self++) {
				struct rinx_hop *h;

				rinx_plan_ring(&p, n, self);
				h = &p.hops[k][t - 1];
				if (h->action == RINX_A_NONE)
					continue;
				fprintf(f, "  %-6s node %-2d step %-2d from %-2d %-10s",
					t == RINX_T_REDUCE ? "reduce" : "gather",
					self, h->step, h->from,
					action_name(h->action));
				if (h->action != RINX_A_STORE_END)
					fprintf(f, " -> %d", h->to);
				fprintf(f, "\n");
			}
		}
	}
}
