/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Diagnostics.  The level: SOFTVERBS_LOG=0..3 (errors, warnings, info,
 * debug), else rdma-core's VERBS_LOG_LEVEL=0..4 (none, errors, warnings,
 * info, debug: ours plus one), else warnings.  Lines go to VERBS_LOG_FILE
 * (appended) or stderr.
 *
 * What is logged at which level: an error is softverbs' own failure; a
 * warning is a refusal or an error completion that a correct program never
 * meets (a verb's EINVAL, a remote access error), one line naming the rule
 * broken and the value that broke it; info and debug are for tracing a
 * correct program.
 */
#ifndef SV_UTIL_LOG_H
#define SV_UTIL_LOG_H

#include <stdatomic.h>
#include <stdbool.h>

#include "util/env.h"

enum sv_log_lvl { SV_LOG_ERR, SV_LOG_WARN, SV_LOG_INFO, SV_LOG_DBG };

/* The level in effect (util/env.c has the variables). */
static inline int sv_log_level_now(void)
{
	int lvl = sv_env_log(), verbs;

	if (lvl != SV_ENV_UNSET)
		return lvl;
	verbs = sv_env_verbs_log_level();
	/* rdma-core's 0 is "none", its 1 our errors. */
	if (verbs != SV_ENV_UNSET)
		return verbs - 1;
	return SV_LOG_WARN;
}

#define sv_log_level sv_log_level_now()

/* One line "softverbs LEVEL: ...", written at once; errno is kept. */
void sv_log(enum sv_log_lvl lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A warning-level line with its own tag, "softverbs TAG: ..." (strict
 * mode's reports: "softverbs strict: ..."). */
void sv_log_tag(const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define sv_err(...) sv_log(SV_LOG_ERR, __VA_ARGS__)
#define sv_warn(...) sv_log(SV_LOG_WARN, __VA_ARGS__)
#define sv_info(...) sv_log(SV_LOG_INFO, __VA_ARGS__)
#define sv_dbg(...)                                      \
	do {                                             \
		if (sv_log_level >= SV_LOG_DBG)          \
			sv_log(SV_LOG_DBG, __VA_ARGS__); \
	} while (0)

/* A refusal: the warning line, then err returned, so that a check reads
 * `return sv_refuse(EINVAL, "...why...", value)`. */
int sv_refuse(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Lines of the data path (post, responder, completer) are limited per
 * QP so that a flood of refusals cannot fill a disk: the first
 * SV_LOG_BURST lines, then one saying the rest are only counted.
 */
#define SV_LOG_BURST 10

struct sv_lograte {
	atomic_uint lines; /* lines asked for, logged or not */
};

/* May one more line of this object be logged?  (Counts it either way.) */
bool sv_log_rated(struct sv_lograte *r, unsigned int qpn);
/* The lines of this object that were counted, not logged. */
unsigned int sv_log_suppressed(const struct sv_lograte *r);

/* A refusal of the data path about a QP: the line "WHO: QP 0xQPN: ...",
 * counted against r; err returned. */
int sv_refuse_qp(struct sv_lograte *r, unsigned int qpn, const char *who,
		 int err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* The same line for what is not a verb's refusal (an error completion). */
void sv_warn_qp(struct sv_lograte *r, unsigned int qpn, const char *who,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
