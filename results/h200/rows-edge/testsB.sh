#!/bin/bash
# call B: sanitizers over the changed kernels, stress, the batch bench
cd "$(dirname "$0")/bundle"
[ -d unpacked ] || ./run.sh /tmp/none --skip-tests --skip-examples > /dev/null 2>&1
U=unpacked
$U/bin/coalesce stress --threads 8 --seconds 10 > $OUT/stress.log 2>&1; echo "stress rc=$?" >> $OUT/stress.log
$U/bin/coalesce bench conv --no-twins --only-batch --batch default,4096x2^15@7,4096x2^15@31 --dtype f32,bf16,u8 --channels 1,3 > $OUT/bench.txt 2>&1; echo "bench rc=$?" >> $OUT/bench.txt
$U/bin/coalesce bench conv --no-twins --only-batch --batch default,4096x2^15@7,4096x2^15@31 --dtype bf16 --channels 1 --mode reflect > $OUT/bench-reflect.txt 2>&1; echo "bench rc=$?" >> $OUT/bench-reflect.txt
{
for f in bf16_tensor every_axis_mode_width; do
  COALESCE_UNDER_SANITIZER=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $U/tests/batch $f --test-threads 1 2>&1 | grep -E "ERROR SUMMARY|test result"; echo "memcheck batch $f rc=${PIPESTATUS[0]}"
done
COALESCE_UNDER_SANITIZER=1 timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $U/tests/batch bf16_tensor --test-threads 1 2>&1 | grep -E "RACECHECK SUMMARY|ERROR SUMMARY|test result"; echo "racecheck batch bf16_tensor rc=${PIPESTATUS[0]}"
COALESCE_UNDER_SANITIZER=1 timeout 90 compute-sanitizer --tool synccheck --error-exitcode 9 $U/tests/batch bf16_tensor --test-threads 1 2>&1 | grep -E "ERROR SUMMARY|test result"; echo "synccheck batch bf16_tensor rc=${PIPESTATUS[0]}"
} > $OUT/sanitizer.txt 2>&1
cat $OUT/sanitizer.txt; tail -3 $OUT/stress.log; cat $OUT/bench.txt; grep -E 'bf16|goal' $OUT/bench-reflect.txt
VARIANTS="base new" BATCH="4096x2^15@7,4096x2^15@31,1024x2^17@31" bash ../ab/run.sh > $OUT/ab-short.txt 2>&1; cat $OUT/ab-short.txt
