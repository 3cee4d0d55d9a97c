//! 2D convolution on the GPU against the rayon reference, plus the CPU
//! checks that need no GPU.
//!
//! GPU (skipped with one line each when there is none):
//! * every variant (basic, const, tiled, fast, auto) × every boundary mode
//!   × correlate/convolve × f32/f64 on images 1×777, 777×1, 33×65 and
//!   1000×1007 with masks 1×1, 3×3, 5×5, 7×7, 3×7 and 4×2 (even), contiguous
//!   and pitched; fresh random inputs, poisoned outputs;
//! * pitched layouts: the input's padding holds NaN (a kernel that reads
//!   it poisons an output), the output's padding must keep its poison;
//! * the register kernels (fast variant, centred 3×3, 5×5, 7×7, and 9×9,
//!   11×11, 13×13 in f32, which `Auto` takes too) on widths and heights
//!   around their warp bands and strips, aligned and unaligned pitches,
//!   every mode;
//! * a 65×65 mask (more taps than the constant array holds): the `_gm_`
//!   kernels;
//! * NaN and ±infinity inputs propagate exactly as in the reference;
//! * separable convolution against its own reference (bounds include the
//!   rounded intermediate) and against the full 2D convolution with the
//!   outer-product mask, with its own scratch and a caller's;
//! * every error path of `Conv2d` and `Separable`.
//!
//! CPU: the reference against `scipy.ndimage` outputs
//! (`tests/fixtures/scipy_conv2d.json`, written by
//! `scripts/scipy_conv2d_fixture.py`), the separable reference against
//! the 2D one, plans and layout checks.

mod common;

use bytemuck::Pod;
use coalesce::conv::conv2d::{Conv2d, Conv2dVariant, Separable, check_layout, plan_conv2d};
use coalesce::conv::reference::{Checked, compare};
use coalesce::conv::reference2d::{Image, conv2d_checked, outer_product, separable_checked};
use coalesce::conv::{Boundary, ConvElem, ConvOp, MaskSource};
use coalesce::{DeviceLimits, Error, Gpu};
use common::POISON;
use rand::Rng;
use rand::rngs::StdRng;

const VARIANTS: [Conv2dVariant; 5] =
    [Conv2dVariant::Basic, Conv2dVariant::Const, Conv2dVariant::Tiled, Conv2dVariant::Fast, Conv2dVariant::Auto];
/// (mw, mh)
const MASKS: [(usize, usize); 7] = [(1, 1), (3, 3), (5, 5), (7, 7), (9, 9), (3, 7), (4, 2)];
/// (width, height, pitches)
/// Under a sanitizer the largest image is 300×307 (see `common::big`).
fn shapes() -> [(usize, usize, Vec<usize>); 4] {
    let (w, h) = (common::big(1000, 300), common::big(1007, 307));
    [(1, 777, vec![1, 4]), (777, 1, vec![777]), (33, 65, vec![33, 37]), (w, h, vec![w, 1024])]
}
/// Elements after the last row, to catch writes past the image.
const TAIL: usize = 5;

/// Element types under test: random values and conversions.
trait Elem: ConvElem + Default + Pod {
    fn random(rng: &mut StdRng) -> Self;
}
impl Elem for f32 {
    fn random(rng: &mut StdRng) -> Self {
        rng.random_range(-2.0f32..2.0)
    }
}
impl Elem for f64 {
    fn random(rng: &mut StdRng) -> Self {
        rng.random_range(-2.0f64..2.0)
    }
}

fn random_vec<T: Elem>(rng: &mut StdRng, n: usize) -> Vec<T> {
    let v: Vec<T> = (0..n).map(|_| T::random(rng)).collect();
    assert!(n == 0 || v.iter().any(|x| x.to_f64() != 0.0), "random input came out all zero");
    v
}

