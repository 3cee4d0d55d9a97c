#!/bin/bash
cd "$(dirname "$0")"
R=/tmp/r; mkdir -p $R; T0=$(date +%s)
V="base k8"
for b in $V; do xz -d -c $b.xz > $b && chmod +x $b; done
for v in $V; do ( timeout 150 ./$v bench conv --no-twins --only-batch --batch 64x2^21@31 --dtype bf16 --channels 1 > $R/warm-$v.txt 2>&1; echo "warm $v rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) & done; wait
for r in 1 2 3; do for v in $V; do
  timeout 70 ./$v bench conv --no-twins --only-batch --batch default,4096x2^15@31 --dtype bf16 --channels 1 > $R/bench-$v-$r.txt 2>&1; echo "bench $v $r rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done; done
for v in $V; do
  timeout 60 ./$v bench conv --no-twins --only-batch --batch default --dtype bf16 --channels 1 --mode reflect > $R/bench-$v-4.txt 2>&1; echo "reflect $v rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done
{ for v in $V; do echo "== $v"; for r in 1 2 3 4; do grep -E "rows" $R/bench-$v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done
  cat $R/rc.txt; grep -h "error\|panick\|FAIL\|mismatch" $R/bench-*.txt | head -20; } > $OUT/ab.txt
