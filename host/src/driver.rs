//! Thin checked wrappers over the CUDA driver calls cust 0.3 does not wrap
//! (or wraps without the detail we need): stream-ordered copies and fills,
//! module loading with the JIT log, symbol lookup with its size, function
//! attributes, and error names.
//!
//! The functions are declared here with an integer result instead of
//! cust-raw's Rust enum: a driver newer than those bindings can return codes
//! the enum lacks, and turning such a code into that enum would be undefined
//! behaviour. Every wrapper turns its code into a [`DriverError`] carrying
//! the driver's name and description. This is the only module, with
//! `gpu.rs` and `memory.rs`, that touches the driver directly.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use cust::sys::{CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUmodule, CUstream};

use crate::error::DriverError;

type CuResult = c_int;

#[link(name = "cuda")]
unsafe extern "C" {
    fn cuGetErrorName(error: CuResult, p_str: *mut *const c_char) -> CuResult;
    fn cuGetErrorString(error: CuResult, p_str: *mut *const c_char) -> CuResult;
    fn cuDriverGetVersion(version: *mut c_int) -> CuResult;
    fn cuDeviceGetAttribute(pi: *mut c_int, attrib: c_int, dev: CUdevice) -> CuResult;
    fn cuModuleLoadDataEx(
        module: *mut CUmodule,
        image: *const c_void,
        num_options: c_uint,
        options: *mut c_int,
        option_values: *mut *mut c_void,
    ) -> CuResult;
    fn cuModuleUnload(module: CUmodule) -> CuResult;
    fn cuModuleGetGlobal_v2(
        dptr: *mut CUdeviceptr,
        bytes: *mut usize,
        module: CUmodule,
        name: *const c_char,
    ) -> CuResult;
    fn cuModuleGetFunction(func: *mut CUfunction, module: CUmodule, name: *const c_char) -> CuResult;
    fn cuFuncGetAttribute(pi: *mut c_int, attrib: c_int, func: CUfunction) -> CuResult;
    fn cuFuncSetAttribute(func: CUfunction, attrib: c_int, value: c_int) -> CuResult;
    fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
        num_blocks: *mut c_int,
        func: CUfunction,
        block_size: c_int,
        dynamic_smem: usize,
    ) -> CuResult;
    #[allow(clippy::too_many_arguments)]
    fn cuLaunchKernel(
        f: CUfunction,
        grid_x: c_uint,
        grid_y: c_uint,
        grid_z: c_uint,
        block_x: c_uint,
        block_y: c_uint,
        block_z: c_uint,
        shared_mem_bytes: c_uint,
        stream: CUstream,
        kernel_params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> CuResult;
    fn cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, bytes: usize, stream: CUstream) -> CuResult;
    fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, bytes: usize, stream: CUstream) -> CuResult;
    fn cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream) -> CuResult;
    fn cuMemsetD8Async(dst: CUdeviceptr, value: u8, count: usize, stream: CUstream) -> CuResult;
    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CuResult;
    fn cuStreamSynchronize(stream: CUstream) -> CuResult;
    fn cuStreamCreate(stream: *mut CUstream, flags: c_uint) -> CuResult;
    fn cuStreamDestroy_v2(stream: CUstream) -> CuResult;
    fn cuStreamWaitEvent(stream: CUstream, event: CUevent, flags: c_uint) -> CuResult;
    fn cuEventCreate(event: *mut CUevent, flags: c_uint) -> CuResult;
    fn cuEventDestroy_v2(event: CUevent) -> CuResult;
    fn cuEventRecord(event: CUevent, stream: CUstream) -> CuResult;
    fn cuEventSynchronize(event: CUevent) -> CuResult;
    fn cuEventQuery(event: CUevent) -> CuResult;
    fn cuEventElapsedTime(ms: *mut f32, start: CUevent, end: CUevent) -> CuResult;
    fn cuCtxGetCurrent(ctx: *mut CUcontext) -> CuResult;
    fn cuCtxSetCurrent(ctx: CUcontext) -> CuResult;
    fn cuDevicePrimaryCtxRetain(ctx: *mut CUcontext, dev: CUdevice) -> CuResult;
    fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) -> CuResult;
}

/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`
pub(crate) const ATTR_MAX_SHARED_PER_BLOCK_OPTIN: c_int = 97;
/// `CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR`
pub(crate) const ATTR_MAX_BLOCKS_PER_SM: c_int = 106;
/// `CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK`
pub(crate) const ATTR_RESERVED_SHARED_PER_BLOCK: c_int = 111;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`
const FUNC_ATTR_MAX_DYNAMIC_SHARED: c_int = 8;

