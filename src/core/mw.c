/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Memory windows: allocation, binding and invalidation (see mw.h for the
 * model and the lock contract).  The rules are IBA 10.6.7's, numbered as
 * the specification numbers them where a check implements one.
 */
#include "core/mw.h"

#include <errno.h>
#include <stdlib.h>

#include "core/mr.h"
#include "util/lockorder.h"

static pthread_mutex_t mw_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head mw_all = LIST_HEAD_INIT(mw_all);
static unsigned int mw_count;

/* Rights a window may grant; the optional-range bits are hints. */
#define SV_MW_ACCESS_KNOWN                                  \
	(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED | \
	 IBV_ACCESS_LOCAL_WRITE)
#define SV_MW_ACCESS_REMOTE                                 \
	(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_ATOMIC)

struct sv_mw *sv_mw_new(struct sv_pd *pd, enum ibv_mw_type type)
{
	struct sv_mw *mw;
	int err;

	if (!pd || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	mw->pd = pd;
	mw->ibv.context = pd->ibv.context;
	mw->ibv.pd = &pd->ibv;
	mw->ibv.type = type;
	mw->view.pd = pd;
	atomic_init(&mw->view.refs, 0);
	atomic_init(&mw->view.state, SV_MR_INVALID);
	sv_mutex_lock(&mw_lock, SV_LOCK_MW);
	err = mw_count >= SV_MAX_MW ? ENOMEM : sv_mw_key_reserve(&mw->view);
	if (!err) {
		mw_count++;
		list_add_tail(&mw_all, &mw->node);
		atomic_fetch_add(&pd->users, 1);
	}
	sv_mutex_unlock(&mw_lock);
	if (err) {
		free(mw);
		errno = err;
		return NULL;
	}
	mw->ibv.rkey = mw->view.ibv.rkey;
	mw->index = mw->ibv.rkey >> 8;
	return mw;
}

/* Take the binding away: no access after this returns (mw_lock held). */
static void unbind(struct sv_mw *mw)
{
	if (!mw->bound)
		return;
	sv_mw_key_unpublish(&mw->view);
	mw->mr->mw_binds--;
	mw->mr = NULL;
	mw->qp = NULL;
	mw->view.bound_qp = NULL;
	mw->bound = false;
}

void sv_mw_free(struct sv_mw *mw)
{
	struct sv_pd *pd = mw->pd;

	/* Removed from the table under the lock: a bind looking the window
	 * up by its index either ran before or finds nothing. */
	sv_mutex_lock(&mw_lock, SV_LOCK_MW);
	unbind(mw);
	sv_mw_key_release(&mw->view);
	list_del(&mw->node);
	mw_count--;
	sv_mutex_unlock(&mw_lock);
	atomic_fetch_sub(&pd->users, 1);
	free(mw);
}

/* The window a WQE names, if it still exists (mw_lock held). */
static struct sv_mw *find(uint32_t index, const struct sv_mw *expect)
{
	struct sv_mr *view = sv_mw_key_find(index);
	struct sv_mw *mw;

	if (!view)
		return NULL;
	mw = sv_container_of(view, struct sv_mw, view);
	return !expect || mw == expect ? mw : NULL;
}

/* The region checks of a bind (mw_lock held): C10-73..75. */
static bool region_ok(const struct sv_mw *mw, const struct sv_mr *mr,
		      uint64_t addr, uint64_t len, unsigned int access)
{
	if (atomic_load(&mr->state) != SV_MR_VALID)
		return false; /* being deregistered */
	/* The region, the window and the QP share one PD. */
	if (mr->pd != mw->pd)
		return false;
	/* C10-73: the region was registered for window binding. */
	if (!(mr->access & IBV_ACCESS_MW_BIND))
		return false;
	/* C10-74: remote write or atomic through the window needs local
	 * write on the region. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return false;
	/* C10-75: the window lies inside the region (overflow-safe). */
	return addr >= mr->iova && len <= mr->length &&
	       addr - mr->iova <= mr->length - len;
}

enum ibv_wc_status sv_mw_bind(struct sv_qp *qp, const struct sv_send_wqe *wqe)
{
	unsigned int access = wqe->wr.bind.access & ~IBV_ACCESS_OPTIONAL_RANGE;
	uint64_t addr = wqe->wr.bind.addr, len = wqe->wr.bind.length;
	enum ibv_wc_status st = IBV_WC_MW_BIND_ERR;
	struct sv_mr *mr = NULL;
	struct sv_mw *mw;
	uint32_t rkey;
	bool type2;

