//! Batched 1D filters: every signal of a 2D array (each row, or each
//! column) filtered in one launch, with one mask for all signals or one
//! per signal (a depthwise convolution), over `f32`, `f64`, `f16`, `bf16`,
//! `u8` and `u16` data, with `scipy.ndimage`'s `axis`, `origin`, `cval`
//! and (for Gaussians) `truncate`.
//!
//! ```no_run
//! use coalesce_host::conv::batch::{Filter1d, Shape};
//! use coalesce_host::conv::{Boundary, ConvOp};
//! use coalesce_host::{Gpu, half::bf16};
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = Gpu::new()?;
//! let (channels, len) = (64, 1 << 16);
//! let data: Vec<bf16> = (0..channels * len).map(|i| bf16::from_f32((i % 97) as f32)).collect();
//! // One 5-tap mask per channel (f32 taps: bf16 data accumulates in f32).
//! let masks: Vec<f32> = (0..channels * 5).map(|i| (i % 5) as f32 / 10.0).collect();
//! let filter = Filter1d::<bf16>::depthwise(&gpu, &masks, 5, ConvOp::Correlate, Boundary::Reflect)?;
//! let input = gpu.upload(&data)?;
//! let mut output = gpu.alloc_zeroed::<bf16>(data.len())?;
//! let plan = filter.run(&input.as_view(), &mut output.as_view_mut(), Shape::new(channels, len))?;
//! println!("ran {}", plan.kernel);
//! # Ok(())
//! # }
//! ```
//!
//! # Semantics (scipy's)
//!
//! With `axis = -1` (or 1, the default) each row is a signal; with
//! `axis = 0` each column is. Signal `s` of length `n` becomes
//! `out[i] = Σ_j x[i − left + j] · m_s[j]` where `m_s` is the signal's
//! correlation taps (the mask reversed for [`ConvOp::Convolve`]) and
//! `left = w/2 + origin` (for a convolution, `origin` is negated, and
//! lowered by one for even widths, as `scipy.ndimage.convolve1d` does).
//! `origin` must satisfy `−(w/2) ≤ origin ≤ (w−1)/2` (both rounded down).
//! Positions outside the signal follow the [`Boundary`] mode;
//! [`Boundary::Zero`] is scipy's `constant` with `cval` (default 0).
//!
//! # Types and rounding
//!
//! [`Sample`] lists the storage types. `f64` data accumulates in `f64`
//! with `f64` taps; every other type accumulates in `f32` with `f32` taps
//! (a mask of the other type is an error naming the rule). Outputs:
//! `f16` and `bf16` are rounded to nearest, ties to even; `u8` and `u16`
//! are rounded to the nearest integer, ties to even, and saturated
//! (`−3.7 → 0`, `300.2 → 255` for `u8`; NaN gives 0). OpenCV's
//! `saturate_cast<uchar>(float)` rounds with `cvRound`, also to nearest
//! with ties to even on x86 and CUDA, and saturates the same way; scipy
//! instead truncates toward zero when writing integer outputs (and wraps
//! out-of-range values), so integer results here differ from scipy's by
//! design.

use std::sync::{Arc, Mutex};

use bytemuck::Pod;
use cust::memory::DeviceCopy;

pub use coalesce_kernels::conv::batch::{
    COLS_OUTPUTS, COLS_ROWS, COLS_X, COLS_Y, FLAG_HALF_STEP, FLAG_TENSOR, FLAG_VECTOR, ROWS_DRAW_TILES, ROWS_FIXED_MAX,
    ROWS_GROUPS, ROWS_OUTPUTS, ROWS_THREADS, cols_shared_elems, rows_barrier_bytes, rows_bulk, rows_direct, rows_draw,
    rows_drawn_tiles, rows_fixed_chunks, rows_fma_elems, rows_kernel_chunks, rows_lead, rows_shared_bytes,
    rows_shared_elems, rows_span, rows_stage_bytes, rows_stages, rows_tc_shared_bytes,
};
pub use coalesce_kernels::conv::batch_tensor::{
    RT_MAX_LEN, RT_MIN_TAPS, RT_TILE_SCALE, rt_half_last, rt_max_steps, rt_steps,
};

