/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * UC under packet loss (driven by uc_loss.sh: two network namespaces, a
 * veth pair, nftables in B's dropping a share of UDP packets): A streams
 * multi-packet SEND_WITH_IMM and RDMA_WRITE_WITH_IMM messages, each
 * carrying its sequence number as immediate data and a pattern of its
 * own.  UC has no ACKs and no retransmission (IBA): a message that
 * loses any packet is dropped whole by the responder, which discards until
 * the next FIRST or ONLY packet; every message that does complete must be
 * byte-exact, in order, and later messages keep arriving after losses.
 *
 * Environment: HX_NETNS_A/B, HX_ADDR_A/B (as rc_loss), HX_UC_ROUNDS
 * (default 40), HX_EXPECT_LOSS=1 to require that some messages were lost
 * (set by uc_loss.sh).  Without HX_NETNS_A it runs over loopback, where
 * nothing may be lost.
 */
#include <arpa/inet.h>
#include <stdlib.h>

#include "xqp.h"

#define MSG 8192 /* 8 packets of a 1024-byte path MTU */
#define PER_ROUND 32
#define NSLOT 64 /* receive buffers / write slots at B */

static int rounds(void)
{
	const char *e = getenv("HX_UC_ROUNDS");

	return e && *e ? atoi(e) : 40;
}

static void open_side(struct hx_ep *ep, int fd, const char *ns_var,
		      const char *addr_var)
{
	struct hx_opts o = hx_opts_default();
	const char *ns = getenv(ns_var), *addr = getenv(addr_var);
	int rc;

	if (ns && *ns)
		hx_enter_netns(ns);
	o.buf_len = 2 * NSLOT * MSG;
	o.gid_addr = addr && *addr ? addr : NULL;
	o.path_mtu = IBV_MTU_1024;
	o.max_send_wr = 2 * PER_ROUND;
	o.max_recv_wr = NSLOT;
	o.send_cqe = 256;
	o.qp_access = IBV_ACCESS_REMOTE_WRITE;
	hx_ep_open(ep, &o, fd);
	xq_new_qp(ep, IBV_QPT_UC, NULL);
	hx_ep_exchange(ep);
	rc = xq_connect_qp(ep, ep->qp, ep->peer.qpn, ep->peer.psn);
	if (rc)
		hx_die("UC connect: %s", strerror(rc));
	hx_sync(fd);
}

static uint64_t seed_of(uint32_t seq)
{
	return 0x5500000ull + seq;
}

static void stream_a(int fd)
{
	struct hx_ep ep;
	uint32_t seq = 0;
	int r, n = rounds();

	open_side(&ep, fd, "HX_NETNS_A", "HX_ADDR_A");
	hx_sync(fd); /* B posted its receives */
	for (r = 0; r < n; r++) {
		int i;

		for (i = 0; i < PER_ROUND; i++, seq++) {
			uint8_t *src = ep.buf + (size_t)(seq % NSLOT) * MSG;
			bool write = seq % 3 == 2;

			hx_fill(src, MSG, seed_of(seq));
			/* WRITEs land in B's write slot of this sequence. */
			HX_CHECK_RC(
				hx_post_send(
					&ep,
					write ? IBV_WR_RDMA_WRITE_WITH_IMM :
						IBV_WR_SEND_WITH_IMM,
					IBV_SEND_SIGNALED, seq, src, MSG,
					ep.mr->lkey,
					ep.peer.addr +
						(size_t)(NSLOT + seq % NSLOT) *
							MSG,
					ep.peer.rkey, seq),
				0);
			HX_EXPECT(ep.scq, NULL, seq, IBV_WC_SUCCESS, -1, MSG);
		}
		hx_sync(fd); /* round sent */
		hx_sync(fd); /* B drained it */
	}
	hx_send_u64(fd, seq);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

static void stream_b(int fd)
{
	uint32_t got = 0, sent, next_min = 0;
	uint64_t t0 = hx_now_ms();
	struct hx_ep ep;
	int r, n = rounds(), i, bad = 0;
	const char *el = getenv("HX_EXPECT_LOSS");

	open_side(&ep, fd, "HX_NETNS_B", "HX_ADDR_B");
	/* wr_id = receive buffer slot. */
	for (i = 0; i < NSLOT; i++)
		REQUIRE(hx_post_recv(&ep, i, ep.buf + (size_t)i * MSG, MSG,
				     ep.mr->lkey) == 0);
	hx_sync(fd);
	for (r = 0; r < n; r++) {
		hx_sync(fd);
		/* Drain until nothing more comes for a while. */
		for (;;) {
			struct ibv_wc wc;
			uint32_t seq;
			uint8_t *data;

			if (hx_poll(ep.rcq, &wc, 1, 300) != 1)
				break;
			if (wc.status != IBV_WC_SUCCESS || wc.byte_len != MSG ||
			    !(wc.wc_flags & IBV_WC_WITH_IMM)) {
				hx_log("bad completion: status %s len %u flags 0x%x",
				       ibv_wc_status_str(wc.status),
				       wc.byte_len, wc.wc_flags);
				bad++;
				break;
			}
			seq = ntohl(wc.imm_data);
			/* In order, never twice. */
			if (seq < next_min) {
				hx_log("message %u after %u", seq,
				       next_min - 1);
				bad++;
			}
			next_min = seq + 1;
			if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM)
				data = ep.buf +
				       (size_t)(NSLOT + seq % NSLOT) * MSG;
			else
				data = ep.buf + (size_t)wc.wr_id * MSG;
			if (hx_verify(data, MSG, seed_of(seq)) >= 0) {
				hx_log("message %u (%s) corrupted", seq,
				       wc.opcode == IBV_WC_RECV ? "SEND" :
								  "WRITE");
				bad++;
			}
			if (wc.opcode != (seq % 3 == 2 ?
						  IBV_WC_RECV_RDMA_WITH_IMM :
						  IBV_WC_RECV)) {
				hx_log("message %u: opcode %d", seq, wc.opcode);
				bad++;
			}
			got++;
			REQUIRE(hx_post_recv(&ep, wc.wr_id,
					     ep.buf + (size_t)wc.wr_id * MSG,
					     MSG, ep.mr->lkey) == 0);
		}
		hx_sync(fd);
	}
	sent = (uint32_t)hx_recv_u64(fd);
	hx_log("%u of %u messages arrived (%u lost) in %.1f s; last one seen: %u",
	       got, sent, sent - got, (hx_now_ms() - t0) / 1000.0,
	       next_min ? next_min - 1 : 0);
	CHECK_EQ(bad, 0);
	CHECK(got > 0);
	/* Losses never stop the stream: messages of the last round arrive. */
	CHECK(next_min > sent - PER_ROUND);
	if (el && *el == '1')
		CHECK(got < sent);
	else
		CHECK_EQ(got, sent);
	hx_sync(fd);
	CHECK(hx_ep_close(&ep) == 0);
}

/* clang-format off */
static const struct hx_case cases[] = {
	HX_CASE(stream, 170),
	{ NULL, NULL, NULL, 0 },
};
/* clang-format on */

HX_MAIN(cases)
