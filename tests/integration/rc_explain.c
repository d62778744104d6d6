/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Explained failures between two processes (engine/diag/explain.c): each
 * remote access refusal writes, in the target's log, one line naming the
 * check that failed and the key, address and length (unknown rkey,
 * bounds, a right the region lacks, another PD, the QP's access flags, a
 * memory window's bounds) and counts it by reason (SOFTVERBS_STATS=1);
 * the requester's log names the WR, the status and where to look.  RNR
 * and retry exhaustion name the count that ran out.  Each process logs to
 * its own VERBS_LOG_FILE, set before it first uses the library.
 *
 * Every case runs on each path (integration.* between two processes of
 * this host: shared memory, where small SENDs and atomics take message
 * channels and WRITEs and READs the one-copy path; integration.udp.*: the
 * packet path over UDP; explain_standard.sh: standard mode), and asserts
 * whole lines: the same text whichever path refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <unistd.h>

#include "harness.h"
#include "logcap.h"

static void dgid_note(const struct hx_ep *ep, char *note, size_t n);

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
	{ "atomic rights", IBV_WR_ATOMIC_CMP_AND_SWP, K_NOW, 0, 8, false, 0 },
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
	char want[400];

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
		if (c->op == IBV_WR_ATOMIC_CMP_AND_SWP)
			HX_CHECK_RC(hx_post_atomic(
					    &ep, c->op, IBV_SEND_SIGNALED,
					    0x100 + i, ep.buf, ep.mr->lkey,
					    k.addr[c->key] + c->off, rk, 0, 1),
				    0);
		else
			HX_CHECK_RC(hx_post_send(&ep, c->op, IBV_SEND_SIGNALED,
						 0x100 + i, ep.buf, c->len,
						 ep.mr->lkey,
						 k.addr[c->key] + c->off, rk,
						 0),
				    0);
		if (!HX_EXPECT(ep.scq, NULL, 0x100 + i, IBV_WC_REM_ACCESS_ERR,
			       -1, -1))
			hx_log("case %d: %s", i, c->what);
		/* The requester's line: the WR, the status, the key, and
		 * where the reason is. */
		snprintf(
			want, sizeof(want),
			"softverbs warning: completer: QP 0x%06x: wr_id %#x IBV_WR_%s len %u fails with IBV_WC_REM_ACCESS_ERR: QP 0x%06x refused the access (rkey 0x%x addr %#" PRIx64
			"): its process logs which check failed (\"responder:\") and counts it (SOFTVERBS_STATS=1, access_*)",
			ep.qp->qp_num, 0x100 + i,
			c->op == IBV_WR_RDMA_READ ? "RDMA_READ" :
			c->op == IBV_WR_ATOMIC_CMP_AND_SWP ?
						    "ATOMIC_CMP_AND_SWP" :
						    "RDMA_WRITE",
			c->len, ep.peer.qpn, rk, k.addr[c->key] + c->off);
		EXPECT_LINE(take_log(), want);
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
	char want[2][300], line[700];
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
			 c->op == IBV_WR_RDMA_READ	    ? "RDMA READ" :
			 c->op == IBV_WR_ATOMIC_CMP_AND_SWP ? "ATOMIC" :
							      "RDMA WRITE",
			 rk, k.addr[c->key] + c->off, c->len);
		/* want[1]: the reason; line: the whole line. */
		switch (i) {
		case 0:
			snprintf(
				want[1], sizeof(want[1]),
				"no region or memory window has this rkey (never registered, deregistered, or the window was rebound: man ibv_inc_rkey)");
			break;
		case 1:
			snprintf(want[1], sizeof(want[1]),
				 "outside the region [%#" PRIx64 ", %#" PRIx64
				 ") (length 4096)",
				 k.addr[K_MAIN], k.addr[K_MAIN] + 4096);
			break;
		case 2:
			snprintf(
				want[1], sizeof(want[1]),
				"the region lacks IBV_ACCESS_REMOTE_WRITE (has LOCAL_WRITE|REMOTE_READ)");
			break;
		case 3:
			snprintf(
				want[1], sizeof(want[1]),
				"the region's PD (handle %u) is not the QP's PD (handle %u) (IBA C9-88)",
				pd2->handle, ep.pd->handle);
			break;
		case 5:
			snprintf(want[1], sizeof(want[1]),
				 "outside the window [%#" PRIx64 ", %#" PRIx64
				 ") (length 1024)",
				 k.addr[K_MW], k.addr[K_MW] + 1024);
			break;
		case 6:
			snprintf(
				want[1], sizeof(want[1]),
				"the region lacks IBV_ACCESS_REMOTE_ATOMIC (has LOCAL_WRITE|REMOTE_READ)");
			break;
		}
		if (i == 4)
			snprintf(
				line, sizeof(line),
				"softverbs warning: responder: QP 0x%06x: RDMA READ refused: the QP's qp_access_flags lack IBV_ACCESS_REMOTE_READ (has REMOTE_WRITE; set it with ibv_modify_qp IBV_QP_ACCESS_FLAGS); the requester gets IBV_WC_REM_ACCESS_ERR",
				ep.qp->qp_num);
		else
			snprintf(
				line, sizeof(line),
				"softverbs warning: %s%s; the requester gets IBV_WC_REM_ACCESS_ERR",
				want[0], want[1]);
		EXPECT_LINE(t, line);
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
	char want[400];

	log_to_file("rc_explain");
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	take_log();
	/* A gather list whose lkey names nothing. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x90,
				 ep.buf, 64, ep.mr->lkey ^ 0x00ffff00, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x90, IBV_WC_LOC_PROT_ERR, -1, -1);
	snprintf(
		want, sizeof(want),
		"softverbs warning: completer: QP 0x%06x: wr_id 0x90 IBV_WR_SEND len 64 fails with IBV_WC_LOC_PROT_ERR: sg_list[0] lkey 0x%x addr %#" PRIx64
		" length 64: no region has this lkey (never registered, or deregistered)",
		ep.qp->qp_num, ep.mr->lkey ^ 0x00ffff00,
		(uint64_t)(uintptr_t)ep.buf);
	EXPECT_LINE(take_log(), want);
	/* A SEND into B's receive WQE whose region lacks LOCAL_WRITE. */
	hx_ep_new_qp(&ep);
	hx_ep_connect(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0x91,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0x91, IBV_WC_REM_OP_ERR, -1, -1);
	snprintf(
		want, sizeof(want),
		"softverbs warning: completer: QP 0x%06x: wr_id 0x91 IBV_WR_SEND len 64 fails with IBV_WC_REM_OP_ERR: QP 0x%06x could not execute it (its receive WQE's memory, its CQ): its process logs which (\"responder:\")",
		ep.qp->qp_num, ep.peer.qpn);
	EXPECT_LINE(take_log(), want);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void local_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *ro;
	struct hx_ep ep;
	char want[400];

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
		"softverbs warning: responder: QP 0x%06x: a receive WQE cannot take the message: sg_list[0] lkey 0x%x addr %#" PRIx64
		" length 128: the region lacks IBV_ACCESS_LOCAL_WRITE (has REMOTE_READ); it completes with IBV_WC_LOC_PROT_ERR, the requester's with IBV_WC_REM_OP_ERR",
		ep.qp->qp_num, ro->lkey, (uint64_t)(uintptr_t)ep.buf + 4096);
	EXPECT_LINE(take_log(), want);
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
	char want[400];

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
	snprintf(
		want, sizeof(want),
		"softverbs warning: completer: QP 0x%06x: wr_id 0x77 IBV_WR_SEND len 64 fails with IBV_WC_RNR_RETRY_EXC_ERR: QP 0x%06x had no receive WQE posted (Receiver Not Ready) after rnr_retry 1 retries: post receives before the peer sends, or set rnr_retry 7 (retry forever)",
		ep.qp->qp_num, ep.peer.qpn);
	EXPECT_LINE(take_log(), want);
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
	char want[700], d[INET6_ADDRSTRLEN], note[200];

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
	inet_ntop(AF_INET6, ep.peer.gid.raw, d, sizeof(d));
	dgid_note(&ep, note, sizeof(note));
	snprintf(
		want, sizeof(want),
		"softverbs warning: completer: QP 0x%06x: wr_id 0x78 IBV_WR_RDMA_WRITE len 64 fails with IBV_WC_RETRY_EXC_ERR: no acknowledgment from QP 0x%06x at dgid %s after retry_cnt 1 retries of the Local ACK Timeout (timeout 8): the peer QP is gone, not in RTR/RTS, or unreachable at that GID%s",
		ep.qp->qp_num, ep.peer.qpn, d, note);
	EXPECT_LINE(take_log(), want);
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

