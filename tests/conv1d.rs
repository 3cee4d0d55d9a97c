//! 1D convolution: every variant × boundary mode × operation × width ×
//! length against the rayon reference (GPU), and the reference against
//! scipy's own outputs (no GPU needed).
//!
//! Variants: the lesson's five and the rows kernels.
//! Widths: 1, 3, 5, 7, 31, 63, the constant-memory maximum and one more
//! (which takes the global-memory kernels); an even width as well; and
//! every width from 1 to 33 at three lengths (the compile-time fast
//! kernels and every tail of the four-tap steps).
//! Lengths: 0, 1, w − 1, w, blockDim − 1, blockDim + 1, 2^20 + 7. Inputs
//! are fresh random values in [−1, 1); outputs are poisoned first; views
//! start one element into their buffers too, so vector stores meet a
//! misaligned output.

mod common;

use coalesce::conv::reference::{Checked, compare, conv1d, correlate1d_checked};
use coalesce::conv::{
    Boundary, Conv1d, Conv1dVariant, ConvElem, ConvOp, FAST_FIXED_MAX, FAST_RING_MIN_SM, FAST_STAGES, MaskSource,
    THREADS_1D, fast_shared_elems, max_constant_taps, parse_boundary, plan_1d, rows_auto_takes,
};
use coalesce::{DeviceLimits, Error, Gpu};
use rand::Rng;
use rand::rngs::StdRng;

/// The lesson's five variants and the rows kernels (the signal as the one
/// row of the batched filters).
const VARIANTS: [Conv1dVariant; 6] = [
    Conv1dVariant::Basic,
    Conv1dVariant::Const,
    Conv1dVariant::Tiled,
    Conv1dVariant::TiledL2,
    Conv1dVariant::Fast,
    Conv1dVariant::Rows,
];

fn random<T: ConvElem>(rng: &mut StdRng, n: usize) -> Vec<T> {
    let v: Vec<T> = (0..n).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    if n >= 2 {
        assert!(v.iter().any(|x| x.to_f64() != 0.0), "random input came out all zero");
    }
    v
}

/// Runs `variant` over `input` (placed `offset` elements into its buffer)
/// and checks every output against `want`.
fn check_one<T: ConvElem + Default>(
    gpu: &Gpu,
    conv: &Conv1d<T>,
    variant: Conv1dVariant,
    input: &[T],
    offset: usize,
    want: &[Checked],
    what: &str,
) -> coalesce::conv::Conv1dPlan {
    let n = input.len();
    let mut padded = vec![T::default(); offset];
    padded.extend_from_slice(input);
    let d_in = gpu.upload(&padded).unwrap();
    let mut d_out = gpu.alloc_zeroed::<T>(n + offset).unwrap();
    d_out.fill_bytes(common::POISON).unwrap();
    let src = d_in.view(offset..offset + n).unwrap();
    let mut dst = d_out.view_mut(offset..offset + n).unwrap();
    let plan = conv.run(variant, &src, &mut dst).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = d_out.to_vec().unwrap();
    if let Err((m, count)) = compare(&got[offset..], want) {
        panic!("{what} ({}): {count} wrong outputs; first: {m}", plan.kernel);
    }
    // The elements before the view stay poisoned: nothing writes outside.
    for (i, b) in bytemuck::cast_slice::<T, u8>(&got[..offset]).iter().enumerate() {
        assert_eq!(*b, common::POISON, "{what}: byte {i} before the output view was overwritten");
    }
    plan
}

