/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Trust on one host (issue #17, docs/security.md): the fast path stays
 * within one user, nobody can take our registry names, and a helper that
 * makes no progress cannot hold a WRITE up.
 *   slowhelp   a hostile thread in the target process (same user: the
 *              target's own thread is off, SOFTVERBS_HELP=0 there) says
 *              it helps, claims every chunk of every large WRITE posted
 *              to it and never finishes one: 200 WRITEs of 1 MiB complete
 *              with the right bytes, the sender having taken the chunks
 *              back after a bound near the copy's own time
 *              (help_timeout >= 1; before, each waited 10 s);
 *   otheruser  (root) the target becomes test user 1 (the squatter
 *              below): root does not attach to its ring (shm_other_user
 *              >= 1, no direct WRITE, no packet through shared memory),
 *              the WRITE and READ go through UDP with the right bytes;
 *   otheruser_run, otheruser_unmapped  (root) the same between two
 *              ordinary users: the target (test user 1) in a user
 *              namespace that maps its uid as `softverbs run` makes, or
 *              in one that maps nothing, where every other user's uid
 *              looks like its own; the initiator (test user 2) does not
 *              attach to it, nor it to the initiator (issue #37);
 *   squat      (root) the squatter first pre-creates a registry entry for
 *              every ephemeral port where the registry used to be
 *              (/dev/shm/softverbs/, shared by all users) and tries to in
 *              the victim's own directory (refused); then two processes
 *              of the victim (test user 2) still use the fast path
 *              (direct_write >= 1);
 *   squatdir   (root) the squatter creates the registry directory of the
 *              late user (test user 3) before that user ever ran (what an
 *              earlier run left of it removed first): a process of the
 *              late user refuses it with a line naming the owner; with no
 *              private place for a secret (HOME not its own) it stays on
 *              UDP, with one (a HOME of its own) it registers its ring in
 *              a directory named from that secret, which nobody else can
 *              know;
 *   squatroot  (root) the squatter creates root's registry directory
 *              (root's own moved away for the test): root moves it aside
 *              with a line saying so, makes its own (0700) and keeps the
 *              fast path (direct_write >= 1).
 * The three users are ordinary accounts made with useradd (hx_test_user),
 * never nobody.  The root-only cases are skipped (77) when not run as
 * root or when the accounts cannot be had, and all of them when the fast
 * path is off here.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "link/shm.h" /* the segment a hostile peer writes */

#define MIB (1u << 20)

/* Three distinct ordinary users (set in main, before any fork). */
static struct hx_user squatter, victim, late;

static unsigned long netns_ino(void)
{
	struct stat st;

	REQUIRE(stat("/proc/self/ns/net", &st) == 0);
	return (unsigned long)st.st_ino;
}

/* ---- counters ------------------------------------------------------------ */

struct counters {
	unsigned long long direct_write, help_posted, help_timeout,
		shm_other_user, shm_tx_pkts;
};

/* Close with SOFTVERBS_STATS=1 (set before the device was opened) and
 * read the counters and QP dumps it prints. */
static void close_counting(struct hx_ep *ep, struct counters *c)
{
	static const char *const names[] = { "direct_write", "help_posted",
					     "help_timeout", "shm_other_user",
					     "shm_tx_pkts",  NULL };
	unsigned long long v[5];

	hx_ep_close_counters(ep, names, v);
	c->direct_write = v[0];
	c->help_posted = v[1];
	c->help_timeout = v[2];
	c->shm_other_user = v[3];
	c->shm_tx_pkts = v[4];
}

static void stats_on(void)
{
	setenv("SOFTVERBS_STATS", "1", 1);
}

/* WRITE `len` bytes of pattern `seed` from ep.buf + off to the peer's
 * buffer + off, and wait for its completion. */
static void write_one(struct hx_ep *ep, size_t off, size_t len, uint64_t seed,
		      uint64_t id)
{
	hx_fill(ep->buf + off, len, seed);
	HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, id,
				 ep->buf + off, (uint32_t)len, ep->mr->lkey,
				 ep->peer.addr + off, ep->peer.rkey, 0),
		    0);
	HX_EXPECT_T(ep->scq, NULL, id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		    (uint32_t)len, 20000);
}

/* ---- slowhelp: a helper that claims everything and finishes nothing ------ */

#define SLOW_LEN MIB
#define SLOW_N 200

struct hostile {
	struct sv_shm_hdr *hdr;
	size_t size;
	atomic_bool stop;
	unsigned long claims;
};

/* Our own socket's segment, as any process of our user can map it: the
 * registry entry of the QP's port names the fd. */
static struct sv_shm_hdr *map_own_ring(uint32_t qpn, size_t *size)
{
	char path[128], buf[128];
	int fd, n, ver, pid, ringfd;
	unsigned int uid;
	struct stat st;
	void *p;

	snprintf(path, sizeof(path), "/dev/shm/softverbs.%u/%lu.%u",
		 (unsigned int)geteuid(), netns_ino(), qpn >> 8);
	fd = open(path, O_RDONLY);
	REQUIRE(fd >= 0);
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	REQUIRE(n > 0);
	buf[n] = 0;
	REQUIRE(sscanf(buf, "softverbs-shm %d %d %u %d", &ver, &pid, &uid,
		       &ringfd) == 4);
	REQUIRE(pid == (int)getpid());
	REQUIRE(fstat(ringfd, &st) == 0);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 ringfd, 0);
	REQUIRE(p != MAP_FAILED);
	*size = (size_t)st.st_size;
	return p;
}

static void *hostile_main(void *arg)
{
	struct hostile *h = arg;
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	unsigned int j;

	while (!atomic_load(&h->stop)) {
		/* "I take jobs", whatever our engine says. */
		atomic_store(&h->hdr->helping, 1);
		for (j = 0; j < SV_HELP_JOBS; j++) {
			struct sv_help_job *job = &h->hdr->job[j];
			uint64_t w = atomic_load(&job->claim);
			uint32_t f = sv_help_front(w), b = sv_help_back(w);

			if (b <= f)
				continue;
			/* A running thread: nothing to revoke it for. */
			atomic_store(&job->tid, tid);
			if (atomic_compare_exchange_strong(
				    &job->claim, &w,
				    sv_help_word(sv_help_gen(w), f, f)))
				h->claims++; /* and never a chunk done */
		}
	}
	return NULL;
}

static void slowhelp_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct counters c;
	struct hx_ep ep;
	uint64_t i;

	stats_on();
	o.buf_len = 2 * SLOW_LEN;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B's hostile thread runs */
	for (i = 0; i < SLOW_N; i++)
		write_one(&ep, (i % 2) * SLOW_LEN, SLOW_LEN, 700 + i, i);
	hx_send_u64(fd, SLOW_N);
	CHECK(hx_recv_u64(fd) >= 1); /* the hostile thread claimed chunks */
	hx_sync(fd); /* B checked the bytes */
	close_counting(&ep, &c);
	CHECK(c.direct_write >= SLOW_N);
	CHECK(c.help_posted >= 1);
	/* Every claim it made was taken back after the bound. */
	CHECK(c.help_timeout >= 1);
}

