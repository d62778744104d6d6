/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets: the stream data path (rsend/rrecv and friends, rshutdown's
 * end of stream, riomap/riounmap/riowrite).  The protocol is described in
 * rs.h: RDMA WRITE WITH IMMEDIATE into the peer's receive ring, receive
 * credits and freed ring space reported back with zero-length messages.
 */
#include "cm/cm.h"
#include "cm/rs.h"

#include <endian.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RS_WR_RECV (1ull << 63)
#define RS_WR_NOREL (1ull << 62) /* send WR that holds no send buffer */

static uint32_t clamp32(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* ---- buffers and connection data ---------------------------------------- */

int rs_stream_alloc_bufs(struct rsocket *rs)
{
	size_t tab;

	rs->sbuf_size = clamp32(rs->sbuf_size, 2 * RS_SNDLOWAT, RS_MAX_BUF);
	rs->rbuf_size = clamp32(rs->rbuf_size, RS_MIN_BUF, RS_MAX_BUF);
	if (rs->iomap_size > RS_MAX_IOMAP)
		rs->iomap_size = RS_MAX_IOMAP;
	rs->sbuf = malloc(rs->sbuf_size);
	if (!rs->sbuf)
		return ENOMEM;
	rs->smr = ibv_reg_mr(rs->pd, rs->sbuf, rs->sbuf_size,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!rs->smr)
		return errno;
	tab = (size_t)rs->iomap_size * sizeof(struct rs_iomap_ent);
	rs->rmem_len = rs->rbuf_size + tab;
	rs->rmem = calloc(1, rs->rmem_len);
	if (!rs->rmem)
		return ENOMEM;
	rs->iomap = (struct rs_iomap_ent *)(rs->rmem + rs->rbuf_size);
	rs->rmr = ibv_reg_mr(rs->pd, rs->rmem, rs->rmem_len,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rs->rmr)
		return errno;
	return 0;
}

void rs_stream_free_bufs(struct rsocket *rs)
{
	struct list_node *n;

	while ((n = list_first(&rs->maps))) {
		struct rs_iomap_local *m =
			list_entry(n, struct rs_iomap_local, node);

		list_del(n);
		ibv_dereg_mr(m->mr);
		free(m);
	}
	if (rs->id && rs->id->qp)
		rdma_destroy_qp(rs->id); /* and the CQ and channel */
	rs->qp = NULL;
	rs->cq = NULL;
	rs->cc = NULL;
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	rs->smr = rs->rmr = NULL;
	free(rs->sbuf);
	free(rs->rmem);
	rs->sbuf = rs->rmem = NULL;
}

void rs_stream_fill_conn(struct rsocket *rs, struct rs_conn_data *cd)
{
	memset(cd, 0, sizeof(*cd));
	cd->version = RS_VERSION;
	cd->credits = htobe16((uint16_t)rs->r_posted);
	cd->iomap_count = htobe16((uint16_t)rs->iomap_size);
	cd->rbuf_size = htobe32(rs->rbuf_size);
	cd->rkey = htobe32(rs->rmr->rkey);
	cd->rbuf_addr = htobe64((uintptr_t)rs->rmem);
	cd->iomap_addr = htobe64((uintptr_t)rs->iomap);
}

int rs_stream_set_peer(struct rsocket *rs, const void *pdata, uint8_t len)
{
	struct rs_conn_data cd;

	if (!pdata || len < sizeof(cd))
		return ECONNREFUSED;
	memcpy(&cd, pdata, sizeof(cd));
	if (cd.version != RS_VERSION)
		return ECONNREFUSED;
	rs->p_rbuf_size = be32toh(cd.rbuf_size);
	rs->p_rkey = be32toh(cd.rkey);
	rs->p_rbuf_addr = be64toh(cd.rbuf_addr);
	rs->p_iomap_addr = be64toh(cd.iomap_addr);
	rs->p_iomap_count = be16toh(cd.iomap_count);
	rs->s_posted = be16toh(cd.credits);
	if (rs->p_rbuf_size < RS_MIN_BUF || rs->p_rbuf_size > RS_MAX_BUF ||
	    !rs->s_posted)
		return ECONNREFUSED;
	return 0;
}

static int rs_post_recv(struct rsocket *rs)
{
	struct ibv_recv_wr wr, *bad;

	/* RDMA WRITE WITH IMMEDIATE places no data in the WQE: no SGE. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = RS_WR_RECV;
	if (ibv_post_recv(rs->qp, &wr, &bad))
		return errno ? errno : EIO;
	rs->r_posted++;
	return 0;
}

int rs_stream_post_recvs(struct rsocket *rs)
{
	uint32_t i;
	int ret;

	for (i = 0; i < rs->rq_size; i++) {
		ret = rs_post_recv(rs);
		if (ret)
			return ret;
	}
	rs->r_posted_rep = rs->r_posted;
	return 0;
}

/* ---- sending ----------------------------------------------------------------- */

static uint32_t rs_credits(const struct rsocket *rs)
{
	return rs->s_posted - rs->s_msgs;
}

static bool rs_sq_room(const struct rsocket *rs, uint32_t need)
{
	return rs->sq_outstanding + need <= rs->sq_size;
}

/* Post one message.  sge may be NULL (len 0).  rel: send buffer bytes
 * the WR holds until it completes. */
static int rs_post_write(struct rsocket *rs, enum ibv_wr_opcode opc,
			 uint32_t imm, struct ibv_sge *sge, int nsge,
			 uint64_t raddr, uint32_t rkey, uint32_t rel,
			 unsigned int flags)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = rel ? rel : RS_WR_NOREL;
	wr.opcode = opc;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.send_flags = IBV_SEND_SIGNALED | flags;
	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(rs->qp, &wr, &bad))
		return errno ? errno : EIO;
	rs->sq_outstanding++;
	if (opc == IBV_WR_RDMA_WRITE_WITH_IMM)
		rs->s_msgs++;
	return 0;
}

