/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * udp_rate: the kernel's UDP packet rate, the anchor of ib_send_bw and
 * ib_write_bw's 8-byte message rate between two hosts (issue #36).  One
 * socket each way, 16-byte datagrams, sent in batches of BATCH by
 * sendmmsg and received in batches of BATCH by recvmmsg, both sides
 * busy-polling non-blocking sockets (as perftest's bw tools poll their
 * CQs).  The figure is what arrives: datagrams the receiver's socket had
 * no room for are lost, not counted.
 *
 *   udp_rate server PORT                       (prints the figure, exits)
 *   udp_rate client PORT SERVER_IPV4 [SECONDS] (sends for SECONDS, 4)
 *
 * The server counts from the first datagram to the last and prints
 * "rate=X datagrams=N seconds=S" (X: million datagrams per second) when
 * the client's end marks come (datagrams whose first byte is END, sent
 * for 100 ms after the last one counted), or when nothing has come for
 * QUIET_S.  The client prints "sent=N".  Every failure exits 1 with a
 * message.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LEN 16
#define BATCH 64
#define END 0xff
#define QUIET_S 5.0 /* nothing for this long after the first: the end */

static __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "udp_rate: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t buf[BATCH][LEN];
static struct iovec iov[BATCH];
static struct mmsghdr msgs[BATCH];

static void server(int fd)
{
	double first = 0, last = 0;
	unsigned long long got = 0, before = 0;
	int i, n;

	for (;;) {
		for (i = 0; i < BATCH; i++) {
			iov[i].iov_base = buf[i];
			iov[i].iov_len = LEN;
			memset(&msgs[i], 0, sizeof(msgs[i]));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			die("recvmmsg");
		for (i = 0; i < n; i++)
			if (msgs[i].msg_len && buf[i][0] == END)
				break;
		if (i > 0) {
			last = now_s();
			if (!got) {
				first = last;
				before = (unsigned long long)i;
			}
			got += (unsigned long long)i;
		}
		if (i < n)
			break;
		if (n <= 0 && got && now_s() - last > QUIET_S)
			break;
	}
	/* The first batch came before the clock started. */
	if (got <= before || last <= first) {
		fprintf(stderr, "udp_rate: only %llu datagrams came\n", got);
		exit(1);
	}
	printf("rate=%.4f datagrams=%llu seconds=%.3f\n",
	       (double)(got - before) / (last - first) / 1e6, got,
	       last - first);
}

static void client(int fd, const struct sockaddr_in *to, double seconds)
{
	double end = now_s() + seconds;
	int i;

	for (i = 0; i < BATCH; i++) {
		iov[i].iov_base = buf[i];
		iov[i].iov_len = LEN;
		msgs[i].msg_hdr.msg_name = (void *)to;
		msgs[i].msg_hdr.msg_namelen = sizeof(*to);
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	unsigned long long sent = 0;
	int n;

	while (now_s() < end) {
		n = sendmmsg(fd, msgs, BATCH, MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != ENOBUFS &&
		    errno != EINTR)
			die("sendmmsg");
		sent += n > 0 ? (unsigned long long)n : 0;
	}
	memset(buf, END, sizeof(buf));
	end = now_s() + 0.1;
	while (now_s() < end)
		if (sendmmsg(fd, msgs, BATCH, MSG_DONTWAIT) < 0 &&
		    errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
			die("sendmmsg");
	printf("sent=%llu\n", sent);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd, size = 8 << 20;

	if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
		goto usage;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	/* The buffers softverbs' sockets ask for (link/udp.c). */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	if (!strcmp(argv[1], "server")) {
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
			die("bind");
		server(fd);
		return 0;
	}
	if (argc < 4 || inet_pton(AF_INET, argv[3], &a.sin_addr) != 1)
		goto usage;
	client(fd, &a, argc > 4 ? atof(argv[4]) : 4);
	return 0;
usage:
	fprintf(stderr, "usage: udp_rate server PORT\n"
			"       udp_rate client PORT SERVER_IPV4 [SECONDS]\n");
	return 1;
}
