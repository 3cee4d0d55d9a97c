//! Texture memory (lesson 004, "texture and surface memory"): CUDA arrays,
//! 2D texture objects over them or over pitched memory, and kernels that
//! read through the texture unit.
//!
//! The lesson's points, and where they show up here:
//!
//! * Texture reads are cached with **2D locality**: a warp reading a small
//!   2D neighbourhood hits the cache. A [`CudaArray`] stores its texels in
//!   the hardware's block-linear order for that; a [`PitchedBuffer`] can be
//!   read as a texture too ([`PitchedBuffer::texture`]), in its own
//!   row-major order.
//! * **Address computation is done outside the kernel**, including what
//!   happens outside the image: the [`AddressMode`] per axis (clamp,
//!   border, wrap, mirror). [`conv::TexConv2d`] uses that as the boundary
//!   mode of a 2D convolution; [`conv::address_for`] gives the mapping to
//!   the project's [`Boundary`](crate::conv::Boundary) names.
//! * **Linear filtering** ([`FilterMode::Linear`]) blends the 2 × 2 texels
//!   around a coordinate in hardware (bilinear resampling,
//!   [`Texture2d::resize`]), with weights in 9-bit fixed point (8
//!   fractional bits): see [`model`] for what that means for precision.
//! * **8-bit data read as normalized floats**: a `u8` array
//!   ([`Texel`]) reads as `value / 255` in `[0, 1]`.
//!
//! ```no_run
//! use coalesce_host::texture::{AddressMode, FilterMode, TextureDesc};
//! use coalesce_host::Gpu;
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = Gpu::new()?;
//! let (w, h) = (640, 480);
//! let image: Vec<f32> = (0..w * h).map(|i| (i % 251) as f32).collect();
//! let array = gpu.upload_array(&image, w, h)?;
//! // Bilinear, clamped at the edges, coordinates in pixels.
//! let tex = array.texture(&TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Linear))?;
//! let mut half = gpu.alloc_zeroed::<f32>(320 * 240)?;
//! tex.resize(&mut half.as_view_mut(), 320, 240, 320)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Coordinates
//!
//! In pixel coordinates ([`Coordinates::Pixel`]) texel `i` covers `[i, i +
//! 1)`, its centre is `i + 0.5`. In normalized coordinates
//! ([`Coordinates::Normalized`]) the image spans `[0, 1)` on each axis.
//! The hardware supports [`AddressMode::Wrap`] and [`AddressMode::Mirror`]
//! only with normalized coordinates: [`TextureDesc::validate`] refuses
//! them with pixel coordinates ([`TextureProblem::NeedsNormalizedCoordinates`]),
//! and [`TextureDesc::for_mode`] picks normalized coordinates for them by
//! itself. Kernels that address texels by index take a scale per axis,
//! [`TextureDesc::texel_scale`], so the same kernel serves both.
//!
//! # Lifetimes and errors
//!
//! A [`Texture2d`] borrows the array or pitched buffer it reads, so it
//! cannot outlive it, and the data cannot be rewritten while a texture
//! reads it. Dropping either waits for the handle's stream, then destroys
//! the driver object. Extents beyond the device's texture limits, zero
//! extents, misaligned pitched memory, wrap or mirror with pixel
//! coordinates, and textures that do not suit a kernel are errors before
//! any driver call ([`Error::Texture`], [`Error::ZeroExtent`]).

use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;

use bytemuck::Pod;
use cust::device::{Device, DeviceAttribute};
use cust::memory::DeviceCopy;

pub use coalesce_kernels::texture::{BLOCK_X, BLOCK_Y, fetches_per_thread};

use crate::driver::{self, ArrayDescriptor, Memcpy2D, ResourceArray, ResourceDesc, ResourcePitch2d, ResourceUnion};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{Axis, LaunchConfig, blocks_for};
use crate::memory::{DeviceView, DeviceViewMut};
use crate::pitched::PitchedBuffer;
use crate::stream::Tracker;

pub mod conv;
pub mod model;

pub use conv::{TexConv2d, TexConvPlan, TexConvVariant};

/// `CU_AD_FORMAT_UNSIGNED_INT8`
const FORMAT_U8: u32 = 0x01;
/// `CU_AD_FORMAT_FLOAT`
const FORMAT_F32: u32 = 0x20;

/// Threads per block of the fetch kernel.
const FETCH_THREADS: u32 = 256;

/// Threads per block of the 2D texture kernels, `(x, y)`: one warp per
/// block row.
pub const BLOCK_2D: (u32, u32) = (32, 8);

/// Element types a [`CudaArray`] holds, as the texture unit sees them.
///
/// | type | format | channels | a fetch returns |
/// | --- | --- | --- | --- |
/// | `f32` | float | 1 | the value in `r` |
/// | `[f32; 4]` | float | 4 | `r, g, b, a` |
/// | `u8` | unsigned 8-bit | 1 | `value / 255` in `r` (read as a normalized float) |
///
/// # Safety
/// `FORMAT` and `CHANNELS` must describe the type's bytes exactly (the
/// driver copies `size_of::<Self>()` bytes per texel).
pub unsafe trait Texel: Pod + Send + Sync + 'static {
    /// The `CUarray_format` value.
    const FORMAT: u32;
    /// Channels per texel.
    const CHANNELS: u32;
    /// A short name for messages.
    const NAME: &'static str;
}

// SAFETY: one 32-bit float.
unsafe impl Texel for f32 {
    const FORMAT: u32 = FORMAT_F32;
    const CHANNELS: u32 = 1;
    const NAME: &'static str = "f32";
}

