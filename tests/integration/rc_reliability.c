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
					 ep.buf + i * 1000, 1000, ep.mr->lkey, 0, 0, 0), 0);
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
					 ep.mr->lkey), 0);
	for (int i = 0; i < 5; i++)
		HX_EXPECT(ep.rcq, NULL, 10 + i, IBV_WC_SUCCESS, IBV_WC_RECV, 1000);
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
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf, 64,
				 ep.mr->lkey, 0, 0, 0), 0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2, ep.buf, 64,
				 ep.mr->lkey, 0, 0, 0), 0);
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

	o.timeout = 12;   /* 4.096 us * 2^12 = 16.8 ms */
	o.retry_cnt = 3;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	(void)hx_recv_u64(fd); /* B destroyed its QP */
	t0 = hx_now_ms();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 1, ep.buf,
				 4096, ep.mr->lkey, ep.peer.addr, ep.peer.rkey, 0), 0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, 0, 2, ep.buf, 4, ep.mr->lkey, 0, 0, 0), 0);
	HX_EXPECT_T(ep.scq, NULL, 1, IBV_WC_RETRY_EXC_ERR, -1, -1, 8000);
	hx_log("retry exceeded after %llu ms", (unsigned long long)(hx_now_ms() - t0));
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
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 1, ep.buf,
				 4096, ep.mr->lkey, ep.peer.addr, ep.peer.rkey, 0), 0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2, ep.buf, 4,
				 ep.mr->lkey, 0, 0, 0), 0);
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

static const struct hx_case cases[] = {
	HX_CASE(rnr_wait, 20),
	HX_CASE(rnr_exc, 20),
	HX_CASE(retry_destroyed, 20),
	HX_CASE(retry_killed, 20),
	{ 0 }
};

HX_MAIN(cases)
