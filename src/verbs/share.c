/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Command fds and their shared objects (share.h).  The shares of the
 * process are a list under one leaf lock; a share is found by the inode
 * of a fd, so any dup of a context's cmd_fd (dup(), or SCM_RIGHTS back
 * into this process) names it.
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
	void *obj;
};

struct sv_share {
	struct list_node node;
	dev_t dev;
	ino_t ino;
	unsigned int contexts;
	struct share_obj *objs; /* indexed by handle */
	uint32_t cap;
};

static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head shares = LIST_HEAD_INIT(shares);

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
	last = --s->contexts == 0;
	if (last)
		list_del(&s->node);
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
	for (i = 0; i < s->cap && s->objs[i].kind; i++)
		;
	if (i == s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : 16;
		struct share_obj *o =
			cap > s->cap ? realloc(s->objs, cap * sizeof(*o)) :
				       NULL;

		if (!o) {
			err = ENOMEM;
			goto out;
		}
		memset(o + s->cap, 0, (cap - s->cap) * sizeof(*o));
		s->objs = o;
		s->cap = cap;
	}
	s->objs[i].kind = kind;
	s->objs[i].obj = obj;
	*handle = i;
out:
	sv_mutex_unlock(&share_lock);
	return err;
}

void sv_share_del(struct ibv_context *ibctx, uint32_t handle, const void *obj)
{
	struct sv_share *s = share_of(ibctx);

	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	if (handle < s->cap && s->objs[handle].obj == obj)
		s->objs[handle].kind = 0;
	sv_mutex_unlock(&share_lock);
}

void *sv_share_find(struct ibv_context *ibctx, enum sv_share_kind kind,
		    uint32_t handle)
{
	struct sv_share *s = share_of(ibctx);
	void *obj = NULL;

	sv_mutex_lock(&share_lock, SV_LOCK_SHARE);
	if (handle < s->cap && s->objs[handle].kind == kind)
		obj = s->objs[handle].obj;
	sv_mutex_unlock(&share_lock);
	return obj;
}
