/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Extended QPs: ibv_create_qp_ex (verbs_context.create_qp_ex),
 * ibv_qp_to_qp_ex, and the ibv_wr_* work request API whose inline
 * functions in verbs.h call the function pointers of struct ibv_qp_ex.
 *
 * The wr_* API is built on the QP's ordinary post path, without touching
 * the engine: between wr_start and wr_complete each builder appends a
 * struct ibv_send_wr to a per-QP batch (with copies of the gather lists
 * and inline data in the batch's own storage, so the caller's buffers may
 * be reused at once, as man ibv_wr_post promises for inline data);
 * wr_complete links the batch into a chain and hands it to
 * context->ops.post_send, which validates and enqueues as for
 * ibv_post_send.
 *
 * man ibv_wr_post: "if a failure is detected ... ibv_wr_complete() will
 * return failure and the entire posting will be aborted."  So the batch
 * is checked before anything is posted: each builder and setter checks
 * its own arguments against the QP (operation asked for at creation, SGE
 * count, inline size, address for UD, result buffer of atomics, message
 * size), wr_complete checks the QP state and that the send queue has room
 * for the whole batch (the engine only ever frees slots, and other posts
 * may not enter the critical region).  post_send's own checks then cannot
 * fail on a WR that passed ours; if they ever do, the WRs before the bad
 * one are posted, as with ibv_post_send, and its error is returned.
 *
 * Builders and setters return nothing (by the API's design); the first
 * error of a batch is kept and returned by wr_complete.  Calls outside a
 * wr_start/wr_complete region of the calling thread are ignored.
 */
#include "verbs/verbs.h"

#include <stdlib.h>
#include <string.h>

#include "core/xrc.h"
#include "engine/engine.h"
#include "proto/addr.h"
#include "proto/wr.h"
#include "util/lockorder.h"

/* One WR of a batch.  Its gather list lives in the batch's sges[] (from
 * sge_first) and, for inline data, its bytes in inl[]: pointers are set
 * at wr_complete, since both arrays may move as they grow. */
struct sv_wr_ent {
	struct ibv_send_wr wr;
	uint32_t sge_first;
	bool data_set; /* a DATA setter was called */
	bool inl; /* sges[sge_first].addr is an offset into inl[] */
	bool ud_set; /* wr_set_ud_addr was called */
	bool xrc_set; /* wr_set_xrc_srqn was called */
};

struct sv_wr_batch {
	/* The critical region of man ibv_wr_post (CONCURRENCY): held from
	 * wr_start to wr_complete/wr_abort.  owner is the thread inside,
	 * 0 when none; it is only ever equal to pthread_self() for the
	 * thread holding the lock. */
	pthread_mutex_t lock;
	_Atomic unsigned long owner;
	uint64_t ops; /* send_ops_flags given at creation */
	int err; /* first error of the batch */
	uint32_t n; /* WRs built */
	uint32_t max; /* at most the send queue's size */
	struct sv_wr_ent *wrs;
	struct ibv_sge *sges;
	uint32_t nsge, sge_cap;
	uint8_t *inl;
	size_t ninl, inl_cap;
};

static inline struct sv_qp *qpx_to_qp(struct ibv_qp_ex *qpx)
{
	return sv_container_of(qpx, struct sv_qp, qpx);
}

static inline unsigned long self_id(void)
{
	return (unsigned long)pthread_self();
}

/* The batch of the calling thread, or NULL outside its region. */
static struct sv_wr_batch *batch_of(struct ibv_qp_ex *qpx)
{
	struct sv_wr_batch *b = qpx_to_qp(qpx)->wrx;

	if (atomic_load_explicit(&b->owner, memory_order_relaxed) != self_id())
		return NULL;
	return b;
}

static void batch_fail(struct sv_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

static void batch_reset(struct sv_wr_batch *b)
{
	b->err = 0;
	b->n = 0;
	b->nsge = 0;
	b->ninl = 0;
}

/* ---- builders ----------------------------------------------------------- */

/* Start a WR for an operation the QP was created for (send_ops_flags). */
static struct sv_wr_ent *wr_begin(struct ibv_qp_ex *qpx, uint64_t op_flag,
				  enum ibv_wr_opcode opcode)
{
	struct sv_wr_batch *b = batch_of(qpx);
	struct sv_wr_ent *e;

	if (!b || b->err)
		return NULL;
	if (!(b->ops & op_flag)) {
		batch_fail(b, EINVAL);
		return NULL;
	}
	if (b->n == b->max) {
		/* More WRs than the send queue can ever hold. */
		batch_fail(b, ENOMEM);
		return NULL;
	}
	e = &b->wrs[b->n++];
	memset(e, 0, sizeof(*e));
	e->wr.wr_id = qpx->wr_id;
	e->wr.opcode = opcode;
	/* Inline is chosen by the setter (wr_set_inline_data*), not by a
	 * flag that would make a gather list be read as data. */
	e->wr.send_flags = qpx->wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	return e;
}

static void sv_wr_send(struct ibv_qp_ex *qpx)
{
	wr_begin(qpx, IBV_QP_EX_WITH_SEND, IBV_WR_SEND);
}

static void sv_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct sv_wr_ent *e = wr_begin(qpx, IBV_QP_EX_WITH_SEND_WITH_IMM,
				       IBV_WR_SEND_WITH_IMM);

	if (e)
		e->wr.imm_data = imm_data;
}

static void sv_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct sv_wr_ent *e = wr_begin(qpx, IBV_QP_EX_WITH_SEND_WITH_INV,
				       IBV_WR_SEND_WITH_INV);

	if (e)
		e->wr.invalidate_rkey = invalidate_rkey;
}

