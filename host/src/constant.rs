//! Constant memory: broadcast against serialized reads, and the same
//! patterns from global memory (lesson 004, "constant memory").
//!
//! A [`ConstantTable`] holds [`TABLE_LEN`] words twice: in the module's
//! constant-memory array `CONSTANT_TABLE` ([`TABLE_SYMBOL`], written by
//! name like `cudaMemcpyToSymbol`) and in a global buffer. Its
//! [`run`](ConstantTable::run) launches one of four kernels
//! ([`ConstantVariant`]): each thread reads the table `iters` times with
//! the variant's [`Pattern`] and writes one folded result, which
//! [`reference()`] reproduces on the CPU.
//!
//! ```no_run
//! use coalesce_host::constant::{self, ConstantVariant, TABLE_LEN};
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = coalesce_host::Gpu::new()?;
//! let values: Vec<u32> = (0..TABLE_LEN as u32).map(|i| i * 7 + 1).collect();
//! let table = gpu.constant_table(&values)?;
//! let mut out = gpu.alloc_zeroed::<u32>(4096)?;
//! table.run(ConstantVariant::ConstantBroadcast, &mut out.as_view_mut(), 64)?;
//! let want = constant::reference(&values, ConstantVariant::ConstantBroadcast.pattern(), 4096, 64)?;
//! assert_eq!(out.to_vec()?, want);
//! # Ok(())
//! # }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use coalesce_kernels::constant::{accumulate, broadcast_index, seed, serialized_index};

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::LaunchConfig;
use crate::memory::{DeviceBuffer, DeviceViewMut};

pub use coalesce_kernels::constant::{STEP, TABLE_LEN, WARP};

/// The constant-memory array the constant kernels read.
pub const TABLE_SYMBOL: &str = "CONSTANT_TABLE";

/// Threads per block of every kernel here (a whole number of warps, so
/// the kernels' lane, `t mod 32`, is the hardware lane).
pub const THREADS: u32 = 256;

/// Owner tags of the constant symbol (which table's data it holds).
static NEXT_TAG: AtomicU64 = AtomicU64::new(1);

/// How the 32 lanes of a warp index the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Every lane reads the same word.
    Broadcast,
    /// The lanes read 32 distinct, consecutive words.
    Serialized,
}

impl Pattern {
    /// Both.
    pub const ALL: [Pattern; 2] = [Pattern::Broadcast, Pattern::Serialized];

    /// Index of read `k` by global thread `t` (the kernels' own function).
    pub fn index(self, t: usize, k: usize) -> usize {
        match self {
            Pattern::Broadcast => broadcast_index(t, k),
            Pattern::Serialized => serialized_index(t, k),
        }
    }

    /// Distinct words a full warp reads per access: 1 or 32.
    pub fn distinct_per_warp(self) -> usize {
        match self {
            Pattern::Broadcast => 1,
            Pattern::Serialized => WARP,
        }
    }

    /// `broadcast` or `serialized`.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Broadcast => "broadcast",
            Pattern::Serialized => "serialized",
        }
    }
}

/// Where the table is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Memory {
    /// The constant-memory array, through the constant cache.
    Constant,
    /// A global buffer, through L1/L2.
    Global,
}

/// One of the four kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConstantVariant {
    /// `constant_broadcast`.
    ConstantBroadcast,
    /// `constant_serialized`.
    ConstantSerialized,
    /// `global_broadcast`.
    GlobalBroadcast,
    /// `global_serialized`.
    GlobalSerialized,
}

impl ConstantVariant {
    /// All four, constant memory first.
    pub const ALL: [ConstantVariant; 4] = [
        ConstantVariant::ConstantBroadcast,
        ConstantVariant::ConstantSerialized,
        ConstantVariant::GlobalBroadcast,
        ConstantVariant::GlobalSerialized,
    ];

    /// The kernel (also the variant's name).
    pub fn kernel(self) -> &'static str {
        match self {
            ConstantVariant::ConstantBroadcast => "constant_broadcast",
            ConstantVariant::ConstantSerialized => "constant_serialized",
            ConstantVariant::GlobalBroadcast => "global_broadcast",
            ConstantVariant::GlobalSerialized => "global_serialized",
        }
    }

    /// The index pattern.
    pub fn pattern(self) -> Pattern {
        match self {
            ConstantVariant::ConstantBroadcast | ConstantVariant::GlobalBroadcast => Pattern::Broadcast,
            ConstantVariant::ConstantSerialized | ConstantVariant::GlobalSerialized => Pattern::Serialized,
        }
    }

    /// The memory the table is read from.
    pub fn memory(self) -> Memory {
        match self {
            ConstantVariant::ConstantBroadcast | ConstantVariant::ConstantSerialized => Memory::Constant,
            ConstantVariant::GlobalBroadcast | ConstantVariant::GlobalSerialized => Memory::Global,
        }
    }
}

impl std::str::FromStr for ConstantVariant {
    type Err = String;

    /// The kernel name, `constant_broadcast` etc.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        ConstantVariant::ALL.into_iter().find(|v| v.kernel().eq_ignore_ascii_case(s.trim())).ok_or_else(|| {
            format!(
                "`{s}` is not a constant-suite kernel (constant_broadcast, constant_serialized, global_broadcast, \
                 global_serialized)"
            )
        })
    }
}

/// The launch for `n` threads: `ceil(n / 256)` blocks of [`THREADS`]
/// (saturated at `u32::MAX`, which validation refuses).
pub fn launch_config(n: usize) -> LaunchConfig {
    LaunchConfig::new(n.div_ceil(THREADS as usize).min(u32::MAX as usize) as u32, THREADS)
}