// SAFETY: four 32-bit floats.
unsafe impl Texel for [f32; 4] {
    const FORMAT: u32 = FORMAT_F32;
    const CHANNELS: u32 = 4;
    const NAME: &'static str = "float4";
}

// SAFETY: one unsigned byte.
unsafe impl Texel for u8 {
    const FORMAT: u32 = FORMAT_U8;
    const CHANNELS: u32 = 1;
    const NAME: &'static str = "u8";
}

/// What happens to a coordinate outside the texture, per axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressMode {
    /// Outside reads the nearest edge texel (`CU_TR_ADDRESS_MODE_CLAMP`).
    Clamp,
    /// Outside reads the border colour (`CU_TR_ADDRESS_MODE_BORDER`).
    Border,
    /// The texture repeats (`CU_TR_ADDRESS_MODE_WRAP`); normalized
    /// coordinates only.
    Wrap,
    /// The texture repeats, every other copy flipped, edge texels doubled
    /// (`CU_TR_ADDRESS_MODE_MIRROR`); normalized coordinates only.
    Mirror,
}

impl AddressMode {
    /// The four modes.
    pub const ALL: [AddressMode; 4] = [AddressMode::Clamp, AddressMode::Border, AddressMode::Wrap, AddressMode::Mirror];

    /// The `CUaddress_mode` value.
    pub const fn raw(self) -> u32 {
        match self {
            AddressMode::Wrap => 0,
            AddressMode::Clamp => 1,
            AddressMode::Mirror => 2,
            AddressMode::Border => 3,
        }
    }

    /// True for the modes the hardware supports only with normalized
    /// coordinates (wrap, mirror).
    pub const fn needs_normalized(self) -> bool {
        matches!(self, AddressMode::Wrap | AddressMode::Mirror)
    }

    /// `clamp`, `border`, `wrap` or `mirror`.
    pub const fn name(self) -> &'static str {
        match self {
            AddressMode::Clamp => "clamp",
            AddressMode::Border => "border",
            AddressMode::Wrap => "wrap",
            AddressMode::Mirror => "mirror",
        }
    }
}

impl fmt::Display for AddressMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for AddressMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        AddressMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown address mode `{s}` (clamp, border, wrap, mirror)"))
    }
}

/// How a fetch between texel centres is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterMode {
    /// The texel the coordinate falls in (nearest neighbour).
    Point,
    /// The bilinear blend of the 2 × 2 texels around the coordinate,
    /// weights in 9-bit fixed point (see [`model`]).
    Linear,
}

impl FilterMode {
    /// The `CUfilter_mode` value.
    pub const fn raw(self) -> u32 {
        match self {
            FilterMode::Point => 0,
            FilterMode::Linear => 1,
        }
    }

    /// `point` or `linear`.
    pub const fn name(self) -> &'static str {
        match self {
            FilterMode::Point => "point",
            FilterMode::Linear => "linear",
        }
    }
}

impl fmt::Display for FilterMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The units of texture coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coordinates {
    /// Texel `i` covers `[i, i + 1)`.
    Pixel,
    /// The texture covers `[0, 1)` on each axis.
    Normalized,
}

impl Coordinates {
    /// `pixel` or `normalized`.
    pub const fn name(self) -> &'static str {
        match self {
            Coordinates::Pixel => "pixel",
            Coordinates::Normalized => "normalized",
        }
    }
}

/// How a texture is sampled: address mode per axis, filter, coordinate
/// units and border colour.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextureDesc {
    /// Address mode along x and y.
    pub address: [AddressMode; 2],
    /// Filter mode.
    pub filter: FilterMode,
    /// Coordinate units.
    pub coordinates: Coordinates,
    /// What [`AddressMode::Border`] reads, `[r, g, b, a]`.
    pub border: [f32; 4],
}

impl TextureDesc {
    /// `address` on both axes, border colour 0.
    pub const fn new(address: AddressMode, filter: FilterMode, coordinates: Coordinates) -> TextureDesc {
        TextureDesc { address: [address; 2], filter, coordinates, border: [0.0; 4] }
    }

    /// `address` on both axes, with the coordinates it needs: normalized
    /// for wrap and mirror, pixel otherwise.
    pub const fn for_mode(address: AddressMode, filter: FilterMode) -> TextureDesc {
        let coordinates = if address.needs_normalized() { Coordinates::Normalized } else { Coordinates::Pixel };
        TextureDesc::new(address, filter, coordinates)
    }

    /// The same with address mode `x` along x and `y` along y.
    pub const fn with_address(self, x: AddressMode, y: AddressMode) -> TextureDesc {
        TextureDesc { address: [x, y], ..self }
    }

    /// The same with border colour `colour` (`[r, g, b, a]`).
    pub const fn with_border(self, colour: [f32; 4]) -> TextureDesc {
        TextureDesc { border: colour, ..self }
    }

    /// `Ok` when the hardware can sample this way: wrap and mirror need
    /// normalized coordinates.
    pub fn validate(&self) -> std::result::Result<(), TextureProblem> {
        for (axis, mode) in [Axis::X, Axis::Y].into_iter().zip(self.address) {
            if mode.needs_normalized() && self.coordinates == Coordinates::Pixel {
                return Err(TextureProblem::NeedsNormalizedCoordinates { axis, mode });
            }
        }
        Ok(())
    }

    /// The factor per axis that turns a position in texels into this
    /// texture's coordinate for a `width × height` texture: `(1, 1)` in
    /// pixel coordinates, `(1 / width, 1 / height)` in normalized ones.
    /// Texel `i`'s centre is at `(i + 0.5) · scale`.
    pub fn texel_scale(&self, width: usize, height: usize) -> (f32, f32) {
        match self.coordinates {
            Coordinates::Pixel => (1.0, 1.0),
            Coordinates::Normalized => ((1.0 / width.max(1) as f64) as f32, (1.0 / height.max(1) as f64) as f32),
        }
    }

