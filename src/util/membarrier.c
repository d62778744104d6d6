/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* membarrier(2) for the asymmetric fence (util/membarrier.h). */
#include "util/membarrier.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define SV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SV_TSAN 1
#endif
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool ok;

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

static void probe(void)
{
#ifndef SV_TSAN
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);

	ok = cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	     (cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) &&
	     membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
#endif
}

bool sv_membarrier_ok(void)
{
	pthread_once(&once, probe);
	return ok;
}

void sv_membarrier(void)
{
	/* The registration is the process's (mm's) and survives fork; a
	 * kernel that dropped it gets it again. */
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) ||
	     membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)))
		abort(); /* readers would go unseen: never go on */
}
