//! The `reduce` suite (execution-model lesson, parallel reduction): sums of
//! `f32`, `i32` and `f64` with the neighbored, interleaved and fast
//! kernels, against the DRAM floor.
//!
//! * **Floor.** A sum must read its input once: the floor is `n · size`
//!   bytes at the bandwidth of the driver's device-to-device copy measured
//!   in the same run (`2 · n · size` bytes moved by `cuMemcpyDtoDAsync`
//!   over its median time). `% of floor` = floor time / kernel time.
//! * **Inputs.** Powers of two from `min_elems` to `max_elems` (default
//!   2^20..2^28). Small inputs rotate over a pool of copies so
//!   consecutive sums touch at least 3× the L2 (as the `copy` suite does);
//!   a size whose pool stays under 2× L2 is marked L2-resident.
//! * **Timing.** [`harness::measure`] of one `reduce_sum_into` (all passes,
//!   nothing allocated); GB/s = bytes read / median time (1 GB = 1e9 B).
//! * **Verification.** Each variant's result is read back and compared
//!   with the CPU reference: `i32` exactly (wrapping), floats within the
//!   plan's bound [`ReducePlan::error_bound`](crate::ReducePlan::error_bound).
//!
//! Goal: the fast kernel at >= 93% of the floor at 2^28 elements, for `f32`
//! and `i32` alike.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::copy::{DeviceSummary, pattern_word};
use super::harness::{self, Settings, Stats};
use super::report::{self, Series, Table};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::reduce::cpu;
use crate::{DeviceBuffer, Gpu, ReduceElem, ReducePolicy, ReduceVariant};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "reduce",
    about: "sums of f32/i32/f64: neighbored, interleaved and fast kernels vs the DRAM floor (DtoD), 2^20..2^28",
};

/// The goal's size, elements.
pub const GOAL_ELEMS: u64 = 1 << 28;
/// The goal: fast kernel time at most floor / this.
pub const GOAL_RATIO: f64 = 0.93;
/// Most copies of one input in a pool.
pub const MAX_POOL: u64 = 64;

/// Element types the suite sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    /// `f32`
    F32,
    /// `i32`
    I32,
    /// `f64`
    F64,
}

impl ElemType {
    /// All, in table order.
    pub const ALL: [ElemType; 3] = [ElemType::F32, ElemType::I32, ElemType::F64];

    /// `f32`, `i32`, `f64`.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::I32 => "i32",
            ElemType::F64 => "f64",
        }
    }

    fn bytes(self) -> u64 {
        if self == ElemType::F64 { 8 } else { 4 }
    }
}

impl std::str::FromStr for ElemType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ElemType::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| format!("unknown type `{s}` (f32, i32, f64)"))
    }
}

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceOptions {
    /// Smallest element count (a power of two is used for each size).
    pub min_elems: u64,
    /// Largest element count.
    pub max_elems: u64,
    /// Element types.
    pub types: Vec<ElemType>,
    /// Kernel variants.
    pub variants: Vec<ReduceVariant>,
    /// Launch policy.
    pub policy: ReducePolicy,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// Where `reduce.json` and `reduce.svg` go.
    pub out_dir: PathBuf,
}

impl Default for ReduceOptions {
    fn default() -> Self {
        ReduceOptions {
            min_elems: 1 << 20,
            max_elems: GOAL_ELEMS,
            types: ElemType::ALL.to_vec(),
            variants: ReduceVariant::ALL.to_vec(),
            policy: ReducePolicy::default(),
            settings: Settings::default(),
            out_dir: PathBuf::from("bench-out"),
        }
    }
}

impl ReduceOptions {
    /// A smoke run: 2^20..2^24 elements, 5 samples.
    pub fn quick() -> Self {
        ReduceOptions {
            max_elems: 1 << 24,
            settings: Settings { reps: 5, ..Settings::default() },
            ..ReduceOptions::default()
        }
    }
}

