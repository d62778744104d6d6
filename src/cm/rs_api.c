/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets: the data calls (rrecv ... rwritev), rsetsockopt, rgetsockopt
 * and rfcntl.  Each validates its arguments and dispatches on the socket
 * type; rs_stream.c and rs_dgram.c return -errno.
 */
#include "cm/cm.h"
#include "cm/rs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static ssize_t rs_ret(ssize_t r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static int rs_check_iov(const struct iovec *iov, int iovcnt)
{
	int i;

	if (iovcnt < 0 || iovcnt > IOV_MAX)
		return EINVAL;
	if (iovcnt && !iov)
		return EFAULT;
	for (i = 0; i < iovcnt; i++)
		if (iov[i].iov_len && !iov[i].iov_base)
			return EFAULT;
	return 0;
}

static ssize_t rs_recv_common(int socket, const struct iovec *iov, int iovcnt,
			      int flags, struct sockaddr *src, socklen_t *slen)
{
	struct rsocket *rs = rs_lookup(socket);
	ssize_t r;
	int err;

	if (!rs)
		return sv_cm_err(EBADF);
	err = rs_check_iov(iov, iovcnt);
	if (err)
		return sv_cm_err(err);
	if (flags & MSG_OOB)
		return sv_cm_err(EOPNOTSUPP); /* rsockets have no OOB data */
	if (src && !slen)
		return sv_cm_err(EFAULT);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (rs->type == SOCK_STREAM) {
		if (rs->state == RS_LISTENING)
			r = -ENOTCONN;
		else
			r = rs_stream_recv(rs, iov, iovcnt, flags);
		if (r >= 0 && src)
			rs_copy_addr(src, slen, rdma_get_peer_addr(rs->id));
	} else {
		r = rs_dgram_recvfrom(rs, iov, iovcnt, flags, src, slen);
	}
	sv_mutex_unlock(&rs->lock);
	return rs_ret(r);
}

static ssize_t rs_send_common(int socket, const struct iovec *iov, int iovcnt,
			      int flags, const struct sockaddr *dst,
			      socklen_t dlen)
{
	struct rsocket *rs = rs_lookup(socket);
	ssize_t r;
	int err;

	if (!rs)
		return sv_cm_err(EBADF);
	err = rs_check_iov(iov, iovcnt);
	if (err)
		return sv_cm_err(err);
	if (flags & MSG_OOB)
		return sv_cm_err(EOPNOTSUPP);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (rs->type == SOCK_STREAM) {
		/* rdma-core: a stream rsocket takes no destination. */
		if (dst || dlen)
			r = -EISCONN;
		else if (rs->state == RS_LISTENING)
			r = -ENOTCONN;
		else
			r = rs_stream_send(rs, iov, iovcnt, flags);
	} else {
		r = rs_dgram_sendto(rs, iov, iovcnt, flags, dst, dlen);
	}
	sv_mutex_unlock(&rs->lock);
	return rs_ret(r);
}

SV_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec v = { buf, len };

	if (!buf && len)
		return sv_cm_err(rs_lookup(socket) ? EFAULT : EBADF);
	return rs_recv_common(socket, &v, 1, flags, NULL, NULL);
}

SV_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			    struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct iovec v = { buf, len };

	if (!buf && len)
		return sv_cm_err(rs_lookup(socket) ? EFAULT : EBADF);
	return rs_recv_common(socket, &v, 1, flags, src_addr, addrlen);
}

SV_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	ssize_t r;

	if (!msg)
		return sv_cm_err(rs_lookup(socket) ? EFAULT : EBADF);
	/* rdma-core: no ancillary data. */
	if (msg->msg_control && msg->msg_controllen)
		return sv_cm_err(rs_lookup(socket) ? ENOTSUP : EBADF);
	r = rs_recv_common(socket, msg->msg_iov, (int)msg->msg_iovlen, flags,
			   msg->msg_name,
			   msg->msg_name ? &msg->msg_namelen : NULL);
	if (r >= 0)
		msg->msg_flags = 0;
	return r;
}

SV_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

