/*
 * The shm link in the engine (link/shm.h has the link itself).
 *
 * A connected QP (RC, UC, XRC) whose peer QP lives on this host, in this
 * network namespace, in a process we may cross-memory attach to, sends its
 * packets into the peer socket's ring instead of a UDP datagram, from RTR
 * until RESET.  Nothing else changes: the packets, the protocol and the
 * receive checks are those of the UDP path (minus the ICRC, which protects
 * a wire that is not there), and the receive side takes a packet for the
 * same QP from either link, so the two directions of a QP may even use
 * different links (a peer that may not attach to us sends through UDP).
 * UD QPs stay on UDP: a datagram service addresses any QP per packet.
 *
 * The engine's own rings are drained at every progress pass.  A busy-poll
 * pass reads a socket through recvmmsg only when one of its QPs may
 * receive through UDP, or every SV_UDP_EVERY passes (stray datagrams,
 * doorbells); the progress thread always reads it.
 */
#include "engine/shmpath.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "core/device.h"
#include "engine/eng.h"
#include "engine/limits.h"
#include "engine/path.h"
#include "engine/qpe.h"
#include "engine/recv.h"
#include "engine/stats.h"
#include "util/log.h"

#define SV_UDP_EVERY 1024
/* How long a transmitter waits for room in a full peer ring. */
#define SV_SHM_FULL_WAIT_NS (20ull * 1000 * 1000)

void sv_shm_engine_init(struct sv_engine *eng)
{
	list_head_init(&eng->shm_peers);
}

/* ---- sockets ----------------------------------------------------------------- */

void sv_shm_sock_open(struct sv_engine *eng, struct sv_sock *s)
{
	const char *why;
	int err;

	if (!sv_shm_available(&why)) {
		s->ring.hdr = NULL;
		s->ring.fd = -1;
		return;
	}
	err = sv_shm_ring_open(&s->ring, s->udp.port, s->udp.fd);
	if (err)
		sv_dbg("shm: port %u has no ring: %s", s->udp.port,
		       strerror(err));
	else /* whether our progress thread takes jobs (help.c) */
		atomic_store(&s->ring.hdr->helping, eng->help_avail);
}

void sv_shm_sock_close(struct sv_sock *s)
{
	if (s->ring.hdr)
		sv_shm_ring_close(&s->ring);
}

/* ---- paths ------------------------------------------------------------------- */

static void set_rx_udp(struct sv_qp_engine *qe, bool on)
{
	if (qe->rx_udp == on)
		return;
	qe->rx_udp = on;
	if (on)
		qe->sock->udp_qps++;
	else
		qe->sock->udp_qps--;
}

static void why(struct sv_qp_engine *qe, const char *s)
{
	snprintf(qe->path_why, sizeof(qe->path_why), "%s", s);
}

void sv_shm_qp_created(struct sv_qp_engine *qe)
{
	if (qe->type == IBV_QPT_UD) {
		why(qe, "UD uses UDP");
		set_rx_udp(qe, true);
	} else {
		why(qe, "not connected");
	}
}

static void release(struct sv_qp_engine *qe)
{
	struct sv_shm_peer *p = qe->shm;

	qe->shm = NULL;
	sv_paths_select(qe);
	qe->peer_udp = false;
	if (p && !--p->refs) {
		list_del(&p->node);
		sv_shm_peer_detach(p);
	}
}

/* Is the destination one of this host's addresses?  Without a GRH the
 * peer is on this host by construction (set_path). */
static bool dest_local(struct sv_qp_engine *qe)
{
	struct ibv_ah_attr *ah = &qe->qp->attr.ah_attr;

	if (!ah->is_global)
		return true;
	return sv_gid_is_local(&ah->grh.dgid);
}

static void choose(struct sv_qp_engine *qe)
{
	struct sv_engine *eng = qe->eng;
	uint16_t port = sv_qpn_port(qe->dest_qpn);
	struct list_node *it;
	struct sv_shm_peer *p = NULL;
	const char *reason = NULL;

	if (!sv_shm_available(&reason)) {
		why(qe, reason);
		return;
	}
	if (!qe->sock->ring.hdr) {
		why(qe, "no ring of our own");
		return;
	}
	if (!dest_local(qe)) {
		why(qe, "peer not on this host");
		return;
	}
	for (it = eng->shm_peers.n.next; it != &eng->shm_peers.n;
	     it = it->next) {
		struct sv_shm_peer *c =
			list_entry(it, struct sv_shm_peer, node);

		if (c->port == port && sv_shm_peer_current(c)) {
			p = c;
			p->refs++;
			break;
		}
	}
	if (!p) {
		if (sv_shm_peer_attach(port, &p, &reason)) {
			why(qe, reason);
			sv_dbg("shm: qp 0x%06x -> 0x%06x stays on UDP: %s",
			       qe->qpn, qe->dest_qpn, reason);
			return;
		}
		list_add_tail(&eng->shm_peers, &p->node);
	}
	qe->shm = p;
	sv_paths_select(qe);
	qe->path_why[0] = 0;
}

void sv_shm_qp_modified(struct sv_qp_engine *qe, enum ibv_qp_state new_state,
			enum ibv_qp_state old_state)
{
	if (qe->type == IBV_QPT_UD)
		return;
	if (new_state == IBV_QPS_RESET) {
		release(qe);
		why(qe, "not connected");
		set_rx_udp(qe, false);
		return;
	}
	if (new_state != IBV_QPS_RTR || old_state != IBV_QPS_INIT)
		return;
	release(qe);
	choose(qe);
	set_rx_udp(qe, !qe->shm);
}

