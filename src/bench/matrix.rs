//! The `matrix` suite (lessons 003 and 002 §3.7–3.9): elementwise `C = A +
//! B` on `f32` matrices, in two experiments.
//!
//! * **Layouts** (default 10000 × 10000, block (32, 32) as in lesson 003):
//!   `matrix_add_row_major` vs `matrix_add_col_major` vs
//!   `matrix_add_pitched`. Reported: time, GB/s, % of the DRAM floor, the
//!   column/row time ratio (the lesson: 3.4× on an RTX 2070), the
//!   pitched/linear time ratio (the lesson: 0.986), the pitch in bytes and
//!   the padding overhead (the lesson: 40 192 bytes, "0.6%").
//! * **Block-shape sweep** (default 16384 × 16384, lesson 002's fifteen
//!   shapes): `sum_matrix_2d` (one element per thread, the lesson's kernel)
//!   and `sum_matrix_2d_x4` (four per thread) per shape: time, GB/s, % of
//!   the DRAM floor, and the theoretical occupancy from the driver's
//!   occupancy API. `(256, 8)` is refused before any launch
//!   ([`crate::Error::InvalidLaunch`], the 1024-thread limit) and listed as
//!   such.
//!
//! The **DRAM floor** of an add is the time to move its bytes — two reads
//! and one write of the matrix — at the bandwidth of the driver's
//! device-to-device copy measured in the same run
//! ([`harness::measure_dtod`]): `% of floor = floor time / kernel time =
//! kernel GB/s / DtoD GB/s`. GB = 1e9 bytes; only the matrix's bytes count
//! (a pitched matrix's padding is neither read nor written).
//!
//! The goal: the best shape's `sum_matrix_2d` at ≥ 90% of the DRAM floor at
//! 16384². It is judged on the lesson kernel; the four-per-thread kernel's
//! best is reported beside it.
//!
//! Every kernel's output is verified against the rayon reference after it
//! is timed (output poisoned first, then one more launch); a mismatch stops
//! the suite.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::copy::DeviceSummary;
use super::harness::{self, DtodReference, Settings, Stats};
use super::report::{self, Series, Table, human_bytes};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::matrix::reference_add;
use crate::{BlockShape, DeviceBuffer, Gpu, LaunchConfig, MatrixLayout, PitchedBuffer, SumVariant, reference};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "matrix",
    about: "matrix add: row-major vs column-major vs pitched (10000^2), sum_matrix_2d block-shape sweep (16384^2)",
};

/// The goal: the best shape at this fraction of the DRAM floor or better.
pub const GOAL_RATIO: f64 = 0.90;

/// The matrix side the goal applies to.
pub const GOAL_N: usize = 16_384;

/// Bytes of `f32`.
const F32: usize = 4;

/// The byte outputs are poisoned with before a verification launch.
pub const POISON: u8 = 0xA5;

/// Units of every figure.
pub const UNITS_NOTE: &str = "GB = 1e9 bytes; bytes = 2 reads + 1 write of the matrix (padding not counted); times in ms \
                              per launch; % of floor = DtoD-bound time / kernel time";

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixOptions {
    /// Side of the square layout experiment (default 10000).
    pub layout_n: usize,
    /// Block of the layout experiment (default (32, 32)).
    pub layout_block: BlockShape,
    /// Side of the square sweep matrix (default 16384).
    pub sweep_n: usize,
    /// Shapes of the sweep (default lesson 002's fifteen).
    pub shapes: Vec<BlockShape>,
    /// Kernels of the sweep (default both).
    pub variants: Vec<SumVariant>,
    /// Run the layout experiment.
    pub layouts: bool,
    /// Run the sweep.
    pub sweep: bool,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// Where `matrix.json` and `matrix.svg` go.
    pub out_dir: PathBuf,
}

impl Default for MatrixOptions {
    fn default() -> Self {
        MatrixOptions {
            layout_n: 10_000,
            layout_block: BlockShape::LESSON_2D,
            sweep_n: GOAL_N,
            shapes: BlockShape::LESSON_SWEEP.to_vec(),
            variants: SumVariant::ALL.to_vec(),
            layouts: true,
            sweep: true,
            settings: Settings::default(),
            out_dir: PathBuf::from("bench-out"),
        }
    }
}

