/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * `softverbs stats`: the live counters of this user's softverbs processes
 * (engine/diag/statseg.h), read from their segments in the registry directory
 * while they run, and after they were killed.  Text, --json, or --watch
 * (rates between two reads); --clean removes the segments of processes
 * that are gone.
 */
#include "stats.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/diag/statid.h"
#include "engine/diag/stats.h"
#include "statread.h"
#include "link/shm.h"

#define EXIT_USAGE 2

struct opts {
	bool json, watch, clean;
	bool all; /* --all: gone processes too */
	bool verbose; /* -v: every counter */
	double interval; /* --watch seconds */
	long count; /* --count: rate lines (0: until interrupted) */
	int pid; /* 0: every process */
};

/* The segments found: their views (or the reason one could not be
 * read), in the order of their pids. */
struct found {
	struct sv_statview *v;
	char (*err)[160];
	bool *ok;
	size_t n;
};

static uint64_t real_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void found_free(struct found *f)
{
	free(f->v);
	free(f->err);
	free(f->ok);
	memset(f, 0, sizeof(*f));
}

/* Every segment of the directory (or pid's alone). */
static int scan(int dir, int only, struct found *f)
{
	int *pids = NULL, fd = dup(dir), pid;
	size_t n = 0, cap = 0, i;
	struct dirent *e;
	DIR *d;

	memset(f, 0, sizeof(*f));
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* A dup shares the offset: the last scan left it at the end. */
	rewinddir(d);
	while ((e = readdir(d))) {
		if (sv_statid_pid(e->d_name, &pid) || (only && pid != only))
			continue;
		if (n == cap) {
			int *p = realloc(pids, (cap = cap ? 2 * cap : 16) *
						       sizeof(*pids));

			if (!p)
				break;
			pids = p;
		}
		pids[n++] = pid;
	}
	closedir(d);
	if (n) /* qsort's base must not be NULL, even for no elements */
		qsort(pids, n, sizeof(*pids), cmp_int);
	f->v = calloc(n ? n : 1, sizeof(*f->v));
	f->err = calloc(n ? n : 1, sizeof(*f->err));
	f->ok = calloc(n ? n : 1, sizeof(*f->ok));
	if (!f->v || !f->err || !f->ok) {
		free(pids);
		found_free(f);
		return -1;
	}
	for (i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), SV_STATSEG_PREFIX "%d", pids[i]);
		f->ok[i] = sv_statread_file(dir, name, &f->v[i], f->err[i],
					    sizeof(f->err[i])) == 0;
		f->v[i].pid = pids[i];
	}
	f->n = n;
	free(pids);
	return 0;
}

static const char *path_name(int path)
{
	return path == SV_STATSEG_PATH_SHM ? "shm" :
	       path == SV_STATSEG_PATH_UDP ? "udp" :
					     "none";
}

static void when(uint64_t ns, char *out, size_t len)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	if (!ns || !localtime_r(&t, &tm) ||
	    !strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(out, len, "?");
}

static double ago_s(uint64_t ns)
{
	uint64_t now = real_now_ns();

	return ns && now > ns ? (double)(now - ns) / 1e9 : 0.0;
}

/* ---- text -------------------------------------------------------------- */

/* V in units a person reads: bytes by powers of 1024 (as perftest's
 * MB/sec), counts by powers of 1000. */
static const char *human(double v, bool bytes, char *buf, size_t len)
{
	static const char *const byte_units[] = { "B",	 "KiB", "MiB",
						  "GiB", "TiB", "PiB" };
	static const char *const count_units[] = { "",	 " K", " M",
						   " G", " T", " P" };
	const double step = bytes ? 1024.0 : 1000.0;
	unsigned int u = 0;

	while (v >= step && u < 5) {
		v /= step;
		u++;
	}
	if (bytes)
		snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", v, byte_units[u]);
	else
		snprintf(buf, len, u ? "%.2f%s" : "%.0f%s", v, count_units[u]);
	return buf;
}

