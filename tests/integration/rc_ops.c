/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Every RC operation between two processes, bytes compared end to end:
 * SEND/RECV, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ,
 * ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD; message sizes 0, 1, MTU-1,
 * MTU, MTU+1, 1 MiB and 64 MiB; scatter/gather on both sides; inline;
 * signaled/unsignaled and sq_sig_all; fences; solicited events and
 * blocking completion events; many outstanding READs/atomics; PSN wrap.
 * A is the requester unless said otherwise, B the responder.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <unistd.h>

#include "harness.h"

#define NSIZES 7
#define BIG_BUF (72u << 20)
#define CANARY_GAP 64

static void pair(struct hx_ep *ep, int fd, const struct hx_opts *o)
{
	hx_ep_open(ep, o, fd);
	hx_ep_connect(ep);
}

/* The sizes of the issue, laid out in one buffer with a zero gap after
 * each region (so writing past a message's end is seen). */
static void layout(const struct hx_ep *ep, size_t *sz, size_t *off)
{
	uint32_t mtu = ep->mtu_bytes;
	size_t s[NSIZES] = { 0, 1, mtu - 1, mtu, mtu + 1, 1u << 20, 64u << 20 };
	size_t pos = 0;

	for (int i = 0; i < NSIZES; i++) {
		sz[i] = s[i];
		off[i] = pos;
		pos += (s[i] + CANARY_GAP + 4095) & ~(size_t)4095;
	}
	if (pos > BIG_BUF)
		hx_die("layout does not fit: %zu", pos);
}

static void check_canaries(const uint8_t *buf, const size_t *sz,
			   const size_t *off)
{
	for (int i = 0; i < NSIZES; i++) {
		int clean = 1;

		for (int k = 0; k < CANARY_GAP; k++)
			clean &= buf[off[i] + sz[i] + k] == 0;
		if (!clean)
			fprintf(stderr,
				"[%s] bytes written after region %d (size %zu)\n",
				hx_role, i, sz[i]);
		CHECK(clean);
	}
}

/* ---- SEND / RECV, every size ------------------------------------------- */

static void send_recv_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	size_t sz[NSIZES], off[NSIZES];
	struct hx_ep ep;

	o.buf_len = BIG_BUF;
	pair(&ep, fd, &o);
	layout(&ep, sz, off);
	for (int i = 0; i < NSIZES; i++)
		hx_fill(ep.buf + off[i], sz[i], 100 + i);
	hx_sync(fd); /* B's receives are posted */
	for (int i = 0; i < NSIZES; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, i,
					 ep.buf + off[i], sz[i], ep.mr->lkey, 0,
					 0, 0),
			    0);
	for (int i = 0; i < NSIZES; i++)
		HX_EXPECT_T(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, -1,
			    40000);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void send_recv_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	size_t sz[NSIZES], off[NSIZES];
	struct ibv_wc wc;
	struct hx_ep ep;

	o.buf_len = BIG_BUF;
	pair(&ep, fd, &o);
	layout(&ep, sz, off);
	/* Each receive buffer is larger than its message. */
	for (int i = 0; i < NSIZES; i++)
		HX_CHECK_RC(hx_post_recv(&ep, 1000 + i, ep.buf + off[i],
					 sz[i] + CANARY_GAP, ep.mr->lkey),
			    0);
	hx_sync(fd);
	for (int i = 0; i < NSIZES; i++) {
		if (!HX_EXPECT_T(ep.rcq, &wc, 1000 + i, IBV_WC_SUCCESS,
				 IBV_WC_RECV, sz[i], 40000))
			continue;
		CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
		CHECK_EQ(wc.qp_num, ep.qp->qp_num);
		HX_CHECK_PATTERN(ep.buf + off[i], sz[i], 100 + i);
	}
	check_canaries(ep.buf, sz, off);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- SEND_WITH_IMM ------------------------------------------------------ */

static void send_imm_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	uint32_t sz[4] = { 0, 5, ep.mtu_bytes + 1, 7 };
	hx_fill(ep.buf, ep.mtu_bytes + 1, 5);
	hx_sync(fd);
	for (int i = 0; i < 3; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND_WITH_IMM,
					 IBV_SEND_SIGNALED, i, ep.buf, sz[i],
					 ep.mr->lkey, 0, 0, 0x11223344u + i),
			    0);
	/* A plain SEND after them carries no immediate. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 3, ep.buf,
				 sz[3], ep.mr->lkey, 0, 0, 0xdeadu),
		    0);
	for (int i = 0; i < 4; i++)
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void send_imm_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_wc wc;
	struct hx_ep ep;

	pair(&ep, fd, &o);
	uint32_t sz[4] = { 0, 5, ep.mtu_bytes + 1, 7 };
	for (int i = 0; i < 4; i++)
		HX_CHECK_RC(hx_post_recv(&ep, 100 + i, ep.buf + i * 8192, 8192,
					 ep.mr->lkey),
			    0);
	hx_sync(fd);
	for (int i = 0; i < 4; i++) {
		if (!HX_EXPECT(ep.rcq, &wc, 100 + i, IBV_WC_SUCCESS,
			       IBV_WC_RECV, sz[i]))
			continue;
		if (i < 3) {
			CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
			CHECK_EQ(ntohl(wc.imm_data), 0x11223344u + i);
		} else {
			CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
		}
		HX_CHECK_PATTERN(ep.buf + i * 8192, sz[i], 5);
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- RDMA WRITE, every size ---------------------------------------------- */

