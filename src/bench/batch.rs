//! The `conv` suite's batched part (`--batch`, `--dtype`): depthwise 1D
//! filters over the rows of a `rows × len` array (one mask per row, as
//! torch's depthwise `conv1d` and scipy's `correlate1d(…, axis=-1)` run
//! them), per storage type, timed against the DRAM floor of the same run.
//!
//! * **Floor**: input read once and output written once (`2 · rows · len ·
//!   size` bytes) at the `cuMemcpyDtoD` bandwidth.
//! * **Verification**: before timing, the first and last rows and three
//!   random ones are checked in full against the rayon reference through
//!   the output rule, and every output for leftover poison.
//!
//! The channels part (`--channels`) runs the 2D filter over square images
//! of interleaved channels (`conv::channels::Filter2d`), a box mask, per
//! storage type: torch's `u8` RGB 5×5 box (to f32 and back) is its peer.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::conv::{POISON, Verdict};
use super::harness::{self, DtodReference, Settings, Stats};
use super::report::Table;
use super::{BenchError, BenchResult};
use crate::Gpu;
use crate::conv::batch::{Axis, Filter1d, Sample, Shape};
use crate::conv::channels::{Filter2d, Image};
use crate::conv::reference_batch::{filter1d, filter2d, first_mismatch};
use crate::conv::{Boundary, ConvElem, ConvOp};
use crate::half::{bf16, f16};

/// Goal: a depthwise workload's share of the floor.
pub const GOAL_BATCH: f64 = 0.85;
/// Goal: the `u8` RGB 4096² 5×5 filter's share of the floor.
pub const GOAL_CHANNELS: f64 = 0.80;

/// One batched workload: `rows` signals of `len` samples, `w`-tap masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Workload {
    /// Signals (rows).
    pub rows: usize,
    /// Samples per signal.
    pub len: usize,
    /// Mask width.
    pub w: usize,
}

impl Workload {
    /// The workloads: torch depthwise conv1d 64 × 2^21 at w = 31
    /// and 1024 × 2^17 at w = 7.
    pub const DEFAULTS: [Workload; 2] =
        [Workload { rows: 64, len: 1 << 21, w: 31 }, Workload { rows: 1024, len: 1 << 17, w: 7 }];

    /// Parses `ROWSxLEN@W` (numbers or `2^k`).
    pub fn parse(s: &str) -> Result<Workload, String> {
        let num = |t: &str| -> Result<usize, String> {
            match t.split_once('^') {
                Some(("2", k)) => k.parse::<u32>().ok().and_then(|k| 1usize.checked_shl(k)),
                _ => t.parse().ok(),
            }
            .ok_or_else(|| format!("`{t}` in batch `{s}` is not a number or 2^k"))
        };
        let (shape, w) = s.split_once('@').ok_or_else(|| format!("batch `{s}` is not ROWSxLEN@W"))?;
        let (rows, len) = shape.split_once('x').ok_or_else(|| format!("batch `{s}` is not ROWSxLEN@W"))?;
        let wl = Workload { rows: num(rows)?, len: num(len)?, w: num(w)? };
        if wl.rows == 0 || wl.len == 0 || wl.w == 0 {
            return Err(format!("batch `{s}` has a zero dimension"));
        }
        Ok(wl)
    }

    fn label(&self) -> String {
        let len =
            if self.len.is_power_of_two() { format!("2^{}", self.len.trailing_zeros()) } else { self.len.to_string() };
        format!("{}x{len} w={}", self.rows, self.w)
    }
}

/// The storage types `--dtype` names.
pub const DTYPES: [&str; 6] = ["f32", "f64", "f16", "bf16", "u8", "u16"];

/// One measured workload (`W`: [`Workload`] or [`ChannelWorkload`]).
#[derive(Clone, Debug, Serialize)]
pub struct Row<W> {
    /// Storage type.
    pub dtype: &'static str,
    /// The workload.
    pub workload: W,
    /// The kernel that ran.
    pub kernel: &'static str,
    /// Timing.
    pub stats: Stats,
    /// GB/s (bytes read + written).
    pub gbps: f64,
    /// Floor time / kernel time.
    pub of_floor: f64,
}

/// One measured batched workload.
pub type RowBatch = Row<Workload>;
/// One measured channels workload.
pub type RowChannels = Row<ChannelWorkload>;

