//! Fused separable 2D filters over images of 1, 3 or 4 interleaved
//! channels (`conv2d_sepc{1,3,4}_<type>`), for every storage type that
//! accumulates in `f32` (`f32`, [`F16`](super::batch::F16),
//! [`Bf16`](super::batch::Bf16), `u8`, `u16`).
//!
//! A mask that is the outer product of a column of `mh` taps and a row of
//! `mw` taps (a box, a Gaussian, any rank-1 mask) costs `mw + mh`
//! multiply-adds per output instead of `mw · mh`. Each block walks output
//! tiles of `tile_px` pixels × [`SEPC_ROWS`] rows (a persistent grid):
//!
//! 1. **Load.** The tile's inputs with their halo (`mh − 1` rows, the
//!    row taps' reach across) arrive as raw storage in shared memory, by
//!    16-byte `cp.async` copies issued while the previous tile's row pass
//!    runs. Tiles at the image's edges (and layouts without 16-byte
//!    alignment) are read element by element through the boundary mode.
//! 2. **Column pass.** Each thread takes one element column and
//!    [`SEPC_RUN`] output rows, sliding a window down it four taps at a
//!    time, widening the raw values to `f32` as it reads them; the
//!    results go to one shared plane per channel (so the row pass reads
//!    each channel's neighbours contiguously, whatever the channel count).
//! 3. **Row pass.** Each thread takes 4 pixels (all their channels) of
//!    one row, reads each channel's window four pixels at a time (16-byte
//!    loads), and stores its `4 · C` outputs rounded by the type's rule, 4
//!    elements per store.
//!
//! Every sum runs in tap order, in `f32`; the intermediate (the column
//! pass's result) stays in `f32`. The kernels take `(input, output,
//! width, height, in_pitch, out_pitch, taps, per_channel, mw, mh, left_x,
//! left_y, mode, cval, tile_px, flags)`: pitches in elements; `taps` the
//! row taps of every mask (`mw` each) then their column taps (`mh` each),
//! one mask for all channels (`per_channel = 0`) or one per channel;
//! `left_x`, `left_y` the taps left of and above the centre; `mode` a
//! [`Boundary`](super::Boundary) raw value with `cval` outside the image
//! in constant mode; `tile_px` a multiple of 16; `flags` bit
//! [`FLAG_VECTOR`](super::batch::FLAG_VECTOR): both bases 16-byte aligned
//! and both pitches multiples of 16 bytes.

/// Threads per block.
pub const SEPC_THREADS: usize = 256;
/// Output rows per tile.
pub const SEPC_ROWS: usize = 32;
/// Output rows per thread in the column pass.
pub const SEPC_RUN: usize = 8;

/// Taps rounded up to whole chunks of four.
pub const fn sepc_padded(w: usize) -> usize {
    4 * w.div_ceil(4)
}

/// Pixels per row of a channel's plane: the tile, the row taps' reach and
/// the last chunk's padding.
pub const fn sepc_span(tile_px: usize, mw: usize) -> usize {
    tile_px + sepc_padded(mw)
}

/// Words of one channel's plane, padded so that neighbouring channels'
/// planes start on different banks.
pub const fn sepc_plane(channels: usize, tile_px: usize, mw: usize) -> usize {
    let p = SEPC_ROWS * sepc_span(tile_px, mw);
    let want = if channels == 3 { 12 } else { 8 };
    p + (want + 32 - p % 32) % 32
}

/// Elements per row of the raw tile: the column pass's columns, shifted
/// by up to one 16-byte chunk so that copies start aligned, in whole
/// chunks.
pub const fn sepc_raw_row(channels: usize, size: usize, tile_px: usize, mw: usize) -> usize {
    let v = 16 / size;
    (sepc_span(tile_px, mw) * channels).div_ceil(v) * v + v
}

/// Dynamic shared memory of a kernel, bytes: the taps (padded, per
/// channel), the planes, then the raw tile of `SEPC_ROWS + padded(mh)`
/// rows.
pub const fn sepc_shared_bytes(channels: usize, size: usize, tile_px: usize, mw: usize, mh: usize) -> usize {
    let taps = channels * (sepc_padded(mw) + sepc_padded(mh)) * 4;
    let planes = channels * sepc_plane(channels, tile_px, mw) * 4;
    let raw = (SEPC_ROWS + sepc_padded(mh)) * sepc_raw_row(channels, size, tile_px, mw) * size;
    taps + planes + raw
}

