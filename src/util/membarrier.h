/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The asymmetric fence: membarrier(2)'s private expedited command makes
 * every running thread of the process execute a full memory barrier.  A
 * rarely taken side (a writer, a lock's revoker) pays it so that the
 * frequent side (every lookup, every post) can announce itself with plain
 * stores (util/readlock.h, util/qlock.h).
 */
#ifndef SV_UTIL_MEMBARRIER_H
#define SV_UTIL_MEMBARRIER_H

#include <stdbool.h>

/* Registered and usable (false: old kernel, seccomp, valgrind, or a
 * ThreadSanitizer build, which cannot see the barrier); decided once. */
bool sv_membarrier_ok(void);

/* The barrier; only after sv_membarrier_ok() said true. */
void sv_membarrier(void);

#endif
