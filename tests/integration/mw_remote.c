/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Memory windows between two processes: B (the target) binds windows on
 * its memory, A (the requester) reaches B's memory through them, with the
 * bytes compared on both sides and every refusal asserted:
 *   a WRITE/READ/atomic through a bound window succeeds, landing exactly
 *   in the window (zero-based windows: at the offset);
 *   outside the window's range, without the window's rights (whatever the
 *   region's), after an unbind, LOCAL_INV, SEND_WITH_INV or dealloc, from
 *   a QP of another PD, and for a type 2 window from a QP other than the
 *   one it is bound to -> IBV_WC_REM_ACCESS_ERR at A, B's memory
 *   unchanged, both QPs in ERR (IBA class C access violation);
 *   SEND_WITH_INV completes at B with IBV_WC_WITH_INV and the rkey in
 *   invalidated_rkey; one naming no window B's QP may invalidate ->
 *   IBV_WC_REM_INV_REQ_ERR at A;
 *   a region with a bound window cannot be deregistered (EBUSY).
 */
#include <arpa/inet.h>
#include <unistd.h>

#include "harness.h"

#define WIN_OFF (64u << 10)
#define WIN_LEN (16u << 10)

struct win {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static struct hx_opts opts(void)
{
	struct hx_opts o = hx_opts_default();

	o.mr_access |= IBV_ACCESS_MW_BIND;
	o.recv_cqe = 64;
	return o;
}

static void pair(struct hx_ep *ep, int fd)
{
	struct hx_opts o = opts();

	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static void drain(struct hx_ep *ep)
{
	struct ibv_wc wc[16];

	while (hx_poll(ep->scq, wc, 16, 30) > 0)
		;
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

/* One more connected QP on both sides, on PD p (both call it). */
static struct ibv_qp *extra_pair(struct hx_ep *ep, struct ibv_pd *p)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = ep->scq,
		.recv_cq = ep->rcq,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 16,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *keep = ep->qp, *qp = ibv_create_qp(p, &ia);

	if (!qp)
		hx_die("ibv_create_qp: %s", strerror(errno));
	a.qp_access_flags = ep->o.qp_access;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		hx_die("extra QP to INIT");
	ep->qp = qp;
	hx_ep_connect(ep);
	ep->qp = keep;
	return qp;
}

static int post_on(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		   void *laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
		   uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = rkey;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* B: bind a type 1 window (ibv_bind_mw) and wait for its completion. */
static uint32_t bind1(struct hx_ep *ep, struct ibv_mw *mw, struct ibv_mr *mr,
		      void *addr, uint64_t len, unsigned int access)
{
	struct ibv_mw_bind b = { .wr_id = 0xb1,
				 .send_flags = IBV_SEND_SIGNALED };

	b.bind_info.mr = mr;
	b.bind_info.addr = (uintptr_t)addr;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = access;
	HX_CHECK_RC(ibv_bind_mw(ep->qp, mw, &b), 0);
	HX_EXPECT(ep->scq, NULL, 0xb1, IBV_WC_SUCCESS, IBV_WC_BIND_MW, -1);
	return mw->rkey;
}

/* B: bind a type 2 window to qp with a new tag (IBV_WR_BIND_MW). */
static uint32_t bind2(struct hx_ep *ep, struct ibv_qp *qp, struct ibv_mw *mw,
		      uint32_t *cur, struct ibv_mr *mr, void *addr,
		      uint64_t len, unsigned int access)
{
	struct ibv_send_wr wr, *bad;

	*cur = ibv_inc_rkey(*cur);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xb2;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = *cur;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	HX_CHECK_RC(ibv_post_send(qp, &wr, &bad), 0);
	HX_EXPECT(ep->scq, NULL, 0xb2, IBV_WC_SUCCESS, IBV_WC_BIND_MW, -1);
	return *cur;
}

static void local_inv(struct hx_ep *ep, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x1f;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	HX_CHECK_RC(ibv_post_send(ep->qp, &wr, &bad), 0);
	HX_EXPECT(ep->scq, NULL, 0x1f, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, -1);
}

/* A: one RDMA operation expected to end with st (and the QP in ERR if
 * it fails). */
static void access_on(struct hx_ep *ep, struct ibv_qp *qp,
		      enum ibv_wr_opcode op, void *laddr, uint32_t len,
		      uint64_t raddr, uint32_t rkey, enum ibv_wc_status st)
{
	static uint64_t id = 1000;
	int wop = op == IBV_WR_RDMA_READ     ? IBV_WC_RDMA_READ :
		  op == IBV_WR_SEND_WITH_INV ? IBV_WC_SEND :
					       IBV_WC_RDMA_WRITE;

	id++;
	HX_CHECK_RC(post_on(qp, op, id, laddr, len, ep->mr->lkey, raddr, rkey),
		    0);
	HX_EXPECT(ep->scq, NULL, id, st, wop, len);
	if (st != IBV_WC_SUCCESS)
		HX_CHECK_STATE(qp, IBV_QPS_ERR);
}

static void rdma(struct hx_ep *ep, enum ibv_wr_opcode op, void *laddr,
		 uint32_t len, uint64_t raddr, uint32_t rkey,
		 enum ibv_wc_status st)
{
	access_on(ep, ep->qp, op, laddr, len, raddr, rkey, st);
}

/* Bytes [p, p+len) are the pattern of seed from offset off. */
static void check_pattern_at(const uint8_t *p, size_t len, uint64_t seed,
			     size_t off, const char *what)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != hx_pattern_byte(seed, off + i)) {
			fprintf(stderr,
				"[%s] %s: byte %zu is %02x, expected %02x\n",
				hx_role, what, i, p[i],
				hx_pattern_byte(seed, off + i));
			check_failed++;
			return;
		}
	}
	check_passed++;
}

static void check_zero(const uint8_t *p, size_t len, const char *what)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i]) {
			fprintf(stderr,
				"[%s] %s: byte %zu is %02x, expected 0\n",
				hx_role, what, i, p[i]);
			check_failed++;
			return;
		}
	}
	check_passed++;
}

