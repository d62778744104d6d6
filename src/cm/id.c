/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdma_cm ids and their addresses: create/destroy, bind, address and route
 * resolution, listen, options, ports and the device list.
 *
 * An id's port is a real TCP port: binding creates and binds a TCP socket
 * (with SO_REUSEADDR when the port is named, so that a restarted server is
 * not kept off its port by connections lingering in TIME_WAIT; two
 * listeners still exclude each other).  All port spaces share the host's TCP ports, including RDMA_PS_UDP,
 * whose SIDR exchange also runs over TCP.  Address resolution needs no
 * neighbour discovery on RoCE v2 (the peer is an IP address), so it is a
 * route lookup done at once; its event is queued before the call returns.
 */
#include "cm/cm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

struct sv_cm_id *sv_id_alloc(struct rdma_event_channel *ch, void *context,
			     enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct sv_cm_id *id;

	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_UDP:
	case RDMA_PS_IB:
	case RDMA_PS_IPOIB:
		break;
	default:
		errno = EINVAL;
		return NULL;
	}
	id = calloc(1, sizeof(*id));
	if (!id) {
		errno = ENOMEM;
		return NULL;
	}
	if (!ch) {
		struct sv_cm_channel *pch = sv_channel_new(true);

		if (!pch) {
			free(id);
			return NULL;
		}
		ch = &pch->ch;
		id->sync = true;
	}
	id->id.channel = ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qpt;
	id->state = SV_CM_IDLE; /* where it starts, not a transition */
	id->gid_index = -1;
	id->afonly = -1;
	id->qkey = RDMA_UDP_QKEY;
	list_head_init(&id->mcs);
	list_add_tail(&sv_cm.ids, &id->node);
	return id;
}

/* Lock held; the id is off every list but sv_cm.ids. */
void sv_id_free(struct sv_cm_id *id)
{
	list_del(&id->node);
	sv_cm_dev_detach(id);
	if (id->sync)
		sv_channel_free(to_sv_ch(id->id.channel));
	free(id->id.route.path_rec);
	free(id->ep_qp_attr);
	free(id->connect_pdata);
	if (id->resolved_ai)
		rdma_freeaddrinfo(id->resolved_ai);
	free(id);
}

void sv_id_destroy_unborn(struct sv_cm_id *id)
{
	id->destroying = true;
	if (id->sync)
		sv_event_purge(id);
	sv_conn_teardown(id);
	sv_cm_timer_clear(id);
	sv_id_free(id);
}

SV_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			     struct rdma_cm_id **cmid, void *context,
			     enum rdma_port_space ps)
{
	enum ibv_qp_type qpt = (ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP) ?
				       IBV_QPT_UD :
				       IBV_QPT_RC;
	struct sv_cm_id *id;

	if (!cmid)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	id = sv_id_alloc(channel, context, ps, qpt);
	sv_cm_unlock();
	if (!id)
		return -1;
	*cmid = &id->id;
	return 0;
}

SV_EXPORT int rdma_destroy_id(struct rdma_cm_id *cmid)
{
	struct sv_cm_id *id = to_sv_id(cmid);

	if (!cmid)
		return sv_cm_err(EINVAL);
	if (cmid->event) {
		rdma_ack_cm_event(cmid->event);
		cmid->event = NULL;
	}
	sv_cm_lock();
	id->destroying = true;
	sv_event_purge(id);
	sv_conn_teardown(id);
	sv_cm_timer_clear(id);
	/* Events already handed out must be acked first (rdma-core's rule:
	 * the application may still be reading them). */
	while (id->events_acked < id->events_reported)
		sv_cond_wait(&sv_cm.acked, &sv_cm.lock);
	sv_mc_leave_all(id);
	sv_id_free(id);
	sv_cm_unlock();
	return 0;
}

/* ---- binding ------------------------------------------------------------------ */

/* Create and bind the id's TCP socket; fills route.addr.src_addr with the
 * bound address and port (lock held).  0 or errno. */
int sv_id_bind_sock(struct sv_cm_id *id, const struct sockaddr *addr)
{
	struct sockaddr_storage ss;
	socklen_t len = sv_cm_addrlen(addr);
	int fd, one = 1;

	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return errno;
	/* A named port may have connections of an earlier life lingering in
	 * TIME_WAIT: reuse it.  An ephemeral one is left to the kernel, which
	 * then never hands out a port with such state behind it (a SYN that
	 * met it could be answered with a reset). */
	if (sv_cm_port_of(addr))
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->sa_family == AF_INET6 && id->afonly >= 0)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &id->afonly,
			   sizeof(id->afonly));
	if (bind(fd, addr, len)) {
		int err = errno;

		close(fd);
		return err;
	}
	len = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss, &len)) {
		int err = errno;

		close(fd);
		return err;
	}
	id->sock = sv_sock_new(fd, SV_SOCK_BOUND);
	if (!id->sock) {
		close(fd);
		return ENOMEM;
	}
	id->sock->id = id;
	memcpy(&id->id.route.addr.src_storage, &ss, sizeof(ss));
	return 0;
}