static int rs_post_ctrl(struct rsocket *rs, enum rs_op op, uint32_t val)
{
	return rs_post_write(rs, IBV_WR_RDMA_WRITE_WITH_IMM,
			     ((uint32_t)op << RS_OP_SHIFT) |
				     (val & RS_VAL_MASK),
			     NULL, 0, rs->p_rbuf_addr, rs->p_rkey, 0, 0);
}

static bool rs_can_ctrl(const struct rsocket *rs)
{
	return rs->state != RS_ERROR && !rs->peer_gone && rs->qp &&
	       rs_sq_room(rs, 1) && rs_credits(rs) >= 1;
}

/* Tell the peer about receives reposted and ring space freed, when it may
 * be running short: the receives it believes we have left fall to half
 * the queue, or the ring space it believes free falls under half. */
static void rs_update_credits(struct rsocket *rs)
{
	uint32_t left = rs->r_posted_rep - rs->r_msgs;
	uint64_t unfreed = rs->r_bytes - rs->r_consumed_rep;

	if (rs->r_posted != rs->r_posted_rep && left <= rs->rq_size / 2 &&
	    rs_can_ctrl(rs)) {
		if (!rs_post_ctrl(rs, RS_OP_CREDIT, rs->r_posted))
			rs->r_posted_rep = rs->r_posted;
	}
	if (rs->r_consumed != rs->r_consumed_rep &&
	    rs->rbuf_size - unfreed < rs->rbuf_size / 2 && rs_can_ctrl(rs)) {
		if (!rs_post_ctrl(rs, RS_OP_FREE, (uint32_t)rs->r_consumed))
			rs->r_consumed_rep = rs->r_consumed;
	}
}

/* ---- completions --------------------------------------------------------------- */

static void rs_recv_imm(struct rsocket *rs, uint32_t imm)
{
	uint32_t val = imm & RS_VAL_MASK;

	switch (imm >> RS_OP_SHIFT) {
	case RS_OP_DATA:
		rs->r_bytes += val;
		break;
	case RS_OP_CREDIT:
		rs->s_posted += (val - rs->s_posted) & RS_VAL_MASK;
		break;
	case RS_OP_FREE:
		rs->s_freed += (val - (uint32_t)rs->s_freed) & RS_VAL_MASK;
		break;
	case RS_OP_SHUTDOWN:
		rs->peer_eof = true;
		break;
	default:
		break;
	}
}

