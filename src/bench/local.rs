//! The `local` suite (lesson 004, §5.3.2 "local memory"): a per-thread
//! 16-bin histogram over `n` words (default 2^26, 256 MiB), kept in local
//! memory because the data indexes it (`local_histogram_dynamic`) or in
//! registers because every index is a constant
//! (`local_histogram_registers`).
//!
//! Both run the same grid (one wave of the variant with fewer resident
//! blocks) and produce the same counts, verified against the rayon
//! reference. Reported per variant: the driver's registers and local bytes
//! per thread, time, GB/s (words read + counts written) and `% of floor`
//! (those bytes at the driver's device-to-device bandwidth measured in the
//! same run, over the kernel's time).

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use super::copy::{DeviceSummary, pattern_word};
use super::harness::{self, DtodReference, Settings};
use super::matrix::Timing;
use super::report::{self, Table, human_bytes};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::local::{BINS, counts_len, reference_histogram};
use crate::{Gpu, HistogramVariant, reference};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "local",
    about: "per-thread 16-bin histogram of 2^26 words: array in local memory (run-time index) vs in registers",
};

/// The byte outputs are poisoned with before a verification launch.
pub const POISON: u8 = 0xA5;

/// Units of every figure.
pub const UNITS_NOTE: &str = "GB = 1e9 bytes; bytes = words read + counts written; times in ms per launch; % of floor = \
                              those bytes at cuMemcpyDtoD speed / kernel time";

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalOptions {
    /// Words histogrammed (default 2^26).
    pub elems: usize,
    /// The bin of `v` is `(v >> shift) % 16` (default 0).
    pub shift: u32,
    /// Grid size in waves of resident blocks (default 1).
    pub waves: u32,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// Where `local.json` goes.
    pub out_dir: PathBuf,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions { elems: 1 << 26, shift: 0, waves: 1, settings: Settings::default(), out_dir: "bench-out".into() }
    }
}

impl LocalOptions {
    /// A smoke run: 2^22 words, 5 samples.
    pub fn quick() -> Self {
        LocalOptions { elems: 1 << 22, settings: Settings { reps: 5, ..Settings::default() }, ..Self::default() }
    }
}

/// One variant's measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantResult {
    /// `local` or `registers`.
    pub variant: &'static str,
    /// The kernel.
    pub kernel: &'static str,
    /// Registers per thread (driver).
    pub registers: u32,
    /// Local memory per thread, bytes (driver; ptxas's stack frame).
    pub local_bytes_per_thread: u32,
    /// Time, GB/s, and floor time / kernel time.
    pub timing: Timing,
}

/// Everything the suite measured; written as `local.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LocalReport {
    /// `"local"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// How each figure was measured.
    pub settings: Settings,
    /// The units note.
    pub units: &'static str,
    /// Words histogrammed.
    pub elems: usize,
    /// The bin shift.
    pub shift: u32,
    /// Blocks of the grid (both variants).
    pub blocks: u32,
    /// Threads of the grid.
    pub threads: u64,
    /// Bytes per launch (4 · elems read + 4 · 16 · threads written).
    pub bytes: u64,
    /// The DtoD reference (4 · elems bytes copied).
    pub dtod: DtodReference,
    /// Local memory first, then registers.
    pub results: Vec<VariantResult>,
    /// Local-memory time / register time.
    pub local_over_registers: Option<f64>,
}

impl LocalReport {
    /// The text table.
    pub fn table(&self) -> Table {
        let mut t = Table::new(["array in", "kernel", "registers", "local B/thread", "ms", "GB/s", "% of floor"]);
        for r in &self.results {
            t.row([
                r.variant.to_string(),
                r.kernel.to_string(),
                r.registers.to_string(),
                r.local_bytes_per_thread.to_string(),
                format!("{:.3}", r.timing.ms),
                format!("{:.1}", r.timing.gbps),
                format!("{:.1}%", r.timing.pct_of_floor),
            ]);
        }
        t.align(1, report::Align::Left);
        t
    }

