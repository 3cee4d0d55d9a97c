//! SASS of the tensor-core kernels, 1D and 2D (no GPU needed): on sm_90 they run
//! `HMMA` (per column group and step three TF32 at `f32` precision, or
//! one TF32 and one bf16 in the two-product form, one at TF32), bring their
//! inputs in by `cp.async` (`LDGSTS`; the bf16 rows form on sm_90 by bulk
//! copies), read shared memory 64 and 128 bits at a time, and keep
//! everything in registers (no stack frame, no spills, no local memory). The sm_70 PTX holds none of
//! them (TF32 `mma` needs sm_80), and the throughput probes compile to
//! what they measure.

mod common;

use coalesce::conv::conv2d::t2_kernel;
use coalesce::conv::{TcProducts, tensor_kernel_of};
use coalesce::inspect::Compiled;
use coalesce::ptx;
use common::sass::compiled;

fn ops(c: &Compiled, k: &str) -> Vec<String> {
    c.kernel(k)
        .unwrap_or_else(|| panic!("sm_{}: {k} is not in the module", c.arch))
        .iter()
        .map(|i| i.opcode.clone())
        .collect()
}

fn count(ops: &[String], prefix: &str) -> usize {
    ops.iter().filter(|o| o.starts_with(prefix)).count()
}

#[test]
fn tensor_kernels_run_hmma_from_registers() {
    for c in compiled("tensor_kernels_run_hmma_from_registers").into_iter().filter(|c| c.arch >= 80) {
        for products in [TcProducts::One, TcProducts::Two, TcProducts::Three] {
            let k = tensor_kernel_of(products);
            let o = ops(&c, k);
            let hmma = count(&o, "HMMA.1688.F32.TF32");
            let bf16 = count(&o, "HMMA.16816.F32.BF16");
            // Eight column groups per warp and two steps per pass of the
            // step loop: per step and group one TF32 HMMA (the heads),
            // plus two more TF32 (three products) or one bf16 (two).
            let (tf32_per_step, bf16_per_step) = match products {
                TcProducts::One => (1, 0),
                TcProducts::Two => (1, 1),
                TcProducts::Three => (3, 0),
            };
            assert!(hmma >= 16 * tf32_per_step, "sm_{} {k}: {hmma} TF32 HMMA", c.arch);
            assert!(bf16 >= 16 * bf16_per_step, "sm_{} {k}: {bf16} bf16 HMMA", c.arch);
            if bf16_per_step == 0 {
                assert_eq!(bf16, 0, "sm_{} {k}: bf16 HMMA", c.arch);
            } else {
                // Two bf16 pairs per step and group: F2FP packs.
                assert!(count(&o, "F2FP.BF16") >= 32, "sm_{} {k}: no bf16 packing", c.arch);
            }
            assert!(count(&o, "LDGSTS") >= 1, "sm_{} {k}: no cp.async", c.arch);
            assert!(o.iter().any(|x| x == "LDS.64") && o.iter().any(|x| x == "LDS.128"), "sm_{} {k}", c.arch);
            assert!(!o.iter().any(|x| x.starts_with("LDL") || x.starts_with("STL")), "sm_{} {k}: local memory", c.arch);
            let r = c.resources.iter().find(|r| r.name == k).expect("resources");
            println!("sm_{} {k}: {hmma} HMMA, {} registers", c.arch, r.registers);
            assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {k}", c.arch);
        }
        // The 2D kernels: per mask row, NT + S − 1 data fragments meet 8·S
        // products (three HMMA at f32, one at TF32).
        for (steps, precise) in [(2, true), (3, true), (4, true), (2, false), (3, false), (4, false)] {
            let k = t2_kernel(8 * steps - 7, precise).expect("a 2D kernel");
            let o = ops(&c, k);
            let hmma = count(&o, "HMMA.1688.F32.TF32");
            let want = 8 * steps * if precise { 3 } else { 1 };
            assert!(hmma >= want, "sm_{} {k}: {hmma} HMMA, want at least {want}", c.arch);
            assert!(count(&o, "LDGSTS") >= 1, "sm_{} {k}: no cp.async", c.arch);
            // One ldmatrix per data fragment, NT + S − 1 per mask row.
            let ldsm = count(&o, "LDSM.16.M88.4");
            assert!(ldsm >= 8 + steps - 1, "sm_{} {k}: {ldsm} LDSM", c.arch);
            // The mask fragment: heads and remainders in one 128-bit load
            // (TF32 reads the heads only, 64 bits).
            assert!(!precise || o.iter().any(|x| x == "LDS.128"), "sm_{} {k}: no LDS.128", c.arch);
            assert!(!o.iter().any(|x| x.starts_with("LDL") || x.starts_with("STL")), "sm_{} {k}: local memory", c.arch);
            let r = c.resources.iter().find(|r| r.name == k).expect("resources");
            println!("sm_{} {k}: {hmma} HMMA, {} registers", c.arch, r.registers);
            assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {k}", c.arch);
        }
        let peak = ops(&c, "tc_peak_mma_tf32");
        assert!(count(&peak, "HMMA.1688.F32.TF32") >= 8, "sm_{}", c.arch);
        assert!(count(&ops(&c, "tc_peak_ffma"), "FFMA") >= 8, "sm_{}", c.arch);
    }
}

