/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Security: a packet from the network touches only memory inside an MR
 * whose rkey, PD and access rights allow it, and malformed, truncated or
 * unauthorised packets are dropped without disturbing the connection.
 *
 *   other_pd:  an rkey of an MR in another PD is refused (REM_ACCESS_ERR);
 *   dereg:     the rkey of a deregistered MR is refused;
 *   garbage:   raw UDP datagrams sent straight at a live QP's port
 *              (QPN >> 8): truncated BTH, unknown opcode, bad ICRC, wrong
 *              P_Key/QPN/version, bad pad, forged WRITEs with a wrong rkey
 *              (bad ICRC / spoofed source / duplicate / far-ahead PSN) -
 *              the victim's memory is unchanged, no receive completes, and
 *              the QP still works afterwards;
 *   forged_in_seq: a well-formed WRITE with a wrong rkey at exactly the
 *              expected PSN from the peer's address: memory unchanged
 *              (IBA lets the responder NAK and enter ERR here).
 *
 * The attacker builds RoCE v2 packets by hand: BTH (+RETH) + payload + pad
 * + ICRC, the ICRC as IBA Annex A17 defines it over the masked IPv4/UDP
 * headers an unconnected DF socket produces (ID 0, flags DF).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "harness.h"

#define VICTIM_LEN (1u << 20)
#define SEED 950

/* ---- rkey of another PD, of a deregistered MR ---------------------------- */

struct foreign {
	uint64_t addr[2];
	uint32_t rkey[2];
};

