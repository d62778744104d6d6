/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * librdmacm with QPs between two processes: the QP transitions the CM
 * makes (states, QPNs, PSNs, path MTU, RDMA limits and access flags as
 * ibv_query_qp reports them), data through CM-established connections
 * compared byte for byte (SEND/RECV, RDMA WRITE and READ, buffer addresses
 * carried in the CM's private data), the rdma_verbs.h helpers over
 * synchronous endpoints, an application-managed QP (rdma_init_qp_attr,
 * rdma_establish), and UD over rdma_cm.
 */
#include "cm_test.h"

#include <netdb.h>

#define BUF 65536

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed ^ (i * 31 + (i >> 8)));
}

static int same(const uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed ^ (i * 31 + (i >> 8)))) {
			ct_log("byte %zu: %u, expected %u", i, p[i],
			       (uint8_t)(seed ^ (i * 31 + (i >> 8))));
			return 0;
		}
	return 1;
}

/* One completion within ms, or a recorded failure. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t end = ct_now_ms() + ms;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n == 1)
			return 1;
		if (n < 0)
			break;
		usleep(100);
	} while (ct_now_ms() < end);
	check_failed++;
	ct_log("no completion within %d ms", ms);
	return 0;
}

#define CHECK_WC(cq, want_op, want_len)                                        \
	do {                                                                   \
		struct ibv_wc _wc;                                             \
		if (poll_one(cq, &_wc, 5000)) {                                \
			if (_wc.status == IBV_WC_SUCCESS &&                    \
			    _wc.opcode == (want_op) &&                         \
			    ((want_len) < 0 ||                                 \
			     _wc.byte_len == (uint32_t)(want_len))) {          \
				check_passed++;                                \
			} else {                                               \
				check_failed++;                                \
				ct_log("%s:%d: wc status %s opcode %d len %u", \
				       __FILE__, __LINE__,                     \
				       ibv_wc_status_str(_wc.status),          \
				       _wc.opcode, _wc.byte_len);              \
			}                                                      \
		}                                                              \
	} while (0)

struct ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *ls, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

/* What the private data carries: where our buffer is. */
struct where {
	uint64_t addr;
	uint32_t rkey;
	uint32_t qpn;
} __attribute__((packed));

