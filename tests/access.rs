//! Lesson 004's kernels on the GPU against the rayon references: the
//! offset and stride copies (offsets 0..=32 and strides 1..=32 at the
//! extremes and between), the three point layouts, the local-memory and
//! register histograms, and the 2D widths the `access` suite runs (1, 31,
//! 33, 8191: linear and pitched). Fresh random inputs, poisoned outputs
//! with a poisoned margin after them that must stay poisoned (so must the
//! gaps of a strided write), odd sizes; every error answered before a
//! launch.

mod common;

use coalesce::access::{self, Pattern};
use coalesce::alignment::{self, Point12, Point16, PointLayout, Transform};
use coalesce::local::{self, BINS, HistogramVariant};
use coalesce::matrix::reference_add;
use coalesce::{BlockShape, Error, Gpu, MatrixLayout, reference};
use common::POISON;
use rand::Rng;
use rand::rngs::StdRng;

/// Poisoned elements after every output that no kernel may write.
const PAD: usize = 41;

fn poison_f32() -> f32 {
    f32::from_bits(u32::from_ne_bytes([POISON; 4]))
}

fn random_f32(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1000.0f32..1000.0)).collect();
    assert!(n < 2 || v.iter().any(|&x| x != 0.0), "random input came out all zero");
    v
}

/// `got` and `want` bit for bit, naming the first difference.
fn assert_bits<T: bytemuck::Pod + Send + Sync>(got: &[T], want: &[T], ctx: &str) {
    let g: &[u32] = bytemuck::cast_slice(got);
    let w: &[u32] = bytemuck::cast_slice(want);
    if let Some((i, gv, wv)) = reference::first_mismatch(g, w).unwrap() {
        let words = std::mem::size_of::<T>() / 4;
        let never = if gv == poison_f32().to_bits() { " (still the poison)" } else { "" };
        let stray = if wv == poison_f32().to_bits() { " (the kernel wrote where it must not)" } else { "" };
        panic!(
            "{ctx}: element {} word {} is {gv:#010x} ({}), expected {wv:#010x} ({}){never}{stray}",
            i / words,
            i % words,
            f32::from_bits(gv),
            f32::from_bits(wv)
        );
    }
}

/// One pattern over `n` elements: random source (with margin), poisoned
/// destination (with margin), compared in full with the reference applied
/// to a poisoned host copy.
fn check_pattern(gpu: &Gpu, rng: &mut StdRng, seed: u64, pattern: Pattern, n: usize) {
    let ctx = format!("{pattern} n={n} seed={seed}");
    let (need_src, need_dst) = pattern.extents(n).unwrap();
    let src_host = random_f32(rng, need_src + PAD);
    let src = gpu.upload(&src_host).unwrap();
    let mut dst = gpu.alloc_zeroed::<f32>(need_dst + PAD).unwrap();
    dst.fill_bytes(POISON).unwrap();
    let cfg = gpu
        .access_pattern(pattern, &src.as_view(), &mut dst.as_view_mut(), n)
        .unwrap_or_else(|e| panic!("{ctx}: {e}"))
        .unwrap_or_else(|| panic!("{ctx}: nothing launched"));
    assert!(cfg.grid.x as usize * cfg.block.x as usize >= n, "{ctx}: {cfg}");
    let mut want = vec![poison_f32(); need_dst + PAD];
    access::reference(pattern, &src_host, &mut want, n).unwrap();
    assert_bits(&dst.to_vec().unwrap(), &want, &ctx);
    assert_eq!(src.to_vec().unwrap(), src_host, "{ctx}: the source changed");
}

#[test]
fn offsets_and_strides_match_the_reference() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let params = [0usize, 1, 2, 7, 8, 16, 31, 32];
    for n in [1usize, 31, 32, 33, 255, 257, 1000] {
        for &p in &params {
            check_pattern(&gpu, &mut rng, seed, Pattern::ReadOffset(p), n);
            check_pattern(&gpu, &mut rng, seed, Pattern::WriteOffset(p), n);
            let s = p.max(1);
            check_pattern(&gpu, &mut rng, seed, Pattern::ReadStride(s), n);
            check_pattern(&gpu, &mut rng, seed, Pattern::WriteStride(s), n);
        }
    }
    // A few MiB, odd: many blocks, a partial last one; the extremes only.
    let n = common::big((1 << 20) + 3, 4099);
    for p in [Pattern::ReadOffset(0), Pattern::ReadOffset(32), Pattern::WriteOffset(1), Pattern::WriteOffset(32)] {
        check_pattern(&gpu, &mut rng, seed, p, n);
    }
    for p in [Pattern::ReadStride(1), Pattern::ReadStride(32), Pattern::WriteStride(3), Pattern::WriteStride(32)] {
        check_pattern(&gpu, &mut rng, seed, p, n);
    }
}