void rs_stream_poll_cq(struct rsocket *rs)
{
	struct ibv_wc wc[32];
	bool any = false;
	int n, i;

	if (!rs->cq)
		return;
	while ((n = ibv_poll_cq(rs->cq, 32, wc)) > 0) {
		any = true;
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & RS_WR_RECV) {
				if (wc[i].status != IBV_WC_SUCCESS) {
					/* flushed: the connection is gone */
					rs->peer_gone = true;
					continue;
				}
				rs->r_msgs++;
				/* Data from the peer means it is
				 * established (COMM_EST). */
				if (rs->state == RS_ACCEPTING)
					rs->state = RS_CONNECTED;
				if (wc[i].wc_flags & IBV_WC_WITH_IMM)
					rs_recv_imm(rs,
						    be32toh(wc[i].imm_data));
				if (!rs->peer_gone)
					rs_post_recv(rs);
				continue;
			}
			rs->sq_outstanding--;
			if (!(wc[i].wr_id & RS_WR_NOREL))
				rs->sbuf_tail += (uint32_t)wc[i].wr_id;
			if (wc[i].status != IBV_WC_SUCCESS &&
			    wc[i].status != IBV_WC_WR_FLUSH_ERR &&
			    !rs->disconnected) {
				rs->peer_gone = true;
				if (!rs->err)
					rs->err = ECONNRESET;
			} else if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
				rs->peer_gone = true;
			}
		}
	}
	if (any) {
		rs_update_credits(rs);
		rs_kick(rs);
	}
}

bool rs_stream_readable(struct rsocket *rs)
{
	return rs->r_bytes != rs->r_consumed || rs->peer_eof || rs->peer_gone ||
	       rs->rd_shut || rs->state == RS_ERROR;
}

/* Bytes one data write may carry now (0: must wait). */
static uint32_t rs_send_room(struct rsocket *rs)
{
	uint64_t used = rs->s_bytes - rs->s_freed;
	uint32_t room, wrap, sfree, scont;

	if (!rs_sq_room(rs, 2) || rs_credits(rs) <= RS_CTRL_RESERVE)
		return 0;
	if (used >= rs->p_rbuf_size)
		return 0;
	room = rs->p_rbuf_size - (uint32_t)used;
	wrap = rs->p_rbuf_size - (uint32_t)(rs->s_bytes % rs->p_rbuf_size);
	if (room > wrap)
		room = wrap;
	if (room > RS_MAX_TRANSFER)
		room = RS_MAX_TRANSFER;
	/* Beyond the inline size the data goes through the send buffer:
	 * what is free there, contiguous. */
	if (room > rs->sq_inline) {
		sfree = rs->sbuf_size -
			(uint32_t)(rs->sbuf_head - rs->sbuf_tail);
		scont = rs->sbuf_size -
			(uint32_t)(rs->sbuf_head % rs->sbuf_size);
		if (sfree > scont)
			sfree = scont;
		if (sfree < room)
			room = sfree > rs->sq_inline ? sfree : rs->sq_inline;
	}
	return room;
}

bool rs_stream_writable(struct rsocket *rs)
{
	if (rs->state == RS_ERROR || rs->peer_gone || rs->wr_shut)
		return true; /* a send would not block: it fails */
	if (rs->state != RS_CONNECTED)
		return false;
	return rs_send_room(rs) > 0;
}

