//! Host <-> device transfers (lesson 004, "maximizing memory throughput",
//! section 5.3.1): the kernels of the zero-copy and overlap experiments.
//!
//! * `zero_copy_read` / `zero_copy_write`: a kernel that reads *mapped*
//!   page-locked host memory directly and writes device memory (host to
//!   device), or reads device memory and writes mapped host memory (device
//!   to host). No explicit copy is made: every load (or store) of the host
//!   side crosses the host link. The lesson's condition for this to pay off
//!   is that the accesses are coalesced and each byte is touched once; the
//!   loop is the tuned copy's ([`crate::copy`]): 128-bit accesses, each
//!   thread with [`ZERO_COPY_ITEMS`] loads in flight before its stores, a
//!   scalar head and tail where an address is not 16-byte aligned.
//! * `scale_add_u32`: the compute stage of the overlap experiment. Each
//!   element goes through `v = a·v + b` (wrapping 32-bit integer
//!   arithmetic) `k` times, so the kernel's duration is set by `k` and can be
//!   made comparable to the time its chunk takes to cross the link. Integer
//!   arithmetic is exact: the host checks the result bit for bit against an
//!   independent closed form (`a^k·x + b·(a^(k-1) + … + 1)`).

/// Accesses each thread of the zero-copy kernels keeps in flight (the tuned
/// copy's [`ITEMS`](crate::copy::ITEMS)): a host-link read takes a
/// microsecond or more, so many independent loads must be outstanding.
pub const ZERO_COPY_ITEMS: usize = crate::copy::ITEMS;

/// One step of the overlap experiment's compute stage: `a·v + b` with
/// wrapping 32-bit arithmetic.
#[inline(always)]
pub const fn scale_add_step(v: u32, a: u32, b: u32) -> u32 {
    v.wrapping_mul(a).wrapping_add(b)
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{ZERO_COPY_ITEMS, scale_add_step};
    use crate::copy::kernels::copy_words;
    use crate::dev::grid::grid_stride;
    use crate::dev::vector::U32x4;

    /// Host to device without a copy: reads `n` words of mapped page-locked
    /// host memory at `host` (its device address) and writes them to `dev`.
    ///
    /// # Safety
    /// `host` must be the device address of mapped host memory valid for
    /// `n` words, `dev` device memory valid for `n` words; both 4-byte
    /// aligned, not overlapping, and the host must not touch either range
    /// until the kernel has finished.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn zero_copy_read(host: *const u32, dev: *mut u32, n: usize) {
        // SAFETY: same contract as the copy loop's.
        unsafe { copy_words::<U32x4, ZERO_COPY_ITEMS>(host, dev, n) }
    }

    /// Device to host without a copy: reads `n` words of device memory at
    /// `dev` and writes them straight into mapped page-locked host memory
    /// at `host` (its device address).
    ///
    /// # Safety
    /// As [`zero_copy_read`], with the roles of the two ranges swapped.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn zero_copy_write(dev: *const u32, host: *mut u32, n: usize) {
        // SAFETY: same contract as the copy loop's.
        unsafe { copy_words::<U32x4, ZERO_COPY_ITEMS>(dev, host, n) }
    }

    /// `y[i] = f^k(x[i])` with `f(v) = a·v + b` (wrapping), for `i < n`,
    /// grid-stride.
    ///
    /// # Safety
    /// `x` valid for reading and `y` for writing `n` words of device
    /// memory; `x` and `y` either identical or not overlapping.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn scale_add_u32(x: *const u32, y: *mut u32, n: usize, a: u32, b: u32, k: u32) {
        for i in grid_stride(n) {
            // SAFETY: i < n; each element is read before it is written,
            // by the same thread.
            let mut v = unsafe { *x.add(i) };
            for _ in 0..k {
                v = scale_add_step(v, a, b);
            }
            // SAFETY: i < n.
            unsafe { *y.add(i) = v };
        }
    }
}