/* ---- whole lines, the same on every path ----------------------------------- */

#define W "softverbs warning: "

static const char inv_req_why[] =
	"found the request invalid (a message longer than its receive WQE, a misaligned atomic, READs or atomics beyond its max_dest_rd_atomic, an rkey it cannot invalidate, an opcode it does not take): its process logs which (\"responder:\")";

/* With HX_NETNS_A/B (explain_standard.sh: SOFTVERBS_ROCE=standard between
 * two network namespaces joined by a veth pair) each side enters its own
 * namespace and uses the GID of HX_ADDR_A/B, at the veth's path MTU. */
static void open_side(struct hx_ep *ep, struct hx_opts *o, int fd)
{
	bool b = !strcmp(hx_role, "B");
	const char *ns = getenv(b ? "HX_NETNS_B" : "HX_NETNS_A");

	if (ns && *ns) {
		hx_enter_netns(ns);
		o->gid_addr = getenv(b ? "HX_ADDR_B" : "HX_ADDR_A");
		o->path_mtu = IBV_MTU_1024;
	}
	hx_ep_open(ep, o, fd);
}

/* What the responder knows of a SEND's length when it refuses it: all
 * of it, or, at a path MTU below it, that it is longer than its first
 * packet. */
static void send_len(const struct hx_ep *ep, uint32_t len, char *buf, size_t n)
{
	if (len <= ep->mtu_bytes)
		snprintf(buf, n, "%u bytes", len);
	else
		snprintf(buf, n, "more than %u bytes", ep->mtu_bytes);
}

