/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Message channels between two processes of this host (docs/fastpath.md,
 * layer 3: link/chan.h, paths/chan.c): an RC SEND / SEND_WITH_IMM of
 * up to 1024 bytes from a QP with rnr_retry 7 to a QP without an SRQ
 * crosses a shared-memory ring instead of packets, with exactly the packet
 * path's semantics.  Every case also runs with SOFTVERBS_FASTPATH=0 (UDP)
 * and must give the same outcomes there:
 *   sizes      0..1024 bytes (channel) and 1025, 4096 (descriptors), from an
 *              MR, inline, with immediate data, gathered from 3 SGEs and
 *              scattered into 3; then a stream of 20000 messages of varied
 *              sizes (1 in 64 signaled) so that the ring wraps many times;
 *              every byte checked, canaries around scattered pieces;
 *   order      SENDs between a one-copy WRITE, a READ, a FETCH_ADD, a
 *              64 KiB SEND (a descriptor), a WRITE_WITH_IMM and an inline WRITE
 *              on the same QP: receive completions in order, what a SEND
 *              announces is in place when it completes, send completions
 *              in SQ order with the right opcodes;
 *   rnr        receives posted 600 ms after the SENDs (rnr_retry 7), three
 *              times what the sender's transport timer gives a silent
 *              peer (retry_cnt 1: 2 x 100 ms): no completion before, then
 *              all in order, no RETRY_EXC_ERR; rnr_retry 3 to a QP
 *              that never posts a receive: RNR_RETRY_EXC_ERR (and that QP
 *              never uses the channel);
 *   dead_peer  the receiver is SIGKILLed, then (another QP) SIGSTOPped,
 *              then (another QP) SIGSTOPped after it held a SEND for
 *              want of a receive for longer than the timer allows a
 *              silent peer (a live peer is waited for, a stopped one not):
 *              RETRY_EXC_ERR after timeout x (retry_cnt + 1), bounded,
 *              the QP in ERR, later WQEs flushed;
 *   errors     receive WQE too small (LOC_LEN_ERR / REM_INV_REQ_ERR), a
 *              receive WQE with a bad lkey (LOC_PROT_ERR / REM_OP_ERR), a
 *              SEND with a bad lkey (LOC_PROT_ERR, nothing received);
 *   blocking   2000 ping-pongs through completion channels only.
 * Counters (SOFTVERBS_STATS at close): chan_sends at the sender and
 * chan_recvs at the receiver are > 0 (the receiver's equal to what the
 * sender's engine sent, where no message failed) on the shm link, 0 with
 * SOFTVERBS_FASTPATH=0.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define KIB 1024u
#define MAXMSG 1024u /* SV_CHAN_MAX_MSG */
#define CANARY 0xee

/* ---- counters ----------------------------------------------------------- */

struct chan_stats {
	unsigned long long sends, recvs;
};

static void stats_on(void)
{
	setenv("SOFTVERBS_STATS", "1", 1);
}

/* Close everything with SOFTVERBS_STATS=1 (set before the device was
 * opened) and read the engine's counters from what it prints. */
static void close_with_stats(struct hx_ep *ep, struct chan_stats *st)
{
	static const char *const names[] = { "chan_sends", "chan_recvs", NULL };
	unsigned long long v[2];

	hx_ep_close_counters(ep, names, v);
	st->sends = v[0];
	st->recvs = v[1];
}

/* Sender's counters: at least min_sends through channels on the shm
 * link, none over UDP. */
static void expect_sends(const struct chan_stats *st, unsigned long long min)
{
	if (!hx_fastpath_expected()) {
		CHECK_EQ(st->sends + st->recvs, 0);
		return;
	}
	CHECK(st->sends >= min);
}

static void expect_recvs(const struct chan_stats *st, unsigned long long min)
{
	if (!hx_fastpath_expected()) {
		CHECK_EQ(st->sends + st->recvs, 0);
		return;
	}
	CHECK(st->recvs >= min);
}

/* ---- posting with several SGEs ------------------------------------------ */

static int post_send_sg(struct hx_ep *ep, enum ibv_wr_opcode op, unsigned flags,
			uint64_t wr_id, struct ibv_sge *sge, int nsge,
			uint32_t imm_host)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.imm_data = htonl(imm_host);
	return ibv_post_send(ep->qp, &wr, &bad);
}

static int post_recv_sg(struct hx_ep *ep, uint64_t wr_id, struct ibv_sge *sge,
			int nsge)
{
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	return ibv_post_recv(ep->qp, &wr, &bad);
}

/* Bytes [off, off + n) of pattern seed, at p. */
static void fill_at(uint8_t *p, uint64_t seed, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = hx_pattern_byte(seed, off + i);
}

static bool match_at(const uint8_t *p, uint64_t seed, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != hx_pattern_byte(seed, off + i))
			return false;
	return true;
}

static bool all_canary(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != CANARY)
			return false;
	return true;
}

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

/* Check a receive completion's fields beyond hx_expect's. */
static bool recv_ok(const struct ibv_wc *wc, uint64_t wr_id, uint32_t len,
		    bool imm, uint32_t imm_host, int opcode)
{
	bool ok = wc->wr_id == wr_id && wc->status == IBV_WC_SUCCESS &&
		  (int)wc->opcode == opcode && wc->byte_len == len &&
		  !!(wc->wc_flags & IBV_WC_WITH_IMM) == imm &&
		  (!imm || wc->imm_data == htonl(imm_host));

	if (!ok)
		hx_log("recv wc: wr_id %llu (want %llu) status %s opcode %d (want %d) byte_len %u (want %u) flags 0x%x imm 0x%08x (want %s 0x%08x)",
		       (unsigned long long)wc->wr_id, (unsigned long long)wr_id,
		       ibv_wc_status_str(wc->status), wc->opcode, opcode,
		       wc->byte_len, len, wc->wc_flags, ntohl(wc->imm_data),
		       imm ? "imm" : "no imm", imm_host);
	return ok;
}

