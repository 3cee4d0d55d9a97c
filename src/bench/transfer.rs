//! The `transfer` suite (lesson 004, 5.3.1): host <-> device transfers. **Paths × sizes** (4 KiB..1 GiB,
//! both directions, synchronous): *pageable* `Vec` ([`Gpu::htod`]), *pinned* ([`PinnedBuffer::copy_to_device`]),
//! *driver* (raw `cuMemcpyHtoD_v2` / `cuMemcpyDtoH_v2` on that pinned memory: the reference), *mapped* (a kernel
//! on a [`MappedBuffer`]). **Batching**: 64 MiB as 1..65536 pinned transfers, overhead `(t_N − t_1) / (N − 1)`.
//! **Overlap**: [`Gpu::pipeline`], 256 MiB in 16 chunks (copy in, `scale_add_u32` calibrated to a chunk's copy,
//! copy out) on 1 and 4 streams, drawn as a timeline. A transfer of `n` bytes counts `n` (one crossing of the
//! link), beside the run's DtoD copy (read + written). Every case re-runs into a poisoned destination, compared
//! with its source or the CPU reference. Goal: pinned ≥ 95% of the driver copy from 64 MiB on.

use serde::Serialize;
use serde_json::json;

use super::copy::pattern_word;
use super::harness;
use super::report::{Series, TimelineRun};
use super::run::{Fmt, Goal, POISON, Rec, Run, Suite, elems, wall_stats};
use super::{BenchResult, SuiteInfo};
use crate::text::{human_bytes, parse_size};
use crate::transfer::{StageSpan, chunk_range};
use crate::{DeviceBuffer, Gpu, MappedBuffer, PinnedBuffer, PipelineRun, ScaleAdd, Stage, Stream};

/// Sizes from which the goal applies (64 MiB).
pub const GOAL_MIN_BYTES: u64 = 64 << 20;
/// The goal: the pinned path at least this fraction of the driver copy.
pub const GOAL_RATIO: f64 = 0.95;
const PIPELINE_REPS: usize = 10; // samples of each pipeline, at most
const POISON_WORD: u32 = u32::from_ne_bytes([POISON; 4]);
const DIRECTIONS: [Stage; 2] = [Stage::HtoD, Stage::DtoH]; // named as the pipeline's copy stages

/// `coalesce bench transfer`.
#[derive(clap::Args, Clone, Debug)]
pub struct Transfer {
    /// Only this part: `sweep` (paths x sizes), `batching` or `overlap` [default: all three].
    #[arg(long, value_parser = ["sweep", "batching", "overlap"])]
    pub only: Option<String>,
    /// Smallest transfer of the sweep [default: 4KiB].
    #[arg(long, value_parser = parse_size)]
    pub min_size: Option<u64>,
    /// Largest transfer of the sweep [default: 1GiB, 64MiB with --quick].
    #[arg(long, value_parser = parse_size)]
    pub max_size: Option<u64>,
    /// Bytes of the batching experiment [default: 64MiB, 16MiB with --quick].
    #[arg(long, value_parser = parse_size)]
    pub batch_size: Option<u64>,
    /// Transfer counts of the batching experiment, comma-separated [default: 1,16,256,4096,65536].
    #[arg(long, value_delimiter = ',')]
    pub batch_counts: Option<Vec<usize>>,
    /// Bytes of the overlap experiment [default: 256MiB, 64MiB with --quick].
    #[arg(long, value_parser = parse_size)]
    pub pipeline_size: Option<u64>,
    /// Chunks of the overlap experiment [default: 16].
    #[arg(long)]
    pub chunks: Option<usize>,
    /// Streams of the overlapped run [default: 4].
    #[arg(long)]
    pub streams: Option<usize>,
    /// Steps of the overlap kernel per element [default: calibrated to a chunk's copy time].
    #[arg(long)]
    pub k: Option<u32>,
    /// The shared options.
    #[command(flatten)]
    pub common: super::run::Common,
}

/// A stage span of a pipeline timeline.
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

