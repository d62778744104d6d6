/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Memory windows through the public API: the device capabilities, the
 * argument rules of ibv_alloc_mw / ibv_dealloc_mw / ibv_bind_mw and of the
 * BIND_MW, LOCAL_INV and SEND_WITH_INV work requests (errno values,
 * *bad_wr), and what a bind does once it executes, on two RC QPs of one
 * context connected to each other over loopback: the IBV_WC_BIND_MW /
 * IBV_WC_LOCAL_INV completions, ibv_dereg_mr's EBUSY, MW_BIND_ERR for a
 * bad bind, and one RDMA WRITE through a window with its bytes checked.
 * Two-process tests of remote access through windows are
 * tests/integration/mw_*.c; the bind rules one by one are
 * test_mw_core.c's. */
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd, *pd2;
static struct ibv_cq *cq;
static union ibv_gid gid0;
static uint8_t *buf;
#define BUF_LEN (1 << 20)

#define MR_ALL                                               \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
	 IBV_ACCESS_MW_BIND)

static struct ibv_qp *mkqp(struct ibv_pd *p, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 32,
			 .max_recv_wr = 32,
			 .max_send_sge = 2,
			 .max_recv_sge = 2 },
		.qp_type = type,
	};
	struct ibv_qp *qp = ibv_create_qp(p, &ia);

	REQUIRE(qp);
	return qp;
}

/* RESET -> RTS towards dest (RC and UC); 0 or the modify's error. */
static int connect_qp(struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int rc, mask;

	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 7;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid0;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	rc = ibv_modify_qp(qp, &a, mask);
	if (rc)
		return rc;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(qp, &a, mask);
}

static int poll1(struct ibv_wc *wc)
{
	time_t end = time(NULL) + 10;

	while (time(NULL) < end) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
		usleep(100);
	}
	return 0;
}

#define EXPECT_WC(id, st, op)                     \
	do {                                      \
		struct ibv_wc _wc;                \
		CHECK_EQ(poll1(&_wc), 1);         \
		CHECK_EQ(_wc.wr_id, id);          \
		CHECK_EQ(_wc.status, st);         \
		if ((st) == IBV_WC_SUCCESS)       \
			CHECK_EQ(_wc.opcode, op); \
	} while (0)

static void drain_cq(void)
{
	struct ibv_wc wc;

	usleep(20000);
	while (ibv_poll_cq(cq, 1, &wc) > 0)
		;
}

