//! The batched rows kernels on tensor cores: bf16 signals (sm_80 and
//! newer), `conv1d_rows_tc{S}_bf16`.
//!
//! # The product as a matrix multiplication
//!
//! A warp computes 128 neighbouring outputs at a time as one `16 × 8`
//! matrix `D` (output `8r + c` of the group in row `r`, column `c`):
//!
//! ```text
//! D[r][c] = Σ_k X[8r + k] · m[k − e − c]        k = 0 … 16S − 1
//! ```
//!
//! with `X` the group's inputs starting `e` elements before its first
//! output's window ([`rt_lead`]: so that every 32-bit word of `X` is a
//! pair of neighbouring bf16 in shared memory, or every row of `A` starts
//! on 16 bytes for `ldmatrix`) and `m[j] = 0` outside
//! `0 ≤ j < w`. That is `D = A·B` with `A[r][k] = X[8r + k]` (16 × 16S,
//! overlapping windows of the input, read straight from the staging slot
//! the tile's inputs arrived in by `cp.async`) and `B[k][c] = m[k − e − c]`
//! (16S × 8, a band of the taps, the same for every group of the signal):
//! `S` = [`rt_max_steps`] `mma.m16n8k16` per group and part of the taps,
//! the last one an `mma.m16n8k8` on its first 8 inputs when the band
//! leaves the other 8 empty ([`rt_half_last`]): for the head part, and one
//! `mma.m16n8k16` for the two small parts together (those 8 inputs twice
//! against the two parts' taps).
//! Each lane's `A` registers are four 32-bit shared loads (32 neighbouring
//! words across the warp, conflict-free) or, for masks of 25 to 32 taps,
//! one `ldmatrix.x4` (8 rows of 16 bytes per phase, 128 contiguous bytes);
//! its `D` registers are two pairs of neighbouring
//! outputs, stored as 32-bit words (128 contiguous bytes per store across
//! the warp).
//!
//! # f32 accuracy
//!
//! The inputs are bf16 already, so only the taps are split: `m = h + u + l`
//! with each part the remainder rounded to bf16 (nearest), leaving at most
//! `2^−27·|m|`. Every product is exact, and the tensor core rounds each
//! `mma`'s sum (toward zero) to `f32`, less than `2^−23` of the sum so far.
//! In the 1- and 2-step kernels the head products accumulate in one `f32`
//! accumulator, the two small ones in another, added once at the end: an
//! output carries about `(2S + 1)·2^−24` of `Σ|terms|`. The 3-step kernel
//! (masks of 25 to 32 taps) has room for one accumulator for all three
//! parts ([`rt_one_accumulator`]): its at most 9 `mma` (8 with the half
//! step, whose two small parts are one `mma`) carry at most `18·2^−24`.
//! Both are within the `(w + 1)·2^−24` bound of the FMA kernels for every
//! mask they serve ([`rt_error_units`]), from [`RT_MIN_TAPS`] taps on.
//!
//! Tiles at a row's ends whose outputs lie in the row take the same path:
//! the block writes the ghost cells (through the boundary mode, exact in
//! bf16) and the row's partial last chunk into the slot around the copied
//! chunks. A row's partial last tile, row ends in constant mode with a
//! `cval` that bf16 does not hold, and the groups of a warp with an
//! infinite or NaN output (the band's zeros would turn `0·∞` into NaN) are
//! computed by the FMA kernel they are part of.

/// Outputs per `mma` group: 16 rows of 8.
pub const RT_GROUP: usize = 128;

/// The narrowest mask the tensor form takes (the error bound above).
pub const RT_MIN_TAPS: usize = 6;

/// Extra 16-byte chunks each staging slot of the rows kernels holds past
/// a tile's inputs: the `mma` steps read up to 22 elements past them (the
/// reads there are multiplied by the band's zeros).
pub const RT_PAD_CHUNKS: usize = 2;

/// Staging buffers of the tensor form: 2 tiles (33 KiB) in flight per
/// block while one is computed.
pub const RT_STAGES: usize = 2;

