/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libFuzzer harness: the consumer of a shm ring (link/shm.c) as a hostile
 * producer of the same user writes it (docs/security.md, "Fuzzing").
 *
 * A real ring is opened once (its segment, its registry entry).  Each
 * input plays a producer that may write anything it can reach: the tail,
 * the sleeping word and up to 8 slots from the consumer's head on (their
 * sequence words -- free, filled, claimed, or any value --, lengths, pids,
 * flows and bytes); then the consumer drains the ring through the link's
 * receive operation twice, at two clock readings the input chooses (the
 * stalled-slot check), and arms and disarms its sleep.  Every packet it
 * hands over must lie inside its slot, and its bytes are read (ASan).
 * The consumer's head carries over between inputs, as it would.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link/shm.h"

static struct sv_shm_ring ring;
static volatile uint32_t sink;

static void die(const char *what)
{
	perror(what);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 };
	socklen_t len = sizeof(a);
	const char *why;
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (!sv_shm_available(&why)) {
		fprintf(stderr, "fuzz_shm: no shm link here: %s\n", why);
		abort();
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		die("socket");
	if (sv_shm_ring_open(&ring, ntohs(a.sin6_port), fd))
		die("sv_shm_ring_open");
	return 0;
}

static void deliver(void *arg, uint8_t *buf, uint32_t len, bool truncated,
		    const struct sv_flow *flow)
{
	const uint8_t *lo = (const uint8_t *)ring.hdr->slot,
		      *hi = lo + SV_SHM_SLOTS * sizeof(struct sv_shm_slot);
	uint32_t i, x = 0;

	if (len > SV_MAX_PKT || buf < lo || buf + len > hi)
		abort(); /* a packet outside the ring's slots */
	for (i = 0; i < len; i++)
		x += buf[i];
	x += flow->sport + flow->dport + (uint32_t)truncated;
	sink += x;
}

/* Next n bytes of the input, zero-filled past its end. */
static void take(const uint8_t **d, size_t *n, void *out, size_t want)
{
	size_t k = *n < want ? *n : want;

	memset(out, 0, want);
	memcpy(out, *d, k);
	*d += k;
	*n -= k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sv_shm_hdr *h = ring.hdr;
	uint8_t ctl = 0, nslots;
	uint16_t tail_delta;
	uint32_t t1, t2;
	unsigned int i;

	take(&data, &size, &ctl, 1);
	take(&data, &size, &tail_delta, 2);
	take(&data, &size, &t1, 4);
	take(&data, &size, &t2, 4);
	nslots = ctl & 7;
	/* The tail: where the producer says it is (any value, mostly near
	 * the head). */
	if (ctl & 0x80) {
		uint64_t t;

		take(&data, &size, &t, 8);
		atomic_store(&h->tail, t);
	} else {
		atomic_store(&h->tail, ring.head + (tail_delta & 0x7ff));
	}
	atomic_store(&h->sleeping, (ctl >> 3) & 1);
	for (i = 0; i < nslots + 1u; i++) {
		uint64_t pos = ring.head + i,
			 base = pos - (pos & (SV_SHM_SLOTS - 1));
		struct sv_shm_slot *s = &h->slot[pos & (SV_SHM_SLOTS - 1)];
		uint8_t kind = 0;
		uint16_t plen = 0;

		take(&data, &size, &kind, 1);
		switch (kind & 3) {
		case 0: /* filled */
			atomic_store(&s->seq, base + 1);
			break;
		case 1: /* claimed, not filled */
			atomic_store(&s->seq, base);
			break;
		case 2: /* free for the next round */
			atomic_store(&s->seq, base + SV_SHM_SLOTS);
			break;
		default: {
			uint64_t w;

			take(&data, &size, &w, 8);
			atomic_store(&s->seq, w);
		}
		}
		if (kind & 4) {
			uint32_t len;

			take(&data, &size, &len, 4);
			s->len = len;
		} else {
			take(&data, &size, &plen, 2);
			s->len = plen;
		}
		take(&data, &size, &s->pid, 4);
		take(&data, &size, &s->flow, sizeof(s->flow));
		plen = (uint16_t)(s->len < 64 ? s->len : 64);
		take(&data, &size, s->data, plen);
	}
	sv_link_shm.receive(&ring, deliver, NULL, 64, (uint64_t)t1 * 1000,
			    false);
	sv_link_shm.receive(&ring, deliver, NULL, 64,
			    (uint64_t)t1 * 1000 + (uint64_t)t2 * 4096, true);
	if (sv_link_shm.pending(&ring))
		sv_link_shm.receive(&ring, deliver, NULL, 64, 0, true);
	if (sv_link_shm.sleep(&ring))
		sv_link_shm.wake(&ring);
	return 0;
}
