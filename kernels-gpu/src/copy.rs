//! Vectorized copy (lesson 000: "vectorized memory access").
//!
//! Three grid-stride copy kernels over 32-bit words that differ only in how
//! many words one instruction moves: `copy_scalar` (`LDG.E`/`STG.E`),
//! `copy_vec2` (`LDG.E.64`/`STG.E.64`, CUDA's `int2`) and `copy_vec4`
//! (`LDG.E.128`/`STG.E.128`, `int4`). Wider accesses issue 2× / 4× fewer
//! instructions for the same bytes, which is what lets a memory-bound copy
//! approach the DRAM limit.
//!
//! Each width comes twice, from one generic loop: the `_x1` kernels
//! (`copy_vec4_x1`, …) are the lesson's grid-stride loop, one access per
//! thread per step; the tuned kernels (`copy_vec4`, …) stride over *tiles*:
//! each block copies `blockDim.x · ITEMS` consecutive accesses per step,
//! every thread with [`ITEMS`] loads in flight before it stores. With the
//! host's grid of several waves, the blocks running at any moment cover one
//! contiguous, moving window of memory; on an H100 that lifts a 128-bit copy
//! from 92–94% to 96–98% of the driver's own device-to-device copy (see
//! `coalesce_host::copy::CopyPolicy` and `docs/copy-tuning.md`).
//!
//! Unlike the lesson's kernels, the vector kernels accept any 4-byte-aligned
//! start: [`split`](crate::dev::vector::split) peels a scalar head up to the
//! first aligned address (so `d_in + 1` is never read as a vector), copies
//! the aligned body with vectors, and finishes the tail with scalars. If the
//! two pointers can never be aligned together the kernel degrades to scalar
//! words rather than issuing a misaligned vector access. `copy_bytes`
//! handles byte-granular fringes and byte-misaligned copies.

/// Accesses each thread copies per tile in the tuned kernels (`copy_vec4`,
/// …): all loads are issued before the first store, so every thread keeps
/// this many independent loads in flight. Measured on an H100 (128-bit, 2
/// GiB copies, 512 threads, 8 waves): 2877 GB/s at 2, 2879 at 4, 2895 at 8
/// (cuMemcpyDtoD: 3015).
pub const ITEMS: usize = 8;

/// The `_x1` kernels copy one access per thread per step: exactly the
/// lesson's grid-stride loop.
pub const LESSON_ITEMS: usize = 1;

#[cfg(target_arch = "nvptx64")]
pub(crate) mod kernels {
    use super::{ITEMS, LESSON_ITEMS};
    use crate::dev::grid::{GridStride, grid_stride};
    use crate::dev::index::{block_dim_x, block_idx_x, global_id_x, grid_dim_x, thread_idx_x};
    use crate::dev::vector::{U32x2, U32x4, VecAccess, split};

    /// Copies words `[from, from + count)` one word per thread (`count`
    /// never exceeds the threads of one block: heads and tails are < 4).
    ///
    /// # Safety
    /// Both pointers valid for `from + count` words.
    #[inline(always)]
    unsafe fn scalar_fringe(d_in: *const u32, d_out: *mut u32, from: usize, count: usize) {
        let id = global_id_x();
        if id < count {
            // SAFETY: from + id < from + count, within both ranges.
            unsafe { *d_out.add(from + id) = *d_in.add(from + id) };
        }
    }

