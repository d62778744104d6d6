/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Extended CQs: ibv_create_cq_ex (verbs_context.create_cq_ex) and the
 * struct ibv_cq_ex iterator the header's inline ibv_start_poll,
 * ibv_next_poll, ibv_end_poll and ibv_wc_read_* functions call, plus
 * ibv_query_rt_values_ex, the clock those timestamps are read against.
 *
 * An extended CQ is an ordinary sv_cq (core/cq.c fills it, ibv_poll_cq
 * drains it too); the iterator takes one completion at a time out of the
 * ring into the CQ's cursor (cq->cur), so no lock is held while the
 * application reads the fields, and the engine is never stalled behind a
 * batch the application is processing.  A completion is consumed when the
 * iterator reaches it, as ibv_poll_cq consumes what it returns.
 *
 * Timestamps are real: the producer reads CLOCK_MONOTONIC (our "device
 * clock", one tick per nanosecond, hca_core_clock = 1 GHz) and
 * CLOCK_REALTIME as it writes each completion, for CQs that asked.
 */
#include "verbs/verbs.h"

#include <stdlib.h>
#include <time.h>

#include "engine/engine.h"
#include "util/lockorder.h"

/* The wc_flags we can fill.  CVLAN and flow tags come from raw Ethernet
 * QPs, TM_INFO from tag-matching SRQs: softverbs has neither. */
#define SV_CQ_WC_FLAGS                                                 \
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define SV_CQ_TS_FLAGS                         \
	(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
/* SINGLE_THREADED is a promise by the application that we may skip
 * locking; keeping the locks honours it.  IGNORE_OVERRUN is implemented
 * by the producer (core/cq.c). */
#define SV_CQ_CREATE_FLAGS \
	(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

static inline struct sv_cq *ex_to_cq(struct ibv_cq_ex *ex)
{
	return sv_container_of(ex, struct sv_cq, ex);
}

/* ---- the iterator ------------------------------------------------------- */

/* Move the oldest completion into the cursor; false when there is none. */
static bool cq_take(struct sv_cq *cq)
{
	uint32_t slot;

	sv_mutex_lock(&cq->lock, SV_LOCK_CQ);
	if (cq->head == cq->tail) {
		sv_mutex_unlock(&cq->lock);
		return false;
	}
	slot = cq->head & (cq->ncqe - 1);
	cq->cur = cq->ring[slot];
	if (cq->ts)
		cq->cur_ts = cq->ts[slot];
	cq->head++;
	sv_mutex_unlock(&cq->lock);
	cq->ex.status = cq->cur.status;
	cq->ex.wr_id = cq->cur.wr_id;
	return true;
}

static int sv_start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct sv_cq *cq = ex_to_cq(ex);

	/* No attribute is defined yet: a bit we do not know is an error. */
	if (attr && attr->comp_mask)
		return EINVAL;
	if (cq_take(cq))
		return 0;
	/* Empty: a busy-polling thread drives progress itself, as
	 * ibv_poll_cq does, then looks once more. */
	sv_engine_poll_hint(cq->ctx);
	return cq_take(cq) ? 0 : ENOENT;
}

static int sv_next_poll(struct ibv_cq_ex *ex)
{
	return cq_take(ex_to_cq(ex)) ? 0 : ENOENT;
}

static void sv_end_poll(struct ibv_cq_ex *ex)
{
	/* Completions were consumed as the iterator reached them. */
}

static enum ibv_wc_opcode sv_read_opcode(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.opcode;
}

static uint32_t sv_read_vendor_err(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.vendor_err;
}

static unsigned int sv_read_wc_flags(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.wc_flags;
}

static uint32_t sv_read_byte_len(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.byte_len;
}

/* Also what ibv_wc_read_invalidated_rkey reads (the same union). */
static __be32 sv_read_imm_data(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.imm_data;
}

static uint32_t sv_read_qp_num(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.qp_num;
}

static uint32_t sv_read_src_qp(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.src_qp;
}

static uint32_t sv_read_slid(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.slid;
}

static uint8_t sv_read_sl(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.sl;
}

static uint8_t sv_read_dlid_path_bits(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur.dlid_path_bits;
}

static uint64_t sv_read_completion_ts(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur_ts.dev_ns;
}

static uint64_t sv_read_completion_wallclock_ns(struct ibv_cq_ex *ex)
{
	return ex_to_cq(ex)->cur_ts.wall_ns;
}

/* Only the accessors of the fields asked for are installed, as rdma-core's
 * providers do ("only fields that the user requested via wc_flags could be
 * queried"); the opcode, vendor error and wc_flags are always there. */
static void cq_ex_install(struct sv_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *ex = &cq->ex;

	ex->start_poll = sv_start_poll;
	ex->next_poll = sv_next_poll;
	ex->end_poll = sv_end_poll;
	ex->read_opcode = sv_read_opcode;
	ex->read_vendor_err = sv_read_vendor_err;
	ex->read_wc_flags = sv_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ex->read_byte_len = sv_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		ex->read_imm_data = sv_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ex->read_qp_num = sv_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ex->read_src_qp = sv_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		ex->read_slid = sv_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		ex->read_sl = sv_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ex->read_dlid_path_bits = sv_read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		ex->read_completion_ts = sv_read_completion_ts;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		ex->read_completion_wallclock_ns =
			sv_read_completion_wallclock_ns;
}

/* ---- create ------------------------------------------------------------- */

struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *attr)
{
	struct sv_pd *parent = NULL;
	struct sv_cq *cq;
	uint32_t flags = 0;

	if (!context || !attr)
		return sv_null_errno(EINVAL);
	/* Unknown comp_mask bits are invalid.  IBV_CQ_INIT_ATTR_MASK_PD
	 * names a parent domain of this context, whose allocator gives the
	 * ring; a plain PD there is EINVAL, as mlx5 answers. */
	if (attr->comp_mask &
	    ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		return sv_null_errno(EINVAL);
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		if (!attr->parent_domain ||
		    attr->parent_domain->context != context ||
		    !to_sv_pd(attr->parent_domain)->parent_of)
			return sv_null_errno(EINVAL);
		parent = to_sv_pd(attr->parent_domain);
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) {
		if (attr->flags & ~SV_CQ_CREATE_FLAGS)
			return sv_null_errno(EINVAL);
		flags = attr->flags;
	}
	/* A field we cannot fill is not supported (rdma-core providers). */
	if (attr->wc_flags & ~(uint64_t)SV_CQ_WC_FLAGS)
		return sv_null_errno(EOPNOTSUPP);
	/* cqe is unsigned here: anything above INT_MAX is out of range. */
	if (attr->cqe > (uint32_t)SV_MAX_CQE)
		return sv_null_errno(EINVAL);
	cq = sv_cq_new(context, (int)attr->cqe, attr->cq_context, attr->channel,
		       (int)attr->comp_vector,
		       (attr->wc_flags & SV_CQ_TS_FLAGS) != 0, parent);
	if (!cq)
		return NULL;
	cq->wc_flags = attr->wc_flags;
	cq->create_flags = flags;
	cq_ex_install(cq, attr->wc_flags);
	return &cq->ex;
}

/* ---- the device clock --------------------------------------------------- */

/* The raw clock behind completion timestamps: CLOCK_MONOTONIC.  With one
 * tick per nanosecond, the timespec is the tick count itself. */
int sv_query_rt_values(struct ibv_context *context,
		       struct ibv_values_ex *values)
{
	uint32_t asked;

	if (!values)
		return EINVAL;
	asked = values->comp_mask;
	values->comp_mask = 0;
	if (asked & IBV_VALUES_MASK_RAW_CLOCK) {
		if (clock_gettime(CLOCK_MONOTONIC, &values->raw_clock))
			return errno;
		values->comp_mask |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	return 0;
}
