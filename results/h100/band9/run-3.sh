#!/usr/bin/env bash
# gpu-x/b12: the coalesce binary and the conv2d and concurrency test binaries with the band kernel in every mode
# but wrap and the edge warps' ghost-cell reads first; gpu-x/b11: the coalesce binary with the first change alone
# (each stripped, xz-compressed). Tests, sanitizers on the band test, then the 2D bench of both in turns (9 x 9 bands,
# 11 x 11 strips) in reflect, mirror and zero modes, and a profile of the bands in reflect mode.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b12; U=/tmp/b12; mkdir -p $U
for f in coalesce conv2d concurrency; do xz -dc $B/$f.xz > $U/$f; chmod +x $U/$f; done
xz -dc gpu-x/b11/coalesce.xz > /tmp/b11-coalesce && chmod +x /tmp/b11-coalesce
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/gpu.txt
t0=$SECONDS; S=$OUT/summary.txt
export COALESCE_EXPECT_GPU=1
( timeout 150 $U/conv2d --test-threads 4 > /tmp/t-conv2d.txt 2>&1; echo "== conv2d tests rc=$? $((SECONDS-t0)) s"; grep -E "^test |test result" /tmp/t-conv2d.txt | grep -v " ok$" ) | tee -a $S
( timeout 100 $U/concurrency > /tmp/t-conc.txt 2>&1; echo "== concurrency rc=$? $((SECONDS-t0)) s"; grep -E "test result|FAILED|panicked" /tmp/t-conc.txt ) | tee -a $S
for tool in memcheck racecheck synccheck initcheck; do
  COALESCE_UNDER_SANITIZER=1 timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $U/conv2d band_kernel_in_one_wave > /tmp/san-$tool.txt 2>&1
  echo "== sanitizer $tool rc=$? $((SECONDS-t0)) s: $(grep -E 'ERROR SUMMARY|test result' /tmp/san-$tool.txt | tr '\n' ' ')" | tee -a $S
done
cat /tmp/t-conv2d.txt /tmp/t-conc.txt /tmp/san-*.txt > $OUT/tests.txt
A="--only-2d --masks-2d 9,11 --separable-2d 17 --gaussians-2d 2 --no-twins"
show() { grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD" $1 | awk '{print $1, $4, $5, $7}' | tr '\n' ';'; echo; }
mkdir -p /tmp/bench
for i in 1 2; do
  for mode in reflect mirror zero; do
    for b in b11 b12; do
      X=$U/coalesce; [ $b = b11 ] && X=/tmp/b11-coalesce
      timeout 60 $X bench conv $A --mode $mode > /tmp/bench/$mode-$b-$i.txt 2>&1
      echo "== $mode $b $i rc=$? $((SECONDS-t0)) s: $(show /tmp/bench/$mode-$b-$i.txt)" | tee -a $S
    done
  done
  tar -C /tmp -czf $OUT/bench.tgz bench
done
M="--section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats"
timeout 100 ncu $M -k regex:conv2d_band9_f32 --launch-skip 2 --launch-count 1 $U/coalesce bench conv --only-2d --masks-2d 9 --separable-2d 17 --gaussians-2d 2 --no-twins --mode reflect > /tmp/bench/ncu-reflect.txt 2>&1
echo "== ncu rc=$? $((SECONDS-t0)) s" | tee -a $S
grep -E "Duration|Elapsed Cycles|SM Active Cycles|Issued Warp|Waves Per SM|Achieved Active|DRAM Throughput" /tmp/bench/ncu-reflect.txt | tee -a $S
tar -C /tmp -czf $OUT/bench.tgz bench
