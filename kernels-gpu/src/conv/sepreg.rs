//! Register-blocked separable 2D filters for 8-bit images of 1, 3 or 4
//! interleaved channels and small masks (`conv2d_sepr{C}_u8_w{K}`, sm_80
//! and newer: a mask within a centred window of `K` = 3 or 5 taps per
//! axis, and 7 for gray images; any origin that keeps it there), and
//! their box form (`conv2d_sepb{C}_u8_w{K}`: see "Box masks" below).
//!
//! [`sepchan`](super::sepchan) stages square tiles in shared memory and
//! loops over the taps at run time; at `u8` RGB with a 5 × 5 box it spends
//! about 60 instructions per output. These kernels know the window at
//! compile time, keep every sum in registers and use no shared memory:
//!
//! 1. **A strip per lane, a band of rows per warp.** Each lane owns
//!    [`sepr_strip`] bytes of a row (4 RGB pixels, 8 gray, 3 RGBA: whole
//!    pixels, so each byte's channel is known at compile time) and walks
//!    down the warp's band of `rows` output rows. Lanes 1 … 30 write
//!    their strips; lanes 0 and 31 only lend their columns to their
//!    neighbours ([`SEPR_OUT_LANES`] strips per warp). Warps are
//!    independent: no barrier, no shared memory.
//! 2. **Rows prefetched in registers.** A lane loads its strip's bytes as
//!    32-bit words (`ld.global.nc`) [`sepr_unroll`] rows ahead of their
//!    use; a slot is widened before it is reloaded, so that the load
//!    lands in the registers it frees (a load still in flight that had to
//!    move at the loop's end would stall the warp). Lanes whose strip
//!    crosses a row's end gather it byte by byte through the boundary
//!    mode, from pixel offsets worked out once, before the word loads are
//!    issued; rows outside the image are mapped by the mode too (zeros in
//!    constant mode). Those lanes sit in the first and last warp columns,
//!    whose bands are shorter ([`sepr_task`]) so that every warp ends at
//!    about the same time.
//! 3. **Column pass first.** Each byte is widened to `f32` once, by
//!    `I2F.U8` with a byte selector (one instruction; placing the byte in
//!    the mantissa of 2²³ and subtracting it takes two, and measured no
//!    faster for sharing the work with the conversion pipe). The last `K`
//!    widened rows stay in registers, a ring unrolled so that no value
//!    moves, and the `K` column taps run over them.
//! 4. **Row pass over shuffled neighbours.** The column sums that the row
//!    taps need beyond the strip, [`sepr_halo`] values each side, come
//!    from the neighbouring lanes by `shfl.sync.up` / `.down`; the `K` row
//!    taps then run over the strip.
//! 5. **Rounding.** Four outputs are rounded to the nearest integer (ties
//!    to even), saturated to 0 … 255 and packed by `cvt.rni` +
//!    `cvt.pack.sat` (`F2IP.U8` on sm_90: two outputs per instruction),
//!    then stored as 32-bit words.
//!
//! Per output of an RGB 5 × 5 filter that is 10 multiply-adds, one widening,
//! one shuffle, half a rounding and a quarter of a load and of a store.
//!
//! The taps travel by value in the kernel's parameter space (see
//! [`crate::dev::param`]): the multiply-adds take them as uniform registers
//! (sm_90) or constant-bank operands (sm_80), and no launch shares them. A
//! mask narrower than `K`, or off centre (scipy's `origin`), is padded with
//! zero taps to the centred window: zero times a byte adds nothing.
//!
//! The host sends constant mode with `cval ≠ 0`, and layouts whose input
//! base or pitch is not a multiple of 16 bytes (or the output's of 4), to
//! [`sepchan`](super::sepchan).
//!
//! The kernels take `(input, output, width, height, in_pitch, out_pitch,
//! rows, edge_rows, mode, taps)`: pitches in bytes; the input's base and pitch
//! multiples of 16, the output's of 4; width and height at least `K`;
//! `rows` the output rows of each band, `edge_rows` those of the bands
//! of the first and last warp columns ([`sepr_task`]); `mode` a
//! [`Boundary`](super::Boundary) raw value (constant mode: zeros); `taps`
//! [`SEPR_PARAM_BYTES`] bytes, per channel `c` (`C` of them, the mask
//! repeated when one serves all) the `K` row taps at `2cK` and the `K`
//! column taps at `(2c + 1)K`, `f32`, correlation order, centred. Warp
//! `g` of the grid (blocks of [`SEPR_THREADS`], numbered along `x`) takes
//! task [`sepr_task`]`(g, cols, height, rows, edge_rows)`, `cols` =
//! [`sepr_columns`]; the grid holds at least [`sepr_warps`] warps.
//!
//! # Box masks
//!
//! A mask of `K × K` equal taps `t` (per channel) is the sum of the
//! window's bytes times `t`. The box kernels keep that sum exact, in
//! integers, with no multiply-add per tap (items 1, 2 and 5 as above):
//!
//! * **Pair words.** A strip of `B` bytes is held as `B / 2` words, word
//!   `q` holding byte `q` in its low 16 bits and byte `q + B/2` in its high
//!   16 (two `PRMT` per two words). A sum of `K²` bytes is at most
//!   49·255 < 2¹⁶, so one 32-bit add adds both halves exactly.
//! * **Column sums slide.** The ring holds the last `K` rows as pair
//!   words; each step adds the row that enters and subtracts the one that
//!   leaves (one `IADD3` per word).
//! * **Row sums slide.** The pair words `q ± C·j` beyond the strip mix
//!   this lane's halves with a neighbour's: one `SHFL.UP` and one `PRMT`
//!   build those left of the strip, and the right neighbour's left ones
//!   arrive by `SHFL.DOWN` (with `K = 5` RGBA, the words two strips away
//!   are a neighbour's own, shuffled as they are). The first `C` sums take
//!   `K − 1` adds, the others one `IADD3` from the sum `C` before.
//! * **One rounding.** Each half goes into the mantissa of 2²³ (one `PRMT`
//!   with 2²³ as a register operand, which the taps parameter supplies),
//!   and one `fma` with `t` and `−2²³·t` gives the sum times `t` rounded
//!   once to `f32`; then item 5.
//!
//! About 101 instructions per 12 bytes of an RGB 5 × 5 box on sm_90
//! against about 180 for the multiply-add form. The taps parameter holds,
//! per channel `c`, `t` at float `2cK` and `−2²³·t` at `(2c + 1)K`, and
//! 2²³ at float 1.

