//! Matrix transpose (lesson 004, "shared memory": banks and bank
//! conflicts): naive, through a `32 × 32` shared tile, and through a padded
//! `32 × 33` tile.
//!
//! [`Gpu::transpose`] writes the `cols × rows` transpose of a row-major
//! `rows × cols` `f32` matrix. Every variant reads the input row-wise (a
//! warp reads 128 contiguous bytes); they differ in how the output is
//! written:
//!
//! * [`TransposeVariant::Naive`]: straight to the output's columns, a warp's
//!   32 stores `4 · rows` bytes apart (32 sectors per request).
//! * [`TransposeVariant::Tiled`]: through a `32 × 32` shared tile, read
//!   column-wise so the output is written row-wise (coalesced); the column
//!   read hits one shared-memory bank 32 times
//!   ([`column_read_conflict`]`(32) == 32`).
//! * [`TransposeVariant::Padded`]: the same with rows 33 words apart: a
//!   column spreads over all 32 banks (`column_read_conflict(33) == 1`).
//!
//! The block is `32 × rows` threads ([`TransposePolicy`]); each thread moves
//! `32 / rows` elements of a tile. Any width and height work (bounds
//! checks cut the last tiles), including `1 × n` and `n × 1`.
//!
//! ```
//! use coalesce_host::transpose::{column_read_conflict, launch_config, TransposePolicy};
//!
//! // Lane t reads word t·P + c of the tile: bank (t·P + c) mod 32.
//! assert_eq!(column_read_conflict(32), 32); // every lane in one bank
//! assert_eq!(column_read_conflict(33), 1); // one lane per bank
//! // 1000 × 1007: 32 × 32 tiles, blocks of 32 × 8 threads.
//! let cfg = launch_config(1000, 1007, TransposePolicy::default(), 65_535);
//! assert_eq!((cfg.grid.x, cfg.grid.y, cfg.block.x, cfg.block.y), (32, 32, 32, 8));
//! ```

use std::fmt;
use std::str::FromStr;

use coalesce_kernels::transpose::{BLOCK_ROWS, DEFAULT_BLOCK_ROWS, PITCH_PADDED, PITCH_TILED, TILE};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::LaunchConfig;
use crate::memory::{DeviceView, DeviceViewMut};

/// Shared-memory banks (4-byte words) on every architecture this crate
/// targets (sm_70 and newer).
pub const BANKS: usize = 32;

/// Which transpose kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransposeVariant {
    /// Coalesced reads, strided writes; no shared memory.
    Naive,
    /// Through a `32 × 32` shared tile: coalesced both ways, 32-way bank
    /// conflicts on the tile's column reads.
    Tiled,
    /// Through a `32 × 33` shared tile: coalesced both ways, no bank
    /// conflicts.
    Padded,
}

impl TransposeVariant {
    /// All three, in the lesson's order.
    pub const ALL: [TransposeVariant; 3] = [TransposeVariant::Naive, TransposeVariant::Tiled, TransposeVariant::Padded];

    /// Short name (`naive`, `tiled`, `padded`).
    pub fn name(self) -> &'static str {
        match self {
            TransposeVariant::Naive => "naive",
            TransposeVariant::Tiled => "tiled",
            TransposeVariant::Padded => "padded",
        }
    }

    /// The shared tile's row pitch in words (`None` for the naive kernel).
    pub fn tile_pitch(self) -> Option<usize> {
        match self {
            TransposeVariant::Naive => None,
            TransposeVariant::Tiled => Some(PITCH_TILED),
            TransposeVariant::Padded => Some(PITCH_PADDED),
        }
    }

    /// Static shared memory per block, bytes (what `ptxas` reports).
    pub fn shared_bytes(self) -> usize {
        self.tile_pitch().map_or(0, |p| TILE * p * 4)
    }

    /// The kernel for block height `block_rows` (one of
    /// [`TransposePolicy::BLOCK_ROWS`]); any other height is
    /// [`Error::InvalidArgument`].
    pub fn kernel(self, block_rows: u32) -> Result<&'static str> {
        use TransposeVariant::*;
        Ok(match (self, block_rows) {
            (Naive, 4) => "transpose_naive_r4",
            (Naive, 8) => "transpose_naive_r8",
            (Naive, 16) => "transpose_naive_r16",
            (Naive, 32) => "transpose_naive_r32",
            (Tiled, 4) => "transpose_tiled_r4",
            (Tiled, 8) => "transpose_tiled_r8",
            (Tiled, 16) => "transpose_tiled_r16",
            (Tiled, 32) => "transpose_tiled_r32",
            (Padded, 4) => "transpose_padded_r4",
            (Padded, 8) => "transpose_padded_r8",
            (Padded, 16) => "transpose_padded_r16",
            (Padded, 32) => "transpose_padded_r32",
            _ => return Err(bad_rows(block_rows)),
        })
    }
}

