/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Memory windows at the API: the alloc_mw and dealloc_mw context ops
 * behind verbs.h's inline ibv_alloc_mw and ibv_dealloc_mw.  The windows
 * themselves live in core/mw.c; a bind is a work request (IBV_WR_BIND_MW)
 * the requester executes in send queue order, posted by ibv_bind_mw for
 * type 1 windows (the bind_mw op, verbs/post.c) and by ibv_post_send /
 * ibv_wr_bind_mw for type 2.
 */
#include "verbs/verbs.h"

#include "core/mw.h"
#include "verbs/objcheck.h"
#include "verbs/share.h"

struct ibv_mw *sv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct sv_mw *mw;
	int err;

	if (sv_check_pd(pd, "ibv_alloc_mw"))
		return sv_null_errno(EINVAL);
	mw = sv_mw_new(sv_pd_real(to_sv_pd(pd)), type); /* a parent's PD */
	if (!mw)
		return NULL;
	err = sv_share_add(pd->context, SV_SHARE_MW, mw, &mw->ibv.handle);
	if (err) {
		sv_mw_free(mw);
		return sv_null_errno(err);
	}
	/* The handle the caller holds (an imported PD's, not its real
	 * PD's, with its own context). */
	mw->ibv.context = pd->context;
	mw->ibv.pd = pd;
	return &mw->ibv;
}

int sv_dealloc_mw(struct ibv_mw *ibmw)
{
	if (sv_check_mw(ibmw, "ibv_dealloc_mw"))
		return EINVAL;
	sv_share_del(ibmw->context, ibmw->handle, to_sv_mw(ibmw));
	sv_mw_free(to_sv_mw(ibmw));
	return 0;
}
