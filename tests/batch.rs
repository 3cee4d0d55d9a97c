//! The batched 1D filters (`conv::batch::Filter1d`): every storage type
//! (f32, f64, f16, bf16, u8, u16), both axes, one mask or one per signal,
//! every boundary mode with `cval`, origins at both ends of scipy's range,
//! widths on both sides of the unrolled kernels' limit, dense and pitched
//! layouts (aligned and not), batches from 1 row to thousands, lengths
//! around tile edges; the typed errors; several threads on their own
//! streams.
//!
//! Each GPU result is checked against the rayon reference
//! (`conv::reference_batch`, accumulated in f64 with the bound of an
//! accumulation in the data's type) through the output rule (f16/bf16
//! rounding, u8/u16 rounding and saturation). Inputs are fresh random
//! values; outputs (and the gaps between pitched rows) are poisoned first
//! and the gaps must stay poisoned.

mod common;

use coalesce::conv::batch::{
    Axis, BatchPlan, Filter1d, ROWS_FIXED_MAX, RT_MAX_LEN, RT_MIN_TAPS, Sample, Shape, left_for_origin, rt_half_last,
    rt_max_steps,
};
use coalesce::conv::reference_batch::{filter1d, first_mismatch};
use coalesce::conv::{Boundary, ConvElem, ConvOp};
use coalesce::half::{bf16, f16};
use coalesce::{DevicePtr, Error, Gpu};
use rand::Rng;
use rand::rngs::StdRng;

/// Taps in ±1 (±0.02 for the widest masks, so integer sums stay in range
/// as often as they saturate).
fn taps<A: ConvElem>(rng: &mut StdRng, n: usize, w: usize) -> Vec<A> {
    let scale = if w > 40 { 0.05 } else { 1.0 };
    let v: Vec<A> = (0..n).map(|_| A::from_f64(rng.random_range(-1.0f64..1.0) * scale)).collect();
    assert!(n < 2 || v.iter().any(|t| t.to_f64() != 0.0), "random taps came out all zero");
    v
}

/// One case's parameters.
#[derive(Clone, Copy, Debug)]
struct Case {
    shape: Shape,
    axis: Axis,
    w: usize,
    per_signal: bool,
    op: ConvOp,
    mode: Boundary,
    cval: f64,
    origin: isize,
    /// Elements between the buffers' starts and the arrays' (0: aligned).
    offset: usize,
}

/// Runs `case` on the GPU and checks every output and every gap.
fn run_case<S: Sample>(gpu: &Gpu, rng: &mut StdRng, seed: u64, case: Case) {
    run_case_with::<S>(gpu, rng, seed, case, true, common::sample);
}

