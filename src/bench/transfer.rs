//! The `transfer` suite (lesson 004, section 5.3.1: data transfer between
//! host and device). Three experiments:
//!
//! 1. **Paths × sizes.** Host-to-device and device-to-host transfers of
//!    4 KiB to 1 GiB (powers of four) through four paths:
//!    * *pageable*: a `Vec<u32>` copied with [`Gpu::htod`] / [`Gpu::dtoh`]
//!      (the driver stages it through its own page-locked buffer);
//!    * *pinned*: a [`PinnedBuffer`] copied with the library's pinned path
//!      ([`PinnedBuffer::copy_to_device`] / [`PinnedBuffer::copy_from_device`]);
//!    * *driver*: the same pinned memory copied by the raw driver calls
//!      `cuMemcpyHtoD_v2` / `cuMemcpyDtoH_v2` (through `cust::sys`), the
//!      reference the pinned path is judged against;
//!    * *mapped*: a [`MappedBuffer`] read (or written) directly by a kernel,
//!      no copy at all ([`Gpu::zero_copy_to_device`] /
//!      [`Gpu::zero_copy_from_device`]).
//!
//!    Every transfer is synchronous (it returns when the data has arrived),
//!    timed with CUDA events by [`harness::measure`] (warm-up, median;
//!    fewer samples at the largest sizes), and verified once: the
//!    destination is poisoned, the path copies, the result is compared
//!    with the source.
//! 2. **Batching.** The same bytes (64 MiB) as one pinned transfer and as
//!    16, 256, 4096 and 65536 transfers; the per-transfer overhead is
//!    `(t_N − t_1) / (N − 1)`.
//! 3. **Overlap.** [`Gpu::pipeline`]: 256 MiB in 16 chunks, each copied in,
//!    transformed by `scale_add_u32` (its step count calibrated so the
//!    kernel takes about as long as a chunk's copy) and copied out; once on
//!    one stream (serial) and once spread over four streams. The timeline
//!    of CUDA events at every stage boundary is printed, written to the
//!    JSON and drawn (`transfer-timeline.svg`); the outputs are checked
//!    against the CPU reference.
//!
//! Units: GB = 1e9 bytes. A transfer of `n` bytes counts `n`: each byte
//! crosses the host link once (unlike the device-memory suites, where a
//! copy's bytes are counted read + written). The device-to-device copy
//! bandwidth of the same run is given for comparison (read + written, as
//! elsewhere).

use std::path::{Path as FsPath, PathBuf};

use serde::Serialize;

use super::copy::{DeviceSummary, POISON, pattern_word};
use super::harness::{self, DtodReference, Settings, Stats};
use super::report::{self, Series, Table, human_bytes};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::transfer::chunk_range;
use crate::{DeviceBuffer, Gpu, MappedBuffer, PinnedBuffer, PipelineRun, ScaleAdd, Stage, Stream};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "transfer",
    about: "host <-> device: pageable / pinned / mapped 4 KiB..1 GiB, batching, copy/kernel overlap on streams",
};

/// Sizes from which the goal applies (64 MiB).
pub const GOAL_MIN_BYTES: u64 = 64 << 20;

/// The goal: the library's pinned path at least this fraction of the raw
/// driver copy's bandwidth, both directions.
pub const GOAL_RATIO: f64 = 0.95;

/// Units of every figure in the suite's output.
pub const UNITS_NOTE: &str =
    "GB = 1e9 bytes; a transfer of n bytes counts n (each byte crosses the host link once); times in ms";

/// Samples at sizes of 256 MiB and more (a pageable 1 GiB copy takes
/// 0.1–0.3 s).
pub const LARGE_REPS: usize = 10;

/// Samples of the slowest measurements: pageable copies of 256 MiB and
/// more, batches of 4096 transfers and more.
pub const SLOW_REPS: usize = 5;

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct TransferOptions {
    /// Smallest transfer of the sweep, bytes (default 4 KiB); sizes are the
    /// powers of four from 4 KiB in `min_bytes..=max_bytes`.
    pub min_bytes: u64,
    /// Largest transfer of the sweep (default 1 GiB).
    pub max_bytes: u64,
    /// Run the paths × sizes sweep.
    pub sweep: bool,
    /// Run the batching experiment.
    pub batching: bool,
    /// Run the overlap experiment.
    pub overlap: bool,
    /// Bytes of the batching experiment (default 64 MiB).
    pub batch_bytes: u64,
    /// Transfer counts of the batching experiment (default 1, 16, 256,
    /// 4096, 65536).
    pub batch_counts: Vec<usize>,
    /// Bytes of the overlap experiment (default 256 MiB).
    pub pipeline_bytes: u64,
    /// Chunks of the overlap experiment (default 16).
    pub pipeline_chunks: usize,
    /// Streams of the overlapped run (default 4).
    pub pipeline_streams: usize,
    /// Steps of `scale_add_u32` per element; `None` calibrates them so the
    /// kernel takes about as long as one chunk's copy.
    pub pipeline_k: Option<u32>,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// Where `transfer.json` and the SVGs go (default `bench-out`).
    pub out_dir: PathBuf,
}

impl Default for TransferOptions {
    fn default() -> Self {
        TransferOptions {
            min_bytes: 4 << 10,
            max_bytes: 1 << 30,
            sweep: true,
            batching: true,
            overlap: true,
            batch_bytes: 64 << 20,
            batch_counts: vec![1, 16, 256, 4096, 65536],
            pipeline_bytes: 256 << 20,
            pipeline_chunks: 16,
            pipeline_streams: 4,
            pipeline_k: None,
            settings: Settings::default(),
            out_dir: PathBuf::from("bench-out"),
        }
    }
}

