/* Throwaway instrumentation (lat9k): src/util/tstamp.c, with instrument.patch.
 * SV_TS=1: at exit, per event the median delay after the receive that
 * returned a datagram in the application's thread (event 0). */
#include "tstamp.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__thread int sv_ts_thread;
uint64_t sv_ts_tab[SV_TS_N][SV_TS_EV];
unsigned char sv_ts_cnt[SV_TS_N][SV_TS_EV];
int sv_ts_i = -1;
static uint64_t t0c;
static struct timespec t0;
__attribute__((constructor)) static void ts_init(void)
{
	t0c = __rdtsc();
	clock_gettime(CLOCK_MONOTONIC, &t0);
}
static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}
__attribute__((destructor)) static void ts_dump(void)
{
	struct timespec t1;
	uint64_t t1c = __rdtsc();
	static int64_t v[SV_TS_N];
	double ghz;
	int ev, i;

	if (!getenv("SV_TS") || sv_ts_i < 100)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ghz = (double)(t1c - t0c) /
	      ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec));
	fprintf(stderr, "TS iters=%d ghz=%.3f\n", sv_ts_i, ghz);
	for (ev = 1; ev < SV_TS_EV; ev++) {
		int n = 0;
		double cnt = 0;

		for (i = 0; i < sv_ts_i; i++) {
			cnt += sv_ts_cnt[i][ev];
			if (sv_ts_cnt[i][ev])
				v[n++] = (int64_t)(sv_ts_tab[i][ev] - sv_ts_tab[i][0]);
		}
		if (!n)
			continue;
		qsort(v, n, sizeof(v[0]), cmp);
		fprintf(stderr, "TS ev%-2d n=%-6d per-iter=%.2f p25=%.0f median=%.0f p75=%.0f ns\n",
			ev, n, cnt / sv_ts_i, v[n / 4] / ghz, v[n / 2] / ghz,
			v[3 * n / 4] / ghz);
	}
}