/// [`run_case`] with the tensor-core form allowed or not and inputs from
/// `draw`; returns what ran.
fn run_case_with<S: Sample>(
    gpu: &Gpu,
    rng: &mut StdRng,
    seed: u64,
    case: Case,
    tensor: bool,
    mut draw: impl FnMut(&mut StdRng) -> S,
) -> BatchPlan {
    let Case { shape, axis, w, per_signal, op, mode, cval, origin, offset } = case;
    let what = format!("{} {case:?} (seed {seed})", S::NAME);
    let signals = match axis {
        Axis::Rows => shape.rows,
        Axis::Columns => shape.cols,
    };
    let masks = taps::<S::Acc>(rng, if per_signal { signals * w } else { w }, w);
    let filter = if per_signal {
        Filter1d::<S>::depthwise(gpu, &masks, w, op, mode)
    } else {
        Filter1d::<S>::new(gpu, &masks, op, mode)
    }
    .unwrap_or_else(|e| panic!("{what}: {e}"))
    .with_tensor_cores(tensor)
    .with_cval(cval)
    .with_origin(origin)
    .and_then(|f| f.with_axis(axis.scipy() as isize))
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let in_len = offset + (shape.rows - 1) * shape.in_pitch + shape.cols;
    let out_len = offset + (shape.rows - 1) * shape.out_pitch + shape.cols;
    let input: Vec<S> = (0..in_len).map(|_| draw(rng)).collect();
    let d_in = gpu.upload(&input).unwrap();
    let mut d_out = gpu.alloc_zeroed::<S>(out_len + 5).unwrap();
    d_out.fill_bytes(common::POISON).unwrap();
    let src = d_in.view(offset..in_len).unwrap();
    let mut dst = d_out.view_mut(offset..out_len).unwrap();
    let plan = filter.run(&src, &mut dst, shape).unwrap_or_else(|e| panic!("{what}: {e}"));
    // Vector access exactly when every row starts on 16 bytes (the buffers
    // start on 256): a single row's pitch never counts.
    let bytes = |elems: usize| elems * std::mem::size_of::<S>();
    let rows_aligned = shape.rows <= 1 || bytes(shape.in_pitch) % 16 == 0 && bytes(shape.out_pitch) % 16 == 0;
    assert_eq!(plan.vector, bytes(offset) % 16 == 0 && rows_aligned, "{what}: {plan:?}");
    let got = d_out.to_vec().unwrap();
    let values: Vec<f64> = input[offset..].iter().map(|v| v.to_f64()).collect();
    let reference: Vec<f64> = filter.taps().iter().map(|t| t.to_f64()).collect();
    let want = filter1d::<S::Acc>(&values, shape, axis, &reference, w, filter.left(), mode, cval).unwrap();
    let mut dense = Vec::with_capacity(shape.rows * shape.cols);
    for r in 0..shape.rows {
        let at = offset + r * shape.out_pitch;
        dense.extend_from_slice(&got[at..at + shape.cols]);
    }
    if let Some((i, g, c)) = first_mismatch(&dense, &want) {
        let bad = dense.iter().zip(&want).filter(|(g, c)| !coalesce::conv::reference_batch::sample_matches(**g, c));
        panic!(
            "{what} ({}): {} wrong of {}; first at ({}, {}): got {g}, want {} ± {}",
            plan.kernel,
            bad.count(),
            dense.len(),
            i / shape.cols,
            i % shape.cols,
            c.value,
            c.bound
        );
    }
    let poison = bytemuck::cast_slice::<S, u8>(&got);
    let size = std::mem::size_of::<S>();
    let mut written = vec![false; got.len()];
    for r in 0..shape.rows {
        let at = offset + r * shape.out_pitch;
        written[at..at + shape.cols].iter_mut().for_each(|x| *x = true);
    }
    for (k, done) in written.iter().enumerate() {
        if !done {
            assert!(
                poison[k * size..(k + 1) * size].iter().all(|&b| b == common::POISON),
                "{what}: element {k} outside the output array was written"
            );
        }
    }
    plan
}

/// A spread of cases for type `S`: both axes, every mode, widths around
/// the unrolled kernels' limit, shared and per-signal masks, odd shapes,
/// pitched and offset layouts.
fn spread<S: Sample>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    let shapes = [
        Shape::new(1, 1),
        Shape::new(1, 4099),
        Shape::new(3, 1029),
        Shape::new(5, 33),
        Shape::new(37, 7),
        Shape::new(2, 2050).with_pitches(2064, 2056),
        Shape::new(4, 300).with_pitches(301, 305),
        Shape::new(67, 45).with_pitches(48, 47),
    ];
    let widths = [1, 2, 4, 5, 8, 13, ROWS_FIXED_MAX, ROWS_FIXED_MAX + 1, 64];
    let mut k = 0usize;
    for (si, &shape) in shapes.iter().enumerate() {
        for axis in [Axis::Rows, Axis::Columns] {
            for (wi, &w) in widths.iter().enumerate() {
                // Each mode, op, origin end and mask kind in turn, not all
                // combinations of every shape.
                k += 1;
                let mode = Boundary::ALL[(k + si) % 5];
                let op = ConvOp::ALL[(k / 5) % 2];
                let origin = match (k + wi) % 3 {
                    0 => 0,
                    1 => -((w / 2) as isize),
                    _ => ((w - 1) / 2) as isize,
                };
                let case = Case {
                    shape,
                    axis,
                    w,
                    per_signal: (k + si) % 2 == 1,
                    op,
                    mode,
                    cval: if k.is_multiple_of(2) { 2.5 } else { -1.25 },
                    origin,
                    offset: if k % 4 == 3 { 1 } else { 0 },
                };
                run_case::<S>(gpu, &mut rng, seed, case);
            }
        }
    }
}

