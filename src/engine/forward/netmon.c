/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The address monitor: port and GID events from the host's addresses.
 *
 * softverbs0's GID table is the host's IP addresses and its one port is
 * up while there is at least one (core/device.c).  One thread per process
 * listens on an rtnetlink socket (RTMGRP_LINK, RTMGRP_IPV4_IFADDR,
 * RTMGRP_IPV6_IFADDR, and the routes, RTMGRP_IPV4_ROUTE and
 * RTMGRP_IPV6_ROUTE, for link/udp.c's cache of the kernel's source
 * addresses: core/device.h sv_net_gen) and, after each burst of messages,
 * takes a fresh
 * snapshot of the GID table and compares it with the previous one:
 *   - the port went from no address to some: IBV_EVENT_PORT_ACTIVE;
 *   - from some to none (every interface down or without addresses):
 *     IBV_EVENT_PORT_ERR;
 *   - any change of the table (an address or interface came or went):
 *     IBV_EVENT_GID_CHANGE;
 * each on port 1 of every open context.  It also refreshes each engine's
 * copy of the port MTU (the UD message limit) and lets multicast join its
 * groups on interfaces that came up, and its socket keeps core/gids.c's
 * cached GID table current (it says a message waits, or the thread has
 * read one).  A per-process thread rather than the
 * contexts' progress threads: those start with the first QP, and a program
 * like ibv_asyncwatch opens a context and only waits for events.
 *
 * Locks: nm.life serialises starting and stopping; nm.lock guards the
 * context list and the snapshot and is taken by the thread, before the
 * engine and context locks it then takes.
 */

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/async.h"
#include "core/device.h"
#include "engine/transport/mcast.h"
#include "util/lockorder.h"
#include "util/log.h"

#define SV_NETMON_SETTLE_MS 20

static struct {
	pthread_mutex_t life;
	pthread_mutex_t lock;
	struct sv_context **ctx;
	int nctx, cap;
	pthread_t thread;
	bool running;
	int nlfd, stopfd;
	struct sv_gid_entry tab[SV_MAX_GIDS];
	int ntab;
} nm = {
	.life = PTHREAD_MUTEX_INITIALIZER,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.nlfd = -1,
	.stopfd = -1,
};

static bool table_differs(const struct sv_gid_entry *a, int na,
			  const struct sv_gid_entry *b, int nb)
{
	int i;

	if (na != nb)
		return true;
	for (i = 0; i < na; i++)
		if (memcmp(a[i].gid.raw, b[i].gid.raw, 16) ||
		    a[i].ifindex != b[i].ifindex)
			return true;
	return false;
}

static void post_port_event(struct sv_context *ctx, enum ibv_event_type t)
{
	struct ibv_async_event ev = { .element.port_num = SV_PORT,
				      .event_type = t };

	sv_async_post(ctx, &ev);
}

/* A burst of netlink messages was read: compare and tell (nm.lock held). */
static void rescan(void)
{
	struct sv_gid_entry tab[SV_MAX_GIDS];
	int n = sv_gid_scan(tab, SV_MAX_GIDS), i;
	bool changed = table_differs(tab, n, nm.tab, nm.ntab);
	bool was_up = nm.ntab > 0, up = n > 0;
	uint32_t mtu = sv_mtu_bytes(sv_port_scan_mtu());

	for (i = 0; i < nm.nctx; i++) {
		struct sv_context *ctx = nm.ctx[i];

		if (ctx->engine) {
			atomic_store(&ctx->engine->port_mtu, mtu);
			sv_mcast_refresh(ctx->engine);
		}
		if (was_up != up)
			post_port_event(ctx, up ? IBV_EVENT_PORT_ACTIVE :
						  IBV_EVENT_PORT_ERR);
		if (changed)
			post_port_event(ctx, IBV_EVENT_GID_CHANGE);
	}
	if (changed)
		sv_dbg("netmon: GID table changed (%d -> %d entries)", nm.ntab,
		       n);
	memcpy(nm.tab, tab, sizeof(tab[0]) * (size_t)n);
	nm.ntab = n;
}

static void *netmon_main(void *arg)
{
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));

	(void)arg;
	for (;;) {
		struct pollfd p[2] = { { .fd = nm.nlfd, .events = POLLIN },
				       { .fd = nm.stopfd, .events = POLLIN } };
		bool got = false;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			sv_warn("netmon: poll: %s", strerror(errno));
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		/* Drain the burst (one change is several messages: a link
		 * going up brings back its IPv6 addresses a moment later) and
		 * let it settle, so one change is one event; an overrun
		 * (ENOBUFS) lost messages, which the rescan makes up for. */
		for (int settle = 0; settle < 10; settle++) {
			struct pollfd q = { .fd = nm.nlfd, .events = POLLIN };

			for (;;) {
				ssize_t r;

				/* Bracketed for core/gids.c's cache: a
				 * message leaving the socket is seen there
				 * as a generation that moves. */
				sv_gid_cache_recv_begin();
				r = recv(nm.nlfd, buf, sizeof(buf),
					 MSG_DONTWAIT);
				sv_gid_cache_recv_end();

				if (r > 0 || (r < 0 && errno == ENOBUFS)) {
					got = true;
					continue;
				}
				if (r < 0 && errno == EINTR)
					continue;
				break;
			}
			if (poll(&q, 1, SV_NETMON_SETTLE_MS) <= 0)
				break;
		}
		if (!got)
			continue;
		sv_mutex_lock(&nm.lock, SV_LOCK_NETMON);
		rescan();
		sv_mutex_unlock(&nm.lock);
	}
}

