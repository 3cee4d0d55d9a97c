//! Register-blocked separable 2D filters for 8-bit images of 1, 3 or 4
//! interleaved channels and small masks (`conv2d_sepr{C}_u8_w{K}`, sm_80
//! and newer: a mask within a centred window of `K` = 3 or 5 taps per
//! axis, and 7 for gray images; any origin that keeps it there).
//!
//! [`sepchan`](super::sepchan) stages square tiles in shared memory and
//! loops over the taps at run time; at `u8` RGB with a 5 × 5 box it spends
//! about 60 instructions per output. These kernels know the window at
//! compile time and keep the sums in registers:
//!
//! 1. **A strip per thread.** Each thread owns [`sepr_strip`] bytes of an
//!    output row (4 RGB pixels, 8 or 16 gray, 2 or 4 RGBA: whole pixels,
//!    so each byte's channel is known at compile time) and walks down a
//!    run of `rows` output rows.
//! 2. **Rows staged per warp.** A warp's 32 strips with [`SEPR_PAD`]
//!    bytes on either side arrive in shared memory by `cp.async`, 16 bytes
//!    per lane, into one of
//!    [`SEPR_STAGES`] slots: three rows are in flight while one is used,
//!    without holding registers. Only `bar.warp.sync` orders them, never a
//!    block barrier. Bytes outside the row, where a warp's slot reaches
//!    past either end, are written one by one through the boundary mode
//!    (zeros in constant mode), and rows outside the image likewise.
//! 3. **Row pass.** Each lane reads its window (the strip and the row
//!    taps' reach) as 32-bit words, widens every byte to `f32` once (half
//!    of them by `I2F.U8` with a byte selector, half by placing the byte in
//!    the mantissa of 2²³ and subtracting it, so the conversion pipe and
//!    the ALUs share the work) and sums the `K` row taps in tap order.
//! 4. **Column pass in registers.** The last `K` row results stay in
//!    registers, a ring unrolled `K` times so that no value moves; each
//!    output row is the `K` column taps over them in tap order.
//! 5. **Rounding.** Four outputs are rounded to the nearest integer (ties
//!    to even), saturated to 0 … 255 and packed by `cvt.rni` +
//!    `cvt.pack.sat` (`F2IP.U8` on sm_90: two outputs per instruction),
//!    then stored as 32-bit words.
//!
//! The taps travel by value in the kernel's parameter space (see
//! [`crate::dev::param`]): the multiply-adds take them as uniform registers
//! (sm_90) or constant-bank operands (sm_80), and no launch shares them. A mask narrower than `K`, or off
//! centre (scipy's `origin`), is padded with zero taps to the centred
//! window: zero times a byte adds nothing.
//!
//! The code is kept small on purpose: the `K` unrolled steps of the ring
//! are the hot loop, and every path they inline is fetched with them (a
//! build that also handled a nonzero `cval` and 4-byte-aligned rows inside
//! the steps spent a third of its cycles waiting for instructions). So
//! the host sends constant mode with `cval ≠ 0`, and inputs whose base or
//! pitch is not a multiple of 16 bytes, to [`sepchan`](super::sepchan).
//!
//! The kernels take `(input, output, width, height, in_pitch, out_pitch,
//! rows, mode, taps)`: pitches in bytes; the input's base and pitch
//! multiples of 16, the output's of 4; width and height at least `K`;
//! `rows` the output rows of each block row (grid `y`); `mode` a
//! [`Boundary`](super::Boundary) raw value (constant mode: zeros); `taps`
//! [`SEPR_PARAM_BYTES`] bytes, per channel `c` (`C` of them, the mask
//! repeated when one serves all) the `K` row taps at `2cK` and the `K`
//! column taps at `(2c + 1)K`, `f32`, correlation order, centred.

/// Threads per block.
pub const SEPR_THREADS: usize = 256;

/// Bytes of the taps parameter: up to 4 channels × 2 axes × 7 taps.
pub const SEPR_PARAM_BYTES: usize = 4 * 2 * 7 * 4;

