/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Multi-process test harness for the RC transport, through the public verbs
 * API only (<infiniband/verbs.h>, linked against our libibverbs).
 *
 * A test program is a table of cases; each case runs in two processes, "A"
 * (the parent, usually the requester) and "B" (a forked child), joined by a
 * control socket (a socketpair) over which they exchange QPN, GID, PSN,
 * buffer address, rkey and lengths, and synchronise.  The fork happens
 * before either side touches the verbs library.  Every process has an
 * alarm() watchdog, the child dies with its parent, and a peer that exits
 * early is seen as EOF on the control socket, so no case can hang.
 *
 * Infrastructure failures (cannot open the device, create a QP...) are
 * fatal in harness.c; the assertions below (static inline, using the test
 * file's check.h counters) record results and go on.
 */
#ifndef SV_TESTS_HARNESS_H
#define SV_TESTS_HARNESS_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "check.h"

/* ---- endpoint options -------------------------------------------------- */

struct hx_opts {
	size_t buf_len; /* registered buffer (page aligned, zeroed) */
	int mr_access; /* ibv_reg_mr access flags for the buffer */
	int qp_access; /* qp_access_flags set in INIT */
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
	uint32_t max_inline;
	int send_cqe, recv_cqe; /* recv_cqe 0: one CQ for both queues */
	bool sq_sig_all;
	bool channel; /* a completion channel behind both CQs */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	int gid_index; /* -1: $HX_GID_ADDR, $HX_GID_INDEX or 127.0.0.1 */
	int64_t psn; /* -1: random 24-bit start PSN */
	bool no_mr; /* do not allocate/register a buffer */
	enum ibv_mtu path_mtu; /* 0: the smaller of both ports' active_mtu */
	const char *gid_addr; /* pick the GID of this IP address */
	uint8_t tclass; /* ah_attr.grh.traffic_class at RTR */
};

/* Defaults: 1 MiB buffer with all access rights, 64-deep queues, 4 SGEs,
 * 256-entry CQ, rnr_retry 7, retry_cnt 7, timeout 14, rd_atomic 16. */
struct hx_opts hx_opts_default(void);

/* What one side tells the other. */
struct hx_remote {
	uint32_t qpn;
	uint32_t psn;
	union ibv_gid gid;
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t mtu; /* enum ibv_mtu */
};

struct hx_ep {
	struct hx_opts o;
	int fd; /* control socket to the peer */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq; /* equal unless o.recv_cqe */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid_index;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	uint32_t mtu_bytes;
	uint32_t psn;
	struct ibv_qp_cap cap; /* what create_qp really gave */
	struct hx_remote peer;
};

/* Open the device, PD, CQ(s), QP (moved to INIT) and MR.  Fatal on error. */
void hx_ep_open(struct hx_ep *ep, const struct hx_opts *o, int fd);
/* Create a fresh QP (INIT) on the same PD/CQs, destroying the old one. */
void hx_ep_new_qp(struct hx_ep *ep);
/* Exchange hx_remote with the peer (both sides call it). */
void hx_ep_exchange(struct hx_ep *ep);
/* INIT->RTR and RTR->RTS towards ep->peer; return the ibv_modify_qp rc. */
int hx_ep_rtr(struct hx_ep *ep);
int hx_ep_rts(struct hx_ep *ep);
/* exchange + RTR + RTS + barrier: both QPs are in RTS on return.  Fatal. */
void hx_ep_connect(struct hx_ep *ep);
/* An RC QP on ep's PD and CQs receiving on srq, moved to INIT.  Fatal. */
struct ibv_qp *hx_ep_srq_qp(struct hx_ep *ep, struct ibv_srq *srq,
			    uint32_t max_send_wr);
/* After hx_ep_connect: q[i] (in INIT) connected to the peer's q[i] of the
 * same call (both sides make it with the same n), RTR, RTS, barrier. */
void hx_ep_connect_more(struct hx_ep *ep, struct ibv_qp **q, int n);
/* Tear down everything; returns the number of verbs that failed. */
int hx_ep_close(struct hx_ep *ep);
/* hx_ep_close (checked) with SOFTVERBS_STATS=1 set before the device was
 * opened: sums[i] is the engine's counter names[i] (the list ends with
 * NULL), summed over the contexts it prints; each sum is logged. */
void hx_ep_close_counters(struct hx_ep *ep, const char *const *names,
			  unsigned long long *sums);
/* The same for one counter. */
unsigned long long hx_ep_close_counter(struct hx_ep *ep, const char *name);
/* Is the one-host fast path (the shm link, its channels and one-copy
 * placement) expected between a parent and its child here?  Not with
 * SOFTVERBS_FASTPATH=0, nor where Yama forbids a non-root process to
 * attach to its parent (ptrace_scope 1 allows the parent only; 2 and 3
 * neither). */
bool hx_fastpath_expected(void);
/* Wait (up to 1 s) until process pid is stopped (SIGSTOP: state T or t
 * in /proc/PID/stat); false if it never is. */
bool hx_wait_stopped(pid_t pid);
enum ibv_qp_state hx_qp_state(struct ibv_qp *qp);
enum ibv_qp_state hx_qp_state_wait(struct ibv_qp *qp, enum ibv_qp_state want,
				   int timeout_ms);

/* ---- posting (single SGE helpers) -------------------------------------- */

int hx_post_send(struct hx_ep *ep, enum ibv_wr_opcode op, unsigned flags,
		 uint64_t wr_id, void *laddr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey, uint32_t imm_host);
int hx_post_atomic(struct hx_ep *ep, enum ibv_wr_opcode op, unsigned flags,
		   uint64_t wr_id, void *laddr, uint32_t lkey, uint64_t raddr,
		   uint32_t rkey, uint64_t compare_add, uint64_t swap);
int hx_post_recv(struct hx_ep *ep, uint64_t wr_id, void *addr, uint32_t len,
		 uint32_t lkey);

/* Poll until n completions or timeout_ms; returns how many were read. */
int hx_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms);
/* Wait on a completion channel fd; 1 readable, 0 timeout. */
int hx_wait_fd(int fd, int timeout_ms);

