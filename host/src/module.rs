//! A loaded kernel module and what the host knows about it: its kernels'
//! parameter lists and constant symbols (parsed from the PTX, so bad names
//! and argument lists are answered before the driver sees them), and the
//! per-kernel facts cached from the driver.
//!
//! [`Gpu`] owns the module built from this crate's kernels; [`PtxModule`]
//! is any other PTX loaded next to it (the benchmarks load `nvcc`-compiled
//! CUDA C++ twins of the Rust kernels this way).

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use cust::memory::DeviceCopy;
use cust::sys::CUfunction;

use crate::context::{self, Ctx};
use crate::driver;
use crate::error::{DriverError, Error, Result};
use crate::gpu::Gpu;
use crate::launch::{DevicePtr, KernelArg, KernelLimits, LaunchConfig};
use crate::ptx;
use crate::stream::Tracker;

/// Cached per-kernel facts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelInfo {
    pub(crate) func: CUfunction,
    pub(crate) limits: KernelLimits,
    pub(crate) dynamic_shared_allowed: u32,
    /// Whether the kernel launches as a programmatic dependent when
    /// dependent launches are on (it waits first; [`ptx::waiting_entries`]).
    pub(crate) dependent: bool,
}

// SAFETY: a `CUfunction` is a handle usable from any thread of its context.
unsafe impl Send for KernelInfo {}

/// A constant-memory symbol of a module: shared by every launch that
/// reads it, so its writes and the launches that read them are ordered
/// (see [`ModuleState::with_symbol`]).
struct Symbol {
    bytes: usize,
    /// Which data it holds (a tag its writer chose), `None` when unknown;
    /// locked from a write until the launches reading it are queued.
    tag: Mutex<Option<u64>>,
    /// The streams that used it since it was last written.
    track: Tracker,
}

/// One loaded module, unloaded on drop (in its context).
pub(crate) struct ModuleState {
    handle: driver::ModuleHandle,
    ctx: Arc<Ctx>,
    kernels: Mutex<HashMap<&'static str, KernelInfo>>,
    occupancy: Mutex<HashMap<(&'static str, u32, usize), u32>>,
    params: HashMap<String, Vec<usize>>,
    symbols: HashMap<String, Symbol>,
    /// Kernels launched as programmatic dependents of the grid before them:
    /// those whose PTX waits for it first ([`ptx::waiting_entries`]).
    dependent: std::collections::HashSet<String>,
}

impl Drop for ModuleState {
    fn drop(&mut self) {
        // The handle, dropped after this, unloads in the current context.
        self.ctx.enter();
    }
}

impl ModuleState {
    /// JIT-loads `text` in `ctx` (current on this thread); `on_error` turns
    /// the driver's error and the JIT log into the caller's error.
    pub(crate) fn load(
        ctx: &Arc<Ctx>,
        text: &str,
        on_error: impl FnOnce(DriverError, String) -> Error,
    ) -> Result<ModuleState> {
        let c = CString::new(text).map_err(|_| Error::InvalidArgument {
            op: "load_module",
            message: "the PTX text contains a NUL byte".into(),
        })?;
        ctx.bind()?;
        let handle = driver::load_module(&c).map_err(|(source, log)| on_error(source, log))?;
        let symbol = |bytes| Symbol { bytes, tag: Mutex::new(None), track: Tracker::default() };
        Ok(ModuleState {
            handle,
            ctx: ctx.clone(),
            kernels: Mutex::new(HashMap::new()),
            occupancy: Mutex::new(HashMap::new()),
            params: ptx::entry_params(text).into_iter().collect(),
            symbols: ptx::const_symbols(text).into_iter().map(|(n, b)| (n, symbol(b))).collect(),
            dependent: ptx::waiting_entries(text).into_iter().collect(),
        })
    }

    /// Whether any kernel of this module launches as a programmatic
    /// dependent when dependent launches are on.
    pub(crate) fn has_dependents(&self) -> bool {
        !self.dependent.is_empty()
    }

    /// The kernels launched as programmatic dependents when dependent
    /// launches are on, sorted.
    pub(crate) fn dependent_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.dependent.iter().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    fn handle(&self) -> &driver::ModuleHandle {
        &self.handle
    }

