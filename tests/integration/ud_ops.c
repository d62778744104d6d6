/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * UD between two processes: SEND and SEND_WITH_IMM up to the port MTU with
 * the 40-byte GRH in front of every receive (IPv4 and IPv6 headers checked
 * byte by byte), the completion fields (IBV_WC_GRH, src_qp, slid,
 * pkey_index, byte_len; sl as mlx5 reports it on RoCE v2, the received
 * packet's L3 header type: 2 IPv4, 1 IPv6, which Debian's UCX 1.13
 * ud_verbs reads to find the destination GID in the GRH area and drops
 * the datagram as misaddressed otherwise), ibv_init_ah_from_wc / ibv_create_ah_from_wc on
 * what was received (a reply goes back through them), the Q_Key check and
 * the privileged Q_Key rule, messages above the MTU refused at post,
 * receive buffers too small (the WQE fails, the QP goes on), receive states, several senders, an SRQ,
 * datagrams without a receive WQE dropped, and the AH's traffic class
 * carried to the receiver's GRH area.  Payload bytes are compared end
 * to end.
 */
#include <arpa/inet.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xqp.h"

#define SLOT 8192 /* receive buffer stride: GRH + the largest MTU */

static void open_ud(struct hx_ep *ep, int fd, const char *addr)
{
	struct hx_opts o = hx_opts_default();

	o.gid_addr = addr;
	o.max_send_wr = 64;
	o.max_recv_wr = 64;
	hx_ep_open(ep, &o, fd);
	xq_new_qp(ep, IBV_QPT_UD, NULL);
}

static void ready(struct hx_ep *ep)
{
	int rc = xq_ud_rts(ep->qp);

	if (rc)
		hx_die("UD QP to RTS: %s", strerror(rc));
}

/* UDP payload of a UD SEND ONLY: BTH, DETH, [ImmDt], data, pad, ICRC. */
static uint32_t udp_len(uint32_t len, bool imm)
{
	return 12 + 8 + (imm ? 4 : 0) + ((len + 3) & ~3u) + 4;
}

/* ---- send_recv: sizes, immediate data, GRH and completion fields ------ */

static const uint32_t sizes[] = { 0, 1, 3, 100, 1000, 0 /* mtu */ };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint32_t size_i(struct hx_ep *ep, unsigned i)
{
	return i == NSIZES - 1 ? ep->mtu_bytes : sizes[i];
}

