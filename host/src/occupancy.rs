//! The occupancy calculator: how many blocks and warps of a kernel fit on
//! one SM, what limits them, and a block size chosen by the lesson's
//! guidelines.
//!
//! Occupancy is `active warps / maximum warps` per SM. Four resources cap
//! the resident blocks; the smallest cap wins ([`Occupancy::limiters`]):
//!
//! * **warps**: `⌊max warps per SM / warps per block⌋`, where a block of
//!   `t` threads takes `⌈t / 32⌉` warps: the lesson's 40 × 2 block (80
//!   threads) takes 3 warps, 96 thread slots, 16 of them idle but still
//!   holding registers ([`Occupancy::wasted_thread_slots`]);
//! * **blocks**: the architecture's resident-block limit (32 on sm_90);
//! * **registers**: registers are given to warps in units of
//!   [`Granularity::register_unit`] (256): `⌈regs/thread × 32 / 256⌉ × 256`
//!   per warp, from each of the SM's [`Granularity::sub_partitions`] (4)
//!   register files; a block must also fit the per-block register limit;
//! * **shared memory**: static + dynamic + the bytes the system reserves
//!   per block, rounded up to [`Granularity::shared_unit`] (128 bytes on
//!   sm_80/sm_90, 256 on sm_70), out of the SM's shared memory (the
//!   driver's default carve-out is the largest).
//!
//! These are the rules of CUDA's occupancy calculator (`cuda_occupancy.h`);
//! `tests/occupancy.rs` checks them against the driver's
//! `cuOccupancyMaxActiveBlocksPerMultiprocessor` for every kernel of the
//! module, every block size 32..=1024 step 32, with and without 16 KiB of
//! dynamic shared memory.
//!
//! ```
//! use coalesce_host::occupancy::{Granularity, occupancy};
//! use coalesce_host::{DeviceLimits, KernelLimits};
//!
//! let kernel = KernelLimits { registers_per_thread: 40, ..KernelLimits::unconstrained() };
//! let o = occupancy(&DeviceLimits::H100, &Granularity::SM90, &kernel, 80, 0).unwrap();
//! assert_eq!((o.warps_per_block, o.wasted_thread_slots), (3, 16));
//! ```

use std::fmt;

use crate::device::DeviceLimits;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::KernelLimits;

/// Allocation units of an architecture (not device attributes: the CUDA
/// occupancy calculator's per-architecture constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granularity {
    /// Registers are allocated per warp in multiples of this (256).
    pub register_unit: u32,
    /// Shared memory is allocated per block in multiples of this, bytes.
    pub shared_unit: u32,
    /// Register-file partitions per SM (warps are spread over them).
    pub sub_partitions: u32,
    /// Most registers one thread may use.
    pub max_registers_per_thread: u32,
}

impl Granularity {
    /// Compute capability 7.x (Volta, Turing).
    pub const SM70: Granularity =
        Granularity { register_unit: 256, shared_unit: 256, sub_partitions: 4, max_registers_per_thread: 255 };
    /// Compute capability 8.x and 9.x (Ampere, Ada, Hopper).
    pub const SM90: Granularity =
        Granularity { register_unit: 256, shared_unit: 128, sub_partitions: 4, max_registers_per_thread: 255 };

    /// The units of compute capability `major.minor` (7.0 or newer; newer
    /// architectures than 9.x are assumed to keep sm_90's units).
    pub fn for_compute_capability(major: u32, _minor: u32) -> Granularity {
        if major <= 7 { Granularity::SM70 } else { Granularity::SM90 }
    }
}

/// A resource that caps resident blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limiter {
    /// Warp slots per SM.
    Warps,
    /// The resident-block limit per SM.
    Blocks,
    /// Registers.
    Registers,
    /// Shared memory.
    SharedMemory,
    /// The block itself is too large for the device or the kernel.
    BlockSize,
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limiter::Warps => "warps",
            Limiter::Blocks => "blocks",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::BlockSize => "block size",
        })
    }
}

/// The calculator's answer for one kernel, block size and dynamic shared
/// memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Occupancy {
    /// Threads per block.
    pub threads: u32,
    /// `⌈threads / warp size⌉`.
    pub warps_per_block: u32,
    /// Thread slots of the last warp no thread uses.
    pub wasted_thread_slots: u32,
    /// Registers allocated per block (`warps × per-warp allocation`).
    pub registers_per_block: u32,
    /// Shared memory allocated per block, bytes (static + dynamic +
    /// reserved, rounded up to the allocation unit).
    pub shared_per_block: u32,
    /// Blocks per SM the warp slots allow.
    pub blocks_by_warps: u32,
    /// The resident-block limit.
    pub blocks_by_limit: u32,
    /// Blocks per SM the registers allow (`u32::MAX` for a kernel that
    /// uses none).
    pub blocks_by_registers: u32,
    /// Blocks per SM shared memory allows (`u32::MAX` when none is used).
    pub blocks_by_shared: u32,
    /// Resident blocks per SM: the smallest of the four.
    pub active_blocks: u32,
    /// Resident warps per SM.
    pub active_warps: u32,
    /// Warp slots per SM.
    pub max_warps: u32,
    /// `active_warps / max_warps`.
    pub occupancy: f64,
    /// The resources whose cap equals `active_blocks` (several can tie).
    pub limiters: Vec<Limiter>,
}

