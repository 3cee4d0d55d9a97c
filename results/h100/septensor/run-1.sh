#!/usr/bin/env bash
# Run from a folder beside the release bundle (scripts/bundle.sh into ../b); prints to $OUT.
export PATH=$PATH:/usr/local/cuda/bin
H=$(cd "$(dirname "$0")" && pwd)
cd $H
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
( time nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/septc septc.cu ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
/tmp/septc > $OUT/septc.txt 2>&1
cat $OUT/septc.txt
B=$H/../b
mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz
timeout 200 $B/unpacked/bin/coalesce bench conv --only-2d --masks-2d 3 --separable-2d 21,25,31 --gaussians-2d 5 --no-twins > $OUT/bench.txt 2>&1
grep -iE "separable|gaussian|floor|dtod" $OUT/bench.txt | head -30
if [ -n "$NCU" ]; then
  for v in h15 h10; do
    timeout 150 ncu --set full -k regex:sep_tc --launch-skip 1 --launch-count 1 /tmp/septc $v > $OUT/ncu-$v.txt 2>&1
  done
  grep -E "Duration|Registers|Achieved Occupancy|Issue Slots Busy|DRAM Throughput|Compute \(SM\) Throughput|Executed Ipc A|One or More Eligible|Tensor|Warp Cycles Per Issued" $OUT/ncu-h15.txt | head -30
fi