    /// The driver's descriptor.
    fn raw(&self) -> driver::TexDesc {
        driver::TexDesc {
            address_mode: [self.address[0].raw(), self.address[1].raw(), self.address[0].raw()],
            filter_mode: self.filter.raw(),
            flags: match self.coordinates {
                Coordinates::Pixel => 0,
                Coordinates::Normalized => driver::TRSF_NORMALIZED_COORDINATES,
            },
            max_anisotropy: 0,
            mipmap_filter_mode: 0,
            mipmap_level_bias: 0.0,
            min_mipmap_level_clamp: 0.0,
            max_mipmap_level_clamp: 0.0,
            border_color: self.border,
            reserved: [0; 12],
        }
    }
}

impl fmt::Display for TextureDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y] = self.address;
        if x == y {
            write!(f, "{x}")?;
        } else {
            write!(f, "{x} (x) / {y} (y)")?;
        }
        write!(f, ", {} filtering, {} coordinates", self.filter, self.coordinates.name())?;
        if self.address.contains(&AddressMode::Border) {
            write!(f, ", border {:?}", self.border)?;
        }
        Ok(())
    }
}

/// Why a texture or CUDA array cannot be made or used as asked.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TextureProblem {
    /// Wrap or mirror addressing with pixel coordinates.
    #[error(
        "address mode {mode} along {axis} needs normalized coordinates (the hardware wraps and mirrors only \
         those); use Coordinates::Normalized, or TextureDesc::for_mode, which picks them"
    )]
    NeedsNormalizedCoordinates {
        /// The axis.
        axis: Axis,
        /// Its address mode.
        mode: AddressMode,
    },
    /// An extent beyond the device's limit for this kind of texture.
    #[error("a {width} x {height} {resource} exceeds this device's {max_width} x {max_height} limit")]
    TooLarge {
        /// `CUDA array` or `pitched texture`.
        resource: &'static str,
        /// Width asked for, texels.
        width: usize,
        /// Height asked for, texels.
        height: usize,
        /// The device's largest width.
        max_width: usize,
        /// The device's largest height.
        max_height: usize,
    },
    /// A pitched texture whose pitch the texture unit cannot take.
    #[error("pitch {pitch} bytes: a pitched texture needs a multiple of {alignment} bytes, at most {max} bytes")]
    Pitch {
        /// The pitch, bytes.
        pitch: usize,
        /// `CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT`.
        alignment: usize,
        /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH`.
        max: usize,
    },
    /// A pitched texture whose base address is not aligned enough.
    #[error("base address {address:#x} is not a multiple of the texture alignment {alignment} bytes")]
    BaseAlignment {
        /// The address.
        address: u64,
        /// `CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT`.
        alignment: usize,
    },
    /// A boundary mode no address mode reproduces.
    #[error(
        "boundary mode `{}` (scipy `{}`) has no texture address mode: the hardware's mirror repeats the edge \
         texel (that is `reflect`), clamp is `nearest`, border 0 is `zero`, wrap is `wrap`",
        .0.name(), .0.scipy_name()
    )]
    NoAddressMode(crate::conv::Boundary),
    /// A texture that does not suit the kernel or operation.
    #[error("needs {expected}, the texture has {got}")]
    Unsuitable {
        /// What the operation needs.
        expected: String,
        /// What the texture has.
        got: String,
    },
}

/// The device's limits for textures, bytes and texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextureLimits {
    /// Widest 2D CUDA array a texture can read, texels.
    pub array_width: usize,
    /// Tallest 2D CUDA array a texture can read, texels.
    pub array_height: usize,
    /// Widest pitched (linear 2D) texture, texels.
    pub linear_width: usize,
    /// Tallest pitched texture, texels.
    pub linear_height: usize,
    /// Largest pitch of a pitched texture, bytes.
    pub linear_pitch: usize,
    /// Alignment of a pitched texture's base address, bytes.
    pub texture_alignment: usize,
    /// Alignment of a pitched texture's pitch, bytes.
    pub pitch_alignment: usize,
}

impl TextureLimits {
    /// `Ok` when a `width × height` CUDA array fits; a zero side is
    /// [`Error::ZeroExtent`], too large [`TextureProblem::TooLarge`].
    pub fn check_array(&self, op: &'static str, width: usize, height: usize) -> Result<()> {
        check_extent(op, "CUDA array", (width, height), (self.array_width, self.array_height))
    }

    /// `Ok` when a pitched texture of `width × height` texels of
    /// `texel_bytes`, rows `pitch` bytes apart from `address`, fits the
    /// texture unit.
    pub fn check_pitched(
        &self,
        op: &'static str,
        (width, height): (usize, usize),
        texel_bytes: usize,
        pitch: usize,
        address: u64,
    ) -> Result<()> {
        check_extent(op, "pitched texture", (width, height), (self.linear_width, self.linear_height))?;
        let problem = if pitch < width.saturating_mul(texel_bytes)
            || pitch > self.linear_pitch
            || !pitch.is_multiple_of(self.pitch_alignment.max(1))
        {
            Some(TextureProblem::Pitch { pitch, alignment: self.pitch_alignment, max: self.linear_pitch })
        } else if !address.is_multiple_of(self.texture_alignment.max(1) as u64) {
            Some(TextureProblem::BaseAlignment { address, alignment: self.texture_alignment })
        } else {
            None
        };
        problem.map_or(Ok(()), |problem| Err(Error::Texture { op, problem }))
    }
}

fn check_extent(
    op: &'static str,
    resource: &'static str,
    (w, h): (usize, usize),
    (mw, mh): (usize, usize),
) -> Result<()> {
    if w == 0 || h == 0 {
        return Err(Error::ZeroExtent { op, width: w, height: h });
    }
    if w > mw || h > mh {
        let problem = TextureProblem::TooLarge { resource, width: w, height: h, max_width: mw, max_height: mh };
        return Err(Error::Texture { op, problem });
    }
    Ok(())
}

impl Gpu {
    /// This device's texture limits.
    pub fn texture_limits(&self) -> Result<TextureLimits> {
        let dev = Device::get_device(self.info().ordinal).map_err(|e| driver::from_cust("cuDeviceGet", e))?;
        let get = |a| -> Result<usize> {
            let v = dev.get_attribute(a).map_err(|e| driver::from_cust("cuDeviceGetAttribute", e))?;
            Ok(v.max(0) as usize)
        };
        Ok(TextureLimits {
            array_width: get(DeviceAttribute::MaximumTexture2DWidth)?,
            array_height: get(DeviceAttribute::MaximumTexture2DHeight)?,
            linear_width: get(DeviceAttribute::MaximumTexture2DLinearWidth)?,
            linear_height: get(DeviceAttribute::MaximumTexture2DLinearHeight)?,
            linear_pitch: get(DeviceAttribute::MaximumTexture2DLinearPitch)?,
            texture_alignment: get(DeviceAttribute::TextureAlignment)?,
            pitch_alignment: get(DeviceAttribute::TexturePitchAlignment)?,
        })
    }

    /// A `width × height` CUDA array of `T` holding `host` (contiguous
    /// rows: row `r` is `host[r·width..(r+1)·width]`).
    pub fn upload_array<T: Texel>(&self, host: &[T], width: usize, height: usize) -> Result<CudaArray<T>> {
        let want = width.saturating_mul(height);
        if host.len() != want {
            return Err(Error::LengthMismatch { op: "upload_array", expected: want, got: host.len() });
        }
        let mut a = self.create_array::<T>("upload_array", width, height)?;
        a.copy_from_host(host)?;
        Ok(a)
    }

    /// A `width × height` CUDA array of `T`, every texel zero.
    pub fn alloc_array_zeroed<T: Texel>(&self, width: usize, height: usize) -> Result<CudaArray<T>> {
        let mut a = self.create_array::<T>("alloc_array", width, height)?;
        a.copy_from_host(&vec![T::zeroed(); width * height])?;
        Ok(a)
    }

    /// Creates the array; its contents are written by the caller before
    /// it leaves this module.
    fn create_array<T: Texel>(&self, op: &'static str, width: usize, height: usize) -> Result<CudaArray<T>> {
        self.texture_limits()?.check_array(op, width, height)?;
        let elem_size = std::mem::size_of::<T>();
        let bytes = width
            .checked_mul(height)
            .and_then(|n| n.checked_mul(elem_size))
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or(Error::ExtentOverflow { op, width, height, elem_size })?;
        let out_of_memory = || {
            let (free, total) = self.memory_info().unwrap_or((0, self.info().total_memory));
            Error::OutOfMemory { op, requested: bytes, free, total }
        };
        if bytes > self.info().total_memory {
            return Err(out_of_memory());
        }
        self.bind()?;
        let desc = ArrayDescriptor { width, height, format: T::FORMAT, num_channels: T::CHANNELS };
        let handle = driver::array_create(&desc).map_err(|e| match e.code {
            2 => out_of_memory(),
            _ => Error::from(e),
        })?;
        Ok(CudaArray { handle, width, height, gpu: self.clone(), track: Tracker::default(), _m: PhantomData })
    }
}

/// A 2D CUDA array: texels in the texture unit's own (block-linear)
/// layout, readable only through textures and copies.
pub struct CudaArray<T: Texel> {
    handle: driver::CUarray,
    width: usize,
    height: usize,
    gpu: Gpu,
    track: Tracker,
    _m: PhantomData<T>,
}

/// The range a [`CudaArray`]'s uses are tracked under: an array has no
/// device address, so one range stands for all of it.
const ARRAY_RANGE: std::ops::Range<u64> = 0..1;

// SAFETY: the handle is a driver object of the context the `Gpu` keeps
// alive; the driver serializes access to it.
unsafe impl<T: Texel> Send for CudaArray<T> {}
// SAFETY: as above; shared access only reads.
unsafe impl<T: Texel> Sync for CudaArray<T> {}

/// One side of a copy into or out of an array.
enum Other {
    Host(*mut c_void),
    Device(u64, usize),
}

impl<T: Texel> CudaArray<T> {
    const ELEM: usize = std::mem::size_of::<T>();

    /// Width, texels.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height, texels.
    pub fn height(&self) -> usize {
        self.height
    }

    /// The handle this array belongs to.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Copies `height` rows of `width · size_of::<T>()` bytes between this
    /// array and `other`, then waits for the copy.
    ///
    /// # Safety
    /// `other` spans `height` rows of the row bytes at its pitch (host
    /// memory writable when `into_array` is false); device memory is a
    /// live allocation of this context.
    unsafe fn copy(&self, other: Other, into_array: bool) -> Result<()> {
        let row = self.width * Self::ELEM;
        let null = std::ptr::null_mut();
        let (ty, host, device, pitch) = match other {
            Other::Host(p) => (driver::MEMORYTYPE_HOST, p, 0, row),
            Other::Device(p, pitch) => (driver::MEMORYTYPE_DEVICE, null, p, pitch),
        };
        let array = (driver::MEMORYTYPE_ARRAY, null, 0, 0);
        let (src, dst) =
            if into_array { ((ty, host, device, pitch), array) } else { (array, (ty, host, device, pitch)) };
        let copy = Memcpy2D {
            src_x_in_bytes: 0,
            src_y: 0,
            src_memory_type: src.0,
            src_host: src.1,
            src_device: src.2,
            src_array: if into_array { null } else { self.handle },
            src_pitch: src.3,
            dst_x_in_bytes: 0,
            dst_y: 0,
            dst_memory_type: dst.0,
            dst_host: dst.1,
            dst_device: dst.2,
            dst_array: if into_array { self.handle } else { null },
            dst_pitch: dst.3,
            width_in_bytes: row,
            height: self.height,
        };
        self.gpu.bind()?;
        if into_array {
            self.track.write(&self.gpu, ARRAY_RANGE)?;
        } else {
            self.track.read(&self.gpu, ARRAY_RANGE)?;
        }
        // SAFETY: the array is live and has exactly these rows; the other
        // side is the caller's contract; host memory stays borrowed until
        // the synchronize below.
        unsafe { driver::memcpy_2d(&copy, self.gpu.raw_stream())? };
        self.gpu.synchronize()
    }

    /// Overwrites the array with `host` (contiguous rows, `width · height`
    /// texels).
    pub fn copy_from_host(&mut self, host: &[T]) -> Result<()> {
        self.check_len("CudaArray::copy_from_host", host.len())?;
        // SAFETY: `host` holds exactly the array's rows, contiguous, and
        // is only read.
        unsafe { self.copy(Other::Host(host.as_ptr().cast_mut().cast()), true) }
    }

    /// Copies the array into `out` (contiguous rows).
    pub fn copy_to_host(&self, out: &mut [T]) -> Result<()> {
        self.check_len("CudaArray::copy_to_host", out.len())?;
        // SAFETY: `out` holds exactly the array's rows and is borrowed
        // mutably until the copy has completed.
        unsafe { self.copy(Other::Host(out.as_mut_ptr().cast()), false) }
    }

    /// The array's texels as contiguous rows.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); self.width * self.height];
        self.copy_to_host(&mut v)?;
        Ok(v)
    }

    /// Device → array: overwrites the array with a pitched buffer of the
    /// same extent.
    pub fn copy_from_pitched(&mut self, src: &PitchedBuffer<T>) -> Result<()>
    where
        T: DeviceCopy,
    {
        const OP: &str = "CudaArray::copy_from_pitched";
        src.check_gpu(&self.gpu, OP)?;
        if (src.width(), src.height()) != (self.width, self.height) {
            return Err(Error::ExtentMismatch {
                op: OP,
                expected: (self.width, self.height),
                got: (src.width(), src.height()),
            });
        }
        // SAFETY: the pitched buffer is a live allocation of this context
        // with these rows at its (allocator-given) pitch.
        unsafe { self.copy(Other::Device(src.device_ptr().0, src.pitch()), true) }
    }

    fn check_len(&self, op: &'static str, got: usize) -> Result<()> {
        let expected = self.width * self.height;
        if got == expected { Ok(()) } else { Err(Error::LengthMismatch { op, expected, got }) }
    }

    /// A texture object reading this array as `desc` says. The texture
    /// borrows the array.
    pub fn texture(&self, desc: &TextureDesc) -> Result<Texture2d<'_>> {
        let mut res = ResourceUnion { reserved: [0; 32] };
        res.array = ResourceArray { array: self.handle };
        let raw = ResourceDesc { res_type: driver::RESOURCE_TYPE_ARRAY, res, flags: 0 };
        let read = (&self.track, ARRAY_RANGE);
        // SAFETY: the array is live and borrowed by the texture.
        unsafe {
            Texture2d::create(
                &self.gpu,
                &raw,
                desc,
                (self.width, self.height),
                TexelInfo::of::<T>(),
                Source::Array,
                read,
            )
        }
    }
}

impl<T: Texel> Drop for CudaArray<T> {
    fn drop(&mut self) {
        if self.gpu.ctx().enter() {
            // Work queued before the drop, on any stream, may still read
            // the array.
            self.track.quiesce();
            // SAFETY: created by cuArrayCreate in this context, destroyed
            // once; no texture outlives it (they borrow
            // it) and no stream uses it any more.
            let _ = unsafe { driver::array_destroy(self.handle) };
        }
    }
}

impl<T: Texel> fmt::Debug for CudaArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CudaArray<{}>[{} x {}]", T::NAME, self.width, self.height)
    }
}

impl<T: Texel + DeviceCopy> PitchedBuffer<T> {
    /// A texture object reading this pitched buffer (a `pitch2D`
    /// resource) as `desc` says; the texture borrows the buffer. The base
    /// address and pitch must meet the device's texture alignments
    /// ([`TextureLimits::check_pitched`]).
    pub fn texture(&self, desc: &TextureDesc) -> Result<Texture2d<'_>> {
        let limits = self.gpu().texture_limits()?;
        let (w, h) = (self.width(), self.height());
        let address = self.device_ptr().0;
        limits.check_pitched("PitchedBuffer::texture", (w, h), std::mem::size_of::<T>(), self.pitch(), address)?;
        let mut res = ResourceUnion { reserved: [0; 32] };
        res.pitch2d = ResourcePitch2d {
            device: address,
            format: T::FORMAT,
            num_channels: T::CHANNELS,
            width: w,
            height: h,
            pitch_in_bytes: self.pitch(),
        };
        let raw = ResourceDesc { res_type: driver::RESOURCE_TYPE_PITCH2D, res, flags: 0 };
        let source = Source::Pitched { pitch: self.pitch() };
        // SAFETY: the buffer is live and borrowed by the texture.
        unsafe { Texture2d::create(self.gpu(), &raw, desc, (w, h), TexelInfo::of::<T>(), source, self.tracker()) }
    }
}

/// What a texture's texels are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TexelInfo {
    /// [`Texel::NAME`].
    pub name: &'static str,
    /// Channels per texel.
    pub channels: u32,
}

impl TexelInfo {
    fn of<T: Texel>() -> TexelInfo {
        TexelInfo { name: T::NAME, channels: T::CHANNELS }
    }
}

/// What a texture reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A [`CudaArray`].
    Array,
    /// A [`PitchedBuffer`] with rows `pitch` bytes apart.
    Pitched {
        /// Bytes between row starts.
        pitch: usize,
    },
}

/// A 2D texture object (`CUtexObject`) reading a [`CudaArray`] or a
/// [`PitchedBuffer`], which it borrows for `'a`. Destroyed on drop.
pub struct Texture2d<'a> {
    handle: u64,
    desc: TextureDesc,
    width: usize,
    height: usize,
    texel: TexelInfo,
    source: Source,
    gpu: Gpu,
    /// The resource's uses (the texture's reads are reads of it).
    read: (&'a Tracker, std::ops::Range<u64>),
    /// The streams whose kernels read through this texture object.
    uses: Tracker,
}

/// What [`Texture2d::resize`] launched.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResizePlan {
    /// The kernel.
    pub kernel: &'static str,
    /// Threads per block, `(x, y)`.
    pub block: (u32, u32),
    /// Blocks, `(x, y)`.
    pub grid: (u32, u32),
    /// Coordinate step per output pixel, `(sx, sy)` (see [`resize_scale`]).
    pub scale: (f32, f32),
}

