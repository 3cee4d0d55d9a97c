//! Threads sharing the GPU: clones of one `Gpu` and separate `Gpu`s on one
//! device, each thread with its own masks, tables and buffers, every
//! result checked against the CPU reference.
//!
//! Each thread draws its own random masks, so a mask that one thread's
//! launch reads while another thread's mask is in place shows up as a
//! wrong result, never as a silent pass.

mod common;

use std::sync::Barrier;

use coalesce::conv::reference::{Checked, compare, correlate1d_checked};
use coalesce::conv::reference2d::{Image, correlate2d_checked, separable_checked};
use coalesce::conv::{Boundary, Conv1d, Conv1dVariant, Conv2d, Conv2dVariant, ConvOp};
use coalesce::{ConstantVariant, DeviceView, DeviceViewMut, Gpu};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Threads per test and rounds per thread.
const THREADS: usize = 6;

fn rounds() -> usize {
    common::big(120, 6)
}

fn random_f32(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    assert!(n < 2 || v.iter().any(|&x| x != 0.0), "random input came out all zero");
    v
}

/// Runs `body(thread, gpu, rng)` on `THREADS` threads, each with its own
/// handle from `handle` and its own seeded generator, all starting
/// together; returns the wrong results each thread counted.
fn on_threads(
    seed: u64,
    handle: impl Fn() -> Gpu + Sync,
    body: impl Fn(usize, &Gpu, &mut StdRng) -> usize + Sync,
) -> Vec<usize> {
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (start, handle, body) = (&start, &handle, &body);
                s.spawn(move || {
                    let gpu = handle();
                    let mut rng = StdRng::seed_from_u64(seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    start.wait();
                    body(t, &gpu, &mut rng)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a test thread panicked")).collect()
    })
}

/// One thread's 1D work: its own 7-tap mask, the constant, tiled, fast
/// and rows kernels over `n` samples, `rounds()` times; returns the wrong results.
fn conv1d_rounds(t: usize, gpu: &Gpu, rng: &mut StdRng) -> usize {
    let n = 1 << 16;
    let mask = random_f32(rng, 7);
    let mode = Boundary::ALL[t % Boundary::ALL.len()];
    let conv = Conv1d::new(gpu, &mask, ConvOp::Correlate, mode).unwrap();
    let input = random_f32(rng, n);
    let want = correlate1d_checked(&input, conv.taps(), conv.left(), mode).unwrap();
    let d_in = gpu.upload(&input).unwrap();
    let mut d_out = gpu.alloc_zeroed::<f32>(n).unwrap();
    let mut wrong = 0;
    for r in 0..rounds() {
        for variant in [Conv1dVariant::Const, Conv1dVariant::Tiled, Conv1dVariant::Fast, Conv1dVariant::Rows] {
            d_out.fill_bytes(common::POISON).unwrap();
            conv.run(variant, &d_in.as_view(), &mut d_out.as_view_mut()).unwrap();
            if let Err((m, count)) = compare(&d_out.to_vec().unwrap(), &want) {
                if wrong == 0 {
                    eprintln!("thread {t} round {r} {}: {count} wrong outputs; first: {m}", variant.name());
                }
                wrong += 1;
            }
        }
    }
    wrong
}

/// One thread's 2D work: its own 5 × 5 mask (and a 4 × 3 one), the
/// constant, tiled and fast kernels on a 300 × 97 image.
fn conv2d_rounds(t: usize, gpu: &Gpu, rng: &mut StdRng) -> usize {
    let (w, h) = (300, 97);
    let mode = Boundary::ALL[t % Boundary::ALL.len()];
    let input = random_f32(rng, w * h);
    let d_in = gpu.upload(&input).unwrap();
    let mut d_out = gpu.alloc_zeroed::<f32>(w * h).unwrap();
    let mut convs: Vec<(Conv2d<f32>, Vec<Checked>)> = Vec::new();
    for (mw, mh) in [(5, 5), (4, 3)] {
        let conv = Conv2d::new(gpu, &random_f32(rng, mw * mh), mw, mh, ConvOp::Correlate, mode).unwrap();
        let (lx, ly) = conv.left();
        let want = correlate2d_checked(Image::dense(&input, w, h), conv.taps(), mw, mh, lx, ly, mode).unwrap();
        convs.push((conv, want));
    }
    let mut wrong = 0;
    for r in 0..rounds() / 2 {
        for (conv, want) in &convs {
            for variant in [Conv2dVariant::Const, Conv2dVariant::Tiled, Conv2dVariant::Fast] {
                d_out.fill_bytes(common::POISON).unwrap();
                conv.run(variant, &d_in.as_view(), &mut d_out.as_view_mut(), w, h, w).unwrap();
                if let Err((m, count)) = compare(&d_out.to_vec().unwrap(), want) {
                    if wrong == 0 {
                        eprintln!(
                            "thread {t} round {r} {:?} {}: {count} wrong; first: {m}",
                            conv.size(),
                            variant.name()
                        );
                    }
                    wrong += 1;
                }
            }
        }
    }
    wrong
}

/// One thread's 9 × 9 work (zero, nearest, reflect or mirror mode, by
/// thread) on a 128 × 9001 image: tall
/// enough that one wave of the band kernel (`conv2d_band9_f32`, 4-row
/// passes, each warp's band from the grid) is taller than the strips on
/// any device with fewer than 1125 of its blocks resident, so the fast
/// variant runs bands; its own mask, `rounds() / 4` times.
fn band_rounds(t: usize, gpu: &Gpu, rng: &mut StdRng) -> usize {
    let (w, h) = (128, 9001);
    let input = random_f32(rng, w * h);
    let d_in = gpu.upload(&input).unwrap();
    let mut d_out = gpu.alloc_zeroed::<f32>(w * h).unwrap();
    let mode = [Boundary::Zero, Boundary::Nearest, Boundary::Reflect, Boundary::Mirror][t % 4];
    let conv = Conv2d::new(gpu, &random_f32(rng, 81), 9, 9, ConvOp::Correlate, mode).unwrap();
    let want = correlate2d_checked(Image::dense(&input, w, h), conv.taps(), 9, 9, 4, 4, mode).unwrap();
    let mut wrong = 0;
    for r in 0..(rounds() / 4).max(2) {
        d_out.fill_bytes(common::POISON).unwrap();
        let plan = conv.run(Conv2dVariant::Fast, &d_in.as_view(), &mut d_out.as_view_mut(), w, h, w).unwrap();
        assert_eq!(plan.kernel, "conv2d_band9_f32", "thread {t}: {plan:?}");
        if let Err((m, count)) = compare(&d_out.to_vec().unwrap(), &want) {
            if wrong == 0 {
                eprintln!("thread {t} round {r} bands: {count} wrong; first: {m}");
            }
            wrong += 1;
        }
    }
    wrong
}

/// One thread's constant-table work: its own table, the broadcast and
/// serialized constant-memory kernels.
fn constant_rounds(t: usize, gpu: &Gpu, rng: &mut StdRng) -> usize {
    let values = common::random_u32(rng, coalesce::constant::TABLE_LEN);
    let table = gpu.constant_table(&values).unwrap();
    let (n, iters) = (4096, 16);
    let mut out = gpu.alloc_zeroed::<u32>(n).unwrap();
    let mut wrong = 0;
    for r in 0..rounds() {
        for variant in [ConstantVariant::ConstantBroadcast, ConstantVariant::ConstantSerialized] {
            out.fill_bytes(common::POISON).unwrap();
            table.run(variant, &mut out.as_view_mut(), iters).unwrap();
            let want = coalesce::constant::reference(&values, variant.pattern(), n, iters).unwrap();
            let got = out.to_vec().unwrap();
            if got != want {
                if wrong == 0 {
                    let bad = got.iter().zip(&want).filter(|(a, b)| a != b).count();
                    eprintln!("thread {t} round {r} {}: {bad} of {n} words wrong", variant.kernel());
                }
                wrong += 1;
            }
        }
    }
    wrong
}

fn assert_none_wrong(what: &str, seed: u64, wrong: &[usize]) {
    let total: usize = wrong.iter().sum();
    assert_eq!(total, 0, "{what}: {total} wrong results (per thread {wrong:?}; seed {seed})");
}

#[test]
fn clones_of_one_gpu_run_1d_convolutions_with_their_own_masks() {
    let gpu = gpu_or_skip!();
    let (_, seed) = common::rng();
    let wrong = on_threads(seed, || gpu.clone(), conv1d_rounds);
    assert_none_wrong("conv1d, clones of one Gpu", seed, &wrong);
}

#[test]
fn clones_of_one_gpu_run_2d_convolutions_with_their_own_masks() {
    let gpu = gpu_or_skip!();
    let (_, seed) = common::rng();
    let wrong = on_threads(seed, || gpu.clone(), conv2d_rounds);
    assert_none_wrong("conv2d, clones of one Gpu", seed, &wrong);
}

#[test]
fn threads_on_streams_of_their_own_run_9x9_bands_with_their_own_masks() {
    let gpu = gpu_or_skip!();
    let (_, seed) = common::rng();
    let wrong = on_threads(seed, || own_stream(&gpu), band_rounds);
    assert_none_wrong("9 x 9 bands, streams of one Gpu", seed, &wrong);
}

#[test]
fn clones_of_one_gpu_run_their_own_constant_tables() {
    let gpu = gpu_or_skip!();
    let (_, seed) = common::rng();
    let wrong = on_threads(seed, || gpu.clone(), constant_rounds);
    assert_none_wrong("constant tables, clones of one Gpu", seed, &wrong);
}

#[test]
fn separate_gpus_on_one_device_run_their_own_masks() {
    let _probe = gpu_or_skip!();
    let (_, seed) = common::rng();
    let wrong =
        on_threads(seed, || Gpu::new().unwrap(), |t, gpu, rng| conv1d_rounds(t, gpu, rng) + conv2d_rounds(t, gpu, rng));
    assert_none_wrong("separate Gpus", seed, &wrong);
}

/// A handle of `gpu` on a new stream of its own.
fn own_stream(gpu: &Gpu) -> Gpu {
    gpu.on(&gpu.new_stream().unwrap()).unwrap()
}

#[test]
fn threads_on_streams_of_their_own_run_their_own_masks_and_tables() {
    let gpu = gpu_or_skip!();
    let (_, seed) = common::rng();
    let wrong = on_threads(
        seed,
        || own_stream(&gpu),
        |t, g, rng| conv1d_rounds(t, g, rng) + conv2d_rounds(t, g, rng) + constant_rounds(t, g, rng),
    );
    assert_none_wrong("streams of one Gpu", seed, &wrong);
}

/// A buffer written by slow work on one stream and read right away on
/// another, with no event from the caller: the library orders the read
/// after the write (and the host read after both).
#[test]
fn a_buffer_written_on_one_stream_is_read_after_the_write_on_another() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let n = common::big(1 << 22, 1 << 14);
    let (writer, reader) = (own_stream(&gpu), own_stream(&gpu));
    // A wide mask from global memory: the first stage takes milliseconds.
    let wide = random_f32(&mut rng, 513);
    let narrow = random_f32(&mut rng, 5);
    let slow = Conv1d::new(&writer, &wide, ConvOp::Correlate, Boundary::Zero).unwrap();
    let fast = Conv1d::new(&reader, &narrow, ConvOp::Correlate, Boundary::Zero).unwrap();
    for round in 0..3 {
        let input = random_f32(&mut rng, n);
        let d_in = gpu.upload(&input).unwrap();
        let mut mid = gpu.alloc_zeroed::<f32>(n).unwrap();
        let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
        mid.fill_bytes(common::POISON).unwrap();
        out.fill_bytes(common::POISON).unwrap();
        slow.run(Conv1dVariant::Basic, &d_in.as_view(), &mut mid.as_view_mut()).unwrap();
        fast.run(Conv1dVariant::Fast, &mid.as_view(), &mut out.as_view_mut()).unwrap();
        // Read back on the third stream (the buffers' own).
        let got_mid = mid.to_vec().unwrap();
        let got = out.to_vec().unwrap();
        let want_mid = correlate1d_checked(&input, slow.taps(), slow.left(), Boundary::Zero).unwrap();
        if let Err((m, count)) = compare(&got_mid, &want_mid) {
            panic!("round {round} (seed {seed}): first stage: {count} wrong; first {m}");
        }
        // The second stage from the GPU's own first-stage values.
        let want = correlate1d_checked(&got_mid, fast.taps(), fast.left(), Boundary::Zero).unwrap();
        if let Err((m, count)) = compare(&got, &want) {
            panic!("round {round} (seed {seed}): second stage ran before the first: {count} wrong; first {m}");
        }
    }
}

