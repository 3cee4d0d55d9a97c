//! Device memory: typed buffers owned by a [`Gpu`], and borrowed views of
//! sub-ranges of them (the `d_in + offset` of the lessons, without raw
//! pointer arithmetic).
//!
//! A `DeviceBuffer<T>` always holds valid `T`s: it is created from host
//! values, zero-filled (`T: Zeroable`), or byte-filled (`T: Pod`, any bit
//! pattern valid), so reading it back is always sound. Host transfers run
//! on the stream of the handle the buffer was made from and complete
//! before the call returns (the host memory may be touched again at once);
//! kernels run on the stream of the handle that launches them. A buffer
//! used on several streams is ordered between them automatically
//! ([`crate::stream`]).

use std::marker::PhantomData;
use std::ops::Range;

use bytemuck::{Pod, Zeroable};
use cust::memory::DeviceCopy;

use crate::driver;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::DevicePtr;
use crate::stream::Tracker;

/// `len` elements of `T` on the device.
pub struct DeviceBuffer<T: DeviceCopy> {
    // `None` only for zero-length or zero-sized buffers.
    buf: Option<cust::memory::DeviceBuffer<T>>,
    len: usize,
    gpu: Gpu,
    track: Tracker,
}

pub(crate) fn byte_size<T>(op: &'static str, count: usize) -> Result<usize> {
    count.checked_mul(std::mem::size_of::<T>()).filter(|&b| b <= isize::MAX as usize).ok_or(Error::SizeOverflow {
        op,
        count,
        elem_size: std::mem::size_of::<T>(),
    })
}

impl Gpu {
    /// Allocates `len` elements without initializing them.
    ///
    /// # Safety
    /// The contents are whatever the allocator returns: they must be written
    /// (by a kernel, a fill or a copy) before being read as `T`.
    pub unsafe fn alloc_uninit<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = byte_size::<T>("alloc", len)?;
        self.bind()?;
        let out_of_memory = || {
            let (free, total) = self.memory_info().unwrap_or((0, self.info().total_memory));
            Error::OutOfMemory { op: "alloc", requested: bytes, free, total }
        };
        // More than the whole card can never succeed: say so without asking
        // the driver.
        if bytes > self.info().total_memory {
            return Err(out_of_memory());
        }
        let buf = if bytes == 0 {
            None
        } else {
            // SAFETY: forwarded to the caller's contract.
            let b = unsafe { cust::memory::DeviceBuffer::uninitialized(len) };
            Some(b.map_err(|e| match driver::from_cust("cuMemAlloc", e) {
                d if d.code == 2 => out_of_memory(),
                d => Error::from(d),
            })?)
        };
        Ok(DeviceBuffer { buf, len, gpu: self.clone(), track: Tracker::default() })
    }

    /// Allocates `len` zeroed elements.
    pub fn alloc_zeroed<T: DeviceCopy + Zeroable>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: every byte is set to zero before the buffer is returned,
        // and all-zero is a valid `T` (`Zeroable`).
        let mut b = unsafe { self.alloc_uninit::<T>(len)? };
        b.fill_raw(0)?;
        Ok(b)
    }

    /// Allocates a buffer holding a copy of `values`.
    pub fn upload<T: DeviceCopy>(&self, values: &[T]) -> Result<DeviceBuffer<T>> {
        // SAFETY: fully written from valid host values before returning.
        let mut b = unsafe { self.alloc_uninit::<T>(values.len())? };
        b.copy_from_host(values)?;
        Ok(b)
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn byte_len(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The handle this buffer belongs to.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Device address of the first element (0 for an empty buffer).
    pub fn device_ptr(&self) -> DevicePtr {
        DevicePtr(self.buf.as_ref().map_or(0, |b| b.as_device_ptr().as_raw()))
    }

    /// The whole buffer as a read-only view.
    pub fn as_view(&self) -> DeviceView<'_, T> {
        self.view(0..self.len).expect("the full range is always in bounds")
    }

    /// The whole buffer as a writable view.
    pub fn as_view_mut(&mut self) -> DeviceViewMut<'_, T> {
        let len = self.len;
        self.view_mut(0..len).expect("the full range is always in bounds")
    }

    /// Elements `range` as a read-only view (any start: a view can be
    /// misaligned for vector access; the copy kernels handle that).
    pub fn view(&self, range: Range<usize>) -> Result<DeviceView<'_, T>> {
        let raw = self.sub_range("view", range)?;
        Ok(DeviceView { raw, _m: PhantomData })
    }

    /// Elements `range` as a writable view.
    pub fn view_mut(&mut self, range: Range<usize>) -> Result<DeviceViewMut<'_, T>> {
        let raw = self.sub_range("view_mut", range)?;
        Ok(DeviceViewMut { raw, _m: PhantomData })
    }

    fn sub_range(&self, op: &'static str, range: Range<usize>) -> Result<RawView<'_>> {
        if range.start > range.end || range.end > self.len {
            return Err(Error::OutOfBounds { op, start: range.start, end: range.end, len: self.len });
        }
        Ok(RawView {
            ptr: self.device_ptr().0 + (range.start * std::mem::size_of::<T>()) as u64,
            len: range.end - range.start,
            gpu: &self.gpu,
            track: &self.track,
        })
    }

    /// Overwrites the whole buffer with `values` (same length).
    pub fn copy_from_host(&mut self, values: &[T]) -> Result<()> {
        self.as_view_mut().copy_from_host(values)
    }

    /// Copies the whole buffer into `out` (same length).
    pub fn copy_to_host(&self, out: &mut [T]) -> Result<()> {
        self.as_view().copy_to_host(out)
    }

    /// The buffer's contents as a `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>>
    where
        T: Zeroable,
    {
        self.as_view().to_vec()
    }

    /// Sets every byte to `byte` (e.g. a poison pattern before a kernel
    /// that must overwrite everything).
    pub fn fill_bytes(&mut self, byte: u8) -> Result<()>
    where
        T: Pod,
    {
        self.fill_raw(byte)
    }

    fn fill_raw(&mut self, byte: u8) -> Result<()> {
        self.as_view_mut().fill_raw(byte)
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        let buf = self.buf.take();
        // cuMemFree needs the context current, and no stream may still use
        // the memory. (After a fault both calls fail harmlessly.)
        if self.gpu.ctx().enter() {
            self.track.quiesce();
            drop(buf);
        } else {
            std::mem::forget(buf);
        }
    }
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}] @ {:#x}", std::any::type_name::<T>(), self.len, self.device_ptr().0)
    }
}

