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
use crate::{DeviceBuffer, Gpu, PinnedBuffer};

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
    /// Samples per job of the two-stream part; default 2^24.
    pub overlap_n: usize,
    /// Repetitions of each two-stream measurement; default 11.
    pub reps: usize,
    /// Where `concurrency.json` goes.
    pub out_dir: PathBuf,
}

impl Default for ConcurrencyOptions {
    fn default() -> Self {
        ConcurrencyOptions { runs: 10_000, n: 4096, overlap_n: 1 << 24, reps: 11, out_dir: PathBuf::from("bench-out") }
    }
}

impl ConcurrencyOptions {
    /// A smoke run: 500 runs, 2^20-sample jobs, 3 repetitions.
    pub fn quick() -> Self {
        ConcurrencyOptions { runs: 500, overlap_n: 1 << 20, reps: 3, ..ConcurrencyOptions::default() }
    }
}

/// The goal of the two-stream part: both jobs at once in at most this
/// fraction of their time one after the other.
pub const GOAL_OVERLAP: f64 = 0.6;

/// One form of the two-stream job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Workload {
    /// The convolution alone, input and output on the device.
    Device,
    /// Page-locked host input, asynchronous copy in, convolution,
    /// asynchronous copy out.
    Pinned,
    /// `Vec` input and output, the driver staging the copies.
    Pageable,
}

impl Workload {
    /// All three, in the table's order.
    pub const ALL: [Workload; 3] = [Workload::Device, Workload::Pinned, Workload::Pageable];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Device => "device",
            Workload::Pinned => "pinned round trip",
            Workload::Pageable => "pageable round trip",
        }
    }
}

/// One two-stream measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverlapResult {
    /// The job's form.
    pub workload: Workload,
    /// Samples per job.
    pub n: usize,
    /// Both jobs one after the other on one thread, median ms.
    pub sequential_ms: f64,
    /// Both jobs at once on two threads and two streams, median ms.
    pub concurrent_ms: f64,
    /// `concurrent_ms / sequential_ms`.
    pub ratio: f64,
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
    /// Two threads on two streams, per job form.
    pub overlap: Vec<OverlapResult>,
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

    /// The two-stream table.
    pub fn overlap_table(&self) -> Table {
        let mut t = Table::new(["job", "samples", "one after the other ms", "two threads ms", "ratio"]);
        for r in &self.overlap {
            t.row([
                r.workload.name().to_string(),
                format!("2^{}", r.n.trailing_zeros()),
                format!("{:.3}", r.sequential_ms),
                format!("{:.3}", r.concurrent_ms),
                format!("{:.3}", r.ratio),
            ]);
        }
        t.align(0, Align::Left);
        t
    }

    /// The goal lines (one per job form).
    pub fn goal_lines(&self) -> Vec<String> {
        self.overlap
            .iter()
            .map(|r| {
                let status = if r.ratio <= GOAL_OVERLAP { "MET" } else { "NOT MET" };
                format!(
                    "goal two threads on two streams, independent 2^{}-sample convolutions ({}), <= {GOAL_OVERLAP}x the \
                     time one after the other: {status} ({:.3}x: {:.3} vs {:.3} ms)",
                    r.n.trailing_zeros(),
                    r.workload.name(),
                    r.ratio,
                    r.concurrent_ms,
                    r.sequential_ms
                )
            })
            .collect()
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
    if opts.runs == 0 || opts.n == 0 || opts.overlap_n == 0 || opts.reps == 0 {
        return Err(BenchError::Options("--runs, --n, --overlap-n and --reps must be at least 1".into()));
    }
    let report = ConcurrencyReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        n: opts.n,
        alternation: alternation(gpu, opts)?,
        overlap: Workload::ALL.into_iter().map(|w| overlap(gpu, opts, w)).collect::<BenchResult<_>>()?,
    };
    println!(
        "mask alternation on {}: {} runs per loop, {} samples or pixels per input",
        report.device.name, opts.runs, opts.n
    );
    println!("{}", report.table());
    println!("two independent 31-tap convolutions: one thread one after the other vs two threads on two streams");
    println!("{}", report.overlap_table());
    for line in report.goal_lines() {
        println!("{line}");
    }
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

/// One thread's job of the two-stream part, on a stream of its own.
struct Job {
    gpu: Gpu,
    conv: Conv1d<f32>,
    host: Vec<f32>,
    pinned_in: PinnedBuffer<f32>,
    pinned_out: PinnedBuffer<f32>,
    vec_out: Vec<f32>,
    d_in: DeviceBuffer<f32>,
    d_out: DeviceBuffer<f32>,
}

