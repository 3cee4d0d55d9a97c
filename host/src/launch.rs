//! Launch configurations, validated against the device and the kernel
//! before anything reaches the driver.
//!
//! The lesson on warps (002) tries a `(256, 8)` block: 2048 threads, over
//! the 1024-thread limit. CUDA reports that only as a failed launch;
//! here [`LaunchConfig::validate`] refuses it first, naming the limit and
//! the value:
//!
//! ```
//! use coalesce_host::{DeviceLimits, KernelLimits, LaunchConfig, LaunchLimit};
//!
//! let cfg = LaunchConfig::new((64, 2048), (256, 8));
//! let err = cfg.validate(&DeviceLimits::H100, &KernelLimits::unconstrained()).unwrap_err();
//! assert_eq!(err.limit, LaunchLimit::ThreadsPerBlock);
//! assert_eq!((err.max, err.value), (1024, 2048));
//! ```

use std::ffi::c_void;
use std::fmt;

use crate::device::DeviceLimits;

/// A grid or block shape: x, y, z extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Extent along x.
    pub x: u32,
    /// Extent along y.
    pub y: u32,
    /// Extent along z.
    pub z: u32,
}

impl Dim3 {
    /// `x × y × z`, without overflow.
    pub fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3 { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3 { x, y, z }
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.y, self.z) {
            (1, 1) => write!(f, "{}", self.x),
            (_, 1) => write!(f, "({}, {})", self.x, self.y),
            _ => write!(f, "({}, {}, {})", self.x, self.y, self.z),
        }
    }
}

/// Grid shape, block shape and dynamic shared memory of one launch (CUDA's
/// `<<<grid, block, shared>>>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in each block.
    pub block: Dim3,
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// A configuration without dynamic shared memory.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        LaunchConfig { grid: grid.into(), block: block.into(), shared_mem_bytes: 0 }
    }

    /// The same configuration with `bytes` of dynamic shared memory.
    pub fn with_shared_mem(mut self, bytes: u32) -> Self {
        self.shared_mem_bytes = bytes;
        self
    }

    /// Checks every limit; the first violated one is returned.
    pub fn validate(&self, device: &DeviceLimits, kernel: &KernelLimits) -> Result<(), LimitViolation> {
        use LaunchLimit as L;
        let check = |ok: bool, limit, max: u64, value: u64| {
            if ok { Ok(()) } else { Err(LimitViolation { limit, max, value }) }
        };
        for (axis, (b, g)) in [(self.block.x, self.grid.x), (self.block.y, self.grid.y), (self.block.z, self.grid.z)]
            .into_iter()
            .enumerate()
        {
            check(b > 0, L::ZeroBlockDim(AXES[axis]), 1, 0)?;
            check(g > 0, L::ZeroGridDim(AXES[axis]), 1, 0)?;
        }
        let threads = self.block.volume();
        check(
            threads <= device.max_threads_per_block as u64,
            L::ThreadsPerBlock,
            device.max_threads_per_block as u64,
            threads,
        )?;
        for (axis, (b, max)) in
            [self.block.x, self.block.y, self.block.z].into_iter().zip(device.max_block_dim).enumerate()
        {
            check(b <= max, L::BlockDim(AXES[axis]), max as u64, b as u64)?;
        }
        for (axis, (g, max)) in [self.grid.x, self.grid.y, self.grid.z].into_iter().zip(device.max_grid_dim).enumerate()
        {
            check(g <= max, L::GridDim(AXES[axis]), max as u64, g as u64)?;
        }
        check(
            threads <= kernel.max_threads_per_block as u64,
            L::KernelThreadsPerBlock,
            kernel.max_threads_per_block as u64,
            threads,
        )?;
        let shared = kernel.static_shared_bytes as u64 + self.shared_mem_bytes as u64;
        check(
            shared <= device.max_shared_per_block_optin as u64,
            L::SharedMemoryPerBlock,
            device.max_shared_per_block_optin as u64,
            shared,
        )?;
        Ok(())
    }
}

const AXES: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];

impl fmt::Display for LaunchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<<<grid {}, block {}", self.grid, self.block)?;
        if self.shared_mem_bytes > 0 {
            write!(f, ", {} B shared", self.shared_mem_bytes)?;
        }
        write!(f, ">>>")
    }
}

/// An axis of a grid or block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl fmt::Display for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        })
    }
}

