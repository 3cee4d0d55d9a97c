//! Host <-> device transfers (lesson 004, section 5.3.1 of the CUDA
//! programming guide): page-locked and mapped host memory, synchronous and
//! stream-ordered copies, streams and timing events, zero-copy kernels, and
//! a chunked copy → kernel → copy pipeline over several streams.
//!
//! The lesson's advice, and what this module gives for each point:
//!
//! * **Use page-locked (pinned) host memory.** A copy from ordinary
//!   (pageable) memory goes through a staging buffer the driver copies into
//!   first; page-locked memory is read by the copy engine directly (DMA).
//!   [`PinnedBuffer`] is page-locked memory allocated by the driver
//!   (`cuMemHostAlloc`), with the allocation flags explicit
//!   ([`HostAllocFlags`]). [`Gpu::htod`] and [`Gpu::dtoh`] copy any host
//!   slice; given a pinned one, the driver recognizes it and skips the
//!   staging ([`PinnedBuffer::copy_to_device`] is the same path).
//! * **Batch small transfers.** Each transfer has a fixed cost; the
//!   `transfer` benchmark measures it.
//! * **Mapped memory needs no copy.** [`MappedBuffer`] is page-locked memory
//!   mapped into the device's address space (`CU_MEMHOSTALLOC_DEVICEMAP`);
//!   a kernel reads or writes it directly, every access crossing the host
//!   link ([`Gpu::zero_copy_to_device`], [`Gpu::zero_copy_from_device`]).
//!   It pays off when the accesses are coalesced and each byte is touched
//!   once.
//! * **Overlap transfers with computation.** [`Stream`]s run
//!   independently; [`Gpu::pipeline`] splits its input into chunks and
//!   queues copy in → kernel → copy out for each chunk on the streams in
//!   turn, so one chunk's copy overlaps another's kernel, and records
//!   [`Event`]s at every stage boundary.
//!
//! Every copy checks lengths (and that buffers belong to the handle's
//! context) before the driver is called; mismatches are
//! [`Error::LengthMismatch`] / [`Error::ForeignBuffer`]. Synchronous
//! operations return when the data has arrived. The stream-ordered copies
//! return at once and are `unsafe`: the host memory must stay untouched
//! until the stream has been synchronized, which the borrow checker cannot
//! see; [`Gpu::pipeline`] wraps them safely.

use std::ffi::c_void;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use bytemuck::Pod;
use cust::memory::DeviceCopy;

use coalesce_kernels::transfer::scale_add_step;

use crate::copy::{CopyPlan, CopyPolicy, CopyVariant, Width};
use crate::driver;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{DevicePtr, LaunchConfig, blocks_for};
use crate::memory::{DeviceBuffer, DeviceView, DeviceViewMut, byte_size};
use crate::stream::{Event, Stream};

/// How page-locked host memory is allocated (the `CU_MEMHOSTALLOC_*`
/// flags of `cuMemHostAlloc`). All off is plain page-locked memory for the
/// allocating context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HostAllocFlags {
    /// Page-locked for every CUDA context, not only the allocating one
    /// (`CU_MEMHOSTALLOC_PORTABLE`).
    pub portable: bool,
    /// Mapped into the device's address space, so kernels can access it
    /// directly (`CU_MEMHOSTALLOC_DEVICEMAP`). [`MappedBuffer`] always sets
    /// it.
    pub device_map: bool,
    /// Write-combined (`CU_MEMHOSTALLOC_WRITECOMBINED`): faster for the host
    /// to write and the device to read over the link, but host *reads* of
    /// it are uncached and very slow.
    pub write_combined: bool,
}

impl HostAllocFlags {
    /// Plain page-locked memory (no flag).
    pub const DEFAULT: HostAllocFlags = HostAllocFlags { portable: false, device_map: false, write_combined: false };

    /// Mapped page-locked memory (`CU_MEMHOSTALLOC_DEVICEMAP`).
    pub const MAPPED: HostAllocFlags = HostAllocFlags { portable: false, device_map: true, write_combined: false };

