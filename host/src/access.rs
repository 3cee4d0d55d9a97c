//! Global-memory access patterns (lesson 004, §5.3.2): copies whose loads
//! or stores start at an offset or step by a stride, run one element per
//! thread so that a warp's 32 accesses show the pattern exactly
//! ([`coalesce_kernels::access`]).
//!
//! * [`Pattern`]: which side is displaced and by how much —
//!   `ReadOffset(o)`: `dst[i] = src[i + o]`; `WriteOffset(o)`: `dst[i + o]
//!   = src[i]`; `ReadStride(s)`: `dst[i] = src[i · s]`; `WriteStride(s)`:
//!   `dst[i · s] = src[i]`, for `i < n`.
//! * [`Gpu::access_pattern`]: the launch, after every length, overflow and
//!   context check.
//! * [`reference()`]: the rayon reference, which writes exactly the elements
//!   the kernel writes (so untouched elements, such as the gaps of a
//!   strided write, can be checked to be untouched).
//!
//! ```no_run
//! use coalesce_host::{Gpu, access::Pattern};
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = Gpu::new()?;
//! let src = gpu.upload(&(0..100).map(|i| i as f32).collect::<Vec<_>>())?;
//! let mut dst = gpu.alloc_zeroed::<f32>(10)?;
//! gpu.access_pattern(Pattern::ReadStride(10), &src.as_view(), &mut dst.as_view_mut(), 10)?;
//! assert_eq!(dst.to_vec()?[3], 30.0);
//! # Ok(())
//! # }
//! ```

use std::fmt;

use coalesce_kernels::access::{THREADS, strided_len};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::LaunchConfig;
use crate::memory::{DeviceView, DeviceViewMut};

/// An access pattern and its parameter (elements, never bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// `dst[i] = src[i + offset]`: misaligned loads.
    ReadOffset(usize),
    /// `dst[i + offset] = src[i]`: misaligned stores.
    WriteOffset(usize),
    /// `dst[i] = src[i · stride]`: strided loads.
    ReadStride(usize),
    /// `dst[i · stride] = src[i]`: strided stores.
    WriteStride(usize),
}

impl Pattern {
    /// The kernel that runs it.
    pub fn kernel(self) -> &'static str {
        match self {
            Pattern::ReadOffset(_) => "read_offset",
            Pattern::WriteOffset(_) => "write_offset",
            Pattern::ReadStride(_) => "read_stride",
            Pattern::WriteStride(_) => "write_stride",
        }
    }

    /// The offset or stride.
    pub fn param(self) -> usize {
        match self {
            Pattern::ReadOffset(p) | Pattern::WriteOffset(p) | Pattern::ReadStride(p) | Pattern::WriteStride(p) => p,
        }
    }

    /// True when the loads carry the pattern (the stores are unit-stride).
    pub fn on_loads(self) -> bool {
        matches!(self, Pattern::ReadOffset(_) | Pattern::ReadStride(_))
    }

    /// Elements `(src, dst)` must hold at least for `n` elements moved.
    /// A zero stride is [`Error::InvalidArgument`] (every thread would
    /// write the same element), an extent past `usize` [`Error::SizeOverflow`].
    pub fn extents(self, n: usize) -> Result<(usize, usize)> {
        let op = self.kernel();
        let overflow = || Error::SizeOverflow { op, count: n, elem_size: 4 };
        let span = match self {
            Pattern::ReadOffset(o) | Pattern::WriteOffset(o) => n.checked_add(o),
            Pattern::ReadStride(0) | Pattern::WriteStride(0) => {
                return Err(Error::InvalidArgument { op, message: "the stride must be at least 1".into() });
            }
            Pattern::ReadStride(s) | Pattern::WriteStride(s) => strided_len(n, s),
        };
        let span = span.filter(|&e| e <= isize::MAX as usize / 4).ok_or_else(overflow)?;
        Ok(if self.on_loads() { (span, n) } else { (n, span) })
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if matches!(self, Pattern::ReadOffset(_) | Pattern::WriteOffset(_)) { "offset" } else { "stride" };
        write!(f, "{} ({what} {})", self.kernel(), self.param())
    }
}

/// The launch of a one-element-per-thread kernel over `n` elements with
/// `threads` per block: `ceil(n / threads)` blocks (saturated at
/// `u32::MAX`, which validation then refuses).
pub fn one_per_thread(n: usize, threads: u32) -> LaunchConfig {
    let blocks = (n as u64).div_ceil(u64::from(threads.max(1))).min(u64::from(u32::MAX)) as u32;
    LaunchConfig::new(blocks, threads)
}

/// `Ok` when a view of `len` elements holds at least `need`.
pub(crate) fn holds(op: &'static str, len: usize, need: usize) -> Result<()> {
    if len >= need { Ok(()) } else { Err(Error::OutOfBounds { op, start: 0, end: need, len }) }
}

