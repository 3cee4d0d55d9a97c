//! What the compiler emitted for the 2D convolution kernels, checked
//! without a GPU (each embedded PTX assembled with `ptxas`, disassembled
//! with `cuobjdump`):
//!
//! * the tiled, fast, row and column kernels stage the tile in shared
//!   memory with `LDS`/`STS` (never generic `LD`/`ST`) behind `BAR.SYNC`;
//!   the fast kernels read it 128 bits at a time (`LDS.128`);
//! * the constant-mask kernels read the mask from their last parameter
//!   (constant bank 0, `c[0x0][…]` operands or `LDC`), never with `LDG`
//!   beyond the image loads: their global loads are exactly those of the
//!   basic kernel minus the mask's; the strip kernels read every tap at a
//!   fixed offset, and on sm_90 from uniform registers, with no
//!   convergence check (`BRA.DIV`) anywhere;
//! * no kernel has a stack frame, spills, or local-memory accesses.
//!
//! Tools as in `tests/sass.rs`; absent tools print one skip line unless
//! `COALESCE_REQUIRE_SASS_TOOLS=1`.

mod common;

use coalesce::inspect::Compiled;
use common::sass::compiled;

const TYPES: [&str; 2] = ["f32", "f64"];

fn kernels(algos: &[&str]) -> Vec<String> {
    algos.iter().flat_map(|a| TYPES.iter().map(move |t| format!("conv2d_{a}_{t}"))).collect()
}

fn ops(c: &Compiled, k: &str) -> Vec<String> {
    c.kernel(k)
        .unwrap_or_else(|| panic!("sm_{}: {k} is not in the module", c.arch))
        .iter()
        .map(|i| i.base().to_string())
        .collect()
}

#[test]
fn every_2d_kernel_is_in_the_module() {
    for c in compiled("every_2d_kernel_is_in_the_module") {
        for k in kernels(&["basic", "const", "tiled", "tiled_gm", "fast", "fast_gm", "rows", "cols"]) {
            assert!(c.kernel(&k).is_some_and(|s| !s.is_empty()), "sm_{}: {k} missing", c.arch);
        }
    }
}

#[test]
fn tiles_live_in_shared_memory_behind_a_barrier() {
    for c in compiled("tiles_live_in_shared_memory_behind_a_barrier") {
        for k in kernels(&["tiled", "tiled_gm", "fast", "fast_gm", "rows", "cols"]) {
            let o = ops(&c, &k);
            assert!(o.iter().any(|x| x == "LDS") && o.iter().any(|x| x == "STS"), "sm_{} {k}: no LDS/STS", c.arch);
            assert!(!o.iter().any(|x| x == "LD" || x == "ST"), "sm_{} {k}: generic LD/ST", c.arch);
            assert!(c.has(&k, "BAR.SYNC"), "sm_{} {k}: no barrier", c.arch);
        }
        // sm_70 spells it LDS.U.128.
        let lds128 =
            |k: &str| c.kernel(k).unwrap().iter().any(|i| i.base() == "LDS" && i.opcode.split('.').any(|m| m == "128"));
        for k in kernels(&["fast", "fast_gm", "rows", "cols"]) {
            assert!(lds128(&k), "sm_{} {k}: no 128-bit shared loads", c.arch);
        }
        for k in kernels(&["basic", "const"]) {
            assert!(!c.has(&k, "BAR"), "sm_{} {k}: an untiled kernel has a barrier", c.arch);
        }
    }
}

#[test]
fn constant_mask_kernels_read_the_mask_from_the_constant_bank() {
    for c in compiled("constant_mask_kernels_read_the_mask_from_the_constant_bank") {
        for t in TYPES {
            for (algo, k) in ["const", "tiled", "fast"]
                .into_iter()
                .flat_map(|a| [(a, format!("conv2d_{a}_{t}")), (a, format!("conv2d_{a}_short_{t}"))])
            {
                let taps = common::sass::last_param_reads(&c, &k);
                assert!(!taps.is_empty(), "sm_{} {k}: the mask is not read from its parameter", c.arch);
                // The shared-tile kernels load only the image from global
                // memory: their LDGs read the input, and none reads a tap.
                // The mask pointer is the sixth parameter; a kernel that
                // dereferenced it would load the pointer from the
                // parameter bank and then LDG through it. Compare with the
                // global-mask twin: it must have strictly more distinct
                // LDG sites per tap loop, and the constant one must have
                // no LDG whose address comes from the mask parameter.
                let gm = match algo {
                    "const" => format!("conv2d_basic_{t}"),
                    a => format!("conv2d_{a}_gm_{t}"),
                };
                let ldg = |name: &str| c.kernel(name).unwrap().iter().filter(|i| i.base() == "LDG").count();
                assert!(
                    ldg(&k) < ldg(&gm),
                    "sm_{} {k}: {} LDG vs {} in {gm}: the mask is not read from constant memory",
                    c.arch,
                    ldg(&k),
                    ldg(&gm)
                );
            }
        }
    }
}

