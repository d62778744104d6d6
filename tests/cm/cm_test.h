/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Helpers for the librdmacm tests (tests/cm): a case table whose cases run
 * as separate processes with a watchdog, two-process cases joined by a
 * control socket (fork happens before either side touches librdmacm), and
 * event waits with deadlines so that nothing can hang.
 *
 * A case is CT_CASE(name, seconds): name##_a runs in the parent, name##_b
 * (or NULL) in a forked child.  Exit code 77 from a side means "skipped".
 */
#ifndef SV_TESTS_CM_TEST_H
#define SV_TESTS_CM_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const char *ct_role = "A";

static inline uint64_t ct_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void ct_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[%s %d] ", ct_role, (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define ct_die(...)                  \
	do {                         \
		ct_log(__VA_ARGS__); \
		exit(1);             \
	} while (0)

/* ---- control socket ------------------------------------------------------ */

static inline void ct_send(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		ct_die("control write: %s", strerror(errno));
}

static inline void ct_recv(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);

		if (r <= 0)
			ct_die("control read: peer gone");
		got += (size_t)r;
	}
}

static inline void ct_send_u32(int fd, uint32_t v)
{
	ct_send(fd, &v, sizeof(v));
}

static inline uint32_t ct_recv_u32(int fd)
{
	uint32_t v;

	ct_recv(fd, &v, sizeof(v));
	return v;
}

static inline void ct_sync(int fd)
{
	ct_send_u32(fd, 0x5a5a);
	if (ct_recv_u32(fd) != 0x5a5a)
		ct_die("control: bad sync");
}

/* ---- events ----------------------------------------------------------------- */

