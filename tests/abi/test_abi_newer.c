/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What binaries built against newer rdma-core headers than ours (up to
 * rdma-core 65) see: structs the library fills beyond our headers' sizes
 * (ibv_port_attr, ibv_device_attr_ex) zeroed up to the caller's size; the
 * wr_flush member that ibv_qp_ex has since rdma-core 45; and the verbs of
 * IBVERBS_1.15 .. 1.18 and the private nodes' ibv_query_gid_type, looked
 * up by version as such a binary binds them.
 */
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "unit/ctx.h"

static void *lib;

/* NAME@VERSION, as the loader binds a binary's versioned import. */
static void *sym(const char *name, const char *ver)
{
	void *p = dlvsym(lib, name, ver);

	if (!p)
		fprintf(stderr, "no %s@%s: %s\n", name, ver, dlerror());
	REQUIRE(p);
	return p;
}

/* Both queries write only what our headers know, and zero the rest of
 * what the caller (its headers) says it has: rdma-core 49+'s
 * active_speed_ex must read 0, not stack garbage (ibv_devinfo -v). */
static void test_zeroed_tails(struct ibv_context *ctx)
{
	struct verbs_context *v = verbs_get_ctx(ctx);
	unsigned char big[sizeof(struct ibv_port_attr) + 64];
	unsigned char dev[sizeof(struct ibv_device_attr_ex) + 64];
	struct ibv_port_attr ours;
	size_t i, nz = 0;

	REQUIRE(v && v->query_port && v->query_device_ex);
	memset(big, 0xa5, sizeof(big));
	CHECK_EQ(v->query_port(ctx, 1, (struct ibv_port_attr *)big,
			       sizeof(big)),
		 0);
	REQUIRE(ibv_query_port(ctx, 1, &ours) == 0);
	CHECK(memcmp(big, &ours, offsetof(struct ibv_port_attr, flags)) == 0);
	for (i = sizeof(ours); i < sizeof(big); i++)
		nz += big[i] != 0;
	CHECK_EQ(nz, 0);

	memset(dev, 0xa5, sizeof(dev));
	CHECK_EQ(v->query_device_ex(ctx, NULL, (struct ibv_device_attr_ex *)dev,
				    sizeof(dev)),
		 0);
	nz = 0;
	for (i = sizeof(struct ibv_device_attr_ex); i < sizeof(dev); i++)
		nz += dev[i] != 0;
	CHECK_EQ(nz, 0);
	CHECK(((struct ibv_device_attr_ex *)dev)->orig_attr.max_qp > 0);
}

/* ibv_qp_ex->wr_flush (rdma-core 45+: right after our headers' 352 bytes
 * when they are 44's) is set, and fails the batch: the operation is never
 * granted (IBV_QP_EX_WITH_FLUSH, 1 << 11, is refused at creation). */
static void test_wr_flush(struct ibv_context *ctx)
{
	typedef void (*flush_fn)(struct ibv_qp_ex *, uint32_t, uint64_t, size_t,
				 uint8_t, uint8_t);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask =
			IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | (1ULL << 11),
	};
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	flush_fn flush;

	REQUIRE(pd && cq);
	errno = 0;
	CHECK(!ibv_create_qp_ex(ctx, &a));
	CHECK_EQ(errno, EOPNOTSUPP);
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	qp = ibv_create_qp_ex(ctx, &a);
	REQUIRE(qp);
	qpx = ibv_qp_to_qp_ex(qp);
	REQUIRE(qpx);
	memcpy(&flush, (unsigned char *)qpx + 352, sizeof(flush));
	REQUIRE(flush);
	ibv_wr_start(qpx);
	flush(qpx, 1, 0x1000, 8, 0, 0);
	CHECK_EQ(ibv_wr_complete(qpx), EOPNOTSUPP);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

/* struct ibv_mr_init_attr of rdma-core 60+ */
struct mr_init_attr {
	size_t length;
	int access;
	uint64_t comp_mask;
	uint64_t iova;
	void *addr;
	int fd;
	uint64_t fd_offset;
	void *dmah;
	void *buf;
};

