//! The warp-divergence lesson's kernels on the GPU: each writes 100 or 200
//! per thread by its condition; compared with the CPU reference for data
//! sizes that are and are not multiples of the block, and block sizes
//! including the lesson's 64 and a non-multiple of the warp size.

mod common;

use coalesce::divergence::{MathKernel, lesson_kernel4_as_written};
use common::POISON;

#[test]
fn every_math_kernel_matches_the_reference() {
    let gpu = gpu_or_skip!();
    for n in [1usize, 31, 32, 33, 64, 1000, (1 << 20) + 5] {
        let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
        for block in [32u32, 64, 96, 100, 256, 1024] {
            for k in MathKernel::ALL {
                out.fill_bytes(POISON).unwrap();
                let cfg = gpu.math_kernel(k, &mut out.as_view_mut(), block).unwrap();
                assert_eq!(cfg.grid.x as usize, n.div_ceil(block as usize));
                let got = out.to_vec().unwrap();
                if let Some(i) = (0..n).find(|&i| got[i] != k.expected(i)) {
                    panic!(
                        "{} n={n} block={block}: c[{i}] = {} (bits {:#x}), expected {}",
                        k.kernel(),
                        got[i],
                        got[i].to_bits(),
                        k.expected(i)
                    );
                }
            }
        }
    }
}

#[test]
fn intended_kernel4_differs_from_the_lesson_as_written() {
    let gpu = gpu_or_skip!();
    let n = 256;
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    gpu.math_kernel(MathKernel::K4, &mut out.as_view_mut(), 64).unwrap();
    let got = out.to_vec().unwrap();
    let as_written: Vec<f32> = (0..n).map(lesson_kernel4_as_written).collect();
    assert!(got.contains(&100.0), "no thread took the warp-uniform `if` path");
    assert_ne!(got, as_written);
    assert!(as_written.iter().all(|&x| x == 200.0));
}
