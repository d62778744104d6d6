/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RoCE v2 invariant CRC.
 *
 * Coverage (IBA Annex A17.3.3): the CRC-32 (util/crc32.c) of
 *   8 bytes of 0xff (the masked LRH of IB)
 *   + the IP header with its variant fields set to all ones
 *     (IPv4: TOS, TTL, header checksum; IPv6: traffic class, flow label,
 *     hop limit)
 *   + the UDP header with the checksum set to all ones
 *   + the BTH with byte 4 (FECN, BECN, reserved) set to all ones
 *   + the rest of the packet (extension headers, payload, pad),
 * transmitted least significant byte first (like the Ethernet FCS).
 * A user-space receiver cannot see the IP header, so both ends rebuild it
 * from the flow (proto/ip.c says with which values).
 */
#include "proto/icrc.h"

#include <endian.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/ip.h"
#include "proto/wire.h"
#include "util/crc32.h"

/* ---- the thread's caches --------------------------------------------------
 *
 * Three small tables per thread (what each holds is said where it is
 * used), in one block on the heap, freed when the thread exits: in
 * static TLS (the library has some, initial-exec) ~1.3 KiB of tables did
 * not fit the room glibc keeps for libraries loaded later by dlopen, with
 * ASan (pyverbs under python3, UCX: "cannot allocate memory in static TLS
 * block").  Only the pointer is thread-local. */

#define PSEUDO_CACHE 8

_Static_assert(sizeof(struct sv_flow) == 2 * (2 + 16) + 2 + 2 + 1 + 1,
	       "struct sv_flow has padding: compare it field by field");

/* The CRC of what precedes the BTH (the headers a flow implies, below). */
struct pseudo_entry {
	struct sv_flow flow; /* no padding: compared whole */
	uint32_t len; /* 0: empty entry */
	uint32_t crc;
};

#define ID_OFFSET (8 + 4) /* masked LRH, then the IPv4 ID at byte 4 */
#define ID_BITS 16
#define ID_CACHE 4
/* Bytes an IPv4 packet's ICRC covers: the masked LRH, the IPv4 and UDP
 * headers, then the packet without its ICRC. */
#define V4_COVERED(len) (8 + 20 + 8 - SV_ICRC_BYTES + (len))

/* A length's columns of M reduced (an unknown IPv4 ID, below). */
struct id_basis {
	uint32_t covered; /* bytes covered by the ICRC; 0: empty entry */
	uint32_t row[ID_BITS]; /* reduced rows of M */
	uint32_t pivot[ID_BITS]; /* each row's leading bit */
	uint16_t bits[ID_BITS]; /* the ID bits each row combines */
	unsigned int rank;
};

/* A length's columns of M (the IPv4 ID of a sent segment, below). */
struct id_cols {
	uint32_t covered; /* 0: empty entry */
	uint32_t col[ID_BITS];
};

struct icrc_cache {
	struct pseudo_entry pseudo[PSEUDO_CACHE];
	struct id_basis basis[ID_CACHE];
	struct id_cols cols[ID_CACHE];
	unsigned int pseudo_next, basis_next, cols_next;
};

static __thread struct icrc_cache *tls_cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static bool cache_keyed;

/* At thread exit; an ICRC computed after it (another key's destructor)
 * allocates again. */
static void cache_free(void *p)
{
	tls_cache = NULL;
	free(p);
}

static void cache_key_make(void)
{
	cache_keyed = !pthread_key_create(&cache_key, cache_free);
}

/* NULL without memory: nothing is cached then. */
static struct icrc_cache *thread_cache(void)
{
	struct icrc_cache *c = tls_cache;

	if (c)
		return c;
	pthread_once(&cache_once, cache_key_make);
	if (!cache_keyed || !(c = calloc(1, sizeof(*c))))
		return NULL;
	if (pthread_setspecific(cache_key, c)) {
		free(c);
		return NULL;
	}
	tls_cache = c;
	return c;
}

/* The covered bytes from the BTH on: the packet without its ICRC, BTH byte
 * 4 (FECN, BECN, resv6a) read as all ones, continuing the CRC of what
 * precedes them. */
static uint32_t covered_packet(uint32_t crc, const uint8_t *pkt, uint32_t len)
{
	uint8_t head[16]; /* len >= 16: a BTH and an ICRC at least */
	uint32_t n = len - SV_ICRC_BYTES;

	memcpy(head, pkt, sizeof(head));
	head[4] = 0xff;
	if (n < sizeof(head))
		return sv_crc32(crc, head, n);
	return sv_crc32_head(crc, head, pkt, n);
}

/* The CRC of the masked LRH and of an IP and a UDP header, their variant
 * fields masked. */
