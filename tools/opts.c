// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The one option parser of rinxctl and the help it prints (tools/opts.h). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/opts.h"

#define OPTS_MAX	64
#define OPTS_MAX_ARGS	8

/* A table with its includes flattened: each entry and its config's base. */
struct flat {
	const struct opt *o[OPTS_MAX];
	size_t base[OPTS_MAX];
	int n;
};

static int flat_has(const struct flat *fl, const char *name)
{
	int i;

	for (i = 0; i < fl->n; i++)
		if (!strcmp(fl->o[i]->name, name))
			return 1;
	return 0;
}

static void flatten(struct flat *fl, const struct opt *tab, size_t base)
{
	const struct opt *o;

	for (o = tab; o->kind != OPT_END; o++) {
		if (o->kind == OPT_INCLUDE) {
			flatten(fl, o->sub, base + o->off);
			continue;
		}
		if (o->kind == OPT_TEXT || flat_has(fl, o->name))
			continue;
		/* a table that outgrows this is a build-time mistake that
		 * every run of the command shows at once */
		if (fl->n >= OPTS_MAX) {
			fprintf(stderr, "rinxctl: more than %d options\n",
				OPTS_MAX);
			abort();
		}
		fl->o[fl->n] = o;
		fl->base[fl->n++] = base;
	}
}

static void store_int(void *p, size_t size, long long v)
{
	switch (size) {
	case 1: *(int8_t *)p = v; break;
	case 2: *(int16_t *)p = v; break;
	case 4: *(int32_t *)p = v; break;
	default: *(int64_t *)p = v; break;
	}
}

/* The allowed values of o, for its error. */
static void range_of(const struct opt *o, char *buf, size_t len)
{
	const struct opt_choice *ch;
	size_t n = 0;

	if (o->range) {
		snprintf(buf, len, "%s", o->range);
	} else if (o->kind == OPT_INT) {
		snprintf(buf, len, "%lld..%lld", o->min, o->max);
	} else if (o->kind == OPT_DOUBLE) {
		snprintf(buf, len, "%g..%g", o->dmin, o->dmax);
	} else if (o->kind == OPT_ENUM) {
		buf[0] = 0;
		for (ch = o->choices; ch->name && n < len; ch++)
			if (!ch->alias)
				n += snprintf(buf + n, len - n, "%s%s",
					      n ? "|" : "", ch->name);
	} else {
		snprintf(buf, len, "%s", o->metavar ? o->metavar : "given");
	}
}

/* arg into the field of o at base cfg; 0, or -1 after the error. */
static int set_one(const char *cmd, const struct opt *o, void *cfg,
		   const char *arg, int given)
{
	char *end, why[200] = "", range[200];
	void *p = (char *)cfg + o->off;
	const struct opt_choice *ch;
	long long v;
	double d;

	switch (o->kind) {
	case OPT_FLAG:
	case OPT_CLEAR:
		*(int *)p = o->kind == OPT_FLAG;
		break;
	case OPT_INT:
		errno = 0;
		v = strtoll(arg, &end, 0);
		if (errno || end == arg || *end || v < o->min || v > o->max)
			goto bad;
		store_int(p, o->size, v);
		break;
	case OPT_DOUBLE:
		errno = 0;
		d = strtod(arg, &end);
		if (errno || end == arg || *end || !(d >= o->dmin && d <= o->dmax))
			goto bad;
		*(double *)p = d;
		break;
	case OPT_STR:
		*(const char **)p = arg;
		break;
	case OPT_ENUM:
		for (ch = o->choices; ch->name; ch++)
			if (!strcmp(ch->name, arg))
				break;
		if (!ch->name)
			goto bad;
		*(int *)p = ch->val;
		break;
	case OPT_FN:
		if (o->parse(arg, p, why, sizeof(why)))
			goto bad;
		break;
	case OPT_REFUSE:
		fprintf(stderr, "rinxctl %s: --%s %s\n", cmd, o->name, o->help ?
			o->help : "is not an option here");
		return -1;
	default:
		break;
	}
	if (o->bit && given)
		*(unsigned int *)((char *)cfg + o->bits_off) |= o->bit;
	return 0;
bad:
	if (why[0]) {
		fprintf(stderr, "rinxctl %s: --%s: %s\n", cmd, o->name, why);
	} else {
		range_of(o, range, sizeof(range));
		fprintf(stderr, "rinxctl %s: --%s must be %s\n", cmd, o->name,
			range);
	}
	return -1;
}

static void defaults(const struct flat *fl, void *cfg)
{
	int i;

	for (i = 0; i < fl->n; i++) {
		const struct opt *o = fl->o[i];

		/* a default that does not parse is the table's mistake: say
		 * so on every run rather than run with a field unset */
		if (o->def && set_one("(default)", o, (char *)cfg + fl->base[i],
				      o->def, 0))
			abort();
	}
}

void opts_defaults(const struct opt *tab, void *cfg)
{
	struct flat fl = { .n = 0 };

	flatten(&fl, tab, 0);
	defaults(&fl, cfg);
}

