/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Strict mode (SOFTVERBS_STRICT=1, engine/diag/strict.h, docs/strict.md): each
 * misuse it reports, between two processes, with the correct use first
 * (no "softverbs strict:" line) and then the wrong one (its line, with
 * the rule and the values).  Each process sets the variable and logs to a
 * file of its own before it first uses the library.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>

#include "harness.h"
#include "logcap.h"

#define STRICT "softverbs strict:"

static void strict_open(struct hx_ep *ep, struct hx_opts *o, int fd)
{
	setenv("SOFTVERBS_STRICT", "1", 1);
	log_to_file("rc_strict");
	hx_ep_open(ep, o, fd);
}

/* A peer that connects, waits for A to finish, and closes. */
static void peer_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	strict_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	EXPECT_NO_LOG(take_log(), STRICT);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

/* ---- GID family, and index 0 as on hardware -------------------------------- */

static bool link_local(const union ibv_gid *g)
{
	return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

static void gid_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_gid_entry tab[64];
	struct ibv_ah_attr aa;
	struct hx_ep ep;
	union ibv_gid g0;
	char want[400], s[INET6_ADDRSTRLEN];
	bool any_ll = false;
	int v6, n;

	strict_open(&ep, &o, fd);
	/* Index 0 is the port's fe80:: link-local GID when there is one
	 * (mlx5, rxe), not the loopback address it is without strict mode. */
	n = (int)ibv_query_gid_table(ep.ctx, tab, 64, 0);
	REQUIRE(n > 0);
	for (int i = 0; i < n; i++)
		any_ll |= link_local(&tab[i].gid);
	REQUIRE(ibv_query_gid(ep.ctx, 1, 0, &g0) == 0);
	if (any_ll)
		CHECK(link_local(&g0));
	v6 = any_ll ? 0 : hx_gid_index_of(ep.ctx, "::1");
	REQUIRE(v6 >= 0);
	REQUIRE(ibv_query_gid(ep.ctx, 1, v6, &g0) == 0);
	inet_ntop(AF_INET6, g0.raw, s, sizeof(s));

	/* Correct: both ends on 127.0.0.1, an IPv4 GID. */
	hx_ep_connect(&ep);
	EXPECT_NO_LOG(take_log(), STRICT);

	/* An address handle from an IPv6 GID to the peer's IPv4 one. */
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.hop_limit = 64;
	aa.grh.dgid = ep.peer.gid;
	aa.grh.sgid_index = (uint8_t)v6;
	errno = 0;
	CHECK(ibv_create_ah(ep.pd, &aa) == NULL);
	CHECK_EQ(errno, EINVAL);
	snprintf(want, sizeof(want),
		 STRICT " gid-family: ibv_create_ah: sgid_index %d is %s (IPv6)"
			" but grh.dgid ::ffff:127.0.0.1 is IPv4",
		 v6, s);
	EXPECT_LOG(take_log(), want, "(refused: EINVAL)");

	/* The same at RTR: code hard-wired to index 0. */
	hx_ep_new_qp(&ep);
	ep.gid_index = v6;
	CHECK_EQ(hx_ep_rtr(&ep), EINVAL);
	snprintf(want, sizeof(want),
		 STRICT " gid-family: ibv_modify_qp: QP 0x%06x: attr.ah_attr:"
			" sgid_index %d is %s (IPv6)",
		 ep.qp->qp_num, v6, s);
	{
		const char *t = take_log();

		if (v6 == 0)
			EXPECT_LOG(
				t, want,
				"index 0 is the port's fe80:: link-local GID on mlx5 and rxe");
		else
			EXPECT_LOG(t, want);
		/* Refused, so not also warned as without strict mode. */
		EXPECT_NO_LOG(t, "softverbs warning:");
	}

	/* The loopback GID towards a real address: no HCA has it. */
	{
		static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };
		int lo = hx_gid_index_of(ep.ctx, "127.0.0.1"), real = -1;
		char d[INET6_ADDRSTRLEN];

		for (int i = 0; i < n && real < 0; i++)
			if (!memcmp(tab[i].gid.raw, pfx, 12) &&
			    tab[i].gid.raw[12] != 127)
				real = (int)tab[i].gid_index;
		if (lo >= 0 && real >= 0) {
			hx_ep_new_qp(&ep);
			ep.gid_index = lo;
			REQUIRE(ibv_query_gid(ep.ctx, 1, real, &ep.peer.gid) ==
				0);
			inet_ntop(AF_INET6, ep.peer.gid.raw, d, sizeof(d));
			CHECK_EQ(hx_ep_rtr(&ep), EINVAL);
			snprintf(
				want, sizeof(want),
				STRICT
				" gid-loopback: ibv_modify_qp: QP 0x%06x: attr.ah_attr: sgid_index %d is ::ffff:127.0.0.1, grh.dgid %s: a loopback GID on one side only",
				ep.qp->qp_num, lo, d);
			EXPECT_LOG(take_log(), want, "(refused: EINVAL)");
		} else {
			hx_log("no loopback and real IPv4 GIDs: gid-loopback not checked");
		}
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

#define gid_b peer_b

/* ---- a region deregistered under a posted WR ------------------------------- */

static void dereg_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *mr;
	struct hx_ep ep;
	char want[200];

	strict_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	/* Correct: deregistered after the receive completed. */
	mr = ibv_reg_mr(ep.pd, ep.buf + 65536, 4096, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	HX_CHECK_RC(hx_post_recv(&ep, 0x10, ep.buf + 65536, 4096, mr->lkey), 0);
	hx_sync(fd); /* B sends */
	HX_EXPECT(ep.rcq, NULL, 0x10, IBV_WC_SUCCESS, IBV_WC_RECV, 64);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	EXPECT_NO_LOG(take_log(), STRICT);

	/* A receive still posted. */
	mr = ibv_reg_mr(ep.pd, ep.buf + 65536, 4096, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	HX_CHECK_RC(hx_post_recv(&ep, 0x11, ep.buf + 65536, 4096, mr->lkey), 0);
	snprintf(want, sizeof(want),
		 STRICT " dereg-outstanding: QP 0x%06x: ibv_dereg_mr of lkey"
			" 0x%x while receive wr_id 0x11 (sg_list[0]) is posted",
		 ep.qp->qp_num, mr->lkey);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	EXPECT_LOG(take_log(), want);

	/* A SEND the peer has no receive for (rnr_retry 7: it waits). */
	mr = ibv_reg_mr(ep.pd, ep.buf + 131072, 65536, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x12,
				 ep.buf + 131072, 65536, mr->lkey, 0, 0, 0),
		    0);
	snprintf(want, sizeof(want),
		 STRICT " dereg-outstanding: QP 0x%06x: ibv_dereg_mr of lkey"
			" 0x%x while send wr_id 0x12 (IBV_WR_SEND, sg_list[0])"
			" is outstanding",
		 ep.qp->qp_num, mr->lkey);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	EXPECT_LOG(take_log(), want);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void dereg_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	strict_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x90,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x90, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

/* ---- a send buffer written while its WR is outstanding ---------------------- */

#define REUSE_LEN 65536

static void reuse_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[200];

	strict_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	/* Correct: written again after the completion. */
	hx_fill(ep.buf, REUSE_LEN, 1);
	hx_sync(fd); /* B's receive is posted */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x21,
				 ep.buf, REUSE_LEN, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x21, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_fill(ep.buf, REUSE_LEN, 2);
	EXPECT_NO_LOG(take_log(), STRICT);

	/* Wrong: written while the peer has no receive for it yet. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x22,
				 ep.buf, REUSE_LEN, ep.mr->lkey, 0, 0, 0),
		    0);
	hx_fill(ep.buf, REUSE_LEN, 3);
	hx_sync(fd); /* B posts its receive */
	HX_EXPECT(ep.scq, NULL, 0x22, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	snprintf(want, sizeof(want),
		 STRICT
		 " buffer-reused: QP 0x%06x: wr_id 0x22 IBV_WR_SEND: its"
		 " %d bytes of data changed between ibv_post_send and its"
		 " completion",
		 ep.qp->qp_num, REUSE_LEN);
	EXPECT_LOG(take_log(), want);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void reuse_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	strict_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 0x80, ep.buf, REUSE_LEN, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 0x80, IBV_WC_SUCCESS, IBV_WC_RECV, REUSE_LEN);
	HX_CHECK_PATTERN(ep.buf, REUSE_LEN, 1);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_recv(&ep, 0x81, ep.buf, REUSE_LEN, ep.mr->lkey), 0);
	HX_EXPECT(ep.rcq, NULL, 0x81, IBV_WC_SUCCESS, IBV_WC_RECV, REUSE_LEN);
	hx_sync(fd);
	EXPECT_NO_LOG(take_log(), STRICT);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

/* ---- more unsignaled WRs in a row than the send queue holds ----------------- */

#define SQ_DEPTH 8

static void unsignaled_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[200];
	int i, rc = 0;

	o.max_send_wr = SQ_DEPTH;
	strict_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	/* Correct: one signaled WR in every SQ_DEPTH, its CQE polled. */
	for (int round = 0; round < 3; round++) {
		for (i = 0; i < SQ_DEPTH; i++)
			HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
						 i == SQ_DEPTH - 1 ?
							 IBV_SEND_SIGNALED :
							 0,
						 0x100 + i, ep.buf, 64,
						 ep.mr->lkey, ep.peer.addr,
						 ep.peer.rkey, 0),
				    0);
		HX_EXPECT(ep.scq, NULL, 0x100 + SQ_DEPTH - 1, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_WRITE, -1);
	}
	EXPECT_NO_LOG(take_log(), STRICT);

	/* Wrong: none signaled; the WR after SQ_DEPTH of them is refused. */
	for (i = 0; i < SQ_DEPTH + 1; i++) {
		rc = hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 0x200 + i, ep.buf,
				  64, ep.mr->lkey, ep.peer.addr, ep.peer.rkey,
				  0);
		if (rc)
			break;
	}
	CHECK_EQ(i, SQ_DEPTH);
	CHECK_EQ(rc, ENOMEM);
	snprintf(want, sizeof(want),
		 STRICT " unsignaled-overflow: QP 0x%06x: wr_id 0x%x would be"
			" unsignaled WR number %d in a row, but the send queue"
			" holds max_send_wr %d",
		 ep.qp->qp_num, 0x200 + SQ_DEPTH, SQ_DEPTH + 1, SQ_DEPTH);
	EXPECT_LOG(take_log(), want);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

