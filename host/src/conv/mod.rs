//! Convolution (lesson 001): constant-memory masks, tiled kernels with halo
//! cells, every `scipy.ndimage` boundary mode, `f32` and `f64`.
//!
//! ```no_run
//! use coalesce_host::conv::{Boundary, Conv1d, Conv1dVariant, ConvOp, gaussian};
//! use coalesce_host::Gpu;
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = Gpu::new()?;
//! let signal: Vec<f32> = (0..1_000_000).map(|i| (i as f32 * 0.01).sin()).collect();
//! let mask = gaussian::<f32>(5.0)?; // 41 taps, sums to 1
//! let conv = Conv1d::new(&gpu, &mask, ConvOp::Correlate, Boundary::Reflect)?;
//! let input = gpu.upload(&signal)?;
//! let mut output = gpu.alloc_zeroed::<f32>(signal.len())?;
//! let plan = conv.run(Conv1dVariant::Auto, &input.as_view(), &mut output.as_view_mut())?;
//! println!("ran {}", plan.kernel);
//! # Ok(())
//! # }
//! ```
//!
//! # Semantics
//!
//! [`ConvOp::Correlate`] is the lesson's formula
//! `P[i] = Σ_j N[i − w/2 + j] · M[j]` and equals
//! `scipy.ndimage.correlate1d(N, M, mode=…)`; [`ConvOp::Convolve`] equals
//! `scipy.ndimage.convolve1d`: `P[i] = Σ_j M[j] · N[i + w/2 − j]`. Both
//! follow scipy exactly for even widths too (`w/2` rounds down, so an even
//! mask has one more tap left of the centre than right when correlating,
//! and the reverse when convolving). Ghost cells follow [`Boundary`]; see
//! its table. 2D convolutions apply the same rules per axis.
//!
//! # Which kernel runs
//!
//! [`Conv1dVariant`] names the lesson's four kernels, the fast one and the tensor-core one
//! ([`Conv1dVariant::Tensor`], `f32` on sm_80 and newer, at the convolution's [`Precision`]).
//! Masks of up to [`max_constant_taps`] taps live in constant memory: each
//! launch passes them by value in the kernel's parameter space (constant
//! bank 0, [`PARAM_MASK_BYTES`]), so no mask is ever shared between
//! launches, threads or streams. Wider masks make every variant read the
//! mask from global memory instead (the `_gm_` kernels;
//! [`Conv1dVariant::Const`] then runs the basic kernel). The plan returned
//! by [`Conv1d::run`] says what ran.

use std::sync::{Arc, Mutex};

use bytemuck::Pod;
use cust::memory::DeviceCopy;

pub use coalesce_kernels::conv::conv1d::{
    FAST_FIXED_MAX, FAST_LOADS, FAST_OUTPUTS, FAST_STAGES, fast_fixed_chunks, fast_shared_elems, fast_shared_total,
    tiled_l2_shared_elems, tiled_shared_elems,
};
pub use coalesce_kernels::conv::tensor::{
    TC_INPUT_ALIGN, TC_MIN_TAPS, TC_THREADS, TC_TILE, TC2_MIN_TAPS, TcProducts, round_bf16, round_tf32, tc_front_pad,
    tc_ksteps, tc_mask_table, tc_mask_table2, tc_padded, tc_shared_bytes, tc_span, tc_table_floats, tc2_fits,
};
pub use coalesce_kernels::conv::{Boundary, FIXED_MASK_TAPS, PARAM_MASK_BYTES, SHORT_MASK_KERNELS};

use crate::device::DeviceLimits;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{DevicePtr, KernelArg, LaunchConfig, ParamArray};
use crate::memory::{DeviceBuffer, DeviceView, DeviceViewMut};
use crate::module::PtxModule;

pub mod batch;
pub mod channels;
pub mod conv2d;
pub mod reference;
pub mod reference2d;
pub mod reference_batch;

pub use conv2d::{Conv2d, Conv2dPlan, Conv2dVariant, Separable, SeparablePlan};

/// Threads per block of every 1D kernel. 256 keeps eight blocks resident
/// per SM on sm_70…sm_90 at these kernels' register counts.
pub const THREADS_1D: u32 = 256;

/// Correlation or convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvOp {
    /// `Σ_j N[i − w/2 + j] · M[j]` (`scipy.ndimage.correlate1d`).
    Correlate,
    /// `Σ_j M[j] · N[i + w/2 − j]` (`scipy.ndimage.convolve1d`).
    Convolve,
}

impl ConvOp {
    /// Both operations.
    pub const ALL: [ConvOp; 2] = [ConvOp::Correlate, ConvOp::Convolve];

    /// The correlation taps and `left` (taps left of the centre) that
    /// compute this operation with mask `mask` along one axis: the mask
    /// itself and `w / 2` for a correlation; the mask reversed and
    /// `w − 1 − w / 2` for a convolution.
    pub fn correlation_taps<T: Copy>(self, mask: &[T]) -> (Vec<T>, usize) {
        let w = mask.len();
        match self {
            ConvOp::Correlate => (mask.to_vec(), w / 2),
            ConvOp::Convolve => (mask.iter().rev().copied().collect(), (w.max(1) - 1) - w / 2),
        }
    }

    /// `correlate` or `convolve`.
    pub fn name(self) -> &'static str {
        match self {
            ConvOp::Correlate => "correlate",
            ConvOp::Convolve => "convolve",
        }
    }
}

impl std::str::FromStr for ConvOp {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "correlate" => Ok(ConvOp::Correlate),
            "convolve" => Ok(ConvOp::Convolve),
            _ => Err(format!("unknown operation `{s}` (correlate, convolve)")),
        }
    }
}

/// Parses a boundary mode by its name here or its `scipy.ndimage` name.
pub fn parse_boundary(s: &str) -> std::result::Result<Boundary, String> {
    Boundary::ALL
        .into_iter()
        .find(|b| b.name() == s || b.scipy_name() == s)
        .ok_or_else(|| format!("unknown boundary mode `{s}` (zero/constant, nearest, reflect, mirror, wrap)"))
}

/// Element types of the convolution kernels.
pub trait ConvElem: DeviceCopy + Pod + KernelArg + Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// `f32` or `f64`: the suffix of the kernels' names.
    const NAME: &'static str;
    /// Unit roundoff (half the machine epsilon).
    const UNIT_ROUNDOFF: f64;
    /// Smallest positive normal value.
    const MIN_NORMAL: f64;
    /// Widens to `f64` exactly.
    fn to_f64(self) -> f64;
    /// Rounds from `f64`.
    fn from_f64(v: f64) -> Self;
    /// The batched rows filter of this type for a 1D convolution with
    /// correlation `taps`, `left` of them left of the centre, under `mode`
    /// ([`Conv1dVariant::Rows`]).
    #[doc(hidden)]
    fn rows_filter(gpu: &Gpu, taps: &[Self], left: usize, mode: Boundary) -> Result<Arc<dyn RowsFilter<Self>>>;
}

/// A 1D convolution's signal as the one row of a batched rows filter
/// ([`batch::Filter1d`], [`Conv1dVariant::Rows`]).
#[doc(hidden)]
pub trait RowsFilter<T>: Send + Sync {
    /// The launch for a signal of `n` elements (vector access assumed).
    fn plan_signal(&self, n: usize) -> Result<batch::BatchPlan>;
    /// Filters `input` (one signal) into `output`, whose length the
    /// caller has checked against it ([`Conv1d::run_on`]).
    fn run_signal(&self, input: &DeviceView<T>, output: &mut DeviceViewMut<T>) -> Result<batch::BatchPlan>;
}

impl<S: batch::Sample> RowsFilter<S> for batch::Filter1d<S> {
    fn plan_signal(&self, n: usize) -> Result<batch::BatchPlan> {
        self.plan(batch::Shape::signal(n))
    }

    fn run_signal(&self, input: &DeviceView<S>, output: &mut DeviceViewMut<S>) -> Result<batch::BatchPlan> {
        self.run(input, output, batch::Shape::signal(input.len()))
    }
}

