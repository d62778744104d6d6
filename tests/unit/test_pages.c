/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* util/pages.c: which pages of a range a registration may pin, through the
 * PROCMAP_QUERY ioctl (where the kernel has it) and through the text of
 * /proc/self/maps, over every range of a layout of read-write, read-only,
 * PROT_NONE, unmapped and write-only pages: the same verdict and the same
 * first bad page from both, and the one the kernel's pinning would give. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "util/pages.h"

enum { RW, RO, NONE, HOLE, WO, NPAGES = 7 };
/* The layout, one page each; the last is read-write again. */
static const int layout[NPAGES] = { RW, RO, NONE, HOLE, RW, WO, RW };

static enum sv_pages_fault expect(int first, int last, bool write, int *bad)
{
	int p;

	for (p = first; p <= last; p++) {
		*bad = p;
		if (layout[p] == HOLE)
			return SV_PAGES_UNMAPPED;
		if (write && (layout[p] == RO || layout[p] == NONE))
			return SV_PAGES_NO_WRITE;
		if (!write && (layout[p] == NONE || layout[p] == WO))
			return SV_PAGES_NO_READ;
	}
	return SV_PAGES_OK;
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *base =
		mmap(NULL, NPAGES * (size_t)page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int p, q, w, bad = 0, wrong = 0, n = 0;

	REQUIRE(base != MAP_FAILED);
	for (p = 0; p < NPAGES; p++) {
		uint8_t *a = base + p * page;

		if (layout[p] == HOLE)
			REQUIRE(munmap(a, page) == 0);
		else if (layout[p] != RW)
			REQUIRE(mprotect(a, page,
					 layout[p] == RO ? PROT_READ :
					 layout[p] == WO ? PROT_WRITE :
							   PROT_NONE) == 0);
	}
	for (p = 0; p < NPAGES; p++) {
		for (q = p; q < NPAGES; q++) {
			for (w = 0; w < 2; w++) {
				/* From the middle of page p to one byte
				 * into page q. */
				const uint8_t *a = base + p * page + page / 2;
				size_t len =
					(size_t)(q - p) * page - page / 2 + 1;
				enum sv_pages_fault want, got, got_text;
				uintptr_t at = 0, at_text = 0;

				if (q == p)
					len = 1;
				want = expect(p, q, w, &bad);
				got = sv_pages_check(a, len, w, &at);
				got_text = sv_pages_check_text(a, len, w,
							       &at_text);
				n++;
				if (got != want || got_text != want ||
				    (want &&
				     (at != (uintptr_t)(base + bad * page) ||
				      at_text != at))) {
					fprintf(stderr,
						"pages %d..%d write %d: want %s at page %d, got %s at %#lx, text %s at %#lx (base %p)\n",
						p, q, w,
						sv_pages_fault_str(want), bad,
						sv_pages_fault_str(got),
						(unsigned long)at,
						sv_pages_fault_str(got_text),
						(unsigned long)at_text,
						(void *)base);
					wrong++;
				}
			}
		}
	}
	CHECK_EQ(wrong, 0);
	CHECK(n == NPAGES * (NPAGES + 1));
	return check_done();
}