/* ---- control socket ----------------------------------------------------- */

void hx_send(int fd, const void *p, size_t len);
void hx_recv(int fd, void *p, size_t len); /* EOF: peer died -> exit(1) */
void hx_send_u64(int fd, uint64_t v);
uint64_t hx_recv_u64(int fd);
void hx_sync(int fd); /* barrier: both call it */

/* ---- data patterns ------------------------------------------------------ */

/* Deterministic bytes: fill, and first mismatch offset (or -1). */
void hx_fill(void *p, size_t len, uint64_t seed);
int64_t hx_verify(const void *p, size_t len, uint64_t seed);
/* Same pattern viewed at an offset (for scatter/gather checks). */
uint8_t hx_pattern_byte(uint64_t seed, size_t off);

/* Large zeroed page-aligned buffer (mmap), and its release. */
void *hx_alloc(size_t len);
void hx_free(void *p, size_t len);

uint64_t hx_now_ms(void);
void hx_msleep(unsigned ms);
void hx_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hx_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
extern const char *hx_role; /* "A" or "B" (or "C"...) */
uint32_t hx_mtu_bytes(enum ibv_mtu m);

/* Move this (still single-threaded) process into network namespace
 * /var/run/netns/<name>; fatal on error. */
void hx_enter_netns(const char *name);

/* Find the GID index whose address is this IPv4/IPv6 string, or -1. */
int hx_gid_index_of(struct ibv_context *ctx, const char *ip);

/* ---- ordinary test users ------------------------------------------------ */

/*
 * Test user n (1, 2 or 3): the account $SV_TEST_USER<n>, else svtest<n>,
 * the accounts tests/users.sh uses (same names, same useradd, same lock
 * file, so shell and C tests share them).  Made with useradd when run as
 * root and missing.  Never nobody: its uid is the kernel's overflow id,
 * the id an unmapped user namespace shows, so a namespace bug would hide
 * behind it; a test user whose uid is 0 or the overflow id is fatal.
 * When the account neither exists nor can be made, prints "SKIP: <why>"
 * and exits 77: call it before hx_main forks.
 */
