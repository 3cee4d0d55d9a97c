//! The [`Gpu`] handle: one device, its primary context, the kernel module
//! built for it, and a stream — owned together so nothing outlives its
//! context.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::event::{Event, EventFlags};
use cust::memory::DeviceCopy;
use cust::stream::{Stream, StreamFlags};
use cust::sys::{CUcontext, CUfunction, CUstream};

use crate::device::DeviceInfo;
use crate::driver;
use crate::error::{Error, Result};
use crate::launch::{KernelArg, KernelLimits, LaunchConfig};
use crate::ptx;

/// Environment variable that turns on synchronized launches (see
/// [`Gpu::set_sync_launches`]).
pub const SYNC_LAUNCHES_ENV: &str = "COALESCE_SYNC_LAUNCHES";

/// A CUDA device ready to run this crate's kernels.
///
/// Cheap to clone (a reference count). Buffers made from it keep it alive,
/// so the context always outlives them. Every operation makes the context
/// current on the calling thread first, so a `Gpu` can move between threads.
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
}

/// Fields drop in declaration order: stream and module before the context.
pub(crate) struct Inner {
    stream: Stream,
    module: driver::ModuleHandle,
    info: DeviceInfo,
    arch: u32,
    sync_launches: AtomicBool,
    kernels: Mutex<HashMap<&'static str, KernelInfo>>,
    occupancy: Mutex<HashMap<(&'static str, u32, usize), u32>>,
    params: HashMap<String, Vec<usize>>,
    symbols: HashMap<String, usize>,
    raw_ctx: CUcontext,
    ctx: Context,
}

// SAFETY: the raw context pointer is only an identity and an argument to
// driver calls, which are thread-safe; the other fields are Send + Sync.
unsafe impl Send for Inner {}
// SAFETY: as above.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // The stream and module are destroyed in the current context.
        let _ = CurrentContext::set_current(&self.ctx);
    }
}

/// Cached per-kernel facts.
#[derive(Clone, Copy, Debug)]
struct KernelInfo {
    func: CUfunction,
    limits: KernelLimits,
    dynamic_shared_allowed: u32,
}

// SAFETY: a `CUfunction` is a handle usable from any thread of its context.
unsafe impl Send for KernelInfo {}

impl Gpu {
    /// The first CUDA device.
    pub fn new() -> Result<Gpu> {
        Gpu::with_device(0)
    }

    /// Device `ordinal`. Fails with [`Error::NoDevice`] when there is no
    /// driver, no GPU or no such device, so callers can skip cleanly.
    pub fn with_device(ordinal: u32) -> Result<Gpu> {
        if let Err(e) = cust::init(cust::CudaFlags::empty()) {
            return Err(no_device_or(driver::from_cust("cuInit", e)));
        }
        let device = Device::get_device(ordinal).map_err(|e| no_device_or(driver::from_cust("cuDeviceGet", e)))?;
        let info = DeviceInfo::query(ordinal, device)?;
        let ctx = Context::new(device).map_err(|e| driver::from_cust("cuDevicePrimaryCtxRetain", e))?;
        CurrentContext::set_current(&ctx).map_err(|e| driver::from_cust("cuCtxSetCurrent", e))?;
        let (arch, text) = ptx::select(info.cc_major, info.cc_minor)?;
        let module = load_module(arch, text, &info)?;
        let stream = Stream::new(StreamFlags::DEFAULT, None).map_err(|e| driver::from_cust("cuStreamCreate", e))?;
        let sync = std::env::var(SYNC_LAUNCHES_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
        Ok(Gpu {
            inner: Arc::new(Inner {
                stream,
                module,
                info,
                arch,
                sync_launches: AtomicBool::new(sync),
                kernels: Mutex::new(HashMap::new()),
                occupancy: Mutex::new(HashMap::new()),
                params: ptx::entry_params(text).into_iter().collect(),
                symbols: ptx::const_symbols(text).into_iter().collect(),
                raw_ctx: ctx.as_raw(),
                ctx,
            }),
        })
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

    /// Makes this handle's context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        CurrentContext::set_current(&self.inner.ctx).map_err(|e| driver::from_cust("cuCtxSetCurrent", e).into())
    }

    pub(crate) fn raw_stream(&self) -> CUstream {
        self.inner.stream.as_inner()
    }

    pub(crate) fn raw_context(&self) -> CUcontext {
        self.inner.raw_ctx
    }

    /// Waits until all work queued on this handle's stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.bind()?;
        Ok(driver::stream_synchronize(self.raw_stream())?)
    }

