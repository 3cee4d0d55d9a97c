//! The `concurrency` suite: what sharing the GPU costs, in host wall-clock time.
//!
//! **Mask alternation.** Two convolutions of one shape with different masks run alternately (`A, B, A, B, …`) `runs`
//! times on a small input, so that the launch path, not the kernel, is measured: µs per run from the first queued run
//! to the end of the last (after a synchronize), against the same loop with one mask (`A, A, A, …`). Each convolution
//! then runs once more into a poisoned output, checked against the CPU reference.
//!
//! **Two streams.** Two independent 31-tap convolutions (on the device, or round trips from page-locked or pageable
//! memory), one after the other on one thread against both at once on two threads and two streams, medians of the
//! repetitions; each job's last output is checked. Goal: both at once in at most [`GOAL_OVERLAP`]× the time one after
//! the other.

use std::sync::Barrier;
use std::time::Instant;

use super::harness::Stats;
use super::run::{Common, Goal, POISON, Rec, Run, Suite};
use super::run::{wall_ms, wall_stats};
use super::{BenchResult, SuiteInfo};
use crate::conv::reference::{Checked, compare, correlate1d_checked};
use crate::conv::reference2d::{Image, correlate2d_checked};
use crate::conv::{Boundary, Conv1d, Conv1dVariant, Conv2d, Conv2dVariant, ConvOp};
use crate::{DeviceBuffer, Gpu, PinnedBuffer};

/// The goal of the two-stream part: both jobs at once in at most this fraction of their time one after the other.
pub const GOAL_OVERLAP: f64 = 0.6;

/// `coalesce bench concurrency` (`--reps`: repetitions of each two-stream measurement).
#[derive(clap::Args, Clone, Debug)]
pub struct Concurrency {
    /// Runs per mask-alternation loop [default: 10000, 500 with --quick].
    #[arg(long)]
    pub runs: Option<usize>,
    /// Samples per 1D input; 2D images are the largest square not above it [default: 4096].
    #[arg(long)]
    pub n: Option<usize>,
    /// Samples per job of the two-stream part [default: 2^24, 2^20 with --quick].
    #[arg(long, value_parser = super::run::parse_elems)]
    pub overlap_n: Option<u64>,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

/// A form of the two-stream job: the convolution alone on the device, or a round trip (copy in,
/// convolution, copy out) from page-locked memory (asynchronous copies) or from a `Vec`.
#[derive(Clone, Copy)]
enum Form {
    Device,
    Pinned,
    Pageable,
}

const FORMS: [(Form, &str); 3] =
    [(Form::Device, "device"), (Form::Pinned, "pinned round trip"), (Form::Pageable, "pageable round trip")];

impl Suite for Concurrency {
    const INFO: SuiteInfo =
        SuiteInfo { name: "concurrency", about: "what sharing costs: alternating convolution masks on small inputs" };
    const UNITS: &'static str = "host wall clock: us per run (first queued run to the end of the last, / runs); ms \
                                 per pair of jobs, median of the repetitions";
    const REPS: (usize, usize) = (11, 3);

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let (runs, n) = (run.pick(self.runs, 10_000, 500), self.n.unwrap_or(4096));
        let overlap_n = super::run::elems(run.pick(self.overlap_n, 1 << 24, 1 << 20))?;
        if runs == 0 || n == 0 || overlap_n == 0 {
            return Err(run.bad_options("--runs, --n and --overlap-n must be at least 1"));
        }
        [("runs", runs), ("n", n), ("overlap_n", overlap_n)].into_iter().for_each(|(k, v)| run.param(k, v));
        let (gpu, mode, side) = (run.gpu, Boundary::Reflect, (n as f64).sqrt() as usize);
        let title =
            format!("mask alternation on {}: {runs} runs per loop, {n} samples or pixels per input", gpu.info().name);
        let t = run.table("alternation", title);
        let signal: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0).collect();
        let (d_in, mut out) = (gpu.upload(&signal)?, gpu.alloc_zeroed::<f32>(n)?);
        let masks = |w: usize| -> [Vec<f32>; 2] {
            [(0..w).map(|j| 1.0 + j as f32).collect(), (0..w).map(|j| 0.5 - (j * j) as f32 / 8.0).collect()]
        };
        let m = masks(7);
        for v in [Conv1dVariant::Const, Conv1dVariant::Fast] {
            let c: Vec<_> = m.iter().map(|m| Conv1d::new(gpu, m, ConvOp::Correlate, mode)).collect::<Result<_, _>>()?;
            let go = |k: usize, o: &mut DeviceBuffer<f32>| c[k].run(v, &d_in.as_view(), &mut o.as_view_mut()).map(drop);
            let want = |k: usize| Ok(correlate1d_checked(&signal, c[k].taps(), c[k].left(), mode)?);
            let case = (format!("conv1d {} 7", v.name()), c[0].plan(v, n)?.kernel);
            run.row(t, alternate(run, case, runs, &mut out, go, want)?);
        }
        let (m, img) = (masks(25), Image::dense(&signal[..side * side], side, side));
        for v in [Conv2dVariant::Const, Conv2dVariant::Fast] {
            let c: Vec<_> =
                m.iter().map(|m| Conv2d::new(gpu, m, 5, 5, ConvOp::Correlate, mode)).collect::<Result<_, _>>()?;
            let go = |k: usize, o: &mut DeviceBuffer<f32>| {
                c[k].run(v, &d_in.as_view(), &mut o.as_view_mut(), side, side, side).map(drop)
            };
            let want = |k: usize| Ok(correlate2d_checked(img, c[k].taps(), 5, 5, c[k].left().0, c[k].left().1, mode)?);
            let case = (format!("conv2d {} 5x5", v.name()), c[0].plan(v, side, side)?.kernel);
            run.row(t, alternate(run, case, runs, &mut out, go, want)?);
        }
        let title = "two independent 31-tap convolutions: one thread one after the other vs two threads on two streams";
        let t = run.table("overlap", title);
        for (form, name) in FORMS {
            let [seq, conc] = overlap(run, overlap_n, form, name)?;
            let (s, c, pow) = (seq.median_ms, conc.median_ms, overlap_n.trailing_zeros());
            let rec = Rec::new().text("job", name).text("samples", format!("2^{pow}"));
            let rec = rec.num("one after the other ms", s, 3).num("two threads ms", c, 3).num("ratio", c / s, 3);
            run.row(t, rec.json("n", overlap_n).json("sequential", seq).json("concurrent", conc));
            let goal = format!(
                "two threads on two streams, independent 2^{pow}-sample convolutions ({name}), <= {GOAL_OVERLAP}x the \
                 time one after the other"
            );
            run.goal(Goal::new(goal, Some(c / s <= GOAL_OVERLAP), format!("{:.3}x: {c:.3} vs {s:.3} ms", c / s)));
        }
        Ok(())
    }
}

