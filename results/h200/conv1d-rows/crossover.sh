#!/bin/bash
cd "$(dirname "$0")"
R=$OUT; T0=$(date +%s)
xz -d -c co.xz > co && chmod +x co
for r in 1 2; do
timeout 150 ./co bench conv --no-twins --only-1d --widths 3,7,15,23,31 --lengths 2^24,25165824,2^25,50331648,2^26 --variants fast,rows > $R/l$r.txt 2>&1; echo "l$r rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done
