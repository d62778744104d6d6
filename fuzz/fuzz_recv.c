/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libFuzzer harness: the receive path (engine/transport/recv.c, sv_rx_pkt) as the
 * network or a peer's ring feeds it, on a process-local device whose QPs
 * have work outstanding (docs/security.md, "Fuzzing").
 *
 * The device is opened through the verbs API as an application would:
 *   0  RC requester: an RDMA WRITE, a READ, a compare-and-swap, a
 *      fetch-and-add and a SEND outstanding (sq_psn 0x100), receives posted
 *   1  RC responder with receives posted (rq_psn 0x200), every remote right
 *   2  UC with receives posted
 *   3  UD (Q_Key 0x11111111) with receives posted
 *   4  XRC target (XRC_RECV) over an XRC SRQ with receives posted
 *   5  XRC initiator (XRC_SEND): a WRITE and a READ outstanding
 * each connected (but UD) to a peer that never answers: a port of ours
 * nobody reads, with a retransmission timeout of hours.  Whatever the
 * input makes of them (completions, errors), a QP that left RTS or
 * completed anything is set up again before the next input.
 *
 * Input: up to 8 records, each  sel(1) len(2, little-endian) bytes(len).
 * sel & 7 picks the QP (mod 6) whose QPN the harness writes into the BTH
 * unless sel & 0x10 (then the bytes' own QPN stands); sel & 8 delivers
 * the packet as the shm link does (no ICRC), else as a datagram whose
 * ICRC the harness computes unless sel & 0x20 (a wrong ICRC then drops
 * it, as the wire would).  The flow is the connected peer's (sel & 0x40:
 * another port, a forged source).  sel & 0x80: the R_Key, an address in
 * the MR and the XRC SRQ number are written in too (patch_keys).  What
 * the harness patches is what differs from run to run (ports, random
 * keys, heap addresses), so the committed corpus stays valid.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "core/objects.h"
#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "engine/transport/recv.h"
#include "proto/icrc.h"
#include "util/lockorder.h"

#define NQP 6
#define BUF_LEN (256 * 1024)
#define SQ_PSN 0x100
#define RQ_PSN 0x200
#define QKEY 0x11111111u
#define NRECV 8

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static struct ibv_xrcd *xrcd;
static struct ibv_srq *xsrq;
static struct ibv_qp *qp[NQP];
static uint8_t *buf;
static uint16_t fake_port; /* the silent peer's */
static union ibv_gid gid0;

static void die(const char *what)
{
	perror(what);
	abort();
}

static uint32_t fake_qpn(int i)
{
	return (uint32_t)fake_port << 8 | (uint32_t)(i + 1);
}

static void post_recvs(struct ibv_qp *q, struct ibv_srq *srq, int i)
{
	int k;

	for (k = 0; k < NRECV; k++) {
		struct ibv_sge sge = { (uintptr_t)buf + (size_t)i * 16384 +
					       (size_t)k * 2048,
				       2048, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)k,
					  .sg_list = &sge,
					  .num_sge = 1 },
				   *bad;

		if (srq ? ibv_post_srq_recv(srq, &wr, &bad) :
			  ibv_post_recv(q, &wr, &bad))
			break; /* full: enough */
	}
}

static void post_send(struct ibv_qp *q, enum ibv_wr_opcode op, size_t off,
		      uint32_t len, uint64_t raddr)
{
	struct ibv_sge sge = { (uintptr_t)buf + off, len, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = off,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = 0x1234;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.swap = 2;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = 0x1234;
	}
	if (q->qp_type == IBV_QPT_XRC_SEND)
		wr.qp_type.xrc.remote_srqn = 0x42;
	if (ibv_post_send(q, &wr, &bad))
		die("ibv_post_send");
}

