/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A test process's softverbs log in a file of its own (VERBS_LOG_FILE,
 * set before the process first uses the library: the harness forks
 * first), read back and emptied by take_log, and EXPECT_LOG/EXPECT_NO_LOG
 * to assert what it holds (rc_explain, rc_strict).  Static inline: the
 * assertions count into the including file's check.h counters.
 */
#ifndef SV_TESTS_LOGCAP_H
#define SV_TESTS_LOGCAP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static char log_path[64];

/* Before the first verbs call of this process; name: the test's. */
static inline void log_to_file(const char *name)
{
	int fd;

	snprintf(log_path, sizeof(log_path), "/tmp/sv_%s_%s_XXXXXX", name,
		 hx_role);
	fd = mkstemp(log_path);
	REQUIRE(fd >= 0);
	close(fd);
	setenv("VERBS_LOG_FILE", log_path, 1);
	unsetenv("SOFTVERBS_LOG");
	unsetenv("VERBS_LOG_LEVEL");
}

/* The log so far, then emptied (the library appends: O_APPEND). */
static inline const char *take_log(void)
{
	static char text[65536];
	FILE *f = fopen(log_path, "r");
	size_t n;

	REQUIRE(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	REQUIRE(truncate(log_path, 0) == 0);
	return text;
}

static inline bool has_all(const char *t, const char *const *want, int n)
{
	for (int i = 0; i < n; i++)
		if (!strstr(t, want[i]))
			return false;
	return true;
}

#define EXPECT_LOG(t, ...)                                                   \
	do {                                                                 \
		const char *const _w[] = { __VA_ARGS__ };                    \
		const char *_t = (t);                                        \
		bool _ok = has_all(_t, _w, sizeof(_w) / sizeof(_w[0]));      \
		CHECK(_ok);                                                  \
		if (!_ok) {                                                  \
			hx_log("wanted in the log:");                        \
			for (size_t _i = 0; _i < sizeof(_w) / sizeof(_w[0]); \
			     _i++)                                           \
				hx_log("  %s", _w[_i]);                      \
			hx_log("log was: %s", _t);                           \
		}                                                            \
	} while (0)

/* The log holds this whole line ("softverbs warning: ..."), exactly. */
static inline bool has_line(const char *t, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = t; (p = strstr(p, line)); p++)
		if ((p == t || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return true;
	return false;
}

#define EXPECT_LINE(t, line)                                                   \
	do {                                                                   \
		const char *_t = (t), *_l = (line);                            \
		bool _ok = has_line(_t, _l);                                   \
		CHECK(_ok);                                                    \
		if (!_ok)                                                      \
			hx_log("wanted the line:\n  %s\nlog was: %s", _l, _t); \
	} while (0)

/* The log holds no line with this text. */
#define EXPECT_NO_LOG(t, text)                                              \
	do {                                                                \
		const char *_t = (t);                                       \
		bool _ok = !strstr(_t, (text));                             \
		CHECK(_ok);                                                 \
		if (!_ok)                                                   \
			hx_log("unwanted '%s' in the log: %s", (text), _t); \
	} while (0)

#endif