static void ep_resources(struct ep *e, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa;

	e->pd = ibv_alloc_pd(id->verbs);
	REQUIRE(e->pd);
	e->cq = ibv_create_cq(id->verbs, 64, NULL, NULL, 0);
	REQUIRE(e->cq);
	e->buf = calloc(1, BUF);
	REQUIRE(e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	REQUIRE(e->mr);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	REQUIRE(rdma_create_qp(id, e->pd, &qa) == 0);
	CHECK(id->qp != NULL);
	CHECK(id->qp->qp_type == IBV_QPT_RC);
}

static void ep_free(struct ep *e)
{
	if (e->id) {
		rdma_destroy_qp(e->id);
		rdma_destroy_id(e->id);
	}
	if (e->ls)
		rdma_destroy_id(e->ls);
	ibv_dereg_mr(e->mr);
	ibv_destroy_cq(e->cq);
	ibv_dealloc_pd(e->pd);
	free(e->buf);
	rdma_destroy_event_channel(e->ch);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp, struct ibv_qp_attr *a)
{
	struct ibv_qp_init_attr ia;

	memset(a, 0, sizeof(*a));
	if (ibv_query_qp(qp, a,
			 IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				 IBV_QP_SQ_PSN | IBV_QP_PATH_MTU |
				 IBV_QP_MAX_QP_RD_ATOMIC |
				 IBV_QP_MAX_DEST_RD_ATOMIC |
				 IBV_QP_ACCESS_FLAGS | IBV_QP_AV |
				 IBV_QP_RNR_RETRY | IBV_QP_RETRY_CNT |
				 IBV_QP_TIMEOUT,
			 &ia))
		return (enum ibv_qp_state) - 1;
	return a->qp_state;
}

/* Server: accept with our buffer in the REP's private data. */
static void server_up(struct ep *e, int fd, struct where *peer)
{
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct where me;

	e->ch = rdma_create_event_channel();
	REQUIRE(e->ch);
	ct_send_u32(fd, ct_listen(e->ch, &e->ls, RDMA_PS_TCP));
	ev = CT_EXPECT(e->ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	e->id = ev->id;
	memcpy(peer, ev->param.conn.private_data, sizeof(*peer));
	rdma_ack_cm_event(ev);
	ep_resources(e, e->id);
	/* Created after the request: INIT already grants remote access. */
	{
		struct ibv_qp_attr a;

		CHECK_EQ(qp_state(e->id->qp, &a), IBV_QPS_INIT);
		CHECK(a.qp_access_flags & IBV_ACCESS_REMOTE_READ);
	}
	me.addr = htobe64((uintptr_t)e->buf);
	me.rkey = htobe32(e->mr->rkey);
	me.qpn = htobe32(e->id->qp->qp_num);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &me;
	cp.private_data_len = sizeof(me);
	cp.responder_resources = 4;
	cp.initiator_depth = 2;
	cp.rnr_retry_count = 7;
	REQUIRE(rdma_accept(e->id, &cp) == 0);
	/* rdma_accept moved the QP to RTS before sending the REP. */
	{
		struct ibv_qp_attr a;

		CHECK_EQ(qp_state(e->id->qp, &a), IBV_QPS_RTS);
	}
	CT_EXPECT_ACK(e->ch, RDMA_CM_EVENT_ESTABLISHED, 0);
}

/* Client: connect with our buffer in the REQ's private data. */
static void client_up(struct ep *e, int fd, struct where *peer)
{
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct where me;

	e->ch = rdma_create_event_channel();
	REQUIRE(e->ch);
	REQUIRE(rdma_create_id(e->ch, &e->id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(e->ch, e->id, ct_recv_u32(fd)) == 0);
	ep_resources(e, e->id);
	{
		struct ibv_qp_attr a;

		/* Created before any connection: INIT without remote
		 * access (rdma-core's default), widened at connect time. */
		CHECK_EQ(qp_state(e->id->qp, &a), IBV_QPS_INIT);
		CHECK_EQ(a.qp_access_flags, 0);
	}
	me.addr = htobe64((uintptr_t)e->buf);
	me.rkey = htobe32(e->mr->rkey);
	me.qpn = htobe32(e->id->qp->qp_num);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &me;
	cp.private_data_len = sizeof(me);
	cp.responder_resources = 2;
	cp.initiator_depth = 4;
	cp.retry_count = 6;
	cp.rnr_retry_count = 7;
	REQUIRE(rdma_connect(e->id, &cp) == 0);
	/* With a QP the response arrives as ESTABLISHED. */
	ev = CT_EXPECT(e->ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	REQUIRE(ev);
	CHECK_EQ(ev->param.conn.private_data_len, 196);
	memcpy(peer, ev->param.conn.private_data, sizeof(*peer));
	rdma_ack_cm_event(ev);
}

/* ---- QP attributes after connecting --------------------------------------------- */

static void qp_attrs_a(int fd)
{
	struct ibv_qp_attr a;
	struct ibv_port_attr pa;
	struct where peer;
	struct ep e = { 0 };
	uint32_t psn;

	server_up(&e, fd, &peer);
	REQUIRE(qp_state(e.id->qp, &a) == IBV_QPS_RTS);
	CHECK_EQ(a.dest_qp_num, be32toh(peer.qpn));
	REQUIRE(ibv_query_port(e.id->verbs, 1, &pa) == 0);
	CHECK_EQ(a.path_mtu, pa.active_mtu);
	CHECK_EQ(a.max_dest_rd_atomic, 4); /* what we accepted with */
	CHECK_EQ(a.max_rd_atomic, 2);
	CHECK_EQ(a.retry_cnt, 6); /* the REQ's */
	CHECK_EQ(a.rnr_retry, 7); /* the REQ's, for our QP */
	CHECK(a.ah_attr.is_global);
	CHECK_EQ(a.ah_attr.grh.dgid.raw[12], 127);
	CHECK(a.qp_access_flags & IBV_ACCESS_REMOTE_WRITE);
	CHECK(a.qp_access_flags & IBV_ACCESS_REMOTE_READ);
	/* Each side's send PSN is the other's receive PSN. */
	ct_send_u32(fd, a.sq_psn);
	ct_send_u32(fd, a.rq_psn);
	psn = ct_recv_u32(fd); /* the peer's receive PSN */
	CHECK_EQ(a.sq_psn, psn);
	psn = ct_recv_u32(fd); /* the peer's send PSN */
	CHECK_EQ(a.rq_psn, psn);

	/* The peer disconnects: its QP is in ERR, ours stays until we
	 * answer with rdma_disconnect. */
	CT_EXPECT_ACK(e.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CHECK(rdma_disconnect(e.id) == 0);
	CHECK_EQ(qp_state(e.id->qp, &a), IBV_QPS_ERR);
	ct_sync(fd);
	ep_free(&e);
}

static void qp_attrs_b(int fd)
{
	struct ibv_qp_attr a;
	struct where peer;
	struct ep e = { 0 };

	client_up(&e, fd, &peer);
	REQUIRE(qp_state(e.id->qp, &a) == IBV_QPS_RTS);
	CHECK_EQ(a.dest_qp_num, be32toh(peer.qpn));
	CHECK_EQ(a.max_dest_rd_atomic, 2); /* the REP's initiator depth */
	CHECK_EQ(a.max_rd_atomic, 4); /* the REP's responder resources */
	CHECK_EQ(a.retry_cnt, 6);
	CHECK_EQ(a.rnr_retry, 7); /* the REP's */
	CHECK(a.qp_access_flags & IBV_ACCESS_REMOTE_READ);
	ct_send_u32(fd, a.rq_psn);
	ct_send_u32(fd, a.sq_psn);
	CHECK_EQ(a.rq_psn, ct_recv_u32(fd));
	CHECK_EQ(a.sq_psn, ct_recv_u32(fd));
	CHECK(rdma_disconnect(e.id) == 0);
	CHECK_EQ(qp_state(e.id->qp, &a), IBV_QPS_ERR);
	CT_EXPECT_ACK(e.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	ct_sync(fd);
	ep_free(&e);
}

/* ---- SEND/RECV, RDMA WRITE and READ through a CM connection ------------------------ */

static int post(struct ep *e, enum ibv_wr_opcode op, void *laddr, uint32_t len,
		uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, e->mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(e->id->qp, &wr, &bad);
}

static int post_recv(struct ep *e, void *addr, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, e->mr->lkey };
	struct ibv_recv_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(e->id->qp, &wr, &bad);
}

static void data_a(int fd)
{
	struct where peer;
	struct ep e = { 0 };

	server_up(&e, fd, &peer);
	/* SEND/RECV both ways. */
	REQUIRE(post_recv(&e, e.buf, 4096) == 0);
	ct_sync(fd);
	CHECK_WC(e.cq, IBV_WC_RECV, 4000);
	CHECK(same(e.buf, 4000, 1));
	fill(e.buf + 8192, 3000, 2);
	REQUIRE(post(&e, IBV_WR_SEND, e.buf + 8192, 3000, 0, 0) == 0);
	CHECK_WC(e.cq, IBV_WC_SEND, -1);
	ct_sync(fd);

	/* The client writes 40000 bytes at offset 24576, then reads the
	 * 20000 we put at 0. */
	fill(e.buf, 20000, 3);
	ct_sync(fd);
	ct_sync(fd); /* its write and read are done */
	CHECK(same(e.buf + 24576, 40000, 4));
	ct_sync(fd);
	ep_free(&e);
}

static void data_b(int fd)
{
	struct where peer;
	struct ep e = { 0 };
	uint64_t raddr;
	uint32_t rkey;

	client_up(&e, fd, &peer);
	raddr = be64toh(peer.addr);
	rkey = be32toh(peer.rkey);
	REQUIRE(post_recv(&e, e.buf + 4096, 4096) == 0);
	fill(e.buf, 4000, 1);
	ct_sync(fd); /* its receive is posted */
	REQUIRE(post(&e, IBV_WR_SEND, e.buf, 4000, 0, 0) == 0);
	CHECK_WC(e.cq, IBV_WC_SEND, -1);
	CHECK_WC(e.cq, IBV_WC_RECV, 3000);
	CHECK(same(e.buf + 4096, 3000, 2));
	ct_sync(fd);

	ct_sync(fd); /* its buffer holds pattern 3 */
	fill(e.buf + 16384, 40000, 4);
	REQUIRE(post(&e, IBV_WR_RDMA_WRITE, e.buf + 16384, 40000, raddr + 24576,
		     rkey) == 0);
	CHECK_WC(e.cq, IBV_WC_RDMA_WRITE, -1);
	memset(e.buf, 0, 20000);
	REQUIRE(post(&e, IBV_WR_RDMA_READ, e.buf, 20000, raddr, rkey) == 0);
	CHECK_WC(e.cq, IBV_WC_RDMA_READ, 20000);
	CHECK(same(e.buf, 20000, 3));
	ct_sync(fd);
	CHECK(rdma_disconnect(e.id) == 0);
	CT_EXPECT_ACK(e.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	ct_sync(fd);
	ep_free(&e);
}

/* ---- synchronous endpoints and the rdma_verbs.h helpers ----------------------------- */

static void verbs_helpers_a(int fd)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr qa;
	struct rdma_cm_id *ls, *id;
	struct ibv_mr *mr, *rmr;
	struct ibv_wc wc;
	uint8_t *buf = calloc(1, BUF);
	struct where me;
	struct rdma_conn_param cp;

	REQUIRE(buf);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	REQUIRE(rdma_getaddrinfo("127.0.0.1", "0", &hints, &res) == 0);
	memset(&qa, 0, sizeof(qa));
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	REQUIRE(rdma_create_ep(&ls, res, NULL, &qa) == 0);
	rdma_freeaddrinfo(res);
	REQUIRE(rdma_listen(ls, 2) == 0);
	ct_send_u32(fd, ntohs(rdma_get_src_port(ls)));

	/* rdma_get_request creates the QP (and its CQs) for us. */
	REQUIRE(rdma_get_request(ls, &id) == 0);
	REQUIRE(id->qp);
	CHECK(id->send_cq && id->recv_cq);
	CHECK(id->send_cq_channel && id->recv_cq_channel);
	mr = rdma_reg_msgs(id, buf, 4096);
	rmr = rdma_reg_write(id, buf + 4096, 8192);
	REQUIRE(mr && rmr);
	REQUIRE(rdma_post_recv(id, (void *)1, buf, 4096, mr) == 0);
	me.addr = htobe64((uintptr_t)(buf + 4096));
	me.rkey = htobe32(rmr->rkey);
	me.qpn = 0;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &me;
	cp.private_data_len = sizeof(me);
	cp.responder_resources = 1;
	CHECK(rdma_accept(id, &cp) == 0);

	/* The client SENDs 1000 bytes, then WRITEs 8000 with immediate
	 * (which takes the next receive). */
	CHECK_EQ(rdma_get_recv_comp(id, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK(same(buf, 1000, 7));
	REQUIRE(rdma_post_recv(id, (void *)2, buf, 4096, mr) == 0);
	ct_sync(fd);
	CHECK_EQ(rdma_get_recv_comp(id, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(be32toh(wc.imm_data), 0xfeed);
	CHECK(same(buf + 4096, 8000, 8));
	/* And a SEND back, with rdma_post_send / rdma_get_send_comp. */
	fill(buf + 2048, 500, 9);
	CHECK(rdma_post_send(id, (void *)3, buf + 2048, 500, mr, 0) == 0);
	CHECK_EQ(rdma_get_send_comp(id, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 3);
	ct_sync(fd);
	CHECK(rdma_disconnect(id) == 0); /* consumes the peer's DISCONNECTED */
	rdma_dereg_mr(mr);
	rdma_dereg_mr(rmr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(ls);
	free(buf);
}

static void verbs_helpers_b(int fd)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct where peer;
	uint8_t *buf = calloc(1, BUF);
	char port[16];

	REQUIRE(buf);
	snprintf(port, sizeof(port), "%u", ct_recv_u32(fd));
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	REQUIRE(rdma_getaddrinfo("127.0.0.1", port, &hints, &res) == 0);
	memset(&qa, 0, sizeof(qa));
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	REQUIRE(rdma_create_ep(&id, res, NULL, &qa) == 0);
	rdma_freeaddrinfo(res);
	REQUIRE(id->qp);
	CHECK_EQ(qa.qp_type, IBV_QPT_RC);
	mr = rdma_reg_msgs(id, buf, BUF);
	REQUIRE(mr);
	REQUIRE(rdma_post_recv(id, (void *)5, buf + 32768, 4096, mr) == 0);
	memset(&cp, 0, sizeof(cp));
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	/* Sync: returns ESTABLISHED (the QP is in RTS). */
	REQUIRE(rdma_connect(id, &cp) == 0);
	REQUIRE(id->event);
	CHECK_EQ(id->event->event, RDMA_CM_EVENT_ESTABLISHED);
	memcpy(&peer, id->event->param.conn.private_data, sizeof(peer));

	fill(buf, 1000, 7);
	CHECK(rdma_post_send(id, (void *)6, buf, 1000, mr, 0) == 0);
	CHECK_EQ(rdma_get_send_comp(id, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	ct_sync(fd); /* its second receive is posted */
	fill(buf + 4096, 8000, 8);
	{
		struct ibv_sge sge = { (uintptr_t)(buf + 4096), 8000,
				       mr->lkey };
		struct ibv_send_wr wr, *bad;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 7;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(0xfeed);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = be64toh(peer.addr);
		wr.wr.rdma.rkey = be32toh(peer.rkey);
		CHECK(ibv_post_send(id->qp, &wr, &bad) == 0);
	}
	CHECK_EQ(rdma_get_send_comp(id, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_EQ(rdma_get_recv_comp(id, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 5);
	CHECK(same(buf + 32768, 500, 9));
	ct_sync(fd);
	CHECK(rdma_disconnect(id) == 0);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_DISCONNECTED);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	free(buf);
}

/* ---- an application-managed QP (rping -q, perftest -R) ---------------------------- */

static struct ibv_qp *own_qp(struct rdma_cm_id *id, struct ep *e)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	int mask;

	e->pd = ibv_alloc_pd(id->verbs);
	e->cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	e->buf = calloc(1, BUF);
	REQUIRE(e->pd && e->cq && e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(e->mr);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = e->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(e->pd, &qa);
	REQUIRE(qp);
	a.qp_state = IBV_QPS_INIT;
	REQUIRE(rdma_init_qp_attr(id, &a, &mask) == 0);
	REQUIRE(ibv_modify_qp(qp, &a, mask) == 0);
	return qp;
}

static int to_rts(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int mask;

	a.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(id, &a, &mask) || ibv_modify_qp(qp, &a, mask))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(id, &a, &mask) || ibv_modify_qp(qp, &a, mask))
		return -1;
	return 0;
}

static void own_qp_a(int fd)
{
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct ibv_sge sge;
	struct ibv_recv_wr wr, *bad;
	struct ibv_qp *qp;
	struct ep e = { 0 };

	e.ch = rdma_create_event_channel();
	REQUIRE(e.ch);
	ct_send_u32(fd, ct_listen(e.ch, &e.ls, RDMA_PS_TCP));
	ev = CT_EXPECT(e.ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	e.id = ev->id;
	rdma_ack_cm_event(ev);
	qp = own_qp(e.id, &e);
	sge.addr = (uintptr_t)e.buf;
	sge.length = 4096;
	sge.lkey = e.mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	REQUIRE(ibv_post_recv(qp, &wr, &bad) == 0);
	/* The passive side moves its QP itself before accepting. */
	REQUIRE(to_rts(e.id, qp) == 0);
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = qp->qp_num;
	cp.responder_resources = cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	REQUIRE(rdma_accept(e.id, &cp) == 0);
	CT_EXPECT_ACK(e.ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	CHECK_WC(e.cq, IBV_WC_RECV, 2048);
	CHECK(same(e.buf, 2048, 11));
	CT_EXPECT_ACK(e.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	ibv_destroy_qp(qp);
	rdma_destroy_id(e.id);
	e.id = NULL;
	ep_free(&e);
}

static void own_qp_b(int fd)
{
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;
	struct ep e = { 0 };

	e.ch = rdma_create_event_channel();
	REQUIRE(e.ch);
	REQUIRE(rdma_create_id(e.ch, &e.id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(e.ch, e.id, ct_recv_u32(fd)) == 0);
	qp = own_qp(e.id, &e);
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = qp->qp_num;
	cp.responder_resources = cp.initiator_depth = 1;
	cp.retry_count = cp.rnr_retry_count = 7;
	REQUIRE(rdma_connect(e.id, &cp) == 0);
	ev = CT_EXPECT(e.ch, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	REQUIRE(ev);
	rdma_ack_cm_event(ev);
	REQUIRE(to_rts(e.id, qp) == 0);
	CHECK(rdma_establish(e.id) == 0);
	REQUIRE(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0);
	CHECK_EQ(a.qp_state, IBV_QPS_RTS);
	fill(e.buf, 2048, 11);
	{
		struct ibv_sge sge = { (uintptr_t)e.buf, 2048, e.mr->lkey };
		struct ibv_send_wr wr, *bad;

		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		REQUIRE(ibv_post_send(qp, &wr, &bad) == 0);
	}
	CHECK_WC(e.cq, IBV_WC_SEND, -1);
	/* Without id->qp, rdma_disconnect leaves the QP to us. */
	a.qp_state = IBV_QPS_ERR;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
	CHECK(rdma_disconnect(e.id) == 0);
	CT_EXPECT_ACK(e.ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	ibv_destroy_qp(qp);
	rdma_destroy_id(e.id);
	e.id = NULL;
	ep_free(&e);
}

/* ---- UD over rdma_cm ----------------------------------------------------------------- */

struct ud {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static void ud_resources(struct rdma_cm_id *id, struct ud *u)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	u->pd = ibv_alloc_pd(id->verbs);
	u->cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	u->buf = calloc(1, 8192);
	REQUIRE(u->pd && u->cq && u->buf);
	u->mr = ibv_reg_mr(u->pd, u->buf, 8192, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(u->mr);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = u->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	REQUIRE(rdma_create_qp(id, u->pd, &qa) == 0);
	/* A UD QP goes straight to RTS with the port space's Q_Key. */
	REQUIRE(ibv_query_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_QKEY, &ia) == 0);
	CHECK_EQ(a.qp_state, IBV_QPS_RTS);
	CHECK_EQ(a.qkey, RDMA_UDP_QKEY);
}

static void ud_free(struct rdma_cm_id *id, struct ud *u)
{
	rdma_destroy_qp(id);
	ibv_dereg_mr(u->mr);
	ibv_destroy_cq(u->cq);
	ibv_dealloc_pd(u->pd);
	free(u->buf);
}

/* Whether the device delivers UD datagrams at all: a QP sends one to
 * itself over 127.0.0.1.  Capability probe for the skip only. */
static int ud_supported(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_gid_entry gids[64];
	struct ibv_qp_init_attr qa;
	struct ibv_context *ctx;
	struct ibv_ah_attr aha;
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	char buf[256];
	ssize_t n, i;
	int ok = 0, gid = -1;
	uint64_t end;

	if (!list || !list[0])
		return 0;
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx)
		return 0;
	n = ibv_query_gid_table(ctx, gids, 64, 0);
	for (i = 0; i < n; i++)
		if (gids[i].gid.raw[10] == 0xff && gids[i].gid.raw[12] == 127)
			gid = (int)gids[i].gid_index;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) :
		  NULL;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = pd && cq && mr && gid >= 0 ? ibv_create_qp(pd, &qa) : NULL;
	if (!qp)
		goto out;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x11;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
		goto out_qp;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		goto out_qp;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto out_qp;
	memset(&aha, 0, sizeof(aha));
	aha.is_global = 1;
	aha.grh.dgid = gids[gid].gid;
	aha.grh.sgid_index = (uint8_t)gid;
	aha.grh.hop_limit = 1;
	aha.port_num = 1;
	ah = ibv_create_ah(pd, &aha);
	if (ah) {
		struct ibv_sge rs = { (uintptr_t)buf, 128, mr->lkey };
		struct ibv_sge ss = { (uintptr_t)(buf + 128), 8, mr->lkey };
		struct ibv_recv_wr rw = { .sg_list = &rs, .num_sge = 1 }, *rb;
		struct ibv_send_wr sw, *sb;

		memset(&sw, 0, sizeof(sw));
		sw.opcode = IBV_WR_SEND;
		sw.sg_list = &ss;
		sw.num_sge = 1;
		sw.wr.ud.ah = ah;
		sw.wr.ud.remote_qpn = qp->qp_num;
		sw.wr.ud.remote_qkey = 0x11;
		if (!ibv_post_recv(qp, &rw, &rb) &&
		    !ibv_post_send(qp, &sw, &sb)) {
			end = ct_now_ms() + 2000;
			while (!ok && ct_now_ms() < end) {
				if (ibv_poll_cq(cq, 1, &wc) == 1 &&
				    wc.opcode == IBV_WC_RECV &&
				    wc.status == IBV_WC_SUCCESS)
					ok = 1;
				else
					usleep(1000);
			}
		}
		ibv_destroy_ah(ah);
	}
out_qp:
	ibv_destroy_qp(qp);
out:
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return ok;
}

static void ud_a(int fd)
{
	if (!ud_supported())
		ct_skip("the device does not deliver UD datagrams yet");
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls, *id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct ibv_sge sge;
	struct ibv_recv_wr wr, *bad;
	struct ibv_wc wc;
	struct ud u;

	REQUIRE(ch);
	ct_send_u32(fd, ct_listen(ch, &ls, RDMA_PS_UDP));
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	id = ev->id;
	rdma_ack_cm_event(ev);
	ud_resources(id, &u);
	sge.addr = (uintptr_t)u.buf;
	sge.length = 40 + 1024; /* the GRH comes first */
	sge.lkey = u.mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	REQUIRE(ibv_post_recv(id->qp, &wr, &bad) == 0);
	memset(&cp, 0, sizeof(cp));
	REQUIRE(rdma_accept(id, &cp) == 0);
	ct_send_u32(fd, id->qp->qp_num);
	if (poll_one(u.cq, &wc, 5000)) {
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.opcode, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, 40 + 1000);
		CHECK(wc.wc_flags & IBV_WC_GRH);
		CHECK(same(u.buf + 40, 1000, 21));
	}
	ct_sync(fd);
	ud_free(id, &u);
	rdma_destroy_id(id);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
}

static void ud_b(int fd)
{
	if (!ud_supported())
		ct_skip("the device does not deliver UD datagrams yet");
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_ah *ah = NULL;
	uint32_t qpn = 0, qkey = 0, peer_qpn;
	struct ud u;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0);
	REQUIRE(ct_resolve(ch, id, ct_recv_u32(fd)) == 0);
	ud_resources(id, &u);
	memset(&cp, 0, sizeof(cp));
	REQUIRE(rdma_connect(id, &cp) == 0);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	REQUIRE(ev);
	qpn = ev->param.ud.qp_num;
	qkey = ev->param.ud.qkey;
	ah = ibv_create_ah(u.pd, &ev->param.ud.ah_attr);
	rdma_ack_cm_event(ev);
	REQUIRE(ah);
	peer_qpn = ct_recv_u32(fd);
	CHECK_EQ(qpn, peer_qpn); /* the SIDR reply names the peer's QP */
	CHECK_EQ(qkey, RDMA_UDP_QKEY);
	fill(u.buf, 1000, 21);
	{
		struct ibv_sge sge = { (uintptr_t)u.buf, 1000, u.mr->lkey };
		struct ibv_send_wr wr, *bad;

		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qpn;
		wr.wr.ud.remote_qkey = qkey;
		REQUIRE(ibv_post_send(id->qp, &wr, &bad) == 0);
	}
	CHECK_WC(u.cq, IBV_WC_SEND, -1);
	ct_sync(fd);
	ibv_destroy_ah(ah);
	ud_free(id, &u);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- multicast groups and the id's QP ------------------------------------------------ */

static void mcast_qp_a(int unused)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	struct sockaddr_in g = ct_addr4("239.2.2.2", 0);
	struct sockaddr_in uni = ct_addr4("10.9.9.9", 0);
	struct rdma_cm_join_mc_attr_ex ex;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	union ibv_gid mgid;
	struct ud u;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0);
	REQUIRE(rdma_bind_addr(id, (struct sockaddr *)&a) == 0);
	ct_attach(ch, id, &g);
	ud_resources(id, &u);

	/* Reading MULTICAST_JOIN attached the QP: the application can
	 * detach it once. */
	REQUIRE(rdma_join_multicast(id, (struct sockaddr *)&g, NULL) == 0);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	REQUIRE(ev);
	mgid = ev->param.ud.ah_attr.grh.dgid;
	rdma_ack_cm_event(ev);
	CHECK_EQ(ibv_detach_mcast(id->qp, &mgid, 0), 0);
	CHECK_EQ(ibv_detach_mcast(id->qp, &mgid, 0), EINVAL);
	CHECK(rdma_leave_multicast(id, (struct sockaddr *)&g) == 0);

	/* Leaving detaches it. */
	REQUIRE(rdma_join_multicast(id, (struct sockaddr *)&g, NULL) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	CHECK(rdma_leave_multicast(id, (struct sockaddr *)&g) == 0);
	CHECK_EQ(ibv_detach_mcast(id->qp, &mgid, 0), EINVAL);

	/* A send-only member is not attached. */
	memset(&ex, 0, sizeof(ex));
	ex.comp_mask =
		RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ex.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	ex.addr = (struct sockaddr *)&g;
	REQUIRE(rdma_join_multicast_ex(id, &ex, NULL) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	CHECK_EQ(ibv_detach_mcast(id->qp, &mgid, 0), EINVAL);
	CHECK(rdma_leave_multicast(id, (struct sockaddr *)&g) == 0);

	/* A unicast address is no group the QP can join: the attach the
	 * event triggers fails, and the event says so. */
	REQUIRE(rdma_join_multicast(id, (struct sockaddr *)&uni, NULL) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_MULTICAST_ERROR, -EINVAL);
	CHECK(rdma_leave_multicast(id, (struct sockaddr *)&uni) == 0);

	ud_free(id, &u);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* clang-format off */
static const struct ct_case cases[] = {
	CT_CASE(qp_attrs, 30),
	CT_CASE(data, 30),
	CT_CASE(verbs_helpers, 30),
	CT_CASE(own_qp, 30),
	CT_CASE(ud, 30),
	CT_CASE1(mcast_qp, 20),
	{ NULL }
};
/* clang-format on */

int main(int argc, char **argv)
{
	/* For the compat tests of udaddy and mckey: 0 if UD works. */
	if (argc == 2 && !strcmp(argv[1], "--ud-supported"))
		return ud_supported() ? 0 : 1;
	return ct_main(argc, argv, cases);
}
