/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pvm_bw: the one-copy limit between two processes on this machine.
 *
 * A transport that places data into arbitrary memory of another process,
 * without a kernel driver or shared mappings, moves it with one kernel copy
 * at best: process_vm_writev / process_vm_readv.  This program measures that
 * copy in a loop, between two separate processes (the suite pins them to two
 * cores with taskset):
 *
 *   pvm_bw target SIZE
 *	maps SIZE bytes, fills them with a known pattern, prints
 *	"pid=P addr=A size=S" and waits until its standard input closes.
 *   pvm_bw write|read PID ADDR SIZE SECONDS
 *	copies SIZE bytes to (write) or from (read) the target's buffer for
 *	SECONDS, checks the bytes arrived, and prints one key=value line.
 *	A target serves one copier: the read check expects its pattern intact.
 *
 * The copier needs ptrace access to the target (same user and the Yama
 * ptrace_scope allowing it, or root); otherwise the calls fail with EPERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

static void fill(unsigned char *p, size_t n, unsigned mul, unsigned add)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * mul + add);
}

/* The target's pattern and the writer's pattern differ, so a check sees
 * whether a write really landed. */
#define TARGET_MUL 131
#define TARGET_ADD 17
#define WRITER_MUL 37
#define WRITER_ADD 5

static int target(size_t size)
{
	unsigned char *buf;
	char c;

	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("pvm_bw: mmap");
		return 1;
	}
	fill(buf, size, TARGET_MUL, TARGET_ADD);
	printf("pid=%d addr=0x%llx size=%zu\n", (int)getpid(),
	       (unsigned long long)(uintptr_t)buf, size);
	fflush(stdout);
	/* Never outlive a driver that forgot us. */
	alarm(900);
	while (read(0, &c, 1) > 0)
		;
	munmap(buf, size);
	return 0;
}

static ssize_t copy_once(int write, pid_t pid, void *local, uint64_t remote,
			 size_t size)
{
	struct iovec l = { .iov_base = local, .iov_len = size };
	struct iovec r = { .iov_base = (void *)(uintptr_t)remote,
			   .iov_len = size };

	return write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
		     : process_vm_readv(pid, &l, 1, &r, 1, 0);
}

static int copier(int write, pid_t pid, uint64_t remote, size_t size,
		  double seconds)
{
	/* Look at the clock about every MiB copied, at least every call. */
	uint64_t batch = size >= (1u << 20) ? 1 : (1u << 20) / size;
	unsigned char *local, *check;
	uint64_t calls = 0;
	double start, elapsed, warm_end;
	ssize_t n;

	if (posix_memalign((void **)&local, 4096, size) ||
	    posix_memalign((void **)&check, 4096, size)) {
		fprintf(stderr, "pvm_bw: out of memory\n");
		return 1;
	}
	fill(local, size, WRITER_MUL, WRITER_ADD);
	memset(check, 0, size);

	/* Warm-up (page tables, caches), then the timed loop. */
	warm_end = now() + seconds / 10;
	do {
		n = copy_once(write, pid, local, remote, size);
		if (n != (ssize_t)size)
			goto fail;
	} while (now() < warm_end);

	start = now();
	do {
		for (uint64_t i = 0; i < batch; i++) {
			n = copy_once(write, pid, local, remote, size);
			if (n != (ssize_t)size)
				goto fail;
		}
		calls += batch;
		elapsed = now() - start;
	} while (elapsed < seconds);

	/* The bytes must really have moved. */
	if (write) {
		if (copy_once(0, pid, check, remote, size) != (ssize_t)size)
			goto fail;
		if (memcmp(check, local, size)) {
			fprintf(stderr, "pvm_bw: target does not hold what was written\n");
			return 1;
		}
	} else {
		fill(check, size, TARGET_MUL, TARGET_ADD);
		if (memcmp(check, local, size)) {
			fprintf(stderr, "pvm_bw: read bytes differ from the target's\n");
			return 1;
		}
	}
	printf("op=%s size=%zu calls=%llu seconds=%.6f MiBps=%.2f usec_per_op=%.4f\n",
	       write ? "process_vm_writev" : "process_vm_readv", size,
	       (unsigned long long)calls, elapsed,
	       (double)size * calls / elapsed / (1 << 20), elapsed * 1e6 / calls);
	free(local);
	free(check);
	return 0;

fail:
	if (n < 0)
		fprintf(stderr, "pvm_bw: %s: %s%s\n",
			write ? "process_vm_writev" : "process_vm_readv",
			strerror(errno),
			errno == EPERM ? " (needs the same user and ptrace permission)" : "");
	else
		fprintf(stderr, "pvm_bw: short copy: %zd of %zu bytes\n", n, size);
	return 1;
}

int main(int argc, char **argv)
{
	uint64_t size, pid, addr;
	double seconds;

	if (argc == 3 && !strcmp(argv[1], "target") &&
	    !parse_u64(argv[2], 1ULL << 32, &size))
		return target(size);
	if (argc == 6 && (!strcmp(argv[1], "write") || !strcmp(argv[1], "read")) &&
	    !parse_u64(argv[2], INT32_MAX, &pid) &&
	    !parse_u64(argv[3], UINT64_MAX, &addr) &&
	    !parse_u64(argv[4], 1ULL << 32, &size) &&
	    (seconds = atof(argv[5])) > 0 && seconds <= 600)
		return copier(argv[1][0] == 'w', (pid_t)pid, addr, size, seconds);
	fprintf(stderr, "usage: pvm_bw target SIZE\n"
			"       pvm_bw write|read PID ADDR SIZE SECONDS\n");
	return 2;
}
