// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Cluster spec: parse, check, write. Format in user/plan/spec.h and
 * rinxctl(8). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/log.h"
#include "user/plan/spec.h"
#include "user/plan/plan.h"

void rinx_spec_init(struct rinx_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->port = RINX_DEFAULT_PORT;
	s->window = RINX_DEFAULT_WINDOW;
	s->jobs = RINX_DEFAULT_JOBS;
	s->mode = RINX_XDP_NATIVE;
	snprintf(s->pin, sizeof(s->pin), "/run/rinx");
}

unsigned long long rinx_spec_mem(const struct rinx_spec *s)
{
	return (unsigned long long)s->jobs * s->window * RINX_NODE_BLOCK_BYTES;
}

int rinx_parse_mac(const char *str, __u8 mac[6])
{
	unsigned int b[6];
	char tail;
	int i;

	if (sscanf(str, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &tail) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -EINVAL;
		mac[i] = b[i];
	}
	return 0;
}

static int parse_int(const char *v, long lo, long hi, long *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 0);
	if (errno || end == v || *end || x < lo || x > hi)
		return -EINVAL;
	*out = x;
	return 0;
}

static int copy_name(char *dst, size_t len, const char *v)
{
	size_t i, n = strlen(v);

	if (n == 0 || n >= len)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr("-_.", v[i]))
			return -EINVAL;
	memcpy(dst, v, n + 1);
	return 0;
}

#define BAD(...) rinx_seterr(err, errlen, -EINVAL, __VA_ARGS__)

/* 1 Tbit/s: above any link a spec describes */
#define RINX_SPEC_RATE_MAX	1000000

/* The parsers of one key=value of a record: 0, -EINVAL with the reason in
 * err, or 1 when the record has no such key. */
static int host_key(struct rinx_spec_host *h, const char *k, char *v,
		    int lineno, char *err, size_t errlen)
{
	struct in_addr a;
	long x;

	if (!strcmp(k, "name")) {
		if (copy_name(h->name, sizeof(h->name), v))
			return BAD("line %d: bad host name", lineno);
	} else if (!strcmp(k, "rank")) {
		if (parse_int(v, 0, RINX_MAX_NODES - 1, &x))
			return BAD("line %d: rank must be 0..%d", lineno,
				   RINX_MAX_NODES - 1);
		h->rank = x;
	} else if (!strcmp(k, "rack")) {
		if (parse_int(v, 0, RINX_MAX_NODES - 1, &x))
			return BAD("line %d: bad rack", lineno);
		h->rack = x;
	} else if (!strcmp(k, "ifname")) {
		if (copy_name(h->ifname, sizeof(h->ifname), v))
			return BAD("line %d: bad ifname", lineno);
	} else if (!strcmp(k, "mac")) {
		if (rinx_parse_mac(v, h->mac))
			return BAD("line %d: bad mac '%s'", lineno, v);
	} else if (!strcmp(k, "ip")) {
		if (inet_pton(AF_INET, v, &a) != 1)
			return BAD("line %d: bad ip '%s'", lineno, v);
		h->ip = a.s_addr;
	} else if (!strcmp(k, "netns")) {
		if (copy_name(h->netns, sizeof(h->netns), v))
			return BAD("line %d: bad netns", lineno);
	} else if (!strcmp(k, "link")) {
		if (parse_int(v, 0, RINX_SPEC_RATE_MAX, &x))
			return BAD("line %d: link must be 0..%d Mbit/s",
				   lineno, RINX_SPEC_RATE_MAX);
		h->link_mbit = x;
	} else {
		return 1;
	}
	return 0;
}