/// [`ConvElem::rows_filter`] for the types that accumulate in themselves:
/// the correlation taps with scipy's origin that puts `left` taps left of
/// the centre (`left − ⌊w/2⌋`).
fn rows_filter_of<T: ConvElem + batch::Sample<Acc = T>>(
    gpu: &Gpu,
    taps: &[T],
    left: usize,
    mode: Boundary,
) -> Result<Arc<dyn RowsFilter<T>>> {
    let origin = left as isize - (taps.len() / 2) as isize;
    let filter = batch::Filter1d::<T>::new(gpu, taps, ConvOp::Correlate, mode)?.with_origin(origin)?;
    Ok(Arc::new(filter))
}

impl ConvElem for f32 {
    const NAME: &'static str = "f32";
    const UNIT_ROUNDOFF: f64 = f32::EPSILON as f64 / 2.0;
    const MIN_NORMAL: f64 = f32::MIN_POSITIVE as f64;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn rows_filter(gpu: &Gpu, taps: &[f32], left: usize, mode: Boundary) -> Result<Arc<dyn RowsFilter<f32>>> {
        rows_filter_of(gpu, taps, left, mode)
    }
}

impl ConvElem for f64 {
    const NAME: &'static str = "f64";
    const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;
    const MIN_NORMAL: f64 = f64::MIN_POSITIVE;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn rows_filter(gpu: &Gpu, taps: &[f64], left: usize, mode: Boundary) -> Result<Arc<dyn RowsFilter<f64>>> {
        rows_filter_of(gpu, taps, left, mode)
    }
}

/// The most taps a mask of `T` may have and still live in constant memory
/// (the kernels' mask parameter, [`PARAM_MASK_BYTES`]).
pub const fn max_constant_taps<T>() -> usize {
    PARAM_MASK_BYTES / std::mem::size_of::<T>()
}

/// `kernel`'s short-mask form ([`SHORT_MASK_KERNELS`]: the same code with a
/// parameter of [`FIXED_MASK_TAPS`] elements, cheaper to launch) when it
/// has one and `taps` fit it; otherwise `kernel`.
pub fn short_mask_form(kernel: &'static str, taps: usize) -> &'static str {
    match SHORT_MASK_KERNELS.iter().find(|&&(long, _)| long == kernel) {
        Some(&(_, short)) if taps <= FIXED_MASK_TAPS => short,
        _ => kernel,
    }
}

/// A mask's bytes as the constant-mask kernels take them (by value, in
/// their last parameter), built once per convolution for the two parameter
/// sizes the kernels declare, the run-time kernels' [`PARAM_MASK_BYTES`]
/// and the compile-time ones' [`FIXED_MASK_TAPS`] elements, so a launch
/// copies nothing on the host before the driver does.
#[derive(Debug)]
pub(crate) struct MaskParams {
    built: Vec<ParamArray>,
}

impl MaskParams {
    /// The parameters that `taps` fits.
    pub(crate) fn new<T: ConvElem>(taps: &[T]) -> MaskParams {
        let sizes = [PARAM_MASK_BYTES, FIXED_MASK_TAPS * std::mem::size_of::<T>()];
        MaskParams { built: sizes.iter().filter_map(|&size| ParamArray::new(taps, size).ok()).collect() }
    }

    /// The mask argument of kernel `kernel`, whose parameter sizes are
    /// `params` (read from its PTX): the built one of its last parameter's
    /// size, or `taps` laid out anew for a size not built (a module with
    /// other sizes); too many taps for it is an error.
    pub(crate) fn arg<T: ConvElem>(
        &self,
        kernel: &'static str,
        params: &[usize],
        taps: &[T],
    ) -> Result<std::borrow::Cow<'_, ParamArray>> {
        let size = params.last().copied().ok_or_else(|| Error::InvalidArgument {
            op: "conv",
            message: format!("kernel {kernel} takes no mask parameter"),
        })?;
        match self.built.iter().find(|p| p.bytes().len() == size) {
            Some(p) => Ok(std::borrow::Cow::Borrowed(p)),
            None => Ok(std::borrow::Cow::Owned(ParamArray::new(taps, size)?)),
        }
    }
}

/// A normalized Gaussian mask with standard deviation `sigma` (in
/// samples), built as `scipy.ndimage.gaussian_filter1d` builds its
/// weights: radius `r = ⌊4σ + 0.5⌋`, taps `exp(−x² / 2σ²)` for
/// `x = −r…r`, divided by their sum. `2r + 1` taps (always odd).
pub fn gaussian<T: ConvElem>(sigma: f64) -> Result<Vec<T>> {
    gaussian_truncated(sigma, 4.0)
}

/// [`gaussian`] cut at `truncate` standard deviations instead of 4, as
/// `scipy.ndimage.gaussian_filter1d(…, truncate=…)` builds its weights:
/// radius `r = ⌊truncate · σ + 0.5⌋` (`truncate` finite and ≥ 0; radius 0
/// is the one-tap identity).
pub fn gaussian_truncated<T: ConvElem>(sigma: f64, truncate: f64) -> Result<Vec<T>> {
    if !(truncate.is_finite() && truncate >= 0.0) {
        return Err(Error::InvalidArgument {
            op: "gaussian",
            message: format!("truncate must be a finite number ≥ 0, got {truncate}"),
        });
    }
    if !(sigma.is_finite() && sigma > 0.0) {
        return Err(Error::InvalidArgument {
            op: "gaussian",
            message: format!("sigma must be a positive finite number, got {sigma}"),
        });
    }
    let radius = (truncate * sigma + 0.5).floor();
    if radius > 1e6 {
        return Err(Error::InvalidArgument { op: "gaussian", message: format!("sigma {sigma} is too large") });
    }
    let r = radius as i64;
    let raw: Vec<f64> = (-r..=r).map(|x| (-0.5 * (x as f64 / sigma).powi(2)).exp()).collect();
    let sum: f64 = raw.iter().sum();
    Ok(raw.into_iter().map(|v| T::from_f64(v / sum)).collect())
}

/// The 1D kernels: the lesson's four, the fast one and the tensor-core one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conv1dVariant {
    /// The fastest variant that runs at this width: `Tensor` for `f32`
    /// masks of at least [`tensor_auto_min_taps`] taps where the device has
    /// tensor cores, `Rows` for the element types, widths, lengths and
    /// architectures [`rows_auto_takes`] names when both views start on 16
    /// bytes (the rows kernels' vector copies), otherwise `Fast` (`TiledL2`
    /// when its shared tile does not fit).
    Auto,
    /// Mask and inputs from global memory, one output per thread.
    Basic,
    /// Mask in constant memory, inputs from global memory.
    Const,
    /// Inputs and halo cells in a shared tile; mask in constant memory.
    Tiled,
    /// The block's own inputs in shared memory, halo cells from global
    /// memory (served by the L2 cache).
    TiledL2,
    /// Register blocking: [`FAST_OUTPUTS`] outputs per thread over a shared
    /// tile, four-wide shared reads.
    Fast,
    /// Tensor cores (`mma.sync` TF32, sm_80 and newer, `f32` only): the
    /// mask as a banded Toeplitz matrix times the input as a Hankel matrix,
    /// at the convolution's [`Precision`] (see `conv::tensor`).
    Tensor,
    /// The batched rows kernels ([`batch::Filter1d`]) with the signal as
    /// their one row: a tile of [`batch::ROWS_OUTPUTS`] ×
    /// [`batch::ROWS_GROUPS`] × [`batch::ROWS_THREADS`] outputs per block
    /// and pass, taken by bulk copies (`f32` on sm_90), `cp.async` (sm_80
    /// and newer) or plain loads, the mask in shared memory, and
    /// compile-time forms up to [`batch::ROWS_FIXED_MAX`] taps. `Auto` takes
    /// it for the element types, widths, lengths and architectures
    /// [`rows_auto_takes`] names.
    /// Its launch is planned on the device (the occupancy query), so
    /// [`plan_1d`] does not plan it; it has no CUDA C++ twin.
    Rows,
}