    /// Byte sizes of kernel `name`'s parameters, in order (from the PTX).
    pub(crate) fn param_sizes(&self, name: &'static str) -> Result<&[usize]> {
        self.params.get(name).map(Vec::as_slice).ok_or(Error::UnknownKernel(name))
    }

    /// The module's kernel names, sorted.
    pub(crate) fn kernel_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.params.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    pub(crate) fn kernel_info(&self, gpu: &Gpu, name: &'static str) -> Result<KernelInfo> {
        let mut cache = self.kernels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = cache.get(name) {
            return Ok(*k);
        }
        // Names not in the module's PTX are answered without the driver.
        if !self.params.contains_key(name) {
            return Err(Error::UnknownKernel(name));
        }
        gpu.bind()?;
        let cname = CString::new(name).map_err(|_| Error::UnknownKernel(name))?;
        let func = driver::module_function(self.handle(), &cname).map_err(|e| match e.code {
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
            dynamic_shared_allowed: gpu.info().limits.max_shared_per_block.saturating_sub(static_shared),
            dependent: self.dependent.contains(name),
        };
        cache.insert(name, info);
        Ok(info)
    }

    pub(crate) fn max_active_blocks_per_sm(
        &self,
        gpu: &Gpu,
        name: &'static str,
        threads: u32,
        dynamic_shared: usize,
    ) -> Result<u32> {
        let key = (name, threads, dynamic_shared);
        if let Some(&n) = self.occupancy.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(n);
        }
        let func = self.kernel_info(gpu, name)?.func;
        gpu.bind()?;
        // The occupancy calculator counts a block above the default
        // per-block limit as not fitting until the kernel has opted in.
        self.allow_dynamic_shared(gpu, name, dynamic_shared)?;
        let n = driver::occupancy_blocks_per_sm(func, threads, dynamic_shared)?;
        self.occupancy.lock().unwrap_or_else(|p| p.into_inner()).insert(key, n);
        Ok(n)
    }

    /// Lets kernel `name` take `bytes` of dynamic shared memory: above the
    /// default per-block limit a kernel must opt in (to the device's most;
    /// the launch's validation has checked `bytes` against it). The
    /// context is bound.
    fn allow_dynamic_shared(&self, gpu: &Gpu, name: &'static str, bytes: usize) -> Result<()> {
        let info = self.kernel_info(gpu, name)?;
        if bytes > info.dynamic_shared_allowed as usize {
            let most = gpu.info().limits.max_shared_per_block_optin - info.limits.static_shared_bytes;
            driver::set_max_dynamic_shared(info.func, most)?;
            let mut cache = self.kernels.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(k) = cache.get_mut(name) {
                k.dynamic_shared_allowed = most;
            }
        }
        Ok(())
    }

    /// Launches `name` on `gpu`'s stream.
    ///
    /// # Safety
    /// As [`Gpu::launch`].
    pub(crate) unsafe fn launch(
        &self,
        gpu: &Gpu,
        name: &'static str,
        cfg: &LaunchConfig,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        let stream = gpu.raw_stream();
        let info = self.kernel_info(gpu, name)?;
        let expected = self.params.get(name).ok_or(Error::UnknownKernel(name))?;
        if args.len() != expected.len() || args.iter().zip(expected).any(|(a, &e)| a.arg_size() != e) {
            return Err(Error::KernelArgs {
                kernel: name,
                expected: expected.clone(),
                got: args.iter().map(|a| a.arg_size()).collect(),
            });
        }
        let limits = &gpu.info().limits;
        cfg.validate(limits, &info.limits).map_err(|v| Error::InvalidLaunch {
            kernel: name,
            config: *cfg,
            limit: v.limit,
            max: v.max,
            value: v.value,
        })?;
        gpu.bind()?;
        self.allow_dynamic_shared(gpu, name, cfg.shared_mem_bytes as usize)?;
        let mut raw: Vec<*mut std::ffi::c_void> = args.iter().map(|a| a.as_arg_ptr()).collect();
        let dependent = info.dependent && gpu.inner.dependent_launches.load(Ordering::Relaxed);
        let kernel_error = |source: DriverError| {
            if source.is_sticky() {
                context::record_fault(gpu.raw_context(), &source, Some(name));
            }
            Error::Kernel { kernel: name, config: *cfg, hint: crate::gpu::hint_for(&source), source: Box::new(source) }
        };
        // SAFETY: the caller guarantees the arguments match the kernel; the
        // configuration was validated above; `raw` outlives the call.
        unsafe {
            driver::launch_kernel(
                info.func,
                [cfg.grid.x, cfg.grid.y, cfg.grid.z],
                [cfg.block.x, cfg.block.y, cfg.block.z],
                cfg.shared_mem_bytes,
                stream,
                &mut raw,
                dependent,
            )
        }
        .map_err(kernel_error)?;
        if gpu.inner.sync_launches.load(Ordering::Relaxed) {
            driver::stream_synchronize(stream).map_err(kernel_error)?;
        }
        Ok(())
    }

