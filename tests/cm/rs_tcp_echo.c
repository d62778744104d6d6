/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * An ordinary TCP echo pair (plain BSD sockets, nothing RDMA) for the
 * librspreload test (compat.sh rspreload): run under
 * LD_PRELOAD=librspreload.so its sockets must become rsockets.
 *
 *   rs_tcp_echo server PORT        serve one connection, echo until EOF
 *   rs_tcp_echo client ADDR PORT BYTES
 *                                  send BYTES of a pattern, read them back,
 *                                  compare; prints "echo ok BYTES"
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 10));
}

static int server(int port)
{
	struct sockaddr_in a;
	uint8_t buf[65536];
	int one = 1, ls, fd;
	ssize_t n;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0) {
		perror("socket");
		return 1;
	}
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 4)) {
		perror("bind/listen");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	fd = accept(ls, NULL, NULL);
	if (fd < 0) {
		perror("accept");
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		ssize_t off = 0;

		while (off < n) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w <= 0) {
				perror("write");
				return 1;
			}
			off += w;
		}
	}
	if (n < 0) {
		perror("read");
		return 1;
	}
	close(fd);
	close(ls);
	printf("server done\n");
	return 0;
}

static int client(const char *addr, int port, size_t bytes)
{
	struct sockaddr_in a;
	uint8_t *out, *in;
	size_t sent = 0, got = 0, i;
	int fd;

	out = malloc(bytes);
	in = malloc(bytes);
	if (!out || !in)
		return 1;
	for (i = 0; i < bytes; i++)
		out[i] = pattern(i);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, addr, &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		return 1;
	}
	/* Interleave writing and reading so neither side's buffers fill. */
	while (got < bytes) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (sent < bytes)
			p.events |= POLLOUT;
		if (poll(&p, 1, 10000) <= 0) {
			fprintf(stderr, "poll: nothing for 10 s\n");
			return 1;
		}
		if ((p.revents & POLLOUT) && sent < bytes) {
			size_t k = bytes - sent > 16384 ? 16384 : bytes - sent;
			ssize_t w = send(fd, out + sent, k, MSG_DONTWAIT);

			if (w > 0)
				sent += (size_t)w;
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			ssize_t r =
				recv(fd, in + got, bytes - got, MSG_DONTWAIT);

			if (r == 0) {
				fprintf(stderr, "early EOF at %zu\n", got);
				return 1;
			}
			if (r > 0)
				got += (size_t)r;
		}
	}
	shutdown(fd, SHUT_WR);
	close(fd);
	if (memcmp(in, out, bytes)) {
		fprintf(stderr, "echoed bytes differ\n");
		return 1;
	}
	printf("echo ok %zu\n", bytes);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]),
			      (size_t)strtoul(argv[4], NULL, 0));
	fprintf(stderr,
		"usage: rs_tcp_echo server PORT | client ADDR PORT BYTES\n");
	return 2;
}
