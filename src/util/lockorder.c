/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The lock order's run-time check (util/lockorder.h): per thread, the locks
 * held, in the order taken.  A lock is taken only above every rank held;
 * a violation is reported once, naming both locks, and aborts, so that a
 * test run under `make asan` / `make tsan` stops at the first inversion
 * rather than at the deadlock it may cause one day.
 */
#include "util/lockorder.h"

#include <stdio.h>
#include <stdlib.h>

/* Deepest nesting today is about 6 (CM, state, engine, sq, keys, CQ). */
#define SV_LOCKORDER_DEPTH 16

static const char *const names[SV_LOCK_NRANKS] = {
	[SV_LOCK_NONE] = "none",
	[SV_LOCK_RSOCKET] = "rsocket (rsocket.lock)",
	[SV_LOCK_CM] = "cm (sv_cm.lock)",
	[SV_LOCK_WR_BATCH] = "wr_batch (sv_wr_batch.lock)",
	[SV_LOCK_QP_STATE] = "qp_state (sv_qp.state_lock)",
	[SV_LOCK_NETMON_LIFE] = "netmon_life (nm.life)",
	[SV_LOCK_NETMON] = "netmon (nm.lock)",
	[SV_LOCK_CQ_MOD_LIFE] = "cq_mod_life (core/cq_mod.c mod.life)",
	[SV_LOCK_ENGINE] = "engine (sv_engine.lock)",
	[SV_LOCK_SQ] = "sq (sv_qp.sq_lock)",
	[SV_LOCK_RQ] = "rq (sv_qp.rq_lock)",
	[SV_LOCK_MW] = "mw (core/mw.c mw_lock)",
	[SV_LOCK_KEYS] = "keys (core/keys.c tab_lock)",
	[SV_LOCK_PUBTAB] = "pubtab (core/pubtab.c own_lock)",
	[SV_LOCK_CQ_MOD] = "cq_mod (core/cq_mod.c mod.lock)",
	[SV_LOCK_KICK] = "kick (sv_engine.kick_lock)",
	[SV_LOCK_SRQ] = "srq (sv_srq.lock)",
	[SV_LOCK_CQ] = "cq (sv_cq.lock)",
	[SV_LOCK_CTX] = "ctx (sv_context.lock)",
	[SV_LOCK_SHARE] = "share (verbs/share.c share_lock)",
	[SV_LOCK_XRC] = "xrc (core/xrc.c xrc_lock)",
	[SV_LOCK_XRC_SRQ_TAB] = "xrc_srq_tab (core/xrc.c srq_tab_lock)",
	[SV_LOCK_MR_DRAIN] = "mr_drain (core/keys.c drain_lock)",
	[SV_LOCK_SRQ_DRAIN] = "srq_drain (core/xrc.c srq_drain_lock)",
	[SV_LOCK_XRC_FWD] = "xrc_fwd (engine/forward/xrcfwd.c)",
	[SV_LOCK_IBV_EVENTS] = "ibv_events (ibv_cq/qp/srq.mutex)",
	[SV_LOCK_STATSEG] = "statseg (engine/diag/statseg.c seg_lock)",
	[SV_LOCK_SHM_REG] = "shm_reg (link/shm.c reg_lock)",
	[SV_LOCK_READLOCK_REG] = "readlock_reg (sv_readlock.reg)",
	[SV_LOCK_PCAP] = "pcap (engine/diag/pcap.c lock)",
	[SV_LOCK_GIDS] = "gids (core/gids.c gids.lock)",
	[SV_LOCK_ENV] = "env (util/env.c env_lock)",
	[SV_LOCK_RS_TABLE] = "rs_table (cm/rs_core.c rs_table_lock)",
};

struct held {
	const void *lock;
	enum sv_lock_rank rank;
	const char *file;
	int line;
};

/* Inherited by a forked child with the forking thread's locks, as the
 * child's copies of those mutexes are. */
static __thread struct {
	unsigned int n;
	struct held h[SV_LOCKORDER_DEPTH];
} held;

const char *sv_lock_name(enum sv_lock_rank r)
{
	if ((unsigned int)r >= SV_LOCK_NRANKS || !names[r])
		return "?";
	return names[r];
}

static void fail(const char *what, const void *lock, enum sv_lock_rank r,
		 const char *file, int line, const struct held *h)
{
	if (h)
		fprintf(stderr,
			"softverbs: lock order: %s %s [rank %d] at %s:%d "
			"while holding %s [rank %d] taken at %s:%d "
			"(util/lockorder.h)\n",
			what, sv_lock_name(r), (int)r, file, line,
			sv_lock_name(h->rank), (int)h->rank, h->file, h->line);
	else
		fprintf(stderr,
			"softverbs: lock order: %s %p [rank %d] at %s:%d "
			"(util/lockorder.h)\n",
			what, lock, (int)r, file, line);
	fflush(stderr);
	abort();
}

static struct held *find(const void *lock)
{
	unsigned int i;

	for (i = held.n; i-- > 0;)
		if (held.h[i].lock == lock)
			return &held.h[i];
	return NULL;
}

void sv_lockorder_will(const void *lock, enum sv_lock_rank r, bool relock_ok,
		       const char *file, int line)
{
	unsigned int i;

	if (relock_ok && find(lock))
		return; /* EDEADLK comes back: no wait */
	for (i = 0; i < held.n; i++) {
		const struct held *h = &held.h[i];

		if (h->lock == lock)
			fail("taking again", lock, r, file, line, h);
		if (h->rank >= r)
			fail("taking", lock, r, file, line, h);
	}
}

void sv_lockorder_got(const void *lock, enum sv_lock_rank r, const char *file,
		      int line)
{
	struct held *h = find(lock);

	/* A trylock comes here only: the same lock twice would be a
	 * recursive mutex, which softverbs does not use. */
	if (h)
		fail("holding twice", lock, r, file, line, h);
	if (r <= SV_LOCK_NONE || r >= SV_LOCK_NRANKS)
		fail("taking unranked lock", lock, r, file, line, NULL);
	if (held.n == SV_LOCKORDER_DEPTH)
		fail("too deep at", lock, r, file, line, &held.h[held.n - 1]);
	held.h[held.n++] = (struct held){ lock, r, file, line };
}

void sv_lockorder_drop(const void *lock, const char *file, int line)
{
	struct held *h = find(lock);
	unsigned int i;

	if (!h)
		fail("releasing a lock not held:", lock, SV_LOCK_NONE, file,
		     line, NULL);
	/* Out of order releases are fine (chan.c lets go of sq_lock to
	 * take the engine lock): close the gap. */
	for (i = (unsigned int)(h - held.h); i + 1 < held.n; i++)
		held.h[i] = held.h[i + 1];
	held.n--;
}

void sv_lockorder_wait(const void *lock, const char *file, int line)
{
	struct held *h = find(lock);
	unsigned int i;

	if (!h)
		fail("waiting without its mutex", lock, SV_LOCK_NONE, file,
		     line, NULL);
	/* The wait takes the mutex back while the thread still holds the
	 * others: none may be above it. */
	for (i = 0; i < held.n; i++)
		if (held.h[i].rank > h->rank)
			fail("waiting on (and retaking)", lock, h->rank, file,
			     line, &held.h[i]);
}

unsigned int sv_lockorder_held(void)
{
	return held.n;
}
