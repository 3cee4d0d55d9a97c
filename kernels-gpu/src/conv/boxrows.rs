//! Box filters over 8-bit images by rows of 16-byte copies
//! (`conv2d_boxr{C}_u8_w{K}`, sm_80 and newer): one `K × K` box of equal
//! taps `t` for every channel (`C` = 1, 3 or 4 interleaved; `K` = 3 or
//! 5, and 7 for gray images), the sum of the window's bytes times `t`,
//! rounded to the nearest integer (ties to even) and saturated, as the
//! box form of [`sepreg`](super::sepreg) computes it.
//!
//! [`sepreg`](super::sepreg)'s box kernels give each lane 12 bytes and
//! borrow the row sums' reach from their neighbours by shuffles; these
//! give each thread 16 bytes of a row and let it fetch its reach itself:
//!
//! 1. **A block per strip of a band.** A block of [`BOXR_THREADS`]
//!    threads owns [`BOXR_BLOCK_BYTES`] bytes of a row, 16 a thread, and
//!    walks down a band of `rows` output rows; block `b` takes strip
//!    `b % strips` of band `b / strips`. No thread waits for another warp:
//!    no block barrier, no shuffle.
//! 2. **Rows in flight as copies.** A thread copies its 16 bytes of each
//!    input row (`cp.async.ca`) into its own slot of a ring of
//!    [`BOXR_DEPTH`] rows in shared memory. The 8 bytes either side that
//!    its sums reach are its neighbours' middle bytes: after its wait for
//!    its own group ([`wait_group`](crate::dev::pipeline::wait_group)) and
//!    a barrier of its warp, it reads them from the neighbours' slots, and
//!    a second barrier of the warp keeps the next copy into a slot after
//!    the neighbours' reads. Only lane 0 copies its left 8 bytes and lane
//!    31 (and the row's last thread) its right 8 into side slots, one
//!    8-byte copy each: the other lanes make no side requests, and the
//!    load/store queue takes two copies a row, not three. The rows in
//!    flight take no registers, so each thread keeps `BOXR_DEPTH − 1` rows
//!    of loads outstanding at two blocks per SM. Bytes the mode zeroes
//!    arrive as zeros (source size 0): rows outside the image in constant
//!    mode, and the reach past a row's ends. A row whose last thread is
//!    lane 0 takes zeros for that lane's right side (nearest, reflect and
//!    mirror mode fix them, item 3); in wrap mode the host sends such rows
//!    elsewhere ([`boxr_mode_fits`]).
//! 3. **Row ends through the mode.** The reach of the first thread of a
//!    row lies left of it, that of the last thread right of it. In wrap
//!    mode their side copies come from the row's other end; in nearest,
//!    reflect and mirror mode the bytes they need lie inside their own
//!    middle 16, and two `PRMT` a word pick them, by selectors worked out
//!    once from the mode. Rows outside the image are those the mode maps
//!    them to.
//! 4. **Pair words.** The window of 32 bytes is held as pair words, bytes
//!    `i` and `i + 2` in the low and high 16 bits of a word (one `PRMT`
//!    each); a sum of `K²` bytes is at most 49·255 < 2¹⁶, so one 32-bit add
//!    adds both halves exactly. The 16 outputs are 8 such words, bytes
//!    `q` and `q + 2` for `q` = 0, 1, 4, 5, 8, 9, 12, 13.
//! 5. **Sums slide.** A row's sums take `K − 1` adds, or one `IADD3` from
//!    the sum `C` bytes before; the column sums add the new row's sums and
//!    subtract the oldest, from a ring of `K` rows in registers.
//! 6. **One rounding.** Each half goes into the mantissa of 2²³ (one
//!    `PRMT` with 2²³ as a register operand, from the taps parameter); one
//!    `fma` with `t` and `−2²³·t` gives `s·t` rounded once to `f32`, and
//!    `cvt.rni` + `cvt.pack.sat` (`F2IP.U8`) round, saturate and pack; one
//!    16-byte store.
//!
//! The host sends here images whose row of `width · C` bytes is a
//! multiple of 16 and at least 32, both bases and pitches multiples of 16,
//! at least `K` rows and columns, one box for every channel and `cval` 0
//! in constant mode; the others take [`sepreg`](super::sepreg)'s box form.
//!
//! The kernels take `(input, output, width, height, in_pitch, out_pitch,
//! rows, mode, taps)`: pitches in bytes; `rows` the output rows of each
//! band; `mode` a [`Boundary`](super::Boundary) raw value; `taps`
//! [`BOXR_PARAM_BYTES`] bytes: `t`, `−2²³·t` and 2²³ as `f32` (then 4
//! unused). The grid holds
//! [`boxr_blocks`] blocks of [`BOXR_THREADS`] with [`BOXR_SHARED_BYTES`]
//! of dynamic shared memory.

