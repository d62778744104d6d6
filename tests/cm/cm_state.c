/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The rdma_cm id's state machine (src/cm/state.c): the lifecycles the CM
 * takes ids through are allowed step by step, final states stay final, and
 * a transition outside the table is logged with both states' names and
 * refused (release build: the old state is kept) or aborts (debug build).
 * state.c is linked in directly: its symbols are hidden in librdmacm.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cm/cm.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Take an id along path[0] -> path[1] -> ...; true if every step passes. */
static bool walk(const enum sv_cm_state *path, size_t n)
{
	struct sv_cm_id id;

	memset(&id, 0, sizeof(id));
	id.state = path[0];
	for (size_t i = 1; i < n; i++) {
		if (!sv_cm_id_set_state(&id, path[i]) || id.state != path[i]) {
			fprintf(stderr, "step %zu: %s -> %s refused\n", i,
				sv_cm_state_name(path[i - 1]),
				sv_cm_state_name(path[i]));
			return false;
		}
	}
	return true;
}

#define WALK(...)                                             \
	do {                                                  \
		const enum sv_cm_state p[] = { __VA_ARGS__ }; \
		CHECK(walk(p, N(p)));                         \
	} while (0)

static void test_lifecycles(void)
{
	/* Active RC: resolve, connect, REP, RTU, rdma_disconnect, DREP. */
	WALK(SV_CM_IDLE, SV_CM_ADDR_RESOLVED, SV_CM_ROUTE_RESOLVED,
	     SV_CM_CONNECT, SV_CM_REP_RCVD, SV_CM_ESTABLISHED, SV_CM_DREQ_SENT,
	     SV_CM_DISCONNECTED);
	/* Bound first, resolved twice, once with ADDR_ERROR, then a REJ. */
	WALK(SV_CM_IDLE, SV_CM_ADDR_BOUND, SV_CM_ADDR_BOUND,
	     SV_CM_ADDR_RESOLVED, SV_CM_ADDR_RESOLVED, SV_CM_ADDR_BOUND,
	     SV_CM_ADDR_RESOLVED, SV_CM_ROUTE_RESOLVED, SV_CM_CONNECT,
	     SV_CM_FAILED);
	/* Active UD: the SIDR_REP establishes. */
	WALK(SV_CM_IDLE, SV_CM_ADDR_RESOLVED, SV_CM_ROUTE_RESOLVED,
	     SV_CM_CONNECT, SV_CM_ESTABLISHED);
	/* Active RC whose application abandons after the REP. */
	WALK(SV_CM_ROUTE_RESOLVED, SV_CM_CONNECT, SV_CM_REP_RCVD, SV_CM_FAILED);
	/* Passive RC: REQ, accept, RTU, the peer's DREQ. */
	WALK(SV_CM_IDLE, SV_CM_REQ_RCVD, SV_CM_REP_SENT, SV_CM_ESTABLISHED,
	     SV_CM_DISCONNECTED);
	/* Passive UD: the accept's SIDR_REP establishes. */
	WALK(SV_CM_IDLE, SV_CM_REQ_RCVD, SV_CM_ESTABLISHED);
	/* Rejected by the application, or no RTU in time. */
	WALK(SV_CM_IDLE, SV_CM_REQ_RCVD, SV_CM_FAILED);
	WALK(SV_CM_REQ_RCVD, SV_CM_REP_SENT, SV_CM_FAILED);
	/* A listener, bound by rdma_listen itself. */
	WALK(SV_CM_IDLE, SV_CM_ADDR_BOUND, SV_CM_LISTEN);
}

static void test_table(void)
{
	const enum sv_cm_state final[] = { SV_CM_LISTEN, SV_CM_DISCONNECTED,
					   SV_CM_FAILED };

	for (int s = 0; s < SV_CM_NSTATES; s++) {
		CHECK(strcmp(sv_cm_state_name(s), "?") != 0);
		for (int t = 0; t < s; t++)
			CHECK(strcmp(sv_cm_state_name(s),
				     sv_cm_state_name(t)) != 0);
	}
	CHECK(!strcmp(sv_cm_state_name(SV_CM_NSTATES), "?"));
	CHECK(!strcmp(sv_cm_state_name(-1), "?"));
	for (size_t i = 0; i < N(final); i++)
		for (int t = 0; t < SV_CM_NSTATES; t++)
			CHECK(!sv_cm_state_may(final[i], t));
	/* No skipping: resolve before connecting, accept before ESTABLISHED
	 * (RC), no way back to IDLE. */
	CHECK(!sv_cm_state_may(SV_CM_IDLE, SV_CM_CONNECT));
	CHECK(!sv_cm_state_may(SV_CM_ADDR_RESOLVED, SV_CM_CONNECT));
	CHECK(!sv_cm_state_may(SV_CM_ESTABLISHED, SV_CM_IDLE));
	CHECK(!sv_cm_state_may(SV_CM_LISTEN, SV_CM_REQ_RCVD));
	CHECK(!sv_cm_state_may(SV_CM_IDLE, SV_CM_NSTATES));
}

/* FAILED -> ESTABLISHED in a child whose stderr we read. */
static void test_forbidden(void)
{
	char buf[512] = "";
	int fds[2], st;
	ssize_t n, len = 0;
	pid_t pid;

	REQUIRE(pipe(fds) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		struct sv_cm_id id;
		bool ok;

		dup2(fds[1], 2);
		memset(&id, 0, sizeof(id));
		id.state = SV_CM_FAILED;
		ok = sv_cm_id_set_state(&id, SV_CM_ESTABLISHED);
		_exit(!ok && id.state == SV_CM_FAILED ? 0 : 1);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = '\0';
	close(fds[0]);
	REQUIRE(waitpid(pid, &st, 0) == pid);
#ifdef NDEBUG
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#else
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#endif
	CHECK(strstr(buf, "FAILED -> ESTABLISHED") != NULL);
	fprintf(stderr, "child said: %s", buf);
}

int main(void)
{
	test_table();
	test_lifecycles();
	test_forbidden();
	return check_done();
}
