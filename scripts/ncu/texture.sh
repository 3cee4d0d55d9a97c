#!/usr/bin/env bash
# Nsight Compute counters for the texture suite's 2D convolutions: the
# texture kernels (over a CUDA array and over a pitched buffer) next to the
# shared-memory tiled and fast kernels, on one image, one mask, one mode.
#
#   dram__bytes_read.sum, dram__bytes_write.sum      DRAM traffic
#   l1tex__t_sector_hit_rate.pct                     L1/texture cache hit rate
#   lts__t_sector_hit_rate.pct                       L2 hit rate
#   l1tex__throughput.avg.pct_of_peak_sustained_elapsed   L1/texture unit busy
#   sm__throughput.avg.pct_of_peak_sustained_elapsed      SM busy
#   gpu__time_duration.sum                           duration
#
# Usage: scripts/ncu/texture.sh BUNDLE_DIR OUT_DIR
#
# One run of `coalesce bench texture` on an 8192^2 image (256 MiB in, 256
# MiB out), a 5x5 mask, zero boundary (border 0), no resize, no warm-up
# and one sample: each kernel launches three times (verification,
# calibration, sample). Writes OUT_DIR/ncu-texture.csv (raw) and
# OUT_DIR/ncu-texture-summary.csv (one row per kernel and texture source,
# first launch, bytes per output) when python3 is available.
set -euo pipefail
bundle=${1:?usage: texture.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: texture.sh BUNDLE_DIR OUT_DIR}
ncu=${NCU:-/usr/local/cuda/bin/ncu}
side=${TEXTURE_NCU_SIDE:-8192}
mask=${TEXTURE_NCU_MASK:-5}
mkdir -p "$out"
out=$(cd "$out" && pwd)
metrics=dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct
metrics+=,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,gpu__time_duration.sum
"$ncu" --kernel-name 'regex:^(tex_conv2d|conv2d_tiled|conv2d_fast)' --launch-count 24 --metrics "$metrics" \
  --csv --page raw --log-file "$out/ncu-texture.csv" \
  "$bundle/bin/coalesce" bench texture --image "$side" --masks "$mask" --modes zero --no-resize \
  --warmup 0 --reps 1 --out "$out/ncu-texture-bench" >"$out/ncu-texture-bench.log" 2>&1

if command -v python3 >/dev/null; then
  python3 - "$out" "$side" <<'PY'
import csv, sys, pathlib
out, side = pathlib.Path(sys.argv[1]), int(sys.argv[2])
n = side * side
rows = list(csv.reader(open(out / "ncu-texture.csv")))
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
cols = rows[head]
data = [dict(zip(cols, r)) for r in rows[head + 2:] if len(r) == len(cols)]
def num(v):
    return float(v.replace(",", ""))
# Launch order per variant: verification, calibration, sample. The texture
# kernels run twice each (array, then pitched): keep the first launch of
# each (kernel, occurrence) pair, three launches apart.
count, table = {}, []
for d in data:
    k = d["Kernel Name"].split("(")[0]
    i = count.get(k, 0)
    count[k] = i + 1
    if i % 3:
        continue
    source = "" if not k.startswith("tex_") else (" (array)" if i == 0 else " (pitched)")
    table.append([k + source, num(d["dram__bytes_read.sum"]) / n, num(d["dram__bytes_write.sum"]) / n,
                  num(d["l1tex__t_sector_hit_rate.pct"]), num(d["lts__t_sector_hit_rate.pct"]),
                  num(d["l1tex__throughput.avg.pct_of_peak_sustained_elapsed"]),
                  num(d["sm__throughput.avg.pct_of_peak_sustained_elapsed"]), num(d["gpu__time_duration.sum"])])
with open(out / "ncu-texture-summary.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["kernel", "dram_read_bytes_per_output", "dram_write_bytes_per_output", "l1tex_hit_pct", "l2_hit_pct",
                "l1tex_busy_pct", "sm_busy_pct", "duration_ns"])
    w.writerows(table)
for r in table:
    print(f"{r[0]:<36} DRAM read {r[1]:5.2f} B/out  write {r[2]:5.2f}  L1/tex hit {r[3]:5.1f}%  "
          f"L2 hit {r[4]:5.1f}%  L1/tex busy {r[5]:5.1f}%  {r[7] / 1e3:8.1f} us")
PY
fi
