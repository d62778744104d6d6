set terminal pngcairo noenhanced size 1400,860 font 'sans,11'
set output 'latency.png'
set title 'Latency versus message size'
set logscale xy
set grid
set key outside right top Left reverse
set xlabel 'message size (bytes)'
set ylabel 'latency, one-way (usec)'
set xtics ('8' 8, '64' 64, '256' 256, '1K' 1024, '4K' 4096, '16K' 16384, '64K' 65536, '256K' 262144, '1M' 1048576, '4M' 4194304)
plot 'data/softverbs_ib_write_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#1f77b4' title 'softverbs ib_write_lat', \
     'data/softverbs_5f9ba9f_ib_write_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#1f77b4' title 'softverbs@5f9ba9f ib_write_lat', \
     'data/softverbs_ib_send_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#d62728' title 'softverbs ib_send_lat', \
     'data/softverbs_5f9ba9f_ib_send_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#d62728' title 'softverbs@5f9ba9f ib_send_lat', \
     'data/softverbs_ib_atomic_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#2ca02c' title 'softverbs ib_atomic_lat', \
     'data/softverbs_5f9ba9f_ib_atomic_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#2ca02c' title 'softverbs@5f9ba9f ib_atomic_lat', \
     'data/ucx_ucp_put_lat_posix_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#ff7f0e' title 'ucx ucp_put_lat (posix,self)', \
     'data/ucx_ucp_am_lat_posix_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#9467bd' title 'ucx ucp_am_lat (posix,self)', \
     'data/ucx_ucp_put_lat_sm_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#8c564b' title 'ucx ucp_put_lat (sm,self)', \
     'data/ucx_ucp_am_lat_sm_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#e377c2' title 'ucx ucp_am_lat (sm,self)', \
     'data/ucx_put_lat_cma_uct_zcopy.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#7f7f7f' title 'ucx put_lat (cma, uct zcopy)', \
     'data/libfabric_fi_pingpong_shm.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#bcbd22' title 'libfabric fi_pingpong (shm)', \
     'data/sockperf_udp_loopback.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#17becf' title 'sockperf UDP loopback', \
     'data/sockperf_tcp_loopback.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#000000' title 'sockperf TCP loopback'
