//! The `conv` suite: every 1D convolution kernel over mask widths and input
//! lengths (and the 2D kernels on large images), each verified, timed
//! against the DRAM floor, and side by side with its CUDA C++ twin.
//!
//! * **DRAM floor**: the bytes that must move (input read once, output
//!   written once) divided by the `cuMemcpyDtoD` bandwidth measured in the
//!   same run. `% of floor` = floor time / kernel time.
//! * **Model**: the lesson's global loads per output (basic `2n + 1`,
//!   tiled `(blockDim + 2n) / blockDim`, …; see
//!   [`Conv1dVariant::model_loads_per_output`]).
//! * **Twins**: `cuda/conv1d.cu`, compiled by `nvcc -O3 -ptx` when nvcc is
//!   present ([`super::twin`]); `Rust/C++` is the ratio of median times on
//!   the same buffers.
//! * **Verification**: every output is checked for leftover poison, and the
//!   edges plus 2000 random outputs against the reference's bound.
//!
//! Goals on the H100: the best 1D kernel ≥ 85% of the floor at
//! n = 2^27 for widths ≤ 31, and every Rust kernel ≤ 1.05× its twin's time
//! (judged at n ≥ 2^24, beyond launch overhead and the L2).

use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::copy::DeviceSummary;
use super::harness::{self, DtodReference, Settings, Stats};
use super::report::{Series, Table, plot_svg, write_json};
use super::twin::{self, TwinStatus};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::conv::reference::compare;
use crate::conv::reference::{Checked, ghosts, matches};
use crate::conv::reference2d::{Image, conv2d_checked, correlate2d_bounded, separable_checked};
use crate::conv::{Boundary, Conv1d, Conv1dVariant, Conv2d, Conv2dVariant, ConvOp, Precision, Separable, THREADS_1D};
use crate::{DeviceView, DeviceViewMut, Gpu, PtxModule};

/// The suite's entry for `bench list`.
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "conv",
    about: "1D/2D convolution: lesson kernels + fast kernel vs DRAM floor and CUDA C++ twins",
};

/// Goal: best 1D kernel's share of the floor at `GOAL_N` for widths ≤ 31
/// and, at `f32` accuracy, for every width ≤ [`GOAL_WIDE_W`].
pub const GOAL_1D: f64 = 0.85;
/// The widest mask the [`GOAL_1D`] goal covers.
pub const GOAL_WIDE_W: usize = 127;
/// Goal: best `f32`-accurate 1D kernel's share of the floor at
/// `w = `[`GOAL_WIDEST_W`].
pub const GOAL_WIDEST: f64 = 0.70;
/// The width of the [`GOAL_WIDEST`] goal.
pub const GOAL_WIDEST_W: usize = 255;
/// The row label of the tensor-core kernel at [`Precision::Tf32`] (not
/// `f32`-accurate: reported, not judged by the goals).
pub const TF32_LABEL: &str = "tensor_tf32";
/// The input length the 1D goal is judged at.
pub const GOAL_N: usize = 1 << 27;
/// Goal: best 2D kernel's share of the floor for a 5×5 mask.
pub const GOAL_2D: f64 = 0.80;
/// Goal: Rust time / C++ twin time at most this.
pub const GOAL_TWIN: f64 = 1.05;
/// Twin ratios are judged at lengths from this up.
pub const TWIN_MIN_N: usize = 1 << 24;
/// Random outputs verified per run (besides the edges).
pub const SAMPLES: usize = 2000;
/// The poison byte outputs are filled with before each verified launch.
pub const POISON: u8 = 0xA5;

/// What to run.
#[derive(Clone, Debug)]
pub struct ConvOptions {
    /// Mask widths (1D).
    pub widths: Vec<usize>,
    /// Input lengths (1D).
    pub lengths: Vec<usize>,
    /// Kernels.
    pub variants: Vec<Conv1dVariant>,
    /// Boundary mode.
    pub mode: Boundary,
    /// Build and time the CUDA C++ twins when nvcc exists.
    pub twins: bool,
    /// Timing settings.
    pub settings: Settings,
    /// Where JSON and SVG go.
    pub out_dir: PathBuf,
    /// Seed of the random input and masks.
    pub seed: u64,
    /// Square 2D mask sizes (3 = 3×3); empty skips the 2D part.
    pub masks_2d: Vec<usize>,
    /// Square mask sizes run with the separable filter alone (wider masks,
    /// where the full 2D kernels would take long).
    pub separable_2d: Vec<usize>,
    /// Gaussian σ run with [`Separable::gaussian`] (scipy's weights, radius
    /// `⌊4σ + 0.5⌋`).
    pub gaussians_2d: Vec<f64>,
    /// 2D image side (an `image_2d × image_2d` image).
    pub image_2d: usize,
    /// Skip the 1D part.
    pub skip_1d: bool,
    /// Batched (depthwise) workloads ([`super::batch`]); empty skips them.
    pub batches: Vec<super::batch::Workload>,
    /// Storage types of the batched and channels workloads.
    pub dtypes: Vec<String>,
    /// 2D channels workloads ([`super::batch::run_channels`]); empty skips
    /// them.
    pub channels: Vec<super::batch::ChannelWorkload>,
}