/// A pitched host image: random inside, NaN in the row padding and the
/// tail.
fn pitched_input<T: Elem>(rng: &mut StdRng, w: usize, h: usize, pitch: usize) -> (Vec<T>, Vec<T>) {
    let dense: Vec<T> = random_vec(rng, w * h);
    let mut data = vec![T::from_f64(f64::NAN); (h - 1) * pitch + w + TAIL];
    for y in 0..h {
        data[y * pitch..y * pitch + w].copy_from_slice(&dense[y * w..(y + 1) * w]);
    }
    (data, dense)
}

/// Checks a downloaded pitched output: the image against `want`, every
/// other element still poisoned.
fn check_output<T: Elem>(got: &[T], want: &[Checked], w: usize, h: usize, pitch: usize, ctx: &str) {
    let mut image = Vec::with_capacity(w * h);
    for (i, v) in got.iter().enumerate() {
        let (y, x) = (i / pitch, i % pitch);
        if y < h && x < w {
            image.push(*v);
        } else {
            let bytes = bytemuck::bytes_of(v);
            assert!(bytes.iter().all(|&b| b == POISON), "{ctx}: padding element {i} (x={x}, y={y}) was overwritten");
        }
    }
    if let Err((m, count)) = compare(&image, want) {
        panic!("{ctx}: {count} outputs wrong; first at (x={}, y={}): {m}", m.index % w.max(1), m.index / w.max(1));
    }
}

/// Runs `variant` of `conv` on a pitched image and checks it.
#[allow(clippy::too_many_arguments)]
fn run_checked<T: Elem>(
    gpu: &Gpu,
    conv: &Conv2d<T>,
    variant: Conv2dVariant,
    input: &[T],
    want: &[Checked],
    (w, h, pitch): (usize, usize, usize),
    ctx: &str,
) -> coalesce::conv::Conv2dPlan {
    let src = gpu.upload(input).unwrap();
    let mut dst = gpu.alloc_zeroed::<T>(input.len()).unwrap();
    dst.fill_bytes(POISON).unwrap();
    let plan = conv
        .run(variant, &src.as_view(), &mut dst.as_view_mut(), w, h, pitch)
        .unwrap_or_else(|e| panic!("{ctx} {variant:?}: {e}"));
    let got = dst.to_vec().unwrap();
    check_output(&got, want, w, h, pitch, &format!("{ctx} {variant:?} plan {plan:?}"));
    plan
}