/// One variant at one size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantResult {
    /// `neighbored`, `interleaved`, `fast`.
    pub variant: &'static str,
    /// Bytes read / median time, GB/s.
    pub gbps: f64,
    /// floor time / median time.
    pub of_floor: f64,
    /// Time statistics of one whole sum (all passes).
    pub stats: Stats,
    /// Kernel launches per sum and the first pass's grid and block.
    pub passes: usize,
    /// First pass's grid.
    pub grid: u32,
    /// Threads per block.
    pub threads: u32,
}

/// One type at one size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeResult {
    /// Element type.
    pub elem: ElemType,
    /// Elements summed.
    pub elems: u64,
    /// Bytes read by one sum.
    pub bytes: u64,
    /// Copies of the input rotated over.
    pub pool: u64,
    /// True when the pool is under 2× L2.
    pub l2_resident: bool,
    /// `cuMemcpyDtoD` of the input: bytes read + written / median, GB/s.
    pub dtod_gbps: f64,
    /// The floor: bytes read at the DtoD bandwidth, ms.
    pub floor_ms: f64,
    /// Per variant.
    pub variants: Vec<VariantResult>,
}

/// The goal, evaluated per type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Goal {
    /// Element type.
    pub elem: ElemType,
    /// The fast kernel's fraction of the floor at [`GOAL_ELEMS`], if measured.
    pub of_floor: Option<f64>,
    /// Met?
    pub met: Option<bool>,
}

/// Everything measured; written as `reduce.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReduceReport {
    /// `"reduce"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// How each figure was measured.
    pub settings: Settings,
    /// Threads per block and waves of the fast kernel.
    pub threads: u32,
    /// Grid cap of the fast kernel in waves.
    pub waves: u32,
    /// Units.
    pub units: &'static str,
    /// Per type and size.
    pub sizes: Vec<SizeResult>,
    /// The goal for f32 and i32.
    pub goals: Vec<Goal>,
}

const UNITS: &str = "GB = 1e9 bytes; a sum reads each element once; DtoD counts read + written";

/// The powers of two in `min..=max`.
pub fn sizes(min: u64, max: u64) -> Vec<u64> {
    (0..63).map(|e| 1u64 << e).filter(|&s| s >= min.max(1) && s <= max).collect()
}

/// Copies of an input of `bytes` so a rotation touches 3× the L2:
/// `clamp(ceil(3·l2 / bytes), 1, MAX_POOL)`, and whether that stays under
/// 2× L2.
pub fn pool(bytes: u64, l2: u64) -> (u64, bool) {
    let n = (3 * l2).div_ceil(bytes.max(1)).clamp(1, MAX_POOL);
    (n, n * bytes < 2 * l2)
}

impl ReduceReport {
    /// The text table.
    pub fn table(&self) -> Table {
        let mut t =
            Table::new(["type", "elements", "L2?", "DtoD GB/s", "variant", "GB/s", "% of floor", "passes", "grid"]);
        for s in &self.sizes {
            for v in &s.variants {
                t.row([
                    s.elem.name().to_string(),
                    format!("2^{}", s.elems.trailing_zeros()),
                    if s.l2_resident { "yes" } else { "no" }.to_string(),
                    format!("{:.0}", s.dtod_gbps),
                    v.variant.to_string(),
                    format!("{:.1}", v.gbps),
                    format!("{:.1}%", v.of_floor * 100.0),
                    v.passes.to_string(),
                    v.grid.to_string(),
                ]);
            }
        }
        t
    }

