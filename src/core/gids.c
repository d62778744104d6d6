/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The GID table and the port MTU, cached between address changes.
 *
 * Both come from getifaddrs (device.c), which costs some 100 us and more
 * on a host with many addresses; every RTR asks for the table (the source
 * GID's address, whether the peer is on this host), so 10,000 QPs spent
 * seconds there.  The cache holds one snapshot while the address monitor
 * (engine/forward/netmon.c) watches the host's addresses through netlink:
 *
 *   - the generation is a sequence count: the monitor makes it odd
 *     before it reads a message from its socket and even again after;
 *   - a reader reads an even generation, asks the monitor's socket
 *     whether a message waits (a poll that returns at once) and reads the
 *     generation again; if nothing waited and the generation stayed, a
 *     snapshot taken at that generation is current.
 *
 * The kernel queues its netlink message before the call that changed an
 * address returns, so after `ip addr add` a reader either sees the
 * message waiting, or the monitor reading it (odd), or the generation
 * moved on: never the old snapshot.  (Bumping only before the read was
 * not enough: a reader could store a scan at the generation of a read
 * still to come, which then took the message away unseen.)
 * That keeps the table exactly as fresh as a scan, and the monitor's
 * 20 ms settling (its events) out of it.  Without a monitor (it could not
 * subscribe, or a child after fork) every read scans.
 *
 * Lock: gids.lock (SV_LOCK_GIDS, a leaf) guards the snapshot only; scans
 * run outside it.
 */
#include "core/device.h"

#include <poll.h>
#include <stdatomic.h>
#include <string.h>

#include "util/lockorder.h"

static struct {
	pthread_mutex_t lock;
	_Atomic int fd; /* the monitor's netlink socket, -1 none */
	_Atomic uint64_t gen; /* bumped before each message is read */
	bool valid;
	uint64_t at_gen; /* the snapshot's generation */
	int n;
	struct sv_gid_entry tab[SV_MAX_GIDS];
	enum ibv_mtu mtu;
} gids = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
};

void sv_gid_cache_watch(int fd)
{
	atomic_fetch_add(&gids.gen, 1);
	atomic_store(&gids.fd, fd);
	atomic_fetch_add(&gids.gen, 1);
}

void sv_gid_cache_recv_begin(void)
{
	atomic_fetch_add(&gids.gen, 1);
}

void sv_gid_cache_recv_end(void)
{
	atomic_fetch_add(&gids.gen, 1);
}

uint64_t sv_net_gen(void)
{
	uint64_t gen = atomic_load(&gids.gen);

	if (atomic_load(&gids.fd) < 0 || (gen & 1))
		return 0;
	return gen;
}

/* May a snapshot of generation *gen be used or stored?  Not while the
 * monitor reads a message, nor while one waits in its socket (or an
 * error: lost messages). */
static bool quiet(uint64_t *gen)
{
	int fd = atomic_load(&gids.fd);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	*gen = atomic_load(&gids.gen);
	if (fd < 0 || (*gen & 1))
		return false;
	if (poll(&p, 1, 0) != 0)
		return false;
	return atomic_load(&gids.gen) == *gen;
}

/* The current snapshot: the cached one, or a scan (stored when quiet). */
static void snapshot(struct sv_gid_entry *tab, int max, int *n,
		     enum ibv_mtu *mtu)
{
	uint64_t gen;
	bool ok = quiet(&gen);

	if (ok) {
		sv_mutex_lock(&gids.lock, SV_LOCK_GIDS);
		if (gids.valid && gids.at_gen == gen) {
			*n = gids.n < max ? gids.n : max;
			if (tab)
				memcpy(tab, gids.tab,
				       sizeof(tab[0]) * (size_t)*n);
			*mtu = gids.mtu;
			sv_mutex_unlock(&gids.lock);
			return;
		}
		sv_mutex_unlock(&gids.lock);
	}
	{
		struct sv_gid_entry fresh[SV_MAX_GIDS];
		int m = sv_gid_scan(fresh, SV_MAX_GIDS);

		*mtu = sv_port_scan_mtu();
		*n = m < max ? m : max;
		if (tab)
			memcpy(tab, fresh, sizeof(tab[0]) * (size_t)*n);
		/* Stored under the generation read before the scan: a
		 * change during the scan moved it on already. */
		if (ok) {
			sv_mutex_lock(&gids.lock, SV_LOCK_GIDS);
			memcpy(gids.tab, fresh, sizeof(fresh[0]) * (size_t)m);
			gids.n = m;
			gids.mtu = *mtu;
			gids.at_gen = gen;
			gids.valid = true;
			sv_mutex_unlock(&gids.lock);
		}
	}
}

int sv_gid_table(struct sv_gid_entry *tab, int max)
{
	enum ibv_mtu mtu;
	int n;

	snapshot(tab, max, &n, &mtu);
	return n;
}

enum ibv_mtu sv_port_active_mtu(void)
{
	enum ibv_mtu mtu;
	int n;

	snapshot(NULL, 0, &n, &mtu);
	return mtu;
}

bool sv_gid_is_local(const union ibv_gid *gid)
{
	struct sv_gid_entry tab[SV_MAX_GIDS];
	int i, n = sv_gid_table(tab, SV_MAX_GIDS);

	for (i = 0; i < n; i++)
		if (!memcmp(tab[i].gid.raw, gid->raw, 16))
			return true;
	return false;
}
