/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The UDP link (see udp.h). */
#include "link/udp.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/device.h"
#include "proto/icrc.h"
#include "util/clock.h"
#include "util/env.h"
#include "util/log.h"

/* Socket buffers: a window of in-flight packets must fit in the peer's
 * receive buffer or the kernel drops them (each datagram costs its
 * payload plus an skb).  SO_*BUFFORCE works for privileged processes;
 * otherwise the kernel caps at net.core.[rw]mem_max. */
#define SV_UDP_BUFSZ (8 << 20)

static void set_buf(int fd, int force_opt, int opt, int size)
{
	if (setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof(size)) == 0)
		return;
	if (setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size)))
		sv_dbg("udp: cannot size socket buffer: %s", strerror(errno));
}

int sv_udp_open(struct sv_udp_sock *s)
{
	return sv_udp_open_port(s, 0);
}

static int open_bound(struct sv_udp_sock *s, uint16_t port, bool shared)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_port = htons(port),
				  .sin6_addr = IN6ADDR_ANY_INIT };
	socklen_t alen = sizeof(a);
	int fd, off = 0, on = 1, pmtu;
	int err;

	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on)))
		goto fail;
	/* DF and no fragmentation: an IB packet is never fragmented, and an
	 * unconnected socket with DF sends IPv4 ID 0, which the ICRC's
	 * rebuilt IP header assumes (wire.c). */
	pmtu = IP_PMTUDISC_DO;
	if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		goto fail;
	pmtu = IPV6_PMTUDISC_DO;
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu,
		       sizeof(pmtu)))
		goto fail;
	set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, SV_UDP_BUFSZ);
	set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, SV_UDP_BUFSZ);
	/* Shared (udp.h): beside our user's sockets bound to multicast
	 * groups on the same port, and none of their datagrams (both options
	 * default to on; IPV6_MULTICAST_ALL needs Linux 4.20).  SO_REUSEPORT,
	 * not SO_REUSEADDR: the kernel lets only sockets of the same uid
	 * share the port with it, as it checks the owner's kernel uid. */
	if (shared &&
	    (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) ||
	     setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &off, sizeof(off))))
		goto fail;
	if (shared)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, &off,
				 sizeof(off));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen))
		goto fail;
	s->fd = fd;
	s->port = ntohs(a.sin6_port);
	s->rx_tclass = false;
	/* Standard mode's 4791 socket forwards UD datagrams to other
	 * processes; a capture records every packet's header. */
	if (shared || sv_env_pcap()[0])
		sv_udp_want_tclass(s);
	s->gro = false;
	s->gso = false;
	memset(&s->counts, 0, sizeof(s->counts));
	if (sv_env_gso()) {
		/* The option exists from Linux 4.18; whether the route's
		 * device takes it is seen at the first send (sv_udp_send). */
		int seg = 0;
		socklen_t slen = sizeof(seg);

		s->gso = !getsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &seg, &slen);
		if (!s->gso)
			sv_dbg("udp: no UDP_SEGMENT: %s", strerror(errno));
	}
	return 0;
fail:
	err = errno;
	close(fd);
	return err;
}

void sv_udp_want_tclass(struct sv_udp_sock *s)
{
	int on = 1;

	if (s->rx_tclass || s->fd < 0)
		return;
	if (setsockopt(s->fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof(on)) ||
	    setsockopt(s->fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof(on)))
		sv_dbg("udp: port %u: no traffic class on receive: %s", s->port,
		       strerror(errno));
	else
		s->rx_tclass = true;
}

int sv_udp_open_port(struct sv_udp_sock *s, uint16_t port)
{
	return open_bound(s, port, false);
}

int sv_udp_open_shared(struct sv_udp_sock *s, uint16_t port)
{
	return open_bound(s, port, true);
}

