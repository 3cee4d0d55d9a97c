//! One error type for the whole library: what went wrong, in which
//! operation, with which values.

use crate::launch::{LaunchConfig, LaunchLimit};

/// Result alias used throughout the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failed CUDA driver call, with the driver's own name and description
/// of the code (`cuGetErrorName`, `cuGetErrorString`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{op} failed: {name} ({code}): {description}")]
pub struct DriverError {
    /// The driver call or library operation that failed (`cuMemAlloc`, …).
    pub op: &'static str,
    /// The raw `CUresult` code.
    pub code: u32,
    /// The driver's name for the code (`CUDA_ERROR_OUT_OF_MEMORY`).
    pub name: String,
    /// The driver's description of the code.
    pub description: String,
}

impl DriverError {
    /// Errors after which the context is unusable: every later call fails
    /// with the same code until the process restarts.
    pub fn is_sticky(&self) -> bool {
        matches!(self.code, 700 | 714 | 715 | 716 | 717 | 718 | 719)
    }
}

/// Everything that can go wrong in `coalesce`.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable CUDA device: no driver, no GPU, or the device ordinal does
    /// not exist.
    #[error("no CUDA device available: {reason}")]
    NoDevice {
        /// Why, in the driver's words where it gave any.
        reason: String,
    },

    /// A CUDA driver call failed.
    #[error(transparent)]
    Driver(#[from] DriverError),

    /// The device's context faulted earlier (a sticky error such as an
    /// illegal address in a kernel) and is unusable: every operation on a
    /// [`Gpu`](crate::Gpu) of that device, its clones, and every `Gpu` made
    /// afterwards in this process return this error naming the first
    /// fault. CUDA allows no further work on the device in this process
    /// (see [`crate::context`]).
    #[error(
        "the GPU context is unusable after an earlier fault ({fault}); CUDA allows no further work on this device \
         in this process: restart it"
    )]
    Faulted {
        /// The first fault.
        fault: Box<crate::context::Fault>,
    },

    /// None of the embedded PTX targets can run on this device.
    #[error(
        "no embedded PTX can run on this device (compute capability {major}.{minor}); the library \
         was built for {available}. Rebuild with COALESCE_PTX_ARCHS including sm_{major}{minor} \
         or lower"
    )]
    NoCompatiblePtx {
        /// Device compute capability, major part.
        major: u32,
        /// Device compute capability, minor part.
        minor: u32,
        /// The embedded architectures, e.g. `sm_70, sm_90`.
        available: String,
    },

    /// The driver refused to load (JIT-compile) the module.
    #[error(
        "loading the sm_{arch} PTX on a compute capability {major}.{minor} device failed: {source}\nJIT log:\n{log}"
    )]
    ModuleLoad {
        /// The PTX architecture that was tried.
        arch: u32,
        /// Device compute capability, major part.
        major: u32,
        /// Device compute capability, minor part.
        minor: u32,
        /// The driver's error.
        source: Box<DriverError>,
        /// The JIT compiler's error log (empty if it wrote none).
        log: String,
    },

    /// A launch configuration violates a device or kernel limit; the launch
    /// never reached the driver.
    #[error("launch of `{kernel}` with {config} refused: {limit} is {max}, got {value}")]
    InvalidLaunch {
        /// Kernel name.
        kernel: &'static str,
        /// The refused configuration.
        config: LaunchConfig,
        /// Which limit.
        limit: LaunchLimit,
        /// The limit's value on this device for this kernel.
        max: u64,
        /// The value the configuration asked for.
        value: u64,
    },

    /// A kernel failed to launch or, when launches are synchronized (see
    /// [`Gpu::set_sync_launches`](crate::Gpu::set_sync_launches)), failed
    /// while running.
    #[error("kernel `{kernel}` with {config} failed: {source}{hint}")]
    Kernel {
        /// Kernel name.
        kernel: &'static str,
        /// Its configuration.
        config: LaunchConfig,
        /// The driver's error.
        source: Box<DriverError>,
        /// Advice for sticky errors.
        hint: &'static str,
    },

    /// The arguments of a launch do not match the kernel's parameters (count
    /// or byte sizes, read from the PTX); nothing was launched.
    #[error("kernel `{kernel}` takes {} parameters of {expected:?} bytes; the launch passed {} of {got:?}", expected.len(), got.len())]
    KernelArgs {
        /// Kernel name.
        kernel: &'static str,
        /// Byte size of each parameter.
        expected: Vec<usize>,
        /// Byte size of each argument given.
        got: Vec<usize>,
    },

    /// A kernel with this name is not in the loaded module.
    #[error("kernel `{0}` is not in the loaded module")]
    UnknownKernel(&'static str),

    /// Two lengths that must agree do not.
    #[error("{op}: length mismatch: expected {expected} elements, got {got}")]
    LengthMismatch {
        /// The operation.
        op: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        got: usize,
    },

    /// A range does not lie inside a buffer.
    #[error("{op}: range {start}..{end} is out of bounds for length {len}")]
    OutOfBounds {
        /// The operation.
        op: &'static str,
        /// Range start.
        start: usize,
        /// Range end (exclusive).
        end: usize,
        /// The buffer's length.
        len: usize,
    },

    /// The device cannot hold an allocation this large.
    #[error("{op}: out of device memory: {requested} bytes requested, {free} of {total} bytes free")]
    OutOfMemory {
        /// The operation.
        op: &'static str,
        /// Bytes asked for.
        requested: usize,
        /// Free device memory at the time, bytes.
        free: usize,
        /// Device memory in total, bytes.
        total: usize,
    },

    /// A size in bytes does not fit the address space or the API's types.
    #[error("{op}: {count} elements of {elem_size} bytes overflow the byte size")]
    SizeOverflow {
        /// The operation.
        op: &'static str,
        /// Element count asked for.
        count: usize,
        /// Bytes per element.
        elem_size: usize,
    },

    /// A module-level symbol (constant-memory array) does not match what the
    /// host tried to write.
    #[error("symbol `{name}`: {problem}")]
    Symbol {
        /// Symbol name.
        name: String,
        /// What is wrong (not found, size mismatch, …).
        problem: String,
    },

    /// Buffers from different [`Gpu`](crate::Gpu) handles were mixed.
    #[error("{op}: the buffers belong to a different GPU context than this handle")]
    ForeignBuffer {
        /// The operation.
        op: &'static str,
    },

    /// An external CUDA tool (`ptxas`, `cuobjdump`) failed or is missing.
    #[error("{tool}: {message}")]
    Tool {
        /// The tool.
        tool: &'static str,
        /// What happened (its stderr, or why it could not run).
        message: String,
    },

    /// The CUDA tool found cannot target this architecture (CUDA 13's
    /// `ptxas` no longer assembles `sm_70`, for example).
    #[error("{tool} does not support sm_{arch}: {message}")]
    ToolArch {
        /// The tool.
        tool: &'static str,
        /// The architecture it refused.
        arch: u32,
        /// Its message.
        message: String,
    },

    /// An invalid argument that fits none of the variants above.
    #[error("{op}: {message}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        message: String,
    },

    /// What this device, element type or mask cannot do (tensor-core
    /// kernels on a GPU older than sm_80, or on `f64` data).
    #[error("{op}: {message}")]
    Unsupported {
        /// The operation.
        op: &'static str,
        /// What is missing, and what to use instead.
        message: String,
    },

    /// A chunk of a streaming filter failed ([`crate::streaming`]): which
    /// chunk, on which device, and why. The stream stopped there: every
    /// worker finished or abandoned its chunks, freed its buffers and
    /// joined; the output holds whatever chunks completed.
    #[error("streaming filter: chunk {chunk} of {chunks} on {device} failed: {source}")]
    Chunk {
        /// The chunk's index (chunks cover the data in order).
        chunk: usize,
        /// Chunks in the whole stream.
        chunks: usize,
        /// `GPU <ordinal>` or `CPU`.
        device: String,
        /// What failed.
        source: Box<Error>,
    },

    /// A 2D extent (width × height, in elements) with a zero side.
    #[error("{op}: a {width} x {height} extent (width x height, elements) is empty; both must be at least 1")]
    ZeroExtent {
        /// The operation.
        op: &'static str,
        /// Width asked for, elements.
        width: usize,
        /// Height asked for, rows.
        height: usize,
    },

    /// A 2D extent whose size in bytes does not fit the address space.
    #[error("{op}: {width} x {height} elements of {elem_size} bytes overflow the byte size")]
    ExtentOverflow {
        /// The operation.
        op: &'static str,
        /// Width, elements.
        width: usize,
        /// Height, rows.
        height: usize,
        /// Bytes per element.
        elem_size: usize,
    },

    /// Pitched allocations take elements of 4, 8 or 16 bytes only (what
    /// `cuMemAllocPitch` accepts as its element size).
    #[error("{op}: {elem_size}-byte elements cannot be allocated pitched; cuMemAllocPitch takes 4, 8 or 16")]
    PitchedElementSize {
        /// The operation.
        op: &'static str,
        /// The element size asked for, bytes.
        elem_size: usize,
    },

    /// A rectangle does not lie inside a 2D buffer.
    #[error("{op}: rectangle {rect} does not lie inside the {width} x {height} buffer (width x height, elements)")]
    RectOutOfBounds {
        /// The operation.
        op: &'static str,
        /// The rectangle.
        rect: crate::pitched::Rect,
        /// The buffer's width, elements.
        width: usize,
        /// The buffer's height, rows.
        height: usize,
    },

    /// Two 2D buffers that must have the same width and height do not.
    #[error("{op}: extent mismatch: expected {} x {}, got {} x {} (width x height, elements)", expected.0, expected.1, got.0, got.1)]
    ExtentMismatch {
        /// The operation.
        op: &'static str,
        /// Width and height required.
        expected: (usize, usize),
        /// Width and height given.
        got: (usize, usize),
    },

    /// A CUDA array or texture that cannot be made or used as asked (an
    /// address mode that needs normalized coordinates, an extent beyond
    /// the device's texture limits, a texture that does not suit the
    /// kernel…); answered before the driver where it can be.
    #[error("{op}: {problem}")]
    Texture {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        problem: crate::texture::TextureProblem,
    },
}

impl Error {
    /// True when the error means "there is no GPU here" (tests and examples
    /// use it to skip instead of failing).
    pub fn is_no_device(&self) -> bool {
        matches!(self, Error::NoDevice { .. })
    }

    /// True when the context is unusable: this error is, or reports, a
    /// sticky driver error ([`Error::Faulted`], or the call that first
    /// observed the fault).
    pub fn is_fault(&self) -> bool {
        match self {
            Error::Faulted { .. } => true,
            Error::Driver(e) => e.is_sticky(),
            Error::Kernel { source, .. } | Error::ModuleLoad { source, .. } => source.is_sticky(),
            _ => false,
        }
    }
}
