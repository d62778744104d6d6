/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Links: how the engine's RoCE packets reach a peer and arrive from one,
 * behind one interface with two implementations:
 *
 *   sv_link_udp  (link/udp.c)  UDP datagrams: any host, any namespace
 *   sv_link_shm  (link/shm.c)  shared-memory rings: a peer process of this
 *                              host and network namespace that we may
 *                              cross-memory attach to
 *
 * An engine socket is one UDP port with an endpoint on every link that
 * opens there: the UDP link opens first and chooses the port (its socket
 * also carries the shm link's doorbells), the shm link joins it with a ring
 * registered under that port.  A QP names its peer by (GID, QPN), and the
 * QPN's port is the peer socket's (proto/addr.h), so a link that needs a
 * handle for a peer (shm) gets it by attaching to that port.
 *
 * Links depend on nothing above core/ (proto/ for the packet, core/pubtab
 * for the peer's published table the shm link maps along with its ring).
 *
 * Adding a link: fill an ops table in a file of its own, open at the
 * socket's port, deliver each packet received with its flow, say whether
 * its packets crossed a wire (then the ICRC is computed and checked), and
 * give the engine's links.c the rule for when a QP uses it.
 */
#ifndef SV_LINK_LINK_H
#define SV_LINK_LINK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/addr.h"

/* Packets per transmit call that a link carries as one batch (a peer's
 * ring sees them all at once, as a sendmmsg's land together). */
#define SV_LINK_BATCH 64

/* One packet to transmit: to dst (the peer's address and UDP port), from
 * the local address src (the source GID's; the ICRC covers it).  buf is
 * writable: the UDP link may redo the ICRC (udp.h). */
struct sv_link_pkt {
	uint8_t *buf;
	uint32_t len;
	const struct sockaddr_in6 *dst;
	const struct sv_ipaddr *src;
	uint8_t tclass; /* IPv4 TOS / IPv6 traffic class */
	/* Never one segment of a larger send (udp.h): a resent request.  A
	 * loss takes a whole send (a drop before segmentation, a full
	 * socket buffer), and recovery that resends a flight as one send
	 * can lose it all again and wait for a timeout. */
	bool alone;
};

/* A received packet handed to the engine: buf[0..len) with the flow it
 * came on (src = the sender, dst = us).  truncated: longer than any valid
 * packet (len is then meaningless). */
/* What a link counted of its own work (offloads, route lookups) since the
 * engine last took it: the engine adds it to its counters
 * (engine/transport/stats.h). */
struct sv_link_counts {
	/* UDP_SEGMENT sends and the packets they carried; packets
	 * received coalesced (UDP_GRO). */
	uint64_t gso_sends, gso_pkts, gro_pkts;
	/* Sends that named their source address (IP_PKTINFO), and route
	 * lookups made to know whether they must. */
	uint64_t src_said, src_lookups;
};

typedef void sv_link_deliver_fn(void *arg, uint8_t *buf, uint32_t len,
				bool truncated, const struct sv_flow *flow);

struct sv_link_ops {
	const char *name;
	/* Its packets cross a wire: they carry a computed ICRC, checked on
	 * receive.  (The rings are memory no wire corrupts.) */
	bool wire;
	/* Polling it costs no system call: a busy pass always polls it;
	 * the others are polled when the engine says so. */
	bool cheap;
	/* Open the endpoint `ep` (the link's own struct) of a socket.  The
	 * first link of a socket chooses the port and gives its fd
	 * (*port, *sockfd out); a later one joins them (in). */
	int (*open)(void *ep, uint16_t *port, int *sockfd);
	void (*close)(void *ep);
	/* Send pkt[0..n) from endpoint ep, to `peer` (a handle from attach;
	 * NULL for a link that addresses every packet itself).  Returns how
	 * many it could not carry, the last ones: each is lost, like a
	 * datagram the network dropped (reliability is the transport's).  *bells: doorbells rung
	 * to wake a sleeping peer. */
	unsigned int (*transmit)(void *ep, void *peer,
				 const struct sv_link_pkt *pkt, unsigned int n,
				 unsigned int *bells);
	/* Hand up to `budget` waiting packets to fn, without blocking; now:
	 * the time in ns if the caller has read it (0: not read); app: an
	 * application's busy poll asks (not the progress thread, which a
	 * packet woke).  Returns how many. */
	unsigned int (*receive)(void *ep, sv_link_deliver_fn *fn, void *arg,
				unsigned int budget, uint64_t now, bool app);
	/* Add what it counted to *c and count from zero again.  NULL: it
	 * counts nothing of its own. */
	void (*take_counts)(void *ep, struct sv_link_counts *c);
	/* The owner's thread is about to sleep in epoll: arrange that a
	 * sender wakes it (false: packets are waiting, don't sleep); wake:
	 * it is awake again.  NULL: the kernel wakes epoll by itself. */
	bool (*sleep)(void *ep);
	void (*wake)(void *ep);
	/* Does a packet wait, as far as it can tell without a system call?
	 * NULL: it cannot. */
	bool (*pending)(void *ep);
	/* The peer socket at `port` on this link (a handle for transmit), or
	 * an errno with a static reason in *why.  NULL: every address is
	 * reachable as it is. */
	int (*attach)(uint16_t port, void **peer, const char **why);
	void (*detach)(void *peer);
};

extern const struct sv_link_ops sv_link_udp, sv_link_shm;

#endif
