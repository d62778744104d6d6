/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Registered memory the process may not use (issue #17, part 1;
 * docs/security.md, "Local memory").  Process B owns a 64 KiB "victim"
 * buffer that goes bad in one of three ways:
 *   reg       it is mapped PROT_READ from the start: registering it with
 *             the rights the operation needs fails with EFAULT (and a
 *             warning naming the page), as the kernel's pinning does; B
 *             then registers it with the rights a read-only page allows,
 *             and the operation fails as for missing rights;
 *   protect   mprotect(PROT_READ) after registration;
 *   unmap     munmap after registration;
 * and one operation uses it:
 *   write     A's 64 KiB RDMA WRITE into it;
 *   send      A's 512-byte SEND into a receive posted on it (a message
 *             channel on shm, packets over UDP);
 *   read      B's 64 KiB RDMA READ from A into it (the reader's own
 *             buffer is the bad one).
 * Nothing may crash (a fault used to kill B with SIGSEGV, or over UDP
 * a WRITE into unmapped memory could land in whatever was mapped there
 * next).  Checked: the exact completion statuses on both sides (WRITE:
 * REM_ACCESS_ERR at A; SEND: REM_OP_ERR at A and LOC_PROT_ERR for B's
 * receive; READ: LOC_PROT_ERR at B), both QP states, B's async event
 * (QP_ACCESS_ERR when B's QP failed as a responder), B's mem_fault
 * counter (1 for protect/unmap, 0 for reg: nothing faulted) and the
 * warning with the address (inside the victim).  Each case runs on shm
 * and, as integration.udp.*, over UDP: 18 combinations.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

#define VICTIM_LEN (64u * 1024)
#define SEND_LEN 512u

enum how { HOW_REG, HOW_PROTECT, HOW_UNMAP };
enum op { OP_WRITE, OP_SEND, OP_READ };

/* ---- B's stderr, for the warning and the counters ----------------------- */

static char cap_path[64];
static int cap_fd = -1, cap_saved = -1;

static void capture_begin(void)
{
	snprintf(cap_path, sizeof(cap_path), "/tmp/rc_memfault.XXXXXX");
	cap_fd = mkstemp(cap_path);
	REQUIRE(cap_fd >= 0);
	fflush(stderr);
	cap_saved = dup(2);
	REQUIRE(cap_saved >= 0);
	dup2(cap_fd, 2);
}

/* Restore stderr; what was written meanwhile (also echoed), malloc'd. */
static char *capture_end(void)
{
	off_t len;
	char *s;

	fflush(stderr);
	dup2(cap_saved, 2);
	close(cap_saved);
	len = lseek(cap_fd, 0, SEEK_END);
	REQUIRE(len >= 0);
	s = calloc(1, (size_t)len + 1);
	REQUIRE(s);
	REQUIRE(pread(cap_fd, s, (size_t)len, 0) == len);
	close(cap_fd);
	unlink(cap_path);
	fputs(s, stderr);
	return s;
}

/* A counter from the SOFTVERBS_STATS lines (summed over contexts). */
static unsigned long long counter(const char *text, const char *name)
{
	unsigned long long sum = 0, v;
	const char *p = text;
	char got[64];

	while (p && *p) {
		if (sscanf(p, " %63s %llu", got, &v) == 2 && !strcmp(got, name))
			sum += v;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return sum;
}

/* Wait (up to 10 s) for an async event of this type on B's QP. */
static bool await_event(struct hx_ep *ep, enum ibv_event_type want)
{
	uint64_t end = hx_now_ms() + 10000;
	struct ibv_async_event ev;
	bool seen = false;

	while (!seen && hx_now_ms() < end) {
		if (!hx_wait_fd(ep->ctx->async_fd, (int)(end - hx_now_ms())))
			break;
		if (ibv_get_async_event(ep->ctx, &ev))
			break;
		hx_log("async event: %s", ibv_event_type_str(ev.event_type));
		if (ev.event_type == want && ev.element.qp == ep->qp)
			seen = true;
		ibv_ack_async_event(&ev);
	}
	return seen;
}

/* ---- B: owns the victim ---------------------------------------------------- */

static void victim_side(int fd, enum how how, enum op op)
{
	int need = op == OP_WRITE ?
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE :
			   IBV_ACCESS_LOCAL_WRITE;
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *mr;
	struct hx_ep ep;
	char want[128];
	uint8_t *v;
	char *text;
	size_t i;
	int zeros = 1;
	bool found;

	/* Read at first use in this (forked) process. */
	setenv("SOFTVERBS_LOG", "1", 1);
	setenv("SOFTVERBS_STATS", "1", 1);
	capture_begin();
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	v = mmap(NULL, VICTIM_LEN,
		 how == HOW_REG ? PROT_READ : PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(v != MAP_FAILED);
	if (how == HOW_REG) {
		errno = 0;
		mr = ibv_reg_mr(ep.pd, v, VICTIM_LEN, need);
		CHECK(mr == NULL);
		CHECK_EQ(errno, EFAULT);
		if (mr)
			ibv_dereg_mr(mr);
		/* What a read-only page may be registered with. */
		mr = ibv_reg_mr(ep.pd, v, VICTIM_LEN,
				op == OP_WRITE ? IBV_ACCESS_REMOTE_READ : 0);
	} else {
		mr = ibv_reg_mr(ep.pd, v, VICTIM_LEN, need);
	}
	REQUIRE(mr);
	if (op == OP_SEND)
		HX_CHECK_RC(hx_post_recv(&ep, 7, v, VICTIM_LEN, mr->lkey), 0);
	if (how == HOW_PROTECT)
		REQUIRE(mprotect(v, VICTIM_LEN, PROT_READ) == 0);
	else if (how == HOW_UNMAP)
		REQUIRE(munmap(v, VICTIM_LEN) == 0);
	hx_send_u64(fd, (uintptr_t)v);
	hx_send_u64(fd, mr->rkey);

	switch (op) {
	case OP_READ:
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ,
					 IBV_SEND_SIGNALED, 9, v, VICTIM_LEN,
					 mr->lkey, ep.peer.addr, ep.peer.rkey,
					 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 9, IBV_WC_LOC_PROT_ERR, -1, -1);
		break;
	case OP_SEND:
		HX_EXPECT(ep.rcq, NULL, 7, IBV_WC_LOC_PROT_ERR, -1, -1);
		/* A bad receive SGE (reg) is reported by the completion
		 * alone; a fault is an access violation of the QP too. */
		if (how != HOW_REG)
			CHECK(await_event(&ep, IBV_EVENT_QP_ACCESS_ERR));
		break;
	case OP_WRITE:
		CHECK(await_event(&ep, IBV_EVENT_QP_ACCESS_ERR));
		break;
	}
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd); /* A checked its side */
	if (how != HOW_UNMAP)
		for (i = 0; i < VICTIM_LEN; i++)
			zeros &= v[i] == 0;
	CHECK(zeros); /* not one byte written */
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
	text = capture_end();

	CHECK_EQ(counter(text, "mem_fault"), how == HOW_REG ? 0 : 1);
	if (how == HOW_REG) {
		snprintf(want, sizeof(want), "ibv_reg_mr: EFAULT: page 0x%lx ",
			 (unsigned long)(uintptr_t)v);
		found = strstr(text, want) != NULL;
	} else {
		/* The address that faulted: in the victim (where the copy
		 * first touched it). */
		const char *at = strstr(text, "registered memory at 0x");
		uintptr_t a = at ? (uintptr_t)strtoull(at + 21, NULL, 16) : 0;

		snprintf(want, sizeof(want),
			 "registered memory at 0x... faulted, in [%p, +0x%x)",
			 (void *)v, VICTIM_LEN);
		found = at && strstr(at, " faulted") && a >= (uintptr_t)v &&
			a < (uintptr_t)v + VICTIM_LEN;
	}
	if (!found) {
		fprintf(stderr, "[B] no log line with \"%s\"\n", want);
		check_failed++;
	} else {
		check_passed++;
	}
	free(text);
	if (how != HOW_UNMAP)
		munmap(v, VICTIM_LEN);
}

/* ---- A: the peer ------------------------------------------------------------ */

static void peer_side(int fd, enum op op)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint64_t v;
	uint32_t rkey;

	hx_ep_open(&ep, &o, fd);
	hx_fill(ep.buf, VICTIM_LEN, 5);
	hx_ep_connect(&ep);
	v = hx_recv_u64(fd);
	rkey = (uint32_t)hx_recv_u64(fd);
	switch (op) {
	case OP_WRITE:
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, 1, ep.buf,
					 VICTIM_LEN, ep.mr->lkey, v, rkey, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 1, IBV_WC_REM_ACCESS_ERR, -1, -1);
		HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
		break;
	case OP_SEND:
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 2,
					 ep.buf, SEND_LEN, ep.mr->lkey, 0, 0,
					 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 2, IBV_WC_REM_OP_ERR, -1, -1);
		HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
		break;
	case OP_READ:
		/* The reader fails locally; this side saw a good READ. */
		break;
	}
	hx_sync(fd);
	if (op == OP_READ)
		HX_CHECK_STATE(ep.qp, IBV_QPS_RTS);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

