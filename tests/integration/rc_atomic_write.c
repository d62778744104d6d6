/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * IBA 1.5 ATOMIC WRITE between two processes (RC): ibv_wr_atomic_write
 * and ibv_post_send(IBV_WR_ATOMIC_WRITE) store 8 bytes at the peer, with
 * IBV_WC_ATOMIC_WRITE completions; a flag stored by ATOMIC WRITE after a
 * large RDMA WRITE is never seen before the WRITE's bytes (the ordering
 * IBA A19 promises); the right it needs is IBV_ACCESS_REMOTE_WRITE (as
 * rxe checks), a misaligned address is an invalid request.
 */
#include "harness.h"

#define N_WORDS 64
#define BULK_OFF 65536
#define BULK_LEN (256 * 1024)
#define FLAG_OFF 4096
#define FLAG 0x5eedf1a9c0ffee01ULL
/* B's second and third regions (inside its buffer) */
#define WONLY_OFF 8192
#define NOWRITE_OFF 12288

/* Replace the harness's QP by one from ibv_create_qp_ex offering
 * ATOMIC WRITE (same PD and CQ), in INIT as the harness leaves it. */
static struct ibv_qp_ex *xqp(struct hx_ep *ep)
{
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp_attr a;
	struct ibv_qp_ex *x;

