/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Paths: the ways a send WQE can travel besides the packet engine, behind
 * one interface, in the manner of libfabric's shm protocol table
 * (smr_select_proto / smr_send_ops).  The paths themselves are a layer
 * above the engine (src/paths: message channels, one-copy placement); the
 * verbs layer hands each engine their table when it opens (sv_engine_open),
 * so the engine never names one.
 *
 * The packet engine is the path of last resort: whatever no path takes
 * goes as packets over the QP's link (UDP or the shm rings).  Which paths
 * a QP may use is decided in one place (sv_paths_select, path.c, asking
 * each path's `applies`) when its link to the peer changes; the requester
 * offers each WQE to those paths in order, and modify_qp, the error path,
 * destroy and the progress loop tell every path through the same few
 * operations.
 *
 * Adding a path: write its ops (any may be NULL but applies and send) in a
 * file of src/paths and add it to paths.c's table.  Its state is its own;
 * the engine keeps a few generic words that paths set and the engine reads
 * (sv_qp_engine.sq_by_post and run_alone, sv_engine.paths_active).  Every op
 * runs under the engine lock unless it says otherwise.
 */
#ifndef SV_ENGINE_PATH_H
#define SV_ENGINE_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ibv_send_wr;
struct sv_engine;
struct sv_qp;
struct sv_qp_engine;
struct sv_send_wqe;
struct sv_sock;

enum sv_path_r {
	SV_PATH_NO, /* not this path: ask the next one (packets last) */
	SV_PATH_DONE, /* taken (maybe with WQEs after it, up to the tail):
			 the requester goes on from the next one not done */
	SV_PATH_WAIT, /* not now: the requester stops until it is kicked */
};

struct sv_path_ops {
	const char *name;
	/* A context's engine is being set up (before any QP). */
	void (*engine_init)(struct sv_engine *eng);
	/* A new socket of the engine (its links open): a path may set up
	 * what it keeps in the socket's segment. */
	void (*sock_open)(struct sv_engine *eng, struct sv_sock *s);
	/* May this QP use the path, as its link to the peer is now? */
	bool (*applies)(const struct sv_qp_engine *qe);
	/* The requester offers a WQE it has not started. */
	enum sv_path_r (*send)(struct sv_qp_engine *qe,
			       struct sv_send_wqe *wqe);
	/* post_send, under sq_lock, before it queues a valid WR: true when
	 * the path carried it at once (no engine, no WQE to run). */
	bool (*post)(struct sv_qp *qp, const struct ibv_send_wr *wr,
		     uint64_t len);
	/* The engine takes the send queue back before it moves the QP to
	 * ERR by itself or destroys it. */
	void (*quiesce)(struct sv_qp_engine *qe);
	/* The QP's state changed (modify_qp, the engine's move to ERR, the
	 * first packet of an RTR QP raising COMM_EST). */
	void (*qp_state)(struct sv_qp_engine *qe);
	/* The packet path is about to complete a receive on the QP: a path
	 * that carries the QP's SENDs retires those the peer acknowledged
	 * before, so that the completions tell it in the peer's order (the
	 * peer acknowledged them before it could answer). */
	void (*settle)(struct sv_qp_engine *qe);
	/* The QP is going away: after this no peer reaches it here. */
	void (*qp_destroyed)(struct sv_qp_engine *qe);
	/* A progress pass that receives: take what peers put in. */
	void (*poll)(struct sv_engine *eng);
	/* After a pass whose watch set changed: add the words a lock-free
	 * busy poll compares (sv_watch_word, engine.c) from index *n on. */
	void (*watch)(struct sv_engine *eng, unsigned int *n);
	/* The thread about to sleep for the engine (the progress thread,
	 * or an application thread waiting for a completion event), before
	 * it waits until `until` (ns; UINT64_MAX: no timeout); busy: the
	 * application polls.  Returns the time it may wait until (<=
	 * until); may ask for a nap (*nap: if the wait brings nothing, look
	 * again, napped, before sleeping for good). */
	uint64_t (*next_wake)(struct sv_engine *eng, uint64_t now,
			      uint64_t until, bool busy, bool napped,
			      bool *nap);
	/* The progress thread after its wait, without the engine lock. */
	void (*serve)(struct sv_engine *eng, bool busy);
};

/* The paths an engine offers, in the order the requester asks them. */
#define SV_PATHS_MAX 4
struct sv_path_table {
	unsigned int n;
	const struct sv_path_ops *ops[SV_PATHS_MAX];
	/* Bytes of state the paths keep per engine and per QP: the engine
	 * allocates them, zeroed, right after its struct sv_engine and each
	 * struct sv_qp_engine, and never reads them (their layout is the
	 * paths', src/paths/paths.h). */
	size_t eng_bytes, qp_bytes;
};

/* path.c: the paths' ops, called for each path that has the op. */
void sv_paths_engine_init(struct sv_engine *eng);
void sv_paths_sock_open(struct sv_engine *eng, struct sv_sock *s);
/* Choose the QP's paths from its link to the peer (after attach/detach). */
void sv_paths_select(struct sv_qp_engine *qe);
enum sv_path_r sv_paths_send(struct sv_qp_engine *qe, struct sv_send_wqe *wqe);
void sv_paths_quiesce(struct sv_qp_engine *qe);
void sv_paths_qp_state(struct sv_qp_engine *qe);
void sv_paths_qp_destroyed(struct sv_qp_engine *qe);
void sv_paths_settle(struct sv_qp_engine *qe);
void sv_paths_poll(struct sv_engine *eng);
void sv_paths_watch(struct sv_engine *eng);
uint64_t sv_paths_next_wake(struct sv_engine *eng, uint64_t now, uint64_t until,
			    bool busy, bool napped, bool *nap);
void sv_paths_serve(struct sv_engine *eng, bool busy);

#endif