/// The rows as a table (`what`: the workload column's title).
fn table<W>(rows: &[Row<W>], what: &str, label: impl Fn(&W) -> String) -> Table {
    let mut t = Table::new(["dtype", what, "kernel", "ms", "GB/s", "% of floor"]);
    for r in rows {
        t.row([
            r.dtype.to_string(),
            label(&r.workload),
            r.kernel.to_string(),
            format!("{:.4}", r.stats.median_ms),
            format!("{:.0}", r.gbps),
            format!("{:.1}%", r.of_floor * 100.0),
        ]);
    }
    t
}

/// Runs every workload for every type; a type the device lacks (bf16
/// below sm_80) is reported and skipped.
pub fn run(
    gpu: &Gpu,
    workloads: &[Workload],
    dtypes: &[String],
    mode: Boundary,
    dtod: &DtodReference,
    settings: &Settings,
    seed: u64,
) -> BenchResult<Vec<RowBatch>> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xba7c);
    let rows = sweep(dtypes, workloads, "batch", Workload::label, |dtype, wl| {
        let ctx = Ctx { gpu, wl, mode, dtod, settings };
        by_dtype!(dtype, measure_batch(&ctx, &mut rng))
    })?;
    if !rows.is_empty() {
        println!("{}", table(&rows, "batch", Workload::label).render());
    }
    Ok(rows)
}

struct Ctx<'a> {
    gpu: &'a Gpu,
    wl: Workload,
    mode: Boundary,
    dtod: &'a DtodReference,
    settings: &'a Settings,
}

/// Calls `f::<S>(args)` for the storage type `S` named `dtype`; `None`
/// for a name that is not one.
macro_rules! by_dtype {
    ($dtype:expr, $f:ident($($arg:expr),*)) => {
        match $dtype {
            "f32" => Some($f::<f32>($($arg),*)),
            "f64" => Some($f::<f64>($($arg),*)),
            "f16" => Some($f::<f16>($($arg),*)),
            "bf16" => Some($f::<bf16>($($arg),*)),
            "u8" => Some($f::<u8>($($arg),*)),
            "u16" => Some($f::<u16>($($arg),*)),
            _ => None,
        }
    };
}
use by_dtype;

/// Every workload for every type through `measure` (`None`: an unknown
/// type); a type the device lacks is reported and skipped.
fn sweep<W: Copy, R>(
    dtypes: &[String],
    workloads: &[W],
    part: &str,
    label: impl Fn(&W) -> String,
    mut measure: impl FnMut(&str, W) -> Option<BenchResult<R>>,
) -> BenchResult<Vec<R>> {
    let mut rows = Vec::new();
    for dtype in dtypes {
        for &wl in workloads {
            match measure(dtype, wl) {
                None => return Err(BenchError::Options(format!("unknown dtype `{dtype}` ({})", DTYPES.join(", ")))),
                Some(Ok(r)) => rows.push(r),
                Some(Err(BenchError::Gpu(e))) if matches!(*e, crate::Error::Unsupported { .. }) => {
                    println!("conv: {part} {dtype} {}: skipped: {e}", label(&wl));
                }
                Some(Err(e)) => return Err(e),
            }
        }
    }
    Ok(rows)
}

/// `total` random values of `S` (integers over the type's range, floats
/// in ±4), on the device, and a poisoned output buffer as long.
fn buffers<S: Sample>(
    gpu: &Gpu,
    total: usize,
    rng: &mut StdRng,
) -> BenchResult<(Vec<S>, crate::DeviceBuffer<S>, crate::DeviceBuffer<S>)> {
    let host: Vec<S> = (0..total)
        .map(|_| match S::NAME {
            "u8" => S::from_f64(rng.random_range(0..=255u32) as f64),
            "u16" => S::from_f64(rng.random_range(0..=65535u32) as f64),
            _ => S::from_f64(rng.random_range(-4.0f64..4.0)),
        })
        .collect();
    let input = gpu.upload(&host)?;
    let mut output = gpu.alloc_zeroed::<S>(total)?;
    output.fill_bytes(POISON)?;
    Ok((host, input, output))
}