/* Bind the id to the device for its (specific) source address. */
static int attach_src(struct sv_cm_id *id)
{
	struct sockaddr *src = &id->id.route.addr.src_addr;
	int ret, idx;

	ret = sv_cm_dev_attach(id);
	if (ret)
		return ret;
	idx = sv_cm_gid_index(src);
	if (idx < 0)
		return ENODEV;
	id->gid_index = idx;
	sv_cm_addr_to_gid(src, &id->id.route.addr.addr.ibaddr.sgid);
	return 0;
}

SV_EXPORT int rdma_bind_addr(struct rdma_cm_id *cmid, struct sockaddr *addr)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	int ret;

	if (!cmid || !sv_cm_addrlen(addr))
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	if (id->state != SV_CM_IDLE) {
		sv_cm_unlock();
		return sv_cm_err(EINVAL);
	}
	ret = sv_id_bind_sock(id, addr);
	/* The kernel's rdma_cm takes a loopback address as it takes the
	 * wildcard (cma_any_addr): the bind succeeds and attaches no device
	 * until the id resolves or a request arrives.  libfabric's verbs
	 * provider counts on it: a server started without an address binds
	 * "localhost" and, finding no device there, listens on the device's
	 * own addresses instead, which a peer on another host can reach. */
	if (!ret && !sv_cm_addr_any(addr) && !sv_cm_addr_loopback(addr)) {
		ret = attach_src(id);
		if (ret) {
			sv_sock_close(id->sock);
			memset(&id->id.route.addr.src_storage, 0,
			       sizeof(id->id.route.addr.src_storage));
		}
	}
	if (!ret)
		sv_cm_id_set_state(id, SV_CM_ADDR_BOUND);
	sv_cm_unlock();
	return ret ? sv_cm_err(ret) : 0;
}

/* ---- address and route resolution --------------------------------------------- */

