/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Large SENDs with one copy between two processes of this host
 * (docs/fastpath.md, "Large SENDs: one copy by the receiver";
 * paths/chan_rdv.c): an RC SEND longer than a channel message goes
 * through the channel as a descriptor, and the receiving engine pulls the
 * bytes from the sender's memory into the receive WQE.  Every case also
 * runs with SOFTVERBS_FASTPATH=0 (packets over UDP) and must give the same
 * outcomes there:
 *   sizes   1025 B .. 4 MiB + 5, plain, with immediate data, gathered from
 *           3 SGEs into 3 scattered ones: every byte, canaries between the
 *           pieces, byte_len and imm;
 *   order   small SENDs, large SENDs (with and without immediate), one-copy
 *           WRITEs each announced by a SEND, posted at once on one QP:
 *           receives in order with their bytes, what a SEND announces is
 *           in place, send completions in SQ order; then a 1 MiB SEND
 *           whose receive is posted 600 ms later, past the transport
 *           timer a silent peer gets (RNR, then success);
 *   errors  a receive too short (LOC_LEN_ERR there, REM_INV_REQ_ERR here,
 *           both QPs in ERR), a receive with a bad lkey (LOC_PROT_ERR /
 *           REM_OP_ERR), a SEND with a bad lkey (LOC_PROT_ERR, nothing
 *           received);
 *   peer    the receiver SIGSTOPped with a large SEND outstanding
 *           (RETRY_EXC_ERR, bounded); a sender SIGSTOPped after posting
 *           (its SEND is received while it is stopped, on the fast path);
 *           a sender SIGKILLed before its SEND was taken (the receive
 *           never completes, the receiving QP stays in RTS), and one
 *           killed but not yet reaped (a zombie: its pid still stands,
 *           its memory is gone; the same, counted as a failed copy, not
 *           as a refusal of a living sender's memory); a sender
 *           that moved its QP to ERR (its WQE flushed) and rewrote its
 *           buffer before the receive was posted (nothing completes).
 *   undumpable  a sender non-dumpable since it connected: its SEND
 *           keeps the packet path and arrives.
 *   refused  the receiver's reads of the sender's memory refused with EPERM
 *           (SOFTVERBS_FAULT=pull=100% in the receiver, what Yama's
 *           ptrace_scope=1 does between sibling processes): large SENDs
 *           up to 4 MiB + 5 interleaved with small ones all arrive in
 *           order with their bytes, as packets: no descriptor sent, the
 *           refusal counted (fault_pull, rdv_refused), nothing failed.
 *   seccomp  the refusal by the kernel: once the first QP pair is
 *           connected, the receiver installs a seccomp filter that makes
 *           process_vm_readv fail with EPERM in all its threads; a second
 *           QP pair's large and small SENDs arrive (its receiver's shm
 *           link is refused at attach, link/shm.c: packets over UDP);
 *           then, the filter coming while the second pair is connected,
 *           the case the probe cannot see (docs/fastpath.md): the pull
 *           is refused, rdv_refused counts it, and the sender sends the
 *           SEND again as packets: it arrives whole.
 * Counters: rdv_sends / rdv_recvs / rdv_failed at close, > 0 on the shm
 * link, 0 with SOFTVERBS_FASTPATH=0.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define KIB 1024u
#define MIB (1024u * 1024u)
#define CANARY 0xee
#define BUF (12 * MIB)

static const char *const names[] = { "rdv_sends", "rdv_recvs", "rdv_failed",
				     "rdv_refused", NULL };

struct counts {
	unsigned long long sends, recvs, failed, refused;
};

static void stats_on(void)
{
	setenv("SOFTVERBS_STATS", "1", 1);
}

static void close_counts(struct hx_ep *ep, struct counts *c)
{
	unsigned long long v[4];

	hx_ep_close_counters(ep, names, v);
	c->sends = v[0];
	c->recvs = v[1];
	c->failed = v[2];
	c->refused = v[3];
}

/* At least min of the counter on the shm link, 0 over UDP. */
static void expect_count(unsigned long long v, unsigned long long min)
{
	if (!hx_fastpath_expected())
		CHECK_EQ(v, 0);
	else
		CHECK(v >= min);
}