static int rack_key(struct rinx_spec_rack *r, const char *k, char *v,
		    int lineno, char *err, size_t errlen)
{
	struct in_addr a;
	long x;

	if (!strcmp(k, "id")) {
		if (parse_int(v, 0, RINX_MAX_NODES - 1, &x))
			return BAD("line %d: bad rack id", lineno);
		r->id = x;
	} else if (!strcmp(k, "name")) {
		if (copy_name(r->name, sizeof(r->name), v))
			return BAD("line %d: bad rack name", lineno);
	} else if (!strcmp(k, "mac")) {
		if (rinx_parse_mac(v, r->mac))
			return BAD("line %d: bad mac '%s'", lineno, v);
	} else if (!strcmp(k, "ip")) {
		if (inet_pton(AF_INET, v, &a) != 1)
			return BAD("line %d: bad ip '%s'", lineno, v);
		r->ip = a.s_addr;
	} else if (!strcmp(k, "netns")) {
		if (copy_name(r->netns, sizeof(r->netns), v))
			return BAD("line %d: bad netns", lineno);
	} else if (!strcmp(k, "uplink")) {
		if (parse_int(v, 0, RINX_SPEC_RATE_MAX, &x))
			return BAD("line %d: uplink must be 0..%d Mbit/s",
				   lineno, RINX_SPEC_RATE_MAX);
		r->uplink_mbit = x;
	} else if (!strcmp(k, "pool")) {
		if (parse_int(v, 0, RINX_POOL_MAX, &x))
			return BAD("line %d: pool must be 0 (a slot per "
				   "block) or 1..%d slots", lineno,
				   RINX_POOL_MAX);
		r->pool = x ? (__u32)x : RINX_POOL_PER_BLOCK;
	} else if (!strcmp(k, "ina")) {
		if (!strcmp(v, "none"))
			r->ina = RINX_INA_NONE;
		else if (!strcmp(v, "switch"))
			r->ina = RINX_INA_SWITCH;
		else if (!strcmp(v, "agent"))
			r->ina = RINX_INA_AGENT;
		else
			return BAD("line %d: ina must be none, switch or agent",
				   lineno);
	} else {
		return 1;
	}
	return 0;
}

/* The cluster's keys whose values are numbers. */
static int cluster_num_key(struct rinx_spec *s, const char *k, char *v,
			   int lineno, char *err, size_t errlen)
{
	char *end;
	double d;
	long x;

	if (!strcmp(k, "port")) {
		if (parse_int(v, 1, 65535, &x))
			return BAD("line %d: bad port", lineno);
		s->port = x;
	} else if (!strcmp(k, "window")) {
		if (parse_int(v, 1, 1 << 20, &x))
			return BAD("line %d: window must be 1..%d blocks",
				   lineno, 1 << 20);
		s->window = x;
	} else if (!strcmp(k, "jobs")) {
		if (parse_int(v, 1, RINX_MAX_JOBS, &x))
			return BAD("line %d: jobs must be 1..%d job slots",
				   lineno, RINX_MAX_JOBS);
		s->jobs = x;
	} else if (!strcmp(k, "scale")) {
		errno = 0;
		d = strtod(v, &end);
		if (errno || end == v || *end || !(d > 0) || d > 1e6)
			return BAD("line %d: scale must be Mbit/s per "
				   "Gbit/s, above 0 and at most 1e6", lineno);
		s->scale_mbit = d;
	} else if (!strcmp(k, "mtu")) {
		if (parse_int(v, RINX_IP_MTU(RINX_BLOCK_VALUES_MIN), 65535, &x))
			return BAD("line %d: mtu must be %d..65535 (the "
				   "IP MTU of the job's network; rinx "
				   "frames need at least %d)", lineno,
				   RINX_IP_MTU(RINX_BLOCK_VALUES_MIN),
				   RINX_IP_MTU(RINX_BLOCK_VALUES_MIN));
		s->mtu = x;
	} else {
		return 1;
	}
	return 0;
}

static int cluster_key(struct rinx_spec *s, const char *k, char *v,
		       int lineno, char *err, size_t errlen)
{
	char why[160];

	if (!strcmp(k, "pin")) {
		if (strlen(v) >= sizeof(s->pin) || v[0] != '/')
			return BAD("line %d: pin must be an absolute path",
				   lineno);
		snprintf(s->pin, sizeof(s->pin), "%s", v);
	} else if (!strcmp(k, "plan")) {
		if (rinx_plan_parse(v, &s->plan, &s->plan_nps, why,
				    sizeof(why)))
			return BAD("line %d: %s", lineno, why);
	} else if (!strcmp(k, "topo")) {
		if (strlen(v) >= sizeof(s->topo))
			return BAD("line %d: topo path too long", lineno);
		snprintf(s->topo, sizeof(s->topo), "%s", v);
	} else if (!strcmp(k, "mode")) {
		if (!strcmp(v, "native"))
			s->mode = RINX_XDP_NATIVE;
		else if (!strcmp(v, "generic"))
			s->mode = RINX_XDP_GENERIC;
		else
			return BAD("line %d: mode must be native or generic",
				   lineno);
	} else {
		return cluster_num_key(s, k, v, lineno, err, errlen);
	}
	return 0;
}

