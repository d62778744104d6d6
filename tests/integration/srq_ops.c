/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared receive queues between two processes: one SRQ feeding several RC
 * QPs, and RC and UD QPs at once (bytes compared, every completion naming
 * its QP); the limit event (IBV_EVENT_SRQ_LIMIT_REACHED once when the
 * count of posted WQEs falls below the armed limit, then disarmed, armed
 * again by ibv_modify_srq); IBV_EVENT_QP_LAST_WQE_REACHED when an
 * SRQ-attached QP enters the error state, by modify_qp or by a remote
 * access error; resizing with WQEs posted; destroy refused while in use.
 */
#include <arpa/inet.h>
#include <pthread.h>

#include "xqp.h"

#define SLOT 8192
#define NQP 3

static struct ibv_srq *new_srq(struct hx_ep *ep, uint32_t max_wr)
{
	struct ibv_srq_init_attr sa;
	struct ibv_srq *srq;

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = max_wr;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(ep->pd, &sa);
	if (!srq)
		hx_die("ibv_create_srq: %s", strerror(errno));
	return srq;
}

/* Connect n QPs pairwise with the peer's n QPs (RC or UC). */
static void connect_n(struct hx_ep *ep, struct ibv_qp **qp, int n)
{
	uint32_t mine[2 * NQP], theirs[2 * NQP];
	int i, rc;

	for (i = 0; i < n; i++) {
		mine[2 * i] = qp[i]->qp_num;
		mine[2 * i + 1] = ep->psn + (uint32_t)i * 1000;
	}
	hx_ep_exchange(ep);
	hx_send(ep->fd, mine, sizeof(mine));
	hx_recv(ep->fd, theirs, sizeof(theirs));
	for (i = 0; i < n; i++) {
		uint32_t psn = ep->psn;

		ep->psn = mine[2 * i + 1];
		rc = xq_connect_qp(ep, qp[i], theirs[2 * i], theirs[2 * i + 1]);
		ep->psn = psn;
		if (rc)
			hx_die("connect QP %d: %s", i, strerror(rc));
	}
	hx_sync(ep->fd);
}

static void open_ep(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	o.buf_len = 4 << 20;
	hx_ep_open(ep, &o, fd);
}

/* ---- shared_rc: one SRQ, three RC QPs ---------------------------------- */

