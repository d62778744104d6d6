/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * IB CM MADs at the namespace's UDP 4791, sent on to the process whose
 * CM they are for.
 *
 * The engine holding 4791 takes every packet to QP1 of the namespace
 * (docs/interop.md), but the CMs are librdmacm's, one per process.  A
 * CM MAD names its receiver by service ID or comm ID, and every CM binds
 * abstract Unix datagram names for what it serves (proto/mad.h): the
 * holder sends the MAD there as a UD receive would show it (GRH area,
 * then the MAD), the CM checks that the sender is of its user.  The
 * checks a GSI QP would make come first (P_Key, UD SEND, Q_Key, a MAD's
 * length), so a CM gets what its QP would have taken.
 */
#include "engine/forward/gsifwd.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/objects.h"
#include "engine/transport/stats.h"
#include "proto/addr.h"
#include "proto/mad.h"
#include "util/log.h"
#include "util/unixdg.h"

bool sv_gsi_forward(struct sv_engine *eng, struct sv_pkt *pkt,
		    const struct sv_flow *flow)
{
	uint8_t dgram[SV_CM_ROUTE_DGRAM];
	struct sockaddr_un sa;
	struct sv_cm_route r;
	socklen_t salen;

	if (!(pkt->mask & SV_M_UD) || !(pkt->mask & SV_M_SEND) ||
	    (sv_bth_pkey(pkt->hdr) & 0x7fff) != (SV_DEFAULT_PKEY & 0x7fff) ||
	    sv_deth_qkey(sv_pkt_h(pkt, SV_HDR_DETH)) != SV_GSI_QKEY ||
	    pkt->paylen != SV_MAD_SIZE)
		return false; /* the GSI QP's checks say what is wrong */
	r = sv_cm_route_of(pkt->payload, pkt->paylen);
	if (r.kind == SV_CM_ROUTE_NONE)
		return false;
	if (!eng->mad_fd) {
		int fd = sv_unixdg_socket();

		if (fd < 0) {
			sv_dbg("gsi: no socket to forward MADs: %s",
			       strerror(errno));
			return false;
		}
		eng->mad_fd = fd + 1;
	}
	sv_grh_build(dgram, flow, 8 + pkt->len);
	memcpy(dgram + SV_GRH_BYTES, pkt->payload, SV_MAD_SIZE);
	salen = sv_cm_route_name(&sa, geteuid(), &r);
	if (sendto(eng->mad_fd - 1, dgram, sizeof(dgram), MSG_DONTWAIT,
		   (struct sockaddr *)&sa, salen) == (ssize_t)sizeof(dgram)) {
		SV_STAT(eng, mad_forwarded);
		return true;
	}
	if (errno == ECONNREFUSED || errno == ENOENT)
		return false; /* nobody serves it: our GSI QP, if any */
	/* A CM too slow to read: the MAD is lost, as on a wire (the
	 * sender's CM sends it again). */
	sv_dbg("gsi: MAD to %s: %s", sa.sun_path + 1, strerror(errno));
	SV_STAT(eng, mad_fwd_lost);
	return true;
}

void sv_gsi_forward_close(struct sv_engine *eng)
{
	if (eng->mad_fd)
		close(eng->mad_fd - 1);
	eng->mad_fd = 0;
}
