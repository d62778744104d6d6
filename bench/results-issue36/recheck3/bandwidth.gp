set terminal pngcairo noenhanced size 1400,860 font 'sans,11'
set output 'bandwidth.png'
set title 'Bandwidth versus message size'
set logscale xy
set grid
set key outside right top Left reverse
set xlabel 'message size (bytes)'
set ylabel 'bandwidth (MiB/s)'
set xtics ('8' 8, '64' 64, '256' 256, '1K' 1024, '4K' 4096, '16K' 16384, '64K' 65536, '256K' 262144, '1M' 1048576, '4M' 4194304)
plot 'data/softverbs_ib_write_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#1f77b4' title 'softverbs ib_write_bw', \
     'data/softverbs_c50a205_ib_write_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#1f77b4' title 'softverbs@c50a205 ib_write_bw', \
     'data/softverbs_ib_send_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#d62728' title 'softverbs ib_send_bw', \
     'data/softverbs_c50a205_ib_send_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#d62728' title 'softverbs@c50a205 ib_send_bw', \
     'data/ucx_ucp_put_bw_posix_self.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#2ca02c' title 'ucx ucp_put_bw (posix,self)', \
     'data/ucx_ucp_put_bw_sm_self.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#ff7f0e' title 'ucx ucp_put_bw (sm,self)'