fn sweep<T: ConvElem + Default>(test: &str, gpu: &Gpu, widths: &[usize]) {
    let (mut rng, seed) = common::rng();
    let block = THREADS_1D as usize;
    for &w in widths {
        let mask: Vec<T> = random(&mut rng, w);
        let mut lengths =
            vec![0, 1, w.saturating_sub(1), w, block - 1, block + 1, common::big((1 << 20) + 7, (1 << 16) + 7)];
        lengths.sort_unstable();
        lengths.dedup();
        for &n in &lengths {
            let t0 = std::time::Instant::now();
            let input: Vec<T> = random(&mut rng, n);
            for op in ConvOp::ALL {
                // The widest masks on the longest input: correlation only
                // (the operation is a host-side rewrite of the taps).
                if op == ConvOp::Convolve && w > 63 && n > 1 << 16 {
                    continue;
                }
                let (taps, left) = op.correlation_taps(&mask);
                for mode in Boundary::ALL {
                    let conv = Conv1d::new(gpu, &mask, op, mode).unwrap();
                    let want = correlate1d_checked(&input, &taps, left, mode).unwrap();
                    for variant in VARIANTS {
                        let offset = usize::from(n % 2 == 1);
                        let what = format!(
                            "{test} seed={seed} {} w={w} n={n} {} {} {} offset={offset}",
                            T::NAME,
                            op.name(),
                            mode.name(),
                            variant.name()
                        );
                        check_one(gpu, &conv, variant, &input, offset, &want, &what);
                    }
                }
            }
            eprintln!("{test}: {} w={w} n={n}: {:.2?}", T::NAME, t0.elapsed());
        }
    }
}

#[test]
fn f32_every_variant_mode_width_and_length() {
    let gpu = gpu_or_skip!();
    let max = max_constant_taps::<f32>();
    sweep::<f32>("f32_every_variant_mode_width_and_length", &gpu, &[1, 3, 4, 5, 7, 31, 63, max, max + 1]);
}

#[test]
fn f64_every_variant_mode_width_and_length() {
    let gpu = gpu_or_skip!();
    let max = max_constant_taps::<f64>();
    sweep::<f64>("f64_every_variant_mode_width_and_length", &gpu, &[1, 3, 6, 31, max, max + 1]);
}

/// Every width from 1 to one past the compile-time fast kernels
/// (`FAST_FIXED_MAX`): each of `conv1d_fast1` … `conv1d_fast16` at every
/// width it serves, and every tail length (`w mod 4`) of the lesson
/// kernels' four-tap steps, in every variant and mode. Then 69, 74, 79
/// and 80 taps: the run-time fast kernel with 1, 2, 3 and 0 chunks after
/// its four-chunk steps, and the basic kernel's 16-tap loop followed by
/// each combination of its 8- and 4-tap blocks.
fn every_width<T: ConvElem + Default>(test: &str, gpu: &Gpu) {
    let (mut rng, seed) = common::rng();
    for w in (1..=FAST_FIXED_MAX + 1).chain([69, 74, 79, 80]) {
        let mask: Vec<T> = random(&mut rng, w);
        for n in [w - 1, 1001, 4099] {
            let input: Vec<T> = random(&mut rng, n);
            for mode in Boundary::ALL {
                let conv = Conv1d::new(gpu, &mask, ConvOp::Correlate, mode).unwrap();
                let (taps, left) = ConvOp::Correlate.correlation_taps(&mask);
                let want = correlate1d_checked(&input, &taps, left, mode).unwrap();
                for variant in VARIANTS {
                    let what = format!("{test} seed={seed} {} w={w} n={n} {} {}", T::NAME, mode.name(), variant.name());
                    check_one(gpu, &conv, variant, &input, 0, &want, &what);
                }
            }
        }
        let k =
            Conv1d::new(gpu, &mask, ConvOp::Correlate, Boundary::Zero).unwrap().plan(Conv1dVariant::Fast, 9).unwrap();
        let fixed = w <= FAST_FIXED_MAX;
        assert_eq!(k.kernel.starts_with(&format!("conv1d_fast{}_", w.div_ceil(4))), fixed, "w={w}: {}", k.kernel);
    }
}

#[test]
fn f32_every_width_up_to_the_fixed_fast_kernels() {
    let gpu = gpu_or_skip!();
    every_width::<f32>("f32_every_width_up_to_the_fixed_fast_kernels", &gpu);
}

#[test]
fn f64_every_width_up_to_the_fixed_fast_kernels() {
    let gpu = gpu_or_skip!();
    every_width::<f64>("f64_every_width_up_to_the_fixed_fast_kernels", &gpu);
}