impl Default for ConvOptions {
    fn default() -> Self {
        ConvOptions {
            widths: vec![3, 7, 15, 31, 63, 127, 255],
            lengths: vec![1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 27, 1 << 28],
            variants: Conv1dVariant::ALL.into_iter().chain([Conv1dVariant::Tensor]).collect(),
            mode: Boundary::Zero,
            twins: true,
            settings: Settings::default(),
            out_dir: PathBuf::from("bench-out"),
            seed: 2026,
            masks_2d: vec![3, 5, 7, 9, 11, 13, 15],
            separable_2d: vec![17, 21, 25, 31],
            gaussians_2d: vec![2.0, 5.0],
            image_2d: 8192,
            skip_1d: false,
            batches: Vec::new(),
            dtypes: vec!["f32".into(), "bf16".into()],
            channels: Vec::new(),
        }
    }
}

impl ConvOptions {
    /// A short smoke run.
    pub fn quick() -> Self {
        ConvOptions {
            widths: vec![3, 31],
            lengths: vec![1 << 20, 1 << 24],
            masks_2d: vec![3, 5],
            separable_2d: vec![31],
            gaussians_2d: vec![5.0],
            image_2d: 2048,
            settings: Settings { reps: 5, ..Settings::default() },
            ..ConvOptions::default()
        }
    }
}

/// One kernel on one (width, length).
#[derive(Clone, Debug, Serialize)]
pub struct Row1d {
    /// Mask width.
    pub w: usize,
    /// Input length.
    pub n: usize,
    /// Variant name.
    pub variant: &'static str,
    /// Kernel that ran.
    pub kernel: &'static str,
    /// Rust kernel timing.
    pub stats: Stats,
    /// Effective bandwidth: (input + output bytes) / median time, GB/s.
    pub gbps: f64,
    /// Floor time / median time.
    pub of_floor: f64,
    /// Basic kernel's time / this kernel's time.
    pub speedup_vs_basic: Option<f64>,
    /// The lesson's global loads per output.
    pub model_loads_per_output: f64,
    /// The twin's timing, when it ran.
    pub twin: Option<Stats>,
    /// Rust median / C++ median.
    pub rust_over_cpp: Option<f64>,
}

/// A goal's verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// What is required.
    pub goal: String,
    /// `MET`, `NOT MET` or `NOT EVALUATED`.
    pub status: &'static str,
    /// The numbers behind it.
    pub detail: String,
}

impl Verdict {
    fn line(&self) -> String {
        format!("goal {}: {} ({})", self.goal, self.status, self.detail)
    }
}

/// The arithmetic peaks the compute model compares kernels with, measured
/// by the probe kernels `tc_peak_ffma` and `tc_peak_mma_tf32` (8 blocks of
/// 256 threads per SM, 4096 iterations of 8 independent chains).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Peaks {
    /// FP32 fused multiply-adds, TFLOPS (2 flops each); `None` where the
    /// loaded PTX lacks the probes (below sm_80).
    pub ffma_tflops: Option<f64>,
    /// TF32 `mma.sync.m16n8k8`, TFLOPS (2048 flops each); `None` below
    /// sm_80.
    pub mma_tf32_tflops: Option<f64>,
}

/// Measures [`Peaks`] on `gpu`.
pub fn measure_peaks(gpu: &Gpu, settings: &Settings) -> BenchResult<Peaks> {
    use crate::launch::{KernelArg, LaunchConfig};
    let (threads, iters, seed) = (256u32, 4096u32, 0.37f32);
    let grid = gpu.info().sm_count.max(1) * 8;
    let out = gpu.alloc_zeroed::<f32>((grid * threads) as usize)?;
    let cfg = LaunchConfig::new(grid, threads);
    let p = out.device_ptr();
    let args: [&dyn KernelArg; 3] = [&p, &iters, &seed];
    let rate = |name: &'static str, flops_per_thread_iter: f64| -> BenchResult<Option<f64>> {
        if gpu.param_sizes(name).is_err() {
            return Ok(None);
        }
        // SAFETY: `out` holds one f32 per launched thread, the kernels'
        // whole contract.
        let st = harness::measure(gpu, settings, |_| unsafe { gpu.launch(name, &cfg, &args) })?;
        let flops = (grid * threads) as f64 * iters as f64 * flops_per_thread_iter;
        Ok(Some(flops / st.median_ms / 1e9))
    };
    // Per thread and iteration: 8 chains × 2 flops; 8 mma × 2048 flops per
    // warp, that is 8 × 64 per thread.
    let ffma = rate("tc_peak_ffma", 16.0)?;
    let mma = rate("tc_peak_mma_tf32", 8.0 * 64.0)?;
    Ok(Peaks { ffma_tflops: ffma, mma_tf32_tflops: mma })
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct ConvReport {
    /// The device.
    pub device: DeviceSummary,
    /// The arithmetic peaks of the compute model.
    pub peaks: Peaks,
    /// The DtoD reference the floor comes from.
    pub dtod: DtodReference,
    /// Boundary mode used.
    pub mode: &'static str,
    /// Timing settings.
    pub settings: Settings,
    /// Seed of the inputs and masks.
    pub seed: u64,
    /// The C++ twins' provenance.
    pub twins: Vec<TwinStatus>,
    /// 1D rows.
    pub rows_1d: Vec<Row1d>,
    /// 2D rows.
    pub rows_2d: Vec<Row2d>,
    /// Batched (depthwise) rows.
    pub rows_batch: Vec<super::batch::RowBatch>,
    /// 2D channels rows.
    pub rows_channels: Vec<super::batch::RowChannels>,
    /// Goal verdicts.
    pub goals: Vec<Verdict>,
}

