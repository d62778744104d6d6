/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Affiliated asynchronous events between two processes, each checked for
 * its type and element: IBV_EVENT_COMM_EST (first packet received in RTR,
 * RC and UC, once), IBV_EVENT_SQ_DRAINED (RTS -> SQD with
 * en_sqd_async_notify: nothing new starts, the event once the outstanding
 * WRs are acknowledged, back to RTS resumes; no event without the
 * notify flag), IBV_EVENT_QP_ACCESS_ERR and IBV_EVENT_QP_REQ_ERR at the
 * responder of a bad request, IBV_EVENT_CQ_ERR with IBV_EVENT_QP_FATAL on
 * a CQ overrun; ibv_destroy_qp waits until its events are acked; the async
 * fd works blocking and O_NONBLOCK.  Port and GID events: async_watch.sh.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "xqp.h"

static void open_ep(struct hx_ep *ep, int fd, enum ibv_qp_type type)
{
	struct hx_opts o = hx_opts_default();

	o.buf_len = 8 << 20;
	hx_ep_open(ep, &o, fd);
	if (type != IBV_QPT_RC)
		xq_new_qp(ep, type, NULL);
	hx_ep_exchange(ep);
}

static void to_rts(struct hx_ep *ep)
{
	int rc = xq_connect_qp(ep, ep->qp, ep->peer.qpn, ep->peer.psn);

	if (rc)
		hx_die("connect: %s", strerror(rc));
}

/* ---- comm_est: the first packet in RTR ---------------------------------- */

static void comm_est_a_(int fd, enum ibv_qp_type t)
{
	struct ibv_wc wc[2];
	struct hx_ep ep;

	open_ep(&ep, fd, t);
	to_rts(&ep);
	REQUIRE(hx_post_recv(&ep, 9, ep.buf + 4096, 4096, ep.mr->lkey) == 0);
	hx_sync(fd); /* B is in RTR with a receive posted */
	hx_fill(ep.buf, 2000, 1);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 2000, ep.mr->lkey, 0, 0, 0),
		    0);
	/* B, now in RTS, answers.  Its answer may complete here before our
	 * SEND does (B's ACK and its SEND reach us by different ways on
	 * the fast path): they are on two work queues of one CQ, which
	 * verbs does not order, so either order is right. */
	REQUIRE(ep.rcq == ep.scq);
	CHECK_EQ(hx_poll(ep.scq, wc, 2, 5000), 2);
	if (wc[0].wr_id == 9) {
		struct ibv_wc t = wc[0];

		wc[0] = wc[1];
		wc[1] = t;
	}
	CHECK(wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[0].opcode == IBV_WC_SEND);
	CHECK(wc[1].wr_id == 9 && wc[1].status == IBV_WC_SUCCESS &&
	      wc[1].opcode == IBV_WC_RECV && wc[1].byte_len == 100);
	HX_CHECK_PATTERN(ep.buf + 4096, 100, 2);
	/* The requester side raises no COMM_EST. */
	CHECK_EQ(xq_count_events(ep.ctx, IBV_EVENT_COMM_EST, 200), 0);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void comm_est_b_(int fd, enum ibv_qp_type t)
{
	struct ibv_async_event ev;
	struct ibv_qp_attr a;
	struct hx_ep ep;

	open_ep(&ep, fd, t);
	REQUIRE(hx_post_recv(&ep, 1, ep.buf, 4096, ep.mr->lkey) == 0);
	REQUIRE(hx_post_recv(&ep, 2, ep.buf + 4096, 4096, ep.mr->lkey) == 0);
	/* RTR only. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ep.mtu;
	a.dest_qp_num = ep.peer.qpn;
	a.rq_psn = ep.peer.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = ep.peer.gid;
	a.ah_attr.grh.sgid_index = (uint8_t)ep.gid_index;
	a.ah_attr.port_num = 1;
	REQUIRE(ibv_modify_qp(ep.qp, &a,
			      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				      (t == IBV_QPT_RC ?
					       IBV_QP_MAX_DEST_RD_ATOMIC |
						       IBV_QP_MIN_RNR_TIMER :
					       0)) == 0);
	hx_sync(fd);
	if (HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 2000))
		HX_CHECK_PATTERN(ep.buf, 2000, 1);
	if (CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_COMM_EST, 3000, &ev,
				   false)))
		CHECK(ev.element.qp == ep.qp);
	/* The consumer goes on to RTS and sends. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = ep.psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	REQUIRE(ibv_modify_qp(ep.qp, &a,
			      IBV_QP_STATE | IBV_QP_SQ_PSN |
				      (t == IBV_QPT_RC ?
					       IBV_QP_TIMEOUT |
						       IBV_QP_RETRY_CNT |
						       IBV_QP_RNR_RETRY |
						       IBV_QP_MAX_QP_RD_ATOMIC :
					       0)) == 0);
	hx_fill(ep.buf + 8192, 100, 2);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 3,
				 ep.buf + 8192, 100, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_SEND, 100);
	/* Once only. */
	CHECK_EQ(xq_count_events(ep.ctx, IBV_EVENT_COMM_EST, 200), 0);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void comm_est_rc_a(int fd)
{
	comm_est_a_(fd, IBV_QPT_RC);
}
static void comm_est_rc_b(int fd)
{
	comm_est_b_(fd, IBV_QPT_RC);
}
static void comm_est_uc_a(int fd)
{
	comm_est_a_(fd, IBV_QPT_UC);
}
static void comm_est_uc_b(int fd)
{
	comm_est_b_(fd, IBV_QPT_UC);
}

/* ---- sq_drained: RTS -> SQD -> RTS -------------------------------------- */

#define NW 16
#define WLEN (256u << 10)

static void sqd(struct hx_ep *ep, bool notify)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = notify;
	HX_CHECK_RC(ibv_modify_qp(ep->qp, &a,
				  IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY),
		    0);
}

