//! 2D convolution on tensor cores (sm_80 and newer, `f32`), for large
//! masks.
//!
//! # The product as a matrix multiplication
//!
//! A warp computes 16 output rows by 8 columns per `mma.m16n8k8`. For
//! mask row `r` and a step `q` of 8 inputs, with `X` the input tile
//! (column 0 at the tile's first output minus `left_x`, row 0 at its first
//! output row minus `left_y`) and `m_r` the mask's row `r`:
//!
//! ```text
//! y[i][x0 + j] += Σ_u X[i + r][x0 + 8q + u] · m_r[8q + u − j],   u = 0 … 7
//! ```
//!
//! That is `C = A·B` with `A[i][u] = X[i + r][x0 + 8q + u]` (the data, 16
//! rows) and `B[u][j] = m_r[8q + u − j]` (a banded Toeplitz block of the
//! mask row, zero outside `0 … mw − 1`), summed over `mh` rows and
//! `S = ⌈(mw + 7) / 8⌉` steps ([`t2_steps`]). The mask is the `B` operand,
//! the same for every tile: each lane keeps a row's `S` fragments in
//! registers and applies them to every 8-column tile of the warp. The data
//! fragment of tile `k` at step `q` is the one of tile `k + 1` at step
//! `q − 1` (the tiles are 8 columns apart), so each fragment is loaded
//! (and split) once and meets every step that uses it: `NT + S − 1` loads
//! per mask row for `NT · S` products.
//!
//! Per output, the tensor core does `8·S·mh` multiply-adds for `mw·mh`
//! useful ones: 56% useful at 9 × 9, 62% at 15 × 15 (against 38% and 47%
//! with the 1D kernel's formulation, the mask as `A` and its band 16 rows
//! tall).
//!
//! A warp loads each data fragment with one `ldmatrix.x4` (the four 8×4
//! quarters of the 16 × 8 block straight into the registers `mma` takes;
//! [`crate::dev::mma::ldmatrix_x4`]). Lane `(g, t)`'s `B` elements are
//! `m_r[8q + t − g]` and `m_r[8q + t + 4 − g]`, read from a table built
//! once per mask ([`t2_mask_table`]).
//!
//! # Precision and non-finite values
//!
//! As the 1D kernels ([`super::tensor`]): by default three TF32 products
//! of split operands (`conv2d_tensor_*_f32`), the two small ones
//! accumulated apart, within the `f32` bound of a dot product of `mw·mh`
//! terms; `conv2d_tensor_tf32_*` takes one product of the raw inputs. A
//! tile with an infinite or NaN output is computed again with plain `f32`
//! fused multiply-adds.
//!
//! # Tiles
//!
//! A block of [`T2_WARPS`] warps computes [`T2_TY`] × [`T2_TX`] outputs per
//! tile, each warp 16 rows of [`T2_NT`] tiles of 8 columns. The block
//! copies the mask table into shared memory once, then walks its tiles
//! grid-stride. Each tile's inputs (with the halo) arrive by `cp.async`,
//! 16 or 8 bytes per copy where the rows' alignment allows it (tiles at
//! the image's edges load through the boundary mode); for rows of up to 9
//! taps into two buffers, the next tile's while the current one is
//! computed, for wider rows into one ([`t2_double_buffered`]). Rows are [`t2_pitch`]
//! floats apart so the 8 rows of each `ldmatrix` phase fall in distinct
//! banks.

/// Warps per block.
pub const T2_WARPS: usize = 4;
/// Threads per block.
pub const T2_THREADS: usize = 32 * T2_WARPS;
/// Tiles of 8 output columns per warp.
pub const T2_NT: usize = 8;
/// Output columns per block tile.
pub const T2_TX: usize = 8 * T2_NT;
/// Output rows per block tile (16 per warp).
pub const T2_TY: usize = 16 * T2_WARPS;
/// The widest mask row the kernels take: `S ≤ 4` steps.
pub const T2_MAX_MW: usize = 25;

