/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets (rsocket(7)) through our librdmacm: stream echo with the bytes
 * checked, nonblocking connect/accept with rpoll, shutdown and close
 * semantics, errno values for misuse, socket options, riomap/riowrite and
 * datagrams.  Two-process cases exchange the port on the control socket.
 */
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include <sys/mman.h>

#include "cm/cm_test.h"

static uint8_t pat(size_t i, unsigned seed)
{
	return (uint8_t)(i * 131 + seed + (i >> 12));
}

/* A listening rsocket on 127.0.0.1, ephemeral port. */
static int rs_listener(uint16_t *port)
{
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	socklen_t len = sizeof(a);
	int ls = rsocket(AF_INET, SOCK_STREAM, 0);

	REQUIRE(ls >= 0);
	REQUIRE(rbind(ls, (struct sockaddr *)&a, sizeof(a)) == 0);
	REQUIRE(rlisten(ls, 4) == 0);
	REQUIRE(rgetsockname(ls, (struct sockaddr *)&a, &len) == 0);
	*port = ntohs(a.sin_port);
	REQUIRE(*port != 0);
	return ls;
}

static int rs_dial(uint16_t port)
{
	struct sockaddr_in a = ct_addr4("127.0.0.1", port);
	int s = rsocket(AF_INET, SOCK_STREAM, 0);

	REQUIRE(s >= 0);
	REQUIRE(rconnect(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	return s;
}

static int send_all(int s, const uint8_t *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t r = rsend(s, p + off, n - off, 0);

		if (r <= 0)
			return -1;
		off += (size_t)r;
	}
	return 0;
}

static int recv_all(int s, uint8_t *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t r = rrecv(s, p + off, n - off, 0);

		if (r <= 0)
			return -1;
		off += (size_t)r;
	}
	return 0;
}

/* ---- echo: sizes 1 B .. 1 MiB, many messages, bytes checked ------------- */

static const size_t echo_sizes[] = {
	1, 2, 63, 64, 65, 1000, 4096, 65535, 65536, 65537, 300000, 1 << 20
};
#define N_ECHO (sizeof(echo_sizes) / sizeof(echo_sizes[0]))

/* A blocking echo of a 1 MiB message deadlocks, as over TCP, unless the
 * rings hold it: 1 MiB asked, 2 MiB given (SO_RCVBUF doubles). */
static void big_bufs(int s)
{
	int v = 1 << 20;

	CHECK(rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) == 0);
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) == 0);
}

static void echo_a(int fd)
{
	uint16_t port;
	int ls = rs_listener(&port), s;
	uint8_t *buf = malloc(1 << 20);
	ssize_t r;

	big_bufs(ls); /* inherited by the accepted socket */
	ct_send_u32(fd, port);
	s = raccept(ls, NULL, NULL);
	REQUIRE(s >= 0);
	/* Echo until EOF. */
	while ((r = rrecv(s, buf, 1 << 20, 0)) > 0)
		REQUIRE(send_all(s, buf, (size_t)r) == 0);
	CHECK_EQ(r, 0);
	CHECK(rclose(s) == 0);
	CHECK_ERRNO(rclose(s), EBADF);
	rclose(ls);
	free(buf);
}

