#!/bin/bash
cd "$(dirname "$0")"
R=$PWD/res; mkdir -p $R
xz -d -c base.xz > base && chmod +x base
B=../bundle
U=$B/unpacked
export TESTS="access batch channels cli_filter concurrency constant conv1d conv2d conv2d_streamed conv2d_tensor conv_tensor device_support divergence errors lib-coalesce lib-coalesce_host lib-coalesce_kernels occupancy pitched properties reduce scipy_params scipy_params2d sticky_error streaming streaming_fault texture transpose bin-coalesce"
T0=$(date +%s)
$B/run.sh $R/unpack --skip-tests --skip-examples > $R/unpack.txt 2>&1
echo "unpacked $(( $(date +%s) - T0 ))s" >> $R/rc.txt
export COALESCE_EXPECT_GPU=1
( export COALESCE_UNDER_SANITIZER=1
  for job in "memcheck bf16_tensor_cores_every" "racecheck bf16_tensor_cores_every" "synccheck bf16_tensor_cores_every" "initcheck bf16_tensor_cores_every" "memcheck drawn_tiles" "synccheck drawn_tiles" "memcheck f32_every" "racecheck f32_every"; do
    set -- $job
    ( timeout 170 compute-sanitizer --tool $1 --error-exitcode 9 $U/tests/batch $2 --test-threads 1 > $R/san-$1-$2.txt 2>&1; echo "$1 $2 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) &
  done; wait ) &
SAN=$!
timeout 260 $B/run.sh $R/bundle --skip-examples > $R/bundle-run.txt 2>&1; echo "bundle rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
wait $SAN
echo "sanitizers done $(( $(date +%s) - T0 ))s" >> $R/rc.txt
( export COALESCE_UNDER_SANITIZER=1; timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 $U/tests/batch threads_on_their_own --test-threads 1 > $R/san-racecheck-threads_on_their_own.txt 2>&1; echo "racecheck threads_on_their_own rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) &
RC=$!
$U/bin/coalesce stress --threads 8 --seconds 8 > $R/stress.txt 2>&1; echo "stress rc=$?" >> $R/rc.txt
wait $RC
# warm the module caches, then alternate
timeout 90 ./base bench conv --no-twins --only-batch --batch 64x2^21@31 --dtype bf16 --channels 1 > $R/warm-base.txt 2>&1; echo "warm base rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
timeout 90 $U/bin/coalesce bench conv --no-twins --only-batch --batch 64x2^21@31 --dtype bf16 --channels 1 > $R/warm-new.txt 2>&1; echo "warm new rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
for r in 1 2; do for v in base new; do
  if [ $(( $(date +%s) - T0 )) -gt 500 ]; then echo "skip bench $v $r" >> $R/rc.txt; continue; fi
  if [ $v = new ]; then X=$U/bin/coalesce; else X=./$v; fi
  timeout 60 $X bench conv --no-twins --only-batch --batch default,4096x2^15@31,64x2^21@20,64x2^21@12 --dtype bf16 --channels 1 > $R/bench-$v-$r.txt 2>&1; echo "bench $v $r rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done; done
if [ $(( $(date +%s) - T0 )) -lt 510 ]; then timeout 60 $U/bin/coalesce bench conv --no-twins --only-batch --batch default --dtype f32,bf16 --channels 1 --mode reflect > $R/bench-new-reflect.txt 2>&1; echo "reflect rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt; fi
if [ $(( $(date +%s) - T0 )) -lt 530 ]; then timeout 50 $U/bin/coalesce bench conv --no-twins --only-batch --batch default --dtype f32,u8 --channels 1,3 > $R/bench-new-types.txt 2>&1; echo "types rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt; fi
for v in base new; do echo "== $v"; for r in 1 2; do grep -E "rows" $R/bench-$v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done > $OUT/ab.txt
cat $R/rc.txt >> $OUT/ab.txt
grep -h "error:" $R/bench-*.txt >> $OUT/ab.txt
cat $R/bundle/summary.txt > $OUT/summary.txt 2>/dev/null
grep -h "SUMMARY\|test result" $R/san-*.txt > $OUT/san.txt
tail -3 $R/stress.txt >> $OUT/ab.txt
cp $R/bench-new-reflect.txt $R/bench-new-types.txt $OUT/ 2>/dev/null
tar cJf $OUT/res.tar.xz -C $R --exclude=bundle/unpacked --exclude=unpack .
