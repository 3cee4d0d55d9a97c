//! Batched 1D convolution: every signal of a 2D array (its rows, or its
//! columns) filtered at once, one mask for all signals or one per signal
//! (a depthwise convolution), over six storage types.
//!
//! | storage | accumulates in | mask | output rule |
//! | --- | --- | --- | --- |
//! | `f32` | `f32` | `f32` | the sum |
//! | `f64` | `f64` | `f64` | the sum |
//! | [`F16`] (IEEE binary16) | `f32` | `f32` | rounded to nearest, ties to even (`cvt.rn.f16.f32`) |
//! | [`Bf16`] (bfloat16, sm_80 and newer) | `f32` | `f32` | rounded to nearest, ties to even (`cvt.rn.bf16.f32`) |
//! | `u8` / `u16` | `f32` | `f32` | rounded to nearest, ties to even, then saturated to the type's range; NaN gives 0 |
//!
//! Two kernel families, both persistent (each block walks many tiles, so
//! any batch and any length fit one launch):
//!
//! * `conv1d_rows*_<type>`: each signal is a row (`scipy.ndimage`'s
//!   `axis = -1`). A block's tile is [`ROWS_OUTPUTS`]` · `[`ROWS_GROUPS`]`
//!   · blockDim` neighbouring outputs of one row, and a block walks the
//!   tiles of all rows in runs ([`rows_walk`]): the inputs (with halo)
//!   arrive in 16-byte `cp.async` copies a few tiles ahead, are widened
//!   to the accumulation type in shared memory,
//!   and each thread computes [`ROWS_OUTPUTS`] outputs from a register
//!   window read four at a time, as the fast 1D kernel does. Stores are 4
//!   elements wide. The signal's taps sit in shared memory after the tile,
//!   read four at a time (one broadcast load per four taps).
//!   `conv1d_rows{c}_<type>` (`c` in `1..=8`) are the same kernel for
//!   masks of `4c − 3 ..= 4c` taps with the tap loop unrolled;
//!   `conv1d_rows_<type>` takes any width.
//! * `conv1d_cols_<type>`: each signal is a column (`axis = 0`). A block of
//!   [`COLS_X`]` × `[`COLS_Y`] threads computes [`COLS_X`] columns ×
//!   [`COLS_ROWS`] rows; each thread slides a window of
//!   [`COLS_OUTPUTS`] values down its column, one shared load per tap.
//!
//! * `conv2d_chan{1,3,4}_<type>`: 2D filters over images of 1, 3 or 4
//!   interleaved channels, one `mh × mw` mask per channel or one for all.
//!   A block of [`CHAN_X`]` × `[`CHAN_Y`] threads loads a tile of pixels
//!   (with halo) into one shared plane per channel, the threads walking
//!   the interleaved elements in order; each thread computes
//!   [`CHAN_OUTPUTS`] rows of one pixel's channels, sliding a window down
//!   each mask column. They take `(input, output, width, height,
//!   in_pitch, out_pitch, masks, mask_stride, mw, mh, left_x, left_y,
//!   mode, cval)`, pitches in elements.
//!
//! The 1D kernels take `(input, output, signals, n, in_pitch, out_pitch,
//! masks, mask_stride, w, left, mode, cval, flags)`: `signals` signals of
//! `n` samples; consecutive rows `in_pitch` / `out_pitch` elements apart;
//! signal `s`'s correlation taps at `masks + s · mask_stride` (stride 0:
//! one mask for all, `w`: one per signal); `left` taps left of the
//! centre; `mode` a [`Boundary`](super::Boundary) raw value, with `cval`
//! the value outside the input in constant mode ([`Boundary::Zero`]
//! with `cval = 0` is the zero mode); `flags` bit [`FLAG_VECTOR`]: every
//! row of both arrays starts on 16 bytes (both bases do and, with more
//! than one row, both pitches are multiples of 16 bytes; the rows kernels
//! then load and store in vectors).
//!
//! [`Boundary::Zero`]: super::Boundary::Zero

/// Outputs per thread of the rows kernels' register block.
pub const ROWS_OUTPUTS: usize = 4;

/// Register blocks per thread per tile of the rows kernels: a tile is
/// `ROWS_OUTPUTS · ROWS_GROUPS · blockDim` outputs, so the per-tile work
/// (copies, barriers, the walk over rows) is spread over 16 outputs per
/// thread.
pub const ROWS_GROUPS: usize = 4;

/// Threads per block of the rows kernels: a constant in them, so that a
/// tile's length, its input span and every loop stride over it are
/// compile-time constants (immediate offsets, no loop counters).
pub const ROWS_THREADS: usize = 256;

/// The widest mask with an unrolled rows kernel: `conv1d_rows{c}_<type>`
/// for `c = ceil(w / 4)` in `1..=8`.
pub const ROWS_FIXED_MAX: usize = 32;

/// Threads across (columns) in a block of the columns kernels.
pub const COLS_X: usize = 32;
/// Threads down (rows) in a block of the columns kernels.
pub const COLS_Y: usize = 8;
/// Outputs per thread (down its column) of the columns kernels.
pub const COLS_OUTPUTS: usize = 4;
/// Output rows per tile of the columns kernels.
pub const COLS_ROWS: usize = COLS_Y * COLS_OUTPUTS;

/// Threads across (pixels) in a block of the 2D channels kernels.
pub const CHAN_X: usize = 32;
/// Threads down (rows) in a block of the 2D channels kernels.
pub const CHAN_Y: usize = 8;
/// Output rows per thread of the 2D channels kernels.
pub const CHAN_OUTPUTS: usize = 4;
/// Output rows per tile of the 2D channels kernels.
pub const CHAN_ROWS: usize = CHAN_Y * CHAN_OUTPUTS;

/// Shared-memory elements (of the accumulation type) of a 2D channels
/// kernel: a plane of `(CHAN_X + mw − 1) × (CHAN_ROWS + mh)` pixels per
/// channel, then every channel's `mw × mh` taps.
pub const fn chan_shared_elems(channels: usize, mw: usize, mh: usize) -> usize {
    channels * (CHAN_X + mw - 1) * (CHAN_ROWS + mh) + channels * mw * mh
}

/// `flags` bit: vector loads and stores are allowed (see the module docs).
pub const FLAG_VECTOR: u32 = 1;

/// `flags` bit of `conv1d_rows_tc{S}_bf16`: take the tensor cores
/// ([`super::batch_tensor`]) for the tiles they can (set with
/// [`FLAG_VECTOR`] only).
pub const FLAG_TENSOR: u32 = 2;

/// `flags` bit of `conv1d_rows_tc{S}_bf16` (with [`FLAG_TENSOR`]): the
/// mask's band leaves the second half of the last step empty
/// ([`rt_half_last`](super::batch_tensor::rt_half_last)), which the kernel
/// then takes as one `mma.m16n8k8`.
pub const FLAG_HALF_STEP: u32 = 4;

/// The unrolled rows kernel's chunk count for a `w`-tap mask, if it has one.
pub const fn rows_fixed_chunks(w: usize) -> Option<usize> {
    if w >= 1 && w <= ROWS_FIXED_MAX { Some(w.div_ceil(ROWS_OUTPUTS)) } else { None }
}

/// The fewest tap chunks with which the `f32` rows kernels compute whole
/// tiles straight from their staging slot ([`rows_direct`]).
pub const ROWS_DIRECT_MIN_CHUNKS: usize = 5;

/// Whether the unrolled FMA rows kernel of `chunks` tap chunks
/// (`conv1d_rows{chunks}_<type>`) for a storage type of `size` bytes
/// computes whole tiles straight from their staging slot, with no pass
/// that copies the tile into the accumulation type: the `f32` kernels of
/// [`ROWS_DIRECT_MIN_CHUNKS`] chunks or more. A slot starts at the 16-byte
/// chunk of the tile's first input, [`rows_lead`] elements before it, so
/// these kernels keep their taps that many places later, after as many
/// leading places that are skipped (never multiplied), and write the
/// tiles they read singly (a row's ends) shifted the same way. A tile is
/// then read from its slot until its sums end, so the next copy into
/// that slot waits for the block's barrier: on an H200 that cost 1.5
/// points at w = 7 and gained 4 at w = 31 (`results/h200/rows-direct-bulk/`).
pub const fn rows_direct(size: usize, chunks: usize) -> bool {
    size == 4 && chunks >= ROWS_DIRECT_MIN_CHUNKS
}

/// Elements between the start of a tile's first 16-byte chunk and its
/// first input, for `left` taps left of centre: tiles start at multiples
/// of 4 outputs, so the first input lies at `(−left) mod V` in its chunk
/// (`V = 16 / size` elements), in every tile of every row.
pub const fn rows_lead(left: usize, size: usize) -> usize {
    let v = 16 / size;
    (v - left % v) % v
}

/// Whether the rows kernels' tile that starts at output `start` of its row
/// has all of its `span` inputs (from `start − left`) in the row's whole
/// `v`-element chunks, of `n` elements: tested in 32-bit arithmetic, for
/// `n` and `start` below 2³⁰ and `left`, `span` below 2²⁰ (the kernels'
/// general test of a tile's chunks takes about 45 instructions in 64 bits).
pub const fn rows_interior(start: u32, left: u32, span: u32, n: u32, v: u32) -> bool {
    start >= left && start - left + span <= n / v * v
}

/// The skip tests of the unrolled rows kernels' first and last tap chunks
/// as bits: bit `j` (`j` < 4) when place `j` of the first chunk holds a
/// tap (`j ≥ lead`), bit `4 + j` when place `j` of the last does
/// (`j < last`, `last` in `1..=4`).
pub const fn rows_keep_bits(lead: u32, last: u32) -> u32 {
    ((0xf << lead) & 0xf) | (((1 << last) - 1) << 4)
}

/// The unrolled rows kernel (`conv1d_rows{c}_<type>`) that takes `w`
/// taps, `left` of them left of centre, for a storage type of `size`
/// bytes, if one does: `c` = ⌈w / 4⌉ ([`rows_fixed_chunks`]), except for
/// `f32` when the taps shifted by [`rows_lead`] fill at least
/// [`ROWS_DIRECT_MIN_CHUNKS`] chunks: then `c` is their chunk count, the
/// kernel computes whole tiles from their slot ([`rows_direct`]), and
/// more than 8 such chunks take the general kernel (`None`).
pub const fn rows_kernel_chunks(w: usize, left: usize, size: usize) -> Option<usize> {
    let Some(plain) = rows_fixed_chunks(w) else {
        return None;
    };
    if size != 4 {
        return Some(plain);
    }
    let shifted = (w + rows_lead(left, size)).div_ceil(ROWS_OUTPUTS);
    if !rows_direct(size, shifted) {
        Some(plain)
    } else if shifted * ROWS_OUTPUTS <= ROWS_FIXED_MAX {
        Some(shifted)
    } else {
        None
    }
}

/// Shared-memory elements (of the accumulation type) of an FMA rows
/// kernel for a storage type of `size` bytes: [`rows_shared_elems`], and
/// for `f32` (whose direct kernels, [`rows_direct`], write a tile and
/// their taps shifted) two chunks more.
pub const fn rows_fma_elems(threads: usize, w: usize, size: usize) -> usize {
    rows_shared_elems(threads, w) + if size == 4 { 2 * ROWS_OUTPUTS } else { 0 }
}

/// Elements of the rows kernels' input tile at `threads` per block, mask
/// width `w`: the outputs plus the halo rounded up to whole 4-tap chunks.
pub const fn rows_span(threads: usize, w: usize) -> usize {
    ROWS_OUTPUTS * ROWS_GROUPS * threads + ROWS_OUTPUTS * w.div_ceil(ROWS_OUTPUTS)
}

/// Shared-memory elements (of the accumulation type) of a rows kernel:
/// the tile, then the signal's taps rounded up to whole chunks.
pub const fn rows_shared_elems(threads: usize, w: usize) -> usize {
    rows_span(threads, w) + ROWS_OUTPUTS * w.div_ceil(ROWS_OUTPUTS)
}

/// The tiles one draw from a rows kernel's work counter hands a block
/// (see `rows`): two, so that the runs' ends differ by a few microseconds
/// at most while each draw's atomic and restarted copies are spread over
/// two tiles.
pub const ROWS_DRAW_TILES: usize = 2;

/// Neighbouring tiles per run of the f32 and f64 rows kernels and of the
/// one-step tensor form (`conv1d_rows_tc1_bf16`): a block takes every
/// `grid`-th run ([`rows_walk`]). A power of two.
pub const ROWS_RUN_TILES: usize = 4;

