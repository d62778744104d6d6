/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The engine's links (link/link.h has the interface, link/udp.c and
 * link/shm.c the two links).
 *
 * Every engine socket has an endpoint on each link that opens there (UDP
 * always, the shm ring where the fast path is available); a pass drains
 * the cheap ones (the rings) always and UDP when it is due, runs of
 * packets leave through the link their QP uses, and the progress thread
 * arms each link's wake-up before it sleeps.
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
 * doorbells); so does the progress thread while it spins after serving
 * a peer (its passes come as fast as a poller's, and a system call each
 * would be most of an empty pass); otherwise it reads the sockets epoll
 * woke it for.
 */
#include "engine/transport/links.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <sys/epoll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/device.h"
#include "engine/transport/eng.h"
#include "engine/transport/limits.h"
#include "engine/transport/path.h"
#include "engine/transport/qpe.h"
#include "engine/transport/recv.h"
#include "engine/transport/stats.h"
#include "link/roce.h"
#include "util/env.h"
#include "util/log.h"

#define SV_UDP_EVERY 1024
/* Up to this many sockets a pass reads each; beyond, it asks epoll. */
#define SV_RX_SCAN_SOCKS 4
#define SV_RX_SCAN_EVENTS 64
/* How long a transmitter waits for room in a full peer ring. */
#define SV_SHM_FULL_WAIT_NS (20ull * 1000 * 1000)

void sv_links_engine_init(struct sv_engine *eng)
{
	list_head_init(&eng->shm_peers);
}

/* ---- sockets ----------------------------------------------------------------- */

static void add_link(struct sv_sock *s, const struct sv_link_ops *ops, void *ep)
{
	s->link[s->nlinks].ops = ops;
	s->link[s->nlinks].ep = ep;
	s->nlinks++;
}

int sv_links_sock_open(struct sv_engine *eng, struct sv_sock *s)
{
	const char *why;
	uint16_t port;
	int err, fd;

	s->udp.rx = eng->rx;
	s->udp.nrx = SV_RX_BATCH;
	err = sv_link_udp.open(&s->udp, &port, &fd);
	if (err)
		return err;
	/* Coalesced receives need the large buffers: fewer per call, each
	 * holding up to 64 datagrams. */
	if (eng->rx_gro[0].buf && sv_udp_gro(&s->udp)) {
		s->udp.rx = eng->rx_gro;
		s->udp.nrx = SV_RX_GRO_BATCH;
	}
	err = sv_engine_watch(eng, fd, s);
	if (err) {
		sv_link_udp.close(&s->udp);
		return err;
	}
	/* The rings first: a pass drains them before it reads the socket. */
	s->ring.fd = -1;
	if (sv_shm_available(&why)) {
		static atomic_bool noted;

		if (sv_shm_registry_note() && !atomic_exchange(&noted, true))
			sv_err("shm: %s", sv_shm_registry_note());
		err = sv_link_shm.open(&s->ring, &port, &fd);
		if (err) {
			sv_dbg("shm: port %u has no ring: %s", port,
			       strerror(err));
		} else {
			add_link(s, &sv_link_shm, &s->ring);
		}
	} else if (sv_shm_unavailable_warn()) {
		/* Someone else's registry directory (docs/security.md):
		 * said once, whatever the log level. */
		static atomic_bool said;

		if (!atomic_exchange(&said, true))
			sv_err("shm: fast path off: %s", why);
	}
	add_link(s, &sv_link_udp, &s->udp);
	sv_paths_sock_open(eng, s);
	return 0;
}

/* ---- the standard RoCE v2 endpoint ---------------------------------------- */

bool sv_links_standard(void)
{
	static atomic_int mode; /* 0 not read, 1 QPN ports, 2 standard */
	int m = atomic_load_explicit(&mode, memory_order_relaxed);

	if (!m) {
		const char *v = sv_env_roce();

		m = !strcmp(v, "standard") ? 2 : 1;
		if (*v && m == 1)
			sv_warn("SOFTVERBS_ROCE=%s: not a mode (\"standard\" "
				"is): QPN-derived ports",
				v);
		atomic_store_explicit(&mode, m, memory_order_relaxed);
	}
	return m == 2;
}

bool sv_links_sack(void)
{
	return sv_env_sack() && !sv_links_standard();
}

