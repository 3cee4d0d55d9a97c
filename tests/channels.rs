//! The 2D filters over interleaved channels (`conv::channels::Filter2d`):
//! every storage type, 1, 3 and 4 channels, one mask or one per channel,
//! every boundary mode with `cval`, per-axis origins at both ends of
//! scipy's range, odd and even mask sizes, dense and pitched images of odd
//! sizes; the typed errors; threads on their own streams.
//!
//! Each result is checked against the rayon reference
//! (`conv::reference_batch::filter2d`, f64 with the bound of an
//! accumulation in the data's type) through the output rule. Inputs are
//! fresh random values; outputs (and the gaps between pitched rows) are
//! poisoned first and the gaps must stay poisoned.

mod common;

use coalesce::conv::batch::Sample;
use coalesce::conv::channels::{ChanPlan, Filter2d, Image, boxr_fits, boxr_mode_fits};
use coalesce::conv::reference_batch::{filter2d, sample_matches};
use coalesce::conv::{Boundary, ConvElem, ConvOp};
use coalesce::half::{bf16, f16};
use coalesce::{Error, Gpu};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Clone, Copy, Debug)]
struct Case {
    img: Image,
    mw: usize,
    mh: usize,
    per_channel: bool,
    op: ConvOp,
    mode: Boundary,
    cval: f64,
    origin: (isize, isize),
    /// Masks that are outer products (exact in `f32`): the separable
    /// kernels run for every type that accumulates in `f32`.
    separable: bool,
    /// Masks of equal taps (a box each, of a random tap: the mean, a tap
    /// that saturates, a negative one), which factor too.
    boxed: bool,
}

/// A centred `k × k` general mask over `img`: one mask, correlation,
/// reflect mode, `cval` 0.
fn centred(img: Image, k: usize) -> Case {
    Case {
        img,
        mw: k,
        mh: k,
        per_channel: false,
        op: ConvOp::Correlate,
        mode: Boundary::Reflect,
        cval: 0.0,
        origin: (0, 0),
        separable: false,
        boxed: false,
    }
}

fn run_case<S: Sample>(gpu: &Gpu, rng: &mut StdRng, seed: u64, case: Case) -> ChanPlan {
    run_case_with::<S>(gpu, rng, seed, case, true)
}

/// [`run_case`] with the separable kernels allowed (`true`) or not (see
/// `Filter2d::with_separable`); returns the plan that ran.
fn run_case_with<S: Sample>(gpu: &Gpu, rng: &mut StdRng, seed: u64, case: Case, allow: bool) -> ChanPlan {
    let Case { img, mw, mh, per_channel, op, mode, cval, origin, separable, boxed } = case;
    let what = format!("{} {case:?} (seed {seed})", S::NAME);
    let count = if per_channel { img.channels } else { 1 };
    let scale = 1.0 / (mw * mh) as f64;
    let masks: Vec<S::Acc> = if boxed {
        (0..count)
            .flat_map(|_| {
                let t = match rng.random_range(0..4) {
                    0 => scale,
                    1 => rng.random_range(0.05f64..3.0) * scale,
                    2 => -rng.random_range(0.05f64..1.0) * scale,
                    _ => rng.random_range(0.5f64..40.0),
                };
                std::iter::repeat_n(S::Acc::from_f64(t), mw * mh)
            })
            .collect()
    } else if separable {
        // Dyadic factors of a few bits: their products are exact.
        // The first is never zero, so no mask is all zeros (those are left
        // to the general kernels).
        let factor = |rng: &mut StdRng, n: usize| -> Vec<f64> {
            let unit = 2f64.powi(-(n.next_power_of_two().trailing_zeros() as i32) - 3);
            (0..n)
                .map(|i| if i == 0 { rng.random_range(1i32..=12) } else { rng.random_range(-4i32..=12) } as f64 * unit)
                .collect()
        };
        (0..count)
            .flat_map(|_| {
                let (col, row) = (factor(rng, mh), factor(rng, mw));
                col.into_iter().flat_map(move |c| row.clone().into_iter().map(move |r| S::Acc::from_f64(c * r)))
            })
            .collect()
    } else {
        (0..count * mw * mh).map(|_| S::Acc::from_f64(rng.random_range(-1.0f64..2.0) * scale)).collect()
    };
    let filter = if per_channel {
        Filter2d::<S>::per_channel(gpu, &masks, mw, mh, op, mode)
    } else {
        Filter2d::<S>::new(gpu, &masks, mw, mh, op, mode)
    }
    .and_then(|f| f.with_cval(cval).with_origin(origin.0, origin.1))
    .map(|f| f.with_separable(allow))
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let row = img.width * img.channels;
    let in_len = (img.height - 1) * img.in_pitch + row;
    let out_len = (img.height - 1) * img.out_pitch + row;
    let input: Vec<S> = (0..in_len).map(|_| common::sample(rng)).collect();
    let d_in = gpu.upload(&input).unwrap();
    let mut d_out = gpu.alloc_zeroed::<S>(out_len + 3).unwrap();
    d_out.fill_bytes(common::POISON).unwrap();
    let plan = filter
        .run(&d_in.as_view(), &mut d_out.view_mut(0..out_len).unwrap(), img)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let factored = (separable || boxed) && S::NAME != "f64" && mw >= 2 && mh >= 2;
    assert_eq!(plan.separable(), factored && allow, "{what}: {} ran", plan.kernel);
    assert_eq!(filter.factors().is_some(), factored, "{what}");
    let got = d_out.to_vec().unwrap();
    let values: Vec<f64> = input.iter().map(|v| v.to_f64()).collect();
    let taps: Vec<f64> = filter.taps().iter().map(|t| t.to_f64()).collect();
    let want = filter2d::<S::Acc>(&values, img, &taps, (mw, mh), filter.left(), mode, cval).unwrap();
    let mut bad = Vec::new();
    for y in 0..img.height {
        for e in 0..row {
            let (g, w) = (got[y * img.out_pitch + e], want[y * row + e]);
            if !sample_matches(g, &w) {
                bad.push((y, e / img.channels, e % img.channels, g.to_f64(), w));
            }
        }
    }
    if let Some((y, x, c, g, w)) = bad.first() {
        panic!(
            "{what} ({}): {} wrong of {}; first at (y {y}, x {x}, c {c}): got {g}, want {} ± {}",
            plan.kernel,
            bad.len(),
            img.height * row,
            w.value,
            w.bound
        );
    }
    let bytes = bytemuck::cast_slice::<S, u8>(&got);
    let size = std::mem::size_of::<S>();
    for (k, chunk) in bytes.chunks(size).enumerate() {
        let inside = k < out_len && k % img.out_pitch < row;
        assert!(
            inside || chunk.iter().all(|&b| b == common::POISON),
            "{what}: element {k} outside the image was written"
        );
    }
    plan
}