bool sv_udp_gro(struct sv_udp_sock *s)
{
	int on = 1;

	if (!s->gro && sv_env_gso()) {
		/* From Linux 5.0. */
		s->gro = !setsockopt(s->fd, IPPROTO_UDP, UDP_GRO, &on,
				     sizeof(on));
		if (!s->gro)
			sv_dbg("udp: no UDP_GRO: %s", strerror(errno));
	}
	return s->gro;
}

void sv_udp_close(struct sv_udp_sock *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int sv_udp_route_src(const struct sv_ipaddr *dst, struct sv_ipaddr *src)
{
	struct sockaddr_in6 a;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd, off = 0, err = 0;

	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	sv_ipaddr_to_sin6(dst, 9, 0, &a); /* connect() only routes */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len))
		err = errno;
	else
		sv_sockaddr_to_ipaddr((struct sockaddr *)&ss, src, NULL);
	close(fd);
	return err;
}

/* ---- receive ----------------------------------------------------------- */

#define SV_UDP_BATCH 64
/* Control data of a message: its addresses, its traffic class (IP_TOS
 * received as a byte, IPV6_TCLASS as an int; either sent as an int) and
 * its segment size (UDP_GRO received as an int, UDP_SEGMENT sent as a
 * uint16_t). */
#define SV_CMSG_SPACE                                                      \
	(CMSG_SPACE(sizeof(struct in6_pktinfo)) +                          \
	 CMSG_SPACE(sizeof(struct in_pktinfo)) + CMSG_SPACE(sizeof(int)) + \
	 CMSG_SPACE(sizeof(int)))

int sv_udp_recv(struct sv_udp_sock *s, struct sv_udp_rx *rx, int n)
{
	struct mmsghdr msgs[SV_UDP_BATCH];
	struct iovec iov[SV_UDP_BATCH];
	struct sockaddr_in6 from[SV_UDP_BATCH];
	uint8_t ctl[SV_UDP_BATCH][SV_CMSG_SPACE] __attribute__((aligned(8)));
	int i, got;

	if (n > SV_UDP_BATCH)
		n = SV_UDP_BATCH;
	for (i = 0; i < n; i++) {
		iov[i].iov_base = rx[i].buf;
		iov[i].iov_len = rx[i].size;
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_name = &from[i];
		msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_control = ctl[i];
		msgs[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
	}
	if (n == 1) {
		/* recvmmsg costs more than recvmsg for one datagram
		 * (docs/engine.md): a busy poller's single look
		 * (udp_receive) is on every one-way trip. */
		ssize_t r = recvmsg(s->fd, &msgs[0].msg_hdr, MSG_DONTWAIT);

		if (r < 0)
			return 0;
		msgs[0].msg_len = (unsigned int)r;
		got = 1;
	} else {
		got = recvmmsg(s->fd, msgs, (unsigned int)n, MSG_DONTWAIT,
			       NULL);
		if (got <= 0)
			return 0;
	}
	for (i = 0; i < got; i++) {
		struct msghdr *m = &msgs[i].msg_hdr;
		struct cmsghdr *c;
		struct sv_udp_rx *r = &rx[i];

		r->len = msgs[i].msg_len;
		r->seg = 0;
		r->truncated = (m->msg_flags & MSG_TRUNC) != 0;
		sv_sockaddr_to_ipaddr((struct sockaddr *)&from[i], &r->flow.src,
				      &r->flow.sport);
		r->flow.dport = s->port;
		r->flow.tclass = r->flow.unused = 0;
		memset(&r->flow.dst, 0, sizeof(r->flow.dst));
		r->flow.dst.family = r->flow.src.family;
		for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
			if (c->cmsg_level == IPPROTO_IP &&
			    c->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo pi;

				memcpy(&pi, CMSG_DATA(c), sizeof(pi));
				r->flow.dst.family = AF_INET;
				memcpy(r->flow.dst.addr, &pi.ipi_addr, 4);
			} else if (c->cmsg_level == IPPROTO_IPV6 &&
				   c->cmsg_type == IPV6_PKTINFO) {
				struct in6_pktinfo pi;
				struct sockaddr_in6 tmp = { .sin6_family =
								    AF_INET6 };

				memcpy(&pi, CMSG_DATA(c), sizeof(pi));
				tmp.sin6_addr = pi.ipi6_addr;
				sv_sockaddr_to_ipaddr((struct sockaddr *)&tmp,
						      &r->flow.dst, NULL);
			} else if (c->cmsg_level == IPPROTO_IP &&
				   c->cmsg_type == IP_TOS) {
				r->flow.tclass = *CMSG_DATA(c);
			} else if (c->cmsg_level == IPPROTO_IPV6 &&
				   c->cmsg_type == IPV6_TCLASS) {
				int tc;

				memcpy(&tc, CMSG_DATA(c), sizeof(tc));
				r->flow.tclass = (uint8_t)tc;
			} else if (c->cmsg_level == IPPROTO_UDP &&
				   c->cmsg_type == UDP_GRO) {
				int seg;

				memcpy(&seg, CMSG_DATA(c), sizeof(seg));
				if (seg > 0 && (uint32_t)seg < r->len)
					r->seg = (uint32_t)seg;
			}
		}
	}
	return got;
}