impl TransferOptions {
    /// A smoke run: 4 KiB..64 MiB, 16 MiB batches up to 4096 transfers, a
    /// 64 MiB pipeline, 5 samples.
    pub fn quick() -> Self {
        TransferOptions {
            max_bytes: 64 << 20,
            batch_bytes: 16 << 20,
            batch_counts: vec![1, 16, 256, 4096],
            pipeline_bytes: 64 << 20,
            settings: Settings { reps: 5, ..Settings::default() },
            ..TransferOptions::default()
        }
    }
}

/// The powers of four from 4 KiB (4 KiB, 16 KiB, 64 KiB, …) in `min..=max`.
pub fn sizes(min: u64, max: u64) -> Vec<u64> {
    (0..26).map(|e| (4u64 << 10) << (2 * e)).filter(|&s| s >= min && s <= max).collect()
}

/// Transfer direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Direction {
    /// Host to device.
    HtoD,
    /// Device to host.
    DtoH,
}

impl Direction {
    /// Both, in table order.
    pub const ALL: [Direction; 2] = [Direction::HtoD, Direction::DtoH];

    /// `HtoD` / `DtoH`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::HtoD => "HtoD",
            Direction::DtoH => "DtoH",
        }
    }
}

/// How the bytes travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Path {
    /// `Vec<u32>` through the driver's staging buffer.
    Pageable,
    /// The library's pinned path.
    Pinned,
    /// `cuMemcpyHtoD_v2` / `cuMemcpyDtoH_v2` on the same pinned memory.
    Driver,
    /// A kernel accessing mapped host memory directly.
    Mapped,
}

impl Path {
    /// Every path, in table order.
    pub const ALL: [Path; 4] = [Path::Pageable, Path::Pinned, Path::Driver, Path::Mapped];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Path::Pageable => "pageable",
            Path::Pinned => "pinned",
            Path::Driver => "driver",
            Path::Mapped => "mapped",
        }
    }

    /// Settings for this path at `bytes`: fewer samples for the largest
    /// sizes (see [`LARGE_REPS`], [`SLOW_REPS`]).
    pub fn settings(self, bytes: u64, base: &Settings) -> Settings {
        match (self, bytes >= 256 << 20) {
            (Path::Pageable, true) => Settings { reps: base.reps.min(SLOW_REPS), warmup: base.warmup.min(1), ..*base },
            (_, true) => Settings { reps: base.reps.min(LARGE_REPS), ..*base },
            _ => *base,
        }
    }
}

/// One path's result at one size and direction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathResult {
    /// The path.
    pub path: Path,
    /// Bytes transferred / median time, GB/s.
    pub gbps: f64,
    /// Per-transfer time statistics.
    pub stats: Stats,
}

/// Every path at one size and direction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeResult {
    /// Bytes per transfer.
    pub bytes: u64,
    /// The same, readable.
    pub size: String,
    /// The direction.
    pub direction: Direction,
    /// Per path, in [`Path::ALL`] order.
    pub results: Vec<PathResult>,
}

impl SizeResult {
    /// Bandwidth of `path`, GB/s.
    pub fn gbps(&self, path: Path) -> Option<f64> {
        self.results.iter().find(|r| r.path == path).map(|r| r.gbps)
    }

    /// Bandwidth ratio `a / b`.
    pub fn ratio(&self, a: Path, b: Path) -> Option<f64> {
        Some(self.gbps(a)? / self.gbps(b)?).filter(|r| r.is_finite())
    }

    /// Whether the goal holds here: `None` below [`GOAL_MIN_BYTES`].
    pub fn goal_met(&self) -> Option<bool> {
        if self.bytes < GOAL_MIN_BYTES {
            return None;
        }
        Some(self.ratio(Path::Pinned, Path::Driver).is_some_and(|r| r >= GOAL_RATIO))
    }
}

/// The goal, evaluated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Goal {
    /// The goal in words.
    pub description: String,
    /// `None` when no size large enough was measured.
    pub met: Option<bool>,
    /// Lowest pinned / driver ratio among the sizes it applies to.
    pub min_ratio: Option<f64>,
    /// Where: bytes.
    pub min_ratio_at_bytes: Option<u64>,
    /// Where: direction.
    pub min_ratio_direction: Option<Direction>,
}

impl Goal {
    /// Judges the goal on the sweep.
    pub fn evaluate(sweep: &[SizeResult]) -> Goal {
        let worst = sweep
            .iter()
            .filter(|s| s.bytes >= GOAL_MIN_BYTES)
            .map(|s| (s.ratio(Path::Pinned, Path::Driver).unwrap_or(0.0), s.bytes, s.direction))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        Goal {
            description: format!(
                "library pinned path >= {:.0}% of raw cuMemcpyHtoD_v2/cuMemcpyDtoH_v2 for sizes >= {}",
                GOAL_RATIO * 100.0,
                human_bytes(GOAL_MIN_BYTES)
            ),
            met: worst.map(|w| w.0 >= GOAL_RATIO),
            min_ratio: worst.map(|w| w.0),
            min_ratio_at_bytes: worst.map(|w| w.1),
            min_ratio_direction: worst.map(|w| w.2),
        }
    }

    /// `goal …: MET (min 99.2% at 256 MiB DtoH)`.
    pub fn summary_line(&self) -> String {
        let verdict = match (self.met, self.min_ratio, self.min_ratio_at_bytes, self.min_ratio_direction) {
            (Some(met), Some(r), Some(at), Some(d)) => format!(
                "{} (min {:.1}% at {} {})",
                if met { "MET" } else { "NOT MET" },
                r * 100.0,
                human_bytes(at),
                d.name()
            ),
            _ => format!("NOT EVALUATED (no size >= {} was measured)", human_bytes(GOAL_MIN_BYTES)),
        };
        format!("goal {}: {verdict}", self.description)
    }
}

