/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Device memory (ibv_alloc_dm, ibv_memcpy_to_dm/from_dm, ibv_reg_dm_mr):
 * max_dm_size in ibv_query_device_ex, the limits and errno values mlx5
 * answers with (EINVAL for a request that can never fit, ENOMEM when the
 * device memory is used up, EINVAL for unaligned copies, EFAULT beyond the
 * allocation, EINVAL for a DM MR that is not zero-based), bytes through
 * the copy verbs, EBUSY freeing memory an MR is registered on, and the
 * reason of a refusal on stderr. */
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ctx.h"

static struct ibv_dm *dm_alloc(struct ibv_context *ctx, size_t len,
			       uint32_t align, uint32_t mask)
{
	struct ibv_alloc_dm_attr a = { .length = len,
				       .log_align_req = align,
				       .comp_mask = mask };

	return ibv_alloc_dm(ctx, &a);
}

#define ALLOC_FAILS(len, align, mask, err)                      \
	do {                                                    \
		errno = 0;                                      \
		CHECK(dm_alloc(ctx, len, align, mask) == NULL); \
		CHECK_EQ(errno, err);                           \
	} while (0)

/* stderr of one failing allocation, checked for `why`. */
static bool alloc_says(struct ibv_context *ctx, size_t len, const char *why)
{
	char path[] = "/tmp/test_dm.XXXXXX", line[512];
	int tmp = mkstemp(path), saved;
	bool said = false;
	FILE *f;

	REQUIRE(tmp >= 0);
	unlink(path);
	fflush(stderr);
	saved = dup(2);
	dup2(tmp, 2);
	CHECK(dm_alloc(ctx, len, 0, 0) == NULL);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fdopen(tmp, "r");
	REQUIRE(f);
	rewind(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "ibv_alloc_dm") && strstr(line, why))
			said = true;
	fclose(f);
	return said;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_device_attr_ex ex;
	struct ibv_dm *dm, *dm2;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t in[4096], out[4096];
	size_t max;

	/* Warnings on: the refusals' reasons are checked.  The library
	 * reads its environment once, possibly before main: run again with
	 * it set. */
	if (!getenv("SOFTVERBS_LOG") || strcmp(getenv("SOFTVERBS_LOG"), "1")) {
		setenv("SOFTVERBS_LOG", "1", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	ctx = open_ctx();
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	REQUIRE(ibv_query_device_ex(ctx, NULL, &ex) == 0);
	max = ex.max_dm_size;
	CHECK_EQ(max, 256 * 1024);

	/* what can never be allocated: EINVAL */
	ALLOC_FAILS(4096, 0, 1, EINVAL); /* no comp_mask bit exists */
	ALLOC_FAILS(0, 0, 0, EINVAL);
	ALLOC_FAILS(max + 1, 0, 0, EINVAL);
	ALLOC_FAILS(4096, 13, 0, EINVAL); /* alignment above a page */
	CHECK(alloc_says(ctx, max + 1, "max_dm_size"));

	/* what is used up: ENOMEM, until freed */
	dm = dm_alloc(ctx, max - 1000, 12, 0);
	REQUIRE(dm);
	CHECK(dm->context == ctx);
	ALLOC_FAILS(2000, 0, 0, ENOMEM);
	dm2 = dm_alloc(ctx, 1000, 0, 0);
	REQUIRE(dm2); /* exactly what is left */
	CHECK_EQ(ibv_free_dm(dm2), 0);

	/* copies: bytes round trip, 4-byte units, inside the allocation */
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 13 + 5);
	CHECK_EQ(ibv_memcpy_to_dm(dm, 8192, in, sizeof(in)), 0);
	memset(out, 0, sizeof(out));
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 8192, sizeof(out)), 0);
	CHECK(!memcmp(in, out, sizeof(in)));
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 8192 + 100, 8), 0);
	CHECK(!memcmp(out, in + 100, 8));
	CHECK_EQ(ibv_memcpy_to_dm(dm, 2, in, 8), EINVAL);
	CHECK_EQ(ibv_memcpy_to_dm(dm, 0, in, 6), EINVAL);
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, max - 1000 - 4, 8), EFAULT);
	CHECK_EQ(ibv_memcpy_to_dm(dm, (uint64_t)-4, in, 8), EFAULT);

	/* MRs: zero-based, rights a DM may have, inside the allocation */
	errno = 0;
	CHECK(ibv_reg_dm_mr(pd, dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(ibv_reg_dm_mr(pd, dm, 0, 4096,
			    IBV_ACCESS_ZERO_BASED | IBV_ACCESS_MW_BIND) ==
	      NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(ibv_reg_dm_mr(pd, dm, max - 1000 - 8, 16,
			    IBV_ACCESS_ZERO_BASED) == NULL);
	CHECK_EQ(errno, EINVAL);
	/* A zero length anywhere inside, as the kernel allows (rdma-core's
	 * test_create_dm_mr registers 0 bytes of a 4-byte allocation). */
	errno = 0;
	CHECK(ibv_reg_dm_mr(pd, dm, max - 1000 + 4, 0, IBV_ACCESS_ZERO_BASED) ==
	      NULL);
	CHECK_EQ(errno, EINVAL);
	mr = ibv_reg_dm_mr(pd, dm, 0, 0,
			   IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	CHECK_EQ(mr->length, 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	/* At the end, and at an offset inside a page: device memory has no
	 * pages (mlx5 registers any offset). */
	mr = ibv_reg_dm_mr(pd, dm, max - 1000, 0, IBV_ACCESS_ZERO_BASED);
	REQUIRE(mr);
	CHECK(mr->addr == (void *)(uintptr_t)(max - 1000));
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_dm_mr(pd, dm, 100, 8, IBV_ACCESS_ZERO_BASED);
	REQUIRE(mr);
	CHECK(mr->addr == (void *)100);
	CHECK_EQ(mr->length, 8);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_dm_mr(pd, dm, 8192, 4096,
			   IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	REQUIRE(mr);
	CHECK(mr->addr == (void *)8192); /* as rdma-core reports it */
	CHECK_EQ(mr->length, 4096);
	CHECK(mr->lkey != 0 && mr->rkey != 0);
	CHECK_EQ(ibv_free_dm(dm), EBUSY);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_free_dm(dm), 0);
	/* all of it back */
	dm = dm_alloc(ctx, max, 0, 0);
	REQUIRE(dm);
	CHECK_EQ(ibv_free_dm(dm), 0);

	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