/// Threads per block.
pub const SEPR_THREADS: usize = 256;

/// Blocks per SM the launch bounds ask `ptxas` to fit.
pub const SEPR_MIN_BLOCKS: usize = 2;

/// Bytes of the taps parameter: up to 4 channels × 2 axes × 7 taps.
pub const SEPR_PARAM_BYTES: usize = 4 * 2 * 7 * 4;

/// The windows (taps per axis) the kernels are built for.
pub const SEPR_WIDTHS: [usize; 3] = [3, 5, 7];

/// Strips each warp writes: lanes 1 … 30 (lanes 0 and 31 lend their
/// columns to the row pass of lanes 1 and 30).
pub const SEPR_OUT_LANES: usize = 30;

/// Bytes of an output row each lane owns, for `channels` and window `k`:
/// whole pixels, a multiple of 4 bytes, and at least the row taps' reach
/// ([`sepr_halo`]).
pub const fn sepr_strip(channels: usize, k: usize) -> usize {
    let _ = k;
    match channels {
        3 | 4 => 12,
        _ => 8,
    }
}

/// Bytes each side of a strip that its row taps reach.
pub const fn sepr_halo(channels: usize, k: usize) -> usize {
    (k / 2) * channels
}

/// Rows each lane has in flight, and the steps the hot loop is unrolled
/// by: a multiple of `k` (so that the ring's slots are known at compile
/// time) of at least 5.
pub const fn sepr_unroll(k: usize) -> usize {
    if k < 5 { 2 * k } else { k }
}

/// Warp columns across a row of `width` pixels of `channels`.
pub const fn sepr_columns(width: usize, channels: usize, k: usize) -> usize {
    (width * channels).div_ceil(sepr_strip(channels, k)).div_ceil(SEPR_OUT_LANES)
}

/// Warp `warp`'s task: its warp column and its band of output rows
/// `y0 … y_end`, or `None` past the last. The first and last columns hold
/// the lanes that gather bytes through the boundary mode (a row's ends);
/// they take bands of `edge_rows` and come first, two warps a band; the
/// others take bands of `rows`. Every (column, row) of an image of `cols`
/// columns and `height` rows belongs to exactly one task.
pub const fn sepr_task(warp: u32, cols: u32, height: u32, rows: u32, edge_rows: u32) -> Option<(u32, u32, u32)> {
    if cols == 0 || height == 0 || rows == 0 || edge_rows == 0 {
        return None;
    }
    let edges = if cols >= 2 { 2 } else { 1 };
    let edge_warps = edges * height.div_ceil(edge_rows);
    let (col, band, r) = if warp < edge_warps {
        (if warp % edges == 1 { cols - 1 } else { 0 }, warp / edges, edge_rows)
    } else {
        let inner = cols - edges;
        let g = warp - edge_warps;
        if inner == 0 || g / inner >= height.div_ceil(rows) {
            return None;
        }
        (1 + g % inner, g / inner, rows)
    };
    let y0 = band * r;
    let y_end = if height - y0 < r { height } else { y0 + r };
    Some((col, y0, y_end))
}

/// Warps [`sepr_task`] numbers for an image of `cols` columns and
/// `height` rows.
pub const fn sepr_warps(cols: u32, height: u32, rows: u32, edge_rows: u32) -> u32 {
    let edges = if cols >= 2 { 2 } else { 1 };
    edges * height.div_ceil(edge_rows) + (cols - edges) * height.div_ceil(rows)
}

