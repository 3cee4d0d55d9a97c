//! 1D convolution on tensor cores (sm_80 and newer, `f32`).
//!
//! # The product as a matrix multiplication
//!
//! Outputs are grouped in columns of 16 consecutive outputs. For column
//! `c` of a tile whose inputs start at `X` (the tile's first output minus
//! `left`), output row `j` is
//!
//! ```text
//! y[16c + j] = Σ_u X[16c + u] · m[u − j],     u = 0 … 8Q − 1
//! ```
//!
//! with `m[k] = 0` outside `0 ≤ k < w` and `Q = 2·⌈(w + 15) / 16⌉` steps
//! of 8 (`u − j` covers every tap for each of the 16 rows). That is
//! `C = A·B` with `A[j][u] = m[u − j]` (16 × 8Q, a banded Toeplitz matrix
//! of the mask, the same for every column) and `B[u][c] = X[16c + u]` (a
//! Hankel matrix of the input), one `mma.m16n8k8` per step and 8 columns
//! (see [`crate::dev::mma`] for the fragments). A column's 16 outputs cost
//! `8Q` multiply-adds on the tensor core, `w + 15` rounded up, against the
//! `16w` useful ones: 89% useful at `w = 127`, 94% at `w = 255`.
//!
//! The `k` index of each step is permuted (the same permutation for `A`
//! and `B`, so the product is unchanged): lane `(g, t)` holds rows `2t` and
//! `2t + 1` of `B`, two neighbouring inputs, one 64-bit shared load. Its
//! `A` elements are then `m[8q + 2t − g]`, `m[8q + 2t + 1 − g]` and the
//! same 8 taps earlier, read from a table built once per mask
//! ([`tc_mask_table`]).
//!
//! # f32 accuracy from TF32 products
//!
//! A TF32 operand keeps 10 of `f32`'s 23 mantissa bits. Each operand is
//! split into a TF32 head and the remainder (`x = hᵪ + lᵪ`), and a product
//! is taken as `h_m·hᵪ + h_m·lᵪ + l_m·hᵪ` (three `mma`; the dropped
//! `l_m·lᵪ` is below `2^−21` of the product). The mask is split on the host
//! (heads rounded to nearest, remainders rounded to TF32 too); the inputs
//! in the kernel (the head rounded to nearest in two integer operations, the remainder passed
//! whole and truncated by the tensor core). The two small products
//! accumulate apart from the large one and are added once at the end, so
//! the large sum is rounded only `Q` times. Per product the error is at
//! most `2^−21 + 2^−22 + 2^−22` of its magnitude (the remainder's
//! truncation, the dropped product, the tap's remainder's rounding), which
//! with the `Q` roundings of the sum stays within the `(w + 2)·2^−24`
//! bound of an `f32` dot product for every mask of at least
//! [`TC_MIN_TAPS`] taps. `conv1d_tensor_tf32_f32` is the fast precision:
//! one `mma` per step on the raw inputs (truncated to TF32 by the tensor
//! core).
//!
//! # Two products for wide masks
//!
//! From [`TC2_MIN_TAPS`] taps the `f32`-accurate kernel is
//! `conv1d_tensor_2p_f32`: the head product as above, and both small ones in
//! one bf16 `mma.m16n8k16` (the same instruction time as a TF32
//! `m16n8k8`, twice the `k`): `k` rows 0–7 of its `B` are the inputs'
//! remainders `lᵪ`, rows 8–15 the inputs themselves, and `A` holds `h_m`
//! against the first and `l_m = m − h_m` against the second, all rounded
//! to bf16 (8 significant bits). That is `h_m·lᵪ + l_m·x`, exactly
//! `m·x − h_m·hᵪ` before the roundings, which cost at most `2·2^−8` of
//! each small product (each at most `2^−11` of `|m·x|`): `2^−17` of
//! `|m·x|` in all, eight times the three-product split's `2^−20` (the
//! table: [`tc_mask_table2`]). With the `Q` roundings of the sum that fits
//! the `(w + 2)·2^−24` bound once `w ≥ 130 + 2Q` ([`tc2_fits`]), from 182
//! taps on. Two `mma` instead of three per step: 7–14% faster from 192
//! taps on the H100 (`docs/wide-masks.md`).
//!
//! A tile with an infinite or NaN output is computed again with plain
//! `f32` fused multiply-adds, so infinities and NaNs come out exactly as
//! the FMA kernels give them: the band's zeros would otherwise turn `0·∞`
//! into NaNs the plain sum does not have, and an input within `2^−11` of
//! `f32::MAX` would round to an infinite head.
//!
//! # Tiles
//!
//! A block of [`TC_WARPS`] warps computes [`TC_TILE`] outputs per tile:
//! each warp [`TC_COLUMN_TILES`] groups of 8 columns. The block copies the
//! mask table (built once per mask by [`tc_mask_table`]) into shared memory
//! once, then walks its tiles grid-stride with two input buffers: the next
//! tile's inputs arrive by `cp.async` while the current one is computed
//! (tiles at the ends of the input load through the boundary mode).
//! Inputs are stored 24 floats per 16 ([`tc_padded`]), so the four
//! columns a half-warp reads (16 floats apart) fall in four different
//! bank groups.

