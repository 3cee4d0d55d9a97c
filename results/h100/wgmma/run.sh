export PATH=$PATH:/usr/local/cuda/bin
cd "$(dirname "$0")"  # with a release `coalesce` binary copied beside it
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 500 > $OUT/clocks.csv &
SMI=$!
F="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a"
nvcc $F -o probe probe.cu &
nvcc $F -DPF=1 -o wg wgconv.cu &
wait %2 %3
./probe > $OUT/probe.txt 2>&1
B="./coalesce bench conv --only-1d --widths 63,96,127,255 --lengths 2^27 --variants tensor --no-twins"
$B > $OUT/bench-1.log 2>&1
./wg > $OUT/wgmma-1.txt 2>&1
$B > $OUT/bench-2.log 2>&1
./wg > $OUT/wgmma-2.txt 2>&1
kill $SMI
cat $OUT/wgmma-*.txt; grep -i "tensor" $OUT/bench-*.log | head -30
cut -d, -f2,5 $OUT/clocks.csv | sort | uniq -c | sort -rn | head -5
