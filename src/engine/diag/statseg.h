/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The live counters of a process in shared memory: the layout of its
 * segment (what `softverbs stats` reads, tools/statread.c) and the writer's side
 * (statseg.c).  docs/engine.md, "Live counters".
 *
 * Each process using softverbs has one segment, the file stats.<pid> in
 * the user's registry directory (link/shm_avail.c: 0700, the user's own):
 * a header, one slot per open context (its engine's SV_COUNTERS, which
 * the engine increments in place: no copy on the data path) and a table
 * of QP slots (a QP's packets, bytes, retransmissions, RNR NAKs, and a
 * snapshot of its state, path and outstanding WRs).  QPs beyond the table
 * are summed in their context's "others" slot.
 *
 * The segment outlives a process that dies by a signal (kill -9, a crash),
 * so its last counters can still be read; a process removes its own when
 * it closes its last context or exits (the library's destructor), and a
 * new segment's creator removes
 * those of dead processes not updated for SV_STATSEG_STALE_S seconds, at
 * most once per SV_STATSEG_STALE_S (`softverbs stats --clean`: all of
 * them at once).
 *
 * Writers are the engine (under its lock) and QP creation (slots claimed
 * with a CAS); readers are other processes, which treat every byte as
 * hostile and torn (tools/statread.c).
 */
#ifndef SV_ENGINE_STATSEG_H
#define SV_ENGINE_STATSEG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/stats.h"

#define SV_STATSEG_MAGIC 0x31534154535653ull /* "SVSTATS1" */
#define SV_STATSEG_VERSION 1u
#define SV_STATSEG_ENGINES 8u /* contexts with a slot; more: not shown */
#define SV_STATSEG_QPS 256u /* QPs with a slot; more: "others" */
#define SV_STATSEG_PREFIX "stats."
#define SV_STATSEG_STALE_S 3600 /* a dead process's segment kept this long */
#define SV_STATSEG_SWEEP "stats.sweep" /* its time: the last look for those */
#define SV_STATSEG_REFRESH_NS 100000000ull /* snapshot at most every 100 ms */

enum sv_statseg_path {
	SV_STATSEG_PATH_NONE, /* not connected yet (before RTR), or UD */
	SV_STATSEG_PATH_UDP,
	SV_STATSEG_PATH_SHM,
};

struct sv_statslot_qp {
	/* 0: free; else 1 + the index of its context's slot.  Claimed with
	 * a CAS, the fields below written before it (release). */
	_Atomic uint32_t used;
	uint32_t qpn;
	/* The snapshot (statseg.c, sv_statseg_refresh): */
	uint8_t type; /* enum ibv_qp_type */
	uint8_t state; /* enum ibv_qp_state */
	uint8_t path; /* enum sv_statseg_path */
	uint8_t unused;
	uint32_t sq_outstanding; /* send WRs posted, not completed */
	uint32_t rq_outstanding; /* receive WRs posted (0 on an SRQ) */
	char why[64]; /* why UDP */
	struct sv_qp_stats ctr;
};

struct sv_statslot_eng {
	_Atomic uint32_t used; /* 1: an open context */
	uint32_t qps; /* its QPs now (snapshot) */
	uint32_t others; /* of those, without a slot (summed below) */
	uint32_t unused;
	struct sv_stats ctr; /* the engine's own counters (eng->stats) */
	struct sv_statslot_qp other; /* QPs without a slot of their own */
};

struct sv_statseg_hdr {
	uint64_t magic;
	uint32_t version;
	/* The layout, checked by readers against their own. */
	uint32_t hdr_size, eng_size, qp_size;
	uint32_t nengines, nqps;
	uint32_t ncounters, nqp_counters;
	uint32_t counters_hash; /* of the counter names (engine/diag/statid.h) */
	int32_t pid;
	uint32_t uid;
	uint64_t start_ticks; /* /proc/PID/stat's starttime: tells pid reuse */
	uint64_t start_ns; /* CLOCK_REALTIME */
	_Atomic uint64_t updated_ns; /* CLOCK_REALTIME of the last refresh */
	_Atomic uint32_t exited; /* 1: the process exited (not killed) */
	uint32_t unused;
	char comm[32]; /* /proc/self/comm */
	char cmdline[160]; /* argv, spaces between */
};

struct sv_statseg {
	struct sv_statseg_hdr hdr;
	struct sv_statslot_eng eng[SV_STATSEG_ENGINES];
	struct sv_statslot_qp qp[SV_STATSEG_QPS];
};

struct sv_engine;
struct sv_qp_engine;

/* Writer side: the engine's counters and "others" slot (a private one
 * when the segment cannot be had), a QP's slot, the snapshot. */
void sv_statseg_engine_open(struct sv_engine *eng);
void sv_statseg_engine_close(struct sv_engine *eng);
void sv_statseg_qp_open(struct sv_qp_engine *qe);
void sv_statseg_qp_close(struct sv_qp_engine *qe);
/* Engine lock held.  Writes the QPs' states, paths and outstanding WRs
 * when SV_STATSEG_REFRESH_NS have passed since the last time, or always
 * when force. */
void sv_statseg_refresh(struct sv_engine *eng, uint64_t now, bool force);
/* A QP's slot after its state or path changed (engine lock held). */
void sv_statseg_qp_note(struct sv_qp_engine *qe);

#endif