/// The strip kernels, `(name, mask side, element type)`: 3 × 3, 5 × 5 and
/// 7 × 7 in both types, 9 × 9, 11 × 11 and 13 × 13 in `f32`, and the band
/// kernel (9 × 9 `f32`, the same loop in bands).
fn strip_kernels() -> impl Iterator<Item = (String, usize, &'static str)> {
    [3usize, 5, 7, 9, 11, 13]
        .into_iter()
        .flat_map(|n| TYPES.map(|t| (n, t)))
        .filter(|&(n, t)| n < 9 || t == "f32")
        .map(|(n, t)| (format!("conv2d_strip{n}_{t}"), n, t))
        .chain(std::iter::once(("conv2d_band9_f32".to_string(), 9, "f32")))
}

/// The strip kernels' unrolled rows (from 9 × 9 in `f32` only) read each of the `N · N` taps at its
/// own fixed offset of the mask parameter (a constant-bank operand, or a
/// uniform load with an immediate offset, `ULDC.64` reading two `f32`
/// taps); only their edge path, a plain loop over the taps, may index the
/// parameter through a register.
#[test]
fn strip_kernels_read_every_tap_at_a_fixed_offset() {
    for c in compiled("strip_kernels_read_every_tap_at_a_fixed_offset") {
        for (k, n, t) in strip_kernels() {
            let size = if t == "f32" { 4 } else { 8 };
            let fixed: std::collections::BTreeSet<u32> =
                common::sass::last_param_reads(&c, &k).iter().filter(|r| !r.register).map(|r| r.offset).collect();
            let first = fixed.first().copied().unwrap_or_else(|| panic!("sm_{} {k}: no tap at a fixed offset", c.arch));
            // A read covers up to 8 bytes (`ULDC.64` loads two f32 taps).
            let covered = |tap: u32| fixed.iter().any(|&f| f <= tap && tap < f + 8);
            let missing: Vec<u32> = (0..(n * n) as u32).map(|j| first + j * size).filter(|&t| !covered(t)).collect();
            assert!(
                missing.is_empty(),
                "sm_{} {k}: taps at {missing:?} not read at a fixed offset ({fixed:?})",
                c.arch
            );
        }
    }
}

/// The strip kernels on sm_90: no convergence check (`BRA.DIV`) anywhere,
/// and their multiply-adds take the taps from uniform registers. A panic
/// path in the boundary map (a call and an exit that, to `ptxas`, some
/// lanes may take) brings back both: `ptxas` can then not prove the warp
/// converged at the row loop's warp barriers and keeps the taps in
/// ordinary registers (5 × 5 `f32`: 128 registers per thread instead of 80,
/// two blocks per SM instead of three).
#[test]
fn strip_kernels_keep_their_taps_uniform() {
    for c in compiled("strip_kernels_keep_their_taps_uniform").into_iter().filter(|c| c.arch >= 90) {
        for (k, _, _) in strip_kernels() {
            let sass = c.kernel(&k).unwrap_or_else(|| panic!("sm_{}: {k} is not in the module", c.arch));
            let checks = sass.iter().filter(|i| i.opcode.starts_with("BRA.DIV")).count();
            assert_eq!(checks, 0, "sm_{} {k}: {checks} BRA.DIV (the warp not provably converged)", c.arch);
            let fma: Vec<_> = sass.iter().filter(|i| i.base() == "FFMA" || i.base() == "DFMA").collect();
            let uniform = fma.iter().filter(|i| i.operands.contains("UR")).count();
            assert!(
                !fma.is_empty() && uniform * 10 >= fma.len() * 9,
                "sm_{} {k}: {uniform} of {} multiply-adds take a tap from a uniform register",
                c.arch,
                fma.len()
            );
        }
    }
}

/// The register-blocked `u8` kernels (sm_80 and newer): bytes widen by
/// `I2F.U8` with a byte selector; rows arrive by `LDG` into registers, and
/// no shared memory is used; the row pass takes its neighbours' column
/// sums by `SHFL.UP` / `SHFL.DOWN`; the multiply-adds take their taps from
/// the taps parameter, as uniform registers (sm_90) or constant-bank
/// operands (sm_80); on sm_90 each pair of outputs is rounded, saturated
/// and packed by one `F2IP.U8`.
#[test]
fn register_blocked_u8_kernels() {
    for c in compiled("register_blocked_u8_kernels").into_iter().filter(|c| c.arch >= 80) {
        for k in ["conv2d_sepr1_u8_w3", "conv2d_sepr3_u8_w5", "conv2d_sepr4_u8_w5", "conv2d_sepr1_u8_w7"] {
            let sass = c.kernel(k).unwrap_or_else(|| panic!("sm_{}: {k} is not in the module", c.arch));
            let has = |op: &str| sass.iter().any(|i| i.opcode.starts_with(op));
            for op in ["I2F.U8", "LDG", "SHFL.UP", "SHFL.DOWN"] {
                assert!(has(op), "sm_{} {k}: no {op}", c.arch);
            }
            for op in ["LDS", "STS", "LDGSTS", "BAR"] {
                assert!(!has(op), "sm_{} {k}: {op} (the kernels use no shared memory)", c.arch);
            }
            if c.arch >= 90 {
                assert!(has("F2IP.U8"), "sm_{} {k}: no F2IP.U8", c.arch);
            }
            // The taps: a uniform register (sm_90) or the constant bank
            // (sm_80), never a register per thread.
            let fma: Vec<_> = sass.iter().filter(|i| i.base() == "FFMA").collect();
            let param = fma.iter().filter(|i| i.operands.contains("UR") || !i.bank0_reads().is_empty()).count();
            assert!(
                param * 2 > fma.len(),
                "sm_{} {k}: {param} of {} FFMA take a tap from the parameter",
                c.arch,
                fma.len()
            );
        }
    }
}

