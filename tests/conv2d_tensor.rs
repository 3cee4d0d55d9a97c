//! The tensor-core 2D convolution (`Conv2dVariant::Tensor`): both
//! precisions against the rayon reference, every boundary mode and both
//! operations, odd and even mask sizes of every step count, images around
//! the tile edges with and without a pitch, adversarial inputs for the
//! split products, non-finite values, the choices `Auto` makes and the
//! typed errors.
//!
//! `Precision::F32` is held to the bound the FMA kernels are tested at
//! (`reference2d::correlate2d_checked`); `Precision::Tf32` to its
//! documented bound (`Precision::tf32_error_bound`). Inputs are fresh
//! random values; outputs are poisoned first, and the elements between
//! `width` and `pitch` must stay poisoned. On a GPU without tensor cores
//! the GPU tests say so and check that asking for them is a typed error.

mod common;

use coalesce::conv::conv2d::{Conv2d, Conv2dVariant, T2_MAX_MW, T2_TX, T2_TY, t2_takes, tensor2d_auto};
use coalesce::conv::reference::{Checked, compare};
use coalesce::conv::reference2d::{Image, correlate2d_bounded, correlate2d_checked};
use coalesce::conv::{Boundary, ConvOp, Precision};
use coalesce::{Error, Gpu};
use rand::Rng;
use rand::rngs::StdRng;

fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    if n >= 2 {
        assert!(v.iter().any(|x| *x != 0.0), "random input came out all zero");
    }
    v
}

/// The reference for `conv` over the dense `w × h` image `data`, at the
/// convolution's precision.
fn want(conv: &Conv2d<f32>, data: &[f32], w: usize, h: usize) -> Vec<Checked> {
    let (mw, mh) = conv.size();
    let (lx, ly) = conv.left();
    let img = Image::dense(data, w, h);
    match conv.precision() {
        Precision::F32 => correlate2d_checked(img, conv.taps(), mw, mh, lx, ly, conv.mode()).unwrap(),
        Precision::Tf32 => correlate2d_bounded(img, conv.taps(), (mw, mh), (lx, ly), conv.mode(), |abs| {
            Precision::tf32_error_bound(mw * mh, abs)
        })
        .unwrap(),
    }
}

/// Runs the tensor kernel over the dense `w × h` image `data`, laid out
/// with `pitch` (the input starting `pitch % 3` elements into its buffer,
/// so both aligned and unaligned rows occur), and checks every output, the
/// padding columns and the tail past the image.
fn check(
    gpu: &Gpu,
    conv: &Conv2d<f32>,
    data: &[f32],
    (w, h, pitch): (usize, usize, usize),
    want: &[Checked],
    what: &str,
) {
    let len = (h - 1) * pitch + w;
    let mut laid = vec![f32::NAN; len];
    for y in 0..h {
        laid[y * pitch..y * pitch + w].copy_from_slice(&data[y * w..(y + 1) * w]);
    }
    let offset = pitch % 3;
    let mut buffer = vec![f32::NAN; offset];
    buffer.extend_from_slice(&laid);
    let d_in = gpu.upload(&buffer).unwrap();
    let src = d_in.view(offset..offset + len).unwrap();
    let mut d_out = gpu.alloc_zeroed::<f32>(len + 5).unwrap();
    d_out.fill_bytes(common::POISON).unwrap();
    let mut dst = d_out.view_mut(0..len).unwrap();
    let plan = conv.run(Conv2dVariant::Tensor, &src, &mut dst, w, h, pitch).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(plan.variant, Conv2dVariant::Tensor, "{what}");
    let got = d_out.to_vec().unwrap();
    let dense: Vec<f32> = (0..h).flat_map(|y| got[y * pitch..y * pitch + w].iter().copied()).collect();
    if let Err((m, count)) = compare(&dense, want) {
        panic!("{what} ({}): {count} wrong outputs of {}; first: {m}", plan.kernel, w * h);
    }
    let poison = u32::from_ne_bytes([common::POISON; 4]);
    for y in 0..h {
        let pad = if y + 1 < h { &got[y * pitch + w..(y + 1) * pitch] } else { &got[len..] };
        assert!(pad.iter().all(|v| v.to_bits() == poison), "{what}: written outside the image (row {y})");
    }
}

