#!/bin/bash
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/ver2; mkdir -p $L
tar -xJf b.tar.xz
for s in 2048 4096 8192; do
  ./t/coalesce bench conv --only-batch --batch 64x2^21@7 --dtype u8 --channels 3 --channel-masks 5 --channel-side $s --no-twins > $L/u8-side-$s.log 2>&1
done
timeout 200 compute-sanitizer --tool racecheck ./t/conv_tensor nan_and_infinity > $L/racecheck-conv_tensor-nan.log 2>&1; echo "racecheck rc=$?" >> $L/rc.txt
timeout 150 compute-sanitizer --tool synccheck ./t/conv_tensor nan_and_infinity > $L/synccheck-conv_tensor-nan.log 2>&1; echo "synccheck rc=$?" >> $L/rc.txt
cat $L/rc.txt
cd /tmp && tar -czf $OUT/ver2.tgz ver2