SV_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_recv_common(socket, iov, iovcnt, 0, NULL, NULL);
}

SV_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec v = { (void *)buf, len };

	if (!buf && len)
		return sv_cm_err(rs_lookup(socket) ? EFAULT : EBADF);
	return rs_send_common(socket, &v, 1, flags, NULL, 0);
}

SV_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			  const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct iovec v = { (void *)buf, len };

	if (!buf && len)
		return sv_cm_err(rs_lookup(socket) ? EFAULT : EBADF);
	return rs_send_common(socket, &v, 1, flags, dest_addr, addrlen);
}

SV_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (!msg)
		return sv_cm_err(rs_lookup(socket) ? EFAULT : EBADF);
	if (msg->msg_control && msg->msg_controllen)
		return sv_cm_err(rs_lookup(socket) ? ENOTSUP : EBADF);
	return rs_send_common(socket, msg->msg_iov, (int)msg->msg_iovlen, flags,
			      msg->msg_name, msg->msg_namelen);
}

SV_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

SV_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_send_common(socket, iov, iovcnt, 0, NULL, 0);
}

/* ---- options ------------------------------------------------------------------ */

static void rs_opt_set(uint64_t *opts, int name, bool on)
{
	if (name < 0 || name >= 64)
		return;
	if (on)
		*opts |= 1ull << name;
	else
		*opts &= ~(1ull << name);
}

static int rs_opt_get(uint64_t opts, int name)
{
	return name >= 0 && name < 64 && (opts & (1ull << name));
}

/* Options rsocket(7) and rdma-core accept; others are ENOTSUP. */
static int rs_setopt(struct rsocket *rs, int level, int optname,
		     const void *optval, socklen_t optlen)
{
	bool stream = rs->type == SOCK_STREAM;
	bool opening = rs->state >= RS_RESOLVING_ADDR;
	int v;

	if (level == SOL_SOCKET && optname == SO_LINGER) {
		const struct linger *l = optval;

		if (optlen < sizeof(*l))
			return EINVAL;
		/* rdma-core keeps the value inverted: on by default. */
		rs_opt_set(&rs->so_opts, SO_LINGER, !l->l_onoff);
		return 0;
	}
	if (level == SOL_RDMA && optname == RDMA_ROUTE) {
		void *p;

		if (opening || !optlen || optlen % sizeof(struct ibv_path_data))
			return EINVAL;
		p = malloc(optlen);
		if (!p)
			return ENOMEM;
		memcpy(p, optval, optlen);
		free(rs->route);
		rs->route = p;
		rs->route_len = optlen;
		return 0;
	}
	if (optlen < sizeof(int))
		return EINVAL;
	v = *(const int *)optval;
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
			if (stream &&
			    rdma_set_option(rs->id, RDMA_OPTION_ID,
					    RDMA_OPTION_ID_REUSEADDR,
					    (void *)optval, sizeof(int)) &&
			    rs->state == RS_INIT)
				return errno;
			rs_opt_set(&rs->so_opts, optname, v);
			return 0;
		case SO_RCVBUF:
			/* As Linux and rdma-core: the buffer is twice
			 * what was asked; fixed once the socket has its
			 * buffers. */
			if (!rs->rmem && v > 0)
				rs->rbuf_size = (uint32_t)v << 1;
			return 0;
		case SO_SNDBUF:
			if (!rs->sbuf && v > 0)
				rs->sbuf_size = (uint32_t)v << 1;
			if (rs->sbuf_size < RS_SNDLOWAT)
				rs->sbuf_size = RS_SNDLOWAT << 1;
			return 0;
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			/* RC connections report a dead peer themselves
			 * (retry exhaustion, the CM's DREQ): keepalive is
			 * recorded, as asked. */
			rs_opt_set(&rs->so_opts, optname, v);
			return 0;
		default:
			return ENOTSUP;
		}
	case IPPROTO_TCP:
		if (!stream)
			return ENOTSUP;
		switch (optname) {
		case TCP_NODELAY:
			rs_opt_set(&rs->tcp_opts, optname, v);
			return 0;
		case TCP_MAXSEG:
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			return 0; /* rdma-core: N/A on a reliable connection */
		case TCP_KEEPIDLE:
			if (v <= 0)
				return EINVAL;
			rs->keepalive_time = v;
			return 0;
		default:
			return ENOTSUP;
		}
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return ENOTSUP;
		if (stream && rdma_set_option(rs->id, RDMA_OPTION_ID,
					      RDMA_OPTION_ID_AFONLY,
					      (void *)optval, sizeof(int)))
			return errno;
		rs_opt_set(&rs->ipv6_opts, optname, v);
		return 0;
	case SOL_RDMA:
		/* rsocket(7): the RDMA options must be set before the
		 * socket connects or listens. */
		if (opening || rs->qp)
			return EINVAL;
		if (v < 0)
			return EINVAL;
		switch (optname) {
		case RDMA_SQSIZE:
			rs->sq_size = v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : v;
			return 0;
		case RDMA_RQSIZE:
			rs->rq_size = v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : v;
			return 0;
		case RDMA_INLINE:
			rs->sq_inline = v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : v;
			return 0;
		case RDMA_IOMAPSIZE:
			rs->iomap_size = v > RS_MAX_IOMAP ? RS_MAX_IOMAP : v;
			return 0;
		default:
			return ENOTSUP;
		}
	default:
		return ENOTSUP;
	}
}