use super::{Boundary, ConvElem, ConvOp};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{DevicePtr, KernelArg, LaunchConfig};
use crate::memory::{DeviceBuffer, DeviceView, DeviceViewMut};

/// A storage type of the batched filters: how it widens to its
/// accumulation type and how results are written back (the output rule).
pub trait Sample: DeviceCopy + Pod + Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// `f32`, `f64`, `f16`, `bf16`, `u8` or `u16`: the kernels' suffix.
    const NAME: &'static str;
    /// The oldest compute capability (`10·major + minor`) whose kernels
    /// take this type.
    const MIN_SM: u32;
    /// The accumulation and mask type.
    type Acc: ConvElem;
    /// The value, exactly, as `f64`.
    fn to_f64(self) -> f64;
    /// The output rule: what a kernel writes for the accumulated `v`.
    fn from_acc(v: Self::Acc) -> Self;
    /// `v` rounded to the accumulation type, then by the output rule.
    fn from_f64(v: f64) -> Self {
        Self::from_acc(Self::Acc::from_f64(v))
    }
}

impl Sample for f32 {
    const NAME: &'static str = "f32";
    const MIN_SM: u32 = 0;
    type Acc = f32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_acc(v: f32) -> f32 {
        v
    }
}

impl Sample for f64 {
    const NAME: &'static str = "f64";
    const MIN_SM: u32 = 0;
    type Acc = f64;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_acc(v: f64) -> f64 {
        v
    }
}

impl Sample for half::f16 {
    const NAME: &'static str = "f16";
    const MIN_SM: u32 = 0;
    type Acc = f32;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_acc(v: f32) -> half::f16 {
        half::f16::from_f32(v)
    }
}

impl Sample for half::bf16 {
    const NAME: &'static str = "bf16";
    const MIN_SM: u32 = 80;
    type Acc = f32;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_acc(v: f32) -> half::bf16 {
        half::bf16::from_f32(v)
    }
}

/// The integer output rule: nearest, ties to even, saturated to
/// `0..=max`; NaN gives 0.
fn round_saturate(v: f32, max: f32) -> f32 {
    if v.is_nan() { 0.0 } else { v.round_ties_even().clamp(0.0, max) }
}

impl Sample for u8 {
    const NAME: &'static str = "u8";
    const MIN_SM: u32 = 0;
    type Acc = f32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_acc(v: f32) -> u8 {
        round_saturate(v, 255.0) as u8
    }
}

impl Sample for u16 {
    const NAME: &'static str = "u16";
    const MIN_SM: u32 = 0;
    type Acc = f32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_acc(v: f32) -> u16 {
        round_saturate(v, 65535.0) as u16
    }
}

/// Which signals of a 2D array a filter runs along (`scipy.ndimage`'s
/// `axis` for a 2D array).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// Each column is a signal (`axis = 0`, or `-2`).
    Columns,
    /// Each row is a signal (`axis = 1`, or `-1`; the default).
    Rows,
}

impl Axis {
    /// The axis scipy numbers `axis` for a 2D array (`-2 ..= 1`).
    pub fn from_scipy(axis: isize) -> Result<Axis> {
        match axis {
            0 | -2 => Ok(Axis::Columns),
            1 | -1 => Ok(Axis::Rows),
            _ => Err(Error::InvalidArgument {
                op: "filter1d",
                message: format!("axis {axis} is out of range for a 2D array (0 or -2: columns; 1 or -1: rows)"),
            }),
        }
    }

    /// scipy's number for it (0 or 1).
    pub fn scipy(self) -> usize {
        match self {
            Axis::Columns => 0,
            Axis::Rows => 1,
        }
    }
}

