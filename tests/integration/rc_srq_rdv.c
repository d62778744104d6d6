/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * RC SENDs to and from QPs that receive on a shared receive queue, between
 * two processes of this host: on the shm link they go through the message
 * channels (a SEND over 1 KiB as a descriptor the receiver pulls with one
 * copy, docs/fastpath.md "Large SENDs"), the SRQ's WQE taken when the
 * receiving engine takes the message.  Every case also runs with
 * SOFTVERBS_FASTPATH=0 (packets over UDP) and must give the same outcomes.
 *   many   each side has NQP RC QPs on one SRQ and sends on every QP at
 *          once 1 KiB .. 4 MiB + 5 SENDs with small ones between (with
 *          immediate data naming the QP and the message), reposting each
 *          SRQ WQE it consumed: every message arrives once, whole, on its
 *          QP, in order per QP; every SEND completes.  Both directions: a
 *          sender whose own QP receives on an SRQ.  Counters: rdv_sends
 *          and rdv_recvs on both sides (0 over UDP).
 *   limit  the SRQ's limit armed at 2 with 4 WQEs posted: three large
 *          SENDs raise IBV_EVENT_SRQ_LIMIT_REACHED (once); then three more
 *          with one WQE left: one arrives, the others wait (RNR, retried
 *          forever with rnr_retry 7, past the transport timer a silent
 *          peer gets) until two WQEs are posted 600 ms later, and arrive
 *          in order; all SENDs complete successfully.
 *   errors two QPs on one SRQ: a 64 KiB SEND on the first finds the SRQ's
 *          next WQE too short (LOC_LEN_ERR there on that QP,
 *          REM_INV_REQ_ERR here, both QPs in ERR); a 1 MiB SEND on the
 *          second takes the SRQ's next WQE and arrives whole, its QPs in
 *          RTS.
 *   gone   a large SEND whose sender moved its QP to ERR (its WQE flushed,
 *          its buffer rewritten) before the receiver's SRQ had a WQE:
 *          nothing of it arrives, and the WQE posted then stays in the
 *          SRQ for the next message, a 1 MiB SEND on the other QP.
 *   refused the receiver's first pull refused after its probe allowed it
 *          (SOFTVERBS_FAULT=pull=@3: as a seccomp filter installed after
 *          the connection would): that 1 MiB SEND and the small and large
 *          ones posted after it go again as packets and arrive in order,
 *          whole, into the SRQ's WQEs in order (the first into the WQE
 *          its descriptor took); every SEND completes successfully.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NQP 4
#define SLOT ((4u << 20) + 64) /* one receive (or one source) per slot */

static const char *const names[] = { "rdv_sends", "rdv_recvs", "rdv_failed",
				     "rdv_refused", NULL };

struct side {
	struct hx_ep ep;
	struct ibv_srq *srq;
	struct ibv_qp *q[NQP];
	int nqp;
	uint8_t *rbuf, *sbuf;
};

/* At least min of the counter on the shm link, 0 over UDP. */
static void expect_count(unsigned long long v, unsigned long long min)
{
	if (!hx_fastpath_expected())
		CHECK_EQ(v, 0);
	else
		CHECK(v >= min);
}

static void post_srq(struct side *s, uint64_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(s->rbuf + slot * SLOT),
		.length = SLOT,
		.lkey = s->ep.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot,
				  .sg_list = &sge,
				  .num_sge = 1 },
			   *bad;

	HX_CHECK_RC(ibv_post_srq_recv(s->srq, &wr, &bad), 0);
}

/* nqp RC QPs on one SRQ of depth (its receive slots first in the buffer,
 * then nsend source slots), connected to the peer's. */