/// Runs the suite and writes `conv.json` and `conv-1d.svg` into the output
/// directory.
pub fn run(gpu: &Gpu, opts: &ConvOptions) -> BenchResult<ConvReport> {
    if !opts.skip_1d && (opts.widths.is_empty() || opts.lengths.is_empty() || opts.variants.is_empty()) {
        return Err(BenchError::Options("no widths, lengths or variants to run".into()));
    }
    let device = DeviceSummary::of(gpu);
    let dtod = harness::measure_dtod(gpu, &opts.settings, 512 << 20)?;
    println!("conv: {} — cuMemcpyDtoD {:.0} GB/s (512 MiB), the floor's bandwidth", device.name, dtod.gbps);
    let peaks = measure_peaks(gpu, &opts.settings)?;
    let tflops = |t: Option<f64>| t.map_or("n/a (below sm_80)".to_string(), |t| format!("{t:.1} TFLOPS"));
    println!("conv: peaks — FP32 FMA {}, TF32 mma.sync {}", tflops(peaks.ffma_tflops), tflops(peaks.mma_tf32_tflops));
    let mut twin_status = Vec::new();
    let mut twin_for = |name: &str, source: &str| {
        if !opts.twins {
            return None;
        }
        let t = twin::build(gpu, name, source);
        println!("conv: C++ twins {name} {}: {}", t.status.state, t.status.detail);
        twin_status.push(t.status);
        t.module
    };
    let twin_module = twin_for("conv1d.cu", twin::CONV1D_SOURCE);
    let twin_2d = twin_for("conv2d.cu", twin::CONV2D_SOURCE);
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let n_max = if opts.skip_1d { 0 } else { *opts.lengths.iter().max().unwrap_or(&0) };
    let host: Vec<f32> = (0..n_max).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let input = gpu.upload(&host)?;
    // SAFETY: every element is written by a kernel (or poisoned) before it is read.
    let mut output = unsafe { gpu.alloc_uninit::<f32>(n_max)? };
    let mut rows = Vec::new();
    let widths: &[usize] = if opts.skip_1d { &[] } else { &opts.widths };
    for &w in widths {
        let mask: Vec<f32> = (0..w).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let conv = Conv1d::new(gpu, &mask, ConvOp::Correlate, opts.mode)?;
        let tf32 = Conv1d::new(gpu, &mask, ConvOp::Correlate, opts.mode)?.with_precision(Precision::Tf32);
        let tensor = conv.tensor_support();
        if let (Err(why), true) = (&tensor, opts.variants.contains(&Conv1dVariant::Tensor)) {
            println!("conv: w = {w}: no tensor-core rows: {why}");
        }
        for &n in &opts.lengths {
            let src = input.view(0..n)?;
            let case = Case1d { conv: &conv, host: &host[..n], src: &src, dtod: &dtod, settings: &opts.settings };
            let mut out = output.view_mut(0..n)?;
            let mut basic_ms = None;
            for &variant in &opts.variants {
                if variant == Conv1dVariant::Tensor && tensor.is_err() {
                    continue;
                }
                let row = case.measure(variant, &mut out, twin_module.as_ref(), &mut rng)?;
                if variant == Conv1dVariant::Basic {
                    basic_ms = Some(row.stats.median_ms);
                }
                rows.push(row);
                if variant == Conv1dVariant::Tensor {
                    let case = Case1d { conv: &tf32, ..case };
                    let mut row = case.measure(variant, &mut out, twin_module.as_ref(), &mut rng)?;
                    row.variant = TF32_LABEL;
                    rows.push(row);
                }
            }
            if let Some(b) = basic_ms {
                for r in rows.iter_mut().filter(|r| r.w == w && r.n == n) {
                    r.speedup_vs_basic = Some(b / r.stats.median_ms);
                }
            }
        }
    }
    drop((input, output));
    let rows_2d = run_2d(gpu, opts, &dtod, twin_2d.as_ref(), &mut rng)?;
    let rows_batch = if opts.batches.is_empty() {
        Vec::new()
    } else {
        super::batch::run(gpu, &opts.batches, &opts.dtypes, opts.mode, &dtod, &opts.settings, opts.seed)?
    };
    let mut goals = Vec::new();
    if !rows.is_empty() || !rows_2d.is_empty() {
        goals.extend(goals_1d(&rows, twin_module.is_some()));
        goals.extend(goals_2d(&rows_2d, twin_2d.is_some()));
    }
    if !opts.batches.is_empty() {
        goals.extend(super::batch::goals(&rows_batch));
    }
    let rows_channels = if opts.channels.is_empty() {
        Vec::new()
    } else {
        super::batch::run_channels(gpu, &opts.channels, &opts.dtypes, opts.mode, &dtod, &opts.settings, opts.seed)?
    };
    if !opts.channels.is_empty() {
        goals.extend(super::batch::goals_channels(&rows_channels));
    }
    let report = ConvReport {
        device,
        peaks,
        dtod,
        mode: opts.mode.name(),
        settings: opts.settings,
        seed: opts.seed,
        twins: twin_status,
        rows_1d: rows,
        rows_2d,
        rows_batch,
        rows_channels,
        goals,
    };
    if !report.rows_1d.is_empty() {
        println!("{}", table_1d(&report.rows_1d).render());
    }
    if !report.rows_2d.is_empty() {
        println!("{}", table_2d(&report.rows_2d).render());
    }
    for g in &report.goals {
        println!("{}", g.line());
    }
    report.write(&opts.out_dir)?;
    Ok(report)
}

