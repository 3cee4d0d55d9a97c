//! The tensor-core 1D convolution (`Conv1dVariant::Tensor`): both
//! precisions against the rayon reference, every boundary mode, odd and
//! even widths, lengths around tile and step edges, adversarial inputs for
//! the split products, non-finite values, and the choices `Auto` makes.
//!
//! `Precision::F32` is held to the bound the FMA kernels are tested at
//! (`reference::correlate1d_checked`); `Precision::Tf32` to its documented
//! bound (`Precision::tf32_error_bound`). Inputs are fresh random values;
//! outputs are poisoned first; odd lengths start one element into their
//! buffers. On a GPU without tensor cores the GPU tests say so and check
//! that asking for them is a typed error.

mod common;

use coalesce::conv::reference::{Checked, compare, correlate1d_bounded, correlate1d_checked};
use coalesce::conv::{
    Boundary, Conv1d, Conv1dVariant, ConvOp, Precision, TC_INPUT_ALIGN, TC_MIN_TAPS, TC_TILE, TC2_MIN_TAPS,
    rows_auto_takes, tc_ksteps, tensor_auto_min_taps,
};
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

/// The reference for `conv` at its precision.
fn want(conv: &Conv1d<f32>, input: &[f32]) -> Vec<Checked> {
    let w = conv.width();
    match conv.precision() {
        Precision::F32 => correlate1d_checked(input, conv.taps(), conv.left(), conv.mode()).unwrap(),
        Precision::Tf32 => {
            correlate1d_bounded(input, conv.taps(), conv.left(), conv.mode(), |abs| Precision::tf32_error_bound(w, abs))
                .unwrap()
        }
    }
}

/// Runs the tensor kernel over `input` (at `offset` in its buffer) and
/// checks every output, and that nothing outside the view was written.
fn check(gpu: &Gpu, conv: &Conv1d<f32>, input: &[f32], offset: usize, want: &[Checked], what: &str) {
    let n = input.len();
    let mut padded = vec![0.0f32; offset];
    padded.extend_from_slice(input);
    let d_in = gpu.upload(&padded).unwrap();
    let mut d_out = gpu.alloc_zeroed::<f32>(n + offset + 3).unwrap();
    d_out.fill_bytes(common::POISON).unwrap();
    let src = d_in.view(offset..offset + n).unwrap();
    let mut dst = d_out.view_mut(offset..offset + n).unwrap();
    let plan = conv.run(Conv1dVariant::Tensor, &src, &mut dst).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(plan.variant, Conv1dVariant::Tensor, "{what}");
    let got = d_out.to_vec().unwrap();
    if let Err((m, count)) = compare(&got[offset..offset + n], want) {
        panic!("{what} ({}): {count} wrong outputs of {n}; first: {m}", plan.kernel);
    }
    let outside = got[..offset].iter().chain(&got[offset + n..]);
    for v in outside {
        assert_eq!(v.to_bits(), u32::from_ne_bytes([common::POISON; 4]), "{what}: written outside the view");
    }
}

/// The GPU, when it has tensor cores; otherwise checks the typed error
/// and returns `None`.
fn tensor_gpu(gpu: &Gpu, test: &str) -> Option<()> {
    let conv = Conv1d::new(gpu, &[1.0f32; 64], ConvOp::Correlate, Boundary::Zero).unwrap();
    match conv.tensor_support() {
        Ok(()) => Some(()),
        Err(why) => {
            let e = conv.plan(Conv1dVariant::Tensor, 100).unwrap_err();
            assert!(matches!(e, Error::Unsupported { .. }), "{e}");
            eprintln!("{test}: skipped on this GPU: {why}");
            None
        }
    }
}