/// The driver's static C string for an error code, if it knows the code.
fn static_str(f: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult, code: CuResult) -> Option<String> {
    let mut p: *const c_char = std::ptr::null();
    // SAFETY: the driver writes a pointer to a static NUL-terminated string
    // or returns an error and leaves `p` null.
    unsafe {
        if f(code, &mut p) != 0 || p.is_null() {
            return None;
        }
        Some(CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

/// Builds the error for a failed call `op` that returned `code`. A sticky
/// error (the context is unusable from here on) is also recorded as the
/// fault of the context current on this thread ([`crate::context`]), so
/// that every later call on it reports this first fault.
pub(crate) fn error(op: &'static str, code: u32) -> DriverError {
    let c = code as CuResult;
    let e = DriverError {
        op,
        code,
        name: static_str(cuGetErrorName, c).unwrap_or_else(|| format!("CUDA_ERROR_{code}")),
        description: static_str(cuGetErrorString, c).unwrap_or_else(|| "unknown error code".into()),
    };
    if e.is_sticky() {
        crate::context::record_fault(current_context(), &e, None);
    }
    e
}

/// The context current on this thread (null when none).
pub(crate) fn current_context() -> CUcontext {
    let mut c: CUcontext = std::ptr::null_mut();
    // SAFETY: writes one handle; on failure it stays null.
    if unsafe { cuCtxGetCurrent(&mut c) } != 0 {
        return std::ptr::null_mut();
    }
    c
}

/// Makes `ctx` current on this thread.
pub(crate) fn set_current(ctx: CUcontext) -> Result<(), DriverError> {
    // SAFETY: a handle from cuDevicePrimaryCtxRetain; the driver checks it.
    check("cuCtxSetCurrent", unsafe { cuCtxSetCurrent(ctx) })
}

/// Retains device `dev`'s primary context (one reference, released with
/// [`primary_ctx_release`]).
pub(crate) fn primary_ctx_retain(dev: CUdevice) -> Result<CUcontext, DriverError> {
    let mut c: CUcontext = std::ptr::null_mut();
    // SAFETY: writes one handle.
    check("cuDevicePrimaryCtxRetain", unsafe { cuDevicePrimaryCtxRetain(&mut c, dev) })?;
    Ok(c)
}

/// Releases one reference to device `dev`'s primary context (allowed after
/// a reset too).
pub(crate) fn primary_ctx_release(dev: CUdevice) -> Result<(), DriverError> {
    // SAFETY: balanced with a retain by the caller.
    check("cuDevicePrimaryCtxRelease", unsafe { cuDevicePrimaryCtxRelease_v2(dev) })
}

/// `CU_STREAM_NON_BLOCKING`: does not synchronize with the legacy default
/// stream.
pub(crate) const STREAM_NON_BLOCKING: c_uint = 1;
/// `CU_EVENT_DISABLE_TIMING`
pub(crate) const EVENT_DISABLE_TIMING: c_uint = 2;

/// A new stream in the current context.
pub(crate) fn stream_create(flags: c_uint) -> Result<CUstream, DriverError> {
    let mut s: CUstream = std::ptr::null_mut();
    // SAFETY: writes one handle.
    check("cuStreamCreate", unsafe { cuStreamCreate(&mut s, flags) })?;
    Ok(s)
}

/// Destroys a stream (the driver finishes its queued work first).
///
/// # Safety
/// `s` came from [`stream_create`] in a live context and is destroyed once.
pub(crate) unsafe fn stream_destroy(s: CUstream) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuStreamDestroy", unsafe { cuStreamDestroy_v2(s) })
}

/// Makes work queued on `s` from now on wait for `e` (no host wait).
pub(crate) fn stream_wait_event(s: CUstream, e: CUevent) -> Result<(), DriverError> {
    // SAFETY: handles owned by live objects of one context.
    check("cuStreamWaitEvent", unsafe { cuStreamWaitEvent(s, e, 0) })
}

/// A new event in the current context.
pub(crate) fn event_create(flags: c_uint) -> Result<CUevent, DriverError> {
    let mut e: CUevent = std::ptr::null_mut();
    // SAFETY: writes one handle.
    check("cuEventCreate", unsafe { cuEventCreate(&mut e, flags) })?;
    Ok(e)
}

/// Destroys an event (released once any wait on it is satisfied).
///
/// # Safety
/// `e` came from [`event_create`] in a live context and is destroyed once.
pub(crate) unsafe fn event_destroy(e: CUevent) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuEventDestroy", unsafe { cuEventDestroy_v2(e) })
}

/// Records `e` at the current end of stream `s`.
pub(crate) fn event_record(e: CUevent, s: CUstream) -> Result<(), DriverError> {
    // SAFETY: handles owned by live objects of one context.
    check("cuEventRecord", unsafe { cuEventRecord(e, s) })
}

/// Waits until `e` has completed.
pub(crate) fn event_synchronize(e: CUevent) -> Result<(), DriverError> {
    // SAFETY: a live event handle.
    check("cuEventSynchronize", unsafe { cuEventSynchronize(e) })
}

/// True when `e` has completed (`CUDA_ERROR_NOT_READY`: false).
pub(crate) fn event_query(e: CUevent) -> Result<bool, DriverError> {
    // SAFETY: a live event handle.
    match unsafe { cuEventQuery(e) } {
        0 => Ok(true),
        600 => Ok(false),
        code => Err(error("cuEventQuery", code as u32)),
    }
}

/// Milliseconds from `start` to `end` (both completed, timing enabled).
pub(crate) fn event_elapsed_ms(start: CUevent, end: CUevent) -> Result<f32, DriverError> {
    let mut ms = 0f32;
    // SAFETY: live event handles; writes one float.
    check("cuEventElapsedTime", unsafe { cuEventElapsedTime(&mut ms, start, end) })?;
    Ok(ms)
}

/// `Ok` for `CUDA_SUCCESS`, the named error otherwise.
pub(crate) fn check(op: &'static str, code: CuResult) -> Result<(), DriverError> {
    if code == 0 { Ok(()) } else { Err(error(op, code as u32)) }
}

/// Converts cust's error into ours (same code, the driver's own strings).
pub(crate) fn from_cust(op: &'static str, e: cust::error::CudaError) -> DriverError {
    error(op, e as u32)
}

/// The installed driver's CUDA version (e.g. 13000 for 13.0).
pub(crate) fn driver_version() -> Result<i32, DriverError> {
    let mut v = 0;
    // SAFETY: writes one int.
    check("cuDriverGetVersion", unsafe { cuDriverGetVersion(&mut v) })?;
    Ok(v)
}

/// A device attribute by its raw `CUdevice_attribute` number (for those
/// cust's enum lacks).
pub(crate) fn device_attribute(dev: CUdevice, attr: c_int) -> Result<i32, DriverError> {
    let mut v = 0;
    // SAFETY: writes one int; an unknown attribute is reported as an error.
    check("cuDeviceGetAttribute", unsafe { cuDeviceGetAttribute(&mut v, attr, dev) })?;
    Ok(v)
}

/// A loaded module (`CUmodule`), unloaded on drop. Its context must be
/// current when it is dropped (the owning `Gpu` sees to that).
pub(crate) struct ModuleHandle(CUmodule);

// SAFETY: a module handle may be used from any thread of its context.
unsafe impl Send for ModuleHandle {}
// SAFETY: as above; the driver synchronizes access.
unsafe impl Sync for ModuleHandle {}

impl Drop for ModuleHandle {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful load and is unloaded once.
        unsafe { cuModuleUnload(self.0) };
    }
}

