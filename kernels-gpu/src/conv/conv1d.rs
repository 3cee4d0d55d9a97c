//! 1D convolution kernels: the lesson's four and a faster one.
//!
//! | kernel | mask read from | input read from |
//! | --- | --- | --- |
//! | `conv1d_basic_*` | global memory (pointer) | global memory, `w` loads per output |
//! | `conv1d_const_*` | its `taps` parameter (constant bank 0) | global memory, `w` loads per output |
//! | `conv1d_tiled_*` | its `taps` parameter | a shared tile of `blockDim + w − 1` cells: the block's own inputs plus `left` and `w − 1 − left` halo cells loaded by the edge threads, one barrier |
//! | `conv1d_tiled_l2_*` | its `taps` parameter | a shared tile of the block's own inputs; halo cells from global memory (the L2) |
//! | `conv1d_fast_*` | its `taps` parameter | a shared tile of [`FAST_OUTPUTS`]` · blockDim` outputs plus halo; each thread computes [`FAST_OUTPUTS`] neighbouring outputs from a window held in registers, read from shared memory four at a time |
//!
//! The kernels whose names end in `_gm_f32` / `_gm_f64` are the tiled and
//! fast kernels with the mask in global memory instead, for masks wider
//! than the constant array holds. `conv1d_fast1_*` … `conv1d_fast16_*` are
//! the fast kernel for masks of up to [`FAST_FIXED_MAX`] taps with the
//! number of 4-tap chunks fixed at compile time ([`fast_fixed_chunks`]):
//! the tap loop unrolled, each tap a constant-bank operand. The
//! `conv1d_{const,tiled,tiled_l2,fast}_short_*` kernels are the run-time
//! kernels with a mask parameter of [`FIXED_MASK_TAPS`](super::FIXED_MASK_TAPS)
//! elements instead of [`PARAM_MASK_BYTES`](super::PARAM_MASK_BYTES) bytes,
//! for masks of at most that many taps (cheaper launches).
//!
//! All take `(input, output, n, mask, w, left, mode)`: `n` elements in and
//! out, `mask` a global copy of the `w` taps (read only by the
//! global-memory kernels), `left` taps left of the centre, `mode` a
//! [`Boundary`](super::Boundary) raw value. Each block walks tiles
//! grid-stride, so any grid covers any `n`.

/// Outputs per thread of the fast kernel (its register block).
pub const FAST_OUTPUTS: usize = 4;

/// The widest mask (taps) with a compile-time form of the fast kernel:
/// `conv1d_fast{c}_f32` / `_f64` for `c = ceil(w / FAST_OUTPUTS)` in
/// `1 ..= FAST_FIXED_MAX / FAST_OUTPUTS`, the mask in constant memory.
pub const FAST_FIXED_MAX: usize = 64;

/// The compile-time form of the fast kernel for a `w`-tap mask in
/// constant memory, if there is one: its chunk count `ceil(w / 4)`.
pub const fn fast_fixed_chunks(w: usize) -> Option<usize> {
    if w >= 1 && w <= FAST_FIXED_MAX { Some(w.div_ceil(FAST_OUTPUTS)) } else { None }
}

/// Tile buffers in the fast kernel's shared ring on sm_80 and newer:
/// the tile computed and the next `FAST_STAGES − 1` in flight
/// (`cp.async`).
pub const FAST_STAGES: usize = 4;

/// Loads per thread of a tile the fast kernel copies ahead (`FAST_OUTPUTS`
/// outputs plus one for the halo): tiles of masks up to
/// `threads · FAST_LOADS − FAST_OUTPUTS · threads` taps.
pub const FAST_LOADS: usize = FAST_OUTPUTS + 1;

/// Shared-memory elements the fast kernel is launched with on sm_80 and
/// newer: [`FAST_STAGES`] buffers of [`fast_shared_elems`] while a tile
/// takes at most [`FAST_LOADS`] loads per thread, else one buffer. PTX
/// older than sm_80 uses one buffer only; the host's `Conv1d::plan`
/// launches it with [`fast_shared_elems`].
pub const fn fast_shared_total(threads: usize, w: usize) -> usize {
    let span = fast_shared_elems(threads, w);
    if span <= FAST_LOADS * threads { FAST_STAGES * span } else { span }
}