static void slowhelp_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hostile h = { 0 };
	struct hx_ep ep;
	pthread_t th;
	uint64_t n;

	/* Our engine's own helper stays out: only the hostile one helps. */
	setenv("SOFTVERBS_HELP", "0", 1);
	o.buf_len = 2 * SLOW_LEN;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	h.hdr = map_own_ring(ep.qp->qp_num, &h.size);
	REQUIRE(pthread_create(&th, NULL, hostile_main, &h) == 0);
	hx_sync(fd);
	n = hx_recv_u64(fd);
	atomic_store(&h.stop, true);
	pthread_join(th, NULL);
	hx_log("hostile claims: %lu", h.claims);
	hx_send_u64(fd, h.claims);
	HX_CHECK_PATTERN(ep.buf + ((n - 2) % 2) * SLOW_LEN, SLOW_LEN,
			 700 + n - 2);
	HX_CHECK_PATTERN(ep.buf + ((n - 1) % 2) * SLOW_LEN, SLOW_LEN,
			 700 + n - 1);
	munmap(h.hdr, h.size);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- otheruser: no fast path between users -------------------------------- */

#define OTHER_LEN (512 * 1024)

static void otheruser_as(int fd, const struct hx_user *who)
{
	struct hx_opts o = hx_opts_default();
	struct counters c;
	struct hx_ep ep;

	if (who)
		hx_become(who);
	stats_on();
	o.buf_len = 2 * OTHER_LEN;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	write_one(&ep, 0, OTHER_LEN, 41, 1);
	/* READ B's second half (B filled it) into our second half. */
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 2,
				 ep.buf + OTHER_LEN, OTHER_LEN, ep.mr->lkey,
				 ep.peer.addr + OTHER_LEN, ep.peer.rkey, 0),
		    0);
	HX_EXPECT_T(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		    OTHER_LEN, 20000);
	HX_CHECK_PATTERN(ep.buf + OTHER_LEN, OTHER_LEN, 42);
	hx_send_u64(fd, 1);
	hx_sync(fd); /* B checked */
	close_counting(&ep, &c);
	CHECK(c.shm_other_user >= 1);
	CHECK_EQ(c.direct_write, 0);
	CHECK_EQ(c.shm_tx_pkts, 0);
}