static void echo_b(int fd)
{
	uint16_t port = (uint16_t)ct_recv_u32(fd);
	uint8_t *out = malloc(1 << 20), *in = malloc(1 << 20);
	struct sockaddr_in a = ct_addr4("127.0.0.1", port);
	int s = rsocket(AF_INET, SOCK_STREAM, 0), bad = 0;
	size_t i, k;
	unsigned msg = 0;

	REQUIRE(s >= 0);
	big_bufs(s);
	REQUIRE(rconnect(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	for (i = 0; i < N_ECHO; i++) {
		size_t n = echo_sizes[i];
		int reps = n < 100000 ? 50 : 3;

		while (reps--) {
			for (k = 0; k < n; k++)
				out[k] = pat(k, msg);
			REQUIRE(send_all(s, out, n) == 0);
			REQUIRE(recv_all(s, in, n) == 0);
			if (memcmp(in, out, n))
				bad++;
			msg++;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK(msg > 300);
	/* EOF both ways: our shutdown ends the server's loop, whose close
	 * ends ours with 0. */
	CHECK(rshutdown(s, SHUT_WR) == 0);
	CHECK_EQ(rrecv(s, in, 10, 0), 0);
	CHECK(rclose(s) == 0);
	free(out);
	free(in);
}

/* ---- nonblocking connect and accept with rpoll -------------------------------- */

static void nonblock_a(int fd)
{
	uint16_t port;
	int ls = rs_listener(&port), s;
	struct pollfd p;
	char buf[16];

	REQUIRE(rfcntl(ls, F_SETFL, O_NONBLOCK) == 0);
	CHECK(rfcntl(ls, F_GETFL) & O_NONBLOCK);
	/* Nobody has connected yet. */
	CHECK_ERRNO(raccept(ls, NULL, NULL), EAGAIN);
	p.fd = ls;
	p.events = POLLIN;
	CHECK_EQ(rpoll(&p, 1, 0), 0);
	ct_send_u32(fd, port);
	CHECK_EQ(rpoll(&p, 1, 5000), 1);
	CHECK(p.revents & POLLIN);
	s = raccept(ls, NULL, NULL);
	REQUIRE(s >= 0);
	/* Nothing to read yet: EAGAIN on a nonblocking accepted socket. */
	CHECK(rfcntl(s, F_SETFL, O_NONBLOCK) == 0);
	CHECK_ERRNO(rrecv(s, buf, sizeof(buf), 0), EAGAIN);
	ct_send_u32(fd, 1); /* now the peer sends */
	p.fd = s;
	p.events = POLLIN;
	CHECK_EQ(rpoll(&p, 1, 5000), 1);
	CHECK_EQ(rrecv(s, buf, sizeof(buf), 0), 5);
	CHECK(!memcmp(buf, "hello", 5));
	p.events = POLLOUT;
	CHECK_EQ(rpoll(&p, 1, 5000), 1);
	CHECK_EQ(rsend(s, "world", 5, 0), 5);
	ct_sync(fd);
	rclose(s);
	rclose(ls);
}

static void nonblock_b(int fd)
{
	uint16_t port = (uint16_t)ct_recv_u32(fd);
	struct sockaddr_in a = ct_addr4("127.0.0.1", port);
	int s = rsocket(AF_INET, SOCK_STREAM, 0), err = -1, r;
	socklen_t len = sizeof(err);
	struct pollfd p = { .fd = s, .events = POLLOUT };
	char buf[16];

	REQUIRE(s >= 0);
	REQUIRE(rfcntl(s, F_SETFL, O_NONBLOCK) == 0);
	r = rconnect(s, (struct sockaddr *)&a, sizeof(a));
	CHECK(r == 0 || errno == EINPROGRESS);
	CHECK_EQ(rpoll(&p, 1, 5000), 1);
	CHECK(p.revents & POLLOUT);
	CHECK(rgetsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0);
	CHECK_EQ(err, 0);
	CHECK_ERRNO(rconnect(s, (struct sockaddr *)&a, sizeof(a)), EISCONN);
	ct_recv_u32(fd);
	CHECK_EQ(rsend(s, "hello", 5, 0), 5);
	p.events = POLLIN;
	CHECK_EQ(rpoll(&p, 1, 5000), 1);
	CHECK_EQ(rrecv(s, buf, sizeof(buf), MSG_DONTWAIT), 5);
	CHECK(!memcmp(buf, "world", 5));
	ct_sync(fd);
	rclose(s);
}

/* ---- shutdown and close ------------------------------------------------------------ */

static void shut_a(int fd)
{
	uint16_t port;
	int ls = rs_listener(&port), s;
	char buf[64];

	ct_send_u32(fd, port);
	s = raccept(ls, NULL, NULL);
	REQUIRE(s >= 0);
	/* Data sent before the peer's SHUT_WR, then EOF (0), repeatedly. */
	CHECK_EQ(recv_all(s, (uint8_t *)buf, 6), 0);
	CHECK(!memcmp(buf, "before", 6));
	CHECK_EQ(rrecv(s, buf, sizeof(buf), 0), 0);
	CHECK_EQ(rrecv(s, buf, sizeof(buf), 0), 0);
	/* Our direction still works after the peer's half close. */
	CHECK_EQ(rsend(s, "reply", 5, 0), 5);
	ct_sync(fd);
	/* Closing with data unread at the peer. */
	CHECK(rclose(s) == 0);
	CHECK_ERRNO(rclose(s), EBADF);
	rclose(ls);
}

static void shut_b(int fd)
{
	uint16_t port = (uint16_t)ct_recv_u32(fd);
	int s = rs_dial(port);
	char buf[64];

	CHECK_EQ(rsend(s, "before", 6, 0), 6);
	CHECK(rshutdown(s, SHUT_WR) == 0);
	/* Writing after SHUT_WR: EPIPE, as send(2). */
	CHECK_ERRNO(rsend(s, "x", 1, 0), EPIPE);
	CHECK_EQ(recv_all(s, (uint8_t *)buf, 5), 0);
	CHECK(!memcmp(buf, "reply", 5));
	ct_sync(fd);
	/* The peer closed: EOF. */
	CHECK_EQ(rrecv(s, buf, sizeof(buf), 0), 0);
	CHECK_ERRNO(rshutdown(s, 42), EINVAL);
	CHECK(rclose(s) == 0);
}

/* ---- misuse ---------------------------------------------------------------------------- */

static void errors_a(int fd)
{
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	struct sockaddr_in any = ct_addr4("0.0.0.0", 0);
	int pipefd[2], s, l, v = 1;
	socklen_t len = sizeof(a);
	char buf[8];

	(void)fd;
	/* Not an rsocket: EBADF everywhere, ordinary descriptors too. */
	REQUIRE(pipe(pipefd) == 0);
	CHECK_ERRNO(rsend(pipefd[1], "x", 1, 0), EBADF);
	CHECK_ERRNO(rrecv(pipefd[0], buf, 1, 0), EBADF);
	CHECK_ERRNO(rclose(pipefd[0]), EBADF);
	CHECK_ERRNO(rbind(-1, (struct sockaddr *)&a, sizeof(a)), EBADF);
	CHECK_ERRNO(rlisten(12345, 1), EBADF);
	CHECK_ERRNO(rsetsockopt(pipefd[0], SOL_SOCKET, SO_REUSEADDR, &v,
				sizeof(v)),
		    EBADF);
	CHECK_ERRNO(rfcntl(pipefd[0], F_GETFL), EBADF);
	close(pipefd[0]);
	close(pipefd[1]);

	/* rsocket: only plain stream/TCP and dgram/UDP (rdma-core). */
	CHECK_ERRNO(rsocket(AF_UNIX, SOCK_STREAM, 0), ENOTSUP);
	CHECK_ERRNO(rsocket(AF_INET, SOCK_RAW, 0), ENOTSUP);
	CHECK_ERRNO(rsocket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ENOTSUP);
	CHECK_ERRNO(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), ENOTSUP);

	s = rsocket(AF_INET, SOCK_STREAM, 0);
	REQUIRE(s >= 0);
	/* Not connected. */
	CHECK_ERRNO(rsend(s, "x", 1, 0), ENOTCONN);
	CHECK_ERRNO(rrecv(s, buf, 1, 0), ENOTCONN);
	CHECK_ERRNO(rshutdown(s, SHUT_RDWR), ENOTCONN);
	CHECK_ERRNO(rgetpeername(s, (struct sockaddr *)&a, &len), ENOTCONN);
	CHECK_ERRNO(raccept(s, NULL, NULL), EINVAL); /* not listening */
	CHECK_ERRNO(rbind(s, NULL, sizeof(a)), EFAULT);
	CHECK_ERRNO(rbind(s, (struct sockaddr *)&a, 3), EINVAL);
	CHECK_ERRNO(rsend(s, NULL, 10, 0), EFAULT);
	CHECK_ERRNO(rsendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof(a)),
		    EISCONN);
	CHECK_ERRNO(rsend(s, "x", 1, MSG_OOB), EOPNOTSUPP);
	CHECK_ERRNO(rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, NULL, 4), EFAULT);
	CHECK_ERRNO(rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, 1), EINVAL);
	CHECK_ERRNO(rsetsockopt(s, SOL_SOCKET, SO_BROADCAST, &v, sizeof(v)),
		    ENOTSUP);
	CHECK_ERRNO(rgetsockopt(s, 999, 1, &v, &len), ENOTSUP);
	CHECK_ERRNO(rfcntl(s, F_GETLK, NULL), ENOTSUP);
	CHECK_ERRNO(riomap(s, buf, sizeof(buf), PROT_WRITE, 0, 0), EINVAL);
	CHECK_ERRNO(riomap(s, buf, sizeof(buf), PROT_READ, 0, 0), EINVAL);
	CHECK_ERRNO(riounmap(s, buf, sizeof(buf)), EINVAL);
	/* Bound twice; then a port in use. */
	CHECK(rbind(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK_ERRNO(rbind(s, (struct sockaddr *)&a, sizeof(a)), EINVAL);
	CHECK(rlisten(s, 2) == 0);
	CHECK(rlisten(s, 4) == 0); /* listen again: fine */
	CHECK_ERRNO(rconnect(s, (struct sockaddr *)&any, sizeof(any)), EINVAL);
	len = sizeof(a);
	CHECK(rgetsockname(s, (struct sockaddr *)&a, &len) == 0);
	CHECK_EQ(len, sizeof(a));
	l = rsocket(AF_INET, SOCK_STREAM, 0);
	REQUIRE(l >= 0);
	CHECK_ERRNO(rbind(l, (struct sockaddr *)&a, sizeof(a)), EADDRINUSE);
	rclose(l);
	CHECK(rclose(s) == 0);

	/* Nobody listens: ECONNREFUSED, then the socket reports itself
	 * unusable. */
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	REQUIRE(s >= 0);
	CHECK_ERRNO(rconnect(s, (struct sockaddr *)&a, sizeof(a)),
		    ECONNREFUSED);
	CHECK(rclose(s) == 0);
}

/* ---- options ------------------------------------------------------------------------------ */

static int getint(int s, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (rgetsockopt(s, level, name, &v, &len) || len != sizeof(v))
		return -1000;
	return v;
}

static void options_a(int fd)
{
	struct linger lg = { 1, 5 }, lg2;
	socklen_t len = sizeof(lg2);
	int s, v;

	(void)fd;
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	REQUIRE(s >= 0);
	v = 1;
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_SOCKET, SO_REUSEADDR), 1);
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_SOCKET, SO_KEEPALIVE), 1);
	v = 0;
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_SOCKET, SO_KEEPALIVE), 0);
	/* Buffer sizes are doubled, as Linux and rdma-core do. */
	v = 1 << 18;
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_SOCKET, SO_SNDBUF), 1 << 19);
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_SOCKET, SO_RCVBUF), 1 << 19);
	CHECK(rsetsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	CHECK(rgetsockopt(s, SOL_SOCKET, SO_LINGER, &lg2, &len) == 0);
	CHECK_EQ(lg2.l_onoff, 1);
	CHECK_EQ(getint(s, SOL_SOCKET, SO_ERROR), 0);
	CHECK_EQ(getint(s, SOL_SOCKET, SO_TYPE), SOCK_STREAM);
	v = 1;
	CHECK(rsetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, IPPROTO_TCP, TCP_NODELAY), 1);
	v = 1400;
	CHECK(rsetsockopt(s, IPPROTO_TCP, TCP_MAXSEG, &v, sizeof(v)) == 0);
	CHECK(getint(s, IPPROTO_TCP, TCP_MAXSEG) > 0);
	v = 30;
	CHECK(rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, IPPROTO_TCP, TCP_KEEPIDLE), 30);
	v = 0;
	CHECK_ERRNO(rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)),
		    EINVAL);
	/* SOL_RDMA: rsocket(7)'s options, before connecting. */
	v = 100;
	CHECK(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_RDMA, RDMA_SQSIZE), 100);
	v = 200;
	CHECK(rsetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_RDMA, RDMA_RQSIZE), 200);
	v = 0x20000;
	CHECK(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_RDMA, RDMA_SQSIZE), 0xFFFE);
	v = 128;
	CHECK(rsetsockopt(s, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_RDMA, RDMA_INLINE), 128);
	v = 4;
	CHECK(rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v)) == 0);
	CHECK_EQ(getint(s, SOL_RDMA, RDMA_IOMAPSIZE), 4);
	CHECK_ERRNO(rsetsockopt(s, SOL_RDMA, 77, &v, sizeof(v)), ENOTSUP);
	{
		struct ibv_path_data pd[2];
		socklen_t pl = sizeof(pd);

		memset(pd, 0, sizeof(pd));
		CHECK_ERRNO(rsetsockopt(s, SOL_RDMA, RDMA_ROUTE, pd, 3),
			    EINVAL);
		CHECK(rsetsockopt(s, SOL_RDMA, RDMA_ROUTE, pd, sizeof(pd[0])) ==
		      0);
		CHECK(rgetsockopt(s, SOL_RDMA, RDMA_ROUTE, pd, &pl) == 0);
		CHECK_EQ(pl, sizeof(pd[0]));
	}
	CHECK(rclose(s) == 0);
}