#define unsignaled_b peer_b

/* ---- posting in a state an HCA takes but does not execute ------------------ */

static void state_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct hx_ep ep;
	char want[200];

	strict_open(&ep, &o, fd);
	/* Correct: receives from INIT on, sends from RTS on. */
	HX_CHECK_RC(hx_post_recv(&ep, 0x30, ep.buf, 64, ep.mr->lkey), 0);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
				 0x31, ep.buf, 64, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x31, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	EXPECT_NO_LOG(take_log(), STRICT);

	/* A send in INIT, a receive in RESET. */
	hx_ep_new_qp(&ep);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, 0, 0x32, ep.buf, 64,
				 ep.mr->lkey, 0, 0, 0),
		    EINVAL);
	snprintf(want, sizeof(want),
		 STRICT " post-state: QP 0x%06x: ibv_post_send in INIT",
		 ep.qp->qp_num);
	EXPECT_LOG(take_log(), want, "mlx5 takes the WR and executes nothing");
	CHECK_EQ(ibv_modify_qp(ep.qp, &a, IBV_QP_STATE), 0);
	HX_CHECK_RC(hx_post_recv(&ep, 0x33, ep.buf, 64, ep.mr->lkey), EINVAL);
	snprintf(want, sizeof(want),
		 STRICT " post-state: QP 0x%06x: ibv_post_recv in RESET",
		 ep.qp->qp_num);
	EXPECT_LOG(take_log(), want);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