static void otheruser_a(int fd)
{
	otheruser_as(fd, NULL);
}

/* The target: the squatter, in a user namespace of its own or not. */
static void otheruser_target(int fd, int ns)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	hx_become(&squatter);
	if (ns)
		hx_enter_userns(ns > 0);
	o.buf_len = 2 * OTHER_LEN;
	hx_ep_open(&ep, &o, fd);
	hx_fill(ep.buf + OTHER_LEN, OTHER_LEN, 42);
	hx_ep_connect(&ep);
	CHECK_EQ(hx_recv_u64(fd), 1);
	HX_CHECK_PATTERN(ep.buf, OTHER_LEN, 41);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void otheruser_b(int fd)
{
	otheruser_target(fd, 0);
}

static void otheruser_run_a(int fd)
{
	otheruser_as(fd, &victim);
}

static void otheruser_run_b(int fd)
{
	otheruser_target(fd, 1);
}

static void otheruser_unmapped_a(int fd)
{
	otheruser_as(fd, &victim);
}

static void otheruser_unmapped_b(int fd)
{
	otheruser_target(fd, -1);
}

/* ---- squat: another user's entries -------------------------------------- */

/* Remove a directory and the entries in it (one level: registries have
 * no subdirectories). */
static void rm_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;

	if (d) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(path);
}

/* The registry directories of uid (SV_SHM_DIR.<uid>, and the secret-named
 * SV_SHM_DIR.<uid>.<hex>) go, with their entries; the number left.  The
 * test users are real accounts that persist across runs: this is what
 * makes one "never ran" on this boot again.  (The secret itself is kept
 * under HOME or XDG_RUNTIME_DIR, which the cases that need a user who
 * never ran replace.) */
static int forget_user(uid_t uid)
{
	char prefix[32], path[PATH_MAX];
	size_t len;
	struct dirent *e;
	int left = 0;
	DIR *d;

	len = (size_t)snprintf(prefix, sizeof(prefix), "softverbs.%u",
			       (unsigned int)uid);
	for (int pass = 0; pass < 2; pass++) {
		d = opendir("/dev/shm");
		REQUIRE(d);
		while ((e = readdir(d)))
			if (!strncmp(e->d_name, prefix, len) &&
			    (e->d_name[len] == 0 || e->d_name[len] == '.')) {
				snprintf(path, sizeof(path), "/dev/shm/%s",
					 e->d_name);
				if (pass == 0)
					rm_dir(path);
				else
					left++;
			}
		closedir(d);
	}
	return left;
}

/* What the squatter writes in each entry it plants: "softverbs-shm 1 1
 * <squatter's uid> 3 4 -1 squat\n" (set in main). */
static char squat_mark[64];