fn spread<S: Sample>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    let masks = [(1, 1), (3, 3), (5, 5), (4, 2), (7, 3), (2, 6)];
    let mut k = 0usize;
    for channels in [1, 3, 4] {
        let images = [
            Image::new(1, 1, channels).unwrap(),
            Image::new(37, 5, channels).unwrap(),
            Image::new(70, 33, channels).unwrap(),
            Image::new(33, 40, channels).unwrap().with_pitches(33 * channels + 5, 33 * channels + 2),
        ];
        for img in images {
            for &(mw, mh) in &masks {
                k += 1;
                let ends = |w: usize, which: usize| match which % 3 {
                    0 => 0,
                    1 => -((w / 2) as isize),
                    _ => ((w - 1) / 2) as isize,
                };
                let case = Case {
                    img,
                    mw,
                    mh,
                    per_channel: k % 2 == 1,
                    op: ConvOp::ALL[(k / 2) % 2],
                    mode: Boundary::ALL[k % 5],
                    cval: if k.is_multiple_of(3) { 2.5 } else { -1.25 },
                    origin: (ends(mh, k), ends(mw, k + 1)),
                    separable: false,
                    boxed: false,
                };
                run_case::<S>(gpu, &mut rng, seed, case);
            }
        }
    }
}

/// Rank-1 masks on the separable kernels: every channel count, mode,
/// both operations, origins at both ends, odd, even and wide masks;
/// images of one pixel, narrower and wider than a tile (several tiles in
/// both directions, so interior tiles take the asynchronous copies), dense,
/// pitched at 16-byte multiples, and pitched unaligned.
fn separable_spread<S: Sample>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    let masks = [(3, 3), (5, 5), (2, 6), (4, 2), (17, 9), (7, 31)];
    let mut k = 0usize;
    for channels in [1, 3, 4] {
        let size = std::mem::size_of::<S>();
        let aligned = |w: usize| (w * channels).next_multiple_of(16) + 16;
        let images = [
            Image::new(1, 1, channels).unwrap(),
            Image::new(37, 5, channels).unwrap(),
            Image::new(600, 100, channels).unwrap().with_pitches(aligned(600), aligned(600) + 16 / size),
            Image::new(301, 77, channels).unwrap().with_pitches(301 * channels + 3, 301 * channels + 1),
            Image::new(256, 64, channels).unwrap(),
        ];
        for img in images {
            for &(mw, mh) in &masks {
                k += 1;
                let ends = |w: usize, which: usize| match which % 3 {
                    0 => 0,
                    1 => -((w / 2) as isize),
                    _ => ((w - 1) / 2) as isize,
                };
                let case = Case {
                    img,
                    mw,
                    mh,
                    per_channel: k.is_multiple_of(2),
                    op: ConvOp::ALL[(k / 2) % 2],
                    mode: Boundary::ALL[k % 5],
                    cval: if k.is_multiple_of(3) { 2.5 } else { -1.25 },
                    origin: (ends(mh, k + 1), ends(mw, k)),
                    separable: true,
                    boxed: false,
                };
                run_case::<S>(gpu, &mut rng, seed, case);
            }
        }
    }
}

#[test]
fn separable_masks_every_type() {
    let gpu = gpu_or_skip!();
    separable_spread::<f32>(&gpu);
    separable_spread::<u8>(&gpu);
    separable_spread::<u16>(&gpu);
    separable_spread::<f16>(&gpu);
    separable_spread::<f64>(&gpu);
    if gpu.info().cc_major >= 8 {
        separable_spread::<bf16>(&gpu);
    }
}