/* Options on a connected pair, and SOL_RDMA refused after connect. */
static void opts_conn_a(int fd)
{
	uint16_t port;
	int ls, s, v = 64;
	struct ibv_path_data pd;
	socklen_t pl = sizeof(pd);

	ls = rs_listener(&port);
	/* An accepted socket inherits the listener's RDMA sizes. */
	v = 64;
	CHECK(rsetsockopt(ls, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)) == 0);
	ct_send_u32(fd, port);
	s = raccept(ls, NULL, NULL);
	REQUIRE(s >= 0);
	CHECK_EQ(getint(s, SOL_RDMA, RDMA_SQSIZE), 64);
	CHECK_ERRNO(rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)),
		    EINVAL);
	ct_sync(fd);
	rclose(s);
	rclose(ls);
	(void)pd;
	(void)pl;
}

static void opts_conn_b(int fd)
{
	uint16_t port = (uint16_t)ct_recv_u32(fd);
	int s = rs_dial(port), v = 1;
	struct ibv_path_data pd;
	socklen_t pl = sizeof(pd);
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	CHECK_ERRNO(rsetsockopt(s, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)),
		    EINVAL);
	/* RDMA_ROUTE reads the route the connection took. */
	CHECK(rgetsockopt(s, SOL_RDMA, RDMA_ROUTE, &pd, &pl) == 0);
	CHECK_EQ(pl, sizeof(pd));
	CHECK(rgetpeername(s, (struct sockaddr *)&a, &len) == 0);
	CHECK_EQ(ntohs(a.sin_port), port);
	CHECK_EQ(a.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	ct_sync(fd);
	rclose(s);
}