    /// The driver's flag word.
    pub fn bits(self) -> u32 {
        let mut f = 0;
        if self.portable {
            f |= driver::MEMHOSTALLOC_PORTABLE;
        }
        if self.device_map {
            f |= driver::MEMHOSTALLOC_DEVICEMAP;
        }
        if self.write_combined {
            f |= driver::MEMHOSTALLOC_WRITECOMBINED;
        }
        f
    }
}

/// `len` elements of `T` in page-locked host memory allocated by the CUDA
/// driver (`cuMemHostAlloc`), freed (`cuMemFreeHost`) on drop.
///
/// It dereferences to `[T]`, so it is filled and read like a `Vec`. It is
/// zero-filled on allocation, and `T: Pod` (every bit pattern a valid `T`),
/// so whatever a device copy writes into it is a valid value.
///
/// It keeps its [`Gpu`] (and so the context whose allocation it is) alive.
///
/// Send and Sync: the memory is ordinary process memory that any thread may
/// read and write; the buffer owns it exclusively, exactly as a `Vec<T>`
/// owns its heap block, so it is `Send` when `T` is and `Sync` when `T` is.
/// Dropping it on another thread is fine: the drop makes the owning context
/// current there before freeing.
pub struct PinnedBuffer<T: Pod> {
    // Dangling (never dereferenced for more than 0 bytes) when nothing was
    // allocated: a zero-length buffer or a zero-sized `T`.
    ptr: NonNull<T>,
    len: usize,
    allocated: bool,
    flags: HostAllocFlags,
    gpu: Gpu,
}

// SAFETY: see the type's documentation: exclusive ownership of plain
// memory, like `Vec<T>`; `Gpu` is Send + Sync.
unsafe impl<T: Pod + Send> Send for PinnedBuffer<T> {}
// SAFETY: shared access only hands out `&[T]`.
unsafe impl<T: Pod + Sync> Sync for PinnedBuffer<T> {}

impl Gpu {
    /// `len` zeroed elements of plain page-locked host memory.
    pub fn alloc_pinned<T: Pod>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        self.alloc_pinned_with(len, HostAllocFlags::DEFAULT)
    }

    /// `len` zeroed elements of page-locked host memory allocated with
    /// `flags`.
    pub fn alloc_pinned_with<T: Pod>(&self, len: usize, flags: HostAllocFlags) -> Result<PinnedBuffer<T>> {
        let bytes = byte_size::<T>("alloc_pinned", len)?;
        if bytes == 0 {
            return Ok(PinnedBuffer { ptr: NonNull::dangling(), len, allocated: false, flags, gpu: self.clone() });
        }
        self.bind()?;
        let raw = driver::mem_host_alloc(bytes, flags.bits())?;
        let ptr = NonNull::new(raw.cast::<T>()).ok_or_else(|| Error::from(driver::error("cuMemHostAlloc", 2)))?;
        let buf = PinnedBuffer { ptr, len, allocated: true, flags, gpu: self.clone() };
        if !(raw as usize).is_multiple_of(std::mem::align_of::<T>()) {
            // Never seen (the driver returns page-aligned memory); `buf`
            // frees it on the way out.
            return Err(Error::InvalidArgument {
                op: "alloc_pinned",
                message: format!("the driver returned {raw:p}, not aligned for {}", std::any::type_name::<T>()),
            });
        }
        // SAFETY: `raw` points to `bytes` writable bytes we own; all-zero
        // bytes are a valid `T` (`Pod`).
        unsafe { std::ptr::write_bytes(raw.cast::<u8>(), 0, bytes) };
        Ok(buf)
    }

    /// Plain page-locked host memory holding a copy of `values`.
    pub fn pinned_from_slice<T: Pod>(&self, values: &[T]) -> Result<PinnedBuffer<T>> {
        let mut b = self.alloc_pinned(values.len())?;
        b.copy_from_slice(values);
        Ok(b)
    }
}

impl<T: Pod> PinnedBuffer<T> {
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

    /// The flags it was allocated with.
    pub fn flags(&self) -> HostAllocFlags {
        self.flags
    }

