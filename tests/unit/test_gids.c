/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The cached GID table (core/gids.c), through the library's public verbs
 * (this program's own copy of the core, linked for other unit tests, has
 * no address monitor and so no cache).
 *
 *   - While a context is open (the address monitor watches netlink), 1000
 *     ibv_query_gid calls read the host's addresses (getifaddrs, counted by
 *     a wrapper here that the library's calls reach) a few times at most,
 *     not 1000: before the cache every query and every RTR paid one
 *     (117-270 us per QP, issue #20).
 *   - The cache is never stale: in a network namespace of its own (root
 *     only; skipped otherwise), an address added with ip(8) is in
 *     ibv_query_gid's table as soon as the command has returned, and gone
 *     as soon as it is deleted, 30 times in a row.
 */
#include <dlfcn.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

#define NGIDS 64

static _Atomic unsigned long scans;

/* The library's getifaddrs calls land here (the executable's definition
 * comes first in symbol lookup). */
int getifaddrs(struct ifaddrs **ifap)
{
	static int (*real)(struct ifaddrs **);

	if (!real)
		real = (int (*)(struct ifaddrs **))dlsym(RTLD_NEXT,
							 "getifaddrs");
	atomic_fetch_add(&scans, 1);
	return real(ifap);
}

static bool queried(struct ibv_context *ctx, const union ibv_gid *gid)
{
	union ibv_gid g;
	int i;

	for (i = 0; i < NGIDS; i++)
		if (!ibv_query_gid(ctx, 1, i, &g) &&
		    !memcmp(g.raw, gid->raw, 16))
			return true;
	return false;
}

static int sh(const char *fmt, int v)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), fmt, v);
	return system(cmd);
}

static void fresh_after_changes(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	union ibv_gid gid;
	int i;

	/* A namespace of our own: only lo, which we may change. */
	if (geteuid() != 0 || unshare(CLONE_NEWNET) ||
	    system("ip link set lo up >/dev/null 2>&1")) {
		printf("skipped: no network namespace of our own (root and ip(8) needed)\n");
		return;
	}
	list = ibv_get_device_list(NULL);
	REQUIRE(list && list[0]);
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);
	for (i = 1; i <= 30; i++) {
		memset(&gid, 0, sizeof(gid));
		gid.raw[10] = gid.raw[11] = 0xff;
		gid.raw[12] = 10;
		gid.raw[13] = 77;
		gid.raw[14] = 0;
		gid.raw[15] = (uint8_t)i;
		CHECK(!queried(ctx, &gid));
		REQUIRE(sh("ip addr add 10.77.0.%d/32 dev lo", i) == 0);
		CHECK(queried(ctx, &gid));
		REQUIRE(sh("ip addr del 10.77.0.%d/32 dev lo", i) == 0);
		CHECK(!queried(ctx, &gid));
	}
	CHECK_EQ(ibv_close_device(ctx), 0);
	ibv_free_device_list(list);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	union ibv_gid first, g;
	unsigned long before;
	int i;

	REQUIRE(list && list[0]);
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &first) == 0);
	before = atomic_load(&scans);
	for (i = 0; i < 1000; i++) {
		CHECK_EQ(ibv_query_gid(ctx, 1, 0, &g), 0);
		CHECK(!memcmp(g.raw, first.raw, 16));
	}
	/* A change of the host's addresses meanwhile may cost a scan or
	 * two; 1000 queries must not cost 1000. */
	printf("1000 queries: %lu scans\n", atomic_load(&scans) - before);
	CHECK(atomic_load(&scans) - before <= 5);
	CHECK_EQ(ibv_close_device(ctx), 0);
	ibv_free_device_list(list);

	fresh_after_changes();
	return check_done();
}
