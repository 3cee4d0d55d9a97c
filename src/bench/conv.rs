//! The `conv` suite: the 1D kernels over mask widths × input lengths, the 2D kernels and the separable
//! filter on a square image, and (`--batch`, `--channels`) depthwise 1D filters and box filters over
//! interleaved channels, per storage type. Every kernel reads its input once and writes its output once:
//! `% floor` = those bytes at the `cuMemcpyDtoD` bandwidth (512 MiB, same run) / the kernel's time. 1D rows
//! add the lesson's loads per output ([`Conv1dVariant::model_loads_per_output`]); the 1D and 2D kernels
//! race their CUDA C++ twins ([`super::twin`]) on the same buffers. Outputs are poisoned before each
//! checked launch, then compared with the CPU references (1D: no poison left, the edges and 2000 random
//! outputs; batched: the first, last and three random rows; the rest: every output). The `goal` lines
//! judge the best kernels' shares of the floor, a σ = 5 Gaussian against CuPy's time, and the twin ratios.
//! The batched and channels rows also time a `cuMemcpyDtoD` of the input's bytes (`copy ms`, its share
//! of the floor, and the kernel's share of it, `% of copy`): at sizes near the L2's, the launch, ramp and
//! tail that the 512 MiB floor leaves out hold a plain copy well under the floor too.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::harness::{self, DtodReference, Stats};
use super::report::Series;
use super::run::{Common, Fmt, Goal, POISON, Rec, Run, Suite, Tab, elems, parse_elems};
use super::{BenchError, BenchResult, SuiteInfo, twin};
use crate::conv::batch::{Axis, Filter1d, Sample, Shape};
use crate::conv::channels::{self, CHANNELS, Filter2d};
use crate::conv::reference::{Checked, compare, ghosts, matches};
use crate::conv::reference_batch::{filter1d, filter2d, first_mismatch};
use crate::conv::reference2d::{Image, conv2d_checked, correlate2d_bounded, outer_product, separable_checked};
use crate::conv::{
    Boundary, Conv1d, Conv1dVariant, Conv2d, Conv2dVariant, ConvElem, ConvOp, Precision, Separable, THREADS_1D,
};
use crate::half::{bf16, f16};
use crate::launch::{KernelArg, LaunchConfig};
use crate::text::human_bytes;
use crate::{DeviceView, DeviceViewMut, PtxModule};

/// The rows of the tensor-core kernels at [`Precision::Tf32`] (not `f32`-accurate: not judged by goals).
pub const TF32_LABEL: &str = "tensor_tf32";
/// The storage types `--dtype` names.
pub const DTYPES: [&str; 6] = ["f32", "f64", "f16", "bf16", "u8", "u16"];
/// `--batch default`: torch's depthwise conv1d workloads (rows, samples per row, mask width).
pub const BATCH_DEFAULTS: [[usize; 3]; 2] = [[64, 1 << 21, 31], [1024, 1 << 17, 7]];
/// torch's channels workload: `u8` RGB 4096², a 5×5 box (side, channels, mask side).
pub const CHANNELS_DEFAULT: [usize; 3] = [4096, 3, 5];