static void open_ep(struct hx_ep *ep, int fd, const struct hx_opts *base)
{
	struct hx_opts o = base ? *base : hx_opts_default();

	stats_on();
	o.buf_len = BUF;
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static int post_sg(struct hx_ep *ep, enum ibv_wr_opcode op, uint64_t id,
		   struct ibv_sge *sge, int n, uint32_t imm_host)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = sge;
	wr.num_sge = n;
	wr.imm_data = htonl(imm_host);
	return ibv_post_send(ep->qp, &wr, &bad);
}

static int recv_sg(struct hx_ep *ep, uint64_t id, struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = sge;
	wr.num_sge = n;
	return ibv_post_recv(ep->qp, &wr, &bad);
}

/* Empty both CQs and connect a fresh QP pair (both sides call it). */
static void renew(struct hx_ep *ep)
{
	struct ibv_wc wc[16];

	hx_sync(ep->fd);
	while (hx_poll(ep->scq, wc, 16, 30) > 0)
		;
	hx_ep_new_qp(ep);
	hx_ep_connect(ep);
}

static bool all_canary(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != CANARY)
			return false;
	return true;
}

static bool match_at(const uint8_t *p, uint64_t seed, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != hx_pattern_byte(seed, off + i))
			return false;
	return true;
}

/* ---- sizes ---------------------------------------------------------------- */

static const uint32_t sizes[] = { 1025, 1100, 4096, 65539, MIB, 4 * MIB + 5 };
#define N_SIZES (int)(sizeof(sizes) / sizeof(sizes[0]))
enum { V_PLAIN, V_IMM, V_SG, N_V };
#define GAP 64u

/* The three pieces of a message of len bytes (the sender's and the
 * receiver's splits differ). */
static void split(uint32_t len, bool sender, uint32_t piece[3])
{
	piece[0] = sender ? len / 3 : len / 2;
	piece[1] = sender ? len / 3 : len / 5;
	piece[2] = len - piece[0] - piece[1];
}

static void sizes_a(int fd)
{
	struct hx_ep ep;
	struct counts c;
	int i, v;

	open_ep(&ep, fd, NULL);
	for (i = 0; i < N_SIZES; i++)
		for (v = 0; v < N_V; v++) {
			uint32_t len = sizes[i], pc[3], off = 0;
			uint64_t seed = 1000 + i * N_V + v, id = seed;
			struct ibv_sge sge[3];
			int k, n = v == V_SG ? 3 : 1;

			split(len, true, pc);
			if (n == 1)
				pc[0] = len;
			for (k = 0; k < n; k++) {
				/* Pieces apart from each other. */
				uint8_t *p = ep.buf + off + k * GAP;

				for (uint32_t j = 0; j < pc[k]; j++)
					p[j] = hx_pattern_byte(seed, off + j);
				sge[k].addr = (uintptr_t)p;
				sge[k].length = pc[k];
				sge[k].lkey = ep.mr->lkey;
				off += pc[k];
			}
			hx_sync(fd); /* B posted its receive */
			HX_CHECK_RC(post_sg(&ep,
					    v == V_IMM ? IBV_WR_SEND_WITH_IMM :
							 IBV_WR_SEND,
					    id, sge, n, (uint32_t)id),
				    0);
			HX_EXPECT(ep.scq, NULL, id, IBV_WC_SUCCESS, IBV_WC_SEND,
				  len);
			hx_sync(fd);
		}
	close_counts(&ep, &c);
	expect_count(c.sends, N_SIZES * N_V);
}

