#!/usr/bin/env bash
# Call 2 (the same machine, warm): wgconv2.cu with the thread index taken modulo 128, against wgconv.cu.
export PATH=$PATH:/usr/local/cuda/bin
cd "$(dirname "$0")"
F="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a"
( nvcc $F -DPF=1 -o wg1 wgconv.cu ) & ( nvcc $F -o wg2 wgconv2.cu ) & wait
nvidia-smi --query-gpu=name --format=csv,noheader
./wg2 > $OUT/wg2-tidmod-1.txt 2>&1
./wg1 > $OUT/wg1-2.txt 2>&1
./wg2 p3 > $OUT/wg2-tidmod-2.txt 2>&1
cat $OUT/*.txt