/// The box forms of the register-blocked kernels (sm_80 and newer): no
/// byte is widened by the conversion pipe (`I2F.U8`, `I2F.U16`; the task's
/// integer divisions keep their `I2F.U32.RP`): bytes become 16-bit
/// halves of words by `PRMT`, sums are integer (`IADD3`), and each output
/// is one `FFMA` on a `PRMT`-built value; rows arrive by `LDG`, neighbours'
/// sums by `SHFL.UP` / `SHFL.DOWN`, no shared memory; on sm_90 outputs are
/// rounded and packed two at a time by `F2IP.U8`.
#[test]
fn register_blocked_u8_box_kernels() {
    box_kernels(
        "register_blocked_u8_box_kernels",
        ["conv2d_sepb1_u8_w3", "conv2d_sepb3_u8_w5", "conv2d_sepb4_u8_w5", "conv2d_sepb1_u8_w7"],
        &["PRMT", "IADD3", "FFMA", "LDG", "SHFL.UP", "SHFL.DOWN"],
        &["I2F.U8", "I2F.U16", "I2F.S16", "LDS", "STS", "LDGSTS", "BAR"],
    );
}

/// The box rows kernels (sm_80 and newer): rows arrive by `LDGSTS` (the
/// 16 middle bytes and 8 either side) into shared memory that only the
/// copying thread reads (`LDS.128` for the middle, as much of the sides as
/// the sums reach; no barrier, no shuffle); bytes become
/// 16-bit halves of words by `PRMT`, sums are integer (`IADD3`), no byte
/// is widened by the conversion pipe, each output is one `FFMA`, and each
/// row leaves by one 16-byte store; on sm_90 `F2IP.U8` packs.
#[test]
fn box_rows_kernels() {
    box_kernels(
        "box_rows_kernels",
        ["conv2d_boxr1_u8_w3", "conv2d_boxr3_u8_w5", "conv2d_boxr4_u8_w5", "conv2d_boxr1_u8_w7"],
        &["LDGSTS.E.128", "LDGSTS.E.64", "LDS.128", "PRMT", "IADD3", "FFMA", "STG.E.128"],
        &["I2F.U8", "I2F.U16", "BAR", "SHFL", "LDG.E", "STS"],
    );
}

/// The `u8` box kernels `kernels` on sm_80 and newer: every opcode of
/// `with` present and none of `without` (prefixes), `F2IP.U8` on sm_90,
/// and one `FFMA` per output byte (no multiply-add per tap): no more
/// FFMAs than PRMTs.
fn box_kernels(test: &str, kernels: [&str; 4], with: &[&str], without: &[&str]) {
    for c in compiled(test).into_iter().filter(|c| c.arch >= 80) {
        for k in kernels {
            let sass = c.kernel(k).unwrap_or_else(|| panic!("sm_{}: {k} is not in the module", c.arch));
            let has = |op: &str| sass.iter().any(|i| i.opcode.starts_with(op));
            for op in with {
                assert!(has(op), "sm_{} {k}: no {op}", c.arch);
            }
            for op in without {
                assert!(!has(op), "sm_{} {k}: {op}", c.arch);
            }
            if c.arch >= 90 {
                assert!(has("F2IP.U8"), "sm_{} {k}: no F2IP.U8", c.arch);
            }
            let count = |op: &str| sass.iter().filter(|i| i.base() == op).count();
            assert!(
                count("FFMA") <= count("PRMT"),
                "sm_{} {k}: {} FFMA, {} PRMT",
                c.arch,
                count("FFMA"),
                count("PRMT")
            );
        }
    }
}

#[test]
fn no_stack_spills_or_local_memory() {
    for c in compiled("no_stack_spills_or_local_memory") {
        for r in c.resources.iter().filter(|r| r.name.starts_with("conv2d_")) {
            println!("sm_{} {:<24} {:>3} regs, {} bytes smem", c.arch, r.name, r.registers, r.shared_bytes);
            assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {}", c.arch, r.name);
            let o = ops(&c, &r.name);
            assert!(!o.iter().any(|x| x == "LDL" || x == "STL"), "sm_{} {}: local memory", c.arch, r.name);
        }
        assert!(c.resources.iter().filter(|r| r.name.starts_with("conv2d_")).count() >= 16, "sm_{}", c.arch);
    }
}
