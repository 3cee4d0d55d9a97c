#!/bin/bash
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/sepw; mkdir -p $L
tar -xJf b.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv > $L/gpu.txt
A="bench conv --only-2d --image-2d 8192 --masks-2d 9,11,13 --separable-2d 15,17,21 --gaussians-2d 5 --no-twins"
for i in 1 2; do
  ./t/coalesce-old $A > $L/old-$i.log 2>&1
  ./t/coalesce-new $A > $L/new-$i.log 2>&1
done
./t/conv2d_streamed --test-threads=1 > $L/tests.log 2>&1
compute-sanitizer --tool memcheck ./t/conv2d_streamed --test-threads=1 > $L/memcheck.log 2>&1
tail -2 $L/memcheck.log
cd /tmp && tar -czf $OUT/sepw.tgz sepw
