//! What the compiler really emitted, checked without a GPU: each embedded
//! PTX is assembled with `ptxas` (sm_70, sm_80 and sm_90 by default) and
//! disassembled with `cuobjdump -sass`.
//!
//! * copy_scalar moves only 32-bit words; copy_vec2 has 64-bit and copy_vec4
//!   128-bit global loads and stores (and never anything narrower than 32
//!   bits), so rewriting copy_vec4 to move words fails here;
//! * every kernel has a 0-byte stack frame and no spills;
//! * shared memory is accessed with LDS/STS (not generic LD/ST) behind a
//!   BAR.SYNC; shuffles are SHFL.DOWN / SHFL.BFLY; constant memory is read
//!   through the constant bank, never with LDG;
//! * the batched rows kernels copy tiles ahead by `cp.async` from sm_80,
//!   and the `f32` ones by bulk copies on barrier objects on sm_90.
//!
//! Tools: `$COALESCE_SASS_TOOLS`, `.tools/sass/bin`, `/usr/local/cuda/bin`
//! or `PATH`. If absent the tests print one skip line, unless
//! `COALESCE_REQUIRE_SASS_TOOLS=1` (CI), which makes absence a failure.

use coalesce::conv::{FAST_FIXED_MAX, FAST_OUTPUTS, SHORT_MASK_KERNELS};
use coalesce::inspect::{Access, Compiled};

mod common;

use common::sass::compiled;

/// The global access widths a copy kernel must show: `must` present, and
/// nothing outside `allowed`.
fn check_widths(c: &Compiled, kernel: &str, must: &[(Access, u32)], allowed: &[u32]) -> Result<(), String> {
    let got = c.global_widths(kernel);
    if got.is_empty() {
        return Err(format!("sm_{}: {kernel} has no global accesses (is it in the module?)", c.arch));
    }
    for m in must {
        if !got.contains(m) {
            return Err(format!("sm_{}: {kernel} lacks a {}-bit global {:?}; has {got:?}", c.arch, m.1, m.0));
        }
    }
    if let Some(bad) = got.iter().find(|(_, bits)| !allowed.contains(bits)) {
        return Err(format!("sm_{}: {kernel} has a {}-bit global {:?}; has {got:?}", c.arch, bad.1, bad.0));
    }
    Ok(())
}

const L: Access = Access::Load;
const S: Access = Access::Store;

/// Both families: the tuned kernels and the lesson's `_x1` kernels.
fn copy_expectations(c: &Compiled) -> Result<(), String> {
    for suffix in ["", "_x1"] {
        check_widths(c, &format!("copy_scalar{suffix}"), &[(L, 32), (S, 32)], &[32])?;
        check_widths(c, &format!("copy_vec2{suffix}"), &[(L, 64), (S, 64)], &[32, 64])?;
        check_widths(c, &format!("copy_vec4{suffix}"), &[(L, 128), (S, 128)], &[32, 128])?;
    }
    check_widths(c, "copy_bytes", &[(L, 8), (S, 8)], &[8])
}

/// The tuned kernels keep `ITEMS` loads in flight: the unrolled tile has at
/// least `ITEMS` vector loads before its first vector store.
#[test]
fn tuned_copy_issues_its_loads_before_its_stores() {
    let items = coalesce::kernels::copy::ITEMS;
    for c in compiled("tuned_copy_issues_its_loads_before_its_stores") {
        let sass = c.kernel("copy_vec4").unwrap();
        let wide = |i: &coalesce::inspect::Instr, a| i.global_access() == Some((a, 128));
        let first_store = sass.iter().position(|i| wide(i, S)).unwrap();
        let loads_before = sass[..first_store].iter().filter(|i| wide(i, L)).count();
        assert!(loads_before >= items, "sm_{}: {loads_before} 128-bit loads before the first store", c.arch);
    }
}

#[test]
fn copy_kernels_use_the_lesson_widths() {
    for c in compiled("copy_kernels_use_the_lesson_widths") {
        copy_expectations(&c).unwrap();
        for k in ["copy_scalar", "copy_vec2", "copy_vec4", "copy_scalar_x1", "copy_vec2_x1", "copy_vec4_x1"] {
            println!("sm_{} {k}: {:?}", c.arch, c.global_widths(k));
        }
    }
}

