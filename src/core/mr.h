/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Memory regions as the data path sees them: key lookup and the one
 * predicate that decides whether an access is allowed.
 *
 * Keys are random 32-bit values (lkey and rkey drawn independently), so a
 * key cannot be guessed from another key or from earlier keys.  Lookups
 * take a reference; deregistration removes the keys first and then waits
 * for references to drain, so a packet in flight never meets a freed MR.
 */
#ifndef SV_CORE_MR_H
#define SV_CORE_MR_H

#include "core/objects.h"

/* Assign fresh lkey/rkey to mr->ibv and publish it (0 or errno). */
int sv_mr_publish(struct sv_mr *mr);
/* Remove the keys and wait until no lookup holds a reference. */
void sv_mr_unpublish(struct sv_mr *mr);
/* Around a change of a published region (ibv_rereg_mr): suspend makes
 * every lookup of its keys fail and waits out the users in flight, as
 * unpublish does, but the keys stay reserved; resume makes the region,
 * as it now is, reachable again under the same keys (an HCA keeps them
 * across a rereg, and peers hold the R_Key they were given). */
void sv_mr_suspend(struct sv_mr *mr);
void sv_mr_resume(struct sv_mr *mr);

/* Find a valid MR by key, with a reference held (NULL if none). */
struct sv_mr *sv_mr_get_by_lkey(uint32_t lkey);
struct sv_mr *sv_mr_get_by_rkey(uint32_t rkey);
void sv_mr_put(struct sv_mr *mr);
/* The key table's read lock, for a short section that uses MRs without
 * references: while it is held no MR can be unpublished (deregistered,
 * re-registered).  Hold it briefly (writers wait) and never take it twice,
 * nor call any other sv_mr_ or sv_mw_ key function meanwhile. */
void sv_mr_read_lock(void);
void sv_mr_read_unlock(void);
struct sv_mr *sv_mr_find_lkey_locked(uint32_t lkey);
/* The same for an R_Key (a region's or a bound window's). */
struct sv_mr *sv_mr_find_rkey_locked(uint32_t rkey);

/* May [iova, iova+len) of mr be accessed with `access` (IBV_ACCESS_* bits,
 * 0 = local read) on behalf of pd?  Overflow-safe.  Returns the local
 * pointer for iova, or NULL. */
void *sv_mr_check(struct sv_mr *mr, struct sv_pd *pd, uint64_t iova,
		  uint64_t len, unsigned int access);

/* The check of a remote access arriving on qp (R_Key of a region or of
 * a window): sv_mr_check with pd (the QP's, or for an XRC target the
 * SRQ's), and a type 2 window answers only the QP it is bound to (IBA
 * 10.6.7.2.x, type 2B windows). */
void *sv_mr_check_qp(struct sv_mr *mr, struct sv_qp *qp, struct sv_pd *pd,
		     uint64_t iova, uint64_t len, unsigned int access);

/* Which rule of sv_mr_check_qp refused an access (for the log and the
 * counters of a refusal; the data path itself only asks sv_mr_check_qp). */
enum sv_mr_fault {
	SV_MR_FAULT_NONE,
	SV_MR_FAULT_KEY, /* no region or window has the key */
	SV_MR_FAULT_QP, /* a type 2 window bound to another QP */
	SV_MR_FAULT_INVALID, /* being deregistered, or a window unbound */
	SV_MR_FAULT_PD, /* another PD than the QP's */
	SV_MR_FAULT_RIGHTS, /* a right not granted */
	SV_MR_FAULT_BOUNDS, /* outside the region or window */
};
enum sv_mr_fault sv_mr_fault(struct sv_mr *mr, struct sv_qp *qp,
			     struct sv_pd *pd, uint64_t iova, uint64_t len,
			     unsigned int access);

/*
 * Memory window keys.  A window's R_Key is (index << 8) | tag: the index
 * is fixed for the window's life, the 8-bit tag changes with each bind
 * (man ibv_inc_rkey).  Window keys have bit 31 set and region R_Keys
 * have it clear, so the two never collide however tags change.  The
 * window's view (an sv_mr) is found by rkey like a region, with the same
 * references and drain discipline.
 */
#define SV_MW_KEY_BIT 0x80000000u

/* Give view a fresh index (and a random tag) and enter it in the window
 * table, unpublished (state invalid).  0 or errno. */
int sv_mw_key_reserve(struct sv_mr *view);
/* Unpublish and remove from the table; no lookup can find it after. */
void sv_mw_key_release(struct sv_mr *view);
/* The view with this index, or NULL.  No reference is taken: the caller
 * serialises with sv_mw_key_release (core/mw.c's lock). */
struct sv_mr *sv_mw_key_find(uint32_t index);
/* Make rkey (same index) the view's key; valid: and accept accesses
 * through it (else it stays unpublished). */
void sv_mw_key_publish(struct sv_mr *view, uint32_t rkey, bool valid);
/* Refuse new accesses and wait until none holds a reference. */
void sv_mw_key_unpublish(struct sv_mr *view);

#endif
