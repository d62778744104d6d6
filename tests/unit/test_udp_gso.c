/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * link/udp.c's segmentation offloads over loopback: a run of equal-length
 * packets (and a shorter last one) to one destination leaves as one
 * UDP_SEGMENT send and arrives through UDP_GRO as one message, which the
 * link's receive cuts back into the same packets; each segment's ICRC was
 * moved to the IPv4 ID the kernel gave it (0, 1, 2...), which the receive
 * check solves back (proto/icrc.c).  Without the offloads (the sockets'
 * gso/gro off, as SOFTVERBS_GSO=0 leaves them) every packet is a datagram
 * of its own with ID 0.  Skips (77) on a kernel without UDP_SEGMENT or
 * UDP_GRO.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "link/udp.h"
#include "proto/icrc.h"
#include "proto/wire.h"

#define NPKT 12
#define FULL 1040 /* BTH + 1 KiB + ICRC, as at IB MTU 1024 */
#define LAST 532
#define SLOTS 4

static uint8_t pkts[NPKT][FULL];
static uint8_t sent[NPKT][FULL]; /* as built, ICRC for ID 0 */
static uint8_t rxmem[SLOTS][SV_UDP_GRO_BUF];
static struct sv_udp_rx rx[SLOTS];

struct got {
	int n;
	uint32_t len[2 * NPKT];
	int bad; /* not byte-equal to what was built (but the ICRC) */
	int icrc_exact, icrc_ids; /* ICRC over ID 0; over ID == index */
	struct sv_flow flow;
};

static uint32_t len_of(int i)
{
	return i == NPKT - 1 ? LAST : FULL;
}

static void deliver(void *arg, uint8_t *buf, uint32_t len, bool truncated,
		    const struct sv_flow *flow)
{
	struct got *g = arg;
	int i = g->n++;
	uint16_t id = 0xffff;
	enum sv_icrc_match m;

	if (i >= 2 * NPKT)
		return;
	g->len[i] = len;
	g->flow = *flow;
	if (truncated || i >= NPKT || len != len_of(i) ||
	    memcmp(buf, sent[i], len - SV_ICRC_BYTES)) {
		g->bad++;
		return;
	}
	m = sv_icrc_check(flow, buf, len, &id);
	g->icrc_exact += m == SV_ICRC_EXACT;
	g->icrc_ids += m != SV_ICRC_BAD && id == i;
}

static void build(uint16_t dport, uint16_t sport)
{
	struct sv_flow f = { 0 };
	uint32_t seed = 7;

	f.src.family = f.dst.family = AF_INET;
	f.src.addr[0] = f.dst.addr[0] = 127;
	f.src.addr[3] = f.dst.addr[3] = 1;
	f.sport = sport;
	f.dport = dport;
	for (int i = 0; i < NPKT; i++) {
		uint32_t len = len_of(i);

		for (uint32_t j = 0; j < len; j++)
			pkts[i][j] =
				(uint8_t)((seed = seed * 1103515245 + 12345) >>
					  16);
		pkts[i][0] = SV_OP_RC_RDMA_WRITE_MIDDLE;
		pkts[i][1] = 0x40; /* migreq, no pad, version 0 */
		sv_icrc_set(&f, pkts[i], len);
		memcpy(sent[i], pkts[i], len);
	}
}

/* Send every packet from a to b (their sockets' offloads as set), then
 * receive what arrives through the link. */
static void run(struct sv_udp_sock *a, struct sv_udp_sock *b, struct got *g,
		bool dup, int alone)
{
	struct sv_link_pkt tx[NPKT + 1];
	struct sockaddr_in6 dst;
	struct sv_ipaddr src = { .family = AF_INET, .addr = { 127, 0, 0, 1 } };
	struct pollfd p = { .fd = b->fd, .events = POLLIN };
	int n = 0;

	build(b->port, a->port);
	sv_ipaddr_to_sin6(&src, b->port, 0, &dst);
	for (int i = 0; i < NPKT; i++) {
		tx[n++] = (struct sv_link_pkt){ .buf = pkts[i],
						.len = len_of(i),
						.dst = &dst,
						.src = &src,
						.alone = i == alone };
		/* fault injection's duplicate: the same buffer twice */
		if (dup && i == 3) {
			tx[n] = tx[n - 1];
			n++;
		}
	}
	memset(g, 0, sizeof(*g));
	CHECK_EQ(sv_udp_send(a, tx, n), 0);
	/* loopback delivers within the send; wait a little anyway */
	CHECK(poll(&p, 1, 1000) == 1);
	while (poll(&p, 1, 100) == 1 &&
	       sv_link_udp.receive(b, deliver, g, 64, 0, false))
		;
}