static void open_side(struct side *s, int fd, int nqp, uint32_t depth,
		      uint32_t nsend, const struct hx_opts *base)
{
	struct hx_opts o = base ? *base : hx_opts_default();
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = depth, .max_sge = 1 },
	};
	int i;

	memset(s, 0, sizeof(*s));
	setenv("SOFTVERBS_STATS", "1", 1);
	s->nqp = nqp;
	o.send_cqe = 256;
	o.recv_cqe = 256;
	o.buf_len = (size_t)(depth + nsend) * SLOT;
	hx_ep_open(&s->ep, &o, fd);
	s->rbuf = s->ep.buf;
	s->sbuf = s->ep.buf + (size_t)depth * SLOT;
	s->srq = ibv_create_srq(s->ep.pd, &sa);
	if (!s->srq)
		hx_die("ibv_create_srq: %s", strerror(errno));
	for (i = 0; i < nqp; i++)
		s->q[i] = hx_ep_srq_qp(&s->ep, s->srq, 64);
	/* The endpoint's own QP is only the vehicle of the exchange. */
	hx_ep_connect(&s->ep);
	hx_ep_connect_more(&s->ep, s->q, nqp);
}

static void close_side(struct side *s, unsigned long long *v)
{
	for (int i = 0; i < s->nqp; i++)
		CHECK_EQ(ibv_destroy_qp(s->q[i]), 0);
	CHECK_EQ(ibv_destroy_srq(s->srq), 0);
	hx_ep_close_counters(&s->ep, names, v);
}

static uint64_t seed_of(char from, int i, int k)
{
	return ((uint64_t)from << 32) | ((uint64_t)i << 16) | (uint64_t)k;
}

static int post_send(struct side *s, int i, int k, uint8_t *src, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src,
			       .length = len,
			       .lkey = s->ep.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)i << 32 | (uint64_t)k,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl((uint32_t)(i << 16 | k)),
	},
			   *bad;

	hx_fill(src, len, seed_of(*hx_role, i, k));
	return ibv_post_send(s->q[i], &wr, &bad);
}

/* A receive on the SRQ: message k of QP i from the peer, whole.  Checked
 * against the QP it arrived on and the message that QP expects next. */
static bool check_recv(struct side *s, const struct ibv_wc *wc,
		       const uint32_t *lens, int *recvd)
{
	char peer = *hx_role == 'A' ? 'B' : 'A';
	uint32_t imm = ntohl(wc->imm_data);
	int i = (int)(imm >> 16), k = (int)(imm & 0xffff);

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV ||
	    !(wc->wc_flags & IBV_WC_WITH_IMM) || i >= s->nqp || k != recvd[i] ||
	    wc->qp_num != s->q[i]->qp_num || wc->byte_len != lens[k] ||
	    hx_verify(s->rbuf + wc->wr_id * SLOT, wc->byte_len,
		      seed_of(peer, i, k)) != -1) {
		hx_log("receive %s wr_id %llu, imm QP %d message %d (%u bytes, on QP 0x%x): not the message expected (%d)",
		       ibv_wc_status_str(wc->status),
		       (unsigned long long)wc->wr_id, i, k, wc->byte_len,
		       wc->qp_num, i < s->nqp ? recvd[i] : -1);
		return false;
	}
	recvd[i]++;
	return true;
}

/* ---- many ------------------------------------------------------------------ */

static const uint32_t many_len[] = { 1025,     8,    4096,     100,
				     65539,    0,    1u << 20, 40,
				     4u << 20, 1024, 300000,   (4u << 20) + 5 };
#define N_MANY (int)(sizeof(many_len) / sizeof(many_len[0]))
#define MANY_DEPTH 8
#define MANY_LARGE 7 /* of many_len, over 1 KiB */

/* Where message k of QP i is sent from: each message its own bytes. */
static uint8_t *many_src(struct side *s, int i, int k)
{
	size_t per_qp = 0, off = 0;
	int j;

	for (j = 0; j < N_MANY; j++) {
		per_qp += (many_len[j] + 63u) & ~63u;
		if (j < k)
			off = per_qp;
	}
	return s->sbuf + (size_t)i * per_qp + off;
}

