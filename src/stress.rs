//! `coalesce stress`: many threads share one GPU for a while, every
//! operation checked against its CPU reference.
//!
//! Thread `t` works on one of three kinds of handle (`t mod 3`): a clone of
//! the shared [`Gpu`] (everyone's work on one stream), the shared `Gpu` on
//! a stream of the thread's own (its buffers made on the shared stream, so
//! every operation also hands buffers between streams), or a `Gpu` of its
//! own (`Gpu::new`: its own module and stream). Until the time is up it
//! draws operations at random: copies, 1D convolutions (every variant and
//! mode, masks from 1 to 80 taps, constant and global), 2D convolutions,
//! separable filters, sums, transposes, pitched copies and constant-memory
//! tables, batched and channel filters, streaming filters in chunks of
//! random size, each with fresh random inputs and sizes, outputs poisoned first,
//! and compares every result with the rayon reference. An operation that
//! returns an error counts as wrong too: nothing here should fail.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::conv::batch::{Axis, Filter1d, Sample, Shape, left_for_origin};
use crate::conv::channels::{Filter2d, Image as ChanImage};
use crate::conv::conv2d::correlation_taps_2d;
use crate::conv::reference::{compare, correlate1d_checked};
use crate::conv::reference_batch::{filter1d, filter2d, first_mismatch};
use crate::conv::reference2d::{Image, correlate2d_checked, separable_checked};
use crate::conv::{Boundary, Conv1d, Conv1dVariant, Conv2d, Conv2dVariant, ConvElem, ConvOp, Separable};
use crate::reduce::cpu;
use crate::streaming::{Backend, Layout, Spec, Streaming};
use crate::{ConstantVariant, CopyVariant, Gpu, Rect, ReduceVariant, TransposeVariant};

/// What a stress run does.
#[derive(Clone, Debug)]
pub struct StressOptions {
    /// How long the threads run.
    pub duration: Duration,
    /// Threads.
    pub threads: usize,
    /// Largest input, elements (a 1D signal; 2D sides are its square root).
    pub max_elems: usize,
    /// Seed of every thread's generator (thread `t` uses `seed + t`).
    pub seed: u64,
}

/// The operations, by name.
pub const OPS: [&str; 11] = [
    "copy",
    "conv1d",
    "conv2d",
    "separable",
    "reduce",
    "transpose",
    "pitched",
    "constant",
    "batch",
    "channels",
    "stream",
];

/// What a stress run saw.
#[derive(Clone, Debug, Default)]
pub struct StressReport {
    /// Operations checked, per entry of [`OPS`].
    pub ops: [u64; OPS.len()],
    /// Wrong results or errors, per entry of [`OPS`].
    pub wrong: [u64; OPS.len()],
    /// The first few failures, described.
    pub failures: Vec<String>,
    /// Wall time, seconds.
    pub seconds: f64,
}

impl StressReport {
    /// Operations in all.
    pub fn total(&self) -> u64 {
        self.ops.iter().sum()
    }

    /// Wrong results and errors in all.
    pub fn total_wrong(&self) -> u64 {
        self.wrong.iter().sum()
    }
}

/// Shared counters of a run.
struct Tally {
    ops: [AtomicU64; OPS.len()],
    wrong: [AtomicU64; OPS.len()],
    failures: Mutex<Vec<String>>,
}

impl Tally {
    fn record(&self, op: usize, outcome: Result<(), String>) {
        self.ops[op].fetch_add(1, Ordering::Relaxed);
        if let Err(why) = outcome {
            self.wrong[op].fetch_add(1, Ordering::Relaxed);
            let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
            if f.len() < 20 {
                f.push(format!("{}: {why}", OPS[op]));
            }
        }
    }
}