int main(void)
{
	struct sv_udp_sock a = { .fd = -1 }, b = { .fd = -1 };
	struct got g;

	for (int i = 0; i < SLOTS; i++)
		rx[i] = (struct sv_udp_rx){ .buf = rxmem[i],
					    .size = SV_UDP_GRO_BUF };
	REQUIRE(sv_udp_open(&a) == 0);
	REQUIRE(sv_udp_open(&b) == 0);
	b.rx = rx;
	b.nrx = SLOTS;
	if (!a.gso || !sv_udp_gro(&b)) {
		fprintf(stderr, "no UDP_SEGMENT or UDP_GRO here: skipped\n");
		return 77;
	}

	/* One send, one coalesced receive, cut back into NPKT packets. */
	run(&a, &b, &g, false, -1);
	CHECK_EQ(a.counts.gso_sends, 1);
	CHECK_EQ(a.counts.gso_pkts, NPKT);
	CHECK_EQ(g.n, NPKT);
	CHECK_EQ(g.bad, 0);
	CHECK_EQ(b.counts.gro_pkts, NPKT);
	CHECK_EQ(g.len[NPKT - 1], LAST);
	CHECK_EQ(g.flow.sport, a.port);
	CHECK_EQ(g.flow.dport, b.port);
	/* segment k left with IPv4 ID k and its ICRC says so */
	CHECK_EQ(g.icrc_ids, NPKT);
	CHECK_EQ(g.icrc_exact, 1);
	/* the packets' own ICRCs were moved: back to ID 0 they are the
	 * ones built */
	for (int i = 1; i < NPKT; i++) {
		sv_icrc_move_ip_id(pkts[i], len_of(i), (uint16_t)i, 0);
		CHECK(!memcmp(pkts[i], sent[i], len_of(i)));
	}

	/* A duplicated buffer is never two segments of one send (their
	 * ICRCs would differ): two sends, every packet arrives. */
	a.counts.gso_sends = a.counts.gso_pkts = b.counts.gro_pkts = 0;
	run(&a, &b, &g, true, -1);
	CHECK_EQ(a.counts.gso_sends, 2);
	CHECK_EQ(g.n, NPKT + 1);

	/* A packet to go alone (link.h) splits the run around it. */
	a.counts.gso_sends = a.counts.gso_pkts = b.counts.gro_pkts = 0;
	run(&a, &b, &g, false, 5);
	CHECK_EQ(a.counts.gso_sends, 2);
	CHECK_EQ(a.counts.gso_pkts, NPKT - 1);
	CHECK_EQ(g.n, NPKT);
	CHECK_EQ(g.bad, 0);
	CHECK_EQ(g.icrc_exact, 3); /* the first of each send, and 5 */

	/* A receiver without UDP_GRO: the kernel cuts the send into its
	 * datagrams, each with the ID its ICRC was moved to. */
	sv_udp_close(&b);
	REQUIRE(sv_udp_open(&b) == 0);
	b.rx = rx;
	b.nrx = SLOTS;
	a.counts.gso_sends = a.counts.gso_pkts = 0;
	run(&a, &b, &g, false, -1);
	CHECK_EQ(a.counts.gso_sends, 1);
	CHECK_EQ(b.counts.gro_pkts, 0);
	CHECK_EQ(g.n, NPKT);
	CHECK_EQ(g.bad, 0);
	CHECK_EQ(g.icrc_ids, NPKT);

	/* Without the offloads: a datagram each, every ICRC over ID 0. */
	a.gso = false;
	a.counts.gso_sends = a.counts.gso_pkts = 0;
	run(&a, &b, &g, false, -1);
	CHECK_EQ(a.counts.gso_sends, 0);
	CHECK_EQ(b.counts.gro_pkts, 0);
	CHECK_EQ(g.n, NPKT);
	CHECK_EQ(g.bad, 0);
	CHECK_EQ(g.icrc_exact, NPKT);

	sv_udp_close(&a);
	sv_udp_close(&b);
	return check_done();
}
