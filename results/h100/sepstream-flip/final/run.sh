#!/bin/bash
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/flip; mkdir -p $L
[ -d t ] || tar -xJf b.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $L/gpu.txt
if [ "$1" = tests ]; then
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv -lms 500 > $L/clocks.csv &
SMI=$!
for i in 1 2; do
timeout 120 ./t/coalesce bench conv --only-2d --image-2d 8192 --masks-2d 3 --separable-2d 11,13,15,17,21,31 --gaussians-2d 2,5 > $L/bench-2d-$i.log 2>&1; echo "bench$i rc=$?" >> $L/rc.txt
done
kill $SMI
for t in conv2d_streamed channels concurrency conv2d; do
  timeout 100 ./t/$t > $L/test-$t.log 2>&1; echo "$t rc=$?" >> $L/rc.txt
done
timeout 40 ./t/coalesce stress --threads 8 --seconds 15 > $L/stress.log 2>&1; echo "stress rc=$?" >> $L/rc.txt
else
T=nan_and_infinity_come_out_as_in_the_reference
timeout 120 compute-sanitizer --tool memcheck ./t/conv2d_streamed $T > $L/memcheck.log 2>&1; echo "memcheck rc=$?" >> $L/rc.txt
timeout 60 compute-sanitizer --tool racecheck ./t/conv2d_streamed $T > $L/racecheck.log 2>&1; echo "racecheck rc=$?" >> $L/rc.txt
timeout 60 compute-sanitizer --tool synccheck ./t/conv2d_streamed $T > $L/synccheck.log 2>&1; echo "synccheck rc=$?" >> $L/rc.txt
timeout 100 compute-sanitizer --tool memcheck ./t/conv2d_streamed every_window_mode_and_shape > $L/memcheck-every.log 2>&1; echo "memcheck-every rc=$?" >> $L/rc.txt
fi
cat $L/rc.txt
grep -h "seps\|goal sep\|skipped\|test result" $L/*.log | head -40
tail -3 $L/*check*.log 2>/dev/null
cd /tmp && tar -cJf $OUT/flip-$1.tar.xz flip
