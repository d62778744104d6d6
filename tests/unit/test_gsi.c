/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The GSI QP (engine/transport/qp.c sv_engine_qp_gsi): with SOFTVERBS_ROCE=standard a
 * UD QP created with IBV_QP_CREATE_SOURCE_QPN 1 takes what arrives at UDP
 * 4791 for QPN 1 and sends with source QPN 1 (librdmacm's IB CM, src/cm/
 * gsi.c); one per engine; any other source QPN, or QP type, is refused
 * with EOPNOTSUPP, and so is the flag in the default mode (a child run).
 * Bytes are compared end to end both ways over 127.0.0.1.
 *
 * CM MADs to QP1 go instead to the Unix name their fields give
 * (engine/forward/gsifwd.c, proto/mad.h): a REP, DREQ or SIDR_REP to the
 * endpoint in the comm ID they name, a REQ to its service ID's name,
 * each as the GRH area and the MAD; one whose name nobody bound comes
 * to the GSI QP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctx.h"
#include "proto/mad.h"

#define QKEY 0x80010000u
#define LEN 256

struct ud {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[2][40 + LEN];
};

static struct ibv_qp *create(struct ibv_context *ctx, struct ibv_pd *pd,
			     struct ibv_cq *cq, enum ibv_qp_type t, bool src,
			     uint32_t sqpn)
{
	struct ibv_qp_init_attr_ex ia;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = t;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.comp_mask =
		IBV_QP_INIT_ATTR_PD | (src ? IBV_QP_INIT_ATTR_CREATE_FLAGS : 0);
	ia.pd = pd;
	ia.create_flags = src ? IBV_QP_CREATE_SOURCE_QPN : 0;
	ia.source_qpn = sqpn;
	return ibv_create_qp_ex(ctx, &ia);
}

static bool cap_net_raw(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	return !syscall(SYS_capget, &h, d) &&
	       (d[CAP_NET_RAW / 32].effective & (1u << (CAP_NET_RAW % 32)));
}

