//! 2D convolution kernels: the lesson's 2D forms and a faster one, plus
//! the two passes of a separable convolution.
//!
//! | kernel | mask read from | input read from |
//! | --- | --- | --- |
//! | `conv2d_basic_*` | global memory (pointer) | global memory, `mw · mh` loads per output |
//! | `conv2d_const_*` | constant memory (`CONV_MASK`, row-major `mh × mw`) | global memory, `mw · mh` loads per output |
//! | `conv2d_tiled_*` | constant memory | a shared tile of `(blockDim.y + mh − 1) × (blockDim.x + mw − 1)` cells (the block's outputs plus the halo, ghost cells per mode), one barrier, one output per thread |
//! | `conv2d_fast_*` | constant memory | a shared tile of [`FAST_Y`]` · blockDim.y` × [`FAST_X`]` · blockDim.x` outputs plus halo; each thread computes a [`FAST_Y`] × [`FAST_X`] block of outputs from registers, reading the tile four elements at a time |
//! | `conv2d_strip3_*`, `conv2d_strip5_*`, `conv2d_strip7_*` | constant memory, as constant-bank operands | the fast kernel's register form for centred 3 × 3, 5 × 5 and 7 × 7 masks ([`fast_in_registers`]): no shared tile; each thread slides down a `FAST_X × STRIP_H` strip, one input row at a time (128-bit loads, the next row in flight), the mask fully unrolled |
//! | `conv2d_rows_*` | global memory | as `conv2d_fast`, with a `1 × mw` mask (separable row pass) |
//! | `conv2d_cols_*` | global memory | as `conv2d_fast`, with an `mh × 1` mask (separable column pass): threads run along x, so every load is coalesced |
//!
//! The kernels whose names end in `_gm_f32` / `_gm_f64` are the tiled and
//! fast kernels with the mask in global memory instead, for masks with
//! more taps than the constant array holds.
//!
//! All take `(input, output, width, height, pitch, mask, mw, mh, left_x,
//! left_y, mode)`: a `width × height` image whose rows start `pitch`
//! elements apart (`pitch ≥ width`; element `(x, y)` at `y · pitch + x`),
//! in and out with the same layout; `mask` a global copy of the `mh × mw`
//! taps, row-major (read only by the global-memory kernels); `left_x`,
//! `left_y` the taps left of and above the centre; `mode` a
//! [`Boundary`](super::Boundary) raw value applied to each axis on its
//! own. The row pass reads only `mw` and `left_x` (its mask is `1 × mw`),
//! the column pass only `mh` and `left_y`. Elements between `width` and
//! `pitch` are never read or written. Blocks walk tiles grid-stride in
//! both dimensions, so any grid covers any image.

/// Outputs per thread along x in the fast kernel (one 4-wide register
/// chunk).
pub const FAST_X: usize = 4;

/// Outputs per thread along y in the fast kernel.
pub const FAST_Y: usize = 4;

/// Output rows per thread of the fast kernel's register form (see
/// [`fast_in_registers`]): each thread computes a `FAST_X × STRIP_H`
/// strip, a block a `FAST_X · bx × STRIP_H · by` tile.
pub const STRIP_H: usize = 16;

/// The largest mask side the register form handles.
pub const STRIP_MAX_MASK: usize = 7;

/// The most 4-wide chunks a row of the register form's window spans.
pub const STRIP_CHUNKS: usize = 4;

/// Chunks per window row of the register form for a centred mask of
/// width `mw`: from the aligned column `a` (the window's start rounded
/// down to a multiple of 4) through the last column an output reads.
pub const fn strip_chunks(mw: usize) -> usize {
    let s = (mw / 2).wrapping_neg() & (FAST_X - 1);
    (s + mw - 1).div_ceil(FAST_X) + 1
}

/// True when `conv2d_fast` runs its register form for an `mw × mh` mask
/// with `left` taps left of and above the centre: the centred 3 × 3,
/// 5 × 5 and 7 × 7 masks (`left = size / 2`, as every odd correlation or
/// convolution). It then needs no shared memory and each thread computes
/// a `FAST_X × STRIP_H` strip; any other mask takes the shared-tile form.
pub const fn fast_in_registers((mw, mh): (usize, usize), (lx, ly): (usize, usize)) -> bool {
    mw == mh && (mw == 3 || mw == 5 || mw == 7) && lx == mw / 2 && ly == mh / 2
}

/// Shared-memory elements of `conv2d_tiled` for a `bx × by` block and an
/// `mw × mh` mask: the block's outputs plus the halo,
/// `(by + mh − 1) · (bx + mw − 1)`.
pub const fn tiled_shared_elems(bx: usize, by: usize, mw: usize, mh: usize) -> usize {
    (by + mh - 1) * (bx + mw - 1)
}

/// Row stride (elements) of the fast kernel's shared tile: the
/// `FAST_X · bx` outputs plus the halo rounded up to whole 4-wide chunks,
/// so every chunk a thread reads starts 16-byte aligned and lies inside.
pub const fn fast_row_stride(bx: usize, mw: usize) -> usize {
    FAST_X * bx + FAST_X * mw.div_ceil(FAST_X)
}

