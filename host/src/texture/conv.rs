//! 2D convolution read through the texture unit: the hardware's address
//! mode is the boundary mode, so the kernel has no edge case at all.
//!
//! ```no_run
//! use coalesce_host::conv::{Boundary, ConvOp};
//! use coalesce_host::texture::{TexConv2d, TexConvVariant};
//! use coalesce_host::Gpu;
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = Gpu::new()?;
//! let (w, h) = (1920, 1080);
//! let image: Vec<f32> = (0..w * h).map(|i| (i % 255) as f32).collect();
//! let array = gpu.upload_array(&image, w, h)?;
//! let conv = TexConv2d::new(&gpu, &[1.0 / 9.0; 9], 3, 3, ConvOp::Correlate, Boundary::Reflect)?;
//! let tex = conv.texture(&array)?; // mirror addressing, normalized coordinates
//! let mut out = gpu.alloc_zeroed::<f32>(w * h)?;
//! conv.run(TexConvVariant::Blocked, &tex, &mut out.as_view_mut(), w)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Boundary modes
//!
//! | [`Boundary`] (scipy name) | address mode | coordinates |
//! | --- | --- | --- |
//! | `Zero` (`constant`, `cval = 0`) | border, colour 0 | pixel |
//! | `Nearest` (`nearest`) | clamp | pixel |
//! | `Wrap` (`wrap`) | wrap | normalized |
//! | `Reflect` (`reflect`) | mirror | normalized |
//! | `Mirror` (`mirror`) | none: refused ([`TextureProblem::NoAddressMode`]) | |
//!
//! The hardware's mirror repeats the edge texel (`c b a | a b c d | d c
//! b`), which is scipy's `reflect`, not its `mirror` (`d c b | a b c d | c
//! b a`). Every address mode continues past a whole period, as scipy
//! does for masks wider than the image. The kernels compute the
//! correlation with point sampling, each tap one fetch at a texel centre,
//! so every texel value is exact and the sums round like the other 2D
//! kernels' (same `Checked` bounds as `reference2d`).
//!
//! # Kernels
//!
//! [`TexConvVariant::Direct`] is the lesson's form: one output per
//! thread, `mw · mh` fetches per output, the texture cache serving the
//! overlap between neighbouring windows. [`TexConvVariant::Blocked`]
//! computes [`BLOCK_Y`] × [`BLOCK_X`] outputs per thread from
//! `(BLOCK_X + mw − 1) · (BLOCK_Y + mh − 1)` fetches
//! ([`fetches_per_thread`]). Masks of up to [`max_constant_taps`] taps
//! travel with each launch in the kernel's mask parameter (constant
//! memory, see [`crate::conv`]); larger ones are read from global memory
//! (the `_gm_` kernels).

use super::{
    AddressMode, BLOCK_2D, BLOCK_X, BLOCK_Y, CudaArray, FilterMode, Texture2d, TextureDesc, TextureProblem,
    fetches_per_thread, grid_2d,
};
use crate::conv::conv2d::{Conv2d, check_layout, check_mask_dims};
use crate::conv::{Boundary, ConvOp, MaskSource, max_constant_taps};
use crate::device::DeviceLimits;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{KernelArg, LaunchConfig};
use crate::memory::DeviceViewMut;
use crate::pitched::PitchedBuffer;

/// The texture convolution kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TexConvVariant {
    /// One output per thread (`tex_conv2d_f32`).
    Direct,
    /// [`BLOCK_Y`] × [`BLOCK_X`] outputs per thread
    /// (`tex_conv2d_blocked_f32`).
    Blocked,
}

impl TexConvVariant {
    /// Both kernels.
    pub const ALL: [TexConvVariant; 2] = [TexConvVariant::Direct, TexConvVariant::Blocked];

    /// `tex` or `tex_blocked`.
    pub const fn name(self) -> &'static str {
        match self {
            TexConvVariant::Direct => "tex",
            TexConvVariant::Blocked => "tex_blocked",
        }
    }

    /// Outputs per thread, `(x, y)`.
    pub const fn outputs_per_thread(self) -> (usize, usize) {
        match self {
            TexConvVariant::Direct => (1, 1),
            TexConvVariant::Blocked => (BLOCK_X, BLOCK_Y),
        }
    }
}

impl std::str::FromStr for TexConvVariant {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        TexConvVariant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown texture convolution `{s}` (tex, tex_blocked)"))
    }
}

/// What one texture convolution launch is (or would be).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TexConvPlan {
    /// The variant.
    pub variant: TexConvVariant,
    /// The kernel that runs.
    pub kernel: &'static str,
    /// Where it reads the mask.
    pub mask: MaskSource,
    /// Threads per block, `(x, y)`.
    pub block: (u32, u32),
    /// Blocks, `(x, y)` (the kernels walk further outputs grid-stride).
    pub grid: (u32, u32),
    /// Outputs per thread, `(x, y)`.
    pub outputs_per_thread: (usize, usize),
    /// Texture fetches per output (away from partial blocks).
    pub fetches_per_output: f64,
}

