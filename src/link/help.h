/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Help with large one-copy WRITEs (docs/fastpath.md, "Two cores for one
 * WRITE"): the layout both sides use, in the target socket's shm segment.
 *
 * A one-copy WRITE is one process_vm_writev, paid by the sender's core,
 * while the target's core idles.  For a large WRITE the sender posts a
 * job here and the target's progress thread, if it is awake and idle,
 * pulls part of the message with process_vm_readv while the sender pushes
 * the rest: the message is cut into chunks, the sender takes them from
 * the front and the helper from the back, both through one claim word.
 * The sender completes the WQE only after every chunk the helper claimed
 * is done, and writes the message's last bytes itself, last, as one copy
 * would have.  A helper that never comes (asleep, stopped, busy) only
 * leaves all chunks to the sender.
 *
 * Nothing here is trusted by the side that reads it: the helper checks a
 * job against its own published table and takes the sender's pid from its
 * own QP, and the sender bounds every count it reads back.
 */
#ifndef SV_LINK_HELP_H
#define SV_LINK_HELP_H

#include <stdatomic.h>
#include <stdint.h>

#define SV_HELP_JOBS 4u /* per segment: senders in parallel */
#define SV_HELP_IOV 4u /* the sender's SGEs a job can carry */
#define SV_HELP_CHUNK (64u * 1024) /* claim granularity */
#define SV_HELP_MIN (256u * 1024) /* smaller WRITEs: one copy */
#define SV_HELP_TAIL 4096u /* the sender writes the last bytes, last */
#define SV_HELP_MAX_CHUNKS 0xffffu
#define SV_HELP_REVOCABLE (1u << 31)

/* The claim word: generation (32) | front (16) | back (16).  Chunks
 * [front, back) are unclaimed; the sender advances front, the helper
 * lowers back, each with one compare-and-swap.  A generation is never
 * reused, and within one front and back only move towards each other, so
 * a value once left never comes back: a helper whose CAS succeeds knows
 * the job it read is still the one posted. */
static inline uint64_t sv_help_word(uint32_t gen, uint32_t front, uint32_t back)
{
	return (uint64_t)gen << 32 | (uint64_t)(front & 0xffff) << 16 |
	       (back & 0xffff);
}
static inline uint32_t sv_help_gen(uint64_t w)
{
	return (uint32_t)(w >> 32);
}
static inline uint32_t sv_help_front(uint64_t w)
{
	return (uint32_t)(w >> 16) & 0xffff;
}
static inline uint32_t sv_help_back(uint64_t w)
{
	return (uint32_t)w & 0xffff;
}

struct sv_help_job {
	_Alignas(64) _Atomic uint64_t claim;
	_Atomic uint32_t busy; /* the slot belongs to a sender (0: free) */
	/* written by the helper, each tagged with the job's generation in
	 * the high 32 bits (a late update for an older job is refused) */
	_Alignas(64) _Atomic uint64_t done; /* chunks it has handled */
	/* (first chunk + 1) << 16 | count of a claim it could not copy
	 * (then it claims no more): the sender copies those itself. */
	_Atomic uint64_t redo;
	/* the helper thread's tid, SV_HELP_REVOCABLE if it copies inside
	 * a restartable sequence (paths/help.c) */
	_Atomic uint32_t tid;
	/* written by the sender: the generation whose chunks the helper
	 * must no longer copy (it found the helper stopped) */
	_Atomic uint32_t revoked;
	/* the job: written by the sender before it publishes the
	 * generation, unchanged until every claimed chunk is done */
	_Alignas(64) uint32_t qpn; /* the target QP (the helper's) */
	uint32_t src_qpn; /* the sender's QP */
	uint32_t rkey;
	uint32_t niov;
	uint64_t iova; /* remote_addr of the WRITE */
	uint64_t len; /* bytes the chunks cover (the tail excluded) */
	uint64_t chunk; /* bytes per chunk */
	struct {
		uint64_t base, len; /* in the sender's memory */
	} iov[SV_HELP_IOV];
};

#endif