/// The GPU, when it has tensor cores; otherwise checks the typed error
/// and returns `None`.
fn tensor_gpu(gpu: &Gpu, test: &str) -> Option<()> {
    let conv = Conv2d::new(gpu, &[1.0f32; 81], 9, 9, ConvOp::Correlate, Boundary::Zero).unwrap();
    match conv.tensor_support() {
        Ok(()) => Some(()),
        Err(why) => {
            let e = conv.plan(Conv2dVariant::Tensor, 100, 100).unwrap_err();
            assert!(matches!(e, Error::Unsupported { .. }), "{e}");
            eprintln!("{test}: skipped on this GPU: {why}");
            None
        }
    }
}

#[test]
fn every_mode_size_and_shape_at_both_precisions() {
    let gpu = gpu_or_skip!();
    let Some(()) = tensor_gpu(&gpu, "every_mode_size_and_shape_at_both_precisions") else { return };
    let (mut rng, seed) = common::rng();
    // Every step count (2, 3, 4), odd and even sizes, non-square masks.
    let masks = [(9, 9), (8, 4), (15, 15), (10, 12), (17, 5), (4, 16), (25, 25), (24, 3)];
    let images = [
        (1, 1, 1),
        (7, 3, 9),
        (T2_TX - 1, T2_TY + 1, T2_TX + 3),
        (T2_TX, T2_TY, T2_TX),
        (T2_TX + 1, T2_TY - 1, T2_TX + 1),
        (3 * T2_TX + 17, 2 * T2_TY + 5, 3 * T2_TX + 40),
        (3 * T2_TX + 17, 2 * T2_TY + 5, 3 * T2_TX + 20),
    ];
    for (mw, mh) in masks {
        assert!(t2_takes(mw, mh), "{mw}×{mh}");
        let mask = random(&mut rng, mw * mh);
        for (w, h, pitch) in images {
            let data = random(&mut rng, w * h);
            for mode in Boundary::ALL {
                for op in ConvOp::ALL {
                    for precision in Precision::ALL {
                        let conv = Conv2d::new(&gpu, &mask, mw, mh, op, mode).unwrap().with_precision(precision);
                        let what = format!(
                            "seed={seed} {mw}×{mh} image {w}×{h} pitch {pitch} {} {} {}",
                            op.name(),
                            mode.name(),
                            precision.name()
                        );
                        check(&gpu, &conv, &data, (w, h, pitch), &want(&conv, &data, w, h), &what);
                    }
                }
            }
        }
    }
    // A large image: many tiles per block (the persistent grid).
    let (w, h) = (common::big(2051, 517), common::big(1029, 259));
    let data = random(&mut rng, w * h);
    for (mw, mh) in [(9, 9), (15, 15), (21, 21)] {
        let mask = random(&mut rng, mw * mh);
        for precision in Precision::ALL {
            let conv = Conv2d::new(&gpu, &mask, mw, mh, ConvOp::Convolve, Boundary::Reflect)
                .unwrap()
                .with_precision(precision);
            // Rows 16-byte aligned (the 16-byte copies) and not.
            for pitch in [w.next_multiple_of(4), w] {
                let what = format!("seed={seed} {mw}×{mh} image {w}×{h} pitch {pitch} {}", precision.name());
                check(&gpu, &conv, &data, (w, h, pitch), &want(&conv, &data, w, h), &what);
            }
        }
    }
}

