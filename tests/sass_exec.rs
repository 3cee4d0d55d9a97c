//! The execution-model kernels in SASS, without a GPU.
//!
//! * Divergence: for each `math_kernel*` the test *reports* whether the
//!   compiler kept a branch (`BRA` / `BSSY` / `BSYNC`, where a warp can
//!   split) or turned the condition into a select or predicated code (the
//!   lesson's point: the compiler optimizes short branches away). Which
//!   form it picks is the compiler's choice, so only the analysis itself is
//!   asserted (each kernel found, stores one value per thread).
//! * Reduction: the fast kernels read with 128-bit loads (at least
//!   `ITEMS` in the unrolled tile loop), combine warps with `SHFL.DOWN`,
//!   meet at one `BAR.SYNC` and keep warp sums in shared memory with
//!   `LDS`/`STS`; the tree kernels work in shared memory (`LDS`/`STS`,
//!   never generic `LD`/`ST`) between barriers.

use coalesce::divergence::{MathKernel, classify};
use coalesce::inspect::Access;
use coalesce::kernels::reduce::ITEMS;

mod common;

use common::sass::compiled;

#[test]
fn divergence_kernels_are_classified() {
    for c in compiled("divergence_kernels_are_classified") {
        for k in MathKernel::ALL {
            let sass = c.kernel(k.kernel()).unwrap_or_else(|| panic!("sm_{}: {} not in the SASS", c.arch, k.kernel()));
            let form = classify(sass);
            println!("sm_{} {:<13} {:<12} {form}", c.arch, k.kernel(), k.lesson_name());
            // One 32-bit store of c[tid]: the analysis looked at the real body.
            assert_eq!(c.global_widths(k.kernel()), vec![(Access::Store, 32)], "sm_{} {}", c.arch, k.kernel());
        }
    }
}

#[test]
fn fast_reduction_loads_128_bits_and_shuffles() {
    for c in compiled("fast_reduction_loads_128_bits_and_shuffles") {
        for t in ["i32", "f32", "f64"] {
            let k = format!("reduce_fast_{t}");
            let sass = c.kernel(&k).unwrap_or_else(|| panic!("sm_{}: {k} missing", c.arch));
            let wide = sass.iter().filter(|i| i.global_access() == Some((Access::Load, 128))).count();
            assert!(wide > ITEMS, "sm_{} {k}: {wide} 128-bit loads", c.arch);
            assert!(c.has(&k, "SHFL.DOWN"), "sm_{} {k}: no SHFL.DOWN", c.arch);
            assert!(c.has(&k, "BAR.SYNC"), "sm_{} {k}: no barrier", c.arch);
            let ops: Vec<&str> = sass.iter().map(|i| i.base()).collect();
            assert!(ops.contains(&"LDS") && ops.contains(&"STS"), "sm_{} {k}: {ops:?}", c.arch);
            let r = c.resources_of(&k).unwrap();
            assert_eq!((r.stack_frame, r.spill_stores), (0, 0), "sm_{} {k}", c.arch);
            let warp_sums = if t == "f64" { 256 } else { 128 };
            assert_eq!(r.shared_bytes, warp_sums, "sm_{} {k}", c.arch);
            // Loads in flight: 128-bit loads issued back to back before the
            // first of them is used (reported; the scheduler decides).
            let first = sass.iter().position(|i| i.global_access() == Some((Access::Load, 128))).unwrap();
            let run = sass[first..]
                .iter()
                .take_while(|i| !matches!(i.base(), "FADD" | "DADD" | "IADD3"))
                .filter(|i| i.global_access() == Some((Access::Load, 128)))
                .count();
            println!(
                "sm_{} {k}: {wide} 128-bit loads, {run} issued before the first add, {} registers",
                c.arch, r.registers
            );
        }
    }
}

#[test]
fn tree_reductions_work_in_shared_memory_between_barriers() {
    for c in compiled("tree_reductions_work_in_shared_memory_between_barriers") {
        for tree in ["neighbored", "interleaved"] {
            for t in ["i32", "f32", "f64"] {
                let k = format!("reduce_{tree}_{t}");
                let sass = c.kernel(&k).unwrap_or_else(|| panic!("sm_{}: {k} missing", c.arch));
                let ops: Vec<&str> = sass.iter().map(|i| i.base()).collect();
                assert!(ops.contains(&"LDS") && ops.contains(&"STS"), "sm_{} {k}: {ops:?}", c.arch);
                assert!(!ops.contains(&"LD") && !ops.contains(&"ST"), "sm_{} {k} uses generic LD/ST", c.arch);
                let bars = sass.iter().filter(|i| i.opcode.starts_with("BAR.SYNC")).count();
                assert!(bars >= 2, "sm_{} {k}: {bars} barriers (load + each tree step)", c.arch);
                println!("sm_{} {k}: {}", c.arch, classify(sass));
            }
        }
    }
}