struct hx_user {
	char name[64];
	char home[256];
	uid_t uid;
	gid_t gid; /* the account's own group (getpwnam) */
};
struct hx_user hx_test_user(int n);
/* Become u for good (root only), as a process started as u is: u's
 * groups, uid and gid, dumpable, HOME, USER and LOGNAME of u and no
 * XDG_RUNTIME_DIR (root's is not u's).  Fatal on error. */
void hx_become(const struct hx_user *u);
/* Enter a user namespace of our own, before the library is used: one
 * that maps our uid and gid to themselves, as `softverbs run` makes for
 * an ordinary user (map), or one that maps nothing (`unshare --user`:
 * every uid, ours included, then shows as the overflow uid).  Fatal on
 * error. */
void hx_enter_userns(bool map);

/* ---- process structure ------------------------------------------------- */

struct hx_case {
	const char *name;
	void (*a)(int fd);
	void (*b)(int fd);
	unsigned timeout_s; /* watchdog for both processes (0: 30 s) */
};

/* Fork a child running fn(fd) with role name r; returns its pid and the
 * parent's end of the control socket.  The child exits with done(). */
pid_t hx_spawn(const char *r, void (*fn)(int fd), int (*done)(void),
	       unsigned timeout_s, int *fd);
/* Wait for a child; its exit status (0 ok), killing it after timeout_s. */
int hx_wait(pid_t pid, unsigned timeout_s);
/* Run one case: A in this process, B in a child.  0 = both passed. */
int hx_run_case(const struct hx_case *c, int (*done)(void));
/* argv[1] = case name (or none: every case, each in its own process). */
int hx_main(int argc, char **argv, const struct hx_case *cases,
	    int (*done)(void));

#define HX_CASE(name, t)                     \
	{                                    \
#name, name##_a, name##_b, t \
	}

/* Expands, in a test file, to main() running its case table. */
#define HX_MAIN(cases)                                       \
	static int hx_done_(void)                            \
	{                                                    \
		printf("[%s] ", hx_role);                    \
		return check_done();                         \
	}                                                    \
	int main(int argc, char **argv)                      \
	{                                                    \
		return hx_main(argc, argv, cases, hx_done_); \
	}

/* ---- assertions (count into the including file's check.h counters) ---- */

static inline void hx_fail_(const char *file, int line)
{
	check_failed++;
	(void)file;
	(void)line;
}

/*
 * Poll one completion from cq (deadline timeout_ms) and check it: wr_id,
 * status, qp_num always; opcode (if >= 0) and byte_len (if >= 0) only for
 * successful completions, as ibv_poll_cq(3) defines validity.
 */
static inline bool hx_expect_at(const char *file, int line, struct ibv_cq *cq,
				struct ibv_wc *out, uint64_t wr_id,
				enum ibv_wc_status st, int opcode,
				int64_t byte_len, int timeout_ms)
{
	struct ibv_wc wc;
	bool ok = true;

	memset(&wc, 0, sizeof(wc));
	if (hx_poll(cq, &wc, 1, timeout_ms) != 1) {
		fprintf(stderr,
			"%s:%d: [%s] no completion within %d ms (expected wr_id %llu %s)\n",
			file, line, hx_role, timeout_ms,
			(unsigned long long)wr_id, ibv_wc_status_str(st));
		hx_fail_(file, line);
		if (out)
			memset(out, 0, sizeof(*out));
		return false;
	}
	if (wc.wr_id != wr_id || wc.status != st) {
		fprintf(stderr,
			"%s:%d: [%s] completion wr_id %llu status %s (%d) vendor_err %u, expected wr_id %llu status %s (%d)\n",
			file, line, hx_role, (unsigned long long)wc.wr_id,
			ibv_wc_status_str(wc.status), wc.status, wc.vendor_err,
			(unsigned long long)wr_id, ibv_wc_status_str(st), st);
		ok = false;
	}
	if (ok && st == IBV_WC_SUCCESS && opcode >= 0 &&
	    (int)wc.opcode != opcode) {
		fprintf(stderr,
			"%s:%d: [%s] wr_id %llu opcode %d, expected %d\n", file,
			line, hx_role, (unsigned long long)wr_id, wc.opcode,
			opcode);
		ok = false;
	}
	if (ok && st == IBV_WC_SUCCESS && byte_len >= 0 &&
	    (int64_t)wc.byte_len != byte_len) {
		fprintf(stderr,
			"%s:%d: [%s] wr_id %llu byte_len %u, expected %lld\n",
			file, line, hx_role, (unsigned long long)wr_id,
			wc.byte_len, (long long)byte_len);
		ok = false;
	}
	if (ok)
		check_passed++;
	else
		hx_fail_(file, line);
	if (out)
		*out = wc;
	return ok;
}

