/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* XRC through the public API: the argument rules and errno values of
 * ibv_open_xrcd / ibv_close_xrcd (fd and oflags as the kernel has them),
 * ibv_create_srq_ex for XRC SRQs and ibv_get_srq_num, XRC_SEND and
 * XRC_RECV QPs from ibv_create_qp_ex, the XRC columns of the QP state
 * table (XRC_INI / XRC_TGT), ibv_open_qp, and messages through XRC over
 * loopback (an initiator and a target QP of this process, ibv_post_send
 * and the ibv_wr_* API with its XRC SRQ number setter) with their bytes
 * compared.  Messages
 * between two processes are tests/integration/xrc_*.c. */
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq, *rcq;
static union ibv_gid gid0;
static char path[64];

static struct ibv_xrcd *open_xrcd(int fd, int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *xrc_srq(struct ibv_xrcd *x, struct ibv_cq *c)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 16, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd,
		.xrcd = x,
		.cq = c,
	};

	return ibv_create_srq_ex(ctx, &a);
}

static struct ibv_qp *tgt_qp(struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x,
	};

	return ibv_create_qp_ex(ctx, &a);
}

static struct ibv_qp *ini_qp(void)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_SEND,
		.send_cq = cq,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};

	return ibv_create_qp_ex(ctx, &a);
}

static void test_caps(void)
{
	struct ibv_device_attr da;

	CHECK_EQ(ibv_query_device(ctx, &da), 0);
	CHECK(da.device_cap_flags & IBV_DEVICE_XRC);
}

static void test_xrcd(void)
{
	struct ibv_xrcd_init_attr a = { 0 };
	struct ibv_xrcd *x1, *x2, *x3;
	struct ibv_srq *srq;
	int fd;

	/* rdma-core: fd and oflags must both be given; unknown bits */
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD;
	a.fd = -1;
	errno = 0;
	CHECK(ibv_open_xrcd(ctx, &a) == NULL && errno == EINVAL);
	a.comp_mask = IBV_XRCD_INIT_ATTR_OFLAGS;
	errno = 0;
	CHECK(ibv_open_xrcd(ctx, &a) == NULL && errno == EINVAL);
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS |
		      IBV_XRCD_INIT_ATTR_RESERVED;
	errno = 0;
	CHECK(ibv_open_xrcd(ctx, &a) == NULL && errno == EOPNOTSUPP);

	/* fd -1: a domain of its own, every time */
	x1 = open_xrcd(-1, O_CREAT);
	x2 = open_xrcd(-1, 0);
	REQUIRE(x1 && x2);
	CHECK(x1 != x2 && x1->context == ctx);
	CHECK_EQ(ibv_close_xrcd(x1), 0);
	CHECK_EQ(ibv_close_xrcd(x2), 0);

	/* A file: the kernel's rules */
	fd = open(path, O_RDONLY | O_CREAT, S_IRUSR | S_IWUSR);
	REQUIRE(fd >= 0);
	errno = 0;
	CHECK(open_xrcd(fd, 0) == NULL && errno == EAGAIN); /* none yet */
	x1 = open_xrcd(fd, O_CREAT);
	REQUIRE(x1);
	errno = 0;
	CHECK(open_xrcd(fd, O_CREAT | O_EXCL) == NULL && errno == EINVAL);
	x2 = open_xrcd(fd, 0); /* now it exists */
	REQUIRE(x2);
	{
		/* the same file through another descriptor */
		int fd2 = open(path, O_RDONLY);

		REQUIRE(fd2 >= 0);
		x3 = open_xrcd(fd2, 0);
		CHECK(x3 != NULL);
		close(fd2);
	}
	errno = 0;
	CHECK(open_xrcd(9999, O_CREAT) == NULL && errno == EBADF);

	/* the last open of a domain in use cannot close; an earlier one can */
	srq = xrc_srq(x1, rcq);
	REQUIRE(srq);
	CHECK_EQ(ibv_close_xrcd(x1), 0);
	CHECK_EQ(ibv_close_xrcd(x2), 0);
	CHECK_EQ(ibv_close_xrcd(x3), EBUSY);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(ibv_close_xrcd(x3), 0);
	/* and with it the domain: none for the file any more */
	errno = 0;
	CHECK(open_xrcd(fd, 0) == NULL && errno == EAGAIN);
	close(fd);
}