static void sizes_b(int fd)
{
	struct hx_ep ep;
	struct counts c;
	int i, v;

	open_ep(&ep, fd, NULL);
	for (i = 0; i < N_SIZES; i++)
		for (v = 0; v < N_V; v++) {
			uint32_t len = sizes[i], pc[3], off = 0;
			uint64_t seed = 1000 + i * N_V + v, id = seed;
			struct ibv_sge sge[3];
			struct ibv_wc wc;
			int k, n = v == V_SG ? 3 : 1;

			split(len, false, pc);
			if (n == 1)
				pc[0] = len + 100; /* room to spare */
			memset(ep.buf, CANARY, len + 4 * GAP + 100);
			for (k = 0; k < n; k++) {
				sge[k].addr =
					(uintptr_t)(ep.buf + off + k * GAP);
				sge[k].length = pc[k];
				sge[k].lkey = ep.mr->lkey;
				off += pc[k];
			}
			HX_CHECK_RC(recv_sg(&ep, id, sge, n), 0);
			hx_sync(fd);
			if (!HX_EXPECT(ep.rcq, &wc, id, IBV_WC_SUCCESS,
				       IBV_WC_RECV, len))
				continue;
			CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), v == V_IMM);
			if (v == V_IMM)
				CHECK_EQ(ntohl(wc.imm_data), (uint32_t)id);
			off = 0;
			for (k = 0; k < n; k++) {
				uint32_t got =
					pc[k] < len - off ? pc[k] : len - off;
				uint8_t *p = ep.buf + off + k * GAP;

				CHECK(match_at(p, seed, off, got));
				CHECK(all_canary(p + got,
						 k < n - 1 ? GAP : 100));
				off += got;
			}
			hx_sync(fd);
		}
	close_counts(&ep, &c);
	expect_count(c.recvs, N_SIZES * N_V);
}

/* ---- order ---------------------------------------------------------------- */

#define ROUNDS 6
#define BIG (256 * KIB + 3)
#define RSLOT (320 * KIB) /* one receive (or one source) per slot */
#define WAREA (8 * MIB) /* B's WRITE targets */
#define WLEN (64 * KIB)
#define LATE (1 * MIB)

/* Round r's WRs: a small SEND, a large SEND (with immediate data in odd
 * rounds), a WRITE, a small SEND_WITH_IMM that announces it. */
static void order_a(int fd)
{
	struct hx_ep ep;
	struct counts c;
	struct hx_opts o = hx_opts_default();
	uint64_t t0;
	int r, k, n = 0;

	o.max_send_wr = 64;
	o.timeout = 14; /* 67 ms: a silent peer would fail in 134 ms */
	o.retry_cnt = 1;
	open_ep(&ep, fd, &o);
	hx_sync(fd); /* B's receives are posted */
	for (r = 0; r < ROUNDS; r++) {
		for (k = 0; k < 4; k++, n++) {
			uint8_t *p = ep.buf + (size_t)n * RSLOT;
			uint64_t seed = 2000 + n;

			switch (k) {
			case 0:
				hx_fill(p, 64, seed);
				HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
							 IBV_SEND_SIGNALED, n,
							 p, 64, ep.mr->lkey, 0,
							 0, 0),
					    0);
				break;
			case 1:
				hx_fill(p, BIG, seed);
				HX_CHECK_RC(
					hx_post_send(
						&ep,
						r % 2 ? IBV_WR_SEND_WITH_IMM :
							IBV_WR_SEND,
						IBV_SEND_SIGNALED, n, p, BIG,
						ep.mr->lkey, 0, 0, (uint32_t)n),
					0);
				break;
			case 2:
				hx_fill(p, WLEN, seed);
				HX_CHECK_RC(
					hx_post_send(&ep, IBV_WR_RDMA_WRITE,
						     IBV_SEND_SIGNALED, n, p,
						     WLEN, ep.mr->lkey,
						     ep.peer.addr + WAREA +
							     (uint64_t)r * WLEN,
						     ep.peer.rkey, 0),
					0);
				break;
			default:
				hx_fill(p, 8, seed);
				HX_CHECK_RC(hx_post_send(&ep,
							 IBV_WR_SEND_WITH_IMM,
							 IBV_SEND_SIGNALED, n,
							 p, 8, ep.mr->lkey, 0,
							 0, (uint32_t)r),
					    0);
			}
		}
	}
	for (k = 0; k < n; k++)
		HX_EXPECT(ep.scq, NULL, (uint64_t)k, IBV_WC_SUCCESS,
			  k % 4 == 2 ? IBV_WC_RDMA_WRITE : IBV_WC_SEND, -1);
	hx_sync(fd);

	/* RNR: the receive comes 600 ms after the SEND. */
	hx_fill(ep.buf, LATE, 2999);
	t0 = hx_now_ms();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 99,
				 ep.buf, LATE, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT_NONE(ep.scq, 400);
	HX_EXPECT(ep.scq, NULL, 99, IBV_WC_SUCCESS, IBV_WC_SEND, LATE);
	CHECK(hx_now_ms() - t0 >= 550);
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	hx_sync(fd);
	close_counts(&ep, &c);
	expect_count(c.sends, ROUNDS + 1);
}

