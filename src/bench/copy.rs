//! The `copy` suite (lesson 000, vectorized memory access): device-to-device
//! copy bandwidth of the scalar, vec2 and vec4 copy kernels and of the
//! driver's `cuMemcpyDtoDAsync`, over power-of-two sizes.
//!
//! Per size:
//!
//! * **Buffer pool.** A copy of a few MiB fits in L2 (50 MiB on an H100), so
//!   repeating it on the same buffers measures the cache, not DRAM. The
//!   suite allocates `pairs = clamp(ceil(3·L2 / (2·size)), 1, 256)` source /
//!   destination pairs and rotates over them, so consecutive copies touch
//!   at least 3× the L2 in between. Where even 256 pairs stay under 2× L2
//!   the size is marked *L2-resident*: its figures are not DRAM bandwidth
//!   (cache bandwidth, or launch overhead for the smallest sizes), and the
//!   table, JSON and plot say so.
//! * **Timing.** [`harness::measure`]: the median over the samples.
//!   Bandwidth = 2·size / median (every byte read once and written once),
//!   GB = 1e9 bytes.
//! * **Verification.** After timing a variant, the first pair's destination
//!   is poisoned (`0xA5` bytes), the variant copies once more, and source
//!   and destination are read back and compared. A mismatch stops the suite.
//!
//! The project's goal for the lesson is checked at the end: vec4 at ≥ 95%
//! of `cuMemcpyDtoD` at every size ≥ 256 MiB.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::harness::{self, Settings, Stats};
use super::report::{self, Series, Table, human_bytes};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::{CopyPlan, CopyPolicy, CopyVariant, DeviceBuffer, Error, Gpu};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "copy",
    about: "device-to-device copy: scalar / vec2 / vec4 kernels vs cuMemcpyDtoD, 4 KiB..2 GiB",
};

/// Sizes from which the goal applies (256 MiB).
pub const GOAL_MIN_BYTES: u64 = 256 << 20;

/// The goal: vec4 bandwidth at least this fraction of `cuMemcpyDtoD`'s.
pub const GOAL_RATIO: f64 = 0.95;

/// Most source/destination pairs in a size's pool.
pub const MAX_PAIRS: u64 = 256;

/// Device memory left free besides the pool (for the driver, the module
/// and anything else on the device).
pub const FREE_MEMORY_MARGIN: u64 = 256 << 20;

/// The byte every destination is filled with before a verification copy.
pub const POISON: u8 = 0xA5;

/// Units of every figure in the suite's output.
pub const UNITS_NOTE: &str = "GB = 1e9 bytes; bytes = read + written; times in ms per copy";

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyOptions {
    /// Smallest size, bytes (default 4 KiB). Sizes are the powers of two in
    /// `min_bytes..=max_bytes`.
    pub min_bytes: u64,
    /// Largest size, bytes (default 2 GiB).
    pub max_bytes: u64,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// Where `copy.json` and `copy.svg` go (default `bench-out`).
    pub out_dir: PathBuf,
    /// Most device memory one size's pool may take (default 8 GiB).
    pub pool_cap_bytes: u64,
    /// Launch policy of the kernel variants (default: the tuned one;
    /// [`CopyPolicy::LESSON`] reproduces the lesson's launch).
    pub policy: CopyPolicy,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions {
            min_bytes: 4 << 10,
            max_bytes: 2 << 30,
            settings: Settings::default(),
            out_dir: PathBuf::from("bench-out"),
            pool_cap_bytes: 8 << 30,
            policy: CopyPolicy::default(),
        }
    }
}

impl CopyOptions {
    /// A smoke run: 64 KiB..64 MiB, 5 samples.
    pub fn quick() -> Self {
        CopyOptions {
            min_bytes: 64 << 10,
            max_bytes: 64 << 20,
            settings: Settings { reps: 5, ..Settings::default() },
            ..CopyOptions::default()
        }
    }
}

/// How one copy is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CopyMethod {
    /// `copy_scalar` (32-bit accesses).
    Scalar,
    /// `copy_vec2` (64-bit accesses).
    Vec2,
    /// `copy_vec4` (128-bit accesses).
    Vec4,
    /// The driver's `cuMemcpyDtoDAsync`.
    #[serde(rename = "dtod")]
    DtoD,
}

