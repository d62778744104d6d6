/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * UD multicast over IP multicast.
 *
 * A multicast GID is an IP multicast address (ff00::/8, or IPv4-mapped
 * 224.0.0.0/4), and a multicast datagram is addressed to QPN 0xffffff
 * (IBA).  Addressing follows the rule of every QPN (port << 8 |
 * slot): QPN 0xffffff is UDP port 65535, which no engine ever takes for
 * its QPs (qp.c).  So a UD send with a multicast AH and the multicast QPN
 * goes to (group address, 65535), with nothing special on the send side,
 * and the IP network delivers it to every host that joined the group.
 *
 * Receive side: the first attach of a context opens one socket bound to
 * [::]:65535 with SO_REUSEADDR, so every context of every process on the
 * host has its own socket on that port and the kernel hands each of them
 * a copy of every datagram of the groups it joined.  IP_MULTICAST_ALL and
 * IPV6_MULTICAST_ALL are off, so a socket sees only its own groups.
 *
 * Standard mode (SOFTVERBS_ROCE=standard) sends to UDP 4791 like every
 * RoCE v2 device (req.c: sv_links_dport), so that rxe and NICs receive
 * it, and receives there: each group of a context gets its own socket
 * bound to (group address, 4791) with SO_REUSEPORT.  Bound to the group,
 * it never matches a unicast datagram, which stays the namespace's 4791
 * holder's (engine/transport/links.c; its socket has SO_REUSEPORT so the two may
 * share the port, and IP_MULTICAST_ALL off so it takes no group's
 * datagrams: link/roce.h).  The kernel hands a multicast datagram to
 * every socket bound to its group and port that joined the group (a
 * reuseport group spreads unicast only), so every context of every
 * process of the holder's user gets its copy with no forwarding, holder
 * or not.  SO_REUSEPORT shares the port only between sockets of one uid:
 * a socket of another user on 4791, or of a program without the option
 * (rxe's, in the kernel), makes the bind, and so the attach, fail; so
 * does ours against theirs (docs/security.md).
 *
 * A group is joined on every interface that is up (loopback included: a
 * namespace with only lo works for IPv4-mapped groups), and joined again
 * on interfaces that come up later (the address monitor, netmon.c, calls
 * sv_mcast_refresh).  A received datagram is checked like any other
 * (parse, ICRC over the group address, P_Key, UD opcode, QPN 0xffffff) and
 * handed to the UD responder of every QP of this context attached to the
 * group, each consuming its own receive WQE.  Senders rely on the kernel's
 * defaults: IP_MULTICAST_LOOP on (local receivers get a copy), TTL 1 (the
 * local link), and the interface of the AH's source address.
 *
 * Lock contract: everything here is guarded by the engine lock; attach and
 * detach come from the verbs layer with the QP's state_lock held (which
 * comes before the engine lock).
 */
#include "engine/transport/mcast.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/device.h"
#include "engine/transport/eng.h"
#include "engine/transport/limits.h"
#include "engine/transport/links.h"
#include "engine/transport/qpe.h"
#include "engine/transport/stats.h"
#include "engine/transport/ud.h"
#include "proto/icrc.h"
#include "link/roce.h"
#include "util/env.h"
#include "util/lockorder.h"
#include "util/log.h"

#define SV_MCAST_PORT 0xffffu
#define SV_MCAST_MAX_IFS 64

struct sv_mgroup {
	struct list_node node;
	union ibv_gid gid;
	struct sv_ipaddr ip;
	struct sv_udp_sock udp; /* standard mode's, else fd -1 */
	struct sv_qp_engine **qps; /* attached QPs of this context */
	uint32_t nqps, cap;
	uint32_t ifs[SV_MCAST_MAX_IFS]; /* interfaces joined on */
	uint32_t nifs;
};

struct sv_mcast {
	struct sv_udp_sock udp; /* on 65535, or fd -1 in standard mode */
	struct list_head groups;
};

/* ---- the socket ------------------------------------------------------------ */

/* A socket on `port`, bound to the group's address or (group NULL) to
 * the wildcard. */
