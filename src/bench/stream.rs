//! `coalesce bench stream`: the streaming filter ([`crate::streaming`])
//! end to end over host data larger than its device budget, against the
//! host link it is bound by.
//!
//! 1. The link, in the same run: page-locked host → device and device →
//!    host copies of budget-sized blocks, one direction at a time and both
//!    at once (two streams), median of the repetitions.
//! 2. From page-locked memory: an f32 signal (default 16 GiB) through a
//!    `w`-tap correlation (default 31, reflect) with a device budget
//!    (default 1 GiB): wall time of the whole call (threads, streams,
//!    buffers included), median of the repetitions, as input bytes per
//!    second against the host → device rate.
//! 3. From an ordinary `Vec` (pageable, output pre-touched): the same,
//!    staged through page-locked slot buffers by parallel host copies.
//! 4. With more than one GPU visible: one GPU against all of them.
//!
//! Results are checked at every chunk seam (± the halo), both ends and
//! random positions against an `f64` sum with its error bound. The last
//! page-locked run's chunks are drawn as a timeline (`stream-timeline.svg`).

use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::copy::DeviceSummary;
use super::harness::{self, Settings, Stats};
use super::report::{self, Table, TimelineRun, human_bytes};
use super::transfer::SpanRecord;
use super::{BenchError, BenchResult, SuiteInfo};
use crate::conv::{Boundary, ConvOp};
use crate::streaming::{Backend, Layout, Report, Spec, Streaming, ghost_index};
use crate::transfer::HostAllocFlags;
use crate::{Gpu, PinnedBuffer};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "stream",
    about: "streaming filter of host data larger than the device budget: pinned and Vec, end to end vs the link",
};

/// The goal: page-locked end to end ≥ this share of the host → device rate.
pub const GOAL_PINNED: f64 = 0.85;
/// The goal: all GPUs ≥ this many times one GPU (with two).
pub const GOAL_GPUS: f64 = 1.8;

/// What to run.
#[derive(Clone, Debug)]
pub struct StreamOptions {
    /// Signal bytes (f32) from page-locked memory.
    pub bytes: u64,
    /// Signal bytes of the `Vec` run (0: skipped).
    pub vec_bytes: u64,
    /// Device budget per GPU, bytes.
    pub budget: u64,
    /// Mask width.
    pub width: usize,
    /// Repetitions of each end-to-end run.
    pub reps: usize,
    /// Where the JSON and SVG go.
    pub out_dir: Option<PathBuf>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions { bytes: 16 << 30, vec_bytes: 16 << 30, budget: 1 << 30, width: 31, reps: 3, out_dir: None }
    }
}

impl StreamOptions {
    /// A short run: 1 GiB, 128 MiB budget.
    pub fn quick() -> Self {
        StreamOptions { bytes: 1 << 30, vec_bytes: 1 << 30, budget: 128 << 20, reps: 2, ..Self::default() }
    }

    /// These options with the signal sizes lowered, when needed, so that
    /// each run's input and output (two buffers of the size at a time)
    /// take at most half of `available` host bytes, in whole GiB (at
    /// least 1 GiB). Returns the options and whether they changed.
    pub fn fit_host(self, available: u64) -> (Self, bool) {
        let cap = (available / 4) & !((1 << 30) - 1);
        let cap = cap.max(1 << 30);
        let fit = StreamOptions { bytes: self.bytes.min(cap), vec_bytes: self.vec_bytes.min(cap), ..self.clone() };
        let changed = fit.bytes != self.bytes || fit.vec_bytes != self.vec_bytes;
        (fit, changed)
    }
}

/// The host's available memory (`MemAvailable` of `/proc/meminfo`), bytes;
/// `None` where that file does not exist or does not say.
pub fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Link rates, GB/s.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Link {
    /// Block size, bytes.
    pub block: u64,
    /// Host → device.
    pub htod_gbps: f64,
    /// Device → host.
    pub dtoh_gbps: f64,
    /// Both at once: (in + out) bytes per second.
    pub both_gbps: f64,
}

/// One end-to-end configuration.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// `pinned`, `vec`, `pinned 1 GPU`, …
    pub name: String,
    /// Input bytes.
    pub bytes: u64,
    /// Wall time statistics, ms.
    pub stats: Stats,
    /// Input bytes per second at the median, GB/s.
    pub gbps: f64,
    /// Of the host → device rate.
    pub of_htod: f64,
    /// Of the rate each direction gets when both run at once (half of
    /// [`Link::both_gbps`]): the bound of a stream that moves its input
    /// in and its output out together.
    pub of_duplex: f64,
    /// Chunks and units per chunk.
    pub chunks: usize,
    /// Units per chunk.
    pub chunk_units: usize,
    /// Chunks per worker.
    pub per_worker: Vec<usize>,
    /// Whether input / output were staged, per worker.
    pub staged: Vec<(bool, bool)>,
}

