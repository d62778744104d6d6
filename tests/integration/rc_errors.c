/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Error completions produced by real faults (no mocks), as a real HCA
 * reports them, and the error path after them:
 *   bad lkey / SGE outside its MR / READ into an MR without LOCAL_WRITE
 *     -> IBV_WC_LOC_PROT_ERR (a bad receive WQE: LOC_PROT_ERR at the
 *        responder, IBV_WC_REM_OP_ERR at the requester);
 *   receive buffer too small -> IBV_WC_LOC_LEN_ERR at the responder,
 *     IBV_WC_REM_INV_REQ_ERR at the requester;
 *   bad rkey, out of bounds, MR or QP without the access right, any
 *     byte of a zero-length MR -> IBV_WC_REM_ACCESS_ERR, target memory
 *     unchanged (a zero-length access to it succeeds);
 *   misaligned atomic, too many outstanding READs -> IBV_WC_REM_INV_REQ_ERR;
 *   then the QP is in ERR and every other WR, signaled or not, completes
 *   with IBV_WC_WR_FLUSH_ERR; CQ overrun -> IBV_EVENT_CQ_ERR, QP in ERR;
 *   ibv_post_send/ibv_post_recv EINVAL/ENOMEM with *bad_wr.
 */
#include <poll.h>
#include <unistd.h>

#include "harness.h"

/* Empty both CQs (stale flush completions of a previous QP). */
static void drain(struct hx_ep *ep)
{
	struct ibv_wc wc[16];

	while (hx_poll(ep->scq, wc, 16, 30) > 0)
		;
	if (ep->rcq != ep->scq)
		while (hx_poll(ep->rcq, wc, 16, 30) > 0)
			;
}

/* A fresh connected QP pair on both sides (both call it). */
static void renew(struct hx_ep *ep)
{
	hx_sync(ep->fd);
	drain(ep);
	hx_ep_new_qp(ep);
	hx_ep_connect(ep);
}

static void pair(struct hx_ep *ep, int fd, const struct hx_opts *o)
{
	hx_ep_open(ep, o, fd);
	hx_ep_connect(ep);
}

/* ---- local protection ---------------------------------------------------- */

static void loc_prot_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *nolw;
	struct hx_ep ep;

	pair(&ep, fd, &o);
	uint32_t badkey = ep.mr->lkey ^ 0x00ffff00;
	hx_fill(ep.buf, 8192, 1);

	/* 1. SEND with an lkey that names no MR */
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 64, badkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_LOC_PROT_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);

	/* 2. SEND whose SGE runs 90 bytes past the end of its MR */
	renew(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2,
				 ep.buf + ep.o.buf_len - 10, 100, ep.mr->lkey,
				 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_LOC_PROT_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);

	/* 3. WRITE whose SGE starts one byte before its MR (unmapped) */
	renew(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 3,
				 ep.buf - 1, 16, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_LOC_PROT_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);

	/* 4. READ into a local MR without IBV_ACCESS_LOCAL_WRITE */
	renew(&ep);
	nolw = ibv_reg_mr(ep.pd, ep.buf + 65536, 4096, 0);
	REQUIRE(nolw);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 4,
				 ep.buf + 65536, 4096, nolw->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 4, IBV_WC_LOC_PROT_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	/* Nothing was placed in the read-only region. */
	CHECK_EQ(ep.buf[65536], 0);
	CHECK_EQ(ibv_dereg_mr(nolw), 0);
	hx_sync(fd);

	/* 5. WRITE with a bad lkey and a bad rkey: the local error, as the
	 * gather comes before the request leaves (docs/conformance.md). */
	renew(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 5,
				 ep.buf, 64, badkey, ep.peer.addr,
				 ep.peer.rkey ^ 0x00ffff00, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 5, IBV_WC_LOC_PROT_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);

	/* 6. The responder's receive WQE has the bad lkey. */
	renew(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 6, ep.buf,
				 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 6, IBV_WC_REM_OP_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void loc_prot_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.recv_cqe = 64;
	pair(&ep, fd, &o);
	hx_fill(ep.buf, 4096, 2);
	for (int round = 1; round <= 5; round++) {
		if (round > 1)
			renew(&ep);
		HX_CHECK_RC(hx_post_recv(&ep, 100 + round, ep.buf + 8192, 4096,
					 ep.mr->lkey),
			    0);
		hx_sync(fd);
		hx_sync(fd);
		/* The faulty request never reached us. */
		HX_EXPECT_NONE(ep.rcq, 50);
		CHECK_EQ(ep.buf[8192], 0);
		HX_CHECK_PATTERN(ep.buf, 4096, 2);
	}
	renew(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 106, ep.buf + 8192, 4096,
				 ep.mr->lkey ^ 0x00ffff00),
		    0);
	hx_sync(fd);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 106, IBV_WC_LOC_PROT_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- receive buffer too small -------------------------------------------- */

