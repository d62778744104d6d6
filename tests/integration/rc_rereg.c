/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ibv_rereg_mr seen from the peer: B changes its region while A keeps
 * reaching it with the R_Key it was given, as an application does on an
 * HCA (rxe and mlx5 keep the keys across a rereg of access, PD or
 * translation; rdma-core's man page only promises that lkey and rkey are
 * updated in the ibv_mr, so the keys must be read again either way).
 *
 *   access:      full rights -> WRITE lands; rereg to REMOTE_READ only ->
 *                READ works with the same R_Key, WRITE gets
 *                IBV_WC_REM_ACCESS_ERR and B's bytes stay as they were;
 *   translation: the region moves to a second buffer of another length;
 *                A's WRITE with the key B reads back from the ibv_mr lands
 *                in the new buffer and not in the old one; a WRITE past
 *                the new length is refused;
 *   pd:          the region moves to a PD other than the QP's: WRITE gets
 *                IBV_WC_REM_ACCESS_ERR; moved back, a new QP pair reaches
 *                it again.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

#define LEN 65536u

struct where {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static void pair(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static void rdma(struct hx_ep *ep, enum ibv_wr_opcode op, void *laddr,
		 uint32_t len, uint64_t raddr, uint32_t rkey,
		 enum ibv_wc_status want)
{
	static uint64_t id = 100;

	id++;
	HX_CHECK_RC(hx_post_send(ep, op, IBV_SEND_SIGNALED, id, laddr, len,
				 ep->mr->lkey, raddr, rkey, 0),
		    0);
	HX_EXPECT(ep->scq, NULL, id, want,
		  op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE,
		  len);
}

static void send_where(int fd, struct ibv_mr *mr, void *addr, uint32_t len)
{
	struct where w = { (uintptr_t)addr, mr->rkey, len };

	hx_send(fd, &w, sizeof(w));
}

static void access_a(int fd)
{
	struct hx_ep ep;
	struct where w;

	pair(&ep, fd);
	hx_recv(fd, &w, sizeof(w));
	hx_fill(ep.buf, 4096, 1);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 4096, w.addr, w.rkey,
	     IBV_WC_SUCCESS);
	hx_sync(fd); /* B rereg to REMOTE_READ only */
	hx_sync(fd);
	memset(ep.buf + 8192, 0, 4096);
	rdma(&ep, IBV_WR_RDMA_READ, ep.buf + 8192, 4096, w.addr, w.rkey,
	     IBV_WC_SUCCESS);
	HX_CHECK_PATTERN(ep.buf + 8192, 4096, 1);
	hx_fill(ep.buf, 4096, 2);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 4096, w.addr, w.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	hx_ep_close(&ep);
}

static void access_b(int fd)
{
	struct hx_ep ep;
	uint32_t lkey, rkey;

	pair(&ep, fd);
	send_where(fd, ep.mr, ep.buf, LEN);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf, 4096, 1);
	lkey = ep.mr->lkey;
	rkey = ep.mr->rkey;
	HX_CHECK_RC(ibv_rereg_mr(ep.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL,
				 0, IBV_ACCESS_REMOTE_READ),
		    0);
	/* an HCA's keys survive a change of rights */
	CHECK_EQ(ep.mr->lkey, lkey);
	CHECK_EQ(ep.mr->rkey, rkey);
	hx_sync(fd);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf, 4096, 1); /* the refused WRITE left no byte */
	hx_ep_close(&ep);
}

static size_t nonzero(const uint8_t *p, size_t len)
{
	size_t n = 0;

	while (len--)
		n += *p++ != 0;
	return n;
}

static void translation_a(int fd)
{
	struct hx_ep ep;
	struct where w;
	uint32_t rkey;

	pair(&ep, fd);
	hx_recv(fd, &w, sizeof(w));
	hx_fill(ep.buf, 4096, 3);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 4096, w.addr, w.rkey,
	     IBV_WC_SUCCESS);
	hx_sync(fd);
	rkey = w.rkey;
	hx_recv(fd, &w, sizeof(w)); /* where the region is now */
	CHECK_EQ(w.rkey, rkey); /* under the key A already holds */
	hx_fill(ep.buf, 8192, 4);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 8192, w.addr + 4096, rkey,
	     IBV_WC_SUCCESS);
	hx_sync(fd);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 8192, w.addr + w.len - 4096, rkey,
	     IBV_WC_REM_ACCESS_ERR);
	hx_sync(fd);
	hx_ep_close(&ep);
}

static void translation_b(int fd)
{
	struct hx_ep ep;
	uint8_t *moved;
	uint32_t moved_len = 3 * 4096 * 4;

	pair(&ep, fd);
	moved = hx_alloc(moved_len);
	send_where(fd, ep.mr, ep.buf, LEN);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf, 4096, 3);
	HX_CHECK_RC(ibv_rereg_mr(ep.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
				 moved, moved_len, 0),
		    0);
	CHECK_EQ((uintptr_t)ep.mr->addr, (uintptr_t)moved);
	CHECK_EQ(ep.mr->length, moved_len);
	memset(ep.buf, 0, 16384);
	send_where(fd, ep.mr, moved, moved_len);
	hx_sync(fd);
	HX_CHECK_PATTERN(moved + 4096, 8192, 4);
	CHECK_EQ(nonzero(ep.buf, 16384), 0); /* nothing in the old place */
	hx_sync(fd);
	/* the one past the end left the region's last page alone */
	HX_CHECK_PATTERN(moved + 4096, 8192, 4);
	hx_ep_close(&ep);
	hx_free(moved, moved_len);
}

static void pd_a(int fd)
{
	struct hx_ep ep;
	struct where w;

	pair(&ep, fd);
	hx_recv(fd, &w, sizeof(w));
	hx_sync(fd); /* B moved the region to another PD */
	hx_fill(ep.buf, 4096, 5);
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 4096, w.addr, w.rkey,
	     IBV_WC_REM_ACCESS_ERR);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd); /* B moved it back; both renew their QPs */
	hx_ep_new_qp(&ep);
	hx_ep_connect(&ep);
	hx_recv(fd, &w, sizeof(w));
	rdma(&ep, IBV_WR_RDMA_WRITE, ep.buf, 4096, w.addr, w.rkey,
	     IBV_WC_SUCCESS);
	hx_sync(fd);
	hx_ep_close(&ep);
}

static void pd_b(int fd)
{
	struct hx_ep ep;
	struct ibv_pd *other;
	struct ibv_pd *own;

	pair(&ep, fd);
	other = ibv_alloc_pd(ep.ctx);
	REQUIRE(other);
	own = ep.pd;
	send_where(fd, ep.mr, ep.buf, LEN);
	HX_CHECK_RC(ibv_rereg_mr(ep.mr, IBV_REREG_MR_CHANGE_PD, other, NULL, 0,
				 0),
		    0);
	CHECK_EQ((uintptr_t)ep.mr->pd, (uintptr_t)other);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(ep.buf[0], 0); /* the refused WRITE left no byte */
	HX_CHECK_RC(ibv_rereg_mr(ep.mr, IBV_REREG_MR_CHANGE_PD, own, NULL, 0,
				 0),
		    0);
	hx_ep_new_qp(&ep);
	hx_ep_connect(&ep);
	send_where(fd, ep.mr, ep.buf, LEN);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf, 4096, 5);
	CHECK_EQ(ibv_dealloc_pd(other), 0);
	hx_ep_close(&ep);
}

static const struct hx_case cases[] = {
	HX_CASE(access, 30),
	HX_CASE(translation, 30),
	HX_CASE(pd, 30),
	{ 0 },
};

HX_MAIN(cases)
