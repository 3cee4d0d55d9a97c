//! Compiles `kernels-gpu` to PTX with rustc's NVPTX backend, once per
//! architecture, and embeds every PTX in the host library.
//!
//! * Architectures: `COALESCE_PTX_ARCHS` (comma-separated, e.g.
//!   `sm_70,sm_90`), default `sm_70,sm_80,sm_90`. At run time the host loads the
//!   highest one not above the device's compute capability.
//! * Each architecture is a child `cargo rustc --release --target
//!   nvptx64-nvidia-cuda -Zbuild-std=core --crate-type cdylib` with its own
//!   target directory and a clean environment: only what locates the
//!   toolchain and the registries is passed through, so the parent's
//!   RUSTFLAGS, wrappers and profile settings never reach the kernels.
//!   `RUSTC_BOOTSTRAP=1` (needed for `-Zbuild-std` and the `abi_ptx` /
//!   `asm_experimental_arch` features) is set for that child only.
//! * Unrolling: `-Cllvm-args=-unroll-max-count=4`. LLVM otherwise unrolls
//!   a loop whose trip count is known only at run time 8 times, with a
//!   one-at-a-time remainder loop: a convolution's tap loop of width 3, 5
//!   or 7 then runs entirely in the remainder, one dependent load at a
//!   time. nvcc unrolls such loops 4 times; so do the kernels here (fully
//!   unrolled loops of known length are not affected).
//! * Launch bounds: for sm ≥ `coalesce_kernels::LAUNCH_BOUNDS_MIN_SM`,
//!   every kernel listed in `coalesce_kernels::LAUNCH_BOUNDS` gets
//!   `.maxntid T, 1, 1` and `.minnctapersm B` between its parameter list
//!   and its body (rustc has no `__launch_bounds__`). A listed kernel
//!   missing from the PTX fails the build.
//! * Reruns only when the kernel sources, its manifest or the architecture
//!   list change.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const DEFAULT_ARCHS: &str = "sm_70,sm_80,sm_90";
const NVPTX: &str = "nvptx64-nvidia-cuda";

/// Environment variables the child cargo may inherit: the toolchain's
/// location and selection, the registries and their proxies, and nothing
/// that changes how code is compiled.
const PASS_THROUGH: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "TMPDIR",
    "LANG",
    "TERM",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTUP_AUTO_INSTALL",
    "CARGO_HOME",
    "CARGO_NET_OFFLINE",
    "CARGO_NET_RETRY",
    "CARGO_HTTP_TIMEOUT",
    "CARGO_HTTP_CAINFO",
    "CARGO_REGISTRIES_CRATES_IO_PROTOCOL",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
];

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("\nerror: coalesce-host could not build its GPU kernels\n\n{msg}\n");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let kernels = manifest_dir.parent().ok_or("host/ has no parent directory")?.join("kernels-gpu");
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);

    println!("cargo:rerun-if-changed={}", kernels.join("src").display());
    println!("cargo:rerun-if-changed={}", kernels.join("Cargo.toml").display());
    println!("cargo:rerun-if-env-changed=COALESCE_PTX_ARCHS");

    let archs = parse_archs(&env::var("COALESCE_PTX_ARCHS").unwrap_or_else(|_| DEFAULT_ARCHS.into()))?;
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    check_components(&rustc, &kernels)?;

    // The architectures build in parallel: each child has its own target dir.
    let results: Vec<Result<(u32, PathBuf), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = archs
            .iter()
            .map(|&sm| {
                let (kernels, out_dir, rustc) = (&kernels, &out_dir, &rustc);
                s.spawn(move || build_arch(sm, kernels, out_dir, rustc).map(|p| (sm, p)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("kernel build thread panicked".into()))).collect()
    });

    let mut table = String::from(
        "/// PTX of the kernel crate, one per architecture (`sm` number, text), ascending.\n\
         pub(crate) static EMBEDDED_PTX: &[(u32, &str)] = &[\n",
    );
    for r in results {
        let (sm, path) = r?;
        writeln!(table, "    ({sm}, include_str!({:?})),", path.display().to_string()).unwrap();
    }
    table.push_str("];\n");
    fs::write(out_dir.join("embedded_ptx.rs"), table).map_err(|e| e.to_string())?;
    Ok(())
}

/// `"sm_70, sm_90"` → `[70, 90]`, sorted and deduplicated.
fn parse_archs(list: &str) -> Result<Vec<u32>, String> {
    let mut archs = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let sm = item
            .strip_prefix("sm_")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|&n| (30..=200).contains(&n))
            .ok_or_else(|| {
                format!("COALESCE_PTX_ARCHS: `{item}` is not an architecture like `sm_90` (list: `{list}`)")
            })?;
        archs.push(sm);
    }
    archs.sort_unstable();
    archs.dedup();
    if archs.is_empty() {
        return Err(format!("COALESCE_PTX_ARCHS names no architecture (`{list}`)"));
    }
    Ok(archs)
}

