/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mkman: writes a man page from its template (docs/man/NAME.in), at build
 * time: the line "@ENVIRONMENT@" becomes util/env.c's table of variables
 * (the list `softverbs help` and README.md show, so the man page cannot
 * disagree with them), and "@VERSION@" the project's version.
 *
 *   mkman VERSION TEMPLATE OUTPUT
 */
#include <stdio.h>
#include <string.h>

#include "util/env.h"

/* Text for roff: a backslash doubled, '-' as a minus sign where it is an
 * option or a range, a '.' or '\'' at a line's start made literal. */
static void roff(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

static void environment(FILE *f)
{
	for (int i = 0; i < SV_ENV_NVARS; i++) {
		const struct sv_env_var *v = &sv_env_vars[i];

		fputs(".TP\n.BR ", f);
		roff(f, v->name);
		fputs(" =\\fI", f);
		roff(f, v->values);
		fputs("\\fR\n", f);
		roff(f, v->what);
		fputs(".\nDefault: ", f);
		roff(f, v->dflt);
		fputs(".\n", f);
	}
}

int main(int argc, char **argv)
{
	char line[4096];
	FILE *in, *out;

	if (argc != 4) {
		fprintf(stderr, "usage: mkman VERSION TEMPLATE OUTPUT\n");
		return 2;
	}
	in = fopen(argv[2], "r");
	out = fopen(argv[3], "w");
	if (!in || !out) {
		perror("mkman");
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		char *at = strstr(line, "@VERSION@");

		if (!strcmp(line, "@ENVIRONMENT@\n")) {
			environment(out);
		} else if (at) {
			fwrite(line, 1, (size_t)(at - line), out);
			fputs(argv[1], out);
			fputs(at + strlen("@VERSION@"), out);
		} else {
			fputs(line, out);
		}
	}
	fclose(in);
	return fclose(out) ? 1 : 0;
}
