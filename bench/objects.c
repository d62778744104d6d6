/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * objects: what making and destroying many verbs objects costs (issue
 * #39: "a million PDs and a million MRs allocated and freed in seconds").
 *
 *   objects [N]      (default 1000000)
 *
 * One context.  N PDs allocated then deallocated; N MRs registered (each
 * on the same 4 KiB buffer, LOCAL_WRITE: the kernel would pin its page)
 * then deregistered.  The anchor, in the same run: N getppid() calls, the
 * cheapest system call, so that each verb's cost reads as a number of
 * kernel entries on this machine.  Prints one key=value line:
 *
 *   n=1000000 pd_alloc_s=0.10 pd_free_s=0.03 mr_reg_s=2.6 mr_dereg_s=0.9
 *   syscall_ns=120 mr_reg_per_syscall=21.7
 *
 * Every failure exits 1 with a message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static __attribute__((noreturn)) void die(const char *what, long i)
{
	fprintf(stderr, "objects: %s (object %ld): %s\n", what, i,
		errno ? strerror(errno) : "failed");
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, i;
	static char buf[4096] __attribute__((aligned(4096)));
	struct ibv_device **list = ibv_get_device_list(NULL);
	double t0, t1, t2, t3, t4, t5, t6, t7;
	struct ibv_context *ctx;
	struct ibv_pd **pds, *pd;
	struct ibv_mr **mrs;

	if (!list || !list[0])
		die("no device", 0);
	ctx = ibv_open_device(list[0]);
	pds = calloc((size_t)n, sizeof(*pds));
	mrs = calloc((size_t)n, sizeof(*mrs));
	if (!ctx || !pds || !mrs)
		die("setup", 0);
	t0 = now_s();
	for (i = 0; i < n; i++)
		if (!(pds[i] = ibv_alloc_pd(ctx)))
			die("ibv_alloc_pd", i);
	t1 = now_s();
	for (i = 0; i < n; i++)
		if (ibv_dealloc_pd(pds[i]))
			die("ibv_dealloc_pd", i);
	t2 = now_s();
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd", -1);
	t3 = now_s();
	for (i = 0; i < n; i++)
		if (!(mrs[i] = ibv_reg_mr(pd, buf, sizeof(buf),
					  IBV_ACCESS_LOCAL_WRITE)))
			die("ibv_reg_mr", i);
	t4 = now_s();
	for (i = 0; i < n; i++)
		if (ibv_dereg_mr(mrs[i]))
			die("ibv_dereg_mr", i);
	t5 = now_s();
	for (i = 0; i < n; i++)
		(void)getppid();
	t6 = now_s();
	t7 = (t6 - t5) / (double)n;
	printf("n=%ld pd_alloc_s=%.3f pd_free_s=%.3f mr_reg_s=%.3f mr_dereg_s=%.3f syscall_ns=%.0f mr_reg_per_syscall=%.1f\n",
	       n, t1 - t0, t2 - t1, t4 - t3, t5 - t4, t7 * 1e9,
	       (t4 - t3) / (double)n / t7);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(pds);
	free(mrs);
	return 0;
}