/// The coordinate step per output pixel of a resize from `input` to
/// `output` (`(width, height)` each) with a texture sampled as `desc`:
/// output `(x, y)` samples at `((x + 0.5) · sx, (y + 0.5) · sy)`, so pixel
/// centres map to pixel centres. In pixel coordinates `sx = in_w / out_w`;
/// in normalized ones `sx = 1 / out_w`.
pub fn resize_scale(desc: &TextureDesc, input: (usize, usize), output: (usize, usize)) -> (f32, f32) {
    let (ow, oh) = (output.0.max(1) as f64, output.1.max(1) as f64);
    match desc.coordinates {
        Coordinates::Pixel => ((input.0 as f64 / ow) as f32, (input.1 as f64 / oh) as f32),
        Coordinates::Normalized => ((1.0 / ow) as f32, (1.0 / oh) as f32),
    }
}

/// The grid of a 2D texture kernel over `units_x × units_y` work items
/// per axis, [`BLOCK_2D`] threads per block, within the device's limits.
pub(crate) fn grid_2d(limits: &crate::device::DeviceLimits, units_x: usize, units_y: usize) -> (u32, u32) {
    let (bx, by) = BLOCK_2D;
    (
        units_x.div_ceil(bx as usize).clamp(1, limits.max_grid_dim[0] as usize) as u32,
        units_y.div_ceil(by as usize).clamp(1, limits.max_grid_dim[1] as usize) as u32,
    )
}