/// Threads per block.
pub const BOXR_THREADS: usize = 256;

/// Blocks per SM the launch bounds ask `ptxas` to fit.
pub const BOXR_MIN_BLOCKS: usize = 2;

/// Bytes of a row each thread owns.
pub const BOXR_STRIP: usize = 16;

/// Bytes of a row each block owns.
pub const BOXR_BLOCK_BYTES: usize = BOXR_THREADS * BOXR_STRIP;

/// Rows in each thread's ring of copies.
pub const BOXR_DEPTH: usize = 6;

/// Bytes of one row of the ring: every thread's 16 middle bytes, then
/// every thread's 8 left bytes, then its 8 right bytes.
pub const BOXR_SLOT_BYTES: usize = BOXR_THREADS * (BOXR_STRIP + 16);

/// Dynamic shared memory per block.
pub const BOXR_SHARED_BYTES: usize = BOXR_DEPTH * BOXR_SLOT_BYTES;

/// Bytes of the taps parameter: `t`, `−2²³·t` and 2²³ (`f32`), and 4
/// unused (a parameter's size is a multiple of 16 bytes in the PTX).
pub const BOXR_PARAM_BYTES: usize = 16;

/// The kernels built, as `(channels, window)`.
pub const BOXR_SHAPES: [(usize, usize); 7] = [(1, 3), (3, 3), (4, 3), (1, 5), (3, 5), (4, 5), (1, 7)];

/// The kernels' names, in the order of [`BOXR_SHAPES`].
pub const BOXR_NAMES: [&str; 7] = [
    "conv2d_boxr1_u8_w3",
    "conv2d_boxr3_u8_w3",
    "conv2d_boxr4_u8_w3",
    "conv2d_boxr1_u8_w5",
    "conv2d_boxr3_u8_w5",
    "conv2d_boxr4_u8_w5",
    "conv2d_boxr1_u8_w7",
];

/// Bytes each side of a thread's 16 that its row sums reach.
pub const fn boxr_halo(channels: usize, k: usize) -> usize {
    (k / 2) * channels
}

/// Whether the kernels take an image of `width × height` pixels of
/// `channels` for window `k` (their layout's rules on the sizes; the
/// host checks bases and pitches at run time).
pub const fn boxr_fits(width: usize, height: usize, channels: usize, k: usize) -> bool {
    let row = width.saturating_mul(channels);
    let maps32 = super::boundary::axis_maps32;
    row.is_multiple_of(16) && row >= 32 && maps32(row) && width >= k && height >= k && maps32(height)
}

/// Whether the kernels take rows of `row_bytes` bytes in `mode` (a
/// [`Boundary`](super::Boundary) raw value) beyond [`boxr_fits`]: in wrap
/// mode not when the row's last thread is lane 0 of its warp (`row_bytes`
/// 16 past a multiple of 512), whose right side would need a second copy
/// (module docs, item 2).
pub const fn boxr_mode_fits(row_bytes: usize, mode: u32) -> bool {
    mode != super::Boundary::Wrap.raw() || row_bytes % (32 * BOXR_STRIP) != BOXR_STRIP
}

