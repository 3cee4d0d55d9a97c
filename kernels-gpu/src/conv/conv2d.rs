//! 2D convolution kernels: the lesson's 2D forms and a faster one, plus
//! the two passes of a separable convolution.
//!
//! | kernel | mask read from | input read from |
//! | --- | --- | --- |
//! | `conv2d_basic_*` | global memory (pointer) | global memory, `mw · mh` loads per output |
//! | `conv2d_const_*` | constant memory (`CONV_MASK`, row-major `mh × mw`) | global memory, `mw · mh` loads per output |
//! | `conv2d_tiled_*` | constant memory | a shared tile of `(blockDim.y + mh − 1) × (blockDim.x + mw − 1)` cells (the block's outputs plus the halo, ghost cells per mode), one barrier, one output per thread |
//! | `conv2d_fast_*` | constant memory | a shared tile of [`FAST_Y`]` · blockDim.y` × [`FAST_X`]` · blockDim.x` outputs plus halo; each thread computes a [`FAST_Y`] × [`FAST_X`] block of outputs from registers, reading the tile four elements at a time |
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
    use super::{FAST_X, FAST_Y};
    use crate::conv::CONV_MASK;
    use crate::conv::boundary::map_index;
    use crate::conv::elem::ConvElem;
    use crate::dev::grid::GridStride;
    use crate::dev::index::{
        block_dim_x, block_dim_y, block_idx_x, block_idx_y, grid_dim_x, grid_dim_y, thread_idx_x, thread_idx_y,
    };
    use crate::dev::shared::{Shared, dynamic};
    use crate::dev::sync::sync_threads;

    /// Rows of global loads per thread the fast kernel keeps in flight
    /// before its shared stores (its `LR` parameter): more loads in flight
    /// against more registers. Chosen so each kernel stays at the same
    /// resident blocks per SM as with fewer (sm_90: 80 registers for
    /// `conv2d_fast_f32`, 3 blocks of 256 threads).
    const LOAD_ROWS_FAST: usize = 4;
    /// The column pass's `LR` (4 would cost it a resident block).
    const LOAD_ROWS_COLS: usize = 2;
    /// Columns of loads per row in flight (see [`LOAD_ROWS_FAST`]).
    const LOAD_COLS: usize = 1;

    /// Where a kernel reads its taps (row-major, `k = j · mw + i`).
    trait Taps<T>: Copy {
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
            match (map_index(x, self.width as isize, self.mode), map_index(y, self.height as isize, self.mode)) {
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
                        for i in 0..mw {
                            // SAFETY: i < mw, j < mh: inside window and mask.
                            acc = T::fma(unsafe { *row.add(i) }, unsafe { mask.at(j * mw + i) }, acc);
                        }
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
                    let mut acc = T::ZERO;
                    for j in 0..mh {
                        for i in 0..mw {
                            // SAFETY: (ty + j) · sw + tx + i < total; tap < mw · mh.
                            acc =
                                T::fma(unsafe { s.read((ty + j) * sw + tx + i) }, unsafe { mask.at(j * mw + i) }, acc);
                        }
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
                        let yy = map_index(oy + r as isize, img.height as isize, img.mode);
                        let mut c = tx;
                        while c < lw {
                            let v = match (yy, map_index(ox + c as isize, img.width as isize, img.mode)) {
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
