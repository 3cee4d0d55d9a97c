//! The [`Gpu`] handle: one device, its primary context, the kernel module
//! built for it, and a stream — owned together so nothing outlives its
//! context.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cust::device::Device;
use cust::memory::DeviceCopy;
use cust::sys::{CUcontext, CUstream};

use crate::context::{self, Ctx, Fault};
use crate::device::DeviceInfo;
use crate::driver;
use crate::error::{Error, Result};
use crate::launch::{KernelArg, KernelLimits, LaunchConfig};
use crate::module::{ModuleState, PtxModule};
use crate::ptx;
use crate::stream::{Event, Stream, StreamInner};

/// Environment variable that turns on synchronized launches (see
/// [`Gpu::set_sync_launches`]).
pub const SYNC_LAUNCHES_ENV: &str = "COALESCE_SYNC_LAUNCHES";

/// Environment variable that turns off dependent launches when set to `0`
/// (see [`Gpu::set_dependent_launches`]).
pub const DEPENDENT_LAUNCHES_ENV: &str = "COALESCE_DEPENDENT_LAUNCHES";

/// A CUDA device ready to run this crate's kernels, and the stream its work
/// goes to.
///
/// Cheap to clone (reference counts); `Send + Sync`. Clones share the
/// device's context, the loaded module and the stream, so work queued
/// through any of them runs in order. [`Gpu::new_stream`] and [`Gpu::on`]
/// give a handle on another stream of the same device, whose work may
/// overlap; buffers passed between streams are ordered automatically (see
/// [`crate::stream`]). Separate `Gpu`s made with [`Gpu::new`] share the
/// device's primary context but not the module or the stream. Buffers made
/// from a handle keep it alive, so the context always outlives them. Every
/// operation makes the context current on the calling thread first, so a
/// `Gpu` can move between threads.
///
/// After a kernel faults (a sticky error), every operation on this handle,
/// its clones and every other `Gpu` of the device returns
/// [`Error::Faulted`] naming the first fault (see [`crate::context`]).
///
/// ```no_run
/// use coalesce_host::{CopyVariant, Gpu};
/// # fn main() -> coalesce_host::Result<()> {
/// let gpu = Gpu::new()?;
/// let src = gpu.upload(&[1u32, 2, 3, 4, 5])?;
/// let mut dst = gpu.alloc_zeroed::<u32>(5)?;
/// gpu.copy(&src.as_view(), &mut dst.as_view_mut(), CopyVariant::Auto)?;
/// assert_eq!(dst.to_vec()?, [1, 2, 3, 4, 5]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Gpu {
    pub(crate) inner: Arc<Inner>,
    pub(crate) stream: Arc<StreamInner>,
}

/// What every handle of one `Gpu` shares. The module is dropped before the
/// context reference.
pub(crate) struct Inner {
    module: ModuleState,
    info: DeviceInfo,
    arch: u32,
    pub(crate) sync_launches: AtomicBool,
    pub(crate) dependent_launches: AtomicBool,
    ctx: Arc<Ctx>,
}

impl Gpu {
    /// The first CUDA device.
    pub fn new() -> Result<Gpu> {
        Gpu::with_device(0)
    }

    /// How many CUDA devices are visible (0 when there is no driver or no
    /// GPU).
    pub fn count() -> u32 {
        if cust::init(cust::CudaFlags::empty()).is_err() {
            return 0;
        }
        Device::num_devices().unwrap_or(0)
    }

    /// Device `ordinal`. Fails with [`Error::NoDevice`] when there is no
    /// driver, no GPU or no such device, so callers can skip cleanly, and
    /// with [`Error::Faulted`] when a kernel faulted on the device earlier
    /// in this process.
    pub fn with_device(ordinal: u32) -> Result<Gpu> {
        if let Err(e) = cust::init(cust::CudaFlags::empty()) {
            return Err(no_device_or(driver::from_cust("cuInit", e)));
        }
        let device = Device::get_device(ordinal).map_err(|e| no_device_or(driver::from_cust("cuDeviceGet", e)))?;
        let info = DeviceInfo::query(ordinal, device)?;
        Gpu::open(ordinal, device, &info)
    }

