//! 2D filters over images of 1, 3 or 4 interleaved channels (gray, RGB,
//! RGBA), one mask for every channel or one per channel, over the same six
//! storage types as [`super::batch`] (8-bit and 16-bit pixels included),
//! with `scipy.ndimage`'s `cval` and per-axis `origin`.
//!
//! ```no_run
//! use coalesce_host::conv::channels::{Filter2d, Image};
//! use coalesce_host::conv::{Boundary, ConvOp};
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = coalesce_host::Gpu::new()?;
//! let (w, h) = (640, 480);
//! let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i % 251) as u8).collect();
//! // A 5×5 box blur on every channel, f32 accumulation, rounded back to u8.
//! let blur = Filter2d::<u8>::new(&gpu, &[1.0f32 / 25.0; 25], 5, 5, ConvOp::Correlate, Boundary::Reflect)?;
//! let input = gpu.upload(&rgb)?;
//! let mut output = gpu.alloc_zeroed::<u8>(rgb.len())?;
//! blur.run(&input.as_view(), &mut output.as_view_mut(), Image::new(w, h, 3)?)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Semantics
//!
//! Channel `c` of output pixel `(y, x)` is
//! `Σ_{dy, dx} in[y − top + dy][x − left + dx][c] · m_c[dy][dx]` over the
//! `mh × mw` correlation taps of channel `c` (the mask rotated by 180° for
//! a convolution), `left = mw/2 + origin_x` and `top = mh/2 + origin_y`
//! by scipy's rule per axis ([`super::batch::left_for_origin`]). Pixels
//! outside the image follow the [`Boundary`] mode per axis, `cval` in
//! constant mode. Types, accumulation and output rounding are those of
//! [`super::batch`] (see [`Sample`]).
//!
//! # Masks that factor
//!
//! A mask that is the outer product of a column and a row (a box, a
//! Gaussian, any rank-1 mask) runs on the separable kernels
//! (`conv2d_sepc{1,3,4}_<type>`, every type but `f64`): `mw + mh`
//! multiply-adds per output instead of `mw · mh`, within the same error
//! bound as the general kernels. [`Filter2d`] finds the factors when it is
//! built ([`Filter2d::factors`], [`factor_mask`] for the rule);
//! [`Filter2d::with_separable`]`(false)` keeps the general kernels;
//! [`ChanPlan::separable`] says which ran.
//!
//! `u8` images with a factored mask within a centred 3 × 3 or 5 × 5 window
//! (7 × 7 for gray) take the register-blocked kernels instead
//! (`conv2d_sepr{C}_u8_w{K}`, sm_80 and newer; see
//! `coalesce_kernels::conv::sepreg`) when the input's base and pitch are
//! multiples of 16 bytes, the output's of 4, the image is at least the
//! window in both axes, and constant mode's `cval` is 0;
//! [`ChanPlan::register_blocked`] says when they ran. A box of equal taps
//! whose mask is the whole window (3 × 3, 5 × 5, and 7 × 7 for gray,
//! centred) runs on their box form (`conv2d_sepb{C}_u8_w{K}`): the sums
//! of the window's bytes are exact integers, two to a 32-bit word, kept
//! by adding the row that enters and subtracting the one that leaves; each
//! output is the sum times the tap, rounded once to `f32`, then to the
//! nearest byte (ties to even, saturated) as every `u8` output is.
//!
//! A box with one tap for every channel goes first to the box rows kernels
//! (`conv2d_boxr{C}_u8_w{K}`, same windows and result; see
//! `coalesce_kernels::conv::boxrows`) when each row is a multiple of 16
//! bytes and at least 32, both bases and pitches are multiples of 16, and
//! the image is at least the window in both axes (in wrap mode, rows not
//! 16 bytes past a multiple of 512: [`boxr_mode_fits`]); a thread owns 16
//! bytes of a row, keeps rows in flight as asynchronous copies into shared
//! memory and reads the bytes either side from its neighbours' copies.
//! [`Filter2d::with_box_rows`]`(false)` keeps the box form above.
//!
//! # Gray `f32` and `f64` images
//!
//! One channel of `f32` or `f64` with one mask is the image [`Conv2d`] and
//! [`Separable`] take, and their kernels run it where the layout allows:
//! the same pitch in and out, and constant mode's `cval` 0. A mask that
//! factors takes [`Separable`]'s streamed kernel (`conv2d_seps_f32_h*`,
//! sm_80 and newer, both bases 16-byte aligned and a pitch of a multiple
//! of 4 elements; else `conv2d_sepc1_f32`); any other mask, or every mask
//! with [`Filter2d::with_separable`]`(false)`, takes [`Conv2d`]'s
//! [`Conv2dVariant::Auto`] (the register kernels for centred masks up to
//! 7 × 7, and 9 × 9 in `f32`; the tensor cores for larger `f32` masks).
//! [`ChanPlan::conv2d`] holds the plan that ran.

use std::sync::{Arc, Mutex};

pub use coalesce_kernels::conv::batch::{CHAN_OUTPUTS, CHAN_ROWS, CHAN_X, CHAN_Y, chan_shared_elems};
pub use coalesce_kernels::conv::boxrows::{
    BOXR_BLOCK_BYTES, BOXR_NAMES, BOXR_PARAM_BYTES, BOXR_SHAPES, BOXR_SHARED_BYTES, BOXR_THREADS, boxr_blocks,
    boxr_fits, boxr_mode_fits,
};
pub use coalesce_kernels::conv::sepchan::{SEPC_ROWS, SEPC_THREADS, sepc_shared_bytes, sepc_tiles};
pub use coalesce_kernels::conv::sepreg::{
    SEPR_OUT_LANES, SEPR_PARAM_BYTES, SEPR_THREADS, SEPR_WIDTHS, sepr_columns, sepr_strip, sepr_task, sepr_warps,
};

use super::batch::{Sample, left_for_origin};
use super::conv2d::{Conv2d, Conv2dPlan, Conv2dVariant, Separable};
use super::{Boundary, ConvElem, ConvOp};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{DevicePtr, KernelArg, LaunchConfig, ParamArray};
use crate::memory::{DeviceBuffer, DeviceView, DeviceViewMut};
use coalesce_kernels::conv::batch::FLAG_VECTOR;
use coalesce_kernels::conv::boundary::axis_maps32;

/// The channel counts the kernels take.
pub const CHANNELS: [usize; 3] = [1, 3, 4];

/// An image of `width × height` pixels of `channels` interleaved
/// elements: row `y` starts `y · pitch` elements after row 0 (pitches in
/// elements, at least `width · channels`), input and output separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    /// Pixels per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Interleaved channels per pixel: 1, 3 or 4.
    pub channels: usize,
    /// Elements from one input row to the next.
    pub in_pitch: usize,
    /// Elements from one output row to the next.
    pub out_pitch: usize,
}

impl Image {
    /// A dense image (pitch = `width · channels`); a channel count other
    /// than 1, 3 or 4 is an error naming the rule.
    pub fn new(width: usize, height: usize, channels: usize) -> Result<Image> {
        if !CHANNELS.contains(&channels) {
            return Err(Error::InvalidArgument {
                op: "filter2d",
                message: format!("{channels} channels: images have 1 (gray), 3 (RGB) or 4 (RGBA) interleaved channels"),
            });
        }
        let pitch = width.checked_mul(channels).ok_or(Error::InvalidArgument {
            op: "filter2d",
            message: format!("a row of {width} pixels of {channels} channels overflows"),
        })?;
        Ok(Image { width, height, channels, in_pitch: pitch, out_pitch: pitch })
    }