static void sq_drained_a(int fd)
{
	struct ibv_async_event ev;
	struct ibv_qp_attr a;
	struct ibv_wc wc[NW + 1];
	struct hx_ep ep;
	int i, n1;

	open_ep(&ep, fd, IBV_QPT_RC);
	to_rts(&ep);
	hx_sync(fd);
	for (i = 0; i < NW; i++) {
		hx_fill(ep.buf + (size_t)i * WLEN, WLEN, 500 + i);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, i,
					 ep.buf + (size_t)i * WLEN, WLEN,
					 ep.mr->lkey,
					 ep.peer.addr + (size_t)i * WLEN,
					 ep.peer.rkey, 0),
			    0);
	}
	sqd(&ep, true);
	CHECK_EQ(hx_qp_state(ep.qp), IBV_QPS_SQD);
	/* Posting in SQD is allowed; the WR waits. */
	hx_fill(ep.buf + (size_t)NW * WLEN, 1000, 99);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 100,
				 ep.buf + (size_t)NW * WLEN, 1000, ep.mr->lkey,
				 0, 0, 0),
		    0);
	if (CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_SQ_DRAINED, 10000, &ev,
				   false)))
		CHECK(ev.element.qp == ep.qp);
	/* Drained: what was in progress is complete, in order. */
	n1 = hx_poll(ep.scq, wc, NW + 1, 200);
	hx_log("%d of %d WRITEs were in progress when the drain began", n1, NW);
	for (i = 0; i < n1; i++)
		CHECK(wc[i].wr_id == (uint64_t)i &&
		      wc[i].status == IBV_WC_SUCCESS);
	CHECK(n1 < NW + 1);
	hx_sync(fd); /* B checks nothing more arrives */
	hx_sync(fd);
	CHECK_EQ(hx_poll(ep.scq, wc, 1, 100), 0);
	/* Back to RTS: the rest goes, in order. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	HX_CHECK_RC(ibv_modify_qp(ep.qp, &a, IBV_QP_STATE), 0);
	for (i = n1; i < NW; i++)
		HX_EXPECT(ep.scq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_WRITE, WLEN);
	HX_EXPECT(ep.scq, NULL, 100, IBV_WC_SUCCESS, IBV_WC_SEND, 1000);
	hx_sync(fd);
	/* Without en_sqd_async_notify: SQD, but no event. */
	sqd(&ep, false);
	CHECK_EQ(hx_qp_state(ep.qp), IBV_QPS_SQD);
	CHECK_EQ(xq_count_events(ep.ctx, IBV_EVENT_SQ_DRAINED, 300), 0);
	HX_CHECK_RC(ibv_modify_qp(ep.qp, &a, IBV_QP_STATE), 0);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void sq_drained_b(int fd)
{
	struct hx_ep ep;
	int i;

	open_ep(&ep, fd, IBV_QPT_RC);
	to_rts(&ep);
	REQUIRE(hx_post_recv(&ep, 1, ep.buf + (size_t)NW * WLEN, 4096,
			     ep.mr->lkey) == 0);
	hx_sync(fd);
	hx_sync(fd);
	/* A is drained: its SEND must not have come. */
	HX_EXPECT_NONE(ep.rcq, 300);
	hx_sync(fd);
	if (HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 1000))
		HX_CHECK_PATTERN(ep.buf + (size_t)NW * WLEN, 1000, 99);
	for (i = 0; i < NW; i++)
		HX_CHECK_PATTERN(ep.buf + (size_t)i * WLEN, WLEN, 500 + i);
	hx_sync(fd);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- responder errors: ACCESS_ERR and REQ_ERR --------------------------- */