/// One alternation case (name, kernel): host wall-clock µs per run of `go(0)` throughout and of
/// `go(0)`, `go(1)`, … alternating (from the first call to the end of the work queued), then each
/// once more into a poisoned output, checked against `want(k)`.
fn alternate(
    run: &Run<'_>,
    (case, kernel): (String, &str),
    runs: usize,
    out: &mut DeviceBuffer<f32>,
    go: impl Fn(usize, &mut DeviceBuffer<f32>) -> crate::Result<()>,
    want: impl Fn(usize) -> BenchResult<Vec<Checked>>,
) -> BenchResult<Rec> {
    let mut us = |alternating: usize| -> BenchResult<f64> {
        run.gpu.synchronize()?;
        let t0 = Instant::now();
        (0..runs).try_for_each(|i| go(i % 2 * alternating, out))?;
        run.gpu.synchronize()?;
        Ok(t0.elapsed().as_secs_f64() * 1e6 / runs as f64)
    };
    let (same, alternating) = (us(0)?, us(1)?);
    for k in 0..2 {
        out.fill_bytes(POISON)?;
        go(k, out)?;
        let (got, want) = (out.to_vec()?, want(k)?);
        compare(&got[..want.len().min(got.len())], &want)
            .map_err(|(m, bad)| run.fail(format!("{case}: {bad} wrong, first {m}")))?;
    }
    let rec = Rec::new().text("case", case).text("kernel", kernel).int("runs", runs).num("same mask us/run", same, 2);
    Ok(rec.num("alternating us/run", alternating, 2).times("ratio", alternating / same))
}

/// One thread's job of the two-stream part, on a stream of its own: a 31-tap convolution of
/// `host`, with the buffers of every [`Form`] (page-locked and device ones: in, out).
struct Job {
    gpu: Gpu,
    conv: Conv1d<f32>,
    host: Vec<f32>,
    pinned: [PinnedBuffer<f32>; 2],
    vec_out: Vec<f32>,
    dev: [DeviceBuffer<f32>; 2],
}

