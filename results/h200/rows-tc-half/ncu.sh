#!/bin/bash
cd "$(dirname "$0")"
xz -d -c base.xz > base && chmod +x base
../bundle/run.sh /tmp/u --skip-tests --skip-examples > /tmp/unpack.txt 2>&1
U=../bundle/unpacked
for v in base new; do
  if [ $v = new ]; then X=$U/bin/coalesce; else X=./base; fi
  timeout 200 ncu -o /tmp/$v --set full --import-source no -k regex:conv1d_rows_tc3_bf16\$ -c 1 $X bench conv --no-twins --only-batch --batch 64x2^21@31 --dtype bf16 --channels 1 > $OUT/ncu-$v-log.txt 2>&1
  echo "ncu $v rc=$?" >> $OUT/ncu-$v-log.txt
  ncu -i /tmp/$v.ncu-rep --page details --csv > $OUT/ncu-tc3-$v-details.csv 2>&1
done
ls -la $OUT
