/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The live counters' segment (engine/diag/statseg.c) and its reader
 * (tools/statread.c): this process's own segment as `softverbs stats`
 * reads it (file mode, header, a context, a QP slot following create,
 * modify and destroy), a forked child's segment made and removed at its
 * exit, and the reader on corrupted segments: each kind of damage refused
 * with its reason, or cut to its bounds, and random damage never crashing
 * it nor giving an index out of range. */
#include "engine/diag/statid.h"
#include "statread.h"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "link/shm.h"

static int dir;
static char name[32];

static struct sv_statview *view_of(int pid, char *err, size_t len)
{
	static struct sv_statview v;
	char n[32];

	snprintf(n, sizeof(n), SV_STATSEG_PREFIX "%d", pid);
	return sv_statread_file(dir, n, &v, err, len) ? NULL : &v;
}

/* The segment's bytes. */
static struct sv_statseg *load(void)
{
	struct sv_statseg *s = malloc(sizeof(*s));
	int fd = openat(dir, name, O_RDONLY);

	REQUIRE(s && fd >= 0);
	REQUIRE(pread(fd, s, sizeof(*s), 0) == (ssize_t)sizeof(*s));
	close(fd);
	return s;
}

/* parse a damaged copy: -1 and a reason containing want. */
static void refused(const struct sv_statseg *s, size_t len, const char *want)
{
	struct sv_statview *v = malloc(sizeof(*v));
	char err[200] = "";

	REQUIRE(v);
	CHECK(sv_statread_parse(s, len, v, err, sizeof(err)) == -1);
	if (!strstr(err, want))
		fprintf(stderr, "  reason '%s', expected '%s'\n", err, want);
	CHECK(strstr(err, want) != NULL);
	free(v);
}

