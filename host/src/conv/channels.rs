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

use std::sync::Arc;

pub use coalesce_kernels::conv::batch::{CHAN_OUTPUTS, CHAN_ROWS, CHAN_X, CHAN_Y, chan_shared_elems};

use super::batch::{Sample, left_for_origin};
use super::{Boundary, ConvElem, ConvOp};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{KernelArg, LaunchConfig};
use crate::memory::{DeviceBuffer, DeviceView, DeviceViewMut};

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
}

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
        Self::build(gpu, &taps, gx.len(), gy.len(), ConvOp::Correlate, mode)
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
        let left = (left_for_origin(mw, 0, op)?, left_for_origin(mh, 0, op)?);
        Ok(Filter2d {
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
        })
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
        Ok(self)
    }

    /// This filter queued on `stream` (same masks, shared).
    pub fn on(&self, stream: &crate::Stream) -> Result<Self> {
        Ok(Filter2d { gpu: self.gpu.on(stream)?, taps: self.taps.clone(), dev: self.dev.clone(), ..*self })
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

    /// The launch [`Filter2d::run`] makes for `img`.
    pub fn plan(&self, img: Image) -> Result<ChanPlan> {
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
        let kernel = kernel_name(S::NAME, img.channels).expect("every type has channel kernels");
        let bytes = chan_shared_elems(img.channels, self.mw, self.mh).saturating_mul(std::mem::size_of::<S::Acc>());
        let limit = info.limits.max_shared_per_block_optin as usize;
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
        Ok(ChanPlan { kernel, grid, shared_bytes: bytes as u32 })
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
