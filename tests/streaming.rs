//! Streaming filters (`coalesce::streaming`): data cut into chunks with
//! halos, through the GPU or the CPU references.
//!
//! * Seams: every chunk size from 1 unit up to several halo widths (and
//!   one chunk), every boundary mode with `cval`, origins at both ends,
//!   odd lengths shorter and longer than the halo; 1D signals, depthwise
//!   batches (whole rows and, under a small budget, row segments), filters
//!   along the columns and 2D images of 1 and 3 channels.
//! * CPU backend (runs without a GPU): the streamed result equals the
//!   rayon reference over the whole data, written back by the type's output
//!   rule, bit for bit.
//! * GPU backend: the streamed result equals the in-memory `Filter1d` /
//!   `Filter2d` result on the whole array bit for bit, from pageable and
//!   page-locked memory, with one worker and with two workers sharing the
//!   device; the in-memory result itself is checked against the reference
//!   bound. An allocation failing at one chunk stops the stream with
//!   `Error::Chunk` naming it, and the GPU works afterwards.
//! * Typed errors for bad budgets, slots, channels, masks and origins.

mod common;

use coalesce::conv::batch::{Axis, Filter1d, Sample, Shape, left_for_origin};
use coalesce::conv::channels::{Filter2d, Image};
use coalesce::conv::reference::Checked;
use coalesce::conv::reference_batch::{filter1d, filter2d, first_mismatch};
use coalesce::conv::{Boundary, ConvElem, ConvOp};
use coalesce::half::bf16;
use coalesce::streaming::{Backend, Inject, Kind, Layout, Spec, Streaming};
use coalesce::transfer::HostAllocFlags;
use coalesce::{Error, Gpu};
use rand::Rng;
use rand::rngs::StdRng;

const MODES: [Boundary; 5] = [Boundary::Zero, Boundary::Nearest, Boundary::Wrap, Boundary::Reflect, Boundary::Mirror];

/// Taps rounded to the accumulation type `A` (so every path sees the same).
fn taps<A: ConvElem>(rng: &mut StdRng, n: usize) -> Vec<f64> {
    let v: Vec<f64> = (0..n).map(|_| A::from_f64(rng.random_range(-1.0f64..1.0)).to_f64()).collect();
    assert!(n < 2 || v.iter().any(|&t| t != 0.0), "random taps came out all zero");
    v
}

/// One streaming case: the spec, the data's layout, what the reference
/// needs, and the halo (units) that sets the chunk sizes tried.
#[derive(Clone, Debug)]
struct Case {
    spec: Spec,
    layout: Layout,
    /// Correlation taps (all masks), mask `(width, height)`, `(left, top)`.
    corr: Vec<f64>,
    size: (usize, usize),
    left: (usize, usize),
    mode: Boundary,
    cval: f64,
    axis: Axis,
    halo: usize,
    /// Units along the cut (rows, or samples of a single signal).
    units: usize,
    op: ConvOp,
    origin: (isize, isize),
}

/// The reference over the whole data, written back by `S`'s output rule.
fn reference<S: Sample>(case: &Case, input: &[S]) -> Vec<S> {
    checked(case, input).iter().map(|c| S::from_f64(c.value)).collect()
}

/// The reference over the whole data in `f64`, each value with the bound
/// an accumulation in `S::Acc` meets.
fn checked<S: Sample>(case: &Case, input: &[S]) -> Vec<Checked> {
    let x: Vec<f64> = input.iter().map(|v| v.to_f64()).collect();
    let l = case.layout;
    if case.spec.is_2d() {
        let img = Image::new(l.cols, l.rows, l.channels).unwrap();
        filter2d::<S::Acc>(&x, img, &case.corr, case.size, case.left, case.mode, case.cval).unwrap()
    } else {
        let shape = Shape::new(l.rows, l.cols);
        filter1d::<S::Acc>(&x, shape, case.axis, &case.corr, case.size.0, case.left.0, case.mode, case.cval).unwrap()
    }
}

