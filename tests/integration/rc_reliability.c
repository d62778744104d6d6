/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Reliability with real faults: RNR (no receive posted yet) retried until
 * the receiver posts one (rnr_retry = 7 retries forever) or failed at once
 * (rnr_retry = 0 -> IBV_WC_RNR_RETRY_EXC_ERR); transport retries exhausted
 * because the peer QP was destroyed or the peer process was killed
 * (IBV_WC_RETRY_EXC_ERR after retry_cnt retries of `timeout`).
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* ---- RNR, then the receive arrives 200 ms later ------------------------- */

static void rnr_wait_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_wc wc;
	struct hx_ep ep;
	uint64_t t0;

	o.rnr_retry = 7;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_fill(ep.buf, 5 * 1000, 3);
	t0 = hx_now_ms();
	for (int i = 0; i < 5; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, i,
					 ep.buf + i * 1000, 1000, ep.mr->lkey,
					 0, 0, 0),
			    0);
	hx_send_u64(fd, 1); /* posted */
	HX_EXPECT(ep.scq, &wc, 0, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	uint64_t took = hx_now_ms() - t0;
	hx_log("first SEND completed after %llu ms", (unsigned long long)took);
	/* It could only complete once B posted its receives. */
	CHECK(took >= 150);
	for (int i = 1; i < 5; i++)
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void rnr_wait_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.min_rnr_timer = 14; /* 1.28 ms */
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	(void)hx_recv_u64(fd);
	hx_msleep(200);
	for (int i = 0; i < 5; i++)
		HX_CHECK_RC(hx_post_recv(&ep, 10 + i, ep.buf + i * 1000, 1000,
					 ep.mr->lkey),
			    0);
	for (int i = 0; i < 5; i++)
		HX_EXPECT(ep.rcq, NULL, 10 + i, IBV_WC_SUCCESS, IBV_WC_RECV,
			  1000);
	HX_CHECK_PATTERN(ep.buf, 5 * 1000, 3);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- RNR with rnr_retry = 0 ------------------------------------------------ */

static void rnr_exc_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.rnr_retry = 0;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2, ep.buf,
				 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_RNR_RETRY_EXC_ERR, -1, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void rnr_exc_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.min_rnr_timer = 1;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	/* Nothing was received. */
	HX_EXPECT_NONE(ep.rcq, 50);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- retries exhausted: the peer QP is destroyed ------------------------ */

static void retry_destroyed_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint64_t t0;

	o.timeout = 12; /* 4.096 us * 2^12 = 16.8 ms */
	o.retry_cnt = 3;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	(void)hx_recv_u64(fd); /* B destroyed its QP */
	t0 = hx_now_ms();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 1,
				 ep.buf, 4096, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, 0, 2, ep.buf, 4, ep.mr->lkey,
				 0, 0, 0),
		    0);
	HX_EXPECT_T(ep.scq, NULL, 1, IBV_WC_RETRY_EXC_ERR, -1, -1, 8000);
	hx_log("retry exceeded after %llu ms",
	       (unsigned long long)(hx_now_ms() - t0));
	/* (1 + retry_cnt) timeouts at least. */
	CHECK(hx_now_ms() - t0 >= 4 * 16);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void retry_destroyed_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(ibv_destroy_qp(ep.qp), 0);
	ep.qp = NULL;
	hx_send_u64(fd, 1);
	hx_sync(fd);
	/* The data never landed anywhere. */
	CHECK_EQ(ep.buf[0], 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- retries exhausted: the peer process is killed ---------------------- */
/*
 * B forks a grandchild that owns the peer QP; once it is connected B kills
 * it with SIGKILL (no cleanup of any kind) and tells A.
 */
static void retry_killed_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.timeout = 12;
	o.retry_cnt = 3;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	CHECK_EQ(hx_recv_u64(fd), 9); /* the peer was killed */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 1,
				 ep.buf, 4096, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2, ep.buf,
				 4, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT_T(ep.scq, NULL, 1, IBV_WC_RETRY_EXC_ERR, -1, -1, 8000);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void retry_killed_b(int fd)
{
	int p[2];
	pid_t pid;
	char c;
	int st;

	REQUIRE(pipe(p) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct hx_opts o = hx_opts_default();
		struct hx_ep ep;

		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		hx_role = "B'";
		hx_ep_open(&ep, &o, fd);
		hx_ep_connect(&ep);
		if (write(p[1], "c", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	CHECK_EQ(read(p[0], &c, 1), 1);
	kill(pid, SIGKILL);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	hx_send_u64(fd, 9);
}

/* ---- duplicates under loss: READs re-executed, atomics replayed ---------- */
/*
 * The engine's own fault injection (SOFTVERBS_LOSS=percent, in both
 * processes) drops a share of all packets, requests and responses alike,
 * so requests are retransmitted (go-back-N) and the responder sees
 * duplicates: a duplicate READ is answered again, a duplicate atomic is
 * answered from the replay cache and never executed twice, and duplicates
 * never count against max_dest_rd_atomic.  A keeps 16 READ/atomic requests
 * outstanding (max_rd_atomic = max_dest_rd_atomic = 16).
 */
#define DUP_OPS 1500
#define DUP_WINDOW 16

static void lossy_open(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	setenv("SOFTVERBS_LOSS", "10", 1);
	o.timeout = 10; /* 4.2 ms */
	o.max_send_wr = 2 * DUP_WINDOW;
	o.buf_len = 2u << 20;
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

/* mode: 0 mixed (every third a READ), 1 READs only, 2 atomics only */
static int is_read(int mode, int i)
{
	return mode == 1 || (mode == 0 && i % 3 == 2);
}

static void lossy_run_a(int fd, int mode)
{
	struct ibv_wc wc;
	struct hx_ep ep;
	int posted = 0, done = 0, bad = 0;

	lossy_open(&ep, fd);
	uint64_t *res = (uint64_t *)(ep.buf + (1u << 20));
	uint8_t *want = hx_alloc(128 * 4096);
	int rbad = 0;
	hx_fill(want, 128 * 4096, 0);
	hx_sync(fd);
	while (done < DUP_OPS) {
		while (posted < DUP_OPS && posted - done < DUP_WINDOW) {
			int rc;

			/* Every third a READ of 4 KiB, the rest FETCH_ADD 1. */
			if (is_read(mode, posted))
				rc = hx_post_send(
					&ep, IBV_WR_RDMA_READ,
					IBV_SEND_SIGNALED, posted,
					ep.buf + (posted % 128) * 4096, 4096,
					ep.mr->lkey,
					ep.peer.addr + (posted % 128) * 4096,
					ep.peer.rkey, 0);
			else
				rc = hx_post_atomic(&ep,
						    IBV_WR_ATOMIC_FETCH_AND_ADD,
						    IBV_SEND_SIGNALED, posted,
						    &res[posted], ep.mr->lkey,
						    ep.peer.addr + (1u << 20),
						    ep.peer.rkey, 1, 0);
			if (rc) {
				HX_CHECK_RC(rc, 0);
				goto out;
			}
			posted++;
		}
		if (hx_poll(ep.scq, &wc, 1, 10000) != 1) {
			CHECK(!"completion missing under loss");
			goto out;
		}
		if (wc.wr_id != (uint64_t)done || wc.status != IBV_WC_SUCCESS) {
			hx_log("op %d: wr_id %llu status %s", done,
			       (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
			CHECK(0);
			goto out;
		}
		if (is_read(mode, done)) {
			size_t off = (size_t)(done % 128) * 4096;

			rbad += memcmp(ep.buf + off, want + off, 4096) != 0;
			memset(ep.buf + off, 0, 4096);
		}
		done++;
	}
	/* Each FETCH_ADD saw the count of those before it: executed once. */
	uint64_t expect = 0;
	for (int i = 0; i < DUP_OPS; i++) {
		if (is_read(mode, i))
			continue;
		bad += res[i] != expect;
		expect++;
	}
	if (bad)
		hx_log("%d fetch-add results out of sequence", bad);
	CHECK_EQ(bad, 0);
	CHECK_EQ(rbad, 0);
	hx_send_u64(fd, expect);
out:
	hx_send_u64(fd, ~0ULL);
	hx_sync(fd);
	hx_free(want, 128 * 4096);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void lossy_b(int fd)
{
	struct hx_ep ep;

	lossy_open(&ep, fd);
	hx_fill(ep.buf, 128 * 4096, 0);
	hx_sync(fd);
	uint64_t n = hx_recv_u64(fd);
	if (n != ~0ULL) {
		CHECK_EQ(*(uint64_t *)(ep.buf + (1u << 20)), n);
		(void)hx_recv_u64(fd);
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void lossy_mixed_a(int fd)
{
	lossy_run_a(fd, 0);
}
static void lossy_mixed_b(int fd)
{
	lossy_b(fd);
}
static void lossy_reads_a(int fd)
{
	lossy_run_a(fd, 1);
}
static void lossy_reads_b(int fd)
{
	lossy_b(fd);
}
static void lossy_atomics_a(int fd)
{
	lossy_run_a(fd, 2);
}
static void lossy_atomics_b(int fd)
{
	lossy_b(fd);
}

static const struct hx_case cases[] = {
	HX_CASE(rnr_wait, 20),	      HX_CASE(rnr_exc, 20),
	HX_CASE(retry_destroyed, 20), HX_CASE(retry_killed, 20),
	HX_CASE(lossy_reads, 40),     HX_CASE(lossy_atomics, 40),
	HX_CASE(lossy_mixed, 40),     { 0 }
};

HX_MAIN(cases)
