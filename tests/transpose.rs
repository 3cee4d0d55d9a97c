//! Matrix transpose (lesson 004, shared-memory banks) on the GPU against
//! the rayon reference: the naive, tiled (32 × 32) and padded (32 × 33)
//! kernels at every block height (32 × 4, 8, 16, 32) on 1 × 1, 1 × N,
//! N × 1, 33 × 65, 65 × 33, 1000 × 1007, sizes whose sides are multiples
//! of 32 and a large rectangle; fresh random inputs, poisoned outputs whose
//! tail past the matrix must stay poisoned, inputs that must stay unchanged;
//! the kernels' loop over tile rows beyond `gridDim.y`; every error path.

mod common;

use coalesce::transpose::reference_transpose;
use coalesce::{DeviceBuffer, Error, Gpu, TransposePolicy, TransposeVariant};
use common::POISON;
use rand::Rng;
use rand::rngs::StdRng;

/// Elements after each output that no kernel may write.
const PAD: usize = 37;

fn poison_bits() -> u32 {
    u32::from_ne_bytes([POISON; 4])
}

/// (rows, columns) of every shape test.
fn shapes() -> Vec<(usize, usize)> {
    vec![
        (1, 1),
        (1, 1000),
        (1000, 1),
        (1, 33),
        (31, 1),
        (33, 65),
        (65, 33),
        (32, 32),
        (64, 96),
        (96, 64),
        (1000, 1007),
        (common::big(2048, 256), common::big(4096, 512)),
        (common::big(3001, 301), common::big(2999, 299)),
    ]
}

/// Random finite values with mixed signs (never all zero).
fn random_matrix(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1000.0f32..1000.0)).collect();
    assert!(v.iter().any(|&x| x != 0.0), "random input came out all zero");
    v
}

/// Compares bit for bit, naming the first bad element as (row, column) of
/// the `cols × rows` output.
fn assert_transposed(got: &[f32], want: &[f32], rows: usize, ctx: &str) {
    let g: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
    let w: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
    if let Some((i, gv, wv)) = coalesce::reference::first_mismatch(&g, &w).unwrap() {
        let never = if gv == poison_bits() { " (never written: still the poison)" } else { "" };
        panic!(
            "{ctx}: output ({}, {}) = input ({}, {}) is {} ({gv:#010x}), expected {} ({wv:#010x}){never}",
            i / rows,
            i % rows,
            i % rows,
            i / rows,
            f32::from_bits(gv),
            f32::from_bits(wv)
        );
    }
}

/// Every variant at every policy on one `rows × cols` matrix.
fn check(gpu: &Gpu, rng: &mut StdRng, seed: u64, rows: usize, cols: usize, policies: &[TransposePolicy]) {
    let n = rows * cols;
    let host = random_matrix(rng, n);
    let mut want = vec![0f32; n];
    reference_transpose(&host, rows, cols, &mut want).unwrap();
    let src = gpu.upload(&host).unwrap();
    let mut dst: DeviceBuffer<f32> = gpu.alloc_zeroed(n + PAD).unwrap();
    for &policy in policies {
        for v in TransposeVariant::ALL {
            let ctx = format!(
                "{} {rows} x {cols}, block 32 x {}, grid cap {:?}, seed={seed}",
                v.kernel(policy.block_rows).unwrap(),
                policy.block_rows,
                policy.max_grid_y
            );
            dst.fill_bytes(POISON).unwrap();
            let cfg = gpu
                .transpose_with(&src.as_view(), &mut dst.view_mut(0..n).unwrap(), rows, cols, v, policy)
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!((cfg.block.x, cfg.block.y), (32, policy.block_rows), "{ctx}");
            assert!(cfg.grid.x as usize * 32 >= cols, "{ctx}: grid {cfg}");
            let got = dst.to_vec().unwrap();
            assert_transposed(&got[..n], &want, rows, &ctx);
            assert!(got[n..].iter().all(|x| x.to_bits() == poison_bits()), "{ctx}: wrote past the matrix");
        }
    }
    assert_eq!(src.to_vec().unwrap(), host, "a kernel wrote its input (seed={seed})");
}

