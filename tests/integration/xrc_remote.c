/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * XRC between two processes: A holds XRC_SEND (initiator) QPs, B an XRC
 * domain with XRC SRQs and an XRC_RECV (target) QP.  Asserted end to end:
 *   SENDs (one packet, several, with immediate) land in the XRC SRQ the
 *   WR names, complete on that SRQ's CQ with the target QP's number, the
 *   bytes compared; two SRQs behind one target QP each get their own
 *   messages in order;
 *   RDMA WRITE/READ/atomics through a target QP are checked against the
 *   PD of the SRQ the request names: a region of another PD ->
 *   IBV_WC_REM_ACCESS_ERR;
 *   an SRQ number of another domain (or none) -> IBV_WC_REM_INV_REQ_ERR
 *   at A, the target QP in ERR, nothing delivered;
 *   one domain opened twice from a file: an SRQ made through one open
 *   and a target QP through the other work together, and ibv_open_qp
 *   gives a handle that drives the target QP.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xqp.h"

#define NSRQ 2

/* What B tells A. */
struct xinfo {
	uint32_t qpn; /* the target QP */
	uint32_t psn;
	uint32_t srqn[NSRQ];
	uint32_t foreign_srqn; /* an SRQ of another domain at B */
	uint64_t addr;
	uint32_t rkey; /* B's region on the SRQs' PD */
	uint32_t rkey_pd2; /* a region of another PD */
};

/* What A tells B. */
struct ainfo {
	uint32_t qpn;
	uint32_t psn;
};

static struct hx_opts opts(void)
{
	struct hx_opts o = hx_opts_default();

	o.recv_cqe = 256;
	return o;
}

/* ---- A: the initiator side ------------------------------------------------ */

struct aside {
	struct hx_ep ep;
	struct ibv_qp *ini;
	struct xinfo x;
};

static void a_setup(struct aside *s, int fd)
{
	struct hx_opts o = opts();
	struct ibv_qp_init_attr_ex ia;
	struct ainfo me;

	hx_ep_open(&s->ep, &o, fd);
	hx_ep_exchange(&s->ep); /* GIDs and MTUs */
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = s->ep.scq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_send_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = s->ep.pd;
	s->ini = ibv_create_qp_ex(s->ep.ctx, &ia);
	if (!s->ini)
		hx_die("XRC_SEND QP: %s", strerror(errno));
	me.qpn = s->ini->qp_num;
	me.psn = (uint32_t)lrand48() & 0xffffff;
	hx_send(fd, &me, sizeof(me));
	hx_recv(fd, &s->x, sizeof(s->x));
	xq_xrc_connect(&s->ep, s->ini, s->x.qpn, s->x.psn, me.psn, 7);
	hx_sync(fd);
}

static int xpost(struct aside *s, enum ibv_wr_opcode op, uint64_t wr_id,
		 void *laddr, uint32_t len, uint32_t srqn, uint64_t raddr,
		 uint32_t rkey, uint64_t add, uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, s->ep.mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = srqn;
	wr.imm_data = htonl(imm);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(s->ini, &wr, &bad);
}

static void a_close(struct aside *s)
{
	CHECK_EQ(ibv_destroy_qp(s->ini), 0);
	CHECK_EQ(hx_ep_close(&s->ep), 0);
}

/* ---- B: the target side ---------------------------------------------------- */

struct bside {
	struct hx_ep ep;
	struct ibv_xrcd *xrcd, *xrcd2, *other;
	struct ibv_srq *srq[NSRQ], *foreign;
	struct ibv_cq *cq[NSRQ];
	struct ibv_qp *tgt, *tgt_handle;
	struct ibv_pd *pd2;
	struct ibv_mr *mr_pd2;
	struct xinfo x;
	int fd;
	char path[64];
};

/* shared: the domain comes from a file opened twice; the SRQs are made
 * through one open, the target QP through the other, and connected
 * through an ibv_open_qp handle. */
