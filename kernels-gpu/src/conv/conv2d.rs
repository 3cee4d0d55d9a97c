//! 2D convolution kernels: the lesson's 2D forms and a faster one, plus
//! the two passes of a separable convolution.
//!
//! | kernel | mask read from | input read from |
//! | --- | --- | --- |
//! | `conv2d_basic_*` | global memory (pointer) | global memory, `mw · mh` loads per output |
//! | `conv2d_const_*` | its `taps` parameter (constant bank 0, row-major `mh × mw`) | global memory, `mw · mh` loads per output |
//! | `conv2d_tiled_*` | its `taps` parameter | a shared tile of `(blockDim.y + mh − 1) × (blockDim.x + mw − 1)` cells (the block's outputs plus the halo, ghost cells per mode), one barrier, one output per thread |
//! | `conv2d_fast_*` | its `taps` parameter | a shared tile of [`FAST_Y`]` · blockDim.y` × [`FAST_X`]` · blockDim.x` outputs plus halo; each thread computes a [`FAST_Y`] × [`FAST_X`] block of outputs from registers, reading the tile four elements at a time |
//! | `conv2d_strip3_*`, `conv2d_strip5_*`, `conv2d_strip7_*`, `conv2d_strip9_f32`, `conv2d_strip11_f32`, `conv2d_strip13_f32` | its `taps` parameter, as constant-bank or uniform-register operands | the fast kernel's register form for centred 3 × 3, 5 × 5 and 7 × 7 masks, and 9 × 9, 11 × 11 and 13 × 13 in `f32` ([`fast_in_registers`]): no shared tile and no block barrier; each thread computes a `FAST_X × strip_rows` strip (16 rows, 8 from 9 × 9) from its warp's ring of rows in shared memory (asynchronous copies), the mask fully unrolled: one input row at a time ([`STRIP_RING`]` − 1` rows in flight), or for `f32` from 7 × 7 [`STRIP_PASS`] output rows per pass ([`strip_blocked`]) |
//! | `conv2d_band9_f32` | its `taps` parameter, as uniform-register operands | `conv2d_strip9_f32` with each warp's strip a band of the image ([`strip_band_rows`], from the launch's grid): launched as one wave of blocks, each warp runs its setup and reads its halo rows once per band |
//! | `conv2d_rows_*` | global memory | as `conv2d_fast`, with a `1 × mw` mask (separable row pass) |
//! | `conv2d_cols_*` | global memory | as `conv2d_fast`, with an `mh × 1` mask (separable column pass): threads run along x, so every load is coalesced |
//! | `conv2d_sep_*` | global memory, copied to shared memory | the fused separable convolution: per [`SEP_TX`] × [`SEP_TY`] tile, the input tile with its halo in shared memory, the row pass into a shared intermediate, the column pass from it (no intermediate image); takes `mask_x` and `mask_y` in place of `mask` |
//!
//! The kernels whose names end in `_gm_f32` / `_gm_f64` are the tiled and
//! fast kernels with the mask in global memory instead, for masks with
//! more taps than the mask parameter holds.
//!
//! All take `(input, output, width, height, pitch, mask, mw, mh, left_x,
//! left_y, mode)`: a `width × height` image whose rows start `pitch`
//! elements apart (`pitch ≥ width`; element `(x, y)` at `y · pitch + x`),
//! in and out with the same layout; `mask` a global copy of the `mh × mw`
//! taps, row-major (read only by the global-memory kernels); `left_x`,
//! `left_y` the taps left of and above the centre; `mode` a
//! [`Boundary`](super::Boundary) raw value applied to each axis on its
//! own. The row pass reads only `mw` and `left_x` (its mask is `1 × mw`),
//! the column pass only `mh` and `left_y`. The constant-mask kernels take
//! one more, `taps`: the taps by value in the kernel's parameter space,
//! [`PARAM_MASK_BYTES`](super::PARAM_MASK_BYTES) bytes (the strip kernels
//! and the `_short` forms, [`SHORT_MASK_KERNELS`](super::SHORT_MASK_KERNELS):
//! [`FIXED_MASK_TAPS`](super::FIXED_MASK_TAPS) elements), zeros after the
//! last tap. Elements between `width` and
//! `pitch` are never read or written. Blocks walk tiles grid-stride in
//! both dimensions, so any grid covers any image.

use crate::conv::boundary::{axis_maps32, map_index32};

/// Outputs per thread along x in the fast kernel (one 4-wide register
/// chunk).
pub const FAST_X: usize = 4;

/// Outputs per thread along y in the fast kernel.
pub const FAST_Y: usize = 4;

/// Output rows per thread of the fast kernel's register form (see
/// [`fast_in_registers`]) for every mask but 9 × 9 ([`strip_rows`]):
/// each thread computes a `FAST_X × STRIP_H` strip, a block a
/// `FAST_X · bx × STRIP_H · by` tile.
pub const STRIP_H: usize = 16;

/// The largest mask side the register form handles (9, 11 and 13 only
/// for `f32`: see [`fast_in_registers`]).
pub const STRIP_MAX_MASK: usize = 13;

/// The largest mask side of the register form's sliding loop (the masks
/// outside its blocked loop, [`strip_blocked`]).
pub const STRIP_SLIDING_MAX: usize = 7;

/// The most 4-wide chunks a row of the register form's window spans.
pub const STRIP_CHUNKS: usize = 5;

/// Input rows in each warp's ring of the register form: the row being
/// computed and the `STRIP_RING − 1` after it, whose copies are in flight
/// meanwhile (a power of two).
pub const STRIP_RING: usize = 8;

/// Output rows per pass of the register form's blocked loop
/// ([`strip_blocked`]): each pass computes this many rows of a lane's
/// strip, every accumulator and tap index a compile-time constant.
pub const STRIP_PASS: usize = 4;

/// Rows of threads (warps) per block of the register form for a centred
/// mask of `mh` rows of `elem`-byte elements: 4 for the blocked loop of
/// 9 × 9 and wider ([`strip_blocked`]; for 9 × 9 five blocks of 32 × 4
/// per SM, their launch bounds, so that its 96 registers allow 20 warps
/// per SM where blocks of 32 × 8 fit two, 16 warps: 0.289 against 0.300
/// ms on the H100; for 11 × 11 and 13 × 13 four, their rings' shared
/// memory), 8 for every other mask (7 × 7 runs 1–2% faster in blocks of
/// 32 × 8).
pub const fn strip_block_warps(mh: usize, elem: usize) -> usize {
    if strip_blocked(mh, elem) && mh >= 9 { 4 } else { 8 }
}

/// Output rows per lane of the register form for a centred mask of `mh`
/// rows of `elem`-byte elements: 8 for the blocked loop from 9 × 9
/// ([`strip_blocked`]), [`STRIP_H`] for every other mask. Measured on the
/// H100 at 8192² in two calls: 9 × 9 0.2840–0.2858 ms with 8 rows against
/// 0.2873–0.2945 ms with 16, though each strip then reads as many halo
/// rows (from L2) as it has outputs; 7 × 7 and 5 × 5 were 1–2% slower
/// with 8 rows, and every mask slower with 12 or 32.
pub const fn strip_rows(mh: usize, elem: usize) -> usize {
    if strip_blocked(mh, elem) && mh >= 9 { STRIP_H / 2 } else { STRIP_H }
}

/// Output rows per lane of the band kernel (`conv2d_band9_f32`, the
/// blocked loop of [`strip_blocked`] with one band of the image per warp)
/// when its launch puts `slots` rows of threads (grid rows × block rows)
/// over an image of `height` rows: the height, in whole passes of
/// [`STRIP_PASS`] rows, at which those rows of threads cover the image,
/// and at least [`strip_rows`]. The kernel computes it from its grid, so
/// the host sets the bands' height through the grid: one wave of blocks,
/// each warp's setup and halo rows once per band rather than once per
/// strip of 8 rows.
pub const fn strip_band_rows(mh: usize, elem: usize, height: usize, slots: usize) -> usize {
    let rows = strip_rows(mh, elem);
    if slots == 0 {
        return rows;
    }
    let band = height.div_ceil(slots).next_multiple_of(STRIP_PASS);
    if band > rows { band } else { rows }
}

/// Passes ahead whose rows are in flight in the blocked loop
/// ([`strip_blocked`]): while a pass computes, the copies of the new rows
/// of the next `STRIP_PASS_AHEAD` passes are in flight.
pub const STRIP_PASS_AHEAD: usize = 1;

/// Input rows in each warp's ring in the blocked loop
/// ([`strip_blocked`]) for a mask of `mh` rows: the `STRIP_PASS + mh − 1`
/// rows a pass reads and the `STRIP_PASS_AHEAD · STRIP_PASS` rows in
/// flight, rounded up to whole groups of [`STRIP_PASS`] slots: 16 rows for
/// 7 and 9, 20 for 11 and 13.
pub const fn strip_pass_ring(mh: usize) -> usize {
    (STRIP_PASS + mh - 1 + STRIP_PASS_AHEAD * STRIP_PASS).next_multiple_of(STRIP_PASS)
}

/// True when the register form runs its blocked loop for a centred mask
/// of `mh` rows of `elem`-byte elements: `f32` masks of 7 rows and more.
/// The loop computes [`STRIP_PASS`] output rows per pass from the
/// `STRIP_PASS + mh − 1` input rows they read, every index a compile-time
/// constant (no accumulator moves, no unrolling `mh` rows deep); the
/// smaller masks rotate their accumulators by name, `f64` masks of 7 rows
/// shift them.
pub const fn strip_blocked(mh: usize, elem: usize) -> bool {
    elem == 4 && mh >= 7
}

/// Rows in each warp's ring of the register form for a mask of `mh` rows
/// of `elem`-byte elements: [`strip_pass_ring`] in the blocked loop
/// ([`strip_blocked`]), else [`STRIP_RING`].
pub const fn strip_ring(mh: usize, elem: usize) -> usize {
    if strip_blocked(mh, elem) { strip_pass_ring(mh) } else { STRIP_RING }
}