/* B's receives take 100 bytes; A sends 512 bytes (a message channel on
 * shm), then, on new QPs, 4096 (packets on every path). */
static const uint32_t recvlen_lens[] = { 512, 4096 };

static void recvlen_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[600];

	log_to_file("rc_explain");
	o.path_mtu = IBV_MTU_4096;
	open_side(&ep, &o, fd);
	for (int i = 0; i < 2; i++) {
		if (i)
			hx_ep_new_qp(&ep);
		hx_ep_connect(&ep);
		hx_sync(fd); /* B's receive is posted */
		take_log();
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED,
					 0xa0 + i, ep.buf, recvlen_lens[i],
					 ep.mr->lkey, 0, 0, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 0xa0 + i, IBV_WC_REM_INV_REQ_ERR, -1,
			  -1);
		snprintf(
			want, sizeof(want),
			W
			"completer: QP 0x%06x: wr_id %#x IBV_WR_SEND len %u fails with IBV_WC_REM_INV_REQ_ERR: QP 0x%06x %s",
			ep.qp->qp_num, 0xa0 + i, recvlen_lens[i], ep.peer.qpn,
			inv_req_why);
		EXPECT_LINE(take_log(), want);
		hx_sync(fd);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void recvlen_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[600], len[40];

	log_to_file("rc_explain");
	o.path_mtu = IBV_MTU_4096;
	open_side(&ep, &o, fd);
	for (int i = 0; i < 2; i++) {
		if (i)
			hx_ep_new_qp(&ep);
		hx_ep_connect(&ep);
		HX_CHECK_RC(hx_post_recv(&ep, 0xb0 + i, ep.buf, 100,
					 ep.mr->lkey),
			    0);
		take_log();
		hx_sync(fd);
		HX_EXPECT(ep.rcq, NULL, 0xb0 + i, IBV_WC_LOC_LEN_ERR, -1, -1);
		send_len(&ep, recvlen_lens[i], len, sizeof(len));
		snprintf(
			want, sizeof(want),
			W
			"responder: QP 0x%06x: a SEND of %s is longer than receive wr_id %#x's 100 bytes; it completes with IBV_WC_LOC_LEN_ERR, the requester's with IBV_WC_REM_INV_REQ_ERR: post receives at least as long as the longest message",
			ep.qp->qp_num, len, 0xb0 + i);
		EXPECT_LINE(take_log(), want);
		hx_sync(fd);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

/* Invalid READ and atomic requests: a misaligned atomic (a channel on
 * shm), then towards a QP whose max_dest_rd_atomic is 0 an atomic (a
 * channel on shm) and a READ (which the one-copy path leaves to
 * packets). */
enum { RD_MISALIGNED, RD_ATOMIC0, RD_READ0, RD_N };

static void rdatomic_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[600];

	log_to_file("rc_explain");
	open_side(&ep, &o, fd);
	for (int i = 0; i < RD_N; i++) {
		if (i)
			hx_ep_new_qp(&ep);
		hx_ep_connect(&ep);
		take_log();
		if (i == RD_READ0)
			HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ,
						 IBV_SEND_SIGNALED, 0xc0 + i,
						 ep.buf, 64, ep.mr->lkey,
						 ep.peer.addr, ep.peer.rkey, 0),
				    0);
		else
			HX_CHECK_RC(
				hx_post_atomic(
					&ep,
					i == RD_MISALIGNED ?
						IBV_WR_ATOMIC_CMP_AND_SWP :
						IBV_WR_ATOMIC_FETCH_AND_ADD,
					IBV_SEND_SIGNALED, 0xc0 + i, ep.buf,
					ep.mr->lkey,
					ep.peer.addr +
						(i == RD_MISALIGNED ? 4 : 0),
					ep.peer.rkey, 1, 2),
				0);
		HX_EXPECT(ep.scq, NULL, 0xc0 + i, IBV_WC_REM_INV_REQ_ERR, -1,
			  -1);
		snprintf(
			want, sizeof(want),
			W
			"completer: QP 0x%06x: wr_id %#x IBV_WR_%s len %u fails with IBV_WC_REM_INV_REQ_ERR: QP 0x%06x %s",
			ep.qp->qp_num, 0xc0 + i,
			i == RD_MISALIGNED ? "ATOMIC_CMP_AND_SWP" :
			i == RD_ATOMIC0	   ? "ATOMIC_FETCH_AND_ADD" :
					     "RDMA_READ",
			i == RD_READ0 ? 64 : 8, ep.peer.qpn, inv_req_why);
		EXPECT_LINE(take_log(), want);
		hx_sync(fd);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void rdatomic_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[600];

	log_to_file("rc_explain");
	open_side(&ep, &o, fd);
	for (int i = 0; i < RD_N; i++) {
		if (i) {
			ep.o.max_dest_rd_atomic = 0;
			hx_ep_new_qp(&ep);
		}
		hx_ep_connect(&ep);
		hx_sync(fd);
		if (i == RD_MISALIGNED)
			snprintf(
				want, sizeof(want),
				W
				"responder: QP 0x%06x: ATOMIC rkey 0x%x addr %#" PRIx64
				": the address is not 8-byte aligned, as an atomic's must be; the requester gets IBV_WC_REM_INV_REQ_ERR",
				ep.qp->qp_num, ep.mr->rkey,
				(uint64_t)(uintptr_t)ep.buf + 4);
		else
			snprintf(
				want, sizeof(want),
				W
				"responder: QP 0x%06x: %s refused: the QP's max_dest_rd_atomic is 0, so it answers no READ or atomic (set it with ibv_modify_qp to RTR, at least the requester's max_rd_atomic); the requester gets IBV_WC_REM_INV_REQ_ERR",
				ep.qp->qp_num,
				i == RD_READ0 ? "RDMA READ" : "ATOMIC");
		EXPECT_LINE(take_log(), want);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

/* A SEND with Invalidate naming a key that is no window (packets on
 * every path: channels carry no invalidation). */
static void invrkey_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[600];

	log_to_file("rc_explain");
	open_side(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B's receive is posted */
	take_log();
	/* (imm_data and invalidate_rkey share the WR's union.) */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND_WITH_INV, IBV_SEND_SIGNALED,
				 0xf0, ep.buf, 64, ep.mr->lkey, 0, 0,
				 0x12345678),
		    0);
	HX_EXPECT(ep.scq, NULL, 0xf0, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	snprintf(
		want, sizeof(want),
		W
		"completer: QP 0x%06x: wr_id 0xf0 IBV_WR_SEND_WITH_INV len 64 fails with IBV_WC_REM_INV_REQ_ERR: QP 0x%06x %s",
		ep.qp->qp_num, ep.peer.qpn, inv_req_why);
	EXPECT_LINE(take_log(), want);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void invrkey_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[600];

	log_to_file("rc_explain");
	open_side(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 0xf1, ep.buf, 4096, ep.mr->lkey), 0);
	take_log();
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 0xf1, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	snprintf(
		want, sizeof(want),
		W
		"responder: QP 0x%06x: a SEND with invalidate into receive wr_id 0xf1 names rkey 0x%x, which is no bound type 2 memory window of the QP's PD (regions and type 1 windows cannot be invalidated: IBA 10.6.7); it completes with IBV_WC_REM_INV_REQ_ERR, as the requester's does",
		ep.qp->qp_num, htonl(0x12345678));
	EXPECT_LINE(take_log(), want);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