/// The first tile of block `bid`'s walk over the first `fixed` tiles of a
/// rows kernel of `grid` blocks, and the walk's end ([`rows_next_tile`]
/// from the first tile on, while below the end): with `spread`, runs of
/// [`ROWS_RUN_TILES`] neighbours, runs `bid, bid + grid, …` (all blocks
/// then read from a few MB of the arrays at a time: on an H200 the f32
/// rows at w = 7 went from 85% of the floor to 87%, bf16 from 82% to 83%);
/// else one contiguous run of `fixed / grid` tiles, rounded.
pub const fn rows_walk(bid: usize, grid: usize, fixed: usize, spread: bool) -> (usize, usize) {
    if spread {
        let first = ROWS_RUN_TILES * bid;
        (if first < fixed { first } else { fixed }, fixed)
    } else {
        (fixed * bid / grid, fixed * (bid + 1) / grid)
    }
}

/// The tile after `b` in a rows kernel's walk ([`rows_walk`]): the next
/// one, or with `spread` after a run's last tile the first of the block's
/// next run, or `fixed` past the block's runs. Tiles from `fixed` on (drawn
/// from the work counter) follow one another.
pub const fn rows_next_tile(b: usize, fixed: usize, grid: usize, spread: bool) -> usize {
    if !spread || b >= fixed || !(b + 1).is_multiple_of(ROWS_RUN_TILES) {
        b + 1
    } else {
        let next = b + 1 + ROWS_RUN_TILES * (grid - 1);
        if next < fixed { next } else { fixed }
    }
}

/// Bytes of a rows kernel's work counter's draws, passed from thread 0 to
/// the block (one 32-bit word in the FMA form, two taken in turn in the
/// tensor form): after the fragment table in the tensor form, after the
/// staging ring in the FMA form.
pub const ROWS_DRAW_BYTES: usize = 16;

/// Tiles of `tiles` that a rows kernel of `grid` blocks hands out by its
/// work counter, [`ROWS_DRAW_TILES`] at a time, after each block's
/// walk over the rest ([`rows_walk`]): a fifth when there are at least
/// four per block (on an H100, equal runs finished up to 12% apart: the SMs' own
/// pace differs, and so does the cost of row ends), none otherwise or
/// when they number 2^32 or more.
pub const fn rows_drawn_tiles(tiles: usize, grid: usize) -> usize {
    if tiles >= 4 * grid && tiles <= u32::MAX as usize { tiles / 5 } else { 0 }
}

/// Whether a rows kernel draws tiles ([`rows_drawn_tiles`]): the tensor
/// form, and the FMA kernels of every storage size but 2 bytes (those of
/// f16, bf16 and u16, at 64 registers for 4 blocks per SM, spilled with
/// the drawing loop).
pub const fn rows_draw(tensor: bool, size: usize) -> bool {
    tensor || size != 2
}

/// Staging buffers of the rows kernels for a storage type of `size`
/// bytes: 16–33 KiB of tiles in flight per block (2 tiles of `f32` or
/// `f64`, 3 of 16-bit types, 4 of `u8`).
pub const fn rows_stages(size: usize) -> usize {
    match size {
        1 => 4,
        2 => 3,
        _ => 2,
    }
}

/// Bytes of one staging buffer of the rows kernels: a tile's inputs
/// rounded out to whole 16-byte chunks (at most one more chunk than they
/// fill).
pub const fn rows_stage_bytes(threads: usize, w: usize, size: usize) -> usize {
    16 * ((rows_span(threads, w) * size).div_ceil(16) + 1 + super::batch_tensor::RT_PAD_CHUNKS)
}

/// Whether the FMA rows kernels of a storage type of `size` bytes take
/// their tiles by bulk copies on sm_90 (`cp.async.bulk`, one per tile,
/// issued by thread 0 onto a barrier object per staging slot, with an L2
/// prefetch of the tile after next): the 4-byte types. The others copy
/// by `cp.async`, 16 bytes per thread and copy.
pub const fn rows_bulk(size: usize) -> bool {
    size == 4
}

/// Bytes of the barrier objects of a rows kernel for a storage type of
/// `size` bytes: one 8-byte object per staging slot where the kernel
/// copies by bulk copies on sm_90 ([`rows_bulk`]; reserved on every
/// architecture), none otherwise.
pub const fn rows_barrier_bytes(size: usize) -> usize {
    if rows_bulk(size) { 8 * rows_stages(size) } else { 0 }
}

/// Dynamic shared memory of a rows kernel, bytes: the tile and taps
/// ([`rows_fma_elems`] of `acc` bytes each), the staging ring, the
/// work counter's draw, then the slots' barriers ([`rows_barrier_bytes`]).
pub const fn rows_shared_bytes(threads: usize, w: usize, size: usize, acc: usize) -> usize {
    rows_fma_elems(threads, w, size) * acc
        + rows_stages(size) * rows_stage_bytes(threads, w, size)
        + ROWS_DRAW_BYTES
        + rows_barrier_bytes(size)
}

/// Dynamic shared memory of a rows kernel's tensor form
/// (`conv1d_rows_tc{S}_bf16`), bytes: the `f32` tile and taps (for tiles
/// [`RT_TILE_SCALE`](super::batch_tensor::RT_TILE_SCALE) times longer), a ring of
/// [`RT_STAGES`](super::batch_tensor::RT_STAGES) staging buffers, then the
/// `B` fragment table, the work counter's draw and the slots' barriers
/// ([`RT_BARRIER_BYTES`](super::batch_tensor::RT_BARRIER_BYTES)).
pub const fn rows_tc_shared_bytes(threads: usize, w: usize) -> usize {
    let tt = threads * super::batch_tensor::RT_TILE_SCALE;
    rows_shared_elems(tt, w) * 4
        + super::batch_tensor::RT_STAGES * rows_stage_bytes(tt, w, 2)
        + super::batch_tensor::RT_TABLE_BYTES
        + ROWS_DRAW_BYTES
        + super::batch_tensor::RT_BARRIER_BYTES
}

/// Shared-memory elements (of the accumulation type) of a columns kernel
/// for a `w`-tap mask: `COLS_ROWS + w` tile rows and `w` rows of taps,
/// [`COLS_X`] wide each.
pub const fn cols_shared_elems(w: usize) -> usize {
    COLS_X * (COLS_ROWS + 2 * w)
}

/// IEEE binary16 storage (the bits), as kernels take it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct F16(pub u16);

/// bfloat16 storage (the bits), as kernels take it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Bf16(pub u16);

#[cfg(test)]
mod tests {
    use super::*;

    /// A tile's first input lies `(−left) mod V` elements into its first
    /// chunk; the `f32` kernels whose shifted taps fill 5 to 8 chunks
    /// compute from their slots and are named by those chunks, wider ones
    /// take the general kernel, and every other kernel is named by
    /// ⌈w / 4⌉. Every kernel's taps fit the region `rows_fma_elems` gives.
    #[test]
    fn direct_kernels_take_the_shifted_taps() {
        assert_eq!([15, 3, 10, 16, 17].map(|left| rows_lead(left, 4)), [1, 1, 2, 0, 3]);
        assert_eq!(rows_lead(3, 2), 5);
        assert_eq!(rows_lead(5, 1), 11);
        let f32_cases = [(31, 15, Some(8)), (7, 3, Some(2)), (20, 10, Some(6)), (12, 6, Some(3)), (16, 7, Some(5))];
        for (w, left, want) in
            f32_cases.into_iter().chain([(32, 16, Some(8)), (32, 17, None), (0, 0, None), (33, 16, None)])
        {
            assert_eq!(rows_kernel_chunks(w, left, 4), want, "w = {w}, left = {left}");
        }
        assert_eq!(rows_kernel_chunks(31, 15, 2), Some(8));
        assert_eq!(rows_kernel_chunks(32, 17, 8), Some(8));
        for size in [1, 2, 4, 8] {
            for w in 1..=40 {
                for left in 0..w + 4 {
                    let Some(c) = rows_kernel_chunks(w, left, size) else {
                        assert!(w > ROWS_FIXED_MAX || size == 4 && w + rows_lead(left, 4) > ROWS_FIXED_MAX);
                        continue;
                    };
                    let places = if rows_direct(size, c) { w + rows_lead(left, size) } else { w };
                    assert_eq!(c, places.div_ceil(ROWS_OUTPUTS), "size {size}, w = {w}, left = {left}");
                    assert!(c <= 8);
                    let room = rows_fma_elems(ROWS_THREADS, w, size) - rows_span(ROWS_THREADS, w);
                    let tile_extra = if rows_direct(size, c) { ROWS_OUTPUTS } else { 0 };
                    assert!(tile_extra + ROWS_OUTPUTS * c <= room, "size {size}, w = {w}, left = {left}");
                }
            }
        }
    }

    /// The 32-bit interior test agrees with the general one (a tile's
    /// chunks wholly in the row: `chunks`, then `whole`, in 64 bits), and
    /// the skip bits with the comparisons they replace.
    #[test]
    fn interior_tiles_and_skip_bits() {
        for v in [4usize, 8, 16] {
            for n in 0..150usize {
                for left in 0..40usize {
                    for span in [8usize, 12, 36, 44] {
                        for start in (0..n + 40).step_by(4) {
                            let origin = start as isize - left as isize;
                            let lo = if origin < 0 { 0 } else { origin as usize / v };
                            let stop = origin + span as isize;
                            let hi = if stop <= 0 { 0 } else { (stop as usize).div_ceil(v).min(n / v) };
                            let (c0, c1) = if lo < hi { (lo, hi) } else { (0, 0) };
                            let whole = origin >= 0 && c0 == origin as usize / v && c1 * v >= origin as usize + span;
                            let got = rows_interior(start as u32, left as u32, span as u32, n as u32, v as u32);
                            assert_eq!(got, whole, "v {v}, n {n}, left {left}, span {span}, start {start}");
                        }
                    }
                }
            }
        }
        for lead in 0..4u32 {
            for last in 1..=4u32 {
                let bits = rows_keep_bits(lead, last);
                for j in 0..4u32 {
                    assert_eq!(bits & 1 << j != 0, j >= lead, "lead {lead}, j {j}");
                    assert_eq!(bits & 1 << (4 + j) != 0, j < last, "last {last}, j {j}");
                }
                assert_eq!(bits >> 8, 0);
            }
        }
    }

    /// The FMA kernels that copy by bulk copies ([`rows_bulk`]: the 4-byte
    /// types) end their shared memory with one 8-byte-aligned barrier per
    /// staging slot after the draw word (the kernel's `bars`), which costs
    /// no block per SM on sm_90 (228 KiB, 1 KiB reserved per block) at any
    /// width up to 255 taps; the other sizes reserve none.
    #[test]
    fn fma_barriers_are_aligned_and_cost_no_block() {
        assert!(rows_bulk(4) && !rows_bulk(1) && !rows_bulk(2) && !rows_bulk(8));
        assert_eq!(rows_barrier_bytes(4), 8 * rows_stages(4));
        for size in [1, 2, 8] {
            assert_eq!(rows_barrier_bytes(size), 0);
        }
        let blocks = |bytes: usize| (228 * 1024 / (bytes + 1024)).min(2048 / ROWS_THREADS);
        for w in 1..=255 {
            let before = rows_fma_elems(ROWS_THREADS, w, 4) * 4
                + rows_stages(4) * rows_stage_bytes(ROWS_THREADS, w, 4)
                + ROWS_DRAW_BYTES;
            assert_eq!(before % 8, 0, "w = {w}");
            let total = rows_shared_bytes(ROWS_THREADS, w, 4, 4);
            assert_eq!(total, before + rows_barrier_bytes(4), "w = {w}");
            assert_eq!(blocks(total), blocks(before), "w = {w}: {total} bytes");
        }
    }

    /// A fifth of the tiles are drawn once there are four per block, none
    /// below that or from 2^32 tiles on (the kernels draw with 32-bit
    /// counters).
    #[test]
    fn drawn_tiles() {
        assert_eq!(rows_drawn_tiles(396 * 4 - 1, 396), 0);
        assert_eq!(rows_drawn_tiles(396 * 4, 396), 396 * 4 / 5);
        assert_eq!(rows_drawn_tiles(16384, 396), 3276);
        assert_eq!(rows_drawn_tiles(1 << 32, 1), 0);
        assert_eq!(rows_drawn_tiles(u32::MAX as usize, 1), u32::MAX as usize / 5);
    }

