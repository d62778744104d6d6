/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared receive queues, address handles and multicast attachment:
 * ibv_create/modify/query/destroy_srq and the post_srq_recv op,
 * ibv_create/destroy_ah, ibv_init_ah_from_wc / ibv_create_ah_from_wc,
 * ibv_attach/detach_mcast and ibv_resolve_eth_l2_from_gid.
 *
 * The port is RoCE v2: every address carries a GRH, and a GID is an IP
 * address (IPv4 ones IPv4-mapped), so an AH records the socket address its
 * destination GID stands for.
 */
#include "verbs/verbs.h"

#include <arpa/inet.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/diag/strict.h"
#include "proto/addr.h"
#include "proto/ip.h"
#include "util/lockorder.h"
#include "verbs/objcheck.h"
#include "verbs/share.h"

/* ---- SRQ ---------------------------------------------------------------- */

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static uint32_t srq_stride(uint32_t max_sge)
{
	size_t sz =
		sizeof(struct sv_recv_wqe) + max_sge * sizeof(struct ibv_sge);

	return (uint32_t)((sz + 7) & ~(size_t)7);
}

SV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					 struct ibv_srq_init_attr *init)
{
	struct ibv_srq_attr *a;
	struct sv_srq *srq;
	uint32_t max_sge;
	int err;

	if (sv_check_pd(pd, "ibv_create_srq") || !init)
		return sv_null_errno(EINVAL);
	a = &init->attr;
	/* rxe's rules: 1..max_srq_wr WRs, at most max_srq_sge SGEs.  The
	 * limit is not an input of create (man ibv_create_srq). */
	if (a->max_wr == 0 || a->max_wr > SV_MAX_SRQ_WR ||
	    a->max_sge > SV_MAX_SGE)
		return sv_null_errno(EINVAL);
	max_sge = a->max_sge ? a->max_sge : 1;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return sv_null_errno(ENOMEM);
	srq->forks = sv_fork_count;
	srq->rq.size = pow2_at_least(a->max_wr);
	srq->rq.max_wr = srq->rq.size;
	srq->rq.max_sge = max_sge;
	srq->rq.stride = srq_stride(max_sge);
	atomic_init(&srq->rq.head, 0);
	atomic_init(&srq->rq.tail, 0);
	/* On a parent domain, from its allocator (verbs/pd_parent.c). */
	srq->rq.buf = sv_queue_alloc(to_sv_pd(pd),
				     (size_t)srq->rq.size * srq->rq.stride,
				     SV_RES_TYPE_SRQ, &srq->rq.buf_owner);
	err = srq->rq.buf ? sv_share_add(pd->context, SV_SHARE_SRQ, srq,
					 &srq->ibv.handle) :
			    ENOMEM;
	if (err) {
		sv_queue_free(srq->rq.buf_owner, srq->rq.buf, SV_RES_TYPE_SRQ);
		free(srq);
		return sv_null_errno(err);
	}
	srq->ibv.context = pd->context;
	srq->ibv.srq_context = init->srq_context;
	srq->ibv.pd = pd;
	srq->ibv.events_completed = 0;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	pthread_mutex_init(&srq->lock, NULL);
	atomic_init(&srq->users, 0);
	/* Protected by the PD (a parent domain's), counted on what was
	 * given. */
	srq->pd = sv_pd_real(to_sv_pd(pd));
	srq->ctx = to_sv_ctx(pd->context);
	srq->srq_limit = 0;
	srq->pd_held = to_sv_pd(pd);
	sv_pd_get(srq->pd_held);
	/* Report what was created: at least what was asked. */
	a->max_wr = srq->rq.max_wr;
	a->max_sge = max_sge;
	a->srq_limit = 0;
	return &srq->ibv;
}