/// One transfer count of the batching experiment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BatchResult {
    /// Direction.
    pub direction: Direction,
    /// Transfers the bytes were split into.
    pub transfers: usize,
    /// Bytes per transfer (the last may be a little larger).
    pub bytes_per_transfer: u64,
    /// Median time for all of them, ms.
    pub total_ms: f64,
    /// Total bytes / median time, GB/s.
    pub gbps: f64,
    /// `(t_N − t_1) / (N − 1)`, µs; `None` for one transfer.
    pub overhead_us: Option<f64>,
    /// Time statistics of the whole batch.
    pub stats: Stats,
}

/// A stage span as recorded in the JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpanRecord {
    /// Chunk index.
    pub chunk: usize,
    /// Stream index.
    pub stream: usize,
    /// `HtoD`, `kernel` or `DtoH`.
    pub stage: &'static str,
    /// Start, ms after the run's first event.
    pub start_ms: f64,
    /// End, ms after the run's first event.
    pub end_ms: f64,
}

/// One pipeline configuration (serial or overlapped), measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipelineResult {
    /// `serial` or `overlapped`.
    pub name: &'static str,
    /// Streams.
    pub streams: usize,
    /// Chunks.
    pub chunks: usize,
    /// Total time (first event to last) statistics over the runs.
    pub stats: Stats,
    /// Host-link bytes (in + out) / median total, GB/s.
    pub gbps: f64,
    /// The timeline of the run whose total was closest to the median.
    pub timeline: Vec<SpanRecord>,
}

impl PipelineResult {
    /// Sum of the span lengths of `stage`, ms.
    pub fn stage_sum_ms(&self, stage: Stage) -> f64 {
        self.timeline.iter().filter(|s| s.stage == stage.name()).map(|s| s.end_ms - s.start_ms).sum()
    }
}

/// The overlap experiment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverlapReport {
    /// Bytes of input (and of output).
    pub bytes: u64,
    /// The compute stage: multiplier, addend, steps.
    pub a: u32,
    /// Addend.
    pub b: u32,
    /// Steps per element.
    pub k: u32,
    /// True when `k` was calibrated in this run.
    pub k_calibrated: bool,
    /// One chunk's pinned host-to-device copy, median ms (calibration).
    pub chunk_copy_ms: Option<f64>,
    /// One chunk's kernel at the chosen `k`, median ms.
    pub chunk_kernel_ms: f64,
    /// One stream.
    pub serial: PipelineResult,
    /// Several streams.
    pub overlapped: PipelineResult,
    /// serial / overlapped median total.
    pub speedup: f64,
    /// The bound overlap can reach: serial total / the largest per-stage
    /// sum of the serial run (the busiest engine's share).
    pub speedup_bound: f64,
}

/// Everything the suite measured; written as `transfer.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransferReport {
    /// `"transfer"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// How each figure was measured.
    pub settings: Settings,
    /// The units note.
    pub units: &'static str,
    /// The driver's device-to-device copy in the same run (read + written).
    pub dtod: Option<DtodReference>,
    /// Paths × sizes, HtoD rows then DtoH rows, ascending sizes.
    pub sweep: Vec<SizeResult>,
    /// The goal.
    pub goal: Goal,
    /// Batching experiment.
    pub batching: Vec<BatchResult>,
    /// Bytes of the batching experiment.
    pub batch_bytes: u64,
    /// Overlap experiment.
    pub overlap: Option<OverlapReport>,
}