static void order_b(int fd)
{
	struct hx_ep ep;
	struct counts c;
	struct hx_opts o = hx_opts_default();
	int r, k, n = 0;

	o.max_recv_wr = 64;
	open_ep(&ep, fd, &o);
	memset(ep.buf + WAREA, 0, ROUNDS * WLEN);
	for (k = 0; k < ROUNDS * 3; k++)
		HX_CHECK_RC(hx_post_recv(&ep, k, ep.buf + (size_t)k * RSLOT,
					 RSLOT, ep.mr->lkey),
			    0);
	hx_sync(fd);
	for (r = 0; r < ROUNDS; r++) {
		for (k = 0; k < 4; k++, n++) {
			int rid = r * 3 + (k == 3 ? 2 : k);
			uint8_t *p = ep.buf + (size_t)rid * RSLOT;
			struct ibv_wc wc;

			if (k == 2)
				continue; /* the WRITE: no receive */
			if (!HX_EXPECT(ep.rcq, &wc, (uint64_t)rid,
				       IBV_WC_SUCCESS, IBV_WC_RECV,
				       k == 0 ? 64 :
				       k == 1 ? BIG :
						8))
				continue;
			HX_CHECK_PATTERN(p,
					 k == 0 ? 64 :
					 k == 1 ? BIG :
						  8,
					 2000 + n);
			if (k == 1)
				CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM),
					 r % 2);
			if (k == 1 && r % 2)
				CHECK_EQ(ntohl(wc.imm_data), (uint32_t)n);
			if (k == 3) {
				/* The WRITE it announces is in place. */
				CHECK_EQ(ntohl(wc.imm_data), (uint32_t)r);
				HX_CHECK_PATTERN(ep.buf + WAREA +
							 (size_t)r * WLEN,
						 WLEN, 2000 + n - 1);
			}
		}
	}
	hx_sync(fd);
	/* The late receive. */
	hx_msleep(600);
	HX_CHECK_RC(hx_post_recv(&ep, 99, ep.buf, LATE, ep.mr->lkey), 0);
	HX_EXPECT(ep.rcq, NULL, 99, IBV_WC_SUCCESS, IBV_WC_RECV, LATE);
	HX_CHECK_PATTERN(ep.buf, LATE, 2999);
	hx_sync(fd);
	close_counts(&ep, &c);
	expect_count(c.recvs, ROUNDS + 1);
}

/* ---- errors --------------------------------------------------------------- */

static void errors_a(int fd)
{
	struct hx_ep ep;
	struct counts c;

	open_ep(&ep, fd, NULL);
	/* 1. The receive is too short. */
	hx_fill(ep.buf, 8192, 31);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 8192, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);

	/* 2. The receive's lkey is bad. */
	renew(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2, ep.buf,
				 65536, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_REM_OP_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);

	/* 3. Our lkey is bad: nothing leaves. */
	renew(&ep);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 3, ep.buf,
				 65536, ep.mr->lkey + 77, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_LOC_PROT_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	close_counts(&ep, &c);
	expect_count(c.sends, 2);
}

static void errors_b(int fd)
{
	struct hx_ep ep;
	struct counts c;

	open_ep(&ep, fd, NULL);
	memset(ep.buf, CANARY, 16384);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, 4096, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_LOC_LEN_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	CHECK(all_canary(ep.buf + 4096, 16384 - 4096));

	renew(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 2, ep.buf, 65536, ep.mr->lkey + 77), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 2, IBV_WC_LOC_PROT_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);

	renew(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 3, ep.buf, 65536, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT_NONE(ep.rcq, 300);
	hx_sync(fd);
	close_counts(&ep, &c);
	expect_count(c.recvs, 0);
}

/* ---- peer ----------------------------------------------------------------- */

