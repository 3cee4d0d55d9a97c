//! 2D convolution: the lesson's 2D kernels, a fast register-blocked one,
//! and separable convolution as a row pass and a column pass.
//!
//! ```no_run
//! use coalesce_host::conv::conv2d::{Conv2d, Conv2dVariant, Separable};
//! use coalesce_host::conv::{Boundary, ConvOp};
//! use coalesce_host::Gpu;
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = Gpu::new()?;
//! let (w, h) = (1920, 1080);
//! let image: Vec<f32> = (0..w * h).map(|i| (i % 255) as f32).collect();
//! let input = gpu.upload(&image)?;
//! let mut output = gpu.alloc_zeroed::<f32>(w * h)?;
//! // A 3 × 3 box blur, reflected at the edges.
//! let conv = Conv2d::new(&gpu, &[1.0 / 9.0; 9], 3, 3, ConvOp::Correlate, Boundary::Reflect)?;
//! conv.run(Conv2dVariant::Auto, &input.as_view(), &mut output.as_view_mut(), w, h, w)?;
//! // A Gaussian blur in two 1D passes.
//! let blur = Separable::<f32>::gaussian(&gpu, 2.0, 2.0, Boundary::Nearest)?;
//! blur.run(&input.as_view(), &mut output.as_view_mut(), w, h, w)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout and semantics
//!
//! Images are `width × height` elements whose rows start `pitch` elements
//! apart (`pitch ≥ width`; contiguous images pass `pitch = width`); input
//! and output share the layout, and the elements between `width` and
//! `pitch` are neither read nor written. Masks are `mh` rows of `mw` taps,
//! row-major. [`ConvOp::Correlate`] equals `scipy.ndimage.correlate`,
//! [`ConvOp::Convolve`] equals `scipy.ndimage.convolve` (the mask reversed
//! along both axes, the centre shifted per axis for even sizes, see
//! [`correlation_taps_2d`]); the boundary mode applies to each axis on its
//! own.
//!
//! # Which kernel runs
//!
//! Masks of up to [`max_constant_taps`] taps live in constant memory (each
//! launch passes them by value in the kernel's parameter space, see
//! [`super`]); wider ones make the tiled and fast variants use their `_gm_` kernels
//! and [`Conv2dVariant::Const`] run the basic kernel. Tile shapes come
//! from the device's limits: the block's rows shrink until the shared
//! tile fits (see [`plan_conv2d`]). The separable passes read their 1D
//! masks from global memory (they are tiny and stay in the L1 cache).
//!
//! [`Conv2dVariant::Tensor`] runs large `f32` masks on tensor cores (sm_80
//! and newer; `conv::tensor2d` in the device crate): the data as the `A`
//! operand of `mma.sync`, banded Toeplitz blocks of the mask rows as `B`,
//! at the convolution's [`Precision`] ([`Conv2d::with_precision`]).
//! `Auto` takes it from 9 × 9, the centred 9 × 9, 11 × 11 and 13 × 13
//! aside, which the FMA register form runs faster ([`tensor2d_auto`]);
//! where it cannot run,
//! [`Conv2d::tensor_support`] says why.

use std::sync::{Arc, Mutex};

pub use coalesce_kernels::conv::conv2d::{
    FAST_X, FAST_Y, SEP_THREADS, SEP_TX, SEP_TY, STRIP_H, fast_in_registers, fast_row_stride, fast_shared_elems,
    sep_shared_elems, strip_band_rows, strip_block_warps, strip_blocked, strip_ext, strip_pass_ring, strip_ring,
    strip_row, strip_rows, strip_shared_elems, tiled_shared_elems,
};
pub use coalesce_kernels::conv::sepstream::{
    SEPS_CHUNK, SEPS_HALVES, SEPS_MAX_TAPS, SEPS_PARAM_BYTES, SEPS_STRIP, SEPS_THREADS, seps_blocks, seps_shared_bytes,
    seps_task,
};
pub use coalesce_kernels::conv::tensor2d::{
    T2_MAX_MW, T2_THREADS, T2_TX, T2_TY, t2_kernel, t2_mask_table, t2_shared_bytes, t2_steps, t2_table_floats, t2_takes,
};

use super::{
    Boundary, ConvElem, ConvOp, MaskParams, MaskSource, Precision, TC_MIN_TAPS, gaussian, max_constant_taps,
    short_mask_form,
};
use crate::device::DeviceLimits;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{DevicePtr, KernelArg, LaunchConfig, ParamArray};
use crate::memory::{DeviceBuffer, DeviceView, DeviceViewMut};
use crate::module::PtxModule;
use coalesce_kernels::conv::boundary::axis_maps32;

/// Threads per block along x of every 2D kernel: one warp per block row,
/// so each warp reads whole rows (coalesced).
pub const BLOCK_X: u32 = 32;

/// The most threads per block along y; plans use fewer rows when the
/// shared tile would not fit otherwise.
pub const BLOCK_Y: u32 = 8;

/// The 2D kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conv2dVariant {
    /// The fastest variant that runs for this mask: `Tensor` for `f32`
    /// masks [`tensor2d_auto`] names where the device has tensor cores,
    /// otherwise `Fast` (`Const` when its shared tile cannot fit).
    Auto,
    /// Mask and inputs from global memory, one output per thread.
    Basic,
    /// Mask in constant memory, inputs from global memory.
    Const,
    /// Inputs and halo cells in a shared tile, one output per thread.
    Tiled,
    /// Register blocking: [`FAST_Y`] × [`FAST_X`] outputs per thread over a
    /// shared tile, 4-wide shared reads.
    Fast,
    /// Tensor cores (`mma.sync` TF32, sm_80 and newer, `f32` only, masks
    /// that [`t2_takes`] accepts: rows of at most [`T2_MAX_MW`] taps, at
    /// least [`TC_MIN_TAPS`] taps in all):
    /// the data times banded Toeplitz blocks of the mask rows, at the
    /// convolution's [`Precision`] (see `conv::tensor2d`).
    Tensor,
}

impl Conv2dVariant {
    /// The four kernels, in the lesson's order.
    pub const ALL: [Conv2dVariant; 4] =
        [Conv2dVariant::Basic, Conv2dVariant::Const, Conv2dVariant::Tiled, Conv2dVariant::Fast];

    /// Short name (`basic`, `const`, `tiled`, `fast`, `auto`).
    pub fn name(self) -> &'static str {
        match self {
            Conv2dVariant::Auto => "auto",
            Conv2dVariant::Basic => "basic",
            Conv2dVariant::Const => "const",
            Conv2dVariant::Tiled => "tiled",
            Conv2dVariant::Fast => "fast",
            Conv2dVariant::Tensor => "tensor",
        }
    }
}

impl std::str::FromStr for Conv2dVariant {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Conv2dVariant::ALL
            .into_iter()
            .chain([Conv2dVariant::Tensor, Conv2dVariant::Auto])
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown variant `{s}` (basic, const, tiled, fast, tensor, auto)"))
    }
}

/// What one 2D launch is (or would be).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dPlan {
    /// The variant asked for (resolved when `Auto`).
    pub variant: Conv2dVariant,
    /// The kernel that runs.
    pub kernel: &'static str,
    /// Where it reads the mask.
    pub mask: MaskSource,
    /// Threads per block, `(x, y)`.
    pub block: (u32, u32),
    /// Blocks, `(x, y)`.
    pub grid: (u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
    /// Outputs each block computes per tile, `(columns, rows)`.
    pub tile: (usize, usize),
}

impl Conv2dPlan {
    /// The launch configuration.
    pub fn launch_config(&self) -> LaunchConfig {
        LaunchConfig::new(self.grid, self.block).with_shared_mem(self.shared_bytes)
    }
}

/// The algorithms a plan can name (kernel families).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algo {
    Basic,
    Const,
    Tiled,
    Fast,
    /// The fast variant's register form for a centred `n × n` mask.
    Strip(usize),
    Rows,
    Cols,
}

/// The kernel name for `algo`, mask in global memory or not, element
/// type `ty`.
fn kernel_name(algo: Algo, global: bool, ty: &str) -> Result<&'static str> {
    let f32 = ty == "f32";
    let name = match (algo, global, ty) {
        (Algo::Basic, _, "f32" | "f64") => ["conv2d_basic_f64", "conv2d_basic_f32"][f32 as usize],
        (Algo::Const, _, "f32" | "f64") => ["conv2d_const_f64", "conv2d_const_f32"][f32 as usize],
        (Algo::Tiled, false, "f32" | "f64") => ["conv2d_tiled_f64", "conv2d_tiled_f32"][f32 as usize],
        (Algo::Tiled, true, "f32" | "f64") => ["conv2d_tiled_gm_f64", "conv2d_tiled_gm_f32"][f32 as usize],
        (Algo::Fast, false, "f32" | "f64") => ["conv2d_fast_f64", "conv2d_fast_f32"][f32 as usize],
        (Algo::Fast, true, "f32" | "f64") => ["conv2d_fast_gm_f64", "conv2d_fast_gm_f32"][f32 as usize],
        (Algo::Strip(3), false, "f32" | "f64") => ["conv2d_strip3_f64", "conv2d_strip3_f32"][f32 as usize],
        (Algo::Strip(5), false, "f32" | "f64") => ["conv2d_strip5_f64", "conv2d_strip5_f32"][f32 as usize],
        (Algo::Strip(7), false, "f32" | "f64") => ["conv2d_strip7_f64", "conv2d_strip7_f32"][f32 as usize],
        (Algo::Strip(9), false, "f32") => "conv2d_strip9_f32",
        (Algo::Strip(11), false, "f32") => "conv2d_strip11_f32",
        (Algo::Strip(13), false, "f32") => "conv2d_strip13_f32",
        (Algo::Rows, _, "f32" | "f64") => ["conv2d_rows_f64", "conv2d_rows_f32"][f32 as usize],
        (Algo::Cols, _, "f32" | "f64") => ["conv2d_cols_f64", "conv2d_cols_f32"][f32 as usize],
        _ => {
            return Err(Error::InvalidArgument {
                op: "conv2d",
                message: format!("no {algo:?} kernel for element type {ty}"),
            });
        }
    };
    Ok(name)
}

