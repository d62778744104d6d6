/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The extended verbs between two processes, bytes compared end to end:
 * QPs from ibv_create_qp_ex posting through the ibv_wr_* API, CQs from
 * ibv_create_cq_ex polled with the ibv_cq_ex iterator and its accessors.
 *
 * Cases: every RC operation in one wr_* batch (SEND with a gather list,
 * SEND_WITH_IMM inline, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ,
 * ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD); inline data lists reused at
 * once; a failing batch posts nothing; a batch larger than the send
 * queue's free room fails with ENOMEM and posts nothing while an exact
 * fit goes through; UC sends and writes; completion timestamps of both
 * sides against the clock.  A is the requester, B the responder.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define WC_ALL                                                         \
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define RC_OPS                                                            \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |             \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |   \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define UC_OPS                                                \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)

/* An endpoint whose CQ and QP are the extended ones. */
struct xep {
	struct hx_ep ep;
	struct ibv_cq_ex *cq;
	struct ibv_qp_ex *qpx;
	enum ibv_qp_type type;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* hx_ep_open builds plain objects; swap the CQ and QP for extended ones
 * (same PD and MR) and move the QP to INIT as the harness does. */
static void xep_open(struct xep *x, int fd, struct hx_opts *o,
		     enum ibv_qp_type type, uint64_t ops)
{
	struct hx_ep *ep = &x->ep;
	struct ibv_cq_init_attr_ex ca = { .cqe = 256, .wc_flags = WC_ALL };
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp_attr a;
	int mask;

	hx_ep_open(ep, o, fd);
	if (ibv_destroy_qp(ep->qp) || ibv_destroy_cq(ep->scq))
		hx_die("cannot drop the harness's QP/CQ");
	x->cq = ibv_create_cq_ex(ep->ctx, &ca);
	if (!x->cq)
		hx_die("ibv_create_cq_ex: %s", strerror(errno));
	ep->scq = ep->rcq = ibv_cq_ex_to_cq(x->cq);

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = ep->scq;
	qa.qp_type = type;
	qa.cap.max_send_wr = o->max_send_wr;
	qa.cap.max_recv_wr = o->max_recv_wr;
	qa.cap.max_send_sge = o->max_send_sge;
	qa.cap.max_recv_sge = o->max_recv_sge;
	qa.cap.max_inline_data = o->max_inline;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = ep->pd;
	qa.send_ops_flags = ops;
	ep->qp = ibv_create_qp_ex(ep->ctx, &qa);
	if (!ep->qp)
		hx_die("ibv_create_qp_ex: %s", strerror(errno));
	ep->cap = qa.cap;
	x->qpx = ibv_qp_to_qp_ex(ep->qp);
	if (!x->qpx)
		hx_die("ibv_qp_to_qp_ex: %s", strerror(errno));
	x->type = type;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = o->qp_access;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       IBV_QP_ACCESS_FLAGS;
	if (type == IBV_QPT_UC)
		a.qp_access_flags &= IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(ep->qp, &a, mask))
		hx_die("modify_qp RESET->INIT failed");
	ep->psn = (uint32_t)lrand48() & 0xffffff;
}