/// The check above is not vacuous: a module whose copy_vec4 moves 32-bit
/// words (here: copy_scalar's SASS under copy_vec4's name) fails it.
#[test]
fn width_check_fails_for_a_word_copy_named_copy_vec4() {
    for mut c in compiled("width_check_fails_for_a_word_copy_named_copy_vec4") {
        let scalar = c.sass["copy_scalar"].clone();
        c.sass.insert("copy_vec4".into(), scalar);
        let err = copy_expectations(&c).unwrap_err();
        assert!(err.contains("copy_vec4 lacks a 128-bit global"), "{err}");
    }
}

#[test]
fn no_kernel_has_a_stack_frame_or_spills() {
    for c in compiled("no_kernel_has_a_stack_frame_or_spills") {
        println!("{}\n", c.resource_table());
        assert!(c.resources.len() >= 12, "sm_{}: ptxas reported {} kernels", c.arch, c.resources.len());
        // The local-memory lesson's kernel keeps its array in a stack frame
        // on purpose; tests/sass_alignment.rs asserts that it does.
        for r in c.resources.iter().filter(|r| r.name != "local_histogram_dynamic") {
            assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {}", c.arch, r.name);
        }
    }
}

#[test]
fn shared_memory_uses_lds_sts_behind_a_barrier() {
    for c in compiled("shared_memory_uses_lds_sts_behind_a_barrier") {
        for k in ["probe_shared_reverse", "probe_dynamic_reverse"] {
            let sass = c.kernel(k).unwrap();
            let ops: Vec<&str> = sass.iter().map(|i| i.base()).collect();
            assert!(ops.contains(&"LDS") && ops.contains(&"STS"), "sm_{} {k}: {ops:?}", c.arch);
            assert!(!ops.contains(&"LD") && !ops.contains(&"ST"), "sm_{} {k} uses generic LD/ST", c.arch);
            assert!(c.has(k, "BAR.SYNC"), "sm_{} {k}: no barrier", c.arch);
        }
        assert_eq!(c.resources_of("probe_shared_reverse").unwrap().shared_bytes, 1024);
    }
}

#[test]
fn warp_shuffles_are_down_and_butterfly() {
    for c in compiled("warp_shuffles_are_down_and_butterfly") {
        assert!(c.has("probe_warp_sum", "SHFL.DOWN"), "sm_{}", c.arch);
        assert!(c.has("probe_warp_sum", "SHFL.BFLY"), "sm_{}", c.arch);
    }
}

#[test]
fn constant_memory_is_read_through_the_constant_bank() {
    for c in compiled("constant_memory_is_read_through_the_constant_bank") {
        let sass = c.kernel("probe_const").unwrap();
        assert!(!sass.iter().any(|i| i.base() == "LDG"), "sm_{}: probe_const loads from global memory", c.arch);
        // User constant arrays live in bank 3 (`c[0x3][...]`) on these targets.
        assert!(sass.iter().any(|i| i.operands.contains("c[0x3]")), "sm_{}: no constant-bank-3 operand", c.arch);
    }
}

#[test]
fn indices_read_the_special_registers() {
    for c in compiled("indices_read_the_special_registers") {
        let sass = c.kernel("probe_index").unwrap();
        for reg in ["SR_TID.X", "SR_TID.Y", "SR_TID.Z", "SR_CTAID.X", "SR_CTAID.Y", "SR_CTAID.Z"] {
            let read = sass.iter().any(|i| matches!(i.base(), "S2R" | "S2UR") && i.operands.contains(reg));
            assert!(read, "sm_{}: probe_index never reads {reg}", c.arch);
        }
    }
}

