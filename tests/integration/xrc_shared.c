/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * An XRC domain shared by processes through its file (issue #18): the
 * target QP and the XRC SRQ a request names belong to different
 * processes.  Three processes:
 *   A  the initiator (XRC_SEND QP);
 *   B  the target QP (XRC_RECV) and an XRC SRQ of its own, in the domain
 *      of a file it creates;
 *   C  (B's child) an XRC SRQ in the same domain, opened through the file.
 * Asserted end to end:
 *   deliver: SENDs through B's target QP into C's SRQ (one packet, several
 *     packets with immediate, zero bytes) and into B's SRQ, interleaved on
 *     one connection: each lands in the SRQ it names, completes on that
 *     SRQ's CQ in its own process with the target QP's number and A's QP
 *     as source, the bytes compared; a zero-byte RDMA WRITE with
 *     immediate consumes a receive of C's; A's requests all succeed;
 *   rdma_refused: an RDMA WRITE naming C's SRQ (memory of C's PD, in C)
 *     completes with IBV_WC_REM_ACCESS_ERR, C's memory untouched;
 *   rnr: C's SRQ is empty - nothing completes at A or C; after C posts a
 *     receive the message arrives (RNR retried) with its bytes;
 *   rnr_exceeded: the same with rnr_retry 0: A's send completes with
 *     IBV_WC_RNR_RETRY_EXC_ERR (the RNR NAK came back), nothing at C;
 *   owner_exits: C receives one message and exits; the next request for
 *     its SRQ completes at A with IBV_WC_REM_INV_REQ_ERR and the target QP
 *     goes to ERR (as for an SRQ number no one has): nothing hangs;
 *   other_user (root only): C runs as another user (test user 1, an
 *     ordinary account made with useradd, never nobody) and opens the same
 *     file, B as test user 2; C's SRQ is not part of B's domain: A's
 *     request is refused (IBV_WC_REM_INV_REQ_ERR), C's receive stays
 *     posted;
 *   other_user_unmapped: the same with C in a user namespace that maps
 *     no uid (`unshare --user`): there C's uid and B's both show as the
 *     overflow uid, and C must still refuse B's requests (issue #37);
 *   other_user_run: the same with C in a user namespace that maps its own
 *     uid to itself, as `softverbs run` makes for an ordinary user;
 *   domain_life: the file's domain exists while any process has it open,
 *     as the kernel's XRCD: EAGAIN without O_CREAT before the first open
 *     and after the last close anywhere, EINVAL with O_EXCL while another
 *     process has it, joined without O_CREAT.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xqp.h"

/* What B tells A. */
struct xinfo {
	uint32_t qpn; /* the target QP */
	uint32_t psn;
	uint32_t srqn_b, srqn_c;
	uint64_t addr_c; /* C's region on its SRQ's PD */
	uint32_t rkey_c;
};

/* What C tells B. */
struct csrq {
	uint32_t srqn;
	uint32_t rkey;
	uint64_t addr;
};

/* What B tells C. */
struct cinfo {
	char path[64];
	uint32_t tgt_qpn, ini_qpn;
	uint32_t mtu_bytes;
	int other_user;
};

static struct hx_opts opts(void)
{
	struct hx_opts o = hx_opts_default();

	o.recv_cqe = 256;
	return o;
}

static int c_done(void)
{
	printf("[%s] ", hx_role);
	return check_done();
}

/* ---- A ------------------------------------------------------------------- */

struct aside {
	struct hx_ep ep;
	struct ibv_qp *ini;
	struct xinfo x;
};

static void a_setup(struct aside *s, int fd, uint8_t rnr_retry)
{
	struct hx_opts o = opts();
	struct ibv_qp_init_attr_ex ia;
	uint32_t me[2];

	hx_ep_open(&s->ep, &o, fd);
	hx_ep_exchange(&s->ep);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = s->ep.scq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_send_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = s->ep.pd;
	s->ini = ibv_create_qp_ex(s->ep.ctx, &ia);
	if (!s->ini)
		hx_die("XRC_SEND QP: %s", strerror(errno));
	me[0] = s->ini->qp_num;
	me[1] = (uint32_t)lrand48() & 0xffffff;
	hx_send(fd, me, sizeof(me));
	hx_recv(fd, &s->x, sizeof(s->x));
	xq_xrc_connect(&s->ep, s->ini, s->x.qpn, s->x.psn, me[1], rnr_retry);
	hx_sync(fd);
}

/* A request of len bytes at offset off of A's buffer (pattern seed) to
 * SRQ srqn: a SEND (with immediate 0xabc), or op towards C's region. */
static int a_post(struct aside *s, enum ibv_wr_opcode op, uint64_t wr_id,
		  size_t off, uint32_t len, uint64_t seed, uint32_t srqn)
{
	struct ibv_sge sge = { (uintptr_t)(s->ep.buf + off), len,
			       s->ep.mr->lkey };
	struct ibv_send_wr wr, *bad;

	hx_fill(s->ep.buf + off, len, seed);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.imm_data = htonl(0xabc);
	wr.wr.rdma.remote_addr = s->x.addr_c;
	wr.wr.rdma.rkey = s->x.rkey_c;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = srqn;
	return ibv_post_send(s->ini, &wr, &bad);
}

static int a_send(struct aside *s, uint64_t wr_id, size_t off, uint32_t len,
		  uint64_t seed, uint32_t srqn, bool imm)
{
	return a_post(s, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, wr_id, off,
		      len, seed, srqn);
}

static void a_close(struct aside *s)
{
	CHECK_EQ(ibv_destroy_qp(s->ini), 0);
	CHECK_EQ(hx_ep_close(&s->ep), 0);
}

/* ---- C: the SRQ of another process ------------------------------------- */

struct cside {
	struct hx_ep ep;
	struct ibv_xrcd *xrcd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct cinfo ci;
	int file;
};

static void (*c_case)(struct cside *s, int fd);
/* other_user's C runs as this user, B as the second (set in main,
 * before any fork). */
static struct hx_user other, other_b;

/* cinfo.other_user: C's user and user namespace. */
enum { SAME_USER, OTHER_USER, OTHER_UNMAPPED, OTHER_RUN };

static void c_main(int fd)
{
	struct hx_opts o = opts();
	struct cside s;
	struct csrq me;

	memset(&s, 0, sizeof(s));
	hx_recv(fd, &s.ci, sizeof(s.ci));
	/* Another user: before the library is used, as a process of that
	 * user would be. */
	if (s.ci.other_user)
		hx_become(&other);
	if (s.ci.other_user == OTHER_UNMAPPED || s.ci.other_user == OTHER_RUN)
		hx_enter_userns(s.ci.other_user == OTHER_RUN);
	hx_ep_open(&s.ep, &o, fd);
	s.file = open(s.ci.path, O_RDONLY);
	if (s.file < 0)
		hx_die("open %s: %s", s.ci.path, strerror(errno));
	/* No O_CREAT: the domain is the one B made for the file. */
	s.xrcd = xq_xrcd_open(s.ep.ctx, s.file, s.ci.other_user ? O_CREAT : 0);
	s.cq = ibv_create_cq(s.ep.ctx, 128, NULL, NULL, 0);
	if (!s.cq)
		hx_die("CQ");
	s.srq = xq_xrc_srq(&s.ep, s.xrcd, s.cq, &me.srqn);
	me.rkey = s.ep.mr->rkey;
	me.addr = (uintptr_t)s.ep.buf;
	hx_send(fd, &me, sizeof(me));
	c_case(&s, fd);
}

static void c_post(struct cside *s, uint64_t wr_id, size_t off, uint32_t len)
{
	HX_CHECK_RC(xq_post_srq_recv(s->srq, wr_id, s->ep.buf + off, len,
				     s->ep.mr->lkey),
		    0);
}

/* A receive completion in C: from B's target QP, sent by A's QP. */
static void c_expect_op(struct cside *s, uint64_t wr_id, int op, uint32_t len,
			bool imm)
{
	struct ibv_wc wc;

	if (!HX_EXPECT(s->cq, &wc, wr_id, IBV_WC_SUCCESS, op, len))
		return;
	CHECK_EQ(wc.qp_num, s->ci.tgt_qpn);
	CHECK_EQ(wc.src_qp, s->ci.ini_qpn);
	CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), imm);
	if (imm)
		CHECK_EQ(ntohl(wc.imm_data), 0xabcu);
}