#[test]
fn wide_masks_take_the_global_memory_path() {
    let gpu = gpu_or_skip!();
    let max = max_constant_taps::<f32>();
    for (w, source) in [(max, MaskSource::Constant), (max + 1, MaskSource::Global)] {
        let conv = Conv1d::new(&gpu, &vec![0.5f32; w], ConvOp::Correlate, Boundary::Zero).unwrap();
        assert_eq!(conv.mask_source(), source);
        for v in [Conv1dVariant::Tiled, Conv1dVariant::TiledL2, Conv1dVariant::Fast] {
            let k = conv.plan(v, 1000).unwrap().kernel;
            assert_eq!(k.contains("_gm_"), source == MaskSource::Global, "{k}");
        }
        let k = conv.plan(Conv1dVariant::Const, 1000).unwrap().kernel;
        assert_eq!(k, if source == MaskSource::Global { "conv1d_basic_f32" } else { "conv1d_const_f32" });
    }
}

/// NaN and ±infinity propagate as in the plain sum: placed at both edges
/// (so nearest/reflect/mirror/wrap replicate them into ghost cells) and
/// inside.
#[test]
fn nan_and_infinity_propagate_as_on_the_cpu() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for n in [257usize, 5000] {
        let mut input: Vec<f32> = random(&mut rng, n);
        input[0] = f32::INFINITY;
        input[n - 1] = f32::NAN;
        input[n / 2] = f32::NEG_INFINITY;
        input[n / 3] = f32::INFINITY;
        for w in [1usize, 5, 8, 31] {
            let mask: Vec<f32> = random(&mut rng, w);
            for mode in Boundary::ALL {
                for op in ConvOp::ALL {
                    let (taps, left) = op.correlation_taps(&mask);
                    let want = correlate1d_checked(&input, &taps, left, mode).unwrap();
                    assert!(want.iter().any(|c| c.value.is_nan()) && want.iter().any(|c| c.value.is_infinite()));
                    let conv = Conv1d::new(&gpu, &mask, op, mode).unwrap();
                    for variant in VARIANTS {
                        let what = format!("seed={seed} n={n} w={w} {} {} {}", mode.name(), op.name(), variant.name());
                        check_one(&gpu, &conv, variant, &input, 0, &want, &what);
                    }
                }
            }
        }
    }
}

/// Two convolutions with different masks used alternately: the constant
/// mask is re-uploaded whenever the other one ran last.
#[test]
fn alternating_masks_each_use_their_own() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let input: Vec<f32> = random(&mut rng, 4099);
    let a = Conv1d::new(&gpu, &random::<f32>(&mut rng, 7), ConvOp::Correlate, Boundary::Reflect).unwrap();
    let b = Conv1d::new(&gpu, &random::<f32>(&mut rng, 9), ConvOp::Convolve, Boundary::Wrap).unwrap();
    for round in 0..3 {
        for c in [&a, &b] {
            let want = correlate1d_checked(&input, c.taps(), c.left(), c.mode()).unwrap();
            let what = format!("seed={seed} round={round} w={}", c.width());
            check_one(&gpu, c, Conv1dVariant::Const, &input, 0, &want, &what);
            check_one(&gpu, c, Conv1dVariant::Fast, &input, 0, &want, &what);
        }
    }
}

/// The shortest signal on which `Auto` takes the rows kernels for a
/// `w`-tap mask of element type `ty` on sm_90 PTX (none: never), as
/// measured on an H200 (`docs/wide-masks.md`).
fn rows_crossover(ty: &str, w: usize) -> Option<usize> {
    match (ty, w) {
        ("f32", 1..=16) => Some(3 << 24),
        ("f32", 17..=20) => Some(1 << 25),
        ("f32", 21..=32) | ("f64", 1..=8) => Some(3 << 23),
        ("f64", 9..=12) => Some(1 << 26),
        _ => None,
    }
}

/// Both sides of every crossover length of [`rows_crossover`] (and of
/// 2²⁰).
fn crossover_sides() -> Vec<usize> {
    [1 << 20, 3 << 23, 1 << 25, 3 << 24, 1 << 26].map(|n: usize| [n - 1, n]).concat()
}