/* RESET -> INIT -> RTR -> RTS, and the work of QP i posted again. */
static void setup_qp(int i)
{
	struct ibv_qp *q = qp[i];
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE))
		die("modify RESET");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (q->qp_type == IBV_QPT_UD) {
		a.qkey = QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = q->qp_type == IBV_QPT_UC ?
					    IBV_ACCESS_REMOTE_WRITE :
					    IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (ibv_modify_qp(q, &a, mask))
		die("modify INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (q->qp_type != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = fake_qpn(i);
		a.rq_psn = RQ_PSN;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid0;
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (q->qp_type != IBV_QPT_UC) {
			a.max_dest_rd_atomic = 16;
			a.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
	}
	if (ibv_modify_qp(q, &a, mask))
		die("modify RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = SQ_PSN;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (q->qp_type == IBV_QPT_RC || q->qp_type == IBV_QPT_XRC_SEND ||
	    q->qp_type == IBV_QPT_XRC_RECV) {
		a.timeout = 31; /* hours: the silent peer never times out */
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(q, &a, mask))
		die("modify RTS");

	switch (i) {
	case 0:
		post_recvs(q, NULL, i);
		post_send(q, IBV_WR_RDMA_WRITE, 128 * 1024, 3000, 0x10000);
		post_send(q, IBV_WR_RDMA_READ, 136 * 1024, 5000, 0x20000);
		post_send(q, IBV_WR_ATOMIC_CMP_AND_SWP, 144 * 1024, 8, 0x30000);
		post_send(q, IBV_WR_ATOMIC_FETCH_AND_ADD, 145 * 1024, 8,
			  0x30008);
		post_send(q, IBV_WR_SEND, 146 * 1024, 100, 0);
		break;
	case 1:
	case 2:
	case 3:
		post_recvs(q, NULL, i);
		break;
	case 5:
		post_send(q, IBV_WR_RDMA_WRITE, 160 * 1024, 1500, 0x10000);
		post_send(q, IBV_WR_RDMA_READ, 168 * 1024, 3000, 0x20000);
		break;
	}
}

static struct ibv_qp *make_qp(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *q;

	memset(&a, 0, sizeof(a));
	a.qp_type = type;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	if (type == IBV_QPT_XRC_RECV) {
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = xrcd;
	} else {
		a.send_cq = cq;
		a.recv_cq = cq;
		a.cap.max_send_wr = 16;
		a.cap.max_send_sge = 1;
		if (type != IBV_QPT_XRC_SEND) {
			a.cap.max_recv_wr = NRECV;
			a.cap.max_recv_sge = 1;
		}
	}
	q = ibv_create_qp_ex(ctx, &a);
	if (!q)
		die("ibv_create_qp_ex");
	return q;
}

static void init(void)
{
	struct ibv_device **list;
	struct ibv_srq_init_attr_ex sa;
	struct ibv_xrcd_init_attr xa;
	struct sockaddr_in6 sin = { .sin6_family = AF_INET6 };
	socklen_t sl = sizeof(sin);
	int fd, i;

	/* The silent peer: a port of ours that nobody reads. */
	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl))
		die("silent peer");
	fake_port = ntohs(sin.sin6_port);

	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("no device");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx || ibv_query_gid(ctx, 1, 0, &gid0))
		die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	buf = aligned_alloc(4096, BUF_LEN);
	if (!pd || !cq || !buf)
		die("pd/cq/buf");
	memset(buf, 0x5a, BUF_LEN);
	mr = ibv_reg_mr(pd, buf, BUF_LEN,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		die("ibv_reg_mr");
	memset(&xa, 0, sizeof(xa));
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	xrcd = ibv_open_xrcd(ctx, &xa);
	if (!xrcd)
		die("ibv_open_xrcd");
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 64;
	sa.attr.max_sge = 1;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = pd;
	sa.xrcd = xrcd;
	sa.cq = cq;
	xsrq = ibv_create_srq_ex(ctx, &sa);
	if (!xsrq)
		die("ibv_create_srq_ex");
	qp[0] = make_qp(IBV_QPT_RC);
	qp[1] = make_qp(IBV_QPT_RC);
	qp[2] = make_qp(IBV_QPT_UC);
	qp[3] = make_qp(IBV_QPT_UD);
	qp[4] = make_qp(IBV_QPT_XRC_RECV);
	qp[5] = make_qp(IBV_QPT_XRC_SEND);
	for (i = 0; i < NQP; i++)
		setup_qp(i);
	post_recvs(NULL, xsrq, 4);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* The harness is the only peer (fuzz_shm.c has the rings). */
	setenv("SOFTVERBS_FASTPATH", "0", 0);
	init();
	return 0;
}