impl From<&StageSpan> for SpanRecord {
    fn from(s: &StageSpan) -> Self {
        SpanRecord { chunk: s.chunk, stream: s.stream, stage: s.stage.name(), start_ms: s.start_ms, end_ms: s.end_ms }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    Pageable,
    Pinned,
    Driver,
    Mapped,
}

/// How the bytes travel, in table order, and the names of the ways.
const PATHS: [(Path, &str); 4] =
    [(Path::Pageable, "pageable"), (Path::Pinned, "pinned"), (Path::Driver, "driver"), (Path::Mapped, "mapped")];

/// The powers of four from 4 KiB (4 KiB, 16 KiB, 64 KiB, …) in `min..=max`.
fn sizes(min: u64, max: u64) -> Vec<u64> {
    (0..26).map(|e| (4u64 << 10) << (2 * e)).filter(|&s| s >= min && s <= max).collect()
}

/// The goal line over the (pinned / driver ratio, where) of every size from [`GOAL_MIN_BYTES`] on.
fn pinned_goal(cases: Vec<(f64, String)>) -> Goal {
    let (pct, min) = (GOAL_RATIO * 100.0, human_bytes(GOAL_MIN_BYTES));
    let goal = format!("library pinned path >= {pct:.0}% of raw cuMemcpyHtoD_v2/cuMemcpyDtoH_v2 for sizes >= {min}");
    Goal::worst(goal, cases, GOAL_RATIO, true, Fmt::Pct(1), &format!("no size >= {min} was measured"))
}

impl Suite for Transfer {
    const INFO: SuiteInfo = SuiteInfo {
        name: "transfer",
        about: "host <-> device: pageable / pinned / mapped 4 KiB..1 GiB, batching, copy/kernel overlap on streams",
    };
    const UNITS: &'static str =
        "GB = 1e9 bytes; a transfer of n bytes counts n (each byte crosses the host link once); times in ms";

    fn common(&self) -> &super::run::Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let part = |p: &str| self.only.as_deref().is_none_or(|o| o == p);
        let (min, max) = (self.min_size.unwrap_or(4 << 10), run.pick(self.max_size, 1 << 30, 64 << 20));
        let list = if part("sweep") { sizes(min, max) } else { vec![] };
        if part("sweep") && list.is_empty() {
            let (min, max) = (human_bytes(min), human_bytes(max));
            return Err(run.bad_options(format!("no size 4 KiB x 4^k between {min} and {max}")));
        }
        let counts = run.pick(self.batch_counts.clone(), vec![1, 16, 256, 4096, 65536], vec![1, 16, 256, 4096]);
        let counts = if part("batching") { counts } else { vec![] };
        run.progress(8 * list.len() + 2 * counts.len() + 2 * usize::from(part("overlap")));
        if !list.is_empty() {
            sweep(run, &list)?;
        }
        if !counts.is_empty() {
            batching(run, run.pick(self.batch_size, 64 << 20, 16 << 20), &counts)?;
        }
        if part("overlap") { self.overlap(run) } else { Ok(()) }
    }
}

/// The host side of one size: every path's source (or destination).
struct Hosts {
    pageable: Vec<u32>,
    pinned: PinnedBuffer<u32>,
    mapped: MappedBuffer<u32>,
}

impl Hosts {
    fn of(&mut self, path: Path) -> &mut [u32] {
        match path {
            Path::Pageable => &mut self.pageable,
            Path::Pinned | Path::Driver => &mut self.pinned,
            Path::Mapped => &mut self.mapped,
        }
    }
}