/// Events recorded on one stream and waited for on another, and the
/// host-side event calls.
#[test]
fn events_order_work_across_streams() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let n = common::big(1 << 20, 1 << 12);
    let (s1, s2) = (gpu.new_stream().unwrap(), gpu.new_stream().unwrap());
    let (g1, g2) = (gpu.on(&s1).unwrap(), gpu.on(&s2).unwrap());
    let input = random_f32(&mut rng, n);
    let taps = random_f32(&mut rng, 9);
    let a = Conv1d::new(&g1, &taps, ConvOp::Correlate, Boundary::Zero).unwrap();
    let b = a.on(&s2).unwrap();
    let d_in = g1.upload(&input).unwrap();
    let mut mid = g1.alloc_zeroed::<f32>(n).unwrap();
    let mut out = g2.alloc_zeroed::<f32>(n).unwrap();
    a.run(Conv1dVariant::Tiled, &d_in.as_view(), &mut mid.as_view_mut()).unwrap();
    let done = s1.record().unwrap();
    s2.wait(&done).unwrap();
    b.run(Conv1dVariant::Fast, &mid.as_view(), &mut out.as_view_mut()).unwrap();
    let end = g2.record_event().unwrap();
    end.synchronize().unwrap();
    assert!(end.is_complete().unwrap() && done.is_complete().unwrap());
    assert!(end.ms_since(&done).unwrap() >= 0.0);
    let got = out.to_vec().unwrap();
    let got_once = mid.to_vec().unwrap();
    let want_once = correlate1d_checked(&input, &taps, taps.len() / 2, Boundary::Zero).unwrap();
    compare(&got_once, &want_once).unwrap_or_else(|(m, c)| panic!("seed {seed}: first pass {c} wrong; {m}"));
    // The second pass read the GPU's first-pass values, which may differ
    // from the f64 reference's rounding by its bound: compare against the
    // GPU's own intermediate.
    let want_gpu = correlate1d_checked(&got_once, &taps, taps.len() / 2, Boundary::Zero).unwrap();
    compare(&got, &want_gpu).unwrap_or_else(|(m, c)| panic!("seed {seed}: second pass {c} wrong; {m}"));
    // A stream of another handle's device is refused where devices differ;
    // here it is the same device, so binding works both ways.
    assert!(g2.on(&s1).is_ok() && s1.same(&g1.stream()) && !s1.same(&s2));
    s2.wait_for(&s1).unwrap();
    s2.synchronize().unwrap();
}