/* ---- send -------------------------------------------------------------- */

/* A lookup of the kernel's source per this long at most, per socket:
 * packets to more destinations than the cache holds name their source
 * rather than cost a route lookup each. */
#define SV_UDP_SRC_LOOKUP_NS (1000ull * 1000)

/* Must this packet name its source address?  The ICRC covers it, so it
 * must be the one the engine computed with; but saying so (IP_PKTINFO)
 * costs the kernel a lookup of that address on every send, a visible part
 * of a small message's one-way trip (docs/engine.md).
 * Where the kernel's own choice for the destination is that address
 * (the usual case: the GID is the address of the interface the route
 * leaves by), the packet says nothing.  The choice is looked up once per
 * destination and source (a connect(), sv_udp_route_src) and kept while
 * the host's addresses and routes stay as they were (sv_net_gen: the
 * address monitor hears of every change).  Between a change and the
 * monitor reading it a packet may leave from the new source with an
 * ICRC over the old: its receiver drops it, and it is resent as a lost
 * one, with its source said.  Link-local destinations keep saying it
 * (the interface goes with it), and so does everything while nobody
 * watches. */
static bool said_src(struct sv_udp_sock *s, const struct sv_link_pkt *t)
{
	const struct in6_addr *d = &t->dst->sin6_addr;
	uint64_t gen = sv_net_gen(), now;
	struct sv_udp_src *e;
	struct sv_ipaddr dst, kern;
	uint32_t h;

	if (!gen || t->dst->sin6_scope_id)
		return true;
	h = (uint32_t)d->s6_addr[15] * 31u + d->s6_addr[14] +
	    t->src->addr[t->src->family == AF_INET ? 3 : 15] * 7u;
	e = &s->srcs[h % SV_UDP_SRC_CACHE];
	if (e->gen == gen && !memcmp(&e->dst, d, sizeof(*d)) &&
	    sv_ipaddr_eq(&e->src, t->src))
		return !e->implied;
	now = sv_now_ns();
	if (s->src_looked_ns && now - s->src_looked_ns < SV_UDP_SRC_LOOKUP_NS)
		return true;
	s->src_looked_ns = now;
	s->counts.src_lookups++;
	sv_sockaddr_to_ipaddr((const struct sockaddr *)t->dst, &dst, NULL);
	e->gen = gen;
	e->dst = *d;
	e->src = *t->src;
	e->implied =
		!sv_udp_route_src(&dst, &kern) && sv_ipaddr_eq(&kern, t->src);
	return !e->implied;
}