static void write_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	size_t sz[NSIZES], off[NSIZES];
	struct hx_ep ep;

	o.buf_len = BIG_BUF;
	pair(&ep, fd, &o);
	layout(&ep, sz, off);
	for (int i = 0; i < NSIZES; i++)
		hx_fill(ep.buf + off[i], sz[i], 200 + i);
	for (int i = 0; i < NSIZES; i++)
		HX_CHECK_RC(
			hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
				     i, ep.buf + off[i], sz[i], ep.mr->lkey,
				     ep.peer.addr + off[i], ep.peer.rkey, 0),
			0);
	/* A WRITE completion means the responder acknowledged it. */
	for (int i = 0; i < NSIZES; i++)
		HX_EXPECT_T(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
			    -1, 40000);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void write_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	size_t sz[NSIZES], off[NSIZES];
	struct hx_ep ep;

	o.buf_len = BIG_BUF;
	pair(&ep, fd, &o);
	layout(&ep, sz, off);
	hx_sync(fd);
	for (int i = 0; i < NSIZES; i++)
		HX_CHECK_PATTERN(ep.buf + off[i], sz[i], 200 + i);
	check_canaries(ep.buf, sz, off);
	/* One-sided: nothing completes at the target. */
	HX_EXPECT_NONE(ep.rcq, 100);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- RDMA WRITE WITH IMM: consumes a receive WQE ------------------------- */

static void write_imm_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	uint32_t sz[3] = { 0, 100, 3 * ep.mtu_bytes + 7 };
	hx_fill(ep.buf, sz[2], 9);
	hx_sync(fd);
	for (int i = 0; i < 3; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE_WITH_IMM,
					 IBV_SEND_SIGNALED, i, ep.buf, sz[i],
					 ep.mr->lkey,
					 ep.peer.addr + 65536 * (i + 1),
					 ep.peer.rkey, 0xabc000u + i),
			    0);
	for (int i = 0; i < 3; i++)
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
			  -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void write_imm_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct hx_ep ep;

	pair(&ep, fd, &o);
	uint32_t sz[3] = { 0, 100, 3 * ep.mtu_bytes + 7 };
	/* The receive WQEs' own buffers are never written by a WRITE with
	 * immediate: one has no SGE at all, the others a 16-byte one. */
	memset(ep.buf, 0xee, 64);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 50;
	wr.num_sge = 0;
	HX_CHECK_RC(ibv_post_recv(ep.qp, &wr, &bad), 0);
	sge.addr = (uintptr_t)ep.buf;
	sge.length = 16;
	sge.lkey = ep.mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	for (int i = 1; i < 3; i++) {
		wr.wr_id = 50 + i;
		HX_CHECK_RC(ibv_post_recv(ep.qp, &wr, &bad), 0);
	}
	hx_sync(fd);
	for (int i = 0; i < 3; i++) {
		if (!HX_EXPECT(ep.rcq, &wc, 50 + i, IBV_WC_SUCCESS,
			       IBV_WC_RECV_RDMA_WITH_IMM, sz[i]))
			continue;
		CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
		CHECK_EQ(ntohl(wc.imm_data), 0xabc000u + i);
		HX_CHECK_PATTERN(ep.buf + 65536 * (i + 1), sz[i], 9);
		CHECK_EQ(ep.buf[65536 * (i + 1) + sz[i]], 0);
	}
	int untouched = 1;
	for (int k = 0; k < 64; k++)
		untouched &= ep.buf[k] == 0xee;
	CHECK(untouched);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- RDMA READ, every size --------------------------------------------- */

static void read_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	size_t sz[NSIZES], off[NSIZES];
	struct hx_ep ep;

	o.buf_len = BIG_BUF;
	pair(&ep, fd, &o);
	layout(&ep, sz, off);
	hx_sync(fd); /* B filled its regions */
	for (int i = 0; i < NSIZES; i++)
		HX_CHECK_RC(
			hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED,
				     i, ep.buf + off[i], sz[i], ep.mr->lkey,
				     ep.peer.addr + off[i], ep.peer.rkey, 0),
			0);
	for (int i = 0; i < NSIZES; i++)
		HX_EXPECT_T(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
			    sz[i], 40000);
	for (int i = 0; i < NSIZES; i++)
		HX_CHECK_PATTERN(ep.buf + off[i], sz[i], 300 + i);
	check_canaries(ep.buf, sz, off);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void read_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	size_t sz[NSIZES], off[NSIZES];
	struct hx_ep ep;

	o.buf_len = BIG_BUF;
	pair(&ep, fd, &o);
	layout(&ep, sz, off);
	for (int i = 0; i < NSIZES; i++)
		hx_fill(ep.buf + off[i], sz[i], 300 + i);
	hx_sync(fd);
	hx_sync(fd);
	/* The source is unchanged and nothing completed at the target. */
	for (int i = 0; i < NSIZES; i++)
		HX_CHECK_PATTERN(ep.buf + off[i], sz[i], 300 + i);
	HX_EXPECT_NONE(ep.rcq, 50);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- atomics ----------------------------------------------------------- */

