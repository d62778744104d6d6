/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * XRC domains, the numbers of XRC SRQs, and a domain's target QPs
 * (IBA Annex A14, man ibv_open_xrcd / ibv_create_srq_ex / ibv_open_qp).
 *
 * A domain groups XRC SRQs and XRC target QPs: a request arriving on a
 * target QP is delivered to the XRC SRQ its XRCETH names, which must be
 * of the same domain.  ibv_open_xrcd with a file descriptor shares one
 * domain among the opens of the same file (keyed by its device and
 * inode); with fd -1 each open is a domain of its own.  Processes of
 * one user that open the same file share the domain: each process holds
 * its own objects, and a target QP that receives a request for an SRQ of
 * another process forwards its receive to that process
 * (engine/forward/xrcfwd.c, docs/windows-xrc.md "Domains and files").
 *
 * Lock contract: xrc_lock (xrc.c) guards domains (opens, users, target
 * QP lists); the SRQ number table has its own rwlock, read by the data
 * path, and SRQ references drain on removal like key references.
 */
#ifndef SV_CORE_XRC_H
#define SV_CORE_XRC_H

#include <sys/types.h>

#include "core/objects.h"

struct sv_xrcd {
	bool by_inode;
	dev_t dev;
	ino_t ino;
	int lockfd; /* a file's: its shared flock (xrc.c join_file), else -1 */
	int opens; /* ibv_xrcd handles on it */
	int users; /* XRC SRQs and target QPs */
	struct list_head tgt_qps; /* struct sv_qp.xrc_node */
	struct list_node node; /* every domain (xrc_lock) */
};

/* What ibv_open_xrcd returns: one per open, all of a file's opens on one
 * domain. */
struct sv_xrcd_handle {
	struct ibv_xrcd ibv;
	struct sv_xrcd *dom;
};

static inline struct sv_xrcd *to_sv_xrcd(struct ibv_xrcd *x)
{
	return sv_container_of(x, struct sv_xrcd_handle, ibv)->dom;
}

/* Open (or create) the domain of fd; fd -1: a new one.  0 or errno
 * (EBADF, EAGAIN: none for this file and no O_CREAT, EINVAL: one exists
 * and O_EXCL, ENOMEM). */
int sv_xrcd_open(int fd, int oflags, struct sv_xrcd **dom_out);
/* Close one open: EBUSY when it is the last and SRQs or QPs remain. */
int sv_xrcd_close(struct sv_xrcd *dom);
/* An XRC SRQ or target QP is created in / removed from the domain. */
void sv_xrcd_use(struct sv_xrcd *dom);
void sv_xrcd_unuse(struct sv_xrcd *dom);

/* Give an XRC SRQ its number and make it findable (0 or ENOMEM). */
int sv_xrc_srq_add(struct sv_srq *srq);
/* Make it unfindable and wait for the packets using it; EBUSY (and still
 * findable) if a target QP holds it in the middle of a message. */
int sv_xrc_srq_remove(struct sv_srq *srq);
/* The SRQ numbered srqn in dom, with a reference, or NULL. */
struct sv_srq *sv_xrc_srq_get(struct sv_xrcd *dom, uint32_t srqn);
void sv_xrc_srq_put(struct sv_srq *srq);

/* An XRC SRQ of a file's domain (dev, ino) numbered srqn, with a
 * reference, or NULL: what another process's target QP names. */
struct sv_srq *sv_xrc_srq_get_shared(dev_t dev, ino_t ino, uint32_t srqn);
/* Whether srqn is a number of this process (its port is one we hold). */
bool sv_xrc_srqn_ours(uint32_t srqn);

/* What serves this process's XRC SRQs to the target QPs of other
 * processes (engine/forward/xrcfwd.c, above core: it registers itself).  start
 * runs when a block of 256 SRQ numbers is made, with the block's port (a
 * handle, or NULL: that block is not served); stop when the block goes,
 * with nothing held. */
struct sv_xrc_server_ops {
	void *(*start)(uint16_t port);
	void (*stop)(void *server);
};
void sv_xrc_set_server(const struct sv_xrc_server_ops *ops);

/* Target QPs of a domain, for ibv_open_qp. */
void sv_xrc_tgt_add(struct sv_qp *qp);
void sv_xrc_tgt_del(struct sv_qp *qp);
/* The target QP numbered qpn in dom with one more open handle, or NULL. */
struct sv_qp *sv_xrc_tgt_open(struct sv_xrcd *dom, uint32_t qpn);
/* One open handle goes; EBUSY from destroying a target QP with handles. */
void sv_xrc_tgt_close(struct sv_qp *real);
int sv_xrc_tgt_busy(struct sv_qp *qp);

#endif