static void set_src(struct sv_udp_sock *s, struct msghdr *m, uint8_t *ctl,
		    const struct sv_link_pkt *t)
{
	struct cmsghdr *c = (struct cmsghdr *)ctl;

	if (!t->src || !t->src->family || !said_src(s, t))
		return;
	s->counts.src_said++;
	/* The source address is part of the ICRC: say it. */
	m->msg_control = ctl;
	if (t->src->family == AF_INET) {
		struct in_pktinfo pi;

		memset(&pi, 0, sizeof(pi));
		memcpy(&pi.ipi_spec_dst, t->src->addr, 4);
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		m->msg_controllen = CMSG_SPACE(sizeof(pi));
	} else {
		struct in6_pktinfo pi;

		memset(&pi, 0, sizeof(pi));
		memcpy(&pi.ipi6_addr, t->src->addr, 16);
		pi.ipi6_ifindex = t->dst->sin6_scope_id;
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		m->msg_controllen = CMSG_SPACE(sizeof(pi));
	}
}

/* A traffic class other than 0 (the socket's): IP_TOS towards an IPv4
 * (v4-mapped) destination, IPV6_TCLASS towards an IPv6 one, as rxe puts
 * the AH's grh.traffic_class into the header it builds. */
static void set_tclass(struct msghdr *m, uint8_t *ctl,
		       const struct sv_link_pkt *t)
{
	struct cmsghdr *c = (struct cmsghdr *)(ctl + m->msg_controllen);
	int tc = t->tclass;

	if (!tc)
		return;
	m->msg_control = ctl;
	if (IN6_IS_ADDR_V4MAPPED(&t->dst->sin6_addr)) {
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_TOS;
	} else {
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_TCLASS;
	}
	c->cmsg_len = CMSG_LEN(sizeof(tc));
	memcpy(CMSG_DATA(c), &tc, sizeof(tc));
	m->msg_controllen += CMSG_SPACE(sizeof(tc));
}

static void set_seg(struct msghdr *m, uint8_t *ctl, uint16_t seg)
{
	struct cmsghdr *c = (struct cmsghdr *)(ctl + m->msg_controllen);

	m->msg_control = ctl;
	c->cmsg_level = IPPROTO_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	m->msg_controllen += CMSG_SPACE(sizeof(seg));
}

static bool same_dst(const struct sv_link_pkt *a, const struct sv_link_pkt *b)
{
	bool asrc = a->src && a->src->family, bsrc = b->src && b->src->family;

	return a->tclass == b->tclass &&
	       a->dst->sin6_port == b->dst->sin6_port &&
	       a->dst->sin6_scope_id == b->dst->sin6_scope_id &&
	       !memcmp(&a->dst->sin6_addr, &b->dst->sin6_addr, 16) &&
	       asrc == bsrc && (!asrc || sv_ipaddr_eq(a->src, b->src));
}

/* How many packets from tx[0] go as one UDP_SEGMENT send (at most max):
 * the same destination and source, the same length but for the last, each
 * its own buffer (fault injection's duplicates share one, and the segments
 * get different ICRCs), none to go alone (link.h), within the kernel's
 * limits. */
static int gso_run(const struct sv_link_pkt *tx, int max)
{
	uint32_t bytes = tx[0].len;
	int k;

	if (max > SV_UDP_GSO_SEGS)
		max = SV_UDP_GSO_SEGS;
	if (tx[0].alone)
		return 1;
	for (k = 1; k < max; k++) {
		const struct sv_link_pkt *t = &tx[k];

		if (t->alone || t->len > tx[0].len ||
		    bytes + t->len > SV_UDP_GSO_BYTES ||
		    t->buf == tx[k - 1].buf || !same_dst(t, tx))
			break;
		bytes += t->len;
		if (t->len < tx[0].len) {
			k++;
			break;
		}
	}
	return k;
}

/* A run's ICRCs, for IPv4 IDs 0..n-1 instead of all 0 (the kernel numbers
 * a send's segments from the send's own ID, which is 0 on an unconnected
 * socket with DF: ip_select_ident_segs, inet_gso_segment), or back (undo).
 * An ICRC left to the UDP checksum (zero: proto/wire.h) stays as it is. */