static void resp_errors_a(int fd)
{
	struct hx_ep ep;

	open_ep(&ep, fd, IBV_QPT_RC);
	to_rts(&ep);
	hx_sync(fd);
	/* A wrong R_Key: remote access error. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 1,
				 ep.buf, 64, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey ^ 0x77, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_ACCESS_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	/* The requester learns from its completion: no async event here. */
	CHECK_EQ(xq_count_events(ep.ctx, IBV_EVENT_QP_ACCESS_ERR, 200), 0);
	hx_sync(fd);
	/* A misaligned atomic: invalid request. */
	hx_ep_new_qp(&ep);
	hx_ep_exchange(&ep);
	to_rts(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 2, ep.buf, ep.mr->lkey,
				   ep.peer.addr + 4, ep.peer.rkey, 1, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void resp_errors_b(int fd)
{
	struct ibv_async_event ev;
	struct hx_ep ep;

	open_ep(&ep, fd, IBV_QPT_RC);
	to_rts(&ep);
	hx_sync(fd);
	if (CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_QP_ACCESS_ERR, 5000, &ev,
				   false)))
		CHECK(ev.element.qp == ep.qp);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	hx_ep_new_qp(&ep);
	hx_ep_exchange(&ep);
	to_rts(&ep);
	hx_sync(fd);
	if (CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_QP_REQ_ERR, 5000, &ev,
				   false)))
		CHECK(ev.element.qp == ep.qp);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* Destroys an object in another thread and notes when it returned. */
struct destroyer {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	int rc;
	uint64_t done_ms;
};

static void *destroy_thread(void *arg)
{
	struct destroyer *d = arg;

	d->rc = d->qp ? ibv_destroy_qp(d->qp) : ibv_destroy_cq(d->cq);
	d->done_ms = hx_now_ms();
	return NULL;
}

/* ---- cq_overrun: CQ_ERR and QP_FATAL, destroy_cq waits for the ack ------ */

static void cq_overrun_a(int fd)
{
	struct hx_ep ep;
	int i;

	open_ep(&ep, fd, IBV_QPT_RC);
	to_rts(&ep);
	hx_sync(fd);
	for (i = 0; i < 8; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, i,
					 ep.buf, 16, ep.mr->lkey, 0, 0, 0),
			    0);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void cq_overrun_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_async_event ev;
	struct hx_ep ep;
	int i;

	o.send_cqe = 1; /* one CQ for both queues, room for very little */
	o.max_recv_wr = 16;
	hx_ep_open(&ep, &o, fd);
	hx_ep_exchange(&ep);
	to_rts(&ep);
	for (i = 0; i < 8; i++)
		REQUIRE(hx_post_recv(&ep, i, ep.buf + i * 64, 64,
				     ep.mr->lkey) == 0);
	hx_sync(fd);
	struct ibv_async_event cq_ev;
	struct destroyer d;
	pthread_t t;
	uint64_t acked;
	bool have;

	have = CHECK_EV(
		xq_wait_event(ep.ctx, IBV_EVENT_CQ_ERR, 5000, &cq_ev, true));
	if (have)
		CHECK(cq_ev.element.cq == ep.scq);
	if (CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_QP_FATAL, 5000, &ev,
				   false)))
		CHECK(ev.element.qp == ep.qp);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK(ibv_destroy_qp(ep.qp) == 0);
	ep.qp = NULL;
	if (have) {
		/* The CQ_ERR event is read but not acked: destroy_cq waits. */
		memset(&d, 0, sizeof(d));
		d.cq = ep.scq;
		REQUIRE(pthread_create(&t, NULL, destroy_thread, &d) == 0);
		hx_msleep(300);
		CHECK_EQ(d.done_ms, 0);
		acked = hx_now_ms();
		ibv_ack_async_event(&cq_ev);
		pthread_join(t, NULL);
		CHECK_EQ(d.rc, 0);
		CHECK(d.done_ms >= acked);
		ep.scq = ep.rcq = NULL;
	}
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- destroy_waits: destroy blocks until the events are acked ----------- */