static bool addr_is_multicast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(ntohl(
			((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_MULTICAST(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

/* The source address the host would use towards dst (a routing lookup
 * through a connected UDP socket).  0 or errno. */
static int route_source(const struct sockaddr *dst,
			struct sockaddr_storage *src)
{
	struct sockaddr_storage d;
	socklen_t len = sizeof(*src);
	int fd, ret = 0;

	memcpy(&d, dst, sv_cm_addrlen(dst));
	if (!sv_cm_port_of((struct sockaddr *)&d))
		sv_cm_set_port((struct sockaddr *)&d, 9); /* any port routes */
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	memset(src, 0, sizeof(*src));
	if (connect(fd, (struct sockaddr *)&d, sv_cm_addrlen(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		ret = errno;
	close(fd);
	if (!ret)
		sv_cm_set_port((struct sockaddr *)src, 0);
	return ret;
}

/* A multicast group with no route (a namespace with only lo): the
 * loopback address of the family carries it. */
static void loopback_of(int family, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = family;
	if (family == AF_INET)
		((struct sockaddr_in *)ss)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_loopback;
}

SV_EXPORT int rdma_resolve_addr(struct rdma_cm_id *cmid,
				struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	struct sockaddr_storage src, dst;
	struct sockaddr *bound;
	int ret = 0, status = 0;

	if (!cmid || !sv_cm_addrlen(dst_addr))
		return sv_cm_err(EINVAL);
	if (src_addr && src_addr->sa_family && !sv_cm_addrlen(src_addr))
		return sv_cm_err(EINVAL);
	if (src_addr && !src_addr->sa_family)
		src_addr = NULL;
	if (src_addr && src_addr->sa_family != dst_addr->sa_family)
		return sv_cm_err(EINVAL);

	memset(&dst, 0, sizeof(dst));
	memcpy(&dst, dst_addr, sv_cm_addrlen(dst_addr));
	memset(&src, 0, sizeof(src));

	sv_cm_lock();
	switch (id->state) {
	case SV_CM_IDLE:
		break;
	case SV_CM_ADDR_BOUND:
	case SV_CM_ADDR_RESOLVED:
		if (id->id.route.addr.src_addr.sa_family != dst.ss_family)
			ret = EINVAL;
		break;
	default:
		ret = EINVAL;
	}
	if (ret)
		goto out;

	/* Source: the bound address, the caller's, or the route's. */
	bound = &id->id.route.addr.src_addr;
	if (id->state != SV_CM_IDLE && !sv_cm_addr_any(bound))
		memcpy(&src, bound, sv_cm_addrlen(bound));
	else if (src_addr && !sv_cm_addr_any(src_addr))
		memcpy(&src, src_addr, sv_cm_addrlen(src_addr));
	if (sv_cm_addr_any((struct sockaddr *)&dst)) {
		/* Resolving the wildcard means this host (as the kernel's
		 * loopback resolution does). */
		uint16_t port = sv_cm_port_of((struct sockaddr *)&dst);

		if (!src.ss_family)
			loopback_of(dst.ss_family, &src);
		memcpy(&dst, &src, sizeof(src));
		sv_cm_set_port((struct sockaddr *)&dst, port);
	} else if (!src.ss_family) {
		ret = route_source((struct sockaddr *)&dst, &src);
		if (ret && addr_is_multicast((struct sockaddr *)&dst)) {
			loopback_of(dst.ss_family, &src);
			ret = 0;
		}
		if (ret)
			goto out;
	}

	/* Bind now if nothing is bound yet: this is the id's port. */
	if (id->state == SV_CM_IDLE) {
		struct sockaddr_storage b = src;

		sv_cm_set_port((struct sockaddr *)&b,
			       src_addr ? sv_cm_port_of(src_addr) : 0);
		ret = sv_id_bind_sock(id, (struct sockaddr *)&b);
		if (ret)
			goto out;
	} else {
		uint16_t port = sv_cm_port_of(bound);

		memcpy(bound, &src, sv_cm_addrlen((struct sockaddr *)&src));
		sv_cm_set_port(bound, port);
	}
	memcpy(&id->id.route.addr.dst_storage, &dst, sizeof(dst));
	sv_cm_addr_to_gid((struct sockaddr *)&dst,
			  &id->id.route.addr.addr.ibaddr.dgid);

	/* The source must belong to the RDMA device (every local IP does,
	 * unless it vanished meanwhile): the kernel says ADDR_ERROR. */
	status = attach_src(id);
	sv_cm_id_set_state(id, status ? SV_CM_ADDR_BOUND : SV_CM_ADDR_RESOLVED);
	sv_event_post(id,
		      status ? RDMA_CM_EVENT_ADDR_ERROR :
			       RDMA_CM_EVENT_ADDR_RESOLVED,
		      -status);
out:
	sv_cm_unlock();
	if (ret)
		return sv_cm_err(ret);
	return sv_cm_sync_complete(id);
}

/* A RoCE path record for the id's addresses (what rdma-core shows in
 * route.path_rec after route resolution). */
int sv_id_set_path(struct sv_cm_id *id)
{
	struct ibv_sa_path_rec *p = id->id.route.path_rec;
	struct ibv_port_attr pa;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return ENOMEM;
	}
	memset(p, 0, sizeof(*p));
	p->dgid = id->id.route.addr.addr.ibaddr.dgid;
	p->sgid = id->id.route.addr.addr.ibaddr.sgid;
	p->hop_limit = SV_CM_HOP_LIMIT;
	p->traffic_class = id->tos;
	p->reversible = 1;
	p->numb_path = 1;
	p->pkey = htobe16(0xffff);
	p->mtu_selector = 2;
	p->mtu = IBV_MTU_1024;
	if (id->id.verbs && !ibv_query_port(id->id.verbs, 1, &pa))
		p->mtu = pa.active_mtu;
	p->rate_selector = 2;
	p->rate = 0;
	p->packet_life_time_selector = 2;
	p->packet_life_time = SV_CM_DEFAULT_ACK_TIMEOUT - 1;
	id->id.route.path_rec = p;
	id->id.route.num_paths = 1;
	return 0;
}

SV_EXPORT int rdma_resolve_route(struct rdma_cm_id *cmid, int timeout_ms)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	int ret;

	if (!cmid)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	if (id->state != SV_CM_ADDR_RESOLVED || !cmid->verbs) {
		sv_cm_unlock();
		return sv_cm_err(EINVAL);
	}
	ret = sv_id_set_path(id);
	if (!ret) {
		sv_cm_id_set_state(id, SV_CM_ROUTE_RESOLVED);
		sv_event_post(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	}
	sv_cm_unlock();
	if (ret)
		return sv_cm_err(ret);
	return sv_cm_sync_complete(id);
}

/* ---- listen ------------------------------------------------------------------- */

SV_EXPORT int rdma_listen(struct rdma_cm_id *cmid, int backlog)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	int ret = 0;

	if (!cmid)
		return sv_cm_err(EINVAL);
	if (backlog <= 0)
		backlog = SOMAXCONN;
	sv_cm_lock();
	if (id->state == SV_CM_LISTEN) {
		/* The kernel just takes the new backlog. */
		id->backlog = backlog;
		listen(id->sock->fd, backlog);
		goto out;
	}
	if (id->state == SV_CM_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		ret = sv_id_bind_sock(id, (struct sockaddr *)&any);
		if (ret)
			goto out;
		sv_cm_id_set_state(id, SV_CM_ADDR_BOUND);
	}
	if (id->state != SV_CM_ADDR_BOUND || !id->sock) {
		ret = EINVAL;
		goto out;
	}
	/* Standard mode: requests come as MADs on QP1 (the TCP listen
	 * below only keeps the port the id's own). */
	if (sv_gsi_mode() &&
	    ((ret = sv_gsi_start()) || (ret = sv_gsi_listen(id))))
		goto out;
	if (listen(id->sock->fd, backlog)) {
		ret = errno;
		sv_gsi_unlisten(id);
		goto out;
	}
	id->backlog = backlog;
	id->sock->kind = SV_SOCK_LISTEN;
	sv_sock_want(id->sock, EPOLLIN);
	sv_cm_id_set_state(id, SV_CM_LISTEN);
out:
	sv_cm_unlock();
	return ret ? sv_cm_err(ret) : 0;
}

/* ---- options -------------------------------------------------------------------- */

static int set_id_option(struct sv_cm_id *id, int optname, void *optval,
			 size_t optlen)
{
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		id->tos = *(uint8_t *)optval;
		id->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (optlen != sizeof(int))
			return EINVAL;
		/* Our sockets always reuse addresses (see the header); the
		 * kernel only takes the option before listening. */
		if (id->state != SV_CM_IDLE &&
		    (id->state == SV_CM_LISTEN || !*(int *)optval))
			return EINVAL;
		id->reuseaddr = *(int *)optval != 0;
		return 0;
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int))
			return EINVAL;
		if (id->state != SV_CM_IDLE)
			return EINVAL;
		id->afonly = *(int *)optval != 0;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		if (id->id.qp_type != IBV_QPT_RC)
			return EINVAL;
		id->ack_timeout = *(uint8_t *)optval;
		if (id->ack_timeout > 31)
			id->ack_timeout = 31;
		id->ack_timeout_set = true;
		return 0;
	default:
		return ENOSYS;
	}
}

/* RDMA_OPTION_IB_PATH: the application supplies the route (as ibacm
 * users do); on an address-resolved id that completes route resolution. */
static int set_ib_path(struct sv_cm_id *id, void *optval, size_t optlen)
{
	struct ibv_path_data *pd = optval;
	int ret;

	if (!optlen || optlen % sizeof(struct ibv_path_data) || !optval)
		return EINVAL;
	if (id->state != SV_CM_ADDR_RESOLVED)
		return EINVAL;
	ret = sv_id_set_path(id);
	if (ret)
		return ret;
	if (pd->path.mtu & 0x3f)
		id->id.route.path_rec->mtu = pd->path.mtu & 0x3f;
	sv_cm_id_set_state(id, SV_CM_ROUTE_RESOLVED);
	sv_event_post(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return 0;
}

SV_EXPORT int rdma_set_option(struct rdma_cm_id *cmid, int level, int optname,
			      void *optval, size_t optlen)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	int ret;

	if (!cmid || (!optval && optlen))
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	if (level == RDMA_OPTION_ID)
		ret = set_id_option(id, optname, optval, optlen);
	else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		ret = set_ib_path(id, optval, optlen);
	else
		ret = ENOSYS;
	sv_cm_unlock();
	return ret ? sv_cm_err(ret) : 0;
}

/* ---- small queries ------------------------------------------------------------------ */

static __be16 port_be(const struct sockaddr *sa)
{
	return htons(sv_cm_port_of(sa));
}

SV_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *cmid)
{
	return port_be(&cmid->route.addr.src_addr);
}

SV_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *cmid)
{
	return port_be(&cmid->route.addr.dst_addr);
}

SV_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = NULL;
	int ret;

	sv_cm_lock();
	ret = sv_cm_dev_open();
	if (!ret) {
		list = calloc(2, sizeof(*list));
		if (list)
			list[0] = sv_cm.verbs;
		else
			ret = ENOMEM;
	}
	sv_cm_unlock();
	if (num_devices)
		*num_devices = list ? 1 : 0;
	if (!list)
		errno = ret;
	return list;
}

SV_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	/* The contexts stay open for the process, as rdma-core's do. */
	free(list);
}