/* ---- sizes ---------------------------------------------------------------- */

static const uint32_t sizes[] = { 0,   1,    39,   40,	 41,   63,  64,
				  200, 1000, 1023, 1024, 1025, 4096 };
#define N_SIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

enum { V_PLAIN, V_IMM, V_INLINE, V_SG, N_V };

struct msg {
	uint32_t len;
	int v;
};

#define SLOT (8 * KIB) /* one message of the first part per slot */

/* The first part's messages: every size in every way that applies. */
static int msg_list(struct msg *m)
{
	int i, v, n = 0;

	for (i = 0; i < N_SIZES; i++)
		for (v = 0; v < N_V; v++) {
			if (v == V_INLINE && sizes[i] > MAXMSG)
				continue;
			if (v == V_SG && sizes[i] < 3)
				continue;
			m[n].len = sizes[i];
			m[n].v = v;
			n++;
		}
	return n;
}

#define STREAM 20000u
#define RQ 256u
#define SSLOT (2 * KIB)
#define STREAM_OFF (512 * KIB)

static uint32_t stream_len(uint32_t n)
{
	uint32_t h = n * 2654435761u;

	if (n % 1000 == 999)
		return 2000; /* now and then a descriptor (chan_rdv.c) */
	return (h >> 8) % (MAXMSG + 1);
}

static bool stream_inline(uint32_t n)
{
	return n % 5 == 1 && stream_len(n) <= MAXMSG;
}

static bool stream_imm(uint32_t n)
{
	return n % 7 == 3;
}

static bool stream_gather(uint32_t n)
{
	return n % 11 == 4 && !stream_inline(n) && stream_len(n) >= 2;
}

static bool stream_signaled(uint32_t n)
{
	return n % 64 == 63 || n == STREAM - 1;
}

static void sizes_open(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	stats_on();
	o.max_inline = MAXMSG;
	o.max_send_wr = 256;
	o.max_recv_wr = RQ;
	o.send_cqe = 1024;
	hx_ep_open(ep, &o, fd);
	REQUIRE(ep->cap.max_inline_data >= MAXMSG);
	hx_ep_connect(ep);
}

static void sizes_a(int fd)
{
	struct msg m[N_SIZES * N_V];
	struct chan_stats st;
	struct hx_ep ep;
	int nm = msg_list(m), k;
	uint32_t n, done_upto = 0;
	uint64_t t0;

	sizes_open(&ep, fd);

	/* Part 1: each message from its own slot of our buffer. */
	hx_sync(fd); /* B posted its receives */
	for (k = 0; k < nm; k++) {
		uint8_t *p = ep.buf + (size_t)k * SLOT;
		uint32_t len = m[k].len, a = len / 2, b = len / 4;
		uint64_t seed = 100 + k;
		struct ibv_sge sge[3];
		unsigned flags = IBV_SEND_SIGNALED;
		int nsge = 1;

		sge[0].addr = (uintptr_t)p;
		sge[0].length = len;
		sge[0].lkey = ep.mr->lkey;
		if (m[k].v == V_SG) {
			/* Gathered from three places, split differently
			 * from the receiver's scatter list. */
			fill_at(p, seed, 0, a);
			fill_at(p + 2560, seed, a, b);
			fill_at(p + 4096, seed, a + b, len - a - b);
			sge[0].length = a;
			sge[1].addr = (uintptr_t)(p + 2560);
			sge[1].length = b;
			sge[1].lkey = ep.mr->lkey;
			sge[2].addr = (uintptr_t)(p + 4096);
			sge[2].length = len - a - b;
			sge[2].lkey = ep.mr->lkey;
			nsge = 3;
		} else {
			fill_at(p, seed, 0, len);
		}
		if (m[k].v == V_INLINE) {
			flags |= IBV_SEND_INLINE;
			sge[0].lkey = 0; /* never looked at */
		}
		HX_CHECK_RC(post_send_sg(&ep,
					 m[k].v == V_IMM ?
						 IBV_WR_SEND_WITH_IMM :
						 IBV_WR_SEND,
					 flags, k, sge, nsge, 0x5a000000u | k),
			    0);
	}
	for (k = 0; k < nm; k++)
		if (!HX_EXPECT(ep.scq, NULL, (uint64_t)k, IBV_WC_SUCCESS,
			       IBV_WC_SEND, m[k].len))
			hx_log("message %d: %u bytes, variant %d", k, m[k].len,
			       m[k].v);
	hx_sync(fd); /* B checked part 1 */

	/* Part 2: the stream, from 256 slots reused once a later signaled
	 * WQE completed (the slots of WQEs still in flight stay intact). */
	t0 = hx_now_ms();
	for (n = 0; n < STREAM || done_upto < STREAM;) {
		if (n < STREAM && n - done_upto < 192) {
			uint8_t *p = ep.buf + STREAM_OFF + (n % RQ) * SSLOT;
			uint32_t len = stream_len(n), a = len / 2;
			uint64_t seed = 1000000 + n;
			struct ibv_sge sge[2];
			unsigned flags =
				stream_signaled(n) ? IBV_SEND_SIGNALED : 0;
			int nsge = 1, rc;

			sge[0].addr = (uintptr_t)p;
			sge[0].length = len;
			sge[0].lkey = ep.mr->lkey;
			if (stream_gather(n)) {
				fill_at(p, seed, 0, a);
				fill_at(p + 1024, seed, a, len - a);
				sge[0].length = a;
				sge[1].addr = (uintptr_t)(p + 1024);
				sge[1].length = len - a;
				sge[1].lkey = ep.mr->lkey;
				nsge = 2;
			} else {
				hx_fill(p, len, seed);
			}
			if (stream_inline(n))
				flags |= IBV_SEND_INLINE;
			rc = post_send_sg(&ep,
					  stream_imm(n) ? IBV_WR_SEND_WITH_IMM :
							  IBV_WR_SEND,
					  flags, n, sge, nsge, n);
			if (rc) {
				HX_CHECK_RC(rc, 0);
				break;
			}
			n++;
			continue;
		}
		/* The next signaled WQE's completion. */
		uint32_t want = done_upto;
		struct ibv_wc wc;

		while (!stream_signaled(want))
			want++;
		if (hx_poll(ep.scq, &wc, 1, 10000) != 1) {
			CHECK(!"stream: a send completion within 10 s");
			hx_log("stream: stuck after %u posted, %u complete", n,
			       done_upto);
			break;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != want ||
		    wc.opcode != IBV_WC_SEND) {
			CHECK(!"stream: send completion");
			hx_log("stream: wr_id %llu (want %u) status %s opcode %d",
			       (unsigned long long)wc.wr_id, want,
			       ibv_wc_status_str(wc.status), wc.opcode);
			break;
		}
		done_upto = want + 1;
	}
	CHECK_EQ(done_upto, STREAM);
	hx_log("stream: %u messages in %llu ms", done_upto,
	       (unsigned long long)(hx_now_ms() - t0));
	hx_sync(fd); /* B checked the stream */
	close_with_stats(&ep, &st);
	hx_send_u64(fd, st.sends);
	/* Most are small and nothing else is on the QP. */
	expect_sends(&st, STREAM / 2);
}