#[test]
fn f32_every_axis_mode_width_and_layout() {
    let gpu = gpu_or_skip!();
    spread::<f32>(&gpu);
}

#[test]
fn f64_every_axis_mode_width_and_layout() {
    let gpu = gpu_or_skip!();
    spread::<f64>(&gpu);
}

#[test]
fn f16_every_axis_mode_width_and_layout() {
    let gpu = gpu_or_skip!();
    spread::<f16>(&gpu);
}

#[test]
fn bf16_every_axis_mode_width_and_layout() {
    let gpu = gpu_or_skip!();
    let info = gpu.info();
    if info.cc_major < 8 {
        let f = Filter1d::<bf16>::new(&gpu, &[1.0f32], ConvOp::Correlate, Boundary::Zero).unwrap();
        let err = f.plan(Shape::new(1, 8)).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
        eprintln!(
            "bf16 kernels need sm_80; this device is sm_{}{}: checked the typed error only",
            info.cc_major, info.cc_minor
        );
        return;
    }
    spread::<bf16>(&gpu);
}

#[test]
fn u8_every_axis_mode_width_and_layout() {
    let gpu = gpu_or_skip!();
    spread::<u8>(&gpu);
}

#[test]
fn u16_every_axis_mode_width_and_layout() {
    let gpu = gpu_or_skip!();
    spread::<u16>(&gpu);
}

/// Many short rows (batches of thousands, and of 10^5 signals along
/// either axis), and one long row crossing many tiles and a persistent
/// grid's wrap, for the two unrolled-kernel sizes the benchmarks use
/// (w = 7 and 31).
#[test]
fn large_batches_and_long_rows() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let cases = [
        (Shape::new(5000, 37), 7, Axis::Rows),
        (Shape::new(3, 300_001), 31, Axis::Rows),
        (Shape::new(1024, 1031), 31, Axis::Rows),
        // The largest batch, 10^5 signals, along either axis.
        (Shape::new(100_000, 9), 7, Axis::Rows),
        (Shape::new(11, 100_000), 7, Axis::Columns),
    ];
    for (shape, w, axis) in cases {
        for per_signal in [false, true] {
            let case = Case {
                shape,
                axis,
                w,
                per_signal,
                op: ConvOp::Correlate,
                mode: Boundary::Reflect,
                cval: 0.0,
                origin: 0,
                offset: 0,
            };
            run_case::<f32>(&gpu, &mut rng, seed, case);
            run_case::<u8>(&gpu, &mut rng, seed, case);
            if gpu.info().cc_major >= 8 {
                run_case::<bf16>(&gpu, &mut rng, seed, case);
            }
        }
    }
}

