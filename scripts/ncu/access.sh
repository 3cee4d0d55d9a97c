#!/usr/bin/env bash
# Nsight Compute counters for the `access` suite: sectors per request of the
# loads and the stores of the offset and stride kernels, the quantity lesson
# 004 reasons with (a warp's 32 four-byte accesses need 4 sectors when they
# are contiguous and 32-byte aligned, 5 when misaligned, up to 32 when
# strided):
#
#   load sectors / requests   l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
#                             / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
#   store sectors / requests  the same with _op_st
#   DRAM bytes                dram__bytes_read.sum, dram__bytes_write.sum
#   duration                  gpu__time_duration.sum
#
# Usage: scripts/ncu/access.sh BUNDLE_DIR OUT_DIR
#
# One process per (side, offset) for offsets 0 1 16 32 and per (side,
# stride) for strides 1 2 4 8 16 32: `bench access --quick` on that single
# parameter (2^22 elements; override with ACCESS_NCU_ELEMS), no warm-up, one
# timed sample, and only the first launch of the kernel is profiled
# (--launch-count 1). Timings printed under ncu are not meaningful; the
# counters are. 20 short processes, about a minute in all.
#
# Writes OUT_DIR/ncu-access-<kernel>-<param>.csv (ncu's raw page), the
# bench's log beside it, and OUT_DIR/ncu-access-summary.csv (one row per
# kernel and parameter, with sectors per request) when python3 is available.
set -euo pipefail
bundle=${1:?usage: access.sh BUNDLE_DIR OUT_DIR}
out=${2:?usage: access.sh BUNDLE_DIR OUT_DIR}
ncu=${NCU:-/usr/local/cuda/bin/ncu}
elems=${ACCESS_NCU_ELEMS:-2^22}
mkdir -p "$out"
out=$(cd "$out" && pwd)
metrics=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
metrics+=,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,gpu__time_duration.sum

runs=()
for p in 0 1 16 32; do runs+=("offset $p"); done
for p in 1 2 4 8 16 32; do runs+=("stride $p"); done

for run in "${runs[@]}"; do
  set -- $run
  what=$1 param=$2
  for side in read write; do
    kernel=${side}_${what}
    echo "ncu: $kernel $param ($elems elements)"
    "$ncu" --kernel-name "regex:^${kernel}\$" --launch-count 1 --metrics "$metrics" \
      --csv --page raw --log-file "$out/ncu-access-$kernel-$param.csv" \
      "$bundle/bin/coalesce" bench access --quick --only "$what" --side "$side" --"${what}s" "$param" \
      --"${what}-elems" "$elems" --warmup 0 --reps 1 --out "$out/ncu-access-bench-$kernel-$param" \
      >"$out/ncu-access-$kernel-$param.log" 2>&1 ||
      echo "ncu: $kernel $param failed (see $out/ncu-access-$kernel-$param.log)" >&2
  done
done

if command -v python3 >/dev/null; then
  python3 - "$out" "${runs[@]}" <<'PY'
import csv, sys, pathlib
out, runs = pathlib.Path(sys.argv[1]), [r.split() for r in sys.argv[2:]]
cols = {
    "ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "st_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "st_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "dram_read": "dram__bytes_read.sum",
    "dram_write": "dram__bytes_write.sum",
    "duration": "gpu__time_duration.sum",
}
def ratio(a, b):
    try:
        return f"{float(a) / float(b):.2f}"
    except (ValueError, ZeroDivisionError):
        return ""
rows = []
for what, param in runs:
    for side in ("read", "write"):
        kernel = f"{side}_{what}"
        f = out / f"ncu-access-{kernel}-{param}.csv"
        lines = [l for l in f.read_text().splitlines() if l.startswith('"')] if f.exists() else []
        if len(lines) < 3:  # header, units, one kernel
            rows.append({"kernel": kernel, "param": param, "note": "no kernel profiled (failed)"})
            continue
        head, units, vals = (list(csv.reader([l]))[0] for l in lines[:3])
        row = {"kernel": kernel, "param": param}
        for k, m in cols.items():
            i = head.index(m) if m in head else None
            row[k] = vals[i].replace(",", "") if i is not None else ""
            row[k + "_unit"] = units[i] if i is not None else ""
        row["ld_sectors_per_request"] = ratio(row["ld_sectors"], row["ld_requests"])
        row["st_sectors_per_request"] = ratio(row["st_sectors"], row["st_requests"])
        rows.append(row)
keys = list(dict.fromkeys(["kernel", "param"] + [k for r in rows for k in r]))
with open(out / "ncu-access-summary.csv", "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=keys)
    w.writeheader()
    w.writerows(rows)
print("kernel          param  ld sectors/request  st sectors/request")
for r in rows:
    print(f"{r['kernel']:<15} {r['param']:>5}  {r.get('ld_sectors_per_request', ''):>18}  "
          f"{r.get('st_sectors_per_request', ''):>18}  {r.get('note', '')}")
print(f"wrote {out / 'ncu-access-summary.csv'}")
PY
fi
