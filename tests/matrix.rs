//! Matrix addition (lessons 003 and 002 §3.7–3.9) on the GPU against the
//! rayon reference: the row-major, column-major and pitched kernels on
//! matrices of 1×1, 1×1000, 1000×1, 33×65 and 10000×10001 (rows × columns),
//! `sum_matrix_2d` (one and four elements per thread) with every legal
//! block shape of the lesson's sweep, fresh random inputs, poisoned outputs
//! whose padding and tails must stay poisoned; the refused shapes and every
//! error path. The SASS checks at the end need no GPU.

mod common;

use coalesce::inspect::Access;
use coalesce::matrix::reference_add;
use coalesce::{BlockShape, DeviceBuffer, Error, Gpu, LaunchLimit, MatrixLayout, PitchedBuffer, SumVariant, reference};
use common::POISON;
use rand::Rng;
use rand::rngs::StdRng;

/// (rows, columns) of every layout test.
fn shapes() -> [(usize, usize); 5] {
    let big = (common::big(10_000, 1000), common::big(10_001, 1001));
    [(1, 1), (1, 1000), (1000, 1), (33, 65), big]
}
/// Elements after each linear output that no kernel may write.
const PAD: usize = 37;

fn poison_f32() -> f32 {
    f32::from_bits(u32::from_ne_bytes([POISON; 4]))
}

/// Two random inputs (finite, mixed signs, never all zero) and their sum.
fn inputs(rng: &mut StdRng, n: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut draw = || (0..n).map(|_| rng.random_range(-1000.0f32..1000.0)).collect::<Vec<f32>>();
    let (a, b) = (draw(), draw());
    assert!(a.iter().any(|&x| x != 0.0), "random input came out all zero");
    let mut want = vec![0f32; n];
    reference_add(&a, &b, &mut want).unwrap();
    (a, b, want)
}

/// Compares `got` (the output of an `nrow × ncol` matrix stored with
/// `index`) with `want`, bit for bit, naming the first bad element.
fn assert_same(got: &[f32], want: &[f32], ncol_or_nrow: usize, ctx: &str) {
    let g: &[u32] = bytemuck::cast_slice(got);
    let w: &[u32] = bytemuck::cast_slice(want);
    if let Some((i, gv, wv)) = reference::first_mismatch(g, w).unwrap() {
        let never = if gv == poison_f32().to_bits() { " (never written: still the poison)" } else { "" };
        panic!(
            "{ctx}: element {i} (major {} minor {}) is {} ({gv:#010x}), expected {} ({wv:#010x}){never}",
            i / ncol_or_nrow,
            i % ncol_or_nrow,
            f32::from_bits(gv),
            f32::from_bits(wv)
        );
    }
}

fn assert_tail_poisoned(c: &DeviceBuffer<f32>, n: usize, ctx: &str) {
    let tail = c.view(n..n + PAD).unwrap().to_vec().unwrap();
    assert!(tail.iter().all(|t| t.to_bits() == poison_f32().to_bits()), "{ctx}: wrote past the matrix: {tail:?}");
}

fn assert_padding_poisoned(m: &PitchedBuffer<f32>, ctx: &str) {
    let raw = m.raw_bytes().unwrap();
    for r in 0..m.height() {
        let pad = &raw[r * m.pitch() + m.row_bytes()..(r + 1) * m.pitch()];
        assert!(pad.iter().all(|&b| b == POISON), "{ctx}: row {r}'s padding was written");
    }
}

/// Every layout × `blocks` on one `nrow × ncol` matrix.
fn check_layouts(gpu: &Gpu, rng: &mut StdRng, seed: u64, nrow: usize, ncol: usize, blocks: &[BlockShape]) {
    let n = nrow * ncol;
    let (a_host, b_host, want) = inputs(rng, n);
    let (a, b) = (gpu.upload(&a_host).unwrap(), gpu.upload(&b_host).unwrap());
    let mut c = gpu.alloc_zeroed::<f32>(n + PAD).unwrap();
    let pa = gpu.upload_pitched(&a_host, ncol, nrow).unwrap();
    let pb = gpu.upload_pitched(&b_host, ncol, nrow).unwrap();
    let mut pc = gpu.alloc_pitched_zeroed::<f32>(ncol, nrow).unwrap();
    for &block in blocks {
        for layout in [MatrixLayout::RowMajor, MatrixLayout::ColMajor] {
            let ctx = format!("{} {nrow} x {ncol} block {block} seed={seed}", layout.kernel());
            c.fill_bytes(POISON).unwrap();
            let cfg = gpu
                .matrix_add(layout, &a.as_view(), &b.as_view(), &mut c.view_mut(0..n).unwrap(), nrow, ncol, block)
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!((cfg.block.x, cfg.block.y), (block.x, block.y), "{ctx}");
            let got = c.to_vec().unwrap();
            let minor = if layout == MatrixLayout::RowMajor { ncol } else { nrow };
            assert_same(&got[..n], &want, minor, &ctx);
            assert_tail_poisoned(&c, n, &ctx);
        }
        let ctx = format!("matrix_add_pitched {nrow} x {ncol} (pitch {}) block {block} seed={seed}", pc.pitch());
        pc.fill_bytes(POISON).unwrap();
        gpu.matrix_add_pitched(&pa, &pb, &mut pc, block).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert_same(&pc.to_vec().unwrap(), &want, ncol, &ctx);
        assert_padding_poisoned(&pc, &ctx);
    }
    // The kernels never write their inputs.
    assert_eq!(a.to_vec().unwrap(), a_host, "seed={seed}");
    assert_eq!(pb.to_vec().unwrap(), b_host, "seed={seed}");
}