static void destroy_waits_a(int fd)
{
	struct hx_ep ep;

	open_ep(&ep, fd, IBV_QPT_RC);
	to_rts(&ep);
	hx_sync(fd);
	/* B's receive queue is empty: an access error reaches its QP. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 1,
				 ep.buf, 8, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey ^ 1, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_ACCESS_ERR, -1, -1);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void destroy_waits_b(int fd)
{
	struct ibv_async_event ev;
	struct destroyer d;
	struct hx_ep ep;
	pthread_t t;
	uint64_t acked;

	open_ep(&ep, fd, IBV_QPT_RC);
	to_rts(&ep);
	hx_sync(fd);
	if (!CHECK_EV(xq_wait_event(ep.ctx, IBV_EVENT_QP_ACCESS_ERR, 5000, &ev,
				    true)))
		hx_die("no event to hold");
	/* Event read, not acked: destroy must wait for the ack. */
	memset(&d, 0, sizeof(d));
	d.qp = ep.qp;
	REQUIRE(pthread_create(&t, NULL, destroy_thread, &d) == 0);
	hx_msleep(300);
	CHECK_EQ(d.done_ms, 0);
	acked = hx_now_ms();
	ibv_ack_async_event(&ev);
	pthread_join(t, NULL);
	CHECK_EQ(d.rc, 0);
	CHECK(d.done_ms >= acked);
	ep.qp = NULL;
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- nonblock: the async fd made O_NONBLOCK ----------------------------- */

static void nonblock_a(int fd)
{
	struct hx_ep ep;

	open_ep(&ep, fd, IBV_QPT_RC);
	to_rts(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 1,
				 ep.buf, 8, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey ^ 1, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_ACCESS_ERR, -1, -1);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void nonblock_b(int fd)
{
	struct ibv_async_event ev;
	struct hx_ep ep;
	int fl, rc;
	uint64_t end;

	open_ep(&ep, fd, IBV_QPT_RC);
	to_rts(&ep);
	fl = fcntl(ep.ctx->async_fd, F_GETFL);
	REQUIRE(fcntl(ep.ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0);
	errno = 0;
	CHECK(ibv_get_async_event(ep.ctx, &ev) == -1 && errno == EAGAIN);
	hx_sync(fd);
	end = hx_now_ms() + 5000;
	do {
		rc = ibv_get_async_event(ep.ctx, &ev);
		if (rc)
			hx_msleep(5);
	} while (rc && errno == EAGAIN && hx_now_ms() < end);
	CHECK(rc == 0 && ev.event_type == IBV_EVENT_QP_ACCESS_ERR &&
	      ev.element.qp == ep.qp);
	if (!rc)
		ibv_ack_async_event(&ev);
	errno = 0;
	CHECK(ibv_get_async_event(ep.ctx, &ev) == -1 && errno == EAGAIN);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* clang-format off */
static const struct hx_case cases[] = {
	HX_CASE(comm_est_rc, 30),
	HX_CASE(comm_est_uc, 30),
	HX_CASE(sq_drained, 40),
	HX_CASE(resp_errors, 30),
	HX_CASE(cq_overrun, 30),
	HX_CASE(destroy_waits, 30),
	HX_CASE(nonblock, 30),
	{ NULL, NULL, NULL, 0 },
};
/* clang-format on */

HX_MAIN(cases)
