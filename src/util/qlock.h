/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The work queues' producer lock (sv_qp.sq_lock, sv_qp.rq_lock), biased
 * to the thread that posts.
 *
 * Almost every program posts to a queue from one thread, once per
 * message, and even one locked instruction per post is a measurable part
 * of a small message's cost on the one-host fast path (ib_send_bw 8 B:
 * ~17 of ~120 cycles per message on each side).  So the first thread
 * that takes the lock owns it: it enters by raising its flag with a plain
 * store and checking that the lock was not revoked, and leaves with a
 * plain store.  Any other thread takes the inner spin lock and revokes:
 * it raises `revoked`, makes every running thread pass a full barrier
 * (util/membarrier.h), and waits for the owner's flag to drop; the owner
 * then either was seen inside, or comes after the barrier and sees
 * `revoked` (and takes the spin lock too).  When the other thread leaves,
 * the bias is given back, unless the lock has been revoked
 * SV_QLOCK_REVOKES times: a queue that several threads share for good
 * uses the spin lock alone from then on.
 *
 * Without membarrier (and under ThreadSanitizer) the lock is the spin
 * lock.  Not recursive.
 *
 * sv_qlock_lock names the lock's rank (util/lockorder.h: SV_LOCK_SQ,
 * SV_LOCK_RQ), checked in SV_LOCKCHECK builds.
 */
#ifndef SV_UTIL_QLOCK_H
#define SV_UTIL_QLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/lockorder.h"
#include "util/spin.h"

#define SV_QLOCK_REVOKES 64

typedef struct {
	_Atomic(const void *) owner; /* the bias's thread, set once */
	_Atomic uint32_t owner_in; /* the owner is inside (owner writes) */
	_Atomic bool revoked; /* the owner must take the spin lock */
	bool rebias; /* give the bias back at unlock (under spin) */
	uint32_t revokes; /* under spin */
	sv_spin_t spin;
} sv_qlock_t;

/* A thread's identity: the address of a thread-local byte. */
extern __thread char sv_qlock_self __attribute__((tls_model("initial-exec")));

void sv_qlock_init(sv_qlock_t *q);
void sv_qlock_lock_slow(sv_qlock_t *q);
void sv_qlock_unlock_slow(sv_qlock_t *q);

static inline bool sv_qlock_try_biased(sv_qlock_t *q, const void *me)
{
	atomic_store_explicit(&q->owner_in, 1, memory_order_relaxed);
	/* The compiler keeps the store before the load; the revoker's
	 * membarrier orders them on the CPU. */
	atomic_signal_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&q->revoked, memory_order_acquire))
		return true;
	atomic_store_explicit(&q->owner_in, 0, memory_order_release);
	return false;
}

static inline void sv_qlock_take(sv_qlock_t *q)
{
	const void *me = &sv_qlock_self;

	if (atomic_load_explicit(&q->owner, memory_order_relaxed) == me &&
	    sv_qlock_try_biased(q, me))
		return;
	sv_qlock_lock_slow(q);
}

static inline void sv_qlock_give(sv_qlock_t *q)
{
	/* Only the owner ever raises owner_in, so it is ours to drop. */
	if (atomic_load_explicit(&q->owner, memory_order_relaxed) ==
		    &sv_qlock_self &&
	    atomic_load_explicit(&q->owner_in, memory_order_relaxed)) {
		atomic_store_explicit(&q->owner_in, 0, memory_order_release);
		return;
	}
	sv_qlock_unlock_slow(q);
}

#define sv_qlock_lock(q, r)           \
	({                            \
		sv_qlock_t *q_ = (q); \
		SV_LOCK_WILL(q_, r);  \
		sv_qlock_take(q_);    \
		SV_LOCK_GOT(q_, r);   \
	})

#define sv_qlock_unlock(q)            \
	({                            \
		sv_qlock_t *q_ = (q); \
		SV_LOCK_DROP(q_);     \
		sv_qlock_give(q_);    \
	})

#endif
