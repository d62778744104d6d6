/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * udp_floor: what the kernel alone charges a one-way trip of ib_send_lat's
 * exchange over UDP, without any RDMA work (issue #20: ib_send_lat 8 B <=
 * 1.3x sockperf's non-blocking ping-pong).  Both sides busy-poll
 * non-blocking sockets, as sockperf --nonblocked and perftest do.
 *
 *   udp_floor MODE server PORT                  (answers for ever)
 *   udp_floor MODE client PORT SERVER_IPV4 [N]  (N round trips, 100000)
 *
 * MODE:
 *   plain  an IPv4 socket, one 16-byte datagram each way (sockperf's);
 *   one    softverbs' UDP socket (engine/transport/links.c, link/udp.c: dual-stack
 *          IPv6 with IPv4-mapped peers, IP_PKTINFO and IPV6_RECVPKTINFO,
 *          UDP_GRO, sendmmsg to an address, recvmmsg of a batch), one
 *          24-byte datagram each way: an RC SEND ONLY of 8 bytes (BTH 12,
 *          payload 8, ICRC 4);
 *   ack    the same, each answer carrying the ACK of the message it
 *          answers as a second segment of one UDP_SEGMENT send (BTH 12,
 *          AETH 4, ICRC 4): what softverbs sends (engine.c hold_acks),
 *          since perftest's latency tests signal every send and an RC
 *          completion needs its ACK.
 *
 * The client prints one line: "mode=M median_us=X" (one way: half the
 * median round trip).  Every failure exits 1 with a message.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
static unsigned long long ts_a, ts_b, ts_c; static double tsum_turn, tsum_send; static long tsn;
static unsigned long long tv_turn[300000], tv_send[300000];

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define MSG_LEN 24 /* an RC SEND ONLY of 8 bytes */
#define ACK_LEN 20 /* an RC ACKNOWLEDGE */
#define BATCH 64 /* the datagrams one recvmmsg may take */
#define BUF 2048

enum mode { PLAIN, ONE, ACK };

static __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "udp_floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct conn {
	enum mode mode;
	int fd;
	struct sockaddr_in6 peer6; /* ONE, ACK: learnt or given */
	struct mmsghdr rx[BATCH];
	struct iovec riov[BATCH];
	uint8_t rbuf[BATCH][BUF];
	uint8_t rctl[BATCH][128] __attribute__((aligned(8)));
	struct sockaddr_in6 rfrom[BATCH];
};

static void sock_open(struct conn *c, uint16_t port)
{
	int on = 1, off = 0;

	if (c->mode == PLAIN) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(port) };

		c->fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&a, sizeof(a)))
			die("socket");
		return;
	}
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_port = htons(port) };

	c->fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (c->fd < 0 ||
	    setsockopt(c->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) ||
	    setsockopt(c->fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on,
		       sizeof(on)) ||
	    setsockopt(c->fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on)) ||
	    setsockopt(c->fd, IPPROTO_UDP, UDP_GRO, &on, sizeof(on)) ||
	    bind(c->fd, (struct sockaddr *)&a, sizeof(a)))
		die("socket");
}

/* Busy-polls until a message (and, mode ACK, its ACK) has come; returns
 * its bytes. */
static size_t recv_one(struct conn *c, struct sockaddr_in *from4)
{
	size_t want = c->mode == PLAIN ? 16 :
		      c->mode == ONE	 ? MSG_LEN :
					   MSG_LEN + ACK_LEN,
	       got = 0;

	while (got < want) {
		int n, i;

		if (c->mode == PLAIN) {
			socklen_t l = sizeof(*from4);
			ssize_t r = recvfrom(c->fd, c->rbuf[0], BUF,
					     MSG_DONTWAIT,
					     (struct sockaddr *)from4, &l);

			if (r < 0 && errno != EAGAIN)
				die("recvfrom");
			got += r > 0 ? (size_t)r : 0;
			continue;
		}
		for (i = 0; i < BATCH; i++) {
			c->riov[i].iov_base = c->rbuf[i];
			c->riov[i].iov_len = BUF;
			memset(&c->rx[i], 0, sizeof(c->rx[i]));
			c->rx[i].msg_hdr.msg_name = &c->rfrom[i];
			c->rx[i].msg_hdr.msg_namelen = sizeof(c->rfrom[i]);
			c->rx[i].msg_hdr.msg_iov = &c->riov[i];
			c->rx[i].msg_hdr.msg_iovlen = 1;
			c->rx[i].msg_hdr.msg_control = c->rctl[i];
			c->rx[i].msg_hdr.msg_controllen = sizeof(c->rctl[i]);
		}
		n = recvmmsg(c->fd, c->rx, BATCH, MSG_DONTWAIT, NULL);
		if (n < 0 && errno != EAGAIN)
			die("recvmmsg");
		for (i = 0; i < n; i++)
			got += c->rx[i].msg_len;
		if (n > 0) {
			c->peer6 = c->rfrom[n - 1];
			ts_a = __rdtsc();
		}
	}
	return got;
}