    /// This image with row pitches `in_pitch` and `out_pitch` (elements).
    pub fn with_pitches(self, in_pitch: usize, out_pitch: usize) -> Image {
        Image { in_pitch, out_pitch, ..self }
    }

    /// Elements a buffer needs at `pitch`.
    fn extent(self, pitch: usize) -> Option<usize> {
        if self.width == 0 || self.height == 0 {
            return Some(0);
        }
        (self.height - 1).checked_mul(pitch)?.checked_add(self.width * self.channels)
    }

    fn check(self, input: usize, output: usize) -> Result<()> {
        if !CHANNELS.contains(&self.channels) {
            return Image::new(self.width, self.height, self.channels).map(|_| ());
        }
        let row = self.width.checked_mul(self.channels).ok_or(Error::InvalidArgument {
            op: "filter2d",
            message: format!("a row of {} pixels overflows", self.width),
        })?;
        for (name, pitch) in [("input", self.in_pitch), ("output", self.out_pitch)] {
            if pitch < row && self.height > 1 {
                return Err(Error::InvalidArgument {
                    op: "filter2d",
                    message: format!("the {name} pitch ({pitch} elements) is less than a row ({row} elements)"),
                });
            }
        }
        let overflow = || Error::InvalidArgument {
            op: "filter2d",
            message: format!("a {} x {} image at these pitches overflows", self.width, self.height),
        };
        let need_in = self.extent(self.in_pitch).ok_or_else(overflow)?;
        let need_out = self.extent(self.out_pitch).ok_or_else(overflow)?;
        if input < need_in {
            return Err(Error::LengthMismatch { op: "filter2d (input)", expected: need_in, got: input });
        }
        if output < need_out {
            return Err(Error::LengthMismatch { op: "filter2d (output)", expected: need_out, got: output });
        }
        if u32::try_from(self.width).is_err() || u32::try_from(self.height).is_err() {
            return Err(overflow());
        }
        Ok(())
    }
}

/// The launch a 2D channels filter makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChanPlan {
    /// The kernel.
    pub kernel: &'static str,
    /// Blocks (persistent).
    pub grid: u32,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Threads per block.
    pub threads: u32,
    /// Tile width in pixels of the separable kernels (0 for the general
    /// ones; for the register-blocked kernels, the pixels a warp writes
    /// across a row).
    pub tile_px: u32,
    /// Blocks along the grid's `y` (1 for every kernel: the
    /// register-blocked kernels number their warps along `x`).
    pub grid_y: u32,
    /// Output rows of each warp's band in the register-blocked kernels (0
    /// for the others).
    pub rows: u32,
    /// The plan of [`Conv2d`]'s or [`Separable`]'s kernel, when one ran a
    /// gray `f32` or `f64` image (see the module documentation); the
    /// fields above repeat its kernel, grid, block size and shared memory
    /// (`tile_px` its strip width when it is separable).
    pub conv2d: Option<Conv2dPlan>,
}

impl ChanPlan {
    /// Whether the separable kernel runs (the mask factors; see
    /// [`Filter2d::factors`]).
    pub fn separable(&self) -> bool {
        self.tile_px > 0
    }

    /// Whether a register-blocked kernel (`conv2d_sepr{C}_u8_w{K}`, or its
    /// box form `conv2d_sepb{C}_u8_w{K}`) runs.
    pub fn register_blocked(&self) -> bool {
        self.rows > 0
    }

    /// The plan of a gray image on [`Conv2d`]'s kernels (`separable`
    /// false) or [`Separable`]'s streamed kernel.
    fn of_conv2d(p: Conv2dPlan, separable: bool) -> ChanPlan {
        ChanPlan {
            kernel: p.kernel,
            grid: p.grid.0,
            shared_bytes: p.shared_bytes,
            threads: p.block.0 * p.block.1,
            tile_px: if separable { p.tile.0 as u32 } else { 0 },
            grid_y: p.grid.1,
            rows: 0,
            conv2d: Some(p),
        }
    }
}

/// A one-mask filter of a type that accumulates in itself (`f32`, `f64`)
/// as [`Conv2d`] and, when its mask factors, [`Separable`]: gray images
/// run on their kernels.
struct Gray<T: ConvElem> {
    conv: Conv2d<T>,
    sep: Option<Separable<T>>,
}

macro_rules! chan_names {
    ($($ty:literal),*) => {
        /// Per type: the kernels for 1, 3 and 4 channels.
        const KERNELS: &[(&str, [&str; 3])] = &[$(($ty, [
            concat!("conv2d_chan1_", $ty), concat!("conv2d_chan3_", $ty), concat!("conv2d_chan4_", $ty),
        ])),*];
    };
}
chan_names!("f32", "f64", "f16", "bf16", "u8", "u16");

macro_rules! sepc_names {
    ($($ty:literal),*) => {
        /// Per type: the separable kernels for 1, 3 and 4 channels.
        const SEP_KERNELS: &[(&str, [&str; 3])] = &[$(($ty, [
            concat!("conv2d_sepc1_", $ty), concat!("conv2d_sepc3_", $ty), concat!("conv2d_sepc4_", $ty),
        ])),*];
    };
}
sepc_names!("f32", "f16", "bf16", "u8", "u16");

/// The register-blocked kernels (`u8`), as `(channels, window, name, box
/// form's name)`.
const REG_KERNELS: &[(usize, usize, &str, &str)] = &[
    (1, 3, "conv2d_sepr1_u8_w3", "conv2d_sepb1_u8_w3"),
    (3, 3, "conv2d_sepr3_u8_w3", "conv2d_sepb3_u8_w3"),
    (4, 3, "conv2d_sepr4_u8_w3", "conv2d_sepb4_u8_w3"),
    (1, 5, "conv2d_sepr1_u8_w5", "conv2d_sepb1_u8_w5"),
    (3, 5, "conv2d_sepr3_u8_w5", "conv2d_sepb3_u8_w5"),
    (4, 5, "conv2d_sepr4_u8_w5", "conv2d_sepb4_u8_w5"),
    (1, 7, "conv2d_sepr1_u8_w7", "conv2d_sepb1_u8_w7"),
];

/// The entry of [`REG_KERNELS`] for `channels` and window `k`.
fn reg_kernels(channels: usize, k: usize) -> Option<(&'static str, &'static str)> {
    REG_KERNELS.iter().find(|&&(c, w, _, _)| c == channels && w == k).map(|&(_, _, name, boxed)| (name, boxed))
}

/// The largest box tap (in magnitude) the box kernels take: their
/// `fma` subtracts 2²³ times the tap, which must stay finite.
const BOX_TAP_MAX: f64 = 1.0e30;

/// Most output rows of a warp's band in the register-blocked kernels.
const SEPR_MAX_ROWS: usize = 512;

/// The bands of the register-blocked kernels' first and last warp
/// columns, for bands of `rows` elsewhere: a quarter as long, since their
/// lanes at a row's ends gather bytes through the boundary mode and wait
/// for those loads every row (on the H100, RGBA 4096² 5 × 5 box: 47.5% of
/// the floor at four fifths, 59.0% at a half, 68.2% at a third, 73.2% at a
/// quarter; RGB 68–72% throughout, its rows ending on whole strips).
pub fn sepr_edge_rows(rows: u32) -> u32 {
    rows.div_ceil(4).max(1)
}