/* Receive WQE k of part 1: one SGE, or three with 16-byte gaps (the last
 * one 64 bytes longer than needed), in a canary-filled slot. */
static void sizes_post_recv(struct hx_ep *ep, const struct msg *m, int k)
{
	uint8_t *p = ep->buf + (size_t)k * SLOT;
	uint32_t len = m->len, a = len / 3, b = len / 3;
	struct ibv_sge sge[3];
	int nsge = 1;

	memset(p, CANARY, SLOT);
	sge[0].addr = (uintptr_t)p;
	sge[0].length = 4096;
	sge[0].lkey = ep->mr->lkey;
	if (m->v == V_SG) {
		sge[0].length = a;
		sge[1].addr = (uintptr_t)(p + a + 16);
		sge[1].length = b;
		sge[1].lkey = ep->mr->lkey;
		sge[2].addr = (uintptr_t)(p + a + b + 32);
		sge[2].length = len - a - b + 64;
		sge[2].lkey = ep->mr->lkey;
		nsge = 3;
	}
	HX_CHECK_RC(post_recv_sg(ep, k, sge, nsge), 0);
}

static bool sizes_check_data(const uint8_t *p, const struct msg *m,
			     uint64_t seed)
{
	uint32_t len = m->len, a = len / 3, b = len / 3, c = len - a - b;

	if (m->v != V_SG)
		return match_at(p, seed, 0, len) && all_canary(p + len, 64);
	return match_at(p, seed, 0, a) && all_canary(p + a, 16) &&
	       match_at(p + a + 16, seed, a, b) &&
	       all_canary(p + a + 16 + b, 16) &&
	       match_at(p + a + b + 32, seed, a + b, c) &&
	       all_canary(p + a + b + 32 + c, 128);
}

