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
 * floor(x^64 / P).  Buffers under 16 bytes and the tail that is not a
 * multiple of 16 bytes go to zlib, as does every buffer on a CPU without
 * PCLMULQDQ (checked once at run time).  tests/unit/test_crc32.c compares
 * the two over random lengths, alignments and starting values.
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

__attribute__((target("pclmul,sse4.1"))) static __m128i
fold(__m128i x, __m128i k, __m128i next)
{
	__m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* The CRC state (not inverted) after len bytes, len >= 16 and a multiple
 * of 16: four lanes from 64 bytes on, one below. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
clmul_crc(uint32_t state, const uint8_t *p, size_t len)
{
	const __m128i k12 = _mm_set_epi64x((long long)K2, (long long)K1);
	const __m128i k34 = _mm_set_epi64x((long long)K4, (long long)K3);
	const __m128i k5 = _mm_set_epi64x(0, (long long)K5);
	const __m128i pmu = _mm_set_epi64x((long long)MU, (long long)POLY);
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i x0, x1, x2, x3, t;

	x0 = _mm_loadu_si128((const __m128i *)p);
	x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)state));
	if (len >= 64) {
		x1 = _mm_loadu_si128((const __m128i *)(p + 16));
		x2 = _mm_loadu_si128((const __m128i *)(p + 32));
		x3 = _mm_loadu_si128((const __m128i *)(p + 48));
		p += 64;
		len -= 64;
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

static bool have_clmul(void)
{
	static _Atomic int have = -1; /* every thread finds the same */
	int h = atomic_load_explicit(&have, memory_order_relaxed);

	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("pclmul") &&
		    __builtin_cpu_supports("sse4.1");
		atomic_store_explicit(&have, h, memory_order_relaxed);
	}
	return h;
}
#endif

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
	/* From 16 bytes on: zlib takes ~1 ns a byte on short buffers, and
	 * the ICRC's pseudo-header (48 bytes for IPv4) was a third of a
	 * receiver's CPU at Ethernet MTU. */
	if (len >= 16 && have_clmul()) {
		size_t body = len & ~(size_t)15;

		crc = ~clmul_crc(~crc, buf, body);
		return sv_crc32_zlib(crc, (const uint8_t *)buf + body,
				     len - body);
	}
#endif
	return sv_crc32_zlib(crc, buf, len);
}
