//! Sums on the GPU against the rayon references: every variant × `i32`,
//! `f32`, `f64` × lengths {0, 1, 31, 32, 33, 1023, 1025, 2^20+7} × start
//! offsets 0 and 1 element (a misaligned start for 128-bit loads).
//!
//! * `i32`: full-range random values (the sum wraps many times), compared
//!   exactly with the wrapping CPU sum.
//! * floats, exactness: small integers (|x| <= 8) whose every partial sum
//!   is exact in the type, so the GPU must match the CPU sum exactly in any
//!   order — a dropped or doubled element cannot hide in a tolerance.
//! * floats, rounding: uniform values in [-1, 1), within the plan's stated
//!   bound `γ_h · Σ|x|` of the compensated f64 reference.
//! * determinism: the same input summed twice gives the same bits.

mod common;

use coalesce::reduce::cpu;
use coalesce::{DeviceBuffer, Gpu, ReduceElem, ReducePolicy, ReduceVariant};
use common::POISON;
use rand::Rng;
use rand::rngs::StdRng;

fn lengths() -> [usize; 8] {
    [0, 1, 31, 32, 33, 1023, 1025, common::big((1 << 20) + 7, (1 << 16) + 7)]
}
const OFFSETS: [usize; 2] = [0, 1];

/// Sums `host[off..off + n]` on the GPU with `variant` into a poisoned
/// output and scratch; returns the value.
fn gpu_sum<T: ReduceElem>(gpu: &Gpu, buf: &DeviceBuffer<T>, off: usize, n: usize, variant: ReduceVariant) -> T {
    let view = buf.view(off..off + n).unwrap();
    let policy = ReducePolicy::default();
    let plan = gpu.reduce_plan(&view, variant, &policy).unwrap();
    let mut scratch = gpu.alloc_zeroed::<T>(plan.scratch_len).unwrap();
    scratch.fill_bytes(POISON).unwrap();
    let mut out = gpu.alloc_zeroed::<T>(1).unwrap();
    out.fill_bytes(POISON).unwrap();
    let got = gpu.reduce_sum_into(&view, &mut scratch.as_view_mut(), &mut out.as_view_mut(), variant, &policy).unwrap();
    assert_eq!(got, plan);
    out.to_vec().unwrap()[0]
}

#[test]
fn i32_sums_are_exact_with_wrapping() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for n in lengths() {
        let host: Vec<i32> = (0..n + 1).map(|_| rng.random()).collect();
        let buf = gpu.upload(&host).unwrap();
        for off in OFFSETS {
            let want = cpu::sum_i32_wrapping(&host[off..off + n]);
            for v in ReduceVariant::ALL {
                let got = gpu_sum(&gpu, &buf, off, n, v);
                assert_eq!(got, want, "i32 {v} n={n} offset={off} seed={seed}");
            }
        }
    }
}

fn small_integers<T: From<i8>>(rng: &mut StdRng, n: usize) -> Vec<T> {
    (0..n).map(|_| T::from(rng.random_range(-8i8..=8))).collect()
}

/// Small integers: every partial sum (|s| <= 8·n < 2^24) is exact in f32
/// and f64, so any summation order gives the exact sum.
fn exact_check<T: ReduceElem + From<i8> + Into<f64> + Copy>(gpu: &Gpu, rng: &mut StdRng, seed: u64) {
    for n in lengths() {
        let host: Vec<T> = small_integers(rng, n + 1);
        if n >= 8 {
            assert!(host.iter().any(|&x| x.into() != 0.0));
        }
        let buf = gpu.upload(&host).unwrap();
        for off in OFFSETS {
            let want: f64 = host[off..off + n].iter().map(|&x| x.into()).sum();
            for v in ReduceVariant::ALL {
                let got: f64 = gpu_sum(gpu, &buf, off, n, v).into();
                assert_eq!(got, want, "{} {v} n={n} offset={off} seed={seed}", T::NAME);
            }
        }
    }
}

#[test]
fn float_sums_of_small_integers_are_exact() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    exact_check::<f32>(&gpu, &mut rng, seed);
    exact_check::<f64>(&gpu, &mut rng, seed);
}

/// Uniform values: within the plan's bound of the compensated reference,
/// and bit-for-bit repeatable.
fn rounding_check<T: ReduceElem + Into<f64> + Copy>(gpu: &Gpu, host: &[T], seed: u64) {
    let buf = gpu.upload(host).unwrap();
    for n in lengths().into_iter().chain([host.len() - 1]) {
        for off in OFFSETS {
            let slice = &host[off..off + n];
            let (exact, abs) = cpu::sum_f64(slice);
            for v in ReduceVariant::ALL {
                let view = buf.view(off..off + n).unwrap();
                let plan = gpu.reduce_plan(&view, v, &ReducePolicy::default()).unwrap();
                let bound = plan.error_bound(T::UNIT_ROUNDOFF, abs) + cpu::sum_f64_error(n, exact, abs);
                let got = gpu_sum(gpu, &buf, off, n, v);
                let err = (got.into() - exact).abs();
                let ctx = format!("{} {v} n={n} offset={off} seed={seed}", T::NAME);
                assert!(
                    err <= bound,
                    "{ctx}: |{:?} - {exact}| = {err:e} > bound {bound:e} (chain {})",
                    got,
                    plan.chain_length()
                );
                let again = gpu_sum(gpu, &buf, off, n, v);
                assert_eq!(again.into().to_bits(), got.into().to_bits(), "{ctx}: not repeatable");
            }
        }
    }
}

#[test]
fn float_sums_are_within_the_stated_bound_and_repeatable() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let big = (1 << 24) + 3;
    let f: Vec<f32> = (0..big).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    rounding_check(&gpu, &f, seed);
    let d: Vec<f64> = (0..big).map(|_| rng.random_range(-1.0f64..1.0)).collect();
    rounding_check(&gpu, &d, seed);
}

#[test]
fn convenience_sum_and_errors() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let host: Vec<i32> = (0..100_003).map(|_| rng.random()).collect();
    let buf = gpu.upload(&host).unwrap();
    let want = cpu::sum_i32_wrapping(&host);
    for v in ReduceVariant::ALL {
        assert_eq!(gpu.reduce_sum(&buf.as_view(), v).unwrap(), want, "{v} seed={seed}");
    }
    // A scratch buffer too small, an output of two elements: errors, no launch.
    let plan = gpu.reduce_plan(&buf.as_view(), ReduceVariant::Interleaved, &ReducePolicy::default()).unwrap();
    assert!(plan.scratch_len > 0);
    let mut scratch = gpu.alloc_zeroed::<i32>(plan.scratch_len - 1).unwrap();
    let mut out = gpu.alloc_zeroed::<i32>(2).unwrap();
    let e = gpu
        .reduce_sum_into(
            &buf.as_view(),
            &mut scratch.as_view_mut(),
            &mut out.view_mut(0..1).unwrap(),
            ReduceVariant::Interleaved,
            &ReducePolicy::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("scratch"), "{e}");
    let e = gpu
        .reduce_sum_into(
            &buf.as_view(),
            &mut scratch.as_view_mut(),
            &mut out.as_view_mut(),
            ReduceVariant::Fast,
            &ReducePolicy::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("out"), "{e}");
    assert_eq!(out.to_vec().unwrap(), [0, 0]);
}