// `cvt.pack.sat` needs sm_72, and `ptxas` keeps the taps in uniform
// registers from sm_80 on: the kernels are built for sm_80 and newer.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
pub(crate) mod kernels {
    use super::{SEPR_OUT_LANES, SEPR_PARAM_BYTES, sepr_halo, sepr_strip, sepr_task, sepr_unroll};
    use crate::conv::elem::{ConvElem, unroll};
    use crate::dev::index::{block_dim_x, block_idx_x, thread_idx_x};
    use crate::dev::param::{ParamBytes, ParamSymbol};
    use crate::dev::warp::{FULL_MASK, ballot, shfl_down, shfl_down_f32, shfl_up, shfl_up_f32};
    use core::arch::asm;
    use core::marker::PhantomData;

    /// Byte `b` (a constant 0 … 3) of `w` as `f32`, by `I2F.U8` with a
    /// byte selector (the conversion pipe).
    #[inline(always)]
    fn byte_cvt(w: u32, b: u32) -> f32 {
        let f: f32;
        macro_rules! cvt {
            ($shift:literal) => {
                // SAFETY: arithmetic only; `ptxas` folds the shift into the
                // conversion's byte selector.
                unsafe {
                    asm!(concat!("{{ .reg .b32 t; shr.b32 t, {w}, ", $shift, "; cvt.rn.f32.u8 {f}, t; }}"),
                         f = out(reg32) f, w = in(reg32) w, options(pure, nomem, nostack, preserves_flags))
                }
            };
        }
        match b {
            0 => cvt!("0"),
            1 => cvt!("8"),
            2 => cvt!("16"),
            _ => cvt!("24"),
        }
        f
    }

    /// Four values rounded to the nearest integer (ties to even; NaN to
    /// 0), saturated to 0 … 255, packed little-endian (`v[0]` in the low
    /// byte): the rule of the other `u8` kernels.
    #[inline(always)]
    pub(crate) fn pack4(v: [f32; 4]) -> u32 {
        let r: u32;
        // SAFETY: arithmetic only. `cvt.pack.sat.u8.s32.b32 d, a, b, c`
        // gives `c << 16 | sat(a) << 8 | sat(b)`.
        unsafe {
            asm!(
                "{{ .reg .s32 a, b, c, d, hi;",
                "cvt.rni.s32.f32 a, {v0}; cvt.rni.s32.f32 b, {v1};",
                "cvt.rni.s32.f32 c, {v2}; cvt.rni.s32.f32 d, {v3};",
                "cvt.pack.sat.u8.s32.b32 hi, d, c, 0;",
                "cvt.pack.sat.u8.s32.b32 {r}, b, a, hi; }}",
                r = out(reg32) r, v0 = in(reg32) v[0], v1 = in(reg32) v[1], v2 = in(reg32) v[2],
                v3 = in(reg32) v[3], options(pure, nomem, nostack, preserves_flags)
            )
        };
        r
    }

    /// The launch's arguments (see the module docs).
    #[derive(Clone, Copy)]
    pub(super) struct Args {
        pub input: *const u8,
        pub output: *mut u8,
        pub width: u32,
        pub height: u32,
        pub in_pitch: usize,
        pub out_pitch: usize,
        pub rows: u32,
        pub edge_rows: u32,
        pub mode: u32,
    }

    /// Tap `j` of channel `c`'s row (`axis` 0) or column (`axis` 1) taps,
    /// read where it is used (not `pure`: LLVM neither hoists it out of
    /// the row loop nor merges reads); `ptxas` keeps the taps in uniform
    /// registers, the multiply-adds' operands, not in the threads'.
    #[inline(always)]
    fn tap<P: ParamSymbol, const K: usize>(c: usize, axis: usize, j: usize) -> f32 {
        let v: f32;
        let at = P::base() + (((2 * c + axis) * K + j) * 4) as u64;
        // SAFETY: (2c + axis)·K + j < 4·2·7 = SEPR_PARAM_BYTES / 4 for
        // c < 4, axis < 2, j < K ≤ 7: inside the taps parameter.
        unsafe {
            asm!("ld.param.f32 {v}, [{a}];", v = out(reg32) v, a = in(reg64) at, options(readonly, nostack, preserves_flags))
        };
        v
    }

    /// An axis's boundary mode as arithmetic: a position `p` outside
    /// `0 … n` maps to `lo.0·p + lo.1` below it and `hi.0·p + hi.1` above
    /// it, exact for `1 − n ≤ p ≤ 2n − 2` and `n ≥ 2` (the host sends images
    /// smaller than the window to [`sepchan`](super::super::sepchan)); −1 is
    /// zero (constant mode).
    /// The modes of [`map_index32`](crate::conv::boundary::map_index32)
    /// without their divisions or a branch per mode.
    #[derive(Clone, Copy)]
    pub(crate) struct Axis {
        n: i32,
        lo: (i32, i32),
        hi: (i32, i32),
    }

    impl Axis {
        #[inline(always)]
        pub(crate) fn new(n: i32, mode: u32) -> Axis {
            let (lo, hi) = match mode {
                1 => ((0, 0), (0, n - 1)),
                2 => ((-1, -1), (-1, 2 * n - 1)),
                3 => ((-1, 0), (-1, 2 * n - 2)),
                4 => ((1, n), (1, -n)),
                _ => ((0, -1), (0, -1)),
            };
            Axis { n, lo, hi }
        }

