/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain):
 * argument rules and their errno values, EBUSY while something depends on
 * a domain, and the queue buffers of QPs, CQs and SRQs created on a parent
 * domain coming from its allocator (each buffer freed once, with the pd,
 * pd_context and resource type it was allocated with), or from ours when
 * the allocator answers IBV_ALLOCATOR_USE_DEFAULT. */
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ctx.h"

#define MAXBUF 64

static struct {
	int allocs, frees, defaults;
	bool use_default; /* answer IBV_ALLOCATOR_USE_DEFAULT */
	bool fail; /* answer NULL */
	struct ibv_pd *pd_seen;
	void *ctx_seen;
	void *live[MAXBUF];
	uint64_t type[MAXBUF];
	size_t size[MAXBUF];
	int bad_free; /* frees of a pointer we did not hand out */
} al;

static char my_context;

static void *my_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
		      size_t alignment, uint64_t resource_type)
{
	void *p;

	al.pd_seen = pd;
	al.ctx_seen = pd_context;
	if (al.fail)
		return NULL;
	if (al.use_default) {
		al.defaults++;
		return IBV_ALLOCATOR_USE_DEFAULT;
	}
	if (posix_memalign(&p, alignment, size))
		return NULL;
	memset(p, 0xa5, size); /* the library must clear it */
	for (int i = 0; i < MAXBUF; i++)
		if (!al.live[i]) {
			al.live[i] = p;
			al.type[i] = resource_type;
			al.size[i] = size;
			break;
		}
	al.allocs++;
	return p;
}

static void my_free(struct ibv_pd *pd, void *pd_context, void *ptr,
		    uint64_t resource_type)
{
	for (int i = 0; i < MAXBUF; i++)
		if (al.live[i] == ptr && al.type[i] == resource_type &&
		    pd == al.pd_seen && pd_context == &my_context) {
			al.live[i] = NULL;
			al.frees++;
			free(ptr);
			return;
		}
	al.bad_free++;
}

static void test_rules(struct ibv_context *ctx, struct ibv_context *ctx2)
{
	struct ibv_td_init_attr tda = { 0 };
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *pd2 = ibv_alloc_pd(ctx2);
	struct ibv_td *td, *td2;
	struct ibv_parent_domain_init_attr pa;
	struct ibv_pd *par, *par2;

	REQUIRE(pd && pd2);
	tda.comp_mask = 1;
	errno = 0;
	CHECK(ibv_alloc_td(ctx, &tda) == NULL);
	CHECK_EQ(errno, EINVAL);
	tda.comp_mask = 0;
	td = ibv_alloc_td(ctx, &tda);
	td2 = ibv_alloc_td(ctx2, &tda);
	REQUIRE(td && td2);
	CHECK(td->context == ctx);

#define PD_FAILS(err)                                             \
	do {                                                      \
		errno = 0;                                        \
		CHECK(ibv_alloc_parent_domain(ctx, &pa) == NULL); \
		CHECK_EQ(errno, err);                             \
	} while (0)
	memset(&pa, 0, sizeof(pa));
	PD_FAILS(EINVAL); /* no pd */
	pa.pd = pd2;
	PD_FAILS(EINVAL); /* another context's pd */
	pa.pd = pd;
	pa.td = td2;
	PD_FAILS(EINVAL); /* another context's td */
	pa.td = td;
	pa.comp_mask = 1 << 3;
	PD_FAILS(EINVAL); /* unknown bit */
	/* rdma-core 65's ALLOW_CC_UNPROTECTED_ALLOC: taken, as mlx5 takes
	 * it on a device without IBV_DEVICE_CC_DMA_BOUNCE (plain memory). */
	pa.comp_mask = 1 << 2;
	par = ibv_alloc_parent_domain(ctx, &pa);
	REQUIRE(par);
	CHECK_EQ(ibv_dealloc_pd(par), 0);
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	PD_FAILS(EINVAL); /* allocators without functions */
	pa.alloc = my_alloc;
	pa.free = my_free;
	pa.comp_mask |= IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.pd_context = &my_context;
	par = ibv_alloc_parent_domain(ctx, &pa);
	REQUIRE(par);
	CHECK(par->context == ctx);
	/* a parent domain of a parent domain */
	pa.pd = par;
	PD_FAILS(EINVAL);
	pa.pd = pd;
	par2 = ibv_alloc_parent_domain(ctx, &pa);
	REQUIRE(par2);

	/* the PD and TD are in use while the parent domains are */
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_dealloc_td(td), EBUSY);
	CHECK_EQ(ibv_dealloc_pd(par), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_dealloc_pd(par2), 0);
	CHECK_EQ(ibv_dealloc_td(td), 0);
	CHECK_EQ(ibv_dealloc_td(td2), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
}

static struct ibv_pd *mk_parent(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_parent_domain_init_attr pa = {
		.pd = pd,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = my_alloc,
		.free = my_free,
		.pd_context = &my_context,
	};
	struct ibv_pd *par = ibv_alloc_parent_domain(ctx, &pa);

	REQUIRE(par);
	return par;
}

static int live_of(uint64_t type)
{
	int n = 0;

	for (int i = 0; i < MAXBUF; i++)
		n += al.live[i] && al.type[i] == type;
	return n;
}

