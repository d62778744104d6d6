/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Message channels (layer 3 of the one-host fast path, docs/fastpath.md):
 * a single-producer / single-consumer ring of small messages from one RC
 * QP to its same-host peer, living in the receiving socket's shm segment
 * (link/shm.h), one channel per QP slot of the socket.  A SEND crosses it
 * as one or a few cache lines, with no packet headers, PSNs or ACKs: the
 * consumer's head is the acknowledgement.
 *
 * Layout of a channel: an owner line (generation, open flag, the QPN the
 * channel belongs to and the QPN it is connected to), a consumer line (the
 * head: slots consumed), an ack line, and apart from these (so that an
 * idle channel's memory is its lines: the segment keeps every
 * channel's lines together, link/shm.h) SV_CHAN_SLOTS slots of 64 bytes.  A message is
 * a header slot followed by continuation slots; its payload is contiguous
 * from the header slot's data[] on (a message never wraps: a pad message
 * fills the ring's end instead).  The producer writes the payload and the
 * header, then publishes the header's sequence word with a release store;
 * the word is (generation << 32 | low 32 bits of position + 1), so slots
 * left from an earlier generation or round are never taken for new ones.
 *
 * Only the owner (the receiving QP's engine) writes the owner line and its
 * head; only the producer writes slots; the consumer acknowledges in the
 * producer's own channel (its ack line).  Neither trusts the other: the
 * consumer bounds every length it reads, the producer bounds the ack.
 */
#ifndef SV_LINK_CHAN_H
#define SV_LINK_CHAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SV_CHAN_SLOTS 256u /* power of two */
#define SV_CHAN_SLOT 64u
#define SV_CHAN_HDR 24u /* header bytes of the first slot */
/* The largest payload a channel carries; longer SENDs take packets. */
#define SV_CHAN_MAX_MSG 1024u

enum sv_chan_flags {
	SV_CHAN_F_IMM = 1u << 0, /* imm is valid */
	SV_CHAN_F_SE = 1u << 1, /* solicited event */
	SV_CHAN_F_PAD = 1u << 2, /* filler up to the ring's end */
	/* An RC atomic (struct sv_chan_atomic): the consumer executes it
	 * in its own memory and writes the original value into the
	 * producer's result[imm % SV_CHAN_RESULTS] before the ack. */
	SV_CHAN_F_ATOMIC = 1u << 3,
	/* A SEND longer than a message: its payload is a descriptor of the
	 * producer's gather list, which the consumer pulls with one copy
	 * (paths/chan_rdv.c); imm and SE as for a SEND. */
	SV_CHAN_F_RDV = 1u << 4,
	/* An RC RDMA WRITE (struct sv_chan_write, then its bytes): the
	 * consumer places it in its own memory (paths/chan_write.c), once
	 * it has claimed the message (struct sv_chan, claim). */
	SV_CHAN_F_WRITE = 1u << 5,
	/* An RC RDMA READ of up to SV_CHAN_READ_MAX bytes (struct
	 * sv_chan_read): the consumer copies them into the producer's
	 * result[imm % SV_CHAN_RESULTS] before the ack, as an atomic's
	 * value (paths/chan_read.c); claimed as a WRITE. */
	SV_CHAN_F_READ = 1u << 6,
};

/* Atomics a producer may have in a channel at once: one result word
 * each, from the ack line on (the producer takes the lowest free word,
 * so a single atomic's result comes in the ack's own cache line). */
#define SV_CHAN_RESULTS 64u

enum sv_chan_atomic_op {
	SV_CHAN_CMP_SWAP = 1,
	SV_CHAN_FETCH_ADD = 2,
};

/* The payload of an SV_CHAN_F_ATOMIC message (host order: both ends run
 * on one host). */
struct sv_chan_atomic {
	uint32_t op; /* enum sv_chan_atomic_op */
	uint32_t rkey;
	uint64_t va;
	uint64_t compare_add;
	uint64_t swap;
};

/* The head of an SV_CHAN_F_WRITE message's payload; the bytes to write
 * follow it (the message's length less this header). */
struct sv_chan_write {
	uint64_t va;
	uint32_t rkey;
	uint32_t pad;
};

/* The payload of an SV_CHAN_F_READ message. */
struct sv_chan_read {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
};

/* The longest RDMA READ a channel carries: one result word. */
#define SV_CHAN_READ_MAX 8u

/* The longest RDMA WRITE a channel carries. */
#define SV_CHAN_WRITE_MAX \
	(SV_CHAN_MAX_MSG - (uint32_t)sizeof(struct sv_chan_write))

/* The claim word's bit set by a producer that took back the WRITEs its
 * consumer had not claimed (paths/chan_write.c). */
#define SV_CHAN_CLAIM_REVOKED (1ull << 63)

struct sv_chan_slot {
	_Atomic uint64_t seq;
	uint32_t len; /* payload bytes */
	uint32_t nslots; /* slots the message occupies, this one included */
	uint32_t flags;
	uint32_t imm; /* network order */
	uint8_t data[SV_CHAN_SLOT - SV_CHAN_HDR];
};

struct sv_chan {
	/* owner line: written by the owner when the channel opens/closes */
	_Alignas(64) _Atomic uint32_t gen;
	_Atomic uint32_t open;
	_Atomic uint32_t qpn;
	_Atomic uint32_t peer_qpn;
	/* 1: the owner does not look at this channel on every pass; a
	 * producer that publishes into it then also sets the channel's bit
	 * in the segment's ready word (link/shm.h, paths/chan.c) */
	_Atomic uint32_t cold;
	/* 1: the owner has shown, when it opened the channel, that it can
	 * read its producer's memory (process_vm_readv); only then do large
	 * SENDs into it go as descriptors (paths/chan_rdv.c) */
	_Atomic uint32_t can_pull;
	/* the owner's head (slots consumed): where a producer starts */
	_Alignas(64) _Atomic uint64_t head;
	/* The position up to which the owner may consume WRITE messages,
	 * moved by the owner with a compare-and-swap before it places
	 * them; a producer that takes back WRITEs from a stopped owner sets
	 * SV_CHAN_CLAIM_REVOKED, and from then on the owner places none
	 * beyond it (paths/chan_write.c). */
	_Atomic uint64_t claim;
	/* ack line, written by the PEER's engine: how far it consumed what
	 * this channel's QP sent into the peer's channel, and the error it
	 * found in the message ending at nak_pos (0: none).  It lives here,
	 * in the sender's own segment, so that a sender waiting for its
	 * completions only ever reads its own memory. */
	_Alignas(64) _Atomic uint64_t ack;
	_Atomic uint64_t nak_pos;
	_Atomic uint32_t nak; /* enum ibv_wc_status for the sender, 0 none */
	/* the original values of atomics (SV_CHAN_F_ATOMIC), written
	 * before the ack that covers them */
	_Atomic uint64_t result[SV_CHAN_RESULTS];
};

/* A channel's slots. */
struct sv_chan_ring {
	struct sv_chan_slot slot[SV_CHAN_SLOTS];
};

_Static_assert(sizeof(struct sv_chan_atomic) <= SV_CHAN_SLOT - SV_CHAN_HDR,
	       "an atomic fits one slot");
_Static_assert(offsetof(struct sv_chan, result) == 2 * 64 + 24,
	       "the first results share the ack's line");

static inline uint64_t sv_chan_seq(uint32_t gen, uint64_t pos)
{
	return ((uint64_t)gen << 32) | (uint32_t)(pos + 1);
}

static inline uint32_t sv_chan_nslots(uint32_t len)
{
	return len <= SV_CHAN_SLOT - SV_CHAN_HDR ?
		       1 :
		       1 + (len - (SV_CHAN_SLOT - SV_CHAN_HDR) + SV_CHAN_SLOT -
			    1) / SV_CHAN_SLOT;
}

/* A prefetch for writing: the line's ownership is requested at once.
 * (x86: PREFETCHW, a no-op on CPUs without it; elsewhere the compiler's
 * write prefetch.) */
static inline void sv_prefetchw(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* ---- producer ---------------------------------------------------------- */

struct sv_chan_tx {
	struct sv_chan *ch; /* the peer's channel; NULL: not attached */
	struct sv_chan_slot *slot; /* its slots */
	const struct sv_chan *own; /* ours: its ack line */
	uint32_t gen;
	uint64_t tail; /* next position to write */
	uint64_t head; /* the peer's ack as last read */
};

/* The tail is written by its one producer (the engine, or post_send in
 * lean mode under the send queue's lock) and read, relaxed, by the engine
 * without that lock (whether more SENDs wait for an ack): a store the
 * reader cannot see torn. */
static inline void sv_chan_tail_set(struct sv_chan_tx *t, uint64_t tail)
{
	__atomic_store_n(&t->tail, tail, __ATOMIC_RELAXED);
}

/* Room for a message of len bytes at the tail (with the pad it may need);
 * the payload's address, or NULL when the ring is full or the channel is
 * no longer the one attached to. */
static inline uint8_t *sv_chan_reserve(struct sv_chan_tx *t, uint32_t len)
{
	uint32_t n = sv_chan_nslots(len);
	uint32_t at = (uint32_t)t->tail & (SV_CHAN_SLOTS - 1);
	uint32_t pad = at + n > SV_CHAN_SLOTS ? SV_CHAN_SLOTS - at : 0;

	if (t->tail + pad + n - t->head > SV_CHAN_SLOTS) {
		uint64_t h = atomic_load_explicit(&t->own->ack,
						  memory_order_acquire);

		/* A head beyond what we wrote is a broken peer: full. */
		if (h - t->head > t->tail - t->head)
			return NULL;
		t->head = h;
		if (t->tail + pad + n - t->head > SV_CHAN_SLOTS)
			return NULL;
	}
	if (atomic_load_explicit(&t->ch->gen, memory_order_relaxed) != t->gen ||
	    !atomic_load_explicit(&t->ch->open, memory_order_relaxed))
		return NULL;
	if (pad) {
		struct sv_chan_slot *s = &t->slot[at];

		s->len = 0;
		s->nslots = pad;
		s->flags = SV_CHAN_F_PAD;
		atomic_store_explicit(&s->seq, sv_chan_seq(t->gen, t->tail),
				      memory_order_release);
		sv_chan_tail_set(t, t->tail + pad);
		at = 0;
	}
	return t->slot[at].data;
}

/* Publish the message reserved last; returns its end position (the head
 * at which it is consumed). */
static inline uint64_t sv_chan_commit(struct sv_chan_tx *t, uint32_t len,
				      uint32_t flags, uint32_t imm)
{
	struct sv_chan_slot *s = &t->slot[t->tail & (SV_CHAN_SLOTS - 1)];
	uint32_t n = sv_chan_nslots(len);

	s->len = len;
	s->nslots = n;
	s->flags = flags;
	s->imm = imm;
	atomic_store_explicit(&s->seq, sv_chan_seq(t->gen, t->tail),
			      memory_order_release);
	sv_chan_tail_set(t, t->tail + n);
	return t->tail;
}

/* Ask for ownership of the slot SV_CHAN_AHEAD slots past the tail now,
 * while it is free, so that writing it later does not wait for the
 * consumer's core to give the line up (each post ends with locked
 * instructions, which wait for every earlier store to complete). */
#define SV_CHAN_AHEAD 8u
static inline void sv_chan_prefetch_ahead(const struct sv_chan_tx *t)
{
	uint64_t at = t->tail + SV_CHAN_AHEAD;

	if (at - t->head < SV_CHAN_SLOTS)
		sv_prefetchw(&t->slot[at & (SV_CHAN_SLOTS - 1)]);
}

/* ---- consumer ---------------------------------------------------------- */

struct sv_chan_rx {
	struct sv_chan *ch; /* NULL: no channel */
	const struct sv_chan_slot *slot; /* its slots */
	uint32_t gen;
	uint64_t head; /* next position to consume */
};

/* A message as the consumer read it once (the producer may be hostile and
 * rewrite the slot meanwhile: only these copies are trusted). */
struct sv_chan_msg {
	const uint8_t *data;
	uint32_t len, nslots, flags, imm;
};

/* The message at the head (pads skipped): true and *m, or false.  Its len
 * and nslots are bounded; a broken producer's are refused (*bad set: the
 * channel is unusable). */
static inline bool sv_chan_peek(struct sv_chan_rx *r, struct sv_chan_msg *m,
				bool *bad)
{
	for (;;) {
		uint32_t at = (uint32_t)r->head & (SV_CHAN_SLOTS - 1);
		const struct sv_chan_slot *s = &r->slot[at];

		if (atomic_load_explicit(&s->seq, memory_order_acquire) !=
		    sv_chan_seq(r->gen, r->head))
			return false;
		m->nslots = s->nslots;
		m->len = s->len;
		m->flags = s->flags;
		m->imm = s->imm;
		m->data = s->data;
		if (!m->nslots || m->nslots > SV_CHAN_SLOTS - at ||
		    (!(m->flags & SV_CHAN_F_PAD) &&
		     (m->len > SV_CHAN_MAX_MSG ||
		      sv_chan_nslots(m->len) != m->nslots))) {
			*bad = true;
			return false;
		}
		if (!(m->flags & SV_CHAN_F_PAD))
			return true;
		r->head += m->nslots;
	}
}

/* Is there something at the head (a pad counts)?  One load. */
static inline bool sv_chan_pending(const struct sv_chan_rx *r)
{
	const struct sv_chan_slot *s =
		&r->slot[(uint32_t)r->head & (SV_CHAN_SLOTS - 1)];

	return atomic_load_explicit(&s->seq, memory_order_relaxed) ==
	       sv_chan_seq(r->gen, r->head);
}

/* The message peeked is consumed (the caller tells the producer, through
 * its ack line, once per batch). */
static inline void sv_chan_consumed(struct sv_chan_rx *r,
				    const struct sv_chan_msg *m)
{
	r->head += m->nslots;
}

#endif