static void test_srq(void)
{
	struct ibv_xrcd *x = open_xrcd(-1, O_CREAT);
	struct ibv_srq_init_attr_ex a;
	struct ibv_srq *s1, *s2, *basic;
	struct ibv_cq *c2 = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	uint32_t n1 = 0, n2 = 0;

	REQUIRE(x && c2);
#define SRQ_FAILS(err)                                           \
	do {                                                     \
		errno = 0;                                       \
		struct ibv_srq *_s = ibv_create_srq_ex(ctx, &a); \
		CHECK(_s == NULL);                               \
		CHECK_EQ(errno, err);                            \
		if (_s)                                          \
			ibv_destroy_srq(_s);                     \
	} while (0)
#define BASE_SRQ()                                                            \
	do {                                                                  \
		memset(&a, 0, sizeof(a));                                     \
		a.attr.max_wr = 4;                                            \
		a.attr.max_sge = 1;                                           \
		a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE |                        \
			      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | \
			      IBV_SRQ_INIT_ATTR_PD;                           \
		a.srq_type = IBV_SRQT_XRC;                                    \
		a.pd = pd;                                                    \
		a.xrcd = x;                                                   \
		a.cq = c2;                                                    \
	} while (0)
	BASE_SRQ();
	a.comp_mask &= ~(uint32_t)IBV_SRQ_INIT_ATTR_XRCD;
	SRQ_FAILS(EINVAL);
	BASE_SRQ();
	a.comp_mask &= ~(uint32_t)IBV_SRQ_INIT_ATTR_CQ;
	SRQ_FAILS(EINVAL);
	BASE_SRQ();
	a.comp_mask &= ~(uint32_t)IBV_SRQ_INIT_ATTR_PD;
	SRQ_FAILS(EINVAL);
	BASE_SRQ();
	a.xrcd = NULL;
	SRQ_FAILS(EINVAL);
	BASE_SRQ();
	a.srq_type = IBV_SRQT_TM; /* no tag matching */
	SRQ_FAILS(EOPNOTSUPP);
	BASE_SRQ();
	a.srq_type = (enum ibv_srq_type)7;
	SRQ_FAILS(EINVAL);
	BASE_SRQ();
	a.comp_mask |= IBV_SRQ_INIT_ATTR_RESERVED;
	SRQ_FAILS(EOPNOTSUPP);
	BASE_SRQ();
	a.attr.max_wr = 0; /* ibv_create_srq's own rules hold too */
	SRQ_FAILS(EINVAL);

	BASE_SRQ();
	s1 = ibv_create_srq_ex(ctx, &a);
	BASE_SRQ();
	s2 = ibv_create_srq_ex(ctx, &a);
	REQUIRE(s1 && s2);
	CHECK(a.attr.max_wr >= 4);
	CHECK_EQ(ibv_get_srq_num(s1, &n1), 0);
	CHECK_EQ(ibv_get_srq_num(s2, &n2), 0);
	CHECK(n1 && n2 && n1 != n2);
	CHECK(n1 <= 0xffffff && n2 <= 0xffffff);
	/* a basic SRQ has no XRC number */
	BASE_SRQ();
	a.srq_type = IBV_SRQT_BASIC;
	basic = ibv_create_srq_ex(ctx, &a);
	REQUIRE(basic);
	CHECK_EQ(ibv_get_srq_num(basic, &n1), EINVAL);
	CHECK_EQ(ibv_destroy_srq(basic), 0);
	/* the CQ and the PD are in use by the XRC SRQs */
	CHECK_EQ(ibv_destroy_cq(c2), EBUSY);
	CHECK_EQ(ibv_destroy_srq(s1), 0);
	CHECK_EQ(ibv_destroy_cq(c2), EBUSY);
	CHECK_EQ(ibv_destroy_srq(s2), 0);
	CHECK_EQ(ibv_destroy_cq(c2), 0);
	CHECK_EQ(ibv_close_xrcd(x), 0);
#undef BASE_SRQ
#undef SRQ_FAILS
}

