#!/usr/bin/env bash
# Builds everything a GPU box without Rust needs into one folder:
#
#   bundle/
#     bundle.tar.xz     everything below, compressed (the binaries embed
#                       their PTX as text, the same in every binary:
#                       stored once, about 130:1)
#     run.sh            unpacks it into bundle/unpacked/ (once per new
#                       archive) and runs unpacked/run.sh with its arguments
#   bundle/unpacked/ (after the first run.sh)
#     run.sh            the runner (see scripts/gpu-runner.sh)
#     bin/coalesce      the benchmark / inspection binary
#     tests/<name>      release test binaries (one per tests/*.rs, plus the
#                       library unit tests as lib-<crate>)
#     examples/<name>   release examples
#     ncu/<suite>.sh    Nsight Compute scripts
#
# Every binary embeds its PTX, so the folder is self-contained; binaries are
# stripped. Usage: scripts/bundle.sh [OUT_DIR]   (default: bundle)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bundle}
cd "$root"

bash scripts/setup-build-machine.sh >/dev/null

json=$(mktemp)
trap 'rm -f "$json"' EXIT
echo "bundle: building release tests, examples and the coalesce binary"
cargo build --release --workspace --bins --examples --message-format=json-render-diagnostics >"$json"
cargo test --release --workspace --no-run --message-format=json-render-diagnostics >>"$json"

final=$out
out=$(mktemp -d)
trap 'rm -f "$json"; rm -rf "$out"' EXIT
mkdir -p "$out/bin" "$out/tests" "$out/examples"
python3 - "$json" "$out" <<'PY'
import json, shutil, sys, pathlib
log, out = sys.argv[1], pathlib.Path(sys.argv[2])
seen = set()
for line in open(log):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    exe, t = m["executable"], m["target"]
    kind = t["kind"][0]
    if m["profile"]["test"]:
        name = t["name"] if kind == "test" else f"lib-{t['name']}" if kind == "lib" else f"{kind}-{t['name']}"
        dest = out / "tests" / name
    elif kind == "example":
        dest = out / "examples" / t["name"]
    elif kind == "bin":
        dest = out / "bin" / t["name"]
    else:
        continue
    if dest in seen:
        continue
    seen.add(dest)
    shutil.copy2(exe, dest)
PY
# Release profile strips; strip again in case a profile override did not.
find "$out" -type f -perm -u+x -exec strip --strip-unneeded {} + 2>/dev/null || true
cp scripts/gpu-runner.sh "$out/run.sh"
mkdir -p "$out/ncu"
cp scripts/ncu/*.sh "$out/ncu/"
chmod +x "$out/run.sh"
rm -rf "$final"
mkdir -p "$final"
# One thread and a dictionary larger than a binary: every binary embeds the
# same PTX text, and a window that spans two binaries stores it once (about
# 8 MiB instead of 60; several minutes on two cores).
tar -C "$out" -cf - . | xz -T1 --lzma2=preset=6,dict=192MiB >"$final/bundle.tar.xz"
cat >"$final/run.sh" <<'SH'
#!/usr/bin/env bash
# Unpacks bundle.tar.xz into unpacked/ (when new) and runs its runner.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$here/unpacked/.stamp" ] || [ "$here/bundle.tar.xz" -nt "$here/unpacked/.stamp" ]; then
  rm -rf "$here/unpacked"
  mkdir -p "$here/unpacked"
  tar -C "$here/unpacked" -xJf "$here/bundle.tar.xz"
  touch "$here/unpacked/.stamp"
fi
exec "$here/unpacked/run.sh" "$@"
SH
chmod +x "$final/run.sh"
size=$(du -sm "$final" | cut -f1)
echo "bundle: $final/bundle.tar.xz ($size MiB; $(du -sm "$out" | cut -f1) MiB unpacked)"
ls "$out"/tests "$out"/examples "$out"/bin | sed 's/^/  /'
if [ "$size" -gt 60 ]; then
  echo "bundle: larger than 60 MiB" >&2
  exit 1
fi