/* UC has no READ/atomic or RNR/ACK attributes: its own RTR/RTS. */
static void xep_connect(struct xep *x)
{
	struct hx_ep *ep = &x->ep;
	struct ibv_qp_attr a;

	if (x->type == IBV_QPT_RC) {
		hx_ep_connect(ep);
		return;
	}
	hx_ep_exchange(ep);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ep->mtu < (enum ibv_mtu)ep->peer.mtu ?
			     ep->mtu :
			     (enum ibv_mtu)ep->peer.mtu;
	ep->mtu_bytes = hx_mtu_bytes(a.path_mtu);
	a.dest_qp_num = ep->peer.qpn;
	a.rq_psn = ep->peer.psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = ep->peer.gid;
	a.ah_attr.grh.sgid_index = ep->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(ep->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
		hx_die("UC INIT->RTR failed");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = ep->psn;
	if (ibv_modify_qp(ep->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		hx_die("UC RTR->RTS failed");
	hx_sync(ep->fd);
}

/* One completion through the ibv_cq_ex iterator, every field read with
 * its accessor. */
struct xwc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len, qp_num, src_qp, wc_flags, slid;
	__be32 imm;
	uint8_t sl, dlid_path_bits;
	uint64_t ts, wall;
};

static bool xpoll(struct ibv_cq_ex *cq, struct xwc *w, int timeout_ms)
{
	uint64_t end = hx_now_ms() + (uint64_t)timeout_ms;
	struct ibv_poll_cq_attr pa = { 0 };
	int rc;

	while ((rc = ibv_start_poll(cq, &pa)) == ENOENT) {
		if (hx_now_ms() > end)
			return false;
		usleep(50);
	}
	if (rc) {
		hx_log("ibv_start_poll: %d", rc);
		return false;
	}
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	w->imm = ibv_wc_read_imm_data(cq);
	w->qp_num = ibv_wc_read_qp_num(cq);
	w->src_qp = ibv_wc_read_src_qp(cq);
	w->wc_flags = ibv_wc_read_wc_flags(cq);
	w->slid = ibv_wc_read_slid(cq);
	w->sl = ibv_wc_read_sl(cq);
	w->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
	w->ts = ibv_wc_read_completion_ts(cq);
	w->wall = ibv_wc_read_completion_wallclock_ns(cq);
	ibv_end_poll(cq);
	return true;
}

/* Expect the next completion: wr_id, status, opcode and byte_len (-1: any). */
static bool xexpect_at(int line, struct ibv_cq_ex *cq, struct xwc *out,
		       uint64_t wr_id, enum ibv_wc_opcode op, int64_t len)
{
	struct xwc w;

	memset(&w, 0, sizeof(w));
	if (!xpoll(cq, &w, 10000)) {
		fprintf(stderr,
			"ext_wr.c:%d: [%s] no completion (wr_id %llu)\n", line,
			hx_role, (unsigned long long)wr_id);
		check_failed++;
		if (out)
			*out = w;
		return false;
	}
	if (out)
		*out = w;
	if (w.wr_id != wr_id || w.status != IBV_WC_SUCCESS || w.opcode != op ||
	    (len >= 0 && w.byte_len != (uint32_t)len)) {
		fprintf(stderr,
			"ext_wr.c:%d: [%s] wr_id %llu status %s opcode %d len %u, "
			"expected wr_id %llu success opcode %d len %lld\n",
			line, hx_role, (unsigned long long)w.wr_id,
			ibv_wc_status_str(w.status), w.opcode, w.byte_len,
			(unsigned long long)wr_id, op, (long long)len);
		check_failed++;
		return false;
	}
	check_passed++;
	return true;
}
#define XEXPECT(cq, out, id, op, len) xexpect_at(__LINE__, cq, out, id, op, len)

static void xnone(struct ibv_cq_ex *cq, int ms)
{
	struct xwc w;

	if (xpoll(cq, &w, ms)) {
		fprintf(stderr, "[%s] unexpected completion wr_id %llu\n",
			hx_role, (unsigned long long)w.wr_id);
		check_failed++;
	} else {
		check_passed++;
	}
}

static void xclose(struct xep *x)
{
	CHECK_EQ(hx_ep_close(&x->ep), 0);
}

/* ---- every RC operation in one batch ------------------------------------ */

/* A's buffer: 0 send source (3 pieces), 64K write source, 128K read
 * destination, 192K atomic results.  B's: 0.. receive buffers, 64K write
 * target, 128K read source, 192K the atomic counter. */
#define OFF_W 0x10000
#define OFF_R 0x20000
#define OFF_A 0x30000
#define LEN_S 5000
#define LEN_W 60000
#define LEN_R 9000
#define INL "inline send with immediate"

static void rc_all_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;
	struct ibv_qp_ex *q;
	uint8_t *buf;
	uint32_t lk;
	uint64_t t0, t2;

	o.max_inline = 64;
	xep_open(&x, fd, &o, IBV_QPT_RC, RC_OPS);
	xep_connect(&x);
	q = x.qpx;
	buf = x.ep.buf;
	lk = x.ep.mr->lkey;
	hx_fill(buf, LEN_S, 11);
	hx_fill(buf + OFF_W, LEN_W, 12);
	uint64_t peer = x.ep.peer.addr, rkey = x.ep.peer.rkey;
	/* the send's gather list: three pieces of the pattern */
	struct ibv_sge sg[3] = { { (uintptr_t)buf, 1000, lk },
				 { (uintptr_t)buf + 1000, 1, lk },
				 { (uintptr_t)buf + 1001, LEN_S - 1001, lk } };
	char inl[sizeof(INL)];

	memcpy(inl, INL, sizeof(INL));
	hx_sync(fd); /* B's receives are posted, its counter set */

	t0 = mono_ns();
	ibv_wr_start(q);
	q->wr_flags = IBV_SEND_SIGNALED;
	q->wr_id = 1;
	ibv_wr_send(q);
	ibv_wr_set_sge_list(q, 3, sg);
	q->wr_id = 2;
	ibv_wr_send_imm(q, htonl(0x51));
	ibv_wr_set_inline_data(q, inl, sizeof(INL));
	memset(inl, 'X', sizeof(inl)); /* copied already */
	q->wr_id = 3;
	ibv_wr_rdma_write(q, rkey, peer + OFF_W);
	ibv_wr_set_sge(q, lk, (uintptr_t)buf + OFF_W, LEN_W);
	q->wr_id = 4;
	ibv_wr_rdma_write_imm(q, rkey, peer + OFF_W + LEN_W, htonl(0x52));
	ibv_wr_set_sge(q, lk, (uintptr_t)buf + OFF_W, 100);
	q->wr_id = 5;
	ibv_wr_rdma_read(q, rkey, peer + OFF_R);
	ibv_wr_set_sge(q, lk, (uintptr_t)buf + OFF_R, LEN_R);
	q->wr_id = 6;
	q->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_atomic_cmp_swp(q, rkey, peer + OFF_A, 1000, 2000);
	ibv_wr_set_sge(q, lk, (uintptr_t)buf + OFF_A, 8);
	q->wr_id = 7;
	ibv_wr_atomic_fetch_add(q, rkey, peer + OFF_A, 35);
	ibv_wr_set_sge(q, lk, (uintptr_t)buf + OFF_A + 8, 8);
	HX_CHECK_RC(ibv_wr_complete(q), 0);

	static const struct {
		enum ibv_wc_opcode op;
		int64_t len;
	} want[7] = { { IBV_WC_SEND, -1 },	   { IBV_WC_SEND, -1 },
		      { IBV_WC_RDMA_WRITE, -1 },   { IBV_WC_RDMA_WRITE, -1 },
		      { IBV_WC_RDMA_READ, LEN_R }, { IBV_WC_COMP_SWAP, 8 },
		      { IBV_WC_FETCH_ADD, 8 } };
	uint64_t last_ts = t0;
	for (int i = 0; i < 7; i++) {
		struct xwc w;

		if (!XEXPECT(x.cq, &w, i + 1, want[i].op, want[i].len))
			continue;
		CHECK_EQ(w.qp_num, x.ep.qp->qp_num);
		/* stamped when generated, in order, after the post */
		CHECK(w.ts >= last_ts);
		last_ts = w.ts;
	}
	t2 = mono_ns();
	CHECK(last_ts >= t0 && last_ts <= t2);
	HX_CHECK_PATTERN(buf + OFF_R, LEN_R, 13);
	uint64_t r0, r1;
	memcpy(&r0, buf + OFF_A, 8);
	memcpy(&r1, buf + OFF_A + 8, 8);
	CHECK_EQ(r0, 1000); /* the value compared (and swapped) */
	CHECK_EQ(r1, 2000); /* the value the add found */
	hx_sync(fd);
	xclose(&x);
}

static void rc_all_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;
	uint8_t *buf;
	uint32_t lk;
	uint64_t counter = 1000, t0, t1;
	struct xwc w;

	o.max_inline = 64;
	xep_open(&x, fd, &o, IBV_QPT_RC, RC_OPS);
	xep_connect(&x);
	buf = x.ep.buf;
	lk = x.ep.mr->lkey;
	hx_fill(buf + OFF_R, LEN_R, 13);
	memcpy(buf + OFF_A, &counter, 8);
	/* receives: the SEND, the SEND_WITH_IMM, the WRITE_WITH_IMM */
	HX_CHECK_RC(hx_post_recv(&x.ep, 100, buf, 8192, lk), 0);
	HX_CHECK_RC(hx_post_recv(&x.ep, 101, buf + 8192, 8192, lk), 0);
	HX_CHECK_RC(hx_post_recv(&x.ep, 102, buf + 16384, 8192, lk), 0);
	t0 = mono_ns();
	hx_sync(fd);

	if (XEXPECT(x.cq, &w, 100, IBV_WC_RECV, LEN_S)) {
		CHECK(!(w.wc_flags & IBV_WC_WITH_IMM));
		CHECK_EQ(w.qp_num, x.ep.qp->qp_num);
		CHECK_EQ(w.src_qp, x.ep.peer.qpn);
		CHECK(w.ts >= t0 && w.ts <= mono_ns());
		HX_CHECK_PATTERN(buf, LEN_S, 11);
	}
	if (XEXPECT(x.cq, &w, 101, IBV_WC_RECV, sizeof(INL))) {
		CHECK(w.wc_flags & IBV_WC_WITH_IMM);
		CHECK_EQ(ntohl(w.imm), 0x51);
		CHECK(!memcmp(buf + 8192, INL, sizeof(INL)));
	}
	/* WRITE_WITH_IMM consumes a receive; its byte_len is the write's */
	if (XEXPECT(x.cq, &w, 102, IBV_WC_RECV_RDMA_WITH_IMM, 100)) {
		CHECK(w.wc_flags & IBV_WC_WITH_IMM);
		CHECK_EQ(ntohl(w.imm), 0x52);
	}
	t1 = mono_ns();
	CHECK(w.ts <= t1 && w.wall > 0);
	hx_sync(fd);
	HX_CHECK_PATTERN(buf + OFF_W, LEN_W, 12);
	HX_CHECK_PATTERN(buf + OFF_W + LEN_W, 100, 12);
	/* written by the engine's atomics: read it as an atomic too */
	counter = __atomic_load_n((uint64_t *)(buf + OFF_A), __ATOMIC_ACQUIRE);
	CHECK_EQ(counter, 2035);
	xnone(x.cq, 50);
	xclose(&x);
}

