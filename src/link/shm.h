/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The shared-memory link: the same RoCE packets as the UDP link, carried
 * through rings in shared memory between processes of one host (and one
 * network namespace).  See docs/engine.md, "The shm link".
 *
 * Every engine socket owns an inbound ring: a memfd segment with a header
 * and a multi-producer / single-consumer ring of fixed-size slots (Vyukov's
 * bounded queue: a sequence number per slot says whether it is free for
 * round r or holds round r's packet).  A slot carries the packet and the
 * sender's flow (addresses and ports), which the receive path checks as it
 * checks a datagram's.  Producers are peers that mapped the segment through
 * /proc/<pid>/fd/<fd> (which needs ptrace-read permission on the owner);
 * the consumer is the owning engine, under its progress lock.
 *
 * Discovery: /dev/shm/softverbs.<euid>/<netns inode>.<udp port> names
 * the process owning a socket and the fd numbers of its segment, its
 * socket and its published MR table (layer 2, -1 until it exists).  The
 * directory is the user's own (mode 0700, shm_avail.c): the fast path
 * never crosses users (docs/security.md).
 *
 * Wake-up: before the owner's progress thread blocks it sets the ring's
 * "sleeping" word and re-checks the ring; a producer that pushed and then
 * finds the word set clears it and sends one zero-length datagram to the
 * ring's UDP port, which wakes the thread's epoll.
 */
#ifndef SV_LINK_SHM_H
#define SV_LINK_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "link/chan.h"
#include "link/help.h"
#include "link/link.h"
#include "proto/wire.h"
#include "util/list.h"

struct sv_pubtab_view; /* core/pubtab.h */

/* The registry of user U is SV_SHM_DIR.U (sv_shm_registry_path()). */
#define SV_SHM_DIR "/dev/shm/softverbs"
#define SV_SHM_SLOTS 1024u /* power of two */
/* Message channels after the slots, one per QP slot of the socket
 * (link/chan.h; the QPN's low byte names it). */
#define SV_SHM_CHANS 256u

/* One slot: its sequence word and the packet, on whole cache lines.  The
 * word holds (Vyukov sequence - slot index), so a fresh, zeroed segment
 * is an empty ring without touching its pages. */
struct sv_shm_slot {
	_Atomic uint64_t seq;
	uint32_t len; /* packet bytes in data[] */
	int32_t pid; /* the producer, while it fills the slot */
	struct sv_flow flow; /* the sender's: src = sender, dst = us */
	_Alignas(64) uint8_t data[(SV_MAX_PKT + 63) & ~63u];
};

/* The segment's header.  Only fixed facts and atomics live here: the
 * consumer keeps its own head, and nobody trusts a size read from a
 * segment a peer can write. */
struct sv_shm_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t nslots;
	uint32_t slot_size;
	uint16_t port;
	uint16_t unused;
	int32_t pid;
	uint32_t uid;
	uint64_t owner_addr; /* the header's address in the owner */
	_Atomic uint32_t closed; /* the owner closed the ring: not current */
	_Alignas(64) _Atomic uint64_t tail; /* producers claim here */
	_Alignas(64) _Atomic uint32_t sleeping; /* owner's thread waits */
	/* The owner's progress thread takes help jobs (link/help.h). */
	_Alignas(64) _Atomic uint32_t helping;
	struct sv_help_job job[SV_HELP_JOBS];
	/* Channels with news for the owner (paths/chan.c): a producer that
	 * publishes into a cold channel sets its bit (sv_shm_ready_bit), the
	 * owner takes the word with an exchange.  Peers write it: a bogus bit
	 * costs the owner a look at a few channels, nothing else. */
	_Alignas(64) _Atomic uint64_t chan_ready;
	_Alignas(64) struct sv_shm_slot slot[];
};

/* Channel i of a segment (i < SV_SHM_CHANS): its lines, all channels'
 * together after the packet slots, then its slots, after all the lines. */
static inline struct sv_chan *sv_shm_chan(struct sv_shm_hdr *h, uint32_t i)
{
	return (struct sv_chan *)(void *)&h->slot[SV_SHM_SLOTS] + i;
}

static inline struct sv_chan_slot *sv_shm_chan_slots(struct sv_shm_hdr *h,
						     uint32_t i)
{
	return ((struct sv_chan_ring *)(void *)sv_shm_chan(h, SV_SHM_CHANS) + i)
		->slot;
}

/* Channel i's bit in the ready word: SV_SHM_CHANS / 64 channels share
 * one, so that one word covers the segment. */
#define SV_SHM_READY_PER_BIT (SV_SHM_CHANS / 64)
static inline uint64_t sv_shm_ready_bit(uint32_t i)
{
	return 1ull << (i / SV_SHM_READY_PER_BIT);
}

/* Our inbound ring. */
struct sv_shm_ring {
	int fd;
	struct sv_shm_hdr *hdr;
	size_t size;
	uint64_t head; /* next round to consume (consumer only) */
	uint64_t stall_since; /* ns: head slot claimed, not yet filled */
	bool populated; /* the packet slots faulted in (shm.c) */
	uint16_t port;
	int sockfd; /* the socket's UDP fd: doorbells to peers leave by it */
	char path[48]; /* registry entry (in our directory), "" if none */
	struct list_node reg; /* in the process's list of entries (shm.c) */
};

