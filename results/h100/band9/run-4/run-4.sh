#!/usr/bin/env bash
# Band ghost cells copied with their rows (gpu-x/b15) against the committed tree (gpu-x/b14):
# tests and sanitizers of b15, then the 2D bench (masks 3..13) in turns, reflect and zero; twins in reflect.
export PATH=$PATH:/usr/local/cuda/bin
U=/tmp/b15; mkdir -p $U /tmp/bench
for f in coalesce conv2d concurrency; do xz -dc gpu-x/b15/$f.xz > $U/$f; chmod +x $U/$f; done
xz -dc gpu-x/b14/coalesce.xz > /tmp/b14-coalesce && chmod +x /tmp/b14-coalesce
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/gpu.txt
t0=$SECONDS; S=$OUT/summary.txt
# Load b14's PTX once meanwhile (its first load compiles it).
( timeout 250 /tmp/b14-coalesce info > /tmp/b14-info.txt 2>&1; echo "== b14 info rc=$? $((SECONDS-t0)) s" >> /tmp/b14-info.txt ) &
export COALESCE_EXPECT_GPU=1
( timeout 170 $U/conv2d --test-threads 4 > /tmp/t-conv2d.txt 2>&1; echo "== conv2d tests rc=$? $((SECONDS-t0)) s"; grep -E "^test |test result" /tmp/t-conv2d.txt | grep -v " ok$" ) | tee -a $S
( timeout 100 $U/concurrency > /tmp/t-conc.txt 2>&1; echo "== concurrency rc=$? $((SECONDS-t0)) s"; grep -E "test result|FAILED|panicked" /tmp/t-conc.txt ) | tee -a $S
for tool in memcheck racecheck synccheck initcheck; do
  COALESCE_UNDER_SANITIZER=1 timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $U/conv2d band_kernel_in_one_wave > /tmp/san-$tool.txt 2>&1
  echo "== sanitizer $tool rc=$? $((SECONDS-t0)) s: $(grep -E 'ERROR SUMMARY|test result' /tmp/san-$tool.txt | tr '\n' ' ')" | tee -a $S
done
cat /tmp/t-conv2d.txt /tmp/t-conc.txt /tmp/san-*.txt > $OUT/tests.txt
wait; tail -1 /tmp/b14-info.txt | tee -a $S
show() { grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD" $1 | awk '{print $1, $4, $5, $7, $9, $10}' | tr '\n' ';'; echo; }
A="--only-2d --masks-2d 3,5,7,9,11,13 --separable-2d 17 --gaussians-2d 2"
timeout 120 $U/coalesce bench conv $A --mode reflect > /tmp/bench/reflect-b15-twins.txt 2>&1
echo "== reflect b15 twins rc=$? $((SECONDS-t0)) s: $(show /tmp/bench/reflect-b15-twins.txt)" | tee -a $S
tar -C /tmp -czf $OUT/bench.tgz bench
for i in 1 2; do
  for mode in reflect zero; do
    for b in b14 b15; do
      [ $((SECONDS-t0)) -gt 330 ] && break 3
      X=$U/coalesce; [ $b = b14 ] && X=/tmp/b14-coalesce
      timeout 60 $X bench conv $A --no-twins --mode $mode > /tmp/bench/$mode-$b-$i.txt 2>&1
      echo "== $mode $b $i rc=$? $((SECONDS-t0)) s: $(show /tmp/bench/$mode-$b-$i.txt)" | tee -a $S
    done
  done
  tar -C /tmp -czf $OUT/bench.tgz bench
done
for mode in mirror nearest; do
  [ $((SECONDS-t0)) -gt 370 ] && break
  timeout 40 $U/coalesce bench conv --only-2d --masks-2d 9 --separable-2d 17 --gaussians-2d 2 --no-twins --mode $mode > /tmp/bench/$mode-b15.txt 2>&1
  echo "== $mode b15 rc=$? $((SECONDS-t0)) s: $(show /tmp/bench/$mode-b15.txt)" | tee -a $S
done
tar -C /tmp -czf $OUT/bench.tgz bench