    /// The handle whose context allocated it.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` is valid and aligned for `len` initialized elements
        // (or dangling with zero bytes to read); shared borrow of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The elements, writable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, with an exclusive borrow of `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The pinned path, host to device: copies the whole buffer into `dst`
    /// (same length) and returns when the data is on the device. The same
    /// call as [`Gpu::htod`]; here the source is known to be page-locked.
    pub fn copy_to_device(&self, dst: &mut DeviceViewMut<'_, T>) -> Result<()>
    where
        T: DeviceCopy,
    {
        self.gpu.htod(self.as_slice(), dst)
    }

    /// The pinned path, device to host: copies `src` (same length) into the
    /// whole buffer and returns when the data has arrived.
    pub fn copy_from_device(&mut self, src: &DeviceView<'_, T>) -> Result<()>
    where
        T: DeviceCopy,
    {
        let gpu = self.gpu.clone();
        gpu.dtoh(src, self.as_mut_slice())
    }

    fn same_context(&self, gpu: &Gpu, op: &'static str) -> Result<()> {
        if self.len == 0 || self.gpu.raw_context() == gpu.raw_context() {
            Ok(())
        } else {
            Err(Error::ForeignBuffer { op })
        }
    }
}

impl<T: Pod> Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Pod> DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: Pod> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        if !self.allocated {
            return;
        }
        if self.gpu.ctx().enter() {
            // SAFETY: allocated by `mem_host_alloc`, freed once, here; no
            // borrow of it outlives `self`, and every operation of this
            // module that queues device work on it waits for that work
            // before returning (the unsafe stream copies make it the
            // caller's duty).
            let _ = unsafe { driver::mem_free_host(self.ptr.as_ptr().cast::<c_void>()) };
        }
    }
}

impl<T: Pod> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedBuffer<{}>[{}] {:?} @ {:p}", std::any::type_name::<T>(), self.len, self.flags, self.ptr)
    }
}

/// Mapped page-locked host memory: a [`PinnedBuffer`] allocated with
/// `CU_MEMHOSTALLOC_DEVICEMAP`, and the address at which kernels see it
/// (`cuMemHostGetDevicePointer`). Kernels read and write it directly;
/// every access crosses the host link ("zero-copy").
///
/// Send and Sync as [`PinnedBuffer`]; the device address is a plain number,
/// valid in the owning context for as long as the buffer lives.
pub struct MappedBuffer<T: Pod> {
    host: PinnedBuffer<T>,
    device: u64,
}

impl Gpu {
    /// `len` zeroed elements of mapped page-locked host memory.
    pub fn alloc_mapped<T: Pod>(&self, len: usize) -> Result<MappedBuffer<T>> {
        let host = self.alloc_pinned_with::<T>(len, HostAllocFlags::MAPPED)?;
        let device = if host.allocated {
            self.bind()?;
            // SAFETY: the pointer starts an allocation made with DEVICEMAP.
            unsafe { driver::mem_host_device_pointer(host.ptr.as_ptr().cast::<c_void>())? }
        } else {
            0
        };
        Ok(MappedBuffer { host, device })
    }

    /// Mapped page-locked host memory holding a copy of `values`.
    pub fn mapped_from_slice<T: Pod>(&self, values: &[T]) -> Result<MappedBuffer<T>> {
        let mut b = self.alloc_mapped(values.len())?;
        b.copy_from_slice(values);
        Ok(b)
    }
}

impl<T: Pod> MappedBuffer<T> {
    /// The address kernels use for the first element (0 when empty).
    pub fn device_ptr(&self) -> DevicePtr {
        DevicePtr(self.device)
    }

    /// The host side, as a page-locked buffer.
    pub fn host(&self) -> &PinnedBuffer<T> {
        &self.host
    }
}

impl<T: Pod> Deref for MappedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.host.as_slice()
    }
}

impl<T: Pod> DerefMut for MappedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.host.as_mut_slice()
    }
}

impl<T: Pod> std::fmt::Debug for MappedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedBuffer({:?}, device {:#x})", self.host, self.device)
    }
}

