#!/bin/bash
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/fast4; mkdir -p $L
mkdir -p new old && tar -xJf b.tar.xz -C new && tar -xJf old.tar.xz -C old
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $L/gpu.txt
W="--only-1d --widths 65,96,127,192,255 --lengths 2^27 --variants fast"
for i in 1 2; do
./new/t/coalesce bench conv $W > $L/new-$i.log 2>&1; echo "new $i rc=$?" >> $L/rc.txt
./old/t/coalesce bench conv $W > $L/old-$i.log 2>&1; echo "old $i rc=$?" >> $L/rc.txt
done
cd /tmp && tar -cJf $OUT/fast4.tar.xz fast4
