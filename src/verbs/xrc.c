/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * XRC at the API: the verbs_context ops behind verbs.h's inline
 * ibv_open_xrcd, ibv_close_xrcd, ibv_create_srq_ex, ibv_get_srq_num and
 * ibv_open_qp.  XRC QPs themselves are created by ibv_create_qp_ex
 * (qp_ex.c -> sv_qp_create); domains, SRQ numbers and target QP lists
 * are core/xrc.c's, the transport engine/transport/xrc.c's.
 */
#include "verbs/verbs.h"

#include <fcntl.h>
#include <stdlib.h>

#include "core/xrc.h"
#include "engine/forward/xrcfwd.h"
#include "verbs/objcheck.h"
#include "verbs/share.h"

struct ibv_xrcd *sv_open_xrcd(struct ibv_context *context,
			      struct ibv_xrcd_init_attr *attr)
{
	struct sv_xrcd_handle *h;
	struct sv_xrcd *dom;
	int err;

	if (!context || !attr)
		return sv_null_errno(EINVAL);
	if (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_RESERVED - 1))
		return sv_null_errno(EOPNOTSUPP);
	/* rdma-core: both the fd and the open flags must be given. */
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
		return sv_null_errno(EINVAL);
	h = calloc(1, sizeof(*h));
	if (!h)
		return sv_null_errno(ENOMEM);
	err = sv_xrcd_open(attr->fd, attr->oflags, &dom);
	if (err) {
		free(h);
		return sv_null_errno(err);
	}
	h->ibv.context = context;
	h->dom = dom;
	return &h->ibv;
}

int sv_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct sv_xrcd_handle *h;
	int err;

	if (!xrcd)
		return EINVAL;
	h = sv_container_of(xrcd, struct sv_xrcd_handle, ibv);
	err = sv_xrcd_close(h->dom);
	if (!err)
		free(h);
	return err;
}

struct ibv_srq *sv_create_srq_ex(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *a)
{
	struct ibv_srq *ibsrq;
	struct sv_srq *srq;
	struct sv_cq *cq;
	int err;

	if (sv_check_ctx(context, "ibv_create_srq_ex") || !a)
		return sv_null_errno(EINVAL);
	if (a->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_RESERVED - 1))
		return sv_null_errno(EOPNOTSUPP);
	/* Every SRQ has a PD (rdma-core's ibv_cmd_create_srq_ex). */
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd ||
	    a->pd->context != context)
		return sv_null_errno(EINVAL);
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ||
	    a->srq_type == IBV_SRQT_BASIC)
		return ibv_create_srq(a->pd, (struct ibv_srq_init_attr *)a);
	if (a->srq_type == IBV_SRQT_TM)
		return sv_null_errno(EOPNOTSUPP); /* no tag matching */
	if (a->srq_type != IBV_SRQT_XRC)
		return sv_null_errno(EINVAL);
	/* An XRC SRQ needs its domain and the CQ its receives complete on. */
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !a->xrcd ||
	    !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
	    sv_check_cq(a->cq, "ibv_create_srq_ex") ||
	    a->cq->context != context)
		return sv_null_errno(EINVAL);

	/* Other processes of the domain reach its SRQs through the
	 * engine's server (engine/forward/xrcfwd.c). */
	sv_xrcfwd_init();
	/* ibv_srq_init_attr is the prefix of the _ex one. */
	ibsrq = ibv_create_srq(a->pd, (struct ibv_srq_init_attr *)a);
	if (!ibsrq)
		return NULL;
	srq = to_sv_srq(ibsrq);
	cq = to_sv_cq(a->cq);
	srq->type = IBV_SRQT_XRC;
	srq->xrcd = to_sv_xrcd(a->xrcd);
	srq->cq = cq;
	err = sv_xrc_srq_add(srq);
	if (err) {
		srq->type = IBV_SRQT_BASIC;
		ibv_destroy_srq(ibsrq);
		return sv_null_errno(err);
	}
	atomic_fetch_add(&cq->users, 1);
	sv_xrcd_use(srq->xrcd);
	return ibsrq;
}

int sv_xrc_srq_release(struct sv_srq *srq)
{
	int err = sv_xrc_srq_remove(srq);

	if (err)
		return err;
	atomic_fetch_sub(&srq->cq->users, 1);
	sv_xrcd_unuse(srq->xrcd);
	srq->type = IBV_SRQT_BASIC;
	return 0;
}

/* man ibv_get_srq_num: the number of an XRC SRQ, which XRC senders
 * name it by (wr.qp_type.xrc.remote_srqn). */
int sv_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct sv_srq *srq;

	if (!ibsrq || !srq_num)
		return EINVAL;
	srq = to_sv_srq(ibsrq);
	if (srq->type != IBV_SRQT_XRC)
		return EINVAL;
	*srq_num = srq->srq_num;
	return 0;
}

/* man ibv_open_qp: another handle on an XRC target QP of the domain,
 * found by its number. */
struct ibv_qp *sv_open_qp(struct ibv_context *context,
			  struct ibv_qp_open_attr *a)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			      IBV_QP_OPEN_ATTR_TYPE;
	struct ibv_qp *ibqp;
	struct sv_qp *qp, *real;

	if (sv_check_ctx(context, "ibv_open_qp") || !a)
		return sv_null_errno(EINVAL);
	if (a->comp_mask & ~(uint32_t)(IBV_QP_OPEN_ATTR_RESERVED - 1))
		return sv_null_errno(EOPNOTSUPP);
	if ((a->comp_mask & need) != need || !a->xrcd ||
	    a->qp_type != IBV_QPT_XRC_RECV)
		return sv_null_errno(EINVAL);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return sv_null_errno(ENOMEM);
	qp->forks = sv_fork_count;
	real = sv_xrc_tgt_open(to_sv_xrcd(a->xrcd), a->qp_num);
	if (!real) {
		free(qp);
		return sv_null_errno(EINVAL);
	}
	ibqp = &qp->qpx.qp_base;
	ibqp->context = context;
	if (sv_share_add(context, SV_SHARE_QP, qp, &ibqp->handle)) {
		sv_xrc_tgt_close(real);
		free(qp);
		return sv_null_errno(ENOMEM);
	}
	ibqp->qp_context = (a->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ?
				   a->qp_context :
				   NULL;
	ibqp->qp_num = real->qpx.qp_base.qp_num;
	ibqp->qp_type = IBV_QPT_XRC_RECV;
	ibqp->state = real->qpx.qp_base.state;
	pthread_mutex_init(&ibqp->mutex, NULL);
	pthread_cond_init(&ibqp->cond, NULL);
	sv_qlock_init(&qp->sq_lock);
	sv_qlock_init(&qp->rq_lock);
	pthread_mutex_init(&qp->state_lock, NULL);
	qp->ctx = to_sv_ctx(context);
	qp->type = IBV_QPT_XRC_RECV;
	qp->real = real;
	list_head_init(&qp->mcast);
	return ibqp;
}