	if (ibv_destroy_qp(ep->qp))
		hx_die("cannot drop the harness's QP");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = ep->scq;
	qa.recv_cq = ep->rcq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = ep->o.max_send_wr;
	qa.cap.max_recv_wr = ep->o.max_recv_wr;
	qa.cap.max_send_sge = ep->o.max_send_sge;
	qa.cap.max_recv_sge = ep->o.max_recv_sge;
	qa.cap.max_inline_data = ep->o.max_inline;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = ep->pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_SEND;
	ep->qp = ibv_create_qp_ex(ep->ctx, &qa);
	if (!ep->qp)
		hx_die("ibv_create_qp_ex(ATOMIC_WRITE): %s", strerror(errno));
	ep->cap = qa.cap;
	x = ibv_qp_to_qp_ex(ep->qp);
	if (!x)
		hx_die("ibv_qp_to_qp_ex: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = ep->o.qp_access;
	if (ibv_modify_qp(ep->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		hx_die("modify_qp RESET->INIT failed");
	ep->psn = (uint32_t)lrand48() & 0xffffff;
	return x;
}

static uint64_t word(int i)
{
	return 0x0102030405060708ULL * (uint64_t)(i + 1) ^ 0xa5a5a5a5ULL;
}

static void aw(struct ibv_qp_ex *x, uint64_t id, uint32_t rkey, uint64_t va,
	       uint64_t v)
{
	ibv_wr_start(x);
	x->wr_id = id;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, rkey, va, &v);
	HX_CHECK_RC(ibv_wr_complete(x), 0);
}

/* ---- data: both APIs, every word, with its completion ------------------- */

static void data_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_qp_ex *x;
	struct hx_ep ep;
	uint64_t *src;
	int i;

	hx_ep_open(&ep, &o, fd);
	x = xqp(&ep);
	hx_ep_connect(&ep);
	src = (uint64_t *)ep.buf;
	/* words 0..N/2 through ibv_wr_atomic_write */
	for (i = 0; i < N_WORDS / 2; i++) {
		aw(x, i, ep.peer.rkey, ep.peer.addr + 8 * i, word(i));
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE,
			  8);
	}
	/* the rest through ibv_post_send: from registered memory, then
	 * inline */
	for (; i < N_WORDS; i++) {
		src[i] = word(i);
		sge = (struct ibv_sge){ .addr = (uintptr_t)&src[i],
					.length = 8,
					.lkey = ep.mr->lkey };
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.opcode = IBV_WR_ATOMIC_WRITE;
		wr.send_flags =
			IBV_SEND_SIGNALED | (i % 2 ? IBV_SEND_INLINE : 0);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = ep.peer.addr + 8 * i;
		wr.wr.rdma.rkey = ep.peer.rkey;
		HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), 0);
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE,
			  8);
	}
	/* not 8 bytes: refused at post */
	sge.length = 4;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
	CHECK(bad == &wr);

	/* a region with IBV_ACCESS_REMOTE_WRITE only is enough */
	uint32_t wonly = (uint32_t)hx_recv_u64(fd);
	aw(x, 100, wonly, ep.peer.addr + WONLY_OFF, FLAG);
	HX_EXPECT(ep.scq, NULL, 100, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8);
	hx_sync(fd);
	hx_sync(fd); /* B checked */
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void data_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	const uint64_t *dst;
	struct ibv_mr *wonly;
	struct hx_ep ep;
	int bad = 0;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	wonly = ibv_reg_mr(ep.pd, ep.buf + WONLY_OFF, 4096,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(wonly);
	hx_send_u64(fd, wonly->rkey);
	hx_sync(fd);
	dst = (const uint64_t *)ep.buf;
	for (int i = 0; i < N_WORDS; i++)
		bad += dst[i] != word(i);
	CHECK_EQ(bad, 0);
	CHECK(dst[N_WORDS] == 0); /* nothing past the last word */
	CHECK(dst[WONLY_OFF / 8] == FLAG);
	hx_sync(fd);
	CHECK_EQ(ibv_dereg_mr(wonly), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- order: the flag is seen only after the WRITE before it ------------- */

static void order_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_qp_ex *x;
	struct hx_ep ep;

	o.buf_len = 2 * 1024 * 1024;
	hx_ep_open(&ep, &o, fd);
	x = xqp(&ep);
	hx_ep_connect(&ep);
	for (int round = 1; round <= 4; round++) {
		hx_fill(ep.buf + BULK_OFF, BULK_LEN, round);
		/* unsignaled WRITE, then the flag: one batch, in order */
		ibv_wr_start(x);
		x->wr_id = 10 * round;
		x->wr_flags = 0;
		ibv_wr_rdma_write(x, ep.peer.rkey, ep.peer.addr + BULK_OFF);
		ibv_wr_set_sge(x, ep.mr->lkey, (uintptr_t)ep.buf + BULK_OFF,
			       BULK_LEN);
		x->wr_id = 10 * round + 1;
		x->wr_flags = IBV_SEND_SIGNALED;
		uint64_t flag = FLAG + (uint64_t)round;
		ibv_wr_atomic_write(x, ep.peer.rkey, ep.peer.addr + FLAG_OFF,
				    &flag);
		HX_CHECK_RC(ibv_wr_complete(x), 0);
		HX_EXPECT(ep.scq, NULL, 10 * round + 1, IBV_WC_SUCCESS,
			  IBV_WC_ATOMIC_WRITE, 8);
		hx_sync(fd); /* B saw the flag and checked the bytes */
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void order_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.buf_len = 2 * 1024 * 1024;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	const uint64_t *flag = (const uint64_t *)(ep.buf + FLAG_OFF);
	for (int round = 1; round <= 4; round++) {
		/* Spin on the word as a consumer of a flag would (the
		 * watchdog bounds it); acquire pairs with the store's
		 * release. */
		while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) !=
		       FLAG + (uint64_t)round)
			hx_msleep(0);
		CHECK_EQ(hx_verify(ep.buf + BULK_OFF, BULK_LEN, round), -1);
		hx_sync(fd);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- errors: misaligned, and a region without remote write -------------- */

static void errors_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_qp_ex *x;
	struct hx_ep ep;
	uint32_t nowrite;

	hx_ep_open(&ep, &o, fd);
	x = xqp(&ep);
	hx_ep_connect(&ep);
	/* IBA A19: the VA of an ATOMIC WRITE is 8-byte aligned */
	aw(x, 1, ep.peer.rkey, ep.peer.addr + 4, FLAG);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);

	/* a region B registered with remote read and atomic rights only */
	nowrite = (uint32_t)hx_recv_u64(fd);
	x = xqp(&ep);
	hx_ep_connect(&ep);
	aw(x, 2, nowrite, ep.peer.addr + NOWRITE_OFF, FLAG);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_REM_ACCESS_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void errors_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *nowrite;
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	/* nothing of the misaligned store was placed */
	CHECK(((uint64_t *)ep.buf)[0] == 0 && ((uint64_t *)ep.buf)[1] == 0);
	nowrite = ibv_reg_mr(ep.pd, ep.buf + NOWRITE_OFF, 4096,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				     IBV_ACCESS_REMOTE_ATOMIC);
	REQUIRE(nowrite);
	hx_ep_new_qp(&ep);
	hx_send_u64(fd, nowrite->rkey);
	hx_ep_connect(&ep);
	hx_sync(fd);
	CHECK(((uint64_t *)(ep.buf + NOWRITE_OFF))[0] == 0);
	CHECK_EQ(ibv_dereg_mr(nowrite), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(data, 30), HX_CASE(order, 60), HX_CASE(errors, 30), { 0 }
};

HX_MAIN(cases)