/// A 1D case: `masks` masks of `w` taps (1 or one per signal).
#[allow(clippy::too_many_arguments)]
fn case1d<A: ConvElem>(
    rng: &mut StdRng,
    layout: Layout,
    axis: Axis,
    w: usize,
    masks: usize,
    op: ConvOp,
    mode: Boundary,
    origin: isize,
) -> Case {
    let t = taps::<A>(rng, w * masks);
    let cval = 1.5;
    let spec = Spec::line(t.clone(), w, op)
        .with_mode(mode)
        .with_cval(cval)
        .with_origin(origin)
        .with_axis(axis.scipy() as isize)
        .unwrap();
    let corr: Vec<f64> = t.chunks(w).flat_map(|m| op.correlation_taps(m).0).collect();
    let left = left_for_origin(w, origin, op).unwrap();
    let units = if layout.rows == 1 && axis == Axis::Rows { layout.cols } else { layout.rows };
    Case {
        spec,
        layout,
        corr,
        size: (w, 1),
        left: (left, 0),
        mode,
        cval,
        axis,
        halo: w - 1,
        units,
        op,
        origin: (0, origin),
    }
}

/// A 2D case over `channels` channels with one mask per channel.
fn case2d<A: ConvElem>(rng: &mut StdRng, layout: Layout, (mw, mh): (usize, usize), mode: Boundary) -> Case {
    let ch = layout.channels;
    let t = taps::<A>(rng, mw * mh * ch);
    let (oy, ox) = (-((mh / 2) as isize), ((mw - 1) / 2) as isize);
    let op = ConvOp::Convolve;
    let spec = Spec::plane(t.clone(), mw, mh, op).with_mode(mode).with_cval(-2.0).with_origin_2d(oy, ox);
    let corr: Vec<f64> = t
        .chunks(mw * mh)
        .flat_map(|m| {
            let mut r = m.to_vec();
            r.reverse();
            r
        })
        .collect();
    let left = (left_for_origin(mw, ox, op).unwrap(), left_for_origin(mh, oy, op).unwrap());
    let (axis, halo, units, origin) = (Axis::Rows, mh - 1, layout.rows, (oy, ox));
    Case { spec, layout, corr, size: (mw, mh), left, mode, cval: -2.0, axis, halo, units, op, origin }
}

/// The cases of one element type: every mode, 1D signals (odd widths and
/// even, origins at both ends), a depthwise batch, a filter along the
/// columns, 2D images of 1 and 3 channels.
fn cases<S: Sample>(rng: &mut StdRng) -> Vec<Case> {
    let mut v = Vec::new();
    for (m, &mode) in MODES.iter().enumerate() {
        let (w, origin, op) = [(7, -3, ConvOp::Correlate), (4, 1, ConvOp::Convolve), (5, 2, ConvOp::Correlate)][m % 3];
        for n in [1usize, 3, 37] {
            v.push(case1d::<S::Acc>(rng, Layout::signal(n), Axis::Rows, w, 1, op, mode, origin));
        }
        v.push(case1d::<S::Acc>(rng, Layout::batch(5, 23), Axis::Rows, 3, 5, ConvOp::Correlate, mode, 0));
        v.push(case1d::<S::Acc>(rng, Layout::batch(29, 6), Axis::Columns, 5, 6, ConvOp::Convolve, mode, -1));
        v.push(case2d::<S::Acc>(rng, Layout::image(19, 7, 1), (3, 5), mode));
        v.push(case2d::<S::Acc>(rng, Layout::image(11, 5, 3), (2, 4), mode));
    }
    v
}

/// Chunk sizes tried: 1 up to several halo widths, and all in one.
fn chunk_sizes(case: &Case) -> Vec<usize> {
    let top = (3 * case.halo + 2).min(case.units);
    let mut v: Vec<usize> = (1..=top).collect();
    v.push(case.units.max(1));
    v
}

fn poison<S: Sample>(n: usize) -> Vec<S> {
    vec![S::from_f64(-77.25); n]
}

fn assert_same<S: Sample>(what: &str, got: &[S], want: &[S]) {
    assert_eq!(got.len(), want.len(), "{what}");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_f64().to_bits() != want[i].to_f64().to_bits()) {
        panic!("{what}: element {i} is {:?}, the whole-data result is {:?}", got[i], want[i]);
    }
}

