/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The memory key table: lkey -> MR and rkey -> MR, and the access
 * predicate the data path applies to every local and remote access.
 *
 * Keys are drawn from getrandom(2), lkey and rkey independently, never 0
 * and unique within their table, so a remote peer cannot derive a valid
 * rkey from one it has seen.  Both tables are open-addressing hash tables
 * (linear probing, backward-shift deletion) behind one read-mostly lock
 * (tab_lock, below): lookups share it, publish/unpublish take it
 * exclusively.
 *
 * Lifetime: a lookup returns the MR with mr->refs raised; unpublish marks
 * the MR invalid and removes both keys under the write lock (so no new
 * reference can be taken), then sleeps until the references drain.  Only
 * then may the caller change or free the MR.
 */
#include "core/mr.h"

#include "core/pubtab.h"
#include "util/lockorder.h"
#include "util/readlock.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

struct key_slot {
	uint32_t key; /* 0 = empty */
	struct sv_mr *mr;
};

struct key_table {
	struct key_slot *slots;
	uint32_t cap; /* power of 2, or 0 before first use */
	uint32_t used;
};

/* wtab: memory windows by key index (rkey >> 8, bit 23 always set). */
static struct key_table ltab, rtab, wtab;
/*
 * The tables' lock (util/readlock.h): every key lookup of the data path
 * reads, on both sides of every message; register, deregister and the
 * windows write.  Readers announce themselves with a plain store, so a
 * lookup adds no locked instruction to a SEND; writers pay a membarrier.
 * No reader takes it twice, and no one blocks while holding it except for
 * the other side's short sections.
 */
static struct sv_readlock tab_lock;

static void key_pool_forget(void);

__attribute__((constructor)) static void keys_init(void)
{
	sv_readlock_init(&tab_lock);
	pthread_atfork(NULL, NULL, key_pool_forget);
}

/* Wakes unpublish when the last reference of an invalid MR goes. */
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t drain_cond = PTHREAD_COND_INITIALIZER;

static uint32_t slot_of(const struct key_table *t, uint32_t key)
{
	/* Keys are random already; the multiply keeps non-random keys
	 * (memory windows may come later) from clustering. */
	return (key * 0x9E3779B1u) & (t->cap - 1);
}

static struct key_slot *tab_find(const struct key_table *t, uint32_t key)
{
	uint32_t i;

	if (!t->cap)
		return NULL;
	for (i = slot_of(t, key); t->slots[i].key; i = (i + 1) & (t->cap - 1))
		if (t->slots[i].key == key)
			return &t->slots[i];
	return NULL;
}

static void tab_put(struct key_table *t, uint32_t key, struct sv_mr *mr)
{
	uint32_t i = slot_of(t, key);

	while (t->slots[i].key)
		i = (i + 1) & (t->cap - 1);
	t->slots[i].key = key;
	t->slots[i].mr = mr;
	t->used++;
}

/* Keep the load factor at or below 1/2 so probes stay short. */
static int tab_reserve(struct key_table *t)
{
	struct key_slot *old = t->slots;
	uint32_t i, old_cap = t->cap;
	uint32_t cap = old_cap ? old_cap : 64;

	if ((uint64_t)(t->used + 1) * 2 <= old_cap)
		return 0;
	while ((uint64_t)(t->used + 1) * 2 > cap) {
		if (cap >= (1u << 30))
			return ENOMEM;
		cap <<= 1;
	}
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return ENOMEM;
	}
	t->cap = cap;
	t->used = 0;
	for (i = 0; i < old_cap; i++)
		if (old[i].key)
			tab_put(t, old[i].key, old[i].mr);
	free(old);
	return 0;
}

/* Backward-shift deletion: later entries of the probe run move into the
 * hole when their home slot allows, so lookups never need tombstones. */