/// The tensor form's tiles are this many times the FMA form's (8192
/// outputs): the `mma` work per tile is short, and the per-tile barrier,
/// copies and walk are not.
pub const RT_TILE_SCALE: usize = 2;

/// Rows of at least this many elements, or launches of 2^32 tiles or
/// more, stay on the FMA kernels: the tensor form walks its tiles in
/// 32-bit arithmetic.
pub const RT_MAX_LEN: usize = 1 << 30;

/// Most `mma` steps of any tensor kernel (`rt_max_steps(8)`).
pub const RT_MAX_STEPS: usize = 3;

/// Bytes of the `B` fragment table (after the staging ring): per part of
/// the taps' split and step, 32 lanes × two registers.
pub const RT_TABLE_BYTES: usize = 3 * RT_MAX_STEPS * 32 * 8;

/// Bytes of the staging slots' barrier objects (sm_90: one 8-byte
/// `mbarrier` per slot, after the draw word), on which each slot's bulk
/// copy lands.
pub const RT_BARRIER_BYTES: usize = 8 * RT_STAGES;

/// Whether the kernel of `steps` steps reads its `A` fragments with
/// `ldmatrix` (one instruction for four 32-bit loads; the rows of `X` must
/// then start 16-byte aligned): the 3-step kernel (masks of 25 to 32
/// taps), whose steps cover the larger lead it needs.
pub const fn rt_ldmatrix(steps: usize) -> bool {
    steps >= 3
}

/// The lead `e` of the kernel of `steps` steps for `left` taps left of the
/// centre: how many elements `X` starts before the first output's window,
/// so that it starts on a 32-bit word (on 16 bytes with [`rt_ldmatrix`]).
/// Tiles start at multiples of 8 outputs, so this is `−left` modulo 2 (or
/// 8).
pub const fn rt_lead(steps: usize, left: usize) -> usize {
    let m = if rt_ldmatrix(steps) { 8 } else { 2 };
    (m - left % m) % m
}

/// `mma` steps (of 16 inputs) a `w`-tap mask with `left` taps left of the
/// centre needs in the kernel of `steps` steps: `w + e + 7` inputs per
/// group of 8 outputs ([`rt_lead`]).
pub const fn rt_steps(w: usize, steps: usize, left: usize) -> usize {
    (w + rt_lead(steps, left) + 7).div_ceil(16)
}

/// Whether the kernel of `steps` steps takes its last step as one
/// `mma.m16n8k8` for a `w`-tap mask with `left` taps left of the centre
/// (`FLAG_HALF_STEP`): when the second half of that step's 16 inputs
/// meets only the band's zeros in every column. A group's row `r` reads
/// `X[8r + k]` for `k` up to `e + 7 + w − 1` ([`rt_lead`]), so that is
/// `e + w + 7 ≤ 16·steps − 8`. The half step does half the tensor-core
/// work of a full one: centred masks of every width of the 3-step kernel
/// (25 to 32 taps) and of 9 to 17 taps in the 2-step one.
pub const fn rt_half_last(steps: usize, w: usize, left: usize) -> bool {
    steps >= 2 && w + rt_lead(steps, left) + 7 + 8 <= 16 * steps
}

/// Whether the kernel of `steps` steps sums all three parts of the taps'
/// split in one accumulator (the 3-step kernel): a sum fewer per output
/// and 8 registers fewer per pair of groups (on an H200, 64 × 2²¹ bf16 at
/// w = 31 went from 83.0–84.2% of the floor to 85.5–85.8%).
pub const fn rt_one_accumulator(steps: usize) -> bool {
    steps >= 3
}

/// The error bound of the tensor form's sums, in units of `2^−24·Σ|terms|`
/// (see the module docs): with one accumulator, `2^−23` for each of its
/// `mma` (three per full step, two for a half last step); with two, `2^−23`
/// for each of the heads' `mma` and `2^−24` for adding the accumulators.
pub const fn rt_error_units(steps: usize, half: bool) -> usize {
    if rt_one_accumulator(steps) { 2 * (3 * steps - if half { 1 } else { 0 }) } else { 2 * steps + 1 }
}