SV_EXPORT int rsetsockopt(int socket, int level, int optname,
			  const void *optval, socklen_t optlen)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return sv_cm_err(EBADF);
	if (!optval)
		return sv_cm_err(EFAULT);
	/* rdma-core: a datagram socket's socket-level options also go to
	 * its UDP socket. */
	if (rs->type == SOCK_DGRAM && level != SOL_RDMA &&
	    setsockopt(rs->udp, level, optname, optval, optlen))
		return -1;
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	ret = rs_setopt(rs, level, optname, optval, optlen);
	sv_mutex_unlock(&rs->lock);
	if (ret == ENOTSUP && rs->type == SOCK_DGRAM && level != SOL_RDMA)
		ret = 0; /* the UDP socket took it */
	return ret ? sv_cm_err(ret) : 0;
}

static int rs_getopt(struct rsocket *rs, int level, int optname, void *optval,
		     socklen_t *optlen)
{
	int *ip = optval;

	if (level == SOL_SOCKET && optname == SO_LINGER) {
		struct linger *l = optval;

		if (*optlen < sizeof(*l))
			return EINVAL;
		l->l_onoff = !rs_opt_get(rs->so_opts, SO_LINGER);
		l->l_linger = 0;
		*optlen = sizeof(*l);
		return 0;
	}
	if (level == SOL_RDMA && optname == RDMA_ROUTE) {
		if (rs->route) {
			if (*optlen < rs->route_len)
				return EINVAL;
			memcpy(optval, rs->route, rs->route_len);
			*optlen = rs->route_len;
			return 0;
		}
		if (rs->type != SOCK_STREAM || !rs->id->route.num_paths)
			return EINVAL;
		if (*optlen < sizeof(struct ibv_path_data))
			return EINVAL;
		{
			struct ibv_sa_path_rec *p = rs->id->route.path_rec;
			struct ibv_path_data d;

			/* rdma-core's rs_convert_sa_path, for one path. */
			memset(&d, 0, sizeof(d));
			d.path.dgid = p->dgid;
			d.path.sgid = p->sgid;
			d.path.dlid = p->dlid;
			d.path.slid = p->slid;
			d.path.flowlabel_hoplimit =
				htonl(ntohl(p->flow_label) << 8) | p->hop_limit;
			d.path.tclass = p->traffic_class;
			d.path.reversible_numpath = p->reversible << 7 | 1;
			d.path.pkey = p->pkey;
			d.path.qosclass_sl = p->sl;
			d.path.mtu = p->mtu | 2 << 6;
			d.path.rate = p->rate | 2 << 6;
			d.path.packetlifetime = p->packet_life_time | 2 << 6;
			d.flags = p->preference;
			memcpy(optval, &d, sizeof(d));
			*optlen = sizeof(d);
		}
		return 0;
	}
	if (*optlen < sizeof(int))
		return EINVAL;
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			*ip = rs_opt_get(rs->so_opts, optname);
			break;
		case SO_RCVBUF:
			*ip = (int)rs->rbuf_size;
			break;
		case SO_SNDBUF:
			*ip = (int)rs->sbuf_size;
			break;
		case SO_ERROR:
			*ip = rs->err;
			rs->err = 0;
			break;
		case SO_TYPE:
			*ip = rs->type;
			break;
		default:
			return ENOTSUP;
		}
		break;
	case IPPROTO_TCP:
		if (rs->type != SOCK_STREAM)
			return ENOTSUP;
		switch (optname) {
		case TCP_NODELAY:
			*ip = rs_opt_get(rs->tcp_opts, optname);
			break;
		case TCP_MAXSEG:
			/* rdma-core: the path MTU, else 2048. */
			*ip = rs->id->route.num_paths ?
				      1 << (7 + rs->id->route.path_rec->mtu) :
				      2048;
			break;
		case TCP_KEEPIDLE:
			*ip = rs->keepalive_time;
			break;
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			*ip = 1; /* N/A */
			break;
		default:
			return ENOTSUP;
		}
		break;
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return ENOTSUP;
		*ip = rs_opt_get(rs->ipv6_opts, optname);
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			*ip = (int)rs->sq_size;
			break;
		case RDMA_RQSIZE:
			*ip = (int)rs->rq_size;
			break;
		case RDMA_INLINE:
			*ip = (int)rs->sq_inline;
			break;
		case RDMA_IOMAPSIZE:
			*ip = (int)rs->iomap_size;
			break;
		default:
			return ENOTSUP;
		}
		break;
	default:
		return ENOTSUP;
	}
	*optlen = sizeof(int);
	return 0;
}

