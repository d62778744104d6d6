/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Time, read in one place for every layer.  CLOCK_MONOTONIC is the clock of
 * every timer, timeout, deadline and rate (it never steps); CLOCK_REALTIME
 * only stamps what a person or another program reads (captures, the live
 * counters' "last update").  vDSO calls: no system call.
 */
#ifndef SV_UTIL_CLOCK_H
#define SV_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t sv_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t sv_now_ns(void)
{
	return sv_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t sv_now_ms(void)
{
	return sv_now_ns() / 1000000;
}

static inline uint64_t sv_real_ns(void)
{
	return sv_clock_ns(CLOCK_REALTIME);
}

#endif