static void tab_del(struct key_table *t, struct key_slot *s)
{
	uint32_t mask = t->cap - 1;
	uint32_t hole = (uint32_t)(s - t->slots);
	uint32_t i = hole;

	for (;;) {
		uint32_t home;

		i = (i + 1) & mask;
		if (!t->slots[i].key)
			break;
		home = slot_of(t, t->slots[i].key);
		/* Move i into the hole unless its home lies cyclically in
		 * (hole, i]. */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			t->slots[hole] = t->slots[i];
			hole = i;
		}
	}
	t->slots[hole].key = 0;
	t->slots[hole].mr = NULL;
	t->used--;
}

/* A random key, not 0, unique in t, with the bits of `clear` clear and
 * those of `set` set. */
/* Random bits for keys, drawn 64 keys at a time (a getrandom call per key
 * was a tenth of a registration); used under tab_lock, written.  A forked
 * child draws its own: it must not repeat its parent's next keys. */
static uint32_t key_pool[64];
static unsigned int key_pool_left;

static void key_pool_forget(void)
{
	key_pool_left = 0;
}

static int fresh_key(const struct key_table *t, uint32_t clear, uint32_t set,
		     uint32_t *key)
{
	unsigned int left = key_pool_left;
	uint32_t k;

	do {
		if (!left) {
			if (getrandom(key_pool, sizeof(key_pool), 0) !=
			    sizeof(key_pool))
				return errno ? errno : EIO;
			left = sizeof(key_pool) / sizeof(key_pool[0]);
		}
		k = (key_pool[--left] & ~clear) | set;
	} while (!k || tab_find(t, k));
	key_pool_left = left;
	*key = k;
	return 0;
}

static void drain(struct sv_mr *mr);

int sv_mr_publish(struct sv_mr *mr)
{
	uint32_t lkey, rkey;
	int err;

	sv_write_lock(&tab_lock, SV_LOCK_KEYS);
	err = tab_reserve(&ltab);
	if (!err)
		err = tab_reserve(&rtab);
	if (!err)
		err = fresh_key(&ltab, 0, 0, &lkey);
	/* Region R_Keys leave bit 31 to memory windows. */
	if (!err)
		err = fresh_key(&rtab, SV_MW_KEY_BIT, 0, &rkey);
	if (!err) {
		mr->ibv.lkey = lkey;
		mr->ibv.rkey = rkey;
		atomic_store(&mr->state, SV_MR_VALID);
		tab_put(&ltab, lkey, mr);
		tab_put(&rtab, rkey, mr);
	}
	sv_write_unlock(&tab_lock);
	if (!err)
		sv_pubtab_mr_add(
			mr); /* same-host peers may now copy directly */
	return err;
}

void sv_mr_unpublish(struct sv_mr *mr)
{
	struct key_slot *s;

	/* Peers copying directly first: returns once none does. */
	sv_pubtab_mr_del(mr);
	sv_write_lock(&tab_lock, SV_LOCK_KEYS);
	atomic_store(&mr->state, SV_MR_INVALID);
	s = tab_find(&ltab, mr->ibv.lkey);
	if (s && s->mr == mr)
		tab_del(&ltab, s);
	s = tab_find(&rtab, mr->ibv.rkey);
	if (s && s->mr == mr)
		tab_del(&rtab, s);
	sv_write_unlock(&tab_lock);

	/* No new reference can be taken now; wait for the old ones. */
	drain(mr);
}

void sv_mr_suspend(struct sv_mr *mr)
{
	sv_pubtab_mr_del(mr);
	sv_write_lock(&tab_lock, SV_LOCK_KEYS);
	atomic_store(&mr->state, SV_MR_INVALID);
	sv_write_unlock(&tab_lock);
	drain(mr);
}

void sv_mr_resume(struct sv_mr *mr)
{
	sv_write_lock(&tab_lock, SV_LOCK_KEYS);
	atomic_store(&mr->state, SV_MR_VALID);
	sv_write_unlock(&tab_lock);
	sv_pubtab_mr_add(mr);
}

static struct sv_mr *get_by_key(const struct key_table *t, uint32_t key)
{
	struct sv_mr *mr = NULL;
	struct key_slot *s;

