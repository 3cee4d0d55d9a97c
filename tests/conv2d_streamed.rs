//! The streamed separable kernels (`conv2d_seps_f32_h*`, what
//! `Separable<f32>` runs on sm_80 and newer) against the rayon reference,
//! plus the CPU checks of their plans.
//!
//! GPU (skipped with one line each when there is none):
//! * every built window (half widths 1 … 20) with masks that fill it and
//!   masks that leave zero taps (narrower, even, off centre), every mode,
//!   correlate and convolve, on images around the strip (128 columns) and
//!   chunk (8 rows) edges, dense and pitched; fresh random inputs, NaN in
//!   the input's row padding, poisoned outputs whose padding must stay
//!   poisoned;
//! * layouts the kernels do not take (a pitch that is not a multiple of 4,
//!   a view starting off a 16-byte boundary) run the tiled fused kernel,
//!   and the plan says so;
//! * NaN and ±infinity inputs come out as in the reference, including
//!   where a zero tap meets an infinity (the recomputed outputs);
//! * threads on their own streams.
//!
//! CPU: the windows the masks take, the bands, and the refusals.

mod common;

use coalesce::conv::Boundary;
use coalesce::conv::ConvOp;
use coalesce::conv::conv2d::{
    SEPS_CHUNK, SEPS_HALVES, SEPS_KERNELS, Separable, plan_streamed, seps_band_rows, seps_kernel,
};
use coalesce::conv::reference::{Checked, compare};
use coalesce::conv::reference2d::{Image, separable_checked};
use coalesce::{DeviceLimits, Gpu};
use common::POISON;
use rand::Rng;
use rand::rngs::StdRng;

fn random_vec(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-2.0f32..2.0)).collect();
    assert!(v.iter().any(|&x| x != 0.0), "random input came out all zero");
    v
}

/// A pitched image: random inside, NaN in the row padding and after the
/// last row. Returns (pitched, dense).
fn pitched_input(rng: &mut StdRng, w: usize, h: usize, pitch: usize) -> (Vec<f32>, Vec<f32>) {
    let dense = random_vec(rng, w * h);
    let mut data = vec![f32::NAN; (h - 1) * pitch + w + 5];
    for y in 0..h {
        data[y * pitch..y * pitch + w].copy_from_slice(&dense[y * w..(y + 1) * w]);
    }
    (data, dense)
}

/// Runs `sep` over `input` laid out as `(w, h, pitch)` starting `offset`
/// elements into the buffers, checks the image against `want` and that
/// nothing else was written; returns the fused kernel that ran.
fn run_checked(
    gpu: &Gpu,
    sep: &Separable<f32>,
    input: &[f32],
    offset: usize,
    want: &[Checked],
    (w, h, pitch): (usize, usize, usize),
    ctx: &str,
) -> String {
    let mut padded = vec![f32::NAN; offset];
    padded.extend_from_slice(input);
    let src = gpu.upload(&padded).unwrap();
    let mut dst = gpu.alloc_zeroed::<f32>(padded.len()).unwrap();
    dst.fill_bytes(POISON).unwrap();
    let n = padded.len();
    let src_v = src.view(offset..n).unwrap();
    let plan =
        sep.run(&src_v, &mut dst.view_mut(offset..n).unwrap(), w, h, pitch).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let got = dst.to_vec().unwrap();
    let mut image = Vec::with_capacity(w * h);
    for (i, v) in got.iter().enumerate() {
        let j = i.wrapping_sub(offset);
        let (y, x) = (j / pitch, j % pitch);
        if i >= offset && y < h && x < w {
            image.push(*v);
        } else {
            assert!(v.to_ne_bytes().iter().all(|&b| b == POISON), "{ctx}: element {i} outside the image was written");
        }
    }
    let kernel = plan.kernels();
    if let Err((m, count)) = compare(&image, want) {
        panic!("{ctx} {kernel}: {count} outputs wrong; first at (x={}, y={}): {m}", m.index % w, m.index / w);
    }
    kernel
}

/// Whether the streamed kernels can run here (sm_80 and newer).
fn streamed_here(gpu: &Gpu) -> bool {
    if gpu.info().cc_major < 8 {
        println!(
            "streamed separable kernels: sm_{}{} has no cp.async; checked the fallback only",
            gpu.info().cc_major,
            gpu.info().cc_minor
        );
        return false;
    }
    true
}

