/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Which process a QP or SRQ was made in.  rdma-core's objects belong to
 * the process that made them: a forked child inherits their memory but
 * not what they stand for (the parent's threads, the mappings marked
 * MADV_DONTFORK, the peer's view of the connection), and one that posts
 * on its parent's QP would send in the parent's name or fault.  A QP and
 * an SRQ record the fork count at creation; the data path compares it (a
 * load and a compare) and refuses a child's posts.
 */
#ifndef SV_UTIL_FORKS_H
#define SV_UTIL_FORKS_H

#include <stdbool.h>

/* How many forks this process is the child of (raised in the child by
 * an atfork handler, before any of its threads can run). */
extern unsigned int sv_fork_count;

/* Install the handler (once; at each context's open, so before any
 * QP exists). */
void sv_forks_watch(void);

#endif
