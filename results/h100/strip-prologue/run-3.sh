#!/usr/bin/env bash
# Per-instruction stall sampling of conv2d_strip9_f32: this change (b2) against 4a378e1 (b).
export PATH=$PATH:/usr/local/cuda/bin
for B in gpu-x/b gpu-x/b2; do
  [ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
done
S="--section WarpStateStats --section SourceCounters --section SchedulerStats --section LaunchStats --section Occupancy"
for k in 9 11; do
for v in b b2; do
  timeout 100 ncu $S -k regex:conv2d_strip${k}_f32 --launch-skip 2 --launch-count 1 -f -o /tmp/$v-$k gpu-x/$v/unpacked/bin/coalesce bench conv --only-2d --masks-2d $k --separable-2d 17 --gaussians-2d 2 --no-twins > $OUT/run-$v-$k.txt 2>&1
  ncu -i /tmp/$v-$k.ncu-rep --page details > $OUT/$v-$k-details.txt 2>&1
  ncu -i /tmp/$v-$k.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > $OUT/$v-$k-src.csv.gz
done
done
grep -h "Duration\|Eligible\|Issued Warp\|Registers Per\|Branch Instructions  " $OUT/*-details.txt