static void send_recv_a(int fd)
{
	struct hx_ep ep;
	struct ibv_ah *ah;
	unsigned i;

	open_ud(&ep, fd, NULL);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd); /* B posted its receives */
	for (i = 0; i < NSIZES; i++) {
		uint32_t len = size_i(&ep, i);
		bool imm = i & 1;

		hx_fill(ep.buf + i * SLOT, len, 100 + i);
		HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY,
				       imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				       IBV_SEND_SIGNALED |
					       (i == NSIZES - 1 ?
							IBV_SEND_SOLICITED :
							0),
				       i, ep.buf + i * SLOT, len, ep.mr->lkey,
				       0x1000 + i),
			    0);
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, len);
	}
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void send_recv_b(int fd)
{
	struct hx_ep ep;
	unsigned i;

	open_ud(&ep, fd, NULL);
	for (i = 0; i < NSIZES; i++)
		REQUIRE(xq_post_recv(ep.qp, i, ep.buf + i * SLOT, SLOT,
				     ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	for (i = 0; i < NSIZES; i++) {
		uint32_t len = size_i(&ep, i);
		bool imm = i & 1;
		struct ibv_wc wc;

		if (!HX_EXPECT(ep.rcq, &wc, i, IBV_WC_SUCCESS, IBV_WC_RECV,
			       XQ_GRH + len))
			continue;
		CHECK(wc.wc_flags & IBV_WC_GRH);
		CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), imm);
		if (imm)
			CHECK_EQ(ntohl(wc.imm_data), 0x1000 + i);
		CHECK_EQ(wc.src_qp, ep.peer.qpn);
		CHECK_EQ(wc.qp_num, ep.qp->qp_num);
		CHECK_EQ(wc.slid, 0);
		CHECK_EQ(wc.sl, 2); /* IPv4 (127.0.0.1) */
		CHECK_EQ(wc.pkey_index, 0);
		CHECK(xq_grh_ipv4_ok(ep.buf + i * SLOT, "127.0.0.1",
				     "127.0.0.1", udp_len(len, imm)));
		HX_CHECK_PATTERN(ep.buf + i * SLOT + XQ_GRH, len, 100 + i);
	}
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- ah_from_wc: a reply through the AH built from the receive -------- */

static void round_trip_a(int fd, const char *addr, bool v6)
{
	struct hx_ep ep;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	open_ud(&ep, fd, addr);
	REQUIRE(xq_post_recv(ep.qp, 77, ep.buf + SLOT, SLOT, ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd);
	hx_fill(ep.buf, 256, 5);
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 1, ep.buf, 256, ep.mr->lkey,
			       0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, 256);
	/* B answers through an AH made from our datagram's GRH. */
	if (HX_EXPECT(ep.rcq, &wc, 77, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + 512)) {
		CHECK_EQ(wc.src_qp, ep.peer.qpn);
		HX_CHECK_PATTERN(ep.buf + SLOT + XQ_GRH, 512, 6);
		if (v6)
			CHECK(xq_grh_ipv6_ok(ep.buf + SLOT, &ep.peer.gid,
					     &ep.gid, udp_len(512, false)));
	}
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void round_trip_b(int fd, const char *addr, bool v6)
{
	struct ibv_ah_attr aa;
	struct hx_ep ep;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	open_ud(&ep, fd, addr);
	REQUIRE(xq_post_recv(ep.qp, 9, ep.buf, SLOT, ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	if (!HX_EXPECT(ep.rcq, &wc, 9, IBV_WC_SUCCESS, IBV_WC_RECV,
		       XQ_GRH + 256))
		hx_die("no datagram to answer");
	HX_CHECK_PATTERN(ep.buf + XQ_GRH, 256, 5);
	/* RoCE v2's L3 header type, as mlx5 puts it in sl. */
	CHECK_EQ(wc.sl, v6 ? 1 : 2);
	if (v6)
		CHECK(xq_grh_ipv6_ok(ep.buf, &ep.peer.gid, &ep.gid,
				     udp_len(256, false)));
	else
		CHECK(xq_grh_ipv4_ok(ep.buf, "127.0.0.1", "127.0.0.1",
				     udp_len(256, false)));
	/* What rdma-core's consumers do with a UD receive. */
	CHECK(ibv_init_ah_from_wc(ep.ctx, 1, &wc, (struct ibv_grh *)ep.buf,
				  &aa) == 0);
	CHECK_EQ(aa.is_global, 1);
	CHECK_EQ(aa.port_num, 1);
	CHECK_EQ(aa.grh.sgid_index, ep.gid_index);
	CHECK(!memcmp(aa.grh.dgid.raw, ep.peer.gid.raw, 16));
	ah = ibv_create_ah_from_wc(ep.pd, &wc, (struct ibv_grh *)ep.buf, 1);
	CHECK(ah != NULL);
	if (ah) {
		hx_fill(ep.buf + SLOT, 512, 6);
		HX_CHECK_RC(xq_ud_send(ep.qp, ah, wc.src_qp, XQ_QKEY,
				       IBV_WR_SEND, IBV_SEND_SIGNALED, 2,
				       ep.buf + SLOT, 512, ep.mr->lkey, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, 512);
	}
	hx_sync(fd);
	if (ah)
		CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void ah_from_wc_a(int fd)
{
	round_trip_a(fd, NULL, false);
}
static void ah_from_wc_b(int fd)
{
	round_trip_b(fd, NULL, false);
}
static void ipv6_a(int fd)
{
	round_trip_a(fd, "::1", true);
}
static void ipv6_b(int fd)
{
	round_trip_b(fd, "::1", true);
}

/* ---- qkey: mismatch dropped, privileged Q_Key ------------------------- */

static void qkey_a(int fd)
{
	static const uint32_t keys[] = {
		0x22222222, /* wrong: dropped */
		0x80000000u | 0x1234, /* privileged: the QP's own (right) key */
		XQ_QKEY, /* right */
		0x11111110, /* wrong by one bit: dropped */
	};
	struct hx_ep ep;
	struct ibv_ah *ah;
	unsigned i;

	open_ud(&ep, fd, NULL);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd);
	for (i = 0; i < 4; i++) {
		hx_fill(ep.buf + i * SLOT, 64, 40 + i);
		HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, keys[i],
				       IBV_WR_SEND, IBV_SEND_SIGNALED, i,
				       ep.buf + i * SLOT, 64, ep.mr->lkey, 0),
			    0);
		/* UD completes locally whether or not the peer takes it. */
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, 64);
	}
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static bool have_cap_net_raw(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	return !syscall(SYS_capget, &h, d) &&
	       (d[CAP_NET_RAW / 32].effective & (1u << (CAP_NET_RAW % 32)));
}

static int drop_cap_net_raw(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
	return (int)syscall(SYS_capset, &h, d);
}

static void qkey_b(int fd)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct ibv_qp *qp2;
	struct hx_ep ep;
	struct ibv_wc wc;
	int i;

	open_ud(&ep, fd, NULL);
	for (i = 0; i < 4; i++)
		REQUIRE(xq_post_recv(ep.qp, 10 + i, ep.buf + i * SLOT, SLOT,
				     ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	/* Only messages 1 and 2 carry our Q_Key: they take the first two
	 * receive WQEs; the mismatches consumed nothing. */
	if (HX_EXPECT(ep.rcq, &wc, 10, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + 64))
		HX_CHECK_PATTERN(ep.buf + XQ_GRH, 64, 41);
	if (HX_EXPECT(ep.rcq, &wc, 11, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + 64))
		HX_CHECK_PATTERN(ep.buf + SLOT + XQ_GRH, 64, 42);
	HX_EXPECT_NONE(ep.rcq, 300);
	hx_sync(fd);

	/* The privileged range of Q_Keys is for privileged processes only. */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = ep.scq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	qp2 = ibv_create_qp(ep.pd, &ia);
	REQUIRE(qp2 != NULL);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x80000001;
	if (have_cap_net_raw()) {
		HX_CHECK_RC(ibv_modify_qp(qp2, &a,
					  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						  IBV_QP_PORT | IBV_QP_QKEY),
			    0);
		HX_CHECK_RC(ibv_modify_qp(qp2, &a, IBV_QP_STATE | IBV_QP_QKEY),
			    0);
		REQUIRE(drop_cap_net_raw() == 0);
	} else {
		/* An ordinary user (make test as one): refused from the
		 * start, then an ordinary Q_Key takes the QP to INIT. */
		HX_CHECK_RC(ibv_modify_qp(qp2, &a,
					  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						  IBV_QP_PORT | IBV_QP_QKEY),
			    EPERM);
		a.qkey = 0x7fffffff;
		HX_CHECK_RC(ibv_modify_qp(qp2, &a,
					  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						  IBV_QP_PORT | IBV_QP_QKEY),
			    0);
		a.qkey = 0x80000001;
	}
	HX_CHECK_RC(ibv_modify_qp(qp2, &a, IBV_QP_STATE | IBV_QP_QKEY), EPERM);
	a.qkey = 0x7fffffff;
	HX_CHECK_RC(ibv_modify_qp(qp2, &a, IBV_QP_STATE | IBV_QP_QKEY), 0);
	CHECK(ibv_destroy_qp(qp2) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- post-time refusals ---------------------------------------------- */

static void refusals_a(int fd)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct hx_ep ep;
	struct ibv_ah *ah;
	struct ibv_port_attr pa;
	uint32_t mtu;

	open_ud(&ep, fd, NULL);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	REQUIRE(ibv_query_port(ep.ctx, 1, &pa) == 0);
	mtu = hx_mtu_bytes(pa.active_mtu);
	hx_sync(fd);

	/* One byte above the port MTU: EINVAL, *bad_wr at that WR, and the
	 * WR before it in the list still posted. */
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)ep.buf;
	sge.length = mtu + 1;
	sge.lkey = ep.mr->lkey;
	wr.wr_id = 50;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = ep.peer.qpn;
	wr.wr.ud.remote_qkey = XQ_QKEY;
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
	CHECK(bad == &wr);
	/* Opcodes UD does not have, and a WR without an address. */
	sge.length = 8;
	wr.opcode = IBV_WR_RDMA_WRITE;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
	wr.opcode = IBV_WR_RDMA_READ;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
	/* Exactly the MTU goes. */
	hx_fill(ep.buf, mtu, 9);
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 51, ep.buf, mtu, ep.mr->lkey,
			       0),
		    0);
	HX_EXPECT(ep.scq, NULL, 51, IBV_WC_SUCCESS, IBV_WC_SEND, mtu);
	HX_EXPECT_NONE(ep.scq, 100);
	hx_send_u64(fd, mtu);
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void refusals_b(int fd)
{
	struct hx_ep ep;
	uint32_t mtu;

	open_ud(&ep, fd, NULL);
	REQUIRE(xq_post_recv(ep.qp, 1, ep.buf, SLOT, ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	mtu = (uint32_t)hx_recv_u64(fd);
	if (HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + mtu))
		HX_CHECK_PATTERN(ep.buf + XQ_GRH, mtu, 9);
	HX_EXPECT_NONE(ep.rcq, 200);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- small_buf: GRH + payload must fit the receive buffer ------------- */

static void small_buf_a(int fd)
{
	struct hx_ep ep;
	struct ibv_ah *ah;

	open_ud(&ep, fd, NULL);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd);
	hx_fill(ep.buf, 100, 1);
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 1, ep.buf, 100, ep.mr->lkey,
			       0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, 100);
	hx_sync(fd); /* B saw the length error */
	hx_fill(ep.buf + SLOT, 50, 2);
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 2, ep.buf + SLOT, 50,
			       ep.mr->lkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, 50);
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void small_buf_b(int fd)
{
	struct hx_ep ep;

	open_ud(&ep, fd, NULL);
	/* Room for the GRH and 99 bytes: one short of the message. */
	REQUIRE(xq_post_recv(ep.qp, 1, ep.buf, XQ_GRH + 99, ep.mr->lkey) == 0);
	REQUIRE(xq_post_recv(ep.qp, 2, ep.buf + SLOT, SLOT, ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	/* The WQE completes in error; a datagram service goes on. */
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_LOC_LEN_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	hx_sync(fd);
	if (HX_EXPECT(ep.rcq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + 50))
		HX_CHECK_PATTERN(ep.buf + SLOT + XQ_GRH, 50, 2);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- states: INIT drops, RTR receives, RTR cannot send ---------------- */

static void states_a(int fd)
{
	struct hx_ep ep;
	struct ibv_ah *ah;

	open_ud(&ep, fd, NULL);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd); /* B is in INIT */
	hx_fill(ep.buf, 32, 1);
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 1, ep.buf, 32, ep.mr->lkey,
			       0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, 32);
	hx_sync(fd); /* B is in RTR */
	hx_fill(ep.buf + SLOT, 32, 2);
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 2, ep.buf + SLOT, 32,
			       ep.mr->lkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, 32);
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void states_b(int fd)
{
	struct hx_ep ep;
	struct ibv_ah *ah;

	open_ud(&ep, fd, NULL);
	REQUIRE(xq_post_recv(ep.qp, 1, ep.buf, SLOT, ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	hx_sync(fd);
	HX_EXPECT_NONE(ep.rcq, 300); /* INIT: dropped */
	REQUIRE(xq_ud_rtr(ep.qp) == 0);
	ah = xq_ah(&ep, &ep.peer.gid);
	/* RTR receives but does not send (IBA). */
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY, IBV_WR_SEND, 0,
			       9, ep.buf, 8, ep.mr->lkey, 0),
		    EINVAL);
	hx_sync(fd);
	if (HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + 32))
		HX_CHECK_PATTERN(ep.buf + XQ_GRH, 32, 2);
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- ah_gone: the AH destroyed while sends through it are queued ------ */

/* An HCA copies the address vector into the WQE at post time, so an
 * application may destroy the AH before its sends leave (mckey does, then
 * destroys the QP).  A's sends wait in SQD while the AH is destroyed and
 * another AH takes its memory; back in RTS they must still reach B, byte
 * for byte.  A second batch waits in SQD while the AH and then the QP are
 * destroyed: nothing may touch the freed AH (the ASan build sees it). */
#define GONE_N 8

static void to_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = { .qp_state = st };

	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
}

static void ah_gone_a(int fd)
{
	struct ibv_ah *ah, *other;
	struct ibv_qp *q2;
	struct hx_ep ep;
	int i;

	open_ud(&ep, fd, NULL);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd); /* B posted its receives */
	to_state(ep.qp, IBV_QPS_SQD);
	for (i = 0; i < GONE_N; i++) {
		hx_fill(ep.buf + i * SLOT, 300, 700 + i);
		HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY,
				       IBV_WR_SEND, IBV_SEND_SIGNALED, i,
				       ep.buf + i * SLOT, 300, ep.mr->lkey, 0),
			    0);
	}
	CHECK(ibv_destroy_ah(ah) == 0);
	other = xq_ah(&ep, &ep.gid); /* likely in the freed AH's memory */
	HX_EXPECT_NONE(ep.scq, 100); /* SQD: nothing started */
	to_state(ep.qp, IBV_QPS_RTS);
	for (i = 0; i < GONE_N; i++)
		HX_EXPECT(ep.scq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			  IBV_WC_SEND, 300);
	hx_sync(fd); /* B has them all */
	q2 = xq_create(&ep, IBV_QPT_UD, NULL);
	REQUIRE(xq_ud_rts(q2) == 0);
	to_state(q2, IBV_QPS_SQD);
	ah = xq_ah(&ep, &ep.peer.gid);
	for (i = 0; i < GONE_N; i++)
		HX_CHECK_RC(xq_ud_send(q2, ah, ep.peer.qpn, XQ_QKEY,
				       IBV_WR_SEND, 0, 100 + i, ep.buf, 300,
				       ep.mr->lkey, 0),
			    0);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(ibv_destroy_qp(q2) == 0);
	CHECK(ibv_destroy_ah(other) == 0);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void ah_gone_b(int fd)
{
	struct hx_ep ep;
	int i;

	open_ud(&ep, fd, NULL);
	for (i = 0; i < GONE_N; i++)
		REQUIRE(xq_post_recv(ep.qp, i, ep.buf + i * SLOT, SLOT,
				     ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	for (i = 0; i < GONE_N; i++) {
		if (HX_EXPECT(ep.rcq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			      IBV_WC_RECV, XQ_GRH + 300))
			HX_CHECK_PATTERN(ep.buf + i * SLOT + XQ_GRH, 300,
					 700 + i);
	}
	hx_sync(fd);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- many_senders: src_qp tells the senders apart --------------------- */

#define NSEND 3

static void many_senders_a(int fd)
{
	struct ibv_qp *qp[NSEND];
	struct hx_ep ep;
	struct ibv_ah *ah;
	int i;

	open_ud(&ep, fd, NULL);
	qp[0] = ep.qp;
	for (i = 1; i < NSEND; i++) {
		qp[i] = xq_create(&ep, IBV_QPT_UD, NULL);
		REQUIRE(xq_ud_rts(qp[i]) == 0);
	}
	hx_ep_exchange(&ep);
	ready(&ep);
	for (i = 0; i < NSEND; i++)
		hx_send_u64(fd, qp[i]->qp_num);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd);
	for (i = 0; i < NSEND; i++) {
		hx_fill(ep.buf + i * SLOT, 200, qp[i]->qp_num);
		HX_CHECK_RC(xq_ud_send(qp[i], ah, ep.peer.qpn, XQ_QKEY,
				       IBV_WR_SEND, IBV_SEND_SIGNALED, i,
				       ep.buf + i * SLOT, 200, ep.mr->lkey, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, 200);
	}
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	for (i = 1; i < NSEND; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void many_senders_b(int fd)
{
	uint32_t qpn[NSEND], seen = 0;
	struct hx_ep ep;
	int i, j;

	open_ud(&ep, fd, NULL);
	for (i = 0; i < NSEND; i++)
		REQUIRE(xq_post_recv(ep.qp, i, ep.buf + i * SLOT, SLOT,
				     ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	for (i = 0; i < NSEND; i++)
		qpn[i] = (uint32_t)hx_recv_u64(fd);
	hx_sync(fd);
	for (i = 0; i < NSEND; i++) {
		struct ibv_wc wc;

		if (!HX_EXPECT(ep.rcq, &wc, (uint64_t)i, IBV_WC_SUCCESS,
			       IBV_WC_RECV, XQ_GRH + 200))
			continue;
		for (j = 0; j < NSEND && qpn[j] != wc.src_qp; j++)
			;
		CHECK(j < NSEND);
		if (j < NSEND) {
			seen |= 1u << j;
			/* The payload is the one that QP sent. */
			HX_CHECK_PATTERN(ep.buf + i * SLOT + XQ_GRH, 200,
					 qpn[j]);
		}
	}
	CHECK_EQ(seen, (1u << NSEND) - 1);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- srq: a UD QP receiving from an SRQ ------------------------------- */

static void srq_a(int fd)
{
	struct hx_ep ep;
	struct ibv_ah *ah;
	int i;

	open_ud(&ep, fd, NULL);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd);
	for (i = 0; i < 4; i++) {
		hx_fill(ep.buf + i * SLOT, 300 + i, 60 + i);
		HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY,
				       IBV_WR_SEND_WITH_IMM, IBV_SEND_SIGNALED,
				       i, ep.buf + i * SLOT, 300 + i,
				       ep.mr->lkey, i),
			    0);
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND,
			  300 + i);
	}
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void srq_b(int fd)
{
	struct ibv_srq_init_attr sa;
	struct ibv_srq *srq;
	struct hx_ep ep;
	int i;

	open_ud(&ep, fd, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(ep.pd, &sa);
	REQUIRE(srq != NULL);
	xq_new_qp(&ep, IBV_QPT_UD, srq);
	for (i = 0; i < 4; i++)
		REQUIRE(xq_post_srq_recv(srq, 100 + i, ep.buf + i * SLOT, SLOT,
					 ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	for (i = 0; i < 4; i++) {
		struct ibv_wc wc;

		if (!HX_EXPECT(ep.rcq, &wc, 100 + i, IBV_WC_SUCCESS,
			       IBV_WC_RECV, XQ_GRH + 300 + i))
			continue;
		CHECK_EQ(wc.qp_num, ep.qp->qp_num);
		CHECK_EQ(ntohl(wc.imm_data), i);
		HX_CHECK_PATTERN(ep.buf + i * SLOT + XQ_GRH, 300 + i, 60 + i);
	}
	hx_sync(fd);
	/* The SRQ is in use until its QP is gone. */
	HX_CHECK_RC(ibv_destroy_srq(srq), EBUSY);
	CHECK(ibv_destroy_qp(ep.qp) == 0);
	ep.qp = NULL;
	HX_CHECK_RC(ibv_destroy_srq(srq), 0);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- no_wqe: without a receive WQE the datagram is dropped ------------ */

static void no_wqe_a(int fd)
{
	struct hx_ep ep;
	struct ibv_ah *ah;

	open_ud(&ep, fd, NULL);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd);
	hx_fill(ep.buf, 64, 1);
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 1, ep.buf, 64, ep.mr->lkey,
			       0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, 64);
	hx_sync(fd); /* B posted a receive now */
	hx_fill(ep.buf + SLOT, 64, 2);
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, ep.peer.qpn, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 2, ep.buf + SLOT, 64,
			       ep.mr->lkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, 64);
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void no_wqe_b(int fd)
{
	struct hx_ep ep;

	open_ud(&ep, fd, NULL);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	hx_msleep(300); /* the first datagram arrives and finds no WQE */
	REQUIRE(xq_post_recv(ep.qp, 5, ep.buf, SLOT, ep.mr->lkey) == 0);
	hx_sync(fd);
	if (HX_EXPECT(ep.rcq, NULL, 5, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + 64))
		HX_CHECK_PATTERN(ep.buf + XQ_GRH, 64, 2);
	HX_EXPECT_NONE(ep.rcq, 200);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- wr_api: UD through ibv_create_qp_ex and the ibv_wr_* calls -------- */

static void wr_api_a(int fd)
{
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp_attr a;
	struct ibv_qp_ex *qx;
	struct ibv_ah *ah;
	struct hx_ep ep;

	open_ud(&ep, fd, NULL);
	CHECK(ibv_destroy_qp(ep.qp) == 0);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ep.scq;
	ia.recv_cq = ep.rcq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.pd = ep.pd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	ep.qp = ibv_create_qp_ex(ep.ctx, &ia);
	REQUIRE(ep.qp != NULL);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = XQ_QKEY;
	REQUIRE(ibv_modify_qp(ep.qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_QKEY) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	qx = ibv_qp_to_qp_ex(ep.qp);
	REQUIRE(qx != NULL);
	hx_sync(fd);
	hx_fill(ep.buf, 500, 71);
	hx_fill(ep.buf + SLOT, 600, 72);
	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_ud_addr(qx, ah, ep.peer.qpn, XQ_QKEY);
	ibv_wr_set_sge(qx, ep.mr->lkey, (uintptr_t)ep.buf, 500);
	qx->wr_id = 2;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(qx, htonl(0xfeed));
	ibv_wr_set_ud_addr(qx, ah, ep.peer.qpn, XQ_QKEY);
	ibv_wr_set_sge(qx, ep.mr->lkey, (uintptr_t)(ep.buf + SLOT), 600);
	HX_CHECK_RC(ibv_wr_complete(qx), 0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, 500);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, 600);
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void wr_api_b(int fd)
{
	struct hx_ep ep;
	struct ibv_wc wc;

	open_ud(&ep, fd, NULL);
	REQUIRE(xq_post_recv(ep.qp, 1, ep.buf, SLOT, ep.mr->lkey) == 0);
	REQUIRE(xq_post_recv(ep.qp, 2, ep.buf + SLOT, SLOT, ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	if (HX_EXPECT(ep.rcq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + 500)) {
		CHECK_EQ(wc.src_qp, ep.peer.qpn);
		HX_CHECK_PATTERN(ep.buf + XQ_GRH, 500, 71);
	}
	if (HX_EXPECT(ep.rcq, &wc, 2, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + 600)) {
		CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
		CHECK_EQ(ntohl(wc.imm_data), 0xfeed);
		HX_CHECK_PATTERN(ep.buf + SLOT + XQ_GRH, 600, 72);
	}
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* ---- tclass: the AH's traffic class on the wire and in the GRH -------
 *
 * A sends through an AH with grh.traffic_class TC_A, then through one
 * with 0; B finds each in the IPv4 TOS / IPv6 traffic class of the GRH
 * area (rxe copies the received IP header there) and in the AH
 * ibv_init_ah_from_wc makes of it, answers through an AH made from the
 * first with its own TC_B, and A finds TC_B.  With HX_NETNS_A/B
 * (tclass_wire.sh) each side enters its namespace and uses HX_ADDR_A/B
 * (HX_ADDR6_A/B for IPv6); that script also reads the bytes on the
 * veth. */

#define TC_A 0xb8 /* DSCP 46 (expedited forwarding) */
#define TC_B 0x48 /* DSCP 18 (AF21) */

static uint8_t grh_tclass(const uint8_t *grh, bool v6)
{
	const struct ibv_grh *g = (const void *)grh;

	if (!v6)
		return grh[20 + 1]; /* the IPv4 header's TOS */
	return (uint8_t)(be32toh(g->version_tclass_flow) >> 20);
}

static void open_tc(struct hx_ep *ep, int fd, bool b, bool v6)
{
	const char *ns = getenv(b ? "HX_NETNS_B" : "HX_NETNS_A");
	const char *addr = getenv(b ? (v6 ? "HX_ADDR6_B" : "HX_ADDR_B") :
				      (v6 ? "HX_ADDR6_A" : "HX_ADDR_A"));

	if (ns && *ns)
		hx_enter_netns(ns);
	else
		addr = v6 ? "::1" : NULL;
	open_ud(ep, fd, addr);
}

static struct ibv_ah *ah_tc(struct hx_ep *ep, uint8_t tc)
{
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = ep->peer.gid;
	aa.grh.sgid_index = (uint8_t)ep->gid_index;
	aa.grh.hop_limit = 64;
	aa.grh.traffic_class = tc;
	aa.port_num = 1;
	ah = ibv_create_ah(ep->pd, &aa);
	if (!ah)
		hx_die("ibv_create_ah: %s", strerror(errno));
	return ah;
}

static void tc_a(int fd, bool v6)
{
	struct ibv_ah *ah[2];
	struct hx_ep ep;
	struct ibv_wc wc;
	int i;

	open_tc(&ep, fd, false, v6);
	REQUIRE(xq_post_recv(ep.qp, 77, ep.buf + 2 * SLOT, SLOT, ep.mr->lkey) ==
		0);
	hx_ep_exchange(&ep);
	ready(&ep);
	ah[0] = ah_tc(&ep, TC_A);
	ah[1] = ah_tc(&ep, 0);
	hx_sync(fd); /* B posted its receives */
	for (i = 0; i < 2; i++) {
		hx_fill(ep.buf + i * SLOT, 200, 30 + i);
		HX_CHECK_RC(xq_ud_send(ep.qp, ah[i], ep.peer.qpn, XQ_QKEY,
				       IBV_WR_SEND, IBV_SEND_SIGNALED, i,
				       ep.buf + i * SLOT, 200, ep.mr->lkey, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, 200);
	}
	if (HX_EXPECT(ep.rcq, &wc, 77, IBV_WC_SUCCESS, IBV_WC_RECV,
		      XQ_GRH + 300)) {
		HX_CHECK_PATTERN(ep.buf + 2 * SLOT + XQ_GRH, 300, 33);
		CHECK_EQ(grh_tclass(ep.buf + 2 * SLOT, v6), TC_B);
	}
	hx_sync(fd);
	for (i = 0; i < 2; i++)
		CHECK(ibv_destroy_ah(ah[i]) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void tc_b(int fd, bool v6)
{
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;
	struct hx_ep ep;
	struct ibv_wc wc[2];
	static const uint8_t want[2] = { TC_A, 0 };
	int i;

	open_tc(&ep, fd, true, v6);
	for (i = 0; i < 2; i++)
		REQUIRE(xq_post_recv(ep.qp, i, ep.buf + i * SLOT, SLOT,
				     ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	ready(&ep);
	hx_sync(fd);
	for (i = 0; i < 2; i++) {
		if (!HX_EXPECT(ep.rcq, &wc[i], i, IBV_WC_SUCCESS, IBV_WC_RECV,
			       XQ_GRH + 200))
			hx_die("datagram %d missing", i);
		HX_CHECK_PATTERN(ep.buf + i * SLOT + XQ_GRH, 200, 30 + i);
		CHECK_EQ(grh_tclass(ep.buf + i * SLOT, v6), want[i]);
		CHECK(ibv_init_ah_from_wc(ep.ctx, 1, &wc[i],
					  (struct ibv_grh *)(ep.buf + i * SLOT),
					  &aa) == 0);
		CHECK_EQ(aa.grh.traffic_class, want[i]);
	}
	/* The answer: the received AH with our own traffic class. */
	CHECK(ibv_init_ah_from_wc(ep.ctx, 1, &wc[0], (struct ibv_grh *)ep.buf,
				  &aa) == 0);
	aa.grh.traffic_class = TC_B;
	ah = ibv_create_ah(ep.pd, &aa);
	REQUIRE(ah != NULL);
	hx_fill(ep.buf + 2 * SLOT, 300, 33);
	HX_CHECK_RC(xq_ud_send(ep.qp, ah, wc[0].src_qp, XQ_QKEY, IBV_WR_SEND,
			       IBV_SEND_SIGNALED, 2, ep.buf + 2 * SLOT, 300,
			       ep.mr->lkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, 300);
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void tclass_a(int fd)
{
	tc_a(fd, false);
}
static void tclass_b(int fd)
{
	tc_b(fd, false);
}
static void tclass6_a(int fd)
{
	tc_a(fd, true);
}
static void tclass6_b(int fd)
{
	tc_b(fd, true);
}

/* clang-format off */
static const struct hx_case cases[] = {
	HX_CASE(send_recv, 30),
	HX_CASE(ah_from_wc, 30),
	HX_CASE(ipv6, 30),
	HX_CASE(qkey, 30),
	HX_CASE(refusals, 30),
	HX_CASE(small_buf, 30),
	HX_CASE(states, 30),
	HX_CASE(many_senders, 30),
	HX_CASE(ah_gone, 30),
	HX_CASE(srq, 30),
	HX_CASE(no_wqe, 30),
	HX_CASE(wr_api, 30),
	HX_CASE(tclass, 30),
	HX_CASE(tclass6, 30),
	{ NULL, NULL, NULL, 0 },
};
/* clang-format on */

HX_MAIN(cases)
