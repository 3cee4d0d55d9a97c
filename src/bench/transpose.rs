//! The `transpose` suite (lesson 004, "shared memory": banks): `f32`
//! matrix transpose, naive against a `32 × 32` shared tile (bank
//! conflicts) against a padded `32 × 33` tile (none), next to the copy
//! suite's `vec4` kernel and `cuMemcpyDtoD` on the same bytes.
//!
//! * **Shapes** (default 16384², 8192 × 32768, 32768 × 8192 and
//!   16383 × 16385, 1 GiB each): every variant at every block height
//!   (`32 × 4`, `32 × 8`, `32 × 16`, `32 × 32`), so the table shows which
//!   block is fastest.
//! * **Size sweep** (default squares 512² … 8192², plus the square shapes
//!   above): every variant at the classic `32 × 8` block; plotted as GB/s
//!   against the matrix size (`transpose.svg`).
//!
//! Per shape, the same buffers serve every measurement: `pairs` input /
//! output pairs ([`copy::Pool`], so consecutive launches touch ≥ 3× the L2
//! between them; a shape whose pool stays under 2× L2 is marked
//! L2-resident). The references on those bytes: the copy suite's tuned
//! `vec4` kernel ([`Gpu::copy_with`] with [`CopyPolicy::TUNED`], input →
//! output as one flat copy) and `cuMemcpyDtoDAsync`. A transpose reads and
//! writes every byte once, exactly like a copy, so:
//!
//! * `% of vec4` = kernel GB/s / vec4 GB/s;
//! * `% of floor` = the DRAM floor (the bytes at the DtoD bandwidth of the
//!   same run) / kernel time = kernel GB/s / DtoD GB/s.
//!
//! The goal: the padded transpose at the classic block at ≥ 85% of the
//! vec4 copy at 16384².
//!
//! Every measurement is verified: the output of pair 0 is poisoned, the
//! kernel runs once more, and the result is compared with the rayon
//! reference transpose (the copies with the input). A mismatch stops the
//! suite.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::copy::{self, DeviceSummary, Pool};
use super::harness::{self, DtodReference, Settings, Stats};
use super::report::{self, Series, Table, human_bytes};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::transpose::reference_transpose;
use crate::{CopyPolicy, CopyVariant, DeviceBuffer, Gpu, TransposePolicy, TransposeVariant};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "transpose",
    about: "f32 transpose: naive / 32x32 shared tile / padded 32x33 tile vs the vec4 copy and cuMemcpyDtoD",
};

/// The goal: padded transpose GB/s at least this fraction of vec4 copy's.
pub const GOAL_RATIO: f64 = 0.85;

/// The square side the goal applies to.
pub const GOAL_SIDE: usize = 16_384;

/// The byte outputs are poisoned with before a verification launch.
pub const POISON: u8 = 0xA5;

/// Units of every figure.
pub const UNITS_NOTE: &str = "GB = 1e9 bytes; bytes = matrix read + matrix written; times in ms per launch; \
                              % of vec4 = kernel GB/s / vec4 copy GB/s; % of floor = kernel GB/s / DtoD GB/s";

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct TransposeOptions {
    /// `(rows, cols)` measured at every height of `block_rows`.
    pub shapes: Vec<(usize, usize)>,
    /// Block heights for `shapes` (each one of
    /// [`TransposePolicy::BLOCK_ROWS`]).
    pub block_rows: Vec<u32>,
    /// Sides of the square size sweep, measured at the classic block only.
    pub sweep: Vec<usize>,
    /// The kernels.
    pub variants: Vec<TransposeVariant>,
    /// Measure the vec4 copy and `cuMemcpyDtoD` on each shape's bytes.
    pub references: bool,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// Where `transpose.json` and `transpose.svg` go.
    pub out_dir: PathBuf,
    /// Most device memory one shape's pool may take (default 8 GiB).
    pub pool_cap_bytes: u64,
}