#[derive(Clone, Copy, Debug)]
struct RawView<'a> {
    ptr: u64,
    len: usize,
    gpu: &'a Gpu,
    track: &'a Tracker,
}

impl RawView<'_> {
    /// The viewed bytes, as device addresses.
    fn range<T>(&self) -> std::ops::Range<u64> {
        self.ptr..self.ptr + (self.len * std::mem::size_of::<T>()) as u64
    }
}

/// A read-only range of a [`DeviceBuffer`].
#[derive(Clone, Copy, Debug)]
pub struct DeviceView<'a, T> {
    raw: RawView<'a>,
    _m: PhantomData<&'a T>,
}

/// A writable range of a [`DeviceBuffer`]. Borrowing rules guarantee it
/// overlaps no other live view of the same buffer.
#[derive(Debug)]
pub struct DeviceViewMut<'a, T> {
    raw: RawView<'a>,
    _m: PhantomData<&'a mut T>,
}

macro_rules! view_common {
    ($ty:ident) => {
        impl<T: DeviceCopy> $ty<'_, T> {
            /// Number of elements.
            pub fn len(&self) -> usize {
                self.raw.len
            }

            /// True when the view is empty.
            pub fn is_empty(&self) -> bool {
                self.raw.len == 0
            }

            /// Device address of the first element.
            pub fn device_ptr(&self) -> DevicePtr {
                DevicePtr(self.raw.ptr)
            }

            /// Size in bytes.
            pub fn byte_len(&self) -> usize {
                self.raw.len * std::mem::size_of::<T>()
            }

            /// Checks that the view belongs to `gpu`'s context and orders
            /// the work `gpu` is about to queue on its stream after the
            /// view's buffer's earlier uses on other streams (as a read for
            /// a [`DeviceView`], a write for a [`DeviceViewMut`]).
            pub(crate) fn check_gpu(&self, gpu: &Gpu, op: &'static str) -> Result<()> {
                if self.raw.len == 0 {
                    return Ok(());
                }
                if self.raw.gpu.raw_context() != gpu.raw_context() {
                    return Err(Error::ForeignBuffer { op });
                }
                self.order(gpu)
            }

            /// Copies the viewed elements into `out` (same length), on the
            /// stream of the handle the buffer was made from, and returns
            /// when they have arrived.
            pub fn copy_to_host(&self, out: &mut [T]) -> Result<()> {
                self.copy_to_host_on(self.raw.gpu, out)
            }

            /// [`Self::copy_to_host`] on `gpu`'s stream.
            pub(crate) fn copy_to_host_on(&self, gpu: &Gpu, out: &mut [T]) -> Result<()> {
                if out.len() != self.raw.len {
                    return Err(Error::LengthMismatch { op: "copy_to_host", expected: self.raw.len, got: out.len() });
                }
                if self.byte_len() == 0 {
                    return Ok(());
                }
                if self.raw.gpu.raw_context() != gpu.raw_context() {
                    return Err(Error::ForeignBuffer { op: "copy_to_host" });
                }
                gpu.bind()?;
                self.raw.track.read(gpu, self.raw.range::<T>())?;
                // SAFETY: the view lies in a live allocation (borrowed for
                // 'a); `out` spans the same byte count and outlives the
                // synchronize below.
                unsafe {
                    driver::memcpy_dtoh(out.as_mut_ptr().cast(), self.raw.ptr, self.byte_len(), gpu.raw_stream())?
                };
                gpu.synchronize()
            }

            /// The viewed elements as a `Vec`.
            pub fn to_vec(&self) -> Result<Vec<T>>
            where
                T: Zeroable,
            {
                let mut v = vec![T::zeroed(); self.raw.len];
                self.copy_to_host(&mut v)?;
                Ok(v)
            }
        }
    };
}