/* ---- type 1: range, reads, writes -------------------------------------- */

static void type1_range_a(int fd)
{
	struct hx_ep ep;
	struct win w;

	pair(&ep, fd);
	hx_recv(fd, &w, sizeof(w));
	hx_fill(ep.buf, WIN_LEN, 11);
	/* the whole window */
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, WIN_LEN, w.addr, w.rkey,
	     IBV_WC_SUCCESS);
	hx_sync(fd);
	/* read part of it back */
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf + (512u << 10), 4096, w.addr + 4096,
	     w.rkey, IBV_WC_SUCCESS);
	check_pattern_at(ep.buf + (512u << 10), 4096, 11, 4096,
			 "READ through window");
	/* the region's own key still reaches the region */
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 64, ep.peer.addr, ep.peer.rkey,
	     IBV_WC_SUCCESS);
	hx_sync(fd);
	/* 8 bytes past the window's end (inside the region) */
	hx_fill(ep.buf, 16, 12);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 16, w.addr + WIN_LEN - 8, w.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	hx_sync(fd);
	renew(&ep);
	/* one byte before its start */
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf, 8, w.addr - 1, w.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	renew(&ep);
	/* a multi-packet READ running past its end */
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf, WIN_LEN, w.addr + 1, w.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	renew(&ep);
	/* the window's index with another tag */
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 8, w.addr, ibv_inc_rkey(w.rkey),
	     IBV_WC_REM_ACCESS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void type1_range_b(int fd)
{
	struct hx_ep ep;
	struct ibv_mw *mw;
	struct win w;

	pair(&ep, fd);
	mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_1);
	REQUIRE(mw);
	w.addr = (uintptr_t)ep.buf + WIN_OFF;
	w.len = WIN_LEN;
	w.rkey = bind1(&ep, mw, ep.mr, ep.buf + WIN_OFF, WIN_LEN,
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(w.rkey & 0x80000000u); /* a window key, not the region's */
	hx_send(fd, &w, sizeof(w));
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf + WIN_OFF, WIN_LEN, 11);
	check_zero(ep.buf + WIN_OFF - 4096, 4096, "before the window");
	check_zero(ep.buf + WIN_OFF + WIN_LEN, 4096, "after the window");
	hx_sync(fd);
	hx_sync(fd);
	/* the refused WRITE placed nothing */
	HX_CHECK_PATTERN(ep.buf + WIN_OFF, WIN_LEN, 11);
	check_zero(ep.buf + WIN_OFF + WIN_LEN, 8, "after the window");
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	/* ibv_dereg_mr refuses while the window is bound */
	CHECK_EQ(ibv_dereg_mr(ep.mr), EBUSY);
	renew(&ep);
	renew(&ep);
	renew(&ep);
	hx_sync(fd);
	CHECK_EQ(ibv_dealloc_mw(mw), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- type 1: the window's rights, not the region's --------------------- */

struct rights_keys {
	struct win rw_on_local; /* RW window on a region with no remote rights */
	struct win ro_on_all; /* read-only window on a region with all rights */
	uint32_t local_rkey; /* that first region's own rkey */
};

static void type1_rights_a(int fd)
{
	struct rights_keys k;
	struct hx_ep ep;

	pair(&ep, fd);
	hx_recv(fd, &k, sizeof(k));
	hx_fill(ep.buf, 4096, 21);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 4096, k.rw_on_local.addr,
	     k.rw_on_local.rkey, IBV_WC_SUCCESS);
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf + 8192, 4096, k.rw_on_local.addr,
	     k.rw_on_local.rkey, IBV_WC_SUCCESS);
	HX_CHECK_PATTERN(ep.buf + 8192, 4096, 21);
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf + 8192, 4096, k.ro_on_all.addr,
	     k.ro_on_all.rkey, IBV_WC_SUCCESS);
	HX_CHECK_PATTERN(ep.buf + 8192, 4096, 22);
	hx_sync(fd);
	/* the region without remote rights, by its own key */
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 64, k.rw_on_local.addr,
	     k.local_rkey, IBV_WC_REM_ACCESS_ERR);
	renew(&ep);
	/* a read-only window over a writable region */
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 64, k.ro_on_all.addr,
	     k.ro_on_all.rkey, IBV_WC_REM_ACCESS_ERR);
	renew(&ep);
	/* an atomic through a window without the atomic right */
	{
		struct ibv_send_wr wr, *bad;
		struct ibv_sge sge = { (uintptr_t)ep.buf + 16384, 8,
				       ep.mr->lkey };

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 77;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.atomic.remote_addr = k.rw_on_local.addr;
		wr.wr.atomic.rkey = k.rw_on_local.rkey;
		wr.wr.atomic.compare_add = 1;
		HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), 0);
		HX_EXPECT(ep.scq, NULL, 77, IBV_WC_REM_ACCESS_ERR, -1, -1);
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void type1_rights_b(int fd)
{
	struct rights_keys k;
	struct ibv_mw *m1, *m2;
	struct ibv_mr *local;
	struct hx_ep ep;

	pair(&ep, fd);
	local = ibv_reg_mr(ep.pd, ep.buf + (256u << 10), 65536,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	m1 = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_1);
	m2 = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_1);
	REQUIRE(local && m1 && m2);
	k.rw_on_local.addr = (uintptr_t)ep.buf + (256u << 10);
	k.rw_on_local.len = 32768;
	k.rw_on_local.rkey =
		bind1(&ep, m1, local, ep.buf + (256u << 10), 32768,
		      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	k.ro_on_all.addr = (uintptr_t)ep.buf;
	k.ro_on_all.len = 4096;
	hx_fill(ep.buf, 4096, 22);
	k.ro_on_all.rkey =
		bind1(&ep, m2, ep.mr, ep.buf, 4096, IBV_ACCESS_REMOTE_READ);
	k.local_rkey = local->rkey;
	hx_send(fd, &k, sizeof(k));
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf + (256u << 10), 4096, 21);
	renew(&ep);
	renew(&ep);
	hx_sync(fd);
	/* nothing the refused operations could have touched changed */
	HX_CHECK_PATTERN(ep.buf, 4096, 22);
	HX_CHECK_PATTERN(ep.buf + (256u << 10), 4096, 21);
	CHECK_EQ(ibv_dereg_mr(local), EBUSY);
	CHECK_EQ(ibv_dealloc_mw(m1), 0);
	CHECK_EQ(ibv_dereg_mr(local), 0);
	CHECK_EQ(ibv_dealloc_mw(m2), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- type 1: unbinding and deallocation end access ---------------------- */

static void type1_unbind_a(int fd)
{
	struct hx_ep ep;
	struct win w, w2;

	pair(&ep, fd);
	hx_recv(fd, &w, sizeof(w));
	hx_fill(ep.buf, 256, 31);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 256, w.addr, w.rkey,
	     IBV_WC_SUCCESS);
	hx_sync(fd); /* B unbinds */
	hx_sync(fd);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 256, w.addr, w.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	renew(&ep);
	hx_recv(fd, &w2, sizeof(w2));
	CHECK(w2.rkey != w.rkey);
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf + 4096, 256, w2.addr, w2.rkey,
	     IBV_WC_SUCCESS);
	HX_CHECK_PATTERN(ep.buf + 4096, 256, 31);
	hx_sync(fd); /* B deallocates */
	hx_sync(fd);
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf + 4096, 256, w2.addr, w2.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void type1_unbind_b(int fd)
{
	struct ibv_mw_bind none = { .wr_id = 0xb0,
				    .send_flags = IBV_SEND_SIGNALED };
	struct hx_ep ep;
	struct ibv_mw *mw;
	struct win w;

	pair(&ep, fd);
	mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_1);
	REQUIRE(mw);
	w.addr = (uintptr_t)ep.buf + WIN_OFF;
	w.len = 4096;
	w.rkey = bind1(&ep, mw, ep.mr, ep.buf + WIN_OFF, 4096,
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	hx_send(fd, &w, sizeof(w));
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf + WIN_OFF, 256, 31);
	/* man ibv_alloc_mw: a zero-length bind invalidates a type 1 window */
	HX_CHECK_RC(ibv_bind_mw(ep.qp, mw, &none), 0);
	HX_EXPECT(ep.scq, NULL, 0xb0, IBV_WC_SUCCESS, IBV_WC_BIND_MW, -1);
	hx_sync(fd);
	renew(&ep);
	/* bound again (type 1 windows survive the QP: they belong to the PD) */
	w.rkey = bind1(&ep, mw, ep.mr, ep.buf + WIN_OFF, 4096,
		       IBV_ACCESS_REMOTE_READ);
	hx_send(fd, &w, sizeof(w));
	hx_sync(fd);
	CHECK_EQ(ibv_dealloc_mw(mw), 0);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- type 2: LOCAL_INV, and the QP it is bound to ------------------------ */

