// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* SwitchML: one INA switch aggregates every worker's whole gradient and
 * multicasts the result back down a tree. Of the INA switches, the one giving the
 * highest simulated rate is taken (SwitchML's own setting is a single
 * rack, where that is the ToR): all of them where that is cheap, else 32
 * spread evenly over them (each try is a simulation of n transfers). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/plan/pplan.h"

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
	int s, bs = -1, ret, nc = 0, step, k = 0;

	for (s = 0; s < t->nnodes; s++)
		nc += t->node[s].ina && t->node[s].cap > 0;
	step = (double)nc * t->nhosts <= 1e6 ? 1 : (nc + 31) / 32;
	for (s = 0; s < t->nnodes; s++) {
		struct pp_plan q;
		double x;

		if (!t->node[s].ina || !(t->node[s].cap > 0) || k++ % step)
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

/*
 * SwitchML per rack. SwitchML aggregates in a rack's ToR; across racks
 * we give it the hierarchy its paper leaves to future work: every rack
 * whose ToR can aggregate sends its workers there, and one root switch
 * sums the ToRs' partial sums (and the workers of racks without an INA
 * ToR) and multicasts the result. The root is the INA switch giving the
 * highest simulated rate, among all of them where that is cheap, else
 * among 32 spread evenly over them.
 */
static int build_rack(struct topo *t, int root, const char *has, struct pp_plan *p)
{
	struct pp_class *c = pp_class_new(p, PP_TREE, 1);
	int i, ret = 0;

	if (!c)
		return -ENOMEM;
	c->root = root;
	for (i = 0; i < t->nhosts && !ret; i++) {
		int w = t->hosts[i], q = t->node[w].tor;

		if (q >= 0 && has[q] && q != root)
			ret = pp_red(t, c, w, q, 1);
		else
			ret = pp_red(t, c, w, root, 1);
	}
	for (i = 0; i < t->nnodes && !ret; i++)
		if (has[i] && i != root)
			ret = pp_red(t, c, i, root, 1);
	return ret ? ret : pp_bc_tree(t, c, root, NULL);
}

int plan_switchml_rack(struct topo *t, const struct pp_opts *o,
		       struct pp_plan *p, char *err, size_t errlen)
{
	char *has = calloc(t->nnodes + 1, 1);
	int *cand = malloc((t->nnodes + 1) * sizeof(int));
	int nc = 0, nr = 0, i, bs = -1, step, ret = 0;
	double best = 0;

	if (!has || !cand) {
		free(has);
		free(cand);
		return -ENOMEM;
	}
	for (i = 0; i < t->nhosts; i++) {
		int q = t->node[t->hosts[i]].tor;

		if (q >= 0 && t->node[q].ina && t->node[q].cap > 0 && !has[q]) {
			has[q] = 1;
			nr++;
		}
	}
	for (i = 0; i < t->nnodes; i++)
		if (t->node[i].ina && t->node[i].cap > 0)
			cand[nc++] = i;
	step = (double)nc * (t->nhosts + nr) <= 1e6 ? 1 : (nc + 31) / 32;
	for (i = 0; i < nc && !ret; i += step) {
		struct pp_plan q;
		double x;

		pp_init(&q, p->scheme);
		ret = build_rack(t, cand[i], has, &q);
		x = ret ? 0 : pp_sim_rate(t, &q);
		pp_free(&q);
		if (x > best) {
			best = x;
			bs = cand[i];
		}
	}
	if (!ret && bs < 0) {
		snprintf(err, errlen, "%s: the topology has no INA switch",
			 p->scheme);
		ret = -EINVAL;
	}
	if (!ret) {
		snprintf(p->note, sizeof(p->note), "%d INA racks sum their "
			 "workers, %s sums the racks (best of %d roots)", nr,
			 t->node[bs].name, (nc + step - 1) / step);
		ret = build_rack(t, bs, has, p);
	}
	free(has);
	free(cand);
	return ret;
}