/// `rows_auto_takes` (no device): the crossover table from sm_90 on, at
/// both sides of every crossover, for every width to 70 taps; never before
/// sm_90, nor for other element types.
#[test]
fn rows_auto_rule_by_type_width_and_length() {
    for (ty, w) in ["f32", "f64"].into_iter().flat_map(|ty| (0..=70).map(move |w| (ty, w))) {
        for n in [0, 1].into_iter().chain(crossover_sides()).chain([1 << 27, 1 << 30]) {
            let want = rows_crossover(ty, w).is_some_and(|min| n >= min);
            assert_eq!(rows_auto_takes(90, ty, w, n), want, "{ty} w={w} n={n}");
            assert_eq!(rows_auto_takes(100, ty, w, n), want, "{ty} w={w} n={n}");
            assert!(!rows_auto_takes(80, ty, w, n) && !rows_auto_takes(70, ty, w, n), "{ty} w={w} n={n}");
        }
    }
    assert!((1..=32).all(|w| rows_auto_takes(90, "f32", w, 1 << 27)) && !rows_auto_takes(90, "f32", 33, 1 << 30));
    assert!((1..=12).all(|w| rows_auto_takes(90, "f64", w, 1 << 27)) && !rows_auto_takes(90, "f64", 13, 1 << 30));
    assert!(["f16", "bf16", "u8", ""].iter().all(|ty| !rows_auto_takes(90, ty, 7, 1 << 30)));
}

/// The rows kernels (`Conv1dVariant::Rows`): `Auto` takes them for the
/// element types, widths, lengths and architectures `rows_auto_takes` names
/// and nowhere else; over signals
/// long enough that their launches draw tiles from the work counter, in
/// every mode, both operations (an even width, whose convolution puts one
/// tap fewer left of the centre), from an aligned view (vector copies) and
/// from one element into the buffers (element loads).
#[test]
fn rows_kernels_on_long_signals_and_auto() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for w in [1, 2, 3, 8, 9, 12, 13, 15, 16, 17, 20, 21, 22, 23, 31, 32, 33, 63] {
        let f32conv = Conv1d::new(&gpu, &random::<f32>(&mut rng, w), ConvOp::Correlate, Boundary::Zero).unwrap();
        let f64conv = Conv1d::new(&gpu, &random::<f64>(&mut rng, w), ConvOp::Correlate, Boundary::Zero).unwrap();
        for n in crossover_sides().into_iter().chain([1 << 27]) {
            let plans = [("f32", f32conv.plan(Conv1dVariant::Auto, n)), ("f64", f64conv.plan(Conv1dVariant::Auto, n))];
            for (ty, got) in plans {
                let (got, what) = (got.unwrap(), format!("{ty} w={w} n={n}"));
                // The table from sm_90 PTX on (the rule itself: `rows_auto_rule_by_type_width_and_length`).
                let rows = gpu.ptx_arch() >= 90 && rows_crossover(ty, w).is_some_and(|min| n >= min);
                assert_eq!(got.variant == Conv1dVariant::Rows, rows, "{what}: {}", got.kernel);
            }
        }
    }
    let n = common::big((3 << 22) + 13, (1 << 16) + 13);
    let input: Vec<f32> = random(&mut rng, n);
    for (w, op) in [(16, ConvOp::Convolve), (24, ConvOp::Correlate), (31, ConvOp::Convolve), (32, ConvOp::Correlate)] {
        let mask: Vec<f32> = random(&mut rng, w);
        for mode in Boundary::ALL {
            let conv = Conv1d::new(&gpu, &mask, op, mode).unwrap();
            let plan = conv.plan(Conv1dVariant::Rows, n).unwrap();
            assert!(plan.kernel.starts_with("conv1d_rows") && plan.kernel.ends_with("_f32"), "{}", plan.kernel);
            assert!(n.div_ceil(plan.tile) >= 4 * plan.grid as usize || common::under_sanitizer(), "w={w}: {plan:?}");
            let want = correlate1d_checked(&input, conv.taps(), conv.left(), mode).unwrap();
            for offset in [0, 1] {
                let what = format!("seed={seed} w={w} {} {} offset={offset}", op.name(), mode.name());
                check_one(&gpu, &conv, Conv1dVariant::Rows, &input, offset, &want, &what);
            }
        }
    }
    // Auto on a signal of odd length past the crossover: the rows kernels
    // from views that start on 16 bytes, the fast kernel from views one
    // element in (the rows kernels would copy element by element).
    let n = common::big((3 << 23) + 1, (1 << 16) + 1);
    let input: Vec<f32> = random(&mut rng, n);
    let conv = Conv1d::new(&gpu, &random::<f32>(&mut rng, 27), ConvOp::Correlate, Boundary::Reflect).unwrap();
    let want = correlate1d_checked(&input, conv.taps(), conv.left(), Boundary::Reflect).unwrap();
    let rows = gpu.ptx_arch() >= 90 && rows_crossover("f32", 27).is_some_and(|min| n >= min);
    for (offset, want_rows) in [(0, rows), (1, false), (2, false), (4, rows)] {
        let what = format!("seed={seed} Auto w=27 n={n} offset={offset}");
        let plan = check_one(&gpu, &conv, Conv1dVariant::Auto, &input, offset, &want, &what);
        assert_eq!(plan.variant == Conv1dVariant::Rows, want_rows, "{what}: {}", plan.kernel);
        assert_eq!(conv.plan_views(Conv1dVariant::Auto, n, offset % 4 == 0).unwrap(), plan, "{what}");
    }
    assert_eq!(conv.plan(Conv1dVariant::Auto, n).unwrap().variant == Conv1dVariant::Rows, rows);
}