impl Conv1dVariant {
    /// The five kernels, in the lesson's order.
    pub const ALL: [Conv1dVariant; 5] =
        [Conv1dVariant::Basic, Conv1dVariant::Const, Conv1dVariant::Tiled, Conv1dVariant::TiledL2, Conv1dVariant::Fast];

    /// Short name (`basic`, `const`, `tiled`, `tiled_l2`, `fast`, `auto`).
    pub fn name(self) -> &'static str {
        match self {
            Conv1dVariant::Auto => "auto",
            Conv1dVariant::Basic => "basic",
            Conv1dVariant::Const => "const",
            Conv1dVariant::Tiled => "tiled",
            Conv1dVariant::TiledL2 => "tiled_l2",
            Conv1dVariant::Fast => "fast",
            Conv1dVariant::Tensor => "tensor",
            Conv1dVariant::Rows => "rows",
        }
    }

    /// The lesson's DRAM-access model: global loads of input elements per
    /// output, for a mask of width `w` and blocks of `threads`, away from
    /// the input's edges: `w` for the untiled kernels (the lesson's
    /// `2n + 1`); `(threads + w − 1) / threads` for the tiled kernel (the
    /// lesson's `(blockDim + 2n) / blockDim`); for the L2 kernel one tile
    /// load plus the taps that fall outside the tile,
    /// `1 + (l(l+1) + r(r+1)) / (2·threads)` with `l`, `r` the taps left
    /// and right of the centre; `(R·threads + R·⌈w/R⌉) / (R·threads)` for
    /// the fast kernel (`R` = [`FAST_OUTPUTS`]).
    pub fn model_loads_per_output(self, w: usize, threads: usize) -> f64 {
        let (w, t) = (w as f64, threads as f64);
        match self {
            Conv1dVariant::Basic | Conv1dVariant::Const => w,
            Conv1dVariant::Tiled => (t + w - 1.0) / t,
            Conv1dVariant::TiledL2 => {
                let l = (w / 2.0).floor().min(t);
                let r = (w - 1.0 - l).min(t);
                1.0 + (l * (l + 1.0) + r * (r + 1.0)) / (2.0 * t)
            }
            Conv1dVariant::Fast | Conv1dVariant::Auto => {
                fast_shared_elems(threads, w as usize) as f64 / (FAST_OUTPUTS as f64 * t)
            }
            Conv1dVariant::Tensor => tc_span(w as usize) as f64 / TC_TILE as f64,
            Conv1dVariant::Rows => {
                let tile = batch::ROWS_OUTPUTS * batch::ROWS_GROUPS * batch::ROWS_THREADS;
                batch::rows_span(batch::ROWS_THREADS, w as usize) as f64 / tile as f64
            }
        }
    }

    /// The lesson's model for the tiled kernel at the edges of the input,
    /// where ghost cells need no load: `(threads + w/2) / threads` (the
    /// lesson's `(blockDim + n) / blockDim`).
    pub fn model_edge_loads_per_output(self, w: usize, threads: usize) -> f64 {
        match self {
            Conv1dVariant::Tiled => (threads as f64 + (w / 2) as f64) / threads as f64,
            v => v.model_loads_per_output(w, threads),
        }
    }
}

impl std::str::FromStr for Conv1dVariant {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Conv1dVariant::ALL
            .into_iter()
            .chain([Conv1dVariant::Tensor, Conv1dVariant::Rows, Conv1dVariant::Auto])
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown variant `{s}` (basic, const, tiled, tiled_l2, fast, tensor, rows, auto)"))
    }
}

/// The arithmetic of the tensor-core kernels ([`Conv1dVariant::Tensor`]);
/// the FMA kernels always compute in the element type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// `f32` accuracy: each product from three TF32 products of split
    /// operands, within the error bound the FMA kernels are tested at
    /// ([`reference::Checked`]); from [`TC2_MIN_TAPS`] taps, where that
    /// bound leaves room, two (the head in TF32, both small products in
    /// one bf16 `mma`).
    #[default]
    F32,
    /// One TF32 product per tap (inputs truncated to 10 mantissa bits,
    /// taps rounded to 10): about three times less tensor-core work, with
    /// a relative error per product of at most `3·2^−11`
    /// ([`Precision::tf32_error_bound`]).
    Tf32,
}

impl Precision {
    /// Both precisions, the default first.
    pub const ALL: [Precision; 2] = [Precision::F32, Precision::Tf32];

    /// Short name (`f32`, `tf32`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Tf32 => "tf32",
        }
    }

    /// The products per step the tensor-core kernel of this precision
    /// takes for a `w`-tap mask.
    pub fn tensor_products(self, w: usize) -> TcProducts {
        match self {
            Precision::F32 if w >= TC2_MIN_TAPS => TcProducts::Two,
            Precision::F32 => TcProducts::Three,
            Precision::Tf32 => TcProducts::One,
        }
    }

    /// The tensor-core kernel of this precision for a `w`-tap mask.
    pub fn tensor_kernel(self, w: usize) -> &'static str {
        tensor_kernel_of(self.tensor_products(w))
    }

    /// The error bound of [`Precision::Tf32`] for an output whose terms'
    /// magnitudes sum to `abs` over `w` taps: `3·2^−11` per product (the
    /// input's truncation, `2^−10`, and the tap's rounding, `2^−11`), plus
    /// the `f32` bound of the sum (`(w + 2)·2^−24`) and `w` smallest
    /// normals for underflow.
    pub fn tf32_error_bound(w: usize, abs: f64) -> f64 {
        (3.0 * 2f64.powi(-11) + (w as f64 + 2.0) * 2f64.powi(-24)) * abs + w as f64 * f32::MIN_POSITIVE as f64
    }
}

/// The 1D tensor-core kernel of `products` products per step.
pub fn tensor_kernel_of(products: TcProducts) -> &'static str {
    match products {
        TcProducts::Three => "conv1d_tensor_f32",
        TcProducts::Two => "conv1d_tensor_2p_f32",
        TcProducts::One => "conv1d_tensor_tf32_f32",
    }
}

impl std::str::FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Precision::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| format!("unknown precision `{s}` (f32, tf32)"))
    }
}

/// The shortest signal for which [`Conv1dVariant::Auto`] runs a `w`-tap
/// mask of element type `ty` on the rows kernels ([`Conv1dVariant::Rows`]),
/// or `None` where it never does:
///
/// | `ty` | taps | from |
/// | --- | --- | --- |
/// | `f32` | 1–16 | 3·2²⁴ elements |
/// | `f32` | 17–20 | 2²⁵ |
/// | `f32` | 21–32 | 3·2²³ |
/// | `f64` | 1–8 | 3·2²³ |
/// | `f64` | 9–12 | 2²⁶ |
///
/// Their tiles are four times the fast kernel's (4096 outputs), so shorter
/// signals keep fewer SMs busy. Measured on an H200 from 2²³ to 2²⁷
/// elements (`docs/wide-masks.md`): at each of these lengths the rows
/// kernels led at every measured width of its group in every run, or tied
/// (within 0.1 point of the floor); at shorter ones the fast kernel led or
/// the widths disagreed. At 2²⁷ they lead by 3.3–11 points in `f32` (3 to
/// 32 taps) and 1.2–7.6 in `f64`. Wider `f32` masks run the rows kernels'
/// general form, which loses to the tensor cores; in `f64` the fast kernel
/// leads from 13 taps at every length (by 2.9–17.6 points).
pub fn rows_auto_min_len(ty: &str, w: usize) -> Option<usize> {
    match (ty, w) {
        ("f32", 1..=16) => Some(3 << 24),
        ("f32", 17..=20) => Some(1 << 25),
        ("f32", 21..=batch::ROWS_FIXED_MAX) => Some(3 << 23),
        ("f64", 1..=8) => Some(3 << 23),
        ("f64", 9..=12) => Some(1 << 26),
        _ => None,
    }
}