/// The windows (taps per axis) the kernels are built for.
pub const SEPR_WIDTHS: [usize; 3] = [3, 5, 7];

/// Input rows each warp has in flight or in use: its staging slots.
pub const SEPR_STAGES: usize = 4;

/// Bytes each slot holds left and right of its warp's strips (at least
/// the row taps' reach, [`sepr_halo`] + [`sepr_shift`]; 16 keeps the copies
/// 16-byte aligned).
pub const SEPR_PAD: usize = 16;

/// Bytes of a warp's staging slot: 32 strips of `strip` bytes and the pads.
pub const fn sepr_slot(strip: usize) -> usize {
    32 * strip + 2 * SEPR_PAD
}

/// Dynamic shared memory of a block of `threads`, bytes.
pub const fn sepr_shared_bytes(channels: usize, k: usize, threads: usize) -> usize {
    threads / 32 * SEPR_STAGES * sepr_slot(sepr_strip(channels, k))
}

/// Bytes of an output row each thread owns, for `channels` and window `k`.
pub const fn sepr_strip(channels: usize, k: usize) -> usize {
    match (channels, k) {
        (3, _) => 12,
        (_, 3) => 16,
        _ => 8,
    }
}

/// Bytes each side of a strip that its row taps reach.
pub const fn sepr_halo(channels: usize, k: usize) -> usize {
    (k / 2) * channels
}

/// Bytes of the window a thread widens per row: strip and both halos.
pub const fn sepr_window(channels: usize, k: usize) -> usize {
    sepr_strip(channels, k) + 2 * sepr_halo(channels, k)
}

/// Bytes from the first word a thread reads to its window's first byte.
pub const fn sepr_shift(channels: usize, k: usize) -> usize {
    (4 - sepr_halo(channels, k) % 4) % 4
}

/// 32-bit words a thread reads per row.
pub const fn sepr_words(channels: usize, k: usize) -> usize {
    (sepr_shift(channels, k) + sepr_window(channels, k)).div_ceil(4)
}

// `cvt.pack.sat` needs sm_72 and the staging `cp.async` sm_80: the
// kernels are built for sm_80 and newer.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
mod kernels {
    #[cfg(doc)]
    use super::sepr_shared_bytes;
    use super::{
        SEPR_PAD, SEPR_PARAM_BYTES, SEPR_STAGES, sepr_halo, sepr_shift, sepr_slot, sepr_strip, sepr_window, sepr_words,
    };
    use crate::conv::elem::{ConvElem, opaque, unroll};
    use crate::dev::index::{block_dim_x, block_idx_x, block_idx_y, thread_idx_x};
    use crate::dev::param::{ParamBytes, ParamSymbol};
    use crate::dev::pipeline;
    use crate::dev::shared::{SharedElem, dynamic};
    use crate::dev::warp::sync_warp;
    use core::arch::asm;

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

    /// Byte `b` (a constant 0 … 3) of `w` as `f32`, exactly: the byte in
    /// the mantissa of 2²³ (one `PRMT`), less 2²³ (the ALUs).
    #[inline(always)]
    fn byte_magic(w: u32, b: u32) -> f32 {
        let m: u32;
        macro_rules! place {
            ($sel:literal) => {
                // SAFETY: arithmetic only.
                unsafe {
                    asm!(concat!("prmt.b32 {m}, {w}, 1258291200, ", $sel, ";"), m = out(reg32) m, w = in(reg32) w,
                         options(pure, nomem, nostack, preserves_flags))
                }
            };
        }
        match b {
            0 => place!("0x7650"),
            1 => place!("0x7651"),
            2 => place!("0x7652"),
            _ => place!("0x7653"),
        }
        f32::from_bits(m) - 8_388_608.0
    }