/// The batched rows kernels' bf16 tensor form (`conv1d_rows_tc{S}_bf16`):
/// per pair of groups and step, three `HMMA.16816.F32.BF16` for each group
/// (the taps' three parts), and from 2 steps on the half last step's
/// `HMMA.1688.F32.BF16` for the head part and one more
/// `HMMA.16816.F32.BF16` for the two small parts together, per group
/// (`FLAG_HALF_STEP`; at 3 steps its `A` by `ldmatrix.x2`); `A` by
/// `ldmatrix` at 3 steps and by 32-bit
/// shared loads below; inputs by `cp.async` on sm_80, and on sm_90 by bulk
/// copies (`UBLKCP`, no `LDGSTS`) on barrier objects (`SYNCS` arrivals and
/// phase waits) with an L2 prefetch of the tile after next (`UBLKPF`); the
/// work counter's draws, the count of finished blocks and the last block's
/// reset as device-scope atomics behind a fence; no local memory (3 blocks of 256 threads per SM
/// on sm_90: `sass_launch_bounds` checks the registers).
#[test]
fn bf16_rows_tensor_form_runs_hmma() {
    for c in compiled("bf16_rows_tensor_form_runs_hmma").into_iter().filter(|c| c.arch >= 80) {
        for steps in 1..=3usize {
            let k = format!("conv1d_rows_tc{steps}_bf16");
            let o = ops(&c, &k);
            let hmma = count(&o, "HMMA.16816.F32.BF16");
            let want = 6 * steps + if steps >= 2 { 2 } else { 0 };
            assert!(hmma >= want, "sm_{} {k}: {hmma} HMMA, want at least {want}", c.arch);
            let (half, ldsm2) = (count(&o, "HMMA.1688.F32.BF16"), count(&o, "LDSM.16.M88.2"));
            match steps {
                1 => assert_eq!((half, ldsm2), (0, 0), "sm_{} {k}: a half step in the 1-step kernel", c.arch),
                2 => assert!(half >= 2 && ldsm2 == 0, "sm_{} {k}: {half} half-step HMMA, {ldsm2} LDSM.x2", c.arch),
                _ => assert!(half >= 2 && ldsm2 >= 2, "sm_{} {k}: {half} half-step HMMA, {ldsm2} LDSM.x2", c.arch),
            }
            if c.arch >= 90 {
                let (copies, waits) = (count(&o, "UBLKCP.S.G"), count(&o, "SYNCS.PHASECHK.TRANS64"));
                assert!(copies >= 1 && waits >= 1, "sm_{} {k}: {copies} bulk copies, {waits} barrier waits", c.arch);
                assert!(count(&o, "SYNCS.ARRIVE.TRANS64") >= 1, "sm_{} {k}: no barrier arrival", c.arch);
                assert!(count(&o, "UBLKPF") >= 1, "sm_{} {k}: no L2 prefetch", c.arch);
                assert_eq!(count(&o, "LDGSTS"), 0, "sm_{} {k}: cp.async beside the bulk copies", c.arch);
            } else {
                assert!(count(&o, "LDGSTS") >= 1, "sm_{} {k}: no cp.async", c.arch);
            }
            let ldsm = count(&o, "LDSM.16.M88.4");
            if steps == 3 {
                assert!(ldsm >= 2 * steps, "sm_{} {k}: {ldsm} LDSM", c.arch);
            } else {
                assert_eq!(ldsm, 0, "sm_{} {k}: LDSM below 3 steps", c.arch);
            }
            let (add, exch) = (count(&o, "ATOMG.E.ADD.STRONG.GPU"), count(&o, "ATOMG.E.EXCH.STRONG.GPU"));
            assert!(add >= 2 && exch >= 2, "sm_{} {k}: {add} atomic adds, {exch} exchanges", c.arch);
            assert!(count(&o, "MEMBAR") >= 1, "sm_{} {k}: no fence", c.arch);
            assert!(!o.iter().any(|x| x.starts_with("LDL") || x.starts_with("STL")), "sm_{} {k}: local memory", c.arch);
            let r = c.resources.iter().find(|r| r.name == k).expect("resources");
            println!("sm_{} {k}: {hmma} HMMA, {ldsm} LDSM, {} registers", c.arch, r.registers);
            assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {k}", c.arch);
        }
    }
}

#[test]
fn sm70_ptx_has_no_tensor_kernels() {
    let Some(text) = ptx::text(70) else {
        eprintln!("sm70_ptx_has_no_tensor_kernels: skipped: no sm_70 PTX embedded");
        return;
    };
    for k in [
        "conv1d_tensor_f32",
        "conv1d_tensor_2p_f32",
        "conv1d_tensor_tf32_f32",
        "tc_peak_mma_tf32",
        "conv2d_tensor_s2_f32",
        "conv1d_rows_tc1_bf16",
    ] {
        assert!(!text.contains(&format!(".entry {k}(")), "sm_70 PTX holds {k}");
    }
    assert!(!text.contains("mma.sync"), "sm_70 PTX holds an mma");
    let sm90 = ptx::text(90).expect("sm_90 PTX embedded");
    assert!(sm90.contains(".entry conv1d_tensor_f32("));
}