#[test]
fn three_layouts_on_every_shape() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let small = [BlockShape::LESSON_2D, BlockShape::new(128, 2), BlockShape::new(7, 3), BlockShape::new(1, 1)];
    for (nrow, ncol) in shapes() {
        let blocks: &[BlockShape] = if nrow * ncol > 1 << 20 { &small[..2] } else { &small };
        check_layouts(&gpu, &mut rng, seed, nrow, ncol, blocks);
    }
}

fn check_sum(gpu: &Gpu, rng: &mut StdRng, seed: u64, ny: usize, nx: usize, shapes: &[BlockShape]) {
    let n = nx * ny;
    let (a_host, b_host, want) = inputs(rng, n);
    let (a, b) = (gpu.upload(&a_host).unwrap(), gpu.upload(&b_host).unwrap());
    let mut c = gpu.alloc_zeroed::<f32>(n + PAD).unwrap();
    for &shape in shapes {
        for v in SumVariant::ALL {
            let ctx = format!("{} nx={nx} ny={ny} block {shape} seed={seed}", v.kernel());
            c.fill_bytes(POISON).unwrap();
            let cfg = gpu
                .sum_matrix_2d(&a.as_view(), &b.as_view(), &mut c.view_mut(0..n).unwrap(), nx, ny, shape, v)
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let covered_x = cfg.grid.x as usize * shape.x as usize * v.items() as usize;
            assert!(covered_x >= nx && cfg.grid.y as usize * shape.y as usize >= ny, "{ctx}: grid {cfg}");
            assert_same(&c.to_vec().unwrap()[..n], &want, nx, &ctx);
            assert_tail_poisoned(&c, n, &ctx);
        }
    }
}

#[test]
fn sum_matrix_2d_with_every_legal_lesson_shape() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let legal = &BlockShape::LESSON_SWEEP[..14];
    for (ny, nx) in [(1, 1), (1, 1000), (1000, 1), (33, 65), (257, 1031)] {
        check_sum(&gpu, &mut rng, seed, ny, nx, legal);
    }
    let few = [BlockShape::new(32, 16), BlockShape::new(16, 32), BlockShape::new(256, 1)];
    check_sum(&gpu, &mut rng, seed, common::big(10_000, 1000), common::big(10_001, 1001), &few);
}

#[test]
fn the_2048_thread_block_is_refused_before_any_launch() {
    let gpu = gpu_or_skip!();
    let (nx, ny) = (64, 16);
    let a = gpu.upload(&vec![1f32; nx * ny]).unwrap();
    let mut c = gpu.alloc_zeroed::<f32>(nx * ny).unwrap();
    c.fill_bytes(POISON).unwrap();
    let big = BlockShape::new(256, 8);
    let expect = |e: Error, kernel: &str| match &e {
        Error::InvalidLaunch { kernel: k, limit: LaunchLimit::ThreadsPerBlock, max: 1024, value: 2048, .. }
            if *k == kernel =>
        {
            assert!(e.to_string().contains("maximum threads per block is 1024, got 2048"), "{e}")
        }
        _ => panic!("{kernel}: expected InvalidLaunch naming the 1024-thread limit, got {e}"),
    };
    for v in SumVariant::ALL {
        let e = gpu.sum_matrix_2d(&a.as_view(), &a.as_view(), &mut c.as_view_mut(), nx, ny, big, v).unwrap_err();
        expect(e, v.kernel());
        expect(gpu.matrix_launch_config(v.kernel(), ny, nx, big, v.items()).unwrap_err(), v.kernel());
    }
    for layout in [MatrixLayout::RowMajor, MatrixLayout::ColMajor] {
        let e = gpu.matrix_add(layout, &a.as_view(), &a.as_view(), &mut c.as_view_mut(), ny, nx, big).unwrap_err();
        expect(e, layout.kernel());
    }
    let pa = gpu.upload_pitched(&vec![1f32; nx * ny], nx, ny).unwrap();
    let mut pc = gpu.alloc_pitched_zeroed::<f32>(nx, ny).unwrap();
    expect(gpu.matrix_add_pitched(&pa, &pa, &mut pc, big).unwrap_err(), "matrix_add_pitched");
    // Nothing ran.
    gpu.synchronize().unwrap();
    assert!(c.to_vec().unwrap().iter().all(|x| x.to_bits() == poison_f32().to_bits()));
    assert!(pc.to_vec().unwrap().iter().all(|&x| x == 0.0));
}

