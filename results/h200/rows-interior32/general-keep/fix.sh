#!/bin/bash
cd "$(dirname "$0")"
R=$OUT; T0=$(date +%s)
for b in batch concurrency properties scipy_params streaming coalesce; do xz -d -c $b.xz > $b && chmod +x $b; done
export COALESCE_EXPECT_GPU=1
( export COALESCE_UNDER_SANITIZER=1
  for job in "memcheck f32_every" "racecheck f32_every" "memcheck large_batches"; do set -- $job
    ( timeout 170 compute-sanitizer --tool $1 --error-exitcode 9 ./batch $2 --test-threads 1 > $R/san-$1-$2.txt 2>&1; echo "$1 $2 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) &
  done; wait ) &
SAN=$!
for b in batch concurrency properties scipy_params streaming; do timeout 200 ./$b > $R/test-$b.txt 2>&1; echo "test $b rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt; done
wait $SAN
./coalesce stress --threads 8 --seconds 6 > $R/stress.txt 2>&1; echo "stress rc=$?" >> $R/rc.txt
timeout 120 ./coalesce bench conv --no-twins --only-batch --batch default,64x2^21@40 --dtype f32 --channels 1 > $R/bench.txt 2>&1; echo "bench rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
cat $R/rc.txt; grep -h "test result\|SUMMARY" $R/test-*.txt $R/san-*.txt; tail -1 $R/stress.txt; grep -E "rows|goal" $R/bench.txt