	if (!key)
		return NULL;
	sv_read_lock(&tab_lock, SV_LOCK_KEYS);
	if (t == &rtab && (key & SV_MW_KEY_BIT)) {
		/* A window: its index finds it, the whole key must match
		 * (a stale tag names an earlier binding). */
		s = tab_find(&wtab, key >> 8);
		if (s && s->mr->ibv.rkey != key)
			s = NULL;
	} else {
		s = tab_find(t, key);
	}
	if (s && atomic_load(&s->mr->state) == SV_MR_VALID) {
		mr = s->mr;
		atomic_fetch_add(&mr->refs, 1);
	}
	sv_read_unlock(&tab_lock);
	return mr;
}

struct sv_mr *sv_mr_get_by_lkey(uint32_t lkey)
{
	return get_by_key(&ltab, lkey);
}

struct sv_mr *sv_mr_get_by_rkey(uint32_t rkey)
{
	return get_by_key(&rtab, rkey);
}

void sv_mr_read_lock(void)
{
	sv_read_lock(&tab_lock, SV_LOCK_KEYS);
}

void sv_mr_read_unlock(void)
{
	sv_read_unlock(&tab_lock);
}

struct sv_mr *sv_mr_find_lkey_locked(uint32_t lkey)
{
	struct key_slot *s;

	/* Under the read lock unpublish cannot start removing the keys,
	 * so a valid MR found here stays valid (and allocated) until
	 * sv_mr_read_unlock: no reference is needed. */
	if (!lkey)
		return NULL;
	s = tab_find(&ltab, lkey);
	if (s && atomic_load_explicit(&s->mr->state, memory_order_relaxed) ==
			 SV_MR_VALID)
		return s->mr;
	return NULL;
}

struct sv_mr *sv_mr_find_rkey_locked(uint32_t rkey)
{
	struct key_slot *s;

	if (!rkey)
		return NULL;
	if (rkey & SV_MW_KEY_BIT) {
		/* A window: as get_by_key finds it. */
		s = tab_find(&wtab, rkey >> 8);
		if (s && s->mr->ibv.rkey != rkey)
			s = NULL;
	} else {
		s = tab_find(&rtab, rkey);
	}
	if (s && atomic_load_explicit(&s->mr->state, memory_order_relaxed) ==
			 SV_MR_VALID)
		return s->mr;
	return NULL;
}

void sv_mr_put(struct sv_mr *mr)
{
	/* Nothing of the MR may be touched after the decrement: once the
	 * count is zero the waiter in drain() may free it.  So whether to
	 * wake it is decided before, from the state; a waiter that began
	 * waiting in between (the MR turned invalid after our load) is not
	 * woken by us and finds the count at zero at its next timed check. */
	bool dying = atomic_load(&mr->state) != SV_MR_VALID;

	if (atomic_fetch_sub(&mr->refs, 1) == 1 && dying) {
		sv_mutex_lock(&drain_lock, SV_LOCK_MR_DRAIN);
		pthread_cond_broadcast(&drain_cond);
		sv_mutex_unlock(&drain_lock);
	}
}

void *sv_mr_check(struct sv_mr *mr, struct sv_pd *pd, uint64_t iova,
		  uint64_t len, unsigned int access)
{
	if (!mr || atomic_load(&mr->state) != SV_MR_VALID)
		return NULL;
	/* IBA 10.6.3.1 / C9-88: the MR's PD must be the QP's PD. */
	if (mr->pd != pd)
		return NULL;
	/* Every requested right must have been granted at registration;
	 * local read (access 0) is always granted. */
	if (access & ~mr->access)
		return NULL;
	/* Bounds without overflow: iova + len may wrap, these cannot. */
	if (iova < mr->iova || len > mr->length ||
	    iova - mr->iova > mr->length - len)
		return NULL;
	return (void *)(mr->va + (uintptr_t)(iova - mr->iova));
}