static uint32_t pseudo_header_crc(const uint8_t *ip, uint32_t iplen,
				  const uint8_t *udp)
{
	uint8_t ph[8 + 40 + 8];
	size_t n;

	memset(ph, 0xff, 8); /* masked LRH */
	n = 8;
	memcpy(ph + n, ip, iplen);
	if (iplen == 20) {
		ph[n + 1] = 0xff; /* TOS */
		ph[n + 8] = 0xff; /* TTL */
		ph[n + 10] = ph[n + 11] = 0xff; /* header checksum */
	} else {
		ph[n] |= 0x0f; /* traffic class, */
		ph[n + 1] = ph[n + 2] = ph[n + 3] = 0xff; /* flow label */
		ph[n + 7] = 0xff; /* hop limit */
	}
	n += iplen;
	memcpy(ph + n, udp, 8);
	ph[n + 6] = ph[n + 7] = 0xff; /* UDP checksum */
	n += 8;
	return sv_crc32(0, ph, n);
}

uint32_t sv_icrc_raw(const uint8_t *ip, uint32_t iplen, const uint8_t *udp,
		     const uint8_t *pkt, uint32_t len)
{
	if ((iplen != 20 && iplen != 40) || len < SV_BTH_BYTES + SV_ICRC_BYTES)
		return 0;
	return covered_packet(pseudo_header_crc(ip, iplen, udp), pkt, len);
}

/* ---- the headers a flow implies ----------------------------------------------
 *
 * What precedes the BTH depends only on the flow and the packet's length,
 * and a stream of MTU-sized packets has few lengths: the CRC of that part
 * is kept in a small per-thread cache (building the headers and folding
 * them was a third of a 1 KiB packet's ICRC). */

static uint32_t flow_pseudo_crc(const struct sv_flow *flow, uint32_t len)
{
	struct icrc_cache *c = thread_cache();
	struct pseudo_entry *e;
	uint8_t ip[40], udp[8];
	uint32_t udplen = 8 + len, crc;
	unsigned int i;

	for (i = 0; c && i < PSEUDO_CACHE; i++) {
		e = &c->pseudo[i];
		if (e->len == len && e->flow.sport == flow->sport &&
		    !memcmp(&e->flow, flow, sizeof(*flow)))
			return e->crc;
	}
	sv_store_be16(udp, flow->sport);
	sv_store_be16(udp + 2, flow->dport);
	sv_store_be16(udp + 4, udplen);
	sv_store_be16(udp + 6, 0);
	crc = pseudo_header_crc(ip, sv_ip_header(ip, flow, udplen, 0), udp);
	if (c) {
		e = &c->pseudo[c->pseudo_next++ % PSEUDO_CACHE];
		e->flow = *flow;
		e->len = len;
		e->crc = crc;
	}
	return crc;
}

uint32_t sv_icrc_compute(const struct sv_flow *flow, const uint8_t *pkt,
			 uint32_t len)
{
	if (len < SV_BTH_BYTES + SV_ICRC_BYTES)
		return 0;
	return covered_packet(flow_pseudo_crc(flow, len), pkt, len);
}

void sv_icrc_set(const struct sv_flow *flow, uint8_t *pkt, uint32_t len)
{
	uint32_t crc = htole32(sv_icrc_compute(flow, pkt, len));

	memcpy(pkt + len - SV_ICRC_BYTES, &crc, 4);
}

bool sv_icrc_left_to_udp(const uint8_t *pkt, uint32_t len)
{
	static const uint8_t zero[SV_ICRC_BYTES];

	return len >= SV_BTH_BYTES + SV_ICRC_BYTES &&
	       (sv_bth_resv6a(pkt) & SV_BTH_ICRC_BY_UDP) &&
	       !memcmp(pkt + len - SV_ICRC_BYTES, zero, SV_ICRC_BYTES);
}

/* ---- an unknown IPv4 ID ----------------------------------------------------
 *
 * With every other covered byte known, the ICRC is an affine function of
 * the 16 ID bits: icrc(id) = icrc(0) ^ M id, where column i of M is what
 * flipping ID bit i does to the CRC.  That depends only on how many
 * covered bytes follow the ID, i.e. on the packet length, so the columns
 * are derived once per length (each bit's one-byte CRC difference shifted
 * over the bytes after it) and kept in a small per-thread cache together
 * with their elimination (a basis in echelon form, each row with the ID
 * bits it combines).  The CRC-32 polynomial detects every burst of up to
 * 32 bits, so the 16 columns are independent and a match is one ID. */

