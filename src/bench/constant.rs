//! The `constant` suite (lesson 004, "constant memory"): the time of one
//! table read when the 32 lanes of a warp read one address (broadcast) or
//! 32 different ones (serialized), from constant memory and, with the same
//! index patterns, from global memory.
//!
//! Each of `threads` threads folds `iters` reads of a 256-word table into
//! one result ([`crate::constant`]); the launch is timed with the harness
//! and every kernel's output is checked against the rayon reference. The
//! figures are GPU-wide rates, not latencies:
//!
//! * ns per warp-access = kernel time / (warps · iters);
//! * ns per thread-access = kernel time / (threads · iters);
//! * time / broadcast = kernel time / `constant_broadcast`'s time.
//!
//! The lesson's model: a constant read costs one request per distinct
//! address in the warp, so `constant_serialized` should take up to 32× the
//! broadcast's time per access, while global memory serves the serialized
//! pattern (32 consecutive words, one 128-byte line) about as fast as the
//! broadcast.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::copy::DeviceSummary;
use super::harness::{self, Settings, Stats};
use super::report::{self, Table};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::constant::{self, ConstantVariant, Pattern, TABLE_LEN, WARP};
use crate::{ConstantTable, Gpu};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "constant",
    about: "constant memory: warp broadcast vs serialized reads, and the same patterns from global memory",
};

/// The byte outputs are poisoned with before a verification launch.
pub const POISON: u8 = 0xA5;

/// Units of every figure.
pub const UNITS_NOTE: &str = "times in ms per launch; ns per warp-access = time / (warps x iters), ns per \
                              thread-access = time / (threads x iters): GPU-wide rates, not latencies";

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantOptions {
    /// Threads (one result each); default 2^20.
    pub threads: usize,
    /// Table reads per thread; default 1024.
    pub iters: u32,
    /// The kernels (default all four).
    pub variants: Vec<ConstantVariant>,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// Where `constant.json` goes.
    pub out_dir: PathBuf,
}

impl Default for ConstantOptions {
    fn default() -> Self {
        ConstantOptions {
            threads: 1 << 20,
            iters: 1024,
            variants: ConstantVariant::ALL.to_vec(),
            settings: Settings::default(),
            out_dir: PathBuf::from("bench-out"),
        }
    }
}

impl ConstantOptions {
    /// A smoke run: 2^16 threads, 256 reads each, 5 samples.
    pub fn quick() -> Self {
        ConstantOptions {
            threads: 1 << 16,
            iters: 256,
            settings: Settings { reps: 5, ..Settings::default() },
            ..ConstantOptions::default()
        }
    }
}

/// One kernel's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantResult {
    /// The kernel.
    pub kernel: &'static str,
    /// `constant` or `global`.
    pub memory: &'static str,
    /// `broadcast` or `serialized`.
    pub pattern: &'static str,
    /// Distinct words a warp reads per access (1 or 32).
    pub distinct_per_warp: usize,
    /// Median time per launch, ms.
    pub ms: f64,
    /// ns per warp-access (GPU-wide).
    pub ns_per_warp_access: f64,
    /// ns per thread-access (GPU-wide).
    pub ns_per_thread_access: f64,
    /// This kernel's time / `constant_broadcast`'s, if measured.
    pub vs_constant_broadcast: Option<f64>,
    /// Statistics.
    pub stats: Stats,
}

/// Everything the suite measured; written as `constant.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConstantReport {
    /// `"constant"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// How each figure was measured.
    pub settings: Settings,
    /// The units note.
    pub units: &'static str,
    /// Threads per launch.
    pub threads: usize,
    /// Warps per launch (`ceil(threads / 32)`).
    pub warps: usize,
    /// Reads per thread.
    pub iters: u32,
    /// Table words.
    pub table_len: usize,
    /// Per kernel.
    pub results: Vec<VariantResult>,
}

impl ConstantReport {
    /// The text table.
    pub fn table(&self) -> Table {
        let mut t = Table::new([
            "kernel",
            "memory",
            "pattern",
            "words/warp",
            "ms",
            "ns/warp-access",
            "ns/thread-access",
            "time / const broadcast",
        ]);
        for r in &self.results {
            t.row([
                r.kernel.to_string(),
                r.memory.to_string(),
                r.pattern.to_string(),
                r.distinct_per_warp.to_string(),
                format!("{:.3}", r.ms),
                format!("{:.4}", r.ns_per_warp_access),
                format!("{:.5}", r.ns_per_thread_access),
                r.vs_constant_broadcast.map_or_else(|| "-".into(), |x| format!("{x:.2}x")),
            ]);
        }
        t.align(0, report::Align::Left).align(1, report::Align::Left).align(2, report::Align::Left);
        t
    }

    /// Writes `constant.json` into `dir`.
    pub fn write(&self, dir: &Path) -> BenchResult<PathBuf> {
        let json = dir.join("constant.json");
        report::write_json(&json, self)?;
        Ok(json)
    }
}

/// The table's values: distinct, non-zero words.
pub fn table_values() -> Vec<u32> {
    (0..TABLE_LEN).map(super::copy::pattern_word).collect()
}

