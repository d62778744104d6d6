/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The lock order: every lock of softverbs, once, lowest taken first.
 *
 * The rule: a thread takes a lock only while every lock it already holds
 * has a lower rank (comes earlier in the enum below).  Two threads can then
 * never wait for each other in a cycle.  Leaves (under which nothing else
 * is taken) are at the end, so that any lock may take them.
 *
 * Exceptions, each named where it happens:
 *   - trylock.  A trylock never waits, so it cannot close a cycle: it may
 *     take a lower rank than one held, and its caller must cope with
 *     failure.  Today one does: the engine, holding its lock, tries a QP's
 *     state_lock to write back an error state (engine/transport/error.c
 *     sv_qp_sync_state), because modify_qp holds state_lock while it waits
 *     for the engine lock.  The engine's own trylocks (engine.c: busy polls
 *     and kicks) are in order.
 *   - an error-checking mutex relocked by its holder returns EDEADLK
 *     instead of waiting (verbs/qp_ex.c: a second ibv_wr_start by the
 *     thread inside a batch): sv_mutex_lock_errcheck.
 *   - no lock class nests with itself today (no thread holds two CQ locks,
 *     two engines, ...): the same rank twice is a violation.
 *
 * A condition-variable wait lets go of its mutex and takes it again: the
 * mutex must be the highest-ranked lock the thread holds (else taking it
 * back would be out of order).  Waits while holding lower locks exist and
 * are fine by this rule, but whoever signals must not need those locks:
 * keys.c drain() (mw_lock and the engine lock may be held: the references
 * it waits for are dropped without them), xrc.c srq_drain (nothing held),
 * the CM's acked (sv_cm.lock only), ibv_destroy_{cq,qp,srq} (nothing held).
 *
 * Checked at run time when SV_LOCKCHECK is defined (CMake option
 * SV_LOCKCHECK, on in `make asan` and `make tsan`): every lock and unlock
 * goes through the wrappers below, which record per thread the locks held
 * and abort, naming both locks and ranks, when a lock is taken out of
 * order, twice, or released without being held (util/lockorder.c).
 * Without SV_LOCKCHECK the wrappers are the plain calls.  Under
 * ThreadSanitizer the custom locks (util/spin.h, hence qlock, and
 * util/readlock.h) also tell TSan's deadlock detector about themselves.
 *
 * librdmacm has its own copy of the checker (with util/env.c): its thread
 * state does not see libibverbs' locks.  Nothing is lost: the CM's lock is
 * the lowest, and libibverbs never calls back into librdmacm.
 *
 * Not in the order: tools/presence.c's flock (a single-threaded command,
 * between processes), the shm rings' and the helper's slot claims
 * (link/shm.c, paths/help.c: bounded spins on shared memory, never waiting
 * for a lock), the public struct ibv_* mutexes' use by applications, and
 * examples/ (application code).
 */
#ifndef SV_UTIL_LOCKORDER_H
#define SV_UTIL_LOCKORDER_H

#include <pthread.h>
#include <stdbool.h>