impl fmt::Display for Occupancy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lim: Vec<String> = self.limiters.iter().map(ToString::to_string).collect();
        write!(
            f,
            "{} threads = {} warps ({} idle slots): {} blocks, {} of {} warps per SM ({:.1}%), limited by {}",
            self.threads,
            self.warps_per_block,
            self.wasted_thread_slots,
            self.active_blocks,
            self.active_warps,
            self.max_warps,
            self.occupancy * 100.0,
            lim.join(" and ")
        )
    }
}

fn round_up(x: u64, unit: u64) -> u64 {
    if unit == 0 { x } else { x.div_ceil(unit) * unit }
}

/// The occupancy of `kernel` (its registers per thread, static shared
/// memory and maximum block size) at `threads` per block with
/// `dynamic_shared` bytes of dynamic shared memory, under the default
/// per-block shared-memory limit (`device.max_shared_per_block`; a launch
/// above it needs an opt-in, see [`occupancy_opt_in`]).
pub fn occupancy(
    device: &DeviceLimits,
    units: &Granularity,
    kernel: &KernelLimits,
    threads: u32,
    dynamic_shared: u32,
) -> Result<Occupancy> {
    occupancy_with(device, units, kernel, threads, dynamic_shared, device.max_shared_per_block)
}

/// [`occupancy`] for a kernel that opted in to the device's largest
/// per-block shared memory (`max_shared_per_block_optin`).
pub fn occupancy_opt_in(
    device: &DeviceLimits,
    units: &Granularity,
    kernel: &KernelLimits,
    threads: u32,
    dynamic_shared: u32,
) -> Result<Occupancy> {
    occupancy_with(device, units, kernel, threads, dynamic_shared, device.max_shared_per_block_optin)
}

fn occupancy_with(
    device: &DeviceLimits,
    units: &Granularity,
    kernel: &KernelLimits,
    threads: u32,
    dynamic_shared: u32,
    shared_limit: u32,
) -> Result<Occupancy> {
    if threads == 0 || device.warp_size == 0 {
        return Err(Error::InvalidArgument {
            op: "occupancy",
            message: format!("a block of {threads} threads (warp size {}) has no warps", device.warp_size),
        });
    }
    let warp = device.warp_size;
    let warps = threads.div_ceil(warp);
    let max_warps = device.max_threads_per_sm / warp;
    let too_big = threads > device.max_threads_per_block || threads > kernel.max_threads_per_block;

    let by_warps = if too_big { 0 } else { max_warps / warps };
    let by_limit = device.max_blocks_per_sm;

    let regs = kernel.registers_per_thread as u64;
    let per_warp = round_up(regs * warp as u64, units.register_unit as u64);
    let per_block = per_warp * warps as u64;
    let assumed = per_warp * round_up(warps as u64, units.sub_partitions.max(1) as u64);
    let by_regs = if per_block > device.registers_per_block as u64
        || assumed > device.registers_per_block as u64
        || kernel.registers_per_thread > units.max_registers_per_thread
    {
        0
    } else {
        let parts = units.sub_partitions.max(1) as u64;
        match (device.registers_per_sm as u64 / parts).checked_div(per_warp) {
            Some(warps_per_part) => ((warps_per_part * parts) / warps as u64) as u32,
            None => u32::MAX,
        }
    };

    let used = kernel.static_shared_bytes as u64 + device.reserved_shared_per_block as u64 + dynamic_shared as u64;
    let shared = round_up(used, units.shared_unit as u64);
    let by_shared = if shared > shared_limit as u64 + device.reserved_shared_per_block as u64 {
        0
    } else {
        (device.shared_per_sm as u64).checked_div(shared).map_or(u32::MAX, |b| b as u32)
    };

    let active = by_warps.min(by_limit).min(by_regs).min(by_shared);
    let mut limiters = Vec::new();
    if too_big {
        limiters.push(Limiter::BlockSize);
    } else {
        for (cap, l) in [
            (by_warps, Limiter::Warps),
            (by_limit, Limiter::Blocks),
            (by_regs, Limiter::Registers),
            (by_shared, Limiter::SharedMemory),
        ] {
            if cap == active {
                limiters.push(l);
            }
        }
    }
    let active_warps = active * warps;
    Ok(Occupancy {
        threads,
        warps_per_block: warps,
        wasted_thread_slots: warps * warp - threads,
        registers_per_block: per_block.min(u32::MAX as u64) as u32,
        shared_per_block: shared.min(u32::MAX as u64) as u32,
        blocks_by_warps: by_warps,
        blocks_by_limit: by_limit,
        blocks_by_registers: by_regs,
        blocks_by_shared: by_shared,
        active_blocks: active,
        active_warps,
        max_warps,
        occupancy: if max_warps == 0 { 0.0 } else { active_warps as f64 / max_warps as f64 },
        limiters,
    })
}