/// Blocks of a launch over `height` rows of `row_bytes` bytes in bands
/// of `rows` output rows.
pub const fn boxr_blocks(row_bytes: usize, height: usize, rows: usize) -> usize {
    if rows == 0 {
        return 0;
    }
    row_bytes.div_ceil(BOXR_BLOCK_BYTES) * height.div_ceil(rows)
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
mod kernels {
    use super::boxr_halo;
    use super::{BOXR_BLOCK_BYTES, BOXR_DEPTH, BOXR_PARAM_BYTES, BOXR_SLOT_BYTES, BOXR_STRIP, BOXR_THREADS};
    use crate::conv::Boundary;
    use crate::conv::elem::{ConvElem, mask_tap, unroll};
    use crate::conv::sepreg::kernels::{Axis, pack4, prmt};
    use crate::dev::index::{block_idx_x, thread_idx_x};
    use crate::dev::mma::ld_shared_v4;
    use crate::dev::param::{ParamBytes, ParamSymbol};
    use crate::dev::pipeline::{commit_group, copy_f64, copy16_l1, wait_group};
    use crate::dev::shared::SharedElem;
    use crate::dev::warp::{active_mask, ballot, sync_lanes};
    use core::arch::asm;

    /// Output pairs: word `p` of a row's 16 outputs holds bytes `PAIRS[p]`
    /// and `PAIRS[p] + 2`.
    const PAIRS: [usize; 8] = [0, 1, 4, 5, 8, 9, 12, 13];

    /// The output pair whose row sum is `C` bytes before pair `p`'s, if one is.
    const fn slides_from(p: usize, c: usize) -> Option<usize> {
        let mut q = 0;
        while q < p {
            if PAIRS[q] + c == PAIRS[p] {
                return Some(q);
            }
            q += 1;
        }
        None
    }

    /// A 16-byte store.
    ///
    /// # Safety
    /// `p` 16-byte aligned and valid for 16 bytes that no other thread
    /// writes.
    #[inline(always)]
    unsafe fn st16(p: *mut u8, w: [u32; 4]) {
        // SAFETY: the caller's contract.
        unsafe {
            asm!("st.global.v4.u32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg64) p, a = in(reg32) w[0],
                 b = in(reg32) w[1], c = in(reg32) w[2], d = in(reg32) w[3], options(nostack, preserves_flags))
        };
    }

    /// The selectors of two `PRMT` that build a side word of an edge
    /// thread from three of its middle words `(a, b, c)`: byte `j` is byte
    /// `src[j]` (0 … 11) of `a ‖ b ‖ c`. The first picks from `a ‖ b`,
    /// the second from the first's result and `c`.
    #[inline(always)]
    fn selectors(src: [u32; 4]) -> (u32, u32) {
        let (mut s1, mut s2) = (0u32, 0u32);
        unroll!(const J in [0, 1, 2, 3] below 4 => {
            let s = src[J];
            if s < 8 {
                s1 |= s << (4 * J);
                s2 |= (J as u32) << (4 * J);
            } else {
                s2 |= (s - 4) << (4 * J);
            }
        });
        (s1, s2)
    }

    /// Byte `i` … `i + 2` pair word of the window (bytes `i` and `i + 2`
    /// in the low and high halves), from the words' even bytes `e` and odd
    /// bytes `o` (`e[j]` = bytes `4j` and `4j + 2`, `o[j]` = `4j + 1` and
    /// `4j + 3`).
    #[inline(always)]
    fn pair(e: &[u32; 8], o: &[u32; 8], i: usize) -> u32 {
        match i % 4 {
            0 => e[i / 4],
            1 => o[i / 4],
            2 => prmt(e[i / 4], e[i / 4 + 1], 0x5432),
            _ => prmt(o[i / 4], o[i / 4 + 1], 0x5432),
        }
    }

    /// One input row through the sums (module docs, items 4 to 6): `w` the
    /// window (row bytes `x − 8 … x + 23`), ring slot `R`; the row of
    /// output `K − 1` rows back, rounded and packed.
    #[inline(always)]
    fn step<P: ParamSymbol, const C: usize, const K: usize, const R: usize>(
        w: [u32; 8],
        ring: &mut [[u32; 8]; K],
        sums: &mut [u32; 8],
    ) -> [u32; 4] {
        let (mut e, mut o) = ([0u32; 8], [0u32; 8]);
        unroll!(const J in [0, 1, 2, 3, 4, 5, 6, 7] below 8 => {
            e[J] = prmt(w[J], 0, 0x4240);
            o[J] = prmt(w[J], 0, 0x4341);
        });
        let half = K / 2;
        let mut h = [0u32; 8];
        unroll!(const Q in [0, 1, 2, 3, 4, 5, 6, 7] below 8 => {
            let i = PAIRS[Q] + 8;
            h[Q] = match const { slides_from(Q, C) } {
                Some(q) => h[q].wrapping_add(pair(&e, &o, i + C * half)).wrapping_sub(pair(&e, &o, i - C - C * half)),
                None => {
                    let mut acc = pair(&e, &o, i - C * half);
                    unroll!(const J in [1, 2, 3, 4, 5, 6] below K => {
                        acc = acc.wrapping_add(pair(&e, &o, i - C * half + J * C));
                    });
                    acc
                }
            };
        });
        // Every half stays within 0 … K²·255 < 2¹⁶: the 32-bit adds and
        // subtracts are exact per half.
        unroll!(const Q in [0, 1, 2, 3, 4, 5, 6, 7] below 8 => {
            sums[Q] = sums[Q].wrapping_add(h[Q]).wrapping_sub(ring[R][Q]);
            ring[R][Q] = h[Q];
        });
        let t: f32 = mask_tap!(f32, P::base(), 0);
        let nt: f32 = mask_tap!(f32, P::base(), 1);
        // 2²³ from the taps parameter: as a register operand it lets one
        // `PRMT` (its selector the immediate) build each value.
        let magic = mask_tap!(f32, P::base(), 2).to_bits();
        let mut lo = [0.0f32; 8];
        let mut hi = [0.0f32; 8];
        unroll!(const Q in [0, 1, 2, 3, 4, 5, 6, 7] below 8 => {
            lo[Q] = f32::fma(f32::from_bits(prmt(sums[Q], magic, 0x7610)), t, nt);
            hi[Q] = f32::fma(f32::from_bits(prmt(sums[Q], magic, 0x7632)), t, nt);
        });
        let mut out = [0u32; 4];
        unroll!(const I in [0, 1, 2, 3] below 4 => {
            out[I] = pack4([lo[2 * I], lo[2 * I + 1], hi[2 * I], hi[2 * I + 1]]);
        });
        out
    }

    /// The byte offsets in each slot of the ring: a thread's middle 16
    /// bytes, its left 8, its right 8.
    const LEFT: u32 = (BOXR_THREADS * BOXR_STRIP) as u32;
    const RIGHT: u32 = LEFT + (BOXR_THREADS * 8) as u32;

    /// The launch's arguments but the taps (see the module docs).
    #[derive(Clone, Copy)]
    struct Args {
        input: *const u8,
        output: *mut u8,
        width: u32,
        height: u32,
        in_pitch: usize,
        out_pitch: usize,
        rows: u32,
        mode: u32,
    }

    /// What one thread does (module docs).
    ///
    /// # Safety
    /// The launch as the module docs give.
    #[inline(always)]
    unsafe fn run<P: ParamSymbol, const C: usize, const K: usize>(a: Args) {
        let Args { input, output, width, height, in_pitch, out_pitch, rows, mode } = a;
        const { assert!(boxr_halo(C, K) <= 8 && K % 2 == 1 && K <= 7 && BOXR_DEPTH >= 2 && BOXR_PARAM_BYTES == 16) };
        let rb = width * C as u32;
        // At least 1 (no division by zero; an empty row leaves below).
        let strips = rb.div_ceil(BOXR_BLOCK_BYTES as u32).max(1);
        let (strip, band) = (block_idx_x() % strips, block_idx_x() / strips);
        let y0 = band * rows;
        let tid = thread_idx_x();
        let x = strip * BOXR_BLOCK_BYTES as u32 + BOXR_STRIP as u32 * tid;
        // Whole threads leave, from the row's end on: the warps' barriers
        // below name the lanes still here.
        if y0 >= height || x >= rb {
            return;
        }
        let y_end = if height - y0 < rows { height } else { y0 + rows };
        let (wrap, zeros) = (mode == Boundary::Wrap.raw(), mode == Boundary::Zero.raw() || mode > Boundary::Wrap.raw());
        // The side copies' offsets in a row: at a row's end, the other end
        // (wrap), else not read (zeros, or fixed below).
        let (first, last) = (x == 0, x + 16 == rb);
        let ol = if !first {
            x - 8
        } else if wrap {
            rb - 8
        } else {
            0
        };
        let or = if !last {
            x + 16
        } else if wrap {
            0
        } else {
            rb - 8
        };
        let (read_l, read_r) = (!first || wrap, !last || wrap);
        // Module docs, item 2: lane 0 copies its left side, lane 31 and
        // the row's last thread their right side (one copy each); a lane
        // that is both (the row's last thread is lane 0) copies its left
        // side and takes zeros on the right (constant mode; nearest,
        // reflect and mirror mode fix them below; the host keeps wrap
        // mode off such rows).
        let lane = tid % 32;
        let (own_l, own_r) = (lane == 0, last || lane == 31);
        let both = own_l && own_r;
        let (cdst, csrc, cread) = if own_l { (0u32, ol, read_l) } else { (RIGHT - LEFT, or, read_r) };
        let copies = own_l || own_r;
        // The lanes still here: a prefix of the warp (threads leave from
        // the row's end on).
        let peers = active_mask();
        // Nearest, reflect, mirror (module docs, item 3): the edge
        // threads' side words from their middle bytes. Left: side byte i
        // (0 … 7) is row byte i − 8, taken from middle words 0, 1, 2;
        // right: side byte i is row byte rb + i, taken from middle words
        // 2, 3, 1 (row bytes rb − 8 … rb − 1, then rb − 12 … rb − 9).
        let fix_l = first && !wrap && !zeros;
        let fix_r = last && !wrap && !zeros;
        // SAFETY: every lane of `peers` is here.
        let fixes = unsafe { ballot(peers, fix_l || fix_r) } != 0;
        let mut sel = [(0u32, 0u32); 2];
        if fix_l || fix_r {
            let (cols, c) = (Axis::new(width as i32, mode), C as i32);
            unroll!(const Q in [0, 1] below 2 => {
                let mut src = [0u32; 4];
                unroll!(const J in [0, 1, 2, 3] below 4 => {
                    let i = (4 * Q + J) as i32;
                    let b = if fix_l { i - 8 } else { rb as i32 + i };
                    // The byte the mode maps row byte b to (bytes the sums
                    // never reach may map anywhere: clamped below).
                    let m = cols.map(b.div_euclid(c)).max(0) * c + b.rem_euclid(c);
                    let s = if fix_l {
                        m
                    } else {
                        let rel = m - (rb as i32 - 16);
                        if rel >= 8 { rel - 8 } else { rel + 4 }
                    };
                    src[J] = s.clamp(0, 11) as u32;
                });
                sel[Q] = selectors(src);
            });
        }
        let half = (K / 2) as i32;
        let top = y0 as i32 - half;
        let total = (y_end - y0) as i32 + 2 * half;
        let limit = y_end as i32 + half;
        // SAFETY: the launch's dynamic shared memory holds BOXR_DEPTH slots.
        let base = unsafe { crate::dev::shared::dynamic::<u32>() }.addr_of(0);
        let mid = base + BOXR_STRIP as u32 * tid;
        let side = base + LEFT + 8 * tid;
        // Where the side bytes are read: this thread's side slots, or the
        // neighbours' middle bytes (bytes 8 … 15 of the left one, 0 … 7 of
        // the right one).
        let lsrc = if own_l { side } else { mid - 8 };
        let rsrc = if own_r { side + (RIGHT - LEFT) } else { mid + 16 };
        let rows_ax = Axis::new(height as i32, mode);
        // Copies input row r, the row `m` the mode maps it to (−1: zeros),
        // into the slot at `so`; rows from `limit` on are not read.
        let issue = |r: i32, m: i32, so: u32| {
            let live = m >= 0 && r < limit;
            let line = input.wrapping_add(m.max(0) as usize * in_pitch);
            // SAFETY: slots are this thread's own (16-byte aligned middle,
            // 8-byte sides), read only after this thread's wait; the
            // sources, when read, lie inside row m < height (ol, or within
            // 0 … rb − 8, x ≤ rb − 16), aligned as the layout's bases and
            // pitches (multiples of 16) and offsets (of 8) are.
            unsafe {
                if copies {
                    copy_f64(side + so + cdst, line.wrapping_add(csrc as usize).cast(), live && cread);
                }
                copy16_l1(mid + so, line.wrapping_add(x as usize), live);
            }
            commit_group();
        };
        const SLOT: u32 = BOXR_SLOT_BYTES as u32;
        const RING: u32 = (BOXR_DEPTH * BOXR_SLOT_BYTES) as u32;
        unroll!(const U in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] below BOXR_DEPTH => {
            let r = top + U as i32;
            issue(r, rows_ax.map(r), U as u32 * SLOT);
        });
        let mut ring = [[0u32; 8]; K];
        let mut sums = [0u32; 8];
        let mut so = 0u32;
        let mut n = 0i32;
        let mut out = output.wrapping_add(y0 as usize * out_pitch + x as usize);
        loop {
            unroll!(const R in [0, 1, 2, 3, 4, 5, 6] below K => {
                if n >= total {
                    return;
                }
                wait_group::<{ BOXR_DEPTH as u32 - 1 }>();
                // SAFETY: every lane of `peers` is here; the sync orders
                // the neighbours' copies, waited for, before the loads.
                unsafe { sync_lanes(peers) };
                // SAFETY: this thread's slots and its neighbours', their
                // groups waited for.
                let (l, m, r) = unsafe { (u64::ld_shared(lsrc + so), ld_shared_v4(mid + so), u64::ld_shared(rsrc + so)) };
                // SAFETY: as above; the neighbours' loads come before this
                // thread's next copy into the slot.
                unsafe { sync_lanes(peers) };
                let r = if both { 0 } else { r };
                let mut w = [l as u32, (l >> 32) as u32, m[0], m[1], m[2], m[3], r as u32, (r >> 32) as u32];
                // Row top + n + DEPTH > 0: only the bottom edge maps.
                let r = top + n + BOXR_DEPTH as i32;
                issue(r, rows_ax.map_high(r), so);
                so = if so + SLOT == RING { 0 } else { so + SLOT };
                if fixes {
                    if fix_l {
                        w[0] = prmt(prmt(w[2], w[3], sel[0].0), w[4], sel[0].1);
                        w[1] = prmt(prmt(w[2], w[3], sel[1].0), w[4], sel[1].1);
                    }
                    if fix_r {
                        w[6] = prmt(prmt(w[4], w[5], sel[0].0), w[3], sel[0].1);
                        w[7] = prmt(prmt(w[4], w[5], sel[1].0), w[3], sel[1].1);
                    }
                }
                let o = step::<P, C, K, R>(w, &mut ring, &mut sums);
                if n >= 2 * half {
                    // SAFETY: bytes x … x + 15 of output row y0 + n − (K − 1)
                    // < y_end, inside the row (x + 16 ≤ rb), 16-byte aligned;
                    // this thread's alone.
                    unsafe { st16(out, o) };
                    out = out.wrapping_add(out_pitch);
                }
                n += 1;
            });
        }
    }

    macro_rules! boxr_kernel {
        ($name:ident, $c:literal, $k:literal) => {
            /// See the module documentation (`conv::boxrows`).
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
                _taps: ParamBytes<BOXR_PARAM_BYTES>,
            ) {
                crate::dev::sync::grid_dependency_wait();
                crate::param_symbol!(P = $name, 8);
                // SAFETY: the launch as the module docs give.
                unsafe { run::<P, $c, $k>(Args { input, output, width, height, in_pitch, out_pitch, rows, mode }) }
            }
        };
    }

    boxr_kernel!(conv2d_boxr1_u8_w3, 1, 3);
    boxr_kernel!(conv2d_boxr3_u8_w3, 3, 3);
    boxr_kernel!(conv2d_boxr4_u8_w3, 4, 3);
    boxr_kernel!(conv2d_boxr1_u8_w5, 1, 5);
    boxr_kernel!(conv2d_boxr3_u8_w5, 3, 5);
    boxr_kernel!(conv2d_boxr4_u8_w5, 4, 5);
    boxr_kernel!(conv2d_boxr1_u8_w7, 1, 7);
}