/// `coalesce bench conv`.
#[derive(clap::Args, Clone, Debug)]
pub struct Conv {
    /// Mask widths, comma-separated [default: 3,7,15,31,63,127,255; 3,31 with --quick].
    #[arg(long, value_delimiter = ',')]
    pub widths: Option<Vec<usize>>,
    /// Input lengths, comma-separated, numbers or 2^k [default: 2^20,2^22,2^24,2^26,2^27,2^28].
    #[arg(long, value_delimiter = ',', value_parser = parse_elems)]
    pub lengths: Option<Vec<u64>>,
    /// Kernels, comma-separated (basic, const, tiled, tiled_l2, fast, tensor, rows) [default: all].
    #[arg(long, value_delimiter = ',')]
    pub variants: Option<Vec<Conv1dVariant>>,
    /// Boundary mode (zero, nearest, reflect, mirror, wrap).
    #[arg(long, default_value = "zero", value_parser = crate::conv::parse_boundary)]
    pub mode: Boundary,
    /// Skip the CUDA C++ twins.
    #[arg(long)]
    pub no_twins: bool,
    /// Square 2D mask sizes, comma-separated (5 = 5x5) [default: 3,5,..,15; 3,5 with --quick].
    #[arg(long, value_delimiter = ',')]
    pub masks_2d: Option<Vec<usize>>,
    /// Square mask sizes run with the separable filter alone, comma-separated [default: 17,21,25,31; 31 with --quick].
    #[arg(long, value_delimiter = ',')]
    pub separable_2d: Option<Vec<usize>>,
    /// Gaussian sigmas run with the separable filter, comma-separated [default: 2,5; 5 with --quick].
    #[arg(long, value_delimiter = ',')]
    pub gaussians_2d: Option<Vec<f64>>,
    /// 2D image side [default: 8192, 2048 with --quick].
    #[arg(long)]
    pub image_2d: Option<usize>,
    /// Only the 1D part.
    #[arg(long, conflicts_with = "only_2d")]
    pub only_1d: bool,
    /// Only the 2D part.
    #[arg(long)]
    pub only_2d: bool,
    /// Batched depthwise workloads ROWSxLEN@W, comma-separated, or `default` (64x2^21@31,1024x2^17@7).
    #[arg(long, value_delimiter = ',')]
    pub batch: Option<Vec<String>>,
    /// Elements between the 1D buffers' (256-byte aligned) starts and the views the kernels take: 1 puts them 4
    /// (f32) or 8 (f64) bytes off 16-byte alignment.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16))]
    pub offset_1d: u16,
    /// Element types of the 1D part (f32, f64); the tensor-core kernels take f32 only.
    #[arg(long, value_delimiter = ',', default_value = "f32", value_parser = ["f32", "f64"])]
    pub dtype_1d: Vec<String>,
    /// Storage types of the batched workloads (f32, f64, f16, bf16, u8, u16).
    #[arg(long, value_delimiter = ',', default_value = "f32,bf16")]
    pub dtype: Vec<String>,
    /// 2D images of interleaved channels (1, 3, 4), comma-separated: a 4096x4096 image, 5x5 box, per --dtype.
    #[arg(long, value_delimiter = ',')]
    pub channels: Option<Vec<usize>>,
    /// Box sizes of the channels workloads, comma-separated (5 = 5x5) [default: 5].
    #[arg(long, value_delimiter = ',')]
    pub channel_masks: Option<Vec<usize>>,
    /// Image side of the channels workloads [default: 4096].
    #[arg(long)]
    pub channel_side: Option<usize>,
    /// Only the batched and channels workloads (implies --batch default and --channels 3 when not given).
    #[arg(long, conflicts_with_all = ["only_1d", "only_2d"])]
    pub only_batch: bool,
    /// Seed of the random input and masks.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

/// Parses a batched workload `ROWSxLEN@W` (positive numbers or `2^k`).
pub fn parse_batch(s: &str) -> Result<[usize; 3], String> {
    let num = |t| parse_elems(t).ok().and_then(|v| usize::try_from(v).ok()).filter(|&v| v > 0);
    let parts = s.split_once('@').and_then(|(shape, w)| Some((shape.split_once('x')?, w)));
    match parts.map(|((rows, len), w)| [num(rows), num(len), num(w)]) {
        Some([Some(rows), Some(len), Some(w)]) => Ok([rows, len, w]),
        _ => Err(format!("batch `{s}` is not ROWSxLEN@W (positive numbers or 2^k)")),
    }
}

/// A batched workload's label (`64x2^21 w=31`), or a channels one's (`4096x4096x3 5x5`).
pub fn label(batch: bool, [a, b, c]: [usize; 3]) -> String {
    if batch { format!("{a}x{} w={c}", pow2(b)) } else { format!("{a}x{a}x{b} {c}x{c}") }
}

/// `2^k` for a power of two, else the number.
fn pow2(n: usize) -> String {
    if n.is_power_of_two() { format!("2^{}", n.trailing_zeros()) } else { n.to_string() }
}

impl Suite for Conv {
    const INFO: SuiteInfo = SuiteInfo {
        name: "conv",
        about: "1D/2D convolution: lesson kernels + fast kernel vs DRAM floor and CUDA C++ twins",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; bytes = input read once + output written once; times in ms per \
                                 launch; % floor = those bytes at cuMemcpyDtoD's bandwidth / the kernel's time";

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let [batches, chans] = self.workloads().map_err(|e| run.bad_options(e))?;
        let dtod = run.dtod(512 << 20)?;
        run.line(format!("cuMemcpyDtoD {:.0} GB/s ({}), the floor's bandwidth", dtod.gbps, human_bytes(dtod.bytes)));
        // Per thread and iteration: 8 chains × 2 flops; 8 mma × 2048 flops per warp, that is 8 × 64 per thread.
        let (ffma, mma) = (peak(run, "tc_peak_ffma", 16.0)?, peak(run, "tc_peak_mma_tf32", 8.0 * 64.0)?);
        let tflops = |t: Option<f64>| t.map_or("n/a (below sm_80)".to_string(), |t| format!("{t:.1} TFLOPS"));
        run.line(format!("peaks: FP32 FMA {}, TF32 mma.sync {}", tflops(ffma), tflops(mma)));
        run.param("peaks", serde_json::json!({ "ffma_tflops": ffma, "mma_tf32_tflops": mma }));
        run.param("mode", self.mode.name());
        run.param("seed", self.seed);
        let dependent = run.gpu.dependent_launches();
        run.line(format!(
            "dependent launches (each convolution kernel starts as the kernel before it drains): {}",
            if dependent { "on" } else { "off" }
        ));
        run.param("dependent_launches", dependent);
        let twins = [("conv1d.cu", twin::CONV1D_SOURCE), ("conv2d.cu", twin::CONV2D_SOURCE)];
        let twins = twins.map(|(name, src)| (!self.no_twins).then(|| twin::build(run.gpu, name, src)));
        for twin::TwinStatus { source, state, detail } in twins.iter().flatten().map(|t| &t.status) {
            run.line(format!("C++ twins {source} {state}: {detail}"));
        }
        run.param("twins", twins.iter().flatten().map(|t| &t.status).collect::<Vec<_>>());
        let [twin_1d, twin_2d] = twins.map(|t| t.and_then(|t| t.module));

        let mut rng = StdRng::seed_from_u64(self.seed);
        let t1 = self.run_1d(run, twin_1d.as_ref(), &mut rng)?;
        let t2 = self.run_2d(run, twin_2d.as_ref(), &mut rng)?;
        // The plot: % of the floor against n, per variant (those of the first length), at the widest width ≤ 31, in
        // the first element type.
        let first = run.rows(t1).first().map_or(String::new(), |r| text(r, "dtype").to_string());
        let typed: Vec<&Rec> = run.rows(t1).iter().filter(|r| text(r, "dtype") == first).collect();
        let plot_w = typed.iter().map(|r| num(r, "w")).filter(|&w| w <= 31.0).fold(0.0, f64::max);
        let rows: Vec<&Rec> = typed.into_iter().filter(|r| num(r, "w") == plot_w).collect();
        let point = |r: &&Rec| (size(r, "n") as f64, num(r, "% floor") * 100.0);
        let line = |v: &str| rows.iter().filter(|r| text(r, "variant") == v).map(point).collect();
        let names = rows.iter().take_while(|r| text(r, "n") == text(rows[0], "n")).map(|r| text(r, "variant"));
        let series: Vec<Series> = names.map(|v| Series { name: v.into(), points: line(v) }).collect();
        let title = format!("1D convolution, {first}, w = {plot_w}: share of the DRAM floor");
        run.plot("conv-1d", &title, "n", "% of floor", &series)?;
        let (d1, d2) = (run.rows(t1), run.rows(t2));
        let goals = if d1.is_empty() && d2.is_empty() { vec![] } else { goals_1d_2d(d1, d2) };
        goals.into_iter().for_each(|g| run.goal(g));
        self.sweep(run, true, &batches)?;
        self.sweep(run, false, &chans)
    }
}

impl Conv {
    /// The batched and channels workloads the options name (`--only-batch` alone: `--batch default`, `--channels 3`).
    pub fn workloads(&self) -> Result<[Vec<[usize; 3]>; 2], String> {
        let (mut batches, mut chans) = (Vec::new(), Vec::new());
        for s in self.batch.clone().unwrap_or(if self.only_batch { vec!["default".into()] } else { vec![] }) {
            if s == "default" { batches.extend(BATCH_DEFAULTS) } else { batches.push(parse_batch(&s)?) }
        }
        if let Some(d) = self.dtype.iter().find(|d| !batches.is_empty() && !DTYPES.contains(&d.as_str())) {
            return Err(format!("unknown dtype `{d}` ({})", DTYPES.join(", ")));
        }
        let [side, _, mask] = CHANNELS_DEFAULT;
        let (masks, side) = (self.channel_masks.clone().unwrap_or(vec![mask]), self.channel_side.unwrap_or(side));
        for channels in self.channels.clone().unwrap_or(if self.only_batch { vec![3] } else { vec![] }) {
            if side == 0 || masks.contains(&0) {
                return Err("--channel-side and --channel-masks take positive sizes".into());
            } else if !CHANNELS.contains(&channels) {
                return Err(format!("--channels {channels}: images have 1, 3 or 4 channels"));
            }
            chans.extend(masks.iter().map(|&mask| [side, channels, mask]));
        }
        Ok([batches, chans])
    }