static void loc_len_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	uint32_t big = 3 * ep.mtu_bytes;
	hx_send_u64(fd, big);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 100, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);

	/* Detected in the middle of a multi-packet message. */
	renew(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2, ep.buf,
				 big, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void loc_len_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	uint32_t big = (uint32_t)hx_recv_u64(fd);
	HX_CHECK_RC(hx_post_recv(&ep, 5, ep.buf, 16, ep.mr->lkey), 0);
	HX_CHECK_RC(hx_post_recv(&ep, 6, ep.buf + 4096, 4096, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 5, IBV_WC_LOC_LEN_ERR, -1, -1);
	HX_EXPECT(ep.rcq, NULL, 6, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);

	renew(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 7, ep.buf, big - ep.mtu_bytes,
				 ep.mr->lkey),
		    0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 7, IBV_WC_LOC_LEN_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- remote access ---------------------------------------------------------- */

/* main, no-remote-write, no-remote-read, no-atomic, zero-length */
#define NKEYS 5
struct keys {
	uint64_t addr[NKEYS];
	uint32_t rkey[NKEYS];
	uint64_t len[NKEYS];
};

enum { K_MAIN, K_NOW, K_NOR, K_NOA, K_ZERO };

struct access_case {
	const char *what;
	enum ibv_wr_opcode op;
	int key; /* which MR */
	int64_t off; /* from the MR's start; negative: before it */
	uint32_t len;
	int badkey; /* flip bits of the rkey */
	int qp_access; /* B's qp_access_flags (0: all three) */
	enum ibv_wc_status want;
};

#define ALL_REMOTE                                          \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define MAIN_LEN (1u << 20)
#define SUB_LEN 65536

static const struct access_case acc[] = {
	{ "WRITE ending exactly at the MR end", IBV_WR_RDMA_WRITE, K_MAIN,
	  MAIN_LEN - 8, 8, 0, 0, IBV_WC_SUCCESS },
	{ "WRITE with a bad rkey", IBV_WR_RDMA_WRITE, K_MAIN, 0, 64, 1, 0,
	  IBV_WC_REM_ACCESS_ERR },
	{ "WRITE one byte past the MR end", IBV_WR_RDMA_WRITE, K_MAIN,
	  MAIN_LEN - 10, 11, 0, 0, IBV_WC_REM_ACCESS_ERR },
	{ "WRITE one byte before the MR start", IBV_WR_RDMA_WRITE, K_MAIN, -1,
	  8, 0, 0, IBV_WC_REM_ACCESS_ERR },
	{ "multi-packet WRITE running past the end", IBV_WR_RDMA_WRITE, K_MAIN,
	  MAIN_LEN - 8192, 3 * 4096 + 1, 0, 0, IBV_WC_REM_ACCESS_ERR },
	{ "WRITE to an MR without REMOTE_WRITE", IBV_WR_RDMA_WRITE, K_NOW, 0,
	  64, 0, 0, IBV_WC_REM_ACCESS_ERR },
	{ "READ from an MR without REMOTE_READ", IBV_WR_RDMA_READ, K_NOR, 0, 64,
	  0, 0, IBV_WC_REM_ACCESS_ERR },
	{ "FETCH_ADD on an MR without REMOTE_ATOMIC",
	  IBV_WR_ATOMIC_FETCH_AND_ADD, K_NOA, 0, 8, 0, 0,
	  IBV_WC_REM_ACCESS_ERR },
	{ "CMP_SWP with a bad rkey", IBV_WR_ATOMIC_CMP_AND_SWP, K_MAIN, 0, 8, 1,
	  0, IBV_WC_REM_ACCESS_ERR },
	{ "READ beyond the MR end", IBV_WR_RDMA_READ, K_MAIN, 0, 2 * MAIN_LEN,
	  0, 0, IBV_WC_REM_ACCESS_ERR },
	{ "WRITE of 8 bytes into a zero-length MR", IBV_WR_RDMA_WRITE, K_ZERO,
	  0, 8, 0, 0, IBV_WC_REM_ACCESS_ERR },
	{ "READ of 1 byte from a zero-length MR", IBV_WR_RDMA_READ, K_ZERO, 0,
	  1, 0, 0, IBV_WC_REM_ACCESS_ERR },
	{ "WRITE of 0 bytes to a zero-length MR", IBV_WR_RDMA_WRITE, K_ZERO, 0,
	  0, 0, 0, IBV_WC_SUCCESS },
	{ "READ with a bad rkey", IBV_WR_RDMA_READ, K_MAIN, 0, 64, 1, 0,
	  IBV_WC_REM_ACCESS_ERR },
	{ "WRITE to a QP without REMOTE_WRITE", IBV_WR_RDMA_WRITE, K_MAIN, 0,
	  64, 0, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	  IBV_WC_REM_ACCESS_ERR },
	{ "READ from a QP without REMOTE_READ", IBV_WR_RDMA_READ, K_MAIN, 0, 64,
	  0, IBV_ACCESS_REMOTE_WRITE, IBV_WC_REM_ACCESS_ERR },
	{ "FETCH_ADD on a QP without REMOTE_ATOMIC",
	  IBV_WR_ATOMIC_FETCH_AND_ADD, K_MAIN, 0, 8, 0,
	  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	  IBV_WC_REM_ACCESS_ERR },
};
#define N_ACC (int)(sizeof(acc) / sizeof(acc[0]))

static void rem_access_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct keys k;
	struct hx_ep ep;

	o.buf_len = 4u << 20;
	pair(&ep, fd, &o);
	hx_recv(fd, &k, sizeof(k));
	hx_fill(ep.buf, 4u << 20, 7);
	for (int i = 0; i < N_ACC; i++) {
		const struct access_case *c = &acc[i];
		uint64_t ra = k.addr[c->key] + c->off;
		uint32_t rk = k.rkey[c->key] ^ (c->badkey ? 0x00ffff00 : 0);
		int rc;

		if (i)
			renew(&ep);
		hx_sync(fd);
		if (c->op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		    c->op == IBV_WR_ATOMIC_CMP_AND_SWP)
			rc = hx_post_atomic(&ep, c->op, IBV_SEND_SIGNALED, i,
					    ep.buf + (2u << 20), ep.mr->lkey,
					    ra, rk, 1, 2);
		else
			rc = hx_post_send(&ep, c->op, IBV_SEND_SIGNALED, i,
					  ep.buf + (c->op == IBV_WR_RDMA_READ ?
							    (2u << 20) :
							    0),
					  c->len, ep.mr->lkey, ra, rk, 0);
		HX_CHECK_RC(rc, 0);
		if (!HX_EXPECT(ep.scq, NULL, i, c->want, -1, -1))
			hx_log("case %d: %s", i, c->what);
		if (c->want != IBV_WC_SUCCESS)
			HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
		hx_sync(fd);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void rem_access_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *now, *nor, *noa, *zero;
	struct hx_ep ep;
	struct keys k;

	o.buf_len = MAIN_LEN + 4 * SUB_LEN;
	pair(&ep, fd, &o);
	/* The main MR covers the first MiB only; three more MRs follow it,
	 * each missing one remote right. */
	CHECK_EQ(ibv_dereg_mr(ep.mr), 0);
	ep.mr = ibv_reg_mr(ep.pd, ep.buf + SUB_LEN, MAIN_LEN,
			   IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
	now = ibv_reg_mr(ep.pd, ep.buf + SUB_LEN + MAIN_LEN, SUB_LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_ATOMIC);
	nor = ibv_reg_mr(ep.pd, ep.buf + 2 * SUB_LEN + MAIN_LEN, SUB_LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_ATOMIC);
	noa = ibv_reg_mr(ep.pd, ep.buf + 3 * SUB_LEN + MAIN_LEN, SUB_LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ);
	/* A zero-length region (rxe registers one), in the main one. */
	zero = ibv_reg_mr(ep.pd, ep.buf + 2 * SUB_LEN, 0,
			  IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
	REQUIRE(ep.mr && now && nor && noa && zero);
	CHECK_EQ(zero->length, 0);
	struct ibv_mr *mrs[NKEYS] = { ep.mr, now, nor, noa, zero };
	for (int i = 0; i < NKEYS; i++) {
		k.addr[i] = (uintptr_t)mrs[i]->addr;
		k.rkey[i] = mrs[i]->rkey;
		k.len[i] = mrs[i]->length;
	}
	hx_send(fd, &k, sizeof(k));
	size_t total = o.buf_len;
	hx_fill(ep.buf, total, 900);
	for (int i = 0; i < N_ACC; i++) {
		if (i) {
			/* B's QP rights for this case, then a fresh QP. */
			ep.o.qp_access = acc[i].qp_access ? acc[i].qp_access :
							    ALL_REMOTE;
			renew(&ep);
		}
		hx_sync(fd);
		hx_sync(fd);
		if (acc[i].want == IBV_WC_SUCCESS && acc[i].len) {
			/* The allowed WRITE landed exactly at the end... */
			HX_CHECK_PATTERN(ep.buf + SUB_LEN + MAIN_LEN - 8, 8, 7);
			hx_fill(ep.buf, total, 900);
		} else {
			/* ...the refused ones changed nothing anywhere. */
			int64_t bad = hx_verify(ep.buf, total, 900);
			if (bad >= 0)
				hx_log("case %d (%s): memory changed at offset %lld",
				       i, acc[i].what, (long long)bad);
			CHECK(bad < 0);
		}
	}
	CHECK_EQ(ibv_dereg_mr(now), 0);
	CHECK_EQ(ibv_dereg_mr(nor), 0);
	CHECK_EQ(ibv_dereg_mr(noa), 0);
	CHECK_EQ(ibv_dereg_mr(zero), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- invalid requests: misaligned atomics, too many READs ---------------- */

static void misaligned_atomic_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 1, ep.buf, ep.mr->lkey,
				   ep.peer.addr + 4, ep.peer.rkey, 1, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	renew(&ep);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_CMP_AND_SWP,
				   IBV_SEND_SIGNALED, 2, ep.buf, ep.mr->lkey,
				   ep.peer.addr + 12, ep.peer.rkey, 0, 1),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void misaligned_atomic_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	renew(&ep);
	hx_sync(fd);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(ep.buf[i], 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

#define TM_READS 16
#define TM_LEN 65536

/* The requester claims max_rd_atomic 16 against a responder that accepts 1
 * outstanding READ: IBA has the responder NAK (Invalid Request). */
static void too_many_reads_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr[TM_READS], *bad;
	struct ibv_sge sge[TM_READS];
	struct ibv_wc wc;
	struct hx_ep ep;
	int inv = 0, ok = 0, flushed = 0, other = 0, phase = 0;

	o.buf_len = TM_READS * TM_LEN;
	o.max_rd_atomic = 16;
	pair(&ep, fd, &o);
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < TM_READS; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)ep.buf + i * TM_LEN,
					   TM_LEN, ep.mr->lkey };
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = ep.peer.addr + i * TM_LEN;
		wr[i].wr.rdma.rkey = ep.peer.rkey;
		wr[i].next = i + 1 < TM_READS ? &wr[i + 1] : NULL;
	}
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), 0);
	/* Successes first, then one Invalid Request, then flushes. */
	for (int i = 0; i < TM_READS; i++) {
		if (hx_poll(ep.scq, &wc, 1, 10000) != 1) {
			CHECK(!"READ completion missing");
			break;
		}
		CHECK_EQ(wc.wr_id, i);
		if (wc.status == IBV_WC_SUCCESS && phase == 0)
			ok++;
		else if (wc.status == IBV_WC_REM_INV_REQ_ERR && phase == 0)
			inv++, phase = 1;
		else if (wc.status == IBV_WC_WR_FLUSH_ERR && phase == 1)
			flushed++;
		else
			other++, hx_log("READ %d: unexpected %s", i,
					ibv_wc_status_str(wc.status));
	}
	hx_log("%d READs succeeded, %d invalid request, %d flushed", ok, inv,
	       flushed);
	CHECK_EQ(inv, 1);
	CHECK_EQ(other, 0);
	CHECK_EQ(ok + inv + flushed, TM_READS);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void too_many_reads_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.buf_len = TM_READS * TM_LEN;
	o.max_dest_rd_atomic = 1;
	pair(&ep, fd, &o);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- the error path: ERR state and flushed WRs ---------------------------- */

static void flush_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr[5], *bad;
	struct ibv_sge sge[5];
	struct hx_ep ep;

	o.recv_cqe = 64;
	pair(&ep, fd, &o);
	for (int i = 0; i < 3; i++)
		HX_CHECK_RC(hx_post_recv(&ep, 100 + i, ep.buf + 65536 + i * 64,
					 64, ep.mr->lkey),
			    0);
	memset(wr, 0, sizeof(wr));
	static const enum ibv_wr_opcode ops[5] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE, IBV_WR_SEND,
		IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE
	};
	static const unsigned flags[5] = { IBV_SEND_SIGNALED, 0, 0,
					   IBV_SEND_SIGNALED, 0 };
	hx_fill(ep.buf, 4096, 3);
	for (int i = 0; i < 5; i++) {
		sge[i] = (struct ibv_sge){
			(uintptr_t)ep.buf +
				(ops[i] == IBV_WR_RDMA_READ ? 8192 : 0),
			256, ep.mr->lkey
		};
		wr[i].wr_id = i + 1;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = ops[i];
		wr[i].send_flags = flags[i];
		wr[i].wr.rdma.remote_addr = ep.peer.addr + 4096 * (i + 1);
		wr[i].wr.rdma.rkey = ep.peer.rkey;
		wr[i].next = i < 4 ? &wr[i + 1] : NULL;
	}
	wr[0].wr.rdma.rkey ^= 0x00ffff00; /* the fault */
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), 0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_ACCESS_ERR, -1, -1);
	/* Every later WR is flushed, the unsignaled ones included. */
	for (int i = 2; i <= 5; i++)
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_EXPECT_NONE(ep.scq, 100);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	for (int i = 0; i < 3; i++)
		HX_EXPECT(ep.rcq, NULL, 100 + i, IBV_WC_WR_FLUSH_ERR, -1, -1);

	/* In ERR, posting still works and completes in error at once. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 6, ep.buf, 8,
				 ep.mr->lkey, ep.peer.addr, ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 6, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_RC(hx_post_recv(&ep, 103, ep.buf, 64, ep.mr->lkey), 0);
	HX_EXPECT(ep.rcq, NULL, 103, IBV_WC_WR_FLUSH_ERR, -1, -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void flush_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf + 65536, 4096, ep.mr->lkey), 0);
	hx_sync(fd);
	/* Nothing after the faulty WRITE was executed. */
	for (int i = 0; i < 6 * 4096; i++)
		if (ep.buf[i]) {
			CHECK(!"flushed WR touched the target");
			break;
		}
	/* The responder detected a remote access violation (IBA responder
	 * class C): it NAKed, reports an affiliated "access violation"
	 * event on the QP and moved the QP to ERR, flushing its receive. */
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	int seen = 0;
	struct ibv_async_event ev;
	while (!seen && hx_wait_fd(ep.ctx->async_fd, 1000) &&
	       !ibv_get_async_event(ep.ctx, &ev)) {
		if (ev.event_type == IBV_EVENT_QP_ACCESS_ERR)
			seen = ev.element.qp == ep.qp;
		ibv_ack_async_event(&ev);
	}
	CHECK(seen);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- CQ overrun ------------------------------------------------------------ */

