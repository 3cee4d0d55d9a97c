#!/usr/bin/env bash
# Run from a folder beside the release bundle (scripts/bundle.sh into ../b); prints to $OUT.
# 1. stripk.cu (the register kernel's blocked loop for 9x9 to 15x15); 2. the library's 2D bench on
# the same general masks; 3. the fused separable filter with dependent launches on and off, in turns.
export PATH=$PATH:/usr/local/cuda/bin
H=$(cd "$(dirname "$0")" && pwd)
cd $H
B=$H/../b
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
( time nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/stripk stripk.cu ) > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
/tmp/stripk > $OUT/stripk.txt 2>&1
cat $OUT/stripk.txt
timeout 150 $B/unpacked/bin/coalesce bench conv --only-2d --masks-2d 9,11,13,15 --separable-2d 17 --gaussians-2d 2 --no-twins > $OUT/bench-2d.txt 2>&1
grep -E "^(9x9|11x11|13x13|15x15|17x17) |^cuMemcpyDtoD" $OUT/bench-2d.txt
for i in 1; do
  for d in 0 1; do
    COALESCE_DEPENDENT_LAUNCHES=$d timeout 60 $B/unpacked/bin/coalesce bench conv --only-2d --masks-2d 3 --separable-2d 15,17,21,25,31 --gaussians-2d 2,5 --no-twins > $OUT/bench-sep-dep$d-run$i.txt 2>&1
    echo "== dependent launches $d, run $i"; grep -E "separable|gaussian|^dependent|^cuMemcpyDtoD" $OUT/bench-sep-dep$d-run$i.txt | grep -v "^goal"
  done
done