static void send_one(struct conn *c, const struct sockaddr_in *to4)
{
	static uint8_t msg[MSG_LEN + ACK_LEN];
	uint8_t ctl[CMSG_SPACE(sizeof(uint16_t))] __attribute__((aligned(8)));
	struct iovec iov = { msg, c->mode == ACK ? MSG_LEN + ACK_LEN :
						     MSG_LEN };
	struct mmsghdr m = { .msg_hdr = { .msg_name = &c->peer6,
					  .msg_namelen = sizeof(c->peer6),
					  .msg_iov = &iov,
					  .msg_iovlen = 1 } };

	if (c->mode == PLAIN) {
		if (sendto(c->fd, msg, 16, 0, (const struct sockaddr *)to4,
			   sizeof(*to4)) != 16)
			die("sendto");
		return;
	}
	if (c->mode == ACK) {
		struct cmsghdr *cm;
		uint16_t seg = MSG_LEN;

		memset(ctl, 0, sizeof(ctl));
		m.msg_hdr.msg_control = ctl;
		m.msg_hdr.msg_controllen = sizeof(ctl);
		cm = CMSG_FIRSTHDR(&m.msg_hdr);
		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = UDP_SEGMENT;
		cm->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
	}
	ts_b = __rdtsc();
	if (sendmmsg(c->fd, &m, 1, 0) != 1)
		die("sendmmsg");
	ts_c = __rdtsc();
	if (ts_a && tsn < 300000) { tv_turn[tsn] = ts_b - ts_a; tv_send[tsn++] = ts_c - ts_b; }
}

int main(int argc, char **argv)
{
	static struct conn c;
	struct sockaddr_in peer4 = { .sin_family = AF_INET };
	double *rtt;
	long n = 100000, i;
	int server;

	if (argc < 4)
		goto usage;
	c.mode = !strcmp(argv[1], "plain") ? PLAIN :
		 !strcmp(argv[1], "one")   ? ONE :
		 !strcmp(argv[1], "ack")   ? ACK :
					     (enum mode)-1;
	server = !strcmp(argv[2], "server");
	if ((int)c.mode < 0 || (!server && strcmp(argv[2], "client")) ||
	    (!server && argc < 5))
		goto usage;
	if (server) {
		sock_open(&c, (uint16_t)atoi(argv[3]));
		for (;;) {
			recv_one(&c, &peer4);
			send_one(&c, &peer4);
		}
	}
	if (argc > 5)
		n = atol(argv[5]);
	sock_open(&c, 0);
	peer4.sin_port = htons((uint16_t)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[4], &peer4.sin_addr) != 1)
		goto usage;
	c.peer6.sin6_family = AF_INET6;
	c.peer6.sin6_port = peer4.sin_port;
	c.peer6.sin6_addr.s6_addr[10] = c.peer6.sin6_addr.s6_addr[11] = 0xff;
	memcpy(&c.peer6.sin6_addr.s6_addr[12], &peer4.sin_addr, 4);
	rtt = calloc((size_t)n, sizeof(*rtt));
	if (!rtt || n < 1000)
		goto usage;
	for (i = -1000; i < n; i++) { /* 1000 to warm up */
		double t = now_us();

		send_one(&c, &peer4);
		recv_one(&c, &peer4);
		if (i >= 0)
			rtt[i] = now_us() - t;
	}
	qsort(rtt, (size_t)n, sizeof(*rtt), cmp_double);
	{ int ull(const void *a, const void *b) { unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b; return x < y ? -1 : x > y; }
	  qsort(tv_turn, tsn, 8, ull); qsort(tv_send, tsn, 8, ull);
	  printf("turn p25 %.0f med %.0f p75 %.0f ns; send p25 %.0f med %.0f p75 %.0f ns\n", tv_turn[tsn/4]/2.596, tv_turn[tsn/2]/2.596, tv_turn[3*tsn/4]/2.596, tv_send[tsn/4]/2.596, tv_send[tsn/2]/2.596, tv_send[3*tsn/4]/2.596); }
	printf("mode=%s median_us=%.3f\n", argv[1], rtt[n / 2] / 2);
	return 0;
usage:
	fprintf(stderr, "usage: udp_floor plain|one|ack server PORT\n"
			"       udp_floor plain|one|ack client PORT "
			"SERVER_IPV4 [N>=1000]\n");
	return 1;
}