static int mc_socket(struct sv_udp_sock *u, uint16_t port,
		     const struct sv_ipaddr *group)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_addr = IN6ADDR_ANY_INIT,
				  .sin6_port = htons(port) };
	int fd, off = 0, on = 1, size = 4 << 20, err;

	if (group)
		sv_ipaddr_to_sin6(group, port, 0, &a);

	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	/* Standard mode's 4791 is shared with our user's sockets only (see
	 * above); 65535 carries nothing but multicast, for every user. */
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) ||
	    setsockopt(fd, SOL_SOCKET, group ? SO_REUSEPORT : SO_REUSEADDR, &on,
		       sizeof(on)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof(on)) ||
	    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof(on)))
		goto fail;
	/* Only the groups this socket joined, not every group of the host
	 * (both default to on; IPV6_MULTICAST_ALL needs Linux 4.20). */
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &off, sizeof(off)))
		goto fail;
	(void)setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, &off,
			 sizeof(off));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size,
				 sizeof(size));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		goto fail;
	u->fd = fd;
	u->port = port;
	return 0;
fail:
	err = errno;
	close(fd);
	return err;
}

static struct sv_mcast *mc_get(struct sv_engine *eng, int *err)
{
	struct sv_mcast *mc = eng->mcast;

	if (mc)
		return mc;
	mc = calloc(1, sizeof(*mc));
	if (!mc) {
		*err = ENOMEM;
		return NULL;
	}
	list_head_init(&mc->groups);
	mc->udp.fd = -1;
	if (sv_links_standard())
		goto done; /* the groups have the sockets */
	*err = mc_socket(&mc->udp, SV_MCAST_PORT, NULL);
	if (!*err) {
		*err = sv_engine_watch(eng, mc->udp.fd, mc);
		if (*err)
			sv_udp_close(&mc->udp);
	}
	if (*err) {
		sv_warn("multicast: cannot open UDP port %u: %s", SV_MCAST_PORT,
			strerror(*err));
		free(mc);
		return NULL;
	}
done:
	eng->mcast = mc;
	return mc;
}

static void mc_put(struct sv_engine *eng)
{
	struct sv_mcast *mc = eng->mcast;

	if (!mc || !list_empty(&mc->groups))
		return;
	if (mc->udp.fd >= 0)
		sv_udp_close(
			&mc->udp); /* leaves its groups and the epoll set */
	free(mc);
	eng->mcast = NULL;
}

/* ---- memberships ------------------------------------------------------------ */

static int join_op(struct sv_mcast *mc, struct sv_mgroup *g, uint32_t ifindex,
		   bool join)
{
	int fd = g->udp.fd >= 0 ? g->udp.fd : mc->udp.fd;
	struct group_req gr;
	int level;

	memset(&gr, 0, sizeof(gr));
	gr.gr_interface = ifindex;
	if (g->ip.family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&gr.gr_group;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, g->ip.addr, 4);
		level = IPPROTO_IP;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&gr.gr_group;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, g->ip.addr, 16);
		level = IPPROTO_IPV6;
	}
	if (setsockopt(fd, level, join ? MCAST_JOIN_GROUP : MCAST_LEAVE_GROUP,
		       &gr, sizeof(gr)))
		return errno;
	return 0;
}

/* The interfaces that are up now. */
static uint32_t up_ifs(uint32_t *ifs, uint32_t max)
{
	struct ifaddrs *ifa, *it;
	uint32_t n = 0, i;

	if (getifaddrs(&ifa))
		return 0;
	for (it = ifa; it; it = it->ifa_next) {
		uint32_t idx;

		if (!(it->ifa_flags & IFF_UP) || !(it->ifa_flags & IFF_RUNNING))
			continue;
		idx = if_nametoindex(it->ifa_name);
		if (!idx)
			continue;
		for (i = 0; i < n && ifs[i] != idx; i++)
			;
		if (i == n && n < max)
			ifs[n++] = idx;
	}
	freeifaddrs(ifa);
	return n;
}

/* Join the group on every interface that is up and not joined yet; forget
 * interfaces that went away (the kernel dropped those memberships). */
static void group_sync(struct sv_mcast *mc, struct sv_mgroup *g,
		       const uint32_t *ifs, uint32_t nifs)
{
	uint32_t i, j;

	for (j = 0; j < g->nifs;) {
		for (i = 0; i < nifs && ifs[i] != g->ifs[j]; i++)
			;
		if (i == nifs) {
			(void)join_op(mc, g, g->ifs[j], false);
			g->ifs[j] = g->ifs[--g->nifs];
		} else {
			j++;
		}
	}
	for (i = 0; i < nifs; i++) {
		int err;

		for (j = 0; j < g->nifs && g->ifs[j] != ifs[i]; j++)
			;
		if (j < g->nifs || g->nifs == SV_MCAST_MAX_IFS)
			continue;
		err = join_op(mc, g, ifs[i], true);
		if (!err || err == EADDRINUSE)
			g->ifs[g->nifs++] = ifs[i];
		else
			sv_dbg("multicast: join on interface %u: %s", ifs[i],
			       strerror(err));
	}
}

