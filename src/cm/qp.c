/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * QPs, SRQs and QP attributes through the CM: rdma_create_qp(_ex),
 * rdma_destroy_qp, rdma_create_srq(_ex), rdma_destroy_srq,
 * rdma_init_qp_attr and the transitions the CM makes on the application's
 * behalf, plus ECE.  Only the public verbs API is used.
 *
 * As rdma-core: a connected QP is moved to INIT when created (access flags
 * 0 until a connection is known), to RTR and RTS on rdma_accept (passive)
 * or when the CONNECT_RESPONSE is read (active), and to ERROR by
 * rdma_disconnect and on REJECTED.  A UD QP goes straight to RTS.  Apps
 * that manage their own QP (id->qp NULL) use rdma_init_qp_attr for the
 * same attributes.
 */
#include "cm/cm.h"

#include <stdlib.h>
#include <string.h>

void sv_cm_fill_ah(struct sv_cm_id *id, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = id->id.route.addr.addr.ibaddr.dgid;
	ah->grh.sgid_index = id->gid_index < 0 ? 0 : (uint8_t)id->gid_index;
	ah->grh.hop_limit = SV_CM_HOP_LIMIT;
	ah->grh.traffic_class = id->tos;
	ah->port_num = 1;
}

/* The attributes for moving a QP to qp_state (lock held).  0 or errno. */
static int init_qp_attr(struct sv_cm_id *id, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state want = a->qp_state;
	bool ud = id->id.qp_type == IBV_QPT_UD;
	bool rc = id->id.qp_type == IBV_QPT_RC;
	struct ibv_port_attr pa;

	if (!id->id.verbs)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	a->qp_state = want;
	switch (want) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = 1;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (ud) {
			a->qkey = id->qkey;
			*mask |= IBV_QP_QKEY;
			return 0;
		}
		/* As the IB CM grants them: remote write always, reads and
		 * atomics when we grant responder resources. */
		a->qp_access_flags = 0;
		if (id->conn.valid) {
			a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (rc && id->conn.resp_res)
				a->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
						      IBV_ACCESS_REMOTE_ATOMIC;
		}
		*mask |= IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (ud)
			return 0;
		if (!id->conn.valid)
			return EINVAL;
		sv_cm_fill_ah(id, &a->ah_attr);
		a->path_mtu = IBV_MTU_1024;
		if (!ibv_query_port(id->id.verbs, 1, &pa))
			a->path_mtu = pa.active_mtu;
		a->dest_qp_num = id->conn.remote_qpn;
		a->rq_psn = id->conn.remote_psn;
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN;
		if (rc) {
			a->max_dest_rd_atomic = id->conn.resp_res;
			a->min_rnr_timer = SV_CM_MIN_RNR_TIMER;
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				 IBV_QP_MIN_RNR_TIMER;
		}
		return 0;
	case IBV_QPS_RTS:
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (ud) {
			a->sq_psn = 0;
			return 0;
		}
		if (!id->conn.valid)
			return EINVAL;
		a->sq_psn = id->conn.local_psn;
		if (rc) {
			a->timeout = id->ack_timeout_set ?
					     id->ack_timeout :
					     SV_CM_DEFAULT_ACK_TIMEOUT;
			a->retry_cnt = id->conn.retry_count;
			a->rnr_retry = id->conn.rnr_retry;
			a->max_rd_atomic = id->conn.init_depth;
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return 0;
	default:
		return EINVAL;
	}
}

SV_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *cmid,
				struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	int ret;

	if (!cmid || !qp_attr || !qp_attr_mask)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	ret = init_qp_attr(to_sv_id(cmid), qp_attr, qp_attr_mask);
	sv_cm_unlock();
	return ret ? sv_cm_err(ret) : 0;
}

static int modify(struct sv_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state st,
		  int resp_res, int init_depth)
{
	struct ibv_qp_attr a;
	int mask, ret;

	a.qp_state = st;
	ret = init_qp_attr(id, &a, &mask);
	if (ret)
		return ret;
	if (st == IBV_QPS_RTR && resp_res != RDMA_MAX_RESP_RES)
		a.max_dest_rd_atomic = (uint8_t)resp_res;
	if (st == IBV_QPS_RTS && init_depth != RDMA_MAX_INIT_DEPTH)
		a.max_rd_atomic = (uint8_t)init_depth;
	return ibv_modify_qp(qp, &a, mask);
}

/* INIT again (the access flags now that the connection is known), then
 * RTR and RTS, as rdma-core's ucma_modify_qp_rtr/rts (lock held). */
int sv_qp_to_rtr_rts(struct sv_cm_id *id, int resp_res, int init_depth)
{
	struct ibv_qp *qp = id->id.qp;
	int ret;

	if (!qp)
		return 0;
	ret = modify(id, qp, IBV_QPS_INIT, resp_res, init_depth);
	if (!ret)
		ret = modify(id, qp, IBV_QPS_RTR, resp_res, init_depth);
	if (!ret)
		ret = modify(id, qp, IBV_QPS_RTS, resp_res, init_depth);
	return ret;
}

int sv_qp_to_err(struct sv_cm_id *id)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (!id->id.qp)
		return 0;
	return ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}

/* ---- CQs the CM creates for ids that bring none ------------------------------- */

static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq)
			ibv_destroy_cq(id->send_cq);
		id->recv_cq = NULL;
		id->send_cq = NULL;
	} else if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel &&
		    id->send_cq_channel != id->recv_cq_channel)
			ibv_destroy_comp_channel(id->send_cq_channel);
		id->recv_cq_channel = NULL;
		id->send_cq_channel = NULL;
	} else if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
}