/// The shape of a 2D array of `rows × cols` elements in memory: row `r`
/// starts `r · pitch` elements after the first (pitches in elements, at
/// least `cols`), separately for the input and the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Rows.
    pub rows: usize,
    /// Columns (elements per row).
    pub cols: usize,
    /// Elements from one input row to the next.
    pub in_pitch: usize,
    /// Elements from one output row to the next.
    pub out_pitch: usize,
}

impl Shape {
    /// A dense `rows × cols` array (pitch = `cols`) in and out.
    pub fn new(rows: usize, cols: usize) -> Shape {
        Shape { rows, cols, in_pitch: cols, out_pitch: cols }
    }

    /// One signal of `n` samples.
    pub fn signal(n: usize) -> Shape {
        Shape::new(1, n)
    }

    /// This shape with row pitches `in_pitch` and `out_pitch` (elements).
    pub fn with_pitches(self, in_pitch: usize, out_pitch: usize) -> Shape {
        Shape { in_pitch, out_pitch, ..self }
    }

    /// Whether the rows kernels may load and store 16 bytes at a time
    /// ([`BatchPlan::vector`]) on arrays of `size`-byte elements at
    /// `input` and `output`: every row of both starts on 16 bytes (the
    /// bases do, and with more than one row so do the pitches; a single
    /// row's pitch never applies, whatever its length).
    pub fn vector_access(self, input: DevicePtr, output: DevicePtr, size: usize) -> bool {
        let pitched = |pitch: usize| self.rows <= 1 || pitch.saturating_mul(size).is_multiple_of(16);
        input.0.is_multiple_of(16) && output.0.is_multiple_of(16) && pitched(self.in_pitch) && pitched(self.out_pitch)
    }

    /// Elements a buffer needs to hold these rows at `pitch`.
    fn extent(self, pitch: usize) -> Option<usize> {
        if self.rows == 0 || self.cols == 0 {
            return Some(0);
        }
        (self.rows - 1).checked_mul(pitch)?.checked_add(self.cols)
    }

    /// Checks the pitches and the buffers' lengths.
    fn check(self, input: usize, output: usize) -> Result<()> {
        for (name, pitch) in [("input", self.in_pitch), ("output", self.out_pitch)] {
            if pitch < self.cols && self.rows > 1 {
                return Err(Error::InvalidArgument {
                    op: "filter1d",
                    message: format!("the {name} pitch ({pitch} elements) is less than the row length ({})", self.cols),
                });
            }
        }
        let overflow = || Error::InvalidArgument {
            op: "filter1d",
            message: format!("a {} x {} array at these pitches overflows the address space", self.rows, self.cols),
        };
        let need_in = self.extent(self.in_pitch).ok_or_else(overflow)?;
        let need_out = self.extent(self.out_pitch).ok_or_else(overflow)?;
        if input < need_in {
            return Err(Error::LengthMismatch { op: "filter1d (input)", expected: need_in, got: input });
        }
        if output < need_out {
            return Err(Error::LengthMismatch { op: "filter1d (output)", expected: need_out, got: output });
        }
        Ok(())
    }
}

/// `left` (taps left of the centre of the correlation the kernels
/// compute) for scipy's `origin` with a `w`-tap mask under `op`; an origin
/// outside `−(w/2) ..= (w−1)/2` is an error naming that range.
pub fn left_for_origin(w: usize, origin: isize, op: ConvOp) -> Result<usize> {
    let (lo, hi) = (-((w / 2) as isize), ((w.max(1) - 1) / 2) as isize);
    if w == 0 || origin < lo || origin > hi {
        return Err(Error::InvalidArgument {
            op: "filter1d",
            message: format!(
                "origin {origin} is out of range for a {w}-tap mask: scipy allows -(w/2) ..= (w-1)/2, here {lo} ..= {hi}"
            ),
        });
    }
    let half = (w / 2) as isize;
    let left = match op {
        ConvOp::Correlate => half + origin,
        ConvOp::Convolve => half - origin - if w.is_multiple_of(2) { 1 } else { 0 },
    };
    Ok(left as usize)
}