/// bf16 rows on the tensor cores (`conv1d_rows_tc{S}_bf16`): every width
/// the form takes, both operations, every mode with `cval`, origins at
/// both ends, one mask or one per row, rows of several tiles with ragged
/// ends, dense and pitched, the last step whole and halved
/// (`rt_half_last`). Each case must take the tensor form (the plan says
/// so) and match the reference at the FMA kernels' bound.
#[test]
fn bf16_tensor_cores_every_width_mode_and_origin() {
    let gpu = gpu_or_skip!();
    if gpu.info().cc_major < 8 {
        eprintln!("SKIPPED bf16_tensor_cores_every_width_mode_and_origin: bf16 needs sm_80");
        return;
    }
    let (mut rng, seed) = common::rng();
    let shapes = [
        Shape::new(2, 3 * 8192 + 8),
        Shape::new(3, 4 * 8192 + 40),
        Shape::new(3, 17000).with_pitches(17016, 17008),
        Shape::new(1, 2 * 8192 + 8000),
        // Whole tiles only: the first and last tile of each row (the one
        // tile of rows of 8192) take the tensor form with ghost cells.
        Shape::new(2, 2 * 8192),
        Shape::new(3, 8192).with_pitches(8200, 8192),
    ];
    for w in RT_MIN_TAPS..=ROWS_FIXED_MAX {
        for (si, &shape) in shapes.iter().enumerate() {
            let k = w + si;
            let origin = match k % 3 {
                0 => 0,
                1 => -((w / 2) as isize),
                _ => ((w - 1) / 2) as isize,
            };
            let case = Case {
                shape,
                axis: Axis::Rows,
                w,
                per_signal: k % 2 == 0,
                op: ConvOp::ALL[(k / 2) % 2],
                mode: Boundary::ALL[k % 5],
                cval: if k % 4 < 2 { 2.5 } else { -1.0 / 3.0 },
                origin,
                offset: 0,
            };
            let plan = run_case_with::<bf16>(&gpu, &mut rng, seed, case, true, common::sample);
            assert!(plan.tensor, "w = {w}: {case:?} did not take the tensor form ({})", plan.kernel);
            assert!(plan.kernel.starts_with("conv1d_rows_tc"), "{}", plan.kernel);
        }
    }
    // The origins above put every 3-step mask on the half last step
    // (rt_half_last); these keep the full one: from 27 taps on, origins
    // whose lead leaves taps in the last step's second half.
    let mut full = 0;
    for w in 25..=ROWS_FIXED_MAX {
        assert_eq!(rt_max_steps(w.div_ceil(4)), 3, "w = {w}");
        for op in ConvOp::ALL {
            let lo = -((w / 2) as isize);
            let Some(origin) =
                (lo..=((w - 1) / 2) as isize).rev().find(|&o| !rt_half_last(3, w, left_for_origin(w, o, op).unwrap()))
            else {
                assert!(w < 27, "w = {w}: no origin keeps the full last step");
                continue;
            };
            let case = Case {
                shape: shapes[w % 3],
                axis: Axis::Rows,
                w,
                per_signal: w % 2 == 0,
                op,
                mode: Boundary::ALL[w % 5],
                cval: -1.0 / 3.0,
                origin,
                offset: 0,
            };
            let plan = run_case_with::<bf16>(&gpu, &mut rng, seed, case, true, common::sample);
            assert_eq!(plan.kernel, "conv1d_rows_tc3_bf16", "{case:?}");
            full += 1;
        }
    }
    assert!(full >= 12, "{full} cases of the full last step");
    // Off by request, misaligned (an offset, rows of a length that is not a
    // multiple of 8), too narrow or too wide: the FMA kernels.
    let base = Case {
        shape: Shape::new(2, 3 * 8192 + 8),
        axis: Axis::Rows,
        w: 31,
        per_signal: true,
        op: ConvOp::Correlate,
        mode: Boundary::Reflect,
        cval: 0.0,
        origin: 0,
        offset: 0,
    };
    for (case, tensor) in [
        (base, false),
        (Case { offset: 1, ..base }, true),
        (Case { shape: Shape::new(2, 3 * 8192 + 1), ..base }, true),
        (Case { w: RT_MIN_TAPS - 1, ..base }, true),
        (Case { w: ROWS_FIXED_MAX + 1, ..base }, true),
    ] {
        let plan = run_case_with::<bf16>(&gpu, &mut rng, seed, case, tensor, common::sample);
        assert!(!plan.tensor, "{case:?} took the tensor form");
    }
    // Taps whose bf16 head is not finite (f32::MAX rounds up to infinity)
    // stay on the FMA kernels.
    for (m, want) in [(1.0f32, true), (f32::MAX, false), (f32::INFINITY, false), (f32::NAN, false)] {
        let taps = [0.25f32, m, 0.5, -0.25, 0.125, 1.0, 2.0];
        let f = Filter1d::<bf16>::new(&gpu, &taps, ConvOp::Correlate, Boundary::Reflect).unwrap();
        assert_eq!(f.plan(Shape::new(2, 3 * 8192 + 8)).unwrap().tensor, want, "a tap of {m}");
    }
    // Rows of RT_MAX_LEN elements or more stay on the FMA kernels (the
    // tensor form walks its tiles in 32-bit arithmetic); planned, not run.
    let taps = [0.25f32, 0.5, -0.25, 0.125, 1.0, 2.0, 0.75];
    let f = Filter1d::<bf16>::new(&gpu, &taps, ConvOp::Correlate, Boundary::Reflect).unwrap();
    for (len, want) in [(RT_MAX_LEN - 8, true), (RT_MAX_LEN, false), (RT_MAX_LEN + 8, false), (4 * RT_MAX_LEN, false)] {
        let plan = f.plan(Shape::new(1, len)).unwrap();
        assert_eq!(plan.tensor, want, "rows of {len}: {}", plan.kernel);
        assert_eq!(plan.kernel.starts_with("conv1d_rows_tc"), want, "rows of {len}: {}", plan.kernel);
    }
}

