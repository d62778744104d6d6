/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The layout facts libibverbs.so.1 relies on to be a drop-in for rdma-core:
 * compile-time checks on the public structs (the binaries we must run were
 * built against some release's headers: the offsets they jump through must
 * be the same in the headers we compile against, and the structs that grew
 * have the size of the release these headers come from), and runtime checks
 * that the header's inline functions, which jump through fixed offsets,
 * land in our code.
 */
#include <assert.h>
#include <infiniband/verbs.h>
#include <stddef.h>
#include <string.h>

#include "check.h"

/* ---- compile time --------------------------------------------------------- */

/* The extended context lies before the public one: verbs_get_ctx() walks
 * back from ibv_context, and verbs_get_ctx_op() trusts sz. */
static_assert(offsetof(struct verbs_context, context) ==
		      offsetof(struct verbs_context, sz) + sizeof(size_t),
	      "verbs_context.sz must be immediately before context");
static_assert(offsetof(struct verbs_context, context) +
			      sizeof(struct ibv_context) ==
		      sizeof(struct verbs_context),
	      "context must be the last field of verbs_context");

/* ibv_cq_ex_to_cq() is a cast and our CQ serves both: ibv_cq must be a
 * prefix of ibv_cq_ex. */
#define CQ_PREFIX(f)                                         \
	static_assert(offsetof(struct ibv_cq, f) ==          \
			      offsetof(struct ibv_cq_ex, f), \
		      "ibv_cq." #f " is not a prefix of ibv_cq_ex")
CQ_PREFIX(context);
CQ_PREFIX(channel);
CQ_PREFIX(cq_context);
CQ_PREFIX(handle);
CQ_PREFIX(cqe);
CQ_PREFIX(mutex);
CQ_PREFIX(cond);
CQ_PREFIX(comp_events_completed);
CQ_PREFIX(async_events_completed);

/* ibv_qp_to_qp_ex() hands out the ibv_qp_ex around an ibv_qp. */
static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0,
	      "qp_base must be first");

/* The compat port query fills the prefix of ibv_port_attr up to link_layer. */
static_assert(offsetof(struct ibv_port_attr, link_layer) <
		      offsetof(struct ibv_port_attr, flags),
	      "link_layer must precede flags");

/* Every op's distance from the public context is fixed: rdma-core adds
 * new ops at the start of verbs_context, so a binary built against older
 * headers still finds the ops it knows where it expects them. */