/// Inputs over 2^±40 with random signs, sums that cancel, and values near
/// `f32::MAX`: the split products stay within the `f32` bound, which is
/// relative to the sum of the terms' magnitudes.
#[test]
fn split_products_keep_f32_accuracy_on_adversarial_inputs() {
    let gpu = gpu_or_skip!();
    let Some(()) = tensor_gpu(&gpu, "split_products_keep_f32_accuracy_on_adversarial_inputs") else { return };
    let (mut rng, seed) = common::rng();
    let (w, h) = (2 * T2_TX + 21, 2 * T2_TY + 9);
    let wide = |rng: &mut StdRng, k: usize| -> Vec<f32> {
        (0..k)
            .map(|_| {
                let m: f32 = rng.random_range(1.0..2.0);
                let e: i32 = rng.random_range(-40..=40);
                let s = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
                s * m * 2f32.powi(e)
            })
            .collect()
    };
    for (mw, mh) in [(8, 4), (9, 9), (15, 15), (25, 25)] {
        let cases: [(&str, Vec<f32>, Vec<f32>); 3] = [
            ("wide range", wide(&mut rng, w * h), wide(&mut rng, mw * mh)),
            (
                "cancelling",
                {
                    let base = wide(&mut rng, (w * h).div_ceil(2));
                    (0..w * h)
                        .map(|i| if i % 2 == 0 { base[i / 2] } else { -base[i / 2] * (1.0 + 2f32.powi(-20)) })
                        .collect()
                },
                {
                    let half = random(&mut rng, mw * mh);
                    // Symmetric along x: neighbours cancel pairwise.
                    (0..mw * mh).map(|k| half[(k / mw) * mw + (k % mw).min(mw - 1 - k % mw)]).collect()
                },
            ),
            (
                "near the f32 limits",
                (0..w * h).map(|i| if i % 3 == 0 { f32::MAX * 0.75 } else { -1.0e30 }).collect(),
                {
                    let mut m = random(&mut rng, mw * mh);
                    m.iter_mut().for_each(|v| *v *= 2f32.powi(-14));
                    m
                },
            ),
        ];
        for (name, data, mask) in cases {
            for mode in [Boundary::Zero, Boundary::Reflect, Boundary::Wrap] {
                let conv = Conv2d::new(&gpu, &mask, mw, mh, ConvOp::Correlate, mode).unwrap();
                let what = format!("seed={seed} {name} {mw}×{mh} {}", mode.name());
                check(&gpu, &conv, &data, (w, h, w), &want(&conv, &data, w, h), &what);
            }
        }
    }
}

/// NaN and ±infinity: tiles holding them take the plain sum, so they
/// propagate exactly as on the CPU, and tiles without them are unaffected.
#[test]
fn nan_and_infinity_propagate_as_on_the_cpu() {
    let gpu = gpu_or_skip!();
    let Some(()) = tensor_gpu(&gpu, "nan_and_infinity_propagate_as_on_the_cpu") else { return };
    let (mut rng, seed) = common::rng();
    let (w, h) = (3 * T2_TX + 5, 2 * T2_TY + 3);
    let mut data = random(&mut rng, w * h);
    data[0] = f32::INFINITY;
    data[w * h - 1] = f32::NAN;
    data[(h / 2) * w + w / 2] = f32::NEG_INFINITY;
    for (mw, mh) in [(9, 9), (16, 6)] {
        let mask = random(&mut rng, mw * mh);
        for mode in Boundary::ALL {
            for precision in Precision::ALL {
                let conv = Conv2d::new(&gpu, &mask, mw, mh, ConvOp::Correlate, mode).unwrap().with_precision(precision);
                let want = want(&conv, &data, w, h);
                assert!(want.iter().any(|c| c.value.is_nan()) && want.iter().any(|c| c.value.is_infinite()));
                assert!(want.iter().filter(|c| c.value.is_finite()).count() > w * h / 2);
                let what = format!("seed={seed} {mw}×{mh} {} {}", mode.name(), precision.name());
                check(&gpu, &conv, &data, (w, h, w), &want, &what);
            }
        }
    }
}

