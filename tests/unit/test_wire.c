/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The wire format: the opcode table against IBA 9.2.1 (Table 40), header
 * field layout and round trips, the parser on malformed packets, and the
 * RoCE v2 ICRC (against a packet captured from a ConnectX-4 Lx).
 */
#include <arpa/inet.h>
#include <stdint.h>

#include "check.h"
#include "proto/icrc.h"
#include "proto/ip.h"
#include "proto/wire.h"

/* Written independently of the table: the opcodes of IBA Table 40 for
 * RC/UC/UD and the headers each one carries. */
static const struct {
	uint8_t op;
	const char *name;
	uint32_t hdrs;
} expected[] = {
	{ 0x00, "RC_SEND_FIRST", 0 },
	{ 0x01, "RC_SEND_MIDDLE", 0 },
	{ 0x02, "RC_SEND_LAST", 0 },
	{ 0x03, "RC_SEND_LAST_WITH_IMMEDIATE", SV_M_IMMDT },
	{ 0x04, "RC_SEND_ONLY", 0 },
	{ 0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", SV_M_IMMDT },
	{ 0x06, "RC_RDMA_WRITE_FIRST", SV_M_RETH },
	{ 0x07, "RC_RDMA_WRITE_MIDDLE", 0 },
	{ 0x08, "RC_RDMA_WRITE_LAST", 0 },
	{ 0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", SV_M_IMMDT },
	{ 0x0a, "RC_RDMA_WRITE_ONLY", SV_M_RETH },
	{ 0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", SV_M_RETH | SV_M_IMMDT },
	{ 0x0c, "RC_RDMA_READ_REQUEST", SV_M_RETH },
	{ 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", SV_M_AETH },
	{ 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 0 },
	{ 0x0f, "RC_RDMA_READ_RESPONSE_LAST", SV_M_AETH },
	{ 0x10, "RC_RDMA_READ_RESPONSE_ONLY", SV_M_AETH },
	{ 0x11, "RC_ACKNOWLEDGE", SV_M_AETH },
	{ 0x12, "RC_ATOMIC_ACKNOWLEDGE", SV_M_AETH | SV_M_ATMACK },
	{ 0x13, "RC_COMPARE_SWAP", SV_M_ATMETH },
	{ 0x14, "RC_FETCH_ADD", SV_M_ATMETH },
	{ 0x16, "RC_SEND_LAST_WITH_INVALIDATE", SV_M_IETH },
	{ 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", SV_M_IETH },
	/* IBA 1.5, Annex A19 */
	{ 0x1d, "RC_ATOMIC_WRITE", SV_M_RETH },
	{ 0x20, "UC_SEND_FIRST", 0 },
	{ 0x21, "UC_SEND_MIDDLE", 0 },
	{ 0x22, "UC_SEND_LAST", 0 },
	{ 0x23, "UC_SEND_LAST_WITH_IMMEDIATE", SV_M_IMMDT },
	{ 0x24, "UC_SEND_ONLY", 0 },
	{ 0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", SV_M_IMMDT },
	{ 0x26, "UC_RDMA_WRITE_FIRST", SV_M_RETH },
	{ 0x27, "UC_RDMA_WRITE_MIDDLE", 0 },
	{ 0x28, "UC_RDMA_WRITE_LAST", 0 },
	{ 0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", SV_M_IMMDT },
	{ 0x2a, "UC_RDMA_WRITE_ONLY", SV_M_RETH },
	{ 0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", SV_M_RETH | SV_M_IMMDT },
	{ 0x64, "UD_SEND_ONLY", SV_M_DETH },
	{ 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", SV_M_DETH | SV_M_IMMDT },
	/* XRC (IBA Annex A14): requests carry the XRCETH */
	{ 0xa0, "XRC_SEND_FIRST", SV_M_XRCETH },
	{ 0xa1, "XRC_SEND_MIDDLE", SV_M_XRCETH },
	{ 0xa2, "XRC_SEND_LAST", SV_M_XRCETH },
	{ 0xa3, "XRC_SEND_LAST_WITH_IMMEDIATE", SV_M_XRCETH | SV_M_IMMDT },
	{ 0xa4, "XRC_SEND_ONLY", SV_M_XRCETH },
	{ 0xa5, "XRC_SEND_ONLY_WITH_IMMEDIATE", SV_M_XRCETH | SV_M_IMMDT },
	{ 0xa6, "XRC_RDMA_WRITE_FIRST", SV_M_XRCETH | SV_M_RETH },
	{ 0xa7, "XRC_RDMA_WRITE_MIDDLE", SV_M_XRCETH },
	{ 0xa8, "XRC_RDMA_WRITE_LAST", SV_M_XRCETH },
	{ 0xa9, "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
	  SV_M_XRCETH | SV_M_IMMDT },
	{ 0xaa, "XRC_RDMA_WRITE_ONLY", SV_M_XRCETH | SV_M_RETH },
	{ 0xab, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
	  SV_M_XRCETH | SV_M_RETH | SV_M_IMMDT },
	{ 0xac, "XRC_RDMA_READ_REQUEST", SV_M_XRCETH | SV_M_RETH },
	{ 0xad, "XRC_RDMA_READ_RESPONSE_FIRST", SV_M_AETH },
	{ 0xae, "XRC_RDMA_READ_RESPONSE_MIDDLE", 0 },
	{ 0xaf, "XRC_RDMA_READ_RESPONSE_LAST", SV_M_AETH },
	{ 0xb0, "XRC_RDMA_READ_RESPONSE_ONLY", SV_M_AETH },
	{ 0xb1, "XRC_ACKNOWLEDGE", SV_M_AETH },
	{ 0xb2, "XRC_ATOMIC_ACKNOWLEDGE", SV_M_AETH | SV_M_ATMACK },
	{ 0xb3, "XRC_COMPARE_SWAP", SV_M_XRCETH | SV_M_ATMETH },
	{ 0xb4, "XRC_FETCH_ADD", SV_M_XRCETH | SV_M_ATMETH },
	{ 0xb6, "XRC_SEND_LAST_WITH_INVALIDATE", SV_M_XRCETH | SV_M_IETH },
	{ 0xb7, "XRC_SEND_ONLY_WITH_INVALIDATE", SV_M_XRCETH | SV_M_IETH },
};

#define N_EXPECTED (sizeof(expected) / sizeof(expected[0]))

static bool has(const char *name, const char *word)
{
	return strstr(name, word) != NULL;
}

static void test_table(void)
{
	static const int hsize[SV_NUM_HDRS] = { 12, 8, 4, 16, 28, 4, 8, 4, 4 };
	unsigned int i, known = 0;

	for (i = 0; i < SV_NUM_HDRS; i++)
		CHECK_EQ(sv_hdr_sizes[i], hsize[i]);

	for (i = 0; i < 256; i++)
		if (sv_opinfo[i].name)
			known++;
	CHECK_EQ(known, N_EXPECTED);

	for (i = 0; i < N_EXPECTED; i++) {
		const struct sv_opinfo *o = &sv_opinfo[expected[i].op];
		const char *n = expected[i].name;
		uint32_t m = o->mask;
		unsigned int h, off = SV_BTH_BYTES;

		const char *got = o->name ? o->name : "(none)";

		if (strcmp(got, n))
			fprintf(stderr, "opcode 0x%02x is %s, expected %s\n",
				expected[i].op, got, n);
		REQUIRE(o->name);
		CHECK(!strcmp(o->name, n));
		CHECK_EQ(m & SV_M_HDRS, SV_M_BTH | expected[i].hdrs);

		/* Offsets follow the wire order, length is their sum. */
		CHECK_EQ(o->offset[SV_HDR_BTH], 0);
		for (h = 1; h < SV_NUM_HDRS; h++) {
			if (!(m & (1u << h)))
				continue;
			CHECK_EQ(o->offset[h], off);
			off += hsize[h];
		}
		CHECK_EQ(o->length, off);

		/* Transport from the opcode's top 3 bits (IBA 9.2.1). */
#define TRANSPORTS (SV_M_RC | SV_M_UC | SV_M_UD | SV_M_XRC)
		switch (expected[i].op >> 5) {
		case 0:
			CHECK((m & TRANSPORTS) == SV_M_RC);
			break;
		case 1:
			CHECK((m & TRANSPORTS) == SV_M_UC);
			break;
		case 3:
			CHECK((m & TRANSPORTS) == SV_M_UD);
			break;
		case 5:
			CHECK((m & TRANSPORTS) == SV_M_XRC);
			break;
		default:
			CHECK(0);
		}
		/* An XRC opcode is its RC twin + 0xa0, same class bits. */
		if (m & SV_M_XRC) {
			const struct sv_opinfo *rc =
				&sv_opinfo[expected[i].op - 0xa0];

			REQUIRE(rc->name);
			CHECK(!strcmp(rc->name + 2,
				      n + 3)); /* "RC_x" / "XRC_x" */
			CHECK_EQ(rc->mask & ~(SV_M_RC | SV_M_HDRS),
				 m & ~(SV_M_XRC | SV_M_HDRS));
			CHECK_EQ(m & SV_M_HDRS & ~SV_M_XRCETH,
				 rc->mask & SV_M_HDRS);
			CHECK(!!(m & SV_M_XRCETH) == !!(m & SV_M_REQ));
		}
		/* Class bits agree with the name. */
		CHECK(!!(m & SV_M_REQ) != !!(m & SV_M_RESP));
		CHECK(!!(m & SV_M_SEND) == has(n, "_SEND_"));
		CHECK(!!(m & SV_M_WRITE) == has(n, "WRITE"));
		CHECK(!!(m & SV_M_READ) == has(n, "READ_REQUEST"));
		CHECK(!!(m & SV_M_READ_RESP) == has(n, "READ_RESPONSE"));
		CHECK(!!(m & SV_M_ATOMIC) ==
		      (has(n, "COMPARE_SWAP") || has(n, "FETCH_ADD")));
		CHECK(!!(m & SV_M_ACK) == has(n, "ACKNOWLEDGE"));
		CHECK(!!(m & SV_M_IMM) == has(n, "IMMEDIATE"));
		CHECK(!!(m & SV_M_IMM) == !!(m & SV_M_IMMDT));
		CHECK(!!(m & SV_M_INV) == has(n, "INVALIDATE"));
		CHECK(!!(m & SV_M_INV) == !!(m & SV_M_IETH));
		if (has(n, "FIRST"))
			CHECK((m & (SV_M_START | SV_M_MIDDLE | SV_M_END)) ==
			      SV_M_START);
		else if (has(n, "MIDDLE"))
			CHECK((m & (SV_M_START | SV_M_MIDDLE | SV_M_END)) ==
			      SV_M_MIDDLE);
		else if (has(n, "LAST"))
			CHECK((m & (SV_M_START | SV_M_MIDDLE | SV_M_END)) ==
			      SV_M_END);
		else
			CHECK((m & (SV_M_START | SV_M_MIDDLE | SV_M_END)) ==
			      (SV_M_START | SV_M_END));
		/* Payload: everything but READ requests, ACKs and atomics. */
		CHECK(!!(m & SV_M_PAYLOAD) ==
		      !(has(n, "READ_REQUEST") || has(n, "ACKNOWLEDGE") ||
			(m & SV_M_ATOMIC)));
		/* A request completes a message on its last packet. */
		if (m & SV_M_REQ)
			CHECK(!!(m & SV_M_COMP) == !!(m & SV_M_END));
		else
			CHECK(!(m & SV_M_COMP));
		/* Receive WQEs are consumed by sends and writes with immediate. */
		CHECK(!!(m & SV_M_RWR) ==
		      (!!(m & SV_M_SEND) ||
		       ((m & SV_M_WRITE) && (m & SV_M_IMM))));
		/* RETH on the first packet of a write and on read requests. */
		if (m & SV_M_WRITE)
			CHECK(!!(m & SV_M_RETH) == !!(m & SV_M_START));
		/* AETH on every response but read response middle. */
		if (m & SV_M_RESP)
			CHECK(!!(m & SV_M_AETH) == !(m & SV_M_MIDDLE));
		CHECK(!strcmp(sv_opcode_name(expected[i].op), n));
	}
	CHECK(!strcmp(sv_opcode_name(0x15), "UNKNOWN"));
	CHECK(!strcmp(sv_opcode_name(0xff), "UNKNOWN"));
	CHECK(sv_opinfo[0x81].name ==
	      NULL); /* CNP: not a transport opcode here */
}

static void test_fields(void)
{
	uint8_t b[32];
	static const uint8_t bth[12] = { 0x04, 0xb0, 0xff, 0xff, 0x00, 0x12,
					 0x34, 0x56, 0x80, 0xab, 0xcd, 0xef };

	/* BTH: SEND ONLY, SE, pad 3, P_Key ffff, QP 0x123456, AckReq, PSN. */
	memset(b, 0, sizeof(b));
	sv_bth_set_opcode(b, 0x04);
	sv_bth_set_se(b, 1);
	sv_bth_set_pad(b, 3);
	sv_bth_set_pkey(b, 0xffff);
	sv_bth_set_qpn(b, 0x123456);
	sv_bth_set_ackreq(b, 1);
	sv_bth_set_psn(b, 0xabcdef);
	CHECK(!memcmp(b, bth, 12));
	CHECK_EQ(sv_bth_opcode(b), 4);
	CHECK_EQ(sv_bth_se(b), 1);
	CHECK_EQ(sv_bth_mig(b), 0);
	CHECK_EQ(sv_bth_pad(b), 3);
	CHECK_EQ(sv_bth_tver(b), 0);
	CHECK_EQ(sv_bth_pkey(b), 0xffff);
	CHECK_EQ(sv_bth_qpn(b), 0x123456);
	CHECK_EQ(sv_bth_ackreq(b), 1);
	CHECK_EQ(sv_bth_psn(b), 0xabcdef);
	/* Setting a field never disturbs its neighbours. */
	sv_bth_set_becn(b, 1);
	CHECK_EQ(b[4], 0x40);
	CHECK_EQ(sv_bth_qpn(b), 0x123456);
	sv_bth_set_qpn(b, 0xffffffff); /* masked to 24 bits */
	CHECK_EQ(sv_bth_qpn(b), 0xffffff);
	CHECK_EQ(sv_bth_becn(b), 1);
	CHECK_EQ(sv_bth_fecn(b), 0);
	sv_bth_set_ackreq(b, 0);
	CHECK_EQ(sv_bth_psn(b), 0xabcdef);
	CHECK_EQ(b[8], 0);
	sv_bth_set_psn(b, 0x1000000); /* wraps to 0 in 24 bits */
	CHECK_EQ(sv_bth_psn(b), 0);
	sv_bth_set_pad(b, 0);
	CHECK_EQ(sv_bth_se(b), 1);
	CHECK_EQ(b[1], 0x80);

	/* RETH */
	memset(b, 0, sizeof(b));
	sv_reth_set_va(b, 0x0102030405060708ull);
	sv_reth_set_rkey(b, 0xdeadbeef);
	sv_reth_set_len(b, 0x80000000u);
	CHECK_EQ(b[0], 0x01);
	CHECK_EQ(b[7], 0x08);
	CHECK_EQ(b[8], 0xde);
	CHECK_EQ(b[12], 0x80);
	CHECK(sv_reth_va(b) == 0x0102030405060708ull);
	CHECK_EQ(sv_reth_rkey(b), 0xdeadbeef);
	CHECK_EQ(sv_reth_len(b), 0x80000000u);

	/* AtomicETH */
	memset(b, 0, sizeof(b));
	sv_atmeth_set_va(b, 0x1122334455667788ull);
	sv_atmeth_set_rkey(b, 0x99aabbcc);
	sv_atmeth_set_swap_add(b, 0xfffffffffffffffeull);
	sv_atmeth_set_compare(b, 0x0123456789abcdefull);
	CHECK(sv_atmeth_va(b) == 0x1122334455667788ull);
	CHECK_EQ(sv_atmeth_rkey(b), 0x99aabbcc);
	CHECK(sv_atmeth_swap_add(b) == 0xfffffffffffffffeull);
	CHECK(sv_atmeth_compare(b) == 0x0123456789abcdefull);
	CHECK_EQ(b[12], 0xff);
	CHECK_EQ(b[20], 0x01);
	CHECK_EQ(b[27], 0xef);

	/* AETH: syndrome byte then 24-bit MSN */
	memset(b, 0, sizeof(b));
	sv_aeth_set_syndrome(b, SV_AETH_NAK_REM_ACCESS);
	sv_aeth_set_msn(b, 0xfedcba);
	CHECK_EQ(b[0], 0x62);
	CHECK_EQ(b[1], 0xfe);
	CHECK_EQ(sv_aeth_syndrome(b), 0x62);
	CHECK_EQ(sv_aeth_msn(b), 0xfedcba);

	/* DETH: Q_Key then reserved byte then source QP */
	memset(b, 0xee, sizeof(b));
	sv_deth_set_qkey(b, 0x11111111);
	sv_deth_set_sqp(b, 0x000abc);
	CHECK_EQ(sv_deth_qkey(b), 0x11111111);
	CHECK_EQ(sv_deth_sqp(b), 0xabc);
	CHECK_EQ(b[4], 0xee); /* reserved byte untouched */

	/* AtomicAckETH, ImmDt, IETH */
	sv_atmack_set_orig(b, 42);
	CHECK(sv_atmack_orig(b) == 42);
	sv_immdt_set_imm(b, 0xcafef00d);
	CHECK_EQ(b[0], 0xca);
	CHECK_EQ(sv_immdt_imm(b), 0xcafef00d);
	sv_ieth_set_rkey(b, 7);
	CHECK_EQ(sv_ieth_rkey(b), 7);
}

static void test_psn(void)
{
	CHECK_EQ(sv_psn_add(0xffffff, 1), 0);
	CHECK_EQ(sv_psn_add(0xfffffe, 5), 3);
	CHECK_EQ(sv_psn_diff(0, 0xffffff), 1);
	CHECK_EQ(sv_psn_diff(0xffffff, 0), -1);
	CHECK_EQ(sv_psn_diff(5, 5), 0);
	CHECK_EQ(sv_psn_diff(0x7fffff, 0), 0x7fffff);
	CHECK_EQ(sv_psn_diff(0x800000, 0), -0x800000);
	CHECK_EQ(sv_psn_diff(10, 0xfffff0), 26);
}

/* Build a packet: headers of `op`, payload of n bytes, pad, room for ICRC. */
static uint32_t build(uint8_t *buf, uint8_t op, uint32_t n)
{
	const struct sv_opinfo *o = &sv_opinfo[op];
	uint32_t pad = (4 - (n & 3)) & 3;
	uint32_t len = o->length + n + pad + SV_ICRC_BYTES;

	memset(buf, 0, len);
	sv_bth_set_opcode(buf, op);
	sv_bth_set_pad(buf, pad);
	sv_bth_set_pkey(buf, 0xffff);
	sv_bth_set_qpn(buf, 0x1234);
	sv_bth_set_psn(buf, 77);
	for (uint32_t i = 0; i < n; i++)
		buf[o->length + i] = (uint8_t)i;
	return len;
}

static void test_parse(void)
{
	static uint8_t buf[SV_MAX_PKT + 64];
	struct sv_pkt p;
	uint32_t len, i;

	/* A valid SEND ONLY WITH IMMEDIATE with 5 bytes of payload. */
	len = build(buf, SV_OP_RC_SEND_ONLY_WITH_IMMEDIATE, 5);
	CHECK_EQ(len, 12 + 4 + 8 + 4);
	CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_OK);
	CHECK_EQ(p.opcode, SV_OP_RC_SEND_ONLY_WITH_IMMEDIATE);
	CHECK_EQ(p.qpn, 0x1234);
	CHECK_EQ(p.psn, 77);
	CHECK_EQ(p.paylen, 5);
	CHECK_EQ(p.pad, 3);
	CHECK(p.payload == buf + 16);
	CHECK(sv_pkt_h(&p, SV_HDR_IMMDT) == buf + 12);

	/* Truncations shorter than the headers and ICRC, or not a whole
	 * number of words, are refused; the others parse as shorter packets
	 * (which only the ICRC can tell from the original). */
	for (i = 0; i < len; i++) {
		enum sv_pkt_err e = sv_pkt_parse(&p, buf, i);

		if (i < 12 + 4 + 4 || (i & 3))
			CHECK(e != SV_PKT_OK);
		else if (e == SV_PKT_OK)
			CHECK(p.paylen < 5);
	}
	/* A pad count larger than the bytes after the headers. */
	len = build(buf, SV_OP_RC_SEND_ONLY, 0);
	sv_bth_set_pad(buf, 3);
	CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_SHORT);

	/* Unknown opcodes. */
	len = build(buf, SV_OP_RC_SEND_ONLY, 8);
	for (i = 0; i < 256; i++) {
		buf[0] = (uint8_t)i;
		if (!sv_opinfo[i].name)
			CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_OPCODE);
	}
	/* Transport version other than 0. */
	len = build(buf, SV_OP_RC_SEND_ONLY, 8);
	sv_bth_set_tver(buf, 1);
	CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_TVER);
	/* Not a multiple of 4 bytes. */
	len = build(buf, SV_OP_RC_SEND_ONLY, 8);
	CHECK_EQ(sv_pkt_parse(&p, buf, len + 1), SV_PKT_ALIGN);
	CHECK_EQ(sv_pkt_parse(&p, buf, len - 2), SV_PKT_ALIGN);
	/* Payload or pad on opcodes that carry none. */
	len = build(buf, SV_OP_RC_ACKNOWLEDGE, 0);
	CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_OK);
	CHECK_EQ(p.paylen, 0);
	CHECK_EQ(sv_pkt_parse(&p, buf, len + 4), SV_PKT_PAYLOAD);
	sv_bth_set_pad(buf, 1);
	CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_PAD);
	len = build(buf, SV_OP_RC_RDMA_READ_REQUEST, 0);
	CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_OK);
	CHECK_EQ(sv_pkt_parse(&p, buf, len + 8), SV_PKT_PAYLOAD);
	len = build(buf, SV_OP_RC_COMPARE_SWAP, 0);
	CHECK_EQ(len, 12 + 28 + 4);
	CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_OK);
	CHECK_EQ(sv_pkt_parse(&p, buf, len - 4), SV_PKT_SHORT);
	/* A full 4096-byte MTU is fine, one word more is oversized. */
	len = build(buf, SV_OP_RC_RDMA_WRITE_ONLY, SV_MAX_PMTU);
	CHECK(len <= SV_MAX_PKT);
	CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_OK);
	CHECK_EQ(p.paylen, SV_MAX_PMTU);
	len = build(buf, SV_OP_RC_RDMA_WRITE_ONLY, SV_MAX_PMTU + 4);
	CHECK_EQ(sv_pkt_parse(&p, buf, len), SV_PKT_LONG);
	/* Garbage of every short length never parses, never crashes. */
	for (i = 0; i < 64; i++) {
		memset(buf, 0xa5, 64);
		(void)sv_pkt_parse(&p, buf, i);
	}
	/* Random bytes: whatever parses stays inside the buffer. */
	srand(1);
	for (i = 0; i < 200000; i++) {
		uint32_t l = (uint32_t)rand() % 128, j;

		for (j = 0; j < l; j++)
			buf[j] = (uint8_t)rand();
		if (i & 1)
			buf[1] &= 0x30; /* tver 0 so more get deeper */
		if (sv_pkt_parse(&p, buf, l) == SV_PKT_OK) {
			CHECK(p.payload >= buf &&
			      p.payload + p.paylen + p.pad + SV_ICRC_BYTES ==
				      buf + l);
		}
	}
}