    /// Free and total device memory, bytes.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.bind()?;
        Ok(driver::mem_info()?)
    }

    /// What the compiled kernel `name` allows (registers, static shared
    /// memory, max threads per block).
    pub fn kernel_limits(&self, name: &'static str) -> Result<KernelLimits> {
        Ok(self.kernel_info(name)?.limits)
    }

    fn kernel_info(&self, name: &'static str) -> Result<KernelInfo> {
        let mut cache = self.inner.kernels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = cache.get(name) {
            return Ok(*k);
        }
        // Names not in the module's PTX are answered without the driver.
        if !self.inner.params.contains_key(name) {
            return Err(Error::UnknownKernel(name));
        }
        self.bind()?;
        let cname = CString::new(name).map_err(|_| Error::UnknownKernel(name))?;
        let func = driver::module_function(&self.inner.module, &cname).map_err(|e| match e.code {
            500 => Error::UnknownKernel(name),
            _ => e.into(),
        })?;
        let a = |attr| driver::function_attribute(func, attr).map(|v| v.max(0) as u32);
        let static_shared = a(driver::func_attr::SHARED_SIZE_BYTES)?;
        let info = KernelInfo {
            func,
            limits: KernelLimits {
                max_threads_per_block: a(driver::func_attr::MAX_THREADS_PER_BLOCK)?,
                registers_per_thread: a(driver::func_attr::NUM_REGS)?,
                static_shared_bytes: static_shared,
                local_bytes_per_thread: a(driver::func_attr::LOCAL_SIZE_BYTES)?,
            },
            dynamic_shared_allowed: self.inner.info.limits.max_shared_per_block.saturating_sub(static_shared),
        };
        cache.insert(name, info);
        Ok(info)
    }

    /// The driver's answer: resident blocks per SM for kernel `name` at
    /// `threads` per block and `dynamic_shared` bytes of dynamic shared
    /// memory (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    /// Answers are cached per (kernel, threads, dynamic shared memory).
    pub fn max_active_blocks_per_sm(&self, name: &'static str, threads: u32, dynamic_shared: usize) -> Result<u32> {
        let key = (name, threads, dynamic_shared);
        if let Some(&n) = self.inner.occupancy.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(n);
        }
        let func = self.kernel_info(name)?.func;
        self.bind()?;
        let n = driver::occupancy_blocks_per_sm(func, threads, dynamic_shared)?;
        self.inner.occupancy.lock().unwrap_or_else(|p| p.into_inner()).insert(key, n);
        Ok(n)
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
        let info = self.kernel_info(name)?;
        let expected = self.inner.params.get(name).ok_or(Error::UnknownKernel(name))?;
        if args.len() != expected.len() || args.iter().zip(expected).any(|(a, &e)| a.arg_size() != e) {
            return Err(Error::KernelArgs {
                kernel: name,
                expected: expected.clone(),
                got: args.iter().map(|a| a.arg_size()).collect(),
            });
        }
        cfg.validate(&self.inner.info.limits, &info.limits).map_err(|v| Error::InvalidLaunch {
            kernel: name,
            config: *cfg,
            limit: v.limit,
            max: v.max,
            value: v.value,
        })?;
        self.bind()?;
        if cfg.shared_mem_bytes > info.dynamic_shared_allowed {
            // Above the default per-block limit a kernel must opt in.
            let most = self.inner.info.limits.max_shared_per_block_optin - info.limits.static_shared_bytes;
            driver::set_max_dynamic_shared(info.func, most)?;
            let mut cache = self.inner.kernels.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(k) = cache.get_mut(name) {
                k.dynamic_shared_allowed = most;
            }
        }
        let mut raw: Vec<*mut std::ffi::c_void> = args.iter().map(|a| a.as_arg_ptr()).collect();
        let kernel_error =
            |source| Error::Kernel { kernel: name, config: *cfg, hint: hint_for(&source), source: Box::new(source) };
        // SAFETY: the caller guarantees the arguments match the kernel; the
        // configuration was validated above; `raw` outlives the call.
        unsafe {
            driver::launch_kernel(
                info.func,
                [cfg.grid.x, cfg.grid.y, cfg.grid.z],
                [cfg.block.x, cfg.block.y, cfg.block.z],
                cfg.shared_mem_bytes,
                self.raw_stream(),
                &mut raw,
            )
        }
        .map_err(kernel_error)?;
        if self.inner.sync_launches.load(Ordering::Relaxed) {
            driver::stream_synchronize(self.raw_stream()).map_err(kernel_error)?;
        }
        Ok(())
    }

    /// Writes `values` into the module's constant-memory array `name` (the
    /// Rust form of `cudaMemcpyToSymbol`). The symbol's size must equal the
    /// values' size exactly; a mismatch or a missing symbol is an error,
    /// never a panic. Ordered on this handle's stream.
    pub fn write_symbol<T: DeviceCopy>(&self, name: &str, values: &[T]) -> Result<()> {
        let (ptr, bytes) = self.symbol(name)?;
        let want = std::mem::size_of_val(values);
        if bytes != want {
            return Err(Error::Symbol {
                name: name.into(),
                problem: format!(
                    "holds {bytes} bytes, the host tried to write {want} ({} × {} bytes)",
                    values.len(),
                    std::mem::size_of::<T>()
                ),
            });
        }
        // SAFETY: the symbol spans `bytes == want` bytes of device memory;
        // the host slice is read before the stream is synchronized below.
        unsafe { driver::memcpy_htod(ptr, values.as_ptr().cast(), want, self.raw_stream())? };
        self.synchronize()
    }

    /// Reads the module's constant-memory array `name` back.
    pub fn read_symbol<T: DeviceCopy + Default>(&self, name: &str) -> Result<Vec<T>> {
        let (ptr, bytes) = self.symbol(name)?;
        let size = std::mem::size_of::<T>();
        if size == 0 || bytes % size != 0 {
            return Err(Error::Symbol {
                name: name.into(),
                problem: format!("holds {bytes} bytes, not a whole number of {size}-byte elements"),
            });
        }
        let mut out = vec![T::default(); bytes / size];
        // SAFETY: `out` spans exactly `bytes` bytes and lives until the
        // synchronize below.
        unsafe { driver::memcpy_dtoh(out.as_mut_ptr().cast(), ptr, bytes, self.raw_stream())? };
        self.synchronize()?;
        Ok(out)
    }

    /// Size in bytes of the module symbol `name`.
    pub fn symbol_size(&self, name: &str) -> Result<usize> {
        Ok(self.symbol(name)?.1)
    }

    fn symbol(&self, name: &str) -> Result<(u64, usize)> {
        let c = CString::new(name)
            .map_err(|_| Error::Symbol { name: name.into(), problem: "the name contains a NUL byte".into() })?;
        if !self.inner.symbols.contains_key(name) {
            return Err(Error::Symbol { name: name.into(), problem: "not found in the loaded module".into() });
        }
        self.bind()?;
        driver::module_global(&self.inner.module, &c).map_err(|e| Error::Symbol {
            name: name.into(),
            problem: if e.code == 500 { "not found in the loaded module".into() } else { e.to_string() },
        })
    }

    /// Times the work `f` queues on this handle's stream with CUDA events:
    /// returns milliseconds between an event recorded before and one after.
    pub fn time<F: FnOnce() -> Result<()>>(&self, f: F) -> Result<f32> {
        self.bind()?;
        let ev = |op| Event::new(EventFlags::DEFAULT).map_err(|e| driver::from_cust(op, e));
        let (start, stop) = (ev("cuEventCreate")?, ev("cuEventCreate")?);
        start.record(&self.inner.stream).map_err(|e| driver::from_cust("cuEventRecord", e))?;
        f()?;
        stop.record(&self.inner.stream).map_err(|e| driver::from_cust("cuEventRecord", e))?;
        stop.synchronize().map_err(|e| driver::from_cust("cuEventSynchronize", e))?;
        Ok(stop.elapsed_time_f32(&start).map_err(|e| driver::from_cust("cuEventElapsedTime", e))?)
    }
}

