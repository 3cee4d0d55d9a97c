//! Device side of `coalesce`: kernels written in Rust and compiled to PTX by
//! rustc's `nvptx64-nvidia-cuda` backend.
//!
//! On the host this crate is a plain `no_std` library holding what host and
//! device must agree on (launch-shape constants, index arithmetic); the
//! kernels themselves exist only when compiling for the NVPTX target, which
//! `coalesce-host`'s build script does (`cargo rustc --crate-type cdylib
//! -Zbuild-std=core`).
//!
//! * [`dev`]: the small device-support layer (indices, grid-stride ranges,
//!   barriers, vector memory access, constant and shared memory, warp
//!   shuffles), each piece checked in PTX/SASS by the host's tests.
//! * [`copy`]: the vectorized copy kernels of the first lesson.
//! * [`conv`]: 1D and 2D convolution with constant-memory masks and
//!   shared-memory tiles with halo cells, in every boundary mode.
//! * [`matrix`]: matrix addition in row-major, column-major and pitched
//!   layouts, and `sum_matrix_2d` with the block shape chosen at launch.
//! * [`divergence`]: the warp-divergence lesson's `math_kernel1..4`.
//! * [`reduce`]: sums of `i32`/`f32`/`f64` (neighbored, interleaved, fast).
//! * [`transfer`]: zero-copy kernels over mapped host memory and the
//!   compute stage of the copy/compute overlap experiment.
//! * [`access`], [`alignment`], [`local`]: lesson 004's access patterns
//!   (offsets, strides), point layouts of 12 and 16 bytes and structures of
//!   arrays, and a per-thread array in local memory vs registers.
//! * [`transpose`]: matrix transpose, naive and through shared tiles with
//!   and without bank conflicts.
//! * [`constant`]: constant-memory broadcast against serialized reads, and
//!   the same patterns from global memory.
//! * [`texture`]: reads through the texture unit (texture objects, address
//!   modes, linear filtering): fetch, convolution and resize kernels.
//! * [`probe`]: one small kernel per device-support piece, so each piece is
//!   exercised on the GPU and inspected in SASS.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, stmt_expr_attributes))]

pub mod access;
pub mod alignment;
pub mod constant;
pub mod conv;
pub mod copy;
pub mod dev;
pub mod divergence;
pub mod local;
pub mod matrix;
pub mod probe;
pub mod reduce;
pub mod texture;
pub mod transfer;
pub mod transpose;

pub use conv::{DEPENDENT_LAUNCH_MIN_SM, LAUNCH_BOUNDS, LAUNCH_BOUNDS_MIN_SM};

/// Kernels abort the whole grid on panic: there is no unwinding on the device.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` ends the kernel; the host sees `LaunchFailed`.
    unsafe { core::arch::nvptx::trap() }
}