static void c_expect(struct cside *s, uint64_t wr_id, uint32_t len, bool imm)
{
	c_expect_op(s, wr_id, IBV_WC_RECV, len, imm);
}

static void c_close(struct cside *s)
{
	CHECK_EQ(ibv_destroy_srq(s->srq), 0);
	CHECK_EQ(ibv_destroy_cq(s->cq), 0);
	CHECK_EQ(ibv_close_xrcd(s->xrcd), 0);
	close(s->file);
	CHECK_EQ(hx_ep_close(&s->ep), 0);
}

/* ---- B: the target QP ------------------------------------------------------ */

struct bside {
	struct hx_ep ep;
	struct ibv_xrcd *xrcd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *tgt;
	struct xinfo x;
	int file, cfd;
	pid_t cpid;
	char path[64];
};

static void b_setup(struct bside *s, int fd, void (*cfn)(struct cside *, int),
		    int other_user)
{
	struct hx_opts o = opts();
	struct ibv_qp_init_attr_ex ia;
	struct cinfo ci;
	struct csrq cs;
	uint32_t peer[2];

	memset(s, 0, sizeof(*s));
	/* C is forked before this process uses the library. */
	c_case = cfn;
	s->cpid = hx_spawn("C", c_main, c_done, 30, &s->cfd);
	if (other_user)
		hx_become(&other_b);
	hx_ep_open(&s->ep, &o, fd);
	hx_ep_exchange(&s->ep);
	snprintf(s->path, sizeof(s->path), "/tmp/sv-xrcsh-%d", (int)getpid());
	s->file = open(s->path, O_RDONLY | O_CREAT, 0644);
	if (s->file < 0)
		hx_die("open %s: %s", s->path, strerror(errno));
	s->xrcd = xq_xrcd_open(s->ep.ctx, s->file, O_CREAT);
	s->cq = ibv_create_cq(s->ep.ctx, 128, NULL, NULL, 0);
	if (!s->cq)
		hx_die("CQ");
	s->srq = xq_xrc_srq(&s->ep, s->xrcd, s->cq, &s->x.srqn_b);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ia.xrcd = s->xrcd;
	s->tgt = ibv_create_qp_ex(s->ep.ctx, &ia);
	if (!s->tgt)
		hx_die("XRC_RECV QP: %s", strerror(errno));
	hx_recv(fd, peer, sizeof(peer));
	memset(&ci, 0, sizeof(ci));
	snprintf(ci.path, sizeof(ci.path), "%s", s->path);
	ci.tgt_qpn = s->tgt->qp_num;
	ci.ini_qpn = peer[0];
	ci.mtu_bytes = s->ep.mtu_bytes;
	ci.other_user = other_user;
	hx_send(s->cfd, &ci, sizeof(ci));
	hx_recv(s->cfd, &cs, sizeof(cs));
	s->x.srqn_c = cs.srqn;
	s->x.addr_c = cs.addr;
	s->x.rkey_c = cs.rkey;
	s->x.qpn = s->tgt->qp_num;
	s->x.psn = (uint32_t)lrand48() & 0xffffff;
	hx_send(fd, &s->x, sizeof(s->x));
	xq_xrc_connect(&s->ep, s->tgt, peer[0], peer[1], s->x.psn, 7);
	hx_sync(fd);
}