#[test]
fn every_window_mode_and_shape() {
    let gpu = gpu_or_skip!();
    let streamed = streamed_here(&gpu);
    let (mut rng, seed) = common::rng();
    let shapes = [(1, 1, 4), (5, 3, 8), (127, 9, 128), (129, 17, 132), (300, 41, 300), (257, 70, 260)];
    let shapes = if common::under_sanitizer() { &shapes[..4] } else { &shapes[..] };
    for h in SEPS_HALVES {
        let k = 2 * h + 1;
        // The window filled; an even row mask and a narrower column mask
        // (zero taps in the window); a row mask that reaches the whole
        // window on one side only.
        let masks = [(k, k), (2 * h, (h + 1).max(1)), (h + 1, k)];
        for (mw, mh) in masks {
            let (mx, my) = (random_vec(&mut rng, mw), random_vec(&mut rng, mh));
            for &(w, hh, pitch) in shapes {
                let (input, dense) = pitched_input(&mut rng, w, hh, pitch);
                for mode in Boundary::ALL {
                    for op in ConvOp::ALL {
                        let ctx = format!("h{h} masks {mw}x{mh} {w}x{hh} pitch {pitch} {mode:?} {op:?} seed={seed}");
                        let sep = Separable::new(&gpu, &mx, &my, op, mode).unwrap();
                        let want = separable_checked(Image::dense(&dense, w, hh), &mx, &my, op, mode).unwrap();
                        let kernel = run_checked(&gpu, &sep, &input, 0, &want, (w, hh, pitch), &ctx);
                        let (lx, ly) = sep.left();
                        let expect =
                            if streamed { seps_kernel((mw, lx), (mh, ly)).unwrap().1 } else { "conv2d_sep_f32" };
                        assert_eq!(kernel, expect, "{ctx}");
                    }
                }
            }
        }
    }
}

#[test]
fn layouts_the_kernels_do_not_take_run_the_tiled_kernel() {
    let gpu = gpu_or_skip!();
    let streamed = streamed_here(&gpu);
    let (mut rng, seed) = common::rng();
    let (mx, my) = (random_vec(&mut rng, 7), random_vec(&mut rng, 5));
    let sep = Separable::new(&gpu, &mx, &my, ConvOp::Correlate, Boundary::Reflect).unwrap();
    // (w, h, pitch, view offset in elements, streamed)
    for (w, h, pitch, offset, fits) in [(130, 20, 130, 0, false), (130, 20, 132, 1, false), (130, 20, 132, 4, true)] {
        let (input, dense) = pitched_input(&mut rng, w, h, pitch);
        let want =
            separable_checked(Image::dense(&dense, w, h), &mx, &my, ConvOp::Correlate, Boundary::Reflect).unwrap();
        let ctx = format!("{w}x{h} pitch {pitch} offset {offset} seed={seed}");
        let kernel = run_checked(&gpu, &sep, &input, offset, &want, (w, h, pitch), &ctx);
        assert_eq!(kernel, if fits && streamed { "conv2d_seps_f32_h3" } else { "conv2d_sep_f32" }, "{ctx}");
    }
}

#[test]
fn nan_and_infinity_come_out_as_in_the_reference() {
    let gpu = gpu_or_skip!();
    streamed_here(&gpu);
    let (mut rng, seed) = common::rng();
    let (w, h) = (200, 40);
    let (mut input, mut dense) = pitched_input(&mut rng, w, h, w);
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    let spots = [(0, 0), (w - 1, h - 1), (0, 20), (100, 0), (127, 10), (128, 10), (60, 30), (61, 30), (150, 25)];
    for (i, &(x, y)) in spots.iter().enumerate() {
        input[y * w + x] = specials[i % 3];
        dense[y * w + x] = specials[i % 3];
    }
    // 4 x 2, 2 x 4 and 16 x 13 leave zero taps in their windows: there
    // 0 · ∞ would be NaN where the reference has ±∞. 15 x 15 and 16 x 13
    // run kernels whose odd bands walk up (rows 8 … 15 and 24 … 31 here).
    for (mw, mh) in [(3, 3), (4, 2), (2, 4), (9, 9), (15, 15), (16, 13)] {
        let (mx, my) = (random_vec(&mut rng, mw), random_vec(&mut rng, mh));
        for mode in Boundary::ALL {
            for op in ConvOp::ALL {
                let want = separable_checked(Image::dense(&dense, w, h), &mx, &my, op, mode).unwrap();
                assert!(want.iter().any(|c| c.value.is_nan()) && want.iter().any(|c| c.value.is_infinite()));
                let sep = Separable::new(&gpu, &mx, &my, op, mode).unwrap();
                let ctx = format!("non-finite {mw}x{mh} {mode:?} {op:?} seed={seed}");
                run_checked(&gpu, &sep, &input, 0, &want, (w, h, w), &ctx);
            }
        }
    }
}

#[test]
fn threads_on_their_own_streams() {
    let gpu = gpu_or_skip!();
    streamed_here(&gpu);
    let (mut rng, seed) = common::rng();
    let (w, h) = (common::big(1000, 300), common::big(517, 101));
    let (mx, my) = (random_vec(&mut rng, 31), random_vec(&mut rng, 31));
    let sep = Separable::new(&gpu, &mx, &my, ConvOp::Correlate, Boundary::Mirror).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (gpu, sep, mx, my) = (&gpu, &sep, &mx, &my);
            let mut rng = <StdRng as rand::SeedableRng>::seed_from_u64(seed ^ t);
            s.spawn(move || {
                let stream = gpu.new_stream().unwrap();
                let (g, sep) = (gpu.on(&stream).unwrap(), sep.on(&stream).unwrap());
                for round in 0..3 {
                    let (input, dense) = pitched_input(&mut rng, w, h, w);
                    let want =
                        separable_checked(Image::dense(&dense, w, h), mx, my, ConvOp::Correlate, Boundary::Mirror)
                            .unwrap();
                    run_checked(
                        &g,
                        &sep,
                        &input,
                        0,
                        &want,
                        (w, h, w),
                        &format!("thread {t} round {round} seed={seed}"),
                    );
                }
            });
        }
    });
}