/// Tile widths (pixels) the host tries for `channels`, widest first.
pub const fn sepc_tiles(channels: usize) -> [usize; 5] {
    match channels {
        1 => [256, 128, 64, 32, 16],
        3 => [80, 64, 48, 32, 16],
        _ => [64, 48, 32, 16, 16],
    }
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    #[cfg(target_feature = "sm_80")]
    use super::super::batch::Bf16;
    use super::super::batch::kernels::Storage;
    use super::super::batch::{F16, FLAG_VECTOR};
    use super::{SEPC_ROWS, SEPC_RUN, sepc_padded, sepc_plane, sepc_raw_row};
    use crate::conv::boundary::map_index;
    use crate::conv::elem::{ConvElem, unroll};
    use crate::dev::index::{block_dim_x, block_idx_x, grid_dim_x, thread_idx_x};
    use crate::dev::pipeline;
    use crate::dev::shared::{Shared, dynamic, st_raw};
    use crate::dev::sync::sync_threads;

    /// A walk over `count` jobs laid out as `(i, j)` with `i < inner`, job
    /// `k` being `(k % inner, k / inner)`, one thread's jobs `t, t +
    /// threads, …`: the division once, then additions.
    #[derive(Clone, Copy)]
    struct Walk {
        i: u32,
        j: u32,
        step_i: u32,
        step_j: u32,
        inner: u32,
    }

    impl Walk {
        #[inline(always)]
        fn new(t: u32, threads: u32, inner: u32) -> Walk {
            Walk { i: t % inner, j: t / inner, step_i: threads % inner, step_j: threads / inner, inner }
        }
        #[inline(always)]
        fn next(&mut self) {
            self.i += self.step_i;
            self.j += self.step_j;
            if self.i >= self.inner {
                self.i -= self.inner;
                self.j += 1;
            }
        }
    }

    /// The launch's arguments (see the module docs).
    #[derive(Clone, Copy)]
    pub(super) struct Args<S: Storage> {
        pub input: *const S,
        pub output: *mut S,
        pub width: u32,
        pub height: u32,
        pub in_pitch: usize,
        pub out_pitch: usize,
        pub taps: *const f32,
        pub per_channel: bool,
        pub mw: u32,
        pub mh: u32,
        pub left_x: u32,
        pub left_y: u32,
        pub mode: u32,
        pub cval: f32,
        pub tile_px: u32,
        pub flags: u32,
    }

    /// The kernels: see the module docs.
    ///
    /// # Safety
    /// The arguments as the module docs give; blocks of
    /// [`super::SEPC_THREADS`] threads (any count works); dynamic shared
    /// memory of [`super::sepc_shared_bytes`] bytes.
    #[inline(always)]
    pub(super) unsafe fn sepc<S: Storage<Acc = f32>, const C: usize>(a: Args<S>) {
        // Tile geometry in 32-bit arithmetic (the host keeps every row of
        // elements and the height below 2^31): loop-invariant 64-bit values
        // would hold two registers each for the whole kernel.
        const TH: u32 = SEPC_ROWS as u32;
        const R: usize = SEPC_RUN;
        let cu = C as u32;
        let threads = block_dim_x();
        let t = thread_idx_x();
        let (mw, mh) = (a.mw as usize, a.mh as usize);
        let (px, py) = (sepc_padded(mw), sepc_padded(mh));
        let tp = a.tile_px;
        let span = tp + px as u32;
        let plane = sepc_plane(C, tp as usize, mw) as u32;
        let size = core::mem::size_of::<S>() as u32;
        let v = 16 / size;
        let rw = sepc_raw_row(C, size as usize, tp as usize, mw) as u32;
        let (width, height) = (a.width, a.height);
        let row_elems = width * cu;
        // SAFETY: the host sizes the dynamic window (sepc_shared_bytes).
        let s: Shared<f32> = unsafe { dynamic() };
        let ty_at = cu * px as u32;
        let planes_at = cu * (px + py) as u32;
        let raw_base = s.addr_of((planes_at + cu * plane) as usize);
        let raw_row_bytes = rw * size;

        // The taps, per channel, zero-padded to whole chunks (the padding
        // is never multiplied).
        let masks = if a.per_channel { C } else { 1 };
        let mut k = t as usize;
        while k < C * (px + py) {
            let (is_y, kk) = if k < C * px { (false, k) } else { (true, k - C * px) };
            let (n, w) = if is_y { (py, mh) } else { (px, mw) };
            let c = kk / n;
            let i = kk - c * n;
            let m = if a.per_channel { c } else { 0 };
            let at = if is_y { masks * mw + m * mh + i } else { m * mw + i };
            // SAFETY: the host passes masks × (mw + mh) taps; k < C·(px + py).
            unsafe { s.write(k, if i < w { *a.taps.add(at) } else { 0.0 }) };
            k += threads as usize;
        }

        // The raw tile starts `shift` elements left of the tile's first
        // element (a whole number of 16-byte chunks); the column pass's
        // column j reads raw column j + d.
        let (left_x, left_y) = (a.left_x, a.left_y);
        let shift = (cu * left_x).div_ceil(v) * v;
        let d = shift - cu * left_x;
        let tiles_x = width.div_ceil(tp);
        let total = tiles_x * height.div_ceil(TH);
        let rows_in = TH + a.mh - 1;
        let cols = cu * span;
        let vector = a.flags & FLAG_VECTOR != 0;
        // A tile: its first output pixel and row, and its raw tile's first
        // element and row (negative past the image's start).
        let origin = |b: u32| {
            let by = b / tiles_x;
            let (x0, y0) = ((b - by * tiles_x) * tp, by * TH);
            (x0, y0, (x0 * cu) as i32 - shift as i32, y0 as i32 - left_y as i32)
        };
        let interior = |ex: i32, ey: i32| {
            vector && ex >= 0 && ey >= 0 && ex as u32 + rw <= row_elems && ey as u32 + rows_in <= height
        };
        // The 16-byte chunks of a raw row, one column of chunks per thread.
        let cpr = rw / v;
        let (chunk_q, chunk_r0, chunk_step) = (t % cpr, t / cpr, threads / cpr);
        // Starts an interior tile's copies (one commit group).
        let issue = |ex: i32, ey: i32| {
            if chunk_r0 < chunk_step {
                // SAFETY: interior: rows ey .. ey + rows_in and elements
                // ex .. ex + rw lie inside the image.
                let corner = unsafe { a.input.add(ey as usize * a.in_pitch + (ex as u32 + chunk_q * v) as usize) };
                let mut r = chunk_r0;
                while r < rows_in {
                    // SAFETY: 16-byte aligned (FLAG_VECTOR, ex a multiple
                    // of v); the slot lies in the raw tile, not read until
                    // waited for and a barrier passed.
                    unsafe {
                        pipeline::copy16(
                            raw_base + r * raw_row_bytes + 16 * chunk_q,
                            corner.add(r as usize * a.in_pitch).cast(),
                            true,
                        )
                    };
                    r += chunk_step;
                }
            }
            pipeline::commit_group();
        };
        // Reads an edge tile element by element through the boundary
        // mode; outside positions in constant mode store zero bits (the
        // column pass puts `cval` there).
        let edge_load = |ex: i32, ey: i32| {
            let mut w = Walk::new(t, threads, rw);
            while w.j < rows_in {
                let e = ex + w.i as i32;
                let p = e.div_euclid(C as i32);
                let ch = (e - p * C as i32) as usize;
                let yy = map_index(ey as isize + w.j as isize, height as isize, a.mode);
                let value = match (yy, map_index(p as isize, width as isize, a.mode)) {
                    // SAFETY: map_index returns positions inside the image.
                    (Some(y), Some(x)) => unsafe { *a.input.add(y * a.in_pitch + x * C + ch) },
                    // SAFETY: every storage type has an all-zero value.
                    _ => unsafe { core::mem::zeroed() },
                };
                // SAFETY: row w.j < rows_in, column w.i < rw of the raw tile.
                unsafe { st_raw(raw_base + w.j * raw_row_bytes + w.i * size, value) };
                w.next();
            }
        };

        let grid = grid_dim_x();
        let mut b = block_idx_x();
        if b < total {
            let (_, _, ex, ey) = origin(b);
            if interior(ex, ey) { issue(ex, ey) } else { edge_load(ex, ey) }
        }
        let (full_y, rem_y) = (mh / 4, mh % 4);
        let (full_x, rem_x) = (mw / 4, mw % 4);
        while b < total {
            let (x0, y0, ex, ey) = origin(b);
            let check = !interior(ex, ey) && a.mode == 0;
            pipeline::wait_group::<0>();
            // SAFETY: block-uniform loop; after it the raw tile is complete
            // and the previous tile's row pass is done with the planes.
            unsafe { sync_threads() };

            // Column pass: column j (pixel j / C, channel j % C) of the
            // planes, rows R·rb .. R·rb + R. Two copies: one that puts
            // `cval` at positions outside the image (edge tiles in constant
            // mode), one without the checks.
            macro_rules! column_pass {
                ($check:literal) => {{
                    let mut w = Walk::new(t, threads, cols);
                    while w.j < TH / R as u32 {
                        let (j, rb) = (w.i, w.j);
                        let c = j % cu;
                        let pxl = j / cu;
                        let col_out = $check && {
                            let p = (x0 + pxl) as i32 - left_x as i32;
                            p < 0 || p >= width as i32
                        };
                        let first = rb * R as u32;
                        let col_addr = raw_base + (j + d) * size;
                        let load = |row: u32| -> f32 {
                            // SAFETY: row < SEPC_ROWS + py (the raw tile's
                            // rows); column j + d < rw.
                            let x = unsafe { S::ld_shared(col_addr + row * raw_row_bytes) }.widen_alu();
                            if $check {
                                let y = ey + row as i32;
                                if col_out || y < 0 || y >= height as i32 { a.cval } else { x }
                            } else {
                                x
                            }
                        };
                        let taps = ty_at + c * py as u32;
                        let mut win = [0.0f32; R + 4];
                        unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] below R + 4 => {
                            win[I] = load(first + I as u32);
                        });
                        let mut acc = [0.0f32; R];
                        let mut next = first + R as u32 + 4;
                        for q in 0..full_y as u32 {
                            // SAFETY: the padded taps of channel c.
                            let tap = unsafe { f32::read4(s, (taps + 4 * q) as usize) };
                            unroll!(const JJ in [0, 1, 2, 3] below 4 => {
                                unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7] below R => {
                                    acc[I] = f32::fma(win[I + JJ], tap[JJ], acc[I]);
                                });
                            });
                            if (q as usize) + 1 < full_y || rem_y > 0 {
                                unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7] below R => { win[I] = win[I + 4]; });
                                unroll!(const I in [0, 1, 2, 3] below 4 => { win[R + I] = load(next + I as u32); });
                                next += 4;
                            }
                        }
                        if rem_y > 0 {
                            // SAFETY: as above.
                            let tap = unsafe { f32::read4(s, (taps + 4 * full_y as u32) as usize) };
                            unroll!(const JJ in [0, 1, 2] below 3 => {
                                if JJ < rem_y {
                                    unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7] below R => {
                                        acc[I] = f32::fma(win[I + JJ], tap[JJ], acc[I]);
                                    });
                                }
                            });
                        }
                        let out = planes_at + c * plane + first * span + pxl;
                        unroll!(const I in [0, 1, 2, 3, 4, 5, 6, 7] below R => {
                            // SAFETY: row first + I < SEPC_ROWS, pixel < span of plane c.
                            unsafe { s.write((out + I as u32 * span) as usize, acc[I]) };
                        });
                        w.next();
                    }
                }};
            }
            if check {
                column_pass!(true);
            } else {
                column_pass!(false);
            }
            // SAFETY: block-uniform; the planes are complete and the raw
            // tile is free after it.
            unsafe { sync_threads() };

            // The next tile's interior copies run during the row pass.
            let nb = b + grid;
            let next = if nb < total { Some(origin(nb)) } else { None };
            let next_edge = match next {
                Some((_, _, nex, ney)) if interior(nex, ney) => {
                    issue(nex, ney);
                    false
                }
                Some(_) => true,
                None => false,
            };

            // Row pass: pixels 4g .. 4g + 4 of row r, every channel.
            let mut w = Walk::new(t, threads, tp / 4);
            while w.j < TH {
                let (g, r) = (w.i, w.j);
                let (x, y) = (x0 + 4 * g, y0 + r);
                if y < height && x < width {
                    let mut acc = [[0.0f32; 4]; C];
                    let row = planes_at + r * span + 4 * g;
                    let mut lo = [[0.0f32; 4]; C];
                    unroll!(const CC in [0, 1, 2, 3] below C => {
                        // SAFETY: pixel 4g + 3 < span of plane CC.
                        lo[CC] = unsafe { f32::read4(s, (row + CC as u32 * plane) as usize) };
                    });
                    let chunk = |q: u32, lo: &mut [[f32; 4]; C], acc: &mut [[f32; 4]; C], taps_n: usize| {
                        unroll!(const CC in [0, 1, 2, 3] below C => {
                            // SAFETY: pixel 4g + 4q + 7 < span (4g ≤ tp − 4,
                            // 4q + 4 ≤ px); the taps of channel CC.
                            let (hi, tap) = unsafe {
                                (
                                    f32::read4(s, (row + CC as u32 * plane + 4 * q + 4) as usize),
                                    f32::read4(s, (CC as u32 * px as u32 + 4 * q) as usize),
                                )
                            };
                            let xs = [lo[CC][0], lo[CC][1], lo[CC][2], lo[CC][3], hi[0], hi[1], hi[2], hi[3]];
                            unroll!(const JJ in [0, 1, 2, 3] below 4 => {
                                if JJ < taps_n {
                                    unroll!(const I in [0, 1, 2, 3] below 4 => {
                                        acc[CC][I] = f32::fma(xs[I + JJ], tap[JJ], acc[CC][I]);
                                    });
                                }
                            });
                            lo[CC] = hi;
                        });
                    };
                    for q in 0..full_x as u32 {
                        chunk(q, &mut lo, &mut acc, 4);
                    }
                    if rem_x > 0 {
                        chunk(full_x as u32, &mut lo, &mut acc, rem_x);
                    }
                    // SAFETY: row y < height; pixels x .. x + 4 clipped to
                    // the width.
                    unsafe {
                        let out = a.output.add(y as usize * a.out_pitch + (x * cu) as usize);
                        if vector && x + 4 <= width {
                            unroll!(const M in [0, 1, 2, 3] below C => {
                                let vals = [
                                    acc[(4 * M) % C][(4 * M) / C],
                                    acc[(4 * M + 1) % C][(4 * M + 1) / C],
                                    acc[(4 * M + 2) % C][(4 * M + 2) / C],
                                    acc[(4 * M + 3) % C][(4 * M + 3) / C],
                                ];
                                S::store4_alu(out.add(4 * M), vals);
                            });
                        } else {
                            unroll!(const I in [0, 1, 2, 3] below 4 => {
                                if x + (I as u32) < width {
                                    unroll!(const CC in [0, 1, 2, 3] below C => {
                                        *out.add(I * C + CC) = S::narrow_alu(acc[CC][I]);
                                    });
                                }
                            });
                        }
                    }
                }
                w.next();
            }
            if let (true, Some((_, _, nex, ney))) = (next_edge, next) {
                edge_load(nex, ney);
            }
            b = nb;
        }
        pipeline::wait_group::<0>();
    }

    macro_rules! sepc_kernel {
        ($name:ident, $s:ty, $c:literal) => {
            /// See the module documentation (`conv::sepchan`).
            ///
            /// # Safety
            /// As the module documentation gives.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const $s,
                output: *mut $s,
                width: u32,
                height: u32,
                in_pitch: usize,
                out_pitch: usize,
                taps: *const f32,
                per_channel: u32,
                mw: u32,
                mh: u32,
                left_x: u32,
                left_y: u32,
                mode: u32,
                cval: f32,
                tile_px: u32,
                flags: u32,
            ) {
                crate::dev::sync::grid_dependency_wait();
                let a = Args::<$s> {
                    input,
                    output,
                    width,
                    height,
                    in_pitch,
                    out_pitch,
                    taps,
                    per_channel: per_channel != 0,
                    mw,
                    mh,
                    left_x,
                    left_y,
                    mode,
                    cval,
                    tile_px,
                    flags,
                };
                // SAFETY: same contract.
                unsafe { sepc::<$s, $c>(a) }
            }
        };
    }

    macro_rules! sepc_family {
        ($s:ty, $one:ident, $three:ident, $four:ident) => {
            sepc_kernel!($one, $s, 1);
            sepc_kernel!($three, $s, 3);
            sepc_kernel!($four, $s, 4);
        };
    }

    sepc_family!(f32, conv2d_sepc1_f32, conv2d_sepc3_f32, conv2d_sepc4_f32);
    sepc_family!(F16, conv2d_sepc1_f16, conv2d_sepc3_f16, conv2d_sepc4_f16);
    sepc_family!(u8, conv2d_sepc1_u8, conv2d_sepc3_u8, conv2d_sepc4_u8);
    sepc_family!(u16, conv2d_sepc1_u16, conv2d_sepc3_u16, conv2d_sepc4_u16);
    #[cfg(target_feature = "sm_80")]
    sepc_family!(Bf16, conv2d_sepc1_bf16, conv2d_sepc3_bf16, conv2d_sepc4_bf16);
}