static void test_qps(void)
{
	struct ibv_xrcd *x = open_xrcd(-1, O_CREAT);
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *ini, *tgt;
	struct ibv_recv_wr rw = { .wr_id = 1 }, *rbad;
	struct ibv_send_wr sw = { .wr_id = 1, .opcode = IBV_WR_SEND }, *sbad;

	REQUIRE(x);
	ini = ini_qp();
	tgt = tgt_qp(x);
	REQUIRE(ini && tgt);
	CHECK_EQ(ini->qp_type, IBV_QPT_XRC_SEND);
	CHECK(ini->pd == pd && ini->send_cq == cq && ini->recv_cq == NULL);
	CHECK_EQ(tgt->qp_type, IBV_QPT_XRC_RECV);
	CHECK(tgt->pd == NULL && tgt->send_cq == NULL && tgt->recv_cq == NULL);
	CHECK(tgt->qp_num != ini->qp_num);
	/* neither end has a receive queue; a target has no send queue */
	CHECK_EQ(ibv_post_recv(ini, &rw, &rbad), EINVAL);
	CHECK_EQ(ibv_post_recv(tgt, &rw, &rbad), EINVAL);
	CHECK_EQ(ibv_post_send(tgt, &sw, &sbad), EINVAL);
	/* the domain is in use */
	CHECK_EQ(ibv_close_xrcd(x), EBUSY);

	/* creation rules */
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD; /* no domain given */
	errno = 0;
	CHECK(ibv_create_qp_ex(ctx, &a) == NULL && errno == EINVAL);
	a.qp_type = IBV_QPT_XRC_SEND;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	errno = 0;
	CHECK(ibv_create_qp_ex(ctx, &a) == NULL && errno == EINVAL); /* no CQ */
	/* ibv_create_qp makes initiators (not targets: no domain there) */
	{
		struct ibv_qp_init_attr ia = { .send_cq = cq,
					       .qp_type = IBV_QPT_XRC_SEND,
					       .cap = { .max_send_wr = 2 } };
		struct ibv_qp *q = ibv_create_qp(pd, &ia);

		CHECK(q != NULL);
		CHECK_EQ(ia.cap.max_recv_wr, 0);
		if (q)
			CHECK_EQ(ibv_destroy_qp(q), 0);
		ia.qp_type = IBV_QPT_XRC_RECV;
		errno = 0;
		CHECK(ibv_create_qp(pd, &ia) == NULL && errno == EINVAL);
	}
	/* the wr_* API: XRC_SEND takes send operations, a target none */
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.xrcd = x;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	errno = 0;
	CHECK(ibv_create_qp_ex(ctx, &a) == NULL && errno == EOPNOTSUPP);

	CHECK_EQ(ibv_destroy_qp(ini), 0);
	CHECK_EQ(ibv_destroy_qp(tgt), 0);
	CHECK_EQ(ibv_close_xrcd(x), 0);
}

/* One transition; 0 or the modify's errno. */
static int modify(struct ibv_qp *qp, enum ibv_qp_state st, int mask)
{
	struct ibv_qp_attr a = { .qp_state = st,
				 .port_num = 1,
				 .path_mtu = IBV_MTU_1024,
				 .dest_qp_num = 5,
				 .timeout = 14,
				 .retry_cnt = 7,
				 .rnr_retry = 7,
				 .max_rd_atomic = 1,
				 .max_dest_rd_atomic = 1,
				 .min_rnr_timer = 1 };

	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid0;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	return ibv_modify_qp(qp, &a, mask | IBV_QP_STATE);
}