enum sv_lock_rank {
	SV_LOCK_NONE, /* not a lock: 0 is never held */
	/* cm/rs.h rsocket.lock: one rsocket's state, held across the
	 * rdma_cm and verbs calls that drive it (so above the CM's lock);
	 * rsockets are never locked two at a time (rpoll takes them one by
	 * one). */
	SV_LOCK_RSOCKET,
	/* cm/cm.h sv_cm.lock: the CM's one lock, held across calls into
	 * libibverbs (create/modify/destroy QP, open device). */
	SV_LOCK_CM,
	/* verbs/qp_ex.c sv_wr_batch.lock: held from ibv_wr_start to
	 * wr_complete, across the application's code in between; the
	 * complete posts (sq_lock, then the engine by a kick). */
	SV_LOCK_WR_BATCH,
	/* core/objects.h sv_qp.state_lock: modify_qp and multicast attach
	 * call the engine with it held. */
	SV_LOCK_QP_STATE,
	/* engine/forward/netmon.c nm.life: start/stop of the monitor (under it
	 * nm.lock, and the join of its thread). */
	SV_LOCK_NETMON_LIFE,
	/* engine/forward/netmon.c nm.lock: the thread's rescan takes each engine's
	 * lock (multicast refresh) and context lock (port events). */
	SV_LOCK_NETMON,
	/* core/cq_mod.c mod.life: start/stop of the moderation timer
	 * thread (under it mod.lock, and the join of the thread); taken by
	 * ibv_modify_cq and ibv_destroy_cq with nothing held. */
	SV_LOCK_CQ_MOD_LIFE,
	/* engine/transport/eng.h sv_engine.lock: the progress lock; a pass takes
	 * everything below (queues, keys, CQs, SRQs, async events). */
	SV_LOCK_ENGINE,
	/* core/objects.h sv_qp.sq_lock (util/qlock.h): post_send; the engine
	 * takes it to leave lean mode (paths/chan.c) and at reset; a lean
	 * post copies under it (key table). */
	SV_LOCK_SQ,
	/* core/objects.h sv_qp.rq_lock (util/qlock.h): post_recv; the
	 * engine at reset, after sq_lock. */
	SV_LOCK_RQ,
	/* core/mw.c mw_lock: binds and invalidations (engine) change keys
	 * under it (key table write side, then drain waits). */
	SV_LOCK_MW,
	/* core/keys.c tab_lock (util/readlock.h, both sides): the key
	 * table; channel receives and direct copies complete into CQs, post
	 * async events, kick and publish under its read side. */
	SV_LOCK_KEYS,
	/* core/pubtab.c own_lock: the published table; the engine publishes
	 * QPs under its lock; reads the environment under it. */
	SV_LOCK_PUBTAB,
	/* core/cq_mod.c mod.lock: the moderation timer list; sv_cq_push
	 * queues a CQ on it after dropping the CQ's lock, under whatever
	 * its caller holds; the timer thread takes a CQ's lock under it. */
	SV_LOCK_CQ_MOD,
	/* --- leaves: nothing but a later leaf's lock is taken under these */
	/* engine/transport/eng.h sv_engine.kick_lock: the kick list (work lists
	 * only). */
	SV_LOCK_KICK,
	/* core/objects.h sv_srq.lock: the SRQ ring (post, modify, the
	 * engine's receive). */
	SV_LOCK_SRQ,
	/* core/objects.h sv_cq.lock: the CQ ring and arming; overrun
	 * events and channel notifications are sent after unlocking. */
	SV_LOCK_CQ,
	/* core/objects.h sv_context.lock: async event queue, object
	 * lists, completion channels' CQ lists. */
	SV_LOCK_CTX,
	/* verbs/share.c share_lock: the command fds' shared objects
	 * (ibv_import_*): handles only. */
	SV_LOCK_SHARE,
	/* core/xrc.c xrc_lock: XRC domains and target QP lists. */
	SV_LOCK_XRC,
	/* core/xrc.c srq_tab_lock (rwlock): the XRC SRQ number table. */
	SV_LOCK_XRC_SRQ_TAB,
	/* core/keys.c drain_lock: waits for an MR's last reference
	 * (condition variable). */
	SV_LOCK_MR_DRAIN,
	/* core/xrc.c srq_drain_lock: waits for an XRC SRQ's last packet
	 * (condition variable). */
	SV_LOCK_SRQ_DRAIN,
	/* engine/forward/xrcfwd.c fwd.lock (a receive forwarded to another
	 * process's XRC SRQ, under the engine lock: the request and its
	 * answer on the process's socket) and the table of WQEs taken for
	 * other processes (nothing under it). */
	SV_LOCK_XRC_FWD,
	/* struct ibv_cq/ibv_qp/ibv_srq .mutex (rdma-core's ABI): acked
	 * event counts that destroys wait for (condition variable). */
	SV_LOCK_IBV_EVENTS,
	/* engine/diag/statseg.c seg_lock: making the process's stats segment
	 * (the registry directory is opened under it). */
	SV_LOCK_STATSEG,
	/* link/shm.c reg_lock: the process's registered rings (their
	 * registry entries, removed at close and exit). */
	SV_LOCK_SHM_REG,
	/* util/readlock.c sv_readlock.reg: the record list, at a thread's
	 * first read of a readlock (so under whatever the reader holds). */
	SV_LOCK_READLOCK_REG,
	/* engine/diag/pcap.c lock: the capture's buffer and file, and each QP's
	 * place in its PSN space (written under the engine lock, sq_lock,
	 * the key table's read lock). */
	SV_LOCK_PCAP,
	/* core/gids.c gids.lock: the cached GID table (copied in or out,
	 * nothing else under it). */
	SV_LOCK_GIDS,
	/* util/env.c env_lock: the first read of a variable; any code may
	 * read the environment, so it comes last. */
	SV_LOCK_ENV,
	/* cm/rs_core.c rs_table_lock (rwlock): the descriptor table, for a
	 * lookup or an insertion (nothing is taken under it). */
	SV_LOCK_RS_TABLE,
	SV_LOCK_NRANKS
};