/// The register-blocked `u8` kernel for `channels` and window `k` (taps
/// per axis), if one is built.
pub fn register_kernel_name(channels: usize, k: usize) -> Option<&'static str> {
    reg_kernels(channels, k).map(|(name, _)| name)
}

/// The box form of the register-blocked `u8` kernel for `channels` and
/// window `k`, if one is built.
pub fn box_kernel_name(channels: usize, k: usize) -> Option<&'static str> {
    reg_kernels(channels, k).map(|(_, boxed)| boxed)
}

/// The rows kernel of a box (`conv2d_boxr{C}_u8_w{K}`, see
/// `coalesce_kernels::conv::boxrows`) for `channels` and window `k`, if
/// one is built.
pub fn box_rows_kernel_name(channels: usize, k: usize) -> Option<&'static str> {
    BOXR_SHAPES.iter().position(|&(c, w)| c == channels && w == k).map(|i| BOXR_NAMES[i])
}

/// The separable kernel for storage type `ty` and `channels` (1, 3 or
/// 4); `f64` has none.
pub fn separable_kernel_name(ty: &str, channels: usize) -> Option<&'static str> {
    let names = SEP_KERNELS.iter().find(|(t, _)| *t == ty)?.1;
    CHANNELS.iter().position(|&c| c == channels).map(|i| names[i])
}

/// Unit roundoff of `f32`.
const F32_U: f64 = 1.0 / 16_777_216.0;

/// How far `col[i] · row[j]` may stray from an `mh × mw` mask's tap
/// (relative) for the separable kernels to stay within the bound the
/// general kernels are tested at, `(mw·mh + 1)·u·Σ|terms|`: a separable
/// sum rounds `mw + mh` times, so `(mw − 1)(mh − 1)` units are left for
/// the factors (at most 4 are used).
fn factor_tolerance(mw: usize, mh: usize) -> f64 {
    ((mw - 1) * (mh - 1)).min(4) as f64 * F32_U
}

/// Whether `row` and `col` reproduce `mask` (`mh × mw`, row-major) within
/// [`factor_tolerance`]: zeros exactly, every tap finite.
fn factors_match(mask: &[f64], mw: usize, mh: usize, row: &[f32], col: &[f32]) -> bool {
    let tol = factor_tolerance(mw, mh);
    (0..mh).all(|i| {
        (0..mw).all(|j| {
            let (m, q) = (mask[i * mw + j], col[i] as f64 * row[j] as f64);
            m.is_finite() && q.is_finite() && if m == 0.0 { q == 0.0 } else { (q - m).abs() <= tol * m.abs() }
        })
    })
}

/// `mask` (`mh × mw`, row-major, `f32` values) as `(row, col)` with
/// `mask[i][j] ≈ col[i] · row[j]`, if it has rank 1: the row is the
/// pivot's (the largest tap's) row, each column tap the tap in the pivot's
/// column over the pivot, rounded to `f32`; every product must lie within
/// `min(4, (mw − 1)(mh − 1))` units of `f32` roundoff of its tap, zeros
/// exactly, all finite. Masks of one row or one column are left to the
/// general kernels.
pub fn factor_mask(mask: &[f64], mw: usize, mh: usize) -> Option<(Vec<f32>, Vec<f32>)> {
    if mw < 2 || mh < 2 || mask.len() != mw * mh {
        return None;
    }
    let pivot = (0..mask.len()).max_by(|&a, &b| mask[a].abs().total_cmp(&mask[b].abs()))?;
    let (i0, j0) = (pivot / mw, pivot % mw);
    let p = mask[pivot];
    if p == 0.0 || !p.is_finite() {
        return None;
    }
    let row: Vec<f32> = (0..mw).map(|j| mask[i0 * mw + j] as f32).collect();
    let col: Vec<f32> = (0..mh).map(|i| (mask[i * mw + j0] / p) as f32).collect();
    factors_match(mask, mw, mh, &row, &col).then_some((row, col))
}

/// The factors of every mask of a filter, on the device as the separable
/// kernels take them: every mask's row taps, then every mask's column
/// taps.
struct Factors {
    rows: Vec<f32>,
    cols: Vec<f32>,
    dev: DeviceBuffer<f32>,
}

/// The kernel for storage type `ty` and `channels` (1, 3 or 4).
pub fn kernel_name(ty: &str, channels: usize) -> Option<&'static str> {
    let names = KERNELS.iter().find(|(t, _)| *t == ty)?.1;
    CHANNELS.iter().position(|&c| c == channels).map(|i| names[i])
}

/// A 2D filter over interleaved channels, ready to run.
#[derive(Clone)]
pub struct Filter2d<S: Sample> {
    gpu: Gpu,
    /// Correlation taps, `masks × mh × mw`.
    taps: Vec<S::Acc>,
    mw: usize,
    mh: usize,
    masks: usize,
    op: ConvOp,
    mode: Boundary,
    cval: f64,
    origin: (isize, isize),
    left: (usize, usize),
    dev: Arc<DeviceBuffer<S::Acc>>,
    factors: Option<Arc<Factors>>,
    use_factors: bool,
    /// Whether boxes may take the box form of the register-blocked kernels.
    box_sums: bool,
    /// Whether boxes may take the box rows kernels.
    box_rows: bool,
    /// [`Gray`] for `f32` and `f64` filters of one mask.
    gray: Option<Arc<Gray<S::Acc>>>,
    /// The plans made so far (shared by clones: the key holds every
    /// setting a plan depends on).
    plans: Arc<Mutex<Vec<(PlanKey, ChanPlan)>>>,
}

/// What a [`Filter2d`]'s plan depends on besides its masks, mode and
/// device: the image and the settings its builders change.
#[derive(Clone, Copy, PartialEq)]
struct PlanKey {
    img: Image,
    left: (usize, usize),
    cval: u64,
    use_factors: bool,
    box_sums: bool,
    box_rows: bool,
}

/// Plans a [`Filter2d`] keeps (the oldest goes first).
const PLANS_KEPT: usize = 16;

impl<S: Sample> Filter2d<S> {
    /// One `mh × mw` mask (row-major) for every channel; the taps' type
    /// must be the data's accumulation type (see [`super::batch`]).
    pub fn new<M: ConvElem>(gpu: &Gpu, mask: &[M], mw: usize, mh: usize, op: ConvOp, mode: Boundary) -> Result<Self> {
        Self::build(gpu, mask, mw, mh, op, mode)
    }

    /// One mask per channel, one after another (channel 0's first); their
    /// count must equal the image's channels.
    pub fn per_channel<M: ConvElem>(
        gpu: &Gpu,
        masks: &[M],
        mw: usize,
        mh: usize,
        op: ConvOp,
        mode: Boundary,
    ) -> Result<Self> {
        Self::build(gpu, masks, mw, mh, op, mode)
    }

    /// scipy's `gaussian_filter` on each channel: the outer product of
    /// two [`super::gaussian_truncated`] masks (σ per axis, `truncate`).
    pub fn gaussian(gpu: &Gpu, sigma_x: f64, sigma_y: f64, truncate: f64, mode: Boundary) -> Result<Self> {
        let gx = super::gaussian_truncated::<f64>(sigma_x, truncate)?;
        let gy = super::gaussian_truncated::<f64>(sigma_y, truncate)?;
        let taps: Vec<S::Acc> = gy.iter().flat_map(|y| gx.iter().map(move |x| S::Acc::from_f64(x * y))).collect();
        let mut filter = Self::build(gpu, &taps, gx.len(), gy.len(), ConvOp::Correlate, mode)?;
        // The Gaussians' own factors, when the pivot's quotients stray
        // past the tolerance (the taps are symmetric, so correlation order
        // is the same).
        if filter.factors.is_none() && separable_kernel_name(S::NAME, 1).is_some() {
            let (row, col): (Vec<f32>, Vec<f32>) =
                (gx.iter().map(|&v| v as f32).collect(), gy.iter().map(|&v| v as f32).collect());
            let wide: Vec<f64> = filter.taps.iter().map(|t| t.to_f64()).collect();
            if factors_match(&wide, gx.len(), gy.len(), &row, &col) && gx.len() >= 2 && gy.len() >= 2 {
                let all: Vec<f32> = row.iter().chain(&col).copied().collect();
                filter.factors = Some(Arc::new(Factors { dev: gpu.upload(&all)?, rows: row, cols: col }));
                filter.gray = filter.gray_paths()?;
            }
        }
        Ok(filter)
    }