impl<'a> Texture2d<'a> {
    /// Creates the texture object.
    ///
    /// # Safety
    /// `res` names a live resource of `gpu`'s context that outlives `'a`.
    unsafe fn create(
        gpu: &Gpu,
        res: &ResourceDesc,
        desc: &TextureDesc,
        (width, height): (usize, usize),
        texel: TexelInfo,
        source: Source,
        read: (&'a Tracker, std::ops::Range<u64>),
    ) -> Result<Texture2d<'a>> {
        desc.validate().map_err(|problem| Error::Texture { op: "texture", problem })?;
        gpu.bind()?;
        // SAFETY: forwarded to the caller's contract.
        let handle = unsafe { driver::tex_object_create(res, &desc.raw())? };
        let gpu = gpu.clone();
        Ok(Texture2d { handle, desc: *desc, width, height, texel, source, gpu, read, uses: Tracker::default() })
    }

    /// Checks that the texture belongs to `gpu`'s context and orders a
    /// kernel reading through it on `gpu`'s stream after the writes of its
    /// resource on other streams.
    pub(crate) fn check_gpu(&self, gpu: &Gpu, op: &'static str) -> Result<()> {
        if gpu.raw_context() != self.gpu.raw_context() {
            return Err(Error::ForeignBuffer { op });
        }
        self.read.0.read(gpu, self.read.1.clone())?;
        self.uses.read(gpu, ARRAY_RANGE)
    }

