#!/bin/bash
cd "$(dirname "$0")"
R=$OUT; T0=$(date +%s)
xz -d -c co.xz > co && chmod +x co
xz -d -c conc.xz > conc && chmod +x conc
export COALESCE_EXPECT_GPU=1
nvidia-smi -L > $R/gpu.txt
which gdb eu-stack gstack > $R/tools.txt 2>&1
# Runs the racecheck of the threaded rows test into $R/$1.txt; at 45 s, dumps the stacks of its processes.
watched() {
  t=$(date +%s)
  COALESCE_UNDER_SANITIZER=1 timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 ./conc rows_kernels --test-threads 1 > $R/$1.txt 2>&1 &
  P=$!
  while kill -0 $P 2>/dev/null; do
    if [ $(( $(date +%s) - t )) -ge 45 ]; then
      for p in $(pgrep -f "conc rows_kernels"); do
        echo "== pid $p: $(cat /proc/$p/cmdline | tr '\0' ' ')" >> $R/$1-stacks.txt
        for tk in /proc/$p/task/*; do echo "$tk $(cat $tk/comm) $(cat $tk/wchan 2>/dev/null) $(cat $tk/stat | cut -d' ' -f3)"; done >> $R/$1-stacks.txt
        command -v gdb >/dev/null && timeout 20 gdb -p $p -batch -ex "thread apply all bt 12" >> $R/$1-stacks.txt 2>&1
      done
      break
    fi
    sleep 1
  done
  wait $P; echo "$1 rc=$? $(( $(date +%s) - t ))s" >> $R/rc.txt
}
# 1. racecheck of the threaded rows test alone, three times
for i in 1 2 3; do watched race-alone-$i; done
# 4. f64: fast against rows
timeout 200 ./co bench conv --no-twins --only-1d --dtype-1d f64 --widths 1,3,7,15,17,21,23,31,32 --lengths 2^22,2^23,12582912,2^24,25165824,2^25,2^26,2^27 --variants fast,rows > $R/f64-1.txt 2>&1; echo "f64-1 rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
timeout 60 ./co bench conv --only-1d --dtype-1d f64,f32 --widths 33,48,63 --lengths 2^27 --variants fast,rows,tensor > $R/wide.txt 2>&1; echo "wide rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
# 2. the threaded rows test at full size, no sanitizer, until 80 s
t=$(date +%s); ok=0
for i in $(seq 1 30); do
  [ $(( $(date +%s) - t )) -gt 80 ] && break
  timeout 40 ./conc rows_kernels --test-threads 1 > $R/plain-last.txt 2>&1 && ok=$((ok+1)) || { echo "plain run $i failed rc=$?" >> $R/rc.txt; cp $R/plain-last.txt $R/plain-fail-$i.txt; }
done
echo "plain: $ok of $i passed in $(( $(date +%s) - t ))s" >> $R/rc.txt
# 3. racecheck beside a GPU load (the 1D bench)
( timeout 150 ./co bench conv --no-twins --only-1d --widths 3,15,31 --lengths 2^27 --variants fast,rows > $R/load.txt 2>&1 ) &
L=$!
for i in 1 2; do watched race-load-$i; done
wait $L; echo "load rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