static void atomics_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint64_t *res;

	pair(&ep, fd, &o);
	res = (uint64_t *)(ep.buf + 4096);
	for (int i = 0; i < 4; i++)
		res[i] = 0xdeadbeefdeadbeefULL;
	hx_sync(fd);
	uint64_t r = ep.peer.addr;
	/* Compare matches: swapped; mismatch: unchanged; both return the
	 * original value. */
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_CMP_AND_SWP,
				   IBV_SEND_SIGNALED, 1, &res[0], ep.mr->lkey,
				   r + 0, ep.peer.rkey, 0x1111, 0xaaaa),
		    0);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_CMP_AND_SWP,
				   IBV_SEND_SIGNALED, 2, &res[1], ep.mr->lkey,
				   r + 8, ep.peer.rkey, 0x9999, 0xbbbb),
		    0);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 3, &res[2], ep.mr->lkey,
				   r + 16, ep.peer.rkey, 2, 0),
		    0);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 4, &res[3], ep.mr->lkey,
				   r + 24, ep.peer.rkey, 0x100000000ULL, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8);
	HX_EXPECT(ep.scq, NULL, 4, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8);
	CHECK_EQ(res[0], 0x1111);
	CHECK_EQ(res[1], 0x2222);
	CHECK_EQ(res[2], 0xffffffffffffffffULL);
	CHECK_EQ(res[3], 0);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void atomics_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint64_t *v;

	pair(&ep, fd, &o);
	v = (uint64_t *)ep.buf;
	v[0] = 0x1111;
	v[1] = 0x2222;
	v[2] = 0xffffffffffffffffULL;
	v[3] = 0;
	v[4] = 0x5555;
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(v[0], 0xaaaa);
	CHECK_EQ(v[1], 0x2222);
	CHECK_EQ(v[2], 1); /* wrapped */
	CHECK_EQ(v[3], 0x100000000ULL);
	CHECK_EQ(v[4], 0x5555);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- scatter/gather ----------------------------------------------------- */

struct seg {
	size_t off, len;
};

static const struct seg g_send[3] = { { 13, 7 },
				      { 4097, 1000 },
				      { 3 * 4096 + 3, 4999 } };
static const struct seg g_recv[4] = {
	{ 1, 13 }, { 8197, 2049 }, { 3 * 8192 + 7, 3 }, { 5 * 8192, 6000 }
};
#define SG_TOTAL (7 + 1000 + 4999)

/* Copy a gather list's bytes into one contiguous stream. */
static void gather(uint8_t *dst, const uint8_t *base, const struct seg *s,
		   int n)
{
	for (int i = 0; i < n; i++) {
		memcpy(dst, base + s[i].off, s[i].len);
		dst += s[i].len;
	}
}

/* Compare a scatter list against a stream of total bytes; the tail of
 * the last segment past total must still be zero. */
static void check_scatter(const uint8_t *base, const struct seg *s, int n,
			  const uint8_t *stream, size_t total)
{
	size_t pos = 0;

	for (int i = 0; i < n; i++) {
		size_t take = total - pos < s[i].len ? total - pos : s[i].len;

		CHECK(!memcmp(base + s[i].off, stream, take));
		for (size_t k = take; k < s[i].len; k++)
			if (base[s[i].off + k]) {
				CHECK(!"scatter wrote past the message");
				break;
			}
		stream += take;
		pos += take;
	}
}

static void fill_sges(struct ibv_sge *sge, uint8_t *base, uint32_t lkey,
		      const struct seg *s, int n)
{
	for (int i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)(base + s[i].off);
		sge[i].length = s[i].len;
		sge[i].lkey = lkey;
	}
}