impl TransferReport {
    /// The sweep's table for one direction.
    pub fn sweep_table(&self, dir: Direction) -> Table {
        let mut t = Table::new([
            "size",
            "pageable",
            "pinned",
            "driver",
            "mapped (GB/s)",
            "pinned/pageable",
            "mapped/pinned",
            "pinned/driver %",
            "goal",
        ]);
        let num = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "-".to_string(), f);
        for s in self.sweep.iter().filter(|s| s.direction == dir) {
            let mut row = vec![s.size.clone()];
            for p in Path::ALL {
                row.push(num(s.gbps(p), &|g| format!("{g:.2}")));
            }
            row.push(num(s.ratio(Path::Pinned, Path::Pageable), &|r| format!("{r:.2}x")));
            row.push(num(s.ratio(Path::Mapped, Path::Pinned), &|r| format!("{r:.2}x")));
            row.push(num(s.ratio(Path::Pinned, Path::Driver), &|r| format!("{:.1}%", r * 100.0)));
            row.push(
                match s.goal_met() {
                    Some(true) => "met",
                    Some(false) => "not met",
                    None => "-",
                }
                .to_string(),
            );
            t.row(row);
        }
        t
    }

    /// The batching table.
    pub fn batching_table(&self) -> Table {
        let mut t = Table::new(["direction", "transfers", "bytes each", "total ms", "GB/s", "overhead/transfer (us)"]);
        for b in &self.batching {
            t.row([
                b.direction.name().to_string(),
                b.transfers.to_string(),
                human_bytes(b.bytes_per_transfer),
                format!("{:.3}", b.total_ms),
                format!("{:.2}", b.gbps),
                b.overhead_us.map_or_else(|| "-".to_string(), |o| format!("{o:.2}")),
            ]);
        }
        t
    }

    /// The sweep's plot: one line per path and direction.
    pub fn series(&self) -> Vec<Series> {
        let mut out = Vec::new();
        for d in Direction::ALL {
            for p in Path::ALL {
                let points = self
                    .sweep
                    .iter()
                    .filter(|s| s.direction == d)
                    .filter_map(|s| Some((s.bytes as f64, s.gbps(p)?)))
                    .collect::<Vec<_>>();
                if !points.is_empty() {
                    out.push(Series { name: format!("{} {}", d.name(), p.name()), points });
                }
            }
        }
        out
    }

    /// Writes `transfer.json`, `transfer.svg` (when the sweep ran) and
    /// `transfer-timeline.svg` (when the overlap experiment ran) into `dir`;
    /// returns the paths written.
    pub fn write(&self, dir: &FsPath) -> BenchResult<Vec<PathBuf>> {
        let json = dir.join("transfer.json");
        report::write_json(&json, self)?;
        let mut written = vec![json];
        if !self.sweep.is_empty() {
            let svg = dir.join("transfer.svg");
            let title = format!(
                "host <-> device transfer bandwidth vs size: {}\npageable Vec, pinned (library), pinned (raw driver copy), \
                 mapped (kernel reads/writes host memory); synchronous transfers",
                self.device.name
            );
            report::plot_svg(
                &svg,
                &title,
                "bytes per transfer (log2 scale)",
                "GB/s (1e9 B/s, bytes counted once)",
                &self.series(),
            )?;
            written.push(svg);
        }
        if let Some(o) = &self.overlap {
            let svg = dir.join("transfer-timeline.svg");
            let title = format!(
                "copy / kernel overlap: {} in {} chunks, {}\nserial {:.2} ms on 1 stream, overlapped {:.2} ms on {} streams: {:.2}x",
                human_bytes(o.bytes),
                o.serial.chunks,
                self.device.name,
                o.serial.stats.median_ms,
                o.overlapped.stats.median_ms,
                o.overlapped.streams,
                o.speedup
            );
            let runs: Vec<report::TimelineRun<'_>> = [&o.serial, &o.overlapped]
                .iter()
                .map(|r| report::TimelineRun { name: r.name.to_string(), rows: r.streams, spans: &r.timeline })
                .collect();
            report::draw_timeline(&svg, &title, &runs)
                .map_err(|e| BenchError::Output { path: svg.clone(), source: std::io::Error::other(e) })?;
            written.push(svg);
        }
        Ok(written)
    }
}

/// Runs the suite on `gpu`: measures, verifies, prints the tables, the goal
/// and the timeline to stdout (progress to stderr), writes the JSON and
/// SVGs into `opts.out_dir`, and returns the report.
pub fn run(gpu: &Gpu, opts: &TransferOptions) -> BenchResult<TransferReport> {
    let report = measure_suite(gpu, opts)?;
    println!("host <-> device transfers on {} ({UNITS_NOTE})", report.device.name);
    if let Some(d) = &report.dtod {
        println!(
            "device-to-device copy in this run: {:.1} GB/s (read + written, {} copies)",
            d.gbps,
            human_bytes(d.bytes)
        );
    }
    for dir in Direction::ALL {
        if report.sweep.iter().any(|s| s.direction == dir) {
            println!("\n{} (synchronous transfers; GB/s = bytes / median time)", dir.name());
            println!("{}", report.sweep_table(dir));
        }
    }
    if !report.sweep.is_empty() {
        if let (Some(d), Some(best)) =
            (&report.dtod, report.sweep.iter().filter_map(|s| s.gbps(Path::Pinned)).reduce(f64::max))
        {
            println!(
                "the best pinned transfer ({best:.1} GB/s) moves bytes {:.0}x slower than device memory copies them \
                 ({:.0} GB/s read + written = {:.0} GB/s of copied bytes)",
                d.gbps / 2.0 / best,
                d.gbps,
                d.gbps / 2.0
            );
        }
        println!("{}", report.goal.summary_line());
    }
    if !report.batching.is_empty() {
        println!("\nbatching: {} as one transfer vs many (pinned, synchronous)", human_bytes(report.batch_bytes));
        println!("{}", report.batching_table());
    }
    if let Some(o) = &report.overlap {
        print_overlap(o);
    }
    let written = report.write(&opts.out_dir)?;
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
    Ok(report)
}

fn print_overlap(o: &OverlapReport) {
    println!(
        "\noverlap: {} in {} chunks; kernel y = a*x + b (wrapping u32) x {} steps{}; one chunk: kernel {:.3} ms{}",
        human_bytes(o.bytes),
        o.serial.chunks,
        o.k,
        if o.k_calibrated { " (calibrated)" } else { "" },
        o.chunk_kernel_ms,
        o.chunk_copy_ms.map_or_else(String::new, |c| format!(", pinned HtoD copy {c:.3} ms"))
    );
    for r in [&o.serial, &o.overlapped] {
        println!("\n{} run ({} stream(s)), ms after its first event:", r.name, r.streams);
        let mut t = Table::new([
            "chunk",
            "stream",
            "HtoD start",
            "HtoD end",
            "kernel start",
            "kernel end",
            "DtoH start",
            "DtoH end",
        ]);
        for c in 0..r.chunks {
            let spans: Vec<&SpanRecord> = r.timeline.iter().filter(|s| s.chunk == c).collect();
            let mut row = vec![c.to_string(), spans.first().map_or(0, |s| s.stream).to_string()];
            for s in &spans {
                row.push(format!("{:.3}", s.start_ms));
                row.push(format!("{:.3}", s.end_ms));
            }
            t.row(row);
        }
        println!("{t}");
    }
    println!(
        "\nserial {:.3} ms, overlapped {:.3} ms (medians of {} runs): speedup {:.2}x (bound from the serial run's \
         busiest stage: {:.2}x); both outputs match the CPU reference",
        o.serial.stats.median_ms, o.overlapped.stats.median_ms, o.serial.stats.reps, o.speedup, o.speedup_bound,
    );
}

