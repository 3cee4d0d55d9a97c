#!/bin/bash
cd "$(dirname "$0")"
R=/tmp/r; mkdir -p $R; T0=$(date +%s)
for b in base new batch; do xz -d -c $b.xz > $b && chmod +x $b; done
export COALESCE_EXPECT_GPU=1
for v in base new; do ( timeout 150 ./$v bench conv --no-twins --only-batch --batch 64x2^21@31 --dtype bf16 --channels 1 > $R/warm-$v.txt 2>&1; echo "warm $v rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) & done
timeout 240 ./batch > $R/test-batch.txt 2>&1; echo "test batch rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
wait
for r in 1 2; do for v in base new; do
  timeout 70 ./$v bench conv --no-twins --only-batch --batch default,4096x2^15@31,64x2^21@20,64x2^21@12 --dtype bf16 --channels 1 > $R/bench-$v-$r.txt 2>&1; echo "bench $v $r rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done; done
for v in base new; do
  timeout 60 ./$v bench conv --no-twins --only-batch --batch default --dtype bf16 --channels 1 --mode reflect > $R/bench-$v-3.txt 2>&1; echo "reflect $v rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
done
./new stress --threads 8 --seconds 6 > $R/stress.txt 2>&1; echo "stress rc=$?" >> $R/rc.txt
export COALESCE_UNDER_SANITIZER=1
for job in "racecheck drawn_tiles" "synccheck drawn_tiles" "memcheck drawn_tiles"; do set -- $job
  ( timeout 150 compute-sanitizer --tool $1 --error-exitcode 9 ./batch $2 --test-threads 1 > $R/san-$1-$2.txt 2>&1; echo "$1 $2 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt ) &
done; wait
{ for v in base new; do echo "== $v"; for r in 1 2 3; do grep -E "rows" $R/bench-$v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done
  cat $R/rc.txt; grep -h "error\|panick\|FAIL" $R/bench-*.txt $R/test-batch.txt | head -20
  grep -h "test result" $R/test-batch.txt; tail -2 $R/stress.txt
  for f in $R/san-*.txt; do echo "$f: $(grep -h 'SUMMARY\|test result' $f | tr '\n' ' ')"; done; } > $OUT/ab.txt
cp $R/bench-new-1.txt $OUT/bench-new-1.txt
tail -30 $R/san-racecheck-drawn_tiles.txt > $OUT/san-tail.txt