/// A block size chosen by the lesson's guidelines, with its occupancy.
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    /// Threads per block.
    pub threads: u32,
    /// Its occupancy.
    pub occupancy: Occupancy,
    /// Blocks that fill every SM once (`SMs × active blocks`): launch at
    /// least this many, and preferably several times more.
    pub full_wave_blocks: u32,
    /// Why this size, in words.
    pub reasons: Vec<String>,
}

/// The lesson's block-size guidelines applied to `kernel`:
///
/// 1. threads per block a multiple of the warp size (no idle slots);
/// 2. not small: at least 128 threads (where the kernel allows);
/// 3. adjusted to the kernel's resources: the largest occupancy among the
///    sizes left (registers and shared memory decide);
/// 4. many more blocks than SMs: [`Suggestion::full_wave_blocks`] is one
///    wave, grids should be several;
/// 5. between sizes of equal occupancy, the one nearest 256 (at or above
///    it first): enough warps per block, and blocks small enough that a
///    wave of them spreads evenly.
///
/// (The guideline "experiment" is the benchmarks' job.) The driver's
/// `cuOccupancyMaxPotentialBlockSize` maximizes the same occupancy but
/// breaks ties toward the largest block; `tests/occupancy.rs` checks the
/// two reach the same occupancy.
pub fn suggest(
    device: &DeviceLimits,
    units: &Granularity,
    kernel: &KernelLimits,
    dynamic_shared: u32,
    sm_count: u32,
) -> Result<Suggestion> {
    let warp = device.warp_size.max(1);
    let most = device.max_threads_per_block.min(kernel.max_threads_per_block);
    let floor = if most >= 128 { 128 } else { warp };
    let mut best: Option<Occupancy> = None;
    let mut t = floor;
    while t <= most {
        let o = occupancy(device, units, kernel, t, dynamic_shared)?;
        let better = match &best {
            None => true,
            Some(b) => {
                let dist = |x: u32| if x >= 256 { (0, x) } else { (1, u32::MAX - x) };
                o.active_warps > b.active_warps || (o.active_warps == b.active_warps && dist(t) < dist(b.threads))
            }
        };
        if better {
            best = Some(o);
        }
        t += warp;
    }
    let Some(o) = best.filter(|o| o.active_blocks > 0) else {
        return Err(Error::InvalidArgument {
            op: "suggest",
            message: format!(
                "no block size that is a multiple of {warp} up to {most} fits on an SM with {dynamic_shared} bytes of \
                 dynamic shared memory"
            ),
        });
    };
    let mut reasons = vec![
        format!("a multiple of the warp size ({warp}): no idle thread slots"),
        format!("at least {floor} threads per block"),
        format!(
            "the highest occupancy reachable: {}/{} warps ({:.0}%), limited by {}",
            o.active_warps,
            o.max_warps,
            o.occupancy * 100.0,
            o.limiters.iter().map(ToString::to_string).collect::<Vec<_>>().join(" and ")
        ),
    ];
    let full = o.active_blocks.saturating_mul(sm_count);
    reasons.push(format!(
        "{} resident blocks per SM × {sm_count} SMs = {full} blocks per wave: launch several waves",
        o.active_blocks
    ));
    Ok(Suggestion { threads: o.threads, full_wave_blocks: full, occupancy: o, reasons })
}

impl Gpu {
    /// The architecture's allocation units.
    pub fn granularity(&self) -> Granularity {
        Granularity::for_compute_capability(self.info().cc_major, self.info().cc_minor)
    }

    /// The calculator's occupancy of kernel `name` at `threads` per block
    /// with `dynamic_shared` bytes of dynamic shared memory.
    pub fn occupancy(&self, name: &'static str, threads: u32, dynamic_shared: u32) -> Result<Occupancy> {
        occupancy(&self.info().limits, &self.granularity(), &self.kernel_limits(name)?, threads, dynamic_shared)
    }