fn bad_rows(block_rows: u32) -> Error {
    Error::InvalidArgument {
        op: "transpose",
        message: format!(
            "a block of 32 x {block_rows} threads has no kernel; block rows must be one of {BLOCK_ROWS:?}"
        ),
    }
}

impl fmt::Display for TransposeVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TransposeVariant {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        TransposeVariant::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("`{s}` is not a transpose variant (naive, tiled, padded)"))
    }
}

/// The launch shape: blocks of `32 × block_rows` threads, each thread
/// moving `32 / block_rows` elements of a `32 × 32` tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransposePolicy {
    /// Threads along y (one of [`TransposePolicy::BLOCK_ROWS`]).
    pub block_rows: u32,
    /// Cap on `gridDim.y` below the device's own limit (`None`: the
    /// device's 65535). Blocks loop over the tile rows beyond it, so any
    /// cap ≥ 1 gives the same result; a small one exercises that loop on
    /// small matrices.
    pub max_grid_y: Option<u32>,
}

impl TransposePolicy {
    /// The block heights that have kernels.
    pub const BLOCK_ROWS: [u32; 4] = BLOCK_ROWS;

    /// The classic `32 × 8` block, four elements per thread: all four
    /// loads of a thread are in flight before its first shared store, and
    /// a 256-thread block needs only 4 KiB of shared memory (registers,
    /// not shared memory, bound the resident blocks). The suite measures
    /// every height; see `docs/shared-and-constant-memory.md`.
    pub const CLASSIC: TransposePolicy = TransposePolicy::with_block_rows(DEFAULT_BLOCK_ROWS);

    /// Blocks of `32 × block_rows`, no grid cap of its own.
    pub const fn with_block_rows(block_rows: u32) -> TransposePolicy {
        TransposePolicy { block_rows, max_grid_y: None }
    }

    /// Elements per thread (`32 / block_rows`).
    pub fn items(self) -> u32 {
        TILE as u32 / self.block_rows.max(1)
    }
}

impl Default for TransposePolicy {
    fn default() -> Self {
        TransposePolicy::CLASSIC
    }
}

/// Bank of 4-byte shared-memory word `word`.
pub const fn bank(word: usize) -> usize {
    word % BANKS
}

/// The degree of the bank conflict when the 32 lanes of a warp read one
/// column of a tile whose rows are `pitch` words apart (lane `t` reads
/// word `t · pitch + c`; the column `c` does not matter): the most lanes
/// that hit one bank, i.e. how many serialized requests the read becomes.
/// `32` for the `32 × 32` tile, `1` for the `32 × 33` one.
pub fn column_read_conflict(pitch: usize) -> usize {
    let mut per_bank = [0usize; BANKS];
    for lane in 0..BANKS {
        per_bank[bank(lane * pitch)] += 1;
    }
    per_bank.into_iter().max().unwrap_or(0)
}