/// One convolution shared by threads, each running it on a stream of its
/// own (`Conv1d::on`), and separable filters with their own intermediate
/// buffer per stream.
#[test]
fn one_convolution_runs_on_many_streams_at_once() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let taps = random_f32(&mut rng, 31);
    let shared = Conv1d::new(&gpu, &taps, ConvOp::Convolve, Boundary::Wrap).unwrap();
    let blur = coalesce::conv::Separable::<f32>::gaussian(&gpu, 1.5, 2.5, Boundary::Mirror).unwrap();
    let wrong = on_threads(
        seed,
        || own_stream(&gpu),
        |t, g, rng| {
            let conv = shared.on(&g.stream()).unwrap();
            let sep = blur.on(&g.stream()).unwrap();
            let n = 40_000 + 17 * t;
            let input = random_f32(rng, n);
            let d_in = g.upload(&input).unwrap();
            let mut d_out = g.alloc_zeroed::<f32>(n).unwrap();
            let want = correlate1d_checked(&input, conv.taps(), conv.left(), Boundary::Wrap).unwrap();
            let (w, h) = (200, n / 200);
            let img = coalesce::conv::reference2d::Image::dense(&input[..w * h], w, h);
            let (tx, ty) = sep.taps();
            let want_sep = separable_checked(img, tx, ty, ConvOp::Correlate, Boundary::Mirror).unwrap();
            let mut wrong = 0;
            for _ in 0..rounds() / 4 {
                d_out.fill_bytes(common::POISON).unwrap();
                conv.run(Conv1dVariant::Auto, &d_in.as_view(), &mut d_out.as_view_mut()).unwrap();
                wrong += usize::from(compare(&d_out.to_vec().unwrap(), &want).is_err());
                d_out.fill_bytes(common::POISON).unwrap();
                sep.run(&d_in.view(0..w * h).unwrap(), &mut d_out.view_mut(0..w * h).unwrap(), w, h, w).unwrap();
                wrong += usize::from(compare(&d_out.to_vec().unwrap()[..w * h], &want_sep).is_err());
            }
            wrong
        },
    );
    assert_none_wrong("one convolution on many streams", seed, &wrong);
}