bool sv_links_skip_icrc(void)
{
	return sv_env_skip_icrc() && !sv_links_standard();
}

uint16_t sv_links_dport(uint32_t qpn)
{
	return sv_links_standard() ? SV_ROCE_PORT : sv_qpn_port(qpn);
}

struct sv_sock *sv_links_qpn_sock(struct sv_engine *eng, uint32_t qpn)
{
	uint16_t port = sv_qpn_port(qpn);
	struct list_node *it;

	/* A handful of sockets (256 QPs each): a walk is cheap enough for
	 * the first form of the standard endpoint. */
	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);

		if (!s->roce && s->udp.port == port)
			return s;
	}
	return NULL;
}

static struct sv_shm_peer *peer_get(struct sv_engine *eng, uint16_t port,
				    const char **reason);
static void peer_put(struct sv_shm_peer *p);

/* The retry period of an engine that does not hold 4791: after the holder
 * exits, packets for our QPs are lost for at most this long (RC
 * retransmits them). */
#define SV_ROCE_RETRY_NS (200ull * 1000 * 1000)

/* Bind 4791 into a new socket on the engine's list.  0 or errno (holder:
 * who has the port, on EADDRINUSE; *ours: whether a process of our
 * user). */
static int roce_bind(struct sv_engine *eng, char *holder, size_t len,
		     bool *ours)
{
	struct sv_sock *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return ENOMEM;
	s->udp.rx = eng->rx;
	s->udp.nrx = SV_RX_BATCH;
	s->ring.fd = -1;
	s->roce = true;
	err = sv_roce_open(&s->udp, &s->roce_lock, holder, len, ours);
	if (!err) {
		err = sv_engine_watch(eng, s->udp.fd, s);
		if (err)
			sv_udp_close(&s->udp);
	}
	if (err) {
		free(s);
		return err;
	}
	add_link(s, &sv_link_udp, &s->udp);
	list_add_tail(&eng->socks, &s->node);
	eng->nsocks++;
	eng->roce = s;
	return 0;
}

/* One socket on 4791 per network namespace, elected by a lock
 * (link/roce.h), bound without SO_REUSEPORT (a reuseport group without a
 * router would hand each packet to a random member).  The first
 * standard-mode engine there takes it and forwards what belongs to other
 * engines into their shm rings (roce_forward); the others receive through
 * their rings and try to take the port over every SV_ROCE_RETRY_NS, so
 * the endpoint outlives any one process.
 * Without rings (SOFTVERBS_FASTPATH=0, no registry) nothing could forward
 * to us: then a held port is a refusal, saying who holds it. */
int sv_links_roce_open(struct sv_engine *eng)
{
	static atomic_bool said;
	const char *why = NULL;
	char holder[160];
	bool ours = false;
	int err;

	if (eng->roce || eng->roce_retry || !sv_links_standard())
		return 0;
	err = roce_bind(eng, holder, sizeof(holder), &ours);
	if (err == EADDRINUSE && sv_shm_available(&why)) {
		/* Held by another user (or the kernel), nothing reaches us:
		 * said as the error it is, whatever the log level. */
		if (!ours && !atomic_exchange(&said, true))
			sv_err("SOFTVERBS_ROCE=standard: UDP %u is %s: this "
			       "process receives no RoCE packets while it "
			       "holds the port; taking the port over when "
			       "it is free",
			       SV_ROCE_PORT, holder);
		if (ours && !atomic_exchange(&said, true))
			sv_warn("SOFTVERBS_ROCE=standard: UDP %u is %s: its "
				"packets for this process come through it "
				"if it is softverbs; taking the port over "
				"when it is free",
				SV_ROCE_PORT, holder);
		eng->roce_retry = sv_now_ns() + SV_ROCE_RETRY_NS;
		sv_timer_note(eng, eng->roce_retry);
		return 0;
	}
	if (err && !atomic_exchange(&said, true))
		sv_err("SOFTVERBS_ROCE=standard: cannot bind UDP %u: %s%s%s",
		       SV_ROCE_PORT, strerror(err),
		       err == EADDRINUSE ? "; " : "",
		       err == EADDRINUSE ? holder : "");
	return err;
}