/// The convolution kernels: tiled ones stage their inputs in shared memory
/// behind a barrier; the fast one reads it 128 bits at a time; the
/// constant-memory ones read the mask from their last parameter (constant
/// bank 0), so they issue fewer global loads than the basic kernel, which
/// loads the mask with LDG.
#[test]
fn convolution_kernels_use_shared_and_constant_memory() {
    for c in compiled("convolution_kernels_use_shared_and_constant_memory") {
        for ty in ["f32", "f64"] {
            for k in ["tiled", "tiled_gm", "tiled_l2", "tiled_l2_gm", "fast", "fast_gm"] {
                let k = format!("conv1d_{k}_{ty}");
                let sass = c.kernel(&k).unwrap_or_else(|| panic!("sm_{}: {k} missing", c.arch));
                let ops: Vec<&str> = sass.iter().map(|i| i.base()).collect();
                assert!(ops.contains(&"LDS") && ops.contains(&"STS"), "sm_{} {k}: {ops:?}", c.arch);
                assert!(!ops.contains(&"LD") && !ops.contains(&"ST"), "sm_{} {k} uses generic LD/ST", c.arch);
                assert!(c.has(&k, "BAR.SYNC"), "sm_{} {k}: no barrier", c.arch);
            }
            let fixed = (1..=FAST_FIXED_MAX / FAST_OUTPUTS).map(|ch| format!("conv1d_fast{ch}_{ty}"));
            for k in [format!("conv1d_fast_{ty}"), format!("conv1d_fast_gm_{ty}")].into_iter().chain(fixed) {
                let sass = c.kernel(&k).unwrap_or_else(|| panic!("sm_{}: {k} missing", c.arch));
                let wide = sass.iter().any(|i| i.base() == "LDS" && i.opcode.ends_with(".128"));
                assert!(wide, "sm_{} {k}: no 128-bit shared loads", c.arch);
                assert!(c.has(&k, "BAR.SYNC"), "sm_{} {k}: no barrier", c.arch);
                // From sm_80 the tiles copied ahead arrive by cp.async into
                // the shared ring (copies, groups, waits); before, through
                // registers.
                let ring = ["LDGSTS", "LDGDEPBAR", "DEPBAR"].map(|op| sass.iter().any(|i| i.base() == op));
                if c.arch >= 80 {
                    assert_eq!(ring, [true; 3], "sm_{} {k}: LDGSTS, LDGDEPBAR, DEPBAR present", c.arch);
                } else {
                    assert!(!ring[0], "sm_{} {k}: asynchronous copies below sm_80", c.arch);
                }
            }
            // The compile-time fast kernels read their taps at fixed
            // offsets of their mask parameter only: no tap load through an
            // address register (`c[0x0][R7+0x240]`, `c[0x0][UR4+0x248]`).
            for ch in 1..=FAST_FIXED_MAX / FAST_OUTPUTS {
                let k = format!("conv1d_fast{ch}_{ty}");
                let taps = common::sass::last_param_reads(&c, &k);
                assert!(!taps.is_empty(), "sm_{} {k}: the mask is not read from its parameter", c.arch);
                assert!(taps.iter().all(|r| !r.register), "sm_{} {k}: a tap read through a register: {taps:?}", c.arch);
            }
            let ldg = |k: &str| c.kernel(k).unwrap().iter().filter(|i| i.base() == "LDG").count();
            let param_mask = |k: &str| !common::sass::last_param_reads(&c, k).is_empty();
            let shorts =
                SHORT_MASK_KERNELS.iter().filter(|(long, _)| long.starts_with("conv1d_") && long.ends_with(ty));
            let shorts: Vec<String> = shorts.map(|&(_, short)| short.to_string()).collect();
            assert_eq!(shorts.len(), 3, "{ty}: {shorts:?}");
            for k in
                ["const", "tiled", "tiled_l2", "fast"].map(|k| format!("conv1d_{k}_{ty}")).into_iter().chain(shorts)
            {
                assert!(param_mask(&k), "sm_{} {k}: the mask is not read from its parameter", c.arch);
            }
            // Per multiply-add, the basic kernel loads an input and a tap
            // from global memory; the const kernel only the input (its
            // taps come from the parameter bank). The two sum their taps in
            // differently unrolled loops, so the counts are compared per
            // multiply-add, not with each other.
            let fma = |k: &str| c.kernel(k).unwrap().iter().filter(|i| matches!(i.base(), "FFMA" | "DFMA")).count();
            let (basic, konst) = (format!("conv1d_basic_{ty}"), format!("conv1d_const_{ty}"));
            assert!(
                fma(&konst) > 0 && ldg(&konst) <= fma(&konst),
                "sm_{}: {konst} has {} LDG for {} multiply-adds: the mask still comes from global memory",
                c.arch,
                ldg(&konst),
                fma(&konst)
            );
            assert!(
                ldg(&basic) >= 2 * fma(&basic),
                "sm_{}: {basic} has {} LDG for {} multiply-adds: its taps do not come from global memory",
                c.arch,
                ldg(&basic),
                fma(&basic)
            );
            println!(
                "sm_{} LDG / multiply-adds: {basic} {} / {}, {konst} {} / {}",
                c.arch,
                ldg(&basic),
                fma(&basic),
                ldg(&konst),
                fma(&konst)
            );
        }
    }
}

