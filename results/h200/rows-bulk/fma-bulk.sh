#!/bin/bash
cd "$(dirname "$0")"
V="base fb"
for v in $V; do xz -d -c $v.xz > $v && chmod +x $v; done
for r in 1 2; do for v in $V; do
  ./$v bench conv --no-twins --only-batch --batch default,4096x2^15@31,64x2^21@20 --dtype f32 --channels 1 > $v-$r.txt 2>&1; echo "$v $r rc=$?" >> rc.txt
done; done
for v in $V; do echo "== $v"; for r in 1 2; do grep -E "rows" $v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done > $OUT/ab.txt
cat rc.txt >> $OUT/ab.txt