    /// The `CUtexObject` handle (the `u64` kernels take).
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// How it samples.
    pub fn desc(&self) -> &TextureDesc {
        &self.desc
    }

    /// Width, texels.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height, texels.
    pub fn height(&self) -> usize {
        self.height
    }

    /// What its texels are.
    pub fn texel(&self) -> TexelInfo {
        self.texel
    }

    /// What it reads.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The handle it belongs to.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// [`TextureDesc::texel_scale`] for this texture's extent.
    pub fn texel_scale(&self) -> (f32, f32) {
        self.desc.texel_scale(self.width, self.height)
    }

    /// An error unless the texture's texels have `channels` channels.
    pub(crate) fn require_channels(&self, op: &'static str, channels: u32) -> Result<()> {
        if self.texel.channels == channels {
            return Ok(());
        }
        let problem = TextureProblem::Unsuitable {
            expected: format!("{channels}-channel texels"),
            got: format!("{} ({} channels)", self.texel.name, self.texel.channels),
        };
        Err(Error::Texture { op, problem })
    }

    /// Samples the texture at `(u[i], v[i])` for every `i`, writing all
    /// its channels per sample to `out` (`u.len() · channels` values,
    /// sample after sample). Asynchronous on the handle's stream.
    pub fn fetch(
        &self,
        u: &DeviceView<'_, f32>,
        v: &DeviceView<'_, f32>,
        out: &mut DeviceViewMut<'_, f32>,
    ) -> Result<()> {
        const OP: &str = "Texture2d::fetch";
        self.check_gpu(&self.gpu, OP)?;
        u.check_gpu(&self.gpu, OP)?;
        v.check_gpu(&self.gpu, OP)?;
        out.check_gpu(&self.gpu, OP)?;
        let n = u.len();
        if v.len() != n {
            return Err(Error::LengthMismatch { op: OP, expected: n, got: v.len() });
        }
        let ch = self.texel.channels;
        let want = n.checked_mul(ch as usize).ok_or(Error::SizeOverflow { op: OP, count: n, elem_size: 4 })?;
        if out.len() != want {
            return Err(Error::LengthMismatch { op: OP, expected: want, got: out.len() });
        }
        if n == 0 {
            return Ok(());
        }
        let limits = &self.gpu.info().limits;
        let cfg = LaunchConfig::new(blocks_for(n, FETCH_THREADS, limits.max_grid_dim[0]), FETCH_THREADS);
        // SAFETY: a live texture of this context (borrowed resource);
        // u and v hold n values, out n · channels, on this GPU (checked),
        // out borrowed mutably so it overlaps neither; 1 ≤ channels ≤ 4.
        unsafe {
            self.gpu.launch(
                "tex_fetch_2d",
                &cfg,
                &[&self.handle, &u.device_ptr(), &v.device_ptr(), &n, &out.device_ptr(), &ch],
            )
        }
    }

