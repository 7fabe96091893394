/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * rinxctl's options: one table per command says, for every option, its
 * name, the kind of its argument, the range allowed, the default, the help
 * line and where the value is stored. One parser reads argv against it
 * (usage errors name the option and its range: exit 2), and the command's
 * --help, hence the man page, is printed from the same table, so the three
 * cannot disagree.
 *
 * A table may include another (OPT_INCLUDE) stored at an offset of its own
 * config: demo includes bench's options, testbed up and fault the link
 * options. An entry shadows an entry of the same name that comes later,
 * in the table or in one it includes: that is how demo gives --sizes its
 * own default and refuses bench's --json.
 */
#ifndef RINX_OPTS_H
#define RINX_OPTS_H

#include <stddef.h>
#include <stdio.h>

enum opt_kind {
	OPT_END,
	OPT_FLAG,	/* no argument: the int at off becomes 1 */
	OPT_CLEAR,	/* no argument: the int at off becomes 0 (--no-X) */
	OPT_INT,	/* an integer in [min, max], any width (size) */
	OPT_DOUBLE,	/* a number in [dmin, dmax] */
	OPT_STR,	/* the argument itself (const char *) */
	OPT_ENUM,	/* one of choices: its value, into an int */
	OPT_FN,		/* parse(arg, field): 0, or -1 with why (or range) */
	OPT_REFUSE,	/* refused with help as why (an argument: metavar) */
	OPT_TEXT,	/* no option: help is printed as it is */
	OPT_INCLUDE,	/* the entries of sub, their config at off; listed
			 * in the help when help is non-NULL (""), or one
			 * line for all of them when label is set too */
};

struct opt_choice {
	const char *name;
	int val;
	int alias;	/* accepted but not listed */
};

struct opt {
	enum opt_kind kind;
	const char *name;	/* long name without "--" */
	char short_opt;		/* 0: none */
	const char *metavar;	/* the argument in the help: N, FILE */
	const char *label;	/* help's left column instead of --name META */
	size_t off, size;	/* where the value is stored, and its width */
	long long min, max;	/* OPT_INT */
	double dmin, dmax;	/* OPT_DOUBLE */
	const char *range;	/* allowed values for the error (else made
				 * from min..max or the choices) */
	const struct opt_choice *choices;	/* OPT_ENUM, {NULL} ended */
	int (*parse)(const char *arg, void *field, char *why, size_t len);
	const struct opt *sub;	/* OPT_INCLUDE */
	const char *def;	/* the default, parsed as an argument before
				 * argv; "{}" in help stands for it */
	size_t bits_off;	/* bit: or-ed into the unsigned int at bits_off */
	unsigned int bit;	/* when the option is given; 0: none */
	const char *help;	/* lines; NULL: hidden (still parsed) */
};

/* Where a table's option keeps its value: in struct type, member m. */
#define OPT_AT(type, m) .off = offsetof(type, m), \
			.size = sizeof(((type *)0)->m)

/* A command: its synopsis (NULL: the help table has its own), its table
 * and the help column. */
struct opts_cmd {
	const char *name;	/* "bench", "testbed up" */
	const char *synopsis;	/* after "usage: rinxctl NAME " */
	const struct opt *tab;
	int col;		/* help text column of the option lines */
	int max_args;		/* positional arguments allowed */
	const struct opt *help_tab;	/* --help from this table instead
					 * (several actions' tables) */
};

enum { OPTS_OK = 0, OPTS_HELP = 1, OPTS_USAGE = 2 };

/* Every default of tab into cfg. */
void opts_defaults(const struct opt *tab, void *cfg);

/* The defaults, then argv[1..] (argv[0] is the command's word) into cfg;
 * positional arguments, up to c->max_args, are moved to argv[*argi..argc)
 * (argi may be NULL when none is allowed). OPTS_OK, OPTS_HELP after the
 * help went to stdout, or OPTS_USAGE after the error went to stderr. */
int opts_parse(const struct opts_cmd *c, int argc, char **argv, void *cfg,
	       int *argi);

/* OPTS_HELP -> 0, OPTS_USAGE -> exit code 2. */
static inline int opts_exit(int ret)
{
	return ret == OPTS_HELP ? 0 : 2;
}

/* The option lines of tab (and TEXT entries) at column col. */
void opts_help_table(FILE *f, const struct opt *tab, int col);
/* "usage: rinxctl NAME SYNOPSIS" and the table. */
void opts_help(FILE *f, const struct opts_cmd *c);

#endif
