//! Matrix addition in three layouts and `sum_matrix_2d` with the 2D block
//! shape given at launch (lessons 003 and 002 §3.7–3.9).
//!
//! * [`Gpu::matrix_add`]: `C = A + B` on linear `f32` buffers, traversed
//!   row-major (`row * ncol + col`, the lesson's fast version) or
//!   column-major (`col * nrow + row`, its 3.4× slower one).
//! * [`Gpu::matrix_add_pitched`]: the same on [`PitchedBuffer`]s, each row
//!   starting on an aligned address.
//! * [`Gpu::sum_matrix_2d`]: the lesson's `sumMatrixOnGPU2D(A, B, C, nx,
//!   ny)` with any [`BlockShape`]; [`SumVariant::X4`] gives each thread
//!   four columns.
//!
//! The grid is `(ceil(ncol / (block.x · items)), ceil(nrow / block.y))`:
//! x along columns (adjacent threads, adjacent addresses), y along rows.
//! Every launch is validated before the driver sees it: the lesson's
//! `(256, 8)` block (2048 threads) is [`Error::InvalidLaunch`] naming the
//! device's 1024-thread limit, where CUDA reported only "invalid
//! configuration argument" after the fact:
//!
//! ```
//! use coalesce_host::matrix::{BlockShape, SumVariant, validate_launch};
//! use coalesce_host::{DeviceLimits, Error, KernelLimits, LaunchLimit};
//!
//! let shape = BlockShape::new(256, 8);
//! let e = validate_launch(SumVariant::X1.kernel(), 16384, 16384, shape, 1, &DeviceLimits::H100, &KernelLimits::unconstrained())
//!     .unwrap_err();
//! assert!(matches!(e, Error::InvalidLaunch { limit: LaunchLimit::ThreadsPerBlock, max: 1024, value: 2048, .. }));
//! assert!(e.to_string().contains("maximum threads per block is 1024, got 2048"));
//! ```

use std::fmt;
use std::str::FromStr;

use coalesce_kernels::matrix::SUM_ITEMS;

use crate::device::DeviceLimits;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{KernelArg, KernelLimits, LaunchConfig};
use crate::memory::{DeviceView, DeviceViewMut};
use crate::pitched::PitchedBuffer;

/// Threads per block along x (columns) and y (rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockShape {
    /// Threads along x: adjacent columns.
    pub x: u32,
    /// Threads along y: adjacent rows.
    pub y: u32,
}

impl BlockShape {
    /// `x × y` threads.
    pub const fn new(x: u32, y: u32) -> BlockShape {
        BlockShape { x, y }
    }

    /// The lesson 003 block: `dim3 dimBlock(32, 32, 1)`.
    pub const LESSON_2D: BlockShape = BlockShape::new(32, 32);

    /// The shapes lesson 002 tries on a 16384² matrix, in its order
    /// (§3.7: the four square-ish ones; §3.9: the rest, ending with the
    /// `(256, 8)` that exceeds 1024 threads).
    pub const LESSON_SWEEP: [BlockShape; 15] = [
        BlockShape::new(32, 32),
        BlockShape::new(32, 16),
        BlockShape::new(16, 32),
        BlockShape::new(16, 16),
        BlockShape::new(64, 2),
        BlockShape::new(64, 4),
        BlockShape::new(64, 8),
        BlockShape::new(128, 1),
        BlockShape::new(128, 2),
        BlockShape::new(128, 4),
        BlockShape::new(128, 8),
        BlockShape::new(256, 1),
        BlockShape::new(256, 2),
        BlockShape::new(256, 4),
        BlockShape::new(256, 8),
    ];

    /// Threads per block, without overflow.
    pub fn threads(self) -> u64 {
        self.x as u64 * self.y as u64
    }
}

impl fmt::Display for BlockShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

impl FromStr for BlockShape {
    type Err = String;

