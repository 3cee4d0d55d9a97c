#!/usr/bin/env bash
# Per-instruction stall sampling: library conv2d_strip11_f32 against the prototype stripk<11, 8, 4, true>.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
ncu --version > $OUT/ncu-version.txt 2>&1
nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -o /tmp/stripv results/h100/strip11/stripv.cu > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
S="--section WarpStateStats --section SourceCounters --section SchedulerStats --section LaunchStats --section Occupancy"
timeout 200 ncu $S -k regex:conv2d_strip11_f32 --launch-skip 2 --launch-count 1 -f -o /tmp/lib $B/unpacked/bin/coalesce bench conv --only-2d --masks-2d 11 --separable-2d 17 --gaussians-2d 2 --no-twins > $OUT/ncu-lib-run.txt 2>&1
timeout 200 ncu $S --kernel-name-base mangled -k regex:stripkILi11ELi8ELi4ELb1 --launch-skip 1 --launch-count 1 -f -o /tmp/proto /tmp/stripv > $OUT/ncu-proto-run.txt 2>&1
for r in lib proto; do
  ncu -i /tmp/$r.ncu-rep --page details > $OUT/$r-details.txt 2>&1
  ncu -i /tmp/$r.ncu-rep --page source --csv --print-source sass > $OUT/$r-src.csv 2>&1 || ncu -i /tmp/$r.ncu-rep --page source --csv > $OUT/$r-src.csv 2>&1
  gzip -f $OUT/$r-src.csv
done
ls -la $OUT
tail -5 $OUT/ncu-lib-run.txt $OUT/ncu-proto-run.txt