/// Drawn tiles: batches of more than four tiles per resident block, whose
/// last fifth the blocks draw from the filter's work counter, on the bf16
/// tensor form (tiles of 8192) and the f32, f64 and u8 FMA kernels (tiles
/// of 4096; the 16-bit FMA kernels do not draw). The same filter runs
/// several times in a row (the counter must be back at zero after each
/// launch), a clone of it runs from another thread on the same stream, and
/// copies on two other streams (each with its own counter) run at the same
/// time. Every run is checked in full.
#[test]
fn drawn_tiles_across_launches_threads_and_streams() {
    let gpu = gpu_or_skip!();
    if gpu.info().cc_major >= 8 {
        drawn_tiles::<bf16>(&gpu, 8192, true);
    } else {
        eprintln!("SKIPPED drawn_tiles_across_launches_threads_and_streams (bf16 part): bf16 needs sm_80");
    }
    drawn_tiles::<f32>(&gpu, 4096, false);
    drawn_tiles::<f64>(&gpu, 4096, false);
    drawn_tiles::<u8>(&gpu, 4096, false);
    let f16_filter = Filter1d::<f16>::new(&gpu, &[0.5f32, 0.25, 0.25], ConvOp::Correlate, Boundary::Zero).unwrap();
    assert_eq!(f16_filter.plan(Shape::new(4096, 1 << 17)).unwrap().drawn, 0, "16-bit FMA kernels do not draw");
}

/// [`drawn_tiles_across_launches_threads_and_streams`] for type `S` with
/// tiles of `tile` samples, on the tensor form or not.
fn drawn_tiles<S: Sample>(gpu: &Gpu, tile: usize, tensor: bool) {
    let (mut rng, seed) = common::rng();
    // 17 tiles per row (ragged last tile); enough rows for 9 tiles per
    // resident block (at most 4 blocks per SM): the drawn fifth, and
    // before it about two of the f32 and one-step tensor kernels' runs (ROWS_RUN_TILES)
    // per block, crossing rows.
    // The drawn tiles an odd count, so that the last draw hands out one
    // tile (the tensor form then draws again at the barrier where it reads
    // the draw before).
    let len = 16 * tile + 1000;
    let resident = 4 * gpu.info().sm_count as usize;
    let mut rows = (9 * resident).div_ceil(17);
    while (rows * 17 / 5).is_multiple_of(2) {
        rows += 1;
    }
    let shape = Shape::new(rows, len);
    let input: Vec<S> = (0..rows * len).map(|_| common::sample::<S>(&mut rng)).collect();
    let values: Vec<f64> = input.iter().map(|v| v.to_f64()).collect();
    let d_in = gpu.upload(&input).unwrap();
    for (w, per_signal, mode) in [(31, true, Boundary::Reflect), (7, false, Boundary::Zero), (20, true, Boundary::Wrap)]
    {
        let masks = taps::<S::Acc>(&mut rng, if per_signal { rows * w } else { w }, w);
        let filter = if per_signal {
            Filter1d::<S>::depthwise(gpu, &masks, w, ConvOp::Convolve, mode)
        } else {
            Filter1d::<S>::new(gpu, &masks, ConvOp::Correlate, mode)
        }
        .unwrap()
        .with_cval(0.75);
        let plan = filter.plan(shape).unwrap();
        let what = format!("{} w = {w}", S::NAME);
        assert!(plan.tensor == tensor && !plan.drawn.is_multiple_of(2), "{what}: {plan:?}");
        assert!(plan.drawn < rows * 17, "{what}: {plan:?}");
        let taps: Vec<f64> = filter.taps().iter().map(|t| ConvElem::to_f64(*t)).collect();
        let want = filter1d::<S::Acc>(&values, shape, Axis::Rows, &taps, w, filter.left(), mode, 0.75).unwrap();
        // Runs `f` `times` times into fresh poisoned outputs on its own
        // stream and checks each.
        let check = |f: &Filter1d<S>, times: usize, who: &str| {
            let g = f.gpu();
            let src = d_in.as_view();
            for k in 0..times {
                let mut out = g.alloc_zeroed::<S>(rows * len).unwrap();
                out.fill_bytes(common::POISON).unwrap();
                let ran = f.run(&src, &mut out.as_view_mut(), shape).unwrap();
                assert_eq!(ran.drawn, plan.drawn, "{what} {who}");
                let got = out.to_vec().unwrap();
                if let Some((i, g, c)) = first_mismatch(&got, &want) {
                    panic!(
                        "{what} {who}, run {k} (seed {seed}): at ({}, {}) got {g}, want {} ± {}",
                        i / len,
                        i % len,
                        c.value,
                        c.bound
                    );
                }
            }
        };
        check(&filter, 3, "alone");
        std::thread::scope(|s| {
            let same = filter.clone();
            s.spawn(move || check(&same, 2, "clone, same stream"));
            for t in 0..2 {
                let other = filter.on(&gpu.new_stream().unwrap()).unwrap();
                s.spawn(move || check(&other, 2, &format!("stream {t}")));
            }
            check(&filter, 2, "alongside");
        });
    }
}

