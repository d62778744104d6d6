/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Multicast through the CM: rdma_join_multicast(_ex) and
 * rdma_leave_multicast.
 *
 * On RoCE v2 there is no subnet manager to join: a group is named by its
 * IP multicast address and its MGID is that address as a GID (IPv4
 * v4-mapped), as the kernel's rdma_cm computes it for RoCE v2.  A join
 * therefore completes at once with MULTICAST_JOIN, carrying the address
 * handle attributes, QPN 0xFFFFFF and the id's Q_Key; reading that event
 * attaches the id's QP to the group (ibv_attach_mcast), as rdma-core does.
 * Moving the datagrams is the verbs device's business.
 */
#include "cm/cm.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

static void mgid_of(const struct sockaddr *sa, union ibv_gid *mgid)
{
	if (sv_cm_addr_any(sa))
		memset(mgid, 0, sizeof(*mgid));
	else
		sv_cm_addr_to_gid(sa, mgid);
}

/* Reading MULTICAST_JOIN: attach the QP unless joined send-only. */
int sv_mc_process_join(struct sv_cm_event *e)
{
	struct sv_cm_mc *mc = e->mc;
	struct ibv_qp *qp = e->ev.id->qp;
	int ret;

	if (!mc || !qp ||
	    mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return 0;
	ret = ibv_attach_mcast(qp, &mc->mgid, mc->mlid);
	if (ret) {
		e->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		e->ev.status = -ret;
		return ret;
	}
	mc->attached = true;
	return 0;
}

static int join(struct rdma_cm_id *cmid, struct sockaddr *addr,
		socklen_t addrlen, uint8_t flags, void *context)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	struct sv_cm_event *e;
	struct sv_cm_mc *mc;
	int ret = 0;

	sv_cm_lock();
	/* A group is joined on a device: the id must be bound to one. */
	if ((id->state != SV_CM_ADDR_BOUND &&
	     id->state != SV_CM_ADDR_RESOLVED &&
	     id->state != SV_CM_ROUTE_RESOLVED) ||
	    !cmid->verbs || cmid->qp_type != IBV_QPT_UD ||
	    sv_cm_addr_any(addr)) {
		ret = EINVAL;
		goto out;
	}
	mc = calloc(1, sizeof(*mc));
	e = mc ? sv_event_new(id, RDMA_CM_EVENT_MULTICAST_JOIN, 0) : NULL;
	if (!e) {
		free(mc);
		ret = ENOMEM;
		goto out;
	}
	mc->id = id;
	mc->context = context;
	mc->join_flags = flags;
	memcpy(&mc->addr, addr, addrlen);
	mc->addrlen = addrlen;
	mgid_of(addr, &mc->mgid);
	mc->mlid = 0; /* RoCE: no LIDs */
	list_add_tail(&id->mcs, &mc->node);

	e->mc = mc;
	sv_cm_fill_ah(id, &e->ev.param.ud.ah_attr);
	e->ev.param.ud.ah_attr.grh.dgid = mc->mgid;
	e->ev.param.ud.ah_attr.dlid = mc->mlid;
	e->ev.param.ud.qp_num = 0xffffff;
	e->ev.param.ud.qkey = id->qkey;
	/* rdma-core hands the join's context back here. */
	e->ev.param.ud.private_data = context;
	sv_event_queue(id, e);
out:
	sv_cm_unlock();
	if (ret)
		return sv_cm_err(ret);
	return sv_cm_sync_complete(id);
}

SV_EXPORT int rdma_join_multicast(struct rdma_cm_id *cmid,
				  struct sockaddr *addr, void *context)
{
	socklen_t len = sv_cm_addrlen(addr);

	if (!cmid || !len)
		return sv_cm_err(EINVAL);
	return join(cmid, addr, len, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

SV_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *cmid,
				     struct rdma_cm_join_mc_attr_ex *attr,
				     void *context)
{
	socklen_t len;

	if (!cmid || !attr)
		return sv_cm_err(EINVAL);
	if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return sv_cm_err(ENOTSUP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
		return sv_cm_err(EINVAL);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return sv_cm_err(EINVAL);
	len = sv_cm_addrlen(attr->addr);
	if (!len)
		return sv_cm_err(EINVAL);
	return join(cmid, attr->addr, len, (uint8_t)attr->join_flags, context);
}

SV_EXPORT int rdma_leave_multicast(struct rdma_cm_id *cmid,
				   struct sockaddr *addr)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	socklen_t len = sv_cm_addrlen(addr);
	struct sv_cm_mc *mc = NULL;
	struct list_node *it, *tmp;

	if (!cmid || !len)
		return sv_cm_err(EINVAL);
	/* A sync id holds its last event; if that is this group's join, it
	 * would be waited for below: release it. */
	if (id->sync && cmid->event &&
	    ((struct sv_cm_event *)cmid->event)->mc &&
	    ((struct sv_cm_event *)cmid->event)->mc->addrlen == len &&
	    !memcmp(&((struct sv_cm_event *)cmid->event)->mc->addr, addr,
		    len)) {
		rdma_ack_cm_event(cmid->event);
		cmid->event = NULL;
	}
	sv_cm_lock();
	list_for_each_safe (&id->mcs, it, tmp) {
		struct sv_cm_mc *m = list_entry(it, struct sv_cm_mc, node);

		if (m->addrlen == len && !memcmp(&m->addr, addr, len)) {
			mc = m;
			break;
		}
	}
	if (!mc) {
		sv_cm_unlock();
		return sv_cm_err(EADDRNOTAVAIL);
	}
	list_del(&mc->node);
	if (cmid->qp && mc->attached)
		ibv_detach_mcast(cmid->qp, &mc->mgid, mc->mlid);
	sv_event_purge_mc(id, mc);
	/* The application may still hold this group's events. */
	while (mc->events_acked < mc->events_reported)
		sv_cond_wait(&sv_cm.acked, &sv_cm.lock);
	sv_cm_unlock();
	free(mc);
	return 0;
}

/* rdma_destroy_id: the groups go with the id (events already acked). */
void sv_mc_leave_all(struct sv_cm_id *id)
{
	struct list_node *it, *tmp;

	list_for_each_safe (&id->mcs, it, tmp) {
		list_del(it);
		free(list_entry(it, struct sv_cm_mc, node));
	}
}