/// One synchronous transfer of the whole size through `path`.
fn transfer(gpu: &Gpu, h: &mut Hosts, dev: &mut DeviceBuffer<u32>, path: Path, htod: bool) -> BenchResult<()> {
    match (path, htod) {
        (Path::Pageable, true) => gpu.htod(&h.pageable, &mut dev.as_view_mut())?,
        (Path::Pageable, false) => gpu.dtoh(&dev.as_view(), &mut h.pageable)?,
        (Path::Pinned, true) => h.pinned.copy_to_device(&mut dev.as_view_mut())?,
        (Path::Pinned, false) => h.pinned.copy_from_device(&dev.as_view())?,
        (Path::Driver, _) => raw_driver_copy(dev, &mut h.pinned, htod)?,
        (Path::Mapped, true) => gpu.zero_copy_to_device(&h.mapped, &mut dev.as_view_mut()).map(drop)?,
        (Path::Mapped, false) => gpu.zero_copy_from_device(&dev.as_view(), &mut h.mapped).map(drop)?,
    }
    Ok(())
}

/// The reference: the driver's synchronous `cuMemcpyHtoD_v2` / `cuMemcpyDtoH_v2`, called directly.
fn raw_driver_copy(dev: &mut DeviceBuffer<u32>, pinned: &mut PinnedBuffer<u32>, htod: bool) -> BenchResult<()> {
    let (bytes, d) = (dev.byte_len(), dev.device_ptr().0);
    assert_eq!(bytes, std::mem::size_of_val::<[u32]>(pinned), "raw_driver_copy: unequal sizes");
    // SAFETY: both sides hold `bytes` bytes (a live device allocation of the current context, page-locked host
    // memory), each borrowed for the call; both calls return when the copy is done.
    let (op, r) = unsafe {
        match htod {
            true => ("cuMemcpyHtoD_v2", cust::sys::cuMemcpyHtoD_v2(d, pinned.as_ptr().cast(), bytes)),
            false => ("cuMemcpyDtoH_v2", cust::sys::cuMemcpyDtoH_v2(pinned.as_mut_ptr().cast(), d, bytes)),
        }
    };
    if r != cust::sys::CUresult::CUDA_SUCCESS {
        return Err(crate::Error::InvalidArgument { op, message: format!("the driver returned {r:?}") }.into());
    }
    Ok(())
}

/// Paths × sizes: a table per direction, the plot and the goal.
fn sweep(run: &mut Run<'_>, list: &[u64]) -> BenchResult<()> {
    let (gpu, title) = (run.gpu, "(synchronous transfers; GB/s = bytes / median time)");
    let tabs = DIRECTIONS.map(|dir| run.table(dir.name(), format!("{} {title}", dir.name())));
    let names = DIRECTIONS.iter().flat_map(|d| PATHS.map(|(_, p)| format!("{} {p}", d.name())));
    let mut series: Vec<Series> = names.map(|name| Series { name, points: vec![] }).collect();
    let (mut cases, mut best) = (Vec::new(), 0.0f64);
    for &size in list {
        let want: Vec<u32> = (0..elems(size / 4)?).map(pattern_word).collect();
        let (pinned, mapped) = (gpu.pinned_from_slice(&want)?, gpu.mapped_from_slice(&want)?);
        let (mut h, mut dev) = (Hosts { pageable: want.clone(), pinned, mapped }, gpu.alloc_zeroed(want.len())?);
        for (di, dir) in DIRECTIONS.into_iter().enumerate() {
            let (mut rec, mut g, htod) = (Rec::new().text("size", human_bytes(size)), [0.0; 4], dir == Stage::HtoD);
            for (pi, (path, name)) in PATHS.into_iter().enumerate() {
                let what = format!("{name} {} of {}", dir.name(), human_bytes(size));
                run.tick(&what);
                let stats = run.measure(|_| transfer(gpu, &mut h, &mut dev, path, htod))?;
                match htod {
                    true => dev.fill_bytes(POISON)?,
                    false => h.of(path).fill(POISON_WORD),
                }
                transfer(gpu, &mut h, &mut dev, path, htod)?;
                run.check(&what, &if htod { dev.to_vec()? } else { h.of(path).to_vec() }, &want)?;
                g[pi] = harness::gbps(size as f64, stats.median_ms);
                series[di * 4 + pi].points.push((size as f64, g[pi]));
                let col = if path == Path::Mapped { "mapped (GB/s)" } else { name };
                rec = rec.num(col, g[pi], 2).json(&format!("{name}_stats"), stats);
                run.inc();
            }
            let (ratio, big) = (Some(g[1] / g[2]).filter(|r| r.is_finite()).unwrap_or(0.0), size >= GOAL_MIN_BYTES);
            let goal = if big { if ratio >= GOAL_RATIO { "met" } else { "not met" } } else { "-" };
            cases.extend(big.then(|| (ratio, format!("{} {}", human_bytes(size), dir.name()))));
            let rec = rec.times("pinned/pageable", g[1] / g[0]).times("mapped/pinned", g[3] / g[1]);
            run.row(tabs[di], rec.pct("pinned/driver %", g[1] / g[2]).text("goal", goal).json("bytes", size));
            best = best.max(g[1]);
        }
    }
    let d = run.dtod(list[list.len() - 1].clamp(4 << 20, 256 << 20))?;
    let (dtod, copies, copied, slower) = (d.gbps, human_bytes(d.bytes), d.gbps / 2.0, d.gbps / 2.0 / best);
    run.line(format!(
        "device-to-device copy in this run: {dtod:.1} GB/s (read + written, {copies} copies); the best pinned \
         transfer ({best:.1} GB/s) moves bytes {slower:.0}x slower than device memory copies them ({copied:.0} GB/s \
         of copied bytes)"
    ));
    let title = format!(
        "host <-> device transfer bandwidth vs size: {}\npageable Vec, pinned (library), pinned (raw driver copy), \
         mapped (kernel reads/writes host memory); synchronous transfers",
        gpu.info().name
    );
    run.plot("transfer", &title, "bytes per transfer (log2 scale)", "GB/s (1e9 B/s, bytes counted once)", &series)?;
    run.goal(pinned_goal(cases));
    Ok(())
}