/// The launch a batched filter makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchPlan {
    /// The kernel that runs.
    pub kernel: &'static str,
    /// The axis the signals lie along.
    pub axis: Axis,
    /// Signals.
    pub signals: usize,
    /// Samples per signal.
    pub len: usize,
    /// Blocks (persistent: each walks tiles grid-stride).
    pub grid: u32,
    /// Threads per block, `(x, y)`.
    pub block: (u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Whether loads and stores go 16 bytes (4 elements) at a time.
    pub vector: bool,
    /// Whether the tiles away from a row's ends run on tensor cores
    /// (`conv1d_rows_tc{S}_bf16`, see [`Filter1d::with_tensor_cores`]).
    pub tensor: bool,
    /// Tiles that the blocks draw from a work counter,
    /// [`ROWS_DRAW_TILES`] at a time, once their walks over the others
    /// are done (the rows kernels; 0: walks only).
    pub drawn: usize,
}

impl BatchPlan {
    /// The launch configuration.
    pub fn launch_config(&self) -> LaunchConfig {
        LaunchConfig::new(self.grid, (self.block.0, self.block.1, 1)).with_shared_mem(self.shared_bytes)
    }
}

macro_rules! kernel_names {
    ($($ty:literal),*) => {
        /// Per type: the any-width rows kernel, the unrolled ones for
        /// `1..=8` chunks, and the columns kernel.
        const KERNELS: &[(&str, [&str; 10])] = &[$(($ty, [
            concat!("conv1d_rows_", $ty), concat!("conv1d_rows1_", $ty), concat!("conv1d_rows2_", $ty),
            concat!("conv1d_rows3_", $ty), concat!("conv1d_rows4_", $ty), concat!("conv1d_rows5_", $ty),
            concat!("conv1d_rows6_", $ty), concat!("conv1d_rows7_", $ty), concat!("conv1d_rows8_", $ty),
            concat!("conv1d_cols_", $ty),
        ])),*];
    };
}
kernel_names!("f32", "f64", "f16", "bf16", "u8", "u16");

/// The rows kernels' tensor form for bf16, by steps `1..=3` (`rt_max_steps`).
const TC_KERNELS: [&str; 3] = ["conv1d_rows_tc1_bf16", "conv1d_rows_tc2_bf16", "conv1d_rows_tc3_bf16"];

/// The kernel for storage type `ty`: the columns kernel, or the rows
/// kernel with `chunks` unrolled chunks (0: any width).
pub fn kernel_name(ty: &str, axis: Axis, chunks: usize) -> Option<&'static str> {
    let names = KERNELS.iter().find(|(t, _)| *t == ty)?.1;
    match axis {
        Axis::Columns => Some(names[9]),
        Axis::Rows if chunks <= 8 => Some(names[chunks]),
        Axis::Rows => None,
    }
}

/// A batched 1D filter ready to run: masks on the device, operation,
/// boundary mode, `cval`, `origin` and axis. Clones share the masks.
#[derive(Clone)]
pub struct Filter1d<S: Sample> {
    gpu: Gpu,
    /// Correlation taps, `masks × w`.
    taps: Vec<S::Acc>,
    w: usize,
    masks: usize,
    op: ConvOp,
    mode: Boundary,
    cval: f64,
    origin: isize,
    left: usize,
    axis: Axis,
    tensor: bool,
    /// Whether the tensor-core form can take the taps (all finite, with
    /// finite bf16 heads): checked once here, not per launch.
    tensor_taps: bool,
    dev: Arc<DeviceBuffer<S::Acc>>,
    /// The rows kernels' work counter: two words, zero between launches
    /// (each launch's last block puts them back). The launches that share
    /// it are ordered by the buffer's tracking; clones share it (they run
    /// on the same stream), [`Filter1d::on`] makes a new one.
    sched: Arc<Mutex<DeviceBuffer<u32>>>,
}

impl<S: Sample> Filter1d<S> {
    /// One mask for every signal. The taps' type `M` must be the data's
    /// accumulation type (`f64` for `f64` data, `f32` for the others).
    pub fn new<M: ConvElem>(gpu: &Gpu, mask: &[M], op: ConvOp, mode: Boundary) -> Result<Self> {
        Self::build(gpu, mask, mask.len(), op, mode)
    }