    /// The 1D part: every variant (tensor cores at both precisions where they take the mask) on each width × length,
    /// in each `--dtype-1d`.
    fn run_1d(&self, run: &mut Run<'_>, twin: Option<&PtxModule>, rng: &mut StdRng) -> BenchResult<Tab> {
        let (t, dtod, skip) = (run.table("1d", ""), run.dtod(512 << 20)?, self.only_2d || self.only_batch);
        let widths = run.pick(self.widths.clone(), vec![3, 7, 15, 31, 63, 127, 255], vec![3, 31]);
        let full = [20, 22, 24, 26, 27, 28].map(|e| 1 << e).to_vec();
        let lengths = run.pick(self.lengths.clone(), full, vec![1 << 20, 1 << 24]);
        let lengths = lengths.into_iter().map(elems).collect::<BenchResult<Vec<_>>>()?;
        let extra = [Conv1dVariant::Tensor, Conv1dVariant::Rows];
        let variants = self.variants.clone().unwrap_or([&Conv1dVariant::ALL[..], &extra].concat());
        if !skip && (widths.is_empty() || lengths.is_empty() || variants.is_empty() || self.dtype_1d.is_empty()) {
            return Err(run.bad_options("no widths, lengths, variants or --dtype-1d to run"));
        }
        let part = Part1d { t, dtod, twin, widths: &widths, lengths: &lengths, variants: &variants };
        for dtype in self.dtype_1d.iter().filter(|_| !skip) {
            // `f32` or `f64`: the only values the option parses.
            match dtype.as_str() {
                "f32" => self.run_1d_of::<f32>(run, &part, rng)?,
                _ => self.run_1d_of::<f64>(run, &part, rng)?,
            }
        }
        Ok(t)
    }

    /// [`Conv::run_1d`] in element type `T`.
    fn run_1d_of<T: ConvElem + Default>(
        &self,
        run: &mut Run<'_>,
        part: &Part1d<'_>,
        rng: &mut StdRng,
    ) -> BenchResult<()> {
        let (n_max, at) = (part.lengths.iter().copied().max().unwrap_or(0), usize::from(self.offset_1d));
        // The views start `at` elements in: the elements before them are input too (random, never read by a view's
        // boundary modes) and output never written.
        let held: Vec<T> = (0..at + n_max).map(|_| T::from_f64(rng.random_range(-1.0f64..1.0))).collect();
        let (input, host) = (run.gpu.upload(&held)?, &held[at..]);
        // SAFETY: every element of the views is written by a kernel (or poisoned) before it is read.
        let mut output = unsafe { run.gpu.alloc_uninit::<T>(at + n_max)? };
        for &w in part.widths {
            let mask: Vec<T> = (0..w).map(|_| T::from_f64(rng.random_range(-1.0f64..1.0))).collect();
            let conv = Conv1d::new(run.gpu, &mask, ConvOp::Correlate, self.mode)?;
            let tf32 = Conv1d::new(run.gpu, &mask, ConvOp::Correlate, self.mode)?.with_precision(Precision::Tf32);
            let tensor = conv.tensor_support();
            if let (Err(why), true) = (&tensor, part.variants.contains(&Conv1dVariant::Tensor)) {
                run.line(format!("{} w = {w}: no tensor-core rows: {why}", T::NAME));
            }
            for &n in part.lengths {
                let (src, mut out, mut timed) = (input.view(at..at + n)?, output.view_mut(at..at + n)?, Vec::new());
                for &v in part.variants.iter().filter(|&&v| v != Conv1dVariant::Tensor || tensor.is_ok()) {
                    for c in [&conv, &tf32].into_iter().take(if v == Conv1dVariant::Tensor { 2 } else { 1 }) {
                        timed.push(measure_1d(run, c, v, (&host[..n], &src, &mut out), part.twin, rng)?);
                    }
                }
                let mut lead = Rec::new().text("dtype", T::NAME).int("w", w).text("n", pow2(n));
                if at > 0 {
                    lead = lead.int("offset", at);
                }
                record(run, part.t, lead, timed, (2 * n * size_of::<T>()) as f64, &part.dtod);
            }
        }
        Ok(())
    }