/// Whether the rows kernels would take `input` and `output` (one signal)
/// with their 16-byte copies and stores ([`batch::Shape::vector_access`]):
/// the `aligned` argument of [`Conv1d::plan_views`] that [`Conv1d::run`]
/// passes.
pub fn rows_vector_views<T: DeviceCopy>(input: &DeviceView<T>, output: &DeviceViewMut<T>) -> bool {
    batch::Shape::signal(input.len()).vector_access(input.device_ptr(), output.device_ptr(), std::mem::size_of::<T>())
}

/// The oldest PTX architecture on which [`Conv1dVariant::Auto`] takes the
/// rows kernels: sm_90, where the crossovers were measured (there the
/// `f32` kernels take each tile by one bulk copy, the `f64` ones by
/// `cp.async`). Older PTX copies by `cp.async` (sm_80) or plain loads with
/// no overlap (sm_70), and keeps the fast kernel.
pub const ROWS_AUTO_MIN_SM: u32 = 90;

/// Whether [`Conv1dVariant::Auto`] runs a `w`-tap mask of element type
/// `ty` (`f32`, `f64`) over `n` elements on the rows kernels of PTX
/// architecture `arch` ([`Gpu::ptx_arch`]): from [`ROWS_AUTO_MIN_SM`], over
/// at least [`rows_auto_min_len`] elements.
pub fn rows_auto_takes(arch: u32, ty: &str, w: usize, n: usize) -> bool {
    arch >= ROWS_AUTO_MIN_SM && rows_auto_min_len(ty, w).is_some_and(|min| n >= min)
}

/// The narrowest `f32` mask for which [`Conv1dVariant::Auto`] runs the
/// tensor-core kernel on sm_80 and newer, per precision: below it the fast
/// FMA kernel is faster (measured crossovers: `docs/wide-masks.md`).
pub const fn tensor_auto_min_taps(precision: Precision) -> usize {
    match precision {
        Precision::F32 => 33,
        Precision::Tf32 => 33,
    }
}

/// Where a launch reads its mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskSource {
    /// Constant memory: the kernel's mask parameter (bank 0).
    Constant,
    /// The global-memory copy of the mask.
    Global,
}

/// What one 1D convolution launch is (or would be).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv1dPlan {
    /// The variant asked for (resolved when `Auto`).
    pub variant: Conv1dVariant,
    /// The kernel that runs.
    pub kernel: &'static str,
    /// Where it reads the mask.
    pub mask: MaskSource,
    /// Threads per block.
    pub threads: u32,
    /// Blocks.
    pub grid: u32,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Outputs each block computes per tile.
    pub tile: usize,
}

impl Conv1dPlan {
    /// The launch configuration.
    pub fn launch_config(&self) -> LaunchConfig {
        LaunchConfig::new(self.grid, self.threads).with_shared_mem(self.shared_bytes)
    }
}

/// A tensor-core mask table on the device.
type TcTable = Arc<DeviceBuffer<f32>>;

/// A 1D convolution ready to run: mask, operation and boundary mode, with
/// the mask already on the device.
pub struct Conv1d<T: ConvElem> {
    gpu: Gpu,
    taps: Vec<T>,
    left: usize,
    op: ConvOp,
    mode: Boundary,
    mask: Arc<DeviceBuffer<T>>,
    params: Arc<MaskParams>,
    precision: Precision,
    /// The tensor-core kernels' mask tables, built on first use and shared
    /// by the clones [`Conv1d::on`] and [`Conv1d::with_precision`] make:
    /// [`tc_mask_table`] (one and three products), then
    /// [`tc_mask_table2`] (two). Neither is replaced once built, so a
    /// launch in flight never loses its table.
    table: Arc<Mutex<[Option<TcTable>; 2]>>,
    /// [`Conv1d::tensor_support`], found once (`Auto` asks on every plan).
    support: Arc<std::sync::OnceLock<std::result::Result<(), String>>>,
    /// The rows filter ([`Conv1dVariant::Rows`]), built on first use (by
    /// a plan or a run); a convolution made by [`Conv1d::on`] builds its
    /// own, with a work counter of its own on its stream.
    rows: Arc<Mutex<Option<Arc<dyn RowsFilter<T>>>>>,
}

impl<T: ConvElem> Conv1d<T> {
    /// Prepares `mask` (any width ≥ 1) for operation `op` under boundary
    /// mode `mode`. An empty mask is [`Error::InvalidArgument`].
    pub fn new(gpu: &Gpu, mask: &[T], op: ConvOp, mode: Boundary) -> Result<Self> {
        if mask.is_empty() {
            return Err(Error::InvalidArgument { op: "conv1d", message: "the mask is empty (width 0)".into() });
        }
        if u32::try_from(mask.len()).is_err() {
            return Err(Error::InvalidArgument {
                op: "conv1d",
                message: format!("a mask of {} taps is wider than the kernels accept (2^32 − 1)", mask.len()),
            });
        }
        let (taps, left) = op.correlation_taps(mask);
        let dev = gpu.upload(&taps)?;
        let params = Arc::new(MaskParams::new(&taps));
        Ok(Conv1d {
            gpu: gpu.clone(),
            taps,
            left,
            op,
            mode,
            mask: Arc::new(dev),
            params,
            precision: Precision::F32,
            table: Arc::new(Mutex::new([None, None])),
            support: Arc::new(std::sync::OnceLock::new()),
            rows: Arc::new(Mutex::new(None)),
        })
    }

    /// This convolution computing at `precision` on the tensor cores (the
    /// FMA kernels are not affected). Default [`Precision::F32`].
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// The tensor-core precision.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Whether the tensor-core kernel can run this convolution here, and
    /// if not, why: `f32` data, at least [`TC_MIN_TAPS`] finite taps, a
    /// device of sm_80 or newer
    /// whose loaded module holds the kernel, and a mask table that fits in
    /// shared memory.
    pub fn tensor_support(&self) -> std::result::Result<(), String> {
        self.support.get_or_init(|| self.find_tensor_support()).clone()
    }

    /// [`Conv1d::tensor_support`]'s answer, found afresh.
    fn find_tensor_support(&self) -> std::result::Result<(), String> {
        if T::NAME != "f32" {
            return Err(format!("the tensor-core kernels take f32 data, not {}", T::NAME));
        }
        if self.taps.len() < TC_MIN_TAPS {
            return Err(format!(
                "the tensor-core kernels take masks of at least {TC_MIN_TAPS} taps, not {} (narrower masks run at \
                 the memory floor on the FMA kernels)",
                self.taps.len()
            ));
        }
        if self.taps.iter().any(|t| !t.to_f64().is_finite()) {
            return Err("the mask holds an infinity or a NaN (the FMA kernels propagate them)".into());
        }
        let info = self.gpu.info();
        // Every tensor-core kernel (the answer is kept for every precision
        // and width).
        let kernels = [TcProducts::One, TcProducts::Two, TcProducts::Three].map(tensor_kernel_of);
        if info.cc_major < 8 || kernels.iter().any(|k| self.gpu.param_sizes(k).is_err()) {
            return Err(format!(
                "{} is sm_{}{}; the tensor-core kernels need sm_80 or newer and PTX built for it",
                info.name, info.cc_major, info.cc_minor
            ));
        }
        let need = tc_shared_bytes(self.taps.len());
        let have = info.limits.max_shared_per_block_optin as usize;
        if need > have {
            return Err(format!(
                "a {}-tap mask needs {need} bytes of shared memory on the tensor cores; this device allows {have}",
                self.taps.len()
            ));
        }
        Ok(())
    }

    /// The mask table of this precision's tensor-core kernel on the
    /// device, built on first use.
    fn tensor_table(&self) -> Result<Arc<DeviceBuffer<f32>>> {
        let two = self.precision.tensor_products(self.taps.len()) == TcProducts::Two;
        let mut slots = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let slot = &mut slots[two as usize];
        if let Some(t) = slot.as_ref() {
            return Ok(t.clone());
        }
        // The kernels run the band with tc_front_pad zero taps in front
        // (the same steps: the table's size does not change).
        let pad = tc_front_pad(self.taps.len(), self.left);
        let taps: Vec<f32> = std::iter::repeat_n(0.0, pad).chain(self.taps.iter().map(|t| t.to_f64() as f32)).collect();
        let mut table = vec![0.0f32; tc_table_floats(self.taps.len())];
        if two {
            tc_mask_table2(&taps, &mut table);
        } else {
            tc_mask_table(&taps, &mut table);
        }
        let dev = Arc::new(self.gpu.upload(&table)?);
        *slot = Some(dev.clone());
        Ok(dev)
    }