static void test_caps(void)
{
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dx;

	CHECK_EQ(ibv_query_device(ctx, &da), 0);
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
	CHECK(da.max_mw >= 1024);
	CHECK_EQ(ibv_query_device_ex(ctx, NULL, &dx), 0);
	CHECK(dx.device_cap_flags_ex & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	CHECK_EQ(dx.orig_attr.max_mw, da.max_mw);
}

static void test_alloc(void)
{
	struct ibv_mw *m1, *m2;

	m1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	m2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	REQUIRE(m1 && m2);
	CHECK(m1->context == ctx && m1->pd == pd && m1->type == IBV_MW_TYPE_1);
	CHECK(m2->context == ctx && m2->pd == pd && m2->type == IBV_MW_TYPE_2);
	CHECK(m1->rkey != 0 && m2->rkey != 0 && m1->rkey != m2->rkey);
	errno = 0;
	CHECK(ibv_alloc_mw(pd, (enum ibv_mw_type)3) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(ibv_alloc_mw(pd, (enum ibv_mw_type)0) == NULL && errno == EINVAL);
	/* A PD with windows cannot go (IBA 10.6.3.1). */
	{
		struct ibv_pd *p = ibv_alloc_pd(ctx);
		struct ibv_mw *m = ibv_alloc_mw(p, IBV_MW_TYPE_2);

		REQUIRE(p && m);
		CHECK_EQ(ibv_dealloc_pd(p), EBUSY);
		CHECK_EQ(ibv_dealloc_mw(m), 0);
		CHECK_EQ(ibv_dealloc_pd(p), 0);
	}
	CHECK_EQ(ibv_dealloc_mw(m1), 0);
	CHECK_EQ(ibv_dealloc_mw(m2), 0);
}

static void test_post_rules(void)
{
	struct ibv_qp *rc = mkqp(pd, IBV_QPT_RC), *uc = mkqp(pd, IBV_QPT_UC);
	struct ibv_qp *ud = mkqp(pd, IBV_QPT_UD);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 65536, MR_ALL);
	struct ibv_mr *mr2 = ibv_reg_mr(pd2, buf, 65536, MR_ALL);
	struct ibv_mw *m1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *m2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind b = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr wr, *bad;
	uint32_t old;

	REQUIRE(mr && mr2 && m1 && m2);
	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)buf;
	b.bind_info.length = 4096;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;

	/* verbs.h's own rules: type 2 windows are bound by a WR; a range
	 * needs a region; the region must be of the window's PD */
	CHECK_EQ(ibv_bind_mw(rc, m2, &b), EINVAL);
	b.bind_info.mr = NULL;
	CHECK_EQ(ibv_bind_mw(rc, m1, &b), EINVAL);
	b.bind_info.mr = mr2;
	CHECK_EQ(ibv_bind_mw(rc, m1, &b), EPERM);
	b.bind_info.mr = mr;
	/* a QP that cannot send yet (man ibv_post_send: RESET..RTR) */
	old = m1->rkey;
	CHECK_EQ(ibv_bind_mw(rc, m1, &b), EINVAL);
	CHECK_EQ(m1->rkey, old); /* unchanged on failure */
	/* UD QPs bind nothing (man ibv_bind_mw: UC, RC, XRC_SEND) */
	REQUIRE(connect_qp(rc, rc->qp_num) == 0);
	REQUIRE(connect_qp(uc, uc->qp_num) == 0);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1,
					 .qkey = 1 };

		REQUIRE(ibv_modify_qp(ud, &a,
				      IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					      IBV_QP_PORT | IBV_QP_QKEY) == 0);
		a.qp_state = IBV_QPS_RTR;
		REQUIRE(ibv_modify_qp(ud, &a, IBV_QP_STATE) == 0);
		a.qp_state = IBV_QPS_RTS;
		REQUIRE(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ==
			0);
	}
	CHECK_EQ(ibv_bind_mw(ud, m1, &b), EINVAL);
	CHECK_EQ(m1->rkey, old);

	/* ibv_post_send's rules for the memory-window opcodes */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 9;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = NULL;
	wr.bind_mw.rkey = ibv_inc_rkey(m2->rkey);
	wr.bind_mw.bind_info = b.bind_info;
	bad = NULL;
	CHECK_EQ(ibv_post_send(rc, &wr, &bad), EINVAL);
	CHECK(bad == &wr);
	wr.bind_mw.mw = m2;
	wr.bind_mw.bind_info.mr = NULL; /* a range without a region */
	bad = NULL;
	CHECK_EQ(ibv_post_send(rc, &wr, &bad), EINVAL);
	CHECK(bad == &wr);
	wr.bind_mw.bind_info.mr = mr;
	/* type 1 windows are bound by ibv_bind_mw, type 2 by a WR */
	wr.bind_mw.mw = m1;
	CHECK_EQ(ibv_post_send(rc, &wr, &bad), EINVAL);
	wr.bind_mw.mw = m2;
	CHECK_EQ(ibv_post_send(ud, &wr, &bad), EINVAL);
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = 5;
	CHECK_EQ(ibv_post_send(ud, &wr, &bad), EINVAL);
	/* SEND with Invalidate: RC only (IBA 9.2.1) */
	wr.opcode = IBV_WR_SEND_WITH_INV;
	bad = NULL;
	CHECK_EQ(ibv_post_send(uc, &wr, &bad), EINVAL);
	CHECK(bad == &wr);
	CHECK_EQ(ibv_post_send(ud, &wr, &bad), EINVAL);
	drain_cq();

	CHECK_EQ(ibv_destroy_qp(rc), 0);
	CHECK_EQ(ibv_destroy_qp(uc), 0);
	CHECK_EQ(ibv_destroy_qp(ud), 0);
	CHECK_EQ(ibv_dealloc_mw(m1), 0);
	CHECK_EQ(ibv_dealloc_mw(m2), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dereg_mr(mr2), 0);
}