/* One line for a QP: state, path, WRs and bytes each way, trouble only
 * when there was some. */
static void compact_qp(const struct sv_statview_qp *q)
{
	const struct sv_qp_stats *c = &q->ctr;
	char a[24], b[24], d[24], e[24];

	printf("  qp 0x%06x %s %s %s%s%s%s: sent %s WRs %s, received %s WRs "
	       "%s",
	       q->qpn, sv_qp_type_name(q->type), sv_qp_state_name(q->state),
	       path_name(q->path), q->path == SV_STATSEG_PATH_UDP ? " (" : "",
	       q->path == SV_STATSEG_PATH_UDP ? q->why : "",
	       q->path == SV_STATSEG_PATH_UDP ? ")" : "",
	       human((double)c->wr_done, false, a, sizeof(a)),
	       human((double)c->wr_bytes, true, b, sizeof(b)),
	       human((double)c->recv_done, false, d, sizeof(d)),
	       human((double)c->recv_bytes, true, e, sizeof(e)));
	if (q->sq_outstanding || q->rq_outstanding)
		printf(", outstanding sq %u rq %u", q->sq_outstanding,
		       q->rq_outstanding);
	if (c->retrans)
		printf(", %" PRIu64 " retransmissions", c->retrans);
	if (c->rnr_sent || c->rnr_rcvd)
		printf(", RNR NAKs sent %" PRIu64 " received %" PRIu64,
		       c->rnr_sent, c->rnr_rcvd);
	printf("\n");
}

static void compact_one(const struct sv_statview *v)
{
	/* A gone process was up until its last update. */
	uint64_t end = v->alive ? real_now_ns() : v->updated_ns;
	unsigned int k, qps = 0;

	for (unsigned int i = 0; i < v->neng; i++)
		qps += v->eng[i].qps;
	printf("pid %d (%s) %s, %u QP%s, up %.0f s: %s\n", v->pid, v->comm,
	       v->alive ? "running" :
			  "gone (killed or crashed), its last counters",
	       qps, qps == 1 ? "" : "s",
	       v->start_ns && end > v->start_ns ?
		       (double)(end - v->start_ns) / 1e9 :
		       0.0,
	       v->cmdline);
	for (k = 0; k < v->nqp; k++)
		compact_qp(&v->qp[k]);
	for (unsigned int i = 0; i < v->neng; i++)
		if (v->eng[i].others)
			printf("  (%u more QPs of context %u: -v sums them)\n",
			       v->eng[i].others, v->eng[i].slot);
}

static void text_qp_counters(const struct sv_qp_stats *c)
{
	printf("        tx %" PRIu64 " pkts %" PRIu64 " B, rx %" PRIu64
	       " pkts %" PRIu64 " B; send WRs done %" PRIu64 " (%" PRIu64
	       " B), recv WRs done %" PRIu64 " (%" PRIu64 " B)\n"
	       "        retransmissions %" PRIu64 ", RNR NAKs sent %" PRIu64
	       " received %" PRIu64 "\n",
	       c->tx_pkts, c->tx_bytes, c->rx_pkts, c->rx_bytes, c->wr_done,
	       c->wr_bytes, c->recv_done, c->recv_bytes, c->retrans,
	       c->rnr_sent, c->rnr_rcvd);
}