impl Gpu {
    /// Host to device, synchronous, on this handle's stream: copies `src`
    /// (pageable or page-locked host memory; same length as `dst`) and
    /// returns when it is on the device. Pageable memory is staged by the
    /// driver; page-locked memory is read directly by the copy engine.
    pub fn htod<T: DeviceCopy>(&self, src: &[T], dst: &mut DeviceViewMut<'_, T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { op: "htod", expected: dst.len(), got: src.len() });
        }
        dst.copy_from_host_on(self, src)
    }

    /// Device to host, synchronous, on this handle's stream: copies `src`
    /// into `dst` (same length) and returns when it has arrived.
    pub fn dtoh<T: DeviceCopy>(&self, src: &DeviceView<'_, T>, dst: &mut [T]) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { op: "dtoh", expected: dst.len(), got: src.len() });
        }
        src.copy_to_host_on(self, dst)
    }

    /// Host to device without a copy: the `zero_copy_read` kernel reads
    /// `src`'s mapped host memory over the link and writes `dst` (same
    /// length). Waits for the kernel; returns the plan it followed (the
    /// copy planning of [`CopyPlan`]: byte fringes, 128-bit body).
    pub fn zero_copy_to_device<T: Pod + DeviceCopy>(
        &self,
        src: &MappedBuffer<T>,
        dst: &mut DeviceViewMut<'_, T>,
    ) -> Result<CopyPlan> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { op: "zero_copy_to_device", expected: dst.len(), got: src.len() });
        }
        src.host.same_context(self, "zero_copy_to_device")?;
        dst.check_gpu(self, "zero_copy_to_device")?;
        // SAFETY: `src` is mapped host memory of this context, borrowed
        // (so neither freed nor written by the host) until the kernel has
        // finished; `dst` a live device view borrowed mutably; same byte
        // count; the two cannot overlap (host vs device memory).
        unsafe { self.zero_copy("zero_copy_read", src.device, dst.device_ptr().0, dst.byte_len()) }
    }

    /// Device to host without a copy: the `zero_copy_write` kernel reads
    /// `src` and writes straight into `dst`'s mapped host memory (same
    /// length). Waits for the kernel.
    pub fn zero_copy_from_device<T: Pod + DeviceCopy>(
        &self,
        src: &DeviceView<'_, T>,
        dst: &mut MappedBuffer<T>,
    ) -> Result<CopyPlan> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { op: "zero_copy_from_device", expected: dst.len(), got: src.len() });
        }
        dst.host.same_context(self, "zero_copy_from_device")?;
        src.check_gpu(self, "zero_copy_from_device")?;
        // SAFETY: as in `zero_copy_to_device`, with `dst` exclusively
        // borrowed host memory the host cannot read until the kernel ends.
        unsafe { self.zero_copy("zero_copy_write", src.device_ptr().0, dst.device, src.byte_len()) }
    }

    /// Copies `bytes` from device address `src` to `dst` (one of them
    /// mapped host memory) with `kernel` for the words and `copy_bytes` for
    /// byte fringes, then waits.
    ///
    /// # Safety
    /// Both ranges valid for `bytes`, not overlapping, untouched by the
    /// host until this returns.
    unsafe fn zero_copy(&self, kernel: &'static str, src: u64, dst: u64, bytes: usize) -> Result<CopyPlan> {
        let plan = CopyPlan::new(src, dst, bytes, CopyVariant::Auto);
        if bytes == 0 {
            return Ok(plan);
        }
        let policy = CopyPolicy::TUNED;
        let fringe = |from: usize, n: usize| -> Result<()> {
            if n == 0 {
                return Ok(());
            }
            let cfg = policy.grid(n, self.max_resident_blocks("copy_bytes", policy.threads)?);
            let (s, d) = (DevicePtr(src + from as u64), DevicePtr(dst + from as u64));
            // SAFETY: [from, from + n) lies inside both ranges.
            unsafe { self.launch("copy_bytes", &cfg, &[&s, &d, &n]) }
        };
        if plan.width == Width::Bytes {
            fringe(0, bytes)?;
        } else {
            fringe(0, plan.head_bytes)?;
            if plan.words > 0 {
                let cfg = plan.launch_config(&policy, self.max_resident_blocks(kernel, policy.threads)?);
                let off = plan.head_bytes as u64;
                // SAFETY: `words` 4-byte-aligned words (CopyPlan) inside
                // both ranges.
                unsafe { self.launch(kernel, &cfg, &[&DevicePtr(src + off), &DevicePtr(dst + off), &plan.words])? };
            }
            fringe(plan.head_bytes + 4 * plan.words, plan.tail_bytes)?;
        }
        self.synchronize()?;
        Ok(plan)
    }
}

