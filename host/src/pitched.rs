//! Pitched 2D device memory (lesson 003): [`PitchedBuffer`], allocated
//! with `cuMemAllocPitch` and copied with `cuMemcpy2D`.
//!
//! Two units, kept apart everywhere: **width** and **columns** are counted
//! in *elements* of `T`; the **pitch** is in *bytes*. Each row of a pitched
//! buffer starts `pitch` bytes after the previous one; the bytes between
//! the end of a row (`width · size_of::<T>()`) and the next row's start are
//! padding, which the driver adds so every row starts on an aligned address
//! (the lesson's 10000 `f32` columns: 40 000 bytes of data, pitch 40 192 on
//! its RTX 2070). Kernels address element `(row, col)` with
//! [`coalesce_kernels::dev::pitched`], the one place that does that
//! arithmetic.
//!
//! * Element sizes: 4, 8 or 16 bytes, the sizes `cuMemAllocPitch` takes
//!   ("coalesced memory transactions are not possible on other data
//!   sizes"). Other sizes are refused with [`Error::PitchedElementSize`]
//!   before the driver is called.
//! * The pitch the driver returns is checked: at least the row's bytes, a
//!   multiple of the element size and of the device's texture pitch
//!   alignment (`CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT`, the
//!   alignment 2D textures bound to such memory need). The base address is
//!   256-byte aligned like every `cuMemAlloc*` allocation.
//! * Copies (the lesson's `cudaMemcpy2D` walk-through): from and to
//!   contiguous host rows (host pitch = `width · size_of::<T>()`), between
//!   pitched buffers, between a pitched buffer and a linear
//!   [`DeviceBuffer`](crate::DeviceBuffer) view, whole or any
//!   sub-rectangle ([`Rect`]), bounds-checked before the driver sees them.
//!   Padding bytes are never written by a copy.
//! * Errors, all before any driver call: a zero width or height
//!   ([`Error::ZeroExtent`]), a byte size that overflows
//!   ([`Error::ExtentOverflow`]), more than the card's memory
//!   ([`Error::OutOfMemory`]; also when the driver itself runs out), a host
//!   slice of the wrong length ([`Error::LengthMismatch`]), a rectangle
//!   outside the buffer ([`Error::RectOutOfBounds`]), two buffers of
//!   different extents ([`Error::ExtentMismatch`]).
//!
//! ```no_run
//! use coalesce_host::{Gpu, Rect};
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = Gpu::new()?;
//! let host: Vec<f32> = (0..10_000 * 3).map(|i| i as f32).collect();
//! let m = gpu.upload_pitched(&host, 10_000, 3)?; // width 10000, 3 rows
//! assert!(m.pitch() >= 40_000); // bytes
//! let corner = m.rect_to_vec(Rect::new(9_998, 1, 2, 2))?; // columns 9998.., rows 1..
//! assert_eq!(corner, [19_998.0, 19_999.0, 29_998.0, 29_999.0]);
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;

use bytemuck::{Pod, Zeroable};
use cust::device::{Device, DeviceAttribute};
use cust::memory::DeviceCopy;

use crate::driver::{self, Memcpy2D};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::DevicePtr;
use crate::memory::{DeviceView, DeviceViewMut};
use crate::stream::Tracker;

/// Element sizes a pitched buffer may hold, bytes.
pub const PITCHED_ELEMENT_SIZES: [usize; 3] = [4, 8, 16];

/// Every `cuMemAlloc*` base address is aligned to at least this many bytes.
pub const BASE_ALIGNMENT: u64 = 256;

/// A rectangle of a 2D buffer: `width` columns from column `col`, `height`
/// rows from row `row` (all in elements / rows, never bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rect {
    /// First column.
    pub col: usize,
    /// First row.
    pub row: usize,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

impl Rect {
    /// `width × height` elements from `(col, row)`.
    pub const fn new(col: usize, row: usize, width: usize, height: usize) -> Rect {
        Rect { col, row, width, height }
    }

    /// The whole of a `width × height` buffer.
    pub const fn full(width: usize, height: usize) -> Rect {
        Rect { col: 0, row: 0, width, height }
    }

