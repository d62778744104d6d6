/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ibv_import_device / ibv_import_pd / ibv_import_mr with a peer's traffic.
 *
 *   shared_pd: A opens a context, a PD and an MR, then imports all three
 *              into a second context (a dup of cmd_fd) and connects a QP of
 *              that second context, on the imported PD, to B.  Before the
 *              import B's WRITE reaches the region through A's first QP;
 *              after it, A SENDs from the region with the imported MR's
 *              lkey, B WRITEs into it and READs from it with the R_Key of
 *              the original registration, and the bytes are compared on
 *              both sides.  The imported handles are then unimported, the
 *              original objects destroyed and both contexts closed.
 *   foreign:   A passes its cmd_fd to B (SCM_RIGHTS): another process's
 *              context cannot be imported (EOPNOTSUPP), a closed fd is
 *              EBADF.
 */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static void pair(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static void rdma(struct hx_ep *ep, enum ibv_wr_opcode op, uint64_t id,
		 void *laddr, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	HX_CHECK_RC(hx_post_send(ep, op, IBV_SEND_SIGNALED, id, laddr, len,
				 ep->mr->lkey, raddr, rkey, 0),
		    0);
	HX_EXPECT(ep->scq, NULL, id, IBV_WC_SUCCESS,
		  op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ :
		  op == IBV_WR_SEND	 ? IBV_WC_SEND :
					   IBV_WC_RDMA_WRITE,
		  len);
}

static void shared_pd_a(int fd)
{
	struct hx_ep ep;
	struct ibv_context *ctx2;
	struct ibv_pd *pd1, *pd2;
	struct ibv_mr *mr1, *mr2;
	struct ibv_cq *cq1, *cq2;

	pair(&ep, fd);
	hx_sync(fd); /* B's WRITE through the first context's QP */
	HX_CHECK_PATTERN(ep.buf, 4096, 1);

	ctx2 = ibv_import_device(dup(ep.ctx->cmd_fd));
	REQUIRE(ctx2);
	pd2 = ibv_import_pd(ctx2, ep.pd->handle);
	REQUIRE(pd2);
	mr2 = ibv_import_mr(pd2, ep.mr->handle);
	REQUIRE(mr2);
	CHECK_EQ(mr2->rkey, ep.mr->rkey);
	cq2 = ibv_create_cq(ctx2, 64, NULL, NULL, 0);
	REQUIRE(cq2);
	pd1 = ep.pd;
	mr1 = ep.mr;
	cq1 = ep.scq;
	ep.pd = pd2;
	ep.mr = mr2;
	ep.scq = ep.rcq = cq2;
	hx_ep_new_qp(&ep); /* on the second context, the imported PD */
	CHECK(ep.qp->context == ctx2);
	hx_ep_connect(&ep);

	hx_fill(ep.buf + 8192, 4096, 2);
	rdma(&ep, IBV_WR_SEND, 1, ep.buf + 8192, 4096, 0, 0);
	hx_sync(fd); /* B WRITEs and READs */
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf + 16384, 4096, 3);

	CHECK_EQ(ibv_destroy_qp(ep.qp), 0);
	CHECK_EQ(ibv_destroy_cq(cq2), 0);
	ibv_unimport_mr(mr2);
	ibv_unimport_pd(pd2);
	CHECK_EQ(ibv_close_device(ctx2), 0);
	ep.qp = NULL;
	ep.pd = pd1;
	ep.mr = mr1;
	ep.scq = ep.rcq = cq1;
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void shared_pd_b(int fd)
{
	struct hx_ep ep;

	pair(&ep, fd);
	hx_fill(ep.buf, 4096, 1);
	rdma(&ep, IBV_WR_RDMA_WRITE, 1, ep.buf, 4096, ep.peer.addr,
	     ep.peer.rkey);
	hx_sync(fd);
	/* A's new QP on the imported PD */
	hx_ep_new_qp(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 7, ep.buf + 65536, 4096, ep.mr->lkey), 0);
	hx_ep_connect(&ep);
	HX_EXPECT(ep.rcq, NULL, 7, IBV_WC_SUCCESS, IBV_WC_RECV, 4096);
	HX_CHECK_PATTERN(ep.buf + 65536, 4096, 2);
	hx_sync(fd);
	hx_fill(ep.buf, 4096, 3);
	rdma(&ep, IBV_WR_RDMA_WRITE, 2, ep.buf, 4096, ep.peer.addr + 16384,
	     ep.peer.rkey);
	memset(ep.buf + 131072, 0, 4096);
	rdma(&ep, IBV_WR_RDMA_READ, 3, ep.buf + 131072, 4096,
	     ep.peer.addr + 8192, ep.peer.rkey);
	HX_CHECK_PATTERN(ep.buf + 131072, 4096, 2);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void send_fd(int sock, int fd)
{
	char c = 'f';
	struct iovec iov = { &c, 1 };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.b,
			    .msg_controllen = sizeof(u.b) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);

	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	if (sendmsg(sock, &m, 0) != 1)
		hx_die("sendmsg SCM_RIGHTS");
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = { &c, 1 };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.b,
			    .msg_controllen = sizeof(u.b) };
	struct cmsghdr *h;
	int fd = -1;

	if (recvmsg(sock, &m, 0) != 1)
		hx_die("recvmsg SCM_RIGHTS");
	h = CMSG_FIRSTHDR(&m);
	if (h && h->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(h), sizeof(int));
	return fd;
}

static void foreign_a(int fd)
{
	struct hx_ep ep;

	pair(&ep, fd);
	send_fd(fd, ep.ctx->cmd_fd);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void foreign_b(int fd)
{
	struct hx_ep ep;
	int theirs;

	pair(&ep, fd);
	theirs = recv_fd(fd);
	REQUIRE(theirs >= 0);
	errno = 0;
	CHECK(ibv_import_device(theirs) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(close(theirs), 0); /* a failed import leaves it ours */
	errno = 0;
	CHECK(ibv_import_device(theirs) == NULL);
	CHECK_EQ(errno, EBADF);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(shared_pd, 30),
	HX_CASE(foreign, 30),
	{ 0 },
};

HX_MAIN(cases)