    /// [`Gray`] for this filter's masks, factors and `left` (`None` but for
    /// `f32` and `f64` filters of one mask).
    fn gray_paths(&self) -> Result<Option<Arc<Gray<S::Acc>>>> {
        if S::NAME != <S::Acc as ConvElem>::NAME || self.masks != 1 {
            return Ok(None);
        }
        let conv = Conv2d::new(&self.gpu, &self.taps, self.mw, self.mh, ConvOp::Correlate, self.mode)?;
        let sep = match self.factors.as_deref() {
            Some(f) => {
                let acc = |v: &[f32]| v.iter().map(|&t| S::Acc::from_f64(f64::from(t))).collect::<Vec<_>>();
                let sep = Separable::new(&self.gpu, &acc(&f.rows), &acc(&f.cols), ConvOp::Correlate, self.mode)?;
                Some(sep.with_left(self.left))
            }
            None => None,
        };
        Ok(Some(Arc::new(Gray { conv: conv.with_left(self.left), sep })))
    }

    fn build<M: ConvElem>(gpu: &Gpu, masks: &[M], mw: usize, mh: usize, op: ConvOp, mode: Boundary) -> Result<Self> {
        if M::NAME != <S::Acc as ConvElem>::NAME {
            return Err(Error::InvalidArgument {
                op: "filter2d",
                message: format!(
                    "{} data takes {} taps, not {} (f64 data accumulates in f64; every other type in f32)",
                    S::NAME,
                    <S::Acc as ConvElem>::NAME,
                    M::NAME
                ),
            });
        }
        let size = mw.checked_mul(mh).filter(|&s| s > 0 && u32::try_from(s).is_ok());
        let size = size.ok_or_else(|| Error::InvalidArgument {
            op: "filter2d",
            message: format!("a {mw} x {mh} mask is empty or too large"),
        })?;
        if masks.is_empty() || !masks.len().is_multiple_of(size) || masks.len() / size > 4 {
            return Err(Error::InvalidArgument {
                op: "filter2d",
                message: format!("{} taps are not 1 to 4 masks of {mw} x {mh}", masks.len()),
            });
        }
        let mut taps = Vec::with_capacity(masks.len());
        for mask in masks.chunks(size) {
            let (t, _, _) = super::conv2d::correlation_taps_2d(op, mask, mw, mh);
            taps.extend(t.into_iter().map(|v| S::Acc::from_f64(v.to_f64())));
        }
        let dev = gpu.upload(&taps)?;
        let factors = if separable_kernel_name(S::NAME, 1).is_some() {
            let wide: Vec<f64> = taps.iter().map(|t| t.to_f64()).collect();
            let parts: Option<Vec<_>> = wide.chunks(size).map(|m| factor_mask(m, mw, mh)).collect();
            match parts {
                Some(parts) => {
                    let rows: Vec<f32> = parts.iter().flat_map(|(r, _)| r.iter().copied()).collect();
                    let cols: Vec<f32> = parts.iter().flat_map(|(_, c)| c.iter().copied()).collect();
                    let all: Vec<f32> = rows.iter().chain(&cols).copied().collect();
                    Some(Arc::new(Factors { dev: gpu.upload(&all)?, rows, cols }))
                }
                None => None,
            }
        } else {
            None
        };
        let left = (left_for_origin(mw, 0, op)?, left_for_origin(mh, 0, op)?);
        let mut filter = Filter2d {
            gpu: gpu.clone(),
            taps,
            mw,
            mh,
            masks: masks.len() / size,
            op,
            mode,
            cval: 0.0,
            origin: (0, 0),
            left,
            dev: Arc::new(dev),
            factors,
            use_factors: true,
            box_sums: true,
            box_rows: true,
            gray: None,
            plans: Arc::default(),
        };
        filter.gray = filter.gray_paths()?;
        Ok(filter)
    }

    /// This filter with the separable kernels allowed (`true`, the
    /// default) or not: a mask that factors (see [`Filter2d::factors`])
    /// runs on them unless this is `false`.
    pub fn with_separable(mut self, allow: bool) -> Self {
        self.use_factors = allow;
        self
    }

    /// This filter with the box form of the register-blocked `u8` kernels
    /// allowed (`true`, the default) or not: a box then runs on their
    /// multiply-add form like any other factored mask (see the module
    /// documentation).
    pub fn with_box_sums(mut self, allow: bool) -> Self {
        self.box_sums = allow;
        self
    }

    /// This filter with the box rows kernels allowed (`true`, the default)
    /// or not: a box that they take (see the module documentation) then
    /// runs on the register-blocked kernels' box form.
    pub fn with_box_rows(mut self, allow: bool) -> Self {
        self.box_rows = allow;
        self
    }

    /// The mask's factors `(row, column)`, every mask's `mw` row taps then
    /// every mask's `mh` column taps (correlation order), when every mask
    /// is the outer product of a column and a row within the
    /// accumulation's rounding: then the separable kernels run, `mw + mh`
    /// multiply-adds per output instead of `mw · mh`, within the same
    /// error bound. Only types that accumulate in `f32`, masks of at least
    /// 2 × 2.
    pub fn factors(&self) -> Option<(&[f32], &[f32])> {
        self.factors.as_deref().map(|f| (&f.rows[..], &f.cols[..]))
    }

    /// This filter with `cval`, the value outside the image in constant
    /// mode ([`Boundary::Zero`]). Default 0.
    pub fn with_cval(mut self, cval: f64) -> Self {
        self.cval = cval;
        self
    }

    /// This filter with scipy's `origin = (origin_y, origin_x)` (axis 0,
    /// the rows, first, as scipy orders them); each must lie in
    /// `−(w/2) ..= (w−1)/2` for its axis's width.
    pub fn with_origin(mut self, origin_y: isize, origin_x: isize) -> Result<Self> {
        self.left = (left_for_origin(self.mw, origin_x, self.op)?, left_for_origin(self.mh, origin_y, self.op)?);
        self.origin = (origin_y, origin_x);
        self.gray = self.gray_paths()?;
        Ok(self)
    }

    /// This filter queued on `stream` (same masks, shared).
    pub fn on(&self, stream: &crate::Stream) -> Result<Self> {
        let gray = match self.gray.as_deref() {
            Some(g) => {
                let sep = g.sep.as_ref().map(|s| s.on(stream)).transpose()?;
                Some(Arc::new(Gray { conv: g.conv.on(stream)?, sep }))
            }
            None => None,
        };
        Ok(Filter2d {
            gpu: self.gpu.on(stream)?,
            taps: self.taps.clone(),
            dev: self.dev.clone(),
            factors: self.factors.clone(),
            gray,
            plans: self.plans.clone(),
            ..*self
        })
    }

