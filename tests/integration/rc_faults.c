/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Fault injection (SOFTVERBS_FAULT, docs/faults.md), set the same in both
 * processes as the docs say:
 *   - each packet fault (drop, dup, delay, reorder, corrupt) at 10% on
 *     transmit, and drop/dup/corrupt on receive: SENDs, WRITEs and READs
 *     of three packets each complete, every byte right, and the counters
 *     show the injections (a corrupted packet: drop_icrc at the receiver);
 *   - rules for another QP (qp=) touch nothing;
 *   - a forced RNR on the 3rd SEND: rnr_retry 0 gives RNR_RETRY_EXC_ERR
 *     on it and WR_FLUSH_ERR after, rnr_retry 7 completes everything;
 *   - a forced remote access error on the 3rd WRITE: REM_ACCESS_ERR on it,
 *     WR_FLUSH_ERR after, QP in ERR;
 *   - a forced retry-exceeded on the 2nd WRITE: RETRY_EXC_ERR on it;
 *   - a bad spec: one warning naming the token; a good one: one info line.
 * The integration.udp.* copies run the same over UDP; on shm the faulted
 * QPs keep to the packet rings (no channel, no one-copy path).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NMSG 16
#define MSG 10000 /* three packets at a 4096 MTU, ten at 1024 */
#define SLOT 16384
#define WRITE_OFF (256u << 10)
#define READ_OFF (512u << 10)

/* Before the device is opened: the spec, and the counters at close. */
static void fault_env(const char *spec)
{
	setenv("SOFTVERBS_FAULT", spec, 1);
	setenv("SOFTVERBS_STATS", "1", 1);
}

static void open_pair(struct hx_ep *ep, int fd, uint8_t rnr_retry)
{
	struct hx_opts o = hx_opts_default();

	o.timeout = 10; /* 4.2 ms: losses are resent soon */
	o.rnr_retry = rnr_retry;
	o.min_rnr_timer = 1; /* 0.01 ms */
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

/* ---- packet faults: traffic that must arrive intact ---------------------- */

/* A: NMSG SENDs, NMSG WRITEs, NMSG READs of MSG bytes, all signaled. */
static void traffic_a(struct hx_ep *ep)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < NMSG; i++) {
		hx_fill(ep->buf + i * SLOT, MSG, 100 + i);
		hx_fill(ep->buf + WRITE_OFF + i * SLOT, MSG, 200 + i);
	}
	hx_sync(ep->fd); /* B's receives are posted */
	for (i = 0; i < NMSG; i++)
		HX_CHECK_RC(hx_post_send(ep, IBV_WR_SEND, IBV_SEND_SIGNALED, i,
					 ep->buf + i * SLOT, MSG, ep->mr->lkey,
					 0, 0, 0),
			    0);
	for (i = 0; i < NMSG; i++)
		HX_EXPECT(ep->scq, &wc, i, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	for (i = 0; i < NMSG; i++)
		HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, 100 + i,
					 ep->buf + WRITE_OFF + i * SLOT, MSG,
					 ep->mr->lkey,
					 ep->peer.addr + WRITE_OFF + i * SLOT,
					 ep->peer.rkey, 0),
			    0);
	for (i = 0; i < NMSG; i++)
		HX_EXPECT(ep->scq, &wc, 100 + i, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_WRITE, -1);
	for (i = 0; i < NMSG; i++)
		HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_READ,
					 IBV_SEND_SIGNALED, 200 + i,
					 ep->buf + READ_OFF + i * SLOT, MSG,
					 ep->mr->lkey,
					 ep->peer.addr + READ_OFF + i * SLOT,
					 ep->peer.rkey, 0),
			    0);
	for (i = 0; i < NMSG; i++) {
		HX_EXPECT(ep->scq, &wc, 200 + i, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_READ, MSG);
		HX_CHECK_PATTERN(ep->buf + READ_OFF + i * SLOT, MSG, 300 + i);
	}
	hx_sync(ep->fd); /* B checks what was written */
	hx_sync(ep->fd);
}