/* Move the queued WQEs into a ring of `size` slots (srq->lock held). */
static int srq_resize(struct sv_srq *srq, uint32_t size)
{
	struct sv_wq *rq = &srq->rq;
	uint32_t head = atomic_load(&rq->head), used = sv_wq_used(rq), i;
	struct sv_pd *owner;
	uint8_t *buf;

	if (size == rq->size)
		return 0;
	buf = sv_queue_alloc(to_sv_pd(srq->ibv.pd), (size_t)size * rq->stride,
			     SV_RES_TYPE_SRQ, &owner);
	if (!buf)
		return ENOMEM;
	for (i = 0; i < used; i++)
		memcpy(buf + (size_t)i * rq->stride, sv_wq_at(rq, head + i),
		       rq->stride);
	sv_queue_free(rq->buf_owner, rq->buf, SV_RES_TYPE_SRQ);
	rq->buf = buf;
	rq->buf_owner = owner;
	rq->size = size;
	rq->max_wr = size;
	atomic_store(&rq->head, 0);
	atomic_store(&rq->tail, used);
	return 0;
}

SV_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
			     int mask)
{
	struct sv_srq *srq;
	uint32_t max_wr, size = 0;
	int err = 0;

	if (sv_check_srq(ibsrq, "ibv_modify_srq") || !attr ||
	    (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	srq = to_sv_srq(ibsrq);
	sv_mutex_lock(&srq->lock, SV_LOCK_SRQ);
	max_wr = srq->rq.max_wr;
	/* Validate everything before changing anything (man ibv_modify_srq). */
	if (mask & IBV_SRQ_MAX_WR) {
		if (attr->max_wr == 0 || attr->max_wr > SV_MAX_SRQ_WR ||
		    attr->max_wr < sv_wq_used(&srq->rq))
			err = EINVAL;
		/* An armed limit must stay below the queue size (rxe). */
		else if (!(mask & IBV_SRQ_LIMIT) &&
			 attr->max_wr < srq->srq_limit)
			err = EINVAL;
		size = pow2_at_least(attr->max_wr);
		max_wr = size;
	}
	if (!err && (mask & IBV_SRQ_LIMIT) && attr->srq_limit > max_wr)
		err = EINVAL;
	if (!err && (mask & IBV_SRQ_MAX_WR))
		err = srq_resize(srq, size);
	/* A non-zero limit arms the SRQ_LIMIT_REACHED event (IBA 10.2.9.4);
	 * the engine fires and disarms it as it consumes WQEs. */
	if (!err && (mask & IBV_SRQ_LIMIT))
		srq->srq_limit = attr->srq_limit;
	sv_mutex_unlock(&srq->lock);
	return err;
}

SV_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct sv_srq *srq;

	if (sv_check_srq(ibsrq, "ibv_query_srq") || !attr)
		return EINVAL;
	srq = to_sv_srq(ibsrq);
	sv_mutex_lock(&srq->lock, SV_LOCK_SRQ);
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->srq_limit;
	sv_mutex_unlock(&srq->lock);
	return 0;
}

SV_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct sv_srq *srq;
	uint32_t reported;

	if (sv_check_srq(ibsrq, "ibv_destroy_srq"))
		return EINVAL;
	srq = to_sv_srq(ibsrq);
	/* man ibv_create_srq: fails while a QP is associated. */
	if (atomic_load(&srq->users))
		return EBUSY;
	if (srq->type == IBV_SRQT_XRC) {
		int err = sv_xrc_srq_release(srq);

		if (err)
			return err;
	}
	sv_share_del(ibsrq->context, ibsrq->handle, srq);
	reported = sv_async_purge(srq->ctx, &srq->async_events_reported);
	sv_mutex_lock(&ibsrq->mutex, SV_LOCK_IBV_EVENTS);
	while (ibsrq->events_completed != reported)
		sv_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	sv_mutex_unlock(&ibsrq->mutex);
	pthread_mutex_destroy(&srq->lock);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	sv_queue_free(srq->rq.buf_owner, srq->rq.buf, SV_RES_TYPE_SRQ);
	sv_pd_put(srq->pd_held);
	free(srq);
	return 0;
}

/* Copy each WR into the ring; on the first bad one stop, point *bad_wr at
 * it and return the reason (the ones before it stay posted). */