/* "engine (sv_engine.lock)": the rank's lock, for messages. */
const char *sv_lock_name(enum sv_lock_rank r);

/*
 * The checker (util/lockorder.c).  Compiled in every build, called only
 * from code compiled with SV_LOCKCHECK.  `lock` is the lock's address;
 * file and line are the caller's.
 *   sv_lockorder_will: about to wait for it (checks the order; relock_ok:
 *                      held already is fine, an error-checking mutex);
 *   sv_lockorder_got:  it is held now (a trylock calls only this);
 *   sv_lockorder_drop: about to release it;
 *   sv_lockorder_wait: about to wait on a condition with it.
 * A violation prints one line naming both locks and aborts.
 */
void sv_lockorder_will(const void *lock, enum sv_lock_rank r, bool relock_ok,
		       const char *file, int line);
void sv_lockorder_got(const void *lock, enum sv_lock_rank r, const char *file,
		      int line);
void sv_lockorder_drop(const void *lock, const char *file, int line);
void sv_lockorder_wait(const void *lock, const char *file, int line);
/* Locks the calling thread holds (tests). */
unsigned int sv_lockorder_held(void);

#ifdef SV_LOCKCHECK
#define SV_LOCK_WILL(l, r) \
	sv_lockorder_will((l), (r), false, __FILE__, __LINE__)
#define SV_LOCK_WILL_RELOCK(l, r) \
	sv_lockorder_will((l), (r), true, __FILE__, __LINE__)
#define SV_LOCK_GOT(l, r) sv_lockorder_got((l), (r), __FILE__, __LINE__)
#define SV_LOCK_DROP(l) sv_lockorder_drop((l), __FILE__, __LINE__)
#define SV_LOCK_WAIT(l) sv_lockorder_wait((l), __FILE__, __LINE__)
#else
/* The rank is still named, so a wrong one fails every build. */
#define SV_LOCK_WILL(l, r) ((void)(l), (void)(r))
#define SV_LOCK_WILL_RELOCK(l, r) ((void)(l), (void)(r))
#define SV_LOCK_GOT(l, r) ((void)(l), (void)(r))
#define SV_LOCK_DROP(l) ((void)(l))
#define SV_LOCK_WAIT(l) ((void)(l))
#endif

#ifdef SV_LOCKCHECK

/*
 * The pthread wrappers: each returns what the pthread call returns.
 * Statement expressions (GNU C, as the build is) so that the hooks see
 * the caller's file and line.
 */
#define sv_mutex_lock(m, r)                  \
	({                                   \
		pthread_mutex_t *m_ = (m);   \
		int e_;                      \
		SV_LOCK_WILL(m_, r);         \
		e_ = pthread_mutex_lock(m_); \
		if (!e_)                     \
			SV_LOCK_GOT(m_, r);  \
		e_;                          \
	})

