/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The libmlx5 / libefa stand-ins, called the way perftest, UCX, libfabric
 * or pyverbs would call them on softverbs0: each entry point, looked up by
 * its exact symbol version, must answer as rdma-core's library answers for a
 * device of another vendor - mlx5dv_is_supported false, NULL with errno
 * EOPNOTSUPP for constructors, and for int functions what each one's
 * convention gives (EOPNOTSUPP; EOPNOTSUPP with errno set too; -1 with
 * errno; -EOPNOTSUPP) - and leave the caller's output buffers alone.  That
 * every symbol is there at its version is tests/abi's check.
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

/* NAME@VERSION as a pointer of the type the vendor's header declares NAME. */
#define DV(h, name, version) ((__typeof__(&name))sym(h, #name, version))

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

	/* Exact versions only: not reachable under another node. */
	CHECK(dlvsym(h, "mlx5dv_open_device", "MLX5_1.0") == NULL);
	CHECK(dlvsym(h, "mlx5dv_create_qp", "MLX5_1.7") == NULL);

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

/*
 * The entry points perftest does not import (UCX, libfabric, pyverbs, DPDK
 * call them): one or more of each return convention of rdma-core's
 * libmlx5, with real softverbs objects where the call takes one.
 */
static void test_mlx5_conventions(struct sv_dev *d)
{
	void *h = open_lib("libmlx5.so.1");

	REQUIRE(h);
	__typeof__(&mlx5dv_is_supported) is_supported =
		DV(h, mlx5dv_is_supported, "MLX5_1.8");
	__typeof__(&mlx5dv_query_device) query_device =
		DV(h, mlx5dv_query_device, "MLX5_1.0");
	__typeof__(&mlx5dv_init_obj) init_obj =
		DV(h, mlx5dv_init_obj, "MLX5_1.2");
	__typeof__(&mlx5dv_init_obj) init_obj_1_0 =
		DV(h, mlx5dv_init_obj, "MLX5_1.0");
	__typeof__(&mlx5dv_create_cq) create_cq =
		DV(h, mlx5dv_create_cq, "MLX5_1.1");
	__typeof__(&mlx5dv_devx_obj_create) obj_create =
		DV(h, mlx5dv_devx_obj_create, "MLX5_1.7");
	__typeof__(&mlx5dv_dr_domain_create) domain_create =
		DV(h, mlx5dv_dr_domain_create, "MLX5_1.10");
	__typeof__(&mlx5dv_dr_action_create_drop) create_drop =
		DV(h, mlx5dv_dr_action_create_drop, "MLX5_1.10");
	__typeof__(&mlx5dv_dr_domain_sync) domain_sync =
		DV(h, mlx5dv_dr_domain_sync, "MLX5_1.10");
	__typeof__(&mlx5dv_devx_get_event) get_event =
		DV(h, mlx5dv_devx_get_event, "MLX5_1.11");
	__typeof__(&mlx5dv_vfio_get_events_fd) vfio_fd =
		DV(h, mlx5dv_vfio_get_events_fd, "MLX5_1.21");
	__typeof__(&mlx5dv_qp_cancel_posted_send_wrs) cancel_wrs =
		DV(h, mlx5dv_qp_cancel_posted_send_wrs, "MLX5_1.20");
	__typeof__(&_mlx5dv_query_port) query_port =
		DV(h, _mlx5dv_query_port, "MLX5_1.19");
	__typeof__(&mlx5dv_pp_free) pp_free =
		DV(h, mlx5dv_pp_free, "MLX5_1.13");
	REQUIRE(is_supported && query_device && init_obj && init_obj_1_0 &&
		create_cq && obj_create && domain_create && create_drop &&
		domain_sync && get_event && vfio_fd && cancel_wrs &&
		query_port && pp_free);

	/* What every mlx5-aware program asks first: softverbs0 is not mlx5. */
	CHECK(!is_supported(d->list[0]));

	/* "0 or the value of errno": EOPNOTSUPP, errno and output untouched. */
	struct mlx5dv_context dctx;
	memset(&dctx, 0xa5, sizeof(dctx));
	dctx.comp_mask = 0;
	errno = 0;
	CHECK_EQ(query_device(d->ctx, &dctx), EOPNOTSUPP);
	CHECK_EQ(errno, 0);
	dctx.comp_mask = 0xa5a5a5a5a5a5a5a5ull;
	CHECK(untouched(&dctx, sizeof(dctx), 0xa5));

	struct mlx5dv_port port;
	memset(&port, 0x5a, sizeof(port));
	CHECK_EQ(query_port(d->ctx, 1, &port, sizeof(port)), EOPNOTSUPP);
	CHECK(untouched(&port, sizeof(port), 0x5a));

	/* mlx5dv_init_obj on a softverbs PD, both versions. */
	struct mlx5dv_pd dvpd;
	struct mlx5dv_obj obj;
	memset(&obj, 0, sizeof(obj));
	memset(&dvpd, 0x5a, sizeof(dvpd));
	obj.pd.in = d->pd;
	obj.pd.out = &dvpd;
	CHECK_EQ(init_obj(&obj, MLX5DV_OBJ_PD), EOPNOTSUPP);
	CHECK_EQ(init_obj_1_0(&obj, MLX5DV_OBJ_PD), EOPNOTSUPP);
	CHECK(untouched(&dvpd, sizeof(dvpd), 0x5a));

	/* Constructors: NULL, errno EOPNOTSUPP. */
	struct ibv_cq_init_attr_ex cattr = { .cqe = 16 };
	struct mlx5dv_cq_init_attr mcattr = { 0 };
	errno = 0;
	CHECK(create_cq(d->ctx, &cattr, &mcattr) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	unsigned char in[64], out[64];
	memset(in, 0x11, sizeof(in));
	memset(out, 0xa5, sizeof(out));
	errno = 0;
	CHECK(obj_create(d->ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK(untouched(out, sizeof(out), 0xa5));

	errno = 0;
	CHECK(domain_create(d->ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(create_drop() == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	/*
	 * The steering calls that set errno to the value they return.  No
	 * domain can exist; the stand-in must not look at the handle, so a
	 * pattern-filled buffer stands in for it.
	 */
	unsigned char handle[256];
	memset(handle, 0xa5, sizeof(handle));
	errno = 0;
	CHECK_EQ(domain_sync((struct mlx5dv_dr_domain *)handle,
			     MLX5DV_DR_DOMAIN_SYNC_FLAGS_SW),
		 EOPNOTSUPP);
	CHECK_EQ(errno, EOPNOTSUPP);

	/* -1 with errno. */
	struct mlx5dv_devx_async_event_hdr ev;
	memset(&ev, 0x5a, sizeof(ev));
	errno = 0;
	CHECK_EQ(get_event((struct mlx5dv_devx_event_channel *)handle, &ev,
			   sizeof(ev)),
		 -1);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK(untouched(&ev, sizeof(ev), 0x5a));
	errno = 0;
	CHECK_EQ(vfio_fd(d->ctx), -1);
	CHECK_EQ(errno, EOPNOTSUPP);

	/* "Number of WRs cancelled, or -errno". */
	CHECK_EQ(cancel_wrs((struct mlx5dv_qp_ex *)handle, 7), -EOPNOTSUPP);

	/* void: nothing happens, to the handle or to errno. */
	errno = 0;
	pp_free((struct mlx5dv_pp *)handle);
	CHECK_EQ(errno, 0);
	CHECK(untouched(handle, sizeof(handle), 0xa5));

	CHECK_EQ(dlclose(h), 0);
}

/* The EFA entry points perftest does not import (libfabric, pyverbs). */
static void test_efa_conventions(struct sv_dev *d)
{
	void *h = open_lib("libefa.so.1");

	REQUIRE(h);
	__typeof__(&efadv_create_driver_qp) create_driver_qp =
		DV(h, efadv_create_driver_qp, "EFA_1.0");
	__typeof__(&efadv_query_ah) query_ah = DV(h, efadv_query_ah, "EFA_1.1");
	__typeof__(&efadv_create_cq) create_cq =
		DV(h, efadv_create_cq, "EFA_1.2");
	__typeof__(&efadv_cq_from_ibv_cq_ex) cq_from =
		DV(h, efadv_cq_from_ibv_cq_ex, "EFA_1.2");
	REQUIRE(create_driver_qp && query_ah && create_cq && cq_from);

	struct ibv_qp_init_attr qattr = {
		.send_cq = d->cq,
		.recv_cq = d->cq,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 16,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_DRIVER,
	};
	errno = 0;
	CHECK(create_driver_qp(d->pd, &qattr, EFADV_QP_DRIVER_TYPE_SRD) ==
	      NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	/* libfabric's EFA provider asks for an extended CQ with SGIDs. */
	struct ibv_cq_init_attr_ex cattr = { .cqe = 16 };
	struct efadv_cq_init_attr ecattr = {
		.wc_flags = EFADV_WC_EX_WITH_SGID,
	};
	errno = 0;
	CHECK(create_cq(d->ctx, &cattr, &ecattr, sizeof(ecattr)) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	/* A softverbs extended CQ is not an EFA CQ. */
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(d->ctx, &cattr);
	REQUIRE(cqx);
	errno = 0;
	CHECK(cq_from(cqx) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);

	/* No EFA AH can exist: EOPNOTSUPP, attr not written. */
	unsigned char ah[128];
	struct efadv_ah_attr aattr;
	memset(ah, 0xa5, sizeof(ah));
	memset(&aattr, 0x5a, sizeof(aattr));
	CHECK_EQ(query_ah((struct ibv_ah *)ah, &aattr, sizeof(aattr)),
		 EOPNOTSUPP);
	CHECK(untouched(&aattr, sizeof(aattr), 0x5a));

	CHECK_EQ(dlclose(h), 0);
}

/*
 * The entry points added after rdma-core 44 (MLX5_1.25 .. 1.27, EFA_1.3 ..
 * 1.7, libhns): declared here by their rdma-core 65 prototypes (our build
 * headers may predate them), their structs as opaque buffers.
 */
static void test_newer(struct sv_dev *d)
{
	void *m = open_lib("libmlx5.so.1");
	void *e = open_lib("libefa.so.1");
	void *n = open_lib("libhns.so.1");
	unsigned char attr[64];

	REQUIRE(m && e && n);

	struct ibv_mr *(*reg_dmabuf)(struct ibv_pd *, uint64_t, size_t,
				     uint64_t, int, int, int) =
		sym(m, "mlx5dv_reg_dmabuf_mr", "MLX5_1.25");
	int (*dd_path)(struct ibv_context *, char *, size_t) =
		sym(m, "mlx5dv_get_data_direct_sysfs_path", "MLX5_1.25");
	struct ibv_flow *(*create_flow)(void *, void *, size_t, void *,
					size_t) =
		sym(m, "__mlx5dv_create_flow", "MLX5_1.25.1");
	void *(*obj_import)(struct ibv_context *, void *) =
		sym(m, "mlx5dv_devx_obj_import", "MLX5_1.27");
	void (*export_sizes)(void *, size_t) =
		sym(m, "_mlx5dv_get_export_sizes", "MLX5_1.27");
	char path[64] = "x";

	REQUIRE(reg_dmabuf && dd_path && create_flow && obj_import &&
		export_sizes);
	errno = 0;
	CHECK(reg_dmabuf(d->pd, 0, 4096, 0, 3, 0, 0) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(dd_path(d->ctx, path, sizeof(path)), EOPNOTSUPP);
	CHECK(path[0] == 'x' && path[1] == 0);
	errno = 0;
	CHECK(create_flow(attr, attr, 0, attr, 16) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	memset(attr, 0xa5, sizeof(attr));
	errno = 0;
	CHECK(obj_import(d->ctx, attr) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	export_sizes(attr, 12);
	CHECK(untouched(attr, 12, 0) && untouched(attr + 12, 52, 0xa5));

	int (*query_mr)(struct ibv_mr *, void *, uint32_t) =
		sym(e, "efadv_query_mr", "EFA_1.3");
	int (*max_sq)(struct ibv_context *, void *, uint32_t) =
		sym(e, "efadv_get_max_sq_depth", "EFA_1.5");
	void *(*qp_from)(struct ibv_qp_ex *) =
		sym(e, "efadv_qp_from_ibv_qp_ex", "EFA_1.6");
	void *(*comp_cntr)(struct ibv_context *, void *, void *, uint32_t) =
		sym(e, "efadv_create_comp_cntr", "EFA_1.7");
	struct ibv_mr *mr = ibv_reg_mr(d->pd, attr, sizeof(attr), 0);

	REQUIRE(query_mr && max_sq && qp_from && comp_cntr && mr);
	memset(attr, 0x5a, sizeof(attr));
	CHECK_EQ(query_mr(mr, attr, sizeof(attr)), EOPNOTSUPP);
	CHECK(untouched(attr, sizeof(attr), 0x5a));
	CHECK_EQ(max_sq(d->ctx, attr, sizeof(attr)), -EOPNOTSUPP);
	errno = 0;
	CHECK(qp_from((struct ibv_qp_ex *)attr) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(comp_cntr(d->ctx, attr, attr, 16) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(ibv_dereg_mr(mr), 0);

	bool (*hns_supported)(struct ibv_device *) =
		sym(n, "hnsdv_is_supported", "HNS_1.0");
	int (*hns_query)(struct ibv_context *, void *) =
		sym(n, "hnsdv_query_device", "HNS_1.0");
	struct ibv_qp *(*hns_create_qp)(struct ibv_context *,
					struct ibv_qp_init_attr_ex *, void *) =
		sym(n, "hnsdv_create_qp", "HNS_1.0");
	struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_RC };

	REQUIRE(hns_supported && hns_query && hns_create_qp);
	CHECK(!hns_supported(d->list[0]));
	memset(attr, 0x5a, sizeof(attr));
	CHECK_EQ(hns_query(d->ctx, attr), EOPNOTSUPP);
	CHECK(untouched(attr, sizeof(attr), 0x5a));
	CHECK_EQ(hns_query(d->ctx, NULL), EINVAL);
	errno = 0;
	CHECK(hns_create_qp(d->ctx, &qa, NULL) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(hns_create_qp(d->ctx, NULL, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);

	CHECK_EQ(dlclose(m), 0);
	CHECK_EQ(dlclose(e), 0);
	CHECK_EQ(dlclose(n), 0);
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
	test_mlx5_conventions(&d);
	test_efa(&d);
	test_efa_conventions(&d);
	test_newer(&d);

	/* The failed calls left nothing behind that keeps these busy. */
	CHECK_EQ(ibv_destroy_cq(d.cq), 0);
	CHECK_EQ(ibv_dealloc_pd(d.pd), 0);
	CHECK_EQ(ibv_close_device(d.ctx), 0);
	ibv_free_device_list(d.list);
	return check_done();
}