/// Plans the launch of `algo` for an `mw × mh` mask of `elem_size`-byte
/// elements over a `width × height` image on a device with `limits`:
/// blocks of [`BLOCK_X`] × `by` threads, `by` the largest of
/// [`BLOCK_Y`], 4, 2, 1 whose shared tile fits the opt-in limit; one
/// block per tile, capped at the grid limits (the kernels walk the
/// remaining tiles grid-stride).
#[allow(clippy::too_many_arguments)]
fn plan_algo(
    limits: &DeviceLimits,
    algo: Algo,
    global: bool,
    ty: &'static str,
    elem_size: usize,
    (mw, mh): (usize, usize),
    (width, height): (usize, usize),
) -> Result<Conv2dPlan> {
    let bx = BLOCK_X.min(limits.max_block_dim[0]).min(limits.max_threads_per_block).max(1);
    let shared_max = limits.max_shared_per_block_optin as usize;
    let shared_of = |by: usize| -> Option<usize> {
        let b = bx as usize;
        let elems = match algo {
            Algo::Basic | Algo::Const => Some(0),
            Algo::Strip(_) => Some(strip_shared_elems(b, by, strip_ring(mh, elem_size), strip_row(mw))),
            Algo::Tiled => (by + mh).checked_sub(1).zip((b + mw).checked_sub(1)).and_then(|(r, c)| r.checked_mul(c)),
            Algo::Fast | Algo::Rows | Algo::Cols => {
                let (w, h) = match algo {
                    Algo::Rows => (mw, 1),
                    Algo::Cols => (1, mh),
                    _ => (mw, mh),
                };
                let stride = (FAST_X * b).checked_add(FAST_X.checked_mul(w.div_ceil(FAST_X))?)?;
                (FAST_Y * by).checked_add(h - 1)?.checked_mul(stride)
            }
        }?;
        elems.checked_mul(elem_size).filter(|&bytes| bytes <= shared_max)
    };
    let max_by = BLOCK_Y.min(limits.max_block_dim[1]).min(limits.max_threads_per_block / bx).max(1);
    // The register form runs blocks of strip_block_warps warps.
    let max_by = match algo {
        Algo::Strip(n) => max_by.min(strip_block_warps(n, elem_size) as u32),
        _ => max_by,
    };
    let by = [max_by, 4, 2, 1].into_iter().filter(|&b| b <= max_by).find(|&b| shared_of(b as usize).is_some());
    let Some(by) = by else {
        return Err(Error::InvalidArgument {
            op: "conv2d",
            message: format!(
                "the {algo:?} kernel's shared tile for a {mw}×{mh} mask needs more than the {shared_max} bytes per \
                 block this device allows, even with one row of threads (use the basic or const variant)"
            ),
        });
    };
    let shared = shared_of(by as usize).unwrap_or(0);
    let (per_x, per_y) = match algo {
        Algo::Fast | Algo::Rows | Algo::Cols => (FAST_X, FAST_Y),
        Algo::Strip(_) => (FAST_X, strip_rows(mh, elem_size)),
        _ => (1, 1),
    };
    let tile = (per_x * bx as usize, per_y * by as usize);
    let grid_x = width.div_ceil(tile.0).clamp(1, limits.max_grid_dim[0] as usize) as u32;
    let grid_y = height.div_ceil(tile.1).clamp(1, limits.max_grid_dim[1] as usize) as u32;
    Ok(Conv2dPlan {
        variant: Conv2dVariant::Fast,
        kernel: short_mask_form(kernel_name(algo, global, ty)?, mw.saturating_mul(mh)),
        mask: if global || algo == Algo::Basic { MaskSource::Global } else { MaskSource::Constant },
        // (Strip kernels exist only for constant masks: see plan_conv2d.)
        block: (bx, by),
        grid: (grid_x, grid_y),
        shared_bytes: shared as u32,
        tile,
    })
}

/// The band kernel: `conv2d_strip9_f32` with each warp's strip a band of
/// the image ([`strip_band_rows`]), launched as one wave of blocks.
pub const BAND9_KERNEL: &str = "conv2d_band9_f32";

/// Warps per block of the band kernel ([`BAND9_KERNEL`]), side by side:
/// blocks of 128 × 1 threads cover 512 columns, so that an 8192-column
/// image takes 16 blocks across and one wave of the H100's 660 resident
/// blocks 41 rows of them (656 blocks; with the strips' 4 warps one above
/// the other, 64 across and 10 rows, 640).
pub const BAND9_WARPS: usize = 4;

/// Whether [`Conv2d::plan`] runs the band kernel ([`BAND9_KERNEL`]) in
/// place of `plan` (the plan of the register kernels) for an `mw × mh`
/// mask in boundary mode `mode` over an image `width` columns wide: `f32`
/// 9 × 9 at widths that are a multiple of 4 in every mode whose ghost
/// cells the warps' rings hold (all but wrap), where no warp takes the
/// per-element edge path: in one wave the slowest warp sets the time.
/// Measured on the H100 at 8192² against the strips in turns
/// (`results/h100/band9/`): zero mode 81.6–81.8% of the floor against
/// 69.6–70.1%; in nearest, reflect and mirror modes, whose edge warps
/// write their rings' ghost columns in every pass, 75.6–76.5% against
/// 69.7–70.1%, and 78.5–79.2% (reflect and mirror, `run-3/`) since those
/// warps read every ghost cell's source before writing any.
pub fn band_applies(plan: &Conv2dPlan, (mw, mh): (usize, usize), mode: Boundary, width: usize) -> bool {
    plan.kernel == "conv2d_strip9_f32" && (mw, mh) == (9, 9) && mode != Boundary::Wrap && width.is_multiple_of(FAST_X)
}

/// Dynamic shared memory per block of the band kernel: the rings of
/// [`BAND9_WARPS`] warps, each as large as a warp's of `strip` (the
/// register kernel's plan for the same mask).
pub fn band_shared_bytes(strip: &Conv2dPlan) -> u32 {
    let warps = (strip.block.0 * strip.block.1).div_ceil(32).max(1);
    strip.shared_bytes / warps * BAND9_WARPS as u32
}

/// The band kernel's launch ([`BAND9_KERNEL`]) for a `width × height`
/// image, with `resident` of its blocks on the device at once: blocks of
/// [`BAND9_WARPS`] warps side by side, as many rows of them as one wave
/// holds, each warp a band of [`strip_band_rows`] rows (the kernel derives
/// the same height from its grid). `None` where the bands would be no
/// taller than the strips of `strip` (the register kernel's plan, whose
/// mask rows, ring and shared memory per warp the bands share): the image
/// is short enough that strips fill less than a wave.
pub fn band_plan(strip: &Conv2dPlan, resident: usize, (width, height): (usize, usize)) -> Option<Conv2dPlan> {
    let bx = 32 * BAND9_WARPS;
    let grid_x = width.div_ceil(FAST_X * bx).max(1);
    let rows_y = (resident / grid_x).max(1);
    let band = strip_band_rows(9, 4, height, rows_y);
    if band <= strip_rows(9, 4) || grid_x > u32::MAX as usize {
        return None;
    }
    Some(Conv2dPlan {
        kernel: BAND9_KERNEL,
        block: (bx as u32, 1),
        grid: (grid_x as u32, height.div_ceil(band) as u32),
        shared_bytes: band_shared_bytes(strip),
        tile: (FAST_X * bx, band),
        ..*strip
    })
}

/// The plan [`Conv2d::plan`] makes, computable without a GPU: `variant`
/// for an `mw × mh` mask of `T` over a `width × height` image on a device
/// with `limits`. Errors when the variant's shared tile cannot fit.
/// `Auto` resolves to the FMA kernels here ([`Conv2d::plan`] picks the
/// tensor cores where they run); `Tensor` plans
/// [`Precision::F32`] ([`plan_conv2d_at`] takes the precision).
pub fn plan_conv2d<T: ConvElem>(
    limits: &DeviceLimits,
    variant: Conv2dVariant,
    (mw, mh): (usize, usize),
    (width, height): (usize, usize),
) -> Result<Conv2dPlan> {
    plan_conv2d_at::<T>(limits, variant, Precision::F32, (mw, mh), (width, height))
}

/// Whether [`Conv2dVariant::Auto`] takes the tensor cores for an
/// `mw × mh` `f32` mask with `left` taps left of and above its centre, at
/// `precision` (where they run): from the crossovers measured with
/// `coalesce bench conv` (see `docs/wide-masks.md`): from 9 × 9, except
/// the masks the FMA register form runs faster ([`strip_over_tensor`]).
pub const fn tensor2d_auto(mw: usize, mh: usize, left: (usize, usize), precision: Precision) -> bool {
    mw >= 9 && mh >= 9 && mw <= T2_MAX_MW && !strip_over_tensor(mw, mh, left, precision)
}

/// True when the FMA register form of an `mw × mh` `f32` mask with
/// `left` taps left of and above its centre runs faster than the tensor
/// cores at `precision`: every mask it takes ([`fast_in_registers`]),
/// but 13 × 13 at TF32. Measured on the H100 at 8192²
/// (`results/h100/strip-prologue/`): 9 × 9 at either precision (0.261 ms
/// against 0.485 ms at `f32` and 0.372 ms at TF32); 11 × 11 at either
/// (0.380 ms against 0.700 ms and 0.484 ms); 13 × 13 only against `f32`
/// (0.543 ms against 0.766 ms; TF32 takes 0.477 ms).
pub const fn strip_over_tensor(mw: usize, mh: usize, left: (usize, usize), precision: Precision) -> bool {
    fast_in_registers((mw, mh), left, 4) && !(matches!(precision, Precision::Tf32) && mw == 13)
}