enum sv_mr_fault sv_mr_fault(struct sv_mr *mr, struct sv_qp *qp,
			     struct sv_pd *pd, uint64_t iova, uint64_t len,
			     unsigned int access)
{
	/* The checks of sv_mr_check_qp and sv_mr_check, in their order. */
	if (!mr)
		return SV_MR_FAULT_KEY;
	if (mr->bound_qp && mr->bound_qp != qp)
		return SV_MR_FAULT_QP;
	if (atomic_load(&mr->state) != SV_MR_VALID)
		return SV_MR_FAULT_INVALID;
	if (mr->pd != pd)
		return SV_MR_FAULT_PD;
	if (access & ~mr->access)
		return SV_MR_FAULT_RIGHTS;
	if (iova < mr->iova || len > mr->length ||
	    iova - mr->iova > mr->length - len)
		return SV_MR_FAULT_BOUNDS;
	return SV_MR_FAULT_NONE;
}

void *sv_mr_check_qp(struct sv_mr *mr, struct sv_qp *qp, struct sv_pd *pd,
		     uint64_t iova, uint64_t len, unsigned int access)
{
	if (mr && mr->bound_qp && mr->bound_qp != qp)
		return NULL;
	return sv_mr_check(mr, pd, iova, len, access);
}

/* ---- memory window keys --------------------------------------------------- */

int sv_mw_key_reserve(struct sv_mr *view)
{
	uint32_t index, tag;
	int err;

	sv_write_lock(&tab_lock, SV_LOCK_KEYS);
	err = tab_reserve(&wtab);
	/* 24-bit index with bit 23 set: the key's bit 31. */
	if (!err)
		err = fresh_key(&wtab, 0xff000000u, 0x00800000u, &index);
	if (!err && getrandom(&tag, sizeof(tag), 0) != sizeof(tag))
		err = errno ? errno : EIO;
	if (!err) {
		view->ibv.rkey = (index << 8) | (tag & 0xff);
		atomic_store(&view->state, SV_MR_INVALID);
		tab_put(&wtab, index, view);
	}
	sv_write_unlock(&tab_lock);
	return err;
}

/* Wait until no lookup holds a reference (the MR or view is invalid:
 * none can be taken any more).  Woken by the last sv_mr_put that saw the
 * MR invalid; checks again every millisecond for one that did not. */
static void drain(struct sv_mr *mr)
{
	sv_mutex_lock(&drain_lock, SV_LOCK_MR_DRAIN);
	while (atomic_load(&mr->refs) > 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		sv_cond_timedwait(&drain_cond, &drain_lock, &ts);
	}
	sv_mutex_unlock(&drain_lock);
}

void sv_mw_key_unpublish(struct sv_mr *view)
{
	sv_write_lock(&tab_lock, SV_LOCK_KEYS);
	atomic_store(&view->state, SV_MR_INVALID);
	sv_write_unlock(&tab_lock);
	drain(view);
}

void sv_mw_key_publish(struct sv_mr *view, uint32_t rkey, bool valid)
{
	sv_write_lock(&tab_lock, SV_LOCK_KEYS);
	view->ibv.rkey = rkey;
	if (valid)
		atomic_store(&view->state, SV_MR_VALID);
	sv_write_unlock(&tab_lock);
}

void sv_mw_key_release(struct sv_mr *view)
{
	struct key_slot *s;

	sv_write_lock(&tab_lock, SV_LOCK_KEYS);
	atomic_store(&view->state, SV_MR_INVALID);
	s = tab_find(&wtab, view->ibv.rkey >> 8);
	if (s && s->mr == view)
		tab_del(&wtab, s);
	sv_write_unlock(&tab_lock);
	drain(view);
}

struct sv_mr *sv_mw_key_find(uint32_t index)
{
	struct sv_mr *view = NULL;
	struct key_slot *s;

	if (!index || index > 0xffffff)
		return NULL;
	sv_read_lock(&tab_lock, SV_LOCK_KEYS);
	s = tab_find(&wtab, index);
	if (s)
		view = s->mr;
	sv_read_unlock(&tab_lock);
	return view;
}
