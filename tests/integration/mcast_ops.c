/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * UD multicast between processes: A sends to QPN 0xffffff with an address
 * handle whose destination GID is a multicast group; B and C, each in its
 * own process, attach UD QPs to the group and must each receive every
 * datagram, bytes compared, with the group address in the GRH.  QPs not
 * attached (or detached, or with another Q_Key) receive nothing; several
 * QPs of one process attached to one group each get their own copy; a QP
 * attached cannot be destroyed.
 *
 * Without environment everything runs on this host over loopback.  With
 * HX_NETNS_A/B (mcast_netns.sh: two namespaces joined by a veth pair) A
 * and C run in namespace A and B in namespace B, so the group reaches a
 * receiver on the sender's host (C, through the kernel's multicast loop)
 * and one on another host (B); HX_ADDR_A/B (IPv4) and HX_ADDR6_A/B (IPv6)
 * are the veth addresses, and the ipv6 case uses an ff0e:: group there.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <unistd.h>

#include "xqp.h"

#define SLOT 8192
#define NMSG 32

static int hx_done_(void);

static const char *env(const char *n)
{
	const char *v = getenv(n);

	return v && *v ? v : NULL;
}

static bool netns_mode(void)
{
	return env("HX_NETNS_A") != NULL;
}

/* Enter the role's namespace (before any verbs call) and open a UD QP. */
static void open_role(struct hx_ep *ep, int fd, char role, bool v6)
{
	struct hx_opts o = hx_opts_default();
	const char *ns = env(role == 'B' ? "HX_NETNS_B" : "HX_NETNS_A");
	const char *addr = env(role == 'B' ? (v6 ? "HX_ADDR6_B" : "HX_ADDR_B") :
					     (v6 ? "HX_ADDR6_A" : "HX_ADDR_A"));

	if (ns)
		hx_enter_netns(ns);
	o.gid_addr = addr ? addr : (v6 ? "::1" : NULL);
	o.max_recv_wr = 128;
	o.recv_cqe = 512;
	hx_ep_open(ep, &o, fd);
	xq_new_qp(ep, IBV_QPT_UD, NULL);
}

static union ibv_gid new_group(bool v6)
{
	union ibv_gid g;
	uint32_t r = (uint32_t)getpid() ^ (uint32_t)hx_now_ms();

	memset(&g, 0, sizeof(g));
	if (v6) {
		g.raw[0] = 0xff;
		g.raw[1] = 0x0e; /* global scope */
		g.raw[12] = 0x53;
		g.raw[13] = 0x56;
		g.raw[14] = (uint8_t)(r >> 8);
		g.raw[15] = (uint8_t)r;
	} else {
		g.raw[10] = g.raw[11] = 0xff;
		g.raw[12] = 239;
		g.raw[13] = (uint8_t)(200 + (r % 50));
		g.raw[14] = (uint8_t)(r >> 8);
		g.raw[15] = (uint8_t)(r >> 16);
	}
	return g;
}

static uint32_t msg_len(struct hx_ep *ep, int i)
{
	uint32_t len = 64u + 97u * (uint32_t)i;

	return len > ep->mtu_bytes ? ep->mtu_bytes : len;
}

/* A: send n datagrams to the group, each with its own pattern. */
static void send_group(struct hx_ep *ep, struct ibv_ah *ah, int first, int n)
{
	int i;

	for (i = first; i < first + n; i++) {
		uint32_t len = msg_len(ep, i);

		hx_fill(ep->buf + (size_t)(i % 64) * SLOT, len, 900 + i);
		HX_CHECK_RC(xq_ud_send(ep->qp, ah, XQ_MCAST_QPN, XQ_QKEY,
				       IBV_WR_SEND, IBV_SEND_SIGNALED, i,
				       ep->buf + (size_t)(i % 64) * SLOT, len,
				       ep->mr->lkey, 0),
			    0);
		HX_EXPECT(ep->scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, len);
	}
}

/* Receiver: n datagrams on qp, in order, from src_qpn, to the group. */
static void recv_group(struct hx_ep *ep, struct ibv_qp *qp, int first, int n,
		       uint32_t src_qpn, const union ibv_gid *grp,
		       const union ibv_gid *src_gid)
{
	int i;

	for (i = first; i < first + n; i++) {
		uint32_t len = msg_len(ep, i);
		uint8_t *b = ep->buf + (size_t)(i % 64) * SLOT;
		struct ibv_wc wc;

		if (!HX_EXPECT(ep->rcq, &wc, (uint64_t)i, IBV_WC_SUCCESS,
			       IBV_WC_RECV, XQ_GRH + len))
			continue;
		CHECK_EQ(wc.qp_num, qp->qp_num);
		CHECK_EQ(wc.src_qp, src_qpn);
		CHECK(wc.wc_flags & IBV_WC_GRH);
		HX_CHECK_PATTERN(b + XQ_GRH, len, 900 + i);
		if (grp->raw[0] == 0xff) {
			CHECK(xq_grh_ipv6_ok(b, src_gid, grp,
					     12 + 8 + ((len + 3) & ~3u) + 4));
		} else {
			char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, src_gid->raw + 12, s, sizeof(s));
			inet_ntop(AF_INET, grp->raw + 12, d, sizeof(d));
			CHECK(xq_grh_ipv4_ok(b, s, d,
					     12 + 8 + ((len + 3) & ~3u) + 4));
		}
	}
}