    /// Every block's walk ([`rows_walk`], [`rows_next_tile`]) together
    /// covers each of the first `fixed` tiles exactly once, spread or not,
    /// whatever the grid.
    #[test]
    fn walks_cover_every_tile_once() {
        for spread in [true, false] {
            for grid in [1, 2, 3, 7, 132, 396] {
                for fixed in [0, 1, 3, 4, 5, 17, 1000, 1583, 13108, 396 * 4 * 3 + 5] {
                    let mut all = [0u8; 16384];
                    let seen = &mut all[..fixed];
                    for bid in 0..grid {
                        let (mut b, end) = rows_walk(bid, grid, fixed, spread);
                        assert!(end <= fixed);
                        while b < end {
                            seen[b] += 1;
                            let next = rows_next_tile(b, fixed, grid, spread);
                            assert!(next > b && next <= fixed, "{b} -> {next}");
                            b = next;
                        }
                    }
                    assert!(seen.iter().all(|&k| k == 1), "spread {spread}, grid {grid}, fixed {fixed}");
                }
            }
        }
        // Drawn tiles (from `fixed` on) follow one another.
        assert_eq!(rows_next_tile(100, 100, 396, true), 101);
        assert_eq!(rows_next_tile(3, 100, 2, true), 8);
        assert_eq!(rows_next_tile(3, 6, 2, true), 6);
    }

    /// The tensor form's shared memory ends with one 8-byte-aligned
    /// barrier object per staging slot, after the tile, the slots, the
    /// fragment table and the draw word (the kernel's `bars`), and still
    /// fits three blocks of 256 threads per SM on sm_90 (228 KiB, 1 KiB
    /// reserved per block) for every width the form takes.
    #[test]
    fn tensor_form_barriers_are_aligned_and_fit() {
        use super::super::batch_tensor::{RT_BARRIER_BYTES, RT_MIN_TAPS, RT_STAGES, RT_TABLE_BYTES, RT_TILE_SCALE};
        assert_eq!(RT_BARRIER_BYTES, 8 * RT_STAGES);
        for w in RT_MIN_TAPS..=ROWS_FIXED_MAX {
            let tt = ROWS_THREADS * RT_TILE_SCALE;
            let bars = rows_shared_elems(tt, w) * 4
                + RT_STAGES * rows_stage_bytes(tt, w, 2)
                + RT_TABLE_BYTES
                + ROWS_DRAW_BYTES;
            assert_eq!(bars % 8, 0, "w = {w}");
            let total = rows_tc_shared_bytes(ROWS_THREADS, w);
            assert_eq!(total, bars + RT_BARRIER_BYTES, "w = {w}");
            assert!(3 * (total + 1024) <= 228 * 1024, "w = {w}: {total} bytes");
        }
    }
}

#[cfg(target_arch = "nvptx64")]
pub(in crate::conv) mod kernels {
    #[cfg(target_feature = "sm_80")]
    use super::Bf16;
    use super::{
        CHAN_OUTPUTS, CHAN_ROWS, CHAN_X, CHAN_Y, COLS_OUTPUTS, COLS_ROWS, COLS_X, COLS_Y, F16, FLAG_VECTOR,
        ROWS_OUTPUTS,
    };
    #[cfg(target_feature = "sm_80")]
    use crate::conv::batch_tensor::kernels as tc;
    use crate::conv::boundary::map_index;
    use crate::conv::elem::{ConvElem, opaque, unroll};
    use crate::dev::index::{block_dim_x, block_idx_x, grid_dim_x, thread_idx_x, thread_idx_y};
    use crate::dev::pipeline;
    #[cfg(target_feature = "sm_80")]
    use crate::dev::shared::SharedElem;
    use crate::dev::shared::{Shared, dynamic};
    use crate::dev::sync::sync_threads;
    use core::arch::asm;

    /// A storage type: how its values widen to the accumulation type,
    /// arrive in 16-byte chunks, and leave rounded.
    pub(in crate::conv) trait Storage: Copy {
        /// The accumulation (and mask) type.
        type Acc: ConvElem + PartialEq;
        /// Elements per 16 bytes.
        const V: usize;
        /// The value, exactly, in the accumulation type.
        fn widen(self) -> Self::Acc;
        /// The output rule (see the module docs).
        fn narrow(a: Self::Acc) -> Self;
        /// Stores `v` narrowed at `p`.
        ///
        /// # Safety
        /// `p` valid for four elements, aligned to four elements' bytes
        /// (to 16 bytes for `f64`).
        unsafe fn store4(p: *mut Self, v: [Self::Acc; 4]);
        /// The element at shared-window address `addr`.
        ///
        /// # Safety
        /// `addr` inside this block's shared memory, aligned for `Self`.
        unsafe fn ld_shared(addr: u32) -> Self;
        /// [`Storage::widen`] in full-rate ALU instructions where the
        /// plain conversion is quarter-rate (the integer types).
        #[inline(always)]
        fn widen_alu(self) -> Self::Acc {
            self.widen()
        }
        /// [`Storage::narrow`] likewise.
        #[inline(always)]
        fn narrow_alu(a: Self::Acc) -> Self {
            Self::narrow(a)
        }
        /// [`Storage::store4`] likewise.
        ///
        /// # Safety
        /// As [`Storage::store4`].
        #[inline(always)]
        unsafe fn store4_alu(p: *mut Self, v: [Self::Acc; 4]) {
            // SAFETY: the caller's contract.
            unsafe { Self::store4(p, v) }
        }
    }

    /// [`Storage::ld_shared`] for a type of `$bits` bits, built from the
    /// bits.
    macro_rules! ld_shared_bits {
        ($bits:literal, $reg:ident, $int:ty, $from:expr) => {
            #[inline(always)]
            unsafe fn ld_shared(addr: u32) -> Self {
                let v: $int;
                // SAFETY: the caller's contract.
                unsafe {
                    asm!(concat!("ld.shared.b", $bits, " {v}, [{a}];"), v = out($reg) v, a = in(reg32) addr,
                         options(readonly, nostack, preserves_flags))
                };
                $from(v)
            }
        };
    }

    /// Stores two words at `p`.
    ///
    /// # Safety
    /// `p` valid for 8 bytes and 8-byte aligned.
    #[inline(always)]
    unsafe fn store8<S>(p: *mut S, a: u32, b: u32) {
        // SAFETY: the caller's contract.
        unsafe {
            asm!("st.global.v2.u32 [{p}], {{{a}, {b}}};", p = in(reg64) p, a = in(reg32) a, b = in(reg32) b,
                 options(nostack, preserves_flags))
        };
    }

    /// `x` rounded to the nearest integer (ties to even), saturated to
    /// `0..=max`; NaN gives 0 (`cvt.rni.u32.f32` saturates and maps NaN
    /// to 0).
    #[inline(always)]
    fn round_sat(x: f32, max: u32) -> u32 {
        let v: u32;
        // SAFETY: arithmetic only.
        unsafe {
            asm!("cvt.rni.u32.f32 {v}, {x};", v = out(reg32) v, x = in(reg32) x,
                 options(pure, nomem, nostack, preserves_flags))
        };
        if v > max { max } else { v }
    }

    /// [`round_sat`] in full-rate ALU instructions: the same result.
    #[inline(always)]
    fn round_sat_alu(x: f32, max: u32) -> u32 {
        // Clamped first (`max.f32` returns the other operand for NaN, so
        // NaN becomes 0), then rounded by the addition of 1.5 · 2^23: every
        // sum lies in [2^23, 2^24), whose spacing is 1, so the addition
        // (round to nearest, ties to even) leaves the integer in the low
        // bits. Full-rate ALU work instead of the quarter-rate `cvt.rni`.
        let c = x.max(0.0).min(max as f32);
        let v: u32;
        // SAFETY: arithmetic only. The subtraction is written in PTX: left
        // to LLVM, a store of the low byte or half drops it (those bits are
        // zero in 1.5 · 2^23) and stores the sum's register directly, which
        // `ptxas` then converts as a float, saturating every value.
        unsafe {
            asm!("sub.u32 {v}, {b}, 1262485504;", v = out(reg32) v, b = in(reg32) (c + 12_582_912.0).to_bits(),
                 options(pure, nomem, nostack, preserves_flags))
        };
        v
    }

    /// `v` as `f32`, exactly, for `v < 2^23`: the bits of `2^23 + v`,
    /// less `2^23` (full-rate ALU work instead of the quarter-rate
    /// integer conversion).
    #[inline(always)]
    fn small_to_f32(v: u32) -> f32 {
        f32::from_bits(0x4B00_0000 | v) - 8_388_608.0
    }

    /// [`Storage`] for `f32` and `f64`: stored as accumulated.
    macro_rules! float_storage {
        ($t:ty, $bits:literal, $reg:ident, $int:ty, $v:literal) => {
            impl Storage for $t {
                ld_shared_bits!($bits, $reg, $int, <$t>::from_bits);
                type Acc = $t;
                const V: usize = $v;
                #[inline(always)]
                fn widen(self) -> $t {
                    self
                }
                #[inline(always)]
                fn narrow(a: $t) -> $t {
                    a
                }
                #[inline(always)]
                unsafe fn store4(p: *mut $t, v: [$t; 4]) {
                    // SAFETY: the caller's contract (16-byte aligned).
                    unsafe { <$t as ConvElem>::store4(p, v) }
                }
            }
        };
    }

    float_storage!(f32, "32", reg32, u32, 4);
    float_storage!(f64, "64", reg64, u64, 2);

    /// Stores four 16-bit values (the low halves of `h`) at `p`.
    ///
    /// # Safety
    /// `p` valid for 8 bytes and 8-byte aligned.
    #[inline(always)]
    unsafe fn store4_halves<S>(p: *mut S, h: [u32; 4]) {
        // SAFETY: the caller's contract.
        unsafe { store8(p, h[0] | h[1] << 16, h[2] | h[3] << 16) }
    }

    impl Storage for F16 {
        ld_shared_bits!("16", reg16, u16, F16);
        type Acc = f32;
        const V: usize = 8;
        #[inline(always)]
        fn widen(self) -> f32 {
            let f: f32;
            // SAFETY: arithmetic only.
            unsafe {
                asm!("cvt.f32.f16 {f}, {h};", f = out(reg32) f, h = in(reg16) self.0,
                     options(pure, nomem, nostack, preserves_flags))
            };
            f
        }
        #[inline(always)]
        fn narrow(a: f32) -> F16 {
            let h: u16;
            // SAFETY: arithmetic only.
            unsafe {
                asm!("cvt.rn.f16.f32 {h}, {f};", h = out(reg16) h, f = in(reg32) a,
                     options(pure, nomem, nostack, preserves_flags))
            };
            F16(h)
        }
        #[inline(always)]
        unsafe fn store4(p: *mut F16, v: [f32; 4]) {
            // SAFETY: the caller's contract (8-byte aligned).
            unsafe { store4_halves(p, v.map(|x| Self::narrow(x).0 as u32)) }
        }
    }

    #[cfg(target_feature = "sm_80")]
    impl Storage for Bf16 {
        ld_shared_bits!("16", reg16, u16, Bf16);
        type Acc = f32;
        const V: usize = 8;
        #[inline(always)]
        fn widen(self) -> f32 {
            f32::from_bits((self.0 as u32) << 16)
        }
        #[inline(always)]
        fn narrow(a: f32) -> Bf16 {
            let h: u16;
            // SAFETY: arithmetic only (sm_80 and newer).
            unsafe {
                asm!("cvt.rn.bf16.f32 {h}, {f};", h = out(reg16) h, f = in(reg32) a,
                     options(pure, nomem, nostack, preserves_flags))
            };
            Bf16(h)
        }
        #[inline(always)]
        unsafe fn store4(p: *mut Bf16, v: [f32; 4]) {
            // SAFETY: the caller's contract (8-byte aligned).
            unsafe { store4_halves(p, v.map(|x| Self::narrow(x).0 as u32)) }
        }
    }