    /// `32x16`, `32,16` or `(32, 16)`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim().trim_start_matches('(').trim_end_matches(')');
        let (x, y) = t
            .split_once(['x', 'X', ','])
            .ok_or_else(|| format!("`{s}` is not a block shape: write X x Y, e.g. 32x16"))?;
        let n = |v: &str| v.trim().parse::<u32>().map_err(|e| format!("`{s}`: `{}`: {e}", v.trim()));
        Ok(BlockShape::new(n(x)?, n(y)?))
    }
}

/// How a linear matrix is traversed (and stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatrixLayout {
    /// Element `(row, col)` at `row * ncol + col`: a warp reads 128
    /// contiguous bytes (`matrix_add_row_major`).
    RowMajor,
    /// Element `(row, col)` at `col * nrow + row`: a warp's 32 threads read
    /// addresses `4 · nrow` bytes apart (`matrix_add_col_major`).
    ColMajor,
}

impl MatrixLayout {
    /// The kernel.
    pub fn kernel(self) -> &'static str {
        match self {
            MatrixLayout::RowMajor => "matrix_add_row_major",
            MatrixLayout::ColMajor => "matrix_add_col_major",
        }
    }
}

/// The pitched kernel's name.
pub const PITCHED_KERNEL: &str = "matrix_add_pitched";

/// Which `sum_matrix_2d` kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SumVariant {
    /// The lesson's kernel: one element per thread (`sum_matrix_2d`).
    X1,
    /// Four elements per thread, `block.x` columns apart
    /// (`sum_matrix_2d_x4`).
    X4,
}

impl SumVariant {
    /// Both, the lesson's first.
    pub const ALL: [SumVariant; 2] = [SumVariant::X1, SumVariant::X4];

    /// The kernel.
    pub fn kernel(self) -> &'static str {
        match self {
            SumVariant::X1 => "sum_matrix_2d",
            SumVariant::X4 => "sum_matrix_2d_x4",
        }
    }

    /// Elements per thread along x.
    pub fn items(self) -> u32 {
        match self {
            SumVariant::X1 => 1,
            SumVariant::X4 => SUM_ITEMS as u32,
        }
    }

    /// Short name (`x1`, `x4`).
    pub fn name(self) -> &'static str {
        match self {
            SumVariant::X1 => "x1",
            SumVariant::X4 => "x4",
        }
    }
}

/// The launch for an `nrow × ncol` matrix: `block` threads per block,
/// `items` columns per thread, grid `(ceil(ncol / (block.x · items)),
/// ceil(nrow / block.y))` (saturated at `u32::MAX`, which validation then
/// refuses). A zero block extent gives a zero grid extent; validation
/// refuses both.
pub fn launch_config(nrow: usize, ncol: usize, block: BlockShape, items: u32) -> LaunchConfig {
    let blocks =
        |n: usize, per: u64| -> u32 { if per == 0 { 0 } else { (n as u64).div_ceil(per).min(u32::MAX as u64) as u32 } };
    LaunchConfig::new((blocks(ncol, block.x as u64 * items as u64), blocks(nrow, block.y as u64)), (block.x, block.y))
}

/// The launch of `kernel` for an `nrow × ncol` matrix, validated against
/// `device` and `kernel_limits` without a GPU: [`Error::InvalidLaunch`]
/// for a violated limit (the `(256, 8)` block: threads per block),
/// [`Error::ZeroExtent`] for an empty matrix.
pub fn validate_launch(
    kernel: &'static str,
    nrow: usize,
    ncol: usize,
    block: BlockShape,
    items: u32,
    device: &DeviceLimits,
    kernel_limits: &KernelLimits,
) -> Result<LaunchConfig> {
    if nrow == 0 || ncol == 0 {
        return Err(Error::ZeroExtent { op: kernel, width: ncol, height: nrow });
    }
    let cfg = launch_config(nrow, ncol, block, items);
    cfg.validate(device, kernel_limits).map_err(|v| Error::InvalidLaunch {
        kernel,
        config: cfg,
        limit: v.limit,
        max: v.max,
        value: v.value,
    })?;
    Ok(cfg)
}

