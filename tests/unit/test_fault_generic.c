/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The fault-guarded copy and atomics in their portable form (sigsetjmp
 * around memcpy on other CPUs, around a plain loop under
 * AddressSanitizer), compiled here from the same source so that x86-64
 * builds test it too (fault_cases.h). */
#define SV_FAULT_GENERIC 1
#include "util/fault.c"

#include "fault_cases.h"

int main(void)
{
#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer loses track of a thread that siglongjmps out of a
	 * signal handler (later signals go astray); its builds use the
	 * assembly form on x86-64 (test_fault), this one nowhere. */
	(void)run_fault_cases;
	printf("skipped: the portable form is not used under "
	       "ThreadSanitizer\n");
	return 77;
#else
	return run_fault_cases();
#endif
}
