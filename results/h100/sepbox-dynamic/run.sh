#!/bin/bash
cd "$(dirname "$0")"
L=/tmp/u8dyn; mkdir -p $L
tar -xJf b.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv > $L/gpu.txt
for i in 1 2; do
  for r in plan 35 24 18 12; do
    for v in a b; do
      if [ $r = plan ]; then unset COALESCE_SEPR_ROWS; else export COALESCE_SEPR_ROWS=$r; fi
      ./t/coalesce-$v bench conv --only-batch --batch 64x2^21@7 --dtype u8 --channels 3,4 --channel-masks 5 --no-twins > $L/$v-$r-$i.log 2>&1
    done
  done
done
cd /tmp && tar -czf $OUT/u8dyn.tgz u8dyn
