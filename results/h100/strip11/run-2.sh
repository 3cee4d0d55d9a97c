#!/usr/bin/env bash
# Prototype with warps side by side (horz) or stacked (vert); ncu on the library's strip11.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/stripv results/h100/strip11/stripv.cu > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
/tmp/stripv > $OUT/stripv.txt 2>&1; cat $OUT/stripv.txt
timeout 200 ncu --set full -k regex:conv2d_strip11_f32 --launch-skip 2 --launch-count 1 $B/unpacked/bin/coalesce bench conv --only-2d --masks-2d 11 --separable-2d 17 --gaussians-2d 2 --no-twins > $OUT/ncu-strip11.txt 2>&1
grep -E "Duration|Executed Ipc|Issue Slots Busy|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Block Limit|Executed Instructions  |DRAM Throughput|L1/TEX Hit|L2 Hit|Theoretical Occ|Stall|Bank" $OUT/ncu-strip11.txt | head -40