/* Write n bytes of the iovec (from off) into the peer's ring. */
static int rs_send_data(struct rsocket *rs, const struct iovec *iov, int iovcnt,
			size_t off, uint32_t n)
{
	uint8_t tmp[1024];
	struct ibv_sge sge;
	uint64_t raddr = rs->p_rbuf_addr + rs->s_bytes % rs->p_rbuf_size;
	uint32_t imm = ((uint32_t)RS_OP_DATA << RS_OP_SHIFT) | n;
	int ret;

	if (n <= rs->sq_inline && n <= sizeof(tmp)) {
		rs_iov_to_buf(tmp, iov, iovcnt, off, n);
		sge.addr = (uintptr_t)tmp;
		sge.length = n;
		sge.lkey = 0;
		ret = rs_post_write(rs, IBV_WR_RDMA_WRITE_WITH_IMM, imm, &sge,
				    1, raddr, rs->p_rkey, 0, IBV_SEND_INLINE);
	} else {
		uint8_t *p = rs->sbuf + rs->sbuf_head % rs->sbuf_size;

		rs_iov_to_buf(p, iov, iovcnt, off, n);
		sge.addr = (uintptr_t)p;
		sge.length = n;
		sge.lkey = rs->smr->lkey;
		ret = rs_post_write(rs, IBV_WR_RDMA_WRITE_WITH_IMM, imm, &sge,
				    1, raddr, rs->p_rkey, n, 0);
		if (!ret)
			rs->sbuf_head += n;
	}
	if (!ret)
		rs->s_bytes += n;
	return ret;
}

/* Make a socket still being connected usable (lock held). */
static int rs_ready(struct rsocket *rs, bool nonblock, bool to_send)
{
	int ret;

	if (rs->state >= RS_RESOLVING_ADDR && rs->state <= RS_CONNECTING) {
		ret = rs_do_connect(rs, nonblock);
		if (ret)
			return ret == EINPROGRESS ? EAGAIN : ret;
	}
	if (rs->state == RS_ERROR && !rs->p_rbuf_size)
		return rs->err ? rs->err : ENOTCONN;
	if (rs->state < RS_RESOLVING_ADDR)
		return ENOTCONN;
	(void)to_send;
	return 0;
}

ssize_t rs_stream_send(struct rsocket *rs, const struct iovec *iov, int iovcnt,
		       int flags)
{
	bool nonblock = rs_nonblocking(rs, flags);
	size_t total = rs_iov_len(iov, iovcnt), sent = 0;
	int ret;

	ret = rs_ready(rs, nonblock, true);
	if (ret)
		return -ret;
	if (rs->iomap_size || !list_empty(&rs->maps))
		rs_stream_send_iomaps(rs);
	while (sent < total) {
		uint32_t room, n;

		rs_stream_poll_cq(rs);
		if (rs->wr_shut)
			return sent ? (ssize_t)sent : -EPIPE;
		if (rs->state == RS_ERROR || rs->peer_gone)
			return sent ? (ssize_t)sent : -ECONNRESET;
		/* The passive side sends once the active one is
		 * established (its RTU, or its first message). */
		room = rs->state == RS_CONNECTED ? rs_send_room(rs) : 0;
		if (!room) {
			if (sent && nonblock)
				break;
			ret = rs_wait(rs, nonblock, -1);
			if (ret)
				return sent ? (ssize_t)sent : -ret;
			continue;
		}
		n = total - sent < room ? (uint32_t)(total - sent) : room;
		ret = rs_send_data(rs, iov, iovcnt, sent, n);
		if (ret)
			return sent ? (ssize_t)sent : -ret;
		sent += n;
	}
	return (ssize_t)sent;
}

/* ---- receiving ----------------------------------------------------------------- */

static size_t rs_copy_out(struct rsocket *rs, const struct iovec *iov,
			  int iovcnt, size_t off, size_t want, bool peek,
			  uint64_t *pos)
{
	uint64_t avail = rs->r_bytes - *pos;
	size_t n = want < avail ? want : (size_t)avail, done = 0;

	while (done < n) {
		uint32_t at = (uint32_t)(*pos % rs->rbuf_size);
		uint32_t k = rs->rbuf_size - at;

		if (k > n - done)
			k = (uint32_t)(n - done);
		rs_buf_to_iov(iov, iovcnt, off + done, rs->rmem + at, k);
		done += k;
		*pos += k;
	}
	if (!peek)
		rs->r_consumed = *pos;
	return n;
}

