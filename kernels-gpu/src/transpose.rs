//! Matrix transpose through shared memory (lesson 004, "shared memory":
//! banks and bank conflicts).
//!
//! Every kernel writes `out = inᵀ` for a row-major `rows × cols` matrix of
//! `f32`: element `(r, c)` of the input (`in[r · cols + c]`) becomes element
//! `(c, r)` of the `cols × rows` output (`out[c · rows + r]`). The grid
//! covers the input with [`TILE`] × [`TILE`] tiles: block `(bx, by)` owns
//! input columns `bx · 32 …` and rows `by · 32 …`, and its `32 × ROWS`
//! threads each move `32 / ROWS` elements of the tile (rows `ty, ty + ROWS,
//! …`). A tile that sticks out of the matrix (sizes that are not multiples
//! of 32) is cut by bounds checks; nothing outside the matrix is read or
//! written.
//!
//! | kernel | reads | writes | shared memory |
//! | --- | --- | --- | --- |
//! | `transpose_naive_r*` | a warp reads 32 consecutive floats of a row (coalesced) | a warp writes 32 floats of one output *column*, `4 · rows` bytes apart (strided) | none |
//! | `transpose_tiled_r*` | as naive, into a `32 × 32` tile | from the tile's columns, 32 consecutive floats of an output row (coalesced) | 4096 bytes; the column read hits one bank 32 times (32-way conflict) |
//! | `transpose_padded_r*` | as tiled, into a `32 × 33` tile | as tiled | 4224 bytes; the padding spreads a column over all 32 banks (no conflict) |
//!
//! Why the padding works: shared memory has 32 banks of 4-byte words, word
//! `w` in bank `w mod 32`. Lane `tx` of a warp reading column `c` of a tile
//! whose rows are `P` words apart touches word `tx · P + c`: with `P = 32`
//! that is bank `c` for every lane (the 32 accesses are serialized), with
//! `P = 33` bank `(tx + c) mod 32`, a different bank per lane. The row-wise
//! stores into the tile (word `r · P + tx`) are conflict-free either way.
//!
//! The `_rN` suffix is the block's height `ROWS` (block `32 × ROWS`, each
//! thread `32 / ROWS` elements): `r8` is the classic `32 × 8` shape with
//! four elements per thread. Every thread issues all its global loads
//! before its first shared store, and all its shared loads before its first
//! global store, so `32 / ROWS` accesses per thread are in flight at once.
//!
//! Grids wider than the device's 65535 blocks along y are handled by a
//! grid-stride loop over tile rows (the host caps `gridDim.y`).

/// Side of the square tile every kernel works on (one warp wide).
pub const TILE: usize = 32;

/// Row pitch of the tiled kernels' shared tile, in words: one tile row
/// per 32 words, so a tile column lies in a single bank.
pub const PITCH_TILED: usize = TILE;

/// Row pitch of the padded kernels' shared tile, in words: one unused word
/// per row shifts each row by one bank.
pub const PITCH_PADDED: usize = TILE + 1;

/// Block heights with a compiled kernel: block `32 × ROWS`, `32 / ROWS`
/// elements per thread.
pub const BLOCK_ROWS: [u32; 4] = [4, 8, 16, 32];

/// The classic block height: `32 × 8` threads, four elements each.
pub const DEFAULT_BLOCK_ROWS: u32 = 8;

