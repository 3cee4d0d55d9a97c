#!/bin/bash
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/ver2; mkdir -p $L
[ -d t ] || tar -xJf b.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $L/gpu.txt
if [ "$1" = tests ]; then
for t in conv1d properties scipy_params concurrency errors; do
  timeout 200 ./t/$t > $L/test-$t.log 2>&1; echo "$t rc=$?" >> $L/rc.txt
done
timeout 60 ./t/coalesce stress --threads 8 --seconds 20 > $L/stress.log 2>&1; echo "stress rc=$?" >> $L/rc.txt
timeout 200 ./t/coalesce bench conv --only-1d --widths 7,31,63,65,96,127,192,255 --lengths 2^27 --variants fast,tensor > $L/bench-1d.log 2>&1; echo "bench rc=$?" >> $L/rc.txt
else
timeout 200 compute-sanitizer --tool memcheck ./t/conv1d fast_blocks_pipeline_several_tiles f32_every_width > $L/memcheck-conv1d.log 2>&1; echo "memcheck rc=$?" >> $L/rc.txt
timeout 200 compute-sanitizer --tool racecheck ./t/conv1d fast_blocks_pipeline_several_tiles > $L/racecheck-conv1d.log 2>&1; echo "racecheck rc=$?" >> $L/rc.txt
timeout 150 compute-sanitizer --tool synccheck ./t/conv1d fast_blocks_pipeline_several_tiles > $L/synccheck-conv1d.log 2>&1; echo "synccheck rc=$?" >> $L/rc.txt
fi
cat $L/rc.txt
cd /tmp && tar -cJf $OUT/ver2-$1.tar.xz ver2
