/* Diagnostics to stderr, level from SOFTVERBS_LOG, read once at load. */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int sv_log_level = SV_LOG_ERR;

__attribute__((constructor)) static void sv_log_init(void)
{
	const char *s = getenv("SOFTVERBS_LOG");

	if (s)
		sv_log_level = atoi(s);
}

void sv_log(enum sv_log_level lvl, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	va_list ap;

	if ((int)lvl > sv_log_level)
		return;
	fprintf(stderr, "softverbs %s: ", names[lvl]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