    /// Four values rounded to the nearest integer (ties to even; NaN to
    /// 0), saturated to 0 … 255, packed little-endian (`v[0]` in the low
    /// byte): the rule of the other `u8` kernels.
    #[inline(always)]
    fn pack4(v: [f32; 4]) -> u32 {
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
    struct Axis {
        n: i32,
        lo: (i32, i32),
        hi: (i32, i32),
    }

    impl Axis {
        #[inline(always)]
        fn new(n: i32, mode: u32) -> Axis {
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
        /// staging's pads and prefetches reach, never an output's window,
        /// on an axis of at least the window).
        #[inline(always)]
        fn map(self, p: i32) -> i32 {
            let (m, c) = if p < 0 { self.lo } else { self.hi };
            if 0 <= p && p < self.n {
                p
            } else if p < 1 - self.n || p > 2 * self.n - 2 {
                -1
            } else {
                m * p + c
            }
        }
    }

    /// Stores byte `v` at shared-window address `addr`.
    ///
    /// # Safety
    /// `addr` inside this block's shared memory.
    #[inline(always)]
    unsafe fn st_shared_u8(addr: u32, v: u8) {
        // SAFETY: the caller's contract.
        unsafe {
            asm!("st.shared.u8 [{a}], {v};", a = in(reg32) addr, v = in(reg16) v as u16, options(nostack, preserves_flags))
        };
    }

    /// The kernels: see the module docs. `B` = [`sepr_strip`], `H` =
    /// [`sepr_halo`], `N` = [`sepr_window`], `S` = [`sepr_shift`], `W` =
    /// [`sepr_words`].
    ///
    /// # Safety
    /// The arguments as the module docs give; blocks of
    /// [`SEPR_THREADS`](super::SEPR_THREADS) threads, a grid of
    /// `ceil(strips / 256) × ceil(height / rows)`, [`sepr_shared_bytes`]
    /// bytes of dynamic shared memory.
    #[inline(always)]
    pub(super) unsafe fn sepr<
        P: ParamSymbol,
        const C: usize,
        const K: usize,
        const B: usize,
        const H: usize,
        const N: usize,
        const S: usize,
        const W: usize,
    >(
        a: Args,
    ) {
        const { assert!(B == sepr_strip(C, K) && H == sepr_halo(C, K) && N == sepr_window(C, K)) };
        const { assert!(S == sepr_shift(C, K) && W == sepr_words(C, K) && H + S <= SEPR_PAD) };
        const { assert!(2 * C * K * 4 <= SEPR_PARAM_BYTES && B.is_multiple_of(4) && B.is_multiple_of(C)) };
        let row_bytes = a.width * C as u32;
        let t = thread_idx_x();
        let lane = t % 32;
        let strip = block_idx_x() * block_dim_x() + t;
        let strips = row_bytes.div_ceil(B as u32);
        // Whole warps leave (the warp shares its staging and barriers).
        if strip - lane >= strips {
            return;
        }
        let y0 = block_idx_y() * a.rows;
        if y0 >= a.height {
            return;
        }
        let y_end = if a.height - y0 < a.rows { a.height } else { y0 + a.rows };
        let s = strip * B as u32;
        let (rows, cols) = (Axis::new(a.height as i32, a.mode), Axis::new(a.width as i32, a.mode));

        // The warp's slots: SEPR_STAGES rows of bytes `base − PAD … base +
        // 32·B + PAD` (base = the warp's first byte), in 16-byte chunks.
        let slot = sepr_slot(B) as u32;
        // SAFETY: the host sizes the window (sepr_shared_bytes).
        let slots = unsafe { dynamic::<u32>() }.addr_of(0) + (t / 32) * SEPR_STAGES as u32 * slot;
        let origin = (s - lane * B as u32) as i32 - SEPR_PAD as i32;
        let chunks = slot / 16;
        let inside = |g: i32, bytes: u32| g >= 0 && g as u32 + bytes <= row_bytes;
        let warp_inside = inside(origin, slot);
        // Stages input row `y` into slot `k`, as one commit group: 16-byte
        // copies where they lie inside the row, byte by byte through the
        // boundary mode elsewhere; zeros outside the image in constant mode
        // (whose `cval` is 0 here).
        let stage = #[inline(always)]
        |y: i32, k: u32| {
            let yy = rows.map(y);
            // SAFETY: row yy < height when yy ≥ 0; not read otherwise.
            let line = unsafe { a.input.add(yy.max(0) as usize * a.in_pitch) };
            let live = yy >= 0;
            let dst = slots + k * slot;
            // A loop, not unrolled (by LLVM: its count is opaque; by
            // `ptxas`: `.pragma "nounroll"`): it runs at the rows' ends
            // only, and unrolled into each of the ring's steps it made the
            // hot loop too large for the instruction cache.
            let by_bytes = #[inline(always)]
            |g: i32, at: u32, n: u32| {
                for m in 0..opaque(n as usize) as u32 {
                    // SAFETY: a directive to `ptxas` at the loop's head.
                    unsafe { asm!(".pragma \"nounroll\";", options(nomem, nostack, preserves_flags)) };
                    let e = g + m as i32;
                    let p = e.div_euclid(C as i32);
                    let px = cols.map(p);
                    let value = if live && px >= 0 {
                        // SAFETY: pixel px < width, channel < C, of row yy.
                        unsafe { *line.add(px as usize * C + (e - p * C as i32) as usize) }
                    } else {
                        0
                    };
                    // SAFETY: byte at + m of this warp's slot k.
                    unsafe { st_shared_u8(at + m, value) };
                }
            };
            let mut q = lane;
            while q < chunks {
                let g = origin + 16 * q as i32;
                if warp_inside || inside(g, 16) {
                    // SAFETY: 16 bytes of row yy (when live), 16-byte
                    // aligned (base and pitch multiples of 16; origin a
                    // multiple of 16).
                    unsafe { pipeline::copy16(dst + 16 * q, line.offset(g as isize), live) };
                } else {
                    by_bytes(g, dst + 16 * q, 16);
                }
                q += 32;
            }
            pipeline::commit_group();
        };
        // This lane's window of the row in slot `k`, each byte widened.
        let widen = #[inline(always)]
        |k: u32| -> [f32; N] {
            let at = slots + k * slot + lane * B as u32 + (SEPR_PAD - H - S) as u32;
            let mut words = [0u32; W];
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10] below W => {
                // SAFETY: word I of this lane's window in slot k.
                words[I] = unsafe { u32::ld_shared(at + 4 * I as u32) };
            });
            let mut x = [0.0f32; N];
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                               20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39] below N => {
                let (word, byte) = (words[(S + I) / 4], ((S + I) % 4) as u32);
                x[I] = if I.is_multiple_of(2) { byte_cvt(word, byte) } else { byte_magic(word, byte) };
            });
            x
        };
        // The row taps over the window in slot `k`, in tap order.
        let row_pass = #[inline(always)]
        |k: u32| -> [f32; B] {
            let x = widen(k);
            let mut h = [0.0f32; B];
            unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below B => {
                let c = I % C;
                let mut acc = x[I] * tap::<P, K>(c, 0, 0);
                unroll!(const J in [1, 2, 3, 4, 5, 6] below K => {
                    acc = f32::fma(x[I + J * C], tap::<P, K>(c, 0, J), acc);
                });
                h[I] = acc;
            });
            h
        };
        let active = strip < strips;
        // Stores output row `y` of the strip.
        let store = #[inline(always)]
        |y: u32, v: &[f32; B]| {
            if !active {
                return;
            }
            // SAFETY: row y < height; bytes s … s + B of it clipped to the
            // row; 4-byte aligned (s a multiple of 4, base and pitch too).
            unsafe {
                let out = a.output.add(y as usize * a.out_pitch + s as usize);
                if s + B as u32 <= row_bytes {
                    unroll!(const Q in [0, 1, 2, 3] below B / 4 => {
                        let word = pack4([v[4 * Q], v[4 * Q + 1], v[4 * Q + 2], v[4 * Q + 3]]);
                        *out.cast::<u32>().add(Q) = word;
                    });
                } else {
                    unroll!(const Q in [0, 1, 2, 3] below B / 4 => {
                        let word = pack4([v[4 * Q], v[4 * Q + 1], v[4 * Q + 2], v[4 * Q + 3]]);
                        unroll!(const M in [0, 1, 2, 3] below 4 => {
                            if s + ((4 * Q + M) as u32) < row_bytes {
                                *out.add(4 * Q + M) = (word >> (8 * M)) as u8;
                            }
                        });
                    });
                }
            }
        };
        // Row `y` (consumed from slot `k`): the slot of the row before it
        // takes row y + STAGES − 1, then row y's copies are waited for.
        let next_row = #[inline(always)]
        |y: i32, k: u32| -> [f32; B] {
            // SAFETY: every lane of the warp is here (warp-uniform loop).
            unsafe { sync_warp() };
            stage(y + SEPR_STAGES as i32 - 1, (k + SEPR_STAGES as u32 - 1) % SEPR_STAGES as u32);
            pipeline::wait_group::<{ SEPR_STAGES as u32 - 1 }>();
            // SAFETY: as above; the other lanes' copies are then visible.
            unsafe { sync_warp() };
            row_pass(k)
        };

        // The ring: slot (n + j) % K holds the row pass of input row
        // y0 + n − K/2 + j while output row y0 + n is computed.
        let half = (K / 2) as i32;
        let top = y0 as i32 - half;
        unroll!(const J in [0, 1, 2, 3, 4, 5, 6, 7] below SEPR_STAGES - 1 => {
            stage(top + J as i32, J as u32);
        });
        let mut k = 0u32;
        let mut ring = [[0.0f32; B]; K];
        unroll!(const J in [0, 1, 2, 3, 4, 5] below K - 1 => {
            ring[J] = next_row(top + J as i32, k);
            k = if k + 1 == SEPR_STAGES as u32 { 0 } else { k + 1 };
        });
        // Each step leaves at the end instead of skipping the rest: a
        // skipped step would merge each ring slot's old and new values, and
        // keep both alive through every step.
        let mut y = y0;
        loop {
            unroll!(const R in [0, 1, 2, 3, 4, 5, 6] below K => {
                if y >= y_end {
                    pipeline::wait_group::<0>();
                    return;
                }
                ring[(R + K - 1) % K] = next_row(y as i32 + half, k);
                k = if k + 1 == SEPR_STAGES as u32 { 0 } else { k + 1 };
                let mut v = [0.0f32; B];
                unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] below B => {
                    let c = I % C;
                    let mut acc = ring[R % K][I] * tap::<P, K>(c, 1, 0);
                    unroll!(const J in [1, 2, 3, 4, 5, 6] below K => {
                        acc = f32::fma(ring[(R + J) % K][I], tap::<P, K>(c, 1, J), acc);
                    });
                    v[I] = acc;
                });
                store(y, &v);
                y += 1;
            });
        }
    }

    macro_rules! sepr_kernel {
        ($name:ident, $c:literal, $k:literal) => {
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
                mode: u32,
                _taps: ParamBytes<SEPR_PARAM_BYTES>,
            ) {
                crate::param_symbol!(Taps = $name, 8);
                let a = Args { input, output, width, height, in_pitch, out_pitch, rows, mode };
                // SAFETY: same contract.
                unsafe {
                    sepr::<
                        Taps,
                        $c,
                        $k,
                        { sepr_strip($c, $k) },
                        { sepr_halo($c, $k) },
                        { sepr_window($c, $k) },
                        { sepr_shift($c, $k) },
                        { sepr_words($c, $k) },
                    >(a)
                }
            }
        };
    }

    sepr_kernel!(conv2d_sepr1_u8_w3, 1, 3);
    sepr_kernel!(conv2d_sepr3_u8_w3, 3, 3);
    sepr_kernel!(conv2d_sepr4_u8_w3, 4, 3);
    sepr_kernel!(conv2d_sepr1_u8_w5, 1, 5);
    sepr_kernel!(conv2d_sepr3_u8_w5, 3, 5);
    sepr_kernel!(conv2d_sepr4_u8_w5, 4, 5);
    sepr_kernel!(conv2d_sepr1_u8_w7, 1, 7);
}