static void sizes_b(int fd)
{
	struct msg m[N_SIZES * N_V];
	struct chan_stats st;
	struct hx_ep ep;
	int nm = msg_list(m), k, bad = 0;
	uint32_t n;
	uint64_t t0;
	unsigned long long a_sends;

	sizes_open(&ep, fd);
	REQUIRE(nm <= (int)RQ && (size_t)nm * SLOT <= STREAM_OFF);
	for (k = 0; k < nm; k++)
		sizes_post_recv(&ep, &m[k], k);
	hx_sync(fd);
	for (k = 0; k < nm; k++) {
		struct ibv_wc wc;
		bool imm = m[k].v == V_IMM;

		if (hx_poll(ep.rcq, &wc, 1, 10000) != 1) {
			CHECK(!"part 1: a receive completion within 10 s");
			break;
		}
		if (!recv_ok(&wc, k, m[k].len, imm, 0x5a000000u | k,
			     IBV_WC_RECV) ||
		    !sizes_check_data(ep.buf + (size_t)k * SLOT, &m[k],
				      100 + k)) {
			hx_log("message %d: %u bytes, variant %d", k, m[k].len,
			       m[k].v);
			bad++;
		}
	}
	CHECK_EQ(bad, 0);
	hx_sync(fd);

	/* The stream: message n lands in slot n % RQ (receives are posted
	 * and reposted in message order). */
	bad = 0;
	for (n = 0; n < RQ; n++) {
		struct ibv_sge sge = { (uintptr_t)(ep.buf + STREAM_OFF +
						   n * SSLOT),
				       SSLOT, ep.mr->lkey };

		HX_CHECK_RC(post_recv_sg(&ep, n, &sge, 1), 0);
	}
	t0 = hx_now_ms();
	for (n = 0; n < STREAM;) {
		struct ibv_wc wc[32];
		int got = hx_poll(ep.rcq, wc, 1, 10000), i;

		if (got != 1) {
			CHECK(!"stream: a receive completion within 10 s");
			hx_log("stream: stuck at message %u", n);
			break;
		}
		got += ibv_poll_cq(ep.rcq, 31, wc + 1);
		for (i = 0; i < got; i++, n++) {
			uint8_t *p = ep.buf + STREAM_OFF + (n % RQ) * SSLOT;
			uint32_t len = stream_len(n);

			if (!recv_ok(&wc[i], n, len, stream_imm(n), n,
				     IBV_WC_RECV) ||
			    hx_verify(p, len, 1000000 + n) >= 0) {
				if (bad++ < 5)
					hx_log("stream message %u (%u bytes) wrong",
					       n, len);
			}
			if (n + RQ < STREAM) {
				struct ibv_sge sge = { (uintptr_t)p, SSLOT,
						       ep.mr->lkey };

				if (post_recv_sg(&ep, n + RQ, &sge, 1))
					bad++;
			}
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(n, STREAM);
	hx_log("stream: %u messages received in %llu ms", n,
	       (unsigned long long)(hx_now_ms() - t0));
	hx_sync(fd);
	close_with_stats(&ep, &st);
	a_sends = hx_recv_u64(fd);
	expect_recvs(&st, STREAM / 2);
	/* Every message the sender put into a channel was placed here. */
	CHECK_EQ(st.recvs, a_sends);
}

/* ---- order ----------------------------------------------------------------- */

enum oop_kind { O_SEND, O_SENDI, O_WRITE, O_READ, O_FADD, O_WIMM, O_WINL };

static const struct oop {
	enum oop_kind k;
	uint32_t len;
} oops[] = {
	{ O_SEND, 64 },	      { O_WRITE, 256 * KIB }, { O_SEND, 32 },
	{ O_READ, 64 * KIB }, { O_SEND, 40 },	      { O_FADD, 8 },
	{ O_SEND, 41 },	      { O_SEND, 64 * KIB },   { O_SEND, 1 },
	{ O_WIMM, 4096 },     { O_SENDI, 100 },	      { O_WINL, 8 },
	{ O_SEND, 0 },	      { O_SEND, 1024 },	      { O_SEND, 200 },
};
#define N_OOPS (int)(sizeof(oops) / sizeof(oops[0]))
#define ROUNDS 40

/* A's buffer */
#define A_W1 0
#define A_RD (256 * KIB)
#define A_ATOM (320 * KIB)
#define A_BIG (384 * KIB)
#define A_SMALL (512 * KIB)
#define A_WIMM (640 * KIB)
/* B's buffer */
#define B_W1 0
#define B_R (256 * KIB)
#define B_CNT (320 * KIB)
#define B_BIG (384 * KIB)
#define B_SMALL (512 * KIB)
#define B_WIMM (640 * KIB)
#define B_WINL (640 * KIB + 4096)

static uint64_t oseed(int r, int i)
{
	return 7 + 100 * (uint64_t)r + (uint64_t)i;
}

static uint64_t cnt_base(int r)
{
	return 1000 + 10 * (uint64_t)r;
}

static uint64_t winl_val(int r)
{
	return 0x1122334455667788ull ^ (uint64_t)r;
}

static bool consumes_recv(enum oop_kind k)
{
	return k == O_SEND || k == O_SENDI || k == O_WIMM;
}

/* The 64 KiB SEND's receive WQE (a WRITE_WITH_IMM's takes a small
 * one, never written). */
static bool big_recv(const struct oop *op)
{
	return op->k != O_WIMM && op->len > 2048;
}

static void order_open(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	stats_on();
	o.max_inline = 64;
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static void order_a(int fd)
{
	struct chan_stats st;
	struct hx_ep ep;
	int r, i;

	order_open(&ep, fd);
	for (r = 0; r < ROUNDS; r++) {
		uint64_t base = cnt_base(r), v = winl_val(r), got;

		memset(ep.buf + A_RD, 0, 64 * KIB);
		memset(ep.buf + A_ATOM, 0, 8);
		hx_sync(fd); /* B is ready for round r */
		for (i = 0; i < N_OOPS; i++) {
			const struct oop *op = &oops[i];
			uint64_t id = 100 * (uint64_t)r + i;
			uint8_t *src = ep.buf + A_SMALL + i * 2048;
			int rc = 0;

			switch (op->k) {
			case O_SEND:
			case O_SENDI:
				if (op->len > 2048)
					src = ep.buf + A_BIG;
				hx_fill(src, op->len, oseed(r, i));
				rc = hx_post_send(&ep,
						  op->k == O_SENDI ?
							  IBV_WR_SEND_WITH_IMM :
							  IBV_WR_SEND,
						  IBV_SEND_SIGNALED, id, src,
						  op->len, ep.mr->lkey, 0, 0,
						  (uint32_t)id);
				break;
			case O_WRITE:
				hx_fill(ep.buf + A_W1, op->len, oseed(r, i));
				rc = hx_post_send(&ep, IBV_WR_RDMA_WRITE,
						  IBV_SEND_SIGNALED, id,
						  ep.buf + A_W1, op->len,
						  ep.mr->lkey,
						  ep.peer.addr + B_W1,
						  ep.peer.rkey, 0);
				break;
			case O_READ:
				rc = hx_post_send(&ep, IBV_WR_RDMA_READ,
						  IBV_SEND_SIGNALED, id,
						  ep.buf + A_RD, op->len,
						  ep.mr->lkey,
						  ep.peer.addr + B_R,
						  ep.peer.rkey, 0);
				break;
			case O_FADD:
				rc = hx_post_atomic(
					&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
					IBV_SEND_SIGNALED, id, ep.buf + A_ATOM,
					ep.mr->lkey, ep.peer.addr + B_CNT,
					ep.peer.rkey, 5, 0);
				break;
			case O_WIMM:
				hx_fill(ep.buf + A_WIMM, op->len, oseed(r, i));
				rc = hx_post_send(&ep,
						  IBV_WR_RDMA_WRITE_WITH_IMM,
						  IBV_SEND_SIGNALED, id,
						  ep.buf + A_WIMM, op->len,
						  ep.mr->lkey,
						  ep.peer.addr + B_WIMM,
						  ep.peer.rkey, (uint32_t)id);
				break;
			case O_WINL:
				rc = hx_post_send(
					&ep, IBV_WR_RDMA_WRITE,
					IBV_SEND_SIGNALED | IBV_SEND_INLINE, id,
					&v, 8, 0, ep.peer.addr + B_WINL,
					ep.peer.rkey, 0);
				break;
			}
			HX_CHECK_RC(rc, 0);
		}
		/* Completions in SQ order, each with its opcode. */
		for (i = 0; i < N_OOPS; i++) {
			const struct oop *op = &oops[i];
			uint64_t id = 100 * (uint64_t)r + i;
			static const int wcop[] = {
				[O_SEND] = IBV_WC_SEND,
				[O_SENDI] = IBV_WC_SEND,
				[O_WRITE] = IBV_WC_RDMA_WRITE,
				[O_READ] = IBV_WC_RDMA_READ,
				[O_FADD] = IBV_WC_FETCH_ADD,
				[O_WIMM] = IBV_WC_RDMA_WRITE,
				[O_WINL] = IBV_WC_RDMA_WRITE,
			};

			if (!HX_EXPECT(ep.scq, NULL, id, IBV_WC_SUCCESS,
				       wcop[op->k], op->len))
				hx_log("round %d op %d", r, i);
			if (op->k == O_READ)
				HX_CHECK_PATTERN(ep.buf + A_RD, op->len,
						 oseed(r, 900));
			if (op->k == O_FADD) {
				memcpy(&got, ep.buf + A_ATOM, 8);
				CHECK_EQ(got, base);
			}
		}
		hx_sync(fd); /* B checked round r */
	}
	hx_sync(fd);
	close_with_stats(&ep, &st);
	hx_send_u64(fd, st.sends);
	expect_sends(&st, ROUNDS);
}

static void order_b(int fd)
{
	struct chan_stats st;
	struct hx_ep ep;
	unsigned long long a_sends;
	int r, i, j;

	order_open(&ep, fd);
	for (r = 0; r < ROUNDS; r++) {
		uint64_t base = cnt_base(r), zero = 0, cnt, w;
		int op_of[N_OOPS], nrecv = 0;

		memset(ep.buf + B_W1, 0, 256 * KIB);
		hx_fill(ep.buf + B_R, 64 * KIB, oseed(r, 900));
		memcpy(ep.buf + B_CNT, &base, 8);
		memset(ep.buf + B_BIG, CANARY, 64 * KIB + 64);
		memset(ep.buf + B_SMALL, CANARY, N_OOPS * 2048);
		memset(ep.buf + B_WIMM, 0, 4096);
		memcpy(ep.buf + B_WINL, &zero, 8);
		/* One receive per SEND / WRITE_WITH_IMM, in order. */
		for (i = 0; i < N_OOPS; i++) {
			if (!consumes_recv(oops[i].k))
				continue;
			op_of[nrecv] = i;
			if (big_recv(&oops[i]))
				HX_CHECK_RC(hx_post_recv(&ep, 100 * r + nrecv,
							 ep.buf + B_BIG,
							 64 * KIB, ep.mr->lkey),
					    0);
			else
				HX_CHECK_RC(hx_post_recv(&ep, 100 * r + nrecv,
							 ep.buf + B_SMALL +
								 nrecv * 2048,
							 2048, ep.mr->lkey),
					    0);
			nrecv++;
		}
		hx_sync(fd);
		for (j = 0; j < nrecv; j++) {
			const struct oop *op = &oops[op_of[j]];
			uint8_t *p = big_recv(op) ? ep.buf + B_BIG :
						    ep.buf + B_SMALL + j * 2048;
			struct ibv_wc wc;
			bool ok;

			i = op_of[j];
			if (hx_poll(ep.rcq, &wc, 1, 10000) != 1) {
				CHECK(!"order: a receive completion within 10 s");
				hx_log("round %d receive %d", r, j);
				break;
			}
			ok = recv_ok(&wc, 100 * r + j, op->len, op->k != O_SEND,
				     100 * r + i,
				     op->k == O_WIMM ?
					     IBV_WC_RECV_RDMA_WITH_IMM :
					     IBV_WC_RECV);
			if (op->k == O_WIMM)
				ok = ok &&
				     hx_verify(ep.buf + B_WIMM, op->len,
					       oseed(r, i)) < 0 &&
				     all_canary(p, 2048); /* WQE unused */
			else
				ok = ok &&
				     hx_verify(p, op->len, oseed(r, i)) < 0 &&
				     all_canary(p + op->len, 64);
			CHECK(ok);
			/* Whatever the QP did before this message is in
			 * place now. */
			memcpy(&cnt, ep.buf + B_CNT, 8);
			memcpy(&w, ep.buf + B_WINL, 8);
			if (i > 1)
				CHECK(hx_verify(ep.buf + B_W1, 256 * KIB,
						oseed(r, 1)) < 0);
			if (i > 5)
				CHECK_EQ(cnt, base + 5);
			if (i > 11)
				CHECK_EQ(w, winl_val(r));
			if (!ok)
				hx_log("round %d receive %d (op %d)", r, j, i);
		}
		hx_sync(fd);
		/* What A read was not changed by the READ. */
		HX_CHECK_PATTERN(ep.buf + B_R, 64 * KIB, oseed(r, 900));
	}
	hx_sync(fd);
	close_with_stats(&ep, &st);
	a_sends = hx_recv_u64(fd);
	expect_recvs(&st, ROUNDS);
	CHECK_EQ(st.recvs, a_sends);
}

/* ---- rnr ------------------------------------------------------------------- */

#define RNR_N 10
#define RNR_WAIT_MS 600

static void rnr_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct chan_stats st;
	struct hx_ep ep;
	int i;

	stats_on();
	/* A peer that answers nothing would fail us after 2 x 100 ms (the
	 * engine's shortest timeout); one that holds the SENDs for want of
	 * a receive answers RNR, and rnr_retry 7 waits for as long as it
	 * takes. */
	o.retry_cnt = 1;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	for (i = 0; i < RNR_N; i++) {
		hx_fill(ep.buf + i * 1024, 10 + 50 * i, 500 + i);
		HX_CHECK_RC(
			hx_post_send(
				&ep, i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				IBV_SEND_SIGNALED, i, ep.buf + i * 1024,
				10 + 50 * i, ep.mr->lkey, 0, 0, 0xabc000 + i),
			0);
	}
	hx_sync(fd); /* B waits RNR_WAIT_MS before posting its receives */
	/* Completion means the message was placed: not before a receive
	 * (nor an error once the timer's 200 ms are over). */
	HX_EXPECT_NONE(ep.scq, 400);
	for (i = 0; i < RNR_N; i++)
		HX_EXPECT(ep.scq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			  IBV_WC_SEND, 10 + 50 * i);
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	hx_sync(fd);
	close_with_stats(&ep, &st);
	expect_sends(&st, RNR_N);

	/* rnr_retry 3 to a QP that never posts a receive: the packet
	 * path's RNR_RETRY_EXC_ERR, the channel never used (a new
	 * context: its counters start at zero). */
	o.rnr_retry = 3;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_fill(ep.buf, 64, 3);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2, ep.buf,
				 8, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_RNR_RETRY_EXC_ERR, -1, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	close_with_stats(&ep, &st);
	CHECK_EQ(st.sends, 0);
}

static void rnr_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct chan_stats st;
	struct hx_ep ep;
	uint64_t t0;
	int i;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	memset(ep.buf, CANARY, 64 * KIB);
	hx_sync(fd);
	t0 = hx_now_ms();
	hx_msleep(RNR_WAIT_MS);
	for (i = 0; i < RNR_N; i++)
		HX_CHECK_RC(hx_post_recv(&ep, i, ep.buf + i * 2048, 2048,
					 ep.mr->lkey),
			    0);
	for (i = 0; i < RNR_N; i++) {
		struct ibv_wc wc;

		if (hx_poll(ep.rcq, &wc, 1, 10000) != 1) {
			CHECK(!"rnr: a receive completion within 10 s");
			break;
		}
		CHECK(recv_ok(&wc, i, 10 + 50 * i, i & 1, 0xabc000 + i,
			      IBV_WC_RECV));
		HX_CHECK_PATTERN(ep.buf + i * 2048, 10 + 50 * i, 500 + i);
		CHECK(all_canary(ep.buf + i * 2048 + 10 + 50 * i, 64));
	}
	hx_log("receives done %llu ms after the sender's posts",
	       (unsigned long long)(hx_now_ms() - t0));
	hx_sync(fd);
	close_with_stats(&ep, &st);
	expect_recvs(&st, RNR_N);

	o.min_rnr_timer = 1; /* 0.01 ms: the retries run out fast */
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	/* Nothing was received, the responder's QP is not in error. */
	HX_EXPECT_NONE(ep.rcq, 50);
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	close_with_stats(&ep, &st);
	CHECK_EQ(st.recvs, 0);
}

/* ---- dead_peer ------------------------------------------------------------ */

/* Two small SENDs to a peer that consumes nothing: the first fails with
 * RETRY_EXC_ERR after (retry_cnt + 1) timeouts (3 x 67 ms) and well
 * within 10 s, then everything is flushed. */
static void dead_sends(struct hx_ep *ep, uint64_t id)
{
	uint64_t t0, dt;

	hx_fill(ep->buf, 64, id);
	t0 = hx_now_ms();
	HX_CHECK_RC(hx_post_send(ep, IBV_WR_SEND, IBV_SEND_SIGNALED, id,
				 ep->buf, 64, ep->mr->lkey, 0, 0, 0),
		    0);
	HX_CHECK_RC(hx_post_send(ep, IBV_WR_SEND_WITH_IMM, IBV_SEND_SIGNALED,
				 id + 1, ep->buf, 16, ep->mr->lkey, 0, 0, 7),
		    0);
	HX_EXPECT_T(ep->scq, NULL, id, IBV_WC_RETRY_EXC_ERR, -1, -1, 10000);
	dt = hx_now_ms() - t0;
	hx_log("retry exceeded after %llu ms", (unsigned long long)dt);
	CHECK(dt >= 200 && dt < 10000);
	HX_EXPECT(ep->scq, NULL, id + 1, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep->qp, IBV_QPS_ERR);
	/* Work posted to the QP in ERR is flushed. */
	HX_CHECK_RC(hx_post_send(ep, IBV_WR_SEND, IBV_SEND_SIGNALED, id + 2,
				 ep->buf, 8, ep->mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep->scq, NULL, id + 2, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_RC(hx_post_recv(ep, id + 3, ep->buf + 4096, 64, ep->mr->lkey),
		    0);
	HX_EXPECT(ep->rcq, NULL, id + 3, IBV_WC_WR_FLUSH_ERR, -1, -1);
}

static void dead_peer_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct chan_stats st;
	struct hx_ep ep;
	pid_t pid;

	stats_on();
	o.timeout = 14; /* 4.096 us * 2^14 = 67 ms */
	o.retry_cnt = 2;
	hx_ep_open(&ep, &o, fd);

	/* 1. The peer process was killed (SIGKILL: no cleanup at all). */
	hx_ep_connect(&ep);
	CHECK_EQ(hx_recv_u64(fd), 9);
	dead_sends(&ep, 10);

	/* 2. The peer process is stopped. */
	drain(&ep);
	hx_ep_new_qp(&ep);
	hx_ep_connect(&ep);
	pid = (pid_t)hx_recv_u64(fd);
	hx_sync(fd);
	REQUIRE(kill(pid, SIGSTOP) == 0);
	REQUIRE(hx_wait_stopped(pid));
	dead_sends(&ep, 20);
	REQUIRE(kill(pid, SIGCONT) == 0);

	/* 3. The peer runs and has no receive for the SEND (an RNR wait,
	 * which keeps a sender waiting), then it is stopped. */
	renew(&ep);
	hx_fill(ep.buf, 64, 30);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 30,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	/* Longer than the 3 x 100 ms a silent peer gets. */
	HX_EXPECT_NONE(ep.scq, 500);
	REQUIRE(kill(pid, SIGSTOP) == 0);
	REQUIRE(hx_wait_stopped(pid));
	HX_EXPECT_T(ep.scq, NULL, 30, IBV_WC_RETRY_EXC_ERR, -1, -1, 10000);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	REQUIRE(kill(pid, SIGCONT) == 0);
	hx_sync(fd);
	close_with_stats(&ep, &st);
	/* The first SEND of each went into the channel. */
	expect_sends(&st, 3);
}

static void dead_peer_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int p[2], stw;
	pid_t pid;
	char c;

	/* A grandchild owns the peer QP of part 1 and is killed once it is
	 * connected. */
	REQUIRE(pipe(p) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
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
	close(p[0]);
	kill(pid, SIGKILL);
	CHECK_EQ(waitpid(pid, &stw, 0), pid);
	CHECK(WIFSIGNALED(stw) && WTERMSIG(stw) == SIGKILL);
	hx_send_u64(fd, 9);

	/* Part 2: our own QP, and A stops us before we post a receive. */
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_send_u64(fd, (uint64_t)getpid());
	hx_sync(fd);
	/* Part 3: a new QP, a SEND we have no receive for, and A stops us
	 * a while later. */
	renew(&ep);
	hx_sync(fd); /* continued */
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- errors ---------------------------------------------------------------- */

/*
 * Each on a fresh QP pair, after a good SEND (so the channel is attached):
 *   0. the receive WQE is too small: LOC_LEN_ERR at B, REM_INV_REQ_ERR at A;
 *   1. the receive WQE has a bad lkey: LOC_PROT_ERR at B, REM_OP_ERR at A;
 *   2. the SEND has a bad lkey: LOC_PROT_ERR at A, nothing at B (its QP
 *      stays in RTS, its receive WQE unused).
 * Then the WQEs behind the failed ones are flushed.
 */
#define ERR_CASES 3

static void errors_open(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	stats_on();
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static void errors_a(int fd)
{
	static const enum ibv_wc_status want[ERR_CASES] = {
		IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_OP_ERR, IBV_WC_LOC_PROT_ERR
	};
	struct chan_stats st;
	struct hx_ep ep;
	int c;

	errors_open(&ep, fd);
	for (c = 0; c < ERR_CASES; c++) {
		uint32_t lkey = ep.mr->lkey;

		if (c)
			renew(&ep);
		hx_sync(fd); /* B posted its receives */
		hx_fill(ep.buf, 4096, 40 + c);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1,
					 ep.buf, 50, lkey, 0, 0, 0),
			    0);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2,
					 ep.buf, 100,
					 c == 2 ? lkey ^ 0x00ffff00 : lkey, 0,
					 0, 0),
			    0);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 3,
					 ep.buf, 20, lkey, 0, 0, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, 50);
		if (!HX_EXPECT(ep.scq, NULL, 2, want[c], -1, -1))
			hx_log("error case %d", c);
		HX_EXPECT(ep.scq, NULL, 3, IBV_WC_WR_FLUSH_ERR, -1, -1);
		HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
		hx_sync(fd); /* B checked */
	}
	hx_sync(fd);
	close_with_stats(&ep, &st);
	/* The good SEND of each, and the failing one of cases 0 and 1. */
	expect_sends(&st, ERR_CASES + 2);
}