static void post_recvs(struct hx_ep *ep, struct ibv_qp *qp, int first, int n)
{
	int i;

	for (i = first; i < first + n; i++)
		REQUIRE(xq_post_recv(qp, (uint64_t)i,
				     ep->buf + (size_t)(i % 64) * SLOT, SLOT,
				     ep->mr->lkey) == 0);
}

/* ---- two_procs: B and C, in two other processes, each get everything -- */

struct grp_msg {
	union ibv_gid grp;
	union ibv_gid src_gid;
	uint32_t src_qpn;
	uint32_t qkey; /* the receiver's QP Q_Key */
};

static void receiver(int fd, char role, bool v6)
{
	struct grp_msg m;
	struct hx_ep ep;

	open_role(&ep, fd, role, v6);
	hx_recv(fd, &m, sizeof(m));
	if (m.qkey != XQ_QKEY) {
		struct ibv_qp_attr a = { .qkey = m.qkey };

		REQUIRE(ibv_modify_qp(ep.qp, &a, IBV_QP_QKEY) == 0);
	}
	post_recvs(&ep, ep.qp, 0, NMSG);
	REQUIRE(xq_ud_rts(ep.qp) == 0);
	HX_CHECK_RC(ibv_attach_mcast(ep.qp, &m.grp, 0), 0);
	hx_sync(fd); /* attached */
	hx_sync(fd); /* A has sent */
	if (m.qkey == XQ_QKEY)
		recv_group(&ep, ep.qp, 0, NMSG, m.src_qpn, &m.grp, &m.src_gid);
	HX_EXPECT_NONE(ep.rcq, 200);
	HX_CHECK_RC(ibv_detach_mcast(ep.qp, &m.grp, 0), 0);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void c_v4(int fd)
{
	receiver(fd, 'C', false);
}
static void c_v6(int fd)
{
	receiver(fd, 'C', true);
}
static void c_v4_badkey(int fd)
{
	receiver(fd, 'C', false);
}

static void sender(int fd_b, void (*c_fn)(int), bool v6, uint32_t c_qkey)
{
	struct grp_msg m;
	struct hx_ep ep;
	struct ibv_ah *ah;
	pid_t c;
	int fd_c;

	/* C first, before this process touches the verbs library. */
	c = hx_spawn("C", c_fn, hx_done_, 30, &fd_c);
	open_role(&ep, fd_b, 'A', v6);
	REQUIRE(xq_ud_rts(ep.qp) == 0);
	/* Not attached: must see nothing of its own group's traffic. */
	post_recvs(&ep, ep.qp, 0, 4);
	memset(&m, 0, sizeof(m));
	m.grp = new_group(v6);
	m.src_gid = ep.gid;
	m.src_qpn = ep.qp->qp_num;
	m.qkey = XQ_QKEY;
	hx_send(fd_b, &m, sizeof(m));
	m.qkey = c_qkey;
	hx_send(fd_c, &m, sizeof(m));
	hx_sync(fd_b);
	hx_sync(fd_c);
	ah = xq_ah(&ep, &m.grp);
	send_group(&ep, ah, 0, NMSG);
	hx_sync(fd_b);
	hx_sync(fd_c);
	HX_EXPECT_NONE(ep.rcq, 200);
	hx_sync(fd_b);
	hx_sync(fd_c);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
	CHECK(hx_wait(c, 35) == 0);
	close(fd_c);
}

static void two_procs_a(int fd)
{
	sender(fd, c_v4, false, XQ_QKEY);
}
static void two_procs_b(int fd)
{
	receiver(fd, 'B', false);
}

/* C's QP has another Q_Key: the group's datagrams are not for it. */
static void qkey_a(int fd)
{
	sender(fd, c_v4_badkey, false, 0x22222222);
}
static void qkey_b(int fd)
{
	receiver(fd, 'B', false);
}

/* IPv6 groups need an interface the kernel does IPv6 multicast on: the
 * veth of the namespace set-up (loopback does not loop IPv6 multicast). */
static void ipv6_a(int fd)
{
	if (!netns_mode()) {
		hx_log("skipped: IPv6 multicast needs the veth set-up (mcast_netns.sh)");
		hx_send_u64(fd, 0);
		return;
	}
	hx_send_u64(fd, 1);
	sender(fd, c_v6, true, XQ_QKEY);
}

static void ipv6_b(int fd)
{
	if (!hx_recv_u64(fd))
		return;
	receiver(fd, 'B', true);
}

/* ---- two_qps: several QPs of one process, detach, EBUSY --------------- */

static void two_qps_a(int fd)
{
	struct grp_msg m;
	struct hx_ep ep;
	struct ibv_ah *ah;

	open_role(&ep, fd, 'A', false);
	REQUIRE(xq_ud_rts(ep.qp) == 0);
	m.grp = new_group(false);
	m.src_gid = ep.gid;
	m.src_qpn = ep.qp->qp_num;
	m.qkey = XQ_QKEY;
	hx_send(fd, &m, sizeof(m));
	ah = xq_ah(&ep, &m.grp);
	hx_sync(fd);
	send_group(&ep, ah, 0, 4); /* to QP 1 and QP 2 */
	hx_sync(fd);
	hx_sync(fd); /* B detached QP 2 */
	send_group(&ep, ah, 4, 4); /* to QP 1 only */
	hx_sync(fd);
	hx_sync(fd); /* B detached QP 1 */
	send_group(&ep, ah, 8, 2); /* to nobody */
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

static void two_qps_b(int fd)
{
	struct ibv_qp *q[3];
	struct grp_msg m;
	struct hx_ep ep;
	struct ibv_wc wc;
	int i, got[3] = { 0, 0, 0 };

	open_role(&ep, fd, 'B', false);
	hx_recv(fd, &m, sizeof(m));
	q[0] = ep.qp;
	q[1] = xq_create(&ep, IBV_QPT_UD, NULL);
	q[2] = xq_create(&ep, IBV_QPT_UD, NULL); /* never attached */
	for (i = 0; i < 3; i++) {
		REQUIRE(xq_ud_rts(q[i]) == 0);
		/* wr_id 100 * QP + message; buffers apart per QP. */
		for (int k = 0; k < 10; k++)
			REQUIRE(xq_post_recv(q[i], (uint64_t)(100 * i + k),
					     ep.buf + (size_t)(20 * i + k) *
							      SLOT,
					     SLOT, ep.mr->lkey) == 0);
	}
	HX_CHECK_RC(ibv_attach_mcast(q[0], &m.grp, 0), 0);
	HX_CHECK_RC(ibv_attach_mcast(q[1], &m.grp, 0), 0);
	HX_CHECK_RC(ibv_attach_mcast(q[1], &m.grp, 0),
		    0); /* twice: still one */
	hx_sync(fd);
	hx_sync(fd);
	/* 4 datagrams x 2 attached QPs, each QP its own copy. */
	for (i = 0; i < 8; i++) {
		int qi, k;

		if (hx_poll(ep.rcq, &wc, 1, 5000) != 1) {
			CHECK(!"a multicast copy is missing");
			break;
		}
		qi = (int)(wc.wr_id / 100);
		k = (int)(wc.wr_id % 100);
		CHECK(wc.status == IBV_WC_SUCCESS);
		CHECK(qi < 2 && wc.qp_num == q[qi]->qp_num);
		CHECK_EQ(wc.byte_len, XQ_GRH + msg_len(&ep, k));
		HX_CHECK_PATTERN(ep.buf + (size_t)(20 * qi + k) * SLOT + XQ_GRH,
				 msg_len(&ep, k), 900 + k);
		if (qi < 3)
			got[qi]++;
	}
	CHECK_EQ(got[0], 4);
	CHECK_EQ(got[1], 4);
	HX_EXPECT_NONE(ep.rcq, 200);
	/* man ibv_destroy_qp: not while attached. */
	HX_CHECK_RC(ibv_destroy_qp(q[1]), EBUSY);
	HX_CHECK_RC(ibv_detach_mcast(q[1], &m.grp, 0), 0);
	HX_CHECK_RC(ibv_detach_mcast(q[1], &m.grp, 0), EINVAL);
	hx_sync(fd);
	hx_sync(fd);
	for (i = 4; i < 8; i++) {
		if (!HX_EXPECT(ep.rcq, &wc, (uint64_t)i, IBV_WC_SUCCESS,
			       IBV_WC_RECV, XQ_GRH + msg_len(&ep, i)))
			continue;
		CHECK_EQ(wc.qp_num, q[0]->qp_num);
		HX_CHECK_PATTERN(ep.buf + (size_t)i * SLOT + XQ_GRH,
				 msg_len(&ep, i), 900 + i);
	}
	HX_EXPECT_NONE(ep.rcq, 200);
	HX_CHECK_RC(ibv_detach_mcast(q[0], &m.grp, 0), 0);
	hx_sync(fd);
	hx_sync(fd);
	HX_EXPECT_NONE(ep.rcq, 300);
	for (i = 1; i < 3; i++)
		CHECK(ibv_destroy_qp(q[i]) == 0);
	CHECK(hx_ep_close(&ep) == 0);
}

/* clang-format off */
static const struct hx_case cases[] = {
	HX_CASE(two_procs, 30),
	HX_CASE(qkey, 30),
	HX_CASE(ipv6, 30),
	HX_CASE(two_qps, 30),
	{ NULL, NULL, NULL, 0 },
};
/* clang-format on */

HX_MAIN(cases)
