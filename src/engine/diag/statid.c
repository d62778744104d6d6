/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Whose a live-counter segment is, and in which layout (engine/diag/statid.h).
 */
#include "engine/diag/statid.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/diag/statseg.h"

uint32_t sv_statid_hash(void)
{
	static const char *const names[] = {
#define X(name, desc) #name,
		SV_COUNTERS(X) SV_QP_COUNTERS(X)
#undef X
	};
	uint32_t h = 2166136261u;

	/* Each name and its terminating NUL. */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]) + 1;

		for (size_t k = 0; k < n; k++)
			h = (h ^ (uint8_t)names[i][k]) * 16777619u;
	}
	return h;
}

uint64_t sv_statid_start_ticks(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks;
	int fd, i;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command may hold spaces and parentheses: fields count from
	 * the last ')'; starttime is field 22, the 20th after it. */
	p = strrchr(buf, ')');
	for (i = 0; p && i < 20; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &ticks) != 1)
		return 0;
	return ticks;
}

bool sv_statid_alive(int pid, uint64_t start_ticks)
{
	uint64_t now;

	if (pid <= 0 || (kill(pid, 0) && errno != EPERM))
		return false;
	now = sv_statid_start_ticks(pid);
	/* Another process with the number now: the writer is gone. */
	return !now || !start_ticks || now == start_ticks;
}

int sv_statid_pid(const char *name, int *pid)
{
	size_t plen = strlen(SV_STATSEG_PREFIX);
	char *end;
	long v;

	if (strncmp(name, SV_STATSEG_PREFIX, plen) || !name[plen] ||
	    name[plen] < '0' || name[plen] > '9')
		return -1;
	errno = 0;
	v = strtol(name + plen, &end, 10);
	if (errno || *end || v <= 0 || v > 0x7fffffff)
		return -1;
	*pid = (int)v;
	return 0;
}