fn every_height() -> Vec<TransposePolicy> {
    TransposePolicy::BLOCK_ROWS.iter().map(|&r| TransposePolicy::with_block_rows(r)).collect()
}

#[test]
fn every_kernel_at_every_block_height_on_every_shape() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for (rows, cols) in shapes() {
        check(&gpu, &mut rng, seed, rows, cols, &every_height());
    }
}

#[test]
fn blocks_loop_over_tile_rows_beyond_the_grid() {
    // gridDim.y capped at 1, 2 and 3: each block transposes several tile
    // rows, reusing its shared tile (a barrier between tiles).
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for cap in [1, 2, 3] {
        let policies: Vec<TransposePolicy> =
            every_height().into_iter().map(|p| TransposePolicy { max_grid_y: Some(cap), ..p }).collect();
        for (rows, cols) in
            [(100, 33), (common::big(1000, 200), common::big(1007, 207)), (257, 64), (common::big(4096, 512), 96)]
        {
            check(&gpu, &mut rng, seed, rows, cols, &policies);
        }
    }
}

#[test]
fn the_default_transpose_is_the_classic_block() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let (rows, cols) = (70, 45);
    let host = random_matrix(&mut rng, rows * cols);
    let mut want = vec![0f32; rows * cols];
    reference_transpose(&host, rows, cols, &mut want).unwrap();
    let src = gpu.upload(&host).unwrap();
    let mut dst = gpu.alloc_zeroed::<f32>(rows * cols).unwrap();
    dst.fill_bytes(POISON).unwrap();
    let cfg = gpu.transpose(&src.as_view(), &mut dst.as_view_mut(), rows, cols, TransposeVariant::Padded).unwrap();
    assert_eq!((cfg.grid.x, cfg.grid.y, cfg.block.x, cfg.block.y), (2, 3, 32, 8));
    assert_transposed(&dst.to_vec().unwrap(), &want, rows, &format!("default padded, seed={seed}"));
    // Transposing twice gives the input back.
    let mut back = gpu.alloc_zeroed::<f32>(rows * cols).unwrap();
    back.fill_bytes(POISON).unwrap();
    gpu.transpose(&dst.as_view(), &mut back.as_view_mut(), cols, rows, TransposeVariant::Tiled).unwrap();
    assert_eq!(back.to_vec().unwrap(), host, "seed={seed}");
}

#[test]
fn bad_arguments_are_errors_before_any_launch() {
    let gpu = gpu_or_skip!();
    let src = gpu.upload(&[1f32; 12]).unwrap();
    let mut dst = gpu.alloc_zeroed::<f32>(12).unwrap();
    let v = TransposeVariant::Padded;
    let e = gpu.transpose(&src.as_view(), &mut dst.as_view_mut(), 3, 5, v).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 15, got: 12, .. }), "{e}");
    let e = gpu.transpose(&src.as_view(), &mut dst.view_mut(0..10).unwrap(), 3, 4, v).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 12, got: 10, .. }), "{e}");
    let e = gpu.transpose(&src.view(0..0).unwrap(), &mut dst.view_mut(0..0).unwrap(), 0, 4, v).unwrap_err();
    assert!(matches!(e, Error::ZeroExtent { width: 4, height: 0, .. }), "{e}");
    let e = gpu.transpose(&src.as_view(), &mut dst.as_view_mut(), usize::MAX, 2, v).unwrap_err();
    assert!(matches!(e, Error::ExtentOverflow { .. }), "{e}");
    let odd = TransposePolicy::with_block_rows(12);
    let e = gpu.transpose_with(&src.as_view(), &mut dst.as_view_mut(), 3, 4, v, odd).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("[4, 8, 16, 32]"), "{e}");
    let zero_cap = TransposePolicy { max_grid_y: Some(0), ..TransposePolicy::CLASSIC };
    let e = gpu.transpose_with(&src.as_view(), &mut dst.as_view_mut(), 3, 4, v, zero_cap).unwrap_err();
    assert!(matches!(e, Error::InvalidLaunch { .. }), "{e}");
    // Nothing was written by the refused calls.
    assert_eq!(dst.to_vec().unwrap(), vec![0f32; 12]);
}