static void sv_wr_rdma(struct ibv_qp_ex *qpx, uint64_t flag,
		       enum ibv_wr_opcode opcode, uint32_t rkey,
		       uint64_t remote_addr, __be32 imm_data)
{
	struct sv_wr_ent *e = wr_begin(qpx, flag, opcode);

	if (!e)
		return;
	e->wr.wr.rdma.rkey = rkey;
	e->wr.wr.rdma.remote_addr = remote_addr;
	e->wr.imm_data = imm_data;
}

static void sv_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t remote_addr)
{
	sv_wr_rdma(qpx, IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE, rkey,
		   remote_addr, 0);
}

static void sv_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr, __be32 imm_data)
{
	sv_wr_rdma(qpx, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
		   IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm_data);
}

static void sv_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			    uint64_t remote_addr)
{
	sv_wr_rdma(qpx, IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ, rkey,
		   remote_addr, 0);
}

static void sv_wr_atomic(struct ibv_qp_ex *qpx, uint64_t flag,
			 enum ibv_wr_opcode opcode, uint32_t rkey,
			 uint64_t remote_addr, uint64_t compare_add,
			 uint64_t swap)
{
	struct sv_wr_ent *e = wr_begin(qpx, flag, opcode);

	if (!e)
		return;
	e->wr.wr.atomic.rkey = rkey;
	e->wr.wr.atomic.remote_addr = remote_addr;
	e->wr.wr.atomic.compare_add = compare_add;
	e->wr.wr.atomic.swap = swap;
}

static void sv_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
				 uint64_t remote_addr, uint64_t compare,
				 uint64_t swap)
{
	sv_wr_atomic(qpx, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
		     IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare,
		     swap);
}

static void sv_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				   uint64_t remote_addr, uint64_t add)
{
	sv_wr_atomic(qpx, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
		     IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

static void sv_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct sv_wr_ent *e =
		wr_begin(qpx, IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV);

	if (e)
		e->wr.invalidate_rkey = invalidate_rkey;
}

static void sv_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			  uint32_t rkey,
			  const struct ibv_mw_bind_info *bind_info)
{
	struct sv_wr_ent *e =
		wr_begin(qpx, IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW);

	if (!e)
		return;
	if (!mw || !bind_info) {
		batch_fail(qpx_to_qp(qpx)->wrx, EINVAL);
		return;
	}
	e->wr.bind_mw.mw = mw;
	e->wr.bind_mw.rkey = rkey;
	e->wr.bind_mw.bind_info = *bind_info;
}

/* TCP segmentation offload is not offered: creation refuses its flag,
 * and a call is an error of the batch. */
