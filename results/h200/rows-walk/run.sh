#!/bin/bash
cd "$(dirname "$0")"
V="${VARIANTS:-base new}"
for v in $V; do xz -d -c $v.xz > $v && chmod +x $v; done
B="${BATCH:-default,64x2^21@12,64x2^21@20}"
for r in 1 2; do for v in $V; do
  ./$v bench conv --no-twins --only-batch --batch $B --dtype ${DT:-bf16} --channels 1 > $OUT/$v-$r.txt 2>&1; echo "$v $r rc=$?" >> $OUT/rc.txt
done; done
for v in $V; do echo "== $v"; for r in 1 2; do grep -E "rows" $OUT/$v-$r.txt | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done
cat $OUT/rc.txt
