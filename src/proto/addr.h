/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Addresses on the wire: the IP flow a RoCE v2 packet travels on, and how
 * a QPN names a UDP port.
 *
 * softverbs needs no daemon to find a QP: a QPN is (udp_port << 8) | slot,
 * so the destination port follows from the destination QPN (docs/design.md,
 * "Addressing without a daemon").  These helpers are the only place that
 * split is written.
 */
#ifndef SV_PROTO_ADDR_H
#define SV_PROTO_ADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* An IP address as the ICRC pseudo-header, the GRH and the trace need it. */
struct sv_ipaddr {
	sa_family_t family; /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* 4 bytes for AF_INET */
};

/* The UDP/IP flow a packet travels on: everything the RoCE v2 ICRC covers
 * besides the IB headers and payload. */
struct sv_flow {
	struct sv_ipaddr src, dst;
	uint16_t sport, dport; /* host order */
	/* IPv4 TOS / IPv6 traffic class (the ICRC masks it): the AH's or
	 * the QP's grh.traffic_class on send, the received one on receive */
	uint8_t tclass;
	uint8_t unused; /* 0: flows are compared whole (icrc.c) */
};

static inline bool sv_ip_is_multicast(const struct sv_ipaddr *ip)
{
	if (ip->family == AF_INET)
		return (ip->addr[0] & 0xf0) == 0xe0; /* 224.0.0.0/4 */
	return ip->addr[0] == 0xff; /* ff00::/8 */
}

/* socket address <-> sv_ipaddr (IPv4-mapped IPv6 becomes AF_INET). */
struct sockaddr;
struct sockaddr_in6;
void sv_sockaddr_to_ipaddr(const struct sockaddr *sa, struct sv_ipaddr *ip,
			   uint16_t *port);
void sv_ipaddr_to_sin6(const struct sv_ipaddr *ip, uint16_t port,
		       uint32_t scope, struct sockaddr_in6 *sin6);
bool sv_ipaddr_eq(const struct sv_ipaddr *a, const struct sv_ipaddr *b);

/* ---- GIDs as RoCE v2 addresses -------------------------------------------- */

/* What a GID (16 bytes, an IPv6 or IPv4-mapped address) is. */
bool sv_gid_v4mapped(const uint8_t gid[16]);
bool sv_gid_loopback(const uint8_t gid[16]); /* ::ffff:127.0.0.0/104, ::1 */
bool sv_gid_linklocal(const uint8_t gid[16]); /* fe80::/10 */
bool sv_gid_multicast(const uint8_t gid[16]);

/* Why packets from sgid cannot reach dgid, or their answers come back
 * from elsewhere: another address family (RoCE v2 sends an IPv4 or an
 * IPv6 datagram as the source GID says), or a loopback address on one
 * side only (it never leaves this host).  Multicast destinations are
 * exempt from the loopback rule. */
enum sv_gid_pair {
	SV_GID_PAIR_OK,
	SV_GID_PAIR_FAMILY,
	SV_GID_PAIR_LOOPBACK_SRC, /* loopback sgid, other dgid */
	SV_GID_PAIR_LOOPBACK_DST, /* other sgid, loopback dgid */
};
enum sv_gid_pair sv_gid_pair_check(const uint8_t sgid[16],
				   const uint8_t dgid[16]);
/* ---- QPN addressing ------------------------------------------------------ */

#define SV_QPN_MASK 0xffffffu
/* IBA: multicast datagrams are addressed to QPN 0xffffff.  Its port,
 * 65535, is never allocated to a socket, so no QP ever has this number. */
#define SV_QPN_MCAST 0xffffffu
/* IBA: the General Services Interface QP (QP1), where the CM's MADs go,
 * and its well-known Q_Key.  No socket has port 0, so no QP is given it. */
#define SV_QPN_GSI 1u
#define SV_GSI_QKEY 0x80010000u
#define SV_SLOTS_PER_SOCK 256 /* QPs per UDP socket: the QPN's low byte */

static inline uint32_t sv_qpn_make(uint16_t port, uint32_t slot)
{
	return ((uint32_t)port << 8) | (slot & 0xff);
}

/* The UDP port of the socket that owns a QPN. */
static inline uint16_t sv_qpn_port(uint32_t qpn)
{
	return (uint16_t)((qpn & SV_QPN_MASK) >> 8);
}

/* The QP's slot in that socket. */
static inline uint32_t sv_qpn_slot(uint32_t qpn)
{
	return qpn & 0xff;
}

#endif
