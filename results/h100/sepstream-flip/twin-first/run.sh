export PATH=$PATH:/usr/local/cuda/bin
cd "$(dirname "$0")"  # with a release `coalesce` binary built with only cuda/conv2d.cu changed
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks_throttle_reasons.active --format=csv -lms 500 > $OUT/clocks.csv &
SMI=$!
for i in 1 2; do
./coalesce bench conv --only-2d --image-2d 8192 --masks-2d 3 --separable-2d 13,15,17 --gaussians-2d 2 > $OUT/bench-$i.log 2>&1
done
kill $SMI
grep -h "seps\|Error\|error" $OUT/bench-*.log | head -30
cut -d, -f2,3 $OUT/clocks.csv | sort | uniq -c | sort -rn | head -4
