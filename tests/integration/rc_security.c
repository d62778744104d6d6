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
 *              (IBA lets the responder NAK and enter ERR here);
 *   bad_resp:  a hostile responder answers READs, a SEND and an atomic
 *              with responses too long or of the wrong kind: each WQE
 *              fails at once as rxe fails it, nothing is placed;
 *   ud_mtu:    a UD datagram longer than the port MTU is dropped and
 *              counted, as rxe drops it.
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
#include "xqp.h"

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
	OP_READ_REQ = 0x0c,
	OP_READ_RESP_ONLY = 0x10,
	OP_ATOMIC_ACK = 0x12,
	OP_FETCH_ADD = 0x14,
	OP_RESERVED = 0x1f,
	OP_UD_SEND_ONLY = 0x64,
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
	const uint8_t *ext; /* headers after the BTH (and RETH): AETH... */
	size_t extlen;
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
	if (f->extlen) {
		memcpy(p + n, f->ext, f->extlen);
		n += f->extlen;
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

/* ---- a hostile responder: answers of the wrong kind or length --------------
 *
 * A's RC QP is connected to an attacker's UDP socket on 127.0.0.1 whose
 * port names the "peer QP" (QPN = port << 8): the attacker reads each
 * request and answers it as it likes, from the very address and port the
 * QP expects and with a right ICRC, so no raw socket is needed.  A READ
 * answered with the right length is the positive control.  Then, as rxe's
 * completer does, the WQE fails at once and the QP enters ERR: a READ
 * response longer than asked with IBV_WC_LOC_PROT_ERR (nothing placed), a
 * response of the wrong kind (a READ response to a SEND or an atomic, an
 * ATOMIC ACK to a READ) with IBV_WC_FATAL_ERR.  Dropping them left the WQE
 * to the ACK timer (IBV_WC_RETRY_EXC_ERR after its retries): with timeout
 * 18 (1 s) and retry_cnt 7 that would take over 8 s, so the completion
 * must come within 2 s.
 */

struct badcase {
	const char *what;
	enum ibv_wr_opcode wr;
	uint32_t len;
	uint8_t req_op, resp_op;
	uint32_t resp_len;
	enum ibv_wc_status want;
	enum ibv_wc_opcode wc_op;
};

static const struct badcase badcases[] = {
	{ "READ answered right", IBV_WR_RDMA_READ, 100, OP_READ_REQ,
	  OP_READ_RESP_ONLY, 100, IBV_WC_SUCCESS, IBV_WC_RDMA_READ },
	{ "READ answered with more bytes", IBV_WR_RDMA_READ, 100, OP_READ_REQ,
	  OP_READ_RESP_ONLY, 200, IBV_WC_LOC_PROT_ERR, 0 },
	{ "SEND answered with a READ response", IBV_WR_SEND, 64, OP_SEND_ONLY,
	  OP_READ_RESP_ONLY, 64, IBV_WC_FATAL_ERR, 0 },
	{ "READ answered with an ATOMIC ACK", IBV_WR_RDMA_READ, 8, OP_READ_REQ,
	  OP_ATOMIC_ACK, 0, IBV_WC_FATAL_ERR, 0 },
	{ "FETCH_ADD answered with a READ response",
	  IBV_WR_ATOMIC_FETCH_AND_ADD, 8, OP_FETCH_ADD, OP_READ_RESP_ONLY, 8,
	  IBV_WC_FATAL_ERR, 0 },
};

/* The attacker's request: its opcode and PSN (0: nothing within 2 s). */
static int take_request(const struct attacker *a, uint8_t *op, uint32_t *psn)
{
	uint8_t p[4200];
	ssize_t n;

	if (hx_wait_fd(a->s, 2000) <= 0)
		return 0;
	n = recv(a->s, p, sizeof(p), 0);
	if (n < 12)
		return 0;
	*op = p[0];
	*psn = (uint32_t)p[9] << 16 | (uint32_t)p[10] << 8 | p[11];
	return 1;
}

static void bad_resp_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct attacker a;
	struct hx_ep ep;
	size_t i;

	o.timeout = 18;
	hx_ep_open(&ep, &o, fd);
	attacker_open(&a, "127.0.0.1", 0);
	for (i = 0; i < sizeof(badcases) / sizeof(badcases[0]); i++) {
		const struct badcase *c = &badcases[i];
		uint8_t ext[12], payload[256], op = 0;
		uint8_t *dst = ep.buf + 64 * 1024;
		uint32_t psn = 0;
		struct forge f;
		struct ibv_wc wc;
		uint64_t t0;
		int rc;

		hx_log("case: %s", c->what);
		if (i)
			hx_ep_new_qp(&ep);
		memset(&ep.peer, 0, sizeof(ep.peer));
		ep.peer.qpn = (uint32_t)ntohs(a.me.sin_port) << 8;
		ep.peer.gid = ep.gid;
		ep.peer.mtu = ep.mtu;
		REQUIRE(hx_ep_rtr(&ep) == 0);
		REQUIRE(hx_ep_rts(&ep) == 0);
		attacker_set_victim(&a, (uint16_t)(ep.qp->qp_num >> 8));
		memset(dst, 0, 512);
		if (c->wr == IBV_WR_ATOMIC_FETCH_AND_ADD)
			rc = hx_post_atomic(&ep, c->wr, IBV_SEND_SIGNALED, i,
					    dst, ep.mr->lkey, 0x1000, 0x1234, 1,
					    0);
		else
			rc = hx_post_send(&ep, c->wr, IBV_SEND_SIGNALED, i, dst,
					  c->len, ep.mr->lkey, 0x1000, 0x1234,
					  0);
		HX_CHECK_RC(rc, 0);
		if (!take_request(&a, &op, &psn)) {
			hx_log("no request reached the attacker");
			CHECK(0);
			continue;
		}
		CHECK_EQ(op, c->req_op);
		/* AETH: ACK (syndrome 0x1f), MSN 1; an ATOMIC ACK's original
		 * value after it. */
		memset(ext, 0, sizeof(ext));
		ext[0] = 0x1f;
		ext[3] = 1;
		hx_fill(payload, sizeof(payload), 500 + i);
		f = (struct forge){
			.opcode = c->resp_op,
			.pkey = 0xffff,
			.qpn = ep.qp->qp_num,
			.psn = psn,
			.payload = payload,
			.plen = c->resp_len,
			.pad = -1,
			.ext = ext,
			.extlen = c->resp_op == OP_ATOMIC_ACK ? 12 : 4,
		};
		t0 = hx_now_ms();
		forge_send(&a, &f);
		if (HX_EXPECT_T(ep.scq, &wc, i, c->want, c->wc_op,
				c->want == IBV_WC_SUCCESS ? (int64_t)c->len :
							    -1,
				5000)) {
			hx_log("completed in %llu ms",
			       (unsigned long long)(hx_now_ms() - t0));
			CHECK(hx_now_ms() - t0 < 2000);
		}
		if (c->want == IBV_WC_SUCCESS) {
			CHECK(!memcmp(dst, payload, c->len));
		} else {
			uint8_t zero[512] = { 0 };

			/* Nothing of the bad response was placed. */
			CHECK(!memcmp(dst, zero, sizeof(zero)));
			CHECK_EQ(hx_qp_state(ep.qp), IBV_QPS_ERR);
		}
	}
	close(a.s);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void bad_resp_b(int fd)
{
	(void)fd;
}

/* ---- a UD datagram longer than the port MTU ------------------------------
 *
 * An attacker's socket sends UD SEND ONLY packets with a right ICRC to
 * A's UD QP: one of the port's active MTU is received (the control), one
 * 4 bytes longer is dropped without a completion (rxe's responder drops
 * it too; our own senders refuse it at post) and counted (drop_ud_mtu).
 * Then a datagram of the MTU again is received: the QP goes on.
 */
static void ud_mtu_a(int fd)
{
	static const char *const names[] = { "drop_ud_mtu", NULL };
	struct hx_opts o = hx_opts_default();
	unsigned long long drops;
	struct ibv_port_attr pa;
	struct attacker a;
	struct hx_ep ep;
	uint8_t deth[8], *payload;
	uint32_t mtu, len[3];
	struct forge f;
	struct ibv_wc wc;
	int i;

	setenv("SOFTVERBS_STATS", "1", 1);
	o.max_recv_wr = 8;
	hx_ep_open(&ep, &o, fd);
	xq_new_qp(&ep, IBV_QPT_UD, NULL);
	REQUIRE(xq_ud_rts(ep.qp) == 0);
	REQUIRE(ibv_query_port(ep.ctx, 1, &pa) == 0);
	mtu = (uint32_t)hx_mtu_bytes(pa.active_mtu);
	len[0] = mtu;
	len[1] = mtu + 4;
	len[2] = mtu;
	for (i = 0; i < 3; i++)
		REQUIRE(xq_post_recv(ep.qp, i, ep.buf + i * 8192, 8192,
				     ep.mr->lkey) == 0);
	attacker_open(&a, "127.0.0.1", (uint16_t)(ep.qp->qp_num >> 8));
	payload = hx_alloc(8192);
	/* DETH: the QP's Q_Key, the source QP the attacker's port names. */
	put32(deth, XQ_QKEY);
	put32(deth + 4, (uint32_t)ntohs(a.me.sin_port) << 8);
	for (i = 0; i < 3; i++) {
		hx_fill(payload, len[i], 600 + i);
		f = (struct forge){
			.opcode = OP_UD_SEND_ONLY,
			.pkey = 0xffff,
			.qpn = ep.qp->qp_num,
			.psn = (uint32_t)i,
			.payload = payload,
			.plen = len[i],
			.pad = -1,
			.ext = deth,
			.extlen = sizeof(deth),
		};
		forge_send(&a, &f);
		if (i == 1)
			continue;
		/* Receives complete in order: the second datagram's WQE
		 * takes the third one. */
		if (HX_EXPECT(ep.rcq, &wc, i ? 1 : 0, IBV_WC_SUCCESS,
			      IBV_WC_RECV, XQ_GRH + len[i]))
			HX_CHECK_PATTERN(ep.buf + (i ? 1 : 0) * 8192 + XQ_GRH,
					 len[i], 600 + i);
	}
	HX_EXPECT_NONE(ep.rcq, 200);
	hx_free(payload, 8192);
	close(a.s);
	hx_ep_close_counters(&ep, names, &drops);
	CHECK_EQ(drops, 1);
}

static void ud_mtu_b(int fd)
{
	(void)fd;
}

static const struct hx_case cases[] = {
	HX_CASE(refused, 30),  HX_CASE(garbage, 20), HX_CASE(forged_in_seq, 20),
	HX_CASE(bad_resp, 30), HX_CASE(ud_mtu, 20),  { 0 }
};

HX_MAIN(cases)
