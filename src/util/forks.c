/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The fork count (see forks.h). */
#include "util/forks.h"

#include <pthread.h>

unsigned int sv_fork_count;

static void atfork_child(void)
{
	sv_fork_count++;
}

static void install(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

void sv_forks_watch(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, install);
}
