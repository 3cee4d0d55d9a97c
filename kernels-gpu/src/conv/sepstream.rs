//! Streamed separable filters for `f32` images (`conv2d_seps_f32_h{H}`,
//! sm_80 and newer): a row pass then a column pass in one kernel, each
//! warp walking a strip of 128 columns down a band of rows, with no
//! intermediate image in DRAM and no recomputed halo columns.
//!
//! The tiled fused kernel (`conv2d_sep_*`) stages square tiles with their
//! halo and loops over the taps at run time; at 31 × 31 a 64 × 64 tile
//! reads 2.2 times its area and runs its row pass over 1.5 times its rows,
//! and the per-element address work of the tile loads bounds it at 30–60%
//! of the memory floor. These kernels know the window at compile time
//! (`2H + 1` taps per axis, [`SEPS_HALVES`]) and work per warp:
//!
//! 1. **A strip per warp, a band of rows.** A warp (a block) owns
//!    [`SEPS_STRIP`] output columns, 4 per lane, and walks its band of
//!    output rows ([`seps_task`]) from `H` rows above it to `H` below.
//! 2. **Input rows through a shared ring.** Each input row of the strip,
//!    with [`seps_pad`]`(H)` columns either side, arrives by 16-byte
//!    `cp.async` copies into a ring of [`SEPS_DEPTH`] rows, `SEPS_DEPTH − 1`
//!    rows ahead of its use; only `bar.warp.sync` orders it (warps share
//!    nothing). Copies whose 4 columns are not all inside the image take 4
//!    scalar copies from the columns the boundary mode maps them to (zeros
//!    in constant mode); rows outside the image are mapped the same way.
//! 3. **Row pass.** A lane reads its 4 columns' window (`4 + 2·pad`
//!    floats) as 128-bit shared loads, conflict-free, and runs the `2H + 1`
//!    row taps over it: 4 intermediate values, rounded to `f32` as the
//!    two-pass form's image. From H = [`SEPS_HOIST_FROM`] (15) on the row
//!    taps sit in registers
//!    for the whole band (a uniform load per tap pair and row otherwise:
//!    a sixteenth of the row pass's instructions); their launch bounds
//!    ([`seps_min_blocks`]) are the blocks that their shared memory allows
//!    (9 and 7 per SM), so the registers cost no occupancy.
//! 4. **Column pass from a lane-private ring.** The lane writes its 4
//!    intermediate values to its own 16 bytes of a ring of
//!    [`seps_ring`]`(H)` rows in shared memory (no other lane reads them,
//!    so no barrier), and after every [`SEPS_CHUNK`] rows computes that
//!    many output rows from the last [`seps_reach`]`(H)` = `SEPS_CHUNK + 2H`
//!    rows at once: `4 × SEPS_CHUNK` accumulators, each intermediate row
//!    read once per chunk, in runs of [`seps_run`]`(H)` rows with one ring
//!    index each.
//! 5. **Stores.** 128-bit stores, whole lines per warp; a strip past the
//!    image's right edge stores element by element.
//! 6. **Odd bands walk up** in the kernels of [`seps_flips`] (H = 7 and
//!    8, whose bands are `8H` rows long): such a band runs the same loop
//!    over the image turned upside down (rows counted from the last, the
//!    column taps reversed, held in registers for the band). Two
//!    neighbouring bands then read the input rows they share, each one's
//!    halo, at about the same time, at both ends: from L2, not twice from
//!    DRAM. Walking down, a band reads the rows below it at its end and
//!    the band below reads them at its start, a band's time apart, long
//!    enough at `8H` rows for the many bands in flight to push them out
//!    of L2 (15 × 15 moved 9% more DRAM bytes than the floor's).
//!
//! The taps travel by value in the kernel's parameter space (see
//! [`crate::dev::param`]): row taps at `0 … 2H`, column taps at
//! [`SEPS_MAX_TAPS`]` … SEPS_MAX_TAPS + 2H`, each axis's mask in
//! correlation order and centred in its window (a narrower, even or off-centre
//! mask is padded with zero taps). Zero taps would turn an infinite input
//! into NaN (`0 · ∞`), so an output that comes out infinite or NaN is
//! computed again from the input with the mask's own taps (`mw`, `mh`,
//! `lx`, `ly`), in the same order (rows, then columns), as the
//! other kernels give it.
//!
//! The kernels take `(input, output, width, height, pitch, rows, mode, mw,
//! mh, lx, ly, taps)`: `pitch` in elements, a multiple of 4, both bases
//! 16-byte aligned; `width`, `height` below 2³⁰; `rows` the output rows
//! of each band (a multiple of [`SEPS_CHUNK`] runs best); `mode` a
//! [`Boundary`](super::Boundary) raw value (constant mode: zeros); `mw ×
//! mh` the mask with `lx`, `ly` taps left of and above its centre, within
//! the window (`lx ≤ H`, `mw − 1 − lx ≤ H`, the same in `y`); `taps`
//! [`SEPS_PARAM_BYTES`] bytes as above. Blocks of [`SEPS_THREADS`]
//! threads, [`seps_shared_bytes`]`(H)` bytes of dynamic shared memory,
//! block `b` taking task [`seps_task`]`(b, …)`; the grid holds
//! [`seps_blocks`] blocks.