    impl Storage for u8 {
        ld_shared_bits!("8", reg16, u16, |v: u16| v as u8);
        type Acc = f32;
        const V: usize = 16;
        #[inline(always)]
        fn widen(self) -> f32 {
            self as f32
        }
        #[inline(always)]
        fn narrow(a: f32) -> u8 {
            round_sat(a, 255) as u8
        }
        #[inline(always)]
        unsafe fn store4(p: *mut u8, v: [f32; 4]) {
            let b = v.map(|x| round_sat(x, 255));
            let word = b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24;
            // SAFETY: the caller's contract (4-byte aligned).
            unsafe { *p.cast::<u32>() = word };
        }
        #[inline(always)]
        fn widen_alu(self) -> f32 {
            small_to_f32(self as u32)
        }
        #[inline(always)]
        fn narrow_alu(a: f32) -> u8 {
            round_sat_alu(a, 255) as u8
        }
        #[inline(always)]
        unsafe fn store4_alu(p: *mut u8, v: [f32; 4]) {
            let b = v.map(|x| round_sat_alu(x, 255));
            let word = b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24;
            // SAFETY: the caller's contract (4-byte aligned).
            unsafe { *p.cast::<u32>() = word };
        }
    }

    impl Storage for u16 {
        ld_shared_bits!("16", reg16, u16, |v: u16| v);
        type Acc = f32;
        const V: usize = 8;
        #[inline(always)]
        fn widen(self) -> f32 {
            self as f32
        }
        #[inline(always)]
        fn narrow(a: f32) -> u16 {
            round_sat(a, 65535) as u16
        }
        #[inline(always)]
        unsafe fn store4(p: *mut u16, v: [f32; 4]) {
            // SAFETY: the caller's contract (8-byte aligned).
            unsafe { store4_halves(p, v.map(|x| round_sat(x, 65535))) }
        }
        #[inline(always)]
        fn widen_alu(self) -> f32 {
            small_to_f32(self as u32)
        }
        #[inline(always)]
        fn narrow_alu(a: f32) -> u16 {
            round_sat_alu(a, 65535) as u16
        }
        #[inline(always)]
        unsafe fn store4_alu(p: *mut u16, v: [f32; 4]) {
            // SAFETY: the caller's contract (8-byte aligned).
            unsafe { store4_halves(p, v.map(|x| round_sat_alu(x, 65535))) }
        }
    }

    /// The value of signal position `x` (any integer) under `mode`: the
    /// sample at `line + k · step` for the index `k` it maps to, or `cval`.
    ///
    /// # Safety
    /// `line + k · step` valid for every `k < n`; `n > 0`.
    #[inline(always)]
    unsafe fn fetch<S: Storage>(line: *const S, step: usize, n: usize, x: isize, mode: u32, cval: S::Acc) -> S::Acc {
        match map_index(x, n as isize, mode) {
            // SAFETY: map_index returns indices below n.
            Some(k) => unsafe { (*line.add(k * step)).widen() },
            None => cval,
        }
    }

    /// A tile of the rows kernels: its index over all rows, its row, and
    /// its place in the row.
    #[derive(Clone, Copy)]
    struct Cursor {
        b: usize,
        row: usize,
        tile: usize,
    }

    /// The launch's arguments (see the module docs).
    #[derive(Clone, Copy)]
    pub(super) struct Args<S: Storage> {
        pub input: *const S,
        pub output: *mut S,
        pub signals: usize,
        pub n: usize,
        pub in_pitch: usize,
        pub out_pitch: usize,
        pub masks: *const S::Acc,
        pub mask_stride: usize,
        pub w: usize,
        pub left: usize,
        pub mode: u32,
        pub cval: S::Acc,
        pub flags: u32,
        /// The launch's work counter: two words, zero at the launch and
        /// left zero (null when `drawn` is 0).
        pub sched: *mut u32,
        /// Tiles handed out through `sched` ([`super::rows_drawn_tiles`]).
        pub drawn: usize,
    }

