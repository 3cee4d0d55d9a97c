#!/usr/bin/env bash
# Nsight Compute counters for the transfer suite's kernels:
#  * the zero-copy kernels (zero_copy_read: a kernel reading mapped host
#    memory; zero_copy_write: writing it) at one size, 64 MiB, one timed
#    sample per direction: duration, DRAM bytes on the device side and L2
#    sectors to/from system memory (the host side, over the link);
#  * the overlap experiment's compute kernel (scale_add_u32) on a 16 MiB
#    pipeline with a fixed step count: duration and SM / DRAM throughput.
#   scripts/ncu/transfer.sh BUNDLE_DIR OUT_DIR
# ncu serializes kernels, so the pipeline's overlap is not what is measured
# here; the bench run itself measures it.
set -euo pipefail
bundle=${1:?usage: transfer.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: transfer.sh BUNDLE_DIR OUT_DIR}
mkdir -p "$out"
ncu=${NCU:-/usr/local/cuda/bin/ncu}
base=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
sysmem=lts__t_sectors_aperture_sysmem_op_read.sum,lts__t_sectors_aperture_sysmem_op_write.sum

zero_copy() { # metrics
  timeout 55 "$ncu" --csv --kernel-name regex:'^zero_copy_(read|write)$' --launch-count 6 --metrics "$1" \
    "$bundle/bin/coalesce" bench transfer --only sweep --min-size 64MiB --max-size 64MiB --reps 1 --warmup 0 \
    --out "$out/bench-transfer-sweep" >"$out/transfer-ncu-zero-copy.csv" 2>"$out/transfer-ncu-zero-copy.log"
}
# The system-memory sector metrics are not offered on every GPU: without
# them, the base metrics alone.
zero_copy "$base,$sysmem" || zero_copy "$base" \
  || echo "ncu for the zero-copy kernels exited with $? (see $out/transfer-ncu-zero-copy.log)"

metrics=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics=$metrics,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
timeout 55 "$ncu" --csv --kernel-name regex:'^scale_add_u32$' --launch-count 4 --metrics "$metrics" \
  "$bundle/bin/coalesce" bench transfer --only overlap --pipeline-size 16MiB --chunks 4 --streams 2 --k 256 \
  --reps 1 --warmup 0 --out "$out/bench-transfer-overlap" >"$out/transfer-ncu-overlap.csv" \
  2>"$out/transfer-ncu-overlap.log" || echo "ncu for scale_add_u32 exited with $? (see $out/transfer-ncu-overlap.log)"
echo "wrote $out/transfer-ncu-zero-copy.csv and $out/transfer-ncu-overlap.csv"
