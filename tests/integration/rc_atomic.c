/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Atomicity across QPs: two processes hammer the same 8 bytes of a third
 * with FETCH_AND_ADD (and with CMP_AND_SWP increment loops); the target
 * ends with the exact sum and every returned original value is consistent
 * with the operations of its own QP executing in order.
 *
 * Processes: T (the target, role A of the harness) and two hammers, H1
 * (the harness' child B) and H2 (spawned by T).  T opens two contexts, one
 * QP per hammer, and registers one buffer twice (once per PD).  On the
 * shm link every atomic goes through the target QP's message channel
 * (paths/chan_atomic.c: chan_atomics counted at each hammer); with
 * SOFTVERBS_FASTPATH=0 as packets (0 counted).
 */
#include <unistd.h>

#include "harness.h"

#define N_FADD 4000
#define N_CAS 300
#define WINDOW 16

static int done_fn(void)
{
	printf("[%s] ", hx_role);
	return check_done();
}

/* Hammer: add `add` N_FADD times at remote offset 0 with WINDOW
 * outstanding, then CAS-increment the counter at offset 8 N_CAS times. */
static void hammer(int fd, uint64_t add, int shift)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_wc wc[WINDOW];
	struct hx_ep ep;
	uint64_t *res;
	int posted = 0, done = 0, bad_seq = 0, bad_other = 0;
	uint64_t last_other = 0;
	unsigned long long n;

	o.max_send_wr = 2 * WINDOW;
	setenv("SOFTVERBS_STATS", "1", 1);
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	res = (uint64_t *)ep.buf;
	(void)hx_recv_u64(fd); /* go */

	while (done < N_FADD) {
		while (posted < N_FADD && posted - done < WINDOW) {
			int rc =
				hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
					       IBV_SEND_SIGNALED, posted,
					       &res[posted], ep.mr->lkey,
					       ep.peer.addr, ep.peer.rkey, add,
					       0);
			if (rc) {
				HX_CHECK_RC(rc, 0);
				goto out;
			}
			posted++;
		}
		int n = hx_poll(ep.scq, wc, 1, 10000);
		if (n != 1) {
			CHECK(!"fetch-add completion timed out");
			goto out;
		}
		if (wc[0].status != IBV_WC_SUCCESS ||
		    wc[0].wr_id != (uint64_t)done) {
			hx_log("fetch-add %d: wr_id %llu status %s", done,
			       (unsigned long long)wc[0].wr_id,
			       ibv_wc_status_str(wc[0].status));
			CHECK(0);
			goto out;
		}
		done++;
	}
	/* Our own word counts 0, 1, 2, ... (in-order execution on one QP);
	 * the other hammer's word never goes backwards. */
	for (int i = 0; i < N_FADD; i++) {
		uint32_t own = (uint32_t)(res[i] >> shift);
		uint32_t other = (uint32_t)(res[i] >> (32 - shift));

		bad_seq += own != (uint32_t)i;
		bad_other += other < last_other;
		last_other = other;
	}
	if (bad_seq || bad_other)
		hx_log("fetch-add results: %d out of sequence, %d regressions",
		       bad_seq, bad_other);
	CHECK_EQ(bad_seq, 0);
	CHECK_EQ(bad_other, 0);

	/* CAS increment loop on the second word. */
	uint64_t expect = 0;
	int ok = 0, tries = 0;
	while (ok < N_CAS && tries < 100 * N_CAS) {
		tries++;
		HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_CMP_AND_SWP,
					   IBV_SEND_SIGNALED, 1000000 + tries,
					   &res[0], ep.mr->lkey,
					   ep.peer.addr + 8, ep.peer.rkey,
					   expect, expect + 1),
			    0);
		if (!HX_EXPECT(ep.scq, NULL, 1000000 + tries, IBV_WC_SUCCESS,
			       IBV_WC_COMP_SWAP, 8))
			goto out;
		if (res[0] == expect) {
			ok++;
			expect++;
		} else {
			expect = res[0];
		}
	}
	CHECK_EQ(ok, N_CAS);
out:
	hx_send_u64(fd, 1); /* finished */
	hx_recv_u64(fd);
	n = hx_ep_close_counter(&ep, "chan_atomics");
	if (hx_fastpath_expected())
		CHECK(n >= N_FADD + N_CAS);
	else
		CHECK_EQ(n, 0);
}

static void h2(int fd)
{
	hammer(fd, 1ULL << 32, 32);
}

static void race_b(int fd)
{
	hammer(fd, 1, 0);
}

static void race_a(int fd1)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep e1, e2;
	int fd2;
	pid_t pid;

	pid = hx_spawn("C", h2, done_fn, 60, &fd2);
	hx_ep_open(&e1, &o, fd1);
	o.no_mr = true;
	hx_ep_open(&e2, &o, fd2);
	/* The same memory, registered in e2's PD as well. */
	e2.mr = ibv_reg_mr(e2.pd, e1.buf, e1.o.buf_len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(e2.mr);
	e2.buf = e1.buf;
	e2.o.buf_len = e1.o.buf_len;
	hx_ep_connect(&e1);
	hx_ep_connect(&e2);
	volatile uint64_t *v = (volatile uint64_t *)e1.buf;
	hx_send_u64(fd1, 1);
	hx_send_u64(fd2, 1);
	(void)hx_recv_u64(fd1);
	(void)hx_recv_u64(fd2);
	CHECK_EQ(v[0], (uint64_t)N_FADD + ((uint64_t)N_FADD << 32));
	CHECK_EQ(v[1], 2 * N_CAS);
	hx_send_u64(fd1, 1);
	hx_send_u64(fd2, 1);
	e2.buf = NULL; /* owned by e1 */
	CHECK_EQ(hx_ep_close(&e2), 0);
	CHECK_EQ(hx_ep_close(&e1), 0);
	CHECK_EQ(hx_wait(pid, 30), 0);
	close(fd2);
}

static const struct hx_case cases[] = { HX_CASE(race, 60), { 0 } };

HX_MAIN(cases)