static int parse_line(struct rinx_spec *s, char *line, int lineno, char *err,
		      size_t errlen)
{
	char *save = NULL, *tok, *kind, *v;
	struct rinx_spec_host *h = NULL;
	struct rinx_spec_rack *r = NULL;
	int ret;

	kind = strtok_r(line, " \t\r\n", &save);
	if (!kind)
		return 0;
	if (!strcmp(kind, "host")) {
		if (s->nhosts >= RINX_MAX_NODES)
			return BAD("line %d: more than %d hosts", lineno,
				   RINX_MAX_NODES);
		h = &s->hosts[s->nhosts++];
		memset(h, 0, sizeof(*h));
		h->rank = -1;
		h->rack = 0;
		snprintf(h->ifname, sizeof(h->ifname), "eth0");
	} else if (!strcmp(kind, "rack")) {
		if (s->nracks >= RINX_MAX_NODES)
			return BAD("line %d: too many racks", lineno);
		r = &s->racks[s->nracks++];
		memset(r, 0, sizeof(*r));
		r->id = -1;
	} else if (strcmp(kind, "cluster")) {
		return BAD("line %d: unknown record '%s' (cluster, rack, host)",
			   lineno, kind);
	}
	while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
		v = strchr(tok, '=');
		if (!v)
			return BAD("line %d: '%s' is not key=value", lineno,
				   tok);
		*v++ = 0;
		ret = h ? host_key(h, tok, v, lineno, err, errlen) :
		      r ? rack_key(r, tok, v, lineno, err, errlen) :
			  cluster_key(s, tok, v, lineno, err, errlen);
		if (ret < 0)
			return ret;
		if (ret)
			return BAD("line %d: unknown key '%s' for %s", lineno,
				   tok, kind);
	}
	if (h && (!h->name[0] || h->rank < 0 || !h->ip))
		return BAD("line %d: host needs name=, rank=, mac= and ip=",
			   lineno);
	if (r && r->id < 0)
		return BAD("line %d: rack needs id=", lineno);
	if (r && r->ina == RINX_INA_SWITCH && (!r->name[0] || !r->ip))
		return BAD("line %d: an ina=switch rack needs name=, mac= and "
			   "ip= of its aggregator", lineno);
	return 0;
}

int rinx_spec_check(const struct rinx_spec *s, char *err, size_t errlen)
{
	static const __u8 zero[6];
	int i, j, found;

	if (s->nhosts < 1)
		return BAD("spec has no hosts");
	for (i = 0; i < s->nhosts; i++) {
		const struct rinx_spec_host *a = &s->hosts[i];

		if (a->rank >= s->nhosts)
			return BAD("host %s: rank %d but only %d hosts", a->name,
				   a->rank, s->nhosts);
		if (!memcmp(a->mac, zero, 6))
			return BAD("host %s: mac missing", a->name);
		for (j = 0; j < i; j++) {
			const struct rinx_spec_host *b = &s->hosts[j];

			if (a->rank == b->rank)
				return BAD("hosts %s and %s share rank %d",
					   b->name, a->name, a->rank);
			if (!strcmp(a->name, b->name))
				return BAD("host name %s used twice", a->name);
			if (!memcmp(a->mac, b->mac, 6))
				return BAD("hosts %s and %s share a mac",
					   b->name, a->name);
			if (a->ip == b->ip)
				return BAD("hosts %s and %s share an ip",
					   b->name, a->name);
		}
		found = s->nracks == 0 && a->rack == 0;
		for (j = 0; j < s->nracks; j++)
			found |= s->racks[j].id == a->rack;
		if (!found)
			return BAD("host %s: rack %d is not declared", a->name,
				   a->rack);
		if (a->link_mbit > RINX_SPEC_RATE_MAX)
			return BAD("host %s: link %u Mbit/s above %d", a->name,
				   a->link_mbit, RINX_SPEC_RATE_MAX);
	}
	for (i = 0; i < s->nracks; i++) {
		int workers = 0;

		for (j = 0; j < i; j++)
			if (s->racks[i].id == s->racks[j].id)
				return BAD("rack %d declared twice",
					   s->racks[i].id);
		for (j = 0; j < s->nhosts; j++)
			workers += s->hosts[j].rack == s->racks[i].id;
		/* a topology's PS or a spine may aggregate without hosts */
		if (s->racks[i].ina != RINX_INA_NONE && !workers &&
		    (!s->topo[0] || s->racks[i].ina != RINX_INA_SWITCH))
			return BAD("rack %d: an INA rack without hosts",
				   s->racks[i].id);
		if (s->racks[i].uplink_mbit > RINX_SPEC_RATE_MAX)
			return BAD("rack %d: uplink %u Mbit/s above %d",
				   s->racks[i].id, s->racks[i].uplink_mbit,
				   RINX_SPEC_RATE_MAX);
	}
	return 0;
}