/* ---- inline data lists --------------------------------------------------- */

static void inline_list_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;
	char p1[] = "first-", p2[] = "second-", p3[] = "third";
	struct ibv_data_buf l[3] = { { p1, 6 }, { p2, 7 }, { p3, 5 } };

	o.max_inline = 128;
	xep_open(&x, fd, &o, IBV_QPT_RC, RC_OPS);
	xep_connect(&x);
	hx_sync(fd);
	ibv_wr_start(x.qpx);
	x.qpx->wr_flags = IBV_SEND_SIGNALED;
	x.qpx->wr_id = 1;
	ibv_wr_send(x.qpx);
	ibv_wr_set_inline_data_list(x.qpx, 3, l);
	p2[0] = '#'; /* the caller may reuse its buffers at once */
	x.qpx->wr_id = 2;
	ibv_wr_rdma_write(x.qpx, x.ep.peer.rkey, x.ep.peer.addr + 4096);
	ibv_wr_set_inline_data_list(x.qpx, 3, l);
	HX_CHECK_RC(ibv_wr_complete(x.qpx), 0);
	XEXPECT(x.cq, NULL, 1, IBV_WC_SEND, -1);
	XEXPECT(x.cq, NULL, 2, IBV_WC_RDMA_WRITE, -1);
	hx_sync(fd);
	xclose(&x);
}

