//! Convolution (lesson 001: constant memory, tiled convolution with halo
//! cells), 1D and 2D, f32 and f64.
//!
//! Every kernel computes the lesson's correlation
//! `P[i] = Σ_j N[i − left + j] · M[j]`, where `left` is the number of taps
//! left of the centre (`w / 2` for a correlation of width `w`, the
//! lesson's `n`). A true convolution is the same sum with the mask
//! reversed and `left = w − 1 − w / 2`; the host does that rewrite, so
//! the kernels know only correlation. Positions outside the input take
//! their values from the [`boundary`] mode.
//!
//! * [`boundary`]: the modes and the index mapping (host and device).
//! * [`conv1d`]: the five 1D kernels and the shared-memory layouts the
//!   host sizes launches with.
//! * [`conv2d`]: the 2D kernels (basic, constant mask, tiled, fast) and
//!   the separable row and column passes, with their layouts.
//! * [`sepchan`]: fused separable 2D filters over interleaved channels
//!   (rank-1 masks), every storage type that accumulates in `f32`.
//! * [`sepreg`]: register-blocked separable 2D filters for 8-bit images
//!   and masks of at most 7 × 7.
//! * [`boxrows`]: box filters over 8-bit images by rows of 16-byte
//!   copies, a thread per 16 bytes of a row.
//! * [`sepstream`]: streamed separable 2D filters for `f32` images, a
//!   warp per strip of 128 columns walking down a band of rows.
//! * [`batch_tensor`]: the batched rows kernels' tensor-core form for
//!   bf16 signals.
//! * [`tensor`]: 1D convolution on tensor cores (sm_80 and newer, `f32`),
//!   with `f32` accuracy from split TF32 products.
//! * [`tensor2d`]: 2D convolution with large masks on tensor cores, the
//!   same arithmetic.
//! * [`PARAM_MASK_BYTES`], [`FIXED_MASK_TAPS`]: the mask parameters of
//!   the constant-memory kernels.

pub mod batch;
pub mod batch_tensor;
pub mod boundary;
pub mod boxrows;
pub mod conv1d;
pub mod conv2d;
#[cfg(target_arch = "nvptx64")]
pub mod elem;
pub mod sepchan;
pub mod sepreg;
pub mod sepstream;
pub mod tensor;
pub mod tensor2d;

pub use boundary::{Boundary, map_index};
use boxrows::{BOXR_MIN_BLOCKS, BOXR_THREADS};
use sepreg::{SEPR_MIN_BLOCKS, SEPR_THREADS};
use sepstream::seps_min_blocks;

/// Bytes of the mask parameter of the run-time constant-mask kernels
/// (`conv1d_const`, `_tiled`, `_tiled_l2`, `_fast`, `conv2d_const`,
/// `_tiled`, `_fast`, `tex_conv2d`, `tex_conv2d_blocked`): the mask travels
/// by value with each launch, in the kernel's parameter space (constant
/// bank 0; see [`crate::dev::param`]), so launches on different streams
/// never share it. 4000 bytes keep every kernel's parameters within the
/// 4096 bytes that every driver accepts: masks of up to 1000 `f32` or 500
/// `f64` taps (1D or 2D); wider masks take the global-memory kernels.
pub const PARAM_MASK_BYTES: usize = 4000;

/// Taps in the mask parameter of the compile-time kernels
/// (`conv1d_fast1` … `conv1d_fast16`: at most 64; `conv2d_strip3/5/7`: at
/// most 49) and of the short-mask forms of the run-time kernels
/// ([`SHORT_MASK_KERNELS`]): a small parameter for the kernels that run
/// most often.
pub const FIXED_MASK_TAPS: usize = 64;