    /// One mask of `width` taps per signal (a depthwise convolution):
    /// `masks` holds them one after another, signal 0's first; their count
    /// must equal the signals of each run.
    pub fn depthwise<M: ConvElem>(gpu: &Gpu, masks: &[M], width: usize, op: ConvOp, mode: Boundary) -> Result<Self> {
        if width == 0 || !masks.len().is_multiple_of(width) {
            return Err(Error::InvalidArgument {
                op: "filter1d",
                message: format!("{} taps are not a whole number of {width}-tap masks", masks.len()),
            });
        }
        Self::build(gpu, masks, width, op, mode)
    }

    /// A Gaussian of standard deviation `sigma` (samples), cut at
    /// `truncate` standard deviations, as `scipy.ndimage.gaussian_filter1d`
    /// builds it ([`super::gaussian_truncated`]).
    pub fn gaussian(gpu: &Gpu, sigma: f64, truncate: f64, mode: Boundary) -> Result<Self> {
        let taps = super::gaussian_truncated::<S::Acc>(sigma, truncate)?;
        Self::build(gpu, &taps, taps.len(), ConvOp::Correlate, mode)
    }

    fn build<M: ConvElem>(gpu: &Gpu, masks: &[M], w: usize, op: ConvOp, mode: Boundary) -> Result<Self> {
        if M::NAME != <S::Acc as ConvElem>::NAME {
            return Err(Error::InvalidArgument {
                op: "filter1d",
                message: format!(
                    "{} data takes {} taps, not {} (f64 data accumulates in f64; every other type in f32)",
                    S::NAME,
                    <S::Acc as ConvElem>::NAME,
                    M::NAME
                ),
            });
        }
        if w == 0 || masks.is_empty() {
            return Err(Error::InvalidArgument { op: "filter1d", message: "the mask is empty (width 0)".into() });
        }
        if u32::try_from(w).is_err() {
            return Err(Error::InvalidArgument {
                op: "filter1d",
                message: format!("a mask of {w} taps is wider than the kernels accept (2^32 - 1)"),
            });
        }
        let mut taps = Vec::with_capacity(masks.len());
        for mask in masks.chunks(w) {
            let (t, _) = op.correlation_taps(mask);
            taps.extend(t.into_iter().map(|v| S::Acc::from_f64(v.to_f64())));
        }
        let dev = gpu.upload(&taps)?;
        // The tensor form splits each tap into bf16 parts: its head (the tap
        // rounded to bf16) must be finite.
        let tensor_taps = taps.iter().all(|m| half::bf16::from_f64(m.to_f64()).is_finite());
        let left = left_for_origin(w, 0, op)?;
        Ok(Filter1d {
            gpu: gpu.clone(),
            taps,
            w,
            masks: masks.len() / w,
            op,
            mode,
            cval: 0.0,
            origin: 0,
            left,
            axis: Axis::Rows,
            tensor: true,
            tensor_taps,
            dev: Arc::new(dev),
            sched: Arc::new(Mutex::new(gpu.alloc_zeroed(2)?)),
        })
    }

    /// This filter with `cval`, the value outside the signal in constant
    /// mode ([`Boundary::Zero`]; ignored by the other modes). Default 0.
    pub fn with_cval(mut self, cval: f64) -> Self {
        self.cval = cval;
        self
    }

    /// This filter with scipy's `origin` (see the module docs): an origin
    /// outside `−(w/2) ..= (w−1)/2` is an error.
    pub fn with_origin(mut self, origin: isize) -> Result<Self> {
        self.left = left_for_origin(self.w, origin, self.op)?;
        self.origin = origin;
        Ok(self)
    }

    /// This filter along scipy's `axis` of a 2D array (0 or -2: columns;
    /// 1 or -1: rows, the default).
    pub fn with_axis(mut self, axis: isize) -> Result<Self> {
        self.axis = Axis::from_scipy(axis)?;
        Ok(self)
    }

