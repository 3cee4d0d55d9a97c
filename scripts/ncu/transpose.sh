#!/usr/bin/env bash
# Nsight Compute counters for the `transpose` suite: shared-memory bank
# conflicts per kernel, next to the shared-memory instructions and wavefronts
# that show them, and the global stores that show the naive kernel's strided
# writes:
#
#   bank conflicts, shared loads    l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
#   bank conflicts, shared stores   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
#   shared load / store wavefronts  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum, ..._op_st.sum
#   shared load / store instrs      smsp__sass_inst_executed_op_shared_ld.sum, ..._st.sum
#   global store sectors, requests  l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum, l1tex__t_requests_...
#   DRAM throughput, duration       dram__throughput.avg.pct_of_peak_sustained_elapsed, gpu__time_duration.sum
#
# The lesson's model: a warp's column read of the 32 x 32 tile hits one bank
# 32 times, so the tiled kernel's shared-load wavefronts are ~32 per load
# instruction and its load conflicts ~31 per instruction; the padded tile's
# are ~1 and ~0. Stores into either tile are row-wise: ~1 wavefront each.
#
# Usage: scripts/ncu/transpose.sh BUNDLE_DIR OUT_DIR
#
# Short: one process per kernel on one 4096 x 4096 matrix (64 MiB, past the
# 50 MiB L2), the classic 32 x 8 block, no size sweep, no copy references,
# no warm-up, one timed sample; only the kernel's first launch is profiled
# (--launch-count 1). Override the side with TRANSPOSE_NCU_N and the block
# height with TRANSPOSE_NCU_ROWS. Timings printed under ncu are not
# meaningful; the counters are.
#
# Writes OUT_DIR/ncu-transpose-<variant>.csv (ncu's raw page), the bench's
# log beside it, and OUT_DIR/ncu-transpose-summary.csv (one row per kernel,
# with wavefronts and conflicts per shared instruction) when python3 is
# available.
set -euo pipefail
bundle=${1:?usage: transpose.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: transpose.sh BUNDLE_DIR OUT_DIR}
ncu=${NCU:-/usr/local/cuda/bin/ncu}
n=${TRANSPOSE_NCU_N:-4096}
rows=${TRANSPOSE_NCU_ROWS:-8}
mkdir -p "$out"
out=$(cd "$out" && pwd)
metrics=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
metrics+=,smsp__sass_inst_executed_op_shared_ld.sum
metrics+=,smsp__sass_inst_executed_op_shared_st.sum
metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,gpu__time_duration.sum

variants="naive tiled padded"
for v in $variants; do
  echo "ncu: transpose_${v}_r${rows} on ${n}x${n}"
  "$ncu" --kernel-name "regex:^transpose_${v}_r${rows}\$" --launch-count 1 --metrics "$metrics" \
    --csv --page raw --log-file "$out/ncu-transpose-$v.csv" \
    "$bundle/bin/coalesce" bench transpose --shape "${n}x${n}" --block-rows "$rows" --variants "$v" \
    --no-sweep --no-reference --warmup 0 --reps 1 --out "$out/ncu-transpose-bench-$v" \
    >"$out/ncu-transpose-$v.log" 2>&1 ||
    echo "ncu: $v failed (see $out/ncu-transpose-$v.log)" >&2
done

if command -v python3 >/dev/null; then
  python3 - "$out" "$rows" $variants <<'PY'
import csv, sys, pathlib
out, rows, variants = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
cols = {
    "ld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "st_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "ld_instructions": "smsp__sass_inst_executed_op_shared_ld.sum",
    "st_instructions": "smsp__sass_inst_executed_op_shared_st.sum",
    "gst_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "gst_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "dram_throughput_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "duration": "gpu__time_duration.sum",
}
def num(v):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None
def per(a, b):
    a, b = num(a), num(b)
    return f"{a / b:.2f}" if a is not None and b else ""
table = []
for v in variants:
    kernel = f"transpose_{v}_r{rows}"
    f = out / f"ncu-transpose-{v}.csv"
    lines = [l for l in f.read_text().splitlines() if l.startswith('"')] if f.exists() else []
    if len(lines) < 3:  # header, units, one kernel
        table.append({"kernel": kernel, "note": "no kernel profiled (see the log)"})
        continue
    head, units, vals = (list(csv.reader([l]))[0] for l in lines[:3])
    row = {"kernel": kernel}
    for k, m in cols.items():
        i = head.index(m) if m in head else None
        row[k] = vals[i].replace(",", "") if i is not None else ""
        row[k + "_unit"] = units[i] if i is not None else ""
    row["ld_wavefronts_per_instruction"] = per(row["ld_wavefronts"], row["ld_instructions"])
    row["ld_conflicts_per_instruction"] = per(row["ld_conflicts"], row["ld_instructions"])
    row["st_wavefronts_per_instruction"] = per(row["st_wavefronts"], row["st_instructions"])
    row["gst_sectors_per_request"] = per(row["gst_sectors"], row["gst_requests"])
    table.append(row)
keys = list(dict.fromkeys(k for r in table for k in r))
with open(out / "ncu-transpose-summary.csv", "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=keys)
    w.writeheader()
    w.writerows(table)
print("kernel ld_conflicts st_conflicts ld_wavefronts/instr st_wavefronts/instr gst_sectors/request duration")
for r in table:
    print(r["kernel"], r.get("ld_conflicts", ""), r.get("st_conflicts", ""), r.get("ld_wavefronts_per_instruction", ""),
          r.get("st_wavefronts_per_instruction", ""), r.get("gst_sectors_per_request", ""), r.get("duration", ""),
          r.get("duration_unit", ""), r.get("note", ""))
print(f"wrote {out / 'ncu-transpose-summary.csv'}")
PY
fi
