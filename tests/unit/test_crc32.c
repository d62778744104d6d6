/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * util/crc32.c against zlib's crc32: the same value for every length from
 * 0 to 1100 bytes and random ones up to 64 KiB, at every alignment 0..15,
 * from random starting values (a chained CRC), over random bytes; and a
 * buffer split at random points chains to the one-call value.  Also the
 * check value of the CRC-32 catalogue ("123456789" -> 0xcbf43926); and
 * sv_crc32_head against zlib over a copy with the head put in.  On a
 * CPU without PCLMULQDQ both sides are zlib and the test says so; on one
 * with VPCLMULQDQ the checks run with the 512-bit fold and without it.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "util/crc32.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static uint8_t buf[65536 + 64];

static unsigned int mismatches;

static void one(size_t off, size_t len, uint32_t start)
{
	uint32_t want = (uint32_t)crc32(start, buf + off, (uInt)len);
	uint32_t got = sv_crc32(start, buf + off, len);

	if (want != got && mismatches++ < 10)
		fprintf(stderr,
			"offset %zu length %zu start 0x%08x: zlib 0x%08x, sv_crc32 0x%08x\n",
			off, len, start, want, got);
}

static void checks(void)
{
	size_t len, off;
	int k;

	for (len = 0; len <= 1100; len++)
		for (off = 0; off < 16; off++)
			one(off, len, len & 1 ? rnd() : 0);
	for (k = 0; k < 2000; k++)
		one(rnd() % 64, rnd() % 65536, rnd());
	/* Lengths around the 64-byte loop and the 16-byte tail. */
	for (len = 48; len <= 4096; len += 16)
		for (k = -1; k <= 1; k++)
			one(3, len + (size_t)k, rnd());
	CHECK_EQ(mismatches, 0);

	/* sv_crc32_head: the first 16 bytes from elsewhere, as if copied. */
	for (k = 0; k < 3000; k++) {
		static uint8_t copy[4200];
		uint8_t head[16];
		size_t n = 16 + (k < 1100 ? (size_t)k : rnd() % 4096);
		size_t i, at = rnd() % 16;
		uint32_t start = rnd(), want, got;

		for (i = 0; i < sizeof(head); i++)
			head[i] = (uint8_t)rnd();
		memcpy(copy, head, sizeof(head));
		memcpy(copy + 16, buf + at + 16, n - 16);
		want = (uint32_t)crc32(start, copy, (uInt)n);
		got = sv_crc32_head(start, head, buf + at, n);
		if (want != got && mismatches++ < 10)
			fprintf(stderr,
				"head, length %zu: zlib 0x%08x, sv_crc32_head 0x%08x\n",
				n, want, got);
	}

	/* Chaining: any split gives the one-call value. */
	for (k = 0; k < 500; k++) {
		size_t n = rnd() % 65536, cut = n ? rnd() % n : 0;
		uint32_t whole = sv_crc32(0, buf, n);
		uint32_t part =
			sv_crc32(sv_crc32(0, buf, cut), buf + cut, n - cut);

		if (whole != part && mismatches++ < 10)
			fprintf(stderr, "split %zu of %zu: 0x%08x != 0x%08x\n",
				cut, n, part, whole);
	}
}

int main(void)
{
	size_t i;
	int wide;

	printf("carry-less multiply: %s\n",
	       sv_crc32_accelerated() ? "yes" : "no (both sides are zlib)");
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	CHECK_EQ(sv_crc32(0, "123456789", 9), 0xcbf43926u);
	CHECK_EQ(sv_crc32(0, buf, 0), 0u);

	/* Both folds where the CPU has the wide one (VPCLMULQDQ): 16 lanes
	 * of 512 bits from 256 bytes on, and the four 128-bit lanes. */
	for (wide = 1; wide >= 0; wide--) {
		printf("512-bit fold: %s\n",
		       sv_crc32_wide(wide) ? "yes" : "no");
		checks();
	}
	sv_crc32_wide(true);
	CHECK_EQ(mismatches, 0);
	return check_done();
}