impl Default for TransposeOptions {
    fn default() -> Self {
        TransposeOptions {
            shapes: vec![(GOAL_SIDE, GOAL_SIDE), (8192, 32_768), (32_768, 8192), (16_383, 16_385)],
            block_rows: TransposePolicy::BLOCK_ROWS.to_vec(),
            sweep: vec![512, 1024, 2048, 4096, 8192],
            variants: TransposeVariant::ALL.to_vec(),
            references: true,
            settings: Settings::default(),
            out_dir: PathBuf::from("bench-out"),
            pool_cap_bytes: 8 << 30,
        }
    }
}

impl TransposeOptions {
    /// A smoke run: 4096² and 1000 × 1007 at every height, a sweep of
    /// 512²…2048², 5 samples.
    pub fn quick() -> Self {
        TransposeOptions {
            shapes: vec![(4096, 4096), (1000, 1007)],
            sweep: vec![512, 1024, 2048],
            settings: Settings { reps: 5, ..Settings::default() },
            ..TransposeOptions::default()
        }
    }
}

/// One measured operation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timing {
    /// Median time, ms.
    pub ms: f64,
    /// Bandwidth from the median, GB/s (matrix read + written).
    pub gbps: f64,
    /// GB/s / the vec4 copy's GB/s on the same bytes, percent.
    pub pct_of_vec4: Option<f64>,
    /// GB/s / the DtoD GB/s on the same bytes, percent.
    pub pct_of_floor: Option<f64>,
    /// Statistics.
    pub stats: Stats,
}

/// One kernel at one block height.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelResult {
    /// `naive`, `tiled` or `padded`.
    pub variant: &'static str,
    /// The kernel.
    pub kernel: &'static str,
    /// Block `[32, rows]`.
    pub block: [u32; 2],
    /// Grid `[x, y]`.
    pub grid: [u32; 2],
    /// Elements per thread.
    pub items: u32,
    /// Static shared memory per block, bytes.
    pub shared_bytes: usize,
    /// Its measurement.
    pub timing: Timing,
}

/// The references on one shape's bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct References {
    /// `cuMemcpyDtoDAsync` input → output.
    pub dtod: DtodReference,
    /// The copy suite's `copy_vec4` (tuned policy) input → output.
    pub vec4_gbps: f64,
    /// Its statistics.
    pub vec4_stats: Stats,
}

/// Everything measured on one shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShapeResult {
    /// Input rows.
    pub rows: usize,
    /// Input columns.
    pub cols: usize,
    /// Bytes of one matrix.
    pub bytes: u64,
    /// Input/output pairs rotated over.
    pub pairs: u64,
    /// True when the pool is under 2× L2: not DRAM figures.
    pub l2_resident: bool,
    /// Part of the size sweep (classic block only) rather than the shapes.
    pub sweep: bool,
    /// The references, if measured.
    pub references: Option<References>,
    /// Per kernel and block height.
    pub results: Vec<KernelResult>,
}

impl ShapeResult {
    /// The result of `variant` at block height `rows`.
    pub fn of(&self, variant: TransposeVariant, rows: u32) -> Option<&KernelResult> {
        self.results.iter().find(|r| r.variant == variant.name() && r.block[1] == rows)
    }

    /// `16384 x 16384`.
    pub fn shape(&self) -> String {
        format!("{} x {}", self.rows, self.cols)
    }
}

/// The goal, evaluated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Goal {
    /// In words.
    pub description: String,
    /// Required padded / vec4 ratio.
    pub threshold: f64,
    /// `None` when 16384² with the padded kernel at the classic block and
    /// the references was not measured.
    pub met: Option<bool>,
    /// The padded / vec4 ratio at 16384², classic block.
    pub ratio: Option<f64>,
    /// The fastest padded block height at 16384² and its ratio.
    pub best_block_rows: Option<u32>,
    /// Its padded / vec4 ratio.
    pub best_ratio: Option<f64>,
}