/// Measures and verifies every part asked for (no table, no files).
pub fn measure_suite(gpu: &Gpu, opts: &TransferOptions) -> BenchResult<TransferReport> {
    if opts.settings.reps == 0 {
        return Err(BenchError::Options("--reps must be at least 1".into()));
    }
    let list = if opts.sweep { sizes(opts.min_bytes, opts.max_bytes) } else { vec![] };
    if opts.sweep && list.is_empty() {
        return Err(BenchError::Options(format!(
            "no size 4 KiB x 4^k between {} and {}",
            human_bytes(opts.min_bytes),
            human_bytes(opts.max_bytes)
        )));
    }
    let mut sweep = Vec::new();
    for &size in &list {
        eprintln!("transfer: {} ...", human_bytes(size));
        sweep.extend(measure_size(gpu, &opts.settings, size)?);
    }
    let dtod = match list.last() {
        Some(&largest) => Some(harness::measure_dtod(gpu, &opts.settings, largest.clamp(4 << 20, 256 << 20))?),
        None => None,
    };
    let batching = if opts.batching { measure_batching(gpu, opts)? } else { vec![] };
    let overlap = if opts.overlap { Some(measure_overlap(gpu, opts)?) } else { None };
    Ok(TransferReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        settings: opts.settings,
        units: UNITS_NOTE,
        dtod,
        goal: Goal::evaluate(&sweep),
        sweep,
        batching,
        batch_bytes: opts.batch_bytes,
        overlap,
    })
}

fn elems_of(bytes: u64) -> BenchResult<usize> {
    usize::try_from(bytes / 4)
        .map_err(|_| BenchError::Options(format!("{} does not fit this machine's address space", human_bytes(bytes))))
}

const POISON_WORD: u32 = u32::from_ne_bytes([POISON; 4]);

/// Compares `got` with `want`; a mismatch is a verification error naming
/// `what`.
fn verify(got: &[u32], want: &[u32], what: &str) -> BenchResult<()> {
    if let Some((i, g, w)) = crate::reference::first_mismatch(got, want)? {
        return Err(BenchError::Verification {
            suite: SUITE.name,
            message: format!(
                "{what}: element {i} is {g:#010x}, expected {w:#010x}{}",
                if g == POISON_WORD { " (never written: still the poison pattern)" } else { "" }
            ),
        });
    }
    Ok(())
}

/// The host buffers of one size: every path's source (or destination).
struct Hosts {
    pageable: Vec<u32>,
    pinned: PinnedBuffer<u32>,
    mapped: MappedBuffer<u32>,
}

/// One synchronous transfer of the whole size through `path`.
fn transfer(gpu: &Gpu, h: &mut Hosts, dev: &mut DeviceBuffer<u32>, path: Path, dir: Direction) -> BenchResult<()> {
    match (path, dir) {
        (Path::Pageable, Direction::HtoD) => gpu.htod(&h.pageable, &mut dev.as_view_mut())?,
        (Path::Pageable, Direction::DtoH) => gpu.dtoh(&dev.as_view(), &mut h.pageable)?,
        (Path::Pinned, Direction::HtoD) => h.pinned.copy_to_device(&mut dev.as_view_mut())?,
        (Path::Pinned, Direction::DtoH) => h.pinned.copy_from_device(&dev.as_view())?,
        (Path::Driver, d) => raw_driver_copy(dev, &mut h.pinned, d)?,
        (Path::Mapped, Direction::HtoD) => {
            gpu.zero_copy_to_device(&h.mapped, &mut dev.as_view_mut())?;
        }
        (Path::Mapped, Direction::DtoH) => {
            gpu.zero_copy_from_device(&dev.as_view(), &mut h.mapped)?;
        }
    }
    Ok(())
}

/// The reference: the driver's synchronous `cuMemcpyHtoD_v2` /
/// `cuMemcpyDtoH_v2`, called directly, on the pinned buffer.
fn raw_driver_copy(dev: &mut DeviceBuffer<u32>, pinned: &mut PinnedBuffer<u32>, dir: Direction) -> BenchResult<()> {
    if dev.len() != pinned.len() {
        return Err(
            crate::Error::LengthMismatch { op: "raw_driver_copy", expected: dev.len(), got: pinned.len() }.into()
        );
    }
    let bytes = dev.byte_len();
    if bytes == 0 {
        return Ok(());
    }
    let d = dev.device_ptr().0;
    // SAFETY: both sides hold `bytes` bytes: a live device allocation of
    // the current context (every library call on this thread made it
    // current) and a page-locked host buffer, each borrowed for the call;
    // both calls return when the copy has completed.
    let (op, r) = unsafe {
        match dir {
            Direction::HtoD => ("cuMemcpyHtoD_v2", cust::sys::cuMemcpyHtoD_v2(d, pinned.as_ptr().cast(), bytes)),
            Direction::DtoH => ("cuMemcpyDtoH_v2", cust::sys::cuMemcpyDtoH_v2(pinned.as_mut_ptr().cast(), d, bytes)),
        }
    };
    if r != cust::sys::CUresult::CUDA_SUCCESS {
        return Err(crate::Error::InvalidArgument { op, message: format!("the driver returned {r:?}") }.into());
    }
    Ok(())
}