static void traffic_b(struct hx_ep *ep)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < NMSG; i++) {
		hx_fill(ep->buf + READ_OFF + i * SLOT, MSG, 300 + i);
		HX_CHECK_RC(hx_post_recv(ep, i, ep->buf + i * SLOT, SLOT,
					 ep->mr->lkey),
			    0);
	}
	hx_sync(ep->fd);
	for (i = 0; i < NMSG; i++) {
		HX_EXPECT(ep->rcq, &wc, i, IBV_WC_SUCCESS, IBV_WC_RECV, MSG);
		HX_CHECK_PATTERN(ep->buf + i * SLOT, MSG, 100 + i);
	}
	hx_sync(ep->fd);
	for (i = 0; i < NMSG; i++)
		HX_CHECK_PATTERN(ep->buf + WRITE_OFF + i * SLOT, MSG, 200 + i);
	hx_sync(ep->fd);
}

/* Run the traffic under spec; the counter `a_counter` of A and
 * `b_counter` of B (NULL: none) must have grown, and nothing went around
 * the packets (a message channel, one-copy placement) and nothing was
 * malformed (a packet corrupted on purpose fails its ICRC only). */
static void pkt_case(int fd, bool is_a, const char *spec, const char *a_counter,
		     const char *b_counter)
{
	const char *names[] = { is_a ? a_counter : b_counter,
				"chan_sends",
				"direct_write",
				"direct_read",
				"drop_malformed",
				NULL };
	unsigned long long v[5];
	struct hx_ep ep;

	fault_env(spec);
	open_pair(&ep, fd, 7);
	if (is_a)
		traffic_a(&ep);
	else
		traffic_b(&ep);
	if (!names[0])
		names[0] = "fault_drop"; /* not checked */
	hx_ep_close_counters(&ep, names, v);
	if ((is_a ? a_counter : b_counter) && !v[0]) {
		hx_log("counter %s is 0 under %s", names[0], spec);
		CHECK(0);
	}
	CHECK_EQ(v[1], 0);
	CHECK_EQ(v[2], 0);
	CHECK_EQ(v[3], 0);
	CHECK_EQ(v[4], 0); /* every packet parsed, doorbells ignored */
}

#define PKT_CASE(name, spec, a_counter, b_counter)               \
	static void name##_a(int fd)                             \
	{                                                        \
		pkt_case(fd, true, spec, a_counter, b_counter);  \
	}                                                        \
	static void name##_b(int fd)                             \
	{                                                        \
		pkt_case(fd, false, spec, a_counter, b_counter); \
	}

PKT_CASE(pkt_drop, "drop=10%;seed=1", "fault_drop", NULL)
PKT_CASE(pkt_dup, "dup=10%;seed=2", "fault_dup", NULL)
PKT_CASE(pkt_delay, "delay=10%,ms=5;seed=3", "fault_delay", NULL)
PKT_CASE(pkt_reorder, "reorder=10%;seed=4", "fault_reorder", NULL)
/* A corrupts what it sends; B's ICRC check drops it. */
PKT_CASE(pkt_corrupt, "corrupt=10%;seed=5", "fault_corrupt", "drop_icrc")
/* On receive: B drops, duplicates and corrupts what comes in. */
PKT_CASE(pkt_rx, "drop=5%,dir=rx;dup=5%,dir=rx;corrupt=5%,dir=rx;seed=6", NULL,
	 "drop_icrc")
/* Every kind at once, both directions. */
PKT_CASE(pkt_all,
	 "drop=3%,dir=both;dup=3%,dir=both;delay=3%,ms=2,dir=both;"
	 "reorder=3%,dir=both;corrupt=3%,dir=both;seed=7",
	 "fault_drop", "fault_drop")

/* A rule for another QP touches nothing here: every packet would be lost
 * if it did. */