static void shared_rc_a(int fd)
{
	struct ibv_qp *qp[NQP];
	struct hx_ep ep;
	int i, k;

	open_ep(&ep, fd);
	qp[0] = ep.qp;
	for (i = 1; i < NQP; i++)
		qp[i] = xq_create(&ep, IBV_QPT_RC, NULL);
	connect_n(&ep, qp, NQP);
	hx_sync(fd); /* B posted to its SRQ */
	for (k = 0; k < 4; k++)
		for (i = 0; i < NQP; i++) {
			uint32_t tag = (uint32_t)(100 * i + k),
				 len = 1000 + 1500 * k;
			struct ibv_sge sge = { (uintptr_t)(ep.buf + tag * SLOT),
					       len, ep.mr->lkey };
			struct ibv_send_wr wr, *bad;

			hx_fill(ep.buf + tag * SLOT, len, tag);
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = tag;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND_WITH_IMM;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.imm_data = htonl(tag);
			HX_CHECK_RC(ibv_post_send(qp[i], &wr, &bad), 0);
			HX_EXPECT(ep.scq, NULL, tag, IBV_WC_SUCCESS,
				  IBV_WC_SEND, len);
		}
	hx_sync(fd);
	for (i = 1; i < NQP; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void shared_rc_b(int fd)
{
	struct ibv_qp *qp[NQP];
	struct ibv_srq *srq;
	struct hx_ep ep;
	int i, n, per_qp[NQP] = { 0 };

	open_ep(&ep, fd);
	srq = new_srq(&ep, 64);
	xq_new_qp(&ep, IBV_QPT_RC, srq);
	qp[0] = ep.qp;
	for (i = 1; i < NQP; i++)
		qp[i] = xq_create(&ep, IBV_QPT_RC, srq);
	connect_n(&ep, qp, NQP);
	for (i = 0; i < 4 * NQP; i++)
		REQUIRE(xq_post_srq_recv(srq, (uint64_t)i,
					 ep.buf + (size_t)i * SLOT, SLOT,
					 ep.mr->lkey) == 0);
	/* A QP on an SRQ has no receive queue of its own. */
	HX_CHECK_RC(xq_post_recv(qp[0], 99, ep.buf, 64, ep.mr->lkey), EINVAL);
	hx_sync(fd);
	for (n = 0; n < 4 * NQP; n++) {
		struct ibv_wc wc;
		uint32_t tag;
		int q;

		if (hx_poll(ep.rcq, &wc, 1, 10000) != 1) {
			CHECK(!"missing receive completion");
			break;
		}
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV);
		tag = ntohl(wc.imm_data);
		for (q = 0; q < NQP && qp[q]->qp_num != wc.qp_num; q++)
			;
		CHECK(q < NQP && tag / 100 == (uint32_t)q);
		if (q < NQP)
			per_qp[q]++;
		CHECK_EQ(wc.byte_len, 1000 + 1500 * (tag % 100));
		HX_CHECK_PATTERN(ep.buf + wc.wr_id * SLOT, wc.byte_len, tag);
	}
	for (i = 0; i < NQP; i++)
		CHECK_EQ(per_qp[i], 4);
	HX_EXPECT_NONE(ep.rcq, 100);
	hx_sync(fd);
	HX_CHECK_RC(ibv_destroy_srq(srq), EBUSY);
	for (i = 1; i < NQP; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0);
	CHECK(ibv_destroy_qp(ep.qp) == 0);
	ep.qp = NULL;
	HX_CHECK_RC(ibv_destroy_srq(srq), 0);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- mixed: RC and UD QPs on one SRQ ----------------------------------- */

static void mixed_a(int fd)
{
	struct ibv_qp *ud;
	struct ibv_ah *ah;
	struct hx_ep ep;
	uint32_t peer_ud;

	open_ep(&ep, fd);
	ud = xq_create(&ep, IBV_QPT_UD, NULL);
	REQUIRE(xq_ud_rts(ud) == 0);
	hx_ep_connect(&ep);
	hx_send_u64(fd, ud->qp_num);
	peer_ud = (uint32_t)hx_recv_u64(fd);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd);
	hx_fill(ep.buf, 3000, 1);
	hx_fill(ep.buf + SLOT, 700, 2);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 3000, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, 3000);
	HX_CHECK_RC(xq_ud_send(ud, ah, peer_ud, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 2, ep.buf + SLOT, 700,
			       ep.mr->lkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, 700);
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(ibv_destroy_qp(ud) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void mixed_b(int fd)
{
	struct ibv_srq *srq;
	struct ibv_qp *ud;
	struct hx_ep ep;
	int n;

	open_ep(&ep, fd);
	srq = new_srq(&ep, 16);
	xq_new_qp(&ep, IBV_QPT_RC, srq);
	ud = xq_create(&ep, IBV_QPT_UD, srq);
	REQUIRE(xq_ud_rts(ud) == 0);
	hx_ep_connect(&ep);
	(void)hx_recv_u64(fd);
	hx_send_u64(fd, ud->qp_num);
	REQUIRE(xq_post_srq_recv(srq, 0, ep.buf, SLOT, ep.mr->lkey) == 0);
	REQUIRE(xq_post_srq_recv(srq, 1, ep.buf + SLOT, SLOT, ep.mr->lkey) ==
		0);
	hx_sync(fd);
	for (n = 0; n < 2; n++) {
		struct ibv_wc wc;
		uint8_t *b;

		if (hx_poll(ep.rcq, &wc, 1, 10000) != 1) {
			CHECK(!"missing receive completion");
			break;
		}
		CHECK(wc.status == IBV_WC_SUCCESS);
		b = ep.buf + wc.wr_id * SLOT;
		if (wc.qp_num == ud->qp_num) {
			/* UD: GRH first. */
			CHECK(wc.wc_flags & IBV_WC_GRH);
			CHECK_EQ(wc.byte_len, XQ_GRH + 700);
			HX_CHECK_PATTERN(b + XQ_GRH, 700, 2);
		} else {
			CHECK_EQ(wc.qp_num, ep.qp->qp_num);
			CHECK(!(wc.wc_flags & IBV_WC_GRH));
			CHECK_EQ(wc.byte_len, 3000);
			HX_CHECK_PATTERN(b, 3000, 1);
		}
	}
	hx_sync(fd);
	CHECK(ibv_destroy_qp(ud) == 0);
	CHECK(ibv_destroy_qp(ep.qp) == 0);
	ep.qp = NULL;
	CHECK(ibv_destroy_srq(srq) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- limit: the SRQ limit event ----------------------------------------- */

static void send_n(struct hx_ep *ep, int n, uint64_t *id)
{
	for (int i = 0; i < n; i++, (*id)++) {
		HX_CHECK_RC(hx_post_send(ep, IBV_WR_SEND, IBV_SEND_SIGNALED,
					 *id, ep->buf, 64, ep->mr->lkey, 0, 0,
					 0),
			    0);
		HX_EXPECT(ep->scq, NULL, *id, IBV_WC_SUCCESS, IBV_WC_SEND, 64);
	}
}

static void limit_a(int fd)
{
	struct hx_ep ep;
	uint64_t id = 0;
	int step;

	open_ep(&ep, fd);
	hx_ep_connect(&ep);
	/* B tells how many to send at each step. */
	while ((step = (int)hx_recv_u64(fd)) > 0) {
		send_n(&ep, step, &id);
		hx_sync(fd);
	}
	CHECK(hx_ep_close(&ep) == 0);
}

static void limit_b(int fd)
{
	struct ibv_async_event ev;
	struct ibv_srq_attr at;
	struct ibv_srq *srq;
	struct hx_ep ep;
	uint64_t wr = 0;
	int i;

	open_ep(&ep, fd);
	srq = new_srq(&ep, 16);
	xq_new_qp(&ep, IBV_QPT_RC, srq);
	hx_ep_connect(&ep);
	for (i = 0; i < 10; i++, wr++)
		REQUIRE(xq_post_srq_recv(srq, wr, ep.buf + (wr % 64) * 64, 64,
					 ep.mr->lkey) == 0);
	/* A limit above the queue size is refused. */
	at.srq_limit = 17;
	HX_CHECK_RC(ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT), EINVAL);
	at.srq_limit = 5;
	HX_CHECK_RC(ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT), 0);
	CHECK(ibv_query_srq(srq, &at) == 0 && at.srq_limit == 5);

	/* 10 -> 6 posted: not below 5, no event. */
	hx_send_u64(fd, 4);
	hx_sync(fd);
	for (i = 0; i < 4; i++)
		HX_EXPECT(ep.rcq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			  IBV_WC_RECV, 64);
	CHECK_EQ(xq_count_events(ep.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 300), 0);
	/* 6 -> 4: below the limit: one event, for our SRQ, now disarmed. */
	hx_send_u64(fd, 2);
	hx_sync(fd);
	for (i = 4; i < 6; i++)
		HX_EXPECT(ep.rcq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			  IBV_WC_RECV, 64);
	if (CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 3000,
				   &ev, false)))
		CHECK(ev.element.srq == srq);
	CHECK(ibv_query_srq(srq, &at) == 0 && at.srq_limit == 0);
	/* 4 -> 2: disarmed, nothing. */
	hx_send_u64(fd, 2);
	hx_sync(fd);
	for (i = 6; i < 8; i++)
		HX_EXPECT(ep.rcq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			  IBV_WC_RECV, 64);
	CHECK_EQ(xq_count_events(ep.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 300), 0);
	/* Armed again at 6 with 8 posted; 3 more messages: 5 < 6, event. */
	for (i = 0; i < 6; i++, wr++)
		REQUIRE(xq_post_srq_recv(srq, wr, ep.buf + (wr % 64) * 64, 64,
					 ep.mr->lkey) == 0);
	at.srq_limit = 6;
	HX_CHECK_RC(ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT), 0);
	hx_send_u64(fd, 3);
	hx_sync(fd);
	for (i = 8; i < 11; i++)
		HX_EXPECT(ep.rcq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			  IBV_WC_RECV, 64);
	CHECK_EQ(xq_count_events(ep.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 500), 1);
	hx_send_u64(fd, 0);
	CHECK(ibv_destroy_qp(ep.qp) == 0);
	ep.qp = NULL;
	CHECK(ibv_destroy_srq(srq) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- last_wqe: QPs on an SRQ entering ERR ------------------------------- */

static void last_wqe_a(int fd)
{
	struct hx_ep ep;
	uint32_t rkey;

	open_ep(&ep, fd);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B moved its first QP to ERR itself */
	/* A write with a wrong R_Key: B's QP fails with an access error. */
	hx_ep_new_qp(&ep);
	hx_ep_connect(&ep);
	rkey = ep.peer.rkey ^ 0x5a5a5a;
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 1,
				 ep.buf, 64, ep.mr->lkey, ep.peer.addr, rkey,
				 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_ACCESS_ERR, -1, -1);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void last_wqe_b(int fd)
{
	struct ibv_async_event ev;
	struct ibv_qp_attr a;
	struct ibv_srq *srq;
	struct hx_ep ep;

	open_ep(&ep, fd);
	srq = new_srq(&ep, 16);
	xq_new_qp(&ep, IBV_QPT_RC, srq);
	hx_ep_connect(&ep);
	REQUIRE(xq_post_srq_recv(srq, 1, ep.buf, 64, ep.mr->lkey) == 0);
	/* By the consumer: modify_qp to ERR. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	HX_CHECK_RC(ibv_modify_qp(ep.qp, &a, IBV_QP_STATE), 0);
	if (CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, 3000,
				   &ev, false)))
		CHECK(ev.element.qp == ep.qp);
	/* The SRQ's WQE is not flushed: it belongs to the SRQ, not the QP. */
	HX_EXPECT_NONE(ep.rcq, 200);
	hx_sync(fd);
	/* By the transport: a remote access error. */
	xq_new_qp(&ep, IBV_QPT_RC, srq);
	hx_ep_connect(&ep);
	if (CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_QP_ACCESS_ERR, 5000, &ev,
				   false)))
		CHECK(ev.element.qp == ep.qp);
	if (CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, 3000,
				   &ev, false)))
		CHECK(ev.element.qp == ep.qp);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK(ibv_destroy_qp(ep.qp) == 0);
	ep.qp = NULL;
	CHECK(ibv_destroy_srq(srq) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- resize: WQEs posted survive a resize, then the queue is bounded ---- */

static void resize_a(int fd)
{
	struct hx_ep ep;
	uint64_t id = 0;
	int i;

	open_ep(&ep, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	for (i = 0; i < 40; i++) {
		hx_fill(ep.buf + (size_t)i * 256, 256, 300 + i);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED,
					 id, ep.buf + (size_t)i * 256, 256,
					 ep.mr->lkey, 0, 0, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, id, IBV_WC_SUCCESS, IBV_WC_SEND, 256);
		id++;
	}
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void resize_b(int fd)
{
	struct ibv_srq_attr at;
	struct ibv_srq *srq;
	struct hx_ep ep;
	int i;

	open_ep(&ep, fd);
	srq = new_srq(&ep, 8);
	xq_new_qp(&ep, IBV_QPT_RC, srq);
	hx_ep_connect(&ep);
	CHECK(ibv_query_srq(srq, &at) == 0);
	for (i = 0; i < (int)at.max_wr; i++)
		REQUIRE(xq_post_srq_recv(srq, (uint64_t)i,
					 ep.buf + (size_t)i * SLOT, SLOT,
					 ep.mr->lkey) == 0);
	/* Full: ENOMEM. */
	HX_CHECK_RC(xq_post_srq_recv(srq, 999, ep.buf, SLOT, ep.mr->lkey),
		    ENOMEM);
	/* Grow with the WQEs in place, then fill up to 40. */
	at.max_wr = 64;
	HX_CHECK_RC(ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR), 0);
	CHECK(ibv_query_srq(srq, &at) == 0 && at.max_wr >= 64);
	for (; i < 40; i++)
		REQUIRE(xq_post_srq_recv(srq, (uint64_t)i,
					 ep.buf + (size_t)i * SLOT, SLOT,
					 ep.mr->lkey) == 0);
	hx_sync(fd);
	/* Consumed in posting order across the resize. */
	for (i = 0; i < 40; i++)
		if (HX_EXPECT(ep.rcq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			      IBV_WC_RECV, 256))
			HX_CHECK_PATTERN(ep.buf + (size_t)i * SLOT, 256,
					 300 + i);
	hx_sync(fd);
	CHECK(ibv_destroy_qp(ep.qp) == 0);
	ep.qp = NULL;
	CHECK(ibv_destroy_srq(srq) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- destroy_waits: destroy_srq waits for its events to be acked -------- */

struct srq_destroyer {
	struct ibv_srq *srq;
	int rc;
	uint64_t done_ms;
};

static void *srq_destroy_thread(void *arg)
{
	struct srq_destroyer *d = arg;

	d->rc = ibv_destroy_srq(d->srq);
	d->done_ms = hx_now_ms();
	return NULL;
}

static void destroy_waits_a(int fd)
{
	struct hx_ep ep;
	uint64_t id = 0;

	open_ep(&ep, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	send_n(&ep, 1, &id);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void destroy_waits_b(int fd)
{
	struct ibv_async_event ev;
	struct srq_destroyer d;
	struct ibv_srq_attr at;
	struct ibv_srq *srq;
	struct hx_ep ep;
	pthread_t t;
	uint64_t acked;

	open_ep(&ep, fd);
	srq = new_srq(&ep, 4);
	xq_new_qp(&ep, IBV_QPT_RC, srq);
	hx_ep_connect(&ep);
	REQUIRE(xq_post_srq_recv(srq, 1, ep.buf, 64, ep.mr->lkey) == 0);
	REQUIRE(xq_post_srq_recv(srq, 2, ep.buf + 64, 64, ep.mr->lkey) == 0);
	at.srq_limit = 2;
	REQUIRE(ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT) == 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 64);
	if (!CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 3000,
				    &ev, true)))
		hx_die("no event to hold");
	hx_sync(fd);
	CHECK(ibv_destroy_qp(ep.qp) == 0);
	ep.qp = NULL;
	/* Read, not acked: the destroy waits for the ack. */
	memset(&d, 0, sizeof(d));
	d.srq = srq;
	REQUIRE(pthread_create(&t, NULL, srq_destroy_thread, &d) == 0);
	hx_msleep(300);
	CHECK_EQ(d.done_ms, 0);
	acked = hx_now_ms();
	ibv_ack_async_event(&ev);
	pthread_join(t, NULL);
	CHECK_EQ(d.rc, 0);
	CHECK(d.done_ms >= acked);
	CHECK(hx_ep_close(&ep) == 0);
}

/* clang-format off */
static const struct hx_case cases[] = {
	HX_CASE(shared_rc, 30),
	HX_CASE(mixed, 30),
	HX_CASE(limit, 30),
	HX_CASE(last_wqe, 30),
	HX_CASE(resize, 30),
	HX_CASE(destroy_waits, 30),
	{ NULL, NULL, NULL, 0 },
};
/* clang-format on */

HX_MAIN(cases)