#[test]
fn pattern_errors_come_before_any_launch() {
    let gpu = gpu_or_skip!();
    let src = gpu.upload(&[1f32; 64]).unwrap();
    let mut dst = gpu.alloc_zeroed::<f32>(64).unwrap();
    dst.fill_bytes(POISON).unwrap();
    let run =
        |p, n, dst: &mut coalesce::DeviceBuffer<f32>| gpu.access_pattern(p, &src.as_view(), &mut dst.as_view_mut(), n);
    let e = run(Pattern::ReadStride(0), 4, &mut dst).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "read_stride", .. }), "{e}");
    // 33 + 32 > 64 source elements; 3 · 31 + 1 > 64 destination elements.
    let e = run(Pattern::ReadOffset(32), 33, &mut dst).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { op: "read_offset", end: 65, len: 64, .. }), "{e}");
    let e = run(Pattern::WriteStride(3), 32, &mut dst).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { op: "write_stride", end: 94, len: 64, .. }), "{e}");
    let e = run(Pattern::WriteOffset(usize::MAX), 2, &mut dst).unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
    assert_eq!(run(Pattern::WriteStride(32), 0, &mut dst).unwrap(), None);
    gpu.synchronize().unwrap();
    assert!(dst.to_vec().unwrap().iter().all(|x| x.to_bits() == poison_f32().to_bits()), "a refused launch ran");
}

/// A power-of-two scale (so a fused multiply-add cannot change a bit) and
/// random shifts.
fn transform(rng: &mut StdRng) -> Transform {
    let scale = [0.5f32, 2.0, -4.0, 0.125][rng.random_range(0..4)];
    Transform { scale, shift: [0, 1, 2].map(|_| rng.random_range(-100.0f32..100.0)) }
}

fn check_points(gpu: &Gpu, rng: &mut StdRng, seed: u64, n: usize) {
    let t = transform(rng);
    let ctx = |l: PointLayout| format!("{} n={n} {t:?} seed={seed}", l.kernel());
    let c: [Vec<f32>; 3] = [0, 1, 2].map(|_| random_f32(rng, n + PAD));

    let a12: Vec<Point12> = (0..n + PAD).map(|i| Point12 { x: c[0][i], y: c[1][i], z: c[2][i] }).collect();
    let src = gpu.upload(&a12).unwrap();
    let mut dst = gpu.alloc_zeroed::<Point12>(n + PAD).unwrap();
    dst.fill_bytes(POISON).unwrap();
    gpu.transform_aos12(&src.as_view(), &mut dst.as_view_mut(), n, t).unwrap();
    let p = poison_f32();
    let mut want = vec![Point12 { x: p, y: p, z: p }; n + PAD];
    alignment::reference_aos12(&a12[..n], &mut want[..n], t).unwrap();
    assert_bits(&dst.to_vec().unwrap(), &want, &ctx(PointLayout::Aos12));

    // Random padding in the input: the kernel must still write 0 there.
    let a16: Vec<Point16> =
        (0..n + PAD).map(|i| Point16 { x: c[0][i], y: c[1][i], z: c[2][i], pad: rng.random() }).collect();
    let src = gpu.upload(&a16).unwrap();
    let mut dst = gpu.alloc_zeroed::<Point16>(n + PAD).unwrap();
    dst.fill_bytes(POISON).unwrap();
    gpu.transform_aos16(&src.as_view(), &mut dst.as_view_mut(), n, t).unwrap();
    let mut want = vec![Point16 { x: p, y: p, z: p, pad: p }; n + PAD];
    alignment::reference_aos16(&a16[..n], &mut want[..n], t).unwrap();
    assert_bits(&dst.to_vec().unwrap(), &want, &ctx(PointLayout::Aos16));
    // A view one point in is still 16-byte aligned.
    dst.fill_bytes(POISON).unwrap();
    gpu.transform_aos16(&src.view(1..n + 1).unwrap(), &mut dst.view_mut(1..n + 1).unwrap(), n, t).unwrap();
    let mut want = vec![Point16 { x: p, y: p, z: p, pad: p }; n + PAD];
    alignment::reference_aos16(&a16[1..n + 1], &mut want[1..n + 1], t).unwrap();
    assert_bits(&dst.to_vec().unwrap(), &want, &format!("{} (view from point 1)", ctx(PointLayout::Aos16)));

    let s = c.clone().map(|v| gpu.upload(&v).unwrap());
    let mut d = [0, 1, 2].map(|_| gpu.alloc_zeroed::<f32>(n + PAD).unwrap());
    for b in &mut d {
        b.fill_bytes(POISON).unwrap();
    }
    {
        let [dx, dy, dz] = &mut d;
        let (mut vx, mut vy, mut vz) = (dx.as_view_mut(), dy.as_view_mut(), dz.as_view_mut());
        gpu.transform_soa([&s[0].as_view(), &s[1].as_view(), &s[2].as_view()], [&mut vx, &mut vy, &mut vz], n, t)
            .unwrap();
    }
    let mut want = [0, 1, 2].map(|_| vec![p; n + PAD]);
    let [wx, wy, wz] = &mut want;
    alignment::reference_soa([&c[0][..n], &c[1][..n], &c[2][..n]], [&mut wx[..n], &mut wy[..n], &mut wz[..n]], t)
        .unwrap();
    for (k, axis) in ["x", "y", "z"].iter().enumerate() {
        assert_bits(&d[k].to_vec().unwrap(), &want[k], &format!("{} ({axis} array)", ctx(PointLayout::Soa)));
    }
}