    /// This filter with the tensor-core form allowed (`true`, the default)
    /// or not. It serves bf16 rows (`axis = -1`) on sm_80 and newer, masks
    /// of [`RT_MIN_TAPS`] to [`ROWS_FIXED_MAX`] finite taps, 16-byte
    /// aligned arrays, rows shorter than [`RT_MAX_LEN`]: the tiles away
    /// from a row's ends multiply on the tensor cores (taps split in three
    /// bf16 parts, `f32` accumulation), within the same error bound as the
    /// FMA kernels; the rest runs as before. `false` keeps every tile on
    /// the FMA kernels.
    pub fn with_tensor_cores(mut self, allow: bool) -> Self {
        self.tensor = allow;
        self
    }

    /// Whether the tensor-core form may run (see
    /// [`Filter1d::with_tensor_cores`]).
    pub fn tensor_cores(&self) -> bool {
        self.tensor
    }

    /// This filter queued on `stream` (same masks, shared).
    pub fn on(&self, stream: &crate::Stream) -> Result<Self> {
        let gpu = self.gpu.on(stream)?;
        let sched = Arc::new(Mutex::new(gpu.alloc_zeroed(2)?));
        Ok(Filter1d { gpu, taps: self.taps.clone(), dev: self.dev.clone(), sched, ..*self })
    }

    /// Mask width.
    pub fn width(&self) -> usize {
        self.w
    }

    /// Masks: 1 (shared by every signal) or one per signal.
    pub fn masks(&self) -> usize {
        self.masks
    }

    /// The correlation taps, `masks() × width()`.
    pub fn taps(&self) -> &[S::Acc] {
        &self.taps
    }

    /// Taps left of the centre in the correlation the kernels compute.
    pub fn left(&self) -> usize {
        self.left
    }

    /// scipy's `origin`.
    pub fn origin(&self) -> isize {
        self.origin
    }

    /// The value outside the signal in constant mode.
    pub fn cval(&self) -> f64 {
        self.cval
    }

    /// The axis.
    pub fn axis(&self) -> Axis {
        self.axis
    }

    /// The operation.
    pub fn op(&self) -> ConvOp {
        self.op
    }

    /// The boundary mode.
    pub fn mode(&self) -> Boundary {
        self.mode
    }

    /// Signals and samples per signal of `shape` along this filter's axis.
    pub fn signals(&self, shape: Shape) -> (usize, usize) {
        match self.axis {
            Axis::Rows => (shape.rows, shape.cols),
            Axis::Columns => (shape.cols, shape.rows),
        }
    }

    /// The launch [`Filter1d::run`] makes for `shape` (vector access
    /// assumed allowed; `run` decides it from the buffers' addresses).
    pub fn plan(&self, shape: Shape) -> Result<BatchPlan> {
        self.plan_with(shape, true, None)
    }

