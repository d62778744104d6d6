/*
 * Explained failures between two processes (engine/explain.c): each
 * remote access refusal writes, in the target's log, one line naming the
 * check that failed and the key, address and length (unknown rkey,
 * bounds, a right the region lacks, another PD, the QP's access flags, a
 * memory window's bounds) and counts it by reason (SOFTVERBS_STATS=1);
 * the requester's log names the WR, the status and where to look.  RNR
 * and retry exhaustion name the count that ran out.  Each process logs to
 * its own VERBS_LOG_FILE, set before it first uses the library.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <unistd.h>

#include "harness.h"
#include "logcap.h"

/* ---- remote access: one case per check ----------------------------------- */

enum key { K_MAIN, K_NOW, K_PD, K_MW, K_NKEYS };

struct keys {
	uint64_t addr[K_NKEYS];
	uint32_t rkey[K_NKEYS];
};

static const struct access_case {
	const char *what;
	enum ibv_wr_opcode op;
	enum key key;
	uint64_t off;
	uint32_t len;
	bool badkey;
	int qp_access; /* B's QP rights; 0: all */
} acc[] = {
	{ "unknown rkey", IBV_WR_RDMA_WRITE, K_MAIN, 0, 64, true, 0 },
	{ "bounds", IBV_WR_RDMA_WRITE, K_MAIN, 4096 - 8, 16, false, 0 },
	{ "rights", IBV_WR_RDMA_WRITE, K_NOW, 0, 64, false, 0 },
	{ "PD", IBV_WR_RDMA_WRITE, K_PD, 0, 64, false, 0 },
	{ "QP access flags", IBV_WR_RDMA_READ, K_MAIN, 0, 64, false,
	  IBV_ACCESS_REMOTE_WRITE },
	{ "memory window bounds", IBV_WR_RDMA_WRITE, K_MW, 0, 2048, false, 0 },
};
#define N_ACC (int)(sizeof(acc) / sizeof(acc[0]))

static void renew(struct hx_ep *ep)
{
	struct ibv_wc wc[16];

	hx_sync(ep->fd);
	while (hx_poll(ep->scq, wc, 16, 30) > 0)
		;
	hx_ep_new_qp(ep);
	hx_ep_connect(ep);
}