/// Loads (JIT-compiles) `ptx` into the current context, capturing the JIT's
/// error and info logs. On failure returns the error and the log text.
pub(crate) fn load_module(ptx: &CStr) -> Result<ModuleHandle, (DriverError, String)> {
    const LOG: usize = 16 * 1024;
    let mut err_log = vec![0u8; LOG];
    let mut info_log = vec![0u8; LOG];
    // CU_JIT_INFO_LOG_BUFFER = 3, ..._SIZE_BYTES = 4, ERROR_LOG_BUFFER = 5, ..._SIZE_BYTES = 6
    let mut opts: [c_int; 4] = [3, 4, 5, 6];
    let mut vals: [*mut c_void; 4] =
        [info_log.as_mut_ptr().cast(), LOG as *mut c_void, err_log.as_mut_ptr().cast(), LOG as *mut c_void];
    let mut module: CUmodule = std::ptr::null_mut();
    // SAFETY: option arrays and buffers outlive the call; sizes match.
    let code = unsafe { cuModuleLoadDataEx(&mut module, ptx.as_ptr().cast(), 4, opts.as_mut_ptr(), vals.as_mut_ptr()) };
    match check("cuModuleLoadDataEx", code) {
        Ok(()) => Ok(ModuleHandle(module)),
        Err(e) => {
            let text = |b: &[u8]| {
                String::from_utf8_lossy(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]).into_owned()
            };
            let log = [text(&err_log), text(&info_log)]
                .into_iter()
                .filter(|s| !s.trim().is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            Err((e, log))
        }
    }
}

/// A kernel entry point of `module` (valid while the module is loaded).
pub(crate) fn module_function(module: &ModuleHandle, name: &CStr) -> Result<CUfunction, DriverError> {
    let mut f: CUfunction = std::ptr::null_mut();
    // SAFETY: valid module handle, NUL-terminated name.
    check("cuModuleGetFunction", unsafe { cuModuleGetFunction(&mut f, module.0, name.as_ptr()) })?;
    Ok(f)
}

/// `CUfunction_attribute` numbers used here.
pub(crate) mod func_attr {
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`
    pub const MAX_THREADS_PER_BLOCK: i32 = 0;
    /// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`
    pub const SHARED_SIZE_BYTES: i32 = 1;
    /// `CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`
    pub const LOCAL_SIZE_BYTES: i32 = 3;
    /// `CU_FUNC_ATTRIBUTE_NUM_REGS`
    pub const NUM_REGS: i32 = 4;
}

/// A function attribute (registers, static shared memory, …).
pub(crate) fn function_attribute(f: CUfunction, attr: c_int) -> Result<i32, DriverError> {
    let mut v = 0;
    // SAFETY: valid function handle; writes one int.
    check("cuFuncGetAttribute", unsafe { cuFuncGetAttribute(&mut v, attr, f) })?;
    Ok(v)
}

/// Resident blocks per SM the driver computes for `f`.
pub(crate) fn occupancy_blocks_per_sm(f: CUfunction, threads: u32, dynamic_shared: usize) -> Result<u32, DriverError> {
    let mut n = 0;
    // SAFETY: valid function handle; writes one int.
    check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
        cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, threads as c_int, dynamic_shared)
    })?;
    Ok(n.max(0) as u32)
}

/// `CUlaunchAttribute` (CUDA 12): an attribute's id, padding to 8 bytes,
/// and its value, a 64-byte union.
#[repr(C)]
struct LaunchAttribute {
    id: c_int,
    pad: [u8; 4],
    value: [u64; 8],
}

/// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`.
const LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION: c_int = 6;

/// `CUlaunchConfig` (CUDA 12).
#[repr(C)]
struct LaunchConfigEx {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem_bytes: c_uint,
    stream: CUstream,
    attrs: *mut LaunchAttribute,
    num_attrs: c_uint,
}

/// `cuLaunchKernelEx` (cuda.h, CUDA 12).
type LaunchKernelEx =
    unsafe extern "C" fn(*const LaunchConfigEx, CUfunction, *mut *mut c_void, *mut *mut c_void) -> CuResult;

/// `cuLaunchKernelEx`, looked up in the loaded driver library at first use:
/// drivers from CUDA 12.0 on have it, and linking it would keep the library
/// from loading with older ones (the sm_70 and sm_80 PTX run on CUDA 11
/// drivers). `None` where the driver lacks it.
fn launch_kernel_ex() -> Option<LaunchKernelEx> {
    static FOUND: std::sync::OnceLock<Option<LaunchKernelEx>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        #[cfg(unix)]
        {
            // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the
            // objects already loaded, the driver library among them.
            let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"cuLaunchKernelEx".as_ptr()) };
            // SAFETY: the driver's `cuLaunchKernelEx` has this signature.
            (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, LaunchKernelEx>(p) })
        }
        #[cfg(not(unix))]
        None
    })
}

