//! The launch bounds the build writes into the PTX
//! (`coalesce_kernels::LAUNCH_BOUNDS`) hold in SASS: each listed kernel
//! fits `65536 / (T·B)` registers per thread on the architectures that
//! carry the bounds, with no stack frame, no spills and no local-memory
//! access (`LDL`/`STL`). Checked without a GPU (each embedded PTX
//! assembled with `ptxas`, disassembled with `cuobjdump`); absent tools
//! print one skip line unless `COALESCE_REQUIRE_SASS_TOOLS=1`.

use std::io::Write as _;

use coalesce::inspect::Tools;
use coalesce::{Error, ptx};
use coalesce_kernels::{LAUNCH_BOUNDS, LAUNCH_BOUNDS_MIN_SM};

#[test]
fn launch_bounds_hold_without_spills() {
    let skip = |why: String| {
        assert!(!Tools::required(), "COALESCE_REQUIRE_SASS_TOOLS is set but {why}");
        let _ = writeln!(std::io::stderr(), "launch_bounds_hold_without_spills: skipped: {why}");
    };
    let Some(tools) = Tools::find() else {
        return skip(
            "ptxas/cuobjdump not found (set COALESCE_SASS_TOOLS or run scripts/setup-build-machine.sh)".into(),
        );
    };
    let mut checked = 0;
    for arch in ptx::archs().into_iter().filter(|&a| a >= LAUNCH_BOUNDS_MIN_SM) {
        let c = match tools.compile(ptx::text(arch).expect("listed arch"), arch) {
            Ok(c) => c,
            Err(Error::ToolArch { message, .. }) => {
                skip(format!("this ptxas cannot assemble sm_{arch}: {message}"));
                continue;
            }
            Err(e) => panic!("sm_{arch}: {e}"),
        };
        for &(name, threads, blocks) in LAUNCH_BOUNDS {
            let r = c.resources_of(name).unwrap_or_else(|| panic!("sm_{arch}: no ptxas report for {name}"));
            let budget = 65536 / (threads * blocks);
            assert!(
                r.registers <= budget,
                "sm_{arch} {name}: {} registers, over the {budget} that ({threads}, {blocks}) allows",
                r.registers
            );
            assert_eq!(
                (r.stack_frame, r.spill_stores, r.spill_loads),
                (0, 0, 0),
                "sm_{arch} {name}: stack frame / spill stores / spill loads under ({threads}, {blocks})"
            );
            let sass = c.kernel(name).unwrap_or_else(|| panic!("sm_{arch}: {name} not in the SASS"));
            assert!(!sass.is_empty(), "sm_{arch}: {name} has no SASS");
            let local: Vec<_> = sass.iter().filter(|i| matches!(i.base(), "LDL" | "STL")).collect();
            assert!(local.is_empty(), "sm_{arch} {name}: local memory accesses {local:?}");
            checked += 1;
        }
    }
    let _ = writeln!(std::io::stderr(), "launch bounds checked for {checked} kernel builds");
}

/// The C++ twins (`cuda/conv1d.cu`, `cuda/conv2d.cu`) carry the same
/// bounds as the Rust kernels of the same name, and every twin has bounds
/// when its Rust kernel does.
#[test]
fn twins_carry_the_same_launch_bounds() {
    let mut twins = 0;
    // Embedded, so the test binary runs from any folder.
    for (file, src) in
        [("cuda/conv1d.cu", include_str!("../cuda/conv1d.cu")), ("cuda/conv2d.cu", include_str!("../cuda/conv2d.cu"))]
    {
        for (name, threads, blocks) in twin_bounds(src) {
            let want = LAUNCH_BOUNDS.iter().find(|b| b.0 == name).map(|b| (b.1, b.2));
            assert_eq!(want, Some((threads, blocks)), "{file}: {name} has ({threads}, {blocks})");
            twins += 1;
        }
    }
    assert_eq!(twins, 62, "twins with launch bounds (all but conv2d_tiled_f32 and conv2d_tiled_short_f32)");
}

/// `(name, T, B)` of each twin: `KERNEL_GM(name, algo, T, B)` and
/// `KERNEL_PARAM(name, algo, taps, T, B)` (both files),
/// `TENSOR2D_KERNEL(name, precise, steps, T, B)`, `STRIP_KERNEL(name, n,
/// taps, band, T, B)`, and
/// `LAUNCH_BOUNDS(T, B) name(` (the 2D file's other kernels).
fn twin_bounds(src: &str) -> Vec<(String, u32, u32)> {
    let num = |s: &str| s.trim().parse::<u32>().unwrap_or_else(|e| panic!("`{s}`: {e}"));
    let mut out = Vec::new();
    for line in src.lines().map(str::trim) {
        let macro_args = ["KERNEL_GM(conv", "KERNEL_PARAM(conv", "TENSOR2D_KERNEL(conv", "STRIP_KERNEL(conv"]
            .iter()
            .find_map(|m| line.strip_prefix(m));
        if let Some(args) = macro_args.and_then(|r| r.strip_suffix(')')) {
            let parts: Vec<&str> = args.split(", ").collect();
            let n = parts.len();
            assert!(n >= 4, "`{line}`");
            out.push((format!("conv{}", parts[0]), num(parts[n - 2]), num(parts[n - 1])));
        } else if let Some(rest) = line.split("LAUNCH_BOUNDS(").nth(1).filter(|_| line.contains("__global__")) {
            let (nums, tail) = rest.split_once(')').unwrap_or_else(|| panic!("`{line}`"));
            let (t, b) = nums.split_once(',').unwrap_or_else(|| panic!("`{line}`"));
            let name = tail.trim().split('(').next().unwrap_or("").trim();
            if name.starts_with("conv") {
                out.push((name.to_string(), num(t), num(b)));
            }
        }
    }
    out
}
