/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A registration's pages faulted in (util/populate.h).  The kernel pins
 * them (ib_umem_get), so on rxe or an HCA they are present, and writable
 * ones already copied from a shared zero or copy-on-write page, when
 * ibv_reg_mr returns: the first transfers into a fresh buffer (a pulled
 * large SEND, a one-copy WRITE) do not stop at each of its pages.
 *
 * What it costs is kept to where it buys something.  Small registrations
 * are left alone (SV_POPULATE_MIN_PAGES).  Pages already present are
 * skipped: mincore(2) reads a range's page tables far faster than
 * MADV_POPULATE_* walks them again, so registering memory in use, or
 * registering it anew, costs little more than the check of its mappings.
 *
 * And it is bounded as pinning is.  The kernel refuses to pin more than
 * RLIMIT_MEMLOCK (with what the process pins already) unless it has
 * CAP_IPC_LOCK; a software device cannot refuse what an HCA would (the
 * memory is not pinned), but it need not fault it in: beyond that bound a
 * registration stays lazy, correct and only slower.  And whatever that
 * bound (none for root, or with an unlimited RLIMIT_MEMLOCK), a
 * registration of more than a quarter of the memory available is left
 * lazy too: a reservation registered whole (MAP_NORESERVE, terabytes)
 * must not become resident because it was registered.
 */
#include "util/populate.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "util/log.h"

/* Bytes of the live registrations faulted in, against RLIMIT_MEMLOCK as
 * the kernel counts pinned pages against it (mm->pinned_vm). */
static _Atomic uint64_t charged;

/* Absent pages this close together are faulted in by one call, the
 * present ones between them with them: a call costs about what
 * walking a few present pages does. */
#define SV_POPULATE_GAP_PAGES 16

static bool has_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return false;
	return (d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &
		CAP_TO_MASK(CAP_IPC_LOCK)) != 0;
}

/* MemAvailable of /proc/meminfo in bytes, 0 when it cannot be read. */
static uint64_t mem_available(void)
{
	char buf[4096], *p;
	unsigned long long kb;
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "\nMemAvailable:");
	if (!p || sscanf(p + 14, "%llu", &kb) != 1)
		return 0;
	return (uint64_t)kb << 10;
}

/* At most a quarter of the memory available: free memory (sysinfo, one
 * call) usually says so; else what the kernel counts as available. */
static bool fits_memory(uint64_t span)
{
	struct sysinfo si;

	if (!sysinfo(&si) && span <= (uint64_t)si.freeram * si.mem_unit / 4)
		return true;
	return span <= mem_available() / 4;
}

uint64_t sv_populate_charge(const void *addr, size_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), span, total;
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	struct rlimit rl;

	span = (((uintptr_t)addr + len + page - 1) & ~(page - 1)) - start;
	if (span < SV_POPULATE_MIN_PAGES * page)
		return 0;
	if (!fits_memory(span)) {
		sv_dbg("registration of %llu bytes at %p left to fault on use: more than a quarter of the memory available",
		       (unsigned long long)span, addr);
		return 0;
	}
	total = atomic_fetch_add(&charged, span) + span;
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    total > rl.rlim_cur && !has_ipc_lock()) {
		atomic_fetch_sub(&charged, span);
		sv_dbg("registration of %llu bytes at %p left to fault on use: %llu bytes registered and faulted in would pass RLIMIT_MEMLOCK (%llu)",
		       (unsigned long long)span, addr,
		       (unsigned long long)total,
		       (unsigned long long)rl.rlim_cur);
		return 0;
	}
	return span;
}

void sv_populate_uncharge(uint64_t bytes)
{
	if (bytes)
		atomic_fetch_sub(&charged, bytes);
}

/* One call over [start, end) (Linux 5.14); before, a hint. */
static void advise(uintptr_t start, uintptr_t end, bool write)
{
	if (madvise((void *)start, end - start,
		    write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) &&
	    errno == EINVAL)
		(void)madvise((void *)start, end - start, MADV_WILLNEED);
}

void sv_populate_fault(const void *addr, size_t len, bool write,
		       bool missing_only)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	uintptr_t end = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
	uintptr_t p, run = 0, run_end = 0;
	unsigned char vec[4096];
	bool open = false;
	int saved = errno;

	if (!len)
		return;
	if (!missing_only) {
		advise(start, end, write);
		errno = saved;
		return;
	}
	for (p = start; p < end;) {
		size_t n = (end - p) / page, i;

		if (n > sizeof(vec))
			n = sizeof(vec);
		if (mincore((void *)p, n * page, vec)) {
			/* Cannot tell: the rest as a whole. */
			if (!open)
				run = p;
			run_end = end;
			open = true;
			break;
		}
		for (i = 0; i < n; i++) {
			uintptr_t a = p + i * page;
			uint64_t eight;

			/* Memory in use: eight present pages at a look. */
			if (!(i & 7) && i + 8 <= n) {
				memcpy(&eight, vec + i, sizeof(eight));
				if ((eight & 0x0101010101010101ull) ==
				    0x0101010101010101ull) {
					i += 7;
					continue;
				}
			}
			if (vec[i] & 1)
				continue;
			if (open &&
			    a - run_end <= SV_POPULATE_GAP_PAGES * page) {
				run_end = a + page;
				continue;
			}
			if (open)
				advise(run, run_end, write);
			run = a;
			run_end = a + page;
			open = true;
		}
		p += n * page;
	}
	if (open)
		advise(run, run_end, write);
	errno = saved;
}