impl TexConvPlan {
    /// The launch configuration.
    pub fn launch_config(&self) -> LaunchConfig {
        LaunchConfig::new(self.grid, self.block)
    }
}

/// The address mode that reproduces boundary mode `b`, or
/// [`TextureProblem::NoAddressMode`] (scipy's `mirror`).
pub fn address_for(b: Boundary) -> std::result::Result<AddressMode, TextureProblem> {
    match b {
        Boundary::Zero => Ok(AddressMode::Border),
        Boundary::Nearest => Ok(AddressMode::Clamp),
        Boundary::Wrap => Ok(AddressMode::Wrap),
        Boundary::Reflect => Ok(AddressMode::Mirror),
        Boundary::Mirror => Err(TextureProblem::NoAddressMode(b)),
    }
}

/// The texture a convolution with boundary mode `b` reads: point
/// filtering, [`address_for`]`(b)` on both axes with the coordinates it
/// needs, border colour 0.
pub fn boundary_desc(b: Boundary) -> Result<TextureDesc> {
    let mode = address_for(b).map_err(|problem| Error::Texture { op: "tex_conv2d", problem })?;
    Ok(TextureDesc::for_mode(mode, FilterMode::Point))
}

/// The plan [`TexConv2d::plan`] makes, computable without a GPU: `variant`
/// for an `mw × mh` mask over a `width × height` image on a device with
/// `limits`.
pub fn plan_tex_conv(
    limits: &DeviceLimits,
    variant: TexConvVariant,
    (mw, mh): (usize, usize),
    (width, height): (usize, usize),
) -> Result<TexConvPlan> {
    check_mask_dims(mw.saturating_mul(mh), mw, mh)?;
    let global = mw * mh > max_constant_taps::<f32>();
    let kernel = match (variant, global) {
        (TexConvVariant::Direct, false) => "tex_conv2d_f32",
        (TexConvVariant::Direct, true) => "tex_conv2d_gm_f32",
        (TexConvVariant::Blocked, false) => "tex_conv2d_blocked_f32",
        (TexConvVariant::Blocked, true) => "tex_conv2d_blocked_gm_f32",
    };
    let (rx, ry) = variant.outputs_per_thread();
    Ok(TexConvPlan {
        variant,
        kernel,
        mask: if global { MaskSource::Global } else { MaskSource::Constant },
        block: BLOCK_2D,
        grid: grid_2d(limits, width.div_ceil(rx), height.div_ceil(ry)),
        outputs_per_thread: (rx, ry),
        fetches_per_output: fetches_per_thread(rx, ry, mw, mh) as f64 / (rx * ry) as f64,
    })
}

/// A 2D convolution through the texture unit: a [`Conv2d`] (mask,
/// operation, boundary mode, the mask already on the device) and how the
/// input texture must sample.
pub struct TexConv2d {
    conv: Conv2d<f32>,
    desc: TextureDesc,
}

impl TexConv2d {
    /// Prepares the row-major `mw × mh` mask for `op` under `mode`. A mode
    /// without an address mode (`Boundary::Mirror`), a zero dimension or a
    /// length other than `mw · mh` is an error.
    pub fn new(gpu: &Gpu, mask: &[f32], mw: usize, mh: usize, op: ConvOp, mode: Boundary) -> Result<Self> {
        let desc = boundary_desc(mode)?;
        Ok(TexConv2d { conv: Conv2d::new(gpu, mask, mw, mh, op, mode)?, desc })
    }

    /// Mask size `(mw, mh)`.
    pub fn size(&self) -> (usize, usize) {
        self.conv.size()
    }

    /// The correlation taps, row-major (reversed for a convolution).
    pub fn taps(&self) -> &[f32] {
        self.conv.taps()
    }

    /// Taps left of and above the centre.
    pub fn left(&self) -> (usize, usize) {
        self.conv.left()
    }

    /// The operation.
    pub fn op(&self) -> ConvOp {
        self.conv.op()
    }

    /// The boundary mode.
    pub fn mode(&self) -> Boundary {
        self.conv.mode()
    }

    /// How the input texture must sample ([`boundary_desc`]).
    pub fn desc(&self) -> &TextureDesc {
        &self.desc
    }