static void text_one(const struct sv_statview *v)
{
	char started[32], updated[32];
	unsigned int i, k;

	when(v->start_ns, started, sizeof(started));
	when(v->updated_ns, updated, sizeof(updated));
	if (v->alive)
		printf("pid %d (%s) running: %s\n", v->pid, v->comm,
		       v->cmdline);
	else
		printf("pid %d (%s) gone (killed or crashed): %s\n", v->pid,
		       v->comm, v->cmdline);
	printf("  started %s, last update %s (%.1f s ago)%s\n", started,
	       updated, ago_s(v->updated_ns),
	       v->alive ? "" : ": its last counters");
	if (!v->neng)
		printf("  no open device\n");
	for (i = 0; i < v->neng; i++) {
		const struct sv_statview_eng *e = &v->eng[i];
		const struct sv_stats *st = &e->ctr;

		printf("  device softverbs0, context %u: %u QPs\n", e->slot,
		       e->qps);
#define X(name, desc) \
	if (st->name) \
		printf("    %-24s %12" PRIu64 "  %s\n", #name, st->name, desc);
		SV_COUNTERS(X)
#undef X
		for (k = 0; k < v->nqp; k++) {
			const struct sv_statview_qp *q = &v->qp[k];

			if (q->eng != i)
				continue;
			printf("    qp 0x%06x %s %s path=%s%s%s%s sq %u rq %u "
			       "outstanding\n",
			       q->qpn, sv_qp_type_name(q->type),
			       sv_qp_state_name(q->state), path_name(q->path),
			       q->path == SV_STATSEG_PATH_UDP ? " (" : "",
			       q->path == SV_STATSEG_PATH_UDP ? q->why : "",
			       q->path == SV_STATSEG_PATH_UDP ? ")" : "",
			       q->sq_outstanding, q->rq_outstanding);
			text_qp_counters(&q->ctr);
		}
		if (e->others) {
			printf("    %u QPs beyond the table of %u, summed:\n",
			       e->others, SV_STATSEG_QPS);
			text_qp_counters(&e->other);
		}
	}
}

/* ---- JSON -------------------------------------------------------------- */

/* Strings of a segment are printable ASCII without quotes or
 * backslashes by now (statread.c); the few of our own are too. */
static void json_qp_counters(const struct sv_qp_stats *c)
{
	const char *sep = "";

	printf("{");
#define X(name, desc)                                      \
	printf("%s\"%s\": %" PRIu64, sep, #name, c->name); \
	sep = ", ";
	SV_QP_COUNTERS(X)
#undef X
	printf("}");
}

static void json_one(const struct sv_statview *v)
{
	unsigned int i, k;

	printf("{\"pid\": %d, \"status\": \"%s\", \"alive\": %s, "
	       "\"comm\": \"%s\", \"cmdline\": \"%s\", \"started_ns\": %" PRIu64
	       ", \"updated_ns\": %" PRIu64 ", \"contexts\": [",
	       v->pid, v->alive ? "running" : "gone",
	       v->alive ? "true" : "false", v->comm, v->cmdline, v->start_ns,
	       v->updated_ns);
	for (i = 0; i < v->neng; i++) {
		const struct sv_statview_eng *e = &v->eng[i];
		const char *sep = "", *qsep = "";

		printf("%s{\"device\": \"softverbs0\", \"context\": %u, "
		       "\"qps\": %u, \"others\": %u, \"counters\": {",
		       i ? ", " : "", e->slot, e->qps, e->others);
#define X(name, desc)                                          \
	printf("%s\"%s\": %" PRIu64, sep, #name, e->ctr.name); \
	sep = ", ";
		SV_COUNTERS(X)
#undef X
		printf("}, \"others_counters\": ");
		json_qp_counters(&e->other);
		printf(", \"qp\": [");
		for (k = 0; k < v->nqp; k++) {
			const struct sv_statview_qp *q = &v->qp[k];

			if (q->eng != i)
				continue;
			printf("%s{\"qpn\": %u, \"type\": \"%s\", "
			       "\"state\": \"%s\", \"path\": \"%s\", "
			       "\"why\": \"%s\", \"sq_outstanding\": %u, "
			       "\"rq_outstanding\": %u, \"counters\": ",
			       qsep, q->qpn, sv_qp_type_name(q->type),
			       sv_qp_state_name(q->state), path_name(q->path),
			       q->path == SV_STATSEG_PATH_UDP ? q->why : "",
			       q->sq_outstanding, q->rq_outstanding);
			json_qp_counters(&q->ctr);
			printf("}");
			qsep = ", ";
		}
		printf("]}");
	}
	printf("]}");
}

/* ---- watch ------------------------------------------------------------- */

static const struct sv_statview *find_pid(const struct found *f, int pid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->ok[i] && f->v[i].pid == pid)
			return &f->v[i];
	return NULL;
}

/* QP q of view v as the older view o saw it. */
static const struct sv_statview_qp *find_qp(const struct sv_statview *o,
					    const struct sv_statview *v,
					    const struct sv_statview_qp *q)
{
	for (unsigned int i = 0; o && i < o->nqp; i++)
		if (o->qp[i].qpn == q->qpn &&
		    o->eng[o->qp[i].eng].slot == v->eng[q->eng].slot)
			return &o->qp[i];
	return NULL;
}

/* The rates between two reads, dt seconds apart: one line per QP seen
 * in both. */
static void rates(const struct found *a, const struct found *b, double dt)
{
	char stamp[32];

	when(real_now_ns(), stamp, sizeof(stamp));
	for (size_t i = 0; i < b->n; i++) {
		const struct sv_statview *v = &b->v[i], *o;

		if (!b->ok[i])
			continue;
		o = find_pid(a, v->pid);
		if (!v->alive) {
			printf("%s pid %d (%s) gone\n", stamp, v->pid, v->comm);
			continue;
		}
		for (unsigned int k = 0; k < v->nqp; k++) {
			const struct sv_statview_qp *q = &v->qp[k];
			const struct sv_statview_qp *p = find_qp(o, v, q);
			struct sv_qp_stats d;

			if (!p)
				continue;
#define X(name, desc) \
	d.name = q->ctr.name >= p->ctr.name ? q->ctr.name - p->ctr.name : 0;
			SV_QP_COUNTERS(X)
#undef X
			char u[6][24];

			printf("%s pid %d (%s) qp 0x%06x %s %s: "
			       "sent %s WRs/s %s/s, received %s WRs/s %s/s, "
			       "tx %s pkts/s, rx %s pkts/s, "
			       "retransmissions %.1f/s\n",
			       stamp, v->pid, v->comm, q->qpn,
			       sv_qp_type_name(q->type),
			       sv_qp_state_name(q->state),
			       human(d.wr_done / dt, false, u[0], 24),
			       human(d.wr_bytes / dt, true, u[1], 24),
			       human(d.recv_done / dt, false, u[2], 24),
			       human(d.recv_bytes / dt, true, u[3], 24),
			       human(d.tx_pkts / dt, false, u[4], 24),
			       human(d.rx_pkts / dt, false, u[5], 24),
			       d.retrans / dt);
		}
	}
	fflush(stdout);
}

static int no_pid(const char *prog, int pid)
{
	fprintf(stderr,
		"%s stats: no counters for pid %d (not a softverbs process of "
		"yours, or it exited)\n",
		prog, pid);
	return 1;
}

static int watch(const char *prog, int dir, const struct opts *o)
{
	struct found prev, cur;
	struct timespec ts = {
		.tv_sec = (time_t)o->interval,
		.tv_nsec = (long)((o->interval - (double)(time_t)o->interval) *
				  1e9),
	};

	if (scan(dir, o->pid, &prev))
		return 1;
	if (o->pid && !prev.n) {
		found_free(&prev);
		return no_pid(prog, o->pid);
	}
	for (long i = 0; !o->count || i < o->count; i++) {
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		nanosleep(&ts, NULL);
		if (scan(dir, o->pid, &cur)) {
			found_free(&prev);
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		rates(&prev, &cur,
		      (double)(t1.tv_sec - t0.tv_sec) +
			      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		found_free(&prev);
		prev = cur;
	}
	found_free(&prev);
	return 0;
}

/* ---- the command --------------------------------------------------------- */

static int usage_err(const char *prog, const char *what)
{
	fprintf(stderr,
		"%s stats: %s\nusage: %s stats [--all] [-v | --json | --watch "
		"[SECONDS] [--count N] | --clean] [PID]\n",
		prog, what, prog);
	return EXIT_USAGE;
}

static int parse(const char *prog, int argc, char **argv, struct opts *o)
{
	char *end;

	memset(o, 0, sizeof(*o));
	o->interval = 1.0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--all")) {
			o->all = true;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			o->verbose = true;
		} else if (!strcmp(a, "--clean")) {
			o->clean = true;
		} else if (!strcmp(a, "--watch")) {
			o->watch = true;
			/* A number right after it is the interval (a
			 * PID goes before --watch, or after SECONDS). */
			if (i + 1 < argc && strtod(argv[i + 1], &end) && !*end)
				o->interval = strtod(argv[++i], NULL);
		} else if (!strcmp(a, "--count")) {
			if (i + 1 >= argc)
				return usage_err(prog, "--count needs N");
			o->count = strtol(argv[++i], &end, 10);
			if (*end || o->count <= 0)
				return usage_err(prog, "--count needs N > 0");
		} else {
			long pid = strtol(a, &end, 10);

			if (*end || pid <= 0 || pid > 0x7fffffff || o->pid)
				return usage_err(prog, "unexpected argument");
			o->pid = (int)pid;
		}
	}
	if (o->interval <= 0 || o->interval > 3600)
		return usage_err(prog, "--watch takes 0 < SECONDS <= 3600");
	if ((o->json && o->watch) || (o->clean && (o->json || o->watch)))
		return usage_err(prog, "one of --json, --watch, --clean");
	return 0;
}

int sv_cmd_stats(const char *prog, int argc, char **argv)
{
	const char *why;
	int dir = sv_shm_registry_dir(&why), ret = 0;
	struct opts o;
	struct found f;

	if ((ret = parse(prog, argc, argv, &o)))
		return ret;
	if (dir < 0) {
		fprintf(stderr, "%s stats: no counters: %s\n", prog, why);
		return 1;
	}
	if (o.watch)
		return watch(prog, dir, &o);
	if (scan(dir, o.pid, &f)) {
		fprintf(stderr, "%s stats: cannot read %s: %s\n", prog,
			sv_shm_registry_path(), strerror(errno));
		return 1;
	}
	if (o.pid && !f.n) {
		found_free(&f);
		return no_pid(prog, o.pid);
	}
	if (o.json)
		printf("{\"processes\": [");
	size_t gone = 0, shown = 0;
	for (size_t i = 0; i < f.n; i++) {
		char name[32];

		snprintf(name, sizeof(name), SV_STATSEG_PREFIX "%d",
			 f.v[i].pid);
		if (o.clean) {
			if (f.v[i].alive)
				continue;
			if (unlinkat(dir, name, 0) == 0)
				printf("removed %s/%s (pid %d, gone)\n",
				       sv_shm_registry_path(), name,
				       f.v[i].pid);
			continue;
		}
		if (!f.ok[i]) {
			/* A segment we cannot trust is reported, never
			 * shown; the listing goes on (another build's
			 * process may run beside ours), and fails only
			 * when it was the one asked for. */
			fprintf(stderr, "%s stats: %s/%s: %s\n", prog,
				sv_shm_registry_path(), name, f.err[i]);
			if (o.pid)
				ret = 1;
			continue;
		}
		/* Gone processes only when asked for, by PID or --all. */
		if (!f.v[i].alive && !o.pid && !o.all) {
			gone++;
			continue;
		}
		if (o.json) {
			printf("%s", shown ? ", " : "");
			json_one(&f.v[i]);
		} else if (o.verbose) {
			text_one(&f.v[i]);
		} else {
			compact_one(&f.v[i]);
		}
		shown++;
	}
	if (o.json)
		printf("]}\n");
	else if (!o.clean && !o.pid && !shown && !gone)
		printf("no softverbs process of yours is running\n");
	if (gone && !o.json)
		printf("(%zu gone process%s not shown: --all shows them, "
		       "--clean removes them)\n",
		       gone, gone == 1 ? "" : "es");
	found_free(&f);
	return ret;
}