/* Binds executed by the engine, over two connected RC QPs. */
static void test_execute(void)
{
	struct ibv_qp *qa = mkqp(pd, IBV_QPT_RC), *qb = mkqp(pd, IBV_QPT_RC);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, BUF_LEN, MR_ALL);
	struct ibv_mr *nobind =
		ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mw *m1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *m2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind b = { .wr_id = 21, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t old, k2;
	int i;

	REQUIRE(mr && nobind && m1 && m2);
	REQUIRE(connect_qp(qa, qb->qp_num) == 0);
	REQUIRE(connect_qp(qb, qa->qp_num) == 0);

	/* type 1: the completion, the new key, the region held */
	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)buf + 65536;
	b.bind_info.length = 4096;
	b.bind_info.mw_access_flags =
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	old = m1->rkey;
	CHECK_EQ(ibv_bind_mw(qb, m1, &b), 0);
	CHECK_EQ(m1->rkey, ibv_inc_rkey(old));
	EXPECT_WC(21, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	CHECK_EQ(ibv_dereg_mr(mr), EBUSY);

	/* A WRITE from qa through the window lands in the window. */
	for (i = 0; i < 4096; i++)
		buf[BUF_LEN - 4096 + i] = (uint8_t)(i * 7 + 3);
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)buf + BUF_LEN - 4096;
	sge.length = 4096;
	sge.lkey = mr->lkey;
	wr.wr_id = 22;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)buf + 65536;
	wr.wr.rdma.rkey = m1->rkey;
	CHECK_EQ(ibv_post_send(qa, &wr, &bad), 0);
	EXPECT_WC(22, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK(memcmp(buf + 65536, buf + BUF_LEN - 4096, 4096) == 0);

	/* Unbind (zero length), unsignaled: no completion of its own, but
	 * the region is free to go afterwards. */
	b.wr_id = 23;
	b.send_flags = 0;
	b.bind_info.mr = NULL;
	b.bind_info.addr = 0;
	b.bind_info.length = 0;
	CHECK_EQ(ibv_bind_mw(qb, m1, &b), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 24;
	wr.opcode = IBV_WR_SEND; /* ordered after the bind */
	wr.send_flags = IBV_SEND_SIGNALED;
	{
		struct ibv_recv_wr rw = { .wr_id = 25 }, *rbad;

		CHECK_EQ(ibv_post_recv(qa, &rw, &rbad), 0);
	}
	CHECK_EQ(ibv_post_send(qb, &wr, &bad), 0);
	{
		struct ibv_wc wc[2];
		int got = 0;

		got += poll1(&wc[0]);
		got += poll1(&wc[1]);
		CHECK_EQ(got, 2);
		CHECK(wc[0].wr_id != 23 && wc[1].wr_id != 23);
	}

	/* type 2 through ibv_post_send, then LOCAL_INV */
	k2 = ibv_inc_rkey(m2->rkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 31;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = m2;
	wr.bind_mw.rkey = k2;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)buf;
	wr.bind_mw.bind_info.length = 8192;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	CHECK_EQ(ibv_post_send(qb, &wr, &bad), 0);
	EXPECT_WC(31, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	CHECK_EQ(ibv_dereg_mr(mr), EBUSY);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 32;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = k2;
	CHECK_EQ(ibv_post_send(qb, &wr, &bad), 0);
	EXPECT_WC(32, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);

	/* Invalidating it again is a bind error, and the QP goes to ERR;
	 * what follows is flushed. */
	CHECK_EQ(ibv_post_send(qb, &wr, &bad), 0);
	EXPECT_WC(32, IBV_WC_MW_BIND_ERR, 0);
	wr.wr_id = 33;
	CHECK_EQ(ibv_post_send(qb, &wr, &bad), 0);
	EXPECT_WC(33, IBV_WC_WR_FLUSH_ERR, 0);
	{
		struct ibv_qp_attr qa_attr;
		struct ibv_qp_init_attr ia;

		CHECK_EQ(ibv_query_qp(qb, &qa_attr, IBV_QP_STATE, &ia), 0);
		CHECK_EQ(qa_attr.qp_state, IBV_QPS_ERR);
	}

	/* A region registered without MW_BIND cannot be bound (C10-73). */
	CHECK_EQ(ibv_destroy_qp(qb), 0);
	qb = mkqp(pd, IBV_QPT_RC);
	REQUIRE(connect_qp(qb, qa->qp_num) == 0);
	b.wr_id = 41;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = nobind;
	b.bind_info.addr = (uintptr_t)buf;
	b.bind_info.length = 64;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	CHECK_EQ(ibv_bind_mw(qb, m1, &b), 0);
	EXPECT_WC(41, IBV_WC_MW_BIND_ERR, 0);
	drain_cq();

	/* Nothing bound any more: the regions go. */
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dereg_mr(nobind), 0);
	CHECK_EQ(ibv_destroy_qp(qa), 0);
	CHECK_EQ(ibv_destroy_qp(qb), 0);
	CHECK_EQ(ibv_dealloc_mw(m1), 0);
	CHECK_EQ(ibv_dealloc_mw(m2), 0);
}

/* Deallocating a bound window releases its region (which until then can
 * be neither deregistered nor re-registered). */
static void test_dealloc_bound(void)
{
	struct ibv_qp *q = mkqp(pd, IBV_QPT_RC);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 8192, MR_ALL);
	struct ibv_mw *m = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind b = { .wr_id = 51, .send_flags = IBV_SEND_SIGNALED };

	REQUIRE(mr && m);
	REQUIRE(connect_qp(q, q->qp_num) == 0);
	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)buf;
	b.bind_info.length = 8192;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	CHECK_EQ(ibv_bind_mw(q, m, &b), 0);
	EXPECT_WC(51, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	CHECK_EQ(ibv_dereg_mr(mr), EBUSY);
	/* re-registering would move the region under the window */
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      MR_ALL),
		 IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EBUSY);
	CHECK_EQ(ibv_dealloc_mw(m), 0);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      MR_ALL),
		 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_destroy_qp(q), 0);
}

