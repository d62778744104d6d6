/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets: datagrams (SOCK_DGRAM), as rdma-core's rsocket UDP service is
 * built: a UD QP carries the datagrams, and a UDP socket bound to the same
 * address is the descriptor the application sees and what resolves
 * addresses.  Every datagram starts with a small header naming the
 * sender's address, UDP port and QP number.  Until a sender has learnt
 * the QP number behind a destination address, its datagrams travel in the
 * UDP socket (header included); the receiver learns the sender's QP from
 * the header, answers over UD, and its header teaches the sender ours --
 * from then on both sides use the UD QP.  Datagram semantics (no order, no
 * delivery guarantee) are those of UDP in both cases.
 */
#include "cm/cm.h"
#include "cm/rs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DS_TAG 0x52534447u /* "RSDG" */
#define DS_VERSION 1
#define DS_GRH 40

struct ds_hdr {
	uint32_t tag; /* big endian */
	uint8_t version;
	uint8_t family; /* 4 or 6 */
	uint16_t port; /* sender's UDP port, network order */
	uint32_t qpn; /* sender's QP number, big endian */
	uint8_t addr[16]; /* sender's address */
} __attribute__((packed));

#define DS_WR_RECV (1ull << 63)
/* The largest UDP payload, less our header: datagrams above the UD QP's
 * MTU travel in the UDP socket, as the first ones to a new peer do. */
#define DS_UDP_MAX (65507 - sizeof(struct ds_hdr))

int rs_dgram_open(struct rsocket *rs)
{
	/* SOCK_CLOEXEC keeps librspreload's socket() from turning our own
	 * UDP socket into an rsocket (rsocket() refuses flagged types). */
	rs->udp = socket(rs->domain, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rs->udp < 0)
		return errno;
	return 0;
}

void rs_dgram_close(struct rsocket *rs)
{
	struct list_node *n;

	while ((n = list_first(&rs->dests))) {
		struct rs_dest *d = list_entry(n, struct rs_dest, node);

		list_del(n);
		if (d->ah)
			ibv_destroy_ah(d->ah);
		free(d);
	}
	if (rs->qp)
		ibv_destroy_qp(rs->qp);
	if (rs->cq)
		ibv_destroy_cq(rs->cq);
	if (rs->cc)
		ibv_destroy_comp_channel(rs->cc);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->pd)
		ibv_dealloc_pd(rs->pd);
	free(rs->sbuf);
	free(rs->rmem);
	free(rs->dq);
	free(rs->dq_len);
	free(rs->ubuf);
	if (rs->udp >= 0)
		close(rs->udp);
}

static int ds_post_recv(struct rsocket *rs, uint32_t slot)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)(rs->rmem + (size_t)slot * rs->dg_slot);
	sge.length = rs->dg_slot;
	sge.lkey = rs->rmr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = DS_WR_RECV | slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(rs->qp, &wr, &bad) ? (errno ? errno : EIO) : 0;
}

