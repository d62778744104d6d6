/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Packet capture (SOFTVERBS_PCAP=FILE): every RoCE v2 packet the process
 * sends and receives, and the packets the shared-memory paths stand for,
 * in a classic pcap file tshark decodes with no option (README.md,
 * "Capturing traffic").
 *
 * The data path pays one predictable branch while capture is off:
 * sv_pcap_active() is one relaxed load of a flag set once per process.
 */
#ifndef SV_ENGINE_PCAP_H
#define SV_ENGINE_PCAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "engine/transport/hooks.h"
#include "proto/addr.h"

struct sv_qp_engine;

static inline bool sv_pcap_active(void)
{
	return __builtin_expect(atomic_load_explicit(&sv_hooks.pcap_on,
						     memory_order_relaxed),
				0);
}

/* At each engine's first QP: the first in the process (or in a forked
 * child) opens the file SOFTVERBS_PCAP names; at an engine's close, the
 * buffer is written out. */
void sv_pcap_engine_open(void);
void sv_pcap_engine_close(void);
/* A progress thread about to sleep: the buffer is written out if the
 * sleep is long (idle) or the last write is 100 ms old, so that a
 * process killed while idle or polling leaves its packets in the file. */
void sv_pcap_idle(bool long_sleep);

/* A packet of the engine (the UDP link or the shm ring), as it leaves or
 * arrives on qe, its ICRC computed for the flow written in the file. */
void sv_pcap_engine_pkt(struct sv_qp_engine *qe, bool tx,
			const struct sv_flow *flow, const uint8_t *pkt,
			uint32_t len);

/* The message channel: a SEND of len bytes the requester wrote into the
 * peer's channel at its next PSN psn, its acknowledgement (n messages,
 * then the NAK of the next one when nak is the completion status the
 * responder reported for it, else 0), the message the responder took, and
 * the responder's ACK (or NAK, nak as above) of what it took. */
void sv_pcap_chan_send(struct sv_qp_engine *qe, uint32_t psn,
		       const uint8_t *data, uint32_t len, bool imm,
		       uint32_t imm_data, bool se);
void sv_pcap_chan_acked(struct sv_qp_engine *qe, uint32_t n, uint32_t nak);
void sv_pcap_chan_recv(struct sv_qp_engine *qe, const uint8_t *data,
		       uint32_t len, bool imm, uint32_t imm_data, bool se);
void sv_pcap_chan_ack(struct sv_qp_engine *qe, uint32_t nak);

/* An atomic through the message channel (paths/chan_atomic.c), as the
 * CMP_SWAP or FETCH_ADD request and the ATOMIC ACKNOWLEDGE carrying the
 * original value: the requester's request at its next PSN psn and, when
 * the WQE completes, its acknowledgement (after any coalesced ACK of the
 * SENDs before it); the responder's request taken, and its
 * acknowledgement once executed (a refusal is sv_pcap_chan_ack's NAK). */
struct sv_pcap_atomic {
	bool cas;
	uint64_t va, compare_add, swap;
	uint32_t rkey;
};
void sv_pcap_chan_atomic(struct sv_qp_engine *qe, uint32_t psn,
			 const struct sv_pcap_atomic *a);
void sv_pcap_chan_atomic_acked(struct sv_qp_engine *qe, uint64_t orig);
void sv_pcap_chan_atomic_recv(struct sv_qp_engine *qe,
			      const struct sv_pcap_atomic *a);
void sv_pcap_chan_atomic_ack(struct sv_qp_engine *qe, uint64_t orig);

/* One-copy placement: an RDMA WRITE (its source) or READ (its
 * destination, filled) of len bytes done at the requester's next PSN
 * psn, as the request, response and ACK packets an HCA would exchange. */
void sv_pcap_direct(struct sv_qp_engine *qe, bool write, uint32_t psn,
		    uint64_t va, uint32_t rkey, const struct iovec *iov,
		    uint32_t n, uint64_t len);

#endif