/* A bitwise CRC-32 written from the definition (reflected polynomial
 * 0xedb88320, initial and final inversion), to check the zlib use. */
static uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

static void test_icrc(void)
{
	/* A RoCE v2 CNP captured from a ConnectX-4 Lx (published in scapy's
	 * RoCE tests): IPv4 ID 0x718c, TOS 0xc2, TTL 64, UDP 0 -> 4791,
	 * BTH opcode 0x81 with BECN, QP 0x118, 16 bytes of zero padding,
	 * ICRC 82 fd 00 2a on the wire. */
	static const uint8_t frame[] = {
		0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11,
		0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01,
		0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00,
		0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00,
		0,    0,    0,	  0,	0,    0,    0,	  0,	0,    0,
		0,    0,    0,	  0,	0,    0,    0x82, 0xfd, 0x00, 0x2a,
	};
	const uint8_t *ip = frame, *udp = frame + 20, *ib = frame + 28;
	uint32_t iblen = sizeof(frame) - 28, crc, wire;
	static uint8_t buf[256];
	struct sv_flow f4, f6;
	uint32_t len;

	crc = sv_icrc_raw(ip, 20, udp, ib, iblen);
	memcpy(&wire, ib + iblen - 4, 4);
	CHECK_EQ(crc, le32toh(wire));
	/* The variant fields do not matter. */
	{
		uint8_t ip2[20], ib2[64];

		memcpy(ip2, ip, 20);
		memcpy(ib2, ib, iblen);
		ip2[1] = 0;
		ip2[8] = 1;
		ip2[10] = 0x12;
		ib2[4] = 0x80; /* FECN instead of BECN */
		CHECK_EQ(sv_icrc_raw(ip2, 20, udp, ib2, iblen), crc);
		ip2[4] = 0; /* but the ID does */
		CHECK(sv_icrc_raw(ip2, 20, udp, ib2, iblen) != crc);
	}

	/* Our own flows: the rebuilt IPv4 header has ID 0 and DF. */
	memset(&f4, 0, sizeof(f4));
	f4.src.family = f4.dst.family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", f4.src.addr);
	inet_pton(AF_INET, "127.0.0.1", f4.dst.addr);
	f4.sport = 40000;
	f4.dport = 50000;
	len = build(buf, SV_OP_RC_SEND_ONLY, 13);
	sv_icrc_set(&f4, buf, len);
	CHECK_EQ(sv_icrc_check(&f4, buf, len, NULL), SV_ICRC_EXACT);
	{
		uint8_t ph[8 + 20 + 8 + 12 + 64];
		uint32_t n = 0;

		memset(ph, 0xff, 8);
		n = 8;
		ph[n++] = 0x45;
		ph[n++] = 0xff;
		ph[n++] = 0;
		ph[n++] = (uint8_t)(20 + 8 + len);
		ph[n++] = 0;
		ph[n++] = 0;
		ph[n++] = 0x40;
		ph[n++] = 0;
		ph[n++] = 0xff;
		ph[n++] = 17;
		ph[n++] = 0xff;
		ph[n++] = 0xff;
		memcpy(ph + n, f4.src.addr, 4);
		n += 4;
		memcpy(ph + n, f4.dst.addr, 4);
		n += 4;
		ph[n++] = 40000 >> 8;
		ph[n++] = 40000 & 0xff;
		ph[n++] = 50000 >> 8;
		ph[n++] = 50000 & 0xff;
		ph[n++] = 0;
		ph[n++] = (uint8_t)(8 + len);
		ph[n++] = 0xff;
		ph[n++] = 0xff;
		memcpy(ph + n, buf, len - 4);
		ph[n + 4] = 0xff;
		n += len - 4;
		CHECK_EQ(crc32_bitwise(0, ph, n),
			 sv_icrc_compute(&f4, buf, len));
	}
	/* Any change of covered bytes or of the flow is detected. */
	for (uint32_t i = 0; i < len - 4; i++) {
		if (i == 4)
			continue; /* FECN/BECN/resv: variant */
		buf[i] ^= 0x01;
		CHECK_EQ(sv_icrc_check(&f4, buf, len, NULL), SV_ICRC_BAD);
		buf[i] ^= 0x01;
	}
	buf[4] ^= 0xc0;
	CHECK_EQ(sv_icrc_check(&f4, buf, len, NULL), SV_ICRC_EXACT);
	buf[4] ^= 0xc0;
	buf[len - 1] ^= 0x80;
	CHECK_EQ(sv_icrc_check(&f4, buf, len, NULL), SV_ICRC_BAD);
	buf[len - 1] ^= 0x80;
	f4.sport++;
	CHECK_EQ(sv_icrc_check(&f4, buf, len, NULL), SV_ICRC_BAD);
	f4.sport--;
	f4.dst.addr[3] = 2;
	CHECK_EQ(sv_icrc_check(&f4, buf, len, NULL), SV_ICRC_BAD);
	f4.dst.addr[3] = 1;
	CHECK_EQ(sv_icrc_check(&f4, buf, len, NULL), SV_ICRC_EXACT);
	CHECK_EQ(sv_icrc_check(&f4, buf, 3, NULL), SV_ICRC_BAD);
	/* The ICRC masks the TOS: a router may rewrite DSCP. */
	f4.tclass = 0xb8;
	CHECK_EQ(sv_icrc_check(&f4, buf, len, NULL), SV_ICRC_EXACT);
	f4.tclass = 0;

	/* IPv6 flows. */
	memset(&f6, 0, sizeof(f6));
	f6.src.family = f6.dst.family = AF_INET6;
	inet_pton(AF_INET6, "fd00::2", f6.src.addr);
	inet_pton(AF_INET6, "fd00::3", f6.dst.addr);
	f6.sport = 1;
	f6.dport = 2;
	sv_icrc_set(&f6, buf, len);
	CHECK_EQ(sv_icrc_check(&f6, buf, len, NULL), SV_ICRC_EXACT);
	CHECK_EQ(sv_icrc_check(&f4, buf, len, NULL), SV_ICRC_BAD);
	f6.tclass = 0x48; /* ... and the traffic class */
	CHECK_EQ(sv_icrc_check(&f6, buf, len, NULL), SV_ICRC_EXACT);
	f6.src.addr[15] = 9;
	CHECK_EQ(sv_icrc_check(&f6, buf, len, NULL), SV_ICRC_BAD);
}

