/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A reader/writer lock for read-mostly data whose readers pay no locked
 * instruction: the memory key table, looked up by every SEND, receive and
 * RDMA access of the data path and changed only by registrations.
 *
 * A locked read-modify-write costs little by itself, but it also waits for
 * every earlier store of the core to complete.  On the one-host fast path
 * the store before a key lookup is often to a line the peer process's core
 * holds (a channel slot, an ack line), so an atomic increment there costs
 * a cross-core round trip per message (docs/fastpath.md, "Measured").
 *
 * So each thread announces a read with a plain store into a flag of its
 * own, and a writer pays instead: it raises `writer`, makes every running
 * thread of the process execute a full memory barrier with membarrier(2)
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED), and waits for the readers' flags to
 * drop.  After the barrier, a reader either had its flag visible to the
 * writer, or comes after the barrier and sees `writer` (and steps back:
 * writer-preferring, so a stream of reads cannot starve a registration).
 * This is the asymmetric-fence scheme of user-space RCU's "memb" flavour.
 *
 * Where membarrier is not available (old kernels, seccomp, valgrind) and
 * under ThreadSanitizer (which cannot see the barrier), readers count
 * themselves in a shared counter with sequentially consistent atomics.
 *
 * A thread must not read twice at once, nor write while it reads (both
 * deadlock against a waiting writer, in either mode).
 *
 * Both sides name the lock's rank (util/lockorder.h), checked in
 * SV_LOCKCHECK builds; under ThreadSanitizer the lock annotates itself as
 * a reader/writer mutex, so that TSan's deadlock detector sees it.
 */
#ifndef SV_UTIL_READLOCK_H
#define SV_UTIL_READLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/lockorder.h"

/* One per (thread, lock): allocated at the thread's first read, reused
 * after the thread exits, never freed (the lock lives as long as the
 * process). */
struct sv_readlock_rec {
	_Alignas(64) _Atomic uint32_t active; /* in a read section */
	_Atomic bool in_use; /* owned by a live thread */
	struct sv_readlock_rec *next;
};

struct sv_readlock {
	_Atomic bool writer;
	bool asym; /* membarrier mode (else the shared counter) */
	_Atomic uint32_t readers; /* shared-counter mode */
	pthread_key_t key; /* the thread's record */
	pthread_mutex_t wmutex; /* writers, one at a time (the lock's rank) */
	pthread_mutex_t reg; /* the record list (SV_LOCK_READLOCK_REG) */
	struct sv_readlock_rec *_Atomic recs;
};

/* Once, before any thread reads or writes (a constructor). */
void sv_readlock_init(struct sv_readlock *l);

void sv_readlock_wait_writer(struct sv_readlock *l);
struct sv_readlock_rec *sv_readlock_rec_new(struct sv_readlock *l);

static inline void sv_read_enter(struct sv_readlock *l)
{
	struct sv_readlock_rec *r;

	if (!l->asym) {
#ifdef SV_TSAN_LOCKS
		__tsan_mutex_pre_lock(l, __tsan_mutex_read_lock);
#endif
		for (;;) {
			atomic_fetch_add(&l->readers, 1);
			if (!atomic_load(&l->writer))
				break;
			atomic_fetch_sub(&l->readers, 1);
			sv_readlock_wait_writer(l);
		}
#ifdef SV_TSAN_LOCKS
		__tsan_mutex_post_lock(l, __tsan_mutex_read_lock, 0);
#endif
		return;
	}
	r = pthread_getspecific(l->key);
	if (__builtin_expect(!r, 0))
		r = sv_readlock_rec_new(l);
	for (;;) {
		atomic_store_explicit(&r->active, 1, memory_order_relaxed);
		/* Only the compiler must keep the store before the load: the
		 * writer's membarrier orders them on the CPU. */
		atomic_signal_fence(memory_order_seq_cst);
		if (!atomic_load_explicit(&l->writer, memory_order_acquire))
			return;
		atomic_store_explicit(&r->active, 0, memory_order_release);
		sv_readlock_wait_writer(l);
	}
}

static inline void sv_read_exit(struct sv_readlock *l)
{
	struct sv_readlock_rec *r;

	if (!l->asym) {
#ifdef SV_TSAN_LOCKS
		__tsan_mutex_pre_unlock(l, __tsan_mutex_read_lock);
#endif
		atomic_fetch_sub_explicit(&l->readers, 1, memory_order_release);
#ifdef SV_TSAN_LOCKS
		__tsan_mutex_post_unlock(l, __tsan_mutex_read_lock);
#endif
		return;
	}
	r = pthread_getspecific(l->key);
	atomic_store_explicit(&r->active, 0, memory_order_release);
}

void sv_write_enter(struct sv_readlock *l);
void sv_write_exit(struct sv_readlock *l);

#define sv_read_lock(l, r)                    \
	({                                    \
		struct sv_readlock *l_ = (l); \
		SV_LOCK_WILL(l_, r);          \
		sv_read_enter(l_);            \
		SV_LOCK_GOT(l_, r);           \
	})

#define sv_read_unlock(l)                     \
	({                                    \
		struct sv_readlock *l_ = (l); \
		SV_LOCK_DROP(l_);             \
		sv_read_exit(l_);             \
	})

#define sv_write_lock(l, r)                   \
	({                                    \
		struct sv_readlock *l_ = (l); \
		SV_LOCK_WILL(l_, r);          \
		sv_write_enter(l_);           \
		SV_LOCK_GOT(l_, r);           \
	})

#define sv_write_unlock(l)                    \
	({                                    \
		struct sv_readlock *l_ = (l); \
		SV_LOCK_DROP(l_);             \
		sv_write_exit(l_);            \
	})

#endif