#[test]
fn every_mode_width_and_length_at_both_precisions() {
    let gpu = gpu_or_skip!();
    let Some(()) = tensor_gpu(&gpu, "every_mode_width_and_length_at_both_precisions") else { return };
    let (mut rng, seed) = common::rng();
    for w in [
        TC_MIN_TAPS,
        33,
        40,
        48,
        56,
        57,
        63,
        64,
        65,
        100,
        127,
        128,
        129,
        TC2_MIN_TAPS - 1,
        TC2_MIN_TAPS,
        200,
        255,
        256,
        257,
        511,
    ] {
        let mask = random(&mut rng, w);
        let halo = 8 * tc_ksteps(w);
        let mut lengths = vec![
            1,
            w.saturating_sub(1).max(1),
            w,
            TC_TILE - 1,
            TC_TILE,
            TC_TILE + 1,
            TC_TILE + halo,
            2 * TC_TILE + 17,
            5 * TC_TILE - w / 2,
            common::big((1 << 20) + 7, (1 << 16) + 7),
        ];
        lengths.sort_unstable();
        lengths.dedup();
        for &n in &lengths {
            let input = random(&mut rng, n);
            // Views at every offset mod 16 floats over the lengths and
            // widths: the tiles' shift `sh` (< TC_INPUT_ALIGN) takes every value.
            let offset = (n + w) % TC_INPUT_ALIGN;
            for mode in Boundary::ALL {
                for op in ConvOp::ALL {
                    if op == ConvOp::Convolve && n > 1 << 16 && w % 2 == 1 {
                        continue;
                    }
                    for precision in Precision::ALL {
                        let conv = Conv1d::new(&gpu, &mask, op, mode).unwrap().with_precision(precision);
                        let what = format!(
                            "seed={seed} w={w} n={n} {} {} {} offset={offset}",
                            op.name(),
                            mode.name(),
                            precision.name()
                        );
                        check(&gpu, &conv, &input, offset, &want(&conv, &input), &what);
                    }
                }
            }
        }
    }
}

/// Inputs and taps over a wide dynamic range (magnitudes 2^−40 … 2^40,
/// both signs), sums that cancel (neighbouring inputs of equal size and
/// opposite sign under a symmetric mask), and constant inputs under equal
/// taps (every product's rounding error the same, so they add up instead
/// of averaging out): the split products keep the `f32` bound, which is
/// relative to the sum of the terms' magnitudes.
#[test]
fn split_products_keep_f32_accuracy_on_adversarial_inputs() {
    let gpu = gpu_or_skip!();
    let Some(()) = tensor_gpu(&gpu, "split_products_keep_f32_accuracy_on_adversarial_inputs") else { return };
    let (mut rng, seed) = common::rng();
    let n = 3 * TC_TILE + 101;
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
    for w in [TC_MIN_TAPS, 64, 127, TC2_MIN_TAPS, 255] {
        // Constants whose splits round the most: a remainder just under
        // half a TF32 unit, and bf16 roundings of both parts near half a
        // bf16 unit; and one drawn at random.
        let awkward = f32::from_bits(0x3f80_0fff) * 1.0039;
        let constant = rng.random_range(0.5f32..1.0);
        let cases: [(&str, Vec<f32>, Vec<f32>); 5] = [
            ("wide range", wide(&mut rng, n), wide(&mut rng, w)),
            (
                "cancelling",
                {
                    let base = wide(&mut rng, n / 2 + 1);
                    (0..n)
                        .map(|i| if i % 2 == 0 { base[i / 2] } else { -base[i / 2] * (1.0 + 2f32.powi(-20)) })
                        .collect()
                },
                {
                    let half = random(&mut rng, w.div_ceil(2));
                    (0..w).map(|j| half[j.min(w - 1 - j)]).collect()
                },
            ),
            ("near the f32 limits", (0..n).map(|i| if i % 3 == 0 { f32::MAX * 0.75 } else { -1.0e30 }).collect(), {
                let mut m = random(&mut rng, w);
                m.iter_mut().for_each(|v| *v *= 2f32.powi(-12));
                m
            }),
            ("constant, awkward", vec![awkward; n], vec![f32::from_bits(0x3f80_0fff) * 1.0117; w]),
            ("constant", vec![constant; n], vec![rng.random_range(0.5f32..1.0); w]),
        ];
        for (name, input, mask) in cases {
            for mode in [Boundary::Zero, Boundary::Reflect, Boundary::Wrap] {
                let conv = Conv1d::new(&gpu, &mask, ConvOp::Correlate, mode).unwrap();
                let want = correlate1d_checked(&input, conv.taps(), conv.left(), mode).unwrap();
                let what = format!("seed={seed} {name} w={w} {}", mode.name());
                check(&gpu, &conv, &input, 0, &want, &what);
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
    for n in [257usize, 3 * TC_TILE + 5] {
        let mut input = random(&mut rng, n);
        input[0] = f32::INFINITY;
        input[n - 1] = f32::NAN;
        input[n / 2] = f32::NEG_INFINITY;
        // 56 and 127 taps run with zero taps in front (tc_front_pad: 4
        // and 1), which the plain sum must skip.
        for w in [TC_MIN_TAPS, 56, 64, 127] {
            let mask = random(&mut rng, w);
            for mode in Boundary::ALL {
                for precision in Precision::ALL {
                    let conv = Conv1d::new(&gpu, &mask, ConvOp::Correlate, mode).unwrap().with_precision(precision);
                    let want = want(&conv, &input);
                    assert!(want.iter().any(|c| c.value.is_nan()) && want.iter().any(|c| c.value.is_infinite()));
                    let what = format!("seed={seed} n={n} w={w} {} {}", mode.name(), precision.name());
                    check(&gpu, &conv, &input, 0, &want, &what);
                }
            }
        }
    }
}

#[test]
fn auto_takes_the_tensor_cores_from_the_crossover_width() {
    let gpu = gpu_or_skip!();
    let tensor = tensor_gpu(&gpu, "auto_takes_the_tensor_cores_from_the_crossover_width").is_some();
    for precision in Precision::ALL {
        let min = tensor_auto_min_taps(precision);
        for w in [min - 1, min, 127, 255] {
            let conv = Conv1d::new(&gpu, &vec![0.25f32; w], ConvOp::Correlate, Boundary::Zero)
                .unwrap()
                .with_precision(precision);
            let plan = conv.plan(Conv1dVariant::Auto, 1 << 20).unwrap();
            let want = match w {
                _ if tensor && w >= min => Conv1dVariant::Tensor,
                _ if rows_auto_takes(gpu.ptx_arch(), "f32", w, 1 << 20) => Conv1dVariant::Rows,
                _ => Conv1dVariant::Fast,
            };
            assert_eq!(plan.variant, want, "w={w} {}: {}", precision.name(), plan.kernel);
            if want == Conv1dVariant::Tensor {
                assert_eq!(plan.kernel, precision.tensor_kernel(w));
            }
        }
    }
    // Masks narrower than TC_MIN_TAPS, f64 data and masks with non-finite
    // taps never take them; asking is a typed error naming the rule.
    let narrow = Conv1d::new(&gpu, &[0.5f32; TC_MIN_TAPS - 1], ConvOp::Correlate, Boundary::Zero).unwrap();
    let e = narrow.plan(Conv1dVariant::Tensor, 1 << 20).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("at least"), "{e}");
    let f64conv = Conv1d::new(&gpu, &[0.5f64; 127], ConvOp::Correlate, Boundary::Zero).unwrap();
    assert_eq!(f64conv.plan(Conv1dVariant::Auto, 1 << 20).unwrap().variant, Conv1dVariant::Fast);
    let e = f64conv.plan(Conv1dVariant::Tensor, 1 << 20).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("f32"), "{e}");
    let mut taps = vec![0.5f32; 127];
    taps[3] = f32::INFINITY;
    let inf = Conv1d::new(&gpu, &taps, ConvOp::Correlate, Boundary::Zero).unwrap();
    assert_eq!(inf.plan(Conv1dVariant::Auto, 1 << 20).unwrap().variant, Conv1dVariant::Fast);
    let e = inf.plan(Conv1dVariant::Tensor, 1 << 20).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("infinity"), "{e}");
}