/// `nrow · ncol`, or the overflow error.
fn elements(op: &'static str, nrow: usize, ncol: usize) -> Result<usize> {
    nrow.checked_mul(ncol).filter(|&n| n <= isize::MAX as usize / 4).ok_or(Error::ExtentOverflow {
        op,
        width: ncol,
        height: nrow,
        elem_size: 4,
    })
}

impl Gpu {
    /// The validated launch of `kernel` on this device (device and kernel
    /// limits), without launching anything.
    pub fn matrix_launch_config(
        &self,
        kernel: &'static str,
        nrow: usize,
        ncol: usize,
        block: BlockShape,
        items: u32,
    ) -> Result<LaunchConfig> {
        let limits = self.kernel_limits(kernel)?;
        validate_launch(kernel, nrow, ncol, block, items, &self.info().limits, &limits)
    }

    /// Checks three linear operands of an `nrow × ncol` matrix (extent,
    /// lengths, context) and returns the validated launch of `kernel`.
    #[allow(clippy::too_many_arguments)]
    fn check_linear(
        &self,
        kernel: &'static str,
        items: u32,
        a: &DeviceView<'_, f32>,
        b: &DeviceView<'_, f32>,
        c: &DeviceViewMut<'_, f32>,
        nrow: usize,
        ncol: usize,
        block: BlockShape,
    ) -> Result<LaunchConfig> {
        if nrow == 0 || ncol == 0 {
            return Err(Error::ZeroExtent { op: kernel, width: ncol, height: nrow });
        }
        let n = elements(kernel, nrow, ncol)?;
        for len in [a.len(), b.len(), c.len()] {
            if len != n {
                return Err(Error::LengthMismatch { op: kernel, expected: n, got: len });
            }
        }
        a.check_gpu(self, kernel)?;
        b.check_gpu(self, kernel)?;
        c.check_gpu(self, kernel)?;
        self.matrix_launch_config(kernel, nrow, ncol, block, items)
    }

    /// `c = a + b` for `nrow × ncol` matrices stored in `layout`, one
    /// element per thread, `block` threads per block. Queued on the stream;
    /// returns the launch used.
    #[allow(clippy::too_many_arguments)]
    pub fn matrix_add(
        &self,
        layout: MatrixLayout,
        a: &DeviceView<'_, f32>,
        b: &DeviceView<'_, f32>,
        c: &mut DeviceViewMut<'_, f32>,
        nrow: usize,
        ncol: usize,
        block: BlockShape,
    ) -> Result<LaunchConfig> {
        let kernel = layout.kernel();
        let cfg = self.check_linear(kernel, 1, a, b, c, nrow, ncol, block)?;
        let (pa, pb, pc) = (a.device_ptr(), b.device_ptr(), c.device_ptr());
        // SAFETY: three live views of this context holding exactly
        // nrow·ncol f32 (checked); `c` is borrowed mutably, so it overlaps
        // neither input; both kernels write only indices below nrow·ncol.
        // Parameters in the lesson's order: (c, a, b, nrow, ncol).
        unsafe { self.launch(kernel, &cfg, &[&pc, &pa, &pb, &nrow, &ncol])? };
        Ok(cfg)
    }

    /// The lesson's `sumMatrixOnGPU2D`: `c = a + b` for an `nx × ny`
    /// row-major matrix (`nx` columns, `ny` rows) with the given block
    /// shape. Queued on the stream; returns the launch used. A block over
    /// the device's limits is refused before anything is launched.
    #[allow(clippy::too_many_arguments)]
    pub fn sum_matrix_2d(
        &self,
        a: &DeviceView<'_, f32>,
        b: &DeviceView<'_, f32>,
        c: &mut DeviceViewMut<'_, f32>,
        nx: usize,
        ny: usize,
        block: BlockShape,
        variant: SumVariant,
    ) -> Result<LaunchConfig> {
        let kernel = variant.kernel();
        let cfg = self.check_linear(kernel, variant.items(), a, b, c, ny, nx, block)?;
        let (pa, pb, pc) = (a.device_ptr(), b.device_ptr(), c.device_ptr());
        // SAFETY: as in `matrix_add`. Parameters in the lesson's order:
        // (A, B, C, nx, ny).
        unsafe { self.launch(kernel, &cfg, &[&pa, &pb, &pc, &nx, &ny])? };
        Ok(cfg)
    }