/// Runs the stress test on `gpu` (and, for a third of the threads, on
/// `Gpu`s of their own); `progress` is called about once a second with
/// the operations done so far.
pub fn run(gpu: &Gpu, opts: &StressOptions, progress: impl Fn(u64) + Sync) -> crate::Result<StressReport> {
    let tally = Tally {
        ops: std::array::from_fn(|_| AtomicU64::new(0)),
        wrong: std::array::from_fn(|_| AtomicU64::new(0)),
        failures: Mutex::new(Vec::new()),
    };
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let setup: Mutex<Option<crate::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for t in 0..opts.threads {
            let (tally, stop, setup) = (&tally, &stop, &setup);
            s.spawn(move || {
                let handle = match t % 3 {
                    0 => Ok(gpu.clone()),
                    1 => gpu.new_stream().and_then(|st| gpu.on(&st)),
                    _ => Gpu::new(),
                };
                let own = match handle {
                    Ok(h) => h,
                    Err(e) => {
                        *setup.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        return;
                    }
                };
                // Buffers come from the shared handle: on the stream
                // threads they cross streams at every operation.
                let alloc = if t % 3 == 1 { gpu.clone() } else { own.clone() };
                let mut rng = StdRng::seed_from_u64(opts.seed.wrapping_add(t as u64));
                let ctx = Ctx { run: &own, alloc: &alloc, max: opts.max_elems.max(64) };
                while !stop.load(Ordering::Relaxed) {
                    let op = rng.random_range(0..OPS.len());
                    let outcome = ctx.op(op, &mut rng);
                    tally.record(op, outcome);
                }
            });
        }
        let deadline = start + opts.duration;
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(250).min(deadline.saturating_duration_since(Instant::now())));
            progress(tally.ops.iter().map(|c| c.load(Ordering::Relaxed)).sum());
        }
        stop.store(true, Ordering::Relaxed);
    });
    if let Some(e) = setup.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    Ok(StressReport {
        ops: tally.ops.map(|c| c.into_inner()),
        wrong: tally.wrong.map(|c| c.into_inner()),
        failures: tally.failures.into_inner().unwrap_or_else(|p| p.into_inner()),
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// One thread's handles: operations run on `run`; buffers are made on
/// `alloc`.
struct Ctx<'a> {
    run: &'a Gpu,
    alloc: &'a Gpu,
    max: usize,
}

/// `n` values in [−1, 1).
fn values(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

fn pick<T: Copy>(rng: &mut StdRng, from: &[T]) -> T {
    from[rng.random_range(0..from.len())]
}

/// Failures as text (the library's errors included).
type Outcome = Result<(), String>;

fn err(e: crate::Error) -> String {
    e.to_string()
}

/// Compares GPU output with checked references.
fn check(what: &str, got: &[f32], want: &[crate::conv::reference::Checked]) -> Outcome {
    compare(got, want).map_err(|(m, count)| format!("{what}: {count} wrong outputs; first {m}"))
}

const POISON: u8 = 0xA5;

impl Ctx<'_> {
    fn op(&self, op: usize, rng: &mut StdRng) -> Outcome {
        match OPS[op] {
            "copy" => self.copy(rng),
            "conv1d" => self.conv1d(rng),
            "conv2d" => self.conv2d(rng),
            "separable" => self.separable(rng),
            "reduce" => self.reduce(rng),
            "transpose" => self.transpose(rng),
            "pitched" => self.pitched(rng),
            "batch" => match rng.random_range(0..3) {
                0 => self.batch::<f32>(rng),
                1 => self.batch::<u8>(rng),
                _ if self.run.info().cc_major >= 8 => self.batch::<crate::half::bf16>(rng),
                _ => self.batch::<crate::half::f16>(rng),
            },
            "channels" => match rng.random_range(0..3) {
                0 => self.channels::<f32>(rng),
                1 => self.channels::<u8>(rng),
                _ => self.channels::<u16>(rng),
            },
            "stream" => match rng.random_range(0..2) {
                0 => self.stream::<f32>(rng),
                _ => self.stream::<u8>(rng),
            },
            _ => self.constant(rng),
        }
    }

    fn len(&self, rng: &mut StdRng) -> usize {
        // Mostly small, sometimes up to the maximum.
        if rng.random_bool(0.8) { rng.random_range(1..=self.max.min(4096)) } else { rng.random_range(1..=self.max) }
    }

    fn side(&self, rng: &mut StdRng) -> usize {
        rng.random_range(1..=(self.max as f64).sqrt() as usize)
    }

    /// Random values of `S`: integers over the type's range, floats in ±4.
    fn samples<S: Sample>(rng: &mut StdRng, n: usize) -> Vec<S> {
        (0..n)
            .map(|_| match S::NAME {
                "u8" => S::from_f64(rng.random_range(0..=255u32) as f64),
                "u16" => S::from_f64(rng.random_range(0..=65535u32) as f64),
                _ => S::from_f64(rng.random_range(-4.0f64..4.0)),
            })
            .collect()
    }

    /// A batched 1D filter (`conv::batch`): random rows × length, axis,
    /// shared or per-signal masks, mode, cval and origin.
    fn batch<S: Sample>(&self, rng: &mut StdRng) -> Outcome {
        let rows = rng.random_range(1..=64usize);
        let cols = rng.random_range(1..=(self.max / rows).clamp(1, 1 << 16));
        let shape = Shape::new(rows, cols);
        let w = rng.random_range(1..=40usize);
        let axis = pick(rng, &[0isize, 1]);
        let signals = if axis == 1 { rows } else { cols };
        let per_signal = rng.random_bool(0.5);
        let taps: Vec<S::Acc> = (0..if per_signal { signals * w } else { w })
            .map(|_| S::Acc::from_f64(rng.random_range(-1.0f64..1.0) / w as f64))
            .collect();
        let (mode, op) = (pick(rng, &Boundary::ALL), pick(rng, &ConvOp::ALL));
        let origin = rng.random_range(-((w / 2) as i64)..=((w - 1) / 2) as i64) as isize;
        let filter = if per_signal {
            Filter1d::<S>::depthwise(self.run, &taps, w, op, mode)
        } else {
            Filter1d::<S>::new(self.run, &taps, op, mode)
        }
        .and_then(|f| f.with_cval(1.5).with_origin(origin)?.with_axis(axis))
        .map_err(err)?;
        let input = Self::samples::<S>(rng, rows * cols);
        let d_in = self.alloc.upload(&input).map_err(err)?;
        let mut d_out = self.alloc.alloc_zeroed::<S>(rows * cols).map_err(err)?;
        d_out.fill_bytes(POISON).map_err(err)?;
        let plan = filter.run(&d_in.as_view(), &mut d_out.as_view_mut(), shape).map_err(err)?;
        let values: Vec<f64> = input.iter().map(|v| v.to_f64()).collect();
        let reference: Vec<f64> = filter.taps().iter().map(|t| t.to_f64()).collect();
        let axis = filter.axis();
        let want = filter1d::<S::Acc>(&values, shape, axis, &reference, w, filter.left(), mode, 1.5).map_err(err)?;
        match first_mismatch(&d_out.to_vec().map_err(err)?, &want) {
            None => Ok(()),
            Some((i, g, c)) => {
                Err(format!("{} {rows}x{cols} w={w} {axis:?}: sample {i}: {g} vs {}", plan.kernel, c.value))
            }
        }
    }

    /// A 2D filter over interleaved channels (`conv::channels`).
    fn channels<S: Sample>(&self, rng: &mut StdRng) -> Outcome {
        let channels = pick(rng, &[1usize, 3, 4]);
        let (w, h) = (self.side(rng).min(700), self.side(rng).min(700));
        let (mw, mh) = (rng.random_range(1..=7usize), rng.random_range(1..=7usize));
        let per_channel = rng.random_bool(0.5);
        let count = if per_channel { channels } else { 1 };
        // Half the masks are outer products of box-like rows and columns
        // (exact in f32), which run on the separable kernels.
        let taps: Vec<S::Acc> = if rng.random_bool(0.5) {
            let col: Vec<f64> = (0..mh).map(|_| rng.random_range(1..=4) as f64 / 8.0).collect();
            let row: Vec<f64> = (0..mw).map(|_| rng.random_range(1..=4) as f64 / (8 * mw) as f64).collect();
            (0..count).flat_map(|_| col.iter().flat_map(|c| row.iter().map(move |r| S::Acc::from_f64(c * r)))).collect()
        } else {
            (0..count * mw * mh).map(|_| S::Acc::from_f64(rng.random_range(-1.0f64..2.0) / (mw * mh) as f64)).collect()
        };
        let mode = pick(rng, &Boundary::ALL);
        let filter = if per_channel {
            Filter2d::<S>::per_channel(self.run, &taps, mw, mh, ConvOp::Convolve, mode)
        } else {
            Filter2d::<S>::new(self.run, &taps, mw, mh, ConvOp::Correlate, mode)
        }
        .map(|f| f.with_cval(2.5))
        .map_err(err)?;
        let img = ChanImage::new(w, h, channels).map_err(err)?;
        let input = Self::samples::<S>(rng, w * h * channels);
        let d_in = self.alloc.upload(&input).map_err(err)?;
        let mut d_out = self.alloc.alloc_zeroed::<S>(input.len()).map_err(err)?;
        d_out.fill_bytes(POISON).map_err(err)?;
        let plan = filter.run(&d_in.as_view(), &mut d_out.as_view_mut(), img).map_err(err)?;
        let values: Vec<f64> = input.iter().map(|v| v.to_f64()).collect();
        let reference: Vec<f64> = filter.taps().iter().map(|t| t.to_f64()).collect();
        let want = filter2d::<S::Acc>(&values, img, &reference, (mw, mh), filter.left(), mode, 2.5).map_err(err)?;
        match first_mismatch(&d_out.to_vec().map_err(err)?, &want) {
            None => Ok(()),
            Some((i, g, c)) => {
                Err(format!("{} {w}x{h}x{channels} {mw}x{mh}: element {i}: {g} vs {}", plan.kernel, c.value))
            }
        }
    }

    /// A streaming filter (`streaming`) of a signal, a batch or an image
    /// from pageable memory, in chunks of random size, on this thread's
    /// handle (the stream's workers queue on streams of their own).
    fn stream<S: Sample>(&self, rng: &mut StdRng) -> Outcome {
        let (mode, op) = (pick(rng, &Boundary::ALL), pick(rng, &ConvOp::ALL));
        let image = rng.random_bool(0.3);
        let (layout, w, h) = if image {
            let (x, y) = (self.side(rng).min(300), self.side(rng).min(300));
            (
                Layout::image(y, x, pick(rng, &[1usize, 3, 4])),
                rng.random_range(1..=7usize),
                rng.random_range(1..=7usize),
            )
        } else {
            let rows = pick(rng, &[1usize, 1, 3, 20]);
            (Layout::batch(rows, self.len(rng).div_ceil(rows)), rng.random_range(1..=40usize), 1)
        };
        let mask: Vec<f64> =
            (0..w * h).map(|_| S::Acc::from_f64(rng.random_range(-1.0f64..1.0) / (w * h) as f64).to_f64()).collect();
        let origin = rng.random_range(-((w / 2) as i64)..=((w - 1) / 2) as i64) as isize;
        let spec = if image {
            Spec::plane(mask.clone(), w, h, op).with_origin_2d(0, origin)
        } else {
            Spec::line(mask.clone(), w, op).with_origin(origin)
        };
        let spec = spec.with_mode(mode).with_cval(1.5);
        let n = layout.len().unwrap_or(0);
        let input = Self::samples::<S>(rng, n);
        let mut out = vec![S::from_f64(-77.0); n];
        let units = rng.random_range(1..=64usize);
        let report = Streaming::new(spec)
            .with_backend(Backend::Handles(vec![self.run.clone()]))
            .with_chunk_units(units)
            .run(layout, &input, &mut out)
            .map_err(err)?;
        let values: Vec<f64> = input.iter().map(|v| v.to_f64()).collect();
        let left = left_for_origin(w, origin, op).map_err(err)?;
        let want = if image {
            let img = ChanImage::new(layout.cols, layout.rows, layout.channels).map_err(err)?;
            let top = left_for_origin(h, 0, op).map_err(err)?;
            let taps = correlation_taps_2d(op, &mask, w, h).0;
            filter2d::<S::Acc>(&values, img, &taps, (w, h), (left, top), mode, 1.5)
        } else {
            let shape = Shape::new(layout.rows, layout.cols);
            filter1d::<S::Acc>(&values, shape, Axis::Rows, &op.correlation_taps(&mask).0, w, left, mode, 1.5)
        }
        .map_err(err)?;
        match first_mismatch(&out, &want) {
            None => Ok(()),
            Some((i, g, c)) => Err(format!(
                "stream {layout:?} {w}x{h} {mode:?} {op:?}, {} chunks of {units}: element {i}: {g} vs {}",
                report.chunks, c.value
            )),
        }
    }

    fn copy(&self, rng: &mut StdRng) -> Outcome {
        let n = self.len(rng);
        let offset = rng.random_range(0..4);
        let data: Vec<u32> = (0..n + offset).map(|_| rng.random()).collect();
        let src = self.alloc.upload(&data).map_err(err)?;
        let mut dst = self.alloc.alloc_zeroed::<u32>(n).map_err(err)?;
        dst.fill_bytes(POISON).map_err(err)?;
        let variant = pick(rng, &[CopyVariant::Scalar, CopyVariant::Vec2, CopyVariant::Vec4, CopyVariant::Auto]);
        let view = src.view(offset..offset + n).map_err(err)?;
        self.run.copy(&view, &mut dst.as_view_mut(), variant).map_err(err)?;
        if dst.to_vec().map_err(err)? != data[offset..] {
            return Err(format!("{variant:?} of {n} words at offset {offset} differs"));
        }
        Ok(())
    }

    fn conv1d(&self, rng: &mut StdRng) -> Outcome {
        let n = self.len(rng);
        let w = if rng.random_bool(0.9) { rng.random_range(1..=40) } else { rng.random_range(41..=80) };
        let mode = pick(rng, &Boundary::ALL);
        let op = pick(rng, &ConvOp::ALL);
        let variant = pick(
            rng,
            &[
                Conv1dVariant::Auto,
                Conv1dVariant::Basic,
                Conv1dVariant::Const,
                Conv1dVariant::Tiled,
                Conv1dVariant::TiledL2,
                Conv1dVariant::Fast,
                Conv1dVariant::Tensor,
                Conv1dVariant::Rows,
            ],
        );
        let (mask, input) = (values(rng, w), values(rng, n));
        let conv = Conv1d::new(self.run, &mask, op, mode).map_err(err)?;
        // The tensor cores where this mask and device allow them.
        let variant = if variant == Conv1dVariant::Tensor && conv.tensor_support().is_err() {
            Conv1dVariant::Auto
        } else {
            variant
        };
        let d_in = self.alloc.upload(&input).map_err(err)?;
        let mut d_out = self.alloc.alloc_zeroed::<f32>(n).map_err(err)?;
        d_out.fill_bytes(POISON).map_err(err)?;
        let plan = conv.run(variant, &d_in.as_view(), &mut d_out.as_view_mut()).map_err(err)?;
        let want = correlate1d_checked(&input, conv.taps(), conv.left(), mode).map_err(err)?;
        check(&format!("{} w={w} n={n} {}", plan.kernel, mode.name()), &d_out.to_vec().map_err(err)?, &want)
    }

    fn conv2d(&self, rng: &mut StdRng) -> Outcome {
        let (w, h) = (self.side(rng), self.side(rng));
        let (mw, mh) = match rng.random_range(0..5) {
            0 | 1 => {
                let k = pick(rng, &[3, 5, 7]);
                (k, k)
            }
            2 | 3 => (rng.random_range(1..=9), rng.random_range(1..=9)),
            // Large masks (the tensor cores' sizes).
            _ => (rng.random_range(8..=21), rng.random_range(8..=21)),
        };
        let pitch = w + rng.random_range(0..3);
        let mode = pick(rng, &Boundary::ALL);
        let op = pick(rng, &ConvOp::ALL);
        let variant = pick(
            rng,
            &[
                Conv2dVariant::Auto,
                Conv2dVariant::Basic,
                Conv2dVariant::Const,
                Conv2dVariant::Tiled,
                Conv2dVariant::Fast,
                Conv2dVariant::Tensor,
            ],
        );
        let len = (h - 1) * pitch + w;
        let (mask, input) = (values(rng, mw * mh), values(rng, len));
        let conv = Conv2d::new(self.run, &mask, mw, mh, op, mode).map_err(err)?;
        // The tensor cores where this mask and device allow them.
        let variant = if variant == Conv2dVariant::Tensor && conv.tensor_support().is_err() {
            Conv2dVariant::Auto
        } else {
            variant
        };
        let d_in = self.alloc.upload(&input).map_err(err)?;
        let mut d_out = self.alloc.alloc_zeroed::<f32>(len).map_err(err)?;
        d_out.fill_bytes(POISON).map_err(err)?;
        let plan = conv.run(variant, &d_in.as_view(), &mut d_out.as_view_mut(), w, h, pitch).map_err(err)?;
        let (lx, ly) = conv.left();
        let img = Image { data: &input, width: w, height: h, pitch };
        let want = correlate2d_checked(img, conv.taps(), mw, mh, lx, ly, mode).map_err(err)?;
        let got = d_out.to_vec().map_err(err)?;
        let dense: Vec<f32> = (0..h).flat_map(|y| got[y * pitch..y * pitch + w].to_vec()).collect();
        check(&format!("{} {mw}x{mh} on {w}x{h}", plan.kernel), &dense, &want)
    }

    fn separable(&self, rng: &mut StdRng) -> Outcome {
        let (w, h) = (self.side(rng), self.side(rng));
        let mode = pick(rng, &Boundary::ALL);
        let (wx, wy) = (rng.random_range(1..=15), rng.random_range(1..=15));
        let (mx, my) = (values(rng, wx), values(rng, wy));
        let input = values(rng, w * h);
        let sep = Separable::new(self.run, &mx, &my, ConvOp::Correlate, mode).map_err(err)?;
        let d_in = self.alloc.upload(&input).map_err(err)?;
        let mut d_out = self.alloc.alloc_zeroed::<f32>(w * h).map_err(err)?;
        d_out.fill_bytes(POISON).map_err(err)?;
        sep.run(&d_in.as_view(), &mut d_out.as_view_mut(), w, h, w).map_err(err)?;
        let (tx, ty) = sep.taps();
        let want = separable_checked(Image::dense(&input, w, h), tx, ty, ConvOp::Correlate, mode).map_err(err)?;
        check(&format!("separable {}x{} on {w}x{h}", mx.len(), my.len()), &d_out.to_vec().map_err(err)?, &want)
    }

    fn reduce(&self, rng: &mut StdRng) -> Outcome {
        let n = self.len(rng);
        let variant = pick(rng, &[ReduceVariant::Neighbored, ReduceVariant::Interleaved, ReduceVariant::Fast]);
        if rng.random_bool(0.5) {
            let data: Vec<i32> = (0..n).map(|_| rng.random()).collect();
            let d = self.alloc.upload(&data).map_err(err)?;
            let got = self.run.reduce_sum(&d.as_view(), variant).map_err(err)?;
            let want = cpu::sum_i32_wrapping(&data);
            if got != want {
                return Err(format!("{variant:?} i32 sum of {n}: {got} vs {want}"));
            }
        } else {
            let data = values(rng, n);
            let d = self.alloc.upload(&data).map_err(err)?;
            let got = self.run.reduce_sum(&d.as_view(), variant).map_err(err)?;
            let plan = self.run.reduce_plan(&d.as_view(), variant, &crate::ReducePolicy::default()).map_err(err)?;
            let (sum, abs) = cpu::sum_f64(&data);
            let bound = plan.error_bound(f32::EPSILON as f64 / 2.0, abs) + cpu::sum_f64_error(n, sum, abs);
            if (got as f64 - sum).abs() > bound {
                return Err(format!("{variant:?} f32 sum of {n}: {got} vs {sum} (bound {bound:e})"));
            }
        }
        Ok(())
    }

    fn transpose(&self, rng: &mut StdRng) -> Outcome {
        let (rows, cols) = (self.side(rng), self.side(rng));
        let variant = pick(rng, &TransposeVariant::ALL);
        let data = values(rng, rows * cols);
        let src = self.alloc.upload(&data).map_err(err)?;
        let mut dst = self.alloc.alloc_zeroed::<f32>(rows * cols).map_err(err)?;
        dst.fill_bytes(POISON).map_err(err)?;
        self.run.transpose(&src.as_view(), &mut dst.as_view_mut(), rows, cols, variant).map_err(err)?;
        let mut want = vec![0f32; rows * cols];
        crate::transpose::reference_transpose(&data, rows, cols, &mut want).map_err(err)?;
        if dst.to_vec().map_err(err)? != want {
            return Err(format!("{variant:?} of {rows}x{cols} differs"));
        }
        Ok(())
    }

    fn pitched(&self, rng: &mut StdRng) -> Outcome {
        let (w, h) = (self.side(rng), self.side(rng));
        let data = values(rng, w * h);
        let a = self.alloc.upload_pitched(&data, w, h).map_err(err)?;
        let mut b = self.run.alloc_pitched_zeroed::<f32>(w, h).map_err(err)?;
        b.fill_bytes(POISON).map_err(err)?;
        let rect = Rect::new(rng.random_range(0..w), rng.random_range(0..h), 1, 1);
        let rect =
            Rect::new(rect.col, rect.row, rng.random_range(1..=w - rect.col), rng.random_range(1..=h - rect.row));
        b.copy_from(&a).map_err(err)?;
        let got = b.rect_to_vec(rect).map_err(err)?;
        let want: Vec<f32> = (rect.row..rect.row + rect.height)
            .flat_map(|y| data[y * w + rect.col..y * w + rect.col + rect.width].to_vec())
            .collect();
        if got != want {
            return Err(format!("pitched copy of {w}x{h}, rectangle {rect}, differs"));
        }
        Ok(())
    }

    fn constant(&self, rng: &mut StdRng) -> Outcome {
        let values: Vec<u32> = (0..crate::constant::TABLE_LEN).map(|_| rng.random::<u32>() | 1).collect();
        let table = self.run.constant_table(&values).map_err(err)?;
        let (n, iters) = (rng.random_range(1..=4096), rng.random_range(1..=32));
        let variant = pick(rng, &ConstantVariant::ALL);
        let mut out = self.alloc.alloc_zeroed::<u32>(n).map_err(err)?;
        out.fill_bytes(POISON).map_err(err)?;
        table.run(variant, &mut out.as_view_mut(), iters).map_err(err)?;
        let want = crate::constant::reference(&values, variant.pattern(), n, iters).map_err(err)?;
        if out.to_vec().map_err(err)? != want {
            return Err(format!("{} of {n} threads x {iters} reads differs", variant.kernel()));
        }
        Ok(())
    }
}
