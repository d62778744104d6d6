/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The engine's links (links.c, link/link.h): each socket's endpoints on
 * every link, receiving from them in a pass, transmitting runs of packets,
 * the progress thread's sleep and wake-up, and which link a QP's packets
 * take to its peer (the shm link from RTR when the peer is a same-host
 * process we may attach to, else UDP).
 */
#ifndef SV_ENGINE_LINKS_H
#define SV_ENGINE_LINKS_H

#include <stdbool.h>

#include "engine/transport/qpe.h"
#include "link/link.h"

void sv_links_engine_init(struct sv_engine *eng);

void sv_links_engine_close(struct sv_engine *eng);

/* SOFTVERBS_ROCE=standard: packets go to UDP 4791 at the peer, are taken
 * from any source port, and arrive through the namespace's one socket on
 * 4791, which its holder demultiplexes by destination QPN: to its own
 * sockets, or forwarded into the owning engine's shm ring.  Otherwise the
 * peer's port is the one its QPN names (proto/addr.h). */
bool sv_links_standard(void);
/* Selective retransmission (softverbs' own, in the BTH's reserved bits:
 * wire.h, SV_SACK_MAX): on unless SOFTVERBS_SACK=0, and never in standard
 * mode, whose peers are rxe or NICs and get plain BTHs (reserved bits 0,
 * as IBA has them sent). */
bool sv_links_sack(void);
/* An ICRC left to the UDP checksum (softverbs' own: wire.h,
 * SV_BTH_ICRC_BY_UDP): offered and accepted unless SOFTVERBS_SKIP_ICRC=0,
 * and never in standard mode, for the same reason. */
bool sv_links_skip_icrc(void);
/* With the engine's first QP: bind 4791, or note that another engine
 * holds it and try again now and then (sv_links_roce_timer).  0 or errno
 * (EADDRINUSE when the port is held and no ring can receive for us, said
 * once with who holds it). */
int sv_links_roce_open(struct sv_engine *eng);
/* The timers' pass: take 4791 over if it is due and free; *next: the
 * earliest deadline so far (0: none), lowered to ours. */
void sv_links_roce_timer(struct sv_engine *eng, uint64_t now, uint64_t *next);
/* A packet the 4791 socket took for a QPN of another engine, ICRC
 * checked: into that engine's ring.  false when it has none we may use. */
bool sv_links_roce_forward(struct sv_engine *eng, uint32_t qpn, uint8_t *buf,
			   uint32_t len, const struct sv_flow *flow);
/* The UDP port a packet for QPN qpn goes to. */
uint16_t sv_links_dport(uint32_t qpn);
/* The engine socket that owns QPN qpn, or NULL. */
struct sv_sock *sv_links_qpn_sock(struct sv_engine *eng, uint32_t qpn);
/* Open a socket's endpoints: UDP (which chooses the port), then the shm
 * ring where the fast path is available.  0 or errno. */
int sv_links_sock_open(struct sv_engine *eng, struct sv_sock *s);
void sv_links_sock_close(struct sv_sock *s);
/* A pass receives from the socket's links: the cheap ones always, the
 * others (UDP) when a QP may receive there or this is the thread. */
void sv_links_rx(struct sv_engine *eng);
/* Do packets wait in the socket's links, as far as a look without a
 * system call tells (the shm ring's head)? */
bool sv_links_rx_pending(const struct sv_sock *s);
/* Send pkt[0..n) of socket s over `link` to `peer`; counts what is lost. */
void sv_links_tx(struct sv_engine *eng, struct sv_sock *s,
		 const struct sv_link_ops *link, void *peer,
		 const struct sv_link_pkt *pkt, unsigned int n);
/* The link and peer handle a QP's packets take now. */
void sv_links_of_qp(const struct sv_qp_engine *qe,
		    const struct sv_link_ops **link, void **peer);
bool sv_links_sleep(struct sv_engine *eng);
void sv_links_wake(struct sv_engine *eng);

/* A QP's peer on the shm link (chosen at RTR, released at RESET). */
void sv_links_qp_created(struct sv_qp_engine *qe);
void sv_links_qp_modified(struct sv_qp_engine *qe, enum ibv_qp_state new_state,
			  enum ibv_qp_state old_state);
void sv_links_qp_destroyed(struct sv_qp_engine *qe);
/* A packet of this QP's peer came through UDP. */
void sv_links_rx_udp_seen(struct sv_qp_engine *qe);

#endif
