#!/bin/bash
cd "$(dirname "$0")"
R=$PWD/res; mkdir -p $R
for v in base v2 v3; do xz -d -c $v.xz > $v && chmod +x $v; done
T0=$(date +%s)
# warm the module cache once per binary (the first run compiles the module)
for v in base v2 v3; do timeout 120 ./$v bench conv --no-twins --only-batch --batch 64x2^21@31 --dtype f32 --channels 1 > $R/warm-$v.txt 2>&1; echo "warm $v rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt; done
for r in 1 2; do for v in base v2 v3; do
  if [ $(( $(date +%s) - T0 )) -gt 380 ]; then echo "skip $v $r" >> $R/rc.txt; continue; fi
  timeout 70 ./$v bench conv --no-twins --only-batch --batch default,4096x2^15@31,64x2^21@20,64x2^21@12 --dtype f32 --channels 1 > $R/bench-$v-$r.txt 2>&1; echo "bench $v $r rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done; done
for v in base v2 v3; do
  if [ $(( $(date +%s) - T0 )) -gt 430 ]; then echo "skip reflect $v" >> $R/rc.txt; continue; fi
  timeout 70 ./$v bench conv --no-twins --only-batch --batch default --dtype f32 --channels 1 --mode reflect > $R/bench-$v-3.txt 2>&1; echo "reflect $v rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done
for v in base v2 v3; do echo "== $v"; for r in 1 2 3; do grep -E "rows" $R/bench-$v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done > $OUT/ab.txt
cat $R/rc.txt >> $OUT/ab.txt
grep -h "error" $R/*.txt >> $OUT/ab.txt
