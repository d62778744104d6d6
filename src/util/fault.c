/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Fault-guarded copies and atomics (util/fault.h).
 *
 * One SIGSEGV/SIGBUS handler per process, installed once.  A fault that a
 * guarded function takes is turned into its error return; any other
 * signal goes to the handler installed before ours, exactly as if ours
 * were not there (an application that installs its own handler after
 * ours must chain to it in the same way, or the guard is gone:
 * docs/security.md, "Local memory").
 *
 * Two ways to come back from the fault:
 *
 * - x86-64 (normal builds): the guarded functions are written in assembly
 *   between two labels and never touch the stack.  The handler sees the
 *   faulting instruction between them, puts the faulting address in rax
 *   and resumes at a `ret` (the kernel's exception-table fixup in user
 *   space).  Nothing is paid until a fault happens: no setjmp, no
 *   thread-local store per copy.
 *   ThreadSanitizer does not see these accesses, which is what the
 *   engine asks of it for registered memory anyway (engine/transport/dma.h).
 * - elsewhere, and under AddressSanitizer: sigsetjmp(env, 0) before a
 *   plain copy, a thread-local pointer to it, and siglongjmp from the
 *   handler.  The handler runs with SA_NODEFER and an empty mask, so
 *   jumping out of it leaves the thread's signal mask as it was (no
 *   sigprocmask per copy).  The copy is memcpy, except under
 *   AddressSanitizer, whose memcpy checks the range first and reports a
 *   page we are about to fault on as its own error: there an
 *   uninstrumented loop.  (ThreadSanitizer loses track of a thread that
 *   leaves a signal handler by siglongjmp; its x86-64 builds use the
 *   assembly.)
 */
#include "util/fault.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
	!defined(SV_FAULT_GENERIC)
#define SV_FAULT_ASM 1
#endif

#ifdef SV_FAULT_ASM
/*
 * rdi dst, rsi src, rdx n.  Below 16 bytes two overlapping scalar moves,
 * up to 64 two or four overlapping 16-byte moves (the last 16 bytes
 * stored last), below 2 KiB a loop of 64 bytes in 32-byte AVX2 moves
 * where the CPU has them, else 16-byte ones (rep movsb's start-up costs
 * several times a 512-byte copy in vector moves), from 2 KiB rep movsb
 * (what glibc's memcpy uses from there to beyond 1 MiB); both for all but
 * the last 64 bytes, which plain moves store last: a string instruction's
 * stores may become visible out of order, but all before any later
 * store, so the last byte lands last (programs poll it).  Only rax, rcx,
 * rdx, rsi, rdi, r8, r9 and xmm/ymm0-3 are used, all caller-saved, and
 * nothing is pushed: the fixup may `ret` from anywhere in between (a
 * fault in the AVX2 loop skips its vzeroupper, which costs nothing but
 * a transition later).
 */
