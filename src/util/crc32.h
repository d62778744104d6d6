/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * CRC-32 as zlib's crc32() computes it (gzip's polynomial, reflected, the
 * value inverted before and after): crc32.c, with carry-less multiplies
 * where the CPU has them.
 */
#ifndef SV_UTIL_CRC32_H
#define SV_UTIL_CRC32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* zlib's crc32(crc, buf, len): start with crc 0, chain by passing the
 * previous result. */
uint32_t sv_crc32(uint32_t crc, const void *buf, size_t len);
/* sv_crc32 of len >= 16 bytes of which the first 16 are read from head
 * instead of buf: the ICRC covers a packet with a few header bits masked,
 * and this spares copying it (proto/icrc.c). */
uint32_t sv_crc32_head(uint32_t crc, const uint8_t head[16], const void *buf,
		       size_t len);
/* The same through zlib only (the fallback; the unit test's reference). */
uint32_t sv_crc32_zlib(uint32_t crc, const void *buf, size_t len);
/* The CRC-32 of a message followed by n zero bytes, from the message's
 * CRC taken without its pre- and post-inversion: the operator is linear,
 * so it maps the difference of two messages' CRCs to the difference after
 * both grew by n zeros (zlib's crc32_combine with an empty second part). */
uint32_t sv_crc32_shift(uint32_t diff, size_t nzeros);
/* Does sv_crc32 use carry-less multiplies on this CPU? */
bool sv_crc32_accelerated(void);
/* Let sv_crc32 fold 256 bytes at a time with 512-bit carry-less
 * multiplies (VPCLMULQDQ, AVX-512) where the CPU has them (on, the
 * default) or not (the unit test checks both); returns whether it now
 * does. */
bool sv_crc32_wide(bool on);

#endif