    /// Elements in the rectangle (saturating).
    pub fn len(&self) -> usize {
        self.width.saturating_mul(self.height)
    }

    /// True when the rectangle has no elements.
    pub fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0
    }

    /// `Ok` when the rectangle is non-empty and lies inside a `width ×
    /// height` buffer; the typed error otherwise.
    pub fn check_inside(&self, op: &'static str, width: usize, height: usize) -> Result<()> {
        if self.is_empty() {
            return Err(Error::ZeroExtent { op, width: self.width, height: self.height });
        }
        let fits = |start: usize, len: usize, max: usize| start.checked_add(len).is_some_and(|end| end <= max);
        if fits(self.col, self.width, width) && fits(self.row, self.height, height) {
            Ok(())
        } else {
            Err(Error::RectOutOfBounds { op, rect: *self, width, height })
        }
    }
}

impl fmt::Display for Rect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "columns {}..{}, rows {}..{}",
            self.col,
            self.col as u128 + self.width as u128,
            self.row,
            self.row as u128 + self.height as u128
        )
    }
}

/// Bytes of one row of `width` elements of `T`, and of `height` such rows:
/// the checks every pitched extent goes through.
fn extent_bytes<T>(op: &'static str, width: usize, height: usize) -> Result<(usize, usize)> {
    let elem_size = std::mem::size_of::<T>();
    if !PITCHED_ELEMENT_SIZES.contains(&elem_size) {
        return Err(Error::PitchedElementSize { op, elem_size });
    }
    if width == 0 || height == 0 {
        return Err(Error::ZeroExtent { op, width, height });
    }
    let overflow = || Error::ExtentOverflow { op, width, height, elem_size };
    let row = width.checked_mul(elem_size).ok_or_else(overflow)?;
    let total = row.checked_mul(height).filter(|&b| b <= isize::MAX as usize).ok_or_else(overflow)?;
    Ok((row, total))
}

/// A `width × height` matrix of `T` on the device, rows `pitch` bytes
/// apart (see the [module documentation](self)).
pub struct PitchedBuffer<T: DeviceCopy> {
    ptr: u64,
    pitch: usize,
    width: usize,
    height: usize,
    gpu: Gpu,
    track: Tracker,
    _m: PhantomData<T>,
}

impl Gpu {
    /// Allocates a `width × height` pitched matrix without initializing it.
    ///
    /// # Safety
    /// The contents are whatever the allocator returns: they must be
    /// written before being read as `T`.
    pub unsafe fn alloc_pitched_uninit<T: DeviceCopy>(&self, width: usize, height: usize) -> Result<PitchedBuffer<T>> {
        const OP: &str = "alloc_pitched";
        let (row_bytes, data_bytes) = extent_bytes::<T>(OP, width, height)?;
        let out_of_memory = |requested| {
            let (free, total) = self.memory_info().unwrap_or((0, self.info().total_memory));
            Error::OutOfMemory { op: OP, requested, free, total }
        };
        // The data alone (padding comes on top) more than the card has:
        // answered without asking the driver.
        if data_bytes > self.info().total_memory {
            return Err(out_of_memory(data_bytes));
        }
        let max_pitch = self.device_attribute(DeviceAttribute::MaxPitch)?;
        if row_bytes > max_pitch {
            return Err(Error::InvalidArgument {
                op: OP,
                message: format!(
                    "a row of {width} elements is {row_bytes} bytes; this device's largest pitch is {max_pitch} bytes"
                ),
            });
        }
        let align = self.pitch_alignment()?;
        self.bind()?;
        let elem = std::mem::size_of::<T>() as u32;
        let (ptr, pitch) = driver::mem_alloc_pitch(row_bytes, height, elem).map_err(|e| match e.code {
            2 => out_of_memory(data_bytes),
            _ => Error::from(e),
        })?;
        let buf =
            PitchedBuffer { ptr, pitch, width, height, gpu: self.clone(), track: Tracker::default(), _m: PhantomData };
        // The driver's guarantees, checked (the buffer frees itself on error).
        let problem = if pitch < row_bytes {
            Some(format!("is below the row's {row_bytes} bytes"))
        } else if pitch % elem as usize != 0 || pitch % align.max(1) != 0 {
            Some(format!("is not a multiple of the element size {elem} and the pitch alignment {align}"))
        } else if ptr % BASE_ALIGNMENT != 0 {
            Some(format!("comes with a base address {ptr:#x} not {BASE_ALIGNMENT}-byte aligned"))
        } else if pitch.checked_mul(height).is_none_or(|b| b > isize::MAX as usize) {
            Some("times the height overflows".to_string())
        } else {
            None
        };
        match problem {
            None => Ok(buf),
            Some(p) => Err(Error::InvalidArgument { op: OP, message: format!("the driver's pitch {pitch} {p}") }),
        }
    }