int opts_parse(const struct opts_cmd *c, int argc, char **argv, void *cfg,
	       int *argi)
{
	struct option lo[OPTS_MAX + 2];
	char shorts[3 * OPTS_MAX + 4] = ":h";
	struct flat fl = { .n = 0 };
	char *pos[OPTS_MAX_ARGS];
	int i, k, ch, idx, ns = 2, npos = 0;

	flatten(&fl, c->tab, 0);
	defaults(&fl, cfg);
	for (i = 0; i < fl.n; i++) {
		const struct opt *o = fl.o[i];
		/* a refused option takes an argument when it names one */
		int arg = o->kind == OPT_REFUSE ? !!o->metavar :
			  o->kind != OPT_FLAG && o->kind != OPT_CLEAR;

		lo[i] = (struct option){ o->name, arg ? required_argument :
					 no_argument, NULL, 256 + i };
		if (o->short_opt) {
			shorts[ns++] = o->short_opt;
			if (arg)
				shorts[ns++] = ':';
		}
	}
	shorts[ns] = 0;
	lo[i++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[i] = (struct option){ NULL, 0, NULL, 0 };
	/* optind 0 resets GNU getopt completely, whatever parsed before;
	 * the errors are ours, with the option's name and range */
	optind = 0;
	opterr = 0;
	/* '-' first: positional arguments come back as 1, in place */
	memmove(shorts + 1, shorts, strlen(shorts) + 1);
	shorts[0] = '-';
	while ((ch = getopt_long(argc, argv, shorts, lo, &idx)) != -1) {
		const struct opt *o = NULL;

		if (ch == 'h') {
			opts_help(stdout, c);
			return OPTS_HELP;
		}
		if (ch == 1) {
			if (npos >= c->max_args || npos >= OPTS_MAX_ARGS ||
			    !argi) {
				fprintf(stderr, "rinxctl %s: unexpected "
					"argument %s\n", c->name, optarg);
				return OPTS_USAGE;
			}
			pos[npos++] = optarg;
			continue;
		}
		if (ch == ':' || ch == '?') {
			const char *bad = argv[optind - 1];

			if (ch == ':')
				fprintf(stderr, "rinxctl %s: %s needs an "
					"argument\n", c->name, bad);
			else
				fprintf(stderr, "rinxctl %s: unknown option "
					"%s (rinxctl %s --help lists them)\n",
					c->name, bad, c->name);
			return OPTS_USAGE;
		}
		if (ch >= 256) {
			o = fl.o[ch - 256];
			k = ch - 256;
		} else {
			for (k = 0; k < fl.n; k++)
				if (fl.o[k]->short_opt == ch)
					break;
			o = k < fl.n ? fl.o[k] : NULL;
		}
		if (!o)
			return OPTS_USAGE;
		if (set_one(c->name, o, (char *)cfg + fl.base[k], optarg,
			    1))
			return OPTS_USAGE;
	}
	/* getopt has read all of argv: the positional arguments can
	 * take its end, in order */
	for (i = 0; i < npos; i++)
		argv[argc - npos + i] = pos[i];
	if (argi)
		*argi = argc - npos;
	return OPTS_OK;
}

/* text with "{}" standing for def */
static void put_help_text(FILE *f, const char *text, int n, const char *def)
{
	const char *p = memmem(text, n, "{}", 2);

	if (p && def) {
		fprintf(f, "%.*s%s", (int)(p - text), text, def);
		n -= p + 2 - text;
		text = p + 2;
	}
	fprintf(f, "%.*s", n, text);
}

static void help_one(FILE *f, const struct opt *o, int col)
{
	const char *h = o->help, *nl;
	int w;

	if (o->label)
		w = fprintf(f, "  %s", o->label);
	else
		w = fprintf(f, "  --%s%s%s", o->name, o->metavar ? " " : "",
			    o->metavar ? o->metavar : "");
	/* a long label gets a line of its own */
	if (w >= col) {
		fprintf(f, "\n");
		w = 0;
	}
	fprintf(f, "%*s", col - w, "");
	for (;;) {
		nl = strchr(h, '\n');
		put_help_text(f, h, nl ? nl - h : (int)strlen(h), o->def);
		fprintf(f, "\n");
		if (!nl || !nl[1])
			break;
		h = nl + 1;
		fprintf(f, "%*s", col, "");
	}
}

void opts_help_table(FILE *f, const struct opt *tab, int col)
{
	const struct opt *o;

	for (o = tab; o->kind != OPT_END; o++) {
		if (o->kind == OPT_INCLUDE) {
			if (o->label && o->help)
				help_one(f, o, col);
			else if (o->help)
				opts_help_table(f, o->sub, col);
		} else if (o->kind == OPT_TEXT) {
			fputs(o->help, f);
		} else if (o->help && o->kind != OPT_REFUSE) {
			help_one(f, o, col);
		}
	}
}

void opts_help(FILE *f, const struct opts_cmd *c)
{
	if (c->synopsis)
		fprintf(f, "usage: rinxctl %s %s\n", c->name, c->synopsis);
	opts_help_table(f, c->help_tab ? c->help_tab : c->tab, c->col);
}