impl CopyMethod {
    /// Every method, in table order.
    pub const ALL: [CopyMethod; 4] = [CopyMethod::Scalar, CopyMethod::Vec2, CopyMethod::Vec4, CopyMethod::DtoD];

    /// The kernel variant, or `None` for the driver copy.
    pub fn variant(self) -> Option<CopyVariant> {
        match self {
            CopyMethod::Scalar => Some(CopyVariant::Scalar),
            CopyMethod::Vec2 => Some(CopyVariant::Vec2),
            CopyMethod::Vec4 => Some(CopyVariant::Vec4),
            CopyMethod::DtoD => None,
        }
    }

    /// Short name (`scalar`, `vec2`, `vec4`, `DtoD`).
    pub fn name(self) -> &'static str {
        match self {
            CopyMethod::Scalar => "scalar",
            CopyMethod::Vec2 => "vec2",
            CopyMethod::Vec4 => "vec4",
            CopyMethod::DtoD => "DtoD",
        }
    }

    /// Legend name in plots.
    pub fn label(self) -> &'static str {
        match self {
            CopyMethod::DtoD => "cuMemcpyDtoD",
            m => m.name(),
        }
    }
}

/// The device a report was measured on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceSummary {
    /// Device name.
    pub name: String,
    /// Compute capability, `major.minor`.
    pub compute_capability: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// L2 cache, bytes.
    pub l2_bytes: u32,
    /// Global memory, bytes.
    pub total_memory_bytes: usize,
    /// Datasheet DRAM bandwidth, GB/s (1e9 bytes/s).
    pub theoretical_dram_gbps: f64,
    /// The PTX architecture loaded (`90` = `sm_90`).
    pub ptx_arch: u32,
    /// Every embedded PTX architecture.
    pub embedded_ptx_archs: Vec<u32>,
    /// Driver's CUDA version (12040 = 12.4).
    pub driver_version: i32,
}

impl DeviceSummary {
    /// The summary of `gpu`.
    pub fn of(gpu: &Gpu) -> DeviceSummary {
        let i = gpu.info();
        DeviceSummary {
            name: i.name.clone(),
            compute_capability: format!("{}.{}", i.cc_major, i.cc_minor),
            sm_count: i.sm_count,
            l2_bytes: i.l2_bytes,
            total_memory_bytes: i.total_memory,
            theoretical_dram_gbps: i.theoretical_dram_gbps(),
            ptx_arch: gpu.ptx_arch(),
            embedded_ptx_archs: crate::ptx::archs(),
            driver_version: i.driver_version,
        }
    }
}

/// The launch a kernel variant actually used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LaunchInfo {
    /// The main kernel (`copy_vec4`, …).
    pub kernel: &'static str,
    /// Bytes per access of its body.
    pub access_bytes: usize,
    /// True when alignment forced a narrower access than requested.
    pub downgraded: bool,
    /// Accesses of the body (vectors, or words for the scalar kernel).
    pub accesses: usize,
    /// Grid (x, y, z).
    pub grid: [u32; 3],
    /// Block (x, y, z).
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes.
    pub shared_mem_bytes: u32,
    /// The grid cap: waves × SMs × resident blocks per SM for this kernel.
    pub max_blocks: u32,
    /// The policy's grid cap in waves.
    pub waves: u32,
    /// Accesses per thread per step (the policy's items).
    pub items: u32,
}

/// One method's result at one size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MethodResult {
    /// The method.
    pub method: CopyMethod,
    /// Bandwidth from the median time, GB/s (2·size read + written).
    pub gbps: f64,
    /// Per-copy time statistics.
    pub stats: Stats,
    /// The launch used (kernel variants only).
    pub launch: Option<LaunchInfo>,
}

/// Every method's result at one size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeResult {
    /// Bytes copied per operation.
    pub bytes: u64,
    /// The same, readable.
    pub size: String,
    /// Source/destination pairs rotated over.
    pub pairs: u64,
    /// Device memory of the pool, bytes (`pairs · 2 · bytes`).
    pub pool_bytes: u64,
    /// True when the pool is under 2× L2: the figures are not DRAM bandwidth.
    pub l2_resident: bool,
    /// Per method, in [`CopyMethod::ALL`] order.
    pub results: Vec<MethodResult>,
}