/// The limit a launch configuration violates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LaunchLimit {
    /// A block extent is zero.
    ZeroBlockDim(Axis),
    /// A grid extent is zero.
    ZeroGridDim(Axis),
    /// Threads per block, the device's limit (1024 on every current GPU).
    ThreadsPerBlock,
    /// Threads per block this kernel can run with (lower when it uses many
    /// registers).
    KernelThreadsPerBlock,
    /// A block extent.
    BlockDim(Axis),
    /// A grid extent.
    GridDim(Axis),
    /// Static plus dynamic shared memory per block.
    SharedMemoryPerBlock,
}

impl fmt::Display for LaunchLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchLimit::ZeroBlockDim(a) => write!(f, "the minimum block extent along {a}"),
            LaunchLimit::ZeroGridDim(a) => write!(f, "the minimum grid extent along {a}"),
            LaunchLimit::ThreadsPerBlock => write!(f, "the device's maximum threads per block"),
            LaunchLimit::KernelThreadsPerBlock => {
                write!(f, "this kernel's maximum threads per block (register-limited)")
            }
            LaunchLimit::BlockDim(a) => write!(f, "the maximum block extent along {a}"),
            LaunchLimit::GridDim(a) => write!(f, "the maximum grid extent along {a}"),
            LaunchLimit::SharedMemoryPerBlock => write!(f, "the maximum shared memory per block (bytes)"),
        }
    }
}

/// A violated limit: which, its value, and the value asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitViolation {
    /// Which limit.
    pub limit: LaunchLimit,
    /// The limit's value.
    pub max: u64,
    /// The configuration's value.
    pub value: u64,
}

/// What a compiled kernel itself allows (from `cuFuncGetAttribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLimits {
    /// Most threads per block the kernel can launch with.
    pub max_threads_per_block: u32,
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Static shared memory per block, bytes.
    pub static_shared_bytes: u32,
    /// Local memory per thread, bytes (non-zero means a stack frame or spills).
    pub local_bytes_per_thread: u32,
}

impl KernelLimits {
    /// A kernel that constrains nothing beyond the device (for planning
    /// without a loaded module).
    pub fn unconstrained() -> Self {
        KernelLimits {
            max_threads_per_block: u32::MAX,
            registers_per_thread: 0,
            static_shared_bytes: 0,
            local_bytes_per_thread: 0,
        }
    }
}

/// A value that may be passed to a kernel by value: plain data whose bytes
/// are the PTX parameter.
///
/// # Safety
/// Implementors must be `Copy` plain-old-data with the same size and layout
/// as the kernel's parameter type.
pub unsafe trait KernelArg {
    /// Pointer to the argument's bytes, as `cuLaunchKernel` wants it.
    fn as_arg_ptr(&self) -> *mut c_void {
        (self as *const Self).cast_mut().cast()
    }

    /// Size of the argument in bytes (checked against the kernel's
    /// parameter before launch).
    fn arg_size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

macro_rules! kernel_args {
    ($($t:ty),*) => {$(
        // SAFETY: primitive plain data, same layout on host and device.
        unsafe impl KernelArg for $t {}
    )*};
}
kernel_args!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

/// A raw device address passed to a kernel (a `*const T` / `*mut T`
/// parameter on the device side).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevicePtr(pub u64);

// SAFETY: a 64-bit address, the PTX `.u64` pointer parameter.
unsafe impl KernelArg for DevicePtr {}

/// An array passed by value as one kernel parameter: the kernel declares a
/// parameter of `size` bytes and reads it through the parameter space
/// (`coalesce_kernels::dev::param`), so every launch carries its own copy
/// and no other launch, on any stream, can change it. Holds the values'
/// bytes followed by zeros up to `size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamArray {
    bytes: Vec<u8>,
}

impl ParamArray {
    /// `values` in a parameter of `size` bytes; more bytes than `size` is
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    pub fn new<T: bytemuck::Pod>(values: &[T], size: usize) -> crate::Result<ParamArray> {
        let bytes: &[u8] = bytemuck::cast_slice(values);
        if bytes.len() > size {
            return Err(crate::Error::InvalidArgument {
                op: "kernel parameter",
                message: format!(
                    "{} values of {} bytes do not fit a {size}-byte parameter",
                    values.len(),
                    std::mem::size_of::<T>()
                ),
            });
        }
        let mut v = Vec::with_capacity(size);
        v.extend_from_slice(bytes);
        v.resize(size, 0);
        Ok(ParamArray { bytes: v })
    }

    /// The parameter's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

// SAFETY: the pointer is to `bytes.len()` initialized bytes, which the
// driver copies during the launch call; the size is that length (checked
// against the kernel's parameter before launch).
unsafe impl KernelArg for ParamArray {
    fn as_arg_ptr(&self) -> *mut c_void {
        self.bytes.as_ptr().cast_mut().cast()
    }