/// The rows kernels (`Conv1dVariant::Rows`) of one convolution shared by
/// threads: the even threads run it as it is (one stream and one work
/// counter for all of them, clones of one `Gpu`), the odd ones on streams
/// of their own (`Conv1d::on`, a counter each), over signals long enough
/// that the launches draw their tiles from the counter.
#[test]
fn rows_kernels_of_one_convolution_shared_by_threads_and_streams() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let shared = Conv1d::new(&gpu, &random_f32(&mut rng, 31), ConvOp::Convolve, Boundary::Reflect).unwrap();
    let n = common::big((3 << 22) + 5, (1 << 16) + 5);
    let wrong = on_threads(
        seed,
        || gpu.clone(),
        |t, g, rng| {
            let (own, g) = if t % 2 == 1 {
                let g = own_stream(g);
                (Some(shared.on(&g.stream()).unwrap()), g)
            } else {
                (None, g.clone())
            };
            let conv = own.as_ref().unwrap_or(&shared);
            let plan = conv.plan(Conv1dVariant::Rows, n).unwrap();
            assert!(n.div_ceil(plan.tile) >= 4 * plan.grid as usize || common::under_sanitizer(), "{plan:?}");
            let input = random_f32(rng, n - t);
            let want = correlate1d_checked(&input, conv.taps(), conv.left(), Boundary::Reflect).unwrap();
            let d_in = g.upload(&input).unwrap();
            let mut d_out = g.alloc_zeroed::<f32>(input.len()).unwrap();
            let mut wrong = 0;
            for r in 0..rounds().div_ceil(20) {
                d_out.fill_bytes(common::POISON).unwrap();
                conv.run(Conv1dVariant::Rows, &d_in.as_view(), &mut d_out.as_view_mut()).unwrap();
                if let Err((m, count)) = compare(&d_out.to_vec().unwrap(), &want) {
                    eprintln!("thread {t} round {r}: {count} wrong outputs; first: {m}");
                    wrong += 1;
                }
            }
            wrong
        },
    );
    assert_none_wrong("rows kernels shared by threads and streams", seed, &wrong);
}

