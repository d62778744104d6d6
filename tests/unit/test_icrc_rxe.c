/*
 * proto/icrc.c against real Linux Soft-RoCE (rxe) packets: a UD SEND, an RC
 * SEND and its retransmission, as the guest of the interop rig sent them
 * across its tap (kernel 6.1.0-56-amd64; tests/interop/test_interop.py
 * capture --vectors prints them, with the IPv4 and UDP headers).  Checks
 * that sv_icrc_raw gives rxe's ICRC from the real headers, that the fields
 * the ICRC masks (TOS, TTL, IP and UDP checksums, BTH byte 4) do not change
 * it and the IPv4 Identification does, and that the header softverbs
 * rebuilds from the flow (proto/ip.c) is rxe's but for that ID: rxe sends a
 * non-zero, changing ID, so a receiver that cannot see the IP header cannot
 * check rxe's ICRC (issue #16, docs/interop.md).
 */
#include <endian.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"
#include "proto/icrc.h"

struct vector {
	const char *ip, *udp, *pkt;
	uint32_t len;
};

static const struct vector vectors[] = {
	/* UD SEND ONLY (opcode 0x64) to QPN 0x123, Q_Key 0x11111111, 64 bytes */
	{
		.ip = "\x45\x00\x00\x74\x64\xff\x40\x00\x40\x11\xc0\xb1"
		      "\x0a\x63\x00\x02\x0a\x63\x00\x01",
		.udp = "\xdf\x94\x12\xb7\x00\x60\x00\x00",
		.pkt = "\x64\x00\xff\xff\x00\x00\x01\x23\x00\x68\x1d\x02"
		       "\x11\x11\x11\x11\x00\x00\x00\x11\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x3f\x07\xd5\x8f",
		.len = 88,
	},
	/* RC SEND ONLY (opcode 0x04), 64 bytes, PSN 0x5f2339 */
	{
		.ip = "\x45\x00\x00\x6c\x68\x02\x40\x00\x40\x11\xbd\xb6"
		      "\x0a\x63\x00\x02\x0a\x63\x00\x01",
		.udp = "\xd4\x76\x12\xb7\x00\x58\x00\x00",
		.pkt = "\x04\x00\xff\xff\x00\x00\x01\x23\x80\x5f\x23\x39"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x31\x0b\xb1\x33",
		.len = 80,
	},
	/* the same RC SEND retransmitted: only the IPv4 ID (and so the
	 * header checksum and the ICRC) differs */
	{
		.ip = "\x45\x00\x00\x6c\x68\x0f\x40\x00\x40\x11\xbd\xa9"
		      "\x0a\x63\x00\x02\x0a\x63\x00\x01",
		.udp = "\xd4\x76\x12\xb7\x00\x58\x00\x00",
		.pkt = "\x04\x00\xff\xff\x00\x00\x01\x23\x80\x5f\x23\x39"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b\x7b"
		       "\x7b\x7b\x7b\x7b\x6d\x16\x4e\x63",
		.len = 80,
	},
};
#define NVEC (sizeof(vectors) / sizeof(vectors[0]))

static uint32_t icrc_of(const struct vector *v)
{
	uint32_t le;

	memcpy(&le, v->pkt + v->len - 4, 4);
	return le32toh(le);
}

static uint32_t raw(const uint8_t *ip, const uint8_t *udp, const uint8_t *pkt,
		    uint32_t len)
{
	return sv_icrc_raw(ip, 20, udp, pkt, len);
}

static void one(const struct vector *v)
{
	uint8_t ip[20], udp[8], pkt[128];
	struct sv_flow flow = { 0 };
	uint32_t want = icrc_of(v);

	REQUIRE(v->len <= sizeof(pkt));
	memcpy(ip, v->ip, 20);
	memcpy(udp, v->udp, 8);
	memcpy(pkt, v->pkt, v->len);

	/* rxe's ICRC from rxe's own headers. */
	CHECK_EQ(raw(ip, udp, pkt, v->len), want);

	/* The variant fields are masked: any value gives the same ICRC. */
	ip[1] = 0x2e; /* TOS */
	ip[8] = 3; /* TTL */
	ip[10] = ip[11] = 0x5a; /* header checksum */
	udp[6] = udp[7] = 0xa5; /* UDP checksum */
	pkt[4] = 0xc0; /* BTH: FECN, BECN */
	CHECK_EQ(raw(ip, udp, pkt, v->len), want);

	/* The IPv4 ID is covered; so is every payload byte. */
	ip[5] ^= 1;
	CHECK(raw(ip, udp, pkt, v->len) != want);
	ip[5] ^= 1;
	pkt[20] ^= 0x80;
	CHECK(raw(ip, udp, pkt, v->len) != want);
	pkt[20] ^= 0x80;

	/* What rxe sends: IPv4 without options, DF, a non-zero ID, UDP
	 * checksum 0. */
	CHECK_EQ(ip[0], 0x45);
	CHECK_EQ(ip[6] & 0xe0, 0x40);
	CHECK((ip[4] | ip[5]) != 0);
	CHECK_EQ(v->udp[6] | v->udp[7], 0);

	/* The flow as a socket sees it: softverbs rebuilds rxe's header
	 * exactly but for the ID, which it takes as 0. */
	flow.src.family = flow.dst.family = AF_INET;
	memcpy(flow.src.addr, v->ip + 12, 4);
	memcpy(flow.dst.addr, v->ip + 16, 4);
	flow.sport = (uint16_t)((uint8_t)v->udp[0] << 8 | (uint8_t)v->udp[1]);
	flow.dport = (uint16_t)((uint8_t)v->udp[2] << 8 | (uint8_t)v->udp[3]);
	CHECK_EQ(flow.dport, 4791);
	ip[4] = ip[5] = 0;
	CHECK_EQ(sv_icrc_compute(&flow, pkt, v->len),
		 raw(ip, udp, pkt, v->len));
	/* ... so the check from the flow alone fails on rxe's packets. */
	CHECK(!sv_icrc_check(&flow, pkt, v->len));
}

int main(void)
{
	size_t i;

	for (i = 0; i < NVEC; i++)
		one(&vectors[i]);

	/* A retransmission is the same packet under a new IPv4 ID, so its
	 * ICRC differs: the ID is rxe's per-packet IP ID, not fixed per QP. */
	CHECK(memcmp(vectors[1].pkt, vectors[2].pkt, vectors[1].len - 4) == 0);
	CHECK(memcmp(vectors[1].ip, vectors[2].ip, 4) == 0);
	CHECK(memcmp(vectors[1].ip + 4, vectors[2].ip + 4, 2) != 0);
	CHECK(icrc_of(&vectors[1]) != icrc_of(&vectors[2]));
	return check_done();
}