/// The tensor-core plan for an `mw × mh` mask over `width × height`: one
/// block of [`T2_THREADS`] per [`T2_TX`] × [`T2_TY`] tile (the caller caps
/// the grid at the resident blocks).
fn plan_tensor2d<T: ConvElem>(
    limits: &DeviceLimits,
    precision: Precision,
    (mw, mh): (usize, usize),
    (width, height): (usize, usize),
) -> Result<Conv2dPlan> {
    if T::NAME != "f32" {
        return Err(Error::Unsupported {
            op: "conv2d",
            message: format!("the tensor-core kernels take f32 data, not {}", T::NAME),
        });
    }
    let kernel = t2_kernel(mw, precision == Precision::F32).ok_or_else(|| Error::Unsupported {
        op: "conv2d",
        message: format!("the 2D tensor-core kernels take mask rows of at most {T2_MAX_MW} taps, not {mw}"),
    })?;
    let bytes = t2_shared_bytes(mw, mh);
    let have = limits.max_shared_per_block_optin as usize;
    if bytes > have || (T2_THREADS as u32) > limits.max_threads_per_block {
        return Err(Error::Unsupported {
            op: "conv2d",
            message: format!(
                "a {mw}×{mh} mask needs {bytes} bytes of shared memory on the tensor cores; this device allows {have}"
            ),
        });
    }
    let tiles = width.div_ceil(T2_TX).saturating_mul(height.div_ceil(T2_TY));
    Ok(Conv2dPlan {
        variant: Conv2dVariant::Tensor,
        kernel,
        mask: MaskSource::Global,
        block: (T2_THREADS as u32, 1),
        grid: (tiles.clamp(1, limits.max_grid_dim[0] as usize) as u32, 1),
        shared_bytes: bytes as u32,
        tile: (T2_TX, T2_TY),
    })
}

/// [`plan_conv2d`] with the tensor-core kernels at `precision`.
pub fn plan_conv2d_at<T: ConvElem>(
    limits: &DeviceLimits,
    variant: Conv2dVariant,
    precision: Precision,
    (mw, mh): (usize, usize),
    (width, height): (usize, usize),
) -> Result<Conv2dPlan> {
    plan_conv2d_left::<T>(limits, variant, precision, (mw, mh), (mw / 2, mh / 2), (width, height))
}

/// [`plan_conv2d_at`] for a mask with `(left_x, left_y)` taps left of and
/// above the centre: the register form only where that centres it.
fn plan_conv2d_left<T: ConvElem>(
    limits: &DeviceLimits,
    variant: Conv2dVariant,
    precision: Precision,
    (mw, mh): (usize, usize),
    left: (usize, usize),
    (width, height): (usize, usize),
) -> Result<Conv2dPlan> {
    check_mask_dims(mw.saturating_mul(mh), mw, mh)?;
    if variant == Conv2dVariant::Tensor {
        return plan_tensor2d::<T>(limits, precision, (mw, mh), (width, height));
    }
    let size = std::mem::size_of::<T>();
    let global = mw * mh > max_constant_taps::<T>();
    let plan = |algo| plan_algo(limits, algo, global, T::NAME, size, (mw, mh), (width, height));
    // The fast variant's register form: centred 3 × 3, 5 × 5, 7 × 7 masks,
    // and 9 × 9, 11 × 11, 13 × 13 for f32 (odd sizes are centred for both
    // operations), image axes below 2³⁰ (its boundary map runs in 32-bit
    // arithmetic, where reflect and mirror need twice the axis), blocks of
    // whole warps.
    let strip = !global
        && fast_in_registers((mw, mh), left, size)
        && axis_maps32(width)
        && axis_maps32(height)
        && BLOCK_X.min(limits.max_block_dim[0]).min(limits.max_threads_per_block) == BLOCK_X;
    let fast = if strip { Algo::Strip(mw) } else { Algo::Fast };
    let (variant, plan) = match variant {
        Conv2dVariant::Auto => match plan(fast) {
            Ok(p) => (Conv2dVariant::Fast, p),
            Err(_) if !global => (Conv2dVariant::Const, plan(Algo::Const)?),
            Err(_) => (Conv2dVariant::Const, plan(Algo::Basic)?),
        },
        Conv2dVariant::Basic => (variant, plan(Algo::Basic)?),
        Conv2dVariant::Const if !global => (variant, plan(Algo::Const)?),
        Conv2dVariant::Const => (variant, plan(Algo::Basic)?),
        Conv2dVariant::Tiled => (variant, plan(Algo::Tiled)?),
        Conv2dVariant::Fast => (variant, plan(fast)?),
        Conv2dVariant::Tensor => unreachable!("planned above"),
    };
    Ok(Conv2dPlan { variant, ..plan })
}

/// The launches of a separable convolution: the fused kernel when its
/// tile fits the device's shared memory, otherwise the two passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeparablePlan {
    /// The fused single-pass kernel, when it runs: streamed
    /// (`conv2d_seps_f32_h*`, see [`plan_streamed`]; `tile` is its strip
    /// width and band rows) or tiled (`conv2d_sep_*`: rows then columns
    /// through shared memory); no intermediate image either way.
    pub fused: Option<Conv2dPlan>,
    /// The row pass (input → intermediate) of the two-pass form.
    pub rows: Conv2dPlan,
    /// The column pass (intermediate → output) of the two-pass form.
    pub cols: Conv2dPlan,
}

impl SeparablePlan {
    /// The kernels that run, as reports name them.
    pub fn kernels(&self) -> String {
        match self.fused {
            Some(f) => f.kernel.to_string(),
            None => format!("{} + {}", self.rows.kernel, self.cols.kernel),
        }
    }
}

/// The plan [`Separable::plan`] makes without the streamed kernels
/// ([`plan_streamed`]), computable without a GPU: a `1 × mw` row pass
/// then an `mh × 1` column pass over `width × height`, and the tiled fused
/// kernel when its tile fits.
pub fn plan_separable<T: ConvElem>(
    limits: &DeviceLimits,
    mw: usize,
    mh: usize,
    (width, height): (usize, usize),
) -> Result<SeparablePlan> {
    check_mask_dims(mw, mw, 1)?;
    check_mask_dims(mh, 1, mh)?;
    let size = std::mem::size_of::<T>();
    let pass = |algo, dims| plan_algo(limits, algo, true, T::NAME, size, dims, (width, height));
    let rows = pass(Algo::Rows, (mw, 1))?;
    let fused = sep_shared_elems(mw, mh)
        .checked_mul(size)
        .filter(|&b| {
            b <= limits.max_shared_per_block_optin as usize && SEP_THREADS as u32 <= limits.max_threads_per_block
        })
        .map(|bytes| {
            let tiles = width.div_ceil(SEP_TX).saturating_mul(height.div_ceil(SEP_TY));
            Conv2dPlan {
                variant: rows.variant,
                kernel: if T::NAME == "f32" { "conv2d_sep_f32" } else { "conv2d_sep_f64" },
                mask: MaskSource::Global,
                block: (SEP_THREADS as u32, 1),
                grid: (tiles.clamp(1, limits.max_grid_dim[0] as usize) as u32, 1),
                shared_bytes: bytes as u32,
                tile: (SEP_TX, SEP_TY),
            }
        });
    Ok(SeparablePlan { fused, rows, cols: pass(Algo::Cols, (1, mh))? })
}

/// The streamed separable kernels (`conv2d_seps_f32_h{H}`), by the half
/// width `H` of their window (`2H + 1` taps per axis).
pub const SEPS_KERNELS: [(usize, &str); 12] = [
    (1, "conv2d_seps_f32_h1"),
    (2, "conv2d_seps_f32_h2"),
    (3, "conv2d_seps_f32_h3"),
    (4, "conv2d_seps_f32_h4"),
    (5, "conv2d_seps_f32_h5"),
    (6, "conv2d_seps_f32_h6"),
    (7, "conv2d_seps_f32_h7"),
    (8, "conv2d_seps_f32_h8"),
    (10, "conv2d_seps_f32_h10"),
    (12, "conv2d_seps_f32_h12"),
    (15, "conv2d_seps_f32_h15"),
    (20, "conv2d_seps_f32_h20"),
];

/// The streamed kernel whose window holds a row mask of `mw` taps with
/// `lx` left of its centre and a column mask of `mh` taps with `ly` above
/// it (the narrowest built window that reaches as far as either does on
/// either side): its half width and name, `None` past the widest.
pub fn seps_kernel((mw, lx): (usize, usize), (mh, ly): (usize, usize)) -> Option<(usize, &'static str)> {
    let reach = |w: usize, left: usize| left.max(w.max(1) - 1 - left.min(w.max(1) - 1));
    let need = reach(mw, lx).max(reach(mh, ly));
    SEPS_KERNELS.into_iter().find(|&(h, _)| h >= need)
}

/// Output rows of each band of the streamed kernel at half width `h`
/// (a multiple of [`SEPS_CHUNK`]): 16 up to `H` = 5, 24 at `H` = 6, `8H`
/// beyond. Measured on the H100 at 8192² (`docs/wide-masks.md`): short
/// bands in many waves keep DRAM busier than one long wave (3 × 3: 84%
/// of the floor with 16 rows, 74% with one wave of 224 rows), while wide
/// windows need long bands to spread the row pass over their `2H` halo
/// rows (31 × 31: 56% with 120 rows, 54% with 80). Between them the best
/// length moves by mask: 11 × 11 84–85% with 16 rows, 81–85% with 24, 80%
/// with 40; 13 × 13 77–78% with 16, 80–85% with 24, 79–80% with 48;
/// 15 × 15 and 17 × 17 no better than at `8H`.
pub const fn seps_band_rows(h: usize) -> usize {
    match h {
        0..=5 => 16,
        6 => 24,
        _ => 8 * h,
    }
}