fn cpu_matches_the_reference_at_every_chunk_size<S: Sample>() {
    let (mut rng, seed) = common::rng();
    for case in cases::<S>(&mut rng) {
        let len = case.layout.len().unwrap();
        let input: Vec<S> = common::samples(&mut rng, len);
        let want = reference(&case, &input);
        for units in chunk_sizes(&case) {
            let mut out = poison::<S>(len);
            let s = Streaming::new(case.spec.clone()).with_backend(Backend::Cpu).with_chunk_units(units);
            let report = s.run(case.layout, &input, &mut out).unwrap();
            assert_eq!(report.devices, ["CPU"]);
            assert_same(&format!("{} seed {seed} {case:?} chunks of {units}", S::NAME), &out, &want);
        }
    }
}

#[test]
fn cpu_streams_equal_the_reference_f32() {
    cpu_matches_the_reference_at_every_chunk_size::<f32>();
}

#[test]
fn cpu_streams_equal_the_reference_u8() {
    cpu_matches_the_reference_at_every_chunk_size::<u8>();
}

#[test]
fn cpu_streams_equal_the_reference_f64_bf16() {
    cpu_matches_the_reference_at_every_chunk_size::<f64>();
    cpu_matches_the_reference_at_every_chunk_size::<bf16>();
}

/// Rows longer than the budget allows go in segments with their halos.
#[test]
fn a_small_budget_cuts_rows_into_segments() {
    let (mut rng, seed) = common::rng();
    for &mode in &MODES {
        let case = case1d::<f32>(&mut rng, Layout::batch(3, 301), Axis::Rows, 9, 3, ConvOp::Correlate, mode, 2);
        let input: Vec<f32> = common::samples(&mut rng, 3 * 301);
        let want = reference(&case, &input);
        // 3 slots × (in + out) × 4 bytes × (chunk + 8 halo): 40 samples.
        let budget = 3 * 2 * 4 * 40;
        let mut out = poison::<f32>(input.len());
        let s = Streaming::new(case.spec.clone()).with_backend(Backend::Cpu).with_budget(budget);
        let report = s.run(case.layout, &input, &mut out).unwrap();
        assert_eq!(report.kind, Some(Kind::Segments), "{report:?}");
        assert_eq!(report.chunk_units, 32);
        assert_eq!(report.chunks, 3 * 301usize.div_ceil(32));
        assert_same(&format!("seed {seed} {mode:?}"), &out, &want);
    }
}