static void inline_list_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;

	o.max_inline = 128;
	xep_open(&x, fd, &o, IBV_QPT_RC, RC_OPS);
	xep_connect(&x);
	HX_CHECK_RC(hx_post_recv(&x.ep, 7, x.ep.buf, 1024, x.ep.mr->lkey), 0);
	hx_sync(fd);
	XEXPECT(x.cq, NULL, 7, IBV_WC_RECV, 18);
	CHECK(!memcmp(x.ep.buf, "first-second-third", 18));
	hx_sync(fd);
	CHECK(!memcmp(x.ep.buf + 4096, "first-#econd-third", 18));
	CHECK_EQ(x.ep.buf[4096 + 18], 0);
	xclose(&x);
}

/* ---- a failing batch posts nothing --------------------------------------- */

static void all_or_nothing_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;
	uint8_t *buf;
	uint32_t lk;

	o.max_inline = 32;
	xep_open(&x, fd, &o, IBV_QPT_RC, RC_OPS);
	xep_connect(&x);
	buf = x.ep.buf;
	lk = x.ep.mr->lkey;
	hx_fill(buf, 4096, 21);
	hx_fill(buf + 4096, 4096, 22);
	hx_sync(fd);

	/* good SEND and WRITE, then inline beyond max_inline_data */
	ibv_wr_start(x.qpx);
	x.qpx->wr_flags = IBV_SEND_SIGNALED;
	x.qpx->wr_id = 1;
	ibv_wr_send(x.qpx);
	ibv_wr_set_sge(x.qpx, lk, (uintptr_t)buf, 4096);
	x.qpx->wr_id = 2;
	ibv_wr_rdma_write(x.qpx, x.ep.peer.rkey, x.ep.peer.addr + 65536);
	ibv_wr_set_sge(x.qpx, lk, (uintptr_t)buf, 4096);
	x.qpx->wr_id = 3;
	ibv_wr_send(x.qpx);
	ibv_wr_set_inline_data(x.qpx, buf, x.ep.cap.max_inline_data + 1);
	HX_CHECK_RC(ibv_wr_complete(x.qpx), EINVAL);
	xnone(x.cq, 200);
	hx_sync(fd);
	hx_sync(fd); /* B saw nothing either */

	/* an aborted batch is discarded too */
	ibv_wr_start(x.qpx);
	x.qpx->wr_id = 4;
	ibv_wr_send(x.qpx);
	ibv_wr_set_sge(x.qpx, lk, (uintptr_t)buf, 4096);
	ibv_wr_abort(x.qpx);

	/* the next batch goes through alone */
	ibv_wr_start(x.qpx);
	x.qpx->wr_id = 5;
	ibv_wr_send(x.qpx);
	ibv_wr_set_sge(x.qpx, lk, (uintptr_t)buf + 4096, 4096);
	HX_CHECK_RC(ibv_wr_complete(x.qpx), 0);
	XEXPECT(x.cq, NULL, 5, IBV_WC_SEND, -1);
	xnone(x.cq, 50);
	hx_sync(fd);
	xclose(&x);
}