/// Threads per block: one warp.
pub const SEPS_THREADS: usize = 32;

/// Output columns of each warp's strip (4 per lane).
pub const SEPS_STRIP: usize = 128;

/// Output rows of each column pass (each lane holds 4 × this many sums).
pub const SEPS_CHUNK: usize = 8;

/// Input rows in each warp's shared ring: `SEPS_DEPTH − 1` in flight.
pub const SEPS_DEPTH: usize = 8;

/// The half widths `H` the kernels are built for: windows of `2H + 1`
/// taps per axis.
pub const SEPS_HALVES: [usize; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20];

/// The widest window's half width.
pub const SEPS_MAX_HALF: usize = 20;

/// Taps per axis in the parameter (the widest window).
pub const SEPS_MAX_TAPS: usize = 2 * SEPS_MAX_HALF + 1;

/// Bytes of the taps parameter: both axes of the widest window, `f32`.
pub const SEPS_PARAM_BYTES: usize = 2 * SEPS_MAX_TAPS * 4;

/// Columns staged either side of a strip: `H` rounded up to whole 16-byte
/// copies.
pub const fn seps_pad(h: usize) -> usize {
    h.div_ceil(4) * 4
}

/// Floats of each input row in the shared ring.
pub const fn seps_line(h: usize) -> usize {
    SEPS_STRIP + 2 * seps_pad(h)
}

/// Intermediate rows that one column pass reads: `SEPS_CHUNK + 2H`.
pub const fn seps_reach(h: usize) -> usize {
    SEPS_CHUNK + 2 * h
}

/// Intermediate rows in each lane's ring: [`seps_reach`], rounded up to
/// a multiple of 8 where that keeps as many blocks on an SM of 228 KiB
/// (sm_90; [`SEPS_SM_SHARED`]) — H = 1, 2, 3 and 7 — and left as it
/// is where it would cost one (a ring of 40 rows at H = 15 holds 8 blocks
/// per SM instead of 9, and 31 × 31 ran 4% slower on the H100). Each
/// column pass starts [`SEPS_CHUNK`] rows after the last, so its first
/// slot is a multiple of [`seps_run`] and its reads come in runs of that
/// many rows that never wrap: one ring-index computation per run.
pub const fn seps_ring(h: usize) -> usize {
    let reach = seps_reach(h);
    let padded = reach.next_multiple_of(8);
    if seps_blocks_per_sm(padded, h) == seps_blocks_per_sm(reach, h) { padded } else { reach }
}

/// Shared memory of an sm_90 SM (228 KiB), for [`seps_ring`]'s choice.
pub const SEPS_SM_SHARED: usize = 228 * 1024;

/// Blocks of one warp per SM of [`SEPS_SM_SHARED`] bytes (1 KiB reserved
/// per block, at most 16) with a ring of `ring` rows at half width `h`.
const fn seps_blocks_per_sm(ring: usize, h: usize) -> usize {
    let per_block = (ring * SEPS_STRIP + SEPS_DEPTH * seps_line(h)) * 4 + 1024;
    let blocks = SEPS_SM_SHARED / per_block;
    if blocks < 16 { blocks } else { 16 }
}

/// The half width from which the row taps stay in registers for the whole
/// band (see the module docs).
pub const SEPS_HOIST_FROM: usize = 15;

/// The kernel's launch bound in blocks per SM (its `.minnctapersm`, see
/// [`LAUNCH_BOUNDS`](super::LAUNCH_BOUNDS)): 16, and from
/// [`SEPS_HOIST_FROM`] on and for [`seps_flips`] the blocks its shared
/// memory allows on sm_90 (13 at H = 7 and 8), so the registers of the
/// hoisted taps cost no occupancy.
pub const fn seps_min_blocks(h: usize) -> u32 {
    if h >= SEPS_HOIST_FROM || seps_flips(h) { seps_blocks_per_sm(seps_ring(h), h) as u32 } else { 16 }
}