static void sge_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge[4];
	uint8_t stream[SG_TOTAL];
	struct hx_ep ep;

	pair(&ep, fd, &o);
	REQUIRE(ep.cap.max_send_sge >= 4);
	hx_fill(ep.buf, 65536, 77);
	gather(stream, ep.buf, g_send, 3);

	/* SEND: 3 SGEs gathered into B's 4 receive SGEs. */
	memset(&wr, 0, sizeof(wr));
	fill_sges(sge, ep.buf, ep.mr->lkey, g_send, 3);
	wr.wr_id = 1;
	wr.sg_list = sge;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	hx_sync(fd);
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), 0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);

	/* WRITE: 3 SGEs gathered into one contiguous remote range. */
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = ep.peer.addr + 262144;
	wr.wr.rdma.rkey = ep.peer.rkey;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), 0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);

	/* READ: one contiguous remote range scattered into 4 local SGEs
	 * (B filled offset 393216 with pattern 78). */
	memset(ep.buf + 131072, 0, 65536);
	fill_sges(sge, ep.buf + 131072, ep.mr->lkey, g_recv, 4);
	wr.wr_id = 3;
	wr.num_sge = 4;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = ep.peer.addr + 393216;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), 0);
	uint32_t rlen = 0;
	for (int i = 0; i < 4; i++)
		rlen += g_recv[i].len;
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, rlen);
	uint8_t *rs = malloc(rlen);
	hx_fill(rs, rlen, 78);
	check_scatter(ep.buf + 131072, g_recv, 4, rs, rlen);
	free(rs);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void sge_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge[4];
	uint8_t stream[SG_TOTAL], *src;
	struct hx_ep ep;

	pair(&ep, fd, &o);
	REQUIRE(ep.cap.max_recv_sge >= 4);
	/* The stream A gathers: A's buffer holds pattern 77. */
	src = malloc(65536);
	hx_fill(src, 65536, 77);
	gather(stream, src, g_send, 3);
	free(src);
	hx_fill(ep.buf + 393216, 65536, 78);

	memset(&wr, 0, sizeof(wr));
	fill_sges(sge, ep.buf, ep.mr->lkey, g_recv, 4);
	wr.wr_id = 9;
	wr.sg_list = sge;
	wr.num_sge = 4;
	HX_CHECK_RC(ibv_post_recv(ep.qp, &wr, &bad), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_RECV, SG_TOTAL);
	check_scatter(ep.buf, g_recv, 4, stream, SG_TOTAL);
	hx_sync(fd);
	CHECK(!memcmp(ep.buf + 262144, stream, SG_TOTAL));
	CHECK_EQ(ep.buf[262144 + SG_TOTAL], 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- inline ------------------------------------------------------------ */

static void inline_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct hx_ep ep;
	uint8_t *priv;

	o.max_inline = 256;
	pair(&ep, fd, &o);
	REQUIRE(ep.cap.max_inline_data >= 256);
	uint32_t max = ep.cap.max_inline_data;
	hx_send_u64(fd, max);
	/* Inline data comes from unregistered memory (the lkey is not
	 * checked) and is copied at post time: overwrite it at once. */
	priv = malloc(max + 1);
	hx_fill(priv, max + 1, 31);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
				 IBV_SEND_SIGNALED | IBV_SEND_INLINE, 1, priv,
				 max, 0xdeadbeef, 0, 0, 0),
		    0);
	memset(priv, 0xcc, max + 1);
	hx_fill(priv, 100, 32);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
				 IBV_SEND_SIGNALED | IBV_SEND_INLINE, 2, priv,
				 100, 0, ep.peer.addr + 8192, ep.peer.rkey, 0),
		    0);
	memset(priv, 0xcc, 100);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
				 IBV_SEND_SIGNALED | IBV_SEND_INLINE, 3, priv,
				 0, 0, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_SEND, -1);

	/* One byte over max_inline_data: EINVAL, bad_wr at it, nothing sent. */
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)priv;
	sge.length = max + 1;
	sge.lkey = 0;
	wr.wr_id = 4;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	bad = NULL;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), EINVAL);
	CHECK(bad == &wr);
	HX_EXPECT_NONE(ep.scq, 100);
	free(priv);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void inline_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	uint32_t max = (uint32_t)hx_recv_u64(fd);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, 4096, ep.mr->lkey), 0);
	HX_CHECK_RC(hx_post_recv(&ep, 2, ep.buf + 4096, 16, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, max);
	HX_CHECK_PATTERN(ep.buf, max, 31);
	HX_EXPECT(ep.rcq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RECV, 0);
	HX_CHECK_PATTERN(ep.buf + 8192, 100, 32);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- unsignaled WRs, sq_sig_all ------------------------------------------ */

static void unsignaled_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr[11], *bad;
	struct ibv_sge sge[11];
	struct hx_ep ep;

	pair(&ep, fd, &o);
	hx_fill(ep.buf, 11 * 4096, 41);
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 11; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)ep.buf + i * 4096, 4096,
					   ep.mr->lkey };
		wr[i].wr_id = i + 1;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = i == 10 ? IBV_SEND_SIGNALED : 0;
		wr[i].wr.rdma.remote_addr = ep.peer.addr + i * 4096;
		wr[i].wr.rdma.rkey = ep.peer.rkey;
		wr[i].next = i < 10 ? &wr[i + 1] : NULL;
	}
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), 0);
	/* Exactly one completion: the signaled last WR. */
	HX_EXPECT(ep.scq, NULL, 11, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT_NONE(ep.scq, 200);
	hx_sync(fd);

	/* Unsignaled SENDs still consume B's receives, in order. */
	hx_sync(fd);
	for (int i = 0; i < 6; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
					 i == 5 ? IBV_SEND_SIGNALED : 0,
					 100 + i, ep.buf + i * 16, 16,
					 ep.mr->lkey, 0, 0, 0),
			    0);
	HX_EXPECT(ep.scq, NULL, 105, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_EXPECT_NONE(ep.scq, 100);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void unsignaled_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf, 11 * 4096, 41);
	for (int i = 0; i < 6; i++)
		HX_CHECK_RC(hx_post_recv(&ep, 200 + i, ep.buf + 65536 + i * 16,
					 16, ep.mr->lkey),
			    0);
	hx_sync(fd);
	for (int i = 0; i < 6; i++)
		HX_EXPECT(ep.rcq, NULL, 200 + i, IBV_WC_SUCCESS, IBV_WC_RECV,
			  16);
	CHECK(!memcmp(ep.buf + 65536, ep.buf, 96));
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void sig_all_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.sq_sig_all = true;
	pair(&ep, fd, &o);
	hx_fill(ep.buf, 5 * 512, 43);
	hx_sync(fd);
	/* No IBV_SEND_SIGNALED anywhere: sq_sig_all completes every WR. */
	for (int i = 0; i < 5; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0, i,
					 ep.buf + i * 512, 512, ep.mr->lkey,
					 ep.peer.addr + i * 512, ep.peer.rkey,
					 0),
			    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, 0, 5, ep.buf, 8, ep.mr->lkey,
				 0, 0, 0),
		    0);
	for (int i = 0; i < 5; i++)
		HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
			  -1);
	HX_EXPECT(ep.scq, NULL, 5, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void sig_all_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	HX_CHECK_RC(hx_post_recv(&ep, 7, ep.buf + 65536, 64, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 7, IBV_WC_SUCCESS, IBV_WC_RECV, 8);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf, 5 * 512, 43);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- IBV_SEND_FENCE ------------------------------------------------------ */
/*
 * READ remote R into local L, then a fenced WRITE from L to remote R2 (it
 * must carry the data the READ brought back), then a fenced WRITE that
 * overwrites R (the READ must have seen the old contents).  Repeated with
 * a new pattern each round.
 */
#define FENCE_LEN 65536
#define FENCE_ROUNDS 8

static void fence_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr[3], *bad;
	struct ibv_sge sge[3];
	struct hx_ep ep;
	uint8_t *L, *M;

	o.buf_len = 4u << 20;
	pair(&ep, fd, &o);
	L = ep.buf;
	M = ep.buf + FENCE_LEN;
	uint64_t R = ep.peer.addr, R2 = ep.peer.addr + 2 * FENCE_LEN;
	hx_sync(fd); /* R holds pattern 500 */
	for (int k = 0; k < FENCE_ROUNDS; k++) {
		memset(L, 0, FENCE_LEN);
		hx_fill(M, FENCE_LEN, 501 + k);
		memset(wr, 0, sizeof(wr));
		sge[0] = (struct ibv_sge){ (uintptr_t)L, FENCE_LEN,
					   ep.mr->lkey };
		sge[1] = sge[0];
		sge[2] = (struct ibv_sge){ (uintptr_t)M, FENCE_LEN,
					   ep.mr->lkey };
		for (int i = 0; i < 3; i++) {
			wr[i].wr_id = k * 10 + i;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].send_flags =
				IBV_SEND_SIGNALED | (i ? IBV_SEND_FENCE : 0);
			wr[i].wr.rdma.rkey = ep.peer.rkey;
			wr[i].next = i < 2 ? &wr[i + 1] : NULL;
		}
		wr[0].opcode = IBV_WR_RDMA_READ;
		wr[0].wr.rdma.remote_addr = R;
		wr[1].opcode = IBV_WR_RDMA_WRITE;
		wr[1].wr.rdma.remote_addr = R2 + k * FENCE_LEN;
		wr[2].opcode = IBV_WR_RDMA_WRITE;
		wr[2].wr.rdma.remote_addr = R;
		HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), 0);
		HX_EXPECT(ep.scq, NULL, k * 10 + 0, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_READ, FENCE_LEN);
		HX_EXPECT(ep.scq, NULL, k * 10 + 1, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_WRITE, -1);
		HX_EXPECT(ep.scq, NULL, k * 10 + 2, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_WRITE, -1);
		HX_CHECK_PATTERN(L, FENCE_LEN, 500 + k);
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void fence_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.buf_len = 4u << 20;
	pair(&ep, fd, &o);
	hx_fill(ep.buf, FENCE_LEN, 500);
	hx_sync(fd);
	hx_sync(fd);
	for (int k = 0; k < FENCE_ROUNDS; k++)
		HX_CHECK_PATTERN(ep.buf + (2 + k) * FENCE_LEN, FENCE_LEN,
				 500 + k);
	HX_CHECK_PATTERN(ep.buf, FENCE_LEN, 500 + FENCE_ROUNDS);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- solicited events ----------------------------------------------------- */

