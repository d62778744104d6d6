/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Counters (named like rxe's where rxe has one): the engine's and each
 * QP's.  They live in the process's stats segment (diag/statseg.h); their
 * output (traces, dumps, reports) is diag/stats.h's.
 */
#ifndef SV_ENGINE_STATS_H
#define SV_ENGINE_STATS_H

#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

/* ---- counters (named like rxe's where rxe has one) ----------------------- */

/* clang-format off */
#define SV_COUNTERS(X)                                                       \
	X(sent_pkts, "packets sent")                                         \
	X(rcvd_pkts, "packets received")                                     \
	X(send_err, "packets the kernel refused to send")                    \
	X(duplicate_request, "duplicate requests answered")                  \
	X(dup_read_beyond, "duplicate READs reaching past the one repeated") \
	X(out_of_seq_request, "requests after a PSN gap")                    \
	X(rcvd_seq_err, "sequence error NAKs received")                      \
	X(send_seq_nak, "sequence error NAKs sent")                          \
	X(rcvd_rnr_err, "RNR NAKs received")                                 \
	X(send_rnr_err, "RNR NAKs sent")                                     \
	X(completer_retry_err, "retransmissions after a timeout")            \
	X(retry_exceeded_err, "retry count exceeded")                        \
	X(retry_rnr_exceeded_err, "RNR retry count exceeded")                \
	X(implied_nak_retry, "retries for missing read/atomic responses")    \
	X(fast_retransmit, "retries after a duplicate ACK")                  \
	X(dup_ack_resent, "duplicate ACKs answering our own resends")        \
	X(probe_retransmit, "early resends while waiting for an ACK")        \
	X(probe_deferred, "probes not sent: the peer had not taken its ring") \
	X(dup_ack_sent, "duplicate ACKs sent after a sequence NAK")          \
	X(rtt_samples, "round-trip samples taken (engine/transport/rtt.h)")           \
	X(retrans_pkts, "request packets sent again (any resend)")          \
	X(ooo_kept, "out-of-order WRITE packets placed ahead (selective)")  \
	X(sack_resend, "selective resends (a hole, not go-back-N)")         \
	X(cc_cuts, "congestion window cuts (one per loss episode)")        \
	X(rdma_sends, "SEND messages received")                              \
	X(rdma_recvs, "receive WQEs completed")                              \
	X(ack_sent, "ACKs sent")                                             \
	X(ack_held, "ACKs held back to leave after the answer")             \
	X(ack_held_late, "held ACKs sent later than SV_ACK_HOLD_NS twice")  \
	X(nak_sent, "error NAKs sent")                                       \
	X(nak_rcvd, "error NAKs received")                                   \
	X(drop_malformed, "dropped: malformed (length, opcode, version)")    \
	X(drop_icrc, "dropped: bad ICRC")                                    \
	X(icrc_id_solved, "ICRCs matched with a solved IPv4 ID (rxe, GSO)") \
	X(icrc_left_tx, "packets sent with the ICRC left to the UDP checksum") \
	X(icrc_left_rx,                                                    \
	  "packets received with the ICRC left to the UDP checksum")      \
	X(roce_forwarded, "packets UDP 4791 took for another process's QP")  \
	X(mad_forwarded, "CM MADs UDP 4791 took, sent to the CM they name")   \
	X(mad_fwd_lost, "CM MADs lost: their CM's socket was full")          \
	X(roce_takeover, "times this process took UDP 4791 over")            \
	X(drop_no_qp, "dropped: no QP at the destination QPN")               \
	X(drop_qp_state, "dropped: QP not in a receiving state")             \
	X(drop_transport, "dropped: opcode of another transport")            \
	X(drop_wrong_peer, "dropped: not from the connected peer")           \
	X(drop_pkey, "dropped: P_Key mismatch")                              \
	X(drop_qkey, "dropped: Q_Key mismatch")                              \
	X(drop_ud_no_wqe, "dropped: UD message without a receive WQE")       \
	X(drop_ud_mtu, "dropped: UD message longer than the port MTU")      \
	X(ud_ah_resolved, "UD address handles resolved (a GID-table scan)") \
	X(drop_stale_resp, "dropped: stale or unexpected responses")         \
	X(drop_bad_resp, "dropped: inconsistent responses")                  \
	X(drop_uc_msg, "dropped: UC messages after a gap or without WQE")    \
	X(resp_access_err, "remote access errors detected")                  \
	X(access_no_key, "of those: no region or window has the R_Key")     \
	X(access_mw_qp, "of those: a type 2 window bound to another QP")    \
	X(access_invalid, "of those: region or window being invalidated")   \
	X(access_pd, "of those: the region's PD is not the QP's")           \
	X(access_rights, "of those: the region lacks the remote right")     \
	X(access_bounds, "of those: outside the region or window")          \
	X(access_qp_flags, "of those: the QP's access flags lack the right") \
	X(resp_inv_req, "invalid requests detected")                         \
	X(mem_fault, "registered memory faulted (unmapped/protected later)") \
	X(qp_errors, "QPs moved to the error state by the engine")          \
	X(fault_drop, "packets dropped by SOFTVERBS_FAULT (or _LOSS)")      \
	X(fault_dup, "packets duplicated by SOFTVERBS_FAULT")                \
	X(fault_delay, "packets delayed by SOFTVERBS_FAULT")                 \
	X(fault_reorder, "packets reordered by SOFTVERBS_FAULT")             \
	X(fault_corrupt, "packets corrupted by SOFTVERBS_FAULT")             \
	X(fault_rnr, "requests answered RNR NAK by SOFTVERBS_FAULT")         \
	X(fault_access, "requests refused (access) by SOFTVERBS_FAULT")      \
	X(fault_retry, "requests never answered by SOFTVERBS_FAULT")         \
	X(fault_pull, "reads of a sender's memory refused by SOFTVERBS_FAULT") \
	X(shm_tx_pkts, "packets sent through shared memory")                \
	X(shm_rx_pkts, "packets received through shared memory")            \
	X(shm_ring_full, "packets lost: the peer's ring was full")          \
	X(shm_ring_holds, "requester runs held: the peer's ring half full") \
	X(shm_wakeups, "doorbells sent to a sleeping peer")          \
	X(shm_other_user, "peers of another user: UDP, no fast path")      \
	X(thread_late_rx, "datagrams found after an unwatched thread wait") \
	X(thread_naps, "thread naps without the sockets (the app polls do it)") \
	X(thread_unwatch, "times the thread took the sockets out of its epoll set") \
	X(gso_sends, "UDP sends of several packets (UDP_SEGMENT)")          \
	X(gso_pkts, "packets those sends carried")                          \
	X(gro_pkts, "packets received coalesced (UDP_GRO)")                 \
	X(src_said, "UDP sends that named their source address")          \
	X(src_lookups, "route lookups: would the kernel pick it anyway?")  \
	X(direct_write, "RDMA WRITEs placed with one copy (direct.c)")       \
	X(direct_read, "RDMA READs placed with one copy (direct.c)")         \
	X(direct_memfile, "of those, copied through the target's mem file")  \
	X(direct_fallback, "one-copy candidates left to the packet path")    \
	X(direct_batches, "one-copy calls that carried several WQEs")        \
	X(direct_batched, "WQEs those calls carried")                        \
	X(direct_deferred, "small WRs left for the next post or poll to batch") \
	X(help_posted, "large WRITEs offered to the target's thread (help.c)") \
	X(help_taken, "of those, partly copied by it")                       \
	X(help_revoked, "of those, taken back from a stopped target")         \
	X(help_timeout, "of those, taken back from a helper too slow")       \
	X(help_chunks, "chunks of peers' WRITEs this thread copied")         \
	X(chan_sends, "SENDs through a message channel (paths/chan.c)")      \
	X(chan_recvs, "messages received through a message channel")      \
	X(chan_atomics, "atomics sent through a message channel")            \
	X(chan_atomics_served, "atomics executed for a peer's channel")      \
	X(chan_writes, "RDMA WRITEs sent through a message channel")         \
	X(chan_writes_served, "RDMA WRITEs placed for a peer's channel")     \
	X(chan_writes_taken, "channel WRITEs, READs taken back from a stopped peer") \
	X(chan_reads, "RDMA READs sent through a message channel")           \
	X(chan_reads_lean, "of those, sent by post_send in lean mode")       \
	X(chan_reads_served, "RDMA READs answered for a peer's channel")     \
	X(chan_broken, "message channels closed: a malformed message")   \
	X(chan_visits, "QPs a channel poll looked at (paths/chan.c)")     \
	X(rdv_sends, "large SENDs sent as a descriptor (paths/chan_rdv.c)") \
	X(rdv_recvs, "large SENDs pulled with one copy")                     \
	X(rdv_failed, "pulls that failed: the peer died, or its memory")    \
	X(rdv_refused, "reads of a sender's memory the kernel refused")      \
	X(strict_reports, "verbs misuse reported (SOFTVERBS_STRICT=1)")     \
	X(thread_naps_loop, "thread naps: the app's verbs carry a ping-pong") \
	X(app_wait_sleeps, "sleeps of an app thread waiting for an event") \
	X(app_waits, "waits of an app thread for an event that ran a pass") \
	X(app_wait_passes, "passes those waits ran")                         \
	X(req_held, "request packets a post kept for a later send")          \
	X(thread_renaps, "thread naps begun again: a busy poll held the lock")
/* clang-format on */

struct sv_stats {
#define X(name, desc) uint64_t name;
	SV_COUNTERS(X)
#undef X
};

/* A QP's counters.  The packet counters count both links; wr_* counts the
 * send WRs completed successfully whatever carried them (packets, a
 * message channel, one-copy placement), recv_* the receive WRs. */
/* clang-format off */
#define SV_QP_COUNTERS(X)                                                    \
	X(tx_pkts, "packets sent (UDP and shm)")                             \
	X(tx_bytes, "bytes of those packets")                                \
	X(rx_pkts, "packets received for this QP")                          \
	X(rx_bytes, "bytes of those packets")                                \
	X(wr_done, "send WRs completed successfully (any path)")             \
	X(wr_bytes, "bytes of those WRs")                                    \
	X(recv_done, "receive WRs completed")                                \
	X(recv_bytes, "bytes received into them")                            \
	X(retrans, "retransmissions (timeout, NAK, duplicate ACK, probe)")   \
	X(rnr_sent, "RNR NAKs sent")                                         \
	X(rnr_rcvd, "RNR NAKs received")
/* clang-format on */

struct sv_qp_stats {
#define X(name, desc) uint64_t name;
	SV_QP_COUNTERS(X)
#undef X
};

/* The counters live in the process's stats segment (diag/statseg.h), so
 * `softverbs stats` reads them as they are incremented. */
#define SV_STAT(eng, name) ((eng)->stats->name++)
#define SV_STAT_ADD(eng, name, n) ((eng)->stats->name += (n))
/* A QP's own counters (struct sv_qp_stats above): in its slot of
 * the segment, or summed in its context's "others" slot. */
#define SV_QSTAT(qe, name) ((qe)->ctr->name++)
#define SV_QSTAT_ADD(qe, name, n) ((qe)->ctr->name += (n))

#endif