/// Rows of each unbroken run of the column pass's reads: the largest of 8,
/// 4 and 2 that divides the ring's length (see [`seps_ring`]).
pub const fn seps_run(h: usize) -> usize {
    let ring = seps_ring(h);
    if ring.is_multiple_of(8) {
        8
    } else if ring.is_multiple_of(4) {
        4
    } else {
        2
    }
}

/// Dynamic shared memory of one block (one warp): the intermediate ring,
/// then the input ring.
pub const fn seps_shared_bytes(h: usize) -> usize {
    (seps_ring(h) * SEPS_STRIP + SEPS_DEPTH * seps_line(h)) * 4
}

/// Strips across a row of `width` columns.
pub const fn seps_strips(width: u32) -> u32 {
    width.div_ceil(SEPS_STRIP as u32)
}

/// Blocks (tasks) for a `width × height` image in bands of `rows`.
pub const fn seps_blocks(width: u32, height: u32, rows: u32) -> u32 {
    if rows == 0 {
        return 0;
    }
    seps_strips(width) * height.div_ceil(rows)
}

/// Whether the kernel of half width `h` walks its odd bands up (module
/// docs, item 6).
pub const fn seps_flips(h: usize) -> bool {
    h == 7 || h == 8
}

/// Whether block `block` of the kernel of half width `h` on an image
/// `width` columns wide walks its band up: [`seps_flips`] and an odd band.
pub const fn seps_walks_up(h: usize, block: u32, width: u32) -> bool {
    let strips = seps_strips(width);
    seps_flips(h) && strips > 0 && (block / strips) % 2 == 1
}

