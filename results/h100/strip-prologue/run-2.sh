#!/usr/bin/env bash
# The strip kernels after the unrolled prologue and zero-mode edges: bench (zero, reflect), prototype baseline.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b2
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
C=$B/unpacked/bin/coalesce
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $OUT/gpu.txt 2>&1
( nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/stripv results/h100/strip11/stripv.cu > $OUT/build.txt 2>&1 ) &
timeout 230 $C bench conv --only-2d --masks-2d 3,5,7,9,11,13 --separable-2d 17 --gaussians-2d 2 > $OUT/bench-2d-zero.txt 2>&1
echo "zero rc=$?"
wait
timeout 60 /tmp/stripv > $OUT/stripv.txt 2>&1; echo "stripv rc=$?"
timeout 200 $C bench conv --only-2d --masks-2d 3,5,7,9,11,13 --separable-2d 17 --gaussians-2d 2 --mode reflect > $OUT/bench-2d-reflect.txt 2>&1
echo "reflect rc=$?"
grep -E "strip|floor|DtoD" $OUT/bench-2d-zero.txt | head -20
grep -E "strip" $OUT/bench-2d-reflect.txt | head
cat $OUT/stripv.txt
