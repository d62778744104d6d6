/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * MADs on QP1 as far as the engine must read them: the common header
 * (IBA 13.4.2) and the IB CM's attributes, and the one thing it decides
 * from them, which process's CM a MAD is for.
 *
 * A namespace's UDP 4791 is held by one engine (docs/interop.md), and a
 * MAD to QP1 names no process as a QPN does.  So every softverbs CM in
 * standard mode binds abstract AF_UNIX datagram sockets whose names say
 * what it serves, and the holder sends each CM MAD it takes to the name
 * the MAD's own fields give:
 *   - a REQ or SIDR_REQ: its service ID (the listener's port space and
 *     port), bound by the process that listens there;
 *   - every other message: the receiver's comm ID (REP, RTU, REJ, MRA,
 *     DREQ, DREP: the "remote" one; SIDR_REP: the request ID), whose
 *     high 16 bits are the endpoint number the CM bound when it started.
 * The names carry the user's uid (the holder forwards only to its own
 * user's CMs, as it forwards packets only into its own user's rings) and
 * the datagram is the GRH area of a UD receive followed by the MAD.
 * What has no name bound goes to the holder's own GSI QP, if any.
 */
#ifndef SV_PROTO_MAD_H
#define SV_PROTO_MAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "proto/ip.h"

#define SV_MAD_SIZE 256
#define SV_MAD_HDR 24
#define SV_MAD_CLASS_CM 0x07

enum sv_mad_attr {
	SV_MAD_REQ = 0x0010,
	SV_MAD_MRA = 0x0011,
	SV_MAD_REJ = 0x0012,
	SV_MAD_REP = 0x0013,
	SV_MAD_RTU = 0x0014,
	SV_MAD_DREQ = 0x0015,
	SV_MAD_DREP = 0x0016,
	SV_MAD_SIDR_REQ = 0x0017,
	SV_MAD_SIDR_REP = 0x0018,
};

/* A comm ID (or SIDR request ID) softverbs allocates: its CM endpoint
 * number in the high half (never 0), a counter in the low half. */
#define SV_CM_COMM_ID(endpoint, n) \
	((uint32_t)(uint16_t)(endpoint) << 16 | (uint16_t)(n))
#define SV_CM_COMM_ENDPOINT(id) ((uint16_t)((uint32_t)(id) >> 16))

enum sv_cm_route_kind {
	SV_CM_ROUTE_NONE, /* not a CM MAD the names serve */
	SV_CM_ROUTE_SERVICE, /* key: the service ID */
	SV_CM_ROUTE_ENDPOINT, /* key: the endpoint number */
};

struct sv_cm_route {
	enum sv_cm_route_kind kind;
	uint64_t key;
};

/* What one datagram to a CM's socket holds. */
#define SV_CM_ROUTE_DGRAM (SV_GRH_BYTES + SV_MAD_SIZE)

/* Where the MAD of `len` bytes goes. */
struct sv_cm_route sv_cm_route_of(const uint8_t *mad, size_t len);

/* The abstract AF_UNIX name of route r for user uid, in *sa; its length. */
socklen_t sv_cm_route_name(struct sockaddr_un *sa, uid_t uid,
			   const struct sv_cm_route *r);

#endif