/* What the RETRY_EXC line says about the dgid (explain.c path_text) when
 * the GIDs of both ends are of one kind. */
static void dgid_note(const struct hx_ep *ep, char *note, size_t n)
{
	const uint8_t *d = ep->peer.gid.raw;
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff },
			     one[16] = { [15] = 1 };
	char s[INET6_ADDRSTRLEN];

	note[0] = '\0';
	if ((!memcmp(d, v4, 12) && d[12] == 127) || !memcmp(d, one, 16)) {
		snprintf(
			note, n,
			"; the dgid is a loopback address: a peer on this host only");
	} else if (d[0] == 0xfe && (d[1] & 0xc0) == 0x80) {
		inet_ntop(AF_INET6, ep->gid.raw, s, sizeof(s));
		snprintf(
			note, n,
			"; the dgid is link-local: it reaches only the link of sgid_index %d %s",
			ep->gid_index, s);
	}
}

/* A request towards a QP in the error state: dropped there (said once),
 * the requester's retries run out (the channel is closed at ERR, so on
 * shm too the SEND goes as packets). */
static void qperr_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	char want[700], d[INET6_ADDRSTRLEN], note[200];

	log_to_file("rc_explain");
	o.retry_cnt = 1;
	o.timeout = 8;
	open_side(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B's QP is in ERR */
	take_log();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0xd0,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0xd0, IBV_WC_RETRY_EXC_ERR, -1, -1);
	inet_ntop(AF_INET6, ep.peer.gid.raw, d, sizeof(d));
	dgid_note(&ep, note, sizeof(note));
	snprintf(
		want, sizeof(want),
		W
		"completer: QP 0x%06x: wr_id 0xd0 IBV_WR_SEND len 64 fails with IBV_WC_RETRY_EXC_ERR: no acknowledgment from QP 0x%06x at dgid %s after retry_cnt 1 retries of the Local ACK Timeout (timeout 8): the peer QP is gone, not in RTR/RTS, or unreachable at that GID%s",
		ep.qp->qp_num, ep.peer.qpn, d, note);
	EXPECT_LINE(take_log(), want);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void qperr_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct hx_ep ep;
	char want[600];

	log_to_file("rc_explain");
	open_side(&ep, &o, fd);
	hx_ep_connect(&ep);
	CHECK_EQ(ibv_modify_qp(ep.qp, &a, IBV_QP_STATE), 0);
	take_log();
	hx_sync(fd);
	hx_sync(fd); /* A's SEND failed */
	snprintf(
		want, sizeof(want),
		W
		"responder: QP 0x%06x: a request from QP 0x%06x arrives in state ERR and is dropped, as IBA says (requests are taken from RTR on): its WR ends in IBV_WC_RETRY_EXC_ERR; this QP went to ERR before (an error completion or ibv_modify_qp says why)",
		ep.qp->qp_num, ep.peer.qpn);
	EXPECT_LINE(take_log(), want);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

