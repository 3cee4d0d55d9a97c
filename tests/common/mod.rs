//! Shared runner for the GPU integration tests: one way to get a device or
//! skip, one way to draw fresh random inputs, one poison byte.
//!
//! * Without a GPU each test prints one `skipped: no CUDA device` line (to
//!   the real stderr, so `cargo test` shows it) and passes. With
//!   `COALESCE_EXPECT_GPU=1` (the GPU bundle's runner sets it) a missing
//!   device fails the test instead, so nothing is silently skipped there.
//! * Inputs are random and fresh on every run; the seed is printed on
//!   failure and can be pinned with `COALESCE_TEST_SEED`.
#![allow(dead_code)]

pub mod sass;

use std::io::Write as _;

use coalesce::Gpu;
use coalesce::conv::batch::Sample;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The byte every output buffer is filled with before a kernel runs: a
/// kernel that fails to write an element leaves 0xA5A5A5A5 behind.
pub const POISON: u8 = 0xA5;

/// The device, or `None` after printing the skip line.
pub fn gpu(test: &str) -> Option<Gpu> {
    match Gpu::new() {
        Ok(g) => Some(g),
        Err(e) if e.is_no_device() => {
            if std::env::var("COALESCE_EXPECT_GPU").is_ok_and(|v| v == "1") {
                panic!("{test}: COALESCE_EXPECT_GPU=1 but {e}");
            }
            let _ = writeln!(std::io::stderr(), "{test}: skipped: no CUDA device ({e})");
            None
        }
        Err(e) => panic!("{test}: creating the GPU handle failed: {e}"),
    }
}

/// `let gpu = gpu_or_skip!();` at the top of a GPU test (the skip line
/// names the test).
#[macro_export]
macro_rules! gpu_or_skip {
    () => {{
        fn here() {}
        let name = std::any::type_name_of_val(&here).trim_end_matches("::here");
        match common::gpu(name) {
            Some(g) => g,
            None => return,
        }
    }};
}

/// A seeded generator: `COALESCE_TEST_SEED` if set, else fresh entropy.
/// The seed is returned so failures can name it.
pub fn rng() -> (StdRng, u64) {
    let seed =
        std::env::var("COALESCE_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| rand::rng().random());
    (StdRng::seed_from_u64(seed), seed)
}

/// `n` random bytes (never all zero for n ≥ 8, with overwhelming
/// probability; asserted so a broken generator cannot hide bugs).
pub fn random_bytes(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rng.fill(&mut v[..]);
    if n >= 8 {
        assert!(v.iter().any(|&b| b != 0), "random input came out all zero");
    }
    v
}

/// `n` random `u32`s.
pub fn random_u32(rng: &mut StdRng, n: usize) -> Vec<u32> {
    let mut v = vec![0u32; n];
    rng.fill(&mut v[..]);
    if n >= 2 {
        assert!(v.iter().any(|&x| x != 0), "random input came out all zero");
    }
    v
}

/// True when the bundle's runner runs these tests under compute-sanitizer
/// (it sets `COALESCE_UNDER_SANITIZER=1`). Instrumented runs are 10–100×
/// slower, so [`big`] shrinks the largest inputs; every path (interior and
/// edge tiles, partial tiles, misaligned views) is still exercised.
pub fn under_sanitizer() -> bool {
    std::env::var("COALESCE_UNDER_SANITIZER").is_ok_and(|v| v == "1")
}

/// `full` normally, `reduced` under a sanitizer (see [`under_sanitizer`]).
pub fn big(full: usize, reduced: usize) -> usize {
    if under_sanitizer() { reduced } else { full }
}

/// A random value of a storage type: integers over the type's whole range,
/// floats in ±8 (exact in every float type, so a reference sees what the
/// GPU sees).
pub fn sample<S: Sample>(rng: &mut StdRng) -> S {
    match S::NAME {
        "u8" => S::from_f64(rng.random_range(0..=255u32) as f64),
        "u16" => S::from_f64(rng.random_range(0..=65535u32) as f64),
        _ => S::from_f64(rng.random_range(-8.0f64..8.0)),
    }
}

/// `n` random values of a storage type ([`sample`]), not all zero for
/// n ≥ 4 (asserted).
pub fn samples<S: Sample>(rng: &mut StdRng, n: usize) -> Vec<S> {
    let v: Vec<S> = (0..n).map(|_| sample(rng)).collect();
    assert!(n < 4 || v.iter().any(|x| x.to_f64() != 0.0), "random input came out all zero");
    v
}