/// The compute stage of the overlap experiment: every element goes through
/// `v = a·v + b` (wrapping 32-bit arithmetic) `k` times (`scale_add_u32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScaleAdd {
    /// Multiplier.
    pub a: u32,
    /// Addend.
    pub b: u32,
    /// Steps per element: sets the kernel's duration.
    pub k: u32,
}

impl ScaleAdd {
    /// Threads per block of `scale_add_u32`.
    pub const THREADS: u32 = 256;

    /// The multiplier and addend of the classic 32-bit linear congruential
    /// generator (any values work; these mix all bits).
    pub fn lcg(k: u32) -> ScaleAdd {
        ScaleAdd { a: 1_664_525, b: 1_013_904_223, k }
    }

    /// The `k`-fold step as one affine map `(A, B)`: `x ↦ A·x + B` with
    /// `A = a^k` and `B = b·(a^(k-1) + … + a + 1)`, by repeated squaring —
    /// the CPU reference's independent route to the kernel's result.
    pub fn closed_form(&self) -> (u32, u32) {
        let (mut ra, mut rb) = (1u32, 0u32);
        let (mut pa, mut pb) = (self.a, self.b);
        let mut k = self.k;
        while k > 0 {
            if k & 1 == 1 {
                (ra, rb) = (pa.wrapping_mul(ra), pa.wrapping_mul(rb).wrapping_add(pb));
            }
            (pa, pb) = (pa.wrapping_mul(pa), pa.wrapping_mul(pb).wrapping_add(pb));
            k >>= 1;
        }
        (ra, rb)
    }

    /// One element, the kernel's way: `k` steps.
    pub fn iterate(&self, x: u32) -> u32 {
        (0..self.k).fold(x, |v, _| scale_add_step(v, self.a, self.b))
    }

    /// The CPU reference (rayon, closed form): `out[i] = A·input[i] + B`.
    pub fn reference(&self, input: &[u32], out: &mut [u32]) -> Result<()> {
        use rayon::prelude::*;
        if input.len() != out.len() {
            return Err(Error::LengthMismatch { op: "ScaleAdd::reference", expected: out.len(), got: input.len() });
        }
        let (a, b) = self.closed_form();
        out.par_iter_mut().zip(input.par_iter()).for_each(|(o, &x)| *o = a.wrapping_mul(x).wrapping_add(b));
        Ok(())
    }
}

impl Gpu {
    /// `y = op(x)` elementwise (same length), queued on this handle's
    /// stream like any launch.
    pub fn scale_add(&self, x: &DeviceView<'_, u32>, y: &mut DeviceViewMut<'_, u32>, op: ScaleAdd) -> Result<()> {
        if x.len() != y.len() {
            return Err(Error::LengthMismatch { op: "scale_add", expected: y.len(), got: x.len() });
        }
        x.check_gpu(self, "scale_add")?;
        y.check_gpu(self, "scale_add")?;
        let n = x.len();
        if n == 0 {
            return Ok(());
        }
        let threads = ScaleAdd::THREADS;
        let cap = self.max_resident_blocks("scale_add_u32", threads)?.saturating_mul(4);
        let cfg = LaunchConfig::new(blocks_for(n, threads, cap), threads);
        let (xp, yp) = (x.device_ptr(), y.device_ptr());
        // SAFETY: both views are live device memory of this context with
        // `n` elements; `y` is borrowed mutably, so it overlaps `x` only if
        // it is the same range, which the kernel allows.
        unsafe { self.launch("scale_add_u32", &cfg, &[&xp, &yp, &n, &op.a, &op.b, &op.k]) }
    }
}

