//! Vectorized copy (lesson 000: "vectorized memory access").
//!
//! Three grid-stride copy kernels over 32-bit words that differ only in how
//! many words one instruction moves: `copy_scalar` (`LDG.E`/`STG.E`),
//! `copy_vec2` (`LDG.E.64`/`STG.E.64`, CUDA's `int2`) and `copy_vec4`
//! (`LDG.E.128`/`STG.E.128`, `int4`). Wider accesses issue 2× / 4× fewer
//! instructions for the same bytes, which is what lets a memory-bound copy
//! approach the DRAM limit.
//!
//! Unlike the lesson's kernels, the vector kernels accept any 4-byte-aligned
//! start: [`split`](crate::dev::vector::split) peels a scalar head up to the
//! first aligned address (so `d_in + 1` is never read as a vector), copies
//! the aligned body with vectors, and finishes the tail with scalars. If the
//! two pointers can never be aligned together the kernel degrades to scalar
//! words rather than issuing a misaligned vector access. `copy_bytes`
//! handles byte-granular fringes and byte-misaligned copies.

/// Threads per block for every copy kernel (the lesson's `threads = 256`).
pub const THREADS: u32 = 256;

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use crate::dev::grid::grid_stride;
    use crate::dev::index::global_id_x;
    use crate::dev::vector::{U32x2, U32x4, load_v2, load_v4, split, store_v2, store_v4};

    /// The lesson's `device_copy_scalar_kernel`: one 32-bit word per
    /// iteration of a grid-stride loop.
    ///
    /// # Safety
    /// `d_in` and `d_out` must be 4-byte-aligned global pointers valid for `n`
    /// words each, not overlapping.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn copy_scalar(d_in: *const u32, d_out: *mut u32, n: usize) {
        // SAFETY: same contract.
        unsafe { scalar_words(d_in, d_out, n) }
    }

    /// The scalar grid-stride loop, shared by `copy_scalar` and the vector
    /// kernels' fallback (a kernel entry cannot call another entry).
    ///
    /// # Safety
    /// As [`copy_scalar`].
    #[inline(always)]
    unsafe fn scalar_words(d_in: *const u32, d_out: *mut u32, n: usize) {
        for i in grid_stride(n) {
            // SAFETY: i < n; the caller guarantees both ranges.
            unsafe { *d_out.add(i) = *d_in.add(i) };
        }
    }

    /// Copies words `[from, from + count)` one word per thread (`count`
    /// never exceeds the threads of one block: heads and tails are < 4).
    ///
    /// # Safety
    /// As the calling kernel's contract; `from + count <= n`.
    #[inline(always)]
    unsafe fn scalar_fringe(d_in: *const u32, d_out: *mut u32, from: usize, count: usize) {
        let id = global_id_x();
        if id < count {
            // SAFETY: from + id < from + count <= n.
            unsafe { *d_out.add(from + id) = *d_in.add(from + id) };
        }
    }

    /// The lesson's `device_copy_vector2_kernel`: `int2` (64-bit) accesses
    /// over the aligned body, 32-bit words for the head and tail.
    ///
    /// # Safety
    /// As [`copy_scalar`].
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn copy_vec2(d_in: *const u32, d_out: *mut u32, n: usize) {
        let Some(s) = split(d_in as usize, d_out as usize, n, 2) else {
            // SAFETY: same contract.
            return unsafe { scalar_words(d_in, d_out, n) };
        };
        // SAFETY: `split` guarantees head + 2·body + tail == n and that
        // d_in + head, d_out + head are 8-byte aligned.
        unsafe {
            scalar_fringe(d_in, d_out, 0, s.head);
            let vin = d_in.add(s.head) as *const U32x2;
            let vout = d_out.add(s.head) as *mut U32x2;
            for i in grid_stride(s.body) {
                store_v2(vout.add(i), load_v2(vin.add(i)));
            }
            scalar_fringe(d_in, d_out, s.head + 2 * s.body, s.tail);
        }
    }

    /// The lesson's `device_copy_vector4_kernel`: `int4` (128-bit) accesses
    /// over the aligned body, 32-bit words for the head and tail.
    ///
    /// # Safety
    /// As [`copy_scalar`].
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn copy_vec4(d_in: *const u32, d_out: *mut u32, n: usize) {
        let Some(s) = split(d_in as usize, d_out as usize, n, 4) else {
            // SAFETY: same contract.
            return unsafe { scalar_words(d_in, d_out, n) };
        };
        // SAFETY: `split` guarantees head + 4·body + tail == n and that
        // d_in + head, d_out + head are 16-byte aligned.
        unsafe {
            scalar_fringe(d_in, d_out, 0, s.head);
            let vin = d_in.add(s.head) as *const U32x4;
            let vout = d_out.add(s.head) as *mut U32x4;
            for i in grid_stride(s.body) {
                store_v4(vout.add(i), load_v4(vin.add(i)));
            }
            scalar_fringe(d_in, d_out, s.head + 4 * s.body, s.tail);
        }
    }

    /// Byte-granular grid-stride copy: the fringes of a copy whose length or
    /// start is not a whole number of words, and the fallback when source
    /// and destination are misaligned relative to each other.
    ///
    /// # Safety
    /// `d_in` and `d_out` must be valid for `n` bytes each, not overlapping.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn copy_bytes(d_in: *const u8, d_out: *mut u8, n: usize) {
        for i in grid_stride(n) {
            // SAFETY: i < n; the caller guarantees both ranges.
            unsafe { *d_out.add(i) = *d_in.add(i) };
        }
    }
}