/// The NVPTX build needs three rustup components; say exactly how to get
/// any that is missing instead of failing deep inside cargo.
fn check_components(rustc: &str, kernels: &Path) -> Result<(), String> {
    let output = Command::new(rustc)
        .args(["--print", "sysroot"])
        .current_dir(kernels)
        .output()
        .map_err(|e| format!("cannot run `{rustc} --print sysroot`: {e}"))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let host = env::var("HOST").unwrap_or_else(|_| "x86_64-unknown-linux-gnu".into());
    let bin = sysroot.join("lib/rustlib").join(&host).join("bin");
    // (component, places rustup has been seen to put it)
    let checks = [
        ("rust-src", vec![sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml")]),
        ("llvm-bitcode-linker", vec![bin.join("self-contained/llvm-bitcode-linker"), bin.join("llvm-bitcode-linker")]),
        ("llvm-tools", vec![bin.join("llc")]),
    ];
    let missing: Vec<&str> =
        checks.iter().filter(|(_, paths)| !paths.iter().any(|p| p.exists())).map(|(c, _)| *c).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let toolchain = env::var("RUSTUP_TOOLCHAIN").unwrap_or_else(|_| {
        sysroot.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "1.95.0".into())
    });
    Err(format!(
        "the Rust toolchain at {} lacks the component(s) {}.\n\
         Install them with:\n\n    rustup component add --toolchain {toolchain} {}\n\n\
         (or run scripts/setup-build-machine.sh, which installs everything the build needs)",
        sysroot.display(),
        missing.join(", "),
        missing.join(" "),
    ))
}

/// The PTX ISA feature an architecture's build asks for beyond LLVM's
/// default for it: sm_90 kernels use bulk copies on `mbarrier`s
/// (`cp.async.bulk`, `mbarrier.arrive.expect_tx`), which need PTX 8.0
/// (LLVM emits 7.8 for sm_90 by default).
fn ptx_isa(sm: u32) -> &'static str {
    if sm >= 90 { "\x1f-Ctarget-feature=+ptx80" } else { "" }
}

fn build_arch(sm: u32, kernels: &Path, out_dir: &Path, rustc: &str) -> Result<PathBuf, String> {
    let target_dir = out_dir.join(format!("kernels-sm_{sm}"));
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.env_clear();
    for key in PASS_THROUGH {
        if let Ok(v) = env::var(key) {
            cmd.env(key, v);
        }
    }
    cmd.current_dir(kernels)
        .args(["rustc", "--release", "--lib", "--crate-type", "cdylib", "--target", NVPTX])
        .arg("-Zbuild-std=core")
        .arg("--manifest-path")
        .arg(kernels.join("Cargo.toml"))
        .env("RUSTC", rustc)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target_dir)
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            format!("-Ctarget-cpu=sm_{sm}{}\x1f-Cllvm-args=-unroll-max-count=4", ptx_isa(sm)),
        )
        .env("CARGO_TERM_COLOR", "never")
        // Release profile of the child only, whatever the workspace says.
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "3")
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS", "false")
        .env("CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        .env("CARGO_PROFILE_RELEASE_INCREMENTAL", "false");
    let output = cmd.output().map_err(|e| format!("cannot run `{cargo}` for the sm_{sm} kernel build: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "the sm_{sm} kernel build failed ({}). Its output:\n\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let ptx = target_dir.join(NVPTX).join("release").join("coalesce_kernels.ptx");
    let text = fs::read_to_string(&ptx).map_err(|e| format!("the sm_{sm} build wrote no {}: {e}", ptx.display()))?;
    if !text.contains(&format!(".target sm_{sm}")) {
        return Err(format!("{} does not target sm_{sm}", ptx.display()));
    }
    let text = if sm >= coalesce_kernels::LAUNCH_BOUNDS_MIN_SM {
        add_launch_bounds(&text, coalesce_kernels::LAUNCH_BOUNDS).map_err(|e| format!("sm_{sm}: {e}"))?
    } else {
        text
    };
    let dest = out_dir.join(format!("coalesce_kernels.sm_{sm}.ptx"));
    fs::write(&dest, text).map_err(|e| e.to_string())?;
    Ok(dest)
}

/// `ptx` with `.maxntid T, 1, 1` and `.minnctapersm B` inserted between the
/// closing `)` of each listed entry's parameters and its opening `{`.
fn add_launch_bounds(ptx: &str, bounds: &[(&str, u32, u32)]) -> Result<String, String> {
    let mut text = ptx.to_string();
    for &(name, threads, blocks) in bounds {
        if threads == 0 || blocks == 0 {
            return Err(format!("launch bounds of {name}: ({threads}, {blocks}) must both be positive"));
        }
        let header = format!(".entry {name}(");
        let mut found = text.match_indices(&header).map(|(i, _)| i);
        let start = found.next().ok_or_else(|| format!("kernel {name} has launch bounds but is not in the PTX"))?;
        if found.next().is_some() {
            return Err(format!("kernel {name} appears twice in the PTX"));
        }
        let params = start + header.len();
        let close = text[params..].find(')').map(|i| params + i).ok_or_else(|| format!("{name}: no `)`"))?;
        let open = text[close..].find('{').map(|i| close + i).ok_or_else(|| format!("{name}: no `{{`"))?;
        // Only comments (rustc writes `// @name` after the `)`) may stand there.
        let between: Vec<&str> = text[close + 1..open]
            .lines()
            .map(|l| l.split("//").next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .collect();
        if !between.is_empty() {
            return Err(format!("kernel {name} already has directives before its body: `{}`", between.join(" ")));
        }
        text.insert_str(open, &format!(".maxntid {threads}, 1, 1\n.minnctapersm {blocks}\n"));
    }
    Ok(text)
}
