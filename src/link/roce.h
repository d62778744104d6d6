/*
 * The standard RoCE v2 endpoint (SOFTVERBS_ROCE=standard): one UDP socket
 * bound to 4791, the port every RoCE v2 peer (rxe, a NIC) sends to.  A
 * process's engine binds it without SO_REUSEPORT, so one engine per
 * network namespace holds it; the engine demultiplexes what arrives by
 * destination QPN (engine/links.c).  docs/interop.md has the design.
 */
#ifndef SV_LINK_ROCE_H
#define SV_LINK_ROCE_H

#include <stddef.h>

#include "link/udp.h"

/* IANA's port for RoCE v2 (IBA Annex A17.2.1). */
#define SV_ROCE_PORT 4791

/* Bind s to UDP 4791 (dual stack, the UDP link's socket options).  0 or
 * errno; on EADDRINUSE, why says who holds the port as far as this
 * process can tell (a pid and its command, the kernel, another user). */
int sv_roce_open(struct sv_udp_sock *s, char *why, size_t whylen);

#endif