view_common!(DeviceView);
view_common!(DeviceViewMut);

impl<T: DeviceCopy> DeviceView<'_, T> {
    fn order(&self, gpu: &Gpu) -> Result<()> {
        self.raw.track.read(gpu, self.raw.range::<T>())
    }
}

impl<'a, T: DeviceCopy + 'static> DeviceView<'a, T> {
    /// This view as a view of `U`, when `U` is `T` (generic code that
    /// hands its data to a path of one concrete type).
    pub(crate) fn as_same<U: DeviceCopy + 'static>(&self) -> Option<DeviceView<'a, U>> {
        (std::any::TypeId::of::<T>() == std::any::TypeId::of::<U>())
            .then_some(DeviceView { raw: self.raw, _m: PhantomData })
    }
}

impl<T: DeviceCopy + 'static> DeviceViewMut<'_, T> {
    /// This view, reborrowed as a view of `U`, when `U` is `T`.
    pub(crate) fn as_same_mut<U: DeviceCopy + 'static>(&mut self) -> Option<DeviceViewMut<'_, U>> {
        (std::any::TypeId::of::<T>() == std::any::TypeId::of::<U>())
            .then_some(DeviceViewMut { raw: self.raw, _m: PhantomData })
    }
}

impl<T: DeviceCopy> DeviceViewMut<'_, T> {
    /// Overwrites the viewed elements with `values` (same length), on the
    /// stream of the handle the buffer was made from; returns when the host
    /// memory may be touched again.
    pub fn copy_from_host(&mut self, values: &[T]) -> Result<()> {
        self.copy_from_host_on(self.raw.gpu, values)
    }

    /// [`Self::copy_from_host`] on `gpu`'s stream.
    pub(crate) fn copy_from_host_on(&mut self, gpu: &Gpu, values: &[T]) -> Result<()> {
        if values.len() != self.raw.len {
            return Err(Error::LengthMismatch { op: "copy_from_host", expected: self.raw.len, got: values.len() });
        }
        if self.byte_len() == 0 {
            return Ok(());
        }
        if self.raw.gpu.raw_context() != gpu.raw_context() {
            return Err(Error::ForeignBuffer { op: "copy_from_host" });
        }
        gpu.bind()?;
        self.raw.track.write(gpu, self.raw.range::<T>())?;
        // SAFETY: the view lies in a live allocation borrowed mutably; the
        // host slice is read before the synchronize below returns.
        unsafe { driver::memcpy_htod(self.raw.ptr, values.as_ptr().cast(), self.byte_len(), gpu.raw_stream())? };
        gpu.synchronize()
    }

    fn order(&self, gpu: &Gpu) -> Result<()> {
        self.raw.track.write(gpu, self.raw.range::<T>())
    }

    /// A read-only view of the same range.
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView { raw: self.raw, _m: PhantomData }
    }

    /// Sets every byte of the viewed range to `byte` (a poison pattern
    /// before a kernel that must overwrite it all).
    pub fn fill_bytes(&mut self, byte: u8) -> Result<()>
    where
        T: Pod,
    {
        self.fill_raw(byte)
    }

    /// [`DeviceViewMut::fill_bytes`] for any `T` (the caller keeps the
    /// buffer's values valid).
    fn fill_raw(&mut self, byte: u8) -> Result<()> {
        let bytes = self.byte_len();
        if bytes == 0 {
            return Ok(());
        }
        let gpu = self.raw.gpu;
        gpu.bind()?;
        self.raw.track.write(gpu, self.raw.range::<T>())?;
        // SAFETY: the range lies in a live allocation borrowed mutably.
        unsafe { driver::memset_d8(self.raw.ptr, byte, bytes, gpu.raw_stream())? };
        gpu.synchronize()
    }
}