impl SizeResult {
    /// Bandwidth of `method`, GB/s.
    pub fn gbps(&self, method: CopyMethod) -> Option<f64> {
        self.results.iter().find(|r| r.method == method).map(|r| r.gbps)
    }

    /// Bandwidth ratio `a / b`.
    pub fn ratio(&self, a: CopyMethod, b: CopyMethod) -> Option<f64> {
        Some(self.gbps(a)? / self.gbps(b)?).filter(|r| r.is_finite())
    }
}

/// A size that was not measured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Bytes per copy.
    pub bytes: u64,
    /// The same, readable.
    pub size: String,
    /// Why.
    pub reason: String,
}

/// The lesson's goal, evaluated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Goal {
    /// The goal in words.
    pub description: String,
    /// Smallest size it applies to, bytes.
    pub min_bytes: u64,
    /// Required vec4 / DtoD bandwidth ratio.
    pub threshold: f64,
    /// `None` when no measured size is large enough to judge.
    pub met: Option<bool>,
    /// Lowest vec4 / DtoD ratio among the sizes it applies to.
    pub min_ratio: Option<f64>,
    /// The size of that lowest ratio, bytes.
    pub min_ratio_at_bytes: Option<u64>,
}

impl Goal {
    /// Judges the goal on `sizes`.
    pub fn evaluate(sizes: &[SizeResult]) -> Goal {
        let worst = sizes
            .iter()
            .filter(|s| s.bytes >= GOAL_MIN_BYTES)
            .filter_map(|s| Some((s.ratio(CopyMethod::Vec4, CopyMethod::DtoD)?, s.bytes)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        Goal {
            description: format!(
                "vec4 >= {:.0}% of DtoD for sizes >= {}",
                GOAL_RATIO * 100.0,
                human_bytes(GOAL_MIN_BYTES)
            ),
            min_bytes: GOAL_MIN_BYTES,
            threshold: GOAL_RATIO,
            met: worst.map(|(r, _)| r >= GOAL_RATIO),
            min_ratio: worst.map(|(r, _)| r),
            min_ratio_at_bytes: worst.map(|(_, b)| b),
        }
    }

    /// `goal vec4 >= 95% of DtoD for sizes >= 256 MiB: MET (min 97.1% at 512 MiB)`.
    pub fn summary_line(&self) -> String {
        let verdict = match (self.met, self.min_ratio, self.min_ratio_at_bytes) {
            (Some(met), Some(r), Some(at)) => {
                format!("{} (min {:.1}% at {})", if met { "MET" } else { "NOT MET" }, r * 100.0, human_bytes(at))
            }
            _ => format!("NOT EVALUATED (no size >= {} was measured)", human_bytes(self.min_bytes)),
        };
        format!("goal {}: {verdict}", self.description)
    }
}

/// Everything the suite measured; written as `copy.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CopyReport {
    /// `"copy"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// How each figure was measured.
    pub settings: Settings,
    /// The kernel variants' launch policy.
    pub policy: PolicySummary,
    /// The units note.
    pub units: &'static str,
    /// Measured sizes, ascending.
    pub sizes: Vec<SizeResult>,
    /// Sizes left out, with the reason.
    pub skipped: Vec<Skipped>,
    /// The lesson's goal.
    pub goal: Goal,
}

/// A [`CopyPolicy`] as recorded in the JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PolicySummary {
    /// Threads per block.
    pub threads: u32,
    /// Accesses per thread per step.
    pub items: u32,
    /// Grid cap in waves of resident blocks.
    pub waves: u32,
}

impl From<CopyPolicy> for PolicySummary {
    fn from(p: CopyPolicy) -> Self {
        PolicySummary { threads: p.threads, items: p.items, waves: p.waves }
    }
}