static void access_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	struct keys k;
	char want[160];

	log_to_file("rc_explain");
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_recv(fd, &k, sizeof(k));
	for (int i = 0; i < N_ACC; i++) {
		const struct access_case *c = &acc[i];
		uint32_t rk = k.rkey[c->key] ^ (c->badkey ? 0x00ffff00 : 0);

		if (i)
			renew(&ep);
		hx_sync(fd);
		take_log();
		HX_CHECK_RC(hx_post_send(&ep, c->op, IBV_SEND_SIGNALED,
					 0x100 + i, ep.buf, c->len, ep.mr->lkey,
					 k.addr[c->key] + c->off, rk, 0),
			    0);
		if (!HX_EXPECT(ep.scq, NULL, 0x100 + i, IBV_WC_REM_ACCESS_ERR,
			       -1, -1))
			hx_log("case %d: %s", i, c->what);
		/* The requester's line: the WR, the status, the key, and
		 * where the reason is. */
		snprintf(want, sizeof(want),
			 "refused the access (rkey 0x%x addr %#" PRIx64 ")", rk,
			 k.addr[c->key] + c->off);
		EXPECT_LOG(take_log(), "completer: QP 0x",
			   "fails with IBV_WC_REM_ACCESS_ERR", want,
			   "its process logs which check failed");
		hx_send_u64(fd, rk);
		hx_sync(fd);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void access_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *now, *other;
	struct ibv_pd *pd2;
	struct ibv_mw *mw;
	struct hx_ep ep;
	struct keys k;
	char want[4][200];
	const char *t;
	int err_fd, saved;

	log_to_file("rc_explain");
	/* Read at first use: set before the library starts. */
	setenv("SOFTVERBS_STATS", "1", 1);
	o.mr_access |= IBV_ACCESS_MW_BIND;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	/* The main region is the first 4 KiB of the buffer; one without
	 * REMOTE_WRITE and one of another PD follow; a type 1 window
	 * covers 1 KiB of the main region. */
	CHECK_EQ(ibv_dereg_mr(ep.mr), 0);
	ep.mr = ibv_reg_mr(ep.pd, ep.buf, 4096,
			   o.mr_access | IBV_ACCESS_MW_BIND);
	now = ibv_reg_mr(ep.pd, ep.buf + 4096, 4096,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	pd2 = ibv_alloc_pd(ep.ctx);
	REQUIRE(pd2);
	other = ibv_reg_mr(pd2, ep.buf + 8192, 4096,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_1);
	REQUIRE(ep.mr && now && other && mw);
	{
		struct ibv_mw_bind b = {
			.wr_id = 1,
			.send_flags = IBV_SEND_SIGNALED,
			.bind_info = { .mr = ep.mr,
				       .addr = (uintptr_t)ep.buf,
				       .length = 1024,
				       .mw_access_flags =
					       IBV_ACCESS_REMOTE_WRITE },
		};
		struct ibv_wc wc;

		REQUIRE(ibv_bind_mw(ep.qp, mw, &b) == 0);
		REQUIRE(hx_poll(ep.scq, &wc, 1, 5000) == 1 &&
			wc.status == IBV_WC_SUCCESS);
	}
	k.addr[K_MAIN] = k.addr[K_MW] = (uintptr_t)ep.buf;
	k.addr[K_NOW] = (uintptr_t)ep.buf + 4096;
	k.addr[K_PD] = (uintptr_t)ep.buf + 8192;
	k.rkey[K_MAIN] = ep.mr->rkey;
	k.rkey[K_NOW] = now->rkey;
	k.rkey[K_PD] = other->rkey;
	k.rkey[K_MW] = mw->rkey;
	hx_send(fd, &k, sizeof(k));
	for (int i = 0; i < N_ACC; i++) {
		const struct access_case *c = &acc[i];
		uint32_t rk;

		if (i) {
			ep.o.qp_access = c->qp_access ?
						 c->qp_access :
						 (IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ |
						  IBV_ACCESS_REMOTE_ATOMIC);
			renew(&ep);
		}
		hx_sync(fd);
		rk = (uint32_t)hx_recv_u64(fd);
		t = take_log();
		snprintf(want[0], sizeof(want[0]),
			 "responder: QP 0x%06x: %s rkey 0x%x addr %#" PRIx64
			 " len %u: ",
			 ep.qp->qp_num,
			 c->op == IBV_WR_RDMA_READ ? "RDMA READ" : "RDMA WRITE",
			 rk, k.addr[c->key] + c->off, c->len);
		switch (i) {
		case 0:
			EXPECT_LOG(t, want[0],
				   "no region or memory window has this rkey");
			break;
		case 1:
			snprintf(want[1], sizeof(want[1]),
				 "outside the region [%#" PRIx64 ", %#" PRIx64
				 ") (length 4096)",
				 k.addr[K_MAIN], k.addr[K_MAIN] + 4096);
			EXPECT_LOG(t, want[0], want[1]);
			break;
		case 2:
			EXPECT_LOG(
				t, want[0],
				"the region lacks IBV_ACCESS_REMOTE_WRITE (has LOCAL_WRITE|REMOTE_READ)");
			break;
		case 3:
			snprintf(
				want[1], sizeof(want[1]),
				"the region's PD (handle %u) is not the QP's PD (handle %u)",
				pd2->handle, ep.pd->handle);
			EXPECT_LOG(t, want[0], want[1]);
			break;
		case 4:
			snprintf(
				want[1], sizeof(want[1]),
				"responder: QP 0x%06x: RDMA READ refused: the QP's qp_access_flags lack IBV_ACCESS_REMOTE_READ (has REMOTE_WRITE",
				ep.qp->qp_num);
			EXPECT_LOG(t, want[1]);
			break;
		case 5:
			snprintf(want[1], sizeof(want[1]),
				 "outside the window [%#" PRIx64 ", %#" PRIx64
				 ") (length 1024)",
				 k.addr[K_MW], k.addr[K_MW] + 1024);
			EXPECT_LOG(t, want[0], want[1]);
			break;
		}
		hx_sync(fd);
	}
	CHECK_EQ(ibv_dealloc_mw(mw), 0);
	CHECK_EQ(ibv_dereg_mr(now), 0);
	CHECK_EQ(ibv_dereg_mr(other), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	/* The counters by reason, printed at close (SOFTVERBS_STATS=1 on
	 * stderr, which is a file meanwhile). */
	saved = dup(2);
	err_fd = open(log_path, O_WRONLY | O_APPEND);
	REQUIRE(saved >= 0 && err_fd >= 0 && dup2(err_fd, 2) == 2);
	CHECK_EQ(hx_ep_close(&ep), 0);
	REQUIRE(dup2(saved, 2) == 2);
	close(saved);
	close(err_fd);
	t = take_log();
	EXPECT_LOG(t, "access_no_key", "access_bounds", "access_rights",
		   "access_pd", "access_qp_flags");
	CHECK(strstr(t, "access_bounds                       2") != NULL);
	unlink(log_path);
}

/* ---- local protection: the gather list, the receive WQE's scatter list -- */

static void local_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[160];

	log_to_file("rc_explain");
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	take_log();
	/* A gather list whose lkey names nothing. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x90,
				 ep.buf, 64, ep.mr->lkey ^ 0x00ffff00, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x90, IBV_WC_LOC_PROT_ERR, -1, -1);
	snprintf(want, sizeof(want),
		 "sg_list[0] lkey 0x%x addr %#" PRIx64
		 " length 64: no region has this lkey",
		 ep.mr->lkey ^ 0x00ffff00, (uint64_t)(uintptr_t)ep.buf);
	EXPECT_LOG(
		take_log(), "completer: QP 0x",
		"wr_id 0x90 IBV_WR_SEND len 64 fails with IBV_WC_LOC_PROT_ERR",
		want);
	/* A SEND into B's receive WQE whose region lacks LOCAL_WRITE. */
	hx_ep_new_qp(&ep);
	hx_ep_connect(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x91,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x91, IBV_WC_REM_OP_ERR, -1, -1);
	EXPECT_LOG(take_log(), "fails with IBV_WC_REM_OP_ERR",
		   "could not execute it");
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void local_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *ro;
	struct hx_ep ep;
	char want[200];

	log_to_file("rc_explain");
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_ep_new_qp(&ep);
	hx_ep_connect(&ep);
	ro = ibv_reg_mr(ep.pd, ep.buf + 4096, 4096, IBV_ACCESS_REMOTE_READ);
	REQUIRE(ro);
	take_log();
	HX_CHECK_RC(hx_post_recv(&ep, 0x92, ep.buf + 4096, 128, ro->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 0x92, IBV_WC_LOC_PROT_ERR, -1, -1);
	snprintf(
		want, sizeof(want),
		"responder: QP 0x%06x: a receive WQE cannot take the message: sg_list[0] lkey 0x%x addr %#" PRIx64
		" length 128: the region lacks IBV_ACCESS_LOCAL_WRITE (has REMOTE_READ)",
		ep.qp->qp_num, ro->lkey, (uint64_t)(uintptr_t)ep.buf + 4096);
	EXPECT_LOG(take_log(), want);
	hx_sync(fd);
	CHECK_EQ(ibv_dereg_mr(ro), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

/* ---- RNR and retry exhaustion ---------------------------------------------- */

static void rnr_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	log_to_file("rc_explain");
	o.rnr_retry = 1;
	o.min_rnr_timer = 1;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	take_log();
	/* B posts no receive WQE. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x77,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x77, IBV_WC_RNR_RETRY_EXC_ERR, -1, -1);
	EXPECT_LOG(
		take_log(), "completer: QP 0x", "wr_id 0x77 IBV_WR_SEND len 64",
		"fails with IBV_WC_RNR_RETRY_EXC_ERR",
		"had no receive WQE posted (Receiver Not Ready) after rnr_retry 1 retries");
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void rnr_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void retry_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[96];

	log_to_file("rc_explain");
	o.retry_cnt = 1;
	o.timeout = 8; /* about 1 ms */
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B's QP is in RESET */
	take_log();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
				 0x78, ep.buf, 64, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x78, IBV_WC_RETRY_EXC_ERR, -1, -1);
	snprintf(want, sizeof(want), "no acknowledgment from QP 0x%06x",
		 ep.peer.qpn);
	EXPECT_LOG(
		take_log(), "completer: QP 0x",
		"wr_id 0x78 IBV_WR_RDMA_WRITE len 64",
		"fails with IBV_WC_RETRY_EXC_ERR", want,
		"after retry_cnt 1 retries of the Local ACK Timeout (timeout 8)");
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void retry_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	/* A QP in RESET drops what arrives: nothing is acknowledged. */
	CHECK_EQ(ibv_modify_qp(ep.qp, &a, IBV_QP_STATE), 0);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(access, 60),
	HX_CASE(local, 30),
	HX_CASE(rnr, 30),
	HX_CASE(retry, 30),
	{ 0 },
};

HX_MAIN(cases)