static void cq_overrun_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.timeout = 10;
	o.retry_cnt = 1;
	pair(&ep, fd, &o);
	int n = (int)hx_recv_u64(fd);
	for (int i = 0; i < n; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
					 i == n - 1 ? IBV_SEND_SIGNALED : 0, i,
					 ep.buf, 8, ep.mr->lkey, 0, 0, 0),
			    0);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void cq_overrun_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_async_event ev;
	struct hx_ep ep;
	int seen_cq_err = 0;

	o.recv_cqe = 2;
	pair(&ep, fd, &o);
	int n = ep.rcq->cqe + 3;
	REQUIRE(n <= (int)ep.cap.max_recv_wr);
	for (int i = 0; i < n; i++)
		HX_CHECK_RC(hx_post_recv(&ep, i, ep.buf + i * 64, 64,
					 ep.mr->lkey),
			    0);
	hx_send_u64(fd, n);
	/* Never poll the receive CQ: it overflows. */
	uint64_t end = hx_now_ms() + 5000;
	while (!seen_cq_err && hx_now_ms() < end) {
		if (!hx_wait_fd(ep.ctx->async_fd, (int)(end - hx_now_ms())))
			break;
		if (ibv_get_async_event(ep.ctx, &ev))
			break;
		hx_log("async event: %s", ibv_event_type_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_CQ_ERR) {
			seen_cq_err = 1;
			CHECK(ev.element.cq == ep.rcq);
		}
		ibv_ack_async_event(&ev);
	}
	CHECK(seen_cq_err);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- post-time errors: EINVAL / ENOMEM and *bad_wr -------------------------- */