SV_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			  socklen_t *optlen)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return sv_cm_err(EBADF);
	if (!optval || !optlen)
		return sv_cm_err(EFAULT);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (rs->type == SOCK_STREAM && level == SOL_SOCKET &&
	    optname == SO_ERROR &&
	    (rs->state >= RS_RESOLVING_ADDR && rs->state <= RS_CONNECTING))
		rs_do_connect(rs, true); /* the asynchronous connect's fate */
	ret = rs_getopt(rs, level, optname, optval, optlen);
	sv_mutex_unlock(&rs->lock);
	if (ret == ENOTSUP && rs->type == SOCK_DGRAM && level != SOL_RDMA)
		return getsockopt(rs->udp, level, optname, optval, optlen);
	return ret ? sv_cm_err(ret) : 0;
}

/* rdma-core: F_GETFL and F_SETFL (O_NONBLOCK); we also pass the
 * descriptor flags (F_GETFD/F_SETFD: FD_CLOEXEC) to the descriptor, which
 * librspreload's accept4(SOCK_CLOEXEC) uses. */
SV_EXPORT int rfcntl(int socket, int cmd, ... /* arg */)
{
	struct rsocket *rs = rs_lookup(socket);
	va_list ap;
	long arg = 0;
	int ret = 0;

	if (!rs)
		return sv_cm_err(EBADF);
	va_start(ap, cmd);
	if (cmd == F_SETFL || cmd == F_SETFD)
		arg = va_arg(ap, long);
	va_end(ap);
	switch (cmd) {
	case F_GETFL:
		sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
		ret = rs->fd_flags | O_RDWR;
		sv_mutex_unlock(&rs->lock);
		return ret;
	case F_SETFL:
		sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
		rs->fd_flags = (int)arg & ~O_ACCMODE;
		/* Waiters re-check whether they may still block. */
		rs_kick(rs);
		sv_mutex_unlock(&rs->lock);
		return 0;
	case F_GETFD:
		return fcntl(rs->fd, F_GETFD);
	case F_SETFD:
		return fcntl(rs->fd, F_SETFD, (int)arg);
	default:
		return sv_cm_err(ENOTSUP);
	}
}