/// The stream-ordered copies: queued on the stream, returning at once.
impl Stream {
    /// Queues a host-to-device copy of `src` into `dst` (same length) on
    /// the stream and returns at once. Asynchronous only when `src` is
    /// page-locked ([`PinnedBuffer`]); pageable memory is staged first.
    ///
    /// # Safety
    /// `src` must stay allocated and unmodified, and `dst`'s buffer alive,
    /// until the stream has passed the copy (after
    /// [`Stream::synchronize`], or an event recorded after it completes).
    pub unsafe fn htod_async<T: DeviceCopy>(&self, src: &[T], dst: &mut DeviceViewMut<'_, T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { op: "htod_async", expected: dst.len(), got: src.len() });
        }
        let gpu = self.gpu();
        dst.check_gpu(gpu, "htod_async")?;
        if dst.byte_len() == 0 {
            return Ok(());
        }
        gpu.bind()?;
        // SAFETY: equal byte counts; liveness until the stream passes the
        // copy is the caller's contract.
        unsafe { driver::memcpy_htod(dst.device_ptr().0, src.as_ptr().cast(), dst.byte_len(), gpu.raw_stream())? };
        Ok(())
    }

    /// Queues a device-to-host copy of `src` into `dst` (same length) on
    /// the stream and returns at once (page-locked `dst` only; pageable
    /// memory makes the call wait).
    ///
    /// # Safety
    /// `dst` must stay allocated and must be neither read nor written, and
    /// `src`'s buffer must stay alive, until the stream has passed the copy.
    pub unsafe fn dtoh_async<T: DeviceCopy>(&self, src: &DeviceView<'_, T>, dst: &mut [T]) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { op: "dtoh_async", expected: dst.len(), got: src.len() });
        }
        let gpu = self.gpu();
        src.check_gpu(gpu, "dtoh_async")?;
        if src.byte_len() == 0 {
            return Ok(());
        }
        gpu.bind()?;
        // SAFETY: equal byte counts; liveness and exclusivity until the
        // stream passes the copy are the caller's contract.
        unsafe { driver::memcpy_dtoh(dst.as_mut_ptr().cast(), src.device_ptr().0, src.byte_len(), gpu.raw_stream())? };
        Ok(())
    }
}

/// One stage of a pipeline chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Host-to-device copy of the chunk.
    HtoD,
    /// The compute kernel on the chunk.
    Kernel,
    /// Device-to-host copy of the result.
    DtoH,
}

impl Stage {
    /// The three stages in pipeline order.
    pub const ALL: [Stage; 3] = [Stage::HtoD, Stage::Kernel, Stage::DtoH];

    /// `HtoD`, `kernel`, `DtoH`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::HtoD => "HtoD",
            Stage::Kernel => "kernel",
            Stage::DtoH => "DtoH",
        }
    }
}

/// When one stage of one chunk ran, in milliseconds after the pipeline's
/// first event (recorded before any chunk; every stream waits for it).
///
/// A span runs from the event recorded before the operation to the event
/// recorded after it on the same stream: from when the stream *reached*
/// the operation to when it finished. If the operation then waited for a
/// copy engine or SMs busy with another stream's work, that wait is inside
/// the span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageSpan {
    /// Chunk index.
    pub chunk: usize,
    /// Index of the stream it ran on.
    pub stream: usize,
    /// Which stage.
    pub stage: Stage,
    /// Start, ms after the first event.
    pub start_ms: f64,
    /// End, ms after the first event.
    pub end_ms: f64,
}

/// What [`Gpu::pipeline`] ran.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineRun {
    /// Chunks actually used (the requested count, at most one per element).
    pub chunks: usize,
    /// Streams used.
    pub streams: usize,
    /// From the first event (time zero, before any chunk) to the last, ms.
    pub total_ms: f64,
    /// Three spans per chunk, in chunk order.
    pub spans: Vec<StageSpan>,
}

/// Element range of chunk `c` of `chunks` over `n` elements: balanced,
/// contiguous, covering `0..n` exactly once.
pub fn chunk_range(n: usize, chunks: usize, c: usize) -> std::ops::Range<usize> {
    let chunks = chunks.max(1) as u128;
    let at = |i: usize| (n as u128 * i as u128 / chunks) as usize;
    at(c)..at(c + 1)
}

