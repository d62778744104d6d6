/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * CRC-32 (the gzip/Ethernet polynomial, reflected), zlib's crc32() with a
 * carry-less-multiply path.
 *
 * zlib 1.2.13 computes it a word at a time through tables (about 1-2 bytes
 * per cycle); the ICRC of every RoCE packet goes through it.  On x86-64
 * with PCLMULQDQ the buffer is folded instead: four 128-bit lanes each
 * multiplied by x^(512+-32) modulo P and added to the next 64 bytes, then
 * the lanes folded into one, then reduced 128 -> 64 -> 32 bits and a
 * Barrett reduction gives the remainder (the method of Gopal et al.,
 * "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ", Intel,
 * 2009).  The constants are those powers of x modulo P (bit-reflected,
 * shifted by one) for P = 0x104C11DB7; the Barrett pair is P itself and
 * floor(x^64 / P).  Where the CPU has VPCLMULQDQ with AVX-512, buffers
 * of 256 bytes and more are first folded sixteen lanes at a time (four
 * 512-bit registers), which halves again the cost of a packet's ICRC at
 * MTU 4096.  A tail shorter than 16 bytes is folded as one more block
 * rather than left to zlib's bytewise loop, which cost nearly as much as the
 * whole 1 KiB before it.  Buffers under 16 bytes go to zlib, as does every
 * buffer on a CPU without PCLMULQDQ (checked once at run
 * time).  tests/unit/test_crc32.c compares the two over random lengths,
 * alignments and starting values.
 */
#include "util/crc32.h"

#include <stdatomic.h>
#include <zlib.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define SV_CRC32_CLMUL 1

/* Powers of x modulo P, bit-reflected: K1/K2 fold a lane 512 bits ahead
 * (the four-lane loop), K3/K4 128 bits ahead (lanes into one, and the
 * 128 -> 64 step), K5 the 64 -> 32 step. */
#define K1 0x154442bd4ull
#define K2 0x1c6e41596ull
#define K3 0x1751997d0ull
#define K4 0x0ccaa009eull
#define K5 0x163cd6124ull
#define POLY 0x1db710641ull /* P, reflected */
#define MU 0x1f7011641ull /* floor(x^64 / P), reflected */
/* With VPCLMULQDQ: four 512-bit registers (sixteen lanes, 256 bytes)
 * folded 2048 bits ahead, then into one 64-byte window (the four-lane
 * state below) by folding the first three registers 1536, 1024 and 512
 * bits ahead onto the last.  Each pair: x^(D+32), x^(D-32) modulo P for
 * a distance of D bits, reflected and shifted as above (K1/K2 are
 * D = 512's). */
#define K2048_LO 0x11542778aull
#define K2048_HI 0x1322d1430ull
#define K1536_LO 0x1821d8bc0ull
#define K1536_HI 0x12e958ac4ull
#define K1024_LO 0x1e88ef372ull
#define K1024_HI 0x14a7fe880ull

__attribute__((target("pclmul,sse4.1"))) static __m128i
fold(__m128i x, __m128i k, __m128i next)
{
	__m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

#define VP_TARGET "avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1"

__attribute__((target(VP_TARGET))) static __m512i fold512(__m512i x, __m512i k,
							  __m512i next)
{
	__m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00);
	__m512i hi = _mm512_clmulepi64_epi128(x, k, 0x11);

	return _mm512_xor_si512(_mm512_xor_si512(lo, hi), next);
}

static __m512i k512(uint64_t lo, uint64_t hi)
	__attribute__((target(VP_TARGET)));
static __m512i k512(uint64_t lo, uint64_t hi)
{
	return _mm512_set_epi64((long long)hi, (long long)lo, (long long)hi,
				(long long)lo, (long long)hi, (long long)lo,
				(long long)hi, (long long)lo);
}

/* The first *len bytes (at least 256; the first 16 from head where that
 * is not NULL) folded 256 at a time into the four-lane state of a 64-byte
 * window, x[0..3], as clmul_crc's own loop leaves it; *p and *len move
 * past what was taken (a multiple of 64). */