#define OP_BEFORE_CONTEXT(op, n)                                            \
	static_assert(offsetof(struct verbs_context, context) -             \
				      offsetof(struct verbs_context, op) == \
			      (n),                                          \
		      "verbs_context." #op " moved relative to context")

#if defined(__x86_64__)
/* x86_64, every rdma-core release from 39 on: what the binaries built
 * against any of them (Debian 12's rdma-core 44 included) rely on. */
OP_BEFORE_CONTEXT(query_port, 320);
OP_BEFORE_CONTEXT(query_device_ex, 104);
OP_BEFORE_CONTEXT(create_cq_ex, 120);
static_assert(sizeof(struct ibv_context) == 328, "ibv_context size");
static_assert(offsetof(struct ibv_context, ops) == 8, "ibv_context.ops");
static_assert(offsetof(struct ibv_context, abi_compat) == 320,
	      "ibv_context.abi_compat");
static_assert(offsetof(struct ibv_context_ops, _compat_query_port) == 8,
	      "ops._compat_query_port");
static_assert(offsetof(struct ibv_context_ops, poll_cq) == 88, "ops.poll_cq");
static_assert(offsetof(struct ibv_context_ops, req_notify_cq) == 96,
	      "ops.req_notify_cq");
static_assert(offsetof(struct ibv_context_ops, post_srq_recv) == 160,
	      "ops.post_srq_recv");
static_assert(offsetof(struct ibv_context_ops, post_send) == 200,
	      "ops.post_send");
static_assert(offsetof(struct ibv_context_ops, post_recv) == 208,
	      "ops.post_recv");
static_assert(sizeof(struct ibv_device_attr) == 232, "ibv_device_attr size");
static_assert(sizeof(struct ibv_device_attr_ex) == 400,
	      "ibv_device_attr_ex size");
static_assert(sizeof(struct ibv_device) == 664, "ibv_device size");
static_assert(sizeof(struct ibv_qp) == 160, "ibv_qp size");
static_assert(offsetof(struct ibv_qp_ex, wr_send) == 240, "ibv_qp_ex.wr_send");
static_assert(sizeof(struct ibv_cq) == 128, "ibv_cq size");
static_assert(sizeof(struct ibv_cq_ex) == 288, "ibv_cq_ex size");
static_assert(offsetof(struct ibv_cq_ex, start_poll) == 144,
	      "ibv_cq_ex.start_poll");
static_assert(sizeof(struct ibv_wc) == 48, "ibv_wc size");
static_assert(sizeof(struct ibv_send_wr) == 128, "ibv_send_wr size");
static_assert(sizeof(struct ibv_recv_wr) == 32, "ibv_recv_wr size");
static_assert(sizeof(struct ibv_qp_attr) == 144, "ibv_qp_attr size");
static_assert(sizeof(struct ibv_gid_entry) == 32, "ibv_gid_entry size");

/* The structs that grew, per release of the headers compiled against
 * (SV_HDR_RDMA_CORE: CMake reads it from pkg-config's libibverbs
 * version, 1.<n>.<release>.x; 0 when that is unknown).  Binaries built
 * against an older release pass the smaller struct, which is why the
 * library honours the length argument of query_port and checks sz. */
#if SV_HDR_RDMA_CORE >= 39
#if SV_HDR_RDMA_CORE >= 64
#define VERBS_CONTEXT_SIZE 696 /* 64: 2 more ops */
#elif SV_HDR_RDMA_CORE >= 62
#define VERBS_CONTEXT_SIZE 680 /* 62: 1 more op */
#elif SV_HDR_RDMA_CORE >= 59
#define VERBS_CONTEXT_SIZE 672 /* 59: 3 more ops */
#else
#define VERBS_CONTEXT_SIZE 648
#endif
#if SV_HDR_RDMA_CORE >= 49
#define PORT_ATTR_SIZE 56 /* 49: active_speed_ex */
#else
#define PORT_ATTR_SIZE 52
#endif
#if SV_HDR_RDMA_CORE >= 45
#define QP_EX_SIZE 360 /* 45: wr_flush */
#elif SV_HDR_RDMA_CORE >= 44
#define QP_EX_SIZE 352 /* 44: wr_atomic_write */
#else
#define QP_EX_SIZE 344
#endif
/* Releases after the last one checked may add ops and fields again: there
 * the sizes may only have grown. */
#if SV_HDR_RDMA_CORE <= 65
static_assert(sizeof(struct verbs_context) == VERBS_CONTEXT_SIZE,
	      "verbs_context size");
static_assert(sizeof(struct ibv_port_attr) == PORT_ATTR_SIZE,
	      "ibv_port_attr size");
static_assert(sizeof(struct ibv_qp_ex) == QP_EX_SIZE, "ibv_qp_ex size");
#else
static_assert(sizeof(struct verbs_context) >= VERBS_CONTEXT_SIZE,
	      "verbs_context size");
static_assert(sizeof(struct ibv_port_attr) >= PORT_ATTR_SIZE,
	      "ibv_port_attr size");
static_assert(sizeof(struct ibv_qp_ex) >= QP_EX_SIZE, "ibv_qp_ex size");
#endif
#endif /* SV_HDR_RDMA_CORE */
#endif /* __x86_64__ */

/* ---- run time ------------------------------------------------------------- */

int main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct verbs_context *vctx;
	struct ibv_port_attr pa;
	struct ibv_device_attr_ex dax;
	unsigned char buf[sizeof(struct ibv_port_attr) + 16];
	const size_t compat_len = offsetof(struct ibv_port_attr, flags);
	int n;

	list = ibv_get_device_list(&n);
	REQUIRE(list && n >= 1);
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);

	/* The header only treats a context as extended when abi_compat says
	 * so; everything below depends on it. */
	CHECK(ctx->abi_compat == __VERBS_ABI_IS_EXTENDED);
	vctx = verbs_get_ctx(ctx);
	REQUIRE(vctx);
	CHECK((void *)&vctx->context == (void *)ctx);
	CHECK_EQ(vctx->sz, sizeof(struct verbs_context));
	CHECK(verbs_get_ctx_op(ctx, query_port) != NULL);
	CHECK(verbs_get_ctx_op(ctx, query_device_ex) != NULL);
	CHECK(ctx->ops._compat_query_port != NULL);
	CHECK(ctx->async_fd >= 0);

	/* ibv_query_port is an inline that calls vctx->query_port. */
	memset(&pa, 0xab, sizeof(pa));
	CHECK_EQ(ibv_query_port(ctx, 1, &pa), 0);
	CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
	CHECK_EQ(pa.lid, 0);
	CHECK_EQ(pa.flags, 0); /* set by us, not left at 0xab */

	/* A program built with older headers passes a shorter struct: the op
	 * must write exactly port_attr_len bytes. */
	memset(buf, 0xab, sizeof(buf));
	CHECK_EQ(vctx->query_port(ctx, 1, (struct ibv_port_attr *)buf,
				  compat_len),
		 0);
	CHECK_EQ(((struct ibv_port_attr *)buf)->link_layer,
		 IBV_LINK_LAYER_ETHERNET);
	for (size_t i = compat_len; i < sizeof(buf); i++)
		if (buf[i] != 0xab) {
			CHECK(!"query_port wrote past port_attr_len");
			break;
		}

		/* The exported ibv_query_port (old binaries whose inline found no
	 * query_port op) and the ops-table compat entry: same answer, and
	 * nothing written past the compat struct. */
#undef ibv_query_port
	memset(buf, 0xab, sizeof(buf));
	CHECK_EQ(ibv_query_port(ctx, 1, (struct _compat_ibv_port_attr *)buf),
		 0);
	CHECK_EQ(((struct ibv_port_attr *)buf)->link_layer,
		 IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ(((struct ibv_port_attr *)buf)->state, IBV_PORT_ACTIVE);
	CHECK_EQ(buf[compat_len], 0xab);
	memset(buf, 0xab, sizeof(buf));
	CHECK_EQ(ctx->ops._compat_query_port(
			 ctx, 1, (struct _compat_ibv_port_attr *)buf),
		 0);
	CHECK_EQ(((struct ibv_port_attr *)buf)->link_layer,
		 IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ(buf[compat_len], 0xab);

	/* ibv_query_device_ex is an inline through vctx->query_device_ex. */
	memset(&dax, 0xab, sizeof(dax));
	CHECK_EQ(ibv_query_device_ex(ctx, NULL, &dax), 0);
	CHECK_EQ(dax.orig_attr.phys_port_cnt, 1);
	CHECK_EQ(dax.phys_port_cnt_ex, 1);

	CHECK_EQ(ibv_close_device(ctx), 0);
	ibv_free_device_list(list);
	return check_done();
}