    /// `(mw, mh)`.
    pub fn size(&self) -> (usize, usize) {
        (self.mw, self.mh)
    }

    /// Masks: 1 (every channel) or one per channel.
    pub fn masks(&self) -> usize {
        self.masks
    }

    /// The correlation taps, `masks() × mh × mw`.
    pub fn taps(&self) -> &[S::Acc] {
        &self.taps
    }

    /// `(left, top)`: taps left of and above the centre.
    pub fn left(&self) -> (usize, usize) {
        self.left
    }

    /// The boundary mode.
    pub fn mode(&self) -> Boundary {
        self.mode
    }

    /// The value outside the image in constant mode.
    pub fn cval(&self) -> f64 {
        self.cval
    }

    /// The launch [`Filter2d::run`] makes for `img`. Plans are kept: the
    /// next call for the same image and settings answers at once (the
    /// search for a launch's bands takes microseconds, as long as a small
    /// image's kernel).
    pub fn plan(&self, img: Image) -> Result<ChanPlan> {
        let key = PlanKey {
            img,
            left: self.left,
            cval: self.cval.to_bits(),
            use_factors: self.use_factors,
            box_sums: self.box_sums,
            box_rows: self.box_rows,
        };
        let lock = || self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&(_, plan)) = lock().iter().find(|(k, _)| *k == key) {
            return Ok(plan);
        }
        let plan = self.make_plan(img)?;
        let mut plans = lock();
        if !plans.iter().any(|(k, _)| *k == key) {
            if plans.len() >= PLANS_KEPT {
                plans.remove(0);
            }
            plans.push((key, plan));
        }
        Ok(plan)
    }

    /// [`Filter2d::plan`], made anew.
    fn make_plan(&self, img: Image) -> Result<ChanPlan> {
        let info = self.gpu.info();
        let sm = info.cc_major * 10 + info.cc_minor;
        if sm < S::MIN_SM {
            return Err(Error::Unsupported {
                op: "filter2d",
                message: format!("{} data needs sm_{} or newer; {} is sm_{sm}", S::NAME, S::MIN_SM, info.name),
            });
        }
        Image::new(1, 1, img.channels)?;
        if self.masks > 1 && self.masks != img.channels {
            return Err(Error::InvalidArgument {
                op: "filter2d",
                message: format!(
                    "{} masks for {} channels: one mask per channel, or one for all",
                    self.masks, img.channels
                ),
            });
        }
        if let Some(plan) = self.gray_plan(img) {
            return Ok(plan);
        }
        if let Some(plan) = self.register_plan(img)? {
            return Ok(plan);
        }
        self.tiled_plan(img)
    }

    /// The tiled kernels' launch: the separable kernel when the mask
    /// factors and a tile fits ([`Filter2d::separable_plan`]), else the
    /// general kernel.
    fn tiled_plan(&self, img: Image) -> Result<ChanPlan> {
        let info = self.gpu.info();
        let limit = info.limits.max_shared_per_block_optin as usize;
        if let Some(plan) = self.separable_plan(img, limit)? {
            return Ok(plan);
        }
        let kernel = kernel_name(S::NAME, img.channels).expect("every type has channel kernels");
        let bytes = chan_shared_elems(img.channels, self.mw, self.mh).saturating_mul(std::mem::size_of::<S::Acc>());
        if bytes > limit {
            return Err(Error::InvalidArgument {
                op: "filter2d",
                message: format!(
                    "a {} x {} mask over {} channels needs {bytes} bytes of shared memory; this device allows {limit}",
                    self.mw, self.mh, img.channels
                ),
            });
        }
        let per_sm = self.gpu.max_active_blocks_per_sm(kernel, (CHAN_X * CHAN_Y) as u32, bytes)?;
        let resident = info.sm_count.max(1).saturating_mul(per_sm.max(1)) as usize;
        let tiles = img.width.div_ceil(CHAN_X).saturating_mul(img.height.div_ceil(CHAN_ROWS));
        let grid = tiles.clamp(1, resident.min(info.limits.max_grid_dim[0] as usize)) as u32;
        Ok(ChanPlan {
            kernel,
            grid,
            shared_bytes: bytes as u32,
            threads: (CHAN_X * CHAN_Y) as u32,
            tile_px: 0,
            grid_y: 1,
            rows: 0,
            conv2d: None,
        })
    }

    /// The launch of a gray image on [`Gray`]'s kernels, where they take
    /// it (see the module documentation): [`Separable`]'s streamed kernel
    /// for a factored mask (`None`, the `conv2d_sepc1_*` kernel, where it
    /// does not run or cannot plan the masks), else [`Conv2d`]'s
    /// [`Conv2dVariant::Auto`] (`None` where it cannot plan the mask). The
    /// streamed kernel's alignment is checked when it runs.
    fn gray_plan(&self, img: Image) -> Option<ChanPlan> {
        let gray = self.gray.as_deref()?;
        let same_pitch = img.in_pitch == img.out_pitch && img.in_pitch >= img.width;
        if img.channels != 1 || !same_pitch || (self.mode == Boundary::Zero && self.cval != 0.0) {
            return None;
        }
        if let (Some(sep), true) = (&gray.sep, self.use_factors) {
            let plan = sep.plan(img.width, img.height).ok();
            let streamed = plan.and_then(|p| p.fused).filter(|f| f.kernel.starts_with("conv2d_seps"));
            return streamed.map(|f| ChanPlan::of_conv2d(f, true));
        }
        gray.conv.plan(Conv2dVariant::Auto, img.width, img.height).ok().map(|p| ChanPlan::of_conv2d(p, false))
    }

    /// The separable kernel's launch, when the mask factors, they are
    /// allowed, and a tile fits: the widest tile of at most 76 KiB (three
    /// blocks per SM on the H100), else the widest that fits.
    fn separable_plan(&self, img: Image, limit: usize) -> Result<Option<ChanPlan>> {
        let Some(kernel) = separable_kernel_name(S::NAME, img.channels) else { return Ok(None) };
        // The kernels' tile geometry is 32-bit.
        let small = axis_maps32(img.width.saturating_mul(img.channels)) && axis_maps32(img.height);
        if self.factors.is_none() || !self.use_factors || !small {
            return Ok(None);
        }
        let size = std::mem::size_of::<S>();
        let bytes = |tile: usize| sepc_shared_bytes(img.channels, size, tile, self.mw, self.mh);
        let tiles = sepc_tiles(img.channels);
        let Some(tile) = tiles
            .iter()
            .copied()
            .find(|&t| bytes(t) <= 76 * 1024)
            .or_else(|| tiles.iter().copied().find(|&t| bytes(t) <= limit))
        else {
            return Ok(None);
        };
        let info = self.gpu.info();
        let threads = SEPC_THREADS as u32;
        let per_sm = self.gpu.max_active_blocks_per_sm(kernel, threads, bytes(tile))?;
        let resident = info.sm_count.max(1).saturating_mul(per_sm.max(1)) as usize;
        let count = img.width.div_ceil(tile).saturating_mul(img.height.div_ceil(SEPC_ROWS));
        let grid = count.clamp(1, resident.min(info.limits.max_grid_dim[0] as usize)) as u32;
        Ok(Some(ChanPlan {
            kernel,
            grid,
            shared_bytes: bytes(tile) as u32,
            threads,
            tile_px: tile as u32,
            grid_y: 1,
            rows: 0,
            conv2d: None,
        }))
    }

    /// The centred window (3, 5 or 7 taps per axis) of the
    /// register-blocked kernels that holds both axes' taps at their
    /// `left`, with the kernel for `channels`, if one is built.
    fn register_window(&self, channels: usize) -> Option<(usize, &'static str)> {
        let reach = |w: usize, left: usize| left.max(w - 1 - left);
        let need = reach(self.mw, self.left.0).max(reach(self.mh, self.left.1));
        let k = SEPR_WIDTHS.into_iter().find(|&k| k / 2 >= need)?;
        register_kernel_name(channels, k).map(|name| (k, name))
    }

    /// Each mask's one tap, when every mask is a box of equal taps that
    /// fills the window of `k` (`k × k`, centred), each finite and at most
    /// [`BOX_TAP_MAX`] in magnitude.
    fn box_taps(&self, k: usize) -> Option<Vec<f32>> {
        if !self.box_sums || self.mw != k || self.mh != k || self.left != (k / 2, k / 2) {
            return None;
        }
        let size = k * k;
        self.taps
            .chunks(size)
            .map(|m| {
                let t = m[0].to_f64();
                let equal = m.iter().all(|v| v.to_f64() == t);
                (equal && t.is_finite() && t.abs() <= BOX_TAP_MAX).then_some(t as f32)
            })
            .collect()
    }

    /// The register-blocked kernel's launch (sm_80 and newer, `u8` data,
    /// a factored mask within the window of a built kernel, an image of at
    /// least the window in both axes, `cval` 0 in constant mode; the
    /// layout's alignment is checked at run time), with the rows of each
    /// block row chosen so that the blocks fill whole waves of the device
    /// at the least halo. A box that fills the window takes the kernel's
    /// box form.
    fn register_plan(&self, img: Image) -> Result<Option<ChanPlan>> {
        self.register_plan_with(img, true)
    }

    /// [`Filter2d::register_plan`], with the box rows kernels (`rows`
    /// true, where they take the box) or without.
    fn register_plan_with(&self, img: Image, rows: bool) -> Result<Option<ChanPlan>> {
        let sm80 = self.gpu.info().cc_major >= 8;
        let zeros = self.mode != Boundary::Zero || self.cval == 0.0;
        if S::NAME != "u8" || !sm80 || !zeros || self.factors.is_none() || !self.use_factors {
            return Ok(None);
        }
        let Some((k, kernel)) = self.register_window(img.channels) else { return Ok(None) };
        if rows && let Some(plan) = self.box_rows_plan(img, k)? {
            return Ok(Some(plan));
        }
        let kernel = match (self.box_taps(k), box_kernel_name(img.channels, k)) {
            (Some(_), Some(boxed)) => boxed,
            _ => kernel,
        };
        let row = img.width.saturating_mul(img.channels);
        if img.width < k || img.height < k || !axis_maps32(row) || !axis_maps32(img.height) {
            return Ok(None);
        }
        let threads = SEPR_THREADS as u32;
        let cols = sepr_columns(img.width, img.channels, k) as u32;
        let height = img.height as u32;
        let warps_per_block = (SEPR_THREADS / 32) as u32;
        let blocks =
            |r: usize| sepr_warps(cols, height, r as u32, sepr_edge_rows(r as u32)).div_ceil(warps_per_block) as usize;
        let Some(rows) = self.band_rows(kernel, threads, 0, u32::MAX, img.height, k, blocks)? else { return Ok(None) };
        Ok(Some(ChanPlan {
            kernel,
            grid: blocks(rows) as u32,
            shared_bytes: 0,
            threads,
            tile_px: (SEPR_OUT_LANES * sepr_strip(img.channels, k) / img.channels) as u32,
            grid_y: 1,
            rows: rows as u32,
            conv2d: None,
        }))
    }

    /// The box rows kernel's launch (`conv2d_boxr{C}_u8_w{K}`), when the
    /// mask is a box of window `k` with one tap for every channel, they are
    /// allowed, and the image fits their layout (rows of a multiple of 16
    /// bytes and at least 32, pitches of multiples of 16; the bases are
    /// checked at run time): bands of rows chosen, as for the
    /// register-blocked kernels, so that the blocks fill whole waves at
    /// the least halo, but waves of one block per SM.
    fn box_rows_plan(&self, img: Image, k: usize) -> Result<Option<ChanPlan>> {
        let one_tap = self.box_taps(k).filter(|t| t.iter().all(|&v| v == t[0]));
        let kernel = box_rows_kernel_name(img.channels, k);
        let pitches = img.in_pitch.is_multiple_of(16) && img.out_pitch.is_multiple_of(16);
        let (Some(_), Some(kernel), true) = (one_tap, kernel, self.box_rows && pitches) else { return Ok(None) };
        let row = img.width * img.channels;
        if !boxr_fits(img.width, img.height, img.channels, k) || !boxr_mode_fits(row, self.mode.raw()) {
            return Ok(None);
        }
        let blocks = |r: usize| boxr_blocks(row, img.height, r);
        // Waves of one block per SM: bands twice as tall as at the two
        // that fit, half the halo. On the H200 the 4096² 5 × 5 box ran
        // 2.1 points faster in RGB, 3.6 in gray and 0.3 in RGBA
        // (`results/h200/box-rows-bands/`).
        let threads = BOXR_THREADS as u32;
        let Some(rows) = self.band_rows(kernel, threads, BOXR_SHARED_BYTES, 1, img.height, k, blocks)? else {
            return Ok(None);
        };
        Ok(Some(ChanPlan {
            kernel,
            grid: blocks(rows) as u32,
            shared_bytes: BOXR_SHARED_BYTES as u32,
            threads: BOXR_THREADS as u32,
            tile_px: (BOXR_BLOCK_BYTES / img.channels) as u32,
            grid_y: 1,
            rows: rows as u32,
            conv2d: None,
        }))
    }

    /// The output rows of each band of a launch of `kernel` (blocks of
    /// `threads` with `shared` bytes of dynamic shared memory, `blocks(r)`
    /// of them for bands of `r` rows) over `height` rows with window `k`:
    /// of 8 to [`SEPR_MAX_ROWS`] (at most the height), the least waves of
    /// the resident blocks (at most `most_per_sm` per SM) × (rows + halo)
    /// per band, the time of the slowest SM, the most rows among equals,
    /// within the grid's limit; else the whole height if that fits the
    /// limit.
    #[allow(clippy::too_many_arguments)]
    fn band_rows(
        &self,
        kernel: &'static str,
        threads: u32,
        shared: usize,
        most_per_sm: u32,
        height: usize,
        k: usize,
        blocks: impl Fn(usize) -> usize,
    ) -> Result<Option<usize>> {
        let info = self.gpu.info();
        let per_sm = self.gpu.max_active_blocks_per_sm(kernel, threads, shared)?.min(most_per_sm);
        let resident = info.sm_count.max(1).saturating_mul(per_sm.max(1)) as usize;
        let cost = |r: usize| blocks(r).div_ceil(resident) * (r + k - 1);
        let max_x = info.limits.max_grid_dim[0] as usize;
        let rows = (8..=SEPR_MAX_ROWS)
            .map(|r| r.min(height))
            .filter(|&r| blocks(r) <= max_x)
            .min_by_key(|&r| (cost(r), usize::MAX - r))
            .unwrap_or(height);
        Ok((blocks(rows) <= max_x).then_some(rows))
    }

    /// The register-blocked kernels' taps parameter for `kernel`: per
    /// channel, the row taps then the column taps, each centred in the
    /// window of `k`; for the box form, per channel `c` the box's tap at
    /// `2ck` and −2²³ times it at `(2c + 1)k`, and 2²³ at 1.
    fn register_taps(&self, kernel: &str, factors: &Factors, channels: usize, k: usize) -> Result<ParamArray> {
        let mut taps = vec![0.0f32; SEPR_PARAM_BYTES / 4];
        if kernel.starts_with("conv2d_sepb") {
            let boxes = self.box_taps(k).expect("the plan chose the box form for a box");
            const MAGIC: f32 = 8_388_608.0;
            for c in 0..channels {
                let t = boxes[if self.masks > 1 { c } else { 0 }];
                taps[2 * c * k] = t;
                taps[(2 * c + 1) * k] = -MAGIC * t;
            }
            taps[1] = MAGIC;
            return ParamArray::new(&taps, SEPR_PARAM_BYTES);
        }
        let (lx, ly) = self.left;
        for c in 0..channels {
            let m = if self.masks > 1 { c } else { 0 };
            for (axis, (src, w, left)) in
                [(&factors.rows, self.mw, lx), (&factors.cols, self.mh, ly)].into_iter().enumerate()
            {
                for i in 0..w {
                    taps[(2 * c + axis) * k + k / 2 + i - left] = src[m * w + i];
                }
            }
        }
        ParamArray::new(&taps, SEPR_PARAM_BYTES)
    }

    /// Filters `input` into `output`, both laid out as `img`,
    /// asynchronously on this filter's stream; returns what ran.
    pub fn run(&self, input: &DeviceView<S>, output: &mut DeviceViewMut<S>, img: Image) -> Result<ChanPlan> {
        input.check_gpu(&self.gpu, "filter2d")?;
        output.check_gpu(&self.gpu, "filter2d")?;
        img.check(input.len(), output.len())?;
        let plan = self.plan(img)?;
        if img.width == 0 || img.height == 0 {
            return Ok(plan);
        }
        let (src, dst, masks) = (input.device_ptr(), output.device_ptr(), self.dev.device_ptr());
        let (width, height, in_pitch, out_pitch) = (img.width, img.height, img.in_pitch, img.out_pitch);
        if let (Some(p), Some(gray)) = (plan.conv2d, self.gray.as_deref()) {
            let (gin, gout) = (input.as_same::<S::Acc>(), output.as_same_mut::<S::Acc>());
            if let (Some(gin), Some(mut gout)) = (gin, gout) {
                match (&gray.sep, plan.separable()) {
                    (Some(sep), true) => {
                        // The streamed kernel's layout; else the sepc kernel below.
                        if src.0.is_multiple_of(16) && dst.0.is_multiple_of(16) && in_pitch.is_multiple_of(4) {
                            let ran = sep.run(&gin, &mut gout, width, height, in_pitch)?;
                            return Ok(ChanPlan::of_conv2d(ran.fused.unwrap_or(p), true));
                        }
                    }
                    _ => {
                        let ran = gray.conv.run(Conv2dVariant::Auto, &gin, &mut gout, width, height, in_pitch)?;
                        return Ok(ChanPlan::of_conv2d(ran, false));
                    }
                }
            }
        }
        let plan = if plan.conv2d.is_some() { self.tiled_plan(img)? } else { plan };
        let aligned = |p: DevicePtr, pitch: usize, to: usize| p.0.is_multiple_of(to as u64) && pitch.is_multiple_of(to);
        let plan = if plan.kernel.starts_with("conv2d_boxr") {
            if aligned(src, in_pitch, 16) && aligned(dst, out_pitch, 16) {
                let (k, _) = self.register_window(img.channels).expect("the plan found a window");
                let t = self.box_taps(k).and_then(|t| t.first().copied()).expect("the plan chose a box");
                let taps = ParamArray::new(&[t, -8_388_608.0 * t, 8_388_608.0], BOXR_PARAM_BYTES)?;
                let (w, h, rows, mode) = (width as u32, height as u32, plan.rows, self.mode.raw());
                let args: [&dyn KernelArg; 9] = [&src, &dst, &w, &h, &in_pitch, &out_pitch, &rows, &mode, &taps];
                let cfg = LaunchConfig::new((plan.grid, plan.grid_y), (plan.threads, 1, 1))
                    .with_shared_mem(plan.shared_bytes);
                // SAFETY: the views live on this GPU and hold `img`
                // (checked), and cannot overlap; both bases and pitches are
                // multiples of 16 bytes (checked here); the plan checked the
                // layout's sizes (`boxr_fits`), one tap for every channel,
                // and `cval` 0 in constant mode; the grid holds
                // `boxr_blocks` blocks for its bands; the shared memory is
                // the kernel's ring.
                unsafe { self.gpu.launch(plan.kernel, &cfg, &args)? };
                return Ok(plan);
            }
            self.register_plan_with(img, false)?.expect("a box the rows kernels take has a register-blocked plan")
        } else {
            plan
        };
        if let (true, Some(factors)) = (plan.register_blocked(), &self.factors)
            && aligned(src, in_pitch, 16)
            && aligned(dst, out_pitch, 4)
        {
            let (k, _) = self.register_window(img.channels).expect("the plan found a window");
            let taps = self.register_taps(plan.kernel, factors, img.channels, k)?;
            let (w, h, rows, mode) = (width as u32, height as u32, plan.rows, self.mode.raw());
            let edge_rows = sepr_edge_rows(rows);
            let args: [&dyn KernelArg; 10] =
                [&src, &dst, &w, &h, &in_pitch, &out_pitch, &rows, &edge_rows, &mode, &taps];
            let cfg =
                LaunchConfig::new((plan.grid, plan.grid_y), (plan.threads, 1, 1)).with_shared_mem(plan.shared_bytes);
            // SAFETY: the views live on this GPU and hold `img`
            // (checked), and cannot overlap; the input's base and pitch
            // are multiples of 16 bytes, the output's of 4 (checked
            // here); the image is at least the window in both axes and
            // below 2^30 elements a row, `cval` is 0 in constant mode
            // (the plan); the taps parameter holds every channel's
            // centred taps; the grid covers every strip and row; the
            // shared memory is the kernel's layout's.
            unsafe { self.gpu.launch(plan.kernel, &cfg, &args)? };
            return Ok(plan);
        }
        let plan = if plan.register_blocked() {
            self.separable_plan(img, self.gpu.info().limits.max_shared_per_block_optin as usize)?
                .expect("a factored u8 mask has a separable plan")
        } else {
            plan
        };
        if let (true, Some(factors)) = (plan.separable(), &self.factors) {
            let size = std::mem::size_of::<S>();
            let aligned = |p: DevicePtr, pitch: usize| p.0.is_multiple_of(16) && (pitch * size).is_multiple_of(16);
            let flags = if aligned(src, in_pitch) && aligned(dst, out_pitch) { FLAG_VECTOR } else { 0 };
            let taps = factors.dev.device_ptr();
            let per_channel = u32::from(self.masks > 1);
            let (w, h) = (width as u32, height as u32);
            let (mw, mh, lx, ly, mode) =
                (self.mw as u32, self.mh as u32, self.left.0 as u32, self.left.1 as u32, self.mode.raw());
            let cval = self.cval as f32;
            let tile = plan.tile_px;
            let args: [&dyn KernelArg; 16] = [
                &src,
                &dst,
                &w,
                &h,
                &in_pitch,
                &out_pitch,
                &taps,
                &per_channel,
                &mw,
                &mh,
                &lx,
                &ly,
                &mode,
                &cval,
                &tile,
                &flags,
            ];
            let cfg = LaunchConfig::new(plan.grid, (plan.threads, 1, 1)).with_shared_mem(plan.shared_bytes);
            // SAFETY: the views live on this GPU and hold `img` (checked),
            // and cannot overlap; the factor buffer holds every mask's
            // `mw` row taps then `mh` column taps, with masks 1 or the
            // channel count (checked by the plan); left < mw and top < mh;
            // the tile is a multiple of 16 pixels and the shared memory is
            // the kernel's layout's for it; FLAG_VECTOR only when both
            // bases and pitches are 16-byte aligned.
            unsafe { self.gpu.launch(plan.kernel, &cfg, &args)? };
            return Ok(plan);
        }
        let stride = if self.masks > 1 { self.mw * self.mh } else { 0 };
        let (mw, mh, lx, ly, mode) =
            (self.mw as u32, self.mh as u32, self.left.0 as u32, self.left.1 as u32, self.mode.raw());
        let cval = S::Acc::from_f64(self.cval);
        let args: [&dyn KernelArg; 14] =
            [&src, &dst, &width, &height, &in_pitch, &out_pitch, &masks, &stride, &mw, &mh, &lx, &ly, &mode, &cval];
        let cfg = LaunchConfig::new(plan.grid, (CHAN_X as u32, CHAN_Y as u32, 1)).with_shared_mem(plan.shared_bytes);
        // SAFETY: the views live on this GPU and hold `img` (checked), and
        // cannot overlap; the mask buffer holds `masks × mh × mw` taps with
        // masks 1 or the channel count (checked by the plan); left < mw
        // and top < mh; the shared memory is the kernel's layout's.
        unsafe { self.gpu.launch(plan.kernel, &cfg, &args)? };
        Ok(plan)
    }

    /// The GPU this filter runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
}