    /// The rows kernels: see the module docs. `CH` is 0 (any width) or
    /// the mask's chunk count `ceil(w / 4)` (tap loop unrolled). The taps
    /// are read from shared memory, not held in registers: 32 registers
    /// fewer keep twice the blocks resident, which this latency-bound loop
    /// needs more than it needs the shared-memory bandwidth. Taps past `w` in the last chunk are
    /// skipped, not multiplied by zero, so infinities and NaNs propagate
    /// as in the plain sum; each output's sum runs in tap order.
    ///
    /// Interior tiles arrive through a ring of [`super::rows_stages`]
    /// staging buffers filled by `cp.async` (raw bytes, 16 at a time) as
    /// many tiles ahead, so the loads of the next tiles are in flight while
    /// a tile is widened and computed; edge tiles (and unaligned layouts)
    /// are read directly with the boundary mode. (On sm_70 the copies are
    /// plain loads: the same code, without the overlap.) On sm_90 the
    /// 4-byte types ([`super::rows_bulk`]) and the tensor form take each
    /// tile by one bulk copy instead, issued by thread 0 onto the slot's
    /// barrier object, and thread 0 loads the tile after next into the L2.
    ///
    /// # Safety
    /// The arguments as the module docs give; dynamic shared memory of
    /// [`super::rows_shared_bytes`] bytes.
    // The tap loop's tests compare the unrolled loops' constants (`C`,
    // `JJ`), zero in the first round: they fold away where they hold.
    #[allow(clippy::absurd_extreme_comparisons)]
    #[inline(always)]
    pub(super) unsafe fn rows<S: Storage, const CH: usize, const TC: usize>(a: Args<S>) {
        const R: usize = ROWS_OUTPUTS;
        const { assert!(CH <= 8) };
        let w = a.w;
        let size = core::mem::size_of::<S>();
        let chunks_ok =
            if TC > 0 { w.div_ceil(R) == CH } else { super::rows_kernel_chunks(w, a.left, size) == Some(CH) };
        if CH > 0 && !chunks_ok {
            // Not this kernel's width (the host never launches it so).
            return;
        }
        // Whether whole tiles are computed straight from their staging
        // slot (super::rows_direct): the slot holds the tile's inputs from
        // `lead` elements before its first, so the taps sit at `taps_at`
        // after `lead` skipped places, and the tiles written into the
        // tile region are written `lead` places in.
        let direct = TC == 0 && super::rows_direct(size, CH);
        const {
            assert!(
                !(TC == 0 && super::rows_direct(core::mem::size_of::<S>(), CH))
                    || core::mem::size_of::<S::Acc>() == core::mem::size_of::<S>()
            )
        };
        let lead = if direct { super::rows_lead(a.left, size) } else { 0 };
        // The block (ROWS_THREADS) as a constant in the f32 and f64 FMA
        // kernels: their loops over a tile then run at immediate offsets.
        // The others read it from its special register: they spill with
        // the constant (its derived addresses take registers); the tensor
        // form's copy loop alone takes it as a constant.
        if (TC > 0 || size >= 4) && block_dim_x() as usize != super::ROWS_THREADS {
            // Not this kernel's block (the host never launches it so).
            return;
        }
        let threads = if TC == 0 && size >= 4 { super::ROWS_THREADS } else { block_dim_x() as usize };
        let n = a.n;
        let t = thread_idx_x() as usize;
        const GROUPS: usize = super::ROWS_GROUPS;
        // The tensor form's tiles are RT_TILE_SCALE times longer (its
        // per-tile work is short; the barrier, copies and walk are not):
        // laid out as the FMA form's for that many times the threads.
        let scale = if TC > 0 { super::super::batch_tensor::RT_TILE_SCALE } else { 1 };
        let tile = R * GROUPS * threads * scale;
        let span = super::rows_span(threads * scale, w);
        let stages = if TC > 0 { super::super::batch_tensor::RT_STAGES } else { super::rows_stages(size) };
        // SAFETY: the host sizes the dynamic window (rows_shared_bytes);
        // it is 16-byte aligned.
        let s: Shared<S::Acc> = unsafe { dynamic() };
        let staging = s.addr_of(if TC > 0 {
            super::rows_shared_elems(threads * scale, w)
        } else {
            super::rows_fma_elems(threads, w, size)
        });
        // The taps' first place (after the tile region, a chunk longer in
        // the direct kernels), and the places they fill: `lead` skipped
        // ones, then the w taps.
        let (taps_at, places) = if direct { (span + R, w + lead) } else { (span, w) };
        let stage_bytes = super::rows_stage_bytes(threads * scale, w, size) as u32;
        let vector = a.flags & FLAG_VECTOR != 0;
        let per_row = n.div_ceil(tile);
        let total = a.signals * per_row;
        let grid = grid_dim_x() as usize;
        // A block's tiles, of the first `fixed` tiles of all rows in order
        // (each as (row, tile in row)): in the f32 and f64 kernels and the
        // one-step tensor form, runs of ROWS_RUN_TILES neighbours, block
        // `bid` taking runs bid, bid + grid, … (all blocks then read from a
        // few MB of the arrays at a time, and a block changes rows at most
        // once a run); in the others, one contiguous run of fixed / grid
        // tiles (the u8 and 16-bit FMA kernels spill with runs and lost
        // time to their row changes, as did the 3-step tensor form, whose
        // fragment table is the longest to rewrite at a row change: the
        // likely cause, not measured). The walk is a division per
        // thread and run, then additions (64-bit division is a long
        // subroutine on the GPU, and a tile of a short mask is only a few
        // dozen instructions per thread). The last `drawn` tiles are not
        // in those runs: blocks draw them from the work counter,
        // ROWS_DRAW_TILES at a time, as they finish, so the blocks that ran
        // faster take more of them.
        let bid = block_idx_x() as usize;
        // (The host passes drawn ≤ total < 2^32, with the counter, or 0.)
        let drawn = if super::rows_draw(TC > 0, size) { a.drawn } else { 0 };
        let fixed = total - drawn;
        let spread = if TC > 0 { TC == 1 } else { size >= 4 };
        let (first, end) = super::rows_walk(bid, grid, fixed, spread);
        // Tile b as a cursor, when there are fewer than 2^32 tiles.
        let cursor32 = |b: usize| {
            let (b32, p) = (b as u32, per_row as u32);
            Cursor { b, row: (b32 / p) as usize, tile: (b32 % p) as usize }
        };
        // Tile b as a cursor (32-bit division below 2^32 tiles).
        let cursor = |b: usize| {
            if total <= u32::MAX as usize { cursor32(b) } else { Cursor { b, row: b / per_row, tile: b % per_row } }
        };
        let mut run = (cursor(first), end);
        let advance = |c: Cursor| {
            let b = super::rows_next_tile(c.b, fixed, grid, spread);
            if b == c.b + 1 {
                let mut next = Cursor { b, row: c.row, tile: c.tile + 1 };
                if next.tile == per_row {
                    next.tile = 0;
                    next.row += 1;
                }
                next
            } else if b >= fixed {
                // The walk's end (`b` stays below 2^32 when the tiles do, as
                // the tensor form's 32-bit tests need).
                Cursor { b: fixed, row: 0, tile: 0 }
            } else {
                cursor(b)
            }
        };
        let left = a.left as isize;
        // Whether a tile arrives through the staging ring: its inputs,
        // rounded out to whole 16-byte chunks, lie inside its row.
        // The 16-byte chunks of a tile's inputs that lie wholly inside its
        // row: [c0, c1) (empty for tiles past the end). Interior tiles
        // have all of theirs; an edge tile has all but the ghost cells and
        // the row's last, partial chunk.
        let chunks = |c: Cursor, end: usize| {
            if TC > 0 {
                // The tensor form runs on rows shorter than RT_MAX_LEN and
                // launches of fewer than 2^32 tiles (the host's condition):
                // the same in 32-bit arithmetic, short dependent chains in
                // the walk every warp runs after each barrier.
                const { assert!(super::super::batch_tensor::RT_MAX_LEN <= 1 << 30) };
                let origin = (c.tile as u32 * tile as u32) as i32 - left as i32;
                let lo = if origin < 0 { 0 } else { origin as u32 / S::V as u32 };
                let stop = origin + span as i32;
                let hi = if stop <= 0 { 0 } else { (stop as u32).div_ceil(S::V as u32).min(n as u32 / S::V as u32) };
                return if vector && (c.b as u32) < end as u32 && lo < hi {
                    (lo as usize, hi as usize)
                } else {
                    (0, 0)
                };
            }
            let origin = (c.tile * tile) as isize - left;
            let lo = if origin < 0 { 0 } else { origin as usize / S::V };
            let stop = origin + span as isize;
            let hi = if stop <= 0 { 0 } else { (stop as usize).div_ceil(S::V).min(n / S::V) };
            if vector && c.b < end && lo < hi { (lo, hi) } else { (0, 0) }
        };
        // Chunks of room the tensor kernels leave before a row's first
        // tile in its slot: the slot then starts at the row's chunk
        // ⌊(−left) / V⌋, as an interior tile's slot starts at the chunk of
        // its first input, so that the ghost cells before the row can be
        // written there (the slot holds one chunk more than a tile's
        // inputs fill, and they fill ⌈left / V⌉ chunks fewer).
        let room = |c: Cursor| if TC > 0 && c.tile == 0 { a.left.div_ceil(S::V) } else { 0 };
        // The words through which thread 0 passes the work counter's draws
        // (after the staging ring, and the tensor form's fragment table).
        let table_bytes = if TC > 0 { super::super::batch_tensor::RT_TABLE_BYTES as u32 } else { 0 };
        let draw = staging + stages as u32 * stage_bytes + table_bytes;
        // The slots' barrier objects on sm_90, one per staging slot, after
        // the draw word (rows_shared_bytes, rows_tc_shared_bytes).
        #[cfg(target_feature = "sm_90")]
        let bars = draw + super::ROWS_DRAW_BYTES as u32;
        // Whether the tiles arrive by bulk copies (sm_90; the tensor form
        // and the 4-byte FMA kernels): tile `i` of the block (counted over
        // all its runs) then lands in slot i mod stages as phase
        // ⌊i / stages⌋ of the slot's barrier, and a run issues no copy past
        // its last tile.
        const BULK: bool = cfg!(target_feature = "sm_90");
        let bulk = BULK && (TC > 0 || super::rows_bulk(size));
        // Starts a tile's copies into slot `slot` (one commit group per
        // call, empty when there is nothing to copy; with bulk copies the
        // slot barrier's one phase, and nothing for a tile past the run).
        let issue = |slot: usize, c: Cursor, end: usize| {
            // With bulk copies (sm_90), thread 0 copies the tile's chunks
            // with one bulk copy on the slot's barrier (or only arrives,
            // with nothing to copy), one phase per call; none past the
            // run's end, whose phase would never be waited for.
            #[cfg(target_feature = "sm_90")]
            if bulk {
                if c.b >= end {
                    return;
                }
                let (c0, c1) = chunks(c, end);
                if t == 0 {
                    let bar = bars + pipeline::bulk::BARRIER_BYTES * slot as u32;
                    if c0 < c1 {
                        // SAFETY: row < signals.
                        let line = unsafe { a.input.add(c.row * a.in_pitch) };
                        let dst = staging + slot as u32 * stage_bytes + 16 * room(c) as u32;
                        // SAFETY: the slot holds c1 − c0 chunks from `dst`
                        // (rows_stage_bytes, 16-byte aligned), every one in
                        // the row and 16-byte aligned (FLAG_VECTOR); its
                        // last readers passed the barrier before this call,
                        // its writers fenced; the barrier is initialized,
                        // and this is its phase's one arrival.
                        unsafe {
                            pipeline::bulk::bulk_copy(dst, line.add(c0 * S::V).cast(), 16 * (c1 - c0) as u32, bar)
                        };
                    } else {
                        // SAFETY: as above.
                        unsafe { pipeline::bulk::arrive(bar) };
                    }
                }
                return;
            }
            let (c0, c1) = chunks(c, end);
            if c0 < c1 {
                // SAFETY: row < signals.
                let line = unsafe { a.input.add(c.row * a.in_pitch) };
                let dst = staging + slot as u32 * stage_bytes + 16 * room(c) as u32;
                // The slot holds c1 − c0 chunks (rows_stage_bytes) and is
                // not read until this group is waited for and a barrier
                // passed; every chunk lies in the row and is 16-byte aligned
                // (FLAG_VECTOR).
                if TC > 0 {
                    // Counted in 32 bits, the block a constant (checked at
                    // the start), the source a running pointer: fewer
                    // instructions per copy, none waiting on the block size.
                    // Not unrolled (unrolled, the kernel spills). The FMA
                    // kernels keep the loop below (those of u8 spill with a
                    // 32-bit count).
                    const STEP: usize = super::ROWS_THREADS;
                    let (count, mut q) = ((c1 - c0) as u32, t as u32);
                    let mut from = line.wrapping_add((c0 + t) * S::V);
                    while q < count {
                        // SAFETY: a directive to ptxas, in the loop's header.
                        unsafe { asm!(".pragma \"nounroll\";", options(nomem, nostack, preserves_flags)) };
                        // SAFETY: chunk c0 + q of the row, at `from` (above).
                        unsafe { pipeline::copy16(dst + 16 * q, from.cast(), true) };
                        q += STEP as u32;
                        from = from.wrapping_add(STEP * S::V);
                    }
                } else {
                    let mut q = t;
                    while c0 + q < c1 {
                        // SAFETY: chunk c0 + q of the row (above).
                        unsafe { pipeline::copy16(dst + 16 * q as u32, line.add((c0 + q) * S::V).cast(), true) };
                        q += threads;
                    }
                }
            }
            pipeline::commit_group();
        };
        // The tensor form (`TC` > 0: bf16 on sm_80 and newer): whole tiles
        // straight from their staging slot, `TC` steps at most (see
        // `batch_tensor`). The slots start zeroed, so that the reads past a
        // tile's inputs (multiplied by the band's zeros) meet finite values.
        #[cfg(target_feature = "sm_80")]
        let tensor = TC > 0 && a.flags & super::FLAG_TENSOR != 0;
        #[cfg(target_feature = "sm_80")]
        let (e, ldm) = (super::super::batch_tensor::rt_lead(TC, a.left), super::super::batch_tensor::rt_ldmatrix(TC));
        #[cfg(target_feature = "sm_80")]
        let half = a.flags & super::FLAG_HALF_STEP != 0;
        #[cfg(target_feature = "sm_80")]
        let table = staging + stages as u32 * stage_bytes;
        #[cfg(target_feature = "sm_80")]
        if tensor {
            let mut k = t as u32;
            while k < stages as u32 * stage_bytes / 4 {
                // SAFETY: inside the staging ring (rows_shared_bytes).
                unsafe { u32::st_shared(staging + 4 * k, 0) };
                k += threads as u32;
            }
        }
        #[cfg(target_feature = "sm_90")]
        if bulk {
            if t == 0 {
                for k in 0..stages as u32 {
                    // SAFETY: the barriers after the draw word
                    // (rows_shared_bytes, rows_tc_shared_bytes), 8-byte
                    // aligned; used only after the block barrier below.
                    unsafe { pipeline::bulk::init(bars + pipeline::bulk::BARRIER_BYTES * k) };
                }
                pipeline::bulk::fence_init();
            }
            // The tensor form's zeros above before the bulk copies into
            // the slots.
            pipeline::bulk::fence_writes();
        }
        // With bulk copies, thread 0 also starts loading the tile after `c`
        // into the L2 when it issues `c`'s copy: that tile's copy, issued a
        // tile later, then waits on the L2 instead of DRAM (a tile more in
        // flight per block for no shared memory).
        #[cfg(target_feature = "sm_90")]
        let prefetch_after = |c: Cursor, end: usize| {
            if bulk && t == 0 && c.b < end {
                let after = advance(c);
                let (c0, c1) = chunks(after, end);
                if c0 < c1 {
                    // SAFETY: chunks c0 .. c1 of the tile's row, in the
                    // row, 16-byte aligned (`chunks`).
                    unsafe {
                        pipeline::bulk::prefetch_l2(
                            a.input.add(after.row * a.in_pitch + c0 * S::V).cast(),
                            16 * (c1 - c0) as u32,
                        )
                    };
                }
            }
        };
        // With bulk copies, waits for the block's tile `i`.
        #[cfg(target_feature = "sm_90")]
        let wait_bulk = |i: usize| {
            // SAFETY: the barrier of slot i mod stages, initialized, whose
            // phase ⌊i / stages⌋ (tile i's, issued) is its current or last
            // completed one: every earlier phase was waited for.
            unsafe {
                pipeline::bulk::wait_parity(
                    bars + pipeline::bulk::BARRIER_BYTES * (i % stages) as u32,
                    (i / stages % 2) as u32,
                )
            }
        };
        #[cfg(target_feature = "sm_80")]
        if tensor || bulk {
            // SAFETY: block-uniform (the flag is the launch's); the zeros
            // are stored, and the barriers initialized, before any copy.
            unsafe { sync_threads() };
        }
        // The row whose taps are in shared memory.
        let mut current = usize::MAX;
        // The block's tiles before this run (counted with bulk copies).
        let mut started = 0usize;
        // The tensor form draws its next run a tile ahead: when the tile
        // whose copy it starts is its run's last, thread 0 draws then, and
        // the block reads the draw after the next barrier, in time to start
        // the copy of the drawn run's first tile while it computes the
        // run's last (the draw, its barrier and that copy's wait were
        // otherwise paid at every run's end). Draws alternate between two
        // words (a run may be one tile long: thread 0 then draws again
        // after the barrier at which the block reads the previous draw).
        // `drew`: a draw is pending; `finished`: a draw found no tiles left
        // (the block's one failed draw).
        let (mut draws, mut drew, mut finished) = (0u32, false, false);
        // The block's runs: its own, then what it draws.
        loop {
            let (first, mut end) = run;
            // This run's tile `cur` is the block's tile `i`.
            let mut i = if bulk { started } else { 0 };
            // `ahead`: the tile stages − 1 steps ahead of `cur`.
            let mut ahead = first;
            for k in 0..stages - 1 {
                issue((i + k) % stages, ahead, end);
                ahead = advance(ahead);
            }
            let mut cur = first;
            while cur.b < end {
                // The tensor form's tile after `cur` (the first of a drawn
                // run after a run's last), worked out at its barrier.
                let mut after = cur;
                if direct {
                    // The direct kernels read tile b from its slot until
                    // the end of this pass: the next copy (into the
                    // previous tile's slot, stages = 2) starts after the
                    // barrier that ends the previous tile's reads, so tile
                    // b's copy is the only one pending here.
                    const { assert!(super::rows_stages(4) == 2) };
                    if bulk {
                        #[cfg(target_feature = "sm_90")]
                        wait_bulk(i);
                    } else {
                        pipeline::wait_group::<0>();
                    }
                    // SAFETY: reached by every thread (the loop and every
                    // branch below are block-uniform); after it, tile b has
                    // landed for all and the previous tile's reads are done.
                    unsafe { sync_threads() };
                    issue((i + 1) % 2, ahead, end);
                    #[cfg(target_feature = "sm_90")]
                    prefetch_after(ahead, end);
                    ahead = advance(ahead);
                } else if TC == 0 {
                    issue((i + stages - 1) % stages, ahead, end);
                    #[cfg(target_feature = "sm_90")]
                    prefetch_after(ahead, end);
                    ahead = advance(ahead);
                    if bulk {
                        #[cfg(target_feature = "sm_90")]
                        wait_bulk(i);
                    } else {
                        // This thread's copies of tile b have landed once at
                        // most stages − 1 newer groups are pending.
                        match stages {
                            2 => pipeline::wait_group::<1>(),
                            3 => pipeline::wait_group::<2>(),
                            _ => pipeline::wait_group::<3>(),
                        }
                    }
                    // SAFETY: reached by every thread (the loop and every
                    // branch below are block-uniform); after it, every
                    // thread's copies of tile b are visible and the previous
                    // tile's reads are done.
                    unsafe { sync_threads() };
                } else {
                    // The tensor form has one barrier per tile: the next copies
                    // start after it (into the previous tile's slot, whose
                    // reads it ends), so tile b is the oldest of stages − 1
                    // groups.
                    const { assert!(super::super::batch_tensor::RT_STAGES == 2) };
                    #[cfg(not(target_feature = "sm_90"))]
                    pipeline::wait_group::<0>();
                    #[cfg(target_feature = "sm_90")]
                    wait_bulk(i);
                    // SAFETY: as the FMA form's barrier above: reached by
                    // every thread; after it, tile b has landed for all and
                    // the previous tile's reads are done.
                    unsafe { sync_threads() };
                    // With two stages the tile ahead is the next one: no
                    // second cursor to keep in registers.
                    let mut next = advance(cur);
                    if drew && next.b >= end {
                        // This run ends with `cur`: the draw made a tile ago
                        // (visible after the barrier above).
                        // SAFETY: written by thread 0 before the barrier.
                        let lo = unsafe { <u32 as crate::dev::shared::SharedElem>::ld_shared(draw + 4 * (draws & 1)) }
                            as usize
                            * super::ROWS_DRAW_TILES;
                        draws += 1;
                        drew = false;
                        if lo < drawn {
                            // Fewer than 2^32 tiles: a 32-bit division.
                            next = cursor32(fixed + lo);
                            end = fixed + (lo + super::ROWS_DRAW_TILES).min(drawn);
                        } else {
                            finished = true;
                        }
                    }
                    issue((i + 1) % 2, next, end);
                    #[cfg(target_feature = "sm_90")]
                    prefetch_after(next, end);
                    after = next;
                    if drawn > 0
                        && !finished
                        && next.b < end
                        && super::rows_next_tile(next.b, fixed, grid, spread) >= end
                    {
                        // `next` is its run's last tile: draw the run after it.
                        if t == 0 {
                            // SAFETY: as the draw below.
                            let k = unsafe { crate::dev::atomic::add_u32(a.sched, 1) };
                            // SAFETY: the word of this draw's parity (the one
                            // read after the barrier above is the other).
                            unsafe { <u32 as crate::dev::shared::SharedElem>::st_shared(draw + 4 * (draws & 1), k) };
                        }
                        drew = true;
                    }
                }
                let (row, tile_start) = (cur.row, cur.tile * tile);
                let origin = tile_start as isize - left;
                if row != current {
                    // SAFETY: the host passes `signals` masks `mask_stride`
                    // apart (or one, stride 0), `w` taps each.
                    let mp = unsafe { a.masks.add(row * a.mask_stride) };
                    // The taps follow the tile, zero-padded to whole chunks
                    // (the padding is never multiplied).
                    let mut k = t;
                    while k < R * places.div_ceil(R) {
                        let tap = if k >= lead && k < places {
                            // SAFETY: k − lead < w is a tap.
                            unsafe { *mp.add(k - lead) }
                        } else {
                            S::Acc::ZERO
                        };
                        // SAFETY: the region holds the padded places
                        // (rows_fma_elems).
                        unsafe { s.write(taps_at + k, tap) };
                        k += threads;
                    }
                    #[cfg(target_feature = "sm_80")]
                    if tensor {
                        if t < 32 {
                            // Warp 0 wrote them all (w ≤ 32 taps in the tensor
                            // form): its fragments come from there, the global
                            // loads (one per lane, all in flight at once) done.
                            // SAFETY: warp 0 only, converged (t < 32 with the
                            // block's whole first warp).
                            unsafe { crate::dev::warp::sync_warp() };
                            // SAFETY: the signal's w taps at the region (as
                            // above); the table follows the staging ring
                            // (rows_tc_shared_bytes).
                            unsafe { tc::write_fragments::<TC>(table, s.addr_of(span), w, e, t as u32, half) };
                        }
                        // SAFETY: block-uniform (row is); the table is complete
                        // after it.
                        unsafe { sync_threads() };
                    }
                    if direct {
                        // SAFETY: block-uniform (row is); the taps are
                        // complete after it (a tile read from its slot has
                        // no barrier of its own before its sums).
                        unsafe { sync_threads() };
                    }
                    current = row;
                }
                // SAFETY: row < signals.
                let line = unsafe { a.input.add(row * a.in_pitch) };
                // Interior tiles (all of their inputs in the row's whole
                // chunks), tested in 32-bit arithmetic as in `chunks`: those
                // of the tensor form, and of the direct kernels on rows
                // shorter than 2^30, skip the general test (in 64 bits, about
                // 45 instructions per tile).
                let interior = (TC > 0 || direct && n < 1 << 30)
                    && vector
                    && super::rows_interior(
                        cur.tile as u32 * tile as u32,
                        left as u32,
                        span as u32,
                        n as u32,
                        S::V as u32,
                    );
                let (c0, c1) = if interior {
                    (origin as usize / S::V, (origin as usize + span).div_ceil(S::V))
                } else {
                    chunks(cur, end)
                };
                let src = staging + (i % stages) as u32 * stage_bytes;
                let whole =
                    interior || origin >= 0 && c0 == origin as usize / S::V && c1 * S::V >= origin as usize + span;
                // Whether this tile's outputs are stored already (the tensor
                // form, all finite).
                #[allow(unused_mut)]
                let mut done = false;
                // The tensor form also takes the tiles at a row's ends whose
                // outputs lie in the row, when the ghost cells are exact in
                // the storage type (every mode but constant mode with a
                // `cval` that bf16 does not hold): the cells its copies left
                // out are written into the slot around them.
                #[cfg(target_feature = "sm_80")]
                let edge = tensor && !whole && c0 < c1 && tile_start + tile <= n && {
                    let c = a.cval;
                    S::narrow(c).widen() == c
                };
                #[cfg(target_feature = "sm_80")]
                if tensor && (whole || edge) {
                    // The slot starts at the row's chunk ⌊origin / V⌋ (`room`).
                    let first = origin.div_euclid(S::V as isize) * S::V as isize;
                    if !whole {
                        // X's positions (below) that the copies left out:
                        // those before the copied chunks and after them, up to
                        // the last that the `mma` steps read (`tc::tile`).
                        let xs = origin - e as isize;
                        let xe = xs + (tile + 16 * TC - 8) as isize;
                        let (lo, hi) = ((c0 * S::V) as isize, (c1 * S::V) as isize);
                        let below = (lo - xs).max(0) as usize;
                        let count = below + (xe - hi).max(0) as usize;
                        let mut k = t;
                        while k < count {
                            let p = if k < below { xs + k as isize } else { hi + (k - below) as isize };
                            // SAFETY: fetch maps any position into the row.
                            let v = S::narrow(unsafe { fetch(line, 1, n, p, a.mode, a.cval) });
                            // SAFETY: position p lies in the slot (first ≤ xs, and
                            // xe − first is within an interior tile's reads, which
                            // the slot holds), aligned for S.
                            unsafe { crate::dev::shared::st_raw(src + ((p - first) as usize * size) as u32, v) };
                            k += threads;
                        }
                        // The cells before the slot's next bulk copy.
                        #[cfg(target_feature = "sm_90")]
                        pipeline::bulk::fence_writes();
                        // SAFETY: block-uniform (whole, edge are); the cells
                        // are visible to every warp after it.
                        unsafe { sync_threads() };
                    }
                    // X: e elements before the first output's window, an even
                    // element of the slot (a chunk's first with ldmatrix).
                    let x = src + ((origin - first - e as isize) as usize * size) as u32;
                    let groups = (tile / super::super::batch_tensor::RT_GROUP) as u32;
                    let (warp, lane, warps) = (t as u32 / 32, t as u32 % 32, threads as u32 / 32);
                    // SAFETY: the tile's outputs lie in the row (whole: its
                    // inputs do; edge: tile_start + tile ≤ n), tile_start and
                    // the row 16-byte aligned (FLAG_VECTOR); the slot holds X
                    // (copied, and the cells written above) and RT_PAD_CHUNKS
                    // more chunks; block-uniform branch.
                    let bad = unsafe {
                        let out = a.output.add(row * a.out_pitch + tile_start).cast::<u32>();
                        tc::tile::<TC>(x, out, groups, warp, warps, lane, table, ldm, half)
                    };
                    // A warp with an infinite or NaN output computes its groups
                    // again with FMAs from the slot, in tap order (the FMA
                    // kernels' sums: the band's zeros make 0·∞ = NaN).
                    // SAFETY: the warp is converged (block-uniform branch).
                    if unsafe { crate::dev::warp::ballot(crate::dev::warp::FULL_MASK, bad) } != 0 {
                        // SAFETY: as above; orders the tensor form's stores
                        // before these.
                        unsafe { crate::dev::warp::sync_warp() };
                        // SAFETY: row < signals; outputs of the tile (whole).
                        let out = unsafe { a.output.add(row * a.out_pitch + tile_start) };
                        let mut q = warp;
                        while q < groups {
                            for r in 0..4 {
                                let o = (128 * q + 4 * lane + r) as usize;
                                let mut acc = S::Acc::ZERO;
                                for j in 0..w {
                                    // SAFETY: element o + e + j of X lies in the
                                    // slot (the tile's inputs); tap j of the
                                    // signal after the tile.
                                    let (v, m) = unsafe {
                                        (S::ld_shared(x + ((o + e + j) * size) as u32).widen(), s.read(span + j))
                                    };
                                    acc = S::Acc::fma(v, m, acc);
                                }
                                // SAFETY: output o of the tile.
                                unsafe { *out.add(o) = S::narrow(acc) };
                            }
                            q += warps;
                        }
                    }
                    done = true;
                }
                // The direct kernels compute a whole tile from its slot.
                let from_slot = direct && whole;
                // Where the tiles read singly go (`lead` places in, in the
                // direct kernels).
                // SAFETY: inside the tile region (rows_fma_elems: a chunk
                // more in the direct kernels), aligned for S::Acc.
                let sd: Shared<S::Acc> = unsafe { Shared::from_addr(s.addr_of(lead)) };
                if done || from_slot {
                    // Stored by the tensor form, or read from the slot.
                } else if whole {
                    // One element per thread at a time, neighbours on
                    // neighbouring banks in both the slot and the tile (a
                    // chunk per thread would store V elements apart: a
                    // V-way bank conflict on every store).
                    let from = src + ((origin as usize - c0 * S::V + t) * size) as u32;
                    let to = s.addr_of(t);
                    let acc = core::mem::size_of::<S::Acc>() as u32;
                    let (step_from, step_to) = ((threads * size) as u32, threads as u32 * acc);
                    // Widens element t + j·threads of the tile.
                    let widen = |j: u32| {
                        // SAFETY: the callers pass t + j·threads < span: an
                        // element of the tile, copied in the slot (whole) and
                        // landed.
                        unsafe {
                            <S::Acc as crate::dev::shared::SharedElem>::st_shared(
                                to + j * step_to,
                                S::ld_shared(from + j * step_from).widen(),
                            )
                        }
                    };
                    if TC == 0 && size >= 4 {
                        // 32-bit addresses, the stride a constant: a load
                        // and a store per element at immediate offsets (a
                        // constant trip count too with CH). The narrower
                        // types and the tensor form, whose block size is
                        // not a constant (above), keep the loop below.
                        let rounds = (span / threads) as u32;
                        for j in 0..rounds {
                            widen(j);
                        }
                        if t < span - rounds as usize * threads {
                            widen(rounds);
                        }
                    } else {
                        let skip = (origin as usize - c0 * S::V) * size;
                        let mut k = t;
                        while k < span {
                            // SAFETY: element k of the tile is copied in the
                            // slot (whole), landed.
                            let v = unsafe { S::ld_shared(src + (skip + k * size) as u32) };
                            // SAFETY: k < span.
                            unsafe { s.write(k, v.widen()) };
                            k += threads;
                        }
                    }
                } else if c0 < c1 {
                    // An edge tile: the copied chunks from the slot, the rest
                    // (ghost cells, the row's partial last chunk) read singly.
                    // Tile elements [k0, k1) lie in the copied chunks.
                    let (lo, hi) = ((c0 * S::V) as isize, (c1 * S::V) as isize);
                    let (k0, k1) = (
                        (lo - origin).clamp(0, span as isize) as usize,
                        (hi - origin).clamp(0, span as isize) as usize,
                    );
                    // Element k of the tile is element origin + k − lo of the
                    // copied chunks, which start `room` chunks into the slot.
                    let from = (src + 16 * room(cur) as u32) as isize + (origin - lo) * size as isize;
                    let copied = |k: usize| {
                        // SAFETY: k0 ≤ k < k1 (the callers): an element of the
                        // copied chunks, landed; k < span.
                        unsafe { sd.write(k, S::ld_shared((from + (k * size) as isize) as u32).widen()) };
                    };
                    // A ghost cell or the row's partial last chunk.
                    let single = |k: usize| {
                        // SAFETY: fetch maps any position into the row; k < span.
                        unsafe { sd.write(k, fetch(line, 1, n, origin + k as isize, a.mode, a.cval)) };
                    };
                    let mut k = t;
                    if TC == 0 && size == 2 {
                        // One loop, a test per element (the 16-bit FMA
                        // kernels spill with the three below).
                        while k < span {
                            if k0 <= k && k < k1 {
                                copied(k)
                            } else {
                                single(k)
                            }
                            k += threads;
                        }
                    } else {
                        // This thread's elements before, in and after the
                        // copied range: no test per element.
                        while k < k0 {
                            single(k);
                            k += threads;
                        }
                        while k < k1 {
                            copied(k);
                            k += threads;
                        }
                        while k < span {
                            single(k);
                            k += threads;
                        }
                    }
                } else if origin >= 0 && origin as usize + span <= n {
                    let o = origin as usize;
                    let mut k = t;
                    while k < span {
                        // SAFETY: o + k < n.
                        unsafe { sd.write(k, (*line.add(o + k)).widen()) };
                        k += threads;
                    }
                } else {
                    let mut k = t;
                    while k < span {
                        // SAFETY: fetch maps any position into the row.
                        unsafe { sd.write(k, fetch(line, 1, n, origin + k as isize, a.mode, a.cval)) };
                        k += threads;
                    }
                }
                if !done && !from_slot {
                    // SAFETY: as above (done and whole are block-uniform);
                    // the tile is complete after it.
                    unsafe { sync_threads() };
                }
                // Group g's outputs: R · (t + g · threads) onwards, so each
                // group's 16-byte shared reads stay conflict-free. None when
                // the tensor form stored the tile.
                let fma_groups = if done { 0 } else { (GROUPS * scale) as u32 };
                // The loop's tests in 32 bits, once per tile: outputs
                // `base` < `lim` of the tile lie in the row (the tile starts
                // inside it), and the tap places before `lead` and from
                // `last` on in the last chunk (places − R·(CH − 1)) are
                // skipped. In 64 bits, tested again in every group, they
                // took about 11 of the loop's 181 instructions at w = 31,
                // and 3 points of the floor on an H200.
                let lim = (n - tile_start).min(tile) as u32;
                let (lead32, last32) = (lead as u32, (places + R - R * CH.max(1)) as u32);
                // The places' tests as bits (rows_keep_bits), through a move
                // the compiler cannot see through: ptxas then loads the
                // group's predicates from one register (R2P), where from
                // the comparisons it rebuilt each in every group (a uniform
                // comparison and a predicate move: 27 → 22 instructions
                // per group besides the FMAs and shared loads at w = 31).
                // The general kernel (CH = 0) has no such tests.
                let keep = if CH > 0 { opaque(super::rows_keep_bits(lead32, last32) as usize) as u32 } else { 0 };
                for g in 0..fma_groups {
                    let base = R * (t + g as usize * threads);
                    let o = tile_start + base;
                    let b32 = base as u32;
                    if b32 < lim {
                        let mut acc = [S::Acc::ZERO; R];
                        // The tile's elements from `lead` places before its
                        // first input: its slot (16-byte aligned), or the
                        // tile region.
                        // SAFETY: the slot of tile b (from_slot: whole, so
                        // its inputs are copied there, landed).
                        let xs = if from_slot { unsafe { Shared::<S::Acc>::from_addr(src) } } else { s };
                        // SAFETY: base + R ≤ span; base is a multiple of 4.
                        let mut lo = unsafe { S::Acc::read4(xs, base) };
                        if CH > 0 {
                            unroll!(const C in [0, 1, 2, 3, 4, 5, 6, 7] below CH => {
                                // SAFETY: base + (C + 1)·R + R ≤ tile + R·CH,
                                // at most span, or span + R in the direct
                                // kernels (their tile region, and within the
                                // slot's chunk after the tile's inputs).
                                let hi = unsafe { S::Acc::read4(xs, base + (C + 1) * R) };
                                // SAFETY: taps_at + C·R + R ≤ taps_at + R·CH, the taps.
                                let taps = unsafe { S::Acc::read4(s, taps_at + C * R) };
                                let x = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                                unroll!(const JJ in [0, 1, 2, 3] below R => {
                                    // Places before `lead` and past the taps
                                    // are skipped, not multiplied by zero.
                                    if (C > 0 || !direct || keep & (1 << JJ) != 0)
                                        && (C + 1 < CH || keep & (1 << (4 + JJ)) != 0)
                                    {
                                        let tap = taps[JJ];
                                        unroll!(r in [0, 1, 2, 3] below R => {
                                            acc[r] = S::Acc::fma(x[r + JJ], tap, acc[r]);
                                        });
                                    }
                                });
                                lo = hi;
                            });
                        } else {
                            let full = w / R;
                            let rem = w - full * R;
                            for c in 0..full as u32 {
                                let c = c as usize;
                                // SAFETY: (c + 2)·R ≤ R·ceil(w / R) + R; the taps
                                // lie at span + c·R (span is a multiple of 4).
                                let (hi, taps) =
                                    unsafe { (S::Acc::read4(s, base + (c + 1) * R), S::Acc::read4(s, span + c * R)) };
                                let x = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                                for jj in 0..R {
                                    for r in 0..R {
                                        acc[r] = S::Acc::fma(x[r + jj], taps[jj], acc[r]);
                                    }
                                }
                                lo = hi;
                            }
                            if rem > 0 {
                                // SAFETY: as above.
                                let hi = unsafe { S::Acc::read4(s, base + (full + 1) * R) };
                                let x = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                                for jj in 0..R {
                                    if jj < rem {
                                        // SAFETY: full·R + jj < w.
                                        let tap = unsafe { s.read(span + full * R + jj) };
                                        for r in 0..R {
                                            acc[r] = S::Acc::fma(x[r + jj], tap, acc[r]);
                                        }
                                    }
                                }
                            }
                        }
                        // SAFETY: row < signals; outputs o .. o + 4 clipped to n.
                        unsafe {
                            let out = a.output.add(row * a.out_pitch + o);
                            if vector && b32 + R as u32 <= lim {
                                S::store4(out, acc);
                            } else {
                                for (r, &v) in acc.iter().enumerate() {
                                    if b32 + (r as u32) < lim {
                                        *out.add(r) = S::narrow(v);
                                    }
                                }
                            }
                        }
                    }
                }
                cur = if TC > 0 { after } else { advance(cur) };
                i += 1;
            }
            started = i;
            pipeline::wait_group::<0>();
            if drawn == 0 || finished {
                break;
            }
            // The next run, when none was drawn ahead (the FMA form; the
            // tensor form's walk of no tiles): thread 0 draws it and passes
            // it on through shared memory (a word after the fragment table;
            // the next draw into it comes after the barriers of at least one
            // more tile).
            let at = if TC > 0 { draw + 4 * (draws & 1) } else { draw };
            draws += 1;
            if t == 0 {
                // SAFETY: drawn > 0: the host passes the counter's two words,
                // which every block accesses atomically only.
                let k = unsafe { crate::dev::atomic::add_u32(a.sched, 1) };
                // SAFETY: inside the tensor form's shared memory
                // (rows_tc_shared_bytes).
                unsafe { <u32 as crate::dev::shared::SharedElem>::st_shared(at, k) };
            }
            // SAFETY: block-uniform (drawn is the launch's).
            unsafe { sync_threads() };
            // SAFETY: written before the barrier.
            let lo =
                unsafe { <u32 as crate::dev::shared::SharedElem>::ld_shared(at) } as usize * super::ROWS_DRAW_TILES;
            if lo >= drawn {
                break;
            }
            // Fewer than 2^32 tiles: a 32-bit division.
            run = (cursor32(fixed + lo), fixed + (lo + super::ROWS_DRAW_TILES).min(drawn));
        }
        if drawn > 0 && t == 0 {
            // Thread 0 of every block drew until the tiles ran out (one
            // such draw per block): the last block here puts the counter
            // back to zero for the next launch, which the host orders after
            // this one.
            crate::dev::atomic::fence_gpu();
            // SAFETY: the counter's second word (as above).
            let done = unsafe { crate::dev::atomic::add_u32(a.sched.add(1), 1) };
            if done + 1 == grid_dim_x() {
                crate::dev::atomic::fence_gpu();
                // SAFETY: as above; no block draws again.
                unsafe {
                    crate::dev::atomic::exch_u32(a.sched, 0);
                    crate::dev::atomic::exch_u32(a.sched.add(1), 0);
                }
            }
        }
    }

