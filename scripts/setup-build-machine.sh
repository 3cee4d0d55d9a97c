#!/usr/bin/env bash
# Prepares a machine WITHOUT an NVIDIA GPU to build and test coalesce.
#
# Idempotent and fast when already done. Installs nothing system-wide:
#   .tools/cuda/lib64/   libcuda.so{,.1} from Debian 12's non-free `libcuda1`
#                        (cust's build script links -lcuda and every binary
#                        loads libcuda.so.1; with no GPU, cuInit reports
#                        "no device" and the GPU tests skip themselves)
#   .tools/sass/bin/     ptxas from NVIDIA's PyPI wheel (CUDA 12.9: still
#                        assembles sm_70 and sm_90), and cuobjdump +
#                        nvdisasm from Debian 12's non-free CUDA 11.8
#                        toolkit (NVIDIA's PyPI nvdisasm starts at 13.2,
#                        which refuses to disassemble sm_70), for the SASS
#                        checks
#   toolchain            the components rust-toolchain.toml names
#
# How cargo finds them: .cargo/config.toml sets CUDA_LIBRARY_PATH=.tools/cuda
# for cust's build script and runs test/example binaries through
# scripts/with-libcuda, which puts .tools/cuda/lib64 on LD_LIBRARY_PATH only
# when the system has no libcuda.so.1 of its own. The SASS tests look for
# the tools in $COALESCE_SASS_TOOLS, then .tools/sass/bin, then PATH.
#
# On a machine with a real NVIDIA driver this script does not fetch libcuda:
# the system's own driver library must win there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
mkdir -p "$tools"

LIBCUDA_VERSION=535.261.03-1
TOOLKIT_VERSION=11.8.89~11.8.0-5~deb12u1
NVCC_WHEEL=nvidia-cuda-nvcc-cu12==12.9.86

say() { printf 'setup: %s\n' "$*"; }

# 1. Rust toolchain and components (rust-toolchain.toml pins them).
if ! (cd "$root" && rustup component list --installed 2>/dev/null | grep -q '^llvm-bitcode-linker'); then
  say "installing the pinned toolchain and its components"
  (cd "$root" && rustup toolchain install)
fi

# Debian 12 non-free packages, fetched with a private apt configuration
# (nothing is installed; the system's sources are left alone).
apt_dir="$tools/apt"
apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
          -o "APT::Sandbox::User=root" -qq)
apt_ready=
fetch_deb() { # package version -> path of the downloaded .deb
  if [ -z "$apt_ready" ]; then
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources" "$apt_dir/debs"
    cat > "$apt_dir/sources/nonfree.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get "${apt_opts[@]}" update
    apt_ready=1
  fi
  (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download "$1=$2")
  ls "$apt_dir/debs/$1"_*.deb
}

# 2. libcuda for linking and loading (only where no real driver exists).
has_system_libcuda() {
  ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' || [ -e /proc/driver/nvidia/version ]
}
lib64="$tools/cuda/lib64"
if has_system_libcuda; then
  say "system libcuda.so.1 found: using the real driver, not fetching Debian's"
elif [ -e "$lib64/libcuda.so.1" ]; then
  say "libcuda already in .tools/cuda"
else
  say "fetching Debian 12 non-free libcuda1 $LIBCUDA_VERSION into .tools/cuda"
  deb=$(fetch_deb libcuda1 "$LIBCUDA_VERSION")
  rm -rf "$tools/cuda" && mkdir -p "$tools/cuda/extract" "$lib64"
  dpkg -x "$deb" "$tools/cuda/extract"
  so=$(find "$tools/cuda/extract" -name 'libcuda.so.*.*' -type f | head -n 1)
  [ -n "$so" ] || { say "libcuda.so not found inside the package"; exit 1; }
  cp "$so" "$lib64/"
  ln -sf "$(basename "$so")" "$lib64/libcuda.so.1"
  ln -sf libcuda.so.1 "$lib64/libcuda.so"
  rm -rf "$tools/cuda/extract" "$deb"
fi

# 3. SASS tools.
sass="$tools/sass/bin"
mkdir -p "$sass"
if [ -x "$sass/ptxas" ]; then
  say "ptxas already in .tools/sass"
else
  say "fetching the ptxas wheel ($NVCC_WHEEL) into .tools/sass"
  wheels="$tools/wheels"
  mkdir -p "$wheels"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2010_x86_64 -d "$wheels" "$NVCC_WHEEL"
  python3 - "$wheels" "$sass" <<'PY'
import sys, zipfile, pathlib, shutil
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for whl in src.glob("*.whl"):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            if name.endswith("/bin/ptxas"):
                with z.open(name) as f, open(dst / "ptxas", "wb") as out:
                    shutil.copyfileobj(f, out)
PY
  chmod 0755 "$sass/ptxas"
  rm -rf "$wheels"
fi
if [ -x "$sass/cuobjdump" ] && [ -x "$sass/nvdisasm" ]; then
  say "cuobjdump and nvdisasm already in .tools/sass"
else
  say "fetching cuobjdump and nvdisasm (Debian nvidia-cuda-toolkit $TOOLKIT_VERSION) into .tools/sass"
  deb=$(fetch_deb nvidia-cuda-toolkit "$TOOLKIT_VERSION")
  extract="$tools/toolkit-extract"
  rm -rf "$extract" && mkdir -p "$extract"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$extract" ./usr/bin/cuobjdump ./usr/bin/nvdisasm
  install -m 0755 "$extract/usr/bin/cuobjdump" "$extract/usr/bin/nvdisasm" "$sass/"
  rm -rf "$extract" "$deb"
fi
say "ready ($(cd "$root" && rustc --version))"
