/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Command fds and the handle tables behind them (share.h).  The shares of
 * the process are a list under one leaf lock; a share is found by the
 * inode of a fd, so any dup of a context's cmd_fd (dup(), or SCM_RIGHTS
 * back into this process) names it.  The live contexts are kept too, so
 * that a verb given an object whose context pointer is stale or foreign
 * refuses it before following that pointer.
 */
#include "verbs/share.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/lockorder.h"
#include "util/log.h"

/* The memfd's name: /proc/PID/fd/N shows "/memfd:" SV_SHARE_NAME. */
#define SV_SHARE_NAME "softverbs-context"

struct share_obj {
	enum sv_share_kind kind; /* 0: free */
	uint32_t next_free; /* free: the next free slot + 1 (0: none) */
	void *obj;
};

struct sv_share {
	struct list_node node;
	dev_t dev;
	ino_t ino;
	unsigned int contexts;
	struct share_obj *objs; /* indexed by handle */
	uint32_t cap, used; /* slots allocated, slots ever handed out */
	uint32_t free_head; /* the last slot freed + 1 (0: none) */
};

static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head shares = LIST_HEAD_INIT(shares);

/* The open contexts of the process (few: a linear scan). */
static struct sv_context **live;
static size_t nlive, live_cap;

/* Objects of each kind in the process, against the device's limits
 * (ibv_query_device): the limits hold for what one process makes, which
 * is what a software device's memory allows.  Memory windows are
 * counted by core/mw.c (0 here: no limit). */
static uint32_t counts[SV_SHARE_KINDS];
static const uint32_t limits[SV_SHARE_KINDS] = {
	[SV_SHARE_PD] = SV_MAX_PD,   [SV_SHARE_MR] = SV_MAX_MR,
	[SV_SHARE_CQ] = SV_MAX_CQ,   [SV_SHARE_QP] = SV_MAX_QP,
	[SV_SHARE_SRQ] = SV_MAX_SRQ, [SV_SHARE_AH] = SV_MAX_AH,
};
static const char *const kind_names[SV_SHARE_KINDS] = {
	[SV_SHARE_PD] = "pd", [SV_SHARE_MR] = "mr", [SV_SHARE_DM] = "dm",
	[SV_SHARE_CQ] = "cq", [SV_SHARE_QP] = "qp", [SV_SHARE_SRQ] = "srq",
	[SV_SHARE_AH] = "ah", [SV_SHARE_MW] = "mw",
};

static int live_add_locked(struct sv_context *ctx)
{
	if (nlive == live_cap) {
		size_t cap = live_cap ? 2 * live_cap : 8;
		struct sv_context **l = realloc(live, cap * sizeof(*l));

		if (!l)
			return ENOMEM;
		live = l;
		live_cap = cap;
	}
	live[nlive++] = ctx;
	return 0;
}

static void live_del_locked(const struct sv_context *ctx)
{
	size_t i;

	for (i = 0; i < nlive; i++)
		if (live[i] == ctx) {
			live[i] = live[--nlive];
			return;
		}
}

static bool live_has_locked(const struct ibv_context *ibctx)
{
	size_t i;

	for (i = 0; i < nlive; i++)
		if (&live[i]->vctx.context == ibctx)
			return true;
	return false;
}

static struct sv_share *find_locked(dev_t dev, ino_t ino)
{
	struct list_node *it, *tmp;

	list_for_each_safe (&shares, it, tmp) {
		struct sv_share *s = list_entry(it, struct sv_share, node);

		if (s->dev == dev && s->ino == ino)
			return s;
	}
	return NULL;
}