impl MatrixOptions {
    /// A smoke run: 4000² layouts, 4096² sweep, 5 samples.
    pub fn quick() -> Self {
        MatrixOptions {
            layout_n: 4_000,
            sweep_n: 4_096,
            settings: Settings { reps: 5, ..Settings::default() },
            ..MatrixOptions::default()
        }
    }
}

/// One kernel's measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timing {
    /// Median time per launch, ms.
    pub ms: f64,
    /// Bandwidth from the median, GB/s (of the bytes the operation
    /// moves: 3 · matrix bytes for an add).
    pub gbps: f64,
    /// Percent of the DRAM floor (100 = as fast as DtoD moves the bytes).
    pub pct_of_floor: f64,
    /// Per-launch statistics.
    pub stats: Stats,
}

impl Timing {
    /// The measurement of an operation moving `bytes_moved` bytes, against
    /// `dtod`.
    pub fn new(stats: Stats, bytes_moved: f64, dtod: &DtodReference) -> Timing {
        let ms = stats.median_ms;
        Timing {
            ms,
            gbps: harness::gbps(bytes_moved, ms),
            pct_of_floor: 100.0 * dtod.floor_ms(bytes_moved) / ms,
            stats,
        }
    }
}

/// One layout's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayoutResult {
    /// `row-major`, `col-major` or `pitched`.
    pub layout: &'static str,
    /// The kernel.
    pub kernel: &'static str,
    /// The launch.
    pub grid: [u32; 2],
    /// Its measurement.
    pub timing: Timing,
}

/// The layout experiment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayoutReport {
    /// Rows = columns.
    pub n: usize,
    /// The block.
    pub block: [u32; 2],
    /// Bytes moved per launch (3 · n² · 4).
    pub bytes_moved: u64,
    /// The DtoD reference (same matrix size).
    pub dtod: DtodReference,
    /// Row-major, column-major, pitched.
    pub results: Vec<LayoutResult>,
    /// Column-major time / row-major time (the lesson: 3.37).
    pub col_over_row: f64,
    /// Pitched time / row-major time (the lesson: 0.986).
    pub pitched_over_linear: f64,
    /// The pitched matrices' pitch, bytes (the lesson: 40 192).
    pub pitch_bytes: usize,
    /// Bytes of data per row (n · 4).
    pub row_bytes: usize,
    /// Largest power of two (≤ 4096) dividing the pitch.
    pub row_alignment: usize,
    /// The device's texture pitch alignment, bytes.
    pub pitch_alignment: usize,
    /// Padding / data, percent.
    pub overhead_pct: f64,
}

/// One kernel at one shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantResult {
    /// `x1` or `x4`.
    pub variant: &'static str,
    /// The kernel.
    pub kernel: &'static str,
    /// The grid.
    pub grid: [u32; 2],
    /// Resident blocks per SM (driver occupancy API).
    pub blocks_per_sm: u32,
    /// Resident warps / the SM's maximum, percent.
    pub theoretical_occupancy_pct: f64,
    /// Its measurement.
    pub timing: Timing,
}

/// One shape of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShapeResult {
    /// `[x, y]`.
    pub block: [u32; 2],
    /// `x · y`.
    pub threads: u64,
    /// Why the shape was refused before any launch (`(256, 8)`), if it was.
    pub refused: Option<String>,
    /// Per kernel (empty when refused).
    pub results: Vec<VariantResult>,
}

impl ShapeResult {
    /// The result of `variant`, if measured.
    pub fn of(&self, variant: SumVariant) -> Option<&VariantResult> {
        self.results.iter().find(|r| r.variant == variant.name())
    }
}

