/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* util/uid.c: a uid the kernel shows is ours only when no other user can
 * show the same (issue #37).  Each namespace in a child of its own:
 *   the initial namespace: our uid is ours, the overflow uid is not
 *     (unless it is our uid: as root, a child that becomes 65534 still
 *     tells it apart, the namespace maps every uid);
 *   a user namespace mapping our uid to itself (as `softverbs run`): ours
 *     is ours, the overflow uid (every unmapped user) is not;
 *   a user namespace mapping nothing (`unshare --user`): our uid shows as
 *     the overflow uid, and then nothing is ours, our uid included. */
#include "util/uid.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void put(const char *path, const char *text)
{
	int f = open(path, O_WRONLY);

	REQUIRE(f >= 0);
	REQUIRE(write(f, text, strlen(text)) == (ssize_t)strlen(text));
	close(f);
}

/* fn in a child of its own; its verdict is the exit status (77: the
 * namespace could not be made here). */
static void in_child(const char *what, int (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(fn());
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("note: %s skipped (no user namespaces here)\n", what);
		return;
	}
	printf("%s: %s\n", what,
	       WIFEXITED(st) && !WEXITSTATUS(st) ? "ok" : "FAILED");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int initial(void)
{
	CHECK(sv_uid_mine(geteuid()));
	CHECK(!sv_uid_mine(geteuid() + 1));
	CHECK(!sv_uid_ambiguous());
	if (geteuid() != 65534)
		CHECK(!sv_uid_mine(65534));
	return check_done();
}

static int initial_overflow(void)
{
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 77;
	CHECK(sv_uid_mine(65534));
	CHECK(!sv_uid_ambiguous());
	CHECK(!sv_uid_unmapped(65534));
	return check_done();
}

static int mapped(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char m[64];

	if (unshare(CLONE_NEWUSER))
		return 77;
	put("/proc/self/setgroups", "deny");
	snprintf(m, sizeof(m), "%u %u 1", (unsigned)uid, (unsigned)uid);
	put("/proc/self/uid_map", m);
	snprintf(m, sizeof(m), "%u %u 1", (unsigned)gid, (unsigned)gid);
	put("/proc/self/gid_map", m);
	CHECK_EQ(geteuid(), uid);
	CHECK(sv_uid_mine(uid));
	CHECK(!sv_uid_ambiguous());
	CHECK(!sv_uid_mine(65534));
	CHECK(sv_uid_unmapped(65534));
	return check_done();
}

static int unmapped(void)
{
	if (unshare(CLONE_NEWUSER))
		return 77;
	CHECK_EQ(geteuid(), (uid_t)65534);
	CHECK(sv_uid_ambiguous());
	CHECK(!sv_uid_mine(65534));
	CHECK(!sv_uid_mine(geteuid()));
	return check_done();
}

int main(void)
{
	in_child("initial namespace", initial);
	if (geteuid() == 0)
		in_child("initial namespace as uid 65534", initial_overflow);
	in_child("namespace mapping our uid", mapped);
	in_child("namespace mapping nothing", unmapped);
	return check_done();
}