/// Whether `case` runs on a register-blocked `u8` kernel: the plan of a
/// filter of the same shape, origin, `cval` and mask count (the plan does
/// not depend on the taps' values).
fn runs_register_blocked(gpu: &Gpu, case: &Case) -> bool {
    let count = if case.per_channel { case.img.channels } else { 1 };
    let masks = vec![0.25f32; count * case.mw * case.mh];
    let f = if case.per_channel {
        Filter2d::<u8>::per_channel(gpu, &masks, case.mw, case.mh, case.op, case.mode)
    } else {
        Filter2d::<u8>::new(gpu, &masks, case.mw, case.mh, case.op, case.mode)
    };
    let f = f.unwrap().with_cval(case.cval).with_origin(case.origin.0, case.origin.1).unwrap();
    f.plan(case.img).unwrap().register_blocked()
}

/// The register-blocked `u8` kernels (`conv2d_sepr{C}_u8_w{K}`): every
/// channel count, window (3, 5, 7) and mode with `cval`, both operations,
/// narrower and off-centre masks (origins at both ends), one mask or one
/// per channel; rows of several warps and blocks, rows whose byte count is
/// not a multiple of 4 (pitched), images of several block rows and as
/// small as the window, dense and pitched; inputs not 16-byte aligned and
/// constant mode with `cval ≠ 0` fall back to the tiled separable kernel.
/// Then two threads on their own streams.
#[test]
fn register_blocked_u8() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let masks = [(3, 3), (5, 5), (2, 2), (4, 3), (3, 5), (7, 7), (6, 2)];
    let mut k = 0usize;
    let mut ran = 0usize;
    for channels in [1, 3, 4] {
        let row = |w: usize| (w * channels).next_multiple_of(4);
        let images = [
            Image::new(8, 7, channels).unwrap(),
            Image::new(36, 9, channels).unwrap(),
            Image::new(1001, 150, channels).unwrap().with_pitches(row(1001) + 4, row(1001)),
            Image::new(1000, 130, channels).unwrap(),
            Image::new(301, 70, channels).unwrap().with_pitches((301 * channels).next_multiple_of(16) + 16, row(301)),
            Image::new(99, 40, channels).unwrap().with_pitches(99 * channels + 1, 99 * channels + 3),
        ];
        for img in images {
            for &(mw, mh) in &masks {
                k += 1;
                let ends = |w: usize, which: usize| match which % 3 {
                    0 => 0,
                    1 => -((w / 2) as isize),
                    _ => ((w - 1) / 2) as isize,
                };
                let case = Case {
                    img,
                    mw,
                    mh,
                    per_channel: k.is_multiple_of(2),
                    op: ConvOp::ALL[(k / 2) % 2],
                    mode: Boundary::ALL[k % 5],
                    cval: if k.is_multiple_of(3) { 2.5 } else { -1.25 },
                    origin: (ends(mh, k + 1), ends(mw, k)),
                    separable: true,
                    boxed: false,
                };
                let aligned = img.in_pitch.is_multiple_of(4) && img.out_pitch.is_multiple_of(4);
                let register = runs_register_blocked(&gpu, &case);
                if (mw, mh) == (3, 3) && case.origin == (0, 0) {
                    assert!(register, "a centred 3 x 3 mask takes the register-blocked kernel: {case:?}");
                }
                if (mw, mh) == (7, 7) && case.origin == (0, 0) && img.width >= 7 && img.height >= 7 {
                    assert_eq!(register, channels == 1, "centred 7 x 7 masks: gray only: {case:?}");
                }
                ran += usize::from(register && aligned);
                run_case::<u8>(&gpu, &mut rng, seed, case);
            }
        }
    }
    assert!(ran >= 25, "the register-blocked kernels ran {ran} times");
    // The benchmark's shape at a test's size, on two threads' streams.
    std::thread::scope(|s| {
        for t in 0..2usize {
            let gpu = gpu.clone();
            s.spawn(move || {
                let g = gpu.on(&gpu.new_stream().unwrap()).unwrap();
                let (mut rng, seed) = common::rng();
                for k in 0..3usize {
                    let row = (517 + 64 * t) * 3;
                    let case = Case {
                        img: Image::new(517 + 64 * t, 301 + k, 3)
                            .unwrap()
                            .with_pitches(row.next_multiple_of(16), row.next_multiple_of(4)),
                        mw: 5,
                        mh: 5,
                        per_channel: k == 1,
                        op: ConvOp::ALL[k % 2],
                        mode: Boundary::ALL[(t + 2 * k) % 5],
                        cval: 0.0,
                        origin: (0, 0),
                        separable: true,
                        boxed: k == 2,
                    };
                    assert!(runs_register_blocked(&g, &case), "{case:?}");
                    run_case::<u8>(&g, &mut rng, seed, case);
                }
            });
        }
    });
}