/// The table on the device: in constant memory and in a global buffer.
pub struct ConstantTable {
    gpu: Gpu,
    values: Vec<u32>,
    global: DeviceBuffer<u32>,
    tag: u64,
}

impl Gpu {
    /// Puts `values` (exactly [`TABLE_LEN`] words) into constant memory
    /// and into a global buffer.
    pub fn constant_table(&self, values: &[u32]) -> Result<ConstantTable> {
        if values.len() != TABLE_LEN {
            return Err(Error::LengthMismatch { op: "constant_table", expected: TABLE_LEN, got: values.len() });
        }
        let global = self.upload(values)?;
        let table = ConstantTable {
            gpu: self.clone(),
            values: values.to_vec(),
            global,
            tag: NEXT_TAG.fetch_add(1, Ordering::Relaxed),
        };
        table.load_symbol()?;
        Ok(table)
    }
}

impl ConstantTable {
    /// Writes the values into `CONSTANT_TABLE` on the stream unless it
    /// holds them already (another table may have been loaded since; the
    /// copy comes from the table's global buffer, so nothing waits).
    fn load_symbol(&self) -> Result<()> {
        self.with_symbol(|| Ok(()))
    }

    /// Runs `launch` (work on this table's stream that reads
    /// `CONSTANT_TABLE`) with the table in the symbol, as one unit against
    /// other tables on any thread or stream.
    fn with_symbol(&self, launch: impl FnOnce() -> Result<()>) -> Result<()> {
        let src = self.global.as_view();
        src.check_gpu(&self.gpu, "constant_table")?;
        // SAFETY: `global` holds the table's TABLE_LEN words (its values,
        // which the tag stands for) and lives as long as `self`.
        unsafe { self.gpu.with_symbol(TABLE_SYMBOL, self.tag, (src.device_ptr(), src.byte_len()), launch) }
    }

    /// The table's values.
    pub fn values(&self) -> &[u32] {
        &self.values
    }

    /// Runs `variant` with one thread per element of `out` (`out.len()`
    /// threads), each folding `iters` reads of the table into `out[t]`.
    /// Queued on the stream; returns the launch used. An empty `out`
    /// launches nothing.
    pub fn run(&self, variant: ConstantVariant, out: &mut DeviceViewMut<'_, u32>, iters: u32) -> Result<LaunchConfig> {
        let kernel = variant.kernel();
        out.check_gpu(&self.gpu, kernel)?;
        let n = out.len();
        let cfg = launch_config(n);
        if n == 0 {
            return Ok(cfg);
        }
        let po = out.device_ptr();
        match variant.memory() {
            Memory::Constant => {
                // SAFETY: `out` is a live view of this context holding n
                // words; the kernel writes out[t] for t < n only and reads
                // the constant table inside its bounds.
                self.with_symbol(|| unsafe { self.gpu.launch(kernel, &cfg, &[&po, &n, &iters]) })?;
            }
            Memory::Global => {
                let pt = self.global.device_ptr();
                // SAFETY: as above; `table` is this table's live global
                // buffer of TABLE_LEN words (read only), distinct from `out`,
                // which is borrowed mutably.
                unsafe { self.gpu.launch(kernel, &cfg, &[&pt, &po, &n, &iters])? };
            }
        }
        Ok(cfg)
    }
}

impl std::fmt::Debug for ConstantTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConstantTable").field("len", &self.values.len()).finish_non_exhaustive()
    }
}

/// The CPU reference: for each of `n` threads, the accumulator after
/// folding reads `k < iters` of `table` with `pattern` (rayon).
pub fn reference(table: &[u32], pattern: Pattern, n: usize, iters: u32) -> Result<Vec<u32>> {
    use rayon::prelude::*;
    if table.len() != TABLE_LEN {
        return Err(Error::LengthMismatch { op: "constant::reference", expected: TABLE_LEN, got: table.len() });
    }
    Ok((0..n)
        .into_par_iter()
        .map(|t| (0..iters as usize).fold(seed(t), |acc, k| accumulate(acc, table[pattern.index(t, k)])))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_patterns_memories() {
        for v in ConstantVariant::ALL {
            assert_eq!(v.kernel().parse::<ConstantVariant>(), Ok(v));
            let mem = if v.kernel().starts_with("constant_") { Memory::Constant } else { Memory::Global };
            assert_eq!(v.memory(), mem);
            assert!(v.kernel().ends_with(v.pattern().name()));
        }
        assert!("constant".parse::<ConstantVariant>().is_err());
        assert_eq!(Pattern::Serialized.distinct_per_warp(), 32);
    }

    #[test]
    fn launches_cover_every_thread() {
        assert_eq!(launch_config(1).grid.x, 1);
        assert_eq!(launch_config(256).grid.x, 1);
        assert_eq!(launch_config(257).grid.x, 2);
        assert_eq!(launch_config(0).grid.x, 0);
    }

    #[test]
    fn reference_folds_in_order() {
        let table: Vec<u32> = (0..TABLE_LEN as u32).map(|i| i.wrapping_mul(2_654_435_761) | 1).collect();
        let out = reference(&table, Pattern::Serialized, 70, 3).unwrap();
        for (t, &got) in out.iter().enumerate() {
            let mut acc = seed(t);
            for k in 0..3 {
                acc = acc.rotate_left(5) ^ table[(k * STEP + t / 32 + t % 32) % TABLE_LEN];
            }
            assert_eq!(got, acc, "thread {t}");
        }
        assert_eq!(reference(&table, Pattern::Broadcast, 5, 0).unwrap(), (0..5).map(seed).collect::<Vec<_>>());
        assert!(reference(&table[1..], Pattern::Broadcast, 5, 1).is_err());
    }
}
