/* The UDP link (see udp.h). */
#include "link/udp.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

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

int sv_udp_open_port(struct sv_udp_sock *s, uint16_t port)
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
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen))
		goto fail;
	s->fd = fd;
	s->port = ntohs(a.sin6_port);
	return 0;
fail:
	err = errno;
	close(fd);
	return err;
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
#define SV_CMSG_SPACE                             \
	(CMSG_SPACE(sizeof(struct in6_pktinfo)) + \
	 CMSG_SPACE(sizeof(struct in_pktinfo)))

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
		iov[i].iov_len = SV_UDP_RXBUF;
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_name = &from[i];
		msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_control = ctl[i];
		msgs[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
	}
	got = recvmmsg(s->fd, msgs, (unsigned int)n, MSG_DONTWAIT, NULL);
	if (got <= 0)
		return 0;
	for (i = 0; i < got; i++) {
		struct msghdr *m = &msgs[i].msg_hdr;
		struct cmsghdr *c;
		struct sv_udp_rx *r = &rx[i];

		r->len = msgs[i].msg_len;
		r->truncated = (m->msg_flags & MSG_TRUNC) != 0;
		sv_sockaddr_to_ipaddr((struct sockaddr *)&from[i], &r->flow.src,
				      &r->flow.sport);
		r->flow.dport = s->port;
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
			}
		}
	}
	return got;
}

/* ---- send -------------------------------------------------------------- */

int sv_udp_send(struct sv_udp_sock *s, const struct sv_link_pkt *tx, int n)
{
	struct mmsghdr msgs[SV_UDP_BATCH];
	struct iovec iov[SV_UDP_BATCH];
	uint8_t ctl[SV_UDP_BATCH][SV_CMSG_SPACE] __attribute__((aligned(8)));
	int i, done = 0, lost = 0;

	while (done < n) {
		int batch = n - done, sent;

		if (batch > SV_UDP_BATCH)
			batch = SV_UDP_BATCH;
		for (i = 0; i < batch; i++) {
			const struct sv_link_pkt *t = &tx[done + i];
			struct msghdr *m = &msgs[i].msg_hdr;
			struct cmsghdr *c;

			memset(&msgs[i], 0, sizeof(msgs[i]));
			iov[i].iov_base = (void *)t->buf;
			iov[i].iov_len = t->len;
			m->msg_name = (void *)t->dst;
			m->msg_namelen = sizeof(*t->dst);
			m->msg_iov = &iov[i];
			m->msg_iovlen = 1;
			if (!t->src || !t->src->family)
				continue;
			/* The source address is part of the ICRC: say it. */
			m->msg_control = ctl[i];
			c = (struct cmsghdr *)ctl[i];
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
		sent = sendmmsg(s->fd, msgs, (unsigned int)batch, 0);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			/* The first datagram was refused (a firewall, no
			 * route, EMSGSIZE...): it is lost; go on. */
			sv_dbg("udp: send to port %u: %s",
			       ntohs(tx[done].dst->sin6_port), strerror(errno));
			lost++;
			done++;
			continue;
		}
		done += sent;
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

static unsigned int udp_receive(void *ep, sv_link_deliver_fn *fn, void *arg,
				unsigned int budget, uint64_t now)
{
	struct sv_udp_sock *s = ep;
	unsigned int got = 0;

	while (got < budget) {
		int i, n = sv_udp_recv(s, s->rx, (int)s->nrx);

		for (i = 0; i < n; i++)
			fn(arg, s->rx[i].buf, s->rx[i].len, s->rx[i].truncated,
			   &s->rx[i].flow);
		got += (unsigned int)n;
		if ((unsigned int)n < s->nrx)
			break;
	}
	return got;
}

const struct sv_link_ops sv_link_udp = {
	.name = "udp",
	.wire = true,
	.open = udp_open,
	.close = udp_close,
	.transmit = udp_transmit,
	.receive = udp_receive,
};
