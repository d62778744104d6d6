/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The standard RoCE v2 endpoint (SOFTVERBS_ROCE=standard): one UDP socket
 * bound to 4791, the port every RoCE v2 peer (rxe, a NIC) sends to.  One
 * engine per network namespace holds it; the engine demultiplexes what
 * arrives by destination QPN (engine/transport/links.c).  docs/interop.md has the
 * design.
 *
 * Who holds it is decided by the kernel and a lock.  Multicast receivers
 * of our user bind (group address, 4791) (engine/transport/mcast.c), so the
 * holder's socket has SO_REUSEPORT, which the kernel grants only between
 * sockets of one uid: another user's bind on 4791, with any option and
 * on any address, fails with EADDRINUSE while we hold it, as against
 * rxe's kernel socket (issue #37).  Among our own user's processes, a
 * lock on a file of our registry directory (which no other user can
 * enter, so no other user can take it first) elects one, and the port
 * itself is checked before and after the bind (a socket that is not
 * alone on it lets go), which also covers processes that see another
 * /dev/shm.
 * A socket on 4791 of another user or without SO_REUSEPORT (rxe's in the
 * kernel, another program) refuses the bind.
 */
#ifndef SV_LINK_ROCE_H
#define SV_LINK_ROCE_H

#include <stdbool.h>
#include <stddef.h>

#include "link/udp.h"

/* IANA's port for RoCE v2 (IBA Annex A17.2.1). */
#define SV_ROCE_PORT 4791

/* Take our user's lock and bind s to UDP 4791 (dual stack, the UDP
 * link's socket options, sv_udp_open_shared).  0 and *lock, the lock's
 * fd (or -1), to close after s; or errno (EADDRINUSE: the lock or the
 * port is taken), why saying who holds the port as far as this process
 * can tell (a pid and its command, the kernel, another user and its
 * uid), and *ours whether that is a process of our user. */
int sv_roce_open(struct sv_udp_sock *s, int *lock, char *why, size_t whylen,
		 bool *ours);

#endif