static void all_or_nothing_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;

	o.max_inline = 32;
	xep_open(&x, fd, &o, IBV_QPT_RC, RC_OPS);
	xep_connect(&x);
	HX_CHECK_RC(hx_post_recv(&x.ep, 50, x.ep.buf, 8192, x.ep.mr->lkey), 0);
	hx_sync(fd);
	hx_sync(fd);
	xnone(x.cq, 100);
	/* the WRITE of the failed batch never landed */
	bool clean = true;
	for (int i = 0; i < 4096; i++)
		clean &= x.ep.buf[65536 + i] == 0;
	CHECK(clean);
	hx_sync(fd);
	XEXPECT(x.cq, NULL, 50, IBV_WC_RECV, 4096);
	HX_CHECK_PATTERN(x.ep.buf, 4096, 22);
	hx_sync(fd);
	xnone(x.cq, 50);
	xclose(&x);
}

/* ---- the send queue's room ------------------------------------------------ */

#define HELD 5

static void sq_room_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;
	uint32_t max, lk, n = 0;
	uint8_t *buf;

	o.max_send_wr = 16;
	o.min_rnr_timer = 1;
	xep_open(&x, fd, &o, IBV_QPT_RC, RC_OPS);
	xep_connect(&x);
	buf = x.ep.buf;
	lk = x.ep.mr->lkey;
	max = x.ep.cap.max_send_wr;
	hx_fill(buf, 64 * 1024, 31);
	/* B has no receive yet: these SENDs wait in RNR retries (7 =
	 * forever) and hold their send-queue slots. */
	ibv_wr_start(x.qpx);
	x.qpx->wr_flags = IBV_SEND_SIGNALED;
	for (; n < HELD; n++) {
		x.qpx->wr_id = n;
		ibv_wr_send(x.qpx);
		ibv_wr_set_sge(x.qpx, lk, (uintptr_t)buf + n * 1024, 1024);
	}
	HX_CHECK_RC(ibv_wr_complete(x.qpx), 0);
	/* one more than the free room: nothing is posted */
	ibv_wr_start(x.qpx);
	for (uint32_t i = 0; i < max - HELD + 1; i++) {
		x.qpx->wr_id = 1000 + i;
		ibv_wr_send(x.qpx);
		ibv_wr_set_sge(x.qpx, lk, (uintptr_t)buf, 1);
	}
	HX_CHECK_RC(ibv_wr_complete(x.qpx), ENOMEM);
	/* exactly the free room: posted */
	ibv_wr_start(x.qpx);
	for (; n < max; n++) {
		x.qpx->wr_id = n;
		ibv_wr_send(x.qpx);
		ibv_wr_set_sge(x.qpx, lk, (uintptr_t)buf + n * 1024, 1024);
	}
	HX_CHECK_RC(ibv_wr_complete(x.qpx), 0);
	hx_send_u64(fd, max);
	/* B posts its receives now; all max complete, in order */
	for (uint32_t i = 0; i < max; i++)
		XEXPECT(x.cq, NULL, i, IBV_WC_SEND, -1);
	xnone(x.cq, 100);
	hx_sync(fd);
	xclose(&x);
}