ssize_t rs_stream_recv(struct rsocket *rs, const struct iovec *iov, int iovcnt,
		       int flags)
{
	bool nonblock = rs_nonblocking(rs, flags);
	bool peek = flags & MSG_PEEK, all = (flags & MSG_WAITALL) && !peek;
	size_t total = rs_iov_len(iov, iovcnt), got = 0;
	uint64_t pos = rs->r_consumed;
	int ret;

	ret = rs_ready(rs, nonblock, false);
	if (ret)
		return -ret;
	if (!total)
		return 0;
	while (got < total) {
		rs_stream_poll_cq(rs);
		if (rs->rd_shut)
			break;
		if (rs->r_bytes != pos) {
			got += rs_copy_out(rs, iov, iovcnt, got, total - got,
					   peek, &pos);
			if (!all)
				break;
			continue;
		}
		/* End of stream: the peer shut down its writing, went
		 * away, or the connection broke: 0 (EOF), as rdma-core. */
		if (rs->peer_eof || rs->peer_gone || rs->state == RS_ERROR)
			break;
		ret = rs_wait(rs, nonblock, -1);
		if (ret) {
			if (got)
				break;
			return -ret;
		}
	}
	if (!peek)
		rs_update_credits(rs);
	return (ssize_t)got;
}

/* ---- shutdown ------------------------------------------------------------------- */

int rs_stream_shutdown(struct rsocket *rs, int how)
{
	uint64_t end = sv_now_ms() + 2000;

	if (how == SHUT_RD || how == SHUT_RDWR)
		rs->rd_shut = true;
	if ((how == SHUT_WR || how == SHUT_RDWR) && !rs->wr_shut) {
		/* The end of stream goes after all data: wait (a little)
		 * for a credit, whatever O_NONBLOCK says, as close(2)
		 * still delivers a FIN. */
		while (!rs->peer_gone && rs->state != RS_ERROR &&
		       !(rs_can_ctrl(rs) && rs->state == RS_CONNECTED) &&
		       sv_now_ms() < end) {
			rs_stream_poll_cq(rs);
			if (rs_can_ctrl(rs) && rs->state == RS_CONNECTED)
				break;
			rs_cm_events(rs);
			sv_mutex_unlock(&rs->lock);
			usleep(1000);
			sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
		}
		if (rs_can_ctrl(rs))
			rs_post_ctrl(rs, RS_OP_SHUTDOWN, 0);
		rs->wr_shut = true;
	}
	if (how == SHUT_RDWR && !rs->disconnected) {
		/* rdma-core disconnects once both directions are shut:
		 * let what we sent complete (it is then in the peer's
		 * memory), then tear the connection down. */
		while (rs->sq_outstanding && !rs->peer_gone &&
		       sv_now_ms() < end) {
			/* A peer that closed first disconnects us: its
			 * DISCONNECTED ends the wait, not the timeout. */
			rs_cm_events(rs);
			rs_stream_poll_cq(rs);
			if (!rs->sq_outstanding)
				break;
			sv_mutex_unlock(&rs->lock);
			usleep(200);
			sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
		}
		rdma_disconnect(rs->id);
		rs->disconnected = true;
	}
	return 0;
}

/* ---- riomap, riounmap, riowrite ---------------------------------------------------- */

/* Write our pending mappings into the peer's table (lock held). */
void rs_stream_send_iomaps(struct rsocket *rs)
{
	struct list_node *n;

	if (rs->state != RS_CONNECTED || !rs->p_iomap_count)
		return;
	rs_list_for_each(&rs->maps, n)
	{
		struct rs_iomap_local *m =
			list_entry(n, struct rs_iomap_local, node);
		struct rs_iomap_ent e;
		struct ibv_sge sge;

		if (m->sent || m->index < 0)
			continue;
		if (!rs_sq_room(rs, 1))
			break;
		e.offset = htole64(m->offset);
		e.addr = htole64((uintptr_t)m->mr->addr);
		e.rkey = htole32(m->mr->rkey);
		e.length = htole32((uint32_t)m->mr->length);
		sge.addr = (uintptr_t)&e;
		sge.length = sizeof(e);
		sge.lkey = 0;
		if (rs_post_write(rs, IBV_WR_RDMA_WRITE, 0, &sge, 1,
				  rs->p_iomap_addr + m->index * sizeof(e),
				  rs->p_rkey, 0, IBV_SEND_INLINE))
			break;
		m->sent = true;
	}
}