    /// `c = a + b` on pitched matrices of the same width and height (each
    /// with its own pitch), one element per thread. Queued on the stream;
    /// returns the launch used.
    pub fn matrix_add_pitched(
        &self,
        a: &PitchedBuffer<f32>,
        b: &PitchedBuffer<f32>,
        c: &mut PitchedBuffer<f32>,
        block: BlockShape,
    ) -> Result<LaunchConfig> {
        const K: &str = PITCHED_KERNEL;
        let (ncol, nrow) = (c.width(), c.height());
        for m in [a, b] {
            if (m.width(), m.height()) != (ncol, nrow) {
                return Err(Error::ExtentMismatch { op: K, expected: (ncol, nrow), got: (m.width(), m.height()) });
            }
            m.check_gpu(self, K)?;
        }
        c.check_gpu_mut(self, K)?;
        let cfg = self.matrix_launch_config(K, nrow, ncol, block, 1)?;
        let args: [&dyn KernelArg; 8] =
            [&c.device_ptr(), &c.pitch(), &a.device_ptr(), &a.pitch(), &b.device_ptr(), &b.pitch(), &nrow, &ncol];
        // SAFETY: three live pitched allocations of this context, each
        // `nrow` rows of its pitch (≥ ncol·4 bytes, a multiple of 4: checked
        // at allocation); `c` is borrowed mutably, so distinct from `a`, `b`.
        unsafe { self.launch(K, &cfg, &args)? };
        Ok(cfg)
    }
}