static void sv_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
			   uint16_t mss)
{
	struct sv_wr_batch *b = batch_of(qpx);

	if (b)
		batch_fail(b, EOPNOTSUPP);
}

static void sv_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				  size_t length);

/* IBA 1.5 ATOMIC WRITE: the 8 bytes at atomic_wr are copied now, as
 * inline data (every send WQE has room for 8, verbs/qp.c), so the WR
 * takes no data setter after it. */
static void sv_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t remote_addr, const void *atomic_wr)
{
	struct sv_wr_ent *e =
		wr_begin(qpx, IBV_QP_EX_WITH_ATOMIC_WRITE, IBV_WR_ATOMIC_WRITE);

	if (!e)
		return;
	if (!atomic_wr) {
		batch_fail(batch_of(qpx), EINVAL);
		return;
	}
	e->wr.wr.rdma.rkey = rkey;
	e->wr.wr.rdma.remote_addr = remote_addr;
	sv_wr_set_inline_data(qpx, (void *)atomic_wr, 8);
}

/* ---- setters ------------------------------------------------------------ */

/* The WR a setter applies to: the last one built. */
static struct sv_wr_ent *wr_last(struct sv_wr_batch *b)
{
	if (!b || b->err)
		return NULL;
	if (!b->n) {
		batch_fail(b, EINVAL); /* a setter before any builder */
		return NULL;
	}
	return &b->wrs[b->n - 1];
}

/* A DATA setter may be called once per WR, and only for operations that
 * move data (not LOCAL_INV or BIND_MW). */
static struct sv_wr_ent *data_target(struct sv_wr_batch *b)
{
	struct sv_wr_ent *e = wr_last(b);

	if (!e)
		return NULL;
	if (e->data_set || e->wr.opcode == IBV_WR_LOCAL_INV ||
	    e->wr.opcode == IBV_WR_BIND_MW) {
		batch_fail(b, EINVAL);
		return NULL;
	}
	e->data_set = true;
	return e;
}

static int sges_reserve(struct sv_wr_batch *b, size_t more)
{
	size_t cap = b->sge_cap ? b->sge_cap : 16;
	struct ibv_sge *n;

	if (b->nsge + more <= b->sge_cap)
		return 0;
	while (cap < b->nsge + more)
		cap *= 2;
	n = realloc(b->sges, cap * sizeof(*n));
	if (!n)
		return ENOMEM;
	b->sges = n;
	b->sge_cap = (uint32_t)cap;
	return 0;
}

static void sv_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			       const struct ibv_sge *sg_list)
{
	struct sv_wr_batch *b = batch_of(qpx);
	struct sv_qp *qp = qpx_to_qp(qpx);
	struct sv_wr_ent *e = data_target(b);
	uint64_t len = 0;
	size_t i;
	int err;

	if (!e)
		return;
	if (num_sge > qp->cap.max_send_sge || (num_sge && !sg_list)) {
		batch_fail(b, EINVAL);
		return;
	}
	for (i = 0; i < num_sge; i++)
		len += sg_list[i].length;
	/* The largest message of the port (max_msg_sz). */
	if (len > SV_MAX_MSG_SIZE) {
		batch_fail(b, EINVAL);
		return;
	}
	/* An atomic's result lands in its one SGE: 8 bytes must fit. */
	if (sv_wr_is(e->wr.opcode, SV_WR_ATOMIC) &&
	    (num_sge != 1 || sg_list[0].length < 8)) {
		batch_fail(b, EINVAL);
		return;
	}
	err = sges_reserve(b, num_sge);
	if (err) {
		batch_fail(b, err);
		return;
	}
	e->sge_first = b->nsge;
	e->wr.num_sge = (int)num_sge;
	if (num_sge)
		memcpy(&b->sges[b->nsge], sg_list, num_sge * sizeof(*sg_list));
	b->nsge += (uint32_t)num_sge;
}

static void sv_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
			  uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	sv_wr_set_sge_list(qpx, 1, &sge);
}

