/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The read-mostly lock's slow paths: records, writers, the mode (readlock.h). */
#include "util/readlock.h"

#include <sched.h>
#include <stdlib.h>

#include "util/log.h"
#include "util/membarrier.h"

static void rec_release(void *p)
{
	struct sv_readlock_rec *r = p;

	atomic_store(&r->active, 0);
	atomic_store(&r->in_use, false);
}

void sv_readlock_init(struct sv_readlock *l)
{
	atomic_init(&l->writer, false);
	atomic_init(&l->readers, 0);
	atomic_init(&l->recs, NULL);
	pthread_mutex_init(&l->wmutex, NULL);
	pthread_mutex_init(&l->reg, NULL);
#ifdef SV_TSAN_LOCKS
	__tsan_mutex_create(l, 0);
#endif
	l->asym = pthread_key_create(&l->key, rec_release) == 0 &&
		  sv_membarrier_ok();
	sv_dbg("readlock: readers %s",
	       l->asym ? "announce with plain stores (membarrier)" :
			 "use a shared counter (no membarrier)");
}

/* The thread's first read: a record of a thread gone, or a new one. */
struct sv_readlock_rec *sv_readlock_rec_new(struct sv_readlock *l)
{
	struct sv_readlock_rec *r;

	sv_mutex_lock(&l->reg, SV_LOCK_READLOCK_REG);
	for (r = atomic_load(&l->recs); r; r = r->next)
		if (!atomic_load(&r->in_use))
			break;
	if (!r) {
		r = aligned_alloc(64, sizeof(*r));
		if (!r)
			abort(); /* 64 bytes once per thread */
		atomic_init(&r->active, 0);
		r->next = atomic_load(&l->recs);
		atomic_store(&l->recs, r); /* writers walk it without reg */
	}
	atomic_store(&r->in_use, true);
	sv_mutex_unlock(&l->reg);
	/* (Fails only without memory for the key's second-level block;
	 * going on would allocate a record at every read.) */
	if (pthread_setspecific(l->key, r))
		abort();
	return r;
}

/* A reader met a writer: wait for it to finish. */
void sv_readlock_wait_writer(struct sv_readlock *l)
{
	while (atomic_load(&l->writer))
		sched_yield();
}

void sv_write_enter(struct sv_readlock *l)
{
	struct sv_readlock_rec *r;

#ifdef SV_TSAN_LOCKS
	if (!l->asym)
		__tsan_mutex_pre_lock(l, 0);
#endif
	/* wmutex is this lock's own: the caller's rank covers it. */
	pthread_mutex_lock(&l->wmutex);
	atomic_store(&l->writer, true);
	if (!l->asym) {
		while (atomic_load(&l->readers))
			sched_yield();
#ifdef SV_TSAN_LOCKS
		__tsan_mutex_post_lock(l, 0, 0);
#endif
		return;
	}
	/* Every running thread passes a full barrier: a reader's flag
	 * raised before it is visible below; a reader raising it after
	 * sees `writer`.  It cannot fail once registered. */
	sv_membarrier();
	for (r = atomic_load(&l->recs); r; r = r->next)
		while (atomic_load_explicit(&r->active, memory_order_acquire))
			sched_yield();
}

void sv_write_exit(struct sv_readlock *l)
{
#ifdef SV_TSAN_LOCKS
	if (!l->asym)
		__tsan_mutex_pre_unlock(l, 0);
#endif
	atomic_store_explicit(&l->writer, false, memory_order_release);
	pthread_mutex_unlock(&l->wmutex);
#ifdef SV_TSAN_LOCKS
	if (!l->asym)
		__tsan_mutex_post_unlock(l, 0);
#endif
}