/// `bytes` as one pinned transfer and as each of `counts`.
fn batching(run: &mut Run<'_>, bytes: u64, counts: &[usize]) -> BenchResult<()> {
    let (gpu, n, size) = (run.gpu, elems(bytes / 4)?, human_bytes(bytes));
    if n == 0 || counts.iter().any(|&c| c == 0 || c > n) {
        let why = format!("batching: every transfer count must be between 1 and {n} (the batch's u32 elements)");
        return Err(run.bad_options(why));
    }
    let t = run.table("batching", format!("batching: {size} as one transfer vs many (pinned, synchronous)"));
    let want: Vec<u32> = (0..n).map(|i| pattern_word(i ^ 0x5555)).collect();
    let (mut pinned, mut dev) = (gpu.pinned_from_slice(&want)?, gpu.alloc_zeroed::<u32>(n)?);
    for dir in DIRECTIONS {
        let (mut single_ms, htod) = (None, dir == Stage::HtoD);
        for &count in counts {
            let what = format!("{count} {} transfers of {size}", dir.name());
            run.tick(&what);
            let op = |pinned: &mut PinnedBuffer<u32>, dev: &mut DeviceBuffer<u32>| {
                (0..count).map(|c| chunk_range(n, count, c)).try_for_each(|r| match htod {
                    true => gpu.htod(&pinned[r.clone()], &mut dev.view_mut(r)?),
                    false => gpu.dtoh(&dev.view(r.clone())?, &mut pinned[r]),
                })
            };
            let stats = harness::measure(gpu, &run.settings, |_| op(&mut pinned, &mut dev))?;
            match htod {
                true => dev.fill_bytes(POISON)?,
                false => pinned.fill(POISON_WORD),
            }
            op(&mut pinned, &mut dev)?;
            run.check(&what, &if htod { dev.to_vec()? } else { pinned.to_vec() }, &want)?;
            let ms = stats.median_ms;
            single_ms = single_ms.or(Some(ms).filter(|_| count == 1));
            let overhead = single_ms.filter(|_| count > 1).map(|t1| (ms - t1) / (count - 1) as f64 * 1e3);
            let rec = Rec::new().text("direction", dir.name()).int("transfers", count);
            let rec = rec.text("bytes each", human_bytes(bytes / count as u64)).num("total ms", ms, 3);
            let rec = rec.num("GB/s", harness::gbps(bytes as f64, ms), 2).num("overhead/transfer (us)", overhead, 2);
            run.row(t, rec.json("bytes_per_transfer", bytes / count as u64).json("stats", stats));
            run.inc();
        }
    }
    Ok(())
}

