/* TEMPORARY scaffolding: the engine lands with the RC transport. */
#include "engine/engine.h"

#include <errno.h>

int sv_engine_open(struct sv_context *ctx) { return 0; }
void sv_engine_close(struct sv_context *ctx) {}
int sv_engine_qp_create(struct sv_qp *qp) { return EOPNOTSUPP; }
void sv_engine_qp_destroy(struct sv_qp *qp) {}
void sv_engine_qp_modified(struct sv_qp *qp, int attr_mask, enum ibv_qp_state old) {}
void sv_engine_install_ops(struct sv_context *ctx) {}
void sv_engine_poll_hint(struct sv_context *ctx) {}