static void solicited_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	pair(&ep, fd, &o);
	hx_fill(ep.buf, 64, 51);
	hx_sync(fd); /* B armed its CQ for solicited completions only */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd); /* delivered (acknowledged) */
	hx_sync(fd); /* B saw no event */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
				 IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, 2,
				 ep.buf, 64, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd);
	hx_sync(fd); /* B re-armed */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE_WITH_IMM,
				 IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, 3,
				 ep.buf, 64, ep.mr->lkey, ep.peer.addr + 4096,
				 ep.peer.rkey, 77),
		    0);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void expect_event(struct hx_ep *ep, struct ibv_cq *want)
{
	struct ibv_cq *cq = NULL;
	void *cctx = (void *)1;

	CHECK(hx_wait_fd(ep->ch->fd, 5000) == 1);
	HX_CHECK_RC(ibv_get_cq_event(ep->ch, &cq, &cctx), 0);
	CHECK(cq == want);
	CHECK(cctx == NULL);
	if (cq)
		ibv_ack_cq_events(cq, 1);
}

static void solicited_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.channel = true;
	o.recv_cqe = 64;
	pair(&ep, fd, &o);
	for (int i = 0; i < 3; i++)
		HX_CHECK_RC(hx_post_recv(&ep, 10 + i, ep.buf + i * 256, 256,
					 ep.mr->lkey),
			    0);
	HX_CHECK_RC(ibv_req_notify_cq(ep.rcq, 1), 0);
	hx_sync(fd);
	hx_sync(fd);
	/* A non-solicited SEND arrived: no event, but the completion is there. */
	CHECK_EQ(hx_wait_fd(ep.ch->fd, 300), 0);
	HX_EXPECT(ep.rcq, NULL, 10, IBV_WC_SUCCESS, IBV_WC_RECV, 64);
	hx_sync(fd);
	hx_sync(fd);
	/* The solicited one wakes the channel. */
	expect_event(&ep, ep.rcq);
	HX_EXPECT(ep.rcq, NULL, 11, IBV_WC_SUCCESS, IBV_WC_RECV, 64);
	HX_CHECK_RC(ibv_req_notify_cq(ep.rcq, 1), 0);
	hx_sync(fd);
	hx_sync(fd);
	expect_event(&ep, ep.rcq);
	HX_EXPECT(ep.rcq, NULL, 12, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
		  64);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- blocking ibv_get_cq_event ------------------------------------------- */