int rinx_spec_load(const char *path, struct rinx_spec *s, char *err,
		   size_t errlen)
{
	char line[1024];
	int lineno = 0, ret = 0;
	FILE *f;

	rinx_spec_init(s);
	f = fopen(path, "r");
	if (!f)
		return rinx_seterr(err, errlen, -errno, "cannot open spec %s: %s",
				   path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#');

		lineno++;
		if (hash)
			*hash = 0;
		ret = parse_line(s, line, lineno, err, errlen);
		if (ret)
			break;
	}
	fclose(f);
	if (!ret)
		ret = rinx_spec_check(s, err, errlen);
	return ret;
}

static const char *ina_name(int ina)
{
	return ina == RINX_INA_SWITCH ? "switch" :
	       ina == RINX_INA_AGENT ? "agent" : "none";
}

int rinx_spec_save(const char *path, const struct rinx_spec *s)
{
	char ip[INET_ADDRSTRLEN], pl[32];
	FILE *f = fopen(path, "w");
	int i;

	if (!f)
		return -errno;
	fprintf(f, "# rinx cluster spec\n");
	fprintf(f, "cluster port=%u window=%u jobs=%u pin=%s mode=%s plan=%s",
		s->port, s->window, s->jobs, s->pin,
		s->mode == RINX_XDP_GENERIC ? "generic" : "native",
		rinx_plan_name(s->plan, s->plan_nps, pl, sizeof(pl)));
	if (s->topo[0])
		fprintf(f, " topo=%s", s->topo);
	if (s->scale_mbit > 0)
		fprintf(f, " scale=%g", s->scale_mbit);
	if (s->mtu > 0)
		fprintf(f, " mtu=%d", s->mtu);
	fprintf(f, "\n");
	for (i = 0; i < s->nracks; i++) {
		const struct rinx_spec_rack *r = &s->racks[i];

		fprintf(f, "rack id=%d ina=%s", r->id, ina_name(r->ina));
		if (r->name[0])
			fprintf(f, " name=%s", r->name);
		if (r->ip) {
			inet_ntop(AF_INET, &r->ip, ip, sizeof(ip));
			fprintf(f, " mac=%02x:%02x:%02x:%02x:%02x:%02x ip=%s",
				r->mac[0], r->mac[1], r->mac[2], r->mac[3],
				r->mac[4], r->mac[5], ip);
		}
		if (r->netns[0])
			fprintf(f, " netns=%s", r->netns);
		if (r->uplink_mbit)
			fprintf(f, " uplink=%u", r->uplink_mbit);
		if (r->pool)
			fprintf(f, " pool=%u", r->pool == RINX_POOL_PER_BLOCK ?
				0 : r->pool);
		fprintf(f, "\n");
	}
	for (i = 0; i < s->nhosts; i++) {
		const struct rinx_spec_host *h = &s->hosts[i];
		const __u8 *m = h->mac;

		inet_ntop(AF_INET, &h->ip, ip, sizeof(ip));
		fprintf(f, "host name=%s rank=%d rack=%d ifname=%s "
			"mac=%02x:%02x:%02x:%02x:%02x:%02x ip=%s",
			h->name, h->rank, h->rack, h->ifname, m[0], m[1], m[2],
			m[3], m[4], m[5], ip);
		if (h->netns[0])
			fprintf(f, " netns=%s", h->netns);
		if (h->link_mbit)
			fprintf(f, " link=%u", h->link_mbit);
		fprintf(f, "\n");
	}
	if (fclose(f))
		return -errno;
	return 0;
}

__u32 rinx_spec_min_link(const struct rinx_spec *s)
{
	__u32 min = 0, r;
	int i;

	for (i = 0; i < s->nhosts + s->nracks; i++) {
		r = i < s->nhosts ? s->hosts[i].link_mbit :
				    s->racks[i - s->nhosts].uplink_mbit;
		if (r && (!min || r < min))
			min = r;
	}
	return min;
}

const struct rinx_spec_host *rinx_spec_host(const struct rinx_spec *s,
					    const char *name)
{
	int i;

	for (i = 0; i < s->nhosts; i++)
		if (!strcmp(s->hosts[i].name, name))
			return &s->hosts[i];
	return NULL;
}

const struct rinx_spec_host *rinx_spec_rank(const struct rinx_spec *s,
					    int rank)
{
	int i;

	for (i = 0; i < s->nhosts; i++)
		if (s->hosts[i].rank == rank)
			return &s->hosts[i];
	return NULL;
}

int rinx_spec_rack_index(const struct rinx_spec *s, int rack_id)
{
	int i;

	for (i = 0; i < s->nracks; i++)
		if (s->racks[i].id == rack_id)
			return i;
	return -1;
}