void sv_links_roce_timer(struct sv_engine *eng, uint64_t now, uint64_t *next)
{
	char holder[160];
	bool ours;

	if (!eng->roce_retry || now < eng->roce_retry)
		goto out;
	if (!roce_bind(eng, holder, sizeof(holder), &ours)) {
		eng->roce_retry = 0;
		sv_info("SOFTVERBS_ROCE=standard: took over UDP %u",
			SV_ROCE_PORT);
		SV_STAT(eng, roce_takeover);
		return;
	}
	eng->roce_retry = now + SV_ROCE_RETRY_NS;
out:
	if (eng->roce_retry && (!*next || eng->roce_retry < *next))
		*next = eng->roce_retry;
}

/* The ring of the socket on `port`, from the forwarding cache or newly
 * attached (replacing the oldest entry). */
static struct sv_shm_peer *fwd_peer(struct sv_engine *eng, uint16_t port)
{
	const char *reason = NULL;
	struct sv_shm_peer *p;
	unsigned int i;

	for (i = 0; i < SV_ROCE_FWD; i++) {
		p = eng->roce_fwd[i].peer;
		if (!p || eng->roce_fwd[i].port != port)
			continue;
		if (sv_shm_peer_current(p))
			return p;
		peer_put(p); /* its process left: attach afresh */
		eng->roce_fwd[i].peer = NULL;
	}
	p = peer_get(eng, port, &reason);
	if (!p) {
		sv_dbg("roce: no ring to forward to on port %u: %s", port,
		       reason);
		return NULL;
	}
	i = eng->roce_fwd_next++ % SV_ROCE_FWD;
	peer_put(eng->roce_fwd[i].peer);
	eng->roce_fwd[i].port = port;
	eng->roce_fwd[i].peer = p;
	return p;
}

bool sv_links_roce_forward(struct sv_engine *eng, uint32_t qpn, uint8_t *buf,
			   uint32_t len, const struct sv_flow *flow)
{
	uint16_t port = sv_qpn_port(qpn);
	struct sv_shm_pkt pkt = { flow, buf, len };
	struct sockaddr_in6 bell;
	struct sv_shm_peer *p;
	bool wake = false;

	if (!port || !(p = fwd_peer(eng, port)))
		return false;
	/* Checked here, over the flow only we saw: the ring carries a zero
	 * where the ICRC was (recv.c takes anything else as corrupt). */
	memset(buf + len - SV_ICRC_BYTES, 0, SV_ICRC_BYTES);
	if (!sv_shm_push(p, &pkt, 1, &wake)) {
		SV_STAT(eng, shm_ring_full);
		return true;
	}
	if (wake) {
		/* Its thread sleeps in epoll on that port (link/shm.h). */
		/* Our IPv4 address reaches it; an IPv6 one may need a
		 * scope, ::1 does not. */
		if (flow->dst.family == AF_INET) {
			sv_ipaddr_to_sin6(&flow->dst, port, 0, &bell);
		} else {
			memset(&bell, 0, sizeof(bell));
			bell.sin6_family = AF_INET6;
			bell.sin6_port = htons(port);
			bell.sin6_addr = in6addr_loopback;
		}
		if (sendto(eng->roce->udp.fd, NULL, 0, MSG_DONTWAIT,
			   (struct sockaddr *)&bell, sizeof(bell)) < 0)
			sv_dbg("roce: doorbell: %s", strerror(errno));
		SV_STAT(eng, shm_wakeups);
	}
	SV_STAT(eng, roce_forwarded);
	return true;
}

void sv_links_engine_close(struct sv_engine *eng)
{
	unsigned int i;

	for (i = 0; i < SV_ROCE_FWD; i++)
		peer_put(eng->roce_fwd[i].peer);
}