void sv_mcast_refresh(struct sv_engine *eng)
{
	uint32_t ifs[SV_MCAST_MAX_IFS], n;
	struct list_node *it;

	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	if (eng->mcast) {
		n = up_ifs(ifs, SV_MCAST_MAX_IFS);
		for (it = eng->mcast->groups.n.next;
		     it != &eng->mcast->groups.n; it = it->next)
			group_sync(eng->mcast,
				   list_entry(it, struct sv_mgroup, node), ifs,
				   n);
	}
	sv_mutex_unlock(&eng->lock);
}

/* Standard mode: the group's own socket on (group address, 4791), in the
 * engine's epoll set. */
static int group_socket(struct sv_engine *eng, struct sv_mgroup *g)
{
	int err;

	if (!sv_links_standard())
		return 0;
	err = mc_socket(&g->udp, SV_ROCE_PORT, &g->ip);
	if (!err) {
		err = sv_engine_watch(eng, g->udp.fd, eng->mcast);
		if (err)
			sv_udp_close(&g->udp);
	}
	if (err)
		sv_warn("multicast: cannot bind UDP %u for a group: %s%s",
			SV_ROCE_PORT, strerror(err),
			err == EADDRINUSE ? " (another user's process or the "
					    "kernel, rxe's, holds the port)" :
					    "");
	return err;
}

/* Closing the socket leaves its memberships and the epoll set. */
static void group_free(struct sv_mgroup *g)
{
	if (g->udp.fd >= 0)
		sv_udp_close(&g->udp);
	free(g->qps);
	free(g);
}

static struct sv_mgroup *group_find(struct sv_mcast *mc,
				    const union ibv_gid *gid)
{
	struct list_node *it;

	for (it = mc->groups.n.next; it != &mc->groups.n; it = it->next) {
		struct sv_mgroup *g = list_entry(it, struct sv_mgroup, node);

		if (!memcmp(g->gid.raw, gid->raw, 16))
			return g;
	}
	return NULL;
}

int sv_engine_mcast_attach(struct sv_qp *qp, const union ibv_gid *gid)
{
	struct sv_qp_engine *qe = qp->eng;
	struct sv_engine *eng = qe->eng;
	struct sv_mcast *mc;
	struct sv_mgroup *g;
	int err = 0;

	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	mc = mc_get(eng, &err);
	if (!mc)
		goto out;
	g = group_find(mc, gid);
	if (!g) {
		struct sockaddr_storage ss;
		uint32_t ifs[SV_MCAST_MAX_IFS], n;

		g = calloc(1, sizeof(*g));
		if (!g) {
			err = ENOMEM;
			goto out_put;
		}
		g->gid = *gid;
		sv_gid_to_sockaddr(gid, &ss);
		sv_sockaddr_to_ipaddr((struct sockaddr *)&ss, &g->ip, NULL);
		g->udp.fd = -1;
		err = group_socket(eng, g);
		if (err) {
			free(g);
			goto out_put;
		}
		list_add_tail(&mc->groups, &g->node);
		n = up_ifs(ifs, SV_MCAST_MAX_IFS);
		group_sync(mc, g, ifs, n);
	}
	/* Device limit: max_mcast_qp_attach QPs per group. */
	if (g->nqps >= SV_MAX_MCAST_QP_ATTACH) {
		err = ENOMEM;
	} else if (g->nqps == g->cap) {
		uint32_t cap = g->cap ? g->cap * 2 : 4;
		struct sv_qp_engine **q = realloc(g->qps, cap * sizeof(*q));

		if (!q)
			err = ENOMEM;
		else {
			g->qps = q;
			g->cap = cap;
		}
	}
	if (!err) {
		g->qps[g->nqps++] = qe;
	} else if (!g->nqps) {
		list_del(&g->node);
		group_free(g);
	}
out_put:
	mc_put(eng);
out:
	sv_mutex_unlock(&eng->lock);
	return err;
}

void sv_engine_mcast_detach(struct sv_qp *qp, const union ibv_gid *gid)
{
	struct sv_qp_engine *qe = qp->eng;
	struct sv_engine *eng = qe->eng;
	struct sv_mgroup *g;
	uint32_t i;

	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	g = eng->mcast ? group_find(eng->mcast, gid) : NULL;
	if (g) {
		for (i = 0; i < g->nqps; i++)
			if (g->qps[i] == qe) {
				g->qps[i] = g->qps[--g->nqps];
				break;
			}
		if (!g->nqps) {
			for (i = 0; i < g->nifs; i++)
				(void)join_op(eng->mcast, g, g->ifs[i], false);
			list_del(&g->node);
			group_free(g);
			mc_put(eng);
		}
	}
	sv_mutex_unlock(&eng->lock);
}