/// The 4-wide chunks the register form's window reaches past either edge
/// of a warp's 128 columns for a centred mask of width `mw`: `⌈(mw /
/// 2) / 4⌉`, one up to 9 × 9, two for 11 × 11 and 13 × 13.
pub const fn strip_ext(mw: usize) -> usize {
    (mw / 2).div_ceil(FAST_X)
}

/// Elements of one ring row of the register form for a centred mask of
/// width `mw`: the 32 lanes' 4-wide chunks and [`strip_ext`] chunks
/// either side (136 elements up to 9 × 9, 144 for 11 × 11 and 13 × 13).
pub const fn strip_row(mw: usize) -> usize {
    FAST_X * (32 + 2 * strip_ext(mw))
}

/// Shared-memory elements of the register form for a `bx × by` block
/// (`bx` a multiple of 32): a ring of `ring` rows ([`strip_ring`]) of
/// `row` elements ([`strip_row`]) per warp.
pub const fn strip_shared_elems(bx: usize, by: usize, ring: usize, row: usize) -> usize {
    (bx * by).div_ceil(32) * ring * row
}

/// Chunks per window row of the register form for a centred mask of
/// width `mw`: from the aligned column `a` (the window's start rounded
/// down to a multiple of 4) through the last column an output reads.
pub const fn strip_chunks(mw: usize) -> usize {
    let s = (mw / 2).wrapping_neg() & (FAST_X - 1);
    (s + mw - 1).div_ceil(FAST_X) + 1
}

/// [`strip_ring_fix`]: lane `l` writes the ghost cell of column `l − 4E`
/// (ring element `l`) from the element in bits 0–7.
pub const RING_FIX_LEFT: u32 = 1 << 24;

/// [`strip_ring_fix`]: lane `l` writes the ghost cell of column `width + l`
/// (ring element in bits 8–15) from the element in bits 16–23.
pub const RING_FIX_RIGHT: u32 = 1 << 25;

/// [`strip_ring_fix`]'s answer when a ghost cell's value is not in the
/// warp's ring (wrap mode, or an axis of 2³⁰ columns or more): the warp's
/// edge lanes then take the per-element path.
pub const RING_FIX_NONE: u32 = u32::MAX;

/// The ghost cells lane `lane` of a register-form warp writes into each
/// row of its ring under boundary mode `mode`, for a centred mask whose
/// rows reach [`strip_ext`]` = ext` chunks past the warp's 128 columns,
/// the warp's first column `x0` (a multiple of 128) and an image `width`
/// columns wide (a multiple of 4).
///
/// Ring element `e` holds column `x0 − 4·ext + e` for each `e` below
/// `4·(32 + 2·ext)`; the copies fill the chunks outside the image with
/// zeros. An edge lane's outputs need columns `−4·ext … −1` and `width …
/// width + 4·ext − 1` as the mode gives them. Under nearest, reflect and
/// mirror those take the values of columns within `4·ext + 1` of the same
/// edge (or anywhere in a narrower image), which the warp's ring holds
/// (the test below checks every width up to 700). Lane `l < 4·ext` writes
/// column `l − 4·ext` when the warp starts at column 0
/// ([`RING_FIX_LEFT`]) and column `width + l` when the ring reaches it
/// ([`RING_FIX_RIGHT`]), each from the ring element of the column it
/// maps to. In zero mode the zeros are the ghost cells (0: nothing to
/// write); [`RING_FIX_NONE`] when a value lies outside the ring.
pub fn strip_ring_fix(x0: u32, width: u32, lane: u32, ext: u32, mode: u32) -> u32 {
    let quad = FAST_X as u32;
    if lane >= quad * ext || map_index32(-1, 1, mode).is_none() {
        return 0;
    }
    if !axis_maps32(width as usize) || x0 >= width {
        return RING_FIX_NONE;
    }
    let span = (quad * (32 + 2 * ext)) as i32;
    let origin = x0 as i32 - (quad * ext) as i32;
    // The ring element of the column that column c takes its value from.
    let source = |c: i32| {
        let e = map_index32(c, width as i32, mode)? as i32 - origin;
        (0..span).contains(&e).then_some(e as u32)
    };
    let mut fix = 0;
    if x0 == 0 {
        match source(lane as i32 - (quad * ext) as i32) {
            Some(e) => fix |= RING_FIX_LEFT | e,
            None => return RING_FIX_NONE,
        }
    }
    let dst = (width + lane) as i32 - origin;
    if dst < span {
        match source((width + lane) as i32) {
            Some(e) => fix |= RING_FIX_RIGHT | (dst as u32) << 8 | e << 16,
            None => return RING_FIX_NONE,
        }
    }
    fix
}