/// Whether the driver has `cuLaunchKernelEx` (dependent launches).
pub(crate) fn dependent_launch_available() -> bool {
    launch_kernel_ex().is_some()
}

/// Queues a kernel launch on `stream`. A `dependent` launch may start
/// while the kernel before it on the stream drains
/// (`cuLaunchKernelEx` with programmatic stream serialization): its
/// kernel must wait for that grid (`griddepcontrol.wait`) before it
/// touches global memory. Where the driver has no `cuLaunchKernelEx`
/// the launch is a plain one.
///
/// # Safety
/// `params` must point to one value per kernel parameter, each of the
/// parameter's type, alive for the duration of the call; the values must
/// satisfy the kernel's contract; a `dependent` kernel waits as above.
pub(crate) unsafe fn launch_kernel(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    stream: CUstream,
    params: &mut [*mut c_void],
    dependent: bool,
) -> Result<(), DriverError> {
    if dependent && let Some(launch_ex) = launch_kernel_ex() {
        let mut attr =
            LaunchAttribute { id: LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION, pad: [0; 4], value: [0; 8] };
        // `programmaticStreamSerializationAllowed`, an int at the union's
        // start.
        attr.value[0] = 1;
        let config = LaunchConfigEx { grid, block, shared_mem_bytes, stream, attrs: &mut attr, num_attrs: 1 };
        // SAFETY: forwarded to the caller's contract; `config` and `attr`
        // outlive the call.
        return check("cuLaunchKernelEx", unsafe { launch_ex(&config, f, params.as_mut_ptr(), std::ptr::null_mut()) });
    }
    // SAFETY: forwarded to the caller's contract.
    check("cuLaunchKernel", unsafe {
        cuLaunchKernel(
            f,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            shared_mem_bytes,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    })
}

/// Address and size in bytes of a module-level symbol.
pub(crate) fn module_global(module: &ModuleHandle, name: &CStr) -> Result<(CUdeviceptr, usize), DriverError> {
    let (mut ptr, mut bytes) = (0, 0);
    // SAFETY: valid module handle, NUL-terminated name.
    check("cuModuleGetGlobal", unsafe { cuModuleGetGlobal_v2(&mut ptr, &mut bytes, module.0, name.as_ptr()) })?;
    Ok((ptr, bytes))
}

/// Allows a kernel up to `bytes` of dynamic shared memory (needed above the
/// default 48 KiB per block).
pub(crate) fn set_max_dynamic_shared(func: CUfunction, bytes: u32) -> Result<(), DriverError> {
    // SAFETY: valid function handle; the driver validates the value.
    check("cuFuncSetAttribute", unsafe { cuFuncSetAttribute(func, FUNC_ATTR_MAX_DYNAMIC_SHARED, bytes as c_int) })
}

/// Stream-ordered host → device copy.
///
/// # Safety
/// `dst` must be a device allocation of at least `bytes` bytes, `src` valid
/// for reads of `bytes` bytes until the stream has passed the copy.
pub(crate) unsafe fn memcpy_htod(
    dst: CUdeviceptr,
    src: *const c_void,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuMemcpyHtoDAsync", unsafe { cuMemcpyHtoDAsync_v2(dst, src, bytes, stream) })
}

/// Stream-ordered device → host copy.
///
/// # Safety
/// `src` must be a device allocation of at least `bytes` bytes, `dst` valid
/// for writes of `bytes` bytes until the stream has passed the copy.
pub(crate) unsafe fn memcpy_dtoh(
    dst: *mut c_void,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuMemcpyDtoHAsync", unsafe { cuMemcpyDtoHAsync_v2(dst, src, bytes, stream) })
}

/// Stream-ordered device → device copy (the driver's own copy engine path:
/// the reference every copy kernel is measured against).
///
/// # Safety
/// Both ranges must lie in live device allocations of this context.
pub(crate) unsafe fn memcpy_dtod(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuMemcpyDtoDAsync", unsafe { cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) })
}

/// Stream-ordered byte fill.
///
/// # Safety
/// The range must lie in a live device allocation of this context.
pub(crate) unsafe fn memset_d8(dst: CUdeviceptr, value: u8, bytes: usize, stream: CUstream) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuMemsetD8Async", unsafe { cuMemsetD8Async(dst, value, bytes, stream) })
}

/// Waits for everything queued on `stream`.
pub(crate) fn stream_synchronize(stream: CUstream) -> Result<(), DriverError> {
    // SAFETY: the stream handle is owned by a live `Gpu`.
    check("cuStreamSynchronize", unsafe { cuStreamSynchronize(stream) })
}

/// Free and total device memory of the current context's device, in bytes.
pub(crate) fn mem_info() -> Result<(usize, usize), DriverError> {
    let (mut free, mut total) = (0, 0);
    // SAFETY: writes two integers.
    check("cuMemGetInfo", unsafe { cuMemGetInfo_v2(&mut free, &mut total) })?;
    Ok((free, total))
}

// Pitched 2D memory: allocation, free and 2D copies (`pitched.rs`).