fn measure_size(gpu: &Gpu, base: &Settings, size: u64) -> BenchResult<Vec<SizeResult>> {
    let n = elems_of(size)?;
    let want: Vec<u32> = (0..n).map(pattern_word).collect();
    let mut h =
        Hosts { pageable: want.clone(), pinned: gpu.pinned_from_slice(&want)?, mapped: gpu.mapped_from_slice(&want)? };
    let mut dev = gpu.alloc_zeroed::<u32>(n)?;
    let mut check = vec![0u32; n];
    let mut out = Vec::new();
    for dir in Direction::ALL {
        let mut results = Vec::new();
        for path in Path::ALL {
            let s = path.settings(size, base);
            let stats = harness::measure(gpu, &s, |_| transfer(gpu, &mut h, &mut dev, path, dir))?;
            // Verification: poison the destination, transfer once, compare.
            let what = format!("{} {} of {}", path.name(), dir.name(), human_bytes(size));
            match dir {
                Direction::HtoD => {
                    dev.fill_bytes(POISON)?;
                    transfer(gpu, &mut h, &mut dev, path, dir)?;
                    dev.copy_to_host(&mut check)?;
                    verify(&check, &want, &what)?;
                }
                Direction::DtoH => {
                    let host: &mut [u32] = match path {
                        Path::Pageable => &mut h.pageable,
                        Path::Pinned | Path::Driver => &mut h.pinned,
                        Path::Mapped => &mut h.mapped,
                    };
                    host.fill(POISON_WORD);
                    transfer(gpu, &mut h, &mut dev, path, dir)?;
                    let got: &[u32] = match path {
                        Path::Pageable => &h.pageable,
                        Path::Pinned | Path::Driver => &h.pinned,
                        Path::Mapped => &h.mapped,
                    };
                    verify(got, &want, &what)?;
                }
            }
            results.push(PathResult { path, gbps: harness::gbps(size as f64, stats.median_ms), stats });
        }
        out.push(SizeResult { bytes: size, size: human_bytes(size), direction: dir, results });
    }
    Ok(out)
}

fn measure_batching(gpu: &Gpu, opts: &TransferOptions) -> BenchResult<Vec<BatchResult>> {
    let n = elems_of(opts.batch_bytes)?;
    if n == 0 || opts.batch_counts.iter().any(|&c| c == 0 || c > n) {
        return Err(BenchError::Options(format!(
            "batching: every transfer count must be between 1 and {n} (the batch's u32 elements)"
        )));
    }
    eprintln!("transfer: batching {} ...", human_bytes(opts.batch_bytes));
    let want: Vec<u32> = (0..n).map(|i| pattern_word(i ^ 0x5555)).collect();
    let mut pinned = gpu.pinned_from_slice(&want)?;
    let mut dev = gpu.alloc_zeroed::<u32>(n)?;
    let mut check = vec![0u32; n];
    let mut out = Vec::new();
    for dir in Direction::ALL {
        let mut single_ms = None;
        for &count in &opts.batch_counts {
            let s = if count >= 4096 {
                Settings {
                    reps: opts.settings.reps.min(SLOW_REPS),
                    warmup: opts.settings.warmup.min(1),
                    ..opts.settings
                }
            } else {
                opts.settings
            };
            let op = |pinned: &mut PinnedBuffer<u32>, dev: &mut DeviceBuffer<u32>| -> BenchResult<()> {
                for c in 0..count {
                    let r = chunk_range(n, count, c);
                    match dir {
                        Direction::HtoD => gpu.htod(&pinned[r.clone()], &mut dev.view_mut(r)?)?,
                        Direction::DtoH => gpu.dtoh(&dev.view(r.clone())?, &mut pinned[r])?,
                    }
                }
                Ok(())
            };
            let stats = harness::measure(gpu, &s, |_| op(&mut pinned, &mut dev))?;
            let what = format!("{count} {} transfers of {}", dir.name(), human_bytes(opts.batch_bytes));
            match dir {
                Direction::HtoD => {
                    dev.fill_bytes(POISON)?;
                    op(&mut pinned, &mut dev)?;
                    dev.copy_to_host(&mut check)?;
                    verify(&check, &want, &what)?;
                }
                Direction::DtoH => {
                    pinned.fill(POISON_WORD);
                    op(&mut pinned, &mut dev)?;
                    verify(&pinned, &want, &what)?;
                }
            }
            let t = stats.median_ms;
            if count == 1 {
                single_ms = Some(t);
            }
            out.push(BatchResult {
                direction: dir,
                transfers: count,
                bytes_per_transfer: opts.batch_bytes / count as u64,
                total_ms: t,
                gbps: harness::gbps(opts.batch_bytes as f64, t),
                overhead_us: single_ms.filter(|_| count > 1).map(|t1| (t - t1) / (count - 1) as f64 * 1e3),
                stats,
            });
        }
    }
    Ok(out)
}

/// The index of the value closest to the median of `v`.
fn median_index(v: &[f64]) -> usize {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    idx.get(v.len() / 2).copied().unwrap_or(0)
}

fn spans(run: &PipelineRun) -> Vec<SpanRecord> {
    run.spans
        .iter()
        .map(|s| SpanRecord {
            chunk: s.chunk,
            stream: s.stream,
            stage: s.stage.name(),
            start_ms: s.start_ms,
            end_ms: s.end_ms,
        })
        .collect()
}