    /// Writes `reduce.json` and `reduce.svg` into `dir`.
    pub fn write(&self, dir: &Path) -> BenchResult<(PathBuf, PathBuf)> {
        let (json, svg) = (dir.join("reduce.json"), dir.join("reduce.svg"));
        report::write_json(&json, self)?;
        let mut series = Vec::new();
        for &t in &ElemType::ALL {
            let rows: Vec<&SizeResult> = self.sizes.iter().filter(|s| s.elem == t).collect();
            if rows.is_empty() {
                continue;
            }
            for v in ReduceVariant::ALL {
                let points: Vec<(f64, f64)> = rows
                    .iter()
                    .filter_map(|s| Some((s.bytes as f64, s.variants.iter().find(|r| r.variant == v.name())?.gbps)))
                    .collect();
                if !points.is_empty() {
                    series.push(Series { name: format!("{} {}", t.name(), v.name()), points });
                }
            }
            series.push(Series {
                name: format!("{} floor (DtoD)", t.name()),
                points: rows.iter().map(|s| (s.bytes as f64, s.bytes as f64 / (s.floor_ms * 1e-3) / 1e9)).collect(),
            });
        }
        let title = format!(
            "sum bandwidth vs size: {} (PTX sm_{}); fast kernel {} threads, {} waves; floor = bytes read at cuMemcpyDtoD's bandwidth",
            self.device.name, self.device.ptx_arch, self.threads, self.waves
        );
        report::plot_svg(&svg, &title, "bytes read (log2 scale)", "GB/s read (1e9 B/s)", &series)?;
        Ok((json, svg))
    }
}

/// Runs the suite, prints the table and the goal, writes the files.
pub fn run(gpu: &Gpu, opts: &ReduceOptions) -> BenchResult<ReduceReport> {
    if opts.settings.reps == 0 {
        return Err(BenchError::Options("--reps must be at least 1".into()));
    }
    let list = sizes(opts.min_elems, opts.max_elems);
    if list.is_empty() || opts.types.is_empty() || opts.variants.is_empty() {
        return Err(BenchError::Options("no size, type or variant to run".into()));
    }
    let mut rows = Vec::new();
    for &t in &opts.types {
        for &n in &list {
            eprintln!("reduce: {} 2^{}", t.name(), n.trailing_zeros());
            let r = match t {
                ElemType::F32 => {
                    measure::<f32>(gpu, opts, t, n, |i| (pattern_word(i) >> 8) as f32 / (1u32 << 24) as f32 - 0.5)?
                }
                ElemType::I32 => measure::<i32>(gpu, opts, t, n, |i| pattern_word(i) as i32)?,
                ElemType::F64 => measure::<f64>(gpu, opts, t, n, |i| pattern_word(i) as f64 / 4_294_967_296.0 - 0.5)?,
            };
            rows.push(r);
        }
    }
    let goals = [ElemType::F32, ElemType::I32]
        .into_iter()
        .map(|t| {
            let of_floor = rows
                .iter()
                .find(|s| s.elem == t && s.elems == GOAL_ELEMS)
                .and_then(|s| s.variants.iter().find(|v| v.variant == ReduceVariant::Fast.name()))
                .map(|v| v.of_floor);
            Goal { elem: t, of_floor, met: of_floor.map(|r| r >= GOAL_RATIO) }
        })
        .collect();
    let report = ReduceReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        settings: opts.settings,
        threads: opts.policy.threads,
        waves: opts.policy.waves,
        units: UNITS,
        sizes: rows,
        goals,
    };
    println!("sums on {} ({UNITS})", report.device.name);
    println!("{}", report.table());
    for g in &report.goals {
        let verdict = match (g.met, g.of_floor) {
            (Some(m), Some(r)) => format!("{} ({:.1}%)", if m { "MET" } else { "NOT MET" }, r * 100.0),
            _ => "NOT EVALUATED (2^28 not measured)".into(),
        };
        println!(
            "goal {} fast >= {:.0}% of the DRAM floor at 2^28 elements: {verdict}",
            g.elem.name(),
            GOAL_RATIO * 100.0
        );
    }
    let (json, svg) = report.write(&opts.out_dir)?;
    println!("wrote {} and {}", json.display(), svg.display());
    Ok(report)
}