/// Word index of tile element `(r, c)` in a tile whose rows are `pitch`
/// words apart (the shared-memory layout of the tiled kernels).
#[inline(always)]
pub const fn tile_word(r: usize, c: usize, pitch: usize) -> usize {
    r * pitch + c
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{PITCH_PADDED, PITCH_TILED, TILE, tile_word};
    use crate::dev::grid::GridStride;
    use crate::dev::index::{block_idx_x, block_idx_y, grid_dim_y, thread_idx_x, thread_idx_y};
    use crate::dev::shared::Shared;
    use crate::dev::sync::sync_threads;

    crate::shared_array!(
        /// The `32 × 32` tile of the `transpose_tiled_r*` kernels.
        TRANSPOSE_TILE: [f32; 1024], align 16, "f32"
    );

    crate::shared_array!(
        /// The `32 × 33` tile of the `transpose_padded_r*` kernels.
        TRANSPOSE_TILE_PADDED: [f32; 1056], align 16, "f32"
    );

    /// The naive transpose: each thread reads `PER` elements of one input
    /// column, `ROWS` rows apart (coalesced across the warp), and writes
    /// them to one output row (adjacent lanes `4 · rows` bytes apart).
    ///
    /// # Safety
    /// `input` valid for `rows · cols` floats, `output` for as many, not
    /// overlapping; block `32 × ROWS` with `ROWS · PER == 32`.
    #[inline(always)]
    unsafe fn naive<const ROWS: usize, const PER: usize>(
        input: *const f32,
        output: *mut f32,
        rows: usize,
        cols: usize,
    ) {
        let tx = thread_idx_x() as usize;
        let ty = thread_idx_y() as usize;
        let x = block_idx_x() as usize * TILE + tx;
        if x >= cols {
            return; // no barrier in this kernel
        }
        for by in GridStride::new(block_idx_y() as usize, grid_dim_y() as usize, rows.div_ceil(TILE)) {
            let y0 = by * TILE + ty;
            let mut v = [0f32; PER];
            for (k, e) in v.iter_mut().enumerate() {
                let y = y0 + k * ROWS;
                if y < rows {
                    // SAFETY: y < rows and x < cols.
                    *e = unsafe { *input.add(y * cols + x) };
                }
            }
            for (k, e) in v.iter().enumerate() {
                let y = y0 + k * ROWS;
                if y < rows {
                    // SAFETY: output element (x, y) of the cols × rows output.
                    unsafe { *output.add(x * rows + y) = *e };
                }
            }
        }
    }

    /// The shared-memory transpose with a tile of rows `PITCH` words apart:
    /// load a `32 × 32` tile row-wise (coalesced), barrier, read it
    /// column-wise and store output rows (coalesced), barrier before the
    /// next tile (grid-stride along y).
    ///
    /// Tile element `(r, c)` is input `(y0 + r, x0 + c)`; it is written and
    /// read under the same condition (`y0 + r < rows && x0 + c < cols`), so
    /// no thread reads a slot the tile did not receive.
    ///
    /// # Safety
    /// As [`naive`]; `cols ≥ 1` (the host launches no empty matrix);
    /// `tile` holds `32 · PITCH` floats of this block's shared memory,
    /// `PITCH >= 32`.
    #[inline(always)]
    unsafe fn tiled<const PITCH: usize, const ROWS: usize, const PER: usize>(
        tile: Shared<f32>,
        input: *const f32,
        output: *mut f32,
        rows: usize,
        cols: usize,
    ) {
        let tx = thread_idx_x() as usize;
        let ty = thread_idx_y() as usize;
        let x0 = block_idx_x() as usize * TILE;
        // Input column this thread loads; output column (input row offset)
        // it stores is tx, the tile column it reads is ty + k·ROWS.
        let x_in = x0 + tx;
        let mut first = true;
        for by in GridStride::new(block_idx_y() as usize, grid_dim_y() as usize, rows.div_ceil(TILE)) {
            if !first {
                // SAFETY: every thread of the block runs the same trip count
                // (it depends on blockIdx.y only): the previous tile's reads
                // finish before it is overwritten.
                unsafe { sync_threads() };
            }
            first = false;
            let y0 = by * TILE;

            let mut v = [0f32; PER];
            if cfg!(all(target_feature = "sm_80", not(target_feature = "sm_90"))) {
                // sm_80's compiler serializes the guarded loads below behind
                // the shared stores (one load in flight instead of PER):
                // there, every load is unconditional, at a position clamped
                // into the input (values outside are never stored). On
                // sm_90 the clamped form cost 6% at 32 × 8 (0.874 against
                // 0.823 ms on 16384²), so the others keep the guards.
                let xc = x_in.min(cols - 1);
                for (k, e) in v.iter_mut().enumerate() {
                    let y = (y0 + ty + k * ROWS).min(rows - 1);
                    // SAFETY: y < rows and xc < cols (rows ≥ 1 inside the
                    // loop, cols ≥ 1 by the contract).
                    *e = unsafe { *input.add(y * cols + xc) };
                }
            } else {
                for (k, e) in v.iter_mut().enumerate() {
                    let y = y0 + ty + k * ROWS;
                    if x_in < cols && y < rows {
                        // SAFETY: inside the input.
                        *e = unsafe { *input.add(y * cols + x_in) };
                    }
                }
            }
            for (k, e) in v.iter().enumerate() {
                let r = ty + k * ROWS;
                if x_in < cols && y0 + r < rows {
                    // SAFETY: r < 32, tx < 32: inside the tile; each slot
                    // written by one thread.
                    unsafe { tile.write(tile_word(r, tx, PITCH), *e) };
                }
            }
            // SAFETY: reached by every thread of the block (no early exit).
            unsafe { sync_threads() };

            // Output row x0 + c (input column), output column y0 + tx
            // (input row): tile element (tx, c), a column of the tile.
            let y_out = y0 + tx;
            for (k, e) in v.iter_mut().enumerate() {
                let c = ty + k * ROWS;
                if x0 + c < cols && y_out < rows {
                    // SAFETY: written before the barrier under this condition.
                    *e = unsafe { tile.read(tile_word(tx, c, PITCH)) };
                }
            }
            for (k, e) in v.iter().enumerate() {
                let c = ty + k * ROWS;
                if x0 + c < cols && y_out < rows {
                    // SAFETY: output element (x0 + c, y_out) of cols × rows.
                    unsafe { *output.add((x0 + c) * rows + y_out) = *e };
                }
            }
        }
    }

    /// Declares the three entry points of one block height.
    macro_rules! transpose_kernels {
        ($naive:ident, $tiled:ident, $padded:ident, $rows:literal, $per:literal) => {
            #[doc = concat!("Naive transpose, block `32 × ", stringify!($rows), "`, ", stringify!($per), " element(s) per thread.")]
            ///
            /// # Safety
            /// `input` and `output` valid for `rows · cols` floats each, not
            /// overlapping; launched with a block of exactly that shape.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $naive(input: *const f32, output: *mut f32, rows: usize, cols: usize) {
                // SAFETY: same contract.
                unsafe { naive::<$rows, $per>(input, output, rows, cols) }
            }

            #[doc = concat!("Tiled transpose through a `32 × 32` shared tile (32-way bank conflicts on the column reads), block `32 × ", stringify!($rows), "`.")]
            ///
            /// # Safety
            /// As the naive kernel of this block height, and `cols ≥ 1`.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $tiled(input: *const f32, output: *mut f32, rows: usize, cols: usize) {
                // SAFETY: same contract; the tile holds 32 · 32 floats.
                unsafe { tiled::<PITCH_TILED, $rows, $per>(TRANSPOSE_TILE::view(), input, output, rows, cols) }
            }

            #[doc = concat!("Tiled transpose through a padded `32 × 33` shared tile (conflict-free), block `32 × ", stringify!($rows), "`.")]
            ///
            /// # Safety
            /// As the naive kernel of this block height, and `cols ≥ 1`.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $padded(input: *const f32, output: *mut f32, rows: usize, cols: usize) {
                // SAFETY: same contract; the tile holds 32 · 33 floats.
                unsafe { tiled::<PITCH_PADDED, $rows, $per>(TRANSPOSE_TILE_PADDED::view(), input, output, rows, cols) }
            }
        };
    }

    transpose_kernels!(transpose_naive_r4, transpose_tiled_r4, transpose_padded_r4, 4, 8);
    transpose_kernels!(transpose_naive_r8, transpose_tiled_r8, transpose_padded_r8, 8, 4);
    transpose_kernels!(transpose_naive_r16, transpose_tiled_r16, transpose_padded_r16, 16, 2);
    transpose_kernels!(transpose_naive_r32, transpose_tiled_r32, transpose_padded_r32, 32, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_heights_divide_the_tile() {
        for r in BLOCK_ROWS {
            assert_eq!(TILE % r as usize, 0, "{r}");
        }
        assert!(BLOCK_ROWS.contains(&DEFAULT_BLOCK_ROWS));
    }

    #[test]
    fn tiles_fit_their_shared_arrays() {
        // The arrays declared for the kernels: 1024 and 1056 floats; the
        // padded tile's last word of each row is never used.
        assert_eq!((TILE * PITCH_TILED, TILE * PITCH_PADDED), (1024, 1056));
        assert_eq!(tile_word(TILE - 1, TILE - 1, PITCH_TILED), 1023);
        assert_eq!(tile_word(TILE - 1, TILE - 1, PITCH_PADDED), 1054);
    }
}
