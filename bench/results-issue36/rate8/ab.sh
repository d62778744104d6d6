#!/bin/bash
# ab.sh TOOL N [buildA] [buildB]
T=$1; N=$2; A=${3:-/work/wt/rate8/build}; B=${4:-/work/base-9c15a98/build}
for i in $(seq $N); do
  a=$(./pair.sh $A $T 8 | awk '{print $4}'); b=$(./pair.sh $B $T 8 | awk '{print $4}')
  echo "$a $b"
done > ab.last; python3 med.py ab.last A B
