#!/bin/bash
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/ver3; mkdir -p $L
[ -d t ] || tar -xJf b.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $L/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 500 > $L/clocks.csv 2>&1 &
P=$!
for i in 1 2; do
timeout 200 ./t/coalesce bench conv --only-1d --widths 7,31,63,65,96,127,192,255 --lengths 2^27 --variants fast,tensor > $L/bench-1d-$i.log 2>&1; echo "bench $i rc=$?" >> $L/rc.txt
done
kill $P
cat $L/rc.txt
cd /tmp && tar -cJf $OUT/ver3.tar.xz ver3
