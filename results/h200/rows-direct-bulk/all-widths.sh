#!/bin/bash
cd "$(dirname "$0")"
R=$PWD/res; mkdir -p $R
for f in *.xz; do xz -d -c $f > ${f%.xz} && chmod +x ${f%.xz}; done
T0=$(date +%s)
export COALESCE_EXPECT_GPU=1
( export COALESCE_UNDER_SANITIZER=1
  for job in "memcheck f32_every" "racecheck f32_every" "synccheck f32_every" "memcheck drawn_tiles" "synccheck drawn_tiles" "memcheck large_batches" "racecheck threads_on_their_own"; do
    set -- $job
    ( timeout 200 compute-sanitizer --tool $1 --error-exitcode 9 ./t-batch $2 --test-threads 1 > $R/san-$1-$2.txt 2>&1; echo "$1 $2 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) &
  done; wait ) &
SAN=$!
for t in batch scipy_params streaming concurrency properties; do
  timeout 150 ./t-$t > $R/test-$t.txt 2>&1; echo "test $t rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done
wait $SAN
echo "sanitizers done $(( $(date +%s) - T0 ))s" >> $R/rc.txt
./direct stress --threads 8 --seconds 10 > $R/stress.txt 2>&1; echo "stress rc=$?" >> $R/rc.txt
for r in 1 2; do for v in base new direct; do
  if [ $(( $(date +%s) - T0 )) -gt 480 ]; then echo "skip bench $v $r" >> $R/rc.txt; continue; fi
  timeout 60 ./$v bench conv --no-twins --only-batch --batch default,4096x2^15@31,64x2^21@20,64x2^21@12 --dtype f32 --channels 1 > $R/bench-$v-$r.txt 2>&1; echo "bench $v $r rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done; done
if [ $(( $(date +%s) - T0 )) -lt 500 ]; then
timeout 40 ./direct bench conv --no-twins --only-batch --batch default --dtype f32 --channels 1 --mode reflect > $R/bench-direct-reflect.txt 2>&1; echo "reflect rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
fi
for v in base new direct; do echo "== $v"; for r in 1 2; do grep -E "rows" $R/bench-$v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done > $OUT/ab.txt
grep -E "rows|goal|error" $R/bench-direct-reflect.txt >> $OUT/ab.txt
cat $R/rc.txt >> $OUT/ab.txt
grep -h "test result\|FAILED\|panicked\|error" $R/test-*.txt >> $OUT/ab.txt
grep -h "error:" $R/bench-*.txt >> $OUT/ab.txt
grep -h "SUMMARY\|test result" $R/san-*.txt > $OUT/san.txt
tail -3 $R/stress.txt >> $OUT/ab.txt
tar cJf $OUT/res.tar.xz -C $R .