static void check_bounds(const struct sv_statview *v)
{
	CHECK(v->neng <= SV_STATSEG_ENGINES);
	CHECK(v->nqp <= SV_STATSEG_QPS);
	for (unsigned int i = 0; i < v->nqp; i++) {
		CHECK(v->qp[i].eng < v->neng);
		CHECK(v->qp[i].state >= -1 && v->qp[i].state <= IBV_QPS_ERR);
		CHECK(v->qp[i].path <= SV_STATSEG_PATH_SHM);
		CHECK(memchr(v->qp[i].why, 0, sizeof(v->qp[i].why)) != NULL);
	}
	CHECK(memchr(v->comm, 0, sizeof(v->comm)) != NULL);
	CHECK(memchr(v->cmdline, 0, sizeof(v->cmdline)) != NULL);
	for (const char *c = v->cmdline; *c; c++)
		CHECK(*c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\');
}

static void corrupted(void)
{
	struct sv_statseg *good = load(), *s = malloc(sizeof(*s));
	struct sv_statview *v = malloc(sizeof(*v));
	char err[200];
	unsigned int i, k;

	REQUIRE(s && v);
	refused(good, 10, "truncated: 10 bytes");
	refused(good, sizeof(good->hdr) + 5, "truncated");
	*s = *good;
	s->hdr.magic ^= 1;
	refused(s, sizeof(*s), "not a softverbs counter segment");
	*s = *good;
	s->hdr.version = 99;
	refused(s, sizeof(*s), "layout version 99");
	*s = *good;
	s->hdr.nqps = 1u << 30;
	refused(s, sizeof(*s), "layout of another build");
	*s = *good;
	s->hdr.qp_size = 8;
	refused(s, sizeof(*s), "layout of another build");
	*s = *good;
	s->hdr.counters_hash ^= 0x100;
	refused(s, sizeof(*s), "counters of another build");
	*s = *good;
	s->hdr.pid = -5;
	refused(s, sizeof(*s), "no process: pid -5");

	/* Damage inside the bounds: cut, skipped or named "?". */
	*s = *good;
	memset(s->hdr.comm, 0xff, sizeof(s->hdr.comm));
	memset(s->hdr.cmdline, '"', sizeof(s->hdr.cmdline));
	s->qp[0].used = 1000; /* no such context */
	s->qp[1].used = 8; /* a context slot that is not in use */
	s->qp[2].used = 1;
	s->qp[2].state = 77;
	s->qp[2].path = 9;
	memset(s->qp[2].why, 'x', sizeof(s->qp[2].why));
	s->eng[0].used = 1;
	s->eng[7].used = 0;
	CHECK(sv_statread_parse(s, sizeof(*s), v, err, sizeof(err)) == 0);
	check_bounds(v);
	CHECK_EQ(strlen(v->comm), sizeof(v->comm) - 1);
	CHECK(v->comm[0] == '?');
	CHECK(v->cmdline[0] == '?');
	for (i = 0, k = 0; i < v->nqp; i++)
		if (v->qp[i].state == -1) {
			k++;
			CHECK(v->qp[i].path == SV_STATSEG_PATH_NONE);
			CHECK_EQ(strlen(v->qp[i].why),
				 sizeof(v->qp[i].why) - 1);
		}
	CHECK_EQ(k, 1u);

	/* Random damage: never a crash, never an index out of bounds. */
	srand(19);
	for (i = 0; i < 2000; i++) {
		*s = *good;
		for (k = 0; k < 1 + (unsigned int)rand() % 64; k++)
			((uint8_t *)s)[(size_t)rand() % sizeof(*s)] =
				(uint8_t)rand();
		/* Mostly past the header checks, so the rest is read. */
		if (i % 2)
			s->hdr = good->hdr;
		if (sv_statread_parse(s, sizeof(*s), v, err, sizeof(err)) == 0)
			check_bounds(v);
		else
			CHECK(err[0] != '\0');
	}
	free(good);
	free(s);
	free(v);
}

/* Files that are not segments, in a directory of our own. */
static void files(void)
{
	char tmpl[] = "/tmp/sv-statseg.XXXXXX", err[200];
	struct sv_statview *v = malloc(sizeof(*v));
	int d, fd, pid;

	REQUIRE(v && mkdtemp(tmpl));
	d = open(tmpl, O_RDONLY | O_DIRECTORY);
	REQUIRE(d >= 0);
	CHECK(sv_statid_pid("stats.12", &pid) == 0 && pid == 12);
	CHECK(sv_statid_pid("stats.12x", &pid) == -1);
	CHECK(sv_statid_pid("stats.", &pid) == -1);
	CHECK(sv_statid_pid("stats.-3", &pid) == -1);
	CHECK(sv_statid_pid("12345.4791", &pid) == -1);
	/* A FIFO: refused without blocking. */
	CHECK(mkfifoat(d, "stats.999999", 0600) == 0);
	CHECK(sv_statread_file(d, "stats.999999", v, err, sizeof(err)) == -1);
	CHECK(strstr(err, "not a regular file") != NULL);
	/* Our segment under another pid's name. */
	fd = openat(d, "stats.999998", O_WRONLY | O_CREAT, 0600);
	REQUIRE(fd >= 0);
	{
		struct sv_statseg *s = load();

		CHECK(write(fd, s, sizeof(*s)) == (ssize_t)sizeof(*s));
		free(s);
	}
	close(fd);
	CHECK(sv_statread_file(d, "stats.999998", v, err, sizeof(err)) == -1);
	CHECK(strstr(err, "written by pid") != NULL);
	/* Empty. */
	fd = openat(d, "stats.999997", O_WRONLY | O_CREAT, 0600);
	close(fd);
	CHECK(sv_statread_file(d, "stats.999997", v, err, sizeof(err)) == -1);
	CHECK(strstr(err, "truncated: 0 bytes") != NULL);
	unlinkat(d, "stats.999999", 0);
	unlinkat(d, "stats.999998", 0);
	unlinkat(d, "stats.999997", 0);
	close(d);
	rmdir(tmpl);
	free(v);
}

/* A pid no process has now (a child already reaped). */
static int dead_pid(void)
{
	pid_t p = fork();

	if (p == 0)
		_exit(0);
	REQUIRE(p > 0 && waitpid(p, NULL, 0) == p);
	return (int)p;
}

/* A copy of our segment as a dead process's, last updated age_s ago. */
static void plant(int pid, uint64_t age_s)
{
	struct sv_statseg *s = load();
	struct timespec ts;
	char n[32];
	int fd;

	clock_gettime(CLOCK_REALTIME, &ts);
	s->hdr.pid = pid;
	s->hdr.updated_ns = ((uint64_t)ts.tv_sec - age_s) * 1000000000ull;
	snprintf(n, sizeof(n), SV_STATSEG_PREFIX "%d", pid);
	fd = openat(dir, n, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	REQUIRE(fd >= 0);
	CHECK(write(fd, s, sizeof(*s)) == (ssize_t)sizeof(*s));
	close(fd);
	free(s);
}

static bool exists(int pid)
{
	char n[32];
	struct stat st;

	snprintf(n, sizeof(n), SV_STATSEG_PREFIX "%d", pid);
	return fstatat(dir, n, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* A process of its own opening a device (this program again, as
 * "child": a fork alone may not start threads under TSan): exits 0 when
 * its segment exists.  Its pid. */
static int run_child(int *status)
{
	pid_t p = fork();

	if (p == 0) {
		execl("/proc/self/exe", "test_statseg", "child", (char *)NULL);
		_exit(127);
	}
	REQUIRE(p > 0 && waitpid(p, status, 0) == p);
	return (int)p;
}

/* The context stays open: the library's destructor removes the
 * segment at exit. */
static int child_main(struct ibv_device **list)
{
	struct ibv_context *c = ibv_open_device(list[0]);

	ibv_free_device_list(list);
	if (!c)
		return 3;
	return exists(getpid()) ? 0 : 4;
}

int main(int argc, char **argv)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx, *ctx2;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8,
			 .max_recv_wr = 8,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT,
				    .port_num = 1,
				    .qp_access_flags =
					    IBV_ACCESS_REMOTE_WRITE };
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *bad;
	struct sv_statview *v;
	struct stat st;
	char err[200];
	const char *why;
	pid_t child;
	int status;

	REQUIRE(list && list[0]);
	dir = sv_shm_registry_dir(&why);
	if (dir < 0) {
		printf("SKIP: no registry directory: %s\n", why);
		return 77;
	}
	if (argc > 1 && !strcmp(argv[1], "child"))
		return child_main(list);
	snprintf(name, sizeof(name), SV_STATSEG_PREFIX "%d", (int)getpid());
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);
	CHECK(fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0);
	CHECK_EQ(st.st_mode & 07777, 0600u);
	CHECK(S_ISREG(st.st_mode));

	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	REQUIRE(pd && cq);
	init.send_cq = init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	REQUIRE(qp);
	v = view_of(getpid(), err, sizeof(err));
	REQUIRE(v);
	CHECK_EQ(v->pid, (int)getpid());
	CHECK(v->alive);
	CHECK(!strcmp(v->comm, "test_statseg"));
	CHECK(strstr(v->cmdline, "test_statseg") != NULL);
	CHECK_EQ(v->neng, 1u);
	REQUIRE(v->nqp == 1);
	CHECK_EQ(v->qp[0].qpn, qp->qp_num);
	CHECK_EQ(v->qp[0].type, (int)IBV_QPT_RC);
	CHECK_EQ(v->qp[0].state, (int)IBV_QPS_RESET);
	CHECK(ibv_modify_qp(qp, &attr,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_ACCESS_FLAGS) == 0);
	CHECK(ibv_post_recv(qp, &rwr, &bad) == 0);
	CHECK(ibv_post_recv(qp, &rwr, &bad) == 0);
	/* Move it again: the snapshot follows each modify. */
	attr.qp_state = IBV_QPS_INIT;
	CHECK(ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0);
	v = view_of(getpid(), err, sizeof(err));
	REQUIRE(v && v->nqp == 1);
	CHECK_EQ(v->qp[0].state, (int)IBV_QPS_INIT);
	CHECK_EQ(v->qp[0].rq_outstanding, 2u);
	CHECK_EQ(v->qp[0].path, (int)SV_STATSEG_PATH_NONE);

	corrupted();
	files();

	/* The killed: a dead process's segment stays while fresh and goes
	 * once stale, when a new segment is made and the last look for
	 * stale ones (the marker's time) is an hour old. */
	{
		int stale = dead_pid(), fresh = dead_pid();
		struct timespec old[2] = { { 0, 0 }, { 0, 0 } };
		struct stat mst;
		int fd =
			openat(dir, SV_STATSEG_SWEEP, O_WRONLY | O_CREAT, 0600);

		REQUIRE(fd >= 0);
		close(fd);
		plant(stale, 2 * SV_STATSEG_STALE_S);
		plant(fresh, 10);
		v = view_of(stale, err, sizeof(err));
		REQUIRE(v);
		CHECK(!v->alive);
		/* Marker recent: no look at all, the stale one stays. */
		CHECK(utimensat(dir, SV_STATSEG_SWEEP, NULL, 0) == 0);
		run_child(&status);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK(exists(stale) && exists(fresh));
		CHECK(utimensat(dir, SV_STATSEG_SWEEP, old, 0) == 0);
		run_child(&status);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK(!exists(stale));
		CHECK(exists(fresh));
		CHECK(fstatat(dir, SV_STATSEG_SWEEP, &mst, 0) == 0 &&
		      mst.st_mtime > 0);
		CHECK(exists(getpid()));
		snprintf(err, sizeof(err), SV_STATSEG_PREFIX "%d", fresh);
		unlinkat(dir, err, 0);
	}

	/* Another process's context: a segment of its own, gone at its
	 * exit (without ibv_close_device); ours stays. */
	child = run_child(&status);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
#ifndef __SANITIZE_THREAD__ /* TSan: no threads after a threaded fork */
	/* A forked child (no exec) that opens a device makes a segment of
	 * its own, not a slot in its parent's. */
	{
		pid_t f = fork();

		if (f == 0)
			_exit(ibv_open_device(list[0]) && exists(getpid()) ? 0 :
									     3);
		REQUIRE(f > 0 && waitpid(f, &status, 0) == f);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		/* _exit: no destructor ran, so it is there, and dead. */
		v = view_of(f, err, sizeof(err));
		CHECK(v && !v->alive && v->neng == 1);
		snprintf(err, sizeof(err), SV_STATSEG_PREFIX "%d", (int)f);
		unlinkat(dir, err, 0);
		v = view_of(getpid(), err, sizeof(err));
		CHECK(v && v->neng == 1 && v->nqp == 1);
	}
#endif
	CHECK(view_of(child, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "No such file") != NULL);
	CHECK(fstatat(dir, name, &st, 0) == 0);

	CHECK(ibv_destroy_qp(qp) == 0);
	v = view_of(getpid(), err, sizeof(err));
	REQUIRE(v);
	CHECK_EQ(v->nqp, 0u);
	CHECK(ibv_destroy_cq(cq) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	/* Two contexts: the segment lives while either is open. */
	ctx2 = ibv_open_device(list[0]);
	REQUIRE(ctx2);
	v = view_of(getpid(), err, sizeof(err));
	REQUIRE(v);
	CHECK_EQ(v->neng, 2u);
	CHECK(ibv_close_device(ctx) == 0);
	v = view_of(getpid(), err, sizeof(err));
	REQUIRE(v);
	CHECK_EQ(v->neng, 1u);
	/* The last one closed: nothing to show, nothing left behind (a
	 * process may exec another program under the same pid). */
	CHECK(ibv_close_device(ctx2) == 0);
	CHECK(!exists(getpid()));
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);
	CHECK(exists(getpid()));
	CHECK(ibv_close_device(ctx) == 0);
	CHECK(!exists(getpid()));
	ibv_free_device_list(list);
	return check_done();
}
