/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The published table: what a process tells its same-host peers about its
 * memory regions and RC QPs, so that a peer may place RDMA WRITE and READ
 * data with one copy (process_vm_writev / process_vm_readv) instead of
 * sending packets (paths/direct.c, docs/fastpath.md).
 *
 * One memfd segment per process (MR keys are process-global), created on
 * first use unless SOFTVERBS_FASTPATH=0.  It mirrors every registered
 * region (rkey, PD token, iova, length, va, access) and every RC QP (QPN,
 * state, PD token, qp_access_flags, destination QPN).  Only the owner
 * writes entries; peers map the segment (through /proc/<pid>/fd/<fd>,
 * which needs the ptrace permission that cross-memory attach needs
 * anyway), look entries up and raise an entry's `users` count around each
 * access.  Removing or changing an entry makes it unusable first and then
 * waits (bounded) until `users` is 0: once ibv_dereg_mr, a QP state change
 * or ibv_destroy_qp returns, no peer copies through the old entry.
 * Memory windows are never published: their R_Keys are not found and the
 * packet path handles them.
 */
#ifndef SV_CORE_PUBTAB_H
#define SV_CORE_PUBTAB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/objects.h"

/* A process's published table as mapped here (ours or a peer's). */
struct sv_pubtab_view;

/* ---- the interface with the shm link (docs/fastpath.md) ----------------- */

/* This process's table memfd (created on first call), or -1 when the fast
 * path is off or the table cannot be created. */
int sv_pubtab_fd(void);
/* Map a peer's table (its pid and the fd number it advertises); NULL if it
 * cannot be opened or is not a table of that process.  The result is an
 * opaque handle for the lookups below. */
struct sv_pubtab_view *sv_pubtab_map(pid_t pid, int fd);
void sv_pubtab_unmap(struct sv_pubtab_view *tab);
/* Our own table as such a handle, or NULL if it does not exist: a helper
 * checks a peer's job against it as the peer did (paths/help.c). */
const struct sv_pubtab_view *sv_pubtab_own(void);

/* ---- owner side: mirror the key table and the QPs ------------------------ */

/* After the MR's keys are in the key table / before they are removed (the
 * latter returns once no peer uses the entry). */
void sv_pubtab_mr_add(const struct sv_mr *mr);
void sv_pubtab_mr_del(const struct sv_mr *mr);

/* An RC QP's responder attributes as peers must check them; accepting =
 * false (or qp_del) makes the entry refuse every access, after draining. */
struct sv_pubtab_qp {
	uint32_t qpn;
	uint32_t dest_qpn;
	uint32_t access; /* qp_access_flags */
	uint32_t max_dest_rd_atomic;
	int state; /* enum ibv_qp_state */
	uint64_t pd; /* sv_pubtab_pd_token() of its PD */
};
void sv_pubtab_qp_set(const struct sv_pubtab_qp *q);
void sv_pubtab_qp_del(uint32_t qpn);

static inline uint64_t sv_pubtab_pd_token(const struct sv_pd *pd)
{
	/* A PD outlives every MR and QP using it (dealloc_pd answers EBUSY
	 * meanwhile), and a peer compares the tokens only while it holds
	 * both the QP and the MR entry: the address identifies the PD. */
	return (uint64_t)(uintptr_t)pd;
}

/* ---- peer side: one remote access ---------------------------------------- */

struct sv_pubtab_hold {
	_Atomic uint32_t *qp_users;
	_Atomic uint32_t *mr_users;
	const void *mr; /* the MR entry held (sv_pubtab_again) */
};

/* The target process of a mapped table, and whether it is this one. */
pid_t sv_pubtab_pid(const struct sv_pubtab_view *tab);
bool sv_pubtab_is_self(const struct sv_pubtab_view *tab);
/* The target's /proc/PID/mem, open for reading and writing, or -1: small
 * copies through it skip the process lookup and permission check that
 * process_vm_writev/readv make at every call (paths/direct.c). */
int sv_pubtab_memfd(const struct sv_pubtab_view *tab);

/*
 * Check a remote access through the peer's table exactly as the peer's
 * responder would check the request (IBA 9.7.x, 10.6.3): the QP qpn is
 * connected to our QP my_qpn, in a state accepting requests, enabled for
 * the access (REMOTE_WRITE or REMOTE_READ), and for a READ (rd_atomic:
 * the requester's max_rd_atomic, else 0) with at least as many responder
 * resources as the requester may use (else the packet path shows what a
 * responder does when they run out); rkey names a valid region of the
 * same PD, granting the access, with [iova, iova+len) inside it.
 * On success both entries are held (h) and the address in the peer's
 * memory is returned; 0 otherwise (nothing held).
 */
uintptr_t sv_pubtab_acquire(const struct sv_pubtab_view *tab, uint32_t qpn,
			    uint32_t my_qpn, uint32_t rkey, uint64_t iova,
			    uint64_t len, unsigned int access,
			    uint32_t rd_atomic, struct sv_pubtab_hold *h);
void sv_pubtab_release(struct sv_pubtab_hold *h);
/* Another access of the same kind (QP, access, rd_atomic) through the
 * entries h holds: the address of [iova, iova+len) in the peer if rkey
 * is the held region's and it grants the access over that whole range,
 * else 0 (acquire it on its own).  No atomic operation: a held entry
 * cannot change (a batch of small WRITEs into one region checks each
 * against it, paths/direct.c). */
uintptr_t sv_pubtab_again(const struct sv_pubtab_hold *h, uint32_t rkey,
			  uint64_t iova, uint64_t len, unsigned int access);

#endif
