#!/bin/bash
cd "$(dirname "$0")"
for v in base acc3; do xz -d -c $v.xz > $v && chmod +x $v; done
B="default,64x2^21@12,64x2^21@20,1024x2^17@31"
for r in 1 2 3; do for v in base acc3; do
  ./$v bench conv --no-twins --only-batch --batch $B --dtype bf16 --channels 1 > $OUT/$v-$r.txt 2>&1; echo "$v $r rc=$?" >> $OUT/rc.txt
done; done
for v in base acc3; do echo "== $v"; for r in 1 2 3; do grep "rows_tc" $OUT/$v-$r.txt | awk '{printf "%s %s %s %s | ", $2,$3,$5,$7}'; echo; done; done
cat $OUT/rc.txt