impl CopyReport {
    /// The text table: one row per size.
    pub fn table(&self) -> Table {
        let mut t = Table::new([
            "size",
            "L2?",
            "scalar",
            "vec2",
            "vec4",
            "DtoD (GB/s)",
            "vec2/scalar",
            "vec4/scalar",
            "vec4/DtoD %",
        ]);
        let num = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "-".to_string(), f);
        for s in &self.sizes {
            let mut row = vec![s.size.clone(), if s.l2_resident { "yes" } else { "no" }.to_string()];
            for m in CopyMethod::ALL {
                row.push(num(s.gbps(m), &|g| format!("{g:.1}")));
            }
            row.push(num(s.ratio(CopyMethod::Vec2, CopyMethod::Scalar), &|r| format!("{r:.2}x")));
            row.push(num(s.ratio(CopyMethod::Vec4, CopyMethod::Scalar), &|r| format!("{r:.2}x")));
            row.push(num(s.ratio(CopyMethod::Vec4, CopyMethod::DtoD), &|r| format!("{:.1}%", r * 100.0)));
            t.row(row);
        }
        t
    }

    /// Which sizes are L2-resident, in words (for the plot's subtitle).
    pub fn l2_note(&self) -> String {
        let resident: Vec<u64> = self.sizes.iter().filter(|s| s.l2_resident).map(|s| s.bytes).collect();
        let l2 = human_bytes(u64::from(self.device.l2_bytes));
        match (resident.first(), resident.last()) {
            (Some(&lo), Some(&hi)) if lo == hi => {
                format!("L2-resident, not DRAM figures (pool < 2 x {l2} L2): {}", human_bytes(lo))
            }
            (Some(&lo), Some(&hi)) => {
                format!(
                    "L2-resident, not DRAM figures (pool < 2 x {l2} L2): {} to {}",
                    human_bytes(lo),
                    human_bytes(hi)
                )
            }
            _ => format!("no size L2-resident ({l2} L2): DRAM bandwidth throughout"),
        }
    }

    /// One series per method: GB/s against size.
    pub fn series(&self) -> Vec<Series> {
        CopyMethod::ALL
            .iter()
            .map(|&m| Series {
                name: m.label().to_string(),
                points: self.sizes.iter().filter_map(|s| Some((s.bytes as f64, s.gbps(m)?))).collect(),
            })
            .collect()
    }

    /// Writes `copy.json` and `copy.svg` into `dir`; returns their paths.
    pub fn write(&self, dir: &Path) -> BenchResult<(PathBuf, PathBuf)> {
        let json = dir.join("copy.json");
        let svg = dir.join("copy.svg");
        report::write_json(&json, self)?;
        let p = self.policy;
        let title = format!(
            "copy bandwidth vs size: {} (compute capability {}, PTX sm_{})\n{} items/thread, {} threads, {} wave(s); \
             {}; theoretical DRAM {:.0} GB/s",
            self.device.name,
            self.device.compute_capability,
            self.device.ptx_arch,
            p.items,
            p.threads,
            p.waves,
            self.l2_note(),
            self.device.theoretical_dram_gbps,
        );
        report::plot_svg(&svg, &title, "bytes copied (log2 scale)", "GB/s (1e9 B/s, read + written)", &self.series())?;
        Ok((json, svg))
    }
}

/// The powers of two in `min..=max`.
pub fn sizes(min: u64, max: u64) -> Vec<u64> {
    (0..64).map(|e| 1u64 << e).filter(|&s| s >= min && s <= max).collect()
}

/// How a size's buffer pool is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    /// Source/destination pairs.
    pub pairs: u64,
    /// True when the pool is under 2× L2.
    pub l2_resident: bool,
}

impl Pool {
    /// The pool for copies of `size` bytes with `l2` bytes of L2, at most
    /// `cap` bytes of device memory and `free` bytes free on the device
    /// (less [`FREE_MEMORY_MARGIN`]): `clamp(ceil(3·l2 / (2·size)), 1, 256)`
    /// pairs, fewer if memory is short. `Err` says why not even one pair
    /// fits.
    pub fn plan(size: u64, l2: u64, cap: u64, free: u64) -> Result<Pool, String> {
        let pair = size.saturating_mul(2);
        if pair == 0 {
            return Err("empty size".into());
        }
        let want = (3 * l2).div_ceil(pair).clamp(1, MAX_PAIRS);
        let budget = cap.min(free.saturating_sub(FREE_MEMORY_MARGIN));
        let pairs = want.min(budget / pair);
        if pairs == 0 {
            return Err(format!(
                "one source/destination pair needs {}; the budget is {} (cap {}, {} free on the device less {} margin)",
                human_bytes(pair),
                human_bytes(budget),
                human_bytes(cap),
                human_bytes(free),
                human_bytes(FREE_MEMORY_MARGIN)
            ));
        }
        Ok(Pool { pairs, l2_resident: pairs * pair < 2 * l2 })
    }
}