/// The CPU reference every matrix kernel is checked against: `out[i] =
/// a[i] + b[i]` with rayon (the same IEEE single-precision add the GPU
/// performs, so results agree bit for bit). Works for any layout: every
/// kernel adds element `i` of `a` and `b` into element `i` of `out`.
pub fn reference_add(a: &[f32], b: &[f32], out: &mut [f32]) -> Result<()> {
    use rayon::prelude::*;
    for len in [a.len(), b.len()] {
        if len != out.len() {
            return Err(Error::LengthMismatch { op: "reference_add", expected: out.len(), got: len });
        }
    }
    const CHUNK: usize = 1 << 16;
    out.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK).zip(b.par_chunks(CHUNK))).for_each(|(o, (a, b))| {
        for ((o, a), b) in o.iter_mut().zip(a).zip(b) {
            *o = a + b;
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::LaunchLimit;

    fn check(shape: BlockShape, items: u32) -> Result<LaunchConfig> {
        validate_launch(
            "sum_matrix_2d",
            16_384,
            16_384,
            shape,
            items,
            &DeviceLimits::H100,
            &KernelLimits::unconstrained(),
        )
    }

    #[test]
    fn lesson_grids() {
        // The grids the lesson prints for nx = ny = 16384.
        let want = [
            ((32, 32), (512, 512)),
            ((32, 16), (512, 1024)),
            ((16, 32), (1024, 512)),
            ((16, 16), (1024, 1024)),
            ((64, 2), (256, 8192)),
            ((128, 1), (128, 16384)),
            ((256, 1), (64, 16384)),
            ((256, 4), (64, 4096)),
        ];
        for ((bx, by), (gx, gy)) in want {
            let cfg = check(BlockShape::new(bx, by), 1).unwrap();
            assert_eq!((cfg.grid.x, cfg.grid.y, cfg.block.x, cfg.block.y), (gx, gy, bx, by));
        }
        // Four columns per thread: a quarter of the blocks along x.
        assert_eq!(check(BlockShape::new(32, 16), 4).unwrap().grid.x, 128);
    }

    #[test]
    fn every_sweep_shape_but_the_last_is_legal() {
        let (last, legal) = BlockShape::LESSON_SWEEP.split_last().unwrap();
        for &s in legal {
            assert!(check(s, 1).is_ok(), "{s}");
        }
        let e = check(*last, 1).unwrap_err();
        match &e {
            Error::InvalidLaunch {
                kernel: "sum_matrix_2d", limit: LaunchLimit::ThreadsPerBlock, max, value, ..
            } => {
                assert_eq!((*max, *value), (1024, 2048))
            }
            e => panic!("expected InvalidLaunch on threads per block, got {e}"),
        }
        assert!(e.to_string().contains("the device's maximum threads per block is 1024, got 2048"), "{e}");
    }

    #[test]
    fn odd_extents_round_up_and_bad_ones_are_refused() {
        let cfg = launch_config(10_001, 10_000, BlockShape::new(32, 32), 1);
        assert_eq!((cfg.grid.x, cfg.grid.y), (313, 313));
        let cfg = launch_config(1, 1, BlockShape::new(32, 32), 4);
        assert_eq!((cfg.grid.x, cfg.grid.y), (1, 1));
        let h = DeviceLimits::H100;
        let k = KernelLimits::unconstrained();
        let e = validate_launch("k", 0, 5, BlockShape::new(32, 1), 1, &h, &k).unwrap_err();
        assert!(matches!(e, Error::ZeroExtent { width: 5, height: 0, .. }), "{e}");
        let e = validate_launch("k", 4, 4, BlockShape::new(0, 4), 1, &h, &k).unwrap_err();
        assert!(matches!(e, Error::InvalidLaunch { .. }), "{e}");
        // More rows than 65535 blocks along y can cover.
        let e = validate_launch("k", 70_000, 4, BlockShape::new(32, 1), 1, &h, &k).unwrap_err();
        assert!(matches!(e, Error::InvalidLaunch { limit: LaunchLimit::GridDim(crate::Axis::Y), .. }), "{e}");
        let e = validate_launch("k", 1, 5, BlockShape::new(2048, 1), 1, &h, &k).unwrap_err();
        assert!(matches!(e, Error::InvalidLaunch { limit: LaunchLimit::ThreadsPerBlock, .. }), "{e}");
    }

    #[test]
    fn shapes_parse_and_print() {
        assert_eq!("32x16".parse::<BlockShape>().unwrap(), BlockShape::new(32, 16));
        assert_eq!("(256, 8)".parse::<BlockShape>().unwrap(), BlockShape::new(256, 8));
        assert_eq!(" 128,2 ".parse::<BlockShape>().unwrap(), BlockShape::new(128, 2));
        assert!("32".parse::<BlockShape>().is_err());
        assert!("32xq".parse::<BlockShape>().is_err());
        assert_eq!(BlockShape::new(64, 4).to_string(), "(64, 4)");
        assert_eq!(BlockShape::new(256, 8).threads(), 2048);
    }

    #[test]
    fn reference_adds_and_checks_lengths() {
        let a: Vec<f32> = (0..200_001).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..200_001).map(|i| -(i as f32) * 0.25 + 1.0).collect();
        let mut out = vec![f32::NAN; a.len()];
        reference_add(&a, &b, &mut out).unwrap();
        assert!(out.iter().enumerate().all(|(i, &o)| o == i as f32 * 0.25 + 1.0));
        let e = reference_add(&a[1..], &b, &mut out).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { expected: 200_001, got: 200_000, .. }), "{e}");
    }

    #[test]
    fn kernel_names() {
        assert_eq!(MatrixLayout::RowMajor.kernel(), "matrix_add_row_major");
        assert_eq!(MatrixLayout::ColMajor.kernel(), "matrix_add_col_major");
        assert_eq!((SumVariant::X4.kernel(), SumVariant::X4.items()), ("sum_matrix_2d_x4", 4));
    }
}