#[link(name = "cuda")]
unsafe extern "C" {
    fn cuMemAllocPitch_v2(
        dptr: *mut CUdeviceptr,
        pitch: *mut usize,
        width_bytes: usize,
        height: usize,
        element_size_bytes: c_uint,
    ) -> CuResult;
    fn cuMemFree_v2(dptr: CUdeviceptr) -> CuResult;
    fn cuMemcpy2DAsync_v2(copy: *const Memcpy2D, stream: CUstream) -> CuResult;
    fn cuMemcpy2DUnaligned_v2(copy: *const Memcpy2D) -> CuResult;
    fn cuCtxSynchronize() -> CuResult;
}

/// `CU_MEMORYTYPE_HOST`
pub(crate) const MEMORYTYPE_HOST: c_uint = 1;
/// `CU_MEMORYTYPE_DEVICE`
pub(crate) const MEMORYTYPE_DEVICE: c_uint = 2;

/// `CUDA_MEMCPY2D` (the `_v2` ABI, `cuda.h` since CUDA 3.2): one side of a
/// copy is `{X in bytes, Y in rows, memory type, host pointer, device
/// pointer, array, pitch in bytes}`, then the extent `WidthInBytes ×
/// Height`. Every `size_t` is 64 bits; the memory type is a C enum (32
/// bits, then 4 bytes of padding before the pointer). 128 bytes in all,
/// field for field the layout of cust-raw's bindgen `CUDA_MEMCPY2D_st`
/// (checked by a unit test).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memcpy2D {
    pub src_x_in_bytes: usize,
    pub src_y: usize,
    pub src_memory_type: c_uint,
    pub src_host: *const c_void,
    pub src_device: CUdeviceptr,
    pub src_array: *mut c_void,
    pub src_pitch: usize,
    pub dst_x_in_bytes: usize,
    pub dst_y: usize,
    pub dst_memory_type: c_uint,
    pub dst_host: *mut c_void,
    pub dst_device: CUdeviceptr,
    pub dst_array: *mut c_void,
    pub dst_pitch: usize,
    pub width_in_bytes: usize,
    pub height: usize,
}

/// Pitched allocation: returns the base address and the pitch in bytes.
/// `element_size` must be 4, 8 or 16 (the driver refuses other values).
pub(crate) fn mem_alloc_pitch(
    width_bytes: usize,
    height: usize,
    element_size: u32,
) -> Result<(CUdeviceptr, usize), DriverError> {
    let (mut ptr, mut pitch) = (0, 0);
    // SAFETY: writes one address and one size; the context is current.
    check("cuMemAllocPitch", unsafe { cuMemAllocPitch_v2(&mut ptr, &mut pitch, width_bytes, height, element_size) })?;
    Ok((ptr, pitch))
}

/// Frees a device allocation.
///
/// # Safety
/// `ptr` must come from an allocation of the current context, freed once.
pub(crate) unsafe fn mem_free(ptr: CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuMemFree", unsafe { cuMemFree_v2(ptr) })
}

/// Stream-ordered 2D copy.
///
/// # Safety
/// Every row of both sides (`Height` rows of `WidthInBytes` from X, Y at
/// their pitch) must lie in live memory of the given type, host memory
/// valid until the stream has passed the copy.
pub(crate) unsafe fn memcpy_2d(copy: &Memcpy2D, stream: CUstream) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract; the struct has the
    // driver's layout.
    check("cuMemcpy2DAsync", unsafe { cuMemcpy2DAsync_v2(copy, stream) })
}

/// 2D copy for any pitches, then a wait for the whole context: device to
/// device, `cuMemcpy2D` "may fail for pitches not computed by
/// cuMemAllocPitch" (a linear buffer's row length), `cuMemcpy2DUnaligned`
/// does not. It runs on the legacy default stream and does not wait for a
/// device-to-device copy to finish, hence the context synchronize.
///
/// # Safety
/// As [`memcpy_2d`]; work queued on other streams that touches the same
/// memory must have completed.
pub(crate) unsafe fn memcpy_2d_unaligned(copy: &Memcpy2D) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuMemcpy2DUnaligned", unsafe { cuMemcpy2DUnaligned_v2(copy) })?;
    // SAFETY: no arguments; waits for all work of the current context.
    check("cuCtxSynchronize", unsafe { cuCtxSynchronize() })
}

#[cfg(test)]
mod memcpy2d_layout {
    use std::mem::{align_of, offset_of, size_of};

    use cust::sys::CUDA_MEMCPY2D_st as C;

    use super::Memcpy2D as M;

    #[test]
    fn matches_the_driver_header() {
        assert_eq!((size_of::<M>(), align_of::<M>()), (128, 8));
        assert_eq!((size_of::<C>(), align_of::<C>()), (128, 8));
        let ours = [
            offset_of!(M, src_x_in_bytes),
            offset_of!(M, src_y),
            offset_of!(M, src_memory_type),
            offset_of!(M, src_host),
            offset_of!(M, src_device),
            offset_of!(M, src_array),
            offset_of!(M, src_pitch),
            offset_of!(M, dst_x_in_bytes),
            offset_of!(M, dst_y),
            offset_of!(M, dst_memory_type),
            offset_of!(M, dst_host),
            offset_of!(M, dst_device),
            offset_of!(M, dst_array),
            offset_of!(M, dst_pitch),
            offset_of!(M, width_in_bytes),
            offset_of!(M, height),
        ];
        let theirs = [
            offset_of!(C, srcXInBytes),
            offset_of!(C, srcY),
            offset_of!(C, srcMemoryType),
            offset_of!(C, srcHost),
            offset_of!(C, srcDevice),
            offset_of!(C, srcArray),
            offset_of!(C, srcPitch),
            offset_of!(C, dstXInBytes),
            offset_of!(C, dstY),
            offset_of!(C, dstMemoryType),
            offset_of!(C, dstHost),
            offset_of!(C, dstDevice),
            offset_of!(C, dstArray),
            offset_of!(C, dstPitch),
            offset_of!(C, WidthInBytes),
            offset_of!(C, Height),
        ];
        assert_eq!(ours, theirs);
        assert_eq!(ours, [0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120]);
        assert_eq!(super::MEMORYTYPE_HOST, cust::sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32);
        assert_eq!(super::MEMORYTYPE_DEVICE, cust::sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32);
    }
}