/// True when `conv2d_fast` runs its register form for an `mw × mh` mask
/// of `elem`-byte elements with `left` taps left of and above the centre:
/// the centred 3 × 3, 5 × 5 and 7 × 7 masks, and 9 × 9, 11 × 11 and
/// 13 × 13 for `f32` (`left = size / 2`, as every odd correlation or
/// convolution). Each
/// thread then computes a `FAST_X × strip_rows` strip from registers, its
/// input rows streamed through a ring per warp ([`strip_shared_elems`]);
/// any other mask takes the shared-tile form.
pub const fn fast_in_registers((mw, mh): (usize, usize), (lx, ly): (usize, usize), elem: usize) -> bool {
    mw == mh
        && (mw == 3 || mw == 5 || mw == 7 || ((mw == 9 || mw == 11 || mw == 13) && elem == 4))
        && lx == mw / 2
        && ly == mh / 2
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

/// Output columns per tile of the fused separable kernel
/// (`conv2d_sep_*`).
pub const SEP_TX: usize = 64;

/// Output rows per tile of the fused separable kernel.
pub const SEP_TY: usize = 64;

/// Threads per block of the fused separable kernel.
pub const SEP_THREADS: usize = 256;

/// A mask's taps rounded up to whole 4-wide chunks (the fused kernel's
/// register windows read 4 taps' worth of inputs at a time).
pub const fn sep_chunked(taps: usize) -> usize {
    FAST_X * taps.div_ceil(FAST_X)
}

/// Elements per row of the fused kernel's input tile for an `mw`-tap row
/// mask: the tile's columns plus the halo, in whole chunks.
pub const fn sep_in_pitch(mw: usize) -> usize {
    SEP_TX + sep_chunked(mw)
}

/// Rows of the fused kernel's input tile and intermediate for an `mh`-tap
/// column mask: the tile's rows plus the halo, in whole chunks.
pub const fn sep_rows(mh: usize) -> usize {
    SEP_TY + sep_chunked(mh)
}

/// Shared-memory elements of the fused separable kernel: both masks, the
/// input tile with its halo (`sep_rows × sep_in_pitch`) and the
/// intermediate (`sep_rows × SEP_TX`, the row pass's results, rounded to
/// the element type as the two-pass form's intermediate image is).
pub const fn sep_shared_elems(mw: usize, mh: usize) -> usize {
    sep_chunked(mw) + sep_chunked(mh) + sep_rows(mh) * (sep_in_pitch(mw) + SEP_TX)
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{
        FAST_X, FAST_Y, RING_FIX_LEFT, RING_FIX_NONE, RING_FIX_RIGHT, SEP_THREADS, SEP_TX, SEP_TY, STRIP_CHUNKS,
        STRIP_MAX_MASK, STRIP_PASS, STRIP_PASS_AHEAD, STRIP_RING, STRIP_SLIDING_MAX, sep_chunked, sep_in_pitch,
        sep_rows, strip_band_rows, strip_blocked, strip_chunks, strip_ext, strip_pass_ring, strip_ring, strip_ring_fix,
        strip_row, strip_rows,
    };
    use crate::conv::boundary::{map_index_edge, map_index32};
    use crate::conv::elem::{ConvElem, dot, mask_tap, opaque, unroll};
    use crate::conv::{FIXED_MASK_TAPS, PARAM_MASK_BYTES};
    use crate::dev::grid::GridStride;
    use crate::dev::index::{
        block_dim_x, block_dim_y, block_idx_x, block_idx_y, grid_dim_x, grid_dim_y, thread_idx_x, thread_idx_y,
    };
    use crate::dev::param::{ParamBytes, ParamSymbol};
    use crate::dev::pipeline;
    use crate::dev::shared::{Shared, dynamic};
    use crate::dev::sync::sync_threads;
    use crate::dev::warp::{FULL_MASK, WARP_SIZE, ballot, lane_id, shfl_idx, sync_warp};
    use core::marker::PhantomData;

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
        /// True for the taps in the kernel's parameter space.
        const CONSTANT: bool;

        /// Tap `k`.
        ///
        /// # Safety
        /// `k` is below the mask's `mw · mh` taps.
        unsafe fn at(self, k: usize) -> T;

        /// The `.param` address of the taps (0 for global taps).
        fn base(self) -> u64;
    }

    /// Taps in the kernel's `taps` parameter `S` (see
    /// [`crate::dev::param`]).
    #[derive(Clone, Copy)]
    struct ParamTaps<S>(PhantomData<S>);

    impl<T: ConvElem, S: ParamSymbol> Taps<T> for ParamTaps<S> {
        const CONSTANT: bool = true;

        #[inline(always)]
        unsafe fn at(self, k: usize) -> T {
            // SAFETY: the host passes the mw · mh taps in the parameter.
            unsafe { T::ld_param(S::base() + (k * core::mem::size_of::<T>()) as u64) }
        }

        #[inline(always)]
        fn base(self) -> u64 {
            S::base()
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

        #[inline(always)]
        fn base(self) -> u64 {
            0
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

    /// How one lane copies its part of each window row into its warp's
    /// ring of rows of `row` elements ([`strip_row`]), `E` chunks either
    /// side of the warp's 32 ([`strip_ext`]): ring chunk `lane + E` (its
    /// own columns `x … x + 3`), and for lanes `l < E` chunk `l` (before
    /// the warp's columns), for lanes `E ≤ l < 2E` chunk `WARP_SIZE + l`
    /// (after them). Addresses are those of image row 0 and ring slot 0;
    /// the extra chunk lies `extra_step` chunks from the own one, in the
    /// ring and in the image; `*_ok` is false for a chunk not wholly inside
    /// the image's columns (written as zeros).
    #[derive(Clone, Copy)]
    struct RowCopy<T> {
        row: usize,
        own_dst: u32,
        own_src: *const T,
        own_ok: bool,
        extra: bool,
        extra_step: i32,
        extra_ok: bool,
    }

    /// The register kernel's rows: the pitch, the height in 32 bits (below
    /// 2³⁰, as the host checks, so the loop carries fewer registers) and
    /// the boundary mode.
    #[derive(Clone, Copy)]
    struct Rows {
        pitch: usize,
        height: i32,
        mode: u32,
    }

    impl Rows {
        /// Image row `y` through the mode's map: its element offset, or
        /// `None` for a row of zeros.
        #[inline(always)]
        fn offset(self, y: i32) -> Option<usize> {
            let j = map_index32(y, self.height, self.mode)?;
            Some(j as usize * self.pitch)
        }
    }

    impl<T: ConvElem> RowCopy<T> {
        /// Starts copying image row `y` (through the mode's map) into ring
        /// slot `slot`.
        ///
        /// # Safety
        /// The ring addresses lie in this warp's ring; a chunk marked ok
        /// lies inside the image's columns (and is 16-byte aligned when
        /// `VEC`: 16-byte copies, else one element at a time).
        #[inline(always)]
        unsafe fn issue<const VEC: bool>(self, rows: Rows, y: i32, slot: usize) {
            let row = rows.offset(y);
            // SAFETY: the caller's contract; the row's offset when it maps
            // into the image.
            unsafe { self.issue_at::<VEC>(row.unwrap_or(0), row.is_some(), slot) };
        }

        /// Starts copying the image row at element offset `off` into ring
        /// slot `slot` (zeros when `valid` is false): [`RowCopy::issue`]
        /// for a row already mapped.
        ///
        /// # Safety
        /// As [`RowCopy::issue`]; when `valid`, `off` is the offset of a
        /// row inside the image.
        #[inline(always)]
        unsafe fn issue_at<const VEC: bool>(self, off: usize, valid: bool, slot: usize) {
            let bytes = (slot * self.row * core::mem::size_of::<T>()) as u32;
            // SAFETY: the caller's contract; a source is read only when its
            // row is inside the image and its chunk is inside.
            unsafe {
                T::copy4_async(self.own_dst + bytes, self.own_src.wrapping_add(off), valid && self.own_ok, VEC);
                if self.extra {
                    let step = self.extra_step * FAST_X as i32;
                    T::copy4_async(
                        (self.own_dst + bytes).wrapping_add_signed(step * core::mem::size_of::<T>() as i32),
                        self.own_src.wrapping_add(off).wrapping_offset(step as isize),
                        valid && self.extra_ok,
                        VEC,
                    );
                }
            }
        }
    }

    /// True when the register kernel runs `MH` rows per pass with the
    /// accumulators rotating by name: masks of up to 5 rows of `f32` or 3
    /// of `f64` (up to 24 bytes of accumulator per column), whose unrolled
    /// pass fits the register budget of 2 blocks per SM; taller masks run
    /// one row per pass and shift the accumulators.
    const fn strip_unrolled<T>(mh: usize) -> bool {
        mh * core::mem::size_of::<T>() <= 24
    }

    /// One strip of the register kernel, what [`strip`] and each of its
    /// row steps need besides the accumulators: the `.param` address of the
    /// taps, how this lane copies its
    /// rows, the rows' map, the ring address of the lane's chunk 0 in
    /// slot 0 (`read`), the window's first image row, the strip's first
    /// output (stored through only when `store`) and its rows inside the
    /// image, and the lane's ghost cells ([`strip_ring_fix`]; 0 in every
    /// lane of a warp with none).
    #[derive(Clone, Copy)]
    struct StripStep<T> {
        taps: u64,
        copy: RowCopy<T>,
        rows: Rows,
        read: Shared<T>,
        y0: i32,
        out: *mut T,
        rows_out: u32,
        store: bool,
        fix: u32,
        /// The strip's output rows per lane in the band kernel
        /// ([`strip_band_rows`]); the strip kernels take [`strip_rows`].
        out_rows: u32,
    }

    impl<T: ConvElem> StripStep<T> {
        /// Input row `ir` of a strip: waits for its copy, starts the copy
        /// of row `ir + STRIP_RING − 1`, adds mask row `j` to accumulator
        /// `acc_of(j)` for every tap, then stores accumulator `done` as
        /// output row `ir + 1 − MH` when that row is complete and inside
        /// the image. `acc_of` and `done` are compile-time constants after
        /// inlining.
        ///
        /// # Safety
        /// As [`strip`].
        #[inline(always)]
        unsafe fn run<const MW: usize, const MH: usize, const VEC: bool>(
            self,
            acc: &mut [[T; FAST_X]; STRIP_SLIDING_MAX],
            ir: usize,
            acc_of: impl Fn(usize) -> usize,
            done: usize,
        ) {
            let s = (MW / 2).wrapping_neg() & (FAST_X - 1);
            let chunks = strip_chunks(MW);
            let steps = strip_rows(MH, core::mem::size_of::<T>()) + MH - 1;
            // Row ir has landed (this lane's copies), and after the barrier
            // every lane's; every lane has also finished reading slot
            // (ir − 1) mod STRIP_RING, which the next copy refills.
            pipeline::wait_group::<{ STRIP_RING as u32 - 2 }>();
            // SAFETY: all lanes run the same loop.
            unsafe { sync_warp() };
            let next = ir + STRIP_RING - 1;
            if next < steps {
                // SAFETY: the caller's contract.
                unsafe { self.copy.issue::<VEC>(self.rows, self.y0 + next as i32, next % STRIP_RING) };
            }
            pipeline::commit_group();
            // SAFETY: slot ir mod STRIP_RING of the ring.
            let cur = unsafe { Self::read_row(self.read, (ir % STRIP_RING) * self.copy.row, chunks) };
            // Mask row J adds to output row ir − J.
            unroll!(const J in [0, 1, 2, 3, 4, 5, 6] below MH => {
                unroll!(const I in [0, 1, 2, 3, 4, 5, 6] below MW => {
                    let m: T = mask_tap!(T, self.taps, J * MW + I);
                    unroll!(q in [0, 1, 2, 3] below FAST_X => {
                        let e = s + I + q;
                        let a = &mut acc[acc_of(J)];
                        a[q] = T::fma(cur[e / FAST_X][e % FAST_X], m, a[q]);
                    });
                });
            });
            if self.store && ir + 1 >= MH && ((ir + 1 - MH) as u32) < self.rows_out {
                // SAFETY: output row ir + 1 − MH of the strip lies inside the
                // image, and all four of the lane's columns do; vector
                // stores only when aligned.
                unsafe { Self::store_row::<VEC>(self.out.add((ir + 1 - MH) * self.rows.pitch), acc[done]) };
            }
        }
    }

    impl<T: ConvElem> StripStep<T> {
        /// The warp's ring at chunk 0 of slot 0 and this lane's
        /// [`strip_ring_fix`] word, or `None` (in every lane) when no lane
        /// of the warp has a ghost cell to write.
        ///
        /// # Safety
        /// All 32 lanes call it together.
        #[inline(always)]
        unsafe fn ghost_ring(self) -> Option<(Shared<T>, usize)> {
            // SAFETY: all lanes are here.
            if unsafe { ballot(FULL_MASK, self.fix != 0) } == 0 {
                return None;
            }
            let lane = lane_id() as usize;
            // SAFETY: chunk 0 of slot 0 of the warp's ring (read is the
            // lane's chunk `lane` of it).
            let ring_at = unsafe {
                Shared::<T>::from_addr(self.read.addr_of(0) - (FAST_X * lane * core::mem::size_of::<T>()) as u32)
            };
            Some((ring_at, self.fix as usize))
        }

        /// Writes the warp's ghost cells ([`strip_ring_fix`]) into the ring
        /// slots of input rows `lo … hi − 1` (slot `row mod ring`), a row
        /// at a time, then waits for every lane; nothing in a warp without
        /// ghost cells. The strip kernels' form ([`StripStep::fix_rows_gathered`]
        /// is the band kernel's).
        ///
        /// # Safety
        /// All 32 lanes call it together; those rows have landed in every
        /// lane's copies (after the barrier that follows their wait), and
        /// no lane reads them before this returns.
        #[inline(always)]
        unsafe fn fix_rows(self, lo: usize, hi: usize, ring: usize) {
            // SAFETY: all lanes are here.
            let Some((ring_at, f)) = (unsafe { self.ghost_ring() }) else {
                return;
            };
            let lane = lane_id() as usize;
            let mut r = lo;
            while r < hi {
                let slot = (r % ring) * self.copy.row;
                // SAFETY: the elements strip_ring_fix names lie in the
                // slot's 4 · (32 + 2E) elements; the sources are columns
                // inside the image (copied), the targets ghost columns no
                // lane reads before the barrier below.
                unsafe {
                    if self.fix & RING_FIX_LEFT != 0 {
                        ring_at.write(slot + lane, ring_at.read(slot + (f & 0xff)));
                    }
                    if self.fix & RING_FIX_RIGHT != 0 {
                        ring_at.write(slot + ((f >> 8) & 0xff), ring_at.read(slot + ((f >> 16) & 0xff)));
                    }
                }
                r += 1;
            }
            // SAFETY: all lanes are here.
            unsafe { sync_warp() };
        }

        /// [`StripStep::fix_rows`] for rows `lo … lo + n − 1` (`n ≤ 16`, a
        /// constant after inlining) with every source read before any ghost
        /// cell is written, so that the reads' latencies overlap: the band
        /// kernel's form. Row by row, each write waiting for its read, the
        /// edge warps, which in one wave set the time, ran reflect mode at
        /// 75.6% of the floor against 78.5–79.2% this way (H100, 8192²,
        /// `results/h100/band9/run-3/`); in the strip kernels this form
        /// made 11 × 11 2% slower in every mode, zero mode included, so
        /// they keep the other.
        ///
        /// # Safety
        /// As [`StripStep::fix_rows`].
        #[inline(always)]
        unsafe fn fix_rows_gathered(self, lo: usize, n: usize, ring: usize) {
            // SAFETY: all lanes are here.
            let Some((ring_at, f)) = (unsafe { self.ghost_ring() }) else {
                return;
            };
            let lane = lane_id() as usize;
            let (left, right) = (self.fix & RING_FIX_LEFT != 0, self.fix & RING_FIX_RIGHT != 0);
            let slot = |k: usize| ((lo + k) % ring) * self.copy.row;
            let mut got = [[T::ZERO; 2]; 16];
            // SAFETY: the elements strip_ring_fix names lie in the slot's
            // 4 · (32 + 2E) elements; the sources are columns inside the
            // image (copied), the targets ghost columns, which no lane reads
            // as a source, nor before the barrier below.
            unsafe {
                unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below n => {
                    if left {
                        got[k][0] = ring_at.read(slot(k) + (f & 0xff));
                    }
                    if right {
                        got[k][1] = ring_at.read(slot(k) + ((f >> 16) & 0xff));
                    }
                });
                unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below n => {
                    if left {
                        ring_at.write(slot(k) + lane, got[k][0]);
                    }
                    if right {
                        ring_at.write(slot(k) + ((f >> 8) & 0xff), got[k][1]);
                    }
                });
            }
            // SAFETY: all lanes are here.
            unsafe { sync_warp() };
        }

        /// The `chunks` 4-wide chunks of this lane's window in the ring row
        /// at element `slot` of `read` (the lane's chunk 0 of a slot).
        ///
        /// # Safety
        /// `slot` is the start of a ring slot; chunk lane + `chunks` − 1
        /// lies inside it (16-byte aligned: the ring is, and rows and chunks
        /// are multiples of 16 bytes).
        #[inline(always)]
        unsafe fn read_row(read: Shared<T>, slot: usize, chunks: usize) -> [[T; FAST_X]; STRIP_CHUNKS] {
            let mut cur = [[T::ZERO; FAST_X]; STRIP_CHUNKS];
            unroll!(c in [0, 1, 2, 3, 4] below chunks => {
                // SAFETY: the caller's contract.
                cur[c] = unsafe { T::read4(read, slot + FAST_X * c) };
            });
            cur
        }

        /// Stores a lane's four outputs of one row at `o`: one 16-byte store
        /// when `VEC`, else element by element.
        ///
        /// # Safety
        /// `o` is valid for four elements (16-byte aligned when `VEC`).
        #[inline(always)]
        unsafe fn store_row<const VEC: bool>(o: *mut T, v: [T; FAST_X]) {
            // SAFETY: the caller's contract.
            unsafe {
                if VEC {
                    T::store4(o, v);
                } else {
                    for (q, &x) in v.iter().enumerate() {
                        *o.add(q) = x;
                    }
                }
            }
        }

        /// One pass of the blocked loop ([`strip_blocked`]): output rows
        /// `p … p + STRIP_PASS − 1` of the strip from input rows `p … p +
        /// STRIP_PASS + MH − 2` (ring slot `row mod strip_pass_ring(MH)`).
        /// Waits for this pass's rows, starts the copies of the next pass's
        /// `STRIP_PASS` new rows into the slots the previous pass freed,
        /// adds each input row `i` to every output row `r` it reaches (mask
        /// row `i − r`), then stores the rows inside the image. Every
        /// accumulator and tap index is a compile-time constant; the rows
        /// are read in groups of `STRIP_PASS` consecutive slots (one ring
        /// address per group, immediate offsets inside it). `interior`:
        /// every row of the strip's window lies inside the image (the
        /// copies take the row's offset directly, not through the mode's
        /// map). `BAND` (the band kernel): the strip is `self.out_rows`
        /// rows, and each pass checks on its own whether its new rows lie
        /// inside the image (`interior` is not read).
        ///
        /// # Safety
        /// As [`strip`]; rows `p … p + STRIP_PASS + MH − 2` have been
        /// copied (the last group committed), `p` a multiple of
        /// `STRIP_PASS`; `interior` only when rows `y0 … y0 + strip_rows + MH
        /// − 2` lie inside the image.
        #[inline(always)]
        unsafe fn pass<const MW: usize, const MH: usize, const VEC: bool, const BAND: bool>(
            self,
            p: usize,
            interior: bool,
        ) {
            const R: usize = STRIP_PASS;
            let ring = strip_pass_ring(MH);
            // The ring holds a pass's rows and the rows in flight; the
            // unrolled lists below cover 4 rows per pass, 16 input rows and
            // 13 columns.
            const { assert!(strip_pass_ring(MH).is_multiple_of(R) && STRIP_PASS_AHEAD >= 1) };
            const {
                assert!(
                    R == 4
                        && R + MH - 1 <= 16
                        && MW <= 13
                        && strip_rows(MH, core::mem::size_of::<T>()).is_multiple_of(R)
                )
            };
            let s = (MW / 2).wrapping_neg() & (FAST_X - 1);
            let chunks = strip_chunks(MW);
            let out_rows = if BAND { self.out_rows as usize } else { strip_rows(MH, core::mem::size_of::<T>()) };
            let steps = out_rows + MH - 1;
            // This pass's rows have landed (this lane's copies, and after
            // the barrier every lane's: all groups but the newest
            // STRIP_PASS_AHEAD − 1); every lane has also finished the
            // previous pass, whose first R rows' slots the next copies fill.
            pipeline::wait_group::<{ STRIP_PASS_AHEAD as u32 - 1 }>();
            // SAFETY: all lanes run the same loop.
            unsafe { sync_warp() };
            // SAFETY: this pass's rows have landed; the first pass's all
            // R + MH − 1, later passes' the last R (the others were fixed
            // by the pass before).
            unsafe {
                match (BAND, p) {
                    (true, 0) => self.fix_rows_gathered(0, R + MH - 1, ring),
                    (true, _) => self.fix_rows_gathered(p + MH - 1, R, ring),
                    (false, _) => self.fix_rows(if p == 0 { 0 } else { p + MH - 1 }, p + R + MH - 1, ring),
                }
            }
            let first = (p + MH - 1 + STRIP_PASS_AHEAD * R) as u32;
            // In a band, the new rows lie inside the image (the axes are
            // below 2³⁰, so the sums fit an i32).
            let interior = if BAND {
                self.y0 + first as i32 >= 0 && self.y0 + (first + R as u32) as i32 <= self.rows.height
            } else {
                interior
            };
            if interior {
                // Row y0 + first + k at its own offset: inside the image.
                let mut off = (self.y0 as u32 + first) as usize * self.rows.pitch;
                unroll!(k in [0, 1, 2, 3] below R => {
                    if k > 0 {
                        off += self.rows.pitch;
                    }
                    if first + (k as u32) < steps as u32 {
                        // SAFETY: the caller's contract (or in a band the
                        // check above): the row is inside.
                        unsafe { self.copy.issue_at::<VEC>(off, true, (first as usize + k) % ring) };
                    }
                });
            } else {
                unroll!(k in [0, 1, 2, 3] below R => {
                    let r = first as usize + k;
                    if r < steps {
                        // SAFETY: the caller's contract.
                        unsafe { self.copy.issue::<VEC>(self.rows, self.y0 + r as i32, r % ring) };
                    }
                });
            }
            pipeline::commit_group();
            let mut acc = [[T::ZERO; FAST_X]; R];
            let quad = p / R;
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below R + MH - 1 => {
                // Row p + I: slot (p + I) mod ring, in the group of R slots
                // that starts at slot R · ((p / R + I / R) mod (ring / R)).
                let group = ((quad + I / R) % (ring / R)) * R * self.copy.row;
                // SAFETY: the group's first slot, inside the warp's ring.
                let group = unsafe { Shared::<T>::from_addr(self.read.addr_of(group)) };
                // SAFETY: slot I mod R of the group, inside the ring.
                let cur = unsafe { Self::read_row(group, (I % R) * self.copy.row, chunks) };
                // Input row I adds mask row I − RR to output row RR.
                unroll!(const RR in [0, 1, 2, 3] below R => {
                    // (I − RR wraps past MH when RR > I.)
                    if I.wrapping_sub(RR) < MH {
                        unroll!(const X in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] below MW => {
                            let m: T = mask_tap!(T, self.taps, I.saturating_sub(RR) * MW + X);
                            unroll!(q in [0, 1, 2, 3] below FAST_X => {
                                let e = s + X + q;
                                acc[RR][q] = T::fma(cur[e / FAST_X][e % FAST_X], m, acc[RR][q]);
                            });
                        });
                    }
                });
            });
            if self.store {
                unroll!(r in [0, 1, 2, 3] below R => {
                    if ((p + r) as u32) < self.rows_out {
                        // SAFETY: output row p + r of the strip lies inside
                        // the image, and all four of the lane's columns do;
                        // vector stores only when aligned.
                        unsafe { Self::store_row::<VEC>(self.out.add((p + r) * self.rows.pitch), acc[r]) };
                    }
                });
            }
        }
    }

    /// One strip of the register kernel: `FAST_X` columns × [`strip_rows`]
    /// rows of outputs per lane for a centred `MW × MH` mask, by a sliding
    /// window of rows. The warp walks the strip's `strip_rows + MH − 1` input
    /// rows once, top to bottom, through its ring of [`STRIP_RING`] rows in
    /// shared memory: the copies of the next `STRIP_RING − 1` rows are in
    /// flight (asynchronous, holding no registers) while it computes the
    /// current one. Each input row `ir` adds its mask row `j` to output row
    /// `ir − j`, for every tap ([`StripStep::run`]); the `MH` output rows
    /// in progress live in `MH` accumulators, every accumulator and tap
    /// index a compile-time constant (the taps are constant-bank operands).
    /// For masks of up to 5 rows ([`strip_unrolled`]) the loop runs `MH`
    /// rows per pass, output row `o` in accumulator `o mod MH`: the
    /// accumulators rotate by name, without register moves. Taller masks
    /// run a row per pass and shift the accumulators down a slot after
    /// each row (fewer registers). When output row `ir + 1 − MH` is
    /// complete it is stored and its accumulator cleared for a new row.
    /// `f32` masks of 7 rows and more ([`strip_blocked`]) run the blocked
    /// loop instead: [`STRIP_PASS`] output rows per pass from the input
    /// rows they read ([`StripStep::pass`]), through a ring of
    /// [`strip_pass_ring`] rows whose copies run a pass ahead.
    /// Window column `e` of a lane is element `e % 4` of ring chunk
    /// `lane + e / 4`, counted from `x − 4E` ([`strip_ext`]; `x − left −
    /// s` for every centred mask).
    ///
    /// Every lane runs the copies and barriers; only lanes with
    /// `step.store` (their window columns inside the image) store, and only
    /// the `step.rows_out` rows inside the image. `VEC`: image rows and
    /// `step.out` 16-byte aligned, and the pitch a multiple of 16 bytes
    /// (16-byte copies and stores; else element by element). `BAND` (the
    /// band kernel, blocked loop only): `step.out_rows` output rows per
    /// lane, a multiple of [`STRIP_PASS`], each pass checking whether its
    /// new rows lie inside the image.
    ///
    /// # Safety
    /// All 32 lanes of the warp call it together, with the same `step.y0`;
    /// `step.copy` as [`RowCopy::issue`]; `step.out` the strip's first
    /// output when `step.store`.
    #[inline(always)]
    unsafe fn strip<T: ConvElem, const MW: usize, const MH: usize, const VEC: bool, const BAND: bool>(
        step: StripStep<T>,
    ) {
        const {
            assert!(
                MW / 2 + ((MW / 2).wrapping_neg() & (FAST_X - 1)) == FAST_X * strip_ext(MW)
                    && MW <= STRIP_MAX_MASK
                    && (strip_blocked(MH, core::mem::size_of::<T>()) || MH <= STRIP_SLIDING_MAX)
                    && (strip_blocked(MH, core::mem::size_of::<T>()) || !BAND)
                    && STRIP_PASS + MH - 1 <= 16
                    && STRIP_PASS <= 16
            )
        };
        let out_rows = if BAND { step.out_rows as usize } else { strip_rows(MH, core::mem::size_of::<T>()) };
        let steps = out_rows + MH - 1;
        if strip_blocked(MH, core::mem::size_of::<T>()) {
            // The first pass's rows as one group, then the new rows of each
            // of the next STRIP_PASS_AHEAD − 1 passes as one group each;
            // each pass then waits for its rows and starts the rows of the
            // pass STRIP_PASS_AHEAD after it. Strips whose window lies
            // inside the image copy their rows without the mode's map.
            // Strips inside the image unroll the copies (every row and slot
            // a constant): as a loop they took a quarter of the 11 × 11
            // kernel's issue samples. A band checks its first passes' rows
            // here, and each later pass its own.
            let head = if BAND { steps.min(STRIP_PASS + MH - 1 + (STRIP_PASS_AHEAD - 1) * STRIP_PASS) } else { steps };
            let interior = step.y0 >= 0 && step.y0 + head as i32 <= step.rows.height;
            for group in 0..STRIP_PASS_AHEAD {
                let (start, end) = match group {
                    0 => (0, STRIP_PASS + MH - 1),
                    g => (STRIP_PASS + MH - 1 + (g - 1) * STRIP_PASS, STRIP_PASS + MH - 1 + g * STRIP_PASS),
                };
                if interior {
                    unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below end - start => {
                        let r = start + k;
                        if r < steps {
                            // SAFETY: the caller's contract (slot r of the
                            // ring); row y0 + r is inside the image.
                            unsafe { step.copy.issue_at::<VEC>((step.y0 as usize + r) * step.rows.pitch, true, r) };
                        }
                    });
                } else {
                    // Strips at the top and bottom edges: rows through the
                    // mode's map, a loop (its code once).
                    let mut r = start;
                    while r < end.min(steps) {
                        // SAFETY: the caller's contract (slot r).
                        unsafe { step.copy.issue::<VEC>(step.rows, step.y0 + r as i32, r) };
                        r += 1;
                    }
                }
                pipeline::commit_group();
            }
            let mut p = 0;
            while p < out_rows {
                // SAFETY: the caller's contract; rows p … p + STRIP_PASS +
                // MH − 2 were copied by the prologue or the previous pass;
                // interior as computed.
                unsafe { step.pass::<MW, MH, VEC, BAND>(p, interior) };
                p += STRIP_PASS;
            }
            pipeline::wait_group::<0>();
            // SAFETY: all lanes run the same loop.
            unsafe { sync_warp() };
            return;
        }
        let mut acc = [[T::ZERO; FAST_X]; STRIP_SLIDING_MAX];
        for r in 0..STRIP_RING - 1 {
            if r < steps {
                // SAFETY: the caller's contract.
                unsafe { step.copy.issue::<VEC>(step.rows, step.y0 + r as i32, r) };
            }
            pipeline::commit_group();
        }
        if strip_unrolled::<T>(MH) {
            // acc[k]: the output row ≡ k (mod MH) of the MH in progress.
            // MH rows per pass, so that ir mod MH, and with it every
            // accumulator index, is a compile-time U.
            let mut base = 0;
            while base < steps {
                unroll!(const U in [0, 1, 2, 3, 4, 5, 6] below MH => {
                    let ir = base + U;
                    if ir < steps {
                        let done = (U + 1) % MH;
                        // SAFETY: the caller's contract.
                        unsafe { step.run::<MW, MH, VEC>(&mut acc, ir, |j| (U + MH - j) % MH, done) };
                        acc[done] = [T::ZERO; FAST_X];
                    }
                });
                base += MH;
            }
        } else {
            // acc[k]: the output row MH − 1 − k rows above input row ir;
            // the slots shift down after each row.
            for ir in 0..steps {
                // SAFETY: the caller's contract.
                unsafe { step.run::<MW, MH, VEC>(&mut acc, ir, |j| MH - 1 - j, 0) };
                unroll!(k in [0, 1, 2, 3, 4, 5] below MH - 1 => {
                    acc[k] = acc[k + 1];
                });
                acc[MH - 1] = [T::ZERO; FAST_X];
            }
        }
        // The ring is free for the next strip once every lane is done.
        pipeline::wait_group::<0>();
        // SAFETY: all lanes run the same loop.
        unsafe { sync_warp() };
    }

    /// The register kernel for a centred `MW × MH` mask: thread `(tx, ty)`
    /// of a block owns the strip of columns `x = FAST_X · tx …` and rows
    /// `strip_rows · ty …` of the block's tile. A warp's 32 lanes cover 128
    /// consecutive columns of one band of rows, so each row's copy is one
    /// coalesced 512-byte transfer (plus a chunk either side); the halo
    /// rows shared with the strips above and below come from L2, so DRAM
    /// sees each input about once. No shared tile, no block barrier: each
    /// warp has its own ring ([`strip_shared_elems`](super::strip_shared_elems)).
    ///
    /// Lanes whose window columns lie inside the image compute from the
    /// ring (rows past the top or bottom edge through the mode's map, a
    /// row at a time). The few lanes at the left and right edges would need
    /// the map per element; rather than hold that code's registers in every
    /// thread, the whole warp computes each such strip afterwards, two
    /// outputs per lane from the plain sum. With a width that is a
    /// multiple of `FAST_X` no lane needs that path in zero mode (the
    /// chunks and rows outside the image, which the copies fill with
    /// zeros, are the mode's ghost cells), nor in the blocked loop
    /// ([`strip_blocked`]) under nearest, reflect and mirror: a warp whose
    /// ring reaches past an edge writes the ghost columns into each row
    /// once it lands, from the columns they mirror ([`strip_ring_fix`]).
    /// Wrap mode, whose ghost cells come from the far edge, keeps it.
    ///
    /// `BAND` (the band kernel): each strip is a band of
    /// [`strip_band_rows`] rows, the height at which the launch's rows of
    /// threads cover the image, so that one wave of blocks runs each
    /// warp's setup and halo rows once.
    #[inline(always)]
    unsafe fn slide<T: ConvElem, M: Taps<T>, const MW: usize, const MH: usize, const BAND: bool>(
        img: Image<T>,
        output: *mut T,
        mask: M,
    ) {
        let (bdx, bdy) = (block_dim_x(), block_dim_y());
        let (tx, ty) = (thread_idx_x(), thread_idx_y());
        let strip_h = if BAND {
            let slots = grid_dim_y() as usize * bdy as usize;
            strip_band_rows(MH, core::mem::size_of::<T>(), img.height, slots) as u32
        } else {
            strip_rows(MH, core::mem::size_of::<T>()) as u32
        };
        let (tw, th) = (FAST_X as u32 * bdx, strip_h * bdy);
        let (width, height) = (img.width as u32, img.height as u32);
        let row_bytes = img.pitch * core::mem::size_of::<T>();
        let vector =
            (img.p as usize).is_multiple_of(16) && (output as usize).is_multiple_of(16) && row_bytes.is_multiple_of(16);
        let lane = lane_id();
        let warp = ((ty * bdx + tx) / WARP_SIZE) as usize;
        let rows = Rows { pitch: img.pitch, height: height as i32, mode: img.mode };
        let (ring_rows, row, ext) = (strip_ring(MH, core::mem::size_of::<T>()), strip_row(MW), strip_ext(MW) as u32);
        // SAFETY: the launch gives each warp ring_rows · row elements of
        // dynamic shared memory (strip_shared_elems).
        let ring = unsafe { Shared::<T>::from_addr(dynamic::<T>().addr_of(warp * ring_rows * row)) };
        // With whole chunks (the width a multiple of FAST_X) every lane
        // computes from the ring, none needs the edge path: in zero mode
        // the ring's zero-filled chunks and rows are the mode's ghost
        // cells; under nearest, reflect and mirror the warps whose rings
        // reach past an edge write theirs (strip_ring_fix).
        let whole = width.is_multiple_of(FAST_X as u32);
        let (tiles_x, tiles_y) = (width.div_ceil(tw), height.div_ceil(th));
        let mut tyi = block_idx_y();
        while tyi < tiles_y {
            let mut txi = block_idx_x();
            while txi < tiles_x {
                let (x, y) = (txi * tw + FAST_X as u32 * tx, tyi * th + strip_h * ty);
                let active = x < width && y < height;
                // Lane 0's column; the ring's columns reach 4E either side.
                let x0 = x - FAST_X as u32 * lane;
                let fix = if !(whole && (x0 == 0 || x0 + FAST_X as u32 * (WARP_SIZE + ext) > width)) {
                    0
                } else if strip_blocked(MH, core::mem::size_of::<T>()) {
                    // The width through a register move: the modes'
                    // arithmetic stays on this path (see map_index_edge).
                    strip_ring_fix(x0, opaque(width as usize) as u32, lane, ext, img.mode)
                } else if map_index32(-1, 1, img.mode).is_none() {
                    0
                } else {
                    // The sliding loop writes no ghost cells: a step per
                    // row left the 5 × 5 kernel a register short of its
                    // three blocks per SM.
                    RING_FIX_NONE
                };
                // SAFETY: every lane of the warp runs the same tile loop.
                let ring_ok = whole && unsafe { ballot(FULL_MASK, fix == RING_FIX_NONE) } == 0;
                let inside = ring_ok || (x >= FAST_X as u32 * ext && x + FAST_X as u32 * (ext + 1) <= width);
                // SAFETY: every lane of the warp runs the same tile loop
                // (blocks of whole warps, block-uniform loops).
                if unsafe { ballot(FULL_MASK, active && inside) } != 0 {
                    // The warp's lanes share y (bdx is a multiple of 32), and
                    // lane l's columns start 4l after lane 0's. Lane l < E's
                    // extra chunk is E before its own (ring chunk l + E → l),
                    // lane E ≤ l < 2E's WARP_SIZE − E after (l + E →
                    // WARP_SIZE + l).
                    let before = lane < ext;
                    let extra_step = if before { -(ext as i32) } else { (WARP_SIZE - ext) as i32 };
                    let c = x.wrapping_add_signed(extra_step * FAST_X as i32);
                    let copy = RowCopy {
                        row,
                        own_dst: ring.addr_of(FAST_X * (lane + ext) as usize),
                        own_src: img.p.wrapping_add(x as usize),
                        own_ok: x + FAST_X as u32 <= width,
                        extra: lane < 2 * ext,
                        extra_step,
                        extra_ok: (!before || x >= FAST_X as u32 * ext) && c + FAST_X as u32 <= width,
                    };
                    // SAFETY: chunk `lane` of the ring's slot 0.
                    let read = unsafe { Shared::<T>::from_addr(ring.addr_of(FAST_X * lane as usize)) };
                    let out = output.wrapping_add(y as usize * img.pitch + x as usize);
                    // SAFETY: every lane is here; y < height; the copy's
                    // chunks as marked; out is stored through only by lanes
                    // inside the image.
                    unsafe {
                        let (y0, rows_out, store) = (y as i32 - (MH / 2) as i32, height - y, active && inside);
                        let fix = if ring_ok { fix } else { 0 };
                        let (taps, out_rows) = (mask.base(), strip_h);
                        let step = StripStep { taps, copy, rows, read, y0, out, rows_out, store, fix, out_rows };
                        if vector {
                            strip::<T, MW, MH, true, BAND>(step)
                        } else {
                            strip::<T, MW, MH, false, BAND>(step)
                        }
                    }
                }
                // SAFETY: as above.
                let edges = unsafe { ballot(FULL_MASK, active && !inside) };
                // SAFETY: as above.
                unsafe { edge_strips::<T, M, MW, MH>(img, output, mask, edges, (x, y), strip_h) };
                txi += grid_dim_x();
            }
            tyi += grid_dim_y();
        }
    }

    /// The register kernel's edge strips: for each lane set in `edges`,
    /// the whole warp computes that lane's `FAST_X × strip_h` strip (at
    /// the lane's `(x, y)`), two outputs per lane, each from the plain sum
    /// with both axes through the mode's map (in 32 bits: the axes are
    /// below 2³⁰).
    ///
    /// # Safety
    /// All 32 lanes call it together with the same `edges`.
    #[inline(always)]
    unsafe fn edge_strips<T: ConvElem, M: Taps<T>, const MW: usize, const MH: usize>(
        img: Image<T>,
        output: *mut T,
        mask: M,
        mut edges: u32,
        (x, y): (u32, u32),
        strip_h: u32,
    ) {
        let (w, h) = (img.width as i32, img.height as i32);
        while edges != 0 {
            let l = edges.trailing_zeros();
            edges &= edges - 1;
            // SAFETY: the loop is warp-uniform.
            let (ex, ey) = unsafe { (shfl_idx(FULL_MASK, x, l), shfl_idx(FULL_MASK, y, l)) };
            let mut o = lane_id() as usize;
            while o < FAST_X * strip_h as usize {
                let (xx, yy) = (ex as i32 + (o % FAST_X) as i32, ey as i32 + (o / FAST_X) as i32);
                if xx < w && yy < h {
                    let (sx, sy) = (xx - (MW / 2) as i32, yy - (MH / 2) as i32);
                    let mut acc = T::ZERO;
                    for j in 0..MH {
                        let row = map_index32(sy + j as i32, h, img.mode);
                        for i in 0..MW {
                            let v = match (map_index32(sx + i as i32, w, img.mode), row) {
                                // SAFETY: both mapped inside the image.
                                (Some(c), Some(r)) => unsafe { img.at(c as usize, r as usize) },
                                _ => T::ZERO,
                            };
                            // SAFETY: tap j · MW + i < MW · MH.
                            let m = unsafe { mask.at(j * MW + i) };
                            acc = T::fma(v, m, acc);
                        }
                    }
                    // SAFETY: xx < width, yy < height.
                    unsafe { *output.add(yy as usize * img.pitch + xx as usize) = acc };
                }
                o += WARP_SIZE as usize;
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

    /// `R` outputs `acc[r] = Σ_j x[r + j]·m(j)` for `j < w`, from shared
    /// memory: inputs `x[k … k + 3]` from `at4(k)` (`k` a multiple of 4,
    /// up to `R·⌈w/R⌉`), taps from `taps` (16-byte aligned), the window
    /// kept in registers `R` inputs at a time (the 1D fast kernel's chunk
    /// loop): whole chunks first, then the last one's taps below `w`.
    ///
    /// # Safety
    /// Every `at4(k)` and tap chunk read lies inside shared memory this
    /// block wrote (taps rounded up to whole chunks).
    #[inline(always)]
    unsafe fn window4<T: ConvElem>(w: usize, taps: Shared<T>, at4: impl Fn(usize) -> [T; FAST_X]) -> [T; FAST_X] {
        const R: usize = FAST_X;
        let mut acc = [T::ZERO; R];
        let mut lo = at4(0);
        let mut chunk = |c: usize, used: usize, lo: &mut [T; R]| {
            let hi = at4(R * c + R);
            let x = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
            // SAFETY: the taps are stored in whole chunks.
            let m = unsafe { T::read4(taps, R * c) };
            for jj in 0..R {
                if jj < used {
                    for r in 0..R {
                        acc[r] = T::fma(x[r + jj], m[jj], acc[r]);
                    }
                }
            }
            *lo = hi;
        };
        let full = (w / R) as u32;
        for c in 0..full {
            chunk(c as usize, R, &mut lo);
        }
        if !w.is_multiple_of(R) {
            chunk(full as usize, w % R, &mut lo);
        }
        acc
    }

    /// The fused separable convolution: per `SEP_TX × SEP_TY` output tile,
    /// the input tile with its halo into shared memory (modes per axis),
    /// the row pass over every tile row into a shared intermediate, then
    /// the column pass from it; no intermediate image in global memory.
    ///
    /// # Safety
    /// As the module's kernels; `mask_x`, `mask_y` valid for `mw`, `mh`
    /// taps; `sep_shared_elems(mw, mh)` elements of dynamic shared memory;
    /// [`SEP_THREADS`] threads per block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn separable<T: ConvElem>(
        img: Image<T>,
        output: *mut T,
        mask_x: *const T,
        mask_y: *const T,
        (mw, mh): (usize, usize),
        (lx, ly): (usize, usize),
    ) {
        let t = thread_idx_x() as usize;
        let (cx, cy) = (sep_chunked(mw), sep_chunked(mh));
        let (pitch_in, rows) = (sep_in_pitch(mw), sep_rows(mh));
        // SAFETY: the launch provides sep_shared_elems(mw, mh) elements:
        // the taps, the input tile, the intermediate.
        let s: Shared<T> = unsafe { dynamic() };
        let taps_x = s;
        // SAFETY: offsets inside the launch's shared memory, multiples of
        // 4 elements (16-byte aligned for the 4-wide reads).
        let (taps_y, tile, mid) = unsafe {
            (
                Shared::<T>::from_addr(s.addr_of(cx)),
                Shared::<T>::from_addr(s.addr_of(cx + cy)),
                Shared::<T>::from_addr(s.addr_of(cx + cy + rows * pitch_in)),
            )
        };
        let mut j = t;
        while j < mw.max(mh) {
            // SAFETY: j below each mask's width where read.
            unsafe {
                if j < mw {
                    taps_x.write(j, *mask_x.add(j));
                }
                if j < mh {
                    taps_y.write(j, *mask_y.add(j));
                }
            }
            j += SEP_THREADS;
        }
        let tiles_x = img.width.div_ceil(SEP_TX);
        let tiles = tiles_x * img.height.div_ceil(SEP_TY);
        for b in GridStride::new(block_idx_x() as usize, grid_dim_x() as usize, tiles) {
            let (x0, y0) = ((b % tiles_x) * SEP_TX, (b / tiles_x) * SEP_TY);
            let (ox, oy) = (x0 as isize - lx as isize, y0 as isize - ly as isize);
            // The input tile: columns [ox, ox + pitch_in), rows [oy, oy + rows).
            let span_x = SEP_TX + mw - 1;
            let inside = img.contains(ox, oy, span_x, rows.min(SEP_TY + mh - 1));
            // One warp per row at a time, lanes along it (coalesced; no
            // division by the run-time row length). Inside the image the
            // elements arrive by asynchronous copies, all in flight at
            // once; the padding columns and rows take zeros.
            let (warp, lane) = (t / 32, t % 32);
            let mut r = warp;
            while r < rows {
                // Per row: the source row's start and the tile row's shared
                // address, then 32-bit steps along it.
                let row_used = r < SEP_TY + mh - 1;
                let src_row = img.p.wrapping_offset((oy + r as isize) * img.pitch as isize + ox);
                let dst_row = tile.addr_of(r * pitch_in);
                let mut c = lane as u32;
                while (c as usize) < pitch_in {
                    let used = row_used && (c as usize) < span_x;
                    let dst = dst_row + c * core::mem::size_of::<T>() as u32;
                    if inside {
                        // SAFETY: when used, (ox + c, oy + r) lies inside
                        // the image; dst inside the tile.
                        unsafe { T::copy1_async(dst, src_row.wrapping_add(c as usize), used) };
                    } else {
                        let v = if used {
                            // SAFETY: the image is non-empty (tiles > 0).
                            unsafe { img.fetch(ox + c as isize, oy + r as isize) }
                        } else {
                            T::ZERO
                        };
                        // SAFETY: r < rows, c < pitch_in.
                        unsafe { tile.write(r * pitch_in + c as usize, v) };
                    }
                    c += 32;
                }
                r += SEP_THREADS / 32;
            }
            pipeline::commit_group();
            pipeline::wait_group::<0>();
            // SAFETY: every thread reaches it once per tile (block-uniform
            // loop); it also orders the taps' writes before their use.
            unsafe { sync_threads() };
            // Row pass: every tile row, SEP_TX outputs in 4-wide chunks.
            let chunks_per_row = SEP_TX / FAST_X;
            let mut k = t;
            while k < rows * chunks_per_row {
                let (r, x4) = (k / chunks_per_row, FAST_X * (k % chunks_per_row));
                let base = r * pitch_in + x4;
                // SAFETY: base + cx + 3 < (r + 1)·pitch_in: inside the tile;
                // base is a multiple of 4.
                let acc = unsafe { window4(mw, taps_x, |i| T::read4(tile, base + i)) };
                for (i, &v) in acc.iter().enumerate() {
                    // SAFETY: r < rows, x4 + i < SEP_TX.
                    unsafe { mid.write(r * SEP_TX + x4 + i, v) };
                }
                k += SEP_THREADS;
            }
            // SAFETY: as above.
            unsafe { sync_threads() };
            // Column pass: 4 rows of one column per task.
            let mut k = t;
            while k < (SEP_TY / FAST_Y) * SEP_TX {
                let (x, y4) = (k % SEP_TX, FAST_Y * (k / SEP_TX));
                // Column x of intermediate row y4, and the step between rows.
                let col = mid.addr_of(y4 * SEP_TX + x);
                let row = (SEP_TX * core::mem::size_of::<T>()) as u32;
                // SAFETY: rows y4 + i + 3 ≤ SEP_TY − 4 + cy + 3 < rows, all
                // inside the intermediate.
                let acc = unsafe {
                    window4(mh, taps_y, |i| {
                        let a = col + i as u32 * row;
                        [T::ld_shared(a), T::ld_shared(a + row), T::ld_shared(a + 2 * row), T::ld_shared(a + 3 * row)]
                    })
                };
                let gx = x0 + x;
                for (i, &v) in acc.iter().enumerate() {
                    let gy = y0 + y4 + i;
                    if gx < img.width && gy < img.height {
                        // SAFETY: inside the image; output has its layout.
                        unsafe { *output.add(gy * img.pitch + gx) = v };
                    }
                }
                k += SEP_THREADS;
            }
            // SAFETY: as above; the next tile overwrites the buffers.
            unsafe { sync_threads() };
        }
    }

    macro_rules! sep_kernel {
        ($name:ident, $t:ty) => {
            /// See the module documentation (`conv::conv2d`).
            ///
            /// # Safety
            /// As the module's `separable` function.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const $t,
                output: *mut $t,
                width: usize,
                height: usize,
                pitch: usize,
                mask_x: *const $t,
                mask_y: *const $t,
                mw: u32,
                mh: u32,
                left_x: u32,
                left_y: u32,
                mode: u32,
            ) {
                crate::dev::sync::grid_dependency_wait();
                let img = Image { p: input, width, height, pitch, mode };
                let (size, left) = ((mw as usize, mh as usize), (left_x as usize, left_y as usize));
                // SAFETY: same contract.
                unsafe { separable::<$t>(img, output, mask_x, mask_y, size, left) }
            }
        };
    }

    sep_kernel!(conv2d_sep_f32, f32);
    sep_kernel!(conv2d_sep_f64, f64);

    macro_rules! conv2d_kernel {
        ($name:ident, $t:ty, $algo:ident, global) => {
            /// See the module documentation (`conv::conv2d`).
            ///
            /// # Safety
            /// `input` and `output` valid for `(height − 1) · pitch + width`
            /// elements (when both dimensions are non-zero), not
            /// overlapping; `pitch ≥ width`; `mask` valid for `mw · mh`
            /// elements; `mw, mh ≥ 1`, `left_x < mw`, `left_y < mh`;
            /// dynamic shared memory as the module's layout functions give
            /// for the launch's block shape.
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
                crate::dev::sync::grid_dependency_wait();
                let img = Image { p: input, width, height, pitch, mode };
                let (size, left) = ((mw as usize, mh as usize), (left_x as usize, left_y as usize));
                // SAFETY: same contract.
                unsafe { $algo::<$t, _>(img, output, GlobalTaps(mask), size, left) }
            }
        };
        ($name:ident, $t:ty, $algo:ident, (param $bytes:expr)) => {
            /// See the module documentation (`conv::conv2d`).
            ///
            /// # Safety
            /// `input` and `output` valid for `(height − 1) · pitch + width`
            /// elements (when both dimensions are non-zero), not
            /// overlapping; `pitch ≥ width`; `taps` holding the `mw · mh`
            /// taps (`mask` is not read); `mw, mh ≥ 1`, `left_x < mw`,
            /// `left_y < mh`; dynamic shared memory as the module's layout
            /// functions give for the launch's block shape.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const $t,
                output: *mut $t,
                width: usize,
                height: usize,
                pitch: usize,
                _mask: *const $t,
                mw: u32,
                mh: u32,
                left_x: u32,
                left_y: u32,
                mode: u32,
                _taps: ParamBytes<{ $bytes }>,
            ) {
                crate::dev::sync::grid_dependency_wait();
                let img = Image { p: input, width, height, pitch, mode };
                crate::param_symbol!(Sym = $name, 11);
                let taps = ParamTaps::<Sym>(PhantomData);
                let (size, left) = ((mw as usize, mh as usize), (left_x as usize, left_y as usize));
                // SAFETY: same contract.
                unsafe { $algo::<$t, _>(img, output, taps, size, left) }
            }
        };
    }

    macro_rules! strip_kernel {
        ($name:ident, $t:ty, $m:literal) => {
            strip_kernel!($name, $t, $m, FIXED_MASK_TAPS * core::mem::size_of::<$t>());
        };
        ($name:ident, $t:ty, $m:literal, $bytes:expr) => {
            strip_kernel!($name, $t, $m, $bytes, false);
        };
        ($name:ident, $t:ty, $m:literal, $bytes:expr, $band:literal) => {
            /// The register form of the fast kernel for a centred
            /// `N × N` mask (see the module documentation): same
            /// parameters as the other constant-mask 2D kernels; `mw`,
            /// `mh`, `left_x`, `left_y` and `mask` are ignored. The band
            /// kernel's strips are bands of [`strip_band_rows`] rows, the
            /// height at which its grid's rows of threads cover the image.
            ///
            /// # Safety
            /// As the other 2D kernels, and: `taps` holds the `N · N`
            /// taps; blocks' x dimension a multiple of 32 (each warp one
            /// row of lanes); `width` and `height` below 2³⁰; dynamic
            /// shared memory of [`strip_shared_elems`](super::strip_shared_elems)
            /// elements for the block shape.
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
                _taps: ParamBytes<{ $bytes }>,
            ) {
                crate::dev::sync::grid_dependency_wait();
                let img = Image { p: input, width, height, pitch, mode };
                crate::param_symbol!(Sym = $name, 11);
                let taps = ParamTaps::<Sym>(PhantomData);
                // SAFETY: same contract.
                unsafe { slide::<$t, _, $m, $m, $band>(img, output, taps) }
            }
        };
    }

    strip_kernel!(conv2d_strip3_f32, f32, 3);
    strip_kernel!(conv2d_strip5_f32, f32, 5);
    strip_kernel!(conv2d_strip7_f32, f32, 7);
    strip_kernel!(conv2d_strip9_f32, f32, 9, PARAM_MASK_BYTES);
    strip_kernel!(conv2d_strip11_f32, f32, 11, PARAM_MASK_BYTES);
    strip_kernel!(conv2d_strip13_f32, f32, 13, PARAM_MASK_BYTES);
    strip_kernel!(conv2d_band9_f32, f32, 9, PARAM_MASK_BYTES, true);
    strip_kernel!(conv2d_strip3_f64, f64, 3);
    strip_kernel!(conv2d_strip5_f64, f64, 5);
    strip_kernel!(conv2d_strip7_f64, f64, 7);

    conv2d_kernel!(conv2d_basic_f32, f32, direct, global);
    conv2d_kernel!(conv2d_const_f32, f32, direct, (param PARAM_MASK_BYTES));
    conv2d_kernel!(conv2d_const_short_f32, f32, direct, (param FIXED_MASK_TAPS * core::mem::size_of::<f32>()));
    conv2d_kernel!(conv2d_tiled_f32, f32, tiled, (param PARAM_MASK_BYTES));
    conv2d_kernel!(conv2d_tiled_short_f32, f32, tiled, (param FIXED_MASK_TAPS * core::mem::size_of::<f32>()));
    conv2d_kernel!(conv2d_tiled_gm_f32, f32, tiled, global);
    conv2d_kernel!(conv2d_fast_f32, f32, fast_tile, (param PARAM_MASK_BYTES));
    conv2d_kernel!(conv2d_fast_short_f32, f32, fast_tile, (param FIXED_MASK_TAPS * core::mem::size_of::<f32>()));
    conv2d_kernel!(conv2d_fast_gm_f32, f32, fast_tile, global);
    conv2d_kernel!(conv2d_rows_f32, f32, rows, global);
    conv2d_kernel!(conv2d_cols_f32, f32, cols, global);
    conv2d_kernel!(conv2d_basic_f64, f64, direct, global);
    conv2d_kernel!(conv2d_const_f64, f64, direct, (param PARAM_MASK_BYTES));
    conv2d_kernel!(conv2d_const_short_f64, f64, direct, (param FIXED_MASK_TAPS * core::mem::size_of::<f64>()));
    conv2d_kernel!(conv2d_tiled_f64, f64, tiled, (param PARAM_MASK_BYTES));
    conv2d_kernel!(conv2d_tiled_short_f64, f64, tiled, (param FIXED_MASK_TAPS * core::mem::size_of::<f64>()));
    conv2d_kernel!(conv2d_tiled_gm_f64, f64, tiled, global);
    conv2d_kernel!(conv2d_fast_f64, f64, fast_tile, (param PARAM_MASK_BYTES));
    conv2d_kernel!(conv2d_fast_short_f64, f64, fast_tile, (param FIXED_MASK_TAPS * core::mem::size_of::<f64>()));
    conv2d_kernel!(conv2d_fast_gm_f64, f64, fast_tile, global);
    conv2d_kernel!(conv2d_rows_f64, f64, rows, global);
    conv2d_kernel!(conv2d_cols_f64, f64, cols, global);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_register_form_covers_centred_masks_up_to_13x13_in_f32() {
        for n in [3, 5, 7] {
            for elem in [4, 8] {
                assert!(fast_in_registers((n, n), (n / 2, n / 2), elem));
            }
        }
        for n in [9, 11, 13] {
            assert!(fast_in_registers((n, n), (n / 2, n / 2), 4));
            assert!(!fast_in_registers((n, n), (n / 2, n / 2), 8));
            assert!(!fast_in_registers((n, n), (n / 2 - 1, n / 2), 4));
        }
        assert!(!fast_in_registers((15, 15), (7, 7), 4));
        assert!(!fast_in_registers((9, 7), (4, 3), 4));
        assert!(!fast_in_registers((13, 11), (6, 5), 4));
        // Every centred mask's window starts E chunks left of the lane's
        // (the ring's E chunks either side), spans at most STRIP_CHUNKS.
        for n in [3usize, 5, 7, 9, 11, 13] {
            let e = if n <= 9 { 1 } else { 2 };
            assert_eq!(strip_ext(n), e);
            assert_eq!(n / 2 + ((n / 2).wrapping_neg() & (FAST_X - 1)), FAST_X * e);
            assert!(strip_chunks(n) <= STRIP_CHUNKS);
            assert_eq!(strip_row(n), FAST_X * (32 + 2 * e));
        }
        assert_eq!((strip_chunks(9), strip_chunks(11), strip_chunks(13)), (3, 5, 5));
        assert_eq!((strip_row(9), strip_row(13)), (136, 144));
        assert_eq!(STRIP_MAX_MASK, 13);
    }

    /// A warp's ring row after the copies (columns outside the image as
    /// zeros) and every lane's ghost cells ([`strip_ring_fix`]) holds, in
    /// every window an active lane reads, the value the mode gives each
    /// column; wrap mode and axes of 2³⁰ columns answer NONE.
    #[test]
    fn ring_ghost_cells_are_the_modes_values() {
        extern crate std;
        use crate::conv::boundary::Boundary;
        use std::format;
        use std::vec::Vec;
        for ext in [1u32, 2] {
            let span = 4 * (32 + 2 * ext) as i32;
            for width in (4u32..=700).step_by(4) {
                // Distinct nonzero values per column.
                let value = |c: u32| 1 + c as i64;
                for mode in [Boundary::Zero, Boundary::Nearest, Boundary::Reflect, Boundary::Mirror] {
                    for x0 in (0..width).step_by(128) {
                        let origin = x0 as i32 - 4 * ext as i32;
                        let mut ring: Vec<i64> = (0..span)
                            .map(|e| {
                                let c = origin + e;
                                if 0 <= c && c < width as i32 { value(c as u32) } else { 0 }
                            })
                            .collect();
                        let fixes: Vec<u32> = (0..32).map(|l| strip_ring_fix(x0, width, l, ext, mode.raw())).collect();
                        let ctx = format!("{mode:?} width {width} x0 {x0} ext {ext}");
                        assert!(!fixes.contains(&RING_FIX_NONE), "{ctx}");
                        let before = ring.clone();
                        for (l, &f) in fixes.iter().enumerate() {
                            assert!(l < 4 * ext as usize || f == 0, "{ctx}");
                            if f & RING_FIX_LEFT != 0 {
                                ring[l] = before[(f & 0xff) as usize];
                            }
                            if f & RING_FIX_RIGHT != 0 {
                                ring[((f >> 8) & 0xff) as usize] = before[((f >> 16) & 0xff) as usize];
                            }
                        }
                        for l in 0..32u32 {
                            let x = x0 + 4 * l;
                            if x >= width {
                                continue;
                            }
                            for c in x as i32 - 4 * ext as i32..(x + 4 + 4 * ext) as i32 {
                                let want = map_index32(c, width as i32, mode.raw()).map_or(0, value);
                                assert_eq!(ring[(c - origin) as usize], want, "{ctx} lane {l} column {c}");
                            }
                        }
                    }
                }
                // Wrap's ghost cells come from the far edge: outside the
                // ring once the image is wider than it.
                if width > 200 {
                    assert_eq!(strip_ring_fix(0, width, 0, ext, Boundary::Wrap.raw()), RING_FIX_NONE);
                }
            }
            assert_eq!(strip_ring_fix(0, 1 << 30, 0, ext, Boundary::Reflect.raw()), RING_FIX_NONE);
            assert_eq!(strip_ring_fix(0, 1 << 30, 0, ext, Boundary::Zero.raw()), 0);
        }
    }

    #[test]
    fn the_blocked_loop_ring_holds_a_pass_and_the_rows_in_flight() {
        for mh in [7, 9, 11, 13] {
            assert!(strip_blocked(mh, 4));
        }
        assert_eq!((strip_blocked(5, 4), strip_blocked(7, 8), strip_blocked(3, 4)), (false, false, false));
        // A pass reads STRIP_PASS + mh − 1 rows while the next
        // STRIP_PASS_AHEAD passes' rows are in flight; every slot index
        // stays within whole groups of STRIP_PASS slots.
        for mh in [7, 9, 11, 13] {
            let ring = strip_ring(mh, 4);
            assert!(STRIP_PASS + mh - 1 + STRIP_PASS_AHEAD * STRIP_PASS <= ring);
            assert!(
                ring.is_multiple_of(STRIP_PASS) && ring < STRIP_PASS + mh - 1 + (STRIP_PASS_AHEAD + 1) * STRIP_PASS
            );
        }
        assert_eq!([7, 9, 11, 13].map(strip_pass_ring), [16, 16, 20, 20]);
        assert!(STRIP_H.is_multiple_of(STRIP_PASS));
        // Strips of 8 rows from 9 × 9, two passes; every other mask 16.
        assert_eq!([3, 5, 7, 9, 11, 13].map(|mh| strip_rows(mh, 4)), [STRIP_H, STRIP_H, STRIP_H, 8, 8, 8]);
        assert_eq!([3, 7, 9].map(|mh| strip_rows(mh, 8)), [STRIP_H; 3]);
        assert!(strip_rows(13, 4).is_multiple_of(STRIP_PASS));
        assert_eq!((strip_ring(5, 4), strip_ring(7, 8), strip_ring(9, 4)), (STRIP_RING, STRIP_RING, 16));
        assert_eq!([3, 5, 7, 9, 11, 13].map(|n| strip_block_warps(n, 4)), [8, 8, 8, 4, 4, 4]);
        assert_eq!(strip_shared_elems(32, 4, 16, strip_row(9)), 4 * 16 * 136);
        // 11 × 11 and 13 × 13: 46,080 bytes a block of 4 warps, four blocks
        // in the H100's 228 KB of shared memory per SM.
        assert_eq!(strip_shared_elems(32, 4, strip_ring(13, 4), strip_row(13)) * 4, 46_080);
        // The launch bounds name the blocks of the block shape above.
        let bounds = |k: &str| crate::conv::LAUNCH_BOUNDS.iter().find(|b| b.0 == k).map(|b| (b.1, b.2));
        assert_eq!(bounds("conv2d_strip9_f32"), Some((32 * strip_block_warps(9, 4) as u32, 5)));
        assert_eq!(bounds("conv2d_strip11_f32"), Some((32 * strip_block_warps(11, 4) as u32, 4)));
        assert_eq!(bounds("conv2d_strip13_f32"), Some((32 * strip_block_warps(13, 4) as u32, 4)));
        assert_eq!(bounds("conv2d_strip7_f32"), Some((32 * strip_block_warps(7, 4) as u32, 2)));
    }
}