    /// Resamples the texture (one channel) to a `width × height` image in
    /// `out` (rows `pitch` elements apart): output `(x, y)` is the texture
    /// sampled at `((x + 0.5) · sx, (y + 0.5) · sy)` with
    /// [`resize_scale`]. With [`FilterMode::Linear`] that is bilinear
    /// resampling, with [`FilterMode::Point`] nearest-neighbour.
    /// Asynchronous on the handle's stream.
    pub fn resize(
        &self,
        out: &mut DeviceViewMut<'_, f32>,
        width: usize,
        height: usize,
        pitch: usize,
    ) -> Result<ResizePlan> {
        const OP: &str = "Texture2d::resize";
        self.check_gpu(&self.gpu, OP)?;
        out.check_gpu(&self.gpu, OP)?;
        self.require_channels(OP, 1)?;
        crate::conv::conv2d::check_layout(out.len(), out.len(), width, height, pitch)?;
        let scale = resize_scale(&self.desc, (self.width, self.height), (width, height));
        let limits = &self.gpu.info().limits;
        let plan =
            ResizePlan { kernel: "tex_resize_f32", block: BLOCK_2D, grid: grid_2d(limits, width, height), scale };
        if width == 0 || height == 0 {
            return Ok(plan);
        }
        let cfg = LaunchConfig::new(plan.grid, plan.block);
        // SAFETY: a live one-channel texture of this context; out holds
        // (height − 1) · pitch + width elements on this GPU (checked).
        unsafe {
            self.gpu.launch(
                plan.kernel,
                &cfg,
                &[&self.handle, &out.device_ptr(), &width, &height, &pitch, &scale.0, &scale.1],
            )?;
        }
        Ok(plan)
    }
}

impl Drop for Texture2d<'_> {
    fn drop(&mut self) {
        if self.gpu.ctx().enter() {
            // Kernels queued before the drop, on any stream, may still
            // read through it.
            self.uses.quiesce();
            // SAFETY: created by cuTexObjectCreate in this context,
            // destroyed once, no stream using it.
            let _ = unsafe { driver::tex_object_destroy(self.handle) };
        }
    }
}