static void test_mr_ex_and_bufs(struct ibv_context *ctx)
{
	struct ibv_mr *(*reg_mr_ex)(struct ibv_pd *, struct mr_init_attr *) =
		sym("ibv_reg_mr_ex", "IBVERBS_1.15");
	void *(*alloc_dmah)(struct ibv_context *, void *) =
		sym("ibv_alloc_dmah", "IBVERBS_1.15");
	void *(*alloc_buf)(struct ibv_pd *, size_t, void **) =
		sym("ibv_alloc_buf", "IBVERBS_1.17");
	void (*free_buf)(void *) = sym("ibv_free_buf", "IBVERBS_1.17");
	struct ibv_mr *(*reg_buf_mr)(struct ibv_pd *, void *, void *, size_t,
				     int) =
		sym("ibv_reg_buf_mr", "IBVERBS_1.17");
	int (*export_buf)(void *) =
		sym("ibv_export_buf_dmabuf_fd", "IBVERBS_1.18");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	long page = sysconf(_SC_PAGESIZE);
	char *mem = malloc(4096);
	struct mr_init_attr a = { 0 };
	struct ibv_mr *mr;
	void *buf = NULL, *p;
	uint32_t dmah_attr[2] = { 0 };

	REQUIRE(pd && mem);
	errno = 0;
	CHECK(!alloc_dmah(ctx, dmah_attr));
	CHECK_EQ(errno, EOPNOTSUPP);

	/* An address registration, with an IOVA. */
	a.length = 4096;
	a.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	a.comp_mask = (1 << 1) | (1 << 0); /* ADDR | IOVA */
	a.addr = mem;
	a.iova = 0x10000000 + ((uintptr_t)mem & 4095); /* same page offset */
	mr = reg_mr_ex(pd, &a);
	REQUIRE(mr);
	CHECK(mr->addr == mem);
	CHECK_EQ(mr->length, 4096);
	CHECK(mr->pd == pd);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	/* A DMA handle: EOPNOTSUPP; an fd without its offset: EINVAL; no
	 * address at all: EINVAL. */
	a.comp_mask = (1 << 1) | (1 << 4);
	errno = 0;
	CHECK(!reg_mr_ex(pd, &a));
	CHECK_EQ(errno, EOPNOTSUPP);
	a.comp_mask = (1 << 2) | (1 << 0);
	errno = 0;
	CHECK(!reg_mr_ex(pd, &a));
	CHECK_EQ(errno, EINVAL);
	a.comp_mask = 0;
	errno = 0;
	CHECK(!reg_mr_ex(pd, &a));
	CHECK_EQ(errno, EINVAL);

	/* Host buffers: page aligned, registrable inside their bounds only,
	 * no dma-buf behind them. */
	p = alloc_buf(pd, 3 * page, &buf);
	REQUIRE(p && buf);
	CHECK_EQ((uintptr_t)p % page, 0);
	memset(p, 1, 3 * page);
	mr = reg_buf_mr(pd, buf, (char *)p + page, 2 * page,
			IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	CHECK(mr->addr == (char *)p + page);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	errno = 0;
	CHECK(!reg_buf_mr(pd, buf, (char *)p + page, 3 * page,
			  IBV_ACCESS_LOCAL_WRITE));
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(export_buf(buf), -1);
	CHECK_EQ(errno, ENODATA);
	free_buf(buf);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	free(mem);
}

/* Completion counters, port speed, DM export: refused as rdma-core
 * refuses them on a device without them (rxe). */
static void test_refusals(struct ibv_context *ctx)
{
	int (*caps)(struct ibv_context *, void *, size_t) =
		sym("_ibv_query_comp_cntr_caps", "IBVERBS_1.18");
	void *(*create)(struct ibv_context *, void *) =
		sym("ibv_create_comp_cntr", "IBVERBS_1.18");
	int (*speed)(struct ibv_context *, uint32_t, uint64_t *) =
		sym("ibv_query_port_speed", "IBVERBS_1.16");
	int (*dm_export)(struct ibv_dm *) =
		sym("ibv_dm_export_dmabuf_fd", "IBVERBS_1.16");
	unsigned char c[16];
	uint32_t attr[3] = { 0 };
	uint64_t s = 7;
	struct ibv_alloc_dm_attr da = { .length = 4096 };
	struct ibv_dm *dm;

	memset(c, 0xa5, sizeof(c));
	CHECK_EQ(caps(ctx, c, sizeof(c)), EOPNOTSUPP);
	CHECK(c[0] == 0 && c[15] == 0); /* zeroed: max_counters 0 */
	errno = 0;
	CHECK(!create(ctx, attr));
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(speed(ctx, 1, &s), EOPNOTSUPP);
	CHECK_EQ(s, 7);
	dm = ibv_alloc_dm(ctx, &da);
	REQUIRE(dm);
	errno = 0;
	CHECK_EQ(dm_export(dm), -1);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(ibv_free_dm(dm), 0);
	for (const char *const *f =
		     (const char *const[]){
			     "ibv_destroy_comp_cntr", "ibv_inc_comp_cntr",
			     "ibv_inc_err_comp_cntr", "ibv_set_comp_cntr",
			     "ibv_set_err_comp_cntr", NULL };
	     *f; f++)
		CHECK_EQ(((int (*)(void *, uint64_t))sym(*f, "IBVERBS_1.18"))(
				 NULL, 1),
			 EOPNOTSUPP);
}

/* ibv_query_gid_type under every private node name that distribution
 * binaries import (ibv_devinfo of rdma-core 44 .. 65), one function. */
static void test_private_nodes(struct ibv_context *ctx)
{
	static const char *const nodes[] = {
		"IBVERBS_PRIVATE_34", "IBVERBS_PRIVATE_57",
		"IBVERBS_PRIVATE_59", "IBVERBS_PRIVATE_64",
		"IBVERBS_PRIVATE_65",
	};
	int gid = loopback_gid(ctx);

	REQUIRE(gid >= 0);
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		int (*f)(struct ibv_context *, uint8_t, unsigned int, int *) =
			sym("ibv_query_gid_type", nodes[i]);
		int type = -1;

		CHECK_EQ(f(ctx, 1, gid, &type), 0);
		CHECK_EQ(type, 1); /* IBV_GID_TYPE_SYSFS_ROCE_V2 */
	}
}

int main(void)
{
	struct ibv_context *ctx = open_ctx();

	lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	REQUIRE(lib);
	test_zeroed_tails(ctx);
	test_wr_flush(ctx);
	test_mr_ex_and_bufs(ctx);
	test_refusals(ctx);
	test_private_nodes(ctx);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