/// Synchronizes every stream when dropped, so no queued copy can outlive
/// the borrows of the pipeline call, even if it unwinds.
struct SyncOnDrop<'a>(&'a [Stream]);

impl Drop for SyncOnDrop<'_> {
    fn drop(&mut self) {
        for s in self.0 {
            let _ = s.synchronize();
        }
    }
}

impl Gpu {
    /// The overlap experiment: splits `input` into `chunks` contiguous
    /// chunks and, for chunk `c` on stream `c % streams.len()`, queues
    /// copy in (`input` → `d_in`), `scale_add` (`d_in` → `d_out`) and copy
    /// out (`d_out` → `output`), recording an event before and after each
    /// stage. With one stream everything runs in order; with several, one
    /// chunk's copies overlap other chunks' kernels and copies in the other
    /// direction. Waits for all streams, then returns the timeline.
    ///
    /// `input`, `output`, `d_in` and `d_out` must have the same length
    /// ([`Error::LengthMismatch`]); `streams` must not be empty and
    /// `chunks` must be at least 1 ([`Error::InvalidArgument`]). More chunks
    /// than elements use one chunk per element.
    #[allow(clippy::too_many_arguments)]
    pub fn pipeline(
        &self,
        streams: &[Stream],
        input: &PinnedBuffer<u32>,
        output: &mut PinnedBuffer<u32>,
        d_in: &mut DeviceBuffer<u32>,
        d_out: &mut DeviceBuffer<u32>,
        chunks: usize,
        op: ScaleAdd,
    ) -> Result<PipelineRun> {
        let n = input.len();
        for (op, len) in
            [("pipeline (output)", output.len()), ("pipeline (d_in)", d_in.len()), ("pipeline (d_out)", d_out.len())]
        {
            if len != n {
                return Err(Error::LengthMismatch { op, expected: n, got: len });
            }
        }
        if streams.is_empty() || chunks == 0 {
            return Err(Error::InvalidArgument {
                op: "pipeline",
                message: format!("needs at least one stream and one chunk (got {} and {chunks})", streams.len()),
            });
        }
        if streams.iter().any(|s| s.gpu().raw_context() != self.raw_context()) {
            return Err(Error::ForeignBuffer { op: "pipeline" });
        }
        input.same_context(self, "pipeline")?;
        output.same_context(self, "pipeline")?;
        d_in.as_view().check_gpu(self, "pipeline")?;
        d_out.as_view().check_gpu(self, "pipeline")?;
        let chunks = chunks.min(n);
        if chunks == 0 {
            return Ok(PipelineRun { chunks: 0, streams: streams.len(), total_ms: 0.0, spans: vec![] });
        }
        // Nothing earlier on this handle's stream may still use the
        // buffers: the streams are non-blocking and would not wait for it.
        self.synchronize()?;
        let guard = SyncOnDrop(streams);
        let queued = self.queue_pipeline(streams, input, output, d_in, d_out, chunks, op);
        let synced = streams.iter().try_for_each(Stream::synchronize);
        drop(guard);
        let (first, events) = queued?;
        synced?;
        let first = &first;
        let mut spans = Vec::with_capacity(3 * chunks);
        let mut total = 0f64;
        for (c, ev) in events.iter().enumerate() {
            let t: Vec<f64> = ev.iter().map(|e| e.ms_since(first).map(f64::from)).collect::<Result<_>>()?;
            for (i, stage) in Stage::ALL.into_iter().enumerate() {
                spans.push(StageSpan { chunk: c, stream: c % streams.len(), stage, start_ms: t[i], end_ms: t[i + 1] });
            }
            total = total.max(t[3]);
        }
        Ok(PipelineRun { chunks, streams: streams.len(), total_ms: total, spans })
    }