/// The goal, evaluated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Goal {
    /// The goal in words.
    pub description: String,
    /// Required fraction of the DRAM floor.
    pub threshold: f64,
    /// `None` when the sweep did not run at 16384² with the lesson kernel.
    pub met: Option<bool>,
    /// Best shape of `sum_matrix_2d`.
    pub best_shape: Option<[u32; 2]>,
    /// Its percent of the floor.
    pub best_pct: Option<f64>,
    /// Best shape of `sum_matrix_2d_x4`, for comparison.
    pub best_x4_shape: Option<[u32; 2]>,
    /// Its percent of the floor.
    pub best_x4_pct: Option<f64>,
}

fn best(shapes: &[ShapeResult], v: SumVariant) -> Option<([u32; 2], f64)> {
    shapes.iter().filter_map(|s| Some((s.block, s.of(v)?.timing.pct_of_floor))).max_by(|a, b| a.1.total_cmp(&b.1))
}

impl Goal {
    /// Judges the goal on a sweep at `n`².
    pub fn evaluate(n: usize, shapes: &[ShapeResult]) -> Goal {
        let x1 = best(shapes, SumVariant::X1);
        let x4 = best(shapes, SumVariant::X4);
        Goal {
            description: format!(
                "best sum_matrix_2d block shape >= {:.0}% of the DRAM floor at {GOAL_N}^2",
                GOAL_RATIO * 100.0
            ),
            threshold: GOAL_RATIO,
            met: if n == GOAL_N { x1.map(|(_, p)| p >= 100.0 * GOAL_RATIO) } else { None },
            best_shape: x1.map(|b| b.0),
            best_pct: x1.map(|b| b.1),
            best_x4_shape: x4.map(|b| b.0),
            best_x4_pct: x4.map(|b| b.1),
        }
    }

    /// `goal best sum_matrix_2d block shape >= 90% ...: MET ((128, 1): 93.1%; x4 best (64, 4): 95.0%)`.
    pub fn summary_line(&self, n: usize) -> String {
        let shape = |s: [u32; 2]| format!("({}, {})", s[0], s[1]);
        let x4 = match (self.best_x4_shape, self.best_x4_pct) {
            (Some(s), Some(p)) => format!("; x4 best {}: {p:.1}%", shape(s)),
            _ => String::new(),
        };
        let verdict = match (self.met, self.best_shape, self.best_pct) {
            (Some(m), Some(s), Some(p)) => {
                format!("{} ({}: {p:.1}%{x4})", if m { "MET" } else { "NOT MET" }, shape(s))
            }
            (None, Some(s), Some(p)) => {
                format!("NOT EVALUATED (swept {n}^2, not {GOAL_N}^2; best {}: {p:.1}%{x4})", shape(s))
            }
            _ => "NOT EVALUATED (sum_matrix_2d was not measured)".to_string(),
        };
        format!("goal {}: {verdict}", self.description)
    }
}

/// The sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepReport {
    /// Rows = columns.
    pub n: usize,
    /// Bytes moved per launch (3 · n² · 4).
    pub bytes_moved: u64,
    /// The DtoD reference.
    pub dtod: DtodReference,
    /// Per shape, in the order run.
    pub shapes: Vec<ShapeResult>,
    /// The goal.
    pub goal: Goal,
}

/// Everything the suite measured; written as `matrix.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatrixReport {
    /// `"matrix"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// How each figure was measured.
    pub settings: Settings,
    /// The units note.
    pub units: &'static str,
    /// The layout experiment, if run.
    pub layouts: Option<LayoutReport>,
    /// The sweep, if run.
    pub sweep: Option<SweepReport>,
}

fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

impl LayoutReport {
    /// The text table.
    pub fn table(&self) -> Table {
        let mut t = Table::new(["layout", "kernel", "grid", "ms", "GB/s", "% of floor", "time / row-major"]);
        let row_ms = self.results.first().map_or(f64::NAN, |r| r.timing.ms);
        for r in &self.results {
            t.row([
                r.layout.to_string(),
                r.kernel.to_string(),
                format!("({}, {})", r.grid[0], r.grid[1]),
                format!("{:.3}", r.timing.ms),
                format!("{:.1}", r.timing.gbps),
                pct(r.timing.pct_of_floor),
                format!("{:.2}x", r.timing.ms / row_ms),
            ]);
        }
        t.align(1, report::Align::Left);
        t
    }
}