/// The tensor form on hard inputs: magnitudes from 2^-40 to 2^40 with both
/// signs (sums that cancel), and infinities and NaNs inside tiles (those
/// tiles run again on FMAs, so they come out as the plain sum gives them).
#[test]
fn bf16_tensor_cores_wide_range_and_non_finite_inputs() {
    let gpu = gpu_or_skip!();
    if gpu.info().cc_major < 8 {
        eprintln!("SKIPPED bf16_tensor_cores_wide_range_and_non_finite_inputs: bf16 needs sm_80");
        return;
    }
    let (mut rng, seed) = common::rng();
    let wide = |r: &mut StdRng| {
        let m: f64 = r.random_range(1.0..2.0) * if r.random_bool(0.5) { 1.0 } else { -1.0 };
        bf16::from_f64(m * 2f64.powi(r.random_range(-40..=40)))
    };
    let non_finite = |r: &mut StdRng| match r.random_range(0..20_000u32) {
        0 => bf16::INFINITY,
        1 => bf16::NEG_INFINITY,
        2 => bf16::NAN,
        _ => common::sample::<bf16>(r),
    };
    for (w, origin) in [(7, 0), (31, 0), (6, -3), (24, 11), (17, 8)] {
        for op in ConvOp::ALL {
            let case = Case {
                shape: Shape::new(3, 5 * 8192 + 128),
                axis: Axis::Rows,
                w,
                per_signal: true,
                op,
                mode: Boundary::Mirror,
                cval: 0.0,
                origin,
                offset: 0,
            };
            let plan = run_case_with::<bf16>(&gpu, &mut rng, seed, case, true, wide);
            assert!(plan.tensor, "{case:?}: {}", plan.kernel);
            run_case_with::<bf16>(&gpu, &mut rng, seed, case, true, non_finite);
        }
    }
    // Infinities and NaNs in the tiles at the rows' ends (every tile here),
    // whose ghost cells the tensor form writes into their slots: those
    // warps run again on FMAs, ghost cells included.
    let n = 2 * 8192;
    let at = [3, 9, n - 2, n + 8190, n + 8200, 2 * n - 1];
    for (k, (w, origin)) in [(7, 0), (31, 0), (6, -3), (24, 11), (17, 8)].into_iter().enumerate() {
        let case = Case {
            shape: Shape::new(2, n),
            axis: Axis::Rows,
            w,
            per_signal: k % 2 == 0,
            op: ConvOp::ALL[k % 2],
            mode: Boundary::ALL[k % 5],
            cval: 2.5,
            origin,
            offset: 0,
        };
        let mut i = 0;
        let placed = |r: &mut StdRng| {
            let v = match at.iter().position(|&p| p == i) {
                Some(j) => [bf16::INFINITY, bf16::NEG_INFINITY, bf16::NAN][j % 3],
                None => common::sample::<bf16>(r),
            };
            i += 1;
            v
        };
        let plan = run_case_with::<bf16>(&gpu, &mut rng, seed, case, true, placed);
        assert!(plan.tensor, "{case:?}: {}", plan.kernel);
    }
}