/// The box forms of the register-blocked kernels
/// (`conv2d_sepb{C}_u8_w{K}`): masks of equal taps that fill the window
/// (3 × 3, 5 × 5, and 7 × 7 for gray), one or one per channel, every mode,
/// both operations, the mean, taps that saturate and negative ones;
/// images as small as the window, of several warp columns and block rows,
/// dense and pitched. Off-centre boxes, boxes narrower than the window or
/// not square, constant mode with `cval ≠ 0` and inputs whose pitch is
/// not a multiple of 16 bytes keep the other kernels.
#[test]
fn register_blocked_u8_boxes() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let mut k = 0usize;
    let mut boxed = 0usize;
    for channels in [1, 3, 4] {
        for w in [3usize, 5, 7] {
            // Input rows of a multiple of 16 bytes, output rows of 4.
            let aligned = |width: usize, height: usize| {
                let row = width * channels;
                Image::new(width, height, channels)
                    .unwrap()
                    .with_pitches(row.next_multiple_of(16), row.next_multiple_of(4))
            };
            let images = [
                aligned(w, w),
                aligned(37, 11),
                aligned(1001, 150),
                Image::new(1024, 67, channels).unwrap(),
                Image::new(99, 40, channels).unwrap().with_pitches(99 * channels + 1, 99 * channels + 3),
            ];
            for img in images {
                for variant in 0..5usize {
                    k += 1;
                    let (mw, mh, origin, cval) = match variant {
                        // Off-centre, narrower, not square, cval ≠ 0.
                        1 => (w, w, (0, -((w / 2) as isize)), 0.0),
                        2 if w > 3 => (w - 2, w - 2, (0, 0), 0.0),
                        3 => (w, w - 1, (0, 0), 0.0),
                        4 => (w, w, (0, 0), 1.5),
                        _ => (w, w, (0, 0), 0.0),
                    };
                    let case = Case {
                        img,
                        mw,
                        mh,
                        per_channel: k.is_multiple_of(2),
                        op: ConvOp::ALL[(k / 2) % 2],
                        mode: if cval != 0.0 { Boundary::Zero } else { Boundary::ALL[k % 5] },
                        cval,
                        origin,
                        separable: false,
                        boxed: true,
                    };
                    let plan = run_case::<u8>(&gpu, &mut rng, seed, case);
                    let fits = w < 7 || channels == 1;
                    let dense = img.in_pitch.is_multiple_of(16);
                    let want = (mw, mh, origin, cval) == (w, w, (0, 0), 0.0) && fits && dense;
                    let name = format!("conv2d_sepb{channels}_u8_w{w}");
                    // The box rows kernels take some of these (one tap for
                    // every channel, rows of a multiple of 16 bytes):
                    // `box_rows_u8` checks which.
                    let rows = format!("conv2d_boxr{channels}_u8_w{w}");
                    let row_fits = boxr_fits(img.width, img.height, channels, w) && img.out_pitch.is_multiple_of(16);
                    let ran = plan.kernel == name || (row_fits && plan.kernel == rows);
                    assert_eq!(ran, want, "{case:?} (seed {seed}): {} ran", plan.kernel);
                    boxed += usize::from(want);
                }
            }
        }
    }
    assert!(boxed >= 30, "the box kernels ran {boxed} times");
}

/// Boxes of one tap for every channel on the box rows kernels
/// (`conv2d_boxr{C}_u8_w{K}`): every mode, rows of 32 bytes to more than
/// one block's 4096 (a last block of one thread, a row that ends a
/// block), heights from the window to several bands, pitched layouts; and
/// the layouts they leave to the register-blocked box form (a row not a
/// multiple of 16 bytes, pitches not multiples of 16).
#[test]
fn box_rows_u8() {
    let gpu = gpu_or_skip!();
    if gpu.info().cc_major < 8 {
        eprintln!("SKIPPED: the box rows kernels need sm_80");
        return;
    }
    let (mut rng, seed) = common::rng();
    let mut k = 0usize;
    let mut ran = 0usize;
    for (channels, w) in [(1, 3), (3, 3), (4, 3), (1, 5), (3, 5), (4, 5), (1, 7)] {
        // (width, height, extra bytes of the input and output pitches)
        let shapes: &[(usize, usize, usize, usize)] = match channels {
            1 => &[(32, w, 0, 0), (208, 13, 16, 48), (4112, 37, 0, 0), (4096, 70, 32, 16)],
            3 => &[(16, 9, 0, 0), (1360, 21, 16, 0), (1376, 150, 0, 32), (4096, 11, 0, 0)],
            _ => &[(8, 8, 0, 0), (1028, 45, 0, 16), (1024, 133, 48, 0)],
        };
        for &(width, height, pad_in, pad_out) in shapes {
            let row = width * channels;
            let img = Image::new(width, height, channels).unwrap().with_pitches(row + pad_in, row + pad_out);
            for mode in Boundary::ALL {
                k += 1;
                let case = Case {
                    img,
                    mw: w,
                    mh: w,
                    per_channel: false,
                    op: ConvOp::ALL[k % 2],
                    mode,
                    cval: 0.0,
                    origin: (0, 0),
                    separable: false,
                    boxed: true,
                };
                let plan = run_case::<u8>(&gpu, &mut rng, seed, case);
                assert!(plan.register_blocked(), "{case:?}");
                // Wrap mode leaves rows whose last thread is lane 0 of its
                // warp (4112 bytes here) to the box form.
                if !boxr_mode_fits(row, mode.raw()) {
                    assert!(mode == Boundary::Wrap && row % 512 == 16, "{case:?}");
                    assert_eq!(plan.kernel, format!("conv2d_sepb{channels}_u8_w{w}"), "{case:?} (seed {seed})");
                    continue;
                }
                assert_eq!(plan.kernel, format!("conv2d_boxr{channels}_u8_w{w}"), "{case:?} (seed {seed})");
                ran += 1;
            }
        }
    }
    assert!(ran >= 100, "the box rows kernels ran {ran} times");
    // Layouts they leave: a row of 4 bytes past a multiple of 16, odd
    // pitches; the box form of the register-blocked kernels runs.
    for (img, other) in [
        (Image::new(65, 20, 4).unwrap(), "conv2d_sepb4_u8_w5"),
        (Image::new(64, 20, 3).unwrap().with_pitches(200, 199), "conv2d_sepb3_u8_w5"),
    ] {
        let case = Case { img, ..centred(img, 5) };
        let case = Case { boxed: true, mode: Boundary::Mirror, ..case };
        let plan = run_case::<u8>(&gpu, &mut rng, seed, case);
        assert!(plan.kernel != format!("conv2d_boxr{}_u8_w5", img.channels), "{case:?}: {}", plan.kernel);
        assert!(plan.kernel == other || plan.kernel.starts_with("conv2d_sepc"), "{case:?}: {}", plan.kernel);
    }
}