impl SweepReport {
    /// The text table: one row per shape.
    pub fn table(&self) -> Table {
        let mut t = Table::new([
            "block",
            "threads",
            "grid",
            "blocks/SM",
            "theor. occ.",
            "x1 ms",
            "x1 GB/s",
            "x1 % floor",
            "x4 ms",
            "x4 GB/s",
            "x4 % floor",
        ]);
        for s in &self.shapes {
            let shape = format!("({}, {})", s.block[0], s.block[1]);
            if let Some(why) = &s.refused {
                t.row([shape, s.threads.to_string(), format!("refused: {why}")]);
                continue;
            }
            let first = s.results.first();
            let mut row = vec![
                shape,
                s.threads.to_string(),
                first.map_or("-".into(), |r| format!("({}, {})", r.grid[0], r.grid[1])),
                first.map_or("-".into(), |r| r.blocks_per_sm.to_string()),
                first.map_or("-".into(), |r| pct(r.theoretical_occupancy_pct)),
            ];
            for v in SumVariant::ALL {
                match s.of(v) {
                    Some(r) => row.extend([
                        format!("{:.3}", r.timing.ms),
                        format!("{:.1}", r.timing.gbps),
                        pct(r.timing.pct_of_floor),
                    ]),
                    None => row.extend(["-".to_string(), "-".to_string(), "-".to_string()]),
                }
            }
            t.row(row);
        }
        t
    }

    /// One series per (kernel, block.y): % of floor against block.x.
    pub fn series(&self) -> Vec<Series> {
        let mut ys: Vec<u32> = self.shapes.iter().map(|s| s.block[1]).collect();
        ys.sort_unstable();
        ys.dedup();
        let mut out = Vec::new();
        for v in SumVariant::ALL {
            for &y in &ys {
                let points: Vec<(f64, f64)> = self
                    .shapes
                    .iter()
                    .filter(|s| s.block[1] == y)
                    .filter_map(|s| Some((f64::from(s.block[0]), s.of(v)?.timing.pct_of_floor)))
                    .collect();
                if !points.is_empty() {
                    out.push(Series { name: format!("{} block.y = {y}", v.name()), points });
                }
            }
        }
        out
    }
}

impl MatrixReport {
    /// Writes `matrix.json` (and `matrix.svg` when the sweep ran) into
    /// `dir`; returns the paths written.
    pub fn write(&self, dir: &Path) -> BenchResult<Vec<PathBuf>> {
        let json = dir.join("matrix.json");
        report::write_json(&json, self)?;
        let mut paths = vec![json];
        if let Some(s) = &self.sweep {
            let svg = dir.join("matrix.svg");
            let title = format!(
                "sum_matrix_2d, {n} x {n} f32: % of the DRAM floor by block shape\n{} (compute capability {}); \
                 floor = 3 x {} at cuMemcpyDtoD's {:.0} GB/s",
                self.device.name,
                self.device.compute_capability,
                human_bytes((s.n * s.n * F32) as u64),
                s.dtod.gbps,
                n = s.n
            );
            report::plot_svg(&svg, &title, "block.x (threads along columns)", "% of DRAM floor", &s.series())?;
            paths.push(svg);
        }
        Ok(paths)
    }
}

