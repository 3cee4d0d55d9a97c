//! Parallel reduction (sum) of `i32`, `f32` and `f64`: the execution-model
//! lesson's three ways of summing an array.
//!
//! * `reduce_neighbored_*`: each block loads `blockDim.x` elements into
//!   dynamic shared memory and adds neighbours at stride 1, 2, 4, …: thread
//!   `t` works when `t % (2·stride) == 0`. Every warp keeps a few active
//!   lanes for many steps, so the warps diverge on every step.
//! * `reduce_interleaved_*`: the same tree with the pairs interleaved: at
//!   stride `blockDim.x / 2, …, 1` thread `t` works when `t < stride`. The
//!   active threads stay packed into the first warps, so whole warps retire
//!   together and only the last five steps diverge.
//! * `reduce_fast_*`: one pass reads the input once, as a memory-bound
//!   kernel should: a grid-stride loop over tiles of 128-bit loads,
//!   [`ITEMS`] loads in flight per thread before any of them is added, one
//!   accumulator per load (independent adds), then a warp-shuffle tree and
//!   one shared-memory step per block. Each block writes one partial; the
//!   host sums the partials with the same kernel in one block.
//!
//! All three write one partial per block (`out[blockIdx.x]`), so a sum is
//! one or more passes (see `coalesce_host::reduce`). Every `sync_threads`
//! sits outside data-dependent branches: all threads of a block reach the
//! same barriers (synccheck) and no thread reads a shared slot another
//! thread writes without a barrier in between (racecheck).
//!
//! Integers add with wrapping (two's complement, like CUDA's `int` `+`):
//! the result is the exact sum modulo 2³², whatever the order. Floating
//! point sums depend on the order of the additions; for a given launch
//! shape the order is fixed, so results repeat bit for bit from run to run.

use crate::dev::vector::split;

/// 128-bit loads each thread of `reduce_fast_*` issues before adding any of
/// them (8 × 16 bytes = 128 bytes in flight per thread).
pub const ITEMS: usize = 8;

/// Most warps a block may have (1024 threads): the size of the per-block
/// array of warp sums.
pub const MAX_WARPS: usize = 32;

