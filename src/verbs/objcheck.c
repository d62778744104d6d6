/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Object checks (objcheck.h): an object's handle and context against its
 * context's share.
 */
#include "verbs/objcheck.h"

#include <errno.h>

#include "core/mw.h"
#include "core/objects.h"
#include "util/log.h"
#include "verbs/share.h"

static int stale(const char *who, const char *what, uint32_t handle,
		 const struct ibv_context *ctx)
{
	return sv_refuse(
		EINVAL,
		"%s: the %s is not a live object of its context (handle %u, context %p): destroyed already, or its handle or context was overwritten",
		who, what, handle, (const void *)ctx);
}

static int check(enum sv_share_kind kind, const char *what,
		 const struct ibv_context *ctx, uint32_t handle,
		 const void *obj, const char *who)
{
	if (sv_share_holds(ctx, kind, handle, obj))
		return 0;
	return stale(who, what, handle, ctx);
}

int sv_check_ctx(struct ibv_context *ctx, const char *who)
{
	if (sv_share_context_live(ctx))
		return 0;
	return sv_refuse(EINVAL, "%s: context %p is not an open context", who,
			 (void *)ctx);
}

int sv_check_pd(struct ibv_pd *ibpd, const char *who)
{
	struct sv_pd *pd;

	if (!ibpd)
		return sv_refuse(EINVAL, "%s: the PD is NULL", who);
	pd = sv_container_of(ibpd, struct sv_pd, ibv);
	/* A parent domain and an imported PD carry the handle of the PD
	 * they stand for. */
	if (pd->parent_of)
		return check(SV_SHARE_PD, "parent domain", ibpd->context,
			     ibpd->handle, pd->parent_of, who);
	return check(SV_SHARE_PD, "PD", ibpd->context, ibpd->handle,
		     pd->real ? pd->real : pd, who);
}

int sv_check_mr(struct ibv_mr *ibmr, const char *who)
{
	struct sv_mr *mr;

	if (!ibmr)
		return sv_refuse(EINVAL, "%s: the MR is NULL", who);
	mr = sv_container_of(ibmr, struct sv_mr, ibv);
	return check(SV_SHARE_MR, "MR", ibmr->context, ibmr->handle,
		     mr->real ? mr->real : mr, who);
}

int sv_check_mw(struct ibv_mw *mw, const char *who)
{
	if (!mw)
		return sv_refuse(EINVAL, "%s: the MW is NULL", who);
	return check(SV_SHARE_MW, "MW", mw->context, mw->handle, to_sv_mw(mw),
		     who);
}

int sv_check_cq(struct ibv_cq *cq, const char *who)
{
	if (!cq)
		return sv_refuse(EINVAL, "%s: the CQ is NULL", who);
	return check(SV_SHARE_CQ, "CQ", cq->context, cq->handle, to_sv_cq(cq),
		     who);
}

int sv_check_qp(struct ibv_qp *qp, const char *who)
{
	if (!qp)
		return sv_refuse(EINVAL, "%s: the QP is NULL", who);
	return check(SV_SHARE_QP, "QP", qp->context, qp->handle, to_sv_qp(qp),
		     who);
}

int sv_check_srq(struct ibv_srq *srq, const char *who)
{
	if (!srq)
		return sv_refuse(EINVAL, "%s: the SRQ is NULL", who);
	return check(SV_SHARE_SRQ, "SRQ", srq->context, srq->handle,
		     to_sv_srq(srq), who);
}

int sv_check_ah(struct ibv_ah *ah, const char *who)
{
	if (!ah)
		return sv_refuse(EINVAL, "%s: the AH is NULL", who);
	return check(SV_SHARE_AH, "AH", ah->context, ah->handle, to_sv_ah(ah),
		     who);
}
