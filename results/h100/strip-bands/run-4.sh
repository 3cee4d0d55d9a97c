#!/usr/bin/env bash
# Nsight Compute on the register kernels of both builds (gpu-x/b6: one wave of bands; gpu-x/base: d5ccc9c), 8192²
# f32: 9 x 9 in zero and reflect modes, 11 x 11 in zero mode (not in bands, the kernel's code changed). One launch each.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b6
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
[ -x /tmp/base-coalesce ] || xz -dc gpu-x/base/coalesce.xz > /tmp/base-coalesce && chmod +x /tmp/base-coalesce
N=$B/unpacked/bin/coalesce; O=/tmp/base-coalesce
M=gpu__time_duration.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__warps_active.avg.per_cycle_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,launch__grid_size,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_ldgsts.sum
mkdir -p $OUT/ncu
for k in 9:zero 9:reflect 11:zero; do
  n=${k%%:*}; mode=${k##*:}
  for b in base new; do
    X=$N; [ $b = base ] && X=$O
    timeout 100 ncu --kernel-name conv2d_strip${n}_f32 --launch-count 1 --metrics $M $X bench conv --only-2d --masks-2d $n --separable-2d 3 --gaussians-2d 1 --mode $mode --no-twins > $OUT/ncu/$n-$mode-$b.txt 2>&1
    echo "== ${n}x$n $mode $b rc=$?"; grep -E "^\s+(gpu__|sm__|smsp__|dram__|launch__)" $OUT/ncu/$n-$mode-$b.txt | awk '{print $1, $NF}' | tr '\n' ' '; echo
  done
done