static void b_setup(struct bside *s, int fd, bool shared)
{
	struct hx_opts o = opts();
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp *conn;
	struct ainfo peer;
	int i;

	memset(s, 0, sizeof(*s));
	hx_ep_open(&s->ep, &o, fd);
	hx_ep_exchange(&s->ep);
	s->fd = -1;
	if (shared) {
		snprintf(s->path, sizeof(s->path), "/tmp/sv-xrc-%d",
			 (int)getpid());
		s->fd = open(s->path, O_RDONLY | O_CREAT, S_IRUSR | S_IWUSR);
		if (s->fd < 0)
			hx_die("open %s: %s", s->path, strerror(errno));
		s->xrcd = xq_xrcd_open(s->ep.ctx, s->fd, O_CREAT);
		s->xrcd2 = xq_xrcd_open(s->ep.ctx, s->fd, 0);
	} else {
		s->xrcd = xq_xrcd_open(s->ep.ctx, -1, O_CREAT);
		s->xrcd2 = s->xrcd;
	}
	s->other = xq_xrcd_open(s->ep.ctx, -1, O_CREAT);
	for (i = 0; i < NSRQ; i++) {
		s->cq[i] = ibv_create_cq(s->ep.ctx, 128, NULL, NULL, 0);
		if (!s->cq[i])
			hx_die("CQ");
		s->srq[i] =
			xq_xrc_srq(&s->ep, s->xrcd, s->cq[i], &s->x.srqn[i]);
	}
	s->foreign = xq_xrc_srq(&s->ep, s->other, s->cq[0], &s->x.foreign_srqn);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ia.xrcd = s->xrcd2;
	s->tgt = ibv_create_qp_ex(s->ep.ctx, &ia);
	if (!s->tgt)
		hx_die("XRC_RECV QP: %s", strerror(errno));
	conn = s->tgt;
	if (shared) {
		struct ibv_qp_open_attr oa = {
			.comp_mask = IBV_QP_OPEN_ATTR_NUM |
				     IBV_QP_OPEN_ATTR_XRCD |
				     IBV_QP_OPEN_ATTR_TYPE,
			.qp_num = s->tgt->qp_num,
			.xrcd = s->xrcd,
			.qp_type = IBV_QPT_XRC_RECV,
		};

		s->tgt_handle = ibv_open_qp(s->ep.ctx, &oa);
		if (!s->tgt_handle)
			hx_die("ibv_open_qp: %s", strerror(errno));
		CHECK_EQ(s->tgt_handle->qp_num, s->tgt->qp_num);
		conn = s->tgt_handle;
	}
	s->pd2 = ibv_alloc_pd(s->ep.ctx);
	s->mr_pd2 =
		ibv_reg_mr(s->pd2, s->ep.buf + (512u << 10), 65536,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	if (!s->pd2 || !s->mr_pd2)
		hx_die("second PD");
	s->x.qpn = s->tgt->qp_num;
	s->x.psn = (uint32_t)lrand48() & 0xffffff;
	s->x.addr = (uintptr_t)s->ep.buf;
	s->x.rkey = s->ep.mr->rkey;
	s->x.rkey_pd2 = s->mr_pd2->rkey;
	hx_recv(fd, &peer, sizeof(peer));
	hx_send(fd, &s->x, sizeof(s->x));
	xq_xrc_connect(&s->ep, conn, peer.qpn, peer.psn, s->x.psn, 7);
	hx_sync(fd);
}

static void b_post(struct bside *s, int i, uint64_t wr_id, void *addr,
		   uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, s->ep.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id,
				  .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;

	HX_CHECK_RC(ibv_post_srq_recv(s->srq[i], &wr, &bad), 0);
}

static void b_close(struct bside *s)
{
	int i;

	if (s->tgt_handle) {
		CHECK_EQ(ibv_destroy_qp(s->tgt), EBUSY); /* a handle is open */
		CHECK_EQ(ibv_destroy_qp(s->tgt_handle), 0);
	}
	CHECK_EQ(ibv_destroy_qp(s->tgt), 0);
	for (i = 0; i < NSRQ; i++)
		CHECK_EQ(ibv_destroy_srq(s->srq[i]), 0);
	CHECK_EQ(ibv_destroy_srq(s->foreign), 0);
	for (i = 0; i < NSRQ; i++)
		CHECK_EQ(ibv_destroy_cq(s->cq[i]), 0);
	CHECK_EQ(ibv_close_xrcd(s->other), 0);
	if (s->xrcd2 != s->xrcd)
		CHECK_EQ(ibv_close_xrcd(s->xrcd2), 0);
	CHECK_EQ(ibv_close_xrcd(s->xrcd), 0);
	CHECK_EQ(ibv_dereg_mr(s->mr_pd2), 0);
	CHECK_EQ(ibv_dealloc_pd(s->pd2), 0);
	if (s->fd >= 0) {
		close(s->fd);
		unlink(s->path);
	}
	CHECK_EQ(hx_ep_close(&s->ep), 0);
}

/* ---- cases ------------------------------------------------------------------ */

static const uint32_t sizes[] = { 1, 100, 1024, 4096, 3 * 4096 + 100, 0 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void sends_a_common(int fd, bool shared)
{
	struct aside s;
	unsigned int i;

	a_setup(&s, fd);
	(void)shared;
	for (i = 0; i < NSIZES; i++) {
		hx_fill(s.ep.buf + i * 16384, sizes[i], 100 + i);
		HX_CHECK_RC(xpost(&s,
				  i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, i,
				  s.ep.buf + i * 16384, sizes[i], s.x.srqn[0],
				  0, 0, 0, 0x1234 + i),
			    0);
		HX_EXPECT(s.ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND,
			  sizes[i]);
	}
	hx_sync(fd);
	a_close(&s);
}

static void sends_b_common(int fd, bool shared)
{
	struct bside s;
	struct ibv_wc wc;
	unsigned int i;

	b_setup(&s, fd, shared);
	for (i = 0; i < NSIZES; i++)
		b_post(&s, 0, 50 + i, s.ep.buf + i * 16384, 16384);
	for (i = 0; i < NSIZES; i++) {
		if (!HX_EXPECT(s.cq[0], &wc, 50 + i, IBV_WC_SUCCESS,
			       IBV_WC_RECV, sizes[i]))
			continue;
		CHECK_EQ(wc.qp_num, s.tgt->qp_num);
		CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), i & 1);
		if (i & 1)
			CHECK_EQ(ntohl(wc.imm_data), 0x1234 + i);
		HX_CHECK_PATTERN(s.ep.buf + i * 16384, sizes[i], 100 + i);
	}
	/* nothing reached the other SRQ, the QP's own CQs, or the foreign
	 * domain's SRQ */
	HX_EXPECT_NONE(s.cq[1], 20);
	HX_EXPECT_NONE(s.ep.rcq, 20);
	hx_sync(fd);
	b_close(&s);
}