/// Box rows calls back to back, each reading the image the call before it
/// wrote and writing the one that call read (a ping-pong of two buffers):
/// queued with no wait between them, as dependent launches on sm_90
/// (`Gpu::set_dependent_launches`) and as plain ones, on this handle's
/// stream, alternating between two streams (ordered by the buffers'
/// tracking) and from threads on their own streams, they end on the bytes
/// of the same chain run one call at a time, each call of which matches the
/// CPU reference.
#[test]
fn box_rows_chains_back_to_back() {
    let gpu = gpu_or_skip!();
    if gpu.info().cc_major < 8 {
        eprintln!("SKIPPED: the box rows kernels need sm_80");
        return;
    }
    let (mut rng, seed) = common::rng();
    const CALLS: usize = 8;
    let img = Image::new(1360, 300, 3).unwrap();
    let n = img.width * img.height * img.channels;
    let taps = vec![1.0f32 / 25.0; 25];
    let filter = Filter2d::<u8>::new(&gpu, &taps, 5, 5, ConvOp::Correlate, Boundary::Reflect).unwrap();
    let taps64: Vec<f64> = filter.taps().iter().map(|&t| f64::from(t)).collect();
    let input: Vec<u8> = common::samples(&mut rng, n);
    // The chain one call at a time, each call checked against the CPU
    // reference of its own input.
    let mut steps = vec![input.clone()];
    for call in 0..CALLS {
        let src = gpu.upload(&steps[call]).unwrap();
        let mut dst = gpu.alloc_zeroed::<u8>(n).unwrap();
        dst.fill_bytes(common::POISON).unwrap();
        let plan = filter.run(&src.as_view(), &mut dst.as_view_mut(), img).unwrap();
        assert_eq!(plan.kernel, "conv2d_boxr3_u8_w5");
        let got = dst.to_vec().unwrap();
        let values: Vec<f64> = steps[call].iter().map(|&v| v as f64).collect();
        let want = filter2d::<f32>(&values, img, &taps64, (5, 5), filter.left(), Boundary::Reflect, 0.0).unwrap();
        let bad = got.iter().zip(&want).filter(|(g, w)| !sample_matches(**g, w)).count();
        assert_eq!(bad, 0, "call {call} (seed {seed}): {bad} bytes differ from the reference");
        steps.push(got);
    }
    assert_ne!(steps[CALLS], steps[CALLS - 1], "the chain stopped changing the image");
    // The same chain queued back to back; the last two images must be the
    // one-at-a-time chain's.
    // The odd calls on `other` when it is given: each call then waits for
    // the other stream's call before it through the buffers' tracking.
    let chain = |g: &Gpu, other: Option<&coalesce::Stream>| {
        let f = Filter2d::<u8>::new(g, &taps, 5, 5, ConvOp::Correlate, Boundary::Reflect).unwrap();
        let f_odd = other.map(|s| f.on(s).unwrap());
        let mut a = g.upload(&input).unwrap();
        let mut b = g.alloc_zeroed::<u8>(n).unwrap();
        b.fill_bytes(common::POISON).unwrap();
        for call in 0..CALLS {
            let (src, dst) = if call % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
            let f = if call % 2 == 1 { f_odd.as_ref().unwrap_or(&f) } else { &f };
            f.run(&src.as_view(), &mut dst.as_view_mut(), img).unwrap();
        }
        (a.to_vec().unwrap(), b.to_vec().unwrap())
    };
    let side = gpu.new_stream().unwrap();
    for dependent in [true, false] {
        gpu.set_dependent_launches(dependent);
        for rep in 0..3 {
            let (a, b) = chain(&gpu, None);
            assert!(a == steps[CALLS] && b == steps[CALLS - 1], "dependent {dependent}, pass {rep} (seed {seed})");
            let (a, b) = chain(&gpu, Some(&side));
            assert!(
                a == steps[CALLS] && b == steps[CALLS - 1],
                "dependent {dependent}, two streams, pass {rep} (seed {seed})"
            );
        }
        std::thread::scope(|s| {
            for t in 0..3 {
                let (gpu, steps, chain) = (&gpu, &steps, &chain);
                s.spawn(move || {
                    let g = gpu.on(&gpu.new_stream().unwrap()).unwrap();
                    let (a, b) = chain(&g, None);
                    assert!(
                        a == steps[CALLS] && b == steps[CALLS - 1],
                        "dependent {dependent}, thread {t} (seed {seed})"
                    );
                });
            }
        });
    }
}