        /// The index position `p` takes, −1 for zero, and −1 too
        /// beyond one reflection (`p < 1 − n` or `p > 2n − 2`, where
        /// mirror mode would leave the axis: positions that only the
        /// lending lanes' spare bytes and the prefetches reach, never an
        /// output's window,
        /// on an axis of at least the window).
        #[inline(always)]
        pub(crate) fn map(self, p: i32) -> i32 {
            let (m, c) = if p < 0 { self.lo } else { self.hi };
            if 0 <= p && p < self.n {
                p
            } else if p < 1 - self.n || p > 2 * self.n - 2 {
                -1
            } else {
                m * p + c
            }
        }

        /// [`map`](Self::map) for `0 ≤ p ≤ 2n − 2`.
        #[inline(always)]
        pub(crate) fn map_high(self, p: i32) -> i32 {
            if p < self.n { p } else { self.hi.0 * p + self.hi.1 }
        }
    }

    /// The 32-bit word at `p`, or `or` when `!live` (a predicated load
    /// through the read-only path).
    ///
    /// # Safety
    /// When `live`: `p` 4-byte aligned, inside the input, which no thread
    /// writes during the launch.
    #[inline(always)]
    unsafe fn ld_word_or(p: *const u8, live: bool, or: u32) -> u32 {
        let v: u32;
        // SAFETY: the caller's contract; nothing is read when !live.
        unsafe {
            asm!(
                "{{ .reg .pred p; setp.ne.u32 p, {l}, 0; mov.u32 {v}, {o}; @p ld.global.nc.u32 {v}, [{a}]; }}",
                v = out(reg32) v, a = in(reg64) p, l = in(reg32) live as u32, o = in(reg32) or,
                options(readonly, nostack, preserves_flags)
            )
        };
        v
    }

    /// The byte at `p` (zero-extended), or 0 when `!live`.
    ///
    /// # Safety
    /// When `live`: `p` inside the input, which no thread writes during
    /// the launch.
    #[inline(always)]
    unsafe fn ld_byte(p: *const u8, live: bool) -> u32 {
        let v: u32;
        // SAFETY: the caller's contract; nothing is read when !live.
        unsafe {
            asm!(
                "{{ .reg .pred p; setp.ne.u32 p, {l}, 0; mov.u32 {v}, 0; @p ld.global.nc.u8 {v}, [{a}]; }}",
                v = out(reg32) v, a = in(reg64) p, l = in(reg32) live as u32,
                options(readonly, nostack, preserves_flags)
            )
        };
        v
    }

    /// Stores `v` at `p` when `live` (a predicated store).
    ///
    /// # Safety
    /// When `live`: `p` 4-byte aligned, inside the output, which no other
    /// thread writes.
    #[inline(always)]
    unsafe fn st_word(p: *mut u8, v: u32, live: bool) {
        // SAFETY: the caller's contract; nothing is written when !live.
        unsafe {
            asm!(
                "{{ .reg .pred p; setp.ne.u32 p, {l}, 0; @p st.global.u32 [{a}], {v}; }}",
                a = in(reg64) p, v = in(reg32) v, l = in(reg32) live as u32, options(nostack, preserves_flags)
            )
        };
    }

    /// Stores the low byte of `v` at `p` when `live`.
    ///
    /// # Safety
    /// When `live`: `p` inside the output, which no other thread writes.
    #[inline(always)]
    unsafe fn st_byte(p: *mut u8, v: u32, live: bool) {
        // SAFETY: the caller's contract; nothing is written when !live.
        unsafe {
            asm!(
                "{{ .reg .pred p; setp.ne.u32 p, {l}, 0; @p st.global.u8 [{a}], {v}; }}",
                a = in(reg64) p, v = in(reg32) v, l = in(reg32) live as u32, options(nostack, preserves_flags)
            )
        };
    }

    /// A lane's strip in its warp's task, and the loads and stores of its
    /// bytes (module docs, items 1 and 2): what both kinds of kernel share.
    /// `B` = [`sepr_strip`], `W` = `B / 4` (words per strip), `Q` = `B / C`
    /// (pixels per strip).
    #[derive(Clone, Copy)]
    struct Lane<const C: usize, const B: usize, const W: usize, const Q: usize> {
        a: Args,
        /// The column axis's boundary mode.
        rows: Axis,
        /// The strip's first byte in a row (negative left of the row).
        s: i32,
        /// Whether the strip lies inside the row (whole words).
        fast: bool,
        /// A gathering lane's pixel offsets (bytes; −1 for zeros).
        off: [i32; Q],
        /// Whether any lane of the warp gathers.
        gathers: bool,
        /// Whether this lane writes its strip, and the whole of it.
        writes: bool,
        whole: bool,
        /// Whether any lane of the warp writes part of a strip.
        partial: bool,
        /// The band's output rows.
        y0: u32,
        y_end: u32,
    }

    impl<const C: usize, const B: usize, const W: usize, const Q: usize> Lane<C, B, W, Q> {
        /// This warp's task: its warp column and band (`sepr_task`), or
        /// `None` past the last.
        #[inline(always)]
        fn task(a: &Args) -> Option<(u32, u32, u32)> {
            let cols = (a.width * C as u32).div_ceil(B as u32).div_ceil(SEPR_OUT_LANES as u32);
            let warp = block_idx_x() * (block_dim_x() / 32) + thread_idx_x() / 32;
            sepr_task(warp, cols, a.height, a.rows, a.edge_rows)
        }