#define MEMFAULT_CASE(h, o)                       \
	static void h##_##o##_a(int fd)           \
	{                                         \
		peer_side(fd, OP_##o);            \
	}                                         \
	static void h##_##o##_b(int fd)           \
	{                                         \
		victim_side(fd, HOW_##h, OP_##o); \
	}

/* Case names are lower case (the ctest names come from the table). */
#define HOW_reg HOW_REG
#define HOW_protect HOW_PROTECT
#define HOW_unmap HOW_UNMAP
#define OP_write OP_WRITE
#define OP_send OP_SEND
#define OP_read OP_READ

MEMFAULT_CASE(reg, write)
MEMFAULT_CASE(reg, send)
MEMFAULT_CASE(reg, read)
MEMFAULT_CASE(protect, write)
MEMFAULT_CASE(protect, send)
MEMFAULT_CASE(protect, read)
MEMFAULT_CASE(unmap, write)
MEMFAULT_CASE(unmap, send)
MEMFAULT_CASE(unmap, read)

static const struct hx_case cases[] = {
	HX_CASE(reg_write, 30),	   HX_CASE(reg_send, 30),
	HX_CASE(reg_read, 30),	   HX_CASE(protect_write, 30),
	HX_CASE(protect_send, 30), HX_CASE(protect_read, 30),
	HX_CASE(unmap_write, 30),  HX_CASE(unmap_send, 30),
	HX_CASE(unmap_read, 30),   { 0 },
};

HX_MAIN(cases)