/* ---- riomap and riowrite --------------------------------------------------------------------- */

#define IO_LEN (1 << 20)

static void iomap_a(int fd)
{
	uint16_t port;
	int ls = rs_listener(&port), s, v = 2, bad = 0;
	uint8_t *buf = calloc(1, IO_LEN), c;
	off_t off;
	size_t i;

	CHECK(rsetsockopt(ls, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v)) == 0);
	ct_send_u32(fd, port);
	s = raccept(ls, NULL, NULL);
	REQUIRE(s >= 0);
	/* Wait for the peer's first message: connected both ways. */
	CHECK_EQ(rrecv(s, &c, 1, 0), 1);
	off = riomap(s, buf, IO_LEN, PROT_WRITE, 0, 4096);
	CHECK_EQ(off, 4096);
	/* The mapping travels before this byte (same RC queue). */
	CHECK_EQ(rsend(s, "m", 1, 0), 1);
	/* The peer riowrites, then rsends: ordered after the data. */
	CHECK_EQ(rrecv(s, &c, 1, 0), 1);
	for (i = 0; i < IO_LEN; i++)
		if (buf[i] != pat(i, 7))
			bad++;
	CHECK_EQ(bad, 0);
	CHECK(riounmap(s, buf, IO_LEN) == 0);
	CHECK_ERRNO(riounmap(s, buf, IO_LEN), EINVAL);
	ct_sync(fd);
	rclose(s);
	rclose(ls);
	free(buf);
}

