#!/usr/bin/env bash
# Nsight Compute's branch uniformity for the warp-divergence kernels (the
# lesson's nvprof branch_efficiency): one run of examples/divergence with a
# block of 64 and 2^22 elements, one profile per kernel.
#   scripts/ncu/divergence.sh BUNDLE_DIR OUT_DIR
# smsp__sass_average_branch_targets_threads_uniform.pct is 100 when every
# branch a warp executes sends all its active threads the same way; the
# instruction counts show whether the compiler kept branches at all.
set -euo pipefail
bundle=${1:?usage: divergence.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: divergence.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out"
ncu=${NCU:-/usr/local/cuda/bin/ncu}
metrics=smsp__sass_average_branch_targets_threads_uniform.pct,smsp__sass_branch_targets.sum
metrics=$metrics,smsp__sass_branch_targets_threads_divergent.sum,smsp__thread_inst_executed_per_inst_executed.ratio
metrics=$metrics,smsp__sass_inst_executed.sum,gpu__time_duration.sum
timeout 110 "$ncu" --csv --kernel-name regex:'^(math_kernel[1-4]|warming_up)$' --metrics "$metrics" \
  "$bundle/examples/divergence" 64 4194304 >"$out/divergence-ncu.csv" 2>"$out/divergence-ncu.log"
echo "wrote $out/divergence-ncu.csv"