    /// The rows filter of this convolution, built on first use.
    fn rows_filter(&self) -> Result<Arc<dyn RowsFilter<T>>> {
        let mut slot = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = slot.as_ref() {
            return Ok(f.clone());
        }
        let filter = T::rows_filter(&self.gpu, &self.taps, self.left, self.mode)?;
        *slot = Some(filter.clone());
        Ok(filter)
    }

    /// The rows kernels' launch for `n` elements, as a [`Conv1dPlan`].
    fn rows_plan(&self, n: usize) -> Result<Conv1dPlan> {
        let p = self.rows_filter()?.plan_signal(n)?;
        Ok(Conv1dPlan {
            variant: Conv1dVariant::Rows,
            kernel: p.kernel,
            mask: MaskSource::Global,
            threads: p.block.0,
            grid: p.grid,
            shared_bytes: p.shared_bytes,
            tile: batch::ROWS_OUTPUTS * batch::ROWS_GROUPS * batch::ROWS_THREADS,
        })
    }

    /// This convolution on `stream` (same mask, shared): its runs are
    /// queued there. `stream` must belong to this convolution's device.
    pub fn on(&self, stream: &crate::Stream) -> Result<Self> {
        Ok(Conv1d {
            gpu: self.gpu.on(stream)?,
            taps: self.taps.clone(),
            mask: self.mask.clone(),
            params: self.params.clone(),
            table: self.table.clone(),
            support: self.support.clone(),
            rows: Arc::new(Mutex::new(None)),
            ..*self
        })
    }

    /// Mask width.
    pub fn width(&self) -> usize {
        self.taps.len()
    }

    /// Taps left of the centre in the correlation the kernels compute.
    pub fn left(&self) -> usize {
        self.left
    }

    /// The correlation taps (the mask, reversed for a convolution).
    pub fn taps(&self) -> &[T] {
        &self.taps
    }

    /// The operation.
    pub fn op(&self) -> ConvOp {
        self.op
    }

    /// The boundary mode.
    pub fn mode(&self) -> Boundary {
        self.mode
    }

    /// Where the kernels read this mask.
    pub fn mask_source(&self) -> MaskSource {
        if self.taps.len() <= max_constant_taps::<T>() { MaskSource::Constant } else { MaskSource::Global }
    }

    /// The launch that [`Conv1d::run`] makes for `variant` over `n`
    /// elements: tile and shared buffer sized from the device's limits.
    /// A variant whose shared tile cannot fit this mask is
    /// [`Error::InvalidArgument`] naming the limit.
    ///
    /// The fast kernel's blocks are persistent: its grid is capped at the
    /// blocks the device keeps resident ([`persistent_grid`]), so each
    /// block pipelines several tiles. The first plan of
    /// [`Conv1dVariant::Rows`] (or of `Auto` where it takes them) builds
    /// the rows filter: its taps are uploaded and its work counter
    /// allocated, so that plan can fail as an allocation does.
    ///
    /// `Auto` is planned for views that start on 16 bytes
    /// ([`Conv1d::plan_views`] for others).
    pub fn plan(&self, variant: Conv1dVariant, n: usize) -> Result<Conv1dPlan> {
        self.plan_views(variant, n, true)
    }

    /// [`Conv1d::plan`] for views of `n` elements that both start on 16
    /// bytes (`aligned`) or not: `Auto` takes the rows kernels only for
    /// aligned views, since others run their element-by-element copies
    /// (measured: `docs/wide-masks.md`). [`Conv1d::run`] plans with its
    /// views' addresses.
    pub fn plan_views(&self, variant: Conv1dVariant, n: usize, aligned: bool) -> Result<Conv1dPlan> {
        let w = self.taps.len();
        let variant = match variant {
            Conv1dVariant::Tensor => {
                self.tensor_support().map_err(|message| Error::Unsupported { op: "conv1d", message })?;
                Conv1dVariant::Tensor
            }
            Conv1dVariant::Auto if w >= tensor_auto_min_taps(self.precision) && self.tensor_support().is_ok() => {
                Conv1dVariant::Tensor
            }
            Conv1dVariant::Auto if aligned && rows_auto_takes(self.gpu.ptx_arch(), T::NAME, w, n) => {
                Conv1dVariant::Rows
            }
            v => v,
        };
        if variant == Conv1dVariant::Rows {
            return self.rows_plan(n);
        }
        let mut plan = plan_1d_at::<T>(&self.gpu.info().limits, w, variant, self.precision, n)?;
        if !matches!(plan.variant, Conv1dVariant::Fast | Conv1dVariant::Tensor) {
            return Ok(plan);
        }
        if plan.variant == Conv1dVariant::Fast && self.gpu.ptx_arch() < FAST_RING_MIN_SM {
            // Older PTX stages through registers into one buffer.
            plan.shared_bytes = (fast_shared_elems(plan.threads as usize, w) * std::mem::size_of::<T>()) as u32;
        }
        let per_sm = self.gpu.max_active_blocks_per_sm(plan.kernel, plan.threads, plan.shared_bytes as usize)?;
        Ok(persistent_grid(plan, self.gpu.info().sm_count, per_sm))
    }

    /// Convolves `input` into `output` (same length) with `variant`,
    /// asynchronously on the GPU's stream; returns what ran. A
    /// constant-memory kernel gets the mask with its launch.
    pub fn run(
        &self,
        variant: Conv1dVariant,
        input: &DeviceView<T>,
        output: &mut DeviceViewMut<T>,
    ) -> Result<Conv1dPlan> {
        self.run_on(None, variant, input, output)
    }

    /// As [`Conv1d::run`], launching the kernels of `module` instead of
    /// the crate's when it is `Some`: a PTX module loaded on the same
    /// [`Gpu`] with the same kernel names and parameters (the CUDA C++
    /// twins in `cuda/conv1d.cu`). The plan is the same.
    pub fn run_on(
        &self,
        module: Option<&PtxModule>,
        variant: Conv1dVariant,
        input: &DeviceView<T>,
        output: &mut DeviceViewMut<T>,
    ) -> Result<Conv1dPlan> {
        let target = conv2d::Target::new(&self.gpu, module)?;
        input.check_gpu(&self.gpu, "conv1d")?;
        output.check_gpu(&self.gpu, "conv1d")?;
        if input.len() != output.len() {
            return Err(Error::LengthMismatch { op: "conv1d", expected: input.len(), got: output.len() });
        }
        let n = input.len();
        let plan = self.plan_views(variant, n, rows_vector_views(input, output))?;
        if plan.variant == Conv1dVariant::Rows {
            if module.is_some() {
                return Err(Error::Unsupported { op: "conv1d", message: "the rows kernels have no C++ twin".into() });
            }
            self.rows_filter()?.run_signal(input, output)?;
            return Ok(plan);
        }
        if n == 0 {
            return Ok(plan);
        }
        let (w, left, mode) = (self.taps.len() as u32, self.left as u32, self.mode.raw());
        let mask = self.mask.device_ptr();
        let (src, dst) = (input.device_ptr(), output.device_ptr());
        let mut args: Vec<&dyn KernelArg> = vec![&src, &dst, &n, &mask, &w, &left, &mode];
        let taps;
        let table;
        let table_ptr;
        if plan.variant == Conv1dVariant::Tensor {
            table = self.tensor_table()?;
            table_ptr = table.device_ptr();
            args.push(&table_ptr);
        } else if plan.mask == MaskSource::Constant {
            taps = self.params.arg(plan.kernel, target.param_sizes(plan.kernel)?, &self.taps)?;
            args.push(&*taps);
        }
        // SAFETY: input and output are live views of `n` elements on this
        // GPU (checked above) and cannot overlap (one is borrowed
        // mutably); the mask buffer holds `w` taps, and so does the mask
        // parameter of a constant kernel; `left < w`; the dynamic shared
        // memory is the kernel's layout function's size; the tensor
        // kernels' table is the taps' table for that kernel (tensor_table).
        unsafe { target.launch(plan.kernel, &plan.launch_config(), &args)? };
        Ok(plan)
    }

