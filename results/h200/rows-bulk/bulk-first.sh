#!/bin/bash
cd "$(dirname "$0")"
for v in base new batch; do xz -d -c $v.xz > $v && chmod +x $v; done
export COALESCE_EXPECT_GPU=1
timeout 240 ./batch --test-threads 4 > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $OUT/tests.txt
export COALESCE_UNDER_SANITIZER=1
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 ./batch bf16_tensor_cores_every --test-threads 1 > san-$tool.txt 2>&1; echo "$tool rc=$?" >> $OUT/san.txt; tail -4 san-$tool.txt >> $OUT/san.txt
done
unset COALESCE_UNDER_SANITIZER
B="default,4096x2^15@7,64x2^21@20"
for r in 1 2; do for v in base new; do
  ./$v bench conv --no-twins --only-batch --batch $B --dtype bf16,f32 --channels 1 > $v-$r.txt 2>&1; echo "$v $r rc=$?" >> rc.txt
done; done
for v in base new; do echo "== $v"; for r in 1 2; do grep -E "rows" $v-$r.txt | grep -v goal | awk '{printf "%s %s %s %s %s| ", $1,$2,$3,$5,$7}'; echo; done; done > $OUT/ab.txt
cat rc.txt >> $OUT/ab.txt
tar cJf $OUT/logs.tar.xz base-*.txt new-*.txt san-*.txt