/// One call of [`mixed_chains_back_to_back_match_the_chain_one_call_at_a_time`].
enum Step {
    One(Conv1d<f32>, Conv1dVariant),
    Two(Conv2d<f32>, Conv2dVariant),
    Sep(coalesce::conv::Separable<f32>),
}

impl Step {
    /// The same convolution on `stream`.
    fn on(&self, stream: &coalesce::Stream) -> Step {
        match self {
            Step::One(c, v) => Step::One(c.on(stream).unwrap(), *v),
            Step::Two(c, v) => Step::Two(c.on(stream).unwrap(), *v),
            Step::Sep(c) => Step::Sep(c.on(stream).unwrap()),
        }
    }

    /// Queues the call over the dense `w × h` image in `src`.
    fn run(&self, src: &DeviceView<f32>, dst: &mut DeviceViewMut<f32>, (w, h): (usize, usize)) -> String {
        match self {
            Step::One(c, v) => c.run(*v, src, dst).unwrap().kernel.to_string(),
            Step::Two(c, v) => c.run(*v, src, dst, w, h, w).unwrap().kernel.to_string(),
            Step::Sep(c) => c.run(src, dst, w, h, w).unwrap().kernels(),
        }
    }

    /// The CPU reference of the call on `input`.
    fn reference(&self, input: &[f32], (w, h): (usize, usize)) -> Vec<Checked> {
        match self {
            Step::One(c, _) => correlate1d_checked(input, c.taps(), c.left(), c.mode()).unwrap(),
            Step::Two(c, _) => {
                let ((mw, mh), (lx, ly)) = (c.size(), c.left());
                correlate2d_checked(Image::dense(input, w, h), c.taps(), mw, mh, lx, ly, c.mode()).unwrap()
            }
            Step::Sep(c) => {
                let (tx, ty) = c.taps();
                separable_checked(Image::dense(input, w, h), tx, ty, ConvOp::Correlate, c.mode()).unwrap()
            }
        }
    }
}