    /// Allocates a `width × height` pitched matrix with every byte (padding
    /// included) zero.
    pub fn alloc_pitched_zeroed<T: DeviceCopy + Zeroable>(
        &self,
        width: usize,
        height: usize,
    ) -> Result<PitchedBuffer<T>> {
        // SAFETY: every byte is zeroed before returning; all-zero is a
        // valid `T` (`Zeroable`).
        let mut b = unsafe { self.alloc_pitched_uninit::<T>(width, height)? };
        b.fill_raw(0)?;
        Ok(b)
    }

    /// Allocates a `width × height` pitched matrix holding `host`, whose
    /// rows are contiguous (row `r` is `host[r·width..(r+1)·width]`).
    pub fn upload_pitched<T: DeviceCopy>(&self, host: &[T], width: usize, height: usize) -> Result<PitchedBuffer<T>> {
        // Check the length first so a wrong slice allocates nothing.
        let want = width.saturating_mul(height);
        if host.len() != want {
            return Err(Error::LengthMismatch { op: "upload_pitched", expected: want, got: host.len() });
        }
        // SAFETY: every element is written from valid host values; the
        // padding is never read as `T`.
        let mut b = unsafe { self.alloc_pitched_uninit::<T>(width, height)? };
        b.copy_from_host(host)?;
        Ok(b)
    }

    /// The device's pitch alignment for 2D textures, bytes
    /// (`CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT`): every pitch
    /// [`PitchedBuffer`] returns is a multiple of it.
    pub fn pitch_alignment(&self) -> Result<usize> {
        self.device_attribute(DeviceAttribute::TexturePitchAlignment)
    }

    /// The largest pitch `cuMemcpy2D` and `cuMemAllocPitch` accept, bytes
    /// (`CU_DEVICE_ATTRIBUTE_MAX_PITCH`).
    pub fn max_pitch(&self) -> Result<usize> {
        self.device_attribute(DeviceAttribute::MaxPitch)
    }

    fn device_attribute(&self, a: DeviceAttribute) -> Result<usize> {
        let dev = Device::get_device(self.info().ordinal).map_err(|e| driver::from_cust("cuDeviceGet", e))?;
        let v = dev.get_attribute(a).map_err(|e| driver::from_cust("cuDeviceGetAttribute", e))?;
        Ok(v.max(0) as usize)
    }
}

/// One side of a 2D copy.
#[derive(Clone, Copy)]
enum Side {
    Host { ptr: *mut c_void, pitch: usize },
    Device { ptr: u64, pitch: usize },
}