impl Gpu {
    /// Runs `pattern` over `n` elements from `src` into `dst`, one element
    /// per thread ([`coalesce_kernels::access::THREADS`] per block). Queued
    /// on the stream; returns the launch, or `None` when `n` is 0 (nothing
    /// to do). Only the elements the pattern names are written.
    ///
    /// Errors before any launch: a view shorter than
    /// [`Pattern::extents`] ([`Error::OutOfBounds`]), a zero stride, an
    /// overflowing extent, a view of another context, more blocks than the
    /// grid allows.
    pub fn access_pattern(
        &self,
        pattern: Pattern,
        src: &DeviceView<'_, f32>,
        dst: &mut DeviceViewMut<'_, f32>,
        n: usize,
    ) -> Result<Option<LaunchConfig>> {
        let op = pattern.kernel();
        let (need_src, need_dst) = pattern.extents(n)?;
        holds(op, src.len(), need_src)?;
        holds(op, dst.len(), need_dst)?;
        if n == 0 {
            return Ok(None);
        }
        src.check_gpu(self, op)?;
        dst.check_gpu(self, op)?;
        let cfg = one_per_thread(n, THREADS);
        let (out, inp, p) = (dst.device_ptr(), src.device_ptr(), pattern.param());
        // SAFETY: both views are live views of this context holding at
        // least the extents the kernel touches (checked above); `dst` is
        // borrowed mutably, so it does not overlap `src`. Parameters:
        // (out, in, n, offset or stride).
        unsafe { self.launch(op, &cfg, &[&out, &inp, &n, &p])? };
        Ok(Some(cfg))
    }
}

/// The CPU reference of `pattern` over `n` elements: writes exactly the
/// elements of `dst` the kernel writes, with rayon. Lengths are checked
/// as [`Gpu::access_pattern`] checks them.
pub fn reference(pattern: Pattern, src: &[f32], dst: &mut [f32], n: usize) -> Result<()> {
    const OP: &str = "access::reference";
    let (need_src, need_dst) = pattern.extents(n)?;
    holds(OP, src.len(), need_src)?;
    holds(OP, dst.len(), need_dst)?;
    const CHUNK: usize = 1 << 16;
    match pattern {
        Pattern::ReadOffset(o) => {
            dst[..n].par_chunks_mut(CHUNK).zip(src[o..o + n].par_chunks(CHUNK)).for_each(|(d, s)| {
                d.copy_from_slice(s);
            })
        }
        Pattern::WriteOffset(o) => {
            dst[o..o + n].par_chunks_mut(CHUNK).zip(src[..n].par_chunks(CHUNK)).for_each(|(d, s)| {
                d.copy_from_slice(s);
            })
        }
        Pattern::ReadStride(s) => dst[..n].par_iter_mut().enumerate().for_each(|(i, d)| *d = src[i * s]),
        Pattern::WriteStride(s) => {
            // Each chunk of `s` elements starts with one written element.
            dst[..need_dst].par_chunks_mut(s).zip(src[..n].par_iter()).for_each(|(d, v)| d[0] = *v)
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_and_errors() {
        assert_eq!(Pattern::ReadOffset(3).extents(10).unwrap(), (13, 10));
        assert_eq!(Pattern::WriteOffset(3).extents(10).unwrap(), (10, 13));
        assert_eq!(Pattern::ReadStride(4).extents(10).unwrap(), (37, 10));
        assert_eq!(Pattern::WriteStride(4).extents(10).unwrap(), (10, 37));
        assert_eq!(Pattern::WriteStride(4).extents(0).unwrap(), (0, 0));
        let e = Pattern::ReadStride(0).extents(10).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { op: "read_stride", .. }), "{e}");
        let e = Pattern::WriteOffset(1).extents(usize::MAX).unwrap_err();
        assert!(matches!(e, Error::SizeOverflow { op: "write_offset", .. }), "{e}");
        let e = Pattern::ReadStride(32).extents(1 << 60).unwrap_err();
        assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
        assert_eq!(Pattern::WriteStride(7).to_string(), "write_stride (stride 7)");
        assert!(Pattern::ReadOffset(1).on_loads() && !Pattern::WriteStride(2).on_loads());
    }

    #[test]
    fn launch_shapes() {
        assert_eq!(one_per_thread(1, 256).grid.x, 1);
        assert_eq!(one_per_thread(257, 256).grid.x, 2);
        assert_eq!(one_per_thread(1 << 26, 256).grid.x, 1 << 18);
        assert_eq!(one_per_thread(usize::MAX, 1).grid.x, u32::MAX);
    }

    #[test]
    fn reference_writes_only_the_pattern() {
        let src: Vec<f32> = (0..100).map(|i| i as f32 + 0.5).collect();
        let mut dst = vec![-1.0f32; 100];
        reference(Pattern::WriteStride(3), &src, &mut dst, 5).unwrap();
        assert_eq!(&dst[..14], &[0.5, -1.0, -1.0, 1.5, -1.0, -1.0, 2.5, -1.0, -1.0, 3.5, -1.0, -1.0, 4.5, -1.0]);
        assert!(dst[13..].iter().all(|&d| d == -1.0));
        let mut dst = vec![-1.0f32; 6];
        reference(Pattern::ReadStride(3), &src, &mut dst, 5).unwrap();
        assert_eq!(dst, [0.5, 3.5, 6.5, 9.5, 12.5, -1.0]);
        let mut dst = vec![-1.0f32; 6];
        reference(Pattern::WriteOffset(2), &src, &mut dst, 3).unwrap();
        assert_eq!(dst, [-1.0, -1.0, 0.5, 1.5, 2.5, -1.0]);
        reference(Pattern::ReadOffset(95), &src, &mut dst, 5).unwrap();
        assert_eq!(&dst[..5], &[95.5, 96.5, 97.5, 98.5, 99.5]);
        let e = reference(Pattern::ReadOffset(96), &src, &mut dst, 5).unwrap_err();
        assert!(matches!(e, Error::OutOfBounds { end: 101, len: 100, .. }), "{e}");
    }
}
