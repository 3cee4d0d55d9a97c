#!/usr/bin/env bash
# Nsight Compute counters for the 1D convolution kernels, next to the
# lesson's model of global loads per output: DRAM bytes read and written per
# output, L1 and L2 hit rates, and the kernel's duration under ncu.
#
#   dram__bytes_read.sum, dram__bytes_write.sum      DRAM traffic
#   l1tex__t_sector_hit_rate.pct                     L1 hit rate
#   lts__t_sector_hit_rate.pct                       L2 hit rate
#   l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum  global load requests
#   gpu__time_duration.sum                           duration
#
# Usage: scripts/ncu/conv.sh BUNDLE_DIR OUT_DIR
#
# One run of `coalesce bench conv` at n = 2^27 (512 MiB in, 512 MiB out, far
# past the L2; ncu flushes caches before each replay), w = 31, every kernel,
# no twins, no warm-up and one sample: each kernel launches three times
# (verification, calibration, sample) and all of them are profiled. Writes
# OUT_DIR/ncu-conv.csv (raw) and OUT_DIR/ncu-conv-summary.csv (one row per
# kernel, first launch, bytes per output) when python3 is available.
set -euo pipefail
bundle=${1:?usage: conv.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: conv.sh BUNDLE_DIR OUT_DIR}
ncu=${NCU:-/usr/local/cuda/bin/ncu}
n=${CONV_NCU_N:-134217728}
w=${CONV_NCU_W:-31}
mkdir -p "$out"
out=$(cd "$out" && pwd)
metrics=dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
"$ncu" --kernel-name 'regex:^conv1d_' --launch-count 20 --metrics "$metrics" --csv --page raw \
  --log-file "$out/ncu-conv.csv" \
  "$bundle/bin/coalesce" bench conv --lengths "$n" --widths "$w" --no-twins --only-1d --warmup 0 --reps 1 \
  --out "$out/ncu-conv-bench" >"$out/ncu-conv-bench.log" 2>&1

if command -v python3 >/dev/null; then
  python3 - "$out" "$n" <<'PY'
import csv, sys, pathlib
out, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
rows = list(csv.reader(open(out / "ncu-conv.csv")))
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
cols = rows[head]
data = [dict(zip(cols, r)) for r in rows[head + 2:] if len(r) == len(cols)]
def num(v):
    return float(v.replace(",", ""))
seen, table = set(), []
for d in data:
    k = d["Kernel Name"].split("(")[0]
    if k in seen:
        continue
    seen.add(k)
    table.append([k, num(d["dram__bytes_read.sum"]) / n, num(d["dram__bytes_write.sum"]) / n,
                  num(d["l1tex__t_sector_hit_rate.pct"]), num(d["lts__t_sector_hit_rate.pct"]),
                  num(d["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]) / n,
                  num(d["gpu__time_duration.sum"])])
with open(out / "ncu-conv-summary.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["kernel", "dram_read_bytes_per_output", "dram_write_bytes_per_output", "l1_hit_pct",
                "l2_hit_pct", "global_load_requests_per_output", "duration_ns"])
    w.writerows(table)
for r in table:
    print(f"{r[0]:<24} DRAM read {r[1]:6.2f} B/output  write {r[2]:5.2f}  L1 hit {r[3]:5.1f}%  L2 hit {r[4]:5.1f}%")
PY
fi