/* Run fn as u in a child; its exit status. */
static int as_user(const struct hx_user *u, int (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		hx_become(u);
		_exit(fn());
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void ephemeral_ports(unsigned int *lo, unsigned int *hi)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	*lo = 32768;
	*hi = 60999;
	if (f) {
		if (fscanf(f, "%u %u", lo, hi) != 2) {
			*lo = 32768;
			*hi = 60999;
		}
		fclose(f);
	}
}

/* As the squatter: an entry for every ephemeral port in the old shared
 * registry, and an attempt at the victim's own directory. */
static int squat_entries(void)
{
	char path[128];
	unsigned int lo, hi, p, made = 0, theirs = 0;
	unsigned long ns = netns_ino();

	ephemeral_ports(&lo, &hi);
	if (mkdir("/dev/shm/softverbs", 01777) == 0)
		chmod("/dev/shm/softverbs", 01777);
	for (p = lo; p <= hi; p++) {
		int fd;

		snprintf(path, sizeof(path), "/dev/shm/softverbs/%lu.%u", ns,
			 p);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd >= 0) {
			if (write(fd, squat_mark, strlen(squat_mark)) > 0)
				made++;
			close(fd);
		}
		snprintf(path, sizeof(path), "/dev/shm/softverbs.%u/%lu.%u",
			 (unsigned int)victim.uid, ns, p);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd >= 0) {
			theirs++;
			close(fd);
		}
	}
	/* Their directory too, if they never made it: then it is ours. */
	snprintf(path, sizeof(path), "/dev/shm/softverbs.%u",
		 (unsigned int)victim.uid);
	if (mkdir(path, 0777) == 0)
		theirs++;
	printf("squatter: %u entries in /dev/shm/softverbs, %u in or of the victim's\n",
	       made, theirs);
	return theirs ? 1 : 0;
}

/* As the victim, before anything of ours runs: our directory exists
 * (a user who has run softverbs once on this boot has it; one an
 * earlier run left is ours: squat_a checks). */
static int victim_dir(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/shm/softverbs.%u",
		 (unsigned int)victim.uid);
	if (mkdir(path, 0700) && errno != EEXIST)
		return 1;
	return 0;
}

/* Remove what the squatter left (only its marked entries). */
static void unsquat(void)
{
	DIR *d = opendir("/dev/shm/softverbs");
	struct dirent *e;
	char buf[64];

	if (!d)
		return;
	while ((e = readdir(d))) {
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW);
		ssize_t n;

		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0 && (buf[n] = 0, !strcmp(buf, squat_mark)))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	/* The directory too (the squatter made it; softverbs no longer
	 * uses it), when nothing else is left in it. */
	rmdir("/dev/shm/softverbs");
}

static void squat_a_victim(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct counters c;
	struct hx_ep ep;

	hx_become(&victim);
	stats_on();
	o.buf_len = MIB;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	write_one(&ep, 0, MIB, 51, 1);
	hx_send_u64(fd, 1);
	hx_sync(fd);
	close_counting(&ep, &c);
	/* On the fast path despite the squatter. */
	CHECK(c.direct_write >= 1);
}

static void squat_a(int fd)
{
	pid_t pid;
	int ws;

	struct stat st;
	char dir[64];

	/* The victim has run before: its directory is its own. */
	snprintf(dir, sizeof(dir), "/dev/shm/softverbs.%u",
		 (unsigned int)victim.uid);
	if (!lstat(dir, &st) && st.st_uid != victim.uid)
		rm_dir(dir);
	REQUIRE(as_user(&victim, victim_dir) == 0);
	REQUIRE(lstat(dir, &st) == 0 && st.st_uid == victim.uid);
	CHECK_EQ(as_user(&squatter, squat_entries), 0);
	hx_send_u64(fd, 1); /* B may start */
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		squat_a_victim(fd);
		fflush(NULL);
		_exit(check_done());
	}
	REQUIRE(waitpid(pid, &ws, 0) == pid);
	CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	unsquat();
}

static void squat_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	CHECK_EQ(hx_recv_u64(fd), 1);
	hx_become(&victim);
	o.buf_len = MIB;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	CHECK_EQ(hx_recv_u64(fd), 1);
	HX_CHECK_PATTERN(ep.buf, MIB, 51);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- squatdir: another user made our directory first ---------------------- */

static int squat_dir(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/shm/softverbs.%u",
		 (unsigned int)late.uid);
	return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : 1;
}