static void peer_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	struct counts c;
	uint64_t t0, dt;
	pid_t pid;

	o.timeout = 14; /* 67 ms */
	o.retry_cnt = 2;
	open_ep(&ep, fd, &o);

	/* 1. The receiver is stopped: bounded, RETRY_EXC_ERR. */
	pid = (pid_t)hx_recv_u64(fd);
	REQUIRE(kill(pid, SIGSTOP) == 0);
	REQUIRE(hx_wait_stopped(pid));
	hx_fill(ep.buf, MIB, 41);
	t0 = hx_now_ms();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 MIB, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT_T(ep.scq, NULL, 1, IBV_WC_RETRY_EXC_ERR, -1, -1, 10000);
	dt = hx_now_ms() - t0;
	hx_log("retry exceeded after %llu ms", (unsigned long long)dt);
	CHECK(dt >= 150 && dt < 10000);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	REQUIRE(kill(pid, SIGCONT) == 0);

	/* 2. The sender (B) is stopped after it posted: on the fast path
	 * its SEND is received meanwhile (the copy needs nothing of it). */
	renew(&ep);
	CHECK_EQ(hx_recv_u64(fd), 2); /* posted */
	REQUIRE(kill(pid, SIGSTOP) == 0);
	REQUIRE(hx_wait_stopped(pid));
	memset(ep.buf, 0, 2 * MIB);
	HX_CHECK_RC(hx_post_recv(&ep, 2, ep.buf, 2 * MIB, ep.mr->lkey), 0);
	if (hx_fastpath_expected()) {
		HX_EXPECT(ep.rcq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RECV, MIB);
		REQUIRE(kill(pid, SIGCONT) == 0);
	} else {
		REQUIRE(kill(pid, SIGCONT) == 0);
		HX_EXPECT(ep.rcq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RECV, MIB);
	}
	HX_CHECK_PATTERN(ep.buf, MIB, 42);
	hx_sync(fd);

	/* 3. A sender killed before its SEND was taken: nothing completes,
	 * our QP stays in RTS. */
	hx_ep_new_qp(&ep);
	hx_ep_connect(&ep); /* with B's child */
	CHECK_EQ(hx_recv_u64(fd), 3); /* it is dead */
	HX_CHECK_RC(hx_post_recv(&ep, 3, ep.buf, 8 * MIB, ep.mr->lkey), 0);
	HX_EXPECT_NONE(ep.rcq, 500);
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	hx_sync(fd);

	/* 3b. The same sender killed but not reaped yet (a zombie): its
	 * pid still names it, its memory is gone.  A failed copy, as for
	 * the dead one, not a refusal (which would warn and ask a dead
	 * sender to send again). */
	hx_ep_new_qp(&ep);
	hx_ep_connect(&ep); /* with B's second child */
	CHECK_EQ(hx_recv_u64(fd), 5); /* it is a zombie */
	HX_CHECK_RC(hx_post_recv(&ep, 5, ep.buf, 8 * MIB, ep.mr->lkey), 0);
	HX_EXPECT_NONE(ep.rcq, 500);
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	hx_sync(fd);

	/* 4. The sender moved its QP to ERR before its SEND was taken (its
	 * WQE flushed, its buffer rewritten since): nothing completes. */
	renew(&ep);
	CHECK_EQ(hx_recv_u64(fd), 4);
	memset(ep.buf, 0, MIB);
	HX_CHECK_RC(hx_post_recv(&ep, 4, ep.buf, 2 * MIB, ep.mr->lkey), 0);
	HX_EXPECT_NONE(ep.rcq, 300);
	/* Not a byte of it was copied: the descriptor names a sender that
	 * is gone.  Over packets a retry the sender sent before its ERR may
	 * still wait in our socket and place its bytes once the receive is
	 * posted, as a packet already on a wire does into an HCA's. */
	for (size_t i = 0; hx_fastpath_expected() && i < MIB; i++)
		if (ep.buf[i]) {
			CHECK_EQ(ep.buf[i], 0);
			break;
		}
	hx_sync(fd);
	close_counts(&ep, &c);
	expect_count(c.sends, 1);
	expect_count(c.recvs, 1);
	expect_count(c.failed, 3);
	CHECK_EQ(c.refused, 0);
}

/* A child of B that connects to A, posts a 4 MiB SEND and tells so on
 * the pipe, then waits to be killed. */
