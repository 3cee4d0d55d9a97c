#!/bin/bash
cd "$(dirname "$0")"
xz -d -c coalesce.xz > coalesce && chmod +x coalesce
k=rows8_f32; W=64x2^21@31
timeout 300 ncu -o $OUT/$k --set full --import-source no -k regex:conv1d_${k}\$ -c 1 ./coalesce bench conv --no-twins --only-batch --batch $W --dtype f32 --channels 1 > $OUT/$k-log.txt 2>&1
echo "ncu rc=$?" >> $OUT/$k-log.txt
ncu -i $OUT/$k.ncu-rep --page details --csv > $OUT/$k-details.csv 2>&1
ncu -i $OUT/$k.ncu-rep --page source --csv --print-source sass > $OUT/$k-sass.csv 2>&1
xz -T4 $OUT/$k-sass.csv
rm -f $OUT/$k.ncu-rep
ls -la $OUT