/* An error-checking mutex whose relock by the holder is an expected
 * EDEADLK, not a wait (verbs/qp_ex.c): checked unless the thread holds it
 * already. */
#define sv_mutex_lock_errcheck(m, r)         \
	({                                   \
		pthread_mutex_t *m_ = (m);   \
		int e_;                      \
		SV_LOCK_WILL_RELOCK(m_, r);  \
		e_ = pthread_mutex_lock(m_); \
		if (!e_)                     \
			SV_LOCK_GOT(m_, r);  \
		e_;                          \
	})

/* Never waits: checked only for being held twice, see above. */
#define sv_mutex_trylock(m, r)                      \
	({                                          \
		pthread_mutex_t *m_ = (m);          \
		int e_ = pthread_mutex_trylock(m_); \
		if (!e_)                            \
			SV_LOCK_GOT(m_, r);         \
		e_;                                 \
	})

#define sv_mutex_unlock(m)                 \
	({                                 \
		pthread_mutex_t *m_ = (m); \
		SV_LOCK_DROP(m_);          \
		pthread_mutex_unlock(m_);  \
	})

#define sv_cond_wait(c, m)                  \
	({                                  \
		pthread_mutex_t *m_ = (m);  \
		SV_LOCK_WAIT(m_);           \
		pthread_cond_wait((c), m_); \
	})

#define sv_cond_timedwait(c, m, ts)                    \
	({                                             \
		pthread_mutex_t *m_ = (m);             \
		SV_LOCK_WAIT(m_);                      \
		pthread_cond_timedwait((c), m_, (ts)); \
	})

#define sv_rwlock_rdlock(l, r)                  \
	({                                      \
		pthread_rwlock_t *l_ = (l);     \
		int e_;                         \
		SV_LOCK_WILL(l_, r);            \
		e_ = pthread_rwlock_rdlock(l_); \
		if (!e_)                        \
			SV_LOCK_GOT(l_, r);     \
		e_;                             \
	})

#define sv_rwlock_wrlock(l, r)                  \
	({                                      \
		pthread_rwlock_t *l_ = (l);     \
		int e_;                         \
		SV_LOCK_WILL(l_, r);            \
		e_ = pthread_rwlock_wrlock(l_); \
		if (!e_)                        \
			SV_LOCK_GOT(l_, r);     \
		e_;                             \
	})

#define sv_rwlock_unlock(l)                 \
	({                                  \
		pthread_rwlock_t *l_ = (l); \
		SV_LOCK_DROP(l_);           \
		pthread_rwlock_unlock(l_);  \
	})
#else
/* The plain calls; the rank is still named, so a wrong one fails every
 * build. */
#define sv_mutex_lock(m, r) ((void)(r), pthread_mutex_lock(m))
#define sv_mutex_lock_errcheck(m, r) ((void)(r), pthread_mutex_lock(m))
#define sv_mutex_trylock(m, r) ((void)(r), pthread_mutex_trylock(m))
#define sv_mutex_unlock(m) pthread_mutex_unlock(m)
#define sv_cond_wait(c, m) pthread_cond_wait((c), (m))
#define sv_cond_timedwait(c, m, ts) pthread_cond_timedwait((c), (m), (ts))
#define sv_rwlock_rdlock(l, r) ((void)(r), pthread_rwlock_rdlock(l))
#define sv_rwlock_wrlock(l, r) ((void)(r), pthread_rwlock_wrlock(l))
#define sv_rwlock_unlock(l) pthread_rwlock_unlock(l)
#endif

/* ThreadSanitizer: the custom locks annotate themselves (spin.h,
 * readlock.h) so that its deadlock detector sees them. */
#if defined(__SANITIZE_THREAD__)
#define SV_TSAN_LOCKS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SV_TSAN_LOCKS 1
#endif
#endif
#ifdef SV_TSAN_LOCKS
#include <sanitizer/tsan_interface.h>
#endif

#endif