#[test]
fn bad_parameters_are_typed_errors() {
    let layout = Layout::image(40, 8, 1);
    let input = vec![1.0f32; 320];
    let mut out = vec![0f32; 320];
    let run = |s: Streaming, l: Layout, out: &mut [f32]| s.with_backend(Backend::Cpu).run(l, &input, out);
    let plane = || Spec::plane(vec![1.0; 9], 3, 3, ConvOp::Correlate);
    let msg = |r: coalesce::Result<_>| match r {
        Err(Error::InvalidArgument { message, .. }) => message,
        other => panic!("expected InvalidArgument, got {other:?}"),
    };
    // A band of 1 + 2 halo rows of 8 floats in 3 slots: 3·2·4·8·3 = 576 bytes.
    let m = msg(run(Streaming::new(plane()).with_budget(575), layout, &mut out));
    assert!(m.contains("budget of 575 bytes") && m.contains("576 bytes"), "{m}");
    assert!(run(Streaming::new(plane()).with_budget(576), layout, &mut out).is_ok());
    let m = msg(run(Streaming::new(plane()).with_slots(2), layout, &mut out));
    assert!(m.contains("at least 3"), "{m}");
    let m = msg(run(Streaming::new(plane()), Layout::image(16, 10, 2), &mut out));
    assert!(m.contains("2 channels"), "{m}");
    let m = msg(run(Streaming::new(Spec::line(vec![1.0; 6], 3, ConvOp::Correlate)), Layout::batch(4, 80), &mut out));
    assert!(m.contains("2 masks for 4 signals"), "{m}");
    let m = msg(run(Streaming::new(Spec::line(vec![1.0; 4], 4, ConvOp::Correlate).with_origin(2)), layout, &mut out));
    assert!(m.contains("origin 2 is out of range"), "{m}");
    let m = msg(run(Streaming::new(plane()).with_chunk_units(0), layout, &mut out));
    assert!(m.contains("0 units"), "{m}");
    match run(Streaming::new(plane()), layout, &mut out[..319]) {
        Err(Error::LengthMismatch { expected: 320, got: 319, .. }) => {}
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
}

/// The in-memory result on the GPU: `Filter1d` / `Filter2d` over the
/// whole array, checked against the reference bound.
fn in_memory<S: Sample>(gpu: &Gpu, case: &Case, input: &[S]) -> Vec<S> {
    let l = case.layout;
    let d_in = gpu.upload(input).unwrap();
    let mut d_out = gpu.upload(&poison::<S>(input.len())).unwrap();
    let acc = |t: &[f64]| -> Vec<S::Acc> { t.iter().map(|&v| S::Acc::from_f64(v)).collect() };
    match case.spec.mask() {
        coalesce::streaming::Mask::Line { taps, width } => {
            let f = Filter1d::<S>::depthwise(gpu, &acc(taps), *width, case.op, case.mode)
                .unwrap()
                .with_cval(case.cval)
                .with_origin(case.origin.1)
                .unwrap()
                .with_axis(case.axis.scipy() as isize)
                .unwrap();
            let shape = Shape::new(l.rows, l.cols);
            f.run(&d_in.as_view(), &mut d_out.as_view_mut(), shape).unwrap();
        }
        coalesce::streaming::Mask::Plane { taps, width, height } => {
            let f = Filter2d::<S>::per_channel(gpu, &acc(taps), *width, *height, case.op, case.mode)
                .unwrap()
                .with_cval(case.cval)
                .with_origin(case.origin.0, case.origin.1)
                .unwrap();
            let img = Image::new(l.cols, l.rows, l.channels).unwrap();
            f.run(&d_in.as_view(), &mut d_out.as_view_mut(), img).unwrap();
        }
        m => panic!("no in-memory form for {m:?}"),
    }
    let got = d_out.to_vec().unwrap();
    if let Some((i, g, want)) = first_mismatch(&got, &checked(case, input)) {
        panic!("{} in-memory {case:?}: element {i} is {g}, reference {want:?}", S::NAME);
    }
    got
}

fn gpu_streams_equal_the_in_memory_result<S: Sample>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    for case in cases::<S>(&mut rng) {
        let len = case.layout.len().unwrap();
        let input: Vec<S> = common::samples(&mut rng, len);
        let want = in_memory(gpu, &case, &input);
        for units in chunk_sizes(&case) {
            let what = format!("{} seed {seed} {case:?} chunks of {units}", S::NAME);
            let s = Streaming::new(case.spec.clone())
                .with_backend(Backend::Handles(vec![gpu.clone()]))
                .with_chunk_units(units);
            let mut out = poison::<S>(len);
            let report = s.run(case.layout, &input, &mut out).unwrap();
            assert_eq!(report.staged, [(true, true)], "{what}");
            assert_same(&what, &out, &want);
        }
        // Page-locked in and out (direct copies), two workers on the device.
        let flags = HostAllocFlags { portable: true, ..HostAllocFlags::DEFAULT };
        let mut pin_in = gpu.alloc_pinned_with::<S>(len, flags).unwrap();
        pin_in.copy_from_slice(&input);
        let mut pin_out = gpu.alloc_pinned_with::<S>(len, flags).unwrap();
        pin_out.copy_from_slice(&poison::<S>(len));
        let units = (case.halo + 1).min(case.units).max(1);
        let two = Backend::Handles(vec![gpu.clone(), gpu.clone()]);
        let s = Streaming::new(case.spec.clone()).with_backend(two).with_chunk_units(units);
        let report = s.run(case.layout, &pin_in, &mut pin_out).unwrap();
        assert_eq!(report.staged, [(false, false), (false, false)], "{case:?}");
        assert_eq!(report.per_worker.iter().sum::<usize>(), report.chunks);
        assert_same(&format!("{} seed {seed} {case:?} pinned, 2 workers", S::NAME), &pin_out, &want);
    }
}

