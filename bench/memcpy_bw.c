/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * memcpy_bw: the memcpy figure of the benchmark suite.
 *
 * Copies SIZE bytes between two page-aligned buffers of one process, over and
 * over for SECONDS, and prints the copy bandwidth.  It is the ceiling of any
 * transport that moves data with one CPU copy: the one-copy limit between two
 * processes (pvm_bw) and every shared-memory transport sit below it.
 *
 * usage: memcpy_bw SIZE SECONDS
 * output: one line of key=value pairs (bench/bench.py parses it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v == 0 || v > (1ULL << 32))
		return -1;
	*out = v;
	return 0;
}

/* Run copies until `seconds` elapse; return copies done and time taken. */
static uint64_t copy_for(char *dst, const char *src, size_t size,
			 double seconds, double *elapsed)
{
	/* Look at the clock about every 16 MiB copied, at least every copy. */
	uint64_t batch = size >= (16u << 20) ? 1 : (16u << 20) / size;
	uint64_t copies = 0;
	double start = now(), t;

	do {
		for (uint64_t i = 0; i < batch; i++) {
			memcpy(dst, src, size);
			/* The copy's result must exist: keep the compiler honest. */
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		copies += batch;
		t = now() - start;
	} while (t < seconds);
	*elapsed = t;
	return copies;
}

int main(int argc, char **argv)
{
	size_t size;
	double seconds, elapsed;
	char *src, *dst;
	uint64_t copies;

	if (argc != 3 || parse_size(argv[1], &size) ||
	    (seconds = atof(argv[2])) <= 0 || seconds > 600) {
		fprintf(stderr, "usage: memcpy_bw SIZE SECONDS\n");
		return 2;
	}
	if (posix_memalign((void **)&src, 4096, size) ||
	    posix_memalign((void **)&dst, 4096, size)) {
		fprintf(stderr, "memcpy_bw: out of memory\n");
		return 1;
	}
	/* Fault every page in before timing anything. */
	for (size_t i = 0; i < size; i++)
		src[i] = (char)(i * 31 + 7);
	memset(dst, 0, size);

	copy_for(dst, src, size, seconds / 10, &elapsed); /* warm-up */
	copies = copy_for(dst, src, size, seconds, &elapsed);
	if (memcmp(dst, src, size)) {
		fprintf(stderr, "memcpy_bw: copy does not match its source\n");
		return 1;
	}
	printf("op=memcpy size=%zu copies=%llu seconds=%.6f MiBps=%.2f usec_per_op=%.4f\n",
	       size, (unsigned long long)copies, elapsed,
	       (double)size * copies / elapsed / (1 << 20),
	       elapsed * 1e6 / copies);
	free(src);
	free(dst);
	return 0;
}