/// The inputs one 1D measurement needs.
pub struct Case1d<'a> {
    /// The convolution (mask, mode).
    pub conv: &'a Conv1d<f32>,
    /// The input, on the host.
    pub host: &'a [f32],
    /// The same input on the device.
    pub src: &'a DeviceView<'a, f32>,
    /// The floor's reference copy.
    pub dtod: &'a DtodReference,
    /// Timing settings.
    pub settings: &'a Settings,
}

impl Case1d<'_> {
    /// Verifies and times `variant` (and its twin when `twin` is given).
    pub fn measure(
        &self,
        variant: Conv1dVariant,
        out: &mut DeviceViewMut<'_, f32>,
        twin: Option<&PtxModule>,
        rng: &mut StdRng,
    ) -> BenchResult<Row1d> {
        let gpu = self.conv.gpu();
        let n = self.host.len();
        let w = self.conv.width();
        let plan = self.conv.plan(variant, n)?;
        self.verify(variant, out, None, rng)?;
        let stats = harness::measure(gpu, self.settings, |_| self.conv.run(variant, self.src, out).map(|_| ()))?;
        let (twin_stats, ratio) = match twin {
            Some(m) if n > 0 && m.param_sizes(plan.kernel).is_ok() => {
                self.verify(variant, out, Some(m), rng)?;
                let t = harness::measure(gpu, self.settings, |_| self.run_twin(m, variant, out))?;
                (Some(t), Some(stats.median_ms / t.median_ms))
            }
            _ => (None, None),
        };
        let bytes = 2.0 * (n * 4) as f64;
        Ok(Row1d {
            w,
            n,
            variant: plan.variant.name(),
            kernel: plan.kernel,
            stats,
            gbps: harness::gbps(bytes, stats.median_ms),
            of_floor: self.dtod.floor_ms(bytes) / stats.median_ms,
            speedup_vs_basic: None,
            model_loads_per_output: plan.variant.model_loads_per_output(w, THREADS_1D as usize),
            twin: twin_stats,
            rust_over_cpp: ratio,
        })
    }

    /// The twin of `variant`'s kernel, same plan, same buffers, the mask
    /// passed the same way.
    fn run_twin(&self, m: &PtxModule, variant: Conv1dVariant, out: &mut DeviceViewMut<'_, f32>) -> BenchResult<()> {
        self.conv.run_on(Some(m), variant, self.src, out)?;
        Ok(())
    }

    /// Poisons the output, runs once, checks that no poison is left and
    /// that the edges and random samples meet the reference.
    fn verify(
        &self,
        variant: Conv1dVariant,
        out: &mut DeviceViewMut<'_, f32>,
        twin: Option<&PtxModule>,
        rng: &mut StdRng,
    ) -> BenchResult<()> {
        let n = self.host.len();
        if n == 0 {
            return Ok(());
        }
        out.fill_bytes(POISON)?;
        match twin {
            None => {
                self.conv.run(variant, self.src, out)?;
            }
            Some(m) => self.run_twin(m, variant, out)?,
        }
        let got = out.to_vec()?;
        let who = if twin.is_some() { "C++ twin" } else { "Rust" };
        let what = format!("{who} {} w={} n={n}", variant.name(), self.conv.width());
        let poison = f32::from_bits(u32::from_ne_bytes([POISON; 4]));
        if let Some(i) = got.iter().position(|v| v.to_bits() == poison.to_bits()) {
            return Err(BenchError::Verification {
                suite: "conv",
                message: format!("{what}: output {i} never written"),
            });
        }
        let w = self.conv.width();
        let mut idx: Vec<usize> = (0..(2 * w).min(n)).chain(n.saturating_sub(2 * w)..n).collect();
        idx.extend((0..SAMPLES).map(|_| rng.random_range(0..n)));
        let refs = sampled_reference(self.host, self.conv, &idx);
        for (&i, want) in idx.iter().zip(&refs) {
            if !matches(got[i], want) {
                let message =
                    format!("{what}: output {i} = {:e}, reference {:e} ± {:e}", got[i], want.value, want.bound);
                return Err(BenchError::Verification { suite: "conv", message });
            }
        }
        Ok(())
    }
}

/// Reference values at positions `idx` (ghost cells from
/// [`ghosts`], the sums in f64).
pub fn sampled_reference(input: &[f32], conv: &Conv1d<f32>, idx: &[usize]) -> Vec<Checked> {
    let (taps, left, mode) = (conv.taps(), conv.left(), conv.mode());
    let w = taps.len();
    let (lg, rg) = ghosts(input, left, w - 1 - left, mode);
    let n = input.len() as isize;
    let at = |x: isize| -> f64 {
        if x < 0 {
            lg[(-x - 1) as usize] as f64
        } else if x >= n {
            rg[(x - n) as usize] as f64
        } else {
            input[x as usize] as f64
        }
    };
    let gamma = (w as f64 + 2.0) * f64::from(f32::EPSILON) / 2.0;
    let bound = |a: f64| match conv.precision() {
        Precision::Tf32 => Precision::tf32_error_bound(w, a),
        Precision::F32 => gamma * a + w as f64 * f64::from(f32::MIN_POSITIVE),
    };
    idx.iter()
        .map(|&i| {
            let (mut v, mut a) = (0.0f64, 0.0f64);
            for (j, &m) in taps.iter().enumerate() {
                let p = at(i as isize - left as isize + j as isize) * f64::from(m);
                v += p;
                a += p.abs();
            }
            Checked { value: v, bound: bound(a) }
        })
        .collect()
}

