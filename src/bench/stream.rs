//! The `stream` suite: the streaming filter ([`crate::streaming`]) end to end over host data larger than its device
//! budget, against the host link that bounds it (the floor).
//!
//! The link: page-locked host → device and device → host copies of a quarter of the budget, one direction at a time
//! (median of 10) and both at once on two streams. The filter: an f32 signal (default 16 GiB) through a `w`-tap
//! correlation (default 31, reflect) with a device budget (default 1 GiB), from page-locked memory on one GPU and on
//! all of them, and from an ordinary `Vec` (pageable, staged through page-locked slots): wall time of the whole call,
//! median of the repetitions, as input bytes per second against the link. Each run's output is checked at every chunk
//! seam (± the halo), both ends and 20 000 random positions against an `f64` sum with its error bound; one more one-GPU
//! page-locked run is drawn as a timeline (`stream-timeline.svg`). Goals: page-locked end to end ≥ [`GOAL_PINNED`] of
//! host → device; all GPUs ≥ [`GOAL_GPUS`]× one.

use rayon::prelude::*;
use serde_json::json;

use super::harness::{self, Settings, gbps};
use super::report::TimelineRun;
use super::run::{Common, Goal, Rec, Run, Suite, Tab};
use super::run::{wall_ms, wall_stats};
use super::transfer::SpanRecord;
use super::{BenchResult, SuiteInfo};
use crate::conv::{Boundary, ConvOp};
use crate::streaming::{Backend, DEFAULT_SLOTS, Layout, Report, Spec, Streaming, ghost_index};
use crate::text::{human_bytes, parse_size};
use crate::transfer::HostAllocFlags;
use crate::{Gpu, PinnedBuffer};

/// The goal: page-locked end to end ≥ this share of the host → device rate.
pub const GOAL_PINNED: f64 = 0.85;
/// The goal: all GPUs ≥ this many times one GPU (with two).
pub const GOAL_GPUS: f64 = 1.8;

/// `coalesce bench stream` (`--reps`: repetitions of each end-to-end run).
#[derive(clap::Args, Clone, Debug)]
pub struct Stream {
    /// Signal size from page-locked memory (f32) [default: 16GiB, 1GiB with --quick].
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// Signal size of the Vec run, 0 to skip it [default: as --size].
    #[arg(long, value_parser = parse_size)]
    pub vec_size: Option<u64>,
    /// Device budget per GPU [default: 1GiB, 128MiB with --quick].
    #[arg(long, value_parser = parse_size)]
    pub budget: Option<u64>,
    /// Mask width.
    #[arg(long, default_value_t = 31)]
    pub width: usize,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

/// `bytes` lowered, when needed, so that a run's input and output take at most half of
/// `available` host bytes, in whole GiB (at least 1 GiB).
fn fit_host(bytes: u64, available: u64) -> u64 {
    bytes.min(((available / 4) & !((1 << 30) - 1)).max(1 << 30))
}

/// `MemAvailable` of `/proc/meminfo`, bytes.
fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok()?.checked_mul(1024)
}

/// A reproducible value in [-1, 1) for position `i` (splitmix64).
fn value(i: u64) -> f32 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z >> 40) as f32) / (1u64 << 23) as f32 - 1.0
}

/// Checks `out` at every seam (± halo), both ends and 20 000 random positions against the f64
/// sum; returns the positions checked.
fn check(run: &Run<'_>, input: &[f32], out: &[f32], taps: &[f64], r: &Report) -> BenchResult<usize> {
    let (n, w, left, cu) = (input.len(), taps.len(), taps.len() / 2, r.chunk_units.max(1));
    let mut at: Vec<usize> = (0..64.min(n)).chain(n.saturating_sub(64)..n).collect();
    at.extend((cu..n).step_by(cu).flat_map(|b| b.saturating_sub(w)..(b + w).min(n)));
    at.extend((0..20_000).map(|k| (value(k as u64 + 77).abs() as f64 * n as f64) as usize % n));
    let bad = at.par_iter().find_any(|&&i| {
        let tap = |(j, t): (usize, &f64)| {
            input[ghost_index(Boundary::Reflect, (i + j) as isize - left as isize, n).unwrap_or(0)] as f64 * t
        };
        let (sum, abs) = taps.iter().enumerate().map(tap).fold((0f64, 0f64), |(s, a), p| (s + p, a + p.abs()));
        (out[i] as f64 - sum).abs() > (w as f64 + 2.0) * f32::EPSILON as f64 * abs + 1e-30
    });
    match bad {
        Some(&i) => Err(run.fail(format!("output {i} of {n} is {} ({} chunks of {cu})", out[i], r.chunks))),
        None => Ok(at.len()),
    }
}

