#!/bin/bash
cd "$(dirname "$0")"
R=$PWD/res; mkdir -p $R; T0=$(date +%s)
xz -d -c co.xz > co && chmod +x co
nvidia-smi -L > $R/gpu.txt
L=2^23,12582912,2^24,25165824,2^25,2^26,2^27
timeout 200 ./co bench conv --no-twins --only-1d --dtype-1d f64 --widths 2,4,5,6,8,9,10,11,12,13,14 --lengths $L --variants fast,rows > $R/f64-2.txt 2>&1; echo "f64-2 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
timeout 120 ./co bench conv --no-twins --only-1d --dtype-1d f64 --widths 1,3,7,9,12,15 --lengths $L --variants fast,rows > $R/f64-3.txt 2>&1; echo "f64-3 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
cp $R/*.txt $OUT/ 2>/dev/null; tar cJf $OUT/res.tar.xz -C $R .