    /// The GPU this convolution runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The device copy of the correlation taps.
    pub fn device_mask(&self) -> DevicePtr {
        self.mask.device_ptr()
    }
}

impl<T: ConvElem> std::fmt::Debug for Conv1d<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conv1d")
            .field("width", &self.taps.len())
            .field("left", &self.left)
            .field("op", &self.op)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// The launch [`Conv1d::run`] makes on a device with `limits` for a mask
/// of `w` taps of `T`, `variant`, `n` elements (no GPU needed: the
/// planning is plain arithmetic over the limits).
pub fn plan_1d<T: ConvElem>(limits: &DeviceLimits, w: usize, variant: Conv1dVariant, n: usize) -> Result<Conv1dPlan> {
    plan_1d_at::<T>(limits, w, variant, Precision::F32, n)
}

/// [`plan_1d`] with the tensor-core kernels at `precision` (which decides
/// the kernel [`Conv1dVariant::Tensor`] names; `Auto` is resolved to the
/// FMA kernels here: [`Conv1d::plan`] picks the tensor cores where the
/// device has them).
pub fn plan_1d_at<T: ConvElem>(
    limits: &DeviceLimits,
    w: usize,
    variant: Conv1dVariant,
    precision: Precision,
    n: usize,
) -> Result<Conv1dPlan> {
    if w == 0 {
        return Err(Error::InvalidArgument { op: "conv1d", message: "the mask is empty (width 0)".into() });
    }
    let size = std::mem::size_of::<T>();
    let mask = if w <= max_constant_taps::<T>() { MaskSource::Constant } else { MaskSource::Global };
    let threads = THREADS_1D.min(limits.max_threads_per_block);
    let t = threads as usize;
    let shared_max = limits.max_shared_per_block_optin as usize;
    let fits = |elems: usize| elems.checked_mul(size).filter(|&b| b <= shared_max);
    let variant = match variant {
        Conv1dVariant::Auto if fits(fast_shared_total(t, w)).is_some() => Conv1dVariant::Fast,
        Conv1dVariant::Auto => Conv1dVariant::TiledL2,
        v => v,
    };
    let (algo, shared_elems, tile) = match variant {
        Conv1dVariant::Basic => ("basic", 0, t),
        Conv1dVariant::Const if mask == MaskSource::Constant => ("const", 0, t),
        Conv1dVariant::Const => ("basic", 0, t),
        Conv1dVariant::Tiled => ("tiled", tiled_shared_elems(t, w), t),
        Conv1dVariant::TiledL2 => ("tiled_l2", tiled_l2_shared_elems(t), t),
        Conv1dVariant::Fast | Conv1dVariant::Auto => ("fast", fast_shared_total(t, w), FAST_OUTPUTS * t),
        Conv1dVariant::Tensor => ("tensor", tc_shared_bytes(w) / size, TC_TILE),
        Conv1dVariant::Rows => {
            return Err(Error::Unsupported {
                op: "conv1d",
                message: "the rows kernels' launch is planned on the device: use Conv1d::plan".into(),
            });
        }
    };
    if variant == Conv1dVariant::Tensor && T::NAME != "f32" {
        return Err(Error::Unsupported {
            op: "conv1d",
            message: format!("the tensor-core kernels take f32 data, not {}", T::NAME),
        });
    }
    let shared_bytes = fits(shared_elems).ok_or_else(|| Error::InvalidArgument {
        op: "conv1d",
        message: format!(
            "the {} kernel needs {} bytes of shared memory for a {w}-tap mask at {t} threads; this device allows \
             {shared_max} per block (use the basic, const or tiled_l2 variant)",
            variant.name(),
            shared_elems.saturating_mul(size),
        ),
    })?;
    let global = mask == MaskSource::Global && algo != "basic";
    let kernel = match fast_fixed_chunks(w) {
        _ if algo == "tensor" => precision.tensor_kernel(w),
        Some(chunks) if algo == "fast" && !global => fast_fixed_kernel(chunks, T::NAME)?,
        _ => short_mask_form(kernel_name(algo, global, T::NAME)?, w),
    };
    let tiles = n.div_ceil(tile);
    let grid = tiles.clamp(1, limits.max_grid_dim[0] as usize) as u32;
    let threads = if algo == "tensor" { TC_THREADS as u32 } else { threads };
    Ok(Conv1dPlan {
        variant,
        kernel,
        mask: if algo == "basic" || algo == "tensor" { MaskSource::Global } else { mask },
        threads,
        grid,
        shared_bytes: shared_bytes as u32,
        tile,
    })
}

/// `plan` with its grid capped at `sm_count × per_sm` blocks (the blocks
/// resident at once, [`FAST_WAVES`] times over; at least one block): the
/// fast kernel walks its tiles grid-stride with a software pipeline, so
/// fewer, longer-lived blocks keep loads in flight across tiles. Plain
/// arithmetic, no GPU needed (`per_sm` from
/// [`Gpu::max_active_blocks_per_sm`]).
pub fn persistent_grid(plan: Conv1dPlan, sm_count: u32, per_sm: u32) -> Conv1dPlan {
    let resident = sm_count.max(1).saturating_mul(per_sm.max(1)).saturating_mul(FAST_WAVES);
    Conv1dPlan { grid: plan.grid.min(resident).max(1), ..plan }
}

/// The oldest architecture whose fast 1D kernel copies tiles ahead into a
/// ring of [`FAST_STAGES`] shared buffers (`cp.async`): [`plan_1d`] sizes
/// its shared memory for the ring; [`Conv1d::plan`] gives older PTX the
/// single buffer it uses.
pub const FAST_RING_MIN_SM: u32 = 80;

/// Waves of resident blocks the fast 1D kernel's grid holds: one, so every
/// block stays resident from start to end and pipelines its share of the
/// tiles.
pub const FAST_WAVES: u32 = 1;

/// The compile-time form of the fast kernel with `chunks` 4-tap chunks
/// (`1 ..= 16`, see [`fast_fixed_chunks`]), element type `ty`.
fn fast_fixed_kernel(chunks: usize, ty: &str) -> Result<&'static str> {
    const F32: [&str; 16] = [
        "conv1d_fast1_f32",
        "conv1d_fast2_f32",
        "conv1d_fast3_f32",
        "conv1d_fast4_f32",
        "conv1d_fast5_f32",
        "conv1d_fast6_f32",
        "conv1d_fast7_f32",
        "conv1d_fast8_f32",
        "conv1d_fast9_f32",
        "conv1d_fast10_f32",
        "conv1d_fast11_f32",
        "conv1d_fast12_f32",
        "conv1d_fast13_f32",
        "conv1d_fast14_f32",
        "conv1d_fast15_f32",
        "conv1d_fast16_f32",
    ];
    const F64: [&str; 16] = [
        "conv1d_fast1_f64",
        "conv1d_fast2_f64",
        "conv1d_fast3_f64",
        "conv1d_fast4_f64",
        "conv1d_fast5_f64",
        "conv1d_fast6_f64",
        "conv1d_fast7_f64",
        "conv1d_fast8_f64",
        "conv1d_fast9_f64",
        "conv1d_fast10_f64",
        "conv1d_fast11_f64",
        "conv1d_fast12_f64",
        "conv1d_fast13_f64",
        "conv1d_fast14_f64",
        "conv1d_fast15_f64",
        "conv1d_fast16_f64",
    ];
    let names = match ty {
        "f32" => &F32,
        "f64" => &F64,
        _ => {
            return Err(Error::InvalidArgument {
                op: "conv1d",
                message: format!("no fast kernel for element type {ty}"),
            });
        }
    };
    chunks.checked_sub(1).and_then(|i| names.get(i)).copied().ok_or_else(|| Error::InvalidArgument {
        op: "conv1d",
        message: format!("no compile-time fast kernel for {chunks} chunks"),
    })
}