int sv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	struct sv_srq *srq = to_sv_srq(ibsrq);
	struct sv_wq *rq = &srq->rq;
	int err = 0;

	if (sv_forked(srq->forks)) {
		*bad_wr = wr;
		return sv_refuse(EINVAL, "ibv_post_srq_recv: SRQ %p: %s",
				 (void *)srq, SV_FORKED_WHY);
	}
	/* SOFTVERBS_STRICT=1: before the SRQ's lock, which ranks after the
	 * key table's. */
	for (struct ibv_recv_wr *w = wr; w && sv_strict(); w = w->next)
		if (w->num_sge > 0 && w->sg_list &&
		    (uint32_t)w->num_sge <= rq->max_sge)
			sv_strict_srq_access(to_sv_ctx(ibsrq->context),
					     ibsrq->handle, w->wr_id,
					     w->sg_list, w->num_sge);
	sv_mutex_lock(&srq->lock, SV_LOCK_SRQ);
	for (; wr; wr = wr->next) {
		uint32_t tail =
			atomic_load_explicit(&rq->tail, memory_order_relaxed);
		struct sv_recv_wqe *wqe;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge) {
			err = sv_refuse(
				EINVAL,
				"ibv_post_srq_recv: SRQ %p: wr_id %#llx: num_sge %d is above the SRQ's max_sge %u",
				(void *)srq, (unsigned long long)wr->wr_id,
				wr->num_sge, rq->max_sge);
			break;
		}
		if (sv_wq_used(rq) >= rq->max_wr) {
			err = sv_refuse(
				ENOMEM,
				"ibv_post_srq_recv: SRQ %p: wr_id %#llx: the SRQ is full (%u WRs outstanding, max_wr %u)",
				(void *)srq, (unsigned long long)wr->wr_id,
				sv_wq_used(rq), rq->max_wr);
			break;
		}
		wqe = sv_wq_at(rq, tail);
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(wqe->sge, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(struct ibv_sge));
		/* Publish the WQE before the consumer can see the new tail. */
		atomic_store_explicit(&rq->tail, tail + 1,
				      memory_order_release);
	}
	sv_mutex_unlock(&srq->lock);
	if (err)
		*bad_wr = wr;
	return err;
}

/* ---- address handles ---------------------------------------------------- */

static int gid_count(void)
{
	struct sv_gid_entry tab[SV_MAX_GIDS];

	return sv_gid_table(tab, SV_MAX_GIDS);
}

static bool gid_v4mapped(const union ibv_gid *gid)
{
	return sv_gid_v4mapped(gid->raw);
}

/* SOFTVERBS_STRICT=1: a RoCE v2 packet is an IPv4 or an IPv6 datagram,
 * chosen by the source GID; the kernel resolves the route from the source
 * GID's address to the destination GID's and fails (EINVAL at
 * modify_qp/create_ah) when they are of different families, and where it
 * does not the peer drops what arrives.  softverbs' own UDP link would
 * carry it anyway.  Index 0 is the fe80:: link-local GID in strict mode
 * (core/device.c), so code hard-wired to it meets this with an IPv4 peer. */
static int strict_gid_family(struct sv_context *ctx,
			     const struct ibv_ah_attr *attr, const char *who,
			     const union ibv_gid *sgid)
{
	const union ibv_gid *dgid = &attr->grh.dgid;
	int i = attr->grh.sgid_index;
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, sgid->raw, s, sizeof(s));
	inet_ntop(AF_INET6, dgid->raw, d, sizeof(d));
	sv_strict_ctx(
		ctx, "gid-family",
		"%s: sgid_index %d is %s (%s) but grh.dgid %s is %s: RoCE v2 sends IPv4 or IPv6 by the source GID, so hardware fails this address (EINVAL) or the peer drops its packets; %suse the index of a GID of the peer's family (ibv_devinfo -v, softverbs devices) on both sides (refused: EINVAL)",
		who, i, s, gid_v4mapped(sgid) ? "IPv4" : "IPv6", d,
		gid_v4mapped(dgid) ? "IPv4" : "IPv6",
		i == 0 ?
			"index 0 is the port's fe80:: link-local GID on mlx5 and rxe (mlx5: RoCE v1 there, v2 at 1), as in strict mode: code hard-wired to GID index 0 works only with a peer doing the same; " :
			"");
	return EINVAL;
}

