/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * SOFTVERBS_TRACE=1 (engine/diag/stats.c): a line for every operation, on
 * every path.  A SEND, an atomic, a WRITE and a READ between two
 * processes: on shared memory the SEND and the atomic travel as channel
 * messages ("tx-chan"/"rx-chan", with the channel's acknowledgement) and
 * the WRITE and READ as one-copy operations ("tx-direct"), none of them a
 * packet; over UDP each is a packet ("tx"/"rx"; 1 KiB: one packet at
 * Ethernet's path MTU).  Each process sets the
 * variable and sends its stderr, where the trace goes, to a file of its
 * own before it first uses the library.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <unistd.h>

#include "harness.h"
#include "logcap.h"

static int saved_err = -1;

/* The trace's file instead of stderr; the lines are read by take_log. */
static void trace_to_file(void)
{
	int fd;

	log_to_file("rc_trace");
	setenv("SOFTVERBS_TRACE", "1", 1);
	fd = open(log_path, O_WRONLY | O_APPEND);
	saved_err = dup(2);
	REQUIRE(fd >= 0 && saved_err >= 0 && dup2(fd, 2) == 2);
	close(fd);
}

/* The trace so far; stderr is stderr again (for the checks' messages). */
static const char *trace_end(void)
{
	const char *t = take_log();

	REQUIRE(dup2(saved_err, 2) == 2);
	return t;
}

/* A line of the trace holding each of the words, in this order. */
static bool traced(const char *t, const char *dir, const char *rest)
{
	char want[200];

	snprintf(want, sizeof(want), " %s %s", dir, rest);
	for (const char *p = t; (p = strstr(p, want)); p++) {
		const char *bol = p;

		while (bol > t && bol[-1] != '\n')
			bol--;
		if (!strncmp(bol, "softverbs trace: ", 17))
			return true;
	}
	return false;
}

#define EXPECT_TRACE(t, dir, ...)                                           \
	do {                                                                \
		char _r[200];                                               \
		snprintf(_r, sizeof(_r), __VA_ARGS__);                      \
		CHECK(traced((t), (dir), _r));                              \
		if (!traced((t), (dir), _r))                                \
			hx_log("no trace line \"%s %s\" in: %s", (dir), _r, \
			       (t));                                        \
	} while (0)

static void ops_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	bool shm = hx_fastpath_expected();
	struct hx_ep ep;
	const char *t;

	trace_to_file();
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_fill(ep.buf, 1024, 3); /* what the WRITE places, the READ reads */
	hx_sync(fd); /* B's receive is posted */
	take_log();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 2, ep.buf + 4096,
				   ep.mr->lkey, ep.peer.addr + 8192,
				   ep.peer.rkey, 5, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, -1);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 3,
				 ep.buf, 1024, ep.mr->lkey,
				 ep.peer.addr + 16384, ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 4,
				 ep.buf + 65536, 1024, ep.mr->lkey,
				 ep.peer.addr + 16384, ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, -1);
	t = trace_end();
	if (shm) {
		EXPECT_TRACE(t, "tx-chan", "RC_SEND_ONLY qpn 0x%06x len 64\n",
			     ep.peer.qpn);
		EXPECT_TRACE(t, "tx-chan",
			     "RC_FETCH_ADD qpn 0x%06x len 8 va 0x%" PRIx64
			     " rkey 0x%x\n",
			     ep.peer.qpn, ep.peer.addr + 8192, ep.peer.rkey);
		EXPECT_TRACE(
			t, "tx-direct",
			"RC_RDMA_WRITE_ONLY qpn 0x%06x len 1024 va 0x%" PRIx64
			" rkey 0x%x\n",
			ep.peer.qpn, ep.peer.addr + 16384, ep.peer.rkey);
		EXPECT_TRACE(
			t, "tx-direct",
			"RC_RDMA_READ_REQUEST qpn 0x%06x len 1024 va 0x%" PRIx64
			" rkey 0x%x\n",
			ep.peer.qpn, ep.peer.addr + 16384, ep.peer.rkey);
		EXPECT_NO_LOG(t, " tx RC_");
	} else {
		EXPECT_TRACE(t, "tx", "RC_SEND_ONLY qpn 0x%06x psn ",
			     ep.peer.qpn);
		EXPECT_TRACE(t, "tx", "RC_FETCH_ADD qpn 0x%06x psn ",
			     ep.peer.qpn);
		EXPECT_TRACE(t, "tx", "RC_RDMA_WRITE_ONLY qpn 0x%06x psn ",
			     ep.peer.qpn);
		EXPECT_TRACE(t, "tx", "RC_RDMA_READ_REQUEST qpn 0x%06x psn ",
			     ep.peer.qpn);
		EXPECT_NO_LOG(t, "-chan ");
		EXPECT_NO_LOG(t, "-direct ");
	}
	CHECK(hx_verify(ep.buf + 65536, 1024, 3) == -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static void ops_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	bool shm = hx_fastpath_expected();
	struct hx_ep ep;
	const char *t;

	trace_to_file();
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 9, ep.buf, 4096, ep.mr->lkey), 0);
	take_log();
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_RECV, 64);
	hx_sync(fd); /* A is done */
	t = trace_end();
	if (shm) {
		EXPECT_TRACE(t, "rx-chan", "RC_SEND_ONLY qpn 0x%06x len 64\n",
			     ep.qp->qp_num);
		EXPECT_TRACE(t, "rx-chan",
			     "RC_FETCH_ADD qpn 0x%06x len 8 va 0x%" PRIx64
			     " rkey 0x%x\n",
			     ep.qp->qp_num, (uint64_t)(uintptr_t)ep.buf + 8192,
			     ep.mr->rkey);
		EXPECT_TRACE(t, "tx-chan", "RC_ACKNOWLEDGE qpn 0x%06x len 0\n",
			     ep.peer.qpn);
	} else {
		EXPECT_TRACE(t, "rx", "RC_SEND_ONLY qpn 0x%06x psn ",
			     ep.qp->qp_num);
		EXPECT_TRACE(t, "rx", "RC_FETCH_ADD qpn 0x%06x psn ",
			     ep.qp->qp_num);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
	unlink(log_path);
}

static const struct hx_case cases[] = {
	HX_CASE(ops, 30),
	{ 0 },
};

HX_MAIN(cases)