#[test]
fn error_paths() {
    let gpu = gpu_or_skip!();
    let e = Conv1d::<f32>::new(&gpu, &[], ConvOp::Correlate, Boundary::Zero).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    let conv = Conv1d::new(&gpu, &[1.0f32, 2.0, 3.0], ConvOp::Correlate, Boundary::Zero).unwrap();
    let input = gpu.upload(&[1.0f32; 10]).unwrap();
    let mut output = gpu.alloc_zeroed::<f32>(9).unwrap();
    let e = conv.run(Conv1dVariant::Basic, &input.as_view(), &mut output.as_view_mut()).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 10, got: 9, .. }), "{e}");
    // A mask too wide for the tiled kernel's shared tile on this device.
    let limit = gpu.info().limits.max_shared_per_block_optin as usize;
    let huge = vec![1.0f32; limit / 4];
    let wide = Conv1d::new(&gpu, &huge, ConvOp::Correlate, Boundary::Zero).unwrap();
    let e = wide.plan(Conv1dVariant::Tiled, 10).unwrap_err();
    assert!(e.to_string().contains("shared memory"), "{e}");
    assert_eq!(wide.plan(Conv1dVariant::Auto, 10).unwrap().variant, Conv1dVariant::TiledL2);
    // Zero elements: nothing to do, not an error.
    let empty = gpu.alloc_zeroed::<f32>(0).unwrap();
    let mut empty_out = gpu.alloc_zeroed::<f32>(0).unwrap();
    conv.run(Conv1dVariant::Fast, &empty.as_view(), &mut empty_out.as_view_mut()).unwrap();
}

// ---- CPU only ----

#[derive(serde::Deserialize)]
struct Fixture {
    scipy: String,
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    mode: String,
    op: String,
    input: Vec<f64>,
    mask: Vec<f64>,
    output: Vec<f64>,
}

/// The reference reproduces `scipy.ndimage.correlate1d`/`convolve1d` for
/// every mode, odd and even widths, and masks wider than the input.
#[test]
fn reference_matches_scipy() {
    let text = include_str!("fixtures/scipy_conv1d.json");
    let fixture: Fixture = serde_json::from_str(text).unwrap();
    assert!(fixture.cases.len() >= 500, "fixture has {} cases", fixture.cases.len());
    for (k, c) in fixture.cases.iter().enumerate() {
        let mode = parse_boundary(&c.mode).unwrap();
        let op: ConvOp = c.op.parse().unwrap();
        let got = conv1d(&c.input, &c.mask, op, mode).unwrap();
        for (i, (g, w)) in got.iter().zip(&c.output).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                "case {k} (scipy {}): {} {} n={} w={} output {i}: {g} vs scipy {w}",
                fixture.scipy,
                c.mode,
                c.op,
                c.input.len(),
                c.mask.len()
            );
        }
    }
}