static void many(int fd)
{
	static struct side s;
	int recvd[NQP] = { 0 }, sent[NQP] = { 0 }, i, k, got = 0, done = 0;
	unsigned long long v[4];
	bool ok = true;
	uint64_t end;

	/* (Source slots: NQP x the messages' bytes, about 10 MiB each.) */
	open_side(&s, fd, NQP, MANY_DEPTH, NQP * 3, NULL);
	for (i = 0; i < MANY_DEPTH; i++)
		post_srq(&s, (uint64_t)i);
	hx_sync(fd);
	/* Every SEND of every QP at once, the QPs' turns interleaved. */
	for (k = 0; k < N_MANY; k++)
		for (i = 0; i < NQP; i++)
			HX_CHECK_RC(post_send(&s, i, k, many_src(&s, i, k),
					      many_len[k]),
				    0);
	end = hx_now_ms() + 60000;
	while (ok && (got < NQP * N_MANY || done < NQP * N_MANY) &&
	       hx_now_ms() < end) {
		struct ibv_wc wc[16];
		int n, j;

		n = ibv_poll_cq(s.ep.rcq, 16, wc);
		for (j = 0; j < n && ok; j++) {
			ok = check_recv(&s, &wc[j], many_len, recvd);
			got++;
			post_srq(&s, wc[j].wr_id);
		}
		n = ibv_poll_cq(s.ep.scq, 16, wc);
		for (j = 0; j < n; j++) {
			i = (int)(wc[j].wr_id >> 32);
			k = (int)(uint32_t)wc[j].wr_id;
			if (wc[j].status != IBV_WC_SUCCESS || i >= NQP ||
			    k != sent[i]) {
				hx_log("send QP %d message %d: %s (expected %d)",
				       i, k, ibv_wc_status_str(wc[j].status),
				       i < NQP ? sent[i] : -1);
				ok = false;
				break;
			}
			sent[i]++;
			done++;
		}
	}
	CHECK(ok);
	CHECK_EQ(got, NQP * N_MANY);
	CHECK_EQ(done, NQP * N_MANY);
	hx_sync(fd);
	close_side(&s, v);
	/* This side's large SENDs, and the peer's, through the channel. */
	expect_count(v[0], NQP * MANY_LARGE);
	expect_count(v[1], NQP * MANY_LARGE);
	CHECK_EQ(v[2], 0);
}

static void many_a(int fd)
{
	many(fd);
}

static void many_b(int fd)
{
	many(fd);
}

/* ---- limit ------------------------------------------------------------------ */

static const uint32_t limit_len[] = { 65539, 1u << 20, 4096,
				      2000,  1u << 20, 300000 };
#define N_LIMIT 6