impl Goal {
    /// Judges the goal on `shapes`.
    pub fn evaluate(shapes: &[ShapeResult]) -> Goal {
        let at = shapes.iter().find(|s| s.rows == GOAL_SIDE && s.cols == GOAL_SIDE && !s.sweep);
        let ratio_of = |r: &KernelResult| r.timing.pct_of_vec4.map(|p| p / 100.0);
        let classic = at.and_then(|s| s.of(TransposeVariant::Padded, TransposePolicy::CLASSIC.block_rows));
        let ratio = classic.and_then(ratio_of);
        let best = at.and_then(|s| {
            s.results
                .iter()
                .filter(|r| r.variant == TransposeVariant::Padded.name())
                .filter_map(|r| Some((r.block[1], ratio_of(r)?)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
        });
        Goal {
            description: format!(
                "padded transpose (block 32 x {}) >= {:.0}% of the vec4 copy at {GOAL_SIDE}^2",
                TransposePolicy::CLASSIC.block_rows,
                GOAL_RATIO * 100.0
            ),
            threshold: GOAL_RATIO,
            met: ratio.map(|r| r >= GOAL_RATIO),
            ratio,
            best_block_rows: best.map(|b| b.0),
            best_ratio: best.map(|b| b.1),
        }
    }

    /// `goal ...: MET (88.1%; fastest padded block 32 x 16: 89.0%)`.
    pub fn summary_line(&self) -> String {
        let best = match (self.best_block_rows, self.best_ratio) {
            (Some(b), Some(r)) => format!("; fastest padded block 32 x {b}: {:.1}%", r * 100.0),
            _ => String::new(),
        };
        let verdict = match (self.met, self.ratio) {
            (Some(m), Some(r)) => format!("{} ({:.1}%{best})", if m { "MET" } else { "NOT MET" }, r * 100.0),
            _ => format!(
                "NOT EVALUATED (needs {GOAL_SIDE} x {GOAL_SIDE} with the padded kernel at the classic block and \
                 the references)"
            ),
        };
        format!("goal {}: {verdict}", self.description)
    }
}

/// Everything the suite measured; written as `transpose.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransposeReport {
    /// `"transpose"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// How each figure was measured.
    pub settings: Settings,
    /// The units note.
    pub units: &'static str,
    /// Per shape, shapes first, then the sweep.
    pub shapes: Vec<ShapeResult>,
    /// Shapes not measured, with the reason.
    pub skipped: Vec<copy::Skipped>,
    /// The goal.
    pub goal: Goal,
}

fn opt_pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |p| format!("{p:.1}%"))
}

impl TransposeReport {
    /// The text table: per shape, the references, then every kernel.
    pub fn table(&self) -> Table {
        let mut t = Table::new(["shape", "L2?", "kernel", "block", "ms", "GB/s", "% of vec4", "% of floor"]);
        for s in &self.shapes {
            let l2 = if s.l2_resident { "yes" } else { "no" };
            if let Some(r) = &s.references {
                for (name, stats, gbps) in
                    [("cuMemcpyDtoD", &r.dtod.stats, r.dtod.gbps), ("copy_vec4 (tuned)", &r.vec4_stats, r.vec4_gbps)]
                {
                    t.row([
                        s.shape(),
                        l2.into(),
                        name.into(),
                        "-".into(),
                        format!("{:.3}", stats.median_ms),
                        format!("{gbps:.1}"),
                        opt_pct(Some(100.0 * gbps / r.vec4_gbps)),
                        opt_pct(Some(100.0 * gbps / r.dtod.gbps)),
                    ]);
                }
            }
            for k in &s.results {
                t.row([
                    s.shape(),
                    l2.into(),
                    k.kernel.into(),
                    format!("32 x {}", k.block[1]),
                    format!("{:.3}", k.timing.ms),
                    format!("{:.1}", k.timing.gbps),
                    opt_pct(k.timing.pct_of_vec4),
                    opt_pct(k.timing.pct_of_floor),
                ]);
            }
        }
        t.align(0, report::Align::Left).align(2, report::Align::Left);
        t
    }