__attribute__((target(VP_TARGET))) static void
fold_wide(uint32_t state, const uint8_t **p, size_t *len, const uint8_t *head,
	  __m128i x[4])
{
	const uint8_t *q = *p;
	size_t n = *len;
	__m512i z0 = _mm512_loadu_si512((const void *)q);
	__m512i z1 = _mm512_loadu_si512((const void *)(q + 64));
	__m512i z2 = _mm512_loadu_si512((const void *)(q + 128));
	__m512i z3 = _mm512_loadu_si512((const void *)(q + 192));
	__m512i k = k512(K2048_LO, K2048_HI);

	if (head)
		z0 = _mm512_inserti32x4(
			z0, _mm_loadu_si128((const __m128i *)head), 0);
	z0 = _mm512_xor_si512(
		z0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)state)));
	q += 256;
	n -= 256;
	while (n >= 256) {
		z0 = fold512(z0, k, _mm512_loadu_si512((const void *)q));
		z1 = fold512(z1, k, _mm512_loadu_si512((const void *)(q + 64)));
		z2 = fold512(z2, k,
			     _mm512_loadu_si512((const void *)(q + 128)));
		z3 = fold512(z3, k,
			     _mm512_loadu_si512((const void *)(q + 192)));
		q += 256;
		n -= 256;
	}
	/* Into the last 64 bytes' window. */
	z3 = fold512(z0, k512(K1536_LO, K1536_HI), z3);
	z3 = fold512(z1, k512(K1024_LO, K1024_HI), z3);
	z3 = fold512(z2, k512(K1, K2), z3);
	x[0] = _mm512_extracti32x4_epi32(z3, 0);
	x[1] = _mm512_extracti32x4_epi32(z3, 1);
	x[2] = _mm512_extracti32x4_epi32(z3, 2);
	x[3] = _mm512_extracti32x4_epi32(z3, 3);
	*p = q;
	*len = n;
}

static bool have_vpclmul(void);

/* pshufb controls that move a 16-byte block by r bytes (indices with the
 * top bit set give zero bytes): from tail_shift + r, the block's first r
 * bytes end up as its last (the rest zero); from tail_keep + r, its last
 * 16 - r bytes become its first, and the top bit marks the r lanes left
 * for the tail. */
static const uint8_t tail_shift[32] = {
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0,    1,	  2,	3,    4,    5,
	6,    7,    8,	  9,	10,   11,   12,	  13,	14,   15,
};
static const uint8_t tail_keep[32] = {
	0,    1,    2,	  3,	4,    5,    6,	  7,	8,    9,    10,
	11,   12,   13,	  14,	15,   0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

/* The CRC state (not inverted) after len bytes, len >= 16, the first 16
 * of them from head where that is not NULL (the ICRC's masked BTH): four
 * lanes from 64 bytes on (sixteen from 256 on, where the CPU has
 * VPCLMULQDQ), one below.  A tail of r < 16 bytes is folded in as one
 * more block: the state's first r bytes, led by zeros (which do not change
 * a CRC), are folded 128 bits ahead onto its other 16 - r bytes followed by
 * the tail (zlib's bytewise loop would cost as much as the rest). */
__attribute__((target("pclmul,ssse3,sse4.1"))) static uint32_t
clmul_crc(uint32_t state, const uint8_t *p, size_t len, const uint8_t *head)
{
	const __m128i k12 = _mm_set_epi64x((long long)K2, (long long)K1);
	const __m128i k34 = _mm_set_epi64x((long long)K4, (long long)K3);
	const __m128i k5 = _mm_set_epi64x(0, (long long)K5);
	const __m128i pmu = _mm_set_epi64x((long long)MU, (long long)POLY);
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	const uint8_t *end = p + len;
	size_t r = len & 15;
	__m128i x0, x1, x2, x3, t;

	len -= r;
	if (len >= 256 && have_vpclmul()) {
		__m128i x[4];

		fold_wide(state, &p, &len, head, x);
		x0 = x[0];
		x1 = x[1];
		x2 = x[2];
		x3 = x[3];
		goto four_lanes;
	}
	x0 = _mm_loadu_si128((const __m128i *)(head ? head : p));
	x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)state));
	if (len >= 64) {
		x1 = _mm_loadu_si128((const __m128i *)(p + 16));
		x2 = _mm_loadu_si128((const __m128i *)(p + 32));
		x3 = _mm_loadu_si128((const __m128i *)(p + 48));
		p += 64;
		len -= 64;
four_lanes:
		while (len >= 64) {
			x0 = fold(x0, k12, _mm_loadu_si128((const __m128i *)p));
			x1 = fold(x1, k12,
				  _mm_loadu_si128((const __m128i *)(p + 16)));
			x2 = fold(x2, k12,
				  _mm_loadu_si128((const __m128i *)(p + 32)));
			x3 = fold(x3, k12,
				  _mm_loadu_si128((const __m128i *)(p + 48)));
			p += 64;
			len -= 64;
		}
		/* Four lanes into one. */
		x0 = fold(x0, k34, x1);
		x0 = fold(x0, k34, x2);
		x0 = fold(x0, k34, x3);
	} else {
		p += 16;
		len -= 16;
	}
	/* The remaining 16-byte blocks. */
	while (len >= 16) {
		x0 = fold(x0, k34, _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	if (r) {
		/* The buffer's last 16 bytes end with the tail (they may
		 * reach back into head's block: those lanes are not used). */
		__m128i keep =
			_mm_loadu_si128((const __m128i *)(tail_keep + r));
		__m128i last = _mm_loadu_si128((const __m128i *)(end - 16));
		__m128i lead = _mm_shuffle_epi8(
			x0, _mm_loadu_si128((const __m128i *)(tail_shift + r)));

		x0 = fold(lead, k34,
			  _mm_blendv_epi8(_mm_shuffle_epi8(x0, keep), last,
					  keep));
	}
	/* 128 -> 64 bits: the low half times x^96 mod P onto the high. */
	t = _mm_clmulepi64_si128(x0, k34, 0x10);
	x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), t);
	/* 64 -> 32 bits. */
	t = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), k5, 0x00);
	x0 = _mm_xor_si128(_mm_srli_si128(x0, 4), t);
	/* Barrett: the quotient from mu, times P, taken away. */
	t = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), pmu, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), pmu, 0x00);
	x0 = _mm_xor_si128(x0, t);
	return (uint32_t)_mm_extract_epi32(x0, 1);
}

