#!/bin/bash
cd "$(dirname "$0")"
U=../bundle/unpacked
[ -x $U/bin/coalesce ] || ../bundle/run.sh /tmp/unp --skip-tests --skip-examples > /dev/null 2>&1
for k in rows8_f32 rows2_f32; do
  case $k in rows8_f32) W=64x2^21@31;; rows2_f32) W=1024x2^17@7;; esac
  timeout 200 ncu -o $OUT/$k --set full --import-source no -k regex:conv1d_${k}\$ -c 1 $U/bin/coalesce bench conv --no-twins --only-batch --batch $W --dtype f32 --channels 1 > $OUT/$k-log.txt 2>&1
  ncu -i $OUT/$k.ncu-rep --page details --csv > $OUT/$k-details.csv 2>&1
  ncu -i $OUT/$k.ncu-rep --page source --csv --print-source sass > $OUT/$k-sass.csv 2>&1
  xz -T4 $OUT/$k-sass.csv
done
ls -la $OUT