static void cq_event_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_cq *cq = NULL;
	void *cctx = (void *)1;
	struct hx_ep ep;

	o.channel = true;
	pair(&ep, fd, &o);
	hx_sync(fd); /* B armed and is about to block */
	hx_msleep(150);
	/* A's own send completion, also through a blocking event. */
	HX_CHECK_RC(ibv_req_notify_cq(ep.scq, 0), 0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 32, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_CHECK_RC(ibv_get_cq_event(ep.ch, &cq, &cctx), 0);
	CHECK(cq == ep.scq);
	if (cq)
		ibv_ack_cq_events(cq, 1);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd); /* B re-armed */
	hx_msleep(100);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE_WITH_IMM,
				 IBV_SEND_SIGNALED, 2, ep.buf, 32, ep.mr->lkey,
				 ep.peer.addr + 4096, ep.peer.rkey, 5),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void cq_event_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_cq *cq = NULL;
	void *cctx = (void *)1;
	struct hx_ep ep;
	uint64_t t0;

	o.channel = true;
	o.recv_cqe = 16;
	pair(&ep, fd, &o);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, 64, ep.mr->lkey), 0);
	HX_CHECK_RC(hx_post_recv(&ep, 2, ep.buf, 64, ep.mr->lkey), 0);
	HX_CHECK_RC(ibv_req_notify_cq(ep.rcq, 0), 0);
	hx_sync(fd);
	t0 = hx_now_ms();
	HX_CHECK_RC(ibv_get_cq_event(ep.ch, &cq, &cctx), 0);
	/* It really blocked until A sent (A waits 150 ms first). */
	CHECK(hx_now_ms() - t0 >= 100);
	CHECK(cq == ep.rcq);
	CHECK(cctx == NULL);
	if (cq)
		ibv_ack_cq_events(cq, 1);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 32);
	HX_CHECK_RC(ibv_req_notify_cq(ep.rcq, 0), 0);
	hx_sync(fd);
	cq = NULL;
	HX_CHECK_RC(ibv_get_cq_event(ep.ch, &cq, &cctx), 0);
	CHECK(cq == ep.rcq);
	if (cq)
		ibv_ack_cq_events(cq, 1);
	HX_EXPECT(ep.rcq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
		  32);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- many outstanding READs and atomics within max_rd_atomic ------------- */

#define MR_READS 64
#define MR_ATOMICS 32
#define MR_READ_LEN 8192