    /// `part`: `Some(first)` when the run covers signals `first ..` of a
    /// depthwise filter's masks (a part of its batch), `None` when it
    /// covers them all.
    fn plan_with(&self, shape: Shape, vector: bool, part: Option<usize>) -> Result<BatchPlan> {
        let info = self.gpu.info();
        let sm = info.cc_major * 10 + info.cc_minor;
        if sm < S::MIN_SM {
            return Err(Error::Unsupported {
                op: "filter1d",
                message: format!(
                    "{} data needs sm_{} or newer (native conversions); {} is sm_{sm}",
                    S::NAME,
                    S::MIN_SM,
                    info.name
                ),
            });
        }
        let (signals, len) = self.signals(shape);
        let fits = match part {
            None => self.masks == signals,
            Some(first) => first.saturating_add(signals) <= self.masks,
        };
        if self.masks > 1 && !fits {
            return Err(Error::InvalidArgument {
                op: "filter1d",
                message: format!(
                    "{} masks for {signals} signals (axis {}): a depthwise filter takes one mask per signal",
                    self.masks,
                    self.axis.scipy()
                ),
            });
        }
        let acc = std::mem::size_of::<S::Acc>();
        let limit = info.limits.max_shared_per_block_optin as usize;
        let mut tensor = false;
        let (kernel, block, bytes, tiles) = match self.axis {
            Axis::Rows => {
                // The kernels' block is a constant; every device of
                // compute capability 7.0 or newer allows it.
                let t = ROWS_THREADS as u32;
                if t > info.limits.max_threads_per_block {
                    return Err(Error::InvalidArgument {
                        op: "filter1d",
                        message: format!(
                            "the rows kernels run {t} threads per block; this device allows {}",
                            info.limits.max_threads_per_block
                        ),
                    });
                }
                let chunks = rows_fixed_chunks(self.w).unwrap_or(0);
                let tiles = |scale: usize| {
                    signals.saturating_mul(len.div_ceil(ROWS_OUTPUTS * ROWS_GROUPS * scale * t as usize))
                };
                tensor = self.tensor
                    && S::NAME == "bf16"
                    && sm >= 80
                    && vector
                    && self.w >= RT_MIN_TAPS
                    && chunks > 0
                    && self.tensor_taps
                    && len < RT_MAX_LEN
                    && tiles(RT_TILE_SCALE) <= u32::MAX as usize;
                if tensor {
                    (
                        TC_KERNELS[rt_max_steps(chunks) - 1],
                        (t, 1),
                        rows_tc_shared_bytes(t as usize, self.w),
                        tiles(RT_TILE_SCALE),
                    )
                } else {
                    let chunks = rows_kernel_chunks(self.w, self.left, std::mem::size_of::<S>()).unwrap_or(0);
                    let kernel = kernel_name(S::NAME, Axis::Rows, chunks).expect("every type has rows kernels");
                    (kernel, (t, 1), rows_shared_bytes(t as usize, self.w, std::mem::size_of::<S>(), acc), tiles(1))
                }
            }
            Axis::Columns => {
                let kernel = kernel_name(S::NAME, Axis::Columns, 0).expect("every type has a columns kernel");
                let tiles = signals.div_ceil(COLS_X).saturating_mul(len.div_ceil(COLS_ROWS));
                (kernel, (COLS_X as u32, COLS_Y as u32), cols_shared_elems(self.w).saturating_mul(acc), tiles)
            }
        };
        if bytes > limit {
            return Err(Error::InvalidArgument {
                op: "filter1d",
                message: format!(
                    "a {}-tap mask needs {bytes} bytes of shared memory in {kernel}; this device allows {limit} per block",
                    self.w
                ),
            });
        }
        let per_sm = self.gpu.max_active_blocks_per_sm(kernel, block.0 * block.1, bytes)?;
        let resident = info.sm_count.max(1).saturating_mul(per_sm.max(1)) as usize;
        let grid = tiles.clamp(1, resident.min(info.limits.max_grid_dim[0] as usize)) as u32;
        let draws = self.axis == Axis::Rows && rows_draw(tensor, std::mem::size_of::<S>());
        let drawn = if draws { rows_drawn_tiles(tiles, grid as usize) } else { 0 };
        Ok(BatchPlan {
            kernel,
            axis: self.axis,
            signals,
            len,
            grid,
            block,
            shared_bytes: bytes as u32,
            vector,
            tensor,
            drawn,
        })
    }

    /// Filters `input` into `output`, both laid out as `shape`,
    /// asynchronously on this filter's stream; returns what ran. The
    /// buffers must not overlap (one is borrowed mutably).
    pub fn run(&self, input: &DeviceView<S>, output: &mut DeviceViewMut<S>, shape: Shape) -> Result<BatchPlan> {
        self.run_part(None, input, output, shape)
    }

    /// [`Filter1d::run`] over signals `first .. first + signals` of a
    /// depthwise filter's masks (0 for a filter with one mask): the
    /// streaming filters run a part of a batch at a time.
    pub(crate) fn run_from(
        &self,
        first: usize,
        input: &DeviceView<S>,
        output: &mut DeviceViewMut<S>,
        shape: Shape,
    ) -> Result<BatchPlan> {
        self.run_part(Some(first), input, output, shape)
    }