static void sv_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				       const struct ibv_data_buf *buf_list)
{
	struct sv_wr_batch *b = batch_of(qpx);
	struct sv_qp *qp = qpx_to_qp(qpx);
	struct sv_wr_ent *e = data_target(b);
	size_t len = 0, i;
	uint8_t *dst;
	int err;

	if (!e)
		return;
	/* man ibv_wr_post: inline is valid only for SEND and RDMA_WRITE
	 * (a READ or an atomic needs a place for what comes back). */
	if (!sv_wr_is(e->wr.opcode, SV_WR_INLINE_OK) ||
	    (num_buf && !buf_list)) {
		batch_fail(b, EINVAL);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		len += buf_list[i].length;
		if (len > qp->cap.max_inline_data) {
			batch_fail(b, EINVAL);
			return;
		}
	}
	e->wr.send_flags |= IBV_SEND_INLINE;
	if (!len)
		return; /* a zero-length message: no SGE at all */
	if (b->ninl + len > b->inl_cap) {
		size_t cap = b->inl_cap ? b->inl_cap : 256;
		uint8_t *n;

		while (cap < b->ninl + len)
			cap *= 2;
		n = realloc(b->inl, cap);
		if (!n) {
			batch_fail(b, ENOMEM);
			return;
		}
		b->inl = n;
		b->inl_cap = cap;
	}
	err = sges_reserve(b, 1);
	if (err) {
		batch_fail(b, err);
		return;
	}
	/* The bytes are copied now: the caller may reuse its buffers as
	 * soon as the setter returns.  The lists are concatenated into one
	 * SGE, so any number of buffers fits the QP's max_send_sge. */
	dst = b->inl + b->ninl;
	for (i = 0; i < num_buf; i++) {
		memcpy(dst, buf_list[i].addr, buf_list[i].length);
		dst += buf_list[i].length;
	}
	e->inl = true;
	e->sge_first = b->nsge;
	e->wr.num_sge = 1;
	b->sges[b->nsge++] =
		(struct ibv_sge){ .addr = b->ninl, .length = (uint32_t)len };
	b->ninl += len;
}

static void sv_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				  size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	sv_wr_set_inline_data_list(qpx, 1, &buf);
}

static void sv_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			      uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct sv_wr_batch *b = batch_of(qpx);
	struct sv_qp *qp = qpx_to_qp(qpx);
	struct sv_wr_ent *e = wr_last(b);

	if (!e)
		return;
	/* Only UD QPs address each WR; the AH must be of this context, and
	 * QPNs are 24 bits. */
	if (qp->type != IBV_QPT_UD || !ah ||
	    ah->context != qpx->qp_base.context || remote_qpn > 0xffffff) {
		batch_fail(b, EINVAL);
		return;
	}
	e->wr.wr.ud.ah = ah;
	e->wr.wr.ud.remote_qpn = remote_qpn;
	e->wr.wr.ud.remote_qkey = remote_qkey;
	e->ud_set = true;
}

/* The XRC SRQ an XRC_SEND WR goes to (24 bits, as in the XRCETH). */
static void sv_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct sv_wr_batch *b = batch_of(qpx);
	struct sv_wr_ent *e = wr_last(b);

	if (!e)
		return;
	if (qpx_to_qp(qpx)->type != IBV_QPT_XRC_SEND ||
	    remote_srqn > 0xffffff) {
		batch_fail(b, EINVAL);
		return;
	}
	e->wr.qp_type.xrc.remote_srqn = remote_srqn;
	e->xrc_set = true;
}

/* ---- the critical region ------------------------------------------------ */

static void sv_wr_start(struct ibv_qp_ex *qpx)
{
	struct sv_wr_batch *b = qpx_to_qp(qpx)->wrx;

	/* An error-checking mutex: a second wr_start by the thread already
	 * inside fails the open batch instead of deadlocking. */
	if (sv_mutex_lock_errcheck(&b->lock, SV_LOCK_WR_BATCH) == EDEADLK) {
		batch_fail(b, EINVAL);
		return;
	}
	batch_reset(b);
	atomic_store_explicit(&b->owner, self_id(), memory_order_relaxed);
}

static void batch_end(struct sv_wr_batch *b)
{
	batch_reset(b);
	atomic_store_explicit(&b->owner, 0, memory_order_relaxed);
	sv_mutex_unlock(&b->lock);
}