    /// The 2D part: every variant (tensor cores at both precisions where they take the mask) and the separable
    /// filter on each k × k outer product of two random vectors, then the separable filter alone on wider masks
    /// and on Gaussians (scipy's weights, radius ⌊4σ + 0.5⌋). Every output is checked.
    fn run_2d(&self, run: &mut Run<'_>, twin: Option<&PtxModule>, rng: &mut StdRng) -> BenchResult<Tab> {
        let (t, dtod, skip) = (run.table("2d", ""), run.dtod(512 << 20)?, self.only_1d || self.only_batch);
        let pick = |opt: &Option<_>, full, quick| if skip { vec![] } else { run.pick(opt.clone(), full, quick) };
        let masks = pick(&self.masks_2d, vec![3, 5, 7, 9, 11, 13, 15], vec![3, 5]);
        let separable = pick(&self.separable_2d, vec![17, 21, 25, 31], vec![31]);
        let gaussians = if skip { vec![] } else { run.pick(self.gaussians_2d.clone(), vec![2.0, 5.0], vec![5.0]) };
        let side = run.pick(self.image_2d, 8192, 2048);
        if side == 0 || masks.len() + separable.len() + gaussians.len() == 0 {
            return Ok(t);
        }
        let host: Vec<f32> = (0..side * side).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let (input, mut output) = (run.gpu.upload(&host)?, run.gpu.alloc_zeroed::<f32>(side * side)?);
        let (src, img, op, mode) = (input.as_view(), Image::dense(&host, side, side), ConvOp::Correlate, self.mode);
        let mut axis = |k| (0..k).map(|_| rng.random_range(0.1f32..1.0)).collect::<Vec<f32>>();
        let sized = masks.iter().map(|&k| (k, true)).chain(separable.iter().map(|&k| (k, false)));
        let mut cases: Vec<_> = sized.map(|(k, full)| (k, axis(k), axis(k), full, "separable")).collect();
        for &sigma in &gaussians {
            let g = crate::conv::gaussian::<f32>(sigma)?;
            cases.push((g.len(), g.clone(), g, false, "gaussian"));
        }
        for (k, mx, my, full, sep_name) in cases {
            let mask = outer_product(&mx, &my);
            let conv = Conv2d::new(run.gpu, &mask, k, k, op, mode)?;
            let conv_tf32 = Conv2d::new(run.gpu, &mask, k, k, op, mode)?.with_precision(Precision::Tf32);
            let sep = Separable::new(run.gpu, &mx, &my, op, mode)?;
            let tensors = conv.tensor_support().map(|()| [&conv, &conv_tf32].map(|c| (Conv2dVariant::Tensor, c)));
            if let (Err(why), true) = (&tensors, full) {
                run.line(format!("{k}x{k}: no 2D tensor-core rows: {why}"));
            }
            let fma = Conv2dVariant::ALL.iter().map(|&v| (v, &conv)).chain(tensors.into_iter().flatten());
            let bound = |abs| Precision::tf32_error_bound(k * k, abs);
            let want = if full { conv2d_checked(img, &mask, k, k, op, mode)? } else { vec![] };
            let want_tf32 =
                if full { correlate2d_bounded(img, &mask, (k, k), (k / 2, k / 2), mode, bound)? } else { vec![] };
            let want_sep = separable_checked(img, &mx, &my, op, mode)?;
            let mut timed = Vec::new();
            for kernel in fma.filter(|_| full).map(Some).chain([None]) {
                let (label, want) = match kernel {
                    Some((_, c)) if c.precision() == Precision::Tf32 => (TF32_LABEL, &want_tf32),
                    Some((v, _)) => (v.name(), &want),
                    None => (sep_name, &want_sep),
                };
                let launch = |m: Option<&PtxModule>, out: &mut DeviceViewMut<'_, f32>| {
                    Ok(match kernel {
                        Some((v, c)) => c.run_on(m, v, &src, out, side, side, side)?.kernel.to_string(),
                        None => sep.run_on(m, &src, out, None, side, side, side)?.kernels(),
                    })
                };
                let check = |who: &str, got: Vec<f32>| {
                    let (first, bad) = compare(&got, want).err()?;
                    Some(format!("{who} 2D {label} {k}x{k} on {side}^2: {bad} wrong outputs; first: {first}"))
                };
                let (kernel, stats, cpp) = run.verified(&mut output.as_view_mut(), twin, launch, check)?;
                timed.push(Timed(label, kernel, stats, cpp, None));
            }
            let lead = Rec::new().text("mask", format!("{k}x{k}")).text("image", format!("{side}x{side}"));
            record(run, t, lead, timed, (2 * side * side * 4) as f64, &dtod);
        }
        Ok(t)
    }

