/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Device memory between two processes: B allocates device memory, fills
 * part of it with ibv_memcpy_to_dm and registers it with ibv_reg_dm_mr
 * (zero-based: the peer addresses it from 0).  A reads it with RDMA READ,
 * writes into it with RDMA WRITE and adds to a word of it with FETCH_AND_ADD;
 * B reads the results back with ibv_memcpy_from_dm, and sends A a message
 * straight from device memory (a local SGE, zero-based too).  Every byte
 * and completion is checked.
 */
#include "harness.h"

#define DM_LEN (64 * 1024)
/* The MR starts here in the device memory: not at a page boundary, which
 * device memory does not have (mlx5 registers any offset). */
#define MR_OFF (4096 + 64)
#define MR_LEN (32 * 1024)
#define RD_LEN 8192 /* READ: MR bytes 0.. */
#define WR_AT 16384 /* WRITE: MR bytes 16K.. */
#define WR_LEN 8192
#define FA_AT 24576 /* FETCH_AND_ADD: the word at MR byte 24K */
#define MSG_AT 28672 /* SEND from here */
#define MSG_LEN 1000

static void dm_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint32_t rkey;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 50, ep.buf + 200000, MSG_LEN,
				 ep.mr->lkey),
		    0);
	rkey = (uint32_t)hx_recv_u64(fd);
	/* READ what B put there, at MR address 0 */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 1,
				 ep.buf, RD_LEN, ep.mr->lkey, 0, rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, RD_LEN);
	CHECK_EQ(hx_verify(ep.buf, RD_LEN, 31), -1);
	/* WRITE into it */
	hx_fill(ep.buf + 65536, WR_LEN, 32);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 2,
				 ep.buf + 65536, WR_LEN, ep.mr->lkey, WR_AT,
				 rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	/* an atomic on a word of it */
	uint64_t *res = (uint64_t *)(ep.buf + 131072);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 3, res, ep.mr->lkey,
				   FA_AT, rkey, 5, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8);
	CHECK(*res == 1000);
	hx_sync(fd); /* our operations are over: B checks */
	hx_sync(fd); /* B checked; it sends from device memory */
	HX_EXPECT(ep.rcq, NULL, 50, IBV_WC_SUCCESS, IBV_WC_RECV, MSG_LEN);
	CHECK_EQ(hx_verify(ep.buf + 200000, MSG_LEN, 33), -1);
	hx_sync(fd);
	/* beyond the MR: a remote access error, as for any MR */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 4,
				 ep.buf, 64, ep.mr->lkey, MR_LEN - 32, rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 4, IBV_WC_REM_ACCESS_ERR, -1, -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void dm_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_alloc_dm_attr da = { .length = DM_LEN };
	uint8_t *tmp = malloc(MR_LEN);
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	struct hx_ep ep;
	uint64_t word = 1000;

	REQUIRE(tmp);
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	dm = ibv_alloc_dm(ep.ctx, &da);
	REQUIRE(dm);
	hx_fill(tmp, RD_LEN, 31);
	HX_CHECK_RC(ibv_memcpy_to_dm(dm, MR_OFF, tmp, RD_LEN), 0);
	HX_CHECK_RC(ibv_memcpy_to_dm(dm, MR_OFF + FA_AT, &word, 8), 0);
	hx_fill(tmp, MSG_LEN, 33);
	HX_CHECK_RC(ibv_memcpy_to_dm(dm, MR_OFF + MSG_AT, tmp, MSG_LEN), 0);
	mr = ibv_reg_dm_mr(ep.pd, dm, MR_OFF, MR_LEN,
			   IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	REQUIRE(mr);
	hx_send_u64(fd, mr->rkey);
	hx_sync(fd);
	/* A's WRITE and FETCH_AND_ADD, read back through the copy verb */
	HX_CHECK_RC(ibv_memcpy_from_dm(tmp, dm, MR_OFF + WR_AT, WR_LEN), 0);
	CHECK_EQ(hx_verify(tmp, WR_LEN, 32), -1);
	HX_CHECK_RC(ibv_memcpy_from_dm(&word, dm, MR_OFF + FA_AT, 8), 0);
	CHECK(word == 1005);
	/* the bytes around the WRITE are untouched */
	HX_CHECK_RC(ibv_memcpy_from_dm(tmp, dm, MR_OFF, RD_LEN), 0);
	CHECK_EQ(hx_verify(tmp, RD_LEN, 31), -1);
	hx_sync(fd);
	/* a SEND whose gather list is device memory: zero-based address */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 60,
				 (void *)(uintptr_t)MSG_AT, MSG_LEN, mr->lkey,
				 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 60, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd);
	hx_sync(fd); /* A's failed READ is over */
	CHECK_EQ(ibv_free_dm(dm), EBUSY);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_free_dm(dm), 0);
	free(tmp);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = { HX_CASE(dm, 30), { 0 } };

HX_MAIN(cases)
