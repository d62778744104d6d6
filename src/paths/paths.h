/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The paths layer: the ways a send WQE travels besides packets, each an
 * implementation of the engine's path interface (engine/path.h), above the
 * engine and below verbs.
 *
 *   chan.c    message channels: small RC SENDs into a same-host peer's
 *             ring (docs/fastpath.md layer 3), and through them
 *   chan_atomic.c  RC atomics, executed by the peer's engine
 *   chan_write.c  small RC RDMA WRITEs, placed by the peer's engine
 *   chan_read.c  small RC RDMA READs, answered by the peer's engine
 *   chan_rdv.c  large RC SENDs, pulled by the receiver with one copy
 *   direct.c  one-copy RDMA WRITE/READ into a same-host peer's memory
 *             (layer 2), with
 *   help.c    the target's idle thread pulling part of a large WRITE
 *   paths.c   the table the verbs layer hands to each engine
 */
#ifndef SV_PATHS_PATHS_H
#define SV_PATHS_PATHS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/pubtab.h"
#include "engine/transport/eng.h"
#include "engine/transport/path.h"
#include "engine/transport/qpe.h"
#include "engine/transport/sgl.h"
#include "link/chan.h"
#include "util/list.h"

/*
 * The paths' own state: per engine and per QP, in the bytes the engine
 * keeps for them right after its struct sv_engine and each struct
 * sv_qp_engine (engine/transport/path.h, sv_path_table's eng_bytes and
 * qp_bytes; zeroed at creation, freed with it).  The engine never reads
 * them, so their layout is the paths' alone.
 */
struct sv_paths_eng {
	struct list_head chans; /* QPs a channel poll visits (chan.c) */
	unsigned int chans_open; /* QPs whose own channel is open (chan.c) */
	bool help_avail; /* what the segments' helping words say (help.c) */
};

struct sv_paths_qp {
	/* Message channels (chan.c): */
	struct {
		struct sv_chan_rx rx; /* ours, the peer sends into it */
		struct sv_chan_tx tx; /* the peer's, we send into it */
		struct sv_chan *own; /* our channel (rx.ch once open) */
		uint32_t outstanding; /* SV_WQE_CHAN WQEs not yet retired */
		uint32_t atomics; /* of those, atomics (chan_atomic.c) */
		uint64_t results_used; /* their result words (bits) */
		uint64_t rdv_end; /* the last large SEND's chan_end */
		/* Lean mode (sq_by_post): post_send writes SENDs into the
		 * channel itself, under sq_lock, without the engine; the
		 * engine's req.idx and outstanding are stale meanwhile
		 * (comp.idx is the retire cursor, moved under both locks). */
		uint32_t lean_psn; /* req.psn when it began */
		_Atomic uint64_t lean_sends; /* counted into stats later */
		uint64_t lean_counted;
		uint32_t tries; /* attach attempts */
		uint64_t acked; /* the ack line as last seen */
		uint64_t rx_acked; /* rx.head as last acknowledged */
		/* the claim word of rx.ch as we last moved it (WRITEs up to
		 * there are ours to place: chan_write.c) */
		uint64_t rx_claim;
		_Atomic uint64_t lean_writes; /* lean WRITEs, as lean_sends */
		uint64_t lean_writes_counted;
		_Atomic uint64_t lean_reads; /* lean READs, as lean_sends */
		uint64_t lean_reads_counted;
		/* Lean mode's result words (READs): in use are the bits of
		 * res_taken ^ res_freed; post_send flips a bit of res_taken
		 * as it sends a READ (sq_lock), the retirement flips it in
		 * res_freed once the result is in the scatter list (engine
		 * lock), so each has one writer and neither a locked RMW
		 * (atomic: a poster waiting for a word reads res_taken
		 * without sq_lock). */
		_Atomic uint64_t lean_res_taken;
		_Atomic uint64_t lean_res_freed;
		uint64_t take_next; /* ns: the next look at a stopped peer */
		/* rx.head when a message waited for the ring once (chan.c,
		 * rx_run: the ACK of our packets may be there). */
		uint64_t rx_ring_waited;
		uint64_t stall_since; /* ns: acked has not moved since */
		bool listed; /* on the engine's chans */
		bool rx_hot; /* rx.ch is looked at every pass (not cold) */
		uint64_t idle_since; /* ns: nothing to do since (0: busy) */
		uint64_t cold_at; /* ns: rx.ch marked cold, still looked at */
		struct list_node node;
	} chan;

	/* large WRITEs the target's thread did not help with in a row
	 * (help.c): the next ones are not offered for a while */
	uint32_t help_missed, help_skip, help_slow;
};