static void sq_room_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;
	uint32_t max;

	o.max_send_wr = 16;
	o.min_rnr_timer = 1;
	xep_open(&x, fd, &o, IBV_QPT_RC, RC_OPS);
	xep_connect(&x);
	max = (uint32_t)hx_recv_u64(fd);
	for (uint32_t i = 0; i < max + 2; i++)
		HX_CHECK_RC(hx_post_recv(&x.ep, 500 + i,
					 x.ep.buf + (size_t)i * 2048, 2048,
					 x.ep.mr->lkey),
			    0);
	for (uint32_t i = 0; i < max; i++) {
		struct xwc w;

		if (!XEXPECT(x.cq, &w, 500 + i, IBV_WC_RECV, 1024))
			continue;
		/* message i carries source bytes [i*1024, (i+1)*1024) */
		bool same = true;
		for (int k = 0; k < 1024; k++)
			same &= x.ep.buf[(size_t)i * 2048 + k] ==
				hx_pattern_byte(31, (size_t)i * 1024 + k);
		CHECK(same);
	}
	/* the refused batch's 1-byte sends never arrive */
	xnone(x.cq, 200);
	hx_sync(fd);
	xclose(&x);
}

/* ---- UC --------------------------------------------------------------------- */

static void uc_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;
	uint32_t lk;

	o.max_inline = 64;
	xep_open(&x, fd, &o, IBV_QPT_UC, UC_OPS);
	xep_connect(&x);
	lk = x.ep.mr->lkey;
	hx_fill(x.ep.buf, 3 * 4096, 41);
	hx_sync(fd);
	ibv_wr_start(x.qpx);
	x.qpx->wr_flags = IBV_SEND_SIGNALED;
	x.qpx->wr_id = 1;
	ibv_wr_rdma_write(x.qpx, x.ep.peer.rkey, x.ep.peer.addr + 65536);
	ibv_wr_set_sge(x.qpx, lk, (uintptr_t)x.ep.buf, 3 * 4096);
	x.qpx->wr_id = 2;
	ibv_wr_rdma_write_imm(x.qpx, x.ep.peer.rkey, x.ep.peer.addr + 131072,
			      htonl(0x61));
	ibv_wr_set_inline_data(x.qpx, "uc-inline", 9);
	x.qpx->wr_id = 3;
	ibv_wr_send_imm(x.qpx, htonl(0x62));
	ibv_wr_set_sge(x.qpx, lk, (uintptr_t)x.ep.buf + 100, 2000);
	HX_CHECK_RC(ibv_wr_complete(x.qpx), 0);
	/* UC completes once sent */
	XEXPECT(x.cq, NULL, 1, IBV_WC_RDMA_WRITE, -1);
	XEXPECT(x.cq, NULL, 2, IBV_WC_RDMA_WRITE, -1);
	XEXPECT(x.cq, NULL, 3, IBV_WC_SEND, -1);
	hx_sync(fd);
	xclose(&x);
}