/* Every WR of the batch must be postable before any is posted. */
static int batch_check(struct sv_qp *qp, struct sv_wr_batch *b)
{
	uint32_t i;

	if (b->err)
		return b->err;
	for (i = 0; i < b->n; i++) {
		const struct sv_wr_ent *e = &b->wrs[i];

		/* UD WRs need their destination (man ibv_wr_post: the QP
		 * setter is mandatory), atomics their result buffer. */
		if (qp->type == IBV_QPT_UD && !e->ud_set)
			return EINVAL;
		if (qp->type == IBV_QPT_XRC_SEND && !e->xrc_set)
			return EINVAL;
		if (sv_wr_is(e->wr.opcode, SV_WR_ATOMIC) && !e->data_set)
			return EINVAL;
	}
	/* Sends are refused before RTS (man ibv_post_send); SQD/ERR accept
	 * them.  post_send checks again, under its lock. */
	switch (sv_engine_qp_state(qp)) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		return EINVAL;
	default:
		break;
	}
	/* Room for the whole batch; the engine only frees slots meanwhile. */
	if (b->n > qp->sq.max_wr - sv_wq_used(&qp->sq))
		return ENOMEM;
	return 0;
}

static int sv_wr_complete(struct ibv_qp_ex *qpx)
{
	struct sv_qp *qp = qpx_to_qp(qpx);
	struct sv_wr_batch *b = batch_of(qpx);
	struct ibv_send_wr *bad = NULL;
	uint32_t i;
	int err;

	if (!b)
		return EINVAL; /* no wr_start by this thread */
	err = batch_check(qp, b);
	if (err || !b->n)
		goto out;
	for (i = 0; i < b->n; i++) {
		struct sv_wr_ent *e = &b->wrs[i];

		e->wr.next = i + 1 < b->n ? &b->wrs[i + 1].wr : NULL;
		e->wr.sg_list = e->wr.num_sge ? &b->sges[e->sge_first] : NULL;
		if (e->inl)
			e->wr.sg_list[0].addr += (uintptr_t)b->inl;
	}
	err = qpx->qp_base.context->ops.post_send(&qpx->qp_base, &b->wrs[0].wr,
						  &bad);
out:
	batch_end(b);
	return err;
}

static void sv_wr_abort(struct ibv_qp_ex *qpx)
{
	struct sv_wr_batch *b = batch_of(qpx);

	if (b)
		batch_end(b);
}

/* ---- creation ----------------------------------------------------------- */

#define SV_QP_INIT_ATTR_KNOWN                                              \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |                     \
	 IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER | \
	 IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |           \
	 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

/* The creation flags the kernel knows (others are EINVAL); softverbs
 * honours one: a source QPN of 1 on UD (the GSI QP, standard mode only).
 * Multicast loopback blocking, FCS scatter, VLAN stripping and PCI padding
 * have no meaning here. */
#define SV_QP_CREATE_FLAGS_KNOWN                                         \
	(IBV_QP_CREATE_BLOCK_SELF_MCAST_LB | IBV_QP_CREATE_SCATTER_FCS | \
	 IBV_QP_CREATE_CVLAN_STRIPPING | IBV_QP_CREATE_SOURCE_QPN |      \
	 IBV_QP_CREATE_PCI_WRITE_END_PADDING)

/* The operations a QP of this type can be asked for: the transport's
 * (IBA 9.7: READ and atomics are RC only, RDMA WRITE not on UD), and of
 * those what the device offers, so that the answer follows the device
 * attributes (atomic_cap, memory management extensions, type 2 windows)
 * rather than a second list. */