impl Transfer {
    /// The pipeline on one stream and on several: speedup and timelines.
    fn overlap(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let (gpu, s, bytes) = (run.gpu, run.settings, run.pick(self.pipeline_size, 256 << 20, 64 << 20));
        let (chunks, nstreams, n) = (self.chunks.unwrap_or(16), self.streams.unwrap_or(4), elems(bytes / 4)?);
        if n == 0 || chunks == 0 || chunks > n || nstreams == 0 {
            let got = format!("got {nstreams} streams, {chunks} chunks");
            return Err(run.bad_options(format!("overlap: needs at least one stream and 1..={n} chunks ({got})")));
        }
        run.tick(&format!("overlap of {} in {chunks} chunks on {nstreams} streams", human_bytes(bytes)));
        let host: Vec<u32> = (0..n).map(|i| pattern_word(i ^ 0xAAAA)).collect();
        let (input, mut output) = (gpu.pinned_from_slice(&host)?, gpu.alloc_pinned::<u32>(n)?);
        let (mut d_in, mut d_out) = (gpu.alloc_zeroed::<u32>(n)?, gpu.alloc_zeroed::<u32>(n)?);
        let streams: Vec<Stream> = (0..nstreams).map(|_| gpu.new_stream()).collect::<Result<_, _>>()?;
        // Calibration on chunk 0: the copy time, and the kernel time per step.
        let m = chunk_range(n, chunks, 0).end;
        let kernel = |d_in: &DeviceBuffer<u32>, d_out: &mut DeviceBuffer<u32>, op: ScaleAdd| {
            harness::measure(gpu, &s, |_| gpu.scale_add(&d_in.view(0..m)?, &mut d_out.view_mut(0..m)?, op))
        };
        let (k, copy_ms) = match self.k {
            Some(k) => (k, None),
            None => {
                let copy = harness::measure(gpu, &s, |_| gpu.htod(&input[..m], &mut d_in.view_mut(0..m)?))?.median_ms;
                let kern = kernel(&d_in, &mut d_out, ScaleAdd::lcg(64))?.median_ms;
                ((64.0 * copy / kern.max(1e-6)).round().clamp(1.0, f64::from(1u32 << 20)) as u32, Some(copy))
            }
        };
        let op = ScaleAdd::lcg(k);
        let kernel_ms = kernel(&d_in, &mut d_out, op)?.median_ms;
        let mut want = vec![0u32; n];
        op.reference(&host, &mut want)?;
        let (reps, warm, mut timelines) = (s.reps.min(PIPELINE_REPS), s.warmup.min(1), Vec::new());
        for (name, used) in [("serial", &streams[..1]), ("overlapped", &streams[..])] {
            let mut pipe = || gpu.pipeline(used, &input, &mut output, &mut d_in, &mut d_out, chunks, op);
            let (stats, runs) = wall_stats(name, (warm, reps), || Ok(pipe().map(|r| (r.total_ms, r))?))?;
            output.fill(POISON_WORD);
            d_out.fill_bytes(POISON)?;
            gpu.pipeline(used, &input, &mut output, &mut d_in, &mut d_out, chunks, op)?;
            run.check(&format!("{name} pipeline output"), &output[..], &want)?;
            // The timeline kept: the run whose total is closest to the median.
            let off = |r: &&PipelineRun| (r.total_ms - stats.median_ms).abs();
            let r = runs.iter().min_by(|a, b| off(a).total_cmp(&off(b))).expect("at least one run");
            let spans: Vec<SpanRecord> = r.spans.iter().map(SpanRecord::from).collect();
            run.param(name, json!({ "streams": used.len(), "stats": stats, "timeline": spans }));
            timelines.push((name, used.len(), stats.median_ms, spans));
            run.inc();
        }
        let (serial, over, size) = (timelines[0].2, timelines[1].2, human_bytes(4 * n as u64));
        let stage =
            |st: Stage| timelines[0].3.iter().filter(move |s| s.stage == st.name()).map(|s| s.end_ms - s.start_ms);
        let busiest = Stage::ALL.into_iter().map(|st| stage(st).sum()).fold(0.0, f64::max);
        let (speedup, bound) = (serial / over, if busiest > 0.0 { serial / busiest } else { f64::NAN });
        let copy = copy_ms.map_or_else(String::new, |c| format!(", pinned HtoD copy {c:.3} ms"));
        let calibrated = if copy_ms.is_some() { " (calibrated)" } else { "" };
        run.line(format!(
            "overlap: {size} in {chunks} chunks; kernel y = a*x + b (wrapping u32) x {k} steps{calibrated}; one chunk: \
             kernel {kernel_ms:.3} ms{copy}\nserial {serial:.3} ms, overlapped {over:.3} ms (medians of {reps} runs): \
             speedup {speedup:.2}x (bound from the serial run's busiest stage: {bound:.2}x); both outputs match the \
             CPU reference"
        ));
        run.param("overlap", json!({ "k": k, "chunk_copy_ms": copy_ms, "chunk_kernel_ms": kernel_ms }));
        let title = format!(
            "copy / kernel overlap: {size} in {chunks} chunks, {}\nserial {serial:.2} ms on 1 stream, overlapped \
             {over:.2} ms on {nstreams} streams: {speedup:.2}x",
            gpu.info().name
        );
        let runs: Vec<TimelineRun<'_>> =
            timelines.iter().map(|t| TimelineRun { name: t.0.to_string(), rows: t.1, spans: &t.3 }).collect();
        run.timeline("transfer-timeline", &title, &runs)
    }
}

