#!/bin/bash
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/pad1d; mkdir -p $L
tar -xJf b.tar.xz
cd ../..
B=gpu-x/pad1d/t
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $L/gpu.txt
W=--widths=40,56,57,63,64,96,127,255
$B/coalesce-new bench conv --only-1d $W --lengths 2^27 --variants tensor > $L/bench-new-twins.log 2>&1
for i in 1 2; do
  $B/coalesce-old bench conv --only-1d $W --lengths 2^27 --variants tensor --no-twins > $L/bench-old-$i.log 2>&1
  $B/coalesce-new bench conv --only-1d $W --lengths 2^27 --variants tensor --no-twins > $L/bench-new-$i.log 2>&1
done
$B/coalesce-old bench conv --only-1d $W --lengths 2^27 --variants tensor --no-twins --mode reflect > $L/bench-old-reflect.log 2>&1
$B/coalesce-new bench conv --only-1d $W --lengths 2^27 --variants tensor --no-twins --mode reflect > $L/bench-new-reflect.log 2>&1
$B/conv_tensor --test-threads=1 > $L/tests.log 2>&1
compute-sanitizer --tool memcheck $B/conv_tensor --test-threads=1 nan_and_infinity split_products > $L/memcheck.log 2>&1
tail -3 $L/memcheck.log
cd /tmp && tar -czf $OUT/pad1d.tgz pad1d
