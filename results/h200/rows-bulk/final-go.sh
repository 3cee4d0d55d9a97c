#!/bin/bash
cd "$(dirname "$0")"
R=$PWD/res; mkdir -p $R
xz -d -c base.xz > base && chmod +x base
B=../bundle
export TESTS="access batch channels cli_filter concurrency constant conv1d conv2d conv2d_streamed conv2d_tensor conv_tensor device_support divergence errors lib-coalesce lib-coalesce_host lib-coalesce_kernels occupancy pitched properties reduce scipy_params scipy_params2d sticky_error streaming streaming_fault texture transpose bin-coalesce"
timeout 300 $B/run.sh $R/bundle --skip-examples > $R/bundle-run.txt 2>&1; echo "bundle rc=$?" >> $R/rc.txt
U=$B/unpacked
export COALESCE_EXPECT_GPU=1 COALESCE_UNDER_SANITIZER=1
for tool in memcheck racecheck synccheck; do for f in bf16_tensor_cores drawn_tiles; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $U/tests/batch $f --test-threads 1 > $R/san-$tool-$f.txt 2>&1; echo "$tool $f rc=$?" >> $R/rc.txt
done; done
unset COALESCE_UNDER_SANITIZER
$U/bin/coalesce stress --threads 8 --seconds 10 > $R/stress.txt 2>&1; echo "stress rc=$?" >> $R/rc.txt
for r in 1 2; do for v in base new; do
  if [ $v = base ]; then X=./base; else X=$U/bin/coalesce; fi
  $X bench conv --no-twins --only-batch --batch default,4096x2^15@7 --dtype bf16,f32 --channels 1 > $R/bench-$v-$r.txt 2>&1; echo "bench $v $r rc=$?" >> $R/rc.txt
done; done
$U/bin/coalesce bench conv --no-twins --only-batch --batch default --dtype bf16,f32 --channels 1 --mode reflect > $R/bench-new-reflect.txt 2>&1; echo "reflect rc=$?" >> $R/rc.txt
for v in base new; do echo "== $v"; for r in 1 2; do grep -E "rows" $R/bench-$v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done > $OUT/ab.txt
grep -E "rows|goal" $R/bench-new-reflect.txt >> $OUT/ab.txt
cat $R/rc.txt >> $OUT/ab.txt
cat $R/bundle/summary.txt > $OUT/summary.txt 2>/dev/null
grep -h "SUMMARY\|test result" $R/san-*.txt > $OUT/san.txt
tar cJf $OUT/res.tar.xz -C $R .
