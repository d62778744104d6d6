/*
 * The libmlx5 / libefa stand-ins, called the way perftest would call them
 * on softverbs0: each entry point, looked up by its exact symbol version,
 * must fail the documented way for a device of another vendor (NULL with
 * errno EOPNOTSUPP for constructors, EOPNOTSUPP for int functions) and
 * leave the caller's output buffers alone.  Symbols the perftest binaries do
 * not import must not be there at all.
 *
 * The libraries are dlopen()ed from SV_LIBDIR by path, as the loader would
 * find them through `softverbs run`, never through this program's link line.
 */
#include <dlfcn.h>
#include <infiniband/efadv.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "check.h"

static void *open_lib(const char *name)
{
	char path[4096];
	void *h;

	snprintf(path, sizeof(path), "%s/%s", SV_LIBDIR, name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
	return h;
}

/* The symbol NAME@VERSION; a missing one is a failure, reported by name. */
static void *sym(void *h, const char *name, const char *version)
{
	void *p = dlvsym(h, name, version);

	if (!p)
		fprintf(stderr, "missing %s@%s\n", name, version);
	return p;
}

/* Pattern-filled memory must still hold the pattern: nothing was written. */
static int untouched(const void *buf, size_t len, unsigned char pat)
{
	const unsigned char *b = buf;

	for (size_t i = 0; i < len; i++)
		if (b[i] != pat)
			return 0;
	return 1;
}

struct sv_dev {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static void test_mlx5(struct sv_dev *d)
{
	void *h = open_lib("libmlx5.so.1");
	struct ibv_context *(*open_device)(struct ibv_device *,
					   struct mlx5dv_context_attr *);
	struct ibv_qp *(*create_qp)(struct ibv_context *,
				    struct ibv_qp_init_attr_ex *,
				    struct mlx5dv_qp_init_attr *);
	int (*general_cmd)(struct ibv_context *, const void *, size_t, void *,
			   size_t);
	struct mlx5dv_mkey *(*create_mkey)(struct mlx5dv_mkey_init_attr *);
	int (*destroy_mkey)(struct mlx5dv_mkey *);
	struct mlx5dv_qp_ex *(*qp_ex_from)(struct ibv_qp_ex *);
	int (*crypto_login)(struct ibv_context *,
			    struct mlx5dv_crypto_login_attr *);
	struct mlx5dv_dek *(*dek_create)(struct ibv_context *,
					 struct mlx5dv_dek_init_attr *);
	int (*dek_destroy)(struct mlx5dv_dek *);

	REQUIRE(h);
	open_device = sym(h, "mlx5dv_open_device", "MLX5_1.7");
	create_qp = sym(h, "mlx5dv_create_qp", "MLX5_1.3");
	general_cmd = sym(h, "mlx5dv_devx_general_cmd", "MLX5_1.7");
	create_mkey = sym(h, "mlx5dv_create_mkey", "MLX5_1.10");
	destroy_mkey = sym(h, "mlx5dv_destroy_mkey", "MLX5_1.10");
	qp_ex_from = sym(h, "mlx5dv_qp_ex_from_ibv_qp_ex", "MLX5_1.10");
	crypto_login = sym(h, "mlx5dv_crypto_login", "MLX5_1.21");
	dek_create = sym(h, "mlx5dv_dek_create", "MLX5_1.21");
	dek_destroy = sym(h, "mlx5dv_dek_destroy", "MLX5_1.21");
	REQUIRE(open_device && create_qp && general_cmd && create_mkey &&
		destroy_mkey && qp_ex_from && crypto_login && dek_create &&
		dek_destroy);

	/* Exact versions only: not reachable under another node ... */
	CHECK(dlvsym(h, "mlx5dv_open_device", "MLX5_1.0") == NULL);
	CHECK(dlvsym(h, "mlx5dv_create_qp", "MLX5_1.7") == NULL);
	/* ... and nothing perftest does not import (real libmlx5 has these). */
	CHECK(dlsym(h, "mlx5dv_is_supported") == NULL);
	CHECK(dlsym(h, "mlx5dv_query_device") == NULL);
	CHECK(dlsym(h, "mlx5dv_init_obj") == NULL);

	/* mlx5dv_open_device(softverbs0): NULL, errno EOPNOTSUPP. */
	struct mlx5dv_context_attr cattr = {
		.flags = MLX5DV_CONTEXT_FLAGS_DEVX
	};
	errno = 0;
	CHECK(open_device(d->list[0], &cattr) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	/* mlx5dv_create_qp with a complete, valid RC request. */
	struct ibv_qp_init_attr_ex qattr = {
		.send_cq = d->cq,
		.recv_cq = d->cq,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 16,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = d->pd,
	};
	struct mlx5dv_qp_init_attr mattr = { 0 };
	errno = 0;
	CHECK(create_qp(d->ctx, &qattr, &mattr) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	/* devx general command: EOPNOTSUPP returned, out box not written. */
	unsigned char in[64], out[64];
	memset(in, 0x11, sizeof(in));
	memset(out, 0xa5, sizeof(out));
	CHECK_EQ(general_cmd(d->ctx, in, sizeof(in), out, sizeof(out)),
		 EOPNOTSUPP);
	CHECK(untouched(out, sizeof(out), 0xa5));

	struct mlx5dv_mkey_init_attr kattr = { .pd = d->pd, .max_entries = 1 };
	errno = 0;
	CHECK(create_mkey(&kattr) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	struct mlx5dv_mkey mkey = { .lkey = 1, .rkey = 1 };
	CHECK_EQ(destroy_mkey(&mkey), EOPNOTSUPP);

	struct ibv_qp_ex qpx;
	memset(&qpx, 0, sizeof(qpx));
	errno = 0;
	CHECK(qp_ex_from(&qpx) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	struct mlx5dv_crypto_login_attr lattr;
	memset(&lattr, 0, sizeof(lattr));
	CHECK_EQ(crypto_login(d->ctx, &lattr), EOPNOTSUPP);

	struct mlx5dv_dek_init_attr dattr;
	memset(&dattr, 0, sizeof(dattr));
	dattr.pd = d->pd;
	errno = 0;
	CHECK(dek_create(d->ctx, &dattr) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	/* mlx5dv_dek is opaque: any non-NULL handle; none can be valid here. */
	CHECK_EQ(dek_destroy((struct mlx5dv_dek *)&dattr), EOPNOTSUPP);

	CHECK_EQ(dlclose(h), 0);
}

static void test_efa(struct sv_dev *d)
{
	void *h = open_lib("libefa.so.1");
	int (*query_device)(struct ibv_context *, struct efadv_device_attr *,
			    uint32_t);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *,
				       struct ibv_qp_init_attr_ex *,
				       struct efadv_qp_init_attr *, uint32_t);

	REQUIRE(h);
	query_device = sym(h, "efadv_query_device", "EFA_1.1");
	create_qp_ex = sym(h, "efadv_create_qp_ex", "EFA_1.1");
	REQUIRE(query_device && create_qp_ex);
	CHECK(dlvsym(h, "efadv_query_device", "EFA_1.0") == NULL);
	CHECK(dlsym(h, "efadv_query_ah") == NULL);
	CHECK(dlsym(h, "efadv_create_driver_qp") == NULL);

	/* efadv_query_device(softverbs0): EOPNOTSUPP, attr not written. */
	struct efadv_device_attr attr;
	memset(&attr, 0x5a, sizeof(attr));
	CHECK_EQ(query_device(d->ctx, &attr, sizeof(attr)), EOPNOTSUPP);
	CHECK(untouched(&attr, sizeof(attr), 0x5a));

	/* efadv_create_qp_ex for an SRD QP, as perftest asks on EFA. */
	struct ibv_qp_init_attr_ex qattr = {
		.send_cq = d->cq,
		.recv_cq = d->cq,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 16,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_DRIVER,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = d->pd,
	};
	struct efadv_qp_init_attr eattr = {
		.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD,
	};
	errno = 0;
	CHECK(create_qp_ex(d->ctx, &qattr, &eattr, sizeof(eattr)) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	CHECK_EQ(dlclose(h), 0);
}

int main(void)
{
	struct sv_dev d = { 0 };

	d.list = ibv_get_device_list(NULL);
	REQUIRE(d.list && d.list[0]);
	d.ctx = ibv_open_device(d.list[0]);
	REQUIRE(d.ctx);
	d.pd = ibv_alloc_pd(d.ctx);
	REQUIRE(d.pd);
	d.cq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	REQUIRE(d.cq);

	test_mlx5(&d);
	test_efa(&d);

	/* The failed calls left nothing behind that keeps these busy. */
	CHECK_EQ(ibv_destroy_cq(d.cq), 0);
	CHECK_EQ(ibv_dealloc_pd(d.pd), 0);
	CHECK_EQ(ibv_close_device(d.ctx), 0);
	ibv_free_device_list(d.list);
	return check_done();
}