static void sends_a(int fd)
{
	sends_a_common(fd, false);
}
static void sends_b(int fd)
{
	sends_b_common(fd, false);
}
static void shared_domain_a(int fd)
{
	sends_a_common(fd, true);
}
static void shared_domain_b(int fd)
{
	sends_b_common(fd, true);
}

static void two_srqs_a(int fd)
{
	struct aside s;
	int i;

	a_setup(&s, fd);
	for (i = 0; i < 20; i++) {
		hx_fill(s.ep.buf + i * 8192, 5000, 200 + i);
		HX_CHECK_RC(xpost(&s, IBV_WR_SEND, i, s.ep.buf + i * 8192, 5000,
				  s.x.srqn[i % NSRQ], 0, 0, 0, 0),
			    0);
	}
	for (i = 0; i < 20; i++)
		HX_EXPECT(s.ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, 5000);
	hx_sync(fd);
	a_close(&s);
}

static void two_srqs_b(int fd)
{
	struct bside s;
	int i;

	b_setup(&s, fd, false);
	for (i = 0; i < 20; i++)
		b_post(&s, i % NSRQ, 300 + i, s.ep.buf + i * 8192, 8192);
	/* each SRQ's CQ sees its own messages, in order */
	for (i = 0; i < 20; i++) {
		struct ibv_wc wc;

		if (HX_EXPECT(s.cq[i % NSRQ], &wc, 300 + i, IBV_WC_SUCCESS,
			      IBV_WC_RECV, 5000))
			CHECK_EQ(wc.qp_num, s.tgt->qp_num);
		HX_CHECK_PATTERN(s.ep.buf + i * 8192, 5000, 200 + i);
	}
	hx_sync(fd);
	b_close(&s);
}