    fn arg_size(&self) -> usize {
        self.bytes.len()
    }
}

/// Blocks for `units` work items at `threads` per block, at least one and
/// at most `max_blocks`: the lesson's `min(ceil(n / threads), MAX_BLOCKS)`.
pub fn blocks_for(units: usize, threads: u32, max_blocks: u32) -> u32 {
    let want = units.div_ceil(threads.max(1) as usize);
    want.clamp(1, max_blocks.max(1) as usize) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> DeviceLimits {
        DeviceLimits::H100
    }

    #[test]
    fn param_arrays_are_padded_and_bounded() {
        let p = ParamArray::new(&[1.5f32, -2.0], 12).unwrap();
        assert_eq!(p.arg_size(), 12);
        assert_eq!(&p.bytes()[..8], bytemuck::cast_slice::<f32, u8>(&[1.5, -2.0]));
        assert_eq!(&p.bytes()[8..], &[0; 4]);
        assert_eq!(p.as_arg_ptr().cast_const(), p.bytes().as_ptr().cast());
        let e = ParamArray::new(&[1.0f64; 3], 16).unwrap_err().to_string();
        assert!(e.contains("do not fit a 16-byte parameter"), "{e}");
        assert_eq!(ParamArray::new::<f32>(&[], 0).unwrap().arg_size(), 0);
    }

    #[test]
    fn lesson_block_256_by_8_is_refused_on_threads() {
        let cfg = LaunchConfig::new((64, 2048), (256, 8));
        let v = cfg.validate(&h100(), &KernelLimits::unconstrained()).unwrap_err();
        assert_eq!(v, LimitViolation { limit: LaunchLimit::ThreadsPerBlock, max: 1024, value: 2048 });
    }

    #[test]
    fn every_limit_is_reported() {
        let k = KernelLimits::unconstrained();
        let cases = [
            (LaunchConfig::new(1, (0, 1)), LaunchLimit::ZeroBlockDim(Axis::X)),
            (LaunchConfig::new((1, 0), 32), LaunchLimit::ZeroGridDim(Axis::Y)),
            (LaunchConfig::new(1, (1, 1, 128)), LaunchLimit::BlockDim(Axis::Z)),
            (LaunchConfig::new((1, 70_000), 32), LaunchLimit::GridDim(Axis::Y)),
            (LaunchConfig::new(1, 32).with_shared_mem(300 * 1024), LaunchLimit::SharedMemoryPerBlock),
        ];
        for (cfg, limit) in cases {
            assert_eq!(cfg.validate(&h100(), &k).unwrap_err().limit, limit, "{cfg}");
        }
        let heavy = KernelLimits { max_threads_per_block: 512, ..k };
        let v = LaunchConfig::new(1, 1024).validate(&h100(), &heavy).unwrap_err();
        assert_eq!((v.limit, v.max, v.value), (LaunchLimit::KernelThreadsPerBlock, 512, 1024));
        let static_smem = KernelLimits { static_shared_bytes: 200 * 1024, ..k };
        let v = LaunchConfig::new(1, 32).with_shared_mem(40 * 1024).validate(&h100(), &static_smem).unwrap_err();
        assert_eq!((v.limit, v.value), (LaunchLimit::SharedMemoryPerBlock, 240 * 1024));
    }

    #[test]
    fn largest_legal_shapes_pass() {
        let k = KernelLimits::unconstrained();
        for cfg in [
            LaunchConfig::new(2_147_483_647, 1024),
            LaunchConfig::new((1, 65_535, 65_535), (1, 1, 64)),
            LaunchConfig::new(1, (32, 32)),
            LaunchConfig::new(1, 1).with_shared_mem(227 * 1024),
        ] {
            assert_eq!(cfg.validate(&h100(), &k), Ok(()), "{cfg}");
        }
    }

    #[test]
    fn block_count_rule() {
        assert_eq!(blocks_for(0, 256, 1056), 1);
        assert_eq!(blocks_for(1, 256, 1056), 1);
        assert_eq!(blocks_for(256, 256, 1056), 1);
        assert_eq!(blocks_for(257, 256, 1056), 2);
        assert_eq!(blocks_for(1 << 28, 256, 1056), 1056);
    }

    #[test]
    fn display_reads_like_cuda() {
        let cfg = LaunchConfig::new((64, 2048), (256, 8)).with_shared_mem(1024);
        assert_eq!(cfg.to_string(), "<<<grid (64, 2048), block (256, 8), 1024 B shared>>>");
    }
}
