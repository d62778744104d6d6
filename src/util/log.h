/* Diagnostics: SOFTVERBS_LOG=0..3 (error, warn, info, debug); errors on by default. */
#ifndef SV_UTIL_LOG_H
#define SV_UTIL_LOG_H

#include "util/env.h"

enum sv_log_lvl { SV_LOG_ERR, SV_LOG_WARN, SV_LOG_INFO, SV_LOG_DBG };

/* The level in effect (SOFTVERBS_LOG, util/env.c), read-only. */
#define sv_log_level sv_env_log()

void sv_log(enum sv_log_lvl lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define sv_err(...) sv_log(SV_LOG_ERR, __VA_ARGS__)
#define sv_warn(...) sv_log(SV_LOG_WARN, __VA_ARGS__)
#define sv_info(...) sv_log(SV_LOG_INFO, __VA_ARGS__)
#define sv_dbg(...)                                      \
	do {                                             \
		if (sv_log_level >= SV_LOG_DBG)          \
			sv_log(SV_LOG_DBG, __VA_ARGS__); \
	} while (0)

#endif