/// Queues and completes a copy of `rows` rows of `row_bytes` bytes from
/// `(src_x_bytes, src_y)` of `src` to `(dst_x_bytes, dst_y)` of `dst`.
///
/// A device side whose pitch did not come from `cuMemAllocPitch` (a linear
/// buffer's rows) goes through `cuMemcpy2DUnaligned`: device to device,
/// `cuMemcpy2D` is only guaranteed for the allocator's pitches.
///
/// # Safety
/// Every row of both sides lies in live memory (host memory writable where
/// it is the destination); the ranges do not overlap.
unsafe fn copy_2d(
    gpu: &Gpu,
    src: (Side, usize, usize),
    dst: (Side, usize, usize),
    row_bytes: usize,
    rows: usize,
    any_pitch: bool,
) -> Result<()> {
    let (s, sx, sy) = src;
    let (d, dx, dy) = dst;
    let (src_memory_type, src_host, src_device, src_pitch) = match s {
        Side::Host { ptr, pitch } => (driver::MEMORYTYPE_HOST, ptr as *const c_void, 0, pitch),
        Side::Device { ptr, pitch } => (driver::MEMORYTYPE_DEVICE, std::ptr::null(), ptr, pitch),
    };
    let (dst_memory_type, dst_host, dst_device, dst_pitch) = match d {
        Side::Host { ptr, pitch } => (driver::MEMORYTYPE_HOST, ptr, 0, pitch),
        Side::Device { ptr, pitch } => (driver::MEMORYTYPE_DEVICE, std::ptr::null_mut(), ptr, pitch),
    };
    let copy = Memcpy2D {
        src_x_in_bytes: sx,
        src_y: sy,
        src_memory_type,
        src_host,
        src_device,
        src_array: std::ptr::null_mut(),
        src_pitch,
        dst_x_in_bytes: dx,
        dst_y: dy,
        dst_memory_type,
        dst_host,
        dst_device,
        dst_array: std::ptr::null_mut(),
        dst_pitch,
        width_in_bytes: row_bytes,
        height: rows,
    };
    gpu.bind()?;
    if any_pitch {
        // Everything queued on the handle's stream first: the unaligned
        // copy runs outside it.
        gpu.synchronize()?;
        // SAFETY: forwarded to the caller's contract; it returns after the
        // copy has completed (context synchronized).
        unsafe { driver::memcpy_2d_unaligned(&copy)? };
        return Ok(());
    }
    // SAFETY: forwarded to the caller's contract; the host memory stays
    // borrowed until the synchronize below returns.
    unsafe { driver::memcpy_2d(&copy, gpu.raw_stream())? };
    gpu.synchronize()
}

impl<T: DeviceCopy> PitchedBuffer<T> {
    const ELEM: usize = std::mem::size_of::<T>();

    /// Width, elements (columns).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height, rows.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Bytes from one row's start to the next (≥ [`row_bytes`](Self::row_bytes)).
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// Bytes of data in one row: `width · size_of::<T>()`.
    pub fn row_bytes(&self) -> usize {
        self.width * Self::ELEM
    }

    /// Elements of data: `width · height`.
    pub fn len(&self) -> usize {
        self.width * self.height
    }

    /// Always false: a pitched buffer has at least one element.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Bytes allocated: `pitch · height`.
    pub fn allocated_bytes(&self) -> usize {
        self.pitch * self.height
    }

    /// Padding bytes: `(pitch − row_bytes) · height`.
    pub fn padding_bytes(&self) -> usize {
        (self.pitch - self.row_bytes()) * self.height
    }

    /// Padding as a fraction of the data bytes (the lesson's 0.6%).
    pub fn overhead(&self) -> f64 {
        self.padding_bytes() as f64 / (self.row_bytes() * self.height) as f64
    }

    /// Largest power of two dividing the pitch (capped at 4096): every row
    /// starts this well aligned, given the 256-byte-aligned base.
    pub fn row_alignment(&self) -> usize {
        1usize << self.pitch.trailing_zeros().min(12)
    }

    /// Device address of element `(0, 0)`.
    pub fn device_ptr(&self) -> DevicePtr {
        DevicePtr(self.ptr)
    }