static void errors_b(int fd)
{
	static const enum ibv_wc_status want[ERR_CASES] = { IBV_WC_LOC_LEN_ERR,
							    IBV_WC_LOC_PROT_ERR,
							    IBV_WC_SUCCESS };
	struct chan_stats st;
	struct hx_ep ep;
	int c;

	errors_open(&ep, fd);
	for (c = 0; c < ERR_CASES; c++) {
		uint32_t lkey = ep.mr->lkey;

		if (c)
			renew(&ep);
		memset(ep.buf, CANARY, 16 * KIB);
		HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, 4096, lkey), 0);
		HX_CHECK_RC(hx_post_recv(&ep, 2, ep.buf + 4096,
					 c == 0 ? 16 : 4096,
					 c == 1 ? lkey ^ 0x00ffff00 : lkey),
			    0);
		HX_CHECK_RC(hx_post_recv(&ep, 3, ep.buf + 8192, 4096, lkey), 0);
		hx_sync(fd);
		HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 50);
		HX_CHECK_PATTERN(ep.buf, 50, 40 + c);
		CHECK(all_canary(ep.buf + 50, 64));
		if (want[c] != IBV_WC_SUCCESS) {
			if (!HX_EXPECT(ep.rcq, NULL, 2, want[c], -1, -1))
				hx_log("error case %d", c);
			HX_EXPECT(ep.rcq, NULL, 3, IBV_WC_WR_FLUSH_ERR, -1, -1);
			HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
			/* A too small buffer may hold up to its length (as
			 * a packet's first MTU would), never more. */
			CHECK(all_canary(ep.buf + 4096 + (c == 0 ? 16 : 0),
					 4096 - (c == 0 ? 16 : 0)));
		} else {
			/* The requester's local error never reached us. */
			HX_EXPECT_NONE(ep.rcq, 300);
			HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
			CHECK(all_canary(ep.buf + 4096, 8192));
		}
		hx_sync(fd);
	}
	hx_sync(fd);
	close_with_stats(&ep, &st);
	expect_recvs(&st, ERR_CASES);
}