/*
 * rsocket(7): "riomap registers an application buffer with the RDMA
 * hardware associated with an rsocket.  The buffer is registered either for
 * local only access (PROT_NONE) or for remote write access (PROT_WRITE).
 * ... If offset is -1, the mapping uses the address of buf as offset."
 * Remote-writable mappings take a slot of the peer's table (its
 * RDMA_IOMAPSIZE); none left is ENOMEM.
 */
SV_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
		       off_t offset)
{
	struct rsocket *rs = rs_lookup(socket);
	struct rs_iomap_local *m;
	struct list_node *n;
	int access = IBV_ACCESS_LOCAL_WRITE;
	uint64_t used = 0;
	int idx = -1, ret = 0;

	if (!rs)
		return sv_cm_err(EBADF);
	if (rs->type != SOCK_STREAM)
		return sv_cm_err(EOPNOTSUPP);
	if (!buf || !len || (prot & ~(PROT_WRITE | PROT_NONE)))
		return sv_cm_err(EINVAL);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (!rs->pd) {
		ret = EINVAL; /* rdma-core: no device (not connected) yet */
		goto out;
	}
	if (prot & PROT_WRITE) {
		access |= IBV_ACCESS_REMOTE_WRITE;
		rs_list_for_each(&rs->maps, n)
		{
			m = list_entry(n, struct rs_iomap_local, node);
			if (m->index >= 0 && m->index < 64)
				used |= 1ull << m->index;
		}
		for (idx = 0; idx < (int)rs->p_iomap_count && idx < 64; idx++)
			if (!(used & (1ull << idx)))
				break;
		if (idx >= (int)rs->p_iomap_count || idx >= 64) {
			ret = ENOMEM;
			goto out;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		ret = ENOMEM;
		goto out;
	}
	m->mr = ibv_reg_mr(rs->pd, buf, len, access);
	if (!m->mr) {
		ret = errno;
		free(m);
		goto out;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	m->offset = (uint64_t)offset;
	m->index = idx;
	list_add_tail(&rs->maps, &m->node);
	rs_stream_send_iomaps(rs);
out:
	sv_mutex_unlock(&rs->lock);
	return ret ? sv_cm_err(ret) : offset;
}

SV_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rsocket *rs = rs_lookup(socket);
	struct list_node *n;
	int ret = EINVAL;

	if (!rs)
		return sv_cm_err(EBADF);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	rs_list_for_each(&rs->maps, n)
	{
		struct rs_iomap_local *m =
			list_entry(n, struct rs_iomap_local, node);

		if (m->mr->addr != buf || m->mr->length != len)
			continue;
		/* Clear the peer's slot so that it cannot write into
		 * memory no longer registered for it. */
		if (m->sent && rs->state == RS_CONNECTED && !rs->peer_gone &&
		    rs_sq_room(rs, 1)) {
			struct rs_iomap_ent e;
			struct ibv_sge sge;

			memset(&e, 0, sizeof(e));
			sge.addr = (uintptr_t)&e;
			sge.length = sizeof(e);
			sge.lkey = 0;
			rs_post_write(rs, IBV_WR_RDMA_WRITE, 0, &sge, 1,
				      rs->p_iomap_addr + m->index * sizeof(e),
				      rs->p_rkey, 0, IBV_SEND_INLINE);
		}
		list_del(&m->node);
		ibv_dereg_mr(m->mr);
		free(m);
		ret = 0;
		break;
	}
	sv_mutex_unlock(&rs->lock);
	return ret ? sv_cm_err(ret) : 0;
}

static const struct rs_iomap_ent *rs_find_iomap(struct rsocket *rs,
						uint64_t off)
{
	uint32_t i;

	for (i = 0; i < rs->iomap_size; i++) {
		const struct rs_iomap_ent *e = &rs->iomap[i];
		uint64_t o = le64toh(e->offset);
		uint32_t l = le32toh(e->length);

		if (l && off >= o && off < o + l)
			return e;
	}
	return NULL;
}

/*
 * rsocket(7): "riowrite allows an application to transfer data over an
 * rsocket directly into a remotely iomapped buffer ... the data transfer
 * is ordered with respect to rsend" -- both go down the same RC queue.
 * Returns the bytes transferred; with nothing transferred, -1 (as a
 * size_t) and errno, as rdma-core.
 */
SV_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
			  off_t offset, int flags)
{
	struct rsocket *rs = rs_lookup(socket);
	bool nonblock;
	size_t done = 0;
	int ret = 0;

	if (!rs) {
		errno = EBADF;
		return (size_t)-1;
	}
	/* rdma-core looks at MSG_DONTWAIT only (riostream passes its
	 * rrecv flags, MSG_WAITALL included). */
	if (rs->type != SOCK_STREAM) {
		errno = EINVAL;
		return (size_t)-1;
	}
	if (!buf && count) {
		errno = EFAULT;
		return (size_t)-1;
	}
	nonblock = rs_nonblocking(rs, flags);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	ret = rs_ready(rs, nonblock, true);
	if (!ret)
		rs_stream_send_iomaps(rs);
	while (!ret && done < count) {
		const struct rs_iomap_ent *e;
		struct ibv_sge sge;
		uint64_t o, addr;
		uint32_t n, room, len;
		const uint8_t *src = (const uint8_t *)buf + done;

		rs_stream_poll_cq(rs);
		if (rs->wr_shut) {
			ret = EPIPE;
			break;
		}
		if (rs->state == RS_ERROR || rs->peer_gone) {
			ret = ECONNRESET;
			break;
		}
		e = rs_find_iomap(rs, (uint64_t)offset + done);
		if (!e) {
			ret = EINVAL; /* no mapping there (rdma-core stops) */
			break;
		}
		o = le64toh(e->offset);
		len = le32toh(e->length);
		addr = le64toh(e->addr) + ((uint64_t)offset + done - o);
		room = len - (uint32_t)((uint64_t)offset + done - o);
		n = count - done < room ? (uint32_t)(count - done) : room;
		if (n > RS_MAX_TRANSFER)
			n = RS_MAX_TRANSFER;
		if (n > rs->sq_inline) {
			uint32_t sfree =
				rs->sbuf_size -
				(uint32_t)(rs->sbuf_head - rs->sbuf_tail);
			uint32_t scont =
				rs->sbuf_size -
				(uint32_t)(rs->sbuf_head % rs->sbuf_size);

			if (sfree > scont)
				sfree = scont;
			if (n > sfree)
				n = sfree;
		}
		if (!n || !rs_sq_room(rs, 2) || rs->state != RS_CONNECTED) {
			ret = rs_wait(rs, nonblock, -1);
			if (ret && done)
				ret = 0, count = done;
			continue;
		}
		if (n <= rs->sq_inline) {
			sge.addr = (uintptr_t)src;
			sge.length = n;
			sge.lkey = 0;
			ret = rs_post_write(rs, IBV_WR_RDMA_WRITE, 0, &sge, 1,
					    addr, le32toh(e->rkey), 0,
					    IBV_SEND_INLINE);
		} else {
			uint8_t *p = rs->sbuf + rs->sbuf_head % rs->sbuf_size;

			memcpy(p, src, n);
			sge.addr = (uintptr_t)p;
			sge.length = n;
			sge.lkey = rs->smr->lkey;
			ret = rs_post_write(rs, IBV_WR_RDMA_WRITE, 0, &sge, 1,
					    addr, le32toh(e->rkey), n, 0);
			if (!ret)
				rs->sbuf_head += n;
		}
		if (!ret)
			done += n;
	}
	sv_mutex_unlock(&rs->lock);
	if (ret && !done) {
		errno = ret;
		return (size_t)-1;
	}
	return done;
}
