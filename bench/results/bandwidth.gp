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
     'data/softverbs_ib_read_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#d62728' title 'softverbs ib_read_bw', \
     'data/softverbs_c50a205_ib_read_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#d62728' title 'softverbs@c50a205 ib_read_bw', \
     'data/softverbs_ib_send_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#2ca02c' title 'softverbs ib_send_bw', \
     'data/softverbs_c50a205_ib_send_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#2ca02c' title 'softverbs@c50a205 ib_send_bw', \
     'data/softverbs_ib_atomic_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#ff7f0e' title 'softverbs ib_atomic_bw', \
     'data/softverbs_c50a205_ib_atomic_bw.bw.dat' using 1:2:3:4 with yerrorlines lw 2 dt 3 pt 7 ps 0.8 lc rgb '#ff7f0e' title 'softverbs@c50a205 ib_atomic_bw', \
     'data/ucx_tag_bw_posix_self.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#9467bd' title 'ucx tag_bw (posix,self)', \
     'data/ucx_ucp_put_bw_posix_self.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#8c564b' title 'ucx ucp_put_bw (posix,self)', \
     'data/ucx_tag_bw_sm_self.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#e377c2' title 'ucx tag_bw (sm,self)', \
     'data/ucx_ucp_put_bw_sm_self.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#7f7f7f' title 'ucx ucp_put_bw (sm,self)', \
     'data/ucx_ucp_get_bw_posix_self.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#bcbd22' title 'ucx ucp_get_bw (posix,self)', \
     'data/ucx_ucp_fadd_posix_self.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#17becf' title 'ucx ucp_fadd (posix,self)', \
     'data/ucx_put_bw_cma_uct_zcopy.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#000000' title 'ucx put_bw (cma, uct zcopy)', \
     'data/libfabric_fi_pingpong_shm.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#aec7e8' title 'libfabric fi_pingpong (shm)', \
     'data/iperf3_tcp_loopback.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#98df8a' title 'iperf3 TCP loopback', \
     'data/memcpy_one_process.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#ff9896' title 'memcpy (one process)', \
     'data/process_vm_writev_one_copy_limit.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#c5b0d5' title 'process_vm_writev (one-copy limit)', \
     'data/process_vm_readv_one_copy_limit.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#c49c94' title 'process_vm_readv (one-copy limit)', \
     'data/softverbs_ucx_tag_bw_rc_verbs.bw.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#1f77b4' title 'softverbs ucx tag_bw (rc_verbs)', \
     'data/softverbs_mpi_pingpong_ompi_ucx_rc_verbs.bw.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#d62728' title 'softverbs mpi pingpong (ompi, ucx rc_verbs)', \
     'data/mpi_pingpong_ompi_ucx_sm_self.bw.dat' using 1:2:3:4 with yerrorlines lw 1.5 dt 2 pt 6 lc rgb '#2ca02c' title 'mpi pingpong (ompi, ucx sm,self)', \
     'data/softverbs_fi_pingpong_verbs_msg.bw.dat' using 1:2:3:4 with yerrorlines lw 3 pt 7 ps 1.2 lc rgb '#ff7f0e' title 'softverbs fi_pingpong (verbs msg)'