/// Warps per block.
pub const TC_WARPS: usize = 4;
/// Threads per block.
pub const TC_THREADS: usize = 32 * TC_WARPS;
/// Groups of 8 columns (one `mma` tile each) per warp.
pub const TC_COLUMN_TILES: usize = 8;
/// Outputs per block tile: 16 per column, 8 columns per group.
pub const TC_TILE: usize = 16 * 8 * TC_COLUMN_TILES * TC_WARPS;

/// Steps of 8 taps the kernel takes for a `w`-tap mask: `w + 15` rounded
/// up to a multiple of 16 (an even number of steps).
pub const fn tc_ksteps(w: usize) -> usize {
    2 * (w + 15).div_ceil(16)
}

/// Inputs one tile reads: its outputs plus the halo, `TC_TILE + 8Q`
/// (a multiple of 16).
pub const fn tc_span(w: usize) -> usize {
    TC_TILE + 8 * tc_ksteps(w)
}

/// Where input `i` of a tile sits in the kernel's shared buffer: 24
/// floats per 16.
pub const fn tc_padded(i: usize) -> usize {
    24 * (i / 16) + i % 16
}

/// Floats of the mask table: per step, the `A` fragment's heads for the 32
/// lanes (four floats each), then their remainders.
pub const fn tc_table_floats(w: usize) -> usize {
    tc_ksteps(w) * 2 * 32 * 4
}

/// Dynamic shared memory of the tensor-core kernels for a `w`-tap mask,
/// bytes: the mask table, then two buffers of padded inputs (one filled
/// while the other is computed).
pub const fn tc_shared_bytes(w: usize) -> usize {
    4 * (tc_table_floats(w) + 2 * tc_padded(tc_span(w)))
}

/// The narrowest mask the tensor-core kernels take. Narrower masks run at
/// the memory floor on the FMA kernels already, and below it the split
/// products' error (up to `2^−20` of a product's magnitude) could exceed
/// the `(w + 2)·2^−24` bound of an `f32` dot product of `w` terms.
pub const TC_MIN_TAPS: usize = 32;

/// The products per step of a tensor-core kernel, its const parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TcProducts {
    /// One TF32 product on the raw inputs (`Precision::Tf32`).
    One = 1,
    /// The head product in TF32 and both small ones in one bf16 `mma`
    /// (`f32` accuracy from [`TC2_MIN_TAPS`] taps).
    Two = 2,
    /// Three TF32 products of split operands (`f32` accuracy from
    /// [`TC_MIN_TAPS`] taps).
    Three = 3,
}

/// Whether the two-product kernel's error fits the `(w + 2)·2^−24` bound
/// of an `f32` dot product for a `w`-tap mask, in units of `2^−24` of
/// `Σ|terms|`: at most 130 for the products (`(2^−7 + 2^−16)·(1 + 2^−11)`
/// of the two small products, each at most `2^−11` of the term: the bf16
/// roundings of both their factors), 2 per rounding (toward zero) of the
/// `Q` steps' sums, and 2 for the small sum's roundings and the final
/// addition: `130 + 2Q + 2 ≤ w + 2`.
pub const fn tc2_fits(w: usize) -> bool {
    130 + 2 * tc_ksteps(w) + 2 <= w + 2
}

/// The narrowest mask the `f32`-accurate kernel takes with two products
/// per step ([`TcProducts::Two`]); below, three. [`tc2_fits`] holds from
/// 182 taps.
pub const TC2_MIN_TAPS: usize = 192;

/// `x` rounded to bf16 (8 significant bits) to nearest, ties to even, as
/// `cvt.rn.bf16x2.f32` does: the upper 16 bits of the result. A NaN stays
/// a (quiet) NaN.
pub fn round_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// The two-product kernel's mask table ([`TcProducts::Two`]) for the
/// correlation taps `taps`: per step `q` and lane `(g, t)`, the TF32 `A`
/// fragment's heads as in [`tc_mask_table`] (four floats at
/// `4·(64q + lane)`), then the bf16 `A` fragment of the small products,
/// four 32-bit words at `4·(64q + 32 + lane)` (two bf16 each, the lower
/// column in the low half): `h[8q + 2t − g]` and `h[8q + 2t + 1 − g]`,
/// the same 8 taps earlier (rows `g + 8`), then `l` at the same taps, with
/// `h` the tap's TF32 head and `l = m − h` (exact), both rounded to bf16.
/// The words are stored as the `f32` of their bits.
/// `tc_table_floats(taps.len())` floats.
pub fn tc_mask_table2(taps: &[f32], table: &mut [f32]) {
    let pair = |lo: f32, hi: f32| f32::from_bits(round_bf16(lo) as u32 | (round_bf16(hi) as u32) << 16);
    tc_fill_table(taps, table, |tap, base| {
        let head = |k: isize| round_tf32(tap(k));
        let rest = |k: isize| tap(k) - round_tf32(tap(k));
        [
            pair(head(base), head(base + 1)),
            pair(head(base - 8), head(base - 7)),
            pair(rest(base), rest(base + 1)),
            pair(rest(base - 8), rest(base - 7)),
        ]
    });
}

