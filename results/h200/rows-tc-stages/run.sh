#!/bin/bash
set -u
cd "$(dirname "$0")"
for v in base s3x1 s4x1 s5x1 s3x2; do [ -f $v.xz ] && xz -d -c $v.xz > $v && chmod +x $v; done
B="default,64x2^21@12,1024x2^17@31,4096x2^15@31,64x2^21@20"
for r in 1 2; do
  for v in base s3x1 s4x1 s5x1 s3x2; do
    [ -x $v ] || continue
    ./$v bench conv --no-twins --only-batch --batch $B --dtype bf16 --channels 1 > $OUT/$v-$r.txt 2>&1
    echo "$v $r rc=$?" >> $OUT/rc.txt
  done
done
for v in base s3x1 s4x1 s5x1 s3x2; do
  [ -x $v ] || continue
  echo "== $v"; grep "rows_tc" $OUT/$v-1.txt $OUT/$v-2.txt | awk '{print $2,$3,$4,$5,$6,$8}'
done
