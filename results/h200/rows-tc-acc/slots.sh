#!/bin/bash
cd "$(dirname "$0")"
R=/tmp/r2; mkdir -p $R; T0=$(date +%s)
V="new hackB hackC hackD"
for b in $V; do xz -d -c $b.xz > $b && chmod +x $b; done
export COALESCE_EXPECT_GPU=1
for v in $V; do timeout 60 ./$v bench conv --no-twins --only-batch --batch 64x2^21@31 --dtype bf16 --channels 1 > $R/warm-$v.txt 2>&1; echo "warm $v rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt; done
for r in 1 2; do for v in $V; do
  timeout 70 ./$v bench conv --no-twins --only-batch --batch 64x2^21@31,1024x2^17@7,4096x2^15@31,64x2^21@20 --dtype bf16 --channels 1 > $R/bench-$v-$r.txt 2>&1; echo "bench $v $r rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done; done
{ for v in $V; do echo "== $v"; for r in 1 2; do grep -E "_tc" $R/bench-$v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s| ", $2,$3,$5,$7}'; echo; done; done
  cat $R/rc.txt; grep -h "error\|panick\|FAIL\|mismatch" $R/*.txt | head -20; } > $OUT/ab2.txt
cat $OUT/ab2.txt
