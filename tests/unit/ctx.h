/* The unit tests' context: softverbs0 opened, or the test stops. */
#ifndef SV_TESTS_UNIT_CTX_H
#define SV_TESTS_UNIT_CTX_H

#include <infiniband/verbs.h>

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

#endif