#[test]
fn point_layouts_match_the_reference() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for n in [1usize, 31, 33, 255, 256, 257, 5001, common::big((1 << 18) + 1, 4097)] {
        check_points(&gpu, &mut rng, seed, n);
    }
}

#[test]
fn point_errors_come_before_any_launch() {
    let gpu = gpu_or_skip!();
    let t = Transform { scale: 1.0, shift: [0.0; 3] };
    let src = gpu.alloc_zeroed::<Point12>(10).unwrap();
    let mut dst = gpu.alloc_zeroed::<Point12>(9).unwrap();
    let e = gpu.transform_aos12(&src.as_view(), &mut dst.as_view_mut(), 10, t).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { op: "points_aos12", end: 10, len: 9, .. }), "{e}");
    assert_eq!(gpu.transform_aos12(&src.as_view(), &mut dst.as_view_mut(), 0, t).unwrap(), None);
    let s16 = gpu.alloc_zeroed::<Point16>(3).unwrap();
    let mut d16 = gpu.alloc_zeroed::<Point16>(4).unwrap();
    let e = gpu.transform_aos16(&s16.as_view(), &mut d16.as_view_mut(), 4, t).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { op: "points_aos16", end: 4, len: 3, .. }), "{e}");
    let f = gpu.alloc_zeroed::<f32>(8).unwrap();
    let mut o = [0, 1, 2].map(|_| gpu.alloc_zeroed::<f32>(8).unwrap());
    let [a, b, c] = &mut o;
    let e = gpu
        .transform_soa(
            [&f.as_view(), &f.view(0..7).unwrap(), &f.as_view()],
            [&mut a.as_view_mut(), &mut b.as_view_mut(), &mut c.as_view_mut()],
            8,
            t,
        )
        .unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { op: "points_soa", end: 8, len: 7, .. }), "{e}");
}

