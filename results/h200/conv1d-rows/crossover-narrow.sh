#!/bin/bash
cd "$(dirname "$0")"
R=$OUT; T0=$(date +%s)
xz -d -c co.xz > co && chmod +x co
for r in 1 2; do
timeout 150 ./co bench conv --no-twins --only-1d --widths 1,2,17,19,21,22 --lengths 2^24,25165824,2^25,50331648 --variants fast,rows > $R/m$r.txt 2>&1; echo "m$r rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done