/* Entries in our secret-named registry directory (SV_SHM_DIR.<uid>.<hex>,
 * ours, 0700), or -1 when there is no such directory. */
static int secret_entries(void)
{
	char prefix[64], path[PATH_MAX];
	DIR *d = opendir("/dev/shm"), *r;
	struct dirent *e;
	struct stat st;
	int n = -1;

	snprintf(prefix, sizeof(prefix), "softverbs.%u.", (unsigned)geteuid());
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)) &&
		    strlen(e->d_name) == strlen(prefix) + 32) {
			snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
			if (lstat(path, &st) || st.st_uid != geteuid() ||
			    (st.st_mode & 07777) != 0700)
				continue;
			r = opendir(path);
			for (n = 0; r && (e = readdir(r));)
				n += e->d_name[0] != '.';
			if (r)
				closedir(r);
			break;
		}
	if (d)
		closedir(d);
	return n;
}

/* As the late user: open the device and a QP (a socket: its ring is
 * registered, or not), with stderr in a file; 0 when the refusal was
 * said and then either the fast path is off (no secret: HOME is not
 * ours) or the ring is registered under the secret name. */
static int late_user_as(bool home)
{
	char path[] = "/tmp/rc_trust_late.XXXXXX", buf[4096];
	char hdir[] = "/tmp/rc_trust_home.XXXXXX", cmd[PATH_MAX + 16];
	char said[96];
	struct hx_opts o = hx_opts_default();
	int tmp = mkstemp(path), ok, entries;
	struct hx_ep ep;
	ssize_t n;

	if (tmp < 0 || (home && !mkdtemp(hdir)))
		return 2;
	setenv("HOME", home ? hdir : "/", 1);
	unsetenv("XDG_RUNTIME_DIR");
	fflush(stderr);
	dup2(tmp, 2);
	o.buf_len = 4096;
	hx_ep_open(&ep, &o, -1);
	entries = secret_entries();
	hx_ep_close(&ep);
	fflush(stderr);
	n = pread(tmp, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	unlink(path);
	snprintf(said, sizeof(said), "belongs to uid %u, not to us (uid %u)",
		 (unsigned int)squatter.uid, (unsigned int)late.uid);
	ok = strstr(buf, said) != NULL;
	printf("late user's log (%s HOME): %s", home ? "own" : "no", buf);
	printf("late user's secret registry: %d entries\n", entries);
	if (home) {
		ok = ok && strstr(buf, "instead") && entries >= 1;
		snprintf(cmd, sizeof(cmd), "rm -rf %s", hdir);
		if (system(cmd))
			ok = false;
	} else {
		ok = ok && entries < 0;
	}
	return ok ? 0 : 1;
}

static int late_user(void)
{
	return late_user_as(false);
}

static int late_user_home(void)
{
	return late_user_as(true);
}

static void squatdir_a(int fd)
{
	struct stat st;
	char path[64];

	/* The late user never ran: whatever an earlier run left of it
	 * goes, and the directory is made by the squatter. */
	REQUIRE(forget_user(late.uid) == 0);
	REQUIRE(as_user(&squatter, squat_dir) == 0);
	snprintf(path, sizeof(path), "/dev/shm/softverbs.%u",
		 (unsigned int)late.uid);
	REQUIRE(lstat(path, &st) == 0 && st.st_uid == squatter.uid);
	CHECK_EQ(as_user(&late, late_user), 0);
	CHECK_EQ(as_user(&late, late_user_home), 0);
	/* The squatter's directory and the late user's secret-named
	 * registry go. */
	CHECK_EQ(forget_user(late.uid), 0);
	hx_sync(fd);
}

static void squatdir_b(int fd)
{
	hx_sync(fd);
}

/* ---- squatroot: another user made root's directory first ------------------ */

#define ROOT_DIR "/dev/shm/softverbs.0"
#define ROOT_SAVED "/dev/shm/.softverbs.0.rc_trust"

static int squat_root_dir(void)
{
	return mkdir(ROOT_DIR, 0777) == 0 ? 0 : 1;
}

static void squatroot_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	char path[] = "/tmp/rc_trust_root.XXXXXX", line[512];
	int tmp = mkstemp(path), saved;
	struct counters c;
	struct hx_ep ep;
	struct stat st;
	bool said = false;
	FILE *f;

	/* Our real directory goes out of the way (entries of processes of
	 * this test only: ctest runs one test at a time), the squatter
	 * makes the name its own. */
	rm_dir(ROOT_SAVED);
	if (!lstat(ROOT_DIR, &st))
		REQUIRE(rename(ROOT_DIR, ROOT_SAVED) == 0);
	REQUIRE(as_user(&squatter, squat_root_dir) == 0);
	REQUIRE(lstat(ROOT_DIR, &st) == 0 && st.st_uid == squatter.uid);

	stats_on();
	REQUIRE(tmp >= 0);
	fflush(stderr);
	saved = dup(2);
	dup2(tmp, 2);
	o.buf_len = MIB;
	hx_ep_open(&ep, &o, fd); /* moves it aside, makes ours */
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fdopen(tmp, "r");
	REQUIRE(f);
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		fputs(line, stderr);
		if (strstr(line, "was not ours: moved aside"))
			said = true;
	}
	fclose(f);
	unlink(path);
	CHECK(said);
	CHECK(lstat(ROOT_DIR, &st) == 0 && st.st_uid == 0 &&
	      (st.st_mode & 07777) == 0700);
	hx_send_u64(fd, 1); /* B may open its device */
	hx_ep_connect(&ep);
	write_one(&ep, 0, MIB, 61, 1);
	hx_send_u64(fd, 1);
	hx_sync(fd);
	close_counting(&ep, &c);
	CHECK(c.direct_write >= 1); /* root kept its fast path */
	/* The squatter's directory, moved aside, goes. */
	{
		char aside[64];

		snprintf(aside, sizeof(aside),
			 "/dev/shm/.softverbs.0.squatted.%d", (int)getpid());
		CHECK(rmdir(aside) == 0);
	}
	rm_dir(ROOT_SAVED);
}

