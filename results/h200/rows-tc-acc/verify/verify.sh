#!/bin/bash
cd "$(dirname "$0")"
R=$PWD/res; mkdir -p $R
B=../bundle
U=$B/unpacked
T0=$(date +%s)
nvidia-smi -L > $R/gpu.txt
$B/run.sh $R/unpack --skip-tests --skip-examples > $R/unpack.txt 2>&1
echo "unpacked $(( $(date +%s) - T0 ))s" >> $R/rc.txt
export COALESCE_EXPECT_GPU=1
export TESTS="access batch channels cli_filter concurrency constant conv1d conv2d conv2d_streamed conv2d_tensor conv_tensor device_support divergence errors lib-coalesce lib-coalesce_host lib-coalesce_kernels occupancy pitched properties reduce scipy_params scipy_params2d sticky_error streaming streaming_fault texture transpose bin-coalesce"
timeout 300 $B/run.sh $R/bundle --skip-examples > $R/bundle-run.txt 2>&1; echo "bundle rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
( export COALESCE_UNDER_SANITIZER=1
  for job in "batch memcheck bf16_every_axis" "batch memcheck drawn_tiles" "batch synccheck drawn_tiles" "batch racecheck bf16_tensor_cores_every"; do
    set -- $job
    ( timeout 170 compute-sanitizer --tool $2 --error-exitcode 9 $U/tests/$1 $3 --test-threads 1 > $R/san-$1-$2-$3.txt 2>&1; echo "$1 $2 $3 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) &
  done; wait )
echo "sanitizers done $(( $(date +%s) - T0 ))s" >> $R/rc.txt
$U/bin/coalesce stress --threads 8 --seconds 8 > $R/stress.txt 2>&1; echo "stress rc=$?" >> $R/rc.txt
cd $R
for r in 1 2; do timeout 80 $U/bin/coalesce bench conv --no-twins --only-batch --dtype bf16 --channels 1 > bench-bf16-$r.txt 2>&1; echo "bench bf16 $r rc=$? $(( $(date +%s) - T0 ))s" >> rc.txt; done
timeout 80 $U/bin/coalesce bench conv --no-twins --only-batch --dtype bf16 --channels 1 --mode reflect > bench-bf16-reflect.txt 2>&1; echo "bench reflect rc=$? $(( $(date +%s) - T0 ))s" >> rc.txt
timeout 80 $U/bin/coalesce bench conv --no-twins --only-batch --dtype f32 --channels 1 > bench-f32.txt 2>&1; echo "bench f32 rc=$? $(( $(date +%s) - T0 ))s" >> rc.txt
cp stress.txt rc.txt bench-bf16-1.txt $OUT/
cat bundle/summary.txt > $OUT/summary.txt 2>/dev/null
grep -h "SUMMARY\|test result" san-*.txt > $OUT/san.txt
tar cJf $OUT/res.tar.xz --exclude=bundle/unpacked --exclude=unpack .
cat $OUT/rc.txt; cat $OUT/summary.txt | tail -40; cat $OUT/san.txt; grep -h "goal\|_tc\|rows" bench-*.txt | grep -v "^dtype"
cd ..
TESTS="copy matrix" timeout 200 $B/run.sh $R/rest --skip-examples > $R/rest-run.txt 2>&1; echo "rest rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
cp $R/rc.txt $OUT/; cat $R/rest/summary.txt > $OUT/summary-rest.txt 2>/dev/null; cat $OUT/summary-rest.txt