/// Shared-memory elements of `conv2d_fast` (and the row and column
/// passes) for a `bx × by` block and an `mw × mh` mask:
/// `(FAST_Y · by + mh − 1)` rows of [`fast_row_stride`] elements.
pub const fn fast_shared_elems(bx: usize, by: usize, mw: usize, mh: usize) -> usize {
    (FAST_Y * by + mh - 1) * fast_row_stride(bx, mw)
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{FAST_X, FAST_Y, STRIP_CHUNKS, STRIP_H, STRIP_MAX_MASK, strip_chunks};
    use crate::conv::CONV_MASK;
    use crate::conv::boundary::{map_index_edge, map_index32};
    use crate::conv::elem::{ConvElem, dot, mask_tap, opaque, unroll};
    use crate::dev::grid::GridStride;
    use crate::dev::index::{
        block_dim_x, block_dim_y, block_idx_x, block_idx_y, grid_dim_x, grid_dim_y, thread_idx_x, thread_idx_y,
    };
    use crate::dev::shared::{Shared, dynamic};
    use crate::dev::sync::sync_threads;
    use crate::dev::warp::{FULL_MASK, WARP_SIZE, ballot, lane_id, shfl_idx};

    /// Rows of global loads per thread the fast kernel keeps in flight
    /// before its shared stores (its `LR` parameter): more loads in flight
    /// against more registers. Chosen so each kernel stays at the same
    /// resident blocks per SM as with fewer (sm_90: 64 registers for
    /// `conv2d_fast_f32`, 4 blocks of 256 threads).
    const LOAD_ROWS_FAST: usize = 4;
    /// The column pass's `LR` (4 would cost it a resident block).
    const LOAD_ROWS_COLS: usize = 2;
    /// Columns of loads per row in flight (see [`LOAD_ROWS_FAST`]).
    const LOAD_COLS: usize = 1;

    /// Where a kernel reads its taps (row-major, `k = j · mw + i`).
    trait Taps<T>: Copy {
        /// True for the taps in constant memory (`CONV_MASK`).
        const CONSTANT: bool;

        /// Tap `k`.
        ///
        /// # Safety
        /// `k` is below the mask's `mw · mh` taps.
        unsafe fn at(self, k: usize) -> T;
    }

    /// Taps in constant memory (`CONV_MASK`).
    #[derive(Clone, Copy)]
    struct ConstTaps;

    impl<T: ConvElem> Taps<T> for ConstTaps {
        const CONSTANT: bool = true;

        #[inline(always)]
        unsafe fn at(self, k: usize) -> T {
            // SAFETY: the host wrote the mw · mh taps (≤ CONV_MASK_BYTES).
            unsafe { T::ld_const(CONV_MASK::base() + (k * core::mem::size_of::<T>()) as u64) }
        }
    }

    /// Taps in global memory.
    #[derive(Clone, Copy)]
    struct GlobalTaps<T>(*const T);

    impl<T: ConvElem> Taps<T> for GlobalTaps<T> {
        const CONSTANT: bool = false;

        #[inline(always)]
        unsafe fn at(self, k: usize) -> T {
            // SAFETY: the host passes a mask of mw · mh taps.
            unsafe { *self.0.add(k) }
        }
    }

    /// A pitched input image and its boundary mode.
    #[derive(Clone, Copy)]
    struct Image<T> {
        p: *const T,
        width: usize,
        height: usize,
        pitch: usize,
        mode: u32,
    }

    impl<T: ConvElem> Image<T> {
        /// Element `(x, y)` (inside the image).
        ///
        /// # Safety
        /// `x < width`, `y < height`.
        #[inline(always)]
        unsafe fn at(self, x: usize, y: usize) -> T {
            // SAFETY: inside the image, which the host guarantees valid.
            unsafe { *self.p.add(y * self.pitch + x) }
        }

        /// The value at position `(x, y)` (any integers): each axis mapped
        /// by the mode on its own; zero where either axis gives zero.
        ///
        /// # Safety
        /// The image is non-empty.
        #[inline(always)]
        unsafe fn fetch(self, x: isize, y: isize) -> T {
            match (
                map_index_edge(x, self.width as isize, self.mode),
                map_index_edge(y, self.height as isize, self.mode),
            ) {
                // SAFETY: map_index returns in-range indices.
                (Some(i), Some(j)) => unsafe { self.at(i, j) },
                _ => T::ZERO,
            }
        }

        /// True when the `w × h` window at `(x0, y0)` lies inside the image
        /// (no boundary arithmetic needed).
        #[inline(always)]
        fn contains(self, x0: isize, y0: isize, w: usize, h: usize) -> bool {
            x0 >= 0 && y0 >= 0 && x0 as usize + w <= self.width && y0 as usize + h <= self.height
        }
    }

    /// The lesson's basic 2D kernel: one output per thread, every tap read
    /// from global memory; windows wholly inside the image skip the
    /// boundary arithmetic.
    #[inline(always)]
    unsafe fn direct<T: ConvElem, M: Taps<T>>(
        img: Image<T>,
        output: *mut T,
        mask: M,
        (mw, mh): (usize, usize),
        (lx, ly): (usize, usize),
    ) {
        let (bdx, bdy) = (block_dim_x() as usize, block_dim_y() as usize);
        let mut y = block_idx_y() as usize * bdy + thread_idx_y() as usize;
        while y < img.height {
            let mut x = block_idx_x() as usize * bdx + thread_idx_x() as usize;
            while x < img.width {
                let (sx, sy) = (x as isize - lx as isize, y as isize - ly as isize);
                let mut acc = T::ZERO;
                if img.contains(sx, sy, mw, mh) {
                    // SAFETY: the window lies inside the image.
                    let base = unsafe { img.p.add(sy as usize * img.pitch + sx as usize) };
                    for j in 0..mh {
                        // SAFETY: row j of the window.
                        let row = unsafe { base.add(j * img.pitch) };
                        // A constant tap's index passes through `opaque`, so the
                        // compiler cannot fold the tap's address into the
                        // input pointer's induction variable (a per-thread
                        // register): it stays uniform, a `ULDC`.
                        let tap = |k: usize| if M::CONSTANT { opaque(k) } else { k };
                        // SAFETY: dot reads i < mw; j < mh: inside window and mask.
                        acc = unsafe { dot(acc, mw, |i| *row.add(i), |i| mask.at(tap(j * mw + i))) };
                    }
                } else {
                    for j in 0..mh {
                        for i in 0..mw {
                            // SAFETY: fetch maps any position.
                            let v = unsafe { img.fetch(sx + i as isize, sy + j as isize) };
                            // SAFETY: tap index < mw · mh.
                            acc = T::fma(v, unsafe { mask.at(j * mw + i) }, acc);
                        }
                    }
                }
                // SAFETY: x < width, y < height.
                unsafe { *output.add(y * img.pitch + x) = acc };
                x += grid_dim_x() as usize * bdx;
            }
            y += grid_dim_y() as usize * bdy;
        }
    }

    /// The lesson's tiled 2D kernel: the block's `blockDim.y ×
    /// blockDim.x` outputs and their halo in shared memory (ghost cells
    /// per mode), loaded by all threads together, a barrier, then one
    /// output per thread from shared memory.
    #[inline(always)]
    unsafe fn tiled<T: ConvElem, M: Taps<T>>(
        img: Image<T>,
        output: *mut T,
        mask: M,
        (mw, mh): (usize, usize),
        (lx, ly): (usize, usize),
    ) {
        let (bdx, bdy) = (block_dim_x() as usize, block_dim_y() as usize);
        let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
        let threads = bdx * bdy;
        let t = ty * bdx + tx;
        let sw = bdx + mw - 1;
        let total = super::tiled_shared_elems(bdx, bdy, mw, mh);
        // SAFETY: the host launches with tiled_shared_elems(..) elements.
        let s: Shared<T> = unsafe { dynamic() };
        let (tiles_x, tiles_y) = (img.width.div_ceil(bdx), img.height.div_ceil(bdy));
        for tyi in GridStride::new(block_idx_y() as usize, grid_dim_y() as usize, tiles_y) {
            for txi in GridStride::new(block_idx_x() as usize, grid_dim_x() as usize, tiles_x) {
                // The thread's offsets are computed here, where they are
                // used, not held in registers across the loops.
                let (tx, ty, t) = (opaque(tx), opaque(ty), opaque(t));
                let (x0, y0) = (txi * bdx, tyi * bdy);
                let (ox, oy) = (x0 as isize - lx as isize, y0 as isize - ly as isize);
                let inside = img.contains(ox, oy, sw, bdy + mh - 1);
                let mut k = t;
                while k < total {
                    let r = k / sw;
                    let c = k - r * sw;
                    let v = if inside {
                        // SAFETY: the whole tile lies inside the image.
                        unsafe { img.at((ox + c as isize) as usize, (oy + r as isize) as usize) }
                    } else {
                        // SAFETY: fetch maps any position.
                        unsafe { img.fetch(ox + c as isize, oy + r as isize) }
                    };
                    // SAFETY: k < total.
                    unsafe { s.write(k, v) };
                    k += threads;
                }
                // SAFETY: reached by every thread (block-uniform loops).
                unsafe { sync_threads() };
                let (x, y) = (x0 + tx, y0 + ty);
                if x < img.width && y < img.height {
                    let (mw, mh) = (opaque(mw), opaque(mh));
                    let mut acc = T::ZERO;
                    for j in 0..mh {
                        let row = (ty + j) * sw + tx;
                        // SAFETY: dot reads i < mw: row + i < total; tap < mw · mh.
                        acc = unsafe { dot(acc, mw, |i| s.read(row + i), |i| mask.at(j * mw + i)) };
                    }
                    // SAFETY: x < width, y < height.
                    unsafe { *output.add(y * img.pitch + x) = acc };
                }
                // SAFETY: as above; the next tile overwrites the buffer.
                unsafe { sync_threads() };
            }
        }
    }

    /// Applies one 4-wide chunk of taps of mask row `j` to one output row's
    /// four accumulators: `acc[q] += x[q + jj] · tap(k0 + jj)` for the
    /// first `n` taps of the chunk (`n ≤ 4`; the rest are skipped, not
    /// multiplied by zero).
    ///
    /// # Safety
    /// Taps `k0 .. k0 + n` exist.
    #[inline(always)]
    unsafe fn chunk<T: ConvElem, M: Taps<T>>(acc: &mut [T; FAST_X], x: &[T; 2 * FAST_X], mask: M, k0: usize, n: usize) {
        for jj in 0..FAST_X {
            if jj < n {
                // SAFETY: k0 + jj < k0 + n.
                let m = unsafe { mask.at(k0 + jj) };
                for q in 0..FAST_X {
                    acc[q] = T::fma(x[q + jj], m, acc[q]);
                }
            }
        }
    }

    /// The fast kernel: a shared tile and a register block per thread.
    ///
    /// A block's tile is `FAST_Y · blockDim.y` rows by `FAST_X ·
    /// blockDim.x` columns of outputs. Load phase: the block copies the
    /// inputs they need (tile plus halo) into shared memory; in interior
    /// tiles with plain loads, `LR · LOAD_COLS` per thread in flight before
    /// the shared stores, at the image's edges through the mode's index
    /// map. Compute phase: thread `(tx, ty)` owns outputs `FAST_X · tx …`
    /// of rows `FAST_Y · ty …`. It walks the `FAST_Y + mh − 1` input rows
    /// they need once; of each row it reads the window in 4-wide chunks
    /// (one 128-bit shared load for `f32`) and applies every mask row that
    /// pairs this input row with one of its output rows to all four
    /// outputs of that row. So each shared chunk feeds up to
    /// `4 · 4 · FAST_Y` multiply-adds. Taps past `mw` in the last chunk
    /// are skipped, never multiplied by zero, so infinities and NaNs
    /// propagate exactly as in the plain sum.
    #[inline(always)]
    unsafe fn fast<T: ConvElem, M: Taps<T>, const LR: usize>(
        img: Image<T>,
        output: *mut T,
        mask: M,
        (mw, mh): (usize, usize),
        (lx, ly): (usize, usize),
    ) {
        let (bdx, bdy) = (block_dim_x() as usize, block_dim_y() as usize);
        let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
        let (tw, th) = (FAST_X * bdx, FAST_Y * bdy);
        let sw = super::fast_row_stride(bdx, mw);
        // Columns and rows loaded; columns lw .. sw are read by the last
        // chunk but never used.
        let (lw, sh) = (tw + mw - 1, th + mh - 1);
        let full = mw / FAST_X;
        let rem = mw - full * FAST_X;
        // SAFETY: the host launches with fast_shared_elems(..) elements;
        // the dynamic window is 16-byte aligned and sw is a multiple of 4.
        let s: Shared<T> = unsafe { dynamic() };
        let (tiles_x, tiles_y) = (img.width.div_ceil(tw), img.height.div_ceil(th));
        for tyi in GridStride::new(block_idx_y() as usize, grid_dim_y() as usize, tiles_y) {
            for txi in GridStride::new(block_idx_x() as usize, grid_dim_x() as usize, tiles_x) {
                // The thread's offsets are computed here, where they are
                // used, not held in registers across the loops: at four
                // resident blocks (64 registers) this is what keeps the
                // kernel from spilling.
                let (tx, ty) = (opaque(tx), opaque(ty));
                let (x0, y0) = (txi * tw, tyi * th);
                let (ox, oy) = (x0 as isize - lx as isize, y0 as isize - ly as isize);
                // Load phase: thread (tx, ty) loads rows ty, ty + bdy, …
                // and columns tx, tx + bdx, … of the lw × sh region.
                if img.contains(ox, oy, lw, sh) {
                    // SAFETY: the region lies inside the image.
                    let base = unsafe { img.p.add(oy as usize * img.pitch + ox as usize) };
                    // In-tile indices in 32 bits, as in the compute phase.
                    let (sh32, lw32, sw32) = (sh as u32, lw as u32, sw as u32);
                    let (bdx32, bdy32) = (bdx as u32, bdy as u32);
                    let mut r0 = ty as u32;
                    while r0 < sh32 {
                        let mut c0 = tx as u32;
                        while c0 < lw32 {
                            // LR × LOAD_COLS loads in flight, then
                            // their shared stores.
                            let mut v = [[T::ZERO; LOAD_COLS]; LR];
                            for (u, vu) in v.iter_mut().enumerate() {
                                let r = r0 + u as u32 * bdy32;
                                if r < sh32 {
                                    // SAFETY: row r < sh of the region.
                                    let src = unsafe { base.add(r as usize * img.pitch) };
                                    for (w, vw) in vu.iter_mut().enumerate() {
                                        let c = c0 + w as u32 * bdx32;
                                        if c < lw32 {
                                            // SAFETY: column c < lw of the region.
                                            *vw = unsafe { *src.add(c as usize) };
                                        }
                                    }
                                }
                            }
                            for (u, vu) in v.iter().enumerate() {
                                let r = r0 + u as u32 * bdy32;
                                for (w, &vw) in vu.iter().enumerate() {
                                    let c = c0 + w as u32 * bdx32;
                                    if r < sh32 && c < lw32 {
                                        // SAFETY: r < sh, c < lw ≤ sw: inside the tile.
                                        unsafe { s.write((r * sw32 + c) as usize, vw) };
                                    }
                                }
                            }
                            c0 += LOAD_COLS as u32 * bdx32;
                        }
                        r0 += LR as u32 * bdy32;
                    }
                } else {
                    // At the image's edges: each axis through the mode's
                    // index map, the row mapped once per row.
                    let mut r = ty;
                    while r < sh {
                        let yy = map_index_edge(oy + r as isize, img.height as isize, img.mode);
                        let mut c = tx;
                        while c < lw {
                            let v = match (yy, map_index_edge(ox + c as isize, img.width as isize, img.mode)) {
                                // SAFETY: map_index returns in-range indices.
                                (Some(j), Some(i)) => unsafe { img.at(i, j) },
                                _ => T::ZERO,
                            };
                            // SAFETY: r < sh, c < lw ≤ sw: inside the tile.
                            unsafe { s.write(r * sw + c, v) };
                            c += bdx;
                        }
                        r += bdy;
                    }
                }
                // SAFETY: reached by every thread (block-uniform loops).
                unsafe { sync_threads() };
                let (x, yb) = (x0 + FAST_X * tx, y0 + FAST_Y * ty);
                if x < img.width && yb < img.height {
                    let mut acc = [[T::ZERO; FAST_X]; FAST_Y];
                    // In-tile arithmetic in 32 bits (the tile is far below
                    // 2³² elements): half the registers of usize.
                    let (sw32, mw32, mh32) = (sw as u32, mw as u32, mh as u32);
                    let (full32, rem32) = (full as u32, rem as u32);
                    const FX: u32 = FAST_X as u32;
                    let row0 = (FAST_Y * ty) as u32 * sw32 + FX * tx as u32;
                    for ir in 0..FAST_Y as u32 + mh32 - 1 {
                        let row = row0 + ir * sw32;
                        // SAFETY (shared reads): row + FAST_X · (chunk + 1) + 3
                        // < (FAST_Y · ty + ir + 1) · sw for every chunk read,
                        // as sw = FAST_X · bdx + FAST_X · ceil(mw / FAST_X).
                        // SAFETY: see above.
                        let mut lo = unsafe { T::read4(s, row as usize) };
                        for cc in 0..full32 {
                            // SAFETY: see above.
                            let hi = unsafe { T::read4(s, (row + FX * (cc + 1)) as usize) };
                            let xs = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                            for (rr, a) in acc.iter_mut().enumerate() {
                                let rr = rr as u32;
                                if rr <= ir && ir - rr < mh32 {
                                    let k0 = (ir - rr) * mw32 + FX * cc;
                                    // SAFETY: mask row ir − rr < mh, taps of a full chunk.
                                    unsafe { chunk(a, &xs, mask, k0 as usize, FAST_X) };
                                }
                            }
                            lo = hi;
                        }
                        if rem32 > 0 {
                            // With one tap left only lo is used.
                            let hi = if rem32 > 1 {
                                // SAFETY: see above.
                                unsafe { T::read4(s, (row + FX * (full32 + 1)) as usize) }
                            } else {
                                lo
                            };
                            let xs = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                            for (rr, a) in acc.iter_mut().enumerate() {
                                let rr = rr as u32;
                                if rr <= ir && ir - rr < mh32 {
                                    let k0 = (ir - rr) * mw32 + FX * full32;
                                    // SAFETY: the last rem taps of mask row ir − rr.
                                    unsafe { chunk(a, &xs, mask, k0 as usize, rem) };
                                }
                            }
                        }
                    }
                    for (rr, a) in acc.iter().enumerate() {
                        let y = yb + rr;
                        if y < img.height {
                            // SAFETY: y < height and only x + q < width is
                            // stored; the vector store needs 16-byte
                            // alignment, checked.
                            unsafe {
                                let p = output.add(y * img.pitch + x);
                                if x + FAST_X <= img.width && (p as usize).is_multiple_of(16) {
                                    T::store4(p, *a);
                                } else {
                                    for (q, &v) in a.iter().enumerate() {
                                        if x + q < img.width {
                                            *p.add(q) = v;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                // SAFETY: as above; the next tile overwrites the buffer.
                unsafe { sync_threads() };
            }
        }
    }

    /// Where a thread of the register kernel reads its input rows: 4-wide
    /// chunks of window rows, chunk 0 starting at column `a ≥ 0`, every
    /// chunk inside the image's columns. Rows are mapped by the mode (rows
    /// past the top or bottom edge of a strip near them).
    trait Rows<T>: Copy {
        /// Window row `r` (image row `y0 + r` through the mode's map):
        /// element `a` of the image row it takes, or `None` for zeros.
        fn row(self, r: usize) -> Option<*const T>;

        /// Chunk `c` (columns `a + 4c … a + 4c + 3`) of a row from
        /// [`Rows::row`].
        ///
        /// # Safety
        /// `p` from `row`; chunk `c` within the loader's chunks.
        unsafe fn chunk(self, p: *const T, c: usize) -> [T; FAST_X];
    }

    /// The rows of a strip: the image and the window's corner.
    #[derive(Clone, Copy)]
    struct Strip<T> {
        /// Element `a` of image row 0, `a` the window's first column
        /// (aligned to 4, inside the image).
        base: *const T,
        pitch: usize,
        /// The window's first row (may be above the image) and the image's
        /// height (both below 2³¹, as the host checks).
        y0: i32,
        height: i32,
        mode: u32,
    }

    impl<T: ConvElem> Strip<T> {
        #[inline(always)]
        fn row(self, r: usize) -> Option<*const T> {
            let j = map_index32(self.y0 + r as i32, self.height, self.mode)?;
            // SAFETY: row j < height, column a < width.
            Some(unsafe { self.base.add(j as usize * self.pitch) })
        }
    }

    /// Rows 16-byte aligned: each chunk one vector load.
    #[derive(Clone, Copy)]
    struct Vector<T>(Strip<T>);

    impl<T: ConvElem> Rows<T> for Vector<T> {
        #[inline(always)]
        fn row(self, r: usize) -> Option<*const T> {
            self.0.row(r)
        }
        #[inline(always)]
        unsafe fn chunk(self, p: *const T, c: usize) -> [T; FAST_X] {
            // SAFETY: the chunk lies inside the row, 16-byte aligned.
            unsafe { T::load4(p.add(FAST_X * c)) }
        }
    }

    /// Rows not 16-byte aligned: four scalar loads per chunk.
    #[derive(Clone, Copy)]
    struct Scalar<T>(Strip<T>);

    impl<T: ConvElem> Rows<T> for Scalar<T> {
        #[inline(always)]
        fn row(self, r: usize) -> Option<*const T> {
            self.0.row(r)
        }
        #[inline(always)]
        unsafe fn chunk(self, p: *const T, c: usize) -> [T; FAST_X] {
            // SAFETY: the chunk lies inside the row.
            unsafe { core::array::from_fn(|k| *p.add(FAST_X * c + k)) }
        }
    }

    /// Chunks of one window row (at most [`STRIP_CHUNKS`] used).
    type Row<T> = [[T; FAST_X]; STRIP_CHUNKS];

    /// Loads the `chunks` chunks of window row `r` (zeros for a row the
    /// mode maps to nothing).
    ///
    /// # Safety
    /// As [`Rows::chunk`] for each.
    #[inline(always)]
    unsafe fn load_row<T: ConvElem, R: Rows<T>>(rows: R, r: usize, chunks: usize) -> Row<T> {
        let mut v = [[T::ZERO; FAST_X]; STRIP_CHUNKS];
        if let Some(p) = rows.row(r) {
            unroll!(c in [0, 1, 2, 3] below chunks => {
                // SAFETY: the caller's contract.
                v[c] = unsafe { rows.chunk(p, c) };
            });
        }
        v
    }

    /// One strip of the register kernel: `FAST_X` columns × [`STRIP_H`]
    /// rows of outputs for a centred `MW × MH` mask, by a sliding window of
    /// rows. The thread walks the strip's `STRIP_H + MH − 1` input rows
    /// once, top to bottom, loading the next row while it computes the
    /// current one. Accumulator slot `k` holds the output row `MH − 1 − k`
    /// rows above the current input row; each input row adds its mask row
    /// `j` to slot `MH − 1 − j` for every tap, all indices compile-time
    /// (the taps are constant-bank operands of the multiply-adds). When
    /// slot 0 is complete it is stored and the slots shift down. Window
    /// column `e` of a row is element `e % 4` of chunk `e / 4`, counted
    /// from `a = x − left_x − s`, `s < 4` the same for every thread.
    #[inline(always)]
    unsafe fn strip<T: ConvElem, R: Rows<T>, const MW: usize, const MH: usize>(
        rows: R,
        output: *mut T,
        pitch: usize,
        rows_out: usize,
        columns_out: usize,
        vector_store: bool,
    ) {
        let s = (MW / 2).wrapping_neg() & (FAST_X - 1);
        let chunks = strip_chunks(MW);
        let mut acc = [[T::ZERO; FAST_X]; STRIP_MAX_MASK];
        let steps = STRIP_H + MH - 1;
        // SAFETY: row 0 is part of the window.
        let mut cur = unsafe { load_row(rows, 0, chunks) };
        for ir in 0..steps {
            let next = if ir + 1 < steps {
                // SAFETY: row ir + 1 is part of the window.
                unsafe { load_row(rows, ir + 1, chunks) }
            } else {
                cur
            };
            unroll!(const J in [0, 1, 2, 3, 4, 5, 6] below MH => {
                unroll!(const I in [0, 1, 2, 3, 4, 5, 6] below MW => {
                    let m: T = mask_tap!(T, J * MW + I);
                    unroll!(q in [0, 1, 2, 3] below FAST_X => {
                        let e = s + I + q;
                        let slot = &mut acc[MH - 1 - J];
                        slot[q] = T::fma(cur[e / FAST_X][e % FAST_X], m, slot[q]);
                    });
                });
            });
            if ir + 1 >= MH && ir + 1 - MH < rows_out {
                // SAFETY: output row ir + 1 − MH of the strip lies inside
                // the image; only its first columns_out (≤ 4) columns are
                // stored; vector stores are 16-byte aligned when the caller
                // allows them (x is a multiple of 4).
                unsafe {
                    let p = output.add((ir + 1 - MH) * pitch);
                    if vector_store {
                        T::store4(p, acc[0]);
                    } else {
                        for (q, &v) in acc[0].iter().enumerate() {
                            if q < columns_out {
                                *p.add(q) = v;
                            }
                        }
                    }
                }
            }
            unroll!(k in [0, 1, 2, 3, 4, 5] below MH - 1 => {
                acc[k] = acc[k + 1];
            });
            acc[MH - 1] = [T::ZERO; FAST_X];
            cur = next;
        }
    }

    /// The register kernel for a centred `MW × MH` mask: thread `(tx, ty)`
    /// of a block owns the strip of columns `x = FAST_X · tx …` and rows
    /// `STRIP_H · ty …` of the block's tile. A warp's 32 threads cover 128
    /// consecutive columns, so each chunk load is one coalesced 512-byte
    /// `LDG.128`; the halo columns a thread reads are its neighbours' own
    /// chunks and come from L1, the halo rows from L1/L2, so DRAM sees each
    /// input about once. No shared tile, no barrier: every warp keeps its
    /// next row's loads in flight while it computes.
    ///
    /// Strips whose window columns lie inside the image run [`strip`]
    /// (rows past the top or bottom edge through the mode's map, a row at a
    /// time). The few at the left and right edges would need the map per
    /// element; rather than hold that code's registers in every thread, the
    /// whole warp computes each such strip afterwards, two outputs per lane
    /// from the plain sum.
    #[inline(always)]
    unsafe fn slide<T: ConvElem, M: Taps<T>, const MW: usize, const MH: usize>(img: Image<T>, output: *mut T, mask: M) {
        let (bdx, bdy) = (block_dim_x() as usize, block_dim_y() as usize);
        let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
        let (tw, th) = (FAST_X * bdx, STRIP_H * bdy);
        let (lx, ly) = (MW / 2, MH / 2);
        let s = lx.wrapping_neg() & (FAST_X - 1);
        let chunks = strip_chunks(MW);
        let row_bytes = img.pitch * core::mem::size_of::<T>();
        let aligned =
            (img.p as usize).is_multiple_of(16) && (output as usize).is_multiple_of(16) && row_bytes.is_multiple_of(16);
        let lane = lane_id();
        let (tiles_x, tiles_y) = (img.width.div_ceil(tw), img.height.div_ceil(th));
        for tyi in GridStride::new(block_idx_y() as usize, grid_dim_y() as usize, tiles_y) {
            for txi in GridStride::new(block_idx_x() as usize, grid_dim_x() as usize, tiles_x) {
                let (x, y) = (txi * tw + FAST_X * tx, tyi * th + STRIP_H * ty);
                let active = x < img.width && y < img.height;
                let a = x as isize - (lx + s) as isize;
                let columns_inside = a >= 0 && a as usize + FAST_X * chunks <= img.width;
                if active && columns_inside {
                    let rows = Strip {
                        // SAFETY: column a lies inside the image.
                        base: unsafe { img.p.add(a as usize) },
                        pitch: img.pitch,
                        y0: y as i32 - ly as i32,
                        height: img.height as i32,
                        mode: img.mode,
                    };
                    // SAFETY: (x, y) lies inside the image.
                    let out = unsafe { output.add(y * img.pitch + x) };
                    let (rows_out, columns_out) = (img.height - y, img.width - x);
                    // SAFETY: the window's columns lie inside the image; the
                    // output strip is clipped to it; Vector only when rows
                    // are 16-byte aligned.
                    unsafe {
                        if aligned {
                            let full = columns_out >= FAST_X;
                            strip::<T, _, MW, MH>(Vector(rows), out, img.pitch, rows_out, columns_out, full)
                        } else {
                            strip::<T, _, MW, MH>(Scalar(rows), out, img.pitch, rows_out, columns_out, false)
                        }
                    }
                }
                // SAFETY: every lane of the warp runs the same tile loop
                // (blocks of whole warps, block-uniform loops).
                let mut edges = unsafe { ballot(FULL_MASK, active && !columns_inside) };
                while edges != 0 {
                    let l = edges.trailing_zeros();
                    edges &= edges - 1;
                    // SAFETY: as above; the loop is warp-uniform.
                    let (ex, ey) = unsafe { (shfl_idx(FULL_MASK, x as u32, l), shfl_idx(FULL_MASK, y as u32, l)) };
                    let mut o = lane as usize;
                    while o < FAST_X * STRIP_H {
                        let (xx, yy) = (ex as usize + o % FAST_X, ey as usize + o / FAST_X);
                        if xx < img.width && yy < img.height {
                            let (sx, sy) = (xx as isize - lx as isize, yy as isize - ly as isize);
                            let mut acc = T::ZERO;
                            for j in 0..MH {
                                for i in 0..MW {
                                    // SAFETY: fetch maps any position.
                                    let v = unsafe { img.fetch(sx + i as isize, sy + j as isize) };
                                    // SAFETY: tap j · MW + i < MW · MH.
                                    let m = unsafe { mask.at(j * MW + i) };
                                    acc = T::fma(v, m, acc);
                                }
                            }
                            // SAFETY: xx < width, yy < height.
                            unsafe { *output.add(yy * img.pitch + xx) = acc };
                        }
                        o += WARP_SIZE as usize;
                    }
                }
            }
        }
    }

    /// The fast 2D kernel: [`fast`] with [`LOAD_ROWS_FAST`].
    #[inline(always)]
    unsafe fn fast_tile<T: ConvElem, M: Taps<T>>(
        img: Image<T>,
        output: *mut T,
        mask: M,
        size: (usize, usize),
        left: (usize, usize),
    ) {
        // SAFETY: the caller's contract.
        unsafe { fast::<T, M, LOAD_ROWS_FAST>(img, output, mask, size, left) }
    }

    /// The separable row pass: the fast kernel with a `1 × mw` mask.
    #[inline(always)]
    unsafe fn rows<T: ConvElem, M: Taps<T>>(
        img: Image<T>,
        output: *mut T,
        mask: M,
        (mw, _): (usize, usize),
        (lx, _): (usize, usize),
    ) {
        // SAFETY: the caller's contract, with mh = 1 and left_y = 0.
        unsafe { fast::<T, M, LOAD_ROWS_FAST>(img, output, mask, (mw, 1), (lx, 0)) }
    }

    /// The separable column pass: the fast kernel with an `mh × 1` mask.
    #[inline(always)]
    unsafe fn cols<T: ConvElem, M: Taps<T>>(
        img: Image<T>,
        output: *mut T,
        mask: M,
        (_, mh): (usize, usize),
        (_, ly): (usize, usize),
    ) {
        // SAFETY: the caller's contract, with mw = 1 and left_x = 0.
        unsafe { fast::<T, M, LOAD_ROWS_COLS>(img, output, mask, (1, mh), (0, ly)) }
    }

    macro_rules! conv2d_kernel {
        ($name:ident, $t:ty, $algo:ident, $mask:expr) => {
            /// See the module documentation (`conv::conv2d`).
            ///
            /// # Safety
            /// `input` and `output` valid for `(height − 1) · pitch + width`
            /// elements (when both dimensions are non-zero), not
            /// overlapping; `pitch ≥ width`; `mask` valid for `mw · mh`
            /// elements (or `CONV_MASK` holding them, for the
            /// constant-memory kernels); `mw, mh ≥ 1`, `left_x < mw`,
            /// `left_y < mh`; dynamic shared memory as the module's layout
            /// functions give for the launch's block shape.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const $t,
                output: *mut $t,
                width: usize,
                height: usize,
                pitch: usize,
                mask: *const $t,
                mw: u32,
                mh: u32,
                left_x: u32,
                left_y: u32,
                mode: u32,
            ) {
                let img = Image { p: input, width, height, pitch, mode };
                let global = GlobalTaps(mask);
                // SAFETY: same contract.
                unsafe {
                    $algo::<$t, _>(
                        img,
                        output,
                        $mask(global),
                        (mw as usize, mh as usize),
                        (left_x as usize, left_y as usize),
                    )
                }
            }
        };
    }

    fn gm<T>(g: GlobalTaps<T>) -> GlobalTaps<T> {
        g
    }
    fn cm<T>(_: GlobalTaps<T>) -> ConstTaps {
        ConstTaps
    }

    macro_rules! strip_kernel {
        ($name:ident, $t:ty, $m:literal) => {
            /// The register form of the fast kernel for a centred
            /// `N × N` mask (see the module documentation): same
            /// parameters as the other 2D kernels; `mw`, `mh`, `left_x`,
            /// `left_y` and `mask` are ignored (the mask is `CONV_MASK`).
            ///
            /// # Safety
            /// As the other 2D kernels, and: `CONV_MASK` holds the
            /// `N · N` taps; blocks are whole warps; `width` and `height`
            /// below 2³¹; no dynamic shared memory needed.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const $t,
                output: *mut $t,
                width: usize,
                height: usize,
                pitch: usize,
                _mask: *const $t,
                _mw: u32,
                _mh: u32,
                _left_x: u32,
                _left_y: u32,
                mode: u32,
            ) {
                let img = Image { p: input, width, height, pitch, mode };
                // SAFETY: same contract.
                unsafe { slide::<$t, _, $m, $m>(img, output, ConstTaps) }
            }
        };
    }

    strip_kernel!(conv2d_strip3_f32, f32, 3);
    strip_kernel!(conv2d_strip5_f32, f32, 5);
    strip_kernel!(conv2d_strip7_f32, f32, 7);
    strip_kernel!(conv2d_strip3_f64, f64, 3);
    strip_kernel!(conv2d_strip5_f64, f64, 5);
    strip_kernel!(conv2d_strip7_f64, f64, 7);

    conv2d_kernel!(conv2d_basic_f32, f32, direct, gm);
    conv2d_kernel!(conv2d_const_f32, f32, direct, cm);
    conv2d_kernel!(conv2d_tiled_f32, f32, tiled, cm);
    conv2d_kernel!(conv2d_tiled_gm_f32, f32, tiled, gm);
    conv2d_kernel!(conv2d_fast_f32, f32, fast_tile, cm);
    conv2d_kernel!(conv2d_fast_gm_f32, f32, fast_tile, gm);
    conv2d_kernel!(conv2d_rows_f32, f32, rows, gm);
    conv2d_kernel!(conv2d_cols_f32, f32, cols, gm);
    conv2d_kernel!(conv2d_basic_f64, f64, direct, gm);
    conv2d_kernel!(conv2d_const_f64, f64, direct, cm);
    conv2d_kernel!(conv2d_tiled_f64, f64, tiled, cm);
    conv2d_kernel!(conv2d_tiled_gm_f64, f64, tiled, gm);
    conv2d_kernel!(conv2d_fast_f64, f64, fast_tile, cm);
    conv2d_kernel!(conv2d_fast_gm_f64, f64, fast_tile, gm);
    conv2d_kernel!(conv2d_rows_f64, f64, rows, gm);
    conv2d_kernel!(conv2d_cols_f64, f64, cols, gm);
}
