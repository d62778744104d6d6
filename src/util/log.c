/* Diagnostics to stderr, level from SOFTVERBS_LOG (util/env.c). */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

void sv_log(enum sv_log_lvl lvl, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info",
					     "debug" };
	va_list ap;

	if ((int)lvl > sv_log_level)
		return;
	fprintf(stderr, "softverbs %s: ", names[lvl]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