/// Steps of 8 inputs per mask row for rows of `mw` taps: `⌈(mw + 7) / 8⌉`
/// (every tap for each of the 8 output columns of a tile).
/// At least 2 (the kernels' smallest form).
pub const fn t2_steps(mw: usize) -> usize {
    let s = (mw + 7).div_ceil(8);
    if s < 2 { 2 } else { s }
}

/// Input columns a tile holds for `s` steps: `8·(T2_NT + s)`.
pub const fn t2_cols(s: usize) -> usize {
    8 * (T2_NT + s)
}

/// Floats between rows of the input tile: [`t2_cols`] plus 4, an odd
/// multiple of 4, so the 8 rows of 16 bytes an `ldmatrix` phase reads
/// start 4 banks apart.
pub const fn t2_pitch(s: usize) -> usize {
    t2_cols(s) + 4
}

/// Rows of the input tile for `mh` mask rows.
pub const fn t2_rows(mh: usize) -> usize {
    T2_TY + mh - 1
}

/// Floats of the mask table: per mask row and step, the `B` fragment of
/// the 32 lanes (two heads, then their two remainders).
pub const fn t2_table_floats(mw: usize, mh: usize) -> usize {
    mh * t2_steps(mw) * 32 * 4
}

/// Whether the kernel for `s` steps keeps two tile buffers (the next
/// tile arriving while the current one is computed): for rows of up to 9
/// taps. Wider masks keep one, so that more blocks fit per SM (their tile
/// and table fill shared memory) and the other blocks hide the copies.
pub const fn t2_double_buffered(s: usize) -> bool {
    s <= 2
}

/// Dynamic shared memory of the 2D tensor-core kernels for an `mw × mh`
/// mask, bytes: the mask table, then the input tile buffers
/// ([`t2_double_buffered`]).
pub const fn t2_shared_bytes(mw: usize, mh: usize) -> usize {
    let s = t2_steps(mw);
    let bufs = if t2_double_buffered(s) { 2 } else { 1 };
    4 * (t2_table_floats(mw, mh) + bufs * t2_rows(mh) * t2_pitch(s))
}

/// Whether the 2D tensor-core kernels take an `mw × mh` mask: rows of at
/// most [`T2_MAX_MW`] taps, at least [`super::tensor::TC_MIN_TAPS`] taps in
/// all, and `mh·(mw − S) ≥ 16` with `S` = [`t2_steps`]`(mw)`. Each product
/// of the split carries up to `2^−20` (16 units of `2^−24`) of its
/// magnitude and each of the `mh·S` accumulations one rounding; the
/// `(mw·mh + 2)·2^−24` bound of an `f32` dot product covers both when
/// `16 + mh·S ≤ mw·mh`.
pub const fn t2_takes(mw: usize, mh: usize) -> bool {
    mw <= T2_MAX_MW && mw * mh >= super::tensor::TC_MIN_TAPS && mh * mw.saturating_sub(t2_steps(mw)) >= 16
}

/// The 2D kernel for `mw`-tap rows at precision `precise` (three split
/// products) or TF32: one per step count, `None` beyond [`T2_MAX_MW`].
pub const fn t2_kernel(mw: usize, precise: bool) -> Option<&'static str> {
    let names: [&str; 3] = if precise {
        ["conv2d_tensor_s2_f32", "conv2d_tensor_s3_f32", "conv2d_tensor_s4_f32"]
    } else {
        ["conv2d_tensor_tf32_s2_f32", "conv2d_tensor_tf32_s3_f32", "conv2d_tensor_tf32_s4_f32"]
    };
    match t2_steps(mw) {
        2 => Some(names[0]),
        3 => Some(names[1]),
        4 => Some(names[2]),
        _ => None,
    }
}

