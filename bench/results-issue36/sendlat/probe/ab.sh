#!/bin/bash
# interleaved A/B: base and new, ib_send_lat and ib_write_lat 1 MiB, -n 1000, R rounds
R=${1:-10}
for r in $(seq $R); do
 for b in base new; do
  B=/work/base-9c15a98/build; [ $b = new ] && B=/work/wt/sendlat/build
  for t in ib_send_lat ib_write_lat; do
   echo "$r $b $t $(/tmp/sl/lat.sh $B $t 1048576 1000)"
  done
 done
done