/// Runs the suite: measures, verifies, prints the tables and the goal to
/// stdout, writes `matrix.json` and `matrix.svg` into `opts.out_dir`.
pub fn run(gpu: &Gpu, opts: &MatrixOptions) -> BenchResult<MatrixReport> {
    let report = measure_suite(gpu, opts)?;
    println!("matrix add on {} ({UNITS_NOTE})", report.device.name);
    if let Some(l) = &report.layouts {
        println!();
        println!(
            "layouts: {n} x {n} f32, block ({}, {}); DtoD {:.1} GB/s ({} copied)",
            l.block[0],
            l.block[1],
            l.dtod.gbps,
            human_bytes(l.dtod.bytes),
            n = l.n
        );
        println!("{}", l.table());
        println!(
            "column/row time ratio {:.2}x (lesson: 3.37x on an RTX 2070); pitched/linear {:.3} (lesson: 0.986)",
            l.col_over_row, l.pitched_over_linear
        );
        println!(
            "pitch {} bytes for {} bytes of data per row (rows {}-byte aligned; texture pitch alignment {}): \
             overhead {:.2}% (lesson: 40192 bytes, 0.48% by its own numbers)",
            l.pitch_bytes, l.row_bytes, l.row_alignment, l.pitch_alignment, l.overhead_pct
        );
    }
    if let Some(s) = &report.sweep {
        println!();
        println!(
            "block-shape sweep: {n} x {n} f32 ({} moved per launch); DtoD {:.1} GB/s; floor {:.3} ms",
            human_bytes(s.bytes_moved),
            s.dtod.gbps,
            s.dtod.floor_ms(s.bytes_moved as f64),
            n = s.n
        );
        println!("{}", s.table());
        println!(
            "theor. occ. = resident warps per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor) / max warps per SM"
        );
        println!("{}", s.goal.summary_line(s.n));
    }
    let paths = report.write(&opts.out_dir)?;
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", names.join(" and "));
    Ok(report)
}

/// Measures and verifies (no printing, no files).
pub fn measure_suite(gpu: &Gpu, opts: &MatrixOptions) -> BenchResult<MatrixReport> {
    if opts.settings.reps == 0 {
        return Err(BenchError::Options("--reps must be at least 1".into()));
    }
    if opts.layouts && opts.layout_n == 0 || opts.sweep && opts.sweep_n == 0 {
        return Err(BenchError::Options("matrix sides must be at least 1".into()));
    }
    let layouts = if opts.layouts { Some(measure_layouts(gpu, opts)?) } else { None };
    let sweep = if opts.sweep { Some(measure_sweep(gpu, opts)?) } else { None };
    Ok(MatrixReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        settings: opts.settings,
        units: UNITS_NOTE,
        layouts,
        sweep,
    })
}

/// Fresh inputs: a cheap hash of the index, finite, mixed signs, never 0.
pub fn input_value(i: usize, salt: u64) -> f32 {
    let w = super::copy::pattern_word(i ^ salt as usize);
    // 24 bits of the hash, scaled into ±(1 .. 2^12).
    let m = (w >> 8) as f32 / (1u32 << 12) as f32 + 1.0;
    if w & 1 == 0 { m } else { -m }
}

struct Inputs {
    a: Vec<f32>,
    b: Vec<f32>,
    want: Vec<f32>,
}

fn inputs(n: usize) -> BenchResult<Inputs> {
    let a: Vec<f32> = (0..n).map(|i| input_value(i, 0x5EED)).collect();
    let b: Vec<f32> = (0..n).map(|i| input_value(i, 0xB0B)).collect();
    let mut want = vec![0f32; n];
    reference_add(&a, &b, &mut want)?;
    Ok(Inputs { a, b, want })
}

fn verify(suite_what: &str, got: &[f32], want: &[f32], ncol: usize) -> BenchResult<()> {
    let g: &[u32] = as_bits(got);
    let w: &[u32] = as_bits(want);
    if let Some((i, gv, wv)) = reference::first_mismatch(g, w)? {
        let never = if gv == u32::from_ne_bytes([POISON; 4]) { " (never written: still the poison)" } else { "" };
        return Err(BenchError::Verification {
            suite: SUITE.name,
            message: format!(
                "{suite_what}: element {i} (row {}, column {}) is {}, the reference {}{never}",
                i / ncol,
                i % ncol,
                f32::from_bits(gv),
                f32::from_bits(wv)
            ),
        });
    }
    Ok(())
}

/// `f32` bits as `u32`, for bit-exact comparison.
fn as_bits(v: &[f32]) -> &[u32] {
    // SAFETY: f32 and u32 have the same size and alignment, every bit
    // pattern is a valid u32, and the lifetime is carried over.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), v.len()) }
}

fn grid2(cfg: &LaunchConfig) -> [u32; 2] {
    [cfg.grid.x, cfg.grid.y]
}

