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
  for job in "conv1d memcheck rows_kernels" "conv1d racecheck rows_kernels" "batch memcheck f32_every_axis" "batch memcheck bf16_every_axis"; do
    set -- $job
    ( timeout 150 compute-sanitizer --tool $2 --error-exitcode 9 $U/tests/$1 $3 --test-threads 1 > $R/san-$1-$2-$3.txt 2>&1; echo "$1 $2 $3 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) &
  done; wait )
echo "sanitizers done $(( $(date +%s) - T0 ))s" >> $R/rc.txt
$U/bin/coalesce stress --threads 8 --seconds 8 > $R/stress.txt 2>&1; echo "stress rc=$?" >> $R/rc.txt
cp $R/stress.txt $R/rc.txt $OUT/
cat $R/bundle/summary.txt > $OUT/summary.txt 2>/dev/null
grep -h "SUMMARY\|test result" $R/san-*.txt > $OUT/san.txt
tar cJf $OUT/res.tar.xz -C $R --exclude=bundle/unpacked --exclude=unpack .