/// Integer outputs: ties round to even and out-of-range sums saturate.
#[test]
fn integer_rounding_ties_to_even_and_saturation() {
    let gpu = gpu_or_skip!();
    // Identity-scaled masks: x · 0.5 lands exactly on .5 for odd x.
    let input: Vec<u8> = (0..=255).collect();
    let d_in = gpu.upload(&input).unwrap();
    let mut d_out = gpu.alloc_zeroed::<u8>(256).unwrap();
    for (scale, want) in [
        (0.5f32, input.iter().map(|&x| (x as f32 * 0.5).round_ties_even() as u8).collect::<Vec<_>>()),
        (1.5f32, input.iter().map(|&x| (x as f32 * 1.5).round_ties_even().min(255.0) as u8).collect()),
        (-1.0f32, vec![0u8; 256]),
    ] {
        d_out.fill_bytes(common::POISON).unwrap();
        let f = Filter1d::<u8>::new(&gpu, &[scale], ConvOp::Correlate, Boundary::Zero).unwrap();
        f.run(&d_in.as_view(), &mut d_out.as_view_mut(), Shape::signal(256)).unwrap();
        assert_eq!(d_out.to_vec().unwrap(), want, "scale {scale}");
    }
    // 2.5 → 2 and 3.5 → 4 (ties to even), not 3 and 4 (half up).
    let f = Filter1d::<u8>::new(&gpu, &[0.5f32], ConvOp::Correlate, Boundary::Zero).unwrap();
    f.run(&d_in.as_view(), &mut d_out.as_view_mut(), Shape::signal(256)).unwrap();
    let got = d_out.to_vec().unwrap();
    assert_eq!((got[5], got[7]), (2, 4));
}

/// `Shape::vector_access` (no device): both bases on 16 bytes, and the
/// pitches too once there is more than one row.
#[test]
fn vector_access_rule() {
    let (a, b) = (DevicePtr(1 << 20), DevicePtr(3 << 20));
    for size in [1, 2, 4, 8] {
        // One row: any length, the pitch never applies.
        for n in [1, 3, 5, 1001, (1 << 27) + 1] {
            assert!(Shape::signal(n).vector_access(a, b, size), "size {size} n {n}");
            assert!(!Shape::signal(n).vector_access(DevicePtr(a.0 + size as u64), b, size), "size {size} n {n}");
            assert!(!Shape::signal(n).vector_access(a, DevicePtr(b.0 + 8), size), "size {size} n {n}");
        }
        let whole = 16 / size;
        assert!(Shape::new(2, whole).vector_access(a, b, size));
        assert!(Shape::new(3, 1).with_pitches(whole, 2 * whole).vector_access(a, b, size));
        assert!(!Shape::new(2, whole + 1).vector_access(a, b, size), "size {size}");
        assert!(!Shape::new(2, 1).with_pitches(whole, whole + 1).vector_access(a, b, size), "size {size}");
        assert!(!Shape::new(2, 1).with_pitches(whole + 1, whole).vector_access(a, b, size), "size {size}");
    }
}

/// Four threads, each with its own stream and type, over the same GPU.
#[test]
fn threads_on_their_own_streams() {
    let gpu = gpu_or_skip!();
    let bf = gpu.info().cc_major >= 8;
    std::thread::scope(|s| {
        for t in 0..4 {
            let gpu = gpu.clone();
            s.spawn(move || {
                let stream = gpu.new_stream().unwrap();
                let g = gpu.on(&stream).unwrap();
                let (mut rng, seed) = common::rng();
                for k in 0..6 {
                    let case = Case {
                        shape: Shape::new(3 + k, 2000 + 97 * t),
                        axis: if k % 2 == 0 { Axis::Rows } else { Axis::Columns },
                        w: [3, 7, 31, 40][(k + t) % 4],
                        per_signal: k % 3 == 0,
                        op: ConvOp::ALL[k % 2],
                        mode: Boundary::ALL[(k + t) % 5],
                        cval: 1.5,
                        origin: 0,
                        offset: 0,
                    };
                    match t {
                        0 => run_case::<f32>(&g, &mut rng, seed, case),
                        1 => run_case::<u8>(&g, &mut rng, seed, case),
                        2 if bf => run_case::<bf16>(&g, &mut rng, seed, case),
                        _ => run_case::<f64>(&g, &mut rng, seed, case),
                    }
                }
            });
        }
    });
}

