/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Fault injection (SOFTVERBS_FAULT, docs/faults.md): packets dropped,
 * duplicated, delayed, reordered or corrupted on their way out or in, and
 * forced responder errors (RNR, remote access, a responder that stops
 * answering), so that a program's error paths can be tested.
 *
 * The spec is parsed once per process, at the first engine opened, and
 * printed at info level; a bad one is refused whole with one warning
 * naming the bad token (no fault is injected then).  Each rule counts the
 * packets or messages it matches; whether the k-th one is hit depends only
 * on the seed, the rule and k, so a run repeats with the same seed= as
 * long as the traffic does.
 */
#ifndef SV_ENGINE_INJECT_H
#define SV_ENGINE_INJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/transport/hooks.h" /* enum sv_inj_kind */

#define SV_INJ_TX 1u
#define SV_INJ_RX 2u
#define SV_INJ_RULES_MAX 16
#define SV_INJ_DELAY_MAX_MS 10000

struct sv_inj_rule {
	enum sv_inj_kind kind;
	unsigned int dirs; /* SV_INJ_TX|SV_INJ_RX (packet faults) */
	bool any_qp;
	uint32_t qpn; /* unless any_qp: a QPN of this process */
	uint32_t ppm; /* rate in parts per million (nth == 0) */
	uint64_t nth; /* 1-based: exactly the nth match, 0: a rate */
	uint32_t ms; /* SV_INJ_DELAY */
	_Atomic uint64_t seen; /* matches so far */
};

struct sv_inject {
	unsigned int n;
	struct sv_inj_rule r[SV_INJ_RULES_MAX];
	uint64_t seed;
	bool seeded; /* seed= given */
	unsigned int pkt_dirs; /* directions some packet rule has */
};

/* Parse spec (NULL or "": no rules) into inj; loss (SOFTVERBS_LOSS, 0..100)
 * adds drop=loss%.  0, or -1 with a one-line reason in err naming the
 * token refused. */
int sv_inject_parse(struct sv_inject *inj, const char *spec, int loss,
		    char *err, size_t errlen);
/* The rules as a spec string (what the info line prints). */
void sv_inject_format(const struct sv_inject *inj, char *out, size_t len);

/* The process's rules (parsed from the environment on first call). */
struct sv_inject *sv_inject_get(void);

struct sv_engine;
struct sv_qp_engine;
struct sv_tx;
struct sv_sock;
struct sv_flow;

/* Does some rule apply to this QP (its QPN or its peer's)?  Such a QP
 * keeps to the packet path (path.c) so that the faults reach it. */
bool sv_inject_qp(const struct sv_qp_engine *qe);

/* Transmit (xmit.c): what happens to this packet.  Returns how many
 * copies to send now (0 dropped or held, 1, or 2 duplicated); the packet
 * may have been corrupted in place. */
unsigned int sv_inject_tx(struct sv_engine *eng, struct sv_tx *t, uint32_t qpn);
/* Receive (recv.c): the same for a received packet of local QP qpn
 * (0: deliver none, 1, or 2). */
unsigned int sv_inject_rx(struct sv_engine *eng, struct sv_sock *s,
			  uint8_t *buf, uint32_t len,
			  const struct sv_flow *flow, bool shm, uint32_t qpn);
/* A request message's first packet, new and in sequence, at the
 * responder (resp.c); rwqe: it takes a receive WQE (a SEND).  The WR fault
 * to force, or SV_INJ_NKINDS. */
enum sv_inj_kind sv_inject_wr(struct sv_qp_engine *qe, uint32_t psn, bool rwqe);

/* A receiver of large SENDs is about to read the sending process's
 * memory (paths/chan_rdv.c: its probe, or a pull): must the read be
 * refused as the kernel refuses it under Yama's ptrace_scope=1 (EPERM)?
 * Such rules leave the QP on the fast path: it is the fast path's
 * fallback they test. */
bool sv_inject_pull(struct sv_qp_engine *qe);

/* Held packets (delay, reorder): send those due, and with rx deliver
 * the received ones due.  The engine's pass calls it with rx before it
 * flushes what they bring (eng->held: there are some); a flush without,
 * after its batch, which reordered packets wait for. */
void sv_inject_release(struct sv_engine *eng, bool rx);
/* The QP is going away: forget the packets held for it. */
void sv_inject_qp_gone(struct sv_qp_engine *qe);
/* The engine closes. */
void sv_inject_close(struct sv_engine *eng);

#endif
