#!/bin/bash
cd "$(dirname "$0")"
V="base bulk pf pfsp pfrr1"
for v in $V; do xz -d -c $v.xz > $v && chmod +x $v; done
B="default,4096x2^15@7,64x2^21@20"
for r in 1 2; do for v in $V; do
  ./$v bench conv --no-twins --only-batch --batch $B --dtype bf16 --channels 1 > $v-$r.txt 2>&1; echo "$v $r rc=$?" >> rc.txt
done; done
for v in $V; do echo "== $v"; for r in 1 2; do grep -E "rows_tc" $v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s| ", $2,$3,$5,$7}'; echo; done; done > $OUT/ab.txt
cat rc.txt >> $OUT/ab.txt
tar cJf $OUT/logs.tar.xz *-1.txt *-2.txt