/// scipy's `gaussian_filter` on an RGB image runs on the separable kernel
/// and stays within the general kernel's bound.
fn gaussian_on<S: Sample>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    let img = Image::new(301, 203, 3).unwrap();
    let filter = Filter2d::<S>::gaussian(gpu, 2.0, 1.5, 4.0, Boundary::Reflect).unwrap();
    assert!(filter.factors().is_some(), "{}: the Gaussian factors", S::NAME);
    let n = 301 * 203 * 3;
    let input: Vec<S> = common::samples(&mut rng, n);
    let d_in = gpu.upload(&input).unwrap();
    let mut d_out = gpu.alloc_zeroed::<S>(n).unwrap();
    d_out.fill_bytes(common::POISON).unwrap();
    let plan = filter.run(&d_in.as_view(), &mut d_out.as_view_mut(), img).unwrap();
    assert!(plan.separable(), "{}: {} ran", S::NAME, plan.kernel);
    let got = d_out.to_vec().unwrap();
    let values: Vec<f64> = input.iter().map(|v| v.to_f64()).collect();
    let taps: Vec<f64> = filter.taps().iter().map(|t| t.to_f64()).collect();
    let (mw, mh) = filter.size();
    let want = filter2d::<S::Acc>(&values, img, &taps, (mw, mh), filter.left(), Boundary::Reflect, 0.0).unwrap();
    let bad = (0..n).filter(|&i| !sample_matches(got[i], &want[i])).count();
    assert_eq!(bad, 0, "{} Gaussian 2 x 1.5 (seed {seed}): {bad} of {n} wrong", S::NAME);
}

#[test]
fn gaussian_runs_separable() {
    let gpu = gpu_or_skip!();
    gaussian_on::<u8>(&gpu);
    gaussian_on::<f32>(&gpu);
    gaussian_on::<u16>(&gpu);
}

/// The factoring rule, without a GPU: rank-1 masks factor (zeros kept
/// exactly), a perturbed tap beyond the tolerance does not, nor do masks
/// of one row or column.
#[test]
fn factoring_rule() {
    use coalesce::conv::channels::factor_mask;
    let (col, row) = ([0.5, -1.25, 2.0], [0.25, 0.0, 1.5, -3.0]);
    let mask: Vec<f64> = col.iter().flat_map(|c| row.iter().map(move |r| c * r)).collect();
    let (r, c) = factor_mask(&mask, 4, 3).expect("rank 1");
    for i in 0..3 {
        for j in 0..4 {
            assert_eq!(c[i] as f64 * r[j] as f64, mask[i * 4 + j]);
        }
    }
    let mut bent = mask.clone();
    bent[6] *= 1.0 + 1e-5;
    assert!(factor_mask(&bent, 4, 3).is_none());
    let mut hole = mask.clone();
    hole[0] = 0.0;
    assert!(factor_mask(&hole, 4, 3).is_none());
    assert!(factor_mask(&[1.0; 5], 5, 1).is_none());
    assert!(factor_mask(&[0.0; 9], 3, 3).is_none());
    let boxed = vec![(1.0f32 / 25.0) as f64; 25];
    assert!(factor_mask(&boxed, 5, 5).is_some());
}

#[test]
fn f32_channels_modes_masks_and_layouts() {
    let gpu = gpu_or_skip!();
    spread::<f32>(&gpu);
}

#[test]
fn f64_channels_modes_masks_and_layouts() {
    let gpu = gpu_or_skip!();
    spread::<f64>(&gpu);
}

#[test]
fn f16_channels_modes_masks_and_layouts() {
    let gpu = gpu_or_skip!();
    spread::<f16>(&gpu);
}

#[test]
fn bf16_channels_modes_masks_and_layouts() {
    let gpu = gpu_or_skip!();
    if gpu.info().cc_major < 8 {
        let f = Filter2d::<bf16>::new(&gpu, &[1.0f32], 1, 1, ConvOp::Correlate, Boundary::Zero).unwrap();
        assert!(matches!(f.plan(Image::new(4, 4, 3).unwrap()), Err(Error::Unsupported { .. })));
        return;
    }
    spread::<bf16>(&gpu);
}

#[test]
fn u8_channels_modes_masks_and_layouts() {
    let gpu = gpu_or_skip!();
    spread::<u8>(&gpu);
}

#[test]
fn u16_channels_modes_masks_and_layouts() {
    let gpu = gpu_or_skip!();
    spread::<u16>(&gpu);
}

/// An RGB image larger than one tile in both directions and a 5×5 box,
/// the benchmark's case at a test's size; and four threads on their own
/// streams.
#[test]
fn rgb_box_and_threads() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    run_case::<u8>(&gpu, &mut rng, seed, centred(Image::new(517, 301, 3).unwrap(), 5));
    std::thread::scope(|s| {
        for t in 0..4usize {
            let gpu = gpu.clone();
            s.spawn(move || {
                let g = gpu.on(&gpu.new_stream().unwrap()).unwrap();
                let (mut rng, seed) = common::rng();
                for k in 0..4usize {
                    let case = Case {
                        img: Image::new(60 + 7 * t, 45 + k, [1, 3, 4][(t + k) % 3]).unwrap(),
                        mw: 3 + 2 * (k % 2),
                        mh: 3,
                        per_channel: k % 2 == 0,
                        op: ConvOp::ALL[k % 2],
                        mode: Boundary::ALL[(t + k) % 5],
                        cval: 1.5,
                        origin: (0, 0),
                        separable: k % 2 == 1,
                        boxed: false,
                    };
                    match t {
                        0 => run_case::<u8>(&g, &mut rng, seed, case),
                        1 => run_case::<f32>(&g, &mut rng, seed, case),
                        2 => run_case::<u16>(&g, &mut rng, seed, case),
                        _ => run_case::<f64>(&g, &mut rng, seed, case),
                    };
                }
            });
        }
    });
}