static uint64_t ops_supported(enum ibv_qp_type type)
{
	struct ibv_device_attr da;
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

	sv_device_attr(&da);
	if (type == IBV_QPT_XRC_RECV)
		return 0; /* a target has no send queue */
	if (type == IBV_QPT_UD)
		return ops;
	ops |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	if (da.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS)
		ops |= IBV_QP_EX_WITH_LOCAL_INV;
	if (da.device_cap_flags &
	    (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B))
		ops |= IBV_QP_EX_WITH_BIND_MW;
	if (type != IBV_QPT_RC && type != IBV_QPT_XRC_SEND)
		return ops;
	/* IBA 9.2.1: SEND with Invalidate exists on RC (and XRC) only. */
	if (da.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS)
		ops |= IBV_QP_EX_WITH_SEND_WITH_INV;
	ops |= IBV_QP_EX_WITH_RDMA_READ;
	if (da.atomic_cap != IBV_ATOMIC_NONE)
		ops |= IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	/* IBA 1.5 ATOMIC WRITE: RC only (its XRC twin is not sent). */
	if (type == IBV_QPT_RC)
		ops |= IBV_QP_EX_WITH_ATOMIC_WRITE;
	return ops;
}

static int check_create_ex(struct ibv_context *context,
			   const struct ibv_qp_init_attr_ex *a)
{
	uint32_t mask = a->comp_mask;

	if (mask & ~(uint32_t)SV_QP_INIT_ATTR_KNOWN)
		return EINVAL;
	/* An XRC target takes its domain, and nothing else, from the
	 * attributes (rdma-core); every other type its PD. */
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		if (!(mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd ||
		    a->xrcd->context != context)
			return EINVAL;
	} else if (!(mask & IBV_QP_INIT_ATTR_PD) || !a->pd ||
		   a->pd->context != context) {
		return EINVAL;
	}
	/* RSS indirection tables and TSO belong to raw packet QPs. */
	if (mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
		    IBV_QP_INIT_ATTR_MAX_TSO_HEADER))
		return EOPNOTSUPP;
	if (mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) {
		if (a->create_flags & ~(uint32_t)SV_QP_CREATE_FLAGS_KNOWN)
			return EINVAL;
		/* A source QPN of 1 on a UD QP: librdmacm's GSI QP in
		 * standard mode (sv_create_qp_ex); nothing else. */
		if (a->create_flags == IBV_QP_CREATE_SOURCE_QPN &&
		    a->qp_type == IBV_QPT_UD && a->source_qpn == SV_QPN_GSI)
			return 0;
		if (a->create_flags)
			return EOPNOTSUPP;
	}
	if (mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		switch (a->qp_type) {
		case IBV_QPT_RC:
		case IBV_QPT_UC:
		case IBV_QPT_UD:
		case IBV_QPT_XRC_SEND:
		case IBV_QPT_XRC_RECV:
			break;
		default:
			return EOPNOTSUPP; /* ibv_create_qp's answer follows */
		}
		/* man ibv_wr_post: creation fails if the QP does not
		 * support every requested work request type. */
		if (a->send_ops_flags & ~ops_supported(a->qp_type))
			return EOPNOTSUPP;
	}
	return 0;
}

static struct sv_wr_batch *batch_new(struct sv_qp *qp, uint64_t ops)
{
	struct sv_wr_batch *b = calloc(1, sizeof(*b));
	pthread_mutexattr_t ma;

	if (!b)
		return NULL;
	b->max = qp->sq.max_wr;
	b->wrs = calloc(b->max ? b->max : 1, sizeof(*b->wrs));
	if (!b->wrs) {
		free(b);
		return NULL;
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&b->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	atomic_init(&b->owner, 0);
	b->ops = ops;
	return b;
}

void sv_qp_wr_free(struct sv_qp *qp)
{
	struct sv_wr_batch *b = qp->wrx;

	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b->wrs);
	free(b->sges);
	free(b->inl);
	free(b);
	qp->wrx = NULL;
}

/* Every pointer is set whatever the QP type, so that a builder the QP
 * cannot carry fails the batch (wr_complete returns EINVAL) instead of
 * jumping through NULL. */
/* IBV_QP_EX_WITH_FLUSH is never granted (ops_supported), so a caller
 * has no business calling ibv_wr_flush; one that does gets its batch
 * failed, EOPNOTSUPP, rather than a jump through garbage. */
static void sv_wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
			uint64_t remote_addr, size_t len, uint8_t type,
			uint8_t level)
{
	struct sv_wr_batch *b = batch_of(qpx);

	if (b)
		batch_fail(b, EOPNOTSUPP);
}