    /// Every batched (`batch`) or channels workload in every `--dtype`, each filter a row against the
    /// floor, and their goals; a type the device lacks (bf16 below sm_80) is noted and skipped.
    fn sweep(&self, run: &mut Run<'_>, batch: bool, workloads: &[[usize; 3]]) -> BenchResult<()> {
        let (part, col) = if batch { ("batch", "batch") } else { ("channels", "image, mask") };
        let (t, dtod, mode) = (run.table(part, ""), run.dtod(512 << 20)?, self.mode);
        let mut rng = StdRng::seed_from_u64(self.seed ^ if batch { 0xba7c } else { 0xc4a7 });
        for (dtype, &wl) in self.dtype.iter().flat_map(|d| workloads.iter().map(move |wl| (d, wl))) {
            let measured = match dtype.as_str() {
                "f32" => measure::<f32>(run, batch, wl, mode, &mut rng),
                "f64" => measure::<f64>(run, batch, wl, mode, &mut rng),
                "f16" => measure::<f16>(run, batch, wl, mode, &mut rng),
                "bf16" => measure::<bf16>(run, batch, wl, mode, &mut rng),
                "u8" => measure::<u8>(run, batch, wl, mode, &mut rng),
                "u16" => measure::<u16>(run, batch, wl, mode, &mut rng),
                _ => return Err(run.bad_options(format!("unknown dtype `{dtype}` ({})", DTYPES.join(", ")))),
            };
            if let Err(BenchError::Gpu(e)) = &measured
                && matches!(**e, crate::Error::Unsupported { .. })
            {
                run.line(format!("{part} {dtype} {}: skipped: {e}", label(batch, wl)));
                continue;
            }
            for (kernel, stats, bytes) in measured? {
                // A plain copy of the input's bytes at this size (launch, ramp and tail included, which
                // the 512 MiB floor leaves out); measured once per size.
                let copy = run.dtod((bytes / 2.0) as u64)?.stats.median_ms;
                let (ms, gbps) = (stats.median_ms, harness::gbps(bytes, stats.median_ms));
                let r = Rec::new().text("dtype", dtype).text(col, label(batch, wl)).text("kernel", kernel);
                let r = r.num("ms", ms, 4).num("GB/s", gbps, 0).pct("% of floor", gbps / dtod.gbps);
                let r = r.num("copy ms", copy, 4).pct("copy % of floor", dtod.floor_ms(bytes) / copy);
                run.row(t, r.pct("% of copy", copy / ms).json("workload", wl).json("stats", stats));
            }
        }
        // Each default depthwise workload >= 85% of the floor in f32 and bf16; u8 RGB 4096² 5x5 >= 80%.
        let at: At = |r| (0, format!("{:.4} ms, {}", num(r, "ms"), text(r, "kernel")));
        let batch_goals = ["f32", "bf16"].map(|d| BATCH_DEFAULTS.map(|wl| (d, wl))).concat();
        let goals = if batch { batch_goals } else { vec![("u8", CHANNELS_DEFAULT)] };
        for (dtype, wl) in goals.into_iter().filter(|_| !workloads.is_empty()) {
            let (wl, pct) = (label(batch, wl), if batch { 85 } else { 80 });
            let what = if batch { format!("depthwise {wl} {dtype}") } else { format!("u8 RGB {wl}") };
            let rows = run.rows(t).iter().filter(|r| text(r, "dtype") == dtype && text(r, col) == wl);
            run.goal(best_of(&format!("{what} >= {pct}% of floor"), pct, "% of floor", rows, at));
        }
        Ok(())
    }
}

/// The rate of the probe kernel `name` (8 blocks of 256 threads per SM, 4096 iterations of 8 independent
/// chains), TFLOPS; `None` where the loaded PTX lacks it (below sm_80).
fn peak(run: &Run<'_>, name: &'static str, flops_per_thread_iter: f64) -> BenchResult<Option<f64>> {
    let (gpu, threads, iters, seed) = (run.gpu, 256u32, 4096u32, 0.37f32);
    let grid = gpu.info().sm_count.max(1) * 8;
    let out = gpu.alloc_zeroed::<f32>((grid * threads) as usize)?;
    let (cfg, p) = (LaunchConfig::new(grid, threads), out.device_ptr());
    let args: [&dyn KernelArg; 3] = [&p, &iters, &seed];
    // SAFETY: `out` holds one f32 per launched thread, the kernels' whole contract.
    let st = gpu.param_sizes(name).map(|_| run.measure(|_| Ok(unsafe { gpu.launch(name, &cfg, &args) }?)));
    Ok(st.ok().transpose()?.map(|s| (grid * threads) as f64 * iters as f64 * flops_per_thread_iter / s.median_ms / 1e9))
}

/// What every element type of the 1D part shares: the table, the floor, the twins and the axes.
struct Part1d<'a> {
    t: Tab,
    dtod: DtodReference,
    twin: Option<&'a PtxModule>,
    widths: &'a [usize],
    lengths: &'a [usize],
    variants: &'a [Conv1dVariant],
}