/// `filter` end to end the run's reps times (wall clock), its last output checked, as a row of `t` (rates against the
/// link's HtoD and duplex GB/s): the last report, the median ms and the outputs checked.
fn case(
    run: &mut Run<'_>,
    (t, name, bytes): (Tab, String, u64),
    filter: &Streaming,
    (input, out, taps): (&[f32], &mut [f32], &[f64]),
    [htod, _, both]: [f64; 3],
) -> BenchResult<(Report, f64, usize)> {
    let sig = Layout::signal(input.len());
    let (s, mut reports) = wall_stats(&name, (0, run.settings.reps), || wall_ms(|| Ok(filter.run(sig, input, out)?)))?;
    let r = reports.pop().expect("reps >= 1");
    let checked = check(run, input, out, taps, &r)?;
    let yes = |b: bool| if b { "yes" } else { "no" };
    let staged: Vec<String> = r.staged.iter().map(|&(i, o)| format!("{}/{}", yes(i), yes(o))).collect();
    let (g, chunks) = (gbps(bytes as f64, s.median_ms), format!("{} x {}", r.chunks, r.chunk_units));
    let rec = Rec::new().text("run", name).text("size", human_bytes(bytes)).text("chunks", chunks);
    let rec = rec.text("staged in/out", staged.join(",")).num("median ms", s.median_ms, 1).num("GB/s", g, 2);
    let rec = rec.pct("of HtoD %", g / htod).pct("of duplex %", g / (both / 2.0)).json("bytes", bytes);
    run.row(t, rec.json("per_worker", &r.per_worker).json("stats", s));
    Ok((r, s.median_ms, checked))
}

/// The link with `block`-byte page-locked copies, GB/s: host → device, device → host, both at once (in + out bytes).
fn link(gpu: &Gpu, host: &PinnedBuffer<f32>, out: &mut PinnedBuffer<f32>, block: usize) -> BenchResult<[f64; 3]> {
    let (n, settings, s) = (block / 4, Settings { warmup: 2, reps: 10, min_sample_ms: 0.0 }, gpu.stream());
    let (mut d_in, d_out) = (gpu.alloc_zeroed::<f32>(n)?, gpu.upload(&host[..n])?);
    // SAFETY: the host buffers outlive the measurement, which synchronizes the stream before returning.
    let h = harness::measure(gpu, &settings, |_| unsafe { s.htod_async(&host[..n], &mut d_in.as_view_mut()) })?;
    // SAFETY: as above.
    let d = harness::measure(gpu, &settings, |_| unsafe { s.dtoh_async(&d_out.as_view(), &mut out[..n]) })?;
    let (s1, s2) = (gpu.new_stream()?, gpu.new_stream()?);
    let (both, _) = wall_stats("both directions", (settings.warmup, settings.reps), || {
        wall_ms(|| {
            // SAFETY: as above; both streams are synchronized before the buffers are touched again.
            unsafe {
                s1.htod_async(&host[..n], &mut d_in.as_view_mut())?;
                s2.dtoh_async(&d_out.as_view(), &mut out[..n])?;
            }
            s1.synchronize()?;
            Ok(s2.synchronize()?)
        })
    })?;
    let b = block as f64;
    Ok([gbps(b, h.median_ms), gbps(b, d.median_ms), gbps(2.0 * b, both.median_ms)])
}