    fn run_part(
        &self,
        part: Option<usize>,
        input: &DeviceView<S>,
        output: &mut DeviceViewMut<S>,
        shape: Shape,
    ) -> Result<BatchPlan> {
        // One mask serves every signal: no part to offset into.
        let part = part.filter(|_| self.masks > 1);
        let first = part.unwrap_or(0);
        input.check_gpu(&self.gpu, "filter1d")?;
        output.check_gpu(&self.gpu, "filter1d")?;
        shape.check(input.len(), output.len())?;
        let (src, dst) = (input.device_ptr(), output.device_ptr());
        let vector = shape.vector_access(src, dst, std::mem::size_of::<S>());
        let plan = self.plan_with(shape, vector, part)?;
        if plan.signals == 0 || plan.len == 0 {
            return Ok(plan);
        }
        let (signals, n) = (plan.signals, plan.len);
        let (in_pitch, out_pitch) = (shape.in_pitch, shape.out_pitch);
        let tap_bytes = (first * self.w * std::mem::size_of::<S::Acc>()) as u64;
        let masks = DevicePtr(self.dev.device_ptr().0 + tap_bytes);
        let stride = if self.masks > 1 { self.w } else { 0 };
        let (w, left, mode) = (self.w as u32, self.left as u32, self.mode.raw());
        let cval = S::Acc::from_f64(self.cval);
        // The tensor form's last step is a half one when the mask's band
        // leaves its second half empty (rt_half_last).
        let half = plan.tensor && {
            let steps = rt_max_steps(rows_fixed_chunks(self.w).unwrap_or(0));
            rt_half_last(steps, self.w, self.left)
        };
        let flags = if vector { FLAG_VECTOR } else { 0 }
            | if plan.tensor { FLAG_TENSOR } else { 0 }
            | if half { FLAG_HALF_STEP } else { 0 };
        // The work counter, when the launch draws tiles: held for the
        // launch, ordered after its earlier launches on other streams (a
        // write).
        let mut sched = (plan.drawn > 0).then(|| self.sched.lock().unwrap_or_else(|e| e.into_inner()));
        let sched_ptr = match sched.as_mut() {
            Some(counter) => {
                let counter = counter.as_view_mut();
                counter.check_gpu(&self.gpu, "filter1d")?;
                counter.device_ptr()
            }
            None => DevicePtr(0),
        };
        let drawn = plan.drawn;
        let args: [&dyn KernelArg; 15] = [
            &src, &dst, &signals, &n, &in_pitch, &out_pitch, &masks, &stride, &w, &left, &mode, &cval, &flags,
            &sched_ptr, &drawn,
        ];
        // SAFETY: the views live on this GPU and hold `shape` (checked
        // above), and cannot overlap; the mask buffer holds `masks × w`
        // taps with masks 1, or at least `first + signals` read from mask
        // `first` on (checked by the plan); `left <
        // w`; the shared memory is the kernel's layout function's; vector
        // access only when both bases and pitches are 16-byte multiples;
        // when it draws, the counter's two words are zero at the launch
        // (the launch before that used them, ordered before this one, left
        // them so) and stay locked until this launch is queued; otherwise
        // the pointer is null and `drawn` 0.
        unsafe { self.gpu.launch(plan.kernel, &plan.launch_config(), &args)? };
        drop(sched);
        Ok(plan)
    }

    /// The GPU this filter runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
}

impl<S: Sample> std::fmt::Debug for Filter1d<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter1d")
            .field("type", &S::NAME)
            .field("width", &self.w)
            .field("masks", &self.masks)
            .field("op", &self.op)
            .field("mode", &self.mode)
            .field("cval", &self.cval)
            .field("origin", &self.origin)
            .field("axis", &self.axis)
            .finish_non_exhaustive()
    }
}