fn measure_layouts(gpu: &Gpu, opts: &MatrixOptions) -> BenchResult<LayoutReport> {
    let n = opts.layout_n;
    let elems = n.checked_mul(n).ok_or_else(|| BenchError::Options(format!("{n}^2 overflows")))?;
    let bytes = (elems * F32) as u64;
    let moved = 3.0 * bytes as f64;
    let block = opts.layout_block;
    let dtod = harness::measure_dtod(gpu, &opts.settings, bytes)?;
    let input = inputs(elems)?;
    let mut got = vec![0f32; elems];
    let mut results = Vec::new();

    {
        let a = gpu.upload(&input.a)?;
        let b = gpu.upload(&input.b)?;
        let mut c = gpu.alloc_zeroed::<f32>(elems)?;
        for (name, layout) in [("row-major", MatrixLayout::RowMajor), ("col-major", MatrixLayout::ColMajor)] {
            let launch = |c: &mut DeviceBuffer<f32>| {
                gpu.matrix_add(layout, &a.as_view(), &b.as_view(), &mut c.as_view_mut(), n, n, block)
            };
            let stats = harness::measure(gpu, &opts.settings, |_| launch(&mut c).map(|_| ()))?;
            c.fill_bytes(POISON)?;
            let cfg = launch(&mut c)?;
            c.copy_to_host(&mut got)?;
            verify(&format!("{} {n} x {n}", layout.kernel()), &got, &input.want, n)?;
            results.push(LayoutResult {
                layout: name,
                kernel: layout.kernel(),
                grid: grid2(&cfg),
                timing: Timing::new(stats, moved, &dtod),
            });
        }
    }

    let a = gpu.upload_pitched(&input.a, n, n)?;
    let b = gpu.upload_pitched(&input.b, n, n)?;
    let mut c: PitchedBuffer<f32> = gpu.alloc_pitched_zeroed(n, n)?;
    let stats = harness::measure(gpu, &opts.settings, |_| gpu.matrix_add_pitched(&a, &b, &mut c, block).map(|_| ()))?;
    c.fill_bytes(POISON)?;
    let cfg = gpu.matrix_add_pitched(&a, &b, &mut c, block)?;
    c.copy_to_host(&mut got)?;
    verify(&format!("matrix_add_pitched {n} x {n} (pitch {})", c.pitch()), &got, &input.want, n)?;
    results.push(LayoutResult {
        layout: "pitched",
        kernel: crate::matrix::PITCHED_KERNEL,
        grid: grid2(&cfg),
        timing: Timing::new(stats, moved, &dtod),
    });

    let ms = |i: usize| results[i].timing.ms;
    Ok(LayoutReport {
        n,
        block: [block.x, block.y],
        bytes_moved: 3 * bytes,
        dtod,
        col_over_row: ms(1) / ms(0),
        pitched_over_linear: ms(2) / ms(0),
        pitch_bytes: c.pitch(),
        row_bytes: c.row_bytes(),
        row_alignment: c.row_alignment(),
        pitch_alignment: gpu.pitch_alignment()?,
        overhead_pct: 100.0 * c.overhead(),
        results,
    })
}

/// Theoretical occupancy in percent: resident warps over the SM's maximum.
pub fn theoretical_occupancy_pct(blocks_per_sm: u32, threads: u64, warp: u32, max_threads_per_sm: u32) -> f64 {
    let warps_per_block = threads.div_ceil(u64::from(warp.max(1)));
    let max_warps = u64::from(max_threads_per_sm / warp.max(1)).max(1);
    100.0 * (u64::from(blocks_per_sm) * warps_per_block) as f64 / max_warps as f64
}