static void many_reads_run_a(int fd, uint8_t depth)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr[MR_READS + MR_ATOMICS], *bad;
	struct ibv_sge sge[MR_READS + MR_ATOMICS];
	struct hx_ep ep;
	int n = 0, ai = 0;

	o.buf_len = 2u << 20;
	o.max_send_wr = 128;
	o.send_cqe = 256;
	o.max_rd_atomic = depth;
	pair(&ep, fd, &o);
	hx_sync(fd);
	memset(wr, 0, sizeof(wr));
	uint64_t *res = (uint64_t *)(ep.buf + (1u << 20) + 65536);
	for (int i = 0; i < MR_READS; i++) {
		sge[n] = (struct ibv_sge){ (uintptr_t)ep.buf + i * MR_READ_LEN,
					   MR_READ_LEN, ep.mr->lkey };
		wr[n].opcode = IBV_WR_RDMA_READ;
		wr[n].wr.rdma.remote_addr = ep.peer.addr + i * MR_READ_LEN;
		wr[n].wr.rdma.rkey = ep.peer.rkey;
		wr[n].wr_id = n;
		n++;
		if (i % 2 == 1) {
			sge[n] = (struct ibv_sge){ (uintptr_t)&res[ai], 8,
						   ep.mr->lkey };
			wr[n].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr[n].wr.atomic.remote_addr = ep.peer.addr + (1u << 20);
			wr[n].wr.atomic.rkey = ep.peer.rkey;
			wr[n].wr.atomic.compare_add = 1;
			wr[n].wr_id = n;
			n++;
			ai++;
		}
	}
	for (int i = 0; i < n; i++) {
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), 0);
	for (int i = 0; i < n; i++) {
		if (wr[i].opcode == IBV_WR_RDMA_READ)
			HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS,
				  IBV_WC_RDMA_READ, MR_READ_LEN);
		else
			HX_EXPECT(ep.scq, NULL, i, IBV_WC_SUCCESS,
				  IBV_WC_FETCH_ADD, 8);
	}
	HX_CHECK_PATTERN(ep.buf, MR_READS * MR_READ_LEN, 61);
	/* Atomics from one QP execute in order: 0, 1, 2, ... */
	for (int i = 0; i < MR_ATOMICS; i++)
		CHECK_EQ(res[i], i);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void many_reads_run_b(int fd, uint8_t depth)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.buf_len = 2u << 20;
	o.max_dest_rd_atomic = depth;
	pair(&ep, fd, &o);
	hx_fill(ep.buf, MR_READS * MR_READ_LEN, 61);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(*(uint64_t *)(ep.buf + (1u << 20)), MR_ATOMICS);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void many_reads_a(int fd)
{
	many_reads_run_a(fd, 4);
}
static void many_reads_b(int fd)
{
	many_reads_run_b(fd, 4);
}
static void many_reads_depth1_a(int fd)
{
	many_reads_run_a(fd, 1);
}
static void many_reads_depth1_b(int fd)
{
	many_reads_run_b(fd, 1);
}

/* ---- PSN wrap: both directions start just below 2^24 --------------------- */

static void psn_wrap_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.buf_len = 4u << 20;
	o.psn = 0xfffff0;
	pair(&ep, fd, &o);
	hx_fill(ep.buf, 1u << 20, 71);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 1u << 20, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 2,
				 ep.buf, 1u << 20, ep.mr->lkey,
				 ep.peer.addr + (2u << 20), ep.peer.rkey, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 3,
				 ep.buf + (2u << 20), 1u << 20, ep.mr->lkey,
				 ep.peer.addr + (1u << 20), ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 1u << 20);
	HX_CHECK_PATTERN(ep.buf + (2u << 20), 1u << 20, 72);
	/* And B -> A across B's wrap. */
	HX_CHECK_RC(hx_post_recv(&ep, 4, ep.buf + (3u << 20), 1u << 20,
				 ep.mr->lkey),
		    0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 4, IBV_WC_SUCCESS, IBV_WC_RECV, 1u << 20);
	HX_CHECK_PATTERN(ep.buf + (3u << 20), 1u << 20, 73);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void psn_wrap_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.buf_len = 4u << 20;
	o.psn = 0xffffff;
	pair(&ep, fd, &o);
	hx_fill(ep.buf + (1u << 20), 1u << 20, 72);
	hx_fill(ep.buf + (3u << 20), 1u << 20, 73);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, 1u << 20, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 1u << 20);
	HX_CHECK_PATTERN(ep.buf, 1u << 20, 71);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 9,
				 ep.buf + (3u << 20), 1u << 20, ep.mr->lkey, 0,
				 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf + (2u << 20), 1u << 20, 71);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- tclass: the QP's traffic class -------------------------------------
 *
 * Both QPs carry ah_attr.grh.traffic_class 0xb8 (DSCP 46): ibv_query_qp
 * reports it, and a SEND, a WRITE and a READ of several packets each go
 * through.  With HX_NETNS_A/B (tclass_wire.sh) each side enters its
 * namespace and uses HX_ADDR_A/B; that script reads the TOS of every
 * packet on the veth, requests and responses. */

#define RC_TC 0xb8

static void tclass_open(struct hx_ep *ep, int fd, bool b)
{
	struct hx_opts o = hx_opts_default();
	const char *ns = getenv(b ? "HX_NETNS_B" : "HX_NETNS_A");
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;

	if (ns && *ns) {
		hx_enter_netns(ns);
		o.gid_addr = getenv(b ? "HX_ADDR_B" : "HX_ADDR_A");
	}
	o.tclass = RC_TC;
	pair(ep, fd, &o);
	CHECK(ibv_query_qp(ep->qp, &qa, IBV_QP_AV, &qi) == 0);
	CHECK_EQ(qa.ah_attr.grh.traffic_class, RC_TC);
}

static void tclass_a(int fd)
{
	struct hx_ep ep;
	uint32_t len;

	tclass_open(&ep, fd, false);
	len = 3 * ep.mtu_bytes + 100;
	hx_fill(ep.buf, len, 81);
	hx_sync(fd);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 len, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 2,
				 ep.buf, len, ep.mr->lkey,
				 ep.peer.addr + (256u << 10), ep.peer.rkey, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 3,
				 ep.buf + (512u << 10), len, ep.mr->lkey,
				 ep.peer.addr + (128u << 10), ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, len);
	HX_CHECK_PATTERN(ep.buf + (512u << 10), len, 82);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void tclass_b(int fd)
{
	struct hx_ep ep;
	uint32_t len;

	tclass_open(&ep, fd, true);
	len = 3 * ep.mtu_bytes + 100;
	hx_fill(ep.buf + (128u << 10), len, 82);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, len, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, len);
	HX_CHECK_PATTERN(ep.buf, len, 81);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf + (256u << 10), len, 81);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- every opcode once (also the traffic of the capture test) ------------ */