/// Shared-memory elements of `conv1d_tiled` at `threads` per block and
/// mask width `w`: the tile plus its halo, `threads + w − 1`.
pub const fn tiled_shared_elems(threads: usize, w: usize) -> usize {
    threads + w - 1
}

/// Shared-memory elements of `conv1d_tiled_l2`: the block's own tile.
pub const fn tiled_l2_shared_elems(threads: usize) -> usize {
    threads
}

/// Shared-memory elements of `conv1d_fast` at `threads` per block and mask
/// width `w`: `FAST_OUTPUTS · threads` outputs plus the halo rounded up to
/// whole register chunks (`FAST_OUTPUTS · ceil(w / FAST_OUTPUTS)`), so the
/// last chunk's 4-wide reads stay inside.
pub const fn fast_shared_elems(threads: usize, w: usize) -> usize {
    FAST_OUTPUTS * threads + FAST_OUTPUTS * w.div_ceil(FAST_OUTPUTS)
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::FAST_OUTPUTS;
    use crate::conv::boundary::{map_index, map_index_edge};
    use crate::conv::elem::{ConvElem, dot, dot_blocks, mask_tap, opaque, unroll};
    use crate::conv::{FIXED_MASK_TAPS, PARAM_MASK_BYTES};
    use crate::dev::grid::{GridStride, grid_stride};
    use crate::dev::index::{block_dim_x, block_idx_x, grid_dim_x, thread_idx_x};
    use crate::dev::param::{ParamBytes, ParamSymbol};
    #[cfg(target_feature = "sm_80")]
    use crate::dev::pipeline;
    use crate::dev::shared::{Shared, dynamic};
    use crate::dev::sync::sync_threads;
    use core::marker::PhantomData;

    /// Where a kernel reads its mask taps.
    trait Mask<T>: Copy {
        /// True for the mask in the kernel's parameter space.
        const CONSTANT: bool;

        /// Tap `j` (`j < w`).
        ///
        /// # Safety
        /// `j` is below the mask's width.
        unsafe fn tap(self, j: usize) -> T;

        /// The `.param` address of the taps (0 for a global mask).
        fn base(self) -> u64;
    }

    /// The mask in the kernel's `taps` parameter `S` (see
    /// [`crate::dev::param`]).
    #[derive(Clone, Copy)]
    struct ParamMask<S>(PhantomData<S>);

    impl<T: ConvElem, S: ParamSymbol> Mask<T> for ParamMask<S> {
        const CONSTANT: bool = true;

        #[inline(always)]
        unsafe fn tap(self, j: usize) -> T {
            // SAFETY: the host passes the `w` taps in the parameter
            // (w · size ≤ its size).
            unsafe { T::ld_param(S::base() + (j * core::mem::size_of::<T>()) as u64) }
        }

        #[inline(always)]
        fn base(self) -> u64 {
            S::base()
        }
    }

    /// The mask in global memory.
    #[derive(Clone, Copy)]
    struct GlobalMask<T>(*const T);

    impl<T: ConvElem> Mask<T> for GlobalMask<T> {
        const CONSTANT: bool = false;

        #[inline(always)]
        unsafe fn tap(self, j: usize) -> T {
            // SAFETY: the host passes a mask of `w` taps.
            unsafe { *self.0.add(j) }
        }

        #[inline(always)]
        fn base(self) -> u64 {
            0
        }
    }

    /// The input value at position `x` (any integer) under `mode`.
    ///
    /// # Safety
    /// `input` valid for `n > 0` elements.
    #[inline(always)]
    unsafe fn fetch<T: ConvElem>(input: *const T, n: usize, x: isize, mode: u32) -> T {
        match map_index(x, n as isize, mode) {
            // SAFETY: map_index returns indices below n.
            Some(k) => unsafe { *input.add(k) },
            None => T::ZERO,
        }
    }

    /// [`fetch`] through [`map_index_edge`]: for the lesson's kernels,
    /// whose grid-stride loops run about once per thread, so the modes'
    /// arithmetic is better left on the edge path than hoisted in front of
    /// the loop. (The persistent fast kernel keeps [`fetch`]: its loop runs
    /// many times, and the edge form costs it registers.)
    ///
    /// # Safety
    /// `input` valid for `n > 0` elements.
    #[inline(always)]
    unsafe fn fetch_edge<T: ConvElem>(input: *const T, n: usize, x: isize, mode: u32) -> T {
        match map_index_edge(x, n as isize, mode) {
            // SAFETY: map_index_edge returns indices below n.
            Some(k) => unsafe { *input.add(k) },
            None => T::ZERO,
        }
    }

    /// One output per thread, every tap read from global memory (through
    /// the caches); the mask from `mask`. Windows wholly inside the input
    /// skip the boundary arithmetic.
    #[inline(always)]
    unsafe fn direct<T: ConvElem, M: Mask<T>>(
        input: *const T,
        output: *mut T,
        n: usize,
        mask: M,
        w: usize,
        left: usize,
        mode: u32,
    ) {
        for i in grid_stride(n) {
            let start = i as isize - left as isize;
            let mut acc = T::ZERO;
            if start >= 0 && start as usize + w <= n {
                // SAFETY: the window [start, start + w) lies inside the input.
                let p = unsafe { input.add(start as usize) };
                // Global taps in 16/8/4-tap blocks; constant taps in 4-tap
                // steps (see dot_blocks for why they differ).
                // SAFETY: dot reads j < w: inside the window and the mask.
                acc = unsafe {
                    if M::CONSTANT {
                        dot(acc, w, |j| *p.add(j), |j| mask.tap(j))
                    } else {
                        dot_blocks(acc, w, |j| *p.add(j), |j| mask.tap(j))
                    }
                };
            } else {
                for j in 0..w {
                    // SAFETY: fetch maps any position into the input; j < w.
                    acc =
                        T::fma(unsafe { fetch_edge(input, n, start + j as isize, mode) }, unsafe { mask.tap(j) }, acc);
                }
            }
            // SAFETY: i < n.
            unsafe { *output.add(i) = acc };
        }
    }

    /// The lesson's tiled kernel: the block's `blockDim` inputs and the
    /// `left` + `w − 1 − left` halo cells around them in shared memory
    /// (ghost cells per `mode`), a barrier, then the weighted sum from
    /// shared memory.
    #[inline(always)]
    unsafe fn tiled<T: ConvElem, M: Mask<T>>(
        input: *const T,
        output: *mut T,
        n: usize,
        mask: M,
        w: usize,
        left: usize,
        mode: u32,
    ) {
        let threads = block_dim_x() as usize;
        let t = thread_idx_x() as usize;
        let right = w - 1 - left;
        // SAFETY: the host launches with tiled_shared_elems(threads, w)
        // elements of dynamic shared memory; every index below is inside.
        let s: Shared<T> = unsafe { dynamic() };
        let tiles = n.div_ceil(threads);
        for b in GridStride::new(block_idx_x() as usize, grid_dim_x() as usize, tiles) {
            // The thread's shared-memory offsets are computed here, where
            // they are used, not held in registers across the loop.
            let t = opaque(t);
            let tile_start = b * threads;
            let origin = tile_start as isize - left as isize;
            // Left halo: the last `left` threads (looping when the halo is
            // wider than the block).
            let mut h = (t + left) % threads;
            while h < left {
                // SAFETY: h < left, inside the buffer; fetch maps any position.
                unsafe { s.write(h, fetch_edge(input, n, origin + h as isize, mode)) };
                h += threads;
            }
            // The block's own cells.
            // SAFETY: left + t < threads + w − 1.
            unsafe { s.write(left + t, fetch_edge(input, n, (tile_start + t) as isize, mode)) };
            // Right halo: the first `right` threads.
            h = t;
            while h < right {
                // SAFETY: left + threads + h < threads + w − 1.
                unsafe { s.write(left + threads + h, fetch_edge(input, n, (tile_start + threads + h) as isize, mode)) };
                h += threads;
            }
            // SAFETY: reached by every thread of the block (the loop bound
            // is block-uniform).
            unsafe { sync_threads() };
            let i = tile_start + t;
            if i < n {
                // SAFETY: dot reads j < w: t + j < threads + w − 1.
                let acc = unsafe { dot(T::ZERO, w, |j| s.read(t + j), |j| mask.tap(j)) };
                // SAFETY: i < n.
                unsafe { *output.add(i) = acc };
            }
            // SAFETY: as above; the next tile overwrites the buffer.
            unsafe { sync_threads() };
        }
    }

    /// The lesson's "simpler" tiled kernel: only the block's own inputs in
    /// shared memory; taps that fall outside the tile read global memory,
    /// where the L2 (and L1) cache mostly serves them.
    #[inline(always)]
    unsafe fn tiled_l2<T: ConvElem, M: Mask<T>>(
        input: *const T,
        output: *mut T,
        n: usize,
        mask: M,
        w: usize,
        left: usize,
        mode: u32,
    ) {
        let threads = block_dim_x() as usize;
        let t = thread_idx_x() as usize;
        // SAFETY: the host launches with `threads` elements of dynamic
        // shared memory.
        let s: Shared<T> = unsafe { dynamic() };
        let tiles = n.div_ceil(threads);
        for b in GridStride::new(block_idx_x() as usize, grid_dim_x() as usize, tiles) {
            // As in `tiled`: offsets computed where they are used.
            let t = opaque(t);
            let tile_start = b * threads;
            let tile_end = if tile_start + threads < n { tile_start + threads } else { n };
            let i = tile_start + t;
            if i < n {
                // SAFETY: t < threads; i < n.
                unsafe { s.write(t, *input.add(i)) };
            }
            // SAFETY: reached by every thread (block-uniform loop).
            unsafe { sync_threads() };
            if i < n {
                let start = i as isize - left as isize;
                let mut acc = T::ZERO;
                for j in 0..w {
                    let x = start + j as isize;
                    let v = if x >= tile_start as isize && x < tile_end as isize {
                        // SAFETY: x − tile_start < threads, written above.
                        unsafe { s.read(x as usize - tile_start) }
                    } else {
                        // SAFETY: fetch maps any position into the input.
                        unsafe { fetch_edge(input, n, x, mode) }
                    };
                    // SAFETY: j < w.
                    acc = T::fma(v, unsafe { mask.tap(j) }, acc);
                }
                // SAFETY: i < n.
                unsafe { *output.add(i) = acc };
            }
            // SAFETY: as above.
            unsafe { sync_threads() };
        }
    }

    /// Stores the fast kernel's `R` outputs `o … o + R − 1` (those below
    /// `n`): one vector store when all are inside and `output + o` is
    /// 16-byte aligned.
    ///
    /// # Safety
    /// `output` valid for `n` elements; `o < n`.
    #[inline(always)]
    unsafe fn store<T: ConvElem>(output: *mut T, n: usize, o: usize, acc: [T; FAST_OUTPUTS]) {
        // SAFETY: o + r < n for every element stored; the vector store
        // needs 16-byte alignment, checked.
        unsafe {
            let p = output.add(o);
            if o + FAST_OUTPUTS <= n && (p as usize).is_multiple_of(16) {
                T::store4(p, acc);
            } else {
                for (r, &v) in acc.iter().enumerate() {
                    if o + r < n {
                        *p.add(r) = v;
                    }
                }
            }
        }
    }

    /// The fast kernel: register blocking over a shared tile.
    ///
    /// A block's tile is `R · blockDim` outputs (`R` = [`FAST_OUTPUTS`]);
    /// the block loads the inputs they need (the tile plus the halo, rounded
    /// up to whole chunks of `R`) into shared memory with coalesced loads,
    /// then thread `t` computes outputs `R·t … R·t + R − 1`. It holds a
    /// window of `2R` inputs in registers, refilled `R` at a time with one
    /// 4-wide shared load, and applies `R` taps to all `R` outputs per
    /// refill: `R²` fused multiply-adds per shared load and per `R` mask
    /// reads, where the lesson's tiled kernel does one of each per
    /// multiply-add. Taps past `w` in the last chunk are skipped (not
    /// multiplied by zero), so infinities and NaNs propagate exactly as in
    /// the plain sum.
    ///
    /// Blocks are persistent (the host caps the grid at the resident
    /// blocks) and software-pipelined over their tiles. On sm_80 and newer,
    /// while the tile fits `LOADS` loads per thread (`w ≤ 256` at 256
    /// threads), the block keeps a ring of [`FAST_STAGES`] tile buffers in
    /// shared memory and copies the next `FAST_STAGES − 1` tiles into it
    /// with `cp.async` ([`crate::dev::pipeline`]) while it computes the
    /// current one: the bytes in flight hold no registers, and one barrier
    /// per tile orders the ring. Below sm_80, after a tile's barrier each
    /// thread issues the global loads of its block's next tile into
    /// registers, computes the current tile from shared memory, and stores
    /// the loads to shared memory at the top of the next iteration. Edge
    /// tiles (and, everywhere, masks wider than `LOADS` loads per thread)
    /// load at the top of their iteration.
    ///
    /// `CH` is 0, or the mask's chunk count `ceil(w / R)` known at compile
    /// time (mask in the parameter space only): the chunk loop is then
    /// unrolled and every tap is a constant-bank operand with an
    /// immediate offset, instead of a run-time `ld.const` per tap.
    #[inline(always)]
    unsafe fn fast<T: ConvElem, M: Mask<T>, const CH: usize>(
        input: *const T,
        output: *mut T,
        n: usize,
        mask: M,
        w: usize,
        left: usize,
        mode: u32,
    ) {
        const R: usize = FAST_OUTPUTS;
        const { assert!(CH == 0 || (M::CONSTANT && CH <= 16)) };
        if CH > 0 && w.div_ceil(R) != CH {
            // Not this kernel's mask width (the host never launches it so).
            return;
        }
        // Loads per thread of the interior tile: R for the outputs plus
        // one for the halo, enough while R·⌈w/R⌉ ≤ blockDim (w ≤ 256 at
        // 256 threads); wider masks take the plain loop.
        const LOADS: usize = super::FAST_LOADS;
        let threads = block_dim_x() as usize;
        let t = thread_idx_x() as usize;
        let tile = R * threads;
        let full = w / R;
        let rem = w - full * R;
        let span = super::fast_shared_elems(threads, w);
        // SAFETY: the host launches with fast_shared_total(threads, w)
        // elements (FAST_STAGES · span while span ≤ LOADS · threads, on
        // sm_80 and newer); the dynamic window is 16-byte aligned.
        let s: Shared<T> = unsafe { dynamic() };
        let tiles = n.div_ceil(tile);
        let grid = grid_dim_x() as usize;
        // Whether tile `b`'s inputs lie inside the input and take at most
        // LOADS loads per thread: those tiles are copied ahead (into the
        // ring on sm_80+, into registers before). Block-uniform.
        let inside = |b: usize| {
            let origin = (b * tile) as isize - left as isize;
            span <= LOADS * threads && origin >= 0 && origin as usize + span <= n
        };
        // Tile `b`'s inputs at shared element `off` at the top of its
        // iteration, when it was not copied ahead.
        let fill = #[inline(always)]
        |b: usize, off: usize| {
            let origin = (b * tile) as isize - left as isize;
            if origin >= 0 && origin as usize + span <= n {
                // SAFETY: [origin, origin + span) lies inside the input.
                let p = unsafe { input.add(origin as usize) };
                let mut k = t;
                while k < span {
                    // SAFETY: k < span; off + span ≤ the window.
                    unsafe { s.write(off + k, *p.add(k)) };
                    k += threads;
                }
            } else {
                let mut k = t;
                while k < span {
                    // SAFETY: k < span; fetch maps any position.
                    unsafe { s.write(off + k, fetch(input, n, origin + k as isize, mode)) };
                    k += threads;
                }
            }
        };
        // Thread t's R outputs of the tile starting at `tile_start`, its
        // inputs at shared element `off` (a multiple of 4).
        // (The unrolled chunks' last `lo = hi` is never read.)
        let compute = #[inline(always)]
        #[allow(unused_assignments)]
        |off: usize, tile_start: usize| {
            let o = tile_start + R * t;
            if o < n && CH > 0 {
                let mut acc = [T::ZERO; R];
                let base = off + R * t;
                // Taps in the last chunk (1 ..= R): CH = ceil(w / R).
                let last = w - R * (CH - 1);
                // SAFETY: base + R ≤ off + span; base is a multiple of R = 4.
                let mut lo = unsafe { T::read4(s, base) };
                unroll!(const C in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below CH => {
                    // SAFETY: base + (C + 1)·R + R ≤ off + R·threads + R·CH = off + span.
                    let hi = unsafe { T::read4(s, base + (C + 1) * R) };
                    let x = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                    unroll!(const JJ in [0, 1, 2, 3] below R => {
                        if C + 1 < CH || JJ < last {
                            // SAFETY: C·R + JJ < w: the host passes w taps.
                            let m: T = mask_tap!(T, mask.base(), C * R + JJ);
                            unroll!(r in [0, 1, 2, 3] below R => {
                                acc[r] = T::fma(x[r + JJ], m, acc[r]);
                            });
                        }
                    });
                    lo = hi;
                });
                // SAFETY: as below.
                unsafe { store(output, n, o, acc) };
            } else if o < n {
                let mut acc = [T::ZERO; R];
                let base = off + R * t;
                // The shared reads below stay inside: base + (c + 1)·R + R ≤
                // off + R·threads + R·ceil(w / R) = off + span for every
                // chunk c read.
                // SAFETY: base + R ≤ off + span; base is a multiple of R = 4.
                let mut lo = unsafe { T::read4(s, base) };
                // One chunk: taps c·R .. c·R + R against the window lo ++ hi.
                let mut chunk = |c: usize, lo: &mut [T; R]| {
                    // SAFETY: see above; (c + 1)·R is a multiple of 4.
                    let hi = unsafe { T::read4(s, base + (c + 1) * R) };
                    let x = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                    for jj in 0..R {
                        // SAFETY: c·R + jj < full·R ≤ w.
                        let m = unsafe { mask.tap(c * R + jj) };
                        for r in 0..R {
                            acc[r] = T::fma(x[r + jj], m, acc[r]);
                        }
                    }
                    *lo = hi;
                };
                // Four chunks per iteration, counted in 32 bits, then the
                // 0–3 chunks left. (LLVM unrolls a one-chunk loop only
                // twice; at w = 127 its extra loop tests cost 1.08–1.09×
                // the twin's time, now 1.03–1.04×.)
                let quads = (full / 4) as u32;
                for q in 0..quads {
                    let c = 4 * q as usize;
                    chunk(c, &mut lo);
                    chunk(c + 1, &mut lo);
                    chunk(c + 2, &mut lo);
                    chunk(c + 3, &mut lo);
                }
                for c in (full & !3) as u32..full as u32 {
                    chunk(c as usize, &mut lo);
                }
                if rem > 0 {
                    // SAFETY: (full + 1)·R ≤ R·ceil(w / R), see above.
                    let hi = unsafe { T::read4(s, base + (full + 1) * R) };
                    let x = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                    for jj in 0..R {
                        if jj < rem {
                            // SAFETY: full·R + jj < w.
                            let m = unsafe { mask.tap(full * R + jj) };
                            for r in 0..R {
                                acc[r] = T::fma(x[r + jj], m, acc[r]);
                            }
                        }
                    }
                }
                // SAFETY: o < n.
                unsafe { store(output, n, o, acc) };
            }
        };
        let mut b = block_idx_x() as usize;
        #[cfg(target_feature = "sm_80")]
        if span <= LOADS * threads {
            const S: usize = super::FAST_STAGES;
            // Copies tile `bb`'s inputs into ring buffer `stage` when it
            // is copied ahead; one group per call either way, so a
            // thread's groups stay one per tile.
            let issue = #[inline(always)]
            |bb: usize, stage: usize| {
                if bb < tiles && inside(bb) {
                    // SAFETY: inside(bb): [bb·tile − left, + span) lies
                    // inside the input.
                    let p = unsafe { input.add(bb * tile - left) };
                    for k in 0..LOADS {
                        let i = t + k * threads;
                        if i < span {
                            // SAFETY: i < span; stage·span + i inside the
                            // S·span window; nobody touches the buffer
                            // until the tile's wait and barrier.
                            unsafe { T::copy1_async(s.addr_of(stage * span + i), p.add(i), true) };
                        }
                    }
                }
                pipeline::commit_group();
            };
            for d in 0..S - 1 {
                issue(b + d * grid, d);
            }
            let mut stage = 0;
            while b < tiles {
                let off = stage * span;
                if !inside(b) {
                    fill(b, off);
                }
                // This tile's group is done when at most S − 2 younger
                // ones are in flight; the barrier makes every thread's
                // copies (and fills) visible, and frees the buffer the
                // previous tile was computed from.
                pipeline::wait_group::<{ S as u32 - 2 }>();
                // SAFETY: reached by every thread (block-uniform loop).
                unsafe { sync_threads() };
                let prev = if stage == 0 { S - 1 } else { stage - 1 };
                issue(b + (S - 1) * grid, prev);
                compute(off, b * tile);
                stage = if stage + 1 == S { 0 } else { stage + 1 };
                b += grid;
            }
            // Every copy issued was for a tile below `tiles`, waited for
            // above; this orders nothing but keeps the block's exit clean.
            pipeline::wait_group::<0>();
            return;
        }
        // Tile `b`'s inputs into `v`, LOADS independent loads per thread.
        // SAFETY (callers): `staged(b)`, so [origin, origin + span) lies
        // inside the input.
        let staged = |b: usize| !cfg!(target_feature = "sm_80") && inside(b);
        let load = |b: usize, v: &mut [T; LOADS]| {
            // SAFETY: see above; b·tile ≥ left when staged(b).
            let p = unsafe { input.add(b * tile - left) };
            for (k, slot) in v.iter_mut().enumerate() {
                let i = t + k * threads;
                if i < span {
                    // SAFETY: i < span.
                    *slot = unsafe { *p.add(i) };
                }
            }
        };
        // Software pipeline over the block's tiles (grid-stride): the
        // loads of the next tile issue before the current tile's compute
        // and land in shared memory after it, so they are in flight while
        // the block computes.
        let mut v = [T::ZERO; LOADS];
        if b < tiles && staged(b) {
            load(b, &mut v);
        }
        while b < tiles {
            if staged(b) {
                // The prefetched inputs (loaded before the previous tile's
                // compute, or before the loop).
                for (k, &x) in v.iter().enumerate() {
                    let i = t + k * threads;
                    if i < span {
                        // SAFETY: i < span.
                        unsafe { s.write(i, x) };
                    }
                }
            } else {
                fill(b, 0);
            }
            // SAFETY: reached by every thread (the loop bound and the
            // branches above are block-uniform).
            unsafe { sync_threads() };
            let next = b + grid;
            if next < tiles && staged(next) {
                load(next, &mut v);
            }
            compute(0, b * tile);
            // SAFETY: as above; the next tile overwrites the buffer.
            unsafe { sync_threads() };
            b = next;
        }
    }

    macro_rules! conv1d_kernel {
        ($name:ident, $t:ty, fast, $mask:tt) => {
            conv1d_kernel!($name, $t, fast::<_, _, 0>, $mask);
        };
        ($name:ident, $t:ty, $algo:ident, $mask:tt) => {
            conv1d_kernel!($name, $t, $algo::<_, _>, $mask);
        };
        ($name:ident, $t:ty, $algo:ident::<_, _ $(, $ch:literal)?>, global) => {
            /// See the module documentation (`conv::conv1d`).
            ///
            /// # Safety
            /// `input` and `output` valid for `n` elements, not overlapping;
            /// `mask` valid for `w` elements; `w ≥ 1`, `left < w`; dynamic
            /// shared memory as the module's layout functions give.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const $t,
                output: *mut $t,
                n: usize,
                mask: *const $t,
                w: u32,
                left: u32,
                mode: u32,
            ) {
                crate::dev::sync::grid_dependency_wait();
                let mask = GlobalMask(mask);
                // SAFETY: same contract.
                unsafe { $algo::<$t, _ $(, $ch)?>(input, output, n, mask, w as usize, left as usize, mode) }
            }
        };
        ($name:ident, $t:ty, $algo:ident::<_, _ $(, $ch:literal)?>, (param $bytes:expr)) => {
            /// See the module documentation (`conv::conv1d`).
            ///
            /// # Safety
            /// `input` and `output` valid for `n` elements, not overlapping;
            /// `taps` holding the `w` taps (`mask` is not read); `w ≥ 1`,
            /// `left < w`; dynamic shared memory as the module's layout
            /// functions give.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const $t,
                output: *mut $t,
                n: usize,
                _mask: *const $t,
                w: u32,
                left: u32,
                mode: u32,
                _taps: ParamBytes<{ $bytes }>,
            ) {
                crate::dev::sync::grid_dependency_wait();
                crate::param_symbol!(Taps = $name, 7);
                let mask = ParamMask::<Taps>(PhantomData);
                // SAFETY: same contract.
                unsafe { $algo::<$t, _ $(, $ch)?>(input, output, n, mask, w as usize, left as usize, mode) }
            }
        };
    }

    /// Taps of the run-time kernels' parameter: [`PARAM_MASK_BYTES`].
    const RUNTIME: usize = PARAM_MASK_BYTES;
    /// Bytes of the compile-time kernels' parameter.
    const FIXED_F32: usize = FIXED_MASK_TAPS * 4;
    /// As [`FIXED_F32`] for `f64`.
    const FIXED_F64: usize = FIXED_MASK_TAPS * 8;

    conv1d_kernel!(conv1d_basic_f32, f32, direct, global);
    conv1d_kernel!(conv1d_const_f32, f32, direct, (param RUNTIME));
    conv1d_kernel!(conv1d_tiled_f32, f32, tiled, (param RUNTIME));
    conv1d_kernel!(conv1d_tiled_gm_f32, f32, tiled, global);
    conv1d_kernel!(conv1d_tiled_l2_f32, f32, tiled_l2, (param RUNTIME));
    conv1d_kernel!(conv1d_tiled_l2_gm_f32, f32, tiled_l2, global);
    conv1d_kernel!(conv1d_fast_f32, f32, fast, (param RUNTIME));
    conv1d_kernel!(conv1d_fast_gm_f32, f32, fast, global);
    conv1d_kernel!(conv1d_basic_f64, f64, direct, global);
    conv1d_kernel!(conv1d_const_f64, f64, direct, (param RUNTIME));
    conv1d_kernel!(conv1d_tiled_f64, f64, tiled, (param RUNTIME));
    conv1d_kernel!(conv1d_tiled_gm_f64, f64, tiled, global);
    conv1d_kernel!(conv1d_tiled_l2_f64, f64, tiled_l2, (param RUNTIME));
    conv1d_kernel!(conv1d_tiled_l2_gm_f64, f64, tiled_l2, global);
    conv1d_kernel!(conv1d_fast_f64, f64, fast, (param RUNTIME));
    conv1d_kernel!(conv1d_fast_gm_f64, f64, fast, global);
    conv1d_kernel!(conv1d_const_short_f32, f32, direct, (param FIXED_F32));
    conv1d_kernel!(conv1d_tiled_short_f32, f32, tiled, (param FIXED_F32));
    conv1d_kernel!(conv1d_tiled_l2_short_f32, f32, tiled_l2, (param FIXED_F32));
    conv1d_kernel!(conv1d_const_short_f64, f64, direct, (param FIXED_F64));
    conv1d_kernel!(conv1d_tiled_short_f64, f64, tiled, (param FIXED_F64));
    conv1d_kernel!(conv1d_tiled_l2_short_f64, f64, tiled_l2, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast1_f32, f32, fast::<_, _, 1>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast2_f32, f32, fast::<_, _, 2>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast3_f32, f32, fast::<_, _, 3>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast4_f32, f32, fast::<_, _, 4>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast5_f32, f32, fast::<_, _, 5>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast6_f32, f32, fast::<_, _, 6>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast7_f32, f32, fast::<_, _, 7>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast8_f32, f32, fast::<_, _, 8>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast9_f32, f32, fast::<_, _, 9>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast10_f32, f32, fast::<_, _, 10>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast11_f32, f32, fast::<_, _, 11>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast12_f32, f32, fast::<_, _, 12>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast13_f32, f32, fast::<_, _, 13>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast14_f32, f32, fast::<_, _, 14>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast15_f32, f32, fast::<_, _, 15>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast16_f32, f32, fast::<_, _, 16>, (param FIXED_F32));
    conv1d_kernel!(conv1d_fast1_f64, f64, fast::<_, _, 1>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast2_f64, f64, fast::<_, _, 2>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast3_f64, f64, fast::<_, _, 3>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast4_f64, f64, fast::<_, _, 4>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast5_f64, f64, fast::<_, _, 5>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast6_f64, f64, fast::<_, _, 6>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast7_f64, f64, fast::<_, _, 7>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast8_f64, f64, fast::<_, _, 8>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast9_f64, f64, fast::<_, _, 9>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast10_f64, f64, fast::<_, _, 10>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast11_f64, f64, fast::<_, _, 11>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast12_f64, f64, fast::<_, _, 12>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast13_f64, f64, fast::<_, _, 13>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast14_f64, f64, fast::<_, _, 14>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast15_f64, f64, fast::<_, _, 15>, (param FIXED_F64));
    conv1d_kernel!(conv1d_fast16_f64, f64, fast::<_, _, 16>, (param FIXED_F64));
}