/* Wait up to ms for the context's next async event of this SRQ. */
static bool srq_event(struct side *s, enum ibv_event_type want, int ms)
{
	struct ibv_async_event ev;
	bool ok;

	if (!hx_wait_fd(s->ep.ctx->async_fd, ms))
		return false;
	HX_CHECK_RC(ibv_get_async_event(s->ep.ctx, &ev), 0);
	ok = ev.event_type == want && ev.element.srq == s->srq;
	if (!ok)
		hx_log("async event %s", ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	return ok;
}

static void limit_a(int fd)
{
	static struct side s;
	struct hx_opts o = hx_opts_default();
	unsigned long long v[4];
	int k;

	o.timeout = 14; /* 67 ms: a silent peer would fail in 134 ms */
	o.retry_cnt = 1;
	open_side(&s, fd, 1, 1, N_LIMIT, &o);
	for (k = 0; k < N_LIMIT; k++) {
		if (k == 0 || k == 3)
			hx_sync(fd); /* B's receives are posted */
		HX_CHECK_RC(post_send(&s, 0, k, s.sbuf + (size_t)k * SLOT,
				      limit_len[k]),
			    0);
	}
	for (k = 0; k < N_LIMIT; k++)
		HX_EXPECT(s.ep.scq, NULL, (uint64_t)k, IBV_WC_SUCCESS,
			  IBV_WC_SEND, limit_len[k]);
	hx_sync(fd);
	close_side(&s, v);
	expect_count(v[0], N_LIMIT);
}

static void limit_b(int fd)
{
	static struct side s;
	struct ibv_srq_attr la = { .srq_limit = 2 };
	int recvd[1] = { 0 }, k;
	unsigned long long v[4];
	struct ibv_wc wc;

	open_side(&s, fd, 1, 6, 0, NULL);
	for (k = 0; k < 4; k++)
		post_srq(&s, (uint64_t)k);
	HX_CHECK_RC(ibv_modify_srq(s.srq, &la, IBV_SRQ_LIMIT), 0);
	hx_sync(fd);
	/* Three SENDs take three WQEs: fewer than 2 left, the event. */
	for (k = 0; k < 3; k++) {
		if (hx_poll(s.ep.rcq, &wc, 1, 10000) != 1) {
			CHECK(false);
			break;
		}
		CHECK(check_recv(&s, &wc, limit_len, recvd));
	}
	CHECK(srq_event(&s, IBV_EVENT_SRQ_LIMIT_REACHED, 5000));
	/* Disarmed: no second event. */
	CHECK(!srq_event(&s, IBV_EVENT_SRQ_LIMIT_REACHED, 100));
	hx_sync(fd);
	/* One WQE left for three SENDs: one arrives, two wait (RNR). */
	if (hx_poll(s.ep.rcq, &wc, 1, 10000) == 1)
		CHECK(check_recv(&s, &wc, limit_len, recvd));
	else
		CHECK(false);
	HX_EXPECT_NONE(s.ep.rcq, 600);
	post_srq(&s, 4);
	post_srq(&s, 5);
	for (k = 4; k < N_LIMIT; k++) {
		if (hx_poll(s.ep.rcq, &wc, 1, 10000) != 1) {
			CHECK(false);
			break;
		}
		CHECK(check_recv(&s, &wc, limit_len, recvd));
	}
	CHECK_EQ(recvd[0], N_LIMIT);
	CHECK_EQ(hx_qp_state(s.q[0]), IBV_QPS_RTS);
	hx_sync(fd);
	close_side(&s, v);
	expect_count(v[1], N_LIMIT);
	CHECK_EQ(v[2], 0);
}

/* ---- errors ----------------------------------------------------------------- */

#define SHORT 1000u
#define ERR_LEN (64u * 1024 + 3)

/* Take the async events that come within ms (destroy waits for their
 * acks): did QP q's LAST_WQE_REACHED come, as an SRQ-attached QP entering
 * ERR raises it? */
static bool last_wqe(struct side *s, struct ibv_qp *q, int ms)
{
	struct ibv_async_event ev;
	bool seen = false;

	while (hx_wait_fd(s->ep.ctx->async_fd, ms)) {
		HX_CHECK_RC(ibv_get_async_event(s->ep.ctx, &ev), 0);
		if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
		    ev.element.qp == q)
			seen = true;
		ibv_ack_async_event(&ev);
	}
	return seen;
}

