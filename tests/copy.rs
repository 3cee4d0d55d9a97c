//! Vectorized copy (lesson 000) on the GPU against the rayon reference:
//! every variant × lengths {0..5, 1023..1025, 2^20+3, 2^26} × start offsets
//! 0..7, on fresh random data, into poisoned outputs whose untouched
//! elements must stay poisoned (no write outside the destination view).

mod common;

use bytemuck::Pod;
use coalesce::reference;
use coalesce::{CopyPolicy, CopyVariant, DeviceCopy, Gpu, Width};
use common::POISON;
use rand::rngs::StdRng;

const VARIANTS: [CopyVariant; 4] = [CopyVariant::Scalar, CopyVariant::Vec2, CopyVariant::Vec4, CopyVariant::Auto];
const LENGTHS: [usize; 11] = [0, 1, 2, 3, 4, 5, 1023, 1024, 1025, (1 << 20) + 3, 1 << 26];
/// Room around every view so writes outside it are caught.
const PAD: usize = 8;

fn poisoned<T: Pod>(n: usize) -> Vec<T> {
    let mut v = vec![T::zeroed(); n];
    bytemuck::cast_slice_mut::<T, u8>(&mut v).fill(POISON);
    v
}

fn random<T: Pod>(rng: &mut StdRng, n: usize) -> Vec<T> {
    let mut v = vec![T::zeroed(); n];
    let bytes = common::random_bytes(rng, n * std::mem::size_of::<T>());
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(&bytes);
    v
}

/// Both kernel families: the tuned kernels and the lesson's `_x1` ones.
const POLICIES: [CopyPolicy; 2] = [CopyPolicy::TUNED, CopyPolicy::LESSON];

/// Copies `n` elements from offset `so` of a random source to offset `d_o`
/// of a poisoned destination with every variant and both policies, and
/// compares the whole destination (view and padding) with the reference.
fn check<T: DeviceCopy + Pod + Send + Sync>(
    gpu: &Gpu,
    rng: &mut StdRng,
    seed: u64,
    n: usize,
    offsets: &[(usize, usize)],
) {
    check_with::<T>(gpu, rng, seed, n, offsets, &POLICIES)
}

fn check_with<T: DeviceCopy + Pod + Send + Sync>(
    gpu: &Gpu,
    rng: &mut StdRng,
    seed: u64,
    n: usize,
    offsets: &[(usize, usize)],
    policies: &[CopyPolicy],
) {
    let host_src: Vec<T> = random(rng, n + PAD);
    let src = gpu.upload(&host_src).unwrap();
    let mut dst = gpu.alloc_zeroed::<T>(n + PAD).unwrap();
    for (&(so, d_o), policy) in offsets.iter().flat_map(|o| policies.iter().map(move |p| (o, p))) {
        for v in VARIANTS {
            let ctx = format!("T={} n={n} src+{so} dst+{d_o} {v} {policy:?} seed={seed}", std::any::type_name::<T>());
            dst.fill_bytes(POISON).unwrap();
            let plan = gpu
                .copy_with(&src.view(so..so + n).unwrap(), &mut dst.view_mut(d_o..d_o + n).unwrap(), v, policy)
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let got = dst.to_vec().unwrap();
            let mut want: Vec<T> = poisoned(n + PAD);
            reference::copy(&host_src[so..so + n], &mut want[d_o..d_o + n]).unwrap();
            let (g, w) = (bytemuck::cast_slice::<T, u8>(&got), bytemuck::cast_slice::<T, u8>(&want));
            if let Some((i, gb, wb)) = reference::first_mismatch(g, w).unwrap() {
                panic!(
                    "{ctx}: byte {i} (element {}) is {gb:#04x}, expected {wb:#04x}; plan {plan:?}",
                    i / std::mem::size_of::<T>()
                );
            }
            assert_eq!(plan.bytes, n * std::mem::size_of::<T>(), "{ctx}");
        }
    }
}

