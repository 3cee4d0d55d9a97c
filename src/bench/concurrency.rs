//! The `concurrency` suite: what sharing the GPU costs.
//!
//! **Mask alternation.** Two convolutions of the same shape with different
//! masks run alternately (`A, B, A, B, …`) on a small input, `runs` times,
//! then once more each for verification against the CPU reference. The
//! host's wall clock from the first queued run to the end of the last
//! (after a synchronize) divided by `runs` is the cost of one run when
//! every run changes the mask; the same loop with one convolution
//! (`A, A, A, …`) is the cost when none does. Small inputs make the
//! launch path, not the kernel, the measured quantity.

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::copy::DeviceSummary;
use super::report::{self, Align, Table};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::conv::reference::{compare, correlate1d_checked};
use crate::conv::reference2d::{Image, correlate2d_checked};
use crate::conv::{Boundary, Conv1d, Conv1dVariant, Conv2d, Conv2dVariant, ConvOp};
use crate::{DeviceBuffer, Gpu};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo =
    SuiteInfo { name: "concurrency", about: "what sharing costs: alternating convolution masks on small inputs" };

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ConcurrencyOptions {
    /// Runs per alternation loop; default 10 000.
    pub runs: usize,
    /// Samples of a 1D input (2D: the side of a square image is its
    /// square root); default 4096.
    pub n: usize,
    /// Where `concurrency.json` goes.
    pub out_dir: PathBuf,
}

impl Default for ConcurrencyOptions {
    fn default() -> Self {
        ConcurrencyOptions { runs: 10_000, n: 4096, out_dir: PathBuf::from("bench-out") }
    }
}

impl ConcurrencyOptions {
    /// A smoke run: 500 runs.
    pub fn quick() -> Self {
        ConcurrencyOptions { runs: 500, ..ConcurrencyOptions::default() }
    }
}

/// One alternation case.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AlternationResult {
    /// `conv1d const 7`, `conv2d fast 5x5`, …
    pub case: String,
    /// The kernel that ran.
    pub kernel: &'static str,
    /// Runs per loop.
    pub runs: usize,
    /// Wall-clock µs per run, one mask throughout.
    pub same_us: f64,
    /// Wall-clock µs per run, masks alternating.
    pub alternating_us: f64,
}

/// Everything the suite measured; written as `concurrency.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConcurrencyReport {
    /// `"concurrency"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// Input samples (1D) or pixels (2D).
    pub n: usize,
    /// Mask alternation, per case.
    pub alternation: Vec<AlternationResult>,
}

impl ConcurrencyReport {
    /// The alternation table.
    pub fn table(&self) -> Table {
        let mut t = Table::new(["case", "kernel", "runs", "same mask us/run", "alternating us/run", "ratio"]);
        for r in &self.alternation {
            t.row([
                r.case.clone(),
                r.kernel.to_string(),
                r.runs.to_string(),
                format!("{:.2}", r.same_us),
                format!("{:.2}", r.alternating_us),
                format!("{:.2}x", r.alternating_us / r.same_us),
            ]);
        }
        t.align(0, Align::Left).align(1, Align::Left);
        t
    }
}

/// Host wall-clock µs per call of `run(i)` over `runs` calls, from the first
/// call to the end of the work they queued.
fn wall_us(gpu: &Gpu, runs: usize, mut run: impl FnMut(usize) -> BenchResult<()>) -> BenchResult<f64> {
    gpu.synchronize()?;
    let t0 = Instant::now();
    for i in 0..runs {
        run(i)?;
    }
    gpu.synchronize()?;
    Ok(t0.elapsed().as_secs_f64() * 1e6 / runs as f64)
}

fn verification(case: &str, message: String) -> BenchError {
    BenchError::Verification { suite: SUITE.name, message: format!("{case}: {message}") }
}

