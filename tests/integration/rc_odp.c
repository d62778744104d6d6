/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * On-demand paging between two processes: B's memory is fresh anonymous
 * pages that nobody touched (not resident), registered on demand, once
 * explicitly and once implicitly (address NULL, length SIZE_MAX); A's
 * local buffers are on-demand too.
 *
 *   explicit: A WRITEs into B's region, READs it back, does a
 *             fetch-and-add and a compare-and-swap in it, and SENDs into a
 *             receive posted in it; bytes and results compared on both
 *             sides, and the pages touched are resident afterwards;
 *   implicit: the same through B's implicit registration, at addresses of
 *             two separate mappings of B (one R_Key reaches both).
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

#define PAGES 16
#define PG 4096u

struct odp_where {
	uint64_t addr[2]; /* two places in B's memory */
	uint32_t rkey;
};

static void pair(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static uint8_t *fresh(void)
{
	void *p = mmap(NULL, PAGES * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		hx_die("mmap");
	return p;
}

static size_t resident(void *p)
{
	unsigned char v[PAGES];
	size_t i, r = 0;

	if (mincore(p, PAGES * PG, v))
		hx_die("mincore");
	for (i = 0; i < PAGES; i++)
		r += v[i] & 1;
	return r;
}

static const unsigned int odp_access =
	IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
	IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
	IBV_ACCESS_REMOTE_ATOMIC;

/* A: every operation at w.addr[k], from an on-demand local buffer. */
static void traffic_a(struct hx_ep *ep, const struct odp_where *w)
{
	uint8_t *mine = fresh();
	struct ibv_mr *lmr = ibv_reg_mr(ep->pd, mine, PAGES * PG, odp_access);
	uint64_t *res = (uint64_t *)(void *)(mine + 8 * PG);
	uint64_t id = 1;
	int k;

	REQUIRE(lmr);
	CHECK_EQ(resident(mine), 0);
	for (k = 0; k < 2; k++) {
		hx_fill(mine, 2 * PG, 10 + k);
		HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, id, mine, 2 * PG,
					 lmr->lkey, w->addr[k], w->rkey, 0),
			    0);
		HX_EXPECT(ep->scq, NULL, id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
			  2 * PG);
		id++;
		memset(mine + 4 * PG, 0, 2 * PG);
		HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_READ,
					 IBV_SEND_SIGNALED, id, mine + 4 * PG,
					 2 * PG, lmr->lkey, w->addr[k], w->rkey,
					 0),
			    0);
		HX_EXPECT(ep->scq, NULL, id, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
			  2 * PG);
		HX_CHECK_PATTERN(mine + 4 * PG, 2 * PG, 10 + k);
		id++;
		/* the word B set to 1000 + k at addr + 3 pages */
		HX_CHECK_RC(hx_post_atomic(ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
					   IBV_SEND_SIGNALED, id, res,
					   lmr->lkey, w->addr[k] + 3 * PG,
					   w->rkey, 5, 0),
			    0);
		HX_EXPECT(ep->scq, NULL, id, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD,
			  8);
		CHECK_EQ(*res, 1000 + k);
		id++;
		HX_CHECK_RC(hx_post_atomic(ep, IBV_WR_ATOMIC_CMP_AND_SWP,
					   IBV_SEND_SIGNALED, id, res,
					   lmr->lkey, w->addr[k] + 3 * PG,
					   w->rkey, 1005 + k, 77),
			    0);
		HX_EXPECT(ep->scq, NULL, id, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP,
			  8);
		CHECK_EQ(*res, 1005 + k);
		id++;
		hx_fill(mine + 6 * PG, PG, 20 + k);
		HX_CHECK_RC(hx_post_send(ep, IBV_WR_SEND, IBV_SEND_SIGNALED, id,
					 mine + 6 * PG, PG, lmr->lkey, 0, 0, 0),
			    0);
		HX_EXPECT(ep->scq, NULL, id, IBV_WC_SUCCESS, IBV_WC_SEND, PG);
		id++;
	}
	hx_sync(ep->fd);
	CHECK_EQ(ibv_dereg_mr(lmr), 0);
	munmap(mine, PAGES * PG);
}

/* B: the receives and the atomic words at each place, then the check. */
static void traffic_b(struct hx_ep *ep, struct odp_where *w, struct ibv_mr *mr,
		      uint8_t *const place[2])
{
	int k;

	for (k = 0; k < 2; k++) {
		*(uint64_t *)(void *)(place[k] + 3 * PG) = 1000 + k;
		HX_CHECK_RC(hx_post_recv(ep, 50 + k, place[k] + 5 * PG, PG,
					 mr->lkey),
			    0);
	}
	hx_send(ep->fd, w, sizeof(*w));
	for (k = 0; k < 2; k++) {
		HX_EXPECT(ep->rcq, NULL, 50 + k, IBV_WC_SUCCESS, IBV_WC_RECV,
			  PG);
		HX_CHECK_PATTERN(place[k] + 5 * PG, PG, 20 + k);
	}
	hx_sync(ep->fd);
	for (k = 0; k < 2; k++) {
		HX_CHECK_PATTERN(place[k], 2 * PG, 10 + k);
		CHECK_EQ(*(uint64_t *)(void *)(place[k] + 3 * PG), 77);
	}
}

static void explicit_a(int fd)
{
	struct hx_ep ep;
	struct odp_where w;

	pair(&ep, fd);
	hx_recv(fd, &w, sizeof(w));
	traffic_a(&ep, &w);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void explicit_b(int fd)
{
	struct hx_ep ep;
	uint8_t *mem = fresh();
	uint8_t *place[2] = { mem, mem + 8 * PG };
	struct ibv_mr *mr;
	struct odp_where w;

	pair(&ep, fd);
	mr = ibv_reg_mr(ep.pd, mem, PAGES * PG, odp_access);
	REQUIRE(mr);
	CHECK_EQ(resident(mem), 0); /* nothing pinned or touched */
	w.addr[0] = (uintptr_t)place[0];
	w.addr[1] = (uintptr_t)place[1];
	w.rkey = mr->rkey;
	traffic_b(&ep, &w, mr, place);
	CHECK(resident(mem) >= 8);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
	munmap(mem, PAGES * PG);
}

static void implicit_a(int fd)
{
	explicit_a(fd);
}

static void implicit_b(int fd)
{
	struct hx_ep ep;
	uint8_t *m1 = fresh(), *m2 = fresh();
	uint8_t *place[2] = { m1, m2 };
	struct ibv_mr *mr;
	struct odp_where w;

	pair(&ep, fd);
	mr = ibv_reg_mr(ep.pd, NULL, SIZE_MAX, odp_access);
	REQUIRE(mr);
	w.addr[0] = (uintptr_t)m1;
	w.addr[1] = (uintptr_t)m2;
	w.rkey = mr->rkey;
	traffic_b(&ep, &w, mr, place);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
	munmap(m1, PAGES * PG);
	munmap(m2, PAGES * PG);
}

static const struct hx_case cases[] = {
	HX_CASE(explicit, 30),
	HX_CASE(implicit, 30),
	{ 0 },
};

HX_MAIN(cases)