static void refused_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct foreign f;
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_recv(fd, &f, sizeof(f));
	hx_fill(ep.buf, 4096, 1);
	for (int i = 0; i < 2; i++) {
		/* WRITE into it, then (new QP) READ from it. */
		if (i) {
			hx_sync(fd);
			hx_ep_new_qp(&ep);
			hx_ep_connect(&ep);
		}
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, 1, ep.buf, 4096,
					 ep.mr->lkey, f.addr[i], f.rkey[i], 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_ACCESS_ERR, -1, -1);
		hx_sync(fd);
		hx_ep_new_qp(&ep);
		hx_ep_connect(&ep);
		memset(ep.buf + 65536, 0, 4096);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ,
					 IBV_SEND_SIGNALED, 2, ep.buf + 65536,
					 4096, ep.mr->lkey, f.addr[i],
					 f.rkey[i], 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 2, IBV_WC_REM_ACCESS_ERR, -1, -1);
		/* Not one byte of the secret came back. */
		CHECK_EQ(hx_verify(ep.buf + 65536, 4096, 0xbad) < 0, 0);
		int leaked = 0;
		for (int k = 0; k < 4096; k++)
			leaked |= ep.buf[65536 + k];
		CHECK_EQ(leaked, 0);
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void refused_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_pd *pd2;
	struct ibv_mr *mr2, *mr3;
	struct foreign f;
	struct hx_ep ep;
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	/* [0]: full rights, but in a second PD; [1]: deregistered. */
	pd2 = ibv_alloc_pd(ep.ctx);
	REQUIRE(pd2);
	hx_fill(ep.buf + 256 * 1024, 8192, 0xbad);
	hx_fill(ep.buf + 512 * 1024, 8192, 0xbad);
	mr2 = ibv_reg_mr(pd2, ep.buf + 256 * 1024, 8192, all);
	mr3 = ibv_reg_mr(ep.pd, ep.buf + 512 * 1024, 8192, all);
	REQUIRE(mr2 && mr3);
	f.addr[0] = (uintptr_t)mr2->addr;
	f.rkey[0] = mr2->rkey;
	f.addr[1] = (uintptr_t)mr3->addr;
	f.rkey[1] = mr3->rkey;
	CHECK_EQ(ibv_dereg_mr(mr3), 0);
	hx_send(fd, &f, sizeof(f));
	for (int i = 0; i < 2; i++) {
		if (i) {
			hx_sync(fd);
			hx_ep_new_qp(&ep);
			hx_ep_connect(&ep);
		}
		hx_sync(fd);
		hx_ep_new_qp(&ep);
		hx_ep_connect(&ep);
	}
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf + 256 * 1024, 8192, 0xbad);
	HX_CHECK_PATTERN(ep.buf + 512 * 1024, 8192, 0xbad);
	CHECK_EQ(ibv_dereg_mr(mr2), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- hand-made packets ------------------------------------------------------ */

enum {
	OP_SEND_ONLY = 0x04,
	OP_WRITE_ONLY = 0x0a,
	OP_RESERVED = 0x1f,
};

/*
 * The attacker sends either from its own UDP socket, or (root) through a
 * raw socket with a UDP header of its own making, so that a packet can
 * claim to come from the peer QP's port (QPN >> 8) - the only way to reach
 * the transport checks behind the address checks.
 */
struct attacker {
	int s;
	int raw;
	struct sockaddr_in me, victim;
};

static void attacker_set_victim(struct attacker *a, uint16_t dport)
{
	memset(&a->victim, 0, sizeof(a->victim));
	a->victim.sin_family = AF_INET;
	a->victim.sin_port = htons(dport);
	inet_pton(AF_INET, "127.0.0.1", &a->victim.sin_addr);
}

static void attacker_open(struct attacker *a, const char *src, uint16_t dport)
{
	socklen_t sl = sizeof(a->me);

	a->raw = 0;
	a->s = socket(AF_INET, SOCK_DGRAM, 0);
	REQUIRE(a->s >= 0);
	memset(&a->me, 0, sizeof(a->me));
	a->me.sin_family = AF_INET;
	inet_pton(AF_INET, src, &a->me.sin_addr);
	REQUIRE(bind(a->s, (struct sockaddr *)&a->me, sizeof(a->me)) == 0);
	REQUIRE(getsockname(a->s, (struct sockaddr *)&a->me, &sl) == 0);
	attacker_set_victim(a, dport);
}

/* Spoof source address src and port sport; 0 if raw sockets are denied. */
static int attacker_open_raw(struct attacker *a, const char *src,
			     uint16_t sport, uint16_t dport)
{
	a->raw = 1;
	a->s = socket(AF_INET, SOCK_RAW, IPPROTO_UDP);
	if (a->s < 0)
		return 0;
	memset(&a->me, 0, sizeof(a->me));
	a->me.sin_family = AF_INET;
	inet_pton(AF_INET, src, &a->me.sin_addr);
	REQUIRE(bind(a->s, (struct sockaddr *)&a->me, sizeof(a->me)) == 0);
	a->me.sin_port = htons(sport);
	attacker_set_victim(a, dport);
	return 1;
}

/* Send a RoCE payload (BTH...ICRC) as one UDP datagram. */
static void attacker_send(const struct attacker *a, const uint8_t *p, size_t n)
{
	uint8_t d[8 + 4200];
	const uint8_t *out = p;
	size_t len = n;

	if (a->raw) {
		/* UDP header by hand; checksum 0 = none (IPv4). */
		memcpy(d, &a->me.sin_port, 2);
		memcpy(d + 2, &a->victim.sin_port, 2);
		d[4] = (uint8_t)((n + 8) >> 8);
		d[5] = (uint8_t)(n + 8);
		d[6] = d[7] = 0;
		memcpy(d + 8, p, n);
		out = d;
		len = n + 8;
	}
	CHECK_EQ(sendto(a->s, out, len, 0, (const struct sockaddr *)&a->victim,
			sizeof(a->victim)),
		 (ssize_t)len);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/* ICRC per IBA Annex A17.3.3 over the headers the kernel will build. */
static uint32_t icrc(const struct attacker *a, const uint8_t *pkt, size_t len)
{
	uint8_t ph[8 + 20 + 8 + 12];
	uint16_t udplen = (uint16_t)(8 + len);
	uLong crc;

	memset(ph, 0xff, 8);
	uint8_t *ip = ph + 8, *udp = ph + 28, *bth = ph + 36;
	ip[0] = 0x45;
	ip[1] = 0xff; /* TOS (masked) */
	ip[2] = (uint8_t)((20 + udplen) >> 8);
	ip[3] = (uint8_t)(20 + udplen);
	ip[4] = ip[5] = 0; /* ID */
	ip[6] = 0x40; /* DF */
	ip[7] = 0;
	ip[8] = 0xff; /* TTL (masked) */
	ip[9] = 17;
	ip[10] = ip[11] = 0xff; /* checksum (masked) */
	memcpy(ip + 12, &a->me.sin_addr, 4);
	memcpy(ip + 16, &a->victim.sin_addr, 4);
	memcpy(udp, &a->me.sin_port, 2);
	memcpy(udp + 2, &a->victim.sin_port, 2);
	udp[4] = (uint8_t)(udplen >> 8);
	udp[5] = (uint8_t)udplen;
	udp[6] = udp[7] = 0xff; /* checksum (masked) */
	memcpy(bth, pkt, 12);
	bth[4] = 0xff; /* FECN/BECN/resv (masked) */
	crc = crc32(0, ph, sizeof(ph));
	crc = crc32(crc, pkt + 12, (uInt)(len - 12 - 4));
	return (uint32_t)crc;
}

struct forge {
	uint8_t opcode;
	uint8_t tver;
	uint16_t pkey;
	uint32_t qpn, psn;
	int reth; /* add a RETH */
	uint64_t va;
	uint32_t rkey, dmalen;
	const uint8_t *payload;
	size_t plen;
	int pad; /* -1: natural padding; else forced count */
	int bad_icrc;
};

/* Build and send one packet; returns its length. */
static size_t forge_send(const struct attacker *a, const struct forge *f)
{
	uint8_t p[4200];
	size_t n = 12;
	int pad = (int)((4 - f->plen % 4) % 4);

	memset(p, 0, sizeof(p));
	p[0] = f->opcode;
	p[1] = (uint8_t)(((f->pad >= 0 ? f->pad : pad) & 3) << 4 |
			 (f->tver & 0xf));
	p[2] = (uint8_t)(f->pkey >> 8);
	p[3] = (uint8_t)f->pkey;
	put32(p + 4, f->qpn & 0xffffff);
	put32(p + 8, 0x80000000u | (f->psn & 0xffffff));
	if (f->reth) {
		put64(p + n, f->va);
		put32(p + n + 8, f->rkey);
		put32(p + n + 12, f->dmalen);
		n += 16;
	}
	memcpy(p + n, f->payload, f->plen);
	n += f->plen + pad;
	n += 4;
	uint32_t c = icrc(a, p, n);
	if (f->bad_icrc)
		c ^= 0x00010000;
	p[n - 4] = (uint8_t)c; /* least significant byte first */
	p[n - 3] = (uint8_t)(c >> 8);
	p[n - 2] = (uint8_t)(c >> 16);
	p[n - 1] = (uint8_t)(c >> 24);
	attacker_send(a, p, n);
	return n;
}

static void send_raw(const struct attacker *a, const void *p, size_t n)
{
	attacker_send(a, p, n);
}

/* A WRITE ONLY of 64 bytes of 0x41 at the victim's buffer. */
static struct forge write_at(const struct hx_ep *ep, const uint8_t *junk)
{
	struct forge f = {
		.opcode = OP_WRITE_ONLY,
		.pkey = 0xffff,
		.qpn = ep->peer.qpn,
		.psn = ep->psn,
		.reth = 1,
		.va = ep->peer.addr + 4096,
		.rkey = ep->peer.rkey,
		.dmalen = 64,
		.payload = junk,
		.plen = 64,
		.pad = -1,
	};
	return f;
}

/* Open the attackers: "peer" claims A's own address and QP port (raw
 * socket, root only - else a plain socket), "spoof" A's port from another
 * address, "stranger" is a plain socket of its own. */
static void attackers_open(const struct hx_ep *ep, struct attacker *peer,
			   struct attacker *spoof, struct attacker *stranger)
{
	uint16_t vport = (uint16_t)(ep->peer.qpn >> 8);
	uint16_t myport = (uint16_t)(ep->qp->qp_num >> 8);

	if (!attacker_open_raw(peer, "127.0.0.1", myport, vport)) {
		hx_log("no raw sockets (not root?): forged packets come from a "
		       "foreign port and stop at the address check");
		attacker_open(peer, "127.0.0.1", vport);
	}
	if (!attacker_open_raw(spoof, "127.0.0.2", myport, vport))
		attacker_open(spoof, "127.0.0.2", vport);
	attacker_open(stranger, "127.0.0.1", vport);
}

static void garbage_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct attacker a, spoof, stranger;
	struct hx_ep ep;
	uint8_t junk[256];
	struct forge f;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	memset(junk, 0x41, sizeof(junk));
	attackers_open(&ep, &a, &spoof, &stranger);
	hx_sync(fd); /* B filled its buffer */

	/* Truncated datagrams. */
	send_raw(&a, junk, 0);
	send_raw(&a, junk, 3);
	send_raw(&a, junk, 11);
	send_raw(&stranger, junk, 7);
	/* A WRITE ONLY BTH with its RETH missing, valid ICRC. */
	f = write_at(&ep, junk);
	f.reth = 0;
	f.plen = 0;
	forge_send(&a, &f);
	/* A reserved opcode, otherwise perfect. */
	f = write_at(&ep, junk);
	f.opcode = OP_RESERVED;
	forge_send(&a, &f);
	/* Transport header version 1. */
	f = write_at(&ep, junk);
	f.tver = 1;
	forge_send(&a, &f);
	/* Wrong P_Key. */
	f = write_at(&ep, junk);
	f.pkey = 0x1234;
	forge_send(&a, &f);
	/* A QPN that does not exist on that port. */
	f = write_at(&ep, junk);
	f.qpn = ep.peer.qpn ^ 0x80;
	forge_send(&a, &f);
	/* Pad count (3) larger than what follows the headers (0 bytes). */
	f = write_at(&ep, junk);
	f.plen = 0;
	f.dmalen = 0;
	f.pad = 3;
	forge_send(&a, &f);
	/* The right rkey and PSN but a bad ICRC: must not land. */
	f = write_at(&ep, junk);
	f.bad_icrc = 1;
	forge_send(&a, &f);
	/* A SEND ONLY with a bad ICRC: must not consume a receive. */
	f = write_at(&ep, junk);
	f.opcode = OP_SEND_ONLY;
	f.reth = 0;
	f.bad_icrc = 1;
	forge_send(&a, &f);
	/* The right rkey and PSN, from an address that is not the peer's
	 * (IBA: an RC QP accepts only its path's source GID). */
	f = write_at(&ep, junk);
	forge_send(&spoof, &f);
	/* Wrong rkey: with a bad ICRC; from the wrong address; from a foreign
	 * port; with a duplicate PSN (answered, never executed); with a PSN
	 * far ahead (out of sequence: NAK at most). */
	f = write_at(&ep, junk);
	f.rkey ^= 0x00ffff00;
	f.bad_icrc = 1;
	forge_send(&a, &f);
	f.bad_icrc = 0;
	forge_send(&spoof, &f);
	forge_send(&stranger, &f);
	f.psn = (ep.psn - 1) & 0xffffff;
	forge_send(&a, &f);
	f.psn = (ep.psn + 0x400000) & 0xffffff;
	forge_send(&a, &f);
	hx_msleep(300);
	hx_sync(fd); /* B checks its memory and QP */
	hx_sync(fd);

	/* The connection still works, both ways. */
	hx_fill(ep.buf, 8192, 2);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 100, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 2,
				 ep.buf, 8192, ep.mr->lkey,
				 ep.peer.addr + 65536, ep.peer.rkey, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 3,
				 ep.buf + 65536, 8192, ep.mr->lkey,
				 ep.peer.addr + 8192, ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	HX_EXPECT(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 8192);
	/* B's bytes 8192..16383 of its SEED fill came back. */
	uint8_t *want = malloc(16384);
	hx_fill(want, 16384, SEED);
	CHECK(!memcmp(ep.buf + 65536, want + 8192, 8192));
	free(want);
	hx_sync(fd);
	close(a.s);
	close(spoof.s);
	close(stranger.s);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* The victim's buffer holds a pattern whose offset 0 is SEED's and whose
 * later bytes are the same pattern (one fill), except where A wrote. */
static void garbage_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_fill(ep.buf, VICTIM_LEN, SEED);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf + 512 * 1024, 256, ep.mr->lkey),
		    0);
	hx_sync(fd);
	hx_sync(fd);
	int64_t bad = hx_verify(ep.buf, VICTIM_LEN, SEED);
	if (bad >= 0)
		hx_log("victim memory changed at offset %lld", (long long)bad);
	CHECK(bad < 0);
	HX_EXPECT_NONE(ep.rcq, 50);
	HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	hx_sync(fd);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 100);
	HX_CHECK_PATTERN(ep.buf + 512 * 1024, 100, 2);
	HX_CHECK_PATTERN(ep.buf + 65536, 8192, 2);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/*
 * From the peer's own address and port (raw socket): first a forged WRITE
 * with the right rkey at the expected PSN - it lands, which proves the
 * forgery (headers, ICRC) is right, so the refusals above are the
 * engine's doing - then a forged WRITE with a wrong rkey at the next PSN:
 * refused, memory unchanged (IBA lets the responder NAK and enter ERR).
 */
