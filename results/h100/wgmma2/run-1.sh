#!/usr/bin/env bash
# Call 1: the two prototypes and the library's tensor kernels in turns (then the checks of
# results/h100/dependent-launch/checks/, by a second script in the same call).
export PATH=$PATH:/usr/local/cuda/bin
H=$(cd "$(dirname "$0")" && pwd)
B=$H/../b
cd $H
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
F="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a"
( nvcc $F -DPF=1 -o wg1 wgconv.cu > $OUT/nvcc1.txt 2>&1 ) &
( nvcc $F -Xptxas -v -o wg2 wgconv2.cu > $OUT/nvcc2.txt 2>&1 ) &
( bash $B/run.sh $OUT/unpack --skip-tests --skip-examples > /dev/null 2>&1 ) &
wait
ls -la wg1 wg2 | tee -a $OUT/log.txt
U=$B/unpacked
$U/bin/coalesce info > $OUT/info.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 500 > $OUT/clocks.csv &
SMI=$!
BE="$U/bin/coalesce bench conv --only-1d --widths 63,96,127,255 --lengths 2^27 --variants tensor --no-twins"
timeout 120 ./wg2 > $OUT/wg2-1.txt 2>&1
timeout 60 ./wg1 > $OUT/wg1-1.txt 2>&1
timeout 150 $BE > $OUT/bench-1.log 2>&1
timeout 120 ./wg2 > $OUT/wg2-2.txt 2>&1
kill $SMI
cat $OUT/wg2-1.txt $OUT/wg1-1.txt; grep -iE "tensor|floor|DtoD" $OUT/bench-1.log | head -20; cat $OUT/wg2-2.txt
