#!/usr/bin/env bash
# The band kernel (conv2d_band9_f32) against the committed strips (gpu-x/base: the coalesce binary of d5ccc9c, whose
# kernels HEAD keeps): tests, sanitizers on the band tests, the 2D bench in turns, twins, one profile.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b7; U=/tmp/b7; mkdir -p $U
for f in coalesce conv2d concurrency; do xz -dc $B/$f.xz > $U/$f; chmod +x $U/$f; done
xz -dc gpu-x/base/coalesce.xz > /tmp/base-coalesce && chmod +x /tmp/base-coalesce
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/gpu.txt
t0=$SECONDS; S=$OUT/summary.txt
export COALESCE_EXPECT_GPU=1
( timeout 200 $U/conv2d --test-threads 4 > /tmp/t-conv2d.txt 2>&1; echo "== conv2d tests rc=$? $((SECONDS-t0)) s"; grep -E "^test |test result" /tmp/t-conv2d.txt | grep -v " ok$" ) | tee -a $S
( timeout 150 $U/concurrency > /tmp/t-conc.txt 2>&1; echo "== concurrency rc=$? $((SECONDS-t0)) s"; grep -E "test result|FAILED|panicked" /tmp/t-conc.txt ) | tee -a $S
for tool in memcheck racecheck synccheck initcheck; do
  COALESCE_UNDER_SANITIZER=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $U/conv2d band_kernel_in_one_wave > /tmp/san-$tool.txt 2>&1
  echo "== sanitizer $tool rc=$? $((SECONDS-t0)) s: $(grep -E 'ERROR SUMMARY|test result' /tmp/san-$tool.txt | tr '\n' ' ')" | tee -a $S
done
cat /tmp/t-conv2d.txt /tmp/t-conc.txt /tmp/san-*.txt > $OUT/tests.txt
A="--only-2d --masks-2d 7,9,11 --separable-2d 17 --gaussians-2d 2 --no-twins"
show() { grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD" $1 | awk '{print $1, $4, $5, $7}' | tr '\n' ';'; echo; }
mkdir -p /tmp/bench
for i in 1 2 3; do
  for b in base new; do
    X=$U/coalesce; [ $b = base ] && X=/tmp/base-coalesce
    timeout 90 $X bench conv $A --mode zero > /tmp/bench/zero-$b-$i.txt 2>&1
    echo "== zero $b $i rc=$? $((SECONDS-t0)) s: $(show /tmp/bench/zero-$b-$i.txt)" | tee -a $S
  done
done
timeout 90 $U/coalesce bench conv $A --mode reflect > /tmp/bench/reflect-new.txt 2>&1
echo "== reflect new rc=$? $((SECONDS-t0)) s: $(show /tmp/bench/reflect-new.txt)" | tee -a $S
timeout 150 $U/coalesce bench conv --only-2d --masks-2d 9 --separable-2d 17 --gaussians-2d 2 --mode zero > /tmp/bench/twins.txt 2>&1
echo "== twins rc=$? $((SECONDS-t0)) s" | tee -a $S; grep -E "^9x9|twin|C\+\+" /tmp/bench/twins.txt | head -20 | tee -a $S
M="--section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats"
timeout 120 ncu $M -k regex:conv2d_band9_f32 --launch-skip 2 --launch-count 1 $U/coalesce bench conv --only-2d --masks-2d 9 --separable-2d 17 --gaussians-2d 2 --no-twins > /tmp/bench/ncu.txt 2>&1
echo "== ncu rc=$? $((SECONDS-t0)) s" | tee -a $S
grep -E "Duration|Elapsed Cycles|SM Active Cycles|Issued Warp|Waves Per SM|Achieved Active|DRAM Throughput|Grid Size|Block Size" /tmp/bench/ncu.txt | tee -a $S
tar -C /tmp -czf $OUT/bench.tgz bench