static void errors_a(int fd)
{
	static struct side s;
	unsigned long long v[4];

	open_side(&s, fd, 2, 1, 2, NULL);
	hx_sync(fd); /* B's receives are posted */
	/* Into the SRQ's short WQE: the responder's LOC_LEN_ERR there. */
	HX_CHECK_RC(post_send(&s, 0, 0, s.sbuf, ERR_LEN), 0);
	HX_EXPECT(s.ep.scq, NULL, 0, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND,
		  ERR_LEN);
	CHECK_EQ(hx_qp_state_wait(s.q[0], IBV_QPS_ERR, 5000), IBV_QPS_ERR);
	/* The other QP on the same SRQ takes the next WQE. */
	HX_CHECK_RC(post_send(&s, 1, 0, s.sbuf + SLOT, 1u << 20), 0);
	HX_EXPECT(s.ep.scq, NULL, (uint64_t)1 << 32, IBV_WC_SUCCESS,
		  IBV_WC_SEND, 1u << 20);
	CHECK_EQ(hx_qp_state(s.q[1]), IBV_QPS_RTS);
	CHECK(last_wqe(&s, s.q[0], 300));
	hx_sync(fd);
	close_side(&s, v);
	expect_count(v[0], 2);
}

static void errors_b(int fd)
{
	static const uint32_t lens[] = { 1u << 20 };
	static struct side s;
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .wr_id = 0, .sg_list = &sge, .num_sge = 1 },
			   *bad;
	int recvd[2] = { 0 };
	unsigned long long v[4];
	struct ibv_wc wc;

	open_side(&s, fd, 2, 2, 0, NULL);
	sge = (struct ibv_sge){ .addr = (uintptr_t)s.rbuf,
				.length = SHORT,
				.lkey = s.ep.mr->lkey };
	HX_CHECK_RC(ibv_post_srq_recv(s.srq, &wr, &bad), 0);
	post_srq(&s, 1);
	hx_sync(fd);
	if (HX_EXPECT(s.ep.rcq, &wc, 0, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0))
		CHECK_EQ(wc.qp_num, s.q[0]->qp_num);
	/* Message 0 of QP 1 into WQE 1. */
	recvd[1] = 0;
	if (hx_poll(s.ep.rcq, &wc, 1, 10000) == 1) {
		CHECK_EQ(wc.wr_id, 1);
		CHECK(check_recv(&s, &wc, lens, recvd));
	} else {
		CHECK(false);
	}
	CHECK_EQ(recvd[1], 1);
	CHECK_EQ(hx_qp_state(s.q[0]), IBV_QPS_ERR);
	CHECK_EQ(hx_qp_state(s.q[1]), IBV_QPS_RTS);
	CHECK(last_wqe(&s, s.q[0], 300));
	hx_sync(fd);
	close_side(&s, v);
	expect_count(v[1], 1);
	CHECK_EQ(v[2], 0);
}

/* ---- gone ------------------------------------------------------------------- */

#define GONE_LEN (1u << 20)

/* A is the receiver here: its SRQ's one WQE is for the message that can
 * still come. */
static void gone_a(int fd)
{
	static const uint32_t lens[] = { GONE_LEN };
	static struct side s;
	int recvd[2] = { 0 };
	unsigned long long v[4];
	struct ibv_wc wc;

	open_side(&s, fd, 2, 1, 0, NULL);
	hx_sync(fd); /* B's SEND on QP 0 was posted, then its QP to ERR */
	post_srq(&s, 0);
	HX_EXPECT_NONE(s.ep.rcq, 300);
	for (size_t i = 0; i < GONE_LEN; i++)
		if (s.rbuf[i]) {
			CHECK_EQ(s.rbuf[i], 0); /* not a byte of it */
			break;
		}
	hx_sync(fd); /* B sends on QP 1 */
	if (hx_poll(s.ep.rcq, &wc, 1, 10000) == 1) {
		CHECK_EQ(wc.wr_id, 0);
		CHECK(check_recv(&s, &wc, lens, recvd));
	} else {
		CHECK(false);
	}
	CHECK_EQ(recvd[1], 1);
	CHECK_EQ(hx_qp_state(s.q[0]), IBV_QPS_RTS);
	CHECK_EQ(hx_qp_state(s.q[1]), IBV_QPS_RTS);
	hx_sync(fd);
	close_side(&s, v);
	expect_count(v[1], 1);
	expect_count(v[2], 1);
}