/// The non-zero source data: a cheap hash of the index that is never 0 and
/// never the poison pattern.
pub fn pattern_word(i: usize) -> u32 {
    let mut x = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    let w = (x ^ (x >> 31)) as u32;
    let poison = u32::from_ne_bytes([POISON; 4]);
    if w == 0 || w == poison { !poison } else { w }
}

/// Runs the suite on `gpu`: measures, verifies, prints the table and the
/// goal to stdout (notes and progress to stderr), writes `copy.json` and
/// `copy.svg` into `opts.out_dir`, and returns the report.
pub fn run(gpu: &Gpu, opts: &CopyOptions) -> BenchResult<CopyReport> {
    let report = measure_suite(gpu, opts)?;
    println!("copy bandwidth on {} ({UNITS_NOTE})", report.device.name);
    let p = report.policy;
    println!(
        "kernels: {} access(es) per thread per step, {} threads per block, grid capped at {} wave(s) of resident blocks",
        p.items, p.threads, p.waves
    );
    println!("{}", report.table());
    if report.sizes.iter().any(|s| s.l2_resident) {
        println!(
            "L2? yes: the size's whole buffer pool is under 2 x L2 ({}): its figures measure the cache (or, for the \
             smallest sizes, launch overhead), not DRAM",
            human_bytes(u64::from(report.device.l2_bytes))
        );
    }
    for s in &report.skipped {
        println!("skipped {}: {}", s.size, s.reason);
    }
    println!("theoretical DRAM bandwidth: {:.1} GB/s", report.device.theoretical_dram_gbps);
    println!("{}", report.goal.summary_line());
    let (json, svg) = report.write(&opts.out_dir)?;
    println!("wrote {} and {}", json.display(), svg.display());
    Ok(report)
}