impl Gpu {
    /// Every kernel (entry point) of the loaded module, in PTX order.
    pub fn kernel_names(&self) -> Vec<&'static str> {
        let text = ptx::text(self.inner.arch).unwrap_or_default();
        text.split(".entry ").skip(1).filter_map(|s| s.split('(').next()).map(str::trim).collect()
    }

    /// The driver's suggested launch for kernel `name` with
    /// `dynamic_shared` bytes per block: `(minimum grid for full occupancy,
    /// block size)` (`cuOccupancyMaxPotentialBlockSize`).
    pub fn driver_suggested_launch(&self, name: &'static str, dynamic_shared: usize) -> Result<(u32, u32)> {
        let func = self.kernel_info(name)?.func;
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

fn load_module(arch: u32, text: &'static str, info: &DeviceInfo) -> Result<driver::ModuleHandle> {
    let c = CString::new(text).map_err(|_| Error::InvalidArgument {
        op: "load_module",
        message: format!("the embedded sm_{arch} PTX contains a NUL byte"),
    })?;
    driver::load_module(&c).map_err(|(source, log)| Error::ModuleLoad {
        arch,
        major: info.cc_major,
        minor: info.cc_minor,
        source: Box::new(source),
        log,
    })
}

/// `cuInit`/`cuDeviceGet` failures that mean "no GPU here".
fn no_device_or(e: crate::error::DriverError) -> Error {
    // 100 NO_DEVICE, 101 INVALID_DEVICE, 34 STUB_LIBRARY, 3 NOT_INITIALIZED,
    // 303 SHARED_OBJECT_INIT_FAILED, 999 UNKNOWN (driver present, no GPU
    // reachable, e.g. inside some sandboxes).
    if matches!(e.code, 3 | 34 | 100 | 101 | 303 | 999) { Error::NoDevice { reason: e.to_string() } } else { e.into() }
}

fn hint_for(e: &crate::error::DriverError) -> &'static str {
    if e.is_sticky() {
        " (a sticky error: the context is unusable from here on; if the failing kernel is not \
         the one named, rerun with COALESCE_SYNC_LAUNCHES=1 to find it)"
    } else {
        ""
    }
}
