/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A small MPI program that checks the data MPI moves: the stack tests run
 * it unmodified under Open MPI (pml ucx) and MPICH (ch4:ucx) through
 * `softverbs run`, with UCX restricted to verbs transports (and self).
 *
 * Run with exactly 2 ranks.  Each check prints one line on rank 0:
 *   allreduce   MPI_SUM of MPI_LONG at 1, 10, ... 10^6 elements
 *   pingpong    rank 0 -> 1 -> 0 at 1 B .. 1 MiB, both directions checked
 *   put/get     MPI_Put and MPI_Get into / out of a window at 8 B .. 1 MiB
 *   fetch_op    MPI_Fetch_and_op MPI_SUM, returning the old values in turn
 * and the last line is "mpi_check: PASS" or "mpi_check: FAIL (N errors)";
 * the exit status is 0 only on PASS.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES (1 << 20)

static int rank, errors;

static void report(const char *what, size_t n, int bad)
{
	int all = 0;

	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%-10s %8zu %s\n", what, n, all ? "FAIL" : "ok");
	if (all)
		errors++;
}

/* The byte at offset i of a message of len bytes sent by rank r in round k. */
static uint8_t pattern(int r, int k, size_t len, size_t i)
{
	return (uint8_t)(i * 131 + len * 7 + (size_t)r * 53 + (size_t)k * 17 +
			 1);
}

static void check_allreduce(void)
{
	long *in, *out;
	size_t n, i;

	in = malloc(1000000 * sizeof(*in));
	out = malloc(1000000 * sizeof(*out));
	if (!in || !out)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (n = 1; n <= 1000000; n *= 10) {
		int bad = 0;

		for (i = 0; i < n; i++) {
			in[i] = (long)(i * 3 + 1) * (rank + 1);
			out[i] = -1;
		}
		MPI_Allreduce(in, out, (int)n, MPI_LONG, MPI_SUM,
			      MPI_COMM_WORLD);
		/* (i*3+1) * (1 + 2) for 2 ranks */
		for (i = 0; i < n; i++)
			if (out[i] != (long)(i * 3 + 1) * 3) {
				bad = 1;
				fprintf(stderr,
					"rank %d: allreduce n=%zu [%zu] = %ld\n",
					rank, n, i, out[i]);
				break;
			}
		report("allreduce", n, bad);
	}
	free(in);
	free(out);
}

static int check_buf(const uint8_t *b, int r, int k, size_t len,
		     const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != pattern(r, k, len, i)) {
			fprintf(stderr,
				"rank %d: %s len=%zu byte %zu is %#x, expected %#x\n",
				rank, what, len, i, b[i],
				pattern(r, k, len, i));
			return 1;
		}
	return 0;
}

static void check_pingpong(void)
{
	static const size_t sizes[] = { 1, 64, 4096, 65536, 262144, MAX_BYTES };
	uint8_t *sb = malloc(MAX_BYTES), *rb = malloc(MAX_BYTES);
	size_t s, i;
	int k, peer = 1 - rank;

	if (!sb || !rb)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t len = sizes[s];
		int bad = 0;

		for (k = 0; k < 5; k++) {
			for (i = 0; i < len; i++)
				sb[i] = pattern(rank, k, len, i);
			memset(rb, 0, len);
			if (rank == 0) {
				MPI_Send(sb, (int)len, MPI_BYTE, peer, k,
					 MPI_COMM_WORLD);
				MPI_Recv(rb, (int)len, MPI_BYTE, peer, k,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(rb, (int)len, MPI_BYTE, peer, k,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(sb, (int)len, MPI_BYTE, peer, k,
					 MPI_COMM_WORLD);
			}
			bad |= check_buf(rb, peer, k, len, "pingpong");
		}
		report("pingpong", len, bad);
	}
	free(sb);
	free(rb);
}

static void check_rma(void)
{
	static const size_t sizes[] = { 8, 4096, 65536, MAX_BYTES };
	uint8_t *base, *local = malloc(MAX_BYTES);
	int64_t *counter, old, one;
	MPI_Win win, cwin;
	size_t s, i;
	int k, peer = 1 - rank;

	if (!local)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Win_allocate(MAX_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
			 &win);
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t len = sizes[s];
		int bad = 0;

		/* Put: each rank writes its pattern into its peer's window. */
		memset(base, 0, len);
		for (i = 0; i < len; i++)
			local[i] = pattern(rank, 100, len, i);
		MPI_Win_fence(0, win);
		MPI_Put(local, (int)len, MPI_BYTE, peer, 0, (int)len, MPI_BYTE,
			win);
		MPI_Win_fence(0, win);
		bad |= check_buf(base, peer, 100, len, "put");
		report("put", len, bad);

		/* Get: each rank reads its peer's window, filled by the peer. */
		bad = 0;
		for (i = 0; i < len; i++)
			base[i] = pattern(rank, 200, len, i);
		memset(local, 0, len);
		MPI_Win_fence(0, win);
		MPI_Get(local, (int)len, MPI_BYTE, peer, 0, (int)len, MPI_BYTE,
			win);
		MPI_Win_fence(0, win);
		bad |= check_buf(local, peer, 200, len, "get");
		report("get", len, bad);
	}
	MPI_Win_free(&win);
	free(local);

	/* Fetch_and_op: both ranks add 1 to a counter on rank 0, 10 times
	 * each, one at a time in turn; every fetch returns the count so far. */
	MPI_Win_allocate(sizeof(*counter), sizeof(*counter), MPI_INFO_NULL,
			 MPI_COMM_WORLD, &counter, &cwin);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, cwin);
	*counter = 1000;
	MPI_Win_unlock(rank, cwin);
	MPI_Barrier(MPI_COMM_WORLD);
	one = 1;
	{
		int bad = 0;

		MPI_Win_lock_all(0, cwin);
		for (k = 0; k < 20; k++) {
			if (k % 2 == rank) {
				MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0,
						 MPI_SUM, cwin);
				MPI_Win_flush(0, cwin);
				if (old != 1000 + k) {
					fprintf(stderr,
						"rank %d: fetch_and_op %d returned %lld, expected %d\n",
						rank, k, (long long)old,
						1000 + k);
					bad = 1;
				}
			}
			MPI_Barrier(MPI_COMM_WORLD);
		}
		/* The total, read back through the window. */
		if (rank == 0) {
			MPI_Fetch_and_op(NULL, &old, MPI_INT64_T, 0, 0,
					 MPI_NO_OP, cwin);
			MPI_Win_flush(0, cwin);
			if (old != 1020) {
				fprintf(stderr,
					"rank 0: counter is %lld after 20 adds, expected 1020\n",
					(long long)old);
				bad = 1;
			}
		}
		MPI_Win_unlock_all(cwin);
		report("fetch_op", 20, bad);
	}
	MPI_Win_free(&cwin);
}

int main(int argc, char **argv)
{
	int size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: run with 2 ranks, not %d\n",
				size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_allreduce();
	check_pingpong();
	check_rma();
	if (rank == 0) {
		if (errors)
			printf("mpi_check: FAIL (%d errors)\n", errors);
		else
			printf("mpi_check: PASS\n");
	}
	MPI_Finalize();
	return errors ? 1 : 0;
}