/// The streamed kernel's launch for a `width × height` `T` image (`f32`
/// on sm_80 and newer, a window [`seps_kernel`] holds, axes below 2³⁰),
/// `per_sm` of its blocks resident on each of `sm_count` SMs: bands of
/// output rows (multiples of [`SEPS_CHUNK`]) that fill whole waves of
/// the device with the least halo. `None` where it does not run (the
/// tiled fused kernel does). The input's and output's alignment (16-byte
/// bases, pitch a multiple of 4 elements) is checked when it runs.
#[allow(clippy::too_many_arguments)]
pub fn plan_streamed<T: ConvElem>(
    limits: &DeviceLimits,
    cc_major: u32,
    sm_count: u32,
    per_sm: u32,
    x: (usize, usize),
    y: (usize, usize),
    (width, height): (usize, usize),
) -> Option<Conv2dPlan> {
    let (h, kernel) = seps_kernel(x, y)?;
    let small = |n: usize| n > 0 && axis_maps32(n);
    if T::NAME != "f32" || cc_major < 8 || !small(width) || !small(height) {
        return None;
    }
    let bytes = seps_shared_bytes(h);
    if bytes > limits.max_shared_per_block as usize || (SEPS_THREADS as u32) > limits.max_threads_per_block {
        return None;
    }
    let resident = (sm_count.max(1) as usize).saturating_mul(per_sm.max(1) as usize);
    let blocks = |r: usize| seps_blocks(width as u32, height as u32, r as u32) as usize;
    // An image too small for a wave of bands of seps_band_rows(h) takes
    // the bands that fill its one wave with the least halo.
    let target = seps_band_rows(h).min(height.next_multiple_of(SEPS_CHUNK));
    let cost = |r: usize| blocks(r).div_ceil(resident) * (r + 2 * h);
    let rows = if blocks(target) >= resident {
        target
    } else {
        (1..=target / SEPS_CHUNK).map(|i| i * SEPS_CHUNK).min_by_key(|&r| (cost(r), usize::MAX - r))?
    };
    if blocks(rows) > limits.max_grid_dim[0] as usize {
        return None;
    }
    Some(Conv2dPlan {
        variant: Conv2dVariant::Fast,
        kernel,
        mask: MaskSource::Constant,
        block: (SEPS_THREADS as u32, 1),
        grid: (blocks(rows) as u32, 1),
        shared_bytes: bytes as u32,
        tile: (SEPS_STRIP, rows),
    })
}

/// Checks a mask's dimensions against its length: both at least 1,
/// `len = mw · mh`, each below 2³² (the kernels take 32-bit sizes).
pub fn check_mask_dims(len: usize, mw: usize, mh: usize) -> Result<()> {
    let bad = |message: String| Err(Error::InvalidArgument { op: "conv2d", message });
    if mw == 0 || mh == 0 {
        return bad(format!("the mask is {mw}×{mh}: both dimensions must be at least 1"));
    }
    if u32::try_from(mw).is_err() || u32::try_from(mh).is_err() {
        return bad(format!("a {mw}×{mh} mask is larger than the kernels accept (2^32 − 1 per axis)"));
    }
    match mw.checked_mul(mh) {
        Some(n) if n == len => Ok(()),
        Some(n) => Err(Error::LengthMismatch { op: "conv2d mask", expected: n, got: len }),
        None => bad(format!("a {mw}×{mh} mask has more taps than memory can hold")),
    }
}

/// Checks an image layout against the views that hold it: `pitch ≥
/// width`, and views of at least `(height − 1) · pitch + width` elements
/// (nothing when either dimension is 0: there is nothing to do).
/// Returns that element count.
pub fn check_layout(input_len: usize, output_len: usize, width: usize, height: usize, pitch: usize) -> Result<usize> {
    if pitch < width {
        return Err(Error::InvalidArgument {
            op: "conv2d",
            message: format!("pitch {pitch} is less than the width {width} (pitch counts elements per row)"),
        });
    }
    let need = if width == 0 || height == 0 {
        0
    } else {
        (height - 1).checked_mul(pitch).and_then(|v| v.checked_add(width)).ok_or_else(|| Error::InvalidArgument {
            op: "conv2d",
            message: format!("a {width}×{height} image with pitch {pitch} has more elements than memory can hold"),
        })?
    };
    if input_len < need {
        return Err(Error::LengthMismatch { op: "conv2d input", expected: need, got: input_len });
    }
    if output_len < need {
        return Err(Error::LengthMismatch { op: "conv2d output", expected: need, got: output_len });
    }
    Ok(need)
}

/// The correlation taps, `left_x` and `left_y` that compute `op` with the
/// row-major `mw × mh` mask `mask`: the mask and `(mw / 2, mh / 2)` for a
/// correlation; the mask reversed along both axes (the row-major order
/// reversed) and `(mw − 1 − mw / 2, mh − 1 − mh / 2)` for a convolution,
/// as `scipy.ndimage.convolve` centres even sizes.
pub fn correlation_taps_2d<T: Copy>(op: ConvOp, mask: &[T], mw: usize, mh: usize) -> (Vec<T>, usize, usize) {
    let left = |w: usize| match op {
        ConvOp::Correlate => w / 2,
        ConvOp::Convolve => w.max(1) - 1 - w / 2,
    };
    let taps = match op {
        ConvOp::Correlate => mask.to_vec(),
        ConvOp::Convolve => mask.iter().rev().copied().collect(),
    };
    (taps, left(mw), left(mh))
}

/// Where a launch goes: the crate's module, or a loaded twin module with
/// the same kernel names and parameters.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    Crate(&'a Gpu),
    Twin(&'a PtxModule),
}

impl<'a> Target<'a> {
    pub(crate) fn new(gpu: &'a Gpu, module: Option<&'a PtxModule>) -> Result<Target<'a>> {
        match module {
            None => Ok(Target::Crate(gpu)),
            Some(m) if m.gpu().raw_context() == gpu.raw_context() => Ok(Target::Twin(m)),
            Some(_) => Err(Error::ForeignBuffer { op: "conv2d (module of another context)" }),
        }
    }

    /// Byte sizes of `kernel`'s parameters in this target's module.
    pub(crate) fn param_sizes(self, kernel: &'static str) -> Result<&'a [usize]> {
        match self {
            Target::Crate(gpu) => gpu.param_sizes(kernel),
            Target::Twin(m) => m.param_sizes(kernel),
        }
    }

    /// # Safety
    /// As [`Gpu::launch`].
    pub(crate) unsafe fn launch(self, name: &'static str, cfg: &LaunchConfig, args: &[&dyn KernelArg]) -> Result<()> {
        // SAFETY: forwarded to the caller's contract.
        unsafe {
            match self {
                Target::Crate(gpu) => gpu.launch(name, cfg, args),
                Target::Twin(m) => m.launch(name, cfg, args),
            }
        }
    }
}

/// The arguments every 2D kernel takes, in order.
struct Args {
    input: DevicePtr,
    output: DevicePtr,
    width: usize,
    height: usize,
    pitch: usize,
    mask: DevicePtr,
    mw: u32,
    mh: u32,
    left_x: u32,
    left_y: u32,
    mode: u32,
}

impl Args {
    /// Launches `plan` with these arguments, and `taps` by value as the
    /// last one when the plan's kernel reads its mask from constant memory.
    ///
    /// # Safety
    /// The pointers satisfy the kernel's contract (see
    /// `coalesce_kernels::conv::conv2d`).
    unsafe fn launch<T: ConvElem>(
        &self,
        target: Target<'_>,
        plan: &Conv2dPlan,
        taps: Option<(&MaskParams, &[T])>,
        table: Option<&DeviceBuffer<f32>>,
    ) -> Result<()> {
        let a = self;
        let mut args: Vec<&dyn KernelArg> = vec![
            &a.input, &a.output, &a.width, &a.height, &a.pitch, &a.mask, &a.mw, &a.mh, &a.left_x, &a.left_y, &a.mode,
        ];
        let param;
        let table_ptr = table.map(|t| t.device_ptr());
        if let Some(t) = &table_ptr {
            args.push(t);
        } else if plan.mask == MaskSource::Constant {
            let (built, taps) = taps.ok_or_else(|| Error::InvalidArgument {
                op: "conv2d",
                message: format!("kernel {} reads a constant mask and none was given", plan.kernel),
            })?;
            param = built.arg(plan.kernel, target.param_sizes(plan.kernel)?, taps)?;
            args.push(&*param);
        }
        // SAFETY: forwarded to the caller's contract; the argument list is
        // the kernel's parameter list.
        unsafe { target.launch(plan.kernel, &plan.launch_config(), &args) }
    }
}

/// Checks that two views live on `gpu` and fit the layout.
fn check_views<T: ConvElem>(
    gpu: &Gpu,
    input: &DeviceView<T>,
    output: &DeviceViewMut<T>,
    (width, height, pitch): (usize, usize, usize),
) -> Result<usize> {
    input.check_gpu(gpu, "conv2d")?;
    output.check_gpu(gpu, "conv2d")?;
    check_layout(input.len(), output.len(), width, height, pitch)
}

/// A 2D convolution ready to run: mask, operation and boundary mode, with
/// the mask already on the device.
pub struct Conv2d<T: ConvElem> {
    gpu: Gpu,
    taps: Vec<T>,
    mw: usize,
    mh: usize,
    left_x: usize,
    left_y: usize,
    op: ConvOp,
    mode: Boundary,
    mask: Arc<DeviceBuffer<T>>,
    params: Arc<MaskParams>,
    precision: Precision,
    /// The tensor-core kernels' mask table ([`t2_mask_table`]), built on
    /// first use and shared by the clones [`Conv2d::on`] makes.
    table: Arc<Mutex<Option<Arc<DeviceBuffer<f32>>>>>,
    /// [`Conv2d::tensor_support`], found once.
    support: Arc<std::sync::OnceLock<std::result::Result<(), String>>>,
}