    /// Device address and size of the symbol `name`.
    pub(crate) fn symbol(&self, gpu: &Gpu, name: &str) -> Result<(u64, usize)> {
        let c = CString::new(name)
            .map_err(|_| Error::Symbol { name: name.into(), problem: "the name contains a NUL byte".into() })?;
        if !self.symbols.contains_key(name) {
            return Err(Error::Symbol { name: name.into(), problem: "not found in the loaded module".into() });
        }
        gpu.bind()?;
        driver::module_global(self.handle(), &c).map_err(|e| Error::Symbol {
            name: name.into(),
            problem: if e.code == 500 { "not found in the loaded module".into() } else { e.to_string() },
        })
    }

    fn slot(&self, name: &str) -> Result<&Symbol> {
        self.symbols
            .get(name)
            .ok_or_else(|| Error::Symbol { name: name.into(), problem: "not found in the loaded module".into() })
    }

    /// Checks that `want` bytes may be written at the start of a symbol of
    /// `bytes` bytes (`exact`: they must fill it).
    fn check_size(name: &str, bytes: usize, want: usize, exact: bool, count: usize, size: usize) -> Result<()> {
        if (exact && bytes != want) || want > bytes {
            return Err(Error::Symbol {
                name: name.into(),
                problem: format!("holds {bytes} bytes, the host tried to write {want} ({count} × {size} bytes)"),
            });
        }
        Ok(())
    }

    /// Writes `values` to the start of symbol `name` on `gpu`'s stream and
    /// waits for it; `exact` demands that they fill it. Ordered after every
    /// earlier use of the symbol on other streams.
    pub(crate) fn write_symbol<T: DeviceCopy>(&self, gpu: &Gpu, name: &str, values: &[T], exact: bool) -> Result<()> {
        let slot = self.slot(name)?;
        let want = std::mem::size_of_val(values);
        Self::check_size(name, slot.bytes, want, exact, values.len(), std::mem::size_of::<T>())?;
        let (ptr, _) = self.symbol(gpu, name)?;
        let mut tag = slot.tag.lock().unwrap_or_else(|p| p.into_inner());
        // Whoever wrote it last, it holds something else now.
        *tag = None;
        if want == 0 {
            return Ok(());
        }
        slot.track.write(gpu, 0..slot.bytes as u64)?;
        // SAFETY: the symbol spans at least `want` bytes of device memory;
        // the host slice is read before the stream is synchronized below.
        unsafe { driver::memcpy_htod(ptr, values.as_ptr().cast(), want, gpu.raw_stream())? };
        gpu.synchronize()
    }

    /// Runs `launch`, which queues work on `gpu`'s stream that reads the
    /// constant symbol `name`, with the symbol holding the data tagged
    /// `tag`: unless it holds them already, first copies `bytes` bytes at
    /// device address `src` into it, on the same stream. The symbol stays
    /// locked from the check to the end of `launch`, so no other writer
    /// comes between; and the copy waits (on the GPU) for every earlier
    /// use of the symbol on other streams, while `launch`'s work waits for
    /// the last copy. Nothing waits on the host.
    ///
    /// # Safety
    /// `src` holds `bytes` readable bytes of this context until the stream
    /// has passed the copy, and they are the data `tag` stands for.
    pub(crate) unsafe fn with_symbol(
        &self,
        gpu: &Gpu,
        name: &str,
        tag: u64,
        (src, bytes): (DevicePtr, usize),
        launch: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let slot = self.slot(name)?;
        Self::check_size(name, slot.bytes, bytes, false, bytes, 1)?;
        let (ptr, _) = self.symbol(gpu, name)?;
        let mut held = slot.tag.lock().unwrap_or_else(|p| p.into_inner());
        if *held == Some(tag) {
            slot.track.read(gpu, 0..slot.bytes as u64)?;
        } else {
            slot.track.write(gpu, 0..slot.bytes as u64)?;
            *held = None;
            // SAFETY: the symbol spans at least `bytes` bytes (checked);
            // the source is the caller's contract.
            unsafe { driver::memcpy_dtod(ptr, src.0, bytes, gpu.raw_stream())? };
            *held = Some(tag);
        }
        launch()
    }