    /// The handle this buffer belongs to.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    fn device_side(&self) -> Side {
        Side::Device { ptr: self.ptr, pitch: self.pitch }
    }

    /// Checks that the matrix belongs to `gpu`'s context and orders a read
    /// of it on `gpu`'s stream after its writes on other streams (see
    /// [`crate::stream`]).
    pub(crate) fn check_gpu(&self, gpu: &Gpu, op: &'static str) -> Result<()> {
        if gpu.raw_context() != self.gpu.raw_context() {
            return Err(Error::ForeignBuffer { op });
        }
        self.track.read(gpu, self.bytes())
    }

    /// As [`PitchedBuffer::check_gpu`], for a write of the matrix.
    pub(crate) fn check_gpu_mut(&mut self, gpu: &Gpu, op: &'static str) -> Result<()> {
        if gpu.raw_context() != self.gpu.raw_context() {
            return Err(Error::ForeignBuffer { op });
        }
        self.track.write(gpu, self.bytes())
    }

    /// Its uses across streams and the range they are tracked under (for
    /// a texture reading it).
    pub(crate) fn tracker(&self) -> (&Tracker, std::ops::Range<u64>) {
        (&self.track, self.bytes())
    }

    /// The allocation, as device addresses.
    fn bytes(&self) -> std::ops::Range<u64> {
        self.ptr..self.ptr + self.allocated_bytes() as u64
    }

    fn same_extent(&self, op: &'static str, width: usize, height: usize) -> Result<()> {
        if (width, height) == (self.width, self.height) {
            Ok(())
        } else {
            Err(Error::ExtentMismatch { op, expected: (self.width, self.height), got: (width, height) })
        }
    }

    /// Overwrites the matrix with `host` (contiguous rows, `width · height`
    /// elements).
    pub fn copy_from_host(&mut self, host: &[T]) -> Result<()> {
        self.copy_rect_from_host(Rect::full(self.width, self.height), host)
    }

    /// Copies the matrix into `out` (contiguous rows, `width · height`
    /// elements; the padding is left out).
    pub fn copy_to_host(&self, out: &mut [T]) -> Result<()> {
        self.copy_rect_to_host(Rect::full(self.width, self.height), out)
    }

    /// The matrix as contiguous rows.
    pub fn to_vec(&self) -> Result<Vec<T>>
    where
        T: Zeroable,
    {
        self.rect_to_vec(Rect::full(self.width, self.height))
    }

    /// Overwrites the sub-rectangle `rect` with `host` (contiguous rows of
    /// `rect.width`, `rect.width · rect.height` elements). Nothing outside
    /// `rect` is written.
    pub fn copy_rect_from_host(&mut self, rect: Rect, host: &[T]) -> Result<()> {
        const OP: &str = "copy_rect_from_host";
        rect.check_inside(OP, self.width, self.height)?;
        if host.len() != rect.len() {
            return Err(Error::LengthMismatch { op: OP, expected: rect.len(), got: host.len() });
        }
        let row = rect.width * Self::ELEM;
        self.check_gpu_mut(&self.gpu.clone(), OP)?;
        let src = Side::Host { ptr: host.as_ptr().cast_mut().cast(), pitch: row };
        // SAFETY: the rectangle lies inside this live allocation (checked);
        // the host slice holds exactly `rect.height` rows of `row` bytes and
        // is only read.
        unsafe {
            copy_2d(
                &self.gpu,
                (src, 0, 0),
                (self.device_side(), rect.col * Self::ELEM, rect.row),
                row,
                rect.height,
                false,
            )
        }
    }

    /// Copies the sub-rectangle `rect` into `out` (contiguous rows of
    /// `rect.width`).
    pub fn copy_rect_to_host(&self, rect: Rect, out: &mut [T]) -> Result<()> {
        const OP: &str = "copy_rect_to_host";
        rect.check_inside(OP, self.width, self.height)?;
        if out.len() != rect.len() {
            return Err(Error::LengthMismatch { op: OP, expected: rect.len(), got: out.len() });
        }
        let row = rect.width * Self::ELEM;
        self.check_gpu(&self.gpu, OP)?;
        let dst = Side::Host { ptr: out.as_mut_ptr().cast(), pitch: row };
        // SAFETY: the rectangle lies inside this live allocation (checked);
        // `out` holds exactly `rect.height` rows of `row` bytes, borrowed
        // mutably until the copy has completed.
        unsafe {
            copy_2d(
                &self.gpu,
                (self.device_side(), rect.col * Self::ELEM, rect.row),
                (dst, 0, 0),
                row,
                rect.height,
                false,
            )
        }
    }

    /// The sub-rectangle `rect` as contiguous rows.
    pub fn rect_to_vec(&self, rect: Rect) -> Result<Vec<T>>
    where
        T: Zeroable,
    {
        rect.check_inside("rect_to_vec", self.width, self.height)?;
        let mut v = vec![T::zeroed(); rect.len()];
        self.copy_rect_to_host(rect, &mut v)?;
        Ok(v)
    }

    /// Device → device: overwrites this matrix with `src` (same width and
    /// height; the pitches may differ).
    pub fn copy_from(&mut self, src: &PitchedBuffer<T>) -> Result<()> {
        self.same_extent("copy_from", src.width, src.height)?;
        self.copy_rect_from(0, 0, src, Rect::full(src.width, src.height))
    }

    /// Device → device: copies the sub-rectangle `src_rect` of `src` into
    /// this matrix with its top-left element at column `col`, row `row`.
    /// Both rectangles must lie inside their buffers.
    pub fn copy_rect_from(&mut self, col: usize, row: usize, src: &PitchedBuffer<T>, src_rect: Rect) -> Result<()> {
        const OP: &str = "copy_rect_from";
        src_rect.check_inside(OP, src.width, src.height)?;
        Rect::new(col, row, src_rect.width, src_rect.height).check_inside(OP, self.width, self.height)?;
        src.check_gpu(&self.gpu, OP)?;
        self.check_gpu_mut(&self.gpu.clone(), OP)?;
        let bytes = src_rect.width * Self::ELEM;
        // SAFETY: both rectangles lie inside live allocations of this
        // context (checked); they are different buffers (one is borrowed
        // mutably), so they cannot overlap.
        unsafe {
            copy_2d(
                &self.gpu,
                (src.device_side(), src_rect.col * Self::ELEM, src_rect.row),
                (self.device_side(), col * Self::ELEM, row),
                bytes,
                src_rect.height,
                false,
            )
        }
    }

    /// Device → device: overwrites this matrix with a linear device range
    /// holding `width · height` elements as contiguous rows.
    pub fn copy_from_linear(&mut self, src: &DeviceView<'_, T>) -> Result<()> {
        const OP: &str = "copy_from_linear";
        src.check_gpu(&self.gpu, OP)?;
        if src.len() != self.len() {
            return Err(Error::LengthMismatch { op: OP, expected: self.len(), got: src.len() });
        }
        let row = self.row_bytes();
        self.check_gpu_mut(&self.gpu.clone(), OP)?;
        let s = Side::Device { ptr: src.device_ptr().0, pitch: row };
        // SAFETY: the view spans `height` rows of `row` bytes of a live
        // allocation of this context; this buffer is another allocation.
        unsafe { copy_2d(&self.gpu, (s, 0, 0), (self.device_side(), 0, 0), row, self.height, true) }
    }

    /// Device → device: writes the matrix as contiguous rows into a linear
    /// device range of `width · height` elements.
    pub fn copy_to_linear(&self, dst: &mut DeviceViewMut<'_, T>) -> Result<()> {
        const OP: &str = "copy_to_linear";
        dst.check_gpu(&self.gpu, OP)?;
        if dst.len() != self.len() {
            return Err(Error::LengthMismatch { op: OP, expected: self.len(), got: dst.len() });
        }
        let row = self.row_bytes();
        self.check_gpu(&self.gpu, OP)?;
        let d = Side::Device { ptr: dst.device_ptr().0, pitch: row };
        // SAFETY: as in `copy_from_linear`, directions swapped.
        unsafe { copy_2d(&self.gpu, (self.device_side(), 0, 0), (d, 0, 0), row, self.height, true) }
    }

    /// Sets every allocated byte, padding included, to `byte` (a poison
    /// pattern before a kernel that must overwrite every element).
    pub fn fill_bytes(&mut self, byte: u8) -> Result<()>
    where
        T: Pod,
    {
        self.fill_raw(byte)
    }

    fn fill_raw(&mut self, byte: u8) -> Result<()> {
        self.check_gpu_mut(&self.gpu.clone(), "fill_bytes")?;
        self.gpu.bind()?;
        // SAFETY: the range is exactly this live allocation.
        unsafe { driver::memset_d8(self.ptr, byte, self.allocated_bytes(), self.gpu.raw_stream())? };
        self.gpu.synchronize()
    }

    /// Every allocated byte, padding included, row after row (`pitch ·
    /// height` bytes): for checking that nothing wrote into the padding.
    pub fn raw_bytes(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.allocated_bytes()];
        self.check_gpu(&self.gpu, "raw_bytes")?;
        self.gpu.bind()?;
        // SAFETY: `v` spans exactly the allocation and outlives the
        // synchronize below.
        unsafe { driver::memcpy_dtoh(v.as_mut_ptr().cast(), self.ptr, v.len(), self.gpu.raw_stream())? };
        self.gpu.synchronize()?;
        Ok(v)
    }
}

