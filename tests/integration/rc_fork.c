/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A forked child and its parent's QP (issue #37): rdma-core's objects are
 * the process's that made them, and a child that posts on its parent's QP
 * gets an error it can act on (EINVAL, a warning saying why, *bad_wr at
 * the first WR), not a SIGSEGV (the shared-memory path's published table
 * is MADV_DONTFORK) nor packets sent in its parent's name.  The parent's
 * QP is untouched: its SEND afterwards is the only message B receives.
 *
 *   child_post  A forks a child that posts a SEND (twice: WRITE first on
 *               the chain), a receive and an SRQ receive on A's objects;
 *               it exits 0 if each was refused with EINVAL.  A then sends
 *               64 bytes, B checks them and that nothing else arrived.
 *
 * A has threads when it forks (its progress thread); the child starts
 * none, so a sanitizer's rule against threads after such a fork holds.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MSG 64

static int child_posts(struct hx_ep *ep, struct ibv_srq *srq)
{
	struct ibv_sge sge = { (uintptr_t)ep->buf, MSG, ep->mr->lkey };
	struct ibv_send_wr w1 = { .wr_id = 1,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr w0 = w1, *bad = NULL;
	struct ibv_recv_wr r = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *rbad = NULL;

	w0.wr_id = 0;
	w0.opcode = IBV_WR_RDMA_WRITE;
	w0.wr.rdma.remote_addr = ep->peer.addr;
	w0.wr.rdma.rkey = ep->peer.rkey;
	w0.next = &w1;
	hx_fill(ep->buf, MSG, 66);
	CHECK_EQ(ibv_post_send(ep->qp, &w1, &bad), EINVAL);
	CHECK(bad == &w1);
	bad = NULL;
	CHECK_EQ(ibv_post_send(ep->qp, &w0, &bad), EINVAL);
	CHECK(bad == &w0);
	CHECK_EQ(ibv_post_recv(ep->qp, &r, &rbad), EINVAL);
	CHECK(rbad == &r);
	rbad = NULL;
	CHECK_EQ(ibv_post_srq_recv(srq, &r, &rbad), EINVAL);
	CHECK(rbad == &r);
	fflush(stderr);
	return check_failed ? 1 : 0;
}

static void child_post_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq;
	struct hx_ep ep;
	pid_t pid;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	srq = ibv_create_srq(ep.pd, &sa);
	REQUIRE(srq);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child_posts(&ep, srq));
	/* Its exit status: 0 when every post was refused; a signal (the
	 * SIGSEGV of old) or 1 otherwise. */
	CHECK_EQ(hx_wait(pid, 10), 0);
	hx_fill(ep.buf, MSG, 77);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 9, ep.buf,
				 MSG, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_SEND, MSG);
	HX_EXPECT_NONE(ep.scq, 200);
	hx_sync(fd);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void child_post_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf + 4096, MSG, ep.mr->lkey), 0);
	HX_CHECK_RC(hx_post_recv(&ep, 2, ep.buf + 8192, MSG, ep.mr->lkey), 0);
	hx_ep_connect(&ep);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, MSG);
	HX_CHECK_PATTERN(ep.buf + 4096, MSG, 77);
	/* Neither the child's SEND nor its WRITE arrived. */
	HX_EXPECT_NONE(ep.rcq, 200);
	{
		uint8_t zero[MSG] = { 0 };

		CHECK(!memcmp(ep.buf, zero, MSG));
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* clang-format off */
static const struct hx_case cases[] = {
	HX_CASE(child_post, 30),
	{ NULL, NULL, NULL, 0 },
};
/* clang-format on */

HX_MAIN(cases)