static void type2_local_inv_a(int fd)
{
	struct hx_ep ep;
	struct win w;

	pair(&ep, fd);
	hx_recv(fd, &w, sizeof(w));
	hx_fill(ep.buf, 8192, 41);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 8192, w.addr, w.rkey,
	     IBV_WC_SUCCESS);
	hx_sync(fd); /* B checks and invalidates */
	hx_sync(fd);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf + 8192, 64, w.addr, w.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	hx_sync(fd);
	renew(&ep);
	/* bound again, on B's new QP */
	hx_recv(fd, &w, sizeof(w));
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf + 16384, 8192, w.addr, w.rkey,
	     IBV_WC_SUCCESS);
	HX_CHECK_PATTERN(ep.buf + 16384, 8192, 41);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void type2_local_inv_b(int fd)
{
	struct hx_ep ep;
	struct ibv_mw *mw;
	struct win w;
	uint32_t cur;

	pair(&ep, fd);
	mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
	REQUIRE(mw);
	cur = mw->rkey;
	w.addr = (uintptr_t)ep.buf + WIN_OFF;
	w.len = 8192;
	w.rkey = bind2(&ep, ep.qp, mw, &cur, ep.mr, ep.buf + WIN_OFF, 8192,
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	hx_send(fd, &w, sizeof(w));
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf + WIN_OFF, 8192, 41);
	CHECK_EQ(ibv_dereg_mr(ep.mr), EBUSY);
	local_inv(&ep, w.rkey);
	hx_sync(fd);
	hx_sync(fd);
	/* the refused WRITE placed nothing */
	HX_CHECK_PATTERN(ep.buf + WIN_OFF, 8192, 41);
	renew(&ep);
	w.rkey = bind2(&ep, ep.qp, mw, &cur, ep.mr, ep.buf + WIN_OFF, 8192,
		       IBV_ACCESS_REMOTE_READ);
	hx_send(fd, &w, sizeof(w));
	hx_sync(fd);
	CHECK_EQ(ibv_dealloc_mw(mw), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- type 2: SEND_WITH_INV ------------------------------------------------ */

static void type2_send_inv_a(int fd)
{
	struct hx_ep ep;
	struct win w;

	pair(&ep, fd);
	hx_recv(fd, &w, sizeof(w));
	hx_fill(ep.buf, 4096, 51);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 4096, w.addr, w.rkey,
	     IBV_WC_SUCCESS);
	/* a multi-packet SEND whose last packet invalidates the window */
	hx_fill(ep.buf + 8192, 3 * 4096 + 100, 52);
	rdma(&ep, IBV_WR_SEND_WITH_INV, ep.buf + 8192, 3 * 4096 + 100, 0,
	     w.rkey, IBV_WC_SUCCESS);
	hx_sync(fd);
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf, 64, w.addr, w.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	renew(&ep);
	/* a SEND_WITH_INV naming no window B's QP may invalidate */
	hx_recv(fd, &w, sizeof(w));
	rdma(&ep, IBV_WR_SEND_WITH_INV, ep.buf, 100, 0, ibv_inc_rkey(w.rkey),
	     IBV_WC_REM_INV_REQ_ERR);
	hx_sync(fd);
	renew(&ep);
	hx_recv(fd, &w,
		sizeof(w)); /* a type 1 window: not invalidated by WRs */
	rdma(&ep, IBV_WR_SEND_WITH_INV, ep.buf, 100, 0, w.rkey,
	     IBV_WC_REM_INV_REQ_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void type2_send_inv_b(int fd)
{
	struct hx_ep ep;
	struct ibv_mw *mw, *m1;
	struct ibv_wc wc;
	struct win w;
	uint32_t cur;

	pair(&ep, fd);
	mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
	m1 = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_1);
	REQUIRE(mw && m1);
	cur = mw->rkey;
	HX_CHECK_RC(hx_post_recv(&ep, 61, ep.buf + (512u << 10), 65536,
				 ep.mr->lkey),
		    0);
	w.addr = (uintptr_t)ep.buf + WIN_OFF;
	w.len = 4096;
	w.rkey = bind2(&ep, ep.qp, mw, &cur, ep.mr, ep.buf + WIN_OFF, 4096,
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	hx_send(fd, &w, sizeof(w));
	if (HX_EXPECT(ep.rcq, &wc, 61, IBV_WC_SUCCESS, IBV_WC_RECV,
		      3 * 4096 + 100)) {
		CHECK(wc.wc_flags & IBV_WC_WITH_INV);
		CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
		CHECK_EQ(wc.invalidated_rkey, w.rkey);
	}
	HX_CHECK_PATTERN(ep.buf + (512u << 10), 3 * 4096 + 100, 52);
	HX_CHECK_PATTERN(ep.buf + WIN_OFF, 4096, 51);
	/* invalidated: the region is free again */
	hx_sync(fd);
	renew(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 62, ep.buf + (512u << 10), 4096,
				 ep.mr->lkey),
		    0);
	w.rkey = bind2(&ep, ep.qp, mw, &cur, ep.mr, ep.buf + WIN_OFF, 4096,
		       IBV_ACCESS_REMOTE_READ);
	hx_send(fd, &w, sizeof(w));
	HX_EXPECT(ep.rcq, NULL, 62, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	renew(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 63, ep.buf + (512u << 10), 4096,
				 ep.mr->lkey),
		    0);
	w.rkey = bind1(&ep, m1, ep.mr, ep.buf + WIN_OFF, 4096,
		       IBV_ACCESS_REMOTE_READ);
	hx_send(fd, &w, sizeof(w));
	HX_EXPECT(ep.rcq, NULL, 63, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	hx_sync(fd);
	CHECK_EQ(ibv_dealloc_mw(m1), 0);
	CHECK_EQ(ibv_dealloc_mw(mw), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- which QP: type 2 windows answer their QP, windows their PD ---------- */

struct qp_keys {
	struct win t2; /* type 2, bound to B's first QP */
	struct win t1; /* type 1 on B's PD */
};

static void which_qp_a(int fd)
{
	struct ibv_qp *q2, *q3;
	struct qp_keys k;
	struct hx_ep ep;

	pair(&ep, fd);
	q2 = extra_pair(&ep, ep.pd);
	q3 = extra_pair(&ep, ep.pd);
	hx_recv(fd, &k, sizeof(k));
	hx_fill(ep.buf, 4096, 71);
	/* the type 2 window through another QP of the same PD */
	access_on(&ep, q2, IBV_WR_RDMA_WRITE, ep.buf, 64, k.t2.addr, k.t2.rkey,
		  IBV_WC_REM_ACCESS_ERR);
	/* ... and through the QP it is bound to */
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 4096, k.t2.addr, k.t2.rkey,
	     IBV_WC_SUCCESS);
	/* the type 1 window through a QP of another PD at B */
	access_on(&ep, q3, IBV_WR_RDMA_READ, ep.buf + 8192, 64, k.t1.addr,
		  k.t1.rkey, IBV_WC_REM_ACCESS_ERR);
	/* ... and through one of its PD */
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf + 8192, 4096, k.t1.addr, k.t1.rkey,
	     IBV_WC_SUCCESS);
	HX_CHECK_PATTERN(ep.buf + 8192, 4096, 71);
	hx_sync(fd);
	CHECK_EQ(ibv_destroy_qp(q2), 0);
	CHECK_EQ(ibv_destroy_qp(q3), 0);
	drain(&ep);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void which_qp_b(int fd)
{
	struct ibv_qp *q2, *q3;
	struct ibv_mw *m2, *m1;
	struct ibv_pd *pd2;
	struct qp_keys k;
	struct hx_ep ep;
	uint32_t cur;

	pair(&ep, fd);
	pd2 = ibv_alloc_pd(ep.ctx);
	REQUIRE(pd2);
	q2 = extra_pair(&ep, ep.pd);
	q3 = extra_pair(&ep, pd2);
	m2 = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
	m1 = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_1);
	REQUIRE(m2 && m1);
	cur = m2->rkey;
	k.t2.addr = (uintptr_t)ep.buf + WIN_OFF;
	k.t2.len = 4096;
	k.t2.rkey = bind2(&ep, ep.qp, m2, &cur, ep.mr, ep.buf + WIN_OFF, 4096,
			  IBV_ACCESS_REMOTE_WRITE);
	k.t1.addr = k.t2.addr;
	k.t1.len = 4096;
	k.t1.rkey = bind1(&ep, m1, ep.mr, ep.buf + WIN_OFF, 4096,
			  IBV_ACCESS_REMOTE_READ);
	hx_send(fd, &k, sizeof(k));
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf + WIN_OFF, 4096, 71);
	HX_CHECK_STATE(q2, IBV_QPS_ERR);
	HX_CHECK_STATE(q3, IBV_QPS_ERR);
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	/* destroying the QP a type 2 window is bound to frees the window,
	 * and with it the region */
	CHECK_EQ(ibv_dealloc_mw(m1), 0);
	CHECK_EQ(ibv_destroy_qp(ep.qp), 0);
	ep.qp = NULL;
	CHECK_EQ(ibv_dereg_mr(ep.mr), 0);
	ep.mr = NULL;
	CHECK_EQ(ibv_dealloc_mw(m2), 0);
	CHECK_EQ(ibv_destroy_qp(q2), 0);
	CHECK_EQ(ibv_destroy_qp(q3), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	drain(&ep);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- zero-based type 2 window with atomics -------------------------------- */

static void zero_based_a(int fd)
{
	uint64_t *res;
	struct hx_ep ep;
	struct win w;

	pair(&ep, fd);
	hx_recv(fd, &w, sizeof(w));
	CHECK_EQ(w.addr, 0);
	res = (uint64_t *)(ep.buf + 65536);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 81, res, ep.mr->lkey, 8,
				   w.rkey, 5, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 81, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8);
	CHECK_EQ(*res, 1000);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_CMP_AND_SWP,
				   IBV_SEND_SIGNALED, 82, res, ep.mr->lkey, 8,
				   w.rkey, 1005, 7),
		    0);
	HX_EXPECT(ep.scq, NULL, 82, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8);
	CHECK_EQ(*res, 1005);
	/* offsets, not addresses: the middle of the window */
	hx_fill(ep.buf, 1024, 83);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 1024, 2048, w.rkey,
	     IBV_WC_SUCCESS);
	hx_sync(fd);
	/* past the window's 4096 bytes */
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 16, 4096 - 8, w.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void zero_based_b(int fd)
{
	struct hx_ep ep;
	struct ibv_mw *mw;
	struct win w;
	uint32_t cur;
	uint64_t *word;

	pair(&ep, fd);
	mw = ibv_alloc_mw(ep.pd, IBV_MW_TYPE_2);
	REQUIRE(mw);
	cur = mw->rkey;
	word = (uint64_t *)(ep.buf + WIN_OFF + 8);
	*word = 1000;
	w.addr = 0;
	w.len = 4096;
	w.rkey = bind2(&ep, ep.qp, mw, &cur, ep.mr, ep.buf + WIN_OFF, 4096,
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
			       IBV_ACCESS_ZERO_BASED);
	hx_send(fd, &w, sizeof(w));
	hx_sync(fd);
	CHECK_EQ(__atomic_load_n(word, __ATOMIC_SEQ_CST), 7);
	HX_CHECK_PATTERN(ep.buf + WIN_OFF + 2048, 1024, 83);
	check_zero(ep.buf + WIN_OFF + 3072, 1024, "rest of the window");
	hx_sync(fd);
	check_zero(ep.buf + WIN_OFF + 3072, 1024, "rest of the window");
	CHECK_EQ(ibv_dealloc_mw(mw), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(type1_range, 40),    HX_CASE(type1_rights, 40),
	HX_CASE(type1_unbind, 30),   HX_CASE(type2_local_inv, 30),
	HX_CASE(type2_send_inv, 40), HX_CASE(which_qp, 30),
	HX_CASE(zero_based, 30),     { 0 },
};

HX_MAIN(cases)