/// Gray `f32` and `f64` images on `Conv2d`'s and `Separable`'s kernels:
/// centred masks of 3 to 9 (the register kernels, 9 only in `f32`),
/// off-centre, even and wide masks, masks that factor with the separable
/// kernels allowed (the streamed kernel where the rows are 16-byte
/// aligned, else `conv2d_sepc1_f32`) and not (the general `Conv2d`
/// kernels); every mode with `cval` 0, one pixel to several tiles, dense
/// and pitched, aligned and not. Constant mode with `cval ≠ 0` and
/// different pitches in and out keep the channel kernels.
fn gray_on<S: Sample>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    let sm80 = gpu.info().cc_major >= 8;
    let images = [
        Image::new(1, 1, 1).unwrap(),
        Image::new(37, 5, 1).unwrap(),
        Image::new(301, 77, 1).unwrap(),
        Image::new(256, 64, 1).unwrap(),
        Image::new(600, 100, 1).unwrap().with_pitches(608, 608),
        Image::new(257, 131, 1).unwrap().with_pitches(259, 259),
    ];
    let masks = [(3, 3, (0, 0)), (5, 5, (0, 0)), (7, 7, (0, 0)), (9, 9, (0, 0)), (5, 5, (-2, 2)), (4, 2, (0, 0))];
    let mut k = 0usize;
    for img in images {
        for &(mw, mh, origin) in masks.iter().chain(&[(11, 11, (0, 0))]) {
            for (separable, allow) in [(false, true), (true, true), (true, false)] {
                k += 1;
                let mode = Boundary::ALL[k % 5];
                let case = Case {
                    img,
                    mw,
                    mh,
                    per_channel: k.is_multiple_of(2),
                    op: ConvOp::ALL[(k / 3) % 2],
                    mode,
                    cval: 0.0,
                    origin,
                    separable,
                    boxed: false,
                };
                let plan = run_case_with::<S>(gpu, &mut rng, seed, case, allow);
                let what = format!("{} {case:?} allow {allow}: {} ran", S::NAME, plan.kernel);
                let factored = separable && allow && S::NAME == "f32";
                let streamed = factored && sm80 && img.in_pitch.is_multiple_of(4);
                if factored && !streamed {
                    assert_eq!((plan.kernel, plan.conv2d), ("conv2d_sepc1_f32", None), "{what}");
                    continue;
                }
                let conv2d = plan.conv2d.unwrap_or_else(|| panic!("{what}"));
                assert_eq!((conv2d.kernel, conv2d.grid.0), (plan.kernel, plan.grid), "{what}");
                if streamed {
                    assert!(plan.kernel.starts_with("conv2d_seps_f32_h") && plan.separable(), "{what}");
                    continue;
                }
                assert!(!plan.separable() && !plan.kernel.contains("_chan") && !plan.kernel.contains("_sep"), "{what}");
                let centred = origin == (0, 0) && mw == mh && mw % 2 == 1 && (mw < 9 || mw <= 13 && S::NAME == "f32");
                if centred {
                    assert_eq!(plan.kernel, format!("conv2d_strip{mw}_{}", S::NAME), "{what}");
                }
            }
        }
        // cval ≠ 0 in constant mode, and different pitches, keep the
        // channel kernels.
        let base = Case { mode: Boundary::Zero, cval: 1.5, ..centred(img, 3) };
        let pitched = img.with_pitches(img.in_pitch + 1, img.out_pitch + 3);
        for case in [base, Case { img: pitched, cval: 0.0, ..base }] {
            let plan = run_case::<S>(gpu, &mut rng, seed, case);
            assert!(plan.conv2d.is_none() && plan.kernel.contains("_chan1_"), "{case:?}: {} ran", plan.kernel);
        }
    }
}

#[test]
fn gray_images_run_the_conv2d_kernels() {
    let gpu = gpu_or_skip!();
    gray_on::<f32>(&gpu);
    gray_on::<f64>(&gpu);
    // Not a gray type that accumulates in itself: the channel kernels.
    let (mut rng, seed) = common::rng();
    let case = centred(Image::new(64, 32, 1).unwrap(), 5);
    assert!(run_case::<f16>(&gpu, &mut rng, seed, case).conv2d.is_none());
}