/* ---- blocking -------------------------------------------------------------- */

#define PINGS 2000
#define PING_MAGIC 0x5049494e47000000ull
#define PONG_MAGIC 0x504f4e4700000000ull
#define PP_RQ 16

struct pp {
	struct hx_ep ep;
	unsigned events;
	uint32_t sends_done, recvs_done;
	int bad;
};

/* Next completion, sleeping on the completion channel when there is
 * none (no busy polling); false after 5 s without one. */
static bool pp_wait(struct pp *s, struct ibv_wc *wc)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	for (;;) {
		if (ibv_poll_cq(s->ep.scq, 1, wc) == 1)
			return true;
		if (ibv_req_notify_cq(s->ep.scq, 0))
			return false;
		/* What arrived before the arming raises no event. */
		if (ibv_poll_cq(s->ep.scq, 1, wc) == 1)
			return true;
		if (hx_wait_fd(s->ep.ch->fd, 5000) != 1)
			return false;
		if (ibv_get_cq_event(s->ep.ch, &cq, &cq_ctx))
			return false;
		ibv_ack_cq_events(cq, 1);
		s->events++;
	}
}

static void pp_repost(struct pp *s, uint32_t n)
{
	if (hx_post_recv(&s->ep, n, s->ep.buf + (n % PP_RQ) * 64, 64,
			 s->ep.mr->lkey))
		s->bad++;
}