static void gone_b(int fd)
{
	static struct side s;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	unsigned long long v[4];

	open_side(&s, fd, 2, 1, 2, NULL);
	HX_CHECK_RC(post_send(&s, 0, 0, s.sbuf, GONE_LEN), 0);
	hx_msleep(50); /* its engine has put it out */
	HX_CHECK_RC(ibv_modify_qp(s.q[0], &at, IBV_QP_STATE), 0);
	HX_EXPECT(s.ep.scq, NULL, 0, IBV_WC_WR_FLUSH_ERR, -1, -1);
	memset(s.sbuf, 0x55, GONE_LEN); /* ours again */
	hx_sync(fd);
	hx_sync(fd);
	HX_CHECK_RC(post_send(&s, 1, 0, s.sbuf + SLOT, GONE_LEN), 0);
	HX_EXPECT(s.ep.scq, NULL, (uint64_t)1 << 32, IBV_WC_SUCCESS,
		  IBV_WC_SEND, GONE_LEN);
	CHECK(last_wqe(&s, s.q[0], 300));
	hx_sync(fd);
	close_side(&s, v);
	expect_count(v[0], 2);
}

/* ---- refused ---------------------------------------------------------------- */

static const uint32_t ref_len[] = {
	1u << 20, 40, 65539, 8, (4u << 20) + 5, 2000
};
#define N_REF 6

static void refused_a(int fd)
{
	static struct side s;
	unsigned long long v[4];
	size_t off = 0;
	int k;

	open_side(&s, fd, 1, 1, 3, NULL);
	hx_sync(fd); /* B's receives are posted */
	for (k = 0; k < N_REF; k++) {
		HX_CHECK_RC(post_send(&s, 0, k, s.sbuf + off, ref_len[k]), 0);
		off += (ref_len[k] + 63u) & ~63u;
	}
	for (k = 0; k < N_REF; k++)
		HX_EXPECT(s.ep.scq, NULL, (uint64_t)k, IBV_WC_SUCCESS,
			  IBV_WC_SEND, ref_len[k]);
	CHECK_EQ(hx_qp_state(s.q[0]), IBV_QPS_RTS);
	hx_sync(fd);
	close_side(&s, v);
	expect_count(v[0], 1); /* the first went as a descriptor */
}

static void refused_b(int fd)
{
	static struct side s;
	int recvd[1] = { 0 }, k;
	unsigned long long v[4];
	struct ibv_wc wc;

	/* Reads 1 and 2 are the probes of the two QPs' channels (the
	 * endpoint's, then q[0]'s); the third, the first pull, is
	 * refused as the kernel would refuse it. */
	setenv("SOFTVERBS_FAULT", "pull=@3", 1);
	open_side(&s, fd, 1, N_REF, 0, NULL);
	for (k = 0; k < N_REF; k++)
		post_srq(&s, (uint64_t)k);
	hx_sync(fd);
	for (k = 0; k < N_REF; k++) {
		if (hx_poll(s.ep.rcq, &wc, 1, 10000) != 1) {
			CHECK(false);
			break;
		}
		CHECK_EQ(wc.wr_id, (uint64_t)k);
		CHECK(check_recv(&s, &wc, ref_len, recvd));
	}
	CHECK_EQ(recvd[0], N_REF);
	CHECK_EQ(hx_qp_state(s.q[0]), IBV_QPS_RTS);
	hx_sync(fd);
	close_side(&s, v);
	CHECK_EQ(v[1], 0); /* nothing pulled */
	CHECK_EQ(v[2], 0); /* nothing failed */
	expect_count(v[3], 1); /* the pull refused */
	unsetenv("SOFTVERBS_FAULT");
}

static const struct hx_case cases[] = {
	HX_CASE(many, 90), HX_CASE(limit, 60),	 HX_CASE(errors, 60),
	HX_CASE(gone, 60), HX_CASE(refused, 60), { 0 },
};

HX_MAIN(cases)