/// The kernel name for algorithm `algo` (`basic`, `const`, `tiled`,
/// `tiled_l2`, `fast`), mask in global memory or not, element type `ty`.
fn kernel_name(algo: &str, global_mask: bool, ty: &str) -> Result<&'static str> {
    let name = match (algo, global_mask, ty) {
        ("basic", _, "f32") => "conv1d_basic_f32",
        ("const", _, "f32") => "conv1d_const_f32",
        ("tiled", false, "f32") => "conv1d_tiled_f32",
        ("tiled", true, "f32") => "conv1d_tiled_gm_f32",
        ("tiled_l2", false, "f32") => "conv1d_tiled_l2_f32",
        ("tiled_l2", true, "f32") => "conv1d_tiled_l2_gm_f32",
        ("fast", false, "f32") => "conv1d_fast_f32",
        ("fast", true, "f32") => "conv1d_fast_gm_f32",
        ("basic", _, "f64") => "conv1d_basic_f64",
        ("const", _, "f64") => "conv1d_const_f64",
        ("tiled", false, "f64") => "conv1d_tiled_f64",
        ("tiled", true, "f64") => "conv1d_tiled_gm_f64",
        ("tiled_l2", false, "f64") => "conv1d_tiled_l2_f64",
        ("tiled_l2", true, "f64") => "conv1d_tiled_l2_gm_f64",
        ("fast", false, "f64") => "conv1d_fast_f64",
        ("fast", true, "f64") => "conv1d_fast_gm_f64",
        _ => {
            return Err(Error::InvalidArgument {
                op: "conv1d",
                message: format!("no {algo} kernel for element type {ty}"),
            });
        }
    };
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convolve_taps_follow_scipy_centering() {
        // Odd: reversed, centred.
        assert_eq!(ConvOp::Convolve.correlation_taps(&[1, 2, 3]), (vec![3, 2, 1], 1));
        assert_eq!(ConvOp::Correlate.correlation_taps(&[1, 2, 3]), (vec![1, 2, 3], 1));
        // Even: correlate has w/2 taps left of i, convolve w/2 − 1.
        assert_eq!(ConvOp::Correlate.correlation_taps(&[1, 2, 3, 4]), (vec![1, 2, 3, 4], 2));
        assert_eq!(ConvOp::Convolve.correlation_taps(&[1, 2, 3, 4]), (vec![4, 3, 2, 1], 1));
        assert_eq!(ConvOp::Convolve.correlation_taps(&[7]), (vec![7], 0));
    }

    #[test]
    fn gaussian_matches_scipy_weights() {
        // scipy.ndimage._filters._gaussian_kernel1d(1.0, 0, 4), scipy 1.17.
        let g = gaussian::<f64>(1.0).unwrap();
        assert_eq!(g.len(), 9);
        let want = [
            0.00013383062461474175,
            0.0044318616200312655,
            0.05399112742070441,
            0.24197144565660073,
            0.39894346935609776,
            0.24197144565660073,
            0.05399112742070441,
            0.0044318616200312655,
            0.00013383062461474175,
        ];
        for (a, b) in g.iter().zip(want) {
            assert!((a - b).abs() < 1e-15, "{a} vs {b}");
        }
        assert_eq!(gaussian::<f32>(5.0).unwrap().len(), 41);
        assert!(gaussian::<f32>(0.0).is_err());
        assert!(gaussian::<f32>(f64::NAN).is_err());
    }

    #[test]
    fn every_kernel_name_resolves() {
        for algo in ["basic", "const", "tiled", "tiled_l2", "fast"] {
            for g in [false, true] {
                for ty in ["f32", "f64"] {
                    let k = kernel_name(algo, g, ty).unwrap();
                    assert!(k.starts_with(&format!("conv1d_{algo}")) && k.ends_with(ty), "{k}");
                }
            }
        }
        assert!(kernel_name("fast", false, "f16").is_err());
    }

    #[test]
    fn short_mask_forms_differ_only_in_the_mask_parameter() {
        for arch in crate::ptx::archs() {
            let params = crate::ptx::entry_params(crate::ptx::text(arch).unwrap());
            let of = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, p)| p.clone());
            for &(long, short) in SHORT_MASK_KERNELS {
                let (l, s) = (of(long).expect(long), of(short).expect(short));
                let elem = if short.ends_with("f64") { 8 } else { 4 };
                assert_eq!(l[..l.len() - 1], s[..s.len() - 1], "sm_{arch}: {long} vs {short}");
                assert_eq!((l.last(), s.last()), (Some(&PARAM_MASK_BYTES), Some(&(FIXED_MASK_TAPS * elem))));
            }
        }
    }

    #[test]
    fn masks_that_fit_take_the_short_forms() {
        let l = DeviceLimits::H100;
        let kernel = |w, v| plan_1d::<f32>(&l, w, v, 1 << 20).unwrap().kernel;
        for w in [1, 7, 33, 64] {
            assert_eq!(kernel(w, Conv1dVariant::Const), "conv1d_const_short_f32");
            assert_eq!(kernel(w, Conv1dVariant::Tiled), "conv1d_tiled_short_f32");
            assert_eq!(kernel(w, Conv1dVariant::TiledL2), "conv1d_tiled_l2_short_f32");
        }
        // The fast kernel's compile-time forms cover every mask that fits.
        assert_eq!(kernel(33, Conv1dVariant::Fast), "conv1d_fast9_f32");
        assert_eq!(kernel(64, Conv1dVariant::Fast), "conv1d_fast16_f32");
        assert_eq!(kernel(65, Conv1dVariant::Fast), "conv1d_fast_f32");
        assert_eq!(kernel(65, Conv1dVariant::Const), "conv1d_const_f32");
        assert_eq!(plan_1d::<f64>(&l, 64, Conv1dVariant::TiledL2, 99).unwrap().kernel, "conv1d_tiled_l2_short_f64");
        assert_eq!(short_mask_form("conv1d_basic_f32", 3), "conv1d_basic_f32");
        assert_eq!(short_mask_form("conv2d_fast_f64", 64), "conv2d_fast_short_f64");
        assert_eq!(short_mask_form("conv2d_fast_f64", 65), "conv2d_fast_f64");
    }

    #[test]
    fn names_parse() {
        for v in Conv1dVariant::ALL {
            assert_eq!(v.name().parse::<Conv1dVariant>().unwrap(), v);
        }
        for b in Boundary::ALL {
            assert_eq!(parse_boundary(b.name()).unwrap(), b);
            assert_eq!(parse_boundary(b.scipy_name()).unwrap(), b);
        }
        assert!(parse_boundary("clamp").is_err());
        assert_eq!("convolve".parse::<ConvOp>().unwrap(), ConvOp::Convolve);
    }

    #[test]
    fn plans_follow_the_device_limits() {
        let h = DeviceLimits::H100;
        let p = plan_1d::<f32>(&h, 31, Conv1dVariant::Auto, 1 << 27).unwrap();
        assert_eq!((p.variant, p.kernel, p.mask), (Conv1dVariant::Fast, "conv1d_fast8_f32", MaskSource::Constant));
        assert_eq!(p.grid as usize, (1usize << 27).div_ceil(FAST_OUTPUTS * 256));
        assert_eq!(p.shared_bytes as usize, fast_shared_total(256, 31) * 4);
        let p = plan_1d::<f32>(&h, 5, Conv1dVariant::Tiled, 1000).unwrap();
        assert_eq!((p.kernel, p.shared_bytes, p.grid), ("conv1d_tiled_short_f32", (256 + 4) * 4, 4));
        // The widest constant mask, and one more tap.
        let max = max_constant_taps::<f32>();
        assert_eq!(plan_1d::<f32>(&h, max, Conv1dVariant::Const, 9).unwrap().kernel, "conv1d_const_f32");
        let p = plan_1d::<f32>(&h, max + 1, Conv1dVariant::Const, 9).unwrap();
        assert_eq!((p.kernel, p.mask), ("conv1d_basic_f32", MaskSource::Global));
        assert_eq!(plan_1d::<f64>(&h, 2049, Conv1dVariant::Fast, 9).unwrap().kernel, "conv1d_fast_gm_f64");
        // The compile-time fast kernels: one per 4-tap chunk count up to
        // FAST_FIXED_MAX taps, the run-time one beyond.
        for (w, k) in [
            (1, "conv1d_fast1_f32"),
            (4, "conv1d_fast1_f32"),
            (5, "conv1d_fast2_f32"),
            (32, "conv1d_fast8_f32"),
            (33, "conv1d_fast9_f32"),
            (63, "conv1d_fast16_f32"),
            (64, "conv1d_fast16_f32"),
        ] {
            assert_eq!(plan_1d::<f32>(&h, w, Conv1dVariant::Fast, 9).unwrap().kernel, k, "w = {w}");
        }
        assert_eq!(plan_1d::<f64>(&h, 9, Conv1dVariant::Auto, 9).unwrap().kernel, "conv1d_fast3_f64");
        let runtime = |w| plan_1d::<f32>(&h, w, Conv1dVariant::Fast, 9).unwrap().kernel;
        // The compile-time forms read their taps from the short parameter.
        const { assert!(FAST_FIXED_MAX <= FIXED_MASK_TAPS) };
        assert_eq!(runtime(FAST_FIXED_MAX + 1), "conv1d_fast_f32");
        assert!(fast_fixed_kernel(0, "f32").is_err() && fast_fixed_kernel(17, "f32").is_err());
        assert!(fast_fixed_kernel(1, "f16").is_err());
        // A tile that cannot fit: an error naming the limit, and Auto falls back.
        let huge = 100_000;
        let e = plan_1d::<f32>(&h, huge, Conv1dVariant::Tiled, 9).unwrap_err().to_string();
        assert!(e.contains("shared memory") && e.contains(&h.max_shared_per_block_optin.to_string()), "{e}");
        assert_eq!(plan_1d::<f32>(&h, huge, Conv1dVariant::Auto, 9).unwrap().kernel, "conv1d_tiled_l2_gm_f32");
        assert!(plan_1d::<f32>(&h, 0, Conv1dVariant::Basic, 9).is_err());
        // Zero elements still plan (and launch nothing).
        assert_eq!(plan_1d::<f32>(&h, 3, Conv1dVariant::Basic, 0).unwrap().grid, 1);
    }

    /// The directives between `.entry name(…)` and its `{` in `ptx`,
    /// comments dropped, one per line.
    fn entry_directives(ptx: &str, name: &str) -> Option<String> {
        let header = format!(".entry {name}(");
        let start = ptx.find(&header)? + header.len();
        let close = start + ptx[start..].find(')')?;
        let open = close + ptx[close..].find('{')?;
        let lines: Vec<&str> = ptx[close + 1..open]
            .lines()
            .map(|l| l.split("//").next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .collect();
        Some(lines.join("\n"))
    }

    #[test]
    fn embedded_ptx_carries_the_launch_bounds() {
        use coalesce_kernels::{LAUNCH_BOUNDS, LAUNCH_BOUNDS_MIN_SM};
        assert!(!LAUNCH_BOUNDS.is_empty());
        let archs = crate::ptx::archs();
        assert!(archs.iter().any(|&sm| sm >= LAUNCH_BOUNDS_MIN_SM), "no embedded PTX for sm_{LAUNCH_BOUNDS_MIN_SM}+");
        for sm in archs {
            let ptx = crate::ptx::text(sm).unwrap();
            for &(name, threads, blocks) in LAUNCH_BOUNDS {
                let Some(d) = entry_directives(ptx, name) else {
                    // The tensor-core, bf16, register-blocked and box rows
                    // u8 and streamed separable kernels exist from sm_80
                    // on only.
                    let late = name.contains("_tensor_")
                        || name.ends_with("_bf16")
                        || name.starts_with("conv2d_sepr")
                        || name.starts_with("conv2d_sepb")
                        || name.starts_with("conv2d_boxr")
                        || name.starts_with("conv2d_seps");
                    assert!(sm < 80 && late, "sm_{sm}: no entry {name}");
                    continue;
                };
                let want = format!(".maxntid {threads}, 1, 1\n.minnctapersm {blocks}");
                if sm >= LAUNCH_BOUNDS_MIN_SM {
                    assert_eq!(d, want, "sm_{sm}: {name}");
                } else {
                    assert_eq!(d, "", "sm_{sm}: {name} has directives below sm_{LAUNCH_BOUNDS_MIN_SM}");
                }
            }
        }
    }

    #[test]
    fn plans_stay_within_the_launch_bounds() {
        let bound = |k: &str| coalesce_kernels::LAUNCH_BOUNDS.iter().find(|b| b.0 == k).map(|b| b.1);
        let mut checked = 0;
        for limits in [DeviceLimits::H100, DeviceLimits { max_threads_per_block: 2048, ..DeviceLimits::H100 }] {
            for v in Conv1dVariant::ALL.into_iter().chain([Conv1dVariant::Auto]) {
                for w in [1, 3, 31, 2049, 5000] {
                    let (p32, p64) = (
                        plan_1d::<f32>(&limits, w, v, 1 << 20).unwrap(),
                        plan_1d::<f64>(&limits, w, v, 1 << 20).unwrap(),
                    );
                    for p in [p32, p64] {
                        if let Some(t) = bound(p.kernel) {
                            assert!(p.threads <= t, "{} at {} threads, bound {t}", p.kernel, p.threads);
                            checked += 1;
                        }
                    }
                }
            }
            for v in Conv2dVariant::ALL {
                for mask in [(1, 1), (5, 5), (31, 3), (91, 91)] {
                    for p in [
                        conv2d::plan_conv2d::<f32>(&limits, v, mask, (8192, 8192)).unwrap(),
                        conv2d::plan_conv2d::<f64>(&limits, v, mask, (1000, 7)).unwrap(),
                    ] {
                        if let Some(t) = bound(p.kernel) {
                            assert!(p.block.0 * p.block.1 <= t, "{} at {:?}, bound {t}", p.kernel, p.block);
                            checked += 1;
                        }
                    }
                }
            }
            let s = conv2d::plan_separable::<f32>(&limits, 31, 31, (8192, 8192)).unwrap();
            for p in [s.rows, s.cols] {
                let t = bound(p.kernel).expect("the separable passes have launch bounds");
                assert!(p.block.0 * p.block.1 <= t, "{} at {:?}, bound {t}", p.kernel, p.block);
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} plans had launch bounds");
    }

    #[test]
    fn fast_grid_is_capped_at_the_resident_blocks() {
        let h = DeviceLimits::H100;
        let p = plan_1d::<f32>(&h, 31, Conv1dVariant::Fast, 1 << 27).unwrap();
        assert_eq!(p.grid, 131_072);
        let c = persistent_grid(p, 132, 5);
        assert_eq!(c.grid, 132 * 5 * FAST_WAVES);
        assert_eq!(Conv1dPlan { grid: p.grid, ..c }, p, "only the grid changes");
        // Fewer tiles than resident blocks: one block per tile.
        let small = plan_1d::<f32>(&h, 3, Conv1dVariant::Fast, 5000).unwrap();
        assert_eq!(persistent_grid(small, 132, 8).grid, 5);
        // Degenerate device figures still give a launchable grid.
        assert_eq!(persistent_grid(p, 0, 0).grid, FAST_WAVES);
    }

    #[test]
    fn model_matches_the_lesson() {
        // w = 2n + 1 = 5, blockDim = 256.
        assert_eq!(Conv1dVariant::Basic.model_loads_per_output(5, 256), 5.0);
        assert_eq!(Conv1dVariant::Tiled.model_loads_per_output(5, 256), (256.0 + 4.0) / 256.0);
        assert_eq!(Conv1dVariant::Tiled.model_edge_loads_per_output(5, 256), (256.0 + 2.0) / 256.0);
    }
}
