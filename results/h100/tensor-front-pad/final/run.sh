#!/bin/bash
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
L=$OUT/ver; mkdir -p $L
tar -xJf b.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $L/gpu.txt
for t in conv_tensor conv1d batch scipy_params concurrency errors streaming properties; do
  ./t/$t > $L/test-$t.log 2>&1; echo "$t rc=$?" >> $L/rc.txt
done
./t/coalesce stress --threads 8 --seconds 20 > $L/stress.log 2>&1; echo "stress rc=$?" >> $L/rc.txt
W="--only-1d --widths 33,40,48,56,63,64,96,127,192,255 --lengths 2^27 --variants fast,tensor"
./t/coalesce bench conv $W > $L/bench-1d-zero.log 2>&1; echo "bench zero rc=$?" >> $L/rc.txt
./t/coalesce bench conv $W --mode reflect --no-twins > $L/bench-1d-reflect.log 2>&1; echo "bench reflect rc=$?" >> $L/rc.txt
for s in 2048 8192; do
  ./t/coalesce bench conv --only-batch --batch 64x2^21@7 --dtype u8 --channels 3 --channel-masks 5 --channel-side $s --no-twins > $L/u8-side-$s.log 2>&1
done
compute-sanitizer --tool memcheck ./t/conv_tensor > $L/memcheck-conv_tensor.log 2>&1; echo "memcheck rc=$?" >> $L/rc.txt
compute-sanitizer --tool racecheck ./t/conv_tensor nan_and_infinity threads_share > $L/racecheck-conv_tensor.log 2>&1; echo "racecheck rc=$?" >> $L/rc.txt
compute-sanitizer --tool synccheck ./t/conv_tensor nan_and_infinity threads_share > $L/synccheck-conv_tensor.log 2>&1; echo "synccheck rc=$?" >> $L/rc.txt
cat $L/rc.txt