    fn open(ordinal: u32, device: Device, info: &DeviceInfo) -> Result<Gpu> {
        let ctx = context::retain(ordinal, device.as_raw())?;
        let (arch, text) = ptx::select(info.cc_major, info.cc_minor)?;
        let module = ModuleState::load(&ctx, text, |source, log| Error::ModuleLoad {
            arch,
            major: info.cc_major,
            minor: info.cc_minor,
            source: Box::new(source),
            log,
        })?;
        let stream = StreamInner::create(&ctx, false)?;
        let sync = std::env::var(SYNC_LAUNCHES_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
        let dependent = std::env::var(DEPENDENT_LAUNCHES_ENV).map_or(true, |v| v != "0");
        Ok(Gpu {
            inner: Arc::new(Inner {
                module,
                info: info.clone(),
                arch,
                sync_launches: AtomicBool::new(sync),
                dependent_launches: AtomicBool::new(dependent),
                ctx,
            }),
            stream,
        })
    }

    /// A new stream on this device (non-blocking). Bind handles to it with
    /// [`Gpu::on`], or use [`Stream::gpu`].
    pub fn new_stream(&self) -> Result<Stream> {
        let stream = StreamInner::create(&self.inner.ctx, true)?;
        Ok(Stream::of(Gpu { inner: self.inner.clone(), stream }))
    }

    /// This handle on `stream`: the same device and module, with every
    /// operation queued on `stream`. `stream` must belong to this device
    /// ([`Error::ForeignBuffer`] otherwise).
    pub fn on(&self, stream: &Stream) -> Result<Gpu> {
        if stream.gpu().raw_context() != self.raw_context() {
            return Err(Error::ForeignBuffer { op: "Gpu::on" });
        }
        Ok(Gpu { inner: self.inner.clone(), stream: stream.gpu().stream.clone() })
    }

    /// The stream this handle queues its work on.
    pub fn stream(&self) -> Stream {
        Stream::of(self.clone())
    }

    /// Records an event at the current end of this handle's stream.
    pub fn record_event(&self) -> Result<Event> {
        Event::record_on(&self.stream)
    }

    /// Makes the work queued on this handle's stream from now on wait until
    /// `event` has completed (the host does not wait). `event` must belong
    /// to this device.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        if event.ctx().raw() != self.raw_context() {
            return Err(Error::ForeignBuffer { op: "Gpu::wait_event" });
        }
        self.bind()?;
        Ok(driver::stream_wait_event(self.stream.raw(), event.raw())?)
    }

    /// The first fault of this device's context, if one happened.
    pub fn fault(&self) -> Option<Fault> {
        self.inner.ctx.fault()
    }

    /// The device's properties.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The architecture of the loaded PTX (`90` for `sm_90`).
    pub fn ptx_arch(&self) -> u32 {
        self.inner.arch
    }

    /// Debug mode: when on, every launch waits for its kernel and reports a
    /// failure as [`Error::Kernel`] naming that kernel — instead of a sticky
    /// error surfacing later in an unrelated call. Also turned on by setting
    /// `COALESCE_SYNC_LAUNCHES=1`. Off by default (launches are asynchronous).
    pub fn set_sync_launches(&self, on: bool) {
        self.inner.sync_launches.store(on, Ordering::Relaxed);
    }

    /// Dependent launches: on sm_90 and newer the convolution kernels
    /// (every kernel whose PTX waits for the grid before it as its first
    /// statement, [`crate::ptx::waiting_entries`]) are launched as
    /// programmatic dependents of the kernel before them on the stream, so
    /// their blocks are placed while that kernel drains and each waits for
    /// it to finish before it reads or writes memory: calls back to back
    /// lose less time between kernels (1.4 µs a call on an H200, 4 points
    /// of the 4096² RGB box's floor). Results are the same either way. On
    /// by default; off for every handle of this `Gpu` with `false`, or by
    /// setting `COALESCE_DEPENDENT_LAUNCHES=0`. Modules loaded with
    /// [`PtxModule`](crate::PtxModule) follow the same rule on this `Gpu`.
    pub fn set_dependent_launches(&self, on: bool) {
        self.inner.dependent_launches.store(on, Ordering::Relaxed);
    }

    /// Whether the crate's convolution kernels launch as dependents now
    /// ([`Gpu::set_dependent_launches`]): on, with PTX whose kernels wait
    /// first loaded (sm_90 and newer) and a driver that has
    /// `cuLaunchKernelEx`.
    pub fn dependent_launches(&self) -> bool {
        self.inner.dependent_launches.load(Ordering::Relaxed)
            && self.inner.module.has_dependents()
            && driver::dependent_launch_available()
    }

    /// Makes this handle's context current on the calling thread
    /// ([`Error::Faulted`] after a fault).
    pub(crate) fn bind(&self) -> Result<()> {
        self.inner.ctx.bind()
    }

    pub(crate) fn raw_stream(&self) -> CUstream {
        self.stream.raw()
    }

    pub(crate) fn raw_context(&self) -> CUcontext {
        self.inner.ctx.raw()
    }

    pub(crate) fn ctx(&self) -> &Arc<Ctx> {
        &self.inner.ctx
    }

    /// Waits until all work queued on this handle's stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize()
    }

    /// Free and total device memory, bytes.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.bind()?;
        Ok(driver::mem_info()?)
    }

    /// What the compiled kernel `name` allows (registers, static shared
    /// memory, max threads per block).
    pub fn kernel_limits(&self, name: &'static str) -> Result<KernelLimits> {
        Ok(self.inner.module.kernel_info(self, name)?.limits)
    }

    /// The driver's answer: resident blocks per SM for kernel `name` at
    /// `threads` per block and `dynamic_shared` bytes of dynamic shared
    /// memory (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    /// Answers are cached per (kernel, threads, dynamic shared memory).
    pub fn max_active_blocks_per_sm(&self, name: &'static str, threads: u32, dynamic_shared: usize) -> Result<u32> {
        self.inner.module.max_active_blocks_per_sm(self, name, threads, dynamic_shared)
    }

    /// The grid size that fills the device once for kernel `name` at
    /// `threads` per block: SMs × resident blocks per SM (the lesson's
    /// `MAX_BLOCKS`).
    pub fn max_resident_blocks(&self, name: &'static str, threads: u32) -> Result<u32> {
        let per_sm = self.max_active_blocks_per_sm(name, threads, 0)?.max(1);
        Ok(self.inner.info.sm_count.max(1) * per_sm)
    }

    /// Launches kernel `name` of the loaded module on this handle's stream
    /// after validating `cfg` against the device and the kernel.
    ///
    /// The number and byte sizes of `args` are checked against the kernel's
    /// parameters (read from its PTX) and a mismatch is
    /// [`Error::KernelArgs`]; types of equal size cannot be told apart.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters in order and type, and
    /// every pointer among them must satisfy the kernel's documented
    /// contract (valid, large enough, aligned, not aliased where it writes).
    pub unsafe fn launch(&self, name: &'static str, cfg: &LaunchConfig, args: &[&dyn KernelArg]) -> Result<()> {
        // SAFETY: forwarded to the caller's contract.
        unsafe { self.inner.module.launch(self, name, cfg, args) }
    }

    /// Writes `values` into the module's constant-memory array `name` (the
    /// Rust form of `cudaMemcpyToSymbol`). The symbol's size must equal the
    /// values' size exactly; a mismatch or a missing symbol is an error,
    /// never a panic. Ordered on this handle's stream.
    pub fn write_symbol<T: DeviceCopy>(&self, name: &str, values: &[T]) -> Result<()> {
        self.inner.module.write_symbol(self, name, values, true)
    }

    /// Writes `values` into the first bytes of the module's constant-memory
    /// array `name`, leaving the rest as it was: for arrays sized for the
    /// largest use (a convolution mask of any width up to the array's
    /// size). More bytes than the symbol holds is an error. Ordered on this
    /// handle's stream; the host slice is copied before this returns.
    pub fn write_symbol_prefix<T: DeviceCopy>(&self, name: &str, values: &[T]) -> Result<()> {
        self.inner.module.write_symbol(self, name, values, false)
    }

    /// See [`ModuleState::with_symbol`]: runs `launch` with the constant
    /// symbol `name` holding the data tagged `tag` (copied from `src`
    /// first when it holds other data), as one unit against other users.
    ///
    /// # Safety
    /// As [`ModuleState::with_symbol`].
    pub(crate) unsafe fn with_symbol(
        &self,
        name: &str,
        tag: u64,
        src: (crate::launch::DevicePtr, usize),
        launch: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        // SAFETY: forwarded to the caller's contract.
        unsafe { self.inner.module.with_symbol(self, name, tag, src, launch) }
    }

    /// Reads the module's constant-memory array `name` back.
    pub fn read_symbol<T: DeviceCopy + Default>(&self, name: &str) -> Result<Vec<T>> {
        self.inner.module.read_symbol(self, name)
    }

    /// Byte sizes of kernel `name`'s parameters, in order (read from the
    /// module's PTX).
    pub fn param_sizes(&self, name: &'static str) -> Result<&[usize]> {
        self.inner.module.param_sizes(name)
    }

    /// Size in bytes of the module symbol `name`.
    pub fn symbol_size(&self, name: &str) -> Result<usize> {
        Ok(self.inner.module.symbol(self, name)?.1)
    }

    /// Loads another PTX module (for example one compiled by `nvcc -ptx`)
    /// into this handle's context; its kernels launch on this handle's
    /// stream. `label` names it in errors. Fails with
    /// [`Error::ModuleLoad`] (with the JIT compiler's log) when the driver
    /// rejects the PTX.
    pub fn load_ptx(&self, label: &str, ptx: &str) -> Result<PtxModule> {
        self.bind()?;
        let info = &self.inner.info;
        let state = ModuleState::load(&self.inner.ctx, ptx, |source, log| Error::ModuleLoad {
            arch: info.sm(),
            major: info.cc_major,
            minor: info.cc_minor,
            source: Box::new(source),
            log: format!("{label}: {log}"),
        })?;
        Ok(PtxModule::new(state, self.clone()))
    }

    /// The kernels of the crate's module (every `extern "ptx-kernel"`
    /// entry point), sorted.
    pub fn kernel_names(&self) -> Vec<&'static str> {
        let text = ptx::text(self.inner.arch).unwrap_or_default();
        let mut v: Vec<&'static str> =
            text.split(".entry ").skip(1).filter_map(|s| s.split('(').next()).map(str::trim).collect();
        v.sort_unstable();
        v
    }

    /// Times the work `f` queues on this handle's stream with CUDA events:
    /// returns milliseconds between an event recorded before and one after.
    pub fn time<F: FnOnce() -> Result<()>>(&self, f: F) -> Result<f32> {
        let start = self.record_event()?;
        f()?;
        self.record_event()?.ms_since(&start)
    }
}

