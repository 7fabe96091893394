// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Binary tree and double binary tree over the workers in rack order:
 * reduce toward the root, broadcast back down the same tree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/plan/pplan.h"

static int one_tree(struct topo *t, struct pp_plan *p, const int *ord, int n,
		    double share)
{
	struct pp_class *c = pp_class_new(p, PP_TREE, share);
	int i, ret;

	if (!c)
		return -ENOMEM;
	c->root = ord[0];
	for (i = 1; i < n; i++) {
		ret = pp_red(t, c, ord[i], ord[(i - 1) / 2], 1);
		if (ret)
			return ret;
	}
	return pp_mirror_bc(c);
}

static int trees(struct topo *t, struct pp_plan *p, int two, char *err,
		 size_t errlen)
{
	int *ord = malloc(2 * t->nhosts * sizeof(int)), *rev, n, i, ret;

	if (!ord)
		return -ENOMEM;
	rev = ord + t->nhosts;
	n = pp_rack_order(t, ord);
	/* the second tree takes the order backwards: the first tree's
	 * leaves (the back half) become its inner nodes */
	for (i = 0; i < n; i++)
		rev[i] = ord[n - 1 - i];
	ret = one_tree(t, p, ord, n, two ? 0.5 : 1);
	if (!ret && two)
		ret = one_tree(t, p, rev, n, 0.5);
	free(ord);
	if (ret)
		snprintf(err, errlen, "%s: cannot route the tree", p->scheme);
	else
		snprintf(p->note, sizeof(p->note), "%d tree%s of %d workers",
			 two ? 2 : 1, two ? "s" : "", n);
	return ret;
}

int plan_tree(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
	      char *err, size_t errlen)
{
	return trees(t, p, 0, err, errlen);
}

int plan_dbtree(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
		char *err, size_t errlen)
{
	return trees(t, p, 1, err, errlen);
}