/* Where rdma-core 45+'s verbs.h puts wr_flush: right after the 352 bytes
 * of rdma-core 44's struct ibv_qp_ex.  Written by offset, so that the
 * same code fills the member with headers that have it and the room
 * after the struct (struct sv_qp) with headers that do not. */
#define SV_QP_EX_WR_FLUSH_OFF 352
_Static_assert(sizeof(struct ibv_qp_ex) == SV_QP_EX_WR_FLUSH_OFF ||
		       sizeof(struct ibv_qp_ex) == SV_QP_EX_ROOM,
	       "struct ibv_qp_ex: a layout this file does not know");

static void install_wr_ops(struct sv_qp *qp)
{
	struct ibv_qp_ex *x = &qp->qpx;
	void (*flush)(struct ibv_qp_ex *, uint32_t, uint64_t, size_t, uint8_t,
		      uint8_t) = sv_wr_flush;

	memcpy(qp->qpx_room + SV_QP_EX_WR_FLUSH_OFF, &flush, sizeof(flush));
	x->wr_start = sv_wr_start;
	x->wr_complete = sv_wr_complete;
	x->wr_abort = sv_wr_abort;
	x->wr_send = sv_wr_send;
	x->wr_send_imm = sv_wr_send_imm;
	x->wr_send_inv = sv_wr_send_inv;
	x->wr_send_tso = sv_wr_send_tso;
	x->wr_rdma_write = sv_wr_rdma_write;
	x->wr_rdma_write_imm = sv_wr_rdma_write_imm;
	x->wr_rdma_read = sv_wr_rdma_read;
	x->wr_atomic_cmp_swp = sv_wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = sv_wr_atomic_fetch_add;
	x->wr_atomic_write = sv_wr_atomic_write;
	x->wr_local_inv = sv_wr_local_inv;
	x->wr_bind_mw = sv_wr_bind_mw;
	x->wr_set_sge = sv_wr_set_sge;
	x->wr_set_sge_list = sv_wr_set_sge_list;
	x->wr_set_inline_data = sv_wr_set_inline_data;
	x->wr_set_inline_data_list = sv_wr_set_inline_data_list;
	x->wr_set_ud_addr = sv_wr_set_ud_addr;
	x->wr_set_xrc_srqn = sv_wr_set_xrc_srqn;
}

struct ibv_qp *sv_create_qp_ex(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *a)
{
	struct ibv_qp *ibqp;
	struct sv_qp *qp;
	int err;

	if (!context || !a)
		return sv_null_errno(EINVAL);
	err = check_create_ex(context, a);
	if (err)
		return sv_null_errno(err);
	/* struct ibv_qp_init_attr is the prefix of the _ex one (the header's
	 * own ibv_create_qp_ex relies on it): one creation path, which also
	 * writes the granted caps back into a->cap. */
	ibqp = sv_qp_create(
		context, a->qp_type == IBV_QPT_XRC_RECV ? NULL : a->pd,
		(struct ibv_qp_init_attr *)a,
		a->qp_type == IBV_QPT_XRC_RECV ? to_sv_xrcd(a->xrcd) : NULL);
	if (!ibqp)
		return NULL;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    (a->create_flags & IBV_QP_CREATE_SOURCE_QPN)) {
		err = sv_engine_qp_gsi(to_sv_qp(ibqp));
		if (err) {
			ibv_destroy_qp(ibqp);
			return sv_null_errno(err);
		}
	}
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return ibqp;
	qp = to_sv_qp(ibqp);
	qp->wrx = batch_new(qp, a->send_ops_flags);
	if (!qp->wrx) {
		ibv_destroy_qp(ibqp);
		return sv_null_errno(ENOMEM);
	}
	install_wr_ops(qp);
	return ibqp;
}

/* rdma-core: a QP has an ibv_qp_ex view when it was created with
 * send_ops_flags; NULL otherwise. */
SV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct sv_qp *qp;

	if (!ibqp)
		return sv_null_errno(EINVAL);
	qp = to_sv_qp(ibqp);
	if (!qp->wrx)
		return sv_null_errno(EOPNOTSUPP);
	return &qp->qpx;
}