/* QP, CQ and SRQ buffers through the allocator; objects work (a QP of
 * the parent domain posts to itself with an MR of the PD: between
 * processes, integration.rc_parent). */
static void test_allocators(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *par, *plain;
	struct ibv_cq_init_attr_ex ca = { .cqe = 32 };
	struct ibv_qp_init_attr_ex qa;
	struct ibv_srq_init_attr_ex sa;
	struct ibv_srq_attr sattr = { .max_wr = 64 };
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	int allocs;

	REQUIRE(pd);
	memset(&al, 0, sizeof(al));
	par = mk_parent(ctx, pd);

	/* CQ: one ring, from the allocator, zeroed (it polls empty) */
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	ca.parent_domain = par;
	cq = ibv_create_cq_ex(ctx, &ca);
	REQUIRE(cq);
	CHECK_EQ(al.allocs, 1);
	CHECK_EQ(live_of(2), 1); /* SV_RES_TYPE_CQ */
	CHECK(al.pd_seen == par && al.ctx_seen == &my_context);
	{
		struct ibv_wc wc;

		CHECK_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(cq), 1, &wc), 0);
	}
	/* a plain PD is not a parent domain */
	ca.parent_domain = pd;
	errno = 0;
	CHECK(ibv_create_cq_ex(ctx, &ca) == NULL);
	CHECK_EQ(errno, EINVAL);
	/* resize: a new ring from the allocator, the old one freed */
	CHECK_EQ(ibv_resize_cq(ibv_cq_ex_to_cq(cq), 200), 0);
	CHECK_EQ(al.allocs, 2);
	CHECK_EQ(al.frees, 1);
	CHECK_EQ(live_of(2), 1);

	/* SRQ on the parent domain: its ring */
	memset(&sa, 0, sizeof(sa));
	sa.attr = sattr;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	sa.pd = par;
	srq = ibv_create_srq_ex(ctx, &sa);
	REQUIRE(srq);
	CHECK_EQ(live_of(3), 1); /* SV_RES_TYPE_SRQ */

	/* RC QP on the parent domain: send and receive queues */
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cq);
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = par;
	allocs = al.allocs;
	qp = ibv_create_qp_ex(ctx, &qa);
	REQUIRE(qp);
	CHECK(qp->pd == par);
	CHECK_EQ(al.allocs - allocs, 2);
	CHECK_EQ(live_of(1), 2); /* SV_RES_TYPE_QP */
	/* ... and one on the SRQ: its send queue only */
	qa.srq = srq;
	allocs = al.allocs;
	struct ibv_qp *qp2 = ibv_create_qp_ex(ctx, &qa);
	REQUIRE(qp2);
	CHECK_EQ(al.allocs - allocs, 1);

	/* The parent domain is in use by all of them; so is the PD. */
	CHECK_EQ(ibv_dealloc_pd(par), EBUSY);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);

	/* An MR of the parent domain is the PD's. */
	static char buf[4096];
	struct ibv_mr *mr =
		ibv_reg_mr(par, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	CHECK(mr->pd == par);
	CHECK_EQ(ibv_dereg_mr(mr), 0);

	CHECK_EQ(ibv_destroy_qp(qp2), 0);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	/* every buffer handed out came back once, to the right free */
	CHECK_EQ(al.frees, al.allocs);
	CHECK_EQ(al.bad_free, 0);
	CHECK_EQ(live_of(1) + live_of(2) + live_of(3), 0);

	/* IBV_ALLOCATOR_USE_DEFAULT: ours, and never given to free */
	memset(&al, 0, sizeof(al));
	al.use_default = true;
	ca.parent_domain = par;
	cq = ibv_create_cq_ex(ctx, &ca);
	REQUIRE(cq);
	/* (creating qp2 wrote its caps back: no receive queue) */
	qa.srq = NULL;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_recv_sge = 1;
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cq);
	qp = ibv_create_qp_ex(ctx, &qa);
	REQUIRE(qp);
	CHECK_EQ(al.defaults, 3);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	CHECK_EQ(al.frees + al.bad_free, 0);

	/* an allocator that fails: creation fails with ENOMEM */
	al.use_default = false;
	al.fail = true;
	errno = 0;
	CHECK(ibv_create_cq_ex(ctx, &ca) == NULL);
	CHECK_EQ(errno, ENOMEM);
	memset(&al, 0, sizeof(al));

	/* without allocators, a parent domain still works */
	struct ibv_parent_domain_init_attr pa = { .pd = pd };
	plain = ibv_alloc_parent_domain(ctx, &pa);
	REQUIRE(plain);
	qa.pd = plain;
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(ibv_create_cq_ex(
		ctx, &(struct ibv_cq_init_attr_ex){ .cqe = 8 }));
	REQUIRE(qa.send_cq);
	qp = ibv_create_qp_ex(ctx, &qa);
	REQUIRE(qp);
	CHECK_EQ(al.allocs + al.defaults, 0);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_cq(qa.send_cq), 0);
	CHECK_EQ(ibv_dealloc_pd(plain), 0);

	CHECK_EQ(ibv_dealloc_pd(par), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

int main(void)
{
	struct ibv_context *ctx = open_ctx(), *ctx2 = open_ctx();

	test_rules(ctx, ctx2);
	test_allocators(ctx);
	CHECK_EQ(ibv_close_device(ctx2), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