/* Next event of the channel within timeout_ms, or NULL. */
static inline struct rdma_cm_event *ct_get_event(struct rdma_event_channel *ch,
						 int timeout_ms)
{
	struct rdma_cm_event *ev;
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	uint64_t end = ct_now_ms() + timeout_ms;

	for (;;) {
		int left = (int)(end - ct_now_ms());

		if (left < 0)
			left = 0;
		if (poll(&p, 1, left) == 1)
			break;
		if (ct_now_ms() >= end)
			return NULL;
	}
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/* Wait for an event of this type and status; on mismatch or timeout
 * record a failure and return NULL.  The caller acks what it gets. */
static inline struct rdma_cm_event *ct_expect_at(const char *file, int line,
						 struct rdma_event_channel *ch,
						 enum rdma_cm_event_type type,
						 int status, int timeout_ms)
{
	struct rdma_cm_event *ev = ct_get_event(ch, timeout_ms);

	if (!ev) {
		check_failed++;
		fprintf(stderr,
			"%s:%d: [%s] no event within %d ms (expected %s)\n",
			file, line, ct_role, timeout_ms, rdma_event_str(type));
		return NULL;
	}
	if (ev->event != type || ev->status != status) {
		check_failed++;
		fprintf(stderr,
			"%s:%d: [%s] event %s status %d, expected %s status %d\n",
			file, line, ct_role, rdma_event_str(ev->event),
			ev->status, rdma_event_str(type), status);
		rdma_ack_cm_event(ev);
		return NULL;
	}
	check_passed++;
	return ev;
}

#define CT_EXPECT(ch, type, status) \
	ct_expect_at(__FILE__, __LINE__, ch, type, status, 5000)
#define CT_EXPECT_T(ch, type, status, ms) \
	ct_expect_at(__FILE__, __LINE__, ch, type, status, ms)

/* Expect and ack at once. */
#define CT_EXPECT_ACK(ch, type, status)                                 \
	do {                                                            \
		struct rdma_cm_event *_e = CT_EXPECT(ch, type, status); \
		if (_e)                                                 \
			rdma_ack_cm_event(_e);                          \
	} while (0)

/* Attach a bound id to the device by resolving dst, as mckey and most
 * applications do before they use it: a loopback bind, like the
 * wildcard's, attaches none (the kernel's rdma_cm, cma_any_addr).  The
 * ADDR_RESOLVED event is taken (a synchronous id, ch NULL, holds it until
 * its next call). */
static inline void ct_attach(struct rdma_event_channel *ch,
			     struct rdma_cm_id *id,
			     const struct sockaddr_in *dst)
{
	struct sockaddr_in d = *dst;

	REQUIRE(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 1000) == 0);
	if (ch)
		CT_EXPECT_ACK(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	REQUIRE(id->verbs != NULL);
}

/* No event for ms. */
#define CT_EXPECT_NONE(ch, ms)                                                 \
	do {                                                                   \
		struct rdma_cm_event *_e = ct_get_event(ch, ms);               \
		if (!_e) {                                                     \
			check_passed++;                                        \
		} else {                                                       \
			check_failed++;                                        \
			fprintf(stderr,                                        \
				"%s:%d: [%s] unexpected event %s status %d\n", \
				__FILE__, __LINE__, ct_role,                   \
				rdma_event_str(_e->event), _e->status);        \
			rdma_ack_cm_event(_e);                                 \
		}                                                              \
	} while (0)

/* -1 with this errno. */
#define CHECK_ERRNO(expr, err)                                                                           \
	do {                                                                                             \
		errno = 0;                                                                               \
		int _r = (expr);                                                                         \
		int _e = errno;                                                                          \
		if (_r == -1 && _e == (err)) {                                                           \
			check_passed++;                                                                  \
		} else {                                                                                 \
			check_failed++;                                                                  \
			fprintf(stderr,                                                                  \
				"%s:%d: [%s] %s returned %d errno %d (%s), expected -1 errno %d (%s)\n", \
				__FILE__, __LINE__, ct_role, #expr, _r, _e,                              \
				strerror(_e), (err), strerror(err));                                     \
		}                                                                                        \
	} while (0)

/* ---- addresses ------------------------------------------------------------- */

static inline struct sockaddr_in ct_addr4(const char *ip, uint16_t port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/* A listener on 127.0.0.1 with an ephemeral port; returns the port. */
static inline uint16_t ct_listen(struct rdma_event_channel *ch,
				 struct rdma_cm_id **id,
				 enum rdma_port_space ps)
{
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);

	if (rdma_create_id(ch, id, NULL, ps))
		ct_die("rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(*id, (struct sockaddr *)&a))
		ct_die("rdma_bind_addr: %s", strerror(errno));
	if (rdma_listen(*id, 8))
		ct_die("rdma_listen: %s", strerror(errno));
	return ntohs(rdma_get_src_port(*id));
}

/* Resolve address and route towards 127.0.0.1:port (events consumed). */
static inline int ct_resolve(struct rdma_event_channel *ch,
			     struct rdma_cm_id *id, uint16_t port)
{
	struct sockaddr_in d = ct_addr4("127.0.0.1", port);
	struct rdma_cm_event *e;

	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000))
		return -1;
	e = CT_EXPECT(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (!e)
		return -1;
	rdma_ack_cm_event(e);
	if (rdma_resolve_route(id, 2000))
		return -1;
	e = CT_EXPECT(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (!e)
		return -1;
	rdma_ack_cm_event(e);
	return 0;
}

/* ---- cases and processes ------------------------------------------------------ */

struct ct_case {
	const char *name;
	void (*a)(int fd);
	void (*b)(int fd);
	unsigned timeout_s;
};

#define CT_CASE(name, t)                     \
	{                                    \
#name, name##_a, name##_b, t \
	}
#define CT_CASE1(name, t)                \
	{                                \
#name, name##_a, NULL, t \
	}

static inline int ct_done(void)
{
	printf("[%s] ", ct_role);
	return check_done();
}

static inline pid_t ct_spawn(void (*fn)(int), unsigned timeout_s, int *fd)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		ct_die("socketpair: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		ct_die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(sv[0]);
		ct_role = "B";
		alarm(timeout_s);
		fn(sv[1]);
		exit(ct_done());
	}
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

/* Exit status of a child (0 ok, 77 skipped), killing it after timeout_s. */
static inline int ct_wait(pid_t pid, unsigned timeout_s)
{
	uint64_t end = ct_now_ms() + timeout_s * 1000ull;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (r < 0)
			return 1;
		if (ct_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			ct_log("child %d killed after %u s", (int)pid,
			       timeout_s);
			return 1;
		}
		usleep(10000);
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 1;
}

static inline int ct_run_case(const struct ct_case *c)
{
	pid_t pid = -1;
	int fd = -1, ra, rb = 0;

	if (c->b)
		pid = ct_spawn(c->b, c->timeout_s, &fd);
	alarm(c->timeout_s + 5);
	c->a(fd);
	ra = ct_done();
	if (c->b) {
		close(fd);
		rb = ct_wait(pid, c->timeout_s + 5);
	}
	if (ra == 77 || rb == 77)
		return 77;
	return ra || rb;
}

/* Skip: both sides call it when a capability is missing. */
static inline void ct_skip(const char *why)
{
	ct_log("SKIP: %s", why);
	fflush(NULL);
	exit(77);
}

static inline int ct_main(int argc, char **argv, const struct ct_case *cases)
{
	const struct ct_case *c;
	int fails = 0;

	signal(SIGPIPE, SIG_IGN);
	for (c = cases; c->name; c++) {
		pid_t pid;
		int st;

		if (argc > 1 && strcmp(argv[1], c->name))
			continue;
		if (argc > 1)
			return ct_run_case(c);
		/* All cases: each in its own process. */
		fflush(NULL);
		pid = fork();
		if (pid == 0)
			exit(ct_run_case(c));
		waitpid(pid, &st, 0);
		st = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
		printf("%s: %s\n", c->name,
		       st == 0	? "ok" :
		       st == 77 ? "skipped" :
				  "FAILED");
		fails += st != 0 && st != 77;
	}
	return fails ? 1 : 0;
}

#define CT_MAIN(cases)                             \
	int main(int argc, char **argv)            \
	{                                          \
		return ct_main(argc, argv, cases); \
	}

#endif