#[test]
fn gpu_streams_equal_in_memory_f32_u8() {
    let gpu = gpu_or_skip!();
    gpu_streams_equal_the_in_memory_result::<f32>(&gpu);
    gpu_streams_equal_the_in_memory_result::<u8>(&gpu);
}

#[test]
fn gpu_streams_equal_in_memory_f64_bf16() {
    let gpu = gpu_or_skip!();
    gpu_streams_equal_the_in_memory_result::<f64>(&gpu);
    if gpu.info().cc_major >= 8 {
        gpu_streams_equal_the_in_memory_result::<bf16>(&gpu);
    }
}

/// A large signal: the budget sets the chunks (several, overlapped), the
/// timeline has three ordered spans per chunk, progress reaches the total.
#[test]
fn gpu_large_signal_under_a_budget() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let n = common::big((1 << 24) + 12_345, (1 << 18) + 123);
    let input: Vec<f32> = common::samples(&mut rng, n);
    let t = taps::<f32>(&mut rng, 31);
    let spec = Spec::line(t, 31, ConvOp::Correlate).with_mode(Boundary::Wrap);
    let f = Filter1d::<f32>::depthwise(&gpu, &spec_taps(&spec), 31, ConvOp::Correlate, Boundary::Wrap).unwrap();
    let d_in = gpu.upload(&input).unwrap();
    let mut d_out = gpu.alloc_zeroed::<f32>(n).unwrap();
    f.run(&d_in.as_view(), &mut d_out.as_view_mut(), Shape::signal(n)).unwrap();
    let want = d_out.to_vec().unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = done.clone();
    let budget = n; // bytes: about n / 24 samples per chunk
    let s = Streaming::new(spec)
        .with_backend(Backend::Gpus(vec![0]))
        .with_budget(budget)
        .with_timeline(true)
        .with_progress(std::sync::Arc::new(move |b| {
            seen.fetch_max(b, std::sync::atomic::Ordering::SeqCst);
        }));
    let mut out = poison::<f32>(n);
    let report = s.run(Layout::signal(n), &input, &mut out).unwrap();
    assert_eq!(report.kind, Some(Kind::Segments));
    assert!(report.chunks >= 20, "{report:?}");
    assert_eq!(report.spans.len(), 3 * report.chunks);
    for w in report.spans.chunks(3) {
        assert!(w[0].start_ms <= w[0].end_ms && w[0].end_ms <= w[1].end_ms && w[1].end_ms <= w[2].end_ms, "{w:?}");
    }
    assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), (4 * n) as u64);
    assert_same(&format!("seed {seed}"), &out, &want);
}

fn spec_taps(spec: &Spec) -> Vec<f32> {
    match spec.mask() {
        coalesce::streaming::Mask::Line { taps, .. } => taps.iter().map(|&v| v as f32).collect(),
        m => panic!("{m:?}"),
    }
}

/// An allocation failing at chunk 5 stops the stream with the chunk named;
/// nothing hangs and the device keeps working.
#[test]
fn gpu_failed_allocation_names_the_chunk() {
    let gpu = gpu_or_skip!();
    let (mut rng, _) = common::rng();
    let n = 10_000;
    let input: Vec<f32> = common::samples(&mut rng, n);
    let spec = Spec::line(taps::<f32>(&mut rng, 5), 5, ConvOp::Correlate);
    let mut out = poison::<f32>(n);
    for workers in [vec![0], vec![0, 0]] {
        let s = Streaming::new(spec.clone())
            .with_backend(Backend::Gpus(workers.clone()))
            .with_chunk_units(500)
            .with_injected(5, Inject::Alloc);
        match s.run(Layout::signal(n), &input, &mut out) {
            Err(Error::Chunk { chunk: 5, chunks: 20, device, source }) => {
                assert_eq!(device, "GPU 0");
                assert!(matches!(*source, Error::OutOfMemory { .. } | Error::Driver(_)), "{source:?}");
            }
            other => panic!("{workers:?}: expected Error::Chunk for chunk 5, got {other:?}"),
        }
    }
    let s = Streaming::new(spec).with_backend(Backend::Gpus(vec![0])).with_chunk_units(500);
    s.run(Layout::signal(n), &input, &mut out).unwrap();
    assert!(gpu.fault().is_none());
}

