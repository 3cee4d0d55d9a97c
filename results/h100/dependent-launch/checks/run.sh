#!/usr/bin/env bash
# Call 2: main's checks not yet run on a GPU since the dependent launches landed: the transfer
# and transpose tests, four sanitizers on the chain tests, and `coalesce stress`.
export PATH=$PATH:/usr/local/cuda/bin
H=$(cd "$(dirname "$0")" && pwd)
B=$H/../b
U=$B/unpacked
export COALESCE_EXPECT_GPU=1
L=${CHECK_LIMIT:-400}
S=$((L - 10)); [ $S -gt 300 ] && S=300; [ $S -lt 20 ] && S=20
TESTS="transfer transpose" timeout $((L - 15)) bash $B/run.sh $OUT/t --skip-examples > $OUT/tests.txt 2>&1 &
mkdir -p $OUT/san
for tool in memcheck racecheck synccheck initcheck; do
  ( COALESCE_UNDER_SANITIZER=1 timeout $((L - 15)) compute-sanitizer --tool $tool --error-exitcode 1 $U/tests/concurrency mixed_chains --test-threads=4 > $OUT/san/$tool-concurrency.log 2>&1; echo "rc=$?" >> $OUT/san/$tool-concurrency.log ) &
  ( COALESCE_UNDER_SANITIZER=1 timeout $((L - 15)) compute-sanitizer --tool $tool --error-exitcode 1 $U/tests/channels chains --test-threads=4 > $OUT/san/$tool-channels.log 2>&1; echo "rc=$?" >> $OUT/san/$tool-channels.log ) &
done
( timeout $((L - 15)) $U/bin/coalesce stress --seconds $((S / 2)) --threads 16 > $OUT/stress.txt 2>&1; echo "rc=$?" >> $OUT/stress.txt ) &
wait
cat $OUT/t/summary.txt; for f in $OUT/san/*.log; do echo "$f: $(grep -E 'ERROR SUMMARY|test result|rc=' $f | tr '\n' ' ')"; done; tail -30 $OUT/stress.txt