static void forged_in_seq_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct attacker a, spoof, stranger;
	struct hx_ep ep;
	uint8_t junk[64];
	struct forge f;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	memset(junk, 0x41, sizeof(junk));
	attackers_open(&ep, &a, &spoof, &stranger);
	hx_send_u64(fd, a.raw);
	hx_sync(fd);
	f = write_at(&ep, junk);
	forge_send(&a, &f);
	hx_msleep(100);
	hx_sync(fd); /* B checks the first landed */
	f = write_at(&ep, junk);
	f.psn = (ep.psn + 1) & 0xffffff;
	f.va += 4096;
	f.rkey ^= 0x00ffff00;
	forge_send(&a, &f);
	hx_msleep(200);
	hx_sync(fd);
	hx_log("after the forged in-sequence WRITE: requester QP state %d",
	       hx_qp_state(ep.qp));
	close(a.s);
	close(spoof.s);
	close(stranger.s);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void forged_in_seq_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint8_t a41[64];

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	int raw = (int)hx_recv_u64(fd);
	hx_fill(ep.buf, VICTIM_LEN, SEED);
	hx_sync(fd);
	hx_sync(fd);
	memset(a41, 0x41, sizeof(a41));
	if (raw) {
		/* The positive control landed at 4096, nothing else moved. */
		CHECK(!memcmp(ep.buf + 4096, a41, 64));
	} else {
		hx_log("not root: no positive control");
	}
	uint8_t *want = hx_alloc(VICTIM_LEN);
	hx_fill(want, VICTIM_LEN, SEED);
	if (raw)
		memset(want + 4096, 0x41, 64);
	hx_sync(fd);
	int64_t diff = -1;
	for (size_t i = 0; i < VICTIM_LEN; i++)
		if (ep.buf[i] != want[i]) {
			diff = (int64_t)i;
			break;
		}
	if (diff >= 0)
		hx_log("victim memory changed at offset %lld", (long long)diff);
	CHECK(diff < 0);
	hx_free(want, VICTIM_LEN);
	hx_log("after the forged in-sequence WRITE: responder QP state %d",
	       hx_qp_state(ep.qp));
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = { HX_CASE(refused, 30),
					HX_CASE(garbage, 20),
					HX_CASE(forged_in_seq, 20),
					{ 0 } };

HX_MAIN(cases)
