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
//! * [`CONV_MASK_BYTES`]: the constant-memory mask array.

pub mod boundary;
pub mod conv1d;
pub mod conv2d;
#[cfg(target_arch = "nvptx64")]
pub mod elem;

pub use boundary::{Boundary, map_index};

/// Bytes of the constant-memory array `CONV_MASK` that holds the mask of
/// the constant-memory kernels: 16 KiB of the 64 KiB constant bank (the
/// rest stays free for the module's other constant data). It holds masks
/// of up to 4096 `f32` or 2048 `f64` taps (1D), or 2D masks of as many
/// taps; wider masks take the global-memory kernels.
pub const CONV_MASK_BYTES: usize = 16 * 1024;

#[cfg(target_arch = "nvptx64")]
crate::constant_array!(
    /// The mask of the constant-memory convolution kernels (raw bytes,
    /// read as `f32` or `f64`); written by the host by name.
    pub CONV_MASK: [u64; 2048], align 8, "u64"
);