fn goals_1d(rows: &[Row1d], twins: bool) -> Vec<Verdict> {
    let mut goals = Vec::new();
    let at_goal: Vec<&Row1d> = rows.iter().filter(|r| r.n == GOAL_N && r.w <= 31 && r.variant != TF32_LABEL).collect();
    let goal = format!("best 1D >= {:.0}% of the DRAM floor at n = 2^27 for widths <= 31", GOAL_1D * 100.0);
    if at_goal.is_empty() {
        goals.push(Verdict { goal, status: "NOT EVALUATED", detail: "n = 2^27 with widths <= 31 not run".into() });
    } else {
        let mut widths: Vec<usize> = at_goal.iter().map(|r| r.w).collect();
        widths.dedup();
        let mut worst: Option<(f64, usize, &str)> = None;
        for w in widths {
            let best = at_goal.iter().filter(|r| r.w == w).max_by(|a, b| a.of_floor.total_cmp(&b.of_floor)).unwrap();
            if worst.is_none_or(|(f, _, _)| best.of_floor < f) {
                worst = Some((best.of_floor, w, best.variant));
            }
        }
        let (f, w, v) = worst.unwrap_or((0.0, 0, ""));
        let status = if f >= GOAL_1D { "MET" } else { "NOT MET" };
        goals.push(Verdict { goal, status, detail: format!("lowest best: {:.1}% at w = {w} ({v})", f * 100.0) });
    }
    goals.push(best_1d_goal(rows, |w| w <= GOAL_WIDE_W, GOAL_1D, &format!("every w <= {GOAL_WIDE_W}")));
    goals.push(best_1d_goal(rows, |w| w == GOAL_WIDEST_W, GOAL_WIDEST, &format!("w = {GOAL_WIDEST_W}")));
    let goal = format!("every Rust kernel <= {GOAL_TWIN:.2}x its C++ twin's time (n >= 2^24)");
    let judged: Vec<&Row1d> = rows.iter().filter(|r| r.n >= TWIN_MIN_N && r.rust_over_cpp.is_some()).collect();
    if !twins || judged.is_empty() {
        goals.push(Verdict { goal, status: "NOT EVALUATED", detail: "no twin timings (nvcc missing?)".into() });
    } else {
        let worst = judged.iter().max_by(|a, b| a.rust_over_cpp.unwrap().total_cmp(&b.rust_over_cpp.unwrap())).unwrap();
        let r = worst.rust_over_cpp.unwrap_or(f64::NAN);
        let over = judged.iter().filter(|x| x.rust_over_cpp.is_some_and(|q| q > GOAL_TWIN)).count();
        goals.push(Verdict {
            goal,
            status: if over == 0 { "MET" } else { "NOT MET" },
            detail: format!(
                "worst {r:.3}x: {} w = {} n = {}; {over} of {} rows above",
                worst.variant,
                worst.w,
                worst.n,
                judged.len()
            ),
        });
    }
    goals
}

/// The verdict "the best `f32`-accurate kernel reaches `share` of the floor
/// at n = 2^27 for every run width that `which` accepts" (`what` names
/// the widths).
fn best_1d_goal(rows: &[Row1d], which: impl Fn(usize) -> bool, share: f64, what: &str) -> Verdict {
    let goal = format!("best f32-accurate 1D >= {:.0}% of the DRAM floor at n = 2^27 for {what}", share * 100.0);
    let at: Vec<&Row1d> = rows.iter().filter(|r| r.n == GOAL_N && which(r.w) && r.variant != TF32_LABEL).collect();
    let mut widths: Vec<usize> = at.iter().map(|r| r.w).collect();
    widths.sort_unstable();
    widths.dedup();
    let worst = widths
        .iter()
        .filter_map(|&w| at.iter().filter(|r| r.w == w).max_by(|a, b| a.of_floor.total_cmp(&b.of_floor)))
        .min_by(|a, b| a.of_floor.total_cmp(&b.of_floor));
    match worst {
        None => Verdict { goal, status: "NOT EVALUATED", detail: format!("n = 2^27 with {what} not run") },
        Some(r) => Verdict {
            goal,
            status: if r.of_floor >= share { "MET" } else { "NOT MET" },
            detail: format!("lowest best: {:.1}% at w = {} ({})", r.of_floor * 100.0, r.w, r.variant),
        },
    }
}