/// Each run-time constant-mask kernel with its short-mask form: the same
/// code with a mask parameter of [`FIXED_MASK_TAPS`] elements instead of
/// [`PARAM_MASK_BYTES`], for masks of at most that many taps. Every launch
/// copies its parameters into the command stream: on the H100,
/// `conv1d_const` on 4096 samples took 5.1 µs per call with the 4000-byte
/// parameter against 3.4–3.6 µs with the mask in a `__constant__` array,
/// which shows wherever a kernel takes a few microseconds.
pub const SHORT_MASK_KERNELS: &[(&str, &str)] = &[
    ("conv1d_const_f32", "conv1d_const_short_f32"),
    ("conv1d_tiled_f32", "conv1d_tiled_short_f32"),
    ("conv1d_tiled_l2_f32", "conv1d_tiled_l2_short_f32"),
    ("conv1d_const_f64", "conv1d_const_short_f64"),
    ("conv1d_tiled_f64", "conv1d_tiled_short_f64"),
    ("conv1d_tiled_l2_f64", "conv1d_tiled_l2_short_f64"),
    ("conv2d_const_f32", "conv2d_const_short_f32"),
    ("conv2d_tiled_f32", "conv2d_tiled_short_f32"),
    ("conv2d_fast_f32", "conv2d_fast_short_f32"),
    ("conv2d_const_f64", "conv2d_const_short_f64"),
    ("conv2d_tiled_f64", "conv2d_tiled_short_f64"),
    ("conv2d_fast_f64", "conv2d_fast_short_f64"),
];

/// The oldest architecture whose PTX makes every convolution kernel
/// (every entry named `conv…`) wait for the grid before it on the stream
/// ([`grid_dependency_wait`](crate::dev::sync::grid_dependency_wait)) as
/// its first statement, so that the host may launch it as a programmatic
/// dependent of that grid (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`):
/// its blocks are placed and start while the earlier grid drains, and the
/// gap between the two kernels closes. The box rows kernels, about 30 µs
/// on a 4096² RGB image, lost 1.4 µs a call to that gap on the H200
/// (`results/h200/dependent-launch/`). The host finds such kernels in the
/// PTX it loads, not by name (`ptx::waiting_entries`), and its tests check
/// that every convolution kernel is among them.
pub const DEPENDENT_LAUNCH_MIN_SM: u32 = 90;

/// The oldest architecture whose PTX carries [`LAUNCH_BOUNDS`].
pub const LAUNCH_BOUNDS_MIN_SM: u32 = 90;