#[cfg(test)]
mod tests {
    use super::super::run::parse;
    use super::*;

    #[test]
    fn sizes_goal_and_options() {
        let all = sizes(4 << 10, 1 << 30);
        assert_eq!((all.len(), &all[..3], all.last()), (10, &[4096, 16384, 65536][..], Some(&(1 << 30))));
        assert_eq!((sizes(5000, 70000), sizes(5000, 6000)), (vec![16384, 65536], vec![]));
        assert_eq!(sizes(1, 64 << 20).last(), Some(&(64 << 20)));
        // The goal line names the worst size and direction.
        let cases =
            vec![(50.0 / 51.0, "64 MiB HtoD".to_string()), (0.96, "64 MiB DtoH".into()), (1.0, "1 GiB DtoH".into())];
        let goal = "goal library pinned path >= 95% of raw cuMemcpyHtoD_v2/cuMemcpyDtoH_v2 for sizes >= 64 MiB";
        assert_eq!(pinned_goal(cases.clone()).line(), format!("{goal}: MET (min 96.0% at 64 MiB DtoH)"));
        let worse = cases.into_iter().chain([(0.9, "256 MiB HtoD".into())]).collect();
        assert_eq!(pinned_goal(worse).line(), format!("{goal}: NOT MET (min 90.0% at 256 MiB HtoD)"));
        assert_eq!(pinned_goal(vec![]).line(), format!("{goal}: NOT EVALUATED (no size >= 64 MiB was measured)"));
        let t: Transfer = parse(&["--only", "overlap", "--chunks", "32", "--batch-counts", "1,16", "--quick"]).unwrap();
        assert_eq!((t.only.as_deref(), t.chunks, t.streams, t.k), (Some("overlap"), Some(32), None, None));
        assert_eq!((t.batch_counts, t.common.quick), (Some(vec![1, 16]), true));
        let t: Transfer = parse(&["--max-size", "64MiB", "--k", "100", "--streams", "8"]).unwrap();
        assert_eq!((t.max_size, t.min_size, t.k, t.streams), (Some(64 << 20), None, Some(100), Some(8)));
        assert!(parse::<Transfer>(&["--only", "sizes"]).is_err());
    }
}