void sv_links_sock_close(struct sv_sock *s)
{
	while (s->nlinks--)
		s->link[s->nlinks].ops->close(s->link[s->nlinks].ep);
	if (s->roce && s->roce_lock >= 0)
		close(s->roce_lock); /* after the port: the next holder binds */
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

void sv_links_qp_created(struct sv_qp_engine *qe)
{
	if (qe->type == IBV_QPT_UD) {
		why(qe, "UD uses UDP");
		set_rx_udp(qe, true);
		/* Its receives' GRH area holds the traffic class. */
		sv_udp_want_tclass(&qe->sock->udp);
	} else {
		why(qe, "not connected");
	}
}

/* The engine's handle on the ring of the socket on `port` (a same-user
 * process of this namespace), one more reference on it; NULL with a reason
 * when there is none we may use. */
static struct sv_shm_peer *peer_get(struct sv_engine *eng, uint16_t port,
				    const char **reason)
{
	struct sv_shm_peer *p = NULL;
	struct list_node *it;

	for (it = eng->shm_peers.n.next; it != &eng->shm_peers.n;
	     it = it->next) {
		struct sv_shm_peer *c =
			list_entry(it, struct sv_shm_peer, node);

		if (c->port == port && sv_shm_peer_current(c)) {
			c->refs++;
			return c;
		}
	}
	if (sv_link_shm.attach(port, (void **)&p, reason)) {
		if (*reason == sv_shm_why_other_user)
			SV_STAT(eng, shm_other_user);
		return NULL;
	}
	list_add_tail(&eng->shm_peers, &p->node);
	return p;
}

static void peer_put(struct sv_shm_peer *p)
{
	if (p && !--p->refs) {
		list_del(&p->node);
		sv_link_shm.detach(p);
	}
}

static void release(struct sv_qp_engine *qe)
{
	struct sv_shm_peer *p = qe->shm;

	qe->shm = NULL;
	sv_paths_select(qe);
	qe->peer_udp = false;
	peer_put(p);
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
	struct sv_shm_peer *p;
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
	p = peer_get(eng, sv_qpn_port(qe->dest_qpn), &reason);
	if (!p) {
		why(qe, reason);
		sv_dbg("shm: qp 0x%06x -> 0x%06x stays on UDP: %s", qe->qpn,
		       qe->dest_qpn, reason);
		return;
	}
	qe->shm = p;
	sv_paths_select(qe);
	qe->path_why[0] = 0;
}

void sv_links_qp_modified(struct sv_qp_engine *qe, enum ibv_qp_state new_state,
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

void sv_links_qp_destroyed(struct sv_qp_engine *qe)
{
	release(qe);
	set_rx_udp(qe, false);
}

/* A packet of this QP's peer came through UDP: the peer may not attach
 * to us, so this socket is read at every pass again. */
void sv_links_rx_udp_seen(struct sv_qp_engine *qe)
{
	if (qe->shm && !qe->peer_udp) {
		qe->peer_udp = true;
		set_rx_udp(qe, true);
	}
}

void sv_links_of_qp(const struct sv_qp_engine *qe,
		    const struct sv_link_ops **link, void **peer)
{
	if (qe->shm) {
		*link = &sv_link_shm;
		*peer = qe->shm;
	} else {
		*link = &sv_link_udp;
		*peer = NULL;
	}
}

/* What a link counted of its own work: into the engine's stats. */
static void link_counts(struct sv_engine *eng, const struct sv_link_ops *link,
			void *ep)
{
	struct sv_link_counts c = { 0 };

	if (!link->take_counts)
		return;
	link->take_counts(ep, &c);
	eng->stats->gso_sends += c.gso_sends;
	eng->stats->gso_pkts += c.gso_pkts;
	eng->stats->gro_pkts += c.gro_pkts;
	eng->stats->src_said += c.src_said;
	eng->stats->src_lookups += c.src_lookups;
}

/* ---- transmit ---------------------------------------------------------------- */

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

void sv_links_tx(struct sv_engine *eng, struct sv_sock *s,
		 const struct sv_link_ops *link, void *peer,
		 const struct sv_link_pkt *pkt, unsigned int n)
{
	unsigned int bells = 0, lost, i;
	uint64_t until = 0;
	void *ep = NULL;

	for (i = 0; i < s->nlinks; i++)
		if (s->link[i].ops == link)
			ep = s->link[i].ep;
	if (!ep) { /* the socket has no endpoint there (not reached) */
		eng->stats->send_err += n;
		return;
	}
	lost = link->transmit(ep, peer, pkt, n, &bells);
	/* A full ring: the consumer is behind.  UC has no retransmission
	 * and its sender no window, so a burst of large UC messages would
	 * lose whole messages where a socket's big receive buffer would
	 * have queued them: wait a little for room, as a NIC's link-level
	 * flow control would.  Never for our own rings (we hold the lock
	 * that drains them) and not for long (a stopped peer): then the
	 * rest is lost, as datagrams the peer's socket had no room for,
	 * and RC's transport recovers. */
	if (lost && peer && !own_ring(eng, peer)) {
		until = sv_now_ns() + SV_SHM_FULL_WAIT_NS;
		while (lost && sv_now_ns() < until) {
			sched_yield();
			lost = link->transmit(ep, peer, pkt + (n - lost), lost,
					      &bells);
		}
	}
	eng->stats->shm_wakeups += bells;
	link_counts(eng, link, ep);
	if (link->wire)
		eng->stats->send_err += lost;
	else
		eng->stats->shm_ring_full += lost;
}

/* ---- receive ----------------------------------------------------------------- */

struct rx_ctx {
	struct sv_engine *eng;
	struct sv_sock *sock;
	bool wire;
};

static void deliver(void *arg, uint8_t *buf, uint32_t len, bool truncated,
		    const struct sv_flow *flow)
{
	struct rx_ctx *c = arg;

	if (!c->wire)
		SV_STAT(c->eng, shm_rx_pkts);
	sv_rx_pkt(c->eng, c->sock, buf, len, truncated, flow, !c->wire);
}

/* Should this pass read a link that costs a system call (UDP)? */
static bool rx_due(struct sv_engine *eng, struct sv_sock *s)
{
	if (!s->ring.hdr || s->udp_qps || (eng->in_thread && !eng->in_spin))
		return true;
	return !(++s->rx_skip % SV_UDP_EVERY);
}

/* udp: the socket may hold datagrams (else only the cheap links). */
static void sock_rx(struct sv_engine *eng, struct sv_sock *s, bool udp)
{
	uint64_t now = eng->now_ok ? eng->now : 0; /* 0: not read */
	unsigned int i;

	for (i = 0; i < s->nlinks; i++) {
		const struct sv_link_ops *ops = s->link[i].ops;
		struct rx_ctx c = { eng, s, ops->wire };

		if (!ops->cheap && !udp)
			continue; /* nothing there (the epoll look) */
		if (!ops->cheap && !rx_due(eng, s)) {
			eng->rx_skipped = true;
			continue;
		}
		eng->rx_batch++;
		ops->receive(s->link[i].ep, deliver, &c, SV_RX_BUDGET, now,
			     !eng->in_thread);
		link_counts(eng, ops, s->link[i].ep);
	}
}

/* Every socket's rings, and the sockets that hold datagrams.  With a
 * socket per 256 QPs, an engine of 10,000 QPs has 40: rather than a
 * recvmmsg on each (what an empty busy poll would cost), one epoll look
 * says which hold something. */
void sv_links_rx(struct sv_engine *eng)
{
	struct epoll_event ev[SV_RX_SCAN_EVENTS];
	struct list_node *it;
	int n, i;

	eng->rx_skipped = false;
	if (eng->nsocks <= SV_RX_SCAN_SOCKS) {
		for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next)
			sock_rx(eng, list_entry(it, struct sv_sock, node),
				true);
		return;
	}
	n = epoll_wait(eng->epfd, ev, SV_RX_SCAN_EVENTS, 0);
	for (i = 0; i < n; i++)
		/* the doorbell (NULL) and multicast are not sockets here */
		if (ev[i].data.ptr && ev[i].data.ptr != (void *)eng->mcast)
			((struct sv_sock *)ev[i].data.ptr)->rx_ready = true;
	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);

		sock_rx(eng, s, s->rx_ready);
		s->rx_ready = false;
	}
}

bool sv_links_rx_pending(const struct sv_sock *s)
{
	unsigned int i;

	for (i = 0; i < s->nlinks; i++)
		if (s->link[i].ops->pending &&
		    s->link[i].ops->pending(s->link[i].ep))
			return true;
	return false;
}

/* ---- the progress thread's sleep ------------------------------------------- */

bool sv_links_sleep(struct sv_engine *eng)
{
	struct list_node *it;
	bool ok = true;
	unsigned int i;

	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);

		for (i = 0; i < s->nlinks; i++)
			if (s->link[i].ops->sleep &&
			    !s->link[i].ops->sleep(s->link[i].ep))
				ok = false;
	}
	return ok;
}

void sv_links_wake(struct sv_engine *eng)
{
	struct list_node *it;
	unsigned int i;

	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);

		for (i = 0; i < s->nlinks; i++)
			if (s->link[i].ops->wake)
				s->link[i].ops->wake(s->link[i].ep);
	}
}