/* B's part ends: C's verdict, then B's own objects. */
static void b_close(struct bside *s, bool c_alive)
{
	if (c_alive)
		CHECK_EQ(hx_wait(s->cpid, 30), 0);
	close(s->cfd);
	CHECK_EQ(ibv_destroy_qp(s->tgt), 0);
	CHECK_EQ(ibv_destroy_srq(s->srq), 0);
	CHECK_EQ(ibv_destroy_cq(s->cq), 0);
	CHECK_EQ(ibv_close_xrcd(s->xrcd), 0);
	close(s->file);
	unlink(s->path);
	CHECK_EQ(hx_ep_close(&s->ep), 0);
}

/* ---- deliver --------------------------------------------------------------- */

#define BIG(ci) (3 * (ci) + 17) /* several packets and a short last one */

static void deliver_c(struct cside *s, int fd)
{
	uint32_t big = BIG(s->ci.mtu_bytes);

	c_post(s, 1, 0, 65536);
	c_post(s, 2, 65536, 65536);
	c_post(s, 3, 131072, 65536);
	c_post(s, 4, 196608, 65536);
	hx_send_u64(fd, 1); /* posted */
	c_expect(s, 1, 100, false);
	HX_CHECK_PATTERN(s->ep.buf, 100, 11);
	c_expect(s, 2, big, true);
	HX_CHECK_PATTERN(s->ep.buf + 65536, big, 13);
	c_expect(s, 3, 0, false);
	/* A WRITE with immediate of no bytes touches no memory: delivered. */
	c_expect_op(s, 4, IBV_WC_RECV_RDMA_WITH_IMM, 0, true);
	HX_EXPECT_NONE(s->cq, 100); /* B's message did not come here */
	c_close(s);
}