#[test]
fn matrix_error_paths() {
    let gpu = gpu_or_skip!();
    let a = gpu.upload(&[1f32; 12]).unwrap();
    let mut c = gpu.alloc_zeroed::<f32>(12).unwrap();
    let blk = BlockShape::new(32, 8);
    let (av, rm) = (a.as_view(), MatrixLayout::RowMajor);
    let e = gpu.matrix_add(rm, &av, &av, &mut c.as_view_mut(), 0, 12, blk).unwrap_err();
    assert!(matches!(e, Error::ZeroExtent { width: 12, height: 0, .. }), "{e}");
    let e = gpu.sum_matrix_2d(&av, &av, &mut c.as_view_mut(), 0, 3, blk, SumVariant::X1).unwrap_err();
    assert!(matches!(e, Error::ZeroExtent { .. }), "{e}");
    let e = gpu.matrix_add(rm, &av, &av, &mut c.as_view_mut(), 4, 4, blk).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 16, got: 12, .. }), "{e}");
    let e = gpu.matrix_add(rm, &av, &a.view(0..11).unwrap(), &mut c.view_mut(0..11).unwrap(), 3, 4, blk).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 12, got: 11, .. }), "{e}");
    let e = gpu.matrix_add(rm, &av, &av, &mut c.as_view_mut(), usize::MAX, 2, blk).unwrap_err();
    assert!(matches!(e, Error::ExtentOverflow { .. }), "{e}");
    let e = gpu.matrix_add(rm, &av, &av, &mut c.as_view_mut(), 3, 4, BlockShape::new(0, 4)).unwrap_err();
    assert!(matches!(e, Error::InvalidLaunch { limit: LaunchLimit::ZeroBlockDim(_), .. }), "{e}");
    // More rows than 65535 blocks of one row cover.
    let tall = gpu.alloc_zeroed::<f32>(70_000).unwrap();
    let mut tall_c = gpu.alloc_zeroed::<f32>(70_000).unwrap();
    let e = gpu
        .matrix_add(rm, &tall.as_view(), &tall.as_view(), &mut tall_c.as_view_mut(), 70_000, 1, BlockShape::new(32, 1))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidLaunch { limit: LaunchLimit::GridDim(_), max: 65_535, .. }), "{e}");
    // Pitched operands of different extents.
    let p = gpu.alloc_pitched_zeroed::<f32>(4, 3).unwrap();
    let q = gpu.alloc_pitched_zeroed::<f32>(3, 4).unwrap();
    let mut r = gpu.alloc_pitched_zeroed::<f32>(4, 3).unwrap();
    let e = gpu.matrix_add_pitched(&p, &q, &mut r, blk).unwrap_err();
    assert!(matches!(e, Error::ExtentMismatch { expected: (4, 3), got: (3, 4), .. }), "{e}");
    assert_eq!(c.to_vec().unwrap(), [0.0; 12]);
}

// ---- SASS (no GPU needed) ----

use common::sass::compiled;

const MATRIX_KERNELS: [&str; 5] =
    ["matrix_add_row_major", "matrix_add_col_major", "matrix_add_pitched", "sum_matrix_2d", "sum_matrix_2d_x4"];

#[test]
fn matrix_kernels_move_32_bit_words_without_spills() {
    for c in compiled("matrix_kernels_move_32_bit_words_without_spills") {
        for k in MATRIX_KERNELS {
            let w = c.global_widths(k);
            assert!(w.contains(&(Access::Load, 32)) && w.contains(&(Access::Store, 32)), "sm_{} {k}: {w:?}", c.arch);
            assert!(w.iter().all(|&(_, bits)| bits == 32), "sm_{} {k}: {w:?}", c.arch);
            let r = c.resources_of(k).unwrap_or_else(|| panic!("sm_{}: ptxas did not report {k}", c.arch));
            assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {k}", c.arch);
            println!("sm_{} {k}: {} registers", c.arch, r.registers);
        }
    }
}

#[test]
fn four_elements_per_thread_are_loaded_before_the_first_store() {
    for c in compiled("four_elements_per_thread_are_loaded_before_the_first_store") {
        let sass = c.kernel("sum_matrix_2d_x4").unwrap();
        let first_store = sass.iter().position(|i| i.global_access() == Some((Access::Store, 32))).unwrap();
        let loads = sass[..first_store].iter().filter(|i| i.global_access() == Some((Access::Load, 32))).count();
        let want = 2 * coalesce::kernels::matrix::SUM_ITEMS;
        assert!(loads >= want, "sm_{}: {loads} loads before the first store, want {want}", c.arch);
        // The one-element kernel has exactly its two loads and one store.
        let one = c.kernel("sum_matrix_2d").unwrap();
        let count = |a| one.iter().filter(|i| i.global_access() == Some((a, 32))).count();
        assert_eq!((count(Access::Load), count(Access::Store)), (2, 1), "sm_{}", c.arch);
    }
}