#define state_b peer_b

/* ---- rnr_retry 0 and a receiver that posts late --------------------------- */

static void rnr0_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[200];

	o.rnr_retry = 0;
	strict_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	/* Correct: the receive is posted before the send. */
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x40,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x40, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	EXPECT_NO_LOG(take_log(), STRICT);

	/* Wrong: the receiver posts after the send arrived. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x41,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x41, IBV_WC_RNR_RETRY_EXC_ERR, -1, -1);
	snprintf(want, sizeof(want),
		 STRICT
		 " rnr-retry-0: QP 0x%06x: wr_id 0x41 IBV_WR_SEND len 64:"
		 " QP 0x%06x answered with an RNR NAK",
		 ep.qp->qp_num, ep.peer.qpn);
	EXPECT_LOG(take_log(), want, "set rnr_retry 7");
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void rnr0_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	strict_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 0x70, ep.buf, 64, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 0x70, IBV_WC_SUCCESS, IBV_WC_RECV, 64);
	hx_sync(fd); /* A's second send has failed */
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

/* ---- access flags that do not fit the operation ---------------------------- */

static void access_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *ro;
	struct hx_ep ep;
	char want[200];

	strict_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	/* Correct: receives and READ results into a LOCAL_WRITE region. */
	HX_CHECK_RC(hx_post_recv(&ep, 0x50, ep.buf, 64, ep.mr->lkey), 0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 0x51,
				 ep.buf + 4096, 64, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x51, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 64);
	EXPECT_NO_LOG(take_log(), STRICT);

	/* The kernel refuses REMOTE_WRITE without LOCAL_WRITE (EINVAL), as
	 * softverbs does in every mode. */
	errno = 0;
	CHECK(ibv_reg_mr(ep.pd, ep.buf, 4096, IBV_ACCESS_REMOTE_WRITE) == NULL);
	CHECK_EQ(errno, EINVAL);

	/* A region without LOCAL_WRITE as a receive buffer and as where a
	 * READ's data goes. */
	ro = ibv_reg_mr(ep.pd, ep.buf + 8192, 4096, IBV_ACCESS_REMOTE_READ);
	REQUIRE(ro);
	HX_CHECK_RC(hx_post_recv(&ep, 0x52, ep.buf + 8192, 64, ro->lkey), 0);
	snprintf(want, sizeof(want),
		 STRICT " access-flags: QP 0x%06x: wr_id 0x52 receives into"
			" sg_list[0] lkey 0x%x, a region registered without"
			" IBV_ACCESS_LOCAL_WRITE",
		 ep.qp->qp_num, ro->lkey);
	EXPECT_LOG(take_log(), want);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 0x53,
				 ep.buf + 8192, 64, ro->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x53, IBV_WC_LOC_PROT_ERR, -1, -1);
	snprintf(want, sizeof(want),
		 STRICT " access-flags: QP 0x%06x: wr_id 0x53 places an RDMA"
			" READ's data into sg_list[0] lkey 0x%x",
		 ep.qp->qp_num, ro->lkey);
	EXPECT_LOG(take_log(), want);
	/* The same receive through an SRQ. */
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4,
							  .max_sge = 1 } };
		struct ibv_srq *srq = ibv_create_srq(ep.pd, &sa);
		struct ibv_sge sge = { (uintptr_t)ep.buf + 8192, 64, ro->lkey };
		struct ibv_recv_wr wr = { .wr_id = 0x54,
					  .sg_list = &sge,
					  .num_sge = 1 },
				   *bad;

		REQUIRE(srq);
		HX_CHECK_RC(ibv_post_srq_recv(srq, &wr, &bad), 0);
		snprintf(want, sizeof(want),
			 STRICT " access-flags: SRQ handle %u: wr_id 0x54"
				" receives into sg_list[0] lkey 0x%x",
			 srq->handle, ro->lkey);
		EXPECT_LOG(take_log(), want);
		CHECK_EQ(ibv_destroy_srq(srq), 0);
	}
	hx_sync(fd);
	CHECK_EQ(ibv_dereg_mr(ro), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

#define access_b peer_b

static const struct hx_case cases[] = {
	HX_CASE(gid, 30),	 HX_CASE(dereg, 30), HX_CASE(reuse, 30),
	HX_CASE(unsignaled, 30), HX_CASE(state, 30), HX_CASE(rnr0, 30),
	HX_CASE(access, 30),
};

HX_MAIN(cases)