/// The walk both mask tables share: per step `q` and lane `(g, t)`, the
/// four TF32 heads of taps `base`, `base − 8`, `base + 1`, `base − 7`
/// (`base = 8q + 2t − g`, zero outside the mask) at `4·(64q + lane)`, and
/// `second(tap, base)` at `4·(64q + 32 + lane)`.
fn tc_fill_table(taps: &[f32], table: &mut [f32], second: impl Fn(&dyn Fn(isize) -> f32, isize) -> [f32; 4]) {
    let w = taps.len();
    let tap = |k: isize| if k >= 0 && (k as usize) < w { taps[k as usize] } else { 0.0 };
    for (q, step) in table.chunks_exact_mut(2 * 32 * 4).enumerate() {
        let (heads, rest) = step.split_at_mut(32 * 4);
        for lane in 0..32 {
            let (g, t) = ((lane / 4) as isize, (lane % 4) as isize);
            let base = 8 * q as isize + 2 * t - g;
            for (r, k) in [base, base - 8, base + 1, base - 7].into_iter().enumerate() {
                heads[4 * lane + r] = round_tf32(tap(k));
            }
            rest[4 * lane..4 * lane + 4].copy_from_slice(&second(&tap, base));
        }
    }
}

/// Floats (64 bytes) that each tile's first input is aligned to: every
/// warp's 512-byte run of copies then covers 16 whole 32-byte sectors.
/// 16-byte alignment (4 floats, what `cp.async` needs) can start a run
/// halfway into a sector (17 sectors, two half used): it left w = 40 and 56
/// at 77% of the floor, against 85% and 80% at 64 bytes
/// (`docs/wide-masks.md`).
pub const TC_INPUT_ALIGN: usize = 16;

/// Zero taps the tensor-core kernels put in front of a `w`-tap mask with
/// `left` taps left of its centre: the fewest that make `left` a multiple
/// of 8 without adding a step ([`tc_ksteps`]), else none. The tiles'
/// first inputs are 64-byte aligned ([`TC_INPUT_ALIGN`]), so their first
/// outputs sit `left + pad` floats further: a multiple of 8 starts every
/// lane's run of 8 stores on a 32-byte sector (4 sectors a store
/// instruction instead of 8) when the output lies as the input does
/// within its sectors, as whole buffers do. 56 taps (`left` 28) run as 60 and 63
/// (`left` 31) as 64, with the same steps; the table holds the padded
/// taps ([`tc_mask_table`] of them), and the kernels shift the band by
/// `pad`.
pub const fn tc_front_pad(w: usize, left: usize) -> usize {
    let pad = (8 - left % 8) % 8;
    if tc_ksteps(w + pad) == tc_ksteps(w) { pad } else { 0 }
}

/// `x` rounded to TF32 (10 mantissa bits), to nearest with ties away from
/// zero (`cvt.rna.tf32.f32`), or truncated where rounding would overflow
/// to an infinity. Non-finite values are returned unchanged.
pub fn round_tf32(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let rounded = f32::from_bits(x.to_bits().wrapping_add(0x1000) & 0xffff_e000);
    if rounded.is_finite() { rounded } else { f32::from_bits(x.to_bits() & 0xffff_e000) }
}