#[link(name = "cuda")]
unsafe extern "C" {
    fn cuOccupancyMaxPotentialBlockSize(
        min_grid_size: *mut c_int,
        block_size: *mut c_int,
        func: CUfunction,
        block_size_to_dynamic_smem: Option<unsafe extern "C" fn(c_int) -> usize>,
        dynamic_smem: usize,
        block_size_limit: c_int,
    ) -> CuResult;
}

/// The driver's suggested launch for `f` with a fixed `dynamic_shared`
/// bytes per block: `(minimum grid for full occupancy, block size)`
/// (`cuOccupancyMaxPotentialBlockSize`, no block-size limit).
pub(crate) fn occupancy_max_potential_block_size(
    f: CUfunction,
    dynamic_shared: usize,
) -> Result<(u32, u32), DriverError> {
    let (mut grid, mut block) = (0, 0);
    // SAFETY: valid function handle; writes two ints; no callback.
    check("cuOccupancyMaxPotentialBlockSize", unsafe {
        cuOccupancyMaxPotentialBlockSize(&mut grid, &mut block, f, None, dynamic_shared, 0)
    })?;
    Ok((grid.max(0) as u32, block.max(0) as u32))
}

// Page-locked and mapped host memory (`transfer.rs`).

#[link(name = "cuda")]
unsafe extern "C" {
    fn cuMemHostAlloc(pp: *mut *mut c_void, bytes: usize, flags: c_uint) -> CuResult;
    fn cuMemFreeHost(p: *mut c_void) -> CuResult;
    fn cuPointerGetAttributes(count: c_uint, attributes: *mut c_int, data: *mut *mut c_void, ptr: u64) -> CuResult;
    fn cuMemHostGetDevicePointer_v2(dptr: *mut CUdeviceptr, p: *mut c_void, flags: c_uint) -> CuResult;
}

/// `CU_MEMHOSTALLOC_PORTABLE`: page-locked for every context, not only the
/// allocating one.
pub(crate) const MEMHOSTALLOC_PORTABLE: c_uint = 0x01;
/// `CU_MEMHOSTALLOC_DEVICEMAP`: mapped into the device's address space
/// (zero-copy); its device address comes from `cuMemHostGetDevicePointer`.
pub(crate) const MEMHOSTALLOC_DEVICEMAP: c_uint = 0x02;
/// `CU_MEMHOSTALLOC_WRITECOMBINED`: write-combined (fast for the host to
/// write and the device to read, very slow for the host to read).
pub(crate) const MEMHOSTALLOC_WRITECOMBINED: c_uint = 0x04;

/// Allocates `bytes` (> 0) of page-locked host memory with `flags` in the
/// current context.
pub(crate) fn mem_host_alloc(bytes: usize, flags: c_uint) -> Result<*mut c_void, DriverError> {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: writes one pointer; the context is current.
    check("cuMemHostAlloc", unsafe { cuMemHostAlloc(&mut p, bytes, flags) })?;
    if p.is_null() {
        return Err(error("cuMemHostAlloc", 2));
    }
    Ok(p)
}

/// Whether `p` lies in page-locked host memory the driver knows
/// (`CU_POINTER_ATTRIBUTE_MEMORY_TYPE` is host memory). The plural call
/// answers "unknown" for ordinary pageable memory instead of failing, so
/// the probe raises no API error (nothing for compute-sanitizer to report).
pub(crate) fn host_is_page_locked(p: *const c_void) -> bool {
    const MEMORY_TYPE: c_int = 2; // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
    const HOST: c_uint = 1; // CU_MEMORYTYPE_HOST
    let mut kind: c_uint = 0;
    let mut attribute = MEMORY_TYPE;
    let mut data = [(&mut kind as *mut c_uint).cast::<c_void>()];
    // SAFETY: one attribute, one 4-byte result slot; `p` is only looked
    // up, never dereferenced.
    let ok = unsafe { cuPointerGetAttributes(1, &mut attribute, data.as_mut_ptr(), p as u64) } == 0;
    ok && kind == HOST
}

/// Frees page-locked host memory.
///
/// # Safety
/// `p` must come from [`mem_host_alloc`], be freed once and not be used
/// afterwards (by the host or by queued device work).
pub(crate) unsafe fn mem_free_host(p: *mut c_void) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuMemFreeHost", unsafe { cuMemFreeHost(p) })
}

/// The device address of mapped page-locked host memory at `p`.
///
/// # Safety
/// `p` must lie in an allocation made with [`MEMHOSTALLOC_DEVICEMAP`].
pub(crate) unsafe fn mem_host_device_pointer(p: *mut c_void) -> Result<CUdeviceptr, DriverError> {
    let mut d: CUdeviceptr = 0;
    // SAFETY: writes one address; flags must be 0.
    check("cuMemHostGetDevicePointer", unsafe { cuMemHostGetDevicePointer_v2(&mut d, p, 0) })?;
    Ok(d)
}

// Texture memory: CUDA arrays and texture objects (`texture.rs`).