/// The suite's record.
#[derive(Clone, Debug, Serialize)]
pub struct StreamReport {
    /// The first GPU.
    pub device: DeviceSummary,
    /// GPUs visible.
    pub gpus: u32,
    /// Mask width.
    pub width: usize,
    /// Budget per GPU, bytes.
    pub budget: u64,
    /// The link.
    pub link: Link,
    /// The runs.
    pub runs: Vec<RunResult>,
    /// Samples checked per run.
    pub checked: usize,
    /// Goal lines.
    pub goals: Vec<String>,
}

fn err(m: String) -> BenchError {
    BenchError::Options(m)
}

/// A reproducible value in [-1, 1) for position `i` (splitmix64).
fn value(i: u64) -> f32 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z >> 40) as f32) / (1u64 << 23) as f32 - 1.0
}

fn fill(dst: &mut [f32]) {
    dst.par_chunks_mut(1 << 20).enumerate().for_each(|(c, part)| {
        for (k, v) in part.iter_mut().enumerate() {
            *v = value(((c << 20) + k) as u64);
        }
    });
}

/// Checks `out` at every seam (± halo), both ends and `random` positions
/// against the f64 sum; returns the positions checked.
fn check(input: &[f32], out: &[f32], taps: &[f64], r: &Report, random: usize) -> BenchResult<usize> {
    let n = input.len();
    let (w, left) = (taps.len(), taps.len() / 2);
    let mut at: Vec<usize> = (0..64.min(n)).chain(n.saturating_sub(64)..n).collect();
    let cu = r.chunk_units.max(1);
    for b in (cu..n).step_by(cu) {
        at.extend(b.saturating_sub(w)..(b + w).min(n));
    }
    at.extend((0..random).map(|k| (value(k as u64 + 77).abs() as f64 * n as f64) as usize % n));
    let bad = at.par_iter().find_any(|&&i| {
        let (mut sum, mut abs) = (0f64, 0f64);
        for (j, t) in taps.iter().enumerate() {
            let q = ghost_index(Boundary::Reflect, i as isize - left as isize + j as isize, n).unwrap_or(0);
            let p = input[q] as f64 * t;
            sum += p;
            abs += p.abs();
        }
        let bound = (w as f64 + 2.0) * f32::EPSILON as f64 * abs + 1e-30;
        (out[i] as f64 - sum).abs() > bound
    });
    match bad {
        Some(&i) => Err(BenchError::Verification {
            suite: "stream",
            message: format!("output {i} of {n} is {} ({} chunks of {cu})", out[i], r.chunks),
        }),
        None => Ok(at.len()),
    }
}

/// Runs `filter` `reps` times; the last run's report and the stats.
fn timed(filter: &Streaming, reps: usize, input: &[f32], out: &mut [f32]) -> BenchResult<(Report, Stats)> {
    let mut ms = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let t = Instant::now();
        let r = filter.run(Layout::signal(input.len()), input, out)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        last = Some(r);
    }
    let stats = Stats::from_samples(&ms, 1).ok_or_else(|| err("no repetition ran".into()))?;
    Ok((last.expect("reps >= 1"), stats))
}

fn result(name: &str, bytes: u64, r: &Report, stats: Stats, link: &Link) -> RunResult {
    let gbps = harness::gbps(bytes as f64, stats.median_ms);
    RunResult {
        name: name.into(),
        bytes,
        stats,
        gbps,
        of_htod: gbps / link.htod_gbps,
        of_duplex: gbps / (link.both_gbps / 2.0),
        chunks: r.chunks,
        chunk_units: r.chunk_units,
        per_worker: r.per_worker.clone(),
        staged: r.staged.clone(),
    }
}

