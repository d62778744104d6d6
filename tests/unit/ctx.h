/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The unit tests' context: softverbs0 opened, or the test stops. */
#ifndef SV_TESTS_UNIT_CTX_H
#define SV_TESTS_UNIT_CTX_H

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <string.h>

#include "check.h"

static inline struct ibv_context *open_ctx(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;

	REQUIRE(list && list[0]);
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);
	ibv_free_device_list(list);
	return ctx;
}

/* The GID index of ::ffff:127.0.0.1 on port 1, or -1. */
static inline int loopback_gid(struct ibv_context *ctx)
{
	union ibv_gid want = { 0 }, g;

	want.raw[10] = want.raw[11] = 0xff;
	inet_pton(AF_INET, "127.0.0.1", &want.raw[12]);
	for (int i = 0; i < 32; i++)
		if (!ibv_query_gid(ctx, 1, i, &g) && !memcmp(&g, &want, 16))
			return i;
	return -1;
}

#endif
