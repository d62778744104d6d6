/*
 * Paths: the ways a send WQE can travel besides the packet engine, behind
 * one interface, in the manner of libfabric's shm protocol table
 * (smr_select_proto / smr_send_ops).
 *
 *   chanpath.c  message channels: small RC SENDs into the same-host peer's
 *               ring (docs/fastpath.md layer 3)
 *   direct.c    one-copy RDMA WRITE/READ into the same-host peer's memory,
 *               with help.c, the target's thread pulling part of a large
 *               WRITE (layer 2)
 *
 * The packet engine is the path of last resort: whatever no path takes
 * goes as packets over the QP's link (UDP or the shm rings).  Which paths
 * a QP may use is decided in one place (sv_paths_select, path.c) when its
 * link to the peer changes; the requester offers each WQE to those paths
 * in order, and modify_qp, the error path, destroy and the progress loop
 * tell every path through the same few operations, never a path by name.
 *
 * Adding a path: write its ops (any may be NULL), add it to path.c's table
 * and to sv_paths_select's rule, and keep its per-QP state in its own
 * file's structures.  Every op runs under the engine lock unless it says
 * otherwise.
 */
#ifndef SV_ENGINE_PATH_H
#define SV_ENGINE_PATH_H

#include <stdbool.h>
#include <stdint.h>

struct sv_engine;
struct sv_qp_engine;
struct sv_send_wqe;

enum sv_path_r {
	SV_PATH_NO, /* not this path: ask the next one (packets last) */
	SV_PATH_DONE, /* taken: the requester goes on with the next WQE */
	SV_PATH_WAIT, /* not now: the requester stops until it is kicked */
};

struct sv_path_ops {
	const char *name;
	/* A context's engine is being set up (before any QP). */
	void (*engine_init)(struct sv_engine *eng);
	/* The requester offers a WQE it has not started. */
	enum sv_path_r (*send)(struct sv_qp_engine *qe,
			       struct sv_send_wqe *wqe);
	/* The engine takes the send queue back before it moves the QP to
	 * ERR by itself or destroys it. */
	void (*quiesce)(struct sv_qp_engine *qe);
	/* The QP's state changed (modify_qp, the engine's move to ERR, the
	 * first packet of an RTR QP raising COMM_EST). */
	void (*qp_state)(struct sv_qp_engine *qe);
	/* The QP is going away: after this no peer reaches it here. */
	void (*qp_destroyed)(struct sv_qp_engine *qe);
	/* A progress pass that receives: take what peers put in. */
	void (*poll)(struct sv_engine *eng);
	/* After a pass whose watch set changed: add the words a lock-free
	 * busy poll compares (sv_watch_word, engine.c) from index *n on. */
	void (*watch)(struct sv_engine *eng, unsigned int *n);
	/* The progress thread, before it waits until `until` (ns;
	 * UINT64_MAX: no timeout); busy: the application polls.  Returns
	 * the time it may wait until (<= until); may ask for a nap
	 * (eng->nap: if the wait brings nothing, look again before a
	 * pass). */
	uint64_t (*next_wake)(struct sv_engine *eng, uint64_t now,
			      uint64_t until, bool busy);
	/* The progress thread after its wait, without the engine lock. */
	void (*serve)(struct sv_engine *eng, bool busy);
};

/* The paths there are, in the order the requester asks them. */
extern const struct sv_path_ops sv_path_chan, sv_path_direct;
#define SV_PATHS_MAX 2

/* path.c: the paths' ops, called for each path that has the op. */
void sv_paths_engine_init(struct sv_engine *eng);
/* Choose the QP's paths from its link to the peer (after attach/detach). */
void sv_paths_select(struct sv_qp_engine *qe);
enum sv_path_r sv_paths_send(struct sv_qp_engine *qe, struct sv_send_wqe *wqe);
void sv_paths_quiesce(struct sv_qp_engine *qe);
void sv_paths_qp_state(struct sv_qp_engine *qe);
void sv_paths_qp_destroyed(struct sv_qp_engine *qe);
void sv_paths_poll(struct sv_engine *eng);
void sv_paths_watch(struct sv_engine *eng);
uint64_t sv_paths_next_wake(struct sv_engine *eng, uint64_t now, uint64_t until,
			    bool busy);
void sv_paths_serve(struct sv_engine *eng, bool busy);

#endif