static void up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qkey = QKEY };

	REQUIRE(!ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_QKEY));
	a.qp_state = IBV_QPS_RTR;
	REQUIRE(!ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RTS;
	REQUIRE(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
}

static void post_recv(struct ud *u)
{
	struct ibv_sge sge = { (uintptr_t)u->buf[0], sizeof(u->buf[0]),
			       u->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	REQUIRE(!ibv_post_recv(u->qp, &wr, &bad));
}

/* Send u->buf[1] as it is. */
static void send_buf(struct ud *u, struct ibv_ah *ah, uint32_t qpn)
{
	struct ibv_sge sge = { (uintptr_t)u->buf[1], LEN, u->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	REQUIRE(!ibv_post_send(u->qp, &wr, &bad));
}

static void send_to(struct ud *u, struct ibv_ah *ah, uint32_t qpn, uint8_t fill)
{
	memset(u->buf[1], fill, LEN);
	send_buf(u, ah, qpn);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* A CM MAD of attribute attr into m (IBA 13.4.2, 12.6): the comm IDs at
 * message offsets 0 and 4, or a REQ's service ID at 8. */
static void cm_mad(uint8_t *m, uint16_t attr, uint32_t local, uint32_t remote,
		   uint64_t service)
{
	memset(m, 0, LEN);
	m[0] = 1; /* base version */
	m[1] = SV_MAD_CLASS_CM;
	m[2] = 2; /* class version */
	m[3] = 3; /* Send */
	m[16] = (uint8_t)(attr >> 8);
	m[17] = (uint8_t)attr;
	put32(m + 24, local);
	if (attr == SV_MAD_REQ || attr == SV_MAD_SIDR_REQ) {
		put32(m + 24 + 8, (uint32_t)(service >> 32));
		put32(m + 24 + 12, (uint32_t)service);
	} else {
		put32(m + 24 + 4, remote);
	}
	memset(m + 100, 0xc3, 16); /* something to compare */
}

static int bind_route(enum sv_cm_route_kind kind, uint64_t key)
{
	struct sv_cm_route r = { kind, key };
	struct sockaddr_un sa;
	socklen_t len = sv_cm_route_name(&sa, geteuid(), &r);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	REQUIRE(fd >= 0);
	REQUIRE(!bind(fd, (struct sockaddr *)&sa, len));
	return fd;
}

/* The datagram the holder forwards: the GRH area of a UD receive from
 * 127.0.0.1 (IPv4 header in its second half), then the MAD whole. */
static void expect_forwarded(int fd, const uint8_t *mad)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint8_t got[SV_CM_ROUTE_DGRAM + 8];
	ssize_t n;

	CHECK_EQ(poll(&p, 1, 5000), 1);
	n = recv(fd, got, sizeof(got), MSG_DONTWAIT);
	CHECK_EQ(n, (ssize_t)SV_CM_ROUTE_DGRAM);
	if (n != (ssize_t)SV_CM_ROUTE_DGRAM)
		return;
	CHECK_EQ(got[20] >> 4, 4);
	CHECK_EQ(got[20 + 12], 127);
	CHECK_EQ(got[20 + 16], 127);
	CHECK(!memcmp(got + SV_GRH_BYTES, mad, LEN));
}

/* Nothing else came to the name. */
static void expect_quiet(int fd)
{
	uint8_t got[SV_CM_ROUTE_DGRAM];

	CHECK_EQ(recv(fd, got, sizeof(got), MSG_DONTWAIT), -1);
}

/* Whether a socket of this namespace has UDP port 4791 (our QPs would
 * not get its QP1 packets). */
static bool port_4791_held(void)
{
	const char *tables[] = { "/proc/net/udp", "/proc/net/udp6" };
	char line[512];

	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(tables[i], "r");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (strstr(line, ":12B7 ")) {
				fclose(f);
				return true;
			}
		}
		fclose(f);
	}
	return false;
}

/* The next completion of the given opcode class (send or receive). */
static struct ibv_wc wait_wc(struct ibv_cq *cq, bool recv)
{
	struct ibv_wc wc;

	for (long i = 0; i < 50000000; i++) {
		if (ibv_poll_cq(cq, 1, &wc) == 1 &&
		    (wc.opcode == IBV_WC_RECV) == recv)
			return wc;
		if (i > 1000)
			usleep(100);
	}
	fprintf(stderr, "no completion\n");
	exit(1);
}

static int default_mode(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);

	errno = 0;
	CHECK(!create(ctx, pd, cq, IBV_QPT_UD, true, 1));
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ud g, u;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct ibv_qp *q;
	int gidx, st;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "default")) {
		unsetenv("SOFTVERBS_ROCE");
		return default_mode();
	}
	setenv("SOFTVERBS_ROCE", "standard", 1);
	if (!cap_net_raw()) {
		/* The kernel's rule for a privileged Q_Key, which the GSI's
		 * is: make test as an ordinary user skips this. */
		printf("SKIP: the GSI's Q_Key 0x%x is privileged: it needs CAP_NET_RAW\n",
		       QKEY);
		return 77;
	}
	if (port_4791_held()) {
		printf("SKIP: UDP 4791 is held in this namespace\n");
		return 77;
	}
	ctx = open_ctx();
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	memset(&g, 0, sizeof(g));
	memset(&u, 0, sizeof(u));
	g.cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	u.cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	REQUIRE(g.cq && u.cq);
	g.qp = create(ctx, pd, g.cq, IBV_QPT_UD, true, 1);
	REQUIRE(g.qp);
	/* One per engine; QP1 only; UD only. */
	errno = 0;
	CHECK(!create(ctx, pd, g.cq, IBV_QPT_UD, true, 1));
	CHECK_EQ(errno, EBUSY);
	errno = 0;
	CHECK(!create(ctx, pd, g.cq, IBV_QPT_UD, true, 2));
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	q = create(ctx, pd, g.cq, IBV_QPT_RC, true, 1);
	CHECK(!q);
	CHECK_EQ(errno, EOPNOTSUPP);
	u.qp = create(ctx, pd, u.cq, IBV_QPT_UD, false, 0);
	REQUIRE(u.qp);
	g.mr = ibv_reg_mr(pd, g.buf, sizeof(g.buf), IBV_ACCESS_LOCAL_WRITE);
	u.mr = ibv_reg_mr(pd, u.buf, sizeof(u.buf), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(g.mr && u.mr);
	up(g.qp);
	up(u.qp);
	gidx = loopback_gid(ctx);
	REQUIRE(gidx >= 0);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = (uint8_t)gidx;
	aa.grh.hop_limit = 64;
	REQUIRE(!ibv_query_gid(ctx, 1, gidx, &aa.grh.dgid));
	ah = ibv_create_ah(pd, &aa);
	REQUIRE(ah);

	/* To QP1: the GSI QP takes it, from the sender's QPN. */
	post_recv(&g);
	send_to(&u, ah, 1, 0x5a);
	CHECK_EQ(wait_wc(u.cq, false).status, IBV_WC_SUCCESS);
	wc = wait_wc(g.cq, true);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, 40 + LEN);
	CHECK_EQ(wc.src_qp, u.qp->qp_num);
	CHECK(!memcmp(g.buf[0] + 40, u.buf[1], LEN));

	/* CM MADs: to the CM whose name they give, as a UD receive shows
	 * them; the GSI QP sees none of them. */
	{
		const uint16_t ep = 0xbeef;
		const uint64_t svc = 0x0000000001061234ull;
		int epfd = bind_route(SV_CM_ROUTE_ENDPOINT, ep);
		int svcfd = bind_route(SV_CM_ROUTE_SERVICE, svc);
		const uint16_t to_ep[] = {
			SV_MAD_REP, SV_MAD_RTU,	 SV_MAD_REJ,
			SV_MAD_MRA, SV_MAD_DREQ, SV_MAD_DREP
		};

		for (unsigned int i = 0; i < 6; i++) {
			cm_mad(u.buf[1], to_ep[i], 0x11110001u,
			       SV_CM_COMM_ID(ep, i + 1), 0);
			send_buf(&u, ah, 1);
			CHECK_EQ(wait_wc(u.cq, false).status, IBV_WC_SUCCESS);
			expect_forwarded(epfd, u.buf[1]);
		}
		/* SIDR_REP: its first field, the request ID, is ours. */
		cm_mad(u.buf[1], SV_MAD_SIDR_REP, SV_CM_COMM_ID(ep, 7),
		       0x22220002u, 0);
		send_buf(&u, ah, 1);
		CHECK_EQ(wait_wc(u.cq, false).status, IBV_WC_SUCCESS);
		expect_forwarded(epfd, u.buf[1]);
		for (unsigned int i = 0; i < 2; i++) {
			cm_mad(u.buf[1], i ? SV_MAD_SIDR_REQ : SV_MAD_REQ,
			       0x33330003u, 0, svc);
			send_buf(&u, ah, 1);
			CHECK_EQ(wait_wc(u.cq, false).status, IBV_WC_SUCCESS);
			expect_forwarded(svcfd, u.buf[1]);
		}
		expect_quiet(epfd);
		expect_quiet(svcfd);
		/* A name nobody bound: the GSI QP. */
		close(epfd);
		post_recv(&g);
		cm_mad(u.buf[1], SV_MAD_DREQ, 0x44440004u, SV_CM_COMM_ID(ep, 9),
		       0);
		send_buf(&u, ah, 1);
		CHECK_EQ(wait_wc(u.cq, false).status, IBV_WC_SUCCESS);
		wc = wait_wc(g.cq, true);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK(!memcmp(g.buf[0] + 40, u.buf[1], LEN));
		expect_quiet(svcfd);
		close(svcfd);
	}

	/* From the GSI QP: it sends as QP1. */
	post_recv(&u);
	send_to(&g, ah, u.qp->qp_num, 0xa5);
	CHECK_EQ(wait_wc(g.cq, false).status, IBV_WC_SUCCESS);
	wc = wait_wc(u.cq, true);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.src_qp, 1u);
	CHECK(!memcmp(u.buf[0] + 40, g.buf[1], LEN));

	/* Destroyed, it frees the engine's GSI slot. */
	ibv_destroy_ah(ah);
	CHECK(!ibv_destroy_qp(g.qp));
	g.qp = create(ctx, pd, g.cq, IBV_QPT_UD, true, 1);
	CHECK(g.qp);

	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		execl("/proc/self/exe", argv[0], "default", (char *)NULL);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return check_done();
}
