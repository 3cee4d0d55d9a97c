#!/usr/bin/env bash
# Nsight Compute counters for the reduction kernels: one size (2^26 f32 and
# i32), one timed sample, the first pass of every variant.
#   scripts/ncu/reduce.sh BUNDLE_DIR OUT_DIR
# DRAM throughput (% of peak and bytes), achieved occupancy, warp
# efficiency (divergence of the tree kernels), shared-memory bank
# conflicts, and the branch-uniformity metric.
set -euo pipefail
bundle=${1:?usage: reduce.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: reduce.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out"
ncu=${NCU:-/usr/local/cuda/bin/ncu}
metrics=dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,gpu__time_duration.sum
metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio
metrics=$metrics,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__sass_average_branch_targets_threads_uniform.pct
for t in f32 i32; do
  timeout 55 "$ncu" --csv --kernel-name regex:"^reduce_(neighbored|interleaved|fast)_$t\$" \
    --launch-count 30 --metrics "$metrics" \
    "$bundle/bin/coalesce" bench reduce --min-elems 2^26 --max-elems 2^26 --types "$t" \
    --reps 1 --warmup 0 --out "$out/bench-$t" >"$out/reduce-ncu-$t.csv" 2>"$out/reduce-ncu-$t.log" \
    || echo "ncu for $t exited with $? (see $out/reduce-ncu-$t.log)"
done
echo "wrote $out/reduce-ncu-f32.csv and $out/reduce-ncu-i32.csv"
