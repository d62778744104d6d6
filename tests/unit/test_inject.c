/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The SOFTVERBS_FAULT spec (engine/diag/inject.c): what it accepts, how it
 * prints back (the startup info line), the one reason a bad spec is
 * refused with, naming the token, and SOFTVERBS_LOSS as drop=N%.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "engine/diag/inject.h"

static struct sv_inject inj;

/* Parse; 0 or -1, with the canonical form (or the reason) in out. */
static int parse(const char *spec, int loss, char *out, size_t len)
{
	char err[256];

	if (sv_inject_parse(&inj, spec, loss, err, sizeof(err))) {
		snprintf(out, len, "%s", err);
		return -1;
	}
	sv_inject_format(&inj, out, len);
	return 0;
}

static const char *shown(const char *spec)
{
	return spec ? spec : "(unset)";
}

#define ACCEPT(spec, loss, want)                                     \
	do {                                                         \
		char _o[512];                                        \
		CHECK_EQ(parse(spec, loss, _o, sizeof(_o)), 0);      \
		if (strcmp(_o, want)) {                              \
			fprintf(stderr, "%s: got '%s', want '%s'\n", \
				shown(spec), _o, want);              \
			check_failed++;                              \
		} else {                                             \
			check_passed++;                              \
		}                                                    \
	} while (0)

#define REFUSE(spec, want)                                                     \
	do {                                                                   \
		char _o[512];                                                  \
		CHECK_EQ(parse(spec, 0, _o, sizeof(_o)), -1);                  \
		CHECK_EQ(inj.n, 0);                                            \
		if (strcmp(_o, want)) {                                        \
			fprintf(stderr, "%s: got '%s', want '%s'\n", spec, _o, \
				want);                                         \
			check_failed++;                                        \
		} else {                                                       \
			check_passed++;                                        \
		}                                                              \
	} while (0)

static void test_accept(void)
{
	ACCEPT(NULL, 0, "seed=0");
	ACCEPT("", 0, "seed=0");
	ACCEPT("drop=1%", 0, "drop=1.0000%,dir=tx;seed=0");
	ACCEPT("drop=1%;dup=0.5%,dir=rx;corrupt=@7,qp=0x12", 0,
	       "drop=1.0000%,dir=tx;dup=0.5000%,dir=rx;"
	       "corrupt=@7,dir=tx,qp=0x12;seed=0");
	ACCEPT("delay=10%,ms=3,dir=both;reorder=0.0001%;seed=42", 0,
	       "delay=10.0000%,dir=both,ms=3;reorder=0.0001%,dir=tx;seed=42");
	ACCEPT("delay=@2", 0, "delay=@2,dir=tx,ms=10;seed=0");
	ACCEPT("rnr=@3,qp=18;access=100%;retry=@1", 0,
	       "rnr=@3,qp=0x12;access=100.0000%;retry=@1;seed=0");
	ACCEPT("pull=@2;pull=100%,qp=0x12", 0,
	       "pull=@2;pull=100.0000%,qp=0x12;seed=0");
	CHECK(inj.seeded == false);
	/* SOFTVERBS_LOSS adds drop=N% on transmit. */
	ACCEPT(NULL, 10, "drop=10.0000%,dir=tx;seed=0");
	ACCEPT("dup=@1", 5, "dup=@1,dir=tx;drop=5.0000%,dir=tx;seed=0");
	/* Directions some packet rule has (the hooks look at them). */
	parse("drop=1%,dir=rx;rnr=@1", 0, (char[64]){ 0 }, 64);
	CHECK_EQ(inj.pkt_dirs, SV_INJ_RX);
	parse("seed=7", 0, (char[64]){ 0 }, 64);
	CHECK_EQ(inj.pkt_dirs, 0);
	CHECK(inj.seeded);
	CHECK_EQ(inj.seed, 7);
}

static void test_refuse(void)
{
	REFUSE("drop", "bad token 'drop' (expected drop, dup, delay, reorder, "
		       "corrupt, rnr, access, retry or seed, then =)");
	REFUSE("lose=1%", "bad token 'lose=1%' (expected drop, dup, delay, "
			  "reorder, corrupt, rnr, access, retry or seed, "
			  "then =)");
	REFUSE("drop=1", "bad token 'drop=1' (a rate 0..100% (at most 4 "
			 "decimals) or @N, N >= 1)");
	REFUSE("drop=101%", "bad token 'drop=101%' (a rate 0..100% (at most "
			    "4 decimals) or @N, N >= 1)");
	REFUSE("drop=0.00001%", "bad token 'drop=0.00001%' (a rate 0..100% "
				"(at most 4 decimals) or @N, N >= 1)");
	REFUSE("drop=@0", "bad token 'drop=@0' (a rate 0..100% (at most 4 "
			  "decimals) or @N, N >= 1)");
	REFUSE("drop=-1%", "bad token 'drop=-1%' (a rate 0..100% (at most 4 "
			   "decimals) or @N, N >= 1)");
	REFUSE("drop=1%,dir=up", "bad token 'dir=up' (dir is tx, rx or both)");
	REFUSE("drop=1%,qp=0x1000000",
	       "bad token 'qp=0x1000000' (a QPN is 0..0xffffff)");
	REFUSE("drop=1%,qp=", "bad token 'qp=' (a QPN is 0..0xffffff)");
	REFUSE("drop=1%,ms=5", "bad token 'ms=5' (ms= is for delay)");
	REFUSE("delay=1%,ms=0", "bad token 'ms=0' (ms is 1..10000)");
	REFUSE("drop=1%,color=red",
	       "bad token 'color=red' (expected dir=, qp= or ms=)");
	REFUSE("rnr=@1,dir=rx",
	       "bad token 'dir=rx' (WR faults happen at the responder)");
	REFUSE("drop=1%;;dup=1%", "bad token '' (empty rule)");
	REFUSE("drop=1%;", "bad token '' (empty rule after ';')");
	REFUSE("seed=x", "bad token 'seed=x' (seed is a number)");
	REFUSE("seed=1,qp=2", "bad token 'seed=1,qp=2' (seed= takes no "
			      "options)");
	/* One bad rule refuses the whole spec: no half-applied faults. */
	REFUSE("drop=1%;dup=x", "bad token 'dup=x' (a rate 0..100% (at most "
				"4 decimals) or @N, N >= 1)");
	REFUSE("drop=1%;drop=1%;drop=1%;drop=1%;drop=1%;drop=1%;drop=1%;"
	       "drop=1%;drop=1%;drop=1%;drop=1%;drop=1%;drop=1%;drop=1%;"
	       "drop=1%;drop=1%;drop=2%",
	       "bad token 'drop=2%' (more than 16 rules)");
}

int main(void)
{
	test_accept();
	test_refuse();
	return check_done();
}