fn check_histogram(gpu: &Gpu, rng: &mut StdRng, seed: u64, n: usize, blocks: u32, shift: u32) {
    let data = common::random_u32(rng, n);
    let d = gpu.upload(&data).unwrap();
    let len = local::counts_len(blocks);
    let mut want = vec![0u32; len];
    local::reference_histogram(&data, shift, &mut want).unwrap();
    assert_eq!(want.iter().map(|&c| c as usize).sum::<usize>(), n, "reference: every element counted once");
    let mut counts = gpu.alloc_zeroed::<u32>(len + PAD).unwrap();
    for v in HistogramVariant::ALL {
        let ctx = format!("{} n={n} blocks={blocks} shift={shift} seed={seed}", v.kernel());
        counts.fill_bytes(POISON).unwrap();
        gpu.local_histogram(v, &d.as_view(), &mut counts.view_mut(0..len).unwrap(), shift, blocks)
            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let mut w = want.clone();
        w.extend(std::iter::repeat_n(u32::from_ne_bytes([POISON; 4]), PAD));
        let got = counts.to_vec().unwrap();
        if let Some((i, g, x)) = reference::first_mismatch(&got, &w).unwrap() {
            let threads = len / BINS;
            panic!("{ctx}: count {i} (bin {}, thread {}) is {g:#x}, expected {x:#x}", i / threads, i % threads);
        }
    }
}

#[test]
fn local_and_register_histograms_match_the_reference() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let full = gpu.histogram_blocks(HistogramVariant::Local, 1).unwrap();
    for n in [0usize, 1, 33, 4097, 70_001] {
        for blocks in [1u32, 3] {
            check_histogram(&gpu, &mut rng, seed, n, blocks, [0, 4, 28][n % 3]);
        }
    }
    check_histogram(&gpu, &mut rng, seed, common::big((1 << 22) + 5, 70_001), full, 0);
    check_histogram(&gpu, &mut rng, seed, common::big((1 << 20) + 7, 9_999), full, 31);
}

#[test]
fn histogram_errors_come_before_any_launch() {
    let gpu = gpu_or_skip!();
    let d = gpu.upload(&[1u32; 100]).unwrap();
    let mut c = gpu.alloc_zeroed::<u32>(local::counts_len(2)).unwrap();
    let v = HistogramVariant::Registers;
    let e = gpu.local_histogram(v, &d.as_view(), &mut c.as_view_mut(), 32, 2).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    let e = gpu.local_histogram(v, &d.as_view(), &mut c.as_view_mut(), 0, 0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    let e = gpu.local_histogram(v, &d.as_view(), &mut c.as_view_mut(), 0, 3).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected, .. } if expected == local::counts_len(3)), "{e}");
}

/// The access suite's 2D part runs the matrix kernels on rows whose width
/// is or is not a multiple of 32: check them at exactly such widths,
/// linear and pitched, with the suite's block.
#[test]
fn two_d_widths_linear_and_pitched() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let block = BlockShape::new(32, 8);
    for (width, rows) in [(1usize, 5usize), (31, 9), (32, 8), (33, 17), (8191, common::big(67, 9)), (8200, 3)] {
        let n = width * rows;
        let (a, b) = (random_f32(&mut rng, n), random_f32(&mut rng, n));
        let mut want = vec![0f32; n];
        reference_add(&a, &b, &mut want).unwrap();
        let ctx = format!("{width} x {rows} seed={seed}");

        let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
        let mut dc = gpu.alloc_zeroed::<f32>(n + PAD).unwrap();
        dc.fill_bytes(POISON).unwrap();
        let mut view = dc.view_mut(0..n).unwrap();
        gpu.matrix_add(MatrixLayout::RowMajor, &da.as_view(), &db.as_view(), &mut view, rows, width, block).unwrap();
        let mut w = want.clone();
        w.extend(std::iter::repeat_n(poison_f32(), PAD));
        assert_bits(&dc.to_vec().unwrap(), &w, &format!("linear {ctx}"));

        let pa = gpu.upload_pitched(&a, width, rows).unwrap();
        let pb = gpu.upload_pitched(&b, width, rows).unwrap();
        let mut pc = gpu.alloc_pitched_zeroed::<f32>(width, rows).unwrap();
        pc.fill_bytes(POISON).unwrap();
        gpu.matrix_add_pitched(&pa, &pb, &mut pc, block).unwrap();
        assert_bits(&pc.to_vec().unwrap(), &want, &format!("pitched {ctx} (pitch {})", pc.pitch()));
        let raw = pc.raw_bytes().unwrap();
        for r in 0..rows {
            let pad = &raw[r * pc.pitch() + pc.row_bytes()..(r + 1) * pc.pitch()];
            assert!(pad.iter().all(|&x| x == POISON), "pitched {ctx}: row {r}'s padding was written");
        }
    }
}