/// Measures and verifies every size and method (no table, no files).
/// Progress goes to stderr (hidden when stderr is not a terminal).
pub fn measure_suite(gpu: &Gpu, opts: &CopyOptions) -> BenchResult<CopyReport> {
    if opts.settings.reps == 0 {
        return Err(BenchError::Options("--reps must be at least 1".into()));
    }
    let list = sizes(opts.min_bytes.max(4), opts.max_bytes);
    if list.is_empty() {
        return Err(BenchError::Options(format!(
            "no power of two between {} and {} (the smallest size is 4 bytes, one u32)",
            human_bytes(opts.min_bytes),
            human_bytes(opts.max_bytes)
        )));
    }
    let l2 = u64::from(gpu.info().l2_bytes);
    let bar = ProgressBar::new((list.len() * CopyMethod::ALL.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template("copy {bar:30} {pos}/{len} {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );

    let mut sizes_done = Vec::new();
    let mut skipped = Vec::new();
    for &size in &list {
        let skip = |reason: String| {
            bar.suspend(|| eprintln!("skipping {}: {reason}", human_bytes(size)));
            Skipped { bytes: size, size: human_bytes(size), reason }
        };
        let (free, _) = gpu.memory_info()?;
        let pool = match Pool::plan(size, l2, opts.pool_cap_bytes, free as u64) {
            Ok(p) => p,
            Err(reason) => {
                skipped.push(skip(reason));
                bar.inc(CopyMethod::ALL.len() as u64);
                continue;
            }
        };
        match measure_size(gpu, opts, size, pool, &bar) {
            Ok(r) => sizes_done.push(r),
            Err(BenchError::Gpu(e)) if is_out_of_memory(&e) => {
                skipped.push(skip(format!("allocating the pool failed: {e}")));
                bar.set_position(((sizes_done.len() + skipped.len()) * CopyMethod::ALL.len()) as u64);
            }
            Err(e) => {
                bar.abandon();
                return Err(e);
            }
        }
    }
    bar.finish_and_clear();
    let goal = Goal::evaluate(&sizes_done);
    Ok(CopyReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        settings: opts.settings,
        policy: opts.policy.into(),
        units: UNITS_NOTE,
        sizes: sizes_done,
        skipped,
        goal,
    })
}

/// `CUDA_ERROR_OUT_OF_MEMORY`.
const CUDA_ERROR_OUT_OF_MEMORY: u32 = 2;

fn is_out_of_memory(e: &Error) -> bool {
    matches!(e, Error::OutOfMemory { .. }) || matches!(e, Error::Driver(d) if d.code == CUDA_ERROR_OUT_OF_MEMORY)
}

fn measure_size(gpu: &Gpu, opts: &CopyOptions, size: u64, pool: Pool, bar: &ProgressBar) -> BenchResult<SizeResult> {
    let elems = usize::try_from(size / 4)
        .map_err(|_| BenchError::Options(format!("{} does not fit this machine's address space", human_bytes(size))))?;
    let human = human_bytes(size);
    bar.set_message(format!("{human}: allocating {} pairs", pool.pairs));

    let mut srcs: Vec<DeviceBuffer<u32>> = Vec::new();
    let mut dsts: Vec<DeviceBuffer<u32>> = Vec::new();
    {
        let data: Vec<u32> = (0..elems).map(pattern_word).collect();
        for _ in 0..pool.pairs {
            srcs.push(gpu.upload(&data)?);
            dsts.push(gpu.alloc_zeroed::<u32>(elems)?);
        }
    }
    let pairs = srcs.len();
    let mut host_src = vec![0u32; elems];
    let mut host_dst = vec![0u32; elems];
    let mut results = Vec::with_capacity(CopyMethod::ALL.len());

    for method in CopyMethod::ALL {
        bar.set_message(format!("{human} {}", method.name()));
        let stats = harness::measure(gpu, &opts.settings, |i| {
            let k = i % pairs;
            copy_once(gpu, &srcs[k], &mut dsts[k], method, &opts.policy).map(|_| ())
        })?;

        // Verification on pair 0: poison, copy once, read both back.
        dsts[0].fill_bytes(POISON)?;
        let launch = copy_once(gpu, &srcs[0], &mut dsts[0], method, &opts.policy)?
            .map(|p| launch_info(gpu, &p, &opts.policy))
            .transpose()?;
        gpu.synchronize()?;
        srcs[0].copy_to_host(&mut host_src)?;
        dsts[0].copy_to_host(&mut host_dst)?;
        if let Some((i, got, want)) = crate::reference::first_mismatch(&host_dst, &host_src)? {
            return Err(BenchError::Verification {
                suite: SUITE.name,
                message: format!(
                    "{} copy of {human}: destination element {i} (byte offset {}) is {got:#010x}, the source holds \
                     {want:#010x}{}",
                    method.name(),
                    4 * i,
                    if got == u32::from_ne_bytes([POISON; 4]) {
                        " (never written: still the poison pattern)"
                    } else {
                        ""
                    }
                ),
            });
        }
        results.push(MethodResult { method, gbps: harness::gbps(2.0 * size as f64, stats.median_ms), stats, launch });
        bar.inc(1);
    }

    // No variant may have touched the sources either.
    if let Some(i) = host_src.iter().enumerate().position(|(i, &w)| w != pattern_word(i)) {
        return Err(BenchError::Verification {
            suite: SUITE.name,
            message: format!(
                "source of the {human} copies was modified: element {i} is {:#010x}, uploaded {:#010x}",
                host_src[i],
                pattern_word(i)
            ),
        });
    }

    Ok(SizeResult {
        bytes: size,
        size: human,
        pairs: pairs as u64,
        pool_bytes: pairs as u64 * 2 * size,
        l2_resident: pool.l2_resident,
        results,
    })
}

/// Queues one copy of `src` into `dst`; for kernel variants, returns the
/// plan it followed.
fn copy_once(
    gpu: &Gpu,
    src: &DeviceBuffer<u32>,
    dst: &mut DeviceBuffer<u32>,
    method: CopyMethod,
    policy: &CopyPolicy,
) -> BenchResult<Option<CopyPlan>> {
    match method.variant() {
        None => gpu.copy_with_driver(&src.as_view(), &mut dst.as_view_mut())?,
        Some(v) => return Ok(Some(gpu.copy_with(&src.as_view(), &mut dst.as_view_mut(), v, policy)?)),
    }
    Ok(None)
}

/// The launch a plan's main kernel gets (the same rule [`Gpu::copy`]
/// applies).
fn launch_info(gpu: &Gpu, plan: &CopyPlan, policy: &CopyPolicy) -> BenchResult<LaunchInfo> {
    let kernel = policy.kernel(plan.width)?;
    let max_blocks = policy.grid_cap(gpu.max_resident_blocks(kernel, policy.threads)?);
    let cfg = gpu.copy_launch_config(plan, policy)?;
    Ok(LaunchInfo {
        kernel,
        access_bytes: plan.width.bytes(),
        downgraded: plan.downgraded(),
        accesses: plan.accesses(),
        grid: [cfg.grid.x, cfg.grid.y, cfg.grid.z],
        block: [cfg.block.x, cfg.block.y, cfg.block.z],
        shared_mem_bytes: cfg.shared_mem_bytes,
        max_blocks,
        waves: policy.waves,
        items: policy.items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100_L2: u64 = 50 << 20;
    const BIG: u64 = 80 << 30;

    #[test]
    fn power_of_two_sizes() {
        assert_eq!(sizes(4096, 65536), vec![4096, 8192, 16384, 32768, 65536]);
        assert_eq!(sizes(3000, 9000), vec![4096, 8192]);
        assert_eq!(sizes(4 << 10, 2 << 30).len(), 20);
        assert!(sizes(5000, 6000).is_empty());
        assert_eq!(sizes(1 << 63, u64::MAX), vec![1 << 63]);
    }

    #[test]
    fn pools_rotate_past_l2() {
        // Small sizes: 256 pairs, still inside 2 × L2.
        let p = Pool::plan(4 << 10, H100_L2, 8 << 30, BIG).unwrap();
        assert_eq!(p, Pool { pairs: 256, l2_resident: true });
        assert!(Pool::plan(128 << 10, H100_L2, 8 << 30, BIG).unwrap().l2_resident);
        // 256 KiB: 256 pairs = 128 MiB, past 2 × 50 MiB.
        assert_eq!(Pool::plan(256 << 10, H100_L2, 8 << 30, BIG).unwrap(), Pool { pairs: 256, l2_resident: false });
        // 16 MiB: ceil(150 / 32) = 5 pairs.
        assert_eq!(Pool::plan(16 << 20, H100_L2, 8 << 30, BIG).unwrap(), Pool { pairs: 5, l2_resident: false });
        assert_eq!(Pool::plan(2 << 30, H100_L2, 8 << 30, BIG).unwrap(), Pool { pairs: 1, l2_resident: false });
    }

    #[test]
    fn pools_respect_memory() {
        // Short of memory: fewer pairs, and the size can become L2-resident.
        let p = Pool::plan(16 << 20, H100_L2, 64 << 20, BIG).unwrap();
        assert_eq!(p, Pool { pairs: 2, l2_resident: true });
        assert!(Pool::plan(8 << 30, H100_L2, 8 << 30, BIG).unwrap_err().contains("needs 16 GiB"));
        assert!(Pool::plan(2 << 30, H100_L2, 8 << 30, 4 << 30).is_err());
        assert_eq!(Pool::plan(2 << 30, H100_L2, 8 << 30, (4 << 30) + FREE_MEMORY_MARGIN).unwrap().pairs, 1);
    }

    #[test]
    fn pattern_is_never_zero_or_poison() {
        assert!((0..1_000_000).all(|i| {
            let w = pattern_word(i);
            w != 0 && w != 0xA5A5_A5A5
        }));
        assert_ne!(pattern_word(0), pattern_word(1));
    }

    fn size_result(bytes: u64, scalar: f64, vec4: f64, dtod: f64) -> SizeResult {
        let stats = Stats::from_samples(&[1.0], 1).unwrap();
        let r = |method, gbps| MethodResult { method, gbps, stats, launch: None };
        SizeResult {
            bytes,
            size: human_bytes(bytes),
            pairs: 1,
            pool_bytes: 2 * bytes,
            l2_resident: bytes < (1 << 20),
            results: vec![
                r(CopyMethod::Scalar, scalar),
                r(CopyMethod::Vec2, (scalar + vec4) / 2.0),
                r(CopyMethod::Vec4, vec4),
                r(CopyMethod::DtoD, dtod),
            ],
        }
    }

    #[test]
    fn goal_is_judged_on_large_sizes_only() {
        let sizes = vec![
            size_result(64 << 10, 100.0, 150.0, 300.0), // 50%, too small to count
            size_result(256 << 20, 2000.0, 2950.0, 3000.0),
            size_result(512 << 20, 2000.0, 2913.0, 3000.0),
            size_result(1 << 30, 2000.0, 2990.0, 3000.0),
        ];
        let g = Goal::evaluate(&sizes);
        assert_eq!(g.met, Some(true));
        assert_eq!(g.min_ratio_at_bytes, Some(512 << 20));
        assert_eq!(g.summary_line(), "goal vec4 >= 95% of DtoD for sizes >= 256 MiB: MET (min 97.1% at 512 MiB)");

        let mut worse = sizes.clone();
        worse.push(size_result(2 << 30, 2000.0, 2700.0, 3000.0));
        assert_eq!(
            Goal::evaluate(&worse).summary_line(),
            "goal vec4 >= 95% of DtoD for sizes >= 256 MiB: NOT MET (min 90.0% at 2 GiB)"
        );

        let g = Goal::evaluate(&sizes[..1]);
        assert_eq!(g.met, None);
        assert!(g.summary_line().ends_with("NOT EVALUATED (no size >= 256 MiB was measured)"));
    }

    fn report(sizes: Vec<SizeResult>) -> CopyReport {
        CopyReport {
            suite: "copy",
            device: DeviceSummary {
                name: "Test GPU".into(),
                compute_capability: "9.0".into(),
                sm_count: 132,
                l2_bytes: 50 << 20,
                total_memory_bytes: 80 << 30,
                theoretical_dram_gbps: 3352.3,
                ptx_arch: 90,
                embedded_ptx_archs: vec![70, 90],
                driver_version: 12040,
            },
            settings: Settings::default(),
            policy: CopyPolicy::TUNED.into(),
            units: UNITS_NOTE,
            goal: Goal::evaluate(&sizes),
            sizes,
            skipped: vec![],
        }
    }

    #[test]
    fn table_and_outputs() {
        let r =
            report(vec![size_result(64 << 10, 100.0, 150.0, 300.0), size_result(256 << 20, 2000.0, 2950.0, 3000.0)]);
        let text = r.table().render();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("size") && lines[0].ends_with("vec4/DtoD %"), "{text}");
        assert!(lines[2].starts_with("64 KiB") && lines[2].contains("yes") && lines[2].ends_with("50.0%"), "{text}");
        assert!(lines[3].contains("1.48x") && lines[3].ends_with("98.3%"), "{text}");
        assert_eq!(r.l2_note(), "L2-resident, not DRAM figures (pool < 2 x 50 MiB L2): 64 KiB");
        let series = r.series();
        assert_eq!(series.len(), 4);
        assert_eq!(series[3].name, "cuMemcpyDtoD");
        assert_eq!(series[2].points, vec![(65536.0, 150.0), ((256u64 << 20) as f64, 2950.0)]);

        let dir = std::env::temp_dir().join(format!("coalesce-copy-report-{}", std::process::id()));
        let (json, svg) = r.write(&dir).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        assert_eq!(v["sizes"][1]["results"][3]["method"], "dtod");
        assert_eq!(v["sizes"][0]["l2_resident"], true);
        assert_eq!(v["goal"]["met"], true);
        assert_eq!(v["settings"]["reps"], 20);
        assert_eq!(v["device"]["ptx_arch"], 90);
        assert!(v["sizes"][0]["results"][0]["stats"]["median_ms"].is_number());
        assert!(std::fs::read_to_string(svg).unwrap().contains("L2-resident"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