/// The launch for a `rows × cols` input on a device whose grid holds at
/// most `device_max_grid_y` blocks along y: one block per `32 × 32` tile,
/// `(ceil(cols / 32), min(ceil(rows / 32), cap))` blocks of `32 ×
/// block_rows` threads, where `cap` is the smaller of the device's limit
/// and the policy's `max_grid_y` (the kernels loop over the tile rows
/// beyond it). Zero extents give a zero grid, which validation refuses.
pub fn launch_config(rows: usize, cols: usize, policy: TransposePolicy, device_max_grid_y: u32) -> LaunchConfig {
    let tiles = |n: usize| n.div_ceil(TILE).min(u32::MAX as usize) as u32;
    let cap = policy.max_grid_y.map_or(device_max_grid_y, |m| m.min(device_max_grid_y));
    LaunchConfig::new((tiles(cols), tiles(rows).min(cap)), (TILE as u32, policy.block_rows))
}

/// `rows · cols`, or the overflow error.
fn elements(rows: usize, cols: usize) -> Result<usize> {
    rows.checked_mul(cols).filter(|&n| n <= isize::MAX as usize / 4).ok_or(Error::ExtentOverflow {
        op: "transpose",
        width: cols,
        height: rows,
        elem_size: 4,
    })
}

impl Gpu {
    /// Writes the `cols × rows` transpose of the row-major `rows × cols`
    /// matrix `src` into `dst` with `variant` and the classic `32 × 8`
    /// block. Queued on the stream; returns the launch used.
    pub fn transpose(
        &self,
        src: &DeviceView<'_, f32>,
        dst: &mut DeviceViewMut<'_, f32>,
        rows: usize,
        cols: usize,
        variant: TransposeVariant,
    ) -> Result<LaunchConfig> {
        self.transpose_with(src, dst, rows, cols, variant, TransposePolicy::default())
    }

    /// [`Gpu::transpose`] with an explicit block height. Both views must
    /// hold exactly `rows · cols` elements; an empty extent is
    /// [`Error::ZeroExtent`], a block height without a kernel
    /// [`Error::InvalidArgument`].
    pub fn transpose_with(
        &self,
        src: &DeviceView<'_, f32>,
        dst: &mut DeviceViewMut<'_, f32>,
        rows: usize,
        cols: usize,
        variant: TransposeVariant,
        policy: TransposePolicy,
    ) -> Result<LaunchConfig> {
        let kernel = variant.kernel(policy.block_rows)?;
        if rows == 0 || cols == 0 {
            return Err(Error::ZeroExtent { op: kernel, width: cols, height: rows });
        }
        let n = elements(rows, cols)?;
        for len in [src.len(), dst.len()] {
            if len != n {
                return Err(Error::LengthMismatch { op: kernel, expected: n, got: len });
            }
        }
        src.check_gpu(self, kernel)?;
        dst.check_gpu(self, kernel)?;
        let cfg = launch_config(rows, cols, policy, self.info().limits.max_grid_dim[1]);
        let (ps, pd) = (src.device_ptr(), dst.device_ptr());
        // SAFETY: two live views of this context holding exactly rows·cols
        // f32 (checked); `dst` is borrowed mutably, so they do not overlap;
        // the kernel's block is 32 × block_rows, the shape it was compiled
        // for, and it touches only elements inside both matrices.
        unsafe { self.launch(kernel, &cfg, &[&ps, &pd, &rows, &cols])? };
        Ok(cfg)
    }
}