static pid_t doomed_sender(int fd, const struct hx_opts *o, uint64_t id,
			   uint8_t seed)
{
	int p[2];
	pid_t pid;
	char ch;

	REQUIRE(pipe(p) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct hx_ep cep;

		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		hx_role = "B'";
		open_ep(&cep, fd, o);
		hx_fill(cep.buf, 4 * MIB, seed);
		if (hx_post_send(&cep, IBV_WR_SEND, IBV_SEND_SIGNALED, id,
				 cep.buf, 4 * MIB, cep.mr->lkey, 0, 0, 0) ||
		    write(p[1], "c", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	CHECK_EQ(read(p[0], &ch, 1), 1);
	close(p[0]);
	/* Its engine has had time to put the SEND out. */
	hx_msleep(50);
	return pid;
}

/* Threads of pid still listed (its own included). */
static int task_count(pid_t pid)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Has pid become a zombie (exited with all its threads, not reaped)?
 * Bounded.  (While its other threads are still on their way out, its
 * memory is gone but the process is not over: a window this test does
 * not aim at.) */
static bool wait_zombie(pid_t pid)
{
	char path[64], buf[512], *q;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 2500; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		q = strrchr(buf, ')');
		if (q && q[1] == ' ' && q[2] == 'Z' && task_count(pid) == 1)
			return true;
		hx_msleep(2);
	}
	return false;
}

static void peer_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int stw;
	pid_t pid;

	o.timeout = 14;
	o.retry_cnt = 2;
	open_ep(&ep, fd, &o);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, 2 * MIB, ep.mr->lkey), 0);
	hx_send_u64(fd, (uint64_t)getpid());
	/* (stopped, continued; our QP took nothing) */

	renew(&ep);
	hx_fill(ep.buf + 4 * MIB, MIB, 42);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2,
				 ep.buf + 4 * MIB, MIB, ep.mr->lkey, 0, 0, 0),
		    0);
	hx_send_u64(fd, 2);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, MIB);
	hx_sync(fd);

	/* A child of ours sends 4 MiB and is killed. */
	pid = doomed_sender(fd, &o, 3, 43);
	kill(pid, SIGKILL);
	CHECK_EQ(waitpid(pid, &stw, 0), pid);
	CHECK(WIFSIGNALED(stw) && WTERMSIG(stw) == SIGKILL);
	hx_send_u64(fd, 3);
	hx_sync(fd);

	/* Another, killed and left a zombie until A has tried its SEND. */
	pid = doomed_sender(fd, &o, 5, 45);
	kill(pid, SIGKILL);
	REQUIRE(wait_zombie(pid));
	hx_send_u64(fd, 5);
	hx_sync(fd);
	CHECK_EQ(waitpid(pid, &stw, 0), pid);
	CHECK(WIFSIGNALED(stw) && WTERMSIG(stw) == SIGKILL);

	/* Part 4: a SEND, then our QP to ERR. */
	renew(&ep);
	hx_fill(ep.buf + 4 * MIB, MIB, 44);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 4,
				 ep.buf + 4 * MIB, MIB, ep.mr->lkey, 0, 0, 0),
		    0);
	hx_msleep(50);
	{
		struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };

		HX_CHECK_RC(ibv_modify_qp(ep.qp, &at, IBV_QP_STATE), 0);
	}
	HX_EXPECT(ep.scq, NULL, 4, IBV_WC_WR_FLUSH_ERR, -1, -1);
	memset(ep.buf + 4 * MIB, 0x55, MIB); /* ours again */
	hx_send_u64(fd, 4);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- undumpable ------------------------------------------------------------ */

/* A sender that made itself non-dumpable (PR_SET_DUMPABLE 0, as programs
 * holding secrets do) after it connected: its own user's
 * process_vm_readv is refused, so its large SENDs keep the packet path
 * and arrive (before, the receiver's pull failed and the sender got
 * LOC_PROT_ERR). */
#define UNDUMP_LEN (64 * KIB + 7)