/// Bad input gets a typed error naming the rule.
#[test]
fn bad_input_is_a_typed_error() {
    let gpu = gpu_or_skip!();
    // A mask type that does not match the data.
    let err = Filter1d::<u8>::new(&gpu, &[1.0f64, 2.0], ConvOp::Correlate, Boundary::Zero).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument { message, .. } if message.contains("f32 taps")), "{err}");
    let err = Filter1d::<f64>::new(&gpu, &[1.0f32], ConvOp::Correlate, Boundary::Zero).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument { message, .. } if message.contains("f64 taps")), "{err}");
    // Per-signal masks whose count differs from the signals.
    let f = Filter1d::<f32>::depthwise(&gpu, &[1.0f32; 12], 3, ConvOp::Correlate, Boundary::Zero).unwrap();
    let d_in = gpu.upload(&[1.0f32; 50]).unwrap();
    let mut d_out = gpu.alloc_zeroed::<f32>(50).unwrap();
    let err = f.run(&d_in.as_view(), &mut d_out.as_view_mut(), Shape::new(5, 10)).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { message, .. } if message.contains("4 masks for 5 signals")),
        "{err}"
    );
    // Along the columns there are 10 signals.
    let err = f.with_axis(0).unwrap().run(&d_in.as_view(), &mut d_out.as_view_mut(), Shape::new(5, 10)).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument { message, .. } if message.contains("4 masks for 10")), "{err}");
    // Masks that are not a whole number of widths.
    assert!(Filter1d::<f32>::depthwise(&gpu, &[1.0f32; 10], 3, ConvOp::Correlate, Boundary::Zero).is_err());
    // Origins outside scipy's range, at both ends.
    let f = Filter1d::<f32>::new(&gpu, &[1.0f32; 4], ConvOp::Convolve, Boundary::Zero).unwrap();
    for bad in [-3isize, 2] {
        let err = f.clone().with_origin(bad).unwrap_err();
        assert!(matches!(&err, Error::InvalidArgument { message, .. } if message.contains("-2 ..= 1")), "{err}");
    }
    // An axis a 2D array does not have.
    assert!(matches!(Axis::from_scipy(2), Err(Error::InvalidArgument { .. })));
    // Short buffers and pitches below the row length.
    let f = Filter1d::<f32>::new(&gpu, &[1.0f32; 3], ConvOp::Correlate, Boundary::Zero).unwrap();
    let err = f.run(&d_in.as_view(), &mut d_out.as_view_mut(), Shape::new(6, 10)).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { .. }), "{err}");
    let err = f.run(&d_in.as_view(), &mut d_out.as_view_mut(), Shape::new(2, 10).with_pitches(9, 10)).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    // Empty masks.
    assert!(Filter1d::<f32>::new(&gpu, &[] as &[f32], ConvOp::Correlate, Boundary::Zero).is_err());
}

/// What needs no GPU: scipy's origin rule and the kernels' names.
#[test]
fn origin_rule_and_kernel_names() {
    for w in 1..=9usize {
        let (lo, hi) = (-((w / 2) as isize), ((w - 1) / 2) as isize);
        for op in ConvOp::ALL {
            assert!(left_for_origin(w, lo - 1, op).is_err());
            assert!(left_for_origin(w, hi + 1, op).is_err());
            let lefts: Vec<usize> = (lo..=hi).map(|o| left_for_origin(w, o, op).unwrap()).collect();
            assert!(lefts.iter().all(|&l| l < w), "w {w} {op:?}: {lefts:?}");
            // Origin 0 is the plain operation's left.
            assert_eq!(left_for_origin(w, 0, op).unwrap(), op.correlation_taps(&vec![0u8; w]).1);
        }
    }
    assert_eq!(coalesce::conv::batch::kernel_name("bf16", Axis::Rows, 8), Some("conv1d_rows8_bf16"));
    assert_eq!(coalesce::conv::batch::kernel_name("u8", Axis::Columns, 0), Some("conv1d_cols_u8"));
    assert_eq!(coalesce::conv::batch::kernel_name("i8", Axis::Rows, 1), None);
}