    pub(crate) fn read_symbol<T: DeviceCopy + Default>(&self, gpu: &Gpu, name: &str) -> Result<Vec<T>> {
        let slot = self.slot(name)?;
        let (ptr, bytes) = self.symbol(gpu, name)?;
        let size = std::mem::size_of::<T>();
        if size == 0 || bytes % size != 0 {
            return Err(Error::Symbol {
                name: name.into(),
                problem: format!("holds {bytes} bytes, not a whole number of {size}-byte elements"),
            });
        }
        let mut out = vec![T::default(); bytes / size];
        let _held = slot.tag.lock().unwrap_or_else(|p| p.into_inner());
        slot.track.read(gpu, 0..slot.bytes as u64)?;
        // SAFETY: `out` spans exactly `bytes` bytes and lives until the
        // synchronize below.
        unsafe { driver::memcpy_dtoh(out.as_mut_ptr().cast(), ptr, bytes, gpu.raw_stream())? };
        gpu.synchronize()?;
        Ok(out)
    }
}

/// A PTX module loaded next to the crate's own (see [`Gpu::load_ptx`]).
///
/// Launches are validated exactly like [`Gpu::launch`]: kernel names and
/// argument sizes against the module's PTX, launch shapes against the
/// device and the kernel.
pub struct PtxModule {
    // Dropped before `gpu`, which keeps the context alive.
    state: ModuleState,
    gpu: Gpu,
}

impl PtxModule {
    pub(crate) fn new(state: ModuleState, gpu: Gpu) -> PtxModule {
        PtxModule { state, gpu }
    }

    /// The kernels this module defines, sorted.
    pub fn kernel_names(&self) -> Vec<&str> {
        self.state.kernel_names()
    }

    /// The kernels of this module that launch as programmatic dependents of
    /// the kernel before them on the stream while
    /// [`Gpu::dependent_launches`] is on: those whose PTX waits for that
    /// grid first ([`crate::ptx::waiting_entries`]), sorted.
    pub fn dependent_kernels(&self) -> Vec<&str> {
        self.state.dependent_names()
    }

    /// What the compiled kernel `name` allows.
    pub fn kernel_limits(&self, name: &'static str) -> Result<KernelLimits> {
        Ok(self.state.kernel_info(&self.gpu, name)?.limits)
    }

    /// Resident blocks per SM for `name` (the driver's occupancy answer).
    pub fn max_active_blocks_per_sm(&self, name: &'static str, threads: u32, dynamic_shared: usize) -> Result<u32> {
        self.state.max_active_blocks_per_sm(&self.gpu, name, threads, dynamic_shared)
    }

    /// Launches kernel `name` of this module on the owning [`Gpu`]'s stream.
    ///
    /// # Safety
    /// As [`Gpu::launch`].
    pub unsafe fn launch(&self, name: &'static str, cfg: &LaunchConfig, args: &[&dyn KernelArg]) -> Result<()> {
        // SAFETY: forwarded to the caller's contract.
        unsafe { self.state.launch(&self.gpu, name, cfg, args) }
    }

    /// Writes `values` into the first bytes of this module's symbol `name`
    /// (`cudaMemcpyToSymbol`); more bytes than it holds is an error.
    pub fn write_symbol_prefix<T: DeviceCopy>(&self, name: &str, values: &[T]) -> Result<()> {
        self.state.write_symbol(&self.gpu, name, values, false)
    }

    /// The [`Gpu`] this module was loaded into.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Byte sizes of kernel `name`'s parameters, in order (read from the
    /// module's PTX).
    pub fn param_sizes(&self, name: &'static str) -> Result<&[usize]> {
        self.state.param_sizes(name)
    }
}

impl std::fmt::Debug for PtxModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PtxModule").field("kernels", &self.state.kernel_names()).finish_non_exhaustive()
    }
}