__asm__(".text\n"
	".p2align 4\n"
	".globl sv_fault_copy\n"
	".hidden sv_fault_copy\n"
	".type sv_fault_copy, @function\n"
	"sv_fault_copy:\n"
	".cfi_startproc\n"
	"sv_fault_begin:\n"
	"	cmp $16, %rdx\n"
	"	jb 3f\n"
	"	cmp $64, %rdx\n"
	"	ja 2f\n"
	"	movdqu (%rsi), %xmm0\n"
	"	movdqu -16(%rsi,%rdx), %xmm1\n"
	"	cmp $32, %rdx\n"
	"	jbe 1f\n"
	"	movdqu 16(%rsi), %xmm2\n"
	"	movdqu -32(%rsi,%rdx), %xmm3\n"
	"	movdqu %xmm2, 16(%rdi)\n"
	"	movdqu %xmm3, -32(%rdi,%rdx)\n"
	"1:	movdqu %xmm0, (%rdi)\n"
	"	movdqu %xmm1, -16(%rdi,%rdx)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"2:	cmp $2048, %rdx\n"
	"	jae 8f\n"
	"	lea -64(%rsi,%rdx), %r8\n"
	"	lea -64(%rdi,%rdx), %r9\n"
	"	testb $1, sv_fault_avx2(%rip)\n"
	"	jz 9f\n"
	"11:	vmovdqu (%rsi), %ymm0\n"
	"	vmovdqu 32(%rsi), %ymm1\n"
	"	vmovdqu %ymm0, (%rdi)\n"
	"	vmovdqu %ymm1, 32(%rdi)\n"
	"	add $64, %rsi\n"
	"	add $64, %rdi\n"
	"	sub $64, %rdx\n"
	"	cmp $64, %rdx\n"
	"	ja 11b\n"
	"	vmovdqu (%r8), %ymm0\n"
	"	vmovdqu 32(%r8), %ymm1\n"
	"	vmovdqu %ymm0, (%r9)\n"
	"	vmovdqu %ymm1, 32(%r9)\n"
	"	vzeroupper\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"9:	movdqu (%rsi), %xmm0\n"
	"	movdqu 16(%rsi), %xmm1\n"
	"	movdqu 32(%rsi), %xmm2\n"
	"	movdqu 48(%rsi), %xmm3\n"
	"	movdqu %xmm0, (%rdi)\n"
	"	movdqu %xmm1, 16(%rdi)\n"
	"	movdqu %xmm2, 32(%rdi)\n"
	"	movdqu %xmm3, 48(%rdi)\n"
	"	add $64, %rsi\n"
	"	add $64, %rdi\n"
	"	sub $64, %rdx\n"
	"	cmp $64, %rdx\n"
	"	ja 9b\n"
	"	mov %r8, %rsi\n"
	"	mov %r9, %rdi\n"
	"	jmp 10f\n"
	"8:	lea -64(%rdx), %rcx\n"
	"	rep movsb\n"
	"10:\n"
	"	movdqu (%rsi), %xmm0\n"
	"	movdqu 16(%rsi), %xmm1\n"
	"	movdqu 32(%rsi), %xmm2\n"
	"	movdqu 48(%rsi), %xmm3\n"
	"	movdqu %xmm0, (%rdi)\n"
	"	movdqu %xmm1, 16(%rdi)\n"
	"	movdqu %xmm2, 32(%rdi)\n"
	"	movdqu %xmm3, 48(%rdi)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"3:	cmp $8, %rdx\n"
	"	jb 4f\n"
	"	mov (%rsi), %rax\n"
	"	mov -8(%rsi,%rdx), %rcx\n"
	"	mov %rax, (%rdi)\n"
	"	mov %rcx, -8(%rdi,%rdx)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"4:	cmp $4, %rdx\n"
	"	jb 5f\n"
	"	mov (%rsi), %eax\n"
	"	mov -4(%rsi,%rdx), %ecx\n"
	"	mov %eax, (%rdi)\n"
	"	mov %ecx, -4(%rdi,%rdx)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"5:	test %rdx, %rdx\n"
	"	je 7f\n"
	"	movzbl (%rsi), %eax\n"
	"	movzbl -1(%rsi,%rdx), %ecx\n"
	"	cmp $2, %rdx\n"
	"	jbe 6f\n"
	"	movzbl 1(%rsi), %r8d\n"
	"	mov %r8b, 1(%rdi)\n"
	"6:	mov %al, (%rdi)\n"
	"	mov %cl, -1(%rdi,%rdx)\n"
	"7:	xor %eax, %eax\n"
	"	ret\n"
	".cfi_endproc\n"
	".size sv_fault_copy, .-sv_fault_copy\n"
	/* rdi p, rsi compare, rdx swap, rcx orig_p */
	".p2align 4\n"
	".globl sv_fault_cas64\n"
	".hidden sv_fault_cas64\n"
	".type sv_fault_cas64, @function\n"
	"sv_fault_cas64:\n"
	".cfi_startproc\n"
	"	mov %rsi, %rax\n"
	"	lock cmpxchg %rdx, (%rdi)\n"
	"	mov %rax, (%rcx)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	".cfi_endproc\n"
	".size sv_fault_cas64, .-sv_fault_cas64\n"
	/* rdi p, rsi add, rdx orig_p */
	".p2align 4\n"
	".globl sv_fault_fadd64\n"
	".hidden sv_fault_fadd64\n"
	".type sv_fault_fadd64, @function\n"
	"sv_fault_fadd64:\n"
	".cfi_startproc\n"
	"	lock xadd %rsi, (%rdi)\n"
	"	mov %rsi, (%rdx)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	".cfi_endproc\n"
	".size sv_fault_fadd64, .-sv_fault_fadd64\n"
	"sv_fault_end:\n"
	/* Where a fault resumes: rax holds the address (set by the
	 * handler), the return address is still on top of the stack. */
	".p2align 4\n"
	"sv_fault_fixup:\n"
	"	ret\n");

extern const char sv_fault_begin[], sv_fault_end[], sv_fault_fixup[];

/* The CPU has AVX2 (read by sv_fault_copy; set before any copy). */
int sv_fault_avx2;

__attribute__((constructor)) static void probe_cpu(void)
{
	__builtin_cpu_init();
	sv_fault_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
}

/* Recover if the fault is one of ours; else false. */
static bool recover(siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	uintptr_t addr = (uintptr_t)si->si_addr;

	if (ip < (uintptr_t)sv_fault_begin || ip >= (uintptr_t)sv_fault_end)
		return false;
	uc->uc_mcontext.gregs[REG_RAX] = (greg_t)(addr ? addr : 1);
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)sv_fault_fixup;
	return true;
}

