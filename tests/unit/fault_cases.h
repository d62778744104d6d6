/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The fault-guarded copy and atomics (util/fault.h), included by
 * test_fault.c (the build's variant: assembly with a fixup on x86-64) and
 * test_fault_generic.c (sigsetjmp around memcpy, as on other CPUs, or
 * around a plain loop under AddressSanitizer):
 * - every length 0..300 and some large ones copy exactly (odd
 *   alignments, nothing outside the range written);
 * - a destination page that is read-only or unmapped, or a source page
 *   that is unmapped or PROT_NONE, returns an address in that page (the
 *   assembly's long copies have copied every byte before it), and the
 *   thread goes on (again and again: the signal mask is not left
 *   blocked);
 * - CAS and fetch-and-add give the right values, and report a read-only
 *   or unmapped target;
 * - a fault outside a guarded call reaches the handler installed before
 *   (SA_SIGINFO or plain), or kills with SIGSEGV when that was SIG_DFL or
 *   SIG_IGN; a SIGSEGV sent with kill() while SIG_IGN was installed is
 *   still ignored (each in a child process).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "util/fault.h"

/* util/fault.c's CPU switch (x86-64 assembly only), flipped to test both
 * of its loops. */
extern int sv_fault_avx2;

static long page;

static uint8_t *map_pages(int n)
{
	void *p = mmap(NULL, (size_t)n * (size_t)page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(p != MAP_FAILED);
	return p;
}

static void test_lengths(void)
{
	size_t big[] = { 1000, 2047, 2048, 4096, 4097, 65536 + 3, 1 << 20 };
	uint8_t *src = map_pages(300), *dst = map_pages(300);
	size_t n, i, off;
	int bad = 0;

	for (i = 0; i < 300 * (size_t)page; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	for (off = 0; off < 3; off++) {
		for (n = 0; n <= 300; n++) {
			memset(dst, 0xee, 400);
			if (sv_fault_copy(dst + off + 1, src + off, n))
				bad++;
			if (dst[off] != 0xee || dst[off + 1 + n] != 0xee ||
			    memcmp(dst + off + 1, src + off, n))
				bad++;
		}
	}
	CHECK_EQ(bad, 0);
	for (i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		memset(dst, 0, big[i] + 2);
		CHECK_EQ(sv_fault_copy(dst + 1, src + 5, big[i]), 0);
		CHECK(!memcmp(dst + 1, src + 5, big[i]));
		CHECK_EQ(dst[big[i] + 1], 0);
	}
	munmap(src, 300 * (size_t)page);
	munmap(dst, 300 * (size_t)page);
}

/* Copy n bytes ending `into` bytes inside the bad page (the last of the
 * mapping): the faulting address is in the bad page (where the access
 * that faulted starts in it, or its first byte), and a long copy has
 * copied every byte before it. */
static void fault_case(int how, size_t n, size_t into, bool bad_src)
{
	int pages = (int)(n / (size_t)page) + 2;
	size_t len = (size_t)pages * (size_t)page;
	uint8_t *a = map_pages(pages), *b = map_pages(pages);
	uint8_t *src = bad_src ? a : b, *dst = bad_src ? b : a;
	uint8_t *bad = a + len - page;
	size_t start = len - page - (n - into);
	uintptr_t got;

	memset(b, 0x5a, len);
	memset(a, 0, len);
	if (how == 0)
		REQUIRE(mprotect(bad, page, bad_src ? PROT_NONE : PROT_READ) ==
			0);
	else
		REQUIRE(munmap(bad, page) == 0);
	got = sv_fault_copy(dst + start, src + start, n);
	if (got < (uintptr_t)bad || got >= (uintptr_t)bad + page) {
		fprintf(stderr,
			"fault case how %d n %zu into %zu src %d: got %#lx, page at %p\n",
			how, n, into, bad_src, (unsigned long)got, (void *)bad);
		check_failed++;
	} else {
		check_passed++;
	}
#if defined(__x86_64__) && !defined(SV_FAULT_GENERIC) && \
	!defined(__SANITIZE_ADDRESS__)
	/* The assembly's rep movsb moves every byte up to the page (a
	 * short copy moves a few wide pieces, each all or nothing; memcpy
	 * promises nothing). */
	if (!bad_src && n >= 4096)
		CHECK(!memcmp(a + start, b + start, n - into));
#endif
	munmap(a, len);
	munmap(b, len);
}

static void test_faults(void)
{
	size_t ns[] = { 1, 3, 8, 13, 16, 40, 64, 100, 4096, 100000 };
	size_t into;
	unsigned int i;
	int how, bad_src;

	/* Half the copy in the bad page, at most half the page: a copy
	 * ending past the mapping may fault there first (glibc 2.41's
	 * memcpy of 100000 bytes stores its tail first). */
	for (how = 0; how < 2; how++)
		for (bad_src = 0; bad_src < 2; bad_src++)
			for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
				into = ns[i] > 1 ? ns[i] / 2 : 1;
				if (into > (size_t)page / 2)
					into = (size_t)page / 2;
				fault_case(how, ns[i], into, bad_src);
			}
}

static void test_atomics(void)
{
	uint8_t *p = map_pages(2);
	uint64_t *w = (uint64_t *)p, *ro = (uint64_t *)(p + page);
	uint64_t orig = 0;

	*w = 5;
	CHECK_EQ(sv_fault_cas64(w, 5, 9, &orig), 0);
	CHECK_EQ(orig, 5);
	CHECK_EQ(*w, 9);
	CHECK_EQ(sv_fault_cas64(w, 5, 11, &orig), 0);
	CHECK_EQ(orig, 9);
	CHECK_EQ(*w, 9);
	CHECK_EQ(sv_fault_fadd64(w, 3, &orig), 0);
	CHECK_EQ(orig, 9);
	CHECK_EQ(*w, 12);
	*ro = 77;
	REQUIRE(mprotect(ro, page, PROT_READ) == 0);
	CHECK_EQ(sv_fault_cas64(ro, 77, 1, &orig), (uintptr_t)ro);
	CHECK_EQ(sv_fault_fadd64(ro, 1, &orig), (uintptr_t)ro);
	CHECK_EQ(*ro, 77);
	REQUIRE(munmap(ro, page) == 0);
	CHECK_EQ(sv_fault_fadd64(ro, 1, &orig), (uintptr_t)ro);
	munmap(p, page);
}

/* From another thread too (the guard is per thread). */
static void *thread_faults(void *arg)
{
	(void)arg;
	test_faults();
	return NULL;
}

/* ---- chaining, each in a child ------------------------------------------ */

static volatile sig_atomic_t seen;

static void prev_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	_exit(si && si->si_signo == sig && sig == SIGSEGV ? 42 : 1);
}

static void prev_plain(int sig)
{
	_exit(sig == SIGSEGV ? 43 : 1);
}

static void crash(void)
{
	/* A fault outside any guarded call: an application's own bug. */
	volatile int *p = (volatile int *)map_pages(1);

	REQUIRE(mprotect((void *)p, page, PROT_NONE) == 0);
	*p = 1;
}

/* Run fn in a child; its wait status. */
static int in_child(void (*fn)(void))
{
	int st = 0;
	pid_t pid = fork();

	REQUIRE(pid >= 0);
	if (!pid) {
		fn();
		_exit(0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	return st;
}

/* A guarded fault first: the handler must be installed and working
 * before the application's own fault goes through it. */
static void guarded_then_crash(void)
{
	uint8_t *p = map_pages(1);

	REQUIRE(mprotect(p, page, PROT_READ) == 0);
	if (sv_fault_copy(p, "x", 1) != (uintptr_t)p)
		_exit(2);
	crash();
}

static void child_info(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prev_info;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	sv_fault_install();
	guarded_then_crash();
}

static void child_plain(void)
{
	signal(SIGSEGV, prev_plain);
	sv_fault_install();
	guarded_then_crash();
}

static void child_dfl(void)
{
	signal(SIGSEGV, SIG_DFL);
	sv_fault_install();
	guarded_then_crash();
}

static void child_ign(void)
{
	signal(SIGSEGV, SIG_IGN);
	sv_fault_install();
	guarded_then_crash();
}

static void child_ign_kill(void)
{
	signal(SIGSEGV, SIG_IGN);
	sv_fault_install();
	kill(getpid(), SIGSEGV);
	seen = 1;
}

static void test_chain(void)
{
	int st;

	st = in_child(child_info);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
	st = in_child(child_plain);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 43);
	st = in_child(child_dfl);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	st = in_child(child_ign);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	st = in_child(child_ign_kill);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int run_fault_cases(void)
{
	pthread_t t;

	page = sysconf(_SC_PAGESIZE);
	test_lengths();
	test_chain(); /* before this process installs the guard */
	sv_fault_install();
	CHECK(sv_fault_installed());
	sv_fault_install(); /* once: a second call changes nothing */
	test_faults();
	test_atomics();
	if (pthread_create(&t, NULL, thread_faults, NULL))
		REQUIRE(!"pthread_create");
	pthread_join(t, NULL); /* before the counters are touched again */
	test_faults(); /* again: nothing was left blocked */
#if defined(__x86_64__) && !defined(SV_FAULT_GENERIC) && \
	!defined(__SANITIZE_ADDRESS__)
	if (sv_fault_avx2) { /* and the 16-byte loop of CPUs without AVX2 */
		sv_fault_avx2 = 0;
		test_lengths();
		test_faults();
		sv_fault_avx2 = 1;
	}
#endif
	return check_done();
}