/* A peer's ring, mapped (per engine, shared by the QPs that use it). */
struct sv_shm_peer {
	pid_t pid;
	uid_t uid;
	uint16_t port;
	int32_t self; /* our pid, as slots record it (getpid is a syscall) */
	unsigned int refs;
	bool populated; /* the packet slots faulted in (shm.c) */
	int pidfd; /* the peer process's, -1 if none (sv_shm_peer_current) */
	uint64_t checked_ns; /* when its registry entry was last checked */
	struct sv_shm_hdr *hdr;
	size_t size;
	const struct sv_pubtab_view
		*pubtab; /* peer's published MR table, mapped, or NULL */
	struct list_node node;
};

/* Is the fast path usable in this process?  false with a reason (a static
 * string) when not: SOFTVERBS_FASTPATH=0, no memfd, no registry, no
 * process_vm_readv.  Computed once. */
bool sv_shm_available(const char **why);
/* The inode of our network namespace (registry names). */
unsigned long sv_shm_netns(void);
/* Is the fast path off for a reason worth a warning (the registry
 * directory is someone else's)? */
bool sv_shm_unavailable_warn(void);
/* What was done about a registry directory that was not ours (root moves
 * it aside), or NULL: worth one line. */
const char *sv_shm_registry_note(void);
/* Our registry directory: its descriptor (-1 if unusable) and path. */
int sv_shm_registry_fd(void);
const char *sv_shm_registry_path(void);
/* The directory alone, fast path or not (-1 and why when unusable); its
 * path is sv_shm_registry_path()'s once this returned. */
int sv_shm_registry_dir(const char **why);
/* Registry entries this process has read while registering its own
 * (tests: registration must not depend on how many entries exist). */
unsigned long sv_shm_registry_examined(void);
/* The reason a peer of another user is refused (peers stay on UDP). */
extern const char sv_shm_why_other_user[];

/* Create our ring for UDP port `port` and register it (sockfd proves the
 * port is ours).  0 or errno; on failure r->hdr is NULL. */
int sv_shm_ring_open(struct sv_shm_ring *r, uint16_t port, int sockfd);
void sv_shm_ring_close(struct sv_shm_ring *r);

/* Consumer: the packet at the head, or NULL when the ring is empty; then
 * sv_shm_ring_next() gives the slot back.  The slot's len is already
 * bounded by SV_MAX_PKT (else it is skipped: a broken peer). */
const struct sv_shm_slot *sv_shm_ring_peek(struct sv_shm_ring *r, uint64_t now);
void sv_shm_ring_next(struct sv_shm_ring *r);
/* Set the sleeping word; false when the ring is not empty (don't sleep). */
bool sv_shm_ring_sleep(struct sv_shm_ring *r);
/* Would n more packets fit in the peer's ring now?  (A look, no claim.) */
bool sv_shm_peer_room(const struct sv_shm_peer *p, unsigned int n);
/* Does a published packet wait at the head?  (No system call.) */
bool sv_shm_ring_pending(const struct sv_shm_ring *r);
void sv_shm_ring_wake(struct sv_shm_ring *r);

/* Map the ring registered for `port` in our network namespace.  0 and
 * *out, or an errno with a static reason in *why. */
int sv_shm_peer_attach(uint16_t port, struct sv_shm_peer **out,
		       const char **why);
void sv_shm_peer_detach(struct sv_shm_peer *p);
/* Is the registry still naming this very mapping for its port?  (Cheap
 * while the peer process lives and has not closed the ring: its entry is
 * read again only every SV_SHM_RECHECK_NS.) */
bool sv_shm_peer_current(struct sv_shm_peer *p);
/* Is the peer process there and not stopped (SIGSTOP, a debugger)?
 * Reads /proc: for rare checks. */
bool sv_shm_peer_running(const struct sv_shm_peer *p);
/* Is it stopped (alive, but not running: SIGSTOP, a debugger)? */
bool sv_shm_peer_stopped(const struct sv_shm_peer *p);

/* Has the peer's consumer packets it has not taken yet (the slot before
 * the producers' tail claimed or published, not consumed)?  The consumer
 * takes slots in order, so then everything pushed since it last ran is
 * still waiting there: nothing of it lost, a resend would only queue
 * behind it. */
bool sv_shm_peer_backlog(const struct sv_shm_peer *p);

/* Producer: push n packets (at most SV_SHM_SLOTS).  They become visible
 * together, as a sendmmsg batch lands in a socket at once: the consumer
 * sees none of them or all.  Returns how many were pushed (the rest found
 * the ring full: lost) and sets *wake when the owner's thread must be
 * woken (the caller sends the doorbell). */
struct sv_shm_pkt {
	const struct sv_flow *flow;
	const uint8_t *buf;
	uint32_t len;
};
unsigned int sv_shm_push(struct sv_shm_peer *p, const struct sv_shm_pkt *pkt,
			 unsigned int n, bool *wake);

#endif