/* A source and a destination GID that cannot talk (proto/addr.h,
 * sv_gid_pair_check): strict mode refuses the address, as hardware
 * would; otherwise softverbs' UDP link carries it, the peer drops it as
 * coming from an address it does not know, and the requester learns it
 * only from IBV_WC_RETRY_EXC_ERR seconds later, so it is said now. */
static int gid_pair(struct sv_context *ctx, const struct ibv_ah_attr *attr,
		    const char *who)
{
	static struct sv_lograte rate; /* lines about no QP */
	struct sv_gid_entry tab[SV_MAX_GIDS];
	const union ibv_gid *dgid = &attr->grh.dgid;
	int n = sv_gid_table(tab, SV_MAX_GIDS), i = attr->grh.sgid_index;
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	enum sv_gid_pair p;

	if (i >= n)
		return 0;
	p = sv_gid_pair_check(tab[i].gid.raw, dgid->raw);
	if (p == SV_GID_PAIR_OK)
		return 0;
	if (sv_strict() && p == SV_GID_PAIR_FAMILY)
		return strict_gid_family(ctx, attr, who, &tab[i].gid);
	inet_ntop(AF_INET6, tab[i].gid.raw, s, sizeof(s));
	inet_ntop(AF_INET6, dgid->raw, d, sizeof(d));
	if (sv_strict()) {
		sv_strict_ctx(
			ctx, "gid-loopback",
			"%s: sgid_index %d is %s, grh.dgid %s: a loopback GID on one side only, which no HCA has and whose packets never leave the host; use the GID of the address the peer reaches you on (softverbs devices) on both sides (refused: EINVAL)",
			who, i, s, d);
		return EINVAL;
	}
	if (sv_log_level < SV_LOG_WARN || !sv_log_rated(&rate, 0))
		return 0;
	if (p == SV_GID_PAIR_FAMILY)
		sv_warn("%s: sgid_index %d is %s (%s) but grh.dgid %s is %s: RoCE v2 sends an IPv4 or an IPv6 datagram as the source GID says, so the peer sees packets from another address than its dgid and drops them, and this QP ends in IBV_WC_RETRY_EXC_ERR (hardware refuses the address, as SOFTVERBS_STRICT=1 does); use the index of a GID of the peer's family on both sides (ibv_devinfo -v, softverbs devices)",
			who, i, s, gid_v4mapped(&tab[i].gid) ? "IPv4" : "IPv6",
			d, gid_v4mapped(dgid) ? "IPv4" : "IPv6");
	else if (p == SV_GID_PAIR_LOOPBACK_SRC)
		sv_warn("%s: sgid_index %d is the loopback GID %s but grh.dgid %s is not a loopback address: packets from a loopback address never leave this host, and a peer that knows us by another GID drops them, so this QP ends in IBV_WC_RETRY_EXC_ERR (no HCA has a loopback GID); use the GID of the address the peer reaches you on, on both sides (ibv_devinfo -v, softverbs devices)",
			who, i, s, d);
	else
		sv_warn("%s: grh.dgid %s is a loopback address but sgid_index %d is %s: a loopback address reaches this host only, and the peer, which sees our packets come from %s, drops them unless its dgid is that address, so this QP ends in IBV_WC_RETRY_EXC_ERR; use the GIDs of one address family and scope on both sides: the peer's real address here, ours there (ibv_devinfo -v, softverbs devices)",
			who, d, i, s, s);
	return 0;
}

/* The kernel's rdma_check_ah_attr() for a RoCE port: a valid port, a GRH
 * (RoCE addresses are GIDs), and a source GID that exists. */