impl<T: DeviceCopy> Drop for PitchedBuffer<T> {
    fn drop(&mut self) {
        // cuMemFree needs the context current and no stream still using
        // the memory (after a fault both calls fail harmlessly).
        if self.gpu.ctx().enter() {
            self.track.quiesce();
            // SAFETY: the address came from cuMemAllocPitch in this context
            // and is freed once.
            let _ = unsafe { driver::mem_free(self.ptr) };
        }
    }
}

impl<T: DeviceCopy> fmt::Debug for PitchedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PitchedBuffer<{}>[{} x {}, pitch {} B] @ {:#x}",
            std::any::type_name::<T>(),
            self.width,
            self.height,
            self.pitch,
            self.ptr
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_sizes_are_checked_before_anything_else() {
        for (size, r) in [
            (1, extent_bytes::<u8>("t", 4, 4)),
            (2, extent_bytes::<u16>("t", 4, 4)),
            (12, extent_bytes::<[f32; 3]>("t", 4, 4)),
            (32, extent_bytes::<[u64; 4]>("t", 4, 4)),
        ] {
            assert!(matches!(r, Err(Error::PitchedElementSize { elem_size, .. }) if elem_size == size), "{size}");
        }
        assert_eq!(extent_bytes::<f32>("t", 10_000, 10_000).unwrap(), (40_000, 400_000_000));
        assert_eq!(extent_bytes::<f64>("t", 3, 2).unwrap(), (24, 48));
        assert_eq!(extent_bytes::<[u32; 4]>("t", 1, 1).unwrap(), (16, 16));
    }

