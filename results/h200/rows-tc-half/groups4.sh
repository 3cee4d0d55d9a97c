#!/bin/bash
cd "$(dirname "$0")"
R=/tmp/r4; mkdir -p $R; T0=$(date +%s)
xz -d -c g4.xz > g4 && chmod +x g4
../bundle/run.sh /tmp/u --skip-tests --skip-examples > /tmp/unpack.txt 2>&1
cp ../bundle/unpacked/bin/coalesce ./head
V="head g4"
for v in $V; do ( timeout 150 ./$v bench conv --no-twins --only-batch --batch 64x2^21@31 --dtype bf16 --channels 1 > $R/warm-$v.txt 2>&1; echo "warm $v rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) & done; wait
for r in 1 2 3; do for v in $V; do
  timeout 60 ./$v bench conv --no-twins --only-batch --batch 64x2^21@31,4096x2^15@31 --dtype bf16 --channels 1 > $R/bench-$v-$r.txt 2>&1; echo "bench $v $r rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done; done
{ for v in $V; do echo "== $v"; for r in 1 2 3; do grep -E "rows_tc" $R/bench-$v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done
  cat $R/rc.txt; grep -h "error\|mismatch" $R/bench-*.txt | head; } > $OUT/ab.txt
