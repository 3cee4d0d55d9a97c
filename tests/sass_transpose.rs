//! What the compiler emitted for the transpose and constant-memory kernels,
//! checked without a GPU (each embedded PTX assembled with `ptxas`,
//! disassembled with `cuobjdump`):
//!
//! * the tiled and padded transposes stage the tile in shared memory with
//!   `LDS`/`STS` (never generic `LD`/`ST`) behind `BAR.SYNC`, and `ptxas`
//!   gives them the tile's bytes (4096 for 32 × 32, 4224 for 32 × 33); the
//!   naive transpose uses no shared memory and no barrier;
//! * every transpose moves 32-bit words, issues each thread's global loads
//!   before its first shared store (the classic block: all four), and has
//!   no stack frame or spills;
//! * the constant kernels read the table through constant bank 3 (`LDC` /
//!   `c[0x3][…]` operands) and never with `LDG`; their global twins read
//!   it with `LDG` and never from bank 3.
//!
//! Tools as in `tests/sass.rs`; absent tools print one skip line unless
//! `COALESCE_REQUIRE_SASS_TOOLS=1`.

mod common;

use coalesce::constant::ConstantVariant;
use coalesce::inspect::{Access, Compiled, Instr};
use coalesce::{TransposePolicy, TransposeVariant};
use common::sass::compiled;

fn sass<'a>(c: &'a Compiled, k: &str) -> &'a [Instr] {
    c.kernel(k).unwrap_or_else(|| panic!("sm_{}: {k} is not in the module", c.arch))
}

fn kernels(v: TransposeVariant) -> Vec<&'static str> {
    TransposePolicy::BLOCK_ROWS.iter().map(|&r| v.kernel(r).unwrap()).collect()
}

#[test]
fn tiled_transposes_use_shared_memory_behind_a_barrier() {
    for c in compiled("tiled_transposes_use_shared_memory_behind_a_barrier") {
        for v in [TransposeVariant::Tiled, TransposeVariant::Padded] {
            for k in kernels(v) {
                let ops: Vec<&str> = sass(&c, k).iter().map(|i| i.base()).collect();
                assert!(ops.contains(&"LDS") && ops.contains(&"STS"), "sm_{} {k}: no LDS/STS", c.arch);
                assert!(!ops.contains(&"LD") && !ops.contains(&"ST"), "sm_{} {k}: generic LD/ST", c.arch);
                assert!(c.has(k, "BAR.SYNC"), "sm_{} {k}: no barrier", c.arch);
                let r = c.resources_of(k).unwrap();
                assert_eq!(r.shared_bytes as usize, v.shared_bytes(), "sm_{} {k}: shared bytes", c.arch);
            }
        }
        for k in kernels(TransposeVariant::Naive) {
            let ops: Vec<&str> = sass(&c, k).iter().map(|i| i.base()).collect();
            assert!(!ops.iter().any(|o| ["LDS", "STS", "LD", "ST"].contains(o)), "sm_{} {k}: {ops:?}", c.arch);
            assert!(!c.has(k, "BAR"), "sm_{} {k}: a barrier", c.arch);
            assert_eq!(c.resources_of(k).unwrap().shared_bytes, 0, "sm_{} {k}", c.arch);
        }
    }
}

#[test]
fn transposes_move_words_with_loads_in_flight_and_no_spills() {
    for c in compiled("transposes_move_words_with_loads_in_flight_and_no_spills") {
        for v in TransposeVariant::ALL {
            for &rows in &TransposePolicy::BLOCK_ROWS {
                let k = v.kernel(rows).unwrap();
                let code = sass(&c, k);
                let widths = c.global_widths(k);
                assert!(
                    widths.contains(&(Access::Load, 32)) && widths.contains(&(Access::Store, 32)),
                    "sm_{} {k}",
                    c.arch
                );
                assert!(widths.iter().all(|&(_, b)| b == 32), "sm_{} {k}: {widths:?}", c.arch);
                let r = c.resources_of(k).unwrap();
                assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {k}", c.arch);
                assert!(!code.iter().any(|i| matches!(i.base(), "LDL" | "STL")), "sm_{} {k}: local memory", c.arch);
                // Global loads issued before the first shared store (tiled)
                // or the first global store (naive).
                let first_store = code.iter().position(|i| matches!(i.base(), "STS" | "STG")).unwrap();
                let early = code[..first_store].iter().filter(|i| i.base() == "LDG").count();
                let items = TransposePolicy::with_block_rows(rows).items() as usize;
                println!(
                    "sm_{} {k:<22} {:>3} regs, {early} of {items} loads before the first store",
                    c.arch, r.registers
                );
                if rows == TransposePolicy::CLASSIC.block_rows {
                    assert!(early >= items, "sm_{} {k}: {early} loads in flight, want {items}", c.arch);
                }
            }
        }
    }
}

#[test]
fn constant_kernels_read_bank_3_and_global_ones_ldg() {
    for c in compiled("constant_kernels_read_bank_3_and_global_ones_ldg") {
        for v in ConstantVariant::ALL {
            let k = v.kernel();
            let code = sass(&c, k);
            let bank3 = code.iter().any(|i| i.operands.contains("c[0x3]"));
            let ldg = code.iter().filter(|i| i.base() == "LDG").count();
            match v.memory() {
                coalesce::constant::Memory::Constant => {
                    assert!(bank3, "sm_{} {k}: no constant-bank-3 read", c.arch);
                    assert_eq!(ldg, 0, "sm_{} {k}: reads global memory", c.arch);
                }
                coalesce::constant::Memory::Global => {
                    assert!(ldg > 0, "sm_{} {k}: no LDG", c.arch);
                    assert!(!bank3, "sm_{} {k}: reads constant bank 3", c.arch);
                }
            }
            // One 32-bit result per thread.
            let stores: Vec<_> = c.global_widths(k).into_iter().filter(|(a, _)| *a == Access::Store).collect();
            assert_eq!(stores, vec![(Access::Store, 32)], "sm_{} {k}", c.arch);
        }
    }
}