/* Take completions until receive n arrived: its 8 bytes. */
static bool pp_recv(struct pp *s, uint32_t n, uint64_t *val)
{
	struct ibv_wc wc;

	for (;;) {
		if (!pp_wait(s, &wc)) {
			hx_log("no completion within 5 s (waiting for receive %u)",
			       n);
			return false;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			hx_log("wr_id %llu: %s", (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
			return false;
		}
		if (wc.opcode == IBV_WC_SEND) {
			if (wc.wr_id != s->sends_done++)
				s->bad++;
			continue;
		}
		if (wc.opcode != IBV_WC_RECV || wc.wr_id != n ||
		    wc.byte_len != 8) {
			hx_log("receive %u: wr_id %llu opcode %d byte_len %u",
			       n, (unsigned long long)wc.wr_id, wc.opcode,
			       wc.byte_len);
			return false;
		}
		memcpy(val, s->ep.buf + (n % PP_RQ) * 64, 8);
		s->recvs_done++;
		if (n + PP_RQ < PINGS)
			pp_repost(s, n + PP_RQ);
		return true;
	}
}

static void pp_send(struct pp *s, uint32_t n, uint64_t v)
{
	/* Inline and from the MR, alternately; a slot is reused only
	 * after its message came back answered. */
	uint8_t *src = s->ep.buf + 4096 + (n % PP_RQ) * 64;

	memcpy(src, &v, 8);
	if (hx_post_send(&s->ep, IBV_WR_SEND,
			 IBV_SEND_SIGNALED | (n & 1 ? IBV_SEND_INLINE : 0), n,
			 src, 8, n & 1 ? 0 : s->ep.mr->lkey, 0, 0, 0))
		s->bad++;
}

static void pp_open(struct pp *s, int fd)
{
	struct hx_opts o = hx_opts_default();
	uint32_t n;

	stats_on();
	memset(s, 0, sizeof(*s));
	o.channel = true;
	o.max_inline = 64;
	o.buf_len = 64 * KIB;
	hx_ep_open(&s->ep, &o, fd);
	hx_ep_connect(&s->ep);
	for (n = 0; n < PP_RQ; n++)
		pp_repost(s, n);
	hx_sync(fd);
}

/* The last send completions, blocking too; then the counters. */
static void pp_close(struct pp *s, struct chan_stats *st)
{
	struct ibv_wc wc;

	while (s->sends_done < PINGS) {
		if (!pp_wait(s, &wc) || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_SEND || wc.wr_id != s->sends_done) {
			CHECK(!"blocking: the last send completions");
			break;
		}
		s->sends_done++;
	}
	CHECK_EQ(s->sends_done, PINGS);
	CHECK_EQ(s->recvs_done, PINGS);
	CHECK_EQ(s->bad, 0);
	/* Sleeping on the channel really happened. */
	CHECK(s->events > 0);
	hx_log("%u completion events", s->events);
	hx_sync(s->ep.fd);
	close_with_stats(&s->ep, st);
}

static void blocking_a(int fd)
{
	struct chan_stats st;
	struct pp s;
	uint32_t n;
	uint64_t t0, dt, v;
	unsigned long long b_sends, b_recvs;

	pp_open(&s, fd);
	t0 = hx_now_ms();
	for (n = 0; n < PINGS; n++) {
		pp_send(&s, n, PING_MAGIC ^ n);
		if (!pp_recv(&s, n, &v)) {
			CHECK(!"blocking: pong");
			break;
		}
		if (v != (PONG_MAGIC ^ n))
			s.bad++;
	}
	dt = hx_now_ms() - t0;
	hx_log("%u round trips in %llu ms", n, (unsigned long long)dt);
	CHECK(dt < 30000);
	pp_close(&s, &st);
	b_sends = hx_recv_u64(fd);
	b_recvs = hx_recv_u64(fd);
	expect_sends(&st, PINGS);
	expect_recvs(&st, PINGS);
	/* Every message each side put into a channel, the other placed. */
	CHECK_EQ(st.sends, b_recvs);
	CHECK_EQ(st.recvs, b_sends);
}

static void blocking_b(int fd)
{
	struct chan_stats st;
	struct pp s;
	uint32_t n;
	uint64_t v;

	pp_open(&s, fd);
	for (n = 0; n < PINGS; n++) {
		if (!pp_recv(&s, n, &v)) {
			CHECK(!"blocking: ping");
			break;
		}
		if (v != (PING_MAGIC ^ n))
			s.bad++;
		pp_send(&s, n, PONG_MAGIC ^ n);
	}
	pp_close(&s, &st);
	hx_send_u64(fd, st.sends);
	hx_send_u64(fd, st.recvs);
}

static const struct hx_case cases[] = {
	HX_CASE(sizes, 120),
	HX_CASE(order, 90),
	HX_CASE(rnr, 60),
	HX_CASE(dead_peer, 60),
	HX_CASE(errors, 60),
	HX_CASE(blocking, 90),
	{ 0 },
};

HX_MAIN(cases)
