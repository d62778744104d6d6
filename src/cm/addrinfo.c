/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdma_getaddrinfo / rdma_freeaddrinfo, and the endpoint calls built on
 * the synchronous mode: rdma_create_ep, rdma_destroy_ep, rdma_get_request;
 * and rdma-core 60's asynchronous form, rdma_resolve_addrinfo and
 * rdma_query_addrinfo.
 *
 * rdma_getaddrinfo maps the RDMA hints onto getaddrinfo's (QP type ->
 * socket type, port space -> protocol) and the first answer back; with
 * RAI_PASSIVE the address is the source, otherwise the destination.  There
 * is no ibacm to add routes or connect data.  Name resolution errors are
 * getaddrinfo's EAI_* codes, other failures -1 and errno.
 */
#include "cm/cm.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>

static int copy_addr(struct sockaddr **dst, socklen_t *dst_len,
		     const struct sockaddr *src, socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return ENOMEM;
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

static void to_ai_hints(struct addrinfo *ai, const struct rdma_addrinfo *h)
{
	memset(ai, 0, sizeof(*ai));
	if (h->ai_flags & RAI_PASSIVE)
		ai->ai_flags |= AI_PASSIVE;
	if (h->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	ai->ai_family = h->ai_family;
	switch (h->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (h->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

SV_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints,
			       struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	int ret = 0;

	if ((!node && !service && !hints) || !res)
		return sv_cm_err(EINVAL);
	if (hints && hints->ai_family == AF_IB)
		return EAI_FAMILY; /* no InfiniBand addressing on RoCE */
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return sv_cm_err(ENOMEM);
	if (!hints)
		hints = &nohints;

	if (node || service) {
		struct addrinfo aih, *ai;
		bool passive = hints->ai_flags & RAI_PASSIVE;

		to_ai_hints(&aih, hints);
		ret = getaddrinfo(node, service,
				  hints == &nohints ? NULL : &aih, &ai);
		if (ret) {
			rdma_freeaddrinfo(rai);
			return ret;
		}
		rai->ai_family = ai->ai_family;
		rai->ai_qp_type =
			hints->ai_qp_type ?
				hints->ai_qp_type :
				(ai->ai_socktype == SOCK_DGRAM ? IBV_QPT_UD :
								 IBV_QPT_RC);
		rai->ai_port_space =
			hints->ai_port_space ?
				hints->ai_port_space :
				(ai->ai_protocol == IPPROTO_UDP ? RDMA_PS_UDP :
								  RDMA_PS_TCP);
		if (passive) {
			rai->ai_flags = RAI_PASSIVE;
			if (ai->ai_canonname)
				rai->ai_src_canonname =
					strdup(ai->ai_canonname);
			ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
					ai->ai_addr, ai->ai_addrlen);
		} else {
			if (ai->ai_canonname)
				rai->ai_dst_canonname =
					strdup(ai->ai_canonname);
			ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
					ai->ai_addr, ai->ai_addrlen);
		}
		freeaddrinfo(ai);
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len && hints->ai_dst_addr)
			ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
					hints->ai_dst_addr, hints->ai_dst_len);
	}
	if (!ret && !rai->ai_src_len && hints->ai_src_len && hints->ai_src_addr)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len,
				hints->ai_src_addr, hints->ai_src_len);
	if (ret) {
		rdma_freeaddrinfo(rai);
		return sv_cm_err(ret);
	}
	*res = rai;
	return 0;
}

SV_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
		res = next;
	}
}

/* ---- endpoints -------------------------------------------------------------- */

SV_EXPORT void rdma_destroy_ep(struct rdma_cm_id *cmid)
{
	if (!cmid)
		return;
	if (cmid->qp)
		rdma_destroy_qp(cmid);
	if (cmid->srq)
		rdma_destroy_srq(cmid);
	rdma_destroy_id(cmid);
}

static int passive_ep(struct rdma_cm_id *cmid, struct rdma_addrinfo *res,
		      struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct sv_cm_id *id = to_sv_id(cmid);

	if (rdma_bind_addr(cmid, res->ai_src_addr))
		return -1;
	if (pd)
		cmid->pd = pd;
	if (attr) {
		/* Each request gets a QP like this (rdma_get_request). */
		id->ep_qp_attr = malloc(sizeof(*attr));
		if (!id->ep_qp_attr)
			return sv_cm_err(ENOMEM);
		*id->ep_qp_attr = *attr;
		id->ep_qp_attr->qp_type = res->ai_qp_type;
	}
	return 0;
}

