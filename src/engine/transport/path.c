/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The path interface's dispatch (path.h): each operation goes to every path
 * of the engine that has it, and the one place a QP's paths are chosen.
 * The table comes from the layer above (sv_engine_open).
 */
#include "engine/transport/eng.h"
#include "engine/transport/hooks.h"
#include "engine/transport/path.h"
#include "engine/transport/qpe.h"

/* The i-th path of an engine. */
static const struct sv_path_ops *path(const struct sv_engine *eng,
				      unsigned int i)
{
	return eng->paths->ops[i];
}

void sv_paths_engine_init(struct sv_engine *eng)
{
	unsigned int i;

	for (i = 0; i < eng->paths->n; i++)
		if (path(eng, i)->engine_init)
			path(eng, i)->engine_init(eng);
}

void sv_paths_sock_open(struct sv_engine *eng, struct sv_sock *s)
{
	unsigned int i;

	for (i = 0; i < eng->paths->n; i++)
		if (path(eng, i)->sock_open)
			path(eng, i)->sock_open(eng, s);
}

/* Each path says whether it applies to the QP as its link is now; its send
 * still decides per WQE (QP type, opcode, size, state). */
void sv_paths_select(struct sv_qp_engine *qe)
{
	struct sv_engine *eng = qe->eng;
	unsigned int i, n = 0;

	/* Paths carry no packets: a QP that fault injection may touch
	 * keeps to the packet path, where the faults are (inject.h). */
	if (sv_hook_inject_qp(qe)) {
		qe->npaths = 0;
		return;
	}
	for (i = 0; i < eng->paths->n; i++)
		if (path(eng, i)->applies(qe))
			qe->paths[n++] = path(eng, i);
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

bool sv_engine_post_path(struct sv_qp *qp, const struct ibv_send_wr *wr,
			 uint64_t len)
{
	struct sv_qp_engine *qe = qp->eng;
	unsigned int i;

	/* Only a path that runs the send queue from post_send takes WRs
	 * here (sq_by_post): every other post is one load away from the
	 * queue. */
	if (!qe || !atomic_load_explicit(&qe->sq_by_post, memory_order_acquire))
		return false;
	for (i = 0; i < qe->npaths; i++)
		if (qe->paths[i]->post && qe->paths[i]->post(qp, wr, len))
			return true;
	return false;
}

/* The QP-wide notices go to every path, chosen for the QP or not: a path
 * may hold state of the QP that outlives its choice (the published table
 * entry peers copy through, a channel peers send into). */
void sv_paths_quiesce(struct sv_qp_engine *qe)
{
	unsigned int i;

	for (i = 0; i < qe->eng->paths->n; i++)
		if (path(qe->eng, i)->quiesce)
			path(qe->eng, i)->quiesce(qe);
}

void sv_paths_qp_state(struct sv_qp_engine *qe)
{
	unsigned int i;

	for (i = 0; i < qe->eng->paths->n; i++)
		if (path(qe->eng, i)->qp_state)
			path(qe->eng, i)->qp_state(qe);
}

void sv_paths_settle(struct sv_qp_engine *qe)
{
	unsigned int i;

	for (i = 0; i < qe->npaths; i++)
		if (qe->paths[i]->settle)
			qe->paths[i]->settle(qe);
}

void sv_paths_qp_destroyed(struct sv_qp_engine *qe)
{
	unsigned int i;

	for (i = 0; i < qe->eng->paths->n; i++)
		if (path(qe->eng, i)->qp_destroyed)
			path(qe->eng, i)->qp_destroyed(qe);
}

void sv_paths_poll(struct sv_engine *eng)
{
	unsigned int i;

	for (i = 0; i < eng->paths->n; i++)
		if (path(eng, i)->poll)
			path(eng, i)->poll(eng);
}

void sv_paths_watch(struct sv_engine *eng)
{
	unsigned int i, n = 0;

	for (i = 0; i < eng->paths->n; i++)
		if (path(eng, i)->watch)
			path(eng, i)->watch(eng, &n);
	atomic_store_explicit(&eng->nwatch, n, memory_order_relaxed);
}

uint64_t sv_paths_next_wake(struct sv_engine *eng, uint64_t now, uint64_t until,
			    bool busy, bool napped, bool *nap)
{
	unsigned int i;

	*nap = false;
	for (i = 0; i < eng->paths->n; i++)
		if (path(eng, i)->next_wake)
			until = path(eng, i)->next_wake(eng, now, until, busy,
							napped, nap);
	return until;
}

void sv_paths_serve(struct sv_engine *eng, bool busy)
{
	unsigned int i;

	for (i = 0; i < eng->paths->n; i++)
		if (path(eng, i)->serve)
			path(eng, i)->serve(eng, busy);
}