/// The CPU reference: `out[c · rows + r] = src[r · cols + c]` with rayon
/// (one output row per task).
pub fn reference_transpose<T: Copy + Send + Sync>(src: &[T], rows: usize, cols: usize, out: &mut [T]) -> Result<()> {
    use rayon::prelude::*;
    let n = rows.checked_mul(cols).ok_or(Error::ExtentOverflow {
        op: "reference_transpose",
        width: cols,
        height: rows,
        elem_size: std::mem::size_of::<T>(),
    })?;
    for len in [src.len(), out.len()] {
        if len != n {
            return Err(Error::LengthMismatch { op: "reference_transpose", expected: n, got: len });
        }
    }
    if n == 0 {
        return Ok(());
    }
    out.par_chunks_mut(rows).enumerate().for_each(|(c, out_row)| {
        for (r, o) in out_row.iter_mut().enumerate() {
            *o = src[r * cols + c];
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_padding_removes_the_column_conflict() {
        assert_eq!(column_read_conflict(PITCH_TILED), 32);
        assert_eq!(column_read_conflict(PITCH_PADDED), 1);
        // Any even pitch conflicts, any odd one does not.
        assert_eq!(column_read_conflict(34), 2);
        assert_eq!(column_read_conflict(31), 1);
        assert_eq!(column_read_conflict(64), 32);
        // Lane t of the 32 × 33 tile's column 5 is in bank (t + 5) mod 32.
        for t in 0..32 {
            assert_eq!(bank(t * 33 + 5), (t + 5) % 32);
            assert_eq!(bank(t * 32 + 5), 5);
        }
    }

    #[test]
    fn kernels_and_shared_sizes() {
        for v in TransposeVariant::ALL {
            for r in TransposePolicy::BLOCK_ROWS {
                let k = v.kernel(r).unwrap();
                assert!(k.starts_with(&format!("transpose_{}_r", v.name())) && k.ends_with(&format!("_r{r}")), "{k}");
            }
            assert!(matches!(v.kernel(6), Err(Error::InvalidArgument { .. })));
            assert!(matches!(v.kernel(64), Err(Error::InvalidArgument { .. })));
        }
        assert_eq!(TransposeVariant::Naive.shared_bytes(), 0);
        assert_eq!(TransposeVariant::Tiled.shared_bytes(), 4096);
        assert_eq!(TransposeVariant::Padded.shared_bytes(), 4224);
        assert_eq!("Padded".parse::<TransposeVariant>(), Ok(TransposeVariant::Padded));
        assert!("fast".parse::<TransposeVariant>().is_err());
        assert_eq!(TransposePolicy::default().items(), 4);
    }

    #[test]
    fn grids_cover_every_tile() {
        let cfg = launch_config(16_384, 16_384, TransposePolicy::CLASSIC, 65_535);
        assert_eq!((cfg.grid.x, cfg.grid.y, cfg.block.x, cfg.block.y), (512, 512, 32, 8));
        let cfg = launch_config(1, 1000, TransposePolicy::with_block_rows(32), 65_535);
        assert_eq!((cfg.grid.x, cfg.grid.y, cfg.block.y), (32, 1, 32));
        let cfg = launch_config(1000, 1, TransposePolicy::with_block_rows(4), 65_535);
        assert_eq!((cfg.grid.x, cfg.grid.y), (1, 32));
        // Tall matrices: grid.y capped, the kernels loop over tile rows.
        let cfg = launch_config(3_000_000, 2, TransposePolicy::CLASSIC, 65_535);
        assert_eq!((cfg.grid.x, cfg.grid.y), (1, 65_535));
        // A policy cap below the device's.
        let capped = TransposePolicy { max_grid_y: Some(2), ..TransposePolicy::CLASSIC };
        assert_eq!(launch_config(1000, 1007, capped, 65_535).grid.y, 2);
        let above = TransposePolicy { max_grid_y: Some(100_000), ..TransposePolicy::CLASSIC };
        assert_eq!(launch_config(3_000_000, 2, above, 65_535).grid.y, 65_535);
        assert_eq!(launch_config(0, 5, TransposePolicy::CLASSIC, 65_535).grid.y, 0);
    }

    #[test]
    fn reference_on_a_small_rectangle() {
        // 2 × 3: [[1, 2, 3], [4, 5, 6]] -> 3 × 2: [[1, 4], [2, 5], [3, 6]].
        let mut out = [0; 6];
        reference_transpose(&[1, 2, 3, 4, 5, 6], 2, 3, &mut out).unwrap();
        assert_eq!(out, [1, 4, 2, 5, 3, 6]);
        let mut one = [0; 4];
        reference_transpose(&[7, 8, 9, 10], 1, 4, &mut one).unwrap();
        assert_eq!(one, [7, 8, 9, 10]);
        assert!(matches!(
            reference_transpose(&[1, 2, 3], 2, 2, &mut [0; 4]),
            Err(Error::LengthMismatch { expected: 4, got: 3, .. })
        ));
        reference_transpose::<u8>(&[], 0, 3, &mut []).unwrap();
    }
}