_Static_assert(_Alignof(struct sv_paths_eng) <= _Alignof(struct sv_engine),
	       "the paths' engine state follows struct sv_engine");
_Static_assert(_Alignof(struct sv_paths_qp) <= _Alignof(struct sv_qp_engine),
	       "the paths' QP state follows struct sv_qp_engine");

/* The state may be changed through a const engine or QP: it is not theirs. */
static inline struct sv_paths_eng *sv_pe(const struct sv_engine *eng)
{
	return (struct sv_paths_eng *)(uintptr_t)(eng + 1);
}

static inline struct sv_paths_qp *sv_pq(const struct sv_qp_engine *qe)
{
	return (struct sv_paths_qp *)(uintptr_t)(qe + 1);
}

/* The QP whose state pq is. */
static inline struct sv_qp_engine *sv_pq_qp(struct sv_paths_qp *pq)
{
	return (struct sv_qp_engine *)pq - 1;
}

/* direct.c: one-copy RDMA WRITE/READ with a same-host peer, and the QP's
 * entry in the published table; its ops are sv_path_direct. */
/* Copy between our iov[0..n) (consumed) and [rva, rva+len) of the table's
 * process; *via_mem: through its mem file. */
struct iovec;
bool sv_direct_copy(const struct sv_pubtab_view *tab, bool write,
		    struct iovec *iov, uint32_t n, uintptr_t rva, uint64_t len,
		    bool *via_mem);

/* help.c: a large direct WRITE shared with the target's progress thread
 * (link/help.h). */
enum sv_help_r {
	SV_HELP_NOT, /* not offered: copy it alone */
	SV_HELP_DONE, /* every byte is in place */
	SV_HELP_FAILED, /* a copy failed: the packet path runs it */
};
enum sv_help_r sv_help_write(struct sv_qp_engine *qe,
			     const struct sv_pubtab_view *tab,
			     const struct iovec *iov, uint32_t n, uintptr_t rva,
			     const struct sv_send_wqe *wqe);
/* The progress thread, without the engine lock: take the jobs peers
 * posted in our segments, then linger a little for the next ones. */
void sv_help_serve(struct sv_engine *eng);
/* Tell peers whether our thread takes jobs now (not while our
 * application polls: its core is busy); changes only are written. */
void sv_help_available(struct sv_engine *eng, bool yes);

/* chan_atomic.c: RC atomics through message channels (chan.c calls). */
struct sv_chan;
struct sv_chan_msg;
/* Is opcode (enum ibv_wr_opcode) an atomic a channel carries? */
bool sv_chan_atomic_op(uint32_t opcode);
/* How many atomics the QP may have in its channel at once. */
uint32_t sv_chan_atomic_limit(const struct sv_qp_engine *qe);
/* The request of atomic WQE w, into a reserved payload. */
void sv_chan_atomic_fill(const struct sv_send_wqe *w, uint8_t *dst);
/* Requester: the atomic w was acknowledged; its result (own's result
 * word w->atomic_result, the number it was sent with) into its SGE.
 * IBV_WC_SUCCESS or the error completion. */
enum ibv_wc_status sv_chan_atomic_done(struct sv_qp_engine *qe,
				       struct sv_send_wqe *w,
				       const struct sv_chan *own);
/* Responder: execute the atomic m a peer put into qe's channel; the
 * original value goes into pc's result word.  0, or the requester's
 * error status with *event our QP's (it goes to ERR); *bad: a malformed
 * message (the channel is broken).  No lock but the engine's held. */
uint32_t sv_chan_atomic_serve(struct sv_qp_engine *qe,
			      const struct sv_chan_msg *m, struct sv_chan *pc,
			      int *event, bool *bad);

/* A refusal of a request a peer put into qe's channel: the responder's
 * counters (resp.c resp_fatal), our QP's event into *event, and the
 * requester's status (REM_ACCESS_ERR, or REM_INV_REQ_ERR). */
uint32_t sv_chan_refuse(struct sv_qp_engine *qe, bool access, int *event);

/* chan_write.c: small RC RDMA WRITEs through message channels, placed by
 * the peer's engine (chan.c calls). */
/* Does a WRITE of len bytes go through the channel?  signaled: its
 * completion is asked for; busy: WQEs before or after it are in the
 * send queue (a lone signaled WRITE is copied at once by direct.c). */
bool sv_chan_write_wanted(const struct sv_qp_engine *qe, uint32_t opcode,
			  uint64_t len, bool signaled, bool busy);
/* The request of WRITE w (header and bytes), into a reserved payload;
 * false when its gather list fails our key checks. */
bool sv_chan_write_fill(const struct sv_qp_engine *qe,
			const struct sv_send_wqe *w, uint8_t *dst);