fn measure_overlap(gpu: &Gpu, opts: &TransferOptions) -> BenchResult<OverlapReport> {
    let n = elems_of(opts.pipeline_bytes)?;
    let (chunks, nstreams) = (opts.pipeline_chunks, opts.pipeline_streams);
    if n == 0 || chunks == 0 || chunks > n || nstreams == 0 {
        return Err(BenchError::Options(format!(
            "overlap: needs at least one stream and 1..={n} chunks (got {nstreams} streams, {chunks} chunks)"
        )));
    }
    eprintln!("transfer: overlap {} in {chunks} chunks on {nstreams} streams ...", human_bytes(opts.pipeline_bytes));
    let input_host: Vec<u32> = (0..n).map(|i| pattern_word(i ^ 0xAAAA)).collect();
    let input = gpu.pinned_from_slice(&input_host)?;
    let mut output = gpu.alloc_pinned::<u32>(n)?;
    let mut d_in = gpu.alloc_zeroed::<u32>(n)?;
    let mut d_out = gpu.alloc_zeroed::<u32>(n)?;
    let streams: Vec<Stream> = (0..nstreams).map(|_| gpu.new_stream()).collect::<Result<_, _>>()?;

    // Calibration on chunk 0: the copy time, and the kernel time per step.
    let m = chunk_range(n, chunks, 0).end;
    let s = &opts.settings;
    let (k, k_calibrated, chunk_copy_ms) = match opts.pipeline_k {
        Some(k) => (k, false, None),
        None => {
            let copy = harness::measure(gpu, s, |_| gpu.htod(&input[..m], &mut d_in.view_mut(0..m)?))?.median_ms;
            let probe = ScaleAdd::lcg(64);
            let kern =
                harness::measure(gpu, s, |_| gpu.scale_add(&d_in.view(0..m)?, &mut d_out.view_mut(0..m)?, probe))?
                    .median_ms;
            let k = (64.0 * copy / kern.max(1e-6)).round().clamp(1.0, f64::from(1u32 << 20)) as u32;
            (k, true, Some(copy))
        }
    };
    let op = ScaleAdd::lcg(k);
    let chunk_kernel_ms =
        harness::measure(gpu, s, |_| gpu.scale_add(&d_in.view(0..m)?, &mut d_out.view_mut(0..m)?, op))?.median_ms;

    let mut want = vec![0u32; n];
    op.reference(&input_host, &mut want)?;
    let reps = s.reps.min(LARGE_REPS);
    let mut results = Vec::new();
    for (name, used) in [("serial", &streams[..1]), ("overlapped", &streams[..])] {
        for _ in 0..s.warmup.min(1) {
            gpu.pipeline(used, &input, &mut output, &mut d_in, &mut d_out, chunks, op)?;
        }
        let mut runs = Vec::with_capacity(reps);
        for _ in 0..reps {
            runs.push(gpu.pipeline(used, &input, &mut output, &mut d_in, &mut d_out, chunks, op)?);
        }
        let totals: Vec<f64> = runs.iter().map(|r| r.total_ms).collect();
        let stats = Stats::from_samples(&totals, 1)
            .ok_or_else(|| BenchError::Options(format!("{name}: unusable pipeline times {totals:?}")))?;
        // Verification: poisoned output, one more run, CPU reference.
        output.fill(POISON_WORD);
        d_out.fill_bytes(POISON)?;
        gpu.pipeline(used, &input, &mut output, &mut d_in, &mut d_out, chunks, op)?;
        verify(&output, &want, &format!("{name} pipeline output"))?;
        let run = &runs[median_index(&totals)];
        results.push(PipelineResult {
            name,
            streams: run.streams,
            chunks: run.chunks,
            gbps: harness::gbps(2.0 * (4 * n) as f64, stats.median_ms),
            stats,
            timeline: spans(run),
        });
    }
    let overlapped = results.pop().ok_or_else(|| BenchError::Options("no overlapped run".into()))?;
    let serial = results.pop().ok_or_else(|| BenchError::Options("no serial run".into()))?;
    let busiest = Stage::ALL.iter().map(|&st| serial.stage_sum_ms(st)).fold(0.0f64, f64::max);
    Ok(OverlapReport {
        bytes: 4 * n as u64,
        a: op.a,
        b: op.b,
        k,
        k_calibrated,
        chunk_copy_ms,
        chunk_kernel_ms,
        speedup: serial.stats.median_ms / overlapped.stats.median_ms,
        speedup_bound: if busiest > 0.0 { serial.stats.median_ms / busiest } else { f64::NAN },
        serial,
        overlapped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_four_from_4k() {
        assert_eq!(sizes(4 << 10, 1 << 30).len(), 10);
        assert_eq!(sizes(4 << 10, 1 << 30)[..3], [4096, 16384, 65536]);
        assert_eq!(*sizes(4 << 10, 1 << 30).last().unwrap(), 1 << 30);
        assert_eq!(sizes(5000, 70000), vec![16384, 65536]);
        assert!(sizes(5000, 6000).is_empty());
        assert_eq!(*sizes(1, 64 << 20).last().unwrap(), 64 << 20);
    }

    #[test]
    fn fewer_samples_only_for_the_largest_sizes() {
        let base = Settings { reps: 20, warmup: 3, min_sample_ms: 0.2 };
        assert_eq!(Path::Pinned.settings(64 << 20, &base), base);
        assert_eq!(Path::Pageable.settings(64 << 20, &base), base);
        assert_eq!(Path::Pinned.settings(1 << 30, &base).reps, LARGE_REPS);
        let p = Path::Pageable.settings(1 << 30, &base);
        assert_eq!((p.reps, p.warmup), (SLOW_REPS, 1));
        let few = Settings { reps: 3, ..base };
        assert_eq!(Path::Driver.settings(1 << 30, &few).reps, 3);
    }

    fn stats(ms: f64) -> Stats {
        Stats::from_samples(&[ms], 1).unwrap()
    }

    fn size_result(bytes: u64, dir: Direction, gbps: [f64; 4]) -> SizeResult {
        SizeResult {
            bytes,
            size: human_bytes(bytes),
            direction: dir,
            results: Path::ALL
                .iter()
                .zip(gbps)
                .map(|(&path, g)| PathResult { path, gbps: g, stats: stats(1.0) })
                .collect(),
        }
    }

    #[test]
    fn goal_judges_both_directions_at_large_sizes() {
        let sweep = vec![
            size_result(4 << 10, Direction::HtoD, [1.0, 2.0, 4.0, 1.0]), // 50%, too small to count
            size_result(64 << 20, Direction::HtoD, [10.0, 50.0, 51.0, 40.0]),
            size_result(64 << 20, Direction::DtoH, [10.0, 48.0, 50.0, 40.0]),
            size_result(1 << 30, Direction::DtoH, [10.0, 50.0, 50.0, 40.0]),
        ];
        let g = Goal::evaluate(&sweep);
        assert_eq!(g.met, Some(true));
        assert_eq!((g.min_ratio_at_bytes, g.min_ratio_direction), (Some(64 << 20), Some(Direction::DtoH)));
        assert!(g.summary_line().ends_with("MET (min 96.0% at 64 MiB DtoH)"), "{}", g.summary_line());
        assert_eq!(sweep[0].goal_met(), None);
        assert_eq!(sweep[1].goal_met(), Some(true));

        let mut worse = sweep.clone();
        worse.push(size_result(256 << 20, Direction::HtoD, [10.0, 45.0, 50.0, 40.0]));
        let g = Goal::evaluate(&worse);
        assert_eq!(g.met, Some(false));
        assert!(g.summary_line().ends_with("NOT MET (min 90.0% at 256 MiB HtoD)"), "{}", g.summary_line());
        assert_eq!(worse[4].goal_met(), Some(false));
        assert!(Goal::evaluate(&sweep[..1]).summary_line().contains("NOT EVALUATED"));
    }

    fn pipeline(name: &'static str, streams: usize, total: f64) -> PipelineResult {
        let mut timeline = Vec::new();
        for c in 0..4 {
            let t0 = c as f64 * total / 6.0;
            for (i, st) in Stage::ALL.into_iter().enumerate() {
                let start = t0 + i as f64 * total / 6.0;
                timeline.push(SpanRecord {
                    chunk: c,
                    stream: c % streams,
                    stage: st.name(),
                    start_ms: start,
                    end_ms: start + total / 6.0,
                });
            }
        }
        PipelineResult { name, streams, chunks: 4, stats: stats(total), gbps: 1.0, timeline }
    }

    #[test]
    fn report_tables_json_and_plots() {
        let sweep = vec![
            size_result(4 << 10, Direction::HtoD, [1.0, 2.0, 4.0, 1.5]),
            size_result(64 << 20, Direction::HtoD, [10.0, 50.0, 51.0, 40.0]),
            size_result(64 << 20, Direction::DtoH, [12.0, 48.0, 50.0, 30.0]),
        ];
        let serial = pipeline("serial", 1, 12.0);
        let overlapped = pipeline("overlapped", 2, 6.0);
        let r = TransferReport {
            suite: "transfer",
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
            dtod: None,
            goal: Goal::evaluate(&sweep),
            sweep,
            batching: vec![BatchResult {
                direction: Direction::HtoD,
                transfers: 16,
                bytes_per_transfer: 4 << 20,
                total_ms: 1.5,
                gbps: 44.7,
                overhead_us: Some(6.25),
                stats: stats(1.5),
            }],
            batch_bytes: 64 << 20,
            overlap: Some(OverlapReport {
                bytes: 64 << 20,
                a: 3,
                b: 1,
                k: 100,
                k_calibrated: true,
                chunk_copy_ms: Some(1.0),
                chunk_kernel_ms: 1.1,
                speedup: 2.0,
                speedup_bound: 3.0,
                serial,
                overlapped,
            }),
        };
        let htod = r.sweep_table(Direction::HtoD).render();
        let lines: Vec<&str> = htod.lines().collect();
        assert_eq!(lines.len(), 4, "{htod}");
        assert!(lines[2].starts_with("4 KiB") && lines[2].ends_with('-'), "{htod}");
        assert!(lines[3].contains("5.00x") && lines[3].contains("98.0%") && lines[3].ends_with("met"), "{htod}");
        let dtoh = r.sweep_table(Direction::DtoH).render();
        assert!(dtoh.lines().nth(2).unwrap().contains("96.0%"), "{dtoh}");
        assert!(r.batching_table().render().contains("6.25"));
        assert_eq!(r.series().len(), 8);
        assert_eq!(r.overlap.as_ref().unwrap().serial.stage_sum_ms(Stage::Kernel), 8.0);

        let dir = std::env::temp_dir().join(format!("coalesce-transfer-report-{}", std::process::id()));
        let written = r.write(&dir).unwrap();
        assert_eq!(written.len(), 3);
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&written[0]).unwrap()).unwrap();
        assert_eq!(v["sweep"][1]["results"][2]["path"], "driver");
        assert_eq!(v["sweep"][2]["direction"], "DtoH");
        assert_eq!(v["goal"]["met"], true);
        assert_eq!(v["overlap"]["overlapped"]["timeline"][0]["stage"], "HtoD");
        assert_eq!(v["overlap"]["overlapped"]["timeline"].as_array().unwrap().len(), 12);
        let timeline = std::fs::read_to_string(&written[2]).unwrap();
        assert!(timeline.starts_with("<svg"));
        for text in ["serial s0", "overlapped s1", "HtoD", "kernel", "DtoH", "2.00x"] {
            assert!(timeline.contains(text), "timeline lacks {text}");
        }
        assert!(timeline.matches("<rect").count() >= 24, "one bar per span");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn median_run_is_picked() {
        assert_eq!(median_index(&[3.0, 1.0, 2.0]), 2);
        assert_eq!(median_index(&[5.0]), 0);
    }
}
