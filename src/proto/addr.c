/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Socket addresses and the IP addresses of flows (proto/addr.h).
 */
#include "proto/addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

/* ::ffff:0:0/96, where IPv4 addresses live in IPv6 sockets and GIDs. */
static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0,    0,
					     0, 0, 0, 0, 0xff, 0xff };

void sv_sockaddr_to_ipaddr(const struct sockaddr *sa, struct sv_ipaddr *ip,
			   uint16_t *port)
{
	memset(ip, 0, sizeof(*ip));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		ip->family = AF_INET;
		memcpy(ip->addr, &in->sin_addr, 4);
		if (port)
			*port = ntohs(in->sin_port);
	} else {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		if (!memcmp(&in6->sin6_addr, v4mapped_prefix, 12)) {
			ip->family = AF_INET;
			memcpy(ip->addr, (const uint8_t *)&in6->sin6_addr + 12,
			       4);
		} else {
			ip->family = AF_INET6;
			memcpy(ip->addr, &in6->sin6_addr, 16);
		}
		if (port)
			*port = ntohs(in6->sin6_port);
	}
}

void sv_ipaddr_to_sin6(const struct sv_ipaddr *ip, uint16_t port,
		       uint32_t scope, struct sockaddr_in6 *sin6)
{
	memset(sin6, 0, sizeof(*sin6));
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	if (ip->family == AF_INET) {
		memcpy(&sin6->sin6_addr, v4mapped_prefix, 12);
		memcpy((uint8_t *)&sin6->sin6_addr + 12, ip->addr, 4);
	} else {
		memcpy(&sin6->sin6_addr, ip->addr, 16);
		sin6->sin6_scope_id = scope;
	}
}

bool sv_ipaddr_eq(const struct sv_ipaddr *a, const struct sv_ipaddr *b)
{
	if (a->family != b->family)
		return false;
	return !memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16);
}

bool sv_gid_v4mapped(const uint8_t gid[16])
{
	return !memcmp(gid, v4mapped_prefix, sizeof(v4mapped_prefix));
}

bool sv_gid_loopback(const uint8_t gid[16])
{
	static const uint8_t one[16] = { [15] = 1 };

	return sv_gid_v4mapped(gid) ? gid[12] == 127 : !memcmp(gid, one, 16);
}

bool sv_gid_linklocal(const uint8_t gid[16])
{
	return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
}

bool sv_gid_multicast(const uint8_t gid[16])
{
	return sv_gid_v4mapped(gid) ? (gid[12] & 0xf0) == 0xe0 : gid[0] == 0xff;
}

enum sv_gid_pair sv_gid_pair_check(const uint8_t sgid[16],
				   const uint8_t dgid[16])
{
	if (sv_gid_v4mapped(sgid) != sv_gid_v4mapped(dgid))
		return SV_GID_PAIR_FAMILY;
	if (sv_gid_multicast(dgid))
		return SV_GID_PAIR_OK;
	if (sv_gid_loopback(sgid) && !sv_gid_loopback(dgid))
		return SV_GID_PAIR_LOOPBACK_SRC;
	if (!sv_gid_loopback(sgid) && sv_gid_loopback(dgid))
		return SV_GID_PAIR_LOOPBACK_DST;
	return SV_GID_PAIR_OK;
}
