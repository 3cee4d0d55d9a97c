export PATH=$PATH:/usr/local/cuda/bin
cd "$(dirname "$0")"  # with a release `coalesce` binary of 2b61b2f whose planner read COALESCE_SEPS_ROWS for H = 7 and 8
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks_throttle_reasons.active --format=csv -lms 500 > $OUT/clocks.csv &
SMI=$!
for r in 64 96 128 48 80 64 96 128; do
COALESCE_SEPS_ROWS=$r timeout 60 ./coalesce bench conv --only-2d --image-2d 8192 --masks-2d 3 --separable-2d 15,17 --gaussians-2d 2 --no-twins > $OUT/rows-$r-$RANDOM.log 2>&1
done
kill $SMI
cd $OUT && for f in rows-*.log; do echo "$f $(grep -h 'seps_f32_h[78]' $f | awk '{print $1,$2,$6,$8}' | tr '\n' ' ')"; done | sort -t- -k2 -n
cut -d, -f2,3 clocks.csv | sort | uniq -c | sort -rn | head -3
