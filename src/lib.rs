//! # coalesce
//!
//! Fast, correct memory-bound GPU kernels written in Rust, compiled to PTX
//! by rustc's NVPTX backend, driven through the CUDA driver, each verified
//! against a rayon CPU reference and measured against the hardware's limits.
//!
//! This crate re-exports the host library ([`coalesce_host`]) and adds the
//! benchmark harness behind the `coalesce` binary ([`bench`](mod@bench)),
//! filtering of `.npy` and raw files ([`files`]) and the examples' PNG
//! images ([`picture`]).
//!
//! ```no_run
//! use coalesce::{CopyVariant, Gpu};
//!
//! fn main() -> coalesce::Result<()> {
//!     let gpu = Gpu::new()?;
//!     let data: Vec<u32> = (0..1_000_003).collect();
//!     let src = gpu.upload(&data)?;
//!     let mut dst = gpu.alloc_zeroed::<u32>(data.len() - 1)?;
//!     // Copy from one element in: the start is misaligned for 128-bit
//!     // access, so the kernel peels a scalar head first.
//!     let plan = gpu.copy(&src.view(1..data.len())?, &mut dst.as_view_mut(), CopyVariant::Vec4)?;
//!     println!("{plan:?}");
//!     assert_eq!(dst.to_vec()?, &data[1..]);
//!     Ok(())
//! }
//! ```

pub use coalesce_host::*;

pub mod bench;
pub mod files;
pub mod picture;
pub mod stress;
pub mod text;
