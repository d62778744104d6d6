/* Throwaway instrumentation (lat9k): src/util/tstamp.h, with instrument.patch. */
#ifndef SV_TSTAMP_H
#define SV_TSTAMP_H
#include <stdint.h>
#include <x86intrin.h>
#define SV_TS_N 200000
#define SV_TS_EV 16
extern __thread int sv_ts_thread;
extern uint64_t sv_ts_tab[SV_TS_N][SV_TS_EV];
extern unsigned char sv_ts_cnt[SV_TS_N][SV_TS_EV];
extern int sv_ts_i;
static inline void sv_ts(int ev)
{
	if (sv_ts_thread || sv_ts_i < 0 || sv_ts_i >= SV_TS_N)
		return;
	if (!sv_ts_cnt[sv_ts_i][ev]++)
		sv_ts_tab[sv_ts_i][ev] = __rdtsc();
}
static inline void sv_ts0(void)
{
	if (sv_ts_thread || sv_ts_i + 1 >= SV_TS_N)
		return;
	sv_ts_i++;
	sv_ts_tab[sv_ts_i][0] = __rdtsc();
	sv_ts_cnt[sv_ts_i][0] = 1;
}
#endif