/// Bad input gets a typed error naming the rule.
#[test]
fn bad_input_is_a_typed_error() {
    // No GPU needed: the channel rule.
    for c in [0, 2, 5] {
        let err = Image::new(4, 4, c).unwrap_err();
        assert!(matches!(&err, Error::InvalidArgument { message, .. } if message.contains("1 (gray), 3 (RGB) or 4")));
    }
    let gpu = gpu_or_skip!();
    // A mask type that does not match the data.
    let err = Filter2d::<u8>::new(&gpu, &[1.0f64; 9], 3, 3, ConvOp::Correlate, Boundary::Zero).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument { message, .. } if message.contains("f32 taps")), "{err}");
    // Per-channel masks whose count differs from the channels.
    let f = Filter2d::<u8>::per_channel(&gpu, &[0.1f32; 18], 3, 3, ConvOp::Correlate, Boundary::Zero).unwrap();
    let d_in = gpu.upload(&[7u8; 48]).unwrap();
    let mut d_out = gpu.alloc_zeroed::<u8>(48).unwrap();
    let err = f.run(&d_in.as_view(), &mut d_out.as_view_mut(), Image::new(4, 4, 3).unwrap()).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { message, .. } if message.contains("2 masks for 3 channels")),
        "{err}"
    );
    // Origins out of range, per axis.
    let f = Filter2d::<u8>::new(&gpu, &[0.1f32; 6], 3, 2, ConvOp::Correlate, Boundary::Zero).unwrap();
    assert!(f.clone().with_origin(0, 2).is_err());
    assert!(f.clone().with_origin(1, 0).is_err());
    assert!(f.clone().with_origin(-1, -1).is_ok());
    // Short buffers and pitches below a row.
    let err = f.run(&d_in.as_view(), &mut d_out.as_view_mut(), Image::new(5, 4, 3).unwrap()).unwrap_err();
    assert!(matches!(err, Error::LengthMismatch { .. }), "{err}");
    let img = Image::new(4, 4, 3).unwrap().with_pitches(11, 12);
    assert!(matches!(f.run(&d_in.as_view(), &mut d_out.as_view_mut(), img), Err(Error::InvalidArgument { .. })));
    // More than four masks, or a mask that does not fill its size.
    assert!(Filter2d::<u8>::per_channel(&gpu, &[0.1f32; 45], 3, 3, ConvOp::Correlate, Boundary::Zero).is_err());
    assert!(Filter2d::<u8>::new(&gpu, &[0.1f32; 8], 3, 3, ConvOp::Correlate, Boundary::Zero).is_err());
}

/// `Filter2d` keeps its plans: a kept plan equals the one a fresh filter
/// makes, for more images than it keeps and for every setting its
/// builders change (clones share the kept plans); and threads on their
/// own streams sharing one filter's plans filter different images right.
#[test]
fn kept_plans_follow_images_and_settings() {
    let gpu = gpu_or_skip!();
    let (_, seed) = common::rng();
    let fresh = |gpu: &Gpu| Filter2d::<u8>::new(gpu, &[0.04f32; 25], 5, 5, ConvOp::Correlate, Boundary::Zero).unwrap();
    let f = fresh(&gpu);
    let images: Vec<Image> = (0..20).map(|i| Image::new(64 + 16 * i, 9 + 7 * i, [1, 3, 4][i % 3]).unwrap()).collect();
    for round in 0..2 {
        for &img in &images {
            assert_eq!(f.plan(img).unwrap(), fresh(&gpu).plan(img).unwrap(), "{img:?}, round {round}");
        }
    }
    type Setting = fn(Filter2d<u8>) -> Filter2d<u8>;
    let settings: [(&str, Setting); 6] = [
        ("default", |f| f),
        ("no box rows", |f| f.with_box_rows(false)),
        ("no box sums", |f| f.with_box_sums(false)),
        ("not separable", |f| f.with_separable(false)),
        ("cval 2", |f| f.with_cval(2.0)),
        ("origin (1, -1)", |f| f.with_origin(1, -1).unwrap()),
    ];
    let img = Image::new(1376, 150, 3).unwrap();
    let mut kernels = Vec::new();
    for round in 0..2 {
        for (name, set) in settings {
            let (kept, made) = (set(f.clone()).plan(img).unwrap(), set(fresh(&gpu)).plan(img).unwrap());
            assert_eq!(kept, made, "{name}, round {round}");
            kernels.push(kept.kernel);
        }
    }
    assert_eq!((kernels[0], kernels[1]), ("conv2d_boxr3_u8_w5", "conv2d_sepb3_u8_w5"));
    kernels.sort_unstable();
    kernels.dedup();
    assert!(kernels.len() >= 4, "the settings ran {kernels:?}");
    std::thread::scope(|s| {
        for t in 0..4usize {
            let (gpu, f, images) = (gpu.clone(), &f, &images);
            s.spawn(move || {
                let stream = gpu.new_stream().unwrap();
                let (g, f) = (gpu.on(&stream).unwrap(), f.on(&stream).unwrap());
                let mut rng = StdRng::seed_from_u64(seed ^ (t as u64 + 1));
                for k in 0..6usize {
                    let img = images[(5 * t + 3 * k) % images.len()];
                    let row = img.width * img.channels;
                    let input: Vec<u8> = (0..img.height * row).map(|_| common::sample(&mut rng)).collect();
                    let d_in = g.upload(&input).unwrap();
                    let mut d_out = g.alloc_zeroed::<u8>(input.len()).unwrap();
                    d_out.fill_bytes(common::POISON).unwrap();
                    let plan = f.run(&d_in.as_view(), &mut d_out.as_view_mut(), img).unwrap();
                    let got = d_out.to_vec().unwrap();
                    let values: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
                    let taps: Vec<f64> = f.taps().iter().map(|&v| f64::from(v)).collect();
                    let want = filter2d::<f32>(&values, img, &taps, (5, 5), f.left(), Boundary::Zero, 0.0).unwrap();
                    let bad = got.iter().zip(&want).position(|(&g, w)| !sample_matches(g, w));
                    assert!(bad.is_none(), "thread {t}, {img:?} on {} (seed {seed}): element {bad:?}", plan.kernel);
                }
            });
        }
    });
}
