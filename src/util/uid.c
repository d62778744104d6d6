/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Is a uid the kernel reports ours (see uid.h). */
#include "util/uid.h"

#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

/* The kernel's overflow uid, what it shows for a uid the reader's user
 * namespace does not map. */
static unsigned long overflow_uid(void)
{
	unsigned long id = 65534;
	FILE *f = fopen("/proc/sys/kernel/overflowuid", "re");

	if (f) {
		if (fscanf(f, "%lu", &id) != 1)
			id = 65534;
		fclose(f);
	}
	return id;
}

/* Does our user namespace map every uid (the initial namespace's
 * "0 0 4294967295")?  Unreadable counts as no. */
static bool maps_every_uid(void)
{
	unsigned long long total = 0;
	unsigned long inside, outside, count;
	FILE *f = fopen("/proc/self/uid_map", "re");

	if (!f)
		return false;
	while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
		total += count;
	fclose(f);
	return total >= 4294967295ull;
}

/* Read once: the sysctl is the machine's, and a process does not change
 * its user namespace once it runs threads (setns refuses a multithreaded
 * caller).  overflow: the id plus one, 0 not read yet; full: 0 not known
 * yet, 1 every uid mapped, 2 not. */
static atomic_ulong overflow;
static atomic_int full;

bool sv_uid_unmapped(uid_t seen)
{
	unsigned long o = atomic_load_explicit(&overflow, memory_order_relaxed);
	int f;

	if (!o) {
		o = overflow_uid() + 1;
		atomic_store_explicit(&overflow, o, memory_order_relaxed);
	}
	if ((unsigned long)seen != o - 1)
		return false;
	f = atomic_load_explicit(&full, memory_order_relaxed);
	if (!f) {
		f = maps_every_uid() ? 1 : 2;
		atomic_store_explicit(&full, f, memory_order_relaxed);
	}
	return f == 2;
}

bool sv_uid_ambiguous(void)
{
	return sv_uid_unmapped(geteuid());
}

bool sv_uid_mine(uid_t seen)
{
	return seen == geteuid() && !sv_uid_ambiguous();
}