    /// Writes `local.json` into `dir`; returns its path.
    pub fn write(&self, dir: &Path) -> BenchResult<PathBuf> {
        let json = dir.join("local.json");
        report::write_json(&json, self)?;
        Ok(json)
    }
}

/// Runs the suite: measures, verifies, prints the table, writes
/// `local.json` into `opts.out_dir`.
pub fn run(gpu: &Gpu, opts: &LocalOptions) -> BenchResult<LocalReport> {
    let r = measure_suite(gpu, opts)?;
    println!("local memory on {} ({UNITS_NOTE})", r.device.name);
    println!(
        "{} words ({}), {BINS} bins of (v >> {}) % {BINS}, {} blocks x {} threads; cuMemcpyDtoD {:.1} GB/s",
        r.elems,
        human_bytes(4 * r.elems as u64),
        r.shift,
        r.blocks,
        r.threads / u64::from(r.blocks.max(1)),
        r.dtod.gbps
    );
    println!("{}", r.table());
    if let Some(x) = r.local_over_registers {
        println!("local-memory time / register time: {x:.2}x");
    }
    let path = r.write(&opts.out_dir)?;
    println!("wrote {}", path.display());
    Ok(r)
}

/// Measures and verifies (no printing, no files).
pub fn measure_suite(gpu: &Gpu, opts: &LocalOptions) -> BenchResult<LocalReport> {
    if opts.settings.reps == 0 || opts.elems == 0 {
        return Err(BenchError::Options("--reps and --elems must be at least 1".into()));
    }
    if opts.shift >= 32 {
        return Err(BenchError::Options(format!("--shift {} is not below 32", opts.shift)));
    }
    let n = opts.elems;
    let mut blocks = u32::MAX;
    for v in HistogramVariant::ALL {
        blocks = blocks.min(gpu.histogram_blocks(v, opts.waves)?);
    }
    let len = counts_len(blocks);
    let threads = (len / BINS) as u64;
    let bytes = 4 * n as u64 + 4 * len as u64;
    let dtod = harness::measure_dtod(gpu, &opts.settings, 4 * n as u64)?;

    let host: Vec<u32> = (0..n).into_par_iter().map(pattern_word).collect();
    let mut want = vec![0u32; len];
    reference_histogram(&host, opts.shift, &mut want)?;
    let data = gpu.upload(&host)?;
    let mut counts = gpu.alloc_zeroed::<u32>(len)?;
    let mut got = vec![0u32; len];
    let mut results = Vec::new();
    for v in HistogramVariant::ALL {
        let launch = |c: &mut crate::DeviceBuffer<u32>| {
            gpu.local_histogram(v, &data.as_view(), &mut c.as_view_mut(), opts.shift, blocks).map(|_| ())
        };
        let stats = harness::measure(gpu, &opts.settings, |_| launch(&mut counts))?;
        counts.fill_bytes(POISON)?;
        launch(&mut counts)?;
        counts.copy_to_host(&mut got)?;
        if let Some((i, g, w)) = reference::first_mismatch(&got, &want)? {
            return Err(BenchError::Verification {
                suite: SUITE.name,
                message: format!(
                    "{} n={n}: count of bin {} for thread {} is {g:#x}, the reference {w}",
                    v.kernel(),
                    i as u64 / threads,
                    i as u64 % threads
                ),
            });
        }
        let limits = gpu.kernel_limits(v.kernel())?;
        results.push(VariantResult {
            variant: v.name(),
            kernel: v.kernel(),
            registers: limits.registers_per_thread,
            local_bytes_per_thread: limits.local_bytes_per_thread,
            timing: Timing::new(stats, bytes as f64, &dtod),
        });
    }
    let local_over_registers = match results.as_slice() {
        [l, r] => Some(l.timing.ms / r.timing.ms),
        _ => None,
    };
    Ok(LocalReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        settings: opts.settings,
        units: UNITS_NOTE,
        elems: n,
        shift: opts.shift,
        blocks,
        threads,
        bytes,
        dtod,
        results,
        local_over_registers,
    })
}