#[test]
fn windows_bands_and_refusals_without_a_gpu() {
    // The narrowest window that reaches as far as the mask on either side.
    assert_eq!(seps_kernel((3, 1), (3, 1)), Some((1, "conv2d_seps_f32_h1")));
    assert_eq!(seps_kernel((4, 2), (1, 0)), Some((2, "conv2d_seps_f32_h2")));
    assert_eq!(seps_kernel((5, 2), (11, 5)), Some((5, "conv2d_seps_f32_h5")));
    assert_eq!(seps_kernel((15, 7), (13, 6)), Some((7, "conv2d_seps_f32_h7")));
    assert_eq!(seps_kernel((13, 6), (13, 6)), Some((6, "conv2d_seps_f32_h6")));
    assert_eq!(seps_kernel((31, 15), (31, 15)), Some((15, "conv2d_seps_f32_h15")));
    assert_eq!(seps_kernel((41, 20), (3, 1)), Some((20, "conv2d_seps_f32_h20")));
    assert_eq!(seps_kernel((42, 21), (3, 1)), None);
    assert_eq!(seps_kernel((2, 0), (1, 0)), Some((1, "conv2d_seps_f32_h1")));
    assert_eq!(SEPS_KERNELS.map(|k| k.0), SEPS_HALVES);
    let h100 = DeviceLimits::H100;
    // 8192² at 31 × 31 on 132 SMs, 9 blocks each: bands of 8H = 120 rows
    // (69 of them) across 64 strips.
    let p = plan_streamed::<f32>(&h100, 9, 132, 9, (31, 15), (31, 15), (8192, 8192)).unwrap();
    assert_eq!((p.kernel, p.block, p.grid, p.tile), ("conv2d_seps_f32_h15", (32, 1), (64 * 69, 1), (128, 120)));
    // Up to H = 5, bands of 16 rows; 24 at H = 6; 8H beyond.
    let p = plan_streamed::<f32>(&h100, 9, 132, 16, (9, 4), (9, 4), (8192, 8192)).unwrap();
    assert_eq!((p.grid, p.tile), ((64 * 512, 1), (128, 16)));
    let p = plan_streamed::<f32>(&h100, 9, 132, 15, (11, 5), (11, 5), (8192, 8192)).unwrap();
    assert_eq!((p.kernel, p.grid, p.tile), ("conv2d_seps_f32_h5", (64 * 512, 1), (128, 16)));
    let p = plan_streamed::<f32>(&h100, 9, 132, 14, (13, 6), (13, 6), (8192, 8192)).unwrap();
    assert_eq!((p.kernel, p.grid, p.tile), ("conv2d_seps_f32_h6", (64 * 342, 1), (128, 24)));
    let p = plan_streamed::<f32>(&h100, 9, 132, 13, (15, 7), (15, 7), (8192, 8192)).unwrap();
    assert_eq!((p.grid, p.tile), ((64 * 147, 1), (128, 56)));
    assert_eq!([1, 4, 5, 6, 7, 8, 20].map(seps_band_rows), [16, 16, 16, 24, 56, 64, 160]);
    assert!(SEPS_HALVES.iter().all(|&h| seps_band_rows(h).is_multiple_of(SEPS_CHUNK)));
    // A short image: bands of one chunk, the least halo in one wave.
    let p = plan_streamed::<f32>(&h100, 9, 132, 9, (3, 1), (3, 1), (100, 13)).unwrap();
    assert_eq!((p.grid, p.tile), ((2, 1), (128, 8)));
    assert!(p.tile.1.is_multiple_of(SEPS_CHUNK));
    // Refused: f64, sm_75, an empty or 2^30-wide image, a mask past the widest window.
    assert!(plan_streamed::<f64>(&h100, 9, 132, 9, (3, 1), (3, 1), (100, 100)).is_none());
    assert!(plan_streamed::<f32>(&h100, 7, 80, 9, (3, 1), (3, 1), (100, 100)).is_none());
    assert!(plan_streamed::<f32>(&h100, 9, 132, 9, (3, 1), (3, 1), (0, 100)).is_none());
    assert!(plan_streamed::<f32>(&h100, 9, 132, 9, (3, 1), (3, 1), (1 << 30, 1)).is_none());
    assert!(plan_streamed::<f32>(&h100, 9, 132, 9, (43, 21), (3, 1), (100, 100)).is_none());
}
