/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The standard RoCE v2 endpoint (SOFTVERBS_ROCE=standard): one UDP socket
 * bound to 4791, the port every RoCE v2 peer (rxe, a NIC) sends to.  One
 * engine per network namespace holds it; the engine demultiplexes what
 * arrives by destination QPN (engine/links.c).  docs/interop.md has the
 * design.
 *
 * Who holds it is decided by a lock, not by the bind: multicast receivers
 * of every process bind (group address, 4791) with SO_REUSEADDR
 * (engine/mcast.c), so the holder's socket has SO_REUSEADDR too (without
 * it, either bind would fail against the other), and two holders' binds
 * would then both succeed.  The lock is an abstract AF_UNIX name, per
 * network namespace like the port, freed when its holder exits.  A
 * socket on 4791 without SO_REUSEADDR (rxe's in the kernel, another
 * program) still refuses the bind.
 */
#ifndef SV_LINK_ROCE_H
#define SV_LINK_ROCE_H

#include <stddef.h>

#include "link/udp.h"

/* IANA's port for RoCE v2 (IBA Annex A17.2.1). */
#define SV_ROCE_PORT 4791

/* Take the namespace's lock and bind s to UDP 4791 (dual stack, the UDP
 * link's socket options, sv_udp_open_shared).  0 and *lock, the lock's
 * fd, to close with s; or errno (EADDRINUSE: the lock or the port is
 * taken), and why says who holds the port as far as this process can
 * tell (a pid and its command, the kernel, another user). */
int sv_roce_open(struct sv_udp_sock *s, int *lock, char *why, size_t whylen);

#endif