static void write_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
		     struct hx_ep *ep, uint64_t id, size_t off, unsigned flags)
{
	memset(wr, 0, sizeof(*wr));
	*sge = (struct ibv_sge){ (uintptr_t)ep->buf + off, 8, ep->mr->lkey };
	wr->wr_id = id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_RDMA_WRITE;
	wr->send_flags = flags;
	wr->wr.rdma.remote_addr = ep->peer.addr + off;
	wr->wr.rdma.rkey = ep->peer.rkey;
}

static void post_errors_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr[3], *bad;
	struct ibv_recv_wr rwr[2], *rbad;
	struct ibv_sge sge[3], many[40];
	struct hx_ep ep;
	struct ibv_qp *rq;

	o.recv_cqe = 64;
	hx_ep_open(&ep, &o, fd);

	/* RESET: neither queue accepts work. */
	struct ibv_qp_init_attr ia = {
		.send_cq = ep.scq,
		.recv_cq = ep.rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	rq = ibv_create_qp(ep.pd, &ia);
	REQUIRE(rq);
	write_wr(&wr[0], &sge[0], &ep, 1, 0, IBV_SEND_SIGNALED);
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(rq, wr, &bad), EINVAL);
	CHECK(bad == &wr[0]);
	memset(rwr, 0, sizeof(rwr));
	sge[1] = (struct ibv_sge){ (uintptr_t)ep.buf, 64, ep.mr->lkey };
	rwr[0].wr_id = 1;
	rwr[0].sg_list = &sge[1];
	rwr[0].num_sge = 1;
	rbad = NULL;
	HX_CHECK_RC(ibv_post_recv(rq, rwr, &rbad), EINVAL);
	CHECK(rbad == &rwr[0]);
	CHECK_EQ(ibv_destroy_qp(rq), 0);

	/* INIT: receives yes, sends no. */
	hx_ep_exchange(&ep);
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), EINVAL);
	CHECK(bad == &wr[0]);
	HX_CHECK_RC(hx_post_recv(&ep, 50, ep.buf + 65536, 64, ep.mr->lkey), 0);
	/* RTR: still no sends. */
	HX_CHECK_RC(hx_ep_rtr(&ep), 0);
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), EINVAL);
	CHECK(bad == &wr[0]);
	HX_CHECK_RC(hx_ep_rts(&ep), 0);
	hx_sync(fd);
	HX_EXPECT_NONE(ep.scq, 50);

	/* RTS: [good, too many SGEs, good] -> EINVAL at the second; the
	 * first is posted, the third is not. */
	REQUIRE(ep.cap.max_send_sge < 40);
	for (int i = 0; i < 40; i++)
		many[i] = (struct ibv_sge){ (uintptr_t)ep.buf + i, 1,
					    ep.mr->lkey };
	write_wr(&wr[0], &sge[0], &ep, 1, 0, IBV_SEND_SIGNALED);
	write_wr(&wr[1], &sge[1], &ep, 2, 64, IBV_SEND_SIGNALED);
	write_wr(&wr[2], &sge[2], &ep, 3, 128, IBV_SEND_SIGNALED);
	wr[1].sg_list = many;
	wr[1].num_sge = ep.cap.max_send_sge + 1;
	wr[0].next = &wr[1];
	wr[1].next = &wr[2];
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), EINVAL);
	CHECK(bad == &wr[1]);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT_NONE(ep.scq, 100);

	/* An opcode that does not exist. */
	write_wr(&wr[0], &sge[0], &ep, 4, 0, IBV_SEND_SIGNALED);
	write_wr(&wr[1], &sge[1], &ep, 5, 64, IBV_SEND_SIGNALED);
	wr[1].opcode = (enum ibv_wr_opcode)77;
	wr[0].next = &wr[1];
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), EINVAL);
	CHECK(bad == &wr[1]);
	HX_EXPECT(ep.scq, NULL, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT_NONE(ep.scq, 50);

	/* Inline data over max_inline_data. */
	write_wr(&wr[0], &sge[0], &ep, 6, 0,
		 IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	sge[0].length = ep.cap.max_inline_data + 1;
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), EINVAL);
	CHECK(bad == &wr[0]);
	HX_EXPECT_NONE(ep.scq, 50);

	/* Receive with too many SGEs after a good one. */
	REQUIRE(ep.cap.max_recv_sge < 40);
	memset(rwr, 0, sizeof(rwr));
	sge[0] = (struct ibv_sge){ (uintptr_t)ep.buf + 65536 + 64, 64,
				   ep.mr->lkey };
	rwr[0].wr_id = 51;
	rwr[0].sg_list = &sge[0];
	rwr[0].num_sge = 1;
	rwr[0].next = &rwr[1];
	rwr[1].wr_id = 52;
	rwr[1].sg_list = many;
	rwr[1].num_sge = ep.cap.max_recv_sge + 1;
	rbad = NULL;
	HX_CHECK_RC(ibv_post_recv(ep.qp, rwr, &rbad), EINVAL);
	CHECK(rbad == &rwr[1]);
	hx_sync(fd); /* B sends two messages: they land in 50 and 51 */
	HX_EXPECT(ep.rcq, NULL, 50, IBV_WC_SUCCESS, IBV_WC_RECV, 4);
	HX_EXPECT(ep.rcq, NULL, 51, IBV_WC_SUCCESS, IBV_WC_RECV, 4);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void post_errors_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	hx_sync(fd);
	for (int i = 0; i < 2; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, i,
					 ep.buf, 4, ep.mr->lkey, 0, 0, 0),
			    0);
	for (int i = 0; i < 2; i++)
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* Queue full: ENOMEM at the first WR that does not fit, the earlier ones
 * posted.  Unsignaled WRs hold their send-queue slot until a later
 * signaled WR completes (ibv_post_send(3), the seeds), so after a chain of
 * max_send_wr unsignaled WRITEs the queue stays full even once they are
 * all executed. */
