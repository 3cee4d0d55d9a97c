#!/bin/bash
cd "$(dirname "$0")"
R=$PWD/res; mkdir -p $R
B=../bundle
U=$B/unpacked
T0=$(date +%s)
$B/run.sh $R/unpack --skip-tests --skip-examples > $R/unpack.txt 2>&1
echo "unpacked $(( $(date +%s) - T0 ))s" >> $R/rc.txt
export COALESCE_EXPECT_GPU=1
timeout 330 $B/run.sh $R/bundle --skip-examples > $R/bundle-run.txt 2>&1; echo "bundle rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
( export COALESCE_UNDER_SANITIZER=1
  for job in "conv1d memcheck rows_kernels" "conv1d racecheck rows_kernels" "concurrency memcheck rows_kernels" "concurrency racecheck rows_kernels"; do
    set -- $job
    ( timeout 150 compute-sanitizer --tool $2 --error-exitcode 9 $U/tests/$1 $3 --test-threads 1 > $R/san-$1-$2.txt 2>&1; echo "$1 $2 $3 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) &
  done; wait )
echo "sanitizers done $(( $(date +%s) - T0 ))s" >> $R/rc.txt
$U/bin/coalesce stress --threads 8 --seconds 8 > $R/stress.txt 2>&1; echo "stress rc=$?" >> $R/rc.txt
timeout 100 $U/bin/coalesce bench conv --only-1d --lengths 2^27 --widths 3,7,15,23,31,63 --variants fast,tensor,rows > $R/bench-1d.txt 2>&1; echo "1d rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
timeout 60 $U/bin/coalesce bench conv --no-twins --only-1d --lengths 25165824,2^25,50331648 --widths 2,17,21 --variants fast,rows > $R/bench-1d-f32-crossover.txt 2>&1; echo "1d f32 crossover rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
timeout 60 $U/bin/coalesce bench conv --no-twins --only-1d --dtype-1d f64 --lengths 2^24,25165824,2^25,2^26 --widths 4,8,10,12 --variants fast,rows > $R/bench-1d-f64-crossover.txt 2>&1; echo "1d f64 crossover rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
cp $R/bench-1d*.txt $R/stress.txt $R/rc.txt $OUT/
cat $R/bundle/summary.txt > $OUT/summary.txt 2>/dev/null
grep -h "SUMMARY\|test result" $R/san-*.txt > $OUT/san.txt
tar cJf $OUT/res.tar.xz -C $R --exclude=bundle/unpacked --exclude=unpack .