#[link(name = "cuda")]
unsafe extern "C" {
    fn cuArrayCreate_v2(handle: *mut CUarray, desc: *const ArrayDescriptor) -> CuResult;
    fn cuArrayDestroy(handle: CUarray) -> CuResult;
    fn cuTexObjectCreate(
        tex: *mut u64,
        res: *const ResourceDesc,
        tex_desc: *const TexDesc,
        view: *const c_void,
    ) -> CuResult;
    fn cuTexObjectDestroy(tex: u64) -> CuResult;
}

/// A CUDA array handle (`CUarray`).
pub(crate) type CUarray = *mut c_void;

/// `CU_MEMORYTYPE_ARRAY`
pub(crate) const MEMORYTYPE_ARRAY: c_uint = 3;
/// `CU_RESOURCE_TYPE_ARRAY`
pub(crate) const RESOURCE_TYPE_ARRAY: c_uint = 0;
/// `CU_RESOURCE_TYPE_PITCH2D`
pub(crate) const RESOURCE_TYPE_PITCH2D: c_uint = 3;
/// `CU_TRSF_NORMALIZED_COORDINATES`
pub(crate) const TRSF_NORMALIZED_COORDINATES: c_uint = 2;

/// `CUDA_ARRAY_DESCRIPTOR` (the `_v2` ABI): width and height in elements,
/// the `CUarray_format` and the channels per element. 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArrayDescriptor {
    pub width: usize,
    pub height: usize,
    pub format: c_uint,
    pub num_channels: c_uint,
}

/// The `array` member of `CUDA_RESOURCE_DESC`'s union.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResourceArray {
    pub array: CUarray,
}

/// The `pitch2D` member of `CUDA_RESOURCE_DESC`'s union.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResourcePitch2d {
    pub device: CUdeviceptr,
    pub format: c_uint,
    pub num_channels: c_uint,
    pub width: usize,
    pub height: usize,
    pub pitch_in_bytes: usize,
}

/// `CUDA_RESOURCE_DESC`'s union: 128 bytes (its `reserved` member is 32
/// ints), 8-byte aligned.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union ResourceUnion {
    pub array: ResourceArray,
    pub pitch2d: ResourcePitch2d,
    pub reserved: [c_int; 32],
}

/// `CUDA_RESOURCE_DESC`: the resource type (a C enum, then 4 bytes of
/// padding), the 128-byte union, the flags (then 4 bytes of padding). 144
/// bytes; checked against cust-raw's bindgen layout by a unit test.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ResourceDesc {
    pub res_type: c_uint,
    pub res: ResourceUnion,
    pub flags: c_uint,
}

/// `CUDA_TEXTURE_DESC`: address mode per dimension, filter mode, flags,
/// anisotropy, the mipmap fields, the border colour and 12 reserved ints.
/// 104 bytes; checked against cust-raw's bindgen layout by a unit test.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct TexDesc {
    pub address_mode: [c_uint; 3],
    pub filter_mode: c_uint,
    pub flags: c_uint,
    pub max_anisotropy: c_uint,
    pub mipmap_filter_mode: c_uint,
    pub mipmap_level_bias: f32,
    pub min_mipmap_level_clamp: f32,
    pub max_mipmap_level_clamp: f32,
    pub border_color: [f32; 4],
    pub reserved: [c_int; 12],
}

/// Creates a CUDA array in the current context.
pub(crate) fn array_create(desc: &ArrayDescriptor) -> Result<CUarray, DriverError> {
    let mut handle: CUarray = std::ptr::null_mut();
    // SAFETY: the descriptor has the driver's layout; writes one handle.
    check("cuArrayCreate", unsafe { cuArrayCreate_v2(&mut handle, desc) })?;
    Ok(handle)
}

/// Destroys a CUDA array.
///
/// # Safety
/// `handle` came from [`array_create`] in the current context, is
/// destroyed once, and no texture object or pending work uses it.
pub(crate) unsafe fn array_destroy(handle: CUarray) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuArrayDestroy", unsafe { cuArrayDestroy(handle) })
}

/// Creates a texture object over the resource `res`.
///
/// # Safety
/// The resource (array or pitched memory) is live in the current context
/// and outlives the texture object.
pub(crate) unsafe fn tex_object_create(res: &ResourceDesc, desc: &TexDesc) -> Result<u64, DriverError> {
    let mut tex = 0u64;
    // SAFETY: forwarded to the caller's contract; both descriptors have
    // the driver's layout; no resource view.
    check("cuTexObjectCreate", unsafe { cuTexObjectCreate(&mut tex, res, desc, std::ptr::null()) })?;
    Ok(tex)
}

/// Destroys a texture object.
///
/// # Safety
/// `tex` came from [`tex_object_create`], is destroyed once, and no
/// pending work uses it.
pub(crate) unsafe fn tex_object_destroy(tex: u64) -> Result<(), DriverError> {
    // SAFETY: forwarded to the caller's contract.
    check("cuTexObjectDestroy", unsafe { cuTexObjectDestroy(tex) })
}

#[cfg(test)]
mod texture_layout {
    use std::mem::{align_of, offset_of, size_of};

    use cust::sys::{CUDA_ARRAY_DESCRIPTOR_st, CUDA_RESOURCE_DESC_st, CUDA_TEXTURE_DESC_st};

    use super::{ArrayDescriptor, ResourceDesc, ResourcePitch2d, TexDesc};

