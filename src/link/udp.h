/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The UDP link: RoCE v2 packets as UDP datagrams.
 *
 * One socket serves up to 256 QPs of one engine (QPN = port << 8 | slot).
 * Sockets are AF_INET6 dual-stack (IPV6_V6ONLY off) bound to the wildcard
 * address with an ephemeral port, so IPv4-mapped and IPv6 GIDs both work,
 * and the kernel's port allocation makes QPNs unique on the host with no
 * registry.  Packets are received and sent in batches (recvmmsg/sendmmsg);
 * the destination IP of each received packet is read (IP_PKTINFO/
 * IPV6_PKTINFO) and the source IP of each sent packet is the one its ICRC
 * was computed with, since the RoCE v2 ICRC covers both: named in the send
 * where the kernel would pick another (udp.c said_src).
 *
 * Segmentation offloads (SOFTVERBS_GSO=0 turns both off): consecutive
 * packets of equal length to one destination leave as one send with
 * UDP_SEGMENT, which the kernel (or the NIC) cuts into the same datagrams
 * at the last moment, and a socket with UDP_GRO may receive several
 * datagrams of one sender coalesced into one buffer, cut back here before
 * the engine sees them.  The wire carries the packets it carried without
 * them; only the IPv4 Identification differs (see sv_udp_send).
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
/* A socket with UDP_GRO needs buffers for the largest coalesced receive
 * (one IP datagram's worth): a smaller one would truncate it and lose
 * every datagram after the cut. */
#define SV_UDP_GRO_BUF 65536
/* At most this many packets in one UDP_SEGMENT send (the kernel's
 * UDP_MAX_SEGMENTS: 64 before Linux 6.9, 128 since), and at most this many
 * bytes (one IP datagram, IPv6's header being the larger). */
#define SV_UDP_GSO_SEGS 64
#define SV_UDP_GSO_BYTES (65535 - 40 - 8)

struct sv_udp_rx;

/* Would the kernel pick this source address for this destination anyway?
 * (udp.c said_src) */
#define SV_UDP_SRC_CACHE 16
struct sv_udp_src {
	uint64_t gen; /* core/device.h sv_net_gen when looked up; 0: empty */
	struct in6_addr dst;
	struct sv_ipaddr src;
	bool implied;
};

struct sv_udp_sock {
	int fd;
	uint16_t port; /* host order */
	/* Where the link's receive puts a batch (the engine's buffers,
	 * shared by its sockets): nrx of them, each with its size. */
	struct sv_udp_rx *rx;
	unsigned int nrx;
	bool rx_tclass; /* receives read the traffic class (below) */
	bool gso; /* sends runs with UDP_SEGMENT */
	bool gro; /* receives may be coalesced (buffers: SV_UDP_GRO_BUF) */
	/* The last receive found the socket empty: the next asks for one
	 * datagram only, if it is a busy poller's (the progress thread,
	 * woken by the datagrams, takes a full batch at once; udp.c
	 * udp_receive). */
	bool rx_dry;
	struct sv_link_counts counts; /* collected by the engine */
	struct sv_udp_src srcs[SV_UDP_SRC_CACHE];
	uint64_t src_looked_ns; /* the last lookup (they are rate-limited) */
};

/* Open a socket with an ephemeral port (with UDP_SEGMENT sends when the
 * kernel has them and SOFTVERBS_GSO allows).  0 or errno. */
int sv_udp_open(struct sv_udp_sock *s);
/* Ask for coalesced receives (UDP_GRO) where SOFTVERBS_GSO allows and
 * the kernel has them; the caller then gives buffers of SV_UDP_GRO_BUF
 * bytes.  Returns s->gro. */
bool sv_udp_gro(struct sv_udp_sock *s);
/* The same bound to a given port (0: ephemeral).  0 or errno. */
int sv_udp_open_port(struct sv_udp_sock *s, uint16_t port);
/* The same with SO_REUSEPORT, so that our user's sockets bound to a
 * multicast group on that port (engine/transport/mcast.c) may join it, and with
 * IP_MULTICAST_ALL and IPV6_MULTICAST_ALL off, so that it gets none of
 * their datagrams.  Any socket of another user, or without SO_REUSEPORT,
 * on the port still makes the bind fail (EADDRINUSE), and so does ours
 * against another user's: the kernel compares the sockets' owners. */
int sv_udp_open_shared(struct sv_udp_sock *s, uint16_t port);
/* Receive each datagram's traffic class too (IP_RECVTOS,
 * IPV6_RECVTCLASS: flow.tclass, else 0), from now on.  Only where it is
 * used: a UD QP's GRH area, standard mode's 4791 socket (it forwards UD
 * datagrams), a capture (on at open then); one control message more per
 * datagram costs a busy ping-pong's every trip. */
void sv_udp_want_tclass(struct sv_udp_sock *s);
void sv_udp_close(struct sv_udp_sock *s);

/* One message of a receive batch: a datagram, or with UDP_GRO several of
 * one sender, each seg bytes but the last (which may be shorter). */
struct sv_udp_rx {
	uint8_t *buf; /* caller-provided, size bytes */
	uint32_t size;
	uint32_t len;
	uint32_t seg; /* 0: one datagram */
	bool truncated;
	struct sv_flow flow; /* src = sender, dst = us */
};

/* Receive up to n messages without blocking; returns the count (0 when
 * none are waiting). */
int sv_udp_recv(struct sv_udp_sock *s, struct sv_udp_rx *rx, int n);

/* Send n datagrams (each to its dst, from its src).  Returns how many the
 * kernel refused (each is lost, like a packet dropped by the network;
 * reliability is the transport's).  With UDP_SEGMENT, a packet sent as
 * the k-th segment of a send gets its ICRC redone for IPv4 ID k. */
int sv_udp_send(struct sv_udp_sock *s, const struct sv_link_pkt *tx, int n);

/* Which local address would the kernel use to reach dst?  0 or errno. */
int sv_udp_route_src(const struct sv_ipaddr *dst, struct sv_ipaddr *src);

#endif
