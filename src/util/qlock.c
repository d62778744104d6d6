/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The biased queue lock's slow paths (util/qlock.h). */
#include "util/qlock.h"

#include <sched.h>

#include "util/membarrier.h"

__thread char sv_qlock_self __attribute__((tls_model("initial-exec")));

void sv_qlock_init(sv_qlock_t *q)
{
	atomic_init(&q->owner, NULL);
	atomic_init(&q->owner_in, 0);
	atomic_init(&q->revoked, !sv_membarrier_ok());
	q->rebias = false;
	q->revokes = 0;
	sv_spin_init(&q->spin);
}

void sv_qlock_lock_slow(sv_qlock_t *q)
{
	const void *me = &sv_qlock_self, *none = NULL;

	/* The first thread to post owns the bias. */
	if (!atomic_load_explicit(&q->owner, memory_order_relaxed) &&
	    !atomic_load_explicit(&q->revoked, memory_order_relaxed) &&
	    atomic_compare_exchange_strong(&q->owner, &none, me) &&
	    sv_qlock_try_biased(q, me))
		return;
	sv_spin_lock(&q->spin);
	if (atomic_load_explicit(&q->owner, memory_order_relaxed) == me ||
	    atomic_load_explicit(&q->revoked, memory_order_relaxed))
		return; /* the owner while revoked, or spin-only */
	atomic_store(&q->revoked, true);
	sv_membarrier();
	while (atomic_load_explicit(&q->owner_in, memory_order_acquire))
		sched_yield();
	if (++q->revokes < SV_QLOCK_REVOKES)
		q->rebias = true;
}

void sv_qlock_unlock_slow(sv_qlock_t *q)
{
	if (q->rebias) {
		q->rebias = false;
		atomic_store_explicit(&q->revoked, false, memory_order_release);
	}
	sv_spin_unlock(&q->spin);
}