/// How `reduce_fast_*` splits `n` elements of `elem_bytes` bytes starting
/// at byte address `addr` (aligned to `elem_bytes`, which is 4 or 8):
/// `(head, vectors, tail)`: `head` scalar elements up to the first 16-byte
/// boundary, `vectors` whole 128-bit vectors, `tail` scalar elements after
/// them; `head + vectors · 16 / elem_bytes + tail == n`. Host and kernel
/// both call it, so the launch plan and the kernel agree.
#[inline(always)]
pub const fn vector_split(addr: usize, n: usize, elem_bytes: usize) -> (usize, usize, usize) {
    let per_word = elem_bytes / 4;
    match split(addr, addr, n * per_word, 4) {
        Some(s) => (s.head / per_word, s.body, s.tail / per_word),
        None => (n, 0, 0),
    }
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{ITEMS, MAX_WARPS, vector_split};
    use crate::dev::grid::{GridStride, grid_stride};
    use crate::dev::index::{block_dim_x, block_idx_x, global_id_x, grid_dim_x, thread_idx_x};
    use crate::dev::shared::{Shared, SharedElem, dynamic};
    use crate::dev::sync::sync_threads;
    use crate::dev::vector::{U32x4, load_v4};
    use crate::dev::warp::{FULL_MASK, WARP_SIZE, shfl_down, shfl_down_f64, shfl_down_i32};

    crate::shared_array!(
        /// Warp sums of one block of `reduce_fast_i32`.
        WARP_SUMS_I32: [i32; 32], align 16, "s32"
    );
    crate::shared_array!(
        /// Warp sums of one block of `reduce_fast_f32`.
        WARP_SUMS_F32: [f32; 32], align 16, "f32"
    );
    crate::shared_array!(
        /// Warp sums of one block of `reduce_fast_f64`.
        WARP_SUMS_F64: [f64; 32], align 16, "f64"
    );

    /// An element type the reductions sum.
    pub trait Elem: Copy + SharedElem {
        /// The additive identity.
        const ZERO: Self;
        /// `self + other` (wrapping for integers).
        fn add(self, other: Self) -> Self;
        /// The sum of the elements packed in one 128-bit vector.
        fn vec_sum(v: U32x4) -> Self;
        /// `__shfl_down_sync(FULL_MASK, self, delta)`.
        ///
        /// # Safety
        /// All 32 lanes of the warp must execute it together.
        unsafe fn shfl_down(self, delta: u32) -> Self;
        /// This type's static shared array of [`MAX_WARPS`] warp sums.
        fn warp_sums() -> Shared<Self>;
    }

    impl Elem for i32 {
        const ZERO: Self = 0;
        #[inline(always)]
        fn add(self, other: Self) -> Self {
            self.wrapping_add(other)
        }
        #[inline(always)]
        fn vec_sum(v: U32x4) -> Self {
            (v.0[0].wrapping_add(v.0[1])).wrapping_add(v.0[2].wrapping_add(v.0[3])) as i32
        }
        #[inline(always)]
        unsafe fn shfl_down(self, delta: u32) -> Self {
            // SAFETY: forwarded.
            unsafe { shfl_down_i32(FULL_MASK, self, delta) }
        }
        #[inline(always)]
        fn warp_sums() -> Shared<Self> {
            WARP_SUMS_I32::view()
        }
    }

    impl Elem for f32 {
        const ZERO: Self = 0.0;
        #[inline(always)]
        fn add(self, other: Self) -> Self {
            self + other
        }
        #[inline(always)]
        fn vec_sum(v: U32x4) -> Self {
            let f = |i: usize| f32::from_bits(v.0[i]);
            (f(0) + f(1)) + (f(2) + f(3))
        }
        #[inline(always)]
        unsafe fn shfl_down(self, delta: u32) -> Self {
            // SAFETY: forwarded.
            f32::from_bits(unsafe { shfl_down(FULL_MASK, self.to_bits(), delta) })
        }
        #[inline(always)]
        fn warp_sums() -> Shared<Self> {
            WARP_SUMS_F32::view()
        }
    }

    impl Elem for f64 {
        const ZERO: Self = 0.0;
        #[inline(always)]
        fn add(self, other: Self) -> Self {
            self + other
        }
        #[inline(always)]
        fn vec_sum(v: U32x4) -> Self {
            let f = |i: usize| f64::from_bits(((v.0[i + 1] as u64) << 32) | v.0[i] as u64);
            f(0) + f(2)
        }
        #[inline(always)]
        unsafe fn shfl_down(self, delta: u32) -> Self {
            // SAFETY: forwarded.
            unsafe { shfl_down_f64(FULL_MASK, self, delta) }
        }
        #[inline(always)]
        fn warp_sums() -> Shared<Self> {
            WARP_SUMS_F64::view()
        }
    }

    /// The sum of `v` over the warp, in lane 0 (shuffle-down tree: 16, 8,
    /// 4, 2, 1).
    ///
    /// # Safety
    /// All 32 lanes must call it together.
    #[inline(always)]
    unsafe fn warp_sum<T: Elem>(mut v: T) -> T {
        let mut delta = WARP_SIZE / 2;
        while delta > 0 {
            // SAFETY: forwarded: the whole warp is here.
            v = v.add(unsafe { v.shfl_down(delta) });
            delta /= 2;
        }
        v
    }

    /// The sum of `v` over the block, valid in thread 0: warp sums by
    /// shuffles, lane 0 of each warp stores its sum, a barrier, then warp 0
    /// sums the warp sums. Called once per kernel (the array of warp sums is
    /// not reused, so no second barrier is needed).
    ///
    /// # Safety
    /// Every thread of the block must call it; `blockDim.x` a multiple of
    /// 32 and at most 1024; `blockDim.y == blockDim.z == 1`.
    #[inline(always)]
    unsafe fn block_sum<T: Elem>(v: T) -> T {
        let t = thread_idx_x() as usize;
        let (lane, warp) = (t % WARP_SIZE as usize, t / WARP_SIZE as usize);
        let warps = block_dim_x() as usize / WARP_SIZE as usize;
        let sums = T::warp_sums();
        // SAFETY: whole warps (the block is a multiple of 32 threads); slot
        // `warp < MAX_WARPS` is written by its lane 0 only and read after
        // the barrier that every thread reaches.
        unsafe {
            let v = warp_sum(v);
            if lane == 0 {
                sums.write(warp, v);
            }
            sync_threads();
            let mut total = T::ZERO;
            if warp == 0 {
                let mine = if lane < warps && lane < MAX_WARPS { sums.read(lane) } else { T::ZERO };
                total = warp_sum(mine);
            }
            total
        }
    }

    /// The fast reduction: see the module docs.
    ///
    /// # Safety
    /// `input` valid for `n` elements and aligned to `T`; `out` valid for
    /// `gridDim.x` elements; `blockDim.x` a multiple of 32, at most 1024.
    #[inline(always)]
    unsafe fn reduce_fast<T: Elem>(input: *const T, out: *mut T, n: usize) {
        let size = core::mem::size_of::<T>();
        let lanes = 16 / size;
        let (head, body, tail) = vector_split(input as usize, n, size);
        let threads = block_dim_x() as usize;
        let t = thread_idx_x() as usize;
        let tile = threads * ITEMS;
        let whole = body / tile;
        // SAFETY: `vector_split` makes input + head 16-byte aligned, with
        // `body` whole vectors after it.
        let vin = unsafe { input.add(head) } as *const U32x4;
        let mut acc = [T::ZERO; ITEMS];
        for b in GridStride::new(block_idx_x() as usize, grid_dim_x() as usize, whole) {
            let base = b * tile + t;
            let mut v = [U32x4::default(); ITEMS];
            // SAFETY: base + k·threads < (b + 1)·tile <= whole·tile <= body.
            unsafe {
                for (k, x) in v.iter_mut().enumerate() {
                    *x = load_v4(vin.add(base + k * threads));
                }
            }
            // Indexing, not `zip(v)`: consuming the array by value keeps it
            // in local memory (a stack frame); indices unroll into registers.
            for (k, a) in acc.iter_mut().enumerate() {
                *a = a.add(T::vec_sum(v[k]));
            }
        }
        let mut total = acc.iter().fold(T::ZERO, |s, &a| s.add(a));
        for i in grid_stride(body - whole * tile) {
            // SAFETY: whole·tile + i < body.
            total = total.add(T::vec_sum(unsafe { load_v4(vin.add(whole * tile + i)) }));
        }
        let id = global_id_x();
        // SAFETY: head, tail < 16 / size elements, inside the input.
        unsafe {
            if id < head {
                total = total.add(*input.add(id));
            }
            if id < tail {
                total = total.add(*input.add(head + body * lanes + id));
            }
            let sum = block_sum(total);
            if t == 0 {
                *out.add(block_idx_x() as usize) = sum;
            }
        }
    }

    /// One block's elements into dynamic shared memory (zero past `n`).
    ///
    /// # Safety
    /// `input` valid for `n` elements; `blockDim.x · size_of::<T>()` bytes
    /// of dynamic shared memory.
    #[inline(always)]
    unsafe fn load_block<T: Elem>(input: *const T, n: usize) -> Shared<T> {
        let t = thread_idx_x() as usize;
        let i = global_id_x();
        // SAFETY: the launch provides blockDim.x elements; i < n is checked.
        unsafe {
            let tile = dynamic::<T>();
            tile.write(t, if i < n { *input.add(i) } else { T::ZERO });
            sync_threads();
            tile
        }
    }

    /// The lesson's neighbored-pair tree (divergent).
    ///
    /// # Safety
    /// `input` valid for `n` elements, `out` for `gridDim.x`; `blockDim.x` a
    /// power of two with `blockDim.x · size_of::<T>()` bytes of dynamic
    /// shared memory.
    #[inline(always)]
    unsafe fn reduce_neighbored<T: Elem>(input: *const T, out: *mut T, n: usize) {
        let t = thread_idx_x() as usize;
        let b = block_dim_x() as usize;
        // SAFETY: forwarded; within a step thread t (a multiple of
        // 2·stride) writes slot t and reads t and t + stride < b, which no
        // other thread writes in that step; steps are separated by
        // barriers every thread reaches (the loop bound is uniform).
        unsafe {
            let tile = load_block(input, n);
            let mut stride = 1;
            while stride < b {
                // The lesson's test, spelled as in the lesson.
                #[allow(clippy::manual_is_multiple_of)]
                if t % (2 * stride) == 0 {
                    tile.write(t, tile.read(t).add(tile.read(t + stride)));
                }
                sync_threads();
                stride *= 2;
            }
            if t == 0 {
                *out.add(block_idx_x() as usize) = tile.read(0);
            }
        }
    }

    /// The lesson's interleaved-pair tree.
    ///
    /// # Safety
    /// As [`reduce_neighbored`].
    #[inline(always)]
    unsafe fn reduce_interleaved<T: Elem>(input: *const T, out: *mut T, n: usize) {
        let t = thread_idx_x() as usize;
        // SAFETY: forwarded; thread t < stride writes slot t and reads t and
        // t + stride (>= stride, written by nobody in this step); barriers
        // as in `reduce_neighbored`.
        unsafe {
            let tile = load_block(input, n);
            let mut stride = block_dim_x() as usize / 2;
            while stride > 0 {
                if t < stride {
                    tile.write(t, tile.read(t).add(tile.read(t + stride)));
                }
                sync_threads();
                stride /= 2;
            }
            if t == 0 {
                *out.add(block_idx_x() as usize) = tile.read(0);
            }
        }
    }

    /// Declares the three reduction kernels of one element type.
    macro_rules! reduce_kernels {
        ($t:ty, $neighbored:ident, $interleaved:ident, $fast:ident) => {
            /// Neighbored-pair tree: one partial sum per block.
            ///
            /// # Safety
            /// `input` valid for `n` elements, `out` for `gridDim.x`;
            /// `blockDim.x` a power of two (32..=1024) with `blockDim.x`
            /// elements of dynamic shared memory.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $neighbored(input: *const $t, out: *mut $t, n: usize) {
                // SAFETY: same contract.
                unsafe { reduce_neighbored::<$t>(input, out, n) }
            }

            /// Interleaved-pair tree: one partial sum per block.
            ///
            /// # Safety
            /// As the neighbored kernel.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $interleaved(input: *const $t, out: *mut $t, n: usize) {
                // SAFETY: same contract.
                unsafe { reduce_interleaved::<$t>(input, out, n) }
            }

            /// Grid-stride 128-bit loads, warp shuffles: one partial sum
            /// per block.
            ///
            /// # Safety
            /// `input` valid for `n` elements (any element-aligned start),
            /// `out` for `gridDim.x`; `blockDim.x` a multiple of 32, at
            /// most 1024.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $fast(input: *const $t, out: *mut $t, n: usize) {
                // SAFETY: same contract.
                unsafe { reduce_fast::<$t>(input, out, n) }
            }
        };
    }

    reduce_kernels!(i32, reduce_neighbored_i32, reduce_interleaved_i32, reduce_fast_i32);
    reduce_kernels!(f32, reduce_neighbored_f32, reduce_interleaved_f32, reduce_fast_f32);
    reduce_kernels!(f64, reduce_neighbored_f64, reduce_interleaved_f64, reduce_fast_f64);

    /// The synchronization lesson's broken variant: the interleaved tree
    /// with the barrier inside the loop removed. Threads of different warps
    /// read slots other warps are still writing (a read-after-write race
    /// that `compute-sanitizer --tool racecheck` reports). Only
    /// `examples/race_demo.rs` launches it; nothing else may rely on its
    /// result.
    ///
    /// # Safety
    /// As `reduce_interleaved_f32`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn race_demo_missing_barrier(input: *const f32, out: *mut f32, n: usize) {
        let t = thread_idx_x() as usize;
        // SAFETY: memory accesses stay inside the block's tile and `out`;
        // the missing barrier makes the *values* racy, which is the point.
        unsafe {
            let tile = load_block(input, n);
            let mut stride = block_dim_x() as usize / 2;
            while stride > 0 {
                if t < stride {
                    tile.write(t, tile.read(t) + tile.read(t + stride));
                }
                // The barrier `reduce_interleaved` has here is missing.
                stride /= 2;
            }
            sync_threads();
            if t == 0 {
                *out.add(block_idx_x() as usize) = tile.read(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::vector_split;

    #[test]
    fn split_covers_every_element() {
        for size in [4usize, 8] {
            for off in 0..8usize {
                for n in [0usize, 1, 2, 3, 5, 31, 32, 33, 1023, 1025] {
                    let addr = 4096 + off * size;
                    let (h, v, t) = vector_split(addr, n, size);
                    assert_eq!(h + v * 16 / size + t, n, "size {size} off {off} n {n}");
                    if v > 0 {
                        assert_eq!((addr + h * size) % 16, 0);
                    }
                    assert!(h < 16 / size && t < 16 / size);
                }
            }
        }
    }
}
