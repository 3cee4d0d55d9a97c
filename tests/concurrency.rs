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
use coalesce::conv::reference2d::{Image, correlate2d_checked};
use coalesce::conv::{Boundary, Conv1d, Conv1dVariant, Conv2d, Conv2dVariant, ConvOp};
use coalesce::{ConstantVariant, Gpu};
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

/// One thread's 1D work: its own 7-tap mask, the constant, tiled and fast
/// kernels over `n` samples, `rounds()` times; returns the wrong results.
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
        for variant in [Conv1dVariant::Const, Conv1dVariant::Tiled, Conv1dVariant::Fast] {
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
