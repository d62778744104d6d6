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

struct ibv_mw *sv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct sv_mw *mw;

	if (!pd)
		return sv_null_errno(EINVAL);
	mw = sv_mw_new(sv_pd_real(to_sv_pd(pd)), type); /* a parent's PD */
	if (!mw)
		return NULL;
	/* The handle the caller holds (an imported PD's, not its real
	 * PD's, with its own context). */
	mw->ibv.context = pd->context;
	mw->ibv.pd = pd;
	return &mw->ibv;
}

int sv_dealloc_mw(struct ibv_mw *ibmw)
{
	if (!ibmw)
		return EINVAL;
	sv_mw_free(to_sv_mw(ibmw));
	return 0;
}