fn measure_sweep(gpu: &Gpu, opts: &MatrixOptions) -> BenchResult<SweepReport> {
    let n = opts.sweep_n;
    let elems = n.checked_mul(n).ok_or_else(|| BenchError::Options(format!("{n}^2 overflows")))?;
    let bytes = (elems * F32) as u64;
    let moved = 3.0 * bytes as f64;
    let limits = gpu.info().limits;

    // Refusals first: a shape over the limits never allocates or launches.
    let mut plan = Vec::new();
    for &shape in &opts.shapes {
        let refused = opts
            .variants
            .iter()
            .find_map(|v| gpu.matrix_launch_config(v.kernel(), n, n, shape, v.items()).err())
            .map(|e| e.to_string());
        plan.push((shape, refused));
    }

    let dtod = harness::measure_dtod(gpu, &opts.settings, bytes)?;
    let input = inputs(elems)?;
    let a = gpu.upload(&input.a)?;
    let b = gpu.upload(&input.b)?;
    let mut c = gpu.alloc_zeroed::<f32>(elems)?;
    let mut got = vec![0f32; elems];
    let mut shapes = Vec::new();
    for (shape, refused) in plan {
        let mut results = Vec::new();
        if refused.is_none() {
            for &v in &opts.variants {
                let launch = |c: &mut DeviceBuffer<f32>| {
                    gpu.sum_matrix_2d(&a.as_view(), &b.as_view(), &mut c.as_view_mut(), n, n, shape, v)
                };
                let stats = harness::measure(gpu, &opts.settings, |_| launch(&mut c).map(|_| ()))?;
                c.fill_bytes(POISON)?;
                let cfg = launch(&mut c)?;
                c.copy_to_host(&mut got)?;
                verify(&format!("{} {n} x {n} block {shape}", v.kernel()), &got, &input.want, n)?;
                let threads = shape.threads();
                let blocks_per_sm = gpu.max_active_blocks_per_sm(v.kernel(), threads as u32, 0)?;
                results.push(VariantResult {
                    variant: v.name(),
                    kernel: v.kernel(),
                    grid: grid2(&cfg),
                    blocks_per_sm,
                    theoretical_occupancy_pct: theoretical_occupancy_pct(
                        blocks_per_sm,
                        threads,
                        limits.warp_size,
                        limits.max_threads_per_sm,
                    ),
                    timing: Timing::new(stats, moved, &dtod),
                });
            }
        }
        shapes.push(ShapeResult { block: [shape.x, shape.y], threads: shape.threads(), refused, results });
    }
    let goal = Goal::evaluate(n, &shapes);
    Ok(SweepReport { n, bytes_moved: 3 * bytes, dtod, shapes, goal })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(ms: f64) -> Stats {
        Stats::from_samples(&[ms], 1).unwrap()
    }

    fn dtod() -> DtodReference {
        DtodReference { bytes: 1 << 30, gbps: 3000.0, stats: stats(0.7) }
    }

    fn shape(x: u32, y: u32, x1_pct: Option<f64>, x4_pct: Option<f64>) -> ShapeResult {
        let moved = 3.0 * (1u64 << 30) as f64;
        let floor = dtod().floor_ms(moved);
        let r = |v: SumVariant, p: f64| VariantResult {
            variant: v.name(),
            kernel: v.kernel(),
            grid: [1, 1],
            blocks_per_sm: 2,
            theoretical_occupancy_pct: 100.0,
            timing: Timing::new(stats(floor / (p / 100.0)), moved, &dtod()),
        };
        let mut results = Vec::new();
        if let Some(p) = x1_pct {
            results.push(r(SumVariant::X1, p));
        }
        if let Some(p) = x4_pct {
            results.push(r(SumVariant::X4, p));
        }
        ShapeResult { block: [x, y], threads: x as u64 * y as u64, refused: None, results }
    }

    #[test]
    fn percent_of_floor_is_dtod_relative() {
        let s = shape(32, 16, Some(91.0), None);
        let t = &s.of(SumVariant::X1).unwrap().timing;
        assert!((t.pct_of_floor - 91.0).abs() < 1e-9);
        assert!((t.gbps - 0.91 * 3000.0).abs() < 1e-6, "{}", t.gbps);
    }

    #[test]
    fn goal_uses_the_lesson_kernel_at_16384() {
        let shapes = vec![shape(32, 32, Some(85.0), Some(95.0)), shape(128, 1, Some(92.5), Some(93.0))];
        let g = Goal::evaluate(GOAL_N, &shapes);
        assert_eq!((g.met, g.best_shape, g.best_x4_shape), (Some(true), Some([128, 1]), Some([32, 32])));
        assert_eq!(
            g.summary_line(GOAL_N),
            "goal best sum_matrix_2d block shape >= 90% of the DRAM floor at 16384^2: MET ((128, 1): 92.5%; x4 \
             best (32, 32): 95.0%)"
        );
        let worse = vec![shape(32, 32, Some(85.0), Some(95.0))];
        assert_eq!(Goal::evaluate(GOAL_N, &worse).met, Some(false));
        let g = Goal::evaluate(4096, &shapes);
        assert_eq!(g.met, None);
        assert!(g.summary_line(4096).contains("NOT EVALUATED (swept 4096^2"), "{}", g.summary_line(4096));
        assert_eq!(Goal::evaluate(GOAL_N, &[]).met, None);
    }

    #[test]
    fn occupancy() {
        // 2 blocks of 1024 threads = 64 warps of 64: 100%.
        assert_eq!(theoretical_occupancy_pct(2, 1024, 32, 2048), 100.0);
        // (16, 16): 256 threads, 8 blocks = 64 warps.
        assert_eq!(theoretical_occupancy_pct(8, 256, 32, 2048), 100.0);
        // 40 threads take 2 warps.
        assert_eq!(theoretical_occupancy_pct(16, 40, 32, 2048), 50.0);
    }

    #[test]
    fn inputs_are_finite_nonzero_and_mixed() {
        let v: Vec<f32> = (0..100_000).map(|i| input_value(i, 7)).collect();
        assert!(v.iter().all(|x| x.is_finite() && x.abs() >= 1.0));
        assert!(v.iter().any(|&x| x < 0.0) && v.iter().any(|&x| x > 0.0));
    }

    #[test]
    fn tables_and_outputs() {
        let mut refused = shape(256, 8, None, None);
        refused.refused = Some(
            "launch of `sum_matrix_2d` ... refused: the device's maximum threads per block is 1024, got 2048".into(),
        );
        let shapes = vec![shape(32, 16, Some(91.0), Some(94.0)), shape(128, 1, Some(89.0), Some(93.0)), refused];
        let sweep = SweepReport {
            n: GOAL_N,
            bytes_moved: 3 << 30,
            dtod: dtod(),
            goal: Goal::evaluate(GOAL_N, &shapes),
            shapes,
        };
        let text = sweep.table().render();
        assert!(text.contains("91.0%") && text.contains("94.0%"), "{text}");
        assert!(text.lines().last().unwrap().contains("refused: launch of `sum_matrix_2d`"), "{text}");
        let series = sweep.series();
        assert_eq!(series.len(), 4, "{series:?}");
        assert_eq!(series[0].name, "x1 block.y = 1");
        let r = MatrixReport {
            suite: "matrix",
            device: DeviceSummary {
                name: "Test GPU".into(),
                compute_capability: "9.0".into(),
                sm_count: 132,
                l2_bytes: 50 << 20,
                total_memory_bytes: 80 << 30,
                theoretical_dram_gbps: 3352.3,
                ptx_arch: 90,
                embedded_ptx_archs: vec![70, 90],
                driver_version: 13000,
            },
            settings: Settings::default(),
            units: UNITS_NOTE,
            layouts: None,
            sweep: Some(sweep),
        };
        let dir = std::env::temp_dir().join(format!("coalesce-matrix-report-{}", std::process::id()));
        let paths = r.write(&dir).unwrap();
        assert_eq!(paths.len(), 2);
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&paths[0]).unwrap()).unwrap();
        assert_eq!(v["sweep"]["goal"]["met"], true);
        assert_eq!(v["sweep"]["shapes"][2]["block"], serde_json::json!([256, 8]));
        assert!(v["sweep"]["shapes"][2]["refused"].as_str().unwrap().contains("1024"));
        assert!(v["sweep"]["shapes"][0]["results"][0]["timing"]["pct_of_floor"].is_number());
        assert!(std::fs::read_to_string(&paths[1]).unwrap().contains("block.y = 16"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