/// The 2D register kernels (`conv2d_strip*`; 9 × 9, 11 × 11 and 13 × 13 in `f32` only; and `conv2d_band9_f32`) stream their rows through a
/// per-warp ring in shared memory: on sm_80 and newer with asynchronous
/// copies (`LDGSTS`, 16 bytes at a time through L1 for aligned rows: not
/// `.BYPASS`) and their waits (`DEPBAR`), read back 128 bits at a time,
/// with warp barriers only (no `BAR.SYNC`); below sm_80 with plain loads
/// and shared stores.
#[test]
fn strip_kernels_stream_rows_through_a_shared_ring() {
    for c in compiled("strip_kernels_stream_rows_through_a_shared_ring") {
        for ty in ["f32", "f64"] {
            let strips = [3, 5, 7, 9, 11, 13].into_iter().filter(|&n| n < 9 || ty == "f32");
            let band = (ty == "f32").then(|| "conv2d_band9_f32".to_string());
            for k in strips.map(|n| format!("conv2d_strip{n}_{ty}")).chain(band) {
                let sass = c.kernel(&k).unwrap_or_else(|| panic!("sm_{}: {k} missing", c.arch));
                let ops: Vec<&str> = sass.iter().map(|i| i.opcode.as_str()).collect();
                let has = |op: &str| ops.contains(&op);
                let starts = |op: &str| ops.iter().any(|o| o.starts_with(op));
                assert!(!starts("BAR.SYNC"), "sm_{} {k}: a block barrier", c.arch);
                assert!(starts("LDS"), "sm_{} {k}: no shared loads", c.arch);
                if c.arch >= 80 {
                    assert!(has("LDGSTS.E.128"), "sm_{} {k}: no 16-byte asynchronous copies: {ops:?}", c.arch);
                    assert!(!starts("LDGSTS.E.BYPASS"), "sm_{} {k}: copies around L1: {ops:?}", c.arch);
                    assert!(has("LDGDEPBAR") && starts("DEPBAR"), "sm_{} {k}: no copy groups and waits", c.arch);
                    if ty == "f32" {
                        assert!(has("LDS.128"), "sm_{} {k}: no 128-bit shared loads", c.arch);
                    }
                } else {
                    assert!(!starts("LDGSTS") && starts("STS"), "sm_{} {k}: {ops:?}", c.arch);
                }
            }
        }
    }
}

/// The batched rows FMA kernels (`conv1d_rows{,1..8}_<type>`) copy their
/// tiles ahead into a shared ring: from sm_80 by `cp.async` (`LDGSTS`),
/// except the 4-byte types on sm_90, whose thread 0 takes each tile by
/// one bulk copy (`UBLKCP`, and no `LDGSTS`) onto a barrier per slot
/// (`SYNCS` arrivals and phase waits) and loads the tile after next into
/// the L2 (`UBLKPF`); before sm_80, none of these. No local memory.
#[test]
fn batched_rows_kernels_copy_tiles_ahead() {
    for c in compiled("batched_rows_kernels_copy_tiles_ahead") {
        let types: &[(&str, usize)] = &[("f32", 4), ("f64", 8), ("f16", 2), ("u8", 1), ("u16", 2), ("bf16", 2)];
        for &(ty, size) in types.iter().filter(|(ty, _)| c.arch >= 80 || *ty != "bf16") {
            let names =
                std::iter::once(format!("conv1d_rows_{ty}")).chain((1..=8).map(|ch| format!("conv1d_rows{ch}_{ty}")));
            for k in names {
                let sass = c.kernel(&k).unwrap_or_else(|| panic!("sm_{}: {k} missing", c.arch));
                let count = |prefix: &str| sass.iter().filter(|i| i.opcode.starts_with(prefix)).count();
                let (ldgsts, bulk) = (count("LDGSTS"), count("UBLKCP"));
                if c.arch >= 90 && coalesce_kernels::conv::batch::rows_bulk(size) {
                    assert!(bulk >= 1 && ldgsts == 0, "sm_{} {k}: {bulk} bulk copies, {ldgsts} cp.async", c.arch);
                    let (arrive, wait) = (count("SYNCS.ARRIVE.TRANS64"), count("SYNCS.PHASECHK.TRANS64"));
                    assert!(arrive >= 1 && wait >= 1, "sm_{} {k}: {arrive} arrivals, {wait} phase waits", c.arch);
                    assert!(count("UBLKPF") >= 1, "sm_{} {k}: no L2 prefetch", c.arch);
                } else if c.arch >= 80 {
                    assert!(ldgsts >= 1 && bulk == 0, "sm_{} {k}: {ldgsts} cp.async, {bulk} bulk copies", c.arch);
                } else {
                    assert_eq!(ldgsts + bulk, 0, "sm_{} {k}: asynchronous copies below sm_80", c.arch);
                }
                let local = sass.iter().any(|i| i.opcode.starts_with("LDL") || i.opcode.starts_with("STL"));
                assert!(!local, "sm_{} {k}: local memory", c.arch);
            }
        }
    }
}
