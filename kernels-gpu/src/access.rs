//! Global-memory access patterns (lesson 004, "maximizing memory
//! throughput", §5.3.2 "device memory accesses"): how the addresses a warp
//! touches decide how many 32-byte sectors one instruction moves.
//!
//! Four kernels over `f32`, one element per thread, `i` the global thread
//! id along x and `i < n`:
//!
//! | kernel | does | a warp's 32 loads / stores |
//! | --- | --- | --- |
//! | `read_offset` | `out[i] = in[i + offset]` | loads start `4 · offset` bytes past a 128-byte boundary: 5 sectors instead of 4 unless `offset` is a multiple of 8 |
//! | `write_offset` | `out[i + offset] = in[i]` | the same misalignment on the stores |
//! | `read_stride` | `out[i] = in[i · stride]` | loads `4 · stride` bytes apart: up to 32 sectors for 128 useful bytes |
//! | `write_stride` | `out[i · stride] = in[i]` | the same spread on the stores |
//!
//! The other side of each copy stays unit-stride and aligned, so what a
//! sweep over `offset` or `stride` measures is the pattern alone. The 2D
//! part of the lesson (row widths that are or are not a multiple of the
//! warp size, linear vs pitched rows) runs the [`crate::matrix`] kernels.

/// Threads per block of the access-pattern kernels.
pub const THREADS: u32 = 256;

/// Elements a strided side spans for `n` elements `stride` apart: `(n − 1)
/// · stride + 1` (0 for `n = 0`), or `None` on overflow.
#[inline(always)]
pub const fn strided_len(n: usize, stride: usize) -> Option<usize> {
    if n == 0 {
        return Some(0);
    }
    match (n - 1).checked_mul(stride) {
        Some(span) => span.checked_add(1),
        None => None,
    }
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use crate::dev::index::global_id_x;

    /// `out[i] = in[i + offset]` for `i < n`: misaligned reads, aligned
    /// writes (the guide's `offsetCopy`).
    ///
    /// # Safety
    /// `inp` valid for `n + offset` `f32`, `out` for `n`; not overlapping.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn read_offset(out: *mut f32, inp: *const f32, n: usize, offset: usize) {
        let i = global_id_x();
        if i < n {
            // SAFETY: i < n, so i + offset < n + offset (caller's contract).
            unsafe { *out.add(i) = *inp.add(i + offset) };
        }
    }

    /// `out[i + offset] = in[i]` for `i < n`: aligned reads, misaligned
    /// writes.
    ///
    /// # Safety
    /// `inp` valid for `n` `f32`, `out` for `n + offset`; not overlapping.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn write_offset(out: *mut f32, inp: *const f32, n: usize, offset: usize) {
        let i = global_id_x();
        if i < n {
            // SAFETY: as above, with the roles swapped.
            unsafe { *out.add(i + offset) = *inp.add(i) };
        }
    }

    /// `out[i] = in[i · stride]` for `i < n`: strided reads, unit-stride
    /// writes (the guide's `strideCopy`).
    ///
    /// # Safety
    /// `inp` valid for `(n − 1) · stride + 1` `f32`, `out` for `n`; not
    /// overlapping.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn read_stride(out: *mut f32, inp: *const f32, n: usize, stride: usize) {
        let i = global_id_x();
        if i < n {
            // SAFETY: i ≤ n − 1, so i·stride ≤ (n − 1)·stride (caller's contract).
            unsafe { *out.add(i) = *inp.add(i * stride) };
        }
    }

    /// `out[i · stride] = in[i]` for `i < n`: unit-stride reads, strided
    /// writes.
    ///
    /// # Safety
    /// `inp` valid for `n` `f32`, `out` for `(n − 1) · stride + 1`; not
    /// overlapping.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn write_stride(out: *mut f32, inp: *const f32, n: usize, stride: usize) {
        let i = global_id_x();
        if i < n {
            // SAFETY: as above, with the roles swapped.
            unsafe { *out.add(i * stride) = *inp.add(i) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::strided_len;

    #[test]
    fn strided_spans() {
        assert_eq!(strided_len(0, 32), Some(0));
        assert_eq!(strided_len(1, 32), Some(1));
        assert_eq!(strided_len(4, 1), Some(4));
        assert_eq!(strided_len(4, 3), Some(10));
        assert_eq!(strided_len(usize::MAX, 2), None);
        assert_eq!(strided_len(2, usize::MAX), None);
    }
}