/* What the CPU has, found once (every thread finds the same). */
enum { CPU_CLMUL = 1, CPU_WIDE = 2 };

static int cpu_has(void)
{
	static _Atomic int has = -1;
	int h = atomic_load_explicit(&has, memory_order_relaxed);

	if (h < 0) {
		__builtin_cpu_init();
		h = 0;
		if (__builtin_cpu_supports("pclmul") &&
		    __builtin_cpu_supports("ssse3") &&
		    __builtin_cpu_supports("sse4.1"))
			h |= CPU_CLMUL;
		if (__builtin_cpu_supports("vpclmulqdq") &&
		    __builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("avx512vl"))
			h |= CPU_WIDE;
		atomic_store_explicit(&has, h, memory_order_relaxed);
	}
	return h;
}

static bool have_clmul(void)
{
	return cpu_has() & CPU_CLMUL;
}

static _Atomic bool wide_off; /* sv_crc32_wide(false): tests */

static bool have_vpclmul(void)
{
	return (cpu_has() & CPU_WIDE) &&
	       !atomic_load_explicit(&wide_off, memory_order_relaxed);
}
#endif

bool sv_crc32_wide(bool on)
{
#ifdef SV_CRC32_CLMUL
	atomic_store(&wide_off, !on);
	return on && have_vpclmul();
#else
	(void)on;
	return false;
#endif
}

bool sv_crc32_accelerated(void)
{
#ifdef SV_CRC32_CLMUL
	return have_clmul();
#else
	return false;
#endif
}

uint32_t sv_crc32_shift(uint32_t diff, size_t nzeros)
{
	/* crc32_combine(a, b, n) = a * x^(8n) mod P + b: with b = 0 that is
	 * the shift alone, linear in a. */
	return (uint32_t)crc32_combine(diff, 0, (z_off_t)nzeros);
}

uint32_t sv_crc32_zlib(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* zlib's length is an unsigned int */
	while (len > 0x40000000u) {
		crc = (uint32_t)crc32(crc, p, 0x40000000u);
		p += 0x40000000u;
		len -= 0x40000000u;
	}
	return (uint32_t)crc32(crc, p, (uInt)len);
}

uint32_t sv_crc32(uint32_t crc, const void *buf, size_t len)
{
#ifdef SV_CRC32_CLMUL
	/* From 16 bytes on: zlib is slow on short buffers, and every
	 * packet's ICRC starts with one (the 48-byte IPv4 pseudo-header). */
	if (len >= 16 && have_clmul())
		return ~clmul_crc(~crc, buf, len, NULL);
#endif
	return sv_crc32_zlib(crc, buf, len);
}

uint32_t sv_crc32_head(uint32_t crc, const uint8_t head[16], const void *buf,
		       size_t len)
{
#ifdef SV_CRC32_CLMUL
	if (have_clmul())
		return ~clmul_crc(~crc, buf, len, head);
#endif
	crc = sv_crc32_zlib(crc, head, 16);
	return sv_crc32_zlib(crc, (const uint8_t *)buf + 16, len - 16);
}