static void squatroot_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	CHECK_EQ(hx_recv_u64(fd), 1);
	o.buf_len = MIB;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	CHECK_EQ(hx_recv_u64(fd), 1);
	HX_CHECK_PATTERN(ep.buf, MIB, 61);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(slowhelp, 90),
	HX_CASE(otheruser, 60),
	HX_CASE(squat, 90),
	HX_CASE(squatdir, 30),
	HX_CASE(squatroot, 60),
	HX_CASE(otheruser_run, 60),
	HX_CASE(otheruser_unmapped, 60),
	{ 0 },
};

/* The three users of the root cases; exits 77 when they cannot be had. */
static void users(void)
{
	squatter = hx_test_user(1);
	victim = hx_test_user(2);
	late = hx_test_user(3);
	if (squatter.uid == victim.uid || squatter.uid == late.uid ||
	    victim.uid == late.uid)
		hx_die("test users %s, %s and %s must be three accounts (uids %u, %u, %u)",
		       squatter.name, victim.name, late.name,
		       (unsigned int)squatter.uid, (unsigned int)victim.uid,
		       (unsigned int)late.uid);
	snprintf(squat_mark, sizeof(squat_mark),
		 "softverbs-shm 1 1 %u 3 4 -1 squat\n",
		 (unsigned int)squatter.uid);
}

static int done(void)
{
	printf("[%s] ", hx_role);
	return check_done();
}

int main(int argc, char **argv)
{
	const char *help = getenv("SOFTVERBS_HELP");

	if (!hx_fastpath_expected()) {
		printf("SKIP: the fast path is off here\n");
		return 77;
	}
	if (argc > 1 && strcmp(argv[1], "slowhelp") && geteuid() != 0) {
		printf("SKIP: %s needs root (it runs processes as other users)\n",
		       argv[1]);
		return 77;
	}
	if (geteuid() == 0 && (argc == 1 || (strcmp(argv[1], "slowhelp") &&
					     strcmp(argv[1], "--list"))))
		users();
	if (argc > 1 && !strcmp(argv[1], "slowhelp") && help &&
	    !strcmp(help, "0")) {
		printf("SKIP: SOFTVERBS_HELP=0\n");
		return 77;
	}
	return hx_main(argc, argv, cases, done);
}