/*
 * With $HX_PORTS_FILE set, A writes the UDP ports of both QPs (QPN >> 8)
 * there and waits for $HX_GO_FILE to exist before sending, so that a
 * capture can start on exactly those ports (rc_capture.sh).
 */
static void all_opcodes_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	const char *pf = getenv("HX_PORTS_FILE"), *go = getenv("HX_GO_FILE");
	struct hx_ep ep;
	uint32_t m;

	pair(&ep, fd, &o);
	m = ep.mtu_bytes;
	if (pf && go) {
		FILE *f = fopen(pf, "w");

		REQUIRE(f);
		fprintf(f, "%u %u\n", ep.qp->qp_num >> 8, ep.peer.qpn >> 8);
		fclose(f);
		uint64_t end = hx_now_ms() + 20000;
		while (access(go, F_OK) && hx_now_ms() < end)
			hx_msleep(20);
		REQUIRE(access(go, F_OK) == 0);
	}
	hx_fill(ep.buf, 8 * m, 81);
	hx_sync(fd);
	uint64_t *res = (uint64_t *)(ep.buf + 16 * m);
	/* SEND Only, SEND Only with Immediate */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 100, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND_WITH_IMM, IBV_SEND_SIGNALED,
				 2, ep.buf, 100, ep.mr->lkey, 0, 0, 42),
		    0);
	/* RDMA WRITE First/Middle/Last (3 packets) and Only */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 3,
				 ep.buf, 2 * m + 100, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE_WITH_IMM,
				 IBV_SEND_SIGNALED, 4, ep.buf, 64, ep.mr->lkey,
				 ep.peer.addr + 4 * m, ep.peer.rkey, 43),
		    0);
	/* RDMA READ Request, Response First/Middle/Last */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 5,
				 ep.buf + 8 * m, 3 * m - 5, ep.mr->lkey,
				 ep.peer.addr + 8 * m, ep.peer.rkey, 0),
		    0);
	/* Compare Swap, Fetch Add (Atomic Acknowledge) */
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_CMP_AND_SWP,
				   IBV_SEND_SIGNALED, 6, &res[0], ep.mr->lkey,
				   ep.peer.addr + 12 * m, ep.peer.rkey, 0, 5),
		    0);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 7, &res[1], ep.mr->lkey,
				   ep.peer.addr + 12 * m, ep.peer.rkey, 10, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep.scq, NULL, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep.scq, NULL, 5, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 3 * m - 5);
	HX_EXPECT(ep.scq, NULL, 6, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8);
	HX_EXPECT(ep.scq, NULL, 7, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8);
	/* IBA 1.5 ATOMIC WRITE (8 bytes inline) */
	uint64_t aw = 0x0123456789abcdefULL;
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_ATOMIC_WRITE,
				 IBV_SEND_SIGNALED | IBV_SEND_INLINE, 8, &aw, 8,
				 0, ep.peer.addr + 12 * m + 16, ep.peer.rkey,
				 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 8, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8);
	HX_CHECK_PATTERN(ep.buf + 8 * m, 3 * m - 5, 82);
	CHECK_EQ(res[0], 0);
	CHECK_EQ(res[1], 5);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void all_opcodes_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint32_t m;

	pair(&ep, fd, &o);
	m = ep.mtu_bytes;
	hx_fill(ep.buf + 8 * m, 3 * m, 82);
	for (int i = 0; i < 3; i++)
		HX_CHECK_RC(hx_post_recv(&ep, 10 + i, ep.buf + (20 + i) * m, m,
					 ep.mr->lkey),
			    0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 10, IBV_WC_SUCCESS, IBV_WC_RECV, 100);
	HX_EXPECT(ep.rcq, NULL, 11, IBV_WC_SUCCESS, IBV_WC_RECV, 100);
	HX_EXPECT(ep.rcq, NULL, 12, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
		  64);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf, 2 * m + 100, 81);
	HX_CHECK_PATTERN(ep.buf + 4 * m, 64, 81);
	HX_CHECK_PATTERN(ep.buf + 20 * m, 100, 81);
	CHECK_EQ(*(uint64_t *)(ep.buf + 12 * m), 15);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = { HX_CASE(send_recv, 60),
					HX_CASE(send_imm, 20),
					HX_CASE(write, 60),
					HX_CASE(write_imm, 20),
					HX_CASE(read, 60),
					HX_CASE(atomics, 20),
					HX_CASE(sge, 20),
					HX_CASE(inline, 20),
					HX_CASE(unsignaled, 20),
					HX_CASE(sig_all, 20),
					HX_CASE(fence, 30),
					HX_CASE(solicited, 20),
					HX_CASE(cq_event, 20),
					HX_CASE(many_reads, 30),
					HX_CASE(many_reads_depth1, 30),
					HX_CASE(psn_wrap, 30),
					HX_CASE(all_opcodes, 30),
					HX_CASE(tclass, 30),
					{ 0 } };

HX_MAIN(cases)
