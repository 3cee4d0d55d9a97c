#!/bin/bash
# base (HEAD) against new (the bundle's binary): the batch workloads, one pass
cd "$(dirname "$0")"
[ -x base ] || xz -d -c base.xz > base && chmod +x base
cp ../bundle/unpacked/bin/coalesce new
for v in base new; do
  ./$v bench conv --no-twins --only-batch --batch default,4096x2^15@7,4096x2^15@31 --dtype ${DT:-f32,bf16} --channels ${CH:-1} > $OUT/ab-$v-${PASS:-1}.txt 2>&1; echo "$v rc=$?"
done
for v in base new; do echo "== $v"; grep -E "rows|sep|chan" $OUT/ab-$v-${PASS:-1}.txt | grep -v goal | awk '{print $1,$2,$3,$4,$5,$7}'; done