/* The UD endpoint: device, PD, CQ, QP, slots (lock held). */
static int ds_create_ep(struct rsocket *rs)
{
	struct ibv_context **devs;
	struct ibv_qp_init_attr qa;
	struct ibv_port_attr pa;
	struct ibv_qp_attr a;
	uint32_t mtu = 1024, i;
	int fl, ret;

	if (rs->qp)
		return 0;
	devs = rdma_get_devices(NULL);
	if (!devs || !devs[0]) {
		rdma_free_devices(devs);
		return ENODEV;
	}
	rs->verbs = devs[0];
	rdma_free_devices(devs);
	if (!ibv_query_port(rs->verbs, 1, &pa))
		mtu = 128u << pa.active_mtu;
	if (mtu > 4096)
		mtu = 4096;
	rs->dg_max = mtu - sizeof(struct ds_hdr);
	rs->dg_slot = DS_GRH + mtu;
	/* rdma-core sizes the receive queue by the buffer: one slot per
	 * RS_SNDLOWAT bytes of SO_RCVBUF. */
	if (rs->sq_size > RS_QP_MAX_SIZE)
		rs->sq_size = RS_QP_MAX_SIZE;
	if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	rs->rq_size = rs->rbuf_size / RS_SNDLOWAT;
	if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > 4096)
		rs->rq_size = 4096;
	rs->pd = ibv_alloc_pd(rs->verbs);
	if (!rs->pd)
		return errno;
	rs->cc = ibv_create_comp_channel(rs->verbs);
	if (!rs->cc)
		return errno;
	fl = fcntl(rs->cc->fd, F_GETFL);
	if (fl < 0 || fcntl(rs->cc->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return errno;
	rs->cq = ibv_create_cq(rs->verbs, rs->sq_size + rs->rq_size, rs, rs->cc,
			       0);
	if (!rs->cq)
		return errno;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_UD;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	rs->qp = ibv_create_qp(rs->pd, &qa);
	if (!rs->qp)
		return errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = RDMA_UDP_QKEY; /* the qkey of RDMA_PS_UDP, rdma_cm(7) */
	ret = ibv_modify_qp(rs->qp, &a,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_QKEY);
	if (!ret) {
		a.qp_state = IBV_QPS_RTR;
		ret = ibv_modify_qp(rs->qp, &a, IBV_QP_STATE);
	}
	if (!ret) {
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		ret = ibv_modify_qp(rs->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	if (ret)
		return ret;
	rs->qpn_local = rs->qp->qp_num;
	rs->sbuf = malloc((size_t)rs->sq_size * rs->dg_slot);
	rs->rmem = malloc((size_t)rs->rq_size * rs->dg_slot);
	rs->dq = calloc(rs->rq_size, sizeof(*rs->dq));
	rs->dq_len = calloc(rs->rq_size, sizeof(*rs->dq_len));
	if (!rs->sbuf || !rs->rmem || !rs->dq || !rs->dq_len)
		return ENOMEM;
	rs->smr =
		ibv_reg_mr(rs->pd, rs->sbuf, (size_t)rs->sq_size * rs->dg_slot,
			   IBV_ACCESS_LOCAL_WRITE);
	rs->rmr =
		ibv_reg_mr(rs->pd, rs->rmem, (size_t)rs->rq_size * rs->dg_slot,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!rs->smr || !rs->rmr)
		return errno;
	for (i = 0; i < rs->rq_size; i++) {
		ret = ds_post_recv(rs, i);
		if (ret)
			return ret;
	}
	return 0;
}

static int ds_ep(struct rsocket *rs)
{
	int ret = ds_create_ep(rs);

	if (ret && rs->qp) {
		/* keep nothing half made */
		ibv_destroy_qp(rs->qp);
		rs->qp = NULL;
	}
	return ret;
}

/* Bind the UDP socket to an ephemeral port if the application did not. */
static int ds_autobind(struct rsocket *rs)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(rs->udp, (struct sockaddr *)&ss, &len))
		return errno;
	if (sv_cm_port_of((struct sockaddr *)&ss))
		return 0;
	memset(&ss, 0, sizeof(ss));
	ss.ss_family = rs->domain;
	if (bind(rs->udp, (struct sockaddr *)&ss,
		 sv_cm_addrlen((struct sockaddr *)&ss)))
		return errno;
	return 0;
}

int rs_dgram_bind(struct rsocket *rs, const struct sockaddr *addr,
		  socklen_t len)
{
	if (bind(rs->udp, addr, len))
		return errno;
	return ds_ep(rs);
}

static bool ds_same(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a,
					 *y = (const void *)b;

		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a,
					  *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
	}
	return false;
}