#define Q(x) IBV_QP_##x
static void test_state_table(void)
{
	struct ibv_xrcd *x = open_xrcd(-1, O_CREAT);
	struct ibv_qp *ini = ini_qp(), *tgt = tgt_qp(x);
	const int init = Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS);
	const int rtr = Q(AV) | Q(PATH_MTU) | Q(DEST_QPN) | Q(RQ_PSN);
	const int rtr_tgt = rtr | Q(MAX_DEST_RD_ATOMIC) | Q(MIN_RNR_TIMER);
	const int rts_ini = Q(TIMEOUT) | Q(RETRY_CNT) | Q(RNR_RETRY) |
			    Q(SQ_PSN) | Q(MAX_QP_RD_ATOMIC);
	const int rts_tgt = Q(TIMEOUT) | Q(SQ_PSN);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	REQUIRE(x && ini && tgt);
	/* the kernel's qp_state_table, XRC_INI and XRC_TGT columns */
	CHECK_EQ(modify(ini, IBV_QPS_INIT, Q(PKEY_INDEX) | Q(PORT)), EINVAL);
	CHECK_EQ(modify(tgt, IBV_QPS_INIT, Q(PORT) | Q(ACCESS_FLAGS)), EINVAL);
	CHECK_EQ(modify(ini, IBV_QPS_INIT, init), 0);
	CHECK_EQ(modify(tgt, IBV_QPS_INIT, init), 0);
	/* RTR: what each requires */
	CHECK_EQ(modify(ini, IBV_QPS_RTR, rtr & ~Q(RQ_PSN)), EINVAL);
	CHECK_EQ(modify(tgt, IBV_QPS_RTR, rtr), EINVAL);
	CHECK_EQ(modify(tgt, IBV_QPS_RTR, rtr | Q(MAX_DEST_RD_ATOMIC)), EINVAL);
	CHECK_EQ(modify(tgt, IBV_QPS_RTR, rtr | Q(MIN_RNR_TIMER)), EINVAL);
	/* an initiator has no responder: responder depth and RNR timer are
	 * dropped before the table is checked (the kernel's modify_qp_mask),
	 * and do not apply */
	CHECK_EQ(modify(ini, IBV_QPS_RTR, rtr_tgt), 0);
	CHECK_EQ(ibv_query_qp(ini, &qa, IBV_QP_MAX_DEST_RD_ATOMIC, &ia), 0);
	CHECK_EQ(qa.max_dest_rd_atomic, 0);
	CHECK_EQ(modify(tgt, IBV_QPS_RTR, rtr_tgt), 0);
	CHECK_EQ(ibv_query_qp(tgt, &qa, IBV_QP_MAX_DEST_RD_ATOMIC, &ia), 0);
	CHECK_EQ(qa.max_dest_rd_atomic, 1);
	/* RTS: an initiator needs its retry counts and READ depth; a target
	 * has no requester: those are dropped, and only TIMEOUT and SQ_PSN
	 * are required */
	CHECK_EQ(modify(ini, IBV_QPS_RTS, rts_ini & ~Q(RETRY_CNT)), EINVAL);
	CHECK_EQ(modify(ini, IBV_QPS_RTS, rts_tgt), EINVAL);
	CHECK_EQ(modify(tgt, IBV_QPS_RTS,
			Q(SQ_PSN) | Q(RETRY_CNT) | Q(RNR_RETRY) |
				Q(MAX_QP_RD_ATOMIC)),
		 EINVAL); /* no TIMEOUT once they are dropped */
	CHECK_EQ(modify(ini, IBV_QPS_RTS, rts_ini), 0);
	CHECK_EQ(modify(tgt, IBV_QPS_RTS, rts_ini | Q(MIN_RNR_TIMER)), 0);
	CHECK_EQ(ibv_query_qp(tgt, &qa, IBV_QP_RETRY_CNT, &ia), 0);
	CHECK_EQ(qa.retry_cnt, 0);
	/* RTS -> RTS: a target may change its RNR timer, not a path it
	 * does not have on RoCE */
	CHECK_EQ(modify(tgt, IBV_QPS_RTS, Q(MIN_RNR_TIMER)), 0);
	CHECK_EQ(modify(ini, IBV_QPS_RTS, Q(ACCESS_FLAGS)), 0);
	CHECK_EQ(modify(tgt, IBV_QPS_RTS, Q(PATH_MTU)), EINVAL);
	/* SQD -> SQD: retry counts for an initiator, responder depth for a
	 * target */
	CHECK_EQ(modify(ini, IBV_QPS_SQD, 0), 0);
	CHECK_EQ(modify(tgt, IBV_QPS_SQD, 0), 0);
	CHECK_EQ(modify(ini, IBV_QPS_SQD, Q(RETRY_CNT)), 0);
	CHECK_EQ(modify(tgt, IBV_QPS_SQD, Q(MAX_DEST_RD_ATOMIC)), 0);
	CHECK_EQ(modify(ini, IBV_QPS_SQD, Q(PATH_MTU)), EINVAL);
	CHECK_EQ(modify(ini, IBV_QPS_ERR, 0), 0);
	CHECK_EQ(modify(tgt, IBV_QPS_RESET, 0), 0);
	CHECK_EQ(ibv_destroy_qp(ini), 0);
	CHECK_EQ(ibv_destroy_qp(tgt), 0);
	CHECK_EQ(ibv_close_xrcd(x), 0);
}
#undef Q

