/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A spin lock for the work queues' producer side (sq_lock, rq_lock): held
 * for the few hundred instructions of a post, rarely contended (two
 * threads posting to one queue at once).
 *
 * Why not a pthread mutex: its lock and its unlock are each a locked
 * instruction, and each waits for every earlier store of the core to
 * complete.  ib_send_bw's receiver posts one receive per message, so the
 * mutex cost two such waits per message; this lock costs one (an exchange
 * to take it, a plain release store to give it back).
 *
 * A waiter spins on a plain load (the line stays shared until the owner
 * lets go), then yields: the owner may be preempted on a machine with as
 * many busy threads as cores.
 *
 * Under ThreadSanitizer the lock annotates itself as a mutex (lock order
 * and deadlock reports, util/lockorder.h); its rank is its user's
 * (util/qlock.h).
 */
#ifndef SV_UTIL_SPIN_H
#define SV_UTIL_SPIN_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "util/lockorder.h"

typedef struct {
	_Atomic bool held;
} sv_spin_t;

#define SV_SPIN_SPINS 128

static inline void sv_spin_init(sv_spin_t *s)
{
	atomic_init(&s->held, false);
#ifdef SV_TSAN_LOCKS
	__tsan_mutex_create(s, 0);
#endif
}

static inline void sv_spin_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static inline void sv_spin_lock(sv_spin_t *s)
{
#ifdef SV_TSAN_LOCKS
	__tsan_mutex_pre_lock(s, 0);
#endif
	while (atomic_exchange_explicit(&s->held, true, memory_order_acquire)) {
		unsigned int n = 0;

		while (atomic_load_explicit(&s->held, memory_order_relaxed)) {
			if (++n < SV_SPIN_SPINS) {
				sv_spin_relax();
			} else {
				n = 0;
				sched_yield();
			}
		}
	}
#ifdef SV_TSAN_LOCKS
	__tsan_mutex_post_lock(s, 0, 0);
#endif
}

static inline bool sv_spin_trylock(sv_spin_t *s)
{
	bool ok;

#ifdef SV_TSAN_LOCKS
	__tsan_mutex_pre_lock(s, __tsan_mutex_try_lock);
#endif
	ok = !atomic_load_explicit(&s->held, memory_order_relaxed) &&
	     !atomic_exchange_explicit(&s->held, true, memory_order_acquire);
#ifdef SV_TSAN_LOCKS
	__tsan_mutex_post_lock(s,
			       ok ? __tsan_mutex_try_lock :
				    __tsan_mutex_try_lock |
					       __tsan_mutex_try_lock_failed,
			       0);
#endif
	return ok;
}

static inline void sv_spin_unlock(sv_spin_t *s)
{
#ifdef SV_TSAN_LOCKS
	__tsan_mutex_pre_unlock(s, 0);
#endif
	atomic_store_explicit(&s->held, false, memory_order_release);
#ifdef SV_TSAN_LOCKS
	__tsan_mutex_post_unlock(s, 0);
#endif
}

#endif
