/*
 * The path table and the one place a QP's paths are chosen (path.h).
 */
#include "engine/eng.h"
#include "engine/path.h"
#include "engine/qpe.h"

static const struct sv_path_ops *const paths[SV_PATHS_MAX] = {
	&sv_path_chan,
	&sv_path_direct,
};

#define for_each_path(p)                                 \
	for (const struct sv_path_ops *const *p = paths; \
	     p < paths + SV_PATHS_MAX; p++)

void sv_paths_engine_init(struct sv_engine *eng)
{
	for_each_path(p) if ((*p)->engine_init)(*p)->engine_init(eng);
}

/* Both same-host paths need the peer's segment (the shm link attached):
 * the channel lives after its packet slots, and one-copy placement needs
 * the peer's published table besides.  Each path's send still decides
 * per WQE (QP type, opcode, size, state). */
void sv_paths_select(struct sv_qp_engine *qe)
{
	unsigned int n = 0;

	if (qe->shm) {
		qe->paths[n++] = &sv_path_chan;
		if (qe->shm->pubtab)
			qe->paths[n++] = &sv_path_direct;
	}
	qe->npaths = n;
}

enum sv_path_r sv_paths_send(struct sv_qp_engine *qe, struct sv_send_wqe *wqe)
{
	unsigned int i;

	for (i = 0; i < qe->npaths; i++) {
		enum sv_path_r r = qe->paths[i]->send(qe, wqe);

		if (r != SV_PATH_NO)
			return r;
	}
	return SV_PATH_NO;
}

/* The QP-wide notices go to every path, chosen for the QP or not: a path
 * may hold state of the QP that outlives its choice (the published table
 * entry peers copy through, a channel peers send into). */
void sv_paths_quiesce(struct sv_qp_engine *qe)
{
	for_each_path(p) if ((*p)->quiesce)(*p)->quiesce(qe);
}

void sv_paths_qp_state(struct sv_qp_engine *qe)
{
	for_each_path(p) if ((*p)->qp_state)(*p)->qp_state(qe);
}

void sv_paths_qp_destroyed(struct sv_qp_engine *qe)
{
	for_each_path(p) if ((*p)->qp_destroyed)(*p)->qp_destroyed(qe);
}

void sv_paths_poll(struct sv_engine *eng)
{
	for_each_path(p) if ((*p)->poll)(*p)->poll(eng);
}

void sv_paths_watch(struct sv_engine *eng)
{
	unsigned int n = 0;

	for_each_path(p) if ((*p)->watch)(*p)->watch(eng, &n);
	atomic_store_explicit(&eng->nwatch, n, memory_order_relaxed);
}

uint64_t sv_paths_next_wake(struct sv_engine *eng, uint64_t now, uint64_t until,
			    bool busy)
{
	for_each_path(p) if ((*p)->next_wake) until =
		(*p)->next_wake(eng, now, until, busy);
	return until;
}

void sv_paths_serve(struct sv_engine *eng, bool busy)
{
	for_each_path(p) if ((*p)->serve)(*p)->serve(eng, busy);
}