static void test_open_qp(void)
{
	struct ibv_xrcd *x = open_xrcd(-1, O_CREAT),
			*other = open_xrcd(-1, O_CREAT);
	struct ibv_qp *tgt = tgt_qp(x), *h;
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE | IBV_QP_OPEN_ATTR_CONTEXT,
		.qp_num = 0,
		.xrcd = x,
		.qp_context = &oa,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	REQUIRE(x && other && tgt);
	oa.qp_num = tgt->qp_num;
#define OPEN_FAILS(err)                                    \
	do {                                               \
		errno = 0;                                 \
		struct ibv_qp *_q = ibv_open_qp(ctx, &oa); \
		CHECK(_q == NULL && errno == (err));       \
		if (_q)                                    \
			ibv_destroy_qp(_q);                \
	} while (0)
	oa.comp_mask &= ~(uint32_t)IBV_QP_OPEN_ATTR_XRCD;
	OPEN_FAILS(EINVAL);
	oa.comp_mask |= IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_RESERVED;
	OPEN_FAILS(EOPNOTSUPP);
	oa.comp_mask &= ~(uint32_t)IBV_QP_OPEN_ATTR_RESERVED;
	oa.qp_type = IBV_QPT_XRC_SEND;
	OPEN_FAILS(EINVAL);
	oa.qp_type = IBV_QPT_XRC_RECV;
	oa.xrcd = other; /* not in that domain */
	OPEN_FAILS(EINVAL);
	oa.xrcd = x;
	oa.qp_num = tgt->qp_num ^ 1;
	OPEN_FAILS(EINVAL);
	oa.qp_num = tgt->qp_num;

	h = ibv_open_qp(ctx, &oa);
	REQUIRE(h);
	CHECK(h != tgt);
	CHECK_EQ(h->qp_num, tgt->qp_num);
	CHECK(h->qp_context == &oa);
	CHECK_EQ(h->qp_type, IBV_QPT_XRC_RECV);
	/* the handle drives the same QP */
	CHECK_EQ(modify(h, IBV_QPS_INIT,
			IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		 0);
	CHECK_EQ(ibv_query_qp(tgt, &qa, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_INIT);
	/* the creator's handle waits for the opened ones */
	CHECK_EQ(ibv_destroy_qp(tgt), EBUSY);
	CHECK_EQ(ibv_close_xrcd(x), EBUSY);
	CHECK_EQ(ibv_destroy_qp(h), 0);
	CHECK_EQ(ibv_destroy_qp(tgt), 0);
	CHECK_EQ(ibv_close_xrcd(x), 0);
	CHECK_EQ(ibv_close_xrcd(other), 0);
#undef OPEN_FAILS
}

static bool poll_one(struct ibv_cq *c, struct ibv_wc *wc)
{
	time_t end;

	for (end = time(NULL) + 10; time(NULL) < end;) {
		if (ibv_poll_cq(c, 1, wc) == 1)
			return true;
		usleep(100);
	}
	memset(wc, 0, sizeof(*wc));
	return false;
}

/* Messages through XRC in this process: initiator -> target -> the XRC
 * SRQ they name, completing on the SRQ's CQ; by ibv_post_send and by
 * the ibv_wr_* API, whose XRC SRQ number setter is mandatory. */
static void test_loopback(void)
{
	struct ibv_xrcd *x = open_xrcd(-1, O_CREAT);
	struct ibv_srq *srq = xrc_srq(x, rcq);
	struct ibv_qp_init_attr_ex ea = {
		.qp_type = IBV_QPT_XRC_SEND,
		.send_cq = cq,
		.cap = { .max_send_wr = 8, .max_send_sge = 1 },
		.comp_mask =
			IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				  IBV_QP_EX_WITH_SEND_WITH_INV,
	};
	struct ibv_qp *ini = ibv_create_qp_ex(ctx, &ea), *tgt = tgt_qp(x);
	struct ibv_qp_ex *qx;
	static char src[5000], dst[5000];
	struct ibv_mr *mr_src = ibv_reg_mr(pd, src, sizeof(src), 0);
	struct ibv_mr *mr_dst =
		ibv_reg_mr(pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge rs = { (uintptr_t)dst, sizeof(dst), 0 };
	struct ibv_sge ss = { (uintptr_t)src, sizeof(src), 0 };
	struct ibv_recv_wr rw = { .wr_id = 71, .sg_list = &rs, .num_sge = 1 },
			   *rbad;
	struct ibv_send_wr sw = { .wr_id = 72,
				  .sg_list = &ss,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *sbad;
	const int rtr =
		IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	struct ibv_qp_attr qa = { 0 };
	struct ibv_wc wc;
	uint32_t srqn;
	int i;

	REQUIRE(x && srq && ini && tgt && mr_src && mr_dst);
	rs.lkey = mr_dst->lkey;
	ss.lkey = mr_src->lkey;
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (char)(i * 13 + 1);
	REQUIRE(ibv_get_srq_num(srq, &srqn) == 0);
	CHECK_EQ(ibv_post_srq_recv(srq, &rw, &rbad), 0);
	REQUIRE(modify(ini, IBV_QPS_INIT,
		       IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ==
		0);
	REQUIRE(modify(tgt, IBV_QPS_INIT,
		       IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ==
		0);
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.ah_attr.is_global = 1;
	qa.ah_attr.grh.dgid = gid0;
	qa.ah_attr.grh.hop_limit = 64;
	qa.ah_attr.port_num = 1;
	qa.dest_qp_num = tgt->qp_num;
	qa.rq_psn = 3;
	REQUIRE(ibv_modify_qp(ini, &qa, rtr | IBV_QP_STATE) == 0);
	qa.dest_qp_num = ini->qp_num;
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 1;
	qa.rq_psn = 9;
	REQUIRE(ibv_modify_qp(tgt, &qa,
			      rtr | IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC |
				      IBV_QP_MIN_RNR_TIMER) == 0);
	qa.qp_state = IBV_QPS_RTS;
	qa.sq_psn = 9;
	qa.timeout = 14;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.max_rd_atomic = 1;
	REQUIRE(ibv_modify_qp(ini, &qa,
			      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				      IBV_QP_MAX_QP_RD_ATOMIC) == 0);
	qa.sq_psn = 3;
	REQUIRE(ibv_modify_qp(tgt, &qa,
			      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT) ==
		0);

	sw.qp_type.xrc.remote_srqn = srqn;
	CHECK_EQ(ibv_post_send(ini, &sw, &sbad), 0);
	CHECK(poll_one(rcq, &wc));
	CHECK_EQ(wc.wr_id, 71);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, sizeof(src));
	CHECK_EQ(wc.qp_num, tgt->qp_num);
	CHECK(memcmp(src, dst, sizeof(src)) == 0);
	CHECK(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 72);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.qp_num, ini->qp_num);

	/* the ibv_wr_* API: without the SRQ number, or one wider than the
	 * XRCETH's 24 bits, the batch fails; with it, the message goes */
	qx = ibv_qp_to_qp_ex(ini);
	REQUIRE(qx);
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, mr_src->lkey, (uintptr_t)src, 100);
	CHECK_EQ(ibv_wr_complete(qx), EINVAL);
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, 0x1000000);
	ibv_wr_set_sge(qx, mr_src->lkey, (uintptr_t)src, 100);
	CHECK_EQ(ibv_wr_complete(qx), EINVAL);
	memset(dst, 0, sizeof(dst));
	rw.wr_id = 73;
	CHECK_EQ(ibv_post_srq_recv(srq, &rw, &rbad), 0);
	ibv_wr_start(qx);
	qx->wr_id = 74;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, srqn);
	ibv_wr_set_sge(qx, mr_src->lkey, (uintptr_t)src + 1, 100);
	CHECK_EQ(ibv_wr_complete(qx), 0);
	CHECK(poll_one(rcq, &wc));
	CHECK_EQ(wc.wr_id, 73);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, 100);
	CHECK(memcmp(src + 1, dst, 100) == 0);
	CHECK(poll_one(cq, &wc));
	CHECK_EQ(wc.wr_id, 74);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	/* the SRQ is in use by nothing now: it can go before the QPs */
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(ibv_destroy_qp(ini), 0);
	CHECK_EQ(ibv_destroy_qp(tgt), 0);
	CHECK_EQ(ibv_dereg_mr(mr_src), 0);
	CHECK_EQ(ibv_dereg_mr(mr_dst), 0);
	CHECK_EQ(ibv_close_xrcd(x), 0);
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
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	REQUIRE(pd && cq && rcq);
	snprintf(path, sizeof(path), "/tmp/sv-xrcd-%d", (int)getpid());
	unlink(path);

	test_caps();
	test_xrcd();
	test_srq();
	test_qps();
	test_state_table();
	test_open_qp();
	test_loopback();

	unlink(path);
	CHECK_EQ(ibv_destroy_cq(rcq), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