/// One depthwise workload in type `S`.
fn measure_batch<S: Sample>(ctx: &Ctx, rng: &mut StdRng) -> BenchResult<RowBatch> {
    let Workload { rows, len, w } = ctx.wl;
    let gpu = ctx.gpu;
    let total = rows.checked_mul(len).ok_or_else(|| BenchError::Options("batch too large".into()))?;
    let masks: Vec<S::Acc> = (0..rows * w).map(|_| S::Acc::from_f64(rng.random_range(-0.2f64..0.2))).collect();
    let filter = Filter1d::<S>::depthwise(gpu, &masks, w, ConvOp::Correlate, ctx.mode)?;
    let shape = Shape::new(rows, len);
    filter.plan(shape)?;
    let (host, input, mut output) = buffers::<S>(gpu, total, rng)?;
    let plan = filter.run(&input.as_view(), &mut output.as_view_mut(), shape)?;
    let got = output.to_vec()?;
    let mut check = vec![0, rows - 1];
    check.extend((0..3).map(|_| rng.random_range(0..rows)));
    let taps: Vec<f64> = filter.taps().iter().map(|t| t.to_f64()).collect();
    for r in check {
        let line: Vec<f64> = host[r * len..(r + 1) * len].iter().map(|v| v.to_f64()).collect();
        let want = filter1d::<S::Acc>(
            &line,
            Shape::signal(len),
            Axis::Rows,
            &taps[r * w..(r + 1) * w],
            w,
            filter.left(),
            ctx.mode,
            0.0,
        )?;
        if let Some((i, g, c)) = first_mismatch(&got[r * len..(r + 1) * len], &want) {
            return Err(BenchError::Verification {
                suite: "conv",
                message: format!(
                    "batch {} {}: row {r}, sample {i}: got {g}, want {} ± {}",
                    S::NAME,
                    ctx.wl.label(),
                    c.value,
                    c.bound
                ),
            });
        }
    }
    let bytes = (2 * total * std::mem::size_of::<S>()) as f64;
    let stats = harness::measure(gpu, ctx.settings, |_| {
        filter.run(&input.as_view(), &mut output.as_view_mut(), shape).map(|_| ())
    })?;
    let gbps = harness::gbps(bytes, stats.median_ms);
    Ok(RowBatch { dtype: S::NAME, workload: ctx.wl, kernel: plan.kernel, stats, gbps, of_floor: gbps / ctx.dtod.gbps })
}

/// The goal verdicts: each default workload ≥ [`GOAL_BATCH`] of the floor
/// in f32 and in bf16.
pub fn goals(rows: &[RowBatch]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for dtype in ["f32", "bf16"] {
        for wl in Workload::DEFAULTS {
            let goal = format!("depthwise {} {dtype} >= {:.0}% of floor", wl.label(), GOAL_BATCH * 100.0);
            let verdict = match rows.iter().find(|r| r.dtype == dtype && r.workload == wl) {
                Some(r) => Verdict {
                    goal,
                    status: if r.of_floor >= GOAL_BATCH { "MET" } else { "NOT MET" },
                    detail: format!("{:.1}% ({:.4} ms, {})", r.of_floor * 100.0, r.stats.median_ms, r.kernel),
                },
                None => Verdict { goal, status: "NOT EVALUATED", detail: "not run".into() },
            };
            out.push(verdict);
        }
    }
    out
}

/// One 2D channels workload: a `side × side` image of `channels`
/// interleaved channels, a `mask × mask` box.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ChannelWorkload {
    /// Image side, pixels.
    pub side: usize,
    /// Interleaved channels (1, 3 or 4).
    pub channels: usize,
    /// Mask side.
    pub mask: usize,
}

impl ChannelWorkload {
    /// The workload: `u8` RGB 4096², 5×5.
    pub const DEFAULT: ChannelWorkload = ChannelWorkload { side: 4096, channels: 3, mask: 5 };

    fn label(&self) -> String {
        format!("{0}x{0}x{1} {2}x{2}", self.side, self.channels, self.mask)
    }
}

/// Runs every channels workload for every type (bf16 skipped below sm_80).
pub fn run_channels(
    gpu: &Gpu,
    workloads: &[ChannelWorkload],
    dtypes: &[String],
    mode: Boundary,
    dtod: &DtodReference,
    settings: &Settings,
    seed: u64,
) -> BenchResult<Vec<RowChannels>> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xc4a7);
    let rows: Vec<RowChannels> = sweep(dtypes, workloads, "channels", ChannelWorkload::label, |dtype, wl| {
        by_dtype!(dtype, measure_channels(gpu, wl, mode, dtod, settings, &mut rng))
    })?
    .into_iter()
    .flatten()
    .collect();
    if !rows.is_empty() {
        println!("{}", table(&rows, "image, mask", ChannelWorkload::label).render());
    }
    Ok(rows)
}