    /// Queues every chunk's three stages and four events; returns the
    /// events per chunk. The caller synchronizes the streams.
    #[allow(clippy::too_many_arguments)]
    fn queue_pipeline(
        &self,
        streams: &[Stream],
        input: &PinnedBuffer<u32>,
        output: &mut PinnedBuffer<u32>,
        d_in: &mut DeviceBuffer<u32>,
        d_out: &mut DeviceBuffer<u32>,
        chunks: usize,
        op: ScaleAdd,
    ) -> Result<(Event, Vec<[Event; 4]>)> {
        let n = input.len();
        // Time zero: the other streams start after it, so no event of the
        // run can precede it.
        let zero = streams[0].record()?;
        for s in &streams[1..] {
            s.wait_for(&streams[0])?;
        }
        let mut events = Vec::with_capacity(chunks);
        for c in 0..chunks {
            let s = &streams[c % streams.len()];
            let r = chunk_range(n, chunks, c);
            let e0 = s.record()?;
            // SAFETY: `input` and `output` are borrowed by `pipeline` until
            // every stream has been synchronized (even on unwinding, by
            // `SyncOnDrop`); chunks are disjoint, so no two queued copies
            // touch the same host or device bytes.
            unsafe { s.htod_async(&input[r.clone()], &mut d_in.view_mut(r.clone())?)? };
            let e1 = s.record()?;
            s.gpu().scale_add(&d_in.view(r.clone())?, &mut d_out.view_mut(r.clone())?, op)?;
            let e2 = s.record()?;
            // SAFETY: as above.
            unsafe { s.dtoh_async(&d_out.view(r.clone())?, &mut output[r])? };
            let e3 = s.record()?;
            events.push([e0, e1, e2, e3]);
        }
        Ok((zero, events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_form_matches_iteration() {
        for (a, b) in [(1_664_525u32, 1_013_904_223u32), (3, 7), (1, 5), (0, 9), (u32::MAX, u32::MAX), (2, 0)] {
            for k in [0u32, 1, 2, 3, 7, 8, 31, 100, 1000] {
                let op = ScaleAdd { a, b, k };
                let (ca, cb) = op.closed_form();
                for x in [0u32, 1, 12345, u32::MAX, 0x8000_0000] {
                    assert_eq!(ca.wrapping_mul(x).wrapping_add(cb), op.iterate(x), "a={a} b={b} k={k} x={x}");
                }
            }
        }
    }

    #[test]
    fn reference_checks_lengths() {
        let op = ScaleAdd::lcg(5);
        let input: Vec<u32> = (0..1000).collect();
        let mut out = vec![0u32; 1000];
        op.reference(&input, &mut out).unwrap();
        assert!(input.iter().zip(&out).all(|(&x, &y)| y == op.iterate(x)));
        let e = op.reference(&input, &mut out[..999]).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { expected: 999, got: 1000, .. }), "{e}");
    }

    #[test]
    fn chunks_cover_everything_once() {
        for n in [0usize, 1, 2, 3, 17, 1000, 1 << 20] {
            for chunks in [1usize, 2, 3, 4, 16, 1000] {
                let mut next = 0;
                for c in 0..chunks {
                    let r = chunk_range(n, chunks, c);
                    assert_eq!(r.start, next, "n={n} chunks={chunks} c={c}");
                    assert!(r.end >= r.start);
                    assert!(r.len() <= n.div_ceil(chunks), "balanced");
                    next = r.end;
                }
                assert_eq!(next, n);
            }
        }
    }

    #[test]
    fn flags_are_the_driver_bits() {
        assert_eq!(HostAllocFlags::DEFAULT.bits(), 0);
        assert_eq!(HostAllocFlags::MAPPED.bits(), 2);
        let all = HostAllocFlags { portable: true, device_map: true, write_combined: true };
        assert_eq!(all.bits(), 7);
        assert_eq!(driver::MEMHOSTALLOC_PORTABLE, cust::sys::CU_MEMHOSTALLOC_PORTABLE);
        assert_eq!(driver::MEMHOSTALLOC_DEVICEMAP, cust::sys::CU_MEMHOSTALLOC_DEVICEMAP);
        assert_eq!(driver::MEMHOSTALLOC_WRITECOMBINED, cust::sys::CU_MEMHOSTALLOC_WRITECOMBINED);
    }
}