static void queue_full_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr *wr, *bad;
	struct ibv_recv_wr *rwr, *rbad;
	struct ibv_sge *sge;
	struct hx_ep ep;

	o.max_send_wr = 8;
	o.max_recv_wr = 8;
	o.recv_cqe = 64;
	pair(&ep, fd, &o);
	uint32_t S = ep.cap.max_send_wr, R = ep.cap.max_recv_wr;
	REQUIRE(S >= 8 && S <= 4096 && R >= 8 && R <= 4096);
	hx_send_u64(fd, S);
	hx_send_u64(fd, R);

	rwr = calloc(R + 1, sizeof(*rwr));
	sge = calloc((R > S ? R : S) + 1, sizeof(*sge));
	for (uint32_t i = 0; i <= R; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)ep.buf + 65536 + i * 16,
					   16, ep.mr->lkey };
		rwr[i].wr_id = 1000 + i;
		rwr[i].sg_list = &sge[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i < R ? &rwr[i + 1] : NULL;
	}
	rbad = NULL;
	HX_CHECK_RC(ibv_post_recv(ep.qp, rwr, &rbad), ENOMEM);
	CHECK(rbad == &rwr[R]);
	hx_sync(fd); /* B sends R messages: all R receives were posted */
	for (uint32_t i = 0; i < R; i++)
		HX_EXPECT(ep.rcq, NULL, 1000 + i, IBV_WC_SUCCESS, IBV_WC_RECV,
			  16);

	wr = calloc(S + 1, sizeof(*wr));
	hx_fill(ep.buf, (S + 1) * 8, 5);
	for (uint32_t i = 0; i <= S; i++) {
		write_wr(&wr[i], &sge[i], &ep, i, i * 8, 0);
		wr[i].next = i < S ? &wr[i + 1] : NULL;
	}
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), ENOMEM);
	CHECK(bad == &wr[S]);
	hx_sync(fd); /* B saw all S writes land */
	wr[S].next = NULL;
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr[S], &bad), ENOMEM);
	CHECK(bad == &wr[S]);
	HX_EXPECT_NONE(ep.scq, 50);
	hx_sync(fd);
	free(wr);
	free(rwr);
	free(sge);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void queue_full_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	uint32_t S = (uint32_t)hx_recv_u64(fd), R = (uint32_t)hx_recv_u64(fd);
	hx_sync(fd);
	for (uint32_t i = 0; i < R; i++) {
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, i,
					 ep.buf, 16, ep.mr->lkey, 0, 0, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	}
	/* Wait for the S writes (pattern 5) to arrive, the (S+1)th never. */
	uint64_t end = hx_now_ms() + 5000;
	while (hx_verify(ep.buf, S * 8, 5) >= 0 && hx_now_ms() < end)
		hx_msleep(5);
	HX_CHECK_PATTERN(ep.buf, S * 8, 5);
	hx_sync(fd);
	hx_sync(fd);
	for (int k = 0; k < 8; k++)
		CHECK_EQ(ep.buf[S * 8 + k], 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(loc_prot, 30),	     HX_CASE(loc_len, 20),
	HX_CASE(rem_access, 60),     HX_CASE(misaligned_atomic, 20),
	HX_CASE(too_many_reads, 20), HX_CASE(flush, 20),
	HX_CASE(cq_overrun, 20),     HX_CASE(post_errors, 20),
	HX_CASE(queue_full, 20),     { 0 }
};

HX_MAIN(cases)