    #[test]
    fn zero_and_overflowing_extents() {
        for (w, h) in [(0, 5), (5, 0), (0, 0)] {
            let e = extent_bytes::<f32>("alloc_pitched", w, h).unwrap_err();
            assert!(matches!(e, Error::ZeroExtent { width, height, .. } if (width, height) == (w, h)), "{e}");
        }
        let e = extent_bytes::<f32>("alloc_pitched", usize::MAX / 2, 1).unwrap_err();
        assert!(matches!(e, Error::ExtentOverflow { elem_size: 4, .. }), "{e}");
        let e = extent_bytes::<f32>("alloc_pitched", 1 << 32, 1 << 32).unwrap_err();
        assert!(matches!(e, Error::ExtentOverflow { .. }), "{e}");
        assert!(e.to_string().contains("4294967296 x 4294967296 elements of 4 bytes"), "{e}");
    }

    #[test]
    fn rectangles() {
        let ok = Rect::new(3, 2, 5, 4);
        assert_eq!(ok.check_inside("t", 8, 6).ok(), Some(()));
        assert_eq!(ok.len(), 20);
        for bad in [Rect::new(4, 2, 5, 4), Rect::new(3, 3, 5, 4), Rect::new(usize::MAX, 0, 2, 1)] {
            let e = bad.check_inside("copy", 8, 6).unwrap_err();
            assert!(matches!(e, Error::RectOutOfBounds { rect, width: 8, height: 6, .. } if rect == bad), "{e}");
        }
        let e = Rect::new(0, 0, 0, 3).check_inside("copy", 8, 6).unwrap_err();
        assert!(matches!(e, Error::ZeroExtent { .. }), "{e}");
        let e = Rect::new(4, 2, 5, 4).check_inside("copy", 8, 6).unwrap_err();
        assert_eq!(
            e.to_string(),
            "copy: rectangle columns 4..9, rows 2..6 does not lie inside the 8 x 6 buffer (width x height, elements)"
        );
        assert_eq!(Rect::full(7, 9), Rect::new(0, 0, 7, 9));
    }
}