SV_EXPORT int rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res,
			     struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cmid;
	struct sv_cm_id *id;
	int err;

	if (!out || !res)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	id = sv_id_alloc(NULL, NULL, res->ai_port_space, res->ai_qp_type);
	sv_cm_unlock();
	if (!id)
		return -1;
	cmid = &id->id;

	if (res->ai_flags & RAI_PASSIVE) {
		if (passive_ep(cmid, res, pd, qp_init_attr))
			goto err;
		*out = cmid;
		return 0;
	}
	if (rdma_resolve_addr(cmid, res->ai_src_addr, res->ai_dst_addr, 2000))
		goto err;
	if (res->ai_route_len) {
		if (rdma_set_option(cmid, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				    res->ai_route, res->ai_route_len) ||
		    sv_cm_sync_complete(id))
			goto err;
	} else if (rdma_resolve_route(cmid, 2000)) {
		goto err;
	}
	if (qp_init_attr) {
		qp_init_attr->qp_type = res->ai_qp_type;
		if (rdma_create_qp(cmid, pd, qp_init_attr))
			goto err;
	}
	if (res->ai_connect_len) {
		id->connect_pdata = malloc(res->ai_connect_len);
		if (!id->connect_pdata) {
			errno = ENOMEM;
			goto err;
		}
		memcpy(id->connect_pdata, res->ai_connect, res->ai_connect_len);
		id->connect_len = res->ai_connect_len;
	}
	*out = cmid;
	return 0;
err:
	err = errno;
	rdma_destroy_ep(cmid);
	errno = err;
	return -1;
}

SV_EXPORT int rdma_get_request(struct rdma_cm_id *listen,
			       struct rdma_cm_id **out)
{
	struct sv_cm_id *ls = to_sv_id(listen);
	struct rdma_cm_event *event;
	int ret;

	if (!listen || !out || !ls->sync)
		return sv_cm_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &event))
		return -1;
	if (event->status) {
		ret = sv_cm_err(event->status < 0 ? -event->status :
						    event->status);
		goto err;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		ret = sv_cm_err(EINVAL);
		goto err;
	}
	if (ls->ep_qp_attr) {
		struct ibv_qp_init_attr attr = *ls->ep_qp_attr;

		ret = rdma_create_qp(event->id, listen->pd, &attr);
		if (ret)
			goto err;
	}
	*out = event->id;
	(*out)->event = event;
	return 0;
err:
	listen->event = event;
	return ret;
}

/* RDMA_CM_EVENT_ADDRINFO_RESOLVED on the id's channel (or, for a
 * synchronous id, before return) once the answer is ready for
 * rdma_query_addrinfo.  DNS only: an IB service lookup (RAI_SA) needs an
 * SA, which a RoCE device has not, and is refused as rdma-core refuses
 * one that names a node. */
SV_EXPORT int rdma_resolve_addrinfo(struct rdma_cm_id *cmid, const char *node,
				    const char *service,
				    const struct rdma_addrinfo *hints)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	struct rdma_addrinfo *res;
	int ret;

	if (!cmid)
		return sv_cm_err(EINVAL);
	if (hints && (hints->ai_flags & SV_RAI_SA))
		return sv_cm_err(ENOTSUP);
	sv_cm_lock();
	if (id->resolving_ai) {
		sv_cm_unlock();
		return sv_cm_err(EBUSY);
	}
	id->resolving_ai = true;
	sv_cm_unlock();

	ret = rdma_getaddrinfo(node, service, hints, &res);
	sv_cm_lock();
	if (ret) {
		id->resolving_ai = false;
		sv_cm_unlock();
		/* rdma-core hands rdma_getaddrinfo's code over as errno. */
		if (ret != -1)
			errno = ret;
		return -1;
	}
	id->resolved_ai = res;
	sv_event_post(
		id, (enum rdma_cm_event_type)SV_CM_EVENT_ADDRINFO_RESOLVED, 0);
	sv_cm_unlock();
	return sv_cm_sync_complete(id);
}

/* The answer, once: the caller frees it with rdma_freeaddrinfo; ENOENT
 * before the event (or after it was taken). */
SV_EXPORT int rdma_query_addrinfo(struct rdma_cm_id *cmid,
				  struct rdma_addrinfo **info)
{
	struct sv_cm_id *id = to_sv_id(cmid);

	if (!cmid || !info)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	if (!id->resolving_ai || !id->resolved_ai) {
		sv_cm_unlock();
		return sv_cm_err(ENOENT);
	}
	*info = id->resolved_ai;
	id->resolved_ai = NULL;
	id->resolving_ai = false;
	sv_cm_unlock();
	return 0;
}
