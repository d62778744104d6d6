/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Which process's IB CM a MAD on QP1 is for (see mad.h). */
#include "proto/mad.h"

#include <stdio.h>
#include <string.h>

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

struct sv_cm_route sv_cm_route_of(const uint8_t *mad, size_t len)
{
	struct sv_cm_route r = { SV_CM_ROUTE_NONE, 0 };
	const uint8_t *msg = mad + SV_MAD_HDR;
	uint16_t attr;

	/* Header: base version, class, class version, method (byte 3),
	 * ..., attribute ID at 16 (IBA 13.4.2). */
	if (len < SV_MAD_SIZE || mad[1] != SV_MAD_CLASS_CM)
		return r;
	attr = (uint16_t)(mad[16] << 8 | mad[17]);
	switch (attr) {
	case SV_MAD_REQ:
	case SV_MAD_SIDR_REQ:
		/* Both carry the service ID at message offset 8 (IBA 12.6.5,
		 * 12.11.1). */
		r.kind = SV_CM_ROUTE_SERVICE;
		r.key = (uint64_t)be32_at(msg + 8) << 32 | be32_at(msg + 12);
		return r;
	case SV_MAD_SIDR_REP:
		/* The request ID, first (IBA 12.11.2). */
		r.kind = SV_CM_ROUTE_ENDPOINT;
		r.key = SV_CM_COMM_ENDPOINT(be32_at(msg));
		return r;
	case SV_MAD_MRA:
	case SV_MAD_REJ:
	case SV_MAD_REP:
	case SV_MAD_RTU:
	case SV_MAD_DREQ:
	case SV_MAD_DREP:
		/* Local comm ID, then the remote one: ours. */
		r.kind = SV_CM_ROUTE_ENDPOINT;
		r.key = SV_CM_COMM_ENDPOINT(be32_at(msg + 4));
		return r;
	default:
		return r;
	}
}

socklen_t sv_cm_route_name(struct sockaddr_un *sa, uid_t uid,
			   const struct sv_cm_route *r)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract: sun_path[0] is NUL, the name is the bytes after it. */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		     r->kind == SV_CM_ROUTE_SERVICE ?
			     "softverbs-cm.%u.service.%016llx" :
			     "softverbs-cm.%u.endpoint.%04llx",
		     (unsigned int)uid, (unsigned long long)r->key);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}