/// Launch bounds of the convolution kernels, `(kernel, max threads per
/// block, min blocks per SM)`: the build writes them into the PTX as
/// `.maxntid T, 1, 1` and `.minnctapersm B` (what `__launch_bounds__(T, B)`
/// does in CUDA C++), so `ptxas` fits each kernel in `65536 / (T·B)`
/// registers. `B` is the most blocks each kernel keeps resident on sm_90
/// without spilling (a kernel whose bound would cost occupancy against
/// `ptxas`'s own choice, the 2D tiled kernels, is not listed), except
/// `conv1d_fast_f32`: at 5 blocks (48 registers) `ptxas` issues each of its
/// run-time loop's tap and shared loads right before their multiply-adds,
/// and 4 blocks (64 registers) run it 10–18% faster at 65–255 taps. The C++
/// twins carry the same bounds. `conv2d_strip3_f32` and `conv2d_strip7_f32`
/// fit three blocks without spilling too but keep two: on the H200 (one
/// A/B, two passes) three ran 3 × 3 at 89.7–90.1% of the floor against
/// 90.8–91.0% and left 7 × 7 unchanged, where `conv2d_strip5_f32` (80
/// registers since [`boundary::map_index32`] stopped panicking) went from
/// 76–77% to 85–86% with its third block. The bounds go into the PTX of sm_90 and
/// newer only ([`LAUNCH_BOUNDS_MIN_SM`]): sm_70's `ptxas` spills under
/// them. Every launch of these kernels uses at most `T` threads (256:
/// [`conv1d`] uses 256-thread blocks, [`conv2d`] blocks of 32 × at most 8).
pub const LAUNCH_BOUNDS: &[(&str, u32, u32)] = &[
    ("conv2d_sepr1_u8_w3", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepr3_u8_w3", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepr4_u8_w3", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepr1_u8_w5", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepr3_u8_w5", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepr4_u8_w5", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepr1_u8_w7", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepb1_u8_w3", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepb3_u8_w3", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepb4_u8_w3", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepb1_u8_w5", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepb3_u8_w5", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepb4_u8_w5", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_sepb1_u8_w7", SEPR_THREADS as u32, SEPR_MIN_BLOCKS as u32),
    ("conv2d_boxr1_u8_w3", BOXR_THREADS as u32, BOXR_MIN_BLOCKS as u32),
    ("conv2d_boxr3_u8_w3", BOXR_THREADS as u32, BOXR_MIN_BLOCKS as u32),
    ("conv2d_boxr4_u8_w3", BOXR_THREADS as u32, BOXR_MIN_BLOCKS as u32),
    ("conv2d_boxr1_u8_w5", BOXR_THREADS as u32, BOXR_MIN_BLOCKS as u32),
    ("conv2d_boxr3_u8_w5", BOXR_THREADS as u32, BOXR_MIN_BLOCKS as u32),
    ("conv2d_boxr4_u8_w5", BOXR_THREADS as u32, BOXR_MIN_BLOCKS as u32),
    ("conv2d_boxr1_u8_w7", BOXR_THREADS as u32, BOXR_MIN_BLOCKS as u32),
    ("conv2d_seps_f32_h1", 32, seps_min_blocks(1)),
    ("conv2d_seps_f32_h2", 32, seps_min_blocks(2)),
    ("conv2d_seps_f32_h3", 32, seps_min_blocks(3)),
    ("conv2d_seps_f32_h4", 32, seps_min_blocks(4)),
    ("conv2d_seps_f32_h5", 32, seps_min_blocks(5)),
    ("conv2d_seps_f32_h6", 32, seps_min_blocks(6)),
    ("conv2d_seps_f32_h7", 32, seps_min_blocks(7)),
    ("conv2d_seps_f32_h8", 32, seps_min_blocks(8)),
    ("conv2d_seps_f32_h10", 32, seps_min_blocks(10)),
    ("conv2d_seps_f32_h12", 32, seps_min_blocks(12)),
    ("conv2d_seps_f32_h15", 32, seps_min_blocks(15)),
    ("conv2d_seps_f32_h20", 32, seps_min_blocks(20)),
    ("conv2d_sepc1_f32", 256, 2),
    ("conv2d_sepc3_f32", 256, 2),
    ("conv2d_sepc4_f32", 256, 2),
    ("conv2d_sepc1_f16", 256, 2),
    ("conv2d_sepc3_f16", 256, 2),
    ("conv2d_sepc4_f16", 256, 2),
    ("conv2d_sepc1_bf16", 256, 2),
    ("conv2d_sepc3_bf16", 256, 2),
    ("conv2d_sepc4_bf16", 256, 2),
    ("conv2d_sepc1_u8", 256, 2),
    ("conv2d_sepc3_u8", 256, 2),
    ("conv2d_sepc4_u8", 256, 2),
    ("conv2d_sepc1_u16", 256, 2),
    ("conv2d_sepc3_u16", 256, 2),
    ("conv2d_sepc4_u16", 256, 2),
    ("conv1d_basic_f32", 256, 8),
    ("conv1d_const_f32", 256, 8),
    ("conv1d_tiled_f32", 256, 6),
    ("conv1d_tiled_gm_f32", 256, 6),
    ("conv1d_tiled_l2_f32", 256, 6),
    ("conv1d_tiled_l2_gm_f32", 256, 6),
    ("conv1d_fast_f32", 256, 4),
    ("conv1d_fast_gm_f32", 256, 4),
    ("conv1d_basic_f64", 256, 8),
    ("conv1d_const_f64", 256, 8),
    ("conv1d_tiled_f64", 256, 6),
    ("conv1d_tiled_gm_f64", 256, 6),
    ("conv1d_tiled_l2_f64", 256, 6),
    ("conv1d_tiled_l2_gm_f64", 256, 6),
    ("conv1d_fast_f64", 256, 4),
    ("conv1d_fast1_f32", 256, 6),
    ("conv1d_fast2_f32", 256, 6),
    ("conv1d_fast3_f32", 256, 6),
    ("conv1d_fast4_f32", 256, 6),
    ("conv1d_fast5_f32", 256, 6),
    ("conv1d_fast6_f32", 256, 6),
    ("conv1d_fast7_f32", 256, 6),
    ("conv1d_fast8_f32", 256, 6),
    ("conv1d_fast9_f32", 256, 6),
    ("conv1d_fast10_f32", 256, 6),
    ("conv1d_fast11_f32", 256, 6),
    ("conv1d_fast12_f32", 256, 6),
    ("conv1d_fast13_f32", 256, 6),
    ("conv1d_fast14_f32", 256, 6),
    ("conv1d_fast15_f32", 256, 6),
    ("conv1d_fast16_f32", 256, 6),
    ("conv1d_fast1_f64", 256, 4),
    ("conv1d_fast2_f64", 256, 4),
    ("conv1d_fast3_f64", 256, 4),
    ("conv1d_fast4_f64", 256, 4),
    ("conv1d_fast5_f64", 256, 4),
    ("conv1d_fast6_f64", 256, 4),
    ("conv1d_fast7_f64", 256, 4),
    ("conv1d_fast8_f64", 256, 4),
    ("conv1d_fast9_f64", 256, 4),
    ("conv1d_fast10_f64", 256, 4),
    ("conv1d_fast11_f64", 256, 4),
    ("conv1d_fast12_f64", 256, 4),
    ("conv1d_fast13_f64", 256, 4),
    ("conv1d_fast14_f64", 256, 4),
    ("conv1d_fast15_f64", 256, 4),
    ("conv1d_fast16_f64", 256, 4),
    ("conv1d_fast_gm_f64", 256, 4),
    ("conv2d_basic_f32", 256, 4),
    ("conv2d_const_f32", 256, 4),
    ("conv2d_fast_f32", 256, 4),
    ("conv2d_fast_gm_f32", 256, 4),
    ("conv2d_rows_f32", 256, 4),
    ("conv2d_cols_f32", 256, 4),
    ("conv2d_strip3_f32", 256, 2),
    ("conv2d_strip5_f32", 256, 3),
    ("conv2d_strip7_f32", 256, 2),
    ("conv2d_strip9_f32", 128, 5),
    ("conv2d_strip11_f32", 128, 4),
    ("conv2d_strip13_f32", 128, 4),
    ("conv2d_band9_f32", 128, 5),
    ("conv2d_basic_f64", 256, 4),
    ("conv2d_const_f64", 256, 4),
    ("conv2d_fast_f64", 256, 2),
    ("conv2d_fast_gm_f64", 256, 2),
    ("conv2d_rows_f64", 256, 2),
    ("conv2d_cols_f64", 256, 2),
    ("conv2d_strip3_f64", 256, 2),
    ("conv2d_strip5_f64", 256, 2),
    ("conv2d_strip7_f64", 256, 2),
    ("conv1d_const_short_f32", 256, 8),
    ("conv1d_tiled_short_f32", 256, 6),
    ("conv1d_tiled_l2_short_f32", 256, 6),
    ("conv1d_const_short_f64", 256, 8),
    ("conv1d_tiled_short_f64", 256, 6),
    ("conv1d_tiled_l2_short_f64", 256, 6),
    ("conv2d_const_short_f32", 256, 4),
    ("conv2d_fast_short_f32", 256, 4),
    ("conv2d_const_short_f64", 256, 4),
    ("conv2d_fast_short_f64", 256, 2),
    ("conv1d_tensor_f32", 128, 4),
    ("conv1d_tensor_2p_f32", 128, 4),
    ("conv1d_tensor_tf32_f32", 128, 4),
    ("conv2d_tensor_s2_f32", 128, 3),
    ("conv2d_tensor_s3_f32", 128, 3),
    ("conv2d_tensor_s4_f32", 128, 3),
    ("conv2d_tensor_tf32_s2_f32", 128, 4),
    ("conv2d_tensor_tf32_s3_f32", 128, 4),
    ("conv2d_tensor_tf32_s4_f32", 128, 4),
    ("conv1d_rows_f32", 256, 4),
    ("conv1d_rows1_f32", 256, 4),
    ("conv1d_rows2_f32", 256, 4),
    ("conv1d_rows3_f32", 256, 4),
    ("conv1d_rows4_f32", 256, 4),
    ("conv1d_rows5_f32", 256, 4),
    ("conv1d_rows6_f32", 256, 4),
    ("conv1d_rows7_f32", 256, 4),
    ("conv1d_rows8_f32", 256, 4),
    ("conv1d_rows_f64", 256, 2),
    ("conv1d_rows1_f64", 256, 2),
    ("conv1d_rows2_f64", 256, 2),
    ("conv1d_rows3_f64", 256, 2),
    ("conv1d_rows4_f64", 256, 2),
    ("conv1d_rows5_f64", 256, 2),
    ("conv1d_rows6_f64", 256, 2),
    ("conv1d_rows7_f64", 256, 2),
    ("conv1d_rows8_f64", 256, 2),
    ("conv1d_rows_f16", 256, 4),
    ("conv1d_rows1_f16", 256, 4),
    ("conv1d_rows2_f16", 256, 4),
    ("conv1d_rows3_f16", 256, 4),
    ("conv1d_rows4_f16", 256, 4),
    ("conv1d_rows5_f16", 256, 4),
    ("conv1d_rows6_f16", 256, 4),
    ("conv1d_rows7_f16", 256, 4),
    ("conv1d_rows8_f16", 256, 4),
    ("conv1d_rows_bf16", 256, 4),
    ("conv1d_rows1_bf16", 256, 4),
    ("conv1d_rows2_bf16", 256, 4),
    ("conv1d_rows3_bf16", 256, 4),
    ("conv1d_rows4_bf16", 256, 4),
    ("conv1d_rows5_bf16", 256, 4),
    ("conv1d_rows6_bf16", 256, 4),
    ("conv1d_rows7_bf16", 256, 4),
    ("conv1d_rows8_bf16", 256, 4),
    ("conv1d_rows_tc1_bf16", 256, 3),
    ("conv1d_rows_tc2_bf16", 256, 3),
    ("conv1d_rows_tc3_bf16", 256, 3),
    ("conv1d_rows_u8", 256, 4),
    ("conv1d_rows1_u8", 256, 4),
    ("conv1d_rows2_u8", 256, 4),
    ("conv1d_rows3_u8", 256, 4),
    ("conv1d_rows4_u8", 256, 4),
    ("conv1d_rows5_u8", 256, 4),
    ("conv1d_rows6_u8", 256, 4),
    ("conv1d_rows7_u8", 256, 4),
    ("conv1d_rows8_u8", 256, 4),
    ("conv1d_rows_u16", 256, 4),
    ("conv1d_rows1_u16", 256, 4),
    ("conv1d_rows2_u16", 256, 4),
    ("conv1d_rows3_u16", 256, 4),
    ("conv1d_rows4_u16", 256, 4),
    ("conv1d_rows5_u16", 256, 4),
    ("conv1d_rows6_u16", 256, 4),
    ("conv1d_rows7_u16", 256, 4),
    ("conv1d_rows8_u16", 256, 4),
];