/// The box filter of `wl` as `Filter2d::new` runs it (on the separable
/// kernels when the box factors, which it does for every type but `f64`),
/// then, when that was the separable kernel, on the general kernel too.
fn measure_channels<S: Sample>(
    gpu: &Gpu,
    wl: ChannelWorkload,
    mode: Boundary,
    dtod: &DtodReference,
    settings: &Settings,
    rng: &mut StdRng,
) -> BenchResult<Vec<RowChannels>> {
    let ChannelWorkload { side, channels, mask } = wl;
    let taps = vec![S::Acc::from_f64(1.0 / (mask * mask) as f64); mask * mask];
    let filter = Filter2d::<S>::new(gpu, &taps, mask, mask, ConvOp::Correlate, mode)?;
    let img = Image::new(side, side, channels)?;
    let total = side * side * channels;
    let (host, input, mut output) = buffers::<S>(gpu, total, rng)?;
    let mut rows = vec![measure_filter(&filter, wl, img, (&host, &input, &mut output), dtod, settings)?];
    if filter.plan(img)?.separable() {
        let general = filter.clone().with_separable(false);
        rows.push(measure_filter(&general, wl, img, (&host, &input, &mut output), dtod, settings)?);
    }
    Ok(rows)
}

type Buffers<'a, S> = (&'a [S], &'a crate::DeviceBuffer<S>, &'a mut crate::DeviceBuffer<S>);

/// One channels filter on `img`: checked against the reference, then
/// timed.
fn measure_filter<S: Sample>(
    filter: &Filter2d<S>,
    wl: ChannelWorkload,
    img: Image,
    (host, input, output): Buffers<'_, S>,
    dtod: &DtodReference,
    settings: &Settings,
) -> BenchResult<RowChannels> {
    let ChannelWorkload { side, channels, mask } = wl;
    let (gpu, mode) = (filter.gpu(), filter.mode());
    let total = side * side * channels;
    output.fill_bytes(0xA5)?;
    let plan = filter.run(&input.as_view(), &mut output.as_view_mut(), img)?;
    let got = output.to_vec()?;
    let values: Vec<f64> = host.iter().map(|v| v.to_f64()).collect();
    let want = filter2d::<S::Acc>(
        &values,
        img,
        &filter.taps().iter().map(|t| t.to_f64()).collect::<Vec<_>>(),
        (mask, mask),
        filter.left(),
        mode,
        0.0,
    )?;
    if let Some((i, g, c)) = first_mismatch(&got, &want) {
        let row = side * channels;
        return Err(BenchError::Verification {
            suite: "conv",
            message: format!(
                "channels {} {}: pixel ({}, {}) channel {}: got {g}, want {} ± {}",
                S::NAME,
                wl.label(),
                i / row,
                (i % row) / channels,
                i % channels,
                c.value,
                c.bound
            ),
        });
    }
    let bytes = (2 * total * std::mem::size_of::<S>()) as f64;
    let stats =
        harness::measure(gpu, settings, |_| filter.run(&input.as_view(), &mut output.as_view_mut(), img).map(|_| ()))?;
    let gbps = harness::gbps(bytes, stats.median_ms);
    Ok(RowChannels { dtype: S::NAME, workload: wl, kernel: plan.kernel, stats, gbps, of_floor: gbps / dtod.gbps })
}

/// The goal verdict: `u8` RGB 4096² 5×5 ≥ [`GOAL_CHANNELS`] of the floor.
pub fn goals_channels(rows: &[RowChannels]) -> Vec<Verdict> {
    let wl = ChannelWorkload::DEFAULT;
    let goal = format!("u8 RGB {} >= {:.0}% of floor", wl.label(), GOAL_CHANNELS * 100.0);
    vec![match rows.iter().find(|r| r.dtype == "u8" && r.workload == wl) {
        Some(r) => Verdict {
            goal,
            status: if r.of_floor >= GOAL_CHANNELS { "MET" } else { "NOT MET" },
            detail: format!("{:.1}% ({:.4} ms, {})", r.of_floor * 100.0, r.stats.median_ms, r.kernel),
        },
        None => Verdict { goal, status: "NOT EVALUATED", detail: "not run".into() },
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse() {
        assert_eq!(Workload::parse("64x2^21@31"), Ok(Workload::DEFAULTS[0]));
        assert_eq!(Workload::parse("1024x131072@7"), Ok(Workload::DEFAULTS[1]));
        assert!(Workload::parse("64x2^21").is_err());
        assert!(Workload::parse("0x5@3").is_err());
        assert!(Workload::parse("3x2^99@3").is_err());
    }
}