#[test]
fn auto_takes_the_tensor_cores_from_the_crossover_size() {
    let gpu = gpu_or_skip!();
    let tensor = tensor_gpu(&gpu, "auto_takes_the_tensor_cores_from_the_crossover_size").is_some();
    for precision in Precision::ALL {
        for n in [3, 5, 7, 9, 11, 15, 21, 25, 27] {
            let conv = Conv2d::new(&gpu, &vec![0.25f32; n * n], n, n, ConvOp::Correlate, Boundary::Zero)
                .unwrap()
                .with_precision(precision);
            let plan = conv.plan(Conv2dVariant::Auto, 4096, 4096).unwrap();
            let on_tc = tensor && tensor2d_auto(n, n, (n / 2, n / 2), precision);
            assert_eq!(plan.variant == Conv2dVariant::Tensor, on_tc, "{n}×{n} {}: {}", precision.name(), plan.kernel);
            if on_tc {
                assert!(plan.kernel.starts_with("conv2d_tensor_"), "{}", plan.kernel);
                assert_eq!(plan.kernel.contains("tf32"), precision == Precision::Tf32, "{}", plan.kernel);
            }
        }
    }
    // Masks the accuracy rule turns away, rows wider than the kernels
    // take, f64 data and non-finite taps never take them; asking is a
    // typed error naming the rule.
    for (mw, mh, words) in [(5, 5, "at least"), (2, 16, "at least"), (T2_MAX_MW + 2, 5, "at most")] {
        let conv = Conv2d::new(&gpu, &vec![0.5f32; mw * mh], mw, mh, ConvOp::Correlate, Boundary::Zero).unwrap();
        assert_ne!(conv.plan(Conv2dVariant::Auto, 512, 512).unwrap().variant, Conv2dVariant::Tensor);
        let e = conv.plan(Conv2dVariant::Tensor, 512, 512).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains(words), "{mw}×{mh}: {e}");
    }
    let f64conv = Conv2d::new(&gpu, &[0.5f64; 121], 11, 11, ConvOp::Correlate, Boundary::Zero).unwrap();
    assert_ne!(f64conv.plan(Conv2dVariant::Auto, 512, 512).unwrap().variant, Conv2dVariant::Tensor);
    let e = f64conv.plan(Conv2dVariant::Tensor, 512, 512).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("f32"), "{e}");
    let mut taps = vec![0.5f32; 121];
    taps[30] = f32::NAN;
    let nan = Conv2d::new(&gpu, &taps, 11, 11, ConvOp::Correlate, Boundary::Zero).unwrap();
    assert_ne!(nan.plan(Conv2dVariant::Auto, 512, 512).unwrap().variant, Conv2dVariant::Tensor);
    let e = nan.plan(Conv2dVariant::Tensor, 512, 512).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("NaN"), "{e}");
}

/// One convolution shared by threads, each on its own stream and its own
/// buffers, the mask table built once under contention.
#[test]
fn threads_share_one_tensor_convolution() {
    let gpu = gpu_or_skip!();
    let Some(()) = tensor_gpu(&gpu, "threads_share_one_tensor_convolution") else { return };
    let (mut rng, seed) = common::rng();
    let mask = random(&mut rng, 15 * 15);
    let conv = Conv2d::new(&gpu, &mask, 15, 15, ConvOp::Correlate, Boundary::Reflect).unwrap();
    let images: Vec<(usize, usize, Vec<f32>)> = (0..8)
        .map(|k| {
            let (w, h) = (2 * T2_TX + 13 * k + 1, T2_TY + 7 * k + 3);
            (w, h, random(&mut rng, w * h))
        })
        .collect();
    std::thread::scope(|s| {
        for (k, (w, h, data)) in images.iter().enumerate() {
            let (gpu, conv) = (&gpu, &conv);
            s.spawn(move || {
                let stream = gpu.new_stream().unwrap();
                let mine = conv.on(&stream).unwrap();
                let want = want(&mine, data, *w, *h);
                for round in 0..5 {
                    let what = format!("seed={seed} thread {k} round {round}");
                    check(mine.gpu(), &mine, data, (*w, *h, *w + k % 2), &want, &what);
                }
            });
        }
    });
}