#else /* portable: sigsetjmp around a plain copy */

struct guard {
	sigjmp_buf env;
	uintptr_t addr;
};

/* The guard the thread is inside, if any.  initial-exec: reading it from
 * the handler must not allocate (a dlopened library's dynamic TLS may). */
static __thread struct guard *cur_guard
	__attribute__((tls_model("initial-exec")));

static void guard_enter(struct guard *g)
{
	cur_guard = g;
	/* The handler runs on this thread: only the compiler must not move
	 * the copy before the store or after the clear. */
	atomic_signal_fence(memory_order_seq_cst);
}

static void guard_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	cur_guard = NULL;
}

static uintptr_t guard_faulted(struct guard *g)
{
	cur_guard = NULL;
	return g->addr ? g->addr : 1;
}

static bool recover(siginfo_t *si, void *ucv)
{
	struct guard *g = cur_guard;

	(void)ucv;
	if (!g)
		return false;
	g->addr = (uintptr_t)si->si_addr;
	siglongjmp(g->env, 1);
}

#ifdef __SANITIZE_ADDRESS__
/* Not memcpy (AddressSanitizer's checks the range and reports the fault
 * itself), nor a loop the compiler turns into one. */
__attribute__((no_sanitize_address, noinline,
	       optimize("no-tree-loop-distribute-patterns"))) static void
copy(void *dst, const void *src, size_t n)
{
	volatile uint8_t *d = dst;
	const volatile uint8_t *s = src;

	while (n--)
		*d++ = *s++;
}
#else
#define copy memcpy
#endif

uintptr_t sv_fault_copy(void *dst, const void *src, size_t n)
{
	struct guard g;

	if (sigsetjmp(g.env, 0))
		return guard_faulted(&g);
	guard_enter(&g);
	copy(dst, src, n);
	guard_leave();
	return 0;
}

uintptr_t sv_fault_cas64(uint64_t *p, uint64_t compare, uint64_t swap,
			 uint64_t *orig_p)
{
	struct guard g;
	uint64_t expect = compare;

	if (sigsetjmp(g.env, 0))
		return guard_faulted(&g);
	guard_enter(&g);
	__atomic_compare_exchange_n(p, &expect, swap, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	guard_leave();
	*orig_p = expect;
	return 0;
}

uintptr_t sv_fault_fadd64(uint64_t *p, uint64_t add, uint64_t *orig_p)
{
	struct guard g;
	uint64_t old;

	if (sigsetjmp(g.env, 0))
		return guard_faulted(&g);
	guard_enter(&g);
	old = __atomic_fetch_add(p, add, __ATOMIC_SEQ_CST);
	guard_leave();
	*orig_p = old;
	return 0;
}

#endif

/* ---- the handler ----------------------------------------------------------- */

/* What SIGSEGV and SIGBUS did before ours; written once, before ours is
 * installed (the handler reads them). */
static struct sigaction prev_segv, prev_bus;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_bool installed;

/* The previous disposition, as the kernel would have applied it. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = sig == SIGSEGV ? &prev_segv : &prev_bus;
	struct sigaction dfl;

	if (p->sa_flags & SA_SIGINFO) {
		p->sa_sigaction(sig, si, uc);
		return;
	}
	if (p->sa_handler == SIG_IGN && si->si_code <= 0)
		return; /* sent by a process, and ignored */
	if (p->sa_handler == SIG_DFL || p->sa_handler == SIG_IGN) {
		/* The default action (the kernel forces it for a real fault
		 * even when ignored): put it back; the faulting instruction
		 * runs again and faults into it, a signal sent by a process
		 * is raised again (SA_NODEFER: delivered at once). */
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
		if (si->si_code <= 0)
			raise(sig);
		return;
	}
	p->sa_handler(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	/* Only a fault the CPU raised (si_code > 0) inside a guarded
	 * access; a SIGSEGV sent with kill() is the application's. */
	if (si && si->si_code > 0 && recover(si, uc))
		return;
	chain(sig, si, uc);
}

static void install(void)
{
	struct sigaction sa;

	sigaction(SIGSEGV, NULL, &prev_segv);
	sigaction(SIGBUS, NULL, &prev_bus);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	/* NODEFER and an empty mask: the thread's mask is unchanged inside
	 * the handler, so leaving it by siglongjmp needs no sigprocmask;
	 * ONSTACK: an application's alternate stack (stack overflow
	 * detection) is used as it would be for its own handler. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	atomic_store(&installed, true);
}

void sv_fault_install(void)
{
	pthread_once(&once, install);
}

bool sv_fault_installed(void)
{
	return atomic_load(&installed);
}