/// One kernel: row label, kernel(s) run, Rust and twin timings, (1D) the lesson's loads per output.
struct Timed(&'static str, String, Stats, Option<Stats>, Option<f64>);

/// Records a case's kernels in table `t`: `lead`'s columns, then each kernel's against the floor of
/// `bytes` and the `basic` row's time (1D rows, those with a model, keep the kernel in the JSON alone).
fn record(run: &mut Run<'_>, t: Tab, lead: Rec, timed: Vec<Timed>, bytes: f64, dtod: &DtodReference) {
    let basic = timed.iter().find(|m| m.0 == "basic").map(|m| m.2.median_ms);
    for Timed(label, kernel, stats, twin, model) in timed {
        let (ms, cpp, r) = (stats.median_ms, twin.map(|s| s.median_ms), lead.clone().text("variant", label));
        let r = if model.is_some() { r.json("kernel", &kernel) } else { r.text("kernel", &kernel) };
        let r = r.num("median ms", ms, 4).num("GB/s", harness::gbps(bytes, ms), 0);
        let r = r.pct("% floor", dtod.floor_ms(bytes) / ms).times("vs basic", basic.map(|b| b / ms));
        let r = if let Some(x) = model { r.num("model loads/out", x, 3) } else { r };
        let r = r.num("C++ ms", cpp, 4).num("Rust/C++", cpp.map(|c| ms / c), 3);
        run.row(t, r.json("stats", stats).json("twin", twin));
    }
}

/// `conv`'s kernel `v` (and its twin where `twin` has it) on a prefix of the input: no poison may be left, and the
/// edges and 2000 random outputs must meet the f64 reference within the bound of the convolution's precision.
fn measure_1d<T: ConvElem + Default>(
    run: &Run<'_>,
    conv: &Conv1d<T>,
    v: Conv1dVariant,
    (host, src, out): (&[T], &DeviceView<'_, T>, &mut DeviceViewMut<'_, T>),
    twin: Option<&PtxModule>,
    rng: &mut StdRng,
) -> BenchResult<Timed> {
    // Planned as `run` plans it: `Auto` looks at the views' addresses (--offset-1d).
    let aligned = crate::conv::rows_vector_views(src, out);
    let (n, w, left, plan) = (host.len(), conv.width(), conv.left(), conv.plan_views(v, host.len(), aligned)?);
    let (lg, rg) = ghosts(host, left, w - 1 - left, conv.mode());
    // Position `p` of the input extended by `left` ghost cells.
    let at =
        |p: usize| if p < left { lg[left - 1 - p] } else { *host.get(p - left).unwrap_or_else(|| &rg[p - left - n]) };
    let gamma = (w as f64 + 2.0) * T::UNIT_ROUNDOFF;
    let bound = |a: f64| match conv.precision() {
        Precision::Tf32 => Precision::tf32_error_bound(w, a),
        Precision::F32 => gamma * a + w as f64 * T::MIN_NORMAL,
    };
    let terms = |i: usize| conv.taps().iter().enumerate().map(move |(j, &m)| at(i + j).to_f64() * m.to_f64());
    let want = |i: usize| Checked { value: terms(i).sum(), bound: bound(terms(i).map(f64::abs).sum()) };
    let check = |who: &str, got: Vec<T>| {
        let what = format!("{who} {} {} w={w} n={n}", T::NAME, v.name());
        if let Some(i) = got.iter().position(|x| bytemuck::bytes_of(x).iter().all(|&b| b == POISON)) {
            return Some(format!("{what}: output {i} never written"));
        }
        let mut idx: Vec<usize> = (0..(2 * w).min(n)).chain(n.saturating_sub(2 * w)..n).collect();
        idx.extend((0..if n > 0 { 2000 } else { 0 }).map(|_| rng.random_range(0..n)));
        let (i, c) = idx.into_iter().map(|i| (i, want(i))).find(|(i, c)| !matches(got[*i], c))?;
        Some(format!("{what}: output {i} = {:e}, reference {:e} ± {:e}", got[i].to_f64(), c.value, c.bound))
    };
    let launch = |m: Option<&PtxModule>, out: &mut DeviceViewMut<'_, T>| Ok(conv.run_on(m, v, src, out)?.kernel);
    let label = if conv.precision() == Precision::Tf32 { TF32_LABEL } else { plan.variant.name() };
    let twin = twin.filter(|m| n > 0 && m.param_sizes(plan.kernel).is_ok());
    let (kernel, stats, twin) = run.verified(out, twin, launch, check)?;
    Ok(Timed(label, kernel, stats, twin, Some(plan.variant.model_loads_per_output(w, THREADS_1D as usize))))
}

/// The number in `r`'s column `col` (NaN without one).
fn num(r: &Rec, col: &str) -> f64 {
    r.get(col).unwrap_or(f64::NAN)
}

/// The text in `r`'s column `col` (empty without one).
fn text<'a>(r: &'a Rec, col: &str) -> &'a str {
    r.get_text(col).unwrap_or("")
}

/// The size in `r`'s text column `col`: `2^k`, a number, or `k` of `kxk`.
fn size(r: &Rec, col: &str) -> usize {
    text(r, col).split('x').next().and_then(|s| parse_elems(s).ok()).map_or(0, |s| s as usize)
}

/// Where a row is: its group's key and its place.
type At = fn(&Rec) -> (usize, String);

/// The goal `goal`: over the groups of `rows` with the same key, the lowest of each group's best `col` >= `pct`%.
fn best_of<'a>(goal: &str, pct: u32, col: &str, rows: impl Iterator<Item = &'a Rec>, at: At) -> Goal {
    let mut best: Vec<(usize, f64, String)> = rows.map(|r| (at(r).0, num(r, col), at(r).1)).collect();
    best.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    best.dedup_by_key(|b| b.0);
    let target = f64::from(pct) / 100.0;
    Goal::worst(goal, best.into_iter().map(|b| (b.1, b.2)), target, true, Fmt::Pct(1), "not run")
}

/// The goal `goal`: every (Rust/C++, where) case at most 1.05.
fn twin_goal(goal: &str, cases: impl Iterator<Item = (f64, String)>) -> Goal {
    let cases: Vec<(f64, String)> = cases.collect();
    let (over, all) = (cases.iter().filter(|c| c.0 > 1.05).count(), cases.len());
    let mut g = Goal::worst(goal, cases, 1.05, false, Fmt::Times(3), "no twin timings (nvcc missing?)");
    if all > 0 {
        g.detail += &format!("; {over} of {all} rows above");
    }
    g
}