static void gso_ids(const struct sv_link_pkt *tx, int n, bool undo)
{
	int k;

	if (!tx[0].src || tx[0].src->family != AF_INET)
		return; /* IPv6 has no ID */
	for (k = 1; k < n; k++)
		if (!sv_icrc_left_to_udp(tx[k].buf, tx[k].len))
			sv_icrc_move_ip_id(tx[k].buf, tx[k].len,
					   undo ? (uint16_t)k : 0,
					   undo ? 0 : (uint16_t)k);
}

/* The socket cannot segment (EIO: the device lacks checksum offload, or
 * IPsec; EINVAL...): runs go as single datagrams from now on. */
static void gso_off(struct sv_udp_sock *s, int err)
{
	s->gso = false;
	sv_dbg("udp: port %u: UDP_SEGMENT refused (%s), one datagram per "
	       "packet from now on",
	       s->port, strerror(err));
}

/* Packets per sendmmsg (one iovec each): more than a run of segments
 * holds, so that runs end where lengths, destinations or the kernel's
 * limits end them, never at a round's end.  Rounds of 64 cut the
 * engine's batches at path MTU 1024 (62 packets a send) into sends of
 * 62 and 2: two trips through both UDP stacks where one would do. */
#define SV_UDP_TX_PKTS (2 * SV_UDP_GSO_SEGS + SV_UDP_BATCH)

int sv_udp_send(struct sv_udp_sock *s, const struct sv_link_pkt *tx, int n)
{
	struct mmsghdr msgs[SV_UDP_BATCH];
	struct iovec iov[SV_UDP_TX_PKTS];
	uint8_t ctl[SV_UDP_BATCH][SV_CMSG_SPACE] __attribute__((aligned(8)));
	int first[SV_UDP_BATCH], count[SV_UDP_BATCH];
	int done = 0, lost = 0;

	while (done < n) {
		int nmsg = 0, used = 0, sent, i;

		/* Messages of one packet each, or of a run with GSO, until
		 * the messages or the iovecs (one per packet) are used up. */
		while (done + used < n && used < SV_UDP_TX_PKTS &&
		       nmsg < SV_UDP_BATCH) {
			const struct sv_link_pkt *t = &tx[done + used];
			struct msghdr *m = &msgs[nmsg].msg_hdr;
			int left = n - done - used, k = 1;

			if (s->gso)
				k = gso_run(t, left < SV_UDP_TX_PKTS - used ?
						       left :
						       SV_UDP_TX_PKTS - used);

			memset(&msgs[nmsg], 0, sizeof(msgs[nmsg]));
			for (i = 0; i < k; i++) {
				iov[used + i].iov_base = t[i].buf;
				iov[used + i].iov_len = t[i].len;
			}
			m->msg_name = (void *)t->dst;
			m->msg_namelen = sizeof(*t->dst);
			m->msg_iov = &iov[used];
			m->msg_iovlen = (size_t)k;
			set_src(s, m, ctl[nmsg], t);
			set_tclass(m, ctl[nmsg], t);
			if (k > 1) {
				set_seg(m, ctl[nmsg], (uint16_t)t->len);
				gso_ids(t, k, false);
			}
			first[nmsg] = done + used;
			count[nmsg] = k;
			used += k;
			nmsg++;
		}
		if (nmsg == 1) /* the lighter call, as for receives */
			sent = sendmsg(s->fd, &msgs[0].msg_hdr, 0) < 0 ? -1 : 1;
		else
			sent = sendmmsg(s->fd, msgs, (unsigned int)nmsg, 0);
		if (sent < 0) {
			int err = errno;

			sent = 0;
			if (err == EINTR) {
				/* nothing sent: again */
			} else if (count[0] > 1 &&
				   (err == EIO || err == EINVAL ||
				    err == EOPNOTSUPP || err == ENOPROTOOPT)) {
				/* Sent again, one by one (its ICRCs go back
				 * to ID 0 below).  EINVAL may also be a run
				 * longer than the path MTU, which would be
				 * refused alone too (EMSGSIZE, DF). */
				gso_off(s, err);
			} else {
				/* The first message was refused (a firewall,
				 * no route, EMSGSIZE...): its packets are
				 * lost; go on. */
				sv_dbg("udp: send to port %u: %s",
				       ntohs(tx[done].dst->sin6_port),
				       strerror(err));
				lost += count[0];
				done += count[0];
			}
		}
		for (i = 0; i < sent; i++) {
			done += count[i];
			if (count[i] > 1) {
				s->counts.gso_sends++;
				s->counts.gso_pkts += (uint64_t)count[i];
			}
		}
		/* Runs built but not sent: their ICRCs back to ID 0, as the
		 * next round may cut them differently. */
		for (i = sent; i < nmsg; i++)
			if (count[i] > 1 && first[i] >= done)
				gso_ids(&tx[first[i]], count[i], true);
	}
	return lost;
}