/* Column i of M: what flipping ID bit i does to the CRC. */
static uint32_t id_column(uint32_t covered, unsigned int i)
{
	static const uint8_t zero;
	/* ID bit i: bits 15..8 in the first byte (network order). */
	uint8_t v = (uint8_t)(1u << (i & 7));
	uint32_t after = covered - ID_OFFSET - 1 - (i < 8);

	return sv_crc32_shift(sv_crc32(0, &v, 1) ^ sv_crc32(0, &zero, 1),
			      after);
}

static void basis_build(struct id_basis *b, uint32_t covered)
{
	memset(b, 0, sizeof(*b));
	b->covered = covered;
	for (unsigned int i = 0; i < ID_BITS; i++) {
		uint32_t col = id_column(covered, i);
		uint16_t bits = (uint16_t)(1u << i);

		for (unsigned int r = 0; r < b->rank; r++)
			if (col & b->pivot[r]) {
				col ^= b->row[r];
				bits ^= b->bits[r];
			}
		if (!col)
			continue; /* dependent: cannot happen for CRC-32 */
		b->row[b->rank] = col;
		b->pivot[b->rank] = col & -col;
		b->bits[b->rank] = bits;
		b->rank++;
	}
}

/* From the thread's cache, or built in *scratch without one. */
static const struct id_basis *basis_for(uint32_t covered,
					struct id_basis *scratch)
{
	struct icrc_cache *c = thread_cache();
	struct id_basis *b = scratch;
	unsigned int i;

	for (i = 0; c && i < ID_CACHE; i++)
		if (c->basis[i].covered == covered)
			return &c->basis[i];
	if (c)
		b = &c->basis[c->basis_next++ % ID_CACHE];
	basis_build(b, covered);
	return b;
}

/* The ID whose ICRC is `want`, given the ICRC with ID 0: false if none. */
static bool solve_id(uint32_t covered, uint32_t diff, uint16_t *id)
{
	struct id_basis scratch;
	const struct id_basis *b = basis_for(covered, &scratch);
	uint16_t bits = 0;

	for (unsigned int r = 0; r < b->rank; r++)
		if (diff & b->pivot[r]) {
			diff ^= b->row[r];
			bits ^= b->bits[r];
		}
	if (diff)
		return false;
	*id = bits;
	return true;
}

enum sv_icrc_match sv_icrc_check(const struct sv_flow *flow, const uint8_t *pkt,
				 uint32_t len, uint16_t *ip_id)
{
	uint32_t got, want;
	uint16_t id;

	if (len < SV_BTH_BYTES + SV_ICRC_BYTES)
		return SV_ICRC_BAD;
	memcpy(&got, pkt + len - SV_ICRC_BYTES, 4);
	got = le32toh(got);
	want = sv_icrc_compute(flow, pkt, len);
	if (got == want) {
		if (ip_id)
			*ip_id = 0;
		return SV_ICRC_EXACT;
	}
	if (flow->src.family != AF_INET ||
	    !solve_id(V4_COVERED(len), got ^ want, &id))
		return SV_ICRC_BAD;
	if (ip_id)
		*ip_id = id;
	return SV_ICRC_SOLVED;
}

/* ---- the IPv4 ID of a sent segment ------------------------------------------
 *
 * A sender that learns a packet's ID late (a UDP_SEGMENT send numbers its
 * segments) moves its ICRC by M (from ^ to), with M's columns for the
 * packet's length kept in a small per-thread cache as above. */

/* From the thread's cache, or computed in *scratch without one. */
static const struct id_cols *id_cols_for(uint32_t covered,
					 struct id_cols *scratch)
{
	struct icrc_cache *cache = thread_cache();
	struct id_cols *c = scratch;
	unsigned int i;

	for (i = 0; cache && i < ID_CACHE; i++)
		if (cache->cols[i].covered == covered)
			return &cache->cols[i];
	if (cache)
		c = &cache->cols[cache->cols_next++ % ID_CACHE];
	c->covered = covered;
	for (i = 0; i < ID_BITS; i++)
		c->col[i] = id_column(covered, i);
	return c;
}

void sv_icrc_move_ip_id(uint8_t *pkt, uint32_t len, uint16_t from, uint16_t to)
{
	struct id_cols scratch;
	const struct id_cols *c;
	uint16_t diff = from ^ to;
	uint32_t crc, delta = 0;
	unsigned int i;

	if (!diff || len < SV_BTH_BYTES + SV_ICRC_BYTES)
		return;
	c = id_cols_for(V4_COVERED(len), &scratch);
	for (i = 0; i < ID_BITS; i++)
		if (diff & (1u << i))
			delta ^= c->col[i];
	memcpy(&crc, pkt + len - SV_ICRC_BYTES, 4);
	crc = htole32(le32toh(crc) ^ delta);
	memcpy(pkt + len - SV_ICRC_BYTES, &crc, 4);
}