    /// The columns kernels: see the module docs. Each output's sum runs
    /// in tap order, as in the rows kernels.
    ///
    /// # Safety
    /// The arguments as the module docs give (signals are columns,
    /// `n` rows); blocks of [`COLS_X`]` × `[`COLS_Y`] threads; dynamic
    /// shared memory of [`super::cols_shared_elems`] elements of `S::Acc`.
    #[inline(always)]
    pub(super) unsafe fn cols<S: Storage>(a: Args<S>) {
        const R: usize = COLS_OUTPUTS;
        let (w, n, count) = (a.w, a.n, a.signals);
        let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
        // SAFETY: the host sizes the dynamic window (cols_shared_elems).
        let s: Shared<S::Acc> = unsafe { dynamic() };
        let rows = COLS_ROWS + w;
        let taps_at = COLS_X * rows;
        let tiles_x = count.div_ceil(COLS_X);
        let total = tiles_x * n.div_ceil(COLS_ROWS);
        let grid = grid_dim_x() as usize;
        // Tiles as (column tile, row tile), advanced by additions (see
        // the rows kernels).
        let (skip_y, skip_x) = (grid / tiles_x, grid % tiles_x);
        let mut b = block_idx_x() as usize;
        let (mut bx, mut by) = (b % tiles_x, b / tiles_x);
        while b < total {
            let (c0, r0) = (bx * COLS_X, by * COLS_ROWS);
            let c = c0 + tx;
            let inside = c < count;
            // SAFETY: only read for c < count (column c of every row).
            let column = unsafe { a.input.add(if inside { c } else { 0 }) };
            let mut j = ty;
            while j < w {
                // SAFETY: column c's taps (stride 0: the one mask).
                let tap = if inside { unsafe { *a.masks.add(c * a.mask_stride + j) } } else { S::Acc::ZERO };
                // SAFETY: taps_at + w·COLS_X ≤ the window.
                unsafe { s.write(taps_at + j * COLS_X + tx, tap) };
                j += COLS_Y;
            }
            let origin = r0 as isize - a.left as isize;
            let mut k = ty;
            while k < rows {
                let v = if inside {
                    // SAFETY: fetch maps any row into the column.
                    unsafe { fetch(column, a.in_pitch, n, origin + k as isize, a.mode, a.cval) }
                } else {
                    S::Acc::ZERO
                };
                // SAFETY: k < rows.
                unsafe { s.write(k * COLS_X + tx, v) };
                k += COLS_Y;
            }
            // SAFETY: reached by every thread (block-uniform loop).
            unsafe { sync_threads() };
            let first = ty * R;
            if inside && r0 + first < n {
                let mut acc = [S::Acc::ZERO; R];
                // SAFETY: every index below lies in the tile: rows first
                // + j + R ≤ COLS_ROWS + w.
                unsafe {
                    let mut win = [S::Acc::ZERO; R];
                    for (r, v) in win.iter_mut().enumerate() {
                        *v = s.read((first + r) * COLS_X + tx);
                    }
                    for j in 0..w as u32 {
                        let j = j as usize;
                        let tap = s.read(taps_at + j * COLS_X + tx);
                        for r in 0..R {
                            acc[r] = S::Acc::fma(win[r], tap, acc[r]);
                        }
                        win = [win[1], win[2], win[3], s.read((first + j + R) * COLS_X + tx)];
                    }
                    for (r, &v) in acc.iter().enumerate() {
                        let row = r0 + first + r;
                        if row < n {
                            *a.output.add(row * a.out_pitch + c) = S::narrow(v);
                        }
                    }
                }
            }
            // SAFETY: as above.
            unsafe { sync_threads() };
            b += grid;
            (bx, by) = (bx + skip_x, by + skip_y);
            if bx >= tiles_x {
                bx -= tiles_x;
                by += 1;
            }
        }
    }