/* A UD receive's GRH area carries the flow's traffic class (IPv4 TOS in
 * the header's second byte, IPv6 traffic class across the first two),
 * and parses back to it; the IPv4 checksum covers it. */
static void test_grh_tclass(void)
{
	uint8_t grh[SV_GRH_BYTES];
	struct sv_grh_info gi;
	struct sv_flow f;

	memset(&f, 0, sizeof(f));
	f.src.family = f.dst.family = AF_INET;
	inet_pton(AF_INET, "10.0.0.1", f.src.addr);
	inet_pton(AF_INET, "10.0.0.2", f.dst.addr);
	f.tclass = 0xb9;
	sv_grh_build(grh, &f, 100);
	CHECK_EQ(grh[21], 0xb9);
	CHECK_EQ(sv_ip_checksum(grh + 20, 20), 0);
	CHECK_EQ(sv_grh_parse(grh, &gi), 0);
	CHECK_EQ(gi.src.family, AF_INET);
	CHECK_EQ(gi.tclass, 0xb9);

	memset(&f, 0, sizeof(f));
	f.src.family = f.dst.family = AF_INET6;
	inet_pton(AF_INET6, "fd00::1", f.src.addr);
	inet_pton(AF_INET6, "fd00::2", f.dst.addr);
	f.tclass = 0xa5;
	sv_grh_build(grh, &f, 100);
	CHECK_EQ(grh[0], 0x6a);
	CHECK_EQ(grh[1], 0x50);
	CHECK_EQ(sv_grh_parse(grh, &gi), 0);
	CHECK_EQ(gi.src.family, AF_INET6);
	CHECK_EQ(gi.tclass, 0xa5);
	CHECK_EQ(gi.flow_label, 0);
}

int main(void)
{
	test_table();
	test_fields();
	test_psn();
	test_parse();
	test_icrc();
	test_grh_tclass();
	return check_done();
}