    /// GB/s against matrix bytes over the square shapes at the classic
    /// block: one series per kernel, plus the references.
    pub fn series(&self) -> Vec<Series> {
        let squares: Vec<&ShapeResult> = self.shapes.iter().filter(|s| s.rows == s.cols).collect();
        let rows = TransposePolicy::CLASSIC.block_rows;
        let mut out: Vec<Series> = TransposeVariant::ALL
            .iter()
            .map(|&v| Series {
                name: format!("{} (32 x {rows})", v.name()),
                points: squares.iter().filter_map(|s| Some((s.bytes as f64, s.of(v, rows)?.timing.gbps))).collect(),
            })
            .collect();
        out.push(Series {
            name: "copy_vec4".into(),
            points: squares.iter().filter_map(|s| Some((s.bytes as f64, s.references.as_ref()?.vec4_gbps))).collect(),
        });
        out.push(Series {
            name: "cuMemcpyDtoD".into(),
            points: squares.iter().filter_map(|s| Some((s.bytes as f64, s.references.as_ref()?.dtod.gbps))).collect(),
        });
        out.retain(|s| !s.points.is_empty());
        out
    }

    /// Writes `transpose.json` and `transpose.svg` into `dir`.
    pub fn write(&self, dir: &Path) -> BenchResult<(PathBuf, PathBuf)> {
        let json = dir.join("transpose.json");
        let svg = dir.join("transpose.svg");
        report::write_json(&json, self)?;
        let resident: Vec<String> =
            self.shapes.iter().filter(|s| s.l2_resident && s.rows == s.cols).map(|s| s.shape()).collect();
        let note = if resident.is_empty() {
            "no square L2-resident".to_string()
        } else {
            format!("L2-resident (not DRAM figures): {}", resident.join(", "))
        };
        let title = format!(
            "f32 transpose vs matrix size: {} (compute capability {}, PTX sm_{})\nsquare matrices; {note}",
            self.device.name, self.device.compute_capability, self.device.ptx_arch
        );
        report::plot_svg(
            &svg,
            &title,
            "bytes per matrix (log2 scale)",
            "GB/s (1e9 B/s, read + written)",
            &self.series(),
        )?;
        Ok((json, svg))
    }
}

/// Input element `i`: finite, in ±[1, 2), never the poison pattern, rarely
/// repeated (23 random mantissa bits and a random sign).
pub fn element(i: usize) -> f32 {
    let w = copy::pattern_word(i);
    f32::from_bits((w & 0x8000_0000) | 0x3F80_0000 | (w & 0x007F_FFFF))
}

/// Runs the suite: measures, verifies, prints the table and the goal,
/// writes `transpose.json` and `transpose.svg`.
pub fn run(gpu: &Gpu, opts: &TransposeOptions) -> BenchResult<TransposeReport> {
    let report = measure_suite(gpu, opts)?;
    println!("f32 transpose on {} ({UNITS_NOTE})", report.device.name);
    println!("{}", report.table());
    if report.shapes.iter().any(|s| s.l2_resident) {
        println!(
            "L2? yes: the shape's buffer pool is under 2 x L2 ({}): cache figures, not DRAM",
            human_bytes(u64::from(report.device.l2_bytes))
        );
    }
    for s in &report.skipped {
        println!("skipped {}: {}", s.size, s.reason);
    }
    println!("{}", report.goal.summary_line());
    let (json, svg) = report.write(&opts.out_dir)?;
    println!("wrote {} and {}", json.display(), svg.display());
    Ok(report)
}

/// Checks the options before anything runs.
fn check_options(opts: &TransposeOptions) -> BenchResult<()> {
    if opts.settings.reps == 0 {
        return Err(BenchError::Options("--reps must be at least 1".into()));
    }
    if opts.variants.is_empty() {
        return Err(BenchError::Options("no transpose variant selected".into()));
    }
    if opts.shapes.is_empty() && opts.sweep.is_empty() {
        return Err(BenchError::Options("no shape and no sweep size: nothing to measure".into()));
    }
    if !opts.shapes.is_empty() && opts.block_rows.is_empty() {
        return Err(BenchError::Options("no block height selected".into()));
    }
    if let Some(r) = opts.block_rows.iter().find(|r| !TransposePolicy::BLOCK_ROWS.contains(r)) {
        return Err(BenchError::Options(format!("block rows {r}: must be one of {:?}", TransposePolicy::BLOCK_ROWS)));
    }
    let zero = opts.shapes.iter().any(|&(r, c)| r == 0 || c == 0) || opts.sweep.contains(&0);
    if zero {
        return Err(BenchError::Options("a matrix needs at least one row and one column".into()));
    }
    Ok(())
}