/// Block `block`'s task: its strip and its band of output rows `y0 …
/// y_end`, or `None` past the last. Strips of a band come together, so
/// neighbouring strips read their shared halo columns at about the same
/// time. Every (strip, row) belongs to exactly one task.
pub const fn seps_task(block: u32, width: u32, height: u32, rows: u32) -> Option<(u32, u32, u32)> {
    let strips = seps_strips(width);
    if strips == 0 || height == 0 || rows == 0 {
        return None;
    }
    let band = block / strips;
    if band >= height.div_ceil(rows) {
        return None;
    }
    let y0 = band * rows;
    let y_end = if height - y0 < rows { height } else { y0 + rows };
    Some((block % strips, y0, y_end))
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
mod kernels {
    use super::{
        SEPS_CHUNK, SEPS_DEPTH, SEPS_HOIST_FROM, SEPS_MAX_HALF, SEPS_MAX_TAPS, SEPS_PARAM_BYTES, SEPS_STRIP,
        seps_flips, seps_line, seps_pad, seps_reach, seps_ring, seps_run, seps_task, seps_walks_up,
    };
    use crate::conv::boundary::map_index32;
    use crate::conv::elem::{ConvElem, unroll};
    use crate::dev::index::{block_idx_x, thread_idx_x};
    use crate::dev::param::{ParamBytes, ParamSymbol};
    use crate::dev::pipeline::{commit_group, copy_f32, copy16, wait_group};
    use crate::dev::shared::{Shared, dynamic};
    use crate::dev::warp::{FULL_MASK, ballot, shfl_xor_f32, sync_warp};
    use core::arch::asm;

    /// The launch's arguments (see the module docs).
    #[derive(Clone, Copy)]
    pub(super) struct Args {
        pub input: *const f32,
        pub output: *mut f32,
        pub width: u32,
        pub height: u32,
        pub pitch: usize,
        pub rows: u32,
        pub mode: u32,
        pub mw: u32,
        pub mh: u32,
        pub lx: u32,
        pub ly: u32,
    }

    /// Tap `i` of the parameter (row taps from 0, column taps from
    /// [`SEPS_MAX_TAPS`]), read where it is used (not `pure`: LLVM neither
    /// hoists the taps out of the loops, which would hold them all in
    /// registers, nor merges reads); `ptxas` makes them uniform registers
    /// or constant-bank operands.
    #[inline(always)]
    fn tap<P: ParamSymbol>(i: usize) -> f32 {
        let v: f32;
        let at = P::base() + (i * 4) as u64;
        // SAFETY: callers pass i < 2·SEPS_MAX_TAPS = SEPS_PARAM_BYTES / 4:
        // inside the taps parameter.
        unsafe {
            asm!("ld.param.f32 {v}, [{a}];", v = out(reg32) v, a = in(reg64) at, options(readonly, nostack, preserves_flags))
        };
        v
    }

    /// Stores 16 bytes at shared-window address `at`.
    ///
    /// # Safety
    /// `at` 16-byte aligned inside this block's shared memory, which no
    /// other thread accesses there without a barrier in between.
    #[inline(always)]
    unsafe fn st_shared4(at: u32, v: [f32; 4]) {
        // SAFETY: the caller's contract.
        unsafe {
            asm!("st.shared.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg32) at, a = in(reg32) v[0],
                 b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3], options(nostack, preserves_flags))
        };
    }

    /// The row that position `y` of a band takes when it lies outside the
    /// image or past the band's rows (`wanted` false): −1 for zeros, and
    /// for positions more than `H` outside the image (no output reads
    /// them); otherwise the mode's row. Out of line: the common path is a
    /// comparison.
    #[inline(never)]
    fn map_row_cold(y: i32, wanted: bool, height: i32, half: i32, mode: u32) -> i32 {
        if !wanted || y >= height + half || y < -half {
            -1
        } else {
            map_index32(y, height, mode).map_or(-1, |v| v as i32)
        }
    }

    /// One output computed from the input with the mask's own taps (the
    /// rare path of outputs that came out infinite or NaN): each row pass
    /// in tap order, rounded to `f32`, then the column taps in order.
    ///
    /// # Safety
    /// As the kernel's; `(x, y)` inside the image.
    #[inline(always)]
    unsafe fn exact<P: ParamSymbol>(a: Args, half: usize, x: i32, y: i32) -> f32 {
        let (w, h) = (a.width as i32, a.height as i32);
        let mut acc = 0.0f32;
        let mut k = 0;
        while k < a.mh {
            if let Some(ry) = map_index32(y - a.ly as i32 + k as i32, h, a.mode) {
                let line = a.input.wrapping_add(ry as usize * a.pitch);
                let mut t = 0.0f32;
                let mut i = 0;
                while i < a.mw {
                    if let Some(cx) = map_index32(x - a.lx as i32 + i as i32, w, a.mode) {
                        // SAFETY: row ry < height, column cx < width: inside
                        // the input.
                        let v = unsafe { *line.add(cx as usize) };
                        t = f32::fma(v, tap::<P>(half - a.lx as usize + i as usize), t);
                    }
                    i += 1;
                }
                acc = f32::fma(t, tap::<P>(SEPS_MAX_TAPS + half - a.ly as usize + k as usize), acc);
            }
            k += 1;
        }
        acc
    }

    /// The kernels: see the module docs. `K = 2H + 1` taps per axis, `PAD`
    /// = [`seps_pad`], `LINE` = [`seps_line`], `T` = [`seps_ring`],
    /// `REACH` = [`seps_reach`], `RUN` = [`seps_run`], `WIN` = `4 + 2·PAD`
    /// (each lane's row window).
    ///
    /// # Safety
    /// The arguments as the module docs give; blocks of one warp, the
    /// shared memory of [`seps_shared_bytes`](super::seps_shared_bytes).
    #[inline(always)]
    pub(super) unsafe fn seps<
        P: ParamSymbol,
        const H: usize,
        const K: usize,
        const PAD: usize,
        const LINE: usize,
        const T: usize,
        const REACH: usize,
        const RUN: usize,
        const WIN: usize,
    >(
        a: Args,
    ) {
        const { assert!(K == 2 * H + 1 && H <= SEPS_MAX_HALF && PAD == seps_pad(H) && LINE == seps_line(H)) };
        const {
            assert!(
                T == seps_ring(H)
                    && REACH == seps_reach(H)
                    && RUN == seps_run(H)
                    && T.is_multiple_of(RUN)
                    && SEPS_CHUNK.is_multiple_of(RUN)
                    && WIN == 4 + 2 * PAD
                    && WIN <= 48
                    && T <= 48
                    && SEPS_DEPTH.is_power_of_two()
                    && SEPS_DEPTH <= 16
            )
        };
        const { assert!(2 * SEPS_MAX_TAPS * 4 <= SEPS_PARAM_BYTES) };
        let lane = thread_idx_x();
        // Whole warps leave (the barriers and votes need every lane).
        let Some((strip, b0, b_end)) = seps_task(block_idx_x(), a.width, a.height, a.rows) else { return };
        // A band that walks up runs rows y0 … y_end counted from the
        // image's last row (module docs, item 6).
        let flip = seps_walks_up(H, block_idx_x(), a.width);
        let (y0, y_end) = if flip { (a.height - b_end, a.height - b0) } else { (b0, b_end) };
        // SAFETY: the launch's shared memory holds both rings.
        let smem: Shared<f32> = unsafe { dynamic() };
        // This lane's 16 bytes of intermediate row 0 (rows 512 bytes
        // apart), and input row 0 of the ring (rows LINE floats apart).
        let t_at = smem.addr_of(0) + 16 * lane;
        let in_at = smem.addr_of(T * SEPS_STRIP);
        let (w, hgt, half) = (a.width as i32, a.height as i32, H as i32);
        // The lane's copies: columns c0 … c0 + 3 of the staged line, and
        // c1 … c1 + 3 for the first PAD / 4 lanes (the line is 32 + PAD / 2
        // copies long).
        let x_strip = (strip * SEPS_STRIP as u32) as i32;
        let c0 = x_strip - PAD as i32 + 4 * lane as i32;
        let c1 = c0 + SEPS_STRIP as i32;
        let second = lane < (PAD / 2) as u32;
        let fast0 = c0 >= 0 && c0 + 4 <= w;
        let fast1 = c1 >= 0 && c1 + 4 <= w;
        // SAFETY: every lane of the warp is here.
        let edge = unsafe { ballot(FULL_MASK, !fast0 || (second && !fast1)) } != 0;
        let (mut m0, mut m1) = ([-1i32; 4], [-1i32; 4]);
        if edge {
            unroll!(const E in [0, 1, 2, 3] below 4 => {
                m0[E] = map_index32(c0 + E as i32, w, a.mode).map_or(-1, |v| v as i32);
                m1[E] = map_index32(c1 + E as i32, w, a.mode).map_or(-1, |v| v as i32);
            });
        }
        let chunks = (y_end - y0).div_ceil(SEPS_CHUNK as u32);
        // Intermediate rows: row n is input row y0 − H + n.
        let total = chunks * SEPS_CHUNK as u32 + 2 * H as u32;
        // Issues input row n into its ring slot (zeros past `total`), as
        // one group.
        let issue = #[inline(always)]
        |n: u32| {
            let slot = in_at + (n % SEPS_DEPTH as u32) * (LINE * 4) as u32;
            let yl = y0 as i32 - half + n as i32;
            let y = if flip { hgt - 1 - yl } else { yl };
            let ry = if n < total && 0 <= y && y < hgt { y } else { map_row_cold(y, n < total, hgt, half, a.mode) };
            let live = ry >= 0;
            // Not dereferenced unless live (row ry < height).
            let line = a.input.wrapping_add(ry.max(0) as usize * a.pitch);
            if !edge {
                let at = line.wrapping_offset(c0 as isize);
                // SAFETY: columns c0 … c0 + 3 (and c1 = c0 + 128 … c1 + 3)
                // of row ry lie inside it (no lane of the warp is at an
                // edge), 16-byte aligned (base and pitch are, and c0 is a
                // multiple of 4); the slots are 16-byte aligned.
                unsafe {
                    copy16(slot + 16 * lane, at.cast(), live);
                    if second {
                        copy16(slot + 16 * (lane + 32), at.wrapping_add(SEPS_STRIP).cast(), live);
                    }
                }
            } else {
                let copy = #[inline(always)]
                |dst: u32, c: i32, fast: bool, m: &[i32; 4]| {
                    if fast {
                        // SAFETY: columns c … c + 3 of row ry lie inside it,
                        // 16-byte aligned; dst is 16-byte aligned.
                        unsafe { copy16(dst, line.wrapping_offset(c as isize).cast(), live) };
                    } else {
                        unroll!(const E in [0, 1, 2, 3] below 4 => {
                            // SAFETY: read when live and m[E] ≥ 0: column
                            // m[E] < width of row ry.
                            unsafe {
                                copy_f32(dst + 4 * E as u32, line.wrapping_add(m[E].max(0) as usize), live && m[E] >= 0)
                            };
                        });
                    }
                };
                copy(slot + 16 * lane, c0, fast0, &m0);
                if second {
                    copy(slot + 16 * (lane + 32), c1, fast1, &m1);
                }
            }
            commit_group();
        };
        unroll!(const J in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14] below SEPS_DEPTH - 1 => {
            issue(J as u32);
        });
        let x_out = x_strip + 4 * lane as i32;
        let writes = x_out < w;
        let whole = x_out + 4 <= w;
        // Output rows in the band's direction.
        let ostride = if flip { -(a.pitch as isize) } else { a.pitch as isize };
        let row0 = if flip { hgt - 1 - y0 as i32 } else { y0 as i32 };
        let mut out = a.output.wrapping_offset(row0 as isize * a.pitch as isize + x_out as isize);
        // Row n of the intermediate goes to slot n mod T; each column pass
        // reads its rows from slot `first` on (a multiple of RUN).
        let (mut n, mut slot_t, mut first, mut y) = (0u32, 0u32, 0u32, y0);
        let mut steps = REACH as u32;
        // The wide windows hold their row taps in registers (their launch
        // bounds leave room: shared memory holds them to 9 and 7 blocks per
        // SM).
        let hoist = H >= SEPS_HOIST_FROM;
        let mut rt = [0.0f32; K];
        if hoist {
            unroll!(const J in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40] below K => {
                // Through a shuffle, so that ptxas keeps the value in a
                // register rather than reading the parameter again.
                // SAFETY: every lane is here.
                rt[J] = unsafe { shfl_xor_f32(FULL_MASK, tap::<P>(J), 0) };
            });
        }
        // The kernels whose bands walk up hold their column taps in
        // registers, reversed on those bands.
        let mut ct = [0.0f32; K];
        if seps_flips(H) {
            unroll!(const J in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40] below K => {
                let m = if flip { tap::<P>(SEPS_MAX_TAPS + K - 1 - J) } else { tap::<P>(SEPS_MAX_TAPS + J) };
                // SAFETY: every lane is here.
                ct[J] = unsafe { shfl_xor_f32(FULL_MASK, m, 0) };
            });
        }
        loop {
            // The row pass of `steps` input rows (the first chunk needs its
            // 2H rows above too).
            let mut s = 0;
            while s < steps {
                wait_group::<{ SEPS_DEPTH as u32 - 2 }>();
                // SAFETY: every lane is here (the loop is warp-uniform).
                unsafe { sync_warp() };
                // The slot of row n − 1, which every lane has read.
                issue(n + SEPS_DEPTH as u32 - 1);
                let src = in_at + (n % SEPS_DEPTH as u32) * (LINE * 4) as u32 + 16 * lane;
                let rtap = #[inline(always)]
                |j: usize| if hoist { rt[j] } else { tap::<P>(j) };
                let mut win = [0.0f32; WIN];
                unroll!(const Q in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] below WIN / 4 => {
                    // SAFETY: 16 aligned bytes of row n's slot, which the
                    // wait and the barrier above made visible.
                    let v = unsafe { f32::read4(Shared::from_addr(src + 16 * Q as u32), 0) };
                    unroll!(const E in [0, 1, 2, 3] below 4 => { win[4 * Q + E] = v[E]; });
                });
                // Two chains per output (even and odd taps), summed at the
                // end: eight independent chains per lane instead of four.
                let mut t = [0.0f32; 4];
                unroll!(const E in [0, 1, 2, 3] below 4 => {
                    let mut even = win[E + PAD - H] * rtap(0);
                    let mut odd = 0.0f32;
                    unroll!(const J in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                        21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38,
                                        39, 40] below K => {
                        if J == 1 {
                            odd = win[E + PAD - H + J] * rtap(J);
                        } else if J % 2 == 1 {
                            odd = f32::fma(win[E + PAD - H + J], rtap(J), odd);
                        } else {
                            even = f32::fma(win[E + PAD - H + J], rtap(J), even);
                        }
                    });
                    t[E] = even + odd;
                });
                // SAFETY: this lane's own 16 bytes of the ring's slot.
                unsafe { st_shared4(t_at + slot_t * 512, t) };
                n += 1;
                slot_t = if slot_t + 1 == T as u32 { 0 } else { slot_t + 1 };
                s += 1;
            }
            steps = SEPS_CHUNK as u32;
            // The column pass: intermediate rows n − REACH … n − 1 sit at
            // slots first, first + 1, … (mod T), in runs of RUN rows that do
            // not wrap (first, T and SEPS_CHUNK are multiples of RUN);
            // output row y + R takes rows R … R + 2H of them.
            let mut acc = [[0.0f32; 4]; SEPS_CHUNK];
            let mut run_at = t_at;
            unroll!(const Q in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
                                44, 45, 46, 47] below REACH => {
                if Q.is_multiple_of(RUN) {
                    let at = first + Q as u32;
                    run_at = t_at + 512 * if at >= T as u32 { at - T as u32 } else { at };
                }
                // SAFETY: this lane's own 16 bytes of a ring slot it wrote
                // (slot Q % RUN of the run, below T).
                let v = unsafe { f32::read4(Shared::from_addr(run_at + 512 * (Q % RUN) as u32), 0) };
                unroll!(const R in [0, 1, 2, 3, 4, 5, 6, 7] below SEPS_CHUNK => {
                    // Q < R wraps k past K.
                    let k = Q.wrapping_sub(R);
                    if k < K {
                        let m = if seps_flips(H) { ct[k] } else { tap::<P>(SEPS_MAX_TAPS + k) };
                        unroll!(const E in [0, 1, 2, 3] below 4 => {
                            acc[R][E] = if k == 0 { v[E] * m } else { f32::fma(v[E], m, acc[R][E]) };
                        });
                    }
                });
            });
            // Any output infinite or NaN makes the sum so (or an overflow
            // does, rarely: then nothing is recomputed).
            let mut sums = [0.0f32; SEPS_CHUNK];
            unroll!(const R in [0, 1, 2, 3, 4, 5, 6, 7] below SEPS_CHUNK => {
                let o = acc[R];
                sums[R] = (o[0] + o[1]) + (o[2] + o[3]);
                if y + (R as u32) < y_end {
                    let p = out.wrapping_offset(R as isize * ostride);
                    if whole {
                        // SAFETY: columns x_out … x_out + 3 of an output row
                        // inside the image, 16-byte aligned; no other thread
                        // writes them.
                        unsafe { f32::store4(p, o) };
                    } else if writes {
                        unroll!(const E in [0, 1, 2, 3] below 4 => {
                            if x_out + (E as i32) < w {
                                // SAFETY: inside the output row.
                                unsafe { *p.add(E) = o[E] };
                            }
                        });
                    }
                }
            });
            let sum = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]));
            // SAFETY: every lane is here.
            if unsafe { ballot(FULL_MASK, writes && !sum.is_finite()) } != 0 {
                // The rare path, one output at a time: those infinite or
                // NaN inside the image.
                let mut bad = 0u32;
                unroll!(const R in [0, 1, 2, 3, 4, 5, 6, 7] below SEPS_CHUNK => {
                    unroll!(const E in [0, 1, 2, 3] below 4 => {
                        let v = acc[R][E];
                        let inside = y + (R as u32) < y_end && x_out + (E as i32) < w;
                        bad |= ((!v.is_finite() && inside) as u32) << (4 * R + E);
                    });
                });
                while bad != 0 {
                    let b = bad.trailing_zeros();
                    bad &= bad - 1;
                    let (r, e) = (b / 4, b % 4);
                    let yo = if flip { hgt - 1 - (y + r) as i32 } else { (y + r) as i32 };
                    // SAFETY: output (x_out + e, yo) lies inside the image
                    // (the bit says so) and is this lane's.
                    unsafe {
                        *out.wrapping_offset(r as isize * ostride + e as isize) = exact::<P>(a, H, x_out + e as i32, yo)
                    };
                }
            }
            first = if first + (SEPS_CHUNK as u32) < T as u32 {
                first + SEPS_CHUNK as u32
            } else {
                first + SEPS_CHUNK as u32 - T as u32
            };
            y += SEPS_CHUNK as u32;
            if y >= y_end {
                // The zero fills still in flight land before the block's
                // shared memory is released.
                wait_group::<0>();
                return;
            }
            out = out.wrapping_offset(SEPS_CHUNK as isize * ostride);
        }
    }

    macro_rules! seps_kernel {
        ($name:ident, $h:literal) => {
            /// See the module documentation (`conv::sepstream`).
            ///
            /// # Safety
            /// As the module documentation gives.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const f32,
                output: *mut f32,
                width: u32,
                height: u32,
                pitch: usize,
                rows: u32,
                mode: u32,
                mw: u32,
                mh: u32,
                lx: u32,
                ly: u32,
                _taps: ParamBytes<SEPS_PARAM_BYTES>,
            ) {
                crate::dev::sync::grid_dependency_wait();
                crate::param_symbol!(Taps = $name, 11);
                let a = Args { input, output, width, height, pitch, rows, mode, mw, mh, lx, ly };
                // SAFETY: same contract.
                unsafe {
                    seps::<
                        Taps,
                        $h,
                        { 2 * $h + 1 },
                        { seps_pad($h) },
                        { seps_line($h) },
                        { seps_ring($h) },
                        { seps_reach($h) },
                        { seps_run($h) },
                        { 4 + 2 * seps_pad($h) },
                    >(a)
                }
            }
        };
    }

    seps_kernel!(conv2d_seps_f32_h1, 1);
    seps_kernel!(conv2d_seps_f32_h2, 2);
    seps_kernel!(conv2d_seps_f32_h3, 3);
    seps_kernel!(conv2d_seps_f32_h4, 4);
    seps_kernel!(conv2d_seps_f32_h5, 5);
    seps_kernel!(conv2d_seps_f32_h6, 6);
    seps_kernel!(conv2d_seps_f32_h7, 7);
    seps_kernel!(conv2d_seps_f32_h8, 8);
    seps_kernel!(conv2d_seps_f32_h10, 10);
    seps_kernel!(conv2d_seps_f32_h12, 12);
    seps_kernel!(conv2d_seps_f32_h15, 15);
    seps_kernel!(conv2d_seps_f32_h20, 20);
}