impl Gpu {
    /// The driver's suggested launch for kernel `name` with
    /// `dynamic_shared` bytes per block: `(minimum grid for full occupancy,
    /// block size)` (`cuOccupancyMaxPotentialBlockSize`).
    pub fn driver_suggested_launch(&self, name: &'static str, dynamic_shared: usize) -> Result<(u32, u32)> {
        let func = self.inner.module.kernel_info(self, name)?.func;
        self.bind()?;
        Ok(driver::occupancy_max_potential_block_size(func, dynamic_shared)?)
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("device", &self.inner.info.name)
            .field("ptx_arch", &self.inner.arch)
            .finish_non_exhaustive()
    }
}

/// `cuInit`/`cuDeviceGet` failures that mean "no GPU here".
fn no_device_or(e: crate::error::DriverError) -> Error {
    // 100 NO_DEVICE, 101 INVALID_DEVICE, 34 STUB_LIBRARY, 3 NOT_INITIALIZED,
    // 303 SHARED_OBJECT_INIT_FAILED, 999 UNKNOWN (driver present, no GPU
    // reachable, e.g. inside some sandboxes).
    if matches!(e.code, 3 | 34 | 100 | 101 | 303 | 999) { Error::NoDevice { reason: e.to_string() } } else { e.into() }
}

pub(crate) fn hint_for(e: &crate::error::DriverError) -> &'static str {
    if e.is_sticky() {
        " (a sticky error: the context is unusable from here on; if the failing kernel is not \
         the one named, rerun with COALESCE_SYNC_LAUNCHES=1 to find it)"
    } else {
        ""
    }
}
