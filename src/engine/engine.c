/* TEMPORARY scaffolding: the engine lands with the RC transport.
 * QP numbers come from a counter so the control path can be tested. */
#include "engine/engine.h"

#include <errno.h>

static atomic_uint next_qpn = 0x100;

int sv_engine_open(struct sv_context *ctx) { return 0; }
void sv_engine_close(struct sv_context *ctx) {}
int sv_engine_qp_create(struct sv_qp *qp)
{
	qp->qpx.qp_base.qp_num = atomic_fetch_add(&next_qpn, 1);
	return 0;
}
void sv_engine_qp_destroy(struct sv_qp *qp) {}
void sv_engine_qp_modified(struct sv_qp *qp, int attr_mask, enum ibv_qp_state old) {}
void sv_engine_install_ops(struct sv_context *ctx) {}
void sv_engine_poll_hint(struct sv_context *ctx) {}