#[cfg(test)]
mod tests {
    use super::*;

    extern crate std;

    #[test]
    fn tasks_cover_every_strip_and_row_once() {
        for (width, height, rows) in [(1, 1, 8), (128, 8, 8), (129, 17, 8), (1000, 1007, 64), (300, 5, 16)] {
            let mut seen = std::vec![0u8; (seps_strips(width) * height) as usize];
            let blocks = seps_blocks(width, height, rows);
            for b in 0..blocks + 5 {
                match seps_task(b, width, height, rows) {
                    Some((s, y0, y1)) => {
                        assert!(b < blocks && y0 < y1 && y1 <= height && y1 - y0 <= rows);
                        for y in y0..y1 {
                            seen[(y * seps_strips(width) + s) as usize] += 1;
                        }
                    }
                    None => assert!(b >= blocks),
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "{width}x{height} rows {rows}");
        }
    }

    #[test]
    fn odd_bands_of_the_long_band_kernels_walk_up() {
        // In every strip the first band walks down and each band goes the
        // other way from the one above it (so the two read their shared
        // rows together); only H = 7 and 8 turn.
        for h in SEPS_HALVES {
            for (width, height, rows) in [(129, 17, 8), (1000, 1007, 56), (300, 41, 64)] {
                let strips = seps_strips(width);
                for b in 0..seps_blocks(width, height, rows) {
                    let (s, y0, _) = seps_task(b, width, height, rows).unwrap();
                    let up = seps_walks_up(h, b, width);
                    assert!(seps_flips(h) || !up, "h{h} block {b}");
                    if y0 == 0 {
                        assert!(!up, "h{h} block {b}");
                    } else {
                        let (s_above, y_above, _) = seps_task(b - strips, width, height, rows).unwrap();
                        assert_eq!((s_above, y_above + rows), (s, y0));
                        assert_eq!(seps_walks_up(h, b - strips, width), seps_flips(h) && !up, "h{h} block {b}");
                    }
                }
            }
        }
        assert_eq!(SEPS_HALVES.map(seps_flips), SEPS_HALVES.map(|h| h == 7 || h == 8));
        assert!(!seps_walks_up(7, 1, 0));
    }

    #[test]
    fn layouts_fit_the_kernels() {
        for h in SEPS_HALVES {
            assert!(h <= SEPS_MAX_HALF && 4 + 2 * seps_pad(h) <= 48 && seps_ring(h) <= 48);
            // The ring holds a column pass's reach, and every pass's first
            // slot (k·SEPS_CHUNK mod T) starts a run that does not wrap.
            let (ring, run) = (seps_ring(h), seps_run(h));
            assert!(ring >= seps_reach(h) && ring < seps_reach(h) + 8 && ring.is_multiple_of(run));
            for k in 0..2 * ring {
                let first = k * SEPS_CHUNK % ring;
                assert!(first.is_multiple_of(run) && first + run <= ring, "h = {h}, pass {k}");
            }
            // Lanes copy 32 + pad / 2 16-byte pieces of each line.
            assert_eq!(seps_line(h), 4 * (32 + seps_pad(h) / 2));
            assert!(seps_shared_bytes(h) <= 48 * 1024, "h = {h}: {}", seps_shared_bytes(h));
        }
        assert_eq!(seps_shared_bytes(20), (48 * 128 + 8 * 168) * 4);
        // Rings rounded up to whole runs of 8 rows where that costs no
        // block per SM; not at H = 5 or 15.
        // Launch bounds: 16 blocks, and the shared memory's 13 where the
        // column taps are held for bands that walk up and 9 and 7 where the
        // row taps are hoisted (the C++ twins carry the same numbers).
        assert_eq!(SEPS_HALVES.map(seps_min_blocks), [16, 16, 16, 16, 16, 16, 13, 13, 16, 16, 9, 7]);
        let rings = SEPS_HALVES.map(|h| (seps_ring(h), seps_run(h)));
        assert_eq!(
            rings,
            [
                (16, 8),
                (16, 8),
                (16, 8),
                (16, 8),
                (18, 2),
                (20, 4),
                (24, 8),
                (24, 8),
                (28, 4),
                (32, 8),
                (38, 2),
                (48, 8)
            ]
        );
    }
}