/// The 1D table.
pub fn table_1d(rows: &[Row1d]) -> Table {
    let mut t = Table::new([
        "w",
        "n",
        "variant",
        "median ms",
        "GB/s",
        "% floor",
        "vs basic",
        "model loads/out",
        "C++ ms",
        "Rust/C++",
    ]);
    for r in rows {
        t.row([
            r.w.to_string(),
            if r.n.is_power_of_two() { format!("2^{}", r.n.trailing_zeros()) } else { r.n.to_string() },
            r.variant.to_string(),
            format!("{:.4}", r.stats.median_ms),
            format!("{:.0}", r.gbps),
            format!("{:.1}%", r.of_floor * 100.0),
            r.speedup_vs_basic.map_or("-".into(), |s| format!("{s:.2}x")),
            format!("{:.3}", r.model_loads_per_output),
            r.twin.map_or("-".into(), |s| format!("{:.4}", s.median_ms)),
            r.rust_over_cpp.map_or("-".into(), |q| format!("{q:.3}")),
        ]);
    }
    t
}

impl ConvReport {
    /// Writes `conv.json` and `conv-1d.svg` (% of floor against n, per
    /// variant, at the widest width ≤ 31 that ran) into `dir`.
    pub fn write(&self, dir: &Path) -> BenchResult<(PathBuf, PathBuf)> {
        let json = dir.join("conv.json");
        write_json(&json, self)?;
        let w = self.rows_1d.iter().map(|r| r.w).filter(|&w| w <= 31).max().unwrap_or(0);
        let mut series: Vec<Series> = Vec::new();
        for r in self.rows_1d.iter().filter(|r| r.w == w) {
            match series.iter_mut().find(|s| s.name == r.variant) {
                Some(s) => s.points.push((r.n as f64, r.of_floor * 100.0)),
                None => series.push(Series { name: r.variant.into(), points: vec![(r.n as f64, r.of_floor * 100.0)] }),
            }
        }
        let svg = dir.join("conv-1d.svg");
        plot_svg(&svg, &format!("1D convolution, w = {w}: share of the DRAM floor"), "n", "% of floor", &series)?;
        println!("conv: wrote {} and {}", json.display(), svg.display());
        Ok((json, svg))
    }
}

/// One 2D kernel on one mask size.
#[derive(Clone, Debug, Serialize)]
pub struct Row2d {
    /// Mask side (`k` for a `k × k` mask).
    pub mask: usize,
    /// Image side.
    pub side: usize,
    /// Variant (`basic`, `const`, `tiled`, `fast`, `separable`).
    pub variant: &'static str,
    /// Kernel(s) that ran.
    pub kernel: String,
    /// Rust timing.
    pub stats: Stats,
    /// (input + output bytes) / median time, GB/s.
    pub gbps: f64,
    /// Floor time / median time (the floor counts one input read and one
    /// output write, also for the two-pass separable filter).
    pub of_floor: f64,
    /// Basic kernel's time / this one's.
    pub speedup_vs_basic: Option<f64>,
    /// The twin's timing.
    pub twin: Option<Stats>,
    /// Rust median / C++ median.
    pub rust_over_cpp: Option<f64>,
}

