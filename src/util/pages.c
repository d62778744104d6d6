/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The mappings of a range (util/pages.h), from /proc/self/maps: its
 * PROCMAP_QUERY ioctl (Linux 6.11: one call per mapping of the range), or
 * one pass over its text, read in blocks and stopped at the first mapping
 * past the range.  Mappings are sorted by address and do not overlap, so
 * a range is covered when consecutive ones reach from its first page to
 * its end without a gap.  Nothing in the range is touched: no page is
 * faulted in.
 */
#include "util/pages.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

const char *sv_pages_fault_str(enum sv_pages_fault f)
{
	switch (f) {
	case SV_PAGES_OK:
		return "mapped";
	case SV_PAGES_UNMAPPED:
		return "not mapped";
	case SV_PAGES_NO_READ:
		return "not readable";
	case SV_PAGES_NO_WRITE:
		return "not writable";
	}
	return "?";
}

/* Without /proc: mincore(2) answers ENOMEM for exactly the pages that are
 * not mapped, without touching the memory; walk in chunks to bound the
 * vector. */
static enum sv_pages_fault check_mincore(uintptr_t start, uintptr_t end,
					 size_t page, uintptr_t *bad_p)
{
	static const size_t chunk_pages = 4096;
	unsigned char vec[4096];

	while (start < end) {
		size_t pages = (end - start + page - 1) / page;

		if (pages > chunk_pages)
			pages = chunk_pages;
		if (mincore((void *)start, pages * page, vec)) {
			size_t i;

			/* Find the first page that is not mapped. */
			for (i = 0; i < pages; i++)
				if (mincore((void *)(start + i * page), page,
					    vec) &&
				    errno == ENOMEM)
					break;
			*bad_p = start + i * page;
			return SV_PAGES_UNMAPPED;
		}
		start += pages * page;
	}
	return SV_PAGES_OK;
}

/* One line "start-end perms ...": its bounds and permissions. */
static bool parse_line(const char *s, uintptr_t *lo, uintptr_t *hi, bool *r,
		       bool *w)
{
	char *e;

	*lo = (uintptr_t)strtoull(s, &e, 16);
	if (*e != '-')
		return false;
	*hi = (uintptr_t)strtoull(e + 1, &e, 16);
	if (*e != ' ' || !e[1] || !e[2])
		return false;
	*r = e[1] == 'r';
	*w = e[2] == 'w';
	return true;
}

/* The walk over the text, from fd's start. */
static enum sv_pages_fault check_text(int fd, uintptr_t at, uintptr_t end,
				      bool write, uintptr_t *bad_p)
{
	char buf[8192];
	size_t pos = 0, have = 0; /* unparsed: buf[pos, have) */
	bool eof = false;

	while (at < end) {
		char *line = buf + pos;
		char *nl = memchr(line, '\n', have - pos);
		uintptr_t lo, hi;
		bool r, w;

		if (!nl) {
			ssize_t got;

			if (eof || (!pos && have == sizeof(buf)))
				break; /* no more lines (or one too long) */
			memmove(buf, line, have - pos);
			have -= pos;
			pos = 0;
			got = read(fd, buf + have, sizeof(buf) - have);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				eof = true;
			else
				have += (size_t)got;
			continue;
		}
		*nl = '\0';
		pos = (size_t)(nl + 1 - buf);
		if (!parse_line(line, &lo, &hi, &r, &w) || hi <= at)
			continue;
		if (lo > at)
			break; /* a gap before this mapping */
		if (!(write ? w : r)) {
			*bad_p = at;
			return write ? SV_PAGES_NO_WRITE : SV_PAGES_NO_READ;
		}
		at = hi;
	}
	if (at < end) {
		*bad_p = at;
		return SV_PAGES_UNMAPPED;
	}
	return SV_PAGES_OK;
}

/* Linux 6.11's PROCMAP_QUERY ioctl on /proc/self/maps (uapi linux/fs.h),
 * declared here for older headers; `size` tells the kernel which fields
 * we know, and we read none past vma_flags. */