static void uc_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct xep x;
	struct xwc w;

	o.max_inline = 64;
	xep_open(&x, fd, &o, IBV_QPT_UC, UC_OPS);
	xep_connect(&x);
	HX_CHECK_RC(hx_post_recv(&x.ep, 70, x.ep.buf, 4096, x.ep.mr->lkey), 0);
	HX_CHECK_RC(hx_post_recv(&x.ep, 71, x.ep.buf + 4096, 4096,
				 x.ep.mr->lkey),
		    0);
	hx_sync(fd);
	if (XEXPECT(x.cq, &w, 70, IBV_WC_RECV_RDMA_WITH_IMM, 9))
		CHECK_EQ(ntohl(w.imm), 0x61);
	if (XEXPECT(x.cq, &w, 71, IBV_WC_RECV, 2000)) {
		CHECK_EQ(ntohl(w.imm), 0x62);
		CHECK(w.wc_flags & IBV_WC_WITH_IMM);
		CHECK_EQ(w.src_qp, x.ep.peer.qpn);
	}
	bool same = true;
	for (int k = 0; k < 2000; k++)
		same &= x.ep.buf[4096 + k] == hx_pattern_byte(41, 100 + k);
	CHECK(same);
	HX_CHECK_PATTERN(x.ep.buf + 65536, 3 * 4096, 41);
	CHECK(!memcmp(x.ep.buf + 131072, "uc-inline", 9));
	hx_sync(fd);
	xclose(&x);
}

static const struct hx_case cases[] = {
	HX_CASE(rc_all, 30),
	HX_CASE(inline_list, 30),
	HX_CASE(all_or_nothing, 30),
	HX_CASE(sq_room, 30),
	HX_CASE(uc, 30),
	{ NULL, NULL, NULL, 0 },
};

HX_MAIN(cases)