/* Our source address towards dst: the bound one, or the route's. */
static int ds_source(struct rsocket *rs, const struct sockaddr *dst,
		     struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd;

	if (getsockname(rs->udp, (struct sockaddr *)src, &len))
		return errno;
	if (!sv_cm_addr_any((struct sockaddr *)src))
		return 0;
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	len = sizeof(*src);
	if (connect(fd, dst, sv_cm_addrlen(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len)) {
		int err = errno;

		close(fd);
		return err;
	}
	close(fd);
	return 0;
}

static struct rs_dest *ds_find(struct rsocket *rs, const struct sockaddr *addr)
{
	struct list_node *n;

	rs_list_for_each(&rs->dests, n)
	{
		struct rs_dest *d = list_entry(n, struct rs_dest, node);

		if (ds_same((struct sockaddr *)&d->addr, addr))
			return d;
	}
	return NULL;
}

static struct rs_dest *ds_get(struct rsocket *rs, const struct sockaddr *addr,
			      int *err)
{
	struct rs_dest *d = ds_find(rs, addr);

	if (d)
		return d;
	d = calloc(1, sizeof(*d));
	if (!d) {
		*err = ENOMEM;
		return NULL;
	}
	memcpy(&d->addr, addr, sv_cm_addrlen(addr));
	*err = ds_source(rs, addr, &d->src);
	if (*err) {
		free(d);
		return NULL;
	}
	list_add_tail(&rs->dests, &d->node);
	return d;
}

/* A datagram from addr told us its sender's QP. */
static void ds_learn(struct rsocket *rs, const struct sockaddr *addr,
		     uint32_t qpn)
{
	struct rs_dest *d;
	int err;

	if (!qpn)
		return;
	d = ds_get(rs, addr, &err);
	if (!d || d->qpn == qpn)
		return;
	if (d->ah)
		ibv_destroy_ah(d->ah);
	d->ah = NULL;
	d->qpn = qpn;
}

static struct ibv_ah *ds_ah(struct rsocket *rs, struct rs_dest *d)
{
	struct ibv_ah_attr a;
	int idx;

	if (d->ah)
		return d->ah;
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	sv_cm_addr_to_gid((struct sockaddr *)&d->addr, &a.grh.dgid);
	idx = sv_cm_gid_index((struct sockaddr *)&d->src);
	a.grh.sgid_index = idx < 0 ? 0 : (uint8_t)idx;
	a.grh.hop_limit = SV_CM_HOP_LIMIT;
	a.port_num = 1;
	d->ah = ibv_create_ah(rs->pd, &a);
	return d->ah;
}

static void ds_fill_hdr(struct rsocket *rs, struct rs_dest *d, struct ds_hdr *h)
{
	struct sockaddr_storage me;
	socklen_t len = sizeof(me);

	memset(h, 0, sizeof(*h));
	h->tag = htobe32(DS_TAG);
	h->version = DS_VERSION;
	h->qpn = htobe32(rs->qpn_local);
	if (!getsockname(rs->udp, (struct sockaddr *)&me, &len))
		h->port = htons(sv_cm_port_of((struct sockaddr *)&me));
	if (d->src.ss_family == AF_INET) {
		h->family = 4;
		memcpy(h->addr, &((struct sockaddr_in *)&d->src)->sin_addr, 4);
	} else {
		h->family = 6;
		memcpy(h->addr, &((struct sockaddr_in6 *)&d->src)->sin6_addr,
		       16);
	}
}

int rs_dgram_connect(struct rsocket *rs, const struct sockaddr *addr,
		     socklen_t len)
{
	int err;

	/* connect(2) on UDP fixes the default destination and filters
	 * what the UDP socket receives; the UD side does the same. */
	if (connect(rs->udp, addr, len))
		return errno;
	err = ds_ep(rs);
	if (err)
		return err;
	rs->conn_dest = ds_get(rs, addr, &err);
	return rs->conn_dest ? 0 : err;
}

void rs_dgram_poll_cq(struct rsocket *rs)
{
	struct ibv_wc wc[32];
	bool any = false;
	int n, i;

	if (!rs->cq)
		return;
	while ((n = ibv_poll_cq(rs->cq, 32, wc)) > 0) {
		any = true;
		for (i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)wc[i].wr_id;

			if (!(wc[i].wr_id & DS_WR_RECV)) {
				rs->sq_outstanding--;
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].byte_len < DS_GRH + sizeof(struct ds_hdr)) {
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					ds_post_recv(rs, slot);
				continue;
			}
			rs->dq[rs->dq_tail % rs->rq_size] = slot;
			rs->dq_len[rs->dq_tail % rs->rq_size] =
				wc[i].byte_len - DS_GRH;
			rs->dq_tail++;
		}
	}
	if (any)
		rs_kick(rs);
}