void sv_shm_qp_destroyed(struct sv_qp_engine *qe)
{
	release(qe);
	set_rx_udp(qe, false);
}

/* A packet of this QP's peer came through UDP: the peer may not attach
 * to us, so this socket is read at every pass again. */
void sv_shm_rx_udp_seen(struct sv_qp_engine *qe)
{
	if (qe->shm && !qe->peer_udp) {
		qe->peer_udp = true;
		set_rx_udp(qe, true);
	}
}

const char *sv_shm_path(const struct sv_qp_engine *qe)
{
	return qe->shm ? NULL : qe->path_why;
}

/* ---- transmit ---------------------------------------------------------------- */

/* The peer's thread sleeps in epoll on that port: a zero-length
 * datagram wakes it (and is dropped there). */
static void doorbell(struct sv_engine *eng, const struct sv_tx *t)
{
	SV_STAT(eng, shm_wakeups);
	if (sendto(t->sock->udp.fd, NULL, 0, MSG_DONTWAIT,
		   (const struct sockaddr *)&t->dst, sizeof(t->dst)) < 0)
		sv_dbg("shm: doorbell: %s", strerror(errno));
}

/* Is p the ring of one of this engine's own sockets? */
static bool own_ring(struct sv_engine *eng, const struct sv_shm_peer *p)
{
	struct list_node *it;

	if (p->pid != p->self)
		return false;
	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next)
		if (list_entry(it, struct sv_sock, node)->udp.port == p->port)
			return true;
	return false;
}

/* Push pkt[0..n) as room appears, for SV_SHM_FULL_WAIT_NS at most;
 * returns how many went. */
static unsigned int wait_room(struct sv_engine *eng, const struct sv_tx *t,
			      const struct sv_shm_pkt *pkt, unsigned int n)
{
	uint64_t until = sv_now_ns() + SV_SHM_FULL_WAIT_NS;
	unsigned int done = 0;
	bool wake;

	while (done < n && sv_now_ns() < until) {
		sched_yield();
		done += sv_shm_push(t->shm, pkt + done, n - done, &wake);
		if (wake)
			doorbell(eng, t);
	}
	return done;
}

/* Packets *t[0..n) all go to the same peer, from the same socket.
 * (GCC 12 cannot see that pkt[0..n) is filled before each push.) */
#pragma GCC diagnostic push
#ifndef __clang__ /* clang has no such warning and warns about the name */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
void sv_shm_tx(struct sv_engine *eng, struct sv_tx *const *t, unsigned int n)
{
	struct sv_shm_pkt pkt[SV_TX_BATCH];
	struct sv_flow f[SV_TX_BATCH];
	unsigned int i, done;
	bool wake;

	for (i = 0; i < n; i++) {
		f[i].src = t[i]->src;
		sv_sockaddr_to_ipaddr((struct sockaddr *)&t[i]->dst, &f[i].dst,
				      &f[i].dport);
		f[i].sport = t[i]->sock->udp.port;
		pkt[i].flow = &f[i];
		pkt[i].buf = t[i]->buf;
		pkt[i].len = t[i]->len;
	}
	done = sv_shm_push(t[0]->shm, pkt, n, &wake);
	if (wake)
		doorbell(eng, t[0]);
	/* A full ring: the consumer is behind.  UC has no retransmission
	 * and its sender no window, so a burst of large UC messages would
	 * lose whole messages where a socket's big receive buffer would
	 * have queued them: wait a little for room, as a NIC's link-level
	 * flow control would.  Never for our own rings (we hold the lock
	 * that drains them) and not for long (a stopped peer): then the
	 * rest is lost, as datagrams the peer's socket had no room for,
	 * and RC's transport recovers. */
	if (done < n && !own_ring(eng, t[0]->shm))
		done += wait_room(eng, t[0], pkt + done, n - done);
	eng->stats.shm_ring_full += n - done;
}
#pragma GCC diagnostic pop

/* ---- receive ----------------------------------------------------------------- */

void sv_shm_rx(struct sv_engine *eng, struct sv_sock *s)
{
	unsigned int budget = SV_RX_BUDGET;
	const struct sv_shm_slot *sl;
	uint64_t now = eng->now_ok ? eng->now : 0; /* 0: not read */

	if (!s->ring.hdr)
		return;
	while (budget-- && (sl = sv_shm_ring_peek(&s->ring, now))) {
		/* The slot stays ours until sv_shm_ring_next: the packet is
		 * processed in place.  Its length is read once. */
		uint32_t len = *(volatile const uint32_t *)&sl->len;
		struct sv_flow flow = sl->flow;

		flow.dport = s->udp.port;
		SV_STAT(eng, shm_rx_pkts);
		sv_rx_pkt(eng, s, (uint8_t *)sl->data,
			  len > SV_MAX_PKT ? 0 : len, len > SV_MAX_PKT, &flow,
			  true);
		sv_shm_ring_next(&s->ring);
	}
}

/* Should this pass read the socket through recvmmsg too? */
bool sv_shm_rx_udp_due(struct sv_engine *eng, struct sv_sock *s)
{
	if (!s->ring.hdr || s->udp_qps || eng->in_thread)
		return true;
	return !(++s->rx_skip % SV_UDP_EVERY);
}

/* ---- the progress thread's sleep ------------------------------------------- */

bool sv_shm_sleep(struct sv_engine *eng)
{
	struct list_node *it;
	bool ok = true;

	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);

		if (s->ring.hdr && !sv_shm_ring_sleep(&s->ring))
			ok = false;
	}
	return ok;
}

void sv_shm_wake(struct sv_engine *eng)
{
	struct list_node *it;

	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);

		if (s->ring.hdr)
			sv_shm_ring_wake(&s->ring);
	}
}