/// The steps of the kernel for masks of `chunks` chunks of 4 taps,
/// `conv1d_rows_tc{steps}_bf16` (a compile-time count, so
/// the shared loads of all steps issue ahead of the `mma`): those of the
/// widest mask of `chunks` chunks of 4 taps, at least [`rt_steps`] of each
/// mask it serves (steps past a mask's band multiply zeros, exactly).
pub const fn rt_max_steps(chunks: usize) -> usize {
    (4 * chunks + 8).div_ceil(16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tensor form's sums stay within the FMA kernels' error bound,
    /// `(w + 1)·2^−24·Σ|terms|`, for every width and origin it serves, with
    /// the half last step or without; at the goal's 31 taps with one
    /// accumulator, 16 units against 32.
    #[test]
    fn sums_within_the_fma_bound() {
        for w in RT_MIN_TAPS..=32 {
            let steps = rt_max_steps(w.div_ceil(4));
            for left in 0..w {
                let half = rt_half_last(steps, w, left);
                let units = rt_error_units(steps, half);
                assert!(units <= w + 1, "w = {w}, left = {left}: {units} units of 2^-24 > {}", w + 1);
            }
        }
        assert_eq!(
            (rt_error_units(3, true), rt_error_units(3, false), rt_error_units(2, true), rt_error_units(1, false)),
            (16, 18, 5, 3)
        );
    }

    /// Every mask the host sends to the tensor form fits its kernel's
    /// steps, whatever the lead: `conv1d_rows_tc{S}_bf16` with
    /// `S = rt_max_steps(⌈w/4⌉)` covers `rt_steps` of every width from
    /// `RT_MIN_TAPS` to 32 and every `left` (so the host needs no check).
    #[test]
    fn kernel_steps_cover_every_mask() {
        for w in RT_MIN_TAPS..=32 {
            let steps = rt_max_steps(w.div_ceil(4));
            assert!((1..=RT_MAX_STEPS).contains(&steps), "w = {w}: {steps} steps");
            for left in 0..w {
                assert!(
                    rt_steps(w, steps, left) <= steps,
                    "w = {w}, left = {left}: {} > {steps}",
                    rt_steps(w, steps, left)
                );
            }
        }
        assert_eq!((rt_max_steps(2), rt_max_steps(6), rt_max_steps(7), rt_max_steps(8)), (1, 2, 3, 3));
        assert_eq!((rt_lead(1, 3), rt_lead(2, 4), rt_lead(3, 15), rt_lead(3, 8)), (1, 0, 1, 0));
    }

    /// `rt_half_last` holds exactly when the last step's second half
    /// multiplies zeros only: the band `B[k][c] = m[k − e − c]` has no tap
    /// there for any column, and has one there whenever it does not hold.
    /// Every width and origin of the tensor form, and the goal workloads'
    /// masks (centred 31 and 12 taps) take the half step.
    #[test]
    fn half_last_step_drops_only_zeros() {
        for w in RT_MIN_TAPS..=32 {
            let steps = rt_max_steps(w.div_ceil(4));
            for left in 0..w {
                let e = rt_lead(steps, left);
                let taps_in_half = (16 * steps - 8..16 * steps).any(|k| (0..8).any(|c| k >= e + c && k - e - c < w));
                assert_eq!(rt_half_last(steps, w, left), !taps_in_half, "w = {w}, left = {left}, steps = {steps}");
            }
        }
        assert!(rt_half_last(3, 31, 15) && rt_half_last(2, 12, 6) && rt_half_last(3, 32, 16));
        assert!(rt_one_accumulator(3) && !rt_one_accumulator(2) && !rt_one_accumulator(1));
        assert!(!rt_half_last(3, 32, 14) && !rt_half_last(2, 20, 10) && !rt_half_last(1, 8, 4));
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
pub(in crate::conv) mod kernels {
    use super::{RT_GROUP, RT_MAX_STEPS as MAX_STEPS};
    use crate::conv::elem::{ConvElem, unroll};
    use crate::dev::mma::{ldmatrix_x2, ldmatrix_x4, mma_bf16, mma_bf16_k8, pack_bf16x2};
    use crate::dev::shared::SharedElem;
    use core::arch::asm;

    /// Writes lane `lane`'s fragments of correlation taps `w` `f32` at
    /// shared-window address `taps_at` (steps `< S`) to the table at
    /// shared-window address `table`: entry
    /// `i` of lane `l` at `table + 8·(32i + l)`. One tap at a time, each
    /// part stored as its bf16 half of the entry (a loop, not unrolled: the
    /// taps of every step at once would take registers the kernel's other
    /// paths need).
    ///
    /// # Safety
    /// `taps_at` holds `w` `f32` visible to this thread; the table inside
    /// this block's shared memory ([`super::RT_TABLE_BYTES`], 8-byte
    /// aligned).
    #[inline(always)]
    pub unsafe fn write_fragments<const S: usize>(table: u32, taps_at: u32, w: usize, e: usize, lane: u32, half: bool) {
        let (g, t) = ((lane / 4) as isize, (lane % 4) as isize);
        // Step k, tap h of the lane's four (rows 2t, 2t + 1, 2t + 8, 2t + 9).
        let taps: u32;
        // SAFETY: a register move, opaque to the compiler so that it keeps
        // the loop rolled.
        unsafe {
            asm!("mov.u32 {o}, {i};", o = out(reg32) taps, i = in(reg32) 4 * S as u32, options(pure, nomem, nostack))
        };
        let taps = taps as usize;
        for i in 0..taps {
            let (k, h) = (i / 4, i % 4);
            let j = 16 * k as isize + 2 * t - e as isize - g + (h & 1) as isize + 8 * (h >> 1) as isize;
            let m = if j < 0 || j as usize >= w {
                0.0
            } else {
                // SAFETY: j < w (the caller's contract).
                unsafe { f32::ld_shared(taps_at + 4 * j as u32) }
            };
            let hd = f32::from_bits(pack_bf16x2(m, 0.0) << 16);
            let r = m - hd;
            let u = f32::from_bits(pack_bf16x2(r, 0.0) << 16);
            for (p, part) in [hd, u, r - u].into_iter().enumerate() {
                // A half last step's low part goes in the second register of
                // its middle part's entry, in place of the band's zeros
                // there: the two small parts then make one `mma.m16n8k16`
                // (`read_half_step`).
                let (p, h) = match (half && k + 1 == S, p, h >= 2) {
                    (true, 1 | 2, true) => continue,
                    (true, 2, false) => (1, h + 2),
                    _ => (p, h),
                };
                let at =
                    table + 8 * (32 * (p * MAX_STEPS + k) as u32 + lane) + 2 * (h & 1) as u32 + 4 * (h >> 1) as u32;
                let half = pack_bf16x2(part, 0.0) as u16;
                // SAFETY: half h of entry p·MAX_STEPS + k of the table (the
                // caller's contract).
                unsafe {
                    asm!("st.shared.u16 [{a}], {v};", a = in(reg32) at, v = in(reg16) half,
                         options(nostack, preserves_flags));
                }
            }
        }
    }

    /// Lane `lane`'s fragments of step `k` (head, middle, low) from the
    /// table: read per step, not held for the tile (18 registers at 3
    /// steps, which 3 resident blocks per SM do not leave).
    ///
    /// # Safety
    /// The table written by [`write_fragments`] and a barrier passed since.
    /// The loads are `volatile`, so that `ptxas` keeps them in the step
    /// instead of hoisting every step's fragments out of the loop over
    /// groups.
    #[inline(always)]
    unsafe fn read_step(table: u32, lane: u32, k: usize) -> [[u32; 2]; 3] {
        // SAFETY: the caller's contract (8 bytes of the table each).
        [0, 1, 2].map(|p| unsafe { read_entry(entry(table, lane, p, k)) })
    }

    /// The shared-window address of lane `lane`'s entry of part `p`
    /// (head, middle, low) of step `k` in the table at `table`.
    #[inline(always)]
    fn entry(table: u32, lane: u32, p: usize, k: usize) -> u32 {
        table + 8 * (32 * (p * MAX_STEPS + k) as u32 + lane)
    }

    /// The two words of the table entry at `at` (a `volatile` load, as
    /// [`read_step`] says why).
    ///
    /// # Safety
    /// `at` an entry of a table written by [`write_fragments`], a barrier
    /// passed since.
    #[inline(always)]
    unsafe fn read_entry(at: u32) -> [u32; 2] {
        let (a, b): (u32, u32);
        // SAFETY: the caller's contract (8 bytes of the table).
        unsafe {
            asm!("ld.volatile.shared.v2.u32 {{{a}, {b}}}, [{p}];", a = out(reg32) a, b = out(reg32) b,
                 p = in(reg32) at, options(nostack, preserves_flags));
        }
        [a, b]
    }

    /// Lane `lane`'s fragments of a half step `k`: the head's (the first
    /// register of [`read_step`]'s, rows 2t, 2t + 1 of the band), and the
    /// middle and low parts' together as one `k16` fragment (the entry
    /// [`write_fragments`] writes for a half step: the low part's rows in
    /// the second register).
    ///
    /// # Safety
    /// As [`read_step`], the table written for a half last step.
    #[inline(always)]
    unsafe fn read_half_step(table: u32, lane: u32, k: usize) -> (u32, [u32; 2]) {
        let h: u32;
        // SAFETY: the caller's contract (4 and 8 bytes of the table).
        unsafe {
            asm!("ld.volatile.shared.u32 {h}, [{p}];", h = out(reg32) h, p = in(reg32) entry(table, lane, 0, k),
                 options(nostack, preserves_flags));
            (h, read_entry(entry(table, lane, 1, k)))
        }
    }

    /// One tile of `groups` groups of 128 outputs, from the bf16 inputs at
    /// shared-window address `x` (the tile's `X`, 4-byte aligned) to
    /// `out` (32-bit words: pairs of outputs), groups `warp, warp + warps,
    /// …`. Returns whether any of
    /// this lane's outputs is not finite (or, rarely, whether the sum of
    /// four finite outputs of a group overflowed: the caller then only
    /// recomputes the warp's groups).
    ///
    /// # Safety
    /// Every lane of the warp calls it together; the fragment table at
    /// `table` complete (a barrier passed since it was written); `x` holds
    /// `128·groups + 16S − 8` readable elements (finite or not: the last
    /// group's rows reach `X[120 + 16S − 1]`), 16-byte
    /// aligned when `ldm` (read with `ldmatrix`); `out` valid for
    /// `64·groups` words. With `half` ([`super::rt_half_last`] of the
    /// signal's mask), the last step is one `mma.m16n8k8` on the first 8
    /// of its 16 inputs.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn tile<const S: usize>(
        x: u32,
        out: *mut u32,
        groups: u32,
        warp: u32,
        warps: u32,
        lane: u32,
        table: u32,
        ldm: bool,
        half: bool,
    ) -> bool {
        let (g, t) = (lane / 4, lane % 4);
        // The accumulator of each part of the taps: the heads' own, the
        // two small parts' shared; in the 3-step kernel one for all three
        // (see the module docs).
        let acc_of_part: [usize; 3] = if super::rt_one_accumulator(S) { [0, 0, 0] } else { [0, 1, 1] };
        // Stays zero while every output is finite: each group's sum of
        // outputs times zero is NaN once any of them is infinite or NaN
        // (or their sum overflows: a false alarm, which only recomputes).
        let mut check = 0.0f32;
        // Two groups at a time: independent `mma` chains.
        let mut q = warp;
        while q < groups {
            // The second group of the pair (the first again, not stored,
            // when there is none: warp-uniform).
            let two = q + warps < groups;
            let qs = [q, if two { q + warps } else { q }];
            // Per group: the head products, and the two small ones together.
            let mut acc = [[[0.0f32; 4]; 2]; 2];
            unroll!(const K in [0, 1, 2] below S => {
                // Lane 8i + r's row for `ldmatrix`: row r of matrix i (rows
                // 8·(i & 1) on, columns 8·(i >> 1) on); lane (g, t)'s first
                // word for the 32-bit loads.
                let ldm_at = |q: u32| x + 256 * q + 32 * K as u32 + 16 * (lane % 8) + 128 * ((lane / 8) & 1) + 16 * (lane / 16);
                let word_at = |q: u32| x + 4 * (64 * q + 4 * g + t) + 32 * K as u32;
                if S >= 2 && K + 1 == S && half {
                    // The half step: matrices 0 and 1 (columns 0–7).
                    // SAFETY: the caller's contract (the table is complete).
                    let (fh, fs) = unsafe { read_half_step(table, lane, K) };
                    let a = qs.map(|q| {
                        if ldm {
                            // SAFETY: as below (lanes 0–15 pass the rows).
                            unsafe { ldmatrix_x2(ldm_at(q)) }
                        } else {
                            let at = word_at(q);
                            // SAFETY: inside the caller's readable elements.
                            unsafe { [u32::ld_shared(at), u32::ld_shared(at + 128)] }
                        }
                    });
                    unroll!(const J in [0, 1] below 2 => {
                        // The head on the first 8 inputs; the two small parts
                        // as one k16 product, the same 8 inputs twice.
                        let [a0, a1] = a[J];
                        // SAFETY: warp-uniform loop and branch (the caller's
                        // contract).
                        unsafe {
                            mma_bf16_k8(&mut acc[J][acc_of_part[0]], a[J], fh);
                            mma_bf16(&mut acc[J][acc_of_part[1]], [a0, a1, a0, a1], fs);
                        }
                    });
                } else {
                    // SAFETY: the caller's contract (the table is complete).
                    let f = unsafe { read_step(table, lane, K) };
                    let a = qs.map(|q| {
                        if ldm {
                            // SAFETY: inside the caller's readable elements,
                            // 16-byte aligned; warp-uniform (the caller's
                            // contract).
                            unsafe { ldmatrix_x4(ldm_at(q)) }
                        } else {
                            let at = word_at(q);
                            // SAFETY: inside the caller's readable elements.
                            unsafe {
                                [u32::ld_shared(at), u32::ld_shared(at + 128), u32::ld_shared(at + 16), u32::ld_shared(at + 144)]
                            }
                        }
                    });
                    unroll!(const P in [0, 1, 2] below 3 => {
                        unroll!(const J in [0, 1] below 2 => {
                            // SAFETY: warp-uniform loop (the caller's contract).
                            unsafe { mma_bf16(&mut acc[J][acc_of_part[P]], a[J], f[P]) };
                        });
                    });
                }
            });
            unroll!(const J in [0, 1] below 2 => {
                if J == 0 || two {
                    let [h, u] = acc[J];
                    let v = if super::rt_one_accumulator(S) { h } else { [0, 1, 2, 3].map(|i| h[i] + u[i]) };
                    check = f32::fma((v[0] + v[1]) + (v[2] + v[3]), 0.0, check);
                    let o = (RT_GROUP as u32 / 2) * qs[J] + 4 * g + t;
                    // SAFETY: words o and o + 32 of group qs[J] (the caller's contract).
                    unsafe {
                        *out.add(o as usize) = pack_bf16x2(v[0], v[1]);
                        *out.add(o as usize + 32) = pack_bf16x2(v[2], v[3]);
                    }
                }
            });
            q += if two { 2 * warps } else { warps };
        }
        check != 0.0
    }
}