/* ---- the link (link/link.h) ---------------------------------------------- */

static int udp_open(void *ep, uint16_t *port, int *sockfd)
{
	struct sv_udp_sock *s = ep;
	int err = sv_udp_open(s);

	if (!err) {
		*port = s->port;
		*sockfd = s->fd;
	}
	return err;
}

static void udp_close(void *ep)
{
	sv_udp_close(ep);
}

static unsigned int udp_transmit(void *ep, void *peer,
				 const struct sv_link_pkt *pkt, unsigned int n,
				 unsigned int *bells)
{
	return (unsigned int)sv_udp_send(ep, pkt, (int)n);
}

/* After a receive that found the socket empty, a busy poller's next asks
 * for one datagram: recvmmsg goes on to the next slot after each datagram
 * until one finds nothing, and in a ping-pong (a busy poller waiting for
 * each answer) that second look is on the round trip.  A datagram taken that way ends this
 * receive (the rest waits for the next pass, which asks for a full
 * batch).  The progress thread always asks for a full batch: epoll woke
 * it because datagrams wait, and a stream it receives would otherwise
 * pay a pass more after each time it drains the socket. */
static unsigned int udp_receive(void *ep, sv_link_deliver_fn *fn, void *arg,
				unsigned int budget, uint64_t now, bool app)
{
	struct sv_udp_sock *s = ep;
	unsigned int got = 0;

	while (got < budget) {
		unsigned int want = s->rx_dry && app ? 1 : s->nrx;
		int i, n = sv_udp_recv(s, s->rx, (int)want);

		for (i = 0; i < n; i++) {
			struct sv_udp_rx *r = &s->rx[i];
			uint32_t off;

			if (!r->seg || r->truncated) {
				fn(arg, r->buf, r->len, r->truncated, &r->flow);
				got++;
				continue;
			}
			/* UDP_GRO: datagrams of one sender, back to back. */
			for (off = 0; off < r->len; off += r->seg) {
				uint32_t len = r->len - off;

				fn(arg, r->buf + off,
				   len < r->seg ? len : r->seg, false,
				   &r->flow);
				got++;
				s->counts.gro_pkts++;
			}
		}
		s->rx_dry = n == 0;
		if ((unsigned int)n < s->nrx)
			break;
	}
	return got;
}

static void udp_take_counts(void *ep, struct sv_link_counts *c)
{
	struct sv_udp_sock *s = ep;

	c->gso_sends += s->counts.gso_sends;
	c->gso_pkts += s->counts.gso_pkts;
	c->gro_pkts += s->counts.gro_pkts;
	c->src_said += s->counts.src_said;
	c->src_lookups += s->counts.src_lookups;
	memset(&s->counts, 0, sizeof(s->counts));
}

const struct sv_link_ops sv_link_udp = {
	.name = "udp",
	.wire = true,
	.open = udp_open,
	.close = udp_close,
	.transmit = udp_transmit,
	.receive = udp_receive,
	.take_counts = udp_take_counts,
};