static void deliver_a(int fd)
{
	struct aside s;
	uint32_t big;
	uint64_t i;

	a_setup(&s, fd, 7);
	big = BIG(s.ep.mtu_bytes);
	hx_recv_u64(fd); /* every receive is posted */
	HX_CHECK_RC(a_send(&s, 101, 0, 100, 11, s.x.srqn_c, false), 0);
	HX_CHECK_RC(a_send(&s, 102, 4096, 2000, 12, s.x.srqn_b, false), 0);
	HX_CHECK_RC(a_send(&s, 103, 16384, big, 13, s.x.srqn_c, true), 0);
	HX_CHECK_RC(a_send(&s, 104, 0, 0, 14, s.x.srqn_c, false), 0);
	HX_CHECK_RC(a_post(&s, IBV_WR_RDMA_WRITE_WITH_IMM, 105, 0, 0, 15,
			   s.x.srqn_c),
		    0);
	for (i = 101; i <= 104; i++)
		HX_EXPECT(s.ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_EXPECT(s.ep.scq, NULL, 105, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	hx_sync(fd);
	a_close(&s);
}

static void deliver_b(int fd)
{
	struct bside s;
	struct ibv_wc wc;

	b_setup(&s, fd, deliver_c, SAME_USER);
	HX_CHECK_RC(xq_post_srq_recv(s.srq, 7, s.ep.buf, 65536, s.ep.mr->lkey),
		    0);
	hx_recv_u64(s.cfd);
	hx_send_u64(fd, 1);
	if (HX_EXPECT(s.cq, &wc, 7, IBV_WC_SUCCESS, IBV_WC_RECV, 2000))
		CHECK_EQ(wc.qp_num, s.x.qpn);
	HX_CHECK_PATTERN(s.ep.buf, 2000, 12);
	HX_EXPECT_NONE(s.cq, 100); /* C's messages did not come here */
	hx_sync(fd);
	b_close(&s, true);
}

/* ---- rnr, rnr_exceeded --------------------------------------------------- */

static void rnr_c(struct cside *s, int fd)
{
	HX_EXPECT_NONE(s->cq, 300);
	hx_recv_u64(fd); /* post now */
	c_post(s, 5, 0, 4096);
	c_expect(s, 5, 500, false);
	HX_CHECK_PATTERN(s->ep.buf, 500, 21);
	c_close(s);
}

static void rnr_a(int fd)
{
	struct aside s;

	a_setup(&s, fd, 7);
	HX_CHECK_RC(a_send(&s, 201, 0, 500, 21, s.x.srqn_c, false), 0);
	/* No receive WQE in C's SRQ: the target answers RNR, the send
	 * waits (rnr_retry 7: for ever). */
	HX_EXPECT_NONE(s.ep.scq, 300);
	hx_send_u64(fd, 1);
	HX_EXPECT(s.ep.scq, NULL, 201, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd);
	a_close(&s);
}

static void rnr_b(int fd)
{
	struct bside s;

	b_setup(&s, fd, rnr_c, SAME_USER);
	hx_send_u64(s.cfd, hx_recv_u64(fd));
	hx_sync(fd);
	b_close(&s, true);
}

static void rnr_exceeded_c(struct cside *s, int fd)
{
	hx_recv_u64(fd); /* A has its completion */
	HX_EXPECT_NONE(s->cq, 100);
	c_close(s);
}

static void rnr_exceeded_a(int fd)
{
	struct aside s;

	a_setup(&s, fd, 0);
	HX_CHECK_RC(a_send(&s, 301, 0, 500, 31, s.x.srqn_c, false), 0);
	HX_EXPECT(s.ep.scq, NULL, 301, IBV_WC_RNR_RETRY_EXC_ERR, -1, -1);
	hx_send_u64(fd, 1);
	hx_sync(fd);
	a_close(&s);
}

static void rnr_exceeded_b(int fd)
{
	struct bside s;

	b_setup(&s, fd, rnr_exceeded_c, SAME_USER);
	hx_send_u64(s.cfd, hx_recv_u64(fd));
	hx_sync(fd);
	b_close(&s, true);
}

/* ---- owner_exits ------------------------------------------------------------- */

static void owner_exits_c(struct cside *s, int fd)
{
	c_post(s, 1, 0, 4096);
	hx_send_u64(fd, 1);
	c_expect(s, 1, 64, false);
	HX_CHECK_PATTERN(s->ep.buf, 64, 41);
	/* Exit with the SRQ, its CQ and the domain still there, as a
	 * process that dies (no exit handlers: nothing is given back). */
	int rc = c_done();

	fflush(NULL);
	_exit(rc);
}

static void owner_exits_a(int fd)
{
	struct aside s;

	a_setup(&s, fd, 7);
	hx_recv_u64(fd); /* C posted */
	HX_CHECK_RC(a_send(&s, 401, 0, 64, 41, s.x.srqn_c, false), 0);
	HX_EXPECT(s.ep.scq, NULL, 401, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_recv_u64(fd); /* C has exited */
	HX_CHECK_RC(a_send(&s, 402, 0, 64, 42, s.x.srqn_c, false), 0);
	HX_EXPECT(s.ep.scq, NULL, 402, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	hx_sync(fd);
	a_close(&s);
}

static void owner_exits_b(int fd)
{
	struct bside s;

	b_setup(&s, fd, owner_exits_c, SAME_USER);
	hx_send_u64(fd, hx_recv_u64(s.cfd));
	CHECK_EQ(hx_wait(s.cpid, 30), 0);
	hx_send_u64(fd, 1);
	CHECK_EQ(hx_qp_state_wait(s.tgt, IBV_QPS_ERR, 10000), IBV_QPS_ERR);
	hx_sync(fd);
	b_close(&s, false);
}

/* ---- other_user ------------------------------------------------------------------ */

static void other_user_c(struct cside *s, int fd)
{
	c_post(s, 1, 0, 4096);
	hx_send_u64(fd, 1);
	hx_recv_u64(fd); /* A has its completion */
	HX_EXPECT_NONE(s->cq, 100);
	c_close(s);
}

static void other_user_a(int fd)
{
	struct aside s;

	a_setup(&s, fd, 7);
	hx_recv_u64(fd); /* C posted */
	HX_CHECK_RC(a_send(&s, 501, 0, 64, 51, s.x.srqn_c, false), 0);
	HX_EXPECT(s.ep.scq, NULL, 501, IBV_WC_REM_INV_REQ_ERR, -1, -1);
	hx_send_u64(fd, 1);
	hx_sync(fd);
	a_close(&s);
}

static void other_user_as(int fd, int how)
{
	struct bside s;

	b_setup(&s, fd, other_user_c, how);
	hx_send_u64(fd, hx_recv_u64(s.cfd));
	hx_send_u64(s.cfd, hx_recv_u64(fd));
	hx_sync(fd);
	b_close(&s, true);
}

static void other_user_b(int fd)
{
	other_user_as(fd, OTHER_USER);
}

static void other_user_unmapped_a(int fd)
{
	other_user_a(fd);
}

static void other_user_unmapped_b(int fd)
{
	other_user_as(fd, OTHER_UNMAPPED);
}

static void other_user_run_a(int fd)
{
	other_user_a(fd);
}

static void other_user_run_b(int fd)
{
	other_user_as(fd, OTHER_RUN);
}

/* ---- rdma_refused ---------------------------------------------------------- */

static void rdma_refused_c(struct cside *s, int fd)
{
	c_post(s, 1, 0, 4096);
	hx_send_u64(fd, 1);
	hx_recv_u64(fd); /* A has its completion */
	HX_EXPECT_NONE(s->cq, 100);
	/* C's region was not written. */
	CHECK_EQ(s->ep.buf[65536], 0);
	c_close(s);
}

static void rdma_refused_a(int fd)
{
	struct aside s;

	a_setup(&s, fd, 7);
	hx_recv_u64(fd); /* C posted */
	/* An RDMA WRITE through B's target QP naming C's SRQ would write
	 * memory of C's PD, in C: refused. */
	s.x.addr_c += 65536;
	HX_CHECK_RC(a_post(&s, IBV_WR_RDMA_WRITE, 601, 0, 64, 61, s.x.srqn_c),
		    0);
	HX_EXPECT(s.ep.scq, NULL, 601, IBV_WC_REM_ACCESS_ERR, -1, -1);
	hx_send_u64(fd, 1);
	hx_sync(fd);
	a_close(&s);
}

static void rdma_refused_b(int fd)
{
	struct bside s;

	b_setup(&s, fd, rdma_refused_c, SAME_USER);
	hx_send_u64(fd, hx_recv_u64(s.cfd));
	hx_send_u64(s.cfd, hx_recv_u64(fd));
	hx_sync(fd);
	b_close(&s, true);
}

/* ---- domain_life -------------------------------------------------------------- */

/* An open of the file's domain in this process: the errno, 0 when it
 * opened (then closed again unless keep). */
static int try_open(struct ibv_context *ctx, int file, int oflags,
		    struct ibv_xrcd **keep)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = file,
		.oflags = oflags,
	};
	struct ibv_xrcd *x = ibv_open_xrcd(ctx, &a);

	if (!x)
		return errno;
	if (keep)
		*keep = x;
	else
		CHECK_EQ(ibv_close_xrcd(x), 0);
	return 0;
}

static void domain_life_c(int fd)
{
	struct ibv_context *ctx;
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_xrcd *held = NULL;
	char path[64];
	int file;

	if (!l || !l[0] || !(ctx = ibv_open_device(l[0])))
		hx_die("device");
	hx_recv(fd, path, sizeof(path));
	file = open(path, O_RDONLY);
	if (file < 0)
		hx_die("open %s: %s", path, strerror(errno));
	/* B's domain exists: O_EXCL refuses it, no O_CREAT joins it. */
	CHECK_EQ(try_open(ctx, file, O_CREAT | O_EXCL, NULL), EINVAL);
	CHECK_EQ(try_open(ctx, file, 0, &held), 0);
	hx_send_u64(fd, 1);
	hx_recv_u64(fd); /* B closed its open */
	/* Ours keeps the domain: B could join it again (it did). */
	hx_recv_u64(fd); /* B closed again */
	CHECK_EQ(ibv_close_xrcd(held), 0);
	/* The last open anywhere is gone: no domain for the file. */
	CHECK_EQ(try_open(ctx, file, 0, NULL), EAGAIN);
	CHECK_EQ(try_open(ctx, file, O_CREAT | O_EXCL, NULL), 0);
	close(file);
	ibv_close_device(ctx);
	ibv_free_device_list(l);
}

static void domain_life_a(int fd)
{
	hx_sync(fd);
}

static void domain_life_b(int fd)
{
	struct ibv_device **l;
	struct ibv_context *ctx;
	struct ibv_xrcd *x = NULL;
	char path[64];
	int cfd, file;
	pid_t cpid = hx_spawn("C", domain_life_c, c_done, 30, &cfd);

	l = ibv_get_device_list(NULL);
	if (!l || !l[0] || !(ctx = ibv_open_device(l[0])))
		hx_die("device");
	snprintf(path, sizeof(path), "/tmp/sv-xrcsh-%d", (int)getpid());
	file = open(path, O_RDONLY | O_CREAT, 0600);
	if (file < 0)
		hx_die("open %s: %s", path, strerror(errno));
	CHECK_EQ(try_open(ctx, file, 0, NULL), EAGAIN); /* none yet */
	CHECK_EQ(try_open(ctx, file, O_CREAT | O_EXCL, &x), 0);
	hx_send(cfd, path, sizeof(path));
	hx_recv_u64(cfd); /* C joined */
	CHECK_EQ(ibv_close_xrcd(x), 0);
	hx_send_u64(cfd, 1);
	/* C still has it open: the domain lives on. */
	CHECK_EQ(try_open(ctx, file, 0, NULL), 0);
	CHECK_EQ(try_open(ctx, file, O_CREAT | O_EXCL, NULL), EINVAL);
	hx_send_u64(cfd, 1);
	CHECK_EQ(hx_wait(cpid, 30), 0);
	close(cfd);
	close(file);
	unlink(path);
	ibv_close_device(ctx);
	ibv_free_device_list(l);
	hx_sync(fd);
}

static const struct hx_case cases[] = {
	HX_CASE(deliver, 30),	     HX_CASE(rnr, 30),
	HX_CASE(rnr_exceeded, 30),   HX_CASE(owner_exits, 30),
	HX_CASE(other_user, 30),     HX_CASE(domain_life, 30),
	HX_CASE(rdma_refused, 30),   HX_CASE(other_user_unmapped, 30),
	HX_CASE(other_user_run, 30),
};

int main(int argc, char **argv)
{
	bool users = argc > 1 && !strncmp(argv[1], "other_user", 10);

	if (users && geteuid() != 0) {
		printf("SKIP: %s needs root (B and C run as other users)\n",
		       argv[1]);
		return 77;
	}
	if (geteuid() == 0 && (argc == 1 || users)) {
		other = hx_test_user(1);
		other_b = hx_test_user(2);
	}
	return hx_main(argc, argv, cases, c_done);
}
