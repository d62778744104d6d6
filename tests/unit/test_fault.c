/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The fault-guarded copy and atomics as the library builds them
 * (fault_cases.h). */
#include "fault_cases.h"

int main(void)
{
	return run_fault_cases();
}