/// Threads share one handle, each streaming its own data with its own
/// spec in chunks of its own size (its workers queue on streams of their
/// own); every result is checked against the reference bound.
#[test]
fn gpu_threads_stream_on_one_handle() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let all = cases::<f32>(&mut rng);
    std::thread::scope(|scope| {
        for t in 0..6usize {
            let (gpu, all) = (gpu.clone(), &all);
            let mut rng = <StdRng as rand::SeedableRng>::seed_from_u64(seed.wrapping_add(t as u64));
            scope.spawn(move || {
                for k in 0..12 {
                    let case = &all[(t * 12 + k) % all.len()];
                    let len = case.layout.len().unwrap();
                    let input: Vec<f32> = common::samples(&mut rng, len);
                    let want = checked(case, &input);
                    let units = rng.random_range(1..=case.units.max(1));
                    let mut out = poison::<f32>(len);
                    Streaming::new(case.spec.clone())
                        .with_backend(Backend::Handles(vec![gpu.clone()]))
                        .with_chunk_units(units)
                        .run(case.layout, &input, &mut out)
                        .unwrap();
                    if let Some((i, g, c)) = first_mismatch(&out, &want) {
                        panic!("thread {t} seed {seed} {case:?} chunks of {units}: element {i} is {g}, want {c:?}");
                    }
                }
            });
        }
    });
}

mod properties {
    //! Random layouts, masks, modes, origins, chunk sizes and budgets on
    //! the CPU backend: the streamed result equals the reference over the
    //! whole data bit for bit, or the call is a typed error; never a panic.

    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    struct Input {
        layout: Layout,
        axis: Axis,
        two_d: bool,
        w: usize,
        h: usize,
        mode: Boundary,
        op: ConvOp,
        origin: (isize, isize),
        per: bool,
        units: Option<usize>,
        budget: Option<usize>,
        seed: u64,
    }

