#!/bin/bash
cd "$(dirname "$0")"
R=$OUT; T0=$(date +%s)
for b in co conv1d concurrency conv_tensor; do xz -d -c $b.xz > $b && chmod +x $b; done
export COALESCE_EXPECT_GPU=1
W=3,5,7,9,11,13,15,16,17,19,21,23,25,27,29,31,32
timeout 150 ./co bench conv --no-twins --only-1d --widths $W --lengths 2^27 --variants fast,rows > $R/w1.txt 2>&1; echo "w1 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
timeout 100 ./co bench conv --no-twins --only-1d --widths 7,15,16,23,31,32 --lengths 2^20,2^24,2^28 --variants fast,rows > $R/w2.txt 2>&1; echo "w2 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
timeout 100 ./co bench conv --no-twins --only-1d --widths 15,16,23,31 --lengths 2^27 --variants fast,rows --mode reflect > $R/w3.txt 2>&1; echo "w3 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
for t in conv1d concurrency conv_tensor; do timeout 150 ./$t --test-threads 4 > $R/t-$t.txt 2>&1; echo "$t rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt; done
timeout 60 ./co stress --threads 8 --seconds 8 > $R/stress.txt 2>&1; echo "stress rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