fn measure<T: ReduceElem + Into<f64> + Copy>(
    gpu: &Gpu,
    opts: &ReduceOptions,
    elem: ElemType,
    n: u64,
    value: impl Fn(usize) -> T,
) -> BenchResult<SizeResult> {
    let len = usize::try_from(n).map_err(|_| BenchError::Options(format!("{n} elements do not fit usize")))?;
    let bytes = n * elem.bytes();
    let (copies, l2_resident) = pool(bytes, u64::from(gpu.info().l2_bytes));
    let host: Vec<T> = (0..len).map(value).collect();
    let inputs: Vec<DeviceBuffer<T>> = (0..copies).map(|_| gpu.upload(&host)).collect::<Result<_, _>>()?;
    let mut copy_dst = gpu.alloc_zeroed::<T>(len)?;

    let dtod = harness::measure(gpu, &opts.settings, |i| {
        gpu.copy_with_driver(&inputs[i % inputs.len()].as_view(), &mut copy_dst.as_view_mut())
    })?;
    drop(copy_dst);
    let dtod_gbps = harness::gbps(2.0 * bytes as f64, dtod.median_ms);
    let floor_ms = dtod.median_ms / 2.0;

    let exact_i32 = (elem == ElemType::I32).then(|| {
        let v: Vec<i32> = (0..len).map(|i| pattern_word(i) as i32).collect();
        cpu::sum_i32_wrapping(&v)
    });
    let (exact, abs) = cpu::sum_f64(&host);
    drop(host);

    let mut variants = Vec::new();
    for &v in &opts.variants {
        let plan = gpu.reduce_plan(&inputs[0].as_view(), v, &opts.policy)?;
        let mut scratch = gpu.alloc_zeroed::<T>(plan.scratch_len)?;
        let mut out = gpu.alloc_zeroed::<T>(1)?;
        let stats = harness::measure(gpu, &opts.settings, |i| {
            gpu.reduce_sum_into(
                &inputs[i % inputs.len()].as_view(),
                &mut scratch.as_view_mut(),
                &mut out.as_view_mut(),
                v,
                &opts.policy,
            )
            .map(|_| ())
        })?;
        out.fill_bytes(0xA5)?;
        gpu.reduce_sum_into(&inputs[0].as_view(), &mut scratch.as_view_mut(), &mut out.as_view_mut(), v, &opts.policy)?;
        let got = out.to_vec()?[0];
        let ok = match exact_i32 {
            Some(want) => got.into() == f64::from(want),
            None => {
                let bound = plan.error_bound(T::UNIT_ROUNDOFF, abs) + cpu::sum_f64_error(len, exact, abs);
                (got.into() - exact).abs() <= bound
            }
        };
        if !ok {
            return Err(BenchError::Verification {
                suite: SUITE.name,
                message: format!(
                    "{} {v} sum of 2^{} elements is {got:?}; the CPU reference is {} (Σ|x| = {abs:e})",
                    elem.name(),
                    n.trailing_zeros(),
                    exact_i32.map_or(exact.to_string(), |w| w.to_string())
                ),
            });
        }
        variants.push(VariantResult {
            variant: v.name(),
            gbps: harness::gbps(bytes as f64, stats.median_ms),
            of_floor: floor_ms / stats.median_ms,
            stats,
            passes: plan.passes.len(),
            grid: plan.passes[0].config.grid.x,
            threads: opts.policy.threads,
        });
    }
    Ok(SizeResult { elem, elems: n, bytes, pool: copies, l2_resident, dtod_gbps, floor_ms, variants })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_pools() {
        assert_eq!(sizes(1 << 20, 1 << 22), vec![1 << 20, 1 << 21, 1 << 22]);
        assert!(sizes(5, 6).is_empty());
        let l2 = 50 << 20;
        assert_eq!(pool(4 << 20, l2), (38, false));
        assert_eq!(pool(1 << 30, l2), (1, false));
        assert_eq!(pool(1 << 20, l2), (64, true));
    }

    #[test]
    fn types_parse() {
        assert_eq!("f64".parse::<ElemType>(), Ok(ElemType::F64));
        assert!("u8".parse::<ElemType>().is_err());
        assert_eq!(ElemType::I32.bytes(), 4);
    }
}