static void rdma_a(int fd)
{
	uint64_t *res;
	struct aside s;

	a_setup(&s, fd);
	res = (uint64_t *)(s.ep.buf + 65536);
	hx_fill(s.ep.buf, 3 * 4096 + 10, 400);
	hx_sync(fd); /* B has stored the atomic's operand */
	/* any SRQ of the domain names the PD: the SRQs' */
	HX_CHECK_RC(xpost(&s, IBV_WR_RDMA_WRITE, 1, s.ep.buf, 3 * 4096 + 10,
			  s.x.srqn[1], s.x.addr + 8192, s.x.rkey, 0, 0),
		    0);
	HX_EXPECT(s.ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		  3 * 4096 + 10);
	HX_CHECK_RC(xpost(&s, IBV_WR_RDMA_READ, 2, s.ep.buf + 131072,
			  3 * 4096 + 10, s.x.srqn[0], s.x.addr + 8192, s.x.rkey,
			  0, 0),
		    0);
	HX_EXPECT(s.ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		  3 * 4096 + 10);
	HX_CHECK_PATTERN(s.ep.buf + 131072, 3 * 4096 + 10, 400);
	HX_CHECK_RC(xpost(&s, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, res, 8,
			  s.x.srqn[0], s.x.addr + 65536, s.x.rkey, 7, 0),
		    0);
	HX_EXPECT(s.ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8);
	CHECK_EQ(*res, 500);
	hx_sync(fd);
	/* a region of another PD than the SRQ's */
	HX_CHECK_RC(xpost(&s, IBV_WR_RDMA_WRITE, 4, s.ep.buf, 64, s.x.srqn[0],
			  s.x.addr + (512u << 10), s.x.rkey_pd2, 0, 0),
		    0);
	HX_EXPECT(s.ep.scq, NULL, 4, IBV_WC_REM_ACCESS_ERR, -1, -1);
	HX_CHECK_STATE(s.ini, IBV_QPS_ERR);
	hx_sync(fd);
	a_close(&s);
}

static void rdma_b(int fd)
{
	struct bside s;

	b_setup(&s, fd, false);
	*(uint64_t *)(s.ep.buf + 65536) = 500;
	hx_sync(fd); /* before A's FETCH_ADD */
	hx_sync(fd);
	HX_CHECK_PATTERN(s.ep.buf + 8192, 3 * 4096 + 10, 400);
	CHECK_EQ(__atomic_load_n((uint64_t *)(s.ep.buf + 65536),
				 __ATOMIC_SEQ_CST),
		 507);
	hx_sync(fd);
	/* the refused WRITE placed nothing; the target QP is in ERR */
	CHECK_EQ(s.ep.buf[512u << 10], 0);
	HX_CHECK_STATE(s.tgt, IBV_QPS_ERR);
	b_close(&s);
}

static void bad_srq_a(int fd)
{
	struct aside s;

	a_setup(&s, fd);
	/* an SRQ of another domain of B's */
	HX_CHECK_RC(xpost(&s, IBV_WR_SEND, 1, s.ep.buf, 64, s.x.foreign_srqn, 0,
			  0, 0, 0),
		    0);
	HX_EXPECT(s.ep.scq, NULL, 1, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	HX_CHECK_STATE(s.ini, IBV_QPS_ERR);
	hx_sync(fd);
	a_close(&s);
}

static void bad_srq_b(int fd)
{
	struct bside s;

	b_setup(&s, fd, false);
	b_post(&s, 0, 9, s.ep.buf, 4096);
	{
		struct ibv_sge sge = { (uintptr_t)s.ep.buf + 4096, 4096,
				       s.ep.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 10,
					  .sg_list = &sge,
					  .num_sge = 1 };
		struct ibv_recv_wr *bad;

		HX_CHECK_RC(ibv_post_srq_recv(s.foreign, &wr, &bad), 0);
	}
	hx_sync(fd);
	HX_CHECK_STATE(s.tgt, IBV_QPS_ERR);
	/* delivered nowhere: neither the foreign SRQ (same CQ as SRQ 0)
	 * nor the domain's own */
	HX_EXPECT_NONE(s.cq[0], 50);
	HX_EXPECT_NONE(s.cq[1], 20);
	b_close(&s);
}

static const struct hx_case cases[] = {
	HX_CASE(sends, 30),   HX_CASE(two_srqs, 30),	  HX_CASE(rdma, 30),
	HX_CASE(bad_srq, 30), HX_CASE(shared_domain, 30), { 0 },
};

HX_MAIN(cases)