/* The flow a packet for QP i arrives on: from its peer to its socket. */
static void flow_of(int i, bool forged, struct sv_flow *f)
{
	struct sv_qp_engine *qe = to_sv_qp(qp[i])->eng;

	memset(f, 0, sizeof(*f));
	f->src = qe->flow.dst;
	f->dst = qe->flow.src;
	f->sport = fake_port;
	f->dport = qe->sock->udp.port;
	if (!f->src.family || !f->dst.family) {
		/* UD and XRC targets keep no peer: loopback. */
		f->src.family = f->dst.family = AF_INET;
		f->src.addr[0] = f->dst.addr[0] = 127;
		f->src.addr[3] = f->dst.addr[3] = 1;
	}
	if (forged)
		f->sport ^= 0x5555;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	while (n--) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

/* Keys only this run knows: the XRC SRQ number of an XRC request, the
 * R_Key and a virtual address inside the MR (the input's low 16 bits as
 * the offset) of a request that carries a RETH or an AtomicETH. */
static void patch_keys(uint8_t *pkt, size_t len)
{
	uint8_t op = pkt[0], low = op & 0x1f;
	size_t at = 12;

	if (len < 12)
		return;
	if ((op >> 5) == 5) { /* XRC */
		uint32_t srqn = 0;

		if (len < 16 || ibv_get_srq_num(xsrq, &srqn))
			return;
		put_be(pkt + 12, srqn, 4);
		at = 16;
	}
	if ((op >> 5) == 3 || (op >> 5) == 4) /* UD, CNP */
		return;
	if (low == 0x06 || low == 0x0a || low == 0x0b || low == 0x0c ||
	    low == 0x13 || low == 0x14) {
		uint64_t off;

		if (len < at + 12)
			return;
		off = ((uint64_t)pkt[at + 6] << 8 | pkt[at + 7]) & 0xffff;
		put_be(pkt + at, (uintptr_t)buf + off, 8);
		put_be(pkt + at + 8, mr->rkey, 4);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sv_engine *eng = to_sv_ctx(ctx)->engine;
	bool redo[NQP] = { false };
	struct ibv_wc wc[32];
	int n, i, rec;

	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	for (rec = 0; rec < 8 && size >= 3; rec++) {
		uint8_t sel = data[0];
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;
		int k = (sel & 7) % NQP;
		struct sv_qp_engine *qe = to_sv_qp(qp[k])->eng;
		struct sv_flow f;
		uint8_t *pkt;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		/* Exactly len bytes: ASan sees a read past the packet. */
		pkt = malloc(len ? len : 1);
		memcpy(pkt, data, len);
		data += len;
		size -= len;
		if (!(sel & 0x10) && len >= 8) {
			/* BTH bytes 5..7: the destination QPN. */
			pkt[5] = (uint8_t)(qe->qpn >> 16);
			pkt[6] = (uint8_t)(qe->qpn >> 8);
			pkt[7] = (uint8_t)qe->qpn;
		}
		if (sel & 0x80)
			patch_keys(pkt, len);
		flow_of(k, sel & 0x40, &f);
		if (!(sel & 8) && !(sel & 0x20) && len >= 16)
			sv_icrc_set(&f, pkt, (uint32_t)len);
		eng->now_ok = false;
		sv_rx_pkt(eng, qe->sock, pkt, (uint32_t)len, false, &f,
			  sel & 8);
		free(pkt);
	}
	/* What the packets started: replies, completions, errors. */
	sv_engine_pass(eng, false);
	sv_mutex_unlock(&eng->lock);

	while ((n = ibv_poll_cq(cq, 32, wc)) > 0)
		for (i = 0; i < n; i++)
			for (int k = 0; k < NQP; k++)
				if (qp[k]->qp_num == wc[i].qp_num)
					redo[k] = true;
	for (i = 0; i < NQP; i++) {
		if (atomic_load(&to_sv_qp(qp[i])->eng->state) != IBV_QPS_RTS)
			redo[i] = true;
		if (redo[i])
			setup_qp(i);
	}
	/* The XRC SRQ's receives: whatever the target consumed. */
	if (redo[4])
		post_recvs(NULL, xsrq, 4);
	return 0;
}