/// One 2D case: mask side, the two axis masks, whether every 2D variant
/// runs (or the separable filter alone), and the separable rows' label.
type Case2d = (usize, Vec<f32>, Vec<f32>, bool, &'static str);

/// The 2D part: every variant on `image_2d²` with each `k × k` mask
/// (the outer product of two random vectors, so the separable filter
/// computes the same function), verified in full against the reference.
fn run_2d(
    gpu: &Gpu,
    opts: &ConvOptions,
    dtod: &DtodReference,
    twin: Option<&PtxModule>,
    rng: &mut StdRng,
) -> BenchResult<Vec<Row2d>> {
    let mut rows = Vec::new();
    if (opts.masks_2d.is_empty() && opts.separable_2d.is_empty() && opts.gaussians_2d.is_empty()) || opts.image_2d == 0
    {
        return Ok(rows);
    }
    let side = opts.image_2d;
    let count = side * side;
    let host: Vec<f32> = (0..count).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let input = gpu.upload(&host)?;
    let mut output = gpu.alloc_zeroed::<f32>(count)?;
    let img = Image::dense(&host, side, side);
    let bytes = 2.0 * (count * 4) as f64;
    // Every variant on each k × k mask; then the separable filter alone on
    // wider masks and on Gaussians (scipy's weights; "gaussian" rows).
    let mut cases: Vec<Case2d> = Vec::new();
    for (&k, full) in opts.masks_2d.iter().map(|k| (k, true)).chain(opts.separable_2d.iter().map(|k| (k, false))) {
        let mx: Vec<f32> = (0..k).map(|_| rng.random_range(0.1f32..1.0)).collect();
        let my: Vec<f32> = (0..k).map(|_| rng.random_range(0.1f32..1.0)).collect();
        cases.push((k, mx, my, full, "separable"));
    }
    for &sigma in &opts.gaussians_2d {
        let g = crate::conv::gaussian::<f32>(sigma)?;
        cases.push((g.len(), g.clone(), g, false, "gaussian"));
    }
    for (k, mx, my, full, sep_name) in cases {
        let mask = crate::conv::reference2d::outer_product(&mx, &my);
        let conv = Conv2d::new(gpu, &mask, k, k, ConvOp::Correlate, opts.mode)?;
        let conv_tf32 = Conv2d::new(gpu, &mask, k, k, ConvOp::Correlate, opts.mode)?.with_precision(Precision::Tf32);
        let sep = Separable::new(gpu, &mx, &my, ConvOp::Correlate, opts.mode)?;
        let want = if full { conv2d_checked(img, &mask, k, k, ConvOp::Correlate, opts.mode)? } else { Vec::new() };
        let want_tf32 = if full {
            let bound = |abs| Precision::tf32_error_bound(k * k, abs);
            correlate2d_bounded(img, &mask, (k, k), (k / 2, k / 2), opts.mode, bound)?
        } else {
            Vec::new()
        };
        let want_sep = separable_checked(img, &mx, &my, ConvOp::Correlate, opts.mode)?;
        let first = rows.len();
        // The FMA variants, the tensor cores at both precisions where they
        // take this mask, then the separable filter.
        let tensor = full && conv.tensor_support().is_ok();
        if full && let Err(why) = conv.tensor_support() {
            println!("conv: {k}x{k}: no 2D tensor-core rows: {why}");
        }
        let variants = Conv2dVariant::ALL
            .iter()
            .filter(|_| full)
            .map(|&v| (v.name(), Some((v, &conv))))
            .chain(
                tensor
                    .then_some([
                        ("tensor", Some((Conv2dVariant::Tensor, &conv))),
                        (TF32_LABEL, Some((Conv2dVariant::Tensor, &conv_tf32))),
                    ])
                    .into_iter()
                    .flatten(),
            )
            .chain([(sep_name, None)]);
        for (name, variant) in variants {
            let run = |module: Option<&PtxModule>, out: &mut DeviceViewMut<'_, f32>| -> BenchResult<String> {
                Ok(match variant {
                    Some((v, c)) => c.run_on(module, v, &input.as_view(), out, side, side, side)?.kernel.to_string(),
                    None => sep.run_on(module, &input.as_view(), out, None, side, side, side)?.kernels(),
                })
            };
            let reference = match variant {
                Some((_, c)) if c.precision() == Precision::Tf32 => &want_tf32,
                Some(_) => &want,
                None => &want_sep,
            };
            let check = |module: Option<&PtxModule>, output: &mut crate::DeviceBuffer<f32>| -> BenchResult<String> {
                output.fill_bytes(POISON)?;
                let kernel = run(module, &mut output.as_view_mut())?;
                let got = output.to_vec()?;
                if let Err((m, bad)) = compare(&got, reference) {
                    let who = if module.is_some() { "C++ twin" } else { "Rust" };
                    let message = format!("{who} 2D {name} {k}x{k} on {side}^2: {bad} wrong outputs; first: {m}");
                    return Err(BenchError::Verification { suite: "conv", message });
                }
                Ok(kernel)
            };
            let kernel = check(None, &mut output)?;
            let stats = harness::measure(gpu, &opts.settings, |_| run(None, &mut output.as_view_mut()).map(|_| ()))?;
            let (tw, ratio) = match twin {
                Some(m) => {
                    check(Some(m), &mut output)?;
                    let t =
                        harness::measure(gpu, &opts.settings, |_| run(Some(m), &mut output.as_view_mut()).map(|_| ()))?;
                    (Some(t), Some(stats.median_ms / t.median_ms))
                }
                None => (None, None),
            };
            rows.push(Row2d {
                mask: k,
                side,
                variant: name,
                kernel,
                stats,
                gbps: harness::gbps(bytes, stats.median_ms),
                of_floor: dtod.floor_ms(bytes) / stats.median_ms,
                speedup_vs_basic: None,
                twin: tw,
                rust_over_cpp: ratio,
            });
        }
        let basic = rows[first..].iter().find(|r| r.variant == "basic").map(|r| r.stats.median_ms);
        if let Some(b) = basic {
            for r in &mut rows[first..] {
                r.speedup_vs_basic = Some(b / r.stats.median_ms);
            }
        }
    }
    Ok(rows)
}

/// The largest mask side of the [`GOAL_2D`] goal for every size.
pub const GOAL_2D_SMALL_K: usize = 9;
/// Goal: best general 2D kernel's share of the floor up to
/// [`GOAL_2D_LARGE_K`].
pub const GOAL_2D_LARGE: f64 = 0.65;
/// The largest mask side of the [`GOAL_2D_LARGE`] goal.
pub const GOAL_2D_LARGE_K: usize = 15;

/// Goal: the separable filter's share of the floor for per-axis widths
/// up to [`GOAL_SEP_W`] on 8192².
pub const GOAL_SEP: f64 = 0.80;
/// The widest per-axis mask of the [`GOAL_SEP`] goal.
pub const GOAL_SEP_W: usize = 31;
/// Goal: a Gaussian with σ = 5 on 8192² `f32` within this many ms: 1/20 of
/// CuPy's `gaussian_filter` (9.07 ms, measured on the same H100 model).
pub const GOAL_GAUSS5_MS: f64 = 9.07 / 20.0;

