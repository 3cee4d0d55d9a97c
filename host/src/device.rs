//! What the device is: a snapshot of its attributes, taken once when a
//! [`Gpu`](crate::Gpu) is created, and the limits launches are checked
//! against.

use cust::device::{Device, DeviceAttribute};

use crate::driver;
use crate::error::{DriverError, Result};

/// The device's properties (the lesson's `simpleDeviceQuery`, and more).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: u32,
    /// Marketing name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability, major.
    pub cc_major: u32,
    /// Compute capability, minor.
    pub cc_minor: u32,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Global memory in bytes.
    pub total_memory: usize,
    /// L2 cache in bytes.
    pub l2_bytes: u32,
    /// Constant memory in bytes.
    pub constant_bytes: u32,
    /// Memory clock in kHz (the peak clock the driver reports).
    pub memory_clock_khz: u32,
    /// Memory bus width in bits.
    pub memory_bus_bits: u32,
    /// Installed driver's CUDA version (13000 = 13.0).
    pub driver_version: i32,
    /// Launch and residency limits.
    pub limits: DeviceLimits,
}

/// The per-device limits a launch is validated against, and the per-SM
/// resources occupancy is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// Block dimensions (x, y, z).
    pub max_block_dim: [u32; 3],
    /// Grid dimensions (x, y, z).
    pub max_grid_dim: [u32; 3],
    /// Shared memory per block without opting in (usually 48 KiB).
    pub max_shared_per_block: u32,
    /// Shared memory per block a kernel can opt in to.
    pub max_shared_per_block_optin: u32,
    /// Shared memory per SM.
    pub shared_per_sm: u32,
    /// Shared memory the system reserves per resident block.
    pub reserved_shared_per_block: u32,
    /// 32-bit registers per block.
    pub registers_per_block: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// Threads per warp.
    pub warp_size: u32,
    /// Resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Resident blocks per SM.
    pub max_blocks_per_sm: u32,
}

impl DeviceLimits {
    /// The limits of an H100 SXM (compute capability 9.0), for planning and
    /// tests on machines without a GPU.
    pub const H100: DeviceLimits = DeviceLimits {
        max_threads_per_block: 1024,
        max_block_dim: [1024, 1024, 64],
        max_grid_dim: [2_147_483_647, 65_535, 65_535],
        max_shared_per_block: 48 * 1024,
        max_shared_per_block_optin: 227 * 1024,
        shared_per_sm: 228 * 1024,
        reserved_shared_per_block: 1024,
        registers_per_block: 65_536,
        registers_per_sm: 65_536,
        warp_size: 32,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
    };
}

fn attr(dev: Device, a: DeviceAttribute) -> Result<u32, DriverError> {
    dev.get_attribute(a).map(|v| v.max(0) as u32).map_err(|e| driver::from_cust("cuDeviceGetAttribute", e))
}

impl DeviceInfo {
    pub(crate) fn query(ordinal: u32, dev: Device) -> Result<Self> {
        use DeviceAttribute as A;
        let raw = |a| driver::device_attribute(dev.as_raw(), a).map(|v| v.max(0) as u32);
        let limits = DeviceLimits {
            max_threads_per_block: attr(dev, A::MaxThreadsPerBlock)?,
            max_block_dim: [attr(dev, A::MaxBlockDimX)?, attr(dev, A::MaxBlockDimY)?, attr(dev, A::MaxBlockDimZ)?],
            max_grid_dim: [attr(dev, A::MaxGridDimX)?, attr(dev, A::MaxGridDimY)?, attr(dev, A::MaxGridDimZ)?],
            max_shared_per_block: attr(dev, A::MaxSharedMemoryPerBlock)?,
            max_shared_per_block_optin: raw(driver::ATTR_MAX_SHARED_PER_BLOCK_OPTIN)?,
            shared_per_sm: attr(dev, A::MaxSharedMemoryPerMultiprocessor)?,
            reserved_shared_per_block: raw(driver::ATTR_RESERVED_SHARED_PER_BLOCK)?,
            registers_per_block: attr(dev, A::MaxRegistersPerBlock)?,
            registers_per_sm: attr(dev, A::MaxRegistersPerMultiprocessor)?,
            warp_size: attr(dev, A::WarpSize)?,
            max_threads_per_sm: attr(dev, A::MaxThreadsPerMultiprocessor)?,
            max_blocks_per_sm: raw(driver::ATTR_MAX_BLOCKS_PER_SM)?,
        };
        Ok(DeviceInfo {
            ordinal,
            name: dev.name().map_err(|e| driver::from_cust("cuDeviceGetName", e))?,
            cc_major: attr(dev, A::ComputeCapabilityMajor)?,
            cc_minor: attr(dev, A::ComputeCapabilityMinor)?,
            sm_count: attr(dev, A::MultiprocessorCount)?,
            total_memory: dev.total_memory().map_err(|e| driver::from_cust("cuDeviceTotalMem", e))?,
            l2_bytes: attr(dev, A::L2CacheSize)?,
            constant_bytes: attr(dev, A::TotalConstantMemory)?,
            memory_clock_khz: attr(dev, A::MemoryClockRate)?,
            memory_bus_bits: attr(dev, A::GlobalMemoryBusWidth)?,
            driver_version: driver::driver_version()?,
            limits,
        })
    }

    /// `major * 10 + minor`, the number in `sm_90`.
    pub fn sm(&self) -> u32 {
        self.cc_major * 10 + self.cc_minor
    }

    /// Theoretical DRAM bandwidth in GB/s (1e9 bytes/s): two transfers per
    /// memory clock (double data rate) × bus width in bytes. A datasheet
    /// bound; measured device-to-device copies reach roughly 90% of it.
    pub fn theoretical_dram_gbps(&self) -> f64 {
        2.0 * self.memory_clock_khz as f64 * 1e3 * (self.memory_bus_bits as f64 / 8.0) / 1e9
    }
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (device {}, compute capability {}.{}, {} SMs, {:.1} GiB, {} MiB L2, driver CUDA {}.{})",
            self.name,
            self.ordinal,
            self.cc_major,
            self.cc_minor,
            self.sm_count,
            self.total_memory as f64 / (1u64 << 30) as f64,
            self.l2_bytes >> 20,
            self.driver_version / 1000,
            (self.driver_version % 1000) / 10,
        )
    }
}
