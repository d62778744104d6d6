/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The engine's tunables: batch sizes, budgets, windows and timers, each
 * with the reason for its value.
 */
#ifndef SV_ENGINE_LIMITS_H
#define SV_ENGINE_LIMITS_H

#include <stdint.h>

/* Packets built before a sendmmsg: two full UDP_SEGMENT sends at path
 * MTU 1024 (62 packets each, link/udp.h), so that a full batch is not
 * cut into a send of 62 and one of 2, each a trip through both stacks. */
#define SV_TX_BATCH 128
/* Packets posts keep back for a later send at most (engine.c hold_reqs):
 * half a batch, so that a stream of small WRs (perftest's 128 posted)
 * sends half its window while it posts the other half, and the ACK clock
 * keeps going. */
#define SV_TX_HOLD_MAX 64
#define SV_RX_BATCH 64 /* datagrams per recvmmsg */
/* Messages per recvmmsg on a socket with UDP_GRO: each may hold up to 64
 * datagrams, in a buffer of SV_UDP_GRO_BUF; the engine's receive memory
 * is sized for the larger of the two layouts (1 MiB). */
#define SV_RX_GRO_BATCH 16
#define SV_RX_BUDGET 512 /* datagrams per socket per pass */
#define SV_REQ_BUDGET 128 /* packets per QP per requester run */
/* READ chunks followed by another of their WQE that one QP may have
 * requested and not yet had answered in full (req.c send_read): a
 * window holds two chunks. */
#define SV_RD_CHUNKS 4
/* Requester runs a UD QP gets at its destroy for what was posted before
 * (qp.c): SV_UD_DESTROY_RUNS * SV_REQ_BUDGET datagrams at most. */
#define SV_UD_DESTROY_RUNS 64
#define SV_REPLY_BUDGET 128 /* read response packets per QP per run */
#define SV_WINDOW_MAX 256 /* un-ACKed packets in flight per QP */
#define SV_WINDOW_MIN 8
/* Most packets a round trip adds to the congestion window on its way back
 * to where it was cut (comp.c, cc_acked: BIC's binary search). */
#define SV_CC_MAX_INC 16
/* Floor of the IBA ACK timer.  A software peer can be descheduled for
 * tens of milliseconds on a loaded host; the timer decides when to give
 * up (retry_cnt), so it must not fire for that.  Fast recovery from loss
 * is the probe timer's job (comp.c), which spends no retries. */
#define SV_MIN_TIMEOUT_NS (100ull * 1000 * 1000)
/* Consecutive timeouts double the wait, up to this (or the QP's own
 * timeout when longer). */
#define SV_MAX_BACKOFF_NS (1000ull * 1000 * 1000)
#define SV_HINT_HOLD_NS (2ull * 1000 * 1000) /* "app is busy-polling" */
/* After serving work a peer of this host sent through the rings, while
 * the application does not poll, the thread (and a thread waiting for an
 * event, engine.c sv_engine_wait_event) looks again without sleeping
 * for this long: the peer is likely waiting for the answer (an atomic, a
 * READ response, an ACK) and will send the next request a microsecond
 * later, which a wake-up would take several times over.  Short enough that a
 * finished exchange costs no CPU to speak of. */
#define SV_SERVE_SPIN_NS (50ull * 1000)
/* The thread spins so too after a pass that took at least SV_SPIN_PKTS
 * packets from the wire sockets while the application neither polls nor
 * waits: a stream to a responder whose application leaves the work to us
 * (RDMA WRITEs into its memory).  Its next batch is due within
 * microseconds, and sleeping between batches cost a wake-up for each,
 * which on a virtual CPU is as long as taking the batch (engine.c). */
#define SV_SPIN_PKTS 8
/* A stream's batches come as fast as its requester copies them out of its
 * application's memory, in bursts: on this project's virtual CPUs a gap of
 * 90-130 us about every 128 KiB, wider than SV_SERVE_SPIN_NS.  After such
 * a batch the thread looks again for twice the widest gap between the
 * stream's batches in the last SV_STREAM_GAP_WINDOW_NS or two, up to
 * SV_STREAM_SPIN_MAX_NS; a gap longer than that is a pause of the
 * requester, and the next look is SV_SERVE_SPIN_NS again (engine.c
 * stream_spin_ns). */
#define SV_STREAM_SPIN_MAX_NS (200ull * 1000)
#define SV_STREAM_GAP_WINDOW_NS (1000ull * 1000)
#define SV_HINT_EVERY 16 /* busy passes between clock reads */
/* While a stream of datagrams goes through the wire sockets (at least
 * SV_NAP_PKTS sent and received between two looks of the thread) and the
 * application busy-polls, its passes reading every wire socket, the
 * thread naps without the sockets (engine.c app_does_it): from
 * SV_NAP_MIN_NS, doubling up to SV_NAP_MAX_NS. */
#define SV_NAP_PKTS 32
/* The thread also naps without the sockets while the application's own
 * passes carry a ping-pong (engine.c app_loops): at least SV_LOOP_PASSES
 * of them made completions, and no request came that changes memory
 * without one. */
#define SV_LOOP_PASSES 4
#define SV_NAP_MIN_NS (50ull * 1000)
#define SV_NAP_MAX_NS (400ull * 1000)
/* Naps in a row the thread may begin without a look of its own because
 * each time it woke a busy poll's pass held the engine lock (engine.c,
 * progress_main): bounds the staleness of its last look's decisions. */
#define SV_RENAP_MAX 8
/* ACKs held back for the application's answer (engine.c hold_acks) leave
 * at the latest this much later: well before a requester's probe
 * (SV_PROBE_MIN_NS), which would resend. */
#define SV_ACK_HOLD_NS (200ull * 1000)
/* An ibv_post_send keeps the request packets it built for a later send
 * (engine.c hold_reqs) when their QP has at least this many packets in
 * flight before them over UDP: a stream, whose next pass (the
 * application's poll, the ACKs' arrival, at the latest SV_ACK_HOLD_NS
 * later) sends them with the posts after them, in one UDP_SEGMENT send.
 * With fewer (a ping-pong, a lone message) a post sends at once. */
#define SV_TX_HOLD_FLIGHT 4
#define SV_PROBE_MIN_NS (1000ull * 1000) /* early resend: floor */
#define SV_PROBE_NS (2ull * 1000 * 1000) /* ... before an RTT sample */
#define SV_PROBE_READ_NS (2ull * 1000 * 1000) /* ... for a READ response */
/* Duplicate ACKs forgiven as answers to resends (qpe.h, dup_owed): at most
 * two full windows of them. */
#define SV_DUP_OWED_MAX (2u * SV_WINDOW_MAX)

#endif