fn sweep<T: Elem>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    for (w, h, pitches) in shapes() {
        for pitch in pitches {
            let (input, dense) = pitched_input::<T>(&mut rng, w, h, pitch);
            for (mw, mh) in MASKS {
                let mask: Vec<T> = random_vec(&mut rng, mw * mh);
                for mode in Boundary::ALL {
                    for op in ConvOp::ALL {
                        let ctx =
                            format!("{} {w}x{h} pitch {pitch} mask {mw}x{mh} {mode:?} {op:?} seed={seed}", T::NAME);
                        let want = conv2d_checked(Image::dense(&dense, w, h), &mask, mw, mh, op, mode).unwrap();
                        let conv = Conv2d::new(gpu, &mask, mw, mh, op, mode).unwrap();
                        for v in VARIANTS {
                            run_checked(gpu, &conv, v, &input, &want, (w, h, pitch), &ctx);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn every_variant_mode_and_shape_f32() {
    let gpu = gpu_or_skip!();
    sweep::<f32>(&gpu);
}

#[test]
fn every_variant_mode_and_shape_f64() {
    let gpu = gpu_or_skip!();
    sweep::<f64>(&gpu);
}

/// The register kernels (`conv2d_strip*`, the fast variant for centred
/// 3 × 3, 5 × 5 and 7 × 7 masks, and 9 × 9, 11 × 11 and 13 × 13 in
/// `f32`) where their warps' rings and edge lanes meet the image's
/// borders: widths around the 128-column warp band (12 is the narrowest
/// with a lane inside up to 9 × 9, 20 from 11 × 11, whose rows carry two
/// chunks either side; 131, 261 and 145 end in a partial chunk; 132 and
/// 260 leave the last warp one chunk: its ghost columns under nearest,
/// reflect and mirror come from the columns its ring shares with the warp
/// before), heights
/// below, at and around the 16-row strip and the blocked loop's 4-row
/// passes (rows through the mode's map at both ends), aligned and
/// unaligned pitches (16-byte and element-wise copies), every mode.
fn register_kernels<T: Elem>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    let sizes: &[usize] = if T::NAME == "f32" { &[3, 5, 7, 9, 11, 13] } else { &[3, 5, 7] };
    // Heights around the strips (16 rows; 8 for f32 from 9 × 9) and the
    // blocks' tiles (8 or 4 strips); widths that are multiples of 4 and
    // not (zero mode takes every lane of the former from the ring), some
    // narrower than a mask.
    for (w, h) in [
        (4usize, 6),
        (8, 11),
        (12, 1),
        (13, 2),
        (20, 3),
        (136, 5),
        (133, 8),
        (129, 9),
        (128, 15),
        (132, 10),
        (260, 13),
        (131, 16),
        (261, 17),
        (145, 24),
        (300, 33),
        (140, 39),
    ] {
        for pitch in [w.next_multiple_of(4), w.next_multiple_of(4) + 1] {
            let (input, dense) = pitched_input::<T>(&mut rng, w, h, pitch);
            for &n in sizes {
                let mask: Vec<T> = random_vec(&mut rng, n * n);
                for mode in Boundary::ALL {
                    let ctx = format!("{} {w}x{h} pitch {pitch} mask {n}x{n} {mode:?} seed={seed}", T::NAME);
                    let op = ConvOp::Correlate;
                    let want = conv2d_checked(Image::dense(&dense, w, h), &mask, n, n, op, mode).unwrap();
                    let conv = Conv2d::new(gpu, &mask, n, n, op, mode).unwrap();
                    let plan = run_checked(gpu, &conv, Conv2dVariant::Fast, &input, &want, (w, h, pitch), &ctx);
                    assert_eq!(plan.kernel, format!("conv2d_strip{n}_{}", T::NAME), "{ctx}");
                    if n >= 9 {
                        // Auto takes the register form over the tensor
                        // cores at these sizes (convolution: flipped taps).
                        let op = ConvOp::Convolve;
                        let want = conv2d_checked(Image::dense(&dense, w, h), &mask, n, n, op, mode).unwrap();
                        let conv = Conv2d::new(gpu, &mask, n, n, op, mode).unwrap();
                        let plan = run_checked(gpu, &conv, Conv2dVariant::Auto, &input, &want, (w, h, pitch), &ctx);
                        assert_eq!(plan.kernel, format!("conv2d_strip{n}_{}", T::NAME), "{ctx} auto");
                    }
                }
            }
        }
    }
}

#[test]
fn register_kernels_at_band_and_strip_edges() {
    let gpu = gpu_or_skip!();
    register_kernels::<f32>(&gpu);
    register_kernels::<f64>(&gpu);
}

/// The band kernel (`conv2d_band9_f32`: `f32` 9 × 9 at widths that are a
/// multiple of 4 in every mode but wrap, on images tall enough that one
/// wave of bands is taller than the strips): each warp's band derived
/// from the grid, the passes at the image's top and bottom copying rows
/// through the mode's map, the last band partly below the image, the
/// edge warps' ghost columns under nearest, reflect and mirror; widths of
/// whole and partial blocks of 512 columns and a warp column alone,
/// aligned and unaligned pitches, both operations. Wrap mode keeps the
/// strips.
#[test]
fn band_kernel_in_one_wave() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let mut bands = 0;
    // Under a sanitizer, the narrow and the partial-block images alone.
    let images: &[(usize, usize)] = if common::under_sanitizer() {
        &[(128, 9001), (1540, 2999)]
    } else {
        &[(4096, 700), (4100, 1001), (128, 9001), (1540, 2999)]
    };
    for &(w, h) in images {
        for pitch in [w, w + 1] {
            let (input, dense) = pitched_input::<f32>(&mut rng, w, h, pitch);
            let mask: Vec<f32> = random_vec(&mut rng, 81);
            let runs = [
                (Boundary::Zero, Conv2dVariant::Fast, ConvOp::Correlate),
                (Boundary::Zero, Conv2dVariant::Auto, ConvOp::Convolve),
                (Boundary::Reflect, Conv2dVariant::Fast, ConvOp::Correlate),
                (Boundary::Nearest, Conv2dVariant::Auto, ConvOp::Convolve),
                (Boundary::Mirror, Conv2dVariant::Fast, ConvOp::Correlate),
                (Boundary::Wrap, Conv2dVariant::Fast, ConvOp::Correlate),
            ];
            for (mode, variant, op) in runs {
                let ctx = format!("band {w}x{h} pitch {pitch} {mode:?} {op:?} seed={seed}");
                let want = conv2d_checked(Image::dense(&dense, w, h), &mask, 9, 9, op, mode).unwrap();
                let conv = Conv2d::new(&gpu, &mask, 9, 9, op, mode).unwrap();
                let plan = run_checked(&gpu, &conv, variant, &input, &want, (w, h, pitch), &ctx);
                if mode == Boundary::Wrap {
                    assert_eq!(plan.kernel, "conv2d_strip9_f32", "{ctx}");
                    continue;
                }
                assert!(["conv2d_band9_f32", "conv2d_strip9_f32"].contains(&plan.kernel), "{ctx}: {plan:?}");
                if plan.kernel == "conv2d_band9_f32" {
                    bands += 1;
                    let rows = coalesce::conv::conv2d::strip_band_rows(9, 4, h, plan.grid.1 as usize);
                    assert_eq!((plan.block, plan.tile), ((128, 1), (512, rows)), "{ctx}");
                    assert!(rows > 8 && plan.grid.1 as usize * rows >= h, "{ctx}: {plan:?}");
                }
            }
        }
    }
    // An image of one 128-column warp and 9001 rows takes bands on any
    // device with fewer than 1125 resident blocks of the kernel.
    assert!(bands >= 10, "{bands} band launches (seed={seed})");
}

fn wide_mask<T: Elem>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    let (mw, mh) = (65, 65);
    assert!(mw * mh > coalesce::conv::max_constant_taps::<T>());
    for (w, h, pitch) in [(40, 37, 40), (70, 9, 75)] {
        let (input, dense) = pitched_input::<T>(&mut rng, w, h, pitch);
        let mask: Vec<T> = random_vec(&mut rng, mw * mh);
        for mode in [Boundary::Zero, Boundary::Reflect, Boundary::Wrap] {
            let op = ConvOp::Convolve;
            let want = conv2d_checked(Image::dense(&dense, w, h), &mask, mw, mh, op, mode).unwrap();
            let conv = Conv2d::new(gpu, &mask, mw, mh, op, mode).unwrap();
            let ctx = format!("{} {w}x{h} 65x65 {mode:?} seed={seed}", T::NAME);
            for v in VARIANTS {
                let plan = run_checked(gpu, &conv, v, &input, &want, (w, h, pitch), &ctx);
                assert_eq!(plan.mask, MaskSource::Global, "{ctx} {plan:?}");
                if matches!(v, Conv2dVariant::Tiled | Conv2dVariant::Fast) {
                    assert!(plan.kernel.contains("_gm_"), "{ctx} {plan:?}");
                }
            }
        }
    }
}

#[test]
fn masks_wider_than_constant_memory_use_the_gm_kernels() {
    let gpu = gpu_or_skip!();
    wide_mask::<f32>(&gpu);
    wide_mask::<f64>(&gpu);
}

fn non_finite<T: Elem>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    let (w, h) = (33, 65);
    let (mut input, mut dense) = pitched_input::<T>(&mut rng, w, h, w);
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
    // Corners, edges and the interior.
    let spots = [(0, 0), (w - 1, h - 1), (0, 30), (16, 0), (17, 33), (20, 40), (21, 40), (5, 60)];
    for (k, &(x, y)) in spots.iter().enumerate() {
        let v = T::from_f64(specials[k % 3]);
        input[y * w + x] = v;
        dense[y * w + x] = v;
    }
    for (mw, mh) in [(3, 3), (4, 2), (5, 5)] {
        let mask: Vec<T> = random_vec(&mut rng, mw * mh);
        for mode in Boundary::ALL {
            for op in ConvOp::ALL {
                let want = conv2d_checked(Image::dense(&dense, w, h), &mask, mw, mh, op, mode).unwrap();
                assert!(want.iter().any(|c| c.value.is_nan()) && want.iter().any(|c| c.value.is_infinite()));
                let conv = Conv2d::new(gpu, &mask, mw, mh, op, mode).unwrap();
                let ctx = format!("{} non-finite {mw}x{mh} {mode:?} {op:?} seed={seed}", T::NAME);
                for v in VARIANTS {
                    run_checked(gpu, &conv, v, &input, &want, (w, h, w), &ctx);
                }
            }
        }
    }
}

#[test]
fn nan_and_infinity_propagate_like_the_cpu() {
    let gpu = gpu_or_skip!();
    non_finite::<f32>(&gpu);
    non_finite::<f64>(&gpu);
}

fn separable<T: Elem>(gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    let masks: Vec<(Vec<T>, Vec<T>)> = vec![
        (random_vec(&mut rng, 5), random_vec(&mut rng, 3)),
        (random_vec(&mut rng, 4), random_vec(&mut rng, 7)),
        (coalesce::conv::gaussian::<T>(1.5).unwrap(), coalesce::conv::gaussian::<T>(0.7).unwrap()),
        // Even and odd halves around the fused kernel's 4-tap chunks, and
        // sigma = 5 (41 taps) across.
        (random_vec(&mut rng, 31), random_vec(&mut rng, 30)),
        (coalesce::conv::gaussian::<T>(5.0).unwrap(), random_vec(&mut rng, 2)),
    ];
    for (w, h, pitch) in [(1, 300, 1), (300, 1, 300), (33, 65, 37), (63, 129, 64), (1000, 1007, 1000)] {
        let (input, dense) = pitched_input::<T>(&mut rng, w, h, pitch);
        let src = gpu.upload(&input).unwrap();
        let mut dst = gpu.alloc_zeroed::<T>(input.len()).unwrap();
        let mut scratch = gpu.alloc_zeroed::<T>(input.len()).unwrap();
        for (mx, my) in &masks {
            for mode in Boundary::ALL {
                for op in ConvOp::ALL {
                    let ctx = format!(
                        "{} separable {w}x{h} pitch {pitch} masks {}x{} {mode:?} {op:?} seed={seed}",
                        T::NAME,
                        mx.len(),
                        my.len()
                    );
                    let img = Image::dense(&dense, w, h);
                    let sep = separable_checked(img, mx, my, op, mode).unwrap();
                    let full = conv2d_checked(img, &outer_product(mx, my), mx.len(), my.len(), op, mode).unwrap();
                    // Against the full 2D convolution: both bounds.
                    let vs_full: Vec<Checked> = sep
                        .iter()
                        .zip(&full)
                        .map(|(s, f)| Checked { value: f.value, bound: f.bound + s.bound })
                        .collect();
                    for (fused, own) in [(true, true), (true, false), (false, true), (false, false)] {
                        let conv = Separable::new(gpu, mx, my, op, mode).unwrap().with_fused(fused);
                        dst.fill_bytes(POISON).unwrap();
                        let plan = if own {
                            conv.run(&src.as_view(), &mut dst.as_view_mut(), w, h, pitch)
                        } else {
                            conv.run_with(
                                &src.as_view(),
                                &mut dst.as_view_mut(),
                                &mut scratch.as_view_mut(),
                                w,
                                h,
                                pitch,
                            )
                        }
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        let got = dst.to_vec().unwrap();
                        assert_eq!(plan.fused.is_some(), fused, "{ctx}");
                        let c = format!("{ctx} own scratch {own} {plan:?}");
                        check_output(&got, &sep, w, h, pitch, &c);
                        check_output(&got, &vs_full, w, h, pitch, &format!("{c} vs the outer-product mask"));
                    }
                }
            }
        }
    }
}

#[test]
fn separable_matches_its_reference_and_the_outer_product() {
    let gpu = gpu_or_skip!();
    separable::<f32>(&gpu);
    separable::<f64>(&gpu);
}

#[test]
fn gaussian_separable_blurs_like_the_reference() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let (w, h) = (257, 129);
    let data: Vec<f32> = random_vec(&mut rng, w * h);
    let g = Separable::<f32>::gaussian(&gpu, 2.0, 1.0, Boundary::Nearest).unwrap();
    assert_eq!((g.taps().0.len(), g.taps().1.len()), (17, 9));
    let src = gpu.upload(&data).unwrap();
    let mut dst = gpu.alloc_zeroed::<f32>(w * h).unwrap();
    dst.fill_bytes(POISON).unwrap();
    g.run(&src.as_view(), &mut dst.as_view_mut(), w, h, w).unwrap();
    let (gx, gy) = (coalesce::conv::gaussian::<f32>(2.0).unwrap(), coalesce::conv::gaussian::<f32>(1.0).unwrap());
    let want = separable_checked(Image::dense(&data, w, h), &gx, &gy, ConvOp::Correlate, Boundary::Nearest).unwrap();
    check_output(&dst.to_vec().unwrap(), &want, w, h, w, &format!("gaussian seed={seed}"));
}

#[test]
fn every_error_path() {
    let gpu = gpu_or_skip!();
    let m = [1.0f32; 9];
    let invalid = |r: Result<Conv2d<f32>, Error>| matches!(r, Err(Error::InvalidArgument { .. }));
    assert!(invalid(Conv2d::new(&gpu, &[], 0, 3, ConvOp::Correlate, Boundary::Zero)));
    assert!(invalid(Conv2d::new(&gpu, &[], 3, 0, ConvOp::Correlate, Boundary::Zero)));
    assert!(matches!(
        Conv2d::new(&gpu, &m, 2, 3, ConvOp::Correlate, Boundary::Zero),
        Err(Error::LengthMismatch { expected: 6, got: 9, .. })
    ));
    let conv = Conv2d::new(&gpu, &m, 3, 3, ConvOp::Correlate, Boundary::Zero).unwrap();
    let src = gpu.upload(&vec![1.0f32; 100]).unwrap();
    let mut dst = gpu.alloc_zeroed::<f32>(100).unwrap();
    dst.fill_bytes(POISON).unwrap();
    for v in VARIANTS {
        let run = |dst: &mut coalesce::DeviceBuffer<f32>, w, h, p, n_in: usize, n_out: usize| {
            conv.run(v, &src.view(0..n_in).unwrap(), &mut dst.view_mut(0..n_out).unwrap(), w, h, p)
        };
        // pitch < width
        assert!(matches!(run(&mut dst, 10, 2, 9, 100, 100), Err(Error::InvalidArgument { .. })), "{v:?}");
        // (h − 1) · pitch + w = 3 · 12 + 10 = 46 elements needed.
        assert!(matches!(run(&mut dst, 10, 4, 12, 45, 100), Err(Error::LengthMismatch { expected: 46, .. })));
        assert!(matches!(run(&mut dst, 10, 4, 12, 100, 45), Err(Error::LengthMismatch { expected: 46, .. })));
        assert!(run(&mut dst, 10, 4, 12, 46, 46).is_ok(), "{v:?}");
        // Sizes whose element count overflows.
        assert!(run(&mut dst, 2, usize::MAX, usize::MAX, 100, 100).is_err());
        // Empty images: nothing to do, nothing written.
        dst.fill_bytes(POISON).unwrap();
        assert!(run(&mut dst, 0, 5, 0, 0, 0).is_ok());
        assert!(run(&mut dst, 5, 0, 5, 0, 0).is_ok());
        assert!(dst.to_vec().unwrap().iter().all(|v| v.to_bits() == 0xA5A5_A5A5), "{v:?}: an empty run wrote");
    }
    gpu.synchronize().unwrap();
    // Separable.
    assert!(matches!(
        Separable::<f32>::new(&gpu, &[], &[1.0], ConvOp::Correlate, Boundary::Zero),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(Separable::<f32>::new(&gpu, &[1.0], &[], ConvOp::Correlate, Boundary::Zero).is_err());
    assert!(Separable::<f32>::gaussian(&gpu, 0.0, 1.0, Boundary::Zero).is_err());
    assert!(Separable::<f32>::gaussian(&gpu, 1.0, f64::NAN, Boundary::Zero).is_err());
    let sep = Separable::new(&gpu, &[1.0f32, 2.0, 1.0], &[1.0, 1.0], ConvOp::Convolve, Boundary::Mirror).unwrap();
    let mut small = gpu.alloc_zeroed::<f32>(45).unwrap();
    assert!(matches!(
        sep.run_with(&src.as_view(), &mut dst.as_view_mut(), &mut small.as_view_mut(), 10, 4, 12),
        Err(Error::LengthMismatch { expected: 46, got: 45, .. })
    ));
    assert!(matches!(sep.run(&src.as_view(), &mut dst.as_view_mut(), 10, 2, 9), Err(Error::InvalidArgument { .. })));
    assert!(sep.run(&src.view(0..0).unwrap(), &mut dst.view_mut(0..0).unwrap(), 0, 9, 0).is_ok());
}

// ---- CPU only --------------------------------------------------------

#[derive(serde::Deserialize)]
struct Fixture {
    scipy: String,
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    width: usize,
    height: usize,
    mw: usize,
    mh: usize,
    op: String,
    mode: String,
    input: Vec<f64>,
    mask: Vec<f64>,
    expected: Vec<f64>,
}

#[test]
fn reference_matches_scipy_ndimage() {
    let text = include_str!("fixtures/scipy_conv2d.json");
    let fx: Fixture = serde_json::from_str(text).unwrap();
    assert!(fx.cases.len() >= 200, "scipy {}: {} cases", fx.scipy, fx.cases.len());
    let mut even_masks = 0;
    for c in &fx.cases {
        let op: ConvOp = c.op.parse().unwrap();
        let mode = coalesce::conv::parse_boundary(&c.mode).unwrap();
        let got = conv2d_checked(Image::dense(&c.input, c.width, c.height), &c.mask, c.mw, c.mh, op, mode).unwrap();
        assert_eq!(got.len(), c.expected.len());
        for (i, (g, &e)) in got.iter().zip(&c.expected).enumerate() {
            assert!(
                (g.value - e).abs() <= 1e-12 * (1.0 + e.abs()),
                "{}x{} mask {}x{} {:?} {mode:?}: output {i} is {}, scipy {e}",
                c.width,
                c.height,
                c.mw,
                c.mh,
                op,
                g.value
            );
        }
        even_masks += usize::from(c.mw % 2 == 0 || c.mh % 2 == 0);
    }
    assert!(even_masks > 0);
}

#[test]
fn plans_and_layouts_without_a_gpu() {
    let h100 = DeviceLimits::H100;
    for v in VARIANTS {
        for (mw, mh) in MASKS {
            let p = plan_conv2d::<f32>(&h100, v, (mw, mh), (1000, 1007)).unwrap();
            assert!(p.kernel.starts_with("conv2d_") && p.kernel.ends_with("_f32"), "{p:?}");
            assert!(p.block.0 * p.block.1 <= 1024 && p.shared_bytes <= 227 * 1024, "{p:?}");
            let tiles = (1000usize.div_ceil(p.tile.0), 1007usize.div_ceil(p.tile.1));
            assert_eq!((p.grid.0 as usize, p.grid.1 as usize), tiles, "{p:?}");
        }
    }
    assert!(check_layout(10, 10, 4, 3, 3).is_err());
    assert_eq!(check_layout(12, 12, 4, 3, 4).unwrap(), 12);
}