/// Runs the suite: measures, verifies, prints the table, writes
/// `concurrency.json`.
pub fn run(gpu: &Gpu, opts: &ConcurrencyOptions) -> BenchResult<ConcurrencyReport> {
    if opts.runs == 0 || opts.n == 0 {
        return Err(BenchError::Options("--runs and --n must be at least 1".into()));
    }
    let report = ConcurrencyReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        n: opts.n,
        alternation: alternation(gpu, opts)?,
    };
    println!(
        "mask alternation on {}: {} runs per loop, {} samples or pixels per input",
        report.device.name, opts.runs, opts.n
    );
    println!("{}", report.table());
    let json = opts.out_dir.join("concurrency.json");
    report::write_json(&json, &report)?;
    println!("wrote {}", json.display());
    Ok(report)
}

/// The alternation cases: 1D constant and fast kernels with 7-tap masks,
/// 2D constant and fast kernels with 5 × 5 masks.
fn alternation(gpu: &Gpu, opts: &ConcurrencyOptions) -> BenchResult<Vec<AlternationResult>> {
    let mode = Boundary::Reflect;
    let n = opts.n;
    let signal: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0).collect();
    let d_in = gpu.upload(&signal)?;
    let mut d_out = gpu.alloc_zeroed::<f32>(n)?;
    let masks = |w: usize| -> [Vec<f32>; 2] {
        [(0..w).map(|j| 1.0 + j as f32).collect(), (0..w).map(|j| 0.5 - (j * j) as f32 / 8.0).collect()]
    };
    let mut results = Vec::new();
    for variant in [Conv1dVariant::Const, Conv1dVariant::Fast] {
        let case = format!("conv1d {} 7", variant.name());
        let [a, b] = masks(7);
        let convs = [Conv1d::new(gpu, &a, ConvOp::Correlate, mode)?, Conv1d::new(gpu, &b, ConvOp::Correlate, mode)?];
        let kernel = convs[0].plan(variant, n)?.kernel;
        let go = |c: &Conv1d<f32>, out: &mut DeviceBuffer<f32>| {
            c.run(variant, &d_in.as_view(), &mut out.as_view_mut()).map(|_| ())
        };
        let same_us = wall_us(gpu, opts.runs, |_| Ok(go(&convs[0], &mut d_out)?))?;
        let alternating_us = wall_us(gpu, opts.runs, |i| Ok(go(&convs[i % 2], &mut d_out)?))?;
        for c in &convs {
            d_out.fill_bytes(0xA5)?;
            go(c, &mut d_out)?;
            let want = correlate1d_checked(&signal, c.taps(), c.left(), mode)?;
            compare(&d_out.to_vec()?, &want).map_err(|(m, k)| verification(&case, format!("{k} wrong, first {m}")))?;
        }
        results.push(AlternationResult { case, kernel, runs: opts.runs, same_us, alternating_us });
    }
    let side = (n as f64).sqrt() as usize;
    for variant in [Conv2dVariant::Const, Conv2dVariant::Fast] {
        let case = format!("conv2d {} 5x5", variant.name());
        let [a, b] = masks(25);
        let convs = [
            Conv2d::new(gpu, &a, 5, 5, ConvOp::Correlate, mode)?,
            Conv2d::new(gpu, &b, 5, 5, ConvOp::Correlate, mode)?,
        ];
        let kernel = convs[0].plan(variant, side, side)?.kernel;
        let go = |c: &Conv2d<f32>, out: &mut DeviceBuffer<f32>| {
            c.run(variant, &d_in.as_view(), &mut out.as_view_mut(), side, side, side).map(|_| ())
        };
        let same_us = wall_us(gpu, opts.runs, |_| Ok(go(&convs[0], &mut d_out)?))?;
        let alternating_us = wall_us(gpu, opts.runs, |i| Ok(go(&convs[i % 2], &mut d_out)?))?;
        for c in &convs {
            d_out.fill_bytes(0xA5)?;
            go(c, &mut d_out)?;
            let (lx, ly) = c.left();
            let img = Image::dense(&signal[..side * side], side, side);
            let want = correlate2d_checked(img, c.taps(), 5, 5, lx, ly, mode)?;
            let got = d_out.to_vec()?;
            compare(&got[..side * side], &want)
                .map_err(|(m, k)| verification(&case, format!("{k} wrong, first {m}")))?;
        }
        results.push(AlternationResult { case, kernel, runs: opts.runs, same_us, alternating_us });
    }
    Ok(results)
}
