/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Minimal test assertions for softverbs' C tests.  Each test program is one
 * ctest case; CHECK records a failure and goes on, REQUIRE stops the
 * program.  check_done() prints "N passed, N failed" and returns the exit
 * status.
 */
#ifndef SV_TESTS_CHECK_H
#define SV_TESTS_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (cond) {                                                \
			check_passed++;                                    \
		} else {                                                   \
			check_failed++;                                    \
			fprintf(stderr,                                    \
				"%s:%d: CHECK failed: %s (errno %d %s)\n", \
				__FILE__, __LINE__, #cond, errno,          \
				strerror(errno));                          \
		}                                                          \
	} while (0)

#define REQUIRE(cond)                                                        \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr,                                      \
				"%s:%d: REQUIRE failed: %s (errno %d %s)\n", \
				__FILE__, __LINE__, #cond, errno,            \
				strerror(errno));                            \
			exit(1);                                             \
		}                                                            \
		check_passed++;                                              \
	} while (0)

/* Compare two integers and print both on failure. */
#define CHECK_EQ(a, b)                                                                       \
	do {                                                                                 \
		long long _a = (long long)(a), _b = (long long)(b);                          \
		if (_a == _b) {                                                              \
			check_passed++;                                                      \
		} else {                                                                     \
			check_failed++;                                                      \
			fprintf(stderr,                                                      \
				"%s:%d: CHECK_EQ failed: %s == %lld, expected %s == %lld\n", \
				__FILE__, __LINE__, #a, _a, #b, _b);                         \
		}                                                                            \
	} while (0)

static inline int check_done(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
