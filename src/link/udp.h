/*
 * The UDP link: RoCE v2 packets as UDP datagrams.
 *
 * One socket serves up to 256 QPs of one engine (QPN = port << 8 | slot).
 * Sockets are AF_INET6 dual-stack (IPV6_V6ONLY off) bound to the wildcard
 * address with an ephemeral port, so IPv4-mapped and IPv6 GIDs both work,
 * and the kernel's port allocation makes QPNs unique on the host with no
 * registry.  Packets are received and sent in batches (recvmmsg/sendmmsg);
 * the destination IP of each received packet (IP_PKTINFO/IPV6_PKTINFO) and
 * the source IP of each sent packet are explicit, because the RoCE v2 ICRC
 * covers them.
 */
#ifndef SV_LINK_UDP_H
#define SV_LINK_UDP_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include "link/link.h"
#include "proto/wire.h"

/* Receive buffers are larger than any valid packet so an oversized
 * datagram is seen as such rather than silently truncated. */
#define SV_UDP_RXBUF (SV_MAX_PKT + 256)

struct sv_udp_rx;

struct sv_udp_sock {
	int fd;
	uint16_t port; /* host order */
	/* Where the link's receive puts a batch (the engine's buffers,
	 * shared by its sockets): nrx datagrams of SV_UDP_RXBUF bytes. */
	struct sv_udp_rx *rx;
	unsigned int nrx;
};

/* Open a socket with an ephemeral port.  0 or errno. */
int sv_udp_open(struct sv_udp_sock *s);
/* The same bound to a given port (0: ephemeral).  0 or errno. */
int sv_udp_open_port(struct sv_udp_sock *s, uint16_t port);
void sv_udp_close(struct sv_udp_sock *s);

/* One datagram of a receive batch. */
struct sv_udp_rx {
	uint8_t *buf; /* caller-provided, SV_UDP_RXBUF bytes */
	uint32_t len;
	bool truncated;
	struct sv_flow flow; /* src = sender, dst = us */
};

/* Receive up to n datagrams without blocking; returns the count (0 when
 * none are waiting). */
int sv_udp_recv(struct sv_udp_sock *s, struct sv_udp_rx *rx, int n);

/* Send n datagrams (each to its dst, from its src).  Returns how many the kernel refused (each is lost,
 * like a packet dropped by the network; reliability is the transport's). */
int sv_udp_send(struct sv_udp_sock *s, const struct sv_link_pkt *tx, int n);

/* Which local address would the kernel use to reach dst?  0 or errno. */
int sv_udp_route_src(const struct sv_ipaddr *dst, struct sv_ipaddr *src);

#endif