static void other_qp(int fd, bool is_a)
{
	const char *names[] = { "fault_drop", "fault_access", NULL };
	unsigned long long v[2];
	struct hx_ep ep;

	fault_env("drop=100%,dir=both,qp=0xfffffe;access=100%,qp=0xfffffe");
	open_pair(&ep, fd, 7);
	if (is_a)
		traffic_a(&ep);
	else
		traffic_b(&ep);
	hx_ep_close_counters(&ep, names, v);
	CHECK_EQ(v[0], 0);
	CHECK_EQ(v[1], 0);
}

static void pkt_other_qp_a(int fd)
{
	other_qp(fd, true);
}

static void pkt_other_qp_b(int fd)
{
	other_qp(fd, false);
}

/* ---- WR faults ------------------------------------------------------------ */

/* Five SENDs, the 3rd answered RNR NAK once: with rnr_retry 0 the
 * requester gives up on it, with 7 it sends it again and all arrive. */
static void rnr_a_with(int fd, uint8_t rnr_retry)
{
	struct hx_ep ep;
	int i;

	fault_env("rnr=@3");
	open_pair(&ep, fd, rnr_retry);
	for (i = 0; i < 5; i++)
		hx_fill(ep.buf + i * SLOT, 100, 10 + i);
	hx_sync(fd);
	for (i = 0; i < 5; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED,
					 i + 1, ep.buf + i * SLOT, 100,
					 ep.mr->lkey, 0, 0, 0),
			    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	if (rnr_retry == 7) {
		for (i = 3; i <= 5; i++)
			HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND,
				  -1);
	} else {
		HX_EXPECT(ep.scq, NULL, 3, IBV_WC_RNR_RETRY_EXC_ERR, -1, -1);
		HX_EXPECT(ep.scq, NULL, 4, IBV_WC_WR_FLUSH_ERR, -1, -1);
		HX_EXPECT(ep.scq, NULL, 5, IBV_WC_WR_FLUSH_ERR, -1, -1);
		HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void rnr_b_with(int fd, uint8_t rnr_retry)
{
	struct hx_ep ep;
	int i, n = rnr_retry == 7 ? 5 : 2;

	fault_env("rnr=@3");
	open_pair(&ep, fd, rnr_retry);
	for (i = 0; i < 5; i++)
		HX_CHECK_RC(hx_post_recv(&ep, i + 1, ep.buf + i * SLOT, SLOT,
					 ep.mr->lkey),
			    0);
	hx_sync(fd);
	for (i = 0; i < n; i++) {
		HX_EXPECT(ep.rcq, NULL, i + 1, IBV_WC_SUCCESS, IBV_WC_RECV,
			  100);
		HX_CHECK_PATTERN(ep.buf + i * SLOT, 100, 10 + i);
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close_counter(&ep, "fault_rnr"), 1);
}

static void rnr_retry0_a(int fd)
{
	rnr_a_with(fd, 0);
}

static void rnr_retry0_b(int fd)
{
	rnr_b_with(fd, 0);
}

static void rnr_retry7_a(int fd)
{
	rnr_a_with(fd, 7);
}

static void rnr_retry7_b(int fd)
{
	rnr_b_with(fd, 7);
}

/* Five WRITEs, the 3rd refused as a remote access error. */
static void access_a(int fd)
{
	struct hx_ep ep;
	int i;

	fault_env("access=@3");
	open_pair(&ep, fd, 7);
	hx_fill(ep.buf, 5 * SLOT, 20);
	hx_sync(fd);
	for (i = 0; i < 5; i++)
		HX_CHECK_RC(hx_post_send(
				    &ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
				    i + 1, ep.buf + i * SLOT, 1000, ep.mr->lkey,
				    ep.peer.addr + i * SLOT, ep.peer.rkey, 0),
			    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_REM_ACCESS_ERR, -1, -1);
	HX_EXPECT(ep.scq, NULL, 4, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_EXPECT(ep.scq, NULL, 5, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void access_b(int fd)
{
	struct hx_ep ep;
	uint8_t zero[1000] = { 0 };

	fault_env("access=@3");
	open_pair(&ep, fd, 7);
	hx_sync(fd);
	hx_sync(fd);
	/* The first two placed, the refused one not. */
	HX_CHECK_PATTERN(ep.buf, 1000, 20);
	CHECK(!memcmp(ep.buf + 2 * SLOT, zero, sizeof(zero)));
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	CHECK_EQ(hx_ep_close_counter(&ep, "fault_access"), 1);
}

/* Three WRITEs; the responder never answers the 2nd (nor anything after
 * it): the requester retries retry_cnt times and gives up. */
static void retry_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i;

	fault_env("retry=@2");
	o.timeout = 8; /* 1 ms */
	o.retry_cnt = 2;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	for (i = 0; i < 3; i++)
		HX_CHECK_RC(hx_post_send(
				    &ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
				    i + 1, ep.buf + i * SLOT, 1000, ep.mr->lkey,
				    ep.peer.addr + i * SLOT, ep.peer.rkey, 0),
			    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_RETRY_EXC_ERR, -1, -1);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void retry_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	fault_env("retry=@2");
	o.timeout = 8;
	o.retry_cnt = 2;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close_counter(&ep, "fault_retry"), 1);
}

/* ---- the spec as the log shows it ------------------------------------------ */

/* Open an endpoint with spec and the log in a file; the log's text. */
static void log_of(int fd, const char *spec, const char *level, char *out,
		   size_t len)
{
	char path[] = "/tmp/hx_fault_log.XXXXXX";
	int lfd = mkstemp(path);
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	ssize_t n;

	REQUIRE(lfd >= 0);
	setenv("SOFTVERBS_FAULT", spec, 1);
	setenv("VERBS_LOG_FILE", path, 1);
	setenv("SOFTVERBS_LOG", level, 1);
	hx_ep_open(&ep, &o, fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
	n = read(lfd, out, len - 1);
	out[n > 0 ? n : 0] = '\0';
	close(lfd);
	unlink(path);
}

static void bad_spec_a(int fd)
{
	char text[4096];

	log_of(fd, "drop=1%;dup=0.5%,dir=sideways", "1", text, sizeof(text));
	if (!strstr(text, "softverbs warning: SOFTVERBS_FAULT='drop=1%;"
			  "dup=0.5%,dir=sideways': bad token 'dir=sideways' "
			  "(dir is tx, rx or both): no fault injected\n")) {
		hx_log("log was: %s", text);
		CHECK(0);
	}
	/* Refused whole: no rule was kept, so nothing says it injects. */
	CHECK(!strstr(text, "fault injection (SOFTVERBS_FAULT)"));
}

static void bad_spec_b(int fd)
{
	char text[4096];

	log_of(fd, "corrupt=@7,qp=0x12;drop=1%,dir=rx;seed=9", "2", text,
	       sizeof(text));
	if (!strstr(text, "fault injection (SOFTVERBS_FAULT): "
			  "corrupt=@7,dir=tx,qp=0x12;"
			  "drop=1.0000%,dir=rx;seed=9\n")) {
		hx_log("log was: %s", text);
		CHECK(0);
	}
}

static const struct hx_case cases[] = {
	HX_CASE(pkt_drop, 30),	  HX_CASE(pkt_dup, 30),
	HX_CASE(pkt_delay, 30),	  HX_CASE(pkt_reorder, 30),
	HX_CASE(pkt_corrupt, 30), HX_CASE(pkt_rx, 30),
	HX_CASE(pkt_all, 30),	  HX_CASE(pkt_other_qp, 20),
	HX_CASE(rnr_retry0, 20),  HX_CASE(rnr_retry7, 20),
	HX_CASE(access, 20),	  HX_CASE(retry, 20),
	HX_CASE(bad_spec, 20),	  { 0 }
};

HX_MAIN(cases)
