#!/bin/bash
# call 2, the final build: the batch tests, A/B against HEAD, stress, 2D with twins, sanitizers
cd "$(dirname "$0")"
xz -d -c coalesce.xz > coalesce && xz -d -c batch.xz > batch && chmod +x coalesce batch
xz -d -c ../ab4/base.xz > base && chmod +x base
COALESCE_EXPECT_GPU=1 ./batch > $OUT/batch-tests.txt 2>&1; echo "batch tests rc=$?" >> $OUT/batch-tests.txt; tail -3 $OUT/batch-tests.txt; grep -c SKIPPED $OUT/batch-tests.txt
for v in base coalesce; do
  ./$v bench conv --no-twins --only-batch --batch default,4096x2^15@7,4096x2^15@31 --dtype f32,bf16,u8,f16 --channels 1,3 > $OUT/ab-$v.txt 2>&1; echo "$v rc=$?"
done
for v in base coalesce; do echo "== $v"; grep -E "rows|sep|chan" $OUT/ab-$v.txt | grep -v goal | awk '{print $1,$2,$3,$4,$5,$7}'; done
{ ./coalesce stress --threads 8 --seconds 10 2>&1 | tail -3; echo "stress rc=${PIPESTATUS[0]}"
  ./coalesce bench conv --only-2d --masks-2d 3,5,7,9 --separable-2d 17 --gaussians-2d 5 2>&1 | grep -E "fast|separable|gaussian|DtoD|rc"; } > $OUT/stress-2d.txt 2>&1; cat $OUT/stress-2d.txt
{
COALESCE_UNDER_SANITIZER=1 timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 ./batch drawn_tiles --test-threads 1 2>&1 | grep -E "ERROR SUMMARY|test result"; echo "memcheck batch drawn_tiles rc=${PIPESTATUS[0]}"
COALESCE_UNDER_SANITIZER=1 timeout 40 compute-sanitizer --tool synccheck --error-exitcode 9 ./batch bf16_tensor --test-threads 1 2>&1 | grep -E "ERROR SUMMARY|test result"; echo "synccheck batch bf16_tensor rc=${PIPESTATUS[0]}"
cd ../bundle && ./run.sh /tmp/none --skip-tests --skip-examples > /dev/null 2>&1
COALESCE_UNDER_SANITIZER=1 timeout 45 compute-sanitizer --tool racecheck --error-exitcode 9 unpacked/tests/conv2d register_kernels_at_band_and_strip_edges --test-threads 1 2>&1 | grep -E "RACECHECK SUMMARY|ERROR SUMMARY|test result"; echo "racecheck conv2d strips rc=${PIPESTATUS[0]}"
} > $OUT/sanitizer.txt 2>&1
cat $OUT/sanitizer.txt