/// Runs the suite: measures, verifies, prints the table, writes
/// `constant.json`.
pub fn run(gpu: &Gpu, opts: &ConstantOptions) -> BenchResult<ConstantReport> {
    let report = measure_suite(gpu, opts)?;
    println!(
        "constant vs global reads on {}: {} threads ({} warps) x {} reads of a {}-word table ({UNITS_NOTE})",
        report.device.name, report.threads, report.warps, report.iters, report.table_len
    );
    println!("{}", report.table());
    let json = report.write(&opts.out_dir)?;
    println!("wrote {}", json.display());
    Ok(report)
}

/// Measures and verifies every kernel (no table, no files).
pub fn measure_suite(gpu: &Gpu, opts: &ConstantOptions) -> BenchResult<ConstantReport> {
    if opts.settings.reps == 0 {
        return Err(BenchError::Options("--reps must be at least 1".into()));
    }
    if opts.threads == 0 || opts.iters == 0 {
        return Err(BenchError::Options("--threads and --iters must be at least 1".into()));
    }
    if opts.variants.is_empty() {
        return Err(BenchError::Options("no kernel selected".into()));
    }
    let values = table_values();
    let table: ConstantTable = gpu.constant_table(&values)?;
    let n = opts.threads;
    let warps = n.div_ceil(WARP);
    let accesses = opts.iters as f64;
    let mut out = gpu.alloc_zeroed::<u32>(n)?;
    let mut got = vec![0u32; n];
    let mut wants: Vec<(Pattern, Vec<u32>)> = Vec::new();
    let mut results: Vec<VariantResult> = Vec::new();
    for &v in &opts.variants {
        eprintln!("constant: {}", v.kernel());
        let stats =
            harness::measure(gpu, &opts.settings, |_| table.run(v, &mut out.as_view_mut(), opts.iters).map(|_| ()))?;
        out.fill_bytes(POISON)?;
        table.run(v, &mut out.as_view_mut(), opts.iters)?;
        out.copy_to_host(&mut got)?;
        let pattern = v.pattern();
        if !wants.iter().any(|(p, _)| *p == pattern) {
            wants.push((pattern, constant::reference(&values, pattern, n, opts.iters)?));
        }
        let want = &wants.iter().find(|(p, _)| *p == pattern).expect("just computed").1;
        if let Some((t, g, w)) = crate::reference::first_mismatch(&got, want)? {
            let never = if g == u32::from_ne_bytes([POISON; 4]) { " (never written: still the poison)" } else { "" };
            return Err(BenchError::Verification {
                suite: SUITE.name,
                message: format!("{}: thread {t} wrote {g:#010x}, the reference is {w:#010x}{never}", v.kernel()),
            });
        }
        let ms = stats.median_ms;
        results.push(VariantResult {
            kernel: v.kernel(),
            memory: match v.memory() {
                constant::Memory::Constant => "constant",
                constant::Memory::Global => "global",
            },
            pattern: pattern.name(),
            distinct_per_warp: pattern.distinct_per_warp(),
            ms,
            ns_per_warp_access: ms * 1e6 / (warps as f64 * accesses),
            ns_per_thread_access: ms * 1e6 / (n as f64 * accesses),
            vs_constant_broadcast: None,
            stats,
        });
    }
    let base = results.iter().find(|r| r.kernel == ConstantVariant::ConstantBroadcast.kernel()).map(|r| r.ms);
    for r in &mut results {
        r.vs_constant_broadcast = base.map(|b| r.ms / b);
    }
    Ok(ConstantReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        settings: opts.settings,
        units: UNITS_NOTE,
        threads: n,
        warps,
        iters: opts.iters,
        table_len: TABLE_LEN,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_values_are_distinct_and_non_zero() {
        let mut v = table_values();
        assert_eq!(v.len(), TABLE_LEN);
        assert!(v.iter().all(|&x| x != 0));
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), TABLE_LEN);
    }

    #[test]
    fn table_and_json() {
        let stats = Stats::from_samples(&[2.0], 1).unwrap();
        let row = |kernel, memory, pattern, d, ms: f64, vs| VariantResult {
            kernel,
            memory,
            pattern,
            distinct_per_warp: d,
            ms,
            ns_per_warp_access: ms * 1e6 / (32_768.0 * 1024.0),
            ns_per_thread_access: ms * 1e6 / (1_048_576.0 * 1024.0),
            vs_constant_broadcast: vs,
            stats,
        };
        let r = ConstantReport {
            suite: "constant",
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
            units: UNITS_NOTE,
            threads: 1 << 20,
            warps: 1 << 15,
            iters: 1024,
            table_len: TABLE_LEN,
            results: vec![
                row("constant_broadcast", "constant", "broadcast", 1, 0.5, Some(1.0)),
                row("constant_serialized", "constant", "serialized", 32, 8.0, Some(16.0)),
            ],
        };
        let text = r.table().render();
        assert!(text.contains("16.00x") && text.contains("constant_serialized"), "{text}");
        let dir = std::env::temp_dir().join(format!("coalesce-constant-report-{}", std::process::id()));
        let json = r.write(&dir).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        assert_eq!(v["results"][1]["distinct_per_warp"], 32);
        assert_eq!(v["warps"], 32_768);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