	/* The region's reference is taken before mw_lock: that is safe
	 * because no one drains a region's references under mw_lock
	 * (deregistration retires the region under it, then drains). */
	if (len) {
		mr = sv_mr_get_by_lkey(wqe->wr.bind.mr_lkey);
		if (!mr)
			return IBV_WC_MW_BIND_ERR;
	}
	sv_mutex_lock(&mw_lock, SV_LOCK_MW);
	mw = find(wqe->wr.bind.index, wqe->wr.bind.mw);
	if (!mw)
		goto out;
	type2 = mw->ibv.type == IBV_MW_TYPE_2;
	/* The QP and the window share their PD (C10-72, for both types
	 * in the current specification). */
	if (mw->pd != qp->pd)
		goto out;
	if (access & ~SV_MW_ACCESS_KNOWN)
		goto out;
	if (type2) {
		/* o10-37.2.30: only a free type 2 window can be bound;
		 * o10-37.2.40: and never with a zero length. */
		if (mw->bound || !len)
			goto out;
	} else if (access & IBV_ACCESS_ZERO_BASED) {
		goto out; /* o10-36.2.2: type 1 windows are VA-based */
	}
	if (mr && !region_ok(mw, mr, addr, len, access))
		goto out;

	/* A type 1 window may be bound again while bound: the old binding
	 * ends first, and no access sees a half-made new one. */
	unbind(mw);
	rkey = (mw->view.ibv.rkey & ~0xffu) | (wqe->wr.bind.rkey & 0xffu);
	if (len) {
		mw->view.iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : addr;
		mw->view.va = mr->va + (uintptr_t)(addr - mr->iova);
		mw->view.length = len;
		mw->view.access = access & SV_MW_ACCESS_REMOTE;
		mw->view.bound_qp = type2 ? qp : NULL;
		mw->mr = mr;
		mw->qp = type2 ? qp : NULL;
		mw->bound = true;
		mr->mw_binds++;
	}
	/* The new key (its tag changes even when unbinding a type 1
	 * window), published when there is a binding. */
	sv_mw_key_publish(&mw->view, rkey, len != 0);
	st = IBV_WC_SUCCESS;
out:
	sv_mutex_unlock(&mw_lock);
	if (mr)
		sv_mr_put(mr);
	return st;
}

/* The type 2 window rkey names, for an invalidation (mw_lock held). */
static struct sv_mw *inv_target(struct sv_qp *qp, uint32_t rkey)
{
	struct sv_mw *mw;

	/* Region keys cannot be invalidated: only fast-registered regions
	 * can, and there is no such thing through ibv_reg_mr. */
	if (!(rkey & SV_MW_KEY_BIT))
		return NULL;
	mw = find(rkey >> 8, NULL);
	if (!mw || mw->view.ibv.rkey != rkey || !mw->bound)
		return NULL;
	/* o10-37.2.26: type 1 windows are not invalidated by WRs. */
	if (mw->ibv.type != IBV_MW_TYPE_2)
		return NULL;
	if (mw->pd != qp->pd)
		return NULL;
	return mw;
}

enum ibv_wc_status sv_mw_local_inv(struct sv_qp *qp, uint32_t rkey)
{
	struct sv_mw *mw;

	sv_mutex_lock(&mw_lock, SV_LOCK_MW);
	mw = inv_target(qp, rkey);
	if (mw)
		unbind(mw);
	sv_mutex_unlock(&mw_lock);
	return mw ? IBV_WC_SUCCESS : IBV_WC_MW_BIND_ERR;
}

int sv_mw_remote_inv(struct sv_qp *qp, uint32_t rkey)
{
	struct sv_mw *mw;

	sv_mutex_lock(&mw_lock, SV_LOCK_MW);
	mw = inv_target(qp, rkey);
	/* Type 2B: only the QP the window is bound to may invalidate it. */
	if (mw && mw->qp != qp)
		mw = NULL;
	if (mw)
		unbind(mw);
	sv_mutex_unlock(&mw_lock);
	return mw ? 0 : EINVAL;
}

void sv_mw_qp_gone(struct sv_qp *qp)
{
	struct list_node *it;

	sv_mutex_lock(&mw_lock, SV_LOCK_MW);
	for (it = mw_all.n.next; it != &mw_all.n; it = it->next) {
		struct sv_mw *mw = list_entry(it, struct sv_mw, node);

		if (mw->bound && mw->qp == qp)
			unbind(mw);
	}
	sv_mutex_unlock(&mw_lock);
}

int sv_mw_mr_retire(struct sv_mr *mr)
{
	int err = 0;

	sv_mutex_lock(&mw_lock, SV_LOCK_MW);
	if (mr->mw_binds)
		err = EBUSY;
	else
		atomic_store(&mr->state, SV_MR_INVALID);
	sv_mutex_unlock(&mw_lock);
	return err;
}
