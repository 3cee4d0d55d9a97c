#!/usr/bin/env bash
# Nsight Compute on stripk<11, 8, 4>: the third variant's first timed launch (31 launches each).
export PATH=$PATH:/usr/local/cuda/bin
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/stripk stripk.cu
timeout 200 ncu --set full -k stripk --launch-skip 63 --launch-count 1 /tmp/stripk > $OUT/ncu-11x11.txt 2>&1