    #[test]
    fn array_descriptor_matches_the_driver_header() {
        type C = CUDA_ARRAY_DESCRIPTOR_st;
        assert_eq!((size_of::<ArrayDescriptor>(), align_of::<ArrayDescriptor>()), (24, 8));
        assert_eq!((size_of::<C>(), align_of::<C>()), (24, 8));
        let ours = [
            offset_of!(ArrayDescriptor, width),
            offset_of!(ArrayDescriptor, height),
            offset_of!(ArrayDescriptor, format),
            offset_of!(ArrayDescriptor, num_channels),
        ];
        assert_eq!(
            ours,
            [offset_of!(C, Width), offset_of!(C, Height), offset_of!(C, Format), offset_of!(C, NumChannels)]
        );
        assert_eq!(ours, [0, 8, 16, 20]);
    }

    #[test]
    fn resource_descriptor_matches_the_driver_header() {
        type C = CUDA_RESOURCE_DESC_st;
        assert_eq!((size_of::<ResourceDesc>(), align_of::<ResourceDesc>()), (144, 8));
        assert_eq!((size_of::<C>(), align_of::<C>()), (144, 8));
        assert_eq!(
            [offset_of!(ResourceDesc, res_type), offset_of!(ResourceDesc, res), offset_of!(ResourceDesc, flags)],
            [offset_of!(C, resType), offset_of!(C, res), offset_of!(C, flags)]
        );
        assert_eq!(offset_of!(ResourceDesc, res), 8);
        // The pitch2D member, field for field.
        type P = cust::sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_4;
        assert_eq!(size_of::<ResourcePitch2d>(), size_of::<P>());
        let ours = [
            offset_of!(ResourcePitch2d, device),
            offset_of!(ResourcePitch2d, format),
            offset_of!(ResourcePitch2d, num_channels),
            offset_of!(ResourcePitch2d, width),
            offset_of!(ResourcePitch2d, height),
            offset_of!(ResourcePitch2d, pitch_in_bytes),
        ];
        let theirs = [
            offset_of!(P, devPtr),
            offset_of!(P, format),
            offset_of!(P, numChannels),
            offset_of!(P, width),
            offset_of!(P, height),
            offset_of!(P, pitchInBytes),
        ];
        assert_eq!(ours, theirs);
        assert_eq!(ours, [0, 8, 12, 16, 24, 32]);
        assert_eq!(super::RESOURCE_TYPE_ARRAY, cust::sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY as u32);
        assert_eq!(super::RESOURCE_TYPE_PITCH2D, cust::sys::CUresourcetype::CU_RESOURCE_TYPE_PITCH2D as u32);
        assert_eq!(super::MEMORYTYPE_ARRAY, cust::sys::CUmemorytype::CU_MEMORYTYPE_ARRAY as u32);
    }

    #[test]
    fn texture_descriptor_matches_the_driver_header() {
        type C = CUDA_TEXTURE_DESC_st;
        assert_eq!((size_of::<TexDesc>(), align_of::<TexDesc>()), (104, 4));
        assert_eq!((size_of::<C>(), align_of::<C>()), (104, 4));
        let ours = [
            offset_of!(TexDesc, address_mode),
            offset_of!(TexDesc, filter_mode),
            offset_of!(TexDesc, flags),
            offset_of!(TexDesc, max_anisotropy),
            offset_of!(TexDesc, mipmap_filter_mode),
            offset_of!(TexDesc, mipmap_level_bias),
            offset_of!(TexDesc, min_mipmap_level_clamp),
            offset_of!(TexDesc, max_mipmap_level_clamp),
            offset_of!(TexDesc, border_color),
            offset_of!(TexDesc, reserved),
        ];
        let theirs = [
            offset_of!(C, addressMode),
            offset_of!(C, filterMode),
            offset_of!(C, flags),
            offset_of!(C, maxAnisotropy),
            offset_of!(C, mipmapFilterMode),
            offset_of!(C, mipmapLevelBias),
            offset_of!(C, minMipmapLevelClamp),
            offset_of!(C, maxMipmapLevelClamp),
            offset_of!(C, borderColor),
            offset_of!(C, reserved),
        ];
        assert_eq!(ours, theirs);
        assert_eq!(ours, [0, 12, 16, 20, 24, 28, 32, 36, 40, 56]);
        assert_eq!(super::TRSF_NORMALIZED_COORDINATES, cust::sys::CU_TRSF_NORMALIZED_COORDINATES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_config_ex_has_cuda_h_layout() {
        // cuda.h (CUDA 12): the attribute is an int id, 4 bytes of padding
        // and a 64-byte union; the configuration six grid and block
        // dimensions, the shared bytes, then the stream, the attributes
        // and their count at offsets 32, 40 and 48.
        assert_eq!((size_of::<LaunchAttribute>(), align_of::<LaunchAttribute>()), (72, 8));
        assert_eq!(std::mem::offset_of!(LaunchAttribute, value), 8);
        assert_eq!(size_of::<LaunchConfigEx>(), 56);
        assert_eq!(std::mem::offset_of!(LaunchConfigEx, shared_mem_bytes), 24);
        assert_eq!(std::mem::offset_of!(LaunchConfigEx, stream), 32);
        assert_eq!(std::mem::offset_of!(LaunchConfigEx, attrs), 40);
        assert_eq!(std::mem::offset_of!(LaunchConfigEx, num_attrs), 48);
    }

    #[test]
    fn cuda_12_drivers_have_launch_kernel_ex() {
        // The driver library answers its version without a GPU.
        let Ok(version) = driver_version() else {
            eprintln!("SKIPPED: no driver library answered cuDriverGetVersion");
            return;
        };
        if version >= 12000 {
            assert!(launch_kernel_ex().is_some(), "driver {version} has no cuLaunchKernelEx");
        }
    }
}