/* ---- GIDs that cannot talk: warned at RTR, flagged at RETRY_EXC ----------- */

/* The first GID that is an IPv4 address other than loopback (v4: true)
 * or an IPv6 one (v4: false); -1: none. */
static int gid_of_kind(struct ibv_context *ctx, bool v4, union ibv_gid *g)
{
	static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_gid_entry tab[64];
	int n = (int)ibv_query_gid_table(ctx, tab, 64, 0);

	for (int i = 0; i < n; i++) {
		bool m = !memcmp(tab[i].gid.raw, pfx, 12);

		if (m == v4 && (!v4 || tab[i].gid.raw[12] != 127)) {
			*g = tab[i].gid;
			return (int)tab[i].gid_index;
		}
	}
	return -1;
}

static void gidwarn_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	char want[1000], s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	union ibv_gid real, v6, lo;
	struct hx_ep ep;
	int ri, v6i, li;

	log_to_file("rc_explain");
	o.gid_addr = "127.0.0.1";
	o.rnr_retry = 6; /* packets on shm too: no message channel */
	o.retry_cnt = 1;
	o.timeout = 8;
	hx_ep_open(&ep, &o, fd);
	li = ep.gid_index;
	lo = ep.gid;
	ri = gid_of_kind(ep.ctx, true, &real);
	v6i = gid_of_kind(ep.ctx, false, &v6);
	REQUIRE(v6i >= 0); /* ::1 at least */
	take_log();

	/* IPv6 sgid towards the peer's IPv4 GID: warned, not refused. */
	hx_ep_exchange(&ep);
	ep.gid_index = v6i;
	CHECK_EQ(hx_ep_rtr(&ep), 0);
	inet_ntop(AF_INET6, v6.raw, s, sizeof(s));
	snprintf(
		want, sizeof(want),
		W
		"ibv_modify_qp: QP 0x%06x: attr.ah_attr: sgid_index %d is %s (IPv6) but grh.dgid ::ffff:127.0.0.1 is IPv4: RoCE v2 sends an IPv4 or an IPv6 datagram as the source GID says, so the peer sees packets from another address than its dgid and drops them, and this QP ends in IBV_WC_RETRY_EXC_ERR (hardware refuses the address, as SOFTVERBS_STRICT=1 does); use the index of a GID of the peer's family on both sides (ibv_devinfo -v, softverbs devices)",
		ep.qp->qp_num, v6i, s);
	EXPECT_LINE(take_log(), want);
	if (ri < 0) {
		hx_log("no IPv4 address but loopback here: loopback cases skipped");
		hx_send_u64(fd, 0);
		CHECK_EQ(hx_ep_close(&ep), 0);
		unlink(log_path);
		return;
	}
	hx_send_u64(fd, 1);
	inet_ntop(AF_INET6, real.raw, d, sizeof(d));

	/* A real sgid towards the loopback dgid. */
	hx_ep_new_qp(&ep);
	hx_ep_exchange(&ep);
	ep.gid_index = ri;
	CHECK_EQ(hx_ep_rtr(&ep), 0);
	snprintf(
		want, sizeof(want),
		W
		"ibv_modify_qp: QP 0x%06x: attr.ah_attr: grh.dgid ::ffff:127.0.0.1 is a loopback address but sgid_index %d is %s: a loopback address reaches this host only, and the peer, which sees our packets come from %s, drops them unless its dgid is that address, so this QP ends in IBV_WC_RETRY_EXC_ERR; use the GIDs of one address family and scope on both sides: the peer's real address here, ours there (ibv_devinfo -v, softverbs devices)",
		ep.qp->qp_num, ri, d, d);
	EXPECT_LINE(take_log(), want);

	/* The loopback sgid towards a real dgid, connected: B (loopback on
	 * both ends) takes the SEND, its ACKs come from the loopback
	 * address, which this QP does not know as its peer's. */
	hx_ep_new_qp(&ep);
	hx_ep_exchange(&ep);
	ep.gid_index = li;
	ep.peer.gid = real;
	CHECK_EQ(hx_ep_rtr(&ep), 0);
	snprintf(
		want, sizeof(want),
		W
		"ibv_modify_qp: QP 0x%06x: attr.ah_attr: sgid_index %d is the loopback GID ::ffff:127.0.0.1 but grh.dgid %s is not a loopback address: packets from a loopback address never leave this host, and a peer that knows us by another GID drops them, so this QP ends in IBV_WC_RETRY_EXC_ERR (no HCA has a loopback GID); use the GID of the address the peer reaches you on, on both sides (ibv_devinfo -v, softverbs devices)",
		ep.qp->qp_num, li, d);
	EXPECT_LINE(take_log(), want);
	CHECK_EQ(hx_ep_rts(&ep), 0);
	hx_sync(fd); /* B in RTS, its receive posted */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 0xe0,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 0xe0, IBV_WC_RETRY_EXC_ERR, -1, -1);
	snprintf(
		want, sizeof(want),
		W
		"completer: QP 0x%06x: wr_id 0xe0 IBV_WR_SEND len 64 fails with IBV_WC_RETRY_EXC_ERR: no acknowledgment from QP 0x%06x at dgid %s after retry_cnt 1 retries of the Local ACK Timeout (timeout 8): the peer QP is gone, not in RTR/RTS, or unreachable at that GID; sgid_index %d is the loopback GID ::ffff:127.0.0.1: its packets never leave this host, and a peer knowing us by another GID drops them (use the GID of the address the peer reaches us on)",
		ep.qp->qp_num, ep.peer.qpn, d, li);
	{
		const char *t = take_log();
		char from[400];

		EXPECT_LINE(t, want);
		snprintf(
			from, sizeof(from),
			W
			"receiver: QP 0x%06x: packets for this QP come from ::ffff:127.0.0.1, but it is connected to %s (its ah_attr.grh.dgid): they are dropped, and the peer's WRs end in IBV_WC_RETRY_EXC_ERR; the peer's sgid must be the GID given here as dgid, and ours its dgid",
			ep.qp->qp_num, d);
		EXPECT_LINE(t, from);
	}
	(void)lo;
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void gidwarn_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	struct ibv_wc wc;

	o.gid_addr = "127.0.0.1";
	o.rnr_retry = 6;
	hx_ep_open(&ep, &o, fd);
	hx_ep_exchange(&ep);
	if (!hx_recv_u64(fd)) {
		CHECK_EQ(hx_ep_close(&ep), 0);
		return;
	}
	hx_ep_new_qp(&ep);
	hx_ep_exchange(&ep);
	hx_ep_new_qp(&ep);
	hx_ep_exchange(&ep);
	CHECK_EQ(hx_ep_rtr(&ep), 0);
	CHECK_EQ(hx_ep_rts(&ep), 0);
	HX_CHECK_RC(hx_post_recv(&ep, 0xe1, ep.buf, 4096, ep.mr->lkey), 0);
	hx_sync(fd);
	/* The SEND arrives from the address we know A by. */
	HX_EXPECT(ep.rcq, &wc, 0xe1, IBV_WC_SUCCESS, IBV_WC_RECV, 64);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(access, 60),  HX_CASE(local, 30),
	HX_CASE(rnr, 30),     HX_CASE(retry, 30),
	HX_CASE(recvlen, 30), HX_CASE(rdatomic, 30),
	HX_CASE(qperr, 30),   HX_CASE(invrkey, 30),
	HX_CASE(gidwarn, 30), { 0 },
};

HX_MAIN(cases)