    /// The arguments of the 2D channels kernels (see the module docs).
    #[derive(Clone, Copy)]
    pub(super) struct Args2<S: Storage> {
        pub input: *const S,
        pub output: *mut S,
        pub width: usize,
        pub height: usize,
        pub in_pitch: usize,
        pub out_pitch: usize,
        pub masks: *const S::Acc,
        pub mask_stride: usize,
        pub mw: usize,
        pub mh: usize,
        pub left_x: usize,
        pub left_y: usize,
        pub mode: u32,
        pub cval: S::Acc,
    }

    /// The 2D kernels over `C` interleaved channels: see the module docs.
    /// Each output's sum runs over the mask's columns, and down each
    /// column.
    ///
    /// # Safety
    /// The arguments as the module docs give; blocks of [`CHAN_X`]` × `
    /// [`CHAN_Y`] threads; dynamic shared memory of
    /// [`super::chan_shared_elems`] elements of `S::Acc`.
    #[inline(always)]
    pub(super) unsafe fn chan<S: Storage, const C: usize>(a: Args2<S>) {
        const R: usize = CHAN_OUTPUTS;
        let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
        let threads = (CHAN_X * CHAN_Y) as u32;
        let t = (ty * CHAN_X + tx) as u32;
        let (mw, mh, width, height) = (a.mw, a.mh, a.width, a.height);
        let tw = CHAN_X + mw - 1;
        let th = CHAN_ROWS + mh;
        let plane = tw * th;
        // SAFETY: the host sizes the dynamic window (chan_shared_elems).
        let s: Shared<S::Acc> = unsafe { dynamic() };
        let taps_at = C * plane;
        let taps_n = mw * mh;
        // Every channel's taps, once per block (stride 0: one mask for
        // all channels).
        let mut k = t as usize;
        while k < C * taps_n {
            let c = k / taps_n;
            // SAFETY: the host passes C masks mask_stride apart (or one).
            unsafe { s.write(taps_at + k, *a.masks.add(c * a.mask_stride + (k - c * taps_n))) };
            k += threads as usize;
        }
        let tiles_x = width.div_ceil(CHAN_X);
        let total = tiles_x * height.div_ceil(CHAN_ROWS);
        let grid = grid_dim_x() as usize;
        let (skip_y, skip_x) = (grid / tiles_x, grid % tiles_x);
        let mut b = block_idx_x() as usize;
        let (mut bx, mut by) = (b % tiles_x, b / tiles_x);
        let row_elems = (tw * C) as u32;
        let count = th as u32 * row_elems;
        while b < total {
            let (x0, y0) = (bx * CHAN_X, by * CHAN_ROWS);
            let ox = x0 as isize - a.left_x as isize;
            let oy = y0 as isize - a.left_y as isize;
            let inside = ox >= 0 && oy >= 0 && ox as usize + tw <= width && oy as usize + th <= height;
            // The tile's pixels, channel by channel into planes; the
            // threads walk the interleaved elements in order, LOADS of
            // them at a time: all their loads issue before the first
            // store, so a tile waits out a few load latencies, not one per
            // element.
            const LOADS: usize = 8;
            let mut i = t;
            // Element i of the tile: its plane position and its row and
            // interleaved offset in the tile.
            let place = |i: u32| {
                let r = i / row_elems;
                let e = i - r * row_elems;
                let px = e / C as u32;
                let c = (e - px * C as u32) as usize;
                (c * plane + r as usize * tw + px as usize, r as usize, e as usize, px as usize, c)
            };
            if inside {
                // SAFETY: the tile lies inside the image (`inside`).
                let corner = unsafe { a.input.add(oy as usize * a.in_pitch + ox as usize * C) };
                while i < count {
                    let mut v = [S::Acc::ZERO; LOADS];
                    let mut at = [0usize; LOADS];
                    unroll!(const J in [0, 1, 2, 3, 4, 5, 6, 7] below LOADS => {
                        let ii = i + J as u32 * threads;
                        if ii < count {
                            let (p, r, e, _, _) = place(ii);
                            at[J] = p;
                            // SAFETY: row r, element e of the tile, inside the image.
                            v[J] = unsafe { (*corner.add(r * a.in_pitch + e)).widen_alu() };
                        }
                    });
                    unroll!(const J in [0, 1, 2, 3, 4, 5, 6, 7] below LOADS => {
                        if i + J as u32 * threads < count {
                            // SAFETY: at[J] lies in plane c (c < C, r < th, px < tw).
                            unsafe { s.write(at[J], v[J]) };
                        }
                    });
                    i += LOADS as u32 * threads;
                }
            } else {
                while i < count {
                    let (p, r, _, px, c) = place(i);
                    let yy = map_index(oy + r as isize, height as isize, a.mode);
                    let xx = map_index(ox + px as isize, width as isize, a.mode);
                    let v = match (yy, xx) {
                        // SAFETY: map_index returns indices inside the image.
                        (Some(y), Some(x)) => unsafe { (*a.input.add(y * a.in_pitch + x * C + c)).widen_alu() },
                        _ => a.cval,
                    };
                    // SAFETY: p lies in plane c.
                    unsafe { s.write(p, v) };
                    i += threads;
                }
            }
            // SAFETY: reached by every thread (block-uniform loop).
            unsafe { sync_threads() };
            let x = x0 + tx;
            if x < width {
                for c in 0..C {
                    let mut acc = [S::Acc::ZERO; R];
                    let taps = taps_at + c * taps_n;
                    for dx in 0..mw as u32 {
                        let dx = dx as usize;
                        let base = c * plane + ty * R * tw + tx + dx;
                        // SAFETY: every index lies in plane c: rows
                        // ty·R + dy + R ≤ CHAN_ROWS + mh = th.
                        unsafe {
                            let mut win =
                                [s.read(base), s.read(base + tw), s.read(base + 2 * tw), s.read(base + 3 * tw)];
                            for dy in 0..mh as u32 {
                                let dy = dy as usize;
                                let tap = s.read(taps + dy * mw + dx);
                                for r in 0..R {
                                    acc[r] = S::Acc::fma(win[r], tap, acc[r]);
                                }
                                win = [win[1], win[2], win[3], s.read(base + (dy + R) * tw)];
                            }
                        }
                    }
                    for (r, &v) in acc.iter().enumerate() {
                        let y = y0 + ty * R + r;
                        if y < height {
                            // SAFETY: (y, x) lies inside the image.
                            unsafe { *a.output.add(y * a.out_pitch + x * C + c) = S::narrow_alu(v) };
                        }
                    }
                }
            }
            // SAFETY: as above; the next tile overwrites the planes.
            unsafe { sync_threads() };
            b += grid;
            (bx, by) = (bx + skip_x, by + skip_y);
            if bx >= tiles_x {
                bx -= tiles_x;
                by += 1;
            }
        }
    }

