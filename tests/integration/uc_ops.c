/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * UC between two processes: SEND, SEND_WITH_IMM, RDMA_WRITE and
 * RDMA_WRITE_WITH_IMM, single- and multi-packet, bytes compared; READ,
 * atomics and SEND_WITH_INV, which UC does not have, refused at post with
 * EINVAL; no ACKs, so a message without a receive WQE, or violating the
 * responder's access rights, is dropped (IBA: UC has no NAK) while the
 * QP stays in RTS and later messages arrive; SRQs are not for UC.
 */
#include <arpa/inet.h>

#include "xqp.h"

static void open_uc(struct hx_ep *ep, int fd, int qp_access)
{
	struct hx_opts o = hx_opts_default();
	int rc;

	o.buf_len = 4 << 20;
	o.qp_access = qp_access;
	hx_ep_open(ep, &o, fd);
	xq_new_qp(ep, IBV_QPT_UC, NULL);
	hx_ep_exchange(ep);
	rc = xq_connect_qp(ep, ep->qp, ep->peer.qpn, ep->peer.psn);
	if (rc)
		hx_die("UC connect: %s", strerror(rc));
	hx_sync(fd);
}

#define RBUF (1u << 20) /* B: receive area; writes land from 2 MiB on */
#define WOFF (2u << 20)

/* ---- ops --------------------------------------------------------------- */

static const uint32_t send_sizes[] = { 0, 1, 1000, 1024, 1025, 4096, 65536 };
#define NSS (sizeof(send_sizes) / sizeof(send_sizes[0]))

static void ops_a(int fd)
{
	struct hx_ep ep;
	unsigned i;

	open_uc(&ep, fd, IBV_ACCESS_REMOTE_WRITE);
	hx_sync(fd); /* B posted receives */
	for (i = 0; i < NSS; i++) {
		uint32_t len = send_sizes[i];
		bool imm = i & 1;

		hx_fill(ep.buf + i * 65536, len, 10 + i);
		HX_CHECK_RC(
			hx_post_send(&ep,
				     imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				     IBV_SEND_SIGNALED, i, ep.buf + i * 65536,
				     len, ep.mr->lkey, 0, 0, 0x5000 + i),
			0);
		/* UC completes once the message is on the wire. */
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, len);
	}
	/* RDMA WRITE: 256 KiB, then 10000 bytes with immediate data. */
	hx_fill(ep.buf + WOFF, 262144, 77);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 100,
				 ep.buf + WOFF, 262144, ep.mr->lkey,
				 ep.peer.addr + WOFF, ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 100, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 262144);
	hx_fill(ep.buf + WOFF + 262144, 10000, 78);
	HX_CHECK_RC(hx_post_send(
			    &ep, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_SEND_SIGNALED,
			    101, ep.buf + WOFF + 262144, 10000, ep.mr->lkey,
			    ep.peer.addr + WOFF + 262144, ep.peer.rkey, 0xabcd),
		    0);
	HX_EXPECT(ep.scq, NULL, 101, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 10000);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void ops_b(int fd)
{
	struct hx_ep ep;
	struct ibv_wc wc;
	unsigned i;

	open_uc(&ep, fd, IBV_ACCESS_REMOTE_WRITE);
	for (i = 0; i < NSS + 1; i++)
		REQUIRE(hx_post_recv(&ep, i, ep.buf + i * 65536, 65536,
				     ep.mr->lkey) == 0);
	hx_sync(fd);
	for (i = 0; i < NSS; i++) {
		uint32_t len = send_sizes[i];

		if (!HX_EXPECT(ep.rcq, &wc, i, IBV_WC_SUCCESS, IBV_WC_RECV,
			       len))
			continue;
		CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), i & 1);
		if (i & 1)
			CHECK_EQ(ntohl(wc.imm_data), 0x5000 + i);
		CHECK_EQ(wc.qp_num, ep.qp->qp_num);
		HX_CHECK_PATTERN(ep.buf + i * 65536, len, 10 + i);
	}
	/* The WRITE with immediate consumes a receive WQE; plain WRITEs do
	 * not, so this is the only other completion. */
	if (HX_EXPECT(ep.rcq, &wc, NSS, IBV_WC_SUCCESS,
		      IBV_WC_RECV_RDMA_WITH_IMM, 10000))
		CHECK_EQ(ntohl(wc.imm_data), 0xabcd);
	HX_CHECK_PATTERN(ep.buf + WOFF, 262144, 77);
	HX_CHECK_PATTERN(ep.buf + WOFF + 262144, 10000, 78);
	HX_EXPECT_NONE(ep.rcq, 100);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- refused ------------------------------------------------------------ */