impl<S: Sample> std::fmt::Debug for Filter2d<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter2d")
            .field("type", &S::NAME)
            .field("size", &(self.mw, self.mh))
            .field("masks", &self.masks)
            .field("op", &self.op)
            .field("mode", &self.mode)
            .field("cval", &self.cval)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coalesce_kernels::conv::sepchan::{sepc_padded, sepc_plane, sepc_raw_row, sepc_span};

    /// The register-blocked kernels' layout, as the kernels assume it: a
    /// strip is whole pixels and whole words and holds the row taps'
    /// reach (a lane's neighbour lends it all); the hot loop's unrolling
    /// is a multiple of the window; every channel's taps fit the
    /// parameter; the warp columns cover every strip of a row.
    #[test]
    fn register_blocked_layout_invariants() {
        use coalesce_kernels::conv::sepreg::{sepr_halo, sepr_unroll};
        for &(c, k, name, _) in REG_KERNELS {
            let (b, h, u) = (sepr_strip(c, k), sepr_halo(c, k), sepr_unroll(k));
            assert!(b.is_multiple_of(4) && b.is_multiple_of(c), "{name}: strip {b}");
            assert!(h <= b, "{name}: reach {h} over the strip {b}");
            assert!(u.is_multiple_of(k) && u >= 5, "{name}: unrolled {u}");
            assert!(2 * c * k * 4 <= SEPR_PARAM_BYTES, "{name}: taps");
            assert_eq!(register_kernel_name(c, k), Some(name));
            // The box form: pair words of bytes q and q + b/2 (q even, so
            // each two in one word), and a reach of at most two lanes'
            // pair words.
            let boxed = box_kernel_name(c, k).unwrap_or_else(|| panic!("{name}: no box form"));
            assert_eq!(boxed, name.replace("sepr", "sepb"));
            assert!((b / 2).is_multiple_of(2) && h <= b, "{boxed}: strip {b}, reach {h}");
            assert!(SEPR_WIDTHS.contains(&k));
            for width in [k, k + 1, 33, 359, 4096, 4097] {
                let strips = (width * c).div_ceil(b);
                let cols = sepr_columns(width, c, k);
                assert!(cols * SEPR_OUT_LANES >= strips && (cols - 1) * SEPR_OUT_LANES < strips, "{name} {width}");
            }
        }
        assert_eq!(register_kernel_name(3, 7), None);
    }

    /// The register-blocked kernels' tasks cover every (column, row) once,
    /// and no warp past [`sepr_warps`] has one.
    #[test]
    fn register_blocked_tasks_cover_the_image() {
        for (cols, height, rows) in [(1u32, 5u32, 8u32), (2, 9, 8), (3, 70, 8), (35, 4096, 70), (9, 301, 33), (4, 1, 1)]
        {
            let edge_rows = sepr_edge_rows(rows);
            let warps = sepr_warps(cols, height, rows, edge_rows);
            let mut seen = vec![0u8; (cols * height) as usize];
            for w in 0..warps + 40 {
                match sepr_task(w, cols, height, rows, edge_rows) {
                    Some((col, y0, y_end)) => {
                        assert!(
                            w < warps && col < cols && y0 < y_end && y_end <= height,
                            "{cols} {height} {rows}: {w}"
                        );
                        for y in y0..y_end {
                            seen[(y * cols + col) as usize] += 1;
                        }
                    }
                    None => assert!(w >= warps, "{cols} {height} {rows}: warp {w} of {warps} has no task"),
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{cols} {height} {rows}: {seen:?}");
        }
    }

    /// The separable kernels' shared-memory layout, as the kernels assume
    /// it: every region 16-byte aligned, the raw row long enough for the
    /// column pass at any alignment shift, the planes on distinct banks.
    #[test]
    fn separable_layout_invariants() {
        for c in CHANNELS {
            for size in [1usize, 2, 4] {
                for tile in sepc_tiles(c) {
                    for w in [1usize, 2, 3, 5, 8, 17, 31, 41] {
                        let (px, py) = (sepc_padded(w), sepc_padded(w));
                        let plane = sepc_plane(c, tile, w);
                        assert_eq!(plane % 4, 0, "plane of {c} channels, tile {tile}, w {w}");
                        assert!(plane >= SEPC_ROWS * sepc_span(tile, w));
                        if c > 1 {
                            assert_ne!(plane % 32, 0, "{c} channels' planes would start on one bank");
                        }
                        let v = 16 / size;
                        let rw = sepc_raw_row(c, size, tile, w);
                        assert_eq!(rw % v, 0, "raw rows in whole 16-byte chunks");
                        // The column pass reads raw columns j + d, j < C·span, d < v.
                        assert!(rw >= c * sepc_span(tile, w) + v - 1);
                        // Taps and planes are f32; the raw tile starts 16-byte aligned.
                        assert_eq!((c * (px + py) + c * plane) * 4 % 16, 0);
                        let bytes = sepc_shared_bytes(c, size, tile, w, w);
                        assert_eq!(bytes, (c * (px + py) + c * plane) * 4 + (SEPC_ROWS + py) * rw * size);
                    }
                }
            }
        }
    }

    /// A tile narrow enough for 76 KiB (three blocks per SM on the H100,
    /// what `Filter2d` looks for first) exists for every mask up to 17 × 17
    /// in every type and channel count. (Wider masks take a wider tile up to
    /// the device's limit, else the general kernels.)
    #[test]
    fn separable_tiles_fit() {
        for c in CHANNELS {
            for size in [1usize, 2, 4] {
                for w in [3usize, 5, 9, 17] {
                    assert!(
                        sepc_tiles(c).iter().any(|&t| sepc_shared_bytes(c, size, t, w, w) <= 76 * 1024),
                        "{c} channels of {size}-byte elements, {w} x {w}"
                    );
                }
            }
        }
    }
}