    /// [`suggest`] for kernel `name` on this device.
    pub fn suggest_block_size(&self, name: &'static str, dynamic_shared: u32) -> Result<Suggestion> {
        suggest(
            &self.info().limits,
            &self.granularity(),
            &self.kernel_limits(name)?,
            dynamic_shared,
            self.info().sm_count,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: DeviceLimits = DeviceLimits::H100;

    fn k(regs: u32, smem: u32) -> KernelLimits {
        KernelLimits {
            max_threads_per_block: 1024,
            registers_per_thread: regs,
            static_shared_bytes: smem,
            local_bytes_per_thread: 0,
        }
    }

    fn occ(regs: u32, smem: u32, threads: u32, dynamic: u32) -> Occupancy {
        occupancy(&H100, &Granularity::SM90, &k(regs, smem), threads, dynamic).unwrap()
    }

    #[test]
    fn lesson_block_of_40_by_2() {
        let o = occ(16, 0, 80, 0);
        assert_eq!((o.warps_per_block, o.wasted_thread_slots), (3, 16));
        // 64 warp slots / 3 = 21 blocks, 63 warps.
        assert_eq!((o.blocks_by_warps, o.active_blocks, o.active_warps), (21, 21, 63));
        assert_eq!(o.limiters, vec![Limiter::Warps]);
    }

    #[test]
    fn each_resource_can_limit() {
        // Small blocks: the 32-block limit.
        let o = occ(16, 0, 32, 0);
        assert_eq!((o.active_blocks, o.active_warps, o.limiters.clone()), (32, 32, vec![Limiter::Blocks]));
        assert_eq!(o.occupancy, 0.5);
        // 32 registers: 1024 per warp, 16 warps per sub-partition: full.
        let o = occ(32, 0, 256, 0);
        assert_eq!((o.active_blocks, o.active_warps), (8, 64));
        assert!(o.limiters.contains(&Limiter::Warps) && o.limiters.contains(&Limiter::Registers));
        // 40 registers: 1280 per warp -> 12 warps per sub-partition, 48 per SM.
        let o = occ(40, 0, 256, 0);
        assert_eq!((o.active_blocks, o.active_warps, o.limiters.clone()), (6, 48, vec![Limiter::Registers]));
        // 33 registers round up to 1280 per warp as well.
        assert_eq!(occ(33, 0, 256, 0).active_blocks, 6);
        // Shared memory: 48 KiB static + 1 KiB reserved = 49 KiB -> 4 per 228 KiB.
        let o = occ(16, 48 * 1024, 128, 0);
        assert_eq!(
            (o.shared_per_block, o.active_blocks, o.limiters.clone()),
            (49 * 1024, 4, vec![Limiter::SharedMemory])
        );
        // Rounded to 128 bytes: 100 + 1024 -> 1152.
        assert_eq!(occ(16, 100, 1024, 0).shared_per_block, 1152);
    }

    #[test]
    fn over_the_limits_is_zero() {
        let o = occ(16, 0, 1056, 0);
        assert_eq!((o.active_blocks, o.limiters.clone()), (0, vec![Limiter::BlockSize]));
        // 255 regs × 1024 threads cannot fit 64 Ki registers per block.
        assert_eq!(occ(255, 0, 1024, 0).blocks_by_registers, 0);
        // Dynamic shared memory past 48 KiB needs the opt-in.
        assert_eq!(occ(16, 0, 128, 49 * 1024).active_blocks, 0);
        let o = occupancy_opt_in(&H100, &Granularity::SM90, &k(16, 0), 128, 100 * 1024).unwrap();
        assert_eq!(o.active_blocks, 2);
        assert!(occupancy(&H100, &Granularity::SM90, &k(16, 0), 0, 0).is_err());
    }

    #[test]
    fn suggestions_follow_the_guidelines() {
        let s = suggest(&H100, &Granularity::SM90, &k(32, 0), 0, 132).unwrap();
        assert_eq!((s.threads, s.occupancy.active_warps, s.full_wave_blocks), (256, 64, 8 * 132));
        // 40 registers: 48 warps at most; 256 reaches it (6 blocks).
        let s = suggest(&H100, &Granularity::SM90, &k(40, 0), 0, 132).unwrap();
        assert_eq!((s.threads, s.occupancy.active_warps), (256, 48));
        // 20 KiB static: 10 blocks by shared memory; 256 threads give 64 warps? 10 × 8 = 80 > 64: warps limit 8.
        let s = suggest(&H100, &Granularity::SM90, &k(16, 20 * 1024), 0, 132).unwrap();
        assert_eq!(s.occupancy.active_warps, 64);
        // 40 KiB static: 5 blocks; 16-warp blocks (4 of them) fill all 64 slots.
        let s = suggest(&H100, &Granularity::SM90, &k(16, 40 * 1024), 0, 132).unwrap();
        assert_eq!(s.occupancy.active_warps, 64);
        assert!(s.threads >= 416, "{}", s.threads);
        let heavy = KernelLimits { max_threads_per_block: 64, ..k(255, 0) };
        let s = suggest(&H100, &Granularity::SM90, &heavy, 0, 132).unwrap();
        assert_eq!(s.threads, 64);
    }
}