/// The mask table of the 2D tensor-core kernels for the row-major `mw ×
/// mh` correlation taps `taps`: for mask row `r`, step `q` (of
/// [`t2_steps`]`(mw)`, at least 2) and lane `(g, t)`, the `B` elements
/// `m_r[8q + t − g]` and `m_r[8q + t + 4 − g]` (zero outside the row)
/// rounded to TF32 ([`super::tensor::round_tf32`]), then their remainders
/// rounded to TF32 too, the four floats at `4·(32·(r·S + q) + lane)`: one
/// conflict-free 128-bit load per lane and step. `t2_table_floats(mw, mh)`
/// floats.
pub fn t2_mask_table(taps: &[f32], mw: usize, mh: usize, table: &mut [f32]) {
    use super::tensor::round_tf32;
    let s = t2_steps(mw);
    for r in 0..mh {
        let row = &taps[r * mw..(r + 1) * mw];
        let tap = |k: isize| if k >= 0 && (k as usize) < mw { row[k as usize] } else { 0.0 };
        for q in 0..s {
            for lane in 0..32 {
                let (g, t) = ((lane / 4) as isize, (lane % 4) as isize);
                let k = 8 * q as isize + t - g;
                let at = 4 * (32 * (r * s + q) + lane);
                for (e, v) in [tap(k), tap(k + 4)].into_iter().enumerate() {
                    let h = round_tf32(v);
                    table[at + e] = h;
                    table[at + 2 + e] = round_tf32(v - h);
                }
            }
        }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
mod kernels {
    use super::{T2_NT, T2_THREADS, T2_TX, T2_TY, t2_cols, t2_double_buffered, t2_pitch, t2_rows};
    use crate::conv::boundary::map_index_edge;
    use crate::conv::elem::{ConvElem, unroll};
    use crate::dev::index::{block_idx_x, grid_dim_x, thread_idx_x};
    use crate::dev::mma::{ld_shared_v4, ldmatrix_x4, mma_tf32, split_tf32, sync_threads_or};
    use crate::dev::pipeline::{commit_group, copy_f32, copy_f64, copy16, wait_group};
    use crate::dev::shared::{Shared, dynamic};
    use crate::dev::sync::sync_threads;

    /// Whether `x` is an infinity or a NaN.
    #[inline(always)]
    fn non_finite(x: f32) -> bool {
        x.to_bits() & 0x7f80_0000 == 0x7f80_0000
    }

    /// The 2D tensor-core kernel (see the module documentation) for masks
    /// whose rows take `S` steps; `PRECISE` selects the three-product
    /// split, otherwise one TF32 product.
    ///
    /// # Safety
    /// `input`, `output` valid for `(height − 1)·pitch + width` elements,
    /// not overlapping, `pitch ≥ width`; `mask` the `mw·mh` correlation
    /// taps, `table` their [`super::t2_mask_table`]; `t2_steps(mw) = S`,
    /// `left_x < mw`, `left_y < mh`; [`super::t2_shared_bytes`]`(mw, mh)`
    /// bytes of dynamic shared memory; [`T2_THREADS`] threads per block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tensor2d<const PRECISE: bool, const S: usize, const DOUBLE: bool>(
        input: *const f32,
        output: *mut f32,
        (width, height, pitch): (usize, usize, usize),
        mask: *const f32,
        (mw, mh): (usize, usize),
        (lx, ly): (usize, usize),
        mode: u32,
        table: *const f32,
    ) {
        let t = thread_idx_x() as usize;
        let (lane, warp) = (t % 32, t / 32);
        let (g, tq) = (lane / 4, lane % 4);
        let (cols, tp, rows) = (t2_cols(S), t2_pitch(S), t2_rows(mh));
        let table_floats = mh * S * 128;
        let buf_floats = rows * tp;
        // SAFETY: the launch provides t2_shared_bytes(mw, mh) bytes: the
        // table (S steps per row: t2_steps(mw) = S, and the host builds it
        // for S), then one buffer of rows × tp floats of input tile, two
        // when DOUBLE (= t2_double_buffered(S)); buf(1) is used only then.
        let smem: Shared<f32> = unsafe { dynamic() };
        // SAFETY: as above; table_floats and buf_floats are multiples of 8
        // (32-byte aligned buffers).
        let buf = |k: usize| unsafe { Shared::<f32>::from_addr(smem.addr_of(table_floats + k * buf_floats)) };
        let mut i = t;
        while 4 * i < table_floats {
            // SAFETY: 4i + 4 ≤ table_floats; the table is a device
            // allocation (256-byte aligned); smem is 16-aligned.
            unsafe { copy16(smem.addr_of(4 * i), table.add(4 * i).cast::<u8>(), true) };
            i += T2_THREADS;
        }
        commit_group();
        // Tiles start at multiples of T2_TX (whole sectors of output), so
        // every tile's first input has the same alignment: copies take 16
        // bytes when its rows start 16-byte aligned, 8 when 8, else 4.
        let base = (input as usize / 4) % 4 + 4 - lx % 4;
        let vec = if pitch.is_multiple_of(4) && base.is_multiple_of(4) {
            4
        } else if pitch.is_multiple_of(2) && base.is_multiple_of(2) {
            2
        } else {
            1
        };
        let tiles_x = width.div_ceil(T2_TX);
        let tiles = tiles_x * height.div_ceil(T2_TY);
        let span_x = T2_TX + mw - 1;
        // Tile b: its first output (x0, y0) and the input in its column 0
        // and row 0 (ox, oy).
        let corner = |b: usize| {
            let (x0, y0) = (((b % tiles_x) * T2_TX) as isize, ((b / tiles_x) * T2_TY) as isize);
            (x0, y0, x0 - lx as isize, y0 - ly as isize)
        };
        // Whether tile b's whole input (all `cols` columns) lies inside the
        // image.
        let interior = |b: usize| {
            let (_, _, ox, oy) = corner(b);
            ox >= 0 && oy >= 0 && ox as usize + cols <= width && oy as usize + rows <= height
        };
        // Starts the copies of interior tile b into `dst`: one warp per row
        // at a time, `vec` floats per lane and copy.
        let prefetch = |b: usize, dst: Shared<f32>| {
            let (_, _, ox, oy) = corner(b);
            let mut r = warp;
            while r < rows {
                // SAFETY: interior(b): the tile's rows and columns lie inside
                // the image.
                let src = unsafe { input.add((oy as usize + r) * pitch + ox as usize) };
                let mut c = vec * lane;
                while c < cols {
                    let d = dst.addr_of(r * tp + c);
                    // SAFETY: inside the image and the tile; 16 (8) bytes
                    // aligned on both sides for vec = 4 (2): the row starts
                    // so (see base), c is a multiple of vec, tp of 4.
                    unsafe {
                        match vec {
                            4 => copy16(d, src.add(c).cast::<u8>(), true),
                            2 => copy_f64(d, src.add(c).cast::<f64>(), true),
                            _ => copy_f32(d, src.add(c), true),
                        }
                    }
                    c += 32 * vec;
                }
                r += T2_THREADS / 32;
            }
        };
        // The row this lane addresses for ldmatrix (matrix lane / 8: rows
        // 0–7 or 8–15 of the warp's 16, words 0–3 or 4–7) in buffer 0, and
        // its table entry of row 0, step 0.
        let (m, rr) = (lane / 8, lane % 8);
        let a_addr0 = buf(0).addr_of((16 * warp + rr + 8 * (m & 1)) * tp + 4 * (m >> 1));
        let b_addr = smem.addr_of(4 * lane);
        let row_bytes = (4 * tp) as u32;
        let grid = grid_dim_x() as usize;
        let mut b = block_idx_x() as usize;
        let mut cur = 0;
        if DOUBLE && b < tiles && interior(b) {
            prefetch(b, buf(0));
        }
        commit_group();
        while b < tiles {
            let next = b + grid;
            if DOUBLE {
                if next < tiles && interior(next) {
                    prefetch(next, buf(cur ^ 1));
                }
            } else if interior(b) {
                prefetch(b, buf(0));
            }
            commit_group();
            let tile = buf(cur);
            // The table and tile b's copies: every group but the one just
            // committed (two buffers), or all of them.
            if DOUBLE {
                wait_group::<1>();
            } else {
                wait_group::<0>();
            }
            let (x0, y0, ox, oy) = corner(b);
            if !interior(b) {
                // Through the boundary mode, one warp per row at a time;
                // columns past the halo take zeros.
                let mut r = warp;
                while r < rows {
                    let mut c = lane;
                    while c < cols {
                        let v = match (
                            map_index_edge(ox + c as isize, width as isize, mode),
                            map_index_edge(oy + r as isize, height as isize, mode),
                        ) {
                            // SAFETY: map_index returns in-range indices.
                            (Some(x), Some(y)) if c < span_x => unsafe { *input.add(y * pitch + x) },
                            _ => 0.0,
                        };
                        // SAFETY: r < rows, c < cols ≤ tp.
                        unsafe { tile.write(r * tp + c, v) };
                        c += 32;
                    }
                    r += T2_THREADS / 32;
                }
            }
            // SAFETY: every thread reaches it once per tile (block-uniform
            // loop); it also orders the table copy before its first use.
            unsafe { sync_threads() };
            let a_addr = a_addr0 + (4 * cur * buf_floats) as u32;
            let mut big = [[0.0f32; 4]; T2_NT];
            let mut small = [[0.0f32; 4]; T2_NT];
            for mr in 0..mh {
                // The row's S mask fragments: heads b[0], b[1], remainders
                // b[2], b[3].
                let mut bq = [[0u32; 4]; S];
                for (q, f) in bq.iter_mut().enumerate() {
                    // SAFETY: row mr, step q of the table, this lane's entry.
                    *f = unsafe { ld_shared_v4(b_addr + (512 * (mr * S + q)) as u32) };
                }
                let row = a_addr + mr as u32 * row_bytes;
                // Data fragment p (columns 8p … 8p + 7) meets step q in tile
                // p − q. Unrolled by hand: the accumulators are indexed by
                // constants only (a rolled loop would put them in local
                // memory).
                unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10] below T2_NT + S - 1 => {
                    // a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4), a3 =
                    // (g + 8, t + 4) of columns 8p … 8p + 7.
                    // SAFETY: rows 16·warp + 15 + mr < rows, columns 8p + 7 <
                    // cols: inside the tile; rows 16-byte aligned (tp a
                    // multiple of 4); the whole warp runs it.
                    let x = unsafe { ldmatrix_x4(row + (32 * p) as u32) };
                    let (xh, xl) = if PRECISE {
                        let f = |i: usize| split_tf32(f32::from_bits(x[i]));
                        let s = [f(0), f(1), f(2), f(3)];
                        ([s[0].0, s[1].0, s[2].0, s[3].0], [s[0].1, s[1].1, s[2].1, s[3].1])
                    } else {
                        (x, [0; 4])
                    };
                    unroll!(q in [0, 1, 2, 3] below S => {
                        let k = p.wrapping_sub(q);
                        if k < T2_NT {
                            let f = bq[q];
                            // SAFETY: the whole warp runs these (no
                            // divergence inside the loops).
                            unsafe {
                                mma_tf32(&mut big[k], xh, [f[0], f[1]]);
                                if PRECISE {
                                    mma_tf32(&mut small[k], xl, [f[0], f[1]]);
                                    mma_tf32(&mut small[k], xh, [f[2], f[3]]);
                                }
                            }
                        }
                    });
                });
            }
            let mut bad = false;
            unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7] below T2_NT => {
                for v in 0..4 {
                    if PRECISE {
                        big[k][v] += small[k][v];
                    }
                    bad |= non_finite(big[k][v]);
                }
            });
            let inside = |x: isize, y: isize| x >= 0 && (x as usize) < width && (y as usize) < height;
            // SAFETY: reached by every thread once per tile, as above.
            if unsafe { sync_threads_or(bad) } {
                // An infinity or NaN (from the inputs, or an overflow): the
                // plain sum, so they come out as the FMA kernels give them.
                let mut o = t;
                while o < T2_TX * T2_TY {
                    let (cx, cy) = (o % T2_TX, o / T2_TX);
                    let (gx, gy) = (x0 + cx as isize, y0 + cy as isize);
                    if inside(gx, gy) {
                        let mut acc = 0.0f32;
                        let at = cy * tp + cx;
                        for j in 0..mh {
                            for i in 0..mw {
                                // SAFETY: cy + j < rows, cx + i < span_x ≤
                                // cols; the mask holds mw·mh taps.
                                let (x, m) = unsafe { (tile.read(at + j * tp + i), *mask.add(j * mw + i)) };
                                acc = f32::fma(x, m, acc);
                            }
                        }
                        // SAFETY: inside the image.
                        unsafe { *output.add(gy as usize * pitch + gx as usize) = acc };
                    }
                    o += T2_THREADS;
                }
            } else {
                let gy = y0 + (16 * warp + g) as isize;
                unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7] below T2_NT => {
                    // c0, c1: row g, columns 2t, 2t + 1; c2, c3: row g + 8.
                    let gx = x0 + (8 * k + 2 * tq) as isize;
                    for (v, (dy, dx)) in [(0, 0), (0, 1), (8, 0), (8, 1)].into_iter().enumerate() {
                        let (x, y) = (gx + dx, gy + dy);
                        if inside(x, y) {
                            // SAFETY: inside the image.
                            unsafe { *output.add(y as usize * pitch + x as usize) = big[k][v] };
                        }
                    }
                });
            }
            // SAFETY: as above; the next pass refills this buffer.
            unsafe { sync_threads() };
            if DOUBLE {
                cur ^= 1;
            }
            b = next;
        }
        // A block without tiles still has its table copy in flight.
        wait_group::<0>();
    }

    macro_rules! tensor2d_kernel {
        ($name:ident, $precise:literal, $s:literal) => {
            /// See the module documentation (`conv::tensor2d`).
            ///
            /// # Safety
            /// As the module's `tensor2d` function.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const f32,
                output: *mut f32,
                width: usize,
                height: usize,
                pitch: usize,
                mask: *const f32,
                mw: u32,
                mh: u32,
                left_x: u32,
                left_y: u32,
                mode: u32,
                table: *const f32,
            ) {
                crate::dev::sync::grid_dependency_wait();
                let (size, left) = ((mw as usize, mh as usize), (left_x as usize, left_y as usize));
                // SAFETY: same contract.
                unsafe {
                    tensor2d::<$precise, $s, { t2_double_buffered($s) }>(
                        input,
                        output,
                        (width, height, pitch),
                        mask,
                        size,
                        left,
                        mode,
                        table,
                    )
                }
            }
        };
    }

    tensor2d_kernel!(conv2d_tensor_s2_f32, true, 2);
    tensor2d_kernel!(conv2d_tensor_s3_f32, true, 3);
    tensor2d_kernel!(conv2d_tensor_s4_f32, true, 4);
    tensor2d_kernel!(conv2d_tensor_tf32_s2_f32, false, 2);
    tensor2d_kernel!(conv2d_tensor_tf32_s3_f32, false, 3);
    tensor2d_kernel!(conv2d_tensor_tf32_s4_f32, false, 4);
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn steps_cover_every_tap_of_every_column() {
        for mw in 1..=T2_MAX_MW {
            let s = t2_steps(mw);
            // Output column j (0 … 7) reads taps 8q + u − j for u < 8, q < S.
            assert!(8 * s >= mw + 7 && (s == 2 || 8 * (s - 1) < mw + 7), "mw = {mw}");
            assert!(t2_kernel(mw, true).is_some() && t2_kernel(mw, false).is_some());
            // The tile's columns hold the halo of T2_TX outputs.
            assert!(t2_cols(s) >= T2_TX + mw - 1);
            // Every fragment read lies inside the row: columns 8p … 8p + 7.
            assert!(8 * (T2_NT + s - 2) + 8 <= t2_cols(s));
        }
        assert_eq!(t2_kernel(T2_MAX_MW + 1, true), None);
        // The accuracy rule: the split's error within the f32 bound.
        for mw in 1..=T2_MAX_MW + 1 {
            for mh in 1..40 {
                let takes = t2_takes(mw, mh);
                let fits = 16 + mh * t2_steps(mw) <= mw * mh && mw * mh >= 32 && mw <= T2_MAX_MW;
                assert_eq!(takes, fits, "{mw}×{mh}");
            }
        }
        assert!(t2_takes(9, 9) && t2_takes(8, 4) && t2_takes(25, 25) && !t2_takes(2, 16) && !t2_takes(26, 26));
    }

    #[test]
    fn pitch_puts_each_ldmatrix_phase_in_distinct_banks() {
        // ldmatrix reads 8 rows of 16 bytes per phase (lanes 8i … 8i + 7):
        // rows r0 … r0 + 7 at word 4h of column group p.
        for s in 2..=4 {
            let tp = t2_pitch(s);
            assert!(tp >= t2_cols(s) && tp.is_multiple_of(4));
            for p in 0..T2_NT + s - 1 {
                for (r0, h) in [(0, 0), (8, 0), (3, 1), (10, 1)] {
                    let mut banks = [0u32; 32];
                    for r in r0..r0 + 8 {
                        for w in 0..4 {
                            banks[(r * tp + 8 * p + 4 * h + w) % 32] += 1;
                        }
                    }
                    assert!(banks.iter().all(|&b| b == 1), "s {s} p {p} rows {r0}: {banks:?}");
                }
            }
        }
    }

    #[test]
    fn table_holds_each_lanes_fragment_split() {
        let (mw, mh) = (11, 3);
        let taps: Vec<f32> = (0..mw * mh).map(|k| 0.3 - k as f32 * 0.173).collect();
        let s = t2_steps(mw);
        let mut table = vec![f32::NAN; t2_table_floats(mw, mh)];
        t2_mask_table(&taps, mw, mh, &mut table);
        for r in 0..mh {
            for q in 0..s {
                for lane in 0..32 {
                    let (g, t) = (lane / 4, lane % 4);
                    // b0 = B(t, g), b1 = B(t + 4, g): B(u, j) = m_r[8q + u − j].
                    for (e, u) in [t, t + 4].into_iter().enumerate() {
                        let k = 8 * q + u;
                        let want = if k >= g && k - g < mw { taps[r * mw + k - g] } else { 0.0 };
                        let at = 4 * (32 * (r * s + q) + lane);
                        let (head, rest) = (table[at + e], table[at + 2 + e]);
                        assert_eq!(head.to_bits() & 0x1fff, 0);
                        assert_eq!(rest.to_bits() & 0x1fff, 0);
                        let err = (head as f64 + rest as f64 - want as f64).abs();
                        assert!(err <= want.abs() as f64 * 2f64.powi(-22), "r {r} q {q} lane {lane}");
                    }
                }
            }
        }
    }

    /// The kernel's sum, on the CPU with exact products: the fragments
    /// and the table's layout give the correlation.
    #[test]
    fn fragments_compute_the_correlation() {
        let (mw, mh) = (13, 2);
        let s = t2_steps(mw);
        let taps: Vec<f32> = (0..mw * mh).map(|k| ((k * 7 % 11) as f32) - 5.0).collect();
        let mut table = vec![0.0f32; t2_table_floats(mw, mh)];
        t2_mask_table(&taps, mw, mh, &mut table);
        let cols = t2_cols(s);
        let x: Vec<Vec<f32>> =
            (0..16 + mh).map(|i| (0..cols).map(|c| ((i * 31 + c * 17) % 23) as f32).collect()).collect();
        for k in 0..T2_NT {
            for i in 0..16 {
                for j in 0..8 {
                    let mut sum = 0.0f32;
                    for r in 0..mh {
                        for q in 0..s {
                            for t in 0..4 {
                                let lane = 4 * j + t;
                                let at = 4 * (32 * (r * s + q) + lane);
                                for e in 0..2 {
                                    let b = table[at + e] + table[at + 2 + e];
                                    sum += x[i + r][8 * (k + q) + t + 4 * e] * b;
                                }
                            }
                        }
                    }
                    let want: f32 = (0..mh)
                        .flat_map(|r| (0..mw).map(move |c| (r, c)))
                        .map(|(r, c)| x[i + r][8 * k + j + c] * taps[r * mw + c])
                        .sum();
                    assert_eq!(sum, want, "k {k} i {i} j {j}");
                }
            }
        }
    }
}
