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
//! The `k` index of a step is permuted as in [`super::tensor`]: lane
//! `(g, t)` holds inputs `2t` and `2t + 1` of rows `g` and `g + 8`, two
//! 64-bit shared loads, and its `B` elements are `m_r[8q + 2t − g]` and
//! `m_r[8q + 2t + 1 − g]`, read from a table built once per mask
//! ([`t2_mask_table`]).
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
//! grid-stride: the input tile with its halo arrives by `cp.async`
//! (boundary tiles through the boundary mode), rows [`t2_pitch`] floats
//! apart so the 16 rows a warp reads fall in distinct banks.

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

/// Input columns a tile reads for `s` steps: `8·(T2_NT + s)`.
pub const fn t2_cols(s: usize) -> usize {
    8 * (T2_NT + s)
}

/// Floats between rows of the input tile: [`t2_cols`] rounded up to an
/// odd multiple of 8, so rows `g = 0 … 3` of a half-warp's 64-bit loads
/// start 8 banks apart.
pub const fn t2_pitch(s: usize) -> usize {
    let c = t2_cols(s);
    if (c / 8).is_multiple_of(2) { c + 8 } else { c }
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

/// Dynamic shared memory of the 2D tensor-core kernels for an `mw × mh`
/// mask, bytes: the mask table, then the input tile.
pub const fn t2_shared_bytes(mw: usize, mh: usize) -> usize {
    4 * (t2_table_floats(mw, mh) + t2_rows(mh) * t2_pitch(t2_steps(mw)))
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
/// `m_r[8q + 2t − g]` and `m_r[8q + 2t + 1 − g]` (zero outside the row)
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
                let k = 8 * q as isize + 2 * t - g;
                let at = 4 * (32 * (r * s + q) + lane);
                for (e, v) in [tap(k), tap(k + 1)].into_iter().enumerate() {
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
    use super::{T2_NT, T2_THREADS, T2_TX, T2_TY, t2_cols, t2_pitch, t2_rows};
    use crate::conv::boundary::map_index_edge;
    use crate::conv::elem::{ConvElem, unroll};
    use crate::dev::index::{block_idx_x, grid_dim_x, thread_idx_x};
    use crate::dev::mma::{ld_shared_v2, ld_shared_v4, mma_tf32, split_tf32, sync_threads_or};
    use crate::dev::pipeline::{commit_group, copy_f32, copy16, wait_group};
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
    /// taps, `table` their [`super::t2_mask_table`]; `t2_steps(mw) ≤ S`,
    /// `left_x < mw`, `left_y < mh`; [`super::t2_shared_bytes`]`(mw, mh)`
    /// bytes of dynamic shared memory; [`T2_THREADS`] threads per block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tensor2d<const PRECISE: bool, const S: usize>(
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
        // SAFETY: the launch provides t2_shared_bytes(mw, mh) bytes: the
        // table (S steps per row: t2_steps(mw) ≤ S, and the host builds it
        // for S), then rows × tp floats of input tile.
        let smem: Shared<f32> = unsafe { dynamic() };
        // SAFETY: as above; table_floats is a multiple of 128 (16-byte
        // aligned).
        let tile = unsafe { Shared::<f32>::from_addr(smem.addr_of(table_floats)) };
        let mut i = t;
        while 4 * i < table_floats {
            // SAFETY: 4i + 4 ≤ table_floats; the table is a device
            // allocation (256-byte aligned); smem is 16-aligned.
            unsafe { copy16(smem.addr_of(4 * i), table.add(4 * i).cast::<u8>(), true) };
            i += T2_THREADS;
        }
        commit_group();
        let tiles_x = width.div_ceil(T2_TX);
        let tiles = tiles_x * height.div_ceil(T2_TY);
        let span_x = T2_TX + mw - 1;
        // This lane's first data element (row g of the warp's 16, input 2·tq)
        // and its table entry of row 0, step 0.
        let a_addr = tile.addr_of((16 * warp + g) * tp + 2 * tq);
        let b_addr = smem.addr_of(4 * lane);
        let row_bytes = (4 * tp) as u32;
        let mut b = block_idx_x() as usize;
        while b < tiles {
            let (x0, y0) = ((b % tiles_x) * T2_TX, (b / tiles_x) * T2_TY);
            let (ox, oy) = (x0 as isize - lx as isize, y0 as isize - ly as isize);
            let inside = ox >= 0 && oy >= 0 && ox as usize + span_x <= width && oy as usize + rows <= height;
            // One warp per tile row at a time, lanes along it; columns past
            // the halo take zeros.
            let mut r = warp;
            while r < rows {
                let src_row = input.wrapping_offset((oy + r as isize) * pitch as isize + ox);
                let mut c = lane;
                while c < cols {
                    let used = c < span_x;
                    let dst = tile.addr_of(r * tp + c);
                    if inside {
                        // SAFETY: when used, (ox + c, oy + r) lies inside the
                        // image; dst inside the tile.
                        unsafe { copy_f32(dst, src_row.wrapping_add(c), used) };
                    } else {
                        let v = match (
                            map_index_edge(ox + c as isize, width as isize, mode),
                            map_index_edge(oy + r as isize, height as isize, mode),
                        ) {
                            // SAFETY: map_index returns in-range indices.
                            (Some(x), Some(y)) if used => unsafe { *input.add(y * pitch + x) },
                            _ => 0.0,
                        };
                        // SAFETY: r < rows, c < cols ≤ tp.
                        unsafe { tile.write(r * tp + c, v) };
                    }
                    c += 32;
                }
                r += T2_THREADS / 32;
            }
            commit_group();
            // The table's group (first tile) and this tile's copies.
            wait_group::<0>();
            // SAFETY: every thread reaches it once per tile (block-uniform
            // loop); it also orders the table copy before its first use.
            unsafe { sync_threads() };
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
                    // SAFETY: rows 16·warp + g (+ 8) + mr < rows, columns
                    // 8p + 2·tq + 1 < cols: inside the tile.
                    let lo = unsafe { ld_shared_v2(row + (32 * p) as u32) };
                    // SAFETY: as above.
                    let hi = unsafe { ld_shared_v2(row + 8 * row_bytes + (32 * p) as u32) };
                    // a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4), a3 =
                    // (g + 8, t + 4): logical columns t, t + 4 are inputs 2t,
                    // 2t + 1.
                    let x = [lo[0], hi[0], lo[1], hi[1]];
                    let (xh, xl) = if PRECISE {
                        let s = [split_tf32(x[0]), split_tf32(x[1]), split_tf32(x[2]), split_tf32(x[3])];
                        ([s[0].0, s[1].0, s[2].0, s[3].0], [s[0].1, s[1].1, s[2].1, s[3].1])
                    } else {
                        ([x[0].to_bits(), x[1].to_bits(), x[2].to_bits(), x[3].to_bits()], [0; 4])
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
            // SAFETY: reached by every thread once per tile, as above.
            if unsafe { sync_threads_or(bad) } {
                // An infinity or NaN (from the inputs, or an overflow): the
                // plain sum, so they come out as the FMA kernels give them.
                let mut o = t;
                while o < T2_TX * T2_TY {
                    let (cx, cy) = (o % T2_TX, o / T2_TX);
                    let (gx, gy) = (x0 + cx, y0 + cy);
                    if gx < width && gy < height {
                        let mut acc = 0.0f32;
                        for j in 0..mh {
                            for i in 0..mw {
                                // SAFETY: cy + j < rows, cx + i < span_x; the
                                // mask holds mw·mh taps.
                                let (x, m) = unsafe { (tile.read((cy + j) * tp + cx + i), *mask.add(j * mw + i)) };
                                acc = f32::fma(x, m, acc);
                            }
                        }
                        // SAFETY: inside the image.
                        unsafe { *output.add(gy * pitch + gx) = acc };
                    }
                    o += T2_THREADS;
                }
            } else {
                let gy = y0 + 16 * warp + g;
                unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7] below T2_NT => {
                    // c0, c1: row g, columns 2t, 2t + 1; c2, c3: row g + 8.
                    let gx = x0 + 8 * k + 2 * tq;
                    for (v, (dy, dx)) in [(0, 0), (0, 1), (8, 0), (8, 1)].into_iter().enumerate() {
                        if gx + dx < width && gy + dy < height {
                            // SAFETY: inside the image.
                            unsafe { *output.add((gy + dy) * pitch + gx + dx) = big[k][v] };
                        }
                    }
                });
            }
            // SAFETY: as above; the next tile overwrites the tile buffer.
            unsafe { sync_threads() };
            b += grid_dim_x() as usize;
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
                let (size, left) = ((mw as usize, mh as usize), (left_x as usize, left_y as usize));
                // SAFETY: same contract.
                unsafe {
                    tensor2d::<$precise, $s>(input, output, (width, height, pitch), mask, size, left, mode, table)
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
    fn pitch_puts_a_half_warp_in_distinct_banks() {
        // Lanes g = 0 … 3, t = 0 … 3 load 8 bytes at row g, input 8p + 2t.
        for s in 2..=4 {
            let tp = t2_pitch(s);
            assert!(tp >= t2_cols(s));
            for p in 0..T2_NT + s - 1 {
                for row0 in [0, 8, 3] {
                    let mut banks = [0u32; 32];
                    for g in 0..4 {
                        for t in 0..4 {
                            for e in 0..2 {
                                banks[((row0 + g) * tp + 8 * p + 2 * t + e) % 32] += 1;
                            }
                        }
                    }
                    assert!(banks.iter().all(|&b| b == 1), "s {s} p {p}: {banks:?}");
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
                    // b0 = B(t, g), b1 = B(t + 4, g); logical rows t, t + 4
                    // are inputs 2t, 2t + 1: B(u, j) = m_r[8q + u − j].
                    for (e, u) in [2 * t, 2 * t + 1].into_iter().enumerate() {
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
                                    sum += x[i + r][8 * (k + q) + 2 * t + e] * b;
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
