/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * proto/icrc.c against real Linux Soft-RoCE (rxe) packets: a UD SEND, an RC
 * SEND and its retransmission, as the guest of the interop rig sent them
 * across its tap (kernel 6.1.0-56-amd64; tests/interop/test_interop.py
 * capture --vectors prints them, with the IPv4 and UDP headers).  Checks
 * that sv_icrc_raw gives rxe's ICRC from the real headers, that the fields
 * the ICRC masks (TOS, TTL, IP and UDP checksums, BTH byte 4) do not change
 * it and the IPv4 Identification does, and that the header softverbs
 * rebuilds from the flow (proto/ip.c) is rxe's but for that ID: rxe sends a
 * non-zero, changing ID, which a receiver on a socket cannot see; the check
 * solves for it (icrc.c) and finds rxe's, and refuses changed packets
 * (issue #16, docs/interop.md).
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
	/* ... so the check with ID 0 fails on rxe's packets, and solving
	 * for the ID finds rxe's own. */
	{
		uint16_t id = 0;

		CHECK_EQ(sv_icrc_check(&flow, pkt, v->len, &id),
			 SV_ICRC_SOLVED);
		CHECK_EQ(id, (uint16_t)((uint8_t)v->ip[4] << 8 |
					(uint8_t)v->ip[5]));
		/* Any covered byte changed: no ID explains it (these
		 * lengths are checked exhaustively, one bit at a time). */
		for (uint32_t i = 0; i < (v->len - 4) * 8; i++) {
			if (i / 8 == 4)
				continue; /* BTH byte 4: masked */
			pkt[i / 8] ^= (uint8_t)(1u << (i % 8));
			CHECK_EQ(sv_icrc_check(&flow, pkt, v->len, NULL),
				 SV_ICRC_BAD);
			pkt[i / 8] ^= (uint8_t)(1u << (i % 8));
		}
		/* Nor a changed port or address. */
		flow.sport ^= 1;
		CHECK_EQ(sv_icrc_check(&flow, pkt, v->len, NULL), SV_ICRC_BAD);
		flow.sport ^= 1;
		flow.src.addr[3] ^= 4;
		CHECK_EQ(sv_icrc_check(&flow, pkt, v->len, NULL), SV_ICRC_BAD);
		flow.src.addr[3] ^= 4;
	}
}

/* Every ID, at a few lengths (the solver's columns depend on the length):
 * a packet sent under ID n is accepted as ID n, and one under ID n with a
 * random covered byte changed is refused but for about 2^-16 of them. */
static void every_id(void)
{
	struct sv_flow flow = { 0 };
	static const uint32_t lens[] = { 28, 80, 1060, 4124 };
	uint8_t pkt[4200], ip[20], udp[8];
	uint32_t seed = 12345, accepted_bad = 0, tried_bad = 0;

	flow.src.family = flow.dst.family = AF_INET;
	memcpy(flow.src.addr, "\x0a\x63\x00\x02", 4);
	memcpy(flow.dst.addr, "\x0a\x63\x00\x01", 4);
	flow.sport = 0xc123;
	flow.dport = 4791;
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		uint32_t len = lens[l];

		for (uint32_t i = 0; i < len; i++)
			pkt[i] = (uint8_t)((seed = seed * 1103515245 + 12345) >>
					   16);
		pkt[0] = 0x04;
		memset(ip, 0, sizeof(ip));
		ip[0] = 0x45;
		ip[2] = (uint8_t)((20 + 8 + len) >> 8);
		ip[3] = (uint8_t)(20 + 8 + len);
		ip[6] = 0x40;
		ip[9] = 17;
		memcpy(ip + 12, flow.src.addr, 4);
		memcpy(ip + 16, flow.dst.addr, 4);
		udp[0] = 0xc1;
		udp[1] = 0x23;
		udp[2] = 0x12;
		udp[3] = 0xb7;
		udp[4] = (uint8_t)((8 + len) >> 8);
		udp[5] = (uint8_t)(8 + len);
		udp[6] = udp[7] = 0;
		for (uint32_t id = 0; id < 65536; id += (l < 2 ? 1 : 61)) {
			uint32_t crc, le;
			uint16_t got = 0;
			enum sv_icrc_match m;

			ip[4] = (uint8_t)(id >> 8);
			ip[5] = (uint8_t)id;
			crc = sv_icrc_raw(ip, 20, udp, pkt, len);
			le = htole32(crc);
			memcpy(pkt + len - 4, &le, 4);
			m = sv_icrc_check(&flow, pkt, len, &got);
			CHECK_EQ(m, id ? SV_ICRC_SOLVED : SV_ICRC_EXACT);
			CHECK_EQ(got, id);
			if (id % 7 == 0) {
				uint32_t at =
					5 + (seed = seed * 1103515245 + 12345) %
						    (len - 9);
				uint8_t was = pkt[at];

				pkt[at] ^= (uint8_t)(1 + (seed >> 24) % 255);
				tried_bad++;
				accepted_bad +=
					sv_icrc_check(&flow, pkt, len, NULL) !=
					SV_ICRC_BAD;
				pkt[at] = was;
			}
		}
	}
	/* Expected about tried_bad / 65536 (a handful at most). */
	CHECK(tried_bad > 10000);
	CHECK(accepted_bad <= 4);
}

int main(void)
{
	size_t i;

	for (i = 0; i < NVEC; i++)
		one(&vectors[i]);
	every_id();

	/* A retransmission is the same packet under a new IPv4 ID, so its
	 * ICRC differs: the ID is rxe's per-packet IP ID, not fixed per QP. */
	CHECK(memcmp(vectors[1].pkt, vectors[2].pkt, vectors[1].len - 4) == 0);
	CHECK(memcmp(vectors[1].ip, vectors[2].ip, 4) == 0);
	CHECK(memcmp(vectors[1].ip + 4, vectors[2].ip + 4, 2) != 0);
	CHECK(icrc_of(&vectors[1]) != icrc_of(&vectors[2]));
	return check_done();
}