/// One convolution shared by threads, each on its own stream and its own
/// buffers, the mask tables built once under contention: at 127 taps one
/// table serves both precisions; at 255 each precision has its own (two
/// products at `f32`, one at TF32), and threads alternate between them.
#[test]
fn threads_share_one_tensor_convolution() {
    let gpu = gpu_or_skip!();
    let Some(()) = tensor_gpu(&gpu, "threads_share_one_tensor_convolution") else { return };
    let (mut rng, seed) = common::rng();
    for w in [127, 255] {
        threads_share(&gpu, &mut rng, seed, w);
    }
}

fn threads_share(gpu: &Gpu, rng: &mut StdRng, seed: u64, w: usize) {
    let mask = random(rng, w);
    let conv = Conv1d::new(gpu, &mask, ConvOp::Correlate, Boundary::Reflect).unwrap();
    let inputs: Vec<Vec<f32>> = (0..8).map(|k| random(rng, 2 * TC_TILE + 33 * k + 1)).collect();
    std::thread::scope(|s| {
        for (k, input) in inputs.iter().enumerate() {
            let conv = &conv;
            s.spawn(move || {
                let stream = gpu.new_stream().unwrap();
                let precision = Precision::ALL[k % 2];
                let mine = conv.on(&stream).unwrap().with_precision(precision);
                let want = want(&mine, input);
                for round in 0..5 {
                    let what = format!("seed={seed} w={w} thread {k} {} round {round}", precision.name());
                    check(mine.gpu(), &mine, input, k % 2, &want, &what);
                }
            });
        }
    });
}
