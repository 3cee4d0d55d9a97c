#!/bin/bash
cd "$(dirname "$0")"
V="base rr2 ca rr2ca"
for v in $V; do xz -d -c $v.xz > $v && chmod +x $v; done
B="default,4096x2^15@7"
for r in 1 2; do for v in $V; do
  ./$v bench conv --no-twins --only-batch --batch $B --dtype f32,bf16 --channels 1 > $v-$r.txt 2>&1; echo "$v $r rc=$?" >> rc.txt
done; done
for v in $V; do echo "== $v"; for r in 1 2; do grep -E "rows" $v-$r.txt | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done > $OUT/ab.txt
cat rc.txt >> $OUT/ab.txt
tar cJf $OUT/ab-logs.tar.xz *-1.txt *-2.txt
# strip7/strip9 dynamic instruction mix
timeout 200 ncu --clock-control none -o s79 --set full --import-source no --kernel-name regex:"conv2d_strip[79]_f32" -c 2 ./base bench conv --no-twins --only-2d --masks-2d 7,9 --warmup 1 --reps 2 > $OUT/ncu-run.txt 2>&1
ncu -i s79.ncu-rep > $OUT/ncu-s79.txt 2>&1
ncu -i s79.ncu-rep --page source --csv --print-source sass > s79-sass.csv 2>&1; xz -c s79-sass.csv > $OUT/s79-sass.csv.xz
ls -la $OUT