/// The rows kernels' launch needs the device's occupancy: the plain
/// planner refuses it with a typed error naming `Conv1d::plan`.
#[test]
fn plan_1d_refuses_the_rows_kernels() {
    let e = plan_1d::<f32>(&DeviceLimits::H100, 31, Conv1dVariant::Rows, 1 << 20).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }) && e.to_string().contains("Conv1d::plan"), "{e}");
    assert_eq!("rows".parse::<Conv1dVariant>(), Ok(Conv1dVariant::Rows));
    assert_eq!(Conv1dVariant::Rows.name(), "rows");
}

#[test]
fn reference_error_paths() {
    assert!(conv1d::<f32>(&[1.0], &[], ConvOp::Correlate, Boundary::Zero).is_err());
    assert_eq!(conv1d::<f32>(&[], &[1.0], ConvOp::Correlate, Boundary::Wrap).unwrap(), Vec::<f32>::new());
}

/// The fast kernel's persistent, software-pipelined blocks: an input long
/// enough that every block walks several tiles (the plan's grid is below
/// the tile count), with staged interior tiles, edge tiles at both ends
/// and, at w = 300, tiles too wide to stage (the plain-load path), in
/// every boundary mode. From sm_80 the staged tiles go round the shared
/// ring of `FAST_STAGES` buffers (w ≤ 256; 256 is the widest), each
/// refilled several times. 127, 192 and 255 taps run the run-time
/// kernel's four-chunk loop on staged tiles, with 3, no and 3 single
/// chunks after it and a last partial chunk of 3, no and 3 taps. f64
/// runs a compile-time, a run-time and an unstaged width.
fn pipeline_several_tiles<T: ConvElem + Default>(gpu: &Gpu, widths: &[usize]) {
    let (mut rng, seed) = common::rng();
    let n = (1 << 22) + 13;
    let input: Vec<T> = random(&mut rng, n);
    for &w in widths {
        let mask: Vec<T> = random(&mut rng, w);
        for mode in Boundary::ALL {
            let conv = Conv1d::new(gpu, &mask, ConvOp::Correlate, mode).unwrap();
            let plan = conv.plan(Conv1dVariant::Fast, n).unwrap();
            let tiles = n.div_ceil(plan.tile);
            assert!(
                (plan.grid as usize) < tiles,
                "w={w}: grid {} is not below the {tiles} tiles, so no block pipelines",
                plan.grid
            );
            // From sm_80, tiles of masks up to 256 taps go round a ring of
            // FAST_STAGES shared buffers: more tiles per block than
            // buffers, so every buffer is refilled.
            let span = fast_shared_elems(plan.threads as usize, w);
            let ring = gpu.ptx_arch() >= FAST_RING_MIN_SM && w <= 256;
            let want_shared = if ring { FAST_STAGES * span } else { span } * std::mem::size_of::<T>();
            assert_eq!(plan.shared_bytes as usize, want_shared, "{} w={w}: shared bytes", T::NAME);
            assert!(!ring || tiles > FAST_STAGES * plan.grid as usize, "w={w}: {tiles} tiles, grid {}", plan.grid);
            let want = correlate1d_checked(&input, conv.taps(), conv.left(), mode).unwrap();
            let what = format!("fast_blocks_pipeline_several_tiles seed={seed} {} w={w} {}", T::NAME, mode.name());
            check_one(gpu, &conv, Conv1dVariant::Fast, &input, 1, &want, &what);
        }
    }
}

#[test]
fn fast_blocks_pipeline_several_tiles() {
    let gpu = gpu_or_skip!();
    pipeline_several_tiles::<f32>(&gpu, &[3, 6, 31, 64, 127, 192, 255, 256, 300]);
    pipeline_several_tiles::<f64>(&gpu, &[9, 200, 300]);
}