/// The mask table of the tensor-core kernels for the correlation taps
/// `taps`: step `q`'s `A` fragment for lane `(g, t)` (`g = lane / 4`,
/// `t = lane % 4`) is `m[8q + 2t − g]`, `m[8q + 2t − g − 8]`,
/// `m[8q + 2t + 1 − g]`, `m[8q + 2t + 1 − g − 8]` (zero outside the mask;
/// rows `g`, `g + 8` and the permuted columns `2t`, `2t + 1`). Its TF32
/// heads ([`round_tf32`]) are the four floats at `4·(64q + lane)`, and the
/// remainders, themselves rounded to TF32, the four at `4·(64q + 32 +
/// lane)`, so each warp reads a step's heads and remainders with two
/// conflict-free 128-bit loads straight into the registers `mma` takes.
/// `tc_table_floats(taps.len())` floats.
pub fn tc_mask_table(taps: &[f32], table: &mut [f32]) {
    tc_fill_table(taps, table, |tap, base| {
        [base, base - 8, base + 1, base - 7].map(|k| round_tf32(tap(k) - round_tf32(tap(k))))
    });
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
mod kernels {
    use super::{
        TC_COLUMN_TILES, TC_INPUT_ALIGN, TC_THREADS, TC_TILE, TcProducts, tc_front_pad, tc_ksteps, tc_padded, tc_span,
        tc_table_floats,
    };
    use crate::conv::boundary::map_index;
    use crate::conv::elem::{ConvElem, unroll};
    use crate::dev::index::{block_idx_x, grid_dim_x, thread_idx_x};
    use crate::dev::mma::{ld_shared_v2, ld_shared_v4, mma_bf16, mma_tf32, pack_bf16x2, split_tf32, sync_threads_or};
    use crate::dev::pipeline::{commit_group, copy16, wait_group};
    use crate::dev::shared::{Shared, dynamic};
    use crate::dev::sync::sync_threads;

    /// Whether `x` is an infinity or a NaN.
    #[inline(always)]
    fn non_finite(x: f32) -> bool {
        x.to_bits() & 0x7f80_0000 == 0x7f80_0000
    }

    /// The tensor-core kernel (see the module documentation); `P` is a
    /// [`TcProducts`] as `u8`: the products per step.
    ///
    /// Tiles start at `TC_TILE·k − sh`, with `sh <` [`TC_INPUT_ALIGN`] chosen so
    /// that every tile's first input is 64-byte aligned: interior tiles then arrive by
    /// asynchronous 16-byte copies (`cp.async`) into one of two buffers
    /// while the block computes the other. Tiles at the ends load through
    /// the boundary mode.
    ///
    /// # Safety
    /// `input`, `output` valid for `n` elements, not overlapping; `mask`
    /// the `w` correlation taps, `table` the [`super::tc_mask_table`] for
    /// `P` of those taps behind [`tc_front_pad`]`(w, left)` zeros;
    /// `left < w`; [`super::tc_shared_bytes`]`(w)` bytes of dynamic shared
    /// memory; [`TC_THREADS`] threads per block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tensor<const P: u8>(
        input: *const f32,
        output: *mut f32,
        n: usize,
        mask: *const f32,
        w: usize,
        left: usize,
        mode: u32,
        table: *const f32,
    ) {
        const NT: usize = TC_COLUMN_TILES;
        const ONE: u8 = TcProducts::One as u8;
        const THREE: u8 = TcProducts::Three as u8;
        let t = thread_idx_x() as usize;
        let (lane, warp) = (t % 32, t / 32);
        let (g, tq) = (lane / 4, lane % 4);
        let steps = tc_ksteps(w);
        let span = tc_span(w);
        let table_floats = tc_table_floats(w);
        let buf_floats = tc_padded(span);
        // SAFETY: the launch provides tc_shared_bytes(w): the table, then
        // two buffers of tc_padded(span) inputs; every index below stays
        // inside.
        let smem: Shared<f32> = unsafe { dynamic() };
        // SAFETY: as above (16-byte aligned: the table is 1024 bytes per step).
        let buf = |k: usize| unsafe { Shared::<f32>::from_addr(smem.addr_of(table_floats + k * buf_floats)) };
        // The table by 16-byte asynchronous copies, a group of its own that
        // the first tile's wait covers.
        let mut i = t;
        while 4 * i < table_floats {
            // SAFETY: 4i + 4 ≤ table_floats (a multiple of 4); the table is
            // a device allocation (256-byte aligned); smem is 16-aligned.
            unsafe { copy16(smem.addr_of(4 * i), table.add(4 * i).cast::<u8>(), true) };
            i += TC_THREADS;
        }
        commit_group();
        // The band as the table holds it: `pad` zero taps in front.
        let pad = tc_front_pad(w, left);
        let left = left + pad;
        // Tile b covers outputs from TC_TILE·b − sh; its inputs from that
        // minus `left`, which `sh` makes 64-byte aligned.
        let misaligned = (input as usize / 4) % TC_INPUT_ALIGN;
        let sh = (misaligned + TC_INPUT_ALIGN - left % TC_INPUT_ALIGN) % TC_INPUT_ALIGN;
        let tiles = (n + sh).div_ceil(TC_TILE);
        let first = |b: usize| (b * TC_TILE) as isize - sh as isize;
        let interior = |b: usize| {
            let origin = first(b) - left as isize;
            origin >= 0 && origin as usize + span <= n
        };
        // Starts the copies of interior tile b into `dst`.
        let prefetch = |b: usize, dst: Shared<f32>| {
            // SAFETY: interior(b): [origin, origin + span) lies inside the
            // input, origin 64-byte aligned (see sh); span is a multiple of
            // 16, and tc_padded keeps groups of 16 floats together.
            let p = unsafe { input.offset(first(b) - left as isize) };
            let mut k = t;
            while k < span / 4 {
                // SAFETY: see above.
                unsafe { copy16(dst.addr_of(tc_padded(4 * k)), p.add(4 * k).cast::<u8>(), true) };
                k += TC_THREADS;
            }
        };
        // This lane's first B element (column g of the warp's first group,
        // row 2·tq), and its table entry of step 0.
        let col0 = warp * 8 * NT + g;
        let a_addr = smem.addr_of(4 * lane);
        let grid = grid_dim_x() as usize;
        let mut b = block_idx_x() as usize;
        let mut cur = 0;
        if b < tiles && interior(b) {
            prefetch(b, buf(0));
        }
        commit_group();
        while b < tiles {
            let next = b + grid;
            if next < tiles && interior(next) {
                prefetch(next, buf(cur ^ 1));
            }
            commit_group();
            let data = buf(cur);
            // Every group but the one just committed: the table and tile
            // b's copies.
            wait_group::<1>();
            if !interior(b) {
                let origin = first(b) - left as isize;
                let mut i = t;
                while i < span {
                    let x = match map_index(origin + i as isize, n as isize, mode) {
                        // SAFETY: map_index returns indices below n.
                        Some(k) => unsafe { *input.add(k) },
                        None => 0.0,
                    };
                    // SAFETY: tc_padded(i) < buf_floats.
                    unsafe { data.write(tc_padded(i), x) };
                    i += TC_THREADS;
                }
            }
            // SAFETY: every thread reaches it once per tile (block-uniform
            // loop); it also orders the table copy before its first use.
            unsafe { sync_threads() };
            let b_addr = data.addr_of(24 * col0 + 2 * tq);
            let mut big = [[0.0f32; 4]; NT];
            let mut small = [[0.0f32; 4]; NT];
            // Two steps per pass: step 2p starts 24p floats in (one padded
            // group of 16), step 2p + 1 eight floats further.
            for p in 0..steps / 2 {
                for half in 0..2 {
                    let q = 2 * p + half;
                    let off = (96 * p + 32 * half) as u32;
                    // SAFETY: step q's heads and remainders for this lane,
                    // inside the table.
                    let a_hi = unsafe { ld_shared_v4(a_addr + (q * 1024) as u32) };
                    let a_lo = if P != ONE {
                        // SAFETY: as above (the remainders' half, or the
                        // packed bf16 fragment of the two-product table).
                        unsafe { ld_shared_v4(a_addr + (q * 1024 + 512) as u32) }
                    } else {
                        [0; 4]
                    };
                    // Unrolled by hand: the build caps LLVM's unrolling at
                    // 4, and a loop left rolled would index the
                    // accumulators at run time (local memory).
                    unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7] below NT => {
                        // SAFETY: rows 8q + 2·tq, + 1 of column col0 + 8k,
                        // below span (see tc_span).
                        let x = unsafe { ld_shared_v2(b_addr + off + (k * 4 * 24 * 8) as u32) };
                        if P == ONE {
                            // SAFETY: the whole warp runs these (no
                            // divergence inside the step loop).
                            unsafe { mma_tf32(&mut big[k], a_hi, [x[0].to_bits(), x[1].to_bits()]) };
                        } else {
                            let (h0, l0) = split_tf32(x[0]);
                            let (h1, l1) = split_tf32(x[1]);
                            // SAFETY: as above.
                            unsafe { mma_tf32(&mut big[k], a_hi, [h0, h1]) };
                            if P == THREE {
                                // SAFETY: as above.
                                unsafe {
                                    mma_tf32(&mut small[k], a_hi, [l0, l1]);
                                    mma_tf32(&mut small[k], a_lo, [h0, h1]);
                                }
                            } else {
                                // B rows 2·tq, 2·tq + 1: the remainders; rows
                                // 8 + 2·tq, 9 + 2·tq: the inputs themselves,
                                // both rounded to bf16 (tc_mask_table2).
                                let lo = pack_bf16x2(f32::from_bits(l0), f32::from_bits(l1));
                                let whole = pack_bf16x2(x[0], x[1]);
                                // SAFETY: as above.
                                unsafe { mma_bf16(&mut small[k], a_lo, [lo, whole]) };
                            }
                        }
                    });
                }
            }
            let mut bad = false;
            unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7] below NT => {
                for r in 0..4 {
                    if P != ONE {
                        big[k][r] += small[k][r];
                    }
                    bad |= non_finite(big[k][r]);
                }
            });
            let tile_first = first(b);
            // SAFETY: reached by every thread once per tile, as above.
            if unsafe { sync_threads_or(bad) } {
                // An infinity or NaN (from the inputs, or an overflow): the
                // plain sum, so they come out as the FMA kernels give them.
                let mut o = t;
                while o < TC_TILE {
                    let at = tile_first + o as isize;
                    if at >= 0 && (at as usize) < n {
                        let mut acc = 0.0f32;
                        for j in 0..w {
                            // SAFETY: o + pad + j < TC_TILE + pad + w − 1 < span
                            // (tc_front_pad keeps the steps); j < w.
                            let x = unsafe { data.read(tc_padded(o + pad + j)) };
                            // SAFETY: j < w.
                            acc = f32::fma(x, unsafe { *mask.add(j) }, acc);
                        }
                        // SAFETY: 0 ≤ at < n.
                        unsafe { *output.add(at as usize) = acc };
                    }
                    o += TC_THREADS;
                }
            } else if tile_first >= 0 && tile_first as usize + TC_TILE <= n {
                // Every output of the tile is inside: one base, fixed
                // offsets (outputs 16·column + row as below), no checks.
                // SAFETY: tile_first + TC_TILE ≤ n, and every offset below
                // is under TC_TILE.
                let base = unsafe { output.add(tile_first as usize + 16 * warp * 8 * NT + 32 * tq + g) };
                unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7] below NT => {
                    for (r, d) in [0usize, 16, 8, 24].into_iter().enumerate() {
                        // SAFETY: see above.
                        unsafe { *base.add(128 * k + d) = big[k][r] };
                    }
                });
            } else {
                unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7] below NT => {
                    // Column 8k + 2·tq (+1) of the warp's group, rows g and
                    // g + 8: outputs 16·column + row.
                    let o = tile_first + (16 * (warp * 8 * NT + 8 * k) + 32 * tq + g) as isize;
                    for (r, d) in [0isize, 16, 8, 24].into_iter().enumerate() {
                        let at = o + d;
                        if at >= 0 && (at as usize) < n {
                            // SAFETY: 0 ≤ at < n.
                            unsafe { *output.add(at as usize) = big[k][r] };
                        }
                    }
                });
            }
            // SAFETY: as above; the next pass refills this buffer.
            unsafe { sync_threads() };
            cur ^= 1;
            b = next;
        }
    }

    macro_rules! tensor_kernel {
        ($name:ident, $products:expr) => {
            /// See the module documentation (`conv::tensor`).
            ///
            /// # Safety
            /// As the module's `tensor` function.
            #[unsafe(no_mangle)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const f32,
                output: *mut f32,
                n: usize,
                mask: *const f32,
                w: u32,
                left: u32,
                mode: u32,
                table: *const f32,
            ) {
                crate::dev::sync::grid_dependency_wait();
                // SAFETY: same contract.
                unsafe { tensor::<{ $products as u8 }>(input, output, n, mask, w as usize, left as usize, mode, table) }
            }
        };
    }

    tensor_kernel!(conv1d_tensor_f32, TcProducts::Three);
    tensor_kernel!(conv1d_tensor_2p_f32, TcProducts::Two);
    tensor_kernel!(conv1d_tensor_tf32_f32, TcProducts::One);
}

