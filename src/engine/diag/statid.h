/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Whose a live-counter segment (engine/diag/statseg.h) is, and in which layout:
 * the pid its file name carries, the start time of the process that wrote
 * it, whether that process still runs, the hash of the counter names.
 * The writer (statseg.c, which also sweeps dead processes' segments) and
 * the reader (`softverbs stats`, tools/statread.c) both ask; it needs
 * nothing else of the engine, so the tool builds it alone.
 */
#ifndef SV_ENGINE_STATID_H
#define SV_ENGINE_STATID_H

#include <stdbool.h>
#include <stdint.h>

/* FNV-1a of the engine's and the QP counters' names (engine/transport/stats.h): a
 * reader built from another list of counters refuses the segment. */
uint32_t sv_statid_hash(void);
/* The start time of process pid in clock ticks after boot (field 22 of
 * /proc/PID/stat), 0 if it has none. */
uint64_t sv_statid_start_ticks(int pid);
/* Does process pid, started at start_ticks (0: unknown), still run? */
bool sv_statid_alive(int pid, uint64_t start_ticks);
/* Is name a segment's (SV_STATSEG_PREFIX<pid>)?  0 and its pid if so. */
int sv_statid_pid(const char *name, int *pid);

#endif