/// Different convolutions called back to back, each reading the image the
/// call before it wrote and writing the one that call read (a ping-pong of
/// two buffers): queued with no wait between them, with dependent launches
/// on and off (`Gpu::set_dependent_launches`: on sm_90 each kernel may then
/// start while the one before it drains), on this handle's stream,
/// alternating between two streams (ordered by the buffers' tracking) and
/// from threads on streams of their own, they end on the bits of the same
/// chain run one call at a time, each call of which matches the CPU
/// reference.
#[test]
fn mixed_chains_back_to_back_match_the_chain_one_call_at_a_time() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let size = (1000, common::big(301, 37));
    let n = size.0 * size.1;
    // Masks of unit norm keep the image's scale along the chain.
    let mut mask = |k: usize| {
        let m = random_f32(&mut rng, k);
        let norm = m.iter().map(|v| v * v).sum::<f32>().sqrt();
        m.into_iter().map(|v| v / norm).collect::<Vec<f32>>()
    };
    let (op, m) = (ConvOp::Correlate, Boundary::ALL);
    let mut steps = vec![
        Step::One(Conv1d::new(&gpu, &mask(31), op, m[0]).unwrap(), Conv1dVariant::Rows),
        Step::Two(Conv2d::new(&gpu, &mask(25), 5, 5, op, m[1]).unwrap(), Conv2dVariant::Fast),
        Step::One(Conv1d::new(&gpu, &mask(7), op, m[2]).unwrap(), Conv1dVariant::Fast),
        Step::Sep(coalesce::conv::Separable::new(&gpu, &mask(9), &mask(5), op, m[3]).unwrap()),
        Step::Two(Conv2d::new(&gpu, &mask(12), 4, 3, op, m[4]).unwrap(), Conv2dVariant::Tiled),
        Step::Two(Conv2d::new(&gpu, &mask(49), 7, 7, op, m[0]).unwrap(), Conv2dVariant::Auto),
    ];
    let wide = Conv1d::new(&gpu, &mask(63), op, m[1]).unwrap();
    if wide.tensor_support().is_ok() {
        steps.push(Step::One(wide, Conv1dVariant::Tensor));
    }
    let calls = 2 * steps.len();
    let input = random_f32(&mut rng, n);
    // The chain one call at a time, each call checked against the CPU
    // reference of its own input.
    gpu.set_dependent_launches(false);
    let mut images = vec![input.clone()];
    for call in 0..calls {
        let step = &steps[call % steps.len()];
        let src = gpu.upload(&images[call]).unwrap();
        let mut dst = gpu.alloc_zeroed::<f32>(n).unwrap();
        dst.fill_bytes(common::POISON).unwrap();
        let kernel = step.run(&src.as_view(), &mut dst.as_view_mut(), size);
        let got = dst.to_vec().unwrap();
        if let Err((m, count)) = compare(&got, &step.reference(&images[call], size)) {
            panic!("call {call} ({kernel}, seed {seed}): {count} outputs off the reference; first: {m}");
        }
        images.push(got);
    }
    let (last, before) = (&images[calls], &images[calls - 1]);
    // The same chain queued back to back; the odd calls on `other` when it
    // is given (each call then waits for the other stream's call before
    // it through the buffers' tracking).
    let chain = |g: &Gpu, steps: &[Step], other: Option<&coalesce::Stream>| {
        let odd: Option<Vec<Step>> = other.map(|s| steps.iter().map(|step| step.on(s)).collect());
        let mut a = g.upload(&input).unwrap();
        let mut b = g.alloc_zeroed::<f32>(n).unwrap();
        b.fill_bytes(common::POISON).unwrap();
        for call in 0..calls {
            let (src, dst) = if call % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
            let set = if call % 2 == 1 { odd.as_deref().unwrap_or(steps) } else { steps };
            set[call % steps.len()].run(&src.as_view(), &mut dst.as_view_mut(), size);
        }
        (a.to_vec().unwrap(), b.to_vec().unwrap())
    };
    let side = gpu.new_stream().unwrap();
    for dependent in [true, false] {
        gpu.set_dependent_launches(dependent);
        for rep in 0..3 {
            let (a, b) = chain(&gpu, &steps, None);
            assert!(&a == last && &b == before, "dependent {dependent}, pass {rep} (seed {seed})");
            let (a, b) = chain(&gpu, &steps, Some(&side));
            assert!(&a == last && &b == before, "dependent {dependent}, two streams, pass {rep} (seed {seed})");
        }
        std::thread::scope(|s| {
            for t in 0..3 {
                let (gpu, steps, chain) = (&gpu, &steps, &chain);
                s.spawn(move || {
                    let g = own_stream(gpu);
                    let mine: Vec<Step> = steps.iter().map(|step| step.on(&g.stream())).collect();
                    let (a, b) = chain(&g, &mine, None);
                    assert!(&a == last && &b == before, "dependent {dependent}, thread {t} (seed {seed})");
                });
            }
        });
    }
    gpu.set_dependent_launches(true);
}