/* One CQ with its own completion channel per direction (the channels are
 * what rdma_get_send_comp/rdma_get_recv_comp wait on). */
static int create_cqs(struct rdma_cm_id *id, uint32_t send_size,
		      uint32_t recv_size)
{
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, recv_size, id,
					    id->recv_cq_channel, 0);
		if (!id->recv_cq)
			goto err;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, send_size, id,
					    id->send_cq_channel, 0);
		if (!id->send_cq)
			goto err;
	}
	return 0;
err : {
	int err = errno;

	destroy_cqs(id);
	errno = err;
}
	return -1;
}

SV_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *cmid,
				struct ibv_qp_init_attr_ex *attr)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	int ret, mask;

	if (!cmid || !attr || cmid->qp || !cmid->verbs)
		return sv_cm_err(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = cmid->pd;
	} else if (attr->pd->context != cmid->verbs) {
		return sv_cm_err(EINVAL);
	}
	if (!attr->pd)
		return sv_cm_err(EINVAL);
	if ((cmid->recv_cq && attr->recv_cq &&
	     cmid->recv_cq != attr->recv_cq) ||
	    (cmid->send_cq && attr->send_cq && cmid->send_cq != attr->send_cq))
		return sv_cm_err(EINVAL);
	if (attr->qp_type == IBV_QPT_XRC_RECV ||
	    attr->qp_type == IBV_QPT_XRC_SEND)
		return sv_cm_err(EOPNOTSUPP);

	if (create_cqs(
		    cmid,
		    attr->send_cq || cmid->send_cq ? 0 : attr->cap.max_send_wr,
		    attr->recv_cq || cmid->recv_cq ? 0 : attr->cap.max_recv_wr))
		return -1;
	if (!attr->send_cq)
		attr->send_cq = cmid->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = cmid->recv_cq;
	if (cmid->srq && !attr->srq)
		attr->srq = cmid->srq;
	qp = ibv_create_qp_ex(cmid->verbs, attr);
	if (!qp) {
		ret = errno;
		goto err_cqs;
	}

	sv_cm_lock();
	a.qp_state = IBV_QPS_INIT;
	ret = init_qp_attr(id, &a, &mask);
	if (!ret)
		ret = ibv_modify_qp(qp, &a, mask);
	if (!ret && cmid->qp_type == IBV_QPT_UD) {
		a.qp_state = IBV_QPS_RTR;
		ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		if (!ret) {
			a.qp_state = IBV_QPS_RTS;
			a.sq_psn = 0;
			ret = ibv_modify_qp(qp, &a,
					    IBV_QP_STATE | IBV_QP_SQ_PSN);
		}
	}
	if (!ret) {
		cmid->pd = qp->pd;
		cmid->qp = qp;
	}
	sv_cm_unlock();
	if (!ret)
		return 0;
	ibv_destroy_qp(qp);
err_cqs:
	destroy_cqs(cmid);
	return sv_cm_err(ret ? ret : EINVAL);
}

SV_EXPORT int rdma_create_qp(struct rdma_cm_id *cmid, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (!cmid || !qp_init_attr)
		return sv_cm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd ? pd : cmid->pd;
	ret = rdma_create_qp_ex(cmid, &ex);
	/* The caller sees what it got (capabilities, CQs). */
	memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
	return ret;
}

SV_EXPORT void rdma_destroy_qp(struct rdma_cm_id *cmid)
{
	if (!cmid)
		return;
	if (cmid->qp)
		ibv_destroy_qp(cmid->qp);
	cmid->qp = NULL;
	destroy_cqs(cmid);
}

/* ---- SRQs --------------------------------------------------------------------- */

SV_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *cmid,
				 struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!cmid || !attr || !cmid->verbs)
		return sv_cm_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return sv_cm_err(EINVAL);
	if (attr->srq_type != IBV_SRQT_BASIC)
		return sv_cm_err(EOPNOTSUPP); /* no XRC domains */
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = cmid->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	srq = ibv_create_srq_ex(cmid->verbs, attr);
	if (!srq)
		return -1;
	if (!cmid->pd)
		cmid->pd = attr->pd;
	cmid->srq = srq;
	return 0;
}

SV_EXPORT int rdma_create_srq(struct rdma_cm_id *cmid, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (!cmid || !attr)
		return sv_cm_err(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = IBV_SRQT_BASIC;
	ex.pd = pd;
	ret = rdma_create_srq_ex(cmid, &ex);
	memcpy(attr, &ex, sizeof(*attr));
	return ret;
}

SV_EXPORT void rdma_destroy_srq(struct rdma_cm_id *cmid)
{
	if (!cmid)
		return;
	if (cmid->srq)
		ibv_destroy_srq(cmid->srq);
	cmid->srq = NULL;
	destroy_cqs(cmid);
}

/* ---- ECE ------------------------------------------------------------------------- */

/* Our device has no vendor options to negotiate; ECE is carried so that
 * applications managing their own QP can exchange it, as rdma-core lets
 * them. */
SV_EXPORT int rdma_set_local_ece(struct rdma_cm_id *cmid, struct ibv_ece *ece)
{
	struct sv_cm_id *id = to_sv_id(cmid);

	if (!cmid || cmid->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	id->local_ece.vendor_id = ece->vendor_id;
	id->local_ece.options = ece->options;
	sv_cm_unlock();
	return 0;
}

SV_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *cmid, struct ibv_ece *ece)
{
	struct sv_cm_id *id = to_sv_id(cmid);

	if (!cmid || cmid->qp || !ece)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	ece->vendor_id = id->remote_ece.vendor_id;
	ece->options = id->remote_ece.options;
	ece->comp_mask = 0;
	sv_cm_unlock();
	return 0;
}