#define HX_EXPECT(cq, out, wr_id, st, op, len) \
	hx_expect_at(__FILE__, __LINE__, cq, out, wr_id, st, op, len, 10000)
#define HX_EXPECT_T(cq, out, wr_id, st, op, len, ms) \
	hx_expect_at(__FILE__, __LINE__, cq, out, wr_id, st, op, len, ms)

/* No completion appears within ms. */
#define HX_EXPECT_NONE(cq, ms)                                                                        \
	do {                                                                                          \
		struct ibv_wc _w;                                                                     \
		if (hx_poll(cq, &_w, 1, ms) == 0) {                                                   \
			check_passed++;                                                               \
		} else {                                                                              \
			check_failed++;                                                               \
			fprintf(stderr,                                                               \
				"%s:%d: [%s] unexpected completion wr_id %llu status %s opcode %d\n", \
				__FILE__, __LINE__, hx_role,                                          \
				(unsigned long long)_w.wr_id,                                         \
				ibv_wc_status_str(_w.status), _w.opcode);                             \
		}                                                                                     \
	} while (0)

/* Bytes match the pattern of seed. */
#define HX_CHECK_PATTERN(p, len, seed)                                                                 \
	do {                                                                                           \
		int64_t _off = hx_verify(p, len, seed);                                                \
		if (_off < 0) {                                                                        \
			check_passed++;                                                                \
		} else {                                                                               \
			check_failed++;                                                                \
			fprintf(stderr,                                                                \
				"%s:%d: [%s] %s: %zu bytes differ from pattern %llu at offset %lld\n", \
				__FILE__, __LINE__, hx_role, #p,                                       \
				(size_t)(len), (unsigned long long)(seed),                             \
				(long long)_off);                                                      \
		}                                                                                      \
	} while (0)

/* A verb's return value (or errno) equals the expected one, with names. */
#define HX_CHECK_RC(expr, want)                                                        \
	do {                                                                           \
		int _r = (expr), _w = (want);                                          \
		if (_r == _w) {                                                        \
			check_passed++;                                                \
		} else {                                                               \
			check_failed++;                                                \
			fprintf(stderr,                                                \
				"%s:%d: [%s] %s returned %d (%s), expected %d (%s)\n", \
				__FILE__, __LINE__, hx_role, #expr, _r,                \
				_r > 0 ? strerror(_r) : "", _w,                        \
				_w > 0 ? strerror(_w) : "");                           \
		}                                                                      \
	} while (0)

/* The QP reaches state want (polled for up to 1 s: the error transition
 * may trail the error completion by a moment). */
#define HX_CHECK_STATE(qp, want)                                               \
	do {                                                                   \
		enum ibv_qp_state _s = hx_qp_state_wait(qp, want, 1000);       \
		if (_s == (want)) {                                            \
			check_passed++;                                        \
		} else {                                                       \
			check_failed++;                                        \
			fprintf(stderr,                                        \
				"%s:%d: [%s] QP state %d, expected %d (%s)\n", \
				__FILE__, __LINE__, hx_role, _s, (want),       \
				#want);                                        \
		}                                                              \
	} while (0)

#endif