static void iomap_b(int fd)
{
	uint16_t port = (uint16_t)ct_recv_u32(fd);
	int v = 2, s = rsocket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = ct_addr4("127.0.0.1", port);
	uint8_t *src = malloc(IO_LEN), c;
	size_t i, done = 0;

	REQUIRE(s >= 0);
	CHECK(rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v)) == 0);
	REQUIRE(rconnect(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	for (i = 0; i < IO_LEN; i++)
		src[i] = pat(i, 7);
	CHECK_EQ(rsend(s, "c", 1, 0), 1);
	CHECK_EQ(rrecv(s, &c, 1, 0), 1);
	/* Outside the mapping: EINVAL. */
	errno = 0;
	CHECK_EQ(riowrite(s, src, 10, 0, 0), (size_t)-1);
	CHECK_EQ(errno, EINVAL);
	/* Several writes of odd sizes cover the buffer. */
	while (done < IO_LEN) {
		size_t n = IO_LEN - done < 77777 ? IO_LEN - done : 77777;
		size_t r = riowrite(s, src + done, n, 4096 + done, 0);

		if (r == (size_t)-1 || !r)
			break;
		done += r;
	}
	CHECK_EQ(done, IO_LEN);
	CHECK_EQ(rsend(s, "d", 1, 0), 1);
	ct_sync(fd);
	rclose(s);
	free(src);
}

/* ---- datagrams ------------------------------------------------------------------------------ */

static void dgram_a(int fd)
{
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0), from;
	socklen_t len = sizeof(a);
	int s = rsocket(AF_INET, SOCK_DGRAM, 0), i, ok = 0;
	uint16_t peer_port;
	char buf[2048];

	REQUIRE(s >= 0);
	REQUIRE(rbind(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	REQUIRE(rgetsockname(s, (struct sockaddr *)&a, &len) == 0);
	ct_send_u32(fd, ntohs(a.sin_port));
	peer_port = (uint16_t)ct_recv_u32(fd);
	/* Echo 20 datagrams back to where they came from; the address
	 * must be the peer's UDP address. */
	for (i = 0; i < 20; i++) {
		ssize_t r;

		len = sizeof(from);
		r = rrecvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from,
			      &len);
		if (r <= 0)
			break;
		if (len == sizeof(from) && from.sin_family == AF_INET &&
		    ntohs(from.sin_port) == peer_port &&
		    from.sin_addr.s_addr == htonl(INADDR_LOOPBACK))
			ok++;
		CHECK_EQ(rsendto(s, buf, (size_t)r, 0, (struct sockaddr *)&from,
				 len),
			 r);
	}
	CHECK_EQ(ok, 20);
	ct_sync(fd);
	rclose(s);
}

static void dgram_b(int fd)
{
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0), srv, from;
	socklen_t len = sizeof(a);
	int s = rsocket(AF_INET, SOCK_DGRAM, 0), i, good = 0;
	struct pollfd p;
	char out[1500], in[2048];

	REQUIRE(s >= 0);
	srv = ct_addr4("127.0.0.1", (uint16_t)ct_recv_u32(fd));
	REQUIRE(rbind(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	REQUIRE(rgetsockname(s, (struct sockaddr *)&a, &len) == 0);
	ct_send_u32(fd, ntohs(a.sin_port));
	for (i = 0; i < 20; i++) {
		/* Small ones go over UD once the peer is known; 1500
		 * bytes exceed the UD MTU and take the UDP socket. */
		size_t n = i % 5 == 4 ? 1500 : 16 + i * 30;
		ssize_t r;

		memset(out, 'a' + i, n);
		CHECK_EQ(rsendto(s, out, n, 0, (struct sockaddr *)&srv,
				 sizeof(srv)),
			 (ssize_t)n);
		p.fd = s;
		p.events = POLLIN;
		CHECK_EQ(rpoll(&p, 1, 5000), 1);
		len = sizeof(from);
		r = rrecvfrom(s, in, sizeof(in), 0, (struct sockaddr *)&from,
			      &len);
		if (r == (ssize_t)n && !memcmp(in, out, n) &&
		    from.sin_port == srv.sin_port)
			good++;
	}
	CHECK_EQ(good, 20);
	/* No destination on an unconnected datagram socket. */
	CHECK_ERRNO(rsend(s, "x", 1, 0), EDESTADDRREQ);
	CHECK_ERRNO(rlisten(s, 1), EOPNOTSUPP);
	CHECK_EQ(getint(s, SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
	ct_sync(fd);
	rclose(s);
}

/* ---- rselect and ordinary descriptors ------------------------------------------------------------ */

static void select_a(int fd)
{
	int pipefd[2], s;
	fd_set r;
	struct timeval tv = { 0, 100000 };
	struct pollfd p[2];

	(void)fd;
	REQUIRE(pipe(pipefd) == 0);
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	REQUIRE(s >= 0);
	/* rpoll over an ordinary descriptor next to an rsocket. */
	CHECK_EQ(write(pipefd[1], "x", 1), 1);
	p[0].fd = pipefd[0];
	p[0].events = POLLIN;
	p[1].fd = s;
	p[1].events = POLLIN;
	CHECK_EQ(rpoll(p, 2, 1000), 1);
	CHECK(p[0].revents & POLLIN);
	FD_ZERO(&r);
	FD_SET(pipefd[0], &r);
	CHECK_EQ(rselect(pipefd[0] + 1, &r, NULL, NULL, &tv), 1);
	CHECK(FD_ISSET(pipefd[0], &r));
	CHECK_EQ(read(pipefd[0], p, 1), 1);
	FD_ZERO(&r);
	FD_SET(pipefd[0], &r);
	tv.tv_sec = 0;
	tv.tv_usec = 50000;
	CHECK_EQ(rselect(pipefd[0] + 1, &r, NULL, NULL, &tv), 0);
	rclose(s);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* clang-format off */
static const struct ct_case cases[] = {
	CT_CASE(echo, 120),
	CT_CASE(nonblock, 30),
	CT_CASE(shut, 30),
	CT_CASE1(errors, 30),
	CT_CASE1(options, 20),
	CT_CASE(opts_conn, 30),
	CT_CASE(iomap, 30),
	CT_CASE(dgram, 30),
	CT_CASE1(select, 20),
	{ NULL }
};
/* clang-format on */

CT_MAIN(cases)
