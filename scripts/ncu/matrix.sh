#!/usr/bin/env bash
# Nsight Compute counters for the `matrix` suite's block-shape sweep: the
# lesson's nvprof tables (002 §3.7-3.9) with today's metrics, per shape:
#
#   achieved occupancy     sm__warps_active.avg.pct_of_peak_sustained_active
#   global load throughput l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum.per_second
#   sectors per request    l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
#                          / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
#   load efficiency        smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct
#   DRAM throughput        dram__throughput.avg.pct_of_peak_sustained_elapsed
#   duration               gpu__time_duration.sum
#
# Usage: scripts/ncu/matrix.sh BUNDLE_DIR OUT_DIR
#
# To keep the run short (ncu replays each profiled kernel once per metric
# pass), each shape is one process on a 4096 x 4096 matrix (192 MiB moved
# per launch, past the 50 MiB L2; ncu flushes the caches before each pass),
# with no warm-up and one timed sample, and only the first launch of
# `sum_matrix_2d` is profiled (--launch-count 1). Timings printed under ncu
# are not meaningful; the counters are. Override the side with MATRIX_NCU_N
# (16384 is the suite's default size). (256, 8) is run too: the bench
# refuses it before any launch, so ncu profiles nothing for it.
#
# Writes OUT_DIR/ncu-matrix-<X>x<Y>.csv (ncu's raw page), the bench's log
# beside it, and OUT_DIR/ncu-matrix-summary.csv (one row per shape) when
# python3 is available.
set -euo pipefail
bundle=${1:?usage: matrix.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: matrix.sh BUNDLE_DIR OUT_DIR}
ncu=${NCU:-/usr/local/cuda/bin/ncu}
n=${MATRIX_NCU_N:-4096}
mkdir -p "$out"
out=$(cd "$out" && pwd)
metrics=sm__warps_active.avg.pct_of_peak_sustained_active
metrics+=,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum.per_second
metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
metrics+=,smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,gpu__time_duration.sum

shapes="32x32 32x16 16x32 16x16 64x2 64x4 64x8 128x1 128x2 128x4 128x8 256x1 256x2 256x4 256x8"
for s in $shapes; do
  echo "ncu: sum_matrix_2d block $s on ${n}x${n}"
  "$ncu" --kernel-name 'regex:^sum_matrix_2d$' --launch-count 1 --metrics "$metrics" \
    --csv --page raw --log-file "$out/ncu-matrix-$s.csv" \
    "$bundle/bin/coalesce" bench matrix --only sweep --sweep-n "$n" --shape "$s" --variant x1 \
    --warmup 0 --reps 1 --out "$out/ncu-matrix-bench-$s" >"$out/ncu-matrix-$s.log" 2>&1 ||
    echo "ncu: block $s failed (see $out/ncu-matrix-$s.log)" >&2
done

if command -v python3 >/dev/null; then
  python3 - "$out" $shapes <<'PY'
import csv, sys, pathlib
out, shapes = pathlib.Path(sys.argv[1]), sys.argv[2:]
cols = {
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "gld_throughput": "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum.per_second",
    "ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "gld_efficiency_pct": "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "dram_throughput_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "duration": "gpu__time_duration.sum",
}
rows = []
for s in shapes:
    f = out / f"ncu-matrix-{s}.csv"
    lines = [l for l in f.read_text().splitlines() if l.startswith('"')] if f.exists() else []
    if len(lines) < 3:  # header, units, one kernel
        rows.append({"block": s, "note": "no kernel profiled (refused or failed)"})
        continue
    head, units, vals = list(csv.reader([lines[0]]))[0], list(csv.reader([lines[1]]))[0], list(csv.reader([lines[2]]))[0]
    get = lambda m: (vals[head.index(m)], units[head.index(m)]) if m in head else ("", "")
    row = {"block": s}
    for k, m in cols.items():
        v, u = get(m)
        row[k] = v.replace(",", "")
        row[k + "_unit"] = u
    try:
        row["sectors_per_request"] = f"{float(row['ld_sectors']) / float(row['ld_requests']):.2f}"
    except (ValueError, ZeroDivisionError):
        row["sectors_per_request"] = ""
    rows.append(row)
keys = ["block"] + [k for r in rows for k in r if k != "block"]
keys = list(dict.fromkeys(keys))
with open(out / "ncu-matrix-summary.csv", "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=keys)
    w.writeheader()
    w.writerows(rows)
for r in rows:
    print(r.get("block"), r.get("achieved_occupancy_pct", ""), r.get("gld_throughput", ""), r.get("gld_throughput_unit", ""),
          r.get("sectors_per_request", ""), r.get("note", ""))
print(f"wrote {out / 'ncu-matrix-summary.csv'}")
PY
fi