/// The link's rates with `block`-byte copies from `host` (page-locked).
fn link(gpu: &Gpu, host: &PinnedBuffer<f32>, out: &mut PinnedBuffer<f32>, block: usize) -> BenchResult<Link> {
    let n = block / 4;
    let mut d_in = gpu.alloc_zeroed::<f32>(n)?;
    let d_out = gpu.upload(&host[..n])?;
    let settings = Settings { warmup: 2, reps: 10, min_sample_ms: 0.0 };
    let h = harness::measure::<BenchError>(gpu, &settings, |_| {
        // SAFETY: the host buffers outlive the measurement, which
        // synchronizes the stream before returning.
        unsafe { gpu.stream().htod_async(&host[..n], &mut d_in.as_view_mut())? };
        Ok(())
    })?;
    let d = harness::measure::<BenchError>(gpu, &settings, |_| {
        // SAFETY: as above.
        unsafe { gpu.stream().dtoh_async(&d_out.as_view(), &mut out[..n])? };
        Ok(())
    })?;
    let (s1, s2) = (gpu.new_stream()?, gpu.new_stream()?);
    let mut both = Vec::new();
    for rep in 0..12 {
        let t = Instant::now();
        // SAFETY: as above; both streams are synchronized before the
        // buffers are touched again.
        unsafe {
            s1.htod_async(&host[..n], &mut d_in.as_view_mut())?;
            s2.dtoh_async(&d_out.as_view(), &mut out[..n])?;
        }
        s1.synchronize()?;
        s2.synchronize()?;
        if rep >= 2 {
            both.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let both = Stats::from_samples(&both, 1).ok_or_else(|| err("no sample".into()))?;
    let b = block as f64;
    Ok(Link {
        block: block as u64,
        htod_gbps: harness::gbps(b, h.median_ms),
        dtoh_gbps: harness::gbps(b, d.median_ms),
        both_gbps: harness::gbps(2.0 * b, both.median_ms),
    })
}

/// Runs the suite: prints the table and goal lines, writes
/// `stream.json` and `stream-timeline.svg` into the output folder.
pub fn run(gpu: &Gpu, opts: &StreamOptions) -> BenchResult<StreamReport> {
    if opts.reps == 0 || opts.width == 0 || opts.bytes < 4 || opts.budget == 0 {
        return Err(err("--reps, --width, --size and --budget must be positive".into()));
    }
    let n = usize::try_from(opts.bytes / 4).map_err(|_| err("--size too large".into()))?;
    let gpus = Gpu::count();
    let taps: Vec<f64> = (0..opts.width).map(|j| f64::from(value(1_000_000 + j as u64)) / opts.width as f64).collect();
    let spec = Spec::line(taps.clone(), opts.width, ConvOp::Correlate).with_mode(Boundary::Reflect);
    let budget = opts.budget as usize;
    let filter = |gpus: Vec<Gpu>| Streaming::new(spec.clone()).with_budget(budget).with_backend(Backend::Handles(gpus));
    eprintln!("stream: {} of page-locked f32 in and out ({} GPU(s) visible)", human_bytes(opts.bytes), gpus);
    let portable = HostAllocFlags { portable: true, ..HostAllocFlags::DEFAULT };
    let mut input = gpu.alloc_pinned_with::<f32>(n, portable)?;
    let mut output = gpu.alloc_pinned_with::<f32>(n, portable)?;
    fill(&mut input);
    let link = link(gpu, &input, &mut output, (budget.min(n * 4) / 4) & !3)?;
    // Handles made once: a run opens no context and loads no module.
    let mut all = vec![gpu.clone()];
    for d in 1..gpus {
        all.push(Gpu::with_device(d)?);
    }
    let one = filter(vec![gpu.clone()]);
    let (r1, s1) = timed(&one, opts.reps, &input, &mut output)?;
    let mut checked = check(&input, &output, &taps, &r1, 20_000)?;
    let mut runs = vec![result("pinned, 1 GPU", opts.bytes, &r1, s1, &link)];
    let timeline = one.clone().with_timeline(true).run(Layout::signal(n), &input, &mut output)?;
    if gpus > 1 {
        let (r, s) = timed(&filter(all.clone()), opts.reps, &input, &mut output)?;
        check(&input, &output, &taps, &r, 20_000)?;
        runs.push(result(&format!("pinned, {gpus} GPUs"), opts.bytes, &r, s, &link));
    }
    drop(output);
    drop(input);
    if opts.vec_bytes >= 4 {
        let m = usize::try_from(opts.vec_bytes / 4).map_err(|_| err("--vec-size too large".into()))?;
        eprintln!("stream: {} in an ordinary Vec", human_bytes(opts.vec_bytes));
        let mut v_in = vec![0f32; m];
        fill(&mut v_in);
        let mut v_out = vec![0f32; m];
        v_out.par_chunks_mut(1 << 20).for_each(|c| c.fill(f32::NAN));
        let (r, s) = timed(&filter(all.clone()), opts.reps, &v_in, &mut v_out)?;
        checked += check(&v_in, &v_out, &taps, &r, 20_000)?;
        runs.push(result(&format!("Vec, {gpus} GPU(s)"), opts.vec_bytes, &r, s, &link));
    }
    let pinned = &runs[0];
    let mut goals = vec![format!(
        "goal pinned end to end >= {:.0}% of pinned HtoD ({} f32, w = {}, budget {}): {} ({:.1}%: {:.2} GB/s vs {:.2} GB/s; \
         {:.1}% of the {:.2} GB/s each direction gets with both at once)",
        GOAL_PINNED * 100.0,
        human_bytes(opts.bytes),
        opts.width,
        human_bytes(opts.budget),
        if pinned.of_htod >= GOAL_PINNED { "MET" } else { "NOT MET" },
        pinned.of_htod * 100.0,
        pinned.gbps,
        link.htod_gbps,
        pinned.of_duplex * 100.0,
        link.both_gbps / 2.0
    )];
    goals.push(match runs.iter().find(|r| r.name.starts_with("pinned") && r.per_worker.len() > 1) {
        Some(multi) => {
            let x = pinned.stats.median_ms / multi.stats.median_ms;
            format!(
                "goal {} GPUs >= {GOAL_GPUS}x one GPU: {} ({x:.2}x)",
                multi.per_worker.len(),
                if x >= GOAL_GPUS { "MET" } else { "NOT MET" }
            )
        }
        None => format!("goal 2 GPUs >= {GOAL_GPUS}x one GPU: NOT EVALUATED ({gpus} GPU visible)"),
    });
    let mut t = Table::new(["run", "size", "chunks", "staged in/out", "median ms", "GB/s", "of HtoD %", "of duplex %"]);
    for r in &runs {
        let staged = r.staged.iter().map(|(a, b)| format!("{}/{}", yes(*a), yes(*b))).collect::<Vec<_>>().join(",");
        t.row([
            r.name.clone(),
            human_bytes(r.bytes),
            format!("{} x {}", r.chunks, r.chunk_units),
            staged,
            format!("{:.1}", r.stats.median_ms),
            format!("{:.2}", r.gbps),
            format!("{:.1}", r.of_htod * 100.0),
            format!("{:.1}", r.of_duplex * 100.0),
        ]);
    }
    println!(
        "link ({} blocks, page-locked): HtoD {:.2} GB/s, DtoH {:.2} GB/s, both at once {:.2} GB/s (in + out)",
        human_bytes(link.block),
        link.htod_gbps,
        link.dtoh_gbps,
        link.both_gbps
    );
    println!("{}", t.render());
    println!("checked {checked} outputs (every seam +- {} samples, both ends, random positions)", opts.width);
    for g in &goals {
        println!("{g}");
    }
    let report = StreamReport {
        device: DeviceSummary::of(gpu),
        gpus,
        width: opts.width,
        budget: opts.budget,
        link,
        runs,
        checked,
        goals,
    };
    if let Some(dir) = &opts.out_dir {
        report::write_json(dir.join("stream.json"), &report)?;
        let slots = crate::streaming::DEFAULT_SLOTS;
        let spans: Vec<SpanRecord> = timeline
            .spans
            .iter()
            .map(|s| SpanRecord {
                chunk: s.chunk,
                stream: s.worker * slots + s.slot,
                stage: s.stage.name(),
                start_ms: s.start_ms,
                end_ms: s.end_ms,
            })
            .collect();
        let svg = dir.join("stream-timeline.svg");
        let title = format!(
            "streaming filter: {} f32 from page-locked memory, w = {}, budget {}\n{} chunks on {} slots; {:.2} GB/s end to end, link HtoD {:.2} GB/s",
            human_bytes(opts.bytes),
            opts.width,
            human_bytes(opts.budget),
            timeline.chunks,
            slots,
            harness::gbps(opts.bytes as f64, timeline.seconds * 1e3),
            link.htod_gbps
        );
        let runs = [TimelineRun { name: "GPU 0".into(), rows: slots, spans: &spans }];
        report::draw_timeline(&svg, &title, &runs)
            .map_err(|e| BenchError::Output { path: svg.clone(), source: std::io::Error::other(e) })?;
    }
    Ok(report)
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_fit_the_host() {
        let d = StreamOptions::default();
        let (same, changed) = d.clone().fit_host(128 << 30);
        assert!(!changed);
        assert_eq!((same.bytes, same.vec_bytes), (16 << 30, 16 << 30));
        let (small, changed) = d.clone().fit_host(30 << 30);
        assert!(changed);
        assert_eq!((small.bytes, small.vec_bytes), (7 << 30, 7 << 30));
        let (tiny, _) = d.fit_host(1 << 30);
        assert_eq!(tiny.bytes, 1 << 30);
    }
}
