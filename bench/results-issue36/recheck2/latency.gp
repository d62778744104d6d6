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
     'data/softverbs_1d2a4bf_ib_write_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#1f77b4' title 'softverbs@1d2a4bf ib_write_lat', \
     'data/softverbs_ib_send_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#d62728' title 'softverbs ib_send_lat', \
     'data/softverbs_1d2a4bf_ib_send_lat.lat.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#d62728' title 'softverbs@1d2a4bf ib_send_lat'