int sv_ah_attr_check(struct sv_context *ctx, const struct ibv_ah_attr *attr,
		     const char *who)
{
	if (attr->port_num != SV_PORT)
		return sv_refuse(EINVAL,
				 "%s: port_num %u: the device has port %u only",
				 who, attr->port_num, SV_PORT);
	/* RoCE (IBA Annex A16/A17): no LIDs, every packet carries a GRH. */
	if (!attr->is_global)
		return sv_refuse(
			EINVAL,
			"%s: is_global is 0 (dlid 0x%x): a RoCE port addresses by GID, so the address needs a GRH (is_global = 1, grh.dgid, grh.sgid_index)",
			who, attr->dlid);
	if (attr->grh.sgid_index >= gid_count())
		return sv_refuse(
			EINVAL,
			"%s: grh.sgid_index %u is beyond the port's GID table (%d entries; ibv_devinfo -v lists them)",
			who, attr->grh.sgid_index, gid_count());
	return gid_pair(ctx, attr, who);
}

SV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
				       struct ibv_ah_attr *attr)
{
	struct sv_ah *ah;
	int err;

	if (sv_check_pd(pd, "ibv_create_ah") || !attr)
		return sv_null_errno(EINVAL);
	if (sv_ah_attr_check(to_sv_ctx(pd->context), attr, "ibv_create_ah"))
		return sv_null_errno(EINVAL);
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return sv_null_errno(ENOMEM);
	err = sv_share_add(pd->context, SV_SHARE_AH, ah, &ah->ibv.handle);
	if (err) {
		free(ah);
		return sv_null_errno(err);
	}
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	ah->attr = *attr;
	sv_gid_to_sockaddr(&attr->grh.dgid, &ah->dest);
	ah->pd = sv_pd_real(to_sv_pd(pd)); /* a parent domain's PD */
	sv_engine_ah_resolve(to_sv_ctx(pd->context), ah);
	sv_pd_get(ah->pd);
	return &ah->ibv;
}

SV_EXPORT int ibv_destroy_ah(struct ibv_ah *ibah)
{
	struct sv_ah *ah;

	if (sv_check_ah(ibah, "ibv_destroy_ah"))
		return EINVAL;
	ah = to_sv_ah(ibah);
	sv_share_del(ibah->context, ibah->handle, ah);
	sv_pd_put(ah->pd);
	free(ah);
	return 0;
}

static void v4_to_gid(uint32_t addr_be, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &addr_be, 4);
}

/* The GID of an IP address: IPv4 as IPv4-mapped IPv6. */
static void ipaddr_to_gid(const struct sv_ipaddr *ip, union ibv_gid *gid)
{
	if (ip->family == AF_INET) {
		uint32_t a;

		memcpy(&a, ip->addr, 4);
		v4_to_gid(a, gid);
	} else {
		memcpy(gid->raw, ip->addr, 16);
	}
}

/* Our index of a local GID, or -1 (errno ENOENT). */
static int find_sgid_index(const union ibv_gid *gid)
{
	struct sv_gid_entry tab[SV_MAX_GIDS];
	int i, n = sv_gid_table(tab, SV_MAX_GIDS);

	for (i = 0; i < n; i++)
		if (!memcmp(tab[i].gid.raw, gid->raw, sizeof(gid->raw)))
			return i;
	errno = ENOENT;
	return -1;
}

SV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				  struct ibv_wc *wc, struct ibv_grh *grh,
				  struct ibv_ah_attr *ah_attr)
{
	struct sv_grh_info info;
	union ibv_gid our;
	int idx;

	if (!context || !wc || !ah_attr ||
	    ((wc->wc_flags & IBV_WC_GRH) && !grh)) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	if (port_num != SV_PORT) {
		errno = EINVAL;
		return -1;
	}
	/* RoCE v2 places the IP header it received in the GRH area
	 * (proto/ip.h). */
	if (sv_grh_parse((const uint8_t *)grh, &info)) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	ah_attr->grh.flow_label = info.flow_label;
	ah_attr->is_global = 1;
	/* The reply goes back to the sender, from the address the message
	 * was sent to; a multicast one cannot be a source. */
	if (sv_ip_is_multicast(&info.dst)) {
		errno = EINVAL;
		return -1;
	}
	/* RoCE v2 carries UDP; anything else is not ours. */
	if (info.dst.family == AF_INET6 && info.next_hdr != IPPROTO_UDP) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	ipaddr_to_gid(&info.dst, &our);
	idx = find_sgid_index(&our);
	if (idx < 0)
		return -1;
	ipaddr_to_gid(&info.src, &ah_attr->grh.dgid);
	ah_attr->grh.hop_limit = info.hop_limit;
	ah_attr->grh.traffic_class = info.tclass;
	ah_attr->grh.sgid_index = (uint8_t)idx;
	return 0;
}