static void refused_a(int fd)
{
	/* SEND_WITH_INV: IBA has no UC opcode carrying an IETH.  (Memory
	 * window operations, LOCAL_INV and BIND_MW, are valid on UC.) */
	static const enum ibv_wr_opcode bad_ops[] = {
		IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_SEND_WITH_INV,
	};
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge;
	struct hx_ep ep;
	unsigned i;

	open_uc(&ep, fd, IBV_ACCESS_REMOTE_WRITE);
	sge.addr = (uintptr_t)ep.buf;
	sge.length = 8;
	sge.lkey = ep.mr->lkey;
	for (i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		/* A good WR first: it stays posted, *bad_wr is the second. */
		memset(wr, 0, sizeof(wr));
		wr[0].wr_id = 1000 + i;
		wr[0].sg_list = &sge;
		wr[0].num_sge = 1;
		wr[0].opcode = IBV_WR_RDMA_WRITE;
		wr[0].send_flags = IBV_SEND_SIGNALED;
		wr[0].wr.rdma.remote_addr = ep.peer.addr;
		wr[0].wr.rdma.rkey = ep.peer.rkey;
		wr[0].next = &wr[1];
		wr[1] = wr[0];
		wr[1].next = NULL;
		wr[1].opcode = bad_ops[i];
		bad = NULL;
		HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), EINVAL);
		CHECK(bad == &wr[1]);
		HX_EXPECT(ep.scq, NULL, 1000 + i, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_WRITE, 8);
	}
	HX_EXPECT_NONE(ep.scq, 100);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void refused_b(int fd)
{
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr ia;
	struct ibv_srq *srq;
	struct hx_ep ep;

	open_uc(&ep, fd, IBV_ACCESS_REMOTE_WRITE);
	/* man ibv_create_qp: SRQs are for RC and UD QPs. */
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(ep.pd, &sa);
	REQUIRE(srq != NULL);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = ep.scq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_UC;
	ia.cap.max_send_wr = 1;
	ia.cap.max_send_sge = 1;
	errno = 0;
	CHECK(ibv_create_qp(ep.pd, &ia) == NULL && errno == EINVAL);
	CHECK(ibv_destroy_srq(srq) == 0);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- drops: no receive WQE, no access: the QP goes on ------------------- */

static void drops_a(int fd)
{
	struct hx_ep ep;

	open_uc(&ep, fd, 0);
	hx_fill(ep.buf, 5000, 1);
	hx_fill(ep.buf + 8192, 5000, 2);
	hx_fill(ep.buf + 16384, 3000, 3);
	/* 1: a 5-packet SEND while B has no receive WQE: dropped whole. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 5000, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, 5000);
	hx_sync(fd); /* B saw nothing and posted one receive */
	/* 2: an RDMA WRITE the QP has no right to: dropped, no NAK. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE_WITH_IMM,
				 IBV_SEND_SIGNALED, 2, ep.buf + 8192, 5000,
				 ep.mr->lkey, ep.peer.addr, ep.peer.rkey, 2),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 5000);
	/* 3: a SEND: arrives in the one receive WQE. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 3,
				 ep.buf + 16384, 3000, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_SEND, 3000);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void drops_b(int fd)
{
	struct hx_ep ep;

	open_uc(&ep, fd, 0); /* no remote write */
	HX_EXPECT_NONE(ep.rcq, 300);
	memset(ep.buf, 0, 8192);
	REQUIRE(hx_post_recv(&ep, 7, ep.buf + RBUF, 8192, ep.mr->lkey) == 0);
	hx_sync(fd);
	if (HX_EXPECT(ep.rcq, NULL, 7, IBV_WC_SUCCESS, IBV_WC_RECV, 3000))
		HX_CHECK_PATTERN(ep.buf + RBUF, 3000, 3);
	HX_EXPECT_NONE(ep.rcq, 200);
	/* Nothing of the forbidden write reached memory. */
	for (int i = 0; i < 5000; i++)
		if (ep.buf[i]) {
			CHECK(!"the forbidden RDMA WRITE changed memory");
			break;
		}
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* clang-format off */
static const struct hx_case cases[] = {
	HX_CASE(ops, 30),
	HX_CASE(refused, 30),
	HX_CASE(drops, 30),
	{ NULL, NULL, NULL, 0 },
};
/* clang-format on */

HX_MAIN(cases)