        /// This lane's strip in the warp's task (from [`task`](Self::task);
        /// a separate step, since a strip built behind the task's `None`
        /// kept about 40 more registers live in `ptxas`).
        ///
        /// # Safety
        /// Every lane of the warp calls it (it votes).
        #[inline(always)]
        unsafe fn new(a: Args, (col, y0, y_end): (u32, u32, u32)) -> Self {
            const { assert!(W * 4 == B && Q * C == B) };
            let row_bytes = a.width * C as u32;
            let lane = thread_idx_x() % 32;
            let strips = row_bytes.div_ceil(B as u32);
            // This lane's strip (−1 left of the row) and its first byte.
            let sp = (col * SEPR_OUT_LANES as u32 + lane) as i32 - 1;
            let s = sp * B as i32;
            let (rows, cols_ax) = (Axis::new(a.height as i32, a.mode), Axis::new(a.width as i32, a.mode));
            // Inside the row: whole words. Past the right neighbour of the
            // last strip: nothing needed. Between: byte by byte from the
            // pixels the mode maps the strip's to (−1: zero).
            let fast = s >= 0 && s as u32 + B as u32 <= row_bytes;
            let dead = sp > strips as i32;
            let mut off = [-1i32; Q];
            if !fast && !dead {
                unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7] below Q => {
                    let px = cols_ax.map(sp * Q as i32 + I as i32);
                    off[I] = if px >= 0 { px * C as i32 } else { -1 };
                });
            }
            let writes = lane >= 1 && lane <= SEPR_OUT_LANES as u32 && (sp as u32) < strips;
            let whole = writes && s as u32 + B as u32 <= row_bytes;
            // Warp-uniform branches around the rare paths.
            // SAFETY: every lane of the warp is here (the caller's contract;
            // whole warps left above).
            let (gathers, partial) =
                unsafe { (ballot(FULL_MASK, !fast && !dead) != 0, ballot(FULL_MASK, writes && !whole) != 0) };
            Lane { a, rows, s, fast, off, gathers, writes, whole, partial, y0, y_end }
        }

        /// Input row `yy` of the strip as words (a row the mode maps to,
        /// −1 for zeros), zeros unless `want`.
        #[inline(always)]
        fn load(&self, yy: i32, want: bool) -> [u32; W] {
            let live = want && yy >= 0;
            // Not dereferenced unless live (then row yy < height).
            let line = self.a.input.wrapping_add(yy.max(0) as usize * self.a.in_pitch);
            // The gathered words come first: a value computed after the
            // loads were issued into the same registers would wait for them.
            let mut g = [0u32; W];
            if self.gathers {
                unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below B => {
                    let o = self.off[I / C];
                    // SAFETY: read when live and o ≥ 0 (a gathering lane):
                    // pixel o / C < width, channel I % C, of row yy.
                    let b = unsafe { ld_byte(line.wrapping_add(o.max(0) as usize + I % C), live && o >= 0) };
                    g[I / 4] |= b << (8 * (I % 4));
                });
            }
            let mut w = [0u32; W];
            unroll!(const I in [0, 1, 2, 3] below W => {
                // SAFETY: read when live and fast: bytes s + 4I … s + 4I + 4
                // of row yy, inside it, 4-byte aligned (base, pitch and s are).
                w[I] = unsafe {
                    ld_word_or(line.wrapping_offset(self.s as isize + 4 * I as isize), live && self.fast, g[I])
                };
            });
            w
        }

        /// Stores a row of the strip at `out` (its first byte in the
        /// output row), rounded and packed by [`pack4`].
        #[inline(always)]
        fn store(&self, out: *mut u8, v: &[f32; B]) {
            let mut words = [0u32; W];
            unroll!(const I in [0, 1, 2, 3] below W => {
                words[I] = pack4([v[4 * I], v[4 * I + 1], v[4 * I + 2], v[4 * I + 3]]);
                // SAFETY: written when whole: bytes s + 4I … s + 4I + 4 of
                // an output row, inside it, 4-byte aligned.
                unsafe { st_word(out.wrapping_add(4 * I), words[I], self.whole) };
            });
            if self.partial {
                let row_bytes = self.a.width * C as u32;
                unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below B => {
                    let inside = self.writes && !self.whole && self.s as u32 + (I as u32) < row_bytes;
                    // SAFETY: written when inside the row.
                    unsafe { st_byte(out.wrapping_add(I), words[I / 4] >> (8 * (I % 4)), inside) };
                });
            }
        }
    }

    /// What a kernel does with the rows that pass down its lane: widen a
    /// row of words into `Row` once, and turn the window of the last `K`
    /// rows into an output row.
    trait Pass<const W: usize, const K: usize, const B: usize> {
        type Row: Copy;
        /// A row of zeros.
        const ZERO: Self::Row;
        /// A row of words widened.
        fn widen(w: [u32; W]) -> Self::Row;
        /// Takes one of the first `K − 1` rows, before any output.
        fn prime(&mut self, row: Self::Row);
        /// Takes the next row, `new`, into ring slot `(r + K − 1) % K`
        /// (the oldest row's).
        fn enter(&mut self, ring: &mut [Self::Row; K], new: Self::Row, r: usize);
        /// The output row whose window the ring holds, before rounding:
        /// slot `(r + J) % K` holds the window's row `J`.
        ///
        /// # Safety
        /// Every lane of the warp calls it (it shuffles).
        unsafe fn step(&mut self, ring: &[Self::Row; K], r: usize) -> [f32; B];
    }

    /// Walks `lane`'s band: input rows arrive [`sepr_unroll`] (`U`) rows
    /// ahead of their use and pass through `pass` (module docs, item 2).
    ///
    /// # Safety
    /// Every lane of the warp calls it.
    #[inline(always)]
    unsafe fn walk<const C: usize, const B: usize, const W: usize, const Q: usize, const K: usize, const U: usize, T>(
        lane: &Lane<C, B, W, Q>,
        pass: &mut T,
    ) where
        T: Pass<W, K, B>,
    {
        const { assert!(U.is_multiple_of(K) && U >= K && K <= 7 && U <= 10) };
        // Input row top + n is the band's n-th; it waits in slot n % U of
        // `pre` and, widened, in slot n % K of the ring.
        let half = (K / 2) as i32;
        let top = lane.y0 as i32 - half;
        let total = (lane.y_end - lane.y0) as i32 + 2 * half;
        let mut pre = [[0u32; W]; U];
        unroll!(const J in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] below U => {
            pre[J] = lane.load(lane.rows.map(top + J as i32), (J as i32) < total);
        });
        let mut ring = [T::ZERO; K];
        unroll!(const J in [0, 1, 2, 3, 4, 5] below K - 1 => {
            ring[J] = T::widen(pre[J]);
            pass.prime(ring[J]);
            pre[J] = lane.load(lane.rows.map(top + (J + U) as i32), ((J + U) as i32) < total);
        });
        // Output row y0 + m takes row n = m + K − 1. Each step leaves at
        // the end instead of skipping the rest: a skipped step would merge
        // each ring slot's old and new values, and keep both alive through
        // every step. (Whole rounds of `U` steps without that branch, one
        // block that `ptxas` schedules across steps, were slower: their
        // loads waited longer, and the kernels spilled.)
        let mut y = lane.y0;
        let mut n = (K - 1) as i32;
        let mut out = lane.a.output.wrapping_add(lane.y0 as usize * lane.a.out_pitch).wrapping_offset(lane.s as isize);
        loop {
            unroll!(const R in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] below U => {
                if y >= lane.y_end {
                    return;
                }
                // The slot is widened before it is reloaded, so that the
                // load can land in the registers it frees (a load still in
                // flight that had to move at the loop's end would stall).
                let slot = (R + K - 1) % U;
                pass.enter(&mut ring, T::widen(pre[slot]), R);
                // Row top + n + U ≥ y0 + U > 0: only the bottom edge maps,
                // and rows past y_end − 1 + K/2 ≤ 2·height − 2 are not read.
                pre[slot] = lane.load(lane.rows.map_high(top + n + U as i32), n + (U as i32) < total);
                // SAFETY: every lane of the warp is here (the band's steps
                // are warp-uniform).
                let v = unsafe { pass.step(&ring, R) };
                lane.store(out, &v);
                out = out.wrapping_add(lane.a.out_pitch);
                y += 1;
                n += 1;
            });
        }
    }

    /// The separable pass (module docs, items 3 to 5): `H` = [`sepr_halo`].
    struct Taps<P, const C: usize, const B: usize, const H: usize>(PhantomData<P>);

    impl<P: ParamSymbol, const C: usize, const B: usize, const H: usize, const W: usize, const K: usize> Pass<W, K, B>
        for Taps<P, C, B, H>
    {
        type Row = [f32; B];
        const ZERO: [f32; B] = [0.0; B];

        /// The strip's bytes widened, each once.
        #[inline(always)]
        fn widen(w: [u32; W]) -> [f32; B] {
            let mut x = [0.0f32; B];
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below B => {
                x[I] = byte_cvt(w[I / 4], (I % 4) as u32);
            });
            x
        }

        #[inline(always)]
        fn prime(&mut self, _: [f32; B]) {}

        #[inline(always)]
        fn enter(&mut self, ring: &mut [[f32; B]; K], new: [f32; B], r: usize) {
            ring[(r + K - 1) % K] = new;
        }

        #[inline(always)]
        unsafe fn step(&mut self, ring: &[[f32; B]; K], r: usize) -> [f32; B] {
            const { assert!(W * 4 == B && H <= B && 2 * C * K * 4 <= SEPR_PARAM_BYTES) };
            // The column taps in tap order.
            let mut v = [0.0f32; B];
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below B => {
                let c = I % C;
                let mut acc = ring[r % K][I] * tap::<P, K>(c, 1, 0);
                unroll!(const J in [1, 2, 3, 4, 5, 6] below K => {
                    acc = f32::fma(ring[(r + J) % K][I], tap::<P, K>(c, 1, J), acc);
                });
                v[I] = acc;
            });
            // The row taps' reach beyond the strip, from the lanes either
            // side: `u[i]` is strip byte i − H.
            let mut u = [0.0f32; 40];
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] below H => {
                // SAFETY: every lane of the warp is here (the caller's contract).
                unsafe {
                    u[I] = shfl_up_f32(FULL_MASK, v[B - H + I], 1);
                    u[H + B + I] = shfl_down_f32(FULL_MASK, v[I], 1);
                }
            });
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below B => {
                u[H + I] = v[I];
            });
            let mut o = [0.0f32; B];
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below B => {
                let c = I % C;
                let mut acc = u[I] * tap::<P, K>(c, 0, 0);
                unroll!(const J in [1, 2, 3, 4, 5, 6] below K => {
                    acc = f32::fma(u[I + J * C], tap::<P, K>(c, 0, J), acc);
                });
                o[I] = acc;
            });
            o
        }
    }

    /// `prmt.b32`: bytes of `{b, a}` picked by the four selector nibbles
    /// of `sel` (0 … 3 from `a`, 4 … 7 from `b`), low byte first.
    #[inline(always)]
    pub(crate) fn prmt(a: u32, b: u32, sel: u32) -> u32 {
        let d: u32;
        // SAFETY: arithmetic only; `sel` is a constant where it is used,
        // which `ptxas` folds into the instruction.
        unsafe {
            asm!("prmt.b32 {d}, {a}, {b}, {s};", d = out(reg32) d, a = in(reg32) a, b = in(reg32) b,
                 s = in(reg32) sel, options(pure, nomem, nostack, preserves_flags))
        };
        d
    }

    /// The box pass (module docs, "Box masks"): `D` = `B / 2` pair words,
    /// `H` = [`sepr_halo`]. Word `q` of a row holds the values of strip
    /// bytes `q` (low half) and `q + D` (high half) as 16-bit integers.
    struct Boxes<P, const C: usize, const B: usize, const H: usize, const D: usize> {
        /// The column sums of the window's rows, as pair words.
        sums: [u32; D],
        taps: PhantomData<P>,
    }

    impl<P: ParamSymbol, const C: usize, const B: usize, const H: usize, const D: usize, const W: usize, const K: usize>
        Pass<W, K, B> for Boxes<P, C, B, H, D>
    {
        type Row = [u32; D];
        const ZERO: [u32; D] = [0; D];

        /// The strip's bytes as pair words: strip bytes `q, q + 1` and
        /// `q + D, q + D + 1` (`q` even: each two in one word) gathered by
        /// one `PRMT`, then each pair spread by one more.
        #[inline(always)]
        fn widen(w: [u32; W]) -> [u32; D] {
            const { assert!(D * 2 == B && D.is_multiple_of(2) && W * 4 == B) };
            let mut p = [0u32; D];
            unroll!(const I in [0, 2, 4, 6] below D => {
                let (lo, hi) = ((I % 4) as u32, 4 + ((I + D) % 4) as u32);
                let t = prmt(w[I / 4], w[(I + D) / 4], lo | (lo + 1) << 4 | hi << 8 | (hi + 1) << 12);
                p[I] = prmt(t, 0, 0x4240);
                p[I + 1] = prmt(t, 0, 0x4341);
            });
            p
        }

        #[inline(always)]
        fn prime(&mut self, row: [u32; D]) {
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7] below D => {
                self.sums[I] = self.sums[I].wrapping_add(row[I]);
            });
        }

        /// The new row enters the column sums and the oldest leaves. Every
        /// half stays within 0 … K·255 (the sum of K bytes), so the 32-bit
        /// arithmetic adds and subtracts both halves exactly.
        #[inline(always)]
        fn enter(&mut self, ring: &mut [[u32; D]; K], new: [u32; D], r: usize) {
            let slot = (r + K - 1) % K;
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7] below D => {
                self.sums[I] = self.sums[I].wrapping_add(new[I]).wrapping_sub(ring[slot][I]);
            });
            ring[slot] = new;
        }

        #[inline(always)]
        unsafe fn step(&mut self, _: &[[u32; D]; K], _: usize) -> [f32; B] {
            const { assert!(H <= 2 * D && 2 * C * K * 4 <= SEPR_PARAM_BYTES && D <= 8) };
            let cs = self.sums;
            // `e[q + H]` = the pair word of strip bytes q and q + D for
            // −H ≤ q < D + H. Left of the strip it mixes this lane's and
            // its left neighbour's sums (`left[i]`, q = i − D), further
            // left it is the neighbour's own; right of the strip it is the
            // right neighbour's `left` (q = i + D), then its own.
            let mut e = [0u32; 32];
            let mut left = [0u32; D];
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7] below D => {
                e[H + I] = cs[I];
                let mixed = I + H >= D || I < H;
                if mixed || I + H >= 2 * D {
                    // SAFETY: every lane of the warp is here.
                    let up = unsafe { shfl_up(FULL_MASK, cs[I], 1) };
                    if I + H >= 2 * D {
                        e[H + I - 2 * D] = up;
                    }
                    if mixed {
                        // Low half: the neighbour's byte I + D; high
                        // half: this lane's byte I.
                        left[I] = prmt(cs[I], up, 0x1076);
                        if I + H >= D {
                            e[H + I - D] = left[I];
                        }
                    }
                }
            });
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7] below D => {
                // SAFETY: every lane of the warp is here.
                unsafe {
                    if I < H {
                        e[H + D + I] = shfl_down(FULL_MASK, left[I], 1);
                    }
                    if I + D < H {
                        e[H + 2 * D + I] = shfl_down(FULL_MASK, cs[I], 1);
                    }
                }
            });
            // The row sums: word q sums the K words C apart centred on q;
            // past the first C, each is the one C before it with a word
            // in and a word out.
            let mut s = [0u32; D];
            unroll!(const Q in [0, 1, 2, 3, 4, 5, 6, 7] below D => {
                if Q < C {
                    let mut acc = e[Q];
                    unroll!(const J in [1, 2, 3, 4, 5, 6] below K => {
                        acc = acc.wrapping_add(e[Q + J * C]);
                    });
                    s[Q] = acc;
                } else {
                    s[Q] = s[Q - C].wrapping_sub(e[Q - C]).wrapping_add(e[Q + 2 * H]);
                }
            });
            // Each sum times its channel's tap, rounded once: the sum
            // placed in the mantissa of 2²³ (exact), times the tap, less
            // 2²³ times the tap (exact), by one `fma`.
            // 2²³ comes from the taps parameter: as a register operand it
            // lets one `PRMT` (its selector the immediate) build each value.
            let magic = tap::<P, K>(0, 0, 1).to_bits();
            let mut o = [0.0f32; B];
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below B => {
                let c = I % C;
                let f = f32::from_bits(prmt(s[I % D], magic, if I < D { 0x7610 } else { 0x7632 }));
                o[I] = f32::fma(f, tap::<P, K>(c, 0, 0), tap::<P, K>(c, 1, 0));
            });
            o
        }
    }

    macro_rules! sepr_kernel {
        ($name:ident, $c:literal, $k:literal, $pass:ident) => {
            /// See the module documentation (`conv::sepreg`).
            ///
            /// # Safety
            /// As the module documentation gives.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const u8,
                output: *mut u8,
                width: u32,
                height: u32,
                in_pitch: usize,
                out_pitch: usize,
                rows: u32,
                edge_rows: u32,
                mode: u32,
                _taps: ParamBytes<SEPR_PARAM_BYTES>,
            ) {
                crate::dev::sync::grid_dependency_wait();
                crate::param_symbol!(P = $name, 9);
                const B: usize = sepr_strip($c, $k);
                const H: usize = sepr_halo($c, $k);
                let a = Args { input, output, width, height, in_pitch, out_pitch, rows, edge_rows, mode };
                // SAFETY: every lane of every warp gets here (whole warps
                // leave); the arguments as the module docs give.
                unsafe {
                    type L = Lane<$c, B, { B / 4 }, { B / $c }>;
                    // Whole warps leave (the shuffles need every lane).
                    let Some(task) = L::task(&a) else { return };
                    let lane = L::new(a, task);
                    let mut pass = sepr_kernel!(@pass $pass, P, $c, B, H);
                    walk::<$c, B, { B / 4 }, { B / $c }, $k, { sepr_unroll($k) }, _>(&lane, &mut pass)
                }
            }
        };
        (@pass Taps, $p:ident, $c:literal, $b:ident, $h:ident) => {
            Taps::<$p, $c, $b, $h>(PhantomData)
        };
        (@pass Boxes, $p:ident, $c:literal, $b:ident, $h:ident) => {
            Boxes::<$p, $c, $b, $h, { $b / 2 }> { sums: [0; $b / 2], taps: PhantomData }
        };
    }

    sepr_kernel!(conv2d_sepr1_u8_w3, 1, 3, Taps);
    sepr_kernel!(conv2d_sepr3_u8_w3, 3, 3, Taps);
    sepr_kernel!(conv2d_sepr4_u8_w3, 4, 3, Taps);
    sepr_kernel!(conv2d_sepr1_u8_w5, 1, 5, Taps);
    sepr_kernel!(conv2d_sepr3_u8_w5, 3, 5, Taps);
    sepr_kernel!(conv2d_sepr4_u8_w5, 4, 5, Taps);
    sepr_kernel!(conv2d_sepr1_u8_w7, 1, 7, Taps);
    sepr_kernel!(conv2d_sepb1_u8_w3, 1, 3, Boxes);
    sepr_kernel!(conv2d_sepb3_u8_w3, 3, 3, Boxes);
    sepr_kernel!(conv2d_sepb4_u8_w3, 4, 3, Boxes);
    sepr_kernel!(conv2d_sepb1_u8_w5, 1, 5, Boxes);
    sepr_kernel!(conv2d_sepb3_u8_w5, 3, 5, Boxes);
    sepr_kernel!(conv2d_sepb4_u8_w5, 4, 5, Boxes);
    sepr_kernel!(conv2d_sepb1_u8_w7, 1, 7, Boxes);
}