static bool ds_udp_readable(struct rsocket *rs)
{
	struct pollfd p = { .fd = rs->udp, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

bool rs_dgram_readable(struct rsocket *rs)
{
	return rs->dq_head != rs->dq_tail || ds_udp_readable(rs);
}

/* The sender's address from a header. */
static void ds_hdr_addr(const struct ds_hdr *h, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (h->family == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = h->port;
		memcpy(&s->sin_addr, h->addr, 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = h->port;
		memcpy(&s->sin6_addr, h->addr, 16);
	}
}

/* A v4 sender seen by an AF_INET6 socket is reported v4-mapped, as the
 * kernel's UDP does. */
static void ds_report_addr(struct rsocket *rs, struct sockaddr_storage *ss,
			   struct sockaddr *src, socklen_t *slen)
{
	if (rs->domain == AF_INET6 && ss->ss_family == AF_INET) {
		struct sockaddr_in v4 = *(struct sockaddr_in *)ss;
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		memset(s, 0, sizeof(*s));
		s->sin6_family = AF_INET6;
		s->sin6_port = v4.sin_port;
		s->sin6_addr.s6_addr[10] = 0xff;
		s->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&s->sin6_addr.s6_addr[12], &v4.sin_addr, 4);
	}
	if (src && slen)
		rs_copy_addr(src, slen, (struct sockaddr *)ss);
}

ssize_t rs_dgram_recvfrom(struct rsocket *rs, const struct iovec *iov,
			  int iovcnt, int flags, struct sockaddr *src,
			  socklen_t *slen)
{
	bool nonblock = rs_nonblocking(rs, flags), peek = flags & MSG_PEEK;
	size_t want = rs_iov_len(iov, iovcnt);
	struct sockaddr_storage from;
	uint8_t *buf;
	int ret;

	for (;;) {
		rs_dgram_poll_cq(rs);
		if (rs->dq_head != rs->dq_tail) {
			uint32_t k = rs->dq_head % rs->rq_size;
			uint32_t slot = rs->dq[k], len = rs->dq_len[k];
			uint8_t *p =
				rs->rmem + (size_t)slot * rs->dg_slot + DS_GRH;
			const struct ds_hdr *h = (const void *)p;
			size_t n;

			len -= sizeof(*h);
			n = want < len ? want : len;
			ds_hdr_addr(h, &from);
			ds_learn(rs, (struct sockaddr *)&from, be32toh(h->qpn));
			rs_buf_to_iov(iov, iovcnt, 0, p + sizeof(*h), n);
			if (!peek) {
				rs->dq_head++;
				ds_post_recv(rs, slot);
			}
			ds_report_addr(rs, &from, src, slen);
			return (ssize_t)(flags & MSG_TRUNC ? len : n);
		}
		if (!rs->ubuf) {
			rs->ubuf = malloc(DS_UDP_MAX + sizeof(struct ds_hdr));
			if (!rs->ubuf)
				return -ENOMEM;
		}
		buf = rs->ubuf;
		{
			struct iovec v = { buf,
					   DS_UDP_MAX + sizeof(struct ds_hdr) };
			struct msghdr m;
			ssize_t r;

			memset(&m, 0, sizeof(m));
			m.msg_name = &from;
			m.msg_namelen = sizeof(from);
			m.msg_iov = &v;
			m.msg_iovlen = 1;
			r = recvmsg(rs->udp, &m,
				    MSG_DONTWAIT | (peek ? MSG_PEEK : 0));
			if (r >= 0) {
				const struct ds_hdr *h = (const void *)buf;
				const uint8_t *p = buf;
				size_t len = (size_t)r, n;

				if (len >= sizeof(*h) &&
				    be32toh(h->tag) == DS_TAG) {
					ds_learn(rs, (struct sockaddr *)&from,
						 be32toh(h->qpn));
					p += sizeof(*h);
					len -= sizeof(*h);
				}
				n = want < len ? want : len;
				rs_buf_to_iov(iov, iovcnt, 0, p, n);
				ds_report_addr(rs, &from, src, slen);
				return (ssize_t)(flags & MSG_TRUNC ? len : n);
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
		}
		ret = rs_wait(rs, nonblock, rs->udp);
		if (ret)
			return -ret;
	}
}

ssize_t rs_dgram_sendto(struct rsocket *rs, const struct iovec *iov, int iovcnt,
			int flags, const struct sockaddr *dst, socklen_t dlen)
{
	bool nonblock = rs_nonblocking(rs, flags);
	size_t len = rs_iov_len(iov, iovcnt);
	struct rs_dest *d;
	struct ds_hdr h;
	int ret;

	if (dst) {
		if (dlen < sizeof(struct sockaddr_in) ||
		    (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
			return -EINVAL;
	} else if (!rs->conn_dest) {
		return -EDESTADDRREQ;
	}
	ret = ds_autobind(rs);
	if (!ret)
		ret = ds_ep(rs);
	if (ret)
		return -ret;
	if (len > DS_UDP_MAX)
		return -EMSGSIZE;
	d = dst ? ds_get(rs, dst, &ret) : rs->conn_dest;
	if (!d)
		return -ret;
	ds_fill_hdr(rs, d, &h);
	/* Once a datagram to d was too big for the UD QP, all go by UDP:
	 * one path keeps them in the order they were sent, as loopback UDP
	 * would. */
	if (len > rs->dg_max)
		d->udp_only = true;
	if (!d->qpn || d->udp_only || !ds_ah(rs, d)) {
		struct iovec v[IOV_MAX > 64 ? 64 : IOV_MAX];
		struct msghdr m;
		int i, nv = 0;
		ssize_t r;

		if (iovcnt > 63)
			return -EMSGSIZE;
		v[nv].iov_base = &h;
		v[nv++].iov_len = sizeof(h);
		for (i = 0; i < iovcnt; i++)
			v[nv++] = iov[i];
		memset(&m, 0, sizeof(m));
		m.msg_name = &d->addr;
		m.msg_namelen = sv_cm_addrlen((struct sockaddr *)&d->addr);
		m.msg_iov = v;
		m.msg_iovlen = nv;
		r = sendmsg(rs->udp, &m, nonblock ? MSG_DONTWAIT : 0);
		if (r < 0)
			return -errno;
		return (ssize_t)len;
	}
	for (;;) {
		rs_dgram_poll_cq(rs);
		if (rs->sq_outstanding < rs->sq_size)
			break;
		ret = rs_wait(rs, nonblock, -1);
		if (ret)
			return -ret;
	}
	{
		uint32_t slot = rs->ds_free++ % rs->sq_size;
		uint8_t *p = rs->sbuf + (size_t)slot * rs->dg_slot;
		struct ibv_send_wr wr, *bad;
		struct ibv_sge sge;

		/* Slots are reused in order and at most sq_size WRs are
		 * outstanding, so this slot's last send has completed. */
		memcpy(p, &h, sizeof(h));
		rs_iov_to_buf(p + sizeof(h), iov, iovcnt, 0, len);
		sge.addr = (uintptr_t)p;
		sge.length = (uint32_t)(sizeof(h) + len);
		sge.lkey = rs->smr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = slot;
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = d->ah;
		wr.wr.ud.remote_qpn = d->qpn;
		wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
		if (ibv_post_send(rs->qp, &wr, &bad))
			return -(errno ? errno : EIO);
		rs->sq_outstanding++;
	}
	return (ssize_t)len;
}
