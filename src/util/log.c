/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Diagnostics: the level and the file (util/log.h), one write per line. */
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static FILE *log_file;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

/* VERBS_LOG_FILE is opened once, at the first line, and kept open (as
 * rdma-core does); line-buffered so that a killed process loses nothing
 * it logged.  A file that cannot be opened: stderr, said once. */
static void open_log(void)
{
	const char *path = sv_env_log_file();
	FILE *f;

	log_file = stderr;
	if (!*path)
		return;
	f = fopen(path, "ae");
	if (!f) {
		fprintf(stderr,
			"softverbs warning: VERBS_LOG_FILE %s: %s; logging to stderr\n",
			path, strerror(errno));
		return;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	log_file = f;
}

/* "softverbs TAG: ..." as one line. */
static void vlog_tag(const char *tag, const char *fmt, va_list ap)
{
	char line[1024];
	int saved = errno, n;

	pthread_once(&log_once, open_log);
	n = snprintf(line, sizeof(line), "softverbs %s: ", tag);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	/* One fputs of the whole line: lines of threads do not mix. */
	strcat(line, "\n");
	fputs(line, log_file);
	errno = saved;
}

static void vlog(enum sv_log_lvl lvl, const char *fmt, va_list ap)
{
	static const char *const names[] = { "error", "warning", "info",
					     "debug" };

	vlog_tag(names[lvl], fmt, ap);
}

void sv_log_tag(const char *tag, const char *fmt, ...)
{
	va_list ap;

	if (sv_log_level < SV_LOG_WARN)
		return;
	va_start(ap, fmt);
	vlog_tag(tag, fmt, ap);
	va_end(ap);
}

void sv_log(enum sv_log_lvl lvl, const char *fmt, ...)
{
	va_list ap;

	if ((int)lvl > sv_log_level)
		return;
	va_start(ap, fmt);
	vlog(lvl, fmt, ap);
	va_end(ap);
}

int sv_refuse(int err, const char *fmt, ...)
{
	va_list ap;

	if (sv_log_level < SV_LOG_WARN)
		return err;
	va_start(ap, fmt);
	vlog(SV_LOG_WARN, fmt, ap);
	va_end(ap);
	return err;
}

bool sv_log_rated(struct sv_lograte *r, unsigned int qpn)
{
	unsigned int n =
		atomic_fetch_add_explicit(&r->lines, 1, memory_order_relaxed);

	if (n == SV_LOG_BURST)
		sv_log(SV_LOG_WARN,
		       "QP 0x%06x: %u lines logged; further ones are counted, not logged",
		       qpn, SV_LOG_BURST);
	return n < SV_LOG_BURST;
}

unsigned int sv_log_suppressed(const struct sv_lograte *r)
{
	unsigned int n = atomic_load_explicit(&r->lines, memory_order_relaxed);

	return n > SV_LOG_BURST ? n - SV_LOG_BURST : 0;
}

static void vlog_qp(unsigned int qpn, const char *who, const char *fmt,
		    va_list ap)
{
	char msg[768];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	sv_log(SV_LOG_WARN, "%s: QP 0x%06x: %s", who, qpn, msg);
}

int sv_refuse_qp(struct sv_lograte *r, unsigned int qpn, const char *who,
		 int err, const char *fmt, ...)
{
	va_list ap;

	if (sv_log_level < SV_LOG_WARN || !sv_log_rated(r, qpn))
		return err;
	va_start(ap, fmt);
	vlog_qp(qpn, who, fmt, ap);
	va_end(ap);
	return err;
}

void sv_warn_qp(struct sv_lograte *r, unsigned int qpn, const char *who,
		const char *fmt, ...)
{
	va_list ap;

	if (sv_log_level < SV_LOG_WARN || !sv_log_rated(r, qpn))
		return;
	va_start(ap, fmt);
	vlog_qp(qpn, who, fmt, ap);
	va_end(ap);
}