/// Measures and verifies everything (no table, no files).
pub fn measure_suite(gpu: &Gpu, opts: &TransposeOptions) -> BenchResult<TransposeReport> {
    check_options(opts)?;
    let l2 = u64::from(gpu.info().l2_bytes);
    let classic = [TransposePolicy::CLASSIC.block_rows];
    let cases = opts
        .shapes
        .iter()
        .map(|&(r, c)| (r, c, &opts.block_rows[..], false))
        .chain(opts.sweep.iter().filter(|&&n| !opts.shapes.contains(&(n, n))).map(|&n| (n, n, &classic[..], true)));
    let mut shapes = Vec::new();
    let mut skipped = Vec::new();
    for (rows, cols, heights, sweep) in cases {
        let bytes = (rows as u64).saturating_mul(cols as u64).saturating_mul(4);
        let (free, _) = gpu.memory_info()?;
        match Pool::plan(bytes, l2, opts.pool_cap_bytes, free as u64) {
            Ok(pool) => {
                eprintln!("transpose: {rows} x {cols} ({}), {} pair(s)", human_bytes(bytes), pool.pairs);
                shapes.push(measure_shape(gpu, opts, rows, cols, heights, sweep, pool)?);
            }
            Err(reason) => {
                eprintln!("transpose: skipping {rows} x {cols}: {reason}");
                skipped.push(copy::Skipped { bytes, size: format!("{rows} x {cols}"), reason });
            }
        }
    }
    let goal = Goal::evaluate(&shapes);
    Ok(TransposeReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        settings: opts.settings,
        units: UNITS_NOTE,
        shapes,
        skipped,
        goal,
    })
}

/// The first element of `got` that differs from `want`, as a
/// verification error naming it.
fn verify(got: &[f32], want: &[f32], what: &str, minor: usize) -> BenchResult<()> {
    match crate::reference::first_mismatch(got, want)? {
        None => Ok(()),
        Some((i, g, w)) => Err(BenchError::Verification {
            suite: SUITE.name,
            message: format!(
                "{what}: element {i} (row {}, column {}) is {g} ({:#010x}), expected {w} ({:#010x}){}",
                i / minor,
                i % minor,
                g.to_bits(),
                w.to_bits(),
                if g.to_bits() == u32::from_ne_bytes([POISON; 4]) { " (never written: still the poison)" } else { "" }
            ),
        }),
    }
}

