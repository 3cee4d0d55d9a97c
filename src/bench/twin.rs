//! CUDA C++ twins: the same algorithms as some Rust kernels, written in CUDA C++ (`cuda/*.cu`, embedded in the binary),
//! compiled at run time with `nvcc -O3 -ptx` for the present GPU when `nvcc` exists, and loaded next to the crate's
//! module. Suites time a Rust kernel and its twin on the same buffers and report the time ratio. Both reach the GPU as
//! PTX JIT-compiled by the same driver, so the ratio compares the two front ends' code, not two assemblers.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::{Gpu, PtxModule};

/// The 1D convolution twins.
pub const CONV1D_SOURCE: &str = include_str!("../../cuda/conv1d.cu");

/// The 2D convolution twins.
pub const CONV2D_SOURCE: &str = include_str!("../../cuda/conv2d.cu");

/// Environment variable naming the `nvcc` to use.
pub const NVCC_ENV: &str = "COALESCE_NVCC";

/// What became of a twin: loaded, or why not.
#[derive(Debug)]
pub struct Twin {
    /// The loaded module, when compilation and loading worked.
    pub module: Option<PtxModule>,
    /// How it was built, or why it is missing (for reports).
    pub status: TwinStatus,
}

/// A twin's provenance, as reports record it.
#[derive(Clone, Debug, Serialize)]
pub struct TwinStatus {
    /// The source file's name.
    pub source: String,
    /// `loaded`, `skipped` (no nvcc) or `failed`.
    pub state: &'static str,
    /// The nvcc used and its version line, or the reason it is missing.
    pub detail: String,
}

/// `nvcc`: `$COALESCE_NVCC`, `/usr/local/cuda/bin/nvcc`, or `PATH`.
pub fn find_nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(NVCC_ENV).map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let standard = Path::new("/usr/local/cuda/bin/nvcc");
    if standard.is_file() {
        return Some(standard.to_path_buf());
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
}

/// Compiles `source` (named `name` in reports) for `gpu` and loads it. Never fails: a missing `nvcc` or a compile error
/// becomes the twin's status, and the suite reports the Rust side alone.
pub fn build(gpu: &Gpu, name: &str, source: &str) -> Twin {
    let status = |state, detail: String| TwinStatus { source: name.into(), state, detail };
    let Some(nvcc) = find_nvcc() else {
        let why = format!("nvcc not found (set {NVCC_ENV}, or install the CUDA toolkit)");
        return Twin { module: None, status: status("skipped", why) };
    };
    match compile(gpu, &nvcc, name, source) {
        Ok((module, version)) => {
            let (waiting, all) = (module.dependent_kernels().len(), module.kernel_names().len());
            let detail =
                format!("{} ({version}); {waiting} of {all} kernels wait for the grid before them", nvcc.display());
            Twin { module: Some(module), status: status("loaded", detail) }
        }
        Err(e) => Twin { module: None, status: status("failed", e) },
    }
}

fn compile(gpu: &Gpu, nvcc: &Path, name: &str, source: &str) -> Result<(PtxModule, String), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let cu = dir.path().join(name);
    let ptx = dir.path().join("twin.ptx");
    std::fs::write(&cu, source).map_err(|e| format!("{}: {e}", cu.display()))?;
    let arch = format!("-arch=sm_{}", gpu.info().sm());
    let out = Command::new(nvcc)
        .args(["-O3", "-ptx", &arch, "-o"])
        .arg(&ptx)
        .arg(&cu)
        .output()
        .map_err(|e| format!("{}: {e}", nvcc.display()))?;
    if !out.status.success() {
        return Err(format!("nvcc {arch} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = std::fs::read_to_string(&ptx).map_err(|e| format!("{}: {e}", ptx.display()))?;
    let module = gpu.load_ptx(name, &text).map_err(|e| e.to_string())?;
    let version = Command::new(nvcc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().rfind(|l| l.contains("release")).map(str::to_owned))
        .unwrap_or_default();
    Ok((module, version.trim().to_owned()))
}
