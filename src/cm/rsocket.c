/*
 * rsockets (RDMACM_1.0's socket-like API over RDMA) are not implemented
 * yet.  rsocket() fails with ENOSYS, so no rsocket descriptor can exist;
 * every call that names one therefore answers EBADF, as rdma-core does for
 * a descriptor that is not an rsocket.  rpoll and rselect, which rdma-core
 * also accepts for ordinary descriptors (rdmacm-utils' ucmatose, udaddy,
 * mckey, cmtime and rping poll their event channel with them), are poll()
 * and select().
 */
#include "cm/cm.h"

#include <poll.h>
#include <rdma/rsocket.h>
#include <stdarg.h>
#include <sys/select.h>

SV_EXPORT int rsocket(int domain, int type, int protocol)
{
	return sv_cm_err(ENOSYS);
}

SV_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int rlisten(int socket, int backlog)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int rconnect(int socket, const struct sockaddr *addr,
		       socklen_t addrlen)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int rshutdown(int socket, int how)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int rclose(int socket)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			    struct sockaddr *src_addr, socklen_t *addrlen)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			  const struct sockaddr *dest_addr, socklen_t addrlen)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

SV_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
		      fd_set *exceptfds, struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

SV_EXPORT int rgetpeername(int socket, struct sockaddr *addr,
			   socklen_t *addrlen)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int rgetsockname(int socket, struct sockaddr *addr,
			   socklen_t *addrlen)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int rsetsockopt(int socket, int level, int optname,
			  const void *optval, socklen_t optlen)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			  socklen_t *optlen)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int rfcntl(int socket, int cmd, ... /* arg */)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
		       off_t offset)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	return sv_cm_err(EBADF);
}

SV_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
			  off_t offset, int flags)
{
	errno = EBADF;
	return 0;
}