/// The goals of the 1D table (`f32`-accurate kernels on `f32` data at n = 2^27; twins at n ≥ 2^24) and of the 2D one
/// (on 8192²; twins on every image).
fn goals_1d_2d(d1: &[Rec], d2: &[Rec]) -> Vec<Goal> {
    let at: At = |r| (num(r, "w") as usize, format!("w = {} ({})", num(r, "w"), text(r, "variant")));
    let at27 = d1.iter().filter(|r| text(r, "dtype") == "f32" && size(r, "n") == 1 << 27);
    let at27 = at27.filter(|r| text(r, "variant") != TF32_LABEL);
    let mut goals = Vec::new();
    for (what, w, pct) in [("widths <= 31", 0..=31, 85), ("every w <= 127", 0..=127, 85), ("w = 255", 255..=255, 70)] {
        let acc = if *w.end() == 31 { "" } else { "f32-accurate " };
        let goal = format!("best {acc}1D >= {pct}% of the DRAM floor at n = 2^27 for {what}");
        goals.push(best_of(&goal, pct, "% floor", at27.clone().filter(|r| w.contains(&(num(r, "w") as usize))), at));
    }
    let cases = d1.iter().filter(|r| size(r, "n") >= 1 << 24);
    let cases = cases.filter_map(|r| Some((r.get("Rust/C++")?, format!("{} n = {}", at(r).1, text(r, "n")))));
    goals.push(twin_goal("every Rust kernel <= 1.05x its C++ twin's time (n >= 2^24)", cases));

    let at: At = |r| (size(r, "mask"), format!("{} {}", text(r, "mask"), text(r, "variant")));
    let big = d2.iter().filter(|r| text(r, "image") == "8192x8192");
    let sep = big.clone().filter(|r| text(r, "variant") == "separable" && size(r, "mask") <= 31);
    goals.push(best_of("separable >= 80% of the floor for widths <= 31 on 8192^2", 80, "% floor", sep, at));
    let g5 = big.clone().find(|r| text(r, "variant") == "gaussian" && size(r, "mask") == 41);
    let (g5, cupy) = (g5.map(|r| num(r, "median ms")), |ms| format!("{ms:.4} ms, {:.1}x faster than CuPy", 9.07 / ms));
    let detail = g5.map_or("sigma = 5 on 8192^2 not run".into(), cupy);
    let goal = "gaussian sigma = 5 on 8192^2 <= 0.454 ms (1/20 of CuPy's 9.07 ms)";
    goals.push(Goal::new(goal, g5.map(|ms| ms <= 9.07 / 20.0), detail));
    // The general-mask kernels: the separable filter and TF32 aside.
    let general = |r: &&Rec| !matches!(text(r, "variant"), "separable" | "gaussian" | TF32_LABEL);
    for (max, pct) in [(9, 80), (15, 65)] {
        let goal =
            format!("best f32-accurate general 2D >= {pct}% of the DRAM floor for every odd k <= {max} on 8192^2");
        goals.push(best_of(&goal, pct, "% floor", big.clone().filter(general).filter(|r| size(r, "mask") <= max), at));
    }
    let five = big.filter(|r| size(r, "mask") == 5);
    goals.push(best_of("best 2D >= 80% of the DRAM floor for 5x5 on 8192^2", 80, "% floor", five, at));
    let cases = d2.iter().filter_map(|r| Some((r.get("Rust/C++")?, at(r).1)));
    goals.push(twin_goal("every Rust 2D kernel <= 1.05x its C++ twin's time", cases));
    goals
}

/// Per filter of a workload: kernel, timing, bytes read + written.
type Filtered = BenchResult<Vec<(String, Stats, f64)>>;