SV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
					       struct ibv_wc *wc,
					       struct ibv_grh *grh,
					       uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (!pd)
		return sv_null_errno(EINVAL);
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/* No L2 in user space: the UDP socket's kernel route resolves neighbours,
 * and a RoCE v2 device of ours never needs a MAC.  rdma-core returns
 * negative error codes here. */
SV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
					  struct ibv_ah_attr *attr,
					  uint8_t eth_mac[6], uint16_t *vid)
{
	errno = EOPNOTSUPP;
	return -EOPNOTSUPP;
}

/* ---- multicast ---------------------------------------------------------- */

/* The kernel's rdma_is_multicast_addr(): ff00::/8, or an IPv4-mapped
 * 224.0.0.0/4 address. */
static bool gid_is_multicast(const union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0,	0,
					      0, 0, 0, 0, 0xff, 0xff };

	if (gid->raw[0] == 0xff)
		return true;
	return !memcmp(gid->raw, v4mapped, 12) && (gid->raw[12] & 0xf0) == 0xe0;
}

static struct sv_mcast_attach *mcast_find(struct sv_qp *qp,
					  const union ibv_gid *gid)
{
	struct list_node *it, *tmp;

	list_for_each_safe (&qp->mcast, it, tmp) {
		struct sv_mcast_attach *m =
			list_entry(it, struct sv_mcast_attach, node);

		if (!memcmp(m->gid.raw, gid->raw, sizeof(gid->raw)))
			return m;
	}
	return NULL;
}

SV_EXPORT int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			       uint16_t lid)
{
	struct sv_mcast_attach *m;
	struct list_node *it, *tmp;
	struct sv_qp *qp;
	int n = 0, err;

	if (!ibqp || !gid || !gid_is_multicast(gid))
		return EINVAL;
	qp = to_sv_qp(ibqp);
	/* IBA 10.5: only unreliable datagram QPs join multicast groups. */
	if (qp->type != IBV_QPT_UD)
		return EINVAL;
	sv_mutex_lock(&qp->state_lock, SV_LOCK_QP_STATE);
	/* Attaching twice is one attachment (man ibv_attach_mcast). */
	if (mcast_find(qp, gid)) {
		sv_mutex_unlock(&qp->state_lock);
		return 0;
	}
	list_for_each_safe (&qp->mcast, it, tmp)
		n++;
	if (n >= SV_MAX_MCAST_GRP) {
		sv_mutex_unlock(&qp->state_lock);
		return ENOMEM;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		sv_mutex_unlock(&qp->state_lock);
		return ENOMEM;
	}
	/* The engine joins the IP multicast group and steers its datagrams
	 * to this QP (engine/transport/mcast.c). */
	err = sv_engine_mcast_attach(qp, gid);
	if (err) {
		sv_mutex_unlock(&qp->state_lock);
		free(m);
		return err;
	}
	m->gid = *gid;
	m->lid = lid;
	list_add_tail(&qp->mcast, &m->node);
	sv_mutex_unlock(&qp->state_lock);
	return 0;
}

SV_EXPORT int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			       uint16_t lid)
{
	struct sv_mcast_attach *m;
	struct sv_qp *qp;

	if (!ibqp || !gid || !gid_is_multicast(gid))
		return EINVAL;
	qp = to_sv_qp(ibqp);
	if (qp->type != IBV_QPT_UD)
		return EINVAL;
	sv_mutex_lock(&qp->state_lock, SV_LOCK_QP_STATE);
	m = mcast_find(qp, gid);
	if (m) {
		list_del(&m->node);
		sv_engine_mcast_detach(qp, gid);
	}
	sv_mutex_unlock(&qp->state_lock);
	if (!m)
		return EINVAL; /* not attached (the kernel answers EINVAL too) */
	free(m);
	return 0;
}