    fn input() -> impl Strategy<Value = Input> {
        let shape = (1usize..=40, 1usize..=40, prop::sample::select(vec![1usize, 3, 4]), 0u8..4);
        let mask = (1usize..=9, 1usize..=6, 0usize..=8, 0usize..=8, any::<bool>());
        let how =
            (prop::option::of(1usize..=50), prop::option::of(0usize..=4000), any::<u64>(), 0usize..5, any::<bool>());
        (shape, mask, how).prop_map(|((rows, cols, ch, kind), (w, h, ox, oy, per), (units, budget, seed, m, conv))| {
            let two_d = kind == 3;
            let (layout, axis) = match kind {
                0 => (Layout::signal(rows * cols), Axis::Rows),
                1 => (Layout::batch(rows, cols), Axis::Rows),
                2 => (Layout::batch(rows, cols), Axis::Columns),
                _ => (Layout::image(rows, cols, ch), Axis::Rows),
            };
            let h = if two_d { h } else { 1 };
            // Origins anywhere in scipy's range for each width.
            let range = |w: usize, k: usize| -((w / 2) as isize) + (k % w) as isize;
            let origin = (if two_d { range(h, oy) } else { 0 }, range(w, ox));
            let op = if conv { ConvOp::Convolve } else { ConvOp::Correlate };
            Input {
                layout,
                axis,
                two_d,
                w,
                h,
                mode: MODES[m],
                op,
                origin,
                per,
                units,
                budget: budget.map(|b| b * 8),
                seed,
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn streamed_equals_the_whole_data_reference(c in input()) {
            let mut rng = <StdRng as rand::SeedableRng>::seed_from_u64(c.seed);
            let l = c.layout;
            let masks = match (c.two_d, c.per, c.axis) {
                (false, false, _) | (true, false, _) => 1,
                (true, true, _) => l.channels,
                (false, true, Axis::Rows) => l.rows,
                (false, true, Axis::Columns) => l.cols,
            };
            let t = taps::<f32>(&mut rng, c.w * c.h * masks);
            let spec = if c.two_d {
                Spec::plane(t.clone(), c.w, c.h, c.op).with_origin_2d(c.origin.0, c.origin.1)
            } else {
                Spec::line(t.clone(), c.w, c.op).with_origin(c.origin.1).with_axis(c.axis.scipy() as isize).unwrap()
            }
            .with_mode(c.mode)
            .with_cval(-0.75);
            let corr: Vec<f64> = match (c.two_d, c.op) {
                (true, ConvOp::Correlate) => t.clone(),
                (true, ConvOp::Convolve) => t.chunks(c.w * c.h).flat_map(|m| m.iter().rev().copied()).collect(),
                (false, op) => t.chunks(c.w).flat_map(|m| op.correlation_taps(m).0).collect(),
            };
            let left = (
                left_for_origin(c.w, c.origin.1, c.op).unwrap(),
                if c.two_d { left_for_origin(c.h, c.origin.0, c.op).unwrap() } else { 0 },
            );
            let case = Case {
                spec: spec.clone(),
                layout: l,
                corr,
                size: (c.w, c.h),
                left,
                mode: c.mode,
                cval: -0.75,
                axis: c.axis,
                halo: 0,
                units: 0,
                op: c.op,
                origin: c.origin,
            };
            let len = l.len().unwrap();
            let x: Vec<f32> = common::samples(&mut rng, len);
            let want = reference(&case, &x);
            let mut s = Streaming::new(spec).with_backend(Backend::Cpu);
            if let Some(u) = c.units {
                s = s.with_chunk_units(u);
            }
            if let Some(b) = c.budget {
                s = s.with_budget(b);
            }
            let mut out = poison::<f32>(len);
            match s.run(l, &x, &mut out) {
                Ok(r) => {
                    prop_assert!(r.chunks >= 1 && r.chunk_units >= 1, "{r:?}");
                    assert_same(&format!("{c:?} {r:?}"), &out, &want);
                }
                Err(Error::InvalidArgument { message, .. }) => {
                    // Only a budget too small for the chunk or its halo.
                    prop_assert!(c.budget.is_some() && message.contains("budget"), "{message}");
                }
                Err(e) => prop_assert!(false, "{c:?}: {e}"),
            }
        }
    }
}

/// 10^5 depthwise rows cut into chunks of whole rows by a budget: the CPU
/// backend equals the reference and, on a GPU, the stream equals the
/// in-memory filter, bit for bit.
#[test]
fn a_batch_of_100000_rows() {
    let (mut rng, seed) = common::rng();
    let layout = Layout::batch(100_000, 9);
    let case = case1d::<f32>(&mut rng, layout, Axis::Rows, 5, 100_000, ConvOp::Convolve, Boundary::Mirror, 1);
    let input: Vec<f32> = common::samples(&mut rng, layout.len().unwrap());
    let mut out = poison::<f32>(input.len());
    // 3 slots × (in + out) × 4 bytes × 9 samples × 1000 rows.
    let budget = 3 * 2 * 4 * 9 * 1000;
    let s = Streaming::new(case.spec.clone()).with_budget(budget);
    let r = s.clone().with_backend(Backend::Cpu).run(layout, &input, &mut out).unwrap();
    assert_eq!((r.kind, r.chunk_units, r.chunks), (Some(Kind::Rows), 1000, 100));
    assert_same(&format!("CPU seed {seed}"), &out, &reference(&case, &input));
    let gpu = gpu_or_skip!();
    let want = in_memory(&gpu, &case, &input);
    let mut out = poison::<f32>(input.len());
    let r = s.with_backend(Backend::Handles(vec![gpu.clone()])).run(layout, &input, &mut out).unwrap();
    assert_eq!(r.chunks, 100);
    assert_same(&format!("GPU seed {seed}"), &out, &want);
}