fn goals_2d(rows: &[Row2d], twins: bool) -> Vec<Verdict> {
    let mut goals = Vec::new();
    let goal = format!("separable >= {:.0}% of the floor for widths <= {GOAL_SEP_W} on 8192^2", GOAL_SEP * 100.0);
    let sep: Vec<&Row2d> =
        rows.iter().filter(|r| r.variant == "separable" && r.mask <= GOAL_SEP_W && r.side == 8192).collect();
    match sep.iter().min_by(|a, b| a.of_floor.total_cmp(&b.of_floor)) {
        None => goals.push(Verdict { goal, status: "NOT EVALUATED", detail: "no separable rows on 8192^2".into() }),
        Some(w) => goals.push(Verdict {
            goal,
            status: if w.of_floor >= GOAL_SEP { "MET" } else { "NOT MET" },
            detail: format!("lowest {:.1}% at {}x{} ({})", w.of_floor * 100.0, w.mask, w.mask, w.kernel),
        }),
    }
    let goal = format!("gaussian sigma = 5 on 8192^2 <= {GOAL_GAUSS5_MS:.3} ms (1/20 of CuPy's 9.07 ms)");
    match rows.iter().find(|r| r.variant == "gaussian" && r.mask == 41 && r.side == 8192) {
        None => goals.push(Verdict { goal, status: "NOT EVALUATED", detail: "sigma = 5 on 8192^2 not run".into() }),
        Some(g) => goals.push(Verdict {
            goal,
            status: if g.stats.median_ms <= GOAL_GAUSS5_MS { "MET" } else { "NOT MET" },
            detail: format!("{:.4} ms, {:.1}x faster than CuPy", g.stats.median_ms, 9.07 / g.stats.median_ms),
        }),
    }
    // The general-mask kernels (the separable filter and TF32 aside).
    for (max, share) in [(GOAL_2D_SMALL_K, GOAL_2D), (GOAL_2D_LARGE_K, GOAL_2D_LARGE)] {
        let goal = format!(
            "best f32-accurate general 2D >= {:.0}% of the DRAM floor for every odd k <= {max} on 8192^2",
            share * 100.0
        );
        let general =
            |r: &&Row2d| r.side == 8192 && r.mask <= max && !matches!(r.variant, "separable" | "gaussian" | TF32_LABEL);
        let mut sizes: Vec<usize> = rows.iter().filter(general).map(|r| r.mask).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let best = |k: usize| {
            rows.iter().filter(general).filter(|r| r.mask == k).max_by(|a, b| a.of_floor.total_cmp(&b.of_floor))
        };
        match sizes.iter().filter_map(|&k| best(k)).min_by(|a, b| a.of_floor.total_cmp(&b.of_floor)) {
            None => {
                goals.push(Verdict { goal, status: "NOT EVALUATED", detail: "no general 2D rows on 8192^2".into() })
            }
            Some(w) => goals.push(Verdict {
                goal,
                status: if w.of_floor >= share { "MET" } else { "NOT MET" },
                detail: format!(
                    "lowest best {:.1}% at {}x{} ({}, {:.4} ms)",
                    w.of_floor * 100.0,
                    w.mask,
                    w.mask,
                    w.variant,
                    w.stats.median_ms
                ),
            }),
        }
    }
    let goal = format!("best 2D >= {:.0}% of the DRAM floor for 5x5 on 8192^2", GOAL_2D * 100.0);
    match rows.iter().filter(|r| r.mask == 5 && r.side == 8192).max_by(|a, b| a.of_floor.total_cmp(&b.of_floor)) {
        None => goals.push(Verdict { goal, status: "NOT EVALUATED", detail: "5x5 on 8192^2 not run".into() }),
        Some(b) => goals.push(Verdict {
            goal,
            status: if b.of_floor >= GOAL_2D { "MET" } else { "NOT MET" },
            detail: format!("best {:.1}% ({}, {:.4} ms)", b.of_floor * 100.0, b.variant, b.stats.median_ms),
        }),
    }
    let goal = format!("every Rust 2D kernel <= {GOAL_TWIN:.2}x its C++ twin's time");
    let judged: Vec<&Row2d> = rows.iter().filter(|r| r.rust_over_cpp.is_some()).collect();
    match judged.iter().max_by(|a, b| a.rust_over_cpp.unwrap().total_cmp(&b.rust_over_cpp.unwrap())) {
        Some(worst) if twins => {
            let over = judged.iter().filter(|r| r.rust_over_cpp.is_some_and(|q| q > GOAL_TWIN)).count();
            goals.push(Verdict {
                goal,
                status: if over == 0 { "MET" } else { "NOT MET" },
                detail: format!(
                    "worst {:.3}x: {} {}x{}; {over} of {} rows above",
                    worst.rust_over_cpp.unwrap_or(f64::NAN),
                    worst.variant,
                    worst.mask,
                    worst.mask,
                    judged.len()
                ),
            });
        }
        _ => goals.push(Verdict { goal, status: "NOT EVALUATED", detail: "no twin timings (nvcc missing?)".into() }),
    }
    goals
}

/// The 2D table.
pub fn table_2d(rows: &[Row2d]) -> Table {
    let mut t = Table::new([
        "mask",
        "image",
        "variant",
        "kernel",
        "median ms",
        "GB/s",
        "% floor",
        "vs basic",
        "C++ ms",
        "Rust/C++",
    ]);
    for r in rows {
        t.row([
            format!("{0}x{0}", r.mask),
            format!("{0}x{0}", r.side),
            r.variant.to_string(),
            r.kernel.clone(),
            format!("{:.4}", r.stats.median_ms),
            format!("{:.0}", r.gbps),
            format!("{:.1}%", r.of_floor * 100.0),
            r.speedup_vs_basic.map_or("-".into(), |s| format!("{s:.2}x")),
            r.twin.map_or("-".into(), |s| format!("{:.4}", s.median_ms)),
            r.rust_over_cpp.map_or("-".into(), |q| format!("{q:.3}")),
        ]);
    }
    t
}
