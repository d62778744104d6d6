/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Reading another process's live counters (statread.h).  The
 * segment is input from another process, which may be buggy, half-way
 * through writing, dead mid-update or hostile: it is copied first, and
 * only the copy is looked at, each size against our own layout, each
 * index against its bound, each string cut at its buffer.  Counters are
 * shown, never used to index or size anything, so a torn one does no
 * harm.
 */
#include "statread.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "engine/diag/statid.h"

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A string of the segment, cut at its buffer, printable. */
static void copy_str(char *out, const char *in, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len && in[i]; i++)
		out[i] = in[i] >= 0x20 && in[i] < 0x7f && in[i] != '"' &&
					 in[i] != '\\' ?
				 in[i] :
				 '?';
	out[i] = '\0';
}

int sv_statread_parse(const void *buf, size_t len, struct sv_statview *v,
		      char *err, size_t errlen)
{
	const struct sv_statseg *s = buf;
	const struct sv_statseg_hdr *h = &s->hdr;
	int slot_of[SV_STATSEG_ENGINES];
	unsigned int i;

	memset(v, 0, sizeof(*v));
	if (len < sizeof(*h))
		return fail(err, errlen,
			    "truncated: %zu bytes, a header takes %zu", len,
			    sizeof(*h));
	if (h->magic != SV_STATSEG_MAGIC)
		return fail(err, errlen,
			    "not a softverbs counter segment (magic 0x%llx)",
			    (unsigned long long)h->magic);
	if (h->version != SV_STATSEG_VERSION)
		return fail(err, errlen,
			    "layout version %u, this reader knows %u",
			    h->version, SV_STATSEG_VERSION);
	if (h->hdr_size != sizeof(s->hdr) || h->eng_size != sizeof(s->eng[0]) ||
	    h->qp_size != sizeof(s->qp[0]) ||
	    h->nengines != SV_STATSEG_ENGINES || h->nqps != SV_STATSEG_QPS)
		return fail(
			err, errlen,
			"layout of another build (sizes %u/%u/%u, %u contexts, %u QPs)",
			h->hdr_size, h->eng_size, h->qp_size, h->nengines,
			h->nqps);
	if (h->ncounters != sizeof(struct sv_stats) / sizeof(uint64_t) ||
	    h->nqp_counters != sizeof(struct sv_qp_stats) / sizeof(uint64_t) ||
	    h->counters_hash != sv_statid_hash())
		return fail(err, errlen,
			    "counters of another build (%u and %u counters)",
			    h->ncounters, h->nqp_counters);
	if (len < sizeof(*s))
		return fail(err, errlen,
			    "truncated: %zu bytes, the segment takes %zu", len,
			    sizeof(*s));
	if (h->pid <= 0)
		return fail(err, errlen, "no process: pid %d", (int)h->pid);
	v->pid = h->pid;
	v->uid = h->uid;
	v->exited = h->exited != 0;
	v->start_ns = h->start_ns;
	v->updated_ns = h->updated_ns;
	copy_str(v->comm, h->comm, sizeof(v->comm));
	copy_str(v->cmdline, h->cmdline, sizeof(v->cmdline));
	for (i = 0; i < SV_STATSEG_ENGINES; i++) {
		const struct sv_statslot_eng *e = &s->eng[i];
		struct sv_statview_eng *o;

		slot_of[i] = -1;
		if (e->used != 1)
			continue;
		slot_of[i] = (int)v->neng;
		o = &v->eng[v->neng++];
		o->slot = i;
		o->qps = e->qps;
		o->others = e->others;
		o->ctr = e->ctr;
		o->other = e->other.ctr;
	}
	for (i = 0; i < SV_STATSEG_QPS; i++) {
		const struct sv_statslot_qp *q = &s->qp[i];
		struct sv_statview_qp *o;
		uint32_t used = q->used;

		/* Free, being claimed, or naming no open context. */
		if (!used || used > SV_STATSEG_ENGINES || slot_of[used - 1] < 0)
			continue;
		o = &v->qp[v->nqp++];
		o->eng = (unsigned int)slot_of[used - 1];
		o->qpn = q->qpn & 0xffffff;
		o->type = q->type;
		o->state = q->state <= IBV_QPS_ERR ? q->state : -1;
		o->path = q->path <= SV_STATSEG_PATH_SHM ? q->path :
							   SV_STATSEG_PATH_NONE;
		o->sq_outstanding = q->sq_outstanding;
		o->rq_outstanding = q->rq_outstanding;
		copy_str(o->why, q->why, sizeof(o->why));
		o->ctr = q->ctr;
	}
	return 0;
}

int sv_statread_file(int dir, const char *name, struct sv_statview *v,
		     char *err, size_t errlen)
{
	size_t want = sizeof(struct sv_statseg);
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	int fd, ret, pid;

	memset(v, 0, sizeof(*v));
	if (sv_statid_pid(name, &pid))
		return fail(err, errlen, "%s: not a segment's name", name);
	v->pid = pid;
	/* Not a FIFO or a device someone put there: a regular file, read
	 * without blocking. */
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return fail(err, errlen, "%s: %s", name, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(err, errlen, "%s: not a regular file", name);
	}
	buf = calloc(1, want);
	if (!buf) {
		close(fd);
		return fail(err, errlen, "%s: out of memory", name);
	}
	/* One copy, then only the copy is looked at. */
	n = pread(fd, buf, want, 0);
	close(fd);
	if (n < 0) {
		free(buf);
		return fail(err, errlen, "%s: %s", name, strerror(errno));
	}
	ret = sv_statread_parse(buf, (size_t)n, v, err, errlen);
	if (!ret) {
		const struct sv_statseg_hdr *h = (const void *)buf;

		if (v->pid != pid)
			ret = fail(err, errlen,
				   "%s: written by pid %d, not by %d", name,
				   v->pid, pid);
		else
			v->alive = !v->exited &&
				   sv_statid_alive(v->pid, h->start_ticks);
	} else {
		v->pid = pid;
		v->alive = sv_statid_alive(pid, 0);
	}
	free(buf);
	return ret;
}