/* ---- receive ---------------------------------------------------------------- */

static struct sv_mgroup *group_by_ip(struct sv_mcast *mc,
				     const struct sv_ipaddr *ip)
{
	struct list_node *it;

	for (it = mc->groups.n.next; it != &mc->groups.n; it = it->next) {
		struct sv_mgroup *g = list_entry(it, struct sv_mgroup, node);

		if (sv_ipaddr_eq(&g->ip, ip))
			return g;
	}
	return NULL;
}

static void mc_drop(struct sv_engine *eng, struct sv_udp_rx *r, const char *why)
{
	if (sv_env_trace())
		sv_hook_trace_pkt(eng, "rx-drop", r->buf, r->len, why);
}

static void mc_rx_one(struct sv_engine *eng, struct sv_udp_rx *r)
{
	struct sv_mgroup *g;
	struct sv_pkt pkt;
	uint32_t i;

	SV_STAT(eng, rcvd_pkts);
	if (r->truncated || r->len > SV_MAX_PKT ||
	    sv_pkt_parse(&pkt, r->buf, r->len)) {
		SV_STAT(eng, drop_malformed);
		return mc_drop(eng, r, "malformed");
	}
	if (!r->flow.dst.family ||
	    !sv_icrc_check(&r->flow, r->buf, r->len, NULL)) {
		SV_STAT(eng, drop_icrc);
		return mc_drop(eng, r, "bad ICRC");
	}
	/* IBA: multicast is UD, to QPN 0xffffff, to a group this
	 * context has QPs attached to. */
	g = group_by_ip(eng->mcast, &r->flow.dst);
	if (pkt.qpn != SV_QPN_MCAST || !g) {
		SV_STAT(eng, drop_no_qp);
		return mc_drop(eng, r, "not a multicast datagram of ours");
	}
	if ((sv_bth_pkey(pkt.hdr) & 0x7fff) != (SV_DEFAULT_PKEY & 0x7fff)) {
		SV_STAT(eng, drop_pkey);
		return mc_drop(eng, r, "P_Key mismatch");
	}
	if (!(pkt.mask & SV_M_UD)) {
		SV_STAT(eng, drop_transport);
		return mc_drop(eng, r, "not a UD opcode");
	}
	if (sv_env_trace())
		sv_hook_trace_pkt(eng, "rx-mcast", r->buf, r->len, NULL);
	for (i = 0; i < g->nqps; i++) {
		struct sv_qp_engine *qe = g->qps[i];
		int st = atomic_load(&qe->state);

		/* IBA: UD receives from RTR on. */
		if (st == IBV_QPS_RESET || st == IBV_QPS_INIT ||
		    st == IBV_QPS_ERR) {
			SV_STAT(eng, drop_qp_state);
			continue;
		}
		sv_ud_rx(qe, &pkt, &r->flow);
	}
}

static void rx_sock(struct sv_engine *eng, struct sv_udp_sock *u)
{
	unsigned int budget = SV_RX_BUDGET;

	while (budget) {
		int i, n = sv_udp_recv(u, eng->rx, SV_RX_BATCH);

		for (i = 0; i < n; i++)
			mc_rx_one(eng, &eng->rx[i]);
		if (n < SV_RX_BATCH)
			break;
		budget -= (unsigned int)n < budget ? (unsigned int)n : budget;
	}
}

void sv_mcast_rx(struct sv_engine *eng)
{
	struct list_node *it;

	if (!eng->mcast)
		return;
	if (eng->mcast->udp.fd >= 0)
		rx_sock(eng, &eng->mcast->udp);
	/* Standard mode: delivery changes no group (mc_rx_one). */
	for (it = eng->mcast->groups.n.next; it != &eng->mcast->groups.n;
	     it = it->next) {
		struct sv_mgroup *g = list_entry(it, struct sv_mgroup, node);

		if (g->udp.fd >= 0)
			rx_sock(eng, &g->udp);
	}
}

/* Context close: whatever is still attached goes (a QP attached to a
 * group cannot be destroyed, but a context can be closed with QPs). */
void sv_mcast_close(struct sv_engine *eng)
{
	struct list_node *it, *tmp;

	if (!eng->mcast)
		return;
	list_for_each_safe (&eng->mcast->groups, it, tmp) {
		struct sv_mgroup *g = list_entry(it, struct sv_mgroup, node);

		list_del(it);
		group_free(g);
	}
	mc_put(eng);
}