    macro_rules! chan_kernel {
        ($name:ident, $s:ty, $acc:ty, $c:literal) => {
            /// See the module documentation (`conv::batch`).
            ///
            /// # Safety
            /// As the module documentation gives.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const $s,
                output: *mut $s,
                width: usize,
                height: usize,
                in_pitch: usize,
                out_pitch: usize,
                masks: *const $acc,
                mask_stride: usize,
                mw: u32,
                mh: u32,
                left_x: u32,
                left_y: u32,
                mode: u32,
                cval: $acc,
            ) {
                crate::dev::sync::grid_dependency_wait();
                let a = Args2::<$s> {
                    input,
                    output,
                    width,
                    height,
                    in_pitch,
                    out_pitch,
                    masks,
                    mask_stride,
                    mw: mw as usize,
                    mh: mh as usize,
                    left_x: left_x as usize,
                    left_y: left_y as usize,
                    mode,
                    cval,
                };
                // SAFETY: same contract.
                unsafe { chan::<$s, $c>(a) }
            }
        };
    }

    macro_rules! chan_family {
        ($s:ty, $acc:ty, $one:ident, $three:ident, $four:ident) => {
            chan_kernel!($one, $s, $acc, 1);
            chan_kernel!($three, $s, $acc, 3);
            chan_kernel!($four, $s, $acc, 4);
        };
    }

    chan_family!(f32, f32, conv2d_chan1_f32, conv2d_chan3_f32, conv2d_chan4_f32);
    chan_family!(f64, f64, conv2d_chan1_f64, conv2d_chan3_f64, conv2d_chan4_f64);
    chan_family!(F16, f32, conv2d_chan1_f16, conv2d_chan3_f16, conv2d_chan4_f16);
    chan_family!(u8, f32, conv2d_chan1_u8, conv2d_chan3_u8, conv2d_chan4_u8);
    chan_family!(u16, f32, conv2d_chan1_u16, conv2d_chan3_u16, conv2d_chan4_u16);

    macro_rules! batch_kernel {
        ($name:ident, $s:ty, $acc:ty, $algo:ident $(::<$($g:literal),+>)?) => {
            /// See the module documentation (`conv::batch`).
            ///
            /// # Safety
            /// As the module documentation gives.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                input: *const $s,
                output: *mut $s,
                signals: usize,
                n: usize,
                in_pitch: usize,
                out_pitch: usize,
                masks: *const $acc,
                mask_stride: usize,
                w: u32,
                left: u32,
                mode: u32,
                cval: $acc,
                flags: u32,
                sched: *mut u32,
                drawn: usize,
            ) {
                crate::dev::sync::grid_dependency_wait();
                let a = Args::<$s> {
                    input,
                    output,
                    signals,
                    n,
                    in_pitch,
                    out_pitch,
                    masks,
                    mask_stride,
                    w: w as usize,
                    left: left as usize,
                    mode,
                    cval,
                    flags,
                    sched,
                    drawn,
                };
                // SAFETY: same contract.
                unsafe { $algo::<$s $($(, $g)+)?>(a) }
            }
        };
    }

    macro_rules! batch_family {
        ($s:ty, $acc:ty, $cols:ident, $any:ident, [$($fixed:ident = $ch:literal),*]) => {
            batch_kernel!($cols, $s, $acc, cols);
            batch_kernel!($any, $s, $acc, rows::<0, 0>);
            $(batch_kernel!($fixed, $s, $acc, rows::<$ch, 0>);)*
        };
    }

    batch_family!(
        f32,
        f32,
        conv1d_cols_f32,
        conv1d_rows_f32,
        [
            conv1d_rows1_f32 = 1,
            conv1d_rows2_f32 = 2,
            conv1d_rows3_f32 = 3,
            conv1d_rows4_f32 = 4,
            conv1d_rows5_f32 = 5,
            conv1d_rows6_f32 = 6,
            conv1d_rows7_f32 = 7,
            conv1d_rows8_f32 = 8
        ]
    );
    batch_family!(
        f64,
        f64,
        conv1d_cols_f64,
        conv1d_rows_f64,
        [
            conv1d_rows1_f64 = 1,
            conv1d_rows2_f64 = 2,
            conv1d_rows3_f64 = 3,
            conv1d_rows4_f64 = 4,
            conv1d_rows5_f64 = 5,
            conv1d_rows6_f64 = 6,
            conv1d_rows7_f64 = 7,
            conv1d_rows8_f64 = 8
        ]
    );
    batch_family!(
        F16,
        f32,
        conv1d_cols_f16,
        conv1d_rows_f16,
        [
            conv1d_rows1_f16 = 1,
            conv1d_rows2_f16 = 2,
            conv1d_rows3_f16 = 3,
            conv1d_rows4_f16 = 4,
            conv1d_rows5_f16 = 5,
            conv1d_rows6_f16 = 6,
            conv1d_rows7_f16 = 7,
            conv1d_rows8_f16 = 8
        ]
    );
    #[cfg(target_feature = "sm_80")]
    mod bf16_kernels {
        use super::*;
        chan_family!(Bf16, f32, conv2d_chan1_bf16, conv2d_chan3_bf16, conv2d_chan4_bf16);
        batch_family!(
            Bf16,
            f32,
            conv1d_cols_bf16,
            conv1d_rows_bf16,
            [
                conv1d_rows1_bf16 = 1,
                conv1d_rows2_bf16 = 2,
                conv1d_rows3_bf16 = 3,
                conv1d_rows4_bf16 = 4,
                conv1d_rows5_bf16 = 5,
                conv1d_rows6_bf16 = 6,
                conv1d_rows7_bf16 = 7,
                conv1d_rows8_bf16 = 8
            ]
        );
        // The tensor form, by steps (`rt_max_steps`): 1 for masks of up to
        // 8 taps, 2 up to 24, 3 up to 32; its FMA form (row ends, non-finite
        // outputs) takes any width.
        batch_kernel!(conv1d_rows_tc1_bf16, Bf16, f32, rows::<2, 1>);
        batch_kernel!(conv1d_rows_tc2_bf16, Bf16, f32, rows::<0, 2>);
        batch_kernel!(conv1d_rows_tc3_bf16, Bf16, f32, rows::<0, 3>);
    }
    batch_family!(
        u8,
        f32,
        conv1d_cols_u8,
        conv1d_rows_u8,
        [
            conv1d_rows1_u8 = 1,
            conv1d_rows2_u8 = 2,
            conv1d_rows3_u8 = 3,
            conv1d_rows4_u8 = 4,
            conv1d_rows5_u8 = 5,
            conv1d_rows6_u8 = 6,
            conv1d_rows7_u8 = 7,
            conv1d_rows8_u8 = 8
        ]
    );
    batch_family!(
        u16,
        f32,
        conv1d_cols_u16,
        conv1d_rows_u16,
        [
            conv1d_rows1_u16 = 1,
            conv1d_rows2_u16 = 2,
            conv1d_rows3_u16 = 3,
            conv1d_rows4_u16 = 4,
            conv1d_rows5_u16 = 5,
            conv1d_rows6_u16 = 6,
            conv1d_rows7_u16 = 7,
            conv1d_rows8_u16 = 8
        ]
    );
}
