/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libFuzzer harness: the published MR/QP table (core/pubtab.c) as a
 * peer reads it, written by a hostile owner of the same user
 * (docs/security.md, "Fuzzing").
 *
 * Each input is a whole small table (64 MR and 64 QP slots: the smallest
 * a reader accepts) in a sealed memfd of this process: a header the
 * harness writes right (or the input's own, with the pid and size made
 * right or not), then the input's bytes for every slot (repeated when
 * shorter than the slots).  The harness maps
 * it as a peer does (sv_pubtab_map: the checks at map time), asks for one
 * access (sv_pubtab_acquire: the QP and MR checks, by keys it picks from
 * the slots or as the input says), then rewrites the header and slots
 * while it holds the entries (what a hostile owner may do at any time)
 * and asks again.  The oracle: every address granted lies inside a
 * region the table showed, with the right rights and PD, at the moment
 * of the check.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The table's private layout: the harness builds tables byte by byte. */
#include "core/pubtab.c"

#define CAP 64u
#define MR_OFF 4096u
#define QP_OFF (MR_OFF + CAP * sizeof(struct pub_mr))
#define SEG_SIZE ((QP_OFF + CAP * sizeof(struct pub_qp) + 4095) & ~4095ul)

static int seg_fd = -1;
static uint8_t *seg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	seg_fd = memfd_create("fuzz-pubtab", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (seg_fd < 0 || ftruncate(seg_fd, (off_t)SEG_SIZE) ||
	    fcntl(seg_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))
		abort();
	seg = mmap(NULL, SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd,
		   0);
	if (seg == MAP_FAILED)
		abort();
	return 0;
}

struct params {
	uint32_t qpn, my_qpn, rkey;
	uint64_t iova, len;
	uint8_t access, rd, pick, hdr_mode;
	uint8_t qslot, mslot;
} __attribute__((packed));

static void take(const uint8_t **d, size_t *n, void *out, size_t want)
{
	size_t k = *n < want ? *n : want;

	memset(out, 0, want);
	memcpy(out, *d, k);
	*d += k;
	*n -= k;
}

/* Does some MR slot (as it is now) grant [iova, iova+len) at va? */
static bool granted_by_some_mr(uint32_t rkey, uint64_t iova, uint64_t len,
			       unsigned int access, uintptr_t va)
{
	const struct pub_mr *m = (const struct pub_mr *)(seg + MR_OFF);
	unsigned int i;

	for (i = 0; i < CAP; i++) {
		uint64_t mi = atomic_load(&m[i].iova),
			 ml = atomic_load(&m[i].length);

		if (atomic_load(&m[i].key) != rkey ||
		    (access & ~atomic_load(&m[i].access)) || iova < mi ||
		    len > ml || iova - mi > ml - len)
			continue;
		if (va == (uintptr_t)(atomic_load(&m[i].va) + (iova - mi)))
			return true;
	}
	return false;
}

static const unsigned int rights[4] = { IBV_ACCESS_REMOTE_WRITE,
					IBV_ACCESS_REMOTE_READ,
					IBV_ACCESS_REMOTE_ATOMIC,
					IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pub_hdr *h = (struct pub_hdr *)seg;
	struct sv_pubtab_view *v;
	struct sv_pubtab_hold hold;
	struct params p;
	unsigned int access;
	uintptr_t va;
	size_t n;

	take(&data, &size, &p, sizeof(p));
	memset(seg, 0, SEG_SIZE);
	if (p.hdr_mode & 1) {
		take(&data, &size, h, sizeof(*h));
		if (!(p.hdr_mode & 2))
			h->pid = getpid();
		if (!(p.hdr_mode & 4))
			h->size = SEG_SIZE;
	} else {
		h->magic = SV_PUB_MAGIC;
		h->version = SV_PUB_VERSION;
		h->pid = getpid();
		h->size = SEG_SIZE;
		h->mr_cap = CAP;
		h->qp_cap = CAP;
		h->mr_off = MR_OFF;
		h->qp_off = QP_OFF;
	}
	/* The slots, from the input (cycled: a short input still fills
	 * keys everywhere). */
	n = SEG_SIZE - MR_OFF;
	if (size) {
		size_t i, k = size < n ? size : n;

		for (i = 0; i < n; i++)
			seg[MR_OFF + i] = data[i % k];
		data += k;
		size -= k;
	}
	access = rights[p.access & 3];
	if (p.pick & 1) { /* keys that the lookups find */
		const struct pub_qp *q =
			(const struct pub_qp *)(seg + QP_OFF) + p.qslot % CAP;
		const struct pub_mr *m =
			(const struct pub_mr *)(seg + MR_OFF) + p.mslot % CAP;

		p.qpn = atomic_load(&q->key);
		p.rkey = atomic_load(&m->key);
		if (p.pick & 2)
			p.my_qpn = atomic_load(&q->dest_qpn);
		if (p.pick & 4)
			p.iova = atomic_load(&m->iova) + (p.iova & 0xfff);
	}

	v = sv_pubtab_map(getpid(), seg_fd);
	if (!v)
		return 0;
	va = sv_pubtab_acquire(v, p.qpn, p.my_qpn, p.rkey, p.iova, p.len,
			       access, p.rd, &hold);
	if (va) {
		if (!granted_by_some_mr(p.rkey, p.iova, p.len, access, va))
			abort(); /* granted what no slot grants */
		/* A hostile owner rewrites everything while we hold it. */
		if (size) {
			size_t i, k = size < 4096 ? size : 4096;

			for (i = 0; i < SEG_SIZE; i++)
				seg[i] ^= data[i % k];
		}
		sv_pubtab_release(&hold);
		va = sv_pubtab_acquire(v, p.qpn, p.my_qpn, p.rkey, p.iova,
				       p.len, access, p.rd, &hold);
		if (va) {
			if (!granted_by_some_mr(p.rkey, p.iova, p.len, access,
						va))
				abort();
			sv_pubtab_release(&hold);
		}
	}
	sv_pubtab_unmap(v);
	return 0;
}
