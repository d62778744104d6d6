/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * CQ moderation between two processes (ibv_modify_cq): the receiver's
 * armed CQ, moderated, tells its completion channel only after cq_count
 * receive completions (count), or cq_period after the first one when
 * fewer come (period).  A sends 64-byte messages of known bytes; B checks
 * what the event finds in its CQ and every byte received.
 */
#include <poll.h>

#include "harness.h"

#define MSG 64
#define COUNT 4
#define ROUNDS 2

static struct hx_opts opts_b(void)
{
	struct hx_opts o = hx_opts_default();

	o.channel = true;
	o.recv_cqe = 64;
	return o;
}

static void moderate(struct ibv_cq *cq, uint16_t count, uint16_t period)
{
	struct ibv_modify_cq_attr ma = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = count, .cq_period = period },
	};

	HX_CHECK_RC(ibv_modify_cq(cq, &ma), 0);
}

/* Wait for the channel's event (the watchdog bounds it) and check it is
 * the receive CQ's. */
static void wait_event(struct hx_ep *ep)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	HX_CHECK_RC(ibv_get_cq_event(ep->ch, &ev_cq, &ev_ctx), 0);
	CHECK(ev_cq == ep->rcq);
	ibv_ack_cq_events(ev_cq, 1);
}

/* Check receive completions wc[0..n) of messages first.. and their bytes
 * (message i in slot i of the buffer, seeded with i). */
static void check_recvs(struct hx_ep *ep, const struct ibv_wc *wc, int n,
			int first)
{
	for (int i = 0; i < n; i++) {
		int m = first + i;

		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[i].opcode, IBV_WC_RECV);
		CHECK_EQ(wc[i].byte_len, MSG);
		CHECK_EQ(wc[i].wr_id, (uint64_t)m);
		CHECK_EQ(hx_verify(ep->buf + m * MSG, MSG, m), -1);
	}
}

static void send_msgs(struct hx_ep *ep, int first, int n)
{
	for (int m = first; m < first + n; m++) {
		hx_fill(ep->buf + m * MSG, MSG, m);
		HX_CHECK_RC(hx_post_send(ep, IBV_WR_SEND, IBV_SEND_SIGNALED, m,
					 ep->buf + m * MSG, MSG, ep->mr->lkey,
					 0, 0, 0),
			    0);
	}
	for (int m = first; m < first + n; m++)
		HX_EXPECT(ep->scq, NULL, m, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
}

static void post_recvs(struct hx_ep *ep, int n)
{
	for (int m = 0; m < n; m++)
		HX_CHECK_RC(hx_post_recv(ep, m, ep->buf + m * MSG, MSG,
					 ep->mr->lkey),
			    0);
}

/* ---- count: the event waits for cq_count completions ------------------- */

static void count_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	for (int r = 0; r < ROUNDS; r++) {
		send_msgs(&ep, r * COUNT, COUNT);
		hx_sync(fd); /* B has taken this round's event */
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void count_b(int fd)
{
	struct hx_opts o = opts_b();
	struct ibv_wc wc[2 * COUNT];
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	post_recvs(&ep, ROUNDS * COUNT);
	/* no period: only the count signals */
	moderate(ep.rcq, COUNT, 0);
	HX_CHECK_RC(ibv_req_notify_cq(ep.rcq, 0), 0);
	hx_ep_connect(&ep);
	for (int r = 0; r < ROUNDS; r++) {
		wait_event(&ep);
		/* The COUNT-th completion raised the event, so all COUNT are
		 * in the CQ already (unmoderated, the first one would). */
		CHECK_EQ(ibv_poll_cq(ep.rcq, 2 * COUNT, wc), COUNT);
		check_recvs(&ep, wc, COUNT, r * COUNT);
		HX_CHECK_RC(ibv_req_notify_cq(ep.rcq, 0), 0);
		hx_sync(fd);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- period: fewer than cq_count completions are signalled in time ----- */

static void period_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	send_msgs(&ep, 0, 1);
	hx_sync(fd);
	send_msgs(&ep, 1, COUNT);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void period_b(int fd)
{
	struct hx_opts o = opts_b();
	struct ibv_wc wc[2 * COUNT];
	struct hx_ep ep;
	int got;

	hx_ep_open(&ep, &o, fd);
	post_recvs(&ep, 1 + COUNT);
	/* a count never reached: only the 2 ms period can signal */
	moderate(ep.rcq, 1000, 2000);
	HX_CHECK_RC(ibv_req_notify_cq(ep.rcq, 0), 0);
	hx_ep_connect(&ep);
	wait_event(&ep);
	CHECK_EQ(ibv_poll_cq(ep.rcq, 2 * COUNT, wc), 1);
	check_recvs(&ep, wc, 1, 0);

	/* Now the count is reachable and the period long: the event still
	 * comes, and the completions of the burst are all received. */
	moderate(ep.rcq, COUNT, 4095);
	HX_CHECK_RC(ibv_req_notify_cq(ep.rcq, 0), 0);
	hx_sync(fd);
	wait_event(&ep);
	got = hx_poll(ep.rcq, wc, COUNT, 10000);
	CHECK_EQ(got, COUNT);
	check_recvs(&ep, wc, got, 1);
	hx_sync(fd);
	/* moderation off again before the CQ goes (the timer thread
	 * stops with the last CQ that has a period) */
	moderate(ep.rcq, 0, 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = { HX_CASE(count, 30),
					HX_CASE(period, 30),
					{ 0 } };

HX_MAIN(cases)