/* The ibv_wr_* API carries the window operations too. */
static void test_wr_api(void)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask =
			IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW |
				  IBV_QP_EX_WITH_LOCAL_INV |
				  IBV_QP_EX_WITH_SEND_WITH_INV,
	};
	struct ibv_qp *q = ibv_create_qp_ex(ctx, &a);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 8192, MR_ALL);
	struct ibv_mw *m = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind_info bi = { mr, (uintptr_t)buf, 4096,
				       IBV_ACCESS_REMOTE_WRITE };
	struct ibv_qp_ex *x;
	uint32_t k;

	REQUIRE(q && mr && m);
	x = ibv_qp_to_qp_ex(q);
	REQUIRE(x);
	REQUIRE(connect_qp(q, q->qp_num) == 0);
	k = ibv_inc_rkey(m->rkey);
	ibv_wr_start(x);
	x->wr_id = 61;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(x, m, k, &bi);
	x->wr_id = 62;
	ibv_wr_local_inv(x, k);
	CHECK_EQ(ibv_wr_complete(x), 0);
	EXPECT_WC(61, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	EXPECT_WC(62, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_destroy_qp(q), 0);
	CHECK_EQ(ibv_dealloc_mw(m), 0);

	/* UC: LOCAL_INV and BIND_MW, but no SEND_WITH_INV */
	a.qp_type = IBV_QPT_UC;
	errno = 0;
	CHECK(ibv_create_qp_ex(ctx, &a) == NULL && errno == EOPNOTSUPP);
	a.send_ops_flags &= ~(uint64_t)IBV_QP_EX_WITH_SEND_WITH_INV;
	q = ibv_create_qp_ex(ctx, &a);
	CHECK(q != NULL);
	if (q)
		CHECK_EQ(ibv_destroy_qp(q), 0);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	REQUIRE(list && list[0]);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	REQUIRE(ctx);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid0) == 0);
	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	buf = aligned_alloc(4096, BUF_LEN);
	REQUIRE(pd && pd2 && cq && buf);
	memset(buf, 0, BUF_LEN);

	test_caps();
	test_alloc();
	test_post_rules();
	test_execute();
	test_dealloc_bound();
	test_wr_api();

	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	free(buf);
	return check_done();
}