static void undumpable_a(int fd)
{
	struct hx_ep ep;
	struct counts c;

	open_ep(&ep, fd, NULL);
	REQUIRE(prctl(PR_SET_DUMPABLE, 0) == 0);
	hx_fill(ep.buf, UNDUMP_LEN, 51);
	hx_sync(fd); /* B's receive is posted */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 UNDUMP_LEN, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, UNDUMP_LEN);
	hx_sync(fd);
	REQUIRE(prctl(PR_SET_DUMPABLE, 1) == 0);
	close_counts(&ep, &c);
	CHECK_EQ(c.sends, 0);
}

static void undumpable_b(int fd)
{
	struct hx_ep ep;
	struct counts c;

	open_ep(&ep, fd, NULL);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, MIB, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, UNDUMP_LEN);
	HX_CHECK_PATTERN(ep.buf, UNDUMP_LEN, 51);
	hx_sync(fd);
	close_counts(&ep, &c);
	CHECK_EQ(c.failed, 0);
}

/* ---- refused ------------------------------------------------------------- */

static const uint32_t refused_len[] = { 1025, 65539, 4 * MIB + 5, MIB };
#define N_REFUSED (int)(sizeof(refused_len) / sizeof(refused_len[0]))
#define R_SLOT (4 * MIB + 64)
#define R_SMALL (10 * MIB) /* the small SENDs' receives */

static void refused_a(int fd)
{
	struct hx_ep ep;
	struct counts c;
	struct hx_opts o = hx_opts_default();
	int i;

	o.max_send_wr = 16;
	open_ep(&ep, fd, &o);
	hx_sync(fd); /* B's receives are posted */
	/* Each size twice, the buffers reused. */
	for (i = 0; i < 2 * N_REFUSED; i++) {
		uint32_t len = refused_len[i % N_REFUSED];
		uint8_t *p = ep.buf + (size_t)(i % 2) * R_SLOT;
		uint8_t *q = ep.buf + R_SMALL + (size_t)i * 64;

		hx_fill(p, len, 3000 + i);
		hx_fill(q, 40, 3100 + i);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND_WITH_IMM,
					 IBV_SEND_SIGNALED, 2 * i, p, len,
					 ep.mr->lkey, 0, 0, (uint32_t)i),
			    0);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED,
					 2 * i + 1, q, 40, ep.mr->lkey, 0, 0,
					 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 2 * i, IBV_WC_SUCCESS, IBV_WC_SEND,
			  len);
		HX_EXPECT(ep.scq, NULL, 2 * i + 1, IBV_WC_SUCCESS, IBV_WC_SEND,
			  40);
	}
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	hx_sync(fd);
	close_counts(&ep, &c);
	CHECK_EQ(c.sends, 0);
}

static void refused_b(int fd)
{
	static const char *const bnames[] = { "rdv_recvs",   "rdv_failed",
					      "rdv_refused", "fault_pull",
					      "chan_recvs",  NULL };
	unsigned long long v[5];
	struct hx_ep ep;
	int i;

	setenv("SOFTVERBS_FAULT", "pull=100%", 1);
	open_ep(&ep, fd, NULL);
	memset(ep.buf, CANARY,
	       2 * N_REFUSED * R_SLOT < R_SMALL ? 2 * N_REFUSED * R_SLOT :
						  R_SMALL);
	for (i = 0; i < 2 * N_REFUSED; i++) {
		HX_CHECK_RC(hx_post_recv(&ep, 2 * i,
					 ep.buf + (size_t)(i % 2) * R_SLOT,
					 R_SLOT, ep.mr->lkey),
			    0);
		HX_CHECK_RC(hx_post_recv(&ep, 2 * i + 1,
					 ep.buf + R_SMALL + (size_t)i * 64, 64,
					 ep.mr->lkey),
			    0);
		if (i == 1)
			break; /* two rounds posted ahead, the rest below */
	}
	hx_sync(fd);
	for (i = 0; i < 2 * N_REFUSED; i++) {
		uint32_t len = refused_len[i % N_REFUSED];
		struct ibv_wc wc;

		if (HX_EXPECT(ep.rcq, &wc, 2 * i, IBV_WC_SUCCESS, IBV_WC_RECV,
			      len)) {
			HX_CHECK_PATTERN(ep.buf + (size_t)(i % 2) * R_SLOT, len,
					 3000 + i);
			CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
			CHECK_EQ(ntohl(wc.imm_data), (uint32_t)i);
		}
		if (HX_EXPECT(ep.rcq, NULL, 2 * i + 1, IBV_WC_SUCCESS,
			      IBV_WC_RECV, 40))
			HX_CHECK_PATTERN(ep.buf + R_SMALL + (size_t)i * 64, 40,
					 3100 + i);
		/* The next round's receives into the slot just checked. */
		if (i + 2 < 2 * N_REFUSED) {
			HX_CHECK_RC(
				hx_post_recv(&ep, 2 * (i + 2),
					     ep.buf + (size_t)(i % 2) * R_SLOT,
					     R_SLOT, ep.mr->lkey),
				0);
			HX_CHECK_RC(hx_post_recv(&ep, 2 * (i + 2) + 1,
						 ep.buf + R_SMALL +
							 (size_t)(i + 2) * 64,
						 64, ep.mr->lkey),
				    0);
		}
	}
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	hx_sync(fd);
	hx_ep_close_counters(&ep, bnames, v);
	CHECK_EQ(v[0], 0); /* nothing pulled */
	CHECK_EQ(v[1], 0); /* nothing failed */
	expect_count(v[2], 1); /* the probe refused */
	expect_count(v[3], 1);
	unsetenv("SOFTVERBS_FAULT");
}