static int start(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_LINK |
					       RTMGRP_IPV4_IFADDR |
					       RTMGRP_IPV6_IFADDR |
					       RTMGRP_IPV4_ROUTE |
					       RTMGRP_IPV6_ROUTE };
	sigset_t all, old;
	int err;

	nm.nlfd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
			 NETLINK_ROUTE);
	if (nm.nlfd < 0)
		return errno;
	if (bind(nm.nlfd, (struct sockaddr *)&sa, sizeof(sa)))
		goto fail;
	nm.stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (nm.stopfd < 0)
		goto fail;
	/* The snapshot after subscribing: no change can fall in between. */
	nm.ntab = sv_gid_scan(nm.tab, SV_MAX_GIDS);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&nm.thread, NULL, netmon_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		errno = err;
		goto fail;
	}
	nm.running = true;
	sv_gid_cache_watch(nm.nlfd);
	return 0;
fail:
	err = errno;
	if (nm.stopfd >= 0)
		close(nm.stopfd);
	close(nm.nlfd);
	nm.nlfd = nm.stopfd = -1;
	return err;
}

static void stop(void)
{
	uint64_t one = 1;

	if (write(nm.stopfd, &one, sizeof(one)) != sizeof(one))
		sv_warn("netmon: cannot stop the thread: %s", strerror(errno));
	pthread_join(nm.thread, NULL);
	sv_gid_cache_watch(-1);
	close(nm.nlfd);
	close(nm.stopfd);
	nm.nlfd = nm.stopfd = -1;
	nm.running = false;
}

/* fork(): the child has no monitor thread and none of the parent's
 * contexts are usable there (as with rdma-core); it starts afresh if it
 * opens a device.  The locks are held across fork so that the child's
 * copy of the state is consistent. */
static void atfork_prepare(void)
{
	sv_mutex_lock(&nm.life, SV_LOCK_NETMON_LIFE);
	sv_mutex_lock(&nm.lock, SV_LOCK_NETMON);
}

static void atfork_parent(void)
{
	sv_mutex_unlock(&nm.lock);
	sv_mutex_unlock(&nm.life);
}

static void atfork_child(void)
{
	/* The socket is the parent's too, and the parent's thread reads
	 * it: no cache in the child until it starts its own monitor. */
	sv_gid_cache_watch(-1);
	if (nm.running) {
		close(nm.nlfd);
		close(nm.stopfd);
	}
	nm.nlfd = nm.stopfd = -1;
	nm.running = false;
	nm.nctx = 0;
	sv_mutex_unlock(&nm.lock);
	sv_mutex_unlock(&nm.life);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_init(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void sv_engine_netmon_add(struct sv_context *ctx)
{
	pthread_once(&atfork_once, atfork_init);
	sv_mutex_lock(&nm.life, SV_LOCK_NETMON_LIFE);
	sv_mutex_lock(&nm.lock, SV_LOCK_NETMON);
	if (nm.nctx == nm.cap) {
		int cap = nm.cap ? 2 * nm.cap : 4;
		struct sv_context **c =
			realloc(nm.ctx, (size_t)cap * sizeof(*c));

		if (!c) {
			sv_mutex_unlock(&nm.lock);
			sv_mutex_unlock(&nm.life);
			sv_warn("netmon: out of memory: no port or GID events");
			return;
		}
		nm.ctx = c;
		nm.cap = cap;
	}
	nm.ctx[nm.nctx++] = ctx;
	sv_mutex_unlock(&nm.lock);
	if (!nm.running) {
		int err = start();

		/* A sandbox without netlink: a correct program meets it,
		 * so not a warning (the default level). */
		if (err)
			sv_info("netmon: no port or GID events: %s",
				strerror(err));
	}
	sv_mutex_unlock(&nm.life);
}

void sv_engine_netmon_del(struct sv_context *ctx)
{
	bool last;
	int i;

	sv_mutex_lock(&nm.life, SV_LOCK_NETMON_LIFE);
	sv_mutex_lock(&nm.lock, SV_LOCK_NETMON);
	for (i = 0; i < nm.nctx; i++)
		if (nm.ctx[i] == ctx) {
			nm.ctx[i] = nm.ctx[--nm.nctx];
			break;
		}
	last = nm.nctx == 0;
	sv_mutex_unlock(&nm.lock);
	if (last && nm.running)
		stop();
	if (last) {
		free(nm.ctx);
		nm.ctx = NULL;
		nm.cap = 0;
	}
	sv_mutex_unlock(&nm.life);
}