    /// The tiled grid-stride loop over `body` accesses of `V`.
    ///
    /// A tile is `blockDim.x · I` consecutive accesses; thread `t` of a
    /// block takes `t, t + blockDim.x, …` (a warp's accesses stay
    /// contiguous, so every load and store is coalesced) and issues all
    /// `I` loads before its first store. With `I = 1` this is the plain
    /// grid-stride loop of the lesson. Block `b` copies tiles `b`,
    /// `b + gridDim.x`, …: the grid-stride loop, one tile at a time. The
    /// accesses after the last whole tile are shared out grid-stride.
    ///
    /// # Safety
    /// `vin`, `vout` valid and aligned for `body` elements of `V`.
    #[inline(always)]
    unsafe fn tiles<V: VecAccess, const I: usize>(vin: *const V, vout: *mut V, body: usize) {
        let threads = block_dim_x() as usize;
        let tile = threads * I;
        let whole = body / tile;
        let t = thread_idx_x() as usize;
        for b in GridStride::new(block_idx_x() as usize, grid_dim_x() as usize, whole) {
            let base = b * tile + t;
            let mut v = [V::default(); I];
            // SAFETY: base + k·threads < (b + 1)·tile <= whole·tile <= body.
            unsafe {
                for (k, x) in v.iter_mut().enumerate() {
                    *x = V::load(vin.add(base + k * threads));
                }
                for (k, x) in v.iter().enumerate() {
                    V::store(vout.add(base + k * threads), *x);
                }
            }
        }
        for i in grid_stride(body - whole * tile) {
            let i = whole * tile + i;
            // SAFETY: i < body.
            unsafe { V::store(vout.add(i), V::load(vin.add(i))) };
        }
    }

    /// Copies `n` words with accesses of `V`: a scalar head up to the first
    /// address where both sides are `V`-aligned, the tiled body, a scalar
    /// tail; all 32-bit words if the two sides can never be aligned together.
    ///
    /// # Safety
    /// `d_in`, `d_out` 4-byte aligned, valid for `n` words, not overlapping.
    #[inline(always)]
    pub(crate) unsafe fn copy_words<V: VecAccess, const I: usize>(d_in: *const u32, d_out: *mut u32, n: usize) {
        let Some(s) = split(d_in as usize, d_out as usize, n, V::WORDS) else {
            // SAFETY: same contract; word accesses need only 4-byte alignment.
            return unsafe { tiles::<u32, I>(d_in, d_out, n) };
        };
        // SAFETY: `split` guarantees head + WORDS·body + tail == n and that
        // d_in + head and d_out + head are aligned for `V`.
        unsafe {
            scalar_fringe(d_in, d_out, 0, s.head);
            tiles::<V, I>(d_in.add(s.head) as *const V, d_out.add(s.head) as *mut V, s.body);
            scalar_fringe(d_in, d_out, s.head + V::WORDS * s.body, s.tail);
        }
    }

    /// Declares one copy kernel entry point: `V` accesses, `I` per thread
    /// per step.
    macro_rules! copy_kernel {
        ($(#[$doc:meta])* $name:ident, $v:ty, $items:expr) => {
            $(#[$doc])*
            ///
            /// # Safety
            /// `d_in` and `d_out` must be 4-byte-aligned global pointers valid
            /// for `n` words each, not overlapping.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(d_in: *const u32, d_out: *mut u32, n: usize) {
                // SAFETY: same contract.
                unsafe { copy_words::<$v, { $items }>(d_in, d_out, n) }
            }
        };
    }

    copy_kernel!(
        /// 32-bit words (`LDG.E`/`STG.E`), [`ITEMS`] per thread per tile.
        copy_scalar, u32, ITEMS
    );
    copy_kernel!(
        /// 64-bit pairs (`int2`, `LDG.E.64`/`STG.E.64`), [`ITEMS`] per thread
        /// per tile; 32-bit words for the head and tail.
        copy_vec2, U32x2, ITEMS
    );
    copy_kernel!(
        /// 128-bit quads (`int4`, `LDG.E.128`/`STG.E.128`), [`ITEMS`] per
        /// thread per tile; 32-bit words for the head and tail.
        copy_vec4, U32x4, ITEMS
    );
    copy_kernel!(
        /// The lesson's `device_copy_scalar_kernel`: one 32-bit word per
        /// thread per grid-stride step.
        copy_scalar_x1, u32, LESSON_ITEMS
    );
    copy_kernel!(
        /// The lesson's `device_copy_vector2_kernel`: one `int2` per thread
        /// per grid-stride step.
        copy_vec2_x1, U32x2, LESSON_ITEMS
    );
    copy_kernel!(
        /// The lesson's `device_copy_vector4_kernel`: one `int4` per thread
        /// per grid-stride step.
        copy_vec4_x1, U32x4, LESSON_ITEMS
    );

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
