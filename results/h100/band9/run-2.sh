#!/usr/bin/env bash
# The band kernel in reflect, nearest and mirror modes (gpu-x/b9: the band kernel taken in every mode but wrap)
# against the committed strips (gpu-x/base), and a profile of the bands in reflect mode.
export PATH=$PATH:/usr/local/cuda/bin
xz -dc gpu-x/b9/coalesce.xz > /tmp/b9 && chmod +x /tmp/b9
xz -dc gpu-x/base/coalesce.xz > /tmp/base-coalesce && chmod +x /tmp/base-coalesce
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/gpu.txt
t0=$SECONDS; S=$OUT/summary.txt
A="--only-2d --masks-2d 9 --separable-2d 17 --gaussians-2d 2 --no-twins"
show() { grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD" $1 | awk '{print $1, $4, $5, $7}' | tr '\n' ';'; echo; }
mkdir -p /tmp/bench
for i in 1 2; do
  for mode in reflect nearest mirror; do
    for b in base new; do
      X=/tmp/b9; [ $b = base ] && X=/tmp/base-coalesce
      timeout 60 $X bench conv $A --mode $mode > /tmp/bench/$mode-$b-$i.txt 2>&1
      echo "== $mode $b $i rc=$? $((SECONDS-t0)) s: $(show /tmp/bench/$mode-$b-$i.txt)" | tee -a $S
    done
  done
done
M="--section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats"
timeout 100 ncu $M -k regex:conv2d_band9_f32 --launch-skip 2 --launch-count 1 /tmp/b9 bench conv $A --mode reflect > /tmp/bench/ncu-reflect.txt 2>&1
echo "== ncu rc=$? $((SECONDS-t0)) s" | tee -a $S
grep -E "Duration|Elapsed Cycles|SM Active Cycles|Issued Warp|Waves Per SM|Achieved Active|DRAM Throughput" /tmp/bench/ncu-reflect.txt | tee -a $S
tar -C /tmp -czf $OUT/bench.tgz bench