    /// A texture over `src` as this convolution reads it.
    pub fn texture<'a>(&self, src: &'a CudaArray<f32>) -> Result<Texture2d<'a>> {
        src.texture(&self.desc)
    }

    /// A texture over the pitched buffer `src` as this convolution reads
    /// it.
    pub fn texture_pitched<'a>(&self, src: &'a PitchedBuffer<f32>) -> Result<Texture2d<'a>> {
        src.texture(&self.desc)
    }

    /// The launch [`TexConv2d::run`] makes over a `width × height` image.
    pub fn plan(&self, variant: TexConvVariant, width: usize, height: usize) -> Result<TexConvPlan> {
        plan_tex_conv(&self.conv.gpu().info().limits, variant, self.conv.size(), (width, height))
    }

    /// Convolves the image `tex` reads (one channel, sampled as
    /// [`TexConv2d::desc`] says) into `out`, rows `pitch` elements apart,
    /// asynchronously on the GPU's stream. A constant-memory kernel gets
    /// the mask with its launch.
    pub fn run(
        &self,
        variant: TexConvVariant,
        tex: &Texture2d<'_>,
        out: &mut DeviceViewMut<'_, f32>,
        pitch: usize,
    ) -> Result<TexConvPlan> {
        const OP: &str = "tex_conv2d";
        let gpu = self.conv.gpu();
        out.check_gpu(gpu, OP)?;
        tex.check_gpu(gpu, OP)?;
        tex.require_channels(OP, 1)?;
        if *tex.desc() != self.desc {
            let problem = TextureProblem::Unsuitable {
                expected: format!("{} (boundary {})", self.desc, self.mode().name()),
                got: tex.desc().to_string(),
            };
            return Err(Error::Texture { op: OP, problem });
        }
        let (width, height) = (tex.width(), tex.height());
        check_layout(out.len(), out.len(), width, height, pitch)?;
        let plan = self.plan(variant, width, height)?;
        let (sx, sy) = tex.texel_scale();
        let ((mw, mh), (lx, ly)) = (self.conv.size(), self.conv.left());
        let (mw, mh, lx, ly) = (mw as u32, mh as u32, lx as u32, ly as u32);
        let (handle, dst, mask) = (tex.handle(), out.device_ptr(), self.conv.device_mask());
        let mut args: Vec<&dyn KernelArg> =
            vec![&handle, &dst, &width, &height, &pitch, &mask, &mw, &mh, &lx, &ly, &sx, &sy];
        let taps;
        if plan.mask == MaskSource::Constant {
            taps = self.conv.mask_params().arg(plan.kernel, gpu.param_sizes(plan.kernel)?, self.conv.taps())?;
            args.push(&*taps);
        }
        // SAFETY: a live one-channel texture of this context with this
        // extent and the coordinates its scale says; out holds the layout
        // on this GPU (checked); the mask buffer holds mw · mh taps, and so
        // does the mask parameter of a constant kernel; mw, mh ≥ 1.
        unsafe { gpu.launch(plan.kernel, &plan.launch_config(), &args)? };
        Ok(plan)
    }
}

impl std::fmt::Debug for TexConv2d {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TexConv2d")
            .field("size", &self.size())
            .field("left", &self.left())
            .field("op", &self.op())
            .field("mode", &self.mode())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texture::Coordinates;

    #[test]
    fn boundaries_map_to_address_modes() {
        let want = [
            (Boundary::Zero, AddressMode::Border, Coordinates::Pixel),
            (Boundary::Nearest, AddressMode::Clamp, Coordinates::Pixel),
            (Boundary::Wrap, AddressMode::Wrap, Coordinates::Normalized),
            (Boundary::Reflect, AddressMode::Mirror, Coordinates::Normalized),
        ];
        for (b, mode, coords) in want {
            let d = boundary_desc(b).unwrap();
            assert_eq!(
                (d.address, d.filter, d.coordinates, d.border),
                ([mode; 2], FilterMode::Point, coords, [0.0; 4])
            );
            assert_eq!(d.validate(), Ok(()));
        }
        let e = boundary_desc(Boundary::Mirror).unwrap_err();
        assert!(matches!(e, Error::Texture { problem: TextureProblem::NoAddressMode(Boundary::Mirror), .. }));
        assert!(e.to_string().contains("`mirror`") && e.to_string().contains("reflect"), "{e}");
    }

    #[test]
    fn plans() {
        let h = DeviceLimits::H100;
        let p = plan_tex_conv(&h, TexConvVariant::Direct, (5, 5), (8192, 8192)).unwrap();
        assert_eq!((p.kernel, p.mask, p.block, p.grid), ("tex_conv2d_f32", MaskSource::Constant, (32, 8), (256, 1024)));
        assert_eq!(p.fetches_per_output, 25.0);
        let b = plan_tex_conv(&h, TexConvVariant::Blocked, (5, 5), (8192, 8192)).unwrap();
        assert_eq!((b.kernel, b.grid), ("tex_conv2d_blocked_f32", (64, 256)));
        assert_eq!(b.fetches_per_output, 64.0 / 16.0);
        // 65 × 65 taps: more than the mask parameter holds.
        let g = plan_tex_conv(&h, TexConvVariant::Blocked, (65, 65), (33, 65)).unwrap();
        assert_eq!((g.kernel, g.mask, g.grid), ("tex_conv2d_blocked_gm_f32", MaskSource::Global, (1, 3)));
        assert!(plan_tex_conv(&h, TexConvVariant::Direct, (0, 3), (4, 4)).is_err());
        assert_eq!(plan_tex_conv(&h, TexConvVariant::Direct, (3, 3), (0, 0)).unwrap().grid, (1, 1));
        for v in TexConvVariant::ALL {
            assert_eq!(v.name().parse::<TexConvVariant>().unwrap(), v);
        }
        assert!("tiled".parse::<TexConvVariant>().is_err());
    }
}