impl Job {
    fn new(gpu: &Gpu, n: usize, seed: u32) -> BenchResult<Job> {
        let gpu = gpu.on(&gpu.new_stream()?)?;
        let host: Vec<f32> =
            (0..n).map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0).collect();
        let mask: Vec<f32> = (0..31).map(|j| ((j as u32 * 7 + seed) % 13) as f32 / 13.0 - 0.4).collect();
        let conv = Conv1d::new(&gpu, &mask, ConvOp::Correlate, Boundary::Reflect)?;
        let (pinned, dev) =
            ([gpu.pinned_from_slice(&host)?, gpu.alloc_pinned(n)?], [gpu.upload(&host)?, gpu.alloc_zeroed(n)?]);
        Ok(Job { gpu, conv, host, pinned, vec_out: vec![0.0; n], dev })
    }

    /// Runs the job once and waits for it.
    fn run(&mut self, form: Form) -> crate::Result<()> {
        let Job { gpu, conv, host, pinned: [p_in, p_out], vec_out, dev: [d_in, d_out] } = self;
        let s = gpu.stream();
        match form {
            Form::Device => {}
            // SAFETY: both page-locked buffers stay borrowed until this call synchronizes the stream, at its end.
            Form::Pinned => unsafe { s.htod_async(p_in, &mut d_in.as_view_mut())? },
            Form::Pageable => gpu.htod(host, &mut d_in.as_view_mut())?,
        }
        conv.run(Conv1dVariant::Auto, &d_in.as_view(), &mut d_out.as_view_mut())?;
        match form {
            Form::Device => {}
            // SAFETY: as above.
            Form::Pinned => unsafe { s.dtoh_async(&d_out.as_view(), p_out)? },
            Form::Pageable => gpu.dtoh(&d_out.as_view(), vec_out)?,
        }
        s.synchronize()
    }
}

/// The two-stream measurement of `form`, stats of (one after the other, both at once): after a warm-up, the run's reps
/// of both jobs one after the other on this thread, then of both at once on two threads (started once, released
/// together by a barrier each time); then each job's last output against the CPU reference.
fn overlap(run: &Run<'_>, n: usize, form: Form, name: &str) -> BenchResult<[Stats; 2]> {
    let reps = run.settings.reps;
    let mut jobs = [Job::new(run.gpu, n, 1)?, Job::new(run.gpu, n, 2)?];
    let one_by_one = || wall_ms(|| Ok(jobs.iter_mut().try_for_each(|j| j.run(form))?));
    let (seq, _) = wall_stats(name, (1, reps), one_by_one)?;
    let (start, end) = (&Barrier::new(3), &Barrier::new(3));
    let (conc, _) = std::thread::scope(|s| {
        let workers: Vec<_> = (jobs.iter_mut())
            .map(|j| {
                s.spawn(move || {
                    let mut result = Ok(());
                    for _ in 0..reps {
                        start.wait();
                        result = result.and_then(|()| j.run(form));
                        end.wait();
                    }
                    result
                })
            })
            .collect();
        // The main thread times each release of the two threads to the end of both jobs.
        let conc = wall_stats(name, (0, reps), || {
            start.wait();
            wall_ms(|| Ok(end.wait()))
        });
        for h in workers {
            h.join().map_err(|_| run.fail(format!("{name}: a job thread panicked")))??;
        }
        conc
    })?;
    for j in &jobs {
        let got = match form {
            Form::Device => j.dev[1].to_vec()?,
            Form::Pinned => j.pinned[1].to_vec(),
            Form::Pageable => j.vec_out.clone(),
        };
        let want = correlate1d_checked(&j.host, j.conv.taps(), j.conv.left(), Boundary::Reflect)?;
        compare(&got, &want).map_err(|(m, k)| run.fail(format!("{name}: {k} wrong outputs, first {m}")))?;
    }
    Ok([seq, conc])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        let c: Concurrency = super::super::run::parse(&["--overlap-n", "2^20", "--n", "1024", "--quick"]).unwrap();
        assert_eq!((c.runs, c.n, c.overlap_n, c.common.quick), (None, Some(1024), Some(1 << 20), true));
        assert!(super::super::run::parse::<Concurrency>(&["--overlap-n", "2^x"]).is_err());
    }
}