fn measure_shape(
    gpu: &Gpu,
    opts: &TransposeOptions,
    rows: usize,
    cols: usize,
    heights: &[u32],
    sweep: bool,
    pool: Pool,
) -> BenchResult<ShapeResult> {
    let n = rows * cols;
    let bytes = 4 * n as u64;
    let moved = 2.0 * bytes as f64;
    let data: Vec<f32> = (0..n).map(element).collect();
    let mut want = vec![0f32; n];
    reference_transpose(&data, rows, cols, &mut want)?;
    let mut srcs: Vec<DeviceBuffer<f32>> = Vec::new();
    let mut dsts: Vec<DeviceBuffer<f32>> = Vec::new();
    for _ in 0..pool.pairs {
        srcs.push(gpu.upload(&data)?);
        dsts.push(gpu.alloc_zeroed::<f32>(n)?);
    }
    let pairs = srcs.len();
    let mut got = vec![0f32; n];
    let shape = format!("{rows} x {cols}");

    let references = if opts.references {
        let s = &opts.settings;
        let dtod = harness::measure(gpu, s, |i| {
            gpu.copy_with_driver(&srcs[i % pairs].as_view(), &mut dsts[i % pairs].as_view_mut())
        })?;
        dsts[0].fill_bytes(POISON)?;
        gpu.copy_with_driver(&srcs[0].as_view(), &mut dsts[0].as_view_mut())?;
        dsts[0].copy_to_host(&mut got)?;
        verify(&got, &data, &format!("cuMemcpyDtoD of {shape}"), cols)?;

        let vec4 = |src: &DeviceBuffer<f32>, dst: &mut DeviceBuffer<f32>| {
            gpu.copy_with(&src.as_view(), &mut dst.as_view_mut(), CopyVariant::Vec4, &CopyPolicy::TUNED).map(|_| ())
        };
        let vec4_stats = harness::measure(gpu, s, |i| vec4(&srcs[i % pairs], &mut dsts[i % pairs]))?;
        dsts[0].fill_bytes(POISON)?;
        vec4(&srcs[0], &mut dsts[0])?;
        dsts[0].copy_to_host(&mut got)?;
        verify(&got, &data, &format!("copy_vec4 of {shape}"), cols)?;
        Some(References {
            dtod: DtodReference { bytes, gbps: harness::gbps(moved, dtod.median_ms), stats: dtod },
            vec4_gbps: harness::gbps(moved, vec4_stats.median_ms),
            vec4_stats,
        })
    } else {
        None
    };

    let mut results = Vec::new();
    for &v in &opts.variants {
        for &h in heights {
            let policy = TransposePolicy::with_block_rows(h);
            let launch = |k: usize, dsts: &mut [DeviceBuffer<f32>]| {
                gpu.transpose_with(&srcs[k].as_view(), &mut dsts[k].as_view_mut(), rows, cols, v, policy)
            };
            let stats = harness::measure(gpu, &opts.settings, |i| launch(i % pairs, &mut dsts).map(|_| ()))?;
            dsts[0].fill_bytes(POISON)?;
            let cfg = launch(0, &mut dsts)?;
            dsts[0].copy_to_host(&mut got)?;
            let kernel = v.kernel(h)?;
            verify(&got, &want, &format!("{kernel} of {shape}"), rows)?;
            let gbps = harness::gbps(moved, stats.median_ms);
            results.push(KernelResult {
                variant: v.name(),
                kernel,
                block: [cfg.block.x, cfg.block.y],
                grid: [cfg.grid.x, cfg.grid.y],
                items: policy.items(),
                shared_bytes: v.shared_bytes(),
                timing: Timing {
                    ms: stats.median_ms,
                    gbps,
                    pct_of_vec4: references.as_ref().map(|r| 100.0 * gbps / r.vec4_gbps),
                    pct_of_floor: references.as_ref().map(|r| 100.0 * r.dtod.floor_ms(moved) / stats.median_ms),
                    stats,
                },
            });
        }
    }
    // No kernel may have written its input.
    srcs[0].copy_to_host(&mut got)?;
    verify(&got, &data, &format!("input of the {shape} transposes"), cols)?;
    Ok(ShapeResult {
        rows,
        cols,
        bytes,
        pairs: pairs as u64,
        l2_resident: pool.l2_resident,
        sweep,
        references,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(ms: f64) -> Stats {
        Stats::from_samples(&[ms], 1).unwrap()
    }

    fn kernel(v: TransposeVariant, rows: u32, gbps: f64, vec4: f64) -> KernelResult {
        KernelResult {
            variant: v.name(),
            kernel: v.kernel(rows).unwrap(),
            block: [32, rows],
            grid: [512, 512],
            items: 32 / rows,
            shared_bytes: v.shared_bytes(),
            timing: Timing {
                ms: 1.0,
                gbps,
                pct_of_vec4: Some(100.0 * gbps / vec4),
                pct_of_floor: Some(100.0 * gbps / 3000.0),
                stats: stats(1.0),
            },
        }
    }

    fn shape(side: usize, padded: &[(u32, f64)]) -> ShapeResult {
        let vec4 = 2900.0;
        let mut results = vec![kernel(TransposeVariant::Naive, 8, 900.0, vec4)];
        results.extend(padded.iter().map(|&(r, g)| kernel(TransposeVariant::Padded, r, g, vec4)));
        ShapeResult {
            rows: side,
            cols: side,
            bytes: (side * side * 4) as u64,
            pairs: 1,
            l2_resident: false,
            sweep: false,
            references: Some(References {
                dtod: DtodReference { bytes: (side * side * 4) as u64, gbps: 3000.0, stats: stats(0.7) },
                vec4_gbps: vec4,
                vec4_stats: stats(0.74),
            }),
            results,
        }
    }

    #[test]
    fn goal_is_judged_on_the_classic_block_at_16384() {
        let g = Goal::evaluate(&[shape(GOAL_SIDE, &[(4, 2400.0), (8, 2500.0), (16, 2600.0)])]);
        assert_eq!(g.met, Some(true));
        assert_eq!(g.best_block_rows, Some(16));
        assert_eq!(
            g.summary_line(),
            "goal padded transpose (block 32 x 8) >= 85% of the vec4 copy at 16384^2: MET (86.2%; fastest padded \
             block 32 x 16: 89.7%)"
        );
        let g = Goal::evaluate(&[shape(GOAL_SIDE, &[(8, 2400.0)])]);
        assert_eq!(g.met, Some(false));
        assert!(g.summary_line().contains("NOT MET (82.8%"), "{}", g.summary_line());
        let g = Goal::evaluate(&[shape(4096, &[(8, 2800.0)])]);
        assert_eq!(g.met, None);
        assert!(g.summary_line().contains("NOT EVALUATED"));
        // Without the classic block at 16384², nothing to judge either.
        assert_eq!(Goal::evaluate(&[shape(GOAL_SIDE, &[(16, 2800.0)])]).met, None);
    }

    #[test]
    fn elements_are_finite_distinct_and_never_poison() {
        let poison = u32::from_ne_bytes([POISON; 4]);
        let v: Vec<f32> = (0..100_000).map(element).collect();
        assert!(v.iter().all(|x| x.is_finite() && x.abs() >= 1.0 && x.abs() < 2.0 && x.to_bits() != poison));
        let mut bits: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
        bits.sort_unstable();
        bits.dedup();
        assert!(bits.len() > 99_000, "{} distinct", bits.len());
    }

    #[test]
    fn options_are_checked() {
        assert!(check_options(&TransposeOptions::default()).is_ok());
        assert!(check_options(&TransposeOptions::quick()).is_ok());
        let bad = |f: fn(&mut TransposeOptions)| {
            let mut o = TransposeOptions::default();
            f(&mut o);
            check_options(&o).is_err()
        };
        assert!(bad(|o| o.block_rows = vec![6]));
        assert!(bad(|o| o.variants.clear()));
        assert!(bad(|o| o.settings.reps = 0));
        assert!(bad(|o| o.shapes.push((0, 5))));
        assert!(bad(|o| {
            o.shapes.clear();
            o.sweep.clear();
        }));
    }

    #[test]
    fn table_series_and_files() {
        let mut small = shape(1024, &[(8, 600.0)]);
        small.l2_resident = true;
        small.sweep = true;
        let shapes = vec![shape(GOAL_SIDE, &[(8, 2500.0)]), small];
        let r = TransposeReport {
            suite: "transpose",
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
            goal: Goal::evaluate(&shapes),
            shapes,
            skipped: vec![],
        };
        let text = r.table().render();
        assert!(text.contains("transpose_padded_r8") && text.contains("86.2%"), "{text}");
        assert!(text.contains("cuMemcpyDtoD") && text.contains("copy_vec4"), "{text}");
        let series = r.series();
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["naive (32 x 8)", "padded (32 x 8)", "copy_vec4", "cuMemcpyDtoD"]);
        assert_eq!(series[1].points.len(), 2);

        let dir = std::env::temp_dir().join(format!("coalesce-transpose-report-{}", std::process::id()));
        let (json, svg) = r.write(&dir).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        assert_eq!(v["goal"]["met"], true);
        assert_eq!(v["shapes"][0]["results"][1]["kernel"], "transpose_padded_r8");
        assert_eq!(v["shapes"][1]["l2_resident"], true);
        assert!(std::fs::read_to_string(svg).unwrap().contains("L2-resident"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