/* Consumer, at the WRITE m at the head: is it ours to place (claimed,
 * now or before)?  false: the producer took it back. */
bool sv_chan_write_claim(struct sv_qp_engine *qe, const struct sv_chan_msg *m);
/* Consumer, the key table's read lock held: place the WRITE m.  0, or
 * the requester's error status with *event our QP's; *bad: malformed. */
uint32_t sv_chan_write_serve(struct sv_qp_engine *qe,
			     const struct sv_chan_msg *m, int *event,
			     bool *bad);

/* chan_read.c: small RC RDMA READs through message channels, answered
 * into a result word as atomics are (chan.c calls). */
/* Does a WR of opcode and len bytes go through the channel as a READ
 * (signaled, busy: as for sv_chan_write_wanted)? */
bool sv_chan_read_wanted(const struct sv_qp_engine *qe, uint32_t opcode,
			 uint64_t len, bool signaled, bool busy);
/* The request of READ w, into a reserved payload. */
void sv_chan_read_fill(const struct sv_send_wqe *w, uint8_t *dst);
/* Requester: the READ w was acknowledged; its bytes (own's result word
 * w->atomic_result) into its scatter list.  IBV_WC_SUCCESS or the error
 * completion. */
enum ibv_wc_status sv_chan_read_done(struct sv_qp_engine *qe,
				     struct sv_send_wqe *w,
				     const struct sv_chan *own);
/* Responder, the key table's read lock held: answer the READ m into pc's
 * result word.  0, or the requester's error status with *event our QP's;
 * *bad: malformed. */
uint32_t sv_chan_read_serve(struct sv_qp_engine *qe,
			    const struct sv_chan_msg *m, struct sv_chan *pc,
			    int *event, bool *bad);

/* chan_rdv.c: large RC SENDs through channels as a descriptor the
 * receiver pulls with one copy (chan.c calls). */
#include <sys/uio.h>
struct sv_chan_rdv_desc {
	struct iovec iov[SV_MAX_SGE]; /* in the sender's address space */
	uint32_t n;
	uint32_t len;
	uint32_t gen; /* of the sender's own channel when it sent */
};
/* Does the SEND w go as a descriptor? */
bool sv_chan_rdv_wanted(const struct sv_qp_engine *qe,
			const struct sv_send_wqe *w);
/* Has the receiver shown that it can read our memory (can_pull of the
 * peer's channel, sv_pq(qe)->chan.tx.ch)? */
bool sv_chan_rdv_proven(const struct sv_qp_engine *qe);
/* Receiver, opening its channel: can we read the peer's memory now (a
 * word of its segment's header through its address space)? */
bool sv_chan_rdv_probe(struct sv_qp_engine *qe);
struct sv_chan;
/* w's descriptor into buf (SV_CHAN_MAX_MSG bytes): its length, or 0 when
 * the gather list fails our key checks (the packet path reports it). */
uint32_t sv_chan_rdv_fill(const struct sv_qp_engine *qe,
			  const struct sv_send_wqe *w, uint8_t *buf);
/* Receiver: the descriptor m carries, checked; false: malformed. */
bool sv_chan_rdv_read(const struct sv_chan_msg *m, struct sv_chan_rdv_desc *d);
/* Receiver: does the sending QP still stand behind descriptor d (pc, its
 * own channel, open with the generation d was sent with)? */
bool sv_chan_rdv_current(const struct sv_qp_engine *qe,
			 const struct sv_chan *pc,
			 const struct sv_chan_rdv_desc *d);
/* Receiver, key table's read lock held: pull d's bytes into our receive
 * SGL (long enough: checked by the caller; pd: the QP's, or its SRQ's);
 * pc is the sender's own channel (its generation).  PROT: our SGL
 * refused; FAULT with *failed: the copy failed or the sending QP is gone
 * (ERR, reset, destroyed, dead process), and *refused_after if the kernel
 * refused the read of a live sender after the probe allowed it. */
enum sv_sgl_err sv_chan_rdv_pull(struct sv_qp_engine *qe,
				 const struct sv_chan *pc, struct sv_pd *pd,
				 const struct ibv_sge *sge, uint32_t nsge,
				 struct sv_chan_rdv_desc *d, bool *failed,
				 bool *refused_after);

/* The paths, in the order the requester asks them (paths.c). */
extern const struct sv_path_ops sv_path_chan, sv_path_direct;
extern const struct sv_path_table sv_paths;

/* While SENDs wait in a message channel for their ack, the thread looks
 * at least this often (chan.c's stall watchdog). */
#define SV_CHAN_WATCH_NS (10ull * 1000 * 1000)
/* The progress thread's first sleep with message channels open. */
#define SV_CHAN_NAP_NS (1000ull * 1000)

#endif