impl Job {
    fn new(gpu: &Gpu, n: usize, seed: u32) -> BenchResult<Job> {
        let gpu = gpu.on(&gpu.new_stream()?)?;
        let host: Vec<f32> =
            (0..n).map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0).collect();
        let mask: Vec<f32> = (0..31).map(|j| ((j as u32 * 7 + seed) % 13) as f32 / 13.0 - 0.4).collect();
        Ok(Job {
            conv: Conv1d::new(&gpu, &mask, ConvOp::Correlate, Boundary::Reflect)?,
            pinned_in: gpu.pinned_from_slice(&host)?,
            pinned_out: gpu.alloc_pinned(n)?,
            vec_out: vec![0.0; n],
            d_in: gpu.upload(&host)?,
            d_out: gpu.alloc_zeroed(n)?,
            host,
            gpu,
        })
    }

    /// Runs the job once and waits for it.
    fn run(&mut self, w: Workload) -> crate::Result<()> {
        let stream = self.gpu.stream();
        match w {
            Workload::Device => {
                self.conv.run(Conv1dVariant::Auto, &self.d_in.as_view(), &mut self.d_out.as_view_mut())?;
            }
            Workload::Pinned => {
                // SAFETY: both page-locked buffers are borrowed by this
                // call, which synchronizes the stream before returning.
                unsafe { stream.htod_async(&self.pinned_in, &mut self.d_in.as_view_mut())? };
                self.conv.run(Conv1dVariant::Auto, &self.d_in.as_view(), &mut self.d_out.as_view_mut())?;
                // SAFETY: as above.
                unsafe { stream.dtoh_async(&self.d_out.as_view(), &mut self.pinned_out)? };
            }
            Workload::Pageable => {
                self.gpu.htod(&self.host, &mut self.d_in.as_view_mut())?;
                self.conv.run(Conv1dVariant::Auto, &self.d_in.as_view(), &mut self.d_out.as_view_mut())?;
                self.gpu.dtoh(&self.d_out.as_view(), &mut self.vec_out)?;
            }
        }
        stream.synchronize()
    }

    /// The job's last output against the CPU reference.
    fn verify(&self, w: Workload) -> BenchResult<()> {
        let got = match w {
            Workload::Device => self.d_out.to_vec()?,
            Workload::Pinned => self.pinned_out.to_vec(),
            Workload::Pageable => self.vec_out.clone(),
        };
        let want = correlate1d_checked(&self.host, self.conv.taps(), self.conv.left(), Boundary::Reflect)?;
        compare(&got, &want).map_err(|(m, k)| verification(w.name(), format!("{k} wrong outputs, first {m}")))
    }
}

/// The two-stream measurement of job form `w`: `reps` runs of both jobs
/// one after the other on this thread, then `reps` runs of both at once on
/// two threads (started once, released together by a barrier each run).
fn overlap(gpu: &Gpu, opts: &ConcurrencyOptions, w: Workload) -> BenchResult<OverlapResult> {
    let mut jobs = [Job::new(gpu, opts.overlap_n, 1)?, Job::new(gpu, opts.overlap_n, 2)?];
    for j in &mut jobs {
        j.run(w)?; // warm-up
    }
    let mut seq = Vec::with_capacity(opts.reps);
    for _ in 0..opts.reps {
        let t0 = Instant::now();
        for j in &mut jobs {
            j.run(w)?;
        }
        seq.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let (start, end) = (std::sync::Barrier::new(3), std::sync::Barrier::new(3));
    let mut conc = Vec::with_capacity(opts.reps);
    std::thread::scope(|s| -> BenchResult<()> {
        let workers: Vec<_> = jobs
            .iter_mut()
            .map(|j| {
                let (start, end) = (&start, &end);
                s.spawn(move || -> crate::Result<()> {
                    let mut result = Ok(());
                    for _ in 0..opts.reps {
                        start.wait();
                        if result.is_ok() {
                            result = j.run(w);
                        }
                        end.wait();
                    }
                    result
                })
            })
            .collect();
        for _ in 0..opts.reps {
            start.wait();
            let t0 = Instant::now();
            end.wait();
            conc.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        for h in workers {
            h.join().map_err(|_| verification(w.name(), "a job thread panicked".into()))??;
        }
        Ok(())
    })?;
    for j in &jobs {
        j.verify(w)?;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        super::harness::percentile(v, 50.0)
    };
    let (sequential_ms, concurrent_ms) = (median(&mut seq), median(&mut conc));
    Ok(OverlapResult {
        workload: w,
        n: opts.overlap_n,
        sequential_ms,
        concurrent_ms,
        ratio: concurrent_ms / sequential_ms,
    })
}