impl fmt::Debug for Texture2d<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Texture2d")
            .field("handle", &self.handle)
            .field("extent", &(self.width, self.height))
            .field("texel", &self.texel.name)
            .field("source", &self.source)
            .field("desc", &self.desc)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_and_mirror_need_normalized_coordinates() {
        for mode in AddressMode::ALL {
            for filter in [FilterMode::Point, FilterMode::Linear] {
                let pixel = TextureDesc::new(mode, filter, Coordinates::Pixel);
                match pixel.validate() {
                    Ok(()) => assert!(!mode.needs_normalized(), "{mode}"),
                    Err(TextureProblem::NeedsNormalizedCoordinates { axis, mode: m }) => {
                        assert_eq!((axis, m), (Axis::X, mode));
                        assert!(mode.needs_normalized());
                    }
                    Err(e) => panic!("{mode}: {e}"),
                }
                assert_eq!(TextureDesc::new(mode, filter, Coordinates::Normalized).validate(), Ok(()));
                assert_eq!(TextureDesc::for_mode(mode, filter).validate(), Ok(()));
            }
        }
        // Per axis: the y axis is named.
        let d = TextureDesc::new(AddressMode::Clamp, FilterMode::Point, Coordinates::Pixel)
            .with_address(AddressMode::Border, AddressMode::Mirror);
        assert_eq!(
            d.validate(),
            Err(TextureProblem::NeedsNormalizedCoordinates { axis: Axis::Y, mode: AddressMode::Mirror })
        );
        let msg = Error::Texture { op: "texture", problem: d.validate().unwrap_err() }.to_string();
        assert!(msg.contains("mirror along y needs normalized coordinates"), "{msg}");
    }

    #[test]
    fn descriptors_carry_the_driver_values() {
        let d = TextureDesc::for_mode(AddressMode::Wrap, FilterMode::Linear)
            .with_address(AddressMode::Wrap, AddressMode::Border)
            .with_border([0.25, 0.5, 0.75, 1.0]);
        let raw = d.raw();
        assert_eq!(raw.address_mode[..2], [0, 3]);
        assert_eq!((raw.filter_mode, raw.flags), (1, 2));
        assert_eq!(raw.border_color, [0.25, 0.5, 0.75, 1.0]);
        use cust::sys::CUaddress_mode as A;
        let want = [
            (AddressMode::Wrap, A::CU_TR_ADDRESS_MODE_WRAP),
            (AddressMode::Clamp, A::CU_TR_ADDRESS_MODE_CLAMP),
            (AddressMode::Mirror, A::CU_TR_ADDRESS_MODE_MIRROR),
            (AddressMode::Border, A::CU_TR_ADDRESS_MODE_BORDER),
        ];
        for (m, c) in want {
            assert_eq!(m.raw(), c as u32, "{m}");
            assert_eq!(m.name().parse::<AddressMode>().unwrap(), m);
        }
        assert_eq!(FilterMode::Linear.raw(), cust::sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR as u32);
        assert_eq!(FORMAT_F32, cust::sys::CUarray_format::CU_AD_FORMAT_FLOAT as u32);
        assert_eq!(FORMAT_U8, cust::sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8 as u32);
        assert_eq!(TextureDesc::new(AddressMode::Clamp, FilterMode::Point, Coordinates::Pixel).raw().flags, 0);
        assert_eq!(
            d.to_string(),
            "wrap (x) / border (y), linear filtering, normalized coordinates, border [0.25, 0.5, 0.75, 1.0]"
        );
    }

    #[test]
    fn texel_sizes_match_their_formats() {
        assert_eq!(std::mem::size_of::<f32>(), 4 * f32::CHANNELS as usize);
        assert_eq!(std::mem::size_of::<[f32; 4]>(), 4 * <[f32; 4]>::CHANNELS as usize);
        assert_eq!(std::mem::size_of::<u8>(), u8::CHANNELS as usize);
    }

    fn limits() -> TextureLimits {
        TextureLimits {
            array_width: 1000,
            array_height: 500,
            linear_width: 800,
            linear_height: 400,
            linear_pitch: 4096,
            texture_alignment: 512,
            pitch_alignment: 32,
        }
    }

    #[test]
    fn extents_are_checked_before_the_driver() {
        let l = limits();
        assert!(l.check_array("t", 1000, 500).is_ok());
        assert!(matches!(l.check_array("t", 0, 5), Err(Error::ZeroExtent { width: 0, height: 5, .. })));
        let e = l.check_array("upload_array", 1001, 1).unwrap_err();
        assert!(matches!(&e, Error::Texture { problem: TextureProblem::TooLarge { max_width: 1000, .. }, .. }), "{e}");
        assert_eq!(e.to_string(), "upload_array: a 1001 x 1 CUDA array exceeds this device's 1000 x 500 limit");
        assert!(l.check_array("t", 5, 501).is_err());
    }

    #[test]
    fn pitched_textures_need_aligned_pitch_and_base() {
        let l = limits();
        assert!(l.check_pitched("t", (100, 10), 4, 416, 1024).is_ok());
        let pitch = |r: Result<()>| matches!(r, Err(Error::Texture { problem: TextureProblem::Pitch { .. }, .. }));
        assert!(pitch(l.check_pitched("t", (100, 10), 4, 400, 1024)), "400 is not a multiple of 32");
        assert!(pitch(l.check_pitched("t", (100, 10), 4, 384, 1024)), "below the row's bytes");
        assert!(pitch(l.check_pitched("t", (100, 10), 4, 4128, 1024)), "above the largest pitch");
        let e = l.check_pitched("t", (100, 10), 4, 416, 256).unwrap_err();
        assert!(matches!(e, Error::Texture { problem: TextureProblem::BaseAlignment { address: 256, .. }, .. }));
        assert!(l.check_pitched("t", (801, 10), 4, 4096, 0).is_err());
        assert!(l.check_pitched("t", (0, 10), 4, 416, 0).is_err());
    }

    #[test]
    fn resize_steps_map_centres_to_centres() {
        let pixel = TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Linear);
        assert_eq!(resize_scale(&pixel, (8192, 8192), (4096, 4096)), (2.0, 2.0));
        assert_eq!(resize_scale(&pixel, (100, 30), (400, 60)), (0.25, 0.5));
        let norm = TextureDesc::for_mode(AddressMode::Wrap, FilterMode::Linear);
        assert_eq!(resize_scale(&norm, (100, 30), (400, 64)), (1.0 / 400.0, 1.0 / 64.0));
        assert_eq!(pixel.texel_scale(7, 9), (1.0, 1.0));
        assert_eq!(norm.texel_scale(8, 16), (0.125, 0.0625));
        // Output pixel 0's centre samples the input at in/out · 0.5.
        let (sx, _) = resize_scale(&pixel, (10, 10), (4, 4));
        assert_eq!((0.0f32 + 0.5) * sx, 1.25);
    }

    #[test]
    fn grids_cover_and_respect_limits() {
        let l = crate::device::DeviceLimits::H100;
        assert_eq!(grid_2d(&l, 8192, 8192), (256, 1024));
        assert_eq!(grid_2d(&l, 1, 1), (1, 1));
        assert_eq!(grid_2d(&l, 0, 0), (1, 1));
        assert_eq!(grid_2d(&l, 33, 9), (2, 2));
        assert_eq!(grid_2d(&l, 5, 10_000_000).1, 65_535);
    }
}