/// Throughput probes: the peak rates the convolution kernels are measured
/// against (`coalesce bench conv` reports them in its compute model).
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
mod peaks {
    use crate::conv::elem::ConvElem;
    use crate::dev::index::{block_dim_x, block_idx_x, thread_idx_x};
    use crate::dev::mma::mma_tf32;

    /// Independent accumulator chains per thread.
    const CHAINS: usize = 8;

    /// `iters × 8` TF32 `mma.m16n8k8` per warp on register operands (8
    /// independent accumulators); each thread writes its sum to `out`.
    ///
    /// # Safety
    /// `out` valid for one `f32` per launched thread.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn tc_peak_mma_tf32(out: *mut f32, iters: u32, seed: f32) {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
        let x = seed + i as f32;
        let a = [x.to_bits(), (x * 0.5).to_bits(), (x * 0.25).to_bits(), (x * 0.125).to_bits()];
        let b = [(1.0 / (x + 1.0)).to_bits(), (0.5 / (x + 1.0)).to_bits()];
        let mut acc = [[0.0f32; 4]; CHAINS];
        for _ in 0..iters {
            for c in acc.iter_mut() {
                // SAFETY: every lane of every warp runs the loop together.
                unsafe { mma_tf32(c, a, b) };
            }
        }
        let mut s = 0.0f32;
        for c in acc {
            s += c[0] + c[1] + c[2] + c[3];
        }
        // SAFETY: one element per thread.
        unsafe { *out.add(i) = s };
    }

    /// `iters × 8` fused multiply-adds per thread (8 independent chains).
    ///
    /// # Safety
    /// `out` valid for one `f32` per launched thread.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn tc_peak_ffma(out: *mut f32, iters: u32, seed: f32) {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
        let x = seed + i as f32;
        let (m, k) = (1.0 - 1.0 / (x + 2.0), 1.0 / (x + 3.0));
        let mut acc = [0.0f32; CHAINS];
        for (j, a) in acc.iter_mut().enumerate() {
            *a = x + j as f32;
        }
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = f32::fma(*a, m, k);
            }
        }
        // SAFETY: one element per thread.
        unsafe { *out.add(i) = acc.iter().sum() };
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn steps_cover_every_tap_of_every_row() {
        for w in 1..600 {
            let q = tc_ksteps(w);
            assert!(8 * q >= w + 15 && q.is_multiple_of(2) && 8 * q < w + 15 + 16, "w = {w}");
            assert_eq!(tc_span(w) % 16, 0);
        }
    }

    #[test]
    fn front_pad_aligns_left_without_a_step() {
        let mut padded = 0;
        for w in TC_MIN_TAPS..600 {
            for left in 0..w {
                let pad = tc_front_pad(w, left);
                assert_eq!(tc_ksteps(w + pad), tc_ksteps(w), "w {w} left {left}");
                // The padded band still reaches every tap of every row.
                assert!(8 * tc_ksteps(w) >= w + pad + 15, "w {w} left {left}");
                if pad == 0 {
                    // Aligned already, or any pad would add a step.
                    let need = (8 - left % 8) % 8;
                    assert!(need == 0 || tc_ksteps(w + need) > tc_ksteps(w), "w {w} left {left}");
                } else {
                    assert!(pad < 8 && (left + pad).is_multiple_of(8), "w {w} left {left} pad {pad}");
                    padded += 1;
                }
            }
        }
        assert!(padded > 0);
        // The widths of the bench: correlation (left w/2) and convolution
        // (left (w − 1)/2).
        assert_eq!((tc_front_pad(56, 28), tc_front_pad(63, 31), tc_front_pad(127, 63)), (4, 1, 1));
        assert_eq!((tc_front_pad(56, 27), tc_front_pad(64, 32), tc_front_pad(96, 48)), (5, 0, 0));
    }

    #[test]
    fn padding_puts_a_half_warp_in_distinct_banks() {
        // Lanes g = 0..3 (t = 0..3) of a half-warp read 8 bytes at input
        // 16·(c0 + g) + 8q + 2t: the 16 reads cover 32 distinct banks.
        for c0 in [0usize, 8, 64] {
            for q in 0..8 {
                for half in 0..2 {
                    let mut banks = [0u32; 32];
                    for g in 4 * half..4 * half + 4 {
                        for t in 0..4 {
                            let i = 16 * (c0 + g) + 8 * q + 2 * t;
                            for e in 0..2 {
                                banks[tc_padded(i + e) % 32] += 1;
                            }
                        }
                    }
                    assert!(banks.iter().all(|&b| b == 1), "c0 {c0} q {q} half {half}: {banks:?}");
                }
            }
        }
    }

    /// The two-product kernel's fragments, put together as the PTX ISA lays
    /// them out and multiplied on the CPU (exactly, in `f64`), compute the
    /// correlation of a column of 16 outputs within `2^−17` of each term
    /// (the bound [`tc2_fits`] takes): the `A` tables and the `B` registers
    /// the kernel builds from each lane's two inputs agree on every `k` row.
    #[test]
    fn two_product_fragments_compute_the_correlation() {
        let w = 61;
        let steps = tc_ksteps(w);
        let taps: Vec<f32> = (0..w).map(|k| (1.3 + k as f32 * 0.71).sin() * 3.7 + 0.01 * k as f32).collect();
        let mut table = vec![0.0f32; tc_table_floats(w)];
        tc_mask_table2(&taps, &mut table);
        // Eight columns of 16 outputs: column c reads X[16c + u].
        let x: Vec<f32> = (0..16 * 8 + 8 * steps).map(|i| (0.37 + i as f32 * 1.13).cos() * 1.9e-3).collect();
        let bf = |h: u32| f32::from_bits(h << 16) as f64;
        for c in 0..8 {
            let mut out = [0.0f64; 16];
            for q in 0..steps {
                for lane in 0..32 {
                    let (g, t) = (lane / 4, lane % 4);
                    if g != c {
                        continue;
                    }
                    // B: this lane's inputs 8q + 2t, 8q + 2t + 1 of column g.
                    let u0 = 8 * q + 2 * t;
                    let xs = [x[16 * c + u0], x[16 * c + u0 + 1]];
                    // The kernel's split (dev::mma::split_tf32): the head
                    // rounded to nearest, ties away, as round_tf32.
                    let split = xs.map(|v| (round_tf32(v).to_bits(), (v - round_tf32(v)).to_bits()));
                    // TF32 product: A rows g, g + 8 at the permuted columns
                    // t (input u0) and t + 4 (input u0 + 1); the tensor
                    // core reads 10 mantissa bits of each operand.
                    let tf = |bits: u32| f32::from_bits(bits & 0xffff_e000) as f64;
                    // bf16 product: k rows 2t, 2t + 1 meet the remainders,
                    // 8 + 2t, 9 + 2t the inputs, all rounded to bf16.
                    let b_lo = split.map(|(_, l)| bf(round_bf16(f32::from_bits(l)) as u32));
                    let b_x = xs.map(|v| bf(round_bf16(v) as u32));
                    // A rows g and g + 8, the k entries this lane holds
                    // (rows j of A sit in the lanes of group j mod 8, B
                    // column n in those of group n: the lanes of group c
                    // give rows c and c + 8 of column c).
                    for (row, word_hi, word_lo, regs) in [(g, 0, 2, [0, 2]), (g + 8, 1, 3, [1, 3])] {
                        let heads = &table[4 * (64 * q + lane)..][..4];
                        let cross = &table[4 * (64 * q + 32 + lane)..][..4];
                        let a_tf = regs.map(|r| tf(heads[r].to_bits()));
                        let pair = |v: f32| [bf(v.to_bits() & 0xffff), bf(v.to_bits() >> 16)];
                        let (a_h, a_l) = (pair(cross[word_hi]), pair(cross[word_lo]));
                        for e in 0..2 {
                            out[row] += a_tf[e] * tf(split[e].0) + a_h[e] * b_lo[e] + a_l[e] * b_x[e];
                        }
                    }
                }
            }
            // Rows c and c + 8 of column c: over the 8 columns, every row.
            for row in [c, c + 8] {
                let (mut want, mut abs) = (0.0f64, 0.0f64);
                for u in row..(row + w) {
                    let term = x[16 * c + u] as f64 * taps[u - row] as f64;
                    want += term;
                    abs += term.abs();
                }
                let err = (out[row] - want).abs();
                assert!(
                    err <= abs * 2f64.powi(-17) * 1.01,
                    "column {c} row {row}: {} vs {want} ({err:e} of {abs:e})",
                    out[row]
                );
            }
        }
    }

    #[test]
    fn two_products_fit_the_bound_from_their_width() {
        assert!(!tc2_fits(181) && tc2_fits(182));
        for w in 182..20_000 {
            assert!(tc2_fits(w), "w = {w}");
        }
        assert!(tc2_fits(TC2_MIN_TAPS) && TC2_MIN_TAPS >= TC_MIN_TAPS);
    }

    #[test]
    fn bf16_rounding_is_to_nearest_even() {
        assert_eq!(round_bf16(1.0), 0x3f80);
        // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: to the even one, 1.
        assert_eq!(round_bf16(1.0 + 2f32.powi(-8)), 0x3f80);
        // 1 + 3·2^-8 ties between 1 + 2^-7 (odd) and 1 + 2^-6: up.
        assert_eq!(round_bf16(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
        assert_eq!(round_bf16(1.0 + 2f32.powi(-8) + 2f32.powi(-20)), 0x3f81);
        assert_eq!(round_bf16(-2.5), 0xc020);
        assert_eq!(round_bf16(f32::MAX), 0x7f80);
        assert!(f32::from_bits((round_bf16(f32::NAN) as u32) << 16).is_nan());
        for x in [0.1f32, -3.7e-20, 6.02e23, 1.0e-38, 3.0e38] {
            let r = f32::from_bits((round_bf16(x) as u32) << 16);
            assert!(((x as f64 - r as f64) / x as f64).abs() <= 2f64.powi(-8), "{x}");
        }
    }

    #[test]
    fn two_product_table_holds_heads_and_packed_small_factors() {
        let taps: Vec<f32> = (0..41).map(|k| (0.3 + k as f32 * 0.77).sin() * 1.7e3).collect();
        let w = taps.len();
        let mut three = vec![f32::NAN; tc_table_floats(w)];
        let mut two = vec![f32::NAN; tc_table_floats(w)];
        tc_mask_table(&taps, &mut three);
        tc_mask_table2(&taps, &mut two);
        let bf = |bits: u32| f32::from_bits(bits << 16) as f64;
        for q in 0..tc_ksteps(w) {
            for lane in 0..32 {
                let (g, t) = (lane / 4, lane % 4);
                // The heads are the three-product table's.
                for r in 0..4 {
                    let i = 4 * (64 * q + lane) + r;
                    assert_eq!(two[i].to_bits(), three[i].to_bits(), "q {q} lane {lane} r {r}");
                }
                // The bf16 fragment: A rows g (words 0, 2) and g + 8
                // (words 1, 3), k columns 2t, 2t + 1 (heads, words 0 and
                // 1) and 8 + 2t, 9 + 2t (remainders, words 2 and 3); k
                // column c < 8 meets input 8q + c, so tap 8q + c − row.
                for (word, (row, rest)) in
                    [(g, false), (g + 8, false), (g, true), (g + 8, true)].into_iter().enumerate()
                {
                    let bits = two[4 * (64 * q + 32 + lane) + word].to_bits();
                    for (e, half) in [bits & 0xffff, bits >> 16].into_iter().enumerate() {
                        let u = 8 * q + 2 * t + e;
                        let m = if u >= row && u - row < w { taps[u - row] } else { 0.0 };
                        let h = round_tf32(m);
                        let want = if rest { (m - h) as f64 } else { h as f64 };
                        let got = bf(half);
                        assert!(
                            (got - want).abs() <= want.abs() * 2f64.powi(-8),
                            "q {q} lane {lane} word {word} e {e}: {got} vs {want}"
                        );
                        if want == 0.0 {
                            assert_eq!(got, 0.0);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn tf32_rounding_keeps_ten_bits() {
        assert_eq!(round_tf32(1.0), 1.0);
        // 1 + 2^-11 is a tie: away from zero.
        assert_eq!(round_tf32(1.0 + 2f32.powi(-11)), 1.0 + 2f32.powi(-10));
        assert_eq!(round_tf32(1.0 + 2f32.powi(-12)), 1.0);
        assert_eq!(round_tf32(-(1.0 + 2f32.powi(-11))), -(1.0 + 2f32.powi(-10)));
        assert_eq!(round_tf32(f32::MAX), f32::from_bits(f32::MAX.to_bits() & 0xffff_e000));
        assert!(round_tf32(f32::NAN).is_nan());
        assert_eq!(round_tf32(f32::INFINITY), f32::INFINITY);
        for x in [0.1f32, -3.7e-20, 6.02e23, 1.0e-38] {
            let h = round_tf32(x);
            assert_eq!(h.to_bits() & 0x1fff, 0);
            assert!(((x - h) / x).abs() <= 2f32.powi(-11), "{x}");
        }
    }

    #[test]
    fn table_holds_each_lanes_fragment_split() {
        let taps: Vec<f32> = (0..37).map(|k| 0.1 + k as f32 * 0.37).collect();
        let w = taps.len();
        let mut table = vec![f32::NAN; tc_table_floats(w)];
        tc_mask_table(&taps, &mut table);
        for q in 0..tc_ksteps(w) {
            for lane in 0..32 {
                let (g, t) = (lane / 4, lane % 4);
                // The mma fragment of A: (row, logical column) per
                // register; logical column c of step q is input row
                // 8q + 2c for c < 4 and 8q + 2(c − 4) + 1 above.
                let cells = [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)];
                for (r, (row, col)) in cells.into_iter().enumerate() {
                    let u = 8 * q + if col < 4 { 2 * col } else { 2 * (col - 4) + 1 };
                    let want = if u >= row && u - row < w { taps[u - row] } else { 0.0 };
                    let head = table[4 * (64 * q + lane) + r];
                    let rest = table[4 * (64 * q + 32 + lane) + r];
                    assert_eq!(head.to_bits() & 0x1fff, 0);
                    assert_eq!(rest.to_bits() & 0x1fff, 0);
                    let err = (head as f64 + rest as f64 - want as f64).abs();
                    assert!(
                        err <= want.abs() as f64 * 2f64.powi(-22),
                        "q {q} lane {lane} r {r}: {head} + {rest} vs {want}"
                    );
                }
            }
        }
    }
}
