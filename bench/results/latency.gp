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
     'data/softverbs_c50a205_ib_write_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#1f77b4' title 'softverbs@c50a205 ib_write_lat', \
     'data/softverbs_ib_send_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#d62728' title 'softverbs ib_send_lat', \
     'data/softverbs_c50a205_ib_send_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#d62728' title 'softverbs@c50a205 ib_send_lat', \
     'data/softverbs_ib_atomic_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#2ca02c' title 'softverbs ib_atomic_lat', \
     'data/softverbs_c50a205_ib_atomic_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#2ca02c' title 'softverbs@c50a205 ib_atomic_lat', \
     'data/ucx_ucp_put_lat_posix_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#ff7f0e' title 'ucx ucp_put_lat (posix,self)', \
     'data/ucx_ucp_am_lat_posix_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#9467bd' title 'ucx ucp_am_lat (posix,self)', \
     'data/ucx_ucp_put_lat_sm_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#8c564b' title 'ucx ucp_put_lat (sm,self)', \
     'data/ucx_ucp_am_lat_sm_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#e377c2' title 'ucx ucp_am_lat (sm,self)', \
     'data/ucx_tag_lat_sm_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#7f7f7f' title 'ucx tag_lat (sm,self)', \
     'data/ucx_put_lat_cma_uct_zcopy.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#bcbd22' title 'ucx put_lat (cma, uct zcopy)', \
     'data/libfabric_fi_pingpong_shm.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#17becf' title 'libfabric fi_pingpong (shm)', \
     'data/sockperf_udp_loopback.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#000000' title 'sockperf UDP loopback', \
     'data/sockperf_tcp_loopback.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#aec7e8' title 'sockperf TCP loopback', \
     'data/softverbs_ucx_tag_lat_rc_verbs.lat.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#98df8a' title 'softverbs ucx tag_lat (rc_verbs)', \
     'data/softverbs_mpi_pingpong_ompi_ucx_rc_verbs.lat.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#ff9896' title 'softverbs mpi pingpong (ompi, ucx rc_verbs)', \
     'data/mpi_pingpong_ompi_ucx_sm_self.lat.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#c5b0d5' title 'mpi pingpong (ompi, ucx sm,self)', \
     'data/softverbs_fi_pingpong_verbs_msg.lat.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#c49c94' title 'softverbs fi_pingpong (verbs msg)'