impl Suite for Stream {
    const INFO: SuiteInfo = SuiteInfo {
        name: "stream",
        about: "streaming filter of host data larger than the device budget: pinned and Vec, end to end vs the link",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; bytes = the input's (f32); times: wall clock of the whole call, ms";
    const REPS: (usize, usize) = (3, 2);

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let mut bytes = run.pick(self.size, 16 << 30, 1 << 30);
        // Default sizes shrink to fit the host's memory; given ones are kept.
        if let (None, None, Some(avail)) = (self.size, self.vec_size, host_available_bytes()) {
            let fit = fit_host(bytes, avail);
            if fit != bytes {
                let (a, f) = (human_bytes(avail), human_bytes(fit));
                run.warn(&format!("{a} of host memory available: signals of {f} (pass --size to choose)"));
            }
            bytes = fit;
        }
        let (vec_bytes, budget, width) =
            (self.vec_size.unwrap_or(bytes), run.pick(self.budget, 1 << 30, 128 << 20), self.width);
        if width == 0 || bytes < 4 || budget == 0 {
            return Err(run.bad_options("--width, --size and --budget must be positive"));
        }
        let n = usize::try_from(bytes / 4).map_err(|_| run.bad_options("--size too large"))?;
        let gpus = Gpu::count();
        let taps: Vec<f64> = (0..width).map(|j| f64::from(value(1_000_000 + j as u64)) / width as f64).collect();
        let spec = Spec::line(taps.clone(), width, ConvOp::Correlate).with_mode(Boundary::Reflect);
        let filter =
            |g: Vec<Gpu>| Streaming::new(spec.clone()).with_budget(budget as usize).with_backend(Backend::Handles(g));
        run.warn(&format!("{} of page-locked f32 in and out ({gpus} GPU(s) visible)", human_bytes(bytes)));
        let portable = HostAllocFlags { portable: true, ..HostAllocFlags::DEFAULT };
        let (mut input, mut output) =
            (run.gpu.alloc_pinned_with::<f32>(n, portable)?, run.gpu.alloc_pinned_with::<f32>(n, portable)?);
        input.par_iter_mut().enumerate().for_each(|(i, v)| *v = value(i as u64));
        let block = (budget.min(bytes / 4 * 4) / 4) & !3;
        let rates @ [htod, dtoh, both] = link(run.gpu, &input, &mut output, block as usize)?;
        let link = format!("HtoD {htod:.2} GB/s, DtoH {dtoh:.2} GB/s, both at once {both:.2} GB/s (in + out)");
        run.line(format!("link ({} blocks, page-locked): {link}", human_bytes(block)));
        run.param("link", json!({ "block": block, "htod_gbps": htod, "dtoh_gbps": dtoh, "both_gbps": both }));
        let t = run.table("runs", "");
        // Handles made once: a run opens no context and loads no module.
        let all: Vec<Gpu> =
            std::iter::once(Ok(run.gpu.clone())).chain((1..gpus).map(Gpu::with_device)).collect::<Result<_, _>>()?;
        let one = filter(vec![run.gpu.clone()]);
        let io = (&input[..], &mut output[..], &taps[..]);
        let (_, one_ms, mut checked) = case(run, (t, "pinned, 1 GPU".into(), bytes), &one, io, rates)?;
        let timeline = one.with_timeline(true).run(Layout::signal(n), &input, &mut output)?;
        let mut multi = None;
        if gpus > 1 {
            let (name, io) = (format!("pinned, {gpus} GPUs"), (&input[..], &mut output[..], &taps[..]));
            let (r, ms, _) = case(run, (t, name, bytes), &filter(all.clone()), io, rates)?;
            multi = Some((r.per_worker.len(), ms)).filter(|m| m.0 > 1);
        }
        drop((output, input));
        if vec_bytes >= 4 {
            let m = usize::try_from(vec_bytes / 4).map_err(|_| run.bad_options("--vec-size too large"))?;
            run.warn(&format!("{} in an ordinary Vec", human_bytes(vec_bytes)));
            let v_in: Vec<f32> = (0..m).into_par_iter().map(|i| value(i as u64)).collect();
            let mut v_out = vec![0f32; m];
            v_out.par_chunks_mut(1 << 20).for_each(|c| c.fill(f32::NAN));
            let (name, io) = (format!("Vec, {gpus} GPU(s)"), (&v_in[..], &mut v_out[..], &taps[..]));
            checked += case(run, (t, name, vec_bytes), &filter(all), io, rates)?.2;
        }
        run.line(format!("checked {checked} outputs (every seam +- {width} samples, both ends, random positions)"));
        run.param("gpus", gpus);
        run.param("width", width);
        run.param("budget", budget);
        run.param("checked", checked);
        let (hb, hbudget, each, g) = (human_bytes(bytes), human_bytes(budget), both / 2.0, gbps(bytes as f64, one_ms));
        let (pct, of_htod, of_duplex) = (GOAL_PINNED * 100.0, g / htod * 100.0, g / each * 100.0);
        let goal = format!("pinned end to end >= {pct:.0}% of pinned HtoD ({hb} f32, w = {width}, budget {hbudget})");
        let detail = format!(
            "{of_htod:.1}%: {g:.2} GB/s vs {htod:.2} GB/s; {of_duplex:.1}% of the {each:.2} GB/s each direction gets \
             with both at once"
        );
        run.goal(Goal::new(goal, Some(g / htod >= GOAL_PINNED), detail));
        let (k, x) = (multi.map_or(2, |m| m.0), multi.map(|(_, ms)| one_ms / ms));
        let detail = x.map_or_else(|| format!("{gpus} GPU visible"), |x| format!("{x:.2}x"));
        run.goal(Goal::new(format!("{k} GPUs >= {GOAL_GPUS}x one GPU"), x.map(|x| x >= GOAL_GPUS), detail));
        let spans: Vec<SpanRecord> = (timeline.spans.iter())
            .map(|s| (s.chunk, s.worker * DEFAULT_SLOTS + s.slot, s.stage.name(), s.start_ms, s.end_ms))
            .map(|(chunk, stream, stage, start_ms, end_ms)| SpanRecord { chunk, stream, stage, start_ms, end_ms })
            .collect();
        let (chunks, rate) = (timeline.chunks, gbps(bytes as f64, timeline.seconds * 1e3));
        let title = format!(
            "streaming filter: {hb} f32 from page-locked memory, w = {width}, budget {hbudget}\n{chunks} chunks on \
             {DEFAULT_SLOTS} slots; {rate:.2} GB/s end to end, link HtoD {htod:.2} GB/s"
        );
        let runs = [TimelineRun { name: "GPU 0".into(), rows: DEFAULT_SLOTS, spans: &spans }];
        run.timeline("stream-timeline", &title, &runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_fit_the_host_and_options_parse() {
        assert_eq!(fit_host(16 << 30, 128 << 30), 16 << 30);
        assert_eq!(fit_host(16 << 30, 30 << 30), 7 << 30);
        assert_eq!(fit_host(16 << 30, 1 << 30), 1 << 30);
        let s: Stream = super::super::run::parse(&["--size", "4GiB", "--vec-size", "0", "--quick"]).unwrap();
        assert_eq!((s.size, s.vec_size, s.budget, s.width, s.common.quick), (Some(4 << 30), Some(0), None, 31, true));
    }
}
