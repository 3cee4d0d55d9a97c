#!/usr/bin/env bash
# bands.cu on the device: the sweep of strip heights, then Nsight Compute on 9 x 9 at 8 rows and
# at one wave of bands. Prints to stdout and $OUT (the files in prototype/).
export PATH=$PATH:/usr/local/cuda/bin
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/bands bands.cu > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
/tmp/bands > $OUT/sweep-1.txt 2>&1; cat $OUT/sweep-1.txt
/tmp/bands > $OUT/sweep-2.txt 2>&1; grep -E "one wave|rows +(8|16) " $OUT/sweep-2.txt
M=dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,lts__t_sectors_srcunit_tex_aperture_device_lookup_miss.sum,dram__bytes_read.sum,gpu__time_duration.sum
for r in 8 -1; do
  timeout 120 ncu --kernel-name regex:bands --launch-count 1 --metrics $M /tmp/bands 9 $r > $OUT/ncu-9-$r.txt 2>&1
  grep -E "rows|dram__|inst_executed|issue_active|warps_active|lookup_miss|duration" $OUT/ncu-9-$r.txt
done