impl<T: ConvElem> Conv2d<T> {
    /// Prepares the row-major `mw × mh` mask `mask` for operation `op`
    /// under boundary mode `mode`. A zero dimension or a length other
    /// than `mw · mh` is an error.
    pub fn new(gpu: &Gpu, mask: &[T], mw: usize, mh: usize, op: ConvOp, mode: Boundary) -> Result<Self> {
        check_mask_dims(mask.len(), mw, mh)?;
        let (taps, left_x, left_y) = correlation_taps_2d(op, mask, mw, mh);
        let dev = gpu.upload(&taps)?;
        let params = Arc::new(MaskParams::new(&taps));
        Ok(Conv2d {
            gpu: gpu.clone(),
            taps,
            mw,
            mh,
            left_x,
            left_y,
            op,
            mode,
            mask: Arc::new(dev),
            params,
            precision: Precision::F32,
            table: Arc::new(Mutex::new(None)),
            support: Arc::new(std::sync::OnceLock::new()),
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

    /// Whether [`Conv2dVariant::Auto`] takes the tensor cores for this
    /// mask (where they run): [`tensor2d_auto`].
    fn tensor_auto(&self) -> bool {
        tensor2d_auto(self.mw, self.mh, (self.left_x, self.left_y), self.precision)
    }

    /// Whether [`Conv2dVariant::Tensor`] can run this convolution here,
    /// and if not, why: `f32` data, a mask [`t2_takes`] accepts (rows of
    /// at most [`T2_MAX_MW`] taps, at least [`TC_MIN_TAPS`] in all), all
    /// finite, a device of sm_80 or
    /// newer whose loaded module holds the kernels, and a table and tile
    /// that fit in shared memory.
    pub fn tensor_support(&self) -> std::result::Result<(), String> {
        self.support
            .get_or_init(|| {
                let (mw, mh) = (self.mw, self.mh);
                if T::NAME != "f32" {
                    return Err(format!("the tensor-core kernels take f32 data, not {}", T::NAME));
                }
                if mw <= T2_MAX_MW && !t2_takes(mw, mh) {
                    return Err(format!(
                        "the 2D tensor-core kernels take masks of at least {TC_MIN_TAPS} taps with mh·(mw − \
                         t2_steps(mw)) ≥ 16, not {mw}×{mh} (below that the split's error could exceed the f32 bound; \
                         such masks run near the memory floor on the FMA kernels)"
                    ));
                }
                if self.taps.iter().any(|t| !t.to_f64().is_finite()) {
                    return Err("the mask holds an infinity or a NaN (the FMA kernels propagate them)".into());
                }
                let info = self.gpu.info();
                let kernels = t2_kernel(mw, true).zip(t2_kernel(mw, false));
                let Some((precise, fast)) = kernels else {
                    return Err(format!(
                        "the 2D tensor-core kernels take mask rows of at most {T2_MAX_MW} taps, not {mw}"
                    ));
                };
                if info.cc_major < 8 || self.gpu.param_sizes(precise).is_err() || self.gpu.param_sizes(fast).is_err() {
                    return Err(format!(
                        "{} is sm_{}{}; the tensor-core kernels need sm_80 or newer and PTX built for it",
                        info.name, info.cc_major, info.cc_minor
                    ));
                }
                plan_tensor2d::<T>(&info.limits, self.precision, (mw, mh), (1, 1)).map(|_| ()).map_err(|e| match e {
                    Error::Unsupported { message, .. } => message,
                    e => e.to_string(),
                })
            })
            .clone()
    }

    /// The tensor-core mask table on the device, built on first use.
    fn tensor_table(&self) -> Result<Arc<DeviceBuffer<f32>>> {
        let mut slot = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = slot.as_ref() {
            return Ok(t.clone());
        }
        let taps: Vec<f32> = self.taps.iter().map(|t| t.to_f64() as f32).collect();
        let mut table = vec![0.0f32; t2_table_floats(self.mw, self.mh)];
        t2_mask_table(&taps, self.mw, self.mh, &mut table);
        let dev = Arc::new(self.gpu.upload(&table)?);
        *slot = Some(dev.clone());
        Ok(dev)
    }

    /// This convolution on `stream` (same mask, shared): its runs are
    /// queued there. `stream` must belong to this convolution's device.
    pub fn on(&self, stream: &crate::Stream) -> Result<Self> {
        Ok(Conv2d {
            gpu: self.gpu.on(stream)?,
            taps: self.taps.clone(),
            mask: self.mask.clone(),
            params: self.params.clone(),
            table: self.table.clone(),
            support: self.support.clone(),
            ..*self
        })
    }

    /// Mask size `(mw, mh)`.
    pub fn size(&self) -> (usize, usize) {
        (self.mw, self.mh)
    }

    /// This convolution with `(left_x, left_y)` taps left of and above
    /// the centre instead of the operation's (each below its axis's
    /// width): the correlation of the same taps at another origin.
    pub(crate) fn with_left(mut self, (left_x, left_y): (usize, usize)) -> Self {
        assert!(left_x < self.mw && left_y < self.mh, "left ({left_x}, {left_y}) past a {}x{} mask", self.mw, self.mh);
        (self.left_x, self.left_y) = (left_x, left_y);
        self
    }

    /// The taps as the constant-mask kernels' parameter.
    pub(crate) fn mask_params(&self) -> &MaskParams {
        &self.params
    }

    /// The device copy of the taps (row-major, `mw · mh`).
    pub(crate) fn device_mask(&self) -> DevicePtr {
        self.mask.device_ptr()
    }

    /// Taps left of and above the centre, `(left_x, left_y)`, in the
    /// correlation the kernels compute.
    pub fn left(&self) -> (usize, usize) {
        (self.left_x, self.left_y)
    }

    /// The correlation taps, row-major (the mask, reversed along both axes
    /// for a convolution).
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

    /// The GPU this convolution runs on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The launch [`Conv2d::run`] makes for `variant` over a `width ×
    /// height` image. [`Conv2dVariant::Tensor`] where it cannot run is
    /// [`Error::Unsupported`] naming the rule; its blocks are persistent
    /// (the grid capped at the blocks the device keeps resident).
    pub fn plan(&self, variant: Conv2dVariant, width: usize, height: usize) -> Result<Conv2dPlan> {
        let (mw, mh) = (self.mw, self.mh);
        let variant = match variant {
            Conv2dVariant::Tensor => {
                self.tensor_support().map_err(|message| Error::Unsupported { op: "conv2d", message })?;
                Conv2dVariant::Tensor
            }
            Conv2dVariant::Auto if self.tensor_auto() && self.tensor_support().is_ok() => Conv2dVariant::Tensor,
            v => v,
        };
        let info = self.gpu.info();
        let left = (self.left_x, self.left_y);
        let plan = plan_conv2d_left::<T>(&info.limits, variant, self.precision, (mw, mh), left, (width, height))?;
        if band_applies(&plan, (mw, mh), self.mode, width) {
            let threads = (32 * BAND9_WARPS) as u32;
            let per_sm = self.gpu.max_active_blocks_per_sm(BAND9_KERNEL, threads, band_shared_bytes(&plan) as usize)?;
            let resident = info.sm_count.max(1).saturating_mul(per_sm.max(1)) as usize;
            return Ok(band_plan(&plan, resident, (width, height)).unwrap_or(plan));
        }
        if plan.variant != Conv2dVariant::Tensor {
            return Ok(plan);
        }
        let per_sm = self.gpu.max_active_blocks_per_sm(plan.kernel, plan.block.0, plan.shared_bytes as usize)?;
        let resident = info.sm_count.max(1).saturating_mul(per_sm.max(1));
        Ok(Conv2dPlan { grid: (plan.grid.0.min(resident).max(1), 1), ..plan })
    }

    /// Convolves the `width × height` image in `input` (rows `pitch`
    /// elements apart) into `output` (same layout) with `variant`,
    /// asynchronously on the GPU's stream; returns what ran. Writes the
    /// mask into constant memory first when another mask is there.
    pub fn run(
        &self,
        variant: Conv2dVariant,
        input: &DeviceView<T>,
        output: &mut DeviceViewMut<T>,
        width: usize,
        height: usize,
        pitch: usize,
    ) -> Result<Conv2dPlan> {
        self.run_on(None, variant, input, output, width, height, pitch)
    }

    /// As [`Conv2d::run`], launching the kernels of `module` instead of
    /// the crate's when it is `Some`: a PTX module loaded on the same
    /// [`Gpu`] with the same kernel names and parameters (the CUDA C++
    /// twins in `cuda/conv2d.cu`). The plan is the same.
    #[allow(clippy::too_many_arguments)]
    pub fn run_on(
        &self,
        module: Option<&PtxModule>,
        variant: Conv2dVariant,
        input: &DeviceView<T>,
        output: &mut DeviceViewMut<T>,
        width: usize,
        height: usize,
        pitch: usize,
    ) -> Result<Conv2dPlan> {
        let target = Target::new(&self.gpu, module)?;
        check_views(&self.gpu, input, output, (width, height, pitch))?;
        let plan = self.plan(variant, width, height)?;
        if width == 0 || height == 0 {
            return Ok(plan);
        }
        let args = Args {
            input: input.device_ptr(),
            output: output.device_ptr(),
            width,
            height,
            pitch,
            mask: self.mask.device_ptr(),
            mw: self.mw as u32,
            mh: self.mh as u32,
            left_x: self.left_x as u32,
            left_y: self.left_y as u32,
            mode: self.mode.raw(),
        };
        let table = if plan.variant == Conv2dVariant::Tensor { Some(self.tensor_table()?) } else { None };
        // SAFETY: input and output are live views on this GPU holding the
        // layout (checked above) and cannot overlap (one is borrowed
        // mutably); the mask buffer holds mw · mh taps, and so does the
        // mask parameter of a constant kernel; left_x < mw, left_y < mh;
        // the shared memory is the kernel's layout for the plan's block;
        // the tensor kernels' table is the taps' t2_mask_table.
        unsafe { args.launch(target, &plan, Some((&*self.params, &self.taps)), table.as_deref())? };
        Ok(plan)
    }
}

impl<T: ConvElem> std::fmt::Debug for Conv2d<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conv2d")
            .field("size", &(self.mw, self.mh))
            .field("left", &(self.left_x, self.left_y))
            .field("op", &self.op)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// A separable 2D convolution: a row pass with `mask_x`, then a column
/// pass with `mask_y`. By default one fused kernel does both with no
/// intermediate image: for `f32` on sm_80 and newer the streamed kernels
/// (`conv2d_seps_f32_h*`, a warp per 128-column strip walking a band of
/// rows; masks of up to 41 taps per axis, 16-byte aligned views with a
/// pitch of a multiple of 4), otherwise per tile through shared memory
/// (`conv2d_sep_*`);
/// [`Separable::with_fused`]`(false)`, or a tile too large for the
/// device's shared memory, runs two kernels through an intermediate image
/// in `T` (the same layout as the input). Either way the intermediate is
/// rounded to `T`, and the result equals the 2D convolution with the
/// outer-product mask `mask_y[j] · mask_x[i]` up to that rounding.
pub struct Separable<T: ConvElem> {
    gpu: Gpu,
    taps_x: Vec<T>,
    taps_y: Vec<T>,
    left_x: usize,
    left_y: usize,
    op: ConvOp,
    mode: Boundary,
    mask_x: Arc<DeviceBuffer<T>>,
    mask_y: Arc<DeviceBuffer<T>>,
    scratch: Mutex<Option<DeviceBuffer<T>>>,
    fused: bool,
}

impl<T: ConvElem> Separable<T> {
    /// Prepares the 1D masks `mask_x` (along rows) and `mask_y` (along
    /// columns) for `op` under `mode`. Empty masks are errors.
    pub fn new(gpu: &Gpu, mask_x: &[T], mask_y: &[T], op: ConvOp, mode: Boundary) -> Result<Self> {
        if mask_x.is_empty() || mask_y.is_empty() {
            return Err(Error::InvalidArgument {
                op: "conv2d separable",
                message: format!("the masks have {} and {} taps: both need at least 1", mask_x.len(), mask_y.len()),
            });
        }
        check_mask_dims(mask_x.len(), mask_x.len(), 1)?;
        check_mask_dims(mask_y.len(), 1, mask_y.len())?;
        let (taps_x, left_x) = op.correlation_taps(mask_x);
        let (taps_y, left_y) = op.correlation_taps(mask_y);
        Ok(Separable {
            gpu: gpu.clone(),
            mask_x: Arc::new(gpu.upload(&taps_x)?),
            mask_y: Arc::new(gpu.upload(&taps_y)?),
            taps_x,
            taps_y,
            left_x,
            left_y,
            op,
            mode,
            scratch: Mutex::new(None),
            fused: true,
        })
    }

    /// This convolution with the fused kernel allowed (`true`, the
    /// default: it runs whenever its tile fits the device's shared memory)
    /// or not (always the two passes through an intermediate image).
    pub fn with_fused(mut self, fused: bool) -> Self {
        self.fused = fused;
        self
    }

    /// A Gaussian blur with standard deviations `sigma_x`, `sigma_y` (in
    /// pixels), weights as `scipy.ndimage.gaussian_filter` builds them
    /// ([`gaussian`]).
    pub fn gaussian(gpu: &Gpu, sigma_x: f64, sigma_y: f64, mode: Boundary) -> Result<Self> {
        Separable::new(gpu, &gaussian::<T>(sigma_x)?, &gaussian::<T>(sigma_y)?, ConvOp::Correlate, mode)
    }

    /// This separable convolution on `stream` (same masks, shared; its own
    /// intermediate buffer): its runs are queued there. `stream` must
    /// belong to this convolution's device.
    pub fn on(&self, stream: &crate::Stream) -> Result<Self> {
        Ok(Separable {
            gpu: self.gpu.on(stream)?,
            taps_x: self.taps_x.clone(),
            taps_y: self.taps_y.clone(),
            mask_x: self.mask_x.clone(),
            mask_y: self.mask_y.clone(),
            scratch: Mutex::new(None),
            ..*self
        })
    }

    /// This convolution with `(left_x, left_y)` taps left of and above
    /// the centre instead of the operation's (each below its mask's
    /// length).
    pub(crate) fn with_left(mut self, (left_x, left_y): (usize, usize)) -> Self {
        let (mw, mh) = (self.taps_x.len(), self.taps_y.len());
        assert!(left_x < mw && left_y < mh, "left ({left_x}, {left_y}) past masks of {mw} and {mh} taps");
        (self.left_x, self.left_y) = (left_x, left_y);
        self
    }

    /// The correlation taps along x and y.
    pub fn taps(&self) -> (&[T], &[T]) {
        (&self.taps_x, &self.taps_y)
    }

    /// Taps left of and above the centre, `(left_x, left_y)`.
    pub fn left(&self) -> (usize, usize) {
        (self.left_x, self.left_y)
    }

    /// The operation.
    pub fn op(&self) -> ConvOp {
        self.op
    }

    /// The boundary mode.
    pub fn mode(&self) -> Boundary {
        self.mode
    }

    /// The launches for a `width × height` image.
    ///
    /// The fused kernel is the streamed one (`conv2d_seps_f32_h*`, see
    /// [`plan_streamed`]) where it runs; a run whose views or pitch it
    /// cannot take (16-byte bases, a pitch of a multiple of 4 elements)
    /// runs the tiled one (`conv2d_sep_*`) and returns that plan.
    pub fn plan(&self, width: usize, height: usize) -> Result<SeparablePlan> {
        let plan = self.tiled_plan(width, height)?;
        if !self.fused {
            return Ok(plan);
        }
        let (x, y) = self.windows();
        let Some((h, kernel)) = seps_kernel(x, y) else { return Ok(plan) };
        let info = self.gpu.info();
        if T::NAME != "f32" || info.cc_major < 8 {
            return Ok(plan);
        }
        let per_sm = self.gpu.max_active_blocks_per_sm(kernel, SEPS_THREADS as u32, seps_shared_bytes(h))?;
        match plan_streamed::<T>(&info.limits, info.cc_major, info.sm_count, per_sm, x, y, (width, height)) {
            Some(s) => Ok(SeparablePlan { fused: Some(s), ..plan }),
            None => Ok(plan),
        }
    }

    /// Each axis's `(taps, left)`, as [`seps_kernel`] takes them.
    fn windows(&self) -> ((usize, usize), (usize, usize)) {
        ((self.taps_x.len(), self.left_x), (self.taps_y.len(), self.left_y))
    }

    /// [`Separable::plan`] without the streamed kernel.
    fn tiled_plan(&self, width: usize, height: usize) -> Result<SeparablePlan> {
        let plan = plan_separable::<T>(&self.gpu.info().limits, self.taps_x.len(), self.taps_y.len(), (width, height))?;
        Ok(if self.fused { plan } else { SeparablePlan { fused: None, ..plan } })
    }

    /// The streamed kernels' taps parameter: each axis's taps centred in
    /// the window of half width `h`, row taps first.
    fn streamed_taps(&self, h: usize) -> Result<ParamArray> {
        let mut taps = vec![0.0f32; 2 * SEPS_MAX_TAPS];
        for (axis, (src, left)) in [(&self.taps_x, self.left_x), (&self.taps_y, self.left_y)].into_iter().enumerate() {
            for (i, t) in src.iter().enumerate() {
                taps[axis * SEPS_MAX_TAPS + h - left + i] = t.to_f64() as f32;
            }
        }
        ParamArray::new(&taps, SEPS_PARAM_BYTES)
    }

    /// Runs both passes through an intermediate buffer this value owns
    /// (allocated on first use, grown when a larger image comes).
    pub fn run(
        &self,
        input: &DeviceView<T>,
        output: &mut DeviceViewMut<T>,
        width: usize,
        height: usize,
        pitch: usize,
    ) -> Result<SeparablePlan> {
        self.run_on(None, input, output, None, width, height, pitch)
    }

    /// Runs both passes through `scratch`, a caller's buffer of at least
    /// `(height − 1) · pitch + width` elements (the intermediate image).
    pub fn run_with(
        &self,
        input: &DeviceView<T>,
        output: &mut DeviceViewMut<T>,
        scratch: &mut DeviceViewMut<T>,
        width: usize,
        height: usize,
        pitch: usize,
    ) -> Result<SeparablePlan> {
        self.run_on(None, input, output, Some(scratch), width, height, pitch)
    }

    /// As [`Separable::run`] / [`Separable::run_with`] (`scratch` `None`
    /// or not), launching the kernels of `module` when it is `Some` (see
    /// [`Conv2d::run_on`]).
    #[allow(clippy::too_many_arguments)]
    pub fn run_on(
        &self,
        module: Option<&PtxModule>,
        input: &DeviceView<T>,
        output: &mut DeviceViewMut<T>,
        scratch: Option<&mut DeviceViewMut<T>>,
        width: usize,
        height: usize,
        pitch: usize,
    ) -> Result<SeparablePlan> {
        let target = Target::new(&self.gpu, module)?;
        let need = check_views(&self.gpu, input, output, (width, height, pitch))?;
        let mut plan = self.plan(width, height)?;
        if need == 0 {
            return Ok(plan);
        }
        // A caller's scratch is checked whichever form runs (the fused
        // kernel does not need it).
        if let Some(s) = &scratch {
            s.check_gpu(&self.gpu, "conv2d separable scratch")?;
            if s.len() < need {
                return Err(Error::LengthMismatch { op: "conv2d separable scratch", expected: need, got: s.len() });
            }
        }
        if let Some(f) = plan.fused.filter(|f| f.kernel.starts_with("conv2d_seps")) {
            let aligned = |p: DevicePtr| p.0.is_multiple_of(16);
            if aligned(input.device_ptr()) && aligned(output.device_ptr()) && pitch.is_multiple_of(4) {
                let (x, y) = self.windows();
                let (h, _) = seps_kernel(x, y).expect("the plan found a window");
                let taps = self.streamed_taps(h)?;
                let (src, dst) = (input.device_ptr(), output.device_ptr());
                let (w, hh, rows, mode) = (width as u32, height as u32, f.tile.1 as u32, self.mode.raw());
                let (mw, mh) = (self.taps_x.len() as u32, self.taps_y.len() as u32);
                let (lx, ly) = (self.left_x as u32, self.left_y as u32);
                let args: [&dyn KernelArg; 12] = [&src, &dst, &w, &hh, &pitch, &rows, &mode, &mw, &mh, &lx, &ly, &taps];
                // SAFETY: input and output are live f32 views on this GPU
                // holding the layout (checked above), 16-byte aligned with a
                // pitch of a multiple of 4 elements (checked here), and
                // cannot overlap; both axes are below 2^30 and the masks lie
                // within the kernel's window (the plan); the taps parameter
                // holds them centred; the grid holds seps_blocks blocks of
                // one warp with the kernel's shared memory.
                unsafe { target.launch(f.kernel, &f.launch_config(), &args)? };
                return Ok(plan);
            }
            plan = self.tiled_plan(width, height)?;
        }
        if let Some(fused) = plan.fused {
            let (src, dst) = (input.device_ptr(), output.device_ptr());
            let (mx, my) = (self.mask_x.device_ptr(), self.mask_y.device_ptr());
            let (mw, mh) = (self.taps_x.len() as u32, self.taps_y.len() as u32);
            let (lx, ly, mode) = (self.left_x as u32, self.left_y as u32, self.mode.raw());
            let args: [&dyn KernelArg; 12] = [&src, &dst, &width, &height, &pitch, &mx, &my, &mw, &mh, &lx, &ly, &mode];
            // SAFETY: input and output are live views on this GPU holding
            // the layout (checked above) and cannot overlap (one is
            // borrowed mutably); the mask buffers hold mw and mh taps;
            // lefts are below the widths; the shared memory is
            // sep_shared_elems(mw, mh) elements.
            unsafe { target.launch(fused.kernel, &fused.launch_config(), &args)? };
            return Ok(plan);
        }
        let mut owned = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        let mid = match scratch {
            Some(s) => s.device_ptr(),
            None => {
                if owned.as_ref().is_none_or(|b| b.len() < need) {
                    *owned = None;
                    *owned = Some(self.gpu.alloc_zeroed::<T>(need)?);
                }
                owned.as_ref().map(|b| b.device_ptr()).unwrap_or(DevicePtr(0))
            }
        };
        let pass = |src, dst, mask: &DeviceBuffer<T>, plan: &Conv2dPlan| {
            let args = Args {
                input: src,
                output: dst,
                width,
                height,
                pitch,
                mask: mask.device_ptr(),
                mw: self.taps_x.len() as u32,
                mh: self.taps_y.len() as u32,
                left_x: self.left_x as u32,
                left_y: self.left_y as u32,
                mode: self.mode.raw(),
            };
            // SAFETY: src and dst hold the layout (checked above; the
            // scratch is at least `need` elements and a distinct buffer
            // from both views: the owned one is private, a caller's is
            // borrowed mutably next to them); the mask buffers hold the
            // taps each pass reads; lefts are below the widths.
            unsafe { args.launch::<T>(target, plan, None, None) }
        };
        pass(input.device_ptr(), mid, &self.mask_x, &plan.rows)?;
        pass(mid, output.device_ptr(), &self.mask_y, &plan.cols)?;
        // The owned scratch stays locked until both passes are queued; it
        // is reused by the next run in stream order.
        drop(owned);
        Ok(plan)
    }
}

impl<T: ConvElem> std::fmt::Debug for Separable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Separable")
            .field("widths", &(self.taps_x.len(), self.taps_y.len()))
            .field("left", &(self.left_x, self.left_y))
            .field("op", &self.op)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: DeviceLimits = DeviceLimits::H100;

    #[test]
    fn convolve_reverses_both_axes_and_centres_like_scipy() {
        // 3 wide, 2 high: [[1 2 3] [4 5 6]].
        let m = [1, 2, 3, 4, 5, 6];
        assert_eq!(correlation_taps_2d(ConvOp::Correlate, &m, 3, 2), (m.to_vec(), 1, 1));
        assert_eq!(correlation_taps_2d(ConvOp::Convolve, &m, 3, 2), (vec![6, 5, 4, 3, 2, 1], 1, 0));
        assert_eq!(correlation_taps_2d(ConvOp::Convolve, &[1, 2, 3, 4], 4, 1).1, 1);
    }

    #[test]
    fn band_plans_fill_one_wave() {
        // 9 × 9 at 8192² on an H100 (132 SMs, five blocks of 4 warps): 16
        // blocks across, 41 rows of them (656 of 660), bands of 200 rows.
        let strip = plan_conv2d::<f32>(&H100, Conv2dVariant::Auto, (9, 9), (8192, 8192)).unwrap();
        assert_eq!(strip.kernel, "conv2d_strip9_f32");
        assert!(band_applies(&strip, (9, 9), Boundary::Zero, 8192));
        let b = band_plan(&strip, 660, (8192, 8192)).unwrap();
        assert_eq!((b.kernel, b.block, b.grid, b.tile), (BAND9_KERNEL, (128, 1), (16, 41), (512, 200)));
        assert_eq!((b.shared_bytes, b.mask, b.variant), (strip.shared_bytes, strip.mask, strip.variant));
        assert_eq!(strip_band_rows(9, 4, 8192, 41), 200);
        // Only f32 9 × 9 at widths that are a multiple of 4, every mode but
        // wrap.
        for mode in Boundary::ALL {
            for width in [8192, 8190, 8193, 4100] {
                let want = mode != Boundary::Wrap && width % 4 == 0;
                assert_eq!(band_applies(&strip, (9, 9), mode, width), want, "{mode:?} {width}");
            }
        }
        for n in [3, 5, 7, 11, 13] {
            let p = plan_conv2d::<f32>(&H100, Conv2dVariant::Fast, (n, n), (8192, 8192)).unwrap();
            assert!(!band_applies(&p, (n, n), Boundary::Zero, 8192), "{n}");
        }
        let tensor = plan_conv2d::<f32>(&H100, Conv2dVariant::Tensor, (9, 9), (8192, 8192)).unwrap();
        assert!(!band_applies(&tensor, (9, 9), Boundary::Zero, 8192));
        // The kernel's band height from the grid it gets is the plan's, the
        // bands cover the image in one wave or less, and images whose
        // strips fill less than a wave keep the strips.
        for height in [1, 8, 9, 63, 64, 65, 333, 1000, 1001, 4099, 8192, 65_537, 1 << 20] {
            for (width, resident) in [(8192, 660), (8196, 660), (4100, 264), (128, 7), (1 << 18, 660), (1 << 22, 660)] {
                let ctx = format!("{width}x{height} resident {resident}");
                let strip = plan_conv2d::<f32>(&H100, Conv2dVariant::Fast, (9, 9), (width, height)).unwrap();
                let Some(b) = band_plan(&strip, resident, (width, height)) else {
                    let rows_y = (resident / width.div_ceil(512)).max(1);
                    assert!(height.div_ceil(rows_y) <= strip_rows(9, 4), "{ctx}: bands taller than strips");
                    continue;
                };
                let rows = strip_band_rows(9, 4, height, b.grid.1 as usize);
                assert_eq!(b.tile, (512, rows), "{ctx}");
                assert!(
                    rows.is_multiple_of(coalesce_kernels::conv::conv2d::STRIP_PASS) && rows > strip_rows(9, 4),
                    "{ctx}"
                );
                assert!(b.grid.1 as usize * rows >= height && (b.grid.1 as usize - 1) * rows < height, "{ctx}");
                assert_eq!(b.grid.0 as usize, width.div_ceil(512), "{ctx}");
                assert!(
                    b.grid.0 as usize * b.grid.1 as usize <= resident.max(b.grid.0 as usize),
                    "{ctx}: more than a wave"
                );
            }
        }
    }

    #[test]
    fn plans_pick_the_documented_kernels() {
        // Centred 3 × 3, 5 × 5, 7 × 7: the register form, FAST_X × STRIP_H
        // outputs per thread, a ring of 8 rows of 136 elements per warp.
        let p = plan_conv2d::<f32>(&H100, Conv2dVariant::Auto, (5, 5), (8192, 8192)).unwrap();
        assert_eq!((p.variant, p.kernel, p.mask), (Conv2dVariant::Fast, "conv2d_strip5_f32", MaskSource::Constant));
        assert_eq!(
            (p.block, p.tile, p.grid, p.shared_bytes),
            ((32, 8), (128, 8 * STRIP_H), (64, 8192 / (8 * STRIP_H) as u32), 8 * 8 * 136 * 4)
        );
        assert_eq!(strip_shared_elems(32, 8, 8, strip_row(5)), 8 * 8 * 136);
        for (n, k) in [(3, "conv2d_strip3_f64"), (7, "conv2d_strip7_f64")] {
            assert_eq!(plan_conv2d::<f64>(&H100, Conv2dVariant::Fast, (n, n), (9, 9)).unwrap().kernel, k);
        }
        // f32 masks from 7 rows: the blocked loop, a ring of
        // strip_pass_ring rows (16 to 9 × 9, 20 for 11 × 11 and 13 × 13,
        // whose ring rows carry two chunks either side: 144 elements);
        // from 9 × 9 in blocks of 4 warps. f64 7 × 7 keeps 8 rows, and f64
        // 9 × 9 takes the shared-tile form.
        for (n, ring, warps, row) in
            [(3, 8, 8, 136), (5, 8, 8, 136), (7, 16, 8, 136), (9, 16, 4, 136), (11, 20, 4, 144), (13, 20, 4, 144)]
        {
            let p = plan_conv2d::<f32>(&H100, Conv2dVariant::Auto, (n, n), (8192, 8192)).unwrap();
            let rows = if n >= 9 { 8 } else { STRIP_H };
            assert_eq!(p.kernel, format!("conv2d_strip{n}_f32"));
            assert_eq!((p.variant, p.block, p.tile), (Conv2dVariant::Fast, (32, warps as u32), (128, warps * rows)));
            assert_eq!(p.shared_bytes as usize, warps * ring * row * 4);
            assert_eq!((strip_ring(n, 4), strip_block_warps(n, 4), strip_row(n)), (ring, warps, row));
            assert_eq!(p.grid, (64, 8192 / (warps * rows) as u32));
            if n >= 7 {
                assert_eq!(strip_pass_ring(n), ring);
            }
        }
        // Past 13 × 13, and any f64 mask from 9 × 9: the shared-tile form.
        assert_eq!(
            plan_conv2d::<f32>(&H100, Conv2dVariant::Fast, (15, 15), (64, 64)).unwrap().kernel,
            "conv2d_fast_f32"
        );
        assert_eq!(
            plan_conv2d::<f64>(&H100, Conv2dVariant::Fast, (11, 11), (64, 64)).unwrap().kernel,
            "conv2d_fast_f64"
        );
        assert_eq!(strip_ext(13), 2);
        assert_eq!(
            plan_conv2d::<f64>(&H100, Conv2dVariant::Fast, (7, 7), (64, 64)).unwrap().shared_bytes,
            8 * 8 * 136 * 8
        );
        assert_eq!(plan_conv2d::<f64>(&H100, Conv2dVariant::Fast, (9, 9), (64, 64)).unwrap().kernel, "conv2d_fast_f64");
        // A mask off its centre (another origin) takes the shared-tile
        // form: the register kernels read a centred window.
        for left in [(1, 1), (0, 1), (1, 0), (2, 2)] {
            let p = plan_conv2d_left::<f32>(&H100, Conv2dVariant::Auto, Precision::F32, (3, 3), left, (64, 64));
            assert_eq!(p.unwrap().kernel, if left == (1, 1) { "conv2d_strip3_f32" } else { "conv2d_fast_short_f32" });
        }
        let p = plan_conv2d_left::<f64>(&H100, Conv2dVariant::Fast, Precision::F32, (5, 5), (2, 2), (64, 64));
        assert_eq!(p.unwrap().kernel, "conv2d_strip5_f64");
        // Any other mask: the shared-tile form.
        let p = plan_conv2d::<f32>(&H100, Conv2dVariant::Auto, (5, 3), (8192, 8192)).unwrap();
        assert_eq!((p.variant, p.kernel, p.mask), (Conv2dVariant::Fast, "conv2d_fast_short_f32", MaskSource::Constant));
        assert_eq!((p.block, p.tile, p.grid), ((32, 8), (128, 32), (64, 256)));
        assert_eq!(p.shared_bytes as usize, fast_shared_elems(32, 8, 5, 3) * 4);
        assert_eq!(fast_shared_elems(32, 8, 5, 5), 36 * 136);
        assert_eq!(
            plan_conv2d::<f32>(&H100, Conv2dVariant::Fast, (9, 7), (64, 64)).unwrap().kernel,
            "conv2d_fast_short_f32"
        );
        let p = plan_conv2d_left::<f32>(&H100, Conv2dVariant::Fast, Precision::F32, (11, 11), (4, 5), (64, 64));
        assert_eq!(p.unwrap().kernel, "conv2d_fast_f32");
        // Axes of 2³⁰ or more: the register form maps rows and columns in
        // 32 bits, where reflect and mirror need twice the axis.
        for dims in [(1 << 31, 1), (1 << 30, 1), (1, 1 << 30)] {
            let big = plan_conv2d::<f32>(&H100, Conv2dVariant::Fast, (3, 3), dims).unwrap();
            assert_eq!(big.kernel, "conv2d_fast_short_f32", "{dims:?}");
        }
        let tall = plan_conv2d::<f32>(&H100, Conv2dVariant::Fast, (3, 3), (1, (1 << 30) - 1)).unwrap();
        assert_eq!(tall.kernel, "conv2d_strip3_f32");
        let b = plan_conv2d::<f64>(&H100, Conv2dVariant::Basic, (3, 3), (10, 10)).unwrap();
        assert_eq!((b.kernel, b.mask, b.shared_bytes), ("conv2d_basic_f64", MaskSource::Global, 0));
        let t = plan_conv2d::<f64>(&H100, Conv2dVariant::Tiled, (3, 7), (33, 65)).unwrap();
        assert_eq!(
            (t.kernel, t.shared_bytes as usize),
            ("conv2d_tiled_short_f64", tiled_shared_elems(32, 8, 3, 7) * 8)
        );
        // 65 × 65 = 4225 f32 taps: more than the mask parameter holds.
        for (v, k) in [
            (Conv2dVariant::Const, "conv2d_basic_f32"),
            (Conv2dVariant::Tiled, "conv2d_tiled_gm_f32"),
            (Conv2dVariant::Fast, "conv2d_fast_gm_f32"),
        ] {
            let p = plan_conv2d::<f32>(&H100, v, (65, 65), (40, 37)).unwrap();
            assert_eq!((p.kernel, p.mask), (k, if k.contains("basic") { MaskSource::Global } else { p.mask }));
            assert!(p.shared_bytes as usize <= 227 * 1024);
        }
        assert_eq!(plan_conv2d::<f32>(&H100, Conv2dVariant::Fast, (65, 65), (1, 1)).unwrap().mask, MaskSource::Global);
    }

    #[test]
    fn tiles_shrink_to_fit_and_fail_with_a_message() {
        // A 1 × 3000 f64 mask: the fast tile needs (4·by + 2999) rows.
        let p = plan_conv2d::<f64>(&H100, Conv2dVariant::Fast, (1, 3000), (100, 100));
        assert!(p.is_err(), "{p:?}");
        let msg = p.unwrap_err().to_string();
        assert!(msg.contains("shared") && msg.contains("basic"), "{msg}");
        let a = plan_conv2d::<f64>(&H100, Conv2dVariant::Auto, (1, 3000), (100, 100)).unwrap();
        assert_eq!(a.kernel, "conv2d_basic_f64");
        let r = plan_separable::<f32>(&H100, 4001, 3, (10, 10)).unwrap();
        assert!(r.rows.block.1 < 8, "{r:?}");
        assert!(r.rows.shared_bytes as usize <= 227 * 1024);
        assert_eq!((r.rows.kernel, r.cols.kernel), ("conv2d_rows_f32", "conv2d_cols_f32"));
    }

    #[test]
    fn grids_respect_the_limits() {
        let p = plan_conv2d::<f32>(&H100, Conv2dVariant::Basic, (3, 3), (5, 40_000_000)).unwrap();
        assert_eq!(p.grid, (1, 65_535));
        let z = plan_conv2d::<f32>(&H100, Conv2dVariant::Fast, (3, 3), (0, 7)).unwrap();
        assert_eq!(z.grid, (1, 1));
    }

    #[test]
    fn bad_masks_and_layouts_are_errors() {
        assert!(check_mask_dims(0, 0, 3).is_err());
        assert!(check_mask_dims(0, 3, 0).is_err());
        assert!(matches!(check_mask_dims(8, 3, 3), Err(Error::LengthMismatch { expected: 9, got: 8, .. })));
        assert!(check_mask_dims(9, 3, 3).is_ok());
        assert!(check_mask_dims(usize::MAX, usize::MAX, 2).is_err());
        assert!(plan_conv2d::<f32>(&H100, Conv2dVariant::Fast, (0, 3), (4, 4)).is_err());
        // pitch < width
        assert!(check_layout(100, 100, 10, 2, 9).is_err());
        // (h − 1) · pitch + w = 2 · 12 + 10 = 34
        assert_eq!(check_layout(34, 34, 10, 3, 12).unwrap(), 34);
        assert!(matches!(check_layout(33, 34, 10, 3, 12), Err(Error::LengthMismatch { expected: 34, got: 33, .. })));
        assert!(matches!(check_layout(34, 33, 10, 3, 12), Err(Error::LengthMismatch { expected: 34, got: 33, .. })));
        // Empty images need nothing, but the pitch rule still holds.
        assert_eq!(check_layout(0, 0, 0, 5, 0).unwrap(), 0);
        assert_eq!(check_layout(0, 0, 7, 0, 7).unwrap(), 0);
        assert!(check_layout(0, 0, 7, 0, 6).is_err());
        assert!(check_layout(usize::MAX, usize::MAX, 2, usize::MAX, usize::MAX).is_err());
    }

    #[test]
    fn auto_leaves_the_register_form_its_masks() {
        // Centred f32 masks: the tensor cores from 9 × 9, but for 9 × 9
        // and 11 × 11 at either precision and 13 × 13 at f32.
        let c = |mw: usize, mh: usize| (mw / 2, mh / 2);
        for p in Precision::ALL {
            for n in [3, 5, 7, 9, 11] {
                assert!(!tensor2d_auto(n, n, c(n, n), p), "{n}×{n} {}", p.name());
            }
            for n in [15, 17, 21, T2_MAX_MW] {
                assert!(tensor2d_auto(n, n, c(n, n), p), "{n}×{n} {}", p.name());
            }
            assert!(tensor2d_auto(11, 13, c(11, 13), p) && tensor2d_auto(10, 10, c(10, 10), p));
            assert!(tensor2d_auto(9, 11, c(9, 11), p) && !tensor2d_auto(T2_MAX_MW + 1, 15, c(T2_MAX_MW + 1, 15), p));
            // A mask off its centre, which the register form does not
            // take, from 9 × 9.
            for n in [9, 11, 13] {
                assert!(tensor2d_auto(n, n, (0, 0), p) && tensor2d_auto(n, n, (n / 2 + 1, n / 2), p), "{n}×{n}");
                assert!(!strip_over_tensor(n, n, (n / 2, 0), p));
            }
            assert!(!tensor2d_auto(7, 7, (0, 0), p) && !tensor2d_auto(8, 9, (0, 0), p));
        }
        assert!(!tensor2d_auto(13, 13, c(13, 13), Precision::F32) && tensor2d_auto(13, 13, c(13, 13), Precision::Tf32));
        // Every mask Auto leaves to the register form has a strip kernel.
        for n in [9, 11, 13] {
            assert!(strip_over_tensor(n, n, c(n, n), Precision::F32) && fast_in_registers((n, n), c(n, n), 4));
        }
    }

    #[test]
    fn names_parse_and_resolve() {
        for v in Conv2dVariant::ALL {
            assert_eq!(v.name().parse::<Conv2dVariant>().unwrap(), v);
        }
        assert!("tiled_l2".parse::<Conv2dVariant>().is_err());
        for n in [3, 5, 7] {
            for ty in ["f32", "f64"] {
                assert_eq!(kernel_name(Algo::Strip(n), false, ty).unwrap(), format!("conv2d_strip{n}_{ty}"));
            }
            assert!(kernel_name(Algo::Strip(n), true, "f32").is_err());
        }
        for n in [9, 11, 13] {
            assert_eq!(kernel_name(Algo::Strip(n), false, "f32").unwrap(), format!("conv2d_strip{n}_f32"));
            assert!(kernel_name(Algo::Strip(n), false, "f64").is_err());
            assert!(kernel_name(Algo::Strip(n), true, "f32").is_err());
        }
        assert!(kernel_name(Algo::Strip(15), false, "f32").is_err());
        for algo in [Algo::Basic, Algo::Const, Algo::Tiled, Algo::Fast, Algo::Rows, Algo::Cols] {
            for g in [false, true] {
                for ty in ["f32", "f64"] {
                    let k = kernel_name(algo, g, ty).unwrap();
                    assert!(k.starts_with("conv2d_") && k.ends_with(ty), "{k}");
                }
            }
        }
        assert!(kernel_name(Algo::Fast, false, "f16").is_err());
    }
}
