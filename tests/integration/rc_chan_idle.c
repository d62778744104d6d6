/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Message channels at scale (issue #20, paths/chan.c): an empty poll
 * costs the work there is, not the QPs there are.
 *   idle_many  each side connects NQP more RC QPs (rnr_retry 7, so every
 *              one may use a channel) besides its endpoint's, which
 *              carries a few SENDs both ways; then A polls its empty CQ
 *              POLLS times.  Over A's whole life the channel polls looked
 *              at fewer QPs than one per idle QP per poll would give
 *              (chan_visits at close, SOFTVERBS_STATS), and the SENDs
 *              still arrived whole, before and after the idle polls.
 * With SOFTVERBS_FASTPATH=0 there are no channels: chan_visits is 0.
 */
#include <stdlib.h>

#include "harness.h"

#define NQP 500
#define POLLS 5000
#define PINGS 8

static void create_more(struct hx_ep *ep, struct ibv_qp **q, uint32_t *qpn)
{
	int i;

	for (i = 0; i < NQP; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = ep->scq,
			.recv_cq = ep->rcq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4,
				 .max_recv_wr = 4,
				 .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1,
					 .qp_access_flags =
						 IBV_ACCESS_REMOTE_WRITE };

		q[i] = ibv_create_qp(ep->pd, &ia);
		if (!q[i])
			hx_die("ibv_create_qp %d: %s", i, strerror(errno));
		if (ibv_modify_qp(q[i], &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			hx_die("modify_qp INIT %d", i);
		qpn[i] = q[i]->qp_num;
	}
}

/* Connect q[i] to the peer's qpn[i] with the endpoint's attributes. */
static void connect_more(struct hx_ep *ep, struct ibv_qp **q)
{
	static uint32_t peer[NQP];
	struct ibv_qp *mine = ep->qp;
	uint32_t pq = ep->peer.qpn, pp = ep->peer.psn, sp = ep->psn;
	int i;

	hx_recv(ep->fd, peer, sizeof(peer));
	for (i = 0; i < NQP; i++) {
		ep->qp = q[i];
		ep->peer.qpn = peer[i];
		CHECK_EQ(hx_ep_rtr(ep), 0);
		CHECK_EQ(hx_ep_rts(ep), 0);
	}
	ep->qp = mine;
	ep->peer.qpn = pq;
	ep->peer.psn = pp;
	ep->psn = sp;
}

static void open_all(struct hx_ep *ep, int fd, struct ibv_qp **q)
{
	static uint32_t qpn[NQP];
	struct hx_opts o = hx_opts_default();

	setenv("SOFTVERBS_STATS", "1", 1);
	o.max_inline = 64;
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
	create_more(ep, q, qpn);
	hx_send(fd, qpn, sizeof(qpn));
	connect_more(ep, q);
	hx_sync(fd);
}

/* PINGS SENDs of 32 bytes from us, PINGS to us: each compared. */
static void pings(struct hx_ep *ep, uint64_t seed, bool first)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < PINGS; i++)
		CHECK_EQ(hx_post_recv(ep, 100 + i, ep->buf + 4096 + 64 * i, 64,
				      ep->mr->lkey),
			 0);
	hx_sync(ep->fd);
	for (i = 0; i < PINGS; i++) {
		hx_fill(ep->buf + 64 * i, 32, seed + (first ? i : 100 + i));
		CHECK_EQ(hx_post_send(ep, IBV_WR_SEND, IBV_SEND_SIGNALED, i,
				      ep->buf + 64 * i, 32, ep->mr->lkey, 0, 0,
				      0),
			 0);
	}
	for (i = 0; i < 2 * PINGS; i++) {
		CHECK_EQ(hx_poll(ep->scq, &wc, 1, 10000), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_RECV) {
			int k = (int)wc.wr_id - 100;

			CHECK_EQ(wc.byte_len, 32);
			CHECK(k >= 0 && k < PINGS);
			if (k >= 0 && k < PINGS)
				CHECK_EQ(
					hx_verify(ep->buf + 4096 + 64 * k, 32,
						  seed + (first ? 100 + k : k)),
					-1);
		}
	}
}

static void close_all(struct hx_ep *ep, struct ibv_qp **q, bool check)
{
	unsigned long long visits;
	const char *fp = getenv("SOFTVERBS_FASTPATH");
	int i;

	for (i = 0; i < NQP; i++)
		CHECK_EQ(ibv_destroy_qp(q[i]), 0);
	visits = hx_ep_close_counter(ep, "chan_visits");
	if (!check)
		return;
	if (fp && !strcmp(fp, "0"))
		CHECK_EQ(visits, 0);
	else /* one per idle QP per poll would be NQP * POLLS */
		CHECK(visits < (unsigned long long)NQP * POLLS / 20);
}

static void idle_many_a(int fd)
{
	static struct ibv_qp *q[NQP];
	struct hx_ep ep;
	struct ibv_wc wc;
	int i;

	open_all(&ep, fd, q);
	pings(&ep, 7, true);
	hx_sync(fd);
	for (i = 0; i < POLLS; i++)
		CHECK_EQ(ibv_poll_cq(ep.scq, 1, &wc), 0);
	pings(&ep, 9, true);
	hx_sync(fd);
	close_all(&ep, q, true);
}

static void idle_many_b(int fd)
{
	static struct ibv_qp *q[NQP];
	struct hx_ep ep;

	open_all(&ep, fd, q);
	pings(&ep, 7, false);
	hx_sync(fd);
	pings(&ep, 9, false);
	hx_sync(fd);
	close_all(&ep, q, false);
}

static const struct hx_case cases[] = {
	HX_CASE(idle_many, 120),
	{ 0 },
};

HX_MAIN(cases)