/* ---- seccomp -------------------------------------------------------------- */

#define SEC_LEN (4 * MIB + 5)

static void seccomp_a(int fd)
{
	struct hx_ep ep;
	struct counts c;

	open_ep(&ep, fd, NULL);
	/* The residual case: B denies process_vm_readv after connecting. */
	hx_fill(ep.buf, MIB, 60);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 9, ep.buf,
				 MIB, ep.mr->lkey, 0, 0, 0),
		    0);
	/* Its pull refused, the SEND goes again as packets. */
	HX_EXPECT(ep.scq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_SEND, MIB);
	renew(&ep);
	hx_fill(ep.buf, SEC_LEN, 61);
	hx_fill(ep.buf + 5 * MIB, 40, 62);
	hx_sync(fd); /* B's receives are posted */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 SEC_LEN, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2,
				 ep.buf + 5 * MIB, 40, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, SEC_LEN);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, 40);
	hx_sync(fd);
	close_counts(&ep, &c);
	CHECK_EQ(c.sends, hx_fastpath_expected() ? 1 : 0); /* the first */
}

static void seccomp_b(int fd)
{
	static const char *const bnames[] = { "rdv_recvs", "rdv_failed",
					      "rdv_refused", NULL };
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0,
			 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = f };
	unsigned long long v[3];
	struct hx_ep ep;

	open_ep(&ep, fd, NULL);
	HX_CHECK_RC(hx_post_recv(&ep, 9, ep.buf, MIB, ep.mr->lkey), 0);
	REQUIRE(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	/* TSYNC: the progress thread too. */
	REQUIRE(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0);
	hx_sync(fd);
	/* On the shm link the pull is refused, and the sender sends the
	 * SEND again as packets into the same receive. */
	HX_EXPECT(ep.rcq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_RECV, MIB);
	HX_CHECK_PATTERN(ep.buf, MIB, 60);
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	renew(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, 5 * MIB, ep.mr->lkey), 0);
	HX_CHECK_RC(hx_post_recv(&ep, 2, ep.buf + 5 * MIB, 64, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, SEC_LEN);
	HX_CHECK_PATTERN(ep.buf, SEC_LEN, 61);
	HX_EXPECT(ep.rcq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RECV, 40);
	HX_CHECK_PATTERN(ep.buf + 5 * MIB, 40, 62);
	hx_sync(fd);
	hx_ep_close_counters(&ep, bnames, v);
	CHECK_EQ(v[0], 0);
	CHECK_EQ(v[1], 0); /* refused is not failed */
	expect_count(v[2], 1); /* the first pair's pull */
}

static const struct hx_case cases[] = {
	HX_CASE(sizes, 90),	 HX_CASE(order, 60),
	HX_CASE(errors, 60),	 HX_CASE(peer, 60),
	HX_CASE(undumpable, 30), HX_CASE(refused, 90),
	HX_CASE(seccomp, 60),	 { 0 },
};

HX_MAIN(cases)
