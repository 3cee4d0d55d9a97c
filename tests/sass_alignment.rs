//! Lesson 004's size-and-alignment and local-memory claims, checked in
//! what `ptxas` and `cuobjdump -sass` make of the embedded PTX (no GPU):
//!
//! * per point, `points_aos12` loads three 32-bit words (`LDG.E`),
//!   `points_aos16` one 128-bit word (`LDG.E.128`), `points_soa` three
//!   32-bit words — the kernels are one point per thread, so the counts
//!   are per point; the stores mirror the loads;
//! * the access-pattern kernels move one 32-bit word each way;
//! * `local_histogram_dynamic` has a stack frame (its 16-word array, in
//!   local memory) read and written with `LDL`/`STL`;
//!   `local_histogram_registers` has none, no spills and no `LDL`/`STL`.
//!
//! Tools and skipping as in `tests/sass.rs` (`tests/common/sass.rs`).

use coalesce::inspect::{Access, Compiled};
use coalesce::local::BINS;

mod common;

use common::sass::compiled;

/// The global accesses of `kernel`, in order: (direction, bits).
fn accesses(c: &Compiled, kernel: &str) -> Vec<(Access, u32)> {
    let sass = c.kernel(kernel).unwrap_or_else(|| panic!("sm_{}: {kernel} is not in the SASS", c.arch));
    sass.iter().filter_map(|i| i.global_access()).collect()
}

fn count(v: &[(Access, u32)], a: Access, bits: u32) -> usize {
    v.iter().filter(|&&x| x == (a, bits)).count()
}

/// Loads and stores of each point kernel: exactly `n` accesses of `bits`
/// each way and nothing else.
fn point_expectations(c: &Compiled) -> Result<(), String> {
    for (kernel, n, bits) in [("points_aos12", 3, 32), ("points_aos16", 1, 128), ("points_soa", 3, 32)] {
        let v = accesses(c, kernel);
        let (loads, stores) = (count(&v, Access::Load, bits), count(&v, Access::Store, bits));
        if (loads, stores, v.len()) != (n, n, 2 * n) {
            return Err(format!(
                "sm_{} {kernel}: expected {n} {bits}-bit loads and {n} stores per point and nothing else, got {v:?}",
                c.arch
            ));
        }
    }
    Ok(())
}

#[test]
fn point_layouts_load_three_words_or_one_quad() {
    for c in compiled("point_layouts_load_three_words_or_one_quad") {
        point_expectations(&c).unwrap();
        for k in ["points_aos12", "points_aos16", "points_soa"] {
            println!("sm_{} {k}: {:?}", c.arch, accesses(&c, k));
        }
    }
}

/// The check is not vacuous: 12-byte SASS under the 16-byte kernel's name
/// fails it.
#[test]
fn point_check_fails_for_word_loads_named_aos16() {
    for mut c in compiled("point_check_fails_for_word_loads_named_aos16") {
        let words = c.sass["points_aos12"].clone();
        c.sass.insert("points_aos16".into(), words);
        let err = point_expectations(&c).unwrap_err();
        assert!(err.contains("points_aos16: expected 1 128-bit loads"), "{err}");
    }
}

#[test]
fn access_pattern_kernels_move_one_word_each_way() {
    for c in compiled("access_pattern_kernels_move_one_word_each_way") {
        for k in ["read_offset", "write_offset", "read_stride", "write_stride"] {
            assert_eq!(accesses(&c, k), vec![(Access::Load, 32), (Access::Store, 32)], "sm_{} {k}", c.arch);
            let r = c.resources_of(k).unwrap_or_else(|| panic!("sm_{}: no ptxas report for {k}", c.arch));
            assert_eq!(r.stack_frame, 0, "sm_{} {k}", c.arch);
        }
    }
}

#[test]
fn run_time_indexed_array_lives_in_local_memory() {
    for c in compiled("run_time_indexed_array_lives_in_local_memory") {
        let local_ops = |k: &str| -> (usize, usize) {
            let sass = c.kernel(k).unwrap_or_else(|| panic!("sm_{}: {k} is not in the SASS", c.arch));
            let n = |op: &str| sass.iter().filter(|i| i.base() == op).count();
            (n("LDL"), n("STL"))
        };
        let dynamic = "local_histogram_dynamic";
        let r = c.resources_of(dynamic).unwrap_or_else(|| panic!("sm_{}: no ptxas report for {dynamic}", c.arch));
        assert!(
            r.stack_frame as usize >= 4 * BINS,
            "sm_{} {dynamic}: stack frame {} bytes, expected the {}-byte histogram there",
            c.arch,
            r.stack_frame,
            4 * BINS
        );
        assert_eq!(
            (r.spill_stores, r.spill_loads),
            (0, 0),
            "sm_{} {dynamic}: the frame is the array, not spills",
            c.arch
        );
        let (ldl, stl) = local_ops(dynamic);
        assert!(ldl >= 1 && stl >= 1, "sm_{} {dynamic}: {ldl} LDL, {stl} STL", c.arch);

        let regs = "local_histogram_registers";
        let r = c.resources_of(regs).unwrap_or_else(|| panic!("sm_{}: no ptxas report for {regs}", c.arch));
        assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {regs}", c.arch);
        assert_eq!(local_ops(regs), (0, 0), "sm_{} {regs}: local memory accesses", c.arch);
        println!(
            "sm_{}: {dynamic} {} B stack, {ldl} LDL, {stl} STL, {} registers; {regs} 0 B stack, {} registers",
            c.arch,
            c.resources_of(dynamic).unwrap().stack_frame,
            c.resources_of(dynamic).unwrap().registers,
            r.registers
        );
    }
}