/// One workload in type `S` (random integers over the type's range, or floats in ±4), each filter verified, then
/// timed. Batched (`[rows, len, w]`, a random mask per row): the first, last and three random rows checked, as
/// `Filter1d` runs it, then (when that was the tensor-core form) on the FMA kernel too. Channels
/// (`[side, channels, mask]`, a box): as `Filter2d::new` runs it (separable when the box factors, which it does for
/// every type but `f64`), then (a `u8` box on the register-blocked kernels' box form) on their multiply-add form,
/// then on the general kernel, every output checked.
fn measure<S: Sample>(run: &Run<'_>, batch: bool, wl: [usize; 3], mode: Boundary, rng: &mut StdRng) -> Filtered {
    let (name, label, [a, b, c], op) = (S::NAME, label(batch, wl), wl, ConvOp::Correlate);
    let total = [a, b, if batch { 1 } else { a }].into_iter().try_fold(1usize, usize::checked_mul);
    let total = total.ok_or_else(|| run.bad_options(format!("{label}: too large")))?;
    let masks: Vec<S::Acc> = match batch {
        true => (0..a * c).map(|_| S::Acc::from_f64(rng.random_range(-0.2f64..0.2))).collect(),
        false => vec![S::Acc::from_f64(1.0 / (c * c) as f64); c * c],
    };
    let max = [("u8", 255u32), ("u16", 65535)].into_iter().find(|m| m.0 == name).map_or(0, |m| m.1);
    let mut value = || if max > 0 { rng.random_range(0..=max) as f64 } else { rng.random_range(-4.0f64..4.0) };
    let host: Vec<S> = (0..total).map(|_| S::from_f64(value())).collect();
    let (input, mut output) = (run.gpu.upload(&host)?, run.gpu.alloc_zeroed::<S>(total)?);
    let (src, bytes) = (input.as_view(), (2 * total * size_of::<S>()) as f64);
    let values: Vec<f64> = host.iter().map(|v| v.to_f64()).collect();
    if batch {
        let (filter, shape) = (Filter1d::<S>::depthwise(run.gpu, &masks, c, op, mode)?, Shape::new(a, b));
        let taps: Vec<f64> = filter.taps().iter().map(|t| t.to_f64()).collect();
        let picks: Vec<usize> = (0..3).map(|_| rng.random_range(0..a)).collect();
        let want = |r: usize| -> BenchResult<_> {
            let (line, mask) = (&values[r * b..(r + 1) * b], &taps[r * c..(r + 1) * c]);
            Ok((r, filter1d::<S::Acc>(line, Shape::signal(b), Axis::Rows, mask, c, filter.left(), mode, 0.0)?))
        };
        let rows = [0, a - 1].into_iter().chain(picks).map(want).collect::<BenchResult<Vec<_>>>()?;
        let check = |_: &str, got: Vec<S>| {
            rows.iter().find_map(|(r, want)| {
                let (i, g, w) = first_mismatch(&got[r * b..(r + 1) * b], want)?;
                Some(format!("batch {name} {label}: row {r}, sample {i}: got {g}, want {} ± {}", w.value, w.bound))
            })
        };
        // The tensor-core form, when it runs, and the FMA kernel beside it.
        let fma = filter.plan(shape)?.tensor.then(|| filter.clone().with_tensor_cores(false));
        let filters = std::iter::once(&filter).chain(&fma).map(|f| {
            let launch = |_: Option<&PtxModule>, o: &mut DeviceViewMut<'_, S>| Ok(f.run(&src, o, shape)?.kernel);
            run.verified(&mut output.as_view_mut(), None, launch, check)
                .map(|(kernel, stats, _)| (kernel, stats, bytes))
        });
        return filters.collect();
    }
    let (filter, img) = (Filter2d::<S>::new(run.gpu, &masks, c, c, op, mode)?, channels::Image::new(a, a, b)?);
    let taps: Vec<f64> = filter.taps().iter().map(|t| t.to_f64()).collect();
    let want = filter2d::<S::Acc>(&values, img, &taps, (c, c), filter.left(), mode, 0.0)?;
    // The general kernel beside a separable one, and a box's multiply-add
    // form beside its box form (and the register-blocked box form beside
    // the box rows kernel).
    let plan = filter.plan(img)?;
    let general = plan.separable().then(|| filter.clone().with_separable(false));
    let boxed = plan.kernel.starts_with("conv2d_sepb") || plan.kernel.starts_with("conv2d_boxr");
    let sums = plan.kernel.starts_with("conv2d_boxr").then(|| filter.clone().with_box_rows(false));
    let multiply = boxed.then(|| filter.clone().with_box_sums(false));
    let check = |_: &str, got: Vec<S>| {
        let (i, g, w) = first_mismatch(&got, &want)?;
        let (y, x, ch, v, e) = (i / (a * b), (i % (a * b)) / b, i % b, w.value, w.bound);
        Some(format!("channels {name} {label}: pixel ({y}, {x}) channel {ch}: got {g}, want {v} ± {e}"))
    };
    let filters = std::iter::once(&filter).chain(&sums).chain(&multiply).chain(&general).map(|f| {
        let launch = |_: Option<&PtxModule>, o: &mut DeviceViewMut<'_, S>| Ok(f.run(&src, o, img)?.kernel);
        run.verified(&mut output.as_view_mut(), None, launch, check).map(|(kernel, stats, _)| (kernel, stats, bytes))
    });
    filters.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::run::parse;

    #[test]
    fn options_and_workloads_parse() {
        assert_eq!([parse_batch("64x2^21@31"), parse_batch("1024x131072@7")], BATCH_DEFAULTS.map(Ok));
        assert!(["64x2^21", "0x5@3", "3x2^99@3", "3x@3"].iter().all(|s| parse_batch(s).is_err()));
        assert_eq!(label(true, BATCH_DEFAULTS[0]) + " " + &label(false, [64, 4, 3]), "64x2^21 w=31 64x64x4 3x3");
        let c: Conv = parse(&["--batch", "default,8x2^10@5", "--channels", "1,4", "--channel-masks", "3,7"]).unwrap();
        let [b, ch] = c.workloads().unwrap();
        assert_eq!((b.len(), b[2], ch.len(), ch[3]), (3, [8, 1024, 5], 4, [4096, 4, 7]));
        let only = parse::<Conv>(&["--only-batch"]).unwrap().workloads();
        assert_eq!(only, Ok([BATCH_DEFAULTS.to_vec(), vec![CHANNELS_DEFAULT]]));
        for bad in ["--batch=default --dtype=i8", "--channels=2", "--channels=3 --channel-side=0"] {
            assert!(parse::<Conv>(&bad.split(' ').collect::<Vec<_>>()).unwrap().workloads().is_err(), "{bad}");
        }
        let c: Conv = parse(&["--quick", "--lengths=2^10,3000", "--mode=wrap", "--variants=fast,tensor"]).unwrap();
        assert_eq!((c.lengths, c.mode, c.seed, c.common.quick), (Some(vec![1024, 3000]), Boundary::Wrap, 2026, true));
        let want = (Some(vec![Conv1dVariant::Fast, Conv1dVariant::Tensor]), "f32,bf16".to_string());
        assert_eq!((c.variants, c.dtype.join(","), c.dtype_1d.join(",")), (want.0, want.1, "f32".to_string()));
        assert_eq!(parse::<Conv>(&["--dtype-1d=f64,f32"]).unwrap().dtype_1d, ["f64", "f32"]);
        assert_eq!((c.offset_1d, parse::<Conv>(&["--offset-1d=3"]).unwrap().offset_1d), (0, 3));
        let bad = ["--only-1d --only-2d", "--only-batch --only-2d", "--mode=x", "--variants=y", "--dtype-1d=f16"];
        for bad in bad.into_iter().chain(["--dtype-1d=f32,bf16", "--dtype-1d=", "--offset-1d=-1", "--offset-1d=65536"])
        {
            assert!(parse::<Conv>(&bad.split(' ').collect::<Vec<_>>()).is_err(), "{bad}");
        }
    }
}
