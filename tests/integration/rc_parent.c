/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A parent domain between two processes: B's RC QP and CQ are created on
 * a parent domain (ibv_alloc_parent_domain with a thread domain, a
 * pd_context and custom allocators), so their queues live in memory B's
 * allocator handed out.  A sends messages into receive buffers of an MR
 * registered on the parent domain and RDMA-writes into an MR of the plain
 * PD; B checks every byte, the completions, and that each queue buffer
 * was allocated once through the callbacks and freed once.
 */
#include <stdlib.h>

#include "harness.h"

#define NMSG 16
#define MSG 200
#define WR_OFF (256 * 1024)
#define WR_LEN (128 * 1024)

static struct {
	int allocs, frees, others;
	uint64_t types; /* bit per resource type seen */
} al;
static char ctx_tag;

static void *count_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
			 size_t alignment, uint64_t type)
{
	void *p;

	if (pd_context != &ctx_tag) {
		al.others++;
		return NULL;
	}
	if (posix_memalign(&p, alignment < 8 ? 8 : alignment, size))
		return NULL;
	al.allocs++;
	al.types |= 1ULL << (type & 63);
	return p;
}

static void count_free(struct ibv_pd *pd, void *pd_context, void *ptr,
		       uint64_t type)
{
	if (pd_context != &ctx_tag)
		al.others++;
	al.frees++;
	free(ptr);
}

static void data_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	for (i = 0; i < NMSG; i++) {
		hx_fill(ep.buf + i * MSG, MSG, 100 + i);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, i,
					 ep.buf + i * MSG, MSG, ep.mr->lkey, 0,
					 0, 0),
			    0);
	}
	for (i = 0; i < NMSG; i++)
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_fill(ep.buf + WR_OFF, WR_LEN, 7);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 99,
				 ep.buf + WR_OFF, WR_LEN, ep.mr->lkey,
				 ep.peer.addr + WR_OFF, ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 99, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void data_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_td_init_attr tda = { 0 };
	struct ibv_parent_domain_init_attr pa;
	struct ibv_cq_init_attr_ex ca = { .cqe = 64 };
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp_attr a;
	struct ibv_pd *par;
	struct ibv_td *td;
	struct ibv_cq_ex *cq;
	struct ibv_mr *pmr;
	struct ibv_wc wc;
	struct hx_ep ep;
	int i;

	hx_ep_open(&ep, &o, fd);
	/* Swap the harness's QP and CQ for ones on a parent domain. */
	if (ibv_destroy_qp(ep.qp) || ibv_destroy_cq(ep.scq))
		hx_die("cannot drop the harness's QP/CQ");
	td = ibv_alloc_td(ep.ctx, &tda);
	REQUIRE(td);
	memset(&pa, 0, sizeof(pa));
	pa.pd = ep.pd;
	pa.td = td;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
		       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.alloc = count_alloc;
	pa.free = count_free;
	pa.pd_context = &ctx_tag;
	par = ibv_alloc_parent_domain(ep.ctx, &pa);
	REQUIRE(par);
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	ca.parent_domain = par;
	cq = ibv_create_cq_ex(ep.ctx, &ca);
	REQUIRE(cq);
	ep.scq = ep.rcq = ibv_cq_ex_to_cq(cq);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = qa.recv_cq = ep.scq;
	qa.cap.max_send_wr = o.max_send_wr;
	qa.cap.max_recv_wr = o.max_recv_wr;
	qa.cap.max_send_sge = o.max_send_sge;
	qa.cap.max_recv_sge = o.max_recv_sge;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = par;
	ep.qp = ibv_create_qp_ex(ep.ctx, &qa);
	REQUIRE(ep.qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = o.qp_access;
	REQUIRE(ibv_modify_qp(ep.qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS) == 0);
	ep.psn = (uint32_t)lrand48() & 0xffffff;
	/* CQ ring, send queue, receive queue: all three from our
	 * allocator, with the resource types telling them apart. */
	CHECK_EQ(al.allocs, 3);
	CHECK(__builtin_popcountll(al.types) == 2);

	/* receive buffers in an MR of the parent domain */
	pmr = ibv_reg_mr(par, ep.buf + 8192, NMSG * MSG,
			 IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(pmr);
	for (i = 0; i < NMSG; i++)
		HX_CHECK_RC(hx_post_recv(&ep, i, ep.buf + 8192 + i * MSG, MSG,
					 pmr->lkey),
			    0);
	hx_ep_connect(&ep);
	for (i = 0; i < NMSG; i++) {
		if (!HX_EXPECT(ep.rcq, &wc, i, IBV_WC_SUCCESS, IBV_WC_RECV,
			       MSG))
			break;
		CHECK_EQ(hx_verify(ep.buf + 8192 + i * MSG, MSG, 100 + i), -1);
	}
	hx_sync(fd); /* A's WRITE completed */
	CHECK_EQ(hx_verify(ep.buf + WR_OFF, WR_LEN, 7), -1);
	hx_sync(fd);

	CHECK_EQ(ibv_dealloc_pd(par), EBUSY); /* the QP, CQ use it */
	CHECK_EQ(ibv_dereg_mr(pmr), 0);
	CHECK_EQ(ibv_destroy_qp(ep.qp), 0);
	ep.qp = NULL;
	CHECK_EQ(ibv_destroy_cq(ep.scq), 0);
	ep.scq = ep.rcq = NULL;
	CHECK_EQ(al.frees, 3);
	CHECK_EQ(al.others, 0);
	CHECK_EQ(ibv_dealloc_td(td), EBUSY); /* the parent domain uses it */
	CHECK_EQ(ibv_dealloc_pd(par), 0);
	CHECK_EQ(ibv_dealloc_td(td), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = { HX_CASE(data, 30), { 0 } };

HX_MAIN(cases)