int sv_share_new(struct sv_context *ctx)
{
	struct sv_share *s = calloc(1, sizeof(*s));
	struct stat st;
	int fd;

	if (!s)
		return ENOMEM;
	fd = memfd_create(SV_SHARE_NAME, MFD_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		free(s);
		return err;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->contexts = 1;
	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	if (live_add_locked(ctx)) {
		sv_mutex_unlock(&share_lock);
		close(fd);
		free(s);
		return ENOMEM;
	}
	list_add_tail(&shares, &s->node);
	sv_mutex_unlock(&share_lock);
	ctx->share = s;
	ctx->vctx.context.cmd_fd = fd;
	return 0;
}

/* Is fd a softverbs context's fd of some other process? */
static bool foreign_context_fd(int fd)
{
	char link[64], target[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strstr(target, "memfd:" SV_SHARE_NAME) != NULL;
}

int sv_share_join(struct sv_context *ctx, int fd)
{
	struct sv_share *s;
	struct stat st;

	if (fd < 0 || fstat(fd, &st)) {
		sv_warn("ibv_import_device: cmd_fd %d is not an open file descriptor",
			fd);
		return EBADF;
	}
	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	s = find_locked(st.st_dev, st.st_ino);
	if (s && live_add_locked(ctx)) {
		sv_mutex_unlock(&share_lock);
		return ENOMEM;
	}
	if (s)
		s->contexts++;
	sv_mutex_unlock(&share_lock);
	if (!s) {
		if (foreign_context_fd(fd)) {
			sv_warn("ibv_import_device: cmd_fd %d belongs to a softverbs context of another process; softverbs shares contexts only within one process",
				fd);
			return EOPNOTSUPP;
		}
		sv_warn("ibv_import_device: cmd_fd %d is not the cmd_fd of a softverbs context (a dup of ibv_context.cmd_fd is expected)",
			fd);
		return EINVAL;
	}
	ctx->share = s;
	ctx->vctx.context.cmd_fd = fd;
	return 0;
}

void sv_share_leave(struct sv_context *ctx)
{
	struct sv_share *s = ctx->share;
	bool last;

	if (!s)
		return;
	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	live_del_locked(ctx);
	last = --s->contexts == 0;
	if (last) {
		uint32_t i;

		list_del(&s->node);
		/* Objects left at the close go with their handles, and
		 * leave the device's limits (the kernel destroys them). */
		for (i = 0; i < s->used; i++)
			if (s->objs[i].kind)
				counts[s->objs[i].kind]--;
	}
	sv_mutex_unlock(&share_lock);
	if (last) {
		free(s->objs);
		free(s);
	}
	close(ctx->vctx.context.cmd_fd);
	ctx->share = NULL;
}

static struct sv_share *share_of(struct ibv_context *ibctx)
{
	return to_sv_ctx(ibctx)->share;
}

int sv_share_add(struct ibv_context *ibctx, enum sv_share_kind kind, void *obj,
		 uint32_t *handle)
{
	struct sv_share *s = share_of(ibctx);
	uint32_t i;
	int err = 0;

	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	if (limits[kind] && counts[kind] >= limits[kind]) {
		err = sv_refuse(
			ENOMEM,
			"max_%s: %u exist, the device's limit (ibv_query_device); destroy one first",
			kind_names[kind], limits[kind]);
		goto out;
	}
	if (s->free_head) {
		i = s->free_head - 1;
		s->free_head = s->objs[i].next_free;
	} else {
		if (s->used == s->cap) {
			uint32_t cap = s->cap ? 2 * s->cap : 16;
			struct share_obj *o =
				cap > s->cap ?
					realloc(s->objs, cap * sizeof(*o)) :
					NULL;

			if (!o) {
				err = ENOMEM;
				goto out;
			}
			s->objs = o;
			s->cap = cap;
		}
		i = s->used++;
	}
	s->objs[i].kind = kind;
	s->objs[i].next_free = 0;
	s->objs[i].obj = obj;
	counts[kind]++;
	*handle = i;
out:
	sv_mutex_unlock(&share_lock);
	return err;
}

void sv_share_del(struct ibv_context *ibctx, uint32_t handle, const void *obj)
{
	struct sv_share *s = share_of(ibctx);

	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	if (handle < s->used && s->objs[handle].kind &&
	    s->objs[handle].obj == obj) {
		counts[s->objs[handle].kind]--;
		s->objs[handle].kind = 0;
		s->objs[handle].obj = NULL;
		s->objs[handle].next_free = s->free_head;
		s->free_head = handle + 1;
	}
	sv_mutex_unlock(&share_lock);
}

void *sv_share_find(struct ibv_context *ibctx, enum sv_share_kind kind,
		    uint32_t handle)
{
	struct sv_share *s = share_of(ibctx);
	void *obj = NULL;

	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	if (handle < s->used && s->objs[handle].kind == kind)
		obj = s->objs[handle].obj;
	sv_mutex_unlock(&share_lock);
	return obj;
}

bool sv_share_holds(const struct ibv_context *ibctx, enum sv_share_kind kind,
		    uint32_t handle, const void *obj)
{
	bool ok = false;

	if (!ibctx || !obj)
		return false;
	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	if (live_has_locked(ibctx)) {
		const struct sv_share *s =
			to_sv_ctx((struct ibv_context *)ibctx)->share;

		ok = handle < s->used && s->objs[handle].kind == kind &&
		     s->objs[handle].obj == obj;
	}
	sv_mutex_unlock(&share_lock);
	return ok;
}

bool sv_share_context_live(const struct ibv_context *ibctx)
{
	bool ok;

	if (!ibctx)
		return false;
	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	ok = live_has_locked(ibctx);
	sv_mutex_unlock(&share_lock);
	return ok;
}