#[test]
fn u32_every_variant_length_and_offset() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let same: Vec<(usize, usize)> = (0..8).map(|o| (o, o)).collect();
    for n in LENGTHS {
        check_with::<u32>(&gpu, &mut rng, seed, n, &same, &[CopyPolicy::TUNED]);
        // The lesson's kernels on every length too (offsets 0, 1, 3 at the
        // largest, to bound the run time).
        let lesson: &[(usize, usize)] = if n >= 1 << 26 { &[(0, 0), (1, 1), (3, 3)] } else { &same };
        check_with::<u32>(&gpu, &mut rng, seed, n, lesson, &[CopyPolicy::LESSON]);
    }
}

#[test]
fn u32_source_and_destination_misaligned_relative_to_each_other() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let pairs: Vec<(usize, usize)> = (0..8).flat_map(|a| (0..8).map(move |b| (a, b))).collect();
    for n in [5, 1025, (1 << 20) + 3] {
        check::<u32>(&gpu, &mut rng, seed, n, &pairs);
    }
}

#[test]
fn byte_and_odd_sized_elements_use_fringes_and_fallbacks() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let pairs: Vec<(usize, usize)> = [(0, 0), (1, 1), (2, 2), (3, 3), (1, 2), (3, 0), (5, 7)].into();
    for n in [0, 1, 2, 3, 5, 17, 1025, (1 << 20) + 3] {
        check::<u8>(&gpu, &mut rng, seed, n, &pairs);
        check::<u16>(&gpu, &mut rng, seed, n, &pairs);
        check::<[u8; 3]>(&gpu, &mut rng, seed, n, &pairs);
        check::<u64>(&gpu, &mut rng, seed, n, &pairs);
        check::<[f32; 3]>(&gpu, &mut rng, seed, n, &pairs);
    }
}

#[test]
fn plan_reports_the_width_used() {
    let gpu = gpu_or_skip!();
    let (mut rng, _) = common::rng();
    let src = gpu.upload(&common::random_u32(&mut rng, 4096)).unwrap();
    let mut dst = gpu.alloc_zeroed::<u32>(4096).unwrap();
    // The lesson's `d_in + 1`: vec4 requested, head peeled, body still 128-bit.
    let p = gpu.copy(&src.view(1..4001).unwrap(), &mut dst.view_mut(1..4001).unwrap(), CopyVariant::Vec4).unwrap();
    assert_eq!(p.width, Width::Vec128);
    assert_eq!(p.split.unwrap().head, 3);
    // Offsets 1 and 2 words apart: no 64- or 128-bit access is legal on both.
    let p = gpu.copy(&src.view(1..4001).unwrap(), &mut dst.view_mut(2..4002).unwrap(), CopyVariant::Vec4).unwrap();
    assert_eq!(p.width, Width::Word32);
    assert!(p.downgraded());
    // Offsets 0 and 2 words apart: 64-bit is legal on both.
    let p = gpu.copy(&src.view(0..4000).unwrap(), &mut dst.view_mut(2..4002).unwrap(), CopyVariant::Auto).unwrap();
    assert_eq!(p.width, Width::Vec64);
    assert_eq!(dst.view(2..4002).unwrap().to_vec().unwrap(), src.view(0..4000).unwrap().to_vec().unwrap());
}

#[test]
fn driver_copy_matches_reference() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let host = common::random_u32(&mut rng, (1 << 20) + 3);
    let src = gpu.upload(&host).unwrap();
    let mut dst = gpu.alloc_zeroed::<u32>(host.len()).unwrap();
    dst.fill_bytes(POISON).unwrap();
    gpu.copy_with_driver(&src.as_view(), &mut dst.as_view_mut()).unwrap();
    assert_eq!(reference::first_mismatch(&dst.to_vec().unwrap(), &host).unwrap(), None, "seed={seed}");
}

#[test]
fn unknown_item_count_is_refused() {
    let gpu = gpu_or_skip!();
    let src = gpu.upload(&[1u32; 64]).unwrap();
    let mut dst = gpu.alloc_zeroed::<u32>(64).unwrap();
    let policy = CopyPolicy { items: 3, ..CopyPolicy::TUNED };
    let e = gpu.copy_with(&src.as_view(), &mut dst.as_view_mut(), CopyVariant::Vec4, &policy).unwrap_err();
    assert!(e.to_string().contains("3 items per thread"), "{e}");
    assert_eq!(dst.to_vec().unwrap(), [0; 64]);
}