struct sv_procmap_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags; /* out */
	uint64_t vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
_Static_assert(sizeof(struct sv_procmap_query) == 104, "uapi layout");
#define SV_PROCMAP_QUERY _IOWR('f', 17, struct sv_procmap_query)
#define SV_PROCMAP_READABLE 0x01u
#define SV_PROCMAP_WRITABLE 0x02u
#define SV_PROCMAP_COVERING_OR_NEXT 0x10u

/* Set once an ioctl answered ENOTTY (a kernel before 6.11). */
static atomic_bool no_query;

/* One ioctl per mapping of the range instead of the text of all of them
 * (a few microseconds whatever the process has mapped).  false: the
 * kernel does not have it, walk the text. */
static bool check_query(int fd, uintptr_t at, uintptr_t end, bool write,
			enum sv_pages_fault *f, uintptr_t *bad_p)
{
	if (atomic_load_explicit(&no_query, memory_order_relaxed))
		return false;
	*f = SV_PAGES_OK;
	while (at < end) {
		struct sv_procmap_query q = {
			.size = sizeof(q),
			.query_flags = SV_PROCMAP_COVERING_OR_NEXT,
			.query_addr = at,
		};

		if (ioctl(fd, SV_PROCMAP_QUERY, &q)) {
			if (errno != ENOENT) {
				if (errno == ENOTTY)
					atomic_store(&no_query, true);
				return false;
			}
			*f = SV_PAGES_UNMAPPED; /* nothing at or after it */
		} else if (q.vma_start > at) {
			*f = SV_PAGES_UNMAPPED; /* a gap before the next one */
		} else if (!(q.vma_flags & (write ? SV_PROCMAP_WRITABLE :
						    SV_PROCMAP_READABLE))) {
			*f = write ? SV_PAGES_NO_WRITE : SV_PAGES_NO_READ;
		}
		if (*f != SV_PAGES_OK) {
			*bad_p = at;
			return true;
		}
		at = q.vma_end;
	}
	return true;
}

/* The maps file the queries use, opened once per process: an open costs
 * more than the query (a path walk), and registrations come by the
 * thousand.  A forked child opens its own (the parent's describes the
 * parent's mappings); the queries keep no position, so threads share it. */
static pthread_mutex_t query_lock = PTHREAD_MUTEX_INITIALIZER;
static int query_fd = -1;
static pid_t query_pid;

static int query_file(void)
{
	pid_t me = getpid();
	int fd;

	pthread_mutex_lock(&query_lock);
	if (query_fd >= 0 && query_pid != me) {
		close(query_fd);
		query_fd = -1;
	}
	if (query_fd < 0) {
		query_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		query_pid = me;
	}
	fd = query_fd;
	pthread_mutex_unlock(&query_lock);
	return fd;
}

static enum sv_pages_fault check(const void *addr, size_t len, bool write,
				 uintptr_t *bad_p, bool text_only)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t at = (uintptr_t)addr & ~(uintptr_t)(page - 1);
	uintptr_t end = (uintptr_t)addr + len;
	enum sv_pages_fault f;
	int fd;

	if (!text_only && !atomic_load(&no_query)) {
		fd = query_file();
		if (fd >= 0 && check_query(fd, at, end, write, &f, bad_p))
			return f;
	}
	/* The text is read from the start: a file of this call's own. */
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return check_mincore(at, end, page, bad_p);
	f = check_text(fd, at, end, write, bad_p);
	close(fd);
	return f;
}

enum sv_pages_fault sv_pages_check(const void *addr, size_t len, bool write,
				   uintptr_t *bad_p)
{
	return check(addr, len, write, bad_p, false);
}

enum sv_pages_fault sv_pages_check_text(const void *addr, size_t len,
					bool write, uintptr_t *bad_p)
{
	return check(addr, len, write, bad_p, true);
}
