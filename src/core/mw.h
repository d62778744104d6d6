/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Memory windows: a window grants remote access to part of a region
 * (IBA 10.6.7).  Type 1 windows belong to their PD and are bound with
 * ibv_bind_mw; type 2 windows are bound to one QP by a BIND_MW work
 * request and freed again by LOCAL_INV or a SEND_WITH_INV from the peer.
 * Binds and invalidations run in send-queue order, in the requester
 * (engine/transport/req.c, run_local_op), or in the responder for SEND_WITH_INV.
 *
 * The data path never sees an sv_mw: it sees the window's view, an
 * sv_mr whose PD, range, rights and bound QP are the window's, published
 * under the window's current R_Key in the key table (core/keys.c).  A
 * remote access through a window is therefore checked against the window
 * by the same predicate as one through a region (sv_mr_check_qp).  The
 * region a window is bound to cannot be deregistered (EBUSY), so the
 * view's address stays valid while the window is bound.
 *
 * Lock contract: one process-wide lock (mw_lock in mw.c) serialises every
 * change of a window's binding, the windows' list, and the mw_binds
 * count of regions.  It nests inside the engine lock and outside the key
 * table's lock; nobody holding a key reference takes it.
 */
#ifndef SV_CORE_MW_H
#define SV_CORE_MW_H

#include "core/objects.h"

#define SV_MAX_MW (1 << 20)

struct sv_mw {
	struct ibv_mw ibv; /* first: what the application holds */
	struct sv_mr view; /* what the key table and data path see */
	struct sv_pd *pd;
	struct sv_mr *mr; /* the bound region; NULL when unbound */
	struct sv_qp *qp; /* type 2: the QP it is bound to */
	uint32_t index; /* the key's fixed part: rkey >> 8 */
	bool bound; /* type 2: VALID rather than FREE */
	struct list_node node; /* every window of the process (mw_lock) */
};

static inline struct sv_mw *to_sv_mw(struct ibv_mw *m)
{
	return sv_container_of(m, struct sv_mw, ibv);
}

/* A new unbound window on pd (NULL and errno: EINVAL, ENOMEM). */
struct sv_mw *sv_mw_new(struct sv_pd *pd, enum ibv_mw_type type);
/* Unbind (if bound), wait out accesses in flight, and free. */
void sv_mw_free(struct sv_mw *mw);

/* The send-queue operations, executed for qp.  IBV_WC_SUCCESS or
 * IBV_WC_MW_BIND_ERR (IBA 10.6.7.2.x: an invalid bind or invalidate is a
 * memory window bind error). */
enum ibv_wc_status sv_mw_bind(struct sv_qp *qp, const struct sv_send_wqe *wqe);
enum ibv_wc_status sv_mw_local_inv(struct sv_qp *qp, uint32_t rkey);
/* SEND_WITH_INV received on qp for rkey: 0, or EINVAL when rkey names no
 * type 2 window bound to qp. */
int sv_mw_remote_inv(struct sv_qp *qp, uint32_t rkey);

/* qp is being destroyed: type 2 windows bound to it become free. */
void sv_mw_qp_gone(struct sv_qp *qp);

/* Deregistration (or re-registration) of mr is about to start: EBUSY if
 * windows are bound to it, else 0 and no bind can take it any more. */
int sv_mw_mr_retire(struct sv_mr *mr);

#endif
