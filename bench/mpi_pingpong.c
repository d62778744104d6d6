/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mpi_pingpong: the MPI ping-pong of `make bench` (issue #15), between
 * exactly 2 ranks: rank 0 sends SIZE bytes to rank 1, which sends them
 * back, ITERS times after a tenth of that as warm-up.
 *
 *   mpirun -np 2 ... mpi_pingpong SIZE ITERS
 *
 * Rank 0 prints one key=value line: the one-way time of a message (half
 * a round trip, in microseconds) and the bandwidth that gives (SIZE per
 * one-way time, in MiB/s).  Each message carries its round number in its
 * first and last bytes, and each side checks what it received, so a run
 * that moved the wrong bytes fails (exit 1) instead of giving a figure.
 * bench/run.sh builds it with Open MPI's mpicc; bench/bench.py runs it
 * over softverbs (pml ucx, UCX_TLS=rc_verbs) and over UCX's own shared
 * memory (sm,self), the anchor.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Round k's mark, written by rank r into the first and last byte. */
static uint8_t mark(int r, long k)
{
	return (uint8_t)(k * 2 + r + 1);
}

static int check(const uint8_t *buf, size_t len, int r, long k)
{
	return len && (buf[0] != mark(r, k) || buf[len - 1] != mark(r, k));
}

int main(int argc, char **argv)
{
	int rank, nranks, bad = 0, all = 0;
	size_t len;
	long iters, warm, k;
	uint8_t *sbuf, *rbuf;
	double t0 = 0, t;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (argc != 3 || nranks != 2) {
		if (rank == 0)
			fprintf(stderr,
				"usage: mpirun -np 2 mpi_pingpong SIZE ITERS\n");
		MPI_Finalize();
		return 2;
	}
	len = strtoul(argv[1], NULL, 0);
	iters = strtol(argv[2], NULL, 0);
	warm = iters / 10 + 1;
	sbuf = malloc(len ? len : 1);
	rbuf = malloc(len ? len : 1);
	if (!sbuf || !rbuf || iters < 1)
		MPI_Abort(MPI_COMM_WORLD, 1);
	memset(sbuf, 0x5a, len ? len : 1);
	memset(rbuf, 0, len ? len : 1);

	for (k = -warm; k < iters; k++) {
		if (k == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		if (len) {
			sbuf[0] = sbuf[len - 1] = mark(rank, k);
		}
		if (rank == 0) {
			MPI_Send(sbuf, (int)len, MPI_BYTE, 1, 0,
				 MPI_COMM_WORLD);
			MPI_Recv(rbuf, (int)len, MPI_BYTE, 1, 0,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rbuf, (int)len, MPI_BYTE, 0, 0,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(sbuf, (int)len, MPI_BYTE, 0, 0,
				 MPI_COMM_WORLD);
		}
		bad |= check(rbuf, len, 1 - rank, k);
	}
	t = MPI_Wtime() - t0;
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (rank == 0) {
		double usec = t * 1e6 / (double)iters / 2;

		if (all)
			printf("mpi_pingpong: FAIL: wrong bytes received\n");
		else
			printf("size=%zu iters=%ld usec=%.3f MiBps=%.2f\n", len,
			       iters, usec,
			       (double)len / usec * 1e6 / (1 << 20));
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return all ? 1 : 0;
}
